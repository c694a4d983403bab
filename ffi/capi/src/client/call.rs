//! A client's call driven by the caller's own HTTP client (libcurl, Go
//! net/http, ...): the client's journal, lease, signer, retry budget,
//! clock and event callback, with the caller sending the attempts.

use std::ffi::c_char;

use payidem::client::{Call, CallStep};
use payidem::operation::CallTime;

use crate::base::boundary::guard;
use crate::base::enums::payidem_result;
use crate::base::error::payidem_error;
use crate::base::handles::{free, give, text_out};
use crate::base::headers::payidem_header;
use crate::base::text::{handle, handle_mut, out, req_str};
use crate::client::{deadline_of, payidem_client, read_spec};
use crate::operation::step::payidem_step;
use crate::operation::{call_time, ceil_ms, RawReply};

/// One call of a client driving one operation, for a caller that sends
/// the attempts with its own HTTP client: ask `payidem_call_step` what to
/// do, send SEND steps to `payidem_client_url` of their path, report with
/// `payidem_call_report`, sleep WAIT steps, stop at END. The call records
/// every attempt in the client's journal (durably for the first) before
/// handing it out, and stores the end before the END step.
///
/// Single owner: used by one thread at a time (it may move between
/// threads); many calls of one client may run on many threads. Free it
/// with `payidem_call_free`; a call freed before its END is abandoned (the
/// journal is left right and the lease released).
pub struct payidem_call {
    inner: Call,
}

/// Starts a call of one business operation, as `payidem_client_execute`
/// does (same arguments, checks and journal; an order id already in the
/// journal with the same request continues that operation, a settled one
/// gives an END step at once) but without sending anything: the caller
/// drives it with `payidem_call_step` and `payidem_call_report`.
/// `deadline_ms` (0 for none) shortens the client's retry deadline for this
/// call.
///
/// Ownership: on success `*call_out` receives a new call the caller frees
/// with `payidem_call_free`; the inputs are only read (the body is copied
/// into the journal).
/// NULL: `client`, `order_id`, `method`, `path` and `call_out` must not be
/// NULL; `body` may be NULL when `body_len` is 0; `idempotency_key`,
/// `status_path` and `err_out` may be NULL.
/// Threads: safe from any number of threads on one client.
/// Errors: `PAYIDEM_IDEMPOTENCY_CONFLICT` (the order id is journaled with
/// another request), `PAYIDEM_OPERATION_BUSY` (another call drives it),
/// `PAYIDEM_JOURNAL_ERROR`, `PAYIDEM_INVALID_ARGUMENT` naming `client`,
/// `order_id`, `method`, `path`, `body`, `idempotency_key`, `status_path`
/// or `call_out`. The platform's answers come with the END step.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_begin(
    client: *const payidem_client,
    order_id: *const c_char,
    method: *const c_char,
    path: *const c_char,
    body: *const u8,
    body_len: usize,
    idempotency_key: *const c_char,
    status_path: *const c_char,
    deadline_ms: u64,
    call_out: *mut *mut payidem_call,
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
        let slot = out(call_out, "call_out")?;
        let call = client.inner.begin(&spec, deadline_of(deadline_ms))?;
        give(slot, payidem_call { inner: call });
        Ok(())
    })
}

/// Starts a call resuming an unsettled operation of the journal with its
/// own key and body (after a crash, or after `PAYIDEM_OUTCOME_UNKNOWN`;
/// see `payidem_client_list_unknown`), as `payidem_client_resume` does,
/// for a caller that sends with its own HTTP client. A settled operation
/// gives an END step at once with its stored outcome.
///
/// Ownership: on success `*call_out` receives a new call the caller frees
/// with `payidem_call_free`.
/// NULL: `client`, `order_id` and `call_out` must not be NULL; `err_out`
/// may be NULL.
/// Threads: safe from any number of threads on one client.
/// Errors: `PAYIDEM_OPERATION_BUSY`, `PAYIDEM_JOURNAL_ERROR`,
/// `PAYIDEM_INVALID_ARGUMENT` naming `client`, `order_id` (also when the
/// journal does not hold it) or `call_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_begin_resume(
    client: *const payidem_client,
    order_id: *const c_char,
    deadline_ms: u64,
    call_out: *mut *mut payidem_call,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let client = handle(client, "client")?;
        let order_id = req_str(order_id, "order_id")?;
        let slot = out(call_out, "call_out")?;
        let call = client
            .inner
            .begin_resume(order_id, deadline_of(deadline_ms))?;
        give(slot, payidem_call { inner: call });
        Ok(())
    })
}

