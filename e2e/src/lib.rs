//! Shared helpers of payidem's end-to-end tests, chaos test and demo: a
//! mock platform on loopback and clients wired to it.

use std::path::Path;
use std::time::Duration;

use payidem::client::RetryBudgetConfig;
use payidem::policy::RetryPolicy;
use payidem::{Client, ClientConfig, JournalChoice};
use payidem_mock::{MockConfig, MockServer, DEFAULT_KEY_ID, DEFAULT_SECRET};

/// A mock platform on 127.0.0.1 with a free port, control routes on.
pub fn start_mock() -> MockServer {
    let config = MockConfig {
        port: 0,
        control: true,
        seed: Some(7),
        ..MockConfig::default()
    };
    MockServer::start(config).expect("the mock platform starts")
}

/// Retry settings fast enough for tests: short backoff, short timeouts.
pub fn fast_config(base_url: &str, journal: JournalChoice) -> ClientConfig {
    let mut config = ClientConfig::new(base_url, DEFAULT_KEY_ID);
    config.journal = journal;
    config.connect_timeout = Duration::from_millis(500);
    config.request_timeout = Duration::from_millis(800);
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
    Client::new(fast_config(base_url, journal), DEFAULT_SECRET.as_bytes())
        .expect("the client opens")
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

/// The status path of a payment create: the payment by order id.
pub fn payment_status_path(order_id: &str) -> String {
    format!("/v1/payments?order_id={order_id}")
}
