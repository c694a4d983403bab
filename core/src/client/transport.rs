//! Sending one attempt over HTTP with ureq, and classifying what happened.
//!
//! The transport is hardened for payment traffic: no proxy unless one is
//! configured (environment variables only on request, never `HTTP_PROXY`
//! under CGI), `https` required except for loopback hosts, the operating
//! system's trust store (or a CA bundle) with an optional client
//! certificate, redirects never followed, and a request that failed before
//! any of its bytes was written (DNS, connect, TLS handshake, certificate
//! errors) reported as not sent.

use std::cell::Cell;
use std::io;
use std::path::Path;
use std::time::Duration;

use ureq::config::{Config as UreqConfig, IpFamily};
use ureq::http;
use ureq::tls::{Certificate, ClientCert, PemItem, PrivateKey, RootCerts, TlsConfig};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{
    Buffers, ConnectProxyConnector, ConnectionDetails, Connector, NextTimeout, RustlsConnector,
    TcpConnector, Transport,
};
use ureq::RequestExt;
use zeroize::Zeroizing;

use super::config::ClientConfig;
use crate::error::{Error, ErrorCode, Result};
use crate::operation::{Reply, Response};

/// Longest timeout handed to ureq, which panics on an `Instant` overflow;
/// longer configured timeouts mean the same in practice.
const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// Largest PEM file read for a CA bundle, certificate or key.
const MAX_PEM_FILE: u64 = 4 * 1024 * 1024;

thread_local! {
    /// Whether the request being run on this thread has handed any byte to
    /// its connection. ureq runs a request on the caller's thread, so a
    /// thread-local follows exactly one request at a time.
    static REQUEST_BYTES_WRITTEN: Cell<bool> = const { Cell::new(false) };
}

/// The last connector of the chain: marks the request as (possibly) sent
/// as soon as a byte of it is handed to the connection to the platform.
/// TCP connect, proxy CONNECT (run through the same chain, on a connection
/// to the proxy, which is not tracked) and the TLS handshake all happen
/// before, in earlier connectors.
#[derive(Debug)]
struct WriteTracker {
    /// The base URL's authority: connections elsewhere (the proxy) are not
    /// tracked.
    authority: String,
}

#[derive(Debug)]
struct Tracked<T> {
    inner: T,
    tracked: bool,
}

impl<In: Transport> Connector<In> for WriteTracker {
    type Out = Tracked<In>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> std::result::Result<Option<Self::Out>, ureq::Error> {
        let tracked = details
            .uri
            .authority()
            .is_none_or(|a| a.as_str().eq_ignore_ascii_case(&self.authority));
        Ok(chained.map(|inner| Tracked { inner, tracked }))
    }
}

