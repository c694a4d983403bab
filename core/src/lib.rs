//! payidem: request signing, verification and idempotent retries for a
//! payment API (protocol v1).
//!
//! The [`protocol`] and [`policy`] modules are sans-I/O: they take bytes,
//! times and outcomes as inputs and return values and decisions, so they can
//! be driven by any HTTP stack and tested without a network.

#![deny(missing_docs)]

pub mod error;
mod hex;
pub mod journal;
pub mod policy;
pub mod protocol;

pub use error::{Error, ErrorCode, Result};
