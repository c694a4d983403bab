//! `Retry-After` (core/src/policy/retry_after.rs), the server clock headers
//! (policy/clock.rs) and the decision after an answer (policy/decision.rs)
//! on arbitrary header values: no panic; delta-seconds are read exactly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use payidem::policy::{
    decide, error_body, parse_retry_after, server_time_from_headers, Reply, Response,
};

fuzz_target!(
    |input: (&str, u64, u16, Option<&str>, Vec<(&str, &str)>, bool)| {
        let (value, now, status, code, mut headers, has_status_path) = input;
        let parsed = parse_retry_after(value, now);
        let t = value.trim();
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            assert_eq!(parsed, Some(t.parse::<u64>().unwrap_or(u64::MAX)));
        }
        let _ = server_time_from_headers(&headers);
        headers.push(("Retry-After", value));
        let headers = headers
            .into_iter()
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect();
        let result = Reply::Response(Response::new(status, headers, error_body(code)));
        let _ = decide(&result, has_status_path, now);
    }
);
