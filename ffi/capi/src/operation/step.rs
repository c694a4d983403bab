//! The step object: what an operation or a client's call asks its caller
//! to do next (persist, send, wait, end), read through accessors that
//! answer 0, false or NULL for another kind's data.

use std::ffi::{c_char, CString};
use std::ptr;
use std::sync::Arc;
use std::time::Duration;

use payidem::operation::{Attempt, AttemptKind, End, StepKind};
use payidem::policy::Landed;
use payidem::{Error, Outcome};

use crate::base::boundary::{guard, guard_value};
use crate::base::enums::payidem_result;
use crate::base::error::{payidem_error, FfiError};
use crate::base::handles::{free, give, header_at, read_or, text_of};
use crate::base::text::{c_string, handle, out};
use crate::client::outcome::payidem_outcome;
use crate::operation::ceil_ms;

/// One step of an operation: persist, send, wait or end. Made by
/// `payidem_operation_poll`, `payidem_operation_abandon`,
/// `payidem_call_step` and `payidem_call_cancel`; read with the
/// `payidem_step_*` accessors (an accessor of another kind's data answers
/// 0, false or NULL).
///
/// Single owner: it may move between threads but must not be used by two
/// at once; free it with `payidem_step_free`. It does not borrow the
/// operation or call that made it.
pub struct payidem_step {
    body: StepBody,
}

enum StepBody {
    Persist(PersistStep),
    Send(SendStep),
    Wait { ms: u64 },
    End(EndStep),
}

struct PersistStep {
    attempt: u32,
    first: bool,
}

struct SendStep {
    kind: AttemptKind,
    number: u32,
    method: CString,
    path: CString,
    headers: Vec<(CString, CString)>,
    body: Arc<[u8]>,
    timeout_ms: u64,
}

struct EndStep {
    name: Option<CString>,
    state: Option<CString>,
    landed: Landed,
    result: Result<Outcome, Error>,
}

impl payidem_step {
    pub(crate) fn persist(attempt: u32, first: bool) -> payidem_step {
        payidem_step {
            body: StepBody::Persist(PersistStep { attempt, first }),
        }
    }

    pub(crate) fn send(attempt: Attempt, timeout_ms: u64) -> payidem_step {
        payidem_step {
            body: StepBody::Send(SendStep {
                kind: attempt.kind,
                number: attempt.number,
                method: c_string(attempt.method),
                path: c_string(attempt.path),
                headers: attempt
                    .headers
                    .into_iter()
                    .map(|(n, v)| (c_string(n), c_string(v)))
                    .collect(),
                body: attempt.body,
                timeout_ms,
            }),
        }
    }

    pub(crate) fn wait(d: Duration) -> payidem_step {
        payidem_step {
            body: StepBody::Wait { ms: ceil_ms(d) },
        }
    }

    /// An END step: `end` is the machine's end when there is one (a call
    /// that failed on its journal before any end has none), `result` what
    /// the caller gets.
    pub(crate) fn end(end: Option<&End>, result: Result<Outcome, Error>) -> payidem_step {
        payidem_step {
            body: StepBody::End(EndStep {
                name: end.map(|e| c_string(e.as_str())),
                state: end.map(|e| c_string(e.state().as_str())),
                // Without the machine's end nothing is known: never "no".
                landed: end.map_or(Landed::Maybe, End::landed),
                result,
            }),
        }
    }

    fn persisting(&self) -> Option<&PersistStep> {
        match &self.body {
            StepBody::Persist(p) => Some(p),
            _ => None,
        }
    }

    fn sending(&self) -> Option<&SendStep> {
        match &self.body {
            StepBody::Send(s) => Some(s),
            _ => None,
        }
    }

    fn ending(&self) -> Option<&EndStep> {
        match &self.body {
            StepBody::End(e) => Some(e),
            _ => None,
        }
    }
}

/// What `step` asks for: a `payidem_step_type` value; 0 for a NULL step.
///
/// Ownership: borrows `step`.
/// NULL: `step` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_kind(step: *const payidem_step) -> u32 {
    // The C constants are the core's step-kind numbers.
    read_or(step, 0, |s| {
        (match s.body {
            StepBody::Persist(_) => StepKind::Persist,
            StepBody::Send(_) => StepKind::Send,
            StepBody::Wait { .. } => StepKind::Wait,
            StepBody::End(_) => StepKind::End,
        })
        .number()
    })
}

/// For a PERSIST step: the number the coming attempt will carry (attempts
/// so far plus one), which the journal records while marking the operation
/// in flight; 0 for any other step.
///
/// Ownership: borrows `step`.
/// NULL: `step` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_persist_attempt(step: *const payidem_step) -> u32 {
    read_or(step, 0, |s| s.persisting().map_or(0, |p| p.attempt))
}

