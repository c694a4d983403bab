//! The decision after one attempt (protocol section 4): for the operation's
//! own request ([`decide`]) and for a status query ([`decide_status_query`]).

use super::clock::server_time_from_headers;
use super::error_body::error_code_from_body;
use super::reply::{Reply, Response};
use super::retry_after::parse_retry_after;
use crate::protocol::headers;
pub use crate::vocabulary::{DecisionKind, Landed};

/// What the decisions read of a response: its status, the `error.code` of
/// its body and its headers.
struct Answer<'a> {
    status: u16,
    error_code: Option<String>,
    headers: Vec<(&'a str, &'a str)>,
}

impl<'a> Answer<'a> {
    fn of(response: &'a Response) -> Answer<'a> {
        Answer {
            status: response.status,
            error_code: error_code_from_body(&response.body),
            headers: response.header_pairs(),
        }
    }
}

/// Why an operation stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Failure {
    /// The key was used with another request: never retried, never re-keyed.
    IdempotencyConflict,
    /// The platform refused the request with a final 4xx answer. With
    /// [`Landed::No`] (authentication, or a second clock refusal) the refusal
    /// came before the platform's idempotency step: nothing happened, and the
    /// operation may be sent again later with the same key.
    Rejected,
}

impl Failure {
    /// The error code an operation that stops this way ends with.
    pub fn code(self) -> crate::error::ErrorCode {
        match self {
            Failure::IdempotencyConflict => crate::error::ErrorCode::IdempotencyConflict,
            Failure::Rejected => crate::error::ErrorCode::Rejected,
        }
    }
}

/// What to do after one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The operation is settled with this (2xx) response.
    Done {
        /// The platform replayed a stored answer (`Idempotent-Replayed: true`).
        replayed: bool,
    },
    /// Stop: the operation failed (see [`Decision::landed`] for whether
    /// anything happened).
    Fail(Failure),
    /// Re-sign with a fresh nonce and timestamp and send the same request
    /// again at once.
    RetryNow,
    /// Send the same request again after a full-jitter backoff.
    RetryBackoff,
    /// Send the same request again after the platform's `Retry-After`.
    RetryAfter {
        /// Seconds to wait.
        seconds: u64,
    },
    /// Take the clock offset from the server's time and retry once at once.
    AdjustClockRetry {
        /// The server's clock, Unix seconds.
        server_time: u64,
    },
    /// The outcome is unknown: query the operation's status first.
    QueryStatus,
    /// A status query found no such operation: it did not land; send the
    /// operation itself again at once, with the same key.
    SendOperation,
}

impl Action {
    /// The action's kind.
    pub fn kind(self) -> DecisionKind {
        match self {
            Action::Done { .. } => DecisionKind::Done,
            Action::Fail(_) => DecisionKind::Fail,
            Action::RetryNow => DecisionKind::RetryNow,
            Action::RetryBackoff => DecisionKind::RetryBackoff,
            Action::RetryAfter { .. } => DecisionKind::RetryAfter,
            Action::AdjustClockRetry { .. } => DecisionKind::AdjustClockRetry,
            Action::QueryStatus => DecisionKind::QueryStatus,
            Action::SendOperation => DecisionKind::SendOperation,
        }
    }

    /// The stable lower-case name of the action's kind
    /// ([`DecisionKind::as_str`]).
    pub fn as_str(self) -> &'static str {
        self.kind().as_str()
    }
}

/// The decision after one attempt: what to do, and whether the operation
/// may have taken effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Decision {
    /// What to do next.
    pub action: Action,
    /// Whether the operation may have taken effect, from this answer alone.
    /// Anything but [`Landed::No`] means: keep the key, never re-key; if
    /// retries run out, the outcome is unknown.
    pub landed: Landed,
}

impl Decision {
    fn new(action: Action, landed: Landed) -> Decision {
        Decision { action, landed }
    }
}

/// The decision for one attempt of the operation's own request.
/// `has_status_path` tells whether the operation's status can be queried;
/// `platform_now_unix` is the platform's clock (local time plus the learnt
/// offset), which resolves a `Retry-After` given as an HTTP date.
pub fn decide(reply: &Reply, has_status_path: bool, platform_now_unix: u64) -> Decision {
    let unknown = if has_status_path {
        Decision::new(Action::QueryStatus, Landed::Maybe)
    } else {
        Decision::new(Action::RetryBackoff, Landed::Maybe)
    };
    let answer = match reply {
        Reply::NotSent(_) => return Decision::new(Action::RetryBackoff, Landed::No),
        Reply::SentNoResponse(_) => return unknown,
        Reply::Response(r) => Answer::of(r),
    };
    let (status, error_code, response_headers) = (
        answer.status,
        answer.error_code.as_deref(),
        &answer.headers[..],
    );
    let landed = landed_by_answer(status, error_code);
    let action = match status {
        200..=299 => Action::Done {
            replayed: headers::says_replayed(response_headers),
        },
        409 => match error_code {
            Some("idempotency_conflict") => Action::Fail(Failure::IdempotencyConflict),
            Some("nonce_reused") => Action::RetryNow,
            _ => Action::RetryBackoff,
        },
        401 if error_code == Some("timestamp_out_of_window") => {
            match server_time_from_headers(response_headers) {
                Some(server_time) => Action::AdjustClockRetry { server_time },
                None => Action::Fail(Failure::Rejected),
            }
        }
        429 | 503 => retry_after_or_backoff(response_headers, platform_now_unix),
        400..=499 => Action::Fail(Failure::Rejected),
        504 => return unknown,
        _ => Action::RetryBackoff,
    };
    Decision::new(action, landed)
}

