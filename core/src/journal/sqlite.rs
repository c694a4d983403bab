//! A journal in one SQLite file (WAL mode), shared by the threads of a
//! process and by several processes.

mod schema;

use std::fmt;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::ffi::ErrorCode as SqliteCode;
use rusqlite::{
    params, Connection, OpenFlags, OptionalExtension, Row, Transaction, TransactionBehavior,
};

pub use schema::SCHEMA_VERSION;

use super::rules;
use super::{
    Journal, Lease, NewOperation, Opened, OperationRecord, OperationState, StoredResponse,
};
use crate::error::{Error, ErrorCode, Result};

/// How a [`SqliteJournal`] waits and behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteJournalOptions {
    /// How long a call waits for another connection's lock on the file
    /// before failing with `journal_error`. Default 5 seconds.
    pub busy_timeout: Duration,
}

impl Default for SqliteJournalOptions {
    fn default() -> SqliteJournalOptions {
        SqliteJournalOptions {
            busy_timeout: Duration::from_secs(5),
        }
    }
}

/// A [`Journal`] in a SQLite file.
///
/// Several `SqliteJournal`s, in one process or many, may use the same file
/// at once; every change is one transaction holding the file's write lock,
/// so exactly one call wins each lease. [`Journal::record_attempt`] on a
/// pending operation is on disk before it returns; see the module
/// [`journal`](super) for why every other write may be lost in a crash
/// without harm.
///
/// [`Journal::release`] by a call that does not hold the lease is a no-op.
pub struct SqliteJournal {
    ctx: Context,
    conn: Mutex<Conn>,
}

impl fmt::Debug for SqliteJournal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteJournal")
            .field("path", &self.ctx.path)
            .finish_non_exhaustive()
    }
}

/// What error messages name: the file and the wait.
pub(super) struct Context {
    path: String,
    busy_timeout: Duration,
}

impl Context {
    /// `journal_error` for a failed SQLite call while doing `action`.
    pub(super) fn db(&self, action: &str, e: rusqlite::Error) -> Error {
        let detail = match e.sqlite_error_code() {
            Some(SqliteCode::DatabaseBusy | SqliteCode::DatabaseLocked) => format!(
                "the file is locked by another connection past the busy timeout of {} ms ({e})",
                self.busy_timeout.as_millis()
            ),
            Some(SqliteCode::NotADatabase) => format!("the file is not a SQLite database ({e})"),
            Some(SqliteCode::DatabaseCorrupt) => format!("the database is corrupt ({e})"),
            Some(SqliteCode::CannotOpen) => {
                format!(
                    "cannot open the file: missing or unwritable directory, or no permission ({e})"
                )
            }
            Some(SqliteCode::ReadOnly | SqliteCode::PermissionDenied) => {
                format!("the file or its directory is not writable ({e})")
            }
            Some(SqliteCode::DiskFull) => format!("the disk is full ({e})"),
            _ => e.to_string(),
        };
        Error::new(
            ErrorCode::Journal,
            format!("journal {}: cannot {action}: {detail}", self.path),
        )
    }

    /// `journal_error` for a file this build refuses to use.
    pub(super) fn refused(&self, why: impl fmt::Display) -> Error {
        Error::new(ErrorCode::Journal, format!("journal {}: {why}", self.path))
    }
}

/// The connection and the `synchronous` level it is set to.
struct Conn {
    db: Connection,
    sync: SyncLevel,
}

/// `PRAGMA synchronous` levels the journal uses. SQLite refuses to change
/// the level inside a transaction, so it is set before each one begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SyncLevel {
    /// WAL mode: commit writes the WAL without fsync.
    Normal,
    /// WAL mode: commit fsyncs the WAL.
    Full,
}

impl Conn {
    fn set_sync(&mut self, sync: SyncLevel, ctx: &Context) -> Result<()> {
        if self.sync != sync {
            let value = match sync {
                SyncLevel::Normal => "NORMAL",
                SyncLevel::Full => "FULL",
            };
            self.db
                .pragma_update(None, "synchronous", value)
                .map_err(|e| ctx.db("set the synchronous level", e))?;
            self.sync = sync;
        }
        Ok(())
    }
}

/// Columns of an [`OperationRecord`] plus its lease, in [`RawRow::read`]'s order.
const COLUMNS: &str =
    "order_id, idempotency_key, method, path, body, body_sha256, status_path, state, attempts, \
     created_at, updated_at, response_status, response_headers, response_body, response_replayed, \
     lease_owner, lease_expires";

