//! Keyed HMAC-SHA256 state that is wiped when dropped.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::fields;
use crate::error::Result;

type HmacSha256 = Hmac<Sha256>;

/// HMAC-SHA256 already keyed with one secret.
///
/// Holding the keyed state means a signature costs no key set-up. The state
/// is as sensitive as the secret itself, so it is overwritten on drop and
/// never printed.
pub(crate) struct KeyedMac(HmacSha256);

impl KeyedMac {
    /// Keys a MAC with `secret`, which must be 16..=1024 bytes.
    pub(crate) fn new(secret: &[u8]) -> Result<KeyedMac> {
        fields::check_secret(secret)?;
        let mac = HmacSha256::new_from_slice(secret).expect("HMAC takes keys of any length");
        Ok(KeyedMac(mac))
    }

    /// A fresh MAC computation starting from the keyed state.
    pub(crate) fn start(&self) -> HmacSha256 {
        self.0.clone()
    }
}

impl Drop for KeyedMac {
    fn drop(&mut self) {
        let blank = HmacSha256::new_from_slice(&[0u8; 32]).expect("HMAC takes keys of any length");
        // SAFETY: `self.0` is a valid, aligned place of this type; the volatile
        // write cannot be optimised away, and the old value owns no heap
        // memory, so not dropping it leaks nothing.
        unsafe { std::ptr::write_volatile(&mut self.0, blank) };
    }
}

impl std::fmt::Debug for KeyedMac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyedMac(<redacted>)")
    }
}
