//! The rules every field of protocol v1 must meet (protocol sections 1 and 2).
//!
//! Each check returns [`Error::invalid`] naming the field, so nothing that
//! breaks a rule is ever signed, journaled or sent.

use crate::error::{Error, Result};

/// Longest request target accepted, in bytes.
pub const MAX_PATH_LEN: usize = 2048;
/// Longest method accepted, in bytes.
pub const MAX_METHOD_LEN: usize = 16;
/// Longest order id accepted, in characters.
pub const MAX_ORDER_ID_LEN: usize = 128;
/// Longest idempotency key accepted, in characters.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 255;
/// Longest key id accepted, in characters.
pub const MAX_KEY_ID_LEN: usize = 128;
/// Shortest secret accepted, in bytes.
pub const MIN_SECRET_LEN: usize = 16;
/// Longest secret accepted, in bytes.
pub const MAX_SECRET_LEN: usize = 1024;
/// Length of a nonce: a lower-case hyphenated UUID.
pub const NONCE_LEN: usize = 36;

fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-')
}

fn check_token(field: &'static str, value: &str, max: usize) -> Result<()> {
    if value.is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if value.len() > max {
        return Err(Error::invalid(
            field,
            format_args!(
                "is {} characters long, at most {max} are allowed",
                value.len()
            ),
        ));
    }
    if let Some(pos) = value.bytes().position(|b| !is_token_char(b)) {
        return Err(Error::invalid(
            field,
            format_args!("character at offset {pos} is not one of [A-Za-z0-9._:-]"),
        ));
    }
    Ok(())
}

/// Checks an HTTP method: upper-case `[A-Z]{1,16}`.
pub fn check_method(method: &str) -> Result<()> {
    if method.is_empty() {
        return Err(Error::invalid("method", "must not be empty"));
    }
    if method.len() > MAX_METHOD_LEN {
        return Err(Error::invalid("method", "is longer than 16 characters"));
    }
    if !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(Error::invalid(
            "method",
            "must be upper-case letters A-Z only",
        ));
    }
    Ok(())
}

/// Checks a request target: starts with `/`, printable ASCII 0x21..=0x7E,
/// at most 2048 bytes.
pub fn check_path(path: &str) -> Result<()> {
    if !path.starts_with('/') {
        return Err(Error::invalid("path", "must start with '/'"));
    }
    if path.len() > MAX_PATH_LEN {
        return Err(Error::invalid(
            "path",
            format_args!(
                "is {} bytes long, at most {MAX_PATH_LEN} are allowed",
                path.len()
            ),
        ));
    }
    if let Some(pos) = path.bytes().position(|b| !(0x21..=0x7e).contains(&b)) {
        return Err(Error::invalid(
            "path",
            format_args!(
                "byte at offset {pos} is not printable ASCII (spaces, control characters and non-ASCII must be percent-encoded)"
            ),
        ));
    }
    Ok(())
}

/// Parses a timestamp: Unix seconds in decimal ASCII, no sign, no leading
/// zeros (`0` itself is allowed), fitting in 64 bits.
pub fn parse_timestamp(timestamp: &str) -> Result<u64> {
    let bytes = timestamp.as_bytes();
    if bytes.is_empty() {
        return Err(Error::invalid("timestamp", "must not be empty"));
    }
    if !bytes.iter().all(u8::is_ascii_digit) {
        return Err(Error::invalid(
            "timestamp",
            "must be decimal digits only, with no sign",
        ));
    }
    if bytes.len() > 1 && bytes[0] == b'0' {
        return Err(Error::invalid("timestamp", "must not have leading zeros"));
    }
    timestamp
        .parse::<u64>()
        .map_err(|_| Error::invalid("timestamp", "does not fit in 64 bits"))
}

/// Checks a nonce: a lower-case hyphenated UUID version 4 with the RFC 4122
/// variant, 36 characters.
pub fn check_nonce(nonce: &str) -> Result<()> {
    let b = nonce.as_bytes();
    if b.len() != NONCE_LEN {
        return Err(Error::invalid(
            "nonce",
            "must be a 36-character lower-case hyphenated UUID v4",
        ));
    }
    for (i, &c) in b.iter().enumerate() {
        let ok = match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(&c),
        };
        if !ok {
            return Err(Error::invalid(
                "nonce",
                format_args!("character at offset {i} breaks the lower-case hyphenated UUID form"),
            ));
        }
    }
    if b[14] != b'4' {
        return Err(Error::invalid("nonce", "must be a version 4 UUID"));
    }
    if !matches!(b[19], b'8' | b'9' | b'a' | b'b') {
        return Err(Error::invalid("nonce", "must carry the RFC 4122 variant"));
    }
    Ok(())
}

