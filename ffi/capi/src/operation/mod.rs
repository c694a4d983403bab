//! The operation state machine, pure (time and journal are the caller's);
//! its steps are `step.rs`, shared with a client's call (`call.rs`).

pub mod policy;
pub mod step;

use step::payidem_step;

use std::ffi::c_char;
use std::time::Duration;

use payidem::operation::{CallTime, End, Operation, OsEntropy, Reaction, Reply, ReplyKind, Step};

use crate::base::boundary::guard;
use crate::base::enums::payidem_result;
use crate::base::error::{payidem_error, FfiError};
use crate::base::handles::{free, give, read_or};
use crate::base::headers::{payidem_header, read_headers};
use crate::base::text::{bytes, handle, handle_mut, opt_str, out};
use crate::signing::payidem_signer;

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
// Replies reported by the caller (shared with `call.rs`).

/// A reply as a C caller reports it: the arguments of
/// `payidem_operation_handle`, `payidem_call_report` and `payidem_decide`.
pub(crate) struct RawReply {
    pub(crate) outcome: u32,
    pub(crate) status: u16,
    pub(crate) headers: *const payidem_header,
    pub(crate) header_count: usize,
    pub(crate) body: *const u8,
    pub(crate) body_len: usize,
    pub(crate) reason: *const c_char,
}

impl RawReply {
    /// The one reading of a reply in the C ABI, by the core's
    /// [`Reply::reported`]; each argument is named as in the functions.
    ///
    /// # Safety
    /// The pointers are NULL or valid as the functions document them.
    pub(crate) unsafe fn read(self) -> Result<Reply, FfiError> {
        let reason = opt_str(self.reason, "reason")?;
        let outcome = self.outcome;
        let kind = ReplyKind::from_number(outcome).ok_or_else(|| {
            FfiError::invalid(
                "outcome",
                format!("{outcome} is not a payidem_attempt_outcome"),
            )
        })?;
        let (headers, body) = if kind == ReplyKind::Response {
            let headers = read_headers(self.headers, self.header_count, "headers")?
                .into_iter()
                .map(|(n, v)| (n.into_owned(), v.into_owned()))
                .collect();
            (headers, bytes(self.body, self.body_len, "body")?.to_vec())
        } else {
            (Vec::new(), Vec::new())
        };
        Ok(Reply::reported(kind, self.status, headers, body, reason)?)
    }
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
        give(slot, payidem_operation { machine });
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
        let op = handle_mut(op, "op")?;
        let signer = handle(signer, "signer")?;
        let slot = out(step_out, "step_out")?;
        let step = match op
            .machine
            .poll(&signer.inner, call_time(now_unix, elapsed_ms), &OsEntropy)
        {
            Step::Persist(p) => payidem_step::persist(p.attempt, p.first),
            Step::Send(attempt) => payidem_step::send(attempt, 0),
            Step::Wait(d) => payidem_step::wait(d),
            Step::End(end) => op.end_step(end),
        };
        give(slot, step);
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
        let op = handle_mut(op, "op")?;
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
        let op = handle_mut(op, "op")?;
        let reply = RawReply {
            outcome,
            status,
            headers,
            header_count,
            body,
            body_len,
            reason,
        }
        .read()?;
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
        let op = handle_mut(op, "op")?;
        let reason = crate::base::text::req_str(reason, "reason")?;
        let slot = out(end_out, "end_out")?;
        let end = op.machine.abandon(reason);
        give(slot, op.end_step(end));
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
    read_or(op, 0, |o| o.machine.attempts())
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
    read_or(op, 0, |o| o.machine.landed().number())
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
    free(op)
}

#[cfg(test)]
mod tests;
