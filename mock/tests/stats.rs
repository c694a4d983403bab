//! The oracle stays exact under concurrent clients.

mod common;

use std::collections::BTreeMap;

use common::*;
use payidem_mock::{FaultKind, FaultSettings, MockConfig};

#[test]
fn counts_match_what_clients_saw() {
    let faults = FaultSettings::none()
        .with(FaultKind::Error503, 0.1)
        .unwrap()
        .with(FaultKind::Error500AfterCommit, 0.1)
        .unwrap();
    let (server, c) = start(MockConfig {
        seed: Some(11),
        faults,
        ..MockConfig::default()
    });
    let threads = 8;
    let per_thread = 60;
    let seen: Vec<BTreeMap<u16, u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let c = &c;
                s.spawn(move || {
                    let mut seen = BTreeMap::new();
                    for i in 0..per_thread {
                        // Pairs of threads share order ids, so some creates meet duplicate_order.
                        let order = format!("shared-{}-{i}", t / 2);
                        let r = c.create(&order, &format!("k-{t}-{i}"), 100);
                        *seen.entry(r.status).or_insert(0) += 1;
                    }
                    seen
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut total: BTreeMap<u16, u64> = BTreeMap::new();
    for m in seen {
        for (k, v) in m {
            *total.entry(k).or_default() += v;
        }
    }
    let stats = server.stats();
    assert_eq!(stats.requests.total, (threads * per_thread) as u64);
    assert_eq!(
        stats.requests.by_route["POST /v1/payments"],
        (threads * per_thread) as u64
    );
    for (status, n) in &total {
        assert_eq!(
            stats.requests.by_status[&status.to_string()],
            *n,
            "status {status}"
        );
    }
    assert_eq!(stats.faults["error_503"], total[&503]);
    assert_eq!(stats.faults["error_500_after_commit"], total[&500]);
    // A duplicate_order answer may have been replaced by an after-commit 500.
    let answered = stats.requests.by_error_code["duplicate_order"];
    assert!((answered..=answered + total[&500]).contains(&stats.duplicate_order));
    let created: u64 = stats.orders.values().map(|o| o.payments_created).sum();
    assert_eq!(created, stats.payments);
    assert!(stats
        .orders
        .values()
        .all(|o| o.payments_created <= 1 && o.idempotency_keys.len() as u64 == o.payments_created));
    let dup_keys: usize = stats.orders.values().map(|o| o.duplicate_keys.len()).sum();
    assert_eq!(dup_keys as u64, stats.duplicate_order);
    assert!(
        stats.duplicate_order > 0,
        "the shared order ids met each other"
    );
}
