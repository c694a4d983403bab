//! The blocking client: operations run to a settled outcome, journaled.

pub mod call;
#[cfg(test)]
mod callback_tests;
pub mod events;
pub mod fleet;
pub mod options;
pub mod outcome;
pub mod takeover;

use std::ffi::{c_char, c_int, c_void, CString};
use std::ptr;
use std::sync::Arc;
use std::time::Duration;

use payidem::client::AttemptEvent;
use payidem::{CallOptions, Client, OperationSpec};

use crate::base::boundary::{guard, guard_value};
use crate::base::callback::{CallbackCell, Registration};
use crate::base::enums::payidem_result;
use crate::base::enums::{payidem_attempt_kind, payidem_next_action, payidem_operation_state};
use crate::base::error::{payidem_error, FfiError};
use crate::base::handles::{free, give, read_or, req_bytes};
use crate::base::text::{bytes, c_string, handle, opt_str, out, req_str};
use crate::base::vocabulary::c_enum;
use crate::client::events::JsonCallback;
use crate::client::outcome::{payidem_order_list, payidem_outcome};

/// Runs business operations against the platform, one idempotency key per
/// operation, keeping each operation's key and frozen body in a journal.
///
/// Share freely: every function taking a `const payidem_client *` may be
/// called from any number of threads at once. Two calls never drive the
/// same operation at once; the second gets `PAYIDEM_OPERATION_BUSY`.
pub struct payidem_client {
    pub(crate) inner: Client,
    /// The attempt callback; the client's hook reads it.
    pub(crate) callback: Arc<CallbackCell<EventCallback>>,
    /// The JSON event callback; the client's listener reads it.
    pub(crate) json_callback: Arc<CallbackCell<JsonCallback>>,
}

impl Drop for payidem_client {
    /// Closes both callbacks before the client goes: a call that outlives
    /// the client (`payidem_call`) then calls neither, and a callback
    /// running on another thread has returned before the free returns.
    fn drop(&mut self) {
        self.callback.close();
        self.json_callback.close();
    }
}

/// One attempt's event, for logs and metrics. Holds no secret and no body.
/// Every pointer is borrowed and valid only during the callback.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct payidem_attempt_event {
    /// The operation's order id.
    pub order_id: *const c_char,
    /// The operation's idempotency key.
    pub idempotency_key: *const c_char,
    /// The attempt's number over every call of the operation (1 = first).
    pub attempt: u32,
    /// The operation's own request or a status query.
    pub kind: payidem_attempt_kind,
    /// What the client does next.
    pub next: payidem_next_action,
    /// The HTTP status; 0 when no response came.
    pub http_status: u16,
    /// Whether the platform replayed a stored answer.
    pub replayed: bool,
    /// Whether `wait_ms` holds a wait before the next attempt.
    pub has_wait: bool,
    /// The wait before the next attempt, in milliseconds.
    pub wait_ms: u64,
    /// How long the attempt took, in microseconds.
    pub duration_us: u64,
    /// The response's error code; NULL when none.
    pub error_code: *const c_char,
    /// The transport failure; NULL when a response came.
    pub transport_error: *const c_char,
}

/// Receives every attempt's event, on the thread that made the attempt.
/// `userdata` is the pointer given to `payidem_client_set_event_callback`.
///
/// It must return normally: no `longjmp`/`siglongjmp` out of it, no C++
/// exception or other unwinding through it. A C++ exception reaching the
/// library aborts the process ("Rust cannot catch foreign exceptions");
/// it cannot be caught by the caller of `payidem_client_execute`. A
/// `longjmp` skips the library's frames and is undefined behaviour; in
/// practice the library still counts that callback as running, so
/// `payidem_client_set_event_callback` and `payidem_client_free` on that
/// client (from a thread that is not inside a callback) then wait forever
/// (other threads' attempts and calls go on: no lock is held while the
/// callback runs), the operation's journal lease is kept until it expires
/// (retry deadline + request timeout + 30 s, about 120 s by default;
/// meanwhile its order id answers `PAYIDEM_OPERATION_BUSY`), and the
/// call's memory leaks.
pub type payidem_event_callback =
    Option<unsafe extern "C" fn(userdata: *mut c_void, event: *const payidem_attempt_event)>;

