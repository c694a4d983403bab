//! payidem: request signing, verification and idempotent retries for a
//! payment API (protocol v1).
//!
//! The [`protocol`] and [`policy`] modules are sans-I/O: they take bytes,
//! times and outcomes as inputs and return values and decisions, so they can
//! be driven by any HTTP stack and tested without a network. The one
//! exception is a verifier given a shared Redis replay store
//! ([`verifier::replay_store`]), which asks that server about each accepted
//! nonce; it sits above the pure protocol.
//!
//! # Layers
//!
//! Each module names only modules on its own layer or below; none names one
//! above it (`core/tests/layers.rs` checks it on every build of the tests).
//! From the bottom:
//!
//! 0. `sim` (only with the `sim` feature) and `sim_points`: the
//!    deterministic simulator's hooks and the planted-bug and fault-point
//!    switches of the code above, which compile to `false` without it.
//! 1. [`vocabulary`]: every public enum with its table (name, number, full
//!    list); names no other module.
//! 2. [`error`], `hex`, [`redact`], [`metrics`] (the metric model and its
//!    Prometheus text): nothing above, except `error` naming `redact`.
//! 3. [`protocol`]: field rules, canonical string, signing, nonces, the
//!    in-memory nonce cache, refusals. Pure.
//! 4. [`policy`]: retry decisions. Pure.
//! 5. [`operation`]: one operation's state machine. Pure.
//! 6. [`journal`]: where operations are recorded.
//! 7. [`verifier`]: platform-side verification, its replay store and its
//!    metrics.
//! 8. [`client`]: the blocking client and its metrics.
//! 9. [`settings`]: the rules every binding's settings (client options, the
//!    machine's start object) are read by, into the types below.
//!
//! The items re-exported here (`payidem::Client`, `payidem::Error`, …) are
//! for users of the crate; modules inside it name the module that defines
//! an item, never the crate root.

#![deny(missing_docs)]

#[macro_use]
mod sim_points;

pub mod client;
pub mod error;
mod hex;
pub mod journal;
pub mod metrics;
pub mod operation;
pub mod policy;
pub mod protocol;
pub mod redact;
pub mod settings;
#[cfg(feature = "sim")]
#[doc(hidden)]
pub mod sim;
pub mod verifier;
pub mod vocabulary;

pub use client::{CallOptions, Client, ClientConfig, JournalChoice};
pub use error::{Error, ErrorCode, Result};
pub use operation::{OperationSpec, Outcome};
pub use redact::redact_url;
