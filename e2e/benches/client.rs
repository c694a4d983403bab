//! Settled operations per second of the payidem client against the mock on
//! loopback, journal on disk (SQLite in a temporary directory), against the
//! anchor measured in the same run with the same number of threads: the same
//! signed POSTs sent with ureq and no journal, the agent set up as the
//! client's (its pool and resolver; see `load::Anchor`), and against a ureq
//! agent with its defaults (the anchor before 2026-12-03 19:00). 1, 4, 16 and
//! 64 concurrent callers (one client shared by all threads; one ureq agent
//! shared by all threads). The same client with the memory journal (nothing
//! durable) shows what the client costs without its journal; the same client
//! with the "fsync floor" (`payidem_e2e::fsync_floor`: the memory journal
//! plus a group-committed `fdatasync` of an append-only log before each first
//! attempt) shows the ceiling of any durable journal on this disk. Then fsync
//! calls per settled operation with 1 and 16 callers,
//! counted with strace on `payidem-fsync-probe` (skipped when strace is
//! missing). Last, the journal alone (no HTTP): the same two writes a call
//! makes per operation (`open_to_send`, then `finish`) on the
//! SQLite journal and on the fsync floor, with the process's CPU time per
//! operation, which a loaded machine blurs less than the rates.
//!
//! `cargo bench -p payidem-e2e --bench client` (or `-- 1 16` for some
//! concurrencies only)

use std::process::Command;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use payidem::journal::{
    Journal, JournalKey, JournalScope, Lease, SqliteJournal, SqliteJournalOptions,
};
use payidem::operation::{FrozenOperation, OperationState, Response};
use payidem::JournalChoice;
use payidem_e2e::load::{median, rate, raw_signed_post_rate, Anchor};
use payidem_e2e::{client, start_mock, OwnedSpec};
use payidem_mock::{MockServer, DEFAULT_KEY_ID, DEFAULT_SECRET};

const OPS: usize = 1200;
const ROUNDS: usize = 3;
/// Operations per run of the journal alone, per thread (at most
/// [`ALONE_MAX`]): one caller waits for an fsync per operation.
const ALONE_PER_THREAD: usize = 250;
const ALONE_MAX: usize = 3000;

#[derive(Clone, Copy)]
enum Kind {
    Sqlite,
    Memory,
    Floor,
}

fn payidem_rate(mock: &MockServer, threads: usize, round: &str, kind: Kind) -> f64 {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let journal = match kind {
        Kind::Sqlite => JournalChoice::Sqlite(dir.path().join("journal.sqlite3")),
        Kind::Memory => JournalChoice::Memory,
        Kind::Floor => JournalChoice::Custom(std::sync::Arc::new(
            payidem_e2e::fsync_floor::FsyncFloor::create(&dir.path().join("floor.log"))
                .expect("the floor's log"),
        )),
    };
    let c = client(&mock.url(), journal);
    rate(OPS, threads, &|i| {
        let spec = OwnedSpec::payment(&format!("pi-{round}-{i}"), 1000 + (i % 400) as u64, true);
        let outcome = c.execute(&spec.spec()).expect("the payment settles");
        assert_eq!(outcome.response.status, 201);
    })
}

