//! What only the SQLite journal promises: durability across restarts,
//! sharing one file between handles, and refusing files it must not use.

use std::path::Path;
use std::sync::Barrier;
use std::time::Duration;

use payidem::journal::{
    Journal, Lease, Opened, SqliteJournal, SqliteJournalOptions, SCHEMA_VERSION,
};
use payidem::operation::{FrozenOperation, OperationState, Response};
use payidem::{Error, ErrorCode};

fn op(order_id: &str, body: &[u8]) -> FrozenOperation {
    FrozenOperation {
        order_id: order_id.into(),
        idempotency_key: format!("key-{order_id}"),
        method: "POST".into(),
        path: "/payments".into(),
        body: body.to_vec(),
        body_sha256: payidem::protocol::body_sha256_hex(body),
        status_path: None,
    }
}

fn lease(owner: &str, expires_at: u64) -> Lease {
    Lease {
        owner: owner.into(),
        expires_at,
    }
}

fn open(path: &Path) -> SqliteJournal {
    SqliteJournal::open(path, SqliteJournalOptions::default()).unwrap()
}

fn open_err(path: &Path) -> Error {
    SqliteJournal::open(path, SqliteJournalOptions::default()).expect_err("must refuse")
}

fn assert_journal_error(err: &Error, path: &Path, words: &str) {
    assert_eq!(err.code(), ErrorCode::Journal, "{err}");
    assert!(
        err.message().contains(&path.display().to_string()),
        "path missing: {err}"
    );
    assert!(err.message().contains(words), "{words:?} missing: {err}");
}

#[test]
fn everything_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let answer = Response {
        status: 201,
        headers: vec![
            ("Idempotent-Replayed".into(), "true".into()),
            ("X-A".into(), "é \"q\"".into()),
        ],
        body: b"{\"id\":\"pay_1\"}\0\xff".to_vec(),
        replayed: true,
    };
    let before = {
        let j = open(&path);
        let a = lease("a", 1_000);
        for (id, state) in [
            ("pending", OperationState::Pending),
            ("in-flight", OperationState::InFlight),
            ("unknown", OperationState::Unknown),
            ("succeeded", OperationState::Succeeded),
        ] {
            j.open(&op(id, id.as_bytes()), &a, 10).unwrap();
            if state != OperationState::Pending {
                j.record_attempt(id, &a, 3, 11).unwrap();
            }
            if state == OperationState::Unknown {
                j.finish(id, &a, state, None, 0, 12).unwrap();
            }
            if state == OperationState::Succeeded {
                j.finish(id, &a, state, Some(&answer), 0, 12).unwrap();
            }
        }
        j.list(&OperationState::ALL).unwrap()
    };
    assert_eq!(before.len(), 4);
    let j = open(&path);
    assert_eq!(j.list(&OperationState::ALL).unwrap(), before);
    assert_eq!(j.get("succeeded").unwrap().unwrap().response, Some(answer));
    // Leases survive too: `a` still holds the pending and in-flight ones.
    assert_eq!(
        j.claim("pending", &lease("b", 2_000), 500)
            .unwrap_err()
            .code(),
        ErrorCode::OperationBusy
    );
    assert_eq!(
        j.claim("in-flight", &lease("b", 2_000), 500)
            .unwrap_err()
            .code(),
        ErrorCode::OperationBusy
    );
    assert!(matches!(
        j.claim("unknown", &lease("b", 2_000), 500).unwrap(),
        Opened::Resumable(_)
    ));
}

