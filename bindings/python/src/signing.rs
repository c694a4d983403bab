//! `Signer`, `canonical_string` and `body_sha256_hex`: protocol section 2.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use payidem::protocol::{self, CanonicalParts, Nonce, NonceSource, OsNonceSource};

use crate::convert::{field, hash_sized, optional_field, timestamp_text, unix_seconds};
use crate::errors::raise;

/// Signs attempts with one key id and secret. The secret is kept only as
/// keyed HMAC state inside the Rust core, wiped when the signer goes, and
/// never shown by `repr`.
#[pyclass(frozen, module = "payidem._native")]
pub(crate) struct Signer {
    pub(crate) inner: protocol::Signer,
}

#[pymethods]
impl Signer {
    #[new]
    fn new(
        py: Python<'_>,
        #[pyo3(from_py_with = field::key_id)] key_id: String,
        secret: &[u8],
    ) -> PyResult<Signer> {
        let inner = raise(py, protocol::Signer::new(&key_id, secret))?;
        Ok(Signer { inner })
    }

    /// The key id sent in `X-Api-Key`.
    #[getter]
    fn key_id(&self) -> &str {
        self.inner.key_id()
    }

    /// The headers of one signed attempt: `X-Api-Key`, `X-Timestamp`,
    /// `X-Nonce`, `X-Signature` and, when a key is given, `Idempotency-Key`.
    #[pyo3(signature = (method, path, body = None, idempotency_key = None, timestamp = None, nonce = None))]
    fn sign_attempt<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = field::method)] method: String,
        #[pyo3(from_py_with = field::path)] path: String,
        body: Option<&[u8]>,
        #[pyo3(from_py_with = optional_field::idempotency_key)] idempotency_key: Option<String>,
        timestamp: Option<&Bound<'py, PyAny>>,
        #[pyo3(from_py_with = optional_field::nonce)] nonce: Option<String>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let body = body.unwrap_or_default();
        let timestamp = unix_seconds(py, "timestamp", timestamp)?;
        let nonce = match nonce {
            Some(text) => raise(py, Nonce::parse(&text))?,
            None => OsNonceSource.next_nonce(),
        };
        let key = idempotency_key.unwrap_or_default();
        let signed = hash_sized(py, body.len(), || {
            self.inner
                .sign_attempt(&method, &path, &key, body, timestamp, nonce)
        });
        let signed = raise(py, signed)?;
        let headers = PyDict::new(py);
        for (name, value) in signed.headers() {
            headers.set_item(name, value)?;
        }
        Ok(headers)
    }

    /// The signature (64 lower-case hex digits) of explicit canonical parts.
    #[pyo3(signature = (method, path, timestamp, nonce, idempotency_key = None, body = None))]
    fn sign(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = field::method)] method: String,
        #[pyo3(from_py_with = field::path)] path: String,
        timestamp: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = field::nonce)] nonce: String,
        #[pyo3(from_py_with = optional_field::idempotency_key)] idempotency_key: Option<String>,
        body: Option<&[u8]>,
    ) -> PyResult<String> {
        let parts = Parts::new(py, method, path, timestamp, nonce, idempotency_key)?;
        let body = body.unwrap_or_default();
        let signature = hash_sized(py, body.len(), || self.inner.sign(&parts.canonical(), body));
        Ok(raise(py, signature)?.as_str().to_owned())
    }

    fn __repr__(&self) -> String {
        format!(
            "Signer(key_id={:?}, secret=<redacted>)",
            self.inner.key_id()
        )
    }
}

/// `method\npath\ntimestamp\nnonce\nidempotency_key\nbody_sha256`, checked.
#[pyfunction]
#[pyo3(signature = (method, path, timestamp, nonce, idempotency_key = None, body = None))]
pub(crate) fn canonical_string(
    py: Python<'_>,
    #[pyo3(from_py_with = field::method)] method: String,
    #[pyo3(from_py_with = field::path)] path: String,
    timestamp: &Bound<'_, PyAny>,
    #[pyo3(from_py_with = field::nonce)] nonce: String,
    #[pyo3(from_py_with = optional_field::idempotency_key)] idempotency_key: Option<String>,
    body: Option<&[u8]>,
) -> PyResult<String> {
    let parts = Parts::new(py, method, path, timestamp, nonce, idempotency_key)?;
    let body = body.unwrap_or_default();
    let text = hash_sized(py, body.len(), || {
        protocol::canonical_string(&parts.canonical(), body)
    });
    raise(py, text)
}

/// The explicit canonical parts `Signer.sign` and `canonical_string` take
/// (an absent idempotency key is the empty one; the timestamp as its text).
struct Parts {
    method: String,
    path: String,
    timestamp: String,
    nonce: String,
    idempotency_key: String,
}

impl Parts {
    fn new(
        py: Python<'_>,
        method: String,
        path: String,
        timestamp: &Bound<'_, PyAny>,
        nonce: String,
        idempotency_key: Option<String>,
    ) -> PyResult<Parts> {
        Ok(Parts {
            method,
            path,
            timestamp: timestamp_text(py, timestamp)?,
            nonce,
            idempotency_key: idempotency_key.unwrap_or_default(),
        })
    }

    fn canonical(&self) -> CanonicalParts<'_> {
        CanonicalParts {
            method: &self.method,
            path: &self.path,
            timestamp: &self.timestamp,
            nonce: &self.nonce,
            idempotency_key: &self.idempotency_key,
        }
    }
}

/// The body's SHA-256 as 64 lower-case hex digits.
#[pyfunction]
pub(crate) fn body_sha256_hex(py: Python<'_>, body: &[u8]) -> String {
    hash_sized(py, body.len(), || protocol::body_sha256_hex(body))
}
