//! The journal file's schema and its migrations.
//!
//! A file is accepted when it is empty (a new file, version 0) or carries our
//! `meta` table with a `schema_version` we know. A database holding anything
//! else, even tables with unrelated names, is not a payidem journal and is
//! refused without being changed: writing our tables into another
//! application's database (and switching it to WAL) would be worse than
//! failing. A file from a newer schema is refused without being changed.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use super::Context;
use crate::error::Result;
use crate::journal::JournalKey;
use crate::operation::FrozenOperation;

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = 3;

/// `MIGRATIONS[v]` takes a file from version `v` to `v + 1`; each step runs
/// inside the transaction that records the new version.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [
    // 0 → 1: the first schema.
    "CREATE TABLE meta (
        key TEXT PRIMARY KEY NOT NULL,
        value INTEGER NOT NULL
    );
    CREATE TABLE operations (
        order_id TEXT PRIMARY KEY NOT NULL,
        idempotency_key TEXT NOT NULL UNIQUE,
        method TEXT NOT NULL,
        path TEXT NOT NULL,
        body BLOB NOT NULL,
        body_sha256 TEXT NOT NULL,
        status_path TEXT,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        lease_owner TEXT,
        lease_expires INTEGER,
        response_status INTEGER,
        response_headers TEXT,
        response_body BLOB,
        response_replayed INTEGER
    );
    CREATE INDEX operations_by_state ON operations (state, created_at);
    CREATE INDEX operations_by_state_updated ON operations (state, updated_at);",
    // 1 → 2: reconciliations, a person's closing of an unsettled operation
    // (who, when, why, from which state). Kept when operations are purged.
    "CREATE TABLE reconciliations (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        order_id TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        previous_state TEXT NOT NULL,
        state TEXT NOT NULL,
        reconciled_by TEXT NOT NULL,
        reconciled_at INTEGER NOT NULL,
        reference TEXT NOT NULL
    );
    CREATE INDEX reconciliations_by_order ON reconciliations (order_id, id);",
    // 2 → 3: each operation's integrity MAC (NULL in rows written before,
    // until the first keyed open seals them; see `seal`), and the clock
    // offset learnt from each platform. The second state index goes: every
    // state change wrote a page of it, and purging finds its rows through
    // the first (state, then the update time checked row by row).
    "ALTER TABLE operations ADD COLUMN row_mac TEXT;
    CREATE TABLE clock_offsets (
        platform TEXT PRIMARY KEY NOT NULL,
        offset_secs INTEGER NOT NULL,
        measured_at INTEGER NOT NULL
    );
    DROP INDEX IF EXISTS operations_by_state_updated;",
];

/// The `meta` key recording that a handle with the journal key sealed the
/// rows that had no MAC (its value: how many it sealed). From then on a
/// row without a MAC is refused.
const SEALED: &str = "rows_sealed";

/// What a file holds.
enum Found {
    /// Nothing: a new or empty file.
    Empty,
    /// A journal at this schema version.
    Journal(u32),
    /// Something that is not a journal.
    Foreign(&'static str),
}

fn inspect(conn: &Connection) -> rusqlite::Result<Found> {
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")?;
    let names = stmt
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    if names.is_empty() {
        return Ok(Found::Empty);
    }
    if !names.iter().any(|n| n == "meta") {
        return Ok(Found::Foreign(
            "it holds other tables and no payidem schema version",
        ));
    }
    let version: Option<i64> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |row| row.get(0),
        )
        .optional()?;
    Ok(match version.and_then(|v| u32::try_from(v).ok()) {
        Some(v) => Found::Journal(v),
        None => Found::Foreign("its meta table holds no valid schema_version"),
    })
}

fn refusal(found: &Found) -> Option<String> {
    match found {
        Found::Empty => None,
        Found::Journal(v) if *v <= SCHEMA_VERSION => None,
        Found::Journal(v) => Some(format!(
            "written by a newer payidem (schema version {v}; this build knows up to {SCHEMA_VERSION}); left untouched"
        )),
        Found::Foreign(why) => Some(format!("not a payidem journal: {why}; left untouched")),
    }
}

