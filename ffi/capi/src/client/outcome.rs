//! The settled outcome of an operation, and lists of order ids.

use std::ffi::{c_char, CString};
use std::ptr;

use payidem::Outcome;

use crate::base::enums::payidem_result;
use crate::base::error::{payidem_error, FfiError};
use crate::base::handles::{bytes_of, free, header_of, read_or, text_of};
use crate::base::text::c_string;

/// The settled outcome of an operation: the platform's 2xx answer (status,
/// headers, body), the order id, the idempotency key and the attempts made,
/// and the journal's error when the journal could not record the success
/// (`payidem_outcome_journal_error`).
///
/// Single owner: it may move between threads but must not be used by two at
/// once; free it with `payidem_outcome_free`.
pub struct payidem_outcome {
    order_id: CString,
    idempotency_key: CString,
    attempts: u32,
    status: u16,
    replayed: bool,
    headers: Vec<(CString, CString)>,
    body: Vec<u8>,
    journal_error: Option<Box<payidem_error>>,
}

impl From<Outcome> for payidem_outcome {
    fn from(o: Outcome) -> payidem_outcome {
        payidem_outcome {
            order_id: c_string(o.order_id),
            idempotency_key: c_string(o.idempotency_key),
            attempts: o.attempts,
            status: o.response.status,
            replayed: o.response.replayed,
            headers: o
                .response
                .headers
                .into_iter()
                .map(|(n, v)| (c_string(n), c_string(v)))
                .collect(),
            body: o.response.body,
            journal_error: o
                .journal_error
                .map(|e| Box::new(payidem_error::from(FfiError::from(e)))),
        }
    }
}

/// The platform's HTTP status (2xx); 0 for a NULL outcome.
///
/// Ownership: borrows `outcome`.
/// NULL: `outcome` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `outcome`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_outcome_http_status(outcome: *const payidem_outcome) -> u16 {
    read_or(outcome, 0, |o| o.status)
}

/// The response body: sets `*body_out` and `*len_out` (the bytes are not
/// NUL-terminated; an empty body gives a non-NULL pointer and 0) and returns
/// true; returns false and leaves them untouched for NULL arguments.
///
/// Ownership: the bytes are borrowed from `outcome`, valid until
/// `payidem_outcome_free(outcome)`.
/// NULL: none of the arguments may be NULL (false).
/// Threads: read-only; not while another thread frees `outcome`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_outcome_body(
    outcome: *const payidem_outcome,
    body_out: *mut *const u8,
    len_out: *mut usize,
) -> bool {
    bytes_of(outcome, body_out, len_out, |o| Some(&o.body))
}

/// Whether the platform replayed a stored answer (`Idempotent-Replayed:
/// true`): the operation had already happened, exactly once.
///
/// Ownership: borrows `outcome`.
/// NULL: `outcome` may be NULL, giving false.
/// Threads: read-only; not while another thread frees `outcome`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_outcome_replayed(outcome: *const payidem_outcome) -> bool {
    read_or(outcome, false, |o| o.replayed)
}

/// The operation's idempotency key.
///
/// Ownership: borrowed from `outcome`, valid until it is freed.
/// NULL: `outcome` may be NULL, giving NULL.
/// Threads: read-only; not while another thread frees `outcome`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_outcome_idempotency_key(
    outcome: *const payidem_outcome,
) -> *const c_char {
    text_of(outcome, |o| Some(&o.idempotency_key))
}

/// The operation's order id.
///
/// Ownership: borrowed from `outcome`, valid until it is freed.
/// NULL: `outcome` may be NULL, giving NULL.
/// Threads: read-only; not while another thread frees `outcome`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_outcome_order_id(
    outcome: *const payidem_outcome,
) -> *const c_char {
    text_of(outcome, |o| Some(&o.order_id))
}

/// Attempts made over every call of the operation (status queries
/// included); 0 for a NULL outcome.
///
/// Ownership: borrows `outcome`.
/// NULL: `outcome` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `outcome`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_outcome_attempts(outcome: *const payidem_outcome) -> u32 {
    read_or(outcome, 0, |o| o.attempts)
}

