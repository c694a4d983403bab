//! One call driving one operation with a client's journal, signer, retry
//! budget and clock, over any HTTP stack: [`Client`](super::Client) drives
//! it with its own transport; callers with their own HTTP client (libcurl,
//! net/http, requests, httpx) drive it through the same steps.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorCode, Result};
use crate::journal::Lease;
use crate::operation::{
    Attempt, AttemptKind, CallTime, End, NextAction, Operation, OsEntropy, Outcome, Persist, Reply,
    Step,
};

use super::events::AttemptEvent;
use super::metrics::JournalWrite;
use super::{unix_now, Shared};
pub use crate::vocabulary::CallStepKind;

/// What the caller of a [`Call`] does next.
#[derive(Clone, Debug)]
pub enum CallStep {
    /// Send this attempt to the platform (origin + `attempt.path`), with at
    /// most `timeout` for the whole exchange, then report what happened
    /// with [`Call::report`]. Its record is already in the journal.
    Send {
        /// The signed request.
        attempt: Attempt,
        /// The most the attempt may take (the request timeout, shortened to
        /// the call's remaining deadline).
        timeout: Duration,
    },
    /// Sleep this long (or less, to check for cancellation), then ask again.
    Wait(Duration),
    /// The call is over: the journal holds its end and the lease is free.
    Done(Result<Outcome>),
}

impl CallStep {
    /// The step's kind.
    pub fn kind(&self) -> CallStepKind {
        match self {
            CallStep::Send { .. } => CallStepKind::Send,
            CallStep::Wait(_) => CallStepKind::Wait,
            CallStep::Done(_) => CallStepKind::Done,
        }
    }
}

enum Phase {
    Running,
    Sent {
        number: u32,
        kind: AttemptKind,
        at: Instant,
    },
    Done(Result<Outcome>),
}

/// One call driving one operation: the machine
/// ([`crate::operation::Operation`]) bound to the client's journal, lease,
/// signer, retry budget, shared clock offset and event hook.
///
/// The call writes the journal itself, exactly the records the machine asks
/// for and nothing else: every attempt of the operation's own request is
/// recorded (durably for the first) before [`Call::step`] hands it out, a
/// first attempt recorded as the operation was opened but never sent is
/// taken back, and the end is stored before [`CallStep::Done`]. A journal
/// write that fails ends the call with the journal's error. A call dropped
/// before its end is abandoned: an attempt that may have left makes the
/// operation unknown (resumable with its key), and the lease is released.
pub struct Call {
    shared: Arc<Shared>,
    op: Option<Operation>,
    lease: Lease,
    order_id: String,
    key: String,
    started: Instant,
    deadline: Duration,
    over: bool,
    phase: Phase,
    end: Option<End>,
    /// The caller's clocks at its last [`Call::step_at`] or
    /// [`Call::report_at`]; `None` while the call reads the system's.
    told: Option<CallTime>,
    /// When (time since the call began) the lease was last written: the
    /// open or claim that took it, an attempt's record, a renewal.
    renewed: Duration,
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("order_id", &self.order_id)
            .field("idempotency_key", &self.key)
            .field("over", &self.over)
            .finish_non_exhaustive()
    }
}

impl Call {
    pub(super) fn running(
        shared: Arc<Shared>,
        op: Operation,
        lease: Lease,
        deadline: Duration,
    ) -> Call {
        Call {
            told: None,
            order_id: op.order_id().to_owned(),
            key: op.idempotency_key().to_owned(),
            shared,
            op: Some(op),
            lease,
            started: Instant::now(),
            deadline,
            over: false,
            phase: Phase::Running,
            end: None,
            renewed: Duration::ZERO,
        }
    }

    pub(super) fn done(
        shared: Arc<Shared>,
        order_id: &str,
        key: &str,
        end: Option<End>,
        result: Result<Outcome>,
    ) -> Call {
        Call {
            shared,
            op: None,
            lease: Lease {
                owner: String::new(),
                expires_at: 0,
            },
            order_id: order_id.to_owned(),
            key: key.to_owned(),
            started: Instant::now(),
            deadline: Duration::ZERO,
            over: true,
            phase: Phase::Done(result),
            end,
            told: None,
            renewed: Duration::ZERO,
        }
    }

    /// The operation's order id.
    pub fn order_id(&self) -> &str {
        &self.order_id
    }

    /// The operation's frozen idempotency key.
    pub fn idempotency_key(&self) -> &str {
        &self.key
    }

