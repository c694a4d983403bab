//! The semantics every journal shares, run against `MemoryJournal`,
//! `SqliteJournal` and `PostgresJournal` alike (a real PostgreSQL server
//! started by the tests, see e2e/src/pg.rs).
//!
//! PostgreSQL takes every time from the database clock, so every check
//! here runs on the real clock: each call gets `now()`, times are checked
//! to lie between the instants before and after the call, and leases
//! expire by waiting for them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use payidem::journal::{
    Journal, Lease, MemoryJournal, Opened, OperationRecord, PostgresJournal,
    PostgresJournalOptions, Reconciliation, SqliteJournal, SqliteJournalOptions,
};
use payidem::operation::{FrozenOperation, OperationState, Response};
use payidem::ErrorCode;

#[path = "../../e2e/src/pg.rs"]
mod pg;

fn op(order_id: &str, key: &str, body: &[u8]) -> FrozenOperation {
    FrozenOperation {
        order_id: order_id.into(),
        idempotency_key: key.into(),
        method: "POST".into(),
        path: "/payments".into(),
        body: body.to_vec(),
        body_sha256: payidem::protocol::body_sha256_hex(body),
        status_path: Some(format!("/payments?order_id={order_id}")),
    }
}

/// The caller's clock, in Unix seconds.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn now_f64() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// A lease of `owner` for `secs` seconds from now.
/// A lease meant to lapse during a test: seconds enough for the journal
/// writes made while it must still hold, on a loaded host (a slow fsync),
/// since whole seconds can leave a lease of N seconds only N - 1.
const SHORT_LEASE_SECS: u64 = 4;

fn lease(owner: &str, secs: u64) -> Lease {
    Lease {
        owner: owner.into(),
        expires_at: now() + secs,
    }
}