/// How many response headers the outcome kept; 0 for a NULL outcome.
///
/// Ownership: borrows `outcome`.
/// NULL: `outcome` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `outcome`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_outcome_header_count(outcome: *const payidem_outcome) -> usize {
    read_or(outcome, 0, |o| o.headers.len())
}

/// The response header at `index` (0-based, in the order received).
///
/// Ownership: `*name_out` and `*value_out` are borrowed from `outcome`,
/// valid until `payidem_outcome_free(outcome)`.
/// NULL: `outcome`, `name_out` and `value_out` must not be NULL; `err_out`
/// may be NULL.
/// Threads: read-only; not while another thread frees `outcome`.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `outcome`, `index` (out of
/// range), `name_out` or `value_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_outcome_header_at(
    outcome: *const payidem_outcome,
    index: usize,
    name_out: *mut *const c_char,
    value_out: *mut *const c_char,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    header_of(
        "outcome",
        outcome,
        index,
        name_out,
        value_out,
        err_out,
        |o| &o.headers,
    )
}

/// The journal's error when the platform answered 2xx but the journal
/// could not record the success (`PAYIDEM_JOURNAL_ERROR`; read it with the
/// `payidem_error_*` accessors); NULL when the journal recorded it. The
/// payment was made either way. The journal still holds the operation in
/// flight with its key: a later `payidem_client_execute` or
/// `payidem_client_resume` of the order gets the same answer replayed by
/// the platform and records it then.
///
/// Ownership: borrowed from `outcome`, valid until
/// `payidem_outcome_free(outcome)`; never pass it to `payidem_error_free`.
/// NULL: `outcome` may be NULL, giving NULL.
/// Threads: read-only; not while another thread frees `outcome`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_outcome_journal_error(
    outcome: *const payidem_outcome,
) -> *const payidem_error {
    read_or(outcome, ptr::null(), |o| {
        o.journal_error
            .as_deref()
            .map_or(ptr::null(), |e| e as *const payidem_error)
    })
}

/// Frees an outcome.
///
/// Ownership: takes `outcome`; every string and buffer borrowed from it dies.
/// NULL: `outcome` may be NULL (nothing happens).
/// Anything else must be a live handle of this type from this library:
/// freeing it twice, using it after this call, or passing a handle of
/// another type is undefined behaviour, and is not detected.
/// Threads: the caller must own `outcome`; free it once.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_outcome_free(outcome: *mut payidem_outcome) {
    free(outcome);
}

/// A list of order ids (from `payidem_client_list_unknown`).
///
/// Single owner: it may move between threads but must not be used by two at
/// once; free it with `payidem_order_list_free`.
pub struct payidem_order_list {
    pub(crate) ids: Vec<CString>,
}

/// How many order ids the list holds; 0 for a NULL list.
///
/// Ownership: borrows `list`.
/// NULL: `list` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `list`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_order_list_len(list: *const payidem_order_list) -> usize {
    read_or(list, 0, |l| l.ids.len())
}

/// The order id at `index` (0-based, oldest operation first); NULL when
/// `index` is out of range.
///
/// Ownership: borrowed from `list`, valid until `payidem_order_list_free`.
/// NULL: `list` may be NULL, giving NULL.
/// Threads: read-only; not while another thread frees `list`.
/// Errors: none (NULL for an index out of range).
#[no_mangle]
pub unsafe extern "C" fn payidem_order_list_get(
    list: *const payidem_order_list,
    index: usize,
) -> *const c_char {
    text_of(list, |l| l.ids.get(index).map(CString::as_c_str))
}

/// Frees a list of order ids.
///
/// Ownership: takes `list`; every string borrowed from it dies.
/// NULL: `list` may be NULL (nothing happens).
/// Anything else must be a live handle of this type from this library:
/// freeing it twice, using it after this call, or passing a handle of
/// another type is undefined behaviour, and is not detected.
/// Threads: the caller must own `list`; free it once.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_order_list_free(list: *mut payidem_order_list) {
    free(list);
}
