//! Platform-side verification of signed requests.

use std::ffi::c_char;
use std::sync::{PoisonError, RwLock};

use payidem::protocol::{IncomingRequest, Verifier, VerifierConfig};

use crate::boundary::{guard, guard_value};
use crate::error::{payidem_error, FfiError};
use crate::headers::{payidem_header, read_headers};
use crate::result::payidem_result;
use crate::signing::{
    PAYIDEM_IDEMPOTENCY_KEY_BUF_LEN, PAYIDEM_KEY_ID_BUF_LEN, PAYIDEM_NONCE_BUF_LEN,
};
use crate::text::{array, bytes, handle, out, req_str};

/// Verifies signed requests for a set of key ids and refuses replays.
///
/// Share freely: every function may be called from any number of threads
/// at once (verifications run concurrently; `payidem_verifier_add_key`
/// waits for running verifications). Secrets are wiped on free.
pub struct payidem_verifier {
    inner: RwLock<Verifier>,
}

/// Creates a verifier with a timestamp window of `window_seconds` (300 in
/// protocol v1; 0 means exactly equal) and at most
/// `nonce_capacity_per_key` live nonces per key id, exactly (past it
/// verification fails closed with `PAYIDEM_REPLAY_CACHE_FULL`, 503, until
/// some expire). All key ids together hold at most 16,000,000 nonces (about
/// 540 MB, at most 0.9 GB) unless `payidem_verifier_set_nonce_capacity_total` says
/// otherwise. Add key ids with `payidem_verifier_add_key`.
///
/// The verifier's clock is monotonic per key id: a `now` older than the
/// newest one already given counts as that newest one, so a server clock
/// stepped back never lets a replay through.
///
/// Ownership: on success `*verifier_out` receives a new verifier the caller
/// frees with `payidem_verifier_free`.
/// NULL: `verifier_out` must not be NULL; `err_out` may be NULL.
/// Threads: safe from any thread.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `window_seconds` (above
/// 1,000,000,000), `nonce_capacity_per_key` (0) or `verifier_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_verifier_new(
    window_seconds: u64,
    nonce_capacity_per_key: usize,
    verifier_out: *mut *mut payidem_verifier,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let slot = out(verifier_out, "verifier_out")?;
        // Capacity is exact for any number of shards; fewer shards than
        // nonces only saves memory.
        let shards = VerifierConfig::default()
            .shards
            .min(nonce_capacity_per_key)
            .max(1);
        let inner = Verifier::new(VerifierConfig {
            window_seconds,
            nonce_capacity_per_key,
            shards,
        })?;
        slot.write(Box::into_raw(Box::new(payidem_verifier {
            inner: RwLock::new(inner),
        })));
        Ok(())
    })
}

unsafe fn read_secrets<'a>(
    secrets: *const *const u8,
    secret_lens: *const usize,
    count: usize,
) -> Result<Vec<&'a [u8]>, FfiError> {
    let pointers = array(secrets, count, "secrets")?;
    let lens = array(secret_lens, count, "secret_lens")?;
    pointers
        .iter()
        .zip(lens)
        .enumerate()
        .map(|(i, (p, len))| {
            let name = format!("secrets[{i}]");
            if p.is_null() {
                return Err(FfiError::null(&name));
            }
            bytes(*p, *len, &name)
        })
        .collect()
}

/// Adds `key_id` with its `count` active secrets (each 16..=1024 bytes;
/// several for rotation: any may match). The secrets are copied.
///
/// Ownership: every input is only read.
/// NULL: `verifier`, `key_id`, `secrets`, `secret_lens` and every
/// `secrets[i]` must not be NULL; `err_out` may be NULL.
/// Threads: safe at any time; it waits for running verifications.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `verifier`, `key_id` (invalid
/// or already added), `secrets` (none given), `secrets[i]` or `secret`
/// (a secret out of its length rule), or `secret_lens`.
#[no_mangle]
pub unsafe extern "C" fn payidem_verifier_add_key(
    verifier: *const payidem_verifier,
    key_id: *const c_char,
    secrets: *const *const u8,
    secret_lens: *const usize,
    count: usize,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let verifier = handle(verifier, "verifier")?;
        let key_id = req_str(key_id, "key_id")?;
        let secrets = read_secrets(secrets, secret_lens, count)?;
        verifier
            .inner
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .add_key(key_id, &secrets)?;
        Ok(())
    })
}

