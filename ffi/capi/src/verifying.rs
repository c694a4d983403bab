//! Platform-side verification of signed requests.

use std::ffi::{c_char, CStr, CString};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use payidem::protocol::Refusal;
use payidem::verifier::replay_store::ReplayStore;
use payidem::verifier::{IncomingRequest, Verifier, VerifierConfig};
use payidem::{Error, ErrorCode};

use crate::base::boundary::guard;
use crate::base::enums::payidem_result;
use crate::base::error::{
    payidem_error, payidem_error_code, payidem_error_message, payidem_error_server_time, FfiError,
};
use crate::base::handles::{bytes_of, fill, free, give, header_of, read_or, text_of};
use crate::base::headers::{payidem_header, read_headers};
use crate::base::text::{array, bytes, handle, out, req_str, Out};
use crate::signing::{
    PAYIDEM_IDEMPOTENCY_KEY_BUF_LEN, PAYIDEM_KEY_ID_BUF_LEN, PAYIDEM_NONCE_BUF_LEN,
};

/// Verifies signed requests for a set of key ids and refuses replays.
///
/// Share freely: every function may be called from any number of threads
/// at once (verifications run concurrently; `payidem_verifier_add_key`
/// waits for running verifications). Secrets are wiped on free.
pub struct payidem_verifier {
    inner: RwLock<Verifier>,
}

impl payidem_verifier {
    /// The verifier shared with other threads: verifications, secret
    /// rotation (`set_secrets`, `set_nonce_capacity_total`) and metrics run
    /// at once. A lock poisoned by a panic (which the boundary has already
    /// turned into `PAYIDEM_INTERNAL_ERROR`) is used anyway.
    pub(crate) fn shared(&self) -> RwLockReadGuard<'_, Verifier> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The verifier alone, for adding and removing keys; poisoning as for
    /// [`payidem_verifier::shared`].
    pub(crate) fn exclusive(&self) -> RwLockWriteGuard<'_, Verifier> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }
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
        new_verifier(
            window_seconds,
            nonce_capacity_per_key,
            ReplayStore::Memory,
            slot,
        )
    })
}

/// Creates a verifier like `payidem_verifier_new` whose nonces are recorded
/// in the replay store named by `replay_store`: `"memory"` (or NULL, or
/// `""`) for this process's memory, exactly like `payidem_verifier_new`;
/// `"redis://host[:port][/db]"`, `"unix:///path/redis.sock"` or
/// `"redis+unix:///path"` for a Redis server shared by a fleet of verifiers,
/// so a request accepted by one is a replay (`PAYIDEM_NONCE_REUSED`) for
/// all. Nothing is connected here. With Redis each verification that
/// passes the window and the signature claims the nonce with one atomic
/// script; when Redis is unreachable, times out, is out of memory, or was
/// restarted after the request was signed (its epoch guard), verification
/// fails closed with `PAYIDEM_REPLAY_STORE_UNAVAILABLE` (503 with
/// `Retry-After`), never accepting. `nonce_capacity_per_key` then bounds
/// nothing (Redis's `maxmemory` does). See docs/replay-store.md for what
/// the Redis server needs (`maxmemory-policy noeviction`).
///
/// Ownership: `replay_store` is only read (it may hold a password; it never
/// appears in an error). On success `*verifier_out` receives a new verifier
/// the caller frees with `payidem_verifier_free`.
/// NULL: `verifier_out` must not be NULL; `replay_store` and `err_out` may
/// be NULL.
/// Threads: safe from any thread.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `replay_store` (not one of the
/// forms above), `window_seconds`, `nonce_capacity_per_key` or
/// `verifier_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_verifier_new_with_replay_store(
    window_seconds: u64,
    nonce_capacity_per_key: usize,
    replay_store: *const c_char,
    verifier_out: *mut *mut payidem_verifier,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let slot = out(verifier_out, "verifier_out")?;
        let store = if replay_store.is_null() {
            ReplayStore::Memory
        } else {
            ReplayStore::from_url(req_str(replay_store, "replay_store")?)?
        };
        new_verifier(window_seconds, nonce_capacity_per_key, store, slot)
    })
}