/// Checks an idempotency key as it enters the canonical string: empty (a
/// request without the header) or 1..=255 characters of `[A-Za-z0-9._:-]`.
pub fn check_idempotency_key_or_empty(key: &str) -> Result<()> {
    if key.is_empty() {
        Ok(())
    } else {
        check_idempotency_key(key)
    }
}

/// Checks an explicit idempotency key: 1..=255 characters of
/// `[A-Za-z0-9._:-]`.
pub fn check_idempotency_key(key: &str) -> Result<()> {
    check_token("idempotency_key", key, MAX_IDEMPOTENCY_KEY_LEN)
}

/// Checks an order id: 1..=128 characters of `[A-Za-z0-9._:-]`.
pub fn check_order_id(order_id: &str) -> Result<()> {
    check_token("order_id", order_id, MAX_ORDER_ID_LEN)
}

/// Checks a key id (the `X-Api-Key` value): 1..=128 characters of
/// `[A-Za-z0-9._:-]`.
pub fn check_key_id(key_id: &str) -> Result<()> {
    check_token("key_id", key_id, MAX_KEY_ID_LEN)
}

/// Checks a secret's length: 16..=1024 bytes. The secret's bytes never
/// appear in the error.
pub fn check_secret(secret: &[u8]) -> Result<()> {
    if secret.len() < MIN_SECRET_LEN || secret.len() > MAX_SECRET_LEN {
        return Err(Error::invalid(
            "secret",
            format_args!(
                "must be {MIN_SECRET_LEN}..={MAX_SECRET_LEN} bytes long, got {} bytes",
                secret.len()
            ),
        ));
    }
    Ok(())
}

/// The default idempotency key of a create: `create-{order_id}`.
///
/// Fails with `invalid_argument` naming `order_id` when the order id breaks
/// its rule.
pub fn default_idempotency_key(order_id: &str) -> Result<String> {
    check_order_id(order_id)?;
    Ok(format!("create-{order_id}"))
}

/// An idempotency key made of a caller's prefix and the order id:
/// `{prefix}-{order_id}`, checked against the key rule.
pub fn prefixed_idempotency_key(prefix: &str, order_id: &str) -> Result<String> {
    check_order_id(order_id)?;
    let key = format!("{prefix}-{order_id}");
    check_idempotency_key(&key)?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_rules() {
        assert!(check_method("POST").is_ok());
        assert!(check_method("ABCDEFGHIJKLMNOP").is_ok());
        assert_eq!(
            check_method("ABCDEFGHIJKLMNOPQ").unwrap_err().field(),
            Some("method")
        );
        assert!(check_method("Post").is_err());
        assert!(check_method("").is_err());
    }

    #[test]
    fn timestamp_rules() {
        assert_eq!(parse_timestamp("0").unwrap(), 0);
        assert_eq!(parse_timestamp("18446744073709551615").unwrap(), u64::MAX);
        for bad in ["18446744073709551616", "00", "+1", "1 "] {
            assert!(parse_timestamp(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn nonce_rules() {
        assert!(check_nonce("6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f").is_ok());
        for bad in [
            "6f1c2a4e-9b3d-4c5e-cf70-1a2b3c4d5e6f",
            "6f1c2a4e9b3d-4c5e-8f70-1a2b3c4d5e6f0",
            "6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6",
        ] {
            assert!(check_nonce(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_and_order_ids() {
        assert_eq!(default_idempotency_key("ord-1").unwrap(), "create-ord-1");
        assert_eq!(
            default_idempotency_key("ord 1").unwrap_err().field(),
            Some("order_id")
        );
        assert_eq!(
            default_idempotency_key(&"a".repeat(129))
                .unwrap_err()
                .field(),
            Some("order_id")
        );
        assert!(check_order_id(&"a".repeat(128)).is_ok());
        assert_eq!(
            prefixed_idempotency_key("refund", "o.1").unwrap(),
            "refund-o.1"
        );
        assert_eq!(
            prefixed_idempotency_key("re fund", "o")
                .unwrap_err()
                .field(),
            Some("idempotency_key")
        );
        assert!(check_idempotency_key_or_empty("").is_ok());
        assert!(check_idempotency_key("").is_err());
    }

    #[test]
    fn secret_error_never_shows_bytes() {
        let e = check_secret(b"short-secret").unwrap_err();
        assert_eq!(e.field(), Some("secret"));
        assert!(!e.message().contains("short-secret"));
    }
}
