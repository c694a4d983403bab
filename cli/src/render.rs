//! How records look: the stable JSON shapes and the text lines of
//! docs/cli.md.

use base64::Engine;
use payidem::journal::{OperationRecord, Reconciliation};
use payidem::operation::PLATFORM_KEY_RETENTION_SECS;
use serde_json::{json, Value};

/// Whether the operation may have happened and its key is older than the
/// platform's retention: resuming it can no longer POST it again.
pub fn key_expired(record: &OperationRecord, now: u64) -> bool {
    record.state.is_unresolved()
        && now.saturating_sub(record.created_at) > PLATFORM_KEY_RETENTION_SECS
}

/// Seconds since the operation was first prepared.
pub fn age(record: &OperationRecord, now: u64) -> u64 {
    now.saturating_sub(record.created_at)
}

fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// An operation as `list`, `show` and `export` print it in JSON.
/// `body`: also the request body (base64) and the response's headers and
/// body (base64).
pub fn record_json(record: &OperationRecord, now: u64, body: bool) -> Value {
    let op = &record.operation;
    let mut value = json!({
        "order_id": op.order_id,
        "idempotency_key": op.idempotency_key,
        "state": record.state.as_str(),
        "settled": record.state.is_settled(),
        "attempts": record.attempts,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "age_seconds": age(record, now),
        "key_expired": key_expired(record, now),
        "method": op.method,
        "path": op.path,
        "status_path": op.status_path,
        "body_sha256": op.body_sha256,
        "body_bytes": op.body.len(),
        "response": record.response.as_ref().map(|r| {
            let mut response = json!({"status": r.status, "replayed": r.replayed});
            if body {
                response["headers"] = json!(r.headers);
                response["body_base64"] = json!(base64(&r.body));
            }
            response
        }),
    });
    if body {
        value["body_base64"] = json!(base64(&op.body));
    }
    value
}

/// A reconciliation in JSON.
pub fn reconciliation_json(r: &Reconciliation) -> Value {
    json!({
        "order_id": r.order_id,
        "idempotency_key": r.idempotency_key,
        "previous_state": r.previous_state.as_str(),
        "state": r.state.as_str(),
        "by": r.by,
        "at": r.at,
        "reference": r.reference,
    })
}