fn new_verifier(
    window_seconds: u64,
    nonce_capacity_per_key: usize,
    store: ReplayStore,
    slot: Out<'_, *mut payidem_verifier>,
) -> Result<(), FfiError> {
    // Capacity is exact for any number of shards; fewer shards than
    // nonces only saves memory.
    let shards = VerifierConfig::default()
        .shards
        .min(nonce_capacity_per_key)
        .max(1);
    let inner = Verifier::with_replay_store(
        VerifierConfig {
            window_seconds,
            nonce_capacity_per_key,
            shards,
        },
        store,
    )?;
    give(
        slot,
        payidem_verifier {
            inner: RwLock::new(inner),
        },
    );
    Ok(())
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

/// The verifier, key id and secrets of `payidem_verifier_add_key` and
/// `payidem_verifier_set_secrets`, checked in that order.
unsafe fn read_key_secrets<'a>(
    verifier: *const payidem_verifier,
    key_id: *const c_char,
    secrets: *const *const u8,
    secret_lens: *const usize,
    count: usize,
) -> Result<(&'a payidem_verifier, &'a str, Vec<&'a [u8]>), FfiError> {
    let verifier = handle(verifier, "verifier")?;
    let key_id = req_str(key_id, "key_id")?;
    Ok((verifier, key_id, read_secrets(secrets, secret_lens, count)?))
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
        let (verifier, key_id, secrets) =
            read_key_secrets(verifier, key_id, secrets, secret_lens, count)?;
        Ok(verifier.exclusive().add_key(key_id, &secrets)?)
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
        let (verifier, key_id, secrets) =
            read_key_secrets(verifier, key_id, secrets, secret_lens, count)?;
        Ok(verifier.shared().set_secrets(key_id, &secrets)?)
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
            let ok = verifier.shared().verify(&request, now).map_err(|e| {
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
/// `payidem_refusal_from_error` builds the whole answer (status, headers and
/// body) from the error.
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
/// `PAYIDEM_IDEMPOTENCY_KEY_REQUIRED`, `PAYIDEM_REPLAY_STORE_UNAVAILABLE`
/// (a Redis replay store that cannot answer; 503 with `Retry-After`);
/// `PAYIDEM_INVALID_ARGUMENT` naming
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
        verifier.exclusive().remove_key(key_id)?;
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
            .shared()
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
    free(verifier);
}

/// The HTTP answer that refuses a request which failed verification (or
/// whose body is too large): status, headers and the exact body
/// `{"error":{"code":"...","message":"..."}}`. The core builds it; the mock,
/// the Go middleware and the Python WSGI middleware send the same bytes.
///
/// Read-only once made: any number of threads may read it at once; free it
/// once, with `payidem_refusal_free`, when no other thread uses it.
pub struct payidem_refusal {
    status: u16,
    code: CString,
    headers: Vec<(CString, CString)>,
    body: Vec<u8>,
}

impl payidem_refusal {
    fn new(refusal: &Refusal) -> payidem_refusal {
        let c = |s: &str| CString::new(s).expect("refusal headers and codes hold no NUL");
        payidem_refusal {
            status: refusal.status(),
            code: c(refusal.code()),
            headers: refusal
                .headers()
                .iter()
                .map(|(name, value)| (c(name), c(value)))
                .collect(),
            body: refusal.body().to_vec(),
        }
    }
}

/// The result number of the verification code at `index` (0-based, in
/// number order), or 0 (`PAYIDEM_OK`) past the last one: exactly the codes
/// `payidem_verifier_verify` fails with (`PAYIDEM_INVALID_ARGUMENT`,
/// `PAYIDEM_MISSING_SIGNATURE`, ..., `PAYIDEM_IDEMPOTENCY_KEY_REQUIRED`),
/// each refused with its own status. Lets a binding test every one.
///
/// Ownership: nothing to free.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none.
#[no_mangle]
pub extern "C" fn payidem_refusal_verification_code_at(index: usize) -> u32 {
    Refusal::VERIFICATION_CODES
        .get(index)
        .map_or(0, |code| code.number())
}

/// Builds the answer to a request whose verification failed with `error`
/// (as `payidem_verifier_verify` gave it): its status (401, 409, 503 or
/// 400), `Content-Type: application/json`, for
/// `PAYIDEM_TIMESTAMP_OUT_OF_WINDOW` the server's clock as `X-Server-Time`
/// and `Date`, for `PAYIDEM_REPLAY_STORE_UNAVAILABLE` `Retry-After: 1`,
/// and the body with the error's code and message. An error that
/// verification never gives is a failure of the server: 500
/// `internal_error`, whose message shows nothing of it.
///
/// Ownership: `error` is only read (free it as usual); on success
/// `*refusal_out` receives a new refusal the caller frees with
/// `payidem_refusal_free`.
/// NULL: `error` and `refusal_out` must not be NULL; `err_out` may be NULL.
/// Threads: safe from any thread; `error` must not be freed meanwhile.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `error` or `refusal_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_refusal_from_error(
    error: *const payidem_error,
    refusal_out: *mut *mut payidem_refusal,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let slot = out(refusal_out, "refusal_out")?;
        let error = handle(error, "error")?;
        let code = payidem_error_code(error).error_code();
        let message = CStr::from_ptr(payidem_error_message(error)).to_string_lossy();
        let mut core = Error::new(code.unwrap_or(ErrorCode::Internal), message);
        let mut server_time = 0u64;
        if payidem_error_server_time(error, &mut server_time) {
            core = core.with_server_time(server_time);
        }
        give(slot, payidem_refusal::new(&Refusal::for_error(&core)));
        Ok(())
    })
}

