//! `decide`: the client's decision after one attempt (protocol section 4).

use pyo3::prelude::*;

use payidem::policy::{self, AttemptResult, Decision, Failure};

use crate::convert::{field, optional_field, unix_seconds, HeaderTexts};
use crate::errors::invalid;

/// The decision as a tuple `(kind, replayed, error, unknown, seconds,
/// server_time)`; `payidem.decide` wraps it in a `Decision`.
type DecisionTuple = (
    &'static str,
    bool,
    Option<&'static str>,
    bool,
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
    let result = match outcome.as_str() {
        "response" => {
            let status = status
                .and_then(|s| u16::try_from(s).ok())
                .filter(|s| (100..=999).contains(s))
                .ok_or_else(|| {
                    invalid(py, "status", "a response needs an HTTP status in 100..=999")
                })?;
            AttemptResult::Response {
                status,
                error_code: error_code.as_deref(),
                headers: &headers,
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
    };
    Ok(match policy::decide(&result, has_status_path, now) {
        Decision::Done { replayed } => ("done", replayed, None, false, None, None),
        Decision::Fail(failure) => {
            let error = match failure {
                Failure::IdempotencyConflict => "idempotency_conflict",
                Failure::Rejected => "rejected",
            };
            ("fail", false, Some(error), false, None, None)
        }
        Decision::RetryNow => ("retry_now", false, None, false, None, None),
        Decision::RetryBackoff { unknown } => ("retry_backoff", false, None, unknown, None, None),
        Decision::RetryAfter { seconds } => {
            ("retry_after", false, None, false, Some(seconds), None)
        }
        Decision::AdjustClockRetry { server_time } => (
            "adjust_clock_retry",
            false,
            None,
            false,
            None,
            Some(server_time),
        ),
        Decision::QueryStatus => ("query_status", false, None, true, None, None),
    })
}
