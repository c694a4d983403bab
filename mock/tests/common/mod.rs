//! A small signed test client for the mock (payidem's Signer + ureq 3).

#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use payidem::protocol::{Nonce, NonceSource, OsNonceSource, Signer};
use payidem_mock::{MockConfig, MockServer, DEFAULT_KEY_ID, DEFAULT_SECRET};
use serde_json::Value;

pub mod attack;

/// One answer.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    pub fn code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
    pub fn field(&self) -> String {
        self.json()["error"]["field"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
    pub fn replayed(&self) -> bool {
        self.header("Idempotent-Replayed") == Some("true")
    }
}

pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

pub fn agent(timeout: Duration) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .build();
    ureq::Agent::new_with_config(config)
}

/// Signs and sends requests to one server.
pub struct Client {
    pub agent: ureq::Agent,
    pub base: String,
    pub signer: Signer,
    /// Seconds added to the local clock when signing.
    pub offset: AtomicU64,
    pub fixed_now: Option<u64>,
}

static NEXT: AtomicU64 = AtomicU64::new(1);

/// A process-unique suffix for order ids and keys.
pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

pub fn create_body(order_id: &str, amount: u64) -> Vec<u8> {
    format!(r#"{{"order_id":"{order_id}","amount":{amount},"currency":"EUR"}}"#).into_bytes()
}

impl Client {
    pub fn new(base: &str) -> Client {
        Client::with_key(base, DEFAULT_KEY_ID, DEFAULT_SECRET.as_bytes())
    }

    pub fn with_key(base: &str, key_id: &str, secret: &[u8]) -> Client {
        Client {
            agent: agent(Duration::from_secs(20)),
            base: base.to_owned(),
            signer: Signer::new(key_id, secret).unwrap(),
            offset: AtomicU64::new(0),
            fixed_now: None,
        }
    }

    pub fn now(&self) -> u64 {
        self.fixed_now.unwrap_or_else(unix_now)
    }

    /// Signed headers for one attempt at `timestamp`.
    pub fn signed_headers(
        &self,
        method: &str,
        path: &str,
        key: &str,
        body: &[u8],
        timestamp: u64,
    ) -> Vec<(String, String)> {
        self.signed_headers_with_nonce(
            method,
            path,
            key,
            body,
            timestamp,
            OsNonceSource.next_nonce(),
        )
    }

    pub fn signed_headers_with_nonce(
        &self,
        method: &str,
        path: &str,
        key: &str,
        body: &[u8],
        timestamp: u64,
        nonce: Nonce,
    ) -> Vec<(String, String)> {
        let attempt = self
            .signer
            .sign_attempt(method, path, key, body, timestamp, nonce)
            .unwrap();
        attempt
            .headers()
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect()
    }

    /// Sends a request with exactly these headers.
    pub fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<Resp, ureq::Error> {
        let url = format!("{}{}", self.base, path);
        let mut builder = ureq::http::Request::builder()
            .method(method)
            .uri(url.as_str());
        for (n, v) in headers {
            builder = builder.header(n.as_str(), v.as_str());
        }
        if method == "POST" || method == "PUT" {
            builder = builder.header("Content-Type", "application/json");
        }
        let request = builder.body(body.to_vec()).unwrap();
        let mut response = self.agent.run(request)?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    v.to_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let body = response.body_mut().read_to_vec()?;
        Ok(Resp {
            status,
            headers,
            body,
        })
    }

    pub fn try_post(&self, path: &str, key: &str, body: &[u8]) -> Result<Resp, ureq::Error> {
        let headers = self.signed_headers("POST", path, key, body, self.now());
        self.send("POST", path, &headers, body)
    }

    pub fn post(&self, path: &str, key: &str, body: &[u8]) -> Resp {
        self.try_post(path, key, body).unwrap()
    }

    pub fn create(&self, order_id: &str, key: &str, amount: u64) -> Resp {
        self.post("/v1/payments", key, &create_body(order_id, amount))
    }

    pub fn get(&self, path: &str) -> Resp {
        let headers = self.signed_headers("GET", path, "", b"", self.now());
        self.send("GET", path, &headers, b"").unwrap()
    }

    /// An unsigned request (control routes).
    pub fn plain(&self, method: &str, path: &str, body: &[u8]) -> Resp {
        self.send(method, path, &[], body).unwrap()
    }

    pub fn stats(&self) -> Value {
        self.plain("GET", "/_mock/stats", b"").json()
    }
}

pub fn start(config: MockConfig) -> (MockServer, Client) {
    let server = MockServer::start(config).unwrap();
    let client = Client::new(&server.url());
    (server, client)
}

pub fn start_default() -> (MockServer, Client) {
    start(MockConfig {
        seed: Some(1),
        ..MockConfig::default()
    })
}
