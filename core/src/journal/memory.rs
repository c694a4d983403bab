//! A journal held in memory, for tests and for callers that accept losing
//! every operation when the process ends.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::rules;
use super::{
    Journal, JournalCheck, Lease, Opened, OperationRecord, Reconciliation, StoredClockOffset,
};
use crate::error::Result;
use crate::operation::{FrozenOperation, OperationState, Response};

/// A [`Journal`] in memory: the same rules as
/// [`SqliteJournal`](super::SqliteJournal) (keys, conflicts, leases, ordering,
/// purging) but nothing survives the value being dropped.
///
/// [`Journal::release`] by a call that does not hold the lease is a no-op.
///
/// Rows carry no integrity MAC: nothing outside the process can change
/// them. Clock offsets are kept like the operations, until the value is
/// dropped.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    operations: HashMap<String, Entry>,
    /// Idempotency key → order id.
    keys: HashMap<String, String>,
    next_seq: u64,
    /// Every reconciliation, oldest first; never removed.
    reconciliations: Vec<Reconciliation>,
    /// Platform → its clock offset.
    clock_offsets: HashMap<String, StoredClockOffset>,
}

#[derive(Debug)]
struct Entry {
    record: OperationRecord,
    lease: Option<Lease>,
    /// Insertion order, to list operations created in the same second.
    seq: u64,
}

impl Entry {
    fn holder(&self) -> (Option<&str>, Option<u64>) {
        match &self.lease {
            Some(l) => (Some(l.owner.as_str()), Some(l.expires_at)),
            None => (None, None),
        }
    }

    fn take_lease(&mut self, lease: &Lease, now: u64) -> Result<()> {
        let (holder, expires) = self.holder();
        if !rules::lease_free(holder, expires, lease, now) {
            let op = &self.record.operation;
            return Err(rules::busy(&op.order_id, &op.idempotency_key));
        }
        self.lease = Some(Lease {
            owner: lease.owner.clone(),
            expires_at: rules::stored_expiry(lease),
        });
        Ok(())
    }

    fn check_held(&self, lease: &Lease) -> Result<()> {
        if rules::lease_held(self.holder().0, lease) {
            return Ok(());
        }
        let op = &self.record.operation;
        Err(rules::lease_lost(&op.order_id, &op.idempotency_key))
    }
}

impl MemoryJournal {
    /// An empty journal.
    pub fn new() -> MemoryJournal {
        MemoryJournal::default()
    }

    /// Every method checks its inputs before mutating and mutates without
    /// panicking, so a poisoned lock still guards a consistent state.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Journal for MemoryJournal {
    fn open(&self, operation: &FrozenOperation, lease: &Lease, now: u64) -> Result<Opened> {
        rules::check_now(now)?;
        rules::check_lease(lease)?;
        let mut state = self.lock();
        if let Some(entry) = state.operations.get_mut(&operation.order_id) {
            rules::same_request(&entry.record.operation, operation)?;
            if entry.record.state.is_settled() {
                return Ok(Opened::Settled(entry.record.clone()));
            }
            entry.take_lease(lease, now)?;
            return Ok(Opened::Resumable(entry.record.clone()));
        }
        if let Some(other) = state.keys.get(&operation.idempotency_key) {
            return Err(rules::key_taken(operation, other));
        }
        let record = OperationRecord {
            operation: operation.clone(),
            state: OperationState::Pending,
            attempts: 0,
            created_at: now,
            updated_at: now,
            response: None,
        };
        let seq = state.next_seq;
        state.next_seq += 1;
        state.keys.insert(
            operation.idempotency_key.clone(),
            operation.order_id.clone(),
        );
        let lease = Some(Lease {
            owner: lease.owner.clone(),
            expires_at: rules::stored_expiry(lease),
        });
        state.operations.insert(
            operation.order_id.clone(),
            Entry {
                record: record.clone(),
                lease,
                seq,
            },
        );
        Ok(Opened::Created(record))
    }

    fn claim(&self, order_id: &str, lease: &Lease, now: u64) -> Result<Opened> {
        rules::check_now(now)?;
        rules::check_lease(lease)?;
        let mut state = self.lock();
        let entry = state
            .operations
            .get_mut(order_id)
            .ok_or_else(|| rules::unknown_order(order_id))?;
        if entry.record.state.is_settled() {
            return Ok(Opened::Settled(entry.record.clone()));
        }
        entry.take_lease(lease, now)?;
        Ok(Opened::Resumable(entry.record.clone()))
    }

    fn record_attempt(&self, order_id: &str, lease: &Lease, attempts: u32, now: u64) -> Result<()> {
        rules::check_now(now)?;
        let mut state = self.lock();
        let entry = state
            .operations
            .get_mut(order_id)
            .ok_or_else(|| rules::unknown_order(order_id))?;
        entry.check_held(lease)?;
        entry.record.state = OperationState::InFlight;
        entry.record.attempts = attempts;
        entry.record.updated_at = now;
        entry.lease = Some(Lease {
            owner: lease.owner.clone(),
            expires_at: rules::stored_expiry(lease),
        });
        Ok(())
    }

