//! HTTP/1.1 framing on top of `httparse`: a request is parsed incrementally
//! from the bytes a connection has received so far, within fixed limits, and
//! answers are serialized with their framing headers.

use std::fmt::Write as _;

use crate::answer::Answer;
use crate::config::MAX_BODY_BYTES;

/// Largest request head (request line plus headers), in bytes.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Most header fields in one request head (or in the trailers of a chunked
/// body).
pub const MAX_HEADERS: usize = 100;
/// Longest chunk-size line of a chunked body (extensions included), in bytes.
const MAX_CHUNK_LINE: usize = 1024;

/// A request read in full.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) target: String,
    /// Names as sent; values decoded as UTF-8 with invalid bytes replaced.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    /// Whether the connection must close after the answer.
    pub(crate) close: bool,
}

/// Why a request cannot be read; each is answered and ends the connection.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// 400: not HTTP/1.x, or framing that cannot be trusted.
    BadRequest(&'static str),
    /// 431: a head over [`MAX_HEAD_BYTES`] or with over [`MAX_HEADERS`]
    /// fields.
    HeadersTooLarge,
    /// 413: a body over the limit. `method` and `target` name the route for
    /// the stats.
    BodyTooLarge { method: String, target: String },
}

impl Refusal {
    pub(crate) fn answer(&self) -> Answer {
        match self {
            Refusal::BadRequest(why) => {
                Answer::refusal(&payidem::protocol::Refusal::bad_request(why))
            }
            Refusal::HeadersTooLarge => Answer::error(
                431,
                "request_header_fields_too_large",
                format!(
                    "the request head is limited to {MAX_HEAD_BYTES} bytes and {MAX_HEADERS} fields"
                ),
            ),
            Refusal::BodyTooLarge { .. } => Answer::refusal(
                &payidem::protocol::Refusal::body_too_large(MAX_BODY_BYTES as u64),
            ),
        }
    }
}

/// What the bytes received so far amount to.
#[derive(Debug)]
pub(crate) enum Progress {
    /// More bytes are needed.
    Partial,
    /// A whole request, and how many bytes of the buffer it used.
    Complete(Request, usize),
    /// The request is refused; the connection ends after the answer.
    Refused(Refusal),
}

#[derive(Debug)]
enum Chunk {
    /// Expecting a chunk-size line at this offset.
    Size,
    /// Inside a chunk's data, this many bytes left.
    Data(usize),
    /// Expecting the CRLF after a chunk's data.
    DataEnd,
    /// Expecting the trailer section.
    Trailers,
}

#[derive(Debug)]
enum Body {
    Fixed(usize),
    Chunked(Chunk),
}

#[derive(Debug)]
struct Head {
    request: Request,
    body: Body,
    /// Bytes of the buffer used so far (head plus body framing read).
    used: usize,
}

/// Parses one request out of a connection's buffer, step by step.
#[derive(Debug, Default)]
pub(crate) struct Parser {
    head: Option<Head>,
    /// Whether `100 Continue` was already owed for this request.
    continued: bool,
}

fn bad(why: &'static str) -> Progress {
    Progress::Refused(Refusal::BadRequest(why))
}

