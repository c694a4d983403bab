//! The operation state machine, pure (time and journal are the caller's),
//! and the step object it shares with a client's call (`call.rs`).

pub mod policy;

use std::ffi::{c_char, CString};
use std::ptr;
use std::sync::Arc;
use std::time::Duration;

use payidem::operation::{
    Attempt, AttemptKind, CallTime, End, Operation, OsEntropy, Reaction, Reply, ReplyKind, Step,
};
use payidem::policy::Landed;
use payidem::{Error, Outcome};

use crate::base::boundary::{guard, guard_value};
use crate::base::error::{payidem_error, FfiError};
use crate::base::headers::{payidem_header, read_headers};
use crate::base::result::payidem_result;
use crate::base::text::{bytes, c_string, handle, opt_str, out};
use crate::client::outcome::payidem_outcome;
use crate::signing::payidem_signer;

/// What a step asks the caller to do: the values `payidem_step_kind`
/// returns. (Named `_type`: C gives the function and a type one namespace.)
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum payidem_step_type {
    /// Record the coming attempt in your journal (durably when
    /// `payidem_step_persist_first`), then call
    /// `payidem_operation_persisted`. Only the pure machine asks for it: a
    /// client's call records in the client's journal itself.
    PAYIDEM_STEP_PERSIST = 1,
    /// Send this signed attempt, then report what happened.
    PAYIDEM_STEP_SEND = 2,
    /// Sleep `payidem_step_wait_ms`, then ask for the next step.
    PAYIDEM_STEP_WAIT = 3,
    /// The call is over; see `payidem_step_end_result`.
    PAYIDEM_STEP_END = 4,
}

/// The machine's reaction to one reported attempt (filled by
/// `payidem_operation_handle`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct payidem_reaction {
    /// What comes next: a `payidem_next_action` value.
    pub next: u32,
    /// The wait before the next attempt in milliseconds, rounded up; 0 when
    /// none.
    pub wait_ms: u64,
    /// The HTTP status of the reported response; 0 when none came.
    pub status: u16,
    /// Whether the operation may have taken effect, over every attempt so
    /// far: a `payidem_landed` value.
    pub landed: u32,
}

/// A duration in whole milliseconds, rounded up.
pub(crate) fn ceil_ms(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

// ---------------------------------------------------------------------------
// The step object.

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
    Persist {
        attempt: u32,
        first: bool,
    },
    Send {
        kind: AttemptKind,
        number: u32,
        method: CString,
        path: CString,
        headers: Vec<(CString, CString)>,
        body: Arc<[u8]>,
        timeout_ms: u64,
    },
    Wait {
        ms: u64,
    },
    End {
        name: Option<CString>,
        state: Option<CString>,
        landed: Landed,
        result: Result<Outcome, Error>,
    },
}

impl payidem_step {
    pub(crate) fn send(attempt: Attempt, timeout_ms: u64) -> payidem_step {
        payidem_step {
            body: StepBody::Send {
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
            },
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
            body: StepBody::End {
                name: end.map(|e| c_string(e.as_str())),
                state: end.map(|e| c_string(e.state().as_str())),
                // Without the machine's end nothing is known: never "no".
                landed: end.map_or(Landed::Maybe, End::landed),
                result,
            },
        }
    }

    pub(crate) fn into_raw(self) -> *mut payidem_step {
        Box::into_raw(Box::new(self))
    }
}

unsafe fn step_ref<'a>(step: *const payidem_step) -> Option<&'a StepBody> {
    step.as_ref().map(|s| &s.body)
}

