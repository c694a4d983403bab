//! Whether an absolute URL is under the client's base URL, and its request
//! target there: the one check the bindings' HTTP adapters (the Go
//! RoundTripper, Python's requests and httpx adapters) use before a request
//! becomes a signed operation, so that a signed request is never sent
//! elsewhere.

use url::Url;

use crate::error::{Error, Result};

/// The request target of `url` relative to the base URL made of `origin`
/// (`scheme://authority`) and its path `prefix` (without a trailing `/`):
/// `url`'s path below the prefix, with its query (the fragment is
/// dropped). Both URLs are read by the `url` crate (WHATWG URL), so scheme
/// and host compare without case and a default port equals no port
/// (`https://h:443/x` is `https://h/x`); paths compare as their
/// percent-encoded text. Errors: `invalid_argument` naming `url` when it is
/// no absolute URL, carries credentials (`user:password@`), or has another
/// scheme, host or port, or a path outside the prefix.
pub(crate) fn target_of(origin: &str, prefix: &str, url: &str) -> Result<String> {
    let base = Url::parse(&format!("{origin}{prefix}/"))
        .map_err(|e| Error::invalid("url", format!("the client's base URL is unreadable: {e}")))?;
    let outside = || {
        Error::invalid(
            "url",
            format!("must be under the client's base URL {origin}{prefix}/"),
        )
    };
    let url = Url::parse(url).map_err(|_| outside())?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Error::invalid(
            "url",
            "must not carry credentials (user:password@)",
        ));
    }
    if url.cannot_be_a_base()
        || url.scheme() != base.scheme()
        || url.host() != base.host()
        || url.port_or_known_default() != base.port_or_known_default()
    {
        return Err(outside());
    }
    let base_path = base.path().trim_end_matches('/');
    let path = url
        .path()
        .strip_prefix(base_path)
        .filter(|rest| rest.starts_with('/'))
        .ok_or_else(outside)?;
    Ok(match url.query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn under(origin: &str, prefix: &str, url: &str) -> Option<String> {
        target_of(origin, prefix, url).ok()
    }

    #[test]
    fn default_ports_and_case_do_not_matter() {
        let t = |url| under("https://h", "", url);
        assert_eq!(t("https://h:443/x").as_deref(), Some("/x"));
        assert_eq!(t("https://h/x").as_deref(), Some("/x"));
        assert_eq!(t("HTTPS://H/x").as_deref(), Some("/x"));
        assert_eq!(
            under("https://h:443", "", "https://h/x").as_deref(),
            Some("/x")
        );
        assert_eq!(
            under("http://h:80", "", "http://h/x").as_deref(),
            Some("/x")
        );
        assert_eq!(t("https://h:8443/x"), None, "another port");
        assert_eq!(t("https://h").as_deref(), Some("/"));
    }

    #[test]
    fn other_hosts_and_schemes_are_outside() {
        let t = |url| under("https://h", "", url);
        assert_eq!(t("https://g/x"), None);
        assert_eq!(t("https://h.evil/x"), None);
        assert_eq!(t("http://h/x"), None);
        assert_eq!(t("http://h:443/x"), None);
        assert_eq!(t("/x"), None, "not absolute");
        assert_eq!(t("mailto:a@h"), None);
    }

    #[test]
    fn the_path_must_lie_below_the_prefix() {
        let t = |url| under("https://h", "/pay", url);
        assert_eq!(t("https://h/pay/v1?a=1#f").as_deref(), Some("/v1?a=1"));
        assert_eq!(t("https://h/pay/").as_deref(), Some("/"));
        assert_eq!(t("https://h/pay"), None);
        assert_eq!(t("https://h/payx/v1"), None);
        assert_eq!(t("https://h/other/v1"), None);
        assert_eq!(
            t("https://h/pay/../admin"),
            None,
            "dot segments resolved first"
        );
    }

    #[test]
    fn percent_encoding_is_compared_as_sent() {
        let t = |url| under("https://h", "/a%20b", url);
        assert_eq!(t("https://h/a%20b/x%2Fy").as_deref(), Some("/x%2Fy"));
        assert_eq!(
            t("https://h/a b/x").as_deref(),
            Some("/x"),
            "a space is encoded"
        );
        assert_eq!(t("https://h/a%2520b/x"), None);
    }

    #[test]
    fn credentials_are_refused_without_echoing_them() {
        let e = target_of("https://h", "", "https://user:s3cret@h/x").unwrap_err();
        assert_eq!(e.field(), Some("url"));
        assert!(!e.message().contains("s3cret"));
        assert!(target_of("https://h", "", "https://user@h/x").is_err());
    }
}
