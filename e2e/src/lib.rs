//! Shared helpers of payidem's end-to-end tests, chaos test and demo: a
//! mock platform on loopback and clients wired to it.

pub mod disk;
pub mod fleet;
pub mod fsync_floor;
pub mod load;
pub mod pg;
pub mod plan;
pub mod report;
pub mod takeover;
pub mod worker;

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use payidem::client::{AttemptEvent, EventHook, RetryBudgetConfig};
use payidem::policy::RetryPolicy;
use payidem::{Client, ClientConfig, JournalChoice, OperationSpec};
use payidem_mock::{
    FaultKind, FaultSettings, MockConfig, MockServer, DEFAULT_KEY_ID, DEFAULT_SECRET,
};

/// A mock platform on 127.0.0.1 with a free port, control routes on.
pub fn start_mock() -> MockServer {
    start_mock_with(MockConfig::default())
}

/// A mock platform on 127.0.0.1 with a free port, control routes on and a
/// fixed seed, otherwise as `config` says.
pub fn start_mock_with(config: MockConfig) -> MockServer {
    let config = MockConfig {
        port: 0,
        control: true,
        seed: Some(config.seed.unwrap_or(7)),
        ..config
    };
    MockServer::start(config).expect("the mock platform starts")
}

/// The chaos mix: every fault kind on, 44 % of operation attempts and 10 %
/// of status queries faulted, `delay_after_commit` holding answers 600 ms
/// (longer than a worker's request timeout).
pub fn chaos_faults() -> FaultSettings {
    let mut f = FaultSettings::none();
    for (kind, p) in [
        (FaultKind::Error500BeforeCommit, 0.06),
        (FaultKind::Error500AfterCommit, 0.06),
        (FaultKind::Error502, 0.06),
        (FaultKind::Error503, 0.02),
        (FaultKind::Error429, 0.02),
        (FaultKind::Timeout504BeforeCommit, 0.06),
        (FaultKind::Timeout504AfterCommit, 0.06),
        (FaultKind::DropAfterCommit, 0.06),
        (FaultKind::DelayAfterCommit, 0.04),
        (FaultKind::StatusError503, 0.10),
    ] {
        f.set(kind, p).expect("the chaos mix is valid");
    }
    f.delay_ms = 600;
    f
}

/// Retry settings fast enough for tests: short backoff, and timeouts that
/// only a fault (or a dead platform) reaches, never a loaded test host's
/// scheduling of a healthy request (tests that need a timeout set theirs).
pub fn fast_config(base_url: &str, journal: JournalChoice) -> ClientConfig {
    let mut config = ClientConfig::new(base_url, DEFAULT_KEY_ID);
    config.journal = journal;
    config.connect_timeout = Duration::from_secs(2);
    config.request_timeout = Duration::from_secs(5);
    config.retry = RetryPolicy {
        base: Duration::from_millis(5),
        cap: Duration::from_secs(2),
        max_attempts: 8,
        deadline: Duration::from_secs(20),
    };
    config.retry_budget = RetryBudgetConfig {
        capacity: 1_000_000,
        ..RetryBudgetConfig::default()
    };
    config
}

/// A client of the mock's default test key with [`fast_config`].
pub fn client(base_url: &str, journal: JournalChoice) -> Client {
    client_with(fast_config(base_url, journal))
}

/// A client of the mock's default test key with `config`.
pub fn client_with(config: ClientConfig) -> Client {
    Client::new(config, DEFAULT_SECRET.as_bytes()).expect("the client opens")
}

/// A client journaling into the SQLite file at `path`.
pub fn client_on_disk(base_url: &str, path: &Path) -> Client {
    client(base_url, JournalChoice::Sqlite(path.to_owned()))
}

/// The JSON body of a payment create.
pub fn payment_body(order_id: &str, amount: u64) -> Vec<u8> {
    serde_json::to_vec(
        &serde_json::json!({"order_id": order_id, "amount": amount, "currency": "EUR"}),
    )
    .expect("JSON serialises")
}