/// What `step` asks for: a `payidem_step_type` value; 0 for a NULL step.
///
/// Ownership: borrows `step`.
/// NULL: `step` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `step`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_step_kind(step: *const payidem_step) -> u32 {
    guard_value(0, || {
        step_ref(step).map_or(0, |s| {
            (match s {
                StepBody::Persist { .. } => payidem_step_type::PAYIDEM_STEP_PERSIST,
                StepBody::Send { .. } => payidem_step_type::PAYIDEM_STEP_SEND,
                StepBody::Wait { .. } => payidem_step_type::PAYIDEM_STEP_WAIT,
                StepBody::End { .. } => payidem_step_type::PAYIDEM_STEP_END,
            }) as u32
        })
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
    guard_value(0, || match step_ref(step) {
        Some(StepBody::Persist { attempt, .. }) => *attempt,
        _ => 0,
    })
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
    guard_value(false, || {
        matches!(step_ref(step), Some(StepBody::Persist { first: true, .. }))
    })
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
    guard_value(0, || match step_ref(step) {
        Some(StepBody::Send { kind, .. }) => kind.number(),
        _ => 0,
    })
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
    guard_value(0, || match step_ref(step) {
        Some(StepBody::Send { number, .. }) => *number,
        _ => 0,
    })
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
    guard_value(ptr::null(), || match step_ref(step) {
        Some(StepBody::Send { method, .. }) => method.as_ptr(),
        _ => ptr::null(),
    })
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
    guard_value(ptr::null(), || match step_ref(step) {
        Some(StepBody::Send { path, .. }) => path.as_ptr(),
        _ => ptr::null(),
    })
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
    guard_value(0, || match step_ref(step) {
        Some(StepBody::Send { headers, .. }) => headers.len(),
        _ => 0,
    })
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
    guard_value(false, || {
        let Some(StepBody::Send { headers, .. }) = step_ref(step) else {
            return false;
        };
        match headers.get(index) {
            Some((name, value)) if !name_out.is_null() && !value_out.is_null() => {
                name_out.write(name.as_ptr());
                value_out.write(value.as_ptr());
                true
            }
            _ => false,
        }
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
        let (ptr, len) = match step_ref(step) {
            Some(StepBody::Send { body, .. }) => (body.as_ptr(), body.len()),
            _ => (ptr::null(), 0),
        };
        if !len_out.is_null() {
            len_out.write(len);
        }
        ptr
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
    guard_value(0, || match step_ref(step) {
        Some(StepBody::Send { timeout_ms, .. }) => *timeout_ms,
        _ => 0,
    })
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
    guard_value(0, || match step_ref(step) {
        Some(StepBody::Wait { ms }) => *ms,
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
    guard_value(ptr::null(), || match step_ref(step) {
        Some(StepBody::End {
            name: Some(name), ..
        }) => name.as_ptr(),
        _ => ptr::null(),
    })
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
    guard_value(false, || match step_ref(step) {
        Some(StepBody::End { result, .. }) => result
            .as_ref()
            .map_or_else(|e| e.code().is_final(), |_| true),
        _ => false,
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
    guard_value(0, || match step_ref(step) {
        Some(StepBody::End { landed, .. }) => landed.number(),
        _ => 0,
    })
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
    guard_value(ptr::null(), || match step_ref(step) {
        Some(StepBody::End {
            state: Some(state), ..
        }) => state.as_ptr(),
        _ => ptr::null(),
    })
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
        let StepBody::End { result, .. } = &step.body else {
            return Err(FfiError::invalid("step", "is not an END step"));
        };
        let outcome = result.clone()?;
        slot.write(Box::into_raw(Box::new(payidem_outcome::from(outcome))));
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
    if !step.is_null() {
        guard_value((), || drop(Box::from_raw(step)));
    }
}

// ---------------------------------------------------------------------------
// Replies reported by the caller (shared with `call.rs`).

/// The reply a caller reports, from C arguments: the one reading of a
/// reply in the C ABI (`payidem_operation_handle`, `payidem_call_report`,
/// `payidem_decide`), by the core's [`Reply::reported`].
pub(crate) unsafe fn read_reply(
    outcome: u32,
    status: u16,
    headers: *const payidem_header,
    header_count: usize,
    body: *const u8,
    body_len: usize,
    reason: *const c_char,
) -> Result<Reply, FfiError> {
    let reason = opt_str(reason, "reason")?;
    let kind = ReplyKind::from_number(outcome).ok_or_else(|| {
        FfiError::invalid(
            "outcome",
            format!("{outcome} is not a payidem_attempt_outcome"),
        )
    })?;
    let (headers, body) = if kind == ReplyKind::Response {
        let headers = read_headers(headers, header_count, "headers")?
            .into_iter()
            .map(|(n, v)| (n.into_owned(), v.into_owned()))
            .collect();
        (headers, bytes(body, body_len, "body")?.to_vec())
    } else {
        (Vec::new(), Vec::new())
    };
    Ok(Reply::reported(kind, status, headers, body, reason)?)
}

// ---------------------------------------------------------------------------
// The pure machine.

/// One call driving one operation, with no journal, clock or network of its
/// own: the caller persists what PERSIST steps ask, sends what SEND steps
/// carry, sleeps WAIT steps, and gives the time with every poll and report.
/// The same machine `payidem_client_execute` drives; for callers with their
/// own journal, and for the operation vectors.
///
/// Single owner: used by one thread at a time (it may move between
/// threads); free it with `payidem_operation_free`.
pub struct payidem_operation {
    machine: Operation,
}

/// Parses `start_json` by the core's rules and starts the machine.
pub(crate) fn parse_start(json: &str) -> Result<Operation, FfiError> {
    let start = payidem::settings::start::start_from_json(json)?;
    Operation::start(&start.operation, start.progress, start.setup, start.now)
        .map_err(|e| payidem::settings::start::rename_core_error(&e).into())
}

pub(crate) fn call_time(now_unix: u64, elapsed_ms: u64) -> CallTime {
    CallTime {
        unix: now_unix,
        elapsed: Duration::from_millis(elapsed_ms),
    }
}

impl payidem_operation {
    fn end_step(&self, end: End) -> payidem_step {
        let result = end.clone().into_result(
            self.machine.order_id(),
            self.machine.idempotency_key(),
            self.machine.attempts(),
        );
        payidem_step::end(Some(&end), result)
    }
}

/// Starts the machine for one operation from `start_json`, a JSON object:
///
/// - `operation` (required): `order_id`, `method`, `path` (strings,
///   required), `body` (UTF-8 text) or `body_base64` (bytes), both
///   optional (empty body), `idempotency_key` (default
///   `create-{order_id}`) and `status_path` (strings or null). Checked as
///   `payidem_client_execute` checks them.
/// - `progress`: what your journal knows: `state` (`"pending"`,
///   `"in_flight"`, `"unknown"`, `"succeeded"`, `"rejected"`, `"conflict"`;
///   default pending), `attempts` (default 0), `created_at` (Unix seconds
///   the operation was first prepared; the key's age counts from it;
///   default `now`), `first_recorded` (bool, default false: your journal
///   recorded the first attempt, in flight with 1 attempt, as it opened
///   the operation, and it was not sent; the first `PERSIST` step is then
///   skipped, and a call that ends before sending it asks for a `PERSIST`
///   of 0 attempts before its end).
/// - `setup`: `max_attempts`, `backoff_base_ms`, `backoff_cap_ms`,
///   `deadline_ms`, `key_retention_secs` (at most 172800),
///   `max_clock_offset_secs`, `clock_offset` (seconds, may be negative),
///   `clock_trusted` (bool), `retry_budget` (null, or an object with
///   `capacity`, `retry_cost`, `timeout_cost`, `success_refund`). A
///   missing key takes the client's default (see
///   `payidem_client_defaults_json`); the clock offset defaults to 0,
///   trusted; no retry budget by default.
/// - `now` (required): local wall time, Unix seconds.
///
/// Every value follows the core's rule for it (core/src/settings/start.rs):
/// null is absent, numbers are JSON integers in range; unknown keys are
/// errors. `payidem_operation_start_resolve` shows the values a machine
/// would start with.
///
/// Ownership: on success `*op_out` receives a new operation the caller
/// frees with `payidem_operation_free`.
/// NULL: `start_json` and `op_out` must not be NULL; `err_out` may be NULL.
/// Threads: safe from any thread.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `start_json` (not JSON), the
/// field (e.g. `operation.order_id`, `progress.state`,
/// `setup.max_attempts`, `setup.retry_budget.capacity`) or `op_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_operation_new(
    start_json: *const c_char,
    op_out: *mut *mut payidem_operation,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let json = crate::base::text::req_str(start_json, "start_json")?;
        let slot = out(op_out, "op_out")?;
        let machine = parse_start(json)?;
        slot.write(Box::into_raw(Box::new(payidem_operation { machine })));
        Ok(())
    })
}

/// The next step at local wall time `now_unix` (Unix seconds) and
/// `elapsed_ms` since the call started (monotonic): PERSIST (record it,
/// then `payidem_operation_persisted`), SEND (signed with `signer` and a
/// fresh nonce: send it, then `payidem_operation_handle`), WAIT (sleep,
/// then poll again) or END. Polling again after a SEND without reporting
/// ends the call: that attempt's outcome is unknown.
///
/// Ownership: on success `*step_out` receives a new step the caller frees
/// with `payidem_step_free`; `signer` is only read.
/// NULL: `op`, `signer` and `step_out` must not be NULL; `err_out` may be
/// NULL.
/// Threads: one thread at a time on `op`; `signer` may be shared.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `op`, `signer` or
/// `step_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_operation_poll(
    op: *mut payidem_operation,
    signer: *const payidem_signer,
    now_unix: u64,
    elapsed_ms: u64,
    step_out: *mut *mut payidem_step,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let op = op.as_mut().ok_or_else(|| FfiError::null("op"))?;
        let signer = handle(signer, "signer")?;
        let slot = out(step_out, "step_out")?;
        let step = match op
            .machine
            .poll(&signer.inner, call_time(now_unix, elapsed_ms), &OsEntropy)
        {
            Step::Persist(p) => payidem_step {
                body: StepBody::Persist {
                    attempt: p.attempt,
                    first: p.first,
                },
            },
            Step::Send(attempt) => payidem_step::send(attempt, 0),
            Step::Wait(d) => payidem_step::wait(d),
            Step::End(end) => op.end_step(end),
        };
        slot.write(step.into_raw());
        Ok(())
    })
}

/// Confirms that the record the last PERSIST step asked for is in your
/// journal (durable, when `payidem_step_persist_first` said so); the next
/// poll sends. Without a pending PERSIST it does nothing.
///
/// Ownership: borrows `op`.
/// NULL: `op` must not be NULL; `err_out` may be NULL.
/// Threads: one thread at a time on `op`.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `op`.
#[no_mangle]
pub unsafe extern "C" fn payidem_operation_persisted(
    op: *mut payidem_operation,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let op = op.as_mut().ok_or_else(|| FfiError::null("op"))?;
        op.machine.persisted();
        Ok(())
    })
}

