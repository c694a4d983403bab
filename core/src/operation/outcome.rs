//! How an operation ends.

use crate::error::{Error, ErrorCode, Result};
use crate::journal::{OperationRecord, OperationState, StoredResponse};

/// The end of one call driving an operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settlement {
    /// Settled: the platform answered 2xx (to the operation or to a status
    /// query).
    Succeeded(StoredResponse),
    /// Settled: the platform refused the operation with a final answer that
    /// it keeps under the key (e.g. 402 `card_declined`).
    Rejected(StoredResponse),
    /// Settled: the platform reported `idempotency_conflict` for the key.
    Conflict(StoredResponse),
    /// The platform refused every attempt before running the operation
    /// (authentication, rate limit), and no attempt may have run it: nothing
    /// happened; the operation stays pending with its key.
    Refused(StoredResponse),
    /// No attempt reached the platform; the operation stays pending with its
    /// key.
    NotSent {
        /// What went wrong, for people.
        reason: String,
    },
    /// An attempt may have taken effect and the call ended without learning
    /// the outcome; the key is kept and the operation can be resumed.
    Unknown {
        /// What went wrong last, for people.
        reason: String,
    },
    /// The outcome is unknown and the key is older than the platform keeps
    /// keys: the operation is never POSTed again.
    KeyExpired {
        /// What happened, for people.
        reason: String,
    },
}

impl Settlement {
    /// The journal state this end leaves the operation in.
    pub fn journal_state(&self) -> OperationState {
        match self {
            Settlement::Succeeded(_) => OperationState::Succeeded,
            Settlement::Rejected(_) => OperationState::Rejected,
            Settlement::Conflict(_) => OperationState::Conflict,
            Settlement::Refused(_) | Settlement::NotSent { .. } => OperationState::Pending,
            Settlement::Unknown { .. } | Settlement::KeyExpired { .. } => OperationState::Unknown,
        }
    }

    /// The response to keep in the journal with a settled state.
    pub fn stored_response(&self) -> Option<&StoredResponse> {
        match self {
            Settlement::Succeeded(r) | Settlement::Rejected(r) | Settlement::Conflict(r) => Some(r),
            _ => None,
        }
    }

    /// The settlement a settled journal record stands for; `None` for a record
    /// that is not settled.
    pub fn from_record(record: &OperationRecord) -> Option<Settlement> {
        let response = record.response.clone().unwrap_or_default();
        match record.state {
            OperationState::Succeeded => Some(Settlement::Succeeded(response)),
            OperationState::Rejected => Some(Settlement::Rejected(response)),
            OperationState::Conflict => Some(Settlement::Conflict(response)),
            _ => None,
        }
    }

    /// The caller's view: the successful [`Outcome`], or the typed error
    /// (`rejected` with status and body, `idempotency_conflict`,
    /// `outcome_unknown` / `key_expired` with order id and key,
    /// `transport_error` when nothing was sent).
    pub fn into_result(
        self,
        order_id: &str,
        idempotency_key: &str,
        attempts: u32,
    ) -> Result<Outcome> {
        let op = |e: Error| e.with_operation(order_id, idempotency_key);
        match self {
            Settlement::Succeeded(response) => Ok(Outcome {
                order_id: order_id.to_owned(),
                idempotency_key: idempotency_key.to_owned(),
                attempts,
                response,
            }),
            Settlement::Rejected(r) | Settlement::Refused(r) => Err(op(Error::new(
                ErrorCode::Rejected,
                format!("order {order_id}: the platform refused the operation with HTTP {}", r.status),
            )
            .with_response(r.status, r.body))),
            Settlement::Conflict(r) => Err(op(Error::new(
                ErrorCode::IdempotencyConflict,
                format!(
                    "order {order_id}: the platform already holds key {idempotency_key} for another request; never re-keyed"
                ),
            )
            .with_response(r.status, r.body))),
            Settlement::NotSent { reason } => Err(op(Error::new(
                ErrorCode::Transport,
                format!("order {order_id}: nothing reached the platform ({reason}); the operation is kept and can be executed again"),
            ))),
            Settlement::Unknown { reason } => Err(op(Error::new(
                ErrorCode::OutcomeUnknown,
                format!("order {order_id}: outcome unknown ({reason}); key {idempotency_key} is kept, resume the operation"),
            ))),
            Settlement::KeyExpired { reason } => Err(op(Error::new(
                ErrorCode::KeyExpired,
                format!("order {order_id}: key {idempotency_key} is older than the platform's retention and the outcome is unknown ({reason}); it is never sent again"),
            ))),
        }
    }
}

/// A successfully settled operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The business operation's id.
    pub order_id: String,
    /// The key the operation was sent with, in every attempt.
    pub idempotency_key: String,
    /// Attempts over every call (operation requests and status queries).
    pub attempts: u32,
    /// The platform's answer: status, headers, body and whether it was
    /// replayed from the platform's idempotency store.
    pub response: StoredResponse,
}
