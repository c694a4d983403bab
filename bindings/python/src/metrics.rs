//! Metrics of a client or a verifier (JSON and Prometheus text), the
//! client's event listener (attempts, call ends, journal failures as JSON)
//! and the core's log-level policy, for `payidem.metrics`,
//! `payidem.prometheus` and `payidem.logs`.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use payidem::client::{attempt_level, call_end_level, Event, LogLevel};
use payidem::operation::NextAction;

use crate::client::NativeClient;
use crate::verifying::Verifier;

/// The level names of the core's policy, quietest first.
pub(crate) fn log_levels() -> Vec<&'static str> {
    LogLevel::ALL.iter().map(|l| l.as_str()).collect()
}

/// The client's metrics: JSON text, or Prometheus text when `prometheus`.
#[pyfunction]
#[pyo3(signature = (client, prometheus = false))]
pub(crate) fn client_metrics(
    py: Python<'_>,
    client: &NativeClient,
    prometheus: bool,
) -> PyResult<String> {
    let client = client.client()?;
    let snapshot = py.detach(|| client.metrics());
    Ok(if prometheus {
        snapshot.to_prometheus()
    } else {
        snapshot.to_json()
    })
}

/// The verifier's metrics: JSON text, or Prometheus text when `prometheus`.
#[pyfunction]
#[pyo3(signature = (verifier, prometheus = false))]
pub(crate) fn verifier_metrics(verifier: &Verifier, prometheus: bool) -> String {
    let snapshot = verifier.read().metrics();
    if prometheus {
        snapshot.to_prometheus()
    } else {
        snapshot.to_json()
    }
}

/// The core's level (`debug`, `info`, `warn`) of an attempt numbered
/// `attempt` answered with `status` after which the client does `next`.
#[pyfunction]
#[pyo3(signature = (attempt, next, status = None))]
pub(crate) fn attempt_log_level(
    attempt: u32,
    next: &str,
    status: Option<u16>,
) -> PyResult<&'static str> {
    let next = NextAction::ALL
        .into_iter()
        .find(|n| n.as_str() == next)
        .ok_or_else(|| PyValueError::new_err(format!("next: {next:?} is not a next action")))?;
    Ok(attempt_level(attempt, next, status).as_str())
}

/// The core's level of a call that ended as `end` after `attempts`.
#[pyfunction]
pub(crate) fn call_end_log_level(end: &str, attempts: u32) -> &'static str {
    call_end_level(end, attempts).as_str()
}

/// Sets (or with `None` removes) the callable receiving every event of the
/// client as JSON text. An exception in it is handled by
/// `callback_failed`: logged to the `payidem` logger and swallowed (a
/// Ctrl-C stops the call instead).
#[pyfunction]
pub(crate) fn set_event_listener(
    client: &NativeClient,
    callback: Option<Py<PyAny>>,
) -> PyResult<()> {
    let client = client.client()?;
    let listener = callback.map(|callback| {
        let listener: payidem::client::EventListener = Arc::new(move |event: &Event| {
            let text = event.to_json();
            Python::attach(|py| {
                if let Err(err) = callback.call1(py, (text,)) {
                    crate::client::callback_failed(py, err, "payidem: the on_event hook raised");
                }
            });
        });
        listener
    });
    client.set_event_listener(listener);
    Ok(())
}
