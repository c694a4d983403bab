//! Protocol v1: field rules, the canonical string, signing, nonces, the
//! in-memory nonce cache and the refusal a platform answers. Pure
//! computation: time and randomness come in as arguments. The platform-side
//! [`Verifier`](crate::verifier::Verifier), which may ask a shared replay
//! store over the network, sits above this module in [`crate::verifier`].

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