/// Reports what the attempt of the last SEND step produced, at
/// `now_unix`/`elapsed_ms` (as for `payidem_operation_poll`). `outcome` is
/// a `payidem_attempt_outcome`: for `PAYIDEM_ATTEMPT_RESPONSE` give the
/// `status`, the response `headers` (`Idempotent-Replayed: true` marks a
/// replayed answer) and `body`; for `PAYIDEM_ATTEMPT_NOT_SENT` (nothing
/// reached the platform) and `PAYIDEM_ATTEMPT_SENT_NO_RESPONSE` (sent, or
/// maybe sent, and no answer) they are ignored and `reason` (NULL for a
/// generic one) says what went wrong. `*reaction_out` (when given)
/// receives what the machine decided. A report without an attempt in
/// flight changes nothing and gives `PAYIDEM_NEXT_GIVE_UP`.
///
/// Ownership: `*reaction_out` is caller memory, written only on success;
/// every input is only read (copied).
/// NULL: `op` must not be NULL; `headers` may be NULL when `header_count`
/// is 0 (no header's `name` or `value` may be NULL); `body` may be NULL
/// when `body_len` is 0; `reason`, `reaction_out` and `err_out` may be
/// NULL.
/// Threads: one thread at a time on `op`.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `op`, `outcome` (not a
/// `payidem_attempt_outcome`), `status` (a response's status outside
/// 100..=999), `headers[i].name`, `headers[i].value`, `body` or `reason`;
/// nothing is reported then.
#[no_mangle]
pub unsafe extern "C" fn payidem_operation_handle(
    op: *mut payidem_operation,
    outcome: u32,
    status: u16,
    headers: *const payidem_header,
    header_count: usize,
    body: *const u8,
    body_len: usize,
    reason: *const c_char,
    now_unix: u64,
    elapsed_ms: u64,
    reaction_out: *mut payidem_reaction,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let op = op.as_mut().ok_or_else(|| FfiError::null("op"))?;
        let reply = read_reply(
            outcome,
            status,
            headers,
            header_count,
            body,
            body_len,
            reason,
        )?;
        let reaction = op
            .machine
            .handle(reply, call_time(now_unix, elapsed_ms), &OsEntropy);
        if !reaction_out.is_null() {
            reaction_out.write(reaction_of(&reaction));
        }
        Ok(())
    })
}

