//! The journal file's schema and its migrations.
//!
//! A file is accepted when it is empty (a new file, version 0) or carries our
//! `meta` table with a `schema_version` we know. A database holding anything
//! else, even tables with unrelated names, is not a payidem journal and is
//! refused without being changed: writing our tables into another
//! application's database (and switching it to WAL) would be worse than
//! failing. A file from a newer schema is refused without being changed.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use super::rows::{RawRow, COLUMNS_V3};
use super::Context;
use crate::error::Result;
use crate::journal::{JournalKey, JournalScope, RowAuth, SealRecord};

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = 5;

/// The page size of a new journal file. Every page a transaction changes
/// is one frame of the WAL, copied, checksummed, written and fsync'd whole:
/// a row (a few hundred bytes) and the index entries of an operation fill a
/// fraction of SQLite's default 4,096 bytes, and 2,048-byte pages cut the
/// WAL bytes per operation (one caller) from about 32 to 18 KiB. 1,024 bytes is too
/// small: a row with its response no longer fits one page. A file keeps
/// the page size it was created with.
const NEW_FILE_PAGE_SIZE: u32 = 2048;

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
    // 3 → 4: the seal (the journal's id and the MAC that ties it to its
    // key, with the purge horizon), and each operation's platform, key id
    // and state MAC. Rows of schema 3 are re-authenticated by `upgrade_rows`
    // in the same transaction (with the key) or the migration is refused.
    "CREATE TABLE seal (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        journal_id TEXT NOT NULL,
        seal TEXT NOT NULL,
        purged_before INTEGER NOT NULL,
        purge_mac TEXT NOT NULL
    );
    ALTER TABLE operations ADD COLUMN platform TEXT;
    ALTER TABLE operations ADD COLUMN key_id TEXT;
    ALTER TABLE operations ADD COLUMN state_mac TEXT;
    DELETE FROM meta WHERE key = 'rows_sealed';",
    // 4 → 5: fewer index pages per write. The index over (state,
    // created_at) had an entry for every row, so every open added one and
    // every finish moved one (its state changed). It served the listings
    // of unsettled operations (the takeover's claim) and purges, which
    // visited every settled row through it to check its update time, no
    // cheaper than reading the table. One over the unsettled rows only
    // serves those listings (its condition is `UNSETTLED`, which their
    // query repeats word for word so that SQLite may use it); a finish
    // only removes the row's entry and purges read the table. The
    // condition is written with `OR`: SQLite evaluates an `IN` list of
    // constants through a temporary B-tree built at every statement that
    // writes a row, which cost more than the index entries saved.
    "DROP INDEX IF EXISTS operations_by_state;
    CREATE INDEX operations_unsettled ON operations (created_at)
        WHERE (state = 'pending' OR state = 'in_flight' OR state = 'unknown');",
];

/// The condition of the index over the unsettled rows, as a query that
/// may use it must spell it (SQLite uses a partial index only for a query
/// whose `WHERE` holds its condition term for term).
pub(super) const UNSETTLED: &str =
    "(state = 'pending' OR state = 'in_flight' OR state = 'unknown')";

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
///
/// Then decides how the handle authenticates rows ([`RowAuth::decide`]),
/// in the same transaction: a new journal opened with `key` is sealed; a
/// schema 3 journal is upgraded only with `key`, every row of it carrying
/// a valid schema 3 MAC (re-authenticated for `scope`), and refused
/// unchanged otherwise.
pub(super) fn prepare(
    conn: &mut Connection,
    ctx: &Context,
    key: Option<&JournalKey>,
    scope: Option<&JournalScope>,
) -> Result<(Option<u32>, RowAuth)> {
    // Read-only look first: a newer or foreign file is refused before the
    // journal-mode switch below writes to its header.
    let found = inspect(conn).map_err(|e| ctx.db("read the schema", e))?;
    if let Some(why) = refusal(&found) {
        return Err(ctx.refused(why));
    }
    if matches!(found, Found::Empty) {
        // Only before the first write; SQLite ignores it on a file with pages.
        conn.pragma_update(None, "page_size", NEW_FILE_PAGE_SIZE)
            .map_err(|e| ctx.db("set the page size", e))?;
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
        if version == 3 {
            check_upgradable(&tx, ctx, key)?;
        }
        tx.execute_batch(MIGRATIONS[version as usize])
            .map_err(|e| ctx.db(&format!("migrate schema {version} to {}", version + 1), e))?;
        if version == 3 {
            if let Some(key) = key {
                upgrade_rows(&tx, ctx, key, scope)?;
            }
        }
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [version + 1],
        )
        .map_err(|e| ctx.db("record the schema version", e))?;
    }
    let auth = decide(&tx, ctx, key)?;
    tx.commit().map_err(|e| ctx.db("commit the migration", e))?;
    let migrated = match found {
        Found::Journal(v) if v < SCHEMA_VERSION => Some(v),
        _ => None,
    };
    Ok((migrated, auth))
}

