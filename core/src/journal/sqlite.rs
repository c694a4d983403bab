//! A journal in one SQLite file (WAL mode), shared by the threads of a
//! process and by several processes.
//!
//! Every write commits with `synchronous=NORMAL` (appended to the WAL, no
//! fsync). The one write that must be on disk before anything is sent, the
//! first attempt of an operation (or of a call resuming one), then waits in
//! the group commit ([`group`]) until an fsync of the WAL covers it;
//! concurrent callers share that fsync, and a caller alone pays exactly one
//! without waiting for anyone.

mod batch;
mod file;
mod group;
mod rows;
mod schema;
mod tx;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::ffi::ErrorCode as SqliteCode;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use batch::Wrote;
use group::GroupCommit;
use rows::{sql_time, RawReconciliation, RawRow, COLUMNS, RECONCILIATION_COLUMNS, SELECT_ONE};
use tx::{Done, SqliteTx, SyncFor};

pub use group::DurabilityStats;
#[doc(hidden)]
pub use group::{SyncHook, SyncPoint};
pub use schema::SCHEMA_VERSION;

use super::engine::{
    self, Guard, Inspection, Intent, Read, Row as Stored, Storage, Unreadable, Work,
};
use super::{rules, JournalKey, JournalScope, Reconciliation, StoredClockOffset};
use crate::error::{Error, ErrorCode, Result};
use crate::operation::OperationState;

/// How a [`SqliteJournal`] waits and behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteJournalOptions {
    /// How long a call waits for another connection's lock on the file
    /// before failing with `journal_error`. Default 5 seconds.
    pub busy_timeout: Duration,
    /// The key of the journal's seal and its rows' integrity MACs. With
    /// it, a new journal is sealed under it, a journal sealed under another
    /// key (or holding rows but no seal) is refused when opened, every row
    /// written carries its MACs and every row read is verified, with
    /// `journal_error` naming its order id (see docs/journal-integrity.md).
    /// Without it (the default; tools that only read) rows are read as
    /// stored, and a sealed journal's operations cannot be changed. A
    /// [`Client`](crate::Client) always opens its journal with a key.
    pub journal_key: Option<JournalKey>,
    /// The platform and key id of the operations this handle creates; an
    /// order id journaled for another scope is refused, and listings show
    /// only this scope's operations. `None` (the default): every scope.
    pub scope: Option<JournalScope>,
    /// Opens the file read-only: nothing is created, migrated or written,
    /// and a write-protected file or directory is accepted (listing,
    /// showing, exporting and checking a copy or a read-only mount). Every
    /// write answers `journal_error`. Default `false`.
    pub read_only: bool,
}

impl Default for SqliteJournalOptions {
    fn default() -> SqliteJournalOptions {
        SqliteJournalOptions {
            busy_timeout: Duration::from_secs(5),
            journal_key: None,
            scope: None,
            read_only: false,
        }
    }
}