    fn finish(
        &self,
        order_id: &str,
        lease: &Lease,
        new_state: OperationState,
        response: Option<&Response>,
        now: u64,
    ) -> Result<()> {
        rules::check_now(now)?;
        rules::check_finish_state(new_state)?;
        let mut state = self.lock();
        let entry = state
            .operations
            .get_mut(order_id)
            .ok_or_else(|| rules::unknown_order(order_id))?;
        entry.check_held(lease)?;
        entry.record.state = new_state;
        entry.record.response = response.cloned();
        entry.record.updated_at = now;
        entry.lease = None;
        Ok(())
    }

    fn release(&self, order_id: &str, lease: &Lease) -> Result<()> {
        let mut state = self.lock();
        let entry = state
            .operations
            .get_mut(order_id)
            .ok_or_else(|| rules::unknown_order(order_id))?;
        if rules::lease_held(entry.holder().0, lease) {
            entry.lease = None;
        }
        Ok(())
    }

    fn get(&self, order_id: &str) -> Result<Option<OperationRecord>> {
        Ok(self
            .lock()
            .operations
            .get(order_id)
            .map(|e| e.record.clone()))
    }

    fn list(&self, states: &[OperationState]) -> Result<Vec<OperationRecord>> {
        let state = self.lock();
        let mut found: Vec<&Entry> = state
            .operations
            .values()
            .filter(|e| states.contains(&e.record.state))
            .collect();
        found.sort_by_key(|e| (e.record.created_at, e.seq));
        Ok(found.into_iter().map(|e| e.record.clone()).collect())
    }

    fn purge_settled(&self, before: u64) -> Result<usize> {
        let mut state = self.lock();
        let gone: Vec<String> = state
            .operations
            .iter()
            .filter(|(_, e)| e.record.state.is_settled() && e.record.updated_at < before)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &gone {
            if let Some(entry) = state.operations.remove(id) {
                state.keys.remove(&entry.record.operation.idempotency_key);
            }
        }
        Ok(gone.len())
    }

    fn reconcile(
        &self,
        order_id: &str,
        new_state: OperationState,
        by: &str,
        reference: &str,
        now: u64,
    ) -> Result<Reconciliation> {
        rules::check_now(now)?;
        rules::check_reconciliation(new_state, by, reference)?;
        let mut state = self.lock();
        let entry = state
            .operations
            .get_mut(order_id)
            .ok_or_else(|| rules::unknown_order(order_id))?;
        let previous = entry.record.state;
        if previous.is_settled() {
            return Err(rules::already_settled(order_id, previous));
        }
        let (holder, expires) = entry.holder();
        if rules::lease_blocks(holder, expires, now) {
            let op = &entry.record.operation;
            return Err(rules::busy(&op.order_id, &op.idempotency_key));
        }
        entry.record.state = new_state;
        entry.record.updated_at = now;
        entry.lease = None;
        let reconciliation = Reconciliation {
            order_id: order_id.to_owned(),
            idempotency_key: entry.record.operation.idempotency_key.clone(),
            previous_state: previous,
            state: new_state,
            by: by.to_owned(),
            at: now,
            reference: reference.to_owned(),
        };
        state.reconciliations.push(reconciliation.clone());
        Ok(reconciliation)
    }

    fn reconciliations(&self, order_id: Option<&str>) -> Result<Vec<Reconciliation>> {
        Ok(self
            .lock()
            .reconciliations
            .iter()
            .filter(|r| match order_id {
                Some(id) => r.order_id == id,
                None => true,
            })
            .cloned()
            .collect())
    }

    fn check(&self) -> Result<JournalCheck> {
        let state = self.lock();
        let problems = state
            .operations
            .values()
            .filter_map(|e| {
                let op = &e.record.operation;
                rules::body_problem(&op.order_id, &op.body, &op.body_sha256)
            })
            .collect();
        Ok(JournalCheck {
            backend: "memory",
            schema_version: None,
            library_schema_version: None,
            migrated_from: None,
            operations: state.operations.len(),
            reconciliations: state.reconciliations.len(),
            problems,
            macs_verified: false,
        })
    }

    fn save_clock_offset(&self, offset: &StoredClockOffset) -> Result<()> {
        self.lock()
            .clock_offsets
            .insert(offset.platform.clone(), offset.clone());
        Ok(())
    }

    fn clock_offset(&self, platform: &str) -> Result<Option<StoredClockOffset>> {
        Ok(self.lock().clock_offsets.get(platform).cloned())
    }

    fn clock_offsets(&self) -> Result<Vec<StoredClockOffset>> {
        let mut all: Vec<StoredClockOffset> = self.lock().clock_offsets.values().cloned().collect();
        all.sort_by(|a, b| a.platform.cmp(&b.platform));
        Ok(all)
    }
}
