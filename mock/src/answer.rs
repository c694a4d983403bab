//! Answers the mock gives: status, JSON body and headers.

use payidem::protocol::refusal::{self, Refusal};
use serde_json::json;

/// One HTTP answer, before it is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
    /// Headers besides `Content-Type: application/json`, and besides `Date`
    /// unless the answer carries its own (the server's clock of a refusal).
    pub(crate) headers: Vec<(&'static str, String)>,
    /// The error code of an error answer, for the stats.
    pub(crate) code: Option<String>,
}

/// `GET /metrics`: the verifier's metrics (verdicts by code, replay-cache
/// fill) in the Prometheus text exposition format 0.0.4, unsigned and
/// open to every peer like `/_mock/ping`.
pub(crate) fn metrics(verifier: &payidem::verifier::Verifier) -> Answer {
    Answer {
        status: 200,
        body: verifier.metrics().to_prometheus().into_bytes(),
        headers: vec![(
            "Content-Type",
            "text/plain; version=0.0.4; charset=utf-8".into(),
        )],
        code: None,
    }
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

    /// The answer for a payidem error about a field of the request's payload
    /// (400 `invalid_request` naming it), with the status the protocol
    /// assigns to any other code. Verification failures are answered with
    /// [`Answer::refusal`] instead.
    pub(crate) fn from_payidem(err: &payidem::Error) -> Answer {
        if let Some(field) = err.field() {
            return Answer::invalid(field, err.message());
        }
        let status = err
            .http_status()
            .or(err.code().http_status())
            .unwrap_or(500);
        Answer::error(status, err.code().as_str(), err.message())
    }

    /// The core's refusal as it is (status, code, body and headers, the
    /// server's clock headers included): the one definition of what a
    /// platform answers to a request that failed verification, or whose
    /// framing or size is refused. `Content-Type` is left to the writer,
    /// which always sends the same one.
    pub(crate) fn refusal(refusal: &Refusal) -> Answer {
        Answer {
            status: refusal.status(),
            body: refusal.body().to_vec(),
            headers: refusal
                .headers()
                .iter()
                .filter(|(name, _)| !name.eq_ignore_ascii_case(refusal::CONTENT_TYPE))
                .cloned()
                .collect(),
            code: Some(refusal.code().to_owned()),
        }
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
    }

    #[test]
    fn a_refusal_is_answered_as_the_core_builds_it() {
        let e = payidem::Error::new(payidem::ErrorCode::TimestampOutOfWindow, "late")
            .with_server_time(1_000);
        let refusal = Refusal::for_error(&e);
        let a = Answer::refusal(&refusal);
        assert_eq!(a.status, 401);
        assert_eq!(a.body, refusal.body());
        assert_eq!(a.code.as_deref(), Some("timestamp_out_of_window"));
        assert_eq!(
            a.headers,
            [
                ("X-Server-Time", "1000".to_owned()),
                ("Date", "Thu, 01 Jan 1970 00:16:40 GMT".to_owned())
            ]
        );
    }
}