/// Builds the refusal for a verification failure given by its parts, for a
/// binding that keeps an error's fields rather than the `payidem_error`:
/// `code` is a result number (`PAYIDEM_NONCE_REUSED`, ...), `message` the
/// error's message, and `server_time` (Unix seconds) the server's clock,
/// used only by `PAYIDEM_TIMESTAMP_OUT_OF_WINDOW`. The same answer as
/// `payidem_refusal_from_error` for an error with these parts.
///
/// Ownership: inputs are only read; on success `*refusal_out` receives a new
/// refusal the caller frees with `payidem_refusal_free`.
/// NULL: `message` and `refusal_out` must not be NULL; `err_out` may be NULL.
/// Threads: safe from any thread.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `code` (0, or a number that is
/// no code), `message` or `refusal_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_refusal_new(
    code: u32,
    message: *const c_char,
    server_time: u64,
    refusal_out: *mut *mut payidem_refusal,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let slot = out(refusal_out, "refusal_out")?;
        let result = payidem_result::from_number(code)
            .filter(|r| *r != payidem_result::PAYIDEM_OK)
            .ok_or_else(|| FfiError::invalid("code", format!("{code} is no error code")))?;
        let message = req_str(message, "message")?;
        let core = Error::new(result.error_code().unwrap_or(ErrorCode::Internal), message)
            .with_server_time(server_time);
        give(slot, payidem_refusal::new(&Refusal::for_error(&core)));
        Ok(())
    })
}

/// Builds the 413 `payload_too_large` refusal for a body over a server's
/// limit of `limit_bytes`, which was neither read nor verified.
///
/// Ownership: on success `*refusal_out` receives a new refusal the caller
/// frees with `payidem_refusal_free`.
/// NULL: `refusal_out` must not be NULL; `err_out` may be NULL.
/// Threads: safe from any thread.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `refusal_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_refusal_body_too_large(
    limit_bytes: u64,
    refusal_out: *mut *mut payidem_refusal,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let slot = out(refusal_out, "refusal_out")?;
        give(
            slot,
            payidem_refusal::new(&Refusal::body_too_large(limit_bytes)),
        );
        Ok(())
    })
}

/// The HTTP status to answer with; 0 for a NULL refusal.
///
/// Ownership: borrows `refusal`.
/// NULL: `refusal` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `refusal`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_refusal_status(refusal: *const payidem_refusal) -> u16 {
    read_or(refusal, 0, |r| r.status)
}