/// Polled before every attempt and during waits (about every 20 ms) on the
/// calling thread; a non-zero return cancels the call. The library holds
/// no lock while it runs.
///
/// It must return normally: no `longjmp`/`siglongjmp` out of it, no C++
/// exception or other unwinding through it. A C++ exception reaching the
/// library aborts the process. A `longjmp` skips the library's frames and
/// is undefined behaviour; in practice the operation's journal lease is
/// kept until it expires (about 120 s by default; meanwhile its order id
/// answers `PAYIDEM_OPERATION_BUSY`) and the call's memory leaks. To stop
/// a call, return non-zero instead.
pub type payidem_cancel_callback = Option<unsafe extern "C" fn(userdata: *mut c_void) -> c_int>;

/// A registered attempt callback.
pub(crate) type EventCallback =
    Registration<unsafe extern "C" fn(*mut c_void, *const payidem_attempt_event)>;

/// Hands `event` to the client's attempt callback, if one is registered.
fn deliver(callback: &CallbackCell<EventCallback>, event: &AttemptEvent) {
    // No lock is held while `cb` runs: the cell counts the delivery instead.
    callback.deliver(|cb| {
        let order_id = c_string(event.order_id.as_str());
        let key = c_string(event.idempotency_key.as_str());
        let error_code = event.error_code.as_deref().map(c_string);
        let transport_error = event.transport_error.as_deref().map(c_string);
        let c_event = payidem_attempt_event {
            order_id: order_id.as_ptr(),
            idempotency_key: key.as_ptr(),
            attempt: event.attempt,
            kind: c_enum(event.kind),
            next: c_enum(event.next),
            http_status: event.status.unwrap_or(0),
            replayed: event.replayed,
            has_wait: event.wait.is_some(),
            wait_ms: event
                .wait
                .map_or(0, |w| u64::try_from(w.as_millis()).unwrap_or(u64::MAX)),
            duration_us: u64::try_from(event.duration.as_micros()).unwrap_or(u64::MAX),
            error_code: error_code.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
            transport_error: transport_error.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
        };
        // SAFETY: the caller registered a valid callback for this userdata,
        // and the registration is not replaced nor the client freed before
        // the delivery ends (both wait for it).
        unsafe { (cb.function)(cb.userdata, &c_event) };
    });
}

