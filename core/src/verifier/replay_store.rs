//! Where a [`Verifier`](super::Verifier) records the nonces it
//! accepted: in its own memory (the default, one process), or in a Redis
//! server shared by a fleet of verifiers, so that a request accepted by one
//! node is refused as a replay by every other node.
//!
//! The Redis store runs one Lua script per accepted signature (one round
//! trip): it reads the store's *epoch* (created from the server's clock when
//! missing), refuses a request signed at or before `epoch + epoch_skew`, and
//! otherwise claims the nonce with `SET key 1 NX EXAT (timestamp + window +
//! margin)`. Any failure — unreachable, timeout, `OOM`, a script error —
//! fails closed with [`ErrorCode::ReplayStoreUnavailable`] (503 with
//! `Retry-After`); it never falls back to memory and never accepts. The rule
//! and the server's requirements are in `docs/replay-store.md`.

use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::ConnectionLike;

use crate::error::{Error, ErrorCode, Result};

/// Seconds a nonce stays in Redis past the end of its window (covers clock
/// differences between the verifiers and the Redis server): 30.
pub const DEFAULT_MARGIN_SECONDS: u64 = 30;
/// Seconds after the store's epoch during which requests are still refused
/// (covers signers whose clock runs ahead of the verifiers'): 2.
pub const DEFAULT_EPOCH_SKEW_SECONDS: u64 = 2;
/// The default prefix of every key the store writes.
pub const DEFAULT_KEY_PREFIX: &str = "payidem:replay:";
/// The default bound on connecting to Redis: 250 ms.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_millis(250);
/// The default bound on one command's write and read: 250 ms.
pub const DEFAULT_IO_TIMEOUT: Duration = Duration::from_millis(250);
/// The default number of idle connections kept for reuse: 16.
pub const DEFAULT_POOL_SIZE: usize = 16;
pub use crate::protocol::refusal::UNAVAILABLE_RETRY_AFTER_SECONDS;

/// The longest key prefix accepted, in bytes.
const MAX_KEY_PREFIX_BYTES: usize = 128;

/// Where a verifier records nonces.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ReplayStore {
    /// In this process's memory, sharded per key id (the default): exact
    /// for one verifier process, blind to every other one.
    #[default]
    Memory,
    /// In a Redis server shared by every verifier of a fleet.
    Redis(RedisStoreConfig),
}

impl ReplayStore {
    /// The store named by `url`: `memory` (or an empty string) for the
    /// in-memory store; `redis://[user:password@]host[:port][/db]`,
    /// `unix:///path/to/redis.sock` or `redis+unix:///path` for Redis with
    /// the defaults of [`RedisStoreConfig::new`]. Anything else is
    /// `invalid_argument` naming `replay_store` (the message never repeats
    /// the URL, which may hold a password). Nothing is connected here.
    pub fn from_url(url: &str) -> Result<ReplayStore> {
        let url = url.trim();
        if url.is_empty() || url == "memory" {
            return Ok(ReplayStore::Memory);
        }
        let config = RedisStoreConfig::new(url);
        config.check()?;
        Ok(ReplayStore::Redis(config))
    }
}

/// Settings of the Redis replay store.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisStoreConfig {
    /// `redis://…`, `unix://…` or `redis+unix://…` (no TLS). `Debug` never
    /// shows its user, password or query.
    pub url: String,
    /// Prefix of every key: the epoch is `{prefix}epoch`, a nonce
    /// `{prefix}{key_id}:{nonce}`. Verifiers of one fleet must share it; two
    /// fleets on one server must not. At most 128 bytes, no whitespace.
    pub key_prefix: String,
    /// Seconds a nonce is kept past `timestamp + window`; at least the
    /// largest difference between a verifier's clock and the server's.
    pub margin_seconds: u64,
    /// Requests whose timestamp is at or before `epoch + epoch_skew_seconds`
    /// are refused; at least how far a signer's clock may run ahead of the
    /// verifiers' and still be covered by the guard.
    pub epoch_skew_seconds: u64,
    /// Bound on opening one connection.
    pub connect_timeout: Duration,
    /// Bound on writing one command and on reading its reply.
    pub io_timeout: Duration,
    /// Idle connections kept for reuse (more are opened under load, and
    /// closed after use).
    pub pool_size: usize,
}