/// The seal record, if the journal has one.
pub(super) fn seal_record(conn: &Connection) -> rusqlite::Result<Option<SealRecord>> {
    conn.query_row(
        "SELECT journal_id, seal, purged_before, purge_mac FROM seal WHERE id = 1",
        [],
        |row| {
            Ok(SealRecord {
                journal_id: row.get(0)?,
                seal: row.get(1)?,
                purged_before: u64::try_from(row.get::<_, i64>(2)?).unwrap_or(u64::MAX),
                purge_mac: row.get(3)?,
            })
        },
    )
    .optional()
}

/// Whether the journal holds any operation or reconciliation.
fn holds_rows(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM operations) OR EXISTS (SELECT 1 FROM reconciliations)",
        [],
        |row| row.get(0),
    )
}

/// [`RowAuth::decide`] on the journal at `conn` (at [`SCHEMA_VERSION`]),
/// writing the seal of a new keyed journal.
pub(super) fn decide(
    conn: &Connection,
    ctx: &Context,
    key: Option<&JournalKey>,
) -> Result<RowAuth> {
    let found = seal_record(conn).map_err(|e| ctx.db("read the seal", e))?;
    let rows = holds_rows(conn).map_err(|e| ctx.db("read the seal", e))?;
    let decided = RowAuth::decide(key, found, rows).map_err(|why| ctx.refused(why))?;
    if let Some(seal) = decided.create {
        conn.execute(
            "INSERT INTO seal (id, journal_id, seal, purged_before, purge_mac) VALUES (1, ?1, ?2, ?3, ?4)",
            rusqlite::params![seal.journal_id, seal.seal, 0i64, seal.purge_mac],
        )
        .map_err(|e| ctx.db("write the seal", e))?;
    }
    Ok(decided.auth)
}

/// Refuses to upgrade a schema 3 journal whose rows carry MACs without the
/// key (their MACs could not be written anew), and, with the key, one whose
/// rows do not all carry a valid schema 3 MAC.
fn check_upgradable(tx: &Connection, ctx: &Context, key: Option<&JournalKey>) -> Result<()> {
    let rows = holds_rows(tx).map_err(|e| ctx.db("read the rows to upgrade", e))?;
    if !rows {
        return Ok(());
    }
    let Some(key) = key else {
        let any_mac: bool = tx
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM operations WHERE row_mac IS NOT NULL)",
                [],
                |row| row.get(0),
            )
            .map_err(|e| ctx.db("read the rows to upgrade", e))?;
        if any_mac {
            return Err(ctx.refused(
                "schema 3 journals are upgraded by a handle with the journal key (it \
                 authenticates every row anew): open it once with a client, or give the API \
                 secret or the journal key; left untouched",
            ));
        }
        return Ok(());
    };
    let raws = rows_v3(tx, ctx)?;
    let mut bad = Vec::new();
    for raw in raws {
        let mac = raw.row_mac.clone();
        match raw.check(ctx) {
            Ok(stored) if key.legacy_row_mac_matches(&stored.record.operation, mac.as_deref()) => {}
            Ok(stored) => bad.push(format!("{:?}", stored.record.operation.order_id)),
            Err(e) => return Err(e),
        }
    }
    if bad.is_empty() {
        return Ok(());
    }
    Err(ctx.refused(format!(
        "cannot upgrade to schema {SCHEMA_VERSION}: the rows of order ids {} carry no valid \
         integrity MAC (injected or altered, or written under another key), so they cannot be \
         authenticated anew; left untouched. Check them with the previous payidem version \
         (`payidem journal check`) and reconcile or remove them",
        bad.join(", ")
    )))
}