/// CPU time (user and system) of this process so far, in seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// The journal alone, as a client's calls write it: per operation
/// `open_to_send` (durable before it returns) then `finish`
/// with a payment's answer, from `threads` threads. Settled operations per
/// second, and CPU microseconds per operation of the whole process (the
/// mock idles meanwhile).
fn journal_alone(kind: Kind, threads: usize, round: &str) -> (f64, f64) {
    let ops = (ALONE_PER_THREAD * threads).min(ALONE_MAX);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let journal: Arc<dyn Journal> = match kind {
        Kind::Sqlite => Arc::new(
            SqliteJournal::open(
                dir.path().join("journal.sqlite3"),
                SqliteJournalOptions {
                    journal_key: Some(JournalKey::derive_from_secret(DEFAULT_SECRET.as_bytes())),
                    scope: Some(JournalScope {
                        platform: "http://127.0.0.1:1".into(),
                        key_id: DEFAULT_KEY_ID.into(),
                    }),
                    ..SqliteJournalOptions::default()
                },
            )
            .expect("the journal opens"),
        ),
        Kind::Floor => Arc::new(
            payidem_e2e::fsync_floor::FsyncFloor::create(&dir.path().join("floor.log"))
                .expect("the floor's log"),
        ),
        Kind::Memory => Arc::new(payidem::journal::MemoryJournal::new()),
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs();
    let cpu = cpu_seconds();
    let ops_per_sec = rate(ops, threads, &|i| {
        let spec = OwnedSpec::payment(&format!("alone-{round}-{i}"), 1000 + (i % 400) as u64, true);
        let operation = FrozenOperation {
            order_id: spec.order_id.clone(),
            idempotency_key: format!("alone-{round}-{i}-key"),
            method: "POST".into(),
            path: spec.path.clone(),
            body_sha256: payidem::protocol::body_sha256_hex(&spec.body),
            body: spec.body.clone(),
            status_path: spec.status_path.clone(),
        };
        let lease = Lease {
            owner: format!("alone-{round}-{i}-owner"),
            expires_at: now + 60,
        };
        journal
            .open_to_send(&operation, &lease, now)
            .expect("the operation opens");
        let answer = Response {
            status: 201,
            headers: vec![("content-type".into(), "application/json".into())],
            body: format!(
                r#"{{"id":"pay_{i:016}","order_id":"{}","status":"succeeded"}}"#,
                spec.order_id
            )
            .into_bytes(),
            replayed: false,
        };
        journal
            .finish(
                &spec.order_id,
                &lease,
                OperationState::Succeeded,
                Some(&answer),
                1,
                now,
            )
            .expect("the operation finishes");
    });
    let cpu_per_op = (cpu_seconds() - cpu) / ops as f64 * 1e6;
    (ops_per_sec, cpu_per_op)
}

/// fsync + fdatasync calls in one strace'd run of the probe.
fn syncs(probe: &str, ops: usize, threads: usize) -> Option<u64> {
    let out = Command::new("strace")
        .args([
            "-f",
            "-c",
            "-e",
            "trace=fsync,fdatasync",
            probe,
            &ops.to_string(),
            &threads.to_string(),
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let total = text.lines().find(|l| l.trim_end().ends_with("total"))?;
    total.split_whitespace().nth(3)?.parse().ok()
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
        vec![1, 4, 16, 64]
    } else {
        levels
    };
    let mock = start_mock();
    println!(
        "payidem client vs. raw signed ureq POSTs, {OPS} operations per run, median of {ROUNDS}"
    );
    println!("{:<44} {:>10}", "run", "ops/s");
    for &threads in &levels {
        let mut ours = Vec::new();
        let mut raw = Vec::new();
        let mut plain = Vec::new();
        let mut memory = Vec::new();
        let mut floor = Vec::new();
        for round in 0..ROUNDS {
            let tag = format!("t{threads}r{round}");
            raw.push(raw_signed_post_rate(
                &mock,
                OPS,
                threads,
                &tag,
                Anchor::Tuned,
            ));
            ours.push(payidem_rate(&mock, threads, &tag, Kind::Sqlite));
            floor.push(payidem_rate(
                &mock,
                threads,
                &format!("{tag}f"),
                Kind::Floor,
            ));
            memory.push(payidem_rate(
                &mock,
                threads,
                &format!("{tag}m"),
                Kind::Memory,
            ));
            let tag = format!("{tag}d");
            plain.push(raw_signed_post_rate(
                &mock,
                OPS,
                threads,
                &tag,
                Anchor::UreqDefaults,
            ));
        }
        let (ours, raw, plain, memory) = (median(ours), median(raw), median(plain), median(memory));
        let floor = median(floor);
        println!(
            "{:<44} {:>10.0}",
            format!("ureq, signed, no journal, {threads} thread(s)"),
            raw
        );
        println!(
            "{:<44} {:>10.0}",
            format!("payidem client, SQLite journal, {threads} thread(s)"),
            ours
        );
        println!("{:<44} {:>10.2}", "  ratio payidem / raw", ours / raw);
        println!(
            "{:<44} {:>10.0}",
            format!("payidem client, memory journal, {threads} thread(s)"),
            memory
        );
        println!(
            "{:<44} {:>10.2}",
            "  ratio memory journal / raw",
            memory / raw
        );
        println!(
            "{:<44} {:>10.0}",
            format!("payidem client, fsync floor, {threads} thread(s)"),
            floor
        );
        println!("{:<44} {:>10.2}", "  ratio fsync floor / raw", floor / raw);
        println!(
            "{:<44} {:>10.0}",
            format!("ureq defaults, signed, no journal, {threads} thread(s)"),
            plain
        );
        println!(
            "{:<44} {:>10.2}",
            "  ratio payidem / ureq defaults",
            ours / plain
        );
    }
    println!(
        "journal alone (no HTTP): open_to_send + finish, {ALONE_PER_THREAD} operations per thread (at most {ALONE_MAX}) per run, median of {ROUNDS}"
    );
    println!("{:<44} {:>10} {:>12}", "run", "ops/s", "CPU us/op");
    for &threads in &levels {
        let mut sqlite = (Vec::new(), Vec::new());
        let mut floor = (Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            let (rate, cpu) = journal_alone(Kind::Sqlite, threads, &format!("t{threads}r{round}"));
            sqlite.0.push(rate);
            sqlite.1.push(cpu);
            let (rate, cpu) = journal_alone(Kind::Floor, threads, &format!("t{threads}r{round}f"));
            floor.0.push(rate);
            floor.1.push(cpu);
        }
        let (s_rate, s_cpu) = (median(sqlite.0), median(sqlite.1));
        let (f_rate, f_cpu) = (median(floor.0), median(floor.1));
        println!(
            "{:<44} {:>10.0} {:>12.1}",
            format!("SQLite journal alone, {threads} thread(s)"),
            s_rate,
            s_cpu
        );
        println!(
            "{:<44} {:>10.0} {:>12.1}",
            format!("fsync floor alone, {threads} thread(s)"),
            f_rate,
            f_cpu
        );
        println!("{:<44} {:>10.2}", "  ratio SQLite / floor", s_rate / f_rate);
    }
    let probe = env!("CARGO_BIN_EXE_payidem-fsync-probe");
    for (threads, small) in [(1, 200), (16, 800)] {
        match (
            syncs(probe, small, threads),
            syncs(probe, 2 * small, threads),
        ) {
            (Some(a), Some(b)) => println!(
                "fsync+fdatasync, {threads} thread(s): {a} for {small} operations, {b} for {}: \
                 {:.3} per settled operation",
                2 * small,
                (b.saturating_sub(a)) as f64 / small as f64
            ),
            _ => println!("fsync count skipped: strace is not available"),
        }
    }
}
