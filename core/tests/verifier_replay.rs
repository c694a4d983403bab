//! Issue #14, verifier hardening: the replay cache under clocks that step
//! back or disagree, its exact capacity, and expiries after 2106. Each test
//! uses only the public API that existed before the fix, so it can be run
//! against the old cache (where it failed, as noted on each test).

use payidem::protocol::{Nonce, Signer};
use payidem::verifier::{IncomingRequest, Verifier, VerifierConfig};
use payidem::ErrorCode;

const T: u64 = 1_767_225_600;
const SECRET: &[u8] = b"sk_test_aaaaaaaaaaaaaaaaaaaaaaaa";

struct Request {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn signed(seed: u64, timestamp: u64) -> Request {
    let signer = Signer::new("key_1", SECRET).unwrap();
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..].copy_from_slice(&seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
    let body = format!("{{\"order_id\":\"o{seed}\"}}").into_bytes();
    let attempt = signer
        .sign_attempt(
            "POST",
            "/v1/payments",
            &format!("create-o{seed}"),
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

fn verify(v: &Verifier, r: &Request, now: u64) -> payidem::Result<()> {
    let headers: Vec<(&str, &str)> = r
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    v.verify(
        &IncomingRequest {
            method: "POST",
            path: "/v1/payments",
            headers: &headers,
            body: &r.body,
        },
        now,
    )
    .map(|_| ())
}

fn verifier(capacity: usize, shards: usize) -> Verifier {
    let mut v = Verifier::new(VerifierConfig {
        window_seconds: 300,
        nonce_capacity_per_key: capacity,
        shards,
    })
    .unwrap();
    v.add_key("key_1", &[SECRET]).unwrap();
    v
}

/// 100 captured requests, a burst at T+301 that lets the cache forget them,
/// then the captured requests replayed by a caller whose clock is `behind`
/// seconds behind. Returns how many were accepted again.
fn replays_accepted(capacity: usize, shards: usize, behind: u64) -> usize {
    let v = verifier(capacity, shards);
    let captured: Vec<Request> = (0..100).map(|i| signed(i, T)).collect();
    for r in &captured {
        verify(&v, r, T).unwrap();
    }
    let burst = (0..200)
        .filter(|i| verify(&v, &signed(1_000 + i, T + 301), T + 301).is_ok())
        .count();
    assert_eq!(
        burst, 200,
        "capacity {capacity}, {shards} shards: burst refused"
    );
    captured
        .iter()
        .filter(|r| verify(&v, r, T + 301 - behind).is_ok())
        .count()
}

/// Before the fix: 38 to 100 of 100 accepted again (by configuration).
#[test]
fn window_edge_race_reaccepts_nothing() {
    for (capacity, shards) in [(200, 1), (250, 16), (4_000_000, 16)] {
        let accepted = replays_accepted(capacity, shards, 1);
        assert_eq!(accepted, 0, "capacity {capacity}, {shards} shards");
    }
}

/// Before the fix: 43 to 100 of 100 accepted again after the step back.
#[test]
fn clock_step_back_reaccepts_nothing() {
    for (capacity, shards) in [(200, 1), (250, 16), (4_000_000, 16)] {
        let accepted = replays_accepted(capacity, shards, 120);
        assert_eq!(accepted, 0, "capacity {capacity}, {shards} shards");
    }
}

/// A request refused because of the monotonic clock says so like a stale
/// timestamp: 401 with the server's (caller's) time, so that clients keep
/// correcting their clocks from it; fresh timestamps still pass.
#[test]
fn a_stepped_back_clock_refuses_only_what_may_be_forgotten() {
    let v = verifier(100, 4);
    verify(&v, &signed(1, T + 301), T + 301).unwrap();
    let e = verify(&v, &signed(2, T), T + 181).unwrap_err();
    assert_eq!(e.code(), ErrorCode::TimestampOutOfWindow);
    assert_eq!(e.server_time(), Some(T + 181));
    verify(&v, &signed(3, T + 181), T + 181).unwrap();
    verify(&v, &signed(4, T + 1), T + 181).unwrap();
}

/// Accepts fresh nonces at `now` until refused; returns how many.
fn accepted_until_full(v: &Verifier, first: u64, now: u64) -> usize {
    let mut accepted = 0;
    for i in first.. {
        match verify(v, &signed(i, now), now) {
            Ok(()) => accepted += 1,
            Err(e) => {
                assert_eq!(e.code(), ErrorCode::ReplayCacheFull);
                assert_eq!(e.http_status(), Some(503));
                return accepted;
            }
        }
    }
    unreachable!()
}

/// Before the fix: a capacity of 1 accepted 16, 1025 accepted 1088 (and
/// random shards refused before the total on other runs).
#[test]
fn capacity_is_exact() {
    for (capacity, shards) in [(1, 16), (16, 16), (1025, 16), (1000, 64), (3_000, 7)] {
        let v = verifier(capacity, shards);
        assert_eq!(
            accepted_until_full(&v, 0, T),
            capacity,
            "{capacity}/{shards}"
        );
        assert_eq!(v.nonces_held("key_1"), capacity);
        // Full until they expire, then exactly `capacity` again.
        assert_eq!(accepted_until_full(&v, 100_000, T + 300), 0);
        assert_eq!(accepted_until_full(&v, 200_000, T + 301), capacity);
    }
}

/// Before the fix: expiries saturated at u32::MAX, so after 2106 a full
/// cache never recovered.
#[test]
fn expiries_after_2106_are_bounded() {
    for now in [5_000_000_000u64, 1_000_000_000_000] {
        let v = verifier(4, 1);
        assert_eq!(accepted_until_full(&v, 0, now), 4);
        assert_eq!(accepted_until_full(&v, 100, now + 301), 4, "at {now}");
        // Still exact: live ones are refused as reused, not forgotten.
        let r = signed(500, now + 400);
        let v = verifier(4, 1);
        verify(&v, &r, now + 400).unwrap();
        assert_eq!(
            verify(&v, &r, now + 700).unwrap_err().code(),
            ErrorCode::NonceReused
        );
    }
}

/// Two threads whose clocks differ by a second at the window edge: one
/// verifies fresh requests at T+301 (which lets the cache forget nonces of
/// T) while the other replays requests of T at T+300. Before the fix some
/// replays were accepted; now each is refused whichever thread runs first.
#[test]
fn threads_at_the_window_edge_reaccept_nothing() {
    for (capacity, shards) in [(2_000, 16), (1_200, 1)] {
        let v = verifier(capacity, shards);
        let captured: Vec<Request> = (0..1_000).map(|i| signed(i, T)).collect();
        for r in &captured {
            verify(&v, r, T).unwrap();
        }
        let fresh: Vec<Request> = (0..1_000).map(|i| signed(10_000 + i, T + 301)).collect();
        let barrier = std::sync::Barrier::new(2);
        let accepted = std::thread::scope(|s| {
            s.spawn(|| {
                barrier.wait();
                for r in &fresh {
                    let _ = verify(&v, r, T + 301);
                }
            });
            let replays = s.spawn(|| {
                barrier.wait();
                captured
                    .iter()
                    .filter(|r| verify(&v, r, T + 300).is_ok())
                    .count()
            });
            replays.join().unwrap()
        });
        assert_eq!(accepted, 0, "capacity {capacity}, {shards} shards");
    }
}
