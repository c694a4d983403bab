//! Client-side signing: signers, signed attempts, the canonical string.

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use payidem::protocol::{
    body_sha256_hex, canonical_string, CanonicalParts, Nonce, NonceSource, OsNonceSource,
    SignedAttempt, Signer,
};

use crate::base::boundary::guard;
use crate::base::enums::payidem_result;
use crate::base::error::{payidem_error, FfiError};
use crate::base::handles::{
    fill, free, give, header_of, read_or, req_bytes, text_of, text_out, write_text,
};
use crate::base::text::{bytes, handle, opt_str, out, req_str};

/// Bytes of `payidem_signed_headers.api_key`: a key id (at most 128) and
/// its NUL.
pub const PAYIDEM_KEY_ID_BUF_LEN: usize = 129;
/// Bytes of a decimal Unix timestamp (at most 20 digits) and its NUL.
pub const PAYIDEM_TIMESTAMP_BUF_LEN: usize = 21;
/// Bytes of a nonce (36) and its NUL.
pub const PAYIDEM_NONCE_BUF_LEN: usize = 37;
/// Bytes of a signature (64 hex digits) and its NUL.
pub const PAYIDEM_SIGNATURE_BUF_LEN: usize = 65;
/// Bytes of a SHA-256 in hex (64) and its NUL.
pub const PAYIDEM_SHA256_HEX_BUF_LEN: usize = 65;
/// Bytes of an idempotency key (at most 255) and its NUL.
pub const PAYIDEM_IDEMPOTENCY_KEY_BUF_LEN: usize = 256;
/// Most headers one signed attempt carries (`X-Api-Key`, `X-Timestamp`,
/// `X-Nonce`, `X-Signature`, `Idempotency-Key`).
pub const PAYIDEM_SIGNED_HEADERS_MAX: usize = 5;

/// Signs attempts with one key id and secret. The secret is kept only as
/// keyed HMAC state, wiped when the signer is freed, and never shown.
///
/// Share freely: every function taking a `const payidem_signer *` may be
/// called from any number of threads at once.
pub struct payidem_signer {
    pub(crate) inner: Signer,
}

/// The signed headers of one attempt, in a fixed order: `X-Api-Key`,
/// `X-Timestamp`, `X-Nonce`, `X-Signature`, then `Idempotency-Key` when the
/// request carries one.
///
/// Single owner: it may move between threads but must not be used by two at
/// once; free it with `payidem_signed_attempt_free`.
pub struct payidem_signed_attempt {
    timestamp: u64,
    headers: Vec<(&'static CStr, CString)>,
}

const NONCE_INDEX: usize = 2;
const SIGNATURE_INDEX: usize = 3;

impl payidem_signed_attempt {
    fn new(signed: &SignedAttempt) -> payidem_signed_attempt {
        let names: [&'static CStr; PAYIDEM_SIGNED_HEADERS_MAX] = [
            c"X-Api-Key",
            c"X-Timestamp",
            c"X-Nonce",
            c"X-Signature",
            c"Idempotency-Key",
        ];
        let headers = signed
            .headers()
            .zip(names)
            .map(|((_, value), name)| {
                (
                    name,
                    CString::new(value).expect("checked header values hold no NUL"),
                )
            })
            .collect();
        payidem_signed_attempt {
            timestamp: signed.timestamp(),
            headers,
        }
    }
}

/// The signed header values of one attempt written into caller memory, with
/// no allocation. Each field is NUL-terminated; `idempotency_key` is `""`
/// when the request carries none (then send four headers, not five).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct payidem_signed_headers {
    /// The `X-Api-Key` value.
    pub api_key: [c_char; PAYIDEM_KEY_ID_BUF_LEN],
    /// The `X-Timestamp` value.
    pub timestamp: [c_char; PAYIDEM_TIMESTAMP_BUF_LEN],
    /// The `X-Nonce` value.
    pub nonce: [c_char; PAYIDEM_NONCE_BUF_LEN],
    /// The `X-Signature` value.
    pub signature: [c_char; PAYIDEM_SIGNATURE_BUF_LEN],
    /// The `Idempotency-Key` value, or `""` for none.
    pub idempotency_key: [c_char; PAYIDEM_IDEMPOTENCY_KEY_BUF_LEN],
}

