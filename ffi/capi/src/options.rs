//! The client's options, given as JSON so that new options never change
//! the ABI. Every key is documented on `payidem_client_new`.

use std::time::Duration;

use payidem::{ClientConfig, JournalChoice};
use serde_json::{Map, Value};

use crate::error::FfiError;

/// Parses the options object into a client configuration.
pub(crate) fn parse(json: &str) -> Result<ClientConfig, FfiError> {
    let value: Value = serde_json::from_str(json)
        .map_err(|e| FfiError::invalid("options_json", format!("is not valid JSON: {e}")))?;
    let root = object(&value, "options_json")?;
    for key in root.keys() {
        if !ROOT_KEYS.contains(&key.as_str()) {
            return Err(unknown(key, ""));
        }
    }
    let base_url = required_string(root, "base_url")?;
    let key_id = required_string(root, "key_id")?;
    let mut config = ClientConfig::new(base_url, key_id);
    config.journal = JournalChoice::from_setting(optional_string(root, "journal_path")?);
    if let Some(ms) = uint(root, "connect_timeout_ms", "")? {
        config.connect_timeout = Duration::from_millis(ms);
    }
    if let Some(ms) = uint(root, "request_timeout_ms", "")? {
        config.request_timeout = Duration::from_millis(ms);
    }
    if let Some(s) = uint(root, "key_retention_s", "")? {
        config.key_retention = Duration::from_secs(s);
    }
    if let Some(s) = uint(root, "settled_retention_s", "")? {
        config.settled_retention = Duration::from_secs(s);
    }
    if let Some(s) = uint(root, "max_clock_offset_s", "")? {
        config.max_clock_offset = Duration::from_secs(s);
    }
    if let Some(hex) = optional_string(root, "journal_key_hex")?.filter(|h| !h.is_empty()) {
        let key = payidem::journal::JournalKey::from_hex(hex).map_err(|e| {
            let why = e.message().trim_start_matches("journal_key: ").to_owned();
            FfiError::invalid("journal_key_hex", why)
        })?;
        config.journal_key = Some(key);
    }
    if let Some(allow) = boolean(root, "allow_insecure_http")? {
        config.allow_insecure_http = allow;
    }
    if let Some(from_env) = boolean(root, "proxy_from_env")? {
        config.proxy_from_env = from_env;
    }
    config.proxy = optional_string(root, "proxy")?
        .filter(|p| !p.is_empty())
        .map(str::to_owned);
    for (key, slot) in [
        ("ca_bundle", &mut config.ca_bundle),
        ("client_cert", &mut config.client_cert),
        ("client_key", &mut config.client_key),
    ] {
        *slot = optional_string(root, key)?
            .filter(|p| !p.is_empty())
            .map(std::path::PathBuf::from);
    }
    if let Some(retry) = root.get("retry") {
        let retry = object(retry, "retry")?;
        check_keys(retry, RETRY_KEYS, "retry.")?;
        if let Some(ms) = uint(retry, "base_ms", "retry.")? {
            config.retry.base = Duration::from_millis(ms);
        }
        if let Some(ms) = uint(retry, "cap_ms", "retry.")? {
            config.retry.cap = Duration::from_millis(ms);
        }
        if let Some(n) = uint(retry, "max_attempts", "retry.")? {
            config.retry.max_attempts = u32_of(n, "retry.max_attempts")?;
        }
        if let Some(ms) = uint(retry, "deadline_ms", "retry.")? {
            config.retry.deadline = Duration::from_millis(ms);
        }
    }
    if let Some(budget) = root.get("retry_budget") {
        let budget = object(budget, "retry_budget")?;
        check_keys(budget, BUDGET_KEYS, "retry_budget.")?;
        let b = &mut config.retry_budget;
        for (key, slot) in [
            ("capacity", &mut b.capacity),
            ("retry_cost", &mut b.retry_cost),
            ("timeout_cost", &mut b.timeout_cost),
            ("success_refund", &mut b.success_refund),
        ] {
            if let Some(n) = uint(budget, key, "retry_budget.")? {
                *slot = u32_of(n, &format!("retry_budget.{key}"))?;
            }
        }
    }
    Ok(config)
}

