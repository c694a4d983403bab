//! `AttemptEvent`: what one attempt did, for logs and metrics.
//!
//! The event is the frozen dataclass `payidem._types.AttemptEvent` (so that
//! users can build, compare, copy and pickle events in their own tests); this
//! module fills it from the core's event and gives Python the core's names
//! of attempt kinds and next actions.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

use payidem::client::AttemptEvent;

static EVENT_CLASS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The core's event as a `payidem.AttemptEvent`.
pub(crate) fn to_python<'py>(py: Python<'py>, e: &AttemptEvent) -> PyResult<Bound<'py, PyAny>> {
    let class = EVENT_CLASS.import(py, "payidem._types", "AttemptEvent")?;
    let fields = PyDict::new(py);
    fields.set_item("order_id", &e.order_id)?;
    fields.set_item("idempotency_key", &e.idempotency_key)?;
    fields.set_item("attempt", e.attempt)?;
    fields.set_item("kind", e.kind.as_str())?;
    fields.set_item("next", e.next.as_str())?;
    fields.set_item("wait", e.wait.map(|w| w.as_secs_f64()))?;
    fields.set_item("status", e.status)?;
    fields.set_item("error_code", e.error_code.as_deref())?;
    fields.set_item("transport_error", e.transport_error.as_deref())?;
    fields.set_item("replayed", e.replayed)?;
    fields.set_item("duration", e.duration.as_secs_f64())?;
    class.call((), Some(&fields))
}