#[test]
fn one_lease_winner_among_eight_threads_on_two_handles() {
    const ORDERS: usize = 25;
    const THREADS: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let handles = [open(&path), open(&path)];
    let operations: Vec<FrozenOperation> = (0..ORDERS)
        .map(|i| op(&format!("order-{i}"), &[i as u8]))
        .collect();
    let barrier = Barrier::new(THREADS);
    let outcome = |result: payidem::Result<Opened>| -> &'static str {
        match result {
            Ok(Opened::Created(_)) => "created",
            Ok(Opened::Resumable(_)) => "resumable",
            Ok(Opened::Settled(_)) => "settled",
            Err(e) if e.code() == ErrorCode::OperationBusy => "busy",
            Err(_) => "error",
        }
    };

    // Phase 1: every thread opens every order. Phase 2: the winners finish
    // as unknown. Phase 3: every thread claims every order. Threads never
    // panic between barriers, so a failure cannot leave the others waiting.
    let results: Vec<Vec<(usize, &str, &str)>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let j = &handles[t % 2];
                let (operations, barrier) = (&operations, &barrier);
                s.spawn(move || {
                    let me = lease(&format!("owner-{t}"), 1_000);
                    let mut seen = Vec::new();
                    barrier.wait();
                    for o in operations {
                        seen.push((1, o.order_id.as_str(), outcome(j.open(o, &me, 10))));
                    }
                    barrier.wait();
                    for (_, id, what) in seen.clone() {
                        if what == "created" {
                            let done = j.finish(id, &me, OperationState::Unknown, None, 0, 20);
                            seen.push((2, id, if done.is_ok() { "finished" } else { "error" }));
                        }
                    }
                    barrier.wait();
                    for o in operations {
                        seen.push((
                            3,
                            o.order_id.as_str(),
                            outcome(j.claim(&o.order_id, &me, 30)),
                        ));
                    }
                    seen
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let all: Vec<&(usize, &str, &str)> = results.iter().flatten().collect();
    for o in &operations {
        let count = |phase: usize, what: &str| {
            all.iter()
                .filter(|(p, id, w)| *p == phase && *id == o.order_id && *w == what)
                .count()
        };
        assert_eq!(
            (count(1, "created"), count(1, "busy")),
            (1, THREADS - 1),
            "{}",
            o.order_id
        );
        assert_eq!(count(2, "finished"), 1, "{}", o.order_id);
        assert_eq!(
            (count(3, "resumable"), count(3, "busy")),
            (1, THREADS - 1),
            "{}",
            o.order_id
        );
    }
    assert_eq!(
        handles[0].list(&[OperationState::Unknown]).unwrap().len(),
        ORDERS
    );
}

#[test]
fn fresh_file_gets_the_schema_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    std::fs::write(&path, b"").unwrap();
    drop(open(&path));
    drop(open(&path));
    let raw = rusqlite::Connection::open(&path).unwrap();
    let version: u32 = raw
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let mode: String = raw
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    assert_eq!(page_size(&path), 2048);
}

/// The page size of the SQLite file at `path`.
fn page_size(path: &Path) -> u32 {
    let raw = rusqlite::Connection::open(path).unwrap();
    raw.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap()
}

/// A copy in `dir` of the journal file at `path` and of its WAL, as they
/// are on disk while the journal is open (no WAL index): SQLite recovers
/// the copy from its WAL.
fn copy_with_wal(path: &Path, dir: &Path) -> std::path::PathBuf {
    let copy = dir.join("journal.db");
    std::fs::copy(path, &copy).unwrap();
    let wal = format!("{}-wal", path.display());
    std::fs::copy(wal, dir.join("journal.db-wal")).unwrap();
    copy
}

/// A file made with SQLite's default 4,096-byte pages (every journal
/// before 2048-byte pages) keeps them and works as before.
#[test]
fn a_journal_with_4096_byte_pages_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    {
        let raw = rusqlite::Connection::open(&path).unwrap();
        raw.execute_batch(
            "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL;
             CREATE TABLE t (x); DROP TABLE t;",
        )
        .unwrap();
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let l = lease("a", 100);
    {
        let j = open(&path);
        j.open_to_send(&op("old-pages", b"{\"amount\":1}"), &l, 1)
            .unwrap();
        j.finish("old-pages", &l, OperationState::Succeeded, None, 0, 2)
            .unwrap();
    }
    let j = open(&path);
    assert_eq!(state_of(&j, "old-pages"), OperationState::Succeeded);
    assert!(
        unauthenticated_only(&j.check().unwrap().problems).is_empty(),
        "the journal checks clean"
    );
    drop(j);
    assert_eq!(page_size(&path), 4096);
}