/// The option that sets a field core names in its configuration errors.
pub(crate) fn option_of_field(field: &str) -> Option<&'static str> {
    Some(match field {
        "max_attempts" => "retry.max_attempts",
        "backoff_base" => "retry.base_ms",
        "deadline" => "retry.deadline_ms",
        "request_timeout" => "request_timeout_ms",
        "connect_timeout" => "connect_timeout_ms",
        "key_retention_secs" => "key_retention_s",
        _ => return None,
    })
}

const ROOT_KEYS: &[&str] = &[
    "base_url",
    "key_id",
    "journal_path",
    "journal_key_hex",
    "connect_timeout_ms",
    "request_timeout_ms",
    "retry",
    "retry_budget",
    "key_retention_s",
    "settled_retention_s",
    "max_clock_offset_s",
    "allow_insecure_http",
    "proxy",
    "proxy_from_env",
    "ca_bundle",
    "client_cert",
    "client_key",
];
const RETRY_KEYS: &[&str] = &["base_ms", "cap_ms", "max_attempts", "deadline_ms"];
const BUDGET_KEYS: &[&str] = &["capacity", "retry_cost", "timeout_cost", "success_refund"];

fn unknown(key: &str, prefix: &str) -> FfiError {
    FfiError::invalid(&format!("{prefix}{key}"), "is not a known option")
}

fn check_keys(map: &Map<String, Value>, known: &[&str], prefix: &str) -> Result<(), FfiError> {
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => Err(unknown(key, prefix)),
        None => Ok(()),
    }
}

fn object<'a>(value: &'a Value, name: &str) -> Result<&'a Map<String, Value>, FfiError> {
    value
        .as_object()
        .ok_or_else(|| FfiError::invalid(name, "must be a JSON object"))
}

fn required_string<'a>(map: &'a Map<String, Value>, key: &str) -> Result<&'a str, FfiError> {
    optional_string(map, key)?.ok_or_else(|| FfiError::invalid(key, "is required"))
}

fn optional_string<'a>(
    map: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, FfiError> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(FfiError::invalid(key, "must be a string")),
    }
}

fn boolean(map: &Map<String, Value>, key: &str) -> Result<Option<bool>, FfiError> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(FfiError::invalid(key, "must be true or false")),
    }
}

fn uint(map: &Map<String, Value>, key: &str, prefix: &str) -> Result<Option<u64>, FfiError> {
    match map.get(key) {
        None => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            FfiError::invalid(&format!("{prefix}{key}"), "must be a non-negative integer")
        }),
    }
}

