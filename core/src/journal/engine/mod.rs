//! The journal engine: every rule of a [`Journal`](super::Journal) —
//! what opens, claims, records, finishes, releases, reconciles, purges,
//! lists and checks an operation, its lease and its MACs — applied once,
//! over a small [`Storage`] that only reads and writes rows.
//!
//! A backend is a [`Storage`]: it runs a body in one transaction
//! ([`Storage::transact`]) over a [`Tx`], lists rows, deletes settled
//! ones, and keeps reconciliations and clock offsets. It decides nothing:
//! every [`Journal`](super::Journal) method of a [`Storage`] is the
//! engine's (see `ops.rs`).
//!
//! A body checks everything before it writes anything, so a store without
//! rollback (memory) stays consistent when a body refuses.

mod ops;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard};

pub(crate) use ops::undo_attempt;

use super::rules;
use super::{
    JournalScope, Lease, Opened, OperationRecord, Reconciliation, RowAuth, RowState,
    StoredClockOffset, StoredMacs,
};
use crate::error::{Error, ErrorCode, Result};
use crate::operation::{OperationState, Response};

/// A stored operation as the store read it: the record, the scope it was
/// made for, its lease and its MACs.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub record: OperationRecord,
    pub scope: Option<JournalScope>,
    pub holder: Holder,
    pub row_mac: Option<String>,
    pub state_mac: Option<String>,
}

impl Row {
    fn macs(&self) -> StoredMacs<'_> {
        StoredMacs {
            row_mac: self.row_mac.as_deref(),
            state_mac: self.state_mac.as_deref(),
        }
    }
}

/// An operation's row as this handle last read or wrote it under a
/// lease: its state part and its MACs. A later write of the same lease is
/// guarded by it ([`Tx::update_if`]) instead of reading the row again.
#[derive(Clone, Debug)]
pub(crate) struct Version {
    pub state: OperationState,
    pub attempts: u32,
    pub updated_at: u64,
    pub response: Option<Response>,
    pub row_mac: Option<String>,
    pub state_mac: Option<String>,
}

impl Version {
    /// `row` as it was read.
    pub(crate) fn of(row: &Row) -> Version {
        let state_mac = row.state_mac.clone();
        Version::written(row.row_mac.clone(), &RowState::of(&row.record), state_mac)
    }

    /// A row whose identity MAC is `row_mac` after `state` was written
    /// with `state_mac`.
    fn written(
        row_mac: Option<String>,
        state: &RowState<'_>,
        state_mac: Option<String>,
    ) -> Version {
        Version {
            state: state.state,
            attempts: state.attempts,
            updated_at: state.updated_at,
            response: state.response.cloned(),
            row_mac,
            state_mac,
        }
    }

    /// The state part it holds.
    pub(crate) fn state(&self) -> RowState<'_> {
        RowState {
            state: self.state,
            attempts: self.attempts,
            updated_at: self.updated_at,
            response: self.response.as_ref(),
        }
    }
}

/// Who holds an operation's lease, and until when.
#[derive(Clone, Debug, Default)]
pub(crate) struct Holder {
    /// The owner holding it, `None` when free.
    pub owner: Option<String>,
    /// When it expires: a Unix time compared with the caller's `now`, or
    /// whether it expired by the store's own clock.
    pub expiry: Expiry,
    /// How many times it was taken, for a store that fences stale
    /// holders by it (0 otherwise).
    pub epoch: i64,
}

/// When a lease expires.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Expiry {
    /// At this Unix time (`None`: no expiry stored).
    At(Option<u64>),
    /// Whether it expired by the store's clock.
    Expired(bool),
}

impl Default for Expiry {
    fn default() -> Expiry {
        Expiry::At(None)
    }
}

impl Holder {
    /// `lease` holding an operation (its expiry capped as stored).
    pub(crate) fn of(lease: &Lease) -> Holder {
        Holder {
            owner: Some(lease.owner.clone()),
            expiry: Expiry::At(Some(rules::stored_expiry(lease))),
            epoch: 0,
        }
    }

    /// Whether `lease` may take the operation at `now`.
    fn free_for(&self, lease: &Lease, now: u64) -> bool {
        let owner = self.owner.as_deref();
        match self.expiry {
            Expiry::At(at) => rules::lease_free(owner, at, lease, now),
            Expiry::Expired(expired) => rules::lease_free_at(owner, expired, lease),
        }
    }

