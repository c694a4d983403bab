//! One transaction of a [`SqliteJournal`] for the engine: the statements
//! behind the engine's [`Tx`], and what the transaction did that its
//! durability depends on ([`Done`], [`SyncFor`]).

use rusqlite::{params, Connection, OptionalExtension};

use super::rows::{sql_time, RawRow, SELECT_ONE};
use super::SqliteJournal;
use crate::error::Result;
use crate::journal::engine::{Intent, LeaseChange, Row as Stored, StateWrite, Tx, Version};
use crate::journal::{rules, Lease, Reconciliation};
use crate::operation::OperationState;

/// What a transaction did that its durability depends on: the state the
/// row it read first had, and the order id, lease and attempts of a row it
/// wrote held.
#[derive(Default)]
pub(super) struct Done {
    pub(super) before: Option<(OperationState, u32)>,
    pub(super) held: Option<(String, Lease, u32)>,
    pub(super) inserted: bool,
    pub(super) cleared: Option<String>,
    pub(super) released: Option<(String, String)>,
}

/// Which write must be on disk before it returns, decided in its
/// transaction (once: the group commit may have made its caller the one to
/// lead the next fsync, who must then wait for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SyncFor {
    /// An operation's first attempt, recorded as it is opened: when the
    /// open inserted it.
    Record,
    /// A recorded attempt: the first of the operation, or the first under
    /// a lease that has not made it durable yet (it was found in flight or
    /// unknown: its previous driver may have died, or its fsync failed,
    /// before it reached the disk).
    Attempt,
    /// A reconciliation: always.
    Reconcile,
}

impl SyncFor {
    /// Which of them `intent` may be.
    pub(super) fn of(intent: &Intent<'_>) -> Option<SyncFor> {
        intent.may_need_sync().then_some(match intent {
            Intent::Open { .. } => SyncFor::Record,
            Intent::Reconcile { .. } => SyncFor::Reconcile,
            _ => SyncFor::Attempt,
        })
    }

    /// Whether the write that did `done` must be on disk before it returns.
    pub(super) fn needed(self, j: &SqliteJournal, done: &Done) -> bool {
        match self {
            SyncFor::Record => done.inserted,
            SyncFor::Attempt => {
                let pending = done.before.is_some_and(|b| b.0 == OperationState::Pending);
                pending
                    || done.held.as_ref().is_none_or(|(order_id, lease, _)| {
                        j.leases().get(order_id) != Some(&lease.owner)
                    })
            }
            SyncFor::Reconcile => true,
        }
    }
}

/// One transaction of the batch, for the engine.
pub(super) struct SqliteTx<'a> {
    pub(super) j: &'a SqliteJournal,
    pub(super) tx: &'a Connection,
    pub(super) action: &'a str,
    pub(super) done: Done,
}

/// The `UPDATE` of a row's state part: what every variant sets.
macro_rules! set_state {
    () => {
        "UPDATE operations SET state = ?2, attempts = ?3, updated_at = ?4, response_status = ?5,
             response_headers = ?6, response_body = ?7, response_replayed = ?8, state_mac = ?9"
    };
}
/// The lease change of [`LeaseChange::Extend`].
macro_rules! extend_lease {
    () => {
        ", lease_owner = ?10, lease_expires = ?11"
    };
}
/// The lease change of [`LeaseChange::Clear`] and [`LeaseChange::Fence`].
macro_rules! clear_lease {
    () => {
        ", lease_owner = NULL, lease_expires = NULL"
    };
}
/// The guard of [`Tx::update_if`]: the lease owner, state part and MACs
/// still those read.
macro_rules! guarded {
    () => {
        " AND lease_owner = ?12 AND state = ?13 AND attempts = ?14 AND updated_at = ?15
             AND row_mac IS ?16 AND state_mac IS ?17"
    };
}