/// The call's next step: SEND (already recorded in the journal: send it to
/// `payidem_client_url` of `payidem_step_path`, within
/// `payidem_step_timeout_ms`, then `payidem_call_report`), WAIT (sleep,
/// then ask again) or END (the journal holds the end; read it with
/// `payidem_step_end_result`). Never PERSIST: the call records in the
/// client's journal itself. Asking again after a SEND without reporting
/// ends the call: that attempt's outcome is unknown. After END every step
/// is the same END.
///
/// Ownership: on success `*step_out` receives a new step the caller frees
/// with `payidem_step_free`.
/// NULL: `call` and `step_out` must not be NULL; `err_out` may be NULL.
/// Threads: one thread at a time on `call`.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `call` or `step_out`. How
/// the operation ended (journal errors included) is the END step's result,
/// not this function's.
#[no_mangle]
pub unsafe extern "C" fn payidem_call_step(
    call: *mut payidem_call,
    step_out: *mut *mut payidem_step,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    next_step(call, None, step_out, err_out)
}

/// `payidem_call_step` at the caller's clocks, for a caller that keeps
/// them itself (a simulation, the shared operation vectors): `now_unix` is
/// the wall clock (Unix seconds) the attempts are signed with and the
/// journal written at, `elapsed_ms` the time since the call began, against
/// its deadline and waits. Once told, the call keeps to the caller's
/// clocks (a cancel or free writes at the time last told).
///
/// Ownership: as `payidem_call_step`.
/// NULL: as `payidem_call_step`.
/// Threads: as `payidem_call_step`.
/// Errors: as `payidem_call_step`.
#[no_mangle]
pub unsafe extern "C" fn payidem_call_step_at(
    call: *mut payidem_call,
    now_unix: u64,
    elapsed_ms: u64,
    step_out: *mut *mut payidem_step,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    let at = call_time(now_unix, elapsed_ms);
    next_step(call, Some(at), step_out, err_out)
}

/// The call's next step, at the caller's clocks when given.
unsafe fn next_step(
    call: *mut payidem_call,
    at: Option<CallTime>,
    step_out: *mut *mut payidem_step,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let call = &mut handle_mut(call, "call")?.inner;
        let slot = out(step_out, "step_out")?;
        let step = match at {
            Some(at) => call.step_at(at),
            None => call.step(),
        };
        let step = match step {
            CallStep::Send { attempt, timeout } => payidem_step::send(attempt, ceil_ms(timeout)),
            CallStep::Wait(wait) => payidem_step::wait(wait),
            CallStep::Done(result) => payidem_step::end(call.end(), result),
        };
        give(slot, step);
        Ok(())
    })
}

/// Reports what the attempt of the last SEND step produced, as for
/// `payidem_operation_handle`: `outcome` is a `payidem_attempt_outcome`;
/// for `PAYIDEM_ATTEMPT_RESPONSE` the `status`, response `headers` and
/// `body`; for `PAYIDEM_ATTEMPT_NOT_SENT` (nothing was written: DNS,
/// connect, TLS handshake) and `PAYIDEM_ATTEMPT_SENT_NO_RESPONSE` (the
/// request was or may have been written, and no answer came: timeout,
/// reset) an optional `reason`. The client's event callback receives the
/// attempt's event before this returns. A report without an attempt in
/// flight is ignored.
///
/// Ownership: every input is only read (copied).
/// NULL: `call` must not be NULL; `headers` may be NULL when
/// `header_count` is 0 (no header's `name` or `value` may be NULL); `body`
/// may be NULL when `body_len` is 0; `reason` and `err_out` may be NULL.
/// Threads: one thread at a time on `call`.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `call`, `outcome` (not a
/// `payidem_attempt_outcome`), `status` (a response's status outside
/// 100..=999), `headers[i].name`, `headers[i].value`, `body` or `reason`;
/// nothing is reported then (report again).
#[no_mangle]
pub unsafe extern "C" fn payidem_call_report(
    call: *mut payidem_call,
    outcome: u32,
    status: u16,
    headers: *const payidem_header,
    header_count: usize,
    body: *const u8,
    body_len: usize,
    reason: *const c_char,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    let reply = RawReply {
        outcome,
        status,
        headers,
        header_count,
        body,
        body_len,
        reason,
    };
    report(call, reply, None, err_out)
}

/// `payidem_call_report` at the caller's clocks (see
/// `payidem_call_step_at`): `now_unix` Unix seconds, `elapsed_ms` since the
/// call began.
///
/// Ownership: as `payidem_call_report`.
/// NULL: as `payidem_call_report`.
/// Threads: as `payidem_call_report`.
/// Errors: as `payidem_call_report`.
#[no_mangle]
pub unsafe extern "C" fn payidem_call_report_at(
    call: *mut payidem_call,
    outcome: u32,
    status: u16,
    headers: *const payidem_header,
    header_count: usize,
    body: *const u8,
    body_len: usize,
    reason: *const c_char,
    now_unix: u64,
    elapsed_ms: u64,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    let reply = RawReply {
        outcome,
        status,
        headers,
        header_count,
        body,
        body_len,
        reason,
    };
    report(call, reply, Some(call_time(now_unix, elapsed_ms)), err_out)
}

