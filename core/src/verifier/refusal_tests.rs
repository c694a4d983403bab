//! Every code a [`Refusal`] answers for verification comes from a real
//! failure of [`Verifier::verify`]: these tests live above the pure
//! protocol, beside the verifier they drive.

use serde_json::json;

use super::{IncomingRequest, Verifier, VerifierConfig};
use crate::error::{Error, ErrorCode};
use crate::protocol::{headers, CanonicalParts, Nonce, Refusal, Signer};

const NOW: u64 = 1_767_225_600;
const SECRET: &[u8] = b"sk_test_0123456789abcdef";

fn header<'a>(r: &'a Refusal, name: &str) -> Option<&'a str> {
    headers::find(r.headers(), name)
}

fn body_of(r: &Refusal) -> serde_json::Value {
    serde_json::from_slice(r.body()).unwrap()
}

/// Signed headers of one attempt; `idempotency_key` "" sends none.
fn signed(method: &str, idempotency_key: &str, timestamp: u64, seed: u8) -> Vec<(String, String)> {
    let signer = Signer::new("key_1", SECRET).unwrap();
    let nonce = Nonce::from_random_bytes([seed; 16]);
    let timestamp_text = timestamp.to_string();
    let parts = CanonicalParts {
        method,
        path: "/v1/payments",
        timestamp: &timestamp_text,
        nonce: nonce.as_str(),
        idempotency_key,
    };
    let signature = signer.sign(&parts, b"{}").unwrap();
    let mut h = vec![
        ("X-Api-Key".to_owned(), "key_1".to_owned()),
        ("X-Timestamp".to_owned(), timestamp_text.clone()),
        ("X-Nonce".to_owned(), nonce.as_str().to_owned()),
        ("X-Signature".to_owned(), signature.as_str().to_owned()),
    ];
    if !idempotency_key.is_empty() {
        h.push(("Idempotency-Key".to_owned(), idempotency_key.to_owned()));
    }
    h
}

fn verify(v: &Verifier, method: &str, h: &[(String, String)]) -> Error {
    let pairs: Vec<(&str, &str)> = h.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let request = IncomingRequest {
        method,
        path: "/v1/payments",
        headers: &pairs,
        body: b"{}",
    };
    v.verify(&request, NOW)
        .expect_err("this request fails verification")
}

/// One real failure of `Verifier::verify` for every listed code: the
/// list is exactly what the verifier answers with, and each refusal is
/// the protocol's.
#[test]
fn every_verification_code_comes_from_the_verifier() {
    let verifier = || {
        let mut v = Verifier::new(VerifierConfig {
            nonce_capacity_per_key: 1,
            shards: 1,
            ..VerifierConfig::default()
        })
        .unwrap();
        v.add_key("key_1", &[SECRET]).unwrap();
        v
    };
    let mut seen = Vec::new();
    for code in Refusal::VERIFICATION_CODES {
        let v = verifier();
        let error = match code {
            ErrorCode::InvalidArgument => {
                let mut h = signed("GET", "", NOW, 1);
                h.push(("Idempotency-Key".into(), String::new()));
                verify(&v, "GET", &h)
            }
            ErrorCode::MissingSignature => verify(&v, "POST", &signed("POST", "k", NOW, 1)[1..]),
            ErrorCode::UnknownApiKey => {
                let mut h = signed("POST", "k", NOW, 1);
                h[0].1 = "key_2".into();
                verify(&v, "POST", &h)
            }
            ErrorCode::TimestampOutOfWindow => {
                verify(&v, "POST", &signed("POST", "k", NOW - 301, 1))
            }
            ErrorCode::InvalidSignature => verify(&v, "PUT", &signed("POST", "k", NOW, 1)),
            ErrorCode::NonceReused | ErrorCode::ReplayCacheFull => {
                let first = signed("POST", "k", NOW, 1);
                let pairs: Vec<(&str, &str)> = first
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.as_str()))
                    .collect();
                let request = IncomingRequest {
                    method: "POST",
                    path: "/v1/payments",
                    headers: &pairs,
                    body: b"{}",
                };
                v.verify(&request, NOW).unwrap();
                let seed = if code == ErrorCode::NonceReused { 1 } else { 2 };
                verify(&v, "POST", &signed("POST", "k", NOW, seed))
            }
            ErrorCode::IdempotencyKeyRequired => verify(&v, "POST", &signed("POST", "", NOW, 1)),
            ErrorCode::ReplayStoreUnavailable => {
                // A Redis store whose socket does not exist: fails closed.
                let mut v = Verifier::with_replay_store(
                    VerifierConfig::default(),
                    super::replay_store::ReplayStore::from_url(
                        "unix:///nonexistent-payidem-dir/redis.sock",
                    )
                    .unwrap(),
                )
                .unwrap();
                v.add_key("key_1", &[SECRET]).unwrap();
                verify(&v, "POST", &signed("POST", "k", NOW, 1))
            }
            other => panic!("no request provokes {other}: add one here"),
        };
        assert_eq!(error.code(), code, "{error:?}");
        let r = Refusal::for_error(&error);
        assert_eq!(Some(r.status()), code.http_status());
        assert_eq!(
            body_of(&r),
            json!({"error": {"code": code.as_str(), "message": error.message()}})
        );
        assert_eq!(
            header(&r, "Retry-After").is_some(),
            code == ErrorCode::ReplayStoreUnavailable
        );
        let clock = code == ErrorCode::TimestampOutOfWindow;
        assert_eq!(header(&r, "X-Server-Time"), clock.then_some("1767225600"));
        assert_eq!(
            header(&r, "Date").is_some(),
            clock,
            "Date only with the server time"
        );
        seen.push(code);
    }
    assert_eq!(seen, Refusal::VERIFICATION_CODES);
}
