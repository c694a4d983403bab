//! The C ABI's vocabulary in one place: every C enum of the header (result
//! codes, states, steps, decisions, levels, formats), each carrying the
//! numbers of the core's table it mirrors (`carries!`, `payidem::vocabulary`),
//! and the name function of each, read from the core's table: one generic
//! lookup, one exported function per enum. cbindgen reads the enums here
//! (it does not expand macros, so each is written out); `tests/vocabulary.rs`
//! checks every constant of the header against the core's tables.

use std::ffi::c_char;
use std::ptr;

use payidem::operation::{AttemptKind, NextAction, OperationState, ReplyKind, StepKind};
use payidem::policy::{DecisionKind, Landed};
use payidem::vocabulary::Vocabulary;

use crate::base::vocabulary::carries;

/// The result of every fallible call. `PAYIDEM_OK` (0) is success; codes 1 to
/// 99 are exactly payidem's stable error codes (the same numbers and names in
/// every binding); codes from 100 up exist only in the C ABI. A number is
/// never reused or renumbered; new codes may be added, so treat an unknown
/// one like `PAYIDEM_INTERNAL_ERROR`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum payidem_result {
    /// Success.
    PAYIDEM_OK = 0,
    /// An argument broke its rule; `payidem_error_field` names it.
    PAYIDEM_INVALID_ARGUMENT = 1,
    /// The idempotency key was used with another request. Never retried.
    PAYIDEM_IDEMPOTENCY_CONFLICT = 2,
    /// The platform refused the operation with a final answer (status and
    /// body in the error).
    PAYIDEM_REJECTED = 3,
    /// The operation may or may not have happened; its key is kept and it
    /// can be resumed.
    PAYIDEM_OUTCOME_UNKNOWN = 4,
    /// The outcome is unknown and the key is past the platform's retention:
    /// the operation is never sent again.
    PAYIDEM_KEY_EXPIRED = 5,
    /// Another call is driving the same operation right now.
    PAYIDEM_OPERATION_BUSY = 6,
    /// A network failure before anything reached the platform.
    PAYIDEM_TRANSPORT_ERROR = 7,
    /// The journal could not be opened, read or written.
    PAYIDEM_JOURNAL_ERROR = 8,
    /// Verification: a signature header is missing, repeated or malformed.
    PAYIDEM_MISSING_SIGNATURE = 9,
    /// Verification: the key id is not known.
    PAYIDEM_UNKNOWN_API_KEY = 10,
    /// Verification: the timestamp is outside the window.
    PAYIDEM_TIMESTAMP_OUT_OF_WINDOW = 11,
    /// Verification: the signature does not match.
    PAYIDEM_INVALID_SIGNATURE = 12,
    /// Verification: the nonce was already used inside the window.
    PAYIDEM_NONCE_REUSED = 13,
    /// Verification: the replay cache is full and fails closed.
    PAYIDEM_REPLAY_CACHE_FULL = 14,
    /// Verification: a POST carried no `Idempotency-Key`.
    PAYIDEM_IDEMPOTENCY_KEY_REQUIRED = 15,
    /// A bug inside payidem (a panic caught at the boundary). Never expected.
    PAYIDEM_INTERNAL_ERROR = 16,
    /// The caller cancelled the call; the operation keeps its key.
    PAYIDEM_CANCELLED = 17,
    /// The platform refused every attempt before its idempotency check
    /// (authentication, rate limit): nothing happened; not final, the
    /// operation keeps its key (status and body in the error).
    PAYIDEM_REFUSED = 18,
    /// Verification: the shared replay store (Redis) could not claim the
    /// nonce (unreachable, timed out, out of memory, or restarted after the
    /// request was signed): fails closed, answer 503 with `Retry-After`
    /// (`payidem_refusal_from_error` builds it). Nothing was accepted.
    PAYIDEM_REPLAY_STORE_UNAVAILABLE = 19,
    /// C ABI only: the caller's buffer is too small; the error message and
    /// the call's length output say how much is needed.
    PAYIDEM_BUFFER_TOO_SMALL = 100,
}

/// Where an operation stands in the journal.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum payidem_operation_state {
    /// Not in the journal.
    PAYIDEM_STATE_NOT_FOUND = 0,
    /// Prepared; nothing sent, so nothing can have happened.
    PAYIDEM_STATE_PENDING = 1,
    /// An attempt may have reached the platform and the call has not ended
    /// (or the process died during it).
    PAYIDEM_STATE_IN_FLIGHT = 2,
    /// A call ended without learning the outcome; resumable.
    PAYIDEM_STATE_UNKNOWN = 3,
    /// Settled: the platform answered 2xx.
    PAYIDEM_STATE_SUCCEEDED = 4,
    /// Settled: the platform refused it with a final answer.
    PAYIDEM_STATE_REJECTED = 5,
    /// Settled: the platform reported an idempotency conflict.
    PAYIDEM_STATE_CONFLICT = 6,
}