    /// Whether the call is over ([`CallStep::Done`] was or will be the next
    /// step).
    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done(_))
    }

    /// How the machine ended the call, once it has: the end the call
    /// stores in the journal (for a cancelled call, the end the cancel
    /// left; for an operation the journal already held settled, the end
    /// its state stands for). `None` while the call runs, and for a call
    /// that ended without the machine's end (a journal error before an
    /// attempt). Lets a caller with its own HTTP client see the end's name,
    /// finality and landing, not only the result.
    pub fn end(&self) -> Option<&End> {
        self.end.as_ref()
    }

    /// The call's clocks: the caller's (last told) once it keeps them,
    /// else the system's.
    /// Attempts over every call of the operation so far (status queries
    /// included), as the machine counts them; 0 for a call that ended
    /// without one.
    pub fn attempts(&self) -> u32 {
        self.op.as_ref().map_or(0, Operation::attempts)
    }

    /// The owner id of the call's lease (for the simulator's check that
    /// only the operation's live lease holder sends).
    #[cfg(feature = "sim")]
    #[doc(hidden)]
    pub fn lease_owner(&self) -> &str {
        &self.lease.owner
    }

    /// Ends the call as a process crash would: no journal write, no
    /// release; the lease stays until it expires (for the simulator).
    #[cfg(feature = "sim")]
    #[doc(hidden)]
    pub fn crash(mut self) {
        self.op = None;
    }

    fn now(&self) -> CallTime {
        self.told.unwrap_or_else(|| CallTime {
            unix: unix_now(),
            elapsed: self.started.elapsed(),
        })
    }

    /// The next step. Asking again before reporting a [`CallStep::Send`]
    /// ends the call: that attempt's outcome is unknown.
    pub fn step(&mut self) -> CallStep {
        self.next_step(self.now())
    }

    /// [`Call::step`] at `now`, for a caller that keeps the call's clocks
    /// itself (a simulation, the shared operation vectors): `now.unix` is
    /// the wall clock the attempts are signed with and the journal written
    /// at, `now.elapsed` the time since the call began, against its
    /// deadline and waits. Once told, the call keeps to the caller's clocks
    /// (a cancel or drop writes at the time last told).
    pub fn step_at(&mut self, now: CallTime) -> CallStep {
        self.told = Some(now);
        self.next_step(now)
    }

    fn next_step(&mut self, now: CallTime) -> CallStep {
        loop {
            match &self.phase {
                Phase::Done(result) => return CallStep::Done(result.clone()),
                Phase::Sent { .. } => {
                    self.phase = Phase::Running;
                    let reason = "asked for the next step before reporting the attempt's result";
                    return self.conclude(reason, None);
                }
                Phase::Running => {}
            }
            if let Err(done) = self.keep_lease(now) {
                return done;
            }
            match self.poll(now) {
                Step::End(end) => return self.finish(end, None),
                Step::Wait(wait) => {
                    let since = now.elapsed.saturating_sub(self.renewed);
                    let heartbeat = self.shared.lease_heartbeat;
                    let due = crate::journal::renewal_in(since, heartbeat).unwrap_or_default();
                    return CallStep::Wait(wait.min(due));
                }
                Step::Persist(persist) => {
                    if let Err(done) = self.persist(persist) {
                        return done;
                    }
                }
                Step::Send(_) if buggify!(AbandonBeforeSend) => {
                    return self.conclude("abandoned before sending (simulated fault)", Some(()));
                }
                Step::Send(attempt) => {
                    let remaining = self.deadline.saturating_sub(now.elapsed);
                    let timeout = self
                        .shared
                        .request_timeout
                        .min(remaining)
                        .max(Duration::from_millis(1));
                    self.phase = Phase::Sent {
                        number: attempt.number,
                        kind: attempt.kind,
                        at: Instant::now(),
                    };
                    return CallStep::Send { attempt, timeout };
                }
            }
        }
    }

    /// Makes the record the machine asked for and confirms it. A journal
    /// that fails ends the call with its error (the lease released, or kept
    /// for this client's next call of the operation): the operation stays
    /// as the journal last held it, which never says less than was sent.
    fn persist(&mut self, persist: Persist) -> std::result::Result<(), CallStep> {
        let CallTime { unix: now, elapsed } = self.now();
        self.lease.expires_at = now.saturating_add(self.shared.lease_span_secs());
        let write = if persist.first {
            JournalWrite::RecordAttemptDurable
        } else {
            JournalWrite::RecordAttempt
        };
        let (shared, lease, order_id) = (&self.shared, &self.lease, &self.order_id);
        let recorded = if planted!(SendBeforeDurable) {
            Ok(())
        } else {
            shared.observer.journal(write, order_id, || {
                (shared.journal).record_attempt(order_id, lease, persist.attempt, now)
            })
        };
        let recorded = recorded.or_else(|e| {
            let unsynced = e.code() == ErrorCode::Journal && planted!(FsyncFailureDurable);
            unsynced.then_some(()).ok_or(e)
        });
        if let Err(e) = recorded {
            return Err(self.stop_on_journal_error(e));
        }
        self.renewed = elapsed;
        self.machine().persisted();
        Ok(())
    }

    /// Ends the call with the journal's error `e` without storing an end
    /// (the journal refused a write: the lease was lost, or the store
    /// failed): the lease released, or kept for this client's next call
    /// of the operation when even that fails; the operation stays as the
    /// journal last held it, which never says less than was sent.
    fn stop_on_journal_error(&mut self, e: Error) -> CallStep {
        if buggify!(ReleaseFails)
            || self
                .shared
                .journal
                .release(&self.order_id, &self.lease)
                .is_err()
        {
            self.shared.keep_orphan_lease(&self.order_id, &self.lease);
        }
        let e = e.with_operation(&self.order_id, &self.key);
        self.over = true;
        self.phase = Phase::Done(Err(e.clone()));
        self.observe_end(&Err(e.clone()));
        CallStep::Done(Err(e))
    }

    /// The heartbeat: renews the lease when the last lease write is a
    /// heartbeat old ([`crate::journal::renewal_in`]), before the call
    /// waits on or hands out an attempt. A renewal the journal refuses
    /// (the lease was lost to another call, or the store failed) ends the
    /// call with the journal's error, and nothing more is sent.
    fn keep_lease(&mut self, now: CallTime) -> std::result::Result<(), CallStep> {
        let since = now.elapsed.saturating_sub(self.renewed);
        if crate::journal::renewal_in(since, self.shared.lease_heartbeat).is_some() {
            return Ok(());
        }
        self.lease.expires_at = now.unix.saturating_add(self.shared.lease_span_secs());
        let renew = || (self.shared.journal).renew(&self.order_id, &self.lease, now.unix);
        let renewed = (self.shared.observer).journal(JournalWrite::Renew, &self.order_id, renew);
        match renewed {
            Ok(()) => {
                self.renewed = now.elapsed;
                Ok(())
            }
            Err(e) => Err(self.stop_on_journal_error(e)),
        }
    }

    /// Ends the call now (`reason`): the machine abandons it, the call makes
    /// the records it then asks for and stores its end (see
    /// [`Call::finish`]).
    fn conclude(&mut self, reason: &str, cancelled: Option<()>) -> CallStep {
        let abandoned = self.machine().abandon(reason);
        loop {
            match self.poll(self.now()) {
                Step::Persist(persist) => {
                    if let Err(done) = self.persist(persist) {
                        return done;
                    }
                }
                Step::End(end) => return self.finish(end, cancelled),
                // An abandoned machine asks for records and its end only.
                Step::Send(_) | Step::Wait(_) => return self.finish(abandoned, cancelled),
            }
        }
    }

    /// Reports what the attempt last handed out by [`Call::step`] produced.
    /// A report without an attempt in flight is ignored.
    pub fn report(&mut self, reply: Reply) {
        self.report_reply(reply, self.now());
    }

    /// [`Call::report`] at `now` (see [`Call::step_at`]).
    pub fn report_at(&mut self, reply: Reply, now: CallTime) {
        self.told = Some(now);
        self.report_reply(reply, now);
    }

    fn report_reply(&mut self, reply: Reply, now: CallTime) {
        let Phase::Sent { number, kind, at } = self.phase else {
            return;
        };
        self.phase = Phase::Running;
        let duration = at.elapsed();
        let (transport_error, replayed) = match &reply {
            Reply::Response(r) => (None, r.replayed),
            Reply::NotSent(why) | Reply::SentNoResponse(why) => (Some(why.clone()), false),
        };
        let op = self.op.as_mut().expect("a running call has a machine");
        let reaction = op.handle(reply, now, &OsEntropy);
        if reaction.next == NextAction::AdjustClock {
            self.shared.learn_clock_offset(op.clock_offset());
        }
        self.over = matches!(reaction.next, NextAction::Settle | NextAction::GiveUp);
        self.shared.emit(&AttemptEvent {
            order_id: self.order_id.clone(),
            idempotency_key: self.key.clone(),
            attempt: number,
            kind,
            next: reaction.next,
            wait: reaction.wait,
            status: reaction.status,
            error_code: reaction.error_code,
            transport_error,
            replayed,
            duration,
        });
    }

    /// Ends the call at the caller's request (a cancel, a deadline, Ctrl-C)
    /// and returns its result: `cancelled` with the key kept — unless the
    /// machine had already ended, whose answer is then returned as it is
    /// (a payment that was made is never hidden behind a cancel).
    pub fn cancel(&mut self) -> Result<Outcome> {
        if let Phase::Done(result) = &self.phase {
            return result.clone();
        }
        // When the last answer ended the call, its end is delivered.
        let cancelled = (!self.over).then_some(());
        self.phase = Phase::Running;
        match self.conclude("cancelled by the caller", cancelled) {
            CallStep::Done(result) => result,
            _ => unreachable_done(),
        }
    }

    fn machine(&mut self) -> &mut Operation {
        self.op.as_mut().expect("a running call has a machine")
    }

    /// The machine's next step at `now`.
    fn poll(&mut self, now: CallTime) -> Step {
        let op = self.op.as_mut().expect("a running call has a machine");
        op.poll(&self.shared.signer, now, &OsEntropy)
    }

    /// Stores `end` in the journal, releases the lease and turns it into
    /// the caller's result (`cancelled` when `cancelled` is set).
    fn finish(&mut self, end: End, cancelled: Option<()>) -> CallStep {
        let order_id = self.order_id.clone();
        let key = self.key.clone();
        let attempts = self.op.as_ref().map_or(0, Operation::attempts);
        let state = end.state();
        self.end = Some(end.clone());
        let now = self.now().unix;
        let stored = self
            .shared
            .observer
            .journal(JournalWrite::Finish, &order_id, || {
                let (lease, response) = (&self.lease, end.settled_response());
                self.shared
                    .journal
                    .finish(&order_id, lease, state, response, attempts, now)
            });
        self.over = true;
        let result = match stored {
            Err(e) => self.unstored(end, e, attempts),
            Ok(()) if cancelled.is_some() => {
                let resumable = if state.is_unresolved() {
                    "resume it to learn the outcome"
                } else {
                    "nothing was sent"
                };
                Err(Error::new(
                    ErrorCode::Cancelled,
                    format!("order {order_id}: cancelled; key {key} is kept ({resumable})"),
                )
                .with_operation(&order_id, &key))
            }
            Ok(()) => end.into_result(&order_id, &key, attempts),
        };
        self.observe_end(&result);
        self.phase = Phase::Done(result.clone());
        CallStep::Done(result)
    }

    /// Counts the call's end in the client's metrics and hands it to the
    /// event listener.
    fn observe_end(&self, result: &Result<Outcome>) {
        let attempts = self.op.as_ref().map_or(0, Operation::attempts);
        let (order_id, key, end) = (&self.order_id, &self.key, self.end.as_ref());
        let duration = self.started.elapsed();
        (self.shared.observer).call_ended(order_id, key, end, result, attempts, duration);
    }

    /// The caller's result when the journal could not store `end`. The
    /// platform's answer is never hidden behind the journal's failure: a
    /// success is returned as the success it is, with the journal's error
    /// in [`Outcome::journal_error`], and a final refusal as the refusal.
    /// The journal still holds the operation in flight with its key, so a
    /// later call resumes it and the platform replays the same answer; the
    /// lease is released, or kept for this client's next call of the
    /// operation when even that fails.
    fn unstored(&mut self, end: End, journal: Error, attempts: u32) -> Result<Outcome> {
        let (order_id, key) = (self.order_id.as_str(), self.key.as_str());
        let journal = journal.with_operation(order_id, key);
        if buggify!(ReleaseFails) || self.shared.journal.release(order_id, &self.lease).is_err() {
            self.shared.keep_orphan_lease(order_id, &self.lease);
        }
        match end {
            End::Succeeded(_) => end.into_result(order_id, key, attempts).map(|mut outcome| {
                outcome.journal_error = Some(journal);
                outcome
            }),
            End::Rejected(_) | End::Conflict(_) => {
                let platform = end.into_result(order_id, key, attempts);
                platform.map_err(|e| e.with_journal_error(&journal))
            }
            _ => Err(journal),
        }
    }
}

fn unreachable_done() -> Result<Outcome> {
    Err(Error::new(
        ErrorCode::Internal,
        "a finished call did not report its result",
    ))
}

impl Drop for Call {
    fn drop(&mut self) {
        if self.is_done() || self.op.is_none() {
            return;
        }
        // An abandoned call still leaves the journal right: unknown if an
        // attempt may have left, pending otherwise, and the lease free.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            self.conclude("the call was dropped before its end", Some(()));
        }));
    }
}