/// Creates a client from `options_json`, a JSON object, and the key's
/// `secret` (16..=1024 bytes; copied into keyed MAC state, wiped on free).
/// Opens (or creates) the journal and purges settled operations older than
/// the settled retention.
///
/// Options (read by the core's one rule per setting, the table in
/// core/src/settings/client.rs: an absent or null key takes the default;
/// every number is a JSON integer in its range, every duration at most
/// 10^9 s; anything else, and an unknown key, is `PAYIDEM_INVALID_ARGUMENT`
/// naming it, e.g. `"retry.bogus"`; `payidem_client_options_resolve` shows
/// the values a client would get):
/// - `base_url` (string, required): e.g. `"https://api.example.com"`; a
///   path prefix is allowed (sent and signed as part of every request
///   target), no query. `https://` is required except for loopback hosts
///   (`localhost`, `127.0.0.0/8`, `[::1]`).
/// - `allow_insecure_http` (boolean, default false): accept `http://` for
///   any host (signed requests then travel in clear; the platform's clock
///   is never learnt from such answers).
/// - `proxy` (string): an `http://` or `https://` proxy URL; none by
///   default. `proxy_from_env` (boolean, default false): when `proxy` is
///   absent, use `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` and `NO_PROXY`
///   (`HTTP_PROXY` is ignored when `REQUEST_METHOD` is set, i.e. under CGI).
/// - `ca_bundle` (string): a PEM file of CA certificates trusted instead of
///   the operating system's trust store (the default, which honours
///   `SSL_CERT_FILE` and `SSL_CERT_DIR`).
/// - `client_cert`, `client_key` (strings, both or neither): PEM files of a
///   client certificate (chain) and its private key for mutual TLS; the key
///   is read once and never appears in errors.
/// - `max_clock_offset_s` (default 600): the largest clock offset learnt
///   from a `401 timestamp_out_of_window`; a larger answer is not trusted
///   and the call fails with `PAYIDEM_REJECTED` (status 401), the operation
///   kept. 0 never adjusts the clock.
/// - `key_id` (string, required): sent in `X-Api-Key`.
/// - `journal_key_hex` (string): the key of the journal rows' integrity
///   MACs, in hex (16 to 1024 bytes); absent or `""`: derived from the
///   secret. Set it to keep reading rows written before a rotation of the
///   secret (docs/journal-integrity.md). Never appears in errors.
/// - `journal_path` (string): SQLite file, created 0600 if missing (its
///   directory must exist); `":memory:"` for a memory journal (operations
///   die with the process: tests only, never production). Absent or `""`:
///   the durable default `$XDG_STATE_HOME/payidem/journal.sqlite3`, or
///   `$HOME/.local/state/payidem/journal.sqlite3`, its directories created
///   0700.
/// - `connect_timeout_ms` (default 5000), `request_timeout_ms` (one
///   attempt's whole response, default 30000): both above 0.
/// - `retry`: object with `base_ms` (200; 0 retries without waiting; at
///   most `cap_ms`), `cap_ms` (10000), `max_attempts` (8, at least 1),
///   `deadline_ms` (60000, above 0; per call).
/// - `retry_budget`: object with `capacity` (500), `retry_cost` (5),
///   `timeout_cost` (10), `success_refund` (1): tokens shared by all calls,
///   each 0..=4294967295 (0 is a count: capacity 0 allows no retry).
/// - `key_retention_s` (172800 = 48 h, 1..=172800): an unknown operation
///   whose key is older is never POSTed again (`PAYIDEM_KEY_EXPIRED`).
/// - `settled_retention_s` (604800 = 7 days): settled operations older than
///   this are purged from the journal (0: every settled one, at open).
/// - `lease_ttl_s` (1..=10^9; absent: the retry deadline plus 30 s): how
///   long a call's lease on an operation holds past its last renewal
///   (beyond the request timeout, which every renewal adds so that an
///   attempt in flight stays covered) before another call may take it over.
/// - `lease_heartbeat_ms` (100..=10^12, less than the lease ttl; absent: a
///   third of the ttl): how often a call renews its lease while it waits,
///   and the most time since its last renewal with which it sends. A call
///   that finds its lease lost never sends again (`PAYIDEM_OPERATION_BUSY`).
///
/// Ownership: on success `*client_out` receives a new client the caller
/// frees with `payidem_client_free`; the inputs are only read.
/// NULL: `options_json`, `secret` and `client_out` must not be NULL;
/// `err_out` may be NULL.
/// Threads: safe from any thread.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `options_json` (not a JSON
/// object), an option (missing, mistyped, unknown or out of range, e.g.
/// `base_url`, `retry.max_attempts`, `key_retention_s`; an unreadable or
/// mismatched `ca_bundle`, `client_cert` or `client_key`; a bad `proxy`),
/// `key_id`, `secret` or `client_out`; `PAYIDEM_JOURNAL_ERROR` when the journal cannot be opened.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_new(
    options_json: *const c_char,
    secret: *const u8,
    secret_len: usize,
    client_out: *mut *mut payidem_client,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let json = req_str(options_json, "options_json")?;
        let secret = req_bytes(secret, secret_len, "secret")?;
        let slot = out(client_out, "client_out")?;
        let config = options::parse(json)?;
        let callback = Arc::new(CallbackCell::new());
        let json_callback = Arc::new(CallbackCell::new());
        let (hook_target, listener_target) = (Arc::clone(&callback), Arc::clone(&json_callback));
        let inner = Client::new(config, secret)
            .map_err(|e| FfiError::from(e).rename_field(options::option_of_field))?
            .with_event_hook(Arc::new(move |event: &AttemptEvent| {
                deliver(&hook_target, event)
            }))
            .with_event_listener(Arc::new(move |event: &payidem::client::Event| {
                crate::client::events::deliver(&listener_target, event)
            }));
        give(
            slot,
            payidem_client {
                inner,
                callback,
                json_callback,
            },
        );
        Ok(())
    })
}

