//! Durable state of operations: the key and frozen body of every operation,
//! so that a process that dies mid-payment resumes with the same key.
//!
//! Durability contract of every [`Journal`]:
//! - [`Journal::record_attempt`] is durable (on disk, fsync'd) before it
//!   returns whenever the operation was [`OperationState::Pending`], i.e. the
//!   first time an attempt of the operation may reach the platform. The
//!   caller sends nothing before it returns. [`Journal::open_to_send`]
//!   records a new operation with that first attempt and is durable the
//!   same way (a client's call opens new operations with it, so one write
//!   and one fsync precede the first attempt). A journal whose writes can be
//!   seen by other calls before they are durable (the SQLite journal's group
//!   commit) also makes the record durable on the first `record_attempt` of
//!   every lease, so a call resuming an operation whose previous driver died
//!   before its fsync sends nothing either until the record is on disk.
//! - Every other write may be weaker (written, not fsync'd). Losing such a
//!   write in a crash is safe: the operation is then found `InFlight` or
//!   `Pending` with its original key and body, and resuming it re-sends the
//!   same key, which the platform answers from its 48-hour idempotency store.
//!   No key is ever minted for an operation the journal has seen.
//!
//! So a crash at any moment leaves every operation either unseen or pending
//! (nothing of it was sent) or journaled durably with its key and body
//! (resumable).
//!
//! # Group commit (SQLite)
//!
//! [`SqliteJournal`] commits every write with `synchronous=NORMAL`: the
//! transaction is appended to the WAL, without fsync. A `record_attempt`
//! that must be durable then waits until an fsync of the WAL file covers
//! its commit. The first such caller leads: it fsyncs the WAL (which makes
//! every frame written before it durable, whoever wrote it) and publishes
//! how far the fsync reached; callers whose commit came in while it ran
//! wait for it, and the next leader covers them all with one fsync. A
//! caller alone therefore pays exactly one fsync, as before, and waits for
//! nobody; N concurrent callers pay about one fsync per batch. The order of
//! events for each operation is unchanged: record written, fsync returned,
//! then the attempt sent; a crash between the first two leaves the record
//! at most in flight (nothing was sent, resuming keeps the key), a crash
//! between the last two leaves it durable and resumable.
//!
//! WAL checkpoints do not weaken this: a checkpoint fsyncs the WAL before
//! copying frames into the database file and fsyncs the database file
//! before marking them copied, and the WAL is rewritten from its start or
//! truncated only after every frame is copied. A committed record is
//! therefore always either in the WAL (made durable by the barrier's
//! fsync) or already durable in the database file. A failed fsync fails
//! every waiter it was to cover with `journal_error` and makes that handle
//! refuse every later durable write (Linux may drop the pages of a failed
//! fsync, so a later success would prove nothing).
//!
//! # PostgreSQL
//!
//! [`PostgresJournal`] commits the first attempt of each lease with
//! `synchronous_commit = on` and every other write with `off`, in short
//! transactions on pooled connections that concurrent callers of one
//! handle share (its own group commit; the server also lets concurrent
//! synchronous commits share WAL flushes), and fences every write of a
//! lease holder by its epoch. Lease and record times come from the
//! database clock. See docs/postgres-journal.md.
//!
//! # One engine over storage
//!
//! Every rule of a journal (same request or `idempotency_conflict`,
//! settled, busy, lease expiry and fencing, attempts, MACs and scope,
//! reconcile, purge horizon, list and check) lives once, in `engine.rs`.
//! [`MemoryJournal`], [`SqliteJournal`] and [`PostgresJournal`] are storage
//! adapters: each implements the engine's `Storage` trait (one transaction
//! over a `Tx` that loads, inserts and updates rows; listing, purging,
//! reconciliations, clock offsets, its own check) and gets [`Journal`] from
//! the engine. A new backend is one such file, and passes the contract
//! suite (core/tests/journal.rs) unchanged. [`open`] opens any of them
//! from the user's [`JournalChoice`].

mod clock;
mod engine;
mod integrity;
mod location;
mod memory;
mod open;
mod owner;
mod postgres;
mod rules;
#[cfg(feature = "sim")]
mod simulated;
mod sqlite;

