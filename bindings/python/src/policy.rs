//! `decide`: the client's decision after one attempt (protocol section 4).

use pyo3::prelude::*;

use payidem::policy::{self, Action, AttemptResult, Decision, Failure};

use crate::convert::{field, optional_field, unix_seconds, HeaderTexts};
use crate::errors::invalid;

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

#[pyfunction]
#[pyo3(signature = (outcome, status = None, error_code = None, headers = None, has_status_path = false, now = None))]
pub(crate) fn decide(
    py: Python<'_>,
    #[pyo3(from_py_with = field::outcome)] outcome: String,
    status: Option<i128>,
    #[pyo3(from_py_with = optional_field::error_code)] error_code: Option<String>,
    headers: Option<&Bound<'_, PyAny>>,
    has_status_path: bool,
    now: Option<&Bound<'_, PyAny>>,
) -> PyResult<DecisionTuple> {
    let texts = HeaderTexts::collect(headers)?;
    let headers = texts.pairs()?;
    let now = unix_seconds(py, "now", now)?;
    let result = attempt_result(py, &outcome, status, error_code.as_deref(), &headers)?;
    Ok(tuple(policy::decide(&result, has_status_path, now)))
}

#[pyfunction]
#[pyo3(signature = (outcome, status = None, error_code = None, headers = None, now = None))]
pub(crate) fn decide_status_query(
    py: Python<'_>,
    #[pyo3(from_py_with = field::outcome)] outcome: String,
    status: Option<i128>,
    #[pyo3(from_py_with = optional_field::error_code)] error_code: Option<String>,
    headers: Option<&Bound<'_, PyAny>>,
    now: Option<&Bound<'_, PyAny>>,
) -> PyResult<DecisionTuple> {
    let texts = HeaderTexts::collect(headers)?;
    let headers = texts.pairs()?;
    let now = unix_seconds(py, "now", now)?;
    let result = attempt_result(py, &outcome, status, error_code.as_deref(), &headers)?;
    Ok(tuple(policy::decide_status_query(&result, now)))
}

fn attempt_result<'a>(
    py: Python<'_>,
    outcome: &str,
    status: Option<i128>,
    error_code: Option<&'a str>,
    headers: &'a [(&'a str, &'a str)],
) -> PyResult<AttemptResult<'a>> {
    Ok(match outcome {
        "response" => {
            let status = status
                .and_then(|s| u16::try_from(s).ok())
                .filter(|s| (100..=999).contains(s))
                .ok_or_else(|| {
                    invalid(py, "status", "a response needs an HTTP status in 100..=999")
                })?;
            AttemptResult::Response {
                status,
                error_code,
                headers,
            }
        }
        "not_sent" => AttemptResult::NotSent,
        "sent_no_response" => AttemptResult::SentNoResponse,
        _ => {
            return Err(invalid(
                py,
                "outcome",
                "must be 'response', 'not_sent' or 'sent_no_response'",
            ))
        }
    })
}

fn tuple(d: Decision) -> DecisionTuple {
    let landed = d.landed.as_str();
    let kind = d.action.as_str();
    match d.action {
        Action::Done { replayed } => (kind, replayed, None, landed, None, None),
        Action::Fail(failure) => {
            let error = match failure {
                Failure::IdempotencyConflict => "idempotency_conflict",
                Failure::Rejected => "rejected",
            };
            (kind, false, Some(error), landed, None, None)
        }
        Action::RetryAfter { seconds } => (kind, false, None, landed, Some(seconds), None),
        Action::AdjustClockRetry { server_time } => {
            (kind, false, None, landed, None, Some(server_time))
        }
        Action::RetryNow | Action::RetryBackoff | Action::QueryStatus | Action::SendOperation => {
            (kind, false, None, landed, None, None)
        }
    }
}
