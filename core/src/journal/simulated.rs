//! A journal store for the deterministic simulator (feature `sim`; not a
//! stable API): the memory store's rows, with a disk's crash semantics.
//!
//! Every write is visible at once (the live image) and reaches the disk
//! (the durable image) only with a successful sync. The writes that must
//! be durable before anything is sent sync as the SQLite store's do (a
//! first attempt opened to send, every recorded attempt, a
//! reconciliation); the others wait for a later sync. A sync can fail:
//! the writes it was to cover are then never treated as durable (the
//! "fsyncgate" lesson: the kernel drops the dirty pages, and a later sync
//! succeeds without them) until they are written again. A power loss
//! keeps the durable image, plus any unsynced write the disk happened to
//! take (each row's kept or lost, as the simulator draws: writes are lost
//! or torn, never invented).

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::engine::{Guard, Inspection, Intent, Read, Row, Storage, Tx, Work};
use super::memory::State;
use super::{Lease, Reconciliation, RowAuth, StoredClockOffset};
use crate::error::{Error, ErrorCode, Result};
use crate::operation::OperationState;

/// A [`Journal`](super::Journal) on a simulated disk (see the module
/// docs): for `payidem-sim` only.
#[derive(Debug)]
pub struct SimulatedJournal {
    disk: Mutex<Disk>,
    guard: Guard,
}

/// What a row's unsynced write became.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dirt {
    /// Written, not yet synced.
    Dirty,
    /// Written, and a sync that was to cover it failed: never durable
    /// unless written again.
    Doomed,
}

#[derive(Debug, Default)]
struct Disk {
    live: State,
    durable: State,
    /// Order id → its write not yet on disk.
    dirty: BTreeMap<String, Dirt>,
    /// How many of the next syncs fail.
    failing_syncs: u32,
    stats: DiskStats,
}

/// What a [`SimulatedJournal`]'s disk did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    /// Syncs that made writes durable.
    pub syncs: u64,
    /// Syncs that failed.
    pub failed_syncs: u64,
    /// Power losses.
    pub power_losses: u64,
    /// Unsynced row writes lost to a power loss.
    pub lost_writes: u64,
}

/// A [`Tx`] over the live image that notes every row it writes.
struct Tracked<'a> {
    state: &'a mut State,
    dirty: &'a mut BTreeMap<String, Dirt>,
}

impl Tracked<'_> {
    fn touched(&mut self, order_id: &str) {
        self.dirty.insert(order_id.to_owned(), Dirt::Dirty);
    }
}

impl Tx for Tracked<'_> {
    fn load(&mut self, order_id: &str) -> Result<Option<Row>> {
        self.state.load(order_id)
    }

    fn key_holder(&mut self, idempotency_key: &str) -> Result<Option<String>> {
        self.state.key_holder(idempotency_key)
    }

    fn insert(&mut self, row: &Row, lease: &Lease, now: u64) -> Result<bool> {
        let inserted = self.state.insert(row, lease, now)?;
        if inserted {
            self.touched(&row.record.operation.order_id);
        }
        Ok(inserted)
    }

    fn take_lease(&mut self, order_id: &str, lease: &Lease, now: u64) -> Result<()> {
        self.touched(order_id);
        self.state.take_lease(order_id, lease, now)
    }

    fn update(&mut self, write: &super::engine::StateWrite<'_>) -> Result<()> {
        self.touched(write.order_id);
        self.state.update(write)
    }

    fn update_if(
        &mut self,
        write: &super::engine::StateWrite<'_>,
        lease: &Lease,
        last: &super::engine::Version,
    ) -> Result<bool> {
        let written = self.state.update_if(write, lease, last)?;
        if written {
            self.touched(write.order_id);
        }
        Ok(written)
    }

    fn release(&mut self, order_id: &str, lease: &Lease) -> Result<bool> {
        self.touched(order_id);
        self.state.release(order_id, lease)
    }

    fn reconciled(&mut self, reconciliation: &Reconciliation) -> Result<u64> {
        self.state.reconciled(reconciliation)
    }
}

/// Copies the row of `order_id` (or its absence) from `from` to `to`.
fn copy_row(from: &State, to: &mut State, order_id: &str) {
    if let Some((old, _)) = to.rows.remove(order_id) {
        to.keys.remove(&old.record.operation.idempotency_key);
    }
    if let Some((row, seq)) = from.rows.get(order_id) {
        let key = row.record.operation.idempotency_key.clone();
        to.keys.insert(key, order_id.to_owned());
        to.rows.insert(order_id.to_owned(), (row.clone(), *seq));
        to.next_seq = to.next_seq.max(*seq);
    }
}

