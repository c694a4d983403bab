//! The semantics every journal shares, run against `MemoryJournal` and
//! `SqliteJournal` alike.

use payidem::journal::{
    Journal, Lease, MemoryJournal, Opened, OperationRecord, Reconciliation, SqliteJournal,
    SqliteJournalOptions,
};
use payidem::operation::{FrozenOperation, OperationState, Response};
use payidem::ErrorCode;

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

fn lease(owner: &str, expires_at: u64) -> Lease {
    Lease {
        owner: owner.into(),
        expires_at,
    }
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
    let created = j.open(&o, &a, 10).unwrap();
    let expected = OperationRecord {
        operation: o.clone(),
        state: OperationState::Pending,
        attempts: 0,
        created_at: 10,
        updated_at: 10,
        response: None,
    };
    assert_eq!(created, Opened::Created(expected.clone()));
    assert_eq!(j.get("order-1").unwrap(), Some(expected.clone()));
    assert_eq!(j.open(&o, &a, 11).unwrap(), Opened::Resumable(expected));

    j.record_attempt("order-1", &a, 1, 12).unwrap();
    let r = j.get("order-1").unwrap().unwrap();
    assert_eq!(
        (r.state, r.attempts, r.created_at, r.updated_at),
        (OperationState::InFlight, 1, 10, 12)
    );

    j.finish("order-1", &a, OperationState::Unknown, None, 13)
        .unwrap();
    // The lease is released: another owner resumes before `a`'s expiry.
    let b = lease("b", 200);
    let resumed = record(j.open(&o, &b, 14).unwrap());
    assert_eq!(
        (resumed.state, resumed.attempts, resumed.updated_at),
        (OperationState::Unknown, 1, 13)
    );
    j.record_attempt("order-1", &b, 2, 15).unwrap();
    let answer = response(201, true);
    j.finish("order-1", &b, OperationState::Succeeded, Some(&answer), 16)
        .unwrap();

    let settled = j.get("order-1").unwrap().unwrap();
    assert_eq!(settled.state, OperationState::Succeeded);
    assert_eq!(settled.attempts, 2);
    assert_eq!(settled.updated_at, 16);
    assert_eq!(settled.response.as_ref(), Some(&answer));
    // Settled: answered as such, even to a third owner while `b`'s lease
    // would still run, and no lease is taken.
    assert_eq!(
        j.open(&o, &lease("c", 300), 17).unwrap(),
        Opened::Settled(settled.clone())
    );
    assert_eq!(
        j.claim("order-1", &lease("d", 300), 17).unwrap(),
        Opened::Settled(settled.clone())
    );
    assert_eq!(j.get("order-1").unwrap(), Some(settled));
}

fn back_to_pending(j: &dyn Journal) {
    let a = lease("a", 100);
    j.open(&op("o", "k", b"x"), &a, 1).unwrap();
    j.record_attempt("o", &a, 1, 2).unwrap();
    j.finish("o", &a, OperationState::Pending, None, 3).unwrap();
    let r = j.get("o").unwrap().unwrap();
    assert_eq!(
        (r.state, r.attempts, r.updated_at, r.response),
        (OperationState::Pending, 1, 3, None)
    );
}

fn conflicts_change_nothing(j: &dyn Journal) {
    let a = lease("a", 100);
    let o = op("order-1", "key-1", b"body-1");
    j.open(&o, &a, 10).unwrap();
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
        let err = j.open(attempt, &a, 20).expect_err(what);
        assert_eq!(err.code(), ErrorCode::IdempotencyConflict, "{what}: {err}");
        assert_eq!(j.get("order-1").unwrap(), before, "{what}");
        assert_eq!(j.get("order-2").unwrap(), None, "{what}");
    }
    // Nothing took or moved the lease: `a`'s lease still holds at 50.
    assert_eq!(
        j.open(&o, &lease("b", 500), 50).unwrap_err().code(),
        ErrorCode::OperationBusy
    );
    // A settled operation still conflicts rather than answering Settled.
    j.finish(
        "order-1",
        &a,
        OperationState::Rejected,
        Some(&response(422, false)),
        60,
    )
    .unwrap();
    let settled = j.get("order-1").unwrap();
    assert_eq!(
        j.open(&other_body, &a, 70).unwrap_err().code(),
        ErrorCode::IdempotencyConflict
    );
    assert_eq!(
        j.open(&key_reused, &a, 70).unwrap_err().code(),
        ErrorCode::IdempotencyConflict
    );
    assert_eq!(j.get("order-1").unwrap(), settled);
    assert_eq!(j.get("order-2").unwrap(), None);
    // The status path is not part of the request and does not conflict.
    let mut other_status_path = o.clone();
    other_status_path.status_path = None;
    assert!(matches!(
        j.open(&other_status_path, &a, 80).unwrap(),
        Opened::Settled(_)
    ));
}

