//! The error object every fallible call can hand back through `err_out`.

use std::ffi::{c_char, CString};

use payidem::error::text::record_named;

use crate::base::boundary::guard_value;
use crate::base::enums::payidem_result;
use crate::base::handles::{bytes_of, free, read_or, text_of};
use crate::base::text::c_string;

/// An error inside the C layer before it is boxed for the caller.
#[derive(Debug)]
pub(crate) struct FfiError {
    pub(crate) code: payidem_result,
    detail: Box<Detail>,
}

#[derive(Debug, Default)]
struct Detail {
    message: String,
    field: Option<String>,
    http_status: Option<u16>,
    body: Option<Vec<u8>>,
    platform_code: Option<String>,
    platform_message: Option<String>,
    order_id: Option<String>,
    idempotency_key: Option<String>,
    server_time: Option<u64>,
}

impl FfiError {
    /// An error the C layer makes itself; its message is recorded like the
    /// core's ([`payidem::error::text`]) so that the error-text check covers
    /// it.
    fn new(code: payidem_result, message: String) -> FfiError {
        record_named(code.name(), &message);
        FfiError {
            code,
            detail: Box::new(Detail {
                message,
                ..Detail::default()
            }),
        }
    }

    /// `PAYIDEM_INVALID_ARGUMENT` naming `field`; the message starts with it.
    pub(crate) fn invalid(field: &str, message: impl std::fmt::Display) -> FfiError {
        let mut e = FfiError::new(
            payidem_result::PAYIDEM_INVALID_ARGUMENT,
            format!("{field}: {message}"),
        );
        e.detail.field = Some(field.to_owned());
        e
    }

    /// A NULL where a pointer is required.
    pub(crate) fn null(field: &str) -> FfiError {
        FfiError::invalid(field, "must not be NULL")
    }

    /// The caller's buffer `field` holds fewer than `needed` bytes.
    pub(crate) fn buffer_too_small(field: &str, needed: usize, given: usize) -> FfiError {
        let mut e = FfiError::new(
            payidem_result::PAYIDEM_BUFFER_TOO_SMALL,
            format!("{field}: needs {needed} bytes, {given} given"),
        );
        e.detail.field = Some(field.to_owned());
        e
    }

    /// The same error with its field (and the message's leading field name)
    /// renamed by `rename`, e.g. from a core field to the option that sets it.
    pub(crate) fn rename_field(
        mut self,
        rename: impl Fn(&str) -> Option<&'static str>,
    ) -> FfiError {
        if let Some(old) = self.detail.field.clone() {
            if let Some(new) = rename(&old) {
                if let Some(rest) = self.detail.message.strip_prefix(old.as_str()) {
                    self.detail.message = format!("{new}{rest}");
                    record_named(self.code.name(), &self.detail.message);
                }
                self.detail.field = Some(new.to_owned());
            }
        }
        self
    }

    /// `PAYIDEM_INTERNAL_ERROR`.
    pub(crate) fn internal(message: String) -> FfiError {
        FfiError::new(payidem_result::PAYIDEM_INTERNAL_ERROR, message)
    }
}

impl From<payidem::Error> for FfiError {
    fn from(e: payidem::Error) -> FfiError {
        FfiError {
            code: payidem_result::from(e.code()),
            detail: Box::new(Detail {
                message: e.message().to_owned(),
                field: e.field().map(str::to_owned),
                http_status: e.http_status(),
                body: e.body().map(<[u8]>::to_vec),
                platform_code: e.platform_code().map(str::to_owned),
                platform_message: e.platform_message().map(str::to_owned),
                order_id: e.order_id().map(str::to_owned),
                idempotency_key: e.idempotency_key().map(str::to_owned),
                server_time: e.server_time(),
            }),
        }
    }
}

/// An error: a stable code, a message for people, and the context the code
/// calls for (the invalid field, the platform's status and body, the
/// operation's order id and idempotency key). Never holds a secret.
///
/// Single owner: created by a failing call, freed with `payidem_error_free`;
/// it may move between threads but must not be used by two at once.
pub struct payidem_error {
    code: payidem_result,
    message: CString,
    field: Option<CString>,
    http_status: Option<u16>,
    body: Option<Vec<u8>>,
    platform_code: Option<CString>,
    platform_message: Option<CString>,
    order_id: Option<CString>,
    idempotency_key: Option<CString>,
    server_time: Option<u64>,
}

impl From<FfiError> for payidem_error {
    fn from(e: FfiError) -> payidem_error {
        let code = e.code;
        let e = *e.detail;
        payidem_error {
            code,
            message: c_string(e.message),
            field: e.field.map(c_string),
            http_status: e.http_status,
            body: e.body,
            platform_code: e.platform_code.map(c_string),
            platform_message: e.platform_message.map(c_string),
            order_id: e.order_id.map(c_string),
            idempotency_key: e.idempotency_key.map(c_string),
            server_time: e.server_time,
        }
    }
}

/// The error's code; `PAYIDEM_OK` for a NULL error (no error).
///
/// Ownership: borrows `err`.
/// NULL: `err` may be NULL.
/// Threads: read-only; safe while no other thread frees `err`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_error_code(err: *const payidem_error) -> payidem_result {
    guard_value(payidem_result::PAYIDEM_INTERNAL_ERROR, || {
        err.as_ref().map_or(payidem_result::PAYIDEM_OK, |e| e.code)
    })
}

/// The error's message for people: NUL-terminated UTF-8 that starts with the
/// field's name for `PAYIDEM_INVALID_ARGUMENT`. Never holds a secret.
///
/// Ownership: borrowed from `err`; valid until `payidem_error_free(err)`.
/// NULL: `err` may be NULL, giving NULL.
/// Threads: read-only; safe while no other thread frees `err`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_error_message(err: *const payidem_error) -> *const c_char {
    text_of(err, |e| Some(e.message.as_c_str()))
}

