//! The state machine of one call driving one operation.

use std::sync::Arc;
use std::time::Duration;

use crate::error::Result;
use crate::policy::{
    decide, decide_status_query, error_code_from_body, Action, ClockOffset, Decision, Failure,
    Landed,
};
use crate::protocol::{FrozenRequest, Signer};

use super::end::End;
use super::limits::{CallSetup, Progress};
use super::spec::FrozenOperation;
use super::state::OperationState;
use super::step::{Attempt, AttemptKind, CallTime, Entropy, NextAction, Persist, Reaction, Step};
use crate::policy::{Reply, Response};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Operation,
    StatusQuery,
}

#[derive(Clone, Debug)]
enum Phase {
    Ready(Target),
    Waiting { until: Duration, then: Target },
    Awaiting(AttemptKind),
    Done(End),
}

/// One call driving one operation to its end.
///
/// It applies protocol section 4 and nothing else decides for it: the
/// decision table and the status-query rules ([`crate::policy`]), backoff
/// and `Retry-After`, the clock offset and whether to believe it, attempt,
/// deadline and retry-budget limits, the key-expiry rule, and the journal
/// record that must precede every attempt of the operation's own request
/// ([`Step::Persist`]), and the record that takes back an attempt recorded
/// but never sent (by this call, or as the operation was opened:
/// [`Progress::first_recorded`]). It never changes the key, method, path
/// or body.
#[derive(Debug)]
pub struct Operation {
    order_id: String,
    idempotency_key: String,
    request: FrozenRequest,
    body: Arc<[u8]>,
    query: Option<FrozenRequest>,
    setup: CallSetup,
    landed: Landed,
    ever_sent: bool,
    key_expired: bool,
    persisted: bool,
    /// The journal counts an attempt of the operation that has not been
    /// sent (recorded by this call, or the first recorded as it opened): if
    /// the call ends before it is, the record is taken back.
    recorded_unsent: bool,
    attempts_total: u32,
    attempts_call: u32,
    retries: u32,
    spent: u32,
    last_was_timeout: bool,
    clock_adjusted: bool,
    last_response: Option<Response>,
    last_problem: String,
    phase: Phase,
}

impl Operation {
    /// A call for `operation`, which the journal knows as `progress`, at
    /// local time `now_unix`. An operation that may already have reached
    /// the platform asks its status first when it can; one whose key is
    /// older than the retention, in any state, is only ever queried, never
    /// sent (again). A first attempt the journal already recorded
    /// ([`Progress::first_recorded`]) is sent without a second record.
    pub fn start(
        operation: &FrozenOperation,
        progress: Progress,
        setup: CallSetup,
        now_unix: u64,
    ) -> Result<Operation> {
        setup.limits.check()?;
        progress.check()?;
        let mut key = operation.idempotency_key.clone();
        if planted!(NewKeyOnUnknown) && progress.state == OperationState::Unknown {
            key = format!("{key}-r{}", progress.attempts);
        }
        let request =
            FrozenRequest::new(&operation.method, &operation.path, &key, &operation.body)?;
        let query = operation
            .status_path
            .as_deref()
            .map(|p| FrozenRequest::new("GET", p, "", b""))
            .transpose()?;
        let recorded = progress.first_recorded;
        let landed = if progress.state.is_unresolved() && !recorded {
            Landed::Maybe
        } else {
            Landed::No
        };
        // Whatever its state says: a pending row may come from a journal
        // rolled back, or restored from a backup, after it was sent.
        let key_age = now_unix.saturating_sub(progress.created_at);
        let key_expired = key_age > setup.limits.key_retention_secs && !planted!(KeyAgeUnchecked);
        let mut machine = Operation {
            order_id: operation.order_id.clone(),
            idempotency_key: key,
            request,
            body: Arc::from(operation.body.as_slice()),
            query,
            setup,
            landed,
            ever_sent: progress.state != OperationState::Pending && !recorded,
            key_expired,
            persisted: recorded,
            recorded_unsent: recorded,
            attempts_total: progress.attempts - u32::from(recorded),
            attempts_call: 0,
            retries: 0,
            spent: 0,
            last_was_timeout: false,
            clock_adjusted: false,
            last_response: None,
            last_problem: String::new(),
            phase: Phase::Ready(Target::Operation),
        };
        if key_expired {
            machine.phase = if machine.query.is_some() {
                Phase::Ready(Target::StatusQuery)
            } else {
                Phase::Done(End::KeyExpired {
                    reason: format!("the key is {key_age} s old and no status path is known"),
                })
            };
        } else if landed != Landed::No && machine.query.is_some() {
            machine.phase = Phase::Ready(Target::StatusQuery);
        }
        Ok(machine)
    }