/// The kind of an attempt.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum payidem_attempt_kind {
    /// The operation's own request (same method, path, body and key every
    /// time).
    PAYIDEM_ATTEMPT_KIND_OPERATION = 1,
    /// A signed GET of the operation's status path.
    PAYIDEM_ATTEMPT_KIND_STATUS_QUERY = 2,
}

/// What the client does after an attempt.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum payidem_next_action {
    /// The call settled.
    PAYIDEM_NEXT_SETTLE = 1,
    /// Retry at once with a fresh signature.
    PAYIDEM_NEXT_RETRY_NOW = 2,
    /// Retry after a backoff or `Retry-After`.
    PAYIDEM_NEXT_RETRY_LATER = 3,
    /// Adjust the clock offset and retry at once.
    PAYIDEM_NEXT_ADJUST_CLOCK = 4,
    /// Query the operation's status.
    PAYIDEM_NEXT_QUERY_STATUS = 5,
    /// Query the status again after a backoff.
    PAYIDEM_NEXT_QUERY_LATER = 6,
    /// Give up: attempts, deadline or budget exhausted.
    PAYIDEM_NEXT_GIVE_UP = 7,
}

carries!(payidem_attempt_kind: AttemptKind =>
    PAYIDEM_ATTEMPT_KIND_OPERATION, PAYIDEM_ATTEMPT_KIND_STATUS_QUERY);

carries!(payidem_next_action: NextAction =>
    PAYIDEM_NEXT_SETTLE, PAYIDEM_NEXT_RETRY_NOW, PAYIDEM_NEXT_RETRY_LATER,
    PAYIDEM_NEXT_ADJUST_CLOCK, PAYIDEM_NEXT_QUERY_STATUS, PAYIDEM_NEXT_QUERY_LATER,
    PAYIDEM_NEXT_GIVE_UP);

carries!(payidem_operation_state: OperationState =>
    PAYIDEM_STATE_PENDING, PAYIDEM_STATE_IN_FLIGHT, PAYIDEM_STATE_UNKNOWN,
    PAYIDEM_STATE_SUCCEEDED, PAYIDEM_STATE_REJECTED, PAYIDEM_STATE_CONFLICT);

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
    /// Retry after a full-jitter backoff (see `landed` for what to do if
    /// retries run out).
    PAYIDEM_DECISION_RETRY_BACKOFF = 4,
    /// Retry after `seconds` (the platform's `Retry-After`).
    PAYIDEM_DECISION_RETRY_AFTER = 5,
    /// Take the clock offset from `server_time` and retry once at once.
    PAYIDEM_DECISION_ADJUST_CLOCK_RETRY = 6,
    /// The outcome is unknown: query the operation's status first.
    PAYIDEM_DECISION_QUERY_STATUS = 7,
    /// (Status queries only.) The operation did not land: send the
    /// operation itself again at once with the same key — unless its key is
    /// past the platform's retention, which makes the outcome `key_expired`.
    PAYIDEM_DECISION_SEND_OPERATION = 8,
}

/// Whether the operation may have taken effect, as far as one answer tells
/// (`payidem_decision.landed`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum payidem_landed {
    /// It did not (the answer came before the platform's idempotency step,
    /// nothing was sent, or the key is held by another request).
    PAYIDEM_LANDED_NO = 0,
    /// It may have: keep the key, never re-key; if retries run out the
    /// outcome is unknown (`PAYIDEM_OUTCOME_UNKNOWN`), never "failed".
    PAYIDEM_LANDED_MAYBE = 1,
    /// It did (a 2xx, a final refusal the platform keeps, an operation in
    /// progress).
    PAYIDEM_LANDED_YES = 2,
}

carries!(payidem_decision_kind: DecisionKind =>
    PAYIDEM_DECISION_DONE, PAYIDEM_DECISION_FAIL, PAYIDEM_DECISION_RETRY_NOW,
    PAYIDEM_DECISION_RETRY_BACKOFF, PAYIDEM_DECISION_RETRY_AFTER,
    PAYIDEM_DECISION_ADJUST_CLOCK_RETRY, PAYIDEM_DECISION_QUERY_STATUS,
    PAYIDEM_DECISION_SEND_OPERATION);

carries!(payidem_landed: Landed =>
    PAYIDEM_LANDED_NO, PAYIDEM_LANDED_MAYBE, PAYIDEM_LANDED_YES);

/// How loud an event is: one policy for every language (a first-attempt
/// success is debug; a retry, backoff, clock adjustment, status query or a
/// success after them is info; a give-up — unknown, key expired, refused,
/// nothing sent, a journal failure — is warn).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum payidem_log_level {
    /// Routine: nothing needed more than one attempt.
    PAYIDEM_LOG_DEBUG = 1,
    /// The retry machinery worked: retries, backoffs, status queries.
    PAYIDEM_LOG_INFO = 2,
    /// The call gave up or the journal failed: someone may have to act.
    PAYIDEM_LOG_WARN = 3,
}