/// Sets (or, with `callback` NULL, removes) the function that receives
/// every attempt's event, with `userdata` as its first argument. It runs on
/// whichever thread made the attempt, so it and `userdata` must be safe to
/// use from every thread calling the client. Once this function returns, no
/// call of the previous callback is running or will start, except when this
/// function is called from inside a payidem callback (on any client): it
/// then returns without waiting, since that callback itself may be one of
/// the calls it would wait for.
///
/// The library holds no lock while it calls the callback (nor the JSON
/// event callback, nor the cancel hook): the callback may call any function
/// on the same client, this one and `payidem_client_execute` included, and
/// a slow callback delays only the thread it runs on (and a
/// `payidem_client_set_event_callback` or `payidem_client_free` waiting for
/// it). After `payidem_client_free` the callback is never called again,
/// not even by a `payidem_call` that outlives the client. The callback
/// must return normally (see `payidem_event_callback`).
///
/// Ownership: `userdata` stays the caller's; it must stay valid until the
/// callback is replaced or removed, or the client freed (each of which
/// waits for running calls of it, as above).
/// NULL: `client` must not be NULL (nothing happens); `callback` and
/// `userdata` may be NULL.
/// Threads: safe at any time; it waits for running calls of the previous
/// callback to return (unless called from inside a callback), never for
/// calls of the new one.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_set_event_callback(
    client: *const payidem_client,
    callback: payidem_event_callback,
    userdata: *mut c_void,
) {
    read_or(client, (), |c| c.callback.register(callback, userdata))
}

/// A C hook that cancels a call or stops a loop, with its userdata.
pub(crate) struct Cancel {
    pub(crate) function: unsafe extern "C" fn(*mut c_void) -> c_int,
    pub(crate) userdata: *mut c_void,
}

// SAFETY: the cancel hook is polled only on the thread that made the call;
// Sync is needed only to satisfy the type of `CallOptions::cancel`.
unsafe impl Sync for Cancel {}

impl Cancel {
    pub(crate) fn cancelled(&self) -> bool {
        // SAFETY: the caller passed a valid function for this userdata.
        unsafe { (self.function)(self.userdata) != 0 }
    }
}

pub(crate) fn deadline_of(deadline_ms: u64) -> Option<Duration> {
    (deadline_ms > 0).then(|| Duration::from_millis(deadline_ms))
}

/// Runs `call` with the options of a call given a deadline in milliseconds
/// (0 for none) and a cancel hook (NULL for none).
fn with_call_options<R>(
    deadline_ms: u64,
    cancel: payidem_cancel_callback,
    cancel_userdata: *mut c_void,
    call: impl FnOnce(CallOptions<'_>) -> R,
) -> R {
    let hook = cancel.map(|function| Cancel {
        function,
        userdata: cancel_userdata,
    });
    let poll = || hook.as_ref().is_some_and(Cancel::cancelled);
    call(CallOptions {
        cancel: Some(&poll),
        deadline: deadline_of(deadline_ms),
    })
}

/// The operation described by C arguments, each checked and named as in
/// `payidem_client_execute` (shared by `payidem_client_begin`).
pub(crate) unsafe fn read_spec<'a>(
    order_id: *const c_char,
    method: *const c_char,
    path: *const c_char,
    body: *const u8,
    body_len: usize,
    idempotency_key: *const c_char,
    status_path: *const c_char,
) -> Result<OperationSpec<'a>, FfiError> {
    Ok(OperationSpec {
        order_id: req_str(order_id, "order_id")?,
        method: req_str(method, "method")?,
        path: req_str(path, "path")?,
        body: bytes(body, body_len, "body")?,
        idempotency_key: opt_str(idempotency_key, "idempotency_key")?,
        status_path: opt_str(status_path, "status_path")?,
    })
}

