//! The client's options and the machine's start object, given as JSON so
//! that new settings never change the ABI, read by the core's one rule per
//! setting (`payidem::settings`). Every key is documented on
//! `payidem_client_new` and `payidem_operation_new`.

use std::ffi::{c_char, CString};

use payidem::settings::{client, start, SettingError};
use payidem::ClientConfig;

use crate::base::boundary::guard;
use crate::base::enums::payidem_result;
use crate::base::error::{payidem_error, FfiError};
use crate::base::text::{out, req_str};

impl From<SettingError> for FfiError {
    fn from(e: SettingError) -> FfiError {
        FfiError::invalid(e.field(), e.reason())
    }
}

/// Parses the options object into a client configuration.
pub(crate) fn parse(json: &str) -> Result<ClientConfig, FfiError> {
    Ok(client::client_config_from_json(json)?)
}

/// The option that sets a field core names in its configuration errors.
pub(crate) fn option_of_field(field: &str) -> Option<&'static str> {
    Some(match field {
        "max_attempts" => "retry.max_attempts",
        "backoff_base" => "retry.base_ms",
        "deadline" => "retry.deadline_ms",
        "request_timeout" => "request_timeout_ms",
        "connect_timeout" => "connect_timeout_ms",
        "key_retention_secs" => "key_retention_s",
        _ => return None,
    })
}

/// The document `payidem_client_defaults_json` returns: the core's
/// defaults under `options`, and the memory journal's name.
pub(crate) fn defaults_json() -> String {
    serde_json::json!({
        "options": client::defaults_json(),
        "memory_journal": payidem::journal::MEMORY_JOURNAL,
    })
    .to_string()
}

/// The body of both `*_resolve` functions: reads the JSON text `json` (the
/// parameter called `name`), checks `resolved_out`, then writes what
/// `resolve` makes of the text into `*resolved_out` as a string the caller
/// frees with `payidem_string_free`.
///
/// # Safety
/// `json` is NULL or a NUL-terminated string; `resolved_out` and `err_out`
/// are NULL or writable.
unsafe fn resolve_json(
    json: *const c_char,
    name: &str,
    resolved_out: *mut *mut c_char,
    err_out: *mut *mut payidem_error,
    resolve: impl FnOnce(&str) -> Result<serde_json::Value, FfiError>,
) -> payidem_result {
    guard(err_out, || {
        let json = req_str(json, name)?;
        let slot = out(resolved_out, "resolved_out")?;
        let doc = resolve(json)?;
        // serde_json never writes a NUL byte (it escapes U+0000).
        slot.write(CString::new(doc.to_string()).unwrap_or_default().into_raw());
        Ok(())
    })
}

/// Checks `options_json` as `payidem_client_new` does, without opening a
/// journal or reading any file, and gives every setting's effective value
/// as a JSON object of the options object's shape (absent settings at
/// their defaults; `journal_key_hex` is `"<set>"` or `""`, never the key;
/// `lease_ttl_s` is null when the lease follows the deadline,
/// `lease_heartbeat_ms` null when it is a third of the ttl). Whether
/// the base URL, proxy or TLS files are usable is checked by
/// `payidem_client_new` only.
///
/// Ownership: on success `*resolved_out` receives a new NUL-terminated
/// string the caller frees with `payidem_string_free`.
/// NULL: `options_json` and `resolved_out` must not be NULL; `err_out` may
/// be NULL.
/// Threads: safe from any thread.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `options_json` (not a JSON
/// object), the setting (e.g. `retry.base_ms`, `lease_ttl_s`, an unknown
/// `retry.bogus`) or `resolved_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_options_resolve(
    options_json: *const c_char,
    resolved_out: *mut *mut c_char,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    resolve_json(options_json, "options_json", resolved_out, err_out, |raw| {
        let config = parse(raw)?;
        Ok(client::settings_json(&config))
    })
}

/// Checks `start_json` as `payidem_operation_new` does and gives every
/// setting's effective value as a JSON object: `operation` (its
/// `order_id`), `progress`, `setup` (`retry_budget` null for none) and
/// `now`.
///
/// Ownership: on success `*resolved_out` receives a new NUL-terminated
/// string the caller frees with `payidem_string_free`.
/// NULL: `start_json` and `resolved_out` must not be NULL; `err_out` may be
/// NULL.
/// Threads: safe from any thread.
/// Errors: as `payidem_operation_new`, or naming `resolved_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_operation_start_resolve(
    start_json: *const c_char,
    resolved_out: *mut *mut c_char,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    resolve_json(start_json, "start_json", resolved_out, err_out, |raw| {
        let start = start::start_from_json(raw)?;
        Ok(start::settings_json(&start))
    })
}

/// Frees a string the library returned for the caller to free (e.g. by
/// `payidem_client_options_resolve`). NULL does nothing.
///
/// Ownership: takes `text`; free each string once.
/// NULL: allowed.
/// Threads: safe from any thread.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_string_free(text: *mut c_char) {
    if !text.is_null() {
        crate::base::boundary::guard_value((), || drop(CString::from_raw(text)));
    }
}