/// Sleeps until a lease expiring at `expires_at` has expired by every
/// clock: the caller's whole seconds, and a database's `now()` (which
/// started the lease up to a second after the caller's whole second).
fn outlive(expires_at: u64) {
    let until = expires_at as f64 + 1.05;
    while now_f64() < until {
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Sleeps until the caller's clock shows a new second; returns it. Every
/// time written before is then older than it, by every clock.
fn next_second() -> u64 {
    let start = now();
    while now() == start {
        std::thread::sleep(Duration::from_millis(10));
    }
    now()
}

fn between(t: u64, from: u64, to: u64) {
    assert!(from <= t && t <= to, "{t} is not within [{from}, {to}]");
}

fn response(status: u16, replayed: bool) -> Response {
    Response {
        status,
        headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("Set-Cookie".into(), "a=1".into()),
            ("Set-Cookie".into(), "b=\"2\", ü".into()),
            ("X-Empty".into(), String::new()),
        ],
        body: vec![0, 1, 2, 255, b'{', b'}', 0],
        replayed,
    }
}

fn record(opened: Opened) -> OperationRecord {
    match opened {
        Opened::Created(r) | Opened::Resumable(r) | Opened::Settled(r) => r,
    }
}

fn state_of(j: &dyn Journal, order_id: &str) -> OperationState {
    j.get(order_id).unwrap().expect("journaled").state
}

fn create_resume_settle(j: &dyn Journal) {
    let a = lease("a", 100);
    let o = op("order-1", "key-1", b"{\"amount\":1}");
    let t0 = now();
    let created = j.open(&o, &a, now()).unwrap();
    let made = record(created.clone());
    between(made.created_at, t0, now());
    let expected = OperationRecord {
        operation: o.clone(),
        state: OperationState::Pending,
        attempts: 0,
        created_at: made.created_at,
        updated_at: made.created_at,
        response: None,
    };
    assert_eq!(created, Opened::Created(expected.clone()));
    assert_eq!(j.get("order-1").unwrap(), Some(expected.clone()));
    assert_eq!(j.open(&o, &a, now()).unwrap(), Opened::Resumable(expected));

    let t1 = now();
    j.record_attempt("order-1", &a, 1, now()).unwrap();
    let r = j.get("order-1").unwrap().unwrap();
    assert_eq!(
        (r.state, r.attempts, r.created_at),
        (OperationState::InFlight, 1, made.created_at)
    );
    between(r.updated_at, t1, now());

    let t2 = now();
    j.finish("order-1", &a, OperationState::Unknown, None, 0, now())
        .unwrap();
    let unknown_at = j.get("order-1").unwrap().unwrap().updated_at;
    between(unknown_at, t2, now());
    // The lease is released: another owner resumes before `a`'s expiry.
    let b = lease("b", 200);
    let resumed = record(j.open(&o, &b, now()).unwrap());
    assert_eq!(
        (resumed.state, resumed.attempts, resumed.updated_at),
        (OperationState::Unknown, 1, unknown_at)
    );
    j.record_attempt("order-1", &b, 2, now()).unwrap();
    let answer = response(201, true);
    let t3 = now();
    j.finish(
        "order-1",
        &b,
        OperationState::Succeeded,
        Some(&answer),
        0,
        now(),
    )
    .unwrap();

    let settled = j.get("order-1").unwrap().unwrap();
    assert_eq!(settled.state, OperationState::Succeeded);
    assert_eq!(settled.attempts, 2);
    assert_eq!(settled.created_at, made.created_at);
    between(settled.updated_at, t3, now());
    assert_eq!(settled.response.as_ref(), Some(&answer));
    // Settled: answered as such, even to a third owner while `b`'s lease
    // would still run, and no lease is taken.
    assert_eq!(
        j.open(&o, &lease("c", 300), now()).unwrap(),
        Opened::Settled(settled.clone())
    );
    assert_eq!(
        j.claim("order-1", &lease("d", 300), now()).unwrap(),
        Opened::Settled(settled.clone())
    );
    assert_eq!(j.get("order-1").unwrap(), Some(settled));
}

/// `open_to_send`: a new operation is recorded in flight with its first
/// attempt; an existing one is answered as `open` answers it.
fn open_to_send_records_the_first_attempt(j: &dyn Journal) {
    let a = lease("a", 100);
    let o = op("order-send", "key-send", b"{\"amount\":2}");
    let t0 = now();
    let made = record(j.open_to_send(&o, &a, now()).unwrap());
    between(made.created_at, t0, now());
    let expected = OperationRecord {
        operation: o.clone(),
        state: OperationState::InFlight,
        attempts: 1,
        created_at: made.created_at,
        updated_at: made.created_at,
        response: None,
    };
    assert_eq!(made, expected);
    assert_eq!(j.get("order-send").unwrap(), Some(expected.clone()));
    // Another owner finds it held; the holder resumes it as open would.
    let busy = j.open_to_send(&o, &lease("b", 100), now()).unwrap_err();
    assert_eq!(busy.code(), ErrorCode::OperationBusy);
    assert_eq!(
        j.open_to_send(&o, &a, now()).unwrap(),
        Opened::Resumable(expected)
    );
    // Another request under the key, or the key under another order id.
    let other = op("order-send", "key-send", b"{\"amount\":3}");
    let conflict = j.open_to_send(&other, &a, now()).unwrap_err();
    assert_eq!(conflict.code(), ErrorCode::IdempotencyConflict);
    let taken = op("order-other", "key-send", b"{\"amount\":2}");
    let conflict = j.open_to_send(&taken, &lease("c", 100), now()).unwrap_err();
    assert_eq!(conflict.code(), ErrorCode::IdempotencyConflict);
    assert!(j.get("order-other").unwrap().is_none(), "nothing recorded");
    // Its next attempt is recorded as usual; a call ending before sending
    // records no attempt and stores it back as pending.
    j.record_attempt("order-send", &a, 2, now()).unwrap();
    j.finish(
        "order-send",
        &a,
        OperationState::Succeeded,
        Some(&response(201, false)),
        0,
        now(),
    )
    .unwrap();
    assert_eq!(
        record(j.open_to_send(&o, &lease("d", 100), now()).unwrap()).state,
        OperationState::Succeeded
    );
    let p = op("order-unsent", "key-unsent", b"{}");
    j.open_to_send(&p, &a, now()).unwrap();
    j.record_attempt("order-unsent", &a, 0, now()).unwrap();
    j.finish("order-unsent", &a, OperationState::Pending, None, 0, now())
        .unwrap();
    let r = j.get("order-unsent").unwrap().unwrap();
    assert_eq!((r.state, r.attempts), (OperationState::Pending, 0));
}

fn back_to_pending(j: &dyn Journal) {
    let a = lease("a", 100);
    j.open(&op("o", "k", b"x"), &a, now()).unwrap();
    j.record_attempt("o", &a, 1, now()).unwrap();
    let t = now();
    j.finish("o", &a, OperationState::Pending, None, 0, now())
        .unwrap();
    let r = j.get("o").unwrap().unwrap();
    assert_eq!(
        (r.state, r.attempts, r.response),
        (OperationState::Pending, 1, None)
    );
    between(r.updated_at, t, now());
}

fn conflicts_change_nothing(j: &dyn Journal) {
    let a = lease("a", 100);
    let o = op("order-1", "key-1", b"body-1");
    j.open(&o, &a, now()).unwrap();
    let before = j.get("order-1").unwrap();

    let mut other_body = op("order-1", "key-1", b"body-2");
    other_body.status_path = o.status_path.clone();
    let mut other_method = o.clone();
    other_method.method = "PUT".into();
    let mut other_path = o.clone();
    other_path.path = "/payments/2".into();
    let mut other_key = o.clone();
    other_key.idempotency_key = "key-2".into();
    let key_reused = op("order-2", "key-1", b"body-1");

    for (what, attempt) in [
        ("body", &other_body),
        ("method", &other_method),
        ("path", &other_path),
        ("key", &other_key),
        ("key reused by another order id", &key_reused),
    ] {
        // The same owner, whose lease is free to take, still gets a conflict.
        let err = j.open(attempt, &a, now()).expect_err(what);
        assert_eq!(err.code(), ErrorCode::IdempotencyConflict, "{what}: {err}");
        assert_eq!(j.get("order-1").unwrap(), before, "{what}");
        assert_eq!(j.get("order-2").unwrap(), None, "{what}");
    }
    // Nothing took or moved the lease: `a`'s lease still holds.
    assert_eq!(
        j.open(&o, &lease("b", 500), now()).unwrap_err().code(),
        ErrorCode::OperationBusy
    );
    // A settled operation still conflicts rather than answering Settled.
    j.finish(
        "order-1",
        &a,
        OperationState::Rejected,
        Some(&response(422, false)),
        0,
        now(),
    )
    .unwrap();
    let settled = j.get("order-1").unwrap();
    assert_eq!(
        j.open(&other_body, &a, now()).unwrap_err().code(),
        ErrorCode::IdempotencyConflict
    );
    assert_eq!(
        j.open(&key_reused, &a, now()).unwrap_err().code(),
        ErrorCode::IdempotencyConflict
    );
    assert_eq!(j.get("order-1").unwrap(), settled);
    assert_eq!(j.get("order-2").unwrap(), None);
    // The status path is not part of the request and does not conflict.
    let mut other_status_path = o.clone();
    other_status_path.status_path = None;
    assert!(matches!(
        j.open(&other_status_path, &a, now()).unwrap(),
        Opened::Settled(_)
    ));
}

fn leases(j: &dyn Journal) {
    let a = lease("a", 100);
    let b = lease("b", 300);
    let o = op("order-1", "key-1", b"body");
    j.open(&o, &a, now()).unwrap();

    let busy = j.open(&o, &b, now()).unwrap_err();
    assert_eq!(busy.code(), ErrorCode::OperationBusy);
    assert_eq!(busy.order_id(), Some("order-1"));
    assert!(busy.message().contains("order-1"), "{busy}");
    assert_eq!(
        j.claim("order-1", &b, now()).unwrap_err().code(),
        ErrorCode::OperationBusy
    );
    // The same owner may re-open and re-claim, renewing its lease (here
    // to a short one).
    assert!(matches!(
        j.open(&o, &a, now()).unwrap(),
        Opened::Resumable(_)
    ));
    let short = lease("a", SHORT_LEASE_SECS);
    assert!(matches!(
        j.claim("order-1", &short, now()).unwrap(),
        Opened::Resumable(_)
    ));
    assert_eq!(
        j.claim("order-1", &b, now()).unwrap_err().code(),
        ErrorCode::OperationBusy
    );
    // Expired: another owner takes it over.
    outlive(short.expires_at);
    assert!(matches!(
        j.claim("order-1", &b, now()).unwrap(),
        Opened::Resumable(_)
    ));
    let before = j.get("order-1").unwrap();

    // The lost lease blocks `a` and changes nothing.
    assert_eq!(
        j.record_attempt("order-1", &a, 1, now())
            .unwrap_err()
            .code(),
        ErrorCode::OperationBusy
    );
    let err = j
        .finish(
            "order-1",
            &a,
            OperationState::Succeeded,
            Some(&response(200, false)),
            0,
            now(),
        )
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::OperationBusy);
    assert_eq!(j.get("order-1").unwrap(), before);
    assert_eq!(
        j.claim("order-1", &a, now()).unwrap_err().code(),
        ErrorCode::OperationBusy
    );

    // record_attempt extends the lease to the new expiry: `b` renews a
    // lease about to end to a long one, which still holds after the
    // short one would have ended.
    let b_short = lease("b", SHORT_LEASE_SECS);
    assert!(matches!(
        j.claim("order-1", &b_short, now()).unwrap(),
        Opened::Resumable(_)
    ));
    j.record_attempt("order-1", &lease("b", 1_000), 1, now())
        .unwrap();
    outlive(b_short.expires_at);
    assert_eq!(
        j.claim("order-1", &a, now()).unwrap_err().code(),
        ErrorCode::OperationBusy
    );
    j.finish("order-1", &b, OperationState::Unknown, None, 0, now())
        .unwrap();
    // finish released it; `b` no longer holds it.
    assert_eq!(
        j.record_attempt("order-1", &b, 2, now())
            .unwrap_err()
            .code(),
        ErrorCode::OperationBusy
    );
    assert!(matches!(
        j.claim("order-1", &a, now()).unwrap(),
        Opened::Resumable(_)
    ));

    let missing = j.claim("nope", &a, now()).unwrap_err();
    assert_eq!(
        (missing.code(), missing.field()),
        (ErrorCode::InvalidArgument, Some("order_id"))
    );
    let missing = j.record_attempt("nope", &a, 1, now()).unwrap_err();
    assert_eq!(
        (missing.code(), missing.field()),
        (ErrorCode::InvalidArgument, Some("order_id"))
    );
    let missing = j
        .finish("nope", &a, OperationState::Unknown, None, 0, now())
        .unwrap_err();
    assert_eq!(
        (missing.code(), missing.field()),
        (ErrorCode::InvalidArgument, Some("order_id"))
    );
    assert_eq!(j.get("nope").unwrap(), None);
}

