//! Every setting a binding hands to the core, read from JSON with one rule
//! per setting, so that C, Go, Python and Rust mean the same by every
//! value.
//!
//! The rules, for every setting:
//!
//! - absent, or JSON `null`: the core's default (the one
//!   [`ClientConfig::new`](crate::client::ClientConfig::new) and
//!   [`CallLimits::default`](crate::operation::CallLimits::default) hold);
//! - a number: a JSON integer (never a fraction, never a string) inside the
//!   setting's range; what 0 means is said by each setting (either a value
//!   with a meaning of its own, or out of range); anything else, negative
//!   and too large included, is `invalid_argument` naming the setting
//!   (`retry.base_ms`) with "must be an integer from MIN to MAX";
//! - a flag: `true` or `false`; a text: a JSON string;
//! - an unknown key is `invalid_argument` naming it: a mistyped setting
//!   never passes silently.
//!
//! Every duration is at most [`MAX_DURATION_SECS`], so that every binding
//! can hold every accepted value (Go's `time.Duration` ends at 292 years)
//! and no sum of durations overflows.
//!
//! [`client`] holds the client's options object (`payidem_client_new`),
//! [`start`] the pure machine's start object (`payidem_operation_new`).

pub mod client;
pub mod start;

use std::time::Duration;

use serde_json::{Map, Value};

use crate::policy::RetryPolicy;

/// The longest duration any setting takes, in seconds (about 31.7 years).
pub const MAX_DURATION_SECS: u64 = 1_000_000_000;
/// [`MAX_DURATION_SECS`] in milliseconds.
pub const MAX_DURATION_MS: u64 = MAX_DURATION_SECS * 1000;

/// A setting that broke its rule: `invalid_argument` naming the setting by
/// its JSON path (`retry.base_ms`, `setup.retry_budget.capacity`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingError {
    field: String,
    message: String,
}

impl SettingError {
    /// An error naming `field`; the message is prefixed with it.
    pub fn new(field: &str, why: impl std::fmt::Display) -> SettingError {
        SettingError {
            field: field.to_owned(),
            message: format!("{field}: {why}"),
        }
    }

    /// The setting's JSON path.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The whole message, starting with the field.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// A core check's error (e.g. [`RetryPolicy::check`]'s
    /// `backoff_base`) renamed to the setting that sets the field, by
    /// `rename`; an error of another kind keeps its field and message.
    ///
    /// [`RetryPolicy::check`]: crate::policy::RetryPolicy::check
    pub(crate) fn from_core(e: &crate::error::Error, rename: &[(&str, &str)]) -> SettingError {
        let field = e.field().unwrap_or("settings");
        let setting = rename
            .iter()
            .find(|(core, _)| *core == field)
            .map_or(field, |(_, setting)| setting);
        let why = e
            .message()
            .strip_prefix(field)
            .and_then(|m| m.strip_prefix(": "))
            .unwrap_or(e.message());
        SettingError::new(setting, why)
    }
}

impl std::fmt::Display for SettingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SettingError {}

impl From<SettingError> for crate::error::Error {
    /// `invalid_argument` with the same message; its field is the setting
    /// when it is one of the core's known settings (an unknown key is
    /// named in the message only).
    fn from(e: SettingError) -> crate::error::Error {
        match client::FIELDS
            .iter()
            .chain(start::FIELDS)
            .find(|f| **f == e.field)
        {
            Some(field) => crate::error::Error::invalid(field, e.reason()),
            None => crate::error::Error::new(crate::error::ErrorCode::InvalidArgument, e.message),
        }
    }
}

impl SettingError {
    /// The message without the field: why the setting was refused.
    pub fn reason(&self) -> &str {
        self.message
            .strip_prefix(&self.field)
            .and_then(|m| m.strip_prefix(": "))
            .unwrap_or(&self.message)
    }
}

/// The inclusive range of a number setting.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Range {
    pub(crate) min: i128,
    pub(crate) max: i128,
}

const fn range(min: i128, max: u64) -> Range {
    Range {
        min,
        max: max as i128,
    }
}

/// Durations in milliseconds where 0 has no meaning: `1..=MAX_DURATION_MS`.
pub(crate) const POSITIVE_MS: Range = range(1, MAX_DURATION_MS);
/// A lease's heartbeat: `100..=MAX_DURATION_MS` milliseconds (the
/// shortest heartbeat the core accepts; shorter than the lease ttl is
/// checked with the ttl).
pub(crate) const HEARTBEAT_MS: Range = range(
    crate::journal::MIN_HEARTBEAT.as_millis() as i128,
    MAX_DURATION_MS,
);
/// Durations in milliseconds where 0 means none: `0..=MAX_DURATION_MS`.
pub(crate) const MS: Range = range(0, MAX_DURATION_MS);
/// Durations in seconds where 0 means none: `0..=MAX_DURATION_SECS`.
pub(crate) const SECS: Range = range(0, MAX_DURATION_SECS);
/// Durations in seconds where 0 has no meaning: `1..=MAX_DURATION_SECS`.
pub(crate) const POSITIVE_SECS: Range = range(1, MAX_DURATION_SECS);
/// The platform's key retention: `1..=172800` seconds (48 hours).
pub(crate) const KEY_RETENTION_SECS: Range =
    range(1, crate::operation::PLATFORM_KEY_RETENTION_SECS);
