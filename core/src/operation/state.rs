//! Where an operation stands, and the platform's answer it keeps.

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

    /// Every HTTP status a reply may carry: any three-digit code
    /// (RFC 9112's `status-code = 3DIGIT`), so that every answer an HTTP
    /// client parsed reaches the decision (an unexpected 6xx to 9xx counts
    /// as "may have landed", like any unexpected status) instead of being
    /// lost to the caller's error path.
    pub const STATUS_RANGE: std::ops::RangeInclusive<u16> = 100..=999;

    /// A response as received, after checking its `status` is in
    /// [`Response::STATUS_RANGE`]: the one status check of every binding.
    /// Errors: `invalid_argument` naming `status`.
    pub fn received(
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    ) -> crate::Result<Response> {
        Response::check_status(status)?;
        Ok(Response::new(status, headers, body))
    }

    /// `status` if it is in [`Response::STATUS_RANGE`]; otherwise
    /// `invalid_argument` naming `status`.
    pub fn check_status(status: u16) -> crate::Result<u16> {
        if Response::STATUS_RANGE.contains(&status) {
            Ok(status)
        } else {
            Err(crate::Error::invalid(
                "status",
                format!("{status} is not an HTTP status (100..=999)"),
            ))
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
