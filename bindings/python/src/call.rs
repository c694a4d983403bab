//! One call of a client's operation, sent by the caller's own HTTP stack
//! (`payidem.Call`, and through it the requests adapter and the httpx
//! transport): `payidem::client::Call`, which writes the journal itself.
//!
//! `begin`, `resume`, `step`, `report` and `cancel` may write the journal
//! (a durable write before the first attempt, the end after the last), so
//! each runs with the GIL released; the HTTP exchange happens in Python
//! between `step` and `report`.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use payidem::client::{Call, CallStep};
use payidem::operation::Outcome;

use crate::client::{outcome_tuple, NativeClient};
use crate::convert::{field, seconds, OperationArgs};
use crate::errors::{invalid, raise, to_pyerr};
use crate::operation::{attempt_tuple, call_time, end_tuple, reply_arg};

fn call_step_kind(step: &CallStep) -> &'static str {
    step.kind().as_str()
}

/// The native call; `payidem.Call` is the public face.
#[pyclass(frozen, module = "payidem._native", name = "Call")]
pub(crate) struct NativeCall {
    inner: Mutex<Call>,
    client: Arc<payidem::Client>,
    order_id: String,
    idempotency_key: String,
}

impl NativeCall {
    fn new(client: Arc<payidem::Client>, call: Call) -> NativeCall {
        NativeCall {
            order_id: call.order_id().to_owned(),
            idempotency_key: call.idempotency_key().to_owned(),
            inner: Mutex::new(call),
            client,
        }
    }

    fn call(&self) -> MutexGuard<'_, Call> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The caller's clocks, when it gives them: `now` and `elapsed` together,
/// or neither (the system's clocks).
fn told_time(
    py: Python<'_>,
    now: Option<i128>,
    elapsed: Option<f64>,
) -> PyResult<Option<payidem::operation::CallTime>> {
    match (now, elapsed) {
        (None, None) => Ok(None),
        (Some(now), Some(elapsed)) => call_time(py, now, elapsed).map(Some),
        _ => Err(invalid(py, "now", "now and elapsed are given together")),
    }
}

fn optional_deadline(py: Python<'_>, deadline: Option<f64>) -> PyResult<Option<Duration>> {
    deadline.map(|d| seconds(py, "deadline", d)).transpose()
}

/// The outcome tuple of a success, or the typed exception (not raised) of
/// a failure.
fn result_object<'py>(
    py: Python<'py>,
    result: payidem::Result<Outcome>,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match result {
        Ok(outcome) => outcome_tuple(py, outcome).into_pyobject(py)?.into_any(),
        Err(e) => to_pyerr(py, &e).into_value(py).into_bound(py).into_any(),
    })
}

