//! The journal's tables in PostgreSQL and their migrations.
//!
//! The version lives in `payidem_schema` (one row). Opening a journal takes
//! `pg_advisory_xact_lock` so that instances starting together migrate
//! once, then runs every missing step in that same transaction. A database
//! with a newer version is refused without being changed; one holding a
//! `payidem_operations` table but no version is refused as well (it is not
//! ours to change).

use super::{Fail, PostgresJournal};
use crate::error::Result;
use crate::journal::JournalKey;
use crate::operation::FrozenOperation;

/// The schema version this build writes and reads.
pub const POSTGRES_SCHEMA_VERSION: u32 = 2;

/// The advisory lock key of migrations ("payidem" in ASCII).
const MIGRATION_LOCK: i64 = 0x0070_6179_6964_656d;

/// `MIGRATIONS[v]` takes the database from version `v` to `v + 1`.
const MIGRATIONS: [&str; POSTGRES_SCHEMA_VERSION as usize] = [
    // 0 → 1: the first schema.
    "CREATE TABLE payidem_schema (
        version integer NOT NULL
    );
    INSERT INTO payidem_schema (version) VALUES (0);
    CREATE TABLE payidem_operations (
        order_id text PRIMARY KEY,
        idempotency_key text NOT NULL UNIQUE,
        method text NOT NULL,
        path text NOT NULL,
        body bytea NOT NULL,
        body_sha256 text NOT NULL,
        status_path text,
        state text NOT NULL CHECK (state IN
            ('pending', 'in_flight', 'unknown', 'succeeded', 'rejected', 'conflict')),
        attempts integer NOT NULL DEFAULT 0,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        lease_owner text,
        lease_epoch bigint NOT NULL DEFAULT 0,
        lease_expires timestamptz,
        response_status integer,
        response_headers text,
        response_body bytea,
        response_replayed boolean
    );
    CREATE INDEX payidem_operations_by_state ON payidem_operations (state, created_at, seq);
    CREATE INDEX payidem_operations_by_state_updated ON payidem_operations (state, updated_at);
    CREATE INDEX payidem_operations_unsettled ON payidem_operations (created_at, seq)
        WHERE state IN ('pending', 'in_flight', 'unknown');
    CREATE TABLE payidem_reconciliations (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        order_id text NOT NULL,
        idempotency_key text NOT NULL,
        previous_state text NOT NULL,
        state text NOT NULL,
        reconciled_by text NOT NULL,
        reconciled_at timestamptz NOT NULL DEFAULT now(),
        reference text NOT NULL
    );
    CREATE INDEX payidem_reconciliations_by_order ON payidem_reconciliations (order_id, id);",
    // 1 → 2: each operation's integrity MAC (NULL in rows written before,
    // until the first keyed connect seals them; see `seal`), the seal
    // marker, and the clock offset learnt from each platform.
    "ALTER TABLE payidem_operations ADD COLUMN row_mac text;
    ALTER TABLE payidem_schema ADD COLUMN rows_sealed bigint;
    CREATE TABLE payidem_clock_offsets (
        platform text PRIMARY KEY,
        offset_secs bigint NOT NULL,
        measured_at bigint NOT NULL
    );",
];

/// The version the database carries: 0 when it has no `payidem_schema`.
/// `Err` names a database holding our table names without a version.
pub(super) fn version(client: &mut impl postgres::GenericClient) -> std::result::Result<u32, Fail> {
    let row = client.query_one(
        "SELECT to_regclass('payidem_schema') IS NOT NULL,
                to_regclass('payidem_operations') IS NOT NULL",
        &[],
    )?;
    let (has_schema, has_operations): (bool, bool) = (row.get(0), row.get(1));
    if !has_schema {
        if has_operations {
            return Err(Fail::Journal(crate::error::Error::new(
                crate::error::ErrorCode::Journal,
                "journal: the database holds a payidem_operations table but no payidem_schema \
                 version; left untouched",
            )));
        }
        return Ok(0);
    }
    let v: i32 = client
        .query_one("SELECT max(version) FROM payidem_schema", &[])?
        .get::<_, Option<i32>>(0)
        .unwrap_or(0);
    Ok(u32::try_from(v).unwrap_or(0))
}

