//! The state machine of one call driving one operation.

use std::sync::Arc;
use std::time::Duration;

use crate::error::Result;
use crate::journal::{NewOperation, OperationRecord, StoredResponse};
use crate::policy::{
    answered_before_the_operation, decide, error_code_from_body, AttemptResult, ClockOffset,
    Decision, Failure, RetryPolicy,
};
use crate::protocol::nonce::fill_random;
use crate::protocol::{FrozenRequest, Nonce, NonceSource, OsNonceSource, Signer};

use super::outcome::Settlement;

/// The platform keeps idempotency keys at least this long (48 hours).
pub const PLATFORM_KEY_RETENTION_SECS: u64 = 48 * 3600;

/// Limits of one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallLimits {
    /// Attempts, backoff and deadline.
    pub policy: RetryPolicy,
    /// How long the platform keeps keys, in seconds: at most 48 hours (a
    /// client may only set it lower).
    pub key_retention_secs: u64,
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits {
            policy: RetryPolicy::default(),
            key_retention_secs: PLATFORM_KEY_RETENTION_SECS,
        }
    }
}

impl CallLimits {
    /// Checks the limits; the retention may not exceed 48 hours.
    pub fn check(&self) -> Result<()> {
        self.policy.check()?;
        if self.key_retention_secs > PLATFORM_KEY_RETENTION_SECS || self.key_retention_secs == 0 {
            return Err(crate::Error::invalid(
                "key_retention_secs",
                "must be 1..=172800 (48 hours)",
            ));
        }
        Ok(())
    }
}

/// The two clocks a call reads: wall time for signing and key age, and the
/// time elapsed since the call started for the deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallTime {
    /// Local wall-clock time, Unix seconds.
    pub unix: u64,
    /// Monotonic time since the call started.
    pub elapsed: Duration,
}

/// Randomness a call needs: nonces and backoff jitter.
pub trait Entropy: Send + Sync {
    /// A fresh nonce.
    fn nonce(&self) -> Nonce;
    /// 64 random bits for jitter.
    fn jitter(&self) -> u64;
}

/// Entropy from the operating system's generator (see
/// [`OsNonceSource`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct OsEntropy;

impl Entropy for OsEntropy {
    fn nonce(&self) -> Nonce {
        OsNonceSource.next_nonce()
    }

    fn jitter(&self) -> u64 {
        let mut b = [0u8; 8];
        fill_random(&mut b);
        u64::from_ne_bytes(b)
    }
}

/// What an attempt is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttemptKind {
    /// The operation's own request (same method, path, body and key every
    /// time).
    Operation,
    /// A signed GET of the operation's status path.
    StatusQuery,
}

impl AttemptKind {
    /// A stable lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptKind::Operation => "operation",
            AttemptKind::StatusQuery => "status_query",
        }
    }
}

/// One signed request to send now.
#[derive(Clone, Debug)]
pub struct Attempt {
    /// What it is.
    pub kind: AttemptKind,
    /// 1 for the operation's first attempt ever; counts every call's attempts.
    pub number: u32,
    /// HTTP method.
    pub method: String,
    /// Request target.
    pub path: String,
    /// Headers to send, signature headers included (`Content-Type` is added
    /// for a non-empty body).
    pub headers: Vec<(&'static str, String)>,
    /// Body bytes (empty for a status query).
    pub body: Arc<[u8]>,
}

/// What the caller must do next.
#[derive(Clone, Debug)]
pub enum Step {
    /// Send this attempt, then report with [`Operation::handle`]. For an
    /// [`AttemptKind::Operation`] attempt the caller first records it in its
    /// journal.
    Send(Attempt),
    /// Sleep this long, then poll again.
    Wait(Duration),
    /// The call is over.
    Settled(Settlement),
}

/// What one attempt produced, as the caller saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A response came back.
    Response(StoredResponse),
    /// The request was never sent: nothing reached the platform.
    NotSent(String),
    /// The request was (or may have been) sent and no response came back.
    SentNoResponse(String),
}

/// What the machine decided after an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NextAction {
    /// The call settled.
    Settle,
    /// Retry at once with a fresh signature.
    RetryNow,
    /// Retry after a backoff or `Retry-After`.
    RetryLater,
    /// Adjust the clock offset and retry at once.
    AdjustClock,
    /// Query the operation's status.
    QueryStatus,
    /// Query the status again after a backoff.
    QueryLater,
    /// Give up: attempts, deadline or `Retry-After` limits reached.
    GiveUp,
}

