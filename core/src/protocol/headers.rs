//! Header names of protocol v1.

use std::ffi::CStr;

/// Every header a signed attempt carries and the signer sets, in this
/// order (a request without an idempotency key carries the first four), as
/// static C strings: the one spelling of each, which the C ABI hands out
/// (`payidem_signed_header_name`) and the `&str` constants below read.
pub const SIGNED_C: [&CStr; 5] = [
    c"X-Api-Key",
    c"X-Timestamp",
    c"X-Nonce",
    c"X-Signature",
    c"Idempotency-Key",
];

const fn text(name: &'static CStr) -> &'static str {
    match std::str::from_utf8(name.to_bytes()) {
        Ok(text) => text,
        Err(_) => panic!("a header name is ASCII"),
    }
}

/// The key id that selects the secret.
pub const API_KEY: &str = text(SIGNED_C[0]);
/// Unix seconds of the attempt.
pub const TIMESTAMP: &str = text(SIGNED_C[1]);
/// The attempt's one-time UUID v4.
pub const NONCE: &str = text(SIGNED_C[2]);
/// HMAC-SHA256 of the canonical string, lower-case hex.
pub const SIGNATURE: &str = text(SIGNED_C[3]);
/// The operation's idempotency key; on every POST.
pub const IDEMPOTENCY_KEY: &str = text(SIGNED_C[4]);
/// [`SIGNED_C`] as text: a caller's own values of these headers are never
/// sent.
pub const SIGNED: [&str; 5] = [API_KEY, TIMESTAMP, NONCE, SIGNATURE, IDEMPOTENCY_KEY];
/// Set to `true` on a response the platform replayed from its store.
pub const IDEMPOTENT_REPLAYED: &str = "Idempotent-Replayed";
/// The server's clock in Unix seconds.
pub const SERVER_TIME: &str = "X-Server-Time";
/// The server's clock as an HTTP date.
pub const DATE: &str = "Date";
/// How long to wait before retrying (seconds or an HTTP date).
pub const RETRY_AFTER: &str = "Retry-After";

/// The value of the first header named `name` (ASCII case-insensitive) in
/// `headers`.
pub fn find<'a, N, V>(headers: &'a [(N, V)], name: &str) -> Option<&'a str>
where
    N: AsRef<str>,
    V: AsRef<str>,
{
    headers
        .iter()
        .find(|(n, _)| n.as_ref().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_ref())
}

/// Whether `headers` mark a response the platform replayed from its
/// idempotency store (`Idempotent-Replayed: true`, case-insensitive).
pub fn says_replayed<N, V>(headers: &[(N, V)]) -> bool
where
    N: AsRef<str>,
    V: AsRef<str>,
{
    find(headers, IDEMPOTENT_REPLAYED).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}
