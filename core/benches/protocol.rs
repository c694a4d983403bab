//! Signing and verification against their anchor, the raw cryptographic
//! work measured in the same run: SHA-256 of the body plus HMAC-SHA256 of the
//! canonical string with a freshly keyed MAC.
//!
//! `cargo bench -p payidem --bench protocol`

use std::cell::Cell;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use hmac::{Hmac, KeyInit, Mac};
use payidem::protocol::{NonceSource, OsNonceSource, SignedAttempt, Signer};
use payidem::verifier::{IncomingRequest, Verifier, VerifierConfig};
use sha2::{Digest, Sha256};

const KEY_ID: &str = "key_live_1";
const SECRET: &[u8] = b"sk_live_0123456789abcdef0123456789abcdef";
const METHOD: &str = "POST";
const PATH: &str = "/v1/payments";
const IDEMPOTENCY_KEY: &str = "create-order-000123456";
const NOW: u64 = 1_767_225_600;
/// Live nonces in the verifier's cache before verification is measured.
const LIVE_NONCES: usize = 1_000_000;

/// A 256-byte JSON body.
fn body() -> Vec<u8> {
    let mut body = br#"{"order_id":"order-000123456","amount":{"value":"1999","currency":"EUR"},"customer":"cus_0001","description":""#.to_vec();
    body.resize(256 - 2, b'x');
    body.extend_from_slice(b"\"}");
    assert_eq!(body.len(), 256);
    body
}

/// The anchor: SHA-256 of the body, then HMAC-SHA256 keyed afresh over the
/// canonical string (its first five lines are prepared outside the loop).
fn raw_work(canonical_head: &[u8], body: &[u8]) -> [u8; 32] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(body);
    let mut hex = [0u8; 64];
    for (i, b) in digest.iter().enumerate() {
        hex[2 * i] = DIGITS[usize::from(b >> 4)];
        hex[2 * i + 1] = DIGITS[usize::from(b & 0x0f)];
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET).expect("any key length");
    mac.update(canonical_head);
    mac.update(&hex);
    mac.finalize().into_bytes().into()
}

fn canonical_head() -> Vec<u8> {
    let nonce = OsNonceSource.next_nonce();
    format!("{METHOD}\n{PATH}\n{NOW}\n{nonce}\n{IDEMPOTENCY_KEY}\n").into_bytes()
}

fn sign(signer: &Signer, body: &[u8], timestamp: u64) -> SignedAttempt {
    signer
        .sign_attempt(
            METHOD,
            PATH,
            IDEMPOTENCY_KEY,
            body,
            timestamp,
            OsNonceSource.next_nonce(),
        )
        .expect("valid request")
}

fn verify(verifier: &Verifier, attempt: &SignedAttempt, body: &[u8], now: u64) {
    let mut headers = attempt.headers();
    let headers: [(&str, &str); 5] = std::array::from_fn(|_| headers.next().expect("five headers"));
    let request = IncomingRequest {
        method: METHOD,
        path: PATH,
        headers: &headers,
        body,
    };
    if let Err(e) = verifier.verify(&request, now) {
        panic!("a fresh attempt was refused: {e}");
    }
}

fn signing(c: &mut Criterion) {
    let body = body();
    let head = canonical_head();
    let signer = Signer::new(KEY_ID, SECRET).unwrap();
    let mut group = c.benchmark_group("sign_256B");
    group.bench_function("anchor_sha256_hmac_fresh_key", |b| {
        b.iter(|| raw_work(black_box(&head), black_box(&body)))
    });
    group.bench_function("sign_attempt_with_nonce_and_headers", |b| {
        b.iter(|| {
            let attempt = sign(&signer, black_box(&body), NOW);
            for (name, value) in attempt.headers() {
                black_box((name, value));
            }
        })
    });
    group.finish();
}

/// The verifier's clock during the verification benchmark: it moves one
/// second every `VERIFIES_PER_SECOND` verifications, so prefilled nonces
/// expire at the pace new ones arrive and the cache keeps a steady size of
/// at least `LIVE_NONCES` live nonces (as a server under constant traffic
/// does), instead of growing through the measurement.
struct Clock {
    now: Cell<u64>,
    ticks: Cell<u64>,
    verified: Cell<u64>,
}

/// Slightly more arrivals per second than the prefill's expiries
/// (1,000,000 / 300 = 3,333.3), so the live count never drops below it.
const VERIFIES_PER_SECOND: u64 = 3_400;

impl Clock {
    fn tick(&self) {
        self.verified.set(self.verified.get() + 1);
        let ticks = self.ticks.get() + 1;
        if ticks == VERIFIES_PER_SECOND {
            self.ticks.set(0);
            self.now.set(self.now.get() + 1);
        } else {
            self.ticks.set(ticks);
        }
    }
}

fn verification(c: &mut Criterion) {
    let body = body();
    let head = canonical_head();
    let signer = Signer::new(KEY_ID, SECRET).unwrap();
    let window = VerifierConfig::default().window_seconds;
    let mut verifier = Verifier::new(VerifierConfig::default()).unwrap();
    verifier.add_key(KEY_ID, &[SECRET]).unwrap();
    // Prefill: LIVE_NONCES nonces with timestamps spread evenly over the
    // window that ends at NOW, each verified at its own timestamp.
    for i in 0..LIVE_NONCES as u64 {
        let timestamp = NOW - window + i * window / LIVE_NONCES as u64;
        verify(
            &verifier,
            &sign(&signer, &body, timestamp),
            &body,
            timestamp,
        );
    }
    assert_eq!(verifier.nonces_held(KEY_ID), LIVE_NONCES);

    let mut group = c.benchmark_group("verify_256B_1M_live_nonces");
    group.bench_function("anchor_sha256_hmac_fresh_key", |b| {
        b.iter(|| raw_work(black_box(&head), black_box(&body)))
    });
    let clock = Clock {
        now: Cell::new(NOW),
        ticks: Cell::new(0),
        verified: Cell::new(0),
    };
    group.bench_function("verify_fresh_nonce", |b| {
        // Small batches keep the pre-signed attempts in cache, as a request
        // just read from the network is.
        b.iter_batched_ref(
            || sign(&signer, &body, clock.now.get()),
            |attempt| {
                verify(&verifier, attempt, black_box(&body), clock.now.get());
                clock.tick();
            },
            BatchSize::NumIterations(128),
        )
    });
    group.finish();

    // Prefilled nonce i is live while its timestamp + window >= now; a
    // measured attempt is live for `window` seconds after it was signed
    // (signing runs at most one batch, under a second, ahead).
    let now = clock.now.get();
    let elapsed = now - NOW;
    let live_nonces = LIVE_NONCES as u64;
    let prefill_live = live_nonces - (elapsed * live_nonces).div_ceil(window).min(live_nonces);
    let measured_live = clock.verified.get().min((window - 1) * VERIFIES_PER_SECOND);
    let live = prefill_live + measured_live;
    assert!(live >= live_nonces, "{live} live nonces");
    eprintln!(
        "verify: {} attempts measured over {elapsed} s of verifier clock; at least {live} live nonces at the end ({} held)",
        clock.verified.get(),
        verifier.nonces_held(KEY_ID)
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .sample_size(50);
    targets = signing, verification
}
criterion_main!(benches);