/// The statement of [`SqliteTx::write_state`] for `lease`, with or without
/// the guard: static text, so that the statement cache finds it without a
/// string built per write.
fn state_sql(lease: LeaseChange<'_>, guard: bool) -> &'static str {
    match (lease, guard) {
        (LeaseChange::Keep, false) => concat!(set_state!(), " WHERE order_id = ?1"),
        (LeaseChange::Keep, true) => concat!(set_state!(), " WHERE order_id = ?1", guarded!()),
        (LeaseChange::Extend(..), false) => {
            concat!(set_state!(), extend_lease!(), " WHERE order_id = ?1")
        }
        (LeaseChange::Extend(..), true) => concat!(
            set_state!(),
            extend_lease!(),
            " WHERE order_id = ?1",
            guarded!()
        ),
        (LeaseChange::Clear | LeaseChange::Fence, false) => {
            concat!(set_state!(), clear_lease!(), " WHERE order_id = ?1")
        }
        (LeaseChange::Clear | LeaseChange::Fence, true) => concat!(
            set_state!(),
            clear_lease!(),
            " WHERE order_id = ?1",
            guarded!()
        ),
    }
}

impl SqliteTx<'_> {
    /// Whether `order_id` is stored.
    fn stored(&self, order_id: &str) -> Result<bool> {
        self.tx
            .prepare_cached("SELECT 1 FROM operations WHERE order_id = ?1")
            .and_then(|mut stmt| stmt.query_row([order_id], |_| Ok(())).optional())
            .map(|found| found.is_some())
            .map_err(|e| self.j.ctx.db(self.action, e))
    }

    /// Writes the state part of a row (and changes its lease); with
    /// `guard`, only where its lease owner, state part and MACs are still
    /// the given ones. Answers the rows written.
    fn write_state(
        &mut self,
        write: &StateWrite<'_>,
        guard: Option<(&Lease, &Version)>,
    ) -> Result<usize> {
        let (order_id, state, state_mac) = (write.order_id, write.state, write.state_mac);
        let headers = rules::encoded_headers(state.response)?;
        let response = state.response;
        let (owner, expires) = match write.lease {
            LeaseChange::Extend(lease, _) => (
                Some(&lease.owner),
                Some(sql_time(rules::stored_expiry(lease))),
            ),
            LeaseChange::Keep | LeaseChange::Clear | LeaseChange::Fence => (None, None),
        };
        let sql = state_sql(write.lease, guard.is_some());
        let mut values: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(17);
        let (name, at) = (state.state.as_str(), sql_time(state.updated_at));
        let (status, body) = (
            response.map(|r| r.status),
            response.map(|r| r.body.as_slice()),
        );
        let replayed = response.map(|r| r.replayed);
        values.extend([
            &order_id as &dyn rusqlite::ToSql,
            &name,
            &state.attempts,
            &at,
        ]);
        values.extend([
            &status as &dyn rusqlite::ToSql,
            &headers,
            &body,
            &replayed,
            &state_mac,
        ]);
        let guarded = guard.map(|(lease, last)| {
            let (state, updated_at) = (last.state.as_str(), sql_time(last.updated_at));
            (lease.owner.as_str(), state, last.attempts, updated_at, last)
        });
        // With a guard, ?10 and ?11 are bound (NULL when unused) so that
        // its numbers stay fixed.
        if owner.is_some() || guarded.is_some() {
            values.extend([&owner as &dyn rusqlite::ToSql, &expires]);
        }
        if let Some((owner, state, attempts, updated_at, last)) = &guarded {
            values.extend([
                owner as &dyn rusqlite::ToSql,
                state,
                attempts,
                updated_at,
                &last.row_mac,
                &last.state_mac,
            ]);
        }
        let written = self.run(sql, &values)?;
        if written > 0 {
            match write.lease {
                LeaseChange::Keep => {}
                LeaseChange::Extend(lease, _) => {
                    self.done.held = Some((order_id.to_owned(), lease.clone(), state.attempts));
                }
                LeaseChange::Clear | LeaseChange::Fence => {
                    self.done.cleared = Some(order_id.to_owned());
                }
            }
        }
        Ok(written)
    }

    fn run(&self, sql: &str, params: &[&dyn rusqlite::ToSql]) -> Result<usize> {
        self.tx
            .prepare_cached(sql)
            .and_then(|mut stmt| stmt.execute(params))
            .map_err(|e| self.j.ctx.db(self.action, e))
    }
}

