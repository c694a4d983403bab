//! Keyed HMAC-SHA256 state that is wiped when dropped.

use hmac::{Hmac, KeyInit};
use sha2::Sha256;

use super::fields;
use crate::error::Result;

type HmacSha256 = Hmac<Sha256>;

/// HMAC-SHA256 already keyed with one secret.
///
/// Holding the keyed state means a signature costs no key set-up. The state
/// is as sensitive as the secret itself: it is never printed, and its inner
/// and outer SHA-256 midstates are wiped when it is dropped, in this value
/// and in every computation started from it (`hmac` and `sha2` with their
/// `zeroize` features: each SHA-256 state zeroizes itself on drop).
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

impl std::fmt::Debug for KeyedMac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyedMac(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use sha2::digest::block_api::CoreProxy;

    fn wiped_on_drop<T: zeroize::ZeroizeOnDrop>() {}

    /// An HMAC's keyed state is two SHA-256 states (the inner and outer
    /// midstates); each wipes itself when dropped, wherever it was copied.
    #[test]
    fn the_midstates_of_a_keyed_mac_are_wiped_on_drop() {
        wiped_on_drop::<<sha2::Sha256 as CoreProxy>::Core>();
        wiped_on_drop::<sha2::Sha256>();
    }
}