    /// Whether a live lease excludes a reconciliation at `now`.
    fn blocks(&self, now: u64) -> bool {
        let owner = self.owner.as_deref();
        match self.expiry {
            Expiry::At(at) => rules::lease_blocks(owner, at, now),
            Expiry::Expired(expired) => rules::lease_blocks_at(owner, expired),
        }
    }

    fn held_by(&self, lease: &Lease) -> bool {
        rules::lease_held(self.owner.as_deref(), lease)
    }
}

/// What a stored row's lease becomes with an update.
#[derive(Clone, Copy, Debug)]
pub(crate) enum LeaseChange<'a> {
    /// Unchanged.
    Keep,
    /// Extended by its holder from `now` (the second field).
    Extend(&'a Lease, u64),
    /// Free.
    Clear,
    /// Free, and every earlier holder fenced off (a reconciliation).
    Fence,
}

/// A new state of one row, as [`Tx::update`] stores it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StateWrite<'a> {
    pub order_id: &'a str,
    pub state: &'a RowState<'a>,
    /// The state MAC of `state` (`None` without the key).
    pub state_mac: Option<&'a str>,
    pub lease: LeaseChange<'a>,
}

/// What a transaction is for, so that a store can make it durable,
/// remember the leases it took, or read it back after a lost commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Intent<'a> {
    /// `open` (`first_attempt`: `open_to_send`).
    Open {
        order_id: &'a str,
        lease: &'a Lease,
        first_attempt: bool,
    },
    /// `claim`.
    Claim { order_id: &'a str, lease: &'a Lease },
    /// `claim_next`.
    ClaimNext { lease: &'a Lease },
    /// `record_attempt`.
    RecordAttempt { order_id: &'a str, lease: &'a Lease },
    /// `renew`.
    Renew { order_id: &'a str, lease: &'a Lease },
    /// `finish`.
    Finish { order_id: &'a str, lease: &'a Lease },
    /// `release`.
    Release { order_id: &'a str, lease: &'a Lease },
    /// `reconcile`.
    Reconcile { order_id: &'a str },
    /// [`undo_attempt`].
    Undo,
}

impl Intent<'_> {
    /// Whether the write may have to be on disk before it returns: a first
    /// attempt opened to send, a recorded attempt, a reconciliation (a
    /// store decides which of them it syncs).
    pub(crate) fn may_need_sync(&self) -> bool {
        matches!(
            self,
            Intent::Open {
                first_attempt: true,
                ..
            } | Intent::RecordAttempt { .. }
                | Intent::Reconcile { .. }
        )
    }
}

