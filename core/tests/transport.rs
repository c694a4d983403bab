//! The client's transport hardening (issue #14): https required except for
//! loopback, explicit proxies only, the learnt clock offset bounded and
//! never learnt over plain http, TLS trust (CA bundle, system store) and
//! mutual TLS, TLS failures before any byte of the request reported as not
//! sent, the base URL's path prefix signed, redirects never followed.

mod support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use payidem::operation::OperationState;
use payidem::verifier::{IncomingRequest, Verifier, VerifierConfig};
use payidem::{Client, ErrorCode};
use support::*;

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn skewed_401(ahead: i64) -> Vec<u8> {
    let server_time = (unix_now() as i64 + ahead).to_string();
    response(
        401,
        &[("X-Server-Time", &server_time)],
        r#"{"error":{"code":"timestamp_out_of_window","message":"skew"}}"#,
    )
}

#[test]
fn plain_http_to_a_non_loopback_host_is_refused_unless_allowed() {
    for url in ["http://api.example.com", "http://10.1.2.3:8080/api"] {
        let e = Client::new(config(url), SECRET).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{url}: {e}");
        assert_eq!(e.field(), Some("base_url"), "{url}: {e}");
        assert!(e.message().contains("https://"), "{e}");
        let mut allowed = config(url);
        allowed.allow_insecure_http = true;
        Client::new(allowed, SECRET).unwrap();
    }
    for url in [
        "http://127.0.0.1:9",
        "http://localhost:9",
        "http://[::1]:9",
        "https://api.example.com",
    ] {
        Client::new(config(url), SECRET).unwrap();
    }
}

#[test]
fn an_explicit_proxy_option_is_used() {
    let platform = Server::http(|_| created());
    let proxy = TunnelProxy::to(platform.port);
    let mut config = config("http://platform.invalid:8080");
    config.allow_insecure_http = true;
    config.proxy = Some(proxy.url());
    let client = Client::new(config, SECRET).unwrap();
    client.execute(&payment("ord-proxy-1")).unwrap();
    assert_eq!(
        proxy.connects(),
        vec!["CONNECT platform.invalid:8080 HTTP/1.1".to_owned()]
    );
    assert_eq!(platform.seen().len(), 1);
}

#[test]
fn a_proxy_that_refuses_the_tunnel_means_nothing_was_sent() {
    // A fake proxy answering CONNECT with a forged 201.
    let proxy = Server::http(|_| created());
    let mut config = config("https://api.example.com");
    config.proxy = Some(proxy.url("http"));
    let client = Client::new(config, SECRET).unwrap();
    let e = client.execute(&payment("ord-proxy-2")).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Transport, "{e}");
    assert_eq!(proxy.seen()[0].method, "CONNECT");
    assert_eq!(
        client.status("ord-proxy-2").unwrap().unwrap().state,
        OperationState::Pending
    );
}

#[test]
fn a_forged_clock_offset_beyond_the_bound_is_refused() {
    // One day ahead: a platform a day later would accept the signature.
    let platform = Server::http(|_| skewed_401(86_400));
    let mut cfg = config(&platform.url("http"));
    cfg.retry.max_attempts = 3;
    let client = Client::new(cfg, SECRET).unwrap();
    let e = client.execute(&payment("ord-clock-1")).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Refused, "{e}");
    assert_eq!(e.http_status(), Some(401));
    assert!(e.message().contains("max_clock_offset"), "{e}");
    assert_eq!(client.clock_offset().seconds(), 0);
    // Nothing was signed with the forged time.
    let seen = platform.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let ts: u64 = seen[0].header("x-timestamp").unwrap().parse().unwrap();
    assert!(ts.abs_diff(unix_now()) < 60);
    assert_eq!(
        client.status("ord-clock-1").unwrap().unwrap().state,
        OperationState::Pending
    );
}