/// The placeholder style of the outbox statement's SQL (input of
/// `payidem_client_outbox_insert`, passed as `uint32_t`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum payidem_param_style {
    /// `$1, $2, …`: the server's own style (libpq's `PQexecParams`, Go
    /// `pgx`/`lib/pq`, Rust `postgres`/`sqlx`, Python `asyncpg`).
    PAYIDEM_PARAMS_DOLLAR = 1,
    /// `%s`: Python DB-API drivers (`psycopg`, `psycopg2`).
    PAYIDEM_PARAMS_PERCENT_S = 2,
}

/// The form of a metrics snapshot.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum payidem_metrics_format {
    /// The Prometheus text exposition format 0.0.4 (`# HELP`, `# TYPE`,
    /// samples; histograms as `_bucket`, `_sum`, `_count`).
    PAYIDEM_METRICS_PROMETHEUS = 1,
    /// JSON: `{"metrics": [{"name", "type", "help", "series": [...]}]}`
    /// (see docs/metrics.md).
    PAYIDEM_METRICS_JSON = 2,
}

/// The static C name of the core value numbered `number`; NULL for none.
pub(crate) fn name_of<T: Vocabulary>(number: u32) -> *const c_char {
    T::from_number(number).map_or(ptr::null(), |v| v.c_name().as_ptr())
}

/// The stable name of a `payidem_operation_state` value (`"pending"`,
/// `"in_flight"`, `"unknown"`, `"succeeded"`, `"rejected"`, `"conflict"`:
/// the names journals store); NULL for `PAYIDEM_STATE_NOT_FOUND` and any
/// other number that is no state.
///
/// Ownership: the string is static; never free it.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none; an unknown number gives NULL.
#[no_mangle]
pub extern "C" fn payidem_operation_state_name(state: u32) -> *const c_char {
    name_of::<OperationState>(state)
}

/// The stable name of a `payidem_step_type` value (`"persist"`, `"send"`,
/// `"wait"`, `"end"`); NULL for a number that is no step type.
///
/// Ownership: the string is static; never free it.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none; an unknown number gives NULL.
#[no_mangle]
pub extern "C" fn payidem_step_type_name(kind: u32) -> *const c_char {
    name_of::<StepKind>(kind)
}

/// The stable name of a `payidem_attempt_outcome` value (`"response"`,
/// `"not_sent"`, `"sent_no_response"`); NULL for a number that is none.
///
/// Ownership: the string is static; never free it.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none; an unknown number gives NULL.
#[no_mangle]
pub extern "C" fn payidem_attempt_outcome_name(outcome: u32) -> *const c_char {
    name_of::<ReplyKind>(outcome)
}

/// The stable name of a `payidem_next_action` value (`"settle"`,
/// `"retry_now"`, `"retry_later"`, `"adjust_clock"`, `"query_status"`,
/// `"query_later"`, `"give_up"`), as the core library names it; NULL for a
/// number that is no action.
///
/// Ownership: the string is static; never free it.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none; an unknown number gives NULL.
#[no_mangle]
pub extern "C" fn payidem_next_action_name(action: u32) -> *const c_char {
    name_of::<NextAction>(action)
}

/// The stable name of a `payidem_landed` value (`"no"`, `"maybe"`,
/// `"yes"`), as the core library names it; NULL for a number that is none.
///
/// Ownership: the string is static; never free it.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none; an unknown number gives NULL.
#[no_mangle]
pub extern "C" fn payidem_landed_name(landed: u32) -> *const c_char {
    name_of::<Landed>(landed)
}

/// The stable name of a `payidem_attempt_kind` value (`"operation"`,
/// `"status_query"`), as the core library names it; NULL for a number that
/// is no kind.
///
/// Ownership: the string is static; never free it.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none; an unknown number gives NULL.
#[no_mangle]
pub extern "C" fn payidem_attempt_kind_name(kind: u32) -> *const c_char {
    name_of::<AttemptKind>(kind)
}

/// The stable name of a `payidem_decision_kind` (`done`, `fail`,
/// `retry_now`, `retry_backoff`, `retry_after`, `adjust_clock_retry`,
/// `query_status`, `send_operation`: the core's names); NULL for a number
/// that is no decision kind.
///
/// Ownership: a static string; never free it.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none (NULL for an unknown number).
#[no_mangle]
pub extern "C" fn payidem_decision_kind_name(kind: u32) -> *const c_char {
    name_of::<DecisionKind>(kind)
}

/// The name of the `index`th header a signed attempt carries, in the
/// core's order (`"X-Api-Key"`, `"X-Timestamp"`, `"X-Nonce"`,
/// `"X-Signature"`, `"Idempotency-Key"`; a request without an idempotency
/// key carries the first four); NULL from index 5 on. A caller's own values
/// of these headers must never be sent with an attempt.
///
/// Ownership: the string is static; never free it.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none; an index past the last gives NULL.
#[no_mangle]
pub extern "C" fn payidem_signed_header_name(index: u32) -> *const c_char {
    usize::try_from(index)
        .ok()
        .and_then(|i| payidem::protocol::headers::SIGNED_C.get(i))
        .map_or(ptr::null(), |name| name.as_ptr())
}
