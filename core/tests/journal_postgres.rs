//! What only the PostgreSQL journal does, against a real server started by
//! the tests (e2e/src/pg.rs): durable commits, epoch fencing, a connection
//! lost during COMMIT, the database clock, schema versions, the outbox,
//! a server restart, and errors that never show the password.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use payidem::journal::{
    Journal, JournalKey, Lease, Opened, PgPoint, PostgresJournal, PostgresJournalOptions,
    POSTGRES_SCHEMA_VERSION,
};
use payidem::operation::OperationState;
use payidem::ErrorCode;

#[path = "../../e2e/src/pg.rs"]
mod pg;

mod fixtures;
use fixtures::{now, op};

fn lease(owner: &str, secs: u64) -> Lease {
    Lease {
        owner: owner.into(),
        expires_at: now() + secs,
    }
}

fn open(url: &str) -> PostgresJournal {
    PostgresJournal::connect(url, PostgresJournalOptions::default()).unwrap()
}

/// A handle with a journal key, as a client's.
fn keyed(url: &str) -> PostgresJournal {
    let journal_key = Some(JournalKey::new(&[9u8; 32]).unwrap());
    let options = PostgresJournalOptions {
        journal_key,
        ..PostgresJournalOptions::default()
    };
    PostgresJournal::connect(url, options).unwrap()
}

#[test]
fn the_first_attempt_of_each_lease_commits_synchronously_and_nothing_else_does() {
    let j = open(&pg::fresh_db());
    let a = lease("a", 100);
    j.open(&op("o-1"), &a, now()).unwrap();
    let base = j.commit_stats();
    assert_eq!(base.durable_commits, 0, "opening is not a durable commit");
    j.record_attempt("o-1", &a, 1, now()).unwrap();
    j.record_attempt("o-1", &a, 2, now()).unwrap();
    j.finish("o-1", &a, OperationState::Unknown, None, 0, now())
        .unwrap();
    let s = j.commit_stats();
    assert_eq!(s.durable_commits, 1);
    assert_eq!(s.commits - base.commits, 3);
    // A new lease (a call resuming it) makes its first attempt durable again.
    let b = lease("b", 100);
    j.claim("o-1", &b, now()).unwrap();
    j.record_attempt("o-1", &b, 3, now()).unwrap();
    assert_eq!(j.commit_stats().durable_commits, 2);
}

/// A client's call opens a new operation with its first attempt: one
/// transaction, committed synchronously; its later attempts are not.
#[test]
fn open_to_send_is_one_synchronous_commit() {
    let j = open(&pg::fresh_db());
    let a = lease("a", 100);
    let base = j.commit_stats();
    let opened = j.open_to_send(&op("o-1"), &a, now()).unwrap();
    assert!(
        matches!(opened, Opened::Created(ref r) if r.state == OperationState::InFlight && r.attempts == 1)
    );
    let s = j.commit_stats();
    assert_eq!(
        (
            s.commits - base.commits,
            s.durable_commits - base.durable_commits
        ),
        (1, 1)
    );
    j.record_attempt("o-1", &a, 2, now()).unwrap();
    j.finish("o-1", &a, OperationState::Unknown, None, 0, now())
        .unwrap();
    let s = j.commit_stats();
    assert_eq!(
        (
            s.commits - base.commits,
            s.durable_commits - base.durable_commits
        ),
        (3, 1)
    );
    // An existing operation is opened as `open` would, not durably.
    let b = lease("b", 100);
    assert!(matches!(
        j.open_to_send(&op("o-1"), &b, now()).unwrap(),
        Opened::Resumable(_)
    ));
}

