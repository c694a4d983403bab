//! One business operation driven to a settled outcome: a sans-I/O state
//! machine. The caller sends what it is told to send, sleeps when told to
//! wait, and reports what happened; time and randomness come in as inputs.

mod machine;
mod outcome;
mod spec;

pub use machine::{
    Attempt, AttemptKind, CallLimits, CallTime, Entropy, NextAction, Operation, OsEntropy,
    Reaction, Reply, Step, PLATFORM_KEY_RETENTION_SECS,
};
pub use outcome::{Outcome, Settlement};
pub use spec::OperationSpec;