/// The decision for one status query (a signed GET of the operation's
/// status path). A 2xx settles the operation with that answer; 404 means
/// the operation did not land, so it is sent again with the same key; the
/// clock and replay answers are handled as for the operation; anything else
/// is asked again after a backoff (or `Retry-After`), and says nothing about
/// whether the operation landed. The caller applies the key-expiry rule to
/// [`Action::SendOperation`].
pub fn decide_status_query(reply: &Reply, platform_now_unix: u64) -> Decision {
    let answer = match reply {
        Reply::NotSent(_) | Reply::SentNoResponse(_) => {
            return Decision::new(Action::RetryBackoff, Landed::Maybe)
        }
        Reply::Response(r) => Answer::of(r),
    };
    let (status, error_code, response_headers) = (
        answer.status,
        answer.error_code.as_deref(),
        &answer.headers[..],
    );
    match status {
        200..=299 => Decision::new(Action::Done { replayed: false }, Landed::Yes),
        404 if planted!(StatusNotFoundSuccess) => {
            Decision::new(Action::Done { replayed: false }, Landed::Yes)
        }
        404 => Decision::new(Action::SendOperation, Landed::No),
        409 if error_code == Some("nonce_reused") => Decision::new(Action::RetryNow, Landed::Maybe),
        401 if error_code == Some("timestamp_out_of_window") => {
            match server_time_from_headers(response_headers) {
                Some(server_time) => {
                    Decision::new(Action::AdjustClockRetry { server_time }, Landed::Maybe)
                }
                None => Decision::new(Action::RetryBackoff, Landed::Maybe),
            }
        }
        429 | 503 => Decision::new(
            retry_after_or_backoff(response_headers, platform_now_unix),
            Landed::Maybe,
        ),
        _ => Decision::new(Action::RetryBackoff, Landed::Maybe),
    }
}

fn retry_after_or_backoff(response_headers: &[(&str, &str)], platform_now_unix: u64) -> Action {
    if planted!(RetryAfterIgnored) {
        return Action::RetryBackoff;
    }
    match headers::find(response_headers, headers::RETRY_AFTER)
        .and_then(|v| parse_retry_after(v, platform_now_unix))
    {
        Some(seconds) => Action::RetryAfter { seconds },
        None => Action::RetryBackoff,
    }
}

/// Whether the operation may have taken effect, from one answer of the
/// platform to the operation's own request.
///
/// - [`Landed::No`]: the answer came from the platform's signature,
///   replay-cache or rate-limit checks, which run before the idempotency
///   store (401, 429, 400 `idempotency_key_required`, 503
///   `replay_cache_full` or `replay_store_unavailable`), or the key is held
///   by another request (409 `idempotency_conflict`).
/// - [`Landed::Yes`]: a 2xx, `idempotency_in_progress`, or another 4xx (a
///   refusal the platform keeps under the key, e.g. 402 `card_declined`).
/// - [`Landed::Maybe`]: everything else — 409 `nonce_reused` (every attempt
///   carries a fresh nonce, so a copy of this attempt passed verification
///   first and may have run the operation), 500, 502, 503, 504, other 409s,
///   1xx, 3xx and other 5xx.
pub fn landed_by_answer(status: u16, error_code: Option<&str>) -> Landed {
    match (status, error_code) {
        (401 | 429, _)
        | (400, Some("idempotency_key_required"))
        | (503, Some("replay_cache_full" | "replay_store_unavailable"))
        | (409, Some("idempotency_conflict")) => Landed::No,
        (500, _) if planted!(FiveHundredNotLanded) => Landed::No,
        (200..=299, _) | (409, Some("idempotency_in_progress")) => Landed::Yes,
        (409, _) => Landed::Maybe,
        (400..=499, _) => Landed::Yes,
        _ => Landed::Maybe,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u16, code: Option<&str>, headers: &[(&str, &str)]) -> Reply {
        let headers = headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        Reply::Response(Response::new(
            status,
            headers,
            super::super::error_body(code),
        ))
    }

    fn response(status: u16, code: Option<&str>) -> Decision {
        decide(&reply(status, code, &[]), true, 0)
    }

    #[test]
    fn a_500_may_have_landed() {
        for status in [500, 502, 503, 504, 520, 302] {
            assert_eq!(response(status, None).landed, Landed::Maybe, "{status}");
        }
    }

    #[test]
    fn answers_before_the_idempotency_step_did_not_land() {
        assert_eq!(response(401, Some("invalid_signature")).landed, Landed::No);
        assert_eq!(response(429, None).landed, Landed::No);
        assert_eq!(response(503, Some("replay_cache_full")).landed, Landed::No);
        assert_eq!(
            response(503, Some("replay_store_unavailable")).landed,
            Landed::No
        );
        assert_eq!(response(409, Some("nonce_reused")).landed, Landed::Maybe);
        assert_eq!(response(402, Some("card_declined")).landed, Landed::Yes);
    }

    #[test]
    fn status_query_rules() {
        let q = |status, code| decide_status_query(&reply(status, code, &[]), 0);
        assert_eq!(q(404, None).action, Action::SendOperation);
        assert_eq!(q(404, None).landed, Landed::No);
        assert_eq!(q(200, None).action, Action::Done { replayed: false });
        assert_eq!(q(409, Some("nonce_reused")).action, Action::RetryNow);
        assert_eq!(q(500, None).action, Action::RetryBackoff);
        assert_eq!(q(500, None).landed, Landed::Maybe);
    }

    #[test]
    fn retry_after_dates_use_the_platform_clock() {
        // 1994-11-06 08:49:37 GMT is 784111777.
        let headers = [("Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT")];
        let d = decide(&reply(503, None, &headers), true, 784_111_776);
        assert_eq!(d.action, Action::RetryAfter { seconds: 1 });
    }
}
