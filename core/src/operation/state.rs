//! Where an operation stands, and the platform's answer it keeps.

/// Where an operation stands. Journals store it by its stable name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperationState {
    /// Prepared; no attempt has been sent, so nothing can have happened.
    Pending,
    /// An attempt may have reached the platform and the call has not ended
    /// (or the process died during it): the outcome is unknown until resumed.
    InFlight,
    /// A call ended without learning the outcome; the key is kept and the
    /// operation can be resumed.
    Unknown,
    /// Settled: the platform answered 2xx.
    Succeeded,
    /// Settled: the platform refused it with a final answer.
    Rejected,
    /// Settled: the platform reported `idempotency_conflict` for the key.
    Conflict,
}

impl OperationState {
    /// Every state.
    pub const ALL: [OperationState; 6] = [
        OperationState::Pending,
        OperationState::InFlight,
        OperationState::Unknown,
        OperationState::Succeeded,
        OperationState::Rejected,
        OperationState::Conflict,
    ];

    /// The stable lower-case name stored in journals.
    pub fn as_str(self) -> &'static str {
        match self {
            OperationState::Pending => "pending",
            OperationState::InFlight => "in_flight",
            OperationState::Unknown => "unknown",
            OperationState::Succeeded => "succeeded",
            OperationState::Rejected => "rejected",
            OperationState::Conflict => "conflict",
        }
    }

    /// The state with this stored name.
    pub fn from_name(name: &str) -> Option<OperationState> {
        OperationState::ALL.into_iter().find(|s| s.as_str() == name)
    }

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

/// One HTTP answer of the platform, as a call saw it (and as a settled
/// operation keeps it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// Response headers, in order received.
    pub headers: Vec<(String, String)>,
    /// Response body bytes.
    pub body: Vec<u8>,
    /// The platform replayed a stored answer (`Idempotent-Replayed: true`).
    pub replayed: bool,
}

impl Response {
    /// A response as received; `replayed` is read from its
    /// `Idempotent-Replayed` header.
    pub fn new(status: u16, headers: Vec<(String, String)>, body: Vec<u8>) -> Response {
        let replayed = crate::protocol::headers::says_replayed(&headers);
        Response {
            status,
            headers,
            body,
            replayed,
        }
    }

    /// The headers as borrowed pairs.
    pub fn header_pairs(&self) -> Vec<(&str, &str)> {
        self.headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect()
    }
}
