//! Settings of a [`Client`](super::Client).

use std::path::PathBuf;
use std::time::Duration;

pub use crate::journal::JournalChoice;
use crate::journal::JournalKey;
use crate::policy::RetryBudgetConfig;
use crate::policy::RetryPolicy;

/// Everything a client needs except its secret, which is passed separately
/// so that it never sits in a printable struct. Its `Debug` shows the base
/// URL, journal and proxy through [`redact_url`](crate::redact::redact_url) and
/// never the journal key.
#[derive(Clone)]
pub struct ClientConfig {
    /// The platform's base URL, e.g. `https://api.example.com` (a path
    /// prefix is allowed, sent and signed as part of every request target;
    /// no query). `https://` is required except for loopback hosts
    /// (`localhost`, `127.0.0.0/8`, `::1`) unless `allow_insecure_http`.
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
    /// Accept `http://` for a non-loopback host (default `false`): the
    /// signed requests and bodies then travel in clear, and the platform's
    /// clock is never learnt from such answers.
    pub allow_insecure_http: bool,
    /// An HTTP(S) proxy URL (`http://host:port`, `https://host:port`). No
    /// proxy is used unless set here or `proxy_from_env` is set.
    pub proxy: Option<String>,
    /// Use `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` (and `NO_PROXY`) from
    /// the environment when `proxy` is not set (default `false`).
    /// `HTTP_PROXY` is ignored when `REQUEST_METHOD` is set (CGI, "httpoxy").
    pub proxy_from_env: bool,
    /// A PEM file of CA certificates trusted instead of the operating
    /// system's trust store. Without it the system store is used (it
    /// honours `SSL_CERT_FILE` and `SSL_CERT_DIR`; the compiled-in Mozilla
    /// roots only if the system has none).
    pub ca_bundle: Option<PathBuf>,
    /// A PEM file with the client certificate (chain) for mutual TLS;
    /// requires `client_key`.
    pub client_cert: Option<PathBuf>,
    /// A PEM file with the client certificate's private key (PKCS#8,
    /// PKCS#1 or SEC1). Read once when the client is made; never printed.
    pub client_key: Option<PathBuf>,
    /// The largest clock offset learnt from a `401 timestamp_out_of_window`
    /// answer (default 600 s: the 300 s window plus 5 minutes). A larger
    /// one is not trusted: the call fails and the operation stays as it
    /// was. Zero never adjusts the clock.
    pub max_clock_offset: Duration,
    /// How long a call's lease on an operation holds past its holder's
    /// last renewal, beyond the request timeout: every lease write (the
    /// operation opened or claimed, an attempt recorded, a heartbeat) holds
    /// it for `lease_ttl` plus the request timeout, so that an attempt in
    /// flight is always covered. A live call renews it every
    /// [`ClientConfig::lease_heartbeat`] while it waits between attempts
    /// and before each attempt; a call that died stops renewing, and once
    /// its lease lapses another call (another instance of a fleet, a
    /// [`Client::take_over`](crate::Client::take_over)) may take the
    /// operation over. A call that finds at a renewal that its lease was
    /// lost (it was paused past it, and another call took the operation)
    /// never sends again and ends with `operation_busy`; the stores' epochs
    /// fence its writes. `None` (the default): the retry deadline plus
    /// 30 s, so that a lease outlasts any call even without renewals (a
    /// caller driving [`Call`](crate::client::Call) with its own HTTP client that
    /// overruns the attempt's timeout still holds it). A fleet sets a few
    /// seconds to hand a dead instance's operations over within seconds.
    pub lease_ttl: Option<Duration>,
    /// How often a call renews its lease while it waits between attempts,
    /// and the most time since its last renewal with which it hands out an
    /// attempt. Shorter than the lease ttl (the effective one when
    /// `lease_ttl` is `None`) and at least 100 ms. `None` (the default): a
    /// third of the ttl, so that a live holder renews twice before its
    /// lease could lapse.
    pub lease_heartbeat: Option<Duration>,
    /// The key of the journal rows' integrity MACs (see
    /// docs/journal-integrity.md). `None` (the default): derived from the
    /// API secret, `HMAC-SHA256(secret, "payidem journal key v1")`. Set it
    /// to keep the journal readable across rotations of the API secret:
    /// rotating the secret with unsettled operations in the journal needs
    /// the old derived key here ([`JournalKey::derived_hex`]), or their
    /// rows are refused. Ignored by [`JournalChoice::Memory`] and
    /// [`JournalChoice::Custom`] (a custom journal carries its own key).
    /// Never printed.
    pub journal_key: Option<JournalKey>,
}

/// The default [`ClientConfig::max_clock_offset`]: the protocol's 300 s
/// window plus five minutes.
pub const DEFAULT_MAX_CLOCK_OFFSET: Duration =
    Duration::from_secs(crate::operation::DEFAULT_MAX_CLOCK_OFFSET_SECS);

impl ClientConfig {
    /// Defaults for `base_url` and `key_id`: the durable default journal
    /// ([`JournalChoice::Default`]), 5 s connect, 30 s
    /// per attempt, the protocol's retry defaults, 48 h key retention and 7
    /// days of settled history, https required (except loopback), no
    /// proxy, the system's trust store, a 600 s bound on the learnt
    /// clock offset, leases longer than any call, and the journal key
    /// derived from the API secret.
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
            allow_insecure_http: false,
            proxy: None,
            proxy_from_env: false,
            ca_bundle: None,
            client_cert: None,
            client_key: None,
            max_clock_offset: DEFAULT_MAX_CLOCK_OFFSET,
            lease_ttl: None,
            lease_heartbeat: None,
            journal_key: None,
        }
    }

    /// The lease ttl (at least 1 s) and heartbeat this configuration
    /// gives its calls, with their defaults; `invalid_argument`
    /// (`lease_heartbeat`) for a heartbeat that cannot keep the lease.
    pub(crate) fn lease_timing(&self) -> crate::error::Result<(Duration, Duration)> {
        let ttl = self
            .lease_ttl
            .unwrap_or_else(|| crate::journal::default_lease_ttl(self.retry.deadline))
            .max(Duration::from_secs(1));
        let Some(heartbeat) = self.lease_heartbeat else {
            return Ok((ttl, crate::journal::default_heartbeat(ttl)));
        };
        crate::journal::check_heartbeat(heartbeat, ttl)?;
        Ok((ttl, heartbeat))
    }
}