/// Every operation row of a schema 3 journal, as stored.
fn rows_v3(tx: &Connection, ctx: &Context) -> Result<Vec<RawRow>> {
    tx.prepare(&format!("SELECT {} FROM operations", COLUMNS_V3))
        .and_then(|mut stmt| {
            stmt.query_map([], RawRow::read_v3)?
                .collect::<rusqlite::Result<Vec<RawRow>>>()
        })
        .map_err(|e| ctx.db("read the rows to upgrade", e))
}

/// Writes both schema 4 MACs of every row of an upgraded schema 3 journal
/// (each checked by [`check_upgradable`]), made for `scope`.
fn upgrade_rows(
    tx: &Connection,
    ctx: &Context,
    key: &JournalKey,
    scope: Option<&JournalScope>,
) -> Result<()> {
    let found = seal_record(tx).map_err(|e| ctx.db("read the seal", e))?;
    if found.is_some() {
        return Ok(());
    }
    let seal = SealRecord::new(key);
    tx.execute(
        "INSERT INTO seal (id, journal_id, seal, purged_before, purge_mac) VALUES (1, ?1, ?2, 0, ?3)",
        rusqlite::params![seal.journal_id, seal.seal, seal.purge_mac],
    )
    .map_err(|e| ctx.db("write the seal", e))?;
    let auth = RowAuth::Keyed {
        key: key.clone(),
        journal_id: seal.journal_id,
        purged_before: 0,
    };
    let raws = rows_v3(tx, ctx)?;
    for raw in raws {
        let stored = raw.check(ctx)?;
        let (row_mac, state_mac) = auth.macs(scope, &stored.record)?;
        tx.execute(
            "UPDATE operations SET platform = ?2, key_id = ?3, row_mac = ?4, state_mac = ?5
             WHERE order_id = ?1",
            rusqlite::params![
                stored.record.operation.order_id,
                scope.map(|s| &s.platform),
                scope.map(|s| &s.key_id),
                row_mac,
                state_mac
            ],
        )
        .map_err(|e| ctx.db("upgrade the rows", e))?;
    }
    Ok(())
}

/// Refuses, for a handle that only reads, a file that is not a journal of
/// [`SCHEMA_VERSION`] (nothing is migrated).
pub(super) fn check_readable(conn: &Connection, ctx: &Context) -> Result<()> {
    let found = inspect(conn).map_err(|e| ctx.db("read the schema", e))?;
    if let Some(why) = refusal(&found) {
        return Err(ctx.refused(why));
    }
    match found {
        Found::Journal(SCHEMA_VERSION) => Ok(()),
        Found::Journal(v) => Err(ctx.refused(format!(
            "schema version {v}, and this build reads {SCHEMA_VERSION}: a read-only handle \
             cannot upgrade it (open it once with a client of this version)"
        ))),
        _ => Err(ctx.refused("an empty file: not a payidem journal")),
    }
}

