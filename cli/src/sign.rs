//! `payidem sign` and `payidem verify`: the library's own signer and
//! verifier, for debugging an integration.

use std::path::Path;

use payidem::protocol::{NonceSource, OsNonceSource, Signer};
use payidem::verifier::{IncomingRequest, Verifier, VerifierConfig};
use serde_json::json;

use crate::args::{SignArgs, VerifyArgs};
use crate::journal::unix_now;
use crate::secret::{key_id, read_input, secret};
use crate::{out, out_json, Done, Exit, Failure};

/// `text` quoted for a POSIX shell.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn body(path: Option<&Path>) -> Result<Vec<u8>, Failure> {
    match path {
        Some(p) => read_input("--body-file", p),
        None => Ok(Vec::new()),
    }
}

/// Signs one request and prints its headers, or a curl command.
pub fn sign(a: SignArgs, json: bool) -> Done {
    let key_id = key_id(&a.key)?;
    let secret = secret(&a.key)?;
    let body = body(a.body_file.as_deref())?;
    let signer = Signer::new(&key_id, &secret)?;
    drop(secret);
    let timestamp = a.timestamp.unwrap_or_else(unix_now);
    let signed = signer.sign_attempt(
        &a.method,
        &a.path,
        a.idempotency_key.as_deref().unwrap_or(""),
        &body,
        timestamp,
        OsNonceSource.next_nonce(),
    )?;
    let headers: Vec<(&str, &str)> = signed.headers().collect();
    let curl = a.curl.as_deref().map(|base| {
        let mut cmd = format!(
            "curl -sS -X {} {}",
            shell_quote(&a.method),
            shell_quote(&format!("{}{}", base.trim_end_matches('/'), a.path))
        );
        for (name, value) in &headers {
            cmd.push_str(&format!(" -H {}", shell_quote(&format!("{name}: {value}"))));
        }
        if let Some(path) = &a.body_file {
            cmd.push_str(&format!(
                " --data-binary {}",
                shell_quote(&format!("@{}", path.display()))
            ));
        }
        cmd
    });
    if json {
        out_json(&json!({
            "method": a.method,
            "path": a.path,
            "key_id": signed.key_id(),
            "timestamp": signed.timestamp(),
            "nonce": signed.nonce().as_str(),
            "signature": signed.signature().as_str(),
            "idempotency_key": signed.idempotency_key(),
            "body_sha256": payidem::protocol::body_sha256_hex(&body),
            "headers": headers,
            "curl": curl,
        }));
    } else if let Some(cmd) = curl {
        out(&format!("{cmd}\n"));
    } else {
        let mut text = String::new();
        for (name, value) in &headers {
            text.push_str(&format!("{name}: {value}\n"));
        }
        out(&text);
    }
    Ok(Exit::Ok)
}

/// Parses captured headers: `Name: value` lines; blank lines and a request
/// line (`POST /path HTTP/1.1`) are skipped.
fn parse_headers(path: &Path, text: &str) -> Result<Vec<(String, String)>, Failure> {
    let mut headers = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() || line.contains(" HTTP/") {
            continue;
        }
        let Some((name, value)) = line
            .split_once(':')
            .filter(|(n, _)| !n.is_empty() && !n.contains(char::is_whitespace))
        else {
            return Err(Failure::new(
                Exit::Usage,
                format!(
                    "--headers-file {} line {}: not a header (`Name: value`)",
                    path.display(),
                    i + 1
                ),
            ));
        };
        headers.push((name.to_owned(), value.trim().to_owned()));
    }
    Ok(headers)
}

/// Verifies one captured request and names the rule it fails.
pub fn verify(a: VerifyArgs, json: bool) -> Done {
    let key_id = key_id(&a.key)?;
    let secret = secret(&a.key)?;
    let mut verifier = Verifier::new(VerifierConfig::default())?;
    verifier.add_key(&key_id, &[&secret])?;
    drop(secret);
    let raw = read_input("--headers-file", &a.headers_file)?;
    let text = String::from_utf8(raw).map_err(|_| {
        Failure::new(
            Exit::Usage,
            format!(
                "--headers-file {} is not UTF-8 text",
                a.headers_file.display()
            ),
        )
    })?;
    let headers = parse_headers(&a.headers_file, &text)?;
    let body = body(a.body_file.as_deref())?;
    let pairs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let request = IncomingRequest {
        method: &a.method,
        path: &a.path,
        headers: &pairs,
        body: &body,
    };
    let now = a.at.unwrap_or_else(unix_now);
    match verifier.verify(&request, now) {
        Ok(v) => {
            if json {
                out_json(&json!({
                    "valid": true,
                    "code": null,
                    "message": null,
                    "key_id": v.key_id,
                    "timestamp": v.timestamp,
                    "idempotency_key": v.idempotency_key,
                    "checked_at": now,
                }));
            } else {
                out(&format!(
                    "valid: signed by {} at {}{}\n",
                    v.key_id,
                    v.timestamp,
                    v.idempotency_key
                        .map_or(String::new(), |k| format!(", Idempotency-Key {k}"))
                ));
            }
            Ok(Exit::Ok)
        }
        Err(e) => {
            if json {
                out_json(&json!({
                    "valid": false,
                    "code": e.code().as_str(),
                    "message": e.message(),
                    "key_id": null,
                    "timestamp": null,
                    "idempotency_key": null,
                    "checked_at": now,
                }));
            } else {
                out(&format!(
                    "invalid: {}: {}\n",
                    e.code().as_str(),
                    e.message()
                ));
            }
            Ok(Exit::Invalid)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_quotes() {
        assert_eq!(shell_quote("a'b c"), "'a'\\''b c'");
    }

    #[test]
    fn headers_parse_and_name_the_bad_line() {
        let p = Path::new("h.txt");
        let parsed = parse_headers(
            p,
            "POST /v1/payments HTTP/1.1\r\nX-Api-Key: k\r\n\r\nX-Nonce:  n \n",
        )
        .unwrap();
        assert_eq!(
            parsed,
            [
                ("X-Api-Key".into(), "k".into()),
                ("X-Nonce".into(), "n".into())
            ]
        );
        let err = parse_headers(p, "X-Api-Key: k\nnonsense\n").unwrap_err();
        assert_eq!(err.exit, Exit::Usage);
        assert!(err.message.contains("line 2"), "{}", err.message);
    }
}