impl<T: Transport> Transport for Tracked<T> {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(
        &mut self,
        amount: usize,
        timeout: NextTimeout,
    ) -> std::result::Result<(), ureq::Error> {
        if amount > 0 && self.tracked {
            REQUEST_BYTES_WRITTEN.with(|w| w.set(true));
        }
        self.inner.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> std::result::Result<bool, ureq::Error> {
        self.inner.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

/// A blocking HTTP/1.1 client (rustls for https) that never follows
/// redirects and returns every status as a response.
#[derive(Clone)]
pub(crate) struct HttpTransport {
    agent: ureq::Agent,
    /// `scheme://authority`, where every request goes.
    origin: String,
    /// The base URL's path without its trailing `/` (may be empty): part
    /// of every request target, and so of every signature.
    prefix: String,
    /// Whether a clock answer may be believed: https, or a loopback host.
    clock_trusted: bool,
    proxied: bool,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the agent: its TLS settings hold the client key.
        f.debug_struct("HttpTransport")
            .field("origin", &self.origin)
            .field("prefix", &self.prefix)
            .field("proxied", &self.proxied)
            .finish_non_exhaustive()
    }
}

/// Whether `host` (as in a URI, IPv6 in brackets) is a loopback host.
/// ureq's resolver, except that a host written as an IP address is that
/// address: no lookup and no thread. ureq resolves the host on every
/// request, before it looks for a kept-alive connection, and its default
/// resolver runs each lookup that has a timeout on a thread of its own.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct LiteralResolver(DefaultResolver);

impl Resolver for LiteralResolver {
    fn resolve(
        &self,
        uri: &http::Uri,
        config: &UreqConfig,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let literal = match (uri.scheme(), uri.authority()) {
            (Some(scheme), Some(authority)) if config.ip_family() == IpFamily::Any => {
                DefaultResolver::host_and_port(scheme, authority)
                    .and_then(|host_port| host_port.parse::<std::net::SocketAddr>().ok())
            }
            _ => None,
        };
        match literal {
            Some(addr) => {
                let mut addrs = self.empty();
                addrs.push(addr);
                Ok(addrs)
            }
            None => self.0.resolve(uri, config, timeout),
        }
    }
}

pub(crate) fn is_loopback_host(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.eq_ignore_ascii_case("localhost") {
        return true;
    }
    bare.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

impl HttpTransport {
    pub(crate) fn new(config: &ClientConfig) -> Result<HttpTransport> {
        let base_url = config.base_url.trim_end_matches('/');
        let uri: http::Uri = base_url
            .parse()
            .map_err(|_| Error::invalid("base_url", "is not a valid absolute URL"))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => {
                return Err(Error::invalid(
                    "base_url",
                    "must start with http:// or https://",
                ))
            }
        };
        let authority = match uri.authority() {
            Some(a) if a.as_str().contains('@') => {
                return Err(Error::invalid(
                    "base_url",
                    "must not carry credentials (user:password@); requests are authenticated by signature",
                ))
            }
            Some(a) => a.as_str().to_owned(),
            None => {
                return Err(Error::invalid(
                    "base_url",
                    "must be scheme://host[:port][/prefix] with no query",
                ))
            }
        };
        let host = uri.host().unwrap_or_default();
        if host.is_empty() || uri.query().is_some() {
            return Err(Error::invalid(
                "base_url",
                "must be scheme://host[:port][/prefix] with no query",
            ));
        }
        let loopback = is_loopback_host(host);
        if !https && !loopback && !config.allow_insecure_http {
            return Err(Error::invalid(
                "base_url",
                "must use https:// (plain http:// is only accepted for loopback hosts, or with the allow_insecure_http option)",
            ));
        }
        let prefix = uri.path().trim_end_matches('/').to_owned();
        if !prefix.is_empty() {
            crate::protocol::fields::check_path(&prefix).map_err(|_| {
                Error::invalid(
                    "base_url",
                    "its path prefix must be printable ASCII (percent-encoded)",
                )
            })?;
        }
        let proxy = choose_proxy(config, https, host)?;
        let proxied = proxy.is_some();
        let tls = tls_config(config)?;
        let agent_config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .proxy(proxy)
            .https_only(https)
            .tls_config(tls)
            .timeout_connect(Some(config.connect_timeout.min(MAX_TIMEOUT)))
            // One kept-alive connection per concurrent caller, so that a
            // client shared by many threads does not connect (and
            // handshake TLS) for most requests.
            .max_idle_connections(super::MAX_IDLE_CONNECTIONS)
            .max_idle_connections_per_host(super::MAX_IDLE_CONNECTIONS)
            .user_agent(concat!("payidem/", env!("CARGO_PKG_VERSION")))
            .build();
        // ureq's default chain without SOCKS (refused above): proxy CONNECT,
        // TCP, rustls, then the tracker that knows whether a byte was sent.
        let connector =
            ().chain(ConnectProxyConnector::default())
                .chain(TcpConnector::default())
                .chain(RustlsConnector::default())
                .chain(WriteTracker {
                    authority: authority.clone(),
                });
        let agent = ureq::Agent::with_parts(agent_config, connector, LiteralResolver::default());
        Ok(HttpTransport {
            agent,
            origin: format!("{}://{authority}", if https { "https" } else { "http" }),
            prefix,
            clock_trusted: https || loopback,
            proxied,
        })
    }

    /// The request target for `path` (which starts with `/`): the base
    /// URL's path prefix followed by `path`. This is what is sent and what
    /// is signed.
    pub(crate) fn target(&self, path: &str) -> String {
        format!("{}{path}", self.prefix)
    }

    /// The request target of the absolute `url` under the base URL (see
    /// [`super::target::target_of`]).
    pub(crate) fn target_of(&self, url: &str) -> Result<String> {
        super::target::target_of(&self.origin, &self.prefix, url)
    }

    /// Whether the platform's clock, as it answers, can be believed: only
    /// over https or to a loopback host.
    pub(crate) fn url(&self, target: &str) -> String {
        format!("{}{}", self.origin, target)
    }

    pub(crate) fn clock_trusted(&self) -> bool {
        self.clock_trusted
    }

    /// Sends one request to `target` (already prefixed, see
    /// [`HttpTransport::target`]) and reports a response, or whether the
    /// request may have reached the platform.
    pub(crate) fn send(
        &self,
        method: &str,
        target: &str,
        headers: &[(&'static str, String)],
        body: &[u8],
        timeout: Duration,
    ) -> Reply {
        let mut builder = http::Request::builder()
            .method(method)
            .uri(format!("{}{}", self.origin, target));
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
        REQUEST_BYTES_WRITTEN.with(|w| w.set(false));
        let result = request
            .with_agent(&self.agent)
            .configure()
            .timeout_global(Some(timeout.min(MAX_TIMEOUT)))
            .build()
            .run();
        let written = REQUEST_BYTES_WRITTEN.with(|w| w.replace(false));
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
                    .limit(super::MAX_RESPONSE_BYTES)
                    .read_to_vec()
                {
                    Ok(body) => Reply::Response(Response::new(status, headers, body)),
                    Err(e) => Reply::SentNoResponse(format!("response body lost: {e}")),
                }
            }
            // Nothing of the request left this process: a failed DNS
            // lookup, connect, proxy CONNECT or TLS handshake (an unknown
            // issuer, a refused client certificate) cannot have run it.
            Err(e) if !written || never_sent(&e) => Reply::NotSent(describe(&e)),
            Err(e) => Reply::SentNoResponse(describe(&e)),
        }
    }
}

/// An error for people, with TLS failures named as such.
fn describe(error: &ureq::Error) -> String {
    let text = error.to_string();
    let tls = matches!(error, ureq::Error::Rustls(_) | ureq::Error::Tls(_))
        || matches!(error, ureq::Error::Io(e) if e.get_ref().is_some_and(|i| i.is::<rustls::Error>()));
    if tls {
        format!("TLS: {text}")
    } else {
        text
    }
}

/// The proxy to use: the explicit one, else (only if the caller opted in)
/// the environment's for the base URL's scheme, honouring `NO_PROXY`.
/// `HTTP_PROXY` is never read when `REQUEST_METHOD` is set (a CGI program,
/// where a request's `Proxy:` header becomes `HTTP_PROXY`: "httpoxy").
fn choose_proxy(config: &ClientConfig, https: bool, host: &str) -> Result<Option<ureq::Proxy>> {
    if let Some(url) = config.proxy.as_deref().filter(|u| !u.is_empty()) {
        return parse_proxy(url, "proxy").map(Some);
    }
    if !config.proxy_from_env {
        return Ok(None);
    }
    let cgi = std::env::var_os("REQUEST_METHOD").is_some();
    let names: &[&str] = if https {
        &["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]
    } else if cgi {
        &["http_proxy", "ALL_PROXY", "all_proxy"]
    } else {
        &["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
    };
    let Some((name, url)) = names.iter().find_map(|n| {
        std::env::var(n)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| (*n, v))
    }) else {
        return Ok(None);
    };
    let no_proxy = std::env::var("NO_PROXY")
        .or_else(|_| std::env::var("no_proxy"))
        .unwrap_or_default();
    if no_proxy_matches(&no_proxy, host) {
        return Ok(None);
    }
    parse_proxy(url.trim(), name).map(Some)
}

fn parse_proxy(url: &str, what: &str) -> Result<ureq::Proxy> {
    let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
    let proxy = if scheme_ok {
        ureq::Proxy::new(url).ok()
    } else {
        None
    };
    // The URL may carry the proxy's credentials: never echoed.
    proxy.ok_or_else(|| {
        Error::invalid(
            "proxy",
            format_args!("{what} must be an http:// or https:// proxy URL (host[:port])"),
        )
    })
}

/// Whether a `NO_PROXY` list exempts `host`: `*`, the host itself, or a
/// domain suffix (`example.com`, `.example.com`, `*.example.com`).
fn no_proxy_matches(list: &str, host: &str) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    list.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| {
            let entry = entry.to_ascii_lowercase();
            let entry = entry.trim_start_matches("*.").trim_start_matches('.');
            entry == "*"
                || host == entry
                || host
                    .strip_suffix(entry)
                    .is_some_and(|rest| rest.ends_with('.'))
        })
}

fn read_pem(path: &Path, field: &'static str) -> Result<Zeroizing<Vec<u8>>> {
    use std::io::Read;
    let file = std::fs::File::open(path)
        .map_err(|e| Error::invalid(field, format_args!("cannot open {}: {e}", path.display())))?;
    let mut bytes = Zeroizing::new(Vec::new());
    file.take(MAX_PEM_FILE)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::invalid(field, format_args!("cannot read {}: {e}", path.display())))?;
    Ok(bytes)
}

