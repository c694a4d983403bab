//! Events for logs and metrics: one per attempt ([`AttemptEvent`]), one
//! per call's end ([`CallEndEvent`]) and one per failed journal write
//! ([`JournalFailureEvent`]), with the one log-level policy every binding
//! follows ([`Event::level`]).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::metrics::{ClientMetrics, JournalWrite};
use crate::error::{ErrorCode, Result};
use crate::metrics::Snapshot;
use crate::operation::{AttemptKind, End, NextAction, OperationState, Outcome};
use crate::policy::Landed;

use super::Client;

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

/// How loud an event is, the same in every language: a first-attempt
/// success is `Debug`, a retry, backoff, clock adjustment, status query or
/// a success after them is `Info`, a give-up (unknown, key expired,
/// refused, nothing sent, a journal failure) is `Warn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Routine: nothing needed more than one attempt.
    Debug,
    /// The retry machinery worked: retries, backoffs, status queries, a
    /// caller's cancel.
    Info,
    /// The call gave up or the journal failed: someone may have to act.
    Warn,
}

impl LogLevel {
    /// Every level, quietest first.
    pub const ALL: [LogLevel; 3] = [LogLevel::Debug, LogLevel::Info, LogLevel::Warn];

    /// `debug`, `info` or `warn`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
        }
    }
}

impl AttemptEvent {
    /// The attempt's log level: `Debug` for a first attempt that settled
    /// with a 2xx, `Warn` when the client gives up, `Info` otherwise (a
    /// retry, a backoff, a clock adjustment, a status query, a settle after
    /// retries or with a refusal).
    pub fn level(&self) -> LogLevel {
        attempt_level(self.attempt, self.next, self.status)
    }
}

/// The log level of an attempt numbered `attempt` whose answer had
/// `status` and after which the client does `next` (see
/// [`AttemptEvent::level`]); for bindings that hold the fields only.
pub fn attempt_level(attempt: u32, next: NextAction, status: Option<u16>) -> LogLevel {
    match next {
        NextAction::GiveUp => LogLevel::Warn,
        NextAction::Settle if attempt <= 1 && status.is_some_and(|s| (200..300).contains(&s)) => {
            LogLevel::Debug
        }
        _ => LogLevel::Info,
    }
}

/// The end of one call (execute, resume, take-over) that drove an
/// operation. Holds no secret and no body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallEndEvent {
    /// The operation's order id.
    pub order_id: String,
    /// The operation's idempotency key.
    pub idempotency_key: String,
    /// The end's name, one of [`END_NAMES`](super::metrics::END_NAMES): the machine's
    /// end, `cancelled` or `journal_error`.
    pub end: &'static str,
    /// Whether the operation is settled for good (never sent again).
    pub is_final: bool,
    /// Whether the operation may have taken effect.
    pub landed: Landed,
    /// Attempts over every call of the operation.
    pub attempts: u32,
    /// How long the call took.
    pub duration: Duration,
    /// The result's error code, when the call failed.
    pub error_code: Option<ErrorCode>,
}

/// A journal write that failed. Holds no secret and no body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalFailureEvent {
    /// The operation's order id.
    pub order_id: String,
    /// The write that failed.
    pub write: JournalWrite,
    /// The journal's error message.
    pub message: String,
}

/// Any event a client emits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// One attempt's result (also given to the [`EventHook`]).
    Attempt(AttemptEvent),
    /// One call's end.
    CallEnded(CallEndEvent),
    /// One failed journal write.
    JournalFailed(JournalFailureEvent),
}

impl CallEndEvent {
    /// The call's log level: `Warn` for a give-up (`unknown`,
    /// `key_expired`, `refused`, `not_sent`, `journal_error`), `Debug` for a
    /// success at the first attempt, `Info` otherwise (a success after
    /// retries, a final refusal or conflict, a cancel).
    pub fn level(&self) -> LogLevel {
        call_end_level(self.end, self.attempts)
    }
}

/// The log level of a call that ended as `end` after `attempts` attempts
/// (see [`CallEndEvent::level`]).
pub fn call_end_level(end: &str, attempts: u32) -> LogLevel {
    match end {
        "succeeded" if attempts <= 1 => LogLevel::Debug,
        "succeeded" | "rejected" | "conflict" | "cancelled" => LogLevel::Info,
        _ => LogLevel::Warn,
    }
}

impl Event {
    /// The event's log level, the one policy of every binding:
    /// [`AttemptEvent::level`], [`CallEndEvent::level`], and `Warn` for a
    /// journal failure.
    pub fn level(&self) -> LogLevel {
        match self {
            Event::Attempt(e) => e.level(),
            Event::CallEnded(e) => e.level(),
            Event::JournalFailed(_) => LogLevel::Warn,
        }
    }

