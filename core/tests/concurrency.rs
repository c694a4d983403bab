//! One `Verifier` shared by many threads: every nonce is accepted exactly
//! once per key id, and a full cache fails closed under contention.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use payidem::protocol::{Nonce, Signer};
use payidem::verifier::{IncomingRequest, Verifier, VerifierConfig};
use payidem::ErrorCode;

const THREADS: usize = 16;
const NOW: u64 = 1_767_225_600;
const SECRET_A: &[u8] = b"sk_test_aaaaaaaaaaaaaaaaaaaaaaaa";
const SECRET_B: &[u8] = b"sk_test_bbbbbbbbbbbbbbbbbbbbbbbb";

/// A signed request, owned so that threads can share it.
struct Request {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn signed(signer: &Signer, nonce_seed: u64, timestamp: u64) -> Request {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&nonce_seed.to_le_bytes());
        bytes[8..].copy_from_slice(&nonce_seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
        let body = format!("{{\"order_id\":\"o{nonce_seed}\",\"amount\":100}}").into_bytes();
        let key = format!("create-o{nonce_seed}");
        let attempt = signer
            .sign_attempt(
                "POST",
                "/v1/payments",
                &key,
                &body,
                timestamp,
                Nonce::from_random_bytes(bytes),
            )
            .unwrap();
        let headers = attempt
            .headers()
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect();
        Request { headers, body }
    }

    fn verify(&self, verifier: &Verifier, now: u64) -> payidem::Result<()> {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let incoming = IncomingRequest {
            method: "POST",
            path: "/v1/payments",
            headers: &headers,
            body: &self.body,
        };
        verifier.verify(&incoming, now).map(|_| ())
    }
}

/// Outcome counters of one request across every thread.
#[derive(Default)]
struct Tally {
    accepted: AtomicU32,
    reused: AtomicU32,
    other: AtomicU32,
}

