//! payidem's stable C ABI, as Rust: every `extern "C"` function of
//! `include/payidem.h`. The `payidem-ffi` crate links these into
//! `libpayidem.so` and `libpayidem.a`; the header is generated from this
//! crate by cbindgen (see `tests/header.rs`).
//!
//! Conventions of every function: opaque handles with `_new`/`_free`
//! (`_free(NULL)` does nothing); every pointer is checked, and NULL where it
//! is not allowed is `PAYIDEM_INVALID_ARGUMENT` naming the parameter; strings
//! are NUL-terminated UTF-8; buffers are a pointer and a length (NULL with
//! length 0 is an empty buffer); outputs are written only on success; no
//! panic crosses the boundary (it becomes `PAYIDEM_INTERNAL_ERROR`).

#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]
// The internal helpers mirror the C signatures they serve.
#![allow(clippy::too_many_arguments)]

mod boundary;
pub mod call;
mod callback;
#[cfg(test)]
mod callback_tests;
pub mod client;
pub mod error;
pub mod events;
pub mod fleet;
mod handles;
pub mod headers;
pub mod journal_key;
pub mod metrics;
pub mod operation;
pub mod outcome;
pub mod policy;
pub mod result;
pub mod signing;
pub mod verifying;
pub mod version;

mod options;
mod text;

pub use call::*;
pub use client::*;
pub use error::*;
pub use events::*;
pub use fleet::*;
pub use headers::*;
pub use metrics::*;
pub use operation::*;
pub use outcome::*;
pub use policy::*;
pub use result::*;
pub use signing::*;
pub use verifying::*;
pub use version::*;
