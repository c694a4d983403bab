//! `decide`: the client's decision after one attempt (protocol section 4).

use pyo3::prelude::*;

use payidem::operation::AttemptKind;
use payidem::policy::{self, Action, Decision, Reply};

use crate::convert::{field, optional_field, unix_seconds};
use crate::errors::invalid;
use crate::operation::reply;

/// The decision as a tuple `(kind, replayed, error, landed, seconds,
/// server_time)`; `payidem.decide` wraps it in a `Decision`.
type DecisionTuple = (
    &'static str,
    bool,
    Option<&'static str>,
    &'static str,
    Option<u64>,
    Option<u64>,
);

/// The decision after one attempt of `kind` (the core's attempt kind name:
/// `operation` decides by `policy::decide`, `status_query` by
/// `policy::decide_status_query`, which ignores `has_status_path`).
#[pyfunction]
#[pyo3(signature = (kind, outcome, status = None, error_code = None, headers = None, has_status_path = false, now = None))]
pub(crate) fn decide(
    py: Python<'_>,
    #[pyo3(from_py_with = field::kind)] kind: String,
    #[pyo3(from_py_with = field::outcome)] outcome: String,
    status: Option<i128>,
    #[pyo3(from_py_with = optional_field::error_code)] error_code: Option<String>,
    headers: Option<&Bound<'_, PyAny>>,
    has_status_path: bool,
    now: Option<&Bound<'_, PyAny>>,
) -> PyResult<DecisionTuple> {
    let kind = AttemptKind::from_name(&kind)
        .ok_or_else(|| invalid(py, "kind", "must be an attempt kind name"))?;
    let now = unix_seconds(py, "now", now)?;
    let reply = answer(py, &outcome, status, error_code.as_deref(), headers)?;
    Ok(tuple(match kind {
        AttemptKind::Operation => policy::decide(&reply, has_status_path, now),
        AttemptKind::StatusQuery => policy::decide_status_query(&reply, now),
    }))
}

/// The reply of a decision's arguments, read as every reply is
/// ([`crate::operation::reply`]); the error code becomes the protocol's
/// error body the core reads it from.
fn answer(
    py: Python<'_>,
    outcome: &str,
    status: Option<i128>,
    error_code: Option<&str>,
    headers: Option<&Bound<'_, PyAny>>,
) -> PyResult<Reply> {
    let body = policy::error_body(error_code);
    reply(py, "outcome", outcome, status, headers, Some(&body), None)
}

fn tuple(d: Decision) -> DecisionTuple {
    let landed = d.landed.as_str();
    let kind = d.action.as_str();
    match d.action {
        Action::Done { replayed } => (kind, replayed, None, landed, None, None),
        Action::Fail(failure) => (
            kind,
            false,
            Some(failure.code().as_str()),
            landed,
            None,
            None,
        ),
        Action::RetryAfter { seconds } => (kind, false, None, landed, Some(seconds), None),
        Action::AdjustClockRetry { server_time } => {
            (kind, false, None, landed, None, Some(server_time))
        }
        Action::RetryNow | Action::RetryBackoff | Action::QueryStatus | Action::SendOperation => {
            (kind, false, None, landed, None, None)
        }
    }
}
