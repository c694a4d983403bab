//! The SQLite journal's group commit: concurrent first attempts share fsyncs
//! of the WAL, none returns before an fsync that covers its write has
//! returned, a failed fsync fails every write it was to cover, and one
//! caller alone pays exactly one fsync per operation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use payidem::journal::{Journal, Lease, SqliteJournal, SqliteJournalOptions, SyncHook, SyncPoint};
use payidem::operation::{FrozenOperation, OperationState};
use payidem::ErrorCode;

fn op(order_id: &str) -> FrozenOperation {
    let body = format!(r#"{{"order_id":"{order_id}"}}"#).into_bytes();
    FrozenOperation {
        order_id: order_id.into(),
        idempotency_key: format!("key-{order_id}"),
        method: "POST".into(),
        path: "/payments".into(),
        body_sha256: payidem::protocol::body_sha256_hex(&body),
        body,
        status_path: None,
    }
}

fn lease(owner: &str) -> Lease {
    Lease {
        owner: owner.into(),
        expires_at: 1_000_000,
    }
}

fn open(path: &std::path::Path) -> SqliteJournal {
    SqliteJournal::open(path, SqliteJournalOptions::default()).unwrap()
}

/// Every sync point reached, in the order reached, with the thread.
#[derive(Default)]
struct Log {
    events: Mutex<Vec<(ThreadId, SyncPoint)>>,
    changed: Condvar,
}

impl Log {
    fn push(&self, point: SyncPoint) {
        let mut events = self.events.lock().unwrap();
        events.push((std::thread::current().id(), point));
        self.changed.notify_all();
    }

    fn events(&self) -> Vec<(ThreadId, SyncPoint)> {
        self.events.lock().unwrap().clone()
    }

    fn written(&self) -> usize {
        count_written(&self.events.lock().unwrap())
    }

    /// Waits (at most 20 s, so a bug fails instead of hanging) until `n`
    /// writes are in the WAL; whether they all got there.
    fn wait_for_written(&self, n: usize) -> bool {
        let until = Instant::now() + Duration::from_secs(20);
        let mut events = self.events.lock().unwrap();
        while count_written(&events) < n {
            let now = Instant::now();
            if now >= until {
                return false;
            }
            events = self.changed.wait_timeout(events, until - now).unwrap().0;
        }
        true
    }
}

fn count_written(events: &[(ThreadId, SyncPoint)]) -> usize {
    events
        .iter()
        .filter(|(_, p)| matches!(p, SyncPoint::Written { .. }))
        .count()
}

fn logging_hook(log: &Arc<Log>) -> SyncHook {
    let log = Arc::clone(log);
    Arc::new(move |point| {
        log.push(point);
        Ok(())
    })
}

#[test]
fn concurrent_first_attempts_return_only_after_an_fsync_covering_them() {
    concurrent_first_attempts(false);
}

/// The same with the first attempt recorded when the operation is opened
/// (`open_to_send`, what a client's call does).
#[test]
fn concurrent_opens_to_send_return_only_after_an_fsync_covering_them() {
    concurrent_first_attempts(true);
}

fn concurrent_first_attempts(open_to_send: bool) {
    const THREADS: usize = 16;
    const EACH: usize = 25;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let log = Arc::new(Log::default());
    let journal = open(&path).with_sync_hook(logging_hook(&log));
    let start = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (journal, start) = (&journal, &start);
            s.spawn(move || {
                start.wait();
                for i in 0..EACH {
                    let id = format!("t{t}-{i}");
                    let me = lease(&format!("owner-{t}-{i}"));
                    if open_to_send {
                        journal.open_to_send(&op(&id), &me, 10).unwrap();
                    } else {
                        journal.open(&op(&id), &me, 10).unwrap();
                        journal.record_attempt(&id, &me, 1, 11).unwrap();
                    }
                    // A retry in the same call needs no second fsync.
                    journal.record_attempt(&id, &me, 2, 12).unwrap();
                    journal
                        .finish(&id, &me, OperationState::Unknown, None, 0, 13)
                        .unwrap();
                }
            });
        }
    });

    let events = log.events();
    let total = THREADS * EACH;
    // Each durable write: written (by whichever caller committed the
    // shared transaction), then durable (in its own thread), and before
    // "durable" some fsync covering it had returned. Concurrent writes may
    // share one transaction, so one commit number (seq) may stand for
    // several writes: never more reported durable than were written.
    let mut covered_up_to = 0;
    let mut written: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    let mut durable_of: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    let mut durable = 0;
    for (_, point) in &events {
        match *point {
            SyncPoint::Written { seq } => *written.entry(seq).or_default() += 1,
            SyncPoint::Fsynced { covers } => covered_up_to = covered_up_to.max(covers),
            SyncPoint::Durable { seq } => {
                let n = durable_of.entry(seq).or_default();
                *n += 1;
                assert!(
                    *n <= written.get(&seq).copied().unwrap_or(0),
                    "write {seq} reported durable before it was written"
                );
                assert!(
                    seq <= covered_up_to,
                    "write {seq} reported durable, fsyncs covered only up to {covered_up_to}"
                );
                durable += 1;
            }
            SyncPoint::Fsync => {}
        }
    }
    assert_eq!(
        written.values().sum::<usize>(),
        total,
        "one durable write per operation"
    );
    assert_eq!(durable, total);
    let fsyncs = events
        .iter()
        .filter(|(_, p)| matches!(p, SyncPoint::Fsynced { .. }))
        .count() as u64;
    let stats = journal.durability_stats();
    assert_eq!(stats.durable_writes, total as u64);
    assert_eq!(stats.fsyncs, fsyncs);
    assert!(stats.fsyncs >= 1 && stats.fsyncs <= total as u64);
    drop(journal);
    let again = open(&path);
    assert_eq!(again.list(&[OperationState::Unknown]).unwrap().len(), total);
}

