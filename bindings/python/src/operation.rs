//! The operation state machine (`payidem::operation::Operation`) for
//! Python: `payidem.Operation` drives one call of one operation with time
//! given by the caller, so a test (or a caller with its own journal) runs
//! exactly the transitions `payidem.Client` runs.
//!
//! Everything crosses as plain tuples; `payidem.operation` wraps them in
//! frozen dataclasses. No rule is applied here: every decision is the core's.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use payidem::operation::{
    Attempt, CallLimits, CallTime, End, Operation, OperationSpec, OperationState, OsEntropy,
    Progress, Reaction, Reply, ReplyKind, Step,
};
use payidem::policy::{ClockOffset, RetryBudget, RetryBudgetConfig};

use crate::client::{outcome_tuple, response_tuple};
use crate::convert::{self, field, optional_field, whole, HeaderTexts};
use crate::errors::{invalid, raise, to_pyerr};
use crate::signing::Signer;

/// The reply that `payidem.Reply` hands over, the tuple `(kind, status,
/// headers, body, reason)` ([`reply`] reads it), for `Operation.handle`
/// and `Call.report`.
pub(crate) fn reply_arg(py: Python<'_>, arg: &Bound<'_, PyAny>) -> PyResult<Reply> {
    type Parts<'py> = (
        String,
        Option<i128>,
        Option<Bound<'py, PyAny>>,
        Option<Bound<'py, PyBytes>>,
        Option<String>,
    );
    let (kind, status, headers, body, reason): Parts<'_> = arg.extract()?;
    let body = body.as_ref().map(|b| b.as_bytes());
    reply(py, "kind", &kind, status, headers.as_ref(), body, reason)
}

/// The name of `step` (`payidem.operation.StepKind`).
fn step_kind(step: &Step) -> &'static str {
    step.kind().as_str()
}

/// A reply as the caller reports it: `kind` is a [`ReplyKind`] name;
/// a response needs `status` (the core's [`Response::STATUS_RANGE`]) and takes `headers` and `body`,
/// the others a `reason` for people. `replayed` is the core's reading of
/// `Idempotent-Replayed` ([`Response::new`]).
pub(crate) fn reply(
    py: Python<'_>,
    kind_field: &'static str,
    kind: &str,
    status: Option<i128>,
    headers: Option<&Bound<'_, PyAny>>,
    body: Option<&[u8]>,
    reason: Option<String>,
) -> PyResult<Reply> {
    let kind = ReplyKind::from_name(kind).ok_or_else(|| {
        invalid(
            py,
            kind_field,
            "must be 'response', 'not_sent' or 'sent_no_response'",
        )
    })?;
    let (status, headers, body) = if kind == ReplyKind::Response {
        // A number that is no u16 is no HTTP status either: 0 stands for
        // it, which the core's status check refuses.
        let status = status.and_then(|s| u16::try_from(s).ok()).unwrap_or(0);
        let texts = HeaderTexts::collect(headers)?;
        let headers = texts
            .pairs()?
            .into_iter()
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect();
        (status, headers, body.unwrap_or_default().to_vec())
    } else {
        (0, Vec::new(), Vec::new())
    };
    Reply::reported(kind, status, headers, body, reason.as_deref()).map_err(|e| to_pyerr(py, &e))
}

/// `(kind, number, method, path, headers, body)` of one signed attempt.
pub(crate) fn attempt_tuple<'py>(py: Python<'py>, a: &Attempt) -> PyResult<Bound<'py, PyTuple>> {
    let headers: Vec<(&str, &str)> = a.headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    PyTuple::new(
        py,
        [
            a.kind.as_str().into_pyobject(py)?.into_any(),
            a.number.into_pyobject(py)?.into_any(),
            a.method.as_str().into_pyobject(py)?.into_any(),
            a.path.as_str().into_pyobject(py)?.into_any(),
            headers.into_pyobject(py)?.into_any(),
            PyBytes::new(py, &a.body).into_any(),
        ],
    )
}

