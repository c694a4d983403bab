//! `payidem journal check --against EXPORT`: what a journal restored from an
//! older copy (every MAC consistent) looks like next to an export taken
//! earlier — operations gone, or back to an earlier state.

use std::collections::HashMap;

use payidem::journal::OperationRecord;
use payidem::operation::OperationState;
use serde_json::Value;

/// One exported operation, as far as a rollback shows in it.
struct Exported {
    idempotency_key: String,
    state: OperationState,
    attempts: u64,
    updated_at: u64,
}

/// The operations of an export (`payidem journal export`), or why it is
/// not one.
fn exported(export: &Value) -> Result<HashMap<String, Exported>, String> {
    if export["format"] != "payidem-journal-export" {
        return Err("not a payidem journal export (format)".to_owned());
    }
    let operations = export["operations"]
        .as_array()
        .ok_or("not a payidem journal export (operations)")?;
    let mut out = HashMap::new();
    for (i, op) in operations.iter().enumerate() {
        let field = |name: &str| format!("operation {i}: {name} is missing or invalid");
        let order_id = op["order_id"].as_str().ok_or_else(|| field("order_id"))?;
        let state = op["state"]
            .as_str()
            .and_then(OperationState::from_name)
            .ok_or_else(|| field("state"))?;
        out.insert(
            order_id.to_owned(),
            Exported {
                idempotency_key: op["idempotency_key"]
                    .as_str()
                    .ok_or_else(|| field("idempotency_key"))?
                    .to_owned(),
                state,
                attempts: op["attempts"].as_u64().ok_or_else(|| field("attempts"))?,
                updated_at: op["updated_at"]
                    .as_u64()
                    .ok_or_else(|| field("updated_at"))?,
            },
        );
    }
    Ok(out)
}

/// Every sign that `records` (the journal now) is older than `export`:
/// an operation unsettled in the export that is gone (settled ones may
/// have been purged since), one settled in the export that is unsettled
/// now, and one whose last change or attempt count went back.
pub fn problems(records: &[OperationRecord], export: &Value) -> Result<Vec<String>, String> {
    let before = exported(export)?;
    let now: HashMap<&str, &OperationRecord> = records
        .iter()
        .map(|r| (r.operation.order_id.as_str(), r))
        .collect();
    let mut problems = Vec::new();
    let mut names: Vec<&String> = before.keys().collect();
    names.sort();
    for order_id in names {
        let old = &before[order_id];
        let Some(current) = now.get(order_id.as_str()) else {
            if !old.state.is_settled() {
                problems.push(format!(
                    "order id {order_id:?} was {} in the export and is gone: the journal was \
                     rolled back or the row deleted",
                    old.state.as_str()
                ));
            }
            continue;
        };
        if current.operation.idempotency_key != old.idempotency_key {
            // The order id was purged and used again: another operation.
            continue;
        }
        let went_back = (old.state.is_settled() && !current.state.is_settled())
            || current.updated_at < old.updated_at
            || u64::from(current.attempts) < old.attempts;
        if went_back {
            problems.push(format!(
                "order id {order_id:?} went back since the export (state {} → {}, attempts {} → \
                 {}, last change {} → {}): the journal was restored from an older copy",
                old.state.as_str(),
                current.state.as_str(),
                old.attempts,
                current.attempts,
                old.updated_at,
                current.updated_at
            ));
        }
    }
    Ok(problems)
}
