//! The native side of `payidem.Client`: the core's blocking client, called
//! with the GIL released, interruptible by Ctrl-C between attempts.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use payidem::client::{AttemptEvent, RetryBudgetConfig};
use payidem::journal::OperationRecord;
use payidem::operation::Response;
use payidem::policy::RetryPolicy;
use payidem::{CallOptions, ClientConfig, JournalChoice, OperationSpec, Outcome};

use crate::convert::{field, optional_field, optional_path_field, seconds, whole};
use crate::errors::{raise, to_pyerr};
use crate::events::PyAttemptEvent;

/// `(status, headers, body, replayed)`.
type ResponseTuple<'py> = (u16, Vec<(String, String)>, Bound<'py, PyBytes>, bool);
/// `(order_id, idempotency_key, attempts, status, headers, body, replayed)`.
type OutcomeTuple<'py> = (
    String,
    String,
    u32,
    u16,
    Vec<(String, String)>,
    Bound<'py, PyBytes>,
    bool,
);
/// `(order_id, state, attempts, idempotency_key, created_at, updated_at,
/// method, path, status_path, body_sha256)`.
type StatusTuple = (
    String,
    &'static str,
    u32,
    String,
    u64,
    u64,
    String,
    String,
    Option<String>,
    String,
);

fn response_tuple(py: Python<'_>, r: Response) -> ResponseTuple<'_> {
    (r.status, r.headers, PyBytes::new(py, &r.body), r.replayed)
}

fn outcome_tuple(py: Python<'_>, o: Outcome) -> OutcomeTuple<'_> {
    let r = o.response;
    (
        o.order_id,
        o.idempotency_key,
        o.attempts,
        r.status,
        r.headers,
        PyBytes::new(py, &r.body),
        r.replayed,
    )
}

fn status_tuple(record: OperationRecord) -> StatusTuple {
    let op = record.operation;
    (
        op.order_id,
        record.state.as_str(),
        record.attempts,
        op.idempotency_key,
        record.created_at,
        record.updated_at,
        op.method,
        op.path,
        op.status_path,
        op.body_sha256,
    )
}

/// Calls `on_attempt` with the GIL held; an exception in it is logged to the
/// `payidem` logger and swallowed, so a broken hook never breaks a payment.
fn event_hook(callback: Py<PyAny>) -> payidem::client::EventHook {
    Arc::new(move |event: &AttemptEvent| {
        Python::attach(|py| {
            let called = Py::new(py, PyAttemptEvent::from(event))
                .and_then(|e| callback.call1(py, (e,)).map(drop));
            if let Err(err) = called {
                log_hook_failure(py, err);
            }
        });
    })
}

fn log_hook_failure(py: Python<'_>, err: PyErr) {
    let logged = (|| -> PyResult<()> {
        let logger = py
            .import("logging")?
            .call_method1("getLogger", ("payidem",))?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("exc_info", err.clone_ref(py).into_value(py))?;
        logger.call_method(
            "error",
            ("payidem: the on_attempt hook raised; the payment goes on",),
            Some(&kwargs),
        )?;
        Ok(())
    })();
    if logged.is_err() {
        err.write_unraisable(py, None);
    }
}

/// Runs one core call with the GIL released. Between attempts and during
/// waits the call re-acquires the GIL to run Python's signal handlers and the
/// caller's `cancel` callable; when either fires, the core ends the call as
/// `cancelled` (the operation keeps its key) and the handler's exception
/// (e.g. `KeyboardInterrupt`) is raised with the `Cancelled` error as its
/// context.
fn interruptible<F>(
    py: Python<'_>,
    cancel: Option<&Py<PyAny>>,
    deadline: Option<Duration>,
    call: F,
) -> PyResult<Outcome>
where
    F: for<'a> FnOnce(CallOptions<'a>) -> payidem::Result<Outcome> + Send,
{
    let raised: Mutex<Option<PyErr>> = Mutex::new(None);
    let keep = |err: PyErr| {
        *raised.lock().unwrap_or_else(|p| p.into_inner()) = Some(err);
        true
    };
    let should_stop = || -> bool {
        Python::attach(|py| {
            if let Err(signal) = py.check_signals() {
                return keep(signal);
            }
            match cancel {
                None => false,
                Some(cancel) => match cancel.call0(py).and_then(|v| v.bind(py).is_truthy()) {
                    Ok(stop) => stop,
                    Err(err) => keep(err),
                },
            }
        })
    };
    let result = py.detach(|| {
        call(CallOptions {
            cancel: Some(&should_stop),
            deadline,
        })
    });
    let raised = raised.into_inner().unwrap_or_else(|p| p.into_inner());
    match (result, raised) {
        (Ok(outcome), None) => Ok(outcome),
        (Ok(_), Some(signal)) => Err(signal),
        (Err(e), None) => Err(to_pyerr(py, &e)),
        (Err(e), Some(signal)) => {
            signal.set_context(py, Some(to_pyerr(py, &e)));
            Err(signal)
        }
    }
}

/// The native client; `payidem.Client` is the public face.
#[pyclass(frozen, module = "payidem._native", name = "Client")]
pub(crate) struct NativeClient {
    inner: RwLock<Option<Arc<payidem::Client>>>,
    key_id: String,
}

impl NativeClient {
    fn client(&self) -> PyResult<Arc<payidem::Client>> {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| PyValueError::new_err("this payidem.Client is closed"))
    }
}