/// `(name, final, landed, state, response, reason, result)` of an end:
/// `response` is `(status, headers, body, replayed)` for the ends that hold
/// an answer, `result` the outcome tuple of a success or the typed
/// exception (not raised) the end stands for.
pub(crate) fn end_tuple<'py>(
    py: Python<'py>,
    end: &End,
    order_id: &str,
    key: &str,
    attempts: u32,
) -> PyResult<Bound<'py, PyTuple>> {
    let (response, reason) = match end {
        End::Succeeded(r) | End::Rejected(r) | End::Conflict(r) => (Some(r.clone()), None),
        End::Refused { response, reason } => (Some(response.clone()), Some(reason.as_str())),
        End::NotSent { reason } | End::Unknown { reason } | End::KeyExpired { reason } => {
            (None, Some(reason.as_str()))
        }
    };
    let result = match end.clone().into_result(order_id, key, attempts) {
        Ok(outcome) => outcome_tuple(py, outcome).into_pyobject(py)?.into_any(),
        Err(e) => to_pyerr(py, &e).into_value(py).into_bound(py).into_any(),
    };
    PyTuple::new(
        py,
        [
            end.as_str().into_pyobject(py)?.into_any(),
            pyo3::types::PyBool::new(py, end.is_final())
                .to_owned()
                .into_any(),
            end.landed().as_str().into_pyobject(py)?.into_any(),
            end.state().as_str().into_pyobject(py)?.into_any(),
            response
                .map(|r| response_tuple(py, r))
                .into_pyobject(py)?
                .into_any(),
            reason.into_pyobject(py)?.into_any(),
            result,
        ],
    )
}

/// `(next, wait_seconds, status, error_code, landed)` of a reaction.
type ReactionTuple = (
    &'static str,
    Option<f64>,
    Option<u16>,
    Option<String>,
    &'static str,
);

fn reaction_tuple(r: Reaction) -> ReactionTuple {
    (
        r.next.as_str(),
        r.wait.map(|w| w.as_secs_f64()),
        r.status,
        r.error_code,
        r.landed.as_str(),
    )
}

/// A duration of elapsed time in seconds (finite, not negative), rounded to
/// the nanosecond so that whole milliseconds given as floats stay exact.
fn elapsed(py: Python<'_>, value: f64) -> PyResult<Duration> {
    if !value.is_finite() || value < 0.0 || value > u64::MAX as f64 / 1e9 {
        return Err(invalid(
            py,
            "elapsed",
            "must be a finite, non-negative number of seconds",
        ));
    }
    Ok(Duration::from_nanos((value * 1e9).round() as u64))
}

/// The shared retry budget (`payidem.RetryBudget`): a token bucket several
/// operations spend from.
#[pyclass(frozen, module = "payidem._native", name = "RetryBudget")]
pub(crate) struct NativeRetryBudget {
    inner: Arc<RetryBudget>,
    #[pyo3(get)]
    capacity: u32,
    #[pyo3(get)]
    retry_cost: u32,
    #[pyo3(get)]
    timeout_cost: u32,
    #[pyo3(get)]
    success_refund: u32,
}

#[pymethods]
impl NativeRetryBudget {
    /// Every setting left `None` keeps the core's default
    /// (`RetryBudgetConfig::default()`).
    #[new]
    #[pyo3(signature = (capacity=None, retry_cost=None, timeout_cost=None, success_refund=None))]
    fn new(
        py: Python<'_>,
        capacity: Option<i128>,
        retry_cost: Option<i128>,
        timeout_cost: Option<i128>,
        success_refund: Option<i128>,
    ) -> PyResult<NativeRetryBudget> {
        let mut c = RetryBudgetConfig::default();
        let count = |field: &'static str, v: Option<i128>, slot: &mut u32| {
            if let Some(v) = v {
                *slot = whole(py, field, v, u64::from(u32::MAX))? as u32;
            }
            PyResult::Ok(())
        };
        count("capacity", capacity, &mut c.capacity)?;
        count("retry_cost", retry_cost, &mut c.retry_cost)?;
        count("timeout_cost", timeout_cost, &mut c.timeout_cost)?;
        count("success_refund", success_refund, &mut c.success_refund)?;
        let inner = Arc::new(RetryBudget::new(c));
        let c = inner.config();
        Ok(NativeRetryBudget {
            capacity: c.capacity,
            retry_cost: c.retry_cost,
            timeout_cost: c.timeout_cost,
            success_refund: c.success_refund,
            inner,
        })
    }

    /// Tokens left now.
    #[getter]
    fn available(&self) -> u32 {
        self.inner.available()
    }

    fn __repr__(&self) -> String {
        let c = self.inner.config();
        format!(
            "RetryBudget(capacity={}, retry_cost={}, timeout_cost={}, success_refund={}, available={})",
            c.capacity,
            c.retry_cost,
            c.timeout_cost,
            c.success_refund,
            self.inner.available()
        )
    }
}

