//! TLS to the PostgreSQL server, asked for with libpq's URL parameters:
//! `sslmode=require|verify-ca|verify-full` and `sslrootcert=FILE|system`.
//!
//! Every TLS mode verifies the server's certificate chain against
//! `sslrootcert` (a PEM file of CA certificates), or against the system's
//! roots when it is absent or `system`; `require` and `verify-full` also
//! check that the certificate names the host connected to, `verify-ca`
//! does not. (libpq's `require` checks nothing: payidem never sends a
//! journal's rows over a connection it has not authenticated.) `disable`,
//! `prefer` and no `sslmode` connect without TLS, as before TLS existed
//! here: nothing silently falls back from TLS to plain text, since `prefer`
//! never tries TLS.

use std::fmt;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use percent_encoding::percent_decode_str;
use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use postgres::Socket;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::TlsConnector;

/// How the journal's connections use TLS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TlsMode {
    /// No TLS (`sslmode` absent, `disable` or `prefer`).
    Off,
    /// TLS; chain and host name verified (`require`, `verify-full`).
    VerifyFull,
    /// TLS; chain verified, host name not (`verify-ca`).
    VerifyCa,
}

/// The TLS parameters taken out of a connection URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct TlsParams {
    pub(super) mode: TlsMode,
    /// `sslrootcert`: `None` for the system's roots.
    pub(super) root_cert: Option<PathBuf>,
}

/// Takes the TLS parameters out of `url`: the URL left for the driver
/// (`sslmode=require` where a TLS mode was asked for, `sslrootcert`
/// removed, every other parameter as written) and what they ask for. A
/// URL in libpq's `key=value` form is left as written (its `sslmode`, of
/// `disable|prefer|require`, is read from the driver's parse: see
/// [`TlsParams::with_driver_mode`]). `Err` names the parameter.
pub(super) fn split_url(url: &str) -> Result<(String, TlsParams), String> {
    let mut params = TlsParams {
        mode: TlsMode::Off,
        root_cert: None,
    };
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let Some((base, query)) = url.split_once('?').filter(|_| is_url) else {
        return Ok((url.to_owned(), params));
    };
    let mut kept: Vec<String> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (raw_key, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(raw_key, "a parameter name")?;
        match key.as_str() {
            "sslmode" => {
                let value = decode(raw_value, "sslmode")?;
                params.mode = match value.as_str() {
                    "disable" | "prefer" => TlsMode::Off,
                    "require" | "verify-full" => TlsMode::VerifyFull,
                    "verify-ca" => TlsMode::VerifyCa,
                    other => {
                        return Err(format!(
                            "sslmode {other:?} is not one of disable, prefer, require, verify-ca, \
                             verify-full"
                        ))
                    }
                };
                if params.mode != TlsMode::Off {
                    kept.push("sslmode=require".to_owned());
                    continue;
                }
            }
            "sslrootcert" => {
                let value = decode(raw_value, "sslrootcert")?;
                if value.is_empty() {
                    return Err("sslrootcert is empty".to_owned());
                }
                params.root_cert = (value != "system").then(|| PathBuf::from(value));
                continue;
            }
            "sslcert" | "sslkey" | "sslpassword" | "sslcrl" | "sslcrldir" => {
                return Err(format!(
                    "{key} is not supported: the journal authenticates the server with TLS, \
                     not itself with a client certificate"
                ));
            }
            _ => {}
        }
        kept.push(pair.to_owned());
    }
    if params.root_cert.is_some() && params.mode == TlsMode::Off {
        return Err("sslrootcert is given but sslmode asks for no TLS: add \
                    sslmode=verify-full (or verify-ca, require)"
            .to_owned());
    }
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((url, params))
}

impl TlsParams {
    /// `self`, asking for TLS (verified) where the driver's parse of the URL
    /// left for it says `sslmode=require`: the `key=value` form.
    pub(super) fn with_driver_mode(&self, config: &postgres::Config) -> TlsParams {
        let mut params = self.clone();
        if params.mode == TlsMode::Off
            && matches!(config.get_ssl_mode(), postgres::config::SslMode::Require)
        {
            params.mode = TlsMode::VerifyFull;
        }
        params
    }
}