/// Runs one business operation to a settled outcome: `method` `path` with
/// the exact `body`, keyed by `idempotency_key` (NULL for the default
/// `create-{order_id}`), with `status_path` (NULL when none) as the signed
/// GET that tells whether it landed. The operation is journaled before
/// anything is sent; an order id already in the journal with the same
/// request continues that operation (a settled one answers from the journal
/// without any network call).
///
/// Ownership: on success `*outcome_out` receives a new outcome the caller
/// frees with `payidem_outcome_free`; the inputs are only read (the body is
/// copied into the journal).
/// NULL: `client`, `order_id`, `method`, `path` and `outcome_out` must not
/// be NULL; `body` may be NULL when `body_len` is 0; `idempotency_key`,
/// `status_path` and `err_out` may be NULL.
/// Threads: safe from any number of threads on one client.
/// Errors: `PAYIDEM_REJECTED` (status and body in the error),
/// `PAYIDEM_IDEMPOTENCY_CONFLICT`, `PAYIDEM_OUTCOME_UNKNOWN` (resumable:
/// order id and key in the error), `PAYIDEM_KEY_EXPIRED`,
/// `PAYIDEM_TRANSPORT_ERROR` (nothing reached the platform; key kept),
/// `PAYIDEM_OPERATION_BUSY`, `PAYIDEM_JOURNAL_ERROR`,
/// `PAYIDEM_INVALID_ARGUMENT` naming `client`, `order_id`, `method`,
/// `path`, `body`, `idempotency_key`, `status_path` or `outcome_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_execute(
    client: *const payidem_client,
    order_id: *const c_char,
    method: *const c_char,
    path: *const c_char,
    body: *const u8,
    body_len: usize,
    idempotency_key: *const c_char,
    status_path: *const c_char,
    outcome_out: *mut *mut payidem_outcome,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    payidem_client_execute_with_deadline(
        client,
        order_id,
        method,
        path,
        body,
        body_len,
        idempotency_key,
        status_path,
        0,
        None,
        ptr::null_mut(),
        outcome_out,
        err_out,
    )
}

/// `payidem_client_execute` with a per-call deadline and a cancellation
/// hook. `deadline_ms` (0 for none) shortens the client's retry deadline
/// for this call. `cancel` (NULL for none) is polled with `cancel_userdata`
/// on the calling thread before every attempt and during waits; when it
/// returns non-zero the call ends with `PAYIDEM_CANCELLED` and the
/// operation keeps its key (resume it if an attempt may have landed).
///
/// Ownership: as `payidem_client_execute`; `cancel_userdata` stays the
/// caller's.
/// NULL: as `payidem_client_execute`; `cancel` and `cancel_userdata` may be
/// NULL.
/// Threads: safe from any number of threads on one client.
/// Errors: those of `payidem_client_execute`, and `PAYIDEM_CANCELLED`
/// (order id and key in the error); a deadline that runs out ends as the
/// call would when its retries run out (e.g. `PAYIDEM_OUTCOME_UNKNOWN`).
#[no_mangle]
pub unsafe extern "C" fn payidem_client_execute_with_deadline(
    client: *const payidem_client,
    order_id: *const c_char,
    method: *const c_char,
    path: *const c_char,
    body: *const u8,
    body_len: usize,
    idempotency_key: *const c_char,
    status_path: *const c_char,
    deadline_ms: u64,
    cancel: payidem_cancel_callback,
    cancel_userdata: *mut c_void,
    outcome_out: *mut *mut payidem_outcome,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let client = handle(client, "client")?;
        let spec = read_spec(
            order_id,
            method,
            path,
            body,
            body_len,
            idempotency_key,
            status_path,
        )?;
        let slot = out(outcome_out, "outcome_out")?;
        let outcome = with_call_options(deadline_ms, cancel, cancel_userdata, |options| {
            client.inner.execute_with(&spec, options)
        })?;
        give(slot, payidem_outcome::from(outcome));
        Ok(())
    })
}

