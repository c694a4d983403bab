//! Every field rule of protocol v1 (core/src/protocol/fields.rs) and the
//! header lookup (headers.rs) on arbitrary text: no panic, and an accepted
//! value really meets its rule.
#![no_main]

use libfuzzer_sys::fuzz_target;
use payidem::protocol::{fields, headers, Nonce};

fn token_ok(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

fuzz_target!(|input: (&str, &str, Vec<(String, String)>)| {
    let (s, other, hdrs) = input;
    if fields::check_method(s).is_ok() {
        assert!(!s.is_empty() && s.len() <= 16 && s.bytes().all(|b| b.is_ascii_uppercase()));
    }
    if fields::check_path(s).is_ok() {
        assert!(s.starts_with('/') && s.len() <= fields::MAX_PATH_LEN);
        assert!(s.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    }
    if let Ok(t) = fields::parse_timestamp(s) {
        assert_eq!(t.to_string(), s, "a timestamp has one spelling");
    }
    let nonce_ok = fields::check_nonce(s).is_ok();
    assert_eq!(nonce_ok, Nonce::parse(s).is_ok());
    if nonce_ok {
        assert_eq!(Nonce::parse(s).unwrap().as_str(), s);
    }
    assert_eq!(
        fields::check_idempotency_key(s).is_ok(),
        token_ok(s, fields::MAX_IDEMPOTENCY_KEY_LEN)
    );
    assert!(
        fields::check_idempotency_key_or_empty(s).is_ok() == (s.is_empty() || token_ok(s, 255))
    );
    assert_eq!(
        fields::check_order_id(s).is_ok(),
        token_ok(s, fields::MAX_ORDER_ID_LEN)
    );
    assert_eq!(
        fields::check_key_id(s).is_ok(),
        token_ok(s, fields::MAX_KEY_ID_LEN)
    );
    if let Err(e) = fields::check_secret(s.as_bytes()) {
        assert_eq!(e.field(), Some("secret"));
        // The message depends on the length only: the bytes never show.
        let same_length = vec![b'x'; s.len()];
        let other = fields::check_secret(&same_length).unwrap_err();
        assert_eq!(
            e.message(),
            other.message(),
            "a secret never shows in its error"
        );
    }
    if let Ok(k) = fields::default_idempotency_key(s) {
        assert!(fields::check_idempotency_key(&k).is_ok());
    }
    if let Ok(k) = fields::prefixed_idempotency_key(other, s) {
        assert!(fields::check_idempotency_key(&k).is_ok());
    }
    for name in [
        headers::API_KEY,
        headers::TIMESTAMP,
        headers::NONCE,
        headers::SIGNATURE,
        headers::IDEMPOTENCY_KEY,
        headers::RETRY_AFTER,
        s,
    ] {
        if let Some(v) = headers::find(&hdrs, name) {
            assert!(hdrs
                .iter()
                .any(|(n, val)| n.eq_ignore_ascii_case(name) && val == v));
        }
    }
});
