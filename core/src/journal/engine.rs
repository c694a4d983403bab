//! The journal engine: every rule of a [`Journal`] — what opens, claims,
//! records, finishes, releases, reconciles, purges, lists and checks an
//! operation, its lease and its MACs — applied once, over a small
//! [`Storage`] that only reads and writes rows.
//!
//! A backend is a [`Storage`]: it runs a body in one transaction
//! ([`Storage::transact`]) over a [`Tx`], lists rows, deletes settled
//! ones, and keeps reconciliations and clock offsets. It decides nothing:
//! every [`Journal`] method of a [`Storage`] is the engine's.
//!
//! A body checks everything before it writes anything, so a store without
//! rollback (memory) stays consistent when a body refuses.

use std::sync::{PoisonError, RwLock, RwLockReadGuard};

use super::rules;
use super::{
    Journal, JournalCheck, JournalScope, Lease, Listed, Opened, OperationRecord, Reconciliation,
    RowAuth, RowState, StoredClockOffset, StoredMacs,
};
use crate::error::{Error, ErrorCode, Result};
use crate::operation::{FrozenOperation, OperationState, Response};

/// A stored operation as the store read it: the record, the scope it was
/// made for, its lease and its MACs.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub record: OperationRecord,
    pub scope: Option<JournalScope>,
    pub holder: Holder,
    pub row_mac: Option<String>,
    pub state_mac: Option<String>,
}

impl Row {
    fn macs(&self) -> StoredMacs<'_> {
        StoredMacs {
            row_mac: self.row_mac.as_deref(),
            state_mac: self.state_mac.as_deref(),
        }
    }
}

/// Who holds an operation's lease, and until when.
#[derive(Clone, Debug, Default)]
pub(crate) struct Holder {
    /// The owner holding it, `None` when free.
    pub owner: Option<String>,
    /// When it expires: a Unix time compared with the caller's `now`, or
    /// whether it expired by the store's own clock.
    pub expiry: Expiry,
    /// How many times it was taken, for a store that fences stale
    /// holders by it (0 otherwise).
    pub epoch: i64,
}

/// When a lease expires.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Expiry {
    /// At this Unix time (`None`: no expiry stored).
    At(Option<u64>),
    /// Whether it expired by the store's clock.
    Expired(bool),
}

impl Default for Expiry {
    fn default() -> Expiry {
        Expiry::At(None)
    }
}

impl Holder {
    /// `lease` holding an operation (its expiry capped as stored).
    pub(crate) fn of(lease: &Lease) -> Holder {
        Holder {
            owner: Some(lease.owner.clone()),
            expiry: Expiry::At(Some(rules::stored_expiry(lease))),
            epoch: 0,
        }
    }

    /// Whether `lease` may take the operation at `now`.
    fn free_for(&self, lease: &Lease, now: u64) -> bool {
        let owner = self.owner.as_deref();
        match self.expiry {
            Expiry::At(at) => rules::lease_free(owner, at, lease, now),
            Expiry::Expired(expired) => rules::lease_free_at(owner, expired, lease),
        }
    }

    /// Whether a live lease excludes a reconciliation at `now`.
    fn blocks(&self, now: u64) -> bool {
        let owner = self.owner.as_deref();
        match self.expiry {
            Expiry::At(at) => rules::lease_blocks(owner, at, now),
            Expiry::Expired(expired) => rules::lease_blocks_at(owner, expired),
        }
    }

    fn held_by(&self, lease: &Lease) -> bool {
        rules::lease_held(self.owner.as_deref(), lease)
    }
}

/// What a stored row's lease becomes with an update.
#[derive(Clone, Copy, Debug)]
pub(crate) enum LeaseChange<'a> {
    /// Unchanged.
    Keep,
    /// Extended by its holder from `now` (the second field).
    Extend(&'a Lease, u64),
    /// Free.
    Clear,
    /// Free, and every earlier holder fenced off (a reconciliation).
    Fence,
}

/// A new state of one row, as [`Tx::update`] stores it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StateWrite<'a> {
    pub order_id: &'a str,
    pub state: &'a RowState<'a>,
    /// The state MAC of `state` (`None` without the key).
    pub state_mac: Option<&'a str>,
    pub lease: LeaseChange<'a>,
}