fn has_token(value: &str, token: &str) -> bool {
    value
        .split(',')
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

impl Parser {
    /// Whether no byte of a request has been parsed yet.
    pub(crate) fn at_start(&self) -> bool {
        self.head.is_none()
    }

    /// Whether the head asked for `100 Continue` and its body has not
    /// arrived: returns true once per request.
    pub(crate) fn owes_continue(&mut self) -> bool {
        let Some(head) = &self.head else {
            return false;
        };
        if self.continued {
            return false;
        }
        let expects = head.request.headers.iter().any(|(n, v)| {
            n.eq_ignore_ascii_case("expect") && v.trim().eq_ignore_ascii_case("100-continue")
        });
        let waiting = !matches!(head.body, Body::Fixed(0));
        self.continued = expects && waiting;
        self.continued
    }

    /// Advances over `buf` (everything the connection received since the
    /// last complete request).
    pub(crate) fn advance(&mut self, buf: &[u8]) -> Progress {
        if self.head.is_none() {
            match parse_head(buf) {
                Ok(Some(head)) => self.head = Some(head),
                Ok(None) => return Progress::Partial,
                Err(refused) => return refused,
            }
        }
        let Some(head) = self.head.as_mut() else {
            return Progress::Partial;
        };
        match read_body(head, buf) {
            Progress::Partial => Progress::Partial,
            other => {
                self.head = None;
                self.continued = false;
                other
            }
        }
    }
}

fn parse_head(buf: &[u8]) -> Result<Option<Head>, Progress> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut fields);
    let used = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) if n <= MAX_HEAD_BYTES => n,
        Ok(httparse::Status::Complete(_)) => {
            return Err(Progress::Refused(Refusal::HeadersTooLarge))
        }
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD_BYTES => {
            return Err(Progress::Refused(Refusal::HeadersTooLarge))
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Progress::Refused(Refusal::HeadersTooLarge))
        }
        Err(_) => return Err(bad("the request is not valid HTTP/1.1")),
    };
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else {
        return Err(bad("the request line is incomplete"));
    };
    let headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_owned(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let mut close = version == 0;
    let mut chunked = false;
    let mut length: Option<u64> = None;
    for (name, value) in &headers {
        if name.eq_ignore_ascii_case("connection") {
            if has_token(value, "close") {
                close = true;
            } else if has_token(value, "keep-alive") && version == 0 {
                close = false;
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            let last = value.rsplit(',').next().unwrap_or("").trim();
            if !last.eq_ignore_ascii_case("chunked") {
                return Err(bad("a Transfer-Encoding must end in chunked"));
            }
            chunked = true;
        } else if name.eq_ignore_ascii_case("content-length") {
            let v = value.trim();
            let n = (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .then(|| v.parse::<u64>().unwrap_or(u64::MAX))
                .ok_or_else(|| bad("Content-Length is not a number"))?;
            if length.is_some_and(|l| l != n) {
                return Err(bad("Content-Length is given twice with different values"));
            }
            length = Some(n);
        }
    }
    let request = Request {
        method: method.to_owned(),
        target: target.to_owned(),
        headers,
        body: Vec::new(),
        close,
    };
    let body = if chunked {
        // A length beside chunked framing is a smuggling attempt: the
        // connection ends after this answer.
        let mut request = request;
        request.close |= length.is_some();
        return Ok(Some(Head {
            request,
            body: Body::Chunked(Chunk::Size),
            used,
        }));
    } else {
        match length {
            Some(n) if n > MAX_BODY_BYTES as u64 => {
                return Err(Progress::Refused(Refusal::BodyTooLarge {
                    method: request.method,
                    target: request.target,
                }))
            }
            Some(n) => Body::Fixed(n as usize),
            None => Body::Fixed(0),
        }
    };
    Ok(Some(Head {
        request,
        body,
        used,
    }))
}

fn too_large(head: &Head) -> Progress {
    Progress::Refused(Refusal::BodyTooLarge {
        method: head.request.method.clone(),
        target: head.request.target.clone(),
    })
}

fn read_body(head: &mut Head, buf: &[u8]) -> Progress {
    loop {
        let rest = &buf[head.used.min(buf.len())..];
        match &mut head.body {
            Body::Fixed(n) => {
                let take = (*n).min(rest.len());
                head.request.body.extend_from_slice(&rest[..take]);
                head.used += take;
                *n -= take;
                if *n > 0 {
                    return Progress::Partial;
                }
                let request = std::mem::replace(
                    &mut head.request,
                    Request {
                        method: String::new(),
                        target: String::new(),
                        headers: Vec::new(),
                        body: Vec::new(),
                        close: true,
                    },
                );
                return Progress::Complete(request, head.used);
            }
            Body::Chunked(state) => match state {
                Chunk::Size => match httparse::parse_chunk_size(rest) {
                    Ok(httparse::Status::Complete((n, size))) => {
                        head.used += n;
                        let total = (head.request.body.len() as u64).saturating_add(size);
                        if total > MAX_BODY_BYTES as u64 {
                            return too_large(head);
                        }
                        *state = if size == 0 {
                            Chunk::Trailers
                        } else {
                            Chunk::Data(size as usize)
                        };
                    }
                    Ok(httparse::Status::Partial) if rest.len() > MAX_CHUNK_LINE => {
                        return bad("a chunk-size line is too long")
                    }
                    Ok(httparse::Status::Partial) => return Progress::Partial,
                    Err(_) => return bad("a chunk size is not valid"),
                },
                Chunk::Data(n) => {
                    let take = (*n).min(rest.len());
                    head.request.body.extend_from_slice(&rest[..take]);
                    head.used += take;
                    *n -= take;
                    if *n > 0 {
                        return Progress::Partial;
                    }
                    *state = Chunk::DataEnd;
                }
                Chunk::DataEnd => {
                    if rest.len() < 2 {
                        return Progress::Partial;
                    }
                    if &rest[..2] != b"\r\n" {
                        return bad("a chunk does not end with CRLF");
                    }
                    head.used += 2;
                    *state = Chunk::Size;
                }
                Chunk::Trailers => {
                    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
                    match httparse::parse_headers(rest, &mut fields) {
                        Ok(httparse::Status::Complete((n, _))) => {
                            head.used += n;
                            head.body = Body::Fixed(0);
                        }
                        Ok(httparse::Status::Partial) if rest.len() > MAX_HEAD_BYTES => {
                            return Progress::Refused(Refusal::HeadersTooLarge)
                        }
                        Ok(httparse::Status::Partial) => return Progress::Partial,
                        Err(httparse::Error::TooManyHeaders) => {
                            return Progress::Refused(Refusal::HeadersTooLarge)
                        }
                        Err(_) => return bad("the trailer section is not valid"),
                    }
                }
            },
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

/// The interim answer to `Expect: 100-continue`.
pub(crate) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// `answer` as bytes on the wire, with `Content-Type: application/json`
/// (unless the answer carries its own `Content-Type`), `Date` (`date`, unless the answer carries its own), `Content-Length`
/// and, when `close`, `Connection: close`.
pub(crate) fn serialize(answer: &Answer, date: &str, close: bool) -> Vec<u8> {
    let mut head = String::with_capacity(256);
    let own_type = |(n, _): &&(&str, String)| n.eq_ignore_ascii_case("content-type");
    let content_type =
        (answer.headers.iter().find(own_type)).map_or("application/json", |(_, v)| v.as_str());
    let _ = write!(
        head,
        "HTTP/1.1 {} {}\r\nContent-Type: {content_type}\r\n",
        answer.status,
        reason(answer.status),
    );
    if !answer
        .headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("date"))
    {
        let _ = write!(head, "Date: {date}\r\n");
    }
    let _ = write!(head, "Content-Length: {}\r\n", answer.body.len());
    for (name, value) in &answer.headers {
        let framing = [
            "connection",
            "content-length",
            "transfer-encoding",
            "content-type",
        ];
        if framing.iter().any(|f| name.eq_ignore_ascii_case(f))
            || value.bytes().any(|b| b == b'\r' || b == b'\n')
        {
            continue;
        }
        let _ = write!(head, "{name}: {value}\r\n");
    }
    if close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(&answer.body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(p: Progress) -> (Request, usize) {
        match p {
            Progress::Complete(r, n) => (r, n),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fixed_and_pipelined() {
        let raw = b"POST /v1/payments HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /";
        let mut p = Parser::default();
        assert!(matches!(p.advance(&raw[..20]), Progress::Partial));
        assert!(matches!(p.advance(&raw[..60]), Progress::Partial));
        let (r, n) = complete(p.advance(raw));
        assert_eq!(
            (r.method.as_str(), r.body.as_slice(), r.close),
            ("POST", &b"abc"[..], false)
        );
        assert_eq!(&raw[n..], b"GET /");
        assert!(p.at_start());
    }

    #[test]
    fn chunked_bodies_and_limits() {
        let raw = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n";
        let mut p = Parser::default();
        for end in 1..raw.len() {
            assert!(matches!(p.advance(&raw[..end]), Progress::Partial), "{end}");
        }
        let (r, n) = complete(p.advance(raw));
        assert_eq!((r.body.as_slice(), n), (&b"abcde"[..], raw.len()));

        let huge = format!(
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
            MAX_BODY_BYTES + 1
        );
        let mut p = Parser::default();
        assert!(matches!(
            p.advance(huge.as_bytes()),
            Progress::Refused(Refusal::BodyTooLarge { .. })
        ));
        let mut p = Parser::default();
        let declared =
            b"POST /v1/payments HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n";
        assert!(matches!(
            p.advance(declared),
            Progress::Refused(Refusal::BodyTooLarge { .. })
        ));
        let mut p = Parser::default();
        let long = [
            b"GET / HTTP/1.1\r\nX: ".as_slice(),
            &vec![b'a'; MAX_HEAD_BYTES],
        ]
        .concat();
        assert!(matches!(
            p.advance(&long),
            Progress::Refused(Refusal::HeadersTooLarge)
        ));
        let mut p = Parser::default();
        let two = b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
        assert!(matches!(
            p.advance(two),
            Progress::Refused(Refusal::BadRequest(_))
        ));
    }

    #[test]
    fn non_ascii_values_and_http_1_0() {
        let raw = b"GET / HTTP/1.0\r\nX-A: caf\xe9\r\n\r\n";
        let (r, _) = complete(Parser::default().advance(raw));
        assert_eq!(r.headers[0].1, "caf\u{fffd}");
        assert!(r.close);
        let out = serialize(&Answer::error(404, "not_found", "x"), "D", true);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 404 Not Found\r\n"));
        assert!(text.contains("Connection: close\r\n\r\n{"));
    }

    #[test]
    fn a_refusal_sends_its_own_date_only() {
        let e = payidem::Error::new(payidem::ErrorCode::TimestampOutOfWindow, "late")
            .with_server_time(1_000);
        let answer = Answer::refusal(&payidem::protocol::Refusal::for_error(&e));
        let text = String::from_utf8(serialize(&answer, "NOW", false)).unwrap();
        assert_eq!(text.matches("Date: ").count(), 1, "{text}");
        assert!(text.contains("Date: Thu, 01 Jan 1970 00:16:40 GMT\r\n"));
        assert!(text.contains("X-Server-Time: 1000\r\n"));
        assert_eq!(text.matches("Content-Type: ").count(), 1, "{text}");
        let plain =
            String::from_utf8(serialize(&Answer::error(404, "x", "y"), "NOW", false)).unwrap();
        assert!(plain.contains("Date: NOW\r\n"));
    }
}