/// Copies exactly `N` bytes of `text` and a NUL into `field` (fixed-size
/// values: nonce, signature), a copy the compiler inlines.
fn fill_fixed<const N: usize>(field: &mut [c_char], text: &str) {
    match <&[u8; N]>::try_from(text.as_bytes()) {
        Ok(bytes) => {
            for (slot, byte) in field[..N].iter_mut().zip(bytes) {
                *slot = *byte as c_char;
            }
            field[N] = 0;
        }
        Err(_) => fill(field, text),
    }
}

/// Creates a signer for `key_id` (1..=128 of `[A-Za-z0-9._:-]`) and a
/// secret of 16..=1024 bytes. The secret is copied into keyed MAC state;
/// the caller may wipe its own copy at once.
///
/// Ownership: on success `*signer_out` receives a new signer the caller
/// frees with `payidem_signer_free`; `key_id` and `secret` are only read.
/// NULL: `key_id`, `secret` and `signer_out` must not be NULL;
/// `err_out` may be NULL.
/// Threads: safe from any thread.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `key_id`, `secret` or
/// `signer_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_signer_new(
    key_id: *const c_char,
    secret: *const u8,
    secret_len: usize,
    signer_out: *mut *mut payidem_signer,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let key_id = req_str(key_id, "key_id")?;
        let secret = req_bytes(secret, secret_len, "secret")?;
        let slot = out(signer_out, "signer_out")?;
        let inner = Signer::new(key_id, secret)?;
        give(slot, payidem_signer { inner });
        Ok(())
    })
}

/// Frees a signer and wipes its secret.
///
/// Ownership: takes `signer`.
/// NULL: `signer` may be NULL (nothing happens).
/// Anything else must be a live handle of this type from this library:
/// freeing it twice, using it after this call, or passing a handle of
/// another type is undefined behaviour, and is not detected.
/// Threads: no other thread may be using `signer`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_signer_free(signer: *mut payidem_signer) {
    free(signer);
}

unsafe fn sign_attempt(
    signer: *const payidem_signer,
    method: *const c_char,
    path: *const c_char,
    idempotency_key: *const c_char,
    body: *const u8,
    body_len: usize,
    timestamp: u64,
    nonce: Option<*const c_char>,
) -> Result<SignedAttempt, FfiError> {
    let signer = handle(signer, "signer")?;
    let method = req_str(method, "method")?;
    let path = req_str(path, "path")?;
    let key = opt_str(idempotency_key, "idempotency_key")?.unwrap_or("");
    let body = bytes(body, body_len, "body")?;
    let nonce = match nonce {
        Some(text) => Nonce::parse(req_str(text, "nonce")?)?,
        None => OsNonceSource.next_nonce(),
    };
    Ok(signer
        .inner
        .sign_attempt(method, path, key, body, timestamp, nonce)?)
}

/// The body of `payidem_signer_sign_attempt` and its `_with_nonce`: checks
/// `attempt_out` first, then signs and gives the attempt.
unsafe fn new_signed_attempt(
    signer: *const payidem_signer,
    method: *const c_char,
    path: *const c_char,
    idempotency_key: *const c_char,
    body: *const u8,
    body_len: usize,
    timestamp: u64,
    nonce: Option<*const c_char>,
    attempt_out: *mut *mut payidem_signed_attempt,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let slot = out(attempt_out, "attempt_out")?;
        let signed = sign_attempt(
            signer,
            method,
            path,
            idempotency_key,
            body,
            body_len,
            timestamp,
            nonce,
        )?;
        give(slot, payidem_signed_attempt::new(&signed));
        Ok(())
    })
}