/// The error code the body carries (e.g. `"nonce_reused"`,
/// `"payload_too_large"`), for logs and metrics; NULL for a NULL refusal.
///
/// Ownership: borrowed from `refusal`, valid until
/// `payidem_refusal_free(refusal)`.
/// NULL: `refusal` may be NULL, giving NULL.
/// Threads: read-only; not while another thread frees `refusal`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_refusal_code(refusal: *const payidem_refusal) -> *const c_char {
    text_of(refusal, |r| Some(&r.code))
}

/// How many headers to send (besides framing ones such as
/// `Content-Length`); 0 for a NULL refusal.
///
/// Ownership: borrows `refusal`.
/// NULL: `refusal` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `refusal`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_refusal_header_count(refusal: *const payidem_refusal) -> usize {
    read_or(refusal, 0, |r| r.headers.len())
}

/// The header at `index` (0-based): `Content-Type` first, then for
/// `timestamp_out_of_window` `X-Server-Time` and `Date`, for
/// `replay_store_unavailable` `Retry-After`. A server that adds
/// its own `Date` to every answer must not add it to one that has this one.
///
/// Ownership: `*name_out` and `*value_out` are borrowed from `refusal`,
/// valid until `payidem_refusal_free(refusal)`.
/// NULL: `refusal`, `name_out` and `value_out` must not be NULL; `err_out`
/// may be NULL.
/// Threads: read-only; not while another thread frees `refusal`.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `refusal`, `index` (out of
/// range), `name_out` or `value_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_refusal_header_at(
    refusal: *const payidem_refusal,
    index: usize,
    name_out: *mut *const c_char,
    value_out: *mut *const c_char,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    header_of(
        "refusal",
        refusal,
        index,
        name_out,
        value_out,
        err_out,
        |r| &r.headers,
    )
}

/// The body to send: sets `*body_out` and `*len_out` (UTF-8 JSON, not
/// NUL-terminated) and returns true; returns false and leaves them untouched
/// for NULL arguments.
///
/// Ownership: the bytes are borrowed from `refusal`, valid until
/// `payidem_refusal_free(refusal)`.
/// NULL: none of the arguments may be NULL (false).
/// Threads: read-only; not while another thread frees `refusal`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_refusal_body(
    refusal: *const payidem_refusal,
    body_out: *mut *const u8,
    len_out: *mut usize,
) -> bool {
    bytes_of(refusal, body_out, len_out, |r| Some(&r.body))
}

/// Frees a refusal.
///
/// Ownership: takes `refusal`; every string and buffer borrowed from it dies.
/// NULL: `refusal` may be NULL (nothing happens).
/// Anything else must be a live handle of this type from this library:
/// freeing it twice, using it after this call, or passing a handle of
/// another type is undefined behaviour, and is not detected.
/// Threads: no other thread may be using `refusal`; free it once.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_refusal_free(refusal: *mut payidem_refusal) {
    free(refusal);
}

#[cfg(test)]
mod tests {
    use std::ptr;

    use super::*;
    use crate::base::error::{payidem_error_field, payidem_error_free};

    unsafe fn parts(r: *const payidem_refusal) -> (u16, String, Vec<(String, String)>, Vec<u8>) {
        let text = |p: *const c_char| CStr::from_ptr(p).to_str().unwrap().to_owned();
        let mut headers = Vec::new();
        for i in 0..payidem_refusal_header_count(r) {
            let (mut n, mut v) = (ptr::null(), ptr::null());
            let rc = payidem_refusal_header_at(r, i, &mut n, &mut v, ptr::null_mut());
            assert_eq!(rc, payidem_result::PAYIDEM_OK);
            headers.push((text(n), text(v)));
        }
        let (mut body, mut len) = (ptr::null(), 0usize);
        assert!(payidem_refusal_body(r, &mut body, &mut len));
        let body = std::slice::from_raw_parts(body, len).to_vec();
        (
            payidem_refusal_status(r),
            text(payidem_refusal_code(r)),
            headers,
            body,
        )
    }