/// Attempts of one call, the first included: `1..=u32::MAX`.
pub(crate) const ATTEMPTS: Range = range(1, u32::MAX as u64);
/// Token counts of the retry budget, where 0 is a count: `0..=u32::MAX`.
pub(crate) const TOKENS: Range = range(0, u32::MAX as u64);
/// Any `u32` count (attempts already made).
pub(crate) const COUNT: Range = TOKENS;
/// Unix seconds: `0..=u64::MAX`.
pub(crate) const UNIX: Range = range(0, u64::MAX);
/// A clock offset in seconds, either sign.
pub(crate) const OFFSET_SECS: Range = range(-(MAX_DURATION_SECS as i128), MAX_DURATION_SECS);

/// A setting read from JSON: `None` when absent (or `null`), its value
/// when it keeps its rule, otherwise the error naming it.
pub(crate) type Setting<T> = Result<Option<T>, SettingError>;

/// A duration setting in milliseconds inside `range`.
pub(crate) fn millis(value: Option<&Value>, field: &str, range: Range) -> Setting<Duration> {
    Ok(unsigned(value, field, range)?.map(Duration::from_millis))
}

/// A duration setting in seconds inside `range`.
pub(crate) fn seconds(value: Option<&Value>, field: &str, range: Range) -> Setting<Duration> {
    Ok(unsigned(value, field, range)?.map(Duration::from_secs))
}

/// Sets `policy`'s present retry settings: `values` and the `fields`
/// naming them, both in the order base delay (ms), delay cap (ms),
/// attempts, deadline (ms). The client's `retry` object and a machine's
/// `setup` hold the same settings, with the same rules, under their own
/// names.
pub(crate) fn retry(
    policy: &mut RetryPolicy,
    values: [&Option<Value>; 4],
    fields: [&str; 4],
) -> Result<(), SettingError> {
    let [base, cap, attempts, deadline] = values.map(Option::as_ref);
    set(&mut policy.base, millis(base, fields[0], MS)?);
    set(&mut policy.cap, millis(cap, fields[1], MS)?);
    set(
        &mut policy.max_attempts,
        count(attempts, fields[2], ATTEMPTS)?,
    );
    set(
        &mut policy.deadline,
        millis(deadline, fields[3], POSITIVE_MS)?,
    );
    Ok(())
}

/// Stores a present setting's value in `slot`; an absent one keeps the
/// default there.
pub(crate) fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

/// A present setting: `None` for absent or `null`.
fn present(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| !v.is_null())
}

/// A number setting inside `range`; `None` when absent.
pub(crate) fn number(value: Option<&Value>, field: &str, range: Range) -> Setting<i128> {
    let Some(v) = present(value) else {
        return Ok(None);
    };
    let n = v
        .as_u64()
        .map(i128::from)
        .or_else(|| v.as_i64().map(i128::from));
    match n {
        Some(n) if (range.min..=range.max).contains(&n) => Ok(Some(n)),
        _ => Err(SettingError::new(
            field,
            format!("must be an integer from {} to {}", range.min, range.max),
        )),
    }
}

/// A `u64` setting inside `range` (whose minimum is not negative).
pub(crate) fn unsigned(value: Option<&Value>, field: &str, range: Range) -> Setting<u64> {
    Ok(number(value, field, range)?.map(|n| n as u64))
}

/// A `u32` setting inside `range` (at most `u32::MAX`).
pub(crate) fn count(value: Option<&Value>, field: &str, range: Range) -> Setting<u32> {
    Ok(number(value, field, range)?.map(|n| n as u32))
}

/// A flag setting.
pub(crate) fn flag(value: Option<&Value>, field: &str) -> Setting<bool> {
    match present(value) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(SettingError::new(field, "must be true or false")),
    }
}

/// A text setting.
pub(crate) fn text<'a>(value: Option<&'a Value>, field: &str) -> Setting<&'a str> {
    match present(value) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(SettingError::new(field, "must be a string")),
    }
}

/// A text setting that must be given.
pub(crate) fn required<'a>(value: Option<&'a Value>, field: &str) -> Result<&'a str, SettingError> {
    text(value, field)?.ok_or_else(|| SettingError::new(field, "is required"))
}

/// A nested object setting (`retry`, `setup`); `None` when absent.
pub(crate) fn object<'a>(value: Option<&'a Value>, field: &str) -> Setting<&'a Value> {
    match present(value) {
        None => Ok(None),
        Some(v @ Value::Object(_)) => Ok(Some(v)),
        Some(_) => Err(SettingError::new(field, "must be a JSON object")),
    }
}