fn decode(raw: &str, what: &str) -> Result<String, String> {
    percent_decode_str(raw)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| format!("{what} is not UTF-8 once percent-decoded"))
}

/// Makes the TLS connections of one journal (`None` when `params` asks for
/// none). `Err` says why the roots could not be loaded, naming the file.
pub(super) fn connector(params: &TlsParams) -> Result<Option<MakeRustls>, String> {
    if params.mode == TlsMode::Off {
        return Ok(None);
    }
    let roots = Arc::new(match &params.root_cert {
        Some(path) => file_roots(path)?,
        None => system_roots()?,
    });
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
        .build()
        .map_err(|e| format!("cannot set up the server certificate check: {e}"))?;
    let verifier: Arc<dyn ServerCertVerifier> = match params.mode {
        TlsMode::VerifyCa => Arc::new(ChainOnly(verifier)),
        _ => verifier,
    };
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    // PostgreSQL 17's direct TLS (`sslnegotiation=direct`) requires this
    // ALPN name; older servers ignore it.
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(Some(MakeRustls(Arc::new(config))))
}

fn file_roots(path: &Path) -> Result<RootCertStore, String> {
    let shown = path.display();
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("sslrootcert {shown}: cannot read it: {e}"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("sslrootcert {shown}: not a PEM file of certificates: {e}"))?;
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(format!(
            "sslrootcert {shown}: holds no usable CA certificate"
        ));
    }
    Ok(roots)
}

fn system_roots() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        return Err(
            "no sslrootcert and no CA certificate in the system's store: give \
                    sslrootcert=FILE"
                .to_owned(),
        );
    }
    Ok(roots)
}

/// `verify-ca`: the chain must verify; the host name is not checked.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The name is checked last, after the chain, its validity period
        // and revocation: failing on the name means all else verified.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The driver's TLS connector for one journal.
#[derive(Clone)]
pub(super) struct MakeRustls(Arc<ClientConfig>);

impl fmt::Debug for MakeRustls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MakeRustls")
    }
}

impl MakeTlsConnect<Socket> for MakeRustls {
    type Stream = RustlsStream;
    type TlsConnect = RustlsConnect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, host: &str) -> io::Result<RustlsConnect> {
        let name = ServerName::try_from(host.to_owned()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{host:?} is not a host name TLS can verify"),
            )
        })?;
        Ok(RustlsConnect {
            connector: TlsConnector::from(Arc::clone(&self.0)),
            name,
        })
    }
}

/// One connection's handshake.
pub(super) struct RustlsConnect {
    connector: TlsConnector,
    name: ServerName<'static>,
}

impl TlsConnect<Socket> for RustlsConnect {
    type Stream = RustlsStream;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream>> + Send>>;

    fn connect(self, stream: Socket) -> Self::Future {
        Box::pin(async move {
            let stream = self.connector.connect(self.name, stream).await?;
            Ok(RustlsStream(Box::new(stream)))
        })
    }
}

/// A TLS connection to the server.
pub(super) struct RustlsStream(Box<tokio_rustls::client::TlsStream<Socket>>);

impl AsyncRead for RustlsStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for RustlsStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

