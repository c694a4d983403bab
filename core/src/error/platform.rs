//! The platform's error code and message, read from the protocol's error
//! body `{"error": {"code": "...", "message": "..."}}` of an answer.

/// The longest platform code an error keeps, in characters.
pub const PLATFORM_CODE_MAX_CHARS: usize = 64;
/// The longest platform message an error keeps, in characters.
pub const PLATFORM_MESSAGE_MAX_CHARS: usize = 256;

/// The `error.code` and `error.message` of a JSON error body, exactly as the
/// platform sent them (`message` is `None` when absent or not a string).
pub(crate) fn parse(body: &[u8]) -> Option<(String, Option<String>)> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let error = value.get("error")?;
    let code = error.get("code")?.as_str()?.to_owned();
    let message = error
        .get("message")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned);
    Some((code, message))
}

/// The platform's error code and message from an answer's body, made safe to
/// print: platform text is untrusted, so each is cut to its bound
/// ([`PLATFORM_CODE_MAX_CHARS`], [`PLATFORM_MESSAGE_MAX_CHARS`], a cut ends
/// with `…`) and every control character is written as its Rust escape
/// (`\n`, `\u{1b}`), so neither can forge lines or terminal sequences in a
/// log. An ordinary code (`card_declined`) and message are kept unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlatformError {
    code: String,
    message: Option<String>,
}

impl PlatformError {
    /// The platform error of a documented error body; `None` for any other
    /// body (not JSON, no `error.code` string).
    pub fn from_body(body: &[u8]) -> Option<PlatformError> {
        let (code, message) = parse(body)?;
        Some(PlatformError {
            code: printable(&code, PLATFORM_CODE_MAX_CHARS),
            message: message.map(|m| printable(&m, PLATFORM_MESSAGE_MAX_CHARS)),
        })
    }

    /// The platform's code (e.g. `card_declined`), made printable.
    pub fn code(&self) -> &str {
        &self.code
    }

    /// The platform's message for people, made printable; `None` when the
    /// body had none.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }
}

impl std::fmt::Display for PlatformError {
    /// `code: message`, or the code alone when there is no message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.message {
            Some(message) => write!(f, "{}: {}", self.code, message),
            None => f.write_str(&self.code),
        }
    }
}

/// `text` with control characters escaped, cut to `max_chars` characters
/// of the original (a cut text ends with `…`).
fn printable(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == max_chars {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_error_keeps_code_and_message() {
        let p = PlatformError::from_body(
            br#"{"error":{"code":"card_declined","message":"Your card was declined"}}"#,
        )
        .unwrap();
        assert_eq!(p.code(), "card_declined");
        assert_eq!(p.message(), Some("Your card was declined"));
        assert_eq!(p.to_string(), "card_declined: Your card was declined");
        let bare = PlatformError::from_body(br#"{"error":{"code":"x","message":5}}"#).unwrap();
        assert_eq!((bare.code(), bare.message()), ("x", None));
        assert_eq!(bare.to_string(), "x");
        assert_eq!(
            PlatformError::from_body(br#"{"error":{"message":"m"}}"#),
            None
        );
        assert_eq!(PlatformError::from_body(b"declined"), None);
    }

    #[test]
    fn platform_text_is_bounded_and_escaped() {
        let body = serde_json::json!({"error": {
            "code": "bad\ncode\u{1b}[31m",
            "message": "é".repeat(PLATFORM_MESSAGE_MAX_CHARS + 10),
        }})
        .to_string();
        let p = PlatformError::from_body(body.as_bytes()).unwrap();
        assert_eq!(p.code(), "bad\\ncode\\u{1b}[31m");
        let message = p.message().unwrap();
        assert_eq!(message.chars().count(), PLATFORM_MESSAGE_MAX_CHARS + 1);
        assert!(message.ends_with("é…"));
        let long = serde_json::json!({"error": {"code": "c".repeat(1000)}}).to_string();
        let p = PlatformError::from_body(long.as_bytes()).unwrap();
        assert_eq!(p.code().chars().count(), PLATFORM_CODE_MAX_CHARS + 1);
        assert!(!p.to_string().chars().any(char::is_control));
    }
}
