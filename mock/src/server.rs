//! The HTTP server: one I/O thread owns every connection and a pool of
//! worker threads computes the answers.
//!
//! The I/O thread (`payidem-mock-io`) accepts, reads and writes with
//! non-blocking sockets and `poll(2)` (`WSAPoll` on Windows; see
//! [`crate::poll`]), and parses requests with `httparse`
//! (see [`crate::http`]). Only a request received in full (head and body,
//! within the limits) reaches a worker, and a worker never touches a socket:
//! it returns the bytes to write, so a slow or silent client costs a buffer,
//! never a worker. Every connection has a deadline (idle, request, write),
//! and a failing `accept()` (descriptors exhausted) closes the connection
//! idle the longest or pauses accepting for a moment; it never stops the
//! server.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use payidem::verifier::{Verifier, VerifierConfig};

use crate::answer::Answer;
use crate::clock::{ClockSetting, ServerClock};
use crate::config::{KeySpec, MockConfig, ServerLimits, MAX_BODY_BYTES};
use crate::faults::{FaultDice, FaultSettings};
use crate::handler::{process, Action, Incoming, Outcome, Shared, State, UNKNOWN_ROUTE};
use crate::http::{self, Parser, Progress, Refusal};
use crate::ledger::Ledger;
use crate::poll::{self, WakeEnd};
use crate::stats::Stats;
use crate::store::Store;

/// A running mock platform. Dropping it stops the workers and closes the
/// listening socket.
pub struct MockServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

