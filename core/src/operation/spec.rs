//! What a caller asks for: one business operation.

use crate::error::Result;
use crate::protocol::{body_sha256_hex, fields, FrozenRequest};

/// One business operation as the caller describes it. Checked by
/// [`OperationSpec::freeze`]; nothing is journaled or sent before that
/// succeeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperationSpec<'a> {
    /// The business operation's id: 1..=128 of `[A-Za-z0-9._:-]`.
    pub order_id: &'a str,
    /// The HTTP method (upper case), usually `POST`.
    pub method: &'a str,
    /// The request target, e.g. `/v1/payments`.
    pub path: &'a str,
    /// The exact body bytes; frozen with the operation.
    pub body: &'a [u8],
    /// An explicit idempotency key; `None` means `create-{order_id}`.
    pub idempotency_key: Option<&'a str>,
    /// Where the operation's status can be queried with a signed GET, e.g.
    /// `/v1/payments?order_id=...`; `None` when there is no such place.
    pub status_path: Option<&'a str>,
}

impl OperationSpec<'_> {
    /// Checks every field and freezes the operation: the key (explicit or
    /// `create-{order_id}`), the body and its SHA-256. An invalid field is an
    /// `invalid_argument` error naming it.
    pub fn freeze(&self) -> Result<FrozenOperation> {
        fields::check_order_id(self.order_id)?;
        let key = match self.idempotency_key {
            Some(key) => {
                fields::check_idempotency_key(key)?;
                key.to_owned()
            }
            None => fields::default_idempotency_key(self.order_id)?,
        };
        FrozenRequest::new(self.method, self.path, &key, &[])?;
        if let Some(status_path) = self.status_path {
            fields::check_path(status_path).map_err(|e| {
                crate::error::Error::invalid(
                    "status_path",
                    e.message().trim_start_matches("path: "),
                )
            })?;
        }
        Ok(FrozenOperation {
            order_id: self.order_id.to_owned(),
            idempotency_key: key,
            method: self.method.to_owned(),
            path: self.path.to_owned(),
            body: self.body.to_vec(),
            body_sha256: body_sha256_hex(self.body),
            status_path: self.status_path.map(str::to_owned),
        })
    }
}

/// One business operation frozen for its whole life: the same method, path,
/// key and body in every attempt, in every call, in every process. Built by
/// [`OperationSpec::freeze`] (every field checked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrozenOperation {
    /// The business operation's id.
    pub order_id: String,
    /// The idempotency key frozen with it.
    pub idempotency_key: String,
    /// HTTP method.
    pub method: String,
    /// Request target.
    pub path: String,
    /// Exact body bytes.
    pub body: Vec<u8>,
    /// SHA-256 of the body, 64 lower-case hex digits.
    pub body_sha256: String,
    /// Where the operation's status can be queried, if known.
    pub status_path: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> OperationSpec<'static> {
        OperationSpec {
            order_id: "ord-1",
            method: "POST",
            path: "/v1/payments",
            body: b"{}",
            idempotency_key: None,
            status_path: Some("/v1/payments?order_id=ord-1"),
        }
    }

    #[test]
    fn default_key_and_digest() {
        let op = spec().freeze().unwrap();
        assert_eq!(op.idempotency_key, "create-ord-1");
        assert_eq!(op.body_sha256, body_sha256_hex(b"{}"));
    }

    #[test]
    fn every_field_is_named() {
        let cases: [(OperationSpec<'static>, &str); 6] = [
            (
                OperationSpec {
                    order_id: "o 1",
                    ..spec()
                },
                "order_id",
            ),
            (
                OperationSpec {
                    method: "post",
                    ..spec()
                },
                "method",
            ),
            (
                OperationSpec {
                    path: "v1",
                    ..spec()
                },
                "path",
            ),
            (
                OperationSpec {
                    idempotency_key: Some(""),
                    ..spec()
                },
                "idempotency_key",
            ),
            (
                OperationSpec {
                    idempotency_key: Some("a\nb"),
                    ..spec()
                },
                "idempotency_key",
            ),
            (
                OperationSpec {
                    status_path: Some("/a b"),
                    ..spec()
                },
                "status_path",
            ),
        ];
        for (case, field) in cases {
            let err = case.freeze().unwrap_err();
            assert_eq!(err.field(), Some(field), "{err}");
            assert!(err.message().starts_with(field), "{err}");
        }
    }
}