fn pem_certificates(path: &Path, field: &'static str) -> Result<Vec<Certificate<'static>>> {
    let pem = read_pem(path, field)?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        match item {
            Ok(PemItem::Certificate(c)) => certs.push(c),
            Ok(_) => {}
            Err(_) => {
                return Err(Error::invalid(
                    field,
                    format_args!("{} is not valid PEM", path.display()),
                ))
            }
        }
    }
    if certs.is_empty() {
        return Err(Error::invalid(
            field,
            format_args!("{} holds no PEM certificate", path.display()),
        ));
    }
    Ok(certs)
}

/// The TLS settings: roots from `ca_bundle`, else the operating system's
/// trust store (which honours `SSL_CERT_FILE` and `SSL_CERT_DIR`), else
/// the compiled-in Mozilla roots if the system has none; the client
/// certificate and key if configured, checked now so that a bad pair fails
/// here and never in the middle of a payment.
fn tls_config(config: &ClientConfig) -> Result<TlsConfig> {
    let roots = match &config.ca_bundle {
        Some(path) => RootCerts::new_with_certs(&pem_certificates(path, "ca_bundle")?),
        None => {
            let native = rustls_native_certs::load_native_certs();
            if native.certs.is_empty() {
                RootCerts::WebPki
            } else {
                native
                    .certs
                    .iter()
                    .map(|c| Certificate::from_der(c.as_ref()).to_owned())
                    .collect::<Vec<_>>()
                    .into()
            }
        }
    };
    let client_cert = match (&config.client_cert, &config.client_key) {
        (None, None) => None,
        (Some(_), None) => {
            return Err(Error::invalid("client_key", "is required with client_cert"))
        }
        (None, Some(_)) => {
            return Err(Error::invalid("client_cert", "is required with client_key"))
        }
        (Some(cert), Some(key)) => {
            let chain = pem_certificates(cert, "client_cert")?;
            let key_pem = read_pem(key, "client_key")?;
            // Errors name the file, never its content.
            let key = PrivateKey::from_pem(&key_pem).map_err(|_| {
                Error::invalid(
                    "client_key",
                    format_args!(
                        "{} holds no PEM private key (PKCS#8, PKCS#1 or SEC1)",
                        key.display()
                    ),
                )
            })?;
            check_client_pair(&chain, &key_pem)?;
            Some(ClientCert::new_with_certs(&chain, key))
        }
    };
    Ok(TlsConfig::builder()
        .root_certs(roots)
        .client_cert(client_cert)
        .build())
}

