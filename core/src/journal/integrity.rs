//! Journal integrity: the seal that ties a journal to its key, and the
//! MACs every journaled operation carries over what decides whether it is
//! sent or answered, so that a row altered, injected, copied or switched
//! off behind the library's back is refused instead of sent. See
//! docs/journal-integrity.md.

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

use super::{JournalScope, OperationRecord};
use crate::error::{Error, Result};
use crate::operation::{FrozenOperation, OperationState, Response};

type HmacSha256 = Hmac<Sha256>;

/// The domains of the journal's MACs; a new encoding gets a new name.
const ROW_DOMAIN_V1: &[u8] = b"payidem-journal-row-v1";
const ROW_DOMAIN: &[u8] = b"payidem-journal-row-v2";
const STATE_DOMAIN: &[u8] = b"payidem-journal-state-v2";
const SEAL_DOMAIN: &[u8] = b"payidem-journal-seal-v2";
const PURGE_DOMAIN: &[u8] = b"payidem-journal-purge-v2";

/// The message of the key derived from an API secret.
const DERIVE_LABEL: &[u8] = b"payidem journal key v1";

/// The shortest [`JournalKey::new`] key, in bytes.
pub const MIN_JOURNAL_KEY_LEN: usize = 16;
/// The longest [`JournalKey::new`] key, in bytes.
pub const MAX_JOURNAL_KEY_LEN: usize = 1024;

/// The key of the journal's row MACs (HMAC-SHA256).
///
/// Either set explicitly ([`ClientConfig::journal_key`](crate::ClientConfig::journal_key))
/// or derived from the API secret as `HMAC-SHA256(secret, "payidem journal
/// key v1")`. The bytes are wiped when the value is dropped and never
/// appear in `Debug` output or in any error message.
#[derive(Clone)]
pub struct JournalKey(Zeroizing<Vec<u8>>, Keyed);

/// HMAC-SHA256 keyed with a [`JournalKey`]'s bytes, its key blocks
/// absorbed once: each MAC starts from a copy of it instead of hashing
/// the key again (two SHA-256 blocks per MAC). Key material: wiped on
/// drop (the `zeroize` feature of `hmac`), never in `Debug`.
#[derive(Clone)]
struct Keyed(HmacSha256);

impl Keyed {
    fn new(key: &[u8]) -> Keyed {
        Keyed(HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length"))
    }
}

impl JournalKey {
    /// The key of `bytes`, checked by the caller.
    fn of(bytes: Zeroizing<Vec<u8>>) -> JournalKey {
        let keyed = Keyed::new(&bytes);
        JournalKey(bytes, keyed)
    }
}

impl JournalKey {
    /// A key from `bytes` (16..=1024 bytes, e.g. 32 random bytes).
    /// `invalid_argument` naming `journal_key` otherwise.
    pub fn new(bytes: &[u8]) -> Result<JournalKey> {
        if !(MIN_JOURNAL_KEY_LEN..=MAX_JOURNAL_KEY_LEN).contains(&bytes.len()) {
            return Err(Error::invalid(
                "journal_key",
                format!(
                    "must be {MIN_JOURNAL_KEY_LEN} to {MAX_JOURNAL_KEY_LEN} bytes long, not {}",
                    bytes.len()
                ),
            ));
        }
        Ok(JournalKey::of(Zeroizing::new(bytes.to_vec())))
    }

    /// A key from its hex form (upper or lower case, two digits per byte;
    /// 16..=1024 bytes), e.g. what [`JournalKey::derived_hex`] prints.
    /// `invalid_argument` naming `journal_key` otherwise; the text is never
    /// repeated in the error.
    pub fn from_hex(text: &str) -> Result<JournalKey> {
        let text = text.as_bytes();
        if !text.len().is_multiple_of(2) || !text.iter().all(u8::is_ascii_hexdigit) {
            return Err(Error::invalid(
                "journal_key",
                "must be hex digits, two per byte",
            ));
        }
        let digit = |c: u8| match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => c - b'A' + 10,
        };
        let bytes: Zeroizing<Vec<u8>> = Zeroizing::new(
            text.chunks_exact(2)
                .map(|p| digit(p[0]) << 4 | digit(p[1]))
                .collect(),
        );
        JournalKey::new(&bytes)
    }

