//! What one attempt produced: the one reply type the decisions
//! ([`super::decide`], [`super::decide_status_query`]), the operation
//! machine and every binding use.

use crate::error::{Error, Result};
use crate::protocol::headers;
pub use crate::vocabulary::ReplyKind;

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
        let replayed = headers::says_replayed(&headers) && !planted!(ReplayedAsNew);
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
    ) -> Result<Response> {
        Response::check_status(status)?;
        Ok(Response::new(status, headers, body))
    }

    /// `status` if it is in [`Response::STATUS_RANGE`]; otherwise
    /// `invalid_argument` naming `status`.
    pub fn check_status(status: u16) -> Result<u16> {
        if Response::STATUS_RANGE.contains(&status) {
            Ok(status)
        } else {
            Err(Error::invalid(
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

/// What one attempt produced, as the caller saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A response came back.
    Response(Response),
    /// The request was never sent: nothing reached the platform.
    NotSent(String),
    /// The request was (or may have been) sent and no response came back.
    SentNoResponse(String),
}

impl Reply {
    /// The one reading of a reply a caller reports (every binding and
    /// decision function builds its reply here): a response of `status`
    /// (checked by [`Response::check_status`]), `headers` and `body`; or a
    /// request not sent, or sent without an answer, for `reason` (a
    /// generic one when `None`). Errors: `invalid_argument` naming
    /// `status`.
    pub fn reported(
        kind: ReplyKind,
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        reason: Option<&str>,
    ) -> Result<Reply> {
        Ok(match kind {
            ReplyKind::Response => Reply::Response(Response::received(status, headers, body)?),
            ReplyKind::NotSent => Reply::NotSent(
                reason
                    .unwrap_or("the caller's HTTP client sent nothing")
                    .to_owned(),
            ),
            ReplyKind::SentNoResponse => Reply::SentNoResponse(
                reason
                    .unwrap_or("the caller's HTTP client got no response")
                    .to_owned(),
            ),
        })
    }

    /// The reply's kind.
    pub fn kind(&self) -> ReplyKind {
        match self {
            Reply::Response(_) => ReplyKind::Response,
            Reply::NotSent(_) => ReplyKind::NotSent,
            Reply::SentNoResponse(_) => ReplyKind::SentNoResponse,
        }
    }
}
