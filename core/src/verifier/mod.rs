//! Platform-side verification of signed requests (protocol section 3,
//! steps 1 to 6), the replay store that remembers accepted nonces (in
//! memory, or in Redis shared by a fleet) and the verifier's metrics. Built
//! on the pure [`protocol`](crate::protocol) rules; the only part of the
//! crate below the client that may do I/O (a shared Redis replay store).

pub mod metrics;
#[cfg(test)]
mod refusal_tests;
pub mod replay_store;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use hmac::Mac;

use crate::error::{Error, ErrorCode, Result};
use crate::hex;
use crate::metrics::Snapshot;
use crate::protocol::canonical::{body_sha256_hex_bytes, CanonicalParts};
use crate::protocol::fields;
use crate::protocol::headers;
use crate::protocol::nonce_cache::{Budget, NonceCache, Refusal};
use crate::protocol::secret::KeyedMac;
use metrics::VerifierMetrics;
use replay_store::{Claim, RedisReplay, ReplayStore};

/// Settings of a [`Verifier`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifierConfig {
    /// Largest allowed distance, in seconds, between a request's timestamp
    /// and the server's clock. 0 means exactly equal, never "off"; at most
    /// [`MAX_WINDOW_SECONDS`].
    pub window_seconds: u64,
    /// Most live nonces kept per key id, exactly; past it the verifier fails
    /// closed with `replay_cache_full` until some expire. All key ids
    /// together are also bounded by [`Verifier::set_nonce_capacity_total`].
    pub nonce_capacity_per_key: usize,
    /// Lock shards of each key id's nonce cache (1..=256).
    pub shards: usize,
}

/// The largest `window_seconds` (about 31 years): the replay cache stores
/// expiries as 32-bit offsets from a 64-bit base, exact while every live
/// expiry lies within 2^32 - 2 seconds of now (at most twice the window).
pub const MAX_WINDOW_SECONDS: u64 = 1_000_000_000;

/// The default verifier-wide limit of nonces held across every key id
/// (16,000,000: about 540 MB of replay cache at the measured 33.6 bytes a
/// nonce, at most about 0.9 GB at the 57-byte worst point of a table's
/// growth).
pub const DEFAULT_NONCE_CAPACITY_TOTAL: usize = 16_000_000;

impl Default for VerifierConfig {
    fn default() -> Self {
        VerifierConfig {
            window_seconds: 300,
            nonce_capacity_per_key: 4_000_000,
            shards: 16,
        }
    }
}

/// One request as the platform received it.
#[derive(Clone, Copy, Debug)]
pub struct IncomingRequest<'a> {
    /// The HTTP method.
    pub method: &'a str,
    /// The request target exactly as received.
    pub path: &'a str,
    /// Every header, in any order; names compare ASCII case-insensitively.
    pub headers: &'a [(&'a str, &'a str)],
    /// The raw body.
    pub body: &'a [u8],
}

/// What a successful verification established: act on these values, not on
/// headers read again (a request carries each of them exactly once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verified<'a> {
    /// The key id that signed the request.
    pub key_id: &'a str,
    /// The signed timestamp.
    pub timestamp: u64,
    /// The request's idempotency key, when it carries one (never empty: an
    /// empty or repeated `Idempotency-Key` header fails verification).
    pub idempotency_key: Option<&'a str>,
    /// The signed nonce (lower-case UUID text), now recorded as used.
    pub nonce: &'a str,
}

struct KeyEntry {
    secrets: RwLock<Vec<KeyedMac>>,
    nonces: NonceCache,
}

/// Verifies signed requests for a set of key ids, each with one or more
/// active secrets, and remembers nonces to refuse replays.
///
/// A `Verifier` is `Send + Sync`; threads verify concurrently, contending
/// only on the nonce-cache shard their nonce falls into. Secrets are wiped on
/// drop and never shown by `Debug`.
pub struct Verifier {
    keys: HashMap<String, KeyEntry>,
    config: VerifierConfig,
    /// Nonces held by every key id's cache, against the verifier-wide limit.
    total: Arc<Budget>,
    /// The shared store, when nonces are not kept in memory.
    redis: Option<RedisReplay>,
    /// Verdicts by code.
    metrics: VerifierMetrics,
}