    /// The key a client uses when none is configured:
    /// `HMAC-SHA256(secret, "payidem journal key v1")`. Rotating the API
    /// secret changes it: operations journaled under the old secret then
    /// need the old derived key set as the journal key
    /// ([`JournalKey::derived_hex`] prints it).
    pub fn derive_from_secret(secret: &[u8]) -> JournalKey {
        let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes keys of any length");
        mac.update(DERIVE_LABEL);
        JournalKey::of(Zeroizing::new(mac.finalize().into_bytes().to_vec()))
    }

    /// [`JournalKey::derived_hex`] of an API secret checked as a client
    /// checks it (16..=1024 bytes): what every binding offers, so that a
    /// journal sealed under an old secret can be opened after rotation.
    /// `invalid_argument` naming `secret` otherwise (never its bytes).
    pub fn derived_hex_checked(secret: &[u8]) -> Result<Zeroizing<String>> {
        crate::protocol::fields::check_secret(secret)?;
        Ok(JournalKey::derived_hex(secret))
    }

    /// The key derived from `secret`, in lowercase hex: what to set as the
    /// journal key (after hex-decoding) to keep reading rows written before
    /// the API secret was rotated. A secret of its own: never log it.
    pub fn derived_hex(secret: &[u8]) -> Zeroizing<String> {
        Zeroizing::new(hex(&JournalKey::derive_from_secret(secret).0))
    }

    /// The version-1 MAC of `operation`'s immutable fields (schema 3
    /// journals): HMAC-SHA256 over the domain `payidem-journal-row-v1` and
    /// the order id, idempotency key, method, path, status path (a presence
    /// byte, then the value), body SHA-256 and body, each length-prefixed
    /// (8 bytes, big endian). Only read, to upgrade such a journal.
    pub(crate) fn legacy_row_mac(&self, op: &FrozenOperation) -> [u8; 32] {
        let mut mac = Fields::new(&self.1, ROW_DOMAIN_V1);
        mac.text(&op.order_id)
            .text(&op.idempotency_key)
            .text(&op.method)
            .text(&op.path)
            .optional(op.status_path.as_deref().map(str::as_bytes))
            .text(&op.body_sha256)
            .field(&op.body);
        mac.finish()
    }

    /// Whether `stored` is `op`'s version-1 MAC (see [`JournalKey::legacy_row_mac`]).
    pub(crate) fn legacy_row_mac_matches(
        &self,
        op: &FrozenOperation,
        stored: Option<&str>,
    ) -> bool {
        stored
            .and_then(unhex32)
            .is_some_and(|got| constant_time_eq(&got, &self.legacy_row_mac(op)))
    }

    /// The seal of the journal `journal_id`: what proves, to every handle
    /// with this key, that the journal was created (or upgraded) under it.
    /// A handle with another key finds it wrong (the key check value).
    pub(crate) fn seal(&self, journal_id: &str) -> String {
        let mut mac = Fields::new(&self.1, SEAL_DOMAIN);
        mac.text(journal_id);
        hex(&mac.finish())
    }

    /// Whether `stored` is the seal of `journal_id` under this key.
    pub(crate) fn seal_matches(&self, journal_id: &str, stored: &str) -> bool {
        let mut mac = Fields::new(&self.1, SEAL_DOMAIN);
        mac.text(journal_id);
        unhex32(stored).is_some_and(|got| constant_time_eq(&got, &mac.finish()))
    }

    /// The MAC of the journal's purge horizon: settled operations last
    /// changed before `before` were purged, so none may be found again.
    pub(crate) fn purge_mac(&self, journal_id: &str, before: u64) -> String {
        let mut mac = Fields::new(&self.1, PURGE_DOMAIN);
        mac.text(journal_id).field(&before.to_be_bytes());
        hex(&mac.finish())
    }

    /// Whether `stored` is the MAC of the purge horizon `before`.
    pub(crate) fn purge_mac_matches(&self, journal_id: &str, before: u64, stored: &str) -> bool {
        unhex32(stored).is_some_and(|got| {
            let mut mac = Fields::new(&self.1, PURGE_DOMAIN);
            mac.text(journal_id).field(&before.to_be_bytes());
            constant_time_eq(&got, &mac.finish())
        })
    }

