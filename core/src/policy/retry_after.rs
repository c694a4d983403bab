//! `Retry-After` (RFC 9110 section 10.2.3).

use std::time::UNIX_EPOCH;

/// Seconds to wait from `now_unix` for a `Retry-After` value: delta-seconds,
/// or an HTTP date (a date in the past is 0). Anything else is `None` and is
/// to be ignored.
pub fn parse_retry_after(value: &str, now_unix: u64) -> Option<u64> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return Some(value.parse::<u64>().unwrap_or(u64::MAX));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    let when = when.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(when.saturating_sub(now_unix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_dates_and_garbage() {
        assert_eq!(parse_retry_after("3", 0), Some(3));
        assert_eq!(parse_retry_after(" 0 ", 0), Some(0));
        assert_eq!(
            parse_retry_after("99999999999999999999999", 0),
            Some(u64::MAX)
        );
        // 1994-11-06 08:49:37 UTC is 784111777.
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_770),
            Some(7)
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_999),
            Some(0)
        );
        for garbage in ["", "-1", "1.5", "soon", "Sun, 06 Nov 1994", "3 s"] {
            assert_eq!(parse_retry_after(garbage, 0), None, "{garbage:?}");
        }
    }
}