/// A [`Journal`](crate::journal::Journal) in a SQLite file.
///
/// Several `SqliteJournal`s, in one process or many, may use the same file
/// at once; every change is one transaction holding the file's write lock,
/// so exactly one call wins each lease.
///
/// Durability: [`Journal::record_attempt`](crate::journal::Journal::record_attempt) returns only once its write, and
/// every write before it, is on disk (fsync'd) whenever the operation was
/// pending or it is the first attempt recorded under that lease (a call
/// resuming an operation). Concurrent calls of one `SqliteJournal` share
/// those fsyncs (group commit; see [`SqliteJournal::durability_stats`]): a
/// call alone costs exactly one fsync and never waits for another call;
/// calls arriving while an fsync runs wait for it to end, then one fsync
/// covers them all. Every other write may be lost in a crash without harm;
/// see the module [`journal`](super).
///
/// A failed fsync fails every `record_attempt` it was to cover with
/// `journal_error` (the operation goes back to the state it had; nothing
/// was sent), and every later one that needs durability: open the journal
/// again.
///
/// Every process using the file must leave `PRAGMA synchronous` at NORMAL or
/// above: a checkpoint with `synchronous=OFF` copies frames out of the WAL
/// without fsync, which breaks SQLite's own durability as well.
///
/// [`Journal::release`](crate::journal::Journal::release) by a call that does not hold the lease is a no-op.
pub struct SqliteJournal {
    ctx: Context,
    conn: Mutex<Connection>,
    group: GroupCommit,
    /// Order id → the lease under which an attempt of it was made durable.
    /// A record is visible to other calls from its NORMAL commit on, before
    /// it is on disk, so a call that finds an operation in flight (its
    /// previous driver died before its fsync, or the fsync failed) makes it
    /// durable once more before its own first attempt.
    durable_leases: Mutex<HashMap<String, String>>,
    /// Writes waiting for the next transaction (see [`SqliteJournal::write`]).
    pending: Mutex<batch::Pending>,
    hook: Option<SyncHook>,
    /// The schema version this handle migrated the file from, if it did.
    migrated_from: Option<u32>,
    /// How rows are authenticated and scoped.
    guard: Guard,
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
        self.db_ref(action, &e)
    }

    /// [`Context::db`] for an error that is reported to several callers.
    pub(super) fn db_ref(&self, action: &str, e: &rusqlite::Error) -> Error {
        let detail = match e.sqlite_error_code() {
            Some(SqliteCode::DatabaseBusy | SqliteCode::DatabaseLocked) => format!(
                "the file is locked by another connection past the busy timeout of {} ms ({e})",
                self.busy_timeout.as_millis()
            ),
            Some(SqliteCode::NotADatabase) => format!("the file is not a SQLite database ({e})"),
            Some(SqliteCode::DatabaseCorrupt) => format!("the database is corrupt ({e})"),
            Some(SqliteCode::CannotOpen) => {
                format!("missing or unwritable directory, or no permission ({e})")
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

/// WAL pages after which a commit of this connection checkpoints.
pub(super) const CHECKPOINT_PAGES: i64 = 4000;

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
        if options.read_only {
            return SqliteJournal::open_read_only(path, ctx, options);
        }
        super::location::check_private_location(path).map_err(|why| ctx.refused(why))?;
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
        let (migrated_from, auth) = schema::prepare(
            &mut db,
            &ctx,
            options.journal_key.as_ref(),
            options.scope.as_ref(),
        )?;
        db.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| ctx.db("set the synchronous level", e))?;
        // A checkpoint costs two or three fsyncs of its own (WAL, database
        // file, the WAL header at the restart that follows); every 4,000
        // pages (a WAL of up to about 8 MB with 2,048-byte pages) instead of
        // SQLite's 1,000 makes them a small share of the group commit's. It
        // only changes when this connection checkpoints, never what a
        // checkpoint syncs.
        db.pragma_update(None, "wal_autocheckpoint", CHECKPOINT_PAGES)
            .map_err(|e| ctx.db("set the checkpoint interval", e))?;
        let wal = file::open_wal(&db, &ctx)?;
        file::preallocate_wal(&db, &ctx)?;
        Ok(SqliteJournal::opened(
            ctx,
            db,
            wal,
            migrated_from,
            auth,
            options.scope,
        ))
    }

    /// The path the journal was opened with.
    pub fn path(&self) -> &str {
        &self.ctx.path
    }

    /// What the group commit has done since the journal was opened: fsyncs
    /// of the WAL and the writes they made durable.
    pub fn durability_stats(&self) -> DurabilityStats {
        self.group.stats()
    }

    /// **Test only**: the journal with `hook` called at every
    /// [`SyncPoint`] of its durable write path (the chaos test `SIGKILL`s
    /// the process there; tests make a barrier fail). Not part of the
    /// stable API.
    #[doc(hidden)]
    pub fn with_sync_hook(mut self, hook: SyncHook) -> SqliteJournal {
        self.hook = Some(hook);
        self
    }

    fn at(&self, point: SyncPoint) {
        if let Some(hook) = &self.hook {
            let _ = hook(point);
        }
    }

    /// The connection. A panic while it was held unwound through the open
    /// transaction's drop, which rolled it back; a transaction still open is
    /// rolled back here all the same.
    fn lock(&self) -> MutexGuard<'_, Connection> {
        let guard = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        if !guard.is_autocommit() {
            // Failing leaves the transaction open, and the next BEGIN reports it.
            let _ = guard.execute_batch("ROLLBACK");
        }
        guard
    }

    fn leases(&self) -> MutexGuard<'_, HashMap<String, String>> {
        // Plain inserts and removals: consistent even after a panic.
        self.durable_leases
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets that `owner` (any owner when `None`) made `order_id`
    /// durable: its call ended.
    fn forget_lease(&self, order_id: &str, owner: Option<&str>) {
        let mut leases = self.leases();
        if owner.is_none_or(|o| leases.get(order_id).map(String::as_str) == Some(o)) {
            leases.remove(order_id);
        }
    }

    /// After the group commit's answer for the commit `seq` that recorded
    /// an attempt of `done`'s operation: on disk, it is the lease's durable
    /// attempt; if it cannot be, puts the operation back where it stood
    /// (`before`; nothing was sent) and fails.
    fn made_durable(
        &self,
        synced: std::result::Result<(), String>,
        seq: u64,
        done: &Done,
        what: &str,
    ) -> Result<()> {
        let (order_id, lease, attempts) = done.held.as_ref().expect("a held write");
        match synced {
            Ok(()) => {
                self.leases().insert(order_id.clone(), lease.owner.clone());
                self.at(SyncPoint::Durable { seq });
                Ok(())
            }
            Err(why) => {
                let before = done.before.unwrap_or((OperationState::Pending, 0));
                // Best effort: if this fails too, the operation stays in
                // flight, which is safe (resuming it makes it durable first
                // and keeps its key).
                let _ = engine::undo_attempt(self, order_id, lease, *attempts, before);
                Err(self.ctx.refused(format!(
                    "cannot make the {what} of order id {order_id:?} durable: {why}"
                )))
            }
        }
    }

    /// Every row of the `WHERE` clause `filter` over `params`, oldest first.
    fn select(&self, filter: &str, params: &[&dyn rusqlite::ToSql]) -> Result<Vec<Read>> {
        let action = "list operations";
        let sql = format!("SELECT {COLUMNS} FROM operations {filter} ORDER BY created_at, rowid");
        let conn = self.lock();
        let raws = conn
            .prepare(&sql)
            .and_then(|mut stmt| {
                stmt.query_map(params, RawRow::read)?
                    .collect::<rusqlite::Result<Vec<RawRow>>>()
            })
            .map_err(|e| self.ctx.db(action, e))?;
        Ok(raws
            .into_iter()
            .map(|raw| {
                let order_id = raw.order_id.clone();
                raw.check(&self.ctx)
                    .map_err(|error| Unreadable { order_id, error })
            })
            .collect())
    }

    fn reconciliation_rows(
        &self,
        conn: &Connection,
        order_id: Option<&str>,
    ) -> Result<Vec<RawReconciliation>> {
        let sql = format!(
            "SELECT {RECONCILIATION_COLUMNS} FROM reconciliations
             WHERE ?1 IS NULL OR order_id = ?1 ORDER BY id"
        );
        conn.prepare_cached(&sql)
            .and_then(|mut stmt| {
                stmt.query_map([order_id], RawReconciliation::read)?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| self.ctx.db("read reconciliations", e))
    }
}

