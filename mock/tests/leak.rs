//! Issue #14: requests declaring a body over 64 MiB leak no thread and no
//! descriptor. Alone in its test binary, so this process's thread and
//! descriptor counts belong to this test only.

mod common;

use std::time::{Duration, Instant};

use common::attack::*;
use common::*;

fn counts() -> (usize, usize) {
    let n = |dir: &str| std::fs::read_dir(dir).map_or(0, |d| d.count());
    (n("/proc/self/task"), n("/proc/self/fd"))
}

/// The counts once two readings 200 ms apart agree (5 s at most): the
/// server has closed what the last connection left behind.
fn settled_counts() -> (usize, usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut last = counts();
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let now = counts();
        if now == last || Instant::now() >= deadline {
            return now;
        }
        last = now;
    }
}

#[test]
fn declared_bodies_over_64_mib_leak_nothing() {
    let (server, c) = start_default();
    assert_eq!(c.plain("GET", "/_mock/ping", b"").status, 200);
    drop(c);
    let baseline = settled_counts();
    for declared in [(64usize << 20) + 1, 100 << 20, 1 << 30, usize::MAX >> 1] {
        for _ in 0..5 {
            let req = format!(
                "POST /v1/payments HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {declared}\r\n\r\n"
            );
            let answer = raw(server.addr(), req.as_bytes(), Duration::from_secs(10));
            assert_eq!(status_of(&answer), 413, "{declared}: {answer}");
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut now = counts();
    while now != baseline && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        now = counts();
    }
    assert_eq!(now, baseline, "(threads, fds) after 20 oversized requests");
    assert_eq!(server.stats().requests.by_status["413"], 20);
}
