//! Retry policy of protocol section 4 as pure functions: the decision after
//! one attempt, `Retry-After`, full-jitter backoff and the clock offset.

pub mod backoff;
pub mod clock;
pub mod decision;
pub mod error_body;
pub mod retry_after;

pub use backoff::RetryPolicy;
pub use clock::{server_time_from_headers, ClockOffset};
pub use decision::{answered_before_the_operation, decide, AttemptResult, Decision, Failure};
pub use error_body::error_code_from_body;
pub use retry_after::parse_retry_after;