impl RedisStoreConfig {
    /// `url` with every other setting at its default.
    pub fn new(url: &str) -> RedisStoreConfig {
        RedisStoreConfig {
            url: url.to_owned(),
            key_prefix: DEFAULT_KEY_PREFIX.to_owned(),
            margin_seconds: DEFAULT_MARGIN_SECONDS,
            epoch_skew_seconds: DEFAULT_EPOCH_SKEW_SECONDS,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            io_timeout: DEFAULT_IO_TIMEOUT,
            pool_size: DEFAULT_POOL_SIZE,
        }
    }

    /// Checks every setting; `invalid_argument` naming the first bad one.
    pub fn check(&self) -> Result<()> {
        let scheme = self.url.split_once("://").map(|(s, _)| s);
        if !matches!(scheme, Some("redis" | "unix" | "redis+unix")) {
            return Err(Error::invalid(
                "replay_store",
                "must be \"memory\", redis://host[:port][/db], unix:///path or redis+unix:///path",
            ));
        }
        if redis::Client::open(self.url.as_str()).is_err() {
            return Err(Error::invalid(
                "replay_store",
                "is not a valid Redis URL (host, port, socket path or database)",
            ));
        }
        if self.key_prefix.len() > MAX_KEY_PREFIX_BYTES
            || self
                .key_prefix
                .bytes()
                .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        {
            return Err(Error::invalid(
                "key_prefix",
                format!("must be at most {MAX_KEY_PREFIX_BYTES} bytes, without whitespace"),
            ));
        }
        if self.connect_timeout.is_zero() {
            return Err(Error::invalid("connect_timeout", "must be positive"));
        }
        if self.io_timeout.is_zero() {
            return Err(Error::invalid("io_timeout", "must be positive"));
        }
        if self.margin_seconds > super::MAX_WINDOW_SECONDS {
            return Err(Error::invalid(
                "margin_seconds",
                format!("must be at most {}", super::MAX_WINDOW_SECONDS),
            ));
        }
        if self.epoch_skew_seconds > super::MAX_WINDOW_SECONDS {
            return Err(Error::invalid(
                "epoch_skew_seconds",
                format!("must be at most {}", super::MAX_WINDOW_SECONDS),
            ));
        }
        Ok(())
    }

    /// The URL without user, password, query or fragment, for logs and
    /// `Debug` ([`redact_url`](crate::redact::redact_url), the rule of every
    /// language).
    pub fn redacted_url(&self) -> String {
        crate::redact::redact_url(&self.url)
    }
}

impl fmt::Debug for RedisStoreConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStoreConfig")
            .field("url", &self.redacted_url())
            .field("key_prefix", &self.key_prefix)
            .field("margin_seconds", &self.margin_seconds)
            .field("epoch_skew_seconds", &self.epoch_skew_seconds)
            .field("connect_timeout", &self.connect_timeout)
            .field("io_timeout", &self.io_timeout)
            .field("pool_size", &self.pool_size)
            .finish()
    }
}

/// The claim script. KEYS[1] is the epoch key, KEYS[2] the nonce's key;
/// ARGV[1] the signed timestamp, ARGV[2] the nonce's expiry (EXAT),
/// ARGV[3] the epoch skew. Returns `{outcome, epoch, server_now}` with
/// outcome 1 claimed, 0 already claimed, 2 signed at or before the epoch
/// (plus skew), 3 an expiry the server's clock has already passed.
const CLAIM_SCRIPT: &str = r"
local now = tonumber(redis.call('TIME')[1])
local epoch = redis.call('GET', KEYS[1])
if epoch then
  epoch = tonumber(epoch)
else
  epoch = now
  redis.call('SET', KEYS[1], epoch)
end
if tonumber(ARGV[1]) <= epoch + tonumber(ARGV[3]) then
  return {2, epoch, now}
end
local exat = tonumber(ARGV[2])
if exat <= now then
  return {3, epoch, now}
end
if redis.call('SET', KEYS[2], '1', 'NX', 'EXAT', exat) then
  return {1, epoch, now}
end
return {0, epoch, now}
";

/// What the store answered for one nonce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// The nonce was free and is now held until its expiry.
    Claimed,
    /// The nonce is held already.
    Reused,
}

