//! The client's options object (`payidem_client_new`'s `options_json`, the
//! Go `Config`, the Python `Client` keywords), its rules, and every
//! setting's effective value.
//!
//! | setting | range | 0 means | default |
//! |---|---|---|---|
//! | `base_url`, `key_id` | string | | required |
//! | `journal_path` | string | | `""`: the durable default journal |
//! | `journal_key_hex` | string (64..=2048 hex digits) | | `""`: derived from the secret |
//! | `connect_timeout_ms` | 1..=10^12 | invalid | 5000 |
//! | `request_timeout_ms` | 1..=10^12 | invalid | 30000 |
//! | `retry.base_ms` | 0..=10^12, at most `retry.cap_ms` | retry without waiting | 200 |
//! | `retry.cap_ms` | 0..=10^12 | no wait ever (needs `retry.base_ms` 0) | 10000 |
//! | `retry.max_attempts` | 1..=4294967295 | invalid | 8 |
//! | `retry.deadline_ms` | 1..=10^12 | invalid | 60000 |
//! | `retry_budget.capacity` | 0..=4294967295 | an empty budget: no retries | 500 |
//! | `retry_budget.retry_cost` | 0..=4294967295 | retries after errors are free | 5 |
//! | `retry_budget.timeout_cost` | 0..=4294967295 | retries after timeouts are free | 10 |
//! | `retry_budget.success_refund` | 0..=4294967295 | successes refund nothing | 1 |
//! | `key_retention_s` | 1..=172800 | invalid | 172800 |
//! | `settled_retention_s` | 0..=10^9 | purge every settled operation at open | 604800 |
//! | `max_clock_offset_s` | 0..=10^9 | never adjust the clock | 600 |
//! | `lease_ttl_s` | 1..=10^9 | invalid | none: deadline + 30 s (a lease holds ttl + request timeout past each renewal) |
//! | `lease_heartbeat_ms` | 100..=10^12, less than the lease ttl | invalid | none: a third of the lease ttl |
//! | `allow_insecure_http`, `proxy_from_env` | bool | | false |
//! | `proxy`, `ca_bundle`, `client_cert`, `client_key` | string | | `""`: none |

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{
    count, flag, millis, ms, object, required, seconds, set, shape, text, SettingError,
    HEARTBEAT_MS, KEY_RETENTION_SECS, POSITIVE_MS, POSITIVE_SECS, SECS, TOKENS,
};
use crate::client::{ClientConfig, JournalChoice};

/// The `retry` settings' paths, in [`super::retry`]'s order.
const RETRY_FIELDS: [&str; 4] = [
    "retry.base_ms",
    "retry.cap_ms",
    "retry.max_attempts",
    "retry.deadline_ms",
];

/// Every setting's JSON path, for errors naming it.
pub const FIELDS: &[&str] = &[
    "base_url",
    "key_id",
    "journal_path",
    "journal_key_hex",
    "connect_timeout_ms",
    "request_timeout_ms",
    "retry",
    "retry.base_ms",
    "retry.cap_ms",
    "retry.max_attempts",
    "retry.deadline_ms",
    "retry_budget",
    "retry_budget.capacity",
    "retry_budget.retry_cost",
    "retry_budget.timeout_cost",
    "retry_budget.success_refund",
    "key_retention_s",
    "settled_retention_s",
    "max_clock_offset_s",
    "lease_ttl_s",
    "lease_heartbeat_ms",
    "allow_insecure_http",
    "proxy",
    "proxy_from_env",
    "ca_bundle",
    "client_cert",
    "client_key",
];

/// The options object's shape; every value is checked by its rule in
/// [`client_config`].
#[derive(Deserialize)]
struct Options {
    base_url: Option<Value>,
    key_id: Option<Value>,
    journal_path: Option<Value>,
    journal_key_hex: Option<Value>,
    connect_timeout_ms: Option<Value>,
    request_timeout_ms: Option<Value>,
    retry: Option<Value>,
    retry_budget: Option<Value>,
    key_retention_s: Option<Value>,
    settled_retention_s: Option<Value>,
    max_clock_offset_s: Option<Value>,
    lease_ttl_s: Option<Value>,
    lease_heartbeat_ms: Option<Value>,
    allow_insecure_http: Option<Value>,
    proxy: Option<Value>,
    proxy_from_env: Option<Value>,
    ca_bundle: Option<Value>,
    client_cert: Option<Value>,
    client_key: Option<Value>,
    #[serde(flatten)]
    unknown: Map<String, Value>,
}

/// The `retry` object.
#[derive(Deserialize)]
struct RetryOptions {
    base_ms: Option<Value>,
    cap_ms: Option<Value>,
    max_attempts: Option<Value>,
    deadline_ms: Option<Value>,
    #[serde(flatten)]
    unknown: Map<String, Value>,
}