/// A heartbeat: `renew` keeps a live holder's lease past its first
/// expiry and changes nothing else; a lost lease is never renewed.
fn renewals(j: &dyn Journal) {
    let short = lease("a", SHORT_LEASE_SECS);
    let o = op("order-renew", "key-renew", b"body");
    j.open_to_send(&o, &short, now()).unwrap();
    let before = j.get("order-renew").unwrap();
    let renewed = lease("a", 1_000);
    j.renew("order-renew", &renewed, now()).unwrap();
    assert_eq!(
        j.get("order-renew").unwrap(),
        before,
        "a renewal changes only the lease"
    );
    outlive(short.expires_at);
    let b = lease("b", 300);
    assert_eq!(
        j.claim("order-renew", &b, now()).unwrap_err().code(),
        ErrorCode::OperationBusy,
        "the renewed lease still holds"
    );

    // Renewed to a short lease that lapses: `b` takes over, and `a`'s
    // next renewal finds its lease lost and changes nothing.
    let lapsing = lease("a", SHORT_LEASE_SECS);
    j.renew("order-renew", &lapsing, now()).unwrap();
    outlive(lapsing.expires_at);
    assert!(matches!(
        j.claim("order-renew", &b, now()).unwrap(),
        Opened::Resumable(_)
    ));
    let taken = j.get("order-renew").unwrap();
    let lost = j.renew("order-renew", &renewed, now()).unwrap_err();
    assert_eq!(lost.code(), ErrorCode::OperationBusy);
    assert_eq!(lost.order_id(), Some("order-renew"));
    assert_eq!(j.get("order-renew").unwrap(), taken);
    assert_eq!(
        j.claim("order-renew", &lease("c", 10), now())
            .unwrap_err()
            .code(),
        ErrorCode::OperationBusy,
        "the lost renewal did not free or extend anything for `a`"
    );
    // Released by its holder: a renewal of the ended lease is lost too.
    j.finish("order-renew", &b, OperationState::Unknown, None, 0, now())
        .unwrap();
    let ended = j.renew("order-renew", &b, now()).unwrap_err();
    assert_eq!(ended.code(), ErrorCode::OperationBusy);

    let missing = j.renew("nope", &b, now()).unwrap_err();
    assert_eq!(
        (missing.code(), missing.field()),
        (ErrorCode::InvalidArgument, Some("order_id"))
    );
}