/// Drives an unsettled operation of the journal again with its own key and
/// body (after a crash, or after `PAYIDEM_OUTCOME_UNKNOWN`); a settled one
/// answers its stored outcome.
///
/// Ownership: on success `*outcome_out` receives a new outcome the caller
/// frees with `payidem_outcome_free`.
/// NULL: `client`, `order_id` and `outcome_out` must not be NULL; `err_out`
/// may be NULL.
/// Threads: safe from any number of threads on one client.
/// Errors: those of `payidem_client_execute`; `PAYIDEM_INVALID_ARGUMENT`
/// naming `order_id` also when the journal does not hold it.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_resume(
    client: *const payidem_client,
    order_id: *const c_char,
    outcome_out: *mut *mut payidem_outcome,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    payidem_client_resume_with_deadline(
        client,
        order_id,
        0,
        None,
        ptr::null_mut(),
        outcome_out,
        err_out,
    )
}

/// `payidem_client_resume` with a per-call deadline (0 for none) and a
/// cancellation hook, as in `payidem_client_execute_with_deadline`.
///
/// Ownership: as `payidem_client_resume`; `cancel_userdata` stays the
/// caller's.
/// NULL: as `payidem_client_resume`; `cancel` and `cancel_userdata` may be
/// NULL.
/// Threads: safe from any number of threads on one client.
/// Errors: those of `payidem_client_resume`, and `PAYIDEM_CANCELLED`.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_resume_with_deadline(
    client: *const payidem_client,
    order_id: *const c_char,
    deadline_ms: u64,
    cancel: payidem_cancel_callback,
    cancel_userdata: *mut c_void,
    outcome_out: *mut *mut payidem_outcome,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let client = handle(client, "client")?;
        let order_id = req_str(order_id, "order_id")?;
        let slot = out(outcome_out, "outcome_out")?;
        let outcome = with_call_options(deadline_ms, cancel, cancel_userdata, |options| {
            client.inner.resume_with(order_id, options)
        })?;
        give(slot, payidem_outcome::from(outcome));
        Ok(())
    })
}

/// The journal's record of an operation: `*found_out` tells whether it
/// exists; when it does, `*state_out` and `*attempts_out` receive its state
/// and attempts so far, otherwise `PAYIDEM_STATE_NOT_FOUND` and 0.
///
/// Ownership: the outputs are caller memory, written only on success.
/// NULL: `client`, `order_id`, `found_out`, `state_out` and `attempts_out`
/// must not be NULL; `err_out` may be NULL.
/// Threads: safe from any number of threads on one client.
/// Errors: `PAYIDEM_JOURNAL_ERROR`; `PAYIDEM_INVALID_ARGUMENT` naming
/// `client`, `order_id`, `found_out`, `state_out` or `attempts_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_status(
    client: *const payidem_client,
    order_id: *const c_char,
    found_out: *mut bool,
    state_out: *mut payidem_operation_state,
    attempts_out: *mut u32,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let client = handle(client, "client")?;
        let order_id = req_str(order_id, "order_id")?;
        let found_slot = out(found_out, "found_out")?;
        let state_slot = out(state_out, "state_out")?;
        let attempts_slot = out(attempts_out, "attempts_out")?;
        let record = client.inner.status(order_id)?;
        found_slot.write(record.is_some());
        state_slot.write(
            record
                .as_ref()
                .map_or(payidem_operation_state::PAYIDEM_STATE_NOT_FOUND, |r| {
                    c_enum(r.state)
                }),
        );
        attempts_slot.write(record.map_or(0, |r| r.attempts));
        Ok(())
    })
}