/// Whether rustls accepts the certificate and key as a pair (ureq would
/// panic on the first connection otherwise).
fn check_client_pair(chain: &[Certificate<'static>], key_pem: &[u8]) -> Result<()> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = chain
        .iter()
        .map(|c| CertificateDer::from(c.der().to_vec()))
        .collect();
    let key_der = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|_| Error::invalid("client_key", "holds no supported PEM private key"))?;
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|_| Error::new(ErrorCode::Internal, "no TLS protocol version available"))?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_client_auth_cert(certs, key_der)
        .map(|_| ())
        .map_err(|_| {
            Error::invalid(
                "client_key",
                "does not match client_cert, or its kind is not supported",
            )
        })
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

    fn transport(url: &str) -> Result<HttpTransport> {
        HttpTransport::new(&ClientConfig::new(url, "key_test_1"))
    }

    #[test]
    fn unbounded_timeouts_do_not_panic() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let mut config = ClientConfig::new(url, "key_test_1");
        config.connect_timeout = Duration::MAX;
        let transport = HttpTransport::new(&config).unwrap();
        let reply = transport.send("GET", "/", &[], b"", Duration::MAX);
        assert!(matches!(reply, Reply::NotSent(_)), "{reply:?}");
    }

    #[test]
    fn base_url_is_checked() {
        for (url, why) in [
            ("http://user:pw@127.0.0.1:9", "credentials"),
            ("ftp://127.0.0.1", "http://"),
            ("http://127.0.0.1/?q=1", "no query"),
            ("not a url", "valid"),
            ("http://api.example.com", "https://"),
        ] {
            let e = transport(url).unwrap_err();
            assert_eq!(e.field(), Some("base_url"), "{url}");
            assert!(e.message().contains(why), "{url}: {e}");
            assert!(!e.message().contains("pw"), "{e}");
        }
        let t = transport("https://api.example.com/prefix/").unwrap();
        assert_eq!(t.target("/v1/payments"), "/prefix/v1/payments");
        assert!(t.clock_trusted());
        for url in ["http://127.0.0.1:9", "http://localhost:9", "http://[::1]:9"] {
            let t = transport(url).unwrap();
            assert_eq!(t.target("/v1/x"), "/v1/x");
            assert!(t.clock_trusted(), "{url}");
        }
        let mut config = ClientConfig::new("http://api.example.com", "key_test_1");
        config.allow_insecure_http = true;
        assert!(!HttpTransport::new(&config).unwrap().clock_trusted());
    }

    #[test]
    fn no_proxy_lists_match_hosts_and_domains() {
        assert!(no_proxy_matches("*", "api.example.com"));
        assert!(no_proxy_matches("a.b, example.com", "api.example.com"));
        assert!(no_proxy_matches(".example.com", "api.example.com"));
        assert!(no_proxy_matches("*.example.com", "api.example.com"));
        assert!(no_proxy_matches("127.0.0.1", "127.0.0.1"));
        assert!(!no_proxy_matches("ample.com", "api.example.com"));
        assert!(!no_proxy_matches("", "api.example.com"));
    }

    #[test]
    fn proxy_urls_are_checked_without_echoing_credentials() {
        let mut config = ClientConfig::new("https://api.example.com", "key_test_1");
        config.proxy = Some("socks5://user:secretpw@127.0.0.1:1080".into());
        let e = HttpTransport::new(&config).unwrap_err();
        assert_eq!(e.field(), Some("proxy"));
        assert!(!e.to_string().contains("secretpw"), "{e}");
        config.proxy = Some("http://user:secretpw@127.0.0.1:3128".into());
        let t = HttpTransport::new(&config).unwrap();
        assert!(!format!("{t:?}").contains("secretpw"));
    }
}

