//! Issue #11, part 2: verifiers sharing a real Redis replay store (started
//! here, see `redis_server`). A nonce claimed through one verifier is a
//! replay for every other; a store that cannot answer fails closed with 503
//! `replay_store_unavailable` and `Retry-After`; a store restarted empty
//! refuses requests signed before its new epoch.

mod redis_server;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use payidem::protocol::{Nonce, Refusal, Signer};
use payidem::verifier::replay_store::{RedisStoreConfig, ReplayStore, DEFAULT_KEY_PREFIX};
use payidem::verifier::{IncomingRequest, Verifier, VerifierConfig};
use payidem::ErrorCode;
use redis_server::RedisServer;

const SECRET: &[u8] = b"sk_test_aaaaaaaaaaaaaaaaaaaaaaaa";
const OTHER_SECRET: &[u8] = b"sk_test_bbbbbbbbbbbbbbbbbbbbbbbb";

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

struct Request {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    nonce: String,
}

fn signed_with(key_id: &str, secret: &[u8], seed: u64, timestamp: u64) -> Request {
    let signer = Signer::new(key_id, secret).unwrap();
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..].copy_from_slice(&(seed ^ 0x5a5a_a5a5_1234_4321).to_le_bytes());
    let nonce = Nonce::from_random_bytes(bytes);
    let body = format!("{{\"order_id\":\"o{seed}\"}}").into_bytes();
    let attempt = signer
        .sign_attempt(
            "POST",
            "/v1/payments",
            &format!("create-o{seed}"),
            &body,
            timestamp,
            nonce,
        )
        .unwrap();
    let headers = attempt
        .headers()
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
    Request {
        headers,
        body,
        nonce: nonce.as_str().to_owned(),
    }
}

fn signed(seed: u64, timestamp: u64) -> Request {
    signed_with("key_1", SECRET, seed, timestamp)
}

fn verify(v: &Verifier, r: &Request, now: u64) -> payidem::Result<()> {
    let pairs: Vec<(&str, &str)> = r
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    v.verify(
        &IncomingRequest {
            method: "POST",
            path: "/v1/payments",
            headers: &pairs,
            body: &r.body,
        },
        now,
    )
    .map(|_| ())
}

/// The store at `url` with seconds to connect and answer, not the defaults'
/// 250 ms, which a loaded test host can exceed with a healthy server (the
/// timeout test sets its own bound).
fn config(url: &str) -> RedisStoreConfig {
    let mut config = RedisStoreConfig::new(url);
    config.connect_timeout = Duration::from_secs(5);
    config.io_timeout = Duration::from_secs(5);
    config
}

fn verifier(store: RedisStoreConfig) -> Verifier {
    let mut v =
        Verifier::with_replay_store(VerifierConfig::default(), ReplayStore::Redis(store)).unwrap();
    v.add_key("key_1", &[SECRET]).unwrap();
    v.add_key("key_2", &[OTHER_SECRET]).unwrap();
    v
}

/// A request safely after the store's epoch (the guard refuses timestamps
/// at or before epoch + skew): signed 5 s ahead, well inside the window.
fn fresh_timestamp() -> u64 {
    unix_now() + 5
}

/// Claims one nonce so the store creates its epoch, and waits until a
/// request signed "now" is past it.
fn settle_epoch(v: &Verifier) {
    let now = unix_now();
    verify(v, &signed(u64::MAX, now + 5), now).unwrap();
}

