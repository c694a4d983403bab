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
//!
//! Layout: `base` holds what every object is built on (panic boundary,
//! error and result, handles, argument text, headers, the C enums,
//! callbacks); each other module is one C object (`client` with its call,
//! events, fleet, options and outcome; `operation` with its step and the
//! retry decision; signer, verifier, metrics, journal key, version;
//! redaction). This file only declares them and re-exports their items;
//! cbindgen follows the declarations, so the header lists items in this
//! tree's order.

#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]
// The internal helpers mirror the C signatures they serve.
#![allow(clippy::too_many_arguments)]

mod base;
pub mod client;
#[cfg(test)]
mod fixtures;
pub mod journal_key;
pub mod metrics;
pub mod operation;
pub mod redact;
pub mod signing;
pub mod verifying;
pub mod version;

pub use base::enums::*;
pub use base::error::*;
pub use base::headers::*;
pub use base::result::*;
pub use client::call::*;
pub use client::events::*;
pub use client::fleet::*;
pub use client::options::*;
pub use client::outcome::*;
pub use client::*;
pub use metrics::*;
pub use operation::policy::*;
pub use operation::step::*;
pub use operation::*;
pub use signing::*;
pub use verifying::*;
pub use version::*;