/// Whether the database was sealed (see [`seal`]).
pub(super) fn sealed(
    client: &mut impl postgres::GenericClient,
) -> std::result::Result<bool, postgres::Error> {
    Ok(client
        .query_one(
            "SELECT max(rows_sealed) IS NOT NULL FROM payidem_schema",
            &[],
        )?
        .get(0))
}

/// [`PostgresJournal::seal`](super::PostgresJournal::seal), under the
/// migration lock: the first call (`rows_sealed` still NULL) writes the MAC of every row
/// that has none and whose body matches its SHA-256 (rows written before
/// the schema had MACs, or by journals without the key before any keyed
/// one connected) and records how many in `rows_sealed`. If some row
/// already carries a MAC although `rows_sealed` is NULL, the marker was
/// removed: nothing is sealed and rows without a MAC stay refused.
pub(super) fn seal(
    client: &mut postgres::Client,
    key: &JournalKey,
) -> std::result::Result<i64, postgres::Error> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    let sealed: Option<i64> = tx
        .query_one("SELECT max(rows_sealed) FROM payidem_schema", &[])?
        .get(0);
    if sealed.is_some() {
        return Ok(0);
    }
    let any_mac: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM payidem_operations WHERE row_mac IS NOT NULL)",
            &[],
        )?
        .get(0);
    let mut count: i64 = 0;
    if !any_mac {
        let rows = tx.query(
            "SELECT order_id, idempotency_key, method, path, body, body_sha256, status_path \
             FROM payidem_operations WHERE row_mac IS NULL FOR UPDATE",
            &[],
        )?;
        for row in rows {
            let op = FrozenOperation {
                order_id: row.get(0),
                idempotency_key: row.get(1),
                method: row.get(2),
                path: row.get(3),
                body: row.get(4),
                body_sha256: row.get(5),
                status_path: row.get(6),
            };
            if crate::protocol::body_sha256_hex(&op.body) != op.body_sha256 {
                continue;
            }
            tx.execute(
                "UPDATE payidem_operations SET row_mac = $2 WHERE order_id = $1",
                &[&op.order_id, &key.row_mac(&op)],
            )?;
            count += 1;
        }
    }
    tx.execute("UPDATE payidem_schema SET rows_sealed = $1", &[&count])?;
    tx.commit()?;
    Ok(count)
}

/// Brings the database to [`POSTGRES_SCHEMA_VERSION`] under the advisory
/// lock, or refuses it unchanged. Returns the version it migrated from, if
/// it migrated an existing journal.
pub(super) fn prepare(client: &mut postgres::Client, j: &PostgresJournal) -> Result<Option<u32>> {
    let fail = |f: Fail| match f {
        Fail::Journal(e) => j.refused(e.message().trim_start_matches("journal: ")),
        Fail::Pg(e) => j.db("prepare the schema", &e),
    };
    let mut tx = client
        .transaction()
        .map_err(|e| j.db("prepare the schema", &e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(|e| j.db("lock for migration", &e))?;
    let from = version(&mut tx).map_err(fail)?;
    if from == 0 && !j.options.create {
        return Err(j.refused(
            "the database holds no payidem journal (no payidem_schema table); left untouched",
        ));
    }
    if from > POSTGRES_SCHEMA_VERSION {
        return Err(j.refused(format!(
            "written by a newer payidem (schema version {from}; this build knows up to \
             {POSTGRES_SCHEMA_VERSION}); left untouched"
        )));
    }
    for v in from..POSTGRES_SCHEMA_VERSION {
        tx.batch_execute(MIGRATIONS[v as usize])
            .map_err(|e| j.db(&format!("migrate schema {v} to {}", v + 1), &e))?;
        tx.execute(
            "UPDATE payidem_schema SET version = $1",
            &[&i32::try_from(v + 1).unwrap_or(i32::MAX)],
        )
        .map_err(|e| j.db("record the schema version", &e))?;
    }
    tx.commit().map_err(|e| j.db("commit the migration", &e))?;
    Ok((from > 0 && from < POSTGRES_SCHEMA_VERSION).then_some(from))
}