fn release(j: &dyn Journal) {
    let a = lease("a", 100);
    let b = lease("b", 100);
    j.open(&op("o", "k", b"x"), &a, now()).unwrap();
    let before = j.get("o").unwrap();
    // Only the holder releases; anyone else's release is a no-op.
    j.release("o", &b).unwrap();
    assert_eq!(
        j.claim("o", &b, now()).unwrap_err().code(),
        ErrorCode::OperationBusy
    );
    j.release("o", &a).unwrap();
    assert_eq!(j.get("o").unwrap(), before);
    assert!(matches!(
        j.claim("o", &b, now()).unwrap(),
        Opened::Resumable(_)
    ));
    assert_eq!(j.release("nope", &a).unwrap_err().field(), Some("order_id"));
}

fn bad_arguments(j: &dyn Journal) {
    let a = lease("a", 100);
    j.open(&op("o", "k", b"x"), &a, now()).unwrap();
    let err = j
        .finish("o", &a, OperationState::InFlight, None, 0, now())
        .unwrap_err();
    assert_eq!(
        (err.code(), err.field()),
        (ErrorCode::InvalidArgument, Some("state"))
    );
    let err = j
        .open(&op("p", "q", b"x"), &lease("", 100), now())
        .unwrap_err();
    assert_eq!(
        (err.code(), err.field()),
        (ErrorCode::InvalidArgument, Some("lease"))
    );
    let err = j.open(&op("p", "q", b"x"), &a, u64::MAX).unwrap_err();
    assert_eq!(
        (err.code(), err.field()),
        (ErrorCode::InvalidArgument, Some("now"))
    );
    assert_eq!(j.get("p").unwrap(), None);
    assert_eq!(state_of(j, "o"), OperationState::Pending);
    // A lease "forever" is accepted and holds, even for a caller whose
    // clock says it is the end of time.
    let forever = Lease {
        owner: "a".into(),
        expires_at: u64::MAX,
    };
    j.open(&op("p", "q", b"x"), &forever, now()).unwrap();
    assert_eq!(
        j.claim("p", &lease("b", 10), i64::MAX as u64 - 1)
            .unwrap_err()
            .code(),
        ErrorCode::OperationBusy
    );
}

