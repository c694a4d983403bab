//! The journal file's rows as SQLite stores them, and how they read back
//! into records (checked to be valid, not yet authenticated).

use rusqlite::Row;

use super::Context;
use crate::error::Result;
use crate::journal::engine::{Expiry, Holder, Row as Stored};
use crate::journal::{rules, JournalScope, OperationRecord, Reconciliation};
use crate::operation::{FrozenOperation, OperationState};

/// Columns of an [`OperationRecord`] plus its lease, in [`RawRow::read`]'s order.
macro_rules! columns {
    () => {
        "order_id, idempotency_key, method, path, body, body_sha256, status_path, state, attempts, \
         created_at, updated_at, response_status, response_headers, response_body, response_replayed, \
         lease_owner, lease_expires, row_mac, platform, key_id, state_mac"
    };
}
/// The columns of schema 3, in [`RawRow::read_v3`]'s order.
pub(super) const COLUMNS_V3: &str =
    "order_id, idempotency_key, method, path, body, body_sha256, status_path, \
     state, attempts, created_at, updated_at, response_status, response_headers, response_body, \
     response_replayed, lease_owner, lease_expires, row_mac";
pub(super) const COLUMNS: &str = columns!();
pub(super) const SELECT_ONE: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM operations WHERE order_id = ?1"
);

/// A row as stored, before its values are checked.
pub(super) struct RawRow {
    pub(super) order_id: String,
    pub(super) idempotency_key: String,
    pub(super) method: String,
    pub(super) path: String,
    pub(super) body: Vec<u8>,
    pub(super) body_sha256: String,
    pub(super) status_path: Option<String>,
    pub(super) state: String,
    pub(super) attempts: i64,
    pub(super) created_at: i64,
    pub(super) updated_at: i64,
    pub(super) response_status: Option<i64>,
    pub(super) response_headers: Option<String>,
    pub(super) response_body: Option<Vec<u8>>,
    pub(super) response_replayed: Option<i64>,
    pub(super) lease_owner: Option<String>,
    pub(super) lease_expires: Option<i64>,
    pub(super) row_mac: Option<String>,
    pub(super) platform: Option<String>,
    pub(super) key_id: Option<String>,
    pub(super) state_mac: Option<String>,
}

impl RawRow {
    /// A row of [`COLUMNS`].
    pub(super) fn read(row: &Row<'_>) -> rusqlite::Result<RawRow> {
        RawRow::read_columns(row, true)
    }

    /// A row of a schema 3 journal ([`COLUMNS_V3`]).
    pub(super) fn read_v3(row: &Row<'_>) -> rusqlite::Result<RawRow> {
        RawRow::read_columns(row, false)
    }

    fn read_columns(row: &Row<'_>, current: bool) -> rusqlite::Result<RawRow> {
        let since_v4 = |i: usize| -> rusqlite::Result<Option<String>> {
            if current {
                row.get(i)
            } else {
                Ok(None)
            }
        };
        Ok(RawRow {
            order_id: row.get(0)?,
            idempotency_key: row.get(1)?,
            method: row.get(2)?,
            path: row.get(3)?,
            body: row.get(4)?,
            body_sha256: row.get(5)?,
            status_path: row.get(6)?,
            state: row.get(7)?,
            attempts: row.get(8)?,
            created_at: row.get(9)?,
            updated_at: row.get(10)?,
            response_status: row.get(11)?,
            response_headers: row.get(12)?,
            response_body: row.get(13)?,
            response_replayed: row.get(14)?,
            lease_owner: row.get(15)?,
            lease_expires: row.get(16)?,
            row_mac: row.get(17)?,
            platform: since_v4(18)?,
            key_id: since_v4(19)?,
            state_mac: since_v4(20)?,
        })
    }

    pub(super) fn check(self, ctx: &Context) -> Result<Stored> {
        let order_id = self.order_id;
        let corrupt =
            |what: &str| ctx.refused(format!("corrupt row for order id {order_id:?}: {what}"));
        let state =
            OperationState::from_name(&self.state).ok_or_else(|| corrupt("unknown state"))?;
        let attempts =
            u32::try_from(self.attempts).map_err(|_| corrupt("attempts out of range"))?;
        let created_at =
            u64::try_from(self.created_at).map_err(|_| corrupt("negative created_at"))?;
        let updated_at =
            u64::try_from(self.updated_at).map_err(|_| corrupt("negative updated_at"))?;
        let lease_expires = match self.lease_expires {
            Some(t) => Some(u64::try_from(t).map_err(|_| corrupt("negative lease_expires"))?),
            None => None,
        };
        let response = rules::stored_response(
            self.response_status,
            self.response_headers,
            self.response_body,
            self.response_replayed.unwrap_or(0) != 0,
            corrupt,
        )?;
        Ok(Stored {
            record: OperationRecord {
                operation: FrozenOperation {
                    order_id,
                    idempotency_key: self.idempotency_key,
                    method: self.method,
                    path: self.path,
                    body: self.body,
                    body_sha256: self.body_sha256,
                    status_path: self.status_path,
                },
                state,
                attempts,
                created_at,
                updated_at,
                response,
            },
            scope: JournalScope::of_columns(self.platform, self.key_id),
            holder: Holder {
                owner: self.lease_owner,
                expiry: Expiry::At(lease_expires),
                epoch: 0,
            },
            row_mac: self.row_mac,
            state_mac: self.state_mac,
        })
    }
}

pub(super) const RECONCILIATION_COLUMNS: &str =
    "order_id, idempotency_key, previous_state, state, reconciled_by, reconciled_at, reference";

/// A reconciliation row as stored, before its values are checked.
pub(super) struct RawReconciliation {
    pub(super) order_id: String,
    pub(super) idempotency_key: String,
    previous_state: String,
    pub(super) state: String,
    by: String,
    at: i64,
    reference: String,
}

impl RawReconciliation {
    pub(super) fn read(row: &Row<'_>) -> rusqlite::Result<RawReconciliation> {
        Ok(RawReconciliation {
            order_id: row.get(0)?,
            idempotency_key: row.get(1)?,
            previous_state: row.get(2)?,
            state: row.get(3)?,
            by: row.get(4)?,
            at: row.get(5)?,
            reference: row.get(6)?,
        })
    }

    pub(super) fn check(self, ctx: &Context) -> Result<Reconciliation> {
        let order_id = self.order_id;
        let corrupt = |what: &str| {
            ctx.refused(format!(
                "corrupt reconciliation of order id {order_id:?}: {what}"
            ))
        };
        let previous_state = OperationState::from_name(&self.previous_state)
            .ok_or_else(|| corrupt("unknown previous state"))?;
        let state = OperationState::from_name(&self.state)
            .filter(|s| s.is_settled())
            .ok_or_else(|| corrupt("unknown or unsettled state"))?;
        let at = u64::try_from(self.at).map_err(|_| corrupt("negative reconciled_at"))?;
        Ok(Reconciliation {
            order_id,
            idempotency_key: self.idempotency_key,
            previous_state,
            state,
            by: self.by,
            at,
            reference: self.reference,
        })
    }
}

/// A Unix time as SQLite stores it; callers check it is at most
/// [`rules::MAX_TIME`] first.
pub(super) fn sql_time(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}
