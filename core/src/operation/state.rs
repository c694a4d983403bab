//! Where an operation stands.

pub use crate::vocabulary::OperationState;

impl OperationState {
    /// Whether the outcome is final (succeeded, rejected, conflict): the
    /// operation is never sent again.
    pub fn is_settled(self) -> bool {
        matches!(
            self,
            OperationState::Succeeded | OperationState::Rejected | OperationState::Conflict
        )
    }

    /// Whether an attempt may have reached the platform without the outcome
    /// being known (in flight or unknown).
    pub fn is_unresolved(self) -> bool {
        matches!(self, OperationState::InFlight | OperationState::Unknown)
    }
}
