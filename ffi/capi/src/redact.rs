//! Locations (URLs, connection strings, paths) fit to print.

use std::ffi::c_char;

use crate::base::enums::payidem_result;
use crate::base::error::payidem_error;
use crate::base::handles::text_out;
use crate::base::text::req_str;

/// Writes into `buf`, NUL-terminated, `location` (a journal path or URL, a
/// proxy, a base URL, a replay store's URL, a libpq `key=value` string) as
/// the library itself prints it in errors and logs: what it names (scheme,
/// host, port, path, file) stays readable; user and password, a URL's
/// query and fragment, and the value of every `password` keyword become
/// `***`; a URL that cannot be parsed is hidden after its scheme; a file
/// path is unchanged. One rule for every language
/// (`core/tests/vectors/redact-v1.json`). `*len_out` (when given)
/// receives the text's length without the NUL, also on
/// `PAYIDEM_BUFFER_TOO_SMALL` (the redacted text can be longer than
/// `location`: call again with a larger buffer).
///
/// Ownership: `buf` is caller memory, written only on success; `location`
/// is only read.
/// NULL: `location` must not be NULL; `len_out` and `err_out` may be NULL;
/// `buf` may be NULL only with `buf_len` 0.
/// Threads: safe from any thread.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `location` (NULL, or not
/// UTF-8) or `buf`; `PAYIDEM_BUFFER_TOO_SMALL` naming `buf`.
#[no_mangle]
pub unsafe extern "C" fn payidem_redact_url(
    location: *const c_char,
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    text_out(buf, buf_len, len_out, err_out, || {
        Ok(payidem::redact_url(req_str(location, "location")?))
    })
}