    /// The identity MAC of an operation of journal `journal_id` (lowercase
    /// hex): over what never changes in its life — the journal, the
    /// platform and key id it was made for, the order id, idempotency key,
    /// method, path, status path, body SHA-256, body and creation time.
    pub fn row_mac(
        &self,
        journal_id: &str,
        scope: Option<&JournalScope>,
        op: &FrozenOperation,
        created_at: u64,
    ) -> String {
        hex(&self.row_mac_bytes(journal_id, scope, op, created_at))
    }

    fn row_mac_bytes(
        &self,
        journal_id: &str,
        scope: Option<&JournalScope>,
        op: &FrozenOperation,
        created_at: u64,
    ) -> [u8; 32] {
        let mut mac = Fields::new(&self.1, ROW_DOMAIN);
        mac.text(journal_id)
            .optional(scope.map(|s| s.platform.as_bytes()))
            .optional(scope.map(|s| s.key_id.as_bytes()))
            .text(&op.order_id)
            .text(&op.idempotency_key)
            .text(&op.method)
            .text(&op.path)
            .optional(op.status_path.as_deref().map(str::as_bytes))
            .text(&op.body_sha256)
            .field(&op.body)
            .field(&created_at.to_be_bytes());
        mac.finish()
    }

    /// The state MAC of an operation whose identity MAC is `row_mac`
    /// (lowercase hex): over what decides whether it is sent or answered —
    /// its state, its attempt count, when it last changed, and its settled
    /// response (status, headers, body, replayed). Every state change
    /// writes it anew.
    pub fn state_mac(&self, row_mac: &str, state: &RowState<'_>) -> Result<String> {
        Ok(hex(&self.state_mac_bytes(row_mac, state)?))
    }

    fn state_mac_bytes(&self, row_mac: &str, state: &RowState<'_>) -> Result<[u8; 32]> {
        let mut mac = Fields::new(&self.1, STATE_DOMAIN);
        mac.text(row_mac)
            .text(state.state.as_str())
            .field(&state.attempts.to_be_bytes())
            .field(&state.updated_at.to_be_bytes());
        let response = state.response;
        match response {
            None => {
                mac.field(&[0]);
            }
            Some(r) => {
                let headers = super::rules::encoded_headers(Some(r))?.unwrap_or_default();
                mac.field(&[1])
                    .field(&r.status.to_be_bytes())
                    .text(&headers)
                    .field(&r.body)
                    .field(&[u8::from(r.replayed)]);
            }
        }
        Ok(mac.finish())
    }

    /// `Ok` when the stored MACs authenticate `record` as an operation of
    /// journal `journal_id` made for `scope`; otherwise the problem, as
    /// the text of a refusal naming the order id (never the key or a MAC).
    pub(crate) fn check_row(
        &self,
        journal_id: &str,
        scope: Option<&JournalScope>,
        record: &OperationRecord,
        macs: StoredMacs<'_>,
    ) -> std::result::Result<(), String> {
        let order_id = &record.operation.order_id;
        let (Some(row_mac), Some(state_mac)) = (macs.row_mac, macs.state_mac) else {
            return Err(format!(
                "the row of order id {order_id:?} carries no integrity MAC (written without the \
                 journal key, or injected); refused, nothing is sent"
            ));
        };
        let identity = self.row_mac_bytes(journal_id, scope, &record.operation, record.created_at);
        let identity_ok = unhex32(row_mac).is_some_and(|got| constant_time_eq(&got, &identity));
        let state_ok = self
            .state_mac_bytes(row_mac, &RowState::of(record))
            .ok()
            .zip(unhex32(state_mac))
            .is_some_and(|(want, got)| constant_time_eq(&got, &want));
        if identity_ok && state_ok {
            Ok(())
        } else {
            Err(format!(
                "the row of order id {order_id:?} fails its integrity check (altered, injected, \
                 copied from another journal, or written under another journal key); refused, \
                 nothing is sent"
            ))
        }
    }
}