#[test]
fn one_fsync_covers_every_write_committed_before_it() {
    const THREADS: usize = 12;
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Log::default());
    let hook: SyncHook = {
        let log = Arc::clone(&log);
        Arc::new(move |point| {
            log.push(point);
            if point == SyncPoint::Fsync {
                // The leader holds its fsync until every caller has written.
                assert!(log.wait_for_written(THREADS), "not every caller wrote");
            }
            Ok(())
        })
    };
    let journal = open(&dir.path().join("journal.db")).with_sync_hook(hook);
    let start = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (journal, start) = (&journal, &start);
            s.spawn(move || {
                let id = format!("order-{t}");
                let me = lease(&format!("owner-{t}"));
                journal.open(&op(&id), &me, 10).unwrap();
                start.wait();
                journal.record_attempt(&id, &me, 1, 11).unwrap();
            });
        }
    });
    let stats = journal.durability_stats();
    assert_eq!(stats.fsyncs, 1, "{:?}", log.events());
    assert_eq!(stats.durable_writes, THREADS as u64);
}

/// Writes committed while a barrier that cannot cover them runs (it read
/// the last commit number before they committed) wait for that barrier
/// without leading one of their own; when it ends, one of them leads the
/// next, which covers them all: every caller returns, after two fsyncs.
#[test]
fn writes_committed_during_a_barrier_wait_for_it_then_one_of_them_leads_the_next() {
    const LATER: usize = 6;
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Log::default());
    let barriers = AtomicUsize::new(0);
    let hook: SyncHook = {
        let log = Arc::clone(&log);
        Arc::new(move |point| {
            log.push(point);
            if matches!(point, SyncPoint::Fsynced { .. })
                && barriers.fetch_add(1, Ordering::SeqCst) == 0
            {
                // The first barrier, its fsync made, holds on until every
                // later caller has committed.
                assert!(log.wait_for_written(1 + LATER), "not every caller wrote");
            }
            Ok(())
        })
    };
    let journal = open(&dir.path().join("journal.db")).with_sync_hook(hook);
    let ids: Vec<String> = (0..=LATER).map(|t| format!("order-{t}")).collect();
    for (t, id) in ids.iter().enumerate() {
        journal
            .open(&op(id), &lease(&format!("owner-{t}")), 10)
            .unwrap();
    }
    std::thread::scope(|s| {
        let journal = &journal;
        let first = s.spawn(move || journal.record_attempt("order-0", &lease("owner-0"), 1, 11));
        // The first barrier is in its fsync before any later write commits.
        let until = Instant::now() + Duration::from_secs(20);
        while !log
            .events()
            .iter()
            .any(|(_, p)| matches!(p, SyncPoint::Fsynced { .. }))
        {
            assert!(Instant::now() < until, "the first barrier never ran");
            std::thread::sleep(Duration::from_millis(1));
        }
        let later: Vec<_> = (1..=LATER)
            .map(|t| {
                s.spawn(move || {
                    journal.record_attempt(
                        &format!("order-{t}"),
                        &lease(&format!("owner-{t}")),
                        1,
                        11,
                    )
                })
            })
            .collect();
        first.join().unwrap().unwrap();
        for caller in later {
            caller.join().unwrap().unwrap();
        }
    });
    let events = log.events();
    let covers: Vec<u64> = events
        .iter()
        .filter_map(|(_, p)| match p {
            SyncPoint::Fsynced { covers } => Some(*covers),
            _ => None,
        })
        .collect();
    assert_eq!(covers.len(), 2, "{events:?}");
    assert!(covers[0] < covers[1], "{events:?}");
    for (_, point) in &events {
        if let SyncPoint::Durable { seq } = point {
            assert!(*seq <= covers[1], "{events:?}");
        }
    }
    let stats = journal.durability_stats();
    assert_eq!(stats.fsyncs, 2);
    assert_eq!(stats.durable_writes, 1 + LATER as u64);
}