#[test]
fn a_stale_epoch_of_the_same_owner_changes_nothing() {
    let url = pg::fresh_db();
    let (first, second) = (open(&url), open(&url));
    let a = lease("same-owner", 100);
    first.open(&op("o-1"), &a, now()).unwrap();
    // Another handle takes the lease under the same owner id: a new epoch.
    assert!(matches!(
        second.claim("o-1", &a, now()).unwrap(),
        Opened::Resumable(_)
    ));
    let before = first.get("o-1").unwrap();
    let err = first.record_attempt("o-1", &a, 1, now()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::OperationBusy);
    let err = first
        .finish("o-1", &a, OperationState::Succeeded, None, 0, now())
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::OperationBusy);
    first.release("o-1", &a).unwrap();
    assert_eq!(first.get("o-1").unwrap(), before);
    assert_eq!(first.commit_stats().fenced, 2);
    // The holder of the current epoch writes.
    second.record_attempt("o-1", &a, 1, now()).unwrap();
    second
        .finish("o-1", &a, OperationState::Succeeded, None, 0, now())
        .unwrap();
    assert_eq!(
        first.get("o-1").unwrap().unwrap().state,
        OperationState::Succeeded
    );
}

/// A holder writes without reading its row again only while the row is
/// what it last read or wrote: a row another handle changed under the same
/// owner (one that did not take the lease: it matches on the owner alone)
/// is read again, and the write builds on what is stored.
#[test]
fn a_row_changed_by_another_handle_is_read_again_before_writing() {
    let url = pg::fresh_db();
    let (holder, other) = (keyed(&url), keyed(&url));
    let a = lease("holder", 100);
    holder.open_to_send(&op("o-1"), &a, now()).unwrap();
    other.record_attempt("o-1", &a, 3, now()).unwrap();
    // The holder's attempt count (1) is behind the stored one (3).
    holder
        .finish("o-1", &a, OperationState::Succeeded, None, 1, now())
        .unwrap();
    let stored = other.get("o-1").unwrap().unwrap();
    assert_eq!(stored.state, OperationState::Succeeded);
    assert_eq!(stored.attempts, 3, "the finish read the row before writing");
    assert_eq!(holder.commit_stats().fenced, 0);
}

/// A state edited behind the holder (its MAC left as it was) is read,
/// refused, and not written over.
#[test]
fn a_state_edited_behind_the_holder_is_refused_by_its_next_write() {
    let url = pg::fresh_db();
    let j = keyed(&url);
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let a = lease("holder", 100);
    for (order_id, edit) in [
        ("o-attempts", "attempts = 7"),
        ("o-state", "state = 'unknown'"),
        ("o-mac", "state_mac = row_mac"),
    ] {
        j.open_to_send(&op(order_id), &a, now()).unwrap();
        admin
            .execute(
                &format!("UPDATE payidem_operations SET {edit} WHERE order_id = $1"),
                &[&order_id],
            )
            .unwrap();
        let refused = |e: payidem::Error| {
            assert_eq!(e.code(), ErrorCode::Journal, "{e}");
            assert!(e.message().contains(order_id), "{e}");
        };
        refused(j.record_attempt(order_id, &a, 2, now()).unwrap_err());
        let settled = OperationState::Succeeded;
        refused(j.finish(order_id, &a, settled, None, 2, now()).unwrap_err());
        // Nothing written over the edit: reads still refuse it.
        refused(j.get(order_id).unwrap_err());
    }
}

#[test]
fn lease_times_come_from_the_database_clock() {
    let j = open(&pg::fresh_db());
    // A caller whose clock is 50 years behind: its 30 s lease still lasts
    // 30 s by the database's clock. The record's times are the caller's:
    // the clock that measures the key's age (and that the row's MAC covers).
    let past = 1_000_000_000;
    let a = Lease {
        owner: "slow-clock".into(),
        expires_at: past + 30,
    };
    let created = j.open(&op("o-1"), &a, past).unwrap();
    let Opened::Created(record) = created else {
        panic!("created")
    };
    assert_eq!(record.created_at, past);
    assert_eq!(j.get("o-1").unwrap().unwrap().created_at, past);
    // A caller whose clock is far ahead cannot take it: the lease has not
    // expired by the database's clock.
    let err = j
        .claim("o-1", &lease("fast-clock", 10), now() + 3_600)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::OperationBusy);
    assert_eq!(
        j.claim_next(&lease("fast-clock", 10), now() + 3_600)
            .unwrap(),
        None
    );
}

