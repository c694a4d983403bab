//! Journal failures in the metrics and events: the journal's file stops
//! taking writes (the process's file-size limit drops to 0, as on a full
//! disk) after the platform's answer, then after a refused attempt. Each
//! failed write is counted and reaches the event listener at WARN, and the
//! call's end is counted under the right name.
//!
//! Its own test binary: the file-size limit is per process.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use payidem::client::metrics::JournalWrite;
use payidem::client::{Event, LogLevel};
use payidem::{ErrorCode, JournalChoice};
use payidem_e2e::*;
use payidem_mock::{FaultKind, FaultSettings};

#[test]
fn failed_journal_writes_are_counted_and_reach_the_listener() {
    let mock = start_mock();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let events: Arc<Mutex<Vec<Event>>> = Arc::default();
    let sink = Arc::clone(&events);
    let tripped = Arc::new(AtomicBool::new(false));
    let trip = Arc::clone(&tripped);
    let client = client(&mock.url(), JournalChoice::Sqlite(path))
        .with_event_hook(Arc::new(move |e| {
            // The answer is in; the journal has not stored what follows.
            if matches!(e.status, Some(201) | Some(500)) && !trip.swap(true, Ordering::SeqCst) {
                disk::fail_writes(true);
            }
        }))
        .with_event_listener(Arc::new(move |e: &Event| {
            sink.lock().unwrap().push(e.clone())
        }));

    // 1. A 201 whose end the journal cannot store: still a success.
    let paid = OwnedSpec::payment("ord-jf-paid", 100, false);
    let outcome = client.execute(&paid.spec());
    disk::fail_writes(false);
    assert!(tripped.swap(false, Ordering::SeqCst));
    assert_eq!(
        outcome.expect("the 2xx reaches the caller").response.status,
        201
    );

    // 2. A 500 (nothing happened), then the retry's record fails: the
    // call's result is the journal's error.
    mock.set_faults(
        FaultSettings::none()
            .with(FaultKind::Error500BeforeCommit, 1.0)
            .unwrap(),
    );
    let refused = OwnedSpec::payment("ord-jf-retry", 100, false);
    let e = client.execute(&refused.spec()).unwrap_err();
    disk::fail_writes(false);
    assert!(tripped.load(Ordering::SeqCst));
    assert_eq!(e.code(), ErrorCode::Journal, "{e:?}");

    let m = client.metrics();
    let failures = "payidem_client_journal_failures_total";
    assert_eq!(m.sum(failures, &[("write", "finish")]), 1.0);
    assert_eq!(
        m.sum(
            failures,
            &[("write", "record_attempt"), ("durable", "false")]
        ),
        1.0
    );
    assert_eq!(m.sum(failures, &[]), 2.0);
    let ended = "payidem_client_calls_ended_total";
    assert_eq!(m.sum(ended, &[("end", "succeeded")]), 1.0);
    assert_eq!(m.sum(ended, &[("end", "journal_error")]), 1.0);

    let events = events.lock().unwrap();
    let failed: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::JournalFailed(f) => Some((f.order_id.as_str(), f.write)),
            _ => None,
        })
        .collect();
    assert_eq!(
        failed,
        [
            ("ord-jf-paid", JournalWrite::Finish),
            ("ord-jf-retry", JournalWrite::RecordAttempt)
        ]
    );
    for e in events.iter() {
        match e {
            Event::JournalFailed(_) => assert_eq!(e.level(), LogLevel::Warn),
            Event::CallEnded(end) if end.order_id == "ord-jf-retry" => {
                assert_eq!(end.end, "journal_error");
                assert_eq!(e.level(), LogLevel::Warn);
            }
            Event::CallEnded(end) => {
                assert_eq!(end.end, "succeeded");
                assert!(end.is_final);
            }
            Event::Attempt(_) => {}
        }
        assert!(!e.to_json().contains("amount"), "no body in events");
    }
}