pub use self::postgres::{
    OutboxInsert, OutboxValue, ParamStyle, PostgresCommitStats, PostgresJournal,
    PostgresJournalOptions, POSTGRES_SCHEMA_VERSION,
};
#[doc(hidden)]
pub use self::postgres::{PgHook, PgPoint};
pub use clock::{platform_origin, usable_stored_offset};
pub use integrity::{JournalKey, RowState, MAX_JOURNAL_KEY_LEN, MIN_JOURNAL_KEY_LEN};
pub(crate) use integrity::{RowAuth, SealRecord, StoredMacs};
pub(crate) use location::create_private_dirs;
pub use location::{default_journal_path, MEMORY_JOURNAL};
pub use memory::MemoryJournal;
pub use open::{open, JournalChoice, JournalOpenOptions, OpenedJournal};
pub use owner::process_owner;
pub(crate) use rules::{
    check_heartbeat, default_heartbeat, default_lease_ttl, lease_span_secs, renewal_in,
    MIN_HEARTBEAT,
};
#[cfg(feature = "sim")]
#[doc(hidden)]
pub use simulated::{DiskStats, SimulatedJournal};
pub use sqlite::{DurabilityStats, SqliteJournal, SqliteJournalOptions, SCHEMA_VERSION};
#[doc(hidden)]
pub use sqlite::{SyncHook, SyncPoint};

use crate::error::Result;
use crate::operation::{FrozenOperation, OperationState, Progress, Response};

/// The platform and API key id a client's operations are made for. A
/// journal handle opened with a scope records it in every operation it
/// creates (under the row's MAC), refuses an order id journaled for another
/// scope, and lists or takes over only its own scope's operations.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JournalScope {
    /// The platform's origin, `scheme://host:port` of the base URL (see
    /// [`platform_origin`]).
    pub platform: String,
    /// The API key id the operations are signed with.
    pub key_id: String,
}

impl JournalScope {
    /// The scope stored in a row's `platform` and `key_id` columns: none
    /// unless both are there (a row made by a handle without a scope, or
    /// from before rows recorded it).
    pub(crate) fn of_columns(
        platform: Option<String>,
        key_id: Option<String>,
    ) -> Option<JournalScope> {
        Some(JournalScope {
            platform: platform?,
            key_id: key_id?,
        })
    }
}

/// Everything the journal keeps about one operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperationRecord {
    /// The operation as first prepared; never changes.
    pub operation: FrozenOperation,
    /// Where it stands.
    pub state: OperationState,
    /// Attempts sent or tried so far, over every call.
    pub attempts: u32,
    /// Unix seconds when it was first prepared (the key's age counts from here).
    pub created_at: u64,
    /// Unix seconds of the last change.
    pub updated_at: u64,
    /// The settled answer (succeeded or rejected or conflict).
    pub response: Option<Response>,
}

impl OperationRecord {
    /// What a call driving the operation starts from.
    pub fn progress(&self) -> Progress {
        Progress {
            state: self.state,
            attempts: self.attempts,
            created_at: self.created_at,
            first_recorded: false,
        }
    }
}

/// One row of [`Journal::list_every`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listed {
    /// A row that read back valid.
    Valid(OperationRecord),
    /// A row that did not: an unknown state, a value out of range, a MAC
    /// that fails.
    Invalid {
        /// The row's order id, as stored.
        order_id: String,
        /// Why it is invalid (the refusal's text).
        problem: String,
    },
}

/// The result of [`Journal::open`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Opened {
    /// The operation was new and is now recorded as pending; the caller holds
    /// its lease.
    Created(OperationRecord),
    /// The operation existed with the same method, path, key and body and is
    /// not settled; the caller now holds its lease.
    Resumable(OperationRecord),
    /// The operation existed with the same request and is settled; no lease
    /// is taken.
    Settled(OperationRecord),
}

/// A claim on driving one operation, held by one call at a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The owner's unique id (process, instance and call).
    pub owner: String,
    /// Unix seconds until which the claim holds unless renewed or released.
    pub expires_at: u64,
}

