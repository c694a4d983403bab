//! The journal's rows as PostgreSQL stores them, and how they read back
//! into records (checked to be valid, not yet authenticated).

use postgres::Row;

use super::PostgresJournal;
use crate::error::{Error, ErrorCode, Result};
use crate::journal::engine::{Expiry, Holder, Row as Stored};
use crate::journal::{rules, JournalScope, Lease, OperationRecord, Reconciliation};
use crate::operation::{FrozenOperation, OperationState};

/// Columns of a stored operation, in [`read_row`]'s order.
pub(super) const COLUMNS: &str =
    "order_id, idempotency_key, method, path, body, body_sha256, status_path, \
     state, attempts, floor(extract(epoch FROM created_at))::bigint, \
     floor(extract(epoch FROM updated_at))::bigint, response_status, response_headers, \
     response_body, response_replayed, lease_owner, lease_epoch, \
     (lease_expires IS NOT NULL AND lease_expires <= now()), row_mac, platform, key_id, state_mac";

/// The columns of schema 2, in [`read_row`]'s order.
pub(super) const COLUMNS_V2: &str = "order_id, idempotency_key, method, path, body, body_sha256, \
     status_path, state, attempts, floor(extract(epoch FROM created_at))::bigint, \
     floor(extract(epoch FROM updated_at))::bigint, response_status, response_headers, \
     response_body, response_replayed, lease_owner, lease_epoch, \
     (lease_expires IS NOT NULL AND lease_expires <= now()), row_mac";

/// The reconciliations' columns, in [`PostgresJournal::reconciliation`]'s
/// order.
pub(super) const RECONCILIATIONS: &str = "SELECT order_id, idempotency_key, previous_state, \
     state, reconciled_by, floor(extract(epoch FROM reconciled_at))::bigint, reference \
     FROM payidem_reconciliations";

/// The unsettled states, as SQL.
pub(super) const UNSETTLED: &str = "('pending', 'in_flight', 'unknown')";

/// A lease expiry from a length in seconds (`$n`, NULL for never).
pub(super) fn expiry_sql(n: usize) -> String {
    expiry_of(&format!("${n}::float8"))
}

/// A lease expiry from a length in seconds (`seconds`, a float8
/// expression, NULL for never).
pub(super) fn expiry_of(seconds: &str) -> String {
    format!(
        "CASE WHEN {seconds} IS NULL THEN 'infinity'::timestamptz \
         ELSE now() + {seconds} * interval '1 second' END"
    )
}

/// The lease's length as the caller meant it, in seconds; `None` for a
/// lease that never expires.
/// A Unix time as `to_timestamp`'s argument (past year 9999: that year).
pub(super) fn pg_time(t: u64) -> f64 {
    t.min(253_402_300_799) as f64
}

pub(super) fn lease_seconds(lease: &Lease, now: u64) -> Option<f64> {
    const HUNDRED_YEARS: u64 = 100 * 366 * 24 * 3600;
    let ttl = rules::stored_expiry(lease).saturating_sub(now);
    (lease.expires_at < rules::MAX_TIME && ttl <= HUNDRED_YEARS).then_some(ttl as f64)
}

/// A row of [`COLUMNS`] (or of [`COLUMNS_V2`] when `!current`), checked to
/// read back valid.
pub(super) fn read_row(target: &str, row: &Row, current: bool) -> Result<Stored> {
    let order_id: String = row.get(0);
    let corrupt = |what: &str| {
        Error::new(
            ErrorCode::Journal,
            format!("journal {target}: corrupt row for order id {order_id:?}: {what}"),
        )
    };
    let state: String = row.get(7);
    let state = OperationState::from_name(&state).ok_or_else(|| corrupt("unknown state"))?;
    let attempts =
        u32::try_from(row.get::<_, i32>(8)).map_err(|_| corrupt("attempts out of range"))?;
    let created_at =
        u64::try_from(row.get::<_, i64>(9)).map_err(|_| corrupt("created_at before 1970"))?;
    let updated_at =
        u64::try_from(row.get::<_, i64>(10)).map_err(|_| corrupt("updated_at before 1970"))?;
    let response = rules::stored_response(
        row.get::<_, Option<i32>>(11).map(i64::from),
        row.get(12),
        row.get(13),
        row.get::<_, Option<bool>>(14).unwrap_or(false),
        corrupt,
    )?;
    Ok(Stored {
        record: OperationRecord {
            operation: FrozenOperation {
                idempotency_key: row.get(1),
                method: row.get(2),
                path: row.get(3),
                body: row.get(4),
                body_sha256: row.get(5),
                status_path: row.get(6),
                order_id: order_id.clone(),
            },
            state,
            attempts,
            created_at,
            updated_at,
            response,
        },
        scope: if current {
            JournalScope::of_columns(row.get(19), row.get(20))
        } else {
            None
        },
        holder: Holder {
            owner: row.get(15),
            expiry: Expiry::Expired(row.get(17)),
            epoch: row.get(16),
        },
        row_mac: row.get(18),
        state_mac: if current { row.get(21) } else { None },
    })
}

impl PostgresJournal {
    pub(super) fn reconciliation(&self, row: &Row) -> Result<Reconciliation> {
        let order_id: String = row.get(0);
        let corrupt = |what: &str| {
            self.refused(format!(
                "corrupt reconciliation of order id {order_id:?}: {what}"
            ))
        };
        let previous_state = OperationState::from_name(&row.get::<_, String>(2))
            .ok_or_else(|| corrupt("unknown previous state"))?;
        let state = OperationState::from_name(&row.get::<_, String>(3))
            .filter(|s| s.is_settled())
            .ok_or_else(|| corrupt("unknown or unsettled state"))?;
        let at = u64::try_from(row.get::<_, i64>(5)).map_err(|_| corrupt("time before 1970"))?;
        Ok(Reconciliation {
            idempotency_key: row.get(1),
            previous_state,
            state,
            by: row.get(4),
            at,
            reference: row.get(6),
            order_id,
        })
    }
}