/// Deserialises `value` (an object) into `T`, whose unknown keys land in
/// the map `unknown` returns: the first is an error naming it under
/// `prefix`.
pub(crate) fn shape<T: serde::de::DeserializeOwned>(
    value: &Value,
    name: &str,
    prefix: &str,
    unknown: impl Fn(&T) -> &Map<String, Value>,
) -> Result<T, SettingError> {
    if !value.is_object() {
        return Err(SettingError::new(name, "must be a JSON object"));
    }
    let t: T = serde_json::from_value(value.clone())
        .map_err(|e| SettingError::new(name, format!("is not a settings object: {e}")))?;
    if let Some(key) = unknown(&t).keys().next() {
        return Err(SettingError::new(
            &format!("{prefix}{key}"),
            "is not a known setting",
        ));
    }
    Ok(t)
}

/// Parses `json` (named `name` in errors) as a JSON value.
pub(crate) fn parse(json: &str, name: &str) -> Result<Value, SettingError> {
    serde_json::from_str(json)
        .map_err(|e| SettingError::new(name, format!("is not valid JSON: {e}")))
}

/// A duration in whole milliseconds, rounded up.
pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::client::client_config_from_json;
    use super::start::start_from_json;
    use crate::error::ErrorCode;

    fn field_of(json: &str) -> String {
        client_config_from_json(json)
            .unwrap_err()
            .field()
            .to_owned()
    }

    #[test]
    fn a_fraction_a_string_and_null_follow_one_rule() {
        let base = r#""base_url":"https://a.example","key_id":"k""#;
        assert_eq!(
            field_of(&format!("{{{base},\"connect_timeout_ms\":1.5}}")),
            "connect_timeout_ms"
        );
        assert_eq!(
            field_of(&format!("{{{base},\"connect_timeout_ms\":1000.0}}")),
            "connect_timeout_ms"
        );
        assert_eq!(
            field_of(&format!("{{{base},\"retry\":{{\"base_ms\":\"1\"}}}}")),
            "retry.base_ms"
        );
        let c =
            client_config_from_json(&format!("{{{base},\"connect_timeout_ms\":null}}")).unwrap();
        assert_eq!(
            c.connect_timeout,
            crate::client::ClientConfig::new("", "").connect_timeout
        );
        assert_eq!(field_of(&format!("{{{base},\"retry\":7}}")), "retry");
        assert_eq!(field_of("[]"), "options_json");
        assert_eq!(field_of("{"), "options_json");
    }

    #[test]
    fn cross_checks_name_the_setting_that_sets_the_field() {
        let e = client_config_from_json(
            r#"{"base_url":"u","key_id":"k","retry":{"base_ms":20,"cap_ms":10}}"#,
        )
        .unwrap_err();
        assert_eq!(e.field(), "retry.base_ms");
        assert!(e.message().starts_with("retry.base_ms: "), "{e}");
        let e = start_from_json(
            r#"{"operation":{"order_id":"o","method":"POST","path":"/p"},"now":1,"setup":{"backoff_base_ms":20,"backoff_cap_ms":10}}"#,
        )
        .unwrap_err();
        assert_eq!(e.field(), "setup.backoff_base_ms");
        let e = start_from_json(
            r#"{"operation":{"order_id":"bad id","method":"POST","path":"/p"},"now":1}"#,
        )
        .unwrap_err();
        assert_eq!(e.field(), "operation.order_id");
    }

    #[test]
    fn as_a_core_error_a_known_setting_keeps_its_field() {
        let e = crate::error::Error::from(
            client_config_from_json(r#"{"base_url":"u","key_id":"k","lease_ttl_s":0}"#)
                .unwrap_err(),
        );
        assert_eq!(
            (e.code(), e.field()),
            (ErrorCode::InvalidArgument, Some("lease_ttl_s"))
        );
        assert!(
            e.message()
                .starts_with("lease_ttl_s: must be an integer from 1 to 1000000000"),
            "{e}"
        );
        let e = crate::error::Error::from(
            client_config_from_json(r#"{"base_url":"u","key_id":"k","bogus":1}"#).unwrap_err(),
        );
        assert_eq!((e.code(), e.field()), (ErrorCode::InvalidArgument, None));
        assert!(e.message().contains("bogus"), "{e}");
    }

    #[test]
    fn a_bad_journal_key_is_named_and_never_echoed() {
        for bad in ["xyz0", "abcd", "0123456789abcde"] {
            let e = client_config_from_json(&format!(
                r#"{{"base_url":"u","key_id":"k","journal_key_hex":"{bad}"}}"#
            ))
            .unwrap_err();
            assert_eq!(e.field(), "journal_key_hex");
            assert!(!e.message().contains(bad), "{e}");
        }
        let hex = "0123456789abcdef".repeat(4);
        let c = client_config_from_json(&format!(
            r#"{{"base_url":"u","key_id":"k","journal_key_hex":"{hex}"}}"#
        ))
        .unwrap();
        assert!(c.journal_key.is_some());
        assert!(!super::client::settings_json(&c).to_string().contains(&hex));
    }
}
