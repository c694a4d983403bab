//! The ABI's vocabulary, in one place: every public enum of payidem that
//! crosses a language boundary is declared here, with `vocabulary!`,
//! together with its table — each value's stable lower-case name and stable
//! number — and re-exported by the module it belongs to (`ErrorCode` by
//! [`crate::error`], `OperationState` by [`crate::operation`], ...), which
//! also holds its rules (`is_final`, `is_settled`, `EndKind::meaning`...).
//! The C ABI's enums carry these numbers and its name functions answer
//! these names (a test in the C crate checks every C enum of the header
//! against [`tables`]); Go reads the names through the C name functions and
//! Python reads them from here.

use std::ffi::CStr;

/// A public enum whose every value has a stable name and a stable number.
/// A name or number is never changed or reused; values may be added.
pub trait Vocabulary: Copy + Eq + 'static {
    /// Every value, in number order.
    const VALUES: &'static [Self];

    /// The stable lower-case name, the same in every binding.
    fn name(self) -> &'static str;

    /// The same name as a static NUL-terminated string (for the C ABI).
    fn c_name(self) -> &'static CStr;

    /// The stable number: the value of the C ABI's enum constant.
    fn number(self) -> u32;

    /// The value with this name, if any.
    fn from_name(name: &str) -> Option<Self> {
        Self::VALUES.iter().copied().find(|v| v.name() == name)
    }

    /// The value with this number, if any.
    fn from_number(number: u32) -> Option<Self> {
        Self::VALUES.iter().copied().find(|v| v.number() == number)
    }
}

