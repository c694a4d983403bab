//! `Verifier` and `Verified`: protocol section 3, for platforms and tests.

use std::sync::{PoisonError, RwLock, RwLockReadGuard};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};

use payidem::protocol::Refusal;
use payidem::verifier::replay_store::ReplayStore;
use payidem::verifier::{self, IncomingRequest, VerifierConfig};
use payidem::{Error, ErrorCode};

use crate::convert::{
    field, hash_sized, repr_opt, text, unix_seconds, whole, HeaderTexts, Utf8, DETACH_BODY_BYTES,
};
use crate::errors::{invalid, raise};

/// A refusal as Python sees it: status, `(name, value)` headers, body.
type RefusalParts = (u16, Vec<(&'static str, String)>, Py<PyBytes>);

fn parts(py: Python<'_>, refusal: &Refusal) -> RefusalParts {
    (
        refusal.status(),
        refusal.headers().to_vec(),
        PyBytes::new(py, refusal.body()).unbind(),
    )
}

/// What a successful verification established: act on these values, not on
/// headers read again (an empty or repeated `Idempotency-Key` header fails
/// verification).
#[pyclass(frozen, module = "payidem._native")]
pub(crate) struct Verified {
    /// The key id that signed the request.
    #[pyo3(get)]
    key_id: String,
    /// The signed timestamp (Unix seconds).
    #[pyo3(get)]
    timestamp: u64,
    /// The request's idempotency key, when it carries one.
    #[pyo3(get)]
    idempotency_key: Option<String>,
    /// The signed nonce, now recorded as used.
    #[pyo3(get)]
    nonce: String,
}

#[pymethods]
impl Verified {
    fn __repr__(&self) -> String {
        format!(
            "Verified(key_id={:?}, timestamp={}, idempotency_key={}, nonce={:?})",
            self.key_id,
            self.timestamp,
            repr_opt(&self.idempotency_key),
            self.nonce
        )
    }
}

/// Verifies signed requests for a set of key ids and refuses replays.
///
/// `replay_store` names where accepted nonces are recorded: `None` or
/// `"memory"` for this process's memory; `"redis://host[:port][/db]"`,
/// `"unix:///path/redis.sock"` or `"redis+unix:///path"` for a Redis server
/// shared by a fleet of verifiers, so a request accepted by one is refused
/// (`NonceReused`) by all. When Redis cannot answer (unreachable, timeout,
/// out of memory, or restarted after the request was signed) verification
/// raises `ReplayStoreUnavailable` (503, answered with `Retry-After`),
/// never accepting; `nonce_capacity_*` then bound nothing. Nothing is
/// connected at construction. See docs/replay-store.md.
///
/// Thread-safe: threads verify concurrently with the GIL released for large
/// bodies.
#[pyclass(frozen, module = "payidem._native")]
pub(crate) struct Verifier {
    inner: RwLock<verifier::Verifier>,
    /// Whether nonces go to a shared (network) store: verification then
    /// always runs without the GIL.
    shared_store: bool,
}

impl Verifier {
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, verifier::Verifier> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One key id's secrets (a list of `bytes`) handed to `with` as the core
/// takes them, borrowed from the Python objects: no copy is made (none is
/// left unwiped).
fn with_secrets<T>(value: &Bound<'_, PyAny>, with: impl FnOnce(&[&[u8]]) -> T) -> PyResult<T> {
    let not_bytes = || PyTypeError::new_err("each key id maps to a list of secrets (bytes)");
    if value.is_instance_of::<PyBytes>() || value.is_instance_of::<PyString>() {
        return Err(not_bytes());
    }
    let secrets = value
        .try_iter()
        .map_err(|_| not_bytes())?
        .map(|item| item?.cast_into::<PyBytes>().map_err(|_| not_bytes()))
        .collect::<PyResult<Vec<_>>>()?;
    let refs: Vec<&[u8]> = secrets.iter().map(|b| b.as_bytes()).collect();
    Ok(with(&refs))
}

#[pymethods]
impl Verifier {
    #[new]
    #[pyo3(signature = (keys, window_seconds = 300, nonce_capacity_per_key = 4_000_000, nonce_capacity_total = None, replay_store = None))]
    fn new(
        py: Python<'_>,
        keys: &Bound<'_, PyDict>,
        window_seconds: i128,
        nonce_capacity_per_key: i128,
        nonce_capacity_total: Option<i128>,
        replay_store: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Verifier> {
        let store = match replay_store {
            None => ReplayStore::Memory,
            Some(url) => raise(py, ReplayStore::from_url(&text(url, "replay_store")?))?,
        };
        let shared_store = store != ReplayStore::Memory;
        let config = VerifierConfig {
            window_seconds: whole(py, "window_seconds", window_seconds, u64::MAX)?,
            nonce_capacity_per_key: whole(
                py,
                "nonce_capacity_per_key",
                nonce_capacity_per_key,
                usize::MAX as u64,
            )? as usize,
            ..VerifierConfig::default()
        };
        let mut inner = raise(py, verifier::Verifier::with_replay_store(config, store))?;
        if let Some(total) = nonce_capacity_total {
            let total = whole(py, "nonce_capacity_total", total, usize::MAX as u64)? as usize;
            raise(py, inner.set_nonce_capacity_total(total))?;
        }
        for (key_id, secrets) in keys.iter() {
            if !key_id.is_instance_of::<PyString>() {
                return Err(PyTypeError::new_err("key ids must be str"));
            }
            let key_id = text(&key_id, "key_id")?;
            raise(
                py,
                with_secrets(&secrets, |refs| inner.add_key(&key_id, refs))?,
            )?;
        }
        if keys.is_empty() {
            return Err(invalid(py, "keys", "at least one key id is required"));
        }
        Ok(Verifier {
            inner: RwLock::new(inner),
            shared_store,
        })
    }

    /// Adds a key id with its active secrets (each 16..=1024 bytes).
    fn add_key(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = field::key_id)] key_id: String,
        secrets: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let result = with_secrets(secrets, |refs| {
            py.detach(|| {
                self.inner
                    .write()
                    .unwrap_or_else(PoisonError::into_inner)
                    .add_key(&key_id, refs)
            })
        })?;
        raise(py, result)
    }

    /// Removes a key id: its secrets are wiped and its nonce memory freed;
    /// requests signed with it then raise `UnknownApiKey`.
    fn remove_key(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = field::key_id)] key_id: String,
    ) -> PyResult<()> {
        let result = py.detach(|| {
            self.inner
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .remove_key(&key_id)
        });
        raise(py, result)
    }

    /// The verifier-wide limit of nonces held across every key id (a memory
    /// cap: 28 to 57 bytes a nonce, 33.6 measured; 16,000,000 by default). Past it
    /// verification raises `ReplayCacheFull` (503) until some expire.
    #[getter]
    fn nonce_capacity_total(&self) -> usize {
        self.read().nonce_capacity_total()
    }

    /// Replaces the active secrets of a configured key id (rotation), keeping
    /// its nonce memory.
    fn set_secrets(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = field::key_id)] key_id: String,
        secrets: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        raise(
            py,
            with_secrets(secrets, |refs| self.read().set_secrets(&key_id, refs))?,
        )
    }

    /// The allowed clock distance in seconds.
    #[getter]
    fn window_seconds(&self) -> u64 {
        self.read().config().window_seconds
    }

    /// Verifies one request at the server's clock `now` (Unix seconds;
    /// default: the local clock). Raises the `VerificationError` subclass of
    /// the protocol's answer, whose `http_status` is the status to answer.
    #[pyo3(signature = (method, path, headers, body = None, now = None))]
    fn verify(
        &self,
        py: Python<'_>,
        method: &Bound<'_, PyAny>,
        path: &Bound<'_, PyAny>,
        headers: &Bound<'_, PyAny>,
        body: Option<&[u8]>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Verified> {
        let body = body.unwrap_or_default();
        let method = Utf8::of(method, "method")?;
        let path = Utf8::of(path, "path")?;
        let texts = HeaderTexts::collect(Some(headers))?;
        let headers = texts.pairs()?;
        let (method, path) = (method.as_str()?, path.as_str()?);
        let now = unix_seconds(py, "now", now)?;
        // A shared store is a network round trip: never hold the GIL for it.
        let detach_from = if self.shared_store {
            DETACH_BODY_BYTES
        } else {
            body.len()
        };
        let result = hash_sized(py, detach_from.max(body.len()), || {
            let request = IncomingRequest {
                method,
                path,
                headers: &headers,
                body,
            };
            self.read().verify(&request, now).map(|v| Verified {
                key_id: v.key_id.to_owned(),
                timestamp: v.timestamp,
                idempotency_key: v.idempotency_key.map(str::to_owned),
                nonce: v.nonce.to_owned(),
            })
        });
        raise(py, result)
    }

    /// Every code `verify` fails with, in number order, as the core lists
    /// them: each is refused with its own status.
    #[classattr]
    #[pyo3(name = "VERIFICATION_CODES")]
    fn verification_codes(py: Python<'_>) -> PyResult<Py<PyTuple>> {
        let names = Refusal::VERIFICATION_CODES.map(|c| c.as_str());
        Ok(PyTuple::new(py, names)?.unbind())
    }

    /// The core's HTTP refusal of a request whose verification failed with
    /// the error `code` (a stable name) and `message`, as
    /// `(status, headers, body)`: the exact answer the mock, the C ABI and
    /// the Go middleware send. `server_time` (Unix seconds) is the server's
    /// clock that `timestamp_out_of_window` carries as `X-Server-Time` and
    /// `Date`. A code that verification never gives is a failure of the
    /// server: 500 `internal_error` with a message that shows nothing of it.
    #[staticmethod]
    #[pyo3(signature = (code, message, server_time = None))]
    fn refusal(
        py: Python<'_>,
        code: &Bound<'_, PyAny>,
        message: &Bound<'_, PyAny>,
        server_time: Option<i128>,
    ) -> PyResult<RefusalParts> {
        let name = text(code, "code")?;
        let code = ErrorCode::from_name(&name)
            .ok_or_else(|| invalid(py, "code", &format!("{name:?} is no error code")))?;
        let mut error = Error::new(code, text(message, "message")?);
        if let Some(t) = server_time {
            error = error.with_server_time(whole(py, "server_time", t, u64::MAX)?);
        }
        Ok(parts(py, &Refusal::for_error(&error)))
    }

    /// The core's 413 `payload_too_large` refusal of a body over `limit`
    /// bytes, as `(status, headers, body)`.
    #[staticmethod]
    fn body_too_large_refusal(py: Python<'_>, limit: i128) -> PyResult<RefusalParts> {
        let limit = whole(py, "limit", limit, u64::MAX)?;
        Ok(parts(py, &Refusal::body_too_large(limit)))
    }

    /// The core's 400 `bad_request` refusal of a request whose framing
    /// cannot be trusted (`why` says what), as `(status, headers, body)`.
    #[staticmethod]
    fn bad_request_refusal(py: Python<'_>, why: &Bound<'_, PyAny>) -> PyResult<RefusalParts> {
        Ok(parts(py, &Refusal::bad_request(&text(why, "why")?)))
    }

    fn __repr__(&self) -> String {
        format!(
            "Verifier(window_seconds={}, secrets=<redacted>)",
            self.read().config().window_seconds
        )
    }
}
