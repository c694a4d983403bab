//! Settings of a mock server, from code, flags or a small JSON file.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use base64::Engine;
use serde::Deserialize;
use zeroize::Zeroizing;

use crate::clock::ClockSetting;
use crate::faults::{FaultKind, FaultSettings};

/// Key id of the documented default test key, used when no key is given.
pub const DEFAULT_KEY_ID: &str = "key_test_1";
/// Secret of the documented default test key. It is public: use it only for
/// offline tests and demos.
pub const DEFAULT_SECRET: &str = "sk_test_payidem_mock_secret_0001";
/// Default retention of idempotency keys: 48 hours.
pub const DEFAULT_RETENTION_SECONDS: u64 = 48 * 3600;
/// Default capacity of the replay cache per key id.
pub const DEFAULT_NONCE_CAPACITY: usize = 4_000_000;
/// Largest request body accepted, in bytes (1 MiB).
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// How long a connection may take and how many may be open; see the
/// README's "Limits" section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerLimits {
    /// A request must arrive in full (head and body) within this long of its
    /// first byte; otherwise it is answered `408 request_timeout` and the
    /// connection is closed. Default 10 s.
    pub request_timeout: Duration,
    /// A kept-alive connection with no request under way is closed after
    /// this long. Default 60 s.
    pub idle_timeout: Duration,
    /// A connection whose client does not take its answer within this long
    /// (from when the answer is ready) is closed. Default 10 s.
    pub write_timeout: Duration,
    /// Most connections open at once. Past it, or when the process runs out
    /// of descriptors, the connection idle the longest is closed to make
    /// room for a new one. Default 4096.
    pub max_connections: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            request_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(10),
            max_connections: 4096,
        }
    }
}

/// One active secret of a key id. Giving the same key id twice makes both
/// secrets active (rotation).
#[derive(Clone)]
pub struct KeySpec {
    /// The `X-Api-Key` value.
    pub key_id: String,
    /// The secret's bytes (16..=1024), wiped on drop.
    pub secret: Zeroizing<Vec<u8>>,
}

impl fmt::Debug for KeySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeySpec")
            .field("key_id", &self.key_id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl KeySpec {
    /// A key from a key id and a secret given as plain text or as
    /// `base64:...`. Fails naming `key_id` or `secret`; the error never
    /// shows the secret.
    pub fn new(key_id: &str, secret: &str) -> payidem::Result<KeySpec> {
        payidem::protocol::fields::check_key_id(key_id)?;
        let bytes = match secret.strip_prefix("base64:") {
            Some(b64) => Zeroizing::new(
                base64::engine::general_purpose::STANDARD
                    .decode(b64.trim())
                    .map_err(|_| {
                        payidem::Error::invalid("secret", "is not valid base64 after 'base64:'")
                    })?,
            ),
            None => Zeroizing::new(secret.as_bytes().to_vec()),
        };
        payidem::protocol::fields::check_secret(&bytes)?;
        Ok(KeySpec {
            key_id: key_id.to_owned(),
            secret: bytes,
        })
    }

    /// Parses `KEY_ID:SECRET` as given to `--key` (the key id ends at the
    /// first colon).
    pub fn parse_flag(flag: &str) -> payidem::Result<KeySpec> {
        let (id, secret) = flag
            .split_once(':')
            .ok_or_else(|| payidem::Error::invalid("key", "expected KEY_ID:SECRET"))?;
        KeySpec::new(id, secret)
    }

    /// The documented default test key.
    pub fn default_test_key() -> KeySpec {
        KeySpec::new(DEFAULT_KEY_ID, DEFAULT_SECRET).expect("the default key is valid")
    }
}

/// Everything a [`crate::MockServer`] needs.
#[derive(Clone, Debug)]
pub struct MockConfig {
    /// Address to bind (default `127.0.0.1`).
    pub host: String,
    /// Port to bind; 0 picks a free one.
    pub port: u16,
    /// Active keys; empty means the default test key.
    pub keys: Vec<KeySpec>,
    /// Allowed distance between a request's timestamp and the server clock.
    pub window_seconds: u64,
    /// Live nonces kept per key id before failing closed (in-memory store
    /// only).
    pub nonce_capacity: usize,
    /// Where accepted nonces are recorded: this process's memory (default),
    /// or a Redis server shared by several mock instances, which then act
    /// as one verifier fleet (`--nonce-store redis://…`).
    pub nonce_store: payidem::verifier::replay_store::ReplayStore,
    /// How long finished idempotency keys are kept.
    pub idempotency_retention_seconds: u64,
    /// The server's clock.
    pub clock: ClockSetting,
    /// Fault probabilities and delay.
    pub faults: FaultSettings,
    /// Seed of the fault draws and generated ids; `None` picks one at random.
    pub seed: Option<u64>,
    /// Whether the `/_mock` control routes (stats, reset, faults) exist.
    pub control: bool,
    /// Threads answering requests.
    pub workers: usize,
    /// How long every create and refund stays "in progress" before it runs,
    /// in milliseconds (lets tests overlap two requests with one key).
    pub processing_delay_ms: u64,
    /// Connection timeouts and the connection cap.
    pub limits: ServerLimits,
}

impl Default for MockConfig {
    fn default() -> Self {
        MockConfig {
            host: "127.0.0.1".to_owned(),
            port: 0,
            keys: Vec::new(),
            window_seconds: 300,
            nonce_capacity: DEFAULT_NONCE_CAPACITY,
            nonce_store: payidem::verifier::replay_store::ReplayStore::Memory,
            idempotency_retention_seconds: DEFAULT_RETENTION_SECONDS,
            clock: ClockSetting::default(),
            faults: FaultSettings::none(),
            seed: None,
            control: true,
            workers: 8,
            processing_delay_ms: 0,
            limits: ServerLimits::default(),
        }
    }
}

/// The `--config` file: every field optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Address to bind.
    pub host: Option<String>,
    /// Port to bind.
    pub port: Option<u16>,
    /// Keys; a key id may appear twice (rotation).
    #[serde(default)]
    pub keys: Vec<FileKey>,
    /// Fault kind → probability.
    #[serde(default)]
    pub faults: std::collections::BTreeMap<String, f64>,
    /// Delay of `delay_after_commit`.
    pub delay_ms: Option<u64>,
    /// `Retry-After` of the 429 and 503 faults.
    pub retry_after_seconds: Option<u64>,
    /// Seed.
    pub seed: Option<u64>,
    /// Server clock skew.
    pub clock_skew_seconds: Option<i64>,
    /// Idempotency retention.
    pub idempotency_retention_seconds: Option<u64>,
    /// Replay cache capacity per key id.
    pub nonce_capacity: Option<usize>,
    /// Nonce store: `memory`, `redis://…` or `unix://…`.
    pub nonce_store: Option<String>,
    /// Whether the control routes exist.
    pub control: Option<bool>,
}

