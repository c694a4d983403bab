//! Every case of the shared conformance vectors (tests/vectors/protocol-v1.json).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use payidem::policy::{decide, Action, AttemptResult, Failure, Landed};
use payidem::protocol::{body_sha256_hex, canonical_string, CanonicalParts, Signer};
use payidem::verifier::{IncomingRequest, Verifier, VerifierConfig};
use payidem::ErrorCode;
use serde_json::Value;

fn vectors() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/protocol-v1.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

fn b64(v: &Value, key: &str) -> Vec<u8> {
    B64.decode(s(v, key)).unwrap()
}

fn parts(case: &Value) -> CanonicalParts<'_> {
    CanonicalParts {
        method: s(case, "method"),
        path: s(case, "path"),
        timestamp: s(case, "timestamp"),
        nonce: s(case, "nonce"),
        idempotency_key: s(case, "idempotency_key"),
    }
}

#[test]
fn sign_cases() {
    let v = vectors();
    let cases = v["sign"].as_array().unwrap();
    assert_eq!(cases.len(), 11);
    for case in cases {
        let name = s(case, "name");
        let body = b64(case, "body_b64");
        let expect = &case["expect"];
        assert_eq!(
            canonical_string(&parts(case), &body).unwrap(),
            s(expect, "canonical"),
            "{name}"
        );
        assert_eq!(body_sha256_hex(&body), s(expect, "body_sha256"), "{name}");
        let signer = Signer::new("key_live_1", &b64(case, "secret_b64")).unwrap();
        assert_eq!(
            signer.sign(&parts(case), &body).unwrap().as_str(),
            s(expect, "signature"),
            "{name}"
        );
    }
}

#[test]
fn sign_invalid_cases() {
    let v = vectors();
    let cases = v["sign_invalid"].as_array().unwrap();
    assert_eq!(cases.len(), 18);
    for case in cases {
        let name = s(case, "name");
        assert_eq!(s(case, "expect_error"), "invalid_argument");
        let body = b64(case, "body_b64");
        let err = Signer::new("key_live_1", &b64(case, "secret_b64"))
            .and_then(|signer| signer.sign(&parts(case), &body))
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{name}");
        assert_eq!(err.field(), Some(s(case, "field")), "{name}: {err}");
        assert!(err.message().starts_with(s(case, "field")), "{name}: {err}");
    }
}

#[test]
fn verify_sequence() {
    let v = vectors();
    let seq = &v["verify_sequence"];
    let mut verifier = Verifier::new(VerifierConfig {
        window_seconds: seq["window_seconds"].as_u64().unwrap(),
        ..Default::default()
    })
    .unwrap();
    let keys = seq["keys_b64"].as_object().unwrap();
    for (key_id, secrets) in keys {
        let secrets: Vec<Vec<u8>> = secrets
            .as_array()
            .unwrap()
            .iter()
            .map(|s| B64.decode(s.as_str().unwrap()).unwrap())
            .collect();
        let refs: Vec<&[u8]> = secrets.iter().map(Vec::as_slice).collect();
        verifier.add_key(key_id, &refs).unwrap();
    }
    let requests = seq["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 20);
    for req in requests {
        let name = s(req, "name");
        let headers: Vec<(&str, &str)> = req["headers"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str().unwrap()))
            .collect();
        let body = b64(req, "body_b64");
        let incoming = IncomingRequest {
            method: s(req, "method"),
            path: s(req, "path"),
            headers: &headers,
            body: &body,
        };
        let now = req["server_now"].as_u64().unwrap();
        let result = verifier.verify(&incoming, now);
        let expect = &req["expect"];
        match expect["code"].as_str() {
            None => {
                let ok = result.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(expect["status"], 200, "{name}");
                assert_eq!(
                    ok.key_id,
                    headers.iter().find(|h| h.0 == "X-Api-Key").unwrap().1
                );
            }
            Some(code) => {
                let err = result.expect_err(name);
                assert_eq!(err.code().as_str(), code, "{name}: {err}");
                assert_eq!(
                    u64::from(err.http_status().unwrap()),
                    expect["status"].as_u64().unwrap(),
                    "{name}"
                );
                if code == "timestamp_out_of_window" {
                    assert_eq!(err.server_time(), Some(now), "{name}");
                }
            }
        }
    }
}

#[test]
fn decide_cases() {
    let v = vectors();
    let cases = v["decide"].as_array().unwrap();
    assert_eq!(cases.len(), 21);
    for case in cases {
        let name = s(case, "name");
        let given = &case["given"];
        let headers: Vec<(&str, &str)> = given["headers"]
            .as_object()
            .map(|h| {
                h.iter()
                    .map(|(k, v)| (k.as_str(), v.as_str().unwrap()))
                    .collect()
            })
            .unwrap_or_default();
        let result = match s(given, "outcome") {
            "response" => AttemptResult::Response {
                status: given["status"].as_u64().unwrap() as u16,
                error_code: given["error_code"].as_str(),
                headers: &headers,
            },
            "not_sent" => AttemptResult::NotSent,
            "sent_no_response" => AttemptResult::SentNoResponse,
            other => panic!("{name}: unknown outcome {other}"),
        };
        let has_status_path = given["has_status_path"].as_bool().unwrap_or(false);
        let got = decide(&result, has_status_path, 1_767_225_600);
        let expect = &case["expect"];
        let want = match s(expect, "decision") {
            "done" => Action::Done {
                replayed: expect["replayed"].as_bool().unwrap(),
            },
            "fail" => Action::Fail(match s(expect, "error") {
                "idempotency_conflict" => Failure::IdempotencyConflict,
                "rejected" => Failure::Rejected,
                other => panic!("{name}: unknown error {other}"),
            }),
            "retry_now" => Action::RetryNow,
            "retry_backoff" => Action::RetryBackoff,
            "retry_after" => Action::RetryAfter {
                seconds: expect["seconds"].as_u64().unwrap(),
            },
            "adjust_clock_retry" => Action::AdjustClockRetry {
                server_time: expect["server_time"].as_u64().unwrap(),
            },
            "query_status" => Action::QueryStatus,
            other => panic!("{name}: unknown decision {other}"),
        };
        assert_eq!(got.action, want, "{name}");
        // The vectors' `unknown: true` ("if retries run out, the outcome is
        // unknown") is payidem's "may have landed". Where they say nothing,
        // they assert nothing: the operation vectors pin those (a 500 may
        // have landed).
        if expect["unknown"].as_bool() == Some(true) {
            assert_eq!(got.landed, Landed::Maybe, "{name}");
        }
        if s(expect, "decision") == "done" {
            assert_eq!(got.landed, Landed::Yes, "{name}");
        }
    }
}
