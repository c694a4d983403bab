//! The crate's single error type and its stable machine codes.

pub use crate::vocabulary::ErrorCode;
pub use platform::PlatformError;
use std::fmt;

pub mod platform;
pub mod text;

impl ErrorCode {
    /// Whether an operation that ended with this code is final: its
    /// request is never sent again (`rejected`, `idempotency_conflict`,
    /// `key_expired`; see [`EndKind`](crate::operation::EndKind) for what a
    /// later call does with each end: a `key_expired` one stays `unknown`
    /// in the journal and a later call asks the platform for its status,
    /// never POSTing it again). `false` for
    /// every other code: an operation that ended with it keeps its key and
    /// may still be completed (`outcome_unknown`, `refused`,
    /// `transport_error`, `cancelled`, `operation_busy`, ...).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            ErrorCode::Rejected | ErrorCode::IdempotencyConflict | ErrorCode::KeyExpired
        )
    }

    /// The HTTP status a platform answers with for a verification failure
    /// (protocol section 3); `None` for codes that are not verification
    /// answers.
    pub fn http_status(self) -> Option<u16> {
        match self {
            ErrorCode::MissingSignature
            | ErrorCode::UnknownApiKey
            | ErrorCode::TimestampOutOfWindow
            | ErrorCode::InvalidSignature => Some(401),
            ErrorCode::NonceReused | ErrorCode::IdempotencyConflict => Some(409),
            ErrorCode::ReplayCacheFull | ErrorCode::ReplayStoreUnavailable => Some(503),
            ErrorCode::IdempotencyKeyRequired | ErrorCode::InvalidArgument => Some(400),
            _ => None,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of every fallible payidem call.
///
/// It carries a stable [`ErrorCode`], a message written for people, and the
/// context the code calls for: the offending field for
/// [`ErrorCode::InvalidArgument`], the platform's status, body and error
/// code and message for [`ErrorCode::Rejected`], the order id and idempotency key for
/// [`ErrorCode::OutcomeUnknown`] and [`ErrorCode::KeyExpired`]. It never holds
/// a secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Error(Box<Inner>);

#[derive(Clone, PartialEq, Eq)]
struct Inner {
    code: ErrorCode,
    message: String,
    field: Option<&'static str>,
    status: Option<u16>,
    body: Option<Vec<u8>>,
    platform: Option<PlatformError>,
    order_id: Option<String>,
    idempotency_key: Option<String>,
    server_time: Option<u64>,
}

impl Error {
    /// An error with this code and human-readable message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Error {
        let e = Error::bare(code, message.into());
        text::record(code, &e.0.message);
        e
    }

    /// An error with this code and message, not recorded ([`text`]).
    fn bare(code: ErrorCode, message: String) -> Error {
        Error(Box::new(Inner {
            code,
            message,
            field: None,
            status: None,
            body: None,
            platform: None,
            order_id: None,
            idempotency_key: None,
            server_time: None,
        }))
    }

    /// An [`ErrorCode::InvalidArgument`] naming `field`; the message is
    /// prefixed with the field's name.
    pub fn invalid(field: &'static str, message: impl fmt::Display) -> Error {
        let mut e = Error::new(ErrorCode::InvalidArgument, format!("{field}: {message}"));
        e.0.field = Some(field);
        e
    }

    /// Attaches the platform's HTTP status and body, and the platform's
    /// error code and message read from the body when it is the protocol's
    /// error body ([`PlatformError`]).
    pub fn with_response(mut self, status: u16, body: Vec<u8>) -> Error {
        self.0.status = Some(status);
        self.0.platform = PlatformError::from_body(&body);
        self.0.body = Some(body);
        self
    }

    /// An error that came with the platform's answer (`status`, `body`):
    /// its message is `message` given the answer described for people,
    /// `HTTP 402 card_declined: Your card was declined` (the status, then the
    /// platform's code and message when the body carries them).
    pub fn answered(
        code: ErrorCode,
        status: u16,
        body: Vec<u8>,
        message: impl FnOnce(&str) -> String,
    ) -> Error {
        let mut e = Error::bare(code, String::new()).with_response(status, body);
        let answer = match &e.0.platform {
            Some(platform) => format!("HTTP {status} {platform}"),
            None => format!("HTTP {status}"),
        };
        e.0.message = message(&answer);
        text::record(code, &e.0.message);
        e
    }

    /// The same error with every occurrence of `location` in its message
    /// replaced by [`redact_url`](crate::redact::redact_url)`(location)`, for an
    /// error whose message names a location (a file name that may be a
    /// mistyped URL with a password) verbatim.
    pub fn with_location_redacted(mut self, location: &str) -> Error {
        let redacted = crate::redact::redact_url(location);
        if !location.is_empty() && redacted != location {
            self.0.message = self.0.message.replace(location, &redacted);
            text::record(self.0.code, &self.0.message);
        }
        self
    }

    /// Attaches an HTTP status alone.
    pub fn with_status(mut self, status: u16) -> Error {
        self.0.status = Some(status);
        self
    }

    /// Attaches the operation's order id and idempotency key.
    pub fn with_operation(mut self, order_id: &str, idempotency_key: &str) -> Error {
        self.0.order_id = Some(order_id.to_owned());
        self.0.idempotency_key = Some(idempotency_key.to_owned());
        self
    }

    /// Adds to the message that the journal could not record the answer
    /// this error carries (the error's code, status and body stay the
    /// platform's): the operation stays resumable and the platform replays
    /// the same answer.
    pub fn with_journal_error(mut self, journal: &Error) -> Error {
        self.0.message = format!(
            "{}; the journal could not record this answer ({}), the operation stays resumable \
             and the platform replays it",
            self.0.message,
            journal.message()
        );
        text::record(self.0.code, &self.0.message);
        self
    }

    /// Attaches the server's clock (Unix seconds), for
    /// [`ErrorCode::TimestampOutOfWindow`].
    pub fn with_server_time(mut self, server_time: u64) -> Error {
        self.0.server_time = Some(server_time);
        self
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        self.0.code
    }

    /// The message, for people; never contains a secret.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The invalid field, for [`ErrorCode::InvalidArgument`].
    pub fn field(&self) -> Option<&'static str> {
        self.0.field
    }

    /// The HTTP status: the platform's answer for an error that came with
    /// one ([`ErrorCode::Rejected`], [`ErrorCode::Refused`], a conflict the
    /// platform answered), or the status a verifier answers with for a
    /// request that failed [`Verifier::verify`](crate::verifier::Verifier::verify).
    /// `None` for every local error (an invalid argument, a journal error):
    /// nothing was sent nor answered.
    pub fn http_status(&self) -> Option<u16> {
        self.0.status
    }

    /// The platform's response body, for [`ErrorCode::Rejected`] and
    /// [`ErrorCode::IdempotencyConflict`] answered by the platform.
    pub fn body(&self) -> Option<&[u8]> {
        self.0.body.as_deref()
    }

    /// The platform's error code (`error.code` of its answer's body, e.g.
    /// `card_declined`), for an error that came with a platform answer in
    /// the protocol's error body; bounded and with control characters
    /// escaped ([`PlatformError`]).
    pub fn platform_code(&self) -> Option<&str> {
        self.0.platform.as_ref().map(PlatformError::code)
    }

    /// The platform's error message for people (`error.message` of its
    /// answer's body), when [`Error::platform_code`] is set and the body
    /// has a message; bounded and with control characters escaped.
    pub fn platform_message(&self) -> Option<&str> {
        self.0.platform.as_ref().and_then(PlatformError::message)
    }

    /// The operation's order id, when the error concerns one operation.
    pub fn order_id(&self) -> Option<&str> {
        self.0.order_id.as_deref()
    }

    /// The operation's idempotency key, when the error concerns one operation.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.0.idempotency_key.as_deref()
    }

    /// The server's clock, for [`ErrorCode::TimestampOutOfWindow`].
    pub fn server_time(&self) -> Option<u64> {
        self.0.server_time
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("code", &self.0.code)
            .field("message", &self.0.message);
        if let Some(field) = self.0.field {
            d.field("field", &field);
        }
        if let Some(status) = self.0.status {
            d.field("status", &status);
        }
        if let Some(platform) = &self.0.platform {
            d.field("platform", &platform.to_string());
        }
        if let Some(order_id) = &self.0.order_id {
            d.field("order_id", order_id);
        }
        if let Some(key) = &self.0.idempotency_key {
            d.field("idempotency_key", key);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0.code, self.0.message)
    }
}