/// The core's limits of one call by the Python keyword that sets each
/// (`payidem.Operation`'s defaults): seconds for durations.
#[pyfunction]
pub(crate) fn call_limits_defaults() -> Vec<(&'static str, f64)> {
    let l = CallLimits::default();
    vec![
        ("max_attempts", f64::from(l.policy.max_attempts)),
        ("backoff_base", l.policy.base.as_secs_f64()),
        ("backoff_cap", l.policy.cap.as_secs_f64()),
        ("deadline", l.policy.deadline.as_secs_f64()),
        ("key_retention", l.key_retention_secs as f64),
        ("max_clock_offset", l.max_clock_offset.as_secs_f64()),
    ]
}

/// The native machine; `payidem.Operation` is the public face.
#[pyclass(frozen, module = "payidem._native", name = "Operation")]
pub(crate) struct NativeOperation {
    inner: Mutex<Operation>,
}

impl NativeOperation {
    fn machine(&self) -> MutexGuard<'_, Operation> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub(crate) fn call_time(py: Python<'_>, now_unix: i128, elapsed_secs: f64) -> PyResult<CallTime> {
    Ok(CallTime {
        unix: whole(py, "now", now_unix, u64::MAX)?,
        elapsed: elapsed(py, elapsed_secs)?,
    })
}

#[pymethods]
impl NativeOperation {
    /// Checks and freezes the operation, then starts a call of it from the
    /// journal state `state` with `attempts` made so far, first prepared at
    /// `created_at`, at local time `now`. The limits are the keywords of
    /// `convert::SETUP_KEYWORDS`; one absent or `None` keeps the core's
    /// default.
    #[new]
    #[pyo3(signature = (order_id, method, path, body, *, idempotency_key, status_path, state, attempts, created_at, now, first_recorded=false, clock_offset=0, clock_trusted=true, retry_budget=None, **limits))]
    fn new<'py>(
        py: Python<'py>,
        #[pyo3(from_py_with = field::order_id)] order_id: String,
        #[pyo3(from_py_with = field::method)] method: String,
        #[pyo3(from_py_with = field::path)] path: String,
        body: &[u8],
        #[pyo3(from_py_with = optional_field::idempotency_key)] idempotency_key: Option<String>,
        #[pyo3(from_py_with = optional_field::status_path)] status_path: Option<String>,
        state: &str,
        attempts: i128,
        created_at: i128,
        now: i128,
        first_recorded: bool,
        clock_offset: i64,
        clock_trusted: bool,
        retry_budget: Option<PyRef<'py, NativeRetryBudget>>,
        limits: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<NativeOperation> {
        let state = OperationState::from_name(state).ok_or_else(|| {
            invalid(
                py,
                "state",
                "must be one of pending, in_flight, unknown, succeeded, rejected, conflict",
            )
        })?;
        let frozen = raise(
            py,
            OperationSpec {
                order_id: &order_id,
                method: &method,
                path: &path,
                body,
                idempotency_key: idempotency_key.as_deref(),
                status_path: status_path.as_deref(),
            }
            .freeze(),
        )?;
        // The limits (`convert::SETUP_KEYWORDS`) go to the core's settings
        // rules as given.
        let mut setup = convert::setup_of_keywords(py, limits, "Operation")?;
        setup.clock = ClockOffset::from_seconds(clock_offset);
        setup.clock_trusted = clock_trusted;
        setup.budget = retry_budget.map(|b| Arc::clone(&b.inner));
        let progress = Progress {
            state,
            attempts: whole(py, "attempts", attempts, u64::from(u32::MAX))? as u32,
            created_at: whole(py, "created_at", created_at, u64::MAX)?,
            first_recorded,
        };
        let now = whole(py, "now", now, u64::MAX)?;
        let machine = raise(py, Operation::start(&frozen, progress, setup, now))?;
        Ok(NativeOperation {
            inner: Mutex::new(machine),
        })
    }

