//! The PostgreSQL journal's group commit, against a real server started by
//! the tests (e2e/src/pg.rs): concurrent callers of one handle share
//! transactions and synchronous commits, each is answered only once its
//! write is committed, a refused caller does not disturb the others, and a
//! connection lost during a shared COMMIT is read back for every caller.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use payidem::journal::{Journal, Lease, PgPoint, PostgresJournal, PostgresJournalOptions};
use payidem::operation::OperationState;
use payidem::ErrorCode;

#[path = "../../e2e/src/pg.rs"]
mod pg;

mod fixtures;
use fixtures::{now, op};

const CALLERS: usize = 12;

fn lease(owner: &str) -> Lease {
    Lease {
        owner: owner.into(),
        expires_at: now() + 100,
    }
}

fn open(url: &str) -> PostgresJournal {
    PostgresJournal::connect(url, PostgresJournalOptions::default()).unwrap()
}

/// A journal whose synchronous COMMITs each wait a little first (so that
/// concurrent callers queue behind them), and, once `armed`, whose next
/// synchronous COMMIT loses its connection; counts synchronous COMMITs.
fn slow_journal(url: &str, armed: bool) -> (PostgresJournal, Arc<AtomicBool>, Arc<AtomicUsize>) {
    let killer = Arc::new(Mutex::new(pg::shared().connect("postgres")));
    let armed = Arc::new(AtomicBool::new(armed));
    let durable_commits = Arc::new(AtomicUsize::new(0));
    let hook = {
        let (armed, durable_commits) = (Arc::clone(&armed), Arc::clone(&durable_commits));
        Arc::new(move |point: PgPoint| {
            let PgPoint::BeforeCommit {
                durable: true,
                backend_pid,
            } = point
            else {
                return;
            };
            durable_commits.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(250));
            if armed.swap(false, Ordering::SeqCst) {
                killer
                    .lock()
                    .unwrap()
                    .execute("SELECT pg_terminate_backend($1)", &[&backend_pid])
                    .unwrap();
            }
        })
    };
    (open(url).with_hook(hook), armed, durable_commits)
}

/// Caller `i` settles its operation `o-{i}`: it still holds the lease it
/// took, under its epoch.
fn settle(j: &PostgresJournal, i: usize) {
    let (id, owner) = (format!("o-{i}"), lease(&format!("a{i}")));
    j.finish(&id, &owner, OperationState::Succeeded, None, 0, now())
        .unwrap();
}