impl Tally {
    fn record(&self, result: payidem::Result<()>) {
        let counter = match result {
            Ok(()) => &self.accepted,
            Err(e) if e.code() == ErrorCode::NonceReused && e.http_status() == Some(409) => {
                &self.reused
            }
            Err(_) => &self.other,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs `work(thread_index)` on `THREADS` threads released together.
fn on_threads(work: impl Fn(usize) + Send + Sync + 'static) {
    let work = Arc::new(work);
    let start = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (work, start) = (Arc::clone(&work), Arc::clone(&start));
            thread::spawn(move || {
                start.wait();
                work(t);
            })
        })
        .collect();
    for h in handles {
        h.join().expect("a verifying thread panicked");
    }
}

#[test]
fn each_nonce_is_accepted_exactly_once_across_threads() {
    const SHARED: usize = 600;
    const OWN: usize = 200;
    let mut verifier = Verifier::new(VerifierConfig::default()).unwrap();
    verifier.add_key("key_a", &[SECRET_A]).unwrap();
    verifier.add_key("key_b", &[SECRET_B]).unwrap();
    let verifier = Arc::new(verifier);
    let (signer_a, signer_b) = (
        Signer::new("key_a", SECRET_A).unwrap(),
        Signer::new("key_b", SECRET_B).unwrap(),
    );

    // The same nonces are signed under both key ids: a nonce is scoped to its
    // key id, so each is accepted once per key.
    let shared: Arc<Vec<Request>> = Arc::new(
        (0..SHARED as u64)
            .flat_map(|i| {
                [
                    Request::signed(&signer_a, i, NOW - i % 200),
                    Request::signed(&signer_b, i, NOW + i % 200),
                ]
            })
            .collect(),
    );
    let own: Arc<Vec<Request>> = Arc::new(
        (0..(THREADS * OWN) as u64)
            .map(|i| Request::signed(&signer_a, 1_000_000 + i, NOW))
            .collect(),
    );
    let shared_tally: Arc<Vec<Tally>> =
        Arc::new((0..shared.len()).map(|_| Tally::default()).collect());
    let own_tally: Arc<Vec<Tally>> = Arc::new((0..own.len()).map(|_| Tally::default()).collect());

    {
        let (verifier, shared, own) =
            (Arc::clone(&verifier), Arc::clone(&shared), Arc::clone(&own));
        let (shared_tally, own_tally) = (Arc::clone(&shared_tally), Arc::clone(&own_tally));
        on_threads(move |t| {
            // Every thread walks the shared requests from its own starting
            // point, interleaved with its own requests, so threads race on
            // the same nonces in different orders.
            let n = shared.len();
            let start = t * n / THREADS;
            for step in 0..n {
                let i = (start + step) % n;
                shared_tally[i].record(shared[i].verify(&verifier, NOW));
                if step % 6 == 0 {
                    let j = t * OWN + step / 6;
                    if j < (t + 1) * OWN {
                        own_tally[j].record(own[j].verify(&verifier, NOW));
                    }
                }
            }
        });
    }

    for (i, tally) in shared_tally.iter().enumerate() {
        assert_eq!(
            tally.accepted.load(Ordering::Relaxed),
            1,
            "shared request {i}"
        );
        assert_eq!(
            tally.reused.load(Ordering::Relaxed),
            THREADS as u32 - 1,
            "shared request {i}"
        );
        assert_eq!(tally.other.load(Ordering::Relaxed), 0, "shared request {i}");
    }
    for (j, tally) in own_tally.iter().enumerate() {
        assert_eq!(tally.accepted.load(Ordering::Relaxed), 1, "own request {j}");
        assert_eq!(
            tally.reused.load(Ordering::Relaxed) + tally.other.load(Ordering::Relaxed),
            0
        );
    }
    assert_eq!(verifier.nonces_held("key_a"), SHARED + THREADS * OWN);
    assert_eq!(verifier.nonces_held("key_b"), SHARED);
    // Every nonce stays refused until its timestamp leaves the window.
    for request in shared.iter().chain(own.iter()) {
        assert_eq!(
            request.verify(&verifier, NOW).unwrap_err().code(),
            ErrorCode::NonceReused
        );
    }
}

#[test]
fn a_full_cache_fails_closed_under_contention() {
    const CAPACITY: usize = 128;
    const PER_THREAD: usize = 64;
    let mut verifier = Verifier::new(VerifierConfig {
        nonce_capacity_per_key: CAPACITY,
        shards: 4,
        ..Default::default()
    })
    .unwrap();
    verifier.add_key("key_a", &[SECRET_A]).unwrap();
    let verifier = Arc::new(verifier);
    let signer = Signer::new("key_a", SECRET_A).unwrap();
    let requests: Arc<Vec<Request>> = Arc::new(
        (0..(THREADS * PER_THREAD) as u64)
            .map(|i| Request::signed(&signer, i, NOW))
            .collect(),
    );
    let tally: Arc<Vec<Tally>> = Arc::new((0..requests.len()).map(|_| Tally::default()).collect());
    let full = Arc::new(AtomicU32::new(0));

    {
        let (verifier, requests, tally, full) = (
            Arc::clone(&verifier),
            Arc::clone(&requests),
            Arc::clone(&tally),
            Arc::clone(&full),
        );
        on_threads(move |t| {
            for i in t * PER_THREAD..(t + 1) * PER_THREAD {
                match requests[i].verify(&verifier, NOW) {
                    Err(e) if e.code() == ErrorCode::ReplayCacheFull => {
                        assert_eq!(e.http_status(), Some(503));
                        full.fetch_add(1, Ordering::Relaxed);
                    }
                    other => tally[i].record(other),
                }
            }
        });
    }

    let accepted: Vec<usize> = (0..requests.len())
        .filter(|&i| tally[i].accepted.load(Ordering::Relaxed) == 1)
        .collect();
    assert!(
        accepted.len() <= CAPACITY,
        "{} nonces accepted past a capacity of {CAPACITY}",
        accepted.len()
    );
    assert!(!accepted.is_empty());
    assert_eq!(
        accepted.len() + full.load(Ordering::Relaxed) as usize,
        requests.len()
    );
    assert!(tally
        .iter()
        .all(|t| t.other.load(Ordering::Relaxed) == 0 && t.reused.load(Ordering::Relaxed) == 0));
    // Nothing live was evicted: every accepted nonce is still refused.
    for &i in &accepted {
        assert_eq!(
            requests[i].verify(&verifier, NOW + 300).unwrap_err().code(),
            ErrorCode::NonceReused
        );
    }
    // Once their timestamps leave the window the cache has room again.
    let later = Request::signed(&signer, 999_999, NOW + 301);
    assert!(later.verify(&verifier, NOW + 301).is_ok());
}
