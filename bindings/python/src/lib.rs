//! `payidem._native`: the payidem Rust core for Python, through PyO3.
//!
//! This module holds no protocol or retry logic: every call goes straight to
//! the `payidem` crate. The public, typed API is the `payidem` Python package,
//! which wraps these functions and defines the exception classes.

// Python signatures take many keyword arguments by design.
#![allow(clippy::too_many_arguments)]

mod client;
mod convert;
mod errors;
mod events;
mod policy;
mod signing;
mod verifying;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("PROTOCOL", "payidem-v1")?;
    m.add("ERROR_CODES", errors::all_codes())?;
    m.add("LARGE_BODY_BYTES", convert::DETACH_BODY_BYTES)?;
    m.add("MEMORY_JOURNAL", payidem::journal::MEMORY_JOURNAL)?;
    m.add_class::<signing::Signer>()?;
    m.add_class::<verifying::Verifier>()?;
    m.add_class::<verifying::Verified>()?;
    m.add_class::<events::PyAttemptEvent>()?;
    m.add_class::<client::NativeClient>()?;
    m.add_function(wrap_pyfunction!(signing::canonical_string, m)?)?;
    m.add_function(wrap_pyfunction!(signing::body_sha256_hex, m)?)?;
    m.add_function(wrap_pyfunction!(policy::decide, m)?)?;
    m.add_function(wrap_pyfunction!(policy::decide_status_query, m)?)?;
    m.add_function(wrap_pyfunction!(client::default_journal_path, m)?)?;
    Ok(())
}