/// Replaces the active secrets of a key id already added (rotation), keeping
/// its nonce cache.
///
/// Ownership: every input is only read.
/// NULL: as `payidem_verifier_add_key`.
/// Threads: safe at any time, concurrently with verifications.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `verifier`, `key_id` (invalid
/// or unknown), `secrets`, `secrets[i]`, `secret` or `secret_lens`.
#[no_mangle]
pub unsafe extern "C" fn payidem_verifier_set_secrets(
    verifier: *const payidem_verifier,
    key_id: *const c_char,
    secrets: *const *const u8,
    secret_lens: *const usize,
    count: usize,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let verifier = handle(verifier, "verifier")?;
        let key_id = req_str(key_id, "key_id")?;
        let secrets = read_secrets(secrets, secret_lens, count)?;
        verifier
            .inner
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .set_secrets(key_id, &secrets)?;
        Ok(())
    })
}

/// What `payidem_verifier_verify_into` verified: act on these values, not
/// on headers read again (the request carried each of them exactly once).
/// Every string is NUL-terminated.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct payidem_verified {
    /// The key id that signed the request (`X-Api-Key`).
    pub key_id: [c_char; PAYIDEM_KEY_ID_BUF_LEN],
    /// The `Idempotency-Key`, or `""` when the request carried none (an
    /// empty or repeated header fails verification).
    pub idempotency_key: [c_char; PAYIDEM_IDEMPOTENCY_KEY_BUF_LEN],
    /// The signed nonce (`X-Nonce`), now recorded as used.
    pub nonce: [c_char; PAYIDEM_NONCE_BUF_LEN],
    /// The signed timestamp (`X-Timestamp`, Unix seconds).
    pub timestamp: u64,
}

/// Copies `text` and a NUL into `field` (the caller checked the length).
fn fill(field: &mut [c_char], text: &str) {
    let n = text.len().min(field.len() - 1);
    for (slot, byte) in field.iter_mut().zip(&text.as_bytes()[..n]) {
        *slot = *byte as c_char;
    }
    field[n] = 0;
}

#[allow(clippy::too_many_arguments)]
unsafe fn verify_impl(
    verifier: *const payidem_verifier,
    method: *const c_char,
    path: *const c_char,
    headers: *const payidem_header,
    header_count: usize,
    body: *const u8,
    body_len: usize,
    now: u64,
    verified_out: Option<*mut payidem_verified>,
    http_status_out: *mut u16,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    let mut status = 500u16;
    let result = guard(err_out, || {
        let verified: Result<(), FfiError> = (|| {
            let slot = match verified_out {
                Some(p) => Some(out(p, "verified_out")?),
                None => None,
            };
            let verifier = handle(verifier, "verifier")?;
            let method = req_str(method, "method")?;
            let path = req_str(path, "path")?;
            let owned = read_headers(headers, header_count, "headers")?;
            let pairs: Vec<(&str, &str)> = owned.iter().map(|(n, v)| (&**n, &**v)).collect();
            let body = bytes(body, body_len, "body")?;
            let request = IncomingRequest {
                method,
                path,
                headers: &pairs,
                body,
            };
            let ok = verifier
                .inner
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .verify(&request, now)
                .map_err(|e| {
                    status = e.http_status().unwrap_or(500);
                    FfiError::from(e)
                })?;
            if let Some(slot) = slot {
                let mut v = payidem_verified {
                    key_id: [0; PAYIDEM_KEY_ID_BUF_LEN],
                    idempotency_key: [0; PAYIDEM_IDEMPOTENCY_KEY_BUF_LEN],
                    nonce: [0; PAYIDEM_NONCE_BUF_LEN],
                    timestamp: ok.timestamp,
                };
                // Each value passed its length rule, so each fits.
                fill(&mut v.key_id, ok.key_id);
                fill(&mut v.idempotency_key, ok.idempotency_key.unwrap_or(""));
                fill(&mut v.nonce, ok.nonce);
                slot.write(v);
            }
            Ok(())
        })();
        match &verified {
            Ok(()) => status = 200,
            Err(e) if e.code == payidem_result::PAYIDEM_INVALID_ARGUMENT => status = 400,
            Err(_) => {}
        }
        verified
    });
    if !http_status_out.is_null() {
        http_status_out.write(status);
    }
    result
}

