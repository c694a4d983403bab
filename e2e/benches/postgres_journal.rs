//! Settled operations per second with the PostgreSQL journal, against the
//! SQLite journal and raw signed POSTs (ureq, no journal) measured in the
//! same run, at 1, 8 and 32 concurrent callers (one client shared by all
//! threads), against the mock on loopback. PostgreSQL is a throwaway server
//! started here (e2e/src/pg.rs; unix socket, default `fsync=on`), a new
//! database per run. Also per settled operation: commits and synchronous
//! commits (the journal's counters) and WAL flushes (`pg_stat_wal.wal_sync`),
//! which show the server's group commit at concurrency.
//!
//! `cargo bench -p payidem-e2e --bench postgres_journal` (or `-- 1 8` for
//! some concurrencies only)

use std::sync::Arc;
use std::time::{Duration, Instant};

use payidem::journal::{PostgresJournal, PostgresJournalOptions};
use payidem::JournalChoice;
use payidem_e2e::load::{median, rate, raw_signed_post_rate, Anchor};
use payidem_e2e::pg::PgServer;
use payidem_e2e::{client, start_mock, OwnedSpec};

const OPS: usize = 1200;
const ROUNDS: usize = 3;

fn client_rate(client: &payidem::Client, threads: usize, tag: &str) -> f64 {
    rate(OPS, threads, &|i| {
        let spec = OwnedSpec::payment(&format!("{tag}-{i}"), 1000 + (i % 400) as u64, true);
        let outcome = client.execute(&spec.spec()).expect("the payment settles");
        assert_eq!(outcome.response.status, 201);
    })
}

/// `pg_stat_wal.wal_sync` as published now.
fn wal_syncs(server: &PgServer) -> i64 {
    server
        .connect("postgres")
        .query_one("SELECT wal_sync FROM pg_stat_wal", &[])
        .map_or(-1, |r| r.get(0))
}

/// [`wal_syncs`] once no backend is connected to `db` any more. A backend
/// publishes its statistics at most once a second while it works, and
/// always when it exits: read while the journal's connections are open, a
/// run shorter than a second would show none of its flushes (and the next
/// run would show them).
fn wal_syncs_after_disconnect(server: &PgServer, db: &str) -> i64 {
    let mut conn = server.connect("postgres");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let connected: i64 = conn
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1",
                &[&db],
            )
            .map_or(-1, |r| r.get(0));
        if connected == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    wal_syncs(server)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let levels: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let levels = if levels.is_empty() {
        vec![1, 8, 32]
    } else {
        levels
    };
    let mock = start_mock();
    let server = PgServer::start();
    println!(
        "PostgreSQL journal vs SQLite journal vs raw signed POSTs, {OPS} operations per run, \
         median of {ROUNDS}"
    );
    println!(
        "{:<10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>12} {:>12} {:>11}",
        "callers",
        "raw ops/s",
        "sqlite",
        "postgres",
        "pg/raw",
        "pg/sqlite",
        "commits/op",
        "sync/op",
        "WAL fl./op"
    );
    let mut db = 0;
    for &threads in &levels {
        let (mut raw, mut sqlite, mut pg) = (Vec::new(), Vec::new(), Vec::new());
        let (mut commits, mut durable, mut flushes) = (0u64, 0u64, 0i64);
        for round in 0..ROUNDS {
            let tag = format!("t{threads}r{round}");
            raw.push(raw_signed_post_rate(
                &mock,
                OPS,
                threads,
                &tag,
                Anchor::Tuned,
            ));
            let dir = tempfile::tempdir().expect("a temporary directory");
            let c = client(
                &mock.url(),
                JournalChoice::Sqlite(dir.path().join("journal.sqlite3")),
            );
            sqlite.push(client_rate(&c, threads, &format!("sq-{tag}")));
            db += 1;
            let name = format!("bench{db}");
            let journal = Arc::new(
                PostgresJournal::connect(
                    &server.create_db(&name),
                    PostgresJournalOptions::default(),
                )
                .expect("the journal opens"),
            );
            let c = client(&mock.url(), JournalChoice::Custom(journal.clone()));
            let (before, wal_before) = (journal.commit_stats(), wal_syncs(&server));
            pg.push(client_rate(&c, threads, &format!("pg-{tag}")));
            let after = journal.commit_stats();
            commits += after.commits - before.commits;
            durable += after.durable_commits - before.durable_commits;
            drop((c, journal));
            flushes += wal_syncs_after_disconnect(&server, &name) - wal_before;
        }
        let ops = (OPS * ROUNDS) as f64;
        let (raw, sqlite, pg) = (median(raw), median(sqlite), median(pg));
        println!(
            "{:<10} {:>10.0} {:>10.0} {:>10.0} {:>9.2} {:>9.2} {:>12.2} {:>12.2} {:>11.2}",
            threads,
            raw,
            sqlite,
            pg,
            pg / raw,
            pg / sqlite,
            commits as f64 / ops,
            durable as f64 / ops,
            flushes as f64 / ops
        );
    }
}
