//! Load check of payidem-mock (a benchmark, not a test).
//!
//! Run: `cargo bench -p payidem-mock --bench load`
//!
//! 1. Signed `POST /v1/payments` (each a new order and key) from 4 client
//!    threads over loopback keep-alive connections, against the anchor of
//!    the same loop sending unsigned `GET /_mock/ping`, in the same run.
//! 2. The process's RSS before and after storing 100,000 idempotency keys
//!    (each with its payment and oracle entry).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use payidem::protocol::{NonceSource, OsNonceSource, Signer};
use payidem_mock::{MockConfig, MockServer, DEFAULT_KEY_ID, DEFAULT_SECRET};

const THREADS: usize = 4;
const PHASE: Duration = Duration::from_secs(5);
const STORED_KEYS: u64 = 100_000;

fn agent() -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build();
    ureq::Agent::new_with_config(config)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn signed_create(agent: &ureq::Agent, signer: &Signer, base: &str, n: u64, run: u64) -> u16 {
    let order = format!("bench-{run}-{n}");
    let key = format!("create-{order}");
    let body = format!(r#"{{"order_id":"{order}","amount":1000,"currency":"EUR"}}"#);
    let attempt = signer
        .sign_attempt(
            "POST",
            "/v1/payments",
            &key,
            body.as_bytes(),
            now(),
            OsNonceSource.next_nonce(),
        )
        .expect("valid fields");
    let mut req = agent
        .post(format!("{base}/v1/payments"))
        .header("Content-Type", "application/json");
    for (name, value) in attempt.headers() {
        req = req.header(name, value);
    }
    let mut resp = req.send(body.as_bytes()).expect("loopback request");
    let _ = resp.body_mut().read_to_vec();
    resp.status().as_u16()
}

fn ping(agent: &ureq::Agent, base: &str) -> u16 {
    let mut resp = agent
        .get(format!("{base}/_mock/ping"))
        .call()
        .expect("loopback request");
    let _ = resp.body_mut().read_to_vec();
    resp.status().as_u16()
}

/// Runs `op` from THREADS threads for `PHASE`, returning requests per second.
fn throughput(op: &(dyn Fn(&ureq::Agent, u64) -> u16 + Sync)) -> f64 {
    let counter = AtomicU64::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                let agent = agent();
                while started.elapsed() < PHASE {
                    let n = counter.fetch_add(1, Ordering::Relaxed);
                    let status = op(&agent, n);
                    assert!(status == 200 || status == 201, "status {status}");
                }
            });
        }
    });
    counter.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// Fixed number of operations from THREADS threads.
fn fill(op: &(dyn Fn(&ureq::Agent, u64) -> u16 + Sync), total: u64) {
    let counter = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                let agent = agent();
                loop {
                    let n = counter.fetch_add(1, Ordering::Relaxed);
                    if n >= total {
                        break;
                    }
                    assert_eq!(op(&agent, n), 201);
                }
            });
        }
    });
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let signer = Signer::new(DEFAULT_KEY_ID, DEFAULT_SECRET.as_bytes()).expect("default key");

    let server = MockServer::start(MockConfig {
        seed: Some(1),
        ..MockConfig::default()
    })
    .expect("start");
    let base = server.url();
    let ping_rps = throughput(&|a, _| ping(a, &base));
    let post_rps = throughput(&|a, n| signed_create(a, &signer, &base, n, 0));
    let ping_rps_after = throughput(&|a, _| ping(a, &base));
    let anchor = (ping_rps + ping_rps_after) / 2.0;
    println!(
        "threads: {THREADS} clients, 8 server workers, {}s per phase",
        PHASE.as_secs()
    );
    println!(
        "anchor GET /_mock/ping        : {ping_rps:>9.0} req/s before, {ping_rps_after:.0} after"
    );
    println!("signed POST /v1/payments      : {post_rps:>9.0} req/s");
    println!("ratio signed POST / anchor    : {:>9.2}", post_rps / anchor);
    drop(server);

    let server = MockServer::start(MockConfig {
        seed: Some(2),
        ..MockConfig::default()
    })
    .expect("start");
    let base = server.url();
    fill(&|a, n| signed_create(a, &signer, &base, n, 1), 1_000);
    let before = rss_kib();
    fill(
        &|a, n| signed_create(a, &signer, &base, n + 1_000, 1),
        STORED_KEYS,
    );
    let after = rss_kib();
    let stats = server.stats();
    println!(
        "RSS after {} stored keys     : {} KiB (was {} KiB with 1,000; {:.0} bytes per key incl. payment and oracle entry)",
        stats.idempotency_keys_stored,
        after,
        before,
        (after.saturating_sub(before) as f64 * 1024.0) / STORED_KEYS as f64
    );
}