/// For a PERSIST step: true when no attempt of the operation was ever sent,
/// so this record must be durable (fsync'd, committed) before anything
/// leaves; false otherwise and for any other step.
///
/// Ownership: borrows `step`.
/// NULL: `step` may be NULL, giving false.
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_persist_first(step: *const payidem_step) -> bool {
    read_or(step, false, |s| s.persisting().is_some_and(|p| p.first))
}

/// For a SEND step: the attempt's kind, a `payidem_attempt_kind` value; 0
/// for any other step.
///
/// Ownership: borrows `step`.
/// NULL: `step` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_attempt_kind(step: *const payidem_step) -> u32 {
    read_or(step, 0, |s| s.sending().map_or(0, |x| x.kind.number()))
}

/// For a SEND step: the attempt's number over every call of the operation
/// (1 = the first ever); 0 for any other step.
///
/// Ownership: borrows `step`.
/// NULL: `step` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_attempt_number(step: *const payidem_step) -> u32 {
    read_or(step, 0, |s| s.sending().map_or(0, |x| x.number))
}

/// For a SEND step: the HTTP method to send (`"POST"`, `"GET"` for a
/// status query); NULL for any other step.
///
/// Ownership: borrowed from `step`, valid until `payidem_step_free(step)`.
/// NULL: `step` may be NULL, giving NULL.
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_method(step: *const payidem_step) -> *const c_char {
    text_of(step, |s| s.sending().map(|x| x.method.as_c_str()))
}

/// For a SEND step: the request target to send, exactly as signed (for a
/// client's call it holds the base URL's path prefix; `payidem_client_url`
/// gives the full URL); NULL for any other step.
///
/// Ownership: borrowed from `step`, valid until `payidem_step_free(step)`.
/// NULL: `step` may be NULL, giving NULL.
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_path(step: *const payidem_step) -> *const c_char {
    text_of(step, |s| s.sending().map(|x| x.path.as_c_str()))
}

/// For a SEND step: how many headers to send (the signature headers,
/// `Idempotency-Key` on the operation's request, `Content-Type` for a
/// non-empty body); 0 for any other step.
///
/// Ownership: borrows `step`.
/// NULL: `step` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_header_count(step: *const payidem_step) -> usize {
    read_or(step, 0, |s| s.sending().map_or(0, |x| x.headers.len()))
}

/// For a SEND step: the header at `index` (0-based); sets `*name_out` and
/// `*value_out` and returns true. Returns false and writes nothing for
/// another kind of step, an index out of range or a NULL argument.
///
/// Ownership: the strings are borrowed from `step`, valid until
/// `payidem_step_free(step)`.
/// NULL: no argument may be NULL (false).
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none (false).
#[no_mangle]
pub unsafe extern "C" fn payidem_step_header_at(
    step: *const payidem_step,
    index: usize,
    name_out: *mut *const c_char,
    value_out: *mut *const c_char,
) -> bool {
    // The one `header_at`; this function keeps its `bool` (not a result
    // code) for the ABI's sake.
    read_or(step, false, |s| {
        s.sending()
            .is_some_and(|x| header_at("step", &x.headers, index, name_out, value_out).is_ok())
    })
}

/// For a SEND step: the body to send (not NUL-terminated; empty for a
/// status query, with a non-NULL pointer) and `*len_out` its length. NULL
/// (and `*len_out` 0) for any other step.
///
/// Ownership: borrowed from `step`, valid until `payidem_step_free(step)`.
/// NULL: `step` may be NULL, giving NULL; `len_out` may be NULL (the length
/// is then not written).
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_body(
    step: *const payidem_step,
    len_out: *mut usize,
) -> *const u8 {
    guard_value(ptr::null(), || {
        let body = step.as_ref().and_then(payidem_step::sending);
        if !len_out.is_null() {
            len_out.write(body.map_or(0, |x| x.body.len()));
        }
        body.map_or(ptr::null(), |x| x.body.as_ptr())
    })
}

/// For a SEND step of a client's call: the most the whole exchange may
/// take, in milliseconds (the client's request timeout shortened to the
/// call's remaining deadline; at least 1). 0 for a SEND step of the pure
/// machine (which knows no timeout) and for any other step.
///
/// Ownership: borrows `step`.
/// NULL: `step` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_timeout_ms(step: *const payidem_step) -> u64 {
    read_or(step, 0, |s| s.sending().map_or(0, |x| x.timeout_ms))
}