    /// The order id.
    pub fn order_id(&self) -> &str {
        &self.order_id
    }

    /// The frozen idempotency key.
    pub fn idempotency_key(&self) -> &str {
        &self.idempotency_key
    }

    /// Attempts over every call so far.
    pub fn attempts(&self) -> u32 {
        self.attempts_total
    }

    /// The clock offset in force (learnt from `timestamp_out_of_window`).
    pub fn clock_offset(&self) -> ClockOffset {
        self.setup.clock
    }

    /// Whether an attempt of this operation may have taken effect, over
    /// every call so far.
    pub fn landed(&self) -> Landed {
        self.landed
    }

    /// What to do next at `now`. After [`Step::Persist`], confirm with
    /// [`Operation::persisted`]; after [`Step::Send`], report the attempt's
    /// result with [`Operation::handle`] before polling again.
    pub fn poll(&mut self, signer: &Signer, now: CallTime, entropy: &dyn Entropy) -> Step {
        loop {
            match &self.phase {
                Phase::Done(_) if self.recorded_unsent => {
                    return Step::Persist(Persist {
                        attempt: self.attempts_total,
                        first: false,
                    });
                }
                Phase::Done(end) => return Step::End(end.clone()),
                Phase::Awaiting(_) => {
                    self.last_problem =
                        "polled again before the attempt's result was reported".into();
                    // The attempt may have left: its outcome is unknown.
                    self.landed = self.landed.max(Landed::Maybe);
                    return Step::End(self.conclude());
                }
                Phase::Waiting { until, then } => {
                    if now.elapsed < *until {
                        return Step::Wait(*until - now.elapsed);
                    }
                    self.phase = Phase::Ready(*then);
                }
                Phase::Ready(Target::Operation) if !self.persisted => {
                    return Step::Persist(Persist {
                        attempt: self.attempts_total.saturating_add(1),
                        first: !self.ever_sent,
                    });
                }
                Phase::Ready(target) => {
                    let target = *target;
                    return Step::Send(self.sign(target, signer, now, entropy));
                }
            }
        }
    }

    /// Confirms that the record asked for by the last [`Step::Persist`] is
    /// in the journal (durable when it was the first); the next poll sends,
    /// or, after the record that took back an unsent first attempt, ends.
    pub fn persisted(&mut self) {
        match self.phase {
            Phase::Ready(Target::Operation) => {
                self.persisted = true;
                self.recorded_unsent = true;
            }
            Phase::Done(_) => self.recorded_unsent = false,
            _ => {}
        }
    }

    fn sign(
        &mut self,
        target: Target,
        signer: &Signer,
        now: CallTime,
        entropy: &dyn Entropy,
    ) -> Attempt {
        let timestamp = self.setup.clock.apply(now.unix);
        let (kind, request, body) = match (target, &self.query) {
            (Target::StatusQuery, Some(query)) => {
                (AttemptKind::StatusQuery, query, Arc::from(&[][..]))
            }
            _ => (
                AttemptKind::Operation,
                &self.request,
                Arc::clone(&self.body),
            ),
        };
        if kind == AttemptKind::Operation {
            self.persisted = false;
            self.recorded_unsent = false;
            self.ever_sent = true;
        }
        let signed = signer.sign_frozen(request, timestamp, entropy.nonce());
        let headers = signed.headers().map(|(n, v)| (n, v.to_owned())).collect();
        self.attempts_call += 1;
        self.attempts_total = self.attempts_total.saturating_add(1);
        self.phase = Phase::Awaiting(kind);
        Attempt {
            kind,
            number: self.attempts_total,
            method: request.method().to_owned(),
            path: request.path().to_owned(),
            headers,
            body,
        }
    }