/// A live Redis replay store: a client, a small pool of connections and the
/// claim script.
pub(crate) struct RedisReplay {
    config: RedisStoreConfig,
    client: redis::Client,
    pool: Mutex<Vec<redis::Connection>>,
    script: redis::Script,
    epoch_key: String,
}

impl fmt::Debug for RedisReplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisReplay")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// A refusal because the store could not answer.
fn unavailable(why: &str) -> Error {
    Error::new(
        ErrorCode::ReplayStoreUnavailable,
        format!("the replay store of this server is unavailable ({why}); try again later"),
    )
}

/// What went wrong, in words that show nothing of the server.
fn describe(e: &redis::RedisError) -> &'static str {
    if e.is_timeout() {
        "timeout"
    } else if e.code() == Some("OOM") {
        "out of memory"
    } else if e.is_connection_refusal() {
        "connection refused"
    } else if e.is_io_error() || e.is_connection_dropped() {
        "connection lost"
    } else {
        "store error"
    }
}

impl RedisReplay {
    /// A store for `config` (checked); connects lazily.
    pub(crate) fn new(config: RedisStoreConfig) -> Result<RedisReplay> {
        config.check()?;
        let client = redis::Client::open(config.url.as_str())
            .map_err(|_| Error::invalid("replay_store", "is not a valid Redis URL"))?;
        let epoch_key = format!("{}epoch", config.key_prefix);
        Ok(RedisReplay {
            config,
            client,
            pool: Mutex::new(Vec::new()),
            script: redis::Script::new(CLAIM_SCRIPT),
            epoch_key,
        })
    }

    /// The settings.
    pub(crate) fn config(&self) -> &RedisStoreConfig {
        &self.config
    }

    fn connect(&self) -> redis::RedisResult<redis::Connection> {
        let con = self
            .client
            .get_connection_with_timeout(self.config.connect_timeout)?;
        con.set_read_timeout(Some(self.config.io_timeout))?;
        con.set_write_timeout(Some(self.config.io_timeout))?;
        Ok(con)
    }

