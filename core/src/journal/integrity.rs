//! Row integrity: the MAC every journaled operation carries over the
//! fields that never change, so that a row altered or injected behind the
//! library's back is refused instead of sent. See docs/journal-integrity.md.

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::error::{Error, ErrorCode, Result};
use crate::operation::FrozenOperation;

type HmacSha256 = Hmac<Sha256>;

/// The domain and version of a row MAC; a new encoding gets a new name.
const ROW_DOMAIN: &[u8] = b"payidem-journal-row-v1";

/// The message of the key derived from an API secret.
const DERIVE_LABEL: &[u8] = b"payidem journal key v1";

/// The shortest [`JournalKey::new`] key, in bytes.
pub const MIN_JOURNAL_KEY_LEN: usize = 16;
/// The longest [`JournalKey::new`] key, in bytes.
pub const MAX_JOURNAL_KEY_LEN: usize = 1024;

/// The key of the journal's row MACs (HMAC-SHA256).
///
/// Either set explicitly ([`ClientConfig::journal_key`](crate::ClientConfig::journal_key))
/// or derived from the API secret as `HMAC-SHA256(secret, "payidem journal
/// key v1")`. The bytes are wiped when the value is dropped and never
/// appear in `Debug` output or in any error message.
#[derive(Clone)]
pub struct JournalKey(Zeroizing<Vec<u8>>);

impl JournalKey {
    /// A key from `bytes` (16..=1024 bytes, e.g. 32 random bytes).
    /// `invalid_argument` naming `journal_key` otherwise.
    pub fn new(bytes: &[u8]) -> Result<JournalKey> {
        if !(MIN_JOURNAL_KEY_LEN..=MAX_JOURNAL_KEY_LEN).contains(&bytes.len()) {
            return Err(Error::invalid(
                "journal_key",
                format!(
                    "must be {MIN_JOURNAL_KEY_LEN} to {MAX_JOURNAL_KEY_LEN} bytes long, not {}",
                    bytes.len()
                ),
            ));
        }
        Ok(JournalKey(Zeroizing::new(bytes.to_vec())))
    }

    /// A key from its hex form (upper or lower case, two digits per byte;
    /// 16..=1024 bytes), e.g. what [`JournalKey::derived_hex`] prints.
    /// `invalid_argument` naming `journal_key` otherwise; the text is never
    /// repeated in the error.
    pub fn from_hex(text: &str) -> Result<JournalKey> {
        let text = text.as_bytes();
        if text.len() % 2 != 0 || !text.iter().all(u8::is_ascii_hexdigit) {
            return Err(Error::invalid(
                "journal_key",
                "must be hex digits, two per byte",
            ));
        }
        let digit = |c: u8| match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => c - b'A' + 10,
        };
        let bytes: Zeroizing<Vec<u8>> = Zeroizing::new(
            text.chunks_exact(2)
                .map(|p| digit(p[0]) << 4 | digit(p[1]))
                .collect(),
        );
        JournalKey::new(&bytes)
    }

    /// The key a client uses when none is configured:
    /// `HMAC-SHA256(secret, "payidem journal key v1")`. Rotating the API
    /// secret changes it: operations journaled under the old secret then
    /// need the old derived key set as the journal key
    /// ([`JournalKey::derived_hex`] prints it).
    pub fn derive_from_secret(secret: &[u8]) -> JournalKey {
        let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes keys of any length");
        mac.update(DERIVE_LABEL);
        JournalKey(Zeroizing::new(mac.finalize().into_bytes().to_vec()))
    }

    /// The key derived from `secret`, in lowercase hex: what to set as the
    /// journal key (after hex-decoding) to keep reading rows written before
    /// the API secret was rotated. A secret of its own: never log it.
    pub fn derived_hex(secret: &[u8]) -> Zeroizing<String> {
        Zeroizing::new(hex(&JournalKey::derive_from_secret(secret).0))
    }

    /// The MAC of `operation`'s immutable fields, in lowercase hex (64
    /// characters): HMAC-SHA256 over the domain `payidem-journal-row-v1`
    /// and the order id, idempotency key, method, path, status path (a
    /// presence byte, then the value), body SHA-256 and body, each
    /// length-prefixed (8 bytes, big endian).
    pub fn row_mac(&self, operation: &FrozenOperation) -> String {
        hex(&self.row_mac_bytes(operation))
    }

    fn row_mac_bytes(&self, op: &FrozenOperation) -> [u8; 32] {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        let mut field = |bytes: &[u8]| {
            mac.update(&(bytes.len() as u64).to_be_bytes());
            mac.update(bytes);
        };
        field(ROW_DOMAIN);
        field(op.order_id.as_bytes());
        field(op.idempotency_key.as_bytes());
        field(op.method.as_bytes());
        field(op.path.as_bytes());
        match &op.status_path {
            Some(p) => {
                field(&[1]);
                field(p.as_bytes());
            }
            None => field(&[0]),
        }
        field(op.body_sha256.as_bytes());
        field(&op.body);
        mac.finalize().into_bytes().into()
    }

    /// `Ok` when `stored` is `operation`'s MAC; otherwise the problem, as
    /// the text of a refusal naming the order id (never the key or the MAC).
    pub(crate) fn check_row(
        &self,
        operation: &FrozenOperation,
        stored: Option<&str>,
    ) -> std::result::Result<(), String> {
        let order_id = &operation.order_id;
        let Some(stored) = stored else {
            return Err(format!(
                "the row of order id {order_id:?} carries no integrity MAC (written by a handle \
                 without the journal key after the journal was sealed, or injected); refused, \
                 nothing is sent"
            ));
        };
        let expected = self.row_mac_bytes(operation);
        let matches = unhex32(stored).is_some_and(|got| constant_time_eq(&got, &expected));
        if matches {
            Ok(())
        } else {
            Err(format!(
                "the row of order id {order_id:?} fails its integrity check (altered, injected, \
                 or written under another journal key); refused, nothing is sent"
            ))
        }
    }

    /// [`JournalKey::check_row`] as a `journal_error` from the journal `target`.
    pub(crate) fn verify(
        &self,
        target: &str,
        operation: &FrozenOperation,
        stored: Option<&str>,
    ) -> Result<()> {
        self.check_row(operation, stored).map_err(|why| {
            Error::new(ErrorCode::Journal, format!("journal {target}: {why}"))
                .with_operation(&operation.order_id, &operation.idempotency_key)
        })
    }
}