/// The order ids of operations whose outcome is unknown (in flight when a
/// process died, or ended as `PAYIDEM_OUTCOME_UNKNOWN`), oldest first:
/// resume each with `payidem_client_resume`.
///
/// Ownership: on success `*list_out` receives a new list the caller frees
/// with `payidem_order_list_free`.
/// NULL: `client` and `list_out` must not be NULL; `err_out` may be NULL.
/// Threads: safe from any number of threads on one client.
/// Errors: `PAYIDEM_JOURNAL_ERROR`; `PAYIDEM_INVALID_ARGUMENT` naming
/// `client` or `list_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_list_unknown(
    client: *const payidem_client,
    list_out: *mut *mut payidem_order_list,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let client = handle(client, "client")?;
        let slot = out(list_out, "list_out")?;
        let ids: Vec<CString> = client
            .inner
            .list_unknown()?
            .into_iter()
            .map(|r| c_string(r.operation.order_id))
            .collect();
        give(slot, payidem_order_list { ids });
        Ok(())
    })
}

/// Frees a client, closing its journal and wiping its secret. Its event
/// callback and JSON event callback are removed first: once this returns,
/// neither is running (unless this is called from inside a payidem
/// callback, when it does not wait) nor ever called again, also by a
/// `payidem_call` of this client that is still unfinished, so their
/// userdata may be freed.
///
/// Ownership: takes `client`.
/// NULL: `client` may be NULL (nothing happens).
/// Anything else must be a live handle of this type from this library:
/// freeing it twice, using it after this call, or passing a handle of
/// another type is undefined behaviour, and is not detected.
/// Threads: no call on `client` may be running or start (a `payidem_call`
/// it began may go on, on any thread).
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_free(client: *mut payidem_client) {
    free(client);
}

/// Deletes the settled operations (succeeded, rejected, conflict) whose
/// last change is older than the client's settled retention
/// (`settled_retention_s`); never an unsettled one. `*purged_out` receives
/// how many went. `payidem_client_new` purges once when it opens the
/// journal; a long-running process calls this now and then.
///
/// Ownership: `*purged_out` is caller memory, written only on success.
/// NULL: `client` and `purged_out` must not be NULL; `err_out` may be NULL.
/// Threads: safe from any number of threads on one client.
/// Errors: `PAYIDEM_JOURNAL_ERROR`; `PAYIDEM_INVALID_ARGUMENT` naming
/// `client` or `purged_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_purge_settled(
    client: *const payidem_client,
    purged_out: *mut usize,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let client = handle(client, "client")?;
        let slot = out(purged_out, "purged_out")?;
        slot.write(client.inner.purge_settled()?);
        Ok(())
    })
}