    /// Reports the result of the attempt last returned by
    /// [`Operation::poll`], at `now`; returns what the machine decided.
    pub fn handle(&mut self, reply: Reply, now: CallTime, entropy: &dyn Entropy) -> Reaction {
        let kind = match self.phase {
            Phase::Awaiting(kind) => kind,
            _ => {
                return Reaction {
                    next: NextAction::GiveUp,
                    wait: None,
                    status: None,
                    error_code: None,
                    landed: self.landed,
                };
            }
        };
        let error_code = match &reply {
            Reply::Response(r) => error_code_from_body(&r.body),
            _ => None,
        };
        let status = match &reply {
            Reply::Response(r) => Some(r.status),
            _ => None,
        };
        let platform_now = self.setup.clock.apply(now.unix);
        let decision = match kind {
            AttemptKind::Operation => decide(&reply, self.query.is_some(), platform_now),
            AttemptKind::StatusQuery => decide_status_query(&reply, platform_now),
        };
        self.last_was_timeout = matches!(reply, Reply::SentNoResponse(_));
        // A status answer says the operation landed (2xx) or nothing
        // certain; "not found" does not undo an earlier "maybe".
        if kind == AttemptKind::Operation || decision.landed == Landed::Yes {
            self.landed = self.landed.max(decision.landed);
        }
        self.note(&reply);
        let response = match reply {
            Reply::Response(r) => Some(r),
            _ => None,
        };
        let (next, wait) = self.apply(kind, decision, response, now, entropy);
        Reaction {
            next,
            wait,
            status,
            error_code,
            landed: self.landed,
        }
    }

    fn apply(
        &mut self,
        kind: AttemptKind,
        decision: Decision,
        response: Option<Response>,
        now: CallTime,
        entropy: &dyn Entropy,
    ) -> (NextAction, Option<Duration>) {
        let same = match kind {
            AttemptKind::Operation => Target::Operation,
            AttemptKind::StatusQuery => Target::StatusQuery,
        };
        let later = match kind {
            AttemptKind::Operation => NextAction::RetryLater,
            AttemptKind::StatusQuery => NextAction::QueryLater,
        };
        match decision.action {
            Action::Done { .. } => self.settle(End::Succeeded(response.unwrap_or_default())),
            Action::Fail(Failure::IdempotencyConflict) => {
                self.settle(End::Conflict(response.unwrap_or_default()))
            }
            Action::Fail(Failure::Rejected) if decision.landed != Landed::No => {
                self.settle(End::Rejected(response.unwrap_or_default()))
            }
            Action::Fail(Failure::Rejected) => self.give_up(),
            Action::RetryNow => self.retry(same, Duration::ZERO, NextAction::RetryNow, now),
            Action::RetryBackoff => {
                let wait = self.backoff(entropy);
                self.retry(same, wait, later, now)
            }
            Action::RetryAfter { seconds } => {
                let wait = Duration::from_secs(seconds);
                if wait > self.setup.limits.policy.cap {
                    self.last_problem = format!("Retry-After of {seconds} s exceeds the backoff cap");
                    return self.give_up();
                }
                self.retry(same, wait, later, now)
            }
            Action::AdjustClockRetry { server_time } => {
                self.adjust_clock(same, server_time, now, entropy)
            }
            Action::QueryStatus => self.retry(
                Target::StatusQuery,
                Duration::ZERO,
                NextAction::QueryStatus,
                now,
            ),
            Action::SendOperation if self.key_expired => self.settle(End::KeyExpired {
                reason: "the status query found no such operation, and the expired key may not be sent again"
                    .into(),
            }),
            Action::SendOperation => {
                self.retry(Target::Operation, Duration::ZERO, NextAction::RetryNow, now)
            }
        }
    }

    fn adjust_clock(
        &mut self,
        target: Target,
        server_time: u64,
        now: CallTime,
        entropy: &dyn Entropy,
    ) -> (NextAction, Option<Duration>) {
        let offset = ClockOffset::between(server_time, now.unix);
        let refused = if self.clock_adjusted {
            Some("the platform refused the timestamp twice".to_owned())
        } else if !self.setup.clock_trusted {
            Some("its clock answer came over plain http, which is never trusted (the clock was not adjusted)".to_owned())
        } else if !offset.within(self.setup.limits.max_clock_offset) {
            Some(format!(
                "its clock answer ({} s from ours) exceeds max_clock_offset ({} s) and is not trusted (the clock was not adjusted; check this machine's clock)",
                offset.seconds(),
                self.setup.limits.max_clock_offset.as_secs()
            ))
        } else {
            None
        };
        match (refused, target) {
            (None, _) => {
                self.clock_adjusted = true;
                self.setup.clock = offset;
                self.retry(target, Duration::ZERO, NextAction::AdjustClock, now)
            }
            (Some(why), Target::Operation) => {
                self.last_problem = why;
                self.give_up()
            }
            // A status query keeps asking (it changes nothing on the
            // platform), with a backoff.
            (Some(why), Target::StatusQuery) => {
                self.last_problem = why;
                let wait = self.backoff(entropy);
                self.retry(target, wait, NextAction::QueryLater, now)
            }
        }
    }

