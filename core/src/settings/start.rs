//! The pure machine's start object (`payidem_operation_new`'s
//! `start_json`, Go's `MachineStart`, Python's `Operation.start`): the
//! operation, what the caller's journal knows of it, the call's setup and
//! the time. Its rules, where they are not the client's:
//!
//! | setting | range | 0 means | default |
//! |---|---|---|---|
//! | `operation.order_id`, `.method`, `.path` | string | | required |
//! | `operation.body` / `.body_base64` | UTF-8 text / standard base64, not both | | empty |
//! | `operation.idempotency_key`, `.status_path` | string | | `create-{order_id}` / none |
//! | `progress.state` | an operation state's name | | `pending` |
//! | `progress.attempts` | 0..=4294967295 | a new operation | 0 |
//! | `progress.created_at` | 0..=2^64-1 | the epoch | `now` |
//! | `progress.first_recorded` | bool: the journal recorded the first attempt, unsent | | false |
//! | `setup.max_attempts` | as `retry.max_attempts` | invalid | 8 |
//! | `setup.backoff_base_ms`, `.backoff_cap_ms`, `.deadline_ms` | as `retry.base_ms`, `.cap_ms`, `.deadline_ms` | | 200, 10000, 60000 |
//! | `setup.key_retention_secs` | as `key_retention_s` | invalid | 172800 |
//! | `setup.max_clock_offset_secs` | as `max_clock_offset_s` | never adjust the clock | 600 |
//! | `setup.clock_offset` | -10^9..=10^9 | no offset | 0 |
//! | `setup.clock_trusted` | bool | | true |
//! | `setup.retry_budget` | null or an object as the client's `retry_budget` | | none |
//! | `now` | 0..=2^64-1 | the epoch | required |

use std::sync::Arc;

use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{
    count, flag, ms, number, object, required, seconds, set, shape, text, unsigned, SettingError,
    COUNT, KEY_RETENTION_SECS, OFFSET_SECS, SECS, UNIX,
};
use crate::operation::{
    CallLimits, CallSetup, FrozenOperation, OperationSpec, OperationState, Progress,
};
use crate::policy::{ClockOffset, RetryBudget, RetryBudgetConfig};

/// The setup's retry settings' paths, in [`super::retry`]'s order.
const RETRY_FIELDS: [&str; 4] = [
    "setup.backoff_base_ms",
    "setup.backoff_cap_ms",
    "setup.max_attempts",
    "setup.deadline_ms",
];

/// Every setting's JSON path, for errors naming it.
pub const FIELDS: &[&str] = &[
    "start_json",
    "operation",
    "operation.order_id",
    "operation.method",
    "operation.path",
    "operation.body",
    "operation.body_base64",
    "operation.idempotency_key",
    "operation.status_path",
    "progress",
    "progress.state",
    "progress.attempts",
    "progress.created_at",
    "progress.first_recorded",
    "setup",
    "setup.max_attempts",
    "setup.backoff_base_ms",
    "setup.backoff_cap_ms",
    "setup.deadline_ms",
    "setup.key_retention_secs",
    "setup.max_clock_offset_secs",
    "setup.clock_offset",
    "setup.clock_trusted",
    "setup.retry_budget",
    "setup.retry_budget.capacity",
    "setup.retry_budget.retry_cost",
    "setup.retry_budget.timeout_cost",
    "setup.retry_budget.success_refund",
    "now",
];

#[derive(Deserialize)]
struct StartObject {
    operation: Option<Value>,
    progress: Option<Value>,
    setup: Option<Value>,
    now: Option<Value>,
    #[serde(flatten)]
    unknown: Map<String, Value>,
}

#[derive(Deserialize)]
struct OperationObject {
    order_id: Option<Value>,
    method: Option<Value>,
    path: Option<Value>,
    body: Option<Value>,
    body_base64: Option<Value>,
    idempotency_key: Option<Value>,
    status_path: Option<Value>,
    #[serde(flatten)]
    unknown: Map<String, Value>,
}

#[derive(Deserialize)]
struct ProgressObject {
    state: Option<Value>,
    attempts: Option<Value>,
    created_at: Option<Value>,
    first_recorded: Option<Value>,
    #[serde(flatten)]
    unknown: Map<String, Value>,
}

