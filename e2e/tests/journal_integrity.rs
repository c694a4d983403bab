//! Journal integrity and the kept clock offset, end to end: a client over
//! the mock platform on loopback, with a real SQLite file and a real
//! PostgreSQL journal (e2e/src/pg.rs).
//!
//! - Every immutable column of an unknown operation altered with raw SQL,
//!   and rows injected with a forged or no MAC: `resume`, `execute`,
//!   `take_over` and `status` all answer `journal_error` naming the order
//!   id, and the mock received nothing.
//! - A schema-2 journal whose rows carry no MAC is refused unchanged by a
//!   client (its rows cannot be authenticated), and nothing is sent.
//! - The clock offset a client learnt is used by the next client on the
//!   same journal from its first attempt; one older than the maximum age
//!   is not.

use payidem::journal::{
    Journal, JournalKey, Lease, PostgresJournal, PostgresJournalOptions, SqliteJournal,
    SqliteJournalOptions, MAX_STORED_CLOCK_OFFSET_AGE_SECS,
};
use payidem::operation::{FrozenOperation, OperationState};
use payidem::{Client, ErrorCode, JournalChoice};
use payidem_e2e::{client, pg, start_mock, EventLog, OwnedSpec};
use payidem_mock::{ClockSetting, MockServer, DEFAULT_SECRET};

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn key() -> JournalKey {
    JournalKey::derive_from_secret(DEFAULT_SECRET.as_bytes())
}

/// Records `spec` as an unknown operation (one attempt that may have
/// landed) through a journal keyed like the client's, without sending it.
fn put_unknown(journal: &dyn Journal, frozen: &FrozenOperation) {
    let lease = Lease {
        owner: "seeder".into(),
        expires_at: now() + 60,
    };
    journal.open(frozen, &lease, now()).unwrap();
    journal
        .record_attempt(&frozen.order_id, &lease, 1, now())
        .unwrap();
    journal
        .finish(
            &frozen.order_id,
            &lease,
            OperationState::Unknown,
            None,
            0,
            now(),
        )
        .unwrap();
}

/// Every way a client could send or answer for `order_id` refuses it, and
/// nothing reached the platform.
#[track_caller]
fn assert_nothing_sent_for(c: &Client, mock: &MockServer, spec: &OwnedSpec, what: &str) {
    let order_id = spec.order_id.as_str();
    let results: Vec<(&str, payidem::Error)> = vec![
        ("resume", c.resume(order_id).unwrap_err()),
        ("execute", c.execute(&spec.spec()).unwrap_err()),
        ("status", c.status(order_id).unwrap_err()),
        ("take_over", c.take_over(10).unwrap_err()),
    ];
    for (call, e) in results {
        assert_eq!(e.code(), ErrorCode::Journal, "{what}: {call}: {e}");
        assert!(
            e.message().contains(&format!("{order_id:?}")),
            "{what}: {call} names the order id: {e}"
        );
        let hex = JournalKey::derived_hex(DEFAULT_SECRET.as_bytes());
        assert!(!e.message().contains(&hex[..16]), "{what}: {e}");
    }
    let stats = mock.stats();
    assert_eq!(stats.requests.total, 0, "{what}: nothing may be sent");
    assert_eq!(stats.payments, 0, "{what}");
}

/// The raw SQL (SQLite and PostgreSQL alike) that alters each immutable
/// column of order id `o`, and the order id the row has afterwards.
fn tamperings(evil_hash: &str) -> Vec<(&'static str, String, &'static str)> {
    vec![
        ("order_id", "SET order_id = 'o-evil'".into(), "o-evil"),
        (
            "idempotency_key",
            "SET idempotency_key = 'create-o-2'".into(),
            "o",
        ),
        ("method", "SET method = 'PUT'".into(), "o"),
        ("path", "SET path = '/v1/payments/x/refunds'".into(), "o"),
        (
            "body_sha256",
            format!("SET body_sha256 = '{evil_hash}'"),
            "o",
        ),
        (
            "status_path",
            "SET status_path = '/v1/payments?order_id=p'".into(),
            "o",
        ),
    ]
}

fn spec_for(order_id: &str) -> OwnedSpec {
    OwnedSpec::payment(order_id, 1250, true)
}