impl std::error::Error for Error {}

/// Shorthand for `Result<T, payidem::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_and_round_trip() {
        let numbers: HashSet<u32> = ErrorCode::ALL.iter().map(|c| c.number()).collect();
        assert_eq!(numbers.len(), ErrorCode::ALL.len());
        assert!(!numbers.contains(&0));
        for (i, code) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(code.number() as usize, i + 1, "numbers follow ALL's order");
            assert_eq!(ErrorCode::from_name(code.as_str()), Some(*code));
        }
    }

    #[test]
    fn invalid_names_its_field() {
        let e = Error::invalid("amount", "must be positive");
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        assert_eq!(e.field(), Some("amount"));
        assert_eq!(e.to_string(), "invalid_argument: amount: must be positive");
    }

    #[test]
    fn local_errors_carry_no_http_status() {
        for code in ErrorCode::ALL {
            let e = Error::new(code, "local");
            assert_eq!(e.http_status(), None, "{code}");
            assert_eq!((e.platform_code(), e.platform_message()), (None, None));
        }
        assert_eq!(Error::invalid("base_url", "not a URL").http_status(), None);
    }

    #[test]
    fn an_answer_names_the_platform_error() {
        let body = br#"{"error":{"code":"card_declined","message":"Your card was declined"}}"#;
        let e = Error::answered(ErrorCode::Rejected, 402, body.to_vec(), |a| {
            format!("refused with {a} (final)")
        });
        assert_eq!(e.http_status(), Some(402));
        assert_eq!(e.body(), Some(&body[..]));
        assert_eq!(e.platform_code(), Some("card_declined"));
        assert_eq!(e.platform_message(), Some("Your card was declined"));
        assert_eq!(
            e.message(),
            "refused with HTTP 402 card_declined: Your card was declined (final)"
        );
        assert!(format!("{e:?}").contains("card_declined: Your card was declined"));
        let forged = br#"{"error":{"code":"x\n","message":"a\r\nINFO forged"}}"#;
        let e = Error::answered(ErrorCode::Refused, 401, forged.to_vec(), |a| a.to_owned());
        assert_eq!(e.message(), "HTTP 401 x\\n: a\\r\\nINFO forged");
        assert!(!e.to_string().chars().any(char::is_control));
    }
}