/// One transaction of a store: every read locks what it reads until the
/// transaction ends.
pub(crate) trait Tx {
    /// The row of `order_id` as stored, or `None`.
    fn load(&mut self, order_id: &str) -> Result<Option<Row>>;
    /// The order id holding `idempotency_key`, if any.
    fn key_holder(&mut self, idempotency_key: &str) -> Result<Option<String>>;
    /// Inserts a new row held by `lease`; `false` (nothing written) when
    /// its order id or idempotency key is already stored.
    fn insert(&mut self, row: &Row, lease: &Lease, now: u64) -> Result<bool>;
    /// Gives the lease of `order_id` to `lease` from `now`.
    fn take_lease(&mut self, order_id: &str, lease: &Lease, now: u64) -> Result<()>;
    /// Writes the state part of a row (with its state MAC) and changes its
    /// lease.
    fn update(&mut self, write: &StateWrite<'_>) -> Result<()>;
    /// [`Tx::update`], only where `lease` holds `write.order_id` (under
    /// the epoch this handle took it with, in a store that fences by it)
    /// and the row's state part and MACs are still `last`; `false`
    /// (nothing written) otherwise.
    fn update_if(&mut self, write: &StateWrite<'_>, lease: &Lease, last: &Version) -> Result<bool>;
    /// Frees the lease of `order_id` if `lease` holds it; `false` when no
    /// such row is stored.
    fn release(&mut self, order_id: &str, lease: &Lease) -> Result<bool>;
    /// Keeps a reconciliation; answers the time it was stored with.
    fn reconciled(&mut self, reconciliation: &Reconciliation) -> Result<u64>;
    /// Whether `lease`, which holds `row`, holds it under the epoch this
    /// handle took it with (a store that fences stale holders).
    fn current(&self, _row: &Row, _lease: &Lease) -> bool {
        true
    }
    /// Takes the oldest unsettled row of `scope` whose lease is free, in
    /// one statement (a store with [`Storage::CLAIMS_NEXT`]).
    fn claim_next(
        &mut self,
        _lease: &Lease,
        _now: u64,
        _scope: Option<&JournalScope>,
    ) -> Result<Option<Row>> {
        Ok(None)
    }
    /// The last reconciliation of `order_id` as `state` by `by` with
    /// `reference`, to read a reconciliation back after a lost commit.
    fn find_reconciliation(&mut self, _found: &Reconciliation) -> Result<Option<Reconciliation>> {
        Ok(None)
    }
}

/// A row that read back valid, or why it did not.
pub(crate) type Read = std::result::Result<Row, Unreadable>;

/// A row that did not read back valid.
#[derive(Debug)]
pub(crate) struct Unreadable {
    pub order_id: String,
    pub error: Error,
}

/// What [`Storage::inspect`] found in the store itself.
#[derive(Debug, Default)]
pub(crate) struct Inspection {
    pub backend: &'static str,
    pub schema_version: Option<u32>,
    pub library_schema_version: Option<u32>,
    pub migrated_from: Option<u32>,
    /// Problems of the store itself (its own integrity check), first.
    pub problems: Vec<String>,
    /// Problems found after the rows (where the store lives).
    pub later_problems: Vec<String>,
    /// Whether it carries a seal; `None` for a store whose rows carry no
    /// MACs at all (memory).
    pub sealed: Option<bool>,
    /// Every row, oldest first.
    pub rows: Vec<Read>,
    /// Every reconciliation, oldest first.
    pub reconciliations: Vec<Result<Reconciliation>>,
}

/// How a handle authenticates and scopes rows, and the name of its store
/// in messages: what the engine keeps for each handle.
#[derive(Debug)]
pub(crate) struct Guard {
    pub auth: RwLock<RowAuth>,
    pub scope: Option<JournalScope>,
    pub target: String,
    /// (order id, lease owner) → the row as this handle last read or
    /// wrote it under that lease.
    versions: Mutex<HashMap<(String, String), Version>>,
}

impl Guard {
    pub(crate) fn new(auth: RowAuth, scope: Option<JournalScope>, target: String) -> Guard {
        Guard {
            auth: RwLock::new(auth),
            scope,
            target,
            versions: Mutex::new(HashMap::new()),
        }
    }

    fn versions(&self) -> MutexGuard<'_, HashMap<(String, String), Version>> {
        // Plain inserts and removals: consistent even after a panic.
        self.versions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `version` as the row of `order_id` under `owner`'s lease
    /// (forgets it when `None`).
    fn remember(&self, order_id: &str, owner: &str, version: Option<Version>) {
        let key = (order_id.to_owned(), owner.to_owned());
        match version {
            Some(version) => self.versions().insert(key, version),
            None => self.versions().remove(&key),
        };
    }

    /// The row of `order_id` as this handle last read or wrote it under
    /// `owner`'s lease.
    fn last(&self, order_id: &str, owner: &str) -> Option<Version> {
        let key = (order_id.to_owned(), owner.to_owned());
        self.versions().get(&key).cloned()
    }

    /// [`Guard::last`], forgotten at once (a lease that ends with this
    /// write): one look-up and no copy.
    fn take_last(&self, order_id: &str, owner: &str) -> Option<Version> {
        let key = (order_id.to_owned(), owner.to_owned());
        self.versions().remove(&key)
    }

    pub(crate) fn auth(&self) -> RwLockReadGuard<'_, RowAuth> {
        self.auth.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn refused(&self, why: impl std::fmt::Display) -> Error {
        Error::new(
            ErrorCode::Journal,
            format!("journal {}: {why}", self.target),
        )
    }

    fn check_writable(&self) -> Result<()> {
        self.auth()
            .check_writable()
            .map_err(|why| self.refused(why))
    }

    /// `row` verified (with the key) and in this handle's scope.
    fn verified(&self, row: Row) -> Result<Row> {
        let checked = self
            .auth()
            .check(row.scope.as_ref(), &row.record, row.macs());
        if let Err(why) = checked {
            let op = &row.record.operation;
            return Err(self
                .refused(why)
                .with_operation(&op.order_id, &op.idempotency_key));
        }
        Ok(row)
    }

    fn in_scope(&self, row: &Row) -> bool {
        rules::scope_matches(row.scope.as_ref(), self.scope.as_ref())
    }

    /// The row of `order_id` in `tx`, verified, refused when another
    /// scope's.
    fn load(&self, tx: &mut dyn Tx, order_id: &str) -> Result<Option<Row>> {
        let Some(row) = tx.load(order_id)? else {
            return Ok(None);
        };
        let row = self.verified(row)?;
        let stored = row.scope.as_ref();
        rules::same_scope(stored, self.scope.as_ref(), &row.record.operation)?;
        Ok(Some(row))
    }

    fn existing(&self, tx: &mut dyn Tx, order_id: &str) -> Result<Row> {
        self.load(tx, order_id)?
            .ok_or_else(|| rules::unknown_order(order_id))
    }

    /// The existing row of `order_id` if `lease` holds it.
    fn held(&self, tx: &mut dyn Tx, order_id: &str, lease: &Lease) -> Result<Row> {
        let row = self.existing(tx, order_id)?;
        let stale = !row.holder.held_by(lease) || !tx.current(&row, lease);
        if stale && !planted!(StaleLeaseWrites) {
            let key = &row.record.operation.idempotency_key;
            return Err(rules::lease_lost(order_id, key));
        }
        Ok(row)
    }

    /// Writes `state` over `row` with its new state MAC; answers the row
    /// as written.
    fn write(
        &self,
        tx: &mut dyn Tx,
        row: &Row,
        state: &RowState<'_>,
        lease: LeaseChange<'_>,
    ) -> Result<Version> {
        let mac = self.auth().state_mac(row.row_mac.as_deref(), state)?;
        tx.update(&StateWrite {
            order_id: &row.record.operation.order_id,
            state,
            state_mac: mac.as_deref(),
            lease,
        })?;
        Ok(Version::written(row.row_mac.clone(), state, mac))
    }

    /// Writes `state` of `order_id` without reading the row, where `held`
    /// still holds it and it is still `last` (what this handle verified
    /// or wrote itself). Answers whether it was written, and the state MAC
    /// it carries; when it was not, the caller reads the row and decides.
    fn write_if(
        &self,
        tx: &mut dyn Tx,
        (order_id, held): (&str, &Lease),
        last: &Version,
        state: &RowState<'_>,
        lease: LeaseChange<'_>,
    ) -> Result<(bool, Option<String>)> {
        let mac = self.auth().state_mac(last.row_mac.as_deref(), state)?;
        let write = StateWrite {
            order_id,
            state,
            state_mac: mac.as_deref(),
            lease,
        };
        Ok((tx.update_if(&write, held, last)?, mac))
    }

    /// A holder's write that extends its lease from `now` and sets the
    /// state and attempts of `order_id` to `set` (`None`: as they stand),
    /// `updated_at` to `now` with them, the response kept: guarded by
    /// `last` without reading the row ([`Guard::write_if`]), or, without
    /// `last` or when the row is no longer it, read, checked to be held by
    /// `held` and written. Answers the row as written.
    fn extend_held(
        &self,
        tx: &mut dyn Tx,
        (order_id, held): (&str, &Lease),
        last: Option<&Version>,
        set: Option<(OperationState, u32)>,
        now: u64,
    ) -> Result<Version> {
        fn changed(
            current: RowState<'_>,
            set: Option<(OperationState, u32)>,
            now: u64,
        ) -> RowState<'_> {
            match set {
                Some((state, attempts)) => RowState {
                    state,
                    attempts,
                    updated_at: now,
                    response: current.response,
                },
                None => current,
            }
        }
        let extend = LeaseChange::Extend(held, now);
        if let Some(last) = last {
            let new = changed(last.state(), set, now);
            let (written, mac) = self.write_if(tx, (order_id, held), last, &new, extend)?;
            if written {
                return Ok(Version::written(last.row_mac.clone(), &new, mac));
            }
        }
        let row = self.held(tx, order_id, held)?;
        self.write(
            tx,
            &row,
            &changed(RowState::of(&row.record), set, now),
            extend,
        )
    }

    /// Takes `row`'s lease for `lease`, or `operation_busy`.
    fn take(&self, tx: &mut dyn Tx, row: &Row, lease: &Lease, now: u64) -> Result<()> {
        let op = &row.record.operation;
        if !row.holder.free_for(lease, now) {
            return Err(rules::busy(&op.order_id, &op.idempotency_key));
        }
        tx.take_lease(&op.order_id, lease, now)
    }

    /// A settled row answered as it is; an unsettled one taken (with the
    /// row as read, which taking its lease does not change).
    fn resume(
        &self,
        tx: &mut dyn Tx,
        row: Row,
        lease: &Lease,
        now: u64,
    ) -> Result<(Opened, Option<Version>)> {
        if row.record.state.is_settled() {
            return Ok((Opened::Settled(row.record), None));
        }
        self.take(tx, &row, lease, now)?;
        let version = Version::of(&row);
        Ok((Opened::Resumable(row.record), Some(version)))
    }
}

/// The work of one transaction: it may run on another caller's thread
/// (SQLite's shared transactions) and run again after a lost connection
/// (PostgreSQL), so it owns what it needs.
pub(crate) type Body<T> = Box<dyn FnMut(&Guard, &mut dyn Tx) -> Result<T> + Send>;

/// A transaction's body, and how to tell after a lost commit whether it
/// was committed: `Some` is the committed result, `None` (not committed)
/// runs the body again. Only a store that can lose a commit's answer
/// (PostgreSQL) reads it back.
pub(crate) struct Work<T> {
    pub body: Body<T>,
    pub read_back: Body<Option<T>>,
    /// The row the body inserts with its first statement ([`Tx::insert`]),
    /// made by the same rule as the body makes it: a store may insert the
    /// rows of several transactions' bodies in one statement before it
    /// runs them, and answer each body's insert from that. A body whose
    /// row was inserted runs no other statement, so that statement may
    /// also be committed alone, before the bodies run.
    pub first_insert: Option<NewRows>,
}

/// A row a body inserts, made from the handle's [`Guard`] (its MACs).
pub(crate) type NewRows = std::sync::Arc<dyn Fn(&Guard) -> Result<NewRow> + Send + Sync>;

/// A row to insert, held by `lease` from `now` ([`Tx::insert`]'s
/// arguments).
#[derive(Clone, Debug)]
pub(crate) struct NewRow {
    pub row: Row,
    pub lease: Lease,
    pub now: u64,
}

impl<T: 'static> Work<T> {
    /// `body`, read back after a lost commit by `read_back`.
    fn new(body: Body<T>, read_back: Body<Option<T>>) -> Work<T> {
        Work {
            body,
            read_back,
            first_insert: None,
        }
    }

