//! The blocking client: runs operations to a settled outcome over HTTP,
//! keeping every operation's key and frozen body in a durable journal.

mod call;
mod config;
mod events;
pub mod metrics;
mod target;
mod transport;

pub use crate::policy::{RetryBudget, RetryBudgetConfig};
pub use call::{Call, CallStep, CallStepKind};
pub use config::{ClientConfig, JournalChoice, DEFAULT_MAX_CLOCK_OFFSET};
pub use events::{
    attempt_level, call_end_level, AttemptEvent, CallEndEvent, Event, EventHook, EventListener,
    JournalFailureEvent, LogLevel,
};
#[doc(hidden)]
pub use transport::LiteralResolver;

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::{Error, ErrorCode, Result};
use crate::journal::{
    Journal, JournalKey, JournalScope, Lease, Opened, OperationRecord, OutboxInsert, ParamStyle,
    PostgresJournal,
};
use crate::operation::{
    CallLimits, CallSetup, End, FrozenOperation, Operation, OperationSpec, OperationState, Outcome,
    Progress, Reply, Response,
};
use crate::policy::ClockOffset;
use crate::protocol::Signer;
use metrics::JournalWrite;
use transport::HttpTransport;

/// The largest response body a call reads from one answer; a longer body
/// counts as a lost answer (the attempt may have landed). Callers that send
/// attempts with their own HTTP client apply the same bound.
pub const MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;

/// The most idle connections to the platform a client keeps open for reuse
/// (every caller thread can then find one kept alive, up to this many).
pub const MAX_IDLE_CONNECTIONS: usize = 64;

/// Options of one call.
#[derive(Clone, Copy, Default)]
pub struct CallOptions<'a> {
    /// Polled before every attempt and during waits; returning `true` ends
    /// the call with `cancelled` (the operation keeps its key).
    pub cancel: Option<&'a (dyn Fn() -> bool + Sync)>,
    /// A deadline for this call shorter than the client's retry deadline.
    pub deadline: Option<Duration>,
}

impl std::fmt::Debug for CallOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("cancel", &self.cancel.is_some())
            .field("deadline", &self.deadline)
            .finish()
    }
}

/// Runs business operations against the platform, one key per operation,
/// however the network and the process misbehave.
///
/// `Send + Sync`, and cheap to clone (clones share everything): one client
/// serves any number of threads. Two calls (in this or another process
/// sharing the journal) never drive the same operation at once; the second
/// gets `operation_busy`.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
}

/// What every call of a client shares.
pub(crate) struct Shared {
    signer: Signer,
    journal: Arc<dyn Journal>,
    transport: HttpTransport,
    limits: CallLimits,
    request_timeout: Duration,
    settled_retention: Duration,
    /// How long a lease holds past a write, beyond the request timeout.
    lease_ttl: Duration,
    /// How often a call renews its lease (see [`ClientConfig::lease_heartbeat`]).
    lease_heartbeat: Duration,
    budget: Arc<RetryBudget>,
    clock_offset: AtomicI64,
    /// The platform's origin (`scheme://host:port`): the journal keeps the
    /// learnt clock offset under it.
    platform: String,
    /// The client's journal when it is PostgreSQL (outbox inserts carry
    /// MACs bound to it).
    postgres: Option<Arc<PostgresJournal>>,
    /// This client instance's random id, part of every lease owner id.
    instance: String,
    calls: AtomicU64,
    hook: events::Slot<dyn Fn(&AttemptEvent) + Send + Sync>,
    /// Metrics and the event listener.
    observer: events::Observer,
    /// Leases of this client's ended calls that the journal failed to
    /// release, by order id: the next call of the operation takes the
    /// lease over instead of waiting for it to expire.
    orphan_leases: Mutex<HashMap<String, Lease>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base_url", &self.shared.transport)
            .field("signer", &self.shared.signer)
            .field("limits", &self.shared.limits)
            .finish_non_exhaustive()
    }
}

