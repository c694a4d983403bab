//! Python values to the core's argument types, with typed errors.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyString};

use crate::errors::invalid;

/// Bodies at least this large are hashed with the GIL released.
pub(crate) const DETACH_BODY_BYTES: usize = 64 * 1024;

/// Runs `f` with the GIL released when `body_len` makes it worth it.
pub(crate) fn hash_sized<T, F>(py: Python<'_>, body_len: usize, f: F) -> T
where
    F: FnOnce() -> T + Send,
    T: Send,
{
    if body_len >= DETACH_BODY_BYTES {
        py.detach(f)
    } else {
        f()
    }
}

/// The local clock in Unix seconds.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A duration in seconds (int or float) that must be positive and finite.
pub(crate) fn seconds(py: Python<'_>, field: &'static str, value: f64) -> PyResult<Duration> {
    match Duration::try_from_secs_f64(value) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(invalid(
            py,
            field,
            "must be a positive, finite number of seconds",
        )),
    }
}

/// A Unix timestamp: an `int` in 0..=2^64-1, or `None` for the local clock.
pub(crate) fn unix_seconds(
    py: Python<'_>,
    field: &'static str,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    match value {
        None => Ok(unix_now()),
        Some(v) if v.is_none() => Ok(unix_now()),
        Some(v) => {
            if !v.is_instance_of::<PyInt>() || v.is_instance_of::<pyo3::types::PyBool>() {
                return Err(PyTypeError::new_err(format!(
                    "{field} must be an int (Unix seconds) or None"
                )));
            }
            v.extract::<u64>()
                .map_err(|_| invalid(py, field, "must be 0..=18446744073709551615 Unix seconds"))
        }
    }
}

/// A timestamp as the canonical string's text: a `str` taken as is (its rule
/// is checked by the core), or a non-negative `int`.
pub(crate) fn timestamp_text(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(text.to_cow()?.into_owned());
    }
    unix_seconds(py, "timestamp", Some(value)).map(|t| t.to_string())
}

/// Headers given as a mapping (`dict`, any object with `items()`) or as a
/// sequence of `(name, value)` pairs; names and values must be `str`.
pub(crate) fn header_pairs(value: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<(String, String)>> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    if value.is_none() {
        return Ok(Vec::new());
    }
    let pair = |item: Bound<'_, PyAny>| -> PyResult<(String, String)> {
        let (name, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract().map_err(|_| {
            PyTypeError::new_err("headers must be a mapping or a sequence of (name, value) pairs")
        })?;
        let text = |v: &Bound<'_, PyAny>| -> PyResult<String> {
            v.cast::<PyString>()
                .map_err(|_| PyTypeError::new_err("header names and values must be str"))?
                .to_cow()
                .map(std::borrow::Cow::into_owned)
        };
        Ok((text(&name)?, text(&value)?))
    };
    if let Ok(dict) = value.cast::<PyDict>() {
        return dict.items().iter().map(pair).collect();
    }
    if value.is_instance_of::<PyString>() || value.is_instance_of::<pyo3::types::PyBytes>() {
        return Err(PyTypeError::new_err(
            "headers must be a mapping or a sequence of (name, value) pairs",
        ));
    }
    let items = if value.hasattr("items")? {
        value.call_method0("items")?
    } else {
        value.clone()
    };
    items
        .try_iter()
        .map_err(|_| {
            PyTypeError::new_err("headers must be a mapping or a sequence of (name, value) pairs")
        })?
        .map(|item| pair(item?))
        .collect()
}

/// Borrows owned header pairs as the core's `(&str, &str)` slices.
pub(crate) fn borrowed(pairs: &[(String, String)]) -> Vec<(&str, &str)> {
    pairs
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect()
}

/// A whole number for `field` in `0..=max`.
pub(crate) fn whole(py: Python<'_>, field: &'static str, value: i128, max: u64) -> PyResult<u64> {
    u64::try_from(value)
        .ok()
        .filter(|n| *n <= max)
        .ok_or_else(|| invalid(py, field, &format!("must be 0..={max}")))
}

/// `None` or the value's `Debug` text, for `__repr__`.
pub(crate) fn repr_opt<T: std::fmt::Debug>(value: &Option<T>) -> String {
    value
        .as_ref()
        .map_or_else(|| "None".to_owned(), |v| format!("{v:?}"))
}
