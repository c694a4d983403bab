//! Per-attempt events for logs and metrics.

use std::sync::Arc;
use std::time::Duration;

use crate::operation::{AttemptKind, NextAction};

/// What happened in one attempt. Holds no secret and no body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptEvent {
    /// The operation's order id.
    pub order_id: String,
    /// The operation's idempotency key.
    pub idempotency_key: String,
    /// The attempt's number over every call of the operation (1 = first).
    pub attempt: u32,
    /// The operation's own request or a status query.
    pub kind: AttemptKind,
    /// What the client does next.
    pub next: NextAction,
    /// The wait before the next attempt, if any.
    pub wait: Option<Duration>,
    /// The HTTP status, if a response came.
    pub status: Option<u16>,
    /// The response's error code, if any.
    pub error_code: Option<String>,
    /// The transport failure, if no response came.
    pub transport_error: Option<String>,
    /// Whether the response was replayed by the platform.
    pub replayed: bool,
    /// How long the attempt took.
    pub duration: Duration,
}

/// A callback that receives every attempt's event, from whichever thread
/// made the attempt.
pub type EventHook = Arc<dyn Fn(&AttemptEvent) + Send + Sync>;
