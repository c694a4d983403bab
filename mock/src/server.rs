//! The HTTP server: tiny_http with a pool of worker threads.

use std::io::Read;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use payidem::protocol::{Verifier, VerifierConfig};

use crate::answer::Answer;
use crate::clock::{ClockSetting, ServerClock};
use crate::config::{KeySpec, MockConfig, MAX_BODY_BYTES};
use crate::faults::{FaultDice, FaultSettings};
use crate::handler::{process, Action, Incoming, Outcome, Shared, State, UNKNOWN_ROUTE};
use crate::ledger::Ledger;
use crate::socket::{self, Direction};
use crate::stats::Stats;
use crate::store::Store;

/// Declared bodies up to this size over the limit are refused in the normal
/// way; tiny_http allocates the unread rest of a declared body when it drops
/// the request, so larger declarations are refused on the raw socket.
const MAX_DRAINABLE_BYTES: usize = 64 << 20;

/// A running mock platform. Dropping it stops the workers and closes the
/// listening socket.
pub struct MockServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
    _http: Arc<tiny_http::Server>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

fn build_verifier(config: &MockConfig) -> payidem::Result<Verifier> {
    let shards = if config.nonce_capacity < 1024 { 1 } else { 64 };
    let mut verifier = Verifier::new(VerifierConfig {
        window_seconds: config.window_seconds,
        nonce_capacity_per_key: config.nonce_capacity,
        shards,
    })?;
    let default_key;
    let keys: &[KeySpec] = if config.keys.is_empty() {
        default_key = [KeySpec::default_test_key()];
        &default_key
    } else {
        &config.keys
    };
    let mut ids: Vec<&str> = keys.iter().map(|k| k.key_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    for id in ids {
        let secrets: Vec<&[u8]> = keys
            .iter()
            .filter(|k| k.key_id == id)
            .map(|k| &k.secret[..])
            .collect();
        verifier.add_key(id, &secrets)?;
    }
    Ok(verifier)
}

fn random_seed() -> u64 {
    let mut b = [0u8; 8];
    payidem::protocol::nonce::fill_random(&mut b);
    u64::from_le_bytes(b)
}

impl MockServer {
    /// Binds and starts serving. Fails with `invalid_argument` naming the
    /// setting that is wrong, or `transport_error` when the address cannot
    /// be bound.
    pub fn start(config: MockConfig) -> payidem::Result<MockServer> {
        if config.workers == 0 || config.workers > 256 {
            return Err(payidem::Error::invalid("workers", "must be 1..=256"));
        }
        let verifier = build_verifier(&config)?;
        let seed = config.seed.unwrap_or_else(random_seed);
        let bind = format!("{}:{}", config.host, config.port);
        let http = tiny_http::Server::http(bind.as_str()).map_err(|e| {
            payidem::Error::new(
                payidem::ErrorCode::Transport,
                format!("cannot bind {bind}: {e}"),
            )
        })?;
        let addr = http.server_addr().to_ip().ok_or_else(|| {
            payidem::Error::new(
                payidem::ErrorCode::Transport,
                "the server has no IP address",
            )
        })?;
        let shared = Arc::new(Shared {
            verifier,
            state: Mutex::new(State {
                ledger: Ledger::new(seed),
                store: Store::new(config.idempotency_retention_seconds),
                stats: Stats::default(),
            }),
            clock: ServerClock::new(config.clock),
            dice: FaultDice::new(config.faults.clone(), seed),
            control: config.control,
            processing_delay_ms: AtomicU64::new(config.processing_delay_ms),
        });
        let http = Arc::new(http);
        let stop = Arc::new(AtomicBool::new(false));
        let workers = (0..config.workers)
            .map(|i| {
                let (http, shared, stop) =
                    (Arc::clone(&http), Arc::clone(&shared), Arc::clone(&stop));
                std::thread::Builder::new()
                    .name(format!("payidem-mock-{i}"))
                    .spawn(move || worker(&http, &shared, &stop, addr.port()))
                    .map_err(|e| {
                        payidem::Error::new(
                            payidem::ErrorCode::Transport,
                            format!("cannot spawn a worker: {e}"),
                        )
                    })
            })
            .collect::<payidem::Result<Vec<_>>>()?;
        Ok(MockServer {
            shared,
            addr,
            stop,
            workers,
            _http: http,
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, the base URL of the server.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A consistent snapshot of the oracle (the same data as
    /// `GET /_mock/stats`).
    pub fn stats(&self) -> Stats {
        self.shared.lock().snapshot()
    }

    /// Forgets every payment, refund, stored idempotency key and counter.
    pub fn reset(&self) {
        self.shared.lock().reset();
    }

    /// Replaces the fault settings; the seeded stream continues.
    pub fn set_faults(&self, faults: FaultSettings) {
        self.shared.dice.set_settings(faults);
    }

    /// Changes the server's clock.
    pub fn set_clock(&self, clock: ClockSetting) {
        self.shared.clock.set(clock);
    }

    /// The server's clock now, in Unix seconds.
    pub fn now(&self) -> u64 {
        self.shared.clock.now()
    }

    /// Sets how long each create and refund stays in progress before running.
    pub fn set_processing_delay(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.shared.processing_delay_ms.store(ms, Ordering::Relaxed);
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

fn worker(http: &tiny_http::Server, shared: &Shared, stop: &AtomicBool, port: u16) {
    while !stop.load(Ordering::SeqCst) {
        match http.recv_timeout(Duration::from_millis(100)) {
            Ok(Some(request)) => {
                // `handle` catches panics of the pipeline; this one guards
                // the writing of the answer.
                let _ = catch_unwind(AssertUnwindSafe(|| handle(shared, request, port)));
            }
            Ok(None) => {}
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

fn to_response(shared: &Shared, answer: &Answer) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let mut response =
        tiny_http::Response::from_data(answer.body.clone()).with_status_code(answer.status);
    let fixed = [
        ("Content-Type", "application/json".to_owned()),
        ("Date", shared.clock.http_date()),
    ];
    for (name, value) in fixed.iter().chain(answer.headers.iter()) {
        if let Ok(h) = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
            response.add_header(h);
        }
    }
    response
}

fn record(shared: &Shared, outcome: &Outcome) {
    let mut state = shared.lock();
    let status = (outcome.action != Action::Drop).then_some(outcome.answer.status);
    state
        .stats
        .request(outcome.route, status, outcome.answer.code.as_deref());
    if let Some(kind) = outcome.fault {
        state.stats.fault(kind.name());
    }
}

fn too_large() -> Answer {
    Answer::error(
        413,
        "payload_too_large",
        format!("the body is larger than {MAX_BODY_BYTES} bytes"),
    )
    .with_header("Connection", "close")
}

fn route_label(method: &str, target: &str) -> &'static str {
    crate::routes::route(method, target).map_or(UNKNOWN_ROUTE, |r| r.label())
}

fn handle(shared: &Shared, mut request: tiny_http::Request, port: u16) {
    let method = request.method().as_str().to_owned();
    let target = request.url().to_owned();
    let peer = request.remote_addr().copied();

    if let Some(declared) = request.body_length().filter(|n| *n > MAX_BODY_BYTES) {
        let outcome = Outcome {
            route: route_label(&method, &target),
            answer: too_large(),
            action: Action::Respond,
            fault: None,
        };
        record(shared, &outcome);
        refuse_declared_body(shared, request, &outcome.answer, declared, port, peer);
        return;
    }

    let mut body = Vec::new();
    let read = request
        .as_reader()
        .take(MAX_BODY_BYTES as u64 + 1)
        .read_to_end(&mut body);
    let early = match read {
        Err(_) => Some(Answer::invalid(
            "body",
            "the body could not be read (bad chunked encoding or a closed connection)",
        )),
        Ok(_) if body.len() > MAX_BODY_BYTES => Some(too_large()),
        Ok(_) => None,
    };
    if let Some(answer) = early {
        let outcome = Outcome {
            route: route_label(&method, &target),
            answer,
            action: Action::Respond,
            fault: None,
        };
        record(shared, &outcome);
        // The rest of the body stays unread: end the connection after this.
        if let Some(peer) = peer {
            socket::shutdown_connection(port, peer, Direction::Read);
        }
        let _ = request.respond(to_response(shared, &outcome.answer));
        return;
    }

    let header_pairs: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|h| {
            (
                h.field.as_str().as_str().to_owned(),
                h.value.as_str().to_owned(),
            )
        })
        .collect();
    let headers: Vec<(&str, &str)> = header_pairs
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let incoming = Incoming {
        method: &method,
        target: &target,
        headers: &headers,
        body: &body,
        peer,
    };
    let outcome =
        catch_unwind(AssertUnwindSafe(|| process(shared, &incoming))).unwrap_or_else(|_| Outcome {
            route: UNKNOWN_ROUTE,
            answer: Answer::error(
                500,
                "internal_error",
                "the mock failed while handling this request",
            ),
            action: Action::Respond,
            fault: None,
        });
    record(shared, &outcome);
    match outcome.action {
        Action::Respond => {
            let _ = request.respond(to_response(shared, &outcome.answer));
        }
        Action::Drop => {
            if let Some(peer) = peer {
                socket::shutdown_connection(port, peer, Direction::Both);
            }
            drop(request.into_writer());
        }
        Action::Delay(ms) => {
            let response = to_response(shared, &outcome.answer);
            let spawned = std::thread::Builder::new()
                .name("payidem-mock-delay".into())
                .spawn(move || {
                    std::thread::sleep(Duration::from_millis(ms));
                    let _ = request.respond(response);
                });
            if spawned.is_err() {
                // The request went down with the failed spawn, which makes
                // tiny_http answer 500: the delay fault still loses the answer.
            }
        }
    }
}

/// Refuses a request whose declared body is over the limit without reading
/// it, and ends its connection.
fn refuse_declared_body(
    shared: &Shared,
    request: tiny_http::Request,
    answer: &Answer,
    declared: usize,
    port: u16,
    peer: Option<SocketAddr>,
) {
    let Some(peer) = peer else {
        let _ = request.respond(to_response(shared, answer));
        return;
    };
    if declared <= MAX_DRAINABLE_BYTES {
        socket::shutdown_connection(port, peer, Direction::Read);
        let _ = request.respond(to_response(shared, answer));
        return;
    }
    let mut raw = format!(
        "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nContent-Length: {}\r\nDate: {}\r\nConnection: close\r\n\r\n",
        answer.body.len(),
        shared.clock.http_date()
    )
    .into_bytes();
    raw.extend_from_slice(&answer.body);
    if socket::send_and_close(port, peer, &raw) {
        // Dropping the request would make tiny_http allocate the whole
        // declared length; the connection is closed, so it is left behind.
        std::mem::forget(request);
    } else {
        let _ = request.respond(to_response(shared, answer));
    }
}