/// A person's closing of an unsettled operation after checking the platform
/// by hand (`payidem journal reconcile`), kept for audits.
///
/// Recorded by [`Journal::reconcile`]; never deleted, not even when the
/// operation itself is purged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reconciliation {
    /// The operation's order id.
    pub order_id: String,
    /// The operation's idempotency key (an order id may be reused after a
    /// purge; the key tells the operations apart).
    pub idempotency_key: String,
    /// The state the operation had before: pending, in flight or unknown.
    pub previous_state: OperationState,
    /// The state it was closed as: succeeded or rejected.
    pub state: OperationState,
    /// Who closed it (an operator's name or user id).
    pub by: String,
    /// Unix seconds when it was closed.
    pub at: u64,
    /// Why: the platform's reference or the ticket the person checked.
    pub reference: String,
}

/// The longest [`Reconciliation::by`], in bytes.
pub const MAX_RECONCILED_BY_LEN: usize = 256;
/// The longest [`Reconciliation::reference`], in bytes.
pub const MAX_RECONCILIATION_REFERENCE_LEN: usize = 4096;

/// What [`Journal::check`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalCheck {
    /// The kind of store: `"sqlite"`, `"postgres"` or `"memory"`.
    pub backend: &'static str,
    /// The schema version the store carries, for stores that have one.
    pub schema_version: Option<u32>,
    /// The schema version this build reads and writes, for stores that have one.
    pub library_schema_version: Option<u32>,
    /// The version the store had when this handle opened it, if opening
    /// migrated it.
    pub migrated_from: Option<u32>,
    /// Operations examined.
    pub operations: usize,
    /// Reconciliations examined.
    pub reconciliations: usize,
    /// Each problem found, naming the row or the store check that failed;
    /// empty when the store is sound.
    pub problems: Vec<String>,
    /// Whether every operation's integrity MAC was verified (the journal
    /// was opened with a [`JournalKey`]); without a key, rows are only
    /// checked to read back valid.
    pub macs_verified: bool,
}

/// The clock offset a client learnt from one platform, kept in the journal
/// so that a restarted process signs with it from its first attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredClockOffset {
    /// The platform's origin, `scheme://host:port` of the client's base URL.
    pub platform: String,
    /// Seconds to add to the local clock (the platform's clock minus ours).
    pub offset_secs: i64,
    /// Unix seconds (local clock) when it was learnt.
    pub measured_at: u64,
}

/// The oldest stored clock offset a client starts with: 24 hours. Clocks
/// drift, and an older measurement is worth less than the one rejected
/// round trip it would save.
pub const MAX_STORED_CLOCK_OFFSET_AGE_SECS: u64 = 24 * 3600;

impl JournalCheck {
    /// Whether nothing is wrong: no problem, and the schema version (when
    /// the store has one) is this build's.
    pub fn is_sound(&self) -> bool {
        self.problems.is_empty() && self.schema_version == self.library_schema_version
    }
}

/// Durable storage of operations, shared by the threads of one process and,
/// for journals on disk, by several processes.
///
/// Errors: a store that cannot be opened, read or written, is corrupt, locked
/// past its timeout, or from a newer schema answers `journal_error`; a journal
/// never hides such an error by forgetting an operation. A journal with a
/// [`JournalKey`] also answers `journal_error`, naming the order id, for a
/// row whose integrity MAC is wrong or missing (docs/journal-integrity.md),
/// on every read that can lead to a send or a settled answer.
pub trait Journal: Send + Sync {
    /// Records `operation` as pending and takes its lease, or finds the
    /// existing operation with the same order id.
    ///
    /// - An existing one with another method, path, key or body (or another
    ///   operation already holding the same key) answers
    ///   `idempotency_conflict`, and nothing changes.
    /// - An existing settled one answers [`Opened::Settled`].
    /// - An existing unsettled one whose lease another owner holds and has
    ///   not expired at `now` answers `operation_busy`.
    fn open(&self, operation: &FrozenOperation, lease: &Lease, now: u64) -> Result<Opened>;