#[test]
fn a_clock_offset_within_the_bound_is_learnt_and_the_bound_is_configurable() {
    let ahead = 400;
    let platform = Server::http(move |seen| {
        let ts: i64 = seen.header("x-timestamp").unwrap().parse().unwrap();
        if (ts - (unix_now() as i64 + ahead)).abs() <= 5 {
            created()
        } else {
            skewed_401(ahead)
        }
    });
    let mut cfg = config(&platform.url("http"));
    cfg.retry.max_attempts = 3;
    let client = Client::new(cfg, SECRET).unwrap();
    client.execute(&payment("ord-clock-2")).unwrap();
    assert!((ahead - 1..=ahead + 1).contains(&client.clock_offset().seconds()));

    let mut tight = config(&platform.url("http"));
    tight.retry.max_attempts = 3;
    tight.max_clock_offset = Duration::from_secs(300);
    let client = Client::new(tight, SECRET).unwrap();
    let e = client.execute(&payment("ord-clock-3")).unwrap_err();
    assert!(e.message().contains("max_clock_offset (300 s)"), "{e}");
}

#[test]
fn the_clock_is_never_learnt_over_plain_http_to_a_non_loopback_host() {
    // The "proxy" plays a platform reached over plain http.
    let platform = Server::http(|_| skewed_401(400));
    let proxy = TunnelProxy::to(platform.port);
    let mut cfg = config("http://platform.invalid");
    cfg.allow_insecure_http = true;
    cfg.proxy = Some(proxy.url());
    cfg.retry.max_attempts = 3;
    let client = Client::new(cfg, SECRET).unwrap();
    let e = client.execute(&payment("ord-clock-4")).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Refused, "{e}");
    assert!(e.message().contains("plain http"), "{e}");
    assert_eq!(client.clock_offset().seconds(), 0);
    assert_eq!(platform.seen().len(), 1);
}

#[test]
fn an_unknown_issuer_is_not_sent_and_the_operation_stays_resumable() {
    let pki = Pki::new();
    let server = Server::tls(pki.server_config(false), |_| created());
    let client = Client::new(config(&server.url("https")), SECRET).unwrap();
    let e = client.execute(&payment("ord-tls-1")).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Transport, "{e}");
    assert!(e.message().contains("nothing reached the platform"), "{e}");
    assert!(e.message().contains("TLS"), "{e}");
    assert_eq!(
        client.status("ord-tls-1").unwrap().unwrap().state,
        OperationState::Pending
    );
    assert!(client.list_unknown().unwrap().is_empty());
    assert!(server.seen().is_empty());
    // The same operation goes through once the CA is trusted.
    let mut trusted = config(&server.url("https"));
    trusted.ca_bundle = Some(pki.ca_pem.clone());
    trusted.journal =
        payidem::JournalChoice::Custom(std::sync::Arc::new(payidem::journal::MemoryJournal::new()));
    let client = Client::new(trusted, SECRET).unwrap();
    assert_eq!(
        client
            .execute(&payment("ord-tls-1"))
            .unwrap()
            .response
            .status,
        201
    );
}

#[test]
fn a_ca_bundle_option_is_trusted() {
    let pki = Pki::new();
    let server = Server::tls(pki.server_config(false), |_| created());
    let mut cfg = config(&server.url("https"));
    cfg.ca_bundle = Some(pki.ca_pem.clone());
    let client = Client::new(cfg, SECRET).unwrap();
    let outcome = client.execute(&payment("ord-tls-2")).unwrap();
    assert_eq!(outcome.response.status, 201);
    assert_eq!(server.seen().len(), 1);
    assert!(server.seen()[0].client_cert.is_none());
}

#[test]
fn a_client_certificate_is_presented_and_accepted() {
    let pki = Pki::new();
    let server = Server::tls(pki.server_config(true), |_| created());
    let mut cfg = config(&server.url("https"));
    cfg.ca_bundle = Some(pki.ca_pem.clone());
    cfg.client_cert = Some(pki.client_cert_pem.clone());
    cfg.client_key = Some(pki.client_key_pem.clone());
    let key_pem = std::fs::read_to_string(&pki.client_key_pem).unwrap();
    let key_line = key_pem.lines().nth(1).unwrap().to_owned();
    assert!(!format!("{cfg:?}").contains(&key_line));
    let client = Client::new(cfg, SECRET).unwrap();
    assert!(!format!("{client:?}").contains(&key_line));
    let outcome = client.execute(&payment("ord-mtls-1")).unwrap();
    assert_eq!(outcome.response.status, 201);
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].client_cert.as_deref(),
        Some(&pki.client_cert_der[..])
    );
}