/// The WAL is extended with zeros when the journal opens (so that
/// appending frames changes no file metadata); SQLite reads such a WAL back
/// as it was written: a copy of the files taken while the journal is open
/// (no WAL index, so SQLite recovers from the WAL) holds every operation
/// made durable, and opens and writes as any journal.
#[test]
fn a_preallocated_wal_reads_back_every_durable_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let wal = dir.path().join("journal.db-wal");
    let j = open(&path);
    // 4,000 frames and an eighth more, of 2,048 bytes and a 24-byte header.
    let preallocated = 32 + 4500 * (2048 + 24);
    assert!(std::fs::metadata(&wal).unwrap().len() >= preallocated);
    let l = lease("a", 100);
    for i in 0..50 {
        let order_id = format!("pre-{i}");
        j.open_to_send(&op(&order_id, b"{\"amount\":1}"), &l, 1)
            .unwrap();
        if i % 2 == 0 {
            j.finish(&order_id, &l, OperationState::Succeeded, None, 0, 2)
                .unwrap();
        }
    }
    assert_eq!(
        std::fs::metadata(&wal).unwrap().len(),
        preallocated,
        "the frames went into the preallocated bytes"
    );
    let copy_dir = tempfile::tempdir().unwrap();
    let copy = copy_with_wal(&path, copy_dir.path());
    drop(j);
    let c = open(&copy);
    for i in 0..50 {
        let want = if i % 2 == 0 {
            OperationState::Succeeded
        } else {
            OperationState::InFlight
        };
        assert_eq!(state_of(&c, &format!("pre-{i}")), want);
    }
    c.open_to_send(&op("after-copy", b"{}"), &l, 3).unwrap();
    drop(c);
    // Closed cleanly: SQLite removed the WAL. Opened again, the new WAL is
    // all zeros, header included, until the first write puts a header.
    let c = open(&copy);
    let copy_wal = copy_dir.path().join("journal.db-wal");
    let head = std::fs::read(&copy_wal).unwrap();
    assert!(head.len() as u64 >= preallocated && head[..32].iter().all(|b| *b == 0));
    assert_eq!(state_of(&c, "after-copy"), OperationState::InFlight);
    c.open_to_send(&op("after-reopen", b"{}"), &l, 4).unwrap();
    let again_dir = tempfile::tempdir().unwrap();
    let again = copy_with_wal(&copy, again_dir.path());
    drop(c);
    let a = open(&again);
    assert_eq!(state_of(&a, "after-copy"), OperationState::InFlight);
    assert_eq!(state_of(&a, "after-reopen"), OperationState::InFlight);
}

#[test]
fn newer_schema_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    {
        let j = open(&path);
        j.open(&op("o", b"x"), &lease("a", 100), 1).unwrap();
    }
    {
        let raw = rusqlite::Connection::open(&path).unwrap();
        raw.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
            [SCHEMA_VERSION + 1],
        )
        .unwrap();
    }
    let bytes = std::fs::read(&path).unwrap();
    let err = open_err(&path);
    assert_journal_error(&err, &path, "newer");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn garbage_file_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let mut garbage = vec![0u8; 8192];
    getrandom::getrandom(&mut garbage).unwrap();
    garbage[..4].copy_from_slice(b"junk");
    std::fs::write(&path, &garbage).unwrap();
    assert_journal_error(&open_err(&path), &path, "not a SQLite database");
    assert_eq!(std::fs::read(&path).unwrap(), garbage);
}

#[test]
fn foreign_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db");
    {
        let raw = rusqlite::Connection::open(&path).unwrap();
        raw.execute_batch(
            "CREATE TABLE customers (id INTEGER PRIMARY KEY); INSERT INTO customers VALUES (1);",
        )
        .unwrap();
    }
    let bytes = std::fs::read(&path).unwrap();
    assert_journal_error(&open_err(&path), &path, "not a payidem journal");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn unopenable_paths_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("regular-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let under_file = file.join("journal.db");
    assert_journal_error(&open_err(&under_file), &under_file, "cannot open");
    let missing_dir = dir.path().join("missing").join("journal.db");
    assert_journal_error(&open_err(&missing_dir), &missing_dir, "cannot open");
    let in_proc = Path::new("/proc/payidem-journal-test.db");
    assert_eq!(open_err(in_proc).code(), ErrorCode::Journal);
    assert!(!in_proc.exists());
    // An in-memory database is no journal: never a silent fallback.
    assert_journal_error(
        &open_err(Path::new(":memory:")),
        Path::new(":memory:"),
        "WAL",
    );
}

#[test]
fn lock_held_past_the_busy_timeout_is_a_journal_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let options = SqliteJournalOptions {
        busy_timeout: Duration::from_millis(50),
        ..SqliteJournalOptions::default()
    };
    let j = SqliteJournal::open(&path, options.clone()).unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute_batch("BEGIN IMMEDIATE").unwrap();

    let err = j.open(&op("o", b"x"), &lease("a", 100), 1).unwrap_err();
    assert_journal_error(&err, &path, "locked");
    assert!(err.message().contains("order id \"o\""), "{err}");
    let err = SqliteJournal::open(&path, options).unwrap_err();
    assert_journal_error(&err, &path, "locked");

    raw.execute_batch("COMMIT").unwrap();
    assert!(matches!(
        j.open(&op("o", b"x"), &lease("a", 100), 1).unwrap(),
        Opened::Created(_)
    ));
}

