//! What bounds one call, and what it starts from.

use std::sync::Arc;
use std::time::Duration;

use crate::error::Result;
use crate::policy::{ClockOffset, RetryBudget, RetryPolicy};

use super::state::OperationState;

/// The platform keeps idempotency keys at least this long (48 hours).
pub const PLATFORM_KEY_RETENTION_SECS: u64 = 48 * 3600;

/// The largest clock offset a client believes by default, in seconds.
pub const DEFAULT_MAX_CLOCK_OFFSET_SECS: u64 = 600;

/// Limits of one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallLimits {
    /// Attempts, backoff and deadline.
    pub policy: RetryPolicy,
    /// How long the platform keeps keys, in seconds: at most 48 hours (a
    /// client may only set it lower).
    pub key_retention_secs: u64,
    /// The largest clock offset believed from a platform's
    /// `timestamp_out_of_window` answer (which is not authenticated); a
    /// larger one ends the call instead of moving the clock.
    pub max_clock_offset: Duration,
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits {
            policy: RetryPolicy::default(),
            key_retention_secs: PLATFORM_KEY_RETENTION_SECS,
            max_clock_offset: Duration::from_secs(DEFAULT_MAX_CLOCK_OFFSET_SECS),
        }
    }
}

impl CallLimits {
    /// Checks the limits; the retention may not exceed 48 hours.
    pub fn check(&self) -> Result<()> {
        self.policy.check()?;
        if self.key_retention_secs > PLATFORM_KEY_RETENTION_SECS || self.key_retention_secs == 0 {
            return Err(crate::error::Error::invalid(
                "key_retention_secs",
                "must be 1..=172800 (48 hours)",
            ));
        }
        Ok(())
    }
}

/// Everything a call starts with besides the operation itself.
#[derive(Clone, Debug, Default)]
pub struct CallSetup {
    /// The call's limits.
    pub limits: CallLimits,
    /// The clock offset learnt so far (by earlier calls).
    pub clock: ClockOffset,
    /// Whether clock answers may be believed at all on this connection:
    /// `false` over plain http to a host that is not loopback, where anyone
    /// on the path could move the clock.
    pub clock_trusted: bool,
    /// The retry budget shared with other calls; `None` for no budget. A
    /// retry after a backoff spends from it, and the call gives up when it
    /// is empty; a success refunds.
    pub budget: Option<Arc<RetryBudget>>,
}

/// What the journal knows of an operation when a call starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Where it stands.
    pub state: OperationState,
    /// Attempts over every earlier call.
    pub attempts: u32,
    /// Unix seconds when it was first prepared (the key's age counts from
    /// here).
    pub created_at: u64,
}