#[test]
fn client_certificate_options_are_checked_without_leaking_the_key() {
    let pki = Pki::new();
    let key_pem = std::fs::read_to_string(&pki.client_key_pem).unwrap();
    let key_line = key_pem.lines().nth(1).unwrap().to_owned();
    let mut only_cert = config("https://api.example.com");
    only_cert.client_cert = Some(pki.client_cert_pem.clone());
    let e = Client::new(only_cert, SECRET).unwrap_err();
    assert_eq!(e.field(), Some("client_key"), "{e}");

    // The key given as the certificate, the certificate as the key.
    let mut swapped = config("https://api.example.com");
    swapped.client_cert = Some(pki.client_key_pem.clone());
    swapped.client_key = Some(pki.client_cert_pem.clone());
    let e = Client::new(swapped, SECRET).unwrap_err();
    assert_eq!(e.field(), Some("client_cert"), "{e}");
    assert!(!e.to_string().contains(&key_line), "{e}");

    let mut missing = config("https://api.example.com");
    missing.ca_bundle = Some(pki.path().join("absent.pem"));
    let e = Client::new(missing, SECRET).unwrap_err();
    assert_eq!(e.field(), Some("ca_bundle"), "{e}");

    // A key that is not the certificate's.
    let other = Pki::new();
    let mut mismatched = config("https://api.example.com");
    mismatched.client_cert = Some(pki.client_cert_pem.clone());
    mismatched.client_key = Some(other.client_key_pem.clone());
    let e = Client::new(mismatched, SECRET).unwrap_err();
    assert_eq!(e.field(), Some("client_key"), "{e}");
    assert!(!e.to_string().contains(&key_line), "{e}");
}

#[test]
fn the_base_url_prefix_is_sent_and_signed() {
    let mut verifier = Verifier::new(VerifierConfig::default()).unwrap();
    verifier.add_key(KEY_ID, &[SECRET]).unwrap();
    let platform = Server::http(move |seen| {
        let headers: Vec<(&str, &str)> = seen
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let request = IncomingRequest {
            method: &seen.method,
            path: &seen.target,
            headers: &headers,
            body: &seen.body,
        };
        match verifier.verify(&request, unix_now()) {
            Ok(_) => created(),
            Err(e) => response(
                401,
                &[],
                &format!(
                    r#"{{"error":{{"code":"{}","message":"x"}}}}"#,
                    e.code().as_str()
                ),
            ),
        }
    });
    let client = Client::new(config(&format!("{}/api/", platform.url("http"))), SECRET).unwrap();
    let outcome = client.execute(&payment("ord-prefix-1")).unwrap();
    assert_eq!(outcome.response.status, 201);
    assert_eq!(client.get("/v1/payments/pay_1").unwrap().status, 201);
    let seen = platform.seen();
    assert_eq!(seen[0].target, "/api/v1/payments");
    assert_eq!(seen[1].target, "/api/v1/payments/pay_1");
    // The journal keeps the request target as sent.
    let record = client.status("ord-prefix-1").unwrap().unwrap();
    assert_eq!(record.operation.path, "/api/v1/payments");
}

#[test]
fn redirects_are_never_followed() {
    let elsewhere = Server::http(|_| created());
    let location = format!("{}/v1/payments", elsewhere.url("http"));
    let platform = Server::http(move |_| response(307, &[("Location", &location)], ""));
    let client = Client::new(config(&platform.url("http")), SECRET).unwrap();
    let e = client.execute(&payment("ord-redirect-1")).unwrap_err();
    assert_eq!(e.code(), ErrorCode::OutcomeUnknown, "{e}");
    assert_eq!(client.get("/v1/payments/pay_1").unwrap().status, 307);
    assert_eq!(platform.seen().len(), 2);
    assert!(elsewhere.seen().is_empty());
}