    fn core_parts(r: &Refusal) -> (u16, String, Vec<(String, String)>, Vec<u8>) {
        (
            r.status(),
            r.code().to_owned(),
            r.headers()
                .iter()
                .map(|(n, v)| ((*n).to_owned(), v.clone()))
                .collect(),
            r.body().to_vec(),
        )
    }

    #[test]
    fn from_error_and_new_give_the_cores_refusal() {
        unsafe {
            for code in ErrorCode::ALL {
                let core = Error::new(code, "m \"x\"").with_server_time(1_000);
                let error =
                    Box::into_raw(Box::new(payidem_error::from(FfiError::from(core.clone()))));
                let mut from_error = ptr::null_mut();
                let rc = payidem_refusal_from_error(error, &mut from_error, ptr::null_mut());
                assert_eq!(rc, payidem_result::PAYIDEM_OK);
                let mut from_parts = ptr::null_mut();
                let rc = payidem_refusal_new(
                    code.number(),
                    c"m \"x\"".as_ptr(),
                    1_000,
                    &mut from_parts,
                    ptr::null_mut(),
                );
                assert_eq!(rc, payidem_result::PAYIDEM_OK);
                let expected = core_parts(&Refusal::for_error(&core));
                assert_eq!(parts(from_error), expected, "{code}");
                assert_eq!(parts(from_parts), expected, "{code}");
                payidem_refusal_free(from_error);
                payidem_refusal_free(from_parts);
                payidem_error_free(error);
            }
        }
    }

    #[test]
    fn the_code_list_is_the_cores() {
        let listed: Vec<u32> = (0..)
            .map(|i| payidem_refusal_verification_code_at(i))
            .take_while(|n| *n != 0)
            .collect();
        let core: Vec<u32> = Refusal::VERIFICATION_CODES
            .iter()
            .map(|c| c.number())
            .collect();
        assert_eq!(listed, core);
    }

    #[test]
    fn bad_arguments_are_named() {
        unsafe {
            let field = |rc: payidem_result, err: *mut payidem_error| {
                assert_eq!(rc, payidem_result::PAYIDEM_INVALID_ARGUMENT);
                let name = CStr::from_ptr(payidem_error_field(err))
                    .to_str()
                    .unwrap()
                    .to_owned();
                payidem_error_free(err);
                name
            };
            let mut r = ptr::null_mut();
            let mut err = ptr::null_mut();
            let rc = payidem_refusal_from_error(ptr::null(), &mut r, &mut err);
            assert_eq!(field(rc, err), "error");
            let rc = payidem_refusal_new(0, c"m".as_ptr(), 0, &mut r, &mut err);
            assert_eq!(field(rc, err), "code");
            let rc = payidem_refusal_new(99, c"m".as_ptr(), 0, &mut r, &mut err);
            assert_eq!(field(rc, err), "code");
            let rc = payidem_refusal_new(13, ptr::null(), 0, &mut r, &mut err);
            assert_eq!(field(rc, err), "message");
            let rc = payidem_refusal_new(13, c"m".as_ptr(), 0, ptr::null_mut(), &mut err);
            assert_eq!(field(rc, err), "refusal_out");
            let rc = payidem_refusal_body_too_large(1, ptr::null_mut(), &mut err);
            assert_eq!(field(rc, err), "refusal_out");
            assert!(r.is_null(), "no output on failure");
            let rc = payidem_refusal_body_too_large(10, &mut r, ptr::null_mut());
            assert_eq!(rc, payidem_result::PAYIDEM_OK);
            let (mut n, mut v) = (ptr::null(), ptr::null());
            let rc = payidem_refusal_header_at(r, 1, &mut n, &mut v, &mut err);
            assert_eq!(field(rc, err), "index");
            assert_eq!(parts(r), core_parts(&Refusal::body_too_large(10)));
            payidem_refusal_free(r);
            assert_eq!(payidem_refusal_status(ptr::null()), 0);
            assert!(payidem_refusal_code(ptr::null()).is_null());
            assert_eq!(payidem_refusal_header_count(ptr::null()), 0);
            payidem_refusal_free(ptr::null_mut());
        }
    }
}
