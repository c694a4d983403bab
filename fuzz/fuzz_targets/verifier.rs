//! The verifier (core/src/verifier/mod.rs) on an IncomingRequest built
//! from arbitrary bytes, either raw or a correctly signed request with
//! fuzzed edits: no panic, every refusal carries the protocol's HTTP status,
//! and an unedited signed request verifies once and then is a replay.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use payidem::protocol::{Nonce, Signer};
use payidem::verifier::{IncomingRequest, Verifier, VerifierConfig};
use payidem::ErrorCode;

const KEY_ID: &str = "key_fuzz";
const SECRET: &[u8] = b"0123456789abcdef-fuzz-secret";
const NOW: u64 = 1_700_000_000;

#[derive(Arbitrary, Debug)]
enum Edit {
    SetValue(u8, String),
    SetName(u8, String),
    Remove(u8),
    Add(String, String),
    Duplicate(u8),
}

#[derive(Arbitrary, Debug)]
enum Input {
    Raw {
        method: String,
        path: String,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        now: u64,
        window: u16,
    },
    Signed {
        method: String,
        path: String,
        key: String,
        body: Vec<u8>,
        skew: i16,
        nonce: [u8; 16],
        edits: Vec<Edit>,
    },
}

fn verifier(window: u64) -> Verifier {
    let mut v = Verifier::new(VerifierConfig {
        window_seconds: window,
        nonce_capacity_per_key: 64,
        shards: 1,
    })
    .unwrap();
    v.add_key(KEY_ID, &[SECRET, b"another-active-secret-0123"])
        .unwrap();
    v
}

fn check(
    v: &Verifier,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: &[u8],
    now: u64,
) -> bool {
    let hdrs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let req = IncomingRequest {
        method,
        path,
        headers: &hdrs,
        body,
    };
    match v.verify(&req, now) {
        Ok(ok) => {
            assert_eq!(ok.key_id, KEY_ID);
            assert!(ok.timestamp.abs_diff(now) <= v.config().window_seconds);
            if method == "POST" {
                assert!(ok.idempotency_key.is_some());
            }
            true
        }
        Err(e) => {
            let status = e.http_status();
            assert!(status.is_some(), "{e:?} has no HTTP status");
            if e.code() == ErrorCode::TimestampOutOfWindow {
                assert_eq!(e.server_time(), Some(now));
            }
            false
        }
    }
}

fuzz_target!(|input: Input| {
    match input {
        Input::Raw {
            method,
            path,
            headers,
            body,
            now,
            window,
        } => {
            let v = verifier(u64::from(window));
            check(&v, &method, &path, &headers, &body, now);
        }
        Input::Signed {
            method,
            path,
            key,
            body,
            skew,
            nonce,
            edits,
        } => {
            let signer = Signer::new(KEY_ID, SECRET).unwrap();
            let ts = NOW.saturating_add_signed(i64::from(skew));
            let Ok(attempt) = signer.sign_attempt(
                &method,
                &path,
                &key,
                &body,
                ts,
                Nonce::from_random_bytes(nonce),
            ) else {
                return;
            };
            let mut headers: Vec<(String, String)> = attempt
                .headers()
                .map(|(n, v)| (n.to_owned(), v.to_owned()))
                .collect();
            let edited = !edits.is_empty();
            for edit in edits {
                let n = headers.len().max(1);
                match edit {
                    Edit::SetValue(i, s) => {
                        if let Some(h) = headers.get_mut(usize::from(i) % n) {
                            h.1 = s;
                        }
                    }
                    Edit::SetName(i, s) => {
                        if let Some(h) = headers.get_mut(usize::from(i) % n) {
                            h.0 = s;
                        }
                    }
                    Edit::Remove(i) => {
                        if !headers.is_empty() {
                            headers.remove(usize::from(i) % n);
                        }
                    }
                    Edit::Add(a, b) => headers.push((a, b)),
                    Edit::Duplicate(i) => {
                        if let Some(h) = headers.get(usize::from(i) % n).cloned() {
                            headers.push(h);
                        }
                    }
                }
            }
            let v = verifier(300);
            let first = check(&v, &method, &path, &headers, &body, NOW);
            if !edited {
                assert_eq!(
                    first,
                    skew.unsigned_abs() <= 300,
                    "an untouched signed request verifies inside the window"
                );
            }
            if first {
                // The same nonce again is always refused.
                assert!(!check(&v, &method, &path, &headers, &body, NOW));
            }
        }
    }
});
