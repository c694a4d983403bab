//! The journal's operations, each a transaction of the engine's rules
//! over a [`Storage`], and the [`Journal`] every `Storage` is.

use std::sync::{Arc, PoisonError};

use super::{Body, Holder, Intent, LeaseChange, NewRow, NewRows, Row, Storage, Version, Work};
use crate::error::{Error, ErrorCode, Result};
use crate::journal::{
    rules, Journal, JournalCheck, Lease, Listed, Opened, OperationRecord, Reconciliation, RowState,
    StoredClockOffset,
};
use crate::operation::{FrozenOperation, OperationState, Response};

/// Whether this handle may write: its authentication decided (a store
/// that connects lazily decides it at its first call) and allowing
/// writes.
fn writable<S: Storage>(store: &S, action: &str) -> Result<()> {
    store.ready(action)?;
    store.guard().check_writable()
}

/// `open` and `open_to_send`: a new operation recorded pending, or in
/// flight with its first attempt.
fn open<S: Storage>(
    store: &S,
    operation: &FrozenOperation,
    lease: &Lease,
    now: u64,
    first_attempt: bool,
) -> Result<Opened> {
    rules::check_now(now)?;
    rules::check_lease(lease)?;
    let action = format!("open order id {:?}", operation.order_id);
    writable(store, &action)?;
    let (state, attempts) = if first_attempt {
        (OperationState::InFlight, 1)
    } else {
        (OperationState::Pending, 0)
    };
    let intent = Intent::Open {
        order_id: &operation.order_id,
        lease,
        first_attempt,
    };
    let order_id = &operation.order_id;
    // One copy of the operation, shared by the row's maker and the work.
    let shared = Arc::new(operation.clone());
    let (frozen, held) = (Arc::clone(&shared), lease.clone());
    let new_row: NewRows = Arc::new(move |g| {
        let record = OperationRecord {
            operation: FrozenOperation::clone(&frozen),
            state,
            attempts,
            created_at: now,
            updated_at: now,
            response: None,
        };
        let (row_mac, state_mac) = g.auth().macs(g.scope.as_ref(), &record)?;
        let row = Row {
            record,
            scope: g.scope.clone(),
            holder: Holder::default(),
            row_mac,
            state_mac,
        };
        Ok(NewRow {
            row,
            lease: held.clone(),
            now,
        })
    });
    let (operation, owned, made) = (shared, lease.clone(), Arc::clone(&new_row));
    // Run again after a lost commit: the owner takes its own lease again.
    // The insert comes first (a new operation, the common case, costs one
    // statement); a conflicting one writes nothing, and the row it met is
    // read only then.
    let mut work = Work::again(Box::new(move |g, tx| {
        let NewRow { row, .. } = made(g)?;
        if tx.insert(&row, &owned, now)? {
            let version = Version::of(&row);
            return Ok((Opened::Created(row.record), Some(version)));
        }
        if let Some(existing) = g.load(tx, &operation.order_id)? {
            rules::same_request(&existing.record.operation, &operation)?;
            return g.resume(tx, existing, &owned, now);
        }
        // The order id went since the insert met it (purged), or the key
        // is another order id's.
        let op = &operation;
        match tx.key_holder(&op.idempotency_key)? {
            Some(other) if other != op.order_id => Err(rules::key_taken(op, &other)),
            _ => Err(Error::new(
                ErrorCode::OperationBusy,
                format!(
                    "order id {:?} is being created by another call",
                    op.order_id
                ),
            )
            .with_operation(&op.order_id, &op.idempotency_key)),
        }
    }));
    work.first_insert = Some(new_row);
    let (opened, version) = store.transact(intent, &action, work)?;
    store.guard().remember(order_id, &lease.owner, version);
    Ok(opened)
}

fn claim<S: Storage>(store: &S, order_id: &str, lease: &Lease, now: u64) -> Result<Opened> {
    rules::check_now(now)?;
    rules::check_lease(lease)?;
    let action = format!("claim order id {order_id:?}");
    let intent = Intent::Claim { order_id, lease };
    let (id, held) = (order_id.to_owned(), lease.clone());
    let work = Work::again(Box::new(move |g, tx| {
        let row = g.existing(tx, &id)?;
        g.resume(tx, row, &held, now)
    }));
    let (opened, version) = store.transact(intent, &action, work)?;
    store.guard().remember(order_id, &lease.owner, version);
    Ok(opened)
}