/// The name of the invalid argument or option (e.g. `"path"`,
/// `"retry.base_ms"`), for `PAYIDEM_INVALID_ARGUMENT` and
/// `PAYIDEM_BUFFER_TOO_SMALL`; NULL otherwise.
///
/// Ownership: borrowed from `err`; valid until `payidem_error_free(err)`.
/// NULL: `err` may be NULL, giving NULL.
/// Threads: read-only; safe while no other thread frees `err`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_error_field(err: *const payidem_error) -> *const c_char {
    text_of(err, |e| e.field.as_deref())
}

/// The HTTP status: the platform's answer for an error that came with one
/// (`PAYIDEM_REJECTED`, `PAYIDEM_REFUSED`, a conflict answered by the
/// platform), or the status a verifier answers with for a request that
/// failed verification (401, 409, 503, 400); 0 when none, which is every
/// local error (an invalid argument, a journal error: nothing was sent nor
/// answered).
///
/// Ownership: borrows `err`.
/// NULL: `err` may be NULL, giving 0.
/// Threads: read-only; safe while no other thread frees `err`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_error_http_status(err: *const payidem_error) -> u16 {
    read_or(err, 0, |e| e.http_status.unwrap_or(0))
}

/// The platform's response body, for `PAYIDEM_REJECTED` and a conflict
/// answered by the platform. Returns true and sets `*body_out` and
/// `*len_out` when there is one; returns false and leaves them untouched
/// otherwise. The bytes are not NUL-terminated.
///
/// Ownership: the bytes are borrowed from `err`; valid until
/// `payidem_error_free(err)`.
/// NULL: `err` may be NULL (false); `body_out` and `len_out` must not be
/// NULL (false).
/// Threads: read-only; safe while no other thread frees `err`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_error_body(
    err: *const payidem_error,
    body_out: *mut *const u8,
    len_out: *mut usize,
) -> bool {
    bytes_of(err, body_out, len_out, |e| e.body.as_deref())
}

/// The platform's error code (`error.code` of its answer's body, e.g.
/// `"card_declined"`), for an error that came with a platform answer in the
/// protocol's error body (`PAYIDEM_REJECTED`, `PAYIDEM_REFUSED`, a conflict
/// answered by the platform); NULL otherwise. NUL-terminated UTF-8, at most
/// 64 characters (a longer code is cut and ends with `…`), control
/// characters written as escapes (`\n`): safe to print.
///
/// Ownership: borrowed from `err`; valid until `payidem_error_free(err)`.
/// NULL: `err` may be NULL, giving NULL.
/// Threads: read-only; safe while no other thread frees `err`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_error_platform_code(err: *const payidem_error) -> *const c_char {
    text_of(err, |e| e.platform_code.as_deref())
}

/// The platform's error message for people (`error.message` of its answer's
/// body), when `payidem_error_platform_code` is set and the body has a
/// message; NULL otherwise. NUL-terminated UTF-8, at most 256 characters (a
/// longer message is cut and ends with `…`), control characters written as
/// escapes: safe to print.
///
/// Ownership: borrowed from `err`; valid until `payidem_error_free(err)`.
/// NULL: `err` may be NULL, giving NULL.
/// Threads: read-only; safe while no other thread frees `err`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_error_platform_message(
    err: *const payidem_error,
) -> *const c_char {
    text_of(err, |e| e.platform_message.as_deref())
}

/// The operation's order id, when the error concerns one operation
/// (`PAYIDEM_OUTCOME_UNKNOWN`, `PAYIDEM_KEY_EXPIRED`, `PAYIDEM_CANCELLED`,
/// ...); NULL otherwise.
///
/// Ownership: borrowed from `err`; valid until `payidem_error_free(err)`.
/// NULL: `err` may be NULL, giving NULL.
/// Threads: read-only; safe while no other thread frees `err`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_error_order_id(err: *const payidem_error) -> *const c_char {
    text_of(err, |e| e.order_id.as_deref())
}

/// The operation's idempotency key, when the error concerns one operation;
/// NULL otherwise. Resume the operation with the same order id: the key is
/// kept by the journal.
///
/// Ownership: borrowed from `err`; valid until `payidem_error_free(err)`.
/// NULL: `err` may be NULL, giving NULL.
/// Threads: read-only; safe while no other thread frees `err`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_error_idempotency_key(err: *const payidem_error) -> *const c_char {
    text_of(err, |e| e.idempotency_key.as_deref())
}

/// The server's clock (Unix seconds), for
/// `PAYIDEM_TIMESTAMP_OUT_OF_WINDOW` from a verifier. Returns true and sets
/// `*server_time_out` when known; false otherwise.
///
/// Ownership: borrows `err`.
/// NULL: `err` may be NULL (false); `server_time_out` must not be NULL
/// (false).
/// Threads: read-only; safe while no other thread frees `err`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_error_server_time(
    err: *const payidem_error,
    server_time_out: *mut u64,
) -> bool {
    read_or(err, false, |e| match e.server_time {
        Some(t) if !server_time_out.is_null() => {
            server_time_out.write(t);
            true
        }
        _ => false,
    })
}

/// Frees an error.
///
/// Ownership: takes `err`; every string and buffer borrowed from it dies.
/// NULL: `err` may be NULL (nothing happens).
/// Anything else must be a live handle of this type from this library:
/// freeing it twice, using it after this call, or passing a handle of
/// another type is undefined behaviour, and is not detected.
/// Threads: the caller must own `err`; free it once.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_error_free(err: *mut payidem_error) {
    free(err)
}
