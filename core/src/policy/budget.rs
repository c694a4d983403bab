//! A retry budget shared by every call of one client, in the manner of the
//! AWS SDKs' standard retry mode: retries spend tokens, successes refund
//! them, so an outage does not become a retry storm.

use std::sync::atomic::{AtomicU32, Ordering};

/// Settings of a [`RetryBudget`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryBudgetConfig {
    /// Tokens in a full bucket.
    pub capacity: u32,
    /// Tokens one retry after an error response costs.
    pub retry_cost: u32,
    /// Tokens one retry after a timeout or lost connection costs.
    pub timeout_cost: u32,
    /// Tokens a success without retries adds back.
    pub success_refund: u32,
}

impl Default for RetryBudgetConfig {
    fn default() -> Self {
        RetryBudgetConfig {
            capacity: 500,
            retry_cost: 5,
            timeout_cost: 10,
            success_refund: 1,
        }
    }
}

/// The shared token bucket.
#[derive(Debug)]
pub struct RetryBudget {
    config: RetryBudgetConfig,
    tokens: AtomicU32,
}

impl RetryBudget {
    /// A full bucket.
    pub fn new(config: RetryBudgetConfig) -> RetryBudget {
        RetryBudget {
            config,
            tokens: AtomicU32::new(config.capacity),
        }
    }

    /// The settings.
    pub fn config(&self) -> RetryBudgetConfig {
        self.config
    }

    /// Tokens left.
    pub fn available(&self) -> u32 {
        self.tokens.load(Ordering::Relaxed)
    }

    /// Takes `cost` tokens if that many are left; `false` (and nothing taken)
    /// otherwise.
    pub fn try_spend(&self, cost: u32) -> bool {
        self.tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| t.checked_sub(cost))
            .is_ok()
    }

    /// Gives back `amount` tokens, never above the capacity.
    pub fn refund(&self, amount: u32) {
        let cap = self.config.capacity;
        let _ = self
            .tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                Some(t.saturating_add(amount).min(cap))
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spends_refuses_and_refunds_within_capacity() {
        let b = RetryBudget::new(RetryBudgetConfig {
            capacity: 10,
            ..Default::default()
        });
        assert!(b.try_spend(5));
        assert!(b.try_spend(5));
        assert!(!b.try_spend(1));
        assert_eq!(b.available(), 0);
        b.refund(7);
        b.refund(7);
        assert_eq!(b.available(), 10);
    }
}