/// Verifies one received request at the server's clock `now` (Unix
/// seconds), in the protocol's order: signature headers, key id, window,
/// signature, nonce replay, idempotency key on POST (an empty or repeated
/// `Idempotency-Key` header is `PAYIDEM_INVALID_ARGUMENT` naming
/// `idempotency_key`). A nonce is recorded only once its signature verified.
/// `payidem_verifier_verify_into` also returns what was verified. Header names compare
/// case-insensitively; header bytes that are not UTF-8 are read lossily.
///
/// `*http_status_out` (when given) receives the status to answer with: 200
/// on success, the error's status otherwise (401, 409, 503, 400; 500 for an
/// internal error), so a server can answer without inspecting the error.
///
/// Ownership: every input is only read.
/// NULL: `verifier`, `method` and `path` must not be NULL; `headers` may be
/// NULL when `header_count` is 0, and no header's `name` or `value` may be
/// NULL; `body` may be NULL when `body_len` is 0; `http_status_out` and
/// `err_out` may be NULL.
/// Threads: safe from any number of threads at once on one verifier.
/// Errors: `PAYIDEM_MISSING_SIGNATURE`, `PAYIDEM_UNKNOWN_API_KEY`,
/// `PAYIDEM_TIMESTAMP_OUT_OF_WINDOW` (with the server time,
/// `payidem_error_server_time`), `PAYIDEM_INVALID_SIGNATURE`,
/// `PAYIDEM_NONCE_REUSED`, `PAYIDEM_REPLAY_CACHE_FULL`,
/// `PAYIDEM_IDEMPOTENCY_KEY_REQUIRED`; `PAYIDEM_INVALID_ARGUMENT` naming
/// `verifier`, `method`, `path`, `headers[i].name`, `headers[i].value`,
/// `body` or `idempotency_key`.
#[no_mangle]
pub unsafe extern "C" fn payidem_verifier_verify(
    verifier: *const payidem_verifier,
    method: *const c_char,
    path: *const c_char,
    headers: *const payidem_header,
    header_count: usize,
    body: *const u8,
    body_len: usize,
    now: u64,
    http_status_out: *mut u16,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    verify_impl(
        verifier,
        method,
        path,
        headers,
        header_count,
        body,
        body_len,
        now,
        None,
        http_status_out,
        err_out,
    )
}

/// Verifies like `payidem_verifier_verify` and, on success, writes what it
/// verified (key id, idempotency key, nonce, timestamp) into the caller's
/// `*verified_out`. A server must act on these values rather than read the
/// headers again: that is how the key it charges is the key it verified.
///
/// Ownership: `*verified_out` is caller memory, written only on success.
/// NULL: as `payidem_verifier_verify`; `verified_out` must not be NULL.
/// Threads: safe from any number of threads at once on one verifier.
/// Errors: as `payidem_verifier_verify`, and `PAYIDEM_INVALID_ARGUMENT`
/// naming `verified_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_verifier_verify_into(
    verifier: *const payidem_verifier,
    method: *const c_char,
    path: *const c_char,
    headers: *const payidem_header,
    header_count: usize,
    body: *const u8,
    body_len: usize,
    now: u64,
    verified_out: *mut payidem_verified,
    http_status_out: *mut u16,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    verify_impl(
        verifier,
        method,
        path,
        headers,
        header_count,
        body,
        body_len,
        now,
        Some(verified_out),
        http_status_out,
        err_out,
    )
}

/// Removes a key id: its secrets are wiped and its nonce memory freed;
/// requests signed with it are then refused with `PAYIDEM_UNKNOWN_API_KEY`.
///
/// Ownership: every input is only read.
/// NULL: `verifier` and `key_id` must not be NULL; `err_out` may be NULL.
/// Threads: safe at any time; it waits for running verifications.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `verifier` or `key_id`
/// (invalid or not added).
#[no_mangle]
pub unsafe extern "C" fn payidem_verifier_remove_key(
    verifier: *const payidem_verifier,
    key_id: *const c_char,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let verifier = handle(verifier, "verifier")?;
        let key_id = req_str(key_id, "key_id")?;
        verifier
            .inner
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove_key(key_id)?;
        Ok(())
    })
}

/// Sets the verifier-wide limit of nonces held across every key id (a
/// memory cap: 28 to 57 bytes a nonce, 33.6 measured; default 16,000,000). Past it
/// verification fails closed with `PAYIDEM_REPLAY_CACHE_FULL` (503) until
/// some expire. Lowering it below what is held forgets nothing.
///
/// Ownership: every input is only read.
/// NULL: `verifier` must not be NULL; `err_out` may be NULL.
/// Threads: safe at any time, concurrently with verifications.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `verifier` or
/// `nonce_capacity_total` (0).
#[no_mangle]
pub unsafe extern "C" fn payidem_verifier_set_nonce_capacity_total(
    verifier: *const payidem_verifier,
    nonce_capacity_total: usize,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let verifier = handle(verifier, "verifier")?;
        verifier
            .inner
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .set_nonce_capacity_total(nonce_capacity_total)?;
        Ok(())
    })
}

/// Frees a verifier and wipes its secrets.
///
/// Ownership: takes `verifier`.
/// NULL: `verifier` may be NULL (nothing happens).
/// Anything else must be a live handle of this type from this library:
/// freeing it twice, using it after this call, or passing a handle of
/// another type is undefined behaviour, and is not detected.
/// Threads: no other thread may be using `verifier`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_verifier_free(verifier: *mut payidem_verifier) {
    if !verifier.is_null() {
        guard_value((), || drop(Box::from_raw(verifier)));
    }
}
