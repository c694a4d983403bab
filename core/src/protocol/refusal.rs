//! The HTTP answer that refuses a request which failed verification
//! (protocol section 3): status, headers and the exact error body.
//!
//! This is the one definition of that answer. The mock platform, the C ABI
//! (`payidem_refusal_*`), the Go middleware and the Python WSGI middleware
//! all send what [`Refusal`] builds, byte for byte.

use std::time::{Duration, UNIX_EPOCH};

use serde_json::json;

use super::headers;
use crate::error::{Error, ErrorCode};

/// The `Retry-After` (seconds) of every `replay_store_unavailable` refusal:
/// the store could not answer, or the request was signed before its epoch
/// (a fresh attempt a second later is past it, or close: the skew is 2 s).
pub const UNAVAILABLE_RETRY_AFTER_SECONDS: u64 = 1;

/// The `Content-Type` header every refusal carries.
pub const CONTENT_TYPE: &str = "Content-Type";
/// The media type of every refusal's body.
pub const JSON_MEDIA_TYPE: &str = "application/json";

/// The last second an HTTP date can name (9999-12-31T23:59:59Z); a later
/// server clock is sent as this date (`X-Server-Time` stays exact).
const LAST_HTTP_DATE: u64 = 253_402_300_799;

/// The message of the 500 answer for an error that verification never
/// gives: the server failed, and its own error is not shown to the client.
const INTERNAL_MESSAGE: &str = "the server could not verify this request";

/// A complete HTTP answer that refuses a request: status, headers and body.
///
/// The body is always `{"error":{"code":"<code>","message":"<text>"}}`
/// (compact JSON, UTF-8, no trailing newline), and the headers always start
/// with `Content-Type: application/json`. A server sends exactly these
/// headers besides its framing ones (`Content-Length`, `Connection`), and
/// sends no second `Date` when the refusal carries one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    status: u16,
    code: &'static str,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

impl Refusal {
    /// Every code [`Verifier::verify`](crate::verifier::Verifier::verify) fails with,
    /// in number order. Each is refused with its own status
    /// ([`ErrorCode::http_status`]): 401 `missing_signature`,
    /// `unknown_api_key`, `timestamp_out_of_window` and `invalid_signature`;
    /// 409 `nonce_reused`; 503 `replay_cache_full`; 400
    /// `idempotency_key_required`, and 400 `invalid_argument` for an
    /// `Idempotency-Key` header that is empty, repeated or breaks its rule;
    /// 503 `replay_store_unavailable` (a shared Redis replay store that
    /// cannot answer, or its epoch guard).
    pub const VERIFICATION_CODES: [ErrorCode; 9] = [
        ErrorCode::InvalidArgument,
        ErrorCode::MissingSignature,
        ErrorCode::UnknownApiKey,
        ErrorCode::TimestampOutOfWindow,
        ErrorCode::InvalidSignature,
        ErrorCode::NonceReused,
        ErrorCode::ReplayCacheFull,
        ErrorCode::IdempotencyKeyRequired,
        ErrorCode::ReplayStoreUnavailable,
    ];

    /// The status a request refused with `code` is answered with, for a
    /// code of [`Refusal::VERIFICATION_CODES`]; `None` for any other code.
    pub fn verification_status(code: ErrorCode) -> Option<u16> {
        code.http_status()
            .filter(|_| Refusal::VERIFICATION_CODES.contains(&code))
    }

    /// The answer to a request whose verification failed with `error`.
    ///
    /// A code of [`Refusal::VERIFICATION_CODES`] is answered with its status
    /// and the error's own code and message; `timestamp_out_of_window` also
    /// carries the server's clock ([`Error::server_time`], which every error
    /// of [`Verifier::verify`](crate::verifier::Verifier::verify) has) as
    /// `X-Server-Time` (Unix seconds) and `Date` (an HTTP date), and
    /// `replay_store_unavailable` carries `Retry-After: 1` (the same in
    /// every language: the refusal depends on the code, message and server
    /// time only). Any other
    /// error is a failure of the server, never of the request: it is answered
    /// 500 `internal_error` with a fixed message that shows nothing of it.
    pub fn for_error(error: &Error) -> Refusal {
        let code = error.code();
        let Some(status) = Refusal::verification_status(code) else {
            return Refusal::new(500, ErrorCode::Internal.as_str(), INTERNAL_MESSAGE);
        };
        let mut refusal = Refusal::new(status, code.as_str(), error.message());
        if code == ErrorCode::TimestampOutOfWindow {
            if let Some(server_time) = error.server_time() {
                refusal
                    .headers
                    .push((headers::SERVER_TIME, server_time.to_string()));
                refusal
                    .headers
                    .push((headers::DATE, http_date(server_time)));
            }
        }
        if code == ErrorCode::ReplayStoreUnavailable {
            refusal.headers.push((
                headers::RETRY_AFTER,
                UNAVAILABLE_RETRY_AFTER_SECONDS.to_string(),
            ));
        }
        refusal
    }