/// Creates `order_id` and drives it to `state` under a lease of
/// `lease_secs`; returns that lease (still held when `state` is pending or
/// in flight).
fn make_leased(j: &dyn Journal, order_id: &str, state: OperationState, lease_secs: u64) -> Lease {
    let l = lease(order_id, lease_secs);
    j.open(
        &op(order_id, &format!("key-{order_id}"), order_id.as_bytes()),
        &l,
        now(),
    )
    .unwrap();
    if state != OperationState::Pending {
        j.record_attempt(order_id, &l, 1, now()).unwrap();
    }
    if state != OperationState::Pending && state != OperationState::InFlight {
        let answer = state.is_settled().then(|| response(200, false));
        j.finish(order_id, &l, state, answer.as_ref(), 0, now())
            .unwrap();
    }
    l
}

/// [`make_leased`] with a long lease.
fn make(j: &dyn Journal, order_id: &str, state: OperationState) {
    make_leased(j, order_id, state, 1_000);
}

fn purge_keeps_unsettled(j: &dyn Journal) {
    make(j, "succeeded-old", OperationState::Succeeded);
    make(j, "rejected-old", OperationState::Rejected);
    make(j, "unknown-old", OperationState::Unknown);
    make(j, "pending-old", OperationState::Pending);
    make(j, "in-flight-old", OperationState::InFlight);
    let cut = next_second();
    make(j, "conflict-new", OperationState::Conflict);

    assert_eq!(j.purge_settled(cut).unwrap(), 2);
    assert_eq!(j.get("succeeded-old").unwrap(), None);
    assert_eq!(j.get("rejected-old").unwrap(), None);
    assert!(j.get("conflict-new").unwrap().is_some());
    assert_eq!(j.purge_settled(cut).unwrap(), 0);
    assert_eq!(j.purge_settled(u64::MAX).unwrap(), 1);
    let left: Vec<String> = j
        .list(&OperationState::ALL)
        .unwrap()
        .into_iter()
        .map(|r| r.operation.order_id)
        .collect();
    assert_eq!(left, ["unknown-old", "pending-old", "in-flight-old"]);
    // A purged operation's key is free again.
    j.open(
        &op("reuse", "key-succeeded-old", b"y"),
        &lease("z", 100),
        now(),
    )
    .unwrap();
}

