//! What the machine and its driver exchange: the steps it asks for and
//! the inputs of time and randomness (the replies it is told are
//! [`crate::policy::Reply`]).

use std::sync::Arc;
use std::time::Duration;

use crate::protocol::nonce::fill_random;
use crate::protocol::{Nonce, NonceSource, OsNonceSource};

use super::end::End;
pub use crate::vocabulary::{AttemptKind, NextAction, StepKind};

/// The two clocks a call reads: wall time for signing and key age, and the
/// time elapsed since the call started for the deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallTime {
    /// Local wall-clock time, Unix seconds.
    pub unix: u64,
    /// Monotonic time since the call started.
    pub elapsed: Duration,
}

/// Randomness a call needs: nonces and backoff jitter.
pub trait Entropy: Send + Sync {
    /// A fresh nonce.
    fn nonce(&self) -> Nonce;
    /// 64 random bits for jitter.
    fn jitter(&self) -> u64;
}

/// Entropy from the operating system's generator (see [`OsNonceSource`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct OsEntropy;

impl Entropy for OsEntropy {
    fn nonce(&self) -> Nonce {
        OsNonceSource.next_nonce()
    }

    fn jitter(&self) -> u64 {
        let mut b = [0u8; 8];
        fill_random(&mut b);
        u64::from_ne_bytes(b)
    }
}

/// One signed request to send now.
#[derive(Clone, Debug)]
pub struct Attempt {
    /// What it is.
    pub kind: AttemptKind,
    /// 1 for the operation's first attempt ever; counts every call's attempts.
    pub number: u32,
    /// HTTP method.
    pub method: String,
    /// Request target.
    pub path: String,
    /// Headers to send, signature headers included (`Content-Type` is added
    /// for a non-empty body).
    pub headers: Vec<(&'static str, String)>,
    /// Body bytes (empty for a status query).
    pub body: Arc<[u8]>,
}

/// The record a driver must make durable-as-required before the next
/// attempt of the operation's own request can be sent; or, after the call
/// ended, the record taking back an attempt that the journal counted (by
/// an earlier `Persist`, or as [`super::Progress::first_recorded`]) but
/// the call never sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Persist {
    /// The number the attempt will carry (attempts so far, plus one): the
    /// journal records it and marks the operation in flight. When taking
    /// back an unsent attempt: the attempts actually made (0 for a first
    /// attempt), and the [`Step::End`] that follows stores the state
    /// (pending when nothing was ever sent).
    pub attempt: u32,
    /// No attempt of the operation was ever sent before: this record is the
    /// one that must be durable (fsync'd, committed) before anything leaves.
    pub first: bool,
}

/// What the caller must do next.
#[derive(Clone, Debug)]
pub enum Step {
    /// Record the coming attempt in the journal (see [`Persist`]), then
    /// confirm with [`super::Operation::persisted`]. Until confirmed, the
    /// machine asks for nothing else: no attempt of the operation leaves
    /// before its record, and no end is given before a recorded but unsent
    /// first attempt is taken back.
    Persist(Persist),
    /// Send this attempt, then report with [`super::Operation::handle`].
    Send(Attempt),
    /// Sleep this long, then poll again.
    Wait(Duration),
    /// The call is over.
    End(End),
}

impl Step {
    /// The step's kind.
    pub fn kind(&self) -> StepKind {
        match self {
            Step::Persist(_) => StepKind::Persist,
            Step::Send(_) => StepKind::Send,
            Step::Wait(_) => StepKind::Wait,
            Step::End(_) => StepKind::End,
        }
    }
}

/// The machine's reaction to one attempt, for events and logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reaction {
    /// What comes next.
    pub next: NextAction,
    /// The wait before the next attempt, if any.
    pub wait: Option<Duration>,
    /// The HTTP status, if a response came.
    pub status: Option<u16>,
    /// The response's error code, if any.
    pub error_code: Option<String>,
    /// Whether the operation may have taken effect, over every attempt so
    /// far.
    pub landed: crate::policy::Landed,
}