fn reaction_of(r: &Reaction) -> payidem_reaction {
    payidem_reaction {
        next: r.next.number(),
        wait_ms: r.wait.map_or(0, ceil_ms),
        status: r.status.unwrap_or(0),
        landed: r.landed.number(),
    }
}

/// Ends the call now, as a caller's cancel does, with what is known
/// (unknown if an attempt may have landed, else not sent or refused; the
/// key is kept either way); an ended call keeps its end. `*end_out`
/// receives the END step (its result is the end's own, never
/// `PAYIDEM_CANCELLED`: record its state in your journal).
///
/// Ownership: on success `*end_out` receives a new step the caller frees
/// with `payidem_step_free`.
/// NULL: `op`, `reason` and `end_out` must not be NULL; `err_out` may be
/// NULL.
/// Threads: one thread at a time on `op`.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `op`, `reason` or `end_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_operation_abandon(
    op: *mut payidem_operation,
    reason: *const c_char,
    end_out: *mut *mut payidem_step,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let op = op.as_mut().ok_or_else(|| FfiError::null("op"))?;
        let reason = crate::base::text::req_str(reason, "reason")?;
        let slot = out(end_out, "end_out")?;
        let end = op.machine.abandon(reason);
        slot.write(op.end_step(end).into_raw());
        Ok(())
    })
}

