//! Properties of signing, verification and the retry policy, checked on
//! generated inputs (proptest).

use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use payidem::policy::{
    decide, parse_retry_after, Action, AttemptResult, Failure, Landed, RetryPolicy,
};
use payidem::protocol::{
    body_sha256_hex, canonical_string, CanonicalParts, Nonce, SignedAttempt, Signer,
};
use payidem::verifier::{IncomingRequest, Verifier, VerifierConfig};
use payidem::ErrorCode;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use sha2::Sha256;

const KEY_ID: &str = "key_live_1";
const WINDOW: u64 = 300;

/// One attempt's inputs, each within its rule.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Input {
    method: String,
    path: String,
    timestamp: u64,
    nonce: [u8; 16],
    idempotency_key: String,
    body: Vec<u8>,
    secret: Vec<u8>,
}

impl Input {
    fn nonce(&self) -> Nonce {
        Nonce::from_random_bytes(self.nonce)
    }

    fn sign(&self) -> SignedAttempt {
        Signer::new(KEY_ID, &self.secret)
            .unwrap()
            .sign_attempt(
                &self.method,
                &self.path,
                &self.idempotency_key,
                &self.body,
                self.timestamp,
                self.nonce(),
            )
            .unwrap_or_else(|e| panic!("a valid input was refused: {e}"))
    }
}

fn path() -> impl Strategy<Value = String> {
    // Short paths most of the time, up to the 2048-byte limit sometimes.
    prop_oneof![
        4 => "/[!-~]{0,64}",
        1 => "/[!-~]{0,2047}",
    ]
}

fn idempotency_key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[A-Za-z0-9._:-]{1,40}",
        1 => "[A-Za-z0-9._:-]{1,255}",
    ]
}

fn timestamp() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(u64::MAX),
        1_600_000_000u64..2_000_000_000,
        any::<u64>(),
    ]
}

fn secret() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => vec(any::<u8>(), 16..=64),
        1 => vec(any::<u8>(), 16..=1024),
    ]
}

fn input() -> impl Strategy<Value = Input> {
    (
        "[A-Z]{1,16}",
        path(),
        timestamp(),
        any::<[u8; 16]>(),
        prop::option::of(idempotency_key()),
        vec(any::<u8>(), 0..512),
        secret(),
    )
        .prop_map(|(method, path, timestamp, nonce, key, body, secret)| {
            // Every POST carries a key; other methods may or may not.
            let idempotency_key = match key {
                Some(key) => key,
                None if method == "POST" => "create-o1".to_owned(),
                None => String::new(),
            };
            Input {
                method,
                path,
                timestamp,
                nonce,
                idempotency_key,
                body,
                secret,
            }
        })
}

fn verifier_for(secret: &[u8]) -> Verifier {
    let mut v = Verifier::new(VerifierConfig::default()).unwrap();
    v.add_key(KEY_ID, &[secret]).unwrap();
    v
}

fn owned_headers(attempt: &SignedAttempt) -> Vec<(String, String)> {
    attempt
        .headers()
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect()
}

fn verify_with(
    verifier: &Verifier,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: &[u8],
    now: u64,
) -> payidem::Result<()> {
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let request = IncomingRequest {
        method,
        path,
        headers: &headers,
        body,
    };
    verifier.verify(&request, now).map(|_| ())
}