fn secrets_to_macs(secrets: &[&[u8]]) -> Result<Vec<KeyedMac>> {
    if secrets.is_empty() {
        return Err(Error::invalid(
            "secrets",
            "a key id needs at least one active secret",
        ));
    }
    secrets.iter().map(|s| KeyedMac::new(s)).collect()
}

fn refuse(code: ErrorCode, message: impl Into<String>) -> Error {
    Error::new(code, message)
}

impl Verifier {
    /// An empty verifier that keeps nonces in memory; add key ids with
    /// [`Verifier::add_key`].
    pub fn new(config: VerifierConfig) -> Result<Verifier> {
        Verifier::with_replay_store(config, ReplayStore::Memory)
    }

    /// An empty verifier that records nonces in `store`: in memory
    /// ([`ReplayStore::Memory`], the same as [`Verifier::new`]), or in a
    /// Redis server shared by a fleet ([`ReplayStore::Redis`]; see
    /// [`replay_store`]). Nothing is connected here: an unreachable
    /// Redis makes each verification fail closed with
    /// `replay_store_unavailable`; [`Verifier::check_replay_store`] tests it
    /// up front. With Redis, `nonce_capacity_per_key`, `shards` and
    /// [`Verifier::set_nonce_capacity_total`] bound nothing: the server's
    /// `maxmemory` does, and a full server fails closed the same way.
    pub fn with_replay_store(config: VerifierConfig, store: ReplayStore) -> Result<Verifier> {
        if config.shards == 0 || config.shards > 256 {
            return Err(Error::invalid("shards", "must be 1..=256"));
        }
        if config.window_seconds > MAX_WINDOW_SECONDS {
            return Err(Error::invalid(
                "window_seconds",
                format!("must be at most {MAX_WINDOW_SECONDS}"),
            ));
        }
        if config.nonce_capacity_per_key == 0 {
            return Err(Error::invalid(
                "nonce_capacity_per_key",
                "must be at least 1",
            ));
        }
        let redis = match store {
            ReplayStore::Memory => None,
            ReplayStore::Redis(redis) => Some(RedisReplay::new(redis)?),
        };
        Ok(Verifier {
            keys: HashMap::new(),
            config,
            total: Arc::new(Budget::new(DEFAULT_NONCE_CAPACITY_TOTAL)),
            redis,
            metrics: VerifierMetrics::default(),
        })
    }

    /// The replay store this verifier records nonces in.
    pub fn replay_store(&self) -> ReplayStore {
        match &self.redis {
            None => ReplayStore::Memory,
            Some(redis) => ReplayStore::Redis(redis.config().clone()),
        }
    }

    /// Checks the replay store now: always `Ok` in memory; with Redis, it
    /// connects and checks that the server never evicts keys
    /// (`maxmemory-policy noeviction`). Fails with
    /// `replay_store_unavailable` when the server cannot be reached, or
    /// `invalid_argument` naming `replay_store` when it may evict.
    pub fn check_replay_store(&self) -> Result<()> {
        match &self.redis {
            None => Ok(()),
            Some(redis) => redis.check_server(),
        }
    }

    /// Sets the verifier-wide limit of nonces held across every key id (a
    /// memory cap: each costs 28 to 57 bytes, 33.6 measured; default
    /// [`DEFAULT_NONCE_CAPACITY_TOTAL`]). Past it verification fails closed
    /// with `replay_cache_full` (503) until some expire, whichever key id
    /// holds them. Lowering it below what is held forgets nothing.
    pub fn set_nonce_capacity_total(&self, total: usize) -> Result<()> {
        if total == 0 {
            return Err(Error::invalid("nonce_capacity_total", "must be at least 1"));
        }
        self.total.set_limit(total);
        Ok(())
    }

    /// The verifier-wide limit of nonces held across every key id.
    pub fn nonce_capacity_total(&self) -> usize {
        self.total.limit()
    }

    /// Removes `key_id`: its secrets are wiped and its nonce memory freed;
    /// requests signed with it are then refused as `unknown_api_key`.
    pub fn remove_key(&mut self, key_id: &str) -> Result<()> {
        match self.keys.remove(key_id) {
            Some(_) => Ok(()),
            None => Err(Error::invalid("key_id", "is not configured")),
        }
    }