pub(crate) fn build_verifier(config: &MockConfig) -> payidem::Result<Verifier> {
    let shards = if config.nonce_capacity < 1024 { 1 } else { 64 };
    let mut verifier = Verifier::with_replay_store(
        VerifierConfig {
            window_seconds: config.window_seconds,
            nonce_capacity_per_key: config.nonce_capacity,
            shards,
        },
        config.nonce_store.clone(),
    )?;
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
        let limits = &config.limits;
        if limits.max_connections == 0 {
            return Err(payidem::Error::invalid(
                "max_connections",
                "must be at least 1",
            ));
        }
        for (name, d) in [
            ("request_timeout", limits.request_timeout),
            ("idle_timeout", limits.idle_timeout),
            ("write_timeout", limits.write_timeout),
        ] {
            if d.is_zero() {
                return Err(payidem::Error::invalid(name, "must be longer than 0"));
            }
        }
        let verifier = build_verifier(&config)?;
        // A shared nonce store must answer, and must never evict a live
        // nonce, before this instance accepts anything.
        verifier.check_replay_store()?;
        let seed = config.seed.unwrap_or_else(random_seed);
        let bind = format!("{}:{}", config.host, config.port);
        let transport = |what: &str, e: std::io::Error| {
            payidem::Error::new(payidem::ErrorCode::Transport, format!("{what}: {e}"))
        };
        let listener = TcpListener::bind(bind.as_str())
            .map_err(|e| transport(&format!("cannot bind {bind}"), e))?;
        poll::raise_backlog(&listener);
        listener
            .set_nonblocking(true)
            .map_err(|e| transport("cannot configure the listener", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| transport("the listener has no address", e))?;
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
        let stop = Arc::new(AtomicBool::new(false));
        let (wake_rx, wake_tx) =
            poll::wake_pair().map_err(|e| transport("cannot create the waker", e))?;
        for end in [&wake_rx, &wake_tx] {
            end.set_nonblocking(true)
                .map_err(|e| transport("cannot configure the waker", e))?;
        }
        let waker = Arc::new(Waker(wake_tx));
        let (job_tx, job_rx) = mpsc::channel::<Job>();
        let (reply_tx, reply_rx) = mpsc::channel::<Reply>();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let spawn_error = |e: std::io::Error| transport("cannot spawn a thread", e);
        let mut threads = Vec::with_capacity(config.workers + 1);
        let server = |threads: Vec<JoinHandle<()>>| MockServer {
            shared: Arc::clone(&shared),
            addr,
            stop: Arc::clone(&stop),
            waker: Arc::clone(&waker),
            threads,
        };
        for i in 0..config.workers {
            let (shared, jobs, replies, waker) = (
                Arc::clone(&shared),
                Arc::clone(&job_rx),
                reply_tx.clone(),
                Arc::clone(&waker),
            );
            match std::thread::Builder::new()
                .name(format!("payidem-mock-{i}"))
                .spawn(move || worker(&shared, &jobs, &replies, &waker))
            {
                Ok(t) => threads.push(t),
                Err(e) => {
                    // Dropping the server with the threads started so far
                    // stops them.
                    drop(job_tx);
                    drop(server(threads));
                    return Err(spawn_error(e));
                }
            }
        }
        drop(reply_tx);
        let io = Io {
            shared: Arc::clone(&shared),
            listener,
            wake: wake_rx,
            stop: Arc::clone(&stop),
            limits: config.limits,
            jobs: job_tx,
            replies: reply_rx,
            conns: HashMap::new(),
            next_id: 0,
            accept_paused_until: None,
        };
        match std::thread::Builder::new()
            .name("payidem-mock-io".into())
            .spawn(move || io.run())
        {
            Ok(t) => threads.push(t),
            Err(e) => {
                drop(server(threads));
                return Err(spawn_error(e));
            }
        }
        Ok(server(threads))
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

    /// Waits until `ready` holds of the stats, up to `limit`; `false` when
    /// it never did (a test's way to wait for a request to arrive).
    pub fn wait_for_stats(&self, limit: Duration, ready: impl Fn(&Stats) -> bool) -> bool {
        let give_up = Instant::now() + limit;
        loop {
            if ready(&self.stats()) {
                return true;
            }
            if Instant::now() >= give_up {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
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
        self.waker.wake();
        // The I/O thread exits first and drops the job queue, which ends the
        // workers.
        for t in self.threads.drain(..).rev() {
            let _ = t.join();
        }
    }
}

/// Wakes the I/O thread out of `poll(2)`.
struct Waker(WakeEnd);

impl Waker {
    fn wake(&self) {
        // Non-blocking: a full pipe already means a wake-up is pending.
        let _ = (&self.0).write(&[1]);
    }
}

/// A request received in full, for a worker.
struct Job {
    conn: u64,
    peer: SocketAddr,
    request: http::Request,
}

/// What to do with a connection once its request is answered.
enum Deliver {
    /// Write these bytes (at once, or not before the instant).
    Write(Vec<u8>, Option<Instant>),
    /// Close the connection without an answer.
    Drop,
}

/// A worker's answer to a [`Job`].
struct Reply {
    conn: u64,
    deliver: Deliver,
    close: bool,
}

fn worker(shared: &Shared, jobs: &Mutex<Receiver<Job>>, replies: &Sender<Reply>, waker: &Waker) {
    loop {
        let job = {
            let queue = jobs.lock().unwrap_or_else(|p| p.into_inner());
            queue.recv()
        };
        let Ok(job) = job else { return };
        let conn = job.conn;
        let reply =
            catch_unwind(AssertUnwindSafe(|| answer_job(shared, job))).unwrap_or_else(|_| {
                let answer =
                    Answer::error(500, "internal_error", "the mock failed while answering");
                Reply {
                    conn,
                    deliver: Deliver::Write(
                        http::serialize(&answer, &shared.clock.http_date(), true),
                        None,
                    ),
                    close: true,
                }
            });
        if replies.send(reply).is_err() {
            return;
        }
        waker.wake();
    }
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

fn route_label(method: &str, target: &str) -> &'static str {
    crate::routes::route(method, target).map_or(UNKNOWN_ROUTE, |r| r.label())
}

/// Handles one complete request from `peer` (none: an in-process caller).
pub(crate) fn process_request(
    shared: &Shared,
    request: &http::Request,
    peer: Option<SocketAddr>,
) -> Outcome {
    let headers: Vec<(&str, &str)> = request
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let incoming = Incoming {
        method: &request.method,
        target: &request.target,
        headers: &headers,
        body: &request.body,
        peer,
    };
    process(shared, &incoming)
}

fn answer_job(shared: &Shared, job: Job) -> Reply {
    let request = &job.request;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        process_request(shared, request, Some(job.peer))
    }))
    .unwrap_or_else(|_| Outcome {
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
    let close = request.close;
    let bytes = || http::serialize(&outcome.answer, &shared.clock.http_date(), close);
    let deliver = match outcome.action {
        Action::Respond => Deliver::Write(bytes(), None),
        Action::Drop => Deliver::Drop,
        Action::Delay(ms) => Deliver::Write(
            bytes(),
            Instant::now().checked_add(Duration::from_millis(ms)),
        ),
    };
    Reply {
        conn: job.conn,
        deliver,
        close,
    }
}

/// How long a closing connection keeps discarding what its client still
/// sends, so the client can read the answer before the close resets it.
const LINGER: Duration = Duration::from_secs(2);
/// Most bytes discarded while lingering.
const LINGER_BYTES: usize = 4 << 20;
/// Most bytes read from one connection per turn, so no client starves the
/// others.
const READ_TURN: usize = 256 * 1024;
/// Most connections accepted per turn.
const ACCEPT_TURN: usize = 128;
/// How long accepting pauses when `accept()` fails and no idle connection
/// can be closed to make room.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// Longest sleep in `poll(2)`; the stop flag is also checked this often.
const MAX_POLL: Duration = Duration::from_millis(250);
/// Largest buffer of one request (head, body and chunk framing).
const MAX_BUFFERED: usize = http::MAX_HEAD_BYTES + 4 * MAX_BODY_BYTES;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Kept alive, no request under way.
    Idle,
    /// Some bytes of a request received.
    Reading,
    /// A worker has the request.
    Busy,
    /// Writing `out`.
    Writing,
    /// Answered and shut for writing; discarding input until EOF.
    Lingering,
}

struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    phase: Phase,
    inbuf: Vec<u8>,
    parser: Parser,
    out: Vec<u8>,
    written: usize,
    /// `out` is the interim `100 Continue`, not the answer.
    interim: bool,
    /// Close once `out` is written.
    close_after: bool,
    /// `out` is not written before this.
    not_before: Option<Instant>,
    /// When the current phase times out.
    deadline: Instant,
    discarded: usize,
    /// When the connection last became idle (eviction order).
    idle_since: Instant,
    closed: bool,
}

