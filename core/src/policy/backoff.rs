//! Full-jitter exponential backoff with attempt and deadline limits.

use std::time::Duration;

use crate::error::{Error, Result};

/// Limits of one call's retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryPolicy {
    /// The first backoff's ceiling; it doubles with every retry.
    pub base: Duration,
    /// The largest backoff, and the largest `Retry-After` honoured.
    pub cap: Duration,
    /// Most attempts in one call, the first included (at least 1).
    pub max_attempts: u32,
    /// Longest one call may take; no wait is started that would end past it.
    pub deadline: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            base: Duration::from_millis(200),
            cap: Duration::from_secs(10),
            max_attempts: 8,
            deadline: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// Checks the limits: at least one attempt, a base no larger than the cap.
    pub fn check(&self) -> Result<()> {
        if self.max_attempts == 0 {
            return Err(Error::invalid("max_attempts", "must be at least 1"));
        }
        if self.base > self.cap {
            return Err(Error::invalid(
                "backoff_base",
                "must not exceed backoff_cap",
            ));
        }
        if self.deadline.is_zero() {
            return Err(Error::invalid("deadline", "must be longer than zero"));
        }
        Ok(())
    }

    /// The ceiling of the backoff after `retry` retries (0 for the first
    /// retry): `min(cap, base * 2^retry)`.
    pub fn ceiling(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }

    /// A full-jitter wait, uniform in `[0, ceiling(retry)]`, from the 64
    /// random bits `random`.
    pub fn jittered(&self, retry: u32, random: u64) -> Duration {
        let ceiling = self.ceiling(retry).as_nanos();
        let nanos = u128::from(random) % (ceiling + 1);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// Whether a wait of `wait` started after `elapsed` would still end
    /// inside the deadline.
    pub fn fits_deadline(&self, elapsed: Duration, wait: Duration) -> bool {
        elapsed.saturating_add(wait) < self.deadline
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceiling_doubles_up_to_the_cap() {
        let p = RetryPolicy::default();
        assert_eq!(p.ceiling(0), Duration::from_millis(200));
        assert_eq!(p.ceiling(1), Duration::from_millis(400));
        assert_eq!(p.ceiling(5), Duration::from_millis(6400));
        assert_eq!(p.ceiling(6), Duration::from_secs(10));
        assert_eq!(p.ceiling(u32::MAX), Duration::from_secs(10));
    }

    #[test]
    fn jitter_spans_zero_to_ceiling() {
        let p = RetryPolicy::default();
        assert_eq!(p.jittered(0, 0), Duration::ZERO);
        assert_eq!(p.jittered(0, 200_000_000), Duration::from_millis(200));
        assert_eq!(p.jittered(0, 200_000_001), Duration::ZERO);
    }

    #[test]
    fn limits_are_checked() {
        let bad = RetryPolicy {
            max_attempts: 0,
            ..Default::default()
        };
        assert_eq!(bad.check().unwrap_err().field(), Some("max_attempts"));
        let bad = RetryPolicy {
            base: Duration::from_secs(11),
            ..Default::default()
        };
        assert_eq!(bad.check().unwrap_err().field(), Some("backoff_base"));
    }
}