impl NextAction {
    /// A stable lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            NextAction::Settle => "settle",
            NextAction::RetryNow => "retry_now",
            NextAction::RetryLater => "retry_later",
            NextAction::AdjustClock => "adjust_clock",
            NextAction::QueryStatus => "query_status",
            NextAction::QueryLater => "query_later",
            NextAction::GiveUp => "give_up",
        }
    }
}

/// The machine's reaction to one attempt, for events and logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reaction {
    /// What comes next.
    pub next: NextAction,
    /// The wait before the next attempt, if any.
    pub wait: Option<Duration>,
    /// The HTTP status, if a response came.
    pub status: Option<u16>,
    /// The response's error code, if any.
    pub error_code: Option<String>,
}

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
    Done(Settlement),
}

/// One call driving one operation to a settlement.
///
/// Made from the journal's record of the operation, it applies protocol
/// section 4: the decision table, backoff and `Retry-After`, the clock
/// offset, status queries, attempt and deadline limits and the key-expiry
/// rule. It never changes the key, method, path or body.
#[derive(Debug)]
pub struct Operation {
    order_id: String,
    idempotency_key: String,
    request: FrozenRequest,
    body: Arc<[u8]>,
    query: Option<FrozenRequest>,
    limits: CallLimits,
    clock: ClockOffset,
    maybe_landed: bool,
    key_expired: bool,
    attempts_total: u32,
    attempts_call: u32,
    retries: u32,
    clock_adjusted: bool,
    last_response: Option<StoredResponse>,
    last_problem: String,
    phase: Phase,
}