impl Disk {
    /// Makes every dirty write durable, or fails and dooms them.
    fn sync(&mut self) -> Result<()> {
        if self.failing_syncs > 0 {
            self.failing_syncs -= 1;
            self.stats.failed_syncs += 1;
            for dirt in self.dirty.values_mut() {
                *dirt = Dirt::Doomed;
            }
            return Err(Error::new(
                ErrorCode::Journal,
                "journal (simulated disk): fsync failed; the write may not be durable",
            ));
        }
        self.stats.syncs += 1;
        let dirty = std::mem::take(&mut self.dirty);
        for (order_id, dirt) in dirty {
            match dirt {
                Dirt::Dirty => copy_row(&self.live, &mut self.durable, &order_id),
                Dirt::Doomed => {
                    self.dirty.insert(order_id, Dirt::Doomed);
                }
            }
        }
        self.durable.reconciliations = self.live.reconciliations.clone();
        self.durable.clock_offsets = self.live.clock_offsets.clone();
        Ok(())
    }
}

impl SimulatedJournal {
    /// An empty journal on a fresh simulated disk.
    pub fn new() -> SimulatedJournal {
        SimulatedJournal {
            disk: Mutex::default(),
            guard: Guard::new(RowAuth::Keyless { sealed: false }, None, "simulated".into()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Disk> {
        self.disk.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes the next `n` syncs fail.
    pub fn fail_next_syncs(&self, n: u32) {
        self.lock().failing_syncs = n;
    }

    /// A power loss: the journal becomes what is on disk, plus each
    /// unsynced (not doomed) row write for which `kept` answers `true`.
    pub fn power_loss(&self, kept: &mut dyn FnMut() -> bool) {
        let mut disk = self.lock();
        let mut after = disk.durable.clone();
        let dirty = std::mem::take(&mut disk.dirty);
        for (order_id, dirt) in dirty {
            if dirt == Dirt::Dirty && kept() {
                copy_row(&disk.live, &mut after, &order_id);
            } else {
                disk.stats.lost_writes += 1;
            }
        }
        disk.stats.power_losses += 1;
        disk.durable = after.clone();
        disk.live = after;
    }

    /// The row of `order_id` as the disk holds it (what survives a power
    /// loss for certain).
    pub fn durable_record(&self, order_id: &str) -> Option<super::OperationRecord> {
        let disk = self.lock();
        disk.durable
            .rows
            .get(order_id)
            .map(|(row, _)| row.record.clone())
    }

    /// The owner holding the lease of `order_id` in the live image, and
    /// until when.
    pub fn lease_holder(&self, order_id: &str) -> Option<(String, Option<u64>)> {
        let disk = self.lock();
        let (row, _) = disk.live.rows.get(order_id)?;
        let owner = row.holder.owner.clone()?;
        let expiry = match row.holder.expiry {
            super::engine::Expiry::At(at) => at,
            super::engine::Expiry::Expired(_) => None,
        };
        Some((owner, expiry))
    }

    /// What the disk did so far.
    pub fn stats(&self) -> DiskStats {
        self.lock().stats
    }
}

impl Default for SimulatedJournal {
    fn default() -> SimulatedJournal {
        SimulatedJournal::new()
    }
}

impl Storage for SimulatedJournal {
    const LATEST: u64 = u64::MAX;

    fn guard(&self) -> &Guard {
        &self.guard
    }

    fn transact<T>(&self, intent: Intent<'_>, _: &str, mut work: Work<T>) -> Result<T> {
        let mut disk = self.lock();
        let Disk { live, dirty, .. } = &mut *disk;
        let mut tx = Tracked { state: live, dirty };
        let value = (work.body)(&self.guard, &mut tx)?;
        if intent.may_need_sync() {
            disk.sync()?;
        }
        Ok(value)
    }

    fn row(&self, order_id: &str) -> Result<Option<Row>> {
        self.lock().live.load(order_id)
    }

    fn rows(&self, states: Option<&[OperationState]>) -> Result<Vec<Read>> {
        Ok(self.lock().live.rows_in(states))
    }

    fn purge(&self, before: u64, _horizon: Option<&(u64, String)>) -> Result<usize> {
        let mut disk = self.lock();
        let gone = disk.live.purge(before);
        for order_id in &gone {
            disk.dirty.insert(order_id.clone(), Dirt::Dirty);
        }
        Ok(gone.len())
    }

    fn reconciliations(&self, order_id: Option<&str>) -> Result<Vec<Reconciliation>> {
        Ok(self.lock().live.reconciliations_of(order_id))
    }

    fn inspect(&self) -> Result<Inspection> {
        Ok(self.lock().live.inspect("simulated"))
    }

    fn save_clock_offset(&self, offset: &StoredClockOffset) -> Result<()> {
        self.lock().live.save_clock_offset(offset);
        Ok(())
    }

    fn clock_offsets(&self, platform: Option<&str>) -> Result<Vec<StoredClockOffset>> {
        Ok(self.lock().live.clock_offsets_of(platform))
    }
}
