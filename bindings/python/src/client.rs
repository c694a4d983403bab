//! The native side of `payidem.Client`: the core's blocking client, called
//! with the GIL released, interruptible by Ctrl-C between attempts.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use payidem::client::AttemptEvent;
use payidem::journal::{OperationRecord, OutboxValue, ParamStyle};
use payidem::operation::Response;
use payidem::{CallOptions, ClientConfig, JournalChoice, Outcome};

use crate::convert::{
    self, field, optional_field, optional_path_field, seconds, seconds_or_zero, whole,
    OperationArgs,
};
use crate::errors::{invalid, raise, to_pyerr};
use crate::events;

/// `(status, headers, body, replayed)`.
pub(crate) type ResponseTuple<'py> = (u16, Vec<(String, String)>, Bound<'py, PyBytes>, bool);
/// `(order_id, idempotency_key, attempts, status, headers, body, replayed,
/// journal_error)`; `journal_error` is the `payidem.errors.JournalError`
/// of a success the journal could not record, or `None`.
pub(crate) type OutcomeTuple<'py> = (
    String,
    String,
    u32,
    u16,
    Vec<(String, String)>,
    Bound<'py, PyBytes>,
    bool,
    Option<Bound<'py, PyAny>>,
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

pub(crate) fn response_tuple(py: Python<'_>, r: Response) -> ResponseTuple<'_> {
    (r.status, r.headers, PyBytes::new(py, &r.body), r.replayed)
}

pub(crate) fn outcome_tuple(py: Python<'_>, o: Outcome) -> OutcomeTuple<'_> {
    let r = o.response;
    (
        o.order_id,
        o.idempotency_key,
        o.attempts,
        r.status,
        r.headers,
        PyBytes::new(py, &r.body),
        r.replayed,
        o.journal_error
            .map(|e| to_pyerr(py, &e).into_value(py).into_bound(py).into_any()),
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

/// Calls `on_attempt` with the GIL held; an exception in it is handled by
/// [`callback_failed`], so a broken hook never breaks a payment.
fn event_hook(callback: Py<PyAny>) -> payidem::client::EventHook {
    Arc::new(move |event: &AttemptEvent| {
        Python::attach(|py| {
            let called =
                events::to_python(py, event).and_then(|e| callback.call1(py, (e,)).map(drop));
            if let Err(err) = called {
                callback_failed(
                    py,
                    err,
                    "payidem: the on_attempt hook raised; the payment goes on",
                );
            }
        });
    })
}

/// Handles `err`, raised by a user's callback, without abandoning a payment
/// half-way: logged to the `payidem` logger at ERROR with `message` (or as
/// unraisable when logging fails). A `KeyboardInterrupt` while Python
/// handles SIGINT (a Ctrl-C that arrived while the callback ran) is the
/// caller's, not the callback's: it becomes a pending Ctrl-C again, which
/// stops the call at its next check as anywhere else.
pub(crate) fn callback_failed(py: Python<'_>, err: PyErr, message: &str) {
    if err.is_instance_of::<PyKeyboardInterrupt>(py) && python_handles_sigint(py) {
        // SAFETY: called with the GIL held, as the C API requires.
        unsafe { pyo3::ffi::PyErr_SetInterrupt() };
        return;
    }
    let logged = (|| -> PyResult<()> {
        let logger = py
            .import("logging")?
            .call_method1("getLogger", ("payidem",))?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("exc_info", err.clone_ref(py).into_value(py))?;
        logger.call_method("error", (message,), Some(&kwargs))?;
        Ok(())
    })();
    if logged.is_err() {
        err.write_unraisable(py, None);
    }
}

/// Whether a Ctrl-C raises `KeyboardInterrupt` in this process (SIGINT's
/// handler is a Python callable, not `SIG_IGN` or `SIG_DFL`).
fn python_handles_sigint(py: Python<'_>) -> bool {
    (|| -> PyResult<bool> {
        let signal = py.import("signal")?;
        let handler = signal.call_method1("getsignal", (signal.getattr("SIGINT")?,))?;
        Ok(handler.is_callable())
    })()
    .unwrap_or(false)
}

/// Polled by the core with the GIL released (a call's cancel hook, a
/// take-over loop's stop): re-acquires the GIL to run Python's signal
/// handlers and then `cancel`; `true` when either fires, keeping the
/// handler's or `cancel`'s exception in `raised` for the caller to raise.
fn poll_stop(cancel: Option<&Py<PyAny>>, raised: &Mutex<Option<PyErr>>) -> bool {
    let keep = |err: PyErr| {
        *raised.lock().unwrap_or_else(|p| p.into_inner()) = Some(err);
        true
    };
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
    let should_stop = || poll_stop(cancel, &raised);
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
    pub(crate) fn client(&self) -> PyResult<Arc<payidem::Client>> {
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

/// The journal key a client derives from the API secret `secret` when it
/// is given none of its own, in hex. `InvalidArgument` naming `secret`
/// when it is not 16..=1024 bytes.
#[pyfunction]
pub(crate) fn derive_journal_key_hex(py: Python<'_>, secret: &[u8]) -> PyResult<String> {
    raise(
        py,
        payidem::journal::JournalKey::derived_hex_checked(secret),
    )
    .map(|hex| hex.to_string())
}

/// The core's default settings of a client (`ClientConfig::new`), by the
/// Python keyword that sets each: durations in seconds, counts as ints,
/// flags as bools. `payidem.Client` takes its keyword defaults from here, so
/// no default is written twice.
#[pyfunction]
pub(crate) fn client_defaults(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let c = ClientConfig::new(String::new(), String::new());
    let d = PyDict::new(py);
    d.set_item("connect_timeout", c.connect_timeout.as_secs_f64())?;
    d.set_item("request_timeout", c.request_timeout.as_secs_f64())?;
    d.set_item("max_attempts", c.retry.max_attempts)?;
    d.set_item("backoff_base", c.retry.base.as_secs_f64())?;
    d.set_item("backoff_cap", c.retry.cap.as_secs_f64())?;
    d.set_item("deadline", c.retry.deadline.as_secs_f64())?;
    d.set_item("key_retention", c.key_retention.as_secs_f64())?;
    d.set_item("settled_retention", c.settled_retention.as_secs_f64())?;
    d.set_item("retry_budget", c.retry_budget.capacity)?;
    d.set_item("allow_insecure_http", c.allow_insecure_http)?;
    d.set_item("proxy_from_env", c.proxy_from_env)?;
    d.set_item("max_clock_offset", c.max_clock_offset.as_secs_f64())?;
    Ok(d)
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
    /// `settings` are the keywords of `convert::CLIENT_KEYWORDS` that are
    /// not named here. Every option absent or `None` keeps the core's
    /// default (`ClientConfig::new`); every other value goes to the core's
    /// settings rules as given (`convert::client_config_of`), which alone
    /// judge it.
    #[new]
    #[pyo3(signature = (base_url, key_id, secret, *, journal=None, on_attempt=None, proxy=None, ca_bundle=None, client_cert=None, client_key=None, journal_key=None, **settings))]
    fn new<'py>(
        py: Python<'py>,
        #[pyo3(from_py_with = field::base_url)] base_url: String,
        #[pyo3(from_py_with = field::key_id)] key_id: String,
        secret: &[u8],
        #[pyo3(from_py_with = optional_path_field::journal)] journal: Option<PathBuf>,
        on_attempt: Option<Py<PyAny>>,
        #[pyo3(from_py_with = optional_field::proxy)] proxy: Option<String>,
        #[pyo3(from_py_with = optional_path_field::ca_bundle)] ca_bundle: Option<PathBuf>,
        #[pyo3(from_py_with = optional_path_field::client_cert)] client_cert: Option<PathBuf>,
        #[pyo3(from_py_with = optional_path_field::client_key)] client_key: Option<PathBuf>,
        journal_key: Option<&[u8]>,
        settings: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<NativeClient> {
        let mut given = convert::keywords(settings, convert::CLIENT_KEYWORDS, "Client")?;
        given.push(("base_url", PyString::new(py, &base_url).into_any()));
        given.push(("key_id", PyString::new(py, &key_id).into_any()));
        if let Some(proxy) = proxy {
            given.push(("proxy", PyString::new(py, &proxy).into_any()));
        }
        let mut config = convert::client_config_of(py, &given)?;
        // Paths and the key are not JSON text (a path need not be UTF-8).
        config.journal = journal_choice(journal);
        let path = |p: Option<PathBuf>| p.filter(|p| !p.as_os_str().is_empty());
        config.ca_bundle = path(ca_bundle);
        config.client_cert = path(client_cert);
        config.client_key = path(client_key);
        if let Some(key) = journal_key {
            config.journal_key = Some(raise(py, payidem::journal::JournalKey::new(key))?);
        }
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

    /// Runs `operation` (see `convert::OperationArgs`) to its outcome.
    #[pyo3(signature = (operation, *, deadline, cancel))]
    fn execute<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = OperationArgs::extract)] operation: OperationArgs<'py>,
        deadline: Option<f64>,
        cancel: Option<Py<PyAny>>,
    ) -> PyResult<OutcomeTuple<'py>> {
        let client = self.client()?;
        let deadline = optional_seconds(py, "deadline", deadline)?;
        let spec = operation.spec();
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

    /// The outbox statement of an operation: `(sql, params)`, the params a
    /// list of `str`, `bytes` (the body) and `None` (no status path).
    #[pyo3(signature = (operation, *, paramstyle))]
    fn outbox_insert<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = OperationArgs::extract)] operation: OperationArgs<'py>,
        paramstyle: &str,
    ) -> PyResult<(String, Vec<Bound<'py, PyAny>>)> {
        let client = self.client()?;
        let style = match paramstyle {
            "format" => ParamStyle::Format,
            "dollar" => ParamStyle::Dollar,
            other => {
                return Err(invalid(
                    py,
                    "paramstyle",
                    &format!("{other:?} is neither \"format\" (%s) nor \"dollar\" ($1)"),
                ))
            }
        };
        let insert = raise(py, client.outbox_insert(&operation.spec(), style))?;
        let params = insert
            .params
            .into_iter()
            .map(|value| match value {
                OutboxValue::Text(s) => PyString::new(py, &s).into_any(),
                OutboxValue::Bytes(b) => PyBytes::new(py, &b).into_any(),
                OutboxValue::Null => py.None().into_bound(py),
            })
            .collect();
        Ok((insert.sql, params))
    }

    /// Takes over up to `limit` operations: each order id with its outcome
    /// tuple or its exception (a `payidem.Error`), in the order driven.
    fn take_over<'py>(
        &self,
        py: Python<'py>,
        limit: i128,
    ) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
        let client = self.client()?;
        let limit = whole(py, "limit", limit, u64::from(u32::MAX))? as usize;
        let done = raise(py, py.detach(|| client.take_over(limit)))?;
        done.into_iter()
            .map(|(order_id, result)| {
                let value = match result {
                    Ok(outcome) => outcome_tuple(py, outcome).into_pyobject(py)?.into_any(),
                    Err(e) => to_pyerr(py, &e).into_value(py).into_bound(py).into_any(),
                };
                Ok((order_id, value))
            })
            .collect()
    }

    /// Runs the core's take-over loop with the GIL released until `stop`
    /// (a callable, polled between operations and during the idle sleep)
    /// answers true: how many operations it drove. A signal handler's
    /// exception (e.g. `KeyboardInterrupt`) or `stop`'s own ends the loop
    /// and is raised.
    #[pyo3(signature = (batch, idle, stop))]
    fn take_over_loop(
        &self,
        py: Python<'_>,
        batch: i128,
        idle: f64,
        stop: Py<PyAny>,
    ) -> PyResult<u64> {
        let client = self.client()?;
        let batch = whole(py, "batch", batch, u64::from(u32::MAX))? as usize;
        let idle = seconds_or_zero(py, "idle", idle)?;
        let raised: Mutex<Option<PyErr>> = Mutex::new(None);
        let driven =
            py.detach(|| client.take_over_loop(batch, idle, &|| poll_stop(Some(&stop), &raised)));
        match raised.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(err) => Err(err),
            None => Ok(driven),
        }
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
