//! The offset between the local clock and the platform's.

use std::time::UNIX_EPOCH;

use crate::protocol::headers;

/// How far the platform's clock is ahead of ours (negative: behind), in
/// whole seconds. Later attempts sign `local_now + offset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ClockOffset(i64);

impl ClockOffset {
    /// No offset.
    pub const ZERO: ClockOffset = ClockOffset(0);

    /// An offset of `seconds`.
    pub fn from_seconds(seconds: i64) -> ClockOffset {
        ClockOffset(seconds)
    }

    /// The offset that maps `local_now` onto `server_time`.
    pub fn between(server_time: u64, local_now: u64) -> ClockOffset {
        let diff = i128::from(server_time) - i128::from(local_now);
        ClockOffset(diff.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
    }

    /// The offset in seconds.
    pub fn seconds(self) -> i64 {
        self.0
    }

    /// Whether the offset is at most `bound` either way. A client only
    /// believes an unauthenticated clock answer within such a bound.
    pub fn within(self, bound: std::time::Duration) -> bool {
        self.0.unsigned_abs() <= bound.as_secs()
    }

    /// `local_now` moved by the offset, saturating at 0 and `u64::MAX`.
    pub fn apply(self, local_now: u64) -> u64 {
        local_now.saturating_add_signed(self.0)
    }
}

/// The server's clock from a response's headers: `X-Server-Time` (decimal
/// Unix seconds) when valid, else `Date` (an HTTP date), else `None`.
pub fn server_time_from_headers<N: AsRef<str>, V: AsRef<str>>(
    response_headers: &[(N, V)],
) -> Option<u64> {
    let explicit = headers::find(response_headers, headers::SERVER_TIME)
        .and_then(|v| crate::protocol::fields::parse_timestamp(v.trim()).ok());
    explicit.or_else(|| {
        let date = headers::find(response_headers, headers::DATE)?;
        let when = httpdate::parse_http_date(date.trim()).ok()?;
        Some(when.duration_since(UNIX_EPOCH).ok()?.as_secs())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_applies_both_ways_and_saturates() {
        let ahead = ClockOffset::between(1_000, 900);
        assert_eq!(ahead.seconds(), 100);
        assert_eq!(ahead.apply(900), 1_000);
        let behind = ClockOffset::between(900, 1_000);
        assert_eq!(behind.apply(50), 0);
        assert_eq!(ClockOffset::between(u64::MAX, 0).seconds(), i64::MAX);
        assert_eq!(
            ClockOffset::from_seconds(i64::MAX).apply(u64::MAX),
            u64::MAX
        );
    }

    #[test]
    fn offsets_are_checked_against_a_bound_both_ways() {
        let bound = std::time::Duration::from_secs(600);
        assert!(ClockOffset::from_seconds(600).within(bound));
        assert!(ClockOffset::from_seconds(-600).within(bound));
        assert!(!ClockOffset::from_seconds(601).within(bound));
        assert!(!ClockOffset::from_seconds(i64::MIN).within(bound));
        assert!(!ClockOffset::from_seconds(1).within(std::time::Duration::ZERO));
    }

    #[test]
    fn server_time_prefers_x_server_time_then_date() {
        let both = [
            ("x-server-time", "1767226000"),
            ("Date", "Sun, 06 Nov 1994 08:49:37 GMT"),
        ];
        assert_eq!(server_time_from_headers(&both), Some(1_767_226_000));
        let date_only = [("date", "Sun, 06 Nov 1994 08:49:37 GMT")];
        assert_eq!(server_time_from_headers(&date_only), Some(784_111_777));
        let broken = [("X-Server-Time", "-5"), ("Date", "yesterday")];
        assert_eq!(server_time_from_headers(&broken), None);
    }
}