#[test]
fn a_nonce_claimed_through_one_verifier_is_a_replay_for_another() {
    let redis = RedisServer::start();
    let a = verifier(config(&redis.unix_url()));
    let b = verifier(config(&redis.unix_url()));
    settle_epoch(&a);
    let now = unix_now();
    let r = signed(1, fresh_timestamp());
    verify(&a, &r, now).unwrap();
    let e = verify(&b, &r, now).unwrap_err();
    assert_eq!(e.code(), ErrorCode::NonceReused, "{e:?}");
    assert_eq!(e.http_status(), Some(409));
    assert_eq!(
        verify(&a, &r, now).unwrap_err().code(),
        ErrorCode::NonceReused
    );
    // Another nonce is free on either node.
    verify(&b, &signed(2, fresh_timestamp()), now).unwrap();
    // Key ids have their own keys: the same nonce under key_2 is new.
    let same_nonce_other_key = signed_with("key_2", OTHER_SECRET, 1, fresh_timestamp());
    assert_eq!(same_nonce_other_key.nonce, r.nonce);
    verify(&b, &same_nonce_other_key, now).unwrap();
    // Nothing was kept in process memory.
    assert_eq!(a.nonces_held("key_1") + b.nonces_held("key_1"), 0);
}

#[test]
fn the_nonce_is_kept_until_timestamp_plus_window_plus_margin() {
    let redis = RedisServer::start();
    let mut store = config(&redis.unix_url());
    store.key_prefix = "fleet-a:".into();
    let v = verifier(store);
    settle_epoch(&v);
    let ts = fresh_timestamp();
    let r = signed(3, ts);
    verify(&v, &r, unix_now()).unwrap();
    let key = format!("fleet-a:key_1:{}", r.nonce);
    let expiry: u64 = redis
        .command(&["EXPIRETIME", &key])
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        expiry,
        ts + 300 + payidem::verifier::replay_store::DEFAULT_MARGIN_SECONDS
    );
    assert_eq!(redis.command(&["EXISTS", "fleet-a:epoch"]).unwrap(), "1");
    assert_eq!(
        redis
            .command(&["EXISTS", &format!("{DEFAULT_KEY_PREFIX}epoch")])
            .unwrap(),
        "0",
        "only the configured prefix is written"
    );
}

#[test]
fn window_and_signature_are_checked_before_the_store() {
    let mut redis = RedisServer::start();
    let v = verifier(config(&redis.unix_url()));
    settle_epoch(&v);
    let now = unix_now();
    // A forged copy does not burn the nonce: the genuine request still passes.
    let genuine = signed(4, fresh_timestamp());
    let mut forged = signed(4, fresh_timestamp());
    forged.body = b"{\"order_id\":\"o4\",\"amount\":999999}".to_vec();
    assert_eq!(
        verify(&v, &forged, now).unwrap_err().code(),
        ErrorCode::InvalidSignature
    );
    verify(&v, &genuine, now).unwrap();
    // With the store down, requests the protocol refuses earlier are refused
    // exactly as before: the store is asked only for authentic requests.
    redis.stop();
    let stale = signed(5, now - 301);
    assert_eq!(
        verify(&v, &stale, now).unwrap_err().code(),
        ErrorCode::TimestampOutOfWindow
    );
    assert_eq!(
        verify(&v, &forged, now).unwrap_err().code(),
        ErrorCode::InvalidSignature
    );
}

