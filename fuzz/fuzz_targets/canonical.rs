//! The canonical string and signing (core/src/protocol/canonical.rs,
//! signer.rs) on arbitrary parts: no panic; when accepted, the string has
//! the protocol's six lines and the signer agrees with itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use payidem::protocol::{body_sha256_hex, canonical_string, CanonicalParts, Nonce, Signer};

fuzz_target!(
    |input: (&str, &str, &str, &str, &str, &[u8], [u8; 16], u64)| {
        let (method, path, timestamp, nonce, key, body, nonce_bytes, ts) = input;
        let parts = CanonicalParts {
            method,
            path,
            timestamp,
            nonce,
            idempotency_key: key,
        };
        let signer = Signer::new("key_fuzz", b"0123456789abcdef-fuzz").unwrap();
        match canonical_string(&parts, body) {
            Ok(s) => {
                let lines: Vec<&str> = s.split('\n').collect();
                assert_eq!(
                    lines,
                    [method, path, timestamp, nonce, key, &body_sha256_hex(body)]
                );
                assert!(signer.sign(&parts, body).is_ok());
            }
            Err(e) => {
                assert!(e.field().is_some());
                assert!(signer.sign(&parts, body).is_err());
            }
        }
        // The one-call signer with a generated nonce and numeric timestamp.
        if let Ok(attempt) = signer.sign_attempt(
            method,
            path,
            key,
            body,
            ts,
            Nonce::from_random_bytes(nonce_bytes),
        ) {
            let parts = CanonicalParts {
                method,
                path,
                timestamp: attempt.timestamp_text(),
                nonce: attempt.nonce().as_str(),
                idempotency_key: key,
            };
            assert!(signer.sign(&parts, body).unwrap() == *attempt.signature());
            assert!(attempt.headers().count() >= 4);
        }
    }
);