impl Operation {
    /// A call for the operation in `record` at local time `now_unix`, with an
    /// initial clock offset (e.g. learnt by earlier calls). An operation that
    /// may already have reached the platform and whose key is older than the
    /// retention is only ever queried, never sent again.
    pub fn start(
        record: &OperationRecord,
        limits: CallLimits,
        clock: ClockOffset,
        now_unix: u64,
    ) -> Result<Operation> {
        limits.check()?;
        let op: &NewOperation = &record.operation;
        let request = FrozenRequest::new(&op.method, &op.path, &op.idempotency_key, &op.body)?;
        let query = op
            .status_path
            .as_deref()
            .map(|p| FrozenRequest::new("GET", p, "", b""))
            .transpose()?;
        let maybe_landed = record.state.is_unresolved();
        let key_age = now_unix.saturating_sub(record.created_at);
        let key_expired = maybe_landed && key_age > limits.key_retention_secs;
        let mut machine = Operation {
            order_id: op.order_id.clone(),
            idempotency_key: op.idempotency_key.clone(),
            request,
            body: Arc::from(op.body.as_slice()),
            query,
            limits,
            clock,
            maybe_landed,
            key_expired,
            attempts_total: record.attempts,
            attempts_call: 0,
            retries: 0,
            clock_adjusted: false,
            last_response: None,
            last_problem: String::new(),
            phase: Phase::Ready(Target::Operation),
        };
        if key_expired {
            machine.phase = if machine.query.is_some() {
                Phase::Ready(Target::StatusQuery)
            } else {
                Phase::Done(Settlement::KeyExpired {
                    reason: format!("the key is {key_age} s old and no status path is known"),
                })
            };
        } else if maybe_landed && machine.query.is_some() {
            // A call that resumes an operation whose attempt may have landed
            // asks first.
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
        self.clock
    }

    /// Whether an attempt of this operation may have reached the platform.
    pub fn maybe_landed(&self) -> bool {
        self.maybe_landed
    }

    /// What to do next at `now`. After [`Step::Send`], report the attempt's
    /// result with [`Operation::handle`] before polling again.
    pub fn poll(&mut self, signer: &Signer, now: CallTime, entropy: &dyn Entropy) -> Step {
        loop {
            match &self.phase {
                Phase::Done(settlement) => return Step::Settled(settlement.clone()),
                Phase::Awaiting(_) => {
                    return Step::Settled(Settlement::Unknown {
                        reason: "polled again before the attempt's result was reported".into(),
                    })
                }
                Phase::Waiting { until, then } => {
                    if now.elapsed < *until {
                        return Step::Wait(*until - now.elapsed);
                    }
                    self.phase = Phase::Ready(*then);
                }
                Phase::Ready(target) => {
                    let target = *target;
                    return Step::Send(self.sign(target, signer, now, entropy));
                }
            }
        }
    }

    fn sign(
        &mut self,
        target: Target,
        signer: &Signer,
        now: CallTime,
        entropy: &dyn Entropy,
    ) -> Attempt {
        let timestamp = self.clock.apply(now.unix);
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
                };
            }
        };
        let (status, error_code) = match &reply {
            Reply::Response(r) => (Some(r.status), error_code_from_body(&r.body)),
            _ => (None, None),
        };
        let (next, wait) = match kind {
            AttemptKind::Operation => {
                self.after_operation(reply, error_code.as_deref(), now, entropy)
            }
            AttemptKind::StatusQuery => {
                self.after_query(reply, error_code.as_deref(), now, entropy)
            }
        };
        Reaction {
            next,
            wait,
            status,
            error_code,
        }
    }

    /// Ends the call now (cancelled, or out of retry budget) with what is
    /// known: unknown if an attempt may have landed, else not sent or
    /// refused. The key is kept either way.
    pub fn abandon(&mut self, reason: &str) -> Settlement {
        if let Phase::Done(settlement) = &self.phase {
            return settlement.clone();
        }
        self.last_problem = if self.last_problem.is_empty() {
            reason.to_owned()
        } else {
            format!("{reason}; {}", self.last_problem)
        };
        self.conclude()
    }

    fn after_operation(
        &mut self,
        reply: Reply,
        error_code: Option<&str>,
        now: CallTime,
        entropy: &dyn Entropy,
    ) -> (NextAction, Option<Duration>) {
        let has_status_path = self.query.is_some();
        let decision = match &reply {
            Reply::Response(r) => {
                let headers: Vec<(&str, &str)> = r
                    .headers
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.as_str()))
                    .collect();
                let result = AttemptResult::Response {
                    status: r.status,
                    error_code,
                    headers: &headers,
                };
                decide(&result, has_status_path, now.unix)
            }
            Reply::NotSent(_) => decide(&AttemptResult::NotSent, has_status_path, now.unix),
            Reply::SentNoResponse(_) => {
                decide(&AttemptResult::SentNoResponse, has_status_path, now.unix)
            }
        };
        self.maybe_landed |= match &reply {
            Reply::NotSent(_) => false,
            Reply::SentNoResponse(_) => true,
            Reply::Response(r) => !answered_before_the_operation(r.status, error_code),
        };
        self.note(&reply);
        let response = match reply {
            Reply::Response(r) => Some(r),
            _ => None,
        };
        match decision {
            Decision::Done { .. } => {
                self.settle(Settlement::Succeeded(response.unwrap_or_default()))
            }
            Decision::Fail(Failure::IdempotencyConflict) => {
                self.settle(Settlement::Conflict(response.unwrap_or_default()))
            }
            Decision::Fail(Failure::Rejected) => {
                let response = response.unwrap_or_default();
                if !answered_before_the_operation(response.status, error_code) {
                    self.settle(Settlement::Rejected(response))
                } else {
                    self.give_up()
                }
            }
            Decision::RetryNow => {
                self.retry(Target::Operation, Duration::ZERO, NextAction::RetryNow, now)
            }
            Decision::RetryBackoff { .. } => {
                let wait = self.backoff(entropy);
                self.retry(Target::Operation, wait, NextAction::RetryLater, now)
            }
            Decision::RetryAfter { seconds } => {
                let wait = Duration::from_secs(seconds);
                if wait > self.limits.policy.cap {
                    self.last_problem =
                        format!("Retry-After of {seconds} s exceeds the backoff cap");
                    return self.give_up();
                }
                self.retry(Target::Operation, wait, NextAction::RetryLater, now)
            }
            Decision::AdjustClockRetry { server_time } => {
                if self.clock_adjusted {
                    self.last_problem = "the platform refused the timestamp twice".into();
                    return self.give_up();
                }
                self.clock_adjusted = true;
                self.clock = ClockOffset::between(server_time, now.unix);
                self.retry(
                    Target::Operation,
                    Duration::ZERO,
                    NextAction::AdjustClock,
                    now,
                )
            }
            Decision::QueryStatus => self.retry(
                Target::StatusQuery,
                Duration::ZERO,
                NextAction::QueryStatus,
                now,
            ),
        }
    }

    fn after_query(
        &mut self,
        reply: Reply,
        error_code: Option<&str>,
        now: CallTime,
        entropy: &dyn Entropy,
    ) -> (NextAction, Option<Duration>) {
        self.note(&reply);
        match reply {
            Reply::Response(r) if (200..300).contains(&r.status) => {
                self.settle(Settlement::Succeeded(r))
            }
            Reply::Response(r) if r.status == 404 => {
                if self.key_expired {
                    self.settle(Settlement::KeyExpired {
                        reason: "the status query found no such operation, and the expired key may not be sent again"
                            .into(),
                    })
                } else {
                    // The operation did not land: send it again, same key.
                    self.retry(Target::Operation, Duration::ZERO, NextAction::RetryNow, now)
                }
            }
            Reply::Response(r) if r.status == 409 && error_code == Some("nonce_reused") => self
                .retry(
                    Target::StatusQuery,
                    Duration::ZERO,
                    NextAction::RetryNow,
                    now,
                ),
            Reply::Response(r)
                if r.status == 401
                    && error_code == Some("timestamp_out_of_window")
                    && !self.clock_adjusted =>
            {
                let headers: Vec<(&str, &str)> = r
                    .headers
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.as_str()))
                    .collect();
                match crate::policy::server_time_from_headers(&headers) {
                    Some(server_time) => {
                        self.clock_adjusted = true;
                        self.clock = ClockOffset::between(server_time, now.unix);
                        self.retry(
                            Target::StatusQuery,
                            Duration::ZERO,
                            NextAction::AdjustClock,
                            now,
                        )
                    }
                    None => {
                        let wait = self.backoff(entropy);
                        self.retry(Target::StatusQuery, wait, NextAction::QueryLater, now)
                    }
                }
            }
            _ => {
                let wait = self.backoff(entropy);
                self.retry(Target::StatusQuery, wait, NextAction::QueryLater, now)
            }
        }
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
        let wait = self.limits.policy.jittered(self.retries, entropy.jitter());
        self.retries = self.retries.saturating_add(1);
        wait
    }

    fn settle(&mut self, settlement: Settlement) -> (NextAction, Option<Duration>) {
        self.phase = Phase::Done(settlement);
        (NextAction::Settle, None)
    }

    fn retry(
        &mut self,
        then: Target,
        wait: Duration,
        action: NextAction,
        now: CallTime,
    ) -> (NextAction, Option<Duration>) {
        let policy = &self.limits.policy;
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

    fn conclude(&mut self) -> Settlement {
        let reason = std::mem::take(&mut self.last_problem);
        let settlement = if self.key_expired {
            Settlement::KeyExpired { reason }
        } else if self.maybe_landed {
            Settlement::Unknown { reason }
        } else if let Some(response) = self.last_response.take() {
            Settlement::Refused(response)
        } else {
            Settlement::NotSent { reason }
        };
        self.phase = Phase::Done(settlement.clone());
        settlement
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::OperationState;
    use std::sync::atomic::{AtomicU64, Ordering};

    struct Counting(AtomicU64);

    impl Entropy for Counting {
        fn nonce(&self) -> Nonce {
            let n = self.0.fetch_add(1, Ordering::Relaxed);
            let mut b = [0u8; 16];
            b[..8].copy_from_slice(&n.to_le_bytes());
            Nonce::from_random_bytes(b)
        }
        fn jitter(&self) -> u64 {
            u64::MAX
        }
    }

    const NOW: u64 = 1_767_225_600;

    fn record(
        state: OperationState,
        status_path: Option<&str>,
        created_at: u64,
    ) -> OperationRecord {
        OperationRecord {
            operation: NewOperation {
                order_id: "ord-1".into(),
                idempotency_key: "create-ord-1".into(),
                method: "POST".into(),
                path: "/v1/payments".into(),
                body: b"{\"amount\":1}".to_vec(),
                body_sha256: crate::protocol::body_sha256_hex(b"{\"amount\":1}"),
                status_path: status_path.map(str::to_owned),
            },
            state,
            attempts: 0,
            created_at,
            updated_at: created_at,
            response: None,
        }
    }

    fn response(status: u16, headers: &[(&str, &str)], body: &str) -> Reply {
        Reply::Response(StoredResponse {
            status,
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: body.as_bytes().to_vec(),
            replayed: false,
        })
    }

    fn err(code: &str) -> String {
        format!(r#"{{"error":{{"code":"{code}","message":"m"}}}}"#)
    }

    /// Drives `op` against scripted replies; returns the attempts sent and
    /// the settlement. Waits advance the elapsed clock.
    fn drive(op: &mut Operation, replies: Vec<Reply>) -> (Vec<Attempt>, Settlement, Duration) {
        let signer = Signer::new("key_live_1", b"0123456789abcdef0123").unwrap();
        let entropy = Counting(AtomicU64::new(1));
        let mut replies = replies.into_iter();
        let mut sent = Vec::new();
        let mut elapsed = Duration::ZERO;
        loop {
            let now = CallTime {
                unix: NOW + elapsed.as_secs(),
                elapsed,
            };
            match op.poll(&signer, now, &entropy) {
                Step::Send(attempt) => {
                    sent.push(attempt);
                    let reply = replies
                        .next()
                        .expect("the machine sent more attempts than scripted");
                    op.handle(reply, now, &entropy);
                }
                Step::Wait(d) => elapsed += d,
                Step::Settled(s) => {
                    assert!(
                        replies.next().is_none(),
                        "the machine settled before every scripted reply"
                    );
                    return (sent, s, elapsed);
                }
            }
        }
    }

    fn start(state: OperationState, status_path: Option<&str>) -> Operation {
        Operation::start(
            &record(state, status_path, NOW),
            CallLimits::default(),
            ClockOffset::ZERO,
            NOW,
        )
        .unwrap()
    }

    fn header<'a>(a: &'a Attempt, name: &str) -> Option<&'a str> {
        a.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn success_first_time() {
        let mut op = start(OperationState::Pending, None);
        let (sent, s, _) = drive(&mut op, vec![response(201, &[], "{}")]);
        assert_eq!(sent.len(), 1);
        assert!(matches!(s, Settlement::Succeeded(ref r) if r.status == 201));
        assert_eq!(header(&sent[0], "Idempotency-Key"), Some("create-ord-1"));
    }

    #[test]
    fn retries_keep_key_and_body_but_resign() {
        let mut op = start(OperationState::Pending, None);
        let (sent, s, elapsed) = drive(
            &mut op,
            vec![
                response(500, &[], ""),
                response(502, &[], ""),
                response(200, &[], "{}"),
            ],
        );
        assert!(matches!(s, Settlement::Succeeded(_)));
        assert_eq!(sent.len(), 3);
        assert!(elapsed > Duration::ZERO, "backoff waited");
        for a in &sent {
            assert_eq!(header(a, "Idempotency-Key"), Some("create-ord-1"));
            assert_eq!(&*a.body, b"{\"amount\":1}");
        }
        let nonces: std::collections::HashSet<_> =
            sent.iter().map(|a| header(a, "X-Nonce").unwrap()).collect();
        assert_eq!(nonces.len(), 3);
        assert_eq!(
            sent.iter().map(|a| a.number).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
    }

    #[test]
    fn gateway_timeout_queries_status_then_resends_same_key_on_404() {
        let mut op = start(OperationState::Pending, Some("/v1/payments?order_id=ord-1"));
        let (sent, s, _) = drive(
            &mut op,
            vec![
                response(504, &[], ""),
                response(404, &[], &err("not_found")),
                response(201, &[], "{}"),
            ],
        );
        assert!(matches!(s, Settlement::Succeeded(ref r) if r.status == 201));
        let kinds: Vec<_> = sent.iter().map(|a| (a.kind, a.method.as_str())).collect();
        assert_eq!(
            kinds,
            vec![
                (AttemptKind::Operation, "POST"),
                (AttemptKind::StatusQuery, "GET"),
                (AttemptKind::Operation, "POST")
            ]
        );
        assert_eq!(sent[1].path, "/v1/payments?order_id=ord-1");
        assert_eq!(header(&sent[1], "Idempotency-Key"), None);
        assert!(sent[1].body.is_empty());
    }

    #[test]
    fn status_query_success_settles() {
        let mut op = start(OperationState::Pending, Some("/s"));
        let (_, s, _) = drive(
            &mut op,
            vec![
                Reply::SentNoResponse("timeout".into()),
                response(200, &[], "{\"id\":1}"),
            ],
        );
        assert!(matches!(s, Settlement::Succeeded(ref r) if r.body == b"{\"id\":1}"));
    }

    #[test]
    fn lost_responses_without_status_path_end_unknown_with_the_key() {
        let mut op = start(OperationState::Pending, None);
        let replies = (0..8)
            .map(|_| Reply::SentNoResponse("reset".into()))
            .collect();
        let (sent, s, _) = drive(&mut op, replies);
        assert_eq!(sent.len(), 8);
        assert!(matches!(s, Settlement::Unknown { .. }));
        let e = s.into_result("ord-1", "create-ord-1", 8).unwrap_err();
        assert_eq!(e.code(), crate::ErrorCode::OutcomeUnknown);
        assert_eq!(e.idempotency_key(), Some("create-ord-1"));
    }

    #[test]
    fn never_sent_ends_not_sent_and_pending() {
        let mut op = start(OperationState::Pending, None);
        let replies = (0..8).map(|_| Reply::NotSent("refused".into())).collect();
        let (_, s, _) = drive(&mut op, replies);
        assert!(matches!(s, Settlement::NotSent { .. }));
        assert_eq!(s.journal_state(), OperationState::Pending);
    }

    #[test]
    fn a_500_then_lost_connections_is_unknown_not_not_sent() {
        let mut op = start(OperationState::Pending, None);
        let mut replies = vec![response(500, &[], "")];
        replies.extend((0..7).map(|_| Reply::NotSent("refused".into())));
        let (_, s, _) = drive(&mut op, replies);
        assert!(matches!(s, Settlement::Unknown { .. }), "{s:?}");
    }

    #[test]
    fn clock_skew_adjusts_once() {
        let mut op = start(OperationState::Pending, None);
        let skew = [("X-Server-Time", "1767229200")];
        let (sent, s, _) = drive(
            &mut op,
            vec![
                response(401, &skew, &err("timestamp_out_of_window")),
                response(201, &[], "{}"),
            ],
        );
        assert!(matches!(s, Settlement::Succeeded(_)));
        assert_eq!(header(&sent[1], "X-Timestamp"), Some("1767229200"));
        assert_eq!(op.clock_offset().seconds(), 3600);

        let mut op = start(OperationState::Pending, None);
        let (_, s, _) = drive(
            &mut op,
            vec![
                response(401, &skew, &err("timestamp_out_of_window")),
                response(401, &skew, &err("timestamp_out_of_window")),
            ],
        );
        assert!(
            matches!(s, Settlement::Refused(ref r) if r.status == 401),
            "{s:?}"
        );
    }

    #[test]
    fn second_skew_after_a_possible_landing_is_unknown() {
        let mut op = start(OperationState::Pending, None);
        let skew = [("Date", "Thu, 01 Jan 2026 01:00:00 GMT")];
        let (_, s, _) = drive(
            &mut op,
            vec![
                response(500, &[], ""),
                response(401, &skew, &err("timestamp_out_of_window")),
                response(401, &skew, &err("timestamp_out_of_window")),
            ],
        );
        assert!(matches!(s, Settlement::Unknown { .. }), "{s:?}");
    }

    #[test]
    fn final_answers() {
        let mut op = start(OperationState::Pending, None);
        let (_, s, _) = drive(
            &mut op,
            vec![response(409, &[], &err("idempotency_conflict"))],
        );
        assert!(matches!(s, Settlement::Conflict(_)));
        let mut op = start(OperationState::Pending, None);
        let (_, s, _) = drive(&mut op, vec![response(402, &[], &err("card_declined"))]);
        let e = s.into_result("ord-1", "create-ord-1", 1).unwrap_err();
        assert_eq!(
            (e.code(), e.http_status()),
            (crate::ErrorCode::Rejected, Some(402))
        );
        assert!(e.body().unwrap().starts_with(b"{\"error\""));
    }

    #[test]
    fn nonce_reused_retries_at_once_with_a_fresh_nonce() {
        let mut op = start(OperationState::Pending, None);
        let (sent, s, elapsed) = drive(
            &mut op,
            vec![
                response(409, &[], &err("nonce_reused")),
                response(201, &[], "{}"),
            ],
        );
        assert!(matches!(s, Settlement::Succeeded(_)));
        assert_eq!(elapsed, Duration::ZERO);
        assert_ne!(header(&sent[0], "X-Nonce"), header(&sent[1], "X-Nonce"));
    }

    #[test]
    fn nonce_reused_means_a_copy_arrived_so_the_outcome_is_unknown() {
        // Only a copy of this very attempt (a duplicating proxy or network)
        // can have used its fresh nonce, and that copy may have run the
        // payment: the call must never end as "not sent" and pending.
        let mut op = start(OperationState::Pending, None);
        let mut replies = vec![response(409, &[], &err("nonce_reused"))];
        replies.extend((0..7).map(|_| Reply::NotSent("connection refused".into())));
        let (sent, s, _) = drive(&mut op, replies);
        assert_eq!(sent.len(), 8);
        assert!(matches!(s, Settlement::Unknown { .. }), "{s:?}");
        assert_eq!(s.journal_state(), OperationState::Unknown);
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let mut op = start(OperationState::Pending, None);
        let (_, s, elapsed) = drive(
            &mut op,
            vec![
                response(429, &[("Retry-After", "3")], ""),
                response(201, &[], "{}"),
            ],
        );
        assert!(matches!(s, Settlement::Succeeded(_)));
        assert_eq!(elapsed, Duration::from_secs(3));
        let mut op = start(OperationState::Pending, None);
        let (sent, s, _) = drive(&mut op, vec![response(429, &[("Retry-After", "60")], "")]);
        assert_eq!(sent.len(), 1);
        assert!(matches!(s, Settlement::Refused(ref r) if r.status == 429));
    }

    #[test]
    fn deadline_stops_waiting() {
        let limits = CallLimits {
            policy: RetryPolicy {
                deadline: Duration::from_secs(1),
                ..RetryPolicy::default()
            },
            ..CallLimits::default()
        };
        let mut op = Operation::start(
            &record(OperationState::Pending, None, NOW),
            limits,
            ClockOffset::ZERO,
            NOW,
        )
        .unwrap();
        let (sent, s, elapsed) = drive(&mut op, vec![response(503, &[("Retry-After", "2")], "")]);
        assert_eq!(sent.len(), 1);
        assert!(elapsed < Duration::from_secs(1));
        assert!(
            matches!(s, Settlement::Unknown { .. }),
            "a 503 may come after the operation ran: {s:?}"
        );
    }

    #[test]
    fn resumed_in_flight_operation_asks_first() {
        let mut op = start(OperationState::InFlight, Some("/s"));
        let (sent, s, _) = drive(&mut op, vec![response(200, &[], "{}")]);
        assert_eq!(sent[0].kind, AttemptKind::StatusQuery);
        assert!(matches!(s, Settlement::Succeeded(_)));
    }

    #[test]
    fn expired_key_is_never_posted_again() {
        let old = NOW - PLATFORM_KEY_RETENTION_SECS - 1;
        let mut op = Operation::start(
            &record(OperationState::Unknown, None, old),
            CallLimits::default(),
            ClockOffset::ZERO,
            NOW,
        )
        .unwrap();
        let (sent, s, _) = drive(&mut op, vec![]);
        assert!(sent.is_empty());
        assert!(matches!(s, Settlement::KeyExpired { .. }));

        let mut op = Operation::start(
            &record(OperationState::Unknown, Some("/s"), old),
            CallLimits::default(),
            ClockOffset::ZERO,
            NOW,
        )
        .unwrap();
        let (sent, s, _) = drive(&mut op, vec![response(404, &[], "")]);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].kind, AttemptKind::StatusQuery);
        let e = s.into_result("ord-1", "create-ord-1", 1).unwrap_err();
        assert_eq!(e.code(), crate::ErrorCode::KeyExpired);

        // A pending operation never reached the platform: its age is harmless.
        let mut op = Operation::start(
            &record(OperationState::Pending, None, old),
            CallLimits::default(),
            ClockOffset::ZERO,
            NOW,
        )
        .unwrap();
        let (_, s, _) = drive(&mut op, vec![response(201, &[], "{}")]);
        assert!(matches!(s, Settlement::Succeeded(_)));
    }

    #[test]
    fn retention_above_48_hours_is_refused() {
        let limits = CallLimits {
            key_retention_secs: PLATFORM_KEY_RETENTION_SECS + 1,
            ..CallLimits::default()
        };
        let e = Operation::start(
            &record(OperationState::Pending, None, NOW),
            limits,
            ClockOffset::ZERO,
            NOW,
        )
        .unwrap_err();
        assert_eq!(e.field(), Some("key_retention_secs"));
    }
}