/// One signed GET of `path` (joined to the base URL like every request
/// target, e.g. `"/v1/payments/pay_123"`), for reading a resource: no
/// journal, no retry, no status query, bounded by the request timeout.
/// Whatever the platform answers (any status, 4xx and 5xx included) is the
/// outcome: read it with `payidem_outcome_http_status`,
/// `payidem_outcome_body` and `payidem_outcome_header_at`. Its order id and
/// idempotency key are empty strings, its attempts 1, and it is never
/// replayed.
///
/// Ownership: on success `*outcome_out` receives a new outcome the caller
/// frees with `payidem_outcome_free`.
/// NULL: `client`, `path` and `outcome_out` must not be NULL; `err_out` may
/// be NULL.
/// Threads: safe from any number of threads on one client.
/// Errors: `PAYIDEM_TRANSPORT_ERROR` when no answer came (connection,
/// TLS, timeout); `PAYIDEM_INVALID_ARGUMENT` naming `client`, `path` or
/// `outcome_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_get(
    client: *const payidem_client,
    path: *const c_char,
    outcome_out: *mut *mut payidem_outcome,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let client = handle(client, "client")?;
        let path = req_str(path, "path")?;
        let slot = out(outcome_out, "outcome_out")?;
        let response = client.inner.get(path)?;
        let outcome = payidem::Outcome {
            order_id: String::new(),
            idempotency_key: String::new(),
            attempts: 1,
            response,
            journal_error: None,
        };
        give(slot, payidem_outcome::from(outcome));
        Ok(())
    })
}

/// The client's defaults as JSON, from the same source `payidem_client_new`
/// uses, so that a binding never copies a default:
///
/// `{"options": {...}, "memory_journal": ":memory:"}`
///
/// - `options`: every optional key of `payidem_client_new`'s options object
///   (nested `retry` and `retry_budget` included) at its default value;
///   string options that are unset by default (`journal_path`, meaning the
///   durable default journal, `proxy`, `ca_bundle`, `client_cert`,
///   `client_key`) are `""`. With `base_url` and `key_id` added it is a
///   valid options object that sets every default explicitly.
/// - `memory_journal`: the `journal_path` value that keeps operations in
///   memory only (tests only, never production).
///
/// Ownership: the string is static; never free it.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none.
#[no_mangle]
pub extern "C" fn payidem_client_defaults_json() -> *const c_char {
    static DEFAULTS: std::sync::OnceLock<CString> = std::sync::OnceLock::new();
    guard_value(ptr::null(), || {
        DEFAULTS
            .get_or_init(|| c_string(options::defaults_json()))
            .as_ptr()
    })
}

/// The largest response body a client reads from one answer, in bytes; a
/// longer body counts as a lost answer. Callers that send attempts with
/// their own HTTP client (`payidem_call_step`) apply the same bound.
///
/// Ownership: nothing to free.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none.
#[no_mangle]
pub extern "C" fn payidem_max_response_bytes() -> u64 {
    payidem::client::MAX_RESPONSE_BYTES
}

#[cfg(test)]
mod defaults_tests {
    use super::*;
    use std::ffi::CStr;

    fn defaults() -> serde_json::Value {
        let text = unsafe { CStr::from_ptr(payidem_client_defaults_json()) };
        serde_json::from_str(text.to_str().unwrap()).unwrap()
    }

    #[test]
    fn defaults_are_the_configuration_a_client_gets_without_options() {
        let doc = defaults();
        let mut options = doc["options"].as_object().unwrap().clone();
        options.insert("base_url".into(), "https://api.example.com".into());
        options.insert("key_id".into(), "k".into());
        let explicit = options::parse(&serde_json::Value::Object(options).to_string()).unwrap();
        let implicit =
            options::parse(r#"{"base_url":"https://api.example.com","key_id":"k"}"#).unwrap();
        assert_eq!(format!("{explicit:?}"), format!("{implicit:?}"));
        assert_eq!(
            format!("{implicit:?}"),
            format!(
                "{:?}",
                payidem::ClientConfig::new("https://api.example.com", "k")
            )
        );
        assert_eq!(doc["memory_journal"], payidem::journal::MEMORY_JOURNAL);
        let memory = options::parse(&format!(
            r#"{{"base_url":"https://a.example","key_id":"k","journal_path":{}}}"#,
            doc["memory_journal"]
        ))
        .unwrap();
        assert!(matches!(memory.journal, payidem::JournalChoice::Memory));
    }

    #[test]
    fn defaults_are_one_static_string() {
        assert_eq!(
            payidem_client_defaults_json(),
            payidem_client_defaults_json()
        );
    }
}
