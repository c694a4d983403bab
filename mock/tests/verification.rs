//! Protocol section 3 steps 1 to 6, answered by the mock through payidem's
//! Verifier.

mod common;

use common::*;
use payidem::protocol::Nonce;
use payidem_mock::{ClockSetting, KeySpec, MockConfig, DEFAULT_KEY_ID};

const PATH: &str = "/v1/payments";

fn without(headers: &[(String, String)], name: &str) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case(name))
        .cloned()
        .collect()
}

fn replaced(headers: &[(String, String)], name: &str, value: &str) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(n, v)| {
            if n.eq_ignore_ascii_case(name) {
                (n.clone(), value.to_owned())
            } else {
                (n.clone(), v.clone())
            }
        })
        .collect()
}

#[test]
fn missing_or_malformed_signature_headers() {
    let (server, c) = start_default();
    let body = create_body(&unique("o"), 100);
    let good = c.signed_headers("POST", PATH, "k-missing", &body, c.now());
    for name in ["X-Api-Key", "X-Timestamp", "X-Nonce", "X-Signature"] {
        let r = c.send("POST", PATH, &without(&good, name), &body).unwrap();
        assert_eq!(
            (r.status, r.code().as_str()),
            (401, "missing_signature"),
            "without {name}"
        );
    }
    for (name, value) in [
        ("X-Timestamp", "012"),
        ("X-Nonce", "not-a-nonce"),
        ("X-Signature", "ABCD"),
    ] {
        let r = c
            .send("POST", PATH, &replaced(&good, name, value), &body)
            .unwrap();
        assert_eq!(
            (r.status, r.code().as_str()),
            (401, "missing_signature"),
            "malformed {name}"
        );
    }
    let mut repeated = good.clone();
    repeated.push(("X-Nonce".into(), good[2].1.clone()));
    assert_eq!(
        c.send("POST", PATH, &repeated, &body).unwrap().code(),
        "missing_signature"
    );
    let r = c.send("POST", PATH, &[], &body).unwrap();
    assert_eq!(
        r.json()["error"]["message"].as_str().map(|m| !m.is_empty()),
        Some(true)
    );
    assert_eq!(
        server.stats().requests.by_error_code["missing_signature"],
        9
    );
    assert_eq!(server.stats().payments, 0);
}

#[test]
fn unknown_api_key() {
    let (_server, _) = start_default();
    let c = Client::with_key(&_server.url(), "key_nobody", b"sk_test_0123456789abcdef");
    let r = c.create(&unique("o"), "k1", 100);
    assert_eq!((r.status, r.code().as_str()), (401, "unknown_api_key"));
}

#[test]
fn timestamp_out_of_window_carries_the_server_clock() {
    let fixed = 1_800_000_000;
    let (server, mut c) = start(MockConfig {
        clock: ClockSetting::Fixed(fixed),
        ..MockConfig::default()
    });
    c.fixed_now = Some(fixed + 301);
    let r = c.create(&unique("o"), "k1", 100);
    assert_eq!(
        (r.status, r.code().as_str()),
        (401, "timestamp_out_of_window")
    );
    assert_eq!(r.header("X-Server-Time"), Some("1800000000"));
    let date = httpdate::parse_http_date(r.header("Date").unwrap()).unwrap();
    assert_eq!(
        date,
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(fixed)
    );
    // Exactly 300 s away on either side is inside the window.
    c.fixed_now = Some(fixed - 300);
    assert_eq!(c.create(&unique("o"), &unique("k"), 100).status, 201);
    // A skewed server clock is honoured too.
    server.set_clock(ClockSetting::System {
        skew_seconds: -3600,
    });
    c.fixed_now = None;
    let r = c.create(&unique("o"), "k3", 100);
    assert_eq!(r.code(), "timestamp_out_of_window");
    let server_time: u64 = r.header("X-Server-Time").unwrap().parse().unwrap();
    assert!(unix_now() - 3600 - server_time <= 5);
}

