//! Where an operation stands.

crate::vocabulary::vocabulary! {
    /// Where an operation stands. Journals store it by its stable name.
    pub enum OperationState {
        /// Prepared; no attempt has been sent, so nothing can have happened.
        Pending = 1 => "pending",
        /// An attempt may have reached the platform and the call has not ended
        /// (or the process died during it): the outcome is unknown until resumed.
        InFlight = 2 => "in_flight",
        /// A call ended without learning the outcome; the key is kept and the
        /// operation can be resumed.
        Unknown = 3 => "unknown",
        /// Settled: the platform answered 2xx.
        Succeeded = 4 => "succeeded",
        /// Settled: the platform refused it with a final answer.
        Rejected = 5 => "rejected",
        /// Settled: the platform reported `idempotency_conflict` for the key.
        Conflict = 6 => "conflict",
    }
}

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