/// What an operation's state MAC covers ([`JournalKey::state_mac`]).
#[derive(Clone, Copy, Debug)]
pub struct RowState<'a> {
    /// Where the operation stands.
    pub state: OperationState,
    /// Attempts sent or tried so far.
    pub attempts: u32,
    /// Unix seconds of the change.
    pub updated_at: u64,
    /// The settled answer, if any.
    pub response: Option<&'a Response>,
}

impl<'a> RowState<'a> {
    /// The state part of `record`.
    pub fn of(record: &'a OperationRecord) -> RowState<'a> {
        RowState {
            state: record.state,
            attempts: record.attempts,
            updated_at: record.updated_at,
            response: record.response.as_ref(),
        }
    }
}

/// The two MACs a row carries, as stored (lowercase hex, or missing).
#[derive(Clone, Copy, Debug)]
pub(crate) struct StoredMacs<'a> {
    /// The identity MAC ([`JournalKey::row_mac`]).
    pub row_mac: Option<&'a str>,
    /// The state MAC ([`JournalKey::state_mac`]).
    pub state_mac: Option<&'a str>,
}

/// HMAC-SHA256 over a domain and length-prefixed fields (8 bytes, big
/// endian), so that no byte can move from one field to the next.
struct Fields(HmacSha256);

impl Fields {
    fn new(key: &Keyed, domain: &[u8]) -> Fields {
        let mut fields = Fields(key.0.clone());
        fields.field(domain);
        fields
    }

    fn field(&mut self, bytes: &[u8]) -> &mut Fields {
        self.0.update(&(bytes.len() as u64).to_be_bytes());
        self.0.update(bytes);
        self
    }

    fn text(&mut self, text: &str) -> &mut Fields {
        self.field(text.as_bytes())
    }

    /// A presence byte, then the value when present.
    fn optional(&mut self, value: Option<&[u8]>) -> &mut Fields {
        match value {
            Some(v) => self.field(&[1]).field(v),
            None => self.field(&[0]),
        }
    }

    fn finish(self) -> [u8; 32] {
        self.0.finalize().into_bytes().into()
    }
}

/// The seal record of a journal as stored: its id, the seal MAC, and the
/// purge horizon with its MAC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SealRecord {
    pub journal_id: String,
    pub seal: String,
    pub purged_before: u64,
    pub purge_mac: String,
}

impl SealRecord {
    /// A new journal's seal under `key`.
    pub(crate) fn new(key: &JournalKey) -> SealRecord {
        let journal_id = new_journal_id();
        SealRecord {
            seal: key.seal(&journal_id),
            purge_mac: key.purge_mac(&journal_id, 0),
            journal_id,
            purged_before: 0,
        }
    }
}

/// How a journal handle authenticates its rows, decided once when it
/// opens the journal ([`RowAuth::decide`]): every backend applies it the
/// same way.
#[derive(Clone, Debug)]
pub(crate) enum RowAuth {
    /// A handle without the journal key. It reads rows as stored; on a
    /// sealed journal it writes nothing that a MAC covers.
    Keyless {
        /// Whether the journal carries a seal.
        sealed: bool,
    },
    /// A handle whose key opened the journal's seal: every row it reads is
    /// verified, every row it writes carries its MACs.
    Keyed {
        key: JournalKey,
        journal_id: String,
        /// Settled operations last changed before this were purged.
        purged_before: u64,
    },
}

/// What [`RowAuth::decide`] found: the handle's authentication, and the
/// seal to write first when the journal is new.
#[derive(Debug)]
pub(crate) struct Decided {
    pub auth: RowAuth,
    pub create: Option<SealRecord>,
}