#[derive(Deserialize)]
struct SetupObject {
    max_attempts: Option<Value>,
    backoff_base_ms: Option<Value>,
    backoff_cap_ms: Option<Value>,
    deadline_ms: Option<Value>,
    key_retention_secs: Option<Value>,
    max_clock_offset_secs: Option<Value>,
    clock_offset: Option<Value>,
    clock_trusted: Option<Value>,
    retry_budget: Option<Value>,
    #[serde(flatten)]
    unknown: Map<String, Value>,
}

/// What a machine starts from, every setting checked.
#[derive(Debug)]
pub struct Start {
    /// The operation, frozen (every field checked).
    pub operation: FrozenOperation,
    /// What the caller's journal knows of it.
    pub progress: Progress,
    /// The call's limits, clock and budget.
    pub setup: CallSetup,
    /// Local wall time, Unix seconds.
    pub now: u64,
}

/// The core checks' field names, by the setting that sets each.
const CORE_FIELDS: &[(&str, &str)] = &[
    ("order_id", "operation.order_id"),
    ("method", "operation.method"),
    ("path", "operation.path"),
    ("idempotency_key", "operation.idempotency_key"),
    ("status_path", "operation.status_path"),
    ("body", "operation.body"),
    ("max_attempts", "setup.max_attempts"),
    ("backoff_base", "setup.backoff_base_ms"),
    ("deadline", "setup.deadline_ms"),
    ("key_retention_secs", "setup.key_retention_secs"),
];

/// Renames a core check's error to the setting that sets its field.
pub fn rename_core_error(e: &crate::error::Error) -> SettingError {
    SettingError::from_core(e, CORE_FIELDS)
}

/// Parses `start_json` (named `start_json` in errors); see [`start`].
pub fn start_from_json(start_json: &str) -> Result<Start, SettingError> {
    start(&super::parse(start_json, "start_json")?)
}

/// The start `doc` asks for, every setting checked by its rule (see the
/// module's table).
pub fn start(doc: &Value) -> Result<Start, SettingError> {
    let s: StartObject = shape(doc, "start_json", "", |s: &StartObject| &s.unknown)?;
    let operation = object(s.operation.as_ref(), "operation")?
        .ok_or_else(|| SettingError::new("operation", "is required"))?;
    let operation = frozen(operation)?;
    let now = unsigned(s.now.as_ref(), "now", UNIX)?
        .ok_or_else(|| SettingError::new("now", "is required"))?;
    let progress = match object(s.progress.as_ref(), "progress")? {
        None => Progress {
            state: OperationState::Pending,
            attempts: 0,
            created_at: now,
            first_recorded: false,
        },
        Some(p) => progress(p, now)?,
    };
    let setup = match object(s.setup.as_ref(), "setup")? {
        None => setup(&json!({}))?,
        Some(v) => setup(v)?,
    };
    Ok(Start {
        operation,
        progress,
        setup,
        now,
    })
}

fn frozen(value: &Value) -> Result<FrozenOperation, SettingError> {
    let o: OperationObject = shape(value, "operation", "operation.", |o: &OperationObject| {
        &o.unknown
    })?;
    let body = match (
        text(o.body.as_ref(), "operation.body")?,
        text(o.body_base64.as_ref(), "operation.body_base64")?,
    ) {
        (Some(_), Some(_)) => {
            return Err(SettingError::new(
                "operation.body_base64",
                "must not be given with operation.body",
            ))
        }
        (Some(text), None) => text.as_bytes().to_vec(),
        (None, Some(b64)) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|_| {
                SettingError::new(
                    "operation.body_base64",
                    "is not standard base64 (RFC 4648, with padding)",
                )
            })?,
        (None, None) => Vec::new(),
    };
    OperationSpec {
        order_id: required(o.order_id.as_ref(), "operation.order_id")?,
        method: required(o.method.as_ref(), "operation.method")?,
        path: required(o.path.as_ref(), "operation.path")?,
        body: &body,
        idempotency_key: text(o.idempotency_key.as_ref(), "operation.idempotency_key")?,
        status_path: text(o.status_path.as_ref(), "operation.status_path")?,
    }
    .freeze()
    .map_err(|e| rename_core_error(&e))
}

