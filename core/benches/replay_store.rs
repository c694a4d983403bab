//! Verification with the shared Redis replay store against its anchors in
//! the same run: the same verification with the in-memory store, and one
//! bare round trip to the same redis-server (`PING` on a kept connection),
//! over its unix socket and over loopback TCP. Target: Redis verify ≤ one
//! round trip + the in-memory verify + 20 µs.
//!
//! Starts its own redis-server (`make redis-deps` installs it).
//!
//! `cargo bench -p payidem --bench replay_store`

#[path = "../tests/redis_server/mod.rs"]
mod redis_server;

use std::hint::black_box;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use payidem::protocol::{NonceSource, OsNonceSource, SignedAttempt, Signer};
use payidem::verifier::replay_store::{RedisStoreConfig, ReplayStore};
use payidem::verifier::{IncomingRequest, Verifier, VerifierConfig};
use redis_server::RedisServer;

const KEY_ID: &str = "key_live_1";
const SECRET: &[u8] = b"sk_live_0123456789abcdef0123456789abcdef";
const METHOD: &str = "POST";
const PATH: &str = "/v1/payments";
const IDEMPOTENCY_KEY: &str = "create-order-000123456";

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A 256-byte JSON body, as in the protocol bench.
fn body() -> Vec<u8> {
    let mut body = br#"{"order_id":"order-000123456","amount":{"value":"1999","currency":"EUR"},"customer":"cus_0001","description":""#.to_vec();
    body.resize(256 - 2, b'x');
    body.extend_from_slice(b"\"}");
    body
}

/// Signed 5 s ahead of now: past a new store's epoch plus its skew, well
/// inside the window.
fn sign(signer: &Signer, body: &[u8]) -> SignedAttempt {
    signer
        .sign_attempt(
            METHOD,
            PATH,
            IDEMPOTENCY_KEY,
            body,
            unix_now() + 5,
            OsNonceSource.next_nonce(),
        )
        .expect("valid request")
}

fn verify(verifier: &Verifier, attempt: &SignedAttempt, body: &[u8]) {
    let mut headers = attempt.headers();
    let headers: [(&str, &str); 5] = std::array::from_fn(|_| headers.next().expect("five headers"));
    let request = IncomingRequest {
        method: METHOD,
        path: PATH,
        headers: &headers,
        body,
    };
    if let Err(e) = verifier.verify(&request, unix_now()) {
        panic!("a fresh attempt was refused: {e}");
    }
}

fn verifier(store: ReplayStore) -> Verifier {
    let mut v = Verifier::with_replay_store(VerifierConfig::default(), store).unwrap();
    v.add_key(KEY_ID, &[SECRET]).unwrap();
    v
}

fn replay_store(c: &mut Criterion) {
    let redis = RedisServer::start_with_tcp();
    let body = body();
    let signer = Signer::new(KEY_ID, SECRET).unwrap();
    let mut group = c.benchmark_group("verify_256B_replay_store");

    let memory = verifier(ReplayStore::Memory);
    group.bench_function("anchor_verify_memory", |b| {
        b.iter_batched_ref(
            || sign(&signer, &body),
            |attempt| verify(&memory, attempt, black_box(&body)),
            BatchSize::NumIterations(128),
        )
    });

    for (transport, url) in [("unix", redis.unix_url()), ("tcp", redis.tcp_url())] {
        let client = redis::Client::open(url.as_str()).unwrap();
        let mut con = client.get_connection().unwrap();
        group.bench_function(format!("anchor_round_trip_ping_{transport}"), |b| {
            b.iter(|| {
                let pong: String = redis::cmd("PING").query(&mut con).unwrap();
                black_box(pong)
            })
        });
        let shared = verifier(ReplayStore::Redis(RedisStoreConfig::new(&url)));
        group.bench_function(format!("verify_redis_{transport}"), |b| {
            b.iter_batched_ref(
                || sign(&signer, &body),
                |attempt| verify(&shared, attempt, black_box(&body)),
                BatchSize::NumIterations(128),
            )
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .sample_size(50);
    targets = replay_store
}
criterion_main!(benches);