fn u32_of(n: u64, name: &str) -> Result<u32, FfiError> {
    u32::try_from(n).map_err(|_| FfiError::invalid(name, "is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(json: &str) -> String {
        let err = parse(json).unwrap_err();
        format!("{err:?}")
    }

    #[test]
    fn every_key_is_read() {
        let c = parse(
            r#"{"base_url":"http://127.0.0.1:1","key_id":"k","journal_path":":memory:",
                "connect_timeout_ms":1500,"request_timeout_ms":2500,
                "retry":{"base_ms":10,"cap_ms":20,"max_attempts":3,"deadline_ms":4000},
                "retry_budget":{"capacity":9,"retry_cost":2,"timeout_cost":3,"success_refund":1},
                "key_retention_s":60,"settled_retention_s":70}"#,
        )
        .unwrap();
        assert!(matches!(c.journal, JournalChoice::Memory));
        assert_eq!(c.connect_timeout, Duration::from_millis(1500));
        assert_eq!(c.request_timeout, Duration::from_millis(2500));
        assert_eq!(c.retry.base, Duration::from_millis(10));
        assert_eq!(c.retry.cap, Duration::from_millis(20));
        assert_eq!(c.retry.max_attempts, 3);
        assert_eq!(c.retry.deadline, Duration::from_secs(4));
        assert_eq!(c.retry_budget.capacity, 9);
        assert_eq!(c.retry_budget.timeout_cost, 3);
        assert_eq!(c.key_retention, Duration::from_secs(60));
        assert_eq!(c.settled_retention, Duration::from_secs(70));
        assert!(!c.allow_insecure_http && !c.proxy_from_env);
        assert_eq!(c.proxy, None);
        assert_eq!(c.ca_bundle, None);
        assert_eq!(
            c.max_clock_offset,
            payidem::client::DEFAULT_MAX_CLOCK_OFFSET
        );
        let c = parse(
            r#"{"base_url":"u","key_id":"k","max_clock_offset_s":900,
                "allow_insecure_http":true,"proxy":"http://proxy:3128","proxy_from_env":true,
                "ca_bundle":"/etc/ca.pem","client_cert":"/etc/c.pem","client_key":"/etc/c.key"}"#,
        )
        .unwrap();
        assert_eq!(c.max_clock_offset, Duration::from_secs(900));
        assert!(c.allow_insecure_http && c.proxy_from_env);
        assert_eq!(c.proxy.as_deref(), Some("http://proxy:3128"));
        assert_eq!(
            c.ca_bundle.as_deref(),
            Some(std::path::Path::new("/etc/ca.pem"))
        );
        assert_eq!(
            c.client_cert.as_deref(),
            Some(std::path::Path::new("/etc/c.pem"))
        );
        assert_eq!(
            c.client_key.as_deref(),
            Some(std::path::Path::new("/etc/c.key"))
        );
        let c = parse(r#"{"base_url":"u","key_id":"k","journal_path":"/tmp/j.sqlite3"}"#).unwrap();
        assert!(
            matches!(c.journal, JournalChoice::Sqlite(p) if p == std::path::Path::new("/tmp/j.sqlite3"))
        );
    }

    #[test]
    fn the_journal_key_is_read_from_hex_and_never_echoed() {
        let hex = "0123456789abcdef".repeat(4);
        let c = parse(&format!(
            r#"{{"base_url":"u","key_id":"k","journal_key_hex":"{hex}"}}"#
        ))
        .unwrap();
        assert_eq!(
            c.journal_key,
            Some(payidem::journal::JournalKey::from_hex(&hex).unwrap())
        );
        assert!(!format!("{c:?}").contains("0123456789abcdef"));
        let c = parse(r#"{"base_url":"u","key_id":"k","journal_key_hex":""}"#).unwrap();
        assert_eq!(c.journal_key, None);
        for bad in ["xyz0", "abcd", "0123456789abcde"] {
            let e = field_of(&format!(
                r#"{{"base_url":"u","key_id":"k","journal_key_hex":"{bad}"}}"#
            ));
            assert!(e.contains("\"journal_key_hex\""), "{e}");
            assert!(!e.contains(bad), "{e}");
        }
    }

    #[test]
    fn unknown_and_mistyped_keys_are_named() {
        assert!(field_of(r#"{"base_url":"u","key_id":"k","bogus":1}"#).contains("\"bogus\""));
        assert!(
            field_of(r#"{"base_url":"u","key_id":"k","retry":{"base":1}}"#)
                .contains("\"retry.base\"")
        );
        assert!(
            field_of(r#"{"base_url":"u","key_id":"k","retry":{"base_ms":-1}}"#)
                .contains("\"retry.base_ms\"")
        );
        assert!(field_of(r#"{"key_id":"k"}"#).contains("\"base_url\""));
        assert!(
            field_of(r#"{"base_url":"u","key_id":"k","allow_insecure_http":1}"#)
                .contains("\"allow_insecure_http\"")
        );
        assert!(
            field_of(r#"{"base_url":"u","key_id":"k","client_key":7}"#).contains("\"client_key\"")
        );
        assert!(field_of(r#"[1]"#).contains("\"options_json\""));
        assert!(field_of(r#"{"#).contains("\"options_json\""));
        assert!(field_of(
            r#"{"base_url":"u","key_id":"k","retry_budget":{"capacity":5000000000}}"#
        )
        .contains("\"retry_budget.capacity\""));
    }
}