#[test]
fn errors_never_carry_the_body() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let j = open(&path);
    let secret_body = b"card=4111111111111111";
    j.open(&op("o", secret_body), &lease("a", 100), 1).unwrap();
    let mut other = op("o", secret_body);
    other.method = "PUT".into();
    for err in [
        j.open(&other, &lease("a", 100), 2).unwrap_err(),
        j.open(&op("o", secret_body), &lease("b", 100), 2)
            .unwrap_err(),
    ] {
        assert!(!err.to_string().contains("4111"), "{err}");
        assert!(!format!("{err:?}").contains("4111"), "{err:?}");
    }
}

/// A journal as the first schema (version 1) wrote it: today's file with
/// the reconciliations and clock offset tables and the MAC column dropped
/// and the version set back.
fn make_version_1(path: &Path) {
    {
        let j = open(path);
        let l = lease("a", 100);
        j.open(&op("old", b"{\"amount\":1}"), &l, 1).unwrap();
        j.record_attempt("old", &l, 1, 2).unwrap();
        j.finish("old", &l, OperationState::Unknown, None, 0, 3)
            .unwrap();
    }
    let raw = rusqlite::Connection::open(path).unwrap();
    raw.execute_batch(
        "DROP TABLE reconciliations;
         DROP TABLE clock_offsets;
         DROP TABLE seal;
         ALTER TABLE operations DROP COLUMN row_mac;
         ALTER TABLE operations DROP COLUMN platform;
         ALTER TABLE operations DROP COLUMN key_id;
         ALTER TABLE operations DROP COLUMN state_mac;
         DROP INDEX operations_unsettled;
         CREATE INDEX operations_by_state ON operations (state, created_at);
         UPDATE meta SET value = 1 WHERE key = 'schema_version';",
    )
    .unwrap();
}

#[test]
fn a_version_1_journal_migrates_and_keeps_its_operations() {
    assert_eq!(SCHEMA_VERSION, 5);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    make_version_1(&path);

    let j = open(&path);
    let report = j.check().unwrap();
    assert_eq!(report.migrated_from, Some(1));
    assert_eq!(report.schema_version, Some(SCHEMA_VERSION));
    // Sound but for what a journal without a key is: unsealed, no MACs.
    assert!(
        unauthenticated_only(&report.problems).is_empty(),
        "{report:?}"
    );
    let old = j.get("old").unwrap().unwrap();
    assert_eq!((old.state, old.attempts), (OperationState::Unknown, 1));
    j.reconcile("old", OperationState::Succeeded, "alice", "ref", 10)
        .unwrap();
    drop(j);
    // Reopened: nothing left to migrate, the reconciliation is on disk.
    let j = open(&path);
    assert_eq!(j.check().unwrap().migrated_from, None);
    assert_eq!(j.reconciliations(Some("old")).unwrap().len(), 1);
    assert_eq!(state_of(&j, "old"), OperationState::Succeeded);
}

/// `problems` without those every journal opened without a key has (it is
/// not sealed, its rows carry no MAC).
fn unauthenticated_only(problems: &[String]) -> Vec<&String> {
    problems
        .iter()
        .filter(|p| !p.contains("not sealed") && !p.contains("carries no integrity MAC"))
        .collect()
}

fn state_of(j: &SqliteJournal, order_id: &str) -> OperationState {
    j.get(order_id).unwrap().unwrap().state
}

#[test]
fn check_names_every_bad_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let j = open(&path);
    for id in ["good", "tampered", "bad-state"] {
        j.open(&op(id, b"{\"amount\":1}"), &lease("a", 100), 1)
            .unwrap();
    }
    j.reconcile("good", OperationState::Succeeded, "alice", "ref", 100)
        .unwrap();
    {
        let raw = rusqlite::Connection::open(&path).unwrap();
        raw.execute_batch(
            "UPDATE operations SET body = X'00' WHERE order_id = 'tampered';
             UPDATE operations SET state = 'weird' WHERE order_id = 'bad-state';
             UPDATE reconciliations SET state = 'unknown';",
        )
        .unwrap();
    }
    let report = j.check().unwrap();
    assert_eq!((report.operations, report.reconciliations), (3, 1));
    assert!(!report.is_sound());
    let problems = unauthenticated_only(&report.problems);
    assert_eq!(problems.len(), 3, "{:?}", report.problems);
    let all = report.problems.join("\n");
    for words in [
        "\"tampered\": the body does not match",
        "\"bad-state\": unknown state",
        "reconciliation of order id \"good\"",
    ] {
        assert!(all.contains(words), "{words:?} missing: {all}");
    }
    // The good row still reads back.
    assert_eq!(state_of(&j, "good"), OperationState::Succeeded);
}
