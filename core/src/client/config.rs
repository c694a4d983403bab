//! Settings of a [`Client`](super::Client).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::budget::RetryBudgetConfig;
use crate::journal::Journal;
use crate::policy::RetryPolicy;

/// Where a client keeps its operations.
#[derive(Clone)]
pub enum JournalChoice {
    /// The durable default: a SQLite file at
    /// [`default_journal_path`](crate::journal::default_journal_path), its
    /// directories created owner-only (0700) and the file 0600.
    Default,
    /// A SQLite file (created 0600 if missing; its directory must exist).
    Sqlite(PathBuf),
    /// Memory only: operations are lost with the process. For tests.
    Memory,
    /// A journal the caller built.
    Custom(Arc<dyn Journal>),
}

impl JournalChoice {
    /// The choice a binding's journal setting names: none (or empty) is the
    /// durable [`JournalChoice::Default`],
    /// [`MEMORY_JOURNAL`](crate::journal::MEMORY_JOURNAL) is
    /// [`JournalChoice::Memory`], anything else a SQLite file.
    pub fn from_setting(setting: Option<&str>) -> JournalChoice {
        match setting {
            None | Some("") => JournalChoice::Default,
            Some(crate::journal::MEMORY_JOURNAL) => JournalChoice::Memory,
            Some(path) => JournalChoice::Sqlite(PathBuf::from(path)),
        }
    }
}

impl std::fmt::Debug for JournalChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JournalChoice::Default => f.write_str("Default"),
            JournalChoice::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            JournalChoice::Memory => f.write_str("Memory"),
            JournalChoice::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

/// Everything a client needs except its secret, which is passed separately
/// so that it never sits in a printable struct.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// The platform's base URL, e.g. `https://api.example.com` (a path
    /// prefix is allowed; no query).
    pub base_url: String,
    /// The key id sent in `X-Api-Key`.
    pub key_id: String,
    /// Where operations are kept.
    pub journal: JournalChoice,
    /// Longest wait for a TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// Longest wait for one attempt's whole response.
    pub request_timeout: Duration,
    /// Attempts, backoff and deadline of one call.
    pub retry: RetryPolicy,
    /// The shared retry budget.
    pub retry_budget: RetryBudgetConfig,
    /// How long the platform keeps idempotency keys (at most 48 h).
    pub key_retention: Duration,
    /// How long settled operations stay in the journal before purging. A
    /// purged order id executed again is a new operation (with the same
    /// default key, which the platform forgets after 48 h): keep this longer
    /// than any order id of yours can be retried.
    pub settled_retention: Duration,
}

impl ClientConfig {
    /// Defaults for `base_url` and `key_id`: the durable default journal
    /// ([`JournalChoice::Default`]), 5 s connect, 30 s
    /// per attempt, the protocol's retry defaults, 48 h key retention and 7
    /// days of settled history.
    pub fn new(base_url: impl Into<String>, key_id: impl Into<String>) -> ClientConfig {
        ClientConfig {
            base_url: base_url.into(),
            key_id: key_id.into(),
            journal: JournalChoice::Default,
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            retry: RetryPolicy::default(),
            retry_budget: RetryBudgetConfig::default(),
            key_retention: Duration::from_secs(crate::operation::PLATFORM_KEY_RETENTION_SECS),
            settled_retention: Duration::from_secs(7 * 24 * 3600),
        }
    }
}
