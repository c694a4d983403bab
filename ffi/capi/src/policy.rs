//! The retry decision after one attempt, for callers with their own HTTP
//! stack (libcurl and the like).

use std::ffi::c_char;

use payidem::policy::{decide, error_code_from_body, AttemptResult, Decision, Failure};

use crate::boundary::guard;
use crate::error::{payidem_error, FfiError};
use crate::headers::{payidem_header, read_headers};
use crate::result::payidem_result;
use crate::signing::write_text;
use crate::text::{bytes, opt_str, out};

/// What one attempt produced (input of `payidem_decide`, passed as
/// `uint32_t`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum payidem_attempt_outcome {
    /// An HTTP response came back (give its status, error code and headers).
    PAYIDEM_ATTEMPT_RESPONSE = 1,
    /// The request was never sent (connection refused, DNS or TLS failure
    /// before the request): nothing reached the platform.
    PAYIDEM_ATTEMPT_NOT_SENT = 2,
    /// The request was sent, or may have been, and no response came back
    /// (timeout, reset).
    PAYIDEM_ATTEMPT_SENT_NO_RESPONSE = 3,
}

/// What to do after one attempt.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum payidem_decision_kind {
    /// Settled with this 2xx response; see `replayed`.
    PAYIDEM_DECISION_DONE = 1,
    /// Fails for good; `failure` is `PAYIDEM_IDEMPOTENCY_CONFLICT` (never
    /// retried, never re-keyed) or `PAYIDEM_REJECTED`.
    PAYIDEM_DECISION_FAIL = 2,
    /// Re-sign with a fresh nonce and timestamp and retry at once.
    PAYIDEM_DECISION_RETRY_NOW = 3,
    /// Retry after a full-jitter backoff; `unknown` tells whether the
    /// attempt may have taken effect (then, if retries run out, the outcome
    /// is unknown: keep the key).
    PAYIDEM_DECISION_RETRY_BACKOFF = 4,
    /// Retry after `seconds` (the platform's `Retry-After`).
    PAYIDEM_DECISION_RETRY_AFTER = 5,
    /// Take the clock offset from `server_time` and retry once at once.
    PAYIDEM_DECISION_ADJUST_CLOCK_RETRY = 6,
    /// The outcome is unknown: query the operation's status first.
    PAYIDEM_DECISION_QUERY_STATUS = 7,
}

/// The decision of `payidem_decide`. Fields that do not apply to `kind` are
/// 0 / false.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct payidem_decision {
    /// What to do.
    pub kind: payidem_decision_kind,
    /// For `PAYIDEM_DECISION_FAIL`: `PAYIDEM_IDEMPOTENCY_CONFLICT` or
    /// `PAYIDEM_REJECTED`; `PAYIDEM_OK` otherwise.
    pub failure: payidem_result,
    /// For `PAYIDEM_DECISION_DONE`: the platform replayed a stored answer.
    pub replayed: bool,
    /// For `PAYIDEM_DECISION_RETRY_BACKOFF`: the attempt may have taken
    /// effect.
    pub unknown: bool,
    /// For `PAYIDEM_DECISION_RETRY_AFTER`: seconds to wait.
    pub seconds: u64,
    /// For `PAYIDEM_DECISION_ADJUST_CLOCK_RETRY`: the server's clock, Unix
    /// seconds.
    pub server_time: u64,
}

impl From<Decision> for payidem_decision {
    fn from(d: Decision) -> payidem_decision {
        let mut out = payidem_decision {
            kind: payidem_decision_kind::PAYIDEM_DECISION_DONE,
            failure: payidem_result::PAYIDEM_OK,
            replayed: false,
            unknown: false,
            seconds: 0,
            server_time: 0,
        };
        match d {
            Decision::Done { replayed } => out.replayed = replayed,
            Decision::Fail(failure) => {
                out.kind = payidem_decision_kind::PAYIDEM_DECISION_FAIL;
                out.failure = match failure {
                    Failure::IdempotencyConflict => payidem_result::PAYIDEM_IDEMPOTENCY_CONFLICT,
                    Failure::Rejected => payidem_result::PAYIDEM_REJECTED,
                };
            }
            Decision::RetryNow => out.kind = payidem_decision_kind::PAYIDEM_DECISION_RETRY_NOW,
            Decision::RetryBackoff { unknown } => {
                out.kind = payidem_decision_kind::PAYIDEM_DECISION_RETRY_BACKOFF;
                out.unknown = unknown;
            }
            Decision::RetryAfter { seconds } => {
                out.kind = payidem_decision_kind::PAYIDEM_DECISION_RETRY_AFTER;
                out.seconds = seconds;
            }
            Decision::AdjustClockRetry { server_time } => {
                out.kind = payidem_decision_kind::PAYIDEM_DECISION_ADJUST_CLOCK_RETRY;
                out.server_time = server_time;
            }
            Decision::QueryStatus => {
                out.kind = payidem_decision_kind::PAYIDEM_DECISION_QUERY_STATUS;
            }
        }
        out
    }
}

