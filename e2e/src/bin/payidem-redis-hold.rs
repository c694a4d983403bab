//! Starts a throwaway redis-server through the tests' Rust harness
//! (`core/tests/redis_server`, hence `ffi/tests-c/redis_server.sh`),
//! prints `DIR PID` and then obeys its stdin line by line: `restart` stops
//! the server (SIGKILL, as a test simulating a crash does) and starts it
//! again, printing the new `DIR PID`. The tests of `tests/redis_server.rs`
//! kill it and check that the server does not outlive it.

#[path = "../../../core/tests/redis_server/mod.rs"]
mod redis_server;

use std::io::{BufRead, Write};

fn report(server: &redis_server::RedisServer) {
    let mut out = std::io::stdout();
    let pid = server.pid().expect("the server runs");
    writeln!(out, "{} {pid}", server.dir().display()).expect("stdout");
    out.flush().expect("stdout");
}

fn main() {
    let mut server = redis_server::RedisServer::start();
    report(&server);
    for line in std::io::stdin().lock().lines() {
        match line.expect("stdin").trim() {
            "restart" => {
                server.stop();
                server.restart();
                report(&server);
            }
            other => panic!("unknown command {other:?}"),
        }
    }
    // Stdin closed: wait to be killed.
    loop {
        std::thread::park();
    }
}
