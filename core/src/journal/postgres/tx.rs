//! One transaction of a [`PostgresJournal`] for the engine: the
//! statements behind the engine's [`Tx`], each prepared once per
//! connection, and what the transaction saw that the handle keeps after
//! its commit (the epoch of a lease it took).

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use postgres::types::ToSql;
use postgres::{Error as PgError, Row, Statement};

use super::pool::Fail;
use super::rows::{expiry_of, expiry_sql, lease_seconds, pg_time, read_row, COLUMNS, UNSETTLED};
use super::{Conn, PostgresJournal, TxMode};
use crate::error::Result;
use crate::journal::engine::{LeaseChange, NewRow, Row as Stored, StateWrite, Tx, Version};
use crate::journal::{rules, JournalScope, Lease, Reconciliation};
use crate::operation::OperationState;

/// What a transaction saw that the handle keeps after its commit: the
/// epoch of a lease it took (and of which order id), the epoch of the row
/// it read last, whether it inserted the row.
#[derive(Default)]
pub(super) struct Seen {
    pub(super) took: Option<(String, i64)>,
    pub(super) read_epoch: Option<i64>,
    pub(super) inserted: bool,
}

/// A row inserted for a body before it ran, as the body must make it.
pub(super) struct Inserted {
    row_mac: Option<String>,
    state_mac: Option<String>,
    owner: String,
}

impl Inserted {
    pub(super) fn of(new: &NewRow) -> Inserted {
        Inserted {
            row_mac: new.row.row_mac.clone(),
            state_mac: new.row.state_mac.clone(),
            owner: new.lease.owner.clone(),
        }
    }

    /// Whether it is `row`, held by `lease`.
    fn is(&self, row: &Stored, lease: &Lease) -> bool {
        self.row_mac == row.row_mac && self.state_mac == row.state_mac && self.owner == lease.owner
    }
}

/// What a transaction saw so far (plain stores: consistent after a panic).
pub(super) fn see(seen: &Mutex<Seen>) -> MutexGuard<'_, Seen> {
    seen.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One transaction, for the engine. A database error is kept to tell a
/// lost connection (run again) from a refusal.
struct PgTx<'a> {
    j: &'a PostgresJournal,
    conn: &'a mut Conn,
    action: &'a str,
    seen: &'a Mutex<Seen>,
    failed: Option<PgError>,
}

impl PostgresJournal {
    /// Runs `f` over a [`PgTx`] on `client`: a database error comes back
    /// as [`Fail::Pg`] (maybe a lost connection), a refusal as
    /// [`Fail::Journal`].
    pub(super) fn in_tx<R>(
        &self,
        conn: &mut Conn,
        action: &str,
        seen: &Mutex<Seen>,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<R>,
    ) -> std::result::Result<R, Fail> {
        let mut tx = PgTx {
            j: self,
            conn,
            action,
            seen,
            failed: None,
        };
        f(&mut tx).map_err(|e| tx.failed.take().map_or(Fail::Journal(e), Fail::Pg))
    }
}

