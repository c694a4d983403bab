//! Issue #11, the verifier fleet test: several `payidem-mock` processes
//! share one real redis-server over loopback TCP (`--nonce-store
//! redis://127.0.0.1:PORT`). A request accepted by one instance is a replay
//! (409 `nonce_reused`) for every other; with Redis stopped every instance
//! refuses (503 `replay_store_unavailable`, `Retry-After`) and nothing is
//! accepted; with Redis restarted empty, requests signed before the restart
//! are refused and fresh ones accepted exactly once.

mod common;
#[path = "../../core/tests/redis_server/mod.rs"]
mod redis_server;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};

use common::*;
use redis_server::RedisServer;

const EPOCH_KEY: &str = "payidem:replay:epoch";

struct Mock {
    child: Child,
    client: Client,
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(nonce_store: &str) -> Mock {
    let mut child = Command::new(env!("CARGO_BIN_EXE_payidem-mock"))
        .args(["--port", "0", "--control", "--workers", "2"])
        .args(["--nonce-store", nonce_store])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .trim_end()
        .strip_prefix("listening on 127.0.0.1:")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| {
            let mut err = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            panic!("first line: {line:?}; stderr: {err}")
        });
    Mock {
        child,
        client: Client::new(&format!("http://127.0.0.1:{port}")),
    }
}

/// One signed create: its exact headers and body, to send (and resend)
/// anywhere.
struct Signed {
    order_id: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn sign_create(client: &Client, timestamp: u64) -> Signed {
    let order_id = unique("fleet");
    let body = create_body(&order_id, 700);
    let headers = client.signed_headers(
        "POST",
        "/v1/payments",
        &format!("create-{order_id}"),
        &body,
        timestamp,
    );
    Signed {
        order_id,
        headers,
        body,
    }
}

fn send(mock: &Mock, s: &Signed) -> Resp {
    mock.client
        .send("POST", "/v1/payments", &s.headers, &s.body)
        .unwrap()
}

fn payments_created(mock: &Mock, order_id: &str) -> u64 {
    mock.client.stats()["orders"][order_id]["payments_created"]
        .as_u64()
        .unwrap_or(0)
}

#[test]
fn mock_instances_sharing_redis_act_as_one_verifier() {
    let mut redis = RedisServer::start_with_tcp();
    // A store that has been up for a while (its epoch long past).
    let start = unix_now();
    redis
        .command(&["SET", EPOCH_KEY, &(start - 100).to_string()])
        .unwrap();
    let fleet: Vec<Mock> = (0..3).map(|_| spawn(&redis.tcp_url())).collect();

    // Accepted by one instance, a replay for each of the others.
    let first = sign_create(&fleet[0].client, unix_now());
    let r = send(&fleet[0], &first);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    for mock in &fleet {
        let r = send(mock, &first);
        assert_eq!((r.status, r.code().as_str()), (409, "nonce_reused"));
    }
    assert_eq!(
        fleet
            .iter()
            .map(|m| payments_created(m, &first.order_id))
            .sum::<u64>(),
        1
    );
    // Distinct nonces are accepted anywhere.
    for mock in &fleet {
        let s = sign_create(&mock.client, unix_now());
        assert_eq!(send(mock, &s).status, 201);
    }

    // Redis stopped: every instance refuses everything, fails closed.
    let signed_before_restart = sign_create(&fleet[1].client, unix_now());
    redis.stop();
    for mock in &fleet {
        for s in [
            &signed_before_restart,
            &sign_create(&mock.client, unix_now()),
        ] {
            let r = send(mock, s);
            assert_eq!(
                (r.status, r.code().as_str()),
                (503, "replay_store_unavailable"),
                "{}",
                String::from_utf8_lossy(&r.body)
            );
            assert_eq!(r.header("Retry-After"), Some("1"));
            assert_eq!(payments_created(mock, &s.order_id), 0);
        }
        // The replay of what was accepted before is refused too.
        assert_eq!(send(mock, &first).status, 503);
    }

    // Redis restarted empty: requests signed before the restart are refused
    // on every instance (the epoch guard), even though their nonces are gone.
    redis.restart();
    for mock in &fleet {
        for s in [&first, &signed_before_restart] {
            let r = send(mock, s);
            assert_eq!(
                (r.status, r.code().as_str()),
                (503, "replay_store_unavailable"),
                "{}",
                String::from_utf8_lossy(&r.body)
            );
            assert_eq!(r.header("Retry-After"), Some("1"));
        }
    }
    assert_eq!(payments_created(&fleet[0], &first.order_id), 1);
    assert_eq!(
        fleet
            .iter()
            .map(|m| payments_created(m, &signed_before_restart.order_id))
            .sum::<u64>(),
        0
    );
    // Signed after the new epoch (plus its skew): accepted once, a replay
    // everywhere else.
    let epoch: u64 = redis.command(&["GET", EPOCH_KEY]).unwrap().parse().unwrap();
    let fresh = sign_create(
        &fleet[2].client,
        epoch + payidem::verifier::replay_store::DEFAULT_EPOCH_SKEW_SECONDS + 1,
    );
    assert_eq!(send(&fleet[2], &fresh).status, 201);
    for mock in &fleet {
        assert_eq!(send(mock, &fresh).code(), "nonce_reused");
    }
}

#[test]
fn an_unreachable_or_evicting_store_stops_the_mock_at_start() {
    let redis = RedisServer::start_with_tcp();
    let url = redis.tcp_url();
    drop(redis);
    let out = Command::new(env!("CARGO_BIN_EXE_payidem-mock"))
        .args(["--port", "0", "--nonce-store", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("replay_store_unavailable"), "{err}");

    let redis = RedisServer::start_with_tcp();
    redis
        .command(&["CONFIG", "SET", "maxmemory-policy", "volatile-ttl"])
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_payidem-mock"))
        .args(["--port", "0", "--nonce-store", &redis.tcp_url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("noeviction"), "{err}");

    let out = Command::new(env!("CARGO_BIN_EXE_payidem-mock"))
        .args(["--port", "0", "--nonce-store", "memcached://127.0.0.1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("replay_store"));
}
