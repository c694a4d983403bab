//! A journal held in memory, for tests and for callers that accept losing
//! every operation when the process ends.

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::engine::{Guard, Inspection, Intent, Read, Row, Storage, Tx, Work};
use super::{Reconciliation, RowAuth, StoredClockOffset};
use crate::error::Result;
use crate::operation::OperationState;

mod rows;

pub(super) use rows::State;

/// A [`Journal`](super::Journal) in memory: the same rules as
/// [`SqliteJournal`](super::SqliteJournal) (keys, conflicts, leases, ordering,
/// purging) but nothing survives the value being dropped.
///
/// [`Journal::release`](super::Journal::release) by a call that does not
/// hold the lease is a no-op.
///
/// Rows carry no integrity MAC: nothing outside the process can change
/// them. Clock offsets are kept like the operations, until the value is
/// dropped.
#[derive(Debug)]
pub struct MemoryJournal {
    state: Mutex<State>,
    guard: Guard,
}

impl Default for MemoryJournal {
    fn default() -> MemoryJournal {
        MemoryJournal {
            state: Mutex::default(),
            guard: Guard::new(RowAuth::Keyless { sealed: false }, None, ":memory:".into()),
        }
    }
}

impl MemoryJournal {
    /// An empty journal.
    pub fn new() -> MemoryJournal {
        MemoryJournal::default()
    }

    /// The engine checks before it writes and nothing here panics, so a
    /// poisoned lock still guards a consistent state.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Storage for MemoryJournal {
    const LATEST: u64 = u64::MAX;

    fn guard(&self) -> &Guard {
        &self.guard
    }

    fn transact<T>(&self, _: Intent<'_>, _: &str, mut work: Work<T>) -> Result<T> {
        (work.body)(&self.guard, &mut *self.lock())
    }

    fn row(&self, order_id: &str) -> Result<Option<Row>> {
        self.lock().load(order_id)
    }

    fn rows(&self, states: Option<&[OperationState]>) -> Result<Vec<Read>> {
        Ok(self.lock().rows_in(states))
    }

    fn purge(&self, before: u64, _horizon: Option<&(u64, String)>) -> Result<usize> {
        Ok(self.lock().purge(before).len())
    }

    fn reconciliations(&self, order_id: Option<&str>) -> Result<Vec<Reconciliation>> {
        Ok(self.lock().reconciliations_of(order_id))
    }

    fn inspect(&self) -> Result<Inspection> {
        Ok(self.lock().inspect("memory"))
    }

    fn save_clock_offset(&self, offset: &StoredClockOffset) -> Result<()> {
        self.lock().save_clock_offset(offset);
        Ok(())
    }

    fn clock_offsets(&self, platform: Option<&str>) -> Result<Vec<StoredClockOffset>> {
        Ok(self.lock().clock_offsets_of(platform))
    }
}
