//! payidem-mock: a local payment platform that speaks protocol v1.
//!
//! It verifies every `/v1` request with payidem's own
//! [`payidem::verifier::Verifier`], keeps an idempotency store per key id,
//! runs payments and refunds, injects faults at configured rates from a
//! seeded stream, and counts everything it did in an oracle ([`Stats`]) so
//! end-to-end tests can prove a client never charged twice.
//!
//! ```no_run
//! let server = payidem_mock::MockServer::start(payidem_mock::MockConfig::default())?;
//! println!("mock at {}", server.url());
//! # Ok::<(), payidem::Error>(())
//! ```

#![deny(missing_docs)]

mod answer;
mod clock;
pub mod config;
mod control;
pub mod faults;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod handler;
mod http;
mod ledger;
mod poll;
mod routes;
mod server;
pub mod stats;
mod store;

pub use clock::ClockSetting;
pub use config::{KeySpec, MockConfig, ServerLimits, DEFAULT_KEY_ID, DEFAULT_SECRET};
pub use faults::{FaultKind, FaultSettings};
pub use http::{MAX_HEADERS, MAX_HEAD_BYTES};
pub use ledger::MAX_AMOUNT;
pub use server::MockServer;
pub use stats::{OrderStats, RequestStats, Stats};
