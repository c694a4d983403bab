//! The redaction vectors (core/tests/vectors/redact-v1.json) against
//! [`payidem::redact_url`]. The Go binding runs the same file against its
//! own redaction (bindings/go/redact_test.go): both must print every
//! location the same way.

use serde_json::Value;

#[test]
fn every_vector_is_redacted_as_written_and_hides_its_secrets() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/redact-v1.json"
    ))
    .unwrap();
    let file: Value = serde_json::from_str(&text).unwrap();
    let vectors = file["vectors"].as_array().unwrap();
    assert!(vectors.len() >= 20, "the vector file lost its vectors");
    for v in vectors {
        let input = v["input"].as_str().unwrap();
        let want = v["redacted"].as_str().unwrap();
        let got = payidem::redact_url(input);
        assert_eq!(got, want, "input {input:?}");
        for secret in v["secrets"].as_array().unwrap() {
            let secret = secret.as_str().unwrap();
            assert!(
                !got.contains(secret),
                "{input:?} -> {got:?} shows {secret:?}"
            );
        }
    }
}
