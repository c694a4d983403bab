//! Retry policy of protocol section 4 as pure functions and values: the
//! decision after one attempt (operation or status query), `Retry-After`,
//! full-jitter backoff, the clock offset and the shared retry budget.

pub mod backoff;
pub mod budget;
pub mod clock;
pub mod decision;
pub mod error_body;
pub mod reply;
pub mod retry_after;

pub use backoff::RetryPolicy;
pub use budget::{RetryBudget, RetryBudgetConfig};
pub use clock::{server_time_from_headers, ClockOffset};
pub use decision::{
    decide, decide_status_query, landed_by_answer, Action, Decision, DecisionKind, Failure, Landed,
};
pub use error_body::{error_body, error_code_from_body};
pub use reply::{Reply, ReplyKind, Response};
pub use retry_after::parse_retry_after;
