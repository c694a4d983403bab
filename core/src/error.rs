//! The crate's single error type and its stable machine codes.

use std::fmt;

/// A stable, machine-readable error code.
///
/// Every code keeps its name ([`ErrorCode::as_str`]) and its number
/// ([`ErrorCode::number`]) forever: the C ABI, the Go and the Python bindings
/// map them one to one. New codes may be added; none is ever renumbered or
/// reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// An input broke its rule; [`Error::field`] names the field.
    InvalidArgument,
    /// The same idempotency key was used with another request (locally or by
    /// the platform). Never retried, never re-keyed.
    IdempotencyConflict,
    /// The platform rejected the operation with a final 4xx answer; the
    /// status and body are kept.
    Rejected,
    /// The operation may or may not have happened; its key is kept and it can
    /// be resumed.
    OutcomeUnknown,
    /// The outcome is unknown and the key is older than the platform's
    /// retention: it is never POSTed again.
    KeyExpired,
    /// Another thread or process is driving the same operation right now.
    OperationBusy,
    /// A network or HTTP-level failure outside the protocol's own answers.
    Transport,
    /// The durable journal could not be opened, read or written.
    Journal,
    /// Verification: a signature header is missing, repeated or malformed.
    MissingSignature,
    /// Verification: the key id is not known.
    UnknownApiKey,
    /// Verification: the timestamp is outside the allowed window.
    TimestampOutOfWindow,
    /// Verification: the signature does not match.
    InvalidSignature,
    /// Verification: the nonce was already used inside the window.
    NonceReused,
    /// Verification: the replay cache is full and fails closed.
    ReplayCacheFull,
    /// Verification: a POST carried no `Idempotency-Key`.
    IdempotencyKeyRequired,
    /// A bug or a broken invariant inside payidem (for example a panic caught
    /// at a language boundary). Never expected.
    Internal,
    /// The caller cancelled the call (deadline, context, Ctrl-C). The
    /// operation keeps its key; resume it if an attempt may have landed.
    Cancelled,
    /// The platform refused every attempt of the call before its
    /// idempotency check (authentication, rate limit): nothing happened.
    /// Not final: the operation keeps its key and `execute`/`resume` may
    /// complete it later. The last answer's status and body are kept.
    Refused,
    /// Verification: the shared replay store (Redis) could not claim the
    /// nonce — unreachable, timed out, out of memory, or restarted after the
    /// request was signed (its epoch guard) — so the verifier fails closed:
    /// 503 with `Retry-After: 1`. Nothing was accepted; a fresh attempt may
    /// succeed later.
    ReplayStoreUnavailable,
}

impl ErrorCode {
    /// Every code, in number order.
    pub const ALL: [ErrorCode; 19] = [
        ErrorCode::InvalidArgument,
        ErrorCode::IdempotencyConflict,
        ErrorCode::Rejected,
        ErrorCode::OutcomeUnknown,
        ErrorCode::KeyExpired,
        ErrorCode::OperationBusy,
        ErrorCode::Transport,
        ErrorCode::Journal,
        ErrorCode::MissingSignature,
        ErrorCode::UnknownApiKey,
        ErrorCode::TimestampOutOfWindow,
        ErrorCode::InvalidSignature,
        ErrorCode::NonceReused,
        ErrorCode::ReplayCacheFull,
        ErrorCode::IdempotencyKeyRequired,
        ErrorCode::Internal,
        ErrorCode::Cancelled,
        ErrorCode::Refused,
        ErrorCode::ReplayStoreUnavailable,
    ];

