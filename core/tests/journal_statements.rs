//! The cost of the journal's hot path, counted rather than timed: the
//! statements PostgreSQL runs for `open_to_send`, `record_attempt` and
//! `finish` (read from the server's `log_statement = all` log), and the
//! fsyncs SQLite's group commit makes for them.

use payidem::journal::{
    Journal, JournalKey, Lease, PostgresJournal, PostgresJournalOptions, SqliteJournal,
    SqliteJournalOptions,
};
use payidem::operation::{OperationState, Response};

#[path = "../../e2e/src/pg.rs"]
mod pg;

mod fixtures;
use fixtures::{now, op};

fn lease() -> Lease {
    Lease {
        owner: "me".into(),
        expires_at: now() + 60,
    }
}

fn response() -> Response {
    Response {
        status: 201,
        headers: vec![],
        body: b"{}".to_vec(),
        replayed: false,
    }
}

/// Statements logged between `MARK <name>` markers, by name.
fn statements_between_marks(log: &str) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for line in log.lines() {
        if let Some(i) = line.find("MARK ") {
            counts.push((line[i + 5..].trim_end_matches('\'').to_owned(), 0));
        } else if line.contains("statement: ") || line.contains("execute ") {
            if let Some(last) = counts.last_mut() {
                last.1 += 1;
            }
        }
    }
    counts
}

#[test]
fn each_hot_path_call_is_one_transaction_of_one_statement_on_postgres() {
    // A server of its own: its statement log is switched on.
    let server = pg::PgServer::start();
    let url = server.create_db("statements");
    let mut admin = server.connect("postgres");
    // Logged from now on: this session's marks, and every session the
    // journal opens on its database (no reload to wait for).
    admin
        .batch_execute(
            "SET log_statement = 'all'; \
             ALTER DATABASE statements SET log_statement = 'all'",
        )
        .unwrap();
    let j = PostgresJournal::connect(
        &url,
        PostgresJournalOptions {
            journal_key: Some(JournalKey::new(&[7u8; 32]).unwrap()),
            ..PostgresJournalOptions::default()
        },
    )
    .unwrap();
    let lease = lease();
    let mut mark = |name: &str| {
        admin
            .batch_execute(&format!("SELECT 'MARK {name}'"))
            .unwrap()
    };
    mark("open_to_send");
    j.open_to_send(&op("o-1"), &lease, now()).unwrap();
    mark("record_attempt");
    j.record_attempt("o-1", &lease, 2, now()).unwrap();
    mark("finish");
    let settled = OperationState::Succeeded;
    j.finish("o-1", &lease, settled, Some(&response()), 0, now())
        .unwrap();
    mark("end");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let counts = statements_between_marks(&server.log());
    // A durable write opening a new operation: its INSERT alone, its own
    // transaction, setting its synchronous_commit on itself (the row is
    // read only when the insert meets one). The others need no flush: the
    // UPDATE alone, its own transaction, guarded by the row as this handle
    // last wrote it (read only when the guard meets another); the first
    // such write on a connection sets its session's synchronous_commit
    // off, once.
    let want = [("open_to_send", 1), ("record_attempt", 2), ("finish", 1)];
    for (name, n) in want {
        let got = counts.iter().find(|(m, _)| m == name).map(|c| c.1);
        assert_eq!(got, Some(n), "{name}: {counts:?}");
    }
    let log = server.log();
    let section = |name: &str| -> String {
        let from = log.find(&format!("MARK {name}")).expect("marked");
        let rest = &log[from..];
        let to = rest[5..].find("MARK ").map_or(rest.len(), |i| i + 5);
        rest[..to].to_owned()
    };
    let open_to_send = section("open_to_send");
    assert!(open_to_send.contains("set_config('synchronous_commit', 'on', true)"));
    assert!(!open_to_send.contains("BEGIN"));
    assert!(section("record_attempt").contains("SET synchronous_commit TO off"));
    assert!(!section("finish").contains("BEGIN"));
}

#[test]
fn only_first_attempts_and_reconciliations_pay_an_fsync_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let j = SqliteJournal::open(
        dir.path().join("j.sqlite3"),
        SqliteJournalOptions {
            journal_key: Some(JournalKey::new(&[7u8; 32]).unwrap()),
            ..SqliteJournalOptions::default()
        },
    )
    .unwrap();
    let lease = lease();
    let fsyncs = |f: &dyn Fn()| {
        let before = j.durability_stats().fsyncs;
        f();
        j.durability_stats().fsyncs - before
    };
    let settled = OperationState::Succeeded;
    let r = response();
    assert_eq!(
        fsyncs(&|| drop(j.open_to_send(&op("o-1"), &lease, now()).unwrap())),
        1
    );
    assert_eq!(
        fsyncs(&|| j.record_attempt("o-1", &lease, 2, now()).unwrap()),
        0
    );
    assert_eq!(
        fsyncs(&|| j
            .finish("o-1", &lease, settled, Some(&r), 0, now())
            .unwrap()),
        0
    );
    assert_eq!(
        fsyncs(&|| drop(j.open(&op("o-2"), &lease, now()).unwrap())),
        0
    );
    assert_eq!(
        fsyncs(&|| j.record_attempt("o-2", &lease, 1, now()).unwrap()),
        1
    );
    let unknown = OperationState::Unknown;
    assert_eq!(
        fsyncs(&|| j.finish("o-2", &lease, unknown, None, 0, now()).unwrap()),
        0
    );
    let reconciled = || {
        drop(
            j.reconcile("o-2", settled, "ops", "ticket-1", now())
                .unwrap(),
        )
    };
    assert_eq!(fsyncs(&reconciled), 1);
}
