//! payidem errors as the Python exceptions of `payidem.errors`.

use payidem::{Error, ErrorCode};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict};

static FROM_NATIVE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The Python exception for a core error: the class of `payidem.errors` that
/// stands for its code, carrying every piece of context the error holds.
pub(crate) fn to_pyerr(py: Python<'_>, error: &Error) -> PyErr {
    match build(py, error) {
        Ok(exception) => PyErr::from_value(exception),
        Err(import_failed) => import_failed,
    }
}

/// Converts a core result, raising its error as the typed Python exception.
pub(crate) fn raise<T>(py: Python<'_>, result: payidem::Result<T>) -> PyResult<T> {
    result.map_err(|e| to_pyerr(py, &e))
}

fn build<'py>(py: Python<'py>, error: &Error) -> PyResult<Bound<'py, PyAny>> {
    let factory = FROM_NATIVE.import(py, "payidem.errors", "_from_native")?;
    let context = PyDict::new(py);
    context.set_item("field", error.field())?;
    context.set_item("http_status", error.http_status())?;
    if error.code() == ErrorCode::Rejected || error.body().is_some() {
        context.set_item("status", error.http_status())?;
    }
    context.set_item("body", error.body().map(|b| PyBytes::new(py, b)))?;
    context.set_item("platform_code", error.platform_code())?;
    context.set_item("platform_message", error.platform_message())?;
    context.set_item("order_id", error.order_id())?;
    context.set_item("idempotency_key", error.idempotency_key())?;
    context.set_item("server_time", error.server_time())?;
    factory.call((error.code().as_str(), error.message()), Some(&context))
}

/// Every stable code the core defines, in number order, as `(number, name,
/// http_status, final)`: `payidem.errors` builds its class table from it and
/// refuses to import when a class is missing or extra.
pub(crate) fn error_codes() -> Vec<(u32, &'static str, Option<u16>, bool)> {
    ErrorCode::ALL
        .iter()
        .map(|c| (c.number(), c.as_str(), c.http_status(), c.is_final()))
        .collect()
}

/// An `invalid_argument` error raised from the binding itself (a Python value
/// that cannot be a valid field, e.g. a negative duration).
pub(crate) fn invalid(py: Python<'_>, field: &'static str, message: &str) -> PyErr {
    to_pyerr(py, &Error::invalid(field, message))
}
