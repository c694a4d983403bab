//! `AttemptEvent`: what one attempt did, for logs and metrics.

use pyo3::prelude::*;

use payidem::client::AttemptEvent;

use crate::convert::repr_opt;

/// What happened in one attempt. Holds no secret and no body.
#[pyclass(frozen, module = "payidem._native", name = "AttemptEvent")]
pub(crate) struct PyAttemptEvent {
    /// The operation's order id.
    #[pyo3(get)]
    order_id: String,
    /// The operation's idempotency key.
    #[pyo3(get)]
    idempotency_key: String,
    /// The attempt's number over every call of the operation (1 = first).
    #[pyo3(get)]
    attempt: u32,
    /// `"operation"` (the operation's own request) or `"status_query"`.
    #[pyo3(get)]
    kind: &'static str,
    /// What the client does next: `settle`, `retry_now`, `retry_later`,
    /// `adjust_clock`, `query_status`, `query_later` or `give_up`.
    #[pyo3(get)]
    next: &'static str,
    /// Seconds waited before the next attempt, if any.
    #[pyo3(get)]
    wait: Option<f64>,
    /// The HTTP status, if a response came.
    #[pyo3(get)]
    status: Option<u16>,
    /// The response's error code, if any.
    #[pyo3(get)]
    error_code: Option<String>,
    /// The transport failure, if no response came.
    #[pyo3(get)]
    transport_error: Option<String>,
    /// Whether the platform replayed a stored answer.
    #[pyo3(get)]
    replayed: bool,
    /// Seconds the attempt took.
    #[pyo3(get)]
    duration: f64,
}

impl From<&AttemptEvent> for PyAttemptEvent {
    fn from(e: &AttemptEvent) -> Self {
        PyAttemptEvent {
            order_id: e.order_id.clone(),
            idempotency_key: e.idempotency_key.clone(),
            attempt: e.attempt,
            kind: e.kind.as_str(),
            next: e.next.as_str(),
            wait: e.wait.map(|w| w.as_secs_f64()),
            status: e.status,
            error_code: e.error_code.clone(),
            transport_error: e.transport_error.clone(),
            replayed: e.replayed,
            duration: e.duration.as_secs_f64(),
        }
    }
}

#[pymethods]
impl PyAttemptEvent {
    fn __repr__(&self) -> String {
        format!(
            "AttemptEvent(order_id={:?}, attempt={}, kind={:?}, next={:?}, status={}, error_code={}, transport_error={}, wait={}, replayed={}, duration={:.3})",
            self.order_id,
            self.attempt,
            self.kind,
            self.next,
            repr_opt(&self.status),
            repr_opt(&self.error_code),
            repr_opt(&self.transport_error),
            repr_opt(&self.wait),
            if self.replayed { "True" } else { "False" },
            self.duration
        )
    }
}
