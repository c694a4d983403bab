//! The clock offset a client learnt from a platform, kept in the journal
//! between processes: which platform it belongs to and when a stored one
//! is still worth starting with.

use std::time::Duration;

use super::{Journal, StoredClockOffset, MAX_STORED_CLOCK_OFFSET_AGE_SECS};

/// The platform a clock offset belongs to: `scheme://host:port` of an
/// origin (`scheme://authority`), with the scheme's default port (443 for
/// https, 80 for http) when the origin names none.
pub fn platform_origin(origin: &str) -> String {
    let origin = origin.trim_end_matches('/');
    let Some((scheme, authority)) = origin.split_once("://") else {
        return origin.to_owned();
    };
    let authority = authority.split('/').next().unwrap_or(authority);
    // A port follows the last ':' outside an IPv6 literal's brackets.
    let host_end = authority.rfind(']').map_or(0, |i| i + 1);
    if authority[host_end..].contains(':') {
        return format!("{scheme}://{authority}");
    }
    let port = if scheme.eq_ignore_ascii_case("https") {
        443
    } else {
        80
    };
    format!("{scheme}://{authority}:{port}")
}

/// The offset to start with from what `journal` keeps for `platform`:
/// the stored one when it was measured at most
/// [`MAX_STORED_CLOCK_OFFSET_AGE_SECS`] before `now` (and not in the
/// future) and is within `max_offset`; otherwise (or when the journal
/// cannot be read: the offset is an optimisation) `None`.
pub fn usable_stored_offset(
    journal: &dyn Journal,
    platform: &str,
    now: u64,
    max_offset: Duration,
) -> Option<StoredClockOffset> {
    let stored = journal.clock_offset(platform).ok()??;
    let fresh =
        stored.measured_at <= now && now - stored.measured_at <= MAX_STORED_CLOCK_OFFSET_AGE_SECS;
    let trusted = stored.offset_secs.unsigned_abs() <= max_offset.as_secs();
    (fresh && trusted).then_some(stored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::MemoryJournal;

    #[test]
    fn origins_get_their_default_port() {
        assert_eq!(
            platform_origin("https://api.example.com"),
            "https://api.example.com:443"
        );
        assert_eq!(
            platform_origin("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(platform_origin("http://[::1]"), "http://[::1]:80");
        assert_eq!(platform_origin("http://[::1]:9000/"), "http://[::1]:9000");
    }

    #[test]
    fn only_fresh_offsets_within_the_bound_are_used() {
        let j = MemoryJournal::new();
        let p = "https://a:443";
        let max = Duration::from_secs(600);
        assert!(usable_stored_offset(&j, p, 1_000_000, max).is_none());
        let save = |offset_secs, measured_at| {
            j.save_clock_offset(&StoredClockOffset {
                platform: p.into(),
                offset_secs,
                measured_at,
            })
            .unwrap()
        };
        save(-400, 1_000_000 - MAX_STORED_CLOCK_OFFSET_AGE_SECS);
        assert_eq!(
            usable_stored_offset(&j, p, 1_000_000, max).map(|o| o.offset_secs),
            Some(-400)
        );
        assert!(
            usable_stored_offset(&j, p, 1_000_001, max).is_none(),
            "too old"
        );
        save(-400, 1_000_000);
        assert!(
            usable_stored_offset(&j, p, 999_000, max).is_none(),
            "from the future"
        );
        save(601, 1_000_000);
        assert!(
            usable_stored_offset(&j, p, 1_000_000, max).is_none(),
            "beyond the bound"
        );
        assert!(usable_stored_offset(&j, "https://b:443", 1_000_000, max).is_none());
    }
}