#[test]
fn a_stopped_store_fails_closed_on_every_verifier_and_recovers() {
    let mut redis = RedisServer::start();
    let a = verifier(config(&redis.unix_url()));
    let b = verifier(config(&redis.unix_url()));
    // A store that has been running for a while.
    let start = unix_now();
    redis
        .command(&[
            "SET",
            &format!("{DEFAULT_KEY_PREFIX}epoch"),
            &(start - 100).to_string(),
        ])
        .unwrap();
    // Accepted before the crash, with a correct clock; both verifiers hold
    // pooled connections when the server dies.
    let accepted = signed(6, start);
    verify(&b, &accepted, start).unwrap();
    verify(&a, &signed(7, start), start).unwrap();
    let before_stop = signed(8, start);
    redis.stop();
    for (i, v) in [&a, &b, &a, &b].into_iter().enumerate() {
        let started = Instant::now();
        let e = verify(v, &signed(100 + i as u64, fresh_timestamp()), unix_now()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ReplayStoreUnavailable, "{e:?}");
        assert!(started.elapsed() < Duration::from_secs(2), "fails fast");
        let refusal = Refusal::for_error(&e);
        assert_eq!(refusal.status(), 503);
        assert_eq!(
            payidem::protocol::headers::find(refusal.headers(), "Retry-After"),
            Some("1")
        );
        assert!(
            !e.message().contains("redis.sock"),
            "the refusal shows nothing of the server: {}",
            e.message()
        );
    }
    assert_eq!(
        verify(&a, &before_stop, unix_now()).unwrap_err().code(),
        ErrorCode::ReplayStoreUnavailable
    );
    assert_eq!(
        a.check_replay_store().unwrap_err().code(),
        ErrorCode::ReplayStoreUnavailable
    );

    // Restarted empty: a request signed before the restart is refused by the
    // epoch guard (its nonce may have been claimed and forgotten) ...
    redis.restart();
    let e = verify(&b, &accepted, unix_now()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ReplayStoreUnavailable, "{e:?}");
    assert!(e.message().contains("reset"), "{}", e.message());
    assert_eq!(
        verify(&a, &before_stop, unix_now()).unwrap_err().code(),
        ErrorCode::ReplayStoreUnavailable
    );
    // ... and one signed after the epoch (plus skew) is accepted once.
    let epoch: u64 = redis
        .command(&["GET", &format!("{DEFAULT_KEY_PREFIX}epoch")])
        .unwrap()
        .parse()
        .unwrap();
    assert!(epoch >= before_stop_timestamp(&before_stop));
    let fresh = signed(
        9,
        epoch + payidem::verifier::replay_store::DEFAULT_EPOCH_SKEW_SECONDS + 1,
    );
    verify(&a, &fresh, unix_now()).unwrap();
    assert_eq!(
        verify(&b, &fresh, unix_now()).unwrap_err().code(),
        ErrorCode::NonceReused
    );
    a.check_replay_store().unwrap();
}

fn before_stop_timestamp(r: &Request) -> u64 {
    r.headers
        .iter()
        .find(|(n, _)| n == "X-Timestamp")
        .unwrap()
        .1
        .parse()
        .unwrap()
}

#[test]
fn the_epoch_guard_refuses_requests_signed_at_or_before_the_epoch() {
    let redis = RedisServer::start();
    let mut store = config(&redis.unix_url());
    store.epoch_skew_seconds = 0;
    let v = verifier(store);
    let epoch = 2_000_000_000u64;
    redis
        .command(&[
            "SET",
            &format!("{DEFAULT_KEY_PREFIX}epoch"),
            &epoch.to_string(),
        ])
        .unwrap();
    // The verifier's clock is irrelevant to the guard: only the signed
    // timestamp against the stored epoch.
    let now = epoch;
    let e = verify(&v, &signed(9, epoch), now).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ReplayStoreUnavailable);
    assert!(e.message().contains("2000000000"), "{}", e.message());
    assert_eq!(
        verify(&v, &signed(10, epoch - 100), now)
            .unwrap_err()
            .code(),
        ErrorCode::ReplayStoreUnavailable
    );
    // One second after the epoch is accepted (its expiry, epoch + 331, is
    // still ahead of the server's real clock).
    verify(&v, &signed(11, epoch + 1), now).unwrap();
}

#[test]
fn an_expiry_the_server_clock_already_passed_fails_closed() {
    // A verifier whose clock is far behind the server's would write a nonce
    // that expires at once: refused instead of accepted-and-forgotten.
    let redis = RedisServer::start();
    let mut store = config(&redis.unix_url());
    store.margin_seconds = 0;
    let v = verifier(store);
    redis
        .command(&["SET", &format!("{DEFAULT_KEY_PREFIX}epoch"), "1000"])
        .unwrap();
    let ts = 1_000_000_000; // 2001: its expiry is long past by the server's clock
    let e = verify(&v, &signed(12, ts), ts).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ReplayStoreUnavailable, "{e:?}");
    assert!(e.message().contains("clock"), "{}", e.message());
}