/// Signs one attempt at `timestamp` (Unix seconds, any clock offset already
/// applied) with a fresh random nonce. `idempotency_key` is NULL or `""` for
/// a request without one (a POST requires one).
///
/// Ownership: on success `*attempt_out` receives a new attempt the caller
/// frees with `payidem_signed_attempt_free`; every input is only read.
/// NULL: `signer`, `method`, `path` and `attempt_out` must not be NULL;
/// `idempotency_key` may be NULL; `body` may be NULL when `body_len` is 0;
/// `err_out` may be NULL.
/// Threads: safe from any thread, with the same signer on many at once.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `signer`, `method`, `path`,
/// `idempotency_key`, `body` or `attempt_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_signer_sign_attempt(
    signer: *const payidem_signer,
    method: *const c_char,
    path: *const c_char,
    idempotency_key: *const c_char,
    body: *const u8,
    body_len: usize,
    timestamp: u64,
    attempt_out: *mut *mut payidem_signed_attempt,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    new_signed_attempt(
        signer,
        method,
        path,
        idempotency_key,
        body,
        body_len,
        timestamp,
        None,
        attempt_out,
        err_out,
    )
}

/// `payidem_signer_sign_attempt` with an explicit `nonce` (a lower-case
/// hyphenated UUID v4), for conformance tests and replays of recorded
/// traffic. Production code must use the random nonce of
/// `payidem_signer_sign_attempt`: a nonce is never reused.
///
/// Ownership: as `payidem_signer_sign_attempt`.
/// NULL: as `payidem_signer_sign_attempt`; `nonce` must not be NULL.
/// Threads: safe from any thread, with the same signer on many at once.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `signer`, `method`, `path`,
/// `idempotency_key`, `nonce`, `body` or `attempt_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_signer_sign_attempt_with_nonce(
    signer: *const payidem_signer,
    method: *const c_char,
    path: *const c_char,
    idempotency_key: *const c_char,
    body: *const u8,
    body_len: usize,
    timestamp: u64,
    nonce: *const c_char,
    attempt_out: *mut *mut payidem_signed_attempt,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    new_signed_attempt(
        signer,
        method,
        path,
        idempotency_key,
        body,
        body_len,
        timestamp,
        Some(nonce),
        attempt_out,
        err_out,
    )
}

/// Signs one attempt like `payidem_signer_sign_attempt` (fresh random
/// nonce) but writes the header values into the caller's
/// `payidem_signed_headers`, with no allocation by the caller and no handle
/// to free. The header names are the `PAYIDEM_HEADER_*` strings.
///
/// Ownership: `*headers_out` is caller memory, written only on success.
/// NULL: `signer`, `method`, `path` and `headers_out` must not be NULL;
/// `idempotency_key` may be NULL; `body` may be NULL when `body_len` is 0;
/// `err_out` may be NULL.
/// Threads: safe from any thread, with the same signer on many at once.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `signer`, `method`, `path`,
/// `idempotency_key`, `body` or `headers_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_signer_sign_into(
    signer: *const payidem_signer,
    method: *const c_char,
    path: *const c_char,
    idempotency_key: *const c_char,
    body: *const u8,
    body_len: usize,
    timestamp: u64,
    headers_out: *mut payidem_signed_headers,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        if headers_out.is_null() {
            return Err(FfiError::null("headers_out"));
        }
        let signed = sign_attempt(
            signer,
            method,
            path,
            idempotency_key,
            body,
            body_len,
            timestamp,
            None,
        )?;
        // SAFETY: checked non-NULL; the caller promised a writable struct.
        let target = &mut *headers_out;
        fill(&mut target.api_key, signed.key_id());
        fill(&mut target.timestamp, signed.timestamp_text());
        fill_fixed::<36>(&mut target.nonce, signed.nonce().as_str());
        fill_fixed::<64>(&mut target.signature, signed.signature().as_str());
        fill(
            &mut target.idempotency_key,
            signed.idempotency_key().unwrap_or(""),
        );
        Ok(())
    })
}