#[pymethods]
impl NativeCall {
    /// Starts a call of `operation` (see `convert::OperationArgs`; checked,
    /// then journaled) with the
    /// client's journal, signer, budget and clock; see `Client::begin`.
    #[staticmethod]
    #[pyo3(signature = (client, operation, *, deadline))]
    fn begin<'py>(
        py: Python<'py>,
        client: PyRef<'py, NativeClient>,
        #[pyo3(from_py_with = OperationArgs::extract)] operation: OperationArgs<'py>,
        deadline: Option<f64>,
    ) -> PyResult<NativeCall> {
        let core = client.client()?;
        let deadline = optional_deadline(py, deadline)?;
        let spec = operation.spec();
        let call = raise(py, py.detach(|| core.begin(&spec, deadline)))?;
        Ok(NativeCall::new(core, call))
    }

    /// Starts a call resuming an unsettled operation of the journal; see
    /// `Client::begin_resume`.
    #[staticmethod]
    #[pyo3(signature = (client, order_id, *, deadline))]
    fn resume(
        py: Python<'_>,
        client: PyRef<'_, NativeClient>,
        #[pyo3(from_py_with = field::order_id)] order_id: String,
        deadline: Option<f64>,
    ) -> PyResult<NativeCall> {
        let core = client.client()?;
        let deadline = optional_deadline(py, deadline)?;
        let call = raise(py, py.detach(|| core.begin_resume(&order_id, deadline)))?;
        Ok(NativeCall::new(core, call))
    }

    #[getter]
    fn order_id(&self) -> &str {
        &self.order_id
    }

    #[getter]
    fn idempotency_key(&self) -> &str {
        &self.idempotency_key
    }

    /// Whether the call is over (the next step is `done`).
    #[getter]
    fn done(&self, py: Python<'_>) -> bool {
        py.detach(|| self.call().is_done())
    }

    /// How the machine ended the call, once it has (an end tuple, as
    /// `Operation.abandon` gives), else `None`.
    #[getter]
    fn end<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let call = self.call();
        let (order_id, key) = (call.order_id(), call.idempotency_key());
        call.end()
            .map(|end| end_tuple(py, end, order_id, key, call.attempts()))
            .transpose()
    }

    /// The next step: `("send", attempt_tuple, timeout_seconds, url)`,
    /// `("wait", seconds)` or `("done", result)` where `result` is an
    /// outcome tuple or the typed exception of the end (not raised). With
    /// `now` (Unix seconds) and `elapsed` (seconds since the call began),
    /// at the caller's clocks, which the call then keeps to.
    #[pyo3(signature = (*, now=None, elapsed=None))]
    fn step<'py>(
        &self,
        py: Python<'py>,
        now: Option<i128>,
        elapsed: Option<f64>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let told = told_time(py, now, elapsed)?;
        let step = py.detach(|| match told {
            Some(at) => self.call().step_at(at),
            None => self.call().step(),
        });
        let kind = call_step_kind(&step);
        match step {
            CallStep::Send { attempt, timeout } => {
                let url = self.client.url(&attempt.path);
                (
                    kind,
                    attempt_tuple(py, &attempt)?,
                    timeout.as_secs_f64(),
                    url,
                )
                    .into_pyobject(py)
            }
            CallStep::Wait(wait) => (kind, wait.as_secs_f64()).into_pyobject(py),
            CallStep::Done(result) => (kind, result_object(py, result)?).into_pyobject(py),
        }
    }

    /// Reports what the attempt of the last `send` step produced (the
    /// tuple of `payidem.Reply`, see `operation::reply_arg`); ignored when no attempt is in flight. `now` and
    /// `elapsed` as for `step`.
    #[pyo3(signature = (reply, *, now=None, elapsed=None))]
    fn report(
        &self,
        py: Python<'_>,
        reply: &Bound<'_, PyAny>,
        now: Option<i128>,
        elapsed: Option<f64>,
    ) -> PyResult<()> {
        let reply = reply_arg(py, reply)?;
        let told = told_time(py, now, elapsed)?;
        py.detach(|| match told {
            Some(at) => self.call().report_at(reply, at),
            None => self.call().report(reply),
        });
        Ok(())
    }

    /// Ends the call at the caller's request; returns the outcome tuple, or
    /// raises the end's error (`Cancelled` with the key kept, unless the
    /// machine had already ended).
    fn cancel<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let result = py.detach(|| self.call().cancel());
        match result {
            Ok(outcome) => Ok(outcome_tuple(py, outcome).into_pyobject(py)?.into_any()),
            Err(e) => Err(to_pyerr(py, &e)),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Call(order_id={:?}, idempotency_key={:?})",
            self.order_id, self.idempotency_key
        )
    }
}

/// The request target of `url` relative to the client's base URL (its
/// origin and path prefix stripped), for `Call.begin`; `InvalidArgument`
/// naming `url` when `url` is not under the base URL (a signed request is
/// never sent elsewhere).
#[pyfunction]
pub(crate) fn relative_path(
    py: Python<'_>,
    client: PyRef<'_, NativeClient>,
    #[pyo3(from_py_with = field::path)] url: String,
) -> PyResult<String> {
    let core = client.client()?;
    core.target_of(&url).map_err(|e| to_pyerr(py, &e))
}