#[test]
fn out_of_memory_and_timeouts_fail_closed() {
    let redis = RedisServer::start();
    let mut store = config(&redis.unix_url());
    store.io_timeout = Duration::from_secs(1);
    let v = verifier(store);
    settle_epoch(&v);
    // maxmemory far below what the server uses: every write is OOM.
    redis.command(&["CONFIG", "SET", "maxmemory", "1"]).unwrap();
    let e = verify(&v, &signed(13, fresh_timestamp()), unix_now()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ReplayStoreUnavailable, "{e:?}");
    assert!(e.message().contains("memory"), "{}", e.message());
    redis.command(&["CONFIG", "SET", "maxmemory", "0"]).unwrap();
    verify(&v, &signed(13, fresh_timestamp()), unix_now()).unwrap();

    // A server that stops answering for 4 s (a pause blocks every client,
    // CLIENT UNPAUSE included): the claim gives up after io_timeout, seconds
    // before the pause ends.
    let paused = Instant::now();
    redis.command(&["CLIENT", "PAUSE", "4000", "ALL"]).unwrap();
    let e = verify(&v, &signed(14, fresh_timestamp()), unix_now()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ReplayStoreUnavailable, "{e:?}");
    assert!(e.message().contains("timeout"), "{}", e.message());
    assert!(
        paused.elapsed() < Duration::from_secs(3),
        "{:?}",
        paused.elapsed()
    );
    std::thread::sleep(Duration::from_millis(4_100).saturating_sub(paused.elapsed()));
    // The timed-out request never counts as accepted; once the server
    // answers again the nonce was either never claimed or is a replay.
    match verify(&v, &signed(14, fresh_timestamp()), unix_now()) {
        Ok(()) => {}
        Err(e) => assert_eq!(e.code(), ErrorCode::NonceReused, "{e:?}"),
    }
    verify(&v, &signed(15, fresh_timestamp()), unix_now()).unwrap();
}

#[test]
fn an_evicting_server_is_refused_by_the_check() {
    let redis = RedisServer::start();
    let v = verifier(config(&redis.unix_url()));
    v.check_replay_store().unwrap();
    redis
        .command(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"])
        .unwrap();
    let e = v.check_replay_store().unwrap_err();
    assert_eq!(e.field(), Some("replay_store"));
    assert!(e.message().contains("allkeys-lru"), "{}", e.message());
    // The in-memory store has nothing to check.
    Verifier::new(VerifierConfig::default())
        .unwrap()
        .check_replay_store()
        .unwrap();
}

#[test]
fn racing_copies_across_verifiers_are_accepted_exactly_once() {
    let redis = RedisServer::start();
    let verifiers: Vec<Arc<Verifier>> = (0..4)
        .map(|_| Arc::new(verifier(config(&redis.unix_url()))))
        .collect();
    settle_epoch(&verifiers[0]);
    for seed in 20..30u64 {
        let r = Arc::new(signed(seed, fresh_timestamp()));
        let barrier = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let v = verifiers[i % 4].clone();
                let r = r.clone();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    barrier.wait();
                    verify(&v, &r, unix_now())
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(
            results.iter().filter(|r| r.is_ok()).count(),
            1,
            "{results:?}"
        );
        assert!(results
            .iter()
            .filter_map(|r| r.as_ref().err())
            .all(|e| e.code() == ErrorCode::NonceReused));
    }
}

#[test]
fn tcp_loopback_works_like_the_socket() {
    let redis = RedisServer::start_with_tcp();
    let a = verifier(config(&redis.tcp_url()));
    let b = verifier(config(&redis.unix_url()));
    settle_epoch(&a);
    let r = signed(40, fresh_timestamp());
    verify(&a, &r, unix_now()).unwrap();
    assert_eq!(
        verify(&b, &r, unix_now()).unwrap_err().code(),
        ErrorCode::NonceReused
    );
}