/// A Unix time as `2024-05-01T12:00:00Z` (UTC).
pub fn utc(t: u64) -> String {
    let days = t / 86_400;
    let secs = t % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// An age as `3d4h`, `2h5m`, `5m3s` or `42s`.
pub fn span(secs: u64) -> String {
    let (d, h, m, s) = (
        secs / 86_400,
        secs % 86_400 / 3600,
        secs % 3600 / 60,
        secs % 60,
    );
    if d > 0 {
        format!("{d}d{h}h")
    } else if h > 0 {
        format!("{h}h{m}m")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

/// One line of `journal list`.
pub fn list_line(record: &OperationRecord, now: u64) -> String {
    let op = &record.operation;
    let expired = if key_expired(record, now) {
        "  KEY EXPIRED"
    } else {
        ""
    };
    format!(
        "{:<10} {:<24} {:>8} {:>3}  {} {}  key={}{expired}\n",
        record.state.as_str(),
        field(&op.order_id),
        span(age(record, now)),
        record.attempts,
        field(&op.method),
        field(&op.path),
        field(&op.idempotency_key),
    )
}

/// The text of `journal show`.
pub fn show_text(
    record: &OperationRecord,
    reconciliations: &[Reconciliation],
    now: u64,
    body: bool,
) -> String {
    let op = &record.operation;
    let mut t = String::new();
    // Every value, row data or not, is printed through `field`.
    let mut line = |name: &str, value: &str| {
        t.push_str(&format!("{name:<16}{}\n", field(value)));
    };
    line("order id", &op.order_id);
    line("state", record.state.as_str());
    line("idempotency key", &op.idempotency_key);
    line("attempts", &record.attempts.to_string());
    line(
        "created",
        &format!(
            "{} ({} ago)",
            utc(record.created_at),
            span(age(record, now))
        ),
    );
    line("updated", &utc(record.updated_at));
    if key_expired(record, now) {
        line(
            "key expired",
            "yes: older than the platform's 48 h retention; it is never POSTed again \
             (check the platform, then `payidem journal reconcile`)",
        );
    }
    line("method", &op.method);
    line("path", &op.path);
    line("status path", op.status_path.as_deref().unwrap_or("-"));
    line(
        "body sha256",
        &format!("{} ({} bytes)", op.body_sha256, op.body.len()),
    );
    match &record.response {
        Some(r) => line(
            "response",
            &format!(
                "HTTP {}{}",
                r.status,
                if r.replayed { " (replayed)" } else { "" }
            ),
        ),
        None => line("response", "-"),
    }
    for r in reconciliations {
        line(
            "reconciled",
            &format!(
                "{} -> {} by {} at {}: {}",
                r.previous_state.as_str(),
                r.state.as_str(),
                r.by,
                utc(r.at),
                r.reference
            ),
        );
    }
    if body {
        t.push_str("body:\n");
        t.push_str(&printable(&op.body));
        t.push('\n');
    }
    t
}

/// Whether a terminal could act on `c` instead of showing it: a control
/// character (C0, DEL, C1: an escape sequence repaints the operator's
/// screen), a line or paragraph separator (U+2028, U+2029), or a bidi
/// control (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069: it
/// reorders what follows, so `ord-1` may read as another id).
pub fn unsafe_for_terminal(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}'
                | '\u{2029}'
                | '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every character [`unsafe_for_terminal`] except those in
/// `keep` written as its escape (`\u{1b}`).
fn escape_except(text: &str, keep: &[char]) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if unsafe_for_terminal(c) && !keep.contains(&c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// A field of human output (an order id, a key, a path, a reference, a
/// message, a journal name) as a terminal shows it, one line: every
/// character [`unsafe_for_terminal`], newline and tab included, escaped
/// (`\u{1b}`). Every field `payidem` prints as text goes through it; JSON
/// output goes through [`crate::out_json`] instead.
pub fn field(text: &str) -> String {
    escape_except(text, &[])
}

/// `bytes` as text a terminal shows as it is: invalid UTF-8 replaced,
/// every character [`unsafe_for_terminal`] other than newline and tab
/// escaped (`\u{1b}`), as [`field`] does.
pub fn printable(bytes: &[u8]) -> String {
    escape_except(&String::from_utf8_lossy(bytes), &['\n', '\t'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_714_564_800), "2024-05-01T12:00:00Z");
        assert_eq!(utc(4_102_444_799), "2099-12-31T23:59:59Z");
    }

    #[test]
    fn bodies_cannot_drive_the_terminal() {
        assert_eq!(
            printable(b"a\x1b[2Jb\n\tc\xff"),
            "a\\u{1b}[2Jb\n\tc\u{fffd}"
        );
        assert_eq!(
            printable("x\u{9b}2J\u{202e}y\u{2028}".as_bytes()),
            "x\\u{9b}2J\\u{202e}y\\u{2028}"
        );
    }

    #[test]
    fn fields_escape_every_character_a_terminal_acts_on() {
        let unsafe_chars = [
            '\0', '\n', '\r', '\t', '\x1b', '\x7f', '\u{80}', '\u{9b}', '\u{9f}', '\u{61c}',
            '\u{200e}', '\u{200f}', '\u{2028}', '\u{2029}', '\u{202a}', '\u{202e}', '\u{2066}',
            '\u{2069}',
        ];
        for c in unsafe_chars {
            let shown = field(&format!("a{c}b"));
            assert_eq!(shown, format!("a{}b", c.escape_unicode()), "{c:?}");
            assert!(!shown.contains(c), "{c:?}");
        }
        // Printable text, accents and other scripts stay as they are.
        for text in [
            "ord-1",
            "café ü 注文",
            "a\\u{1b}b",
            "\u{a0}\u{2030}\u{202f}",
        ] {
            assert_eq!(field(text), text);
        }
    }

    #[test]
    fn spans() {
        assert_eq!(span(42), "42s");
        assert_eq!(span(303), "5m3s");
        assert_eq!(span(7500), "2h5m");
        assert_eq!(span(49 * 3600), "2d1h");
    }
}