    /// 413 `payload_too_large`: the body is over the server's limit of
    /// `limit_bytes`, so it was not read nor verified.
    pub fn body_too_large(limit_bytes: u64) -> Refusal {
        Refusal::new(
            413,
            "payload_too_large",
            &format!("the body is larger than {limit_bytes} bytes"),
        )
    }

    /// 400 `bad_request`: the request's HTTP framing cannot be trusted (for
    /// example a `Content-Length` that is not a number); `why` says what.
    pub fn bad_request(why: &str) -> Refusal {
        Refusal::new(400, "bad_request", why)
    }

    fn new(status: u16, code: &'static str, message: &str) -> Refusal {
        let body = json!({"error": {"code": code, "message": message}});
        Refusal {
            status,
            code,
            headers: vec![(CONTENT_TYPE, JSON_MEDIA_TYPE.to_owned())],
            body: serde_json::to_vec(&body).expect("a JSON value of strings serializes"),
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The error code the body carries (a stable [`ErrorCode`] name, or
    /// `payload_too_large` / `bad_request`).
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The headers to send, in order: `Content-Type`, then for
    /// `timestamp_out_of_window` `X-Server-Time` and `Date`, for
    /// `replay_store_unavailable` `Retry-After`. Never a framing header.
    pub fn headers(&self) -> &[(&'static str, String)] {
        &self.headers
    }

    /// The exact body bytes.
    pub fn body(&self) -> &[u8] {
        &self.body
    }
}

/// `unix` as an HTTP date (IMF-fixdate), clamped to the last one there is.
fn http_date(unix: u64) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(unix.min(LAST_HTTP_DATE)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header<'a>(r: &'a Refusal, name: &str) -> Option<&'a str> {
        headers::find(r.headers(), name)
    }

    fn body_of(r: &Refusal) -> serde_json::Value {
        serde_json::from_slice(r.body()).unwrap()
    }

    #[test]
    fn a_verification_error_gives_status_code_and_message_exactly() {
        let e = Error::new(ErrorCode::NonceReused, "X-Nonce was already used");
        let r = Refusal::for_error(&e);
        assert_eq!((r.status(), r.code()), (409, "nonce_reused"));
        assert_eq!(
            r.body(),
            br#"{"error":{"code":"nonce_reused","message":"X-Nonce was already used"}}"#
        );
        assert_eq!(
            r.headers(),
            &[("Content-Type", "application/json".to_owned())]
        );
    }

    #[test]
    fn the_body_escapes_what_json_must_and_nothing_else() {
        let e = Error::new(ErrorCode::InvalidSignature, "a \"quote\",\n<tag> & é");
        let r = Refusal::for_error(&e);
        assert_eq!(
            std::str::from_utf8(r.body()).unwrap(),
            r#"{"error":{"code":"invalid_signature","message":"a \"quote\",\n<tag> & é"}}"#
        );
        assert_eq!(body_of(&r)["error"]["message"], "a \"quote\",\n<tag> & é");
    }

    #[test]
    fn timestamp_out_of_window_carries_the_server_clock_twice() {
        let e = Error::new(ErrorCode::TimestampOutOfWindow, "too far").with_server_time(1_000);
        let r = Refusal::for_error(&e);
        assert_eq!(r.status(), 401);
        let names: Vec<&str> = r.headers().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["Content-Type", "X-Server-Time", "Date"]);
        assert_eq!(header(&r, "X-Server-Time"), Some("1000"));
        assert_eq!(header(&r, "Date"), Some("Thu, 01 Jan 1970 00:16:40 GMT"));
        // A clock past the last HTTP date: the date is clamped, the seconds
        // stay exact.
        let e = Error::new(ErrorCode::TimestampOutOfWindow, "x").with_server_time(u64::MAX);
        let r = Refusal::for_error(&e);
        assert_eq!(header(&r, "X-Server-Time"), Some("18446744073709551615"));
        assert_eq!(header(&r, "Date"), Some("Fri, 31 Dec 9999 23:59:59 GMT"));
        // Without a server time (an error not made by the verifier) there is
        // no clock to send.
        let r = Refusal::for_error(&Error::new(ErrorCode::TimestampOutOfWindow, "x"));
        assert_eq!(header(&r, "X-Server-Time"), None);
        assert_eq!(header(&r, "Date"), None);
        // Only that code sends the clock.
        let e = Error::new(ErrorCode::InvalidSignature, "x").with_server_time(1_000);
        assert_eq!(Refusal::for_error(&e).headers().len(), 1);
    }

    #[test]
    fn statuses_follow_the_codes_table_and_other_errors_are_a_hidden_500() {
        for code in ErrorCode::ALL {
            let e = Error::new(code, "secret-looking detail /var/lib/journal");
            let r = Refusal::for_error(&e);
            if Refusal::VERIFICATION_CODES.contains(&code) {
                assert_eq!(Some(r.status()), code.http_status(), "{code}");
                assert_eq!(r.code(), code.as_str());
                assert_eq!(
                    body_of(&r)["error"]["message"],
                    "secret-looking detail /var/lib/journal"
                );
            } else {
                assert_eq!((r.status(), r.code()), (500, "internal_error"), "{code}");
                assert!(!String::from_utf8_lossy(r.body()).contains("journal"));
            }
        }
        let protocol = [
            (ErrorCode::MissingSignature, 401),
            (ErrorCode::UnknownApiKey, 401),
            (ErrorCode::TimestampOutOfWindow, 401),
            (ErrorCode::InvalidSignature, 401),
            (ErrorCode::NonceReused, 409),
            (ErrorCode::ReplayCacheFull, 503),
            (ErrorCode::IdempotencyKeyRequired, 400),
            (ErrorCode::InvalidArgument, 400),
            (ErrorCode::ReplayStoreUnavailable, 503),
        ];
        for (code, status) in protocol {
            assert_eq!(Refusal::for_error(&Error::new(code, "m")).status(), status);
        }
        let numbers: Vec<u32> = Refusal::VERIFICATION_CODES
            .iter()
            .map(|c| c.number())
            .collect();
        assert!(
            numbers.windows(2).all(|w| w[0] < w[1]),
            "in number order, each once"
        );
    }

    #[test]
    fn replay_store_unavailable_says_when_to_retry() {
        let e = Error::new(ErrorCode::ReplayStoreUnavailable, "store down");
        let r = Refusal::for_error(&e);
        assert_eq!((r.status(), r.code()), (503, "replay_store_unavailable"));
        let names: Vec<&str> = r.headers().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["Content-Type", "Retry-After"]);
        assert_eq!(header(&r, "Retry-After"), Some("1"));
        // No other code sends it.
        for code in ErrorCode::ALL {
            if code != ErrorCode::ReplayStoreUnavailable {
                let r = Refusal::for_error(&Error::new(code, "x"));
                assert_eq!(header(&r, "Retry-After"), None, "{code}");
            }
        }
    }

    #[test]
    fn body_too_large_and_bad_request() {
        let r = Refusal::body_too_large(1_048_576);
        assert_eq!((r.status(), r.code()), (413, "payload_too_large"));
        assert_eq!(
            r.body(),
            br#"{"error":{"code":"payload_too_large","message":"the body is larger than 1048576 bytes"}}"#
        );
        let r = Refusal::bad_request("Content-Length is not a number");
        assert_eq!((r.status(), r.code()), (400, "bad_request"));
        assert_eq!(
            body_of(&r)["error"]["message"],
            "Content-Length is not a number"
        );
        assert_eq!(r.headers().len(), 1);
    }
}