impl Conn {
    /// `sql` prepared on this connection, once.
    fn prepared(&mut self, sql: &str) -> std::result::Result<Statement, PgError> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    /// Inserts `rows` in one statement (prepared once per connection,
    /// whatever their number), each held by its lease from its `now`; a
    /// row whose order id or idempotency key is already stored (or comes
    /// earlier in `rows`) writes nothing. Answers the order ids inserted.
    /// `durable`: the statement sets `synchronous_commit` on for its
    /// transaction (its own, when it runs alone), whatever the session's.
    pub(super) fn insert_rows(
        &mut self,
        rows: &[(&Stored, &Lease, u64)],
        durable: bool,
    ) -> std::result::Result<HashSet<String>, PgError> {
        static INSERT: OnceLock<[String; 2]> = OnceLock::new();
        let sql = INSERT.get_or_init(|| {
            // `set_config(…, true)` holds until the transaction ends, so
            // it decides whether its COMMIT waits for the WAL flush.
            [
                "",
                " WHERE set_config('synchronous_commit', 'on', true) = 'on'",
            ]
            .map(|durable| {
                format!(
                    "INSERT INTO payidem_operations (order_id, idempotency_key, method, path, \
                     body, body_sha256, status_path, state, lease_owner, lease_epoch, \
                     lease_expires, row_mac, attempts, created_at, updated_at, platform, key_id, \
                     state_mac) \
                     SELECT u.o, u.k, u.m, u.p, u.b, u.h, u.sp, u.st, u.lo, 1, {}, u.rm, u.a, \
                     to_timestamp(u.t), to_timestamp(u.t), u.pl, u.ki, u.sm \
                     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[], \
                     $6::text[], $7::text[], $8::text[], $9::text[], $10::float8[], $11::text[], \
                     $12::int4[], $13::float8[], $14::text[], $15::text[], $16::text[]) \
                     AS u(o, k, m, p, b, h, sp, st, lo, s, rm, a, t, pl, ki, sm){durable} \
                     ON CONFLICT DO NOTHING RETURNING order_id",
                    expiry_of("u.s")
                )
            })
        });
        let sql = &sql[usize::from(durable)];
        let text = |f: for<'r> fn(&'r Stored, &'r Lease) -> Option<&'r str>| -> Vec<Option<&str>> {
            rows.iter().map(|(row, lease, _)| f(row, lease)).collect()
        };
        let order_ids = text(|r, _| Some(&r.record.operation.order_id));
        let keys = text(|r, _| Some(&r.record.operation.idempotency_key));
        let methods = text(|r, _| Some(&r.record.operation.method));
        let paths = text(|r, _| Some(&r.record.operation.path));
        let bodies: Vec<&[u8]> = rows
            .iter()
            .map(|(r, _, _)| &r.record.operation.body[..])
            .collect();
        let sha256s = text(|r, _| Some(&r.record.operation.body_sha256));
        let status_paths = text(|r, _| r.record.operation.status_path.as_deref());
        let states = text(|r, _| Some(r.record.state.as_str()));
        let owners = text(|_, lease| Some(&lease.owner));
        let seconds: Vec<Option<f64>> = rows
            .iter()
            .map(|(_, lease, now)| lease_seconds(lease, *now))
            .collect();
        let row_macs = text(|r, _| r.row_mac.as_deref());
        let attempts: Vec<i32> = rows
            .iter()
            .map(|(r, _, _)| i32::try_from(r.record.attempts).unwrap_or(0))
            .collect();
        let created: Vec<f64> = rows
            .iter()
            .map(|(r, _, _)| pg_time(r.record.created_at))
            .collect();
        let platforms = text(|r, _| r.scope.as_ref().map(|s| s.platform.as_str()));
        let key_ids = text(|r, _| r.scope.as_ref().map(|s| s.key_id.as_str()));
        let state_macs = text(|r, _| r.state_mac.as_deref());
        let statement = self.prepared(sql)?;
        let inserted = self.client.query(
            &statement,
            &[
                &order_ids,
                &keys,
                &methods,
                &paths,
                &bodies,
                &sha256s,
                &status_paths,
                &states,
                &owners,
                &seconds,
                &row_macs,
                &attempts,
                &created,
                &platforms,
                &key_ids,
                &state_macs,
            ],
        )?;
        Ok(inserted.iter().map(|r| r.get(0)).collect())
    }
}