#[test]
fn sqlite_rows_altered_in_any_immutable_column_or_injected_are_never_sent() {
    let evil_body = br#"{"order_id":"o","amount":999999,"currency":"EUR"}"#;
    let evil_hash = payidem::protocol::body_sha256_hex(evil_body);
    let mut cases = tamperings(&evil_hash);
    cases.push((
        "body",
        // Body and hash changed together: only the MAC can tell.
        format!(
            "SET body = CAST('{}' AS BLOB), body_sha256 = '{evil_hash}'",
            String::from_utf8_lossy(evil_body)
        ),
        "o",
    ));
    for (column, set, order_id) in cases {
        let mock = start_mock();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.sqlite3");
        let frozen = client(&mock.url(), JournalChoice::Memory)
            .freeze(&spec_for("o").spec())
            .unwrap();
        {
            let j = SqliteJournal::open(
                &path,
                SqliteJournalOptions {
                    journal_key: Some(key()),
                    ..SqliteJournalOptions::default()
                },
            )
            .unwrap();
            put_unknown(&j, &frozen);
        }
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(&format!("UPDATE operations {set} WHERE order_id = 'o'"))
            .unwrap();
        let c = client(&mock.url(), JournalChoice::Sqlite(path.clone()));
        assert_nothing_sent_for(&c, &mock, &spec_for(order_id), column);
    }
}

#[test]
fn sqlite_injected_rows_are_never_sent_and_a_sound_one_still_is() {
    let mock = start_mock();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let c = client(&mock.url(), JournalChoice::Sqlite(path.clone()));
    for (order_id, mac) in [
        ("inj-none", "NULL".to_owned()),
        ("inj-forged", format!("'{}'", "5a".repeat(32))),
    ] {
        let f = c.freeze(&spec_for(order_id).spec()).unwrap();
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute(
                &format!(
                    "INSERT INTO operations (order_id, idempotency_key, method, path, body,
                         body_sha256, status_path, state, attempts, created_at, updated_at, row_mac)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'unknown', 1, 1, 1, {mac})"
                ),
                rusqlite::params![
                    f.order_id,
                    f.idempotency_key,
                    f.method,
                    f.path,
                    f.body,
                    f.body_sha256,
                    f.status_path
                ],
            )
            .unwrap();
        assert_nothing_sent_for(&c, &mock, &spec_for(order_id), order_id);
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute("DELETE FROM operations WHERE order_id = ?1", [order_id])
            .unwrap();
    }
    // The journal itself is fine: a sound operation goes through.
    c.execute(&spec_for("sound").spec()).unwrap();
    assert_eq!(mock.stats().payments, 1);
}

#[test]
fn postgres_rows_altered_or_injected_are_never_sent() {
    let evil_hash = payidem::protocol::body_sha256_hex(b"{}");
    let mut cases = tamperings(&evil_hash);
    cases.push((
        "body",
        format!("SET body = '\\x7b7d'::bytea, body_sha256 = '{evil_hash}'"),
        "o",
    ));
    cases.push(("injected without a MAC", "SET row_mac = NULL".into(), "o"));
    cases.push((
        "injected with a forged MAC",
        format!("SET row_mac = '{}'", "0f".repeat(32)),
        "o",
    ));
    for (column, set, order_id) in cases {
        let mock = start_mock();
        let url = pg::fresh_db();
        let frozen = client(&mock.url(), JournalChoice::Memory)
            .freeze(&spec_for("o").spec())
            .unwrap();
        {
            let j = PostgresJournal::connect(
                &url,
                PostgresJournalOptions {
                    journal_key: Some(key()),
                    ..PostgresJournalOptions::default()
                },
            )
            .unwrap();
            put_unknown(&j, &frozen);
        }
        let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        raw.batch_execute(&format!(
            "UPDATE payidem_operations {set} WHERE order_id = 'o'"
        ))
        .unwrap();
        let c = client(&mock.url(), JournalChoice::Postgres(url.clone()));
        assert_nothing_sent_for(&c, &mock, &spec_for(order_id), column);
        // The claim was rolled back: no lease left behind.
        let owner: Option<String> = raw
            .query_one("SELECT lease_owner FROM payidem_operations", &[])
            .unwrap()
            .get(0);
        assert_eq!(owner, None, "{column}");
    }
}