#[test]
fn invalid_signature() {
    let (_s, c) = start_default();
    let body = create_body(&unique("o"), 100);
    let good = c.signed_headers("POST", PATH, "k1", &body, c.now());
    // Body changed after signing.
    let r = c
        .send("POST", PATH, &good, &create_body("other", 100))
        .unwrap();
    assert_eq!((r.status, r.code().as_str()), (401, "invalid_signature"));
    // Another idempotency key than signed.
    let r = c
        .send(
            "POST",
            PATH,
            &replaced(&good, "Idempotency-Key", "k2"),
            &body,
        )
        .unwrap();
    assert_eq!(r.code(), "invalid_signature");
    // Wrong secret.
    let wrong = Client::with_key(&c.base, DEFAULT_KEY_ID, b"sk_test_not_the_right_secret");
    assert_eq!(
        wrong.create(&unique("o"), "k1", 100).code(),
        "invalid_signature"
    );
}

#[test]
fn nonce_reused_and_idempotency_key_required() {
    let (server, c) = start_default();
    let body = create_body(&unique("o"), 100);
    let nonce = Nonce::parse("6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f").unwrap();
    let h = c.signed_headers_with_nonce("POST", PATH, "k-nonce", &body, c.now(), nonce);
    assert_eq!(c.send("POST", PATH, &h, &body).unwrap().status, 201);
    let r = c.send("POST", PATH, &h, &body).unwrap();
    assert_eq!((r.status, r.code().as_str()), (409, "nonce_reused"));
    assert!(!r.replayed());

    // A POST signed without an Idempotency-Key (the Signer refuses to, so
    // sign it as a GET would be signed and send it as a POST).
    let parts = payidem::protocol::CanonicalParts {
        method: "POST",
        path: PATH,
        timestamp: &c.now().to_string(),
        nonce: "0a1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f",
        idempotency_key: "",
    };
    let sig = c.signer.sign(&parts, &body).unwrap();
    let headers = vec![
        ("X-Api-Key".to_owned(), DEFAULT_KEY_ID.to_owned()),
        ("X-Timestamp".to_owned(), parts.timestamp.to_owned()),
        ("X-Nonce".to_owned(), parts.nonce.to_owned()),
        ("X-Signature".to_owned(), sig.to_string()),
    ];
    let r = c.send("POST", PATH, &headers, &body).unwrap();
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "idempotency_key_required")
    );
    let stats = server.stats();
    assert_eq!(stats.payments, 1);
    assert_eq!(
        stats.idempotency_keys_stored, 1,
        "answers before the store are never stored"
    );
}

#[test]
fn replay_cache_full_with_a_tiny_capacity() {
    let (server, c) = start(MockConfig {
        nonce_capacity: 2,
        ..MockConfig::default()
    });
    assert_eq!(c.get("/v1/payments?order_id=a").status, 404);
    assert_eq!(c.get("/v1/payments?order_id=b").status, 404);
    let r = c.create(&unique("o"), "k1", 100);
    assert_eq!((r.status, r.code().as_str()), (503, "replay_cache_full"));
    assert_eq!(server.stats().idempotency_keys_stored, 0);
}

#[test]
fn rotated_secrets_are_both_active() {
    let config = MockConfig::default()
        .with_key(KeySpec::new("key_rot", "sk_test_old_secret_0000").unwrap())
        .with_key(KeySpec::new("key_rot", "sk_test_new_secret_0000").unwrap());
    let server = payidem_mock::MockServer::start(config).unwrap();
    for secret in ["sk_test_old_secret_0000", "sk_test_new_secret_0000"] {
        let c = Client::with_key(&server.url(), "key_rot", secret.as_bytes());
        assert_eq!(c.create(&unique("o"), &unique("k"), 100).status, 201);
    }
    // Configured keys replace the default test key.
    assert_eq!(
        Client::new(&server.url())
            .create(&unique("o"), "k", 1)
            .code(),
        "unknown_api_key"
    );
}
