//! Issue #14: slow clients, browser requests to the control routes, and
//! non-ASCII header bytes.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::attack::*;
use common::*;
use payidem_mock::{MockConfig, MockServer};

fn control_request(addr: SocketAddr, head: &str, body: &str) -> (u16, String) {
    let req = format!(
        "{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let answer = raw(addr, req.as_bytes(), Duration::from_secs(5));
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status_of(&answer), body)
}

#[test]
fn control_routes_refuse_browser_requests() {
    let (server, c) = start_default();
    assert_eq!(c.create(&unique("o"), "k", 100).status, 201);
    let addr = server.addr();
    let port = addr.port();
    let json = "Content-Type: application/json";
    let refused = [
        // A form post or a text/plain fetch needs no CORS preflight.
        format!("POST /_mock/reset HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: text/plain"),
        format!("POST /_mock/reset HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/x-www-form-urlencoded"),
        format!("POST /_mock/reset HTTP/1.1\r\nHost: 127.0.0.1:{port}"),
        format!("POST /_mock/faults HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: multipart/form-data; boundary=x"),
        // A page on another origin, or an opaque one.
        format!("POST /_mock/reset HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{json}\r\nOrigin: http://evil.example"),
        format!("POST /_mock/reset HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{json}\r\nOrigin: null"),
        format!("GET /_mock/stats HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: https://evil.example"),
        format!("POST /_mock/reset HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{json}\r\nOrigin: http://127.0.0.1.evil.example"),
        // DNS rebinding: a loopback peer, but the browser's Host is the attacker's name.
        format!("POST /_mock/reset HTTP/1.1\r\nHost: evil.example:{port}\r\n{json}"),
        "GET /_mock/stats HTTP/1.1\r\nHost: rebind.evil.example".to_owned(),
        format!("POST /_mock/reset HTTP/1.1\r\nHost: localhost.evil.example\r\n{json}"),
        "GET /_mock/faults HTTP/1.1".to_owned(),
    ];
    for head in &refused {
        let (status, body) = control_request(addr, head, "{\"error_503\": 1}");
        assert!(
            status == 403 || status == 415,
            "{head:?} answered {status}: {body}"
        );
    }
    let stats = server.stats();
    assert_eq!(stats.payments, 1, "no refused request reset the mock");
    assert_eq!(
        c.create(&unique("o"), "k2", 100).status,
        201,
        "faults unchanged"
    );

    // Loopback names and addresses, with or without a loopback Origin, pass.
    for head in [
        format!("GET /_mock/stats HTTP/1.1\r\nHost: 127.0.0.1:{port}"),
        format!("GET /_mock/stats HTTP/1.1\r\nHost: localhost:{port}\r\nOrigin: http://localhost:{port}"),
        format!("GET /_mock/stats HTTP/1.1\r\nHost: [::1]:{port}"),
        "GET /_mock/stats HTTP/1.1\r\nHost: localhost".to_owned(),
        format!("POST /_mock/faults HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json; charset=utf-8\r\nOrigin: http://127.0.0.1:{port}"),
    ] {
        let (status, body) = control_request(addr, &head, "{}");
        assert_eq!(status, 200, "{head:?}: {body}");
    }
    let (status, _) = control_request(
        addr,
        &format!("POST /_mock/reset HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{json}"),
        "",
    );
    assert_eq!(status, 200);
    assert_eq!(server.stats().payments, 0);
    // The unauthenticated ping is not a control route.
    let (status, _) = control_request(
        addr,
        "GET /_mock/ping HTTP/1.1\r\nHost: x\r\nOrigin: http://evil.example",
        "",
    );
    assert_eq!(status, 200);
}