/// The signature of explicit canonical parts, each given as text exactly as
/// it goes on the wire (`timestamp` as decimal text, `nonce` as a UUID v4,
/// `idempotency_key` `""` or NULL for none). Every part is checked first.
/// Writes 64 lower-case hex digits and a NUL into `buf` (at least
/// `PAYIDEM_SIGNATURE_BUF_LEN` bytes).
///
/// Ownership: `buf` is caller memory, written only on success.
/// NULL: `signer`, `method`, `path`, `timestamp`, `nonce` and `buf` must not
/// be NULL; `idempotency_key` may be NULL; `body` may be NULL when
/// `body_len` is 0; `err_out` may be NULL.
/// Threads: safe from any thread, with the same signer on many at once.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming the first part that breaks its
/// rule (`method`, `path`, `timestamp`, `nonce`, `idempotency_key`) or a
/// NULL parameter; `PAYIDEM_BUFFER_TOO_SMALL` when `buf_len` < 65.
#[no_mangle]
pub unsafe extern "C" fn payidem_signer_sign_parts(
    signer: *const payidem_signer,
    method: *const c_char,
    path: *const c_char,
    timestamp: *const c_char,
    nonce: *const c_char,
    idempotency_key: *const c_char,
    body: *const u8,
    body_len: usize,
    buf: *mut c_char,
    buf_len: usize,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let signer = handle(signer, "signer")?;
        let parts = read_parts(method, path, timestamp, nonce, idempotency_key)?;
        let body = bytes(body, body_len, "body")?;
        if buf.is_null() {
            return Err(FfiError::null("buf"));
        }
        if buf_len < PAYIDEM_SIGNATURE_BUF_LEN {
            return Err(FfiError::buffer_too_small(
                "buf",
                PAYIDEM_SIGNATURE_BUF_LEN,
                buf_len,
            ));
        }
        let signature = signer.inner.sign(&parts, body)?;
        write_text(signature.as_str(), buf, buf_len, ptr::null_mut(), "buf")
    })
}

unsafe fn read_parts<'a>(
    method: *const c_char,
    path: *const c_char,
    timestamp: *const c_char,
    nonce: *const c_char,
    idempotency_key: *const c_char,
) -> Result<CanonicalParts<'a>, FfiError> {
    Ok(CanonicalParts {
        method: req_str(method, "method")?,
        path: req_str(path, "path")?,
        timestamp: req_str(timestamp, "timestamp")?,
        nonce: req_str(nonce, "nonce")?,
        idempotency_key: opt_str(idempotency_key, "idempotency_key")?.unwrap_or(""),
    })
}

/// Writes the canonical string of one attempt,
/// `method\npath\ntimestamp\nnonce\nidempotency_key\nbody_sha256` (no
/// trailing newline), and a NUL into `buf`. `*len_out` (when given)
/// receives the string's length without the NUL, on success and also on
/// `PAYIDEM_BUFFER_TOO_SMALL`, so a call with `buf` NULL and `buf_len` 0
/// asks for the size (the buffer needs `*len_out + 1` bytes).
///
/// Ownership: `buf` is caller memory, written only on success.
/// NULL: `method`, `path`, `timestamp` and `nonce` must not be NULL;
/// `idempotency_key` may be NULL (none); `body` may be NULL when `body_len`
/// is 0; `buf` may be NULL only with `buf_len` 0; `len_out` and `err_out`
/// may be NULL.
/// Threads: safe from any thread.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming the first part that breaks its
/// rule or a NULL parameter; `PAYIDEM_BUFFER_TOO_SMALL` naming `buf`.
#[no_mangle]
pub unsafe extern "C" fn payidem_canonical_string(
    method: *const c_char,
    path: *const c_char,
    timestamp: *const c_char,
    nonce: *const c_char,
    idempotency_key: *const c_char,
    body: *const u8,
    body_len: usize,
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    text_out(buf, buf_len, len_out, err_out, || {
        let parts = read_parts(method, path, timestamp, nonce, idempotency_key)?;
        Ok(canonical_string(&parts, bytes(body, body_len, "body")?)?)
    })
}

