//! The rules every error message keeps, and the record of the messages the
//! test suites produce.
//!
//! A message has no leading or trailing whitespace, no run of spaces outside
//! a quoted value (`"a  b"` is the caller's value, kept as written), no part
//! repeated right after itself (`cannot open the file: cannot open the
//! file: …`) and does not start with its own code (shown before it by
//! [`Error`](super::Error)'s `Display`). [`problem`] names the rule a message
//! breaks.
//!
//! In debug builds, when `PAYIDEM_ERROR_TEXT_LOG` names a file, every message
//! an error is given is appended to it, one line each: `ok` or the broken
//! rule, a tab, the message with its line breaks escaped. `make test-rust`
//! runs every Rust test suite so and then fails on any line that is not
//! `ok` (`scripts/check-error-texts.sh`). Release builds record nothing.
//! A binding that makes errors of its own (the C ABI's NULL arguments and
//! buffers too small) records them with [`record_named`], under the same
//! rules.

use super::ErrorCode;

/// The rule `message` (of an error with `code`) breaks, if any.
pub fn problem(code: ErrorCode, message: &str) -> Option<&'static str> {
    problem_named(code.as_str(), message)
}

/// The rule `message` breaks, if any, for an error whose code is named
/// `code`: a core [`ErrorCode`]'s name or a code only a binding has (the C
/// ABI's `buffer_too_small`).
pub fn problem_named(code: &str, message: &str) -> Option<&'static str> {
    if message.is_empty() {
        return Some("empty message");
    }
    if message.trim() != message {
        return Some("leading or trailing whitespace");
    }
    if has_unquoted_space_run(message) {
        return Some("run of spaces");
    }
    if message
        .strip_prefix(code)
        .is_some_and(|rest| rest.starts_with(": "))
    {
        return Some("starts with its own code");
    }
    let parts: Vec<&str> = message.split(": ").collect();
    if parts.windows(2).any(|w| !w[0].is_empty() && w[0] == w[1]) {
        return Some("repeated part");
    }
    None
}

/// Whether two spaces (or a space next to a tab or line break) follow each
/// other outside a `"…"` value (with `\"` escapes inside it).
fn has_unquoted_space_run(message: &str) -> bool {
    let (mut quoted, mut escaped, mut blank_before) = (false, false, false);
    for c in message.chars() {
        if quoted {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => quoted = false,
                _ => {}
            }
            blank_before = false;
            continue;
        }
        let blank = c == ' ' || c == '\t' || c == '\n';
        if blank && blank_before {
            return true;
        }
        blank_before = blank;
        quoted = c == '"';
    }
    false
}

/// Appends `message` and its verdict to the file `PAYIDEM_ERROR_TEXT_LOG`
/// names (debug builds; nothing when it is unset).
pub(super) fn record(code: ErrorCode, message: &str) {
    record_named(code.as_str(), message);
}

/// Records the `message` of an error a binding makes itself, under the
/// stable name of its code (`invalid_argument`, the C ABI's
/// `buffer_too_small`): the same log, line format and rules as the core's
/// own errors (debug builds; nothing when `PAYIDEM_ERROR_TEXT_LOG` is unset).
#[cfg(debug_assertions)]
pub fn record_named(code: &str, message: &str) {
    use std::io::Write;
    use std::sync::{Mutex, OnceLock};
    static LOG: OnceLock<Option<Mutex<std::fs::File>>> = OnceLock::new();
    let log = LOG.get_or_init(|| {
        let path = std::env::var_os("PAYIDEM_ERROR_TEXT_LOG")?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()?;
        Some(Mutex::new(file))
    });
    if let Some(file) = log {
        let verdict = problem_named(code, message).unwrap_or("ok");
        let line = format!(
            "{verdict}\t{code}: {}\n",
            message.replace('\\', "\\\\").replace('\n', "\\n")
        );
        let mut file = file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // One write per line: lines of processes appending at once never mix.
        let _ = file.write_all(line.as_bytes());
    }
}

/// Release builds record nothing.
#[cfg(not(debug_assertions))]
pub fn record_named(_code: &str, _message: &str) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_is_caught() {
        let j = ErrorCode::Journal;
        assert_eq!(problem(j, "journal x: cannot read it"), None);
        assert_eq!(problem(j, ""), Some("empty message"));
        assert_eq!(problem(j, " x"), Some("leading or trailing whitespace"));
        assert_eq!(problem(j, "x\n"), Some("leading or trailing whitespace"));
        assert_eq!(problem(j, "so  another"), Some("run of spaces"));
        assert_eq!(problem(j, "so \n another"), Some("run of spaces"));
        assert_eq!(problem(j, "order id \"a  b\" is bad"), None);
        assert_eq!(problem(j, "order id \"a\\\"  b\" is bad"), None);
        assert_eq!(problem(j, "order id \"a\" is  bad"), Some("run of spaces"));
        assert_eq!(
            problem(j, "journal_error: cannot read"),
            Some("starts with its own code")
        );
        assert_eq!(
            problem(
                j,
                "journal f: cannot open the file: cannot open the file: missing"
            ),
            Some("repeated part")
        );
        assert_eq!(problem(j, "a: b: a: b"), None);
        assert_eq!(
            problem_named("buffer_too_small", "buffer_too_small: buf: x"),
            Some("starts with its own code")
        );
        assert_eq!(
            problem_named("buffer_too_small", "buf: needs 4 bytes"),
            None
        );
    }
}