#[test]
fn non_ascii_header_bytes_are_answered() {
    let (server, c) = start_default();
    let addr = server.addr();
    let answer = raw(
        addr,
        b"GET /_mock/ping HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Note: caf\xc3\xa9\r\nX-Latin1: caf\xe9 \xff\r\nConnection: close\r\n\r\n",
        Duration::from_secs(5),
    );
    assert_eq!(status_of(&answer), 200, "{answer}");

    // A non-ASCII byte in a signed header fails verification with the
    // protocol's error, on an answered connection.
    let body = create_body(&unique("o"), 100);
    let headers = c.signed_headers("POST", "/v1/payments", "k-ascii", &body, c.now());
    let send = |replace: &str, value: &[u8]| {
        let mut req = b"POST /v1/payments HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n".to_vec();
        for (n, v) in &headers {
            req.extend_from_slice(n.as_bytes());
            req.extend_from_slice(b": ");
            if n.eq_ignore_ascii_case(replace) {
                req.extend_from_slice(value);
            } else {
                req.extend_from_slice(v.as_bytes());
            }
            req.extend_from_slice(b"\r\n");
        }
        req.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        req.extend_from_slice(&body);
        raw(addr, &req, Duration::from_secs(5))
    };
    let answer = send("Idempotency-Key", b"k-ascii\xe9");
    assert_eq!(status_of(&answer), 401, "{answer}");
    assert!(answer.contains(r#""code":"invalid_signature""#), "{answer}");
    let answer = send("Idempotency-Key", "k-café".as_bytes());
    assert_eq!(status_of(&answer), 401, "{answer}");
    let answer = send("X-Api-Key", b"key_t\xe9st_1");
    assert_eq!(status_of(&answer), 401, "{answer}");
    assert!(answer.contains(r#""code":"unknown_api_key""#), "{answer}");
    let answer = send("X-Signature", b"\xff\xfe");
    assert!(answer.contains(r#""code":"missing_signature""#), "{answer}");
    assert_eq!(server.stats().payments, 0);
    assert_eq!(c.create(&unique("o"), "k-ascii", 100).status, 201);
}

#[test]
fn slow_bodies_do_not_hold_the_workers() {
    let (server, mut c) = start(MockConfig {
        seed: Some(3),
        workers: 8,
        ..MockConfig::default()
    });
    c.agent = agent(Duration::from_secs(5));
    // More bodies that never come than there are workers.
    let slow = slow_bodies(server.addr(), 32);
    let idle = idle_connections(server.addr(), 50, Duration::from_secs(3));
    std::thread::sleep(Duration::from_millis(300));
    for i in 0..3 {
        let started = Instant::now();
        let r = c.try_post(
            "/v1/payments",
            &unique("k"),
            &create_body(&unique("o"), 100),
        );
        let took = started.elapsed();
        assert_eq!(
            r.map(|r| r.status).map_err(|e| e.to_string()),
            Ok(201),
            "{i}: {took:?}"
        );
        // Well inside the client's 5 s timeout, which a held worker would reach.
        assert!(took <= Duration::from_secs(3), "{i}: took {took:?}");
    }
    drop((slow, idle));
}

#[test]
fn incomplete_requests_and_idle_connections_time_out() {
    use std::io::Read;
    let limits = payidem_mock::ServerLimits {
        request_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(500),
        ..payidem_mock::ServerLimits::default()
    };
    let (server, c) = start(MockConfig {
        limits,
        ..MockConfig::default()
    });
    let started = Instant::now();
    let mut slow = slow_bodies(server.addr(), 1).pop().unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut answer = String::new();
    let _ = slow.read_to_string(&mut answer);
    assert_eq!(status_of(&answer), 408, "{answer}");
    assert!(answer.contains(r#""code":"request_timeout""#), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(3));
    let mut idle = idle_connections(server.addr(), 1, Duration::from_secs(2))
        .pop()
        .unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let started = Instant::now();
    assert_eq!(idle.read(&mut [0u8; 16]).unwrap_or(0), 0, "closed silently");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(c.plain("GET", "/_mock/ping", b"").status, 200);
    let bad = MockServer::start(MockConfig {
        limits: payidem_mock::ServerLimits {
            max_connections: 0,
            ..limits
        },
        ..MockConfig::default()
    });
    assert_eq!(bad.unwrap_err().field(), Some("max_connections"));
}