fn leases(j: &dyn Journal) {
    let a = lease("a", 100);
    let b = lease("b", 300);
    let o = op("order-1", "key-1", b"body");
    j.open(&o, &a, 10).unwrap();

    let busy = j.open(&o, &b, 50).unwrap_err();
    assert_eq!(busy.code(), ErrorCode::OperationBusy);
    assert_eq!(busy.order_id(), Some("order-1"));
    assert!(busy.message().contains("order-1"), "{busy}");
    assert_eq!(
        j.claim("order-1", &b, 99).unwrap_err().code(),
        ErrorCode::OperationBusy
    );
    // The same owner may re-open and re-claim, renewing its lease.
    assert!(matches!(j.open(&o, &a, 50).unwrap(), Opened::Resumable(_)));
    assert!(matches!(
        j.claim("order-1", &a, 60).unwrap(),
        Opened::Resumable(_)
    ));
    // Expired at `now` == expires_at: another owner takes it over.
    assert!(matches!(
        j.claim("order-1", &b, 100).unwrap(),
        Opened::Resumable(_)
    ));
    let before = j.get("order-1").unwrap();

    // The lost lease blocks `a` and changes nothing.
    assert_eq!(
        j.record_attempt("order-1", &a, 1, 110).unwrap_err().code(),
        ErrorCode::OperationBusy
    );
    let err = j
        .finish(
            "order-1",
            &a,
            OperationState::Succeeded,
            Some(&response(200, false)),
            110,
        )
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::OperationBusy);
    assert_eq!(j.get("order-1").unwrap(), before);
    assert_eq!(
        j.claim("order-1", &a, 110).unwrap_err().code(),
        ErrorCode::OperationBusy
    );

    // record_attempt extends the lease to the new expiry.
    j.record_attempt("order-1", &lease("b", 1_000), 1, 120)
        .unwrap();
    assert_eq!(
        j.claim("order-1", &a, 500).unwrap_err().code(),
        ErrorCode::OperationBusy
    );
    j.finish("order-1", &b, OperationState::Unknown, None, 130)
        .unwrap();
    // finish released it; `b` no longer holds it.
    assert_eq!(
        j.record_attempt("order-1", &b, 2, 140).unwrap_err().code(),
        ErrorCode::OperationBusy
    );
    assert!(matches!(
        j.claim("order-1", &a, 140).unwrap(),
        Opened::Resumable(_)
    ));

    let missing = j.claim("nope", &a, 10).unwrap_err();
    assert_eq!(
        (missing.code(), missing.field()),
        (ErrorCode::InvalidArgument, Some("order_id"))
    );
    let missing = j.record_attempt("nope", &a, 1, 10).unwrap_err();
    assert_eq!(
        (missing.code(), missing.field()),
        (ErrorCode::InvalidArgument, Some("order_id"))
    );
    let missing = j
        .finish("nope", &a, OperationState::Unknown, None, 10)
        .unwrap_err();
    assert_eq!(
        (missing.code(), missing.field()),
        (ErrorCode::InvalidArgument, Some("order_id"))
    );
    assert_eq!(j.get("nope").unwrap(), None);
}

fn release(j: &dyn Journal) {
    let a = lease("a", 100);
    let b = lease("b", 100);
    j.open(&op("o", "k", b"x"), &a, 10).unwrap();
    let before = j.get("o").unwrap();
    // Only the holder releases; anyone else's release is a no-op.
    j.release("o", &b).unwrap();
    assert_eq!(
        j.claim("o", &b, 20).unwrap_err().code(),
        ErrorCode::OperationBusy
    );
    j.release("o", &a).unwrap();
    assert_eq!(j.get("o").unwrap(), before);
    assert!(matches!(
        j.claim("o", &b, 20).unwrap(),
        Opened::Resumable(_)
    ));
    assert_eq!(j.release("nope", &a).unwrap_err().field(), Some("order_id"));
}

fn bad_arguments(j: &dyn Journal) {
    let a = lease("a", 100);
    j.open(&op("o", "k", b"x"), &a, 10).unwrap();
    let err = j
        .finish("o", &a, OperationState::InFlight, None, 11)
        .unwrap_err();
    assert_eq!(
        (err.code(), err.field()),
        (ErrorCode::InvalidArgument, Some("state"))
    );
    let err = j
        .open(&op("p", "q", b"x"), &lease("", 100), 10)
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
    // A lease "forever" is accepted and holds.
    j.open(&op("p", "q", b"x"), &lease("a", u64::MAX), 10)
        .unwrap();
    assert_eq!(
        j.claim("p", &lease("b", 10), i64::MAX as u64 - 1)
            .unwrap_err()
            .code(),
        ErrorCode::OperationBusy
    );
}