impl RowAuth {
    /// Decides how a handle opened with `key` treats a journal whose seal
    /// record is `found` and which holds operations or reconciliations
    /// (`holds_rows`). The rules: a keyed handle needs a seal its key
    /// opens (a wrong key is refused before anything is written); it seals
    /// a journal only while the journal holds nothing, so a removed seal is
    /// never written again over rows nobody authenticated. A handle without
    /// the key accepts any journal, and writes none of a sealed journal's
    /// MACs. `Err` holds the refusal's text.
    pub(crate) fn decide(
        key: Option<&JournalKey>,
        found: Option<SealRecord>,
        holds_rows: bool,
    ) -> std::result::Result<Decided, String> {
        let Some(key) = key else {
            return Ok(Decided {
                auth: RowAuth::Keyless {
                    sealed: found.is_some(),
                },
                create: None,
            });
        };
        match found {
            Some(seal) => {
                if !key.seal_matches(&seal.journal_id, &seal.seal) {
                    return Err(WRONG_KEY.to_owned());
                }
                if !key.purge_mac_matches(&seal.journal_id, seal.purged_before, &seal.purge_mac) {
                    return Err(
                        "its seal record fails its integrity check (the purge horizon was \
                                altered); refused, nothing is sent"
                            .to_owned(),
                    );
                }
                Ok(Decided {
                    auth: RowAuth::Keyed {
                        key: key.clone(),
                        journal_id: seal.journal_id,
                        purged_before: seal.purged_before,
                    },
                    create: None,
                })
            }
            None if holds_rows => Err(UNSEALED.to_owned()),
            None => {
                let seal = SealRecord::new(key);
                Ok(Decided {
                    auth: RowAuth::Keyed {
                        key: key.clone(),
                        journal_id: seal.journal_id.clone(),
                        purged_before: 0,
                    },
                    create: Some(seal),
                })
            }
        }
    }

    /// A keyed handle's key, journal id and purge horizon; `None` without
    /// the key.
    fn keyed(&self) -> Option<(&JournalKey, &str, u64)> {
        match self {
            RowAuth::Keyed {
                key,
                journal_id,
                purged_before,
            } => Some((key, journal_id, *purged_before)),
            RowAuth::Keyless { .. } => None,
        }
    }

    /// Whether rows are verified (the handle has the key).
    pub(crate) fn is_keyed(&self) -> bool {
        matches!(self, RowAuth::Keyed { .. })
    }

    /// Refuses a write of MAC-covered fields by a handle that cannot write
    /// their MACs (no key, sealed journal).
    pub(crate) fn check_writable(&self) -> std::result::Result<(), String> {
        match self {
            RowAuth::Keyless { sealed: true } => Err(
                "the journal is sealed: changing an operation needs the journal key (give the \
                 API secret or the journal key); nothing was written"
                    .to_owned(),
            ),
            _ => Ok(()),
        }
    }

    /// The identity MAC of a new row (`None` without a key).
    pub(crate) fn row_mac(
        &self,
        scope: Option<&JournalScope>,
        op: &FrozenOperation,
        created_at: u64,
    ) -> Option<String> {
        match self {
            RowAuth::Keyless { .. } => None,
            RowAuth::Keyed {
                key, journal_id, ..
            } => Some(key.row_mac(journal_id, scope, op, created_at)),
        }
    }

    /// The state MAC of a row whose identity MAC is `row_mac` (`None`
    /// without a key or without an identity MAC).
    pub(crate) fn state_mac(
        &self,
        row_mac: Option<&str>,
        state: &RowState<'_>,
    ) -> Result<Option<String>> {
        match (self, row_mac) {
            (RowAuth::Keyed { key, .. }, Some(row_mac)) => key.state_mac(row_mac, state).map(Some),
            _ => Ok(None),
        }
    }

    /// Both MACs of `record` as it is to be stored.
    pub(crate) fn macs(
        &self,
        scope: Option<&JournalScope>,
        record: &OperationRecord,
    ) -> Result<(Option<String>, Option<String>)> {
        let row_mac = self.row_mac(scope, &record.operation, record.created_at);
        let state_mac = self.state_mac(row_mac.as_deref(), &RowState::of(record))?;
        Ok((row_mac, state_mac))
    }

    /// Checks a row read back, as the text of a refusal naming its order
    /// id: its MACs (with the key), and that a settled row is not one the
    /// journal purged (re-inserted from a backup or an export).
    pub(crate) fn check(
        &self,
        scope: Option<&JournalScope>,
        record: &OperationRecord,
        macs: StoredMacs<'_>,
    ) -> std::result::Result<(), String> {
        let Some((key, journal_id, purged_before)) = self.keyed() else {
            return Ok(());
        };
        key.check_row(journal_id, scope, record, macs)?;
        if record.state.is_settled() && record.updated_at < purged_before {
            return Err(format!(
                "the row of order id {:?} was settled before the journal's purge horizon, so it \
                 was purged: it was re-inserted (from a backup or an export); refused, nothing is \
                 sent",
                record.operation.order_id
            ));
        }
        Ok(())
    }

