//! payidem: request signing, verification and idempotent retries for a
//! payment API (protocol v1).
//!
//! The [`protocol`] and [`policy`] modules are sans-I/O: they take bytes,
//! times and outcomes as inputs and return values and decisions, so they can
//! be driven by any HTTP stack and tested without a network. The one
//! exception is a verifier given a shared Redis replay store
//! ([`replay_store`]), which asks that server about each accepted nonce.

#![deny(missing_docs)]

pub mod client;
pub mod error;
mod hex;
pub mod journal;
pub mod metrics;
pub mod operation;
pub mod policy;
pub mod protocol;
pub mod redact;
pub mod replay_store;
pub mod vocabulary;

pub use client::{CallOptions, Client, ClientConfig, JournalChoice};
pub use error::{Error, ErrorCode, Result};
pub use operation::{OperationSpec, Outcome};
pub use redact::redact_url;
