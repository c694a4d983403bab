//! Settled operations per second of the payidem client against the mock on
//! loopback, journal on disk (SQLite in a temporary directory), against the
//! anchor measured in the same run with the same number of threads: the same
//! signed POSTs sent with ureq and no journal. 1, 4, 16 and 64 concurrent
//! callers (one client shared by all threads; one ureq agent shared by all
//! threads). Then fsync calls per settled operation with 1 and 16 callers,
//! counted with strace on `payidem-fsync-probe` (skipped when strace is
//! missing).
//!
//! `cargo bench -p payidem-e2e --bench client` (or `-- 1 16` for some
//! concurrencies only)

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use payidem::protocol::{NonceSource, OsNonceSource, Signer};
use payidem::JournalChoice;
use payidem_e2e::{client, payment_body, start_mock, OwnedSpec};
use payidem_mock::{MockServer, DEFAULT_KEY_ID, DEFAULT_SECRET};

const OPS: usize = 1200;
const ROUNDS: usize = 3;

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Runs `OPS` operations over `threads` threads; returns operations/s.
fn rate(threads: usize, op: &(dyn Fn(usize) + Sync)) -> f64 {
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= OPS {
                    break;
                }
                op(i);
            });
        }
    });
    OPS as f64 / started.elapsed().as_secs_f64()
}

fn payidem_rate(mock: &MockServer, threads: usize, round: &str) -> f64 {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let c = client(
        &mock.url(),
        JournalChoice::Sqlite(dir.path().join("journal.sqlite3")),
    );
    rate(threads, &|i| {
        let spec = OwnedSpec::payment(&format!("pi-{round}-{i}"), 1000 + (i % 400) as u64, true);
        let outcome = c.execute(&spec.spec()).expect("the payment settles");
        assert_eq!(outcome.response.status, 201);
    })
}

fn ureq_rate(mock: &MockServer, threads: usize, round: &str) -> f64 {
    let signer = Signer::new(DEFAULT_KEY_ID, DEFAULT_SECRET.as_bytes()).expect("a signer");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(5)))
        .build()
        .into();
    let url = format!("{}/v1/payments", mock.url());
    rate(threads, &|i| {
        let order = format!("raw-{round}-{i}");
        let body = payment_body(&order, 1000 + (i % 400) as u64);
        let key = format!("create-{order}");
        let signed = signer
            .sign_attempt(
                "POST",
                "/v1/payments",
                &key,
                &body,
                unix_now(),
                OsNonceSource.next_nonce(),
            )
            .expect("signs");
        let mut request = agent.post(&url).header("Content-Type", "application/json");
        for (name, value) in signed.headers() {
            request = request.header(name, value);
        }
        let mut response = request.send(&body[..]).expect("the POST is answered");
        assert_eq!(response.status().as_u16(), 201);
        let _ = response.body_mut().read_to_vec();
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
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
        for round in 0..ROUNDS {
            let tag = format!("t{threads}r{round}");
            raw.push(ureq_rate(&mock, threads, &tag));
            ours.push(payidem_rate(&mock, threads, &tag));
        }
        let (ours, raw) = (median(ours), median(raw));
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