/// Declares a public enum and its table in one place: each variant is
/// written `Variant = number => "name",`. The enum gets `Clone, Copy,
/// Debug, PartialEq, Eq, Hash`, the inherent `ALL` (every value, in the
/// order written, which is number order), `as_str`, `c_name`, `number`,
/// `from_name` and `from_number`, and the [`Vocabulary`] trait.
///
/// `enum Kind: kind of "path::Enum" { ... }` declares the kind of a data
/// enum: each variant is documented as a link to `path::Enum`'s variant of
/// the same name.
macro_rules! vocabulary {
    (
        $(#[$meta:meta])*
        $vis:vis enum $Name:ident: kind of $of:literal {
            $($Variant:ident = $number:literal => $name:literal,)+
        }
    ) => {
        vocabulary! {
            $(#[$meta])*
            $vis enum $Name {
                $(
                    #[doc = concat!("[`", $of, "::", stringify!($Variant), "`].")]
                    $Variant = $number => $name,
                )+
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $Name:ident {
            $(
                $(#[$vmeta:meta])*
                $Variant:ident = $number:literal => $name:literal,
            )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $Name {
            $(
                $(#[$vmeta])*
                $Variant,
            )+
        }

        impl $Name {
            /// Every value, in number order.
            pub const ALL: [$Name; [$($number),+].len()] = [$($Name::$Variant),+];

            /// The stable lower-case name, the same in every binding.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($Name::$Variant => $name,)+
                }
            }

            /// The same name as a static NUL-terminated string.
            pub const fn c_name(self) -> &'static ::std::ffi::CStr {
                match self {
                    $($Name::$Variant => {
                        const NAME: &::std::ffi::CStr = match ::std::ffi::CStr::from_bytes_with_nul(
                            concat!($name, "\0").as_bytes(),
                        ) {
                            Ok(name) => name,
                            Err(_) => panic!("a name holds a NUL byte"),
                        };
                        NAME
                    })+
                }
            }

            /// The stable number: the value of the C ABI's enum constant.
            pub const fn number(self) -> u32 {
                match self {
                    $($Name::$Variant => $number,)+
                }
            }

            /// The value with this stable name, if any.
            pub fn from_name(name: &str) -> Option<$Name> {
                $Name::ALL.into_iter().find(|v| v.as_str() == name)
            }

            /// The value with this stable number, if any.
            pub fn from_number(number: u32) -> Option<$Name> {
                $Name::ALL.into_iter().find(|v| v.number() == number)
            }
        }

        impl $crate::vocabulary::Vocabulary for $Name {
            const VALUES: &'static [$Name] = &$Name::ALL;

            fn name(self) -> &'static str {
                self.as_str()
            }

            fn c_name(self) -> &'static ::std::ffi::CStr {
                $Name::c_name(self)
            }

            fn number(self) -> u32 {
                $Name::number(self)
            }
        }
    };
}

vocabulary! {
    /// A stable, machine-readable error code.
    ///
    /// Every code keeps its name ([`ErrorCode::as_str`]) and its number
    /// ([`ErrorCode::number`]) forever: the C ABI, the Go and the Python bindings
    /// map them one to one. New codes may be added; none is ever renumbered or
    /// reused.
    #[non_exhaustive]
    pub enum ErrorCode {
        /// An input broke its rule; [`Error::field`](crate::Error::field) names the field.
        InvalidArgument = 1 => "invalid_argument",
        /// The same idempotency key was used with another request (locally or by
        /// the platform). Never retried, never re-keyed.
        IdempotencyConflict = 2 => "idempotency_conflict",
        /// The platform rejected the operation with a final 4xx answer; the
        /// status and body are kept.
        Rejected = 3 => "rejected",
        /// The operation may or may not have happened; its key is kept and it can
        /// be resumed.
        OutcomeUnknown = 4 => "outcome_unknown",
        /// The outcome is unknown and the key is older than the platform's
        /// retention: it is never POSTed again.
        KeyExpired = 5 => "key_expired",
        /// Another thread or process is driving the same operation right now.
        OperationBusy = 6 => "operation_busy",
        /// A network or HTTP-level failure outside the protocol's own answers.
        Transport = 7 => "transport_error",
        /// The durable journal could not be opened, read or written.
        Journal = 8 => "journal_error",
        /// Verification: a signature header is missing, repeated or malformed.
        MissingSignature = 9 => "missing_signature",
        /// Verification: the key id is not known.
        UnknownApiKey = 10 => "unknown_api_key",
        /// Verification: the timestamp is outside the allowed window.
        TimestampOutOfWindow = 11 => "timestamp_out_of_window",
        /// Verification: the signature does not match.
        InvalidSignature = 12 => "invalid_signature",
        /// Verification: the nonce was already used inside the window.
        NonceReused = 13 => "nonce_reused",
        /// Verification: the replay cache is full and fails closed.
        ReplayCacheFull = 14 => "replay_cache_full",
        /// Verification: a POST carried no `Idempotency-Key`.
        IdempotencyKeyRequired = 15 => "idempotency_key_required",
        /// A bug or a broken invariant inside payidem (for example a panic caught
        /// at a language boundary). Never expected.
        Internal = 16 => "internal_error",
        /// The caller cancelled the call (deadline, context, Ctrl-C). The
        /// operation keeps its key; resume it if an attempt may have landed.
        Cancelled = 17 => "cancelled",
        /// The platform refused every attempt of the call before its
        /// idempotency check (authentication, rate limit): nothing happened.
        /// Not final: the operation keeps its key and `execute`/`resume` may
        /// complete it later. The last answer's status and body are kept.
        Refused = 18 => "refused",
        /// Verification: the shared replay store (Redis) could not claim the
        /// nonce — unreachable, timed out, out of memory, or restarted after the
        /// request was signed (its epoch guard) — so the verifier fails closed:
        /// 503 with `Retry-After: 1`. Nothing was accepted; a fresh attempt may
        /// succeed later.
        ReplayStoreUnavailable = 19 => "replay_store_unavailable",
    }
}

vocabulary! {
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

vocabulary! {
    /// What an attempt is.
    pub enum AttemptKind {
        /// The operation's own request (same method, path, body and key every
        /// time).
        Operation = 1 => "operation",
        /// A signed GET of the operation's status path.
        StatusQuery = 2 => "status_query",
    }
}

vocabulary! {
    /// The kind of a [`Step`](crate::operation::Step), without its data.
    pub enum StepKind: kind of "crate::operation::Step" {
        Persist = 1 => "persist",
        Send = 2 => "send",
        Wait = 3 => "wait",
        End = 4 => "end",
    }
}

vocabulary! {
    /// What the machine decided after an attempt.
    pub enum NextAction {
        /// The call ended with the platform's answer.
        Settle = 1 => "settle",
        /// Retry at once with a fresh signature.
        RetryNow = 2 => "retry_now",
        /// Retry after a backoff or `Retry-After`.
        RetryLater = 3 => "retry_later",
        /// Adjust the clock offset and retry at once.
        AdjustClock = 4 => "adjust_clock",
        /// Query the operation's status.
        QueryStatus = 5 => "query_status",
        /// Query the status again after a backoff.
        QueryLater = 6 => "query_later",
        /// Give up: attempts, deadline, retry budget or `Retry-After` limits
        /// reached, or an answer that may not be believed.
        GiveUp = 7 => "give_up",
    }
}

vocabulary! {
    /// The kind of an [`End`](crate::operation::End), without its data; [`EndKind::meaning`] is
    /// the one statement of what each end means.
    pub enum EndKind: kind of "crate::operation::End" {
        Succeeded = 1 => "succeeded",
        Rejected = 2 => "rejected",
        Conflict = 3 => "conflict",
        Refused = 4 => "refused",
        NotSent = 5 => "not_sent",
        Unknown = 6 => "unknown",
        KeyExpired = 7 => "key_expired",
    }
}

vocabulary! {
    /// Whether the operation may have taken effect on the platform, as far as
    /// one answer tells. Ordered `No < Maybe < Yes`.
    #[derive(PartialOrd, Ord)]
    pub enum Landed {
        /// It did not: the answer came before the platform's idempotency step
        /// (authentication, replay cache, rate limit), nothing was sent, or the
        /// key is held by another request.
        No = 0 => "no",
        /// It may have: keep the key, never re-key, learn the outcome (status
        /// query or a retry with the same key).
        Maybe = 1 => "maybe",
        /// It did: the platform ran it or is running it under this key (a 2xx,
        /// a final refusal it stored, `idempotency_in_progress`).
        Yes = 2 => "yes",
    }
}

vocabulary! {
    /// The kind of an [`Action`](crate::policy::Action), without its data (the C ABI's
    /// `payidem_decision_kind`).
    pub enum DecisionKind: kind of "crate::policy::Action" {
        Done = 1 => "done",
        Fail = 2 => "fail",
        RetryNow = 3 => "retry_now",
        RetryBackoff = 4 => "retry_backoff",
        RetryAfter = 5 => "retry_after",
        AdjustClockRetry = 6 => "adjust_clock_retry",
        QueryStatus = 7 => "query_status",
        SendOperation = 8 => "send_operation",
    }
}

vocabulary! {
    /// The kind of a [`Reply`](crate::policy::Reply), without its data (the C ABI's
    /// `payidem_attempt_outcome`).
    pub enum ReplyKind: kind of "crate::policy::Reply" {
        Response = 1 => "response",
        NotSent = 2 => "not_sent",
        SentNoResponse = 3 => "sent_no_response",
    }
}

vocabulary! {
    /// The kind of a [`CallStep`](crate::client::CallStep), without its data.
    pub enum CallStepKind: kind of "crate::client::CallStep" {
        Send = 1 => "send",
        Wait = 2 => "wait",
        Done = 3 => "done",
    }
}

/// One table of the vocabulary as plain data: the C enum it numbers, and
/// every value's name and number. Lets a test or a binding walk every table
/// without naming each enum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// The C ABI's enum type (`payidem_operation_state`, ...).
    pub c_type: &'static str,
    /// The common prefix of the C enum's constants (`PAYIDEM_STATE_`).
    pub c_prefix: &'static str,
    /// Every value's (name, number), in number order.
    pub values: Vec<(&'static str, u32)>,
}

impl Table {
    fn of<T: Vocabulary>(c_type: &'static str, c_prefix: &'static str) -> Table {
        Table {
            c_type,
            c_prefix,
            values: T::VALUES.iter().map(|v| (v.name(), v.number())).collect(),
        }
    }
}

/// Every table of the vocabulary that the C ABI numbers, with the C enum
/// and constant prefix each one's numbers appear under.
pub fn tables() -> Vec<Table> {
    vec![
        Table::of::<ErrorCode>("payidem_result", "PAYIDEM_"),
        Table::of::<OperationState>("payidem_operation_state", "PAYIDEM_STATE_"),
        Table::of::<AttemptKind>("payidem_attempt_kind", "PAYIDEM_ATTEMPT_KIND_"),
        Table::of::<NextAction>("payidem_next_action", "PAYIDEM_NEXT_"),
        Table::of::<Landed>("payidem_landed", "PAYIDEM_LANDED_"),
        Table::of::<DecisionKind>("payidem_decision_kind", "PAYIDEM_DECISION_"),
        Table::of::<StepKind>("payidem_step_type", "PAYIDEM_STEP_"),
        Table::of::<ReplyKind>("payidem_attempt_outcome", "PAYIDEM_ATTEMPT_"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_table_has_unique_names_and_numbers_in_order() {
        for table in tables() {
            let names: HashSet<&str> = table.values.iter().map(|(n, _)| *n).collect();
            assert_eq!(names.len(), table.values.len(), "{}", table.c_type);
            let numbers: Vec<u32> = table.values.iter().map(|(_, n)| *n).collect();
            let mut sorted = numbers.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(numbers, sorted, "{}: ALL is in number order", table.c_type);
            for (name, _) in &table.values {
                assert!(
                    name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                    "{}: {name}",
                    table.c_type
                );
            }
        }
    }

    #[test]
    fn names_and_numbers_round_trip() {
        fn check<T: Vocabulary + std::fmt::Debug>() {
            for &v in T::VALUES {
                assert_eq!(T::from_name(v.name()), Some(v));
                assert_eq!(T::from_number(v.number()), Some(v));
                assert_eq!(v.c_name().to_str(), Ok(v.name()));
            }
            assert_eq!(T::from_name("no_such_name"), None);
        }
        check::<ErrorCode>();
        check::<OperationState>();
        check::<EndKind>();
        check::<DecisionKind>();
        check::<Landed>();
        check::<CallStepKind>();
        check::<StepKind>();
        check::<ReplyKind>();
    }
}
