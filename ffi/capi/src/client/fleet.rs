//! The PostgreSQL journal's fleet features (docs/postgres-journal.md): the
//! outbox statement an application runs in its own transaction, and the
//! takeover of operations no live call holds.

use std::ffi::c_char;

use base64::Engine as _;
use payidem::journal::{OutboxValue, ParamStyle};

use crate::base::boundary::guard;
use crate::base::enums::payidem_result;
use crate::base::error::{payidem_error, FfiError};
use crate::base::handles::{give, text_out};
use crate::base::text::{c_string, handle, out};
use crate::client::outcome::payidem_order_list;
use crate::client::{payidem_client, read_spec};

fn style_of(value: u32) -> Result<ParamStyle, FfiError> {
    match value {
        1 => Ok(ParamStyle::Dollar),
        2 => Ok(ParamStyle::Format),
        other => Err(FfiError::invalid(
            "param_style",
            format!(
                "{other} is not a payidem_param_style (1 PAYIDEM_PARAMS_DOLLAR, \
                 2 PAYIDEM_PARAMS_PERCENT_S)"
            ),
        )),
    }
}

/// The outbox statement as JSON: `sql`, `params` (text, the body in
/// base64, or null) and `param_types` (`"text"`, `"bytea"` or `"text"` for
/// a null).
fn outbox_json(sql: &str, params: &[OutboxValue]) -> String {
    let mut values = Vec::with_capacity(params.len());
    let mut types = Vec::with_capacity(params.len());
    for p in params {
        let (value, ty) = match p {
            OutboxValue::Text(s) => (serde_json::Value::from(s.as_str()), "text"),
            OutboxValue::Bytes(b) => (
                serde_json::Value::from(base64::engine::general_purpose::STANDARD.encode(b)),
                "bytea",
            ),
            OutboxValue::Null => (serde_json::Value::Null, "text"),
        };
        values.push(value);
        types.push(serde_json::Value::from(ty));
    }
    serde_json::json!({ "sql": sql, "params": values, "param_types": types }).to_string()
}

/// Writes, as JSON and a NUL into `buf`, the SQL statement and parameters
/// that record one operation as pending in a PostgreSQL journal's tables,
/// for the caller to run in its own database transaction together with its
/// business rows (the outbox): both are committed, or neither. Any client
/// on that journal later sends it with `payidem_client_take_over`, with its
/// key and body unchanged. The operation is checked and frozen as
/// `payidem_client_begin` would (same arguments; the base URL's path
/// prefix joins the paths, the key is defaulted); nothing is journaled or
/// sent. The client's own journal must be PostgreSQL: the row carries its
/// integrity MACs, bound to that journal and this client's journal key,
/// platform and key id, so the clients taking it over must share them. The
/// statement fails with a unique violation when the order id or the key is
/// already there.
///
/// The JSON is `{"sql": "INSERT …", "params": [...], "param_types":
/// [...]}`: seven parameters, in order order id, idempotency key, method,
/// path, body, body SHA-256 (hex), status path; each a string, except the
/// body, which is base64 (standard alphabet, padded; decode it and pass
/// bytes), and a missing status path, which is null (SQL NULL).
/// `param_types` gives each one's SQL type: `"text"` or `"bytea"`.
/// `param_style` is a `payidem_param_style`: the placeholders of `sql`
/// (`$1` … or `%s`). `*len_out` (when given) receives the JSON's length
/// without the NUL, also on `PAYIDEM_BUFFER_TOO_SMALL`.
///
/// Ownership: `buf` is caller memory, written only on success; the inputs
/// are only read.
/// NULL: `client`, `order_id`, `method` and `path` must not be NULL; `body`
/// may be NULL when `body_len` is 0; `idempotency_key`, `status_path`,
/// `len_out` and `err_out` may be NULL; `buf` may be NULL only with
/// `buf_len` 0.
/// Threads: safe from any number of threads on one client.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `client`, `order_id`,
/// `method`, `path`, `body`, `idempotency_key`, `status_path`,
/// `param_style`, `buf` or `journal` (the client's journal is not
/// PostgreSQL); `PAYIDEM_BUFFER_TOO_SMALL` naming `buf`.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_outbox_insert(
    client: *const payidem_client,
    order_id: *const c_char,
    method: *const c_char,
    path: *const c_char,
    body: *const u8,
    body_len: usize,
    idempotency_key: *const c_char,
    status_path: *const c_char,
    param_style: u32,
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    text_out(buf, buf_len, len_out, err_out, || {
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
        let insert = client.inner.outbox_insert(&spec, style_of(param_style)?)?;
        Ok(outbox_json(&insert.sql, &insert.params))
    })
}

/// Takes over and drives up to `limit` unsettled operations of the journal
/// that no live call holds (leases free or expired, outbox inserts), one
/// after the other, oldest first, each with its own key and body, and
/// returns when they ended or nothing is left to take. Several clients (a
/// fleet's instances, a sidecar, a cron job) may run it at once on one
/// journal: each operation is taken by one of them. `*taken_out` receives
/// the order ids it drove, in order (empty when there was nothing to
/// take); how each ended is in the journal: read it with
/// `payidem_client_status` (its state) or `payidem_client_resume` (a
/// settled operation gives its stored outcome at once, sending nothing).
/// An operation whose call failed (outcome unknown, a journal error) stays
/// unsettled for the next takeover or resume.
///
/// Ownership: on success `*taken_out` receives a new list the caller frees
/// with `payidem_order_list_free`.
/// NULL: `client` and `taken_out` must not be NULL; `err_out` may be NULL.
/// Threads: safe from any number of threads on one client (and from any
/// number of clients on one journal).
/// Errors: `PAYIDEM_JOURNAL_ERROR` (the journal cannot be asked; the
/// operations driven before stay as they ended); `PAYIDEM_INVALID_ARGUMENT`
/// naming `client` or `taken_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_take_over(
    client: *const payidem_client,
    limit: u32,
    taken_out: *mut *mut payidem_order_list,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let client = handle(client, "client")?;
        let slot = out(taken_out, "taken_out")?;
        let ids = client
            .inner
            .take_over(limit as usize)?
            .into_iter()
            .map(|(order_id, _)| c_string(order_id))
            .collect();
        give(slot, payidem_order_list { ids });
        Ok(())
    })
}