/// Reports `reply` to the call, at the caller's clocks when given.
unsafe fn report(
    call: *mut payidem_call,
    reply: RawReply,
    at: Option<CallTime>,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let call = &mut handle_mut(call, "call")?.inner;
        let reply = reply.read()?;
        match at {
            Some(at) => call.report_at(reply, at),
            None => call.report(reply),
        }
        Ok(())
    })
}

/// Ends the call at the caller's request (a cancel, a deadline, a signal)
/// and gives its END step: the journal is left right (unknown if an attempt
/// may have landed, pending otherwise; the key is kept) and the lease is
/// released. Its result is `PAYIDEM_CANCELLED` (order id and key in the
/// error), unless the machine had already ended: then it is that end's
/// result (a payment that was made is never hidden behind a cancel).
///
/// Ownership: on success `*end_out` receives a new step the caller frees
/// with `payidem_step_free`.
/// NULL: `call` and `end_out` must not be NULL; `err_out` may be NULL.
/// Threads: one thread at a time on `call`.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `call` or `end_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_call_cancel(
    call: *mut payidem_call,
    end_out: *mut *mut payidem_step,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let call = handle_mut(call, "call")?;
        let slot = out(end_out, "end_out")?;
        let result = call.inner.cancel();
        give(slot, payidem_step::end(call.inner.end(), result));
        Ok(())
    })
}

/// Frees a call. A call freed before its END is abandoned first, as
/// `payidem_call_cancel` does: the journal is left right (unknown if an
/// attempt may have landed, so `payidem_client_list_unknown` lists it) and
/// the lease is released.
///
/// Ownership: takes `call`; steps it made stay valid.
/// NULL: `call` may be NULL (nothing happens).
/// Anything else must be a live handle of this type from this library:
/// freeing it twice, using it after this call, or passing a handle of
/// another type is undefined behaviour, and is not detected. The client
/// that made it may be freed before or after.
/// Threads: no call on `call` may be running or start.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_call_free(call: *mut payidem_call) {
    free(call)
}

/// Writes the full URL an attempt's request target is sent to (the base
/// URL's origin followed by `path`, as `payidem_step_path` gives it, which
/// already holds the base URL's path prefix) and a NUL into `buf`;
/// `*len_out` (when given) receives its length without the NUL, also on
/// `PAYIDEM_BUFFER_TOO_SMALL`.
///
/// Ownership: `buf` is caller memory, written only on success.
/// NULL: `client` and `path` must not be NULL; `buf` may be NULL only with
/// `buf_len` 0; `len_out` and `err_out` may be NULL.
/// Threads: safe from any number of threads on one client.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `client`, `path` or `buf`;
/// `PAYIDEM_BUFFER_TOO_SMALL` naming `buf`.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_url(
    client: *const payidem_client,
    path: *const c_char,
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    client_text(
        client,
        path,
        "path",
        buf,
        buf_len,
        len_out,
        err_out,
        |c, path| Ok(c.url(path)),
    )
}

/// Writes the request target of the absolute `url` relative to the
/// client's base URL (its path below the base URL's path prefix, with its
/// query), the path to begin an operation with, and a NUL into `buf`;
/// `*len_out` (when given) receives its length without the NUL, also on
/// `PAYIDEM_BUFFER_TOO_SMALL`. The core decides whether `url` is under the
/// base URL: scheme and host compare without case, a default port equals no
/// port (`https://h:443/x` is `https://h/x`), paths compare as their
/// percent-encoded text, and a URL with credentials is refused. A signed
/// request is never sent elsewhere.
///
/// Ownership: `buf` is caller memory, written only on success.
/// NULL: `client` and `url` must not be NULL; `buf` may be NULL only with
/// `buf_len` 0; `len_out` and `err_out` may be NULL.
/// Threads: safe from any number of threads on one client.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `client`, `url` (no absolute
/// URL under the base URL) or `buf`; `PAYIDEM_BUFFER_TOO_SMALL` naming
/// `buf`.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_target_of(
    client: *const payidem_client,
    url: *const c_char,
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    client_text(
        client,
        url,
        "url",
        buf,
        buf_len,
        len_out,
        err_out,
        |c, url| c.target_of(url),
    )
}

/// Writes what `text` makes of the client and the string argument `arg`
/// (named `name`) into `buf`, as `payidem_client_url` and
/// `payidem_client_target_of` promise.
unsafe fn client_text(
    client: *const payidem_client,
    arg: *const c_char,
    name: &'static str,
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
    err_out: *mut *mut payidem_error,
    text: impl FnOnce(&payidem::Client, &str) -> payidem::Result<String>,
) -> payidem_result {
    text_out(buf, buf_len, len_out, err_out, || {
        let client = handle(client, "client")?;
        Ok(text(&client.inner, req_str(arg, name)?)?)
    })
}