    /// Adds `key_id` with its active `secrets` (each 16..=1024 bytes).
    pub fn add_key(&mut self, key_id: &str, secrets: &[&[u8]]) -> Result<()> {
        fields::check_key_id(key_id)?;
        if self.keys.contains_key(key_id) {
            return Err(Error::invalid("key_id", "is already configured"));
        }
        let entry = KeyEntry {
            secrets: RwLock::new(secrets_to_macs(secrets)?),
            nonces: NonceCache::new(
                self.config.nonce_capacity_per_key,
                self.config.shards,
                (self.config.window_seconds / 4).max(1),
                self.total.clone(),
            ),
        };
        self.keys.insert(key_id.to_owned(), entry);
        Ok(())
    }

    /// Replaces the active secrets of a configured key id (rotation), keeping
    /// its nonce memory. Safe to call while other threads verify.
    pub fn set_secrets(&self, key_id: &str, secrets: &[&[u8]]) -> Result<()> {
        let entry = self
            .keys
            .get(key_id)
            .ok_or_else(|| Error::invalid("key_id", "is not configured"))?;
        let macs = secrets_to_macs(secrets)?;
        *entry.secrets.write().unwrap_or_else(|p| p.into_inner()) = macs;
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &VerifierConfig {
        &self.config
    }

    /// How many nonces are held for `key_id` in this process: every live
    /// one, plus expired ones whose slots are not yet reused or dropped
    /// (always 0 with a Redis replay store).
    pub fn nonces_held(&self, key_id: &str) -> usize {
        self.keys.get(key_id).map_or(0, |k| k.nonces.len())
    }

    /// Verifies `request` at the server's clock `now` (Unix seconds), in the
    /// protocol's order; the first failing check answers. On failure the error
    /// carries the code and [`Error::http_status`] of the protocol's table;
    /// `timestamp_out_of_window` also carries [`Error::server_time`].
    ///
    /// The replay cache keeps a monotonic clock per key id (the newest `now`
    /// given): nonces are only forgotten once expired by it, and a request
    /// whose timestamp is inside the window of `now` but whose nonce would
    /// already have expired by that clock is refused as
    /// `timestamp_out_of_window` (with `now` as the server time). So a clock
    /// stepped back, or threads whose clocks differ, never lets a replay
    /// through; a `now` far in the future narrows the window until the real
    /// clock catches up.
    ///
    /// Every verdict is counted in [`Verifier::metrics`].
    pub fn verify<'a>(&self, request: &IncomingRequest<'a>, now: u64) -> Result<Verified<'a>> {
        let verdict = self.verify_uncounted(request, now).map_err(|e| {
            match crate::protocol::Refusal::verification_status(e.code()) {
                Some(status) => e.with_status(status),
                None => e,
            }
        });
        (self.metrics).verdict(verdict.as_ref().err().map(Error::code));
        verdict
    }

    /// The verifier's metrics now: verdicts by code (`accepted` or the
    /// refusal's [`ErrorCode`] name) and, with the in-memory replay cache,
    /// its fill (nonces held and the verifier-wide capacity). See
    /// `docs/metrics.md`.
    pub fn metrics(&self) -> Snapshot {
        let cache = match self.redis {
            None => Some((self.total.held(), self.total.limit())),
            Some(_) => None,
        };
        self.metrics.snapshot(cache)
    }

    fn verify_uncounted<'a>(
        &self,
        request: &IncomingRequest<'a>,
        now: u64,
    ) -> Result<Verified<'a>> {
        let signed = SignedHeaders::find(request.headers)?;

        let entry = self.keys.get(signed.key_id).ok_or_else(|| {
            refuse(
                ErrorCode::UnknownApiKey,
                "the key id in X-Api-Key is not known",
            )
        })?;

        let distance = now.abs_diff(signed.timestamp);
        if distance > self.config.window_seconds {
            return Err(refuse(
                ErrorCode::TimestampOutOfWindow,
                format!(
                    "X-Timestamp is {distance} s away from the server's clock; at most {} s are allowed",
                    self.config.window_seconds
                ),
            )
            .with_server_time(now));
        }

        // Start loading the nonce's cache line now; the signature check below
        // hides the memory latency.
        let located = self
            .redis
            .is_none()
            .then(|| entry.nonces.locate(signed.nonce));

        let idempotency_key = signed.idempotency_key.unwrap_or("");
        let parts = CanonicalParts {
            method: request.method,
            path: request.path,
            timestamp: signed.timestamp_text,
            nonce: signed.nonce_text,
            idempotency_key,
        };
        let well_formed = fields::check_method(parts.method).is_ok()
            && fields::check_path(parts.path).is_ok()
            && !idempotency_key.contains('\n');
        let matches = || entry.signature_matches(&parts, request.body, &signed.signature);
        if !well_formed || !(planted!(MacCheckSkipped) || matches()) {
            return Err(refuse(
                ErrorCode::InvalidSignature,
                "X-Signature does not match the request for any active secret of this key id",
            ));
        }

        let expires_at = signed.timestamp.saturating_add(self.config.window_seconds);
        match (&self.redis, located) {
            (Some(redis), _) => {
                let until = expires_at.saturating_add(redis.config().margin_seconds);
                if redis.claim(signed.key_id, signed.nonce_text, signed.timestamp, until)?
                    == Claim::Reused
                {
                    return Err(refuse(ErrorCode::NonceReused, NONCE_REUSED));
                }
            }
            (None, Some(located)) => self.record_in_memory(entry, &located, expires_at, now)?,
            (None, None) => unreachable!("located whenever nonces are kept in memory"),
        }
        self.check_idempotency_key(request.method, &signed)?;

        Ok(Verified {
            key_id: signed.key_id,
            timestamp: signed.timestamp,
            idempotency_key: signed.idempotency_key,
            nonce: signed.nonce_text,
        })
    }

    /// Protocol step 5 with the in-memory replay cache.
    fn record_in_memory(
        &self,
        entry: &KeyEntry,
        located: &crate::protocol::nonce_cache::Located,
        expires_at: u64,
        now: u64,
    ) -> Result<()> {
        let mut recorded = entry.nonces.check_and_record(located, expires_at, now);
        if recorded == Err(Refusal::TotalFull) {
            // Expired nonces of other key ids may hold the budget.
            let freed: usize = self.keys.values().map(|k| k.nonces.purge(now)).sum();
            if freed > 0 {
                recorded = entry.nonces.check_and_record(located, expires_at, now);
            }
        }
        match recorded {
            Ok(()) => Ok(()),
            Err(Refusal::Stale(_)) => Err(refuse(
                ErrorCode::TimestampOutOfWindow,
                "X-Timestamp is too old for the newest clock this server has seen (its clock went back)",
            )
            .with_server_time(now)),
            Err(Refusal::TotalFull) => Err(refuse(
                ErrorCode::ReplayCacheFull,
                "the replay cache of this server is full; try again later",
            )),
            Err(Refusal::Reused) => Err(refuse(ErrorCode::NonceReused, NONCE_REUSED)),
            Err(Refusal::Full) => Err(refuse(
                ErrorCode::ReplayCacheFull,
                "the replay cache for this key id is full; try again later",
            )),
        }
    }

    /// Protocol step 6 and the idempotency key's own rules.
    fn check_idempotency_key(&self, method: &str, signed: &SignedHeaders<'_>) -> Result<()> {
        if method == "POST" && signed.idempotency_key.is_none() {
            return Err(refuse(
                ErrorCode::IdempotencyKeyRequired,
                "a POST must carry an Idempotency-Key header",
            ));
        }
        if signed.idempotency_key_repeated {
            return Err(Error::invalid(
                "idempotency_key",
                "the Idempotency-Key header is repeated",
            ));
        }
        match signed.idempotency_key {
            Some("") => {
                return Err(Error::invalid(
                    "idempotency_key",
                    "the Idempotency-Key header is empty",
                ))
            }
            Some(key) => fields::check_idempotency_key(key)?,
            None => {}
        }
        Ok(())
    }
}