impl PgTx<'_> {
    /// Runs `sql` (prepared on this connection once) with `call`. A
    /// database error is kept, to tell a lost connection from a refusal.
    fn run<T>(
        &mut self,
        sql: &str,
        call: impl FnOnce(&mut postgres::Client, &Statement) -> std::result::Result<T, PgError>,
    ) -> Result<T> {
        self.run_with(|conn| {
            let statement = conn.prepared(sql)?;
            call(&mut conn.client, &statement)
        })
    }

    /// Runs `call` on this transaction's connection (its transaction
    /// opened first). A database error is kept, to tell a lost connection
    /// from a refusal.
    fn run_with<T>(
        &mut self,
        call: impl FnOnce(&mut Conn) -> std::result::Result<T, PgError>,
    ) -> Result<T> {
        if self.conn.tx == TxMode::Inserted {
            return Err(self.j.refused(format!(
                "cannot {}: a statement after its group's committed insert",
                self.action
            )));
        }
        let ran = self.begin().and_then(|()| call(self.conn));
        ran.map_err(|e| {
            let error = self.j.db(self.action, &e);
            self.failed = Some(e);
            error
        })
    }

    /// Writes the state part of a row (and changes its lease); with
    /// `guard`, only where the lease (owner, epoch) and the state part and
    /// MACs are still the given ones. Answers the rows written.
    fn write_state(
        &mut self,
        write: &StateWrite<'_>,
        guard: Option<(&Lease, i64, &Version)>,
    ) -> Result<u64> {
        let (order_id, state, state_mac) = (write.order_id, write.state, write.state_mac);
        let (lease_sql, seconds) = match write.lease {
            LeaseChange::Keep => (String::new(), None),
            LeaseChange::Extend(lease, now) => (
                format!(", lease_expires = {}", expiry_sql(10)),
                Some(lease_seconds(lease, now)),
            ),
            LeaseChange::Clear => (
                ", lease_owner = NULL, lease_expires = NULL".to_owned(),
                None,
            ),
            LeaseChange::Fence => (
                ", lease_owner = NULL, lease_expires = NULL, lease_epoch = lease_epoch + 1"
                    .to_owned(),
                None,
            ),
        };
        let headers = rules::encoded_headers(state.response)?;
        let response = state.response;
        let attempts = i32::try_from(state.attempts).unwrap_or(i32::MAX);
        let status = response.map(|r| i32::from(r.status));
        let body = response.map(|r| r.body.as_slice());
        let replayed = response.map(|r| r.replayed);
        let (at, name) = (pg_time(state.updated_at), state.state.as_str());
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![
            &order_id, &name, &attempts, &at, &status, &headers, &body, &replayed, &state_mac,
        ];
        if let Some(seconds) = &seconds {
            params.push(seconds);
        }
        let guarded = guard.map(|(lease, epoch, last)| {
            (
                lease.owner.as_str(),
                epoch,
                last.state.as_str(),
                i32::try_from(last.attempts).unwrap_or(i32::MAX),
                i64::try_from(last.updated_at).unwrap_or(i64::MAX),
                last,
            )
        });
        let mut guard_sql = String::new();
        if let Some((owner, epoch, state, attempts, updated_at, last)) = &guarded {
            let n = params.len();
            guard_sql = format!(
                " AND lease_owner = ${} AND lease_epoch = ${} AND state = ${} \
                 AND attempts = ${} AND floor(extract(epoch FROM updated_at))::bigint = ${} \
                 AND row_mac IS NOT DISTINCT FROM ${} AND state_mac IS NOT DISTINCT FROM ${}",
                n + 1,
                n + 2,
                n + 3,
                n + 4,
                n + 5,
                n + 6,
                n + 7
            );
            params.extend([
                owner as &(dyn ToSql + Sync),
                epoch,
                state,
                attempts,
                updated_at,
                &last.row_mac,
                &last.state_mac,
            ]);
        }
        let sql = format!(
            "UPDATE payidem_operations SET state = $2, attempts = $3, \
             updated_at = to_timestamp($4), response_status = $5, response_headers = $6, \
             response_body = $7, response_replayed = $8, state_mac = $9{lease_sql} \
             WHERE order_id = $1{guard_sql}"
        );
        self.run(&sql, |c, s| c.execute(s, &params))
    }

    /// Opens the transaction of a write that runs alone, before its first
    /// statement that is not a guarded update.
    fn begin(&mut self) -> std::result::Result<(), PgError> {
        if self.conn.tx != TxMode::Lazy {
            return Ok(());
        }
        self.conn.client.batch_execute("BEGIN")?;
        self.conn.tx = TxMode::Open;
        Ok(())
    }

    fn stored(&mut self, row: Option<Row>) -> Result<Option<Stored>> {
        let Some(row) = row else {
            return Ok(None);
        };
        let stored = read_row(&self.j.target, &row, true)?;
        see(self.seen).read_epoch = Some(stored.holder.epoch);
        Ok(Some(stored))
    }
}