fn list_oldest_first(j: &dyn Journal) {
    make(j, "s", OperationState::Succeeded);
    make(j, "a", OperationState::Pending);
    make(j, "y", OperationState::Pending);
    make(j, "z", OperationState::Unknown);
    make(j, "b", OperationState::Pending);
    make(j, "f", OperationState::InFlight);
    make(j, "c", OperationState::Pending);

    let ids = |states: &[OperationState]| -> Vec<String> {
        j.list(states)
            .unwrap()
            .into_iter()
            .map(|r| r.operation.order_id)
            .collect()
    };
    // Created in one second or a few: in the order they were created.
    assert_eq!(ids(&[OperationState::Pending]), ["a", "y", "b", "c"]);
    assert_eq!(
        ids(&[OperationState::Unknown, OperationState::InFlight]),
        ["z", "f"]
    );
    assert_eq!(
        ids(&[OperationState::Succeeded, OperationState::Pending]),
        ["s", "a", "y", "b", "c"]
    );
    assert_eq!(ids(&OperationState::ALL).len(), 7);
    assert!(ids(&[]).is_empty());
    assert!(ids(&[OperationState::Conflict]).is_empty());
    let full = j.list(&[OperationState::Succeeded]).unwrap();
    assert_eq!(full, vec![j.get("s").unwrap().unwrap()]);
}

fn responses_round_trip(j: &dyn Journal) {
    let cases = [
        (OperationState::Succeeded, Some(response(201, true))),
        (OperationState::Rejected, Some(response(422, false))),
        (
            OperationState::Conflict,
            Some(Response {
                status: 409,
                ..Response::default()
            }),
        ),
        (OperationState::Succeeded, None),
    ];
    for (i, (state, answer)) in cases.iter().enumerate() {
        let id = format!("order-{i}");
        let l = lease("a", 100);
        j.open(
            &op(&id, &format!("key-{i}"), &[0, 159, 146, 150]),
            &l,
            now(),
        )
        .unwrap();
        j.record_attempt(&id, &l, 1, now()).unwrap();
        j.finish(&id, &l, *state, answer.as_ref(), 0, now())
            .unwrap();
        let r = j.get(&id).unwrap().unwrap();
        assert_eq!(r.state, *state);
        assert_eq!(r.response, *answer);
        assert_eq!(r.operation.body, [0, 159, 146, 150]);
    }
}

fn reconcile_closes_unsettled_operations(j: &dyn Journal) {
    make(j, "unknown", OperationState::Unknown);
    let pending_lease = make_leased(j, "pending", OperationState::Pending, 2);
    make(j, "settled", OperationState::Succeeded);
    let unsettled = [OperationState::InFlight, OperationState::Unknown];
    let created = j.get("unknown").unwrap().unwrap().created_at;

    let t = now();
    let r = j
        .reconcile(
            "unknown",
            OperationState::Succeeded,
            "alice",
            "PSP ref 4711",
            now(),
        )
        .unwrap();
    between(r.at, t, now());
    let expected = Reconciliation {
        order_id: "unknown".into(),
        idempotency_key: "key-unknown".into(),
        previous_state: OperationState::Unknown,
        state: OperationState::Succeeded,
        by: "alice".into(),
        at: r.at,
        reference: "PSP ref 4711".into(),
    };
    assert_eq!(r, expected);
    let after = j.get("unknown").unwrap().unwrap();
    assert_eq!(
        (
            after.state,
            after.attempts,
            after.created_at,
            after.updated_at
        ),
        (OperationState::Succeeded, 1, created, r.at)
    );
    assert_eq!(after.response, None);
    assert!(j.list(&unsettled).unwrap().is_empty());
    // Settled now: opening or claiming it answers so, without a lease.
    let o = op("unknown", "key-unknown", b"unknown");
    assert_eq!(
        j.open(&o, &lease("x", 900), now()).unwrap(),
        Opened::Settled(after.clone())
    );
    assert_eq!(
        j.claim("unknown", &lease("x", 900), now()).unwrap(),
        Opened::Settled(after)
    );

    // The pending one is leased for two seconds: busy until it expires.
    let busy = j
        .reconcile("pending", OperationState::Rejected, "bob", "ref", now())
        .unwrap_err();
    assert_eq!(busy.code(), ErrorCode::OperationBusy);
    outlive(pending_lease.expires_at);
    let r = j
        .reconcile(
            "pending",
            OperationState::Rejected,
            "bob",
            "never reached the PSP",
            now(),
        )
        .unwrap();
    assert_eq!(r.previous_state, OperationState::Pending);
    assert_eq!(state_of(j, "pending"), OperationState::Rejected);

    assert_eq!(
        j.reconciliations(Some("unknown")).unwrap(),
        vec![expected.clone()]
    );
    assert_eq!(
        j.reconciliations(None).unwrap(),
        vec![expected.clone(), r.clone()]
    );
    assert!(j.reconciliations(Some("settled")).unwrap().is_empty());

    // History is kept: purging the operations keeps their reconciliations.
    assert_eq!(j.purge_settled(u64::MAX).unwrap(), 3);
    assert_eq!(j.get("unknown").unwrap(), None);
    assert_eq!(j.reconciliations(None).unwrap(), vec![expected, r]);
}

