//! Answers the mock gives: status, JSON body and headers.

use serde_json::json;

/// One HTTP answer, before it is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
    /// Headers besides `Content-Type: application/json` and `Date`.
    pub(crate) headers: Vec<(&'static str, String)>,
    /// The error code of an error answer, for the stats.
    pub(crate) code: Option<String>,
}

impl Answer {
    /// A JSON answer.
    pub(crate) fn json(status: u16, value: &serde_json::Value) -> Answer {
        Answer {
            status,
            body: serde_json::to_vec(value).unwrap_or_default(),
            headers: Vec::new(),
            code: None,
        }
    }

    /// An error answer with the protocol's body `{"error":{"code","message"}}`.
    pub(crate) fn error(status: u16, code: &str, message: impl Into<String>) -> Answer {
        let value = json!({"error": {"code": code, "message": message.into()}});
        Answer {
            code: Some(code.to_owned()),
            ..Answer::json(status, &value)
        }
    }

    /// A 400 `invalid_request` naming the offending field.
    pub(crate) fn invalid(field: &str, message: impl Into<String>) -> Answer {
        let value = json!({"error": {"code": "invalid_request", "message": message.into(), "field": field}});
        Answer {
            code: Some("invalid_request".to_owned()),
            ..Answer::json(400, &value)
        }
    }

    /// The answer for a payidem error (a verification failure or an invalid
    /// field), with the status the protocol assigns to its code.
    pub(crate) fn from_payidem(err: &payidem::Error) -> Answer {
        if let Some(field) = err.field() {
            return Answer::invalid(field, err.message());
        }
        let status = err.http_status().unwrap_or(500);
        Answer::error(status, err.code().as_str(), err.message())
    }

    /// Adds a header.
    pub(crate) fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Answer {
        self.headers.push((name, value.into()));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies() {
        let a = Answer::error(404, "not_found", "no such payment");
        assert_eq!(
            a.body,
            br#"{"error":{"code":"not_found","message":"no such payment"}}"#
        );
        let a = Answer::from_payidem(&payidem::Error::invalid("order_id", "bad"));
        assert_eq!(a.status, 400);
        let v: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
        assert_eq!(v["error"]["field"], "order_id");
        let e = payidem::Error::new(payidem::ErrorCode::NonceReused, "again");
        assert_eq!(Answer::from_payidem(&e).status, 409);
    }
}