/// A journal on a fresh database whose next synchronous COMMIT, once
/// `armed`, loses its connection (the server process is terminated just
/// before the COMMIT is sent); the flag is cleared when it fires.
fn journal_killing_a_durable_commit(armed: bool) -> (PostgresJournal, Arc<AtomicBool>) {
    let server = pg::shared();
    let url = pg::fresh_db();
    let killer = Arc::new(Mutex::new(server.connect("postgres")));
    let armed = Arc::new(AtomicBool::new(armed));
    let hook = {
        let (killer, armed) = (Arc::clone(&killer), Arc::clone(&armed));
        Arc::new(move |point: PgPoint| {
            let PgPoint::BeforeCommit {
                durable: true,
                backend_pid,
            } = point
            else {
                return;
            };
            if armed.swap(false, Ordering::SeqCst) {
                killer
                    .lock()
                    .unwrap()
                    .execute("SELECT pg_terminate_backend($1)", &[&backend_pid])
                    .unwrap();
            }
        })
    };
    (open(&url).with_hook(hook), armed)
}

#[test]
fn a_connection_killed_during_commit_is_read_back_before_deciding() {
    let (j, armed) = journal_killing_a_durable_commit(false);
    let a = lease("a", 100);
    j.open(&op("o-1"), &a, now()).unwrap();
    armed.store(true, Ordering::SeqCst);
    j.record_attempt("o-1", &a, 1, now()).unwrap();
    assert!(!armed.load(Ordering::SeqCst), "the hook fired");
    let s = j.commit_stats();
    assert_eq!(s.unknown_commits, 1, "{s:?}");
    // Read back as not committed, written again: in flight, durably.
    let r = j.get("o-1").unwrap().unwrap();
    assert_eq!((r.state, r.attempts), (OperationState::InFlight, 1));
    assert_eq!(s.durable_commits, 1);
    // The lease still holds for its owner.
    j.finish("o-1", &a, OperationState::Succeeded, None, 0, now())
        .unwrap();
}

/// The same for the synchronous COMMIT of `open_to_send`: the open is
/// read back and retried as a whole, and the operation ends up recorded,
/// in flight, with its lease held by its caller.
#[test]
fn a_connection_killed_during_the_commit_of_open_to_send_is_read_back() {
    let (j, armed) = journal_killing_a_durable_commit(true);
    let a = lease("a", 100);
    let opened = j.open_to_send(&op("o-1"), &a, now()).unwrap();
    assert!(!armed.load(Ordering::SeqCst), "the hook fired");
    assert_eq!(j.commit_stats().unknown_commits, 1);
    let r = j.get("o-1").unwrap().unwrap();
    assert_eq!((r.state, r.attempts), (OperationState::InFlight, 1));
    // Whether the first COMMIT landed or not, the caller holds the lease.
    assert!(matches!(opened, Opened::Created(_) | Opened::Resumable(_)));
    assert_eq!(
        j.open_to_send(&op("o-1"), &lease("b", 100), now())
            .unwrap_err()
            .code(),
        ErrorCode::OperationBusy
    );
    j.finish("o-1", &a, OperationState::Succeeded, None, 0, now())
        .unwrap();
}

#[test]
fn a_restarted_server_is_reconnected_to_and_keeps_every_committed_record() {
    let mut server = pg::PgServer::start();
    let j = open(&server.url());
    let a = lease("a", 100);
    j.open(&op("o-1"), &a, now()).unwrap();
    j.record_attempt("o-1", &a, 1, now()).unwrap();
    server.stop_immediate().unwrap();
    let err = j.get("o-1").unwrap_err();
    assert_eq!(err.code(), ErrorCode::Journal);
    server.start_again().unwrap();
    // The durable record survived the crash; the pool reconnects.
    let r = j.get("o-1").unwrap().unwrap();
    assert_eq!((r.state, r.attempts), (OperationState::InFlight, 1));
    j.finish("o-1", &a, OperationState::Succeeded, None, 0, now())
        .unwrap();
}