struct Io {
    shared: Arc<Shared>,
    listener: TcpListener,
    wake: WakeEnd,
    stop: Arc<AtomicBool>,
    limits: ServerLimits,
    jobs: Sender<Job>,
    replies: Receiver<Reply>,
    conns: HashMap<u64, Conn>,
    next_id: u64,
    accept_paused_until: Option<Instant>,
}

fn far(now: Instant, d: Duration) -> Instant {
    now.checked_add(d)
        .unwrap_or(now + Duration::from_secs(86_400 * 365))
}

impl Conn {
    fn new(stream: TcpStream, peer: SocketAddr, limits: &ServerLimits, now: Instant) -> Conn {
        Conn {
            stream,
            peer,
            phase: Phase::Idle,
            inbuf: Vec::new(),
            parser: Parser::default(),
            out: Vec::new(),
            written: 0,
            interim: false,
            close_after: false,
            not_before: None,
            deadline: far(now, limits.idle_timeout),
            discarded: 0,
            idle_since: now,
            closed: false,
        }
    }

    fn queue(
        &mut self,
        bytes: Vec<u8>,
        not_before: Option<Instant>,
        limits: &ServerLimits,
        now: Instant,
    ) {
        self.out = bytes;
        self.written = 0;
        self.interim = false;
        self.not_before = not_before;
        self.phase = Phase::Writing;
        self.deadline = far(not_before.unwrap_or(now).max(now), limits.write_timeout);
    }

