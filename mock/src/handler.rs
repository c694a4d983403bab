//! The request pipeline: route, verify (payidem's Verifier), faults,
//! idempotency store, operation.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use payidem::protocol::Refusal;
use payidem::verifier::{IncomingRequest, Verifier};
use serde_json::json;

use crate::answer::Answer;
use crate::clock::ServerClock;
use crate::faults::{FaultDice, FaultKind};
use crate::ledger::{CreatePayment, Ledger};
use crate::routes::{route, NoRoute, Route};
use crate::stats::Stats;
use crate::store::{fingerprint, Lookup, Store};

/// Everything the mock remembers; the stats live under the same lock.
pub(crate) struct State {
    pub(crate) ledger: Ledger,
    pub(crate) store: Store,
    pub(crate) stats: Stats,
}

impl State {
    pub(crate) fn snapshot(&self) -> Stats {
        let mut stats = self.stats.clone();
        stats.payments = self.ledger.payments() as u64;
        stats.refunds = self.ledger.refunds() as u64;
        stats.idempotency_keys_stored = self.store.len() as u64;
        stats
    }

    pub(crate) fn reset(&mut self) {
        self.ledger.clear();
        self.store.clear();
        self.stats = Stats::default();
    }
}

/// State shared by every worker.
pub(crate) struct Shared {
    pub(crate) verifier: Verifier,
    pub(crate) state: Mutex<State>,
    pub(crate) clock: ServerClock,
    pub(crate) dice: FaultDice,
    pub(crate) control: bool,
    pub(crate) processing_delay_ms: AtomicU64,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // Every mutation keeps the state consistent step by step; a panic
        // caught mid-request leaves it usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What to do with an answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Action {
    Respond,
    /// Close the connection without answering.
    Drop,
    /// Answer after this many milliseconds.
    Delay(u64),
}

/// The result of processing one request.
pub(crate) struct Outcome {
    pub(crate) route: &'static str,
    pub(crate) answer: Answer,
    pub(crate) action: Action,
    pub(crate) fault: Option<FaultKind>,
}

impl Outcome {
    fn answer(route: &'static str, answer: Answer) -> Outcome {
        Outcome {
            route,
            answer,
            action: Action::Respond,
            fault: None,
        }
    }
}

/// One request as read from the wire.
pub(crate) struct Incoming<'a> {
    pub(crate) method: &'a str,
    pub(crate) target: &'a str,
    pub(crate) headers: &'a [(&'a str, &'a str)],
    pub(crate) body: &'a [u8],
    pub(crate) peer: Option<SocketAddr>,
}

/// Label of requests that matched no route.
pub(crate) const UNKNOWN_ROUTE: &str = "unknown";

fn fault_answer(kind: FaultKind, shared: &Shared) -> Answer {
    let retry_after = |status, code, message| {
        let seconds = shared.dice.retry_after_seconds().to_string();
        Answer::error(status, code, message).with_header("Retry-After", &seconds)
    };
    match kind {
        FaultKind::Error500BeforeCommit | FaultKind::Error500AfterCommit => {
            Answer::error(500, "internal_error", "injected fault: internal error")
        }
        FaultKind::Error502 => Answer::error(502, "bad_gateway", "injected fault: bad gateway"),
        FaultKind::Error503 | FaultKind::StatusError503 => retry_after(
            503,
            "service_unavailable",
            "injected fault: service unavailable",
        ),
        FaultKind::Error429 => {
            retry_after(429, "rate_limited", "injected fault: too many requests")
        }
        FaultKind::Timeout504BeforeCommit | FaultKind::Timeout504AfterCommit => {
            Answer::error(504, "gateway_timeout", "injected fault: gateway timeout")
        }
        FaultKind::DropAfterCommit | FaultKind::DelayAfterCommit => Answer::error(
            500,
            "internal_error",
            "injected fault without an answer of its own",
        ),
    }
}

/// Releases a claimed idempotency key if the operation never finishes.
struct Claim<'a> {
    shared: &'a Shared,
    key_id: &'a str,
    key: &'a str,
    armed: bool,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.shared.lock().store.abandon(self.key_id, self.key);
        }
    }
}

