//! The journal's tables in PostgreSQL and their migrations.
//!
//! The version lives in `payidem_schema` (one row). Opening a journal takes
//! `pg_advisory_xact_lock` so that instances starting together migrate
//! once, then runs every missing step in that same transaction. A database
//! with a newer version is refused without being changed; one holding a
//! `payidem_operations` table but no version is refused as well (it is not
//! ours to change).

use super::rows::{read_row, COLUMNS_V2};
use super::{Fail, PostgresJournal};
use crate::error::Result;
use crate::journal::{JournalKey, RowAuth, SealRecord};

/// The schema version this build writes and reads.
pub const POSTGRES_SCHEMA_VERSION: u32 = 4;

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
    // 2 → 3: the seal (the journal's id and the MAC that ties it to its
    // key, with the purge horizon), and each operation's platform, key id
    // and state MAC. Rows of schema 2 are re-authenticated by `upgrade_rows`
    // in the same transaction (with the key) or the migration is refused.
    "ALTER TABLE payidem_schema DROP COLUMN rows_sealed;
    CREATE TABLE payidem_seal (
        id integer PRIMARY KEY CHECK (id = 1),
        journal_id text NOT NULL,
        seal text NOT NULL,
        purged_before bigint NOT NULL,
        purge_mac text NOT NULL
    );
    ALTER TABLE payidem_operations ADD COLUMN platform text,
        ADD COLUMN key_id text, ADD COLUMN state_mac text;",
    // 3 → 4: fewer index entries per write. Every write of the hot path
    // (the open's INSERT, the finish's UPDATE, which changes `state` and
    // `updated_at` and so is never a HOT update) adds an entry to every
    // index of the row: the two indexes over `state` served only listings
    // and purges. Purges keep one over the settled rows' `updated_at`
    // (the finish's new row is its only write to it); listings read the
    // table, or the unsettled rows' index.
    "DROP INDEX IF EXISTS payidem_operations_by_state;
    DROP INDEX IF EXISTS payidem_operations_by_state_updated;
    CREATE INDEX payidem_operations_settled ON payidem_operations (updated_at)
        WHERE state NOT IN ('pending', 'in_flight', 'unknown');",
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

/// Brings the database to [`POSTGRES_SCHEMA_VERSION`] under the advisory
/// lock, or refuses it unchanged. Returns the version it migrated from, if
/// it migrated an existing journal.
///
/// Then decides how the handle authenticates rows ([`RowAuth::decide`]) in
/// the same transaction: a new journal opened with a key is sealed; a
/// schema 2 journal is upgraded only with the key, every row of it
/// carrying a valid schema 2 MAC, and refused unchanged otherwise.
pub(super) fn prepare(
    client: &mut postgres::Client,
    j: &PostgresJournal,
) -> Result<(Option<u32>, RowAuth)> {
    let fail = |f: Fail| match f {
        // Already named after this journal (`j.refused`): kept as it is.
        Fail::Journal(e)
            if e.message()
                .starts_with(&format!("journal {}: ", j.target())) =>
        {
            e
        }
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
        if v == 2 {
            check_upgradable(&mut tx, j).map_err(fail)?;
        }
        tx.batch_execute(MIGRATIONS[v as usize])
            .map_err(|e| j.db(&format!("migrate schema {v} to {}", v + 1), &e))?;
        if v == 2 {
            if let Some(key) = &j.options.journal_key {
                upgrade_rows(&mut tx, j, key).map_err(fail)?;
            }
        }
        tx.execute(
            "UPDATE payidem_schema SET version = $1",
            &[&i32::try_from(v + 1).unwrap_or(i32::MAX)],
        )
        .map_err(|e| j.db("record the schema version", &e))?;
    }
    let found = seal_record(&mut tx).map_err(|e| j.db("read the seal", &e))?;
    let rows: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM payidem_operations) \
             OR EXISTS (SELECT 1 FROM payidem_reconciliations)",
            &[],
        )
        .map_err(|e| j.db("read the seal", &e))?
        .get(0);
    let decided = RowAuth::decide(j.options.journal_key.as_ref(), found, rows)
        .map_err(|why| j.refused(why))?;
    if let Some(seal) = &decided.create {
        write_seal(&mut tx, seal).map_err(|e| j.db("write the seal", &e))?;
    }
    tx.commit().map_err(|e| j.db("commit the migration", &e))?;
    Ok((
        (from > 0 && from < POSTGRES_SCHEMA_VERSION).then_some(from),
        decided.auth,
    ))
}