    /// The purge horizon and its MAC after purging settled operations
    /// last changed before `before` (the horizon never moves back); `None`
    /// without a key.
    pub(crate) fn purge_horizon(&self, before: u64) -> Option<(u64, String)> {
        let (key, journal_id, purged_before) = self.keyed()?;
        let horizon = purged_before.max(before);
        Some((horizon, key.purge_mac(journal_id, horizon)))
    }

    /// Records a purge horizon written by [`RowAuth::purge_horizon`].
    pub(crate) fn set_purged_before(&mut self, horizon: u64) {
        if let RowAuth::Keyed { purged_before, .. } = self {
            *purged_before = (*purged_before).max(horizon);
        }
    }
}

/// A keyed handle's refusal of a seal its key does not open.
const WRONG_KEY: &str =
    "the journal was sealed under another journal key: this client's API secret \
     (or journal key) is not the one that created it, so it is refused before anything is \
     written. Check the secret; after rotating the API secret, set the journal key to the key \
     derived from the old one (`payidem journal key --secret-file OLD_SECRET_FILE`)";

/// A keyed handle's refusal of a journal that holds rows but no seal.
const UNSEALED: &str = "the journal holds operations but no seal (created without a journal key, \
     or its seal was removed): its rows cannot be authenticated, so it is refused and nothing \
     is sent. Settle its operations with the tool that wrote them, or check them and start a new \
     journal";

/// A new journal's id: 16 random bytes in lowercase hex.
pub(crate) fn new_journal_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).expect("the operating system's RNG is unavailable");
    hex(&bytes)
}

impl fmt::Debug for JournalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JournalKey(..)")
    }
}

/// Keys compare in constant time.
impl PartialEq for JournalKey {
    fn eq(&self, other: &JournalKey) -> bool {
        self.0.len() == other.0.len() && constant_time_eq(&self.0, &other.0)
    }
}

impl Eq for JournalKey {}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