    /// A body that may simply run again after a lost commit (taking a
    /// lease its owner already holds, releasing, purging).
    fn again(body: Body<T>) -> Work<T> {
        Work::new(body, Box::new(|_, _| Ok(None)))
    }
}

/// A journal store. Every [`Journal`](super::Journal) method of a
/// `Storage` is the engine's.
pub(crate) trait Storage: Send + Sync {
    /// The latest Unix time the store keeps (a purge horizon is capped
    /// to it).
    const LATEST: u64;

    /// Whether [`Tx::claim_next`] takes over an operation in one statement
    /// (otherwise the engine lists and claims).
    const CLAIMS_NEXT: bool = false;

    /// The handle's authentication, scope and name.
    fn guard(&self) -> &Guard;

    /// `Ok` once the handle's authentication is decided (a store that
    /// connects lazily decides it at its first call), `journal_error`
    /// while it cannot be: called before a write is checked against
    /// [`Storage::guard`] outside a transaction.
    fn ready(&self, _action: &str) -> Result<()> {
        Ok(())
    }

    /// Runs `work.body` in one transaction, committed when it answers `Ok` (and
    /// made durable as `intent` needs), rolled back otherwise.
    fn transact<T: Send + 'static>(
        &self,
        intent: Intent<'_>,
        action: &str,
        work: Work<T>,
    ) -> Result<T>;

    /// The row of `order_id` as stored, outside a transaction.
    fn row(&self, order_id: &str) -> Result<Option<Row>>;

    /// Every row in one of `states` (all when `None`), oldest first.
    fn rows(&self, states: Option<&[OperationState]>) -> Result<Vec<Read>>;

    /// Deletes settled rows last changed before `before`, and stores the
    /// purge `horizon` with its MAC when there is one; returns how many.
    fn purge(&self, before: u64, horizon: Option<&(u64, String)>) -> Result<usize>;

    /// The reconciliations of `order_id` (all when `None`), oldest first.
    fn reconciliations(&self, order_id: Option<&str>) -> Result<Vec<Reconciliation>>;

    /// The store's own state and every row, for
    /// [`Journal::check`](super::Journal::check).
    fn inspect(&self) -> Result<Inspection>;

    /// Keeps `offset` for its platform.
    fn save_clock_offset(&self, offset: &StoredClockOffset) -> Result<()>;

    /// The stored offsets of `platform` (all when `None`), by platform.
    fn clock_offsets(&self, platform: Option<&str>) -> Result<Vec<StoredClockOffset>>;
}