/// `claim_next`: one statement for a store that has it; otherwise the
/// unsettled operations, oldest first, claimed until one is free.
fn claim_next<S: Storage>(store: &S, lease: &Lease, now: u64) -> Result<Option<Opened>> {
    rules::check_now(now)?;
    rules::check_lease(lease)?;
    if S::CLAIMS_NEXT {
        let intent = Intent::ClaimNext { lease };
        let held = lease.clone();
        // A row failing its MAC rolls the claim back: its lease stays as
        // it was and nothing is sent.
        let work = Work::again(Box::new(move |g, tx| {
            match tx.claim_next(&held, now, g.scope.as_ref())? {
                Some(row) => Ok(Some(g.verified(row)?)),
                None => Ok(None),
            }
        }));
        let action = "claim the next operation to take over";
        let Some(row) = store.transact(intent, action, work)? else {
            return Ok(None);
        };
        let order_id = &row.record.operation.order_id;
        store
            .guard()
            .remember(order_id, &lease.owner, Some(Version::of(&row)));
        return Ok(Some(Opened::Resumable(row.record)));
    }
    let unsettled = [
        OperationState::Pending,
        OperationState::InFlight,
        OperationState::Unknown,
    ];
    for record in list(store, &unsettled)? {
        match claim(store, &record.operation.order_id, lease, now) {
            Ok(opened @ Opened::Resumable(_)) => return Ok(Some(opened)),
            // Settled or purged since the listing, or held by a live call.
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.code(),
                    ErrorCode::OperationBusy | ErrorCode::InvalidArgument
                ) =>
            {
                continue
            }
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// `record_attempt` (`attempts`: the row in flight with them) and
/// `renew` (`None`: its state left as it is): the lease extended if
/// `lease` still holds the operation under the epoch it took.
fn extend<S: Storage>(
    store: &S,
    order_id: &str,
    lease: &Lease,
    attempts: Option<u32>,
    now: u64,
) -> Result<()> {
    rules::check_now(now)?;
    let (action, intent) = match attempts {
        Some(_) => (
            format!("record an attempt of order id {order_id:?}"),
            Intent::RecordAttempt { order_id, lease },
        ),
        None => (
            format!("renew the lease of order id {order_id:?}"),
            Intent::Renew { order_id, lease },
        ),
    };
    writable(store, &action)?;
    let (id, held) = (order_id.to_owned(), lease.clone());
    let last = store.guard().last(order_id, &lease.owner);
    let set = attempts.map(|attempts| (OperationState::InFlight, attempts));
    let body: Body<Version> =
        Box::new(move |g, tx| g.extend_held(tx, (&id, &held), last.as_ref(), set, now));
    let work = match attempts {
        Some(attempts) => {
            let (id, held) = (order_id.to_owned(), lease.clone());
            // Committed when the row is in flight with these attempts
            // under this lease.
            let read_back: Body<Option<Version>> = Box::new(move |g, tx| {
                let row = g.held(tx, &id, &held)?;
                let r = &row.record;
                let committed = r.state == OperationState::InFlight && r.attempts == attempts;
                Ok(committed.then(|| Version::of(&row)))
            });
            Work::new(body, read_back)
        }
        // Renewing again after a lost commit extends the same lease again.
        None => Work::again(body),
    };
    let written = store.transact(intent, &action, work);
    let (version, result) = match written {
        Ok(version) => (Some(version), Ok(())),
        Err(e) => (None, Err(e)),
    };
    store.guard().remember(order_id, &lease.owner, version);
    result
}

/// Puts an operation whose attempt could not be made durable back where
/// it stood before (`before`: state and attempts; nothing was sent), if
/// `lease` still holds it in flight with `attempted` attempts. For a store
/// that finds out after its commit that a durable write is not durable.
pub(crate) fn undo_attempt<S: Storage>(
    store: &S,
    order_id: &str,
    lease: &Lease,
    attempted: u32,
    before: (OperationState, u32),
) -> Result<()> {
    let action = format!("undo the attempt of order id {order_id:?}");
    // The next write of this lease reads the row again.
    store.guard().remember(order_id, &lease.owner, None);
    let (order_id, lease) = (order_id.to_owned(), lease.clone());
    let work = Work::again(Box::new(move |g, tx| {
        let Some(row) = g.load(tx, &order_id)? else {
            return Ok(());
        };
        let record = &row.record;
        if !row.holder.held_by(&lease)
            || record.state != OperationState::InFlight
            || record.attempts != attempted
        {
            return Ok(());
        }
        let state = RowState {
            state: before.0,
            attempts: before.1,
            ..RowState::of(record)
        };
        g.write(tx, &row, &state, LeaseChange::Keep).map(drop)
    }));
    store.transact(Intent::Undo, &action, work)
}

fn release<S: Storage>(store: &S, order_id: &str, lease: &Lease) -> Result<()> {
    let action = format!("release order id {order_id:?}");
    store.guard().remember(order_id, &lease.owner, None);
    let intent = Intent::Release { order_id, lease };
    let (order_id, lease) = (order_id.to_owned(), lease.clone());
    // Releasing again is harmless: run it once more.
    let work = Work::again(Box::new(move |_, tx| {
        if !tx.release(&order_id, &lease)? {
            return Err(rules::unknown_order(&order_id));
        }
        Ok(())
    }));
    store.transact(intent, &action, work)
}

fn list<S: Storage>(store: &S, states: &[OperationState]) -> Result<Vec<OperationRecord>> {
    if states.is_empty() {
        return Ok(Vec::new());
    }
    let g = store.guard();
    let mut records = Vec::new();
    for read in store.rows(Some(states))? {
        let row = g.verified(read.map_err(|u| u.error)?)?;
        if g.in_scope(&row) {
            records.push(row.record);
        }
    }
    Ok(records)
}

fn list_every<S: Storage>(store: &S) -> Result<Vec<Listed>> {
    let g = store.guard();
    let mut listed = Vec::new();
    for read in store.rows(None)? {
        let (order_id, verified) = match read {
            Ok(row) => (row.record.operation.order_id.clone(), g.verified(row)),
            Err(u) => (u.order_id, Err(u.error)),
        };
        match verified {
            Ok(row) if g.in_scope(&row) => listed.push(Listed::Valid(row.record)),
            Ok(_) => {}
            Err(e) => listed.push(Listed::Invalid {
                order_id,
                problem: e.message().to_owned(),
            }),
        }
    }
    Ok(listed)
}

fn purge_settled<S: Storage>(store: &S, before: u64) -> Result<usize> {
    writable(store, "purge settled operations")?;
    let g = store.guard();
    let horizon = g.auth().purge_horizon(before.min(S::LATEST));
    let purged = store.purge(before, horizon.as_ref())?;
    if let Some((horizon, _)) = horizon {
        g.auth
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .set_purged_before(horizon);
    }
    Ok(purged)
}

fn check<S: Storage>(store: &S) -> Result<JournalCheck> {
    let g = store.guard();
    let found = store.inspect()?;
    let auth = g.auth().clone();
    let mut problems = found.problems;
    if let Some(sealed) = found.sealed {
        problems.extend(rules::seal_problem(sealed, !found.rows.is_empty()));
    }
    let operations = found.rows.len();
    for read in found.rows {
        match read {
            Ok(row) if found.sealed.is_some() => problems.extend(rules::row_problems(
                &auth,
                row.scope.as_ref(),
                &row.record,
                row.macs(),
            )),
            Ok(row) => {
                let op = &row.record.operation;
                problems.extend(rules::body_problem(&op.order_id, &op.body, &op.body_sha256));
            }
            Err(u) => problems.push(u.error.message().to_owned()),
        }
    }
    problems.extend(found.later_problems);
    let reconciliations = found.reconciliations.len();
    problems.extend(
        found
            .reconciliations
            .into_iter()
            .filter_map(|r| r.err())
            .map(|e| e.message().to_owned()),
    );
    Ok(JournalCheck {
        backend: found.backend,
        schema_version: found.schema_version,
        library_schema_version: found.library_schema_version,
        migrated_from: found.migrated_from,
        operations,
        reconciliations,
        problems,
        macs_verified: auth.is_keyed(),
    })
}

impl<S: Storage> Journal for S {
    fn open(&self, operation: &FrozenOperation, lease: &Lease, now: u64) -> Result<Opened> {
        open(self, operation, lease, now, false)
    }

    fn open_to_send(&self, operation: &FrozenOperation, lease: &Lease, now: u64) -> Result<Opened> {
        open(self, operation, lease, now, true)
    }

    fn claim(&self, order_id: &str, lease: &Lease, now: u64) -> Result<Opened> {
        claim(self, order_id, lease, now)
    }

    fn claim_next(&self, lease: &Lease, now: u64) -> Result<Option<Opened>> {
        claim_next(self, lease, now)
    }

    fn record_attempt(&self, order_id: &str, lease: &Lease, attempts: u32, now: u64) -> Result<()> {
        extend(self, order_id, lease, Some(attempts), now)
    }

    fn renew(&self, order_id: &str, lease: &Lease, now: u64) -> Result<()> {
        extend(self, order_id, lease, None, now)
    }

    fn finish(
        &self,
        order_id: &str,
        lease: &Lease,
        state: OperationState,
        response: Option<&Response>,
        attempts: u32,
        now: u64,
    ) -> Result<()> {
        rules::check_now(now)?;
        rules::check_finish_state(state)?;
        let action = format!("finish order id {order_id:?}");
        writable(self, &action)?;
        let intent = Intent::Finish { order_id, lease };
        let (id, held, response) = (order_id.to_owned(), lease.clone(), response.cloned());
        // The lease ends here: whatever the outcome, a later write of it
        // reads the row.
        let last = self.guard().take_last(order_id, &lease.owner);
        let body: Body<()> = Box::new(move |g, tx| {
            let new = |stored: u32| RowState {
                state,
                attempts: attempts.max(stored),
                updated_at: now,
                response: response.as_ref(),
            };
            if let Some(last) = &last {
                let new = new(last.attempts);
                if g.write_if(tx, (&id, &held), last, &new, LeaseChange::Clear)?
                    .0
                {
                    return Ok(());
                }
            }
            let row = g.held(tx, &id, &held)?;
            g.write(tx, &row, &new(row.record.attempts), LeaseChange::Clear)
                .map(drop)
        });
        let (id, held) = (order_id.to_owned(), lease.clone());
        // Not committed while this lease still holds it; committed when it is
        // free under the same epoch, in the state written.
        let read_back: Body<Option<()>> = Box::new(move |g, tx| {
            let row = g.existing(tx, &id)?;
            let current = tx.current(&row, &held);
            if row.holder.held_by(&held) && current {
                Ok(None)
            } else if row.holder.owner.is_none() && current && row.record.state == state {
                Ok(Some(()))
            } else {
                Err(rules::lease_lost(
                    &id,
                    &row.record.operation.idempotency_key,
                ))
            }
        });
        self.transact(intent, &action, Work::new(body, read_back))
    }

    fn release(&self, order_id: &str, lease: &Lease) -> Result<()> {
        release(self, order_id, lease)
    }

    fn get(&self, order_id: &str) -> Result<Option<OperationRecord>> {
        let g = self.guard();
        let Some(row) = self.row(order_id)? else {
            return Ok(None);
        };
        let row = g.verified(row)?;
        rules::same_scope(row.scope.as_ref(), g.scope.as_ref(), &row.record.operation)?;
        Ok(Some(row.record))
    }

    fn list(&self, states: &[OperationState]) -> Result<Vec<OperationRecord>> {
        list(self, states)
    }

    fn list_every(&self) -> Result<Vec<Listed>> {
        list_every(self)
    }

    fn purge_settled(&self, before: u64) -> Result<usize> {
        purge_settled(self, before)
    }

    fn reconcile(
        &self,
        order_id: &str,
        state: OperationState,
        by: &str,
        reference: &str,
        now: u64,
    ) -> Result<Reconciliation> {
        rules::check_now(now)?;
        rules::check_reconciliation(state, by, reference)?;
        let action = format!("reconcile order id {order_id:?}");
        writable(self, &action)?;
        let intent = Intent::Reconcile { order_id };
        let wanted = Reconciliation {
            order_id: order_id.to_owned(),
            idempotency_key: String::new(),
            previous_state: state,
            state,
            by: by.to_owned(),
            at: now,
            reference: reference.to_owned(),
        };
        let asked = wanted.clone();
        let body: Body<Reconciliation> = Box::new(move |g, tx| {
            let order_id = &asked.order_id;
            let row = g.existing(tx, order_id)?;
            let previous = row.record.state;
            let key = &row.record.operation.idempotency_key;
            if previous.is_settled() {
                return Err(rules::already_settled(order_id, previous));
            }
            if row.holder.blocks(now) {
                return Err(rules::busy(order_id, key));
            }
            let new = RowState {
                state,
                attempts: row.record.attempts,
                updated_at: now,
                response: row.record.response.as_ref(),
            };
            g.write(tx, &row, &new, LeaseChange::Fence)?;
            let mut reconciliation = Reconciliation {
                idempotency_key: key.clone(),
                previous_state: previous,
                ..asked.clone()
            };
            reconciliation.at = tx.reconciled(&reconciliation)?;
            Ok(reconciliation)
        });
        // Committed when the operation is in the state written and the
        // reconciliation is stored.
        let read_back: Body<Option<Reconciliation>> =
            Box::new(move |_, tx| match tx.load(&wanted.order_id)? {
                Some(row) if row.record.state == state => tx.find_reconciliation(&wanted),
                _ => Ok(None),
            });
        self.transact(intent, &action, Work::new(body, read_back))
    }

    fn reconciliations(&self, order_id: Option<&str>) -> Result<Vec<Reconciliation>> {
        Storage::reconciliations(self, order_id)
    }

    fn check(&self) -> Result<JournalCheck> {
        check(self)
    }

    fn save_clock_offset(&self, offset: &StoredClockOffset) -> Result<()> {
        Storage::save_clock_offset(self, offset)
    }

    fn clock_offset(&self, platform: &str) -> Result<Option<StoredClockOffset>> {
        Ok(Storage::clock_offsets(self, Some(platform))?
            .into_iter()
            .next())
    }

    fn clock_offsets(&self) -> Result<Vec<StoredClockOffset>> {
        Storage::clock_offsets(self, None)
    }
}