/// Runs `call(i)` on `CALLERS` threads started together.
fn together<T: Send>(call: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let start = Barrier::new(CALLERS);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..CALLERS)
            .map(|i| {
                let (start, call) = (&start, &call);
                s.spawn(move || {
                    start.wait();
                    call(i)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn concurrent_callers_share_synchronous_commits_and_are_answered_once_committed() {
    let url = pg::fresh_db();
    let (j, _, durable) = slow_journal(&url, false);
    // Another handle, on its own connections: sees only committed rows.
    let observer = open(&url);
    let seen_committed = together(|i| {
        let id = format!("o-{i}");
        j.open_to_send(&op(&id), &lease(&format!("a{i}")), now())
            .unwrap();
        let r = observer.get(&id).unwrap().expect("committed when answered");
        (r.state, r.attempts)
    });
    assert!(seen_committed
        .iter()
        .all(|s| *s == (OperationState::InFlight, 1)));
    let stats = j.commit_stats();
    let shared = durable.load(Ordering::SeqCst);
    assert_eq!(stats.durable_commits as usize, shared);
    assert!(
        shared < CALLERS,
        "{CALLERS} durable writes took {shared} synchronous commits"
    );
    // Each caller holds its own lease, as if alone.
    for i in 0..CALLERS {
        let id = format!("o-{i}");
        let err = j
            .open_to_send(&op(&id), &lease("other"), now())
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::OperationBusy);
        settle(&j, i);
    }
}

#[test]
fn a_refused_caller_leaves_the_rest_of_its_group_written() {
    let url = pg::fresh_db();
    let (j, _, _) = slow_journal(&url, false);
    j.open(&op("held"), &lease("holder"), now()).unwrap();
    let answers = together(|i| {
        if i % 3 == 0 {
            // Held by another live lease: refused, nothing written.
            j.open_to_send(&op("held"), &lease(&format!("a{i}")), now())
                .map(|_| ())
        } else {
            j.open_to_send(&op(&format!("o-{i}")), &lease(&format!("a{i}")), now())
                .map(|_| ())
        }
    });
    for (i, answer) in answers.iter().enumerate() {
        if i % 3 == 0 {
            assert_eq!(
                answer.as_ref().unwrap_err().code(),
                ErrorCode::OperationBusy
            );
        } else {
            answer.as_ref().unwrap();
            let r = j.get(&format!("o-{i}")).unwrap().unwrap();
            assert_eq!((r.state, r.attempts), (OperationState::InFlight, 1));
        }
    }
    let held = j.get("held").unwrap().unwrap();
    assert_eq!((held.state, held.attempts), (OperationState::Pending, 0));
}

/// After a group whose commit lost its connection (`armed` fired): every
/// caller was answered, and its operation `o-{i}` is in flight once, still
/// held by its caller under the epoch it took.
fn each_answered_in_flight_and_held<T: std::fmt::Debug>(
    j: &PostgresJournal,
    armed: &AtomicBool,
    answers: &[payidem::Result<T>],
) {
    assert!(!armed.load(Ordering::SeqCst), "the hook fired");
    assert!(answers.iter().all(|a| a.is_ok()), "{answers:?}");
    assert!(j.commit_stats().unknown_commits >= 1);
    for i in 0..CALLERS {
        let id = format!("o-{i}");
        let r = j.get(&id).unwrap().unwrap();
        assert_eq!((r.state, r.attempts), (OperationState::InFlight, 1), "{id}");
        let err = j
            .open_to_send(&op(&id), &lease("other"), now())
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::OperationBusy, "{id}");
        settle(j, i);
    }
}

#[test]
fn a_connection_lost_during_a_shared_commit_is_read_back_for_every_caller() {
    let url = pg::fresh_db();
    let (j, armed, _) = slow_journal(&url, false);
    for i in 0..CALLERS {
        j.open(&op(&format!("o-{i}")), &lease(&format!("a{i}")), now())
            .unwrap();
    }
    armed.store(true, Ordering::SeqCst);
    let answers =
        together(|i| j.record_attempt(&format!("o-{i}"), &lease(&format!("a{i}")), 1, now()));
    each_answered_in_flight_and_held(&j, &armed, &answers);
}

/// A durable group inserts its callers' new rows in one statement; each
/// caller still gets its own answer: of callers opening one new order id
/// together exactly one creates it and the others find it busy, a new
/// order id whose idempotency key another order id holds (stored before,
/// or created by another caller at once) is that caller's
/// `idempotency_conflict`,
/// and every other caller creates its own row under its own lease.
#[test]
fn callers_inserted_together_each_get_their_own_answer() {
    let url = pg::fresh_db();
    let (j, _, durable) = slow_journal(&url, false);
    let with_key = |order_id: &str, key: &str| {
        let mut operation = op(order_id);
        operation.idempotency_key = key.to_owned();
        operation
    };
    // Rounds of callers, so that groups hold each kind together.
    for round in 0..3 {
        let stored = |i: usize| op(&format!("stored-{round}-{i}"));
        for i in (1..CALLERS).step_by(4) {
            j.open(&stored(i), &lease("holder"), now()).unwrap();
        }
        let answers = together(|i| {
            let owner = lease(&format!("a{round}-{i}"));
            let operation = match i % 4 {
                0 => op(&format!("dup-{round}")),
                1 => with_key(&format!("taken-{round}-{i}"), &stored(i).idempotency_key),
                2 => with_key(
                    &format!("pair-{round}-{i}"),
                    &format!("pair-key-{round}-{}", i / 8),
                ),
                _ => op(&format!("o-{round}-{i}")),
            };
            let answer = j.open_to_send(&operation, &owner, now());
            (i, operation, answer.map(|_| ()))
        });
        let dup_created = answers
            .iter()
            .filter(|(i, _, a)| i % 4 == 0 && a.is_ok())
            .count();
        assert_eq!(dup_created, 1, "round {round}: {answers:?}");
        for (i, operation, answer) in &answers {
            let order_id = &operation.order_id;
            match (i % 4, answer) {
                (0, Err(e)) => assert_eq!(e.code(), ErrorCode::OperationBusy, "{e}"),
                (1, Err(e)) => assert_eq!(e.code(), ErrorCode::IdempotencyConflict, "{e}"),
                (1, Ok(())) => panic!("{order_id}: created with a key another order id holds"),
                (2, Err(e)) => assert_eq!(e.code(), ErrorCode::IdempotencyConflict, "{e}"),
                (_, Err(e)) => panic!("{order_id}: {e}"),
                (_, Ok(())) => {
                    let r = j.get(order_id).unwrap().expect("created");
                    assert_eq!((r.state, r.attempts), (OperationState::InFlight, 1));
                    // Held under the caller's own lease.
                    let e = j
                        .open_to_send(operation, &lease("other"), now())
                        .unwrap_err();
                    assert_eq!(e.code(), ErrorCode::OperationBusy, "{order_id}");
                }
            }
            if answer.is_err() && i % 4 != 0 {
                assert_eq!(
                    j.get(order_id).unwrap(),
                    None,
                    "{order_id}: nothing written"
                );
            }
        }
        // Of two callers sharing a new key, one created its order id.
        for pair in 0..CALLERS.div_ceil(8) {
            let created = answers
                .iter()
                .filter(|(i, _, a)| i % 4 == 2 && i / 8 == pair && a.is_ok())
                .count();
            assert_eq!(created, 1, "round {round}, pair {pair}: {answers:?}");
        }
    }
    assert!(
        durable.load(Ordering::SeqCst) < 3 * CALLERS,
        "the opens shared their commits"
    );
}

/// A connection lost during a durable group of new operations (their
/// INSERT, committed alone) is read back before anything is decided:
/// every caller is answered, its operation recorded once, in flight,
/// under its own lease.
#[test]
fn a_connection_lost_during_a_group_of_opens_is_read_back_for_every_caller() {
    let url = pg::fresh_db();
    let (j, armed, _) = slow_journal(&url, true);
    let answers = together(|i| {
        j.open_to_send(&op(&format!("o-{i}")), &lease(&format!("a{i}")), now())
            .map(|_| ())
    });
    each_answered_in_flight_and_held(&j, &armed, &answers);
}

/// Opens answered as durable survive a crash of the server (an immediate
/// stop: no shutdown checkpoint, WAL not yet flushed is lost) on a
/// database whose default is `synchronous_commit = off`, with the WAL
/// writer slowed to 10 s so that only the commits' own flushes save them:
/// the journal commits them with `synchronous_commit` on whatever the
/// server's defaults.
#[test]
fn opens_answered_as_durable_survive_a_crash_where_the_default_is_off() {
    let mut server = pg::PgServer::start();
    let url = server.create_db("async_default");
    let mut admin = server.connect("postgres");
    for sql in [
        "ALTER DATABASE async_default SET synchronous_commit = off",
        "ALTER SYSTEM SET wal_writer_delay = '10s'",
        "SELECT pg_reload_conf()",
    ] {
        admin.batch_execute(sql).unwrap();
    }
    drop(admin);
    let j = open(&url);
    for round in 0..3 {
        let answers = together(|i| {
            let id = format!("o-{round}-{i}");
            j.open_to_send(&op(&id), &lease(&format!("a{i}")), now())
                .map(|_| ())
        });
        assert!(answers.iter().all(|a| a.is_ok()), "{answers:?}");
    }
    server.stop_immediate().unwrap();
    server.start_again().unwrap();
    let j = open(&url);
    for round in 0..3 {
        for i in 0..CALLERS {
            let id = format!("o-{round}-{i}");
            let r = j.get(&id).unwrap().unwrap_or_else(|| panic!("{id} lost"));
            assert_eq!((r.state, r.attempts), (OperationState::InFlight, 1), "{id}");
        }
    }
}
