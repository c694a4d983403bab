//! Protocol v1: field rules, the canonical string, signing, nonces and
//! platform-side verification. Pure computation: time and randomness come
//! in as arguments.

mod bucket_memory;
pub mod canonical;
pub mod fields;
pub mod headers;
pub mod nonce;
mod nonce_cache;
pub mod refusal;
mod secret;
pub mod signer;
pub mod verifier;

pub use canonical::{body_sha256_hex, canonical_string, CanonicalParts};
pub use nonce::{Nonce, NonceSource, OsNonceSource};
pub use refusal::Refusal;
pub use signer::{FrozenRequest, Signature, SignedAttempt, Signer};
pub use verifier::{
    IncomingRequest, Verified, Verifier, VerifierConfig, DEFAULT_NONCE_CAPACITY_TOTAL,
    MAX_WINDOW_SECONDS,
};
