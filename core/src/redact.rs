//! The one rule every language applies before it prints a location that may
//! carry credentials: a journal URL (`postgres://…`), a proxy URL, a replay
//! store URL, or a libpq `key=value` connection string.
//!
//! The same rule is implemented by the Go binding; both are checked against
//! the shared vectors in `core/tests/vectors/redact-v1.json`.

/// `location` fit to print: what it names (scheme, host, port, path, file)
/// stays readable, what may be a secret never appears.
///
/// * `scheme://…` (a URL): parsed by the `url` crate. User information
///   (user and password) becomes `***`, a query `?***` (a PostgreSQL or
///   Redis query may hold `password=`), a fragment `#***`; the rest is the
///   parser's serialisation (e.g. `postgres://***@db:5432/pay?***`). A
///   `scheme://…` the parser refuses, or whose host holds a percent escape
///   (a socket directory), becomes `scheme://***`.
/// * `scheme:…@…` without `//` (a URL with a slash missing): `scheme:***`.
/// * Text with `=` and no `://` (libpq's `key=value` form): the value of
///   every keyword containing `password` (e.g. `password`, `sslpassword`)
///   becomes `***`, quoted or not; the rest is kept as written. When the
///   text does not split into keywords and values and mentions a password,
///   all of it becomes `***`.
/// * Anything else (a file path, `:memory:`) is returned unchanged.
pub fn redact_url(location: &str) -> String {
    if let Some(scheme) = scheme_of(location) {
        let rest = &location[scheme.len() + 1..];
        if rest.starts_with("//") {
            return redact_parsed(location)
                .unwrap_or_else(|| format!("{}://***", scheme.to_ascii_lowercase()));
        }
        if rest.contains('@') {
            return format!("{}:***", scheme.to_ascii_lowercase());
        }
    }
    if location.contains('=') {
        return redact_key_values(location);
    }
    location.to_owned()
}

/// The scheme `location` starts with (RFC 3986: a letter, then letters,
/// digits, `+`, `-` or `.`, then `:`), if any.
fn scheme_of(location: &str) -> Option<&str> {
    let (scheme, _) = location.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

/// A `scheme://…` URL redacted through the `url` crate; `None` when it is no
/// URL with an authority, its host is no single host (a libpq multi-host
/// list, `h1:5432,h2:5433`, is refused by the parser too) or holds a
/// percent escape.
fn redact_parsed(location: &str) -> Option<String> {
    let mut url = url::Url::parse(location).ok()?;
    // A host with a percent escape (a unix socket directory,
    // `%2Frun%2Fpostgresql`) is not shown: parsers disagree on it.
    if !url.has_authority() || url.host_str().is_some_and(|h| h.contains('%')) {
        return None;
    }
    if !url.username().is_empty() || url.password().is_some() {
        url.set_password(None).ok()?;
        url.set_username("***").ok()?;
    }
    if url.query().is_some() {
        url.set_query(Some("***"));
    }
    if url.fragment().is_some() {
        url.set_fragment(Some("***"));
    }
    Some(url.into())
}

/// libpq's `key=value` form with the value of every password keyword
/// replaced by `***` (see [`redact_url`]).
fn redact_key_values(text: &str) -> String {
    let mentions_password = text.to_ascii_lowercase().contains("password");
    match key_value_spans(text) {
        Some(spans) => {
            let mut out = String::with_capacity(text.len());
            let mut at = 0;
            for (key, value) in spans {
                if text[key].to_ascii_lowercase().contains("password") {
                    out.push_str(&text[at..value.start]);
                    out.push_str("***");
                    at = value.end;
                }
            }
            out.push_str(&text[at..]);
            out
        }
        None if mentions_password => "***".to_owned(),
        None => text.to_owned(),
    }
}

/// The byte ranges of each keyword and its value in a libpq connection
/// string (`kw = value`, `kw='quoted \' value'`, backslash escapes), or
/// `None` when the text does not split that way.
fn key_value_spans(text: &str) -> Option<Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>> {
    let bytes = text.as_bytes();
    let skip_space = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    let mut spans = Vec::new();
    let mut i = skip_space(0);
    while i < bytes.len() {
        let key_start = i;
        while i < bytes.len() && bytes[i] != b'=' && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = key_start..i;
        i = skip_space(i);
        if key.is_empty() || bytes.get(i) != Some(&b'=') {
            return None;
        }
        i = skip_space(i + 1);
        let value_start = i;
        if bytes.get(i) == Some(&b'\'') {
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return None,
                    Some(b'\\') => i += 2,
                    Some(b'\'') => break,
                    Some(_) => i += 1,
                }
            }
            i += 1;
        } else {
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
        }
        // A backslash at the very end escapes nothing.
        let value_end = i.min(bytes.len());
        spans.push((key, value_start..value_end));
        i = skip_space(value_end);
    }
    Some(spans)
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn user_information_query_and_fragment_are_hidden() {
        for (input, shown) in [
            (
                "postgres://alice:hunter2@db.internal:5432/pay",
                "postgres://***@db.internal:5432/pay",
            ),
            ("redis://:hunter2@127.0.0.1:1", "redis://***@127.0.0.1:1"),
            ("http://u:hunter2@127.0.0.1:1", "http://***@127.0.0.1:1/"),
            (
                "postgres://db/pay?password=hunter2&sslmode=require",
                "postgres://db/pay?***",
            ),
            ("redis://db/0#hunter2", "redis://db/0#***"),
            ("postgres://db/pay", "postgres://db/pay"),
        ] {
            assert_eq!(redact_url(input), shown, "{input}");
        }
    }

    #[test]
    fn what_the_parser_refuses_is_hidden_after_the_scheme() {
        assert_eq!(
            redact_url("postgres://u:hunter2@h1:5432,h2:5433/db"),
            "postgres://***"
        );
        assert_eq!(redact_url("postgres:/u:hunter2@db/pay"), "postgres:***");
        assert_eq!(
            redact_url("postgres://u:hunter2@%2Frun%2Fpostgresql/db"),
            "postgres://***"
        );
    }

    #[test]
    fn key_value_passwords_are_hidden_quoted_or_not() {
        for (dsn, shown) in [
            (
                "host=db user=x password=hunter2 dbname=pay",
                "host=db user=x password=*** dbname=pay",
            ),
            (
                "host=db password = 'hunter 2 \\' x' sslpassword=k",
                "host=db password = *** sslpassword=***",
            ),
            ("host=db password='unterminated", "***"),
            ("/data/a=b c", "/data/a=b c"),
        ] {
            assert_eq!(redact_url(dsn), shown, "{dsn}");
        }
    }

    #[test]
    fn paths_are_kept() {
        for path in ["/var/lib/payidem/journal.sqlite3", ":memory:", "", "j.db"] {
            assert_eq!(redact_url(path), path);
        }
    }
}