/// For a WAIT step: how long to sleep before asking again, in
/// milliseconds, rounded up (never less than the machine's wait); 0 for any
/// other step.
///
/// Ownership: borrows `step`.
/// NULL: `step` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_wait_ms(step: *const payidem_step) -> u64 {
    read_or(step, 0, |s| match s.body {
        StepBody::Wait { ms } => ms,
        _ => 0,
    })
}

/// For an END step: how the call ended, as the core library names it:
/// `"succeeded"`, `"rejected"`, `"conflict"`, `"refused"`, `"not_sent"`,
/// `"unknown"` or `"key_expired"`. NULL for any other step, and for the END
/// of a client's call that stopped on a journal error before the machine
/// ended (see `payidem_step_end_result`).
///
/// Ownership: borrowed from `step`, valid until `payidem_step_free(step)`.
/// NULL: `step` may be NULL, giving NULL.
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_end_name(step: *const payidem_step) -> *const c_char {
    text_of(step, |s| s.ending().and_then(|e| e.name.as_deref()))
}

/// For an END step: true when the operation is settled for good and is
/// never sent again (succeeded, rejected, conflict, key expired); false
/// when a later call with the same key may still complete it, and for any
/// other step. Always the same as `payidem_result_is_final` of
/// `payidem_step_end_result`'s code (true for success).
///
/// Ownership: borrows `step`.
/// NULL: `step` may be NULL, giving false.
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_end_final(step: *const payidem_step) -> bool {
    read_or(step, false, |s| {
        s.ending()
            .is_some_and(|e| (e.result.as_ref()).map_or_else(|e| e.code().is_final(), |_| true))
    })
}

/// For an END step: whether the operation may have taken effect, a
/// `payidem_landed` value (`PAYIDEM_LANDED_MAYBE` when the call stopped on
/// a journal error before the machine ended); `PAYIDEM_LANDED_NO` (0) for
/// any other step.
///
/// Ownership: borrows `step`.
/// NULL: `step` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_end_landed(step: *const payidem_step) -> u32 {
    read_or(step, 0, |s| s.ending().map_or(0, |e| e.landed.number()))
}

/// For an END step: the state the end leaves the operation in, as journals
/// store it (`"pending"`, `"unknown"`, `"succeeded"`, `"rejected"`,
/// `"conflict"`). NULL for any other step, and when the call stopped on a
/// journal error before the machine ended.
///
/// Ownership: borrowed from `step`, valid until `payidem_step_free(step)`.
/// NULL: `step` may be NULL, giving NULL.
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_end_state(step: *const payidem_step) -> *const c_char {
    text_of(step, |s| s.ending().and_then(|e| e.state.as_deref()))
}

/// For an END step: what the caller gets. `PAYIDEM_OK` and a new outcome
/// in `*outcome_out` when the operation succeeded; otherwise the error's
/// code with the usual error object in `*err_out` (the platform's status
/// and body, the order id and the key): `PAYIDEM_REJECTED`,
/// `PAYIDEM_IDEMPOTENCY_CONFLICT`, `PAYIDEM_KEY_EXPIRED` (final);
/// `PAYIDEM_REFUSED`, `PAYIDEM_OUTCOME_UNKNOWN`, `PAYIDEM_TRANSPORT_ERROR`
/// (nothing reached the platform), `PAYIDEM_CANCELLED`,
/// `PAYIDEM_JOURNAL_ERROR` (not final). May be asked any number of times.
///
/// Ownership: on success `*outcome_out` receives a new outcome the caller
/// frees with `payidem_outcome_free`.
/// NULL: `step` and `outcome_out` must not be NULL; `err_out` may be NULL.
/// Threads: read-only on `step`; not while another thread frees it.
/// Errors: as listed; `PAYIDEM_INVALID_ARGUMENT` naming `step` (NULL or not
/// an END step) or `outcome_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_end_result(
    step: *const payidem_step,
    outcome_out: *mut *mut payidem_outcome,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let step = handle(step, "step")?;
        let slot = out(outcome_out, "outcome_out")?;
        let end = (step.ending()).ok_or_else(|| FfiError::invalid("step", "is not an END step"))?;
        give(slot, payidem_outcome::from(end.result.clone()?));
        Ok(())
    })
}

/// Frees a step.
///
/// Ownership: takes `step`; every string and buffer borrowed from it dies.
/// NULL: `step` may be NULL (nothing happens).
/// Anything else must be a live handle of this type from this library:
/// freeing it twice, using it after this call, or passing a handle of
/// another type is undefined behaviour, and is not detected.
/// Threads: the caller must own `step`; free it once.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_free(step: *mut payidem_step) {
    free(step)
}