impl Storage for SqliteJournal {
    const LATEST: u64 = rules::MAX_TIME;

    fn guard(&self) -> &Guard {
        &self.guard
    }

    /// Committed with NORMAL like every write. The first attempt of an
    /// operation (`open_to_send`, or `record_attempt` of a pending one),
    /// the first attempt recorded under a lease that has not made the
    /// operation durable yet (it was found in flight or unknown: its
    /// previous driver may have died, or its fsync failed, before it
    /// reached the disk) and a reconciliation then wait in the group
    /// commit until they are on disk. Retries within a call need nothing.
    fn transact<T: Send + 'static>(
        &self,
        intent: Intent<'_>,
        action: &str,
        mut work: Work<T>,
    ) -> Result<T> {
        let sync = SyncFor::of(&intent);
        let wrote = self.write(action, sync.is_some(), move |j, tx, action| {
            let mut t = SqliteTx {
                j,
                tx,
                action,
                done: Done::default(),
            };
            let value = (work.body)(&j.guard, &mut t)?;
            let durable = sync.is_some_and(|s| s.needed(j, &t.done));
            Ok(((value, t.done), durable))
        })?;
        let Wrote {
            value: (value, done),
            seq,
            synced,
        } = wrote;
        match (synced, &intent) {
            (Some(synced), Intent::Reconcile { order_id }) => synced.map_err(|why| {
                self.ctx.refused(format!(
                    "the reconciliation of order id {order_id:?} was written but may not \
                     be durable: {why}"
                ))
            })?,
            (Some(synced), Intent::Open { .. }) => {
                self.made_durable(synced, seq, &done, "record")?;
            }
            (Some(synced), _) => self.made_durable(synced, seq, &done, "attempt")?,
            (None, _) => {}
        }
        if let Some(order_id) = &done.cleared {
            self.forget_lease(order_id, None);
        }
        if let Some((order_id, owner)) = &done.released {
            self.forget_lease(order_id, Some(owner));
        }
        Ok(value)
    }

    fn row(&self, order_id: &str) -> Result<Option<Stored>> {
        let action = format!("read order id {order_id:?}");
        let conn = self.lock();
        let raw = conn
            .prepare_cached(SELECT_ONE)
            .and_then(|mut stmt| stmt.query_row([order_id], RawRow::read).optional())
            .map_err(|e| self.ctx.db(&action, e))?;
        raw.map(|r| r.check(&self.ctx)).transpose()
    }

    fn rows(&self, states: Option<&[OperationState]>) -> Result<Vec<Read>> {
        let Some(states) = states else {
            return self.select("", &[]);
        };
        let names: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
        let marks = vec!["?"; names.len()].join(", ");
        let params: Vec<&dyn rusqlite::ToSql> = names.iter().map(|n| n as _).collect();
        // Unsettled states only: read through the index over those rows.
        let unsettled = if states.iter().all(|s| !s.is_settled()) {
            format!("{} AND ", schema::UNSETTLED)
        } else {
            String::new()
        };
        self.select(&format!("WHERE {unsettled}state IN ({marks})"), &params)
    }

    fn purge(&self, before: u64, horizon: Option<&(u64, String)>) -> Result<usize> {
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
        let horizon = horizon.cloned();
        let purged = self.write(action, false, move |j, tx, _| {
            if let Some((horizon, mac)) = &horizon {
                tx.execute(
                    "UPDATE seal SET purged_before = ?1, purge_mac = ?2 WHERE id = 1",
                    params![sql_time(*horizon), mac],
                )
                .map_err(|e| j.ctx.db(action, e))?;
            }
            tx.execute(&sql, [sql_time(bound)])
                .map(|purged| (purged, false))
                .map_err(|e| j.ctx.db(action, e))
        })?;
        Ok(purged.value)
    }

    fn reconciliations(&self, order_id: Option<&str>) -> Result<Vec<Reconciliation>> {
        let raws = self.reconciliation_rows(&self.lock(), order_id)?;
        raws.into_iter().map(|r| r.check(&self.ctx)).collect()
    }

    fn inspect(&self) -> Result<Inspection> {
        let action = "check the journal";
        let rows = self.select("", &[])?;
        let conn = self.lock();
        let integrity = conn
            .prepare("PRAGMA integrity_check")
            .and_then(|mut stmt| {
                stmt.query_map([], |row| row.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()
            })
            .map_err(|e| self.ctx.db(action, e))?;
        let problems = if integrity == ["ok"] {
            Vec::new()
        } else {
            integrity
                .into_iter()
                .map(|p| format!("integrity_check: {p}"))
                .collect()
        };
        let schema_version = schema::version(&conn).map_err(|e| self.ctx.db(action, e))?;
        let seal = schema::seal_record(&conn).map_err(|e| self.ctx.db(action, e))?;
        let reconciliations = self.reconciliation_rows(&conn, None)?;
        Ok(Inspection {
            backend: "sqlite",
            schema_version: Some(schema_version),
            library_schema_version: Some(SCHEMA_VERSION),
            migrated_from: self.migrated_from,
            problems,
            later_problems: super::location::exposure_problem(Path::new(&self.ctx.path))
                .into_iter()
                .collect(),
            sealed: Some(seal.is_some()),
            rows,
            reconciliations: reconciliations
                .into_iter()
                .map(|r| r.check(&self.ctx))
                .collect(),
        })
    }

    fn save_clock_offset(&self, offset: &StoredClockOffset) -> Result<()> {
        let action = "store the clock offset";
        let offset = offset.clone();
        self.write(action, false, move |j, tx, _| {
            tx.prepare_cached(
                "INSERT INTO clock_offsets (platform, offset_secs, measured_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (platform) DO UPDATE
                 SET offset_secs = excluded.offset_secs, measured_at = excluded.measured_at",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    offset.platform,
                    offset.offset_secs,
                    sql_time(offset.measured_at.min(rules::MAX_TIME))
                ])
            })
            .map(|_| ((), false))
            .map_err(|e| j.ctx.db(action, e))
        })?;
        Ok(())
    }

    /// The stored clock offsets of `platform` (every one when `None`).
    fn clock_offsets(&self, platform: Option<&str>) -> Result<Vec<StoredClockOffset>> {
        let action = "read the clock offsets";
        let conn = self.lock();
        conn.prepare_cached(
            "SELECT platform, offset_secs, measured_at FROM clock_offsets
             WHERE ?1 IS NULL OR platform = ?1 ORDER BY platform",
        )
        .and_then(|mut stmt| {
            stmt.query_map([platform], |row| {
                Ok(StoredClockOffset {
                    platform: row.get(0)?,
                    offset_secs: row.get(1)?,
                    measured_at: u64::try_from(row.get::<_, i64>(2)?).unwrap_or(0),
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(|e| self.ctx.db(action, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal with the default options in a new temporary directory
    /// (kept for as long as the directory is).
    pub(super) fn temp_journal() -> (tempfile::TempDir, SqliteJournal) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.sqlite3");
        let journal = SqliteJournal::open(path, SqliteJournalOptions::default()).unwrap();
        (dir, journal)
    }
}