impl Tx for PgTx<'_> {
    fn load(&mut self, order_id: &str) -> Result<Option<Stored>> {
        let sql =
            format!("SELECT {COLUMNS} FROM payidem_operations WHERE order_id = $1 FOR UPDATE");
        let row = self.run(&sql, |c, s| c.query_opt(s, &[&order_id]))?;
        self.stored(row)
    }

    fn key_holder(&mut self, idempotency_key: &str) -> Result<Option<String>> {
        Ok(self
            .run(
                "SELECT order_id FROM payidem_operations WHERE idempotency_key = $1",
                |c, s| c.query_opt(s, &[&idempotency_key]),
            )?
            .map(|r| r.get(0)))
    }

    /// The answer of the statement that inserted this transaction's new
    /// rows together ([`Conn::insert_rows`], a durable group), or one
    /// statement of its own.
    fn insert(&mut self, row: &Stored, lease: &Lease, now: u64) -> Result<bool> {
        let order_id = &row.record.operation.order_id;
        let answer = self.conn.inserted.get(order_id);
        let created = match answer.map(|(created, made)| (*created, made.is(row, lease))) {
            Some((created, true)) => {
                self.conn.inserted.remove(order_id);
                created
            }
            // Not this body's row: left for the group to undo (see
            // `PostgresJournal::run_group`).
            Some((true, false)) => {
                return Err(self.j.refused(format!(
                    "cannot {}: the row inserted for it is not the one it writes",
                    self.action
                )))
            }
            Some((false, false)) | None => {
                self.conn.inserted.remove(order_id);
                self.run_with(|conn| conn.insert_rows(&[(row, lease, now)], false))?
                    .contains(order_id)
            }
        };
        if created {
            let mut seen = see(self.seen);
            seen.took = Some((order_id.clone(), 1));
            seen.inserted = true;
        }
        Ok(created)
    }

    fn take_lease(&mut self, order_id: &str, lease: &Lease, now: u64) -> Result<()> {
        let sql = format!(
            "UPDATE payidem_operations SET lease_owner = $2, lease_epoch = lease_epoch + 1, \
             lease_expires = {} WHERE order_id = $1 RETURNING lease_epoch",
            expiry_sql(3)
        );
        let seconds = lease_seconds(lease, now);
        let epoch: i64 = self
            .run(&sql, |c, s| {
                c.query_one(s, &[&order_id, &lease.owner, &seconds])
            })?
            .get(0);
        see(self.seen).took = Some((order_id.to_owned(), epoch));
        Ok(())
    }

    fn update(&mut self, write: &StateWrite<'_>) -> Result<()> {
        self.write_state(write, None).map(drop)
    }

    /// One statement: the row written only where this handle's lease
    /// (owner and the epoch it took) still holds it and its state part
    /// and MACs are those of `last`.
    fn update_if(&mut self, write: &StateWrite<'_>, lease: &Lease, last: &Version) -> Result<bool> {
        let Some(taken) = self.j.recall(write.order_id, &lease.owner) else {
            return Ok(false);
        };
        // First in a write that may run alone: this statement is its whole
        // transaction (nothing else is written when it writes).
        let alone = self.conn.tx == TxMode::Lazy;
        if alone {
            self.j.before_commit(false, self.conn);
            self.conn.tx = TxMode::AloneSent;
        }
        let written = self.write_state(write, Some((lease, taken.epoch, last)))? == 1;
        if alone {
            self.conn.tx = if written {
                TxMode::AloneCommitted
            } else {
                TxMode::Lazy
            };
        }
        if written {
            see(self.seen).read_epoch = Some(taken.epoch);
        }
        Ok(written)
    }

    fn release(&mut self, order_id: &str, lease: &Lease) -> Result<bool> {
        let epoch = self.j.recall(order_id, &lease.owner).map(|t| t.epoch);
        Ok(self
            .run(
                "WITH target AS (SELECT order_id FROM payidem_operations WHERE order_id = $1), \
             released AS (UPDATE payidem_operations SET lease_owner = NULL, \
               lease_expires = NULL WHERE order_id = $1 AND lease_owner = $2 \
               AND ($3::bigint IS NULL OR lease_epoch = $3) RETURNING 1) \
             SELECT (SELECT count(*) FROM target), (SELECT count(*) FROM released)",
                |c, s| c.query_opt(s, &[&order_id, &lease.owner, &epoch]),
            )?
            .map_or(0, |r| r.get::<_, i64>(0))
            > 0)
    }

    fn reconciled(&mut self, r: &Reconciliation) -> Result<u64> {
        Ok(u64::try_from(
            self.run(
                "INSERT INTO payidem_reconciliations (order_id, idempotency_key, \
             previous_state, state, reconciled_by, reference) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             RETURNING floor(extract(epoch FROM reconciled_at))::bigint",
                |c, s| {
                    c.query_one(
                        s,
                        &[
                            &r.order_id,
                            &r.idempotency_key,
                            &r.previous_state.as_str(),
                            &r.state.as_str(),
                            &r.by,
                            &r.reference,
                        ],
                    )
                },
            )?
            .get::<_, i64>(0),
        )
        .unwrap_or(0))
    }

    /// A lease this handle took matches on its epoch too; one it did not
    /// take, on the owner alone.
    fn current(&self, row: &Stored, lease: &Lease) -> bool {
        let order_id = &row.record.operation.order_id;
        let taken = self.j.recall(order_id, &lease.owner);
        taken.is_none_or(|t| t.epoch == row.holder.epoch)
    }

    /// One statement: the oldest unsettled operation whose lease is free
    /// (never taken, released, or expired by the database clock), locked
    /// with `FOR UPDATE SKIP LOCKED` so that concurrent instances each take
    /// a different one. Leases of dead processes are taken once they
    /// expire (this does not ask whether their process still exists).
    fn claim_next(
        &mut self,
        lease: &Lease,
        now: u64,
        scope: Option<&JournalScope>,
    ) -> Result<Option<Stored>> {
        let sql = format!(
            "WITH next AS (SELECT order_id FROM payidem_operations \
               WHERE state IN {UNSETTLED} AND (lease_owner IS NULL OR lease_expires <= now()) \
               AND ($3::text IS NULL OR platform IS NULL OR (platform = $3 AND key_id = $4)) \
               ORDER BY created_at, seq LIMIT 1 FOR UPDATE SKIP LOCKED) \
             UPDATE payidem_operations o SET lease_owner = $1, lease_epoch = o.lease_epoch + 1, \
               lease_expires = {} FROM next WHERE o.order_id = next.order_id \
             RETURNING {}",
            expiry_sql(2),
            COLUMNS.replacen("order_id, ", "o.order_id, ", 1)
        );
        let seconds = lease_seconds(lease, now);
        let (platform, key_id) = (scope.map(|s| &s.platform), scope.map(|s| &s.key_id));
        let row = self.run(&sql, |c, s| {
            c.query_opt(s, &[&lease.owner, &seconds, &platform, &key_id])
        })?;
        let stored = self.stored(row)?;
        if let Some(s) = &stored {
            let took = (s.record.operation.order_id.clone(), s.holder.epoch);
            see(self.seen).took = Some(took);
        }
        Ok(stored)
    }

    fn find_reconciliation(&mut self, r: &Reconciliation) -> Result<Option<Reconciliation>> {
        let Some(row) = self.run(
            "SELECT previous_state, floor(extract(epoch FROM reconciled_at))::bigint, \
             idempotency_key FROM payidem_reconciliations WHERE order_id = $1 \
             AND state = $2 AND reconciled_by = $3 AND reference = $4 \
             ORDER BY id DESC LIMIT 1",
            |c, s| c.query_opt(s, &[&r.order_id, &r.state.as_str(), &r.by, &r.reference]),
        )?
        else {
            return Ok(None);
        };
        let previous_state = OperationState::from_name(&row.get::<_, String>(0))
            .ok_or_else(|| self.j.refused("corrupt reconciliation: unknown state"))?;
        Ok(Some(Reconciliation {
            idempotency_key: row.get(2),
            previous_state,
            at: u64::try_from(row.get::<_, i64>(1)).unwrap_or(0),
            ..r.clone()
        }))
    }
}
