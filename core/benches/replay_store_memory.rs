//! Memory one nonce costs in the Redis replay store: `used_memory` of
//! `INFO memory` before and after `n` fresh nonces went through
//! `Verifier::verify` (default key prefix, key id `key_live_1`, each key
//! with its expiry). Also prints `used_memory_rss` for the same span.
//!
//! Starts its own redis-server (`make redis-deps` installs it).
//!
//! `cargo bench -p payidem --bench replay_store_memory` (optionally
//! followed by counts, e.g. `-- 100000 1000000`).

#[path = "../tests/redis_server/mod.rs"]
mod redis_server;

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use payidem::protocol::{NonceSource, OsNonceSource, Signer};
use payidem::verifier::replay_store::{RedisStoreConfig, ReplayStore};
use payidem::verifier::{IncomingRequest, Verifier, VerifierConfig};
use redis_server::RedisServer;

const KEY_ID: &str = "key_live_1";
const SECRET: &[u8] = b"sk_live_0123456789abcdef0123456789abcdef";

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn info_field(redis: &RedisServer, field: &str) -> u64 {
    let info = redis.command(&["INFO", "memory"]).expect("INFO memory");
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in INFO memory"))
}

fn measure(n: u64) {
    let redis = RedisServer::start();
    let mut verifier = Verifier::with_replay_store(
        VerifierConfig::default(),
        ReplayStore::Redis(RedisStoreConfig::new(&redis.unix_url())),
    )
    .unwrap();
    verifier.add_key(KEY_ID, &[SECRET]).unwrap();
    let signer = Signer::new(KEY_ID, SECRET).unwrap();
    let body = br#"{"order_id":"o-1","amount":1000,"currency":"EUR"}"#;
    let verify = |nonce| {
        let attempt = signer
            .sign_attempt(
                "POST",
                "/v1/payments",
                "create-o-1",
                body,
                unix_now() + 5,
                nonce,
            )
            .unwrap();
        let headers: Vec<(&str, &str)> = attempt.headers().collect();
        verifier
            .verify(
                &IncomingRequest {
                    method: "POST",
                    path: "/v1/payments",
                    headers: &headers,
                    body,
                },
                unix_now(),
            )
            .expect("a fresh nonce is accepted");
    };
    // The first claim creates the epoch key and loads the script.
    verify(OsNonceSource.next_nonce());
    let before = info_field(&redis, "used_memory");
    let rss_before = info_field(&redis, "used_memory_rss");
    let started = Instant::now();
    for _ in 0..n {
        verify(OsNonceSource.next_nonce());
    }
    let elapsed = started.elapsed();
    let after = info_field(&redis, "used_memory");
    let rss_after = info_field(&redis, "used_memory_rss");
    let keys: u64 = redis.command(&["DBSIZE"]).unwrap().parse().unwrap();
    assert_eq!(
        keys,
        n + 2,
        "every nonce is a key, plus the epoch and the first"
    );
    println!(
        "{n} nonces: used_memory +{} B = {:.1} B/nonce; used_memory_rss +{} B = {:.1} B/nonce; \
         {:.1} µs per verify (one connection, unix socket)",
        after - before,
        (after - before) as f64 / n as f64,
        rss_after.saturating_sub(rss_before),
        rss_after.saturating_sub(rss_before) as f64 / n as f64,
        elapsed.as_secs_f64() * 1e6 / n as f64,
    );
}

fn main() {
    let counts: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let counts = if counts.is_empty() {
        vec![100_000]
    } else {
        counts
    };
    for n in counts {
        measure(n);
    }
}
