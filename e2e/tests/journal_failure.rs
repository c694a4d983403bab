//! A success is never lost to a journal failure: the platform answers 2xx,
//! then every write to the journal's file fails (the process's file-size
//! limit is dropped to 0, so each write(2) to a regular file gets `EFBIG`,
//! as on a full or failing disk). The caller gets the success with the
//! journal's error attached; once the disk works again, the next call of
//! the same order resumes it (the lease the failed call could not release
//! is taken over) and the platform replays the same answer.
//!
//! One test in its own binary: the file-size limit is per process.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use payidem::operation::OperationState;
use payidem::{ErrorCode, JournalChoice, OperationSpec};
use payidem_e2e::*;

#[test]
fn a_2xx_whose_journal_write_fails_is_returned_as_the_success_it_is() {
    let mock = start_mock();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let disk_fails = Arc::new(AtomicBool::new(false));
    let trip = Arc::clone(&disk_fails);
    let client = client(&mock.url(), JournalChoice::Sqlite(path.clone())).with_event_hook(
        Arc::new(move |event| {
            // The answer is in; the journal has not stored it yet.
            if event.status == Some(201) && !trip.swap(true, Ordering::SeqCst) {
                disk::fail_writes(true);
            }
        }),
    );
    let body = payment_body("ord-journal-fails", 4200);
    let spec = OperationSpec {
        order_id: "ord-journal-fails",
        method: "POST",
        path: "/v1/payments",
        body: &body,
        idempotency_key: None,
        // No status path: the resumed call re-sends the POST with its key,
        // and the platform replays its stored answer.
        status_path: None,
    };

    let first = client.execute(&spec);
    disk::fail_writes(false);
    assert!(disk_fails.load(Ordering::SeqCst), "the disk never failed");
    let first = first.expect("the platform's 2xx reaches the caller");
    assert_eq!(first.response.status, 201);
    assert!(!first.response.replayed);
    let problem = first
        .journal_error
        .as_ref()
        .expect("the journal's failure is attached to the success");
    assert_eq!(problem.code(), ErrorCode::Journal);
    assert_eq!(problem.order_id(), Some("ord-journal-fails"));
    assert_eq!(mock.stats().orders["ord-journal-fails"].payments_created, 1);

    // The journal still holds the operation unsettled with its key.
    let record = client.status("ord-journal-fails").unwrap().unwrap();
    assert_eq!(record.state, OperationState::InFlight);
    assert_eq!(
        record.operation.idempotency_key, first.idempotency_key,
        "the key is kept"
    );

    // The failed call could not release its lease either (the disk was
    // still failing): another client of this live process must wait for it.
    let other = client_on_disk(&mock.url(), &path);
    let busy = other.execute(&spec).unwrap_err();
    assert_eq!(busy.code(), ErrorCode::OperationBusy, "{busy:?}");
    drop(other);

    // The same client calls the order again at once: it takes over the
    // lease its failed call left, and the platform replays.
    let again = client.execute(&spec).expect("the resumed call settles");
    assert!(
        again.response.replayed,
        "answered from the platform's store"
    );
    assert_eq!(again.response.body, first.response.body);
    assert_eq!(again.idempotency_key, first.idempotency_key);
    assert!(again.journal_error.is_none());
    assert_eq!(mock.stats().orders["ord-journal-fails"].payments_created, 1);
    let record = client.status("ord-journal-fails").unwrap().unwrap();
    assert_eq!(record.state, OperationState::Succeeded);

    // A fresh client (a restart) finds it settled: nothing is sent again.
    drop(client);
    let restarted = client_on_disk(&mock.url(), &path);
    let stored = restarted.execute(&spec).unwrap();
    assert_eq!(stored.response.body, first.response.body);
    assert_eq!(mock.stats().orders["ord-journal-fails"].payments_created, 1);
}
