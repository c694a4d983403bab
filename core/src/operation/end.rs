//! How a call driving an operation ends, and what the caller sees.

use crate::error::{Error, ErrorCode, Result};
use crate::policy::Landed;

use super::state::OperationState;
use crate::policy::Response;
pub use crate::vocabulary::EndKind;

/// The end of one call driving an operation. [`End::is_final`] tells
/// whether the operation is settled for good or may still be completed by a
/// later call with the same key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// Final: the platform answered 2xx (to the operation or to a status
    /// query).
    Succeeded(Response),
    /// Final: the platform refused the operation with an answer it keeps
    /// under the key (e.g. 402 `card_declined`).
    Rejected(Response),
    /// Final: the platform reported `idempotency_conflict` for the key.
    Conflict(Response),
    /// Not final: the platform refused every attempt before running the
    /// operation (authentication, rate limit, a clock answer that was not
    /// believed), and no attempt may have run it. Nothing happened; the
    /// operation stays pending with its key.
    Refused {
        /// The last answer.
        response: Response,
        /// Why the call stopped, for people.
        reason: String,
    },
    /// Not final: no attempt reached the platform; the operation stays
    /// pending with its key.
    NotSent {
        /// What went wrong, for people.
        reason: String,
    },
    /// Not final: an attempt may have taken effect and the call ended
    /// without learning the outcome; the key is kept and the operation can
    /// be resumed.
    Unknown {
        /// What went wrong last, for people.
        reason: String,
    },
    /// Final: the outcome is unknown and the key is older than the platform
    /// keeps keys, so the operation is never sent again; a person has to
    /// reconcile it with the platform.
    KeyExpired {
        /// What happened, for people.
        reason: String,
    },
}

/// What one end of a call means: the row of the ends' table every README
/// shows (a test checks them against [`EndKind::markdown_table`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndMeaning {
    /// When a call ends this way.
    pub when: &'static str,
    /// The operation's request is never sent again.
    pub is_final: bool,
    /// Whether the operation may have taken effect.
    pub landed: Landed,
    /// What the caller gets: `None` for success, else the error's code.
    pub error: Option<ErrorCode>,
    /// The state the end leaves the operation in, in the journal.
    pub state: OperationState,
    /// What a later `execute`/`resume` of the same order does.
    pub later: &'static str,
}

impl EndKind {
    /// What this end means: the one table of ends.
    pub const fn meaning(self) -> EndMeaning {
        const FROM_JOURNAL: &str =
            "answers the same end from the journal, without any network call";
        match self {
            EndKind::Succeeded => EndMeaning {
                when: "2xx to the operation or to a status query",
                is_final: true,
                landed: Landed::Yes,
                error: None,
                state: OperationState::Succeeded,
                later: FROM_JOURNAL,
            },
            EndKind::Rejected => EndMeaning {
                when: "a final 4xx the platform keeps (e.g. 402)",
                is_final: true,
                landed: Landed::Yes,
                error: Some(ErrorCode::Rejected),
                state: OperationState::Rejected,
                later: FROM_JOURNAL,
            },
            EndKind::Conflict => EndMeaning {
                when: "409 `idempotency_conflict`",
                is_final: true,
                landed: Landed::No,
                error: Some(ErrorCode::IdempotencyConflict),
                state: OperationState::Conflict,
                later: FROM_JOURNAL,
            },
            EndKind::KeyExpired => EndMeaning {
                when: "unknown, and the key older than the platform's retention",
                is_final: true,
                landed: Landed::Maybe,
                error: Some(ErrorCode::KeyExpired),
                state: OperationState::Unknown,
                later: "never sends the request again: asks the platform for its status (when a status path is known) and settles it from the answer, else ends `key_expired` again; reconcile by hand",
            },
            EndKind::Unknown => EndMeaning {
                when: "limits reached and an attempt may have landed",
                is_final: false,
                landed: Landed::Maybe,
                error: Some(ErrorCode::OutcomeUnknown),
                state: OperationState::Unknown,
                later: "drives it again with the same key, asking its status first when a status path is known",
            },
            EndKind::Refused => EndMeaning {
                when: "every answer came before the platform's idempotency step (401, 429, a clock answer not believed)",
                is_final: false,
                landed: Landed::No,
                error: Some(ErrorCode::Refused),
                state: OperationState::Pending,
                later: "sends it again with the same key",
            },
            EndKind::NotSent => EndMeaning {
                when: "nothing reached the platform",
                is_final: false,
                landed: Landed::No,
                error: Some(ErrorCode::Transport),
                state: OperationState::Pending,
                later: "sends it again with the same key",
            },
        }
    }

    /// The table of ends as Markdown, as every README shows it: end,
    /// when, final, landed, error code, journal state, what a later call
    /// does.
    pub fn markdown_table() -> String {
        let mut out = String::from(
            "| end | when | final | landed | error code | journal state | a later `execute`/`resume` |\n\
             | --- | --- | --- | --- | --- | --- | --- |\n",
        );
        for kind in EndKind::ALL {
            let m = kind.meaning();
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | `{}` | {} |\n",
                kind.as_str(),
                m.when,
                if m.is_final { "yes" } else { "no" },
                m.landed.as_str(),
                m.error
                    .map_or("none (success)".to_owned(), |c| format!("`{c}`")),
                m.state.as_str(),
                m.later,
            ));
        }
        out
    }
}