/// Under Windows (run under Wine by `make test-windows`), with no
/// `ca_bundle` the client's roots are the Windows certificate store's: Wine
/// fills its Root store from the host's CAs, so the roots the core loads
/// are the host bundle's certificates, never the compiled-in fallback.
#[cfg(all(test, windows))]
mod windows_trust_store_tests {
    use super::*;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    use std::collections::HashSet;

    /// The host's CA bundle (as a Windows path), named by test-windows.sh.
    fn host_cas() -> Vec<Vec<u8>> {
        let path = std::env::var_os("PAYIDEM_WINE_HOST_CA_BUNDLE").expect(
            "PAYIDEM_WINE_HOST_CA_BUNDLE names the host's CA bundle (scripts/dist/test-windows.sh)",
        );
        CertificateDer::pem_file_iter(&path)
            .expect("the host's CA bundle is readable")
            .map(|c| c.expect("the host's CA bundle is PEM").to_vec())
            .collect()
    }

    #[test]
    fn the_roots_are_the_windows_certificate_stores() {
        for var in ["SSL_CERT_FILE", "SSL_CERT_DIR"] {
            assert!(
                std::env::var_os(var).is_none(),
                "{var} is set: the roots would come from it, not from the store"
            );
        }
        let tls = tls_config(&ClientConfig::new("https://api.example.com", "key_test_1")).unwrap();
        let RootCerts::Specific(roots) = tls.root_certs() else {
            panic!("the roots are not the store's certificates (the compiled-in fallback?)");
        };
        let roots: HashSet<&[u8]> = roots.iter().map(|c| c.der()).collect();
        let host = host_cas();
        let shared = host.iter().filter(|c| roots.contains(c.as_slice())).count();
        println!(
            "{} roots from the Windows store; {shared} of the host's {} CAs among them",
            roots.len(),
            host.len()
        );
        assert!(
            host.len() >= 50,
            "only {} CAs in the host bundle",
            host.len()
        );
        assert!(
            shared * 10 >= host.len() * 9,
            "only {shared} of the host's {} CAs are roots",
            host.len()
        );
    }
}
