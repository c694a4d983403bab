//! Metrics of a client and of a verifier, as Prometheus text or JSON.

use std::ffi::c_char;

use crate::base::enums::payidem_result;
use crate::base::error::{payidem_error, FfiError};
use crate::base::handles::text_out;
use crate::base::text::handle;
use crate::client::payidem_client;
use crate::verifying::payidem_verifier;

/// `snapshot` as text in `format`, a `payidem_metrics_format` (see
/// `payidem_client_metrics`).
fn render(snapshot: &payidem::metrics::Snapshot, format: u32) -> Result<String, FfiError> {
    match format {
        1 => Ok(snapshot.to_prometheus()),
        2 => Ok(snapshot.to_json()),
        other => Err(FfiError::invalid(
            "format",
            format!("{other} is not a payidem_metrics_format"),
        )),
    }
}

/// Writes the client's metrics (shared by every call of the client) into
/// `buf` as `format` (a `payidem_metrics_format`), NUL-terminated:
/// attempts by kind, HTTP status and next action, calls ended by end, time
/// to settle, journal write latency and failures, and the journal's count
/// of operations whose outcome is unknown (read from the journal now; left
/// out when it cannot answer). Every metric is listed in docs/metrics.md.
/// `*len_out` (when given) receives the text's length without the NUL,
/// also on `PAYIDEM_BUFFER_TOO_SMALL`: call once with `buf_len` 0 to learn
/// the size (it may grow between two calls: leave room).
///
/// Ownership: `buf` is caller memory, written only on success.
/// NULL: `client` must not be NULL; `len_out` and `err_out` may be NULL;
/// `buf` may be NULL only with `buf_len` 0.
/// Threads: safe from any number of threads on one client.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `client`, `format` or `buf`;
/// `PAYIDEM_BUFFER_TOO_SMALL` naming `buf`.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_metrics(
    client: *const payidem_client,
    format: u32,
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    text_out(buf, buf_len, len_out, err_out, || {
        render(&handle(client, "client")?.inner.metrics(), format)
    })
}

/// Writes the verifier's metrics into `buf` as `format` (a
/// `payidem_metrics_format`), NUL-terminated: verdicts by code (`accepted`
/// or the refusal's error code name) and, with the in-memory replay cache,
/// its fill (nonces held, capacity). `*len_out` as for
/// `payidem_client_metrics`.
///
/// Ownership: `buf` is caller memory, written only on success.
/// NULL: `verifier` must not be NULL; `len_out` and `err_out` may be NULL;
/// `buf` may be NULL only with `buf_len` 0.
/// Threads: safe from any number of threads, during verifications.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `verifier`, `format` or `buf`;
/// `PAYIDEM_BUFFER_TOO_SMALL` naming `buf`.
#[no_mangle]
pub unsafe extern "C" fn payidem_verifier_metrics(
    verifier: *const payidem_verifier,
    format: u32,
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    text_out(buf, buf_len, len_out, err_out, || {
        let verifier = handle(verifier, "verifier")?;
        render(&verifier.shared().metrics(), format)
    })
}