/// Processes one request whose body was read in full.
pub(crate) fn process(shared: &Shared, req: &Incoming<'_>) -> Outcome {
    let route = match route(req.method, req.target) {
        Ok(r) => r,
        Err(NoRoute::NotFound) => {
            return Outcome::answer(
                UNKNOWN_ROUTE,
                Answer::error(404, "not_found", "no such route"),
            )
        }
        Err(NoRoute::MethodNotAllowed { allow }) => {
            let answer = Answer::error(
                405,
                "method_not_allowed",
                format!("this route allows {allow}"),
            )
            .with_header("Allow", allow);
            return Outcome::answer(UNKNOWN_ROUTE, answer);
        }
    };
    let label = route.label();
    if route.is_control() {
        if !shared.control {
            return Outcome::answer(
                UNKNOWN_ROUTE,
                Answer::error(404, "not_found", "no such route (start with --control)"),
            );
        }
        if !req.peer.is_some_and(|p| p.ip().is_loopback()) {
            return Outcome::answer(
                label,
                Answer::error(
                    403,
                    "forbidden",
                    "control routes answer loopback peers only",
                ),
            );
        }
        if let Some(refused) = crate::control::refuse_browser(req.method, req.headers) {
            return Outcome::answer(label, refused);
        }
        return Outcome::answer(label, crate::control::handle(shared, &route, req.body));
    }
    if route == Route::Metrics {
        return Outcome::answer(label, crate::answer::metrics(&shared.verifier));
    }
    if !route.is_api() {
        return Outcome::answer(label, Answer::json(200, &json!({"ok": true})));
    }

    let now = shared.clock.now();
    let incoming = IncomingRequest {
        method: req.method,
        path: req.target,
        headers: req.headers,
        body: req.body,
    };
    let verified = match shared.verifier.verify(&incoming, now) {
        Ok(v) => v,
        Err(e) => return Outcome::answer(label, Answer::refusal(&Refusal::for_error(&e))),
    };

    match &route {
        Route::PaymentOfOrder { .. } | Route::GetPayment { .. } | Route::GetRefund { .. } => {
            if shared.dice.draw_status() {
                let kind = FaultKind::StatusError503;
                return Outcome {
                    route: label,
                    answer: fault_answer(kind, shared),
                    action: Action::Respond,
                    fault: Some(kind),
                };
            }
            Outcome::answer(label, query(shared, &route))
        }
        Route::CreatePayment | Route::CreateRefund { .. } => {
            let key = verified.idempotency_key.unwrap_or_default();
            operate(shared, req, &route, verified.key_id, key, label)
        }
        _ => Outcome::answer(
            label,
            Answer::error(500, "internal_error", "unrouted request"),
        ),
    }
}

fn query(shared: &Shared, route: &Route) -> Answer {
    let state = shared.lock();
    match route {
        Route::PaymentOfOrder { order_id: None } => {
            Answer::invalid("order_id", "the order_id query parameter is required")
        }
        Route::PaymentOfOrder {
            order_id: Some(order_id),
        } => match payidem::protocol::fields::check_order_id(order_id) {
            Ok(()) => state.ledger.payment_of_order(order_id),
            Err(e) => Answer::from_payidem(&e),
        },
        Route::GetPayment { payment_id } => state.ledger.get_payment(payment_id),
        Route::GetRefund {
            payment_id,
            refund_id,
        } => state.ledger.get_refund(payment_id, refund_id),
        _ => Answer::error(500, "internal_error", "not a query route"),
    }
}

fn operate(
    shared: &Shared,
    req: &Incoming<'_>,
    route: &Route,
    key_id: &str,
    key: &str,
    label: &'static str,
) -> Outcome {
    let (fault, delay_ms) = shared.dice.draw_post();
    if let Some(kind) = fault.filter(|k| !k.after_commit()) {
        return Outcome {
            route: label,
            answer: fault_answer(kind, shared),
            action: Action::Respond,
            fault: Some(kind),
        };
    }
    let fp = fingerprint(req.method, req.target, req.body);
    let lookup = {
        let mut state = shared.lock();
        let lookup = state.store.lookup(key_id, key, &fp, shared.clock.now());
        if matches!(lookup, Lookup::Finished(_)) {
            state.stats.replays += 1;
        }
        lookup
    };
    let answer = match lookup {
        Lookup::Conflict => {
            return Outcome::answer(
                label,
                Answer::error(
                    409,
                    "idempotency_conflict",
                    "this Idempotency-Key was used with another request",
                ),
            )
        }
        Lookup::InProgress => {
            return Outcome::answer(
                label,
                Answer::error(
                    409,
                    "idempotency_in_progress",
                    "a request with this Idempotency-Key is still running",
                ),
            )
        }
        Lookup::Finished(stored) => (*stored).clone().with_header("Idempotent-Replayed", "true"),
        Lookup::Claimed => {
            let mut claim = Claim {
                shared,
                key_id,
                key,
                armed: true,
            };
            let pause = shared.processing_delay_ms.load(Ordering::Relaxed);
            if pause > 0 {
                std::thread::sleep(Duration::from_millis(pause));
            }
            let mut state = shared.lock();
            let state = &mut *state;
            let now = shared.clock.now();
            let answer = match route {
                Route::CreatePayment => match CreatePayment::parse(req.body) {
                    Ok(create) => state
                        .ledger
                        .create_payment(create, key, now, &mut state.stats),
                    Err(invalid) => invalid,
                },
                Route::CreateRefund { payment_id } => {
                    state.ledger.refund(payment_id, req.body, now)
                }
                _ => Answer::error(500, "internal_error", "not an operation route"),
            };
            state
                .store
                .finish(key_id, key, Arc::new(answer.clone()), now);
            claim.armed = false;
            answer
        }
    };
    let (answer, action) = match fault {
        Some(FaultKind::DropAfterCommit) => (answer, Action::Drop),
        Some(FaultKind::DelayAfterCommit) => (answer, Action::Delay(delay_ms)),
        Some(kind) => (fault_answer(kind, shared), Action::Respond),
        None => (answer, Action::Respond),
    };
    Outcome {
        route: label,
        answer,
        action,
        fault,
    }
}
