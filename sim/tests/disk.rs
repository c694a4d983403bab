//! The simulated disk under the journal keeps what a real one keeps: a
//! synced write survives a power loss, an unsynced one may not, and a
//! write whose fsync failed is never durable (until written again).

use payidem::journal::{Journal, Lease, SimulatedJournal};
use payidem::operation::{FrozenOperation, OperationSpec, OperationState};

fn operation(order_id: &str) -> FrozenOperation {
    OperationSpec {
        order_id,
        method: "POST",
        path: "/payments",
        body: b"{\"amount\":1}",
        idempotency_key: None,
        status_path: None,
    }
    .freeze()
    .expect("a valid operation")
}

fn lease() -> Lease {
    Lease {
        owner: "sim-test-owner".into(),
        expires_at: 2_000,
    }
}

#[test]
fn a_synced_first_attempt_survives_a_power_loss() {
    let journal = SimulatedJournal::new();
    journal
        .open_to_send(&operation("a"), &lease(), 1_000)
        .unwrap();
    journal.power_loss(&mut || false);
    let record = journal.get("a").unwrap().expect("still there");
    assert_eq!(record.state, OperationState::InFlight);
    assert_eq!(journal.durable_record("a").unwrap().attempts, 1);
}

#[test]
fn an_unsynced_write_is_lost_or_kept_as_the_disk_draws() {
    for kept in [false, true] {
        let journal = SimulatedJournal::new();
        // `open` (nothing to send yet) does not sync.
        journal.open(&operation("b"), &lease(), 1_000).unwrap();
        assert!(journal.get("b").unwrap().is_some());
        assert!(journal.durable_record("b").is_none());
        journal.power_loss(&mut || kept);
        assert_eq!(journal.get("b").unwrap().is_some(), kept);
        assert_eq!(journal.stats().lost_writes, u64::from(!kept));
    }
}

#[test]
fn a_write_whose_fsync_failed_is_never_durable() {
    let journal = SimulatedJournal::new();
    journal.fail_next_syncs(1);
    let failed = journal.open_to_send(&operation("c"), &lease(), 1_000);
    assert!(failed.is_err(), "the failed fsync is reported");
    // Visible, but not on disk; a later successful sync does not save it.
    assert!(journal.get("c").unwrap().is_some());
    journal
        .open_to_send(&operation("d"), &lease(), 1_000)
        .unwrap();
    assert!(journal.durable_record("c").is_none());
    assert!(journal.durable_record("d").is_some());
    journal.power_loss(&mut || true);
    assert!(
        journal.get("c").unwrap().is_none(),
        "doomed by the failed fsync"
    );
    assert!(journal.get("d").unwrap().is_some());
    let stats = journal.stats();
    assert_eq!(
        (stats.failed_syncs, stats.syncs, stats.power_losses),
        (1, 1, 1)
    );
}
