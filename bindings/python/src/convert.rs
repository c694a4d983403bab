//! Python values to the core's argument types, with typed errors.

use std::ffi::CStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use payidem::protocol::headers;
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt, PyString};

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

/// The longest duration a setting takes: what the C ABI and Go accept (a
/// `u64` of milliseconds). Longer ones would overflow the core's time
/// arithmetic (a deadline plus a timeout, a wait added to the clock).
const MAX_DURATION: Duration = Duration::from_millis(u64::MAX);

/// A duration in seconds (int or float) that must be positive, finite and
/// at most [`MAX_DURATION`].
pub(crate) fn seconds(py: Python<'_>, field: &'static str, value: f64) -> PyResult<Duration> {
    match Duration::try_from_secs_f64(value) {
        Ok(d) if !d.is_zero() && d <= MAX_DURATION => Ok(d),
        _ => Err(invalid(
            py,
            field,
            &format!(
                "must be a positive, finite number of seconds, at most {}",
                MAX_DURATION.as_secs()
            ),
        )),
    }
}

/// A duration of `value` seconds where zero is a value of its own (e.g. a
/// take-over loop's `idle`, whose zero the core gives a meaning): finite,
/// not negative, at most [`MAX_DURATION`].
pub(crate) fn seconds_or_zero(
    py: Python<'_>,
    field: &'static str,
    value: f64,
) -> PyResult<Duration> {
    if value == 0.0 {
        return Ok(Duration::ZERO);
    }
    seconds(py, field, value).map_err(|_| {
        invalid(
            py,
            field,
            &format!(
                "must be a finite number of seconds from 0 to {}",
                MAX_DURATION.as_secs()
            ),
        )
    })
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

/// The message of a `str` that has no UTF-8 form.
const NOT_UNICODE: &str =
    "is not valid Unicode text (a lone surrogate such as \\ud800 has no UTF-8 form)";

/// A `str` argument as UTF-8: a non-`str` is a `TypeError`, a `str` with a
/// lone surrogate is `InvalidArgument` naming `field` (never a
/// `UnicodeEncodeError`).
pub(crate) fn text(value: &Bound<'_, PyAny>, field: &'static str) -> PyResult<String> {
    let s = value
        .cast::<PyString>()
        .map_err(|_| PyTypeError::new_err(format!("{field} must be str")))?;
    match s.to_cow() {
        Ok(t) => Ok(t.into_owned()),
        Err(_) => Err(invalid(value.py(), field, NOT_UNICODE)),
    }
}

/// Like [`text`], with `None` for `None`.
pub(crate) fn optional_text(
    value: &Bound<'_, PyAny>,
    field: &'static str,
) -> PyResult<Option<String>> {
    if value.is_none() {
        Ok(None)
    } else {
        text(value, field).map(Some)
    }
}

/// Converters for `#[pyo3(from_py_with = ...)]`, one per field name, so that
/// every `str` argument of the package names its field when it cannot be
/// encoded.
macro_rules! text_fields {
    ($($name:ident),* $(,)?) => {
        /// `str` arguments, by field name (not every name is used both
        /// ways).
        #[allow(dead_code)]
        pub(crate) mod field {
            use pyo3::prelude::*;
            $(
                pub(crate) fn $name(value: &Bound<'_, PyAny>) -> PyResult<String> {
                    super::text(value, stringify!($name))
                }
            )*
        }
        /// Optional `str` arguments (`None` allowed), by field name.
        #[allow(dead_code)]
        pub(crate) mod optional_field {
            use pyo3::prelude::*;
            $(
                pub(crate) fn $name(value: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
                    super::optional_text(value, stringify!($name))
                }
            )*
        }
    };
}

text_fields!(
    base_url,
    key_id,
    method,
    path,
    order_id,
    idempotency_key,
    status_path,
    nonce,
    kind,
    outcome,
    error_code,
    proxy,
);

/// An operation as `payidem.Client` and `payidem.Call` hand it to the
/// native layer: the tuple `(order_id, method, path, body, status_path,
/// idempotency_key)`, each part checked by its name as a keyword argument
/// would be (`body` is the frozen `bytes`).
pub(crate) struct OperationArgs<'py> {
    order_id: String,
    method: String,
    path: String,
    body: Bound<'py, PyBytes>,
    status_path: Option<String>,
    idempotency_key: Option<String>,
}

