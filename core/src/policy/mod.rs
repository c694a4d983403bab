//! Retry policy of protocol section 4 as pure functions: the decision after
//! one attempt, `Retry-After`, full-jitter backoff and the clock offset.

pub mod backoff;
pub mod clock;
pub mod decision;
pub mod retry_after;

pub use backoff::RetryPolicy;
pub use clock::{server_time_from_headers, ClockOffset};
pub use decision::{decide, AttemptResult, Decision, Failure};
pub use retry_after::parse_retry_after;