/// One key in the `--config` file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileKey {
    /// Key id.
    pub key_id: String,
    /// Secret, plain text or `base64:...`; wiped on drop.
    pub secret: String,
}

impl Drop for FileKey {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.secret);
    }
}

impl fmt::Debug for FileKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileKey")
            .field("key_id", &self.key_id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl MockConfig {
    /// Adds a key (builder form).
    pub fn with_key(mut self, key: KeySpec) -> MockConfig {
        self.keys.push(key);
        self
    }

    /// Applies a `--config` file over these settings.
    pub fn apply_file(&mut self, path: &Path) -> payidem::Result<()> {
        let text = std::fs::read(path).map_err(|e| {
            payidem::Error::invalid(
                "config",
                format_args!("cannot read {}: {e}", path.display()),
            )
        })?;
        let file: FileConfig = serde_json::from_slice(&text).map_err(|e| {
            payidem::Error::invalid("config", format_args!("{}: {e}", path.display()))
        })?;
        if let Some(host) = file.host {
            self.host = host;
        }
        if let Some(port) = file.port {
            self.port = port;
        }
        for key in &file.keys {
            self.keys.push(KeySpec::new(&key.key_id, &key.secret)?);
        }
        for (name, p) in &file.faults {
            let kind = FaultKind::from_name(name).ok_or_else(|| {
                payidem::Error::invalid("fault", format_args!("unknown fault kind {name:?}"))
            })?;
            self.faults.set(kind, *p)?;
        }
        if let Some(d) = file.delay_ms {
            self.faults.delay_ms = d;
        }
        if let Some(s) = file.retry_after_seconds {
            self.faults.retry_after_seconds = s;
        }
        if file.seed.is_some() {
            self.seed = file.seed;
        }
        if let Some(skew_seconds) = file.clock_skew_seconds {
            self.clock = ClockSetting::System { skew_seconds };
        }
        if let Some(r) = file.idempotency_retention_seconds {
            self.idempotency_retention_seconds = r;
        }
        if let Some(n) = file.nonce_capacity {
            self.nonce_capacity = n;
        }
        if let Some(url) = &file.nonce_store {
            self.nonce_store = payidem::verifier::replay_store::ReplayStore::from_url(url)?;
        }
        if let Some(c) = file.control {
            self.control = c;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_flags() {
        let k = KeySpec::parse_flag("k1:base64:c2tfdGVzdF8wMTIzNDU2Nzg5YWJjZGVm").unwrap();
        assert_eq!(&k.secret[..], b"sk_test_0123456789abcdef");
        let k = KeySpec::parse_flag("k1:sk_test_with:colon_0123").unwrap();
        assert_eq!(&k.secret[..], b"sk_test_with:colon_0123");
        assert_eq!(
            KeySpec::parse_flag("k1:short").unwrap_err().field(),
            Some("secret")
        );
        assert_eq!(
            KeySpec::parse_flag("nokey").unwrap_err().field(),
            Some("key")
        );
        assert_eq!(
            KeySpec::parse_flag("bad id:sk_test_0123456789abcdef")
                .unwrap_err()
                .field(),
            Some("key_id")
        );
        let e = KeySpec::parse_flag("k:base64:!!!").unwrap_err();
        assert!(!e.message().contains("!!!"));
        assert!(!format!("{:?}", KeySpec::default_test_key()).contains(DEFAULT_SECRET));
    }

    #[test]
    fn nonce_store_from_the_config_file() {
        use payidem::verifier::replay_store::ReplayStore;
        let dir = std::env::temp_dir().join(format!("payidem-mock-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mock.json");
        let mut config = MockConfig::default();
        assert_eq!(config.nonce_store, ReplayStore::Memory);
        std::fs::write(&path, r#"{"nonce_store": "redis://:pw@127.0.0.1:6390/1"}"#).unwrap();
        config.apply_file(&path).unwrap();
        match &config.nonce_store {
            ReplayStore::Redis(r) => assert_eq!(r.url, "redis://:pw@127.0.0.1:6390/1"),
            other => panic!("{other:?}"),
        }
        assert!(
            !format!("{config:?}").contains("pw@"),
            "Debug hides the password"
        );
        std::fs::write(&path, r#"{"nonce_store": "ftp://x"}"#).unwrap();
        let e = config.apply_file(&path).unwrap_err();
        assert_eq!(e.field(), Some("replay_store"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
