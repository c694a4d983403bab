//! Settled operations per second with the PostgreSQL journal, against the
//! SQLite journal and raw signed POSTs (ureq, no journal) measured in the
//! same run, at 1, 8 and 32 concurrent callers (one client shared by all
//! threads), against the mock on loopback. PostgreSQL is a throwaway server
//! started here (e2e/src/pg.rs; unix socket, default `fsync=on`), a new
//! database per run. Also per settled operation: commits and synchronous
//! commits (the journal's counters) and WAL flushes (`pg_stat_wal.wal_sync`),
//! which show the server's group commit at concurrency.
//!
//! Concurrent callers of one client share the journal's transactions
//! (group commit). `fleet` adds a row of 3 instances (clients with a
//! journal handle each) × 8 callers on one database, against SQLite and
//! raw at 24 callers; `commit_delay=N` sets the server's `commit_delay`
//! (µs; `commit_siblings` stays 5) for the whole run.
//!
//! `cargo bench -p payidem-e2e --bench postgres_journal` (or `-- 1 8` for
//! some concurrencies only, `-- 16 fleet commit_delay=200`)

use std::sync::atomic::{AtomicUsize, Ordering};
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

/// Settled operations per second of `per` callers on each of `clients`
/// (caller `t` uses client `t % clients.len()`).
fn fleet_rate(clients: &[payidem::Client], per: usize, tag: &str) -> f64 {
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        for t in 0..clients.len() * per {
            let (next, client) = (&next, &clients[t % clients.len()]);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= OPS {
                    break;
                }
                let spec = OwnedSpec::payment(&format!("{tag}-{i}"), 1000 + (i % 400) as u64, true);
                let outcome = client.execute(&spec.spec()).expect("the payment settles");
                assert_eq!(outcome.response.status, 201);
            });
        }
    });
    OPS as f64 / started.elapsed().as_secs_f64()
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
    let fleet = std::env::args().any(|a| a == "fleet");
    let commit_delay: Option<i32> =
        std::env::args().find_map(|a| a.strip_prefix("commit_delay=").and_then(|v| v.parse().ok()));
    let mock = start_mock();
    let server = PgServer::start();
    if let Some(us) = commit_delay {
        let mut admin = server.connect("postgres");
        // ALTER SYSTEM runs outside a transaction: one statement a call.
        admin
            .batch_execute(&format!("ALTER SYSTEM SET commit_delay = {us}"))
            .and_then(|()| admin.batch_execute("SELECT pg_reload_conf()"))
            .expect("commit_delay is set");
        println!("server commit_delay = {us} µs, commit_siblings = 5");
    }
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
    let rows: Vec<(usize, usize)> = levels
        .iter()
        .map(|&t| (1, t))
        .chain(fleet.then_some((3, 8)))
        .collect();
    for &(instances, per) in &rows {
        let threads = instances * per;
        let (mut raw, mut sqlite, mut pg) = (Vec::new(), Vec::new(), Vec::new());
        let (mut commits, mut durable, mut flushes) = (0u64, 0u64, 0i64);
        for round in 0..ROUNDS {
            let tag = format!("t{instances}x{per}r{round}");
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
            let url = server.create_db(&name);
            let journals: Vec<Arc<PostgresJournal>> = (0..instances)
                .map(|_| {
                    Arc::new(
                        PostgresJournal::connect(&url, PostgresJournalOptions::default())
                            .expect("the journal opens"),
                    )
                })
                .collect();
            let clients: Vec<payidem::Client> = journals
                .iter()
                .map(|j| client(&mock.url(), JournalChoice::Custom(j.clone())))
                .collect();
            let stats = |js: &[Arc<PostgresJournal>]| {
                js.iter().fold((0, 0), |(c, d), j| {
                    let s = j.commit_stats();
                    (c + s.commits, d + s.durable_commits)
                })
            };
            let (before, wal_before) = (stats(&journals), wal_syncs(&server));
            pg.push(if instances == 1 {
                client_rate(&clients[0], threads, &format!("pg-{tag}"))
            } else {
                fleet_rate(&clients, per, &format!("pg-{tag}"))
            });
            let after = stats(&journals);
            commits += after.0 - before.0;
            durable += after.1 - before.1;
            drop((clients, journals));
            flushes += wal_syncs_after_disconnect(&server, &name) - wal_before;
        }
        let ops = (OPS * ROUNDS) as f64;
        let (raw, sqlite, pg) = (median(raw), median(sqlite), median(pg));
        println!(
            "{:<10} {:>10.0} {:>10.0} {:>10.0} {:>9.2} {:>9.2} {:>12.2} {:>12.2} {:>11.2}",
            if instances == 1 {
                threads.to_string()
            } else {
                format!("{instances}x{per}")
            },
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
