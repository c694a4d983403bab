//! The rows of a journal in memory and the storage operations on them,
//! shared by [`MemoryJournal`](super::MemoryJournal) and the simulator's
//! journal (its live and durable images).

use std::collections::{BTreeMap, HashMap};

use crate::error::Result;
use crate::journal::engine::{Holder, Inspection, LeaseChange, Read, Row, StateWrite, Tx, Version};
use crate::journal::{Lease, Reconciliation, StoredClockOffset};
use crate::operation::OperationState;

/// The rows of a store in memory (also the live and durable images of the
/// simulator's store).
#[derive(Clone, Debug, Default)]
pub(crate) struct State {
    /// Order id → its row and insertion order (to list operations created
    /// in the same second).
    pub(crate) rows: HashMap<String, (Row, u64)>,
    /// Idempotency key → order id.
    pub(crate) keys: HashMap<String, String>,
    pub(crate) next_seq: u64,
    /// Every reconciliation, oldest first; never removed.
    pub(crate) reconciliations: Vec<Reconciliation>,
    /// Platform → its clock offset, by platform.
    pub(crate) clock_offsets: BTreeMap<String, StoredClockOffset>,
}

impl Tx for State {
    fn load(&mut self, order_id: &str) -> Result<Option<Row>> {
        Ok(self.rows.get(order_id).map(|(row, _)| row.clone()))
    }

    fn key_holder(&mut self, idempotency_key: &str) -> Result<Option<String>> {
        Ok(self.keys.get(idempotency_key).cloned())
    }

    fn insert(&mut self, row: &Row, lease: &Lease, _now: u64) -> Result<bool> {
        let op = &row.record.operation;
        if self.keys.contains_key(&op.idempotency_key) || self.rows.contains_key(&op.order_id) {
            return Ok(false);
        }
        self.keys
            .insert(op.idempotency_key.clone(), op.order_id.clone());
        let mut row = row.clone();
        row.holder = Holder::of(lease);
        self.next_seq += 1;
        self.rows.insert(op.order_id.clone(), (row, self.next_seq));
        Ok(true)
    }

    fn take_lease(&mut self, order_id: &str, lease: &Lease, _now: u64) -> Result<()> {
        if let Some((row, _)) = self.rows.get_mut(order_id) {
            row.holder = Holder::of(lease);
        }
        Ok(())
    }

    fn update(&mut self, write: &StateWrite<'_>) -> Result<()> {
        let state = write.state;
        if let Some((row, _)) = self.rows.get_mut(write.order_id) {
            row.record.state = state.state;
            row.record.attempts = state.attempts;
            row.record.updated_at = state.updated_at;
            row.record.response = state.response.cloned();
            row.state_mac = write.state_mac.map(str::to_owned);
            match write.lease {
                LeaseChange::Keep => {}
                LeaseChange::Extend(lease, _) => row.holder = Holder::of(lease),
                LeaseChange::Clear | LeaseChange::Fence => row.holder = Holder::default(),
            }
        }
        Ok(())
    }

    fn update_if(&mut self, write: &StateWrite<'_>, lease: &Lease, last: &Version) -> Result<bool> {
        let Some((row, _)) = self.rows.get(write.order_id) else {
            return Ok(false);
        };
        let r = &row.record;
        let unchanged = row.holder.owner.as_deref() == Some(lease.owner.as_str())
            && (r.state, r.attempts, r.updated_at) == (last.state, last.attempts, last.updated_at)
            && r.response == last.response
            && (&row.row_mac, &row.state_mac) == (&last.row_mac, &last.state_mac);
        if unchanged {
            self.update(write)?;
        }
        Ok(unchanged)
    }

    fn release(&mut self, order_id: &str, lease: &Lease) -> Result<bool> {
        let Some((row, _)) = self.rows.get_mut(order_id) else {
            return Ok(false);
        };
        if row.holder.owner.as_deref() == Some(lease.owner.as_str()) {
            row.holder = Holder::default();
        }
        Ok(true)
    }

    fn reconciled(&mut self, reconciliation: &Reconciliation) -> Result<u64> {
        self.reconciliations.push(reconciliation.clone());
        Ok(reconciliation.at)
    }
}

impl State {
    /// Every row in one of `states` (all when `None`), oldest first.
    pub(crate) fn rows_in(&self, states: Option<&[OperationState]>) -> Vec<Read> {
        let mut found: Vec<&(Row, u64)> = self
            .rows
            .values()
            .filter(|(row, _)| states.is_none_or(|s| s.contains(&row.record.state)))
            .collect();
        found.sort_by_key(|(row, seq)| (row.record.created_at, *seq));
        found.into_iter().map(|(row, _)| Ok(row.clone())).collect()
    }

    /// Deletes settled rows last changed before `before`; returns the
    /// order ids deleted.
    pub(crate) fn purge(&mut self, before: u64) -> Vec<String> {
        let State { rows, keys, .. } = self;
        let mut gone_ids = Vec::new();
        rows.retain(|id, (row, _)| {
            let gone = row.record.state.is_settled() && row.record.updated_at < before;
            if gone {
                keys.remove(&row.record.operation.idempotency_key);
                gone_ids.push(id.clone());
            }
            !gone
        });
        gone_ids
    }

    /// The reconciliations of `order_id` (all when `None`), oldest first.
    pub(crate) fn reconciliations_of(&self, order_id: Option<&str>) -> Vec<Reconciliation> {
        let of = |r: &&Reconciliation| order_id.is_none_or(|id| r.order_id == id);
        self.reconciliations.iter().filter(of).cloned().collect()
    }

    /// Every row and reconciliation, for a check of a `backend` store.
    pub(crate) fn inspect(&self, backend: &'static str) -> Inspection {
        Inspection {
            backend,
            rows: self.rows_in(None),
            reconciliations: self.reconciliations_of(None).into_iter().map(Ok).collect(),
            ..Inspection::default()
        }
    }

    /// Keeps `offset` for its platform.
    pub(crate) fn save_clock_offset(&mut self, offset: &StoredClockOffset) {
        self.clock_offsets
            .insert(offset.platform.clone(), offset.clone());
    }

    /// The offsets of `platform` (all when `None`), by platform.
    pub(crate) fn clock_offsets_of(&self, platform: Option<&str>) -> Vec<StoredClockOffset> {
        let of = |o: &&StoredClockOffset| platform.is_none_or(|p| o.platform == p);
        self.clock_offsets.values().filter(of).cloned().collect()
    }
}