fn unhex32(text: &str) -> Option<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn op() -> FrozenOperation {
        FrozenOperation {
            order_id: "o-1".into(),
            idempotency_key: "create-o-1".into(),
            method: "POST".into(),
            path: "/payments".into(),
            body: b"{\"amount\":1}".to_vec(),
            body_sha256: crate::protocol::body_sha256_hex(b"{\"amount\":1}"),
            status_path: Some("/payments/o-1".into()),
        }
    }

    fn record() -> OperationRecord {
        OperationRecord {
            operation: op(),
            state: OperationState::Unknown,
            attempts: 2,
            created_at: 1_700_000_000,
            updated_at: 1_700_000_100,
            response: None,
        }
    }

    fn scope() -> JournalScope {
        JournalScope {
            platform: "https://pay.example:443".into(),
            key_id: "key_live_1".into(),
        }
    }

    /// The stored MACs of `record` in journal "j1" for `scope()`.
    fn macs_of(key: &JournalKey, record: &OperationRecord) -> (String, String) {
        let row = key.row_mac("j1", Some(&scope()), &record.operation, record.created_at);
        let state = key.state_mac(&row, &RowState::of(record)).unwrap();
        (row, state)
    }

    fn check(
        key: &JournalKey,
        journal: &str,
        scope: Option<&JournalScope>,
        record: &OperationRecord,
        macs: &(String, String),
    ) -> std::result::Result<(), String> {
        key.check_row(
            journal,
            scope,
            record,
            StoredMacs {
                row_mac: Some(&macs.0),
                state_mac: Some(&macs.1),
            },
        )
    }

    #[test]
    fn every_field_that_decides_what_is_sent_or_answered_changes_a_mac() {
        let key = JournalKey::new(&[7u8; 32]).unwrap();
        let base = record();
        let macs = macs_of(&key, &base);
        assert_eq!((macs.0.len(), macs.1.len()), (64, 64));
        assert!(check(&key, "j1", Some(&scope()), &base, &macs).is_ok());
        let variants: [fn(&mut OperationRecord); 17] = [
            |r| r.operation.order_id.push('x'),
            |r| r.operation.idempotency_key.push('x'),
            |r| r.operation.method = "PUT".into(),
            |r| r.operation.path.push('x'),
            |r| r.operation.status_path = None,
            |r| r.operation.status_path = Some("/payments/o-2".into()),
            |r| r.operation.body_sha256 = crate::protocol::body_sha256_hex(b"x"),
            |r| r.operation.body.push(b' '),
            |r| r.created_at += 1,
            |r| r.updated_at -= 1,
            |r| r.state = OperationState::Pending,
            |r| r.state = OperationState::Succeeded,
            |r| r.attempts = 0,
            |r| {
                r.response = Some(Response {
                    status: 201,
                    headers: vec![],
                    body: vec![],
                    replayed: false,
                })
            },
            |r| {
                r.response = Some(Response {
                    status: 201,
                    headers: vec![("a".into(), "b".into())],
                    body: vec![],
                    replayed: false,
                })
            },
            |r| {
                r.response = Some(Response {
                    status: 201,
                    headers: vec![],
                    body: b"x".to_vec(),
                    replayed: false,
                })
            },
            |r| {
                r.response = Some(Response {
                    status: 201,
                    headers: vec![],
                    body: vec![],
                    replayed: true,
                })
            },
        ];
        for (i, change) in variants.iter().enumerate() {
            let mut r = record();
            change(&mut r);
            let e = check(&key, "j1", Some(&scope()), &r, &macs).unwrap_err();
            assert!(e.contains("fails its integrity check"), "variant {i}: {e}");
        }
        // Another journal, platform, key id, or no scope at all.
        assert!(check(&key, "j2", Some(&scope()), &base, &macs).is_err());
        let mut other = scope();
        other.platform = "https://other.example:443".into();
        assert!(check(&key, "j1", Some(&other), &base, &macs).is_err());
        let mut other = scope();
        other.key_id = "key_live_2".into();
        assert!(check(&key, "j1", Some(&other), &base, &macs).is_err());
        assert!(check(&key, "j1", None, &base, &macs).is_err());
        // The state MAC of one row does not fit another's.
        let mut r2 = record();
        r2.operation.order_id = "o-2".into();
        let macs2 = macs_of(&key, &r2);
        assert!(check(
            &key,
            "j1",
            Some(&scope()),
            &base,
            &(macs.0.clone(), macs2.1)
        )
        .is_err());
        // Length prefixes: moving bytes between fields changes the MAC.
        let mut a = record();
        a.operation.order_id = "o-1c".into();
        a.operation.idempotency_key = "reate-o-1".into();
        assert_ne!(macs_of(&key, &a).0, macs.0);
    }

    #[test]
    fn missing_or_malformed_macs_are_refused_and_name_the_order_not_the_key() {
        let key = JournalKey::new(b"0123456789abcdef").unwrap();
        let r = record();
        let e = key
            .check_row(
                "j1",
                None,
                &r,
                StoredMacs {
                    row_mac: None,
                    state_mac: None,
                },
            )
            .unwrap_err();
        assert!(e.contains("\"o-1\""), "{e}");
        assert!(e.contains("no integrity MAC"), "{e}");
        let good = macs_of(&key, &r);
        for bad in ["", "zz", &"0".repeat(64), &good.0.to_uppercase()] {
            let e = check(
                &key,
                "j1",
                Some(&scope()),
                &r,
                &(bad.to_owned(), good.1.clone()),
            )
            .unwrap_err();
            assert!(!e.contains("0123456789abcdef"));
        }
        assert!(format!("{key:?}") == "JournalKey(..)");
    }

    /// The MACs start from the key's absorbed HMAC state: every one is
    /// still HMAC-SHA256 under the key's bytes, MAC after MAC (a copy, not
    /// the state itself, is used up), for a derived key too.
    #[test]
    fn each_mac_is_hmac_sha256_under_the_key_bytes() {
        fn by_hand(key: &[u8], fields: &[&[u8]]) -> String {
            let mut mac = HmacSha256::new_from_slice(key).unwrap();
            for field in fields {
                mac.update(&(field.len() as u64).to_be_bytes());
                mac.update(field);
            }
            hex(&mac.finalize().into_bytes())
        }
        let derived = JournalKey::derive_from_secret(b"an API secret of some length");
        for key in [JournalKey::new(&[7u8; 40]).unwrap(), derived] {
            for id in ["j1", "j2", "j1"] {
                assert_eq!(key.seal(id), by_hand(&key.0, &[SEAL_DOMAIN, id.as_bytes()]));
                assert_eq!(
                    key.purge_mac(id, 9),
                    by_hand(&key.0, &[PURGE_DOMAIN, id.as_bytes(), &9u64.to_be_bytes()])
                );
            }
        }
    }

    #[test]
    fn the_seal_opens_only_with_its_key_and_a_keyed_handle_never_seals_rows() {
        let key = JournalKey::new(&[1u8; 32]).unwrap();
        let other = JournalKey::new(&[2u8; 32]).unwrap();
        let seal = SealRecord::new(&key);
        assert!(RowAuth::decide(Some(&key), Some(seal.clone()), true).is_ok());
        let e = RowAuth::decide(Some(&other), Some(seal.clone()), true).unwrap_err();
        assert!(e.contains("another journal key"), "{e}");
        // A rolled-forward horizon without its MAC is refused.
        let mut moved = seal.clone();
        moved.purged_before = 5;
        assert!(RowAuth::decide(Some(&key), Some(moved), true).is_err());
        // No seal: sealed only while the journal holds nothing.
        assert!(RowAuth::decide(Some(&key), None, false)
            .unwrap()
            .create
            .is_some());
        let e = RowAuth::decide(Some(&key), None, true).unwrap_err();
        assert!(e.contains("no seal"), "{e}");
        // Without a key: anything is read as stored; a sealed journal is
        // not written.
        let keyless = RowAuth::decide(None, Some(seal), true).unwrap().auth;
        assert!(keyless.check_writable().is_err());
        assert!(RowAuth::decide(None, None, true)
            .unwrap()
            .auth
            .check_writable()
            .is_ok());
        // Two new journals never share an id.
        assert_ne!(
            SealRecord::new(&key).journal_id,
            SealRecord::new(&key).journal_id
        );
    }

    #[test]
    fn a_settled_row_before_the_purge_horizon_is_refused() {
        let key = JournalKey::new(&[1u8; 32]).unwrap();
        let auth = RowAuth::Keyed {
            key: key.clone(),
            journal_id: "j1".into(),
            purged_before: 1_700_000_200,
        };
        let mut r = record();
        r.state = OperationState::Succeeded;
        let macs = macs_of(&key, &r);
        let stored = StoredMacs {
            row_mac: Some(&macs.0),
            state_mac: Some(&macs.1),
        };
        let e = auth.check(Some(&scope()), &r, stored).unwrap_err();
        assert!(e.contains("purge horizon"), "{e}");
        // An unsettled one is never purged: kept.
        let r = record();
        let macs = macs_of(&key, &r);
        let stored = StoredMacs {
            row_mac: Some(&macs.0),
            state_mac: Some(&macs.1),
        };
        assert!(auth.check(Some(&scope()), &r, stored).is_ok());
    }

    #[test]
    fn keys_are_checked_and_derived_keys_differ_by_secret() {
        assert_eq!(
            JournalKey::new(&[1u8; 15]).unwrap_err().code(),
            ErrorCode::InvalidArgument
        );
        assert!(JournalKey::new(&[1u8; 1025]).is_err());
        let a = JournalKey::derive_from_secret(b"secret-one-0123456789");
        let b = JournalKey::derive_from_secret(b"secret-two-0123456789");
        assert_ne!(a, b);
        assert_ne!(
            a.row_mac("j", None, &op(), 1),
            b.row_mac("j", None, &op(), 1)
        );
        assert_eq!(a, JournalKey::derive_from_secret(b"secret-one-0123456789"));
        let hex = JournalKey::derived_hex(b"secret-one-0123456789");
        assert_eq!(hex.len(), 64);
        assert_eq!(JournalKey::from_hex(&hex).unwrap(), a);
        assert_eq!(JournalKey::from_hex(&hex.to_uppercase()).unwrap(), a);
        for bad in ["abc", "zz", "", &"ab".repeat(15)] {
            let e = JournalKey::from_hex(bad).unwrap_err();
            assert_eq!(e.field(), Some("journal_key"), "{bad:?}");
        }
    }
}
