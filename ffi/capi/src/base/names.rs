//! The stable names of the C ABI's enums, read from the core's vocabulary
//! (`payidem::vocabulary`): one generic lookup, one exported function per
//! enum. Every C enum's constants carry the core table's numbers; the test
//! `tests/vocabulary.rs` checks every constant of the header against it.

use std::ffi::c_char;
use std::ptr;

use payidem::operation::{AttemptKind, NextAction, OperationState, ReplyKind, StepKind};
use payidem::policy::{DecisionKind, Landed};
use payidem::vocabulary::Vocabulary;

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