impl<'py> OperationArgs<'py> {
    /// Reads the tuple (a `from_py_with` extractor).
    pub(crate) fn extract(arg: &Bound<'py, PyAny>) -> PyResult<Self> {
        type Parts<'py> = (
            Bound<'py, PyAny>,
            Bound<'py, PyAny>,
            Bound<'py, PyAny>,
            Bound<'py, PyBytes>,
            Bound<'py, PyAny>,
            Bound<'py, PyAny>,
        );
        let (order_id, method, path, body, status_path, idempotency_key): Parts<'py> =
            arg.extract()?;
        Ok(OperationArgs {
            order_id: field::order_id(&order_id)?,
            method: field::method(&method)?,
            path: field::path(&path)?,
            body,
            status_path: optional_field::status_path(&status_path)?,
            idempotency_key: optional_field::idempotency_key(&idempotency_key)?,
        })
    }

    /// The core's description of the operation, borrowing these values.
    pub(crate) fn spec(&self) -> payidem::OperationSpec<'_> {
        payidem::OperationSpec {
            order_id: &self.order_id,
            method: &self.method,
            path: &self.path,
            body: self.body.as_bytes(),
            idempotency_key: self.idempotency_key.as_deref(),
            status_path: self.status_path.as_deref(),
        }
    }
}

/// A path argument (`str` or `os.PathLike`) for `field`: a `str` with a lone
/// surrogate that the file-system encoding cannot carry is
/// `InvalidArgument` naming `field`.
pub(crate) fn optional_path(
    value: &Bound<'_, PyAny>,
    field: &'static str,
) -> PyResult<Option<std::path::PathBuf>> {
    value.extract::<Option<std::path::PathBuf>>().map_err(|e| {
        if e.is_instance_of::<pyo3::exceptions::PyUnicodeError>(value.py()) {
            invalid(value.py(), field, NOT_UNICODE)
        } else {
            e
        }
    })
}

/// Optional path arguments, by field name.
pub(crate) mod optional_path_field {
    use pyo3::prelude::*;
    use std::path::PathBuf;

    macro_rules! paths {
        ($($name:ident),*) => {$(
            pub(crate) fn $name(value: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
                super::optional_path(value, stringify!($name))
            }
        )*};
    }
    paths!(journal, ca_bundle, client_cert, client_key);
}

/// A timestamp as the canonical string's text: a `str` taken as is (its rule
/// is checked by the core), or a non-negative `int`.
pub(crate) fn timestamp_text(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if value.is_instance_of::<PyString>() {
        return text(value, "timestamp");
    }
    unix_seconds(py, "timestamp", Some(value)).map(|t| t.to_string())
}

/// Text held by Python as UTF-8 bytes, borrowed as `&str` without a copy,
/// or one of the protocol's header names.
pub(crate) enum Utf8<'py> {
    Held(Bound<'py, PyBytes>),
    Known(&'static str),
}

/// Header names compared without encoding (the spelling `Signer` sends).
const KNOWN_NAMES: [(&CStr, &str); 5] = [
    (c"X-Api-Key", headers::API_KEY),
    (c"X-Timestamp", headers::TIMESTAMP),
    (c"X-Nonce", headers::NONCE),
    (c"X-Signature", headers::SIGNATURE),
    (c"Idempotency-Key", headers::IDEMPOTENCY_KEY),
];

impl<'py> Utf8<'py> {
    /// The UTF-8 of a `str`; anything else is a `TypeError` naming `field`,
    /// and a `str` with a lone surrogate is `InvalidArgument` naming it.
    pub(crate) fn of(value: &Bound<'py, PyAny>, field: &'static str) -> PyResult<Utf8<'py>> {
        Self::named(value, field, &format!("{field} must be str"))
    }

    /// Like [`Utf8::of`], with `type_message` for a non-`str`.
    fn named(
        value: &Bound<'py, PyAny>,
        field: &'static str,
        type_message: &str,
    ) -> PyResult<Utf8<'py>> {
        let text = value
            .cast::<PyString>()
            .map_err(|_| PyTypeError::new_err(type_message.to_owned()))?;
        text.encode_utf8()
            .map(Utf8::Held)
            .map_err(|_| invalid(value.py(), field, NOT_UNICODE))
    }

    /// Like [`Utf8::of`], recognising the protocol's header names as spelt
    /// by `Signer` without encoding them.
    fn header_name(value: &Bound<'py, PyAny>) -> PyResult<Utf8<'py>> {
        if let Ok(text) = value.cast::<PyString>() {
            for (c_name, name) in KNOWN_NAMES {
                // SAFETY: `text` is a live `str` we hold a reference to and
                // `c_name` is NUL-terminated ASCII; the call never raises.
                if unsafe { ffi::PyUnicode_CompareWithASCIIString(text.as_ptr(), c_name.as_ptr()) }
                    == 0
                {
                    return Ok(Utf8::Known(name));
                }
            }
        }
        Utf8::named(value, "headers", HEADER_TEXT)
    }

    pub(crate) fn as_str(&self) -> PyResult<&str> {
        match self {
            Utf8::Known(name) => Ok(name),
            Utf8::Held(bytes) => std::str::from_utf8(bytes.as_bytes())
                .map_err(|_| PyTypeError::new_err("str did not encode to UTF-8")),
        }
    }
}