/// The protocol's decision (section 4) after one attempt. `outcome` is a
/// `payidem_attempt_outcome` value; for `PAYIDEM_ATTEMPT_RESPONSE` give the
/// `status`, the body's `error.code` (`error_code`, NULL when none; see
/// `payidem_error_code_from_body`) and the response `headers`; otherwise
/// they are ignored. `has_status_path` tells whether the operation's status
/// can be queried; `now` (Unix seconds) resolves a `Retry-After` date.
///
/// Ownership: `*decision_out` is caller memory, written only on success;
/// every input is only read.
/// NULL: `decision_out` must not be NULL; `error_code` may be NULL;
/// `headers` may be NULL when `header_count` is 0, and no header's `name`
/// or `value` may be NULL; `err_out` may be NULL.
/// Threads: safe from any thread.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `outcome` (not a
/// `payidem_attempt_outcome`), `error_code`, `headers[i].name`,
/// `headers[i].value` or `decision_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_decide(
    outcome: u32,
    status: u16,
    error_code: *const c_char,
    headers: *const payidem_header,
    header_count: usize,
    has_status_path: bool,
    now: u64,
    decision_out: *mut payidem_decision,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let slot = out(decision_out, "decision_out")?;
        let owned = read_headers(headers, header_count, "headers")?;
        let pairs: Vec<(&str, &str)> = owned.iter().map(|(n, v)| (&**n, &**v)).collect();
        let error_code = opt_str(error_code, "error_code")?;
        let result = match outcome {
            x if x == payidem_attempt_outcome::PAYIDEM_ATTEMPT_RESPONSE as u32 => {
                AttemptResult::Response {
                    status,
                    error_code,
                    headers: &pairs,
                }
            }
            x if x == payidem_attempt_outcome::PAYIDEM_ATTEMPT_NOT_SENT as u32 => {
                AttemptResult::NotSent
            }
            x if x == payidem_attempt_outcome::PAYIDEM_ATTEMPT_SENT_NO_RESPONSE as u32 => {
                AttemptResult::SentNoResponse
            }
            other => {
                return Err(FfiError::invalid(
                    "outcome",
                    format!("{other} is not a payidem_attempt_outcome"),
                ))
            }
        };
        slot.write(decide(&result, has_status_path, now).into());
        Ok(())
    })
}

/// Writes the `error.code` of a protocol error body
/// (`{"error": {"code": "...", ...}}`) and a NUL into `buf`; `*len_out`
/// (when given) receives its length without the NUL, also on
/// `PAYIDEM_BUFFER_TOO_SMALL`. A body that is no such JSON gives `""`
/// (length 0), which is not an error.
///
/// Ownership: `buf` is caller memory, written only on success.
/// NULL: `body` may be NULL when `body_len` is 0; `buf` may be NULL only
/// with `buf_len` 0; `len_out` and `err_out` may be NULL.
/// Threads: safe from any thread.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `body` or `buf`;
/// `PAYIDEM_BUFFER_TOO_SMALL` naming `buf`.
#[no_mangle]
pub unsafe extern "C" fn payidem_error_code_from_body(
    body: *const u8,
    body_len: usize,
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let body = bytes(body, body_len, "body")?;
        let code = error_code_from_body(body).unwrap_or_default();
        if code.contains('\0') {
            return write_text("", buf, buf_len, len_out, "buf");
        }
        write_text(&code, buf, buf_len, len_out, "buf")
    })
}