/// A version-1 database (no MACs, no seal, no clock offsets) holding an
/// operation is refused unchanged by a keyed journal (its rows cannot be
/// authenticated); a journal without the key migrates it, unsealed. A keyed
/// journal still refuses it then: a seal is never written over rows nobody
/// authenticated. A row written without the key into a sealed journal is
/// refused, also by `claim_next`, whose claim is rolled back.
#[test]
fn a_version_1_database_is_refused_by_a_keyed_journal_and_never_sealed_over_its_rows() {
    assert_eq!(POSTGRES_SCHEMA_VERSION, 4);
    let server = pg::shared();
    let url = pg::fresh_db();
    let db = url.split('/').nth(3).unwrap().split('?').next().unwrap();
    let legacy = open(&url);
    legacy.open(&op("old"), &lease("a", 100), now()).unwrap();
    legacy.release("old", &lease("a", 100)).unwrap();
    drop(legacy);
    let mut c = server.connect(db);
    c.batch_execute(
        "ALTER TABLE payidem_operations DROP COLUMN row_mac, DROP COLUMN platform,
             DROP COLUMN key_id, DROP COLUMN state_mac;
         DROP TABLE payidem_seal;
         DROP TABLE payidem_clock_offsets;
         UPDATE payidem_schema SET version = 1;",
    )
    .unwrap();
    version_3_indexes(&mut c);
    let key = JournalKey::derive_from_secret(b"postgres-integrity-secret-0123");
    let keyed = || {
        PostgresJournal::connect(
            &url,
            PostgresJournalOptions {
                journal_key: Some(key.clone()),
                ..PostgresJournalOptions::default()
            },
        )
    };
    // Migrations 1 → 2 run, then 2 → 3 refuses: everything rolled back.
    let e = keyed().unwrap_err();
    assert_eq!(e.code(), ErrorCode::Journal);
    assert!(e.message().contains("\"old\""), "{e}");
    let v: i32 = c
        .query_one("SELECT version FROM payidem_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(v, 1, "left untouched");
    let unkeyed = open(&url);
    let report = unkeyed.check().unwrap();
    assert_eq!(report.migrated_from, Some(1));
    assert!(
        report.problems.iter().any(|p| p.contains("not sealed")),
        "{report:?}"
    );
    let e = keyed().unwrap_err();
    assert!(e.message().contains("no seal"), "{e}");

    // A sealed journal: a row written by a journal without the key is
    // refused, and so is its claim.
    let url = pg::fresh_db();
    let db = url.split('/').nth(3).unwrap().split('?').next().unwrap();
    let j = PostgresJournal::connect(
        &url,
        PostgresJournalOptions {
            journal_key: Some(key.clone()),
            ..PostgresJournalOptions::default()
        },
    )
    .unwrap();
    let e = open(&url)
        .open(&op("late"), &lease("x", 100), now())
        .unwrap_err();
    assert!(e.message().contains("sealed"), "{e}");
    let mut c = server.connect(db);
    c.execute(
        "INSERT INTO payidem_operations (order_id, idempotency_key, method, path, body, \
         body_sha256, status_path, state, created_at) \
         SELECT 'late', 'k-late', 'POST', '/p', '\\x7b7d'::bytea, $1, NULL, 'pending', \
         now() - interval '1 hour'",
        &[&payidem::protocol::body_sha256_hex(b"{}")],
    )
    .unwrap();
    let e = j.get("late").unwrap_err();
    assert_eq!(e.code(), ErrorCode::Journal);
    assert!(e.message().contains("\"late\""), "{e}");
    let e = j.claim_next(&lease("taker", 100), now()).unwrap_err();
    assert!(e.message().contains("\"late\""), "{e}");
    let owner: Option<String> = c
        .query_one(
            "SELECT lease_owner FROM payidem_operations WHERE order_id = 'late'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(owner, None, "the refused claim was rolled back");
    let report = j.check().unwrap();
    assert!(report.macs_verified);
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
}

#[test]
fn the_schema_is_versioned_and_a_newer_one_is_refused_untouched() {
    let server = pg::shared();
    let url = pg::fresh_db();
    let db = url.split('/').nth(3).unwrap().split('?').next().unwrap();
    let j = open(&url);
    let check = j.check().unwrap();
    assert_eq!(check.backend, "postgres");
    assert_eq!(check.schema_version, Some(POSTGRES_SCHEMA_VERSION));
    assert!(check.is_sound());
    // Opening again (another instance) changes nothing.
    drop(open(&url));
    let mut c = server.connect(db);
    let v: i32 = c
        .query_one("SELECT version FROM payidem_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(v as u32, POSTGRES_SCHEMA_VERSION);
    c.execute("UPDATE payidem_schema SET version = 99", &[])
        .unwrap();
    let err = PostgresJournal::connect(&url, PostgresJournalOptions::default()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Journal);
    assert!(err.message().contains("newer"), "{err}");
    let v: i32 = c
        .query_one("SELECT version FROM payidem_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(v, 99);

    // Our table name without our version: not ours to change.
    let other = pg::fresh_db();
    let db = other.split('/').nth(3).unwrap().split('?').next().unwrap();
    server
        .connect(db)
        .batch_execute("CREATE TABLE payidem_operations (x int)")
        .unwrap();
    let err = PostgresJournal::connect(&other, PostgresJournalOptions::default()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Journal);
    assert!(err.message().contains("left untouched"), "{err}");
}

/// Puts back the indexes of `payidem_operations` as versions 1 to 3 had
/// them.
fn version_3_indexes(c: &mut postgres::Client) {
    c.batch_execute(
        "DROP INDEX payidem_operations_settled;
         CREATE INDEX payidem_operations_by_state
             ON payidem_operations (state, created_at, seq);
         CREATE INDEX payidem_operations_by_state_updated
             ON payidem_operations (state, updated_at);",
    )
    .unwrap();
}

/// The indexes of `payidem_operations`, by name.
fn operation_indexes(c: &mut postgres::Client) -> Vec<String> {
    c.query(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'payidem_operations' \
         ORDER BY indexname",
        &[],
    )
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

/// A version-3 database (with its two indexes over `state`) holding a
/// keyed operation in flight is migrated to version 4 by the next handle:
/// those indexes give way to one over the settled rows, and the operation
/// is finished, listed and purged as before.
#[test]
fn a_version_3_database_migrates_to_fewer_indexes_and_keeps_its_operations() {
    let server = pg::shared();
    let url = pg::fresh_db();
    let db = url.split('/').nth(3).unwrap().split('?').next().unwrap();
    let a = lease("a", 100);
    let first = keyed(&url);
    first.open_to_send(&op("o-3"), &a, now()).unwrap();
    drop(first);
    let mut c = server.connect(db);
    version_3_indexes(&mut c);
    c.execute("UPDATE payidem_schema SET version = 3", &[])
        .unwrap();
    let j = keyed(&url);
    assert_eq!(j.check().unwrap().migrated_from, Some(3));
    let v: i32 = c
        .query_one("SELECT version FROM payidem_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(v, 4);
    assert_eq!(
        operation_indexes(&mut c),
        [
            "payidem_operations_idempotency_key_key",
            "payidem_operations_pkey",
            "payidem_operations_settled",
            "payidem_operations_unsettled",
        ]
    );
    // The lease was taken before the migration: claimed again, finished.
    let b = lease("b", 100);
    c.execute(
        "UPDATE payidem_operations SET lease_expires = now() - interval '1 second'",
        &[],
    )
    .unwrap();
    assert!(matches!(
        j.claim("o-3", &b, now()).unwrap(),
        Opened::Resumable(_)
    ));
    j.finish("o-3", &b, OperationState::Succeeded, None, 1, now())
        .unwrap();
    let settled = j.list(&[OperationState::Succeeded]).unwrap();
    assert_eq!(settled.len(), 1);
    assert!(j.check().unwrap().is_sound());
    assert_eq!(j.purge_settled(now() + 10).unwrap(), 1);
    assert_eq!(j.get("o-3").unwrap(), None);
}

#[test]
fn an_outbox_insert_commits_with_the_callers_rows_and_is_taken_over() {
    let server = pg::shared();
    let url = pg::fresh_db();
    let db = url.split('/').nth(3).unwrap().split('?').next().unwrap();
    let j = open(&url);
    let mut app = server.connect(db);
    app.batch_execute("CREATE TABLE orders (id text PRIMARY KEY, amount int)")
        .unwrap();
    // Rolled back with the business row: nothing is journaled.
    let insert = PostgresJournal::outbox_insert(&op("o-rolled-back"));
    let mut tx = app.transaction().unwrap();
    tx.execute("INSERT INTO orders VALUES ('o-rolled-back', 5)", &[])
        .unwrap();
    tx.execute(&insert.sql, &insert.sql_params()).unwrap();
    tx.rollback().unwrap();
    assert_eq!(j.get("o-rolled-back").unwrap(), None);
    // Committed with it: pending, without a lease, taken by claim_next.
    let frozen = op("o-1");
    let insert = PostgresJournal::outbox_insert(&frozen);
    let mut tx = app.transaction().unwrap();
    tx.execute("INSERT INTO orders VALUES ('o-1', 5)", &[])
        .unwrap();
    tx.execute(&insert.sql, &insert.sql_params()).unwrap();
    tx.commit().unwrap();
    let r = j.get("o-1").unwrap().unwrap();
    assert_eq!((r.state, &r.operation), (OperationState::Pending, &frozen));
    // The same order id again fails in the caller's transaction.
    let err = app.execute(&insert.sql, &insert.sql_params()).unwrap_err();
    assert_eq!(
        err.code(),
        Some(&postgres::error::SqlState::UNIQUE_VIOLATION),
        "{err}"
    );
    let t = lease("taker", 100);
    let Some(Opened::Resumable(taken)) = j.claim_next(&t, now()).unwrap() else {
        panic!("the outbox row is taken")
    };
    assert_eq!(taken.operation, frozen);
    j.record_attempt("o-1", &t, 1, now()).unwrap();
    assert_eq!(j.claim_next(&lease("other", 100), now()).unwrap(), None);
}

#[test]
fn errors_name_the_target_but_never_the_password() {
    let err = PostgresJournal::connect(
        "postgresql://alice:top-secret-pw@/shop?host=/nonexistent-payidem-dir",
        PostgresJournalOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Journal);
    let text = format!("{err} {err:?}");
    assert!(text.contains("alice@/nonexistent-payidem-dir"), "{text}");
    assert!(!text.contains("top-secret-pw"), "{text}");
    let err = PostgresJournal::connect("postgresql://a:b@host:notaport/db", Default::default())
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Journal);
    assert!(!format!("{err}").contains(":b@"), "{err}");
    let j = open(&pg::fresh_db());
    assert!(!format!("{j:?}").contains("password"));
}

#[test]
fn a_setting_with_a_postgres_url_selects_the_postgres_journal() {
    use payidem::JournalChoice;
    for (url, shown) in [
        ("postgres://u:pw@h/db", r#"Postgres("postgres://***@h/db")"#),
        (
            "postgresql:///db?host=/run",
            r#"Postgres("postgresql:///db?***")"#,
        ),
    ] {
        let choice = JournalChoice::from_setting(Some(url));
        assert!(matches!(&choice, JournalChoice::Postgres(u) if u == url));
        assert_eq!(format!("{choice:?}"), shown);
    }
    assert!(matches!(
        JournalChoice::from_setting(Some("postgres.sqlite3")),
        JournalChoice::Sqlite(_)
    ));
    // A client opens it by its URL.
    let mut config = payidem::ClientConfig::new("http://127.0.0.1:9", "key_test_1");
    config.journal = JournalChoice::from_setting(Some(&pg::fresh_db()));
    let client = payidem::Client::new(config, b"0123456789abcdef0123").unwrap();
    assert_eq!(client.list_unknown().unwrap(), vec![]);
}

#[test]
fn without_create_a_database_with_no_journal_is_refused_untouched() {
    let url = pg::fresh_db();
    let options = || PostgresJournalOptions {
        create: false,
        ..PostgresJournalOptions::default()
    };
    let err = PostgresJournal::connect(&url, options()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Journal);
    assert!(
        err.to_string().contains("holds no payidem journal"),
        "{err}"
    );
    assert_eq!(pg::journal_tables(&url), 0, "nothing was created");
    // Once a client made it, the same options open it.
    drop(open(&url));
    let j = PostgresJournal::connect(&url, options()).unwrap();
    assert!(j.get("nothing").unwrap().is_none());
}