fn reconcile_refuses_what_it_must_not_change(j: &dyn Journal) {
    make(j, "settled", OperationState::Rejected);
    make(j, "unknown", OperationState::Unknown);
    let before = j.get("settled").unwrap();
    let field = |e: payidem::Error| (e.code(), e.field().map(str::to_owned));
    let invalid = |name: &str| (ErrorCode::InvalidArgument, Some(name.to_owned()));

    // A settled operation is never changed, whatever it is asked to become.
    for state in [OperationState::Succeeded, OperationState::Rejected] {
        let err = j
            .reconcile("settled", state, "alice", "ref", now())
            .unwrap_err();
        assert!(err.message().contains("already settled"), "{err}");
        assert_eq!(field(err), invalid("order_id"));
    }
    assert_eq!(j.get("settled").unwrap(), before);
    let err = j
        .reconcile("missing", OperationState::Succeeded, "alice", "ref", now())
        .unwrap_err();
    assert_eq!(field(err), invalid("order_id"));
    for state in [
        OperationState::Pending,
        OperationState::InFlight,
        OperationState::Unknown,
        OperationState::Conflict,
    ] {
        let err = j
            .reconcile("unknown", state, "alice", "ref", now())
            .unwrap_err();
        assert_eq!(field(err), invalid("state"));
    }
    for (by, reference, name) in [
        ("", "ref", "by"),
        ("  ", "ref", "by"),
        ("alice", "", "reference"),
        ("alice", "line\nbreak", "reference"),
        ("ali\u{1b}[31mce", "ref", "by"),
    ] {
        let err = j
            .reconcile("unknown", OperationState::Succeeded, by, reference, now())
            .unwrap_err();
        assert_eq!(field(err), invalid(name), "{by:?} {reference:?}");
    }
    let long = "x".repeat(payidem::journal::MAX_RECONCILIATION_REFERENCE_LEN + 1);
    let err = j
        .reconcile("unknown", OperationState::Succeeded, "alice", &long, now())
        .unwrap_err();
    assert_eq!(field(err), invalid("reference"));
    assert_eq!(state_of(j, "unknown"), OperationState::Unknown);

    // A live lease of another call: busy, nothing changes; once it expires
    // the reconciliation goes through and clears it.
    let l = lease("driver", SHORT_LEASE_SECS);
    assert!(matches!(
        j.claim("unknown", &l, now()).unwrap(),
        Opened::Resumable(_)
    ));
    j.record_attempt("unknown", &l, 2, now()).unwrap();
    let err = j
        .reconcile("unknown", OperationState::Succeeded, "alice", "ref", now())
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::OperationBusy);
    assert_eq!(state_of(j, "unknown"), OperationState::InFlight);
    assert!(j.reconciliations(None).unwrap().is_empty());
    outlive(l.expires_at);
    let r = j
        .reconcile("unknown", OperationState::Succeeded, "alice", "ref", now())
        .unwrap();
    assert_eq!(r.previous_state, OperationState::InFlight);
    // The driver lost its lease: its finish cannot overwrite the decision.
    let err = j
        .finish("unknown", &l, OperationState::Unknown, None, 0, now())
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::OperationBusy);
    assert_eq!(state_of(j, "unknown"), OperationState::Succeeded);
}

