//! What the client benchmarks share: a fixed number of operations spread
//! over threads, and the anchor every payidem figure is a ratio of — the
//! same payment creates signed with the core's `Signer` and sent with one
//! pooled ureq agent, no journal.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use payidem::protocol::{NonceSource, OsNonceSource, Signer};
use payidem_mock::{MockServer, DEFAULT_KEY_ID, DEFAULT_SECRET};

use crate::payment_body;

/// Runs `op(0..ops)` over `threads` threads (each takes the next index);
/// returns operations per second.
pub fn rate(ops: usize, threads: usize, op: &(dyn Fn(usize) + Sync)) -> f64 {
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= ops {
                    break;
                }
                op(i);
            });
        }
    });
    ops as f64 / started.elapsed().as_secs_f64()
}

/// How the anchor's ureq agent is set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// The payidem client's pool (an idle connection per caller) and
    /// resolver (an IP host is not looked up): the fastest plain client,
    /// so that the ratio is the journal's whole cost. The anchor.
    Tuned,
    /// A ureq agent with its defaults and a timeout, as a caller writes it
    /// first: 3 idle connections, and every request resolves its host on a
    /// thread of its own. The anchor of the figures before 2026-12-03 19:00.
    UreqDefaults,
}

/// Signed payment creates per second against `mock` without any journal
/// (order ids `raw-{tag}-{i}`, each answered 201): the benchmarks' anchor.
pub fn raw_signed_post_rate(
    mock: &MockServer,
    ops: usize,
    threads: usize,
    tag: &str,
    anchor: Anchor,
) -> f64 {
    let signer = Signer::new(DEFAULT_KEY_ID, DEFAULT_SECRET.as_bytes()).expect("a signer");
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(5)));
    let agent = match anchor {
        Anchor::Tuned => ureq::Agent::with_parts(
            config
                .max_idle_connections(payidem::client::MAX_IDLE_CONNECTIONS)
                .max_idle_connections_per_host(payidem::client::MAX_IDLE_CONNECTIONS)
                .build(),
            ureq::unversioned::transport::DefaultConnector::default(),
            payidem::client::LiteralResolver::default(),
        ),
        Anchor::UreqDefaults => config.build().into(),
    };
    let url = format!("{}/v1/payments", mock.url());
    rate(ops, threads, &|i| {
        let order = format!("raw-{tag}-{i}");
        let body = payment_body(&order, 1000 + (i % 400) as u64);
        let key = format!("create-{order}");
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let signed = signer
            .sign_attempt(
                "POST",
                "/v1/payments",
                &key,
                &body,
                now,
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

/// The median of `runs` (the upper one of an even count).
pub fn median(mut runs: Vec<f64>) -> f64 {
    runs.sort_by(f64::total_cmp);
    runs[runs.len() / 2]
}