/// A row as stored, before its values are checked.
struct RawRow {
    order_id: String,
    idempotency_key: String,
    method: String,
    path: String,
    body: Vec<u8>,
    body_sha256: String,
    status_path: Option<String>,
    state: String,
    attempts: i64,
    created_at: i64,
    updated_at: i64,
    response_status: Option<i64>,
    response_headers: Option<String>,
    response_body: Option<Vec<u8>>,
    response_replayed: Option<i64>,
    lease_owner: Option<String>,
    lease_expires: Option<i64>,
}

/// A checked row: the record and its lease.
struct Stored {
    record: OperationRecord,
    lease_owner: Option<String>,
    lease_expires: Option<u64>,
}

impl RawRow {
    fn read(row: &Row<'_>) -> rusqlite::Result<RawRow> {
        Ok(RawRow {
            order_id: row.get(0)?,
            idempotency_key: row.get(1)?,
            method: row.get(2)?,
            path: row.get(3)?,
            body: row.get(4)?,
            body_sha256: row.get(5)?,
            status_path: row.get(6)?,
            state: row.get(7)?,
            attempts: row.get(8)?,
            created_at: row.get(9)?,
            updated_at: row.get(10)?,
            response_status: row.get(11)?,
            response_headers: row.get(12)?,
            response_body: row.get(13)?,
            response_replayed: row.get(14)?,
            lease_owner: row.get(15)?,
            lease_expires: row.get(16)?,
        })
    }

    fn check(self, ctx: &Context) -> Result<Stored> {
        let order_id = self.order_id;
        let corrupt =
            |what: &str| ctx.refused(format!("corrupt row for order id {order_id:?}: {what}"));
        let state =
            OperationState::from_name(&self.state).ok_or_else(|| corrupt("unknown state"))?;
        let attempts =
            u32::try_from(self.attempts).map_err(|_| corrupt("attempts out of range"))?;
        let created_at =
            u64::try_from(self.created_at).map_err(|_| corrupt("negative created_at"))?;
        let updated_at =
            u64::try_from(self.updated_at).map_err(|_| corrupt("negative updated_at"))?;
        let lease_expires = match self.lease_expires {
            Some(t) => Some(u64::try_from(t).map_err(|_| corrupt("negative lease_expires"))?),
            None => None,
        };
        let response = match self.response_status {
            None => None,
            Some(status) => {
                let status =
                    u16::try_from(status).map_err(|_| corrupt("response status out of range"))?;
                let headers = match self.response_headers {
                    Some(json) => serde_json::from_str::<Vec<(String, String)>>(&json)
                        .map_err(|_| corrupt("response headers are not a JSON array of pairs"))?,
                    None => Vec::new(),
                };
                Some(StoredResponse {
                    status,
                    headers,
                    body: self.response_body.unwrap_or_default(),
                    replayed: self.response_replayed.unwrap_or(0) != 0,
                })
            }
        };
        Ok(Stored {
            record: OperationRecord {
                operation: NewOperation {
                    order_id,
                    idempotency_key: self.idempotency_key,
                    method: self.method,
                    path: self.path,
                    body: self.body,
                    body_sha256: self.body_sha256,
                    status_path: self.status_path,
                },
                state,
                attempts,
                created_at,
                updated_at,
                response,
            },
            lease_owner: self.lease_owner,
            lease_expires,
        })
    }
}