/// What a transaction is for, so that a store can make it durable,
/// remember the leases it took, or read it back after a lost commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Intent<'a> {
    /// `open` (`first_attempt`: `open_to_send`).
    Open {
        order_id: &'a str,
        owner: &'a str,
        first_attempt: bool,
    },
    /// `claim`.
    Claim { order_id: &'a str, owner: &'a str },
    /// `claim_next`.
    ClaimNext { owner: &'a str },
    /// `record_attempt`.
    RecordAttempt { order_id: &'a str, owner: &'a str },
    /// `finish`.
    Finish { order_id: &'a str, owner: &'a str },
    /// `release`.
    Release { order_id: &'a str, owner: &'a str },
    /// `reconcile`.
    Reconcile { order_id: &'a str },
    /// [`undo_attempt`].
    Undo,
}

/// One transaction of a store: every read locks what it reads until the
/// transaction ends.
pub(crate) trait Tx {
    /// The row of `order_id` as stored, or `None`.
    fn load(&mut self, order_id: &str) -> Result<Option<Row>>;
    /// The order id holding `idempotency_key`, if any.
    fn key_holder(&mut self, idempotency_key: &str) -> Result<Option<String>>;
    /// Inserts a new row held by `lease`; `false` (nothing written) when
    /// its order id or idempotency key is already stored.
    fn insert(&mut self, row: &Row, lease: &Lease, now: u64) -> Result<bool>;
    /// Gives the lease of `order_id` to `lease` from `now`.
    fn take_lease(&mut self, order_id: &str, lease: &Lease, now: u64) -> Result<()>;
    /// Writes the state part of a row (with its state MAC) and changes its
    /// lease.
    fn update(&mut self, write: &StateWrite<'_>) -> Result<()>;
    /// Frees the lease of `order_id` if `lease` holds it; `false` when no
    /// such row is stored.
    fn release(&mut self, order_id: &str, lease: &Lease) -> Result<bool>;
    /// Keeps a reconciliation; answers the time it was stored with.
    fn reconciled(&mut self, reconciliation: &Reconciliation) -> Result<u64>;
    /// Whether `lease`, which holds `row`, holds it under the epoch this
    /// handle took it with (a store that fences stale holders).
    fn current(&self, _row: &Row, _lease: &Lease) -> bool {
        true
    }
    /// Takes the oldest unsettled row of `scope` whose lease is free, in
    /// one statement (a store with [`Storage::CLAIMS_NEXT`]).
    fn claim_next(
        &mut self,
        _lease: &Lease,
        _now: u64,
        _scope: Option<&JournalScope>,
    ) -> Result<Option<Row>> {
        Ok(None)
    }
    /// The last reconciliation of `order_id` as `state` by `by` with
    /// `reference`, to read a reconciliation back after a lost commit.
    fn find_reconciliation(&mut self, _found: &Reconciliation) -> Result<Option<Reconciliation>> {
        Ok(None)
    }
}

/// A row that read back valid, or why it did not.
pub(crate) type Read = std::result::Result<Row, Unreadable>;

/// A row that did not read back valid.
#[derive(Debug)]
pub(crate) struct Unreadable {
    pub order_id: String,
    pub error: Error,
}

/// What [`Storage::inspect`] found in the store itself.
#[derive(Debug, Default)]
pub(crate) struct Inspection {
    pub backend: &'static str,
    pub schema_version: Option<u32>,
    pub library_schema_version: Option<u32>,
    pub migrated_from: Option<u32>,
    /// Problems of the store itself (its own integrity check), first.
    pub problems: Vec<String>,
    /// Problems found after the rows (where the store lives).
    pub later_problems: Vec<String>,
    /// Whether it carries a seal; `None` for a store whose rows carry no
    /// MACs at all (memory).
    pub sealed: Option<bool>,
    /// Every row, oldest first.
    pub rows: Vec<Read>,
    /// Every reconciliation, oldest first.
    pub reconciliations: Vec<Result<Reconciliation>>,
}

/// How a handle authenticates and scopes rows, and the name of its store
/// in messages: what the engine keeps for each handle.
#[derive(Debug)]
pub(crate) struct Guard {
    pub auth: RwLock<RowAuth>,
    pub scope: Option<JournalScope>,
    pub target: String,
}

impl Guard {
    pub(crate) fn new(auth: RowAuth, scope: Option<JournalScope>, target: String) -> Guard {
        Guard {
            auth: RwLock::new(auth),
            scope,
            target,
        }
    }

    pub(crate) fn auth(&self) -> RwLockReadGuard<'_, RowAuth> {
        self.auth.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn refused(&self, why: impl std::fmt::Display) -> Error {
        Error::new(
            ErrorCode::Journal,
            format!("journal {}: {why}", self.target),
        )
    }

    fn check_writable(&self) -> Result<()> {
        self.auth()
            .check_writable()
            .map_err(|why| self.refused(why))
    }

    /// `row` verified (with the key) and in this handle's scope.
    fn verified(&self, row: Row) -> Result<Row> {
        self.auth()
            .verify(&self.target, row.scope.as_ref(), &row.record, row.macs())?;
        Ok(row)
    }

    fn in_scope(&self, row: &Row) -> bool {
        rules::scope_matches(row.scope.as_ref(), self.scope.as_ref())
    }

    /// The row of `order_id` in `tx`, verified, refused when another
    /// scope's.
    fn load(&self, tx: &mut dyn Tx, order_id: &str) -> Result<Option<Row>> {
        let Some(row) = tx.load(order_id)? else {
            return Ok(None);
        };
        let row = self.verified(row)?;
        let stored = row.scope.as_ref();
        rules::same_scope(stored, self.scope.as_ref(), &row.record.operation)?;
        Ok(Some(row))
    }

    fn existing(&self, tx: &mut dyn Tx, order_id: &str) -> Result<Row> {
        self.load(tx, order_id)?
            .ok_or_else(|| rules::unknown_order(order_id))
    }

    /// The existing row of `order_id` if `lease` holds it.
    fn held(&self, tx: &mut dyn Tx, order_id: &str, lease: &Lease) -> Result<Row> {
        let row = self.existing(tx, order_id)?;
        if !row.holder.held_by(lease) || !tx.current(&row, lease) {
            let key = &row.record.operation.idempotency_key;
            return Err(rules::lease_lost(order_id, key));
        }
        Ok(row)
    }

    /// Writes `state` over `row` with its new state MAC.
    fn write(
        &self,
        tx: &mut dyn Tx,
        row: &Row,
        state: &RowState<'_>,
        lease: LeaseChange<'_>,
    ) -> Result<()> {
        let mac = self.auth().state_mac(row.row_mac.as_deref(), state)?;
        tx.update(&StateWrite {
            order_id: &row.record.operation.order_id,
            state,
            state_mac: mac.as_deref(),
            lease,
        })
    }

    /// Takes `row`'s lease for `lease`, or `operation_busy`.
    fn take(&self, tx: &mut dyn Tx, row: &Row, lease: &Lease, now: u64) -> Result<()> {
        let op = &row.record.operation;
        if !row.holder.free_for(lease, now) {
            return Err(rules::busy(&op.order_id, &op.idempotency_key));
        }
        tx.take_lease(&op.order_id, lease, now)
    }

    /// A settled row answered as it is; an unsettled one taken.
    fn resume(&self, tx: &mut dyn Tx, row: Row, lease: &Lease, now: u64) -> Result<Opened> {
        if row.record.state.is_settled() {
            return Ok(Opened::Settled(row.record));
        }
        self.take(tx, &row, lease, now)?;
        Ok(Opened::Resumable(row.record))
    }
}

/// The work of one transaction: it may run on another caller's thread
/// (SQLite's shared transactions) and run again after a lost connection
/// (PostgreSQL), so it owns what it needs.
pub(crate) type Body<T> = Box<dyn FnMut(&Guard, &mut dyn Tx) -> Result<T> + Send>;

/// A transaction's body, and how to tell after a lost commit whether it
/// was committed: `Some` is the committed result, `None` (not committed)
/// runs the body again. Only a store that can lose a commit's answer
/// (PostgreSQL) reads it back.
pub(crate) struct Work<T> {
    pub body: Body<T>,
    pub read_back: Body<Option<T>>,
}

impl<T: 'static> Work<T> {
    /// A body that may simply run again after a lost commit (taking a
    /// lease its owner already holds, releasing, purging).
    fn again(body: Body<T>) -> Work<T> {
        Work {
            body,
            read_back: Box::new(|_, _| Ok(None)),
        }
    }
}

/// A journal store. Every [`Journal`] method of a `Storage` is the
/// engine's.
pub(crate) trait Storage: Send + Sync {
    /// The latest Unix time the store keeps (a purge horizon is capped
    /// to it).
    const LATEST: u64;

    /// Whether [`Tx::claim_next`] takes over an operation in one statement
    /// (otherwise the engine lists and claims).
    const CLAIMS_NEXT: bool = false;

    /// The handle's authentication, scope and name.
    fn guard(&self) -> &Guard;

    /// Runs `body` in one transaction, committed when it answers `Ok` (and
    /// made durable as `intent` needs), rolled back otherwise.
    fn transact<T: Send + 'static>(
        &self,
        intent: Intent<'_>,
        action: &str,
        work: Work<T>,
    ) -> Result<T>;

    /// The row of `order_id` as stored, outside a transaction.
    fn row(&self, order_id: &str) -> Result<Option<Row>>;

    /// Every row in one of `states` (all when `None`), oldest first.
    fn rows(&self, states: Option<&[OperationState]>) -> Result<Vec<Read>>;

    /// Deletes settled rows last changed before `before`, and stores the
    /// purge `horizon` with its MAC when there is one; returns how many.
    fn purge(&self, before: u64, horizon: Option<&(u64, String)>) -> Result<usize>;

    /// The reconciliations of `order_id` (all when `None`), oldest first.
    fn reconciliations(&self, order_id: Option<&str>) -> Result<Vec<Reconciliation>>;

    /// The store's own state and every row, for [`Journal::check`].
    fn inspect(&self) -> Result<Inspection>;

    /// Keeps `offset` for its platform.
    fn save_clock_offset(&self, offset: &StoredClockOffset) -> Result<()>;

    /// The stored offsets of `platform` (all when `None`), by platform.
    fn clock_offsets(&self, platform: Option<&str>) -> Result<Vec<StoredClockOffset>>;
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
    store.guard().check_writable()?;
    let (state, attempts) = if first_attempt {
        (OperationState::InFlight, 1)
    } else {
        (OperationState::Pending, 0)
    };
    let action = format!("open order id {:?}", operation.order_id);
    let intent = Intent::Open {
        order_id: &operation.order_id,
        owner: &lease.owner,
        first_attempt,
    };
    let (operation, lease) = (operation.clone(), lease.clone());
    // Run again after a lost commit: the owner takes its own lease again.
    let work = Work::again(Box::new(move |g, tx| {
        if let Some(existing) = g.load(tx, &operation.order_id)? {
            rules::same_request(&existing.record.operation, &operation)?;
            return g.resume(tx, existing, &lease, now);
        }
        let record = OperationRecord {
            operation: operation.clone(),
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
        if tx.insert(&row, &lease, now)? {
            return Ok(Opened::Created(row.record));
        }
        // The order id appeared since it was read (another instance
        // inserted it and still holds its row), or the key is another
        // order id's.
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
    store.transact(intent, &action, work)
}

fn claim<S: Storage>(store: &S, order_id: &str, lease: &Lease, now: u64) -> Result<Opened> {
    rules::check_now(now)?;
    rules::check_lease(lease)?;
    let action = format!("claim order id {order_id:?}");
    let intent = Intent::Claim {
        order_id,
        owner: &lease.owner,
    };
    let (order_id, lease) = (order_id.to_owned(), lease.clone());
    let work = Work::again(Box::new(move |g, tx| {
        let row = g.existing(tx, &order_id)?;
        g.resume(tx, row, &lease, now)
    }));
    store.transact(intent, &action, work)
}

/// `claim_next`: one statement for a store that has it; otherwise the
/// unsettled operations, oldest first, claimed until one is free.
fn claim_next<S: Storage>(store: &S, lease: &Lease, now: u64) -> Result<Option<Opened>> {
    rules::check_now(now)?;
    rules::check_lease(lease)?;
    if S::CLAIMS_NEXT {
        let intent = Intent::ClaimNext {
            owner: &lease.owner,
        };
        let lease = lease.clone();
        // A row failing its MAC rolls the claim back: its lease stays as
        // it was and nothing is sent.
        let work = Work::again(Box::new(move |g, tx| {
            match tx.claim_next(&lease, now, g.scope.as_ref())? {
                Some(row) => Ok(Some(Opened::Resumable(g.verified(row)?.record))),
                None => Ok(None),
            }
        }));
        return store.transact(intent, "claim the next operation to take over", work);
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

fn record_attempt<S: Storage>(
    store: &S,
    order_id: &str,
    lease: &Lease,
    attempts: u32,
    now: u64,
) -> Result<()> {
    rules::check_now(now)?;
    store.guard().check_writable()?;
    let action = format!("record an attempt of order id {order_id:?}");
    let intent = Intent::RecordAttempt {
        order_id,
        owner: &lease.owner,
    };
    let (id, held) = (order_id.to_owned(), lease.clone());
    let body: Body<()> = Box::new(move |g, tx| {
        let row = g.held(tx, &id, &held)?;
        let state = RowState {
            state: OperationState::InFlight,
            attempts,
            updated_at: now,
            response: row.record.response.as_ref(),
        };
        g.write(tx, &row, &state, LeaseChange::Extend(&held, now))
    });
    let (id, held) = (order_id.to_owned(), lease.clone());
    // Committed when the row is in flight with these attempts under this
    // lease.
    let read_back: Body<Option<()>> = Box::new(move |g, tx| {
        let row = g.held(tx, &id, &held)?;
        let r = &row.record;
        Ok((r.state == OperationState::InFlight && r.attempts == attempts).then_some(()))
    });
    store.transact(intent, &action, Work { body, read_back })
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
        g.write(tx, &row, &state, LeaseChange::Keep)
    }));
    store.transact(Intent::Undo, &action, work)
}

fn finish<S: Storage>(
    store: &S,
    order_id: &str,
    lease: &Lease,
    state: OperationState,
    response: Option<&Response>,
    now: u64,
) -> Result<()> {
    rules::check_now(now)?;
    rules::check_finish_state(state)?;
    store.guard().check_writable()?;
    let action = format!("finish order id {order_id:?}");
    let intent = Intent::Finish {
        order_id,
        owner: &lease.owner,
    };
    let (id, held, response) = (order_id.to_owned(), lease.clone(), response.cloned());
    let body: Body<()> = Box::new(move |g, tx| {
        let row = g.held(tx, &id, &held)?;
        let new = RowState {
            state,
            attempts: row.record.attempts,
            updated_at: now,
            response: response.as_ref(),
        };
        g.write(tx, &row, &new, LeaseChange::Clear)
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
    store.transact(intent, &action, Work { body, read_back })
}

fn release<S: Storage>(store: &S, order_id: &str, lease: &Lease) -> Result<()> {
    let action = format!("release order id {order_id:?}");
    let intent = Intent::Release {
        order_id,
        owner: &lease.owner,
    };
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

fn reconcile<S: Storage>(
    store: &S,
    order_id: &str,
    state: OperationState,
    by: &str,
    reference: &str,
    now: u64,
) -> Result<Reconciliation> {
    rules::check_now(now)?;
    rules::check_reconciliation(state, by, reference)?;
    store.guard().check_writable()?;
    let action = format!("reconcile order id {order_id:?}");
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
    store.transact(intent, &action, Work { body, read_back })
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
    let g = store.guard();
    g.check_writable()?;
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
        record_attempt(self, order_id, lease, attempts, now)
    }

    fn finish(
        &self,
        order_id: &str,
        lease: &Lease,
        state: OperationState,
        response: Option<&Response>,
        now: u64,
    ) -> Result<()> {
        finish(self, order_id, lease, state, response, now)
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
        reconcile(self, order_id, state, by, reference, now)
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