/// The schema version the file at `conn` carries (0 when it has none).
pub(super) fn version(conn: &Connection) -> rusqlite::Result<u32> {
    Ok(match inspect(conn)? {
        Found::Journal(v) => v,
        _ => 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operation::OperationState;

    /// A connection holding an empty journal of [`SCHEMA_VERSION`].
    fn migrated() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        for step in MIGRATIONS {
            conn.execute_batch(step).unwrap();
        }
        conn
    }

    /// Column `column` of each row `{explain} {sql}` returns (`EXPLAIN`:
    /// 1 is the instruction's name; `EXPLAIN QUERY PLAN`: 3 is the step).
    fn explain(
        conn: &Connection,
        explain: &str,
        column: usize,
        sql: &str,
        params: &[&dyn rusqlite::ToSql],
    ) -> Vec<String> {
        let mut stmt = conn.prepare(&format!("{explain} {sql}")).unwrap();
        let rows = stmt
            .query_map(params, |row| row.get::<_, String>(column))
            .unwrap()
            .collect::<rusqlite::Result<Vec<String>>>()
            .unwrap();
        rows
    }

    /// The plan SQLite makes for `sql`, one line per step.
    fn plan(conn: &Connection, sql: &str, params: &[&dyn rusqlite::ToSql]) -> String {
        explain(conn, "EXPLAIN QUERY PLAN", 3, sql, params).join("\n")
    }

    #[test]
    fn unsettled_names_exactly_the_states_not_settled() {
        let names: Vec<String> = OperationState::ALL
            .into_iter()
            .filter(|s| !s.is_settled())
            .map(|s| format!("state = '{}'", s.as_str()))
            .collect();
        assert_eq!(UNSETTLED, format!("({})", names.join(" OR ")));
        assert!(MIGRATIONS[4].contains(&format!("WHERE {UNSETTLED};")));
    }

    #[test]
    fn listing_unsettled_operations_reads_their_index_in_order() {
        let conn = migrated();
        let sql = format!(
            "SELECT order_id FROM operations WHERE {UNSETTLED} AND state IN (?1, ?2)
             ORDER BY created_at, rowid"
        );
        let plan = plan(&conn, &sql, &[&"in_flight", &"unknown"]);
        assert!(plan.contains("USING INDEX operations_unsettled"), "{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
    }

    /// The virtual machine's instructions for `sql`, by name.
    fn opcodes(conn: &Connection, sql: &str, params: &[&dyn rusqlite::ToSql]) -> Vec<String> {
        explain(conn, "EXPLAIN", 1, sql, params)
    }

    #[test]
    fn writing_a_row_builds_no_temporary_b_tree() {
        let conn = migrated();
        let insert = "INSERT INTO operations (order_id, idempotency_key, method, path, body,
                 body_sha256, state, attempts, created_at, updated_at)
             VALUES (?1, ?2, 'POST', '/p', x'', 'h', ?3, 0, 1, 1) ON CONFLICT DO NOTHING";
        let finish = "UPDATE operations SET state = ?2, updated_at = ?3, lease_owner = NULL
             WHERE order_id = ?1";
        for (sql, params) in [
            (insert, [&"o" as &dyn rusqlite::ToSql, &"k", &"pending"]),
            (finish, [&"o" as &dyn rusqlite::ToSql, &"succeeded", &2]),
        ] {
            let ops = opcodes(&conn, sql, &params);
            assert!(ops.iter().any(|op| op == "IdxInsert"), "{sql}: {ops:?}");
            assert!(
                !ops.iter().any(|op| op == "OpenEphemeral"),
                "{sql}: {ops:?}"
            );
        }
    }

    #[test]
    fn the_writes_of_a_call_find_their_row_through_a_unique_index() {
        let conn = migrated();
        for sql in [
            "UPDATE operations SET state = 'succeeded' WHERE order_id = ?1",
            "SELECT 1 FROM operations WHERE order_id = ?1",
        ] {
            let plan = plan(&conn, sql, &[&"o"]);
            assert!(plan.contains("sqlite_autoindex_operations_1"), "{plan}");
        }
        let plan = plan(
            &conn,
            "SELECT order_id FROM operations WHERE idempotency_key = ?1",
            &[&"k"],
        );
        assert!(plan.contains("sqlite_autoindex_operations_2"), "{plan}");
    }
}
