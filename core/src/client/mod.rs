//! The blocking client: runs operations to a settled outcome over HTTP,
//! keeping every operation's key and frozen body in a durable journal.

mod budget;
mod config;
mod events;
mod transport;

pub use budget::{RetryBudget, RetryBudgetConfig};
pub use config::{ClientConfig, JournalChoice, DEFAULT_MAX_CLOCK_OFFSET};
pub use events::{AttemptEvent, EventHook};

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::{Error, ErrorCode, Result};
use crate::journal::{
    Journal, Lease, MemoryJournal, Opened, OperationRecord, OperationState, SqliteJournal,
    SqliteJournalOptions, StoredResponse,
};
use crate::operation::{
    AttemptKind, CallLimits, CallTime, NextAction, Operation, OperationSpec, OsEntropy, Outcome,
    Reply, Settlement, Step,
};
use crate::policy::ClockOffset;
use crate::protocol::Signer;
use transport::HttpTransport;

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
/// `Send + Sync`: one client serves any number of threads. Two calls (in
/// this or another process sharing the journal) never drive the same
/// operation at once; the second gets `operation_busy`.
pub struct Client {
    signer: Signer,
    journal: Arc<dyn Journal>,
    transport: HttpTransport,
    limits: CallLimits,
    request_timeout: Duration,
    settled_retention: Duration,
    budget: RetryBudget,
    clock_offset: AtomicI64,
    max_clock_offset: Duration,
    /// This client instance's random id, part of every lease owner id.
    instance: String,
    calls: AtomicU64,
    hook: Option<EventHook>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base_url", &self.transport)
            .field("signer", &self.signer)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
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
        };
        limits.check()?;
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
        let journal: Arc<dyn Journal> = match &config.journal {
            config::JournalChoice::Default => {
                let path = crate::journal::default_journal_path()?;
                crate::journal::create_private_dirs(&path)?;
                Arc::new(SqliteJournal::open(&path, SqliteJournalOptions::default())?)
            }
            config::JournalChoice::Sqlite(path) => {
                Arc::new(SqliteJournal::open(path, SqliteJournalOptions::default())?)
            }
            config::JournalChoice::Memory => Arc::new(MemoryJournal::new()),
            config::JournalChoice::Custom(journal) => Arc::clone(journal),
        };
        let mut instance = [0u8; 8];
        crate::protocol::nonce::fill_random(&mut instance);
        let client = Client {
            signer,
            journal,
            transport,
            limits,
            request_timeout: config.request_timeout,
            settled_retention: config.settled_retention,
            budget: RetryBudget::new(config.retry_budget),
            clock_offset: AtomicI64::new(0),
            max_clock_offset: config.max_clock_offset,
            instance: format!("{:016x}", u64::from_ne_bytes(instance)),
            calls: AtomicU64::new(0),
            hook: None,
        };
        client.purge_settled()?;
        Ok(client)
    }

    /// The client with `hook` receiving every attempt's event.
    pub fn with_event_hook(mut self, hook: EventHook) -> Client {
        self.hook = Some(hook);
        self
    }

    /// The key id this client signs with.
    pub fn key_id(&self) -> &str {
        self.signer.key_id()
    }

    /// The shared retry budget.
    pub fn retry_budget(&self) -> &RetryBudget {
        &self.budget
    }

    /// The clock offset learnt from the platform, applied to every attempt.
    pub fn clock_offset(&self) -> ClockOffset {
        ClockOffset::from_seconds(self.clock_offset.load(Ordering::Relaxed))
    }

    /// Runs the operation to a settled outcome.
    ///
    /// The spec is checked before anything is journaled or sent. An order id
    /// already in the journal with the same request continues that operation
    /// (a settled one answers from the journal, without any network call); with
    /// another request it fails with `idempotency_conflict` and changes
    /// nothing. Errors: `rejected` (status, body), `idempotency_conflict`,
    /// `outcome_unknown` (resumable, key kept), `key_expired`,
    /// `transport_error` (nothing reached the platform; key kept),
    /// `operation_busy`, `journal_error`, `invalid_argument`.
    pub fn execute(&self, spec: &OperationSpec<'_>) -> Result<Outcome> {
        self.execute_with(spec, CallOptions::default())
    }

    /// [`Client::execute`] with per-call options (cancellation, deadline).
    pub fn execute_with(
        &self,
        spec: &OperationSpec<'_>,
        options: CallOptions<'_>,
    ) -> Result<Outcome> {
        // The base URL's path prefix is part of the request target, so of
        // the signature and of the journaled operation.
        crate::protocol::fields::check_path(spec.path)?;
        if let Some(status_path) = spec.status_path {
            crate::protocol::fields::check_path(status_path)
                .map_err(|e| Error::invalid("status_path", e.message()))?;
        }
        let path = self.transport.target(spec.path);
        let status_path = spec.status_path.map(|p| self.transport.target(p));
        let spec = OperationSpec {
            path: &path,
            status_path: status_path.as_deref(),
            ..*spec
        };
        let operation = spec.freeze()?;
        let now = unix_now();
        let lease = self.new_lease(now);
        match self.journal.open(&operation, &lease, now)? {
            Opened::Settled(record) => settled_result(&record),
            Opened::Created(record) | Opened::Resumable(record) => {
                self.drive(record, lease, options)
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
        crate::protocol::fields::check_order_id(order_id)?;
        let now = unix_now();
        let lease = self.new_lease(now);
        match self.journal.claim(order_id, &lease, now)? {
            Opened::Settled(record) => settled_result(&record),
            Opened::Created(record) | Opened::Resumable(record) => {
                self.drive(record, lease, options)
            }
        }
    }

    /// The journal's record of an operation, if it exists.
    pub fn status(&self, order_id: &str) -> Result<Option<OperationRecord>> {
        crate::protocol::fields::check_order_id(order_id)?;
        self.journal.get(order_id)
    }

    /// Operations whose outcome is unknown (in flight when a process died,
    /// or ended as `outcome_unknown`), oldest first.
    pub fn list_unknown(&self) -> Result<Vec<OperationRecord>> {
        self.journal
            .list(&[OperationState::InFlight, OperationState::Unknown])
    }

    /// Resumes every operation whose outcome is unknown; returns each order
    /// id with its result (`operation_busy` for one another process is
    /// driving right now).
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
        let before = unix_now().saturating_sub(self.settled_retention.as_secs());
        self.journal.purge_settled(before)
    }

    /// One signed GET of `path` (no journal, no retries), e.g. to read a
    /// payment. Transport failures are `transport_error`.
    pub fn get(&self, path: &str) -> Result<StoredResponse> {
        crate::protocol::fields::check_path(path)?;
        let path = &self.transport.target(path);
        let request = crate::protocol::FrozenRequest::new("GET", path, "", b"")?;
        let timestamp = self.clock_offset().apply(unix_now());
        let nonce = crate::protocol::NonceSource::next_nonce(&crate::protocol::OsNonceSource);
        let signed = self.signer.sign_frozen(&request, timestamp, nonce);
        let headers: Vec<(&'static str, String)> =
            signed.headers().map(|(n, v)| (n, v.to_owned())).collect();
        match self
            .transport
            .send("GET", path, &headers, b"", self.request_timeout)
        {
            Reply::Response(response) => Ok(response),
            other => Err(transport::transport_error(&other)
                .unwrap_or_else(|| Error::new(ErrorCode::Internal, "no reply"))),
        }
    }

    fn new_lease(&self, now: u64) -> Lease {
        let call = self.calls.fetch_add(1, Ordering::Relaxed);
        Lease {
            owner: crate::journal::process_owner(&self.instance, call),
            expires_at: now.saturating_add(self.lease_ttl_secs()),
        }
    }

    fn lease_ttl_secs(&self) -> u64 {
        // Longer than any call can take: the deadline, one more attempt, and slack.
        self.limits
            .policy
            .deadline
            .saturating_add(self.request_timeout)
            .as_secs()
            .saturating_add(30)
    }

    fn drive(
        &self,
        record: OperationRecord,
        mut lease: Lease,
        options: CallOptions<'_>,
    ) -> Result<Outcome> {
        let order_id = record.operation.order_id.clone();
        let key = record.operation.idempotency_key.clone();
        let mut limits = self.limits;
        if let Some(deadline) = options.deadline {
            limits.policy.deadline = limits
                .policy
                .deadline
                .min(deadline.max(Duration::from_millis(1)));
        }
        let started = Instant::now();
        let mut op = match Operation::start(&record, limits, self.clock_offset(), unix_now()) {
            Ok(op) => op,
            Err(e) => {
                let _ = self.journal.release(&order_id, &lease);
                return Err(e.with_operation(&order_id, &key));
            }
        };
        // A cancel hook that panics counts as a cancel: the call still ends
        // through the journal and releases its lease.
        let cancelled = || {
            options
                .cancel
                .is_some_and(|c| catch_unwind(AssertUnwindSafe(c)).unwrap_or(true))
        };
        let mut spent = 0u32;
        let mut was_cancelled = false;
        // Why a clock answer was not believed, if one was not.
        let mut clock_refused: Option<String> = None;
        // Set once the machine has ended: a cancel that arrives after the
        // last answer must not hide that answer (a payment may have been made).
        let mut over = false;
        let settlement = loop {
            let now = CallTime {
                unix: unix_now(),
                elapsed: started.elapsed(),
            };
            if !over && cancelled() {
                was_cancelled = true;
                break op.abandon("cancelled by the caller");
            }
            match op.poll(&self.signer, now, &OsEntropy) {
                Step::Settled(settlement) => break settlement,
                Step::Wait(wait) => {
                    if !sleep_unless_cancelled(wait, &cancelled) {
                        was_cancelled = true;
                        break op.abandon("cancelled by the caller");
                    }
                }
                Step::Send(attempt) => {
                    if attempt.kind == AttemptKind::Operation {
                        lease.expires_at = now.unix.saturating_add(self.lease_ttl_secs());
                        if let Err(e) =
                            self.journal
                                .record_attempt(&order_id, &lease, attempt.number, now.unix)
                        {
                            let _ = self.journal.release(&order_id, &lease);
                            return Err(e.with_operation(&order_id, &key));
                        }
                    }
                    let remaining = limits.policy.deadline.saturating_sub(now.elapsed);
                    let timeout = self
                        .request_timeout
                        .min(remaining)
                        .max(Duration::from_millis(1));
                    let sent_at = Instant::now();
                    let reply = self.transport.send(
                        &attempt.method,
                        &attempt.path,
                        &attempt.headers,
                        &attempt.body,
                        timeout,
                    );
                    let duration = sent_at.elapsed();
                    let event_base = EventParts::of(&reply);
                    let after = CallTime {
                        unix: unix_now(),
                        elapsed: started.elapsed(),
                    };
                    let reaction = op.handle(reply, after, &OsEntropy);
                    let mut next = reaction.next;
                    if next == NextAction::AdjustClock {
                        if let Some(why) = self.untrusted_offset(op.clock_offset()) {
                            op.abandon(&why);
                            clock_refused = Some(why);
                            next = NextAction::GiveUp;
                        }
                    }
                    self.note_clock_offset(next, op.clock_offset());
                    if matches!(next, NextAction::RetryLater | NextAction::QueryLater) {
                        let cost = if event_base.timed_out {
                            self.budget.config().timeout_cost
                        } else {
                            self.budget.config().retry_cost
                        };
                        if self.budget.try_spend(cost) {
                            spent = spent.saturating_add(cost);
                        } else {
                            op.abandon("the client's retry budget is exhausted");
                            next = NextAction::GiveUp;
                        }
                    }
                    over = matches!(next, NextAction::Settle | NextAction::GiveUp);
                    self.emit(AttemptEvent {
                        order_id: order_id.clone(),
                        idempotency_key: key.clone(),
                        attempt: attempt.number,
                        kind: attempt.kind,
                        next,
                        wait: if next == NextAction::GiveUp {
                            None
                        } else {
                            reaction.wait
                        },
                        status: reaction.status,
                        error_code: reaction.error_code,
                        transport_error: event_base.transport_error,
                        replayed: event_base.replayed,
                        duration,
                    });
                }
            }
        };
        let state = settlement.journal_state();
        self.journal
            .finish(
                &order_id,
                &lease,
                state,
                settlement.stored_response(),
                unix_now(),
            )
            .map_err(|e| e.with_operation(&order_id, &key))?;
        if matches!(settlement, Settlement::Succeeded(_)) {
            self.budget.refund(if spent > 0 {
                spent
            } else {
                self.budget.config().success_refund
            });
        }
        if was_cancelled {
            let resumable = if state.is_unresolved() {
                "resume it to learn the outcome"
            } else {
                "nothing was sent"
            };
            return Err(Error::new(
                ErrorCode::Cancelled,
                format!("order {order_id}: cancelled; key {key} is kept ({resumable})"),
            )
            .with_operation(&order_id, &key));
        }
        match (clock_refused, settlement) {
            (Some(why), Settlement::Refused(r)) => Err(Error::new(
                ErrorCode::Rejected,
                format!("order {order_id}: the platform refused the timestamp and {why}; nothing happened, the operation is kept with key {key}"),
            )
            .with_response(r.status, r.body)
            .with_operation(&order_id, &key)),
            (_, settlement) => settlement.into_result(&order_id, &key, op.attempts()),
        }
    }

    /// Why a clock offset learnt from an (unauthenticated) answer is not to
    /// be believed, if it is not: beyond the bound, or over plain http to a
    /// host that is not loopback.
    fn untrusted_offset(&self, offset: ClockOffset) -> Option<String> {
        if !self.transport.clock_trusted() {
            return Some(
                "its clock answer came over plain http, which is never trusted (the clock was not adjusted)"
                    .to_owned(),
            );
        }
        if !offset.within(self.max_clock_offset) {
            return Some(format!(
                "its clock answer ({} s from ours) exceeds max_clock_offset ({} s) and is not trusted (the clock was not adjusted; check this machine's clock)",
                offset.seconds(),
                self.max_clock_offset.as_secs()
            ));
        }
        None
    }

    /// Shares the offset a call has just learnt from the platform. A call
    /// that learnt nothing leaves the shared offset alone: it may have
    /// started before another call learnt a newer one.
    fn note_clock_offset(&self, next: NextAction, offset: ClockOffset) {
        if next == NextAction::AdjustClock {
            self.clock_offset.store(offset.seconds(), Ordering::Relaxed);
        }
    }

    fn emit(&self, event: AttemptEvent) {
        if let Some(hook) = &self.hook {
            // A failing logger must not abandon a payment half-way.
            let _ = catch_unwind(AssertUnwindSafe(|| hook(&event)));
        }
    }
}

struct EventParts {
    transport_error: Option<String>,
    timed_out: bool,
    replayed: bool,
}

impl EventParts {
    fn of(reply: &Reply) -> EventParts {
        match reply {
            Reply::Response(r) => EventParts {
                transport_error: None,
                timed_out: false,
                replayed: r.replayed,
            },
            Reply::NotSent(why) => EventParts {
                transport_error: Some(why.clone()),
                timed_out: false,
                replayed: false,
            },
            Reply::SentNoResponse(why) => EventParts {
                transport_error: Some(why.clone()),
                timed_out: true,
                replayed: false,
            },
        }
    }
}

fn settled_result(record: &OperationRecord) -> Result<Outcome> {
    let op = &record.operation;
    match Settlement::from_record(record) {
        Some(settlement) => {
            settlement.into_result(&op.order_id, &op.idempotency_key, record.attempts)
        }
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
    fn a_call_that_learnt_no_offset_keeps_the_one_another_call_learnt() {
        let mut config = ClientConfig::new("http://127.0.0.1:9", "key_test_1");
        config.journal = JournalChoice::Memory;
        let client = Client::new(config, b"0123456789abcdef0123").unwrap();
        // Call A learns the platform's clock.
        client.note_clock_offset(NextAction::AdjustClock, ClockOffset::from_seconds(3600));
        // Call B started before that, with offset 0, and settles.
        for next in [
            NextAction::Settle,
            NextAction::RetryLater,
            NextAction::QueryStatus,
        ] {
            client.note_clock_offset(next, ClockOffset::ZERO);
        }
        assert_eq!(client.clock_offset().seconds(), 3600);
        // A later adjustment replaces it.
        client.note_clock_offset(NextAction::AdjustClock, ClockOffset::from_seconds(-5));
        assert_eq!(client.clock_offset().seconds(), -5);
    }

    #[test]
    fn an_unbounded_deadline_and_wait_do_not_panic() {
        let mut config = ClientConfig::new("http://127.0.0.1:9", "key_test_1");
        config.journal = JournalChoice::Memory;
        config.retry.deadline = Duration::MAX;
        config.request_timeout = Duration::MAX;
        let client = Client::new(config, b"0123456789abcdef0123").unwrap();
        assert_eq!(client.new_lease(1_000).expires_at, u64::MAX);
        assert!(!sleep_unless_cancelled(Duration::MAX, &|| true));
    }
}
