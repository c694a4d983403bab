//! `payidem journal stats` on a real SQLite journal holding pending,
//! in-flight, unknown (one past the key retention) and settled operations:
//! the counts and the oldest unknown age in text, JSON and Prometheus text.

use payidem::journal::{Journal, Lease, SqliteJournal, SqliteJournalOptions};
use payidem::operation::{OperationState, Response};
use serde_json::Value;

mod common;
use common::{now, payidem, payment};

const HOUR: u64 = 3600;
const DAY: u64 = 24 * HOUR;

fn put(j: &dyn Journal, order_id: &str, state: OperationState, created: u64) {
    let lease = Lease {
        owner: "elsewhere/1/abc/0".into(),
        expires_at: created + 60,
    };
    let op = payment(order_id, false);
    j.open(&op, &lease, created).unwrap();
    if state == OperationState::Pending {
        j.release(&op.order_id, &lease).unwrap();
        return;
    }
    j.record_attempt(&op.order_id, &lease, 1, created + 1)
        .unwrap();
    if state != OperationState::InFlight {
        let answer = state.is_settled().then(|| Response {
            status: 201,
            headers: Vec::new(),
            body: b"{}".to_vec(),
            replayed: false,
        });
        j.finish(&op.order_id, &lease, state, answer.as_ref(), 0, created + 2)
            .unwrap();
    }
}

/// The value of the sample line `series` in Prometheus text.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
        .parse()
        .unwrap()
}

#[test]
fn stats_count_states_expired_keys_and_the_oldest_unknown_age() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let t = now();
    {
        let j = SqliteJournal::open(&path, SqliteJournalOptions::default()).unwrap();
        put(&j, "ord-pending", OperationState::Pending, t - HOUR);
        put(&j, "ord-flight", OperationState::InFlight, t - 2 * HOUR);
        put(&j, "ord-unknown", OperationState::Unknown, t - 3 * HOUR);
        put(&j, "ord-expired", OperationState::Unknown, t - 3 * DAY);
        put(&j, "ord-paid-1", OperationState::Succeeded, t - HOUR);
        put(&j, "ord-paid-2", OperationState::Succeeded, t - HOUR);
        put(&j, "ord-declined", OperationState::Rejected, t - HOUR);
    }
    let journal = path.to_str().unwrap();

    let o = payidem(&["journal", "stats", "--journal", journal, "--json"]);
    assert!(o.status.success(), "{o:?}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["states"]["pending"], 1);
    assert_eq!(v["states"]["in_flight"], 1);
    assert_eq!(v["states"]["unknown"], 2);
    assert_eq!(v["states"]["succeeded"], 2);
    assert_eq!(v["states"]["rejected"], 1);
    assert_eq!(v["states"]["conflict"], 0);
    assert_eq!(v["unknown"], 3);
    assert_eq!(v["key_expired"], 1);
    let oldest = v["oldest_unknown_age_s"].as_u64().unwrap();
    assert!((3 * DAY..3 * DAY + 60).contains(&oldest), "{oldest}");

    let o = payidem(&["journal", "stats", "--journal", journal, "--prometheus"]);
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("# TYPE payidem_journal_operations gauge\n"));
    assert_eq!(
        sample(&text, "payidem_journal_operations{state=\"unknown\"}"),
        2.0
    );
    assert_eq!(
        sample(&text, "payidem_journal_operations{state=\"succeeded\"}"),
        2.0
    );
    assert_eq!(sample(&text, "payidem_journal_key_expired_operations"), 1.0);
    assert_eq!(
        sample(&text, "payidem_journal_oldest_unknown_age_seconds"),
        oldest as f64
    );

    let o = payidem(&["journal", "stats", "--journal", journal]);
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("unknown    2\n"), "{text}");
    assert!(text.contains("key expired 1\n"), "{text}");
    assert!(text.contains("oldest unknown 3d"), "{text}");
}

#[test]
fn stats_of_an_empty_journal_report_no_unknown_operation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    drop(SqliteJournal::open(&path, SqliteJournalOptions::default()).unwrap());
    let o = payidem(&[
        "journal",
        "stats",
        "--journal",
        path.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{o:?}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["unknown"], 0);
    assert_eq!(v["oldest_unknown_age_s"], Value::Null);
    let o = payidem(&[
        "journal",
        "stats",
        "--journal",
        "/nonexistent-payidem/j.sqlite3",
    ]);
    assert!(!o.status.success());
}