/// Writes the body's SHA-256 as 64 lower-case hex digits and a NUL into
/// `buf` (at least `PAYIDEM_SHA256_HEX_BUF_LEN` bytes).
///
/// Ownership: `buf` is caller memory, written only on success.
/// NULL: `body` may be NULL when `body_len` is 0; `buf` must not be NULL;
/// `err_out` may be NULL.
/// Threads: safe from any thread.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `body` or `buf`;
/// `PAYIDEM_BUFFER_TOO_SMALL` when `buf_len` < 65.
#[no_mangle]
pub unsafe extern "C" fn payidem_body_sha256_hex(
    body: *const u8,
    body_len: usize,
    buf: *mut c_char,
    buf_len: usize,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let body = bytes(body, body_len, "body")?;
        if buf.is_null() {
            return Err(FfiError::null("buf"));
        }
        write_text(&body_sha256_hex(body), buf, buf_len, ptr::null_mut(), "buf")
    })
}

/// How many headers the attempt carries: 4, or 5 with `Idempotency-Key`.
///
/// Ownership: borrows `attempt`.
/// NULL: `attempt` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `attempt`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_signed_attempt_header_count(
    attempt: *const payidem_signed_attempt,
) -> usize {
    read_or(attempt, 0, |a| a.headers.len())
}

/// The header at `index` (0-based, in the order `X-Api-Key`,
/// `X-Timestamp`, `X-Nonce`, `X-Signature`, `Idempotency-Key`).
///
/// Ownership: `*name_out` and `*value_out` are borrowed from `attempt`,
/// valid until `payidem_signed_attempt_free(attempt)`.
/// NULL: `attempt`, `name_out` and `value_out` must not be NULL; `err_out`
/// may be NULL.
/// Threads: read-only; not while another thread frees `attempt`.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `attempt`, `index` (out of
/// range), `name_out` or `value_out`.
#[no_mangle]
pub unsafe extern "C" fn payidem_signed_attempt_header_at(
    attempt: *const payidem_signed_attempt,
    index: usize,
    name_out: *mut *const c_char,
    value_out: *mut *const c_char,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    header_of(
        "attempt",
        attempt,
        index,
        name_out,
        value_out,
        err_out,
        |a| &a.headers,
    )
}

/// The signed timestamp (Unix seconds); 0 for a NULL attempt.
///
/// Ownership: borrows `attempt`.
/// NULL: `attempt` may be NULL, giving 0.
/// Threads: read-only; not while another thread frees `attempt`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_signed_attempt_timestamp(
    attempt: *const payidem_signed_attempt,
) -> u64 {
    read_or(attempt, 0, |a| a.timestamp)
}

/// The `X-Nonce` value.
///
/// Ownership: borrowed from `attempt`, valid until it is freed.
/// NULL: `attempt` may be NULL, giving NULL.
/// Threads: read-only; not while another thread frees `attempt`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_signed_attempt_nonce(
    attempt: *const payidem_signed_attempt,
) -> *const c_char {
    text_of(attempt, |a| Some(&a.headers[NONCE_INDEX].1))
}

/// The `X-Signature` value.
///
/// Ownership: borrowed from `attempt`, valid until it is freed.
/// NULL: `attempt` may be NULL, giving NULL.
/// Threads: read-only; not while another thread frees `attempt`.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_signed_attempt_signature(
    attempt: *const payidem_signed_attempt,
) -> *const c_char {
    text_of(attempt, |a| Some(&a.headers[SIGNATURE_INDEX].1))
}

/// Frees a signed attempt.
///
/// Ownership: takes `attempt`; every string borrowed from it dies.
/// NULL: `attempt` may be NULL (nothing happens).
/// Anything else must be a live handle of this type from this library:
/// freeing it twice, using it after this call, or passing a handle of
/// another type is undefined behaviour, and is not detected.
/// Threads: the caller must own `attempt`; free it once.
/// Errors: none.
#[no_mangle]
pub unsafe extern "C" fn payidem_signed_attempt_free(attempt: *mut payidem_signed_attempt) {
    free(attempt);
}