    /// [`Journal::open`] for a caller that sends the operation's first
    /// attempt right away: a new operation is recorded in flight with that
    /// first attempt (`attempts` 1), durable before it returns (as
    /// [`Journal::record_attempt`] makes a pending one), and answered as
    /// [`Opened::Created`] with that record; the caller then sends its
    /// first attempt without recording it again (later attempts are
    /// recorded as usual; a call that ends before sending it records 0
    /// attempts and stores the operation back as pending). An existing
    /// operation is answered exactly as `open` answers it, with nothing made
    /// durable.
    ///
    /// A crash after it returns leaves the operation in flight with its key:
    /// resumable, as after a crash during its first attempt. The default is
    /// `open`, then `record_attempt` of a new one; a journal that can do
    /// both in one write overrides it (SQLite: one transaction, one shared
    /// fsync).
    fn open_to_send(&self, operation: &FrozenOperation, lease: &Lease, now: u64) -> Result<Opened> {
        let opened = self.open(operation, lease, now)?;
        let Opened::Created(mut record) = opened else {
            return Ok(opened);
        };
        if let Err(e) = self.record_attempt(&operation.order_id, lease, 1, now) {
            let _ = self.release(&operation.order_id, lease);
            return Err(e);
        }
        record.state = OperationState::InFlight;
        record.attempts = 1;
        Ok(Opened::Created(record))
    }

    /// Takes the lease of an existing unsettled operation (to resume it).
    /// Unknown order id: `invalid_argument` (`order_id`); settled:
    /// [`Opened::Settled`]; leased by another owner: `operation_busy`.
    fn claim(&self, order_id: &str, lease: &Lease, now: u64) -> Result<Opened>;

