//! One business operation driven to its end: a sans-I/O state machine,
//! the only place where a protocol rule about operations is applied. The
//! caller records what it is told to record, sends what it is told to send,
//! sleeps when told to wait, and reports what happened; time and randomness
//! come in as inputs. Journals store the types defined here.

mod end;
mod limits;
mod machine;
mod spec;
mod state;
mod step;
#[cfg(test)]
mod tests;

pub use crate::policy::{Reply, ReplyKind, Response};
pub use end::{End, EndKind, EndMeaning, Outcome};
pub use limits::{
    CallLimits, CallSetup, Progress, DEFAULT_MAX_CLOCK_OFFSET_SECS, PLATFORM_KEY_RETENTION_SECS,
};
pub use machine::Operation;
pub use spec::{FrozenOperation, OperationSpec};
pub use state::OperationState;
pub use step::{
    Attempt, AttemptKind, CallTime, Entropy, NextAction, OsEntropy, Persist, Reaction, Step,
    StepKind,
};
