//! The decision after one attempt (protocol section 4).

use super::clock::server_time_from_headers;
use super::retry_after::parse_retry_after;
use crate::protocol::headers;

/// What one attempt produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptResult<'a> {
    /// An HTTP response came back.
    Response {
        /// Its status.
        status: u16,
        /// The `error.code` of its JSON error body, if any.
        error_code: Option<&'a str>,
        /// Its headers (names compare case-insensitively).
        headers: &'a [(&'a str, &'a str)],
    },
    /// The request was never sent (connection refused, DNS failure, TLS
    /// failure before the request): nothing reached the platform.
    NotSent,
    /// The request was sent, or may have been, and no response came back
    /// (timeout, reset).
    SentNoResponse,
}

/// Why an operation fails for good.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Failure {
    /// The key was used with another request: never retried, never re-keyed.
    IdempotencyConflict,
    /// The platform refused the request with a final 4xx answer.
    Rejected,
}

/// What to do after one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// The operation is settled with this (2xx) response.
    Done {
        /// The platform replayed a stored answer (`Idempotent-Replayed: true`).
        replayed: bool,
    },
    /// The operation fails for good.
    Fail(Failure),
    /// Re-sign with a fresh nonce and timestamp and retry at once.
    RetryNow,
    /// Retry after a full-jitter backoff.
    RetryBackoff {
        /// The attempt may have taken effect: if retries run out, the outcome
        /// is unknown.
        unknown: bool,
    },
    /// Retry after the platform's `Retry-After`.
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
}

/// The decision for one attempt's result. `has_status_path` tells whether the
/// operation's status can be queried; `now_unix` resolves a `Retry-After`
/// given as an HTTP date.
pub fn decide(result: &AttemptResult<'_>, has_status_path: bool, now_unix: u64) -> Decision {
    let unknown = if has_status_path {
        Decision::QueryStatus
    } else {
        Decision::RetryBackoff { unknown: true }
    };
    let (status, error_code, response_headers) = match *result {
        AttemptResult::NotSent => return Decision::RetryBackoff { unknown: false },
        AttemptResult::SentNoResponse => return unknown,
        AttemptResult::Response {
            status,
            error_code,
            headers,
        } => (status, error_code, headers),
    };
    match status {
        200..=299 => Decision::Done {
            replayed: headers::find(response_headers, headers::IDEMPOTENT_REPLAYED)
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
        },
        409 => match error_code {
            Some("idempotency_conflict") => Decision::Fail(Failure::IdempotencyConflict),
            Some("nonce_reused") => Decision::RetryNow,
            Some("idempotency_in_progress") => Decision::RetryBackoff { unknown: false },
            _ => Decision::RetryBackoff { unknown: true },
        },
        401 if error_code == Some("timestamp_out_of_window") => {
            match server_time_from_headers(response_headers) {
                Some(server_time) => Decision::AdjustClockRetry { server_time },
                None => Decision::Fail(Failure::Rejected),
            }
        }
        429 | 503 => match headers::find(response_headers, headers::RETRY_AFTER)
            .and_then(|v| parse_retry_after(v, now_unix))
        {
            Some(seconds) => Decision::RetryAfter { seconds },
            None => Decision::RetryBackoff { unknown: false },
        },
        400..=499 => Decision::Fail(Failure::Rejected),
        500 | 502 => Decision::RetryBackoff { unknown: false },
        504 => unknown,
        // Any other answer (1xx, 3xx, other 5xx) says nothing certain about
        // the operation: treat it as unknown and keep the key.
        _ => Decision::RetryBackoff { unknown: true },
    }
}

/// Whether an answer with this status and error code came from the
/// platform's signature, replay-cache or rate-limit checks, which run before
/// the idempotency store: such an answer proves the attempt changed nothing.
///
/// `409 nonce_reused` is not one of them: every attempt carries a fresh
/// nonce, so that answer means a copy of the same attempt (duplicated by a
/// proxy or the network) passed verification first, and that copy may have
/// run the operation.
pub fn answered_before_the_operation(status: u16, error_code: Option<&str>) -> bool {
    match status {
        401 | 429 => true,
        400 => error_code == Some("idempotency_key_required"),
        503 => error_code == Some("replay_cache_full"),
        _ => false,
    }
}