const NONCE_REUSED: &str =
    "X-Nonce was already used with this key id inside the window; sign a fresh attempt";

impl KeyEntry {
    fn signature_matches(
        &self,
        parts: &CanonicalParts<'_>,
        body: &[u8],
        signature: &[u8; 32],
    ) -> bool {
        let digest = body_sha256_hex_bytes(body);
        let secrets = self.secrets.read().unwrap_or_else(|p| p.into_inner());
        secrets.iter().any(|secret| {
            let mut mac = secret.start();
            parts.feed(&digest, |piece| mac.update(piece));
            mac.verify_slice(signature).is_ok()
        })
    }
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ids: Vec<&str> = self.keys.keys().map(String::as_str).collect();
        ids.sort_unstable();
        f.debug_struct("Verifier")
            .field("key_ids", &ids)
            .field("config", &self.config)
            .field("replay_store", &self.redis.as_ref().map(|r| r.config()))
            .field("secrets", &"<redacted>")
            .finish()
    }
}

/// The signature headers of a request, each present once and well formed
/// (protocol step 1).
struct SignedHeaders<'a> {
    key_id: &'a str,
    timestamp: u64,
    timestamp_text: &'a str,
    nonce_text: &'a str,
    nonce: [u8; 16],
    signature: [u8; 32],
    idempotency_key: Option<&'a str>,
    idempotency_key_repeated: bool,
}