    #[getter]
    fn order_id(&self) -> String {
        self.machine().order_id().to_owned()
    }

    #[getter]
    fn idempotency_key(&self) -> String {
        self.machine().idempotency_key().to_owned()
    }

    /// Attempts over every call so far.
    #[getter]
    fn attempts(&self) -> u32 {
        self.machine().attempts()
    }

    /// Whether an attempt may have taken effect (`no`, `maybe`, `yes`).
    #[getter]
    fn landed(&self) -> &'static str {
        self.machine().landed().as_str()
    }

    /// The clock offset in force, in seconds.
    #[getter]
    fn clock_offset(&self) -> i64 {
        self.machine().clock_offset().seconds()
    }

    /// The next step at local time `now` (Unix seconds) and `elapsed`
    /// seconds since the call started: `("persist", attempt, first)`,
    /// `("send", attempt_tuple)`, `("wait", seconds)` or `("end",
    /// end_tuple)`.
    fn poll<'py>(
        &self,
        py: Python<'py>,
        signer: PyRef<'py, Signer>,
        now: i128,
        elapsed: f64,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let now = call_time(py, now, elapsed)?;
        let mut machine = self.machine();
        let step = machine.poll(&signer.inner, now, &OsEntropy);
        let kind = step_kind(&step);
        match step {
            Step::Persist(p) => (kind, p.attempt, p.first).into_pyobject(py),
            Step::Send(a) => (kind, attempt_tuple(py, &a)?).into_pyobject(py),
            Step::Wait(d) => (kind, d.as_secs_f64()).into_pyobject(py),
            Step::End(end) => {
                let t = end_tuple(
                    py,
                    &end,
                    machine.order_id(),
                    machine.idempotency_key(),
                    machine.attempts(),
                )?;
                (kind, t).into_pyobject(py)
            }
        }
    }

    /// Confirms the record the last persist step asked for.
    fn persisted(&self) {
        self.machine().persisted();
    }

    /// Reports the last attempt's result (see [`reply_arg`]) at `now` /
    /// `elapsed`; returns the machine's reaction `(next, wait, status, error_code, landed)`.
    #[pyo3(signature = (reply, *, now, elapsed))]
    fn handle(
        &self,
        py: Python<'_>,
        reply: &Bound<'_, PyAny>,
        now: i128,
        elapsed: f64,
    ) -> PyResult<ReactionTuple> {
        let reply = reply_arg(py, reply)?;
        let now = call_time(py, now, elapsed)?;
        Ok(reaction_tuple(
            self.machine().handle(reply, now, &OsEntropy),
        ))
    }

    /// Ends the call now as a caller's cancel does; returns the end tuple.
    fn abandon<'py>(&self, py: Python<'py>, reason: &str) -> PyResult<Bound<'py, PyTuple>> {
        let mut machine = self.machine();
        let end = machine.abandon(reason);
        end_tuple(
            py,
            &end,
            machine.order_id(),
            machine.idempotency_key(),
            machine.attempts(),
        )
    }

    fn __repr__(&self) -> String {
        let m = self.machine();
        format!(
            "Operation(order_id={:?}, idempotency_key={:?}, attempts={}, landed={:?})",
            m.order_id(),
            m.idempotency_key(),
            m.attempts(),
            m.landed().as_str()
        )
    }
}
