//! Routes, validation and robustness.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;
use payidem_mock::MockConfig;

fn created(c: &Client, amount: u64) -> String {
    let r = c.create(&unique("o"), &unique("k"), amount);
    assert_eq!(r.status, 201);
    r.json()["payment_id"].as_str().unwrap().to_owned()
}

#[test]
fn create_validation_names_the_field() {
    let (server, c) = start_default();
    let cases: Vec<(String, &str)> = vec![
        (r#"{"amount":100,"currency":"EUR"}"#.into(), "order_id"),
        (
            r#"{"order_id":"has space","amount":100,"currency":"EUR"}"#.into(),
            "order_id",
        ),
        (
            format!(
                r#"{{"order_id":"{}","amount":100,"currency":"EUR"}}"#,
                "a".repeat(129)
            ),
            "order_id",
        ),
        (
            r#"{"order_id":"o1","amount":0,"currency":"EUR"}"#.into(),
            "amount",
        ),
        (
            r#"{"order_id":"o1","amount":"100","currency":"EUR"}"#.into(),
            "amount",
        ),
        (
            r#"{"order_id":"o1","amount":10.5,"currency":"EUR"}"#.into(),
            "amount",
        ),
        (
            r#"{"order_id":"o1","amount":100,"currency":"EURO"}"#.into(),
            "currency",
        ),
        (r#"{"order_id":"o1","amount":100}"#.into(), "currency"),
        ("{not json".into(), "body"),
        ("".into(), "body"),
        ("[1,2]".into(), "body"),
    ];
    for (body, field) in &cases {
        let r = c.post("/v1/payments", &unique("k"), body.as_bytes());
        assert_eq!(
            (r.status, r.code().as_str(), r.field().as_str()),
            (400, "invalid_request", *field),
            "{body}"
        );
    }
    assert_eq!(server.stats().payments, 0);
    let long_ok = "A-z0.9_:".repeat(16);
    assert_eq!(c.create(&long_ok, "k-long", 1).status, 201);
}

#[test]
fn status_queries() {
    let (_s, c) = start_default();
    let order = unique("o");
    let pid = c.create(&order, "k", 4_000).json()["payment_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let by_id = c.get(&format!("/v1/payments/{pid}"));
    assert_eq!(by_id.status, 200);
    assert_eq!(by_id.json()["order_id"], order.as_str());
    let by_order = c.get(&format!("/v1/payments?order_id={order}"));
    assert_eq!(by_order.json()["payment_id"], pid.as_str());
    let r = c.get("/v1/payments/pay_nope");
    assert_eq!((r.status, r.code().as_str()), (404, "not_found"));
    assert_eq!(c.get("/v1/payments?order_id=never").status, 404);
    let r = c.get("/v1/payments");
    assert_eq!((r.status, r.field().as_str()), (400, "order_id"));
    assert_eq!(c.get("/v1/payments?order_id=bad%20id").field(), "order_id");
}

#[test]
fn refunds() {
    let (_s, c) = start_default();
    let pid = created(&c, 1_000);
    let path = format!("/v1/payments/{pid}/refunds");
    let r = c.post(&path, "r-1", br#"{"amount":600}"#);
    assert_eq!(r.status, 201);
    let refund = r.json();
    assert_eq!(
        (refund["payment_id"].as_str(), refund["amount"].as_u64()),
        (Some(pid.as_str()), Some(600))
    );
    assert_eq!(refund["status"], "succeeded");
    let rid = refund["refund_id"].as_str().unwrap().to_owned();
    let got = c.get(&format!("{path}/{rid}"));
    assert_eq!(got.status, 200);
    assert_eq!(got.json(), refund);
    assert_eq!(c.get(&format!("{path}/re_nope")).status, 404);
    let r = c.post(&path, "r-2", br#"{"amount":401}"#);
    assert_eq!(
        (r.status, r.code().as_str()),
        (422, "refund_exceeds_payment")
    );
    assert_eq!(c.post(&path, "r-3", br#"{"amount":400}"#).status, 201);
    assert_eq!(
        c.get(&format!("/v1/payments/{pid}")).json()["amount_refunded"],
        1_000
    );
    assert_eq!(c.post(&path, "r-4", br#"{"amount":0}"#).field(), "amount");
    assert_eq!(c.post(&path, "r-5", b"{").field(), "body");
    let r = c.post("/v1/payments/pay_nope/refunds", "r-6", br#"{"amount":1}"#);
    assert_eq!((r.status, r.code().as_str()), (404, "not_found"));
    // A replayed refund refunds nothing more.
    assert!(c.post(&path, "r-1", br#"{"amount":600}"#).replayed());
}

#[test]
fn unknown_routes_and_methods() {
    let (_s, c) = start_default();
    for path in [
        "/",
        "/v2/payments",
        "/v1/payment",
        "/v1/payments/p/x",
        "/_mock/nothing",
    ] {
        let r = c.plain("GET", path, b"");
        assert_eq!((r.status, r.code().as_str()), (404, "not_found"), "{path}");
    }
    let r = c.plain("DELETE", "/v1/payments", b"");
    assert_eq!((r.status, r.code().as_str()), (405, "method_not_allowed"));
    assert_eq!(r.header("Allow"), Some("GET, POST"));
    assert_eq!(c.plain("PUT", "/v1/payments/p1", b"{}").status, 405);
    assert_eq!(
        c.plain("GET", "/v1/payments/p1/refunds", b"")
            .header("Allow"),
        Some("POST")
    );
    assert_eq!(
        c.plain("GET", "/_mock/ping", b"").json(),
        serde_json::json!({"ok": true})
    );
}

fn raw_exchange(addr: std::net::SocketAddr, request: &[u8]) -> String {
    raw_exchange_for(addr, request, Duration::from_secs(10))
}

/// Sends `request` and reads until the server closes or `wait` passes.
fn raw_exchange_for(addr: std::net::SocketAddr, request: &[u8], wait: Duration) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    s.write_all(request).unwrap();
    // Read until the server closes or one whole answer has arrived.
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&out).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().to_owned())
                })
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            if out.len() >= end + 4 + length {
                break;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn oversized_bodies_are_refused_without_reading_them() {
    let (server, c) = start_default();
    // Declared over the limit, nothing sent.
    for declared in [(1usize << 20) + 1, 10 << 20, usize::MAX >> 1] {
        let req =
            format!("POST /v1/payments HTTP/1.1\r\nHost: x\r\nContent-Length: {declared}\r\n\r\n");
        let answer = raw_exchange(server.addr(), req.as_bytes());
        assert!(answer.starts_with("HTTP/1.1 413"), "{declared}: {answer}");
        assert!(answer.contains(r#""code":"payload_too_large""#), "{answer}");
    }
    // Chunked, over the limit once read.
    let mut req =
        b"POST /v1/payments HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    let chunk = vec![b'a'; 64 * 1024];
    for _ in 0..17 {
        req.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        req.extend_from_slice(&chunk);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    let answer = raw_exchange(server.addr(), &req);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // Exactly 1 MiB is accepted (and then found not to be a payment).
    let body = vec![b' '; 1 << 20];
    let r = c.post("/v1/payments", "k-big", &body);
    assert_eq!((r.status, r.field().as_str()), (400, "body"));
    assert_eq!(server.stats().requests.by_status["413"], 4);
    assert_eq!(
        c.plain("GET", "/_mock/ping", b"").status,
        200,
        "the server still answers"
    );
}

#[test]
fn garbage_never_kills_the_server() {
    let (server, c) = start_default();
    for junk in [
        &b"\x00\x01\x02\r\n\r\n"[..],
        b"GET\r\n\r\n",
        b"POST /v1/payments HTTP/1.1\r\nContent-Length: nope\r\n\r\n",
        b"POST /v1/payments HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"GET /v1/payments/\xff\xfe HTTP/1.1\r\n\r\n",
        b"GET /v1/payments?order_id=\x7f HTTP/1.1\r\nX-Api-Key: \r\n\r\n",
    ] {
        // Each gets a 4xx answer, or (a request line tiny_http cannot
        // decode) its connection closed; none is left hanging.
        let started = std::time::Instant::now();
        let answer = raw_exchange_for(server.addr(), junk, Duration::from_secs(5));
        let closed = answer.is_empty() && started.elapsed() < Duration::from_secs(4);
        assert!(
            answer.starts_with("HTTP/1.1 4") || closed,
            "{:?} got {answer:?}",
            String::from_utf8_lossy(junk)
        );
    }
    // Signature headers with odd bytes reach the verifier and are refused.
    let h = vec![
        ("X-Api-Key".to_owned(), "key_test_1".to_owned()),
        (
            "X-Timestamp".to_owned(),
            "99999999999999999999999".to_owned(),
        ),
    ];
    assert_eq!(
        c.send("GET", "/v1/payments/p", &h, b"").unwrap().code(),
        "missing_signature"
    );
    assert_eq!(c.plain("GET", "/_mock/ping", b"").status, 200);
}

#[test]
fn control_routes_need_the_control_flag() {
    let (server, c) = start(MockConfig {
        control: false,
        ..MockConfig::default()
    });
    for (m, p) in [
        ("GET", "/_mock/stats"),
        ("POST", "/_mock/reset"),
        ("POST", "/_mock/faults"),
    ] {
        assert_eq!(c.plain(m, p, b"{}").status, 404, "{p}");
    }
    assert_eq!(c.plain("GET", "/_mock/ping", b"").status, 200);
    drop(server);
}

#[test]
fn reset_clears_state() {
    let (server, c) = start_default();
    let order = unique("o");
    assert_eq!(c.create(&order, "k", 100).status, 201);
    assert_eq!(c.plain("POST", "/_mock/reset", b"").status, 200);
    let stats = server.stats();
    assert_eq!(
        (
            stats.payments,
            stats.idempotency_keys_stored,
            stats.orders.len()
        ),
        (0, 0, 0)
    );
    let r = c.create(&order, "k", 100);
    assert_eq!(r.status, 201);
    assert!(!r.replayed());
}