impl<'a> SignedHeaders<'a> {
    fn find(headers: &[(&'a str, &'a str)]) -> Result<SignedHeaders<'a>> {
        let mut found: [Option<&'a str>; 4] = [None; 4];
        let mut repeated = false;
        let mut idempotency_key = None;
        let mut idempotency_key_repeated = false;
        for &(name, value) in headers {
            let slot = [
                headers::API_KEY,
                headers::TIMESTAMP,
                headers::NONCE,
                headers::SIGNATURE,
            ]
            .iter()
            .position(|wanted| name.eq_ignore_ascii_case(wanted));
            if let Some(i) = slot {
                repeated |= found[i].replace(value).is_some();
            } else if name.eq_ignore_ascii_case(headers::IDEMPOTENCY_KEY) {
                idempotency_key_repeated |= idempotency_key.replace(value).is_some();
            }
        }
        let missing = |what: &str| {
            refuse(
                ErrorCode::MissingSignature,
                format!("{what} is missing, repeated or malformed"),
            )
        };
        if repeated {
            return Err(refuse(
                ErrorCode::MissingSignature,
                "a signature header is repeated",
            ));
        }
        let [Some(key_id), Some(timestamp_text), Some(nonce_text), Some(signature)] = found else {
            return Err(refuse(
                ErrorCode::MissingSignature,
                "X-Api-Key, X-Timestamp, X-Nonce and X-Signature are all required",
            ));
        };
        if key_id.is_empty() {
            return Err(missing("X-Api-Key"));
        }
        let timestamp =
            fields::parse_timestamp(timestamp_text).map_err(|_| missing("X-Timestamp"))?;
        fields::check_nonce(nonce_text).map_err(|_| missing("X-Nonce"))?;
        let nonce = nonce_bytes(nonce_text);
        let signature = hex::decode32(signature.as_bytes())
            .ok_or_else(|| missing("X-Signature (64 lower-case hex digits)"))?;
        Ok(SignedHeaders {
            key_id,
            timestamp,
            timestamp_text,
            nonce_text,
            nonce,
            signature,
            idempotency_key,
            idempotency_key_repeated,
        })
    }
}

/// The 16 bytes of a checked nonce.
fn nonce_bytes(nonce: &str) -> [u8; 16] {
    uuid::Uuid::try_parse(nonce)
        .expect("a checked nonce is a UUID")
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonce_bytes_decodes_the_uuid() {
        let b = nonce_bytes("00112233-4455-4677-8899-aabbccddeeff");
        assert_eq!(
            b,
            [
                0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x46, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd,
                0xee, 0xff
            ]
        );
    }

    #[test]
    fn config_is_checked() {
        assert_eq!(
            Verifier::new(VerifierConfig {
                shards: 0,
                ..Default::default()
            })
            .unwrap_err()
            .field(),
            Some("shards")
        );
        let mut v = Verifier::new(VerifierConfig::default()).unwrap();
        assert_eq!(v.add_key("k", &[]).unwrap_err().field(), Some("secrets"));
        v.add_key("k", &[&[1u8; 16]]).unwrap();
        assert_eq!(
            v.add_key("k", &[&[1u8; 16]]).unwrap_err().field(),
            Some("key_id")
        );
        assert!(!format!("{v:?}").contains("\\x01"));
    }
}