#[test]
fn an_outbox_row_of_a_client_is_taken_over_by_another_with_the_same_key() {
    let mock = start_mock();
    let url = pg::fresh_db();
    let writer = client(&mock.url(), JournalChoice::Postgres(url.clone()));
    let insert = writer
        .outbox_insert(
            &spec_for("outboxed").spec(),
            payidem::journal::ParamStyle::Dollar,
        )
        .unwrap();
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    raw.execute(&insert.sql, &insert.sql_params()).unwrap();
    let taker = client(&mock.url(), JournalChoice::Postgres(url));
    let taken = taker.take_over(10).unwrap();
    assert_eq!(taken.len(), 1);
    assert!(taken[0].1.is_ok(), "{:?}", taken[0].1);
    assert_eq!(mock.stats().payments, 1);
}

#[test]
fn a_schema_2_journal_with_rows_without_macs_is_refused_unchanged_and_nothing_is_sent() {
    let mock = start_mock();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let frozen = client(&mock.url(), JournalChoice::Memory)
        .freeze(&spec_for("legacy").spec())
        .unwrap();
    put_unknown(
        &SqliteJournal::open(&path, SqliteJournalOptions::default()).unwrap(),
        &frozen,
    );
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            "DROP TABLE clock_offsets; DROP TABLE seal;
             ALTER TABLE operations DROP COLUMN row_mac;
             ALTER TABLE operations DROP COLUMN platform;
             ALTER TABLE operations DROP COLUMN key_id;
             ALTER TABLE operations DROP COLUMN state_mac;
             DROP INDEX operations_unsettled;
             CREATE INDEX operations_by_state ON operations (state, created_at);
             UPDATE meta SET value = 2 WHERE key = 'schema_version';",
        )
        .unwrap();
    let e = Client::new(
        payidem_e2e::fast_config(&mock.url(), JournalChoice::Sqlite(path.clone())),
        DEFAULT_SECRET.as_bytes(),
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Journal, "{e}");
    assert!(e.message().contains("\"legacy\""), "{e}");
    assert!(e.message().contains("left untouched"), "{e}");
    assert_eq!(mock.stats().requests.total, 0);
    let version: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(version, 2, "refused unchanged");
}

fn stale_refusals(mock: &MockServer) -> u64 {
    mock.stats()
        .requests
        .by_error_code
        .get("timestamp_out_of_window")
        .copied()
        .unwrap_or(0)
}

#[test]
fn the_learnt_clock_offset_is_kept_in_the_journal_for_the_next_client() {
    let mock = start_mock();
    mock.set_clock(ClockSetting::System { skew_seconds: 500 });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");

    // The first client learns the offset: one rejected round trip.
    let first = client(&mock.url(), JournalChoice::Sqlite(path.clone()));
    assert_eq!(first.clock_offset().seconds(), 0);
    first.execute(&spec_for("clock-1").spec()).unwrap();
    assert_eq!(stale_refusals(&mock), 1);
    drop(first);

    // A restarted process signs right on its first attempt.
    let log = EventLog::new();
    let second =
        client(&mock.url(), JournalChoice::Sqlite(path.clone())).with_event_hook(log.hook());
    assert!((499..=501).contains(&second.clock_offset().seconds()));
    second.execute(&spec_for("clock-2").spec()).unwrap();
    assert_eq!(log.of("clock-2").len(), 1, "one attempt, no refusal");
    assert_eq!(stale_refusals(&mock), 1);
    drop(second);

    // An offset older than the maximum age is not used.
    let stale = now() - MAX_STORED_CLOCK_OFFSET_AGE_SECS - 60;
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("UPDATE clock_offsets SET measured_at = ?1", [stale])
        .unwrap();
    let third = client(&mock.url(), JournalChoice::Sqlite(path.clone()));
    assert_eq!(third.clock_offset().seconds(), 0);
    third.execute(&spec_for("clock-3").spec()).unwrap();
    assert_eq!(stale_refusals(&mock), 2);
}

#[test]
fn the_clock_offset_is_kept_in_a_postgres_journal_too() {
    let mock = start_mock();
    mock.set_clock(ClockSetting::System { skew_seconds: -450 });
    let url = pg::fresh_db();
    let first = client(&mock.url(), JournalChoice::Postgres(url.clone()));
    first.execute(&spec_for("pg-clock-1").spec()).unwrap();
    assert_eq!(stale_refusals(&mock), 1);
    let second = client(&mock.url(), JournalChoice::Postgres(url));
    assert!((-451..=-449).contains(&second.clock_offset().seconds()));
    second.execute(&spec_for("pg-clock-2").spec()).unwrap();
    assert_eq!(stale_refusals(&mock), 1);
}