/// A Unix time as SQLite stores it; callers check it is at most
/// [`rules::MAX_TIME`] first.
fn sql_time(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

/// Whether [`SqliteJournal::try_record_attempt`] wrote the attempt.
enum AttemptOutcome {
    Recorded,
    /// The operation was pending but the connection was not set to fsync.
    NeedsFull,
}

impl SqliteJournal {
    /// Opens (creating if missing, readable by its owner only) the journal
    /// file at `path`, migrating an older schema.
    ///
    /// `journal_error`, naming the path, when the file or its directory
    /// cannot be opened for writing, the file is not a SQLite database or is
    /// corrupt, holds a database that is not a payidem journal, comes from a
    /// newer schema (left untouched), or stays locked past the busy timeout.
    pub fn open(path: impl AsRef<Path>, options: SqliteJournalOptions) -> Result<SqliteJournal> {
        let path = path.as_ref();
        let ctx = Context {
            path: path.display().to_string(),
            busy_timeout: options.busy_timeout,
        };
        super::location::create_private_file(path);
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut db =
            Connection::open_with_flags(path, flags).map_err(|e| ctx.db("open the file", e))?;
        db.busy_timeout(options.busy_timeout)
            .map_err(|e| ctx.db("set the busy timeout", e))?;
        // SQLite quietly opens a write-protected file read-only; a journal
        // that cannot write is no journal.
        if db
            .is_readonly(rusqlite::MAIN_DB)
            .map_err(|e| ctx.db("open the file", e))?
        {
            return Err(ctx.refused("the file is not writable (opened read-only)"));
        }
        schema::prepare(&mut db, &ctx)?;
        let mut conn = Conn {
            db,
            sync: SyncLevel::Full,
        };
        conn.set_sync(SyncLevel::Normal, &ctx)?;
        Ok(SqliteJournal {
            ctx,
            conn: Mutex::new(conn),
        })
    }

    /// The path the journal was opened with.
    pub fn path(&self) -> &str {
        &self.ctx.path
    }

    /// The connection. A panic while it was held unwound through the open
    /// transaction's drop, which rolled it back; a transaction still open is
    /// rolled back here all the same.
    fn lock(&self) -> MutexGuard<'_, Conn> {
        let guard = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        if !guard.db.is_autocommit() {
            // Failing leaves the transaction open, and the next BEGIN reports it.
            let _ = guard.db.execute_batch("ROLLBACK");
        }
        guard
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction committed at `sync`;
    /// nothing is written if `f` fails.
    fn write<T>(
        &self,
        action: &str,
        sync: SyncLevel,
        f: impl FnOnce(&Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut guard = self.lock();
        let conn = &mut *guard;
        conn.set_sync(sync, &self.ctx)?;
        let tx = conn
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.ctx.db(action, e))?;
        let out = f(&tx)?;
        tx.commit().map_err(|e| self.ctx.db(action, e))?;
        Ok(out)
    }

    fn load(&self, conn: &Connection, order_id: &str, action: &str) -> Result<Option<Stored>> {
        let raw = conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM operations WHERE order_id = ?1"),
                [order_id],
                RawRow::read,
            )
            .optional()
            .map_err(|e| self.ctx.db(action, e))?;
        raw.map(|r| r.check(&self.ctx)).transpose()
    }

    fn take_lease(
        &self,
        tx: &Transaction<'_>,
        stored: &Stored,
        lease: &Lease,
        now: u64,
        action: &str,
    ) -> Result<()> {
        let op = &stored.record.operation;
        if !rules::lease_free(
            stored.lease_owner.as_deref(),
            stored.lease_expires,
            lease,
            now,
        ) {
            return Err(rules::busy(&op.order_id, &op.idempotency_key));
        }
        tx.execute(
            "UPDATE operations SET lease_owner = ?2, lease_expires = ?3 WHERE order_id = ?1",
            params![
                op.order_id,
                lease.owner,
                sql_time(rules::stored_expiry(lease))
            ],
        )
        .map_err(|e| self.ctx.db(action, e))?;
        Ok(())
    }

    /// The lease holder and key of `order_id`, or `invalid_argument` if it
    /// is not journaled.
    fn holder(
        &self,
        tx: &Transaction<'_>,
        order_id: &str,
        action: &str,
    ) -> Result<(Option<String>, String, String)> {
        tx.query_row(
            "SELECT lease_owner, idempotency_key, state FROM operations WHERE order_id = ?1",
            [order_id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()
        .map_err(|e| self.ctx.db(action, e))?
        .ok_or_else(|| rules::unknown_order(order_id))
    }

    fn try_record_attempt(
        &self,
        order_id: &str,
        lease: &Lease,
        attempts: u32,
        now: u64,
        sync: SyncLevel,
        action: &str,
    ) -> Result<AttemptOutcome> {
        self.write(action, sync, |tx| {
            let (owner, key, state) = self.holder(tx, order_id, action)?;
            if !rules::lease_held(owner.as_deref(), lease) {
                return Err(rules::lease_lost(order_id, &key));
            }
            if state == OperationState::Pending.as_str() && sync != SyncLevel::Full {
                return Ok(AttemptOutcome::NeedsFull);
            }
            tx.execute(
                "UPDATE operations SET state = ?2, attempts = ?3, updated_at = ?4, lease_expires = ?5
                 WHERE order_id = ?1",
                params![
                    order_id,
                    OperationState::InFlight.as_str(),
                    attempts,
                    sql_time(now),
                    sql_time(rules::stored_expiry(lease))
                ],
            )
            .map_err(|e| self.ctx.db(action, e))?;
            Ok(AttemptOutcome::Recorded)
        })
    }
}

impl Journal for SqliteJournal {
    fn open(&self, operation: &NewOperation, lease: &Lease, now: u64) -> Result<Opened> {
        rules::check_now(now)?;
        rules::check_lease(lease)?;
        let action = format!("open order id {:?}", operation.order_id);
        self.write(&action, SyncLevel::Normal, |tx| {
            if let Some(stored) = self.load(tx, &operation.order_id, &action)? {
                rules::same_request(&stored.record.operation, operation)?;
                if stored.record.state.is_settled() {
                    return Ok(Opened::Settled(stored.record));
                }
                self.take_lease(tx, &stored, lease, now, &action)?;
                return Ok(Opened::Resumable(stored.record));
            }
            let other: Option<String> = tx
                .query_row(
                    "SELECT order_id FROM operations WHERE idempotency_key = ?1",
                    [&operation.idempotency_key],
                    |row| row.get(0),
                )
                .optional()
                .map_err(|e| self.ctx.db(&action, e))?;
            if let Some(other) = other {
                return Err(rules::key_taken(operation, &other));
            }
            tx.execute(
                "INSERT INTO operations (order_id, idempotency_key, method, path, body, body_sha256, status_path,
                     state, attempts, created_at, updated_at, lease_owner, lease_expires)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, ?9, ?9, ?10, ?11)",
                params![
                    operation.order_id,
                    operation.idempotency_key,
                    operation.method,
                    operation.path,
                    operation.body,
                    operation.body_sha256,
                    operation.status_path,
                    OperationState::Pending.as_str(),
                    sql_time(now),
                    lease.owner,
                    sql_time(rules::stored_expiry(lease)),
                ],
            )
            .map_err(|e| self.ctx.db(&action, e))?;
            Ok(Opened::Created(OperationRecord {
                operation: operation.clone(),
                state: OperationState::Pending,
                attempts: 0,
                created_at: now,
                updated_at: now,
                response: None,
            }))
        })
    }

    fn claim(&self, order_id: &str, lease: &Lease, now: u64) -> Result<Opened> {
        rules::check_now(now)?;
        rules::check_lease(lease)?;
        let action = format!("claim order id {order_id:?}");
        self.write(&action, SyncLevel::Normal, |tx| {
            let stored = self
                .load(tx, order_id, &action)?
                .ok_or_else(|| rules::unknown_order(order_id))?;
            if stored.record.state.is_settled() {
                return Ok(Opened::Settled(stored.record));
            }
            self.take_lease(tx, &stored, lease, now, &action)?;
            Ok(Opened::Resumable(stored.record))
        })
    }

    fn record_attempt(&self, order_id: &str, lease: &Lease, attempts: u32, now: u64) -> Result<()> {
        rules::check_now(now)?;
        let action = format!("record an attempt of order id {order_id:?}");
        // The first attempt of an operation (state Pending) is the one write
        // that must be on disk before anything is sent: it commits with
        // synchronous=FULL, whose fsync of the WAL also persists the earlier
        // NORMAL insert of `open` (the WAL is written in order). Every other
        // write commits with NORMAL, which in WAL mode does not fsync, and
        // losing one in a crash is safe: the operation is then found Pending
        // or InFlight with its original key and body, resuming re-sends that
        // same key, and the platform answers it from its 48-hour idempotency
        // store. The level has to be chosen before the transaction begins,
        // so it is guessed from a plain read and, if another writer made the
        // guess wrong, the transaction is rolled back and run again at FULL.
        let was_pending = self
            .lock()
            .db
            .query_row(
                "SELECT state FROM operations WHERE order_id = ?1",
                [order_id],
                |row| row.get::<_, String>(0),
            )
            .optional()
            .map_err(|e| self.ctx.db(&action, e))?
            .map_or(true, |state| state == OperationState::Pending.as_str());
        let first = if was_pending {
            SyncLevel::Full
        } else {
            SyncLevel::Normal
        };
        match self.try_record_attempt(order_id, lease, attempts, now, first, &action)? {
            AttemptOutcome::Recorded => Ok(()),
            AttemptOutcome::NeedsFull => {
                match self.try_record_attempt(
                    order_id,
                    lease,
                    attempts,
                    now,
                    SyncLevel::Full,
                    &action,
                )? {
                    AttemptOutcome::Recorded => Ok(()),
                    AttemptOutcome::NeedsFull => Err(Error::new(
                        ErrorCode::Internal,
                        "journal: a durable commit was refused as not durable",
                    )),
                }
            }
        }
    }

    fn finish(
        &self,
        order_id: &str,
        lease: &Lease,
        state: OperationState,
        response: Option<&StoredResponse>,
        now: u64,
    ) -> Result<()> {
        rules::check_now(now)?;
        rules::check_finish_state(state)?;
        let action = format!("finish order id {order_id:?}");
        let headers = match response {
            Some(r) => Some(serde_json::to_string(&r.headers).map_err(|e| {
                Error::new(
                    ErrorCode::Internal,
                    format!("journal: cannot encode response headers: {e}"),
                )
            })?),
            None => None,
        };
        self.write(&action, SyncLevel::Normal, |tx| {
            let (owner, key, _) = self.holder(tx, order_id, &action)?;
            if !rules::lease_held(owner.as_deref(), lease) {
                return Err(rules::lease_lost(order_id, &key));
            }
            tx.execute(
                "UPDATE operations SET state = ?2, updated_at = ?3, response_status = ?4, response_headers = ?5,
                     response_body = ?6, response_replayed = ?7, lease_owner = NULL, lease_expires = NULL
                 WHERE order_id = ?1",
                params![
                    order_id,
                    state.as_str(),
                    sql_time(now),
                    response.map(|r| r.status),
                    headers,
                    response.map(|r| r.body.as_slice()),
                    response.map(|r| r.replayed),
                ],
            )
            .map_err(|e| self.ctx.db(&action, e))?;
            Ok(())
        })
    }

    fn release(&self, order_id: &str, lease: &Lease) -> Result<()> {
        let action = format!("release order id {order_id:?}");
        self.write(&action, SyncLevel::Normal, |tx| {
            self.holder(tx, order_id, &action)?;
            tx.execute(
                "UPDATE operations SET lease_owner = NULL, lease_expires = NULL
                 WHERE order_id = ?1 AND lease_owner = ?2",
                params![order_id, lease.owner],
            )
            .map_err(|e| self.ctx.db(&action, e))?;
            Ok(())
        })
    }

    fn get(&self, order_id: &str) -> Result<Option<OperationRecord>> {
        let action = format!("read order id {order_id:?}");
        let conn = self.lock();
        Ok(self.load(&conn.db, order_id, &action)?.map(|s| s.record))
    }

    fn list(&self, states: &[OperationState]) -> Result<Vec<OperationRecord>> {
        if states.is_empty() {
            return Ok(Vec::new());
        }
        let action = "list operations";
        let names: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
        let marks = vec!["?"; names.len()].join(", ");
        let sql = format!(
            "SELECT {COLUMNS} FROM operations WHERE state IN ({marks}) ORDER BY created_at, rowid"
        );
        let conn = self.lock();
        let mut stmt = conn.db.prepare(&sql).map_err(|e| self.ctx.db(action, e))?;
        let raws = stmt
            .query_map(rusqlite::params_from_iter(names), RawRow::read)
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<RawRow>>>())
            .map_err(|e| self.ctx.db(action, e))?;
        raws.into_iter()
            .map(|r| r.check(&self.ctx).map(|s| s.record))
            .collect()
    }

    fn purge_settled(&self, before: u64) -> Result<usize> {
        let action = "purge settled operations";
        let settled: Vec<String> = OperationState::ALL
            .into_iter()
            .filter(|s| s.is_settled())
            .map(|s| format!("'{}'", s.as_str()))
            .collect();
        // `updated_at` never exceeds MAX_TIME, so a later bound takes every row.
        let (cmp, bound) = if before > rules::MAX_TIME {
            ("<=", rules::MAX_TIME)
        } else {
            ("<", before)
        };
        let sql = format!(
            "DELETE FROM operations WHERE state IN ({}) AND updated_at {cmp} ?1",
            settled.join(", ")
        );
        self.write(action, SyncLevel::Normal, |tx| {
            tx.execute(&sql, [sql_time(bound)])
                .map_err(|e| self.ctx.db(action, e))
        })
    }
}