impl End {
    /// The end's kind.
    pub fn kind(&self) -> EndKind {
        match self {
            End::Succeeded(_) => EndKind::Succeeded,
            End::Rejected(_) => EndKind::Rejected,
            End::Conflict(_) => EndKind::Conflict,
            End::Refused { .. } => EndKind::Refused,
            End::NotSent { .. } => EndKind::NotSent,
            End::Unknown { .. } => EndKind::Unknown,
            End::KeyExpired { .. } => EndKind::KeyExpired,
        }
    }

    /// A stable lower-case name: `succeeded`, `rejected`, `conflict`,
    /// `refused`, `not_sent`, `unknown`, `key_expired`.
    pub fn as_str(&self) -> &'static str {
        self.kind().as_str()
    }

    /// Whether the operation's request is never sent again (succeeded,
    /// rejected, conflict, key expired); see [`EndKind::meaning`] for what
    /// a later call does.
    pub fn is_final(&self) -> bool {
        self.kind().meaning().is_final
    }

    /// Whether the operation may have taken effect.
    pub fn landed(&self) -> Landed {
        self.kind().meaning().landed
    }

    /// The state this end leaves the operation in.
    pub fn state(&self) -> OperationState {
        self.kind().meaning().state
    }

    /// The answer a final end keeps (succeeded, rejected, conflict).
    pub fn settled_response(&self) -> Option<&Response> {
        match self {
            End::Succeeded(r) | End::Rejected(r) | End::Conflict(r) => Some(r),
            _ => None,
        }
    }

    /// The end a settled state with its stored answer stands for; `None`
    /// for a state that is not settled.
    pub fn from_settled(state: OperationState, response: Option<&Response>) -> Option<End> {
        let response = response.cloned().unwrap_or_default();
        match state {
            OperationState::Succeeded => Some(End::Succeeded(response)),
            OperationState::Rejected => Some(End::Rejected(response)),
            OperationState::Conflict => Some(End::Conflict(response)),
            _ => None,
        }
    }

    /// The caller's view: the successful [`Outcome`], or the typed error
    /// whose code alone says whether it is final ([`ErrorCode::is_final`]):
    /// `rejected` (final; status and body), `idempotency_conflict` (final),
    /// `key_expired` (final), `refused` (status and body; nothing happened),
    /// `outcome_unknown` (resumable), `transport_error` (nothing reached the
    /// platform); every error carries the order id and key.
    pub fn into_result(
        self,
        order_id: &str,
        idempotency_key: &str,
        attempts: u32,
    ) -> Result<Outcome> {
        let op = |e: Error| e.with_operation(order_id, idempotency_key);
        match self {
            End::Succeeded(response) => Ok(Outcome {
                order_id: order_id.to_owned(),
                idempotency_key: idempotency_key.to_owned(),
                attempts,
                response,
                journal_error: None,
            }),
            End::Rejected(r) => Err(op(Error::answered(
                ErrorCode::Rejected,
                r.status,
                r.body,
                |answer| format!("order {order_id}: the platform refused the operation with {answer} (final)"),
            ))),
            End::Refused { response: r, reason } => Err(op(Error::new(
                ErrorCode::Refused,
                format!(
                    "order {order_id}: the platform refused every attempt before running the operation ({reason}); nothing happened, key {idempotency_key} is kept and the operation can be executed again"
                ),
            )
            .with_response(r.status, r.body))),
            End::Conflict(r) => Err(op(Error::new(
                ErrorCode::IdempotencyConflict,
                format!(
                    "order {order_id}: the platform already holds key {idempotency_key} for another request; never re-keyed"
                ),
            )
            .with_response(r.status, r.body))),
            End::NotSent { reason } => Err(op(Error::new(
                ErrorCode::Transport,
                format!("order {order_id}: nothing reached the platform ({reason}); the operation is kept and can be executed again"),
            ))),
            End::Unknown { reason } => Err(op(Error::new(
                ErrorCode::OutcomeUnknown,
                format!("order {order_id}: outcome unknown ({reason}); key {idempotency_key} is kept, resume the operation"),
            ))),
            End::KeyExpired { reason } => Err(op(Error::new(
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
    pub response: Response,
    /// Set when the platform answered 2xx but the journal could not record
    /// the success: the payment was made and this outcome says so. The
    /// journal still holds the operation in flight with its key; a later
    /// `execute`/`resume` of it gets the same answer replayed by the
    /// platform and records it then.
    pub journal_error: Option<Error>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_code_alone_tells_whether_an_end_is_final() {
        let ends = [
            End::Rejected(Response::default()),
            End::Conflict(Response::default()),
            End::Refused {
                response: Response::default(),
                reason: "r".into(),
            },
            End::NotSent { reason: "r".into() },
            End::Unknown { reason: "r".into() },
            End::KeyExpired { reason: "r".into() },
        ];
        for end in ends {
            let is_final = end.is_final();
            let name = end.as_str();
            let error = end.kind().meaning().error;
            let e = end.into_result("o", "k", 1).unwrap_err();
            assert_eq!(e.code().is_final(), is_final, "{name}");
            assert_eq!(Some(e.code()), error, "{name}: the table states its code");
        }
        let ok = End::Succeeded(Response::default());
        assert_eq!(ok.kind().meaning().error, None);
        assert!(ok.into_result("o", "k", 1).is_ok());
    }
}
