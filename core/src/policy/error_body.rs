//! The protocol's error body: `{"error": {"code": "...", "message": "..."}}`,
//! parsed once by [`crate::error::platform`], for the decisions
//! ([`error_code_from_body`]) as for the errors people read.

use crate::error::platform::parse;

/// The `error.code` of a JSON error body, if the body is one, exactly as
/// sent: what the decisions compare with the protocol's codes.
pub fn error_code_from_body(body: &[u8]) -> Option<String> {
    parse(body).map(|(code, _)| code)
}

/// The protocol's error body carrying `code` (`{"error":{"code":...}}`),
/// for a caller that knows an answer's error code but not its body; an
/// empty body for `None`. [`error_code_from_body`] reads `code` back.
pub fn error_body(code: Option<&str>) -> Vec<u8> {
    code.map_or_else(Vec::new, |code| {
        serde_json::json!({ "error": { "code": code } })
            .to_string()
            .into_bytes()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_code_or_nothing() {
        assert_eq!(
            error_code_from_body(br#"{"error":{"code":"nonce_reused","message":"x"}}"#).as_deref(),
            Some("nonce_reused")
        );
        assert_eq!(error_code_from_body(br#"{"error":{"code":7}}"#), None);
        assert_eq!(error_code_from_body(b"<html>"), None);
        assert_eq!(error_code_from_body(b""), None);
        for code in ["nonce_reused", "a \"quoted\" \\ code", ""] {
            assert_eq!(
                error_code_from_body(&error_body(Some(code))).as_deref(),
                Some(code)
            );
        }
        assert_eq!(error_body(None), b"");
    }
}