    /// Takes over one unsettled operation (pending, in flight or unknown)
    /// that no live call holds, oldest first: its lease is free or expired
    /// at `now` (for journals with their own clock, by that clock). Answers
    /// [`Opened::Resumable`] with `lease` now holding it, or `None` when
    /// there is nothing to take. Pending operations recorded without a
    /// lease (an outbox insert) are taken too.
    ///
    /// The default lists the unsettled operations and claims the first one
    /// it can; a journal shared by many instances overrides it with one
    /// atomic claim (PostgreSQL: `FOR UPDATE SKIP LOCKED`).
    fn claim_next(&self, lease: &Lease, now: u64) -> Result<Option<Opened>> {
        let unsettled = [
            OperationState::Pending,
            OperationState::InFlight,
            OperationState::Unknown,
        ];
        for record in self.list(&unsettled)? {
            match self.claim(&record.operation.order_id, lease, now) {
                Ok(opened @ Opened::Resumable(_)) => return Ok(Some(opened)),
                // Settled or purged since the listing, or held by a live call.
                Ok(_) => continue,
                Err(e)
                    if matches!(
                        e.code(),
                        crate::error::ErrorCode::OperationBusy
                            | crate::error::ErrorCode::InvalidArgument
                    ) =>
                {
                    continue
                }
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Records that an attempt may reach the platform: state becomes
    /// `InFlight` and `attempts` is set. Durable before it returns when the
    /// state was `Pending` (and, for journals whose writes are visible before
    /// they are durable, on the first call of each lease; see the module
    /// docs). Fails with `operation_busy` if `lease` no longer holds the
    /// operation; extends the lease to `lease.expires_at`.
    fn record_attempt(&self, order_id: &str, lease: &Lease, attempts: u32, now: u64) -> Result<()>;

    /// Renews `lease` (the heartbeat of a call that holds it while it waits
    /// or sends): extends it to `lease.expires_at` when `lease` still holds
    /// the operation — the same owner and, for a store that fences stale
    /// holders, the same epoch — and changes nothing else. Answers
    /// `operation_busy` (the lease was lost: released, or taken over after
    /// it expired) when it does not; the caller then never sends again.
    /// Never waits for a sync: losing a renewal in a crash only frees the
    /// lease sooner, which the crash did anyway.
    fn renew(&self, order_id: &str, lease: &Lease, now: u64) -> Result<()>;

    /// Ends a call: stores the new state (settled, `Unknown`, or back to
    /// `Pending` when no attempt of any call could have reached the
    /// platform), the settled response if any, and `attempts`, the attempts
    /// made over every call so far (status queries included, which
    /// [`Journal::record_attempt`] never records: what the call's
    /// [`Outcome::attempts`](crate::Outcome::attempts) says, so the journal
    /// and the live call agree; a count below the stored one, such as 0,
    /// leaves it); and releases the lease.
    fn finish(
        &self,
        order_id: &str,
        lease: &Lease,
        state: OperationState,
        response: Option<&Response>,
        attempts: u32,
        now: u64,
    ) -> Result<()>;

    /// Releases a lease without changing the operation (a call that gave up
    /// before sending anything).
    fn release(&self, order_id: &str, lease: &Lease) -> Result<()>;

    /// The operation with this order id, if any.
    fn get(&self, order_id: &str) -> Result<Option<OperationRecord>>;

    /// Every operation in one of `states`, oldest first.
    fn list(&self, states: &[OperationState]) -> Result<Vec<OperationRecord>>;

    /// Every stored operation, oldest first, each either read back valid
    /// (and, with a key, verified) or named with why it is not — never
    /// dropped, so that an audit listing or export shows a row an edit
    /// broke. `Err` only when the store cannot be read. The default lists
    /// every state (a store that cannot hold an invalid row).
    fn list_every(&self) -> Result<Vec<Listed>> {
        Ok(self
            .list(&OperationState::ALL)?
            .into_iter()
            .map(Listed::Valid)
            .collect())
    }

    /// Deletes settled operations last changed before `before` (Unix
    /// seconds); never deletes an unsettled one. Returns how many went.
    fn purge_settled(&self, before: u64) -> Result<usize>;

    /// Closes an unsettled operation as `state` (succeeded or rejected)
    /// after a person checked its outcome on the platform: the state
    /// changes, any expired lease is cleared, the stored response stays
    /// empty, and a [`Reconciliation`] with `by`, `now`, `reference` and
    /// the previous state is recorded in the same transaction, durably
    /// (fsync'd for journals on disk) before it returns. Nothing is
    /// deleted. Afterwards the operation is settled: it leaves
    /// [`Journal::list`] of unsettled states, and `execute`/`resume` answer
    /// its state (with an empty response) without sending anything.
    ///
    /// Errors: `invalid_argument` naming `state` (neither succeeded nor
    /// rejected), `by` or `reference` (empty, too long, or holding control
    /// characters) or `order_id` (not journaled, or already settled: a
    /// settled operation is never changed); `operation_busy` while another
    /// call holds the operation's lease at `now`.
    fn reconcile(
        &self,
        order_id: &str,
        state: OperationState,
        by: &str,
        reference: &str,
        now: u64,
    ) -> Result<Reconciliation>;

    /// The reconciliations recorded for `order_id` (every one when `None`),
    /// oldest first, including those of operations purged since.
    fn reconciliations(&self, order_id: Option<&str>) -> Result<Vec<Reconciliation>>;

    /// Checks the store: its own integrity check where it has one, its
    /// schema version, that every stored operation and reconciliation
    /// reads back valid (known states, body matching its SHA-256) and, for
    /// a journal opened with a [`JournalKey`], that every operation carries
    /// its integrity MAC (one problem naming the order id per failing row;
    /// see [`JournalCheck::macs_verified`]). Problems are reported in
    /// [`JournalCheck::problems`]; `Err` only when the store cannot be read
    /// at all.
    fn check(&self) -> Result<JournalCheck>;

    /// Keeps `offset` for its platform, replacing the one stored before. An
    /// optimisation only: the write need not be durable, and callers ignore
    /// its errors. The default keeps nothing.
    fn save_clock_offset(&self, offset: &StoredClockOffset) -> Result<()> {
        let _ = offset;
        Ok(())
    }

    /// The offset last stored for `platform`, if any. The default has none.
    fn clock_offset(&self, platform: &str) -> Result<Option<StoredClockOffset>> {
        let _ = platform;
        Ok(None)
    }

    /// Every stored clock offset, by platform. The default has none.
    fn clock_offsets(&self) -> Result<Vec<StoredClockOffset>> {
        Ok(Vec::new())
    }
}