/// Creates `order_id` at `created`, drives it to `state` at `updated`.
fn make(j: &dyn Journal, order_id: &str, state: OperationState, created: u64, updated: u64) {
    let l = lease(order_id, created + 1_000);
    j.open(
        &op(order_id, &format!("key-{order_id}"), order_id.as_bytes()),
        &l,
        created,
    )
    .unwrap();
    if state != OperationState::Pending {
        j.record_attempt(order_id, &l, 1, updated).unwrap();
    }
    if state != OperationState::Pending && state != OperationState::InFlight {
        let answer = state.is_settled().then(|| response(200, false));
        j.finish(order_id, &l, state, answer.as_ref(), updated)
            .unwrap();
    }
}

fn purge_keeps_unsettled(j: &dyn Journal) {
    make(j, "succeeded-old", OperationState::Succeeded, 1, 10);
    make(j, "rejected-old", OperationState::Rejected, 1, 49);
    make(j, "conflict-new", OperationState::Conflict, 1, 50);
    make(j, "unknown-old", OperationState::Unknown, 1, 10);
    make(j, "pending-old", OperationState::Pending, 1, 1);
    make(j, "in-flight-old", OperationState::InFlight, 1, 10);

    assert_eq!(j.purge_settled(50).unwrap(), 2);
    assert_eq!(j.get("succeeded-old").unwrap(), None);
    assert_eq!(j.get("rejected-old").unwrap(), None);
    assert!(j.get("conflict-new").unwrap().is_some());
    assert_eq!(j.purge_settled(50).unwrap(), 0);
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
        60,
    )
    .unwrap();
}

fn list_oldest_first(j: &dyn Journal) {
    make(j, "c", OperationState::Pending, 30, 30);
    make(j, "a", OperationState::Pending, 10, 10);
    make(j, "z", OperationState::Unknown, 10, 40);
    make(j, "b", OperationState::Pending, 20, 20);
    make(j, "y", OperationState::Pending, 10, 10);
    make(j, "s", OperationState::Succeeded, 5, 50);
    make(j, "f", OperationState::InFlight, 25, 26);

    let ids = |states: &[OperationState]| -> Vec<String> {
        j.list(states)
            .unwrap()
            .into_iter()
            .map(|r| r.operation.order_id)
            .collect()
    };
    // Same creation second: in the order they were created.
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
        j.open(&op(&id, &format!("key-{i}"), &[0, 159, 146, 150]), &l, 1)
            .unwrap();
        j.record_attempt(&id, &l, 1, 2).unwrap();
        j.finish(&id, &l, *state, answer.as_ref(), 3).unwrap();
        let r = j.get(&id).unwrap().unwrap();
        assert_eq!(r.state, *state);
        assert_eq!(r.response, *answer);
        assert_eq!(r.operation.body, [0, 159, 146, 150]);
    }
}

