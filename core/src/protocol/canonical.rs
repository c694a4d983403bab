//! The canonical string of one attempt (protocol section 2).

use sha2::{Digest, Sha256};

use super::fields;
use crate::error::Result;
use crate::hex;

/// The signed parts of one attempt, borrowed from the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CanonicalParts<'a> {
    /// Upper-case HTTP method.
    pub method: &'a str,
    /// The request target exactly as sent.
    pub path: &'a str,
    /// Unix seconds, decimal ASCII.
    pub timestamp: &'a str,
    /// Lower-case hyphenated UUID v4.
    pub nonce: &'a str,
    /// The `Idempotency-Key` value; empty when the request has none.
    pub idempotency_key: &'a str,
}

impl CanonicalParts<'_> {
    /// Checks every field against its rule; the first broken rule is an
    /// `invalid_argument` error naming that field.
    pub fn check(&self) -> Result<()> {
        fields::check_method(self.method)?;
        fields::check_path(self.path)?;
        fields::parse_timestamp(self.timestamp)?;
        fields::check_nonce(self.nonce)?;
        fields::check_idempotency_key_or_empty(self.idempotency_key)?;
        Ok(())
    }

    /// Feeds the canonical string, with `body_sha256_hex` as its last line,
    /// to `sink` piece by piece (no buffer is built). The parts must already
    /// be checked.
    pub(crate) fn feed(&self, body_sha256_hex: &[u8; 64], mut sink: impl FnMut(&[u8])) {
        for part in [
            self.method,
            self.path,
            self.timestamp,
            self.nonce,
            self.idempotency_key,
        ] {
            sink(part.as_bytes());
            sink(b"\n");
        }
        sink(body_sha256_hex);
    }
}

/// The body's SHA-256 as 64 lower-case hex digits.
pub fn body_sha256_hex(body: &[u8]) -> String {
    String::from_utf8(body_sha256_hex_bytes(body).to_vec()).expect("hex is ASCII")
}

pub(crate) fn body_sha256_hex_bytes(body: &[u8]) -> [u8; 64] {
    hex::encode32(&Sha256::digest(body).into())
}

/// The canonical string of one attempt:
/// `method\npath\ntimestamp\nnonce\nidempotency_key\nbody_sha256`, with no
/// trailing newline. Fails with `invalid_argument` naming the first field that
/// breaks its rule.
pub fn canonical_string(parts: &CanonicalParts<'_>, body: &[u8]) -> Result<String> {
    parts.check()?;
    let digest = body_sha256_hex_bytes(body);
    let mut out = Vec::with_capacity(
        parts.method.len()
            + parts.path.len()
            + parts.timestamp.len()
            + 36
            + parts.idempotency_key.len()
            + 69,
    );
    parts.feed(&digest, |piece| out.extend_from_slice(piece));
    Ok(String::from_utf8(out).expect("checked fields are ASCII"))
}
