//! The journal key derived from an API secret, for rotation and recovery.

use std::ffi::c_char;

use crate::base::enums::payidem_result;
use crate::base::error::payidem_error;
use crate::base::handles::{req_bytes, text_out};

/// Writes, in lowercase hex and a NUL into `buf`, the journal key a client
/// derives from the API secret `secret` when it is given no journal key of
/// its own (64 hex digits). After the API secret is rotated, a journal
/// sealed under the old one opens only with this key of the old secret,
/// set as the client option `journal_key_hex`. A secret itself: never log
/// it. `*len_out` (when given) receives the text's length without the NUL,
/// also on `PAYIDEM_BUFFER_TOO_SMALL`.
///
/// Ownership: `buf` is caller memory, written only on success; `secret` is
/// only read.
/// NULL: `secret` must not be NULL; `len_out` and `err_out` may be NULL;
/// `buf` may be NULL only with `buf_len` 0.
/// Threads: safe from any thread.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `secret` (NULL, or not
/// 16..=1024 bytes) or `buf`; `PAYIDEM_BUFFER_TOO_SMALL` naming `buf`.
#[no_mangle]
pub unsafe extern "C" fn payidem_journal_key_derive(
    secret: *const u8,
    secret_len: usize,
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    text_out(buf, buf_len, len_out, err_out, || {
        let secret = req_bytes(secret, secret_len, "secret")?;
        Ok(payidem::journal::JournalKey::derived_hex_checked(secret)?)
    })
}