#[test]
fn a_failed_fsync_fails_every_write_it_covered_and_every_later_one() {
    const THREADS: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let log = Arc::new(Log::default());
    let barriers = Arc::new(AtomicUsize::new(0));
    let hook: SyncHook = {
        let (log, barriers) = (Arc::clone(&log), Arc::clone(&barriers));
        Arc::new(move |point| {
            log.push(point);
            if point == SyncPoint::Fsync {
                barriers.fetch_add(1, Ordering::SeqCst);
                assert!(log.wait_for_written(THREADS), "not every caller wrote");
                return Err(std::io::Error::other("injected EIO"));
            }
            Ok(())
        })
    };
    let journal = open(&path).with_sync_hook(hook);
    let start = Barrier::new(THREADS);
    let results: Vec<payidem::Result<()>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (journal, start) = (&journal, &start);
                s.spawn(move || {
                    let id = format!("order-{t}");
                    let me = lease(&format!("owner-{t}"));
                    journal.open(&op(&id), &me, 10).unwrap();
                    start.wait();
                    journal.record_attempt(&id, &me, 1, 11)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert_eq!(
        barriers.load(Ordering::SeqCst),
        1,
        "one barrier covered all"
    );
    for result in &results {
        let err = result.as_ref().unwrap_err();
        assert_eq!(err.code(), ErrorCode::Journal, "{err}");
        assert!(err.message().contains("fsync"), "{err}");
        assert!(err.message().contains("injected EIO"), "{err}");
    }
    assert_eq!(log.written(), THREADS);
    assert!(
        !log.events()
            .iter()
            .any(|(_, p)| matches!(p, SyncPoint::Durable { .. } | SyncPoint::Fsynced { .. })),
        "nothing may be reported durable"
    );
    // Nothing was sent: every operation is back to pending, 0 attempts.
    for t in 0..THREADS {
        let record = journal.get(&format!("order-{t}")).unwrap().unwrap();
        assert_eq!(
            (record.state, record.attempts),
            (OperationState::Pending, 0)
        );
    }
    // The handle refuses every later durable write, without trying again.
    let me = lease("later");
    journal.open(&op("later"), &me, 20).unwrap();
    let err = journal.record_attempt("later", &me, 1, 21).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Journal);
    assert_eq!(barriers.load(Ordering::SeqCst), 1);
    assert_eq!(journal.durability_stats().fsyncs, 0);
    assert_eq!(
        journal.get("later").unwrap().unwrap().state,
        OperationState::Pending
    );
    // A journal opened again works.
    drop(journal);
    let again = open(&path);
    // (The same owner: the failed call never released its lease.)
    let me = lease("owner-0");
    again.claim("order-0", &me, 30).unwrap();
    again.record_attempt("order-0", &me, 1, 31).unwrap();
    assert_eq!(again.durability_stats().fsyncs, 1);
}

#[test]
fn one_caller_pays_one_fsync_per_operation_and_one_per_resumed_call() {
    const OPS: u64 = 40;
    let dir = tempfile::tempdir().unwrap();
    let journal = open(&dir.path().join("journal.db"));
    for i in 0..OPS {
        let id = format!("order-{i}");
        let me = lease(&format!("owner-{i}"));
        journal.open(&op(&id), &me, 10).unwrap();
        for attempt in 1..=3 {
            journal.record_attempt(&id, &me, attempt, 11).unwrap();
        }
        journal
            .finish(&id, &me, OperationState::Unknown, None, 0, 12)
            .unwrap();
        assert_eq!(journal.durability_stats().fsyncs, i + 1);
    }
    // A call resuming an operation another call left in flight or unknown
    // makes it durable again before its first attempt (that state may have
    // been committed by a call that died before its fsync), once.
    let me = lease("resumer");
    journal.claim("order-0", &me, 20).unwrap();
    journal.record_attempt("order-0", &me, 4, 21).unwrap();
    journal.record_attempt("order-0", &me, 5, 22).unwrap();
    let stats = journal.durability_stats();
    assert_eq!(stats.fsyncs, OPS + 1);
    assert_eq!(stats.durable_writes, OPS + 1);
    // Opened to send: the open is the one durable write.
    for i in 0..OPS {
        let id = format!("sent-{i}");
        let me = lease(&format!("sender-{i}"));
        journal.open_to_send(&op(&id), &me, 30).unwrap();
        journal.record_attempt(&id, &me, 2, 31).unwrap();
        journal
            .finish(&id, &me, OperationState::Unknown, None, 0, 32)
            .unwrap();
        assert_eq!(journal.durability_stats().fsyncs, OPS + 2 + i);
    }
}

#[test]
fn a_panicking_barrier_fails_its_waiters_instead_of_hanging_them() {
    let dir = tempfile::tempdir().unwrap();
    let hook: SyncHook = Arc::new(|point| {
        if point == SyncPoint::Fsync {
            panic!("a broken hook");
        }
        Ok(())
    });
    let journal = open(&dir.path().join("journal.db")).with_sync_hook(hook);
    let me = lease("a");
    journal.open(&op("o"), &me, 10).unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        journal.record_attempt("o", &me, 1, 11)
    }));
    assert!(panicked.is_err());
    let other = lease("b");
    journal.open(&op("p"), &other, 10).unwrap();
    let err = journal.record_attempt("p", &other, 1, 11).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Journal);
}