impl fmt::Debug for JournalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JournalKey(..)")
    }
}

/// Keys compare in constant time.
impl PartialEq for JournalKey {
    fn eq(&self, other: &JournalKey) -> bool {
        self.0.len() == other.0.len() && constant_time_eq(&self.0, &other.0)
    }
}

impl Eq for JournalKey {}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

fn unhex32(text: &str) -> Option<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op() -> FrozenOperation {
        FrozenOperation {
            order_id: "o-1".into(),
            idempotency_key: "create-o-1".into(),
            method: "POST".into(),
            path: "/payments".into(),
            body: b"{\"amount\":1}".to_vec(),
            body_sha256: crate::protocol::body_sha256_hex(b"{\"amount\":1}"),
            status_path: Some("/payments/o-1".into()),
        }
    }

    #[test]
    fn every_immutable_field_changes_the_mac() {
        let key = JournalKey::new(&[7u8; 32]).unwrap();
        let base = op();
        let mac = key.row_mac(&base);
        assert_eq!(mac.len(), 64);
        assert!(key.check_row(&base, Some(&mac)).is_ok());
        let variants: [fn(&mut FrozenOperation); 8] = [
            |o| o.order_id.push('x'),
            |o| o.idempotency_key.push('x'),
            |o| o.method = "PUT".into(),
            |o| o.path.push('x'),
            |o| o.status_path = None,
            |o| o.status_path = Some("/payments/o-2".into()),
            |o| o.body_sha256 = crate::protocol::body_sha256_hex(b"x"),
            |o| o.body.push(b' '),
        ];
        for (i, change) in variants.iter().enumerate() {
            let mut o = op();
            change(&mut o);
            let e = key.check_row(&o, Some(&mac)).unwrap_err();
            assert!(e.contains("fails its integrity check"), "variant {i}: {e}");
        }
        // Length prefixes: moving bytes between fields changes the MAC.
        let mut a = op();
        a.order_id = "o-1c".into();
        a.idempotency_key = "reate-o-1".into();
        assert_ne!(key.row_mac(&a), mac);
    }

    #[test]
    fn missing_or_malformed_macs_are_refused_and_name_the_order_not_the_key() {
        let key = JournalKey::new(b"0123456789abcdef").unwrap();
        let e = key.verify("j", &op(), None).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Journal);
        assert!(e.message().contains("\"o-1\""), "{}", e.message());
        assert!(e.message().contains("no integrity MAC"), "{}", e.message());
        for bad in [
            "",
            "zz",
            &"0".repeat(64),
            &key.row_mac(&op()).to_uppercase(),
        ] {
            let e = key.verify("j", &op(), Some(bad)).unwrap_err();
            assert!(!e.message().contains("0123456789abcdef"));
        }
        assert!(format!("{key:?}") == "JournalKey(..)");
    }

    #[test]
    fn keys_are_checked_and_derived_keys_differ_by_secret() {
        assert_eq!(
            JournalKey::new(&[1u8; 15]).unwrap_err().code(),
            ErrorCode::InvalidArgument
        );
        assert!(JournalKey::new(&[1u8; 1025]).is_err());
        let a = JournalKey::derive_from_secret(b"secret-one-0123456789");
        let b = JournalKey::derive_from_secret(b"secret-two-0123456789");
        assert_ne!(a, b);
        assert_ne!(a.row_mac(&op()), b.row_mac(&op()));
        assert_eq!(a, JournalKey::derive_from_secret(b"secret-one-0123456789"));
        let hex = JournalKey::derived_hex(b"secret-one-0123456789");
        assert_eq!(hex.len(), 64);
        assert_eq!(JournalKey::from_hex(&hex).unwrap(), a);
        assert_eq!(JournalKey::from_hex(&hex.to_uppercase()).unwrap(), a);
        for bad in ["abc", "zz", "", &"ab".repeat(15)] {
            let e = JournalKey::from_hex(bad).unwrap_err();
            assert_eq!(e.field(), Some("journal_key"), "{bad:?}");
        }
    }
}