fn reconcile_closes_unsettled_operations(j: &dyn Journal) {
    make(j, "unknown", OperationState::Unknown, 1, 10);
    make(j, "pending", OperationState::Pending, 2, 2);
    make(j, "settled", OperationState::Succeeded, 3, 11);
    let unsettled = [OperationState::InFlight, OperationState::Unknown];

    let r = j
        .reconcile(
            "unknown",
            OperationState::Succeeded,
            "alice",
            "PSP ref 4711",
            500,
        )
        .unwrap();
    let expected = Reconciliation {
        order_id: "unknown".into(),
        idempotency_key: "key-unknown".into(),
        previous_state: OperationState::Unknown,
        state: OperationState::Succeeded,
        by: "alice".into(),
        at: 500,
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
        (OperationState::Succeeded, 1, 1, 500)
    );
    assert_eq!(after.response, None);
    assert!(j.list(&unsettled).unwrap().is_empty());
    // Settled now: opening or claiming it answers so, without a lease.
    let o = op("unknown", "key-unknown", b"unknown");
    assert_eq!(
        j.open(&o, &lease("x", 900), 501).unwrap(),
        Opened::Settled(after.clone())
    );
    assert_eq!(
        j.claim("unknown", &lease("x", 900), 501).unwrap(),
        Opened::Settled(after)
    );

    // `make` left the pending one leased until 1002.
    let busy = j
        .reconcile("pending", OperationState::Rejected, "bob", "ref", 600)
        .unwrap_err();
    assert_eq!(busy.code(), ErrorCode::OperationBusy);
    let r = j
        .reconcile(
            "pending",
            OperationState::Rejected,
            "bob",
            "never reached the PSP",
            1002,
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
    make(j, "settled", OperationState::Rejected, 1, 10);
    make(j, "unknown", OperationState::Unknown, 1, 10);
    let before = j.get("settled").unwrap();
    let field = |e: payidem::Error| (e.code(), e.field().map(str::to_owned));
    let invalid = |name: &str| (ErrorCode::InvalidArgument, Some(name.to_owned()));

    // A settled operation is never changed, whatever it is asked to become.
    for state in [OperationState::Succeeded, OperationState::Rejected] {
        let err = j
            .reconcile("settled", state, "alice", "ref", 20)
            .unwrap_err();
        assert!(err.message().contains("already settled"), "{err}");
        assert_eq!(field(err), invalid("order_id"));
    }
    assert_eq!(j.get("settled").unwrap(), before);
    let err = j
        .reconcile("missing", OperationState::Succeeded, "alice", "ref", 20)
        .unwrap_err();
    assert_eq!(field(err), invalid("order_id"));
    for state in [
        OperationState::Pending,
        OperationState::InFlight,
        OperationState::Unknown,
        OperationState::Conflict,
    ] {
        let err = j
            .reconcile("unknown", state, "alice", "ref", 20)
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
            .reconcile("unknown", OperationState::Succeeded, by, reference, 20)
            .unwrap_err();
        assert_eq!(field(err), invalid(name), "{by:?} {reference:?}");
    }
    let long = "x".repeat(payidem::journal::MAX_RECONCILIATION_REFERENCE_LEN + 1);
    let err = j
        .reconcile("unknown", OperationState::Succeeded, "alice", &long, 20)
        .unwrap_err();
    assert_eq!(field(err), invalid("reference"));
    assert_eq!(state_of(j, "unknown"), OperationState::Unknown);

    // A live lease of another call: busy, nothing changes; once it expires
    // the reconciliation goes through and clears it.
    let l = lease("driver", 100);
    assert!(matches!(
        j.claim("unknown", &l, 30).unwrap(),
        Opened::Resumable(_)
    ));
    j.record_attempt("unknown", &l, 2, 31).unwrap();
    let err = j
        .reconcile("unknown", OperationState::Succeeded, "alice", "ref", 99)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::OperationBusy);
    assert_eq!(state_of(j, "unknown"), OperationState::InFlight);
    assert!(j.reconciliations(None).unwrap().is_empty());
    let r = j
        .reconcile("unknown", OperationState::Succeeded, "alice", "ref", 100)
        .unwrap();
    assert_eq!(r.previous_state, OperationState::InFlight);
    // The driver lost its lease: its finish cannot overwrite the decision.
    let err = j
        .finish("unknown", &l, OperationState::Unknown, None, 101)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::OperationBusy);
    assert_eq!(state_of(j, "unknown"), OperationState::Succeeded);
}

fn check_reports_a_sound_journal(j: &dyn Journal) {
    make(j, "a", OperationState::Unknown, 1, 10);
    make(j, "b", OperationState::Succeeded, 1, 10);
    j.reconcile("a", OperationState::Rejected, "alice", "ref", 20)
        .unwrap();
    let report = j.check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert!(report.is_sound());
    assert_eq!((report.operations, report.reconciliations), (2, 1));
    assert_eq!(report.schema_version, report.library_schema_version);
}

macro_rules! for_both_journals {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[test]
                fn $name() {
                    super::$name(&super::MemoryJournal::new());
                }
            )*
        }
        mod sqlite {
            $(
                #[test]
                fn $name() {
                    let dir = tempfile::tempdir().unwrap();
                    let path = dir.path().join("journal.db");
                    let journal = super::SqliteJournal::open(&path, super::SqliteJournalOptions::default()).unwrap();
                    super::$name(&journal);
                }
            )*
        }
    };
}

for_both_journals!(
    create_resume_settle,
    back_to_pending,
    conflicts_change_nothing,
    leases,
    release,
    bad_arguments,
    purge_keeps_unsettled,
    list_oldest_first,
    responses_round_trip,
    reconcile_closes_unsettled_operations,
    reconcile_refuses_what_it_must_not_change,
    check_reports_a_sound_journal,
);

#[test]
fn journals_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<MemoryJournal>();
    check::<SqliteJournal>();
}