/// The seal record, if the journal has one.
pub(super) fn seal_record(
    client: &mut impl postgres::GenericClient,
) -> std::result::Result<Option<SealRecord>, postgres::Error> {
    Ok(client
        .query_opt(
            "SELECT journal_id, seal, purged_before, purge_mac FROM payidem_seal WHERE id = 1",
            &[],
        )?
        .map(|row| SealRecord {
            journal_id: row.get(0),
            seal: row.get(1),
            purged_before: u64::try_from(row.get::<_, i64>(2)).unwrap_or(u64::MAX),
            purge_mac: row.get(3),
        }))
}

fn write_seal(
    client: &mut impl postgres::GenericClient,
    seal: &SealRecord,
) -> std::result::Result<(), postgres::Error> {
    client.execute(
        "INSERT INTO payidem_seal (id, journal_id, seal, purged_before, purge_mac) \
         VALUES (1, $1, $2, 0, $3)",
        &[&seal.journal_id, &seal.seal, &seal.purge_mac],
    )?;
    Ok(())
}

/// Refuses to upgrade a schema 2 journal whose rows carry MACs without the
/// key, and, with the key, one whose rows do not all carry a valid schema
/// 2 MAC.
fn check_upgradable(
    tx: &mut postgres::Transaction<'_>,
    j: &PostgresJournal,
) -> std::result::Result<(), Fail> {
    let rows = tx.query(
        &format!("SELECT {COLUMNS_V2} FROM payidem_operations FOR UPDATE"),
        &[],
    )?;
    if rows.is_empty() {
        return Ok(());
    }
    let Some(key) = &j.options.journal_key else {
        if rows
            .iter()
            .any(|r| r.get::<_, Option<String>>(18).is_some())
        {
            return Err(j
                .refused(
                    "schema 2 journals are upgraded by a handle with the journal key (it \
                     authenticates every row anew): connect once with a client, or give the \
                     API secret or the journal key; left untouched",
                )
                .into());
        }
        return Ok(());
    };
    let mut bad = Vec::new();
    for row in &rows {
        let stored = read_row(j.target(), row, false)?;
        let mac: Option<String> = row.get(18);
        if !key.legacy_row_mac_matches(&stored.record.operation, mac.as_deref()) {
            bad.push(format!("{:?}", stored.record.operation.order_id));
        }
    }
    if bad.is_empty() {
        return Ok(());
    }
    Err(j
        .refused(format!(
            "cannot upgrade to schema {POSTGRES_SCHEMA_VERSION}: the rows of order ids {} carry \
             no valid integrity MAC (injected or altered, or written under another key), so \
             they cannot be authenticated anew; left untouched. Check them with the previous \
             payidem version (`payidem journal check`) and reconcile or remove them",
            bad.join(", ")
        ))
        .into())
}

/// Seals an upgraded schema 2 journal and writes both MACs of every row,
/// made for the handle's scope.
fn upgrade_rows(
    tx: &mut postgres::Transaction<'_>,
    j: &PostgresJournal,
    key: &JournalKey,
) -> std::result::Result<(), Fail> {
    let seal = SealRecord::new(key);
    write_seal(tx, &seal)?;
    let auth = RowAuth::Keyed {
        key: key.clone(),
        journal_id: seal.journal_id,
        purged_before: 0,
    };
    let scope = j.options.scope.as_ref();
    let rows = tx.query(&format!("SELECT {COLUMNS_V2} FROM payidem_operations"), &[])?;
    for row in &rows {
        let stored = read_row(j.target(), row, false)?;
        let (row_mac, state_mac) = auth.macs(scope, &stored.record)?;
        tx.execute(
            "UPDATE payidem_operations SET platform = $2, key_id = $3, row_mac = $4, \
             state_mac = $5 WHERE order_id = $1",
            &[
                &stored.record.operation.order_id,
                &scope.map(|s| &s.platform),
                &scope.map(|s| &s.key_id),
                &row_mac,
                &state_mac,
            ],
        )?;
    }
    Ok(())
}
