//! The log-level policy and the client's call-level events (call ends,
//! journal failures) as JSON.

use std::ffi::{c_char, c_void, CString};
use std::sync::OnceLock;

use payidem::client::{attempt_level, Event, LogLevel};
use payidem::operation::NextAction;

use crate::base::boundary::guard_value;
use crate::base::callback::{CallbackCell, Registration};
use crate::base::enums::payidem_log_level;
use crate::base::handles::read_or;
use crate::base::text::c_string;
use crate::base::vocabulary::core_of;
use crate::client::{payidem_attempt_event, payidem_client};

fn level_of(level: LogLevel) -> payidem_log_level {
    match level {
        LogLevel::Debug => payidem_log_level::PAYIDEM_LOG_DEBUG,
        LogLevel::Info => payidem_log_level::PAYIDEM_LOG_INFO,
        LogLevel::Warn => payidem_log_level::PAYIDEM_LOG_WARN,
    }
}

/// The log level of an attempt's event (the policy of
/// `payidem_log_level`): `PAYIDEM_LOG_DEBUG` for a first attempt that
/// settled with a 2xx, `PAYIDEM_LOG_WARN` when the client gives up,
/// `PAYIDEM_LOG_INFO` otherwise.
///
/// Ownership: `event` is only read.
/// NULL: `event` NULL answers `PAYIDEM_LOG_WARN`.
/// Threads: safe from any thread (typically inside the event callback).
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_attempt_event_level(
    event: *const payidem_attempt_event,
) -> payidem_log_level {
    read_or(event, payidem_log_level::PAYIDEM_LOG_WARN, |e| {
        let next = core_of(e.next).unwrap_or(NextAction::GiveUp);
        let status = (e.http_status != 0).then_some(e.http_status);
        level_of(attempt_level(e.attempt, next, status))
    })
}

/// The name of a `payidem_log_level`: `"debug"`, `"info"`, `"warn"` (the
/// core's names); `"unknown"` for any other number.
///
/// Ownership: the string is static; never free it.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none.
#[no_mangle]
pub extern "C" fn payidem_log_level_name(level: u32) -> *const c_char {
    // The constants number the core's levels from 1, quietest first.
    static NAMES: OnceLock<Vec<CString>> = OnceLock::new();
    guard_value(c"unknown".as_ptr(), || {
        let names = NAMES.get_or_init(|| LogLevel::ALL.map(|l| c_string(l.as_str())).to_vec());
        (level as usize)
            .checked_sub(1)
            .and_then(|i| names.get(i))
            .map_or(c"unknown".as_ptr(), |name| name.as_ptr())
    })
}

/// Receives one client event as JSON (`event_json`, borrowed for the call
/// only), with the `userdata` given at registration. The object has `type`
/// (`"attempt"`, `"call_ended"` or `"journal_failed"`), `level`
/// (`"debug"`, `"info"` or `"warn"`, the policy of `payidem_log_level`)
/// and the event's fields (docs/metrics.md). It must return normally: no
/// `longjmp`, no exception (the library catches nothing thrown through C
/// frames).
pub type payidem_event_json_callback =
    Option<unsafe extern "C" fn(userdata: *mut c_void, event_json: *const c_char)>;

/// A registered JSON event callback.
pub(crate) type JsonCallback = Registration<unsafe extern "C" fn(*mut c_void, *const c_char)>;

/// Sets (or, with `callback` NULL, removes) the function that receives
/// every event of the client as JSON: each attempt (the same attempts
/// `payidem_client_set_event_callback` receives), each call's end (order
/// id, key, end name, final, landed, attempts, duration; never a body or a
/// secret) and each failed journal write. It runs on whichever thread
/// caused the event, so it and `userdata` must be safe to use from every
/// thread calling the client. Once this function returns, no call of the
/// previous callback is running or will start, except when this function
/// is called from inside a payidem callback (it then returns without
/// waiting). No lock is held while the callback runs: it may call any
/// function on the same client, this one included. After
/// `payidem_client_free` it is never called again, not even by a
/// `payidem_call` that outlives the client.
///
/// Ownership: `userdata` stays the caller's; it must stay valid until the
/// callback is replaced or removed, or the client freed (each of which
/// waits for running calls of it).
/// NULL: `client` must not be NULL (nothing happens); `callback` and
/// `userdata` may be NULL.
/// Threads: safe at any time; it waits for running calls of the previous
/// callback to return (unless called from inside a callback).
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_set_event_json_callback(
    client: *const payidem_client,
    callback: payidem_event_json_callback,
    userdata: *mut c_void,
) {
    read_or(client, (), |c| c.json_callback.register(callback, userdata))
}

/// Hands `event` to the client's JSON callback, if one is registered (the
/// client's event listener, installed by `payidem_client_new`).
pub(crate) fn deliver(cell: &CallbackCell<JsonCallback>, event: &Event) {
    // No lock is held while `cb` runs: the cell counts the delivery instead.
    cell.deliver(|cb| {
        let json = c_string(event.to_json());
        // SAFETY: the caller registered a valid callback for this userdata,
        // and the registration is not replaced nor the client freed before
        // the delivery ends (both wait for it).
        unsafe { (cb.function)(cb.userdata, json.as_ptr()) };
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn log_levels_are_the_cores_numbered_from_one() {
        for (i, level) in LogLevel::ALL.into_iter().enumerate() {
            let number = level_of(level) as u32;
            assert_eq!(number as usize, i + 1, "{level:?}");
            let name = unsafe { CStr::from_ptr(payidem_log_level_name(number)) };
            assert_eq!(name.to_str().unwrap(), level.as_str());
        }
        for unknown in [0, 4, u32::MAX] {
            let name = unsafe { CStr::from_ptr(payidem_log_level_name(unknown)) };
            assert_eq!(name, c"unknown");
        }
    }
}