fn check_reports_a_sound_journal(j: &dyn Journal) {
    make(j, "a", OperationState::Unknown);
    make(j, "b", OperationState::Succeeded);
    j.reconcile("a", OperationState::Rejected, "alice", "ref", now())
        .unwrap();
    let report = j.check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert!(report.is_sound());
    assert_eq!((report.operations, report.reconciliations), (2, 1));
    assert_eq!(report.schema_version, report.library_schema_version);
}

fn claim_next_takes_what_no_live_call_holds(j: &dyn Journal) {
    let ids = |opened: Option<Opened>| opened.map(|o| record(o).operation.order_id);
    assert_eq!(ids(j.claim_next(&lease("t", 100), now()).unwrap()), None);
    make(j, "held", OperationState::Pending);
    let released = make_leased(j, "released", OperationState::Pending, 1_000);
    j.release("released", &released).unwrap();
    make(j, "unknown", OperationState::Unknown);
    make(j, "settled", OperationState::Succeeded);
    let short = make_leased(j, "short", OperationState::InFlight, 2);

    // Oldest first, skipping live leases and settled operations.
    let t = lease("t", 100);
    assert_eq!(
        ids(j.claim_next(&t, now()).unwrap()).as_deref(),
        Some("released")
    );
    let u = lease("u", 100);
    let taken = j.claim_next(&u, now()).unwrap().unwrap();
    assert!(matches!(&taken, Opened::Resumable(r) if r.state == OperationState::Unknown));
    assert_eq!(ids(j.claim_next(&lease("v", 100), now()).unwrap()), None);
    // The taker holds what it took: its writes go through, others are busy.
    assert_eq!(
        j.claim("released", &lease("w", 100), now())
            .unwrap_err()
            .code(),
        ErrorCode::OperationBusy
    );
    j.record_attempt("released", &t, 1, now()).unwrap();
    j.finish("unknown", &u, OperationState::Succeeded, None, 0, now())
        .unwrap();

    // An expired lease is taken over; its old holder changes nothing.
    outlive(short.expires_at);
    let w = lease("w", 100);
    assert_eq!(
        ids(j.claim_next(&w, now()).unwrap()).as_deref(),
        Some("short")
    );
    assert_eq!(
        j.record_attempt("short", &short, 2, now())
            .unwrap_err()
            .code(),
        ErrorCode::OperationBusy
    );
    j.record_attempt("short", &w, 2, now()).unwrap();
    assert_eq!(j.get("short").unwrap().unwrap().attempts, 2);
}

fn memory() -> MemoryJournal {
    MemoryJournal::new()
}

fn sqlite() -> (tempfile::TempDir, SqliteJournal) {
    let dir = tempfile::tempdir().unwrap();
    let journal = SqliteJournal::open(
        dir.path().join("journal.db"),
        SqliteJournalOptions {
            journal_key: Some(contract_key()),
            ..SqliteJournalOptions::default()
        },
    )
    .unwrap();
    (dir, journal)
}

/// The contract holds with every row under its MACs (sealed journals).
fn contract_key() -> payidem::journal::JournalKey {
    payidem::journal::JournalKey::new(b"contract-suite-key-0123456789").unwrap()
}

fn postgres() -> PostgresJournal {
    PostgresJournal::connect(
        &pg::fresh_db(),
        PostgresJournalOptions {
            journal_key: Some(contract_key()),
            ..PostgresJournalOptions::default()
        },
    )
    .unwrap()
}

macro_rules! for_every_journal {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[test]
                fn $name() {
                    super::$name(&super::memory());
                }
            )*
        }
        mod sqlite {
            $(
                #[test]
                fn $name() {
                    let (_dir, journal) = super::sqlite();
                    super::$name(&journal);
                }
            )*
        }
        mod postgres {
            $(
                #[test]
                fn $name() {
                    super::$name(&super::postgres());
                }
            )*
        }
    };
}

for_every_journal!(
    create_resume_settle,
    open_to_send_records_the_first_attempt,
    back_to_pending,
    conflicts_change_nothing,
    leases,
    renewals,
    release,
    bad_arguments,
    purge_keeps_unsettled,
    list_oldest_first,
    responses_round_trip,
    reconcile_closes_unsettled_operations,
    reconcile_refuses_what_it_must_not_change,
    check_reports_a_sound_journal,
    claim_next_takes_what_no_live_call_holds,
);

#[test]
fn journals_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<MemoryJournal>();
    check::<SqliteJournal>();
    check::<PostgresJournal>();
}