    /// Runs `f` on a pooled (or new) connection. A pooled connection found
    /// closed (the server restarted, or closed it while idle) is replaced
    /// by a new one once; a connection that failed otherwise is dropped.
    fn with_connection<T>(
        &self,
        mut f: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> redis::RedisResult<T> {
        let pooled = self
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let (mut con, was_pooled) = match pooled {
            Some(con) => (con, true),
            None => (self.connect()?, false),
        };
        let mut result = f(&mut con);
        if was_pooled {
            if let Err(e) = &result {
                if e.is_connection_dropped() && !e.is_timeout() {
                    con = self.connect()?;
                    result = f(&mut con);
                }
            }
        }
        match &result {
            Ok(_) => {
                let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
                if pool.len() < self.config.pool_size {
                    pool.push(con);
                }
            }
            // A reply from the server (OOM, script error) leaves the
            // connection usable; anything else may have left half a reply.
            Err(e) if e.kind() != redis::ErrorKind::IoError && !e.is_timeout() => {
                let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
                if pool.len() < self.config.pool_size && con.is_open() {
                    pool.push(con);
                }
            }
            Err(_) => {}
        }
        result
    }

    /// Claims `nonce` of `key_id` until `expires_at` (Unix seconds), for a
    /// request signed at `timestamp`. `Err` is always
    /// `replay_store_unavailable`, with `Retry-After`.
    pub(crate) fn claim(
        &self,
        key_id: &str,
        nonce: &str,
        timestamp: u64,
        expires_at: u64,
    ) -> Result<Claim> {
        let nonce_key = format!("{}{key_id}:{nonce}", self.config.key_prefix);
        let mut invocation = self.script.prepare_invoke();
        invocation
            .key(&self.epoch_key)
            .key(&nonce_key)
            .arg(timestamp)
            .arg(expires_at)
            .arg(self.config.epoch_skew_seconds);
        let (outcome, epoch, server_now): (i64, u64, u64) = self
            .with_connection(|con| invocation.invoke(con))
            .map_err(|e| unavailable(describe(&e)))?;
        match outcome {
            1 => Ok(Claim::Claimed),
            0 => Ok(Claim::Reused),
            2 => Err(Error::new(
                ErrorCode::ReplayStoreUnavailable,
                format!(
                    "the replay store was reset at {epoch} (a restart or a failover): \
                     requests signed at or before {} are refused (server time {server_now}); \
                     sign a fresh attempt",
                    epoch.saturating_add(self.config.epoch_skew_seconds)
                ),
            )),
            3 => Err(unavailable(
                "the store's clock is ahead of this server's by more than the margin",
            )),
            _ => Err(unavailable("unexpected answer")),
        }
    }

    /// Connects, and checks that the server will never evict a live nonce:
    /// `maxmemory-policy` must be `noeviction` (read from `INFO memory`).
    pub(crate) fn check_server(&self) -> Result<()> {
        let info: String = self
            .with_connection(|con| redis::cmd("INFO").arg("memory").query(con))
            .map_err(|e| unavailable(describe(&e)))?;
        let policy = info
            .lines()
            .find_map(|l| l.trim().strip_prefix("maxmemory_policy:"))
            .unwrap_or("unknown");
        if policy != "noeviction" {
            return Err(Error::invalid(
                "replay_store",
                format!(
                    "the Redis server's maxmemory-policy is {policy}; the replay store needs \
                     noeviction (an evicted nonce could be replayed)"
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_choose_the_store() {
        assert_eq!(
            ReplayStore::from_url("memory").unwrap(),
            ReplayStore::Memory
        );
        assert_eq!(ReplayStore::from_url("").unwrap(), ReplayStore::Memory);
        for url in [
            "redis://127.0.0.1:6379",
            "redis://:pw@localhost/2",
            "unix:///tmp/redis.sock",
            "redis+unix:///tmp/redis.sock?db=1",
        ] {
            match ReplayStore::from_url(url).unwrap() {
                ReplayStore::Redis(c) => assert_eq!(c.url, url),
                other => panic!("{url}: {other:?}"),
            }
        }
        for url in [
            "rediss://h",
            "http://h",
            "redis:/h",
            "memcached://h",
            "redis://",
        ] {
            let e = ReplayStore::from_url(url).unwrap_err();
            assert_eq!(e.field(), Some("replay_store"), "{url}");
        }
        let e = ReplayStore::from_url("postgres://user:hunter2@h").unwrap_err();
        assert!(!e.message().contains("hunter2"));
    }

    #[test]
    fn settings_are_checked() {
        let mut c = RedisStoreConfig::new("redis://127.0.0.1");
        c.check().unwrap();
        c.key_prefix = "has space:".into();
        assert_eq!(c.check().unwrap_err().field(), Some("key_prefix"));
        c.key_prefix = "x".repeat(129);
        assert_eq!(c.check().unwrap_err().field(), Some("key_prefix"));
        c.key_prefix = DEFAULT_KEY_PREFIX.into();
        c.io_timeout = Duration::ZERO;
        assert_eq!(c.check().unwrap_err().field(), Some("io_timeout"));
        c.io_timeout = DEFAULT_IO_TIMEOUT;
        c.connect_timeout = Duration::ZERO;
        assert_eq!(c.check().unwrap_err().field(), Some("connect_timeout"));
    }

    #[test]
    fn debug_never_shows_the_password() {
        let c = RedisStoreConfig::new("redis://alice:hunter2@db.internal:6380/3");
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("alice"),
            "{shown}"
        );
        assert!(shown.contains("redis://***@db.internal:6380/3"), "{shown}");
        let c = RedisStoreConfig::new("unix:///run/redis.sock?pass=hunter2");
        assert_eq!(c.redacted_url(), "unix:///run/redis.sock?***");
    }

    #[test]
    fn an_unreachable_store_fails_closed() {
        let dir = std::env::temp_dir().join(format!("payidem-no-redis-{}", std::process::id()));
        let store = RedisReplay::new(RedisStoreConfig::new(&format!(
            "unix://{}/absent.sock",
            dir.display()
        )))
        .unwrap();
        let e = store
            .claim("key_1", "00112233-4455-4677-8899-aabbccddeeff", 100, 430)
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::ReplayStoreUnavailable);
        assert_eq!(
            crate::protocol::Refusal::verification_status(e.code()),
            Some(503),
            "the verifier answers it with 503"
        );
        assert!(!e.message().contains("absent.sock"), "{}", e.message());
        assert_eq!(
            store.check_server().unwrap_err().code(),
            ErrorCode::ReplayStoreUnavailable
        );
    }
}