pub(crate) fn unix_now() -> u64 {
    #[cfg(feature = "sim")]
    if let Some(now) = crate::sim::clock() {
        return now;
    }
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Shared {
    fn clock_offset(&self) -> ClockOffset {
        ClockOffset::from_seconds(self.clock_offset.load(Ordering::Relaxed))
    }

    /// Shares an offset a call has just learnt from the platform. A call
    /// that learnt nothing never writes: it may have started before another
    /// call learnt a newer one.
    fn learn_clock_offset(&self, offset: ClockOffset) {
        self.clock_offset.store(offset.seconds(), Ordering::Relaxed);
        // Kept for the next process; an optimisation, so a failure is ignored.
        let _ = self
            .journal
            .save_clock_offset(&crate::journal::StoredClockOffset {
                platform: self.platform.clone(),
                offset_secs: offset.seconds(),
                measured_at: unix_now(),
            });
    }

    /// How many seconds past a lease write the lease holds.
    fn lease_span_secs(&self) -> u64 {
        crate::journal::lease_span_secs(self.lease_ttl, self.request_timeout)
    }

    /// Keeps `lease` of a call whose end the journal could not store nor
    /// release, for this client's next call of `order_id`.
    fn keep_orphan_lease(&self, order_id: &str, lease: &Lease) {
        self.orphan_leases
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(order_id.to_owned(), lease.clone());
    }

    /// Opens or claims `order_id` with a new lease, or with the lease an
    /// earlier call of this client left behind (see
    /// [`Shared::keep_orphan_lease`]), which is dropped once the journal
    /// answers.
    fn with_lease_for<T>(
        &self,
        order_id: &str,
        now: u64,
        take: impl FnOnce(&Lease) -> Result<T>,
    ) -> Result<(T, Lease)> {
        let orphan = self
            .orphan_leases
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(order_id)
            .cloned();
        let Some(mut lease) = orphan else {
            let lease = self.new_lease(now);
            return take(&lease).map(|t| (t, lease));
        };
        lease.expires_at = now.saturating_add(self.lease_span_secs());
        let taken = take(&lease)?;
        self.orphan_leases
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(order_id);
        Ok((taken, lease))
    }

    fn new_lease(&self, now: u64) -> Lease {
        let call = self.calls.fetch_add(1, Ordering::Relaxed);
        Lease {
            owner: crate::journal::process_owner(&self.instance, call),
            expires_at: now.saturating_add(self.lease_span_secs()),
        }
    }

    fn emit(&self, event: &events::AttemptEvent) {
        self.observer.attempt(event);
        self.hook.call(|| event, |hook, event| hook(event));
    }
}

impl Client {
    /// A client for `config`, signing with `secret` (16..=1024 bytes; kept
    /// only as keyed MAC state, wiped on drop). Opens (or creates) the
    /// journal and purges settled operations older than the retention.
    pub fn new(config: ClientConfig, secret: &[u8]) -> Result<Client> {
        let signer = Signer::new(&config.key_id, secret)?;
        let limits = CallLimits {
            policy: config.retry,
            key_retention_secs: config.key_retention.as_secs(),
            max_clock_offset: config.max_clock_offset,
        };
        limits.check()?;
        let (lease_ttl, lease_heartbeat) = config.lease_timing()?;
        if config.request_timeout.is_zero() {
            return Err(Error::invalid(
                "request_timeout",
                "must be longer than zero",
            ));
        }
        if config.connect_timeout.is_zero() {
            return Err(Error::invalid(
                "connect_timeout",
                "must be longer than zero",
            ));
        }
        let transport = HttpTransport::new(&config)?;
        let journal_key = match &config.journal_key {
            Some(key) => key.clone(),
            None => JournalKey::derive_from_secret(secret),
        };
        let platform = crate::journal::platform_origin(&transport.url(""));
        // The journal refuses an order id made for another platform or key id.
        let scope = JournalScope {
            platform: platform.clone(),
            key_id: config.key_id.clone(),
        };
        let opened = crate::journal::open(
            &config.journal,
            crate::journal::JournalOpenOptions {
                journal_key: Some(journal_key.clone()),
                scope: Some(scope.clone()),
                ..crate::journal::JournalOpenOptions::default()
            },
        )?;
        let (journal, postgres) = (opened.journal, opened.postgres);
        // The offset a previous process learnt, when fresh and believable.
        let stored_offset = transport
            .clock_trusted()
            .then(|| {
                crate::journal::usable_stored_offset(
                    journal.as_ref(),
                    &platform,
                    unix_now(),
                    config.max_clock_offset,
                )
            })
            .flatten()
            .map_or(0, |o| o.offset_secs);
        let mut instance = [0u8; 8];
        crate::protocol::nonce::fill_random(&mut instance);
        let client = Client {
            shared: Arc::new(Shared {
                signer,
                journal,
                transport,
                limits,
                request_timeout: config.request_timeout,
                settled_retention: config.settled_retention,
                lease_ttl,
                lease_heartbeat,
                budget: Arc::new(RetryBudget::new(config.retry_budget)),
                clock_offset: AtomicI64::new(stored_offset),
                platform,
                postgres,
                instance: format!("{:016x}", u64::from_ne_bytes(instance)),
                calls: AtomicU64::new(0),
                hook: events::Slot::new(),
                observer: events::Observer::new(),
                orphan_leases: Mutex::new(HashMap::new()),
            }),
        };
        // A PostgreSQL journal still unreachable (connected lazily) is
        // purged by the next client that finds it up.
        let reachable = client.shared.postgres.as_ref();
        if reachable.is_none_or(|journal| journal.is_connected()) {
            client.purge_settled()?;
        }
        Ok(client)
    }

    /// The client with `hook` receiving every attempt's event (also for the
    /// clones that share it).
    pub fn with_event_hook(self, hook: EventHook) -> Client {
        self.shared.hook.set(Some(hook));
        self
    }

    /// The key id this client signs with.
    pub fn key_id(&self) -> &str {
        self.shared.signer.key_id()
    }

    /// The shared retry budget.
    pub fn retry_budget(&self) -> &RetryBudget {
        &self.shared.budget
    }

    /// The clock offset learnt from the platform, applied to every attempt.
    pub fn clock_offset(&self) -> ClockOffset {
        self.shared.clock_offset()
    }

    /// The URL an attempt's request target is sent to (the base URL's
    /// origin followed by `path`, which already holds the base URL's path
    /// prefix), for callers that send attempts with their own HTTP client.
    pub fn url(&self, path: &str) -> String {
        self.shared.transport.url(path)
    }

    /// The request target of the absolute `url` relative to the base URL
    /// (its path below the base URL's path prefix, with its query): the
    /// path an HTTP adapter begins an operation with. Scheme and host
    /// compare without case and a default port equals no port; a URL with
    /// credentials, another origin or a path outside the prefix is
    /// `invalid_argument` naming `url`, so a signed request is never sent
    /// elsewhere.
    pub fn target_of(&self, url: &str) -> Result<String> {
        self.shared.transport.target_of(url)
    }

    /// Runs the operation to a settled outcome.
    ///
    /// The spec is checked before anything is journaled or sent. An order id
    /// already in the journal with the same request continues that operation
    /// (a settled one answers from the journal, without any network call); with
    /// another request it fails with `idempotency_conflict` and changes
    /// nothing. Errors (their codes say whether the operation is final, see
    /// [`ErrorCode::is_final`]): `rejected` (status, body), `idempotency_conflict`,
    /// `key_expired`, `refused` (status, body; nothing happened),
    /// `outcome_unknown` (resumable, key kept), `transport_error` (nothing
    /// reached the platform; key kept), `operation_busy`, `journal_error`,
    /// `invalid_argument`.
    pub fn execute(&self, spec: &OperationSpec<'_>) -> Result<Outcome> {
        self.execute_with(spec, CallOptions::default())
    }

    /// [`Client::execute`] with per-call options (cancellation, deadline).
    pub fn execute_with(
        &self,
        spec: &OperationSpec<'_>,
        options: CallOptions<'_>,
    ) -> Result<Outcome> {
        let call = self.begin(spec, options.deadline)?;
        self.drive(call, options)
    }

    /// Starts a call of the operation for a caller that sends the attempts
    /// with its own HTTP client: the same checks, journal and steps as
    /// [`Client::execute`], which is this plus sending with the client's
    /// transport. `deadline` shortens the client's retry deadline.
    pub fn begin(&self, spec: &OperationSpec<'_>, deadline: Option<Duration>) -> Result<Call> {
        let operation = self.freeze(spec)?;
        let now = unix_now();
        let (opened, lease) = self
            .shared
            .with_lease_for(&operation.order_id, now, |lease| {
                // Recorded in flight with its first attempt: the call sends
                // it without a second write.
                let open = || self.shared.journal.open_to_send(&operation, lease, now);
                let order_id = &operation.order_id;
                self.shared
                    .observer
                    .journal(JournalWrite::Open, order_id, open)
            })?;
        self.call_for(opened, lease, deadline)
    }

    /// The operation `spec` names, frozen as this client journals it (the
    /// base URL's path prefix in its paths, the key defaulted): what
    /// [`Client::execute`] would record, for a caller that records it
    /// itself (see [`Client::outbox_insert`]). Checks the spec like
    /// `execute`; nothing is journaled or sent.
    pub fn freeze(&self, spec: &OperationSpec<'_>) -> Result<FrozenOperation> {
        // The base URL's path prefix is part of the request target, so of
        // the signature and of the journaled operation.
        crate::protocol::fields::check_path(spec.path)?;
        if let Some(status_path) = spec.status_path {
            crate::protocol::fields::check_path(status_path)
                .map_err(|e| Error::invalid("status_path", e.message()))?;
        }
        let transport = &self.shared.transport;
        let path = transport.target(spec.path);
        let status_path = spec.status_path.map(|p| transport.target(p));
        let spec = OperationSpec {
            path: &path,
            status_path: status_path.as_deref(),
            ..*spec
        };
        spec.freeze()
    }

    /// The SQL statement and parameters that record `spec`'s operation as
    /// pending in a PostgreSQL journal's tables, for the caller to run in
    /// its own database transaction together with its business rows (the
    /// outbox): committed together or not at all. Any client on that
    /// journal later sends it with [`Client::take_over`], with its key and
    /// body unchanged. `style` picks the placeholders (`$1` or `%s`). The
    /// row is for this client's PostgreSQL journal: it carries its MACs
    /// bound to that journal, under this client's journal key, platform and
    /// key id, so the instances taking it over must use the same ones.
    /// `invalid_argument` (`journal`) when the client's journal is not
    /// PostgreSQL.
    pub fn outbox_insert(
        &self,
        spec: &OperationSpec<'_>,
        style: ParamStyle,
    ) -> Result<OutboxInsert> {
        let operation = self.freeze(spec)?;
        let Some(journal) = &self.shared.postgres else {
            return Err(Error::invalid(
                "journal",
                "outbox inserts are for a client whose journal is PostgreSQL (postgres://…)",
            ));
        };
        journal.outbox_insert_keyed(&operation, style, unix_now())
    }

    /// Takes over and drives up to `limit` unsettled operations that no
    /// live call holds (leases free or expired, outbox inserts), one after
    /// the other, oldest first, each with its own key and body; returns
    /// each order id with its result. Several clients (instances of a
    /// fleet, a sidecar, a cron job) may run it at once on one journal:
    /// each operation is taken by one of them ([`Journal::claim_next`]).
    /// Stops early when nothing is left to take. `Err` only when the
    /// journal cannot be asked.
    pub fn take_over(&self, limit: usize) -> Result<Vec<(String, Result<Outcome>)>> {
        let mut done = Vec::new();
        while done.len() < limit {
            let now = unix_now();
            let lease = self.shared.new_lease(now);
            let Some(opened) = self.shared.journal.claim_next(&lease, now)? else {
                break;
            };
            let order_id = match &opened {
                Opened::Created(r) | Opened::Resumable(r) | Opened::Settled(r) => {
                    r.operation.order_id.clone()
                }
            };
            let result = self
                .call_for(opened, lease, None)
                .and_then(|call| self.drive(call, CallOptions::default()));
            done.push((order_id, result));
        }
        Ok(done)
    }

    /// Runs [`Client::take_over`] in a loop for a sidecar or a worker
    /// thread: batches of up to `batch` operations (0 counts as 1),
    /// sleeping `idle` when there was nothing to take — at most
    /// [`Client::takeover_poll`], so that an operation whose holder died is
    /// picked up within one poll of its lease lapsing, however long `idle`
    /// is; an `idle` of zero sleeps the whole poll, so the loop never spins
    /// on the journal — until `stop` answers `true` (polled between
    /// operations and during the sleep). A journal error is retried after
    /// the same sleep (the database may be restarting). Returns how many
    /// operations it drove.
    pub fn take_over_loop(
        &self,
        batch: usize,
        idle: Duration,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> u64 {
        let poll = self.takeover_poll();
        let idle = if idle.is_zero() { poll } else { idle.min(poll) };
        let mut driven = 0u64;
        while !stop() {
            match self.take_over(batch.max(1)) {
                Ok(done) if !done.is_empty() => driven += done.len() as u64,
                _ => {
                    if !sleep_unless_cancelled(idle, stop) {
                        break;
                    }
                }
            }
        }
        driven
    }

    /// The longest a takeover loop sleeps between looks for operations to
    /// take over: the lease heartbeat ([`ClientConfig::lease_heartbeat`],
    /// a third of the lease ttl by default), derived from the lease
    /// settings so that takeover follows a lapse within a fraction of the
    /// lease.
    pub fn takeover_poll(&self) -> Duration {
        self.shared.lease_heartbeat
    }

    /// Starts a call resuming an unsettled operation of the journal, for a
    /// caller that sends with its own HTTP client (see [`Client::begin`]).
    pub fn begin_resume(&self, order_id: &str, deadline: Option<Duration>) -> Result<Call> {
        crate::protocol::fields::check_order_id(order_id)?;
        let now = unix_now();
        let (opened, lease) = self.shared.with_lease_for(order_id, now, |lease| {
            let claim = || self.shared.journal.claim(order_id, lease, now);
            self.shared
                .observer
                .journal(JournalWrite::Claim, order_id, claim)
        })?;
        self.call_for(opened, lease, deadline)
    }

    fn call_for(&self, opened: Opened, lease: Lease, deadline: Option<Duration>) -> Result<Call> {
        let created = matches!(opened, Opened::Created(_));
        let record = match opened {
            Opened::Settled(record) => {
                let op = &record.operation;
                return Ok(Call::done(
                    Arc::clone(&self.shared),
                    &op.order_id,
                    &op.idempotency_key,
                    End::from_settled(record.state, record.response.as_ref()),
                    settled_result(&record),
                ));
            }
            Opened::Created(record) | Opened::Resumable(record) => record,
        };
        // `open_to_send` recorded a new operation's first attempt, which
        // this call sends (or takes back, if it ends first).
        let progress = Progress {
            first_recorded: created && record.state == OperationState::InFlight,
            ..record.progress()
        };
        let mut limits = self.shared.limits;
        if let Some(deadline) = deadline {
            limits.policy.deadline = limits
                .policy
                .deadline
                .min(deadline.max(Duration::from_millis(1)));
        }
        let setup = CallSetup {
            limits,
            clock: self.shared.clock_offset(),
            clock_trusted: self.shared.transport.clock_trusted(),
            budget: Some(Arc::clone(&self.shared.budget)),
        };
        let op = &record.operation;
        match Operation::start(op, progress, setup, unix_now()) {
            Ok(machine) => Ok(Call::running(
                Arc::clone(&self.shared),
                machine,
                lease,
                limits.policy.deadline,
            )),
            Err(e) => {
                // No machine, so no record is changed: the journal keeps the
                // operation as it holds it (a recorded first attempt reads
                // as one that may have left, resumable with its key).
                if self.shared.journal.release(&op.order_id, &lease).is_err() {
                    self.shared.keep_orphan_lease(&op.order_id, &lease);
                }
                Err(e.with_operation(&op.order_id, &op.idempotency_key))
            }
        }
    }

    /// Drives an unsettled operation of the journal again, with its own key
    /// and body (after a crash, or after `outcome_unknown`). A settled one
    /// answers its stored outcome.
    pub fn resume(&self, order_id: &str) -> Result<Outcome> {
        self.resume_with(order_id, CallOptions::default())
    }

    /// [`Client::resume`] with per-call options.
    pub fn resume_with(&self, order_id: &str, options: CallOptions<'_>) -> Result<Outcome> {
        let call = self.begin_resume(order_id, options.deadline)?;
        self.drive(call, options)
    }

    /// The journal's record of an operation, if it exists.
    pub fn status(&self, order_id: &str) -> Result<Option<OperationRecord>> {
        crate::protocol::fields::check_order_id(order_id)?;
        self.shared.journal.get(order_id)
    }

    /// Operations whose outcome is unknown (in flight when a process died,
    /// or ended as `outcome_unknown`), oldest first.
    pub fn list_unknown(&self) -> Result<Vec<OperationRecord>> {
        self.shared
            .journal
            .list(&[OperationState::InFlight, OperationState::Unknown])
    }

    /// Resumes every operation whose outcome is unknown; returns each order
    /// id with its result (`operation_busy` for one another process is
    /// driving right now). On a journal shared by a fleet, it resumes the
    /// fleet's unknown operations whose leases are free; see also
    /// [`Client::take_over`].
    pub fn resume_unknown(&self) -> Result<Vec<(String, Result<Outcome>)>> {
        Ok(self
            .list_unknown()?
            .into_iter()
            .map(|record| {
                let order_id = record.operation.order_id;
                let result = self.resume(&order_id);
                (order_id, result)
            })
            .collect())
    }

    /// Deletes settled operations older than the settled retention; never an
    /// unsettled one. Returns how many went.
    pub fn purge_settled(&self) -> Result<usize> {
        let before = unix_now().saturating_sub(self.shared.settled_retention.as_secs());
        self.shared.journal.purge_settled(before)
    }

    /// One signed GET of `path` (no journal, no retries), e.g. to read a
    /// payment. Transport failures are `transport_error`.
    pub fn get(&self, path: &str) -> Result<Response> {
        crate::protocol::fields::check_path(path)?;
        let shared = &self.shared;
        let path = &shared.transport.target(path);
        let request = crate::protocol::FrozenRequest::new("GET", path, "", b"")?;
        let timestamp = shared.clock_offset().apply(unix_now());
        let nonce = crate::protocol::NonceSource::next_nonce(&crate::protocol::OsNonceSource);
        let signed = shared.signer.sign_frozen(&request, timestamp, nonce);
        let headers: Vec<(&'static str, String)> =
            signed.headers().map(|(n, v)| (n, v.to_owned())).collect();
        match shared
            .transport
            .send("GET", path, &headers, b"", shared.request_timeout)
        {
            Reply::Response(response) => Ok(response),
            other => Err(transport::transport_error(&other)
                .unwrap_or_else(|| Error::new(ErrorCode::Internal, "no reply"))),
        }
    }

    /// Sends `call`'s attempts with this client's transport until it ends.
    fn drive(&self, mut call: Call, options: CallOptions<'_>) -> Result<Outcome> {
        // A cancel hook that panics counts as a cancel: the call still ends
        // through the journal and releases its lease.
        let cancelled = || {
            options
                .cancel
                .is_some_and(|c| catch_unwind(AssertUnwindSafe(c)).unwrap_or(true))
        };
        loop {
            if !call.is_done() && cancelled() {
                return call.cancel();
            }
            match call.step() {
                CallStep::Done(result) => return result,
                CallStep::Wait(wait) => {
                    if !sleep_unless_cancelled(wait, &cancelled) {
                        return call.cancel();
                    }
                }
                CallStep::Send { attempt, timeout } => {
                    let reply = self.shared.transport.send(
                        &attempt.method,
                        &attempt.path,
                        &attempt.headers,
                        &attempt.body,
                        timeout,
                    );
                    call.report(reply);
                }
            }
        }
    }
}

fn settled_result(record: &OperationRecord) -> Result<Outcome> {
    let op = &record.operation;
    match End::from_settled(record.state, record.response.as_ref()) {
        Some(end) => end.into_result(&op.order_id, &op.idempotency_key, record.attempts),
        None => Err(Error::new(
            ErrorCode::Internal,
            "the journal reported an unsettled operation as settled",
        )),
    }
}

/// Sleeps `wait` in short slices, polling `cancelled`; `false` if cancelled.
fn sleep_unless_cancelled(wait: Duration, cancelled: &dyn Fn() -> bool) -> bool {
    const SLICE: Duration = Duration::from_millis(20);
    let started = Instant::now();
    loop {
        if cancelled() {
            return false;
        }
        let waited = started.elapsed();
        if waited >= wait {
            return true;
        }
        std::thread::sleep((wait - waited).min(SLICE));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_cancel_hook_ends_the_call_as_cancelled_and_frees_the_lease() {
        let mut config = ClientConfig::new("http://127.0.0.1:9", "key_test_1");
        config.journal = JournalChoice::Memory;
        let client = Client::new(config, b"0123456789abcdef0123").unwrap();
        let spec = OperationSpec {
            order_id: "ord-panic",
            method: "POST",
            path: "/v1/payments",
            body: b"{}",
            idempotency_key: None,
            status_path: None,
        };
        let hook = || -> bool { panic!("a broken cancel hook") };
        let options = CallOptions {
            cancel: Some(&hook),
            deadline: None,
        };
        let e = client.execute_with(&spec, options).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Cancelled);
        let record = client.status("ord-panic").unwrap().unwrap();
        assert_eq!(record.state, OperationState::Pending);
        // The lease was released: another call may drive it at once.
        let again = client.execute_with(
            &spec,
            CallOptions {
                cancel: Some(&|| true),
                deadline: None,
            },
        );
        assert_eq!(again.unwrap_err().code(), ErrorCode::Cancelled);
    }

    #[test]
    fn a_take_over_loop_with_no_idle_sleeps_a_whole_poll_instead_of_spinning() {
        let mut config = ClientConfig::new("http://127.0.0.1:9", "key_test_1");
        config.journal = JournalChoice::Memory;
        config.lease_heartbeat = Some(Duration::from_millis(200));
        let client = Client::new(config, b"0123456789abcdef0123").unwrap();
        let polls = std::sync::atomic::AtomicUsize::new(0);
        let started = Instant::now();
        let stop = || {
            polls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            started.elapsed() >= Duration::from_millis(600)
        };
        assert_eq!(client.take_over_loop(0, Duration::ZERO, &stop), 0);
        // A poll of 200 ms slept in 20 ms slices: a few dozen looks at
        // `stop` in 600 ms; a loop that spun on the empty journal would
        // ask it (and `stop`) thousands of times.
        let polls = polls.into_inner();
        assert!((3..200).contains(&polls), "{polls} polls of stop");
    }

    #[test]
    fn an_unbounded_deadline_and_wait_do_not_panic() {
        let mut config = ClientConfig::new("http://127.0.0.1:9", "key_test_1");
        config.journal = JournalChoice::Memory;
        config.retry.deadline = Duration::MAX;
        config.request_timeout = Duration::MAX;
        let client = Client::new(config, b"0123456789abcdef0123").unwrap();
        assert_eq!(client.shared.new_lease(1_000).expires_at, u64::MAX);
        assert!(!sleep_unless_cancelled(Duration::MAX, &|| true));
    }
}
