//! Client-side signing of attempts (protocol section 2).

use std::fmt;
use std::sync::Arc;

use hmac::Mac;

use super::canonical::{body_sha256_hex_bytes, CanonicalParts};
use super::fields;
use super::headers;
use super::nonce::Nonce;
use super::secret::KeyedMac;
use crate::error::{Error, Result};
use crate::hex;

/// A signature: 64 lower-case hex digits of HMAC-SHA256.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Signature([u8; 64]);

ascii_text!(Signature, "signature");

/// The unchanging request of one operation, checked once: method, path,
/// idempotency key (empty when the request carries none) and the body's
/// SHA-256. Every attempt of the operation signs these same values.
#[derive(Clone, PartialEq, Eq)]
pub struct FrozenRequest {
    method: String,
    path: String,
    idempotency_key: String,
    body_sha256: [u8; 64],
}

/// The rules of an operation's unchanging fields, a POST's key included.
fn check_request(method: &str, path: &str, idempotency_key: &str) -> Result<()> {
    fields::check_method(method)?;
    fields::check_path(path)?;
    fields::check_idempotency_key_or_empty(idempotency_key)?;
    if method == "POST" && idempotency_key.is_empty() {
        return Err(Error::invalid(
            "idempotency_key",
            "is required on every POST",
        ));
    }
    Ok(())
}

impl FrozenRequest {
    /// Checks the fields and hashes the body. A POST must carry an
    /// idempotency key; an invalid field is an `invalid_argument` error
    /// naming it.
    pub fn new(
        method: &str,
        path: &str,
        idempotency_key: &str,
        body: &[u8],
    ) -> Result<FrozenRequest> {
        check_request(method, path, idempotency_key)?;
        Ok(FrozenRequest {
            method: method.to_owned(),
            path: path.to_owned(),
            idempotency_key: idempotency_key.to_owned(),
            body_sha256: body_sha256_hex_bytes(body),
        })
    }

    /// The HTTP method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The request target.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The idempotency key; empty when the request carries none.
    pub fn idempotency_key(&self) -> &str {
        &self.idempotency_key
    }

    /// The body's SHA-256 as 64 lower-case hex digits.
    pub fn body_sha256(&self) -> &str {
        std::str::from_utf8(&self.body_sha256).expect("hex is ASCII")
    }
}

impl fmt::Debug for FrozenRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrozenRequest")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("idempotency_key", &self.idempotency_key)
            .field("body_sha256", &self.body_sha256())
            .finish()
    }
}

/// The signed headers of one attempt.
#[derive(Clone, PartialEq, Eq)]
pub struct SignedAttempt {
    key_id: Arc<str>,
    timestamp: u64,
    timestamp_text: TimestampText,
    nonce: Nonce,
    signature: Signature,
    idempotency_key: Option<String>,
}

impl SignedAttempt {
    /// The `X-Api-Key` value.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The timestamp signed, in Unix seconds.
    pub fn timestamp(&self) -> u64 {
        self.timestamp
    }

    /// The `X-Timestamp` value.
    pub fn timestamp_text(&self) -> &str {
        self.timestamp_text.as_str()
    }

    /// The `X-Nonce` value.
    pub fn nonce(&self) -> &Nonce {
        &self.nonce
    }

    /// The `X-Signature` value.
    pub fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The `Idempotency-Key` value, present when the request carries one.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    /// Every header of the attempt as (name, value) pairs, in a fixed order:
    /// `X-Api-Key`, `X-Timestamp`, `X-Nonce`, `X-Signature`, then
    /// `Idempotency-Key` when present.
    pub fn headers(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            (headers::API_KEY, self.key_id()),
            (headers::TIMESTAMP, self.timestamp_text()),
            (headers::NONCE, self.nonce.as_str()),
            (headers::SIGNATURE, self.signature.as_str()),
        ]
        .into_iter()
        .chain(
            self.idempotency_key()
                .map(|k| (headers::IDEMPOTENCY_KEY, k)),
        )
    }
}

impl fmt::Debug for SignedAttempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.headers()).finish()
    }
}

/// Decimal text of a u64 without allocating.
#[derive(Clone, Copy, PartialEq, Eq)]
struct TimestampText {
    buf: [u8; 20],
    start: u8,
}

impl TimestampText {
    fn new(mut value: u64) -> TimestampText {
        let mut buf = [0u8; 20];
        let mut start = buf.len();
        loop {
            start -= 1;
            buf[start] = b'0' + (value % 10) as u8;
            value /= 10;
            if value == 0 {
                break;
            }
        }
        TimestampText {
            buf,
            start: start as u8,
        }
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[usize::from(self.start)..]).expect("digits are ASCII")
    }
}

/// Signs attempts with one key id and secret.
///
/// The secret is checked (16..=1024 bytes) and kept only as keyed HMAC state,
/// which is wiped on drop; it never appears in `Debug` output or errors. A
/// `Signer` is `Send + Sync` and may be shared by any number of threads.
pub struct Signer {
    key_id: Arc<str>,
    mac: KeyedMac,
}