fn progress(value: &Value, now: u64) -> Result<Progress, SettingError> {
    let p: ProgressObject = shape(value, "progress", "progress.", |p: &ProgressObject| {
        &p.unknown
    })?;
    let state = match text(p.state.as_ref(), "progress.state")? {
        None => OperationState::Pending,
        Some(name) => OperationState::from_name(name).ok_or_else(|| {
            SettingError::new(
                "progress.state",
                format!("\"{name}\" is not an operation state"),
            )
        })?,
    };
    Ok(Progress {
        state,
        attempts: count(p.attempts.as_ref(), "progress.attempts", COUNT)?.unwrap_or(0),
        created_at: unsigned(p.created_at.as_ref(), "progress.created_at", UNIX)?.unwrap_or(now),
        first_recorded: flag(p.first_recorded.as_ref(), "progress.first_recorded")?
            .unwrap_or(false),
    })
}

/// The call setup `value` (a `setup` object) asks for.
pub fn setup(value: &Value) -> Result<CallSetup, SettingError> {
    let s: SetupObject = shape(value, "setup", "setup.", |s: &SetupObject| &s.unknown)?;
    let mut limits = CallLimits::default();
    let values = [
        &s.backoff_base_ms,
        &s.backoff_cap_ms,
        &s.max_attempts,
        &s.deadline_ms,
    ];
    super::retry(&mut limits.policy, values, RETRY_FIELDS)?;
    set(
        &mut limits.key_retention_secs,
        unsigned(
            s.key_retention_secs.as_ref(),
            "setup.key_retention_secs",
            KEY_RETENTION_SECS,
        )?,
    );
    set(
        &mut limits.max_clock_offset,
        seconds(
            s.max_clock_offset_secs.as_ref(),
            "setup.max_clock_offset_secs",
            SECS,
        )?,
    );
    limits.check().map_err(|e| rename_core_error(&e))?;
    let clock = number(s.clock_offset.as_ref(), "setup.clock_offset", OFFSET_SECS)?
        .map_or_else(ClockOffset::default, |n| {
            ClockOffset::from_seconds(n as i64)
        });
    let budget = match object(s.retry_budget.as_ref(), "setup.retry_budget")? {
        None => None,
        Some(b) => {
            let mut config = RetryBudgetConfig::default();
            super::client::budget(b, "setup.retry_budget", &mut config)?;
            Some(Arc::new(RetryBudget::new(config)))
        }
    };
    Ok(CallSetup {
        limits,
        clock,
        clock_trusted: flag(s.clock_trusted.as_ref(), "setup.clock_trusted")?.unwrap_or(true),
        budget,
    })
}

/// Every setting of `start` at its value (the operation by its order id
/// only), in the start object's shape: `progress`, `setup` and `now`.
pub fn settings_json(start: &Start) -> Value {
    let l = &start.setup.limits;
    json!({
        "operation": { "order_id": start.operation.order_id },
        "progress": {
            "state": start.progress.state.as_str(),
            "attempts": start.progress.attempts,
            "created_at": start.progress.created_at,
            "first_recorded": start.progress.first_recorded,
        },
        "setup": {
            "max_attempts": l.policy.max_attempts,
            "backoff_base_ms": ms(l.policy.base),
            "backoff_cap_ms": ms(l.policy.cap),
            "deadline_ms": ms(l.policy.deadline),
            "key_retention_secs": l.key_retention_secs,
            "max_clock_offset_secs": l.max_clock_offset.as_secs(),
            "clock_offset": start.setup.clock.seconds(),
            "clock_trusted": start.setup.clock_trusted,
            "retry_budget": start.setup.budget.as_ref().map(|b| {
                let c = b.config();
                json!({
                    "capacity": c.capacity,
                    "retry_cost": c.retry_cost,
                    "timeout_cost": c.timeout_cost,
                    "success_refund": c.success_refund,
                })
            }),
        },
        "now": start.now,
    })
}
