//! The `payidem-mock` binary: flags, first stdout line, control routes.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use common::*;

struct Mock {
    child: Child,
    base: String,
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(args: &[&str]) -> Mock {
    let mut child = Command::new(env!("CARGO_BIN_EXE_payidem-mock"))
        .args(["--port", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim_end()
        .strip_prefix("listening on 127.0.0.1:")
        .unwrap_or_else(|| panic!("first line: {line:?}"));
    let port: u16 = addr.parse().unwrap();
    Mock {
        child,
        base: format!("http://127.0.0.1:{port}"),
    }
}

#[test]
fn first_line_then_serves_with_the_default_key() {
    let mock = spawn(&["--control", "--seed", "3"]);
    let c = Client::new(&mock.base);
    let order = unique("o");
    assert_eq!(c.create(&order, "k", 100).status, 201);
    assert!(c.create(&order, "k", 100).replayed());
    let stats = c.stats();
    assert_eq!(stats["orders"][&order]["payments_created"], 1);
    assert_eq!(stats["replays"], 1);
    assert_eq!(stats["requests"]["by_route"]["POST /v1/payments"], 2);
    assert_eq!(stats["requests"]["by_status"]["201"], 2);
}

#[test]
fn keys_faults_and_capacity_from_flags() {
    let mock = spawn(&[
        "--key",
        "key_a:sk_test_first_secret_01",
        "--key",
        "key_a:base64:c2tfdGVzdF9zZWNvbmRfc2VjcmV0",
        "--fault",
        "error_503=1",
        "--nonce-capacity",
        "3",
        "--clock-skew-seconds",
        "-20",
    ]);
    let old = Client::with_key(&mock.base, "key_a", b"sk_test_first_secret_01");
    let new = Client::with_key(&mock.base, "key_a", b"sk_test_second_secret");
    let r = old.create(&unique("o"), "k1", 1);
    assert_eq!((r.status, r.header("Retry-After")), (503, Some("1")));
    assert_eq!(new.create(&unique("o"), "k2", 1).status, 503);
    assert_eq!(
        Client::new(&mock.base).create(&unique("o"), "k", 1).code(),
        "unknown_api_key"
    );
    assert_eq!(old.get("/v1/payments?order_id=x").status, 404);
    assert_eq!(
        old.create(&unique("o"), "k3", 1).code(),
        "replay_cache_full"
    );
    // Without --control the control routes do not exist.
    assert_eq!(old.plain("GET", "/_mock/stats", b"").status, 404);
}

#[test]
fn config_file() {
    let dir = std::env::temp_dir().join(unique("payidem-mock-config"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mock.json");
    std::fs::write(
        &path,
        r#"{"keys":[{"key_id":"key_file","secret":"sk_test_from_the_file"}],"faults":{"error_502":1},"retry_after_seconds":9,"control":true}"#,
    )
    .unwrap();
    let mock = spawn(&["--config", path.to_str().unwrap()]);
    let c = Client::with_key(&mock.base, "key_file", b"sk_test_from_the_file");
    assert_eq!(c.create(&unique("o"), "k", 1).status, 502);
    assert_eq!(c.stats()["faults"]["error_502"], 1);
    assert_eq!(
        c.plain("GET", "/_mock/faults", b"").json()["retry_after_seconds"],
        9
    );
    // A flag wins over the file.
    let mock = spawn(&[
        "--config",
        path.to_str().unwrap(),
        "--fault",
        "error_503=1",
        "--retry-after-seconds",
        "4",
    ]);
    let c = Client::with_key(&mock.base, "key_file", b"sk_test_from_the_file");
    let r = c.create(&unique("o"), "k", 1);
    assert_eq!((r.status, r.header("Retry-After")), (503, Some("4")));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_flags_fail_without_showing_secrets() {
    let out = Command::new(env!("CARGO_BIN_EXE_payidem-mock"))
        .args(["--key", "k:tooshortsecret"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("secret") && !stderr.contains("tooshortsecret"),
        "{stderr}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_payidem-mock"))
        .args(["--fault", "error_503=0.7", "--fault", "error_429=0.7"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn help_documents_every_flag() {
    let out = Command::new(env!("CARGO_BIN_EXE_payidem-mock"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--host",
        "--port",
        "--key",
        "--config",
        "--fault",
        "--delay-ms",
        "--retry-after-seconds",
        "--seed",
        "--clock-skew-seconds",
        "--idempotency-retention-seconds",
        "--nonce-capacity",
        "--processing-delay-ms",
        "--control",
        "--workers",
        "drop_after_commit",
        "key_test_1",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}:\n{help}");
    }
}