    /// The event's type name: `attempt`, `call_ended`, `journal_failed`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::Attempt(_) => "attempt",
            Event::CallEnded(_) => "call_ended",
            Event::JournalFailed(_) => "journal_failed",
        }
    }

    /// The event as a JSON object with `type` and `level` and the event's
    /// fields (durations in microseconds as `duration_us`, waits in
    /// milliseconds as `wait_ms`); absent optional fields are `null`.
    pub fn to_json(&self) -> String {
        let mut v = match self {
            Event::Attempt(e) => json!({
                "order_id": e.order_id,
                "idempotency_key": e.idempotency_key,
                "attempt": e.attempt,
                "kind": e.kind.as_str(),
                "next": e.next.as_str(),
                "wait_ms": e.wait.map(|w| u64::try_from(w.as_millis()).unwrap_or(u64::MAX)),
                "http_status": e.status,
                "error_code": e.error_code,
                "transport_error": e.transport_error,
                "replayed": e.replayed,
                "duration_us": micros(e.duration),
            }),
            Event::CallEnded(e) => json!({
                "order_id": e.order_id,
                "idempotency_key": e.idempotency_key,
                "end": e.end,
                "final": e.is_final,
                "landed": e.landed.as_str(),
                "attempts": e.attempts,
                "duration_us": micros(e.duration),
                "error_code": e.error_code.map(ErrorCode::as_str),
            }),
            Event::JournalFailed(e) => json!({
                "order_id": e.order_id,
                "write": e.write.as_str(),
                "durable": e.write.durable(),
                "message": e.message,
            }),
        };
        if let Value::Object(map) = &mut v {
            map.insert("type".into(), Value::from(self.type_name()));
            map.insert("level".into(), Value::from(self.level().as_str()));
        }
        v.to_string()
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// A callback that receives every [`Event`] of a client, from whichever
/// thread caused it.
pub type EventListener = Arc<dyn Fn(&Event) + Send + Sync>;

/// A callback that may be set, replaced or removed at any time, from any
/// thread; it is called without holding the slot's lock.
pub(crate) struct Slot<T: ?Sized>(RwLock<Option<Arc<T>>>);

impl<T: ?Sized> Slot<T> {
    pub(crate) fn new() -> Slot<T> {
        Slot(RwLock::new(None))
    }

    /// Sets the callback (`None`: removes it).
    pub(crate) fn set(&self, callback: Option<Arc<T>>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = callback;
    }

    /// Calls the callback, if one is set, through `call` with the argument
    /// `arg` makes (made only then). A panic in the call is caught and
    /// ignored: a failing logger must not abandon a payment half-way.
    pub(crate) fn call<A>(&self, arg: impl FnOnce() -> A, call: impl FnOnce(&T, A)) {
        let callback = self
            .0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(callback) = callback {
            let arg = arg();
            let _ = catch_unwind(AssertUnwindSafe(|| call(&callback, arg)));
        }
    }
}

/// A client's metrics and event listener.
pub(crate) struct Observer {
    pub(crate) metrics: ClientMetrics,
    listener: Slot<dyn Fn(&Event) + Send + Sync>,
}

impl Observer {
    pub(crate) fn new() -> Observer {
        Observer {
            metrics: ClientMetrics::new(),
            listener: Slot::new(),
        }
    }

    fn deliver(&self, event: impl FnOnce() -> Event) {
        self.listener
            .call(event, |listener, event| listener(&event));
    }

    /// Counts an attempt and hands it to the listener.
    pub(crate) fn attempt(&self, e: &AttemptEvent) {
        self.metrics.attempt(e.kind, e.status, e.next, e.duration);
        self.deliver(|| Event::Attempt(e.clone()));
    }

    /// Runs one journal write, measuring it; a failure is counted and
    /// handed to the listener.
    pub(crate) fn journal<T>(
        &self,
        write: JournalWrite,
        order_id: &str,
        run: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        let started = Instant::now();
        let result = run();
        self.metrics
            .journal(write, started.elapsed(), result.is_err());
        if let Err(e) = &result {
            self.deliver(|| {
                Event::JournalFailed(JournalFailureEvent {
                    order_id: order_id.to_owned(),
                    write,
                    message: e.message().to_owned(),
                })
            });
        }
        result
    }

    /// Counts a call's end and hands it to the listener: `end` is the
    /// machine's end when it has one, `result` what the caller gets.
    pub(crate) fn call_ended(
        &self,
        order_id: &str,
        key: &str,
        end: Option<&End>,
        result: &Result<Outcome>,
        attempts: u32,
        duration: Duration,
    ) {
        let error_code = result.as_ref().err().map(|e| e.code());
        let (name, is_final, landed) = match (error_code, end) {
            (Some(ErrorCode::Journal), _) | (_, None) => ("journal_error", false, Landed::Maybe),
            (Some(ErrorCode::Cancelled), Some(end)) => ("cancelled", false, end.landed()),
            (_, Some(end)) => (end.as_str(), end.is_final(), end.landed()),
        };
        self.metrics.call_ended(name, is_final.then_some(duration));
        self.deliver(|| {
            Event::CallEnded(CallEndEvent {
                order_id: order_id.to_owned(),
                idempotency_key: key.to_owned(),
                end: name,
                is_final,
                landed,
                attempts,
                duration,
                error_code,
            })
        });
    }
}

impl Client {
    /// The client's metrics now (shared by its clones): attempts, call
    /// ends, time to settle, journal latency and failures, and the
    /// journal's count of operations whose outcome is unknown (read from
    /// the journal now; left out when the journal cannot answer). See
    /// `docs/metrics.md`.
    pub fn metrics(&self) -> Snapshot {
        let unknown = self
            .shared
            .journal
            .list(&[OperationState::InFlight, OperationState::Unknown])
            .ok()
            .map(|l| l.len());
        self.shared.observer.metrics.snapshot(unknown)
    }

    /// Sets (or with `None` removes) the listener that receives every
    /// [`Event`] of this client and its clones: attempts, call ends and
    /// journal failures. Independent of the per-attempt
    /// [`Client::with_event_hook`]. A panicking listener is ignored.
    pub fn set_event_listener(&self, listener: Option<EventListener>) {
        self.shared.observer.listener.set(listener);
    }

    /// The client with `listener` receiving every [`Event`] (see
    /// [`Client::set_event_listener`]).
    pub fn with_event_listener(self, listener: EventListener) -> Client {
        self.set_event_listener(Some(listener));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_makes_its_argument_only_when_set_and_ignores_a_panicking_callback() {
        let slot: Slot<dyn Fn(&u32) -> u32 + Send + Sync> = Slot::new();
        slot.call(|| -> u32 { panic!("made with no callback set") }, |_, _| {});
        let seen = std::sync::Mutex::new(Vec::new());
        let record = |f: &(dyn Fn(&u32) -> u32 + Send + Sync + 'static), n: u32| {
            let v = f(&n);
            seen.lock().unwrap().push(v);
        };
        slot.set(Some(Arc::new(|n: &u32| n + 1)));
        slot.call(|| 41, record);
        slot.set(Some(Arc::new(|_: &u32| -> u32 {
            panic!("a broken logger")
        })));
        slot.call(|| 1, record);
        slot.set(None);
        slot.call(|| 2, record);
        assert_eq!(*seen.lock().unwrap(), vec![42]);
    }

    #[test]
    fn the_level_policy_is_debug_for_first_successes_info_for_retries_warn_for_give_ups() {
        assert_eq!(
            attempt_level(1, NextAction::Settle, Some(201)),
            LogLevel::Debug
        );
        assert_eq!(
            attempt_level(2, NextAction::Settle, Some(201)),
            LogLevel::Info
        );
        assert_eq!(
            attempt_level(1, NextAction::Settle, Some(402)),
            LogLevel::Info
        );
        for next in [
            NextAction::RetryNow,
            NextAction::RetryLater,
            NextAction::AdjustClock,
            NextAction::QueryStatus,
            NextAction::QueryLater,
        ] {
            assert_eq!(attempt_level(1, next, Some(503)), LogLevel::Info);
        }
        assert_eq!(attempt_level(1, NextAction::GiveUp, None), LogLevel::Warn);
        assert_eq!(call_end_level("succeeded", 1), LogLevel::Debug);
        assert_eq!(call_end_level("succeeded", 3), LogLevel::Info);
        assert_eq!(call_end_level("cancelled", 1), LogLevel::Info);
        for end in [
            "unknown",
            "key_expired",
            "refused",
            "not_sent",
            "journal_error",
        ] {
            assert_eq!(call_end_level(end, 2), LogLevel::Warn, "{end}");
        }
    }

    #[test]
    fn event_json_names_its_type_and_level_and_holds_no_body() {
        let e = Event::CallEnded(CallEndEvent {
            order_id: "ord-1".into(),
            idempotency_key: "create-ord-1".into(),
            end: "unknown",
            is_final: false,
            landed: Landed::Maybe,
            attempts: 3,
            duration: Duration::from_millis(5),
            error_code: Some(ErrorCode::OutcomeUnknown),
        });
        let v: Value = serde_json::from_str(&e.to_json()).unwrap();
        assert_eq!(v["type"], "call_ended");
        assert_eq!(v["level"], "warn");
        assert_eq!(v["end"], "unknown");
        assert_eq!(v["error_code"], "outcome_unknown");
        assert_eq!(v["duration_us"], 5000);
    }
}
