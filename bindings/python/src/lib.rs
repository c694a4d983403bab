//! `payidem._native`: the payidem Rust core for Python, through PyO3.
//!
//! This module holds no protocol or retry logic: every call goes straight to
//! the `payidem` crate. The public, typed API is the `payidem` Python package,
//! which wraps these functions and defines the exception classes.

// Python signatures take many keyword arguments by design.
#![allow(clippy::too_many_arguments)]

mod call;
mod client;
mod convert;
mod errors;
mod events;
mod metrics;
mod operation;
mod policy;
mod signing;
mod verifying;

use pyo3::prelude::*;

/// Every name of one core vocabulary table, in number order.
fn names<T: payidem::vocabulary::Vocabulary>() -> Vec<&'static str> {
    T::VALUES.iter().map(|v| v.name()).collect()
}

/// The names of the journal states for which `test` holds (the core's
/// `is_settled`, `is_unresolved`), in number order.
fn states(test: fn(payidem::operation::OperationState) -> bool) -> Vec<&'static str> {
    payidem::operation::OperationState::ALL
        .into_iter()
        .filter(|s| test(*s))
        .map(|s| s.as_str())
        .collect()
}

/// Every error code of the core, in number order, as `(number, name,
/// http_status, final)`: the table `payidem.errors` builds its exception
/// classes from (`http_status` is the status a verifier answers with, `final`
/// whether an operation that ended with the code is settled for good).
#[pyfunction]
fn error_codes() -> Vec<(u32, &'static str, Option<u16>, bool)> {
    errors::error_codes()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("PROTOCOL", "payidem-v1")?;
    m.add("ATTEMPT_KINDS", names::<payidem::operation::AttemptKind>())?;
    m.add("NEXT_ACTIONS", names::<payidem::operation::NextAction>())?;
    m.add(
        "OPERATION_STATES",
        names::<payidem::operation::OperationState>(),
    )?;
    m.add(
        "SETTLED_STATES",
        states(payidem::operation::OperationState::is_settled),
    )?;
    m.add(
        "UNRESOLVED_STATES",
        states(payidem::operation::OperationState::is_unresolved),
    )?;
    m.add(
        "SIGNED_HEADERS",
        payidem::protocol::headers::SIGNED.to_vec(),
    )?;
    m.add(
        "IDEMPOTENCY_KEY_HEADER",
        payidem::protocol::headers::IDEMPOTENCY_KEY,
    )?;
    m.add("LARGE_BODY_BYTES", convert::DETACH_BODY_BYTES)?;
    m.add("MEMORY_JOURNAL", payidem::journal::MEMORY_JOURNAL)?;
    m.add_class::<signing::Signer>()?;
    m.add_class::<verifying::Verifier>()?;
    m.add_class::<verifying::Verified>()?;
    m.add_class::<client::NativeClient>()?;
    m.add_function(wrap_pyfunction!(signing::canonical_string, m)?)?;
    m.add_function(wrap_pyfunction!(signing::body_sha256_hex, m)?)?;
    m.add_function(wrap_pyfunction!(policy::decide, m)?)?;
    m.add_function(wrap_pyfunction!(client::default_journal_path, m)?)?;
    m.add_function(wrap_pyfunction!(client::client_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(convert::resolve_settings, m)?)?;
    m.add_function(wrap_pyfunction!(convert::resolve_settings_json, m)?)?;
    m.add_function(wrap_pyfunction!(client::derive_journal_key_hex, m)?)?;
    m.add_function(wrap_pyfunction!(error_codes, m)?)?;
    m.add("LOG_LEVELS", metrics::log_levels())?;
    m.add_function(wrap_pyfunction!(metrics::client_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(metrics::verifier_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(metrics::attempt_log_level, m)?)?;
    m.add_function(wrap_pyfunction!(metrics::call_end_log_level, m)?)?;
    m.add_function(wrap_pyfunction!(metrics::set_event_listener, m)?)?;
    m.add("END_NAMES", names::<payidem::operation::EndKind>())?;
    m.add("LANDED", names::<payidem::policy::Landed>())?;
    m.add("DECISION_KINDS", names::<payidem::policy::DecisionKind>())?;
    m.add("REPLY_KINDS", names::<payidem::operation::ReplyKind>())?;
    m.add("STEP_KINDS", names::<payidem::operation::StepKind>())?;
    m.add("CALL_STEP_KINDS", names::<payidem::client::CallStepKind>())?;
    m.add_class::<operation::NativeOperation>()?;
    m.add_class::<operation::NativeRetryBudget>()?;
    m.add_class::<call::NativeCall>()?;
    m.add_function(wrap_pyfunction!(operation::call_limits_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(call::relative_path, m)?)?;
    Ok(())
}