/// The core's reading of the `journal` setting, so that every language means
/// the same by it: `None` (or `""`) is the durable default journal,
/// `":memory:"` memory only, anything else a SQLite file. A path that is not
/// UTF-8 can only be a file.
fn journal_choice(journal: Option<PathBuf>) -> JournalChoice {
    match journal {
        None => JournalChoice::from_setting(None),
        Some(path) => match path.to_str() {
            Some(setting) => JournalChoice::from_setting(Some(setting)),
            None => JournalChoice::Sqlite(path),
        },
    }
}

/// Where the durable default journal of this user is (`XDG_STATE_HOME` or
/// `HOME`, read now), as a string; `JournalError` when neither is an
/// absolute path.
#[pyfunction]
pub(crate) fn default_journal_path(py: Python<'_>) -> PyResult<std::ffi::OsString> {
    raise(py, payidem::journal::default_journal_path()).map(PathBuf::into_os_string)
}

fn optional_seconds(
    py: Python<'_>,
    field: &'static str,
    value: Option<f64>,
) -> PyResult<Option<Duration>> {
    value.map(|v| seconds(py, field, v)).transpose()
}

#[pymethods]
impl NativeClient {
    #[new]
    #[pyo3(signature = (base_url, key_id, secret, *, journal, connect_timeout, request_timeout, max_attempts, backoff_base, backoff_cap, deadline, key_retention, settled_retention, retry_budget, on_attempt, allow_insecure_http=false, proxy=None, proxy_from_env=false, ca_bundle=None, client_cert=None, client_key=None, max_clock_offset=600.0))]
    fn new(
        py: Python<'_>,
        #[pyo3(from_py_with = field::base_url)] base_url: String,
        #[pyo3(from_py_with = field::key_id)] key_id: String,
        secret: &[u8],
        #[pyo3(from_py_with = optional_path_field::journal)] journal: Option<PathBuf>,
        connect_timeout: f64,
        request_timeout: f64,
        max_attempts: i128,
        backoff_base: f64,
        backoff_cap: f64,
        deadline: f64,
        key_retention: f64,
        settled_retention: f64,
        retry_budget: i128,
        on_attempt: Option<Py<PyAny>>,
        allow_insecure_http: bool,
        #[pyo3(from_py_with = optional_field::proxy)] proxy: Option<String>,
        proxy_from_env: bool,
        #[pyo3(from_py_with = optional_path_field::ca_bundle)] ca_bundle: Option<PathBuf>,
        #[pyo3(from_py_with = optional_path_field::client_cert)] client_cert: Option<PathBuf>,
        #[pyo3(from_py_with = optional_path_field::client_key)] client_key: Option<PathBuf>,
        max_clock_offset: f64,
    ) -> PyResult<NativeClient> {
        let mut config = ClientConfig::new(base_url, key_id.clone());
        config.journal = journal_choice(journal);
        config.connect_timeout = seconds(py, "connect_timeout", connect_timeout)?;
        config.request_timeout = seconds(py, "request_timeout", request_timeout)?;
        config.retry = RetryPolicy {
            base: seconds(py, "backoff_base", backoff_base)?,
            cap: seconds(py, "backoff_cap", backoff_cap)?,
            max_attempts: whole(py, "max_attempts", max_attempts, u64::from(u32::MAX))? as u32,
            deadline: seconds(py, "deadline", deadline)?,
        };
        config.key_retention = seconds(py, "key_retention", key_retention)?;
        config.settled_retention = seconds(py, "settled_retention", settled_retention)?;
        config.retry_budget = RetryBudgetConfig {
            capacity: whole(py, "retry_budget", retry_budget, u64::from(u32::MAX))? as u32,
            ..RetryBudgetConfig::default()
        };
        config.allow_insecure_http = allow_insecure_http;
        config.proxy = proxy.filter(|p| !p.is_empty());
        config.proxy_from_env = proxy_from_env;
        let path = |p: Option<PathBuf>| p.filter(|p| !p.as_os_str().is_empty());
        config.ca_bundle = path(ca_bundle);
        config.client_cert = path(client_cert);
        config.client_key = path(client_key);
        // 0 is allowed here: the clock is then never adjusted.
        config.max_clock_offset = if max_clock_offset == 0.0 {
            Duration::ZERO
        } else {
            seconds(py, "max_clock_offset", max_clock_offset)?
        };
        let client = raise(py, py.detach(|| payidem::Client::new(config, secret)))?;
        let client = match on_attempt {
            Some(callback) if !callback.is_none(py) => client.with_event_hook(event_hook(callback)),
            _ => client,
        };
        Ok(NativeClient {
            inner: RwLock::new(Some(Arc::new(client))),
            key_id,
        })
    }

