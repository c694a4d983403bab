//! The retry decision after one attempt, for callers with their own HTTP
//! stack (libcurl and the like).

use std::ffi::c_char;

use payidem::policy::{
    decide, decide_status_query, error_body, error_code_from_body, Action, Decision, Reply,
};

use crate::base::boundary::guard;
use crate::base::enums::payidem_result;
use crate::base::enums::{payidem_decision_kind, payidem_landed};
use crate::base::error::payidem_error;
use crate::base::handles::text_out;
use crate::base::headers::payidem_header;
use crate::base::text::{bytes, opt_str, out};
use crate::base::vocabulary::c_enum;
use crate::operation::RawReply;

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
    /// For every kind: whether the operation may have taken effect. Not
    /// `PAYIDEM_LANDED_NO` means: keep the key; when retries run out the
    /// outcome is unknown. A `PAYIDEM_DECISION_FAIL` with
    /// `PAYIDEM_LANDED_NO` is a refusal before the platform's idempotency
    /// step: nothing happened (not final; `PAYIDEM_REFUSED` in a client).
    pub landed: payidem_landed,
    /// For `PAYIDEM_DECISION_RETRY_AFTER`: seconds to wait.
    pub seconds: u64,
    /// For `PAYIDEM_DECISION_ADJUST_CLOCK_RETRY`: the server's clock, Unix
    /// seconds.
    pub server_time: u64,
}

impl From<Decision> for payidem_decision {
    fn from(d: Decision) -> payidem_decision {
        let mut out = payidem_decision {
            kind: c_enum(d.action.kind()),
            failure: payidem_result::PAYIDEM_OK,
            replayed: false,
            landed: c_enum(d.landed),
            seconds: 0,
            server_time: 0,
        };
        match d.action {
            Action::Done { replayed } => out.replayed = replayed,
            Action::Fail(failure) => out.failure = failure.code().into(),
            Action::RetryAfter { seconds } => out.seconds = seconds,
            Action::AdjustClockRetry { server_time } => out.server_time = server_time,
            _ => {}
        }
        out
    }
}

/// The protocol's decision (section 4) after one attempt of the
/// operation's own request. `outcome` is a `payidem_attempt_outcome` value;
/// for `PAYIDEM_ATTEMPT_RESPONSE` give the `status`, the body's
/// `error.code` (`error_code`, NULL when none; see
/// `payidem_error_code_from_body`) and the response `headers`; otherwise
/// they are ignored. `has_status_path` tells whether the operation's status
/// can be queried; `now` is the platform's clock in Unix seconds (local
/// time plus any offset learnt from it), which resolves a `Retry-After`
/// date. `decision_out->landed` tells whether the operation may have taken
/// effect: never give up on a key that is not `PAYIDEM_LANDED_NO`.
///
/// Ownership: `*decision_out` is caller memory, written only on success;
/// every input is only read.
/// NULL: `decision_out` must not be NULL; `error_code` may be NULL;
/// `headers` may be NULL when `header_count` is 0, and no header's `name`
/// or `value` may be NULL; `err_out` may be NULL.
/// Threads: safe from any thread.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `outcome` (not a
/// `payidem_attempt_outcome`), `status` (a response's status outside
/// 100..=999), `error_code`, `headers[i].name`, `headers[i].value` or
/// `decision_out`.
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
    decide_with(
        outcome,
        status,
        error_code,
        headers,
        header_count,
        decision_out,
        err_out,
        |r| decide(r, has_status_path, now),
    )
}

/// The protocol's decision after one status query (a signed GET of the
/// operation's status path): 2xx settles the operation with that answer
/// (`PAYIDEM_DECISION_DONE`), 404 means it did not land
/// (`PAYIDEM_DECISION_SEND_OPERATION`), clock and replay answers as for
/// the operation, anything else is asked again after a backoff or
/// `Retry-After`. `decision_out->landed` is `PAYIDEM_LANDED_YES` for a 2xx,
/// `PAYIDEM_LANDED_NO` for a 404, `PAYIDEM_LANDED_MAYBE` otherwise.
///
/// Ownership: `*decision_out` is caller memory, written only on success;
/// every input is only read.
/// NULL: as for `payidem_decide`.
/// Threads: safe from any thread.
/// Errors: as for `payidem_decide`.
#[no_mangle]
pub unsafe extern "C" fn payidem_decide_status_query(
    outcome: u32,
    status: u16,
    error_code: *const c_char,
    headers: *const payidem_header,
    header_count: usize,
    now: u64,
    decision_out: *mut payidem_decision,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    decide_with(
        outcome,
        status,
        error_code,
        headers,
        header_count,
        decision_out,
        err_out,
        |r| decide_status_query(r, now),
    )
}

/// The body of `payidem_decide` and `payidem_decide_status_query`: reads
/// the reply as they document it and writes what `rule` decides.
unsafe fn decide_with(
    outcome: u32,
    status: u16,
    error_code: *const c_char,
    headers: *const payidem_header,
    header_count: usize,
    decision_out: *mut payidem_decision,
    err_out: *mut *mut payidem_error,
    rule: impl FnOnce(&Reply) -> Decision,
) -> payidem_result {
    guard(err_out, || {
        let slot = out(decision_out, "decision_out")?;
        let body = error_body(opt_str(error_code, "error_code")?);
        let reply = RawReply {
            outcome,
            status,
            headers,
            header_count,
            body: body.as_ptr(),
            body_len: body.len(),
            reason: std::ptr::null(),
        }
        .read()?;
        slot.write(rule(&reply).into());
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
    text_out(buf, buf_len, len_out, err_out, || {
        let code = error_code_from_body(bytes(body, body_len, "body")?).unwrap_or_default();
        // A code with a NUL cannot be a C string: no code.
        Ok(if code.contains('\0') {
            String::new()
        } else {
            code
        })
    })
}