impl Tx for SqliteTx<'_> {
    fn load(&mut self, order_id: &str) -> Result<Option<Stored>> {
        let raw = self
            .tx
            .prepare_cached(SELECT_ONE)
            .and_then(|mut stmt| stmt.query_row([order_id], RawRow::read).optional())
            .map_err(|e| self.j.ctx.db(self.action, e))?;
        let row = raw.map(|r| r.check(&self.j.ctx)).transpose()?;
        if let (None, Some(row)) = (self.done.before, &row) {
            self.done.before = Some((row.record.state, row.record.attempts));
        }
        Ok(row)
    }

    fn key_holder(&mut self, idempotency_key: &str) -> Result<Option<String>> {
        self.tx
            .prepare_cached("SELECT order_id FROM operations WHERE idempotency_key = ?1")
            .and_then(|mut stmt| {
                stmt.query_row([idempotency_key], |row| row.get(0))
                    .optional()
            })
            .map_err(|e| self.j.ctx.db(self.action, e))
    }

    fn insert(&mut self, row: &Stored, lease: &Lease, _now: u64) -> Result<bool> {
        let (op, record, scope) = (&row.record.operation, &row.record, row.scope.as_ref());
        let inserted = self.run(
            "INSERT INTO operations (order_id, idempotency_key, method, path, body, body_sha256,
                 status_path, state, attempts, created_at, updated_at, lease_owner, lease_expires,
                 row_mac, platform, key_id, state_mac)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?13, ?9, ?9, ?10, ?11, ?12, ?14, ?15, ?16)
             ON CONFLICT DO NOTHING",
            params![
                op.order_id,
                op.idempotency_key,
                op.method,
                op.path,
                op.body,
                op.body_sha256,
                op.status_path,
                record.state.as_str(),
                sql_time(record.created_at),
                lease.owner,
                sql_time(rules::stored_expiry(lease)),
                row.row_mac,
                record.attempts,
                scope.map(|s| &s.platform),
                scope.map(|s| &s.key_id),
                row.state_mac,
            ],
        )? == 1;
        if inserted {
            self.done.inserted = true;
            self.done.held = Some((op.order_id.clone(), lease.clone(), record.attempts));
        }
        Ok(inserted)
    }

    fn take_lease(&mut self, order_id: &str, lease: &Lease, _now: u64) -> Result<()> {
        self.run(
            "UPDATE operations SET lease_owner = ?2, lease_expires = ?3 WHERE order_id = ?1",
            params![order_id, lease.owner, sql_time(rules::stored_expiry(lease))],
        )?;
        Ok(())
    }

    fn update(&mut self, write: &StateWrite<'_>) -> Result<()> {
        self.write_state(write, None).map(drop)
    }

    /// One statement: the row written only where `lease` still holds it
    /// and its state part and MACs are those of `last`.
    fn update_if(&mut self, write: &StateWrite<'_>, lease: &Lease, last: &Version) -> Result<bool> {
        let written = self.write_state(write, Some((lease, last)))? == 1;
        if written && self.done.before.is_none() {
            self.done.before = Some((last.state, last.attempts));
        }
        Ok(written)
    }

    fn release(&mut self, order_id: &str, lease: &Lease) -> Result<bool> {
        let released = self.run(
            "UPDATE operations SET lease_owner = NULL, lease_expires = NULL
             WHERE order_id = ?1 AND lease_owner = ?2",
            params![order_id, lease.owner],
        )?;
        self.done.released = Some((order_id.to_owned(), lease.owner.clone()));
        Ok(released > 0 || self.stored(order_id)?)
    }

    fn reconciled(&mut self, r: &Reconciliation) -> Result<u64> {
        self.run(
            "INSERT INTO reconciliations (order_id, idempotency_key, previous_state, state,
                 reconciled_by, reconciled_at, reference)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                r.order_id,
                r.idempotency_key,
                r.previous_state.as_str(),
                r.state.as_str(),
                r.by,
                sql_time(r.at),
                r.reference
            ],
        )?;
        Ok(r.at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::sqlite::tests::temp_journal;

    /// Every variant of the state write prepares, and numbers its
    /// parameters as `write_state` binds them: ?1 to ?9 always, ?10 and
    /// ?11 for an extended lease or a guard, ?12 to ?17 for a guard.
    #[test]
    fn each_state_write_prepares_with_the_parameters_it_is_given() {
        let (_dir, journal) = temp_journal();
        let lease = Lease {
            owner: "o".into(),
            expires_at: 10,
        };
        let conn = journal.lock();
        for (change, unguarded) in [
            (LeaseChange::Keep, 9),
            (LeaseChange::Extend(&lease, 1), 11),
            (LeaseChange::Clear, 9),
            (LeaseChange::Fence, 9),
        ] {
            for (guard, count) in [(false, unguarded), (true, 17)] {
                let sql = state_sql(change, guard);
                let stmt = conn.prepare(sql).unwrap();
                assert_eq!(stmt.parameter_count(), count, "{sql}");
                assert_eq!(sql.contains("lease_owner = ?12"), guard, "{sql}");
            }
        }
    }
}