/// The `retry_budget` object (also the machine's `setup.retry_budget`).
#[derive(Deserialize)]
pub(crate) struct BudgetOptions {
    capacity: Option<Value>,
    retry_cost: Option<Value>,
    timeout_cost: Option<Value>,
    success_refund: Option<Value>,
    #[serde(flatten)]
    unknown: Map<String, Value>,
}

/// Reads a retry budget object at `name` over `budget`.
pub(crate) fn budget(
    value: &Value,
    name: &str,
    budget: &mut crate::policy::RetryBudgetConfig,
) -> Result<(), SettingError> {
    let p = format!("{name}.");
    let b: BudgetOptions = shape(value, name, &p, |b: &BudgetOptions| &b.unknown)?;
    for (v, key, slot) in [
        (&b.capacity, "capacity", &mut budget.capacity),
        (&b.retry_cost, "retry_cost", &mut budget.retry_cost),
        (&b.timeout_cost, "timeout_cost", &mut budget.timeout_cost),
        (
            &b.success_refund,
            "success_refund",
            &mut budget.success_refund,
        ),
    ] {
        if let Some(n) = count(v.as_ref(), &format!("{p}{key}"), TOKENS)? {
            *slot = n;
        }
    }
    Ok(())
}

/// The core checks' field names, by the setting that sets each.
const CORE_FIELDS: &[(&str, &str)] = &[
    ("max_attempts", "retry.max_attempts"),
    ("backoff_base", "retry.base_ms"),
    ("deadline", "retry.deadline_ms"),
    ("key_retention_secs", "key_retention_s"),
    ("lease_heartbeat", "lease_heartbeat_ms"),
];

/// Parses `options_json` (named `options_json` in errors) into a client's
/// configuration; see [`client_config`].
pub fn client_config_from_json(options_json: &str) -> Result<ClientConfig, SettingError> {
    client_config(&super::parse(options_json, "options_json")?)
}

/// The client configuration `options` asks for, every setting checked by
/// its rule (see the module's table). `base_url` and `key_id` are
/// required; whether the base URL is usable is checked when the client is
/// made.
pub fn client_config(options: &Value) -> Result<ClientConfig, SettingError> {
    let o: Options = shape(options, "options_json", "", |o: &Options| &o.unknown)?;
    let mut c = ClientConfig::new(
        required(o.base_url.as_ref(), "base_url")?,
        required(o.key_id.as_ref(), "key_id")?,
    );
    c.journal = JournalChoice::from_setting(text(o.journal_path.as_ref(), "journal_path")?);
    if let Some(hex) =
        text(o.journal_key_hex.as_ref(), "journal_key_hex")?.filter(|h| !h.is_empty())
    {
        let key = crate::journal::JournalKey::from_hex(hex).map_err(|e| {
            SettingError::new(
                "journal_key_hex",
                e.message().trim_start_matches("journal_key: "),
            )
        })?;
        c.journal_key = Some(key);
    }
    set(
        &mut c.connect_timeout,
        millis(
            o.connect_timeout_ms.as_ref(),
            "connect_timeout_ms",
            POSITIVE_MS,
        )?,
    );
    set(
        &mut c.request_timeout,
        millis(
            o.request_timeout_ms.as_ref(),
            "request_timeout_ms",
            POSITIVE_MS,
        )?,
    );
    if let Some(retry) = object(o.retry.as_ref(), "retry")? {
        let r: RetryOptions = shape(retry, "retry", "retry.", |r: &RetryOptions| &r.unknown)?;
        let values = [&r.base_ms, &r.cap_ms, &r.max_attempts, &r.deadline_ms];
        super::retry(&mut c.retry, values, RETRY_FIELDS)?;
    }
    if let Some(b) = object(o.retry_budget.as_ref(), "retry_budget")? {
        budget(b, "retry_budget", &mut c.retry_budget)?;
    }
    set(
        &mut c.key_retention,
        seconds(
            o.key_retention_s.as_ref(),
            "key_retention_s",
            KEY_RETENTION_SECS,
        )?,
    );
    set(
        &mut c.settled_retention,
        seconds(o.settled_retention_s.as_ref(), "settled_retention_s", SECS)?,
    );
    set(
        &mut c.max_clock_offset,
        seconds(o.max_clock_offset_s.as_ref(), "max_clock_offset_s", SECS)?,
    );
    c.lease_ttl = seconds(o.lease_ttl_s.as_ref(), "lease_ttl_s", POSITIVE_SECS)?;
    c.lease_heartbeat = millis(
        o.lease_heartbeat_ms.as_ref(),
        "lease_heartbeat_ms",
        HEARTBEAT_MS,
    )?;
    set(
        &mut c.allow_insecure_http,
        flag(o.allow_insecure_http.as_ref(), "allow_insecure_http")?,
    );
    set(
        &mut c.proxy_from_env,
        flag(o.proxy_from_env.as_ref(), "proxy_from_env")?,
    );
    c.proxy = text(o.proxy.as_ref(), "proxy")?
        .filter(|p| !p.is_empty())
        .map(str::to_owned);
    for (v, key, slot) in [
        (&o.ca_bundle, "ca_bundle", &mut c.ca_bundle),
        (&o.client_cert, "client_cert", &mut c.client_cert),
        (&o.client_key, "client_key", &mut c.client_key),
    ] {
        *slot = text(v.as_ref(), key)?
            .filter(|p| !p.is_empty())
            .map(PathBuf::from);
    }
    let limits = crate::operation::CallLimits {
        policy: c.retry,
        key_retention_secs: c.key_retention.as_secs(),
        max_clock_offset: c.max_clock_offset,
    };
    limits
        .check()
        .map_err(|e| SettingError::from_core(&e, CORE_FIELDS))?;
    c.lease_timing()
        .map_err(|e| SettingError::from_core(&e, CORE_FIELDS))?;
    Ok(c)
}