impl Signer {
    /// A signer for `key_id` (1..=128 characters of `[A-Za-z0-9._:-]`) and
    /// `secret` (16..=1024 bytes).
    pub fn new(key_id: &str, secret: &[u8]) -> Result<Signer> {
        fields::check_key_id(key_id)?;
        Ok(Signer {
            key_id: Arc::from(key_id),
            mac: KeyedMac::new(secret)?,
        })
    }

    /// The key id sent in `X-Api-Key`.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The signature of explicit canonical parts and body. Every field is
    /// checked first; an invalid one is an `invalid_argument` error naming it.
    pub fn sign(&self, parts: &CanonicalParts<'_>, body: &[u8]) -> Result<Signature> {
        parts.check()?;
        Ok(self.sign_digest(parts, &body_sha256_hex_bytes(body)))
    }

    fn sign_digest(&self, parts: &CanonicalParts<'_>, body_sha256: &[u8; 64]) -> Signature {
        let mut mac = self.mac.start();
        parts.feed(body_sha256, |piece| mac.update(piece));
        Signature(hex::encode32(&mac.finalize().into_bytes().into()))
    }

    /// Signs one attempt of a frozen request at `timestamp` (Unix seconds,
    /// with any clock offset already applied) with `nonce`.
    pub fn sign_frozen(
        &self,
        request: &FrozenRequest,
        timestamp: u64,
        nonce: Nonce,
    ) -> SignedAttempt {
        self.sign_checked(
            &request.method,
            &request.path,
            &request.idempotency_key,
            &request.body_sha256,
            timestamp,
            nonce,
        )
    }

    /// Signs fields that already passed `check_request`.
    fn sign_checked(
        &self,
        method: &str,
        path: &str,
        idempotency_key: &str,
        body_sha256: &[u8; 64],
        timestamp: u64,
        nonce: Nonce,
    ) -> SignedAttempt {
        let timestamp_text = TimestampText::new(timestamp);
        let parts = CanonicalParts {
            method,
            path,
            timestamp: timestamp_text.as_str(),
            nonce: nonce.as_str(),
            idempotency_key,
        };
        let signature = self.sign_digest(&parts, body_sha256);
        SignedAttempt {
            key_id: Arc::clone(&self.key_id),
            timestamp,
            timestamp_text,
            nonce,
            signature,
            idempotency_key: (!idempotency_key.is_empty()).then(|| idempotency_key.to_owned()),
        }
    }

    /// Checks and signs one attempt in a single call: the method, path,
    /// idempotency key (empty for none; required on POST) and body, at
    /// `timestamp` with `nonce`.
    pub fn sign_attempt(
        &self,
        method: &str,
        path: &str,
        idempotency_key: &str,
        body: &[u8],
        timestamp: u64,
        nonce: Nonce,
    ) -> Result<SignedAttempt> {
        check_request(method, path, idempotency_key)?;
        let body_sha256 = body_sha256_hex_bytes(body);
        Ok(self.sign_checked(
            method,
            path,
            idempotency_key,
            &body_sha256,
            timestamp,
            nonce,
        ))
    }
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signer")
            .field("key_id", &self.key_id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"sk_test_0123456789abcdef0123456789abcdef";

    #[test]
    fn timestamp_text_formats_every_width() {
        for v in [0u64, 9, 10, 1_767_225_600, u64::MAX] {
            assert_eq!(TimestampText::new(v).as_str(), v.to_string());
        }
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let signer = Signer::new("key_live_1", SECRET).unwrap();
        let text = format!("{signer:?}");
        assert!(text.contains("key_live_1") && text.contains("redacted"));
        assert!(!text.contains("sk_test"));
    }

    #[test]
    fn post_requires_a_key_and_get_sends_none() {
        let signer = Signer::new("key_live_1", SECRET).unwrap();
        let nonce = Nonce::from_random_bytes([7; 16]);
        let err = signer
            .sign_attempt("POST", "/v1/payments", "", b"{}", 1, nonce)
            .unwrap_err();
        assert_eq!(err.field(), Some("idempotency_key"));
        let get = signer
            .sign_attempt("GET", "/v1/payments/p", "", b"", 1, nonce)
            .unwrap();
        assert_eq!(get.headers().count(), 4);
        assert!(get.idempotency_key().is_none());
        let post = signer
            .sign_attempt("POST", "/v1/payments", "create-o", b"{}", 1, nonce)
            .unwrap();
        assert_eq!(post.headers().last(), Some(("Idempotency-Key", "create-o")));
    }

    #[test]
    fn invalid_key_id_is_named() {
        assert_eq!(
            Signer::new("key id", SECRET).unwrap_err().field(),
            Some("key_id")
        );
        assert_eq!(
            Signer::new("k", b"short").unwrap_err().field(),
            Some("secret")
        );
    }
}