fn set_header(headers: &mut [(String, String)], name: &str, value: String) {
    let slot = headers
        .iter_mut()
        .find(|(n, _)| n == name)
        .expect("header present");
    slot.1 = value;
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One change to one field of a signed request.
#[derive(Clone, Debug)]
enum Mutation {
    Method(String),
    Path(String),
    TimestampInWindow { delta: u64, later: bool },
    TimestampOutOfWindow { delta: u64, later: bool },
    TimestampLeadingZero,
    Nonce([u8; 16]),
    NonceUpperCase,
    IdempotencyKey(String),
    IdempotencyKeyRemoved,
    BodyByte { index: usize, xor: u8 },
    BodyExtraByte(u8),
    Secret(Vec<u8>),
    KeyId(String),
    SignatureDigit { index: usize, add: u8 },
    SignatureUpperCase,
    HeaderRemoved(usize),
    HeaderRepeated(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        "[A-Z]{1,16}".prop_map(Mutation::Method),
        path().prop_map(Mutation::Path),
        (1..=WINDOW, any::<bool>())
            .prop_map(|(delta, later)| Mutation::TimestampInWindow { delta, later }),
        (WINDOW + 1..=u64::MAX, any::<bool>())
            .prop_map(|(delta, later)| Mutation::TimestampOutOfWindow { delta, later }),
        Just(Mutation::TimestampLeadingZero),
        any::<[u8; 16]>().prop_map(Mutation::Nonce),
        Just(Mutation::NonceUpperCase),
        idempotency_key().prop_map(Mutation::IdempotencyKey),
        Just(Mutation::IdempotencyKeyRemoved),
        (any::<usize>(), 1..=255u8).prop_map(|(index, xor)| Mutation::BodyByte { index, xor }),
        any::<u8>().prop_map(Mutation::BodyExtraByte),
        secret().prop_map(Mutation::Secret),
        "[A-Za-z0-9._:-]{1,128}".prop_map(Mutation::KeyId),
        (0..64usize, 1..16u8).prop_map(|(index, add)| Mutation::SignatureDigit { index, add }),
        Just(Mutation::SignatureUpperCase),
        (0..4usize).prop_map(Mutation::HeaderRemoved),
        (0..4usize).prop_map(Mutation::HeaderRepeated),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// A signed attempt verifies at its own timestamp, carries the signature
    /// an independent HMAC computes over the canonical string, and is
    /// refused as a replay the second time.
    #[test]
    fn sign_then_verify_round_trips(input in input()) {
        let attempt = input.sign();
        let timestamp = input.timestamp.to_string();
        let nonce = input.nonce();
        let parts = CanonicalParts {
            method: &input.method,
            path: &input.path,
            timestamp: &timestamp,
            nonce: nonce.as_str(),
            idempotency_key: &input.idempotency_key,
        };
        let canonical = canonical_string(&parts, &input.body).unwrap();
        let mut mac = Hmac::<Sha256>::new_from_slice(&input.secret).unwrap();
        mac.update(canonical.as_bytes());
        prop_assert_eq!(attempt.signature().as_str(), hex(&mac.finalize().into_bytes()));
        let signer = Signer::new(KEY_ID, &input.secret).unwrap();
        prop_assert_eq!(signer.sign(&parts, &input.body).unwrap(), *attempt.signature());

        let verifier = verifier_for(&input.secret);
        let headers: Vec<(&str, &str)> = attempt.headers().collect();
        let request = IncomingRequest {
            method: &input.method,
            path: &input.path,
            headers: &headers,
            body: &input.body,
        };
        let verified = verifier.verify(&request, input.timestamp).unwrap();
        prop_assert_eq!(verified.key_id, KEY_ID);
        prop_assert_eq!(verified.timestamp, input.timestamp);
        prop_assert_eq!(
            verified.idempotency_key,
            (!input.idempotency_key.is_empty()).then_some(input.idempotency_key.as_str())
        );
        let replay = verifier.verify(&request, input.timestamp).unwrap_err();
        prop_assert_eq!(replay.code(), ErrorCode::NonceReused);
        prop_assert_eq!(replay.http_status(), Some(409));
    }

    /// Changing any one field of a signed request makes verification fail
    /// with the protocol's code for that field, and the failed attempt does
    /// not burn the original's nonce.
    #[test]
    fn any_single_mutation_is_refused(input in input(), change in mutation()) {
        let attempt = input.sign();
        let now = input.timestamp;
        let mut method = input.method.clone();
        let mut path = input.path.clone();
        let mut headers = owned_headers(&attempt);
        let mut body = input.body.clone();
        let mut verifier_secret = input.secret.clone();

        let expected = match change {
            Mutation::Method(m) => {
                prop_assume!(m != input.method);
                method = m;
                ErrorCode::InvalidSignature
            }
            Mutation::Path(p) => {
                prop_assume!(p != input.path);
                path = p;
                ErrorCode::InvalidSignature
            }
            Mutation::TimestampInWindow { delta, later } => {
                let moved = if later { now.checked_add(delta) } else { now.checked_sub(delta) };
                let moved = moved.or_else(|| if later { now.checked_sub(delta) } else { now.checked_add(delta) });
                set_header(&mut headers, "X-Timestamp", moved.unwrap().to_string());
                ErrorCode::InvalidSignature
            }
            Mutation::TimestampOutOfWindow { delta, later } => {
                let moved = if later { now.checked_add(delta) } else { now.checked_sub(delta) };
                let moved = moved.or_else(|| if later { now.checked_sub(delta) } else { now.checked_add(delta) });
                // Near the middle of the u64 range a huge delta fits neither way.
                let moved = moved.unwrap_or(if now > u64::MAX / 2 { 0 } else { u64::MAX });
                prop_assume!(moved.abs_diff(now) > WINDOW);
                set_header(&mut headers, "X-Timestamp", moved.to_string());
                ErrorCode::TimestampOutOfWindow
            }
            Mutation::TimestampLeadingZero => {
                set_header(&mut headers, "X-Timestamp", format!("0{now}"));
                ErrorCode::MissingSignature
            }
            Mutation::Nonce(bytes) => {
                let other = Nonce::from_random_bytes(bytes);
                prop_assume!(other != input.nonce());
                set_header(&mut headers, "X-Nonce", other.to_string());
                ErrorCode::InvalidSignature
            }
            Mutation::NonceUpperCase => {
                let upper = input.nonce().as_str().to_ascii_uppercase();
                prop_assume!(upper != input.nonce().as_str());
                set_header(&mut headers, "X-Nonce", upper);
                ErrorCode::MissingSignature
            }
            Mutation::IdempotencyKey(k) => {
                prop_assume!(k != input.idempotency_key);
                headers.retain(|(n, _)| n != "Idempotency-Key");
                headers.push(("Idempotency-Key".to_owned(), k));
                ErrorCode::InvalidSignature
            }
            Mutation::IdempotencyKeyRemoved => {
                prop_assume!(!input.idempotency_key.is_empty());
                headers.retain(|(n, _)| n != "Idempotency-Key");
                ErrorCode::InvalidSignature
            }
            Mutation::BodyByte { index, xor } => {
                prop_assume!(!body.is_empty());
                let at = index % body.len();
                body[at] ^= xor;
                ErrorCode::InvalidSignature
            }
            Mutation::BodyExtraByte(b) => {
                body.push(b);
                ErrorCode::InvalidSignature
            }
            Mutation::Secret(s) => {
                prop_assume!(s != input.secret);
                verifier_secret = s;
                ErrorCode::InvalidSignature
            }
            Mutation::KeyId(k) => {
                prop_assume!(k != KEY_ID);
                // The verifier knows only KEY_ID.
                set_header(&mut headers, "X-Api-Key", k);
                ErrorCode::UnknownApiKey
            }
            Mutation::SignatureDigit { index, add } => {
                let digits = b"0123456789abcdef";
                let mut sig = attempt.signature().as_str().as_bytes().to_vec();
                let pos = digits.iter().position(|&d| d == sig[index]).unwrap();
                sig[index] = digits[(pos + usize::from(add)) % 16];
                set_header(&mut headers, "X-Signature", String::from_utf8(sig).unwrap());
                ErrorCode::InvalidSignature
            }
            Mutation::SignatureUpperCase => {
                let upper = attempt.signature().as_str().to_ascii_uppercase();
                prop_assume!(upper != attempt.signature().as_str());
                set_header(&mut headers, "X-Signature", upper);
                ErrorCode::MissingSignature
            }
            Mutation::HeaderRemoved(i) => {
                headers.remove(i);
                ErrorCode::MissingSignature
            }
            Mutation::HeaderRepeated(i) => {
                let copy = headers[i].clone();
                headers.push(copy);
                ErrorCode::MissingSignature
            }
        };

        let verifier = verifier_for(&verifier_secret);
        let err = verify_with(&verifier, &method, &path, &headers, &body, now).unwrap_err();
        prop_assert_eq!(err.code(), expected, "{}", err);
        let status = match expected {
            ErrorCode::UnknownApiKey
            | ErrorCode::MissingSignature
            | ErrorCode::TimestampOutOfWindow
            | ErrorCode::InvalidSignature => 401,
            _ => unreachable!("no other code is expected"),
        };
        prop_assert_eq!(err.http_status(), Some(status));
        if expected == ErrorCode::TimestampOutOfWindow {
            prop_assert_eq!(err.server_time(), Some(now));
        }
        // A refused attempt records nothing: the genuine one still passes.
        if verifier_secret == input.secret {
            let genuine = owned_headers(&attempt);
            prop_assert!(verify_with(&verifier, &input.method, &input.path, &genuine, &input.body, now).is_ok());
        }
    }
}

/// Inputs drawn from tiny alphabets, so that pairs are often equal or differ
/// by one character moved across a field boundary.
fn small_input() -> impl Strategy<Value = Input> {
    (
        "[AB]{1,2}",
        "/[a/?=]{0,3}",
        prop_oneof![0u64..12, Just(100), Just(1000)],
        select(vec![[0u8; 16], [1u8; 16]]),
        "[ab-]{0,2}",
        vec(select(vec![b'\n', b'a', b'b']), 0..3),
    )
        .prop_map(
            |(method, path, timestamp, nonce, idempotency_key, body)| Input {
                method,
                path,
                timestamp,
                nonce,
                idempotency_key,
                body,
                secret: b"sk_test_0123456789abcdef".to_vec(),
            },
        )
}

fn canonical_of(input: &Input) -> String {
    let timestamp = input.timestamp.to_string();
    let nonce = input.nonce();
    let parts = CanonicalParts {
        method: &input.method,
        path: &input.path,
        timestamp: &timestamp,
        nonce: nonce.as_str(),
        idempotency_key: &input.idempotency_key,
    };
    canonical_string(&parts, &input.body).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// Two inputs share a canonical string (and a signature) exactly when
    /// they are equal.
    #[test]
    fn canonical_string_is_injective(a in small_input(), other in small_input(), keep in any::<[bool; 6]>()) {
        // `b` takes each field from `a` or from `other`: equal pairs and
        // pairs differing in one field come up often.
        let b = Input {
            method: if keep[0] { a.method.clone() } else { other.method },
            path: if keep[1] { a.path.clone() } else { other.path },
            timestamp: if keep[2] { a.timestamp } else { other.timestamp },
            nonce: if keep[3] { a.nonce } else { other.nonce },
            idempotency_key: if keep[4] { a.idempotency_key.clone() } else { other.idempotency_key },
            body: if keep[5] { a.body.clone() } else { other.body },
            secret: a.secret.clone(),
        };
        let (ca, cb) = (canonical_of(&a), canonical_of(&b));
        prop_assert_eq!(ca == cb, a == b, "{:?} / {:?}", ca, cb);
        let signer = Signer::new(KEY_ID, &a.secret).unwrap();
        let sign = |i: &Input| {
            let timestamp = i.timestamp.to_string();
            let nonce = i.nonce();
            let parts = CanonicalParts {
                method: &i.method,
                path: &i.path,
                timestamp: &timestamp,
                nonce: nonce.as_str(),
                idempotency_key: &i.idempotency_key,
            };
            signer.sign(&parts, &i.body).unwrap()
        };
        prop_assert_eq!(sign(&a) == sign(&b), a == b);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The canonical string splits back into exactly its six fields.
    #[test]
    fn canonical_string_splits_into_its_fields(input in input()) {
        let canonical = canonical_of(&input);
        let lines: Vec<&str> = canonical.split('\n').collect();
        let timestamp = input.timestamp.to_string();
        let nonce = input.nonce();
        let digest = body_sha256_hex(&input.body);
        let want = [
            input.method.as_str(),
            input.path.as_str(),
            timestamp.as_str(),
            nonce.as_str(),
            input.idempotency_key.as_str(),
            digest.as_str(),
        ];
        prop_assert_eq!(lines, want.to_vec());
    }
}

fn retry_policy() -> impl Strategy<Value = RetryPolicy> {
    (
        0u64..=20_000_000_000,
        0u64..=100_000_000_000,
        1u32..=64,
        1u64..=u64::MAX,
    )
        .prop_map(|(base, cap_extra, max_attempts, deadline)| RetryPolicy {
            base: Duration::from_nanos(base),
            cap: Duration::from_nanos(base.saturating_add(cap_extra)),
            max_attempts,
            deadline: Duration::from_nanos(deadline),
        })
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (0u64..=120_000_000_000).prop_map(Duration::from_nanos),
        any::<u64>().prop_map(Duration::from_nanos),
        (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// A backoff never exceeds its ceiling, the ceiling never exceeds the cap
    /// and never shrinks from one retry to the next.
    #[test]
    fn backoff_never_exceeds_the_cap(policy in retry_policy(), retry in any::<u32>(), random in any::<u64>()) {
        prop_assert!(policy.check().is_ok());
        let ceiling = policy.ceiling(retry);
        prop_assert!(ceiling <= policy.cap);
        prop_assert!(policy.jittered(retry, random) <= ceiling);
        if retry < u32::MAX {
            prop_assert!(policy.ceiling(retry + 1) >= ceiling);
        }
        if retry < 32 {
            let doubled = policy.base.checked_mul(1 << retry).unwrap_or(Duration::MAX);
            prop_assert_eq!(ceiling, doubled.min(policy.cap));
        }
    }

    /// A wait that `fits_deadline` accepts ends strictly before the deadline.
    #[test]
    fn fits_deadline_never_lets_a_wait_end_past_it(policy in retry_policy(), elapsed in duration(), wait in duration()) {
        if policy.fits_deadline(elapsed, wait) {
            let end = elapsed.checked_add(wait);
            prop_assert!(end.is_some_and(|end| end < policy.deadline));
        } else {
            let end = elapsed.checked_add(wait);
            prop_assert!(end.is_none_or(|end| end >= policy.deadline));
        }
    }

    /// A retry loop that only waits when the wait fits never ends past the
    /// deadline, and never runs more than its attempts.
    #[test]
    fn a_retry_loop_stays_inside_the_deadline(policy in retry_policy(), randoms in vec(any::<u64>(), 64), attempt_cost in 0u64..=5_000_000_000) {
        let cost = Duration::from_nanos(attempt_cost);
        let mut elapsed = Duration::ZERO;
        let mut attempts = 0u32;
        for random in randoms {
            attempts += 1;
            elapsed = elapsed.saturating_add(cost);
            if attempts >= policy.max_attempts {
                break;
            }
            let wait = policy.jittered(attempts - 1, random);
            if !policy.fits_deadline(elapsed, wait) {
                break;
            }
            elapsed += wait;
            prop_assert!(elapsed < policy.deadline);
        }
        prop_assert!(attempts <= policy.max_attempts);
    }
}

fn error_code() -> impl Strategy<Value = Option<String>> {
    prop::option::of(prop_oneof![
        select(vec![
            "idempotency_conflict",
            "nonce_reused",
            "idempotency_in_progress",
            "timestamp_out_of_window",
            "replay_cache_full",
            "replay_store_unavailable",
            "idempotency_key_required",
            "invalid_signature",
        ])
        .prop_map(str::to_owned),
        any::<String>(),
    ])
}

fn response_header() -> impl Strategy<Value = (String, String)> {
    let name = prop_oneof![
        select(vec![
            "Retry-After",
            "retry-after",
            "X-Server-Time",
            "Date",
            "Idempotent-Replayed"
        ])
        .prop_map(str::to_owned),
        any::<String>(),
    ];
    let value = prop_oneof![
        select(vec![
            "true",
            "TRUE",
            " 0 ",
            "1",
            "99999999999999999999",
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "-1",
            ""
        ])
        .prop_map(str::to_owned),
        "[0-9]{1,25}",
        any::<String>(),
    ];
    (name, value)
}

fn status() -> impl Strategy<Value = u16> {
    prop_oneof![
        select(vec![
            200u16, 201, 204, 299, 400, 401, 404, 409, 422, 429, 500, 501, 502, 503, 504
        ]),
        any::<u16>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    /// `decide` answers every response without panicking; only a 2xx settles
    /// the operation, and a 5xx or a 409 other than a conflict never ends it
    /// as rejected.
    #[test]
    fn decide_is_total_and_only_2xx_is_done(
        status in status(),
        code in error_code(),
        headers in vec(response_header(), 0..4),
        has_status_path in any::<bool>(),
        now in any::<u64>(),
    ) {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let result = AttemptResult::Response { status, error_code: code.as_deref(), headers: &headers };
        let decision = decide(&result, has_status_path, now);
        prop_assert_eq!(matches!(decision.action, Action::Done { .. }), (200..=299).contains(&status));
        if status >= 500 || (status == 409 && code.as_deref() != Some("idempotency_conflict")) {
            prop_assert!(!matches!(decision.action, Action::Fail(_)), "{status} {code:?}: {decision:?}");
        }
        if decision.action == Action::Fail(Failure::IdempotencyConflict) {
            prop_assert_eq!(status, 409);
        }
        // A server error never proves that nothing happened, except the
        // replay cache's and the replay store's own refusals, which come
        // before the operation.
        let before_the_operation = matches!(code.as_deref(), Some("replay_cache_full" | "replay_store_unavailable"));
        if status >= 500 && !(status == 503 && before_the_operation) {
            prop_assert_eq!(decision.landed, Landed::Maybe, "{} {:?}", status, code);
        }
    }

    /// Without a response, nothing is done or failed: a request never sent
    /// is retried, one sent without an answer is unknown.
    #[test]
    fn decide_without_a_response(has_status_path in any::<bool>(), now in any::<u64>()) {
        let not_sent = decide(&AttemptResult::NotSent, has_status_path, now);
        prop_assert_eq!((not_sent.action, not_sent.landed), (Action::RetryBackoff, Landed::No));
        let unknown = decide(&AttemptResult::SentNoResponse, has_status_path, now);
        if has_status_path {
            prop_assert_eq!((unknown.action, unknown.landed), (Action::QueryStatus, Landed::Maybe));
        } else {
            prop_assert_eq!((unknown.action, unknown.landed), (Action::RetryBackoff, Landed::Maybe));
        }
    }

    /// `parse_retry_after` never panics and reads every run of digits as
    /// seconds (saturating).
    #[test]
    fn retry_after_is_total(value in any::<String>(), digits in "[0-9]{1,30}", now in any::<u64>()) {
        let _ = parse_retry_after(&value, now);
        let expected = digits.parse::<u64>().unwrap_or(u64::MAX);
        prop_assert_eq!(parse_retry_after(&digits, now), Some(expected));
    }
}