    /// Ends the call now (cancelled by the caller) with what is known:
    /// unknown if an attempt may have landed, else not sent or refused. The
    /// key is kept either way. Poll once more for what the journal must
    /// store: an attempt recorded but never sent is taken back (a
    /// [`Step::Persist`] of the attempts made) before [`Step::End`].
    pub fn abandon(&mut self, reason: &str) -> End {
        if let Phase::Done(end) = &self.phase {
            return end.clone();
        }
        if matches!(self.phase, Phase::Awaiting(_)) {
            self.landed = self.landed.max(Landed::Maybe);
        }
        self.last_problem = if self.last_problem.is_empty() {
            reason.to_owned()
        } else {
            format!("{reason}; {}", self.last_problem)
        };
        self.conclude()
    }

    fn note(&mut self, reply: &Reply) {
        match reply {
            Reply::Response(r) => {
                self.last_problem = format!("last answer HTTP {}", r.status);
                self.last_response = Some(r.clone());
            }
            Reply::NotSent(why) => self.last_problem = format!("not sent: {why}"),
            Reply::SentNoResponse(why) => self.last_problem = format!("no response: {why}"),
        }
    }

    fn backoff(&mut self, entropy: &dyn Entropy) -> Duration {
        let wait = self
            .setup
            .limits
            .policy
            .jittered(self.retries, entropy.jitter());
        self.retries = self.retries.saturating_add(1);
        wait
    }

    fn settle(&mut self, end: End) -> (NextAction, Option<Duration>) {
        if let (End::Succeeded(_), Some(budget)) = (&end, &self.setup.budget) {
            budget.refund(if self.spent > 0 {
                self.spent
            } else {
                budget.config().success_refund
            });
        }
        self.phase = Phase::Done(end);
        (NextAction::Settle, None)
    }

    fn retry(
        &mut self,
        then: Target,
        wait: Duration,
        action: NextAction,
        now: CallTime,
    ) -> (NextAction, Option<Duration>) {
        let policy = &self.setup.limits.policy;
        if self.attempts_call >= policy.max_attempts {
            self.last_problem = format!(
                "{} attempts made; {}",
                self.attempts_call, self.last_problem
            );
            return self.give_up();
        }
        if !policy.fits_deadline(now.elapsed, wait) {
            self.last_problem = format!(
                "the call's deadline leaves no time to retry; {}",
                self.last_problem
            );
            return self.give_up();
        }
        if matches!(action, NextAction::RetryLater | NextAction::QueryLater) {
            if let Some(budget) = &self.setup.budget {
                let config = budget.config();
                let cost = if self.last_was_timeout {
                    config.timeout_cost
                } else {
                    config.retry_cost
                };
                if !budget.try_spend(cost) {
                    self.last_problem = format!(
                        "the client's retry budget is exhausted; {}",
                        self.last_problem
                    );
                    return self.give_up();
                }
                self.spent = self.spent.saturating_add(cost);
            }
        }
        if wait.is_zero() {
            self.phase = Phase::Ready(then);
            (action, None)
        } else {
            self.phase = Phase::Waiting {
                until: now.elapsed + wait,
                then,
            };
            (action, Some(wait))
        }
    }

    fn give_up(&mut self) -> (NextAction, Option<Duration>) {
        self.conclude();
        (NextAction::GiveUp, None)
    }

    fn conclude(&mut self) -> End {
        let reason = std::mem::take(&mut self.last_problem);
        let end = if self.key_expired {
            End::KeyExpired { reason }
        } else if self.landed != Landed::No {
            End::Unknown { reason }
        } else if let Some(response) = self.last_response.take() {
            End::Refused { response, reason }
        } else {
            End::NotSent { reason }
        };
        self.phase = Phase::Done(end.clone());
        end
    }
}