impl TlsStream for RustlsStream {
    fn channel_binding(&self) -> ChannelBinding {
        // SCRAM runs without channel binding over this connection (the
        // driver's default `channel_binding=prefer` accepts that); the
        // server is authenticated by its certificate.
        ChannelBinding::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(url: &str) -> (String, TlsParams) {
        split_url(url).unwrap()
    }

    #[test]
    fn urls_without_tls_parameters_are_left_as_written() {
        for url in [
            "postgresql://app@db/journal",
            "postgresql://app@/journal?host=/run/postgresql&connect_timeout=5",
            "host=/run/postgresql user=app dbname=journal",
            "postgres://app@db/journal?sslmode=disable",
            "postgres://app@db/journal?sslmode=prefer&application_name=x",
        ] {
            let (left, params) = split(url);
            assert_eq!(left, url);
            assert_eq!(params.mode, TlsMode::Off, "{url}");
            assert_eq!(params.root_cert, None);
        }
    }

    #[test]
    fn tls_modes_become_require_for_the_driver_and_the_root_file_is_taken_out() {
        let (left, params) = split(
            "postgresql://app@db.internal:5433/journal?application_name=pos&sslmode=verify-full\
             &sslrootcert=%2Fetc%2Fssl%2Fdb%20ca.pem&connect_timeout=5",
        );
        assert_eq!(
            left,
            "postgresql://app@db.internal:5433/journal?application_name=pos&sslmode=require\
             &connect_timeout=5"
        );
        assert_eq!(params.mode, TlsMode::VerifyFull);
        assert_eq!(params.root_cert, Some(PathBuf::from("/etc/ssl/db ca.pem")));

        let (left, params) = split("postgres://app@db/j?sslmode=verify-ca&sslrootcert=/ca.pem");
        assert_eq!(left, "postgres://app@db/j?sslmode=require");
        assert_eq!(params.mode, TlsMode::VerifyCa);

        let (_, params) = split("postgres://app@db/j?sslmode=require&sslrootcert=system");
        assert_eq!(params.mode, TlsMode::VerifyFull, "require verifies too");
        assert_eq!(params.root_cert, None, "system roots");

        let url = "host=db user=app sslmode=require";
        let (left, params) = split(url);
        assert_eq!(left, url);
        let config: postgres::Config = left.parse().unwrap();
        assert_eq!(params.with_driver_mode(&config).mode, TlsMode::VerifyFull);
        let config: postgres::Config = "host=db sslmode=prefer".parse().unwrap();
        assert_eq!(params.with_driver_mode(&config).mode, TlsMode::Off);
    }

    #[test]
    fn bad_tls_parameters_are_refused_by_name() {
        for (url, names) in [
            ("postgres://a@db/j?sslmode=allow", "sslmode \"allow\""),
            (
                "postgres://a@db/j?sslmode=verify-full&sslcert=/c.pem",
                "sslcert",
            ),
            (
                "postgres://a@db/j?sslmode=verify-full&sslkey=/k.pem",
                "sslkey",
            ),
            ("postgres://a@db/j?sslrootcert=/ca.pem", "sslrootcert"),
            (
                "postgres://a@db/j?sslmode=require&sslrootcert=",
                "sslrootcert",
            ),
            (
                "postgres://a@db/j?sslmode=require&sslrootcert=%FF",
                "sslrootcert",
            ),
        ] {
            let why = split_url(url).unwrap_err();
            assert!(why.contains(names), "{url}: {why}");
        }
    }

    #[test]
    fn a_root_file_that_is_missing_or_not_pem_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let params = TlsParams {
            mode: TlsMode::VerifyFull,
            root_cert: Some(missing.clone()),
        };
        let why = connector(&params).unwrap_err();
        assert!(
            why.contains("sslrootcert") && why.contains("missing.pem"),
            "{why}"
        );

        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate").unwrap();
        let params = TlsParams {
            mode: TlsMode::VerifyCa,
            root_cert: Some(junk),
        };
        let why = connector(&params).unwrap_err();
        assert!(
            why.contains("junk.pem") && why.contains("no usable CA"),
            "{why}"
        );

        let ca = rcgen::generate_simple_self_signed(vec!["db.internal".to_owned()]).unwrap();
        let good = dir.path().join("ca.pem");
        std::fs::write(&good, ca.cert.pem()).unwrap();
        let params = TlsParams {
            mode: TlsMode::VerifyFull,
            root_cert: Some(good),
        };
        assert!(connector(&params).unwrap().is_some());
        let off = TlsParams {
            mode: TlsMode::Off,
            root_cert: None,
        };
        assert!(connector(&off).unwrap().is_none());
    }
}
