//! Issue #14: the mock keeps serving a normal signed client while it is
//! attacked (idle connections, bodies that never come, a 256 MiB header),
//! with enough descriptors and at a 1024 limit where `accept()` fails.
//!
//! Each test starts the mock binary with its own descriptor limit on port 0
//! and sends traffic to 127.0.0.1 only; the tests of this file run one at a
//! time so their timing bounds measure the mock, not each other.

mod common;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::attack::*;
use common::*;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A signed create; returns its status and how long it took.
fn signed_create(base: &str) -> (Result<u16, String>, Duration) {
    let mut c = Client::new(base);
    c.agent = agent(Duration::from_secs(5));
    let started = Instant::now();
    let r = c
        .try_post(
            "/v1/payments",
            &unique("k"),
            &create_body(&unique("o"), 100),
        )
        .map(|r| r.status)
        .map_err(|e| e.to_string());
    (r, started.elapsed())
}

/// Served, and in less than the client's 5 s timeout with seconds to spare
/// (a loaded host stretches a quick answer, not a starved one).
fn assert_served_promptly(base: &str, what: &str) {
    let (status, took) = signed_create(base);
    assert_eq!(status, Ok(201), "{what}: took {took:?}");
    assert!(took <= Duration::from_secs(3), "{what}: took {took:?}");
}

#[test]
fn serves_a_signed_client_while_attacked() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    raise_nofile();
    let mut mock = spawn_with_nofile(8192, &[]);
    let base = mock.base();
    let idle = idle_connections(mock.addr, 600, Duration::from_secs(3));
    assert_eq!(idle.len(), 600, "600 idle connections open");
    let slow = slow_bodies(mock.addr, 8);
    let big = huge_header(mock.addr, 256 << 20);
    std::thread::sleep(Duration::from_millis(200));
    let rss_before = rss_kib(mock.pid());
    for i in 0..3 {
        assert_served_promptly(&base, &format!("request {i} under attack"));
    }
    let answer = big.join().unwrap();
    assert_eq!(status_of(&answer), 431, "{answer:.200}");
    let grown = rss_kib(mock.pid()).saturating_sub(rss_before);
    assert!(grown < 32 * 1024, "RSS grew {grown} KiB");
    assert!(mock.alive());
    drop((idle, slow));
    assert_served_promptly(&base, "after the attack");
}

#[test]
fn keeps_serving_after_accept_fails_at_1024_descriptors() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    raise_nofile();
    let mut mock = spawn_with_nofile(1024, &[]);
    let base = mock.base();
    let slow = slow_bodies(mock.addr, 8);
    // More connections than the mock has descriptors: accept() fails.
    let idle = idle_connections(mock.addr, 1300, Duration::from_millis(300));
    let opened = idle.len();
    let big = huge_header(mock.addr, 256 << 20);
    std::thread::sleep(Duration::from_millis(500));
    assert!(mock.alive());
    // Out of descriptors, the mock closes the connection idle the longest
    // to take a new one, so a client is served even now.
    assert_served_promptly(&base, "while the descriptors are exhausted");
    drop(idle);
    let _ = big.join();
    // The mock has to notice the closed connections; then it serves again.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut last = signed_create(&base);
    while last.0 != Ok(201) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        last = signed_create(&base);
    }
    assert_eq!(
        last.0,
        Ok(201),
        "serving again after the idle connections closed"
    );
    assert_served_promptly(&base, "after accept() failed");
    assert!(
        opened > 1024,
        "only {opened} connections: accept() never failed"
    );
    drop(slow);
    assert!(mock.alive());
}

#[test]
fn a_256_mib_header_is_refused_without_reading_it() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mock = spawn_with_nofile(4096, &[]);
    // Warm up, then measure.
    assert_served_promptly(&mock.base(), "warm-up");
    let rss_before = rss_kib(mock.pid());
    let answer = huge_header(mock.addr, 256 << 20).join().unwrap();
    assert_eq!(status_of(&answer), 431, "{answer:.200}");
    assert!(answer.contains("Connection: close"), "{answer:.400}");
    let grown = rss_kib(mock.pid()).saturating_sub(rss_before);
    assert!(grown < 16 * 1024, "RSS grew {grown} KiB");
    // Too many headers, each small.
    let mut req = b"GET /_mock/ping HTTP/1.1\r\nHost: 127.0.0.1\r\n".to_vec();
    for i in 0..500 {
        req.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    let answer = raw(mock.addr, &req, Duration::from_secs(5));
    assert_eq!(status_of(&answer), 431, "{answer:.200}");
    assert_served_promptly(&mock.base(), "after the header attacks");
}