    #[getter]
    fn key_id(&self) -> &str {
        &self.key_id
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    /// Forgets the core client; calls already running finish first, then the
    /// journal closes. Idempotent.
    fn close(&self, py: Python<'_>) {
        let taken = self.inner.write().unwrap_or_else(|p| p.into_inner()).take();
        py.detach(|| drop(taken));
    }

    #[pyo3(signature = (order_id, method, path, body, *, status_path, idempotency_key, deadline, cancel))]
    fn execute<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = field::order_id)] order_id: String,
        #[pyo3(from_py_with = field::method)] method: String,
        #[pyo3(from_py_with = field::path)] path: String,
        body: &[u8],
        #[pyo3(from_py_with = optional_field::status_path)] status_path: Option<String>,
        #[pyo3(from_py_with = optional_field::idempotency_key)] idempotency_key: Option<String>,
        deadline: Option<f64>,
        cancel: Option<Py<PyAny>>,
    ) -> PyResult<OutcomeTuple<'py>> {
        let client = self.client()?;
        let deadline = optional_seconds(py, "deadline", deadline)?;
        let spec = OperationSpec {
            order_id: &order_id,
            method: &method,
            path: &path,
            body,
            idempotency_key: idempotency_key.as_deref(),
            status_path: status_path.as_deref(),
        };
        let outcome = interruptible(py, cancel.as_ref(), deadline, |options| {
            client.execute_with(&spec, options)
        })?;
        Ok(outcome_tuple(py, outcome))
    }

    #[pyo3(signature = (order_id, *, deadline, cancel))]
    fn resume<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = field::order_id)] order_id: String,
        deadline: Option<f64>,
        cancel: Option<Py<PyAny>>,
    ) -> PyResult<OutcomeTuple<'py>> {
        let client = self.client()?;
        let deadline = optional_seconds(py, "deadline", deadline)?;
        let outcome = interruptible(py, cancel.as_ref(), deadline, |options| {
            client.resume_with(&order_id, options)
        })?;
        Ok(outcome_tuple(py, outcome))
    }

    fn status(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = field::order_id)] order_id: String,
    ) -> PyResult<Option<StatusTuple>> {
        let client = self.client()?;
        let record = raise(py, py.detach(|| client.status(&order_id)))?;
        Ok(record.map(status_tuple))
    }

    fn list_unknown(&self, py: Python<'_>) -> PyResult<Vec<StatusTuple>> {
        let client = self.client()?;
        let records = raise(py, py.detach(|| client.list_unknown()))?;
        Ok(records.into_iter().map(status_tuple).collect())
    }

    fn get<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = field::path)] path: String,
    ) -> PyResult<ResponseTuple<'py>> {
        let client = self.client()?;
        let response = raise(py, py.detach(|| client.get(&path)))?;
        Ok(response_tuple(py, response))
    }

    fn purge_settled(&self, py: Python<'_>) -> PyResult<usize> {
        let client = self.client()?;
        raise(py, py.detach(|| client.purge_settled()))
    }

    fn __repr__(&self) -> String {
        format!(
            "Client(key_id={:?}, closed={}, secret=<redacted>)",
            self.key_id,
            self.closed()
        )
    }
}
