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
//! (µs) for the whole run, and `commit_siblings=M` its `commit_siblings`
//! (5 unless given).
//!
//! `profile` says where the time of the PostgreSQL runs goes, per settled
//! operation: CPU of this process (the client, its callers and the mock),
//! CPU of the server's backends serving the run's database, statements
//! executed and their server time (`pg_stat_statements`, which the bench
//! then loads), transactions, WAL flushes, and the updates of
//! `payidem_operations` that were HOT (`pg_stat_user_tables`).
//!
//! `cargo bench -p payidem-e2e --bench postgres_journal` (or `-- 1 8` for
//! some concurrencies only, `-- 16 fleet commit_delay=200 profile`)

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

/// The value of the command-line argument `NAME=value`, if given.
fn setting<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::args().find_map(|a| {
        a.strip_prefix(name)
            .and_then(|v| v.strip_prefix('='))
            .and_then(|v| v.parse().ok())
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

/// CPU seconds (user + system) of process `pid` (`self` for this one)
/// from `/proc/<pid>/stat`; 0 when it is gone.
fn cpu_seconds(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces): utime and
    // stime are the 12th and 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<f64>().ok()))
        .sum();
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// The server processes connected to database `db`.
fn backends(server: &PgServer, db: &str) -> Vec<String> {
    server
        .connect("postgres")
        .query(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1",
            &[&db],
        )
        .map(|rows| {
            rows.iter()
                .map(|r| r.get::<_, i32>(0).to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Where the time of the PostgreSQL runs went, summed over the rounds.
#[derive(Default)]
struct Profile {
    /// CPU of this process during the SQLite runs (the whole journal is
    /// in it).
    sqlite_cpu: f64,
    client_cpu: f64,
    server_cpu: f64,
    wall: f64,
    /// (statement, calls, milliseconds of server time).
    statements: Vec<(String, i64, f64)>,
    xacts: i64,
    /// Rows of `payidem_operations` updated, and how many of those
    /// updates were HOT (the new row version on the same page, no index
    /// entry written).
    updates: i64,
    hot_updates: i64,
}

impl Profile {
    fn print(&self, ops: f64) {
        println!(
            "  per op: wall {:.0} µs, client CPU {:.0} µs (callers, journal, mock), \
             server backends CPU {:.0} µs, transactions {:.2}; SQLite runs: CPU {:.0} µs",
            self.wall * 1e6 / ops,
            self.client_cpu * 1e6 / ops,
            self.server_cpu * 1e6 / ops,
            self.xacts as f64 / ops,
            self.sqlite_cpu * 1e6 / ops
        );
        let calls: i64 = self.statements.iter().map(|s| s.1).sum();
        // `SET LOCAL` goes in one message with its BEGIN.
        let batched: i64 = (self.statements.iter())
            .filter(|s| s.0.starts_with("SET LOCAL"))
            .map(|s| s.1)
            .sum();
        let ms: f64 = self.statements.iter().map(|s| s.2).sum();
        println!(
            "  payidem_operations: {:.2} row updates/op, {:.0} % of them HOT",
            self.updates as f64 / ops,
            100.0 * self.hot_updates as f64 / (self.updates.max(1)) as f64
        );
        println!(
            "  statements per op {:.2}, round trips {:.2}, server time in them {:.0} µs/op:",
            calls as f64 / ops,
            (calls - batched) as f64 / ops,
            ms * 1e3 / ops
        );
        // Schema set-up and connection set-up run once per run: left out.
        for (query, calls, ms) in self.statements.iter().filter(|s| s.1 as f64 / ops >= 0.05) {
            let query: String = query.split_whitespace().collect::<Vec<_>>().join(" ");
            let query: String = query.chars().take(90).collect();
            println!(
                "    {:>6.2}/op {:>7.1} µs/op  {query}",
                *calls as f64 / ops,
                ms * 1e3 / ops
            );
        }
    }
}

/// Adds `pg_stat_statements` of database `db` to `profile`.
fn add_statements(server: &PgServer, db: &str, profile: &mut Profile) {
    let mut conn = server.connect("postgres");
    let rows = conn
        .query(
            "SELECT s.query, s.calls, s.total_exec_time FROM pg_stat_statements s \
             JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1 ORDER BY s.calls DESC",
            &[&db],
        )
        .expect("pg_stat_statements reads");
    for r in rows {
        let (query, calls, ms): (String, i64, f64) = (r.get(0), r.get(1), r.get(2));
        match profile.statements.iter_mut().find(|s| s.0 == query) {
            Some(s) => {
                s.1 += calls;
                s.2 += ms;
            }
            None => profile.statements.push((query, calls, ms)),
        }
    }
    profile.statements.sort_by_key(|s| std::cmp::Reverse(s.1));
    profile.xacts += conn
        .query_one(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1",
            &[&db],
        )
        .map_or(0, |r| r.get(0));
    let (updates, hot) = server
        .connect(db)
        .query_one(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables \
             WHERE relname = 'payidem_operations'",
            &[],
        )
        .map_or((0, 0), |r| (r.get(0), r.get(1)));
    profile.updates += updates;
    profile.hot_updates += hot;
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
    let commit_delay: Option<i32> = setting("commit_delay");
    let commit_siblings: i32 = setting("commit_siblings").unwrap_or(5);
    let profiling = std::env::args().any(|a| a == "profile");
    let mock = start_mock();
    let mut server = PgServer::start();
    if profiling {
        let mut admin = server.connect("postgres");
        // Utility statements (BEGIN, SET, COMMIT) are tracked by default.
        admin
            .batch_execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
            .expect("pg_stat_statements is configured");
        drop(admin);
        server
            .stop_immediate()
            .and_then(|()| server.start_again())
            .expect("the server restarts with pg_stat_statements");
        server
            .connect("postgres")
            .batch_execute("CREATE EXTENSION pg_stat_statements")
            .expect("pg_stat_statements is loaded");
    }
    if let Some(us) = commit_delay {
        let mut admin = server.connect("postgres");
        // ALTER SYSTEM runs outside a transaction: one statement a call.
        admin
            .batch_execute(&format!("ALTER SYSTEM SET commit_delay = {us}"))
            .and_then(|()| {
                admin.batch_execute(&format!(
                    "ALTER SYSTEM SET commit_siblings = {commit_siblings}"
                ))
            })
            .and_then(|()| admin.batch_execute("SELECT pg_reload_conf()"))
            .expect("commit_delay is set");
        println!("server commit_delay = {us} µs, commit_siblings = {commit_siblings}");
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
        let mut profile = Profile::default();
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
            let sqlite_before = cpu_seconds("self");
            sqlite.push(client_rate(&c, threads, &format!("sq-{tag}")));
            profile.sqlite_cpu += cpu_seconds("self") - sqlite_before;
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
            let pids = if profiling {
                backends(&server, &name)
            } else {
                Vec::new()
            };
            let server_cpu = |pids: &[String]| pids.iter().map(|p| cpu_seconds(p)).sum::<f64>();
            let (client_before, server_before) = (cpu_seconds("self"), server_cpu(&pids));
            let started = Instant::now();
            pg.push(if instances == 1 {
                client_rate(&clients[0], threads, &format!("pg-{tag}"))
            } else {
                fleet_rate(&clients, per, &format!("pg-{tag}"))
            });
            if profiling {
                profile.wall += started.elapsed().as_secs_f64();
                profile.client_cpu += cpu_seconds("self") - client_before;
                // Backends opened during the run count from 0 (those it
                // closed again are missed: the pool keeps up to 16).
                let now = backends(&server, &name);
                profile.server_cpu += server_cpu(&now) - server_before;
            }
            let after = stats(&journals);
            commits += after.0 - before.0;
            durable += after.1 - before.1;
            drop((clients, journals));
            flushes += wal_syncs_after_disconnect(&server, &name) - wal_before;
            if profiling {
                add_statements(&server, &name, &mut profile);
            }
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
        if profiling {
            profile.print(ops);
        }
    }
}