    fn close(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Both);
        self.closed = true;
    }

    /// Turns the bytes received into the next step: a job, an answer to
    /// write, or more waiting.
    fn advance(&mut self, io: &IoCtx<'_>, id: u64, now: Instant) {
        if self.phase != Phase::Idle && self.phase != Phase::Reading {
            return;
        }
        if self.inbuf.is_empty() && self.parser.at_start() {
            return;
        }
        if self.phase == Phase::Idle {
            self.phase = Phase::Reading;
            self.deadline = far(now, io.limits.request_timeout);
        }
        match self.parser.advance(&self.inbuf) {
            Progress::Partial => {
                if self.inbuf.len() > MAX_BUFFERED {
                    self.refuse(
                        io,
                        Refusal::BadRequest("the request framing is too large"),
                        now,
                    );
                } else if self.parser.owes_continue() {
                    self.out = http::CONTINUE.to_vec();
                    self.written = 0;
                    self.interim = true;
                    self.not_before = None;
                    self.phase = Phase::Writing;
                }
            }
            Progress::Complete(request, used) => {
                self.inbuf.drain(..used);
                self.close_after = request.close;
                self.phase = Phase::Busy;
                let job = Job {
                    conn: id,
                    peer: self.peer,
                    request,
                };
                if io.jobs.send(job).is_err() {
                    self.close();
                }
            }
            Progress::Refused(refusal) => self.refuse(io, refusal, now),
        }
    }

    fn refuse(&mut self, io: &IoCtx<'_>, refusal: Refusal, now: Instant) {
        let answer = refusal.answer();
        if let Refusal::BodyTooLarge { method, target } = &refusal {
            record(
                io.shared,
                &Outcome {
                    route: route_label(method, target),
                    answer: answer.clone(),
                    action: Action::Respond,
                    fault: None,
                },
            );
        }
        self.inbuf = Vec::new();
        self.parser = Parser::default();
        self.close_after = true;
        self.queue(
            http::serialize(&answer, &io.shared.clock.http_date(), true),
            None,
            io.limits,
            now,
        );
    }

    fn read(&mut self, io: &IoCtx<'_>, id: u64, now: Instant) {
        let mut buf = [0u8; 64 * 1024];
        let mut turn = 0;
        while turn < READ_TURN {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    // The client is gone (or half-closed with no request
                    // left to answer).
                    self.close();
                    return;
                }
                Ok(n) => {
                    turn += n;
                    if self.phase == Phase::Lingering {
                        self.discarded += n;
                        if self.discarded > LINGER_BYTES {
                            self.close();
                            return;
                        }
                        continue;
                    }
                    self.inbuf.extend_from_slice(&buf[..n]);
                    // Parse as we go, so a huge head is refused after its
                    // first 64 KiB, not after all of it arrived.
                    self.advance(io, id, now);
                    if self.phase != Phase::Reading && self.phase != Phase::Idle {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.close();
                    return;
                }
            }
        }
    }

    fn write(&mut self, io: &IoCtx<'_>, id: u64, now: Instant) {
        if self.not_before.is_some_and(|t| t > now) {
            return;
        }
        while self.written < self.out.len() {
            match self.stream.write(&self.out[self.written..]) {
                Ok(0) => {
                    self.close();
                    return;
                }
                Ok(n) => self.written += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.close();
                    return;
                }
            }
        }
        self.out = Vec::new();
        self.written = 0;
        if self.interim {
            // `100 Continue` sent: back to reading the body.
            self.interim = false;
            self.phase = Phase::Reading;
            return;
        }
        if self.close_after {
            let _ = self.stream.shutdown(Shutdown::Write);
            self.phase = Phase::Lingering;
            self.deadline = far(now, LINGER);
            self.inbuf = Vec::new();
            return;
        }
        self.phase = Phase::Idle;
        self.idle_since = now;
        self.deadline = far(now, io.limits.idle_timeout);
        // A pipelined request may already be buffered.
        self.advance(io, id, now);
    }

    /// What `poll(2)` should wait for, if anything.
    fn interest(&self, now: Instant) -> poll::Events {
        match self.phase {
            Phase::Idle | Phase::Reading | Phase::Lingering => poll::READABLE,
            Phase::Writing if self.not_before.is_some_and(|t| t > now) => 0,
            Phase::Writing => poll::WRITABLE,
            Phase::Busy => 0,
        }
    }

    /// The next instant this connection needs attention without I/O.
    fn wake_at(&self) -> Option<Instant> {
        match self.phase {
            Phase::Busy => None,
            Phase::Writing => Some(match self.not_before {
                Some(t) => t.min(self.deadline),
                None => self.deadline,
            }),
            _ => Some(self.deadline),
        }
    }

    fn on_timer(&mut self, io: &IoCtx<'_>, id: u64, now: Instant) {
        if self.phase == Phase::Busy {
            return;
        }
        if self.phase == Phase::Writing
            && self.not_before.is_some_and(|t| t <= now)
            && self.written == 0
        {
            self.not_before = None;
            self.write(io, id, now);
            return;
        }
        if now < self.deadline {
            return;
        }
        match self.phase {
            Phase::Reading => {
                let answer = Answer::error(
                    408,
                    "request_timeout",
                    format!(
                        "the request did not arrive in full within {} ms",
                        io.limits.request_timeout.as_millis()
                    ),
                );
                self.inbuf = Vec::new();
                self.parser = Parser::default();
                self.close_after = true;
                self.queue(
                    http::serialize(&answer, &io.shared.clock.http_date(), true),
                    None,
                    io.limits,
                    now,
                );
                self.write(io, id, now);
            }
            _ => self.close(),
        }
    }
}

/// What a connection needs from the I/O thread while it is borrowed.
struct IoCtx<'a> {
    shared: &'a Shared,
    limits: &'a ServerLimits,
    jobs: &'a Sender<Job>,
}