/// Brings the file at `conn` to [`SCHEMA_VERSION`] in WAL mode, or refuses it
/// unchanged. Returns the version it migrated from, if it migrated a journal
/// (a new, empty file is not counted).
pub(super) fn prepare(conn: &mut Connection, ctx: &Context) -> Result<Option<u32>> {
    // Read-only look first: a newer or foreign file is refused before the
    // journal-mode switch below writes to its header.
    let found = inspect(conn).map_err(|e| ctx.db("read the schema", e))?;
    if let Some(why) = refusal(&found) {
        return Err(ctx.refused(why));
    }
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(|e| ctx.db("switch to WAL mode", e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(ctx.refused(format!("cannot use WAL mode (journal mode stays {mode:?})")));
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| ctx.db("lock for migration", e))?;
    // Looked at again under the write lock: another process may have
    // migrated the file in between.
    let found = inspect(&tx).map_err(|e| ctx.db("read the schema", e))?;
    if let Some(why) = refusal(&found) {
        return Err(ctx.refused(why));
    }
    let from = match found {
        Found::Journal(v) => v,
        _ => 0,
    };
    for version in from..SCHEMA_VERSION {
        tx.execute_batch(MIGRATIONS[version as usize])
            .map_err(|e| ctx.db(&format!("migrate schema {version} to {}", version + 1), e))?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [version + 1],
        )
        .map_err(|e| ctx.db("record the schema version", e))?;
    }
    tx.commit().map_err(|e| ctx.db("commit the migration", e))?;
    Ok(match found {
        Found::Journal(v) if v < SCHEMA_VERSION => Some(v),
        _ => None,
    })
}

/// Whether the file was sealed (see [`seal`]).
pub(super) fn sealed(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM meta WHERE key = ?1)",
        [SEALED],
        |row| row.get(0),
    )
}

/// [`SqliteJournal::seal`](super::SqliteJournal::seal): the first call
/// (no `rows_sealed` in `meta`) writes the MAC of every row that
/// has none (rows written before the schema had MACs, or by handles
/// without the key before any keyed handle opened the file) and records
/// `rows_sealed`, in one transaction. Rows whose body does not match its
/// SHA-256 are left unsealed (and so refused). If some row already
/// carries a MAC although `rows_sealed` is missing, the marker was
/// removed: nothing is sealed, the marker is recorded again, and rows
/// without a MAC stay refused. Returns how many rows it sealed.
pub(super) fn seal(conn: &mut Connection, ctx: &Context, key: &JournalKey) -> Result<usize> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| ctx.db("lock to seal the rows", e))?;
    let sealed: Option<i64> = tx
        .query_row("SELECT value FROM meta WHERE key = ?1", [SEALED], |row| {
            row.get(0)
        })
        .optional()
        .map_err(|e| ctx.db("read the seal", e))?;
    if sealed.is_some() {
        return Ok(0);
    }
    let any_mac: bool = tx
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM operations WHERE row_mac IS NOT NULL)",
            [],
            |row| row.get(0),
        )
        .map_err(|e| ctx.db("read the seal", e))?;
    let mut count = 0usize;
    if !any_mac {
        let rows = tx
            .prepare(
                "SELECT order_id, idempotency_key, method, path, body, body_sha256, status_path
                 FROM operations WHERE row_mac IS NULL",
            )
            .and_then(|mut stmt| {
                stmt.query_map([], |row| {
                    Ok(FrozenOperation {
                        order_id: row.get(0)?,
                        idempotency_key: row.get(1)?,
                        method: row.get(2)?,
                        path: row.get(3)?,
                        body: row.get(4)?,
                        body_sha256: row.get(5)?,
                        status_path: row.get(6)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<FrozenOperation>>>()
            })
            .map_err(|e| ctx.db("read the rows to seal", e))?;
        for op in rows {
            if crate::protocol::body_sha256_hex(&op.body) != op.body_sha256 {
                continue;
            }
            tx.execute(
                "UPDATE operations SET row_mac = ?2 WHERE order_id = ?1",
                rusqlite::params![op.order_id, key.row_mac(&op)],
            )
            .map_err(|e| ctx.db("seal the rows", e))?;
            count += 1;
        }
    }
    tx.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)",
        rusqlite::params![SEALED, i64::try_from(count).unwrap_or(i64::MAX)],
    )
    .map_err(|e| ctx.db("record the seal", e))?;
    tx.commit().map_err(|e| ctx.db("commit the seal", e))?;
    Ok(count)
}

/// The schema version the file at `conn` carries (0 when it has none).
pub(super) fn version(conn: &Connection) -> rusqlite::Result<u32> {
    Ok(match inspect(conn)? {
        Found::Journal(v) => v,
        _ => 0,
    })
}
