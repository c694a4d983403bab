//! Sending one attempt over HTTP with ureq, and classifying what happened.

use std::io;
use std::time::Duration;

use ureq::http;
use ureq::RequestExt;

use crate::error::{Error, ErrorCode, Result};
use crate::journal::StoredResponse;
use crate::operation::Reply;

/// Largest response body read, in bytes.
const MAX_RESPONSE_BODY: u64 = 16 * 1024 * 1024;

/// Longest timeout handed to ureq, which panics on an `Instant` overflow;
/// longer configured timeouts mean the same in practice.
const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// A blocking HTTP/1.1 client (rustls for https) that never follows
/// redirects and returns every status as a response.
#[derive(Clone, Debug)]
pub(crate) struct HttpTransport {
    agent: ureq::Agent,
    base_url: String,
}

impl HttpTransport {
    pub(crate) fn new(base_url: &str, connect_timeout: Duration) -> Result<HttpTransport> {
        let base_url = base_url.trim_end_matches('/');
        let uri: http::Uri = base_url
            .parse()
            .map_err(|_| Error::invalid("base_url", "is not a valid absolute URL"))?;
        match uri.scheme_str() {
            Some("http") | Some("https") => {}
            _ => {
                return Err(Error::invalid(
                    "base_url",
                    "must start with http:// or https://",
                ))
            }
        }
        if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
            return Err(Error::invalid(
                "base_url",
                "must not carry credentials (user:password@); requests are authenticated by signature",
            ));
        }
        if uri.host().is_none() || uri.query().is_some() {
            return Err(Error::invalid(
                "base_url",
                "must be scheme://host[:port][/prefix] with no query",
            ));
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(connect_timeout.min(MAX_TIMEOUT)))
            .user_agent(concat!("payidem/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Ok(HttpTransport {
            agent,
            base_url: base_url.to_owned(),
        })
    }

    /// Sends one request and reports a response, or whether the request may
    /// have reached the platform.
    pub(crate) fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&'static str, String)],
        body: &[u8],
        timeout: Duration,
    ) -> Reply {
        let mut builder = http::Request::builder()
            .method(method)
            .uri(format!("{}{}", self.base_url, path));
        for (name, value) in headers {
            builder = builder.header(*name, value.as_str());
        }
        if !body.is_empty() {
            builder = builder.header("Content-Type", "application/json");
        }
        let request = match builder.body(body) {
            Ok(request) => request,
            Err(e) => return Reply::NotSent(format!("request could not be built: {e}")),
        };
        let result = request
            .with_agent(&self.agent)
            .configure()
            .timeout_global(Some(timeout.min(MAX_TIMEOUT)))
            .build()
            .run();
        match result {
            Ok(mut response) => {
                let status = response.status().as_u16();
                let headers: Vec<(String, String)> = response
                    .headers()
                    .iter()
                    .map(|(n, v)| {
                        (
                            n.as_str().to_owned(),
                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                        )
                    })
                    .collect();
                match response
                    .body_mut()
                    .with_config()
                    .limit(MAX_RESPONSE_BODY)
                    .read_to_vec()
                {
                    Ok(body) => {
                        let replayed = crate::protocol::headers::find(
                            &headers,
                            crate::protocol::headers::IDEMPOTENT_REPLAYED,
                        )
                        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
                        Reply::Response(StoredResponse {
                            status,
                            headers,
                            body,
                            replayed,
                        })
                    }
                    Err(e) => Reply::SentNoResponse(format!("response body lost: {e}")),
                }
            }
            Err(e) if never_sent(&e) => Reply::NotSent(e.to_string()),
            Err(e) => Reply::SentNoResponse(e.to_string()),
        }
    }
}

/// Whether the error proves nothing reached the server. Anything else may
/// have been sent and counts as "sent, no response".
fn never_sent(error: &ureq::Error) -> bool {
    use ureq::Timeout;
    match error {
        ureq::Error::HostNotFound
        | ureq::Error::ConnectionFailed
        | ureq::Error::BadUri(_)
        | ureq::Error::Http(_)
        | ureq::Error::InvalidProxyUrl
        | ureq::Error::Timeout(Timeout::Resolve | Timeout::Connect) => true,
        ureq::Error::Io(e) => matches!(
            e.kind(),
            io::ErrorKind::ConnectionRefused
                | io::ErrorKind::AddrNotAvailable
                | io::ErrorKind::NotFound
        ),
        _ => false,
    }
}

/// A transport failure outside any operation, as an error.
pub(crate) fn transport_error(reply: &Reply) -> Option<Error> {
    match reply {
        Reply::Response(_) => None,
        Reply::NotSent(why) => Some(Error::new(ErrorCode::Transport, format!("not sent: {why}"))),
        Reply::SentNoResponse(why) => Some(Error::new(
            ErrorCode::Transport,
            format!("no response: {why}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unbounded_timeouts_do_not_panic() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let transport = HttpTransport::new(&url, Duration::MAX).unwrap();
        let reply = transport.send("GET", "/", &[], b"", Duration::MAX);
        assert!(matches!(reply, Reply::NotSent(_)), "{reply:?}");
    }

    #[test]
    fn base_url_is_checked() {
        let second = Duration::from_secs(1);
        for (url, why) in [
            ("http://user:pw@127.0.0.1:9", "credentials"),
            ("ftp://127.0.0.1", "http://"),
            ("http://127.0.0.1/?q=1", "no query"),
            ("not a url", "valid"),
        ] {
            let e = HttpTransport::new(url, second).unwrap_err();
            assert_eq!(e.field(), Some("base_url"), "{url}");
            assert!(e.message().contains(why), "{url}: {e}");
            assert!(!e.message().contains("pw"), "{e}");
        }
        assert!(HttpTransport::new("https://api.example.com/prefix/", second).is_ok());
    }
}
