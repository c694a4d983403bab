//! Servers for the transport tests, all on 127.0.0.1 port 0 in threads:
//! plain HTTP/1.1 (a platform, a fake proxy, a redirector) and TLS with
//! test certificates made by rcgen at test time (a CA, a server certificate
//! for 127.0.0.1, a client certificate).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use payidem::{ClientConfig, JournalChoice};

pub const KEY_ID: &str = "key_test_1";
pub const SECRET: &[u8] = b"transport-test-secret-0123456789";

/// One request as a server received it.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// DER of the client certificate a TLS server was shown, if any.
    pub client_cert: Option<Vec<u8>>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A raw HTTP response.
pub fn response(status: u16, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} X\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    out.into_bytes()
}

pub type Handler = Arc<dyn Fn(&Seen) -> Vec<u8> + Send + Sync>;

/// A server answering every request with `handler`, one per connection.
pub struct Server {
    pub port: u16,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub fn http(handler: impl Fn(&Seen) -> Vec<u8> + Send + Sync + 'static) -> Server {
        Server::start(None, Arc::new(handler))
    }

    pub fn tls(
        tls: Arc<rustls::ServerConfig>,
        handler: impl Fn(&Seen) -> Vec<u8> + Send + Sync + 'static,
    ) -> Server {
        Server::start(Some(tls), Arc::new(handler))
    }

    fn start(tls: Option<Arc<rustls::ServerConfig>>, handler: Handler) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let handler = Arc::clone(&handler);
                let log = Arc::clone(&log);
                let tls = tls.clone();
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                    match tls {
                        None => serve(stream, None, &handler, &log),
                        Some(config) => {
                            let Ok(conn) = rustls::ServerConnection::new(config) else {
                                return;
                            };
                            let mut tls = rustls::StreamOwned::new(conn, stream);
                            // Finish the handshake first, to see the peer.
                            while tls.conn.is_handshaking() {
                                if tls.conn.complete_io(&mut tls.sock).is_err() {
                                    return;
                                }
                            }
                            let cert = tls
                                .conn
                                .peer_certificates()
                                .and_then(|c| c.first())
                                .map(|c| c.as_ref().to_vec());
                            serve(tls, cert, &handler, &log)
                        }
                    }
                });
            }
        });
        Server { port, seen }
    }

    pub fn url(&self, scheme: &str) -> String {
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve<S: Read + Write>(
    stream: S,
    client_cert: Option<Vec<u8>>,
    handler: &Handler,
    log: &Mutex<Vec<Seen>>,
) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let mut seen = Seen {
        method: parts.next().unwrap_or_default().to_owned(),
        target: parts.next().unwrap_or_default().to_owned(),
        client_cert,
        ..Seen::default()
    };
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            return;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            seen.headers
                .push((n.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let len: usize = seen
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    seen.body = body;
    let answer = handler(&seen);
    log.lock().unwrap().push(seen);
    let mut stream = reader.into_inner();
    let _ = stream.write_all(&answer);
    let _ = stream.flush();
}

/// A CONNECT proxy (ureq tunnels through HTTP proxies) that records each
/// CONNECT request and pipes the tunnel to 127.0.0.1:`upstream`, whatever
/// the target named.
pub struct TunnelProxy {
    pub port: u16,
    pub connects: Arc<Mutex<Vec<String>>>,
}

impl TunnelProxy {
    pub fn to(upstream: u16) -> TunnelProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connects = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&connects);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let log = Arc::clone(&log);
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream);
                    let mut first = String::new();
                    if reader.read_line(&mut first).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                            break;
                        }
                    }
                    log.lock().unwrap().push(first.trim().to_owned());
                    let mut client = reader.into_inner();
                    let Ok(upstream) = TcpStream::connect(("127.0.0.1", upstream)) else {
                        return;
                    };
                    let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                    let (mut up_r, mut up_w) = (upstream.try_clone().unwrap(), upstream);
                    let (mut cl_r, mut cl_w) = (client.try_clone().unwrap(), client);
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut cl_r, &mut up_w);
                        let _ = up_w.shutdown(std::net::Shutdown::Write);
                    });
                    let _ = std::io::copy(&mut up_r, &mut cl_w);
                    let _ = cl_w.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        TunnelProxy { port, connects }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn connects(&self) -> Vec<String> {
        self.connects.lock().unwrap().clone()
    }
}

/// A config for `url` with a memory journal and one attempt at most.
pub fn config(url: &str) -> ClientConfig {
    let mut config = ClientConfig::new(url, KEY_ID);
    config.journal = JournalChoice::Memory;
    config.connect_timeout = Duration::from_secs(2);
    config.request_timeout = Duration::from_secs(3);
    config.retry.base = Duration::from_millis(5);
    config.retry.max_attempts = 1;
    config.retry.deadline = Duration::from_secs(10);
    config
}

pub fn payment(order_id: &'static str) -> payidem::OperationSpec<'static> {
    payidem::OperationSpec {
        order_id,
        method: "POST",
        path: "/v1/payments",
        body: br#"{"amount":1250,"currency":"EUR"}"#,
        idempotency_key: None,
        status_path: None,
    }
}

pub fn created() -> Vec<u8> {
    response(201, &[], r#"{"id":"pay_1","status":"succeeded"}"#)
}

/// Test PKI: a CA, a server certificate for 127.0.0.1 and a client
/// certificate, all signed by the CA, written as PEM files in `dir`.
pub struct Pki {
    pub dir: tempfile::TempDir,
    pub ca_pem: PathBuf,
    pub client_cert_pem: PathBuf,
    pub client_key_pem: PathBuf,
    pub client_cert_der: Vec<u8>,
    ca_der: Vec<u8>,
    server_cert_der: Vec<u8>,
    server_key_der: Vec<u8>,
}

impl Pki {
    pub fn new() -> Pki {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        };
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "payidem test CA");
        let ca = ca_params.self_signed(&ca_key).unwrap();

        let server_key = KeyPair::generate().unwrap();
        let server = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .unwrap()
            .signed_by(&server_key, &ca, &ca_key)
            .unwrap();

        let client_key = KeyPair::generate().unwrap();
        let mut client_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        client_params
            .distinguished_name
            .push(DnType::CommonName, "payidem test client");
        client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client = client_params.signed_by(&client_key, &ca, &ca_key).unwrap();

        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: String| -> PathBuf {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        Pki {
            ca_pem: write("ca.pem", ca.pem()),
            client_cert_pem: write("client.pem", client.pem()),
            client_key_pem: write("client.key", client_key.serialize_pem()),
            client_cert_der: client.der().to_vec(),
            ca_der: ca.der().to_vec(),
            server_cert_der: server.der().to_vec(),
            server_key_der: server_key.serialize_der(),
            dir,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A server config; with `require_client_cert`, only clients with a
    /// certificate signed by the test CA are accepted.
    pub fn server_config(&self, require_client_cert: bool) -> Arc<rustls::ServerConfig> {
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .unwrap();
        let builder = if require_client_cert {
            let mut roots = rustls::RootCertStore::empty();
            roots
                .add(CertificateDer::from(self.ca_der.clone()))
                .unwrap();
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .unwrap();
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.server_key_der.clone()));
        Arc::new(
            builder
                .with_single_cert(
                    vec![CertificateDer::from(self.server_cert_der.clone())],
                    key,
                )
                .unwrap(),
        )
    }
}
