//! The machine against scripted replies.

use super::*;
use crate::policy::{ClockOffset, Landed, RetryBudget, RetryBudgetConfig};
use crate::protocol::{Nonce, Signer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

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

fn operation(status_path: Option<&str>) -> FrozenOperation {
    FrozenOperation {
        order_id: "ord-1".into(),
        idempotency_key: "create-ord-1".into(),
        method: "POST".into(),
        path: "/v1/payments".into(),
        body: b"{\"amount\":1}".to_vec(),
        body_sha256: crate::protocol::body_sha256_hex(b"{\"amount\":1}"),
        status_path: status_path.map(str::to_owned),
    }
}

fn progress(state: OperationState, created_at: u64) -> Progress {
    Progress {
        state,
        attempts: 0,
        created_at,
        first_recorded: false,
    }
}

fn setup(limits: CallLimits) -> CallSetup {
    CallSetup {
        limits,
        clock: ClockOffset::ZERO,
        clock_trusted: true,
        budget: None,
    }
}

fn begin(
    state: OperationState,
    status_path: Option<&str>,
    created_at: u64,
    limits: CallLimits,
) -> Operation {
    Operation::start(
        &operation(status_path),
        progress(state, created_at),
        setup(limits),
        NOW,
    )
    .unwrap()
}

fn response(status: u16, headers: &[(&str, &str)], body: &str) -> Reply {
    Reply::Response(Response {
        status,
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        body: body.as_bytes().to_vec(),
        replayed: false,
    })
}

/// The platform's 401 `timestamp_out_of_window`, telling its clock in
/// the header `clock`.
fn out_of_window(clock: &[(&str, &str)]) -> Reply {
    response(401, clock, &err("timestamp_out_of_window"))
}

fn err(code: &str) -> String {
    format!(r#"{{"error":{{"code":"{code}","message":"m"}}}}"#)
}

/// The signer and the counting entropy every machine here is polled with.
fn keys() -> (Signer, Counting) {
    let signer = Signer::new("key_live_1", b"0123456789abcdef0123").unwrap();
    (signer, Counting(AtomicU64::new(1)))
}

/// Drives `op` against scripted replies; returns the attempts sent and
/// the settlement. Waits advance the elapsed clock.
fn drive(op: &mut Operation, replies: Vec<Reply>) -> (Vec<Attempt>, End, Duration) {
    let (signer, entropy) = keys();
    let mut replies = replies.into_iter();
    let mut sent = Vec::new();
    let mut elapsed = Duration::ZERO;
    let mut persists = 0;
    loop {
        let now = CallTime {
            unix: NOW + elapsed.as_secs(),
            elapsed,
        };
        match op.poll(&signer, now, &entropy) {
            Step::Persist(p) => {
                assert_eq!(p.attempt, op.attempts() + 1);
                persists += 1;
                op.persisted();
            }
            Step::Send(attempt) => {
                if attempt.kind == AttemptKind::Operation {
                    assert_eq!(
                        persists, 1,
                        "exactly one persist before each operation attempt"
                    );
                }
                persists = 0;
                sent.push(attempt);
                let reply = replies
                    .next()
                    .expect("the machine sent more attempts than scripted");
                op.handle(reply, now, &entropy);
            }
            Step::Wait(d) => elapsed += d,
            Step::End(s) => {
                assert!(
                    replies.next().is_none(),
                    "the machine settled before every scripted reply"
                );
                return (sent, s, elapsed);
            }
        }
    }
}

/// A pending operation without a status path, started at `NOW` with `setup`.
fn pending_with(setup: CallSetup) -> crate::error::Result<Operation> {
    Operation::start(
        &operation(None),
        progress(OperationState::Pending, NOW),
        setup,
        NOW,
    )
}

/// Drives `op` through `first` then a 201; returns how long it waited.
fn succeeds_after(op: &mut Operation, first: Reply) -> Duration {
    let (_, end, elapsed) = drive(op, vec![first, response(201, &[], "{}")]);
    assert!(matches!(end, End::Succeeded(_)), "{end:?}");
    elapsed
}

fn start(state: OperationState, status_path: Option<&str>) -> Operation {
    begin(state, status_path, NOW, CallLimits::default())
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
    assert!(matches!(s, End::Succeeded(ref r) if r.status == 201));
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
    assert!(matches!(s, End::Succeeded(_)));
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
    assert!(matches!(s, End::Succeeded(ref r) if r.status == 201));
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
    assert!(matches!(s, End::Succeeded(ref r) if r.body == b"{\"id\":1}"));
}

#[test]
fn lost_responses_without_status_path_end_unknown_with_the_key() {
    let mut op = start(OperationState::Pending, None);
    let replies = (0..8)
        .map(|_| Reply::SentNoResponse("reset".into()))
        .collect();
    let (sent, s, _) = drive(&mut op, replies);
    assert_eq!(sent.len(), 8);
    assert!(matches!(s, End::Unknown { .. }));
    let e = s.into_result("ord-1", "create-ord-1", 8).unwrap_err();
    assert_eq!(e.code(), crate::error::ErrorCode::OutcomeUnknown);
    assert_eq!(e.idempotency_key(), Some("create-ord-1"));
}

#[test]
fn never_sent_ends_not_sent_and_pending() {
    let mut op = start(OperationState::Pending, None);
    let replies = (0..8).map(|_| Reply::NotSent("refused".into())).collect();
    let (_, s, _) = drive(&mut op, replies);
    assert!(matches!(s, End::NotSent { .. }));
    assert_eq!(s.state(), OperationState::Pending);
}

#[test]
fn a_500_then_lost_connections_is_unknown_not_not_sent() {
    let mut op = start(OperationState::Pending, None);
    let mut replies = vec![response(500, &[], "")];
    replies.extend((0..7).map(|_| Reply::NotSent("refused".into())));
    let (_, s, _) = drive(&mut op, replies);
    assert!(matches!(s, End::Unknown { .. }), "{s:?}");
}

#[test]
fn clock_skew_adjusts_once() {
    let mut op = start(OperationState::Pending, None);
    let skew = [("X-Server-Time", "1767225900")];
    let (sent, s, _) = drive(
        &mut op,
        vec![out_of_window(&skew), response(201, &[], "{}")],
    );
    assert!(matches!(s, End::Succeeded(_)));
    assert_eq!(header(&sent[1], "X-Timestamp"), Some("1767225900"));
    assert_eq!(op.clock_offset().seconds(), 300);

    let mut op = start(OperationState::Pending, None);
    let (_, s, _) = drive(&mut op, vec![out_of_window(&skew), out_of_window(&skew)]);
    assert!(
        matches!(s, End::Refused { response: ref r, .. } if r.status == 401),
        "{s:?}"
    );
}

#[test]
fn second_skew_after_a_possible_landing_is_unknown() {
    let mut op = start(OperationState::Pending, None);
    let skew = [("Date", "Thu, 01 Jan 2026 00:05:00 GMT")];
    let (_, s, _) = drive(
        &mut op,
        vec![
            response(500, &[], ""),
            out_of_window(&skew),
            out_of_window(&skew),
        ],
    );
    assert!(matches!(s, End::Unknown { .. }), "{s:?}");
}

#[test]
fn final_answers() {
    let mut op = start(OperationState::Pending, None);
    let (_, s, _) = drive(
        &mut op,
        vec![response(409, &[], &err("idempotency_conflict"))],
    );
    assert!(matches!(s, End::Conflict(_)));
    let mut op = start(OperationState::Pending, None);
    let (_, s, _) = drive(&mut op, vec![response(402, &[], &err("card_declined"))]);
    let e = s.into_result("ord-1", "create-ord-1", 1).unwrap_err();
    assert_eq!(
        (e.code(), e.http_status()),
        (crate::error::ErrorCode::Rejected, Some(402))
    );
    assert!(e.body().unwrap().starts_with(b"{\"error\""));
    assert_eq!(
        (e.platform_code(), e.platform_message()),
        (Some("card_declined"), Some("m"))
    );
    assert_eq!(
        e.message(),
        "order ord-1: the platform refused the operation with HTTP 402 card_declined: m (final)"
    );
    let mut op = start(OperationState::Pending, None);
    let (_, s, _) = drive(&mut op, vec![response(400, &[], "<html>bad</html>")]);
    let e = s.into_result("ord-2", "create-ord-2", 1).unwrap_err();
    assert_eq!((e.platform_code(), e.platform_message()), (None, None));
    assert_eq!(
        e.message(),
        "order ord-2: the platform refused the operation with HTTP 400 (final)"
    );
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
    assert!(matches!(s, End::Succeeded(_)));
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
    assert!(matches!(s, End::Unknown { .. }), "{s:?}");
    assert_eq!(s.state(), OperationState::Unknown);
}

#[test]
fn retry_after_is_honoured_and_capped() {
    let mut op = start(OperationState::Pending, None);
    let elapsed = succeeds_after(&mut op, response(429, &[("Retry-After", "3")], ""));
    assert_eq!(elapsed, Duration::from_secs(3));
    let mut op = start(OperationState::Pending, None);
    let (sent, s, _) = drive(&mut op, vec![response(429, &[("Retry-After", "60")], "")]);
    assert_eq!(sent.len(), 1);
    assert!(matches!(s, End::Refused { response: ref r, .. } if r.status == 429));
}

#[test]
fn deadline_stops_waiting() {
    let limits = CallLimits {
        policy: crate::policy::RetryPolicy {
            deadline: Duration::from_secs(1),
            ..crate::policy::RetryPolicy::default()
        },
        ..CallLimits::default()
    };
    let mut op = begin(OperationState::Pending, None, NOW, limits);
    let (sent, s, elapsed) = drive(&mut op, vec![response(503, &[("Retry-After", "2")], "")]);
    assert_eq!(sent.len(), 1);
    assert!(elapsed < Duration::from_secs(1));
    assert!(
        matches!(s, End::Unknown { .. }),
        "a 503 may come after the operation ran: {s:?}"
    );
}

#[test]
fn resumed_in_flight_operation_asks_first() {
    let mut op = start(OperationState::InFlight, Some("/s"));
    let (sent, s, _) = drive(&mut op, vec![response(200, &[], "{}")]);
    assert_eq!(sent[0].kind, AttemptKind::StatusQuery);
    assert!(matches!(s, End::Succeeded(_)));
}

#[test]
fn expired_key_is_never_posted_again() {
    let old = NOW - PLATFORM_KEY_RETENTION_SECS - 1;
    // Pending too: its row may come from a journal rolled back, or
    // restored from a backup, after it was sent.
    for state in [OperationState::Unknown, OperationState::Pending] {
        let mut op = begin(state, None, old, CallLimits::default());
        let (sent, s, _) = drive(&mut op, vec![]);
        assert!(sent.is_empty(), "{state:?}");
        assert!(matches!(s, End::KeyExpired { .. }), "{state:?}");

        let mut op = begin(state, Some("/s"), old, CallLimits::default());
        let (sent, s, _) = drive(&mut op, vec![response(404, &[], "")]);
        assert_eq!(sent.len(), 1, "{state:?}");
        assert_eq!(sent[0].kind, AttemptKind::StatusQuery);
        let e = s.into_result("ord-1", "create-ord-1", 1).unwrap_err();
        assert_eq!(e.code(), crate::error::ErrorCode::KeyExpired);
    }
}

#[test]
fn retention_above_48_hours_is_refused() {
    let limits = CallLimits {
        key_retention_secs: PLATFORM_KEY_RETENTION_SECS + 1,
        ..CallLimits::default()
    };
    let e = pending_with(setup(limits)).unwrap_err();
    assert_eq!(e.field(), Some("key_retention_secs"));
}

fn run_with(setup: CallSetup, replies: Vec<Reply>) -> (Vec<Attempt>, End) {
    let (sent, end, _) = drive(&mut pending_with(setup).unwrap(), replies);
    (sent, end)
}

#[test]
fn a_clock_answer_beyond_the_bound_or_over_plain_http_is_not_believed() {
    let far = [("X-Server-Time", "1767229200")];
    let refusal = || out_of_window(&far);
    let (sent, end) = run_with(setup(CallLimits::default()), vec![refusal()]);
    assert_eq!(sent.len(), 1);
    match &end {
        End::Refused { response, reason } => {
            assert_eq!(response.status, 401);
            assert!(reason.contains("max_clock_offset"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(!end.is_final());
    let e = end.into_result("ord-1", "create-ord-1", 1).unwrap_err();
    assert_eq!(e.code(), crate::error::ErrorCode::Refused);

    let near = [("X-Server-Time", "1767225660")];
    let untrusted = CallSetup {
        clock_trusted: false,
        ..setup(CallLimits::default())
    };
    let (_, end) = run_with(untrusted, vec![out_of_window(&near)]);
    assert!(
        matches!(&end, End::Refused { reason, .. } if reason.contains("plain http")),
        "{end:?}"
    );
}

#[test]
fn no_attempt_is_handed_out_before_its_record_is_confirmed() {
    let (signer, entropy) = keys();
    let mut op = start(OperationState::Pending, None);
    let now = CallTime {
        unix: NOW,
        elapsed: Duration::ZERO,
    };
    let persist = |step: Step| match step {
        Step::Persist(p) => p,
        other => panic!("expected a persist step, got {other:?}"),
    };
    let first = Persist {
        attempt: 1,
        first: true,
    };
    for _ in 0..3 {
        assert_eq!(persist(op.poll(&signer, now, &entropy)), first);
    }
    op.persisted();
    assert!(matches!(op.poll(&signer, now, &entropy), Step::Send(_)));
    op.handle(response(500, &[], ""), now, &entropy);
    let later = CallTime {
        unix: NOW + 60,
        elapsed: Duration::from_secs(59),
    };
    let second = Persist {
        attempt: 2,
        first: false,
    };
    assert_eq!(persist(op.poll(&signer, later, &entropy)), second);
    // A status query changes nothing on the platform: no record first.
    let mut op = start(OperationState::InFlight, Some("/s"));
    assert!(
        matches!(op.poll(&signer, now, &entropy), Step::Send(ref a) if a.kind == AttemptKind::StatusQuery)
    );
}

#[test]
fn an_empty_retry_budget_ends_the_call_and_a_success_refunds() {
    let budget = Arc::new(RetryBudget::new(RetryBudgetConfig {
        capacity: 5,
        retry_cost: 5,
        timeout_cost: 10,
        success_refund: 1,
    }));
    let with_budget = || CallSetup {
        budget: Some(Arc::clone(&budget)),
        ..setup(CallLimits::default())
    };
    let (sent, end) = run_with(
        with_budget(),
        vec![response(500, &[], ""), response(500, &[], "")],
    );
    assert_eq!(sent.len(), 2, "one retry was affordable");
    assert_eq!(budget.available(), 0);
    assert!(
        matches!(&end, End::Unknown { reason } if reason.contains("budget")),
        "{end:?}"
    );
    assert_eq!(end.landed(), Landed::Maybe);
    let (_, end) = run_with(with_budget(), vec![response(201, &[], "{}")]);
    assert!(matches!(end, End::Succeeded(_)));
    assert_eq!(budget.available(), 1);
}

#[test]
fn every_500_is_a_possible_landing() {
    let mut op = start(OperationState::Pending, None);
    let replies = (0..8).map(|_| response(500, &[], "")).collect();
    let (_, end, _) = drive(&mut op, replies);
    assert!(matches!(end, End::Unknown { .. }), "{end:?}");
    assert_eq!(end.state(), OperationState::Unknown);
    assert_eq!(op.landed(), Landed::Maybe);
}

#[test]
fn refusals_before_the_idempotency_step_end_refused_not_final() {
    let mut op = start(OperationState::Pending, None);
    let (_, end, _) = drive(&mut op, vec![response(401, &[], &err("invalid_signature"))]);
    assert!(matches!(end, End::Refused { .. }), "{end:?}");
    assert!(!end.is_final());
    assert_eq!(end.state(), OperationState::Pending);
}

#[test]
fn retry_after_dates_count_from_the_platform_clock() {
    // The platform is 300 s ahead: "retry at NOW+301" (its clock) is 1 s.
    let mut setup = setup(CallLimits::default());
    setup.clock = ClockOffset::from_seconds(300);
    let date = [("Retry-After", "Thu, 01 Jan 2026 00:05:01 GMT")];
    let mut op = pending_with(setup).unwrap();
    let elapsed = succeeds_after(&mut op, response(503, &date, ""));
    assert_eq!(elapsed, Duration::from_secs(1));
}

#[test]
fn a_recorded_first_attempt_is_in_flight_with_one_attempt() {
    let start = |state, attempts| {
        let progress = Progress {
            state,
            attempts,
            created_at: NOW,
            first_recorded: true,
        };
        Operation::start(
            &operation(None),
            progress,
            setup(CallLimits::default()),
            NOW,
        )
    };
    for (state, attempts) in [
        (OperationState::Pending, 0),
        (OperationState::Pending, 1),
        (OperationState::InFlight, 0),
        (OperationState::InFlight, 2),
        (OperationState::Unknown, 1),
    ] {
        let e = start(state, attempts).expect_err("an impossible recorded first attempt");
        assert_eq!(
            e.code(),
            crate::error::ErrorCode::InvalidArgument,
            "{state:?}"
        );
        assert_eq!(e.field(), Some("progress"), "{state:?} {attempts}");
    }
    let op = start(OperationState::InFlight, 1).unwrap();
    assert_eq!(op.attempts(), 0, "nothing sent yet");
    assert_eq!(
        op.landed(),
        Landed::No,
        "a recorded, unsent attempt cannot have landed"
    );
}