impl Io {
    fn run(mut self) {
        let mut fds: Vec<poll::PollFd> = Vec::new();
        let mut ids: Vec<u64> = Vec::new();
        while !self.stop.load(Ordering::SeqCst) {
            let now = Instant::now();
            fds.clear();
            ids.clear();
            fds.push(poll::entry(&self.wake, poll::READABLE));
            let accepting = self.accept_paused_until.is_none_or(|t| t <= now);
            if accepting {
                self.accept_paused_until = None;
            }
            fds.push(poll::entry(
                &self.listener,
                if accepting { poll::READABLE } else { 0 },
            ));
            let mut next = far(now, MAX_POLL);
            if let Some(t) = self.accept_paused_until {
                next = next.min(t);
            }
            for (id, conn) in &self.conns {
                let events = conn.interest(now);
                if events != 0 {
                    fds.push(poll::entry(&conn.stream, events));
                    ids.push(*id);
                }
                if let Some(t) = conn.wake_at() {
                    next = next.min(t);
                }
            }
            let timeout = next.saturating_duration_since(now).as_millis().min(1_000) as i32;
            // Round up so a deadline is not polled for again just before it.
            let timeout = if next > now { timeout.max(1) } else { 0 };
            if let Err(e) = poll::poll(&mut fds, timeout) {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    std::thread::sleep(Duration::from_millis(10));
                }
                continue;
            }
            let now = Instant::now();
            if poll::revents(&fds[0]) != 0 {
                let mut sink = [0u8; 256];
                while matches!((&self.wake).read(&mut sink), Ok(n) if n > 0) {}
            }
            if poll::revents(&fds[1]) != 0 {
                self.accept(now);
            }
            let ctx = IoCtx {
                shared: &self.shared,
                limits: &self.limits,
                jobs: &self.jobs,
            };
            for (pfd, id) in fds[2..].iter().zip(&ids) {
                let revents = poll::revents(pfd);
                if revents == 0 {
                    continue;
                }
                let Some(conn) = self.conns.get_mut(id) else {
                    continue;
                };
                if revents & poll::INVALID != 0 {
                    conn.closed = true;
                } else if revents & poll::WRITABLE != 0 {
                    conn.write(&ctx, *id, now);
                } else {
                    // POLLIN, POLLHUP or POLLERR: a read tells which.
                    conn.read(&ctx, *id, now);
                }
            }
            while let Ok(reply) = self.replies.try_recv() {
                let Some(conn) = self.conns.get_mut(&reply.conn) else {
                    continue;
                };
                match reply.deliver {
                    Deliver::Drop => conn.close(),
                    Deliver::Write(bytes, not_before) => {
                        conn.close_after |= reply.close;
                        conn.queue(bytes, not_before, ctx.limits, now);
                        conn.write(&ctx, reply.conn, now);
                    }
                }
            }
            for (id, conn) in self.conns.iter_mut() {
                if !conn.closed {
                    conn.on_timer(&ctx, *id, now);
                }
            }
            self.conns.retain(|_, c| !c.closed);
        }
    }

    /// Closes the connection idle the longest, if any; returns whether one
    /// was closed.
    fn evict_idle(&mut self) -> bool {
        let oldest = self
            .conns
            .iter()
            .filter(|(_, c)| c.phase == Phase::Idle && !c.closed)
            .min_by_key(|(_, c)| c.idle_since)
            .map(|(id, _)| *id);
        match oldest.and_then(|id| self.conns.remove(&id)) {
            Some(mut conn) => {
                conn.close();
                true
            }
            None => false,
        }
    }

    fn accept(&mut self, now: Instant) {
        for _ in 0..ACCEPT_TURN {
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let _ = stream.set_nodelay(true);
                    if self.conns.len() >= self.limits.max_connections && !self.evict_idle() {
                        // Full of requests under way: refuse this one.
                        let _ = stream.shutdown(Shutdown::Both);
                        continue;
                    }
                    let id = self.next_id;
                    self.next_id += 1;
                    self.conns
                        .insert(id, Conn::new(stream, peer, &self.limits, now));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if poll::is_resource_exhaustion(&e) => {
                    // Out of descriptors: make room by closing the
                    // connection idle the longest, or wait a moment.
                    if !self.evict_idle() {
                        self.accept_paused_until = Some(far(now, ACCEPT_BACKOFF));
                        return;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionAborted
                            | std::io::ErrorKind::ConnectionReset
                            | std::io::ErrorKind::Interrupted
                    ) => {}
                Err(_) => {
                    self.accept_paused_until = Some(far(now, ACCEPT_BACKOFF));
                    return;
                }
            }
        }
    }
}
