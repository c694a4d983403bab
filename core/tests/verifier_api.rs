//! Issue #14, verifier hardening: what `verify` returns, the Idempotency-Key
//! header read exactly once, key removal and the verifier-wide nonce limit.
//! (Before the fix `Verified` had no nonce, an empty `Idempotency-Key` header
//! was skipped, and there was no `remove_key` or verifier-wide limit.)

use payidem::protocol::{Nonce, Signer};
use payidem::verifier::{IncomingRequest, Verifier, VerifierConfig};
use payidem::ErrorCode;

const T: u64 = 1_767_225_600;
const SECRET: &[u8] = b"sk_test_aaaaaaaaaaaaaaaaaaaaaaaa";

fn headers(seed: u64, key_id: &str, method: &str, idempotency_key: &str) -> Vec<(String, String)> {
    let signer = Signer::new(key_id, SECRET).unwrap();
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let attempt = signer
        .sign_attempt(
            method,
            "/v1/payments",
            idempotency_key,
            b"{}",
            T,
            Nonce::from_random_bytes(bytes),
        )
        .unwrap();
    attempt
        .headers()
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect()
}

fn verify(v: &Verifier, method: &str, h: &[(String, String)]) -> payidem::Result<String> {
    let pairs: Vec<(&str, &str)> = h.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let request = IncomingRequest {
        method,
        path: "/v1/payments",
        headers: &pairs,
        body: b"{}",
    };
    v.verify(&request, T).map(|ok| {
        format!(
            "{} {} {:?} {}",
            ok.key_id, ok.timestamp, ok.idempotency_key, ok.nonce
        )
    })
}

fn verifier() -> Verifier {
    let mut v = Verifier::new(VerifierConfig::default()).unwrap();
    v.add_key("key_1", &[SECRET]).unwrap();
    v.add_key("key_2", &[SECRET]).unwrap();
    v
}

#[test]
fn verify_returns_what_it_verified() {
    let v = verifier();
    let h = headers(1, "key_2", "POST", "create-o1");
    let nonce = h.iter().find(|(n, _)| n == "X-Nonce").unwrap().1.clone();
    assert_eq!(
        verify(&v, "POST", &h).unwrap(),
        format!("key_2 {T} Some(\"create-o1\") {nonce}")
    );
    let h = headers(2, "key_1", "GET", "");
    let nonce = h.iter().find(|(n, _)| n == "X-Nonce").unwrap().1.clone();
    assert_eq!(
        verify(&v, "GET", &h).unwrap(),
        format!("key_1 {T} None {nonce}")
    );
}

#[test]
fn an_empty_idempotency_key_header_is_an_error() {
    let v = verifier();
    // A GET signed without a key, with an empty header added: before the fix
    // the header was skipped and the request accepted.
    let mut h = headers(3, "key_1", "GET", "");
    h.push(("Idempotency-Key".into(), String::new()));
    let e = verify(&v, "GET", &h).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert_eq!(e.field(), Some("idempotency_key"));
    // A POST whose key header is followed by an empty one: before the fix the
    // empty one was skipped, so a host re-reading the last header acted on "".
    let mut h = headers(4, "key_1", "POST", "create-o4");
    h.push(("idempotency-key".into(), String::new()));
    // (The empty value is the one checked against the signature: refused.)
    assert!(verify(&v, "POST", &h).is_err());
}

#[test]
fn a_repeated_idempotency_key_header_is_an_error() {
    let v = verifier();
    let mut h = headers(5, "key_1", "POST", "create-o5");
    h.insert(0, ("Idempotency-Key".into(), "create-other".into()));
    let e = verify(&v, "POST", &h).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert_eq!(e.field(), Some("idempotency_key"));
}

#[test]
fn remove_key_forgets_the_key_id() {
    let mut v = verifier();
    verify(&v, "POST", &headers(6, "key_1", "POST", "k6")).unwrap();
    assert_eq!(v.nonces_held("key_1"), 1);
    v.remove_key("key_1").unwrap();
    assert_eq!(v.nonces_held("key_1"), 0);
    let e = verify(&v, "POST", &headers(7, "key_1", "POST", "k7")).unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownApiKey);
    assert_eq!(v.remove_key("key_1").unwrap_err().field(), Some("key_id"));
    // The other key id is untouched; the removed one can be added again.
    verify(&v, "POST", &headers(8, "key_2", "POST", "k8")).unwrap();
    v.add_key("key_1", &[SECRET]).unwrap();
    verify(&v, "POST", &headers(7, "key_1", "POST", "k7")).unwrap();
}

#[test]
fn the_verifier_wide_limit_bounds_every_key_id_together() {
    let mut v = verifier();
    assert_eq!(
        v.nonce_capacity_total(),
        payidem::verifier::DEFAULT_NONCE_CAPACITY_TOTAL
    );
    assert_eq!(
        v.set_nonce_capacity_total(0).unwrap_err().field(),
        Some("nonce_capacity_total")
    );
    v.set_nonce_capacity_total(3).unwrap();
    verify(&v, "POST", &headers(10, "key_1", "POST", "k")).unwrap();
    verify(&v, "POST", &headers(11, "key_1", "POST", "k")).unwrap();
    verify(&v, "POST", &headers(12, "key_2", "POST", "k")).unwrap();
    let e = verify(&v, "POST", &headers(13, "key_2", "POST", "k")).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ReplayCacheFull);
    assert_eq!(e.http_status(), Some(503));
    // Removing a key id gives its share back.
    v.remove_key("key_1").unwrap();
    verify(&v, "POST", &headers(13, "key_2", "POST", "k")).unwrap();
}

#[test]
fn a_window_beyond_the_bound_is_refused() {
    let e = Verifier::new(VerifierConfig {
        window_seconds: payidem::verifier::MAX_WINDOW_SECONDS + 1,
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(e.field(), Some("window_seconds"));
}