/// The JSON body of a refund.
pub fn refund_body(amount: u64) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({ "amount": amount })).expect("JSON serialises")
}

/// The status path of a payment create: the payment by order id.
pub fn payment_status_path(order_id: &str) -> String {
    format!("/v1/payments?order_id={order_id}")
}

/// The request path of a refund of `payment_id`.
pub fn refund_path(payment_id: &str) -> String {
    format!("/v1/payments/{payment_id}/refunds")
}

/// The journal order id of the refund of `order_id`'s payment.
pub fn refund_order_id(order_id: &str) -> String {
    format!("{order_id}.refund")
}

/// The idempotency key of the refund of `order_id`'s payment.
pub fn refund_key(order_id: &str) -> String {
    format!("refund-{order_id}")
}

/// The owned parts of an [`OperationSpec`], so a spec can be built and kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedSpec {
    /// The order id.
    pub order_id: String,
    /// The request path.
    pub path: String,
    /// The body.
    pub body: Vec<u8>,
    /// An explicit key.
    pub idempotency_key: Option<String>,
    /// The status path.
    pub status_path: Option<String>,
}

impl OwnedSpec {
    /// A payment create of `amount` for `order_id`, with the default key and,
    /// if `with_status`, the status path by order id.
    pub fn payment(order_id: &str, amount: u64, with_status: bool) -> OwnedSpec {
        OwnedSpec {
            order_id: order_id.to_owned(),
            path: "/v1/payments".to_owned(),
            body: payment_body(order_id, amount),
            idempotency_key: None,
            status_path: with_status.then(|| payment_status_path(order_id)),
        }
    }

    /// A refund of `amount` of `payment_id`, the payment of `order_id`: order
    /// id [`refund_order_id`], key [`refund_key`], no status path (the
    /// refund's id is not known before it exists).
    pub fn refund(order_id: &str, payment_id: &str, amount: u64) -> OwnedSpec {
        OwnedSpec {
            order_id: refund_order_id(order_id),
            path: refund_path(payment_id),
            body: refund_body(amount),
            idempotency_key: Some(refund_key(order_id)),
            status_path: None,
        }
    }

    /// The spec (a POST).
    pub fn spec(&self) -> OperationSpec<'_> {
        OperationSpec {
            order_id: &self.order_id,
            method: "POST",
            path: &self.path,
            body: &self.body,
            idempotency_key: self.idempotency_key.as_deref(),
            status_path: self.status_path.as_deref(),
        }
    }
}

/// The `payment_id` of a payment answer (create, replay or status query).
pub fn payment_id_of(body: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    value.get("payment_id")?.as_str().map(str::to_owned)
}

/// Every attempt event a client reported, in order.
#[derive(Clone, Debug, Default)]
pub struct EventLog {
    events: Arc<Mutex<Vec<AttemptEvent>>>,
}

impl EventLog {
    /// An empty log.
    pub fn new() -> EventLog {
        EventLog::default()
    }

    /// A hook appending to this log.
    pub fn hook(&self) -> EventHook {
        let events = Arc::clone(&self.events);
        Arc::new(move |e: &AttemptEvent| {
            events
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(e.clone())
        })
    }

    /// A hook appending to this log and then calling `then` with the event
    /// and the number of events logged so far (1 for the first).
    pub fn hook_then(
        &self,
        then: impl Fn(&AttemptEvent, usize) + Send + Sync + 'static,
    ) -> EventHook {
        let events = Arc::clone(&self.events);
        Arc::new(move |e: &AttemptEvent| {
            let n = {
                let mut events = events.lock().unwrap_or_else(PoisonError::into_inner);
                events.push(e.clone());
                events.len()
            };
            then(e, n)
        })
    }

    /// The events so far.
    pub fn events(&self) -> Vec<AttemptEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The events of one order id.
    pub fn of(&self, order_id: &str) -> Vec<AttemptEvent> {
        self.events()
            .into_iter()
            .filter(|e| e.order_id == order_id)
            .collect()
    }
}
