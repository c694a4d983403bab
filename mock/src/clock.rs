//! The server's clock: real time plus a skew, or a fixed instant for tests.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// How the server tells time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockSetting {
    /// Real time shifted by this many seconds (may be negative).
    System {
        /// Seconds added to real time.
        skew_seconds: i64,
    },
    /// Always this Unix second (tests).
    Fixed(u64),
}

impl Default for ClockSetting {
    fn default() -> Self {
        ClockSetting::System { skew_seconds: 0 }
    }
}

/// A clock shared by all worker threads and adjustable while they run.
#[derive(Debug)]
pub(crate) struct ServerClock {
    fixed: AtomicBool,
    fixed_at: AtomicU64,
    skew: AtomicI64,
}

fn real_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl ServerClock {
    pub(crate) fn new(setting: ClockSetting) -> ServerClock {
        let clock = ServerClock {
            fixed: AtomicBool::new(false),
            fixed_at: AtomicU64::new(0),
            skew: AtomicI64::new(0),
        };
        clock.set(setting);
        clock
    }

    pub(crate) fn set(&self, setting: ClockSetting) {
        match setting {
            ClockSetting::System { skew_seconds } => {
                self.skew.store(skew_seconds, Ordering::SeqCst);
                self.fixed.store(false, Ordering::SeqCst);
            }
            ClockSetting::Fixed(at) => {
                self.fixed_at.store(at, Ordering::SeqCst);
                self.fixed.store(true, Ordering::SeqCst);
            }
        }
    }

    /// Changes the skew and returns to real time.
    pub(crate) fn set_skew(&self, skew_seconds: i64) {
        self.set(ClockSetting::System { skew_seconds });
    }

    pub(crate) fn setting(&self) -> ClockSetting {
        if self.fixed.load(Ordering::SeqCst) {
            ClockSetting::Fixed(self.fixed_at.load(Ordering::SeqCst))
        } else {
            ClockSetting::System {
                skew_seconds: self.skew.load(Ordering::SeqCst),
            }
        }
    }

    /// Unix seconds on the server's clock (saturating at 0 and `u64::MAX`).
    pub(crate) fn now(&self) -> u64 {
        match self.setting() {
            ClockSetting::Fixed(at) => at,
            ClockSetting::System { skew_seconds } => real_now().saturating_add_signed(skew_seconds),
        }
    }

    /// The server's clock as an HTTP date.
    pub(crate) fn http_date(&self) -> String {
        let secs = self.now().min(253_402_300_799); // 9999-12-31T23:59:59Z, the last HTTP date
        httpdate::fmt_http_date(UNIX_EPOCH + std::time::Duration::from_secs(secs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skew_and_fixed() {
        let c = ServerClock::new(ClockSetting::Fixed(1_000));
        assert_eq!(c.now(), 1_000);
        assert_eq!(c.http_date(), "Thu, 01 Jan 1970 00:16:40 GMT");
        c.set_skew(-100);
        let now = c.now();
        assert!(now.abs_diff(real_now()) <= 101 && now < real_now());
        c.set(ClockSetting::System {
            skew_seconds: i64::MIN,
        });
        assert_eq!(c.now(), 0);
        c.set(ClockSetting::Fixed(u64::MAX));
        assert!(c.http_date().starts_with("Fri, 31 Dec 9999"));
    }
}
