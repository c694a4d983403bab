//! Protocol v1: field rules, the canonical string, signing, nonces, the
//! in-memory nonce cache and the refusal a platform answers. Pure
//! computation: time and randomness come in as arguments. The platform-side
//! [`Verifier`](crate::verifier::Verifier), which may ask a shared replay
//! store over the network, sits above this module in [`crate::verifier`].

/// Gives a newtype over ASCII bytes (`$Name([u8; N])`, filled only with
/// ASCII) its text: `as_str`, `Display` as the text and `Debug` as
/// `Name(text)`.
macro_rules! ascii_text {
    ($Name:ident, $what:literal) => {
        impl $Name {
            #[doc = concat!("The ", $what, " as text.")]
            pub fn as_str(&self) -> &str {
                std::str::from_utf8(&self.0).expect("made of ASCII only")
            }
        }

        impl std::fmt::Debug for $Name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!(stringify!($Name), "({})"), self.as_str())
            }
        }

        impl std::fmt::Display for $Name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

mod bucket_memory;
pub mod canonical;
pub mod fields;
pub mod headers;
pub mod nonce;
pub(crate) mod nonce_cache;
pub mod refusal;
pub(crate) mod secret;
pub mod signer;

pub use canonical::{body_sha256_hex, canonical_string, CanonicalParts};
pub use nonce::{Nonce, NonceSource, OsNonceSource};
pub use refusal::Refusal;
pub use signer::{FrozenRequest, Signature, SignedAttempt, Signer};