    /// The stable snake_case name, as used on the wire and in every binding.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::IdempotencyConflict => "idempotency_conflict",
            ErrorCode::Rejected => "rejected",
            ErrorCode::OutcomeUnknown => "outcome_unknown",
            ErrorCode::KeyExpired => "key_expired",
            ErrorCode::OperationBusy => "operation_busy",
            ErrorCode::Transport => "transport_error",
            ErrorCode::Journal => "journal_error",
            ErrorCode::MissingSignature => "missing_signature",
            ErrorCode::UnknownApiKey => "unknown_api_key",
            ErrorCode::TimestampOutOfWindow => "timestamp_out_of_window",
            ErrorCode::InvalidSignature => "invalid_signature",
            ErrorCode::NonceReused => "nonce_reused",
            ErrorCode::ReplayCacheFull => "replay_cache_full",
            ErrorCode::IdempotencyKeyRequired => "idempotency_key_required",
            ErrorCode::Internal => "internal_error",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::Refused => "refused",
            ErrorCode::ReplayStoreUnavailable => "replay_store_unavailable",
        }
    }

    /// The stable number (never 0, which the C ABI keeps for success).
    pub fn number(self) -> u32 {
        match self {
            ErrorCode::InvalidArgument => 1,
            ErrorCode::IdempotencyConflict => 2,
            ErrorCode::Rejected => 3,
            ErrorCode::OutcomeUnknown => 4,
            ErrorCode::KeyExpired => 5,
            ErrorCode::OperationBusy => 6,
            ErrorCode::Transport => 7,
            ErrorCode::Journal => 8,
            ErrorCode::MissingSignature => 9,
            ErrorCode::UnknownApiKey => 10,
            ErrorCode::TimestampOutOfWindow => 11,
            ErrorCode::InvalidSignature => 12,
            ErrorCode::NonceReused => 13,
            ErrorCode::ReplayCacheFull => 14,
            ErrorCode::IdempotencyKeyRequired => 15,
            ErrorCode::Internal => 16,
            ErrorCode::Cancelled => 17,
            ErrorCode::Refused => 18,
            ErrorCode::ReplayStoreUnavailable => 19,
        }
    }

    /// Whether an operation that ended with this code is settled for good:
    /// it is never sent again, and `execute`/`resume` answer the same end
    /// (`rejected`, `idempotency_conflict`, `key_expired`). `false` for
    /// every other code: an operation that ended with it keeps its key and
    /// may still be completed (`outcome_unknown`, `refused`,
    /// `transport_error`, `cancelled`, `operation_busy`, ...).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            ErrorCode::Rejected | ErrorCode::IdempotencyConflict | ErrorCode::KeyExpired
        )
    }

    /// The code with this stable name, if any.
    pub fn from_name(name: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == name)
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
/// [`ErrorCode::InvalidArgument`], the platform's status and body for
/// [`ErrorCode::Rejected`], the order id and idempotency key for
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
    order_id: Option<String>,
    idempotency_key: Option<String>,
    server_time: Option<u64>,
}

impl Error {
    /// An error with this code and human-readable message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Error {
        Error(Box::new(Inner {
            code,
            message: message.into(),
            field: None,
            status: None,
            body: None,
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

    /// Attaches the platform's HTTP status and body.
    pub fn with_response(mut self, status: u16, body: Vec<u8>) -> Error {
        self.0.status = Some(status);
        self.0.body = Some(body);
        self
    }

    /// The same error with every occurrence of `location` in its message
    /// replaced by [`redact_url`](crate::redact::redact_url)`(location)`, for an
    /// error whose message names a location (a file name that may be a
    /// mistyped URL with a password) verbatim.
    pub fn with_location_redacted(mut self, location: &str) -> Error {
        let redacted = crate::redact::redact_url(location);
        if !location.is_empty() && redacted != location {
            self.0.message = self.0.message.replace(location, &redacted);
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

    /// The HTTP status: the platform's answer for [`ErrorCode::Rejected`], or
    /// the status a verifier answers with for a verification failure.
    pub fn http_status(&self) -> Option<u16> {
        self.0.status.or_else(|| self.0.code.http_status())
    }

    /// The platform's response body, for [`ErrorCode::Rejected`] and
    /// [`ErrorCode::IdempotencyConflict`] answered by the platform.
    pub fn body(&self) -> Option<&[u8]> {
        self.0.body.as_deref()
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
}