/// Attempts over every call of the operation so far (the `attempts` it
/// started from plus those this call signed); 0 for a NULL operation.
///
/// Ownership: borrows `op`.
/// NULL: `op` may be NULL, giving 0.
/// Threads: one thread at a time on `op`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_operation_attempts(op: *const payidem_operation) -> u32 {
    guard_value(0, || op.as_ref().map_or(0, |o| o.machine.attempts()))
}

/// Whether an attempt of the operation may have taken effect, over every
/// call so far: a `payidem_landed` value; 0 for a NULL operation.
///
/// Ownership: borrows `op`.
/// NULL: `op` may be NULL, giving 0.
/// Threads: one thread at a time on `op`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_operation_landed(op: *const payidem_operation) -> u32 {
    guard_value(0, || op.as_ref().map_or(0, |o| o.machine.landed().number()))
}

/// Frees an operation.
///
/// Ownership: takes `op`; steps it made stay valid.
/// NULL: `op` may be NULL (nothing happens).
/// Anything else must be a live handle of this type from this library:
/// freeing it twice, using it after this call, or passing a handle of
/// another type is undefined behaviour, and is not detected.
/// Threads: no call on `op` may be running or start.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_operation_free(op: *mut payidem_operation) {
    if !op.is_null() {
        guard_value((), || drop(Box::from_raw(op)));
    }
}

#[cfg(test)]
mod tests;