/// Every setting of `c` at its value, in the options object's shape: an
/// options object that sets them all explicitly. Settings unset in `c` are `""`
/// (`journal_path`, `journal_key_hex`, `proxy`, `ca_bundle`,
/// `client_cert`, `client_key`) or `null` (`lease_ttl_s`, `lease_heartbeat_ms`); a journal key
/// is never shown (`"<set>"`), nor a PostgreSQL URL (`""`).
pub fn settings_json(c: &ClientConfig) -> Value {
    let path = |p: &Option<PathBuf>| {
        p.as_ref()
            .map_or_else(String::new, |p| p.to_string_lossy().into_owned())
    };
    let journal_path = match &c.journal {
        JournalChoice::Sqlite(p) => p.to_string_lossy().into_owned(),
        JournalChoice::Memory => crate::journal::MEMORY_JOURNAL.to_owned(),
        // Never a default; a PostgreSQL URL may hold a password.
        JournalChoice::Default | JournalChoice::Custom(_) | JournalChoice::Postgres(_) => {
            String::new()
        }
    };
    json!({
        "base_url": c.base_url,
        "key_id": c.key_id,
        "journal_path": journal_path,
        "journal_key_hex": if c.journal_key.is_some() { "<set>" } else { "" },
        "connect_timeout_ms": ms(c.connect_timeout),
        "request_timeout_ms": ms(c.request_timeout),
        "retry": {
            "base_ms": ms(c.retry.base),
            "cap_ms": ms(c.retry.cap),
            "max_attempts": c.retry.max_attempts,
            "deadline_ms": ms(c.retry.deadline),
        },
        "retry_budget": {
            "capacity": c.retry_budget.capacity,
            "retry_cost": c.retry_budget.retry_cost,
            "timeout_cost": c.retry_budget.timeout_cost,
            "success_refund": c.retry_budget.success_refund,
        },
        "key_retention_s": c.key_retention.as_secs(),
        "settled_retention_s": c.settled_retention.as_secs(),
        "max_clock_offset_s": c.max_clock_offset.as_secs(),
        "lease_ttl_s": c.lease_ttl.map(|d| d.as_secs()),
        "lease_heartbeat_ms": c.lease_heartbeat.map(ms),
        "allow_insecure_http": c.allow_insecure_http,
        "proxy": c.proxy.clone().unwrap_or_default(),
        "proxy_from_env": c.proxy_from_env,
        "ca_bundle": path(&c.ca_bundle),
        "client_cert": path(&c.client_cert),
        "client_key": path(&c.client_key),
    })
}

/// Every setting as the bindings' options object shows it
/// ([`settings_json`]: a journal key as `"<set>"`), with URL credentials
/// (`base_url`, `proxy`) redacted, and the journal by its own redacted
/// `Debug`: one list of the settings for both.
impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut settings = settings_json(self);
        if let Some(map) = settings.as_object_mut() {
            map.remove("journal_path");
            for url in ["base_url", "proxy"] {
                if let Some(Value::String(u)) = map.get_mut(url) {
                    *u = crate::redact::redact_url(u);
                }
            }
        }
        f.debug_struct("ClientConfig")
            .field("journal", &self.journal)
            .field("settings", &format_args!("{settings}"))
            .finish()
    }
}

/// The core's defaults ([`ClientConfig::new`]) of every optional setting
/// as [`settings_json`] shows them (without `base_url` and `key_id`), so
/// that no binding writes a default twice.
pub fn defaults_json() -> Value {
    let mut doc = settings_json(&ClientConfig::new("", ""));
    if let Some(map) = doc.as_object_mut() {
        map.remove("base_url");
        map.remove("key_id");
    }
    doc
}

/// The value of the setting at `path` (`retry.base_ms`) in a
/// [`settings_json`] document.
pub fn setting_at<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |v, key| v.get(key))
}