const HEADER_TEXT: &str = "header names and values must be str";
const HEADERS_SHAPE: &str = "headers must be a mapping or a sequence of (name, value) pairs";

/// Headers given as a mapping (`dict`, any object with `items()`) or as a
/// sequence of `(name, value)` pairs; names and values must be `str`.
pub(crate) struct HeaderTexts<'py>(Vec<(Utf8<'py>, Utf8<'py>)>);

impl<'py> HeaderTexts<'py> {
    pub(crate) fn collect(value: Option<&Bound<'py, PyAny>>) -> PyResult<HeaderTexts<'py>> {
        let mut held = Vec::new();
        let Some(value) = value.filter(|v| !v.is_none()) else {
            return Ok(HeaderTexts(held));
        };
        let text = |v: &Bound<'py, PyAny>| Utf8::named(v, "headers", HEADER_TEXT);
        if let Ok(dict) = value.cast::<PyDict>() {
            for (name, value) in dict.iter() {
                held.push((Utf8::header_name(&name)?, text(&value)?));
            }
            return Ok(HeaderTexts(held));
        }
        if value.is_instance_of::<PyString>() || value.is_instance_of::<PyBytes>() {
            return Err(PyTypeError::new_err(HEADERS_SHAPE));
        }
        let items = if value.hasattr("items")? {
            value.call_method0("items")?
        } else {
            value.clone()
        };
        let iter = items
            .try_iter()
            .map_err(|_| PyTypeError::new_err(HEADERS_SHAPE))?;
        for item in iter {
            let (name, value): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item?
                .extract()
                .map_err(|_| PyTypeError::new_err(HEADERS_SHAPE))?;
            held.push((Utf8::header_name(&name)?, text(&value)?));
        }
        Ok(HeaderTexts(held))
    }

    /// The headers as the core's `(&str, &str)` pairs.
    pub(crate) fn pairs(&self) -> PyResult<Vec<(&str, &str)>> {
        self.0
            .iter()
            .map(|(n, v)| Ok((n.as_str()?, v.as_str()?)))
            .collect()
    }
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

/// How a Python keyword's value becomes its setting's JSON value.
#[derive(Clone, Copy)]
pub(crate) enum Unit {
    /// Seconds (int or float) to whole milliseconds.
    Millis,
    /// Seconds (int or float) to whole seconds.
    Seconds,
    /// An int as is.
    Count,
    /// A bool, a str: as is.
    Plain,
    /// `bytes` kept out of the JSON (a key is set on the configuration by
    /// `JournalKey::new`); anything else as is, for the core to refuse.
    Key,
}

/// The client's keywords, the setting each sets (core/src/settings) and its
/// unit. The core alone checks every value: its range, what 0 means, its
/// type.
pub(crate) const CLIENT_KEYWORDS: &[(&str, &str, Unit)] = &[
    ("base_url", "base_url", Unit::Plain),
    ("key_id", "key_id", Unit::Plain),
    ("connect_timeout", "connect_timeout_ms", Unit::Millis),
    ("request_timeout", "request_timeout_ms", Unit::Millis),
    ("max_attempts", "retry.max_attempts", Unit::Count),
    ("backoff_base", "retry.base_ms", Unit::Millis),
    ("backoff_cap", "retry.cap_ms", Unit::Millis),
    ("deadline", "retry.deadline_ms", Unit::Millis),
    ("key_retention", "key_retention_s", Unit::Seconds),
    ("settled_retention", "settled_retention_s", Unit::Seconds),
    ("retry_budget", "retry_budget.capacity", Unit::Count),
    ("allow_insecure_http", "allow_insecure_http", Unit::Plain),
    ("proxy", "proxy", Unit::Plain),
    ("proxy_from_env", "proxy_from_env", Unit::Plain),
    ("max_clock_offset", "max_clock_offset_s", Unit::Seconds),
    ("lease_ttl", "lease_ttl_s", Unit::Seconds),
    ("lease_heartbeat", "lease_heartbeat_ms", Unit::Millis),
    ("journal", "journal_path", Unit::Plain),
    ("journal_key", "journal_key_hex", Unit::Key),
    ("ca_bundle", "ca_bundle", Unit::Plain),
    ("client_cert", "client_cert", Unit::Plain),
    ("client_key", "client_key", Unit::Plain),
];

/// `payidem.Operation`'s limit keywords and the start object's settings
/// (core/src/settings/start.rs) each sets.
pub(crate) const SETUP_KEYWORDS: &[(&str, &str, Unit)] = &[
    ("max_attempts", "setup.max_attempts", Unit::Count),
    ("backoff_base", "setup.backoff_base_ms", Unit::Millis),
    ("backoff_cap", "setup.backoff_cap_ms", Unit::Millis),
    ("deadline", "setup.deadline_ms", Unit::Millis),
    ("key_retention", "setup.key_retention_secs", Unit::Seconds),
    (
        "max_clock_offset",
        "setup.max_clock_offset_secs",
        Unit::Seconds,
    ),
];

/// A Python value as JSON, unconverted: what the core then judges (a
/// `str` where a number belongs is its wrong type).
fn json_of(value: &Bound<'_, PyAny>) -> serde_json::Value {
    use serde_json::Value;
    if value.is_none() {
        Value::Null
    } else if let Ok(b) = value.cast::<pyo3::types::PyBool>() {
        Value::Bool(b.is_true())
    } else if value.is_instance_of::<PyInt>() {
        match value.extract::<i128>() {
            Ok(n) => u64::try_from(n)
                .map(Value::from)
                .or_else(|_| i64::try_from(n).map(Value::from))
                // Outside every range: a fraction the core refuses by name.
                .unwrap_or_else(|_| Value::from(n as f64)),
            Err(_) => Value::from(f64::MAX),
        }
    } else if let Some(x) = value
        .is_instance_of::<pyo3::types::PyFloat>()
        .then(|| value.extract::<f64>().ok())
        .flatten()
    {
        serde_json::Number::from_f64(x).map_or_else(|| Value::String(x.to_string()), Value::Number)
    } else if let Ok(s) = value.cast::<PyString>() {
        Value::String(s.to_cow().map(|c| c.into_owned()).unwrap_or_default())
    } else {
        Value::String(format!(
            "<{}>",
            value
                .get_type()
                .name()
                .map_or_else(|_| "object".to_owned(), |n| n.to_string())
        ))
    }
}

/// Seconds (an int or float) in whole `unit`s (1 ms or 1 s), rounded away
/// from zero so that a positive duration never becomes 0 and a negative
/// one stays negative; anything else as is, for the core to refuse.
fn duration_json(value: &Bound<'_, PyAny>, unit: Duration) -> serde_json::Value {
    let number = !value.is_instance_of::<pyo3::types::PyBool>()
        && (value.is_instance_of::<PyInt>() || value.is_instance_of::<pyo3::types::PyFloat>());
    let Some(secs) = number.then(|| value.extract::<f64>().ok()).flatten() else {
        return json_of(value);
    };
    let Ok(d) = Duration::try_from_secs_f64(secs.abs()) else {
        // NaN, infinite or beyond any duration: refused by the core.
        return json_of(value);
    };
    let n = d.as_nanos().div_ceil(unit.as_nanos());
    match i64::try_from(n) {
        Ok(n) if secs < 0.0 => serde_json::Value::from(-n),
        Ok(n) => serde_json::Value::from(n),
        // Beyond every range: a fraction the core refuses by name.
        Err(_) => serde_json::Value::from(secs * 1e9 / unit.as_nanos() as f64),
    }
}

/// The settings document (core/src/settings) from the keywords a caller
/// gave (`None` is absent), each set by `table`: units converted, nothing
/// judged.
pub(crate) fn settings_doc(
    table: &[(&str, &str, Unit)],
    given: &[(&str, Option<&Bound<'_, PyAny>>)],
) -> serde_json::Value {
    let mut doc = serde_json::Value::Object(serde_json::Map::new());
    for (keyword, value) in given {
        let (Some(value), Some((_, setting, unit))) = (
            value.filter(|v| !v.is_none()),
            table.iter().find(|(k, _, _)| k == keyword),
        ) else {
            continue;
        };
        let json = match unit {
            Unit::Millis => duration_json(value, Duration::from_millis(1)),
            Unit::Seconds => duration_json(value, Duration::from_secs(1)),
            Unit::Key if value.is_instance_of::<PyBytes>() => continue,
            Unit::Key => json_of(value),
            Unit::Count | Unit::Plain => json_of(value),
        };
        let mut at = &mut doc;
        let mut keys = setting.split('.').peekable();
        while let Some(key) = keys.next() {
            let map = at.as_object_mut().expect("settings are objects");
            if keys.peek().is_none() {
                map.insert(key.to_owned(), json);
                break;
            }
            at = map
                .entry(key)
                .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
        }
    }
    doc
}

/// A settings error as the Python exception naming the keyword that sets
/// the setting (the setting's own name when no keyword sets it).
pub(crate) fn setting_error(py: Python<'_>, e: payidem::settings::SettingError) -> PyErr {
    let keyword = CLIENT_KEYWORDS
        .iter()
        .chain(SETUP_KEYWORDS)
        .find(|(_, setting, _)| *setting == e.field())
        .map(|(keyword, _, _)| *keyword);
    match keyword {
        Some(keyword) => invalid(py, keyword, e.reason()),
        // An unknown key or a setting no keyword sets.
        None => by_setting(py, e),
    }
}

/// A settings error as `InvalidArgument` naming the setting by its JSON path.
fn by_setting(py: Python<'_>, e: payidem::settings::SettingError) -> PyErr {
    let err = crate::errors::to_pyerr(py, &payidem::Error::from(e.clone()));
    // The field is plain data on the exception; setting it cannot fail.
    let _ = err.value(py).setattr("field", e.field());
    err
}

/// Keyword values as the settings document takes them: each one given.
pub(crate) fn present<'a, 'py>(
    values: &'a [(&'static str, Bound<'py, PyAny>)],
) -> Vec<(&'static str, Option<&'a Bound<'py, PyAny>>)> {
    values.iter().map(|(k, v)| (*k, Some(v))).collect()
}

/// The keywords `kwargs` gives, each one of `table`'s (another is the
/// `TypeError` Python raises for an unexpected keyword of `function`).
pub(crate) fn keywords<'py>(
    kwargs: Option<&Bound<'py, PyDict>>,
    table: &[(&'static str, &str, Unit)],
    function: &str,
) -> PyResult<Vec<(&'static str, Bound<'py, PyAny>)>> {
    let mut values = Vec::new();
    for (key, value) in kwargs.into_iter().flat_map(|k| k.iter()) {
        let key = text(&key, "keyword")?;
        let Some((keyword, _, _)) = table.iter().find(|(k, _, _)| *k == key) else {
            return Err(PyTypeError::new_err(format!(
                "{function}() got an unexpected keyword argument '{key}'"
            )));
        };
        values.push((*keyword, value));
    }
    Ok(values)
}

/// The client configuration the core's settings rules make of `values`
/// (keywords of [`CLIENT_KEYWORDS`]); paths and the journal key, which are
/// not JSON text, are the caller's to set.
pub(crate) fn client_config_of(
    py: Python<'_>,
    values: &[(&'static str, Bound<'_, PyAny>)],
) -> PyResult<payidem::ClientConfig> {
    let doc = settings_doc(CLIENT_KEYWORDS, &present(values));
    payidem::settings::client::client_config(&doc).map_err(|e| setting_error(py, e))
}

/// Every setting's effective value (the core's settings document, as JSON)
/// for the keywords `kwargs` of `kind`: `"client"`, `payidem.Client`'s
/// (`base_url` and `key_id` required), as the client would be made with
/// them without opening a journal; `"start"`, `payidem.Operation`'s limit
/// keywords, as the start object's settings. For the settings-parity test
/// and for checking settings ahead.
#[pyfunction]
#[pyo3(signature = (kind, **kwargs))]
pub(crate) fn resolve_settings(
    py: Python<'_>,
    kind: &str,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    match kind {
        "client" => client_settings(py, kwargs),
        "start" => start_settings(py, kwargs),
        _ => Err(invalid(py, "kind", "must be \"client\" or \"start\"")),
    }
}

/// `resolve_settings("client", **kwargs)`.
fn client_settings(py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<String> {
    let values = keywords(kwargs, CLIENT_KEYWORDS, "resolve_settings")?;
    let mut config = client_config_of(py, &values)?;
    if let Some((_, key)) = values.iter().find(|(k, _)| *k == "journal_key") {
        if let Ok(key) = key.cast::<PyBytes>() {
            let key = payidem::journal::JournalKey::new(key.as_bytes());
            config.journal_key = Some(crate::errors::raise(py, key)?);
        }
    }
    Ok(payidem::settings::client::settings_json(&config).to_string())
}

/// The call setup `payidem.Operation`'s limit keywords (`kwargs`) give,
/// every value judged by the core (`settings::start::setup`).
pub(crate) fn setup_of(
    py: Python<'_>,
    given: &[(&str, Option<&Bound<'_, PyAny>>)],
) -> PyResult<payidem::operation::CallSetup> {
    let doc = settings_doc(SETUP_KEYWORDS, given);
    let setup = doc
        .get("setup")
        .cloned()
        .unwrap_or_else(|| serde_json::json!({}));
    payidem::settings::start::setup(&setup).map_err(|e| setting_error(py, e))
}

/// The call setup of the limit keywords `kwargs` of `function` (each one
/// of [`SETUP_KEYWORDS`]), as [`setup_of`] judges them.
pub(crate) fn setup_of_keywords(
    py: Python<'_>,
    kwargs: Option<&Bound<'_, PyDict>>,
    function: &str,
) -> PyResult<payidem::operation::CallSetup> {
    setup_of(py, &present(&keywords(kwargs, SETUP_KEYWORDS, function)?))
}

/// `resolve_settings("start", **kwargs)`: the start object's effective
/// settings for `payidem.Operation`'s limit keywords.
fn start_settings(py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<String> {
    let setup = setup_of_keywords(py, kwargs, "resolve_settings")?;
    let start = payidem::settings::start::Start {
        operation: payidem::OperationSpec {
            order_id: "o",
            method: "POST",
            path: "/",
            body: b"",
            idempotency_key: None,
            status_path: None,
        }
        .freeze()
        .map_err(|e| crate::errors::to_pyerr(py, &e))?,
        progress: payidem::operation::Progress {
            state: payidem::operation::OperationState::Pending,
            attempts: 0,
            created_at: 0,
            first_recorded: false,
        },
        setup,
        now: 0,
    };
    Ok(payidem::settings::start::settings_json(&start).to_string())
}

/// The core's settings rules on a JSON document as every language passes
/// it: `kind` `"client"` (an options object) or `"start"` (a machine's start
/// object). Gives every setting's effective value as JSON; an error names
/// the setting by its JSON path.
#[pyfunction]
pub(crate) fn resolve_settings_json(py: Python<'_>, kind: &str, doc: &str) -> PyResult<String> {
    use payidem::settings::{client, start};
    let named = |e| by_setting(py, e);
    match kind {
        "client" => client::client_config_from_json(doc)
            .map(|c| client::settings_json(&c).to_string())
            .map_err(named),
        "start" => start::start_from_json(doc)
            .map(|s| start::settings_json(&s).to_string())
            .map_err(named),
        _ => Err(invalid(py, "kind", "must be \"client\" or \"start\"")),
    }
}
