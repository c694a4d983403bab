//! Protocol section 3 step 7: the idempotency store.

mod common;

use std::time::Duration;

use common::*;
use payidem_mock::{ClockSetting, KeySpec, MockConfig};

#[test]
fn first_then_replay_byte_for_byte() {
    let (server, c) = start_default();
    let order = unique("o");
    let first = c.create(&order, "create-1", 1_500);
    assert_eq!(first.status, 201);
    assert!(!first.replayed());
    let payment = first.json();
    assert_eq!(payment["order_id"], order.as_str());
    assert_eq!(payment["amount"], 1_500);
    assert_eq!(payment["currency"], "EUR");
    assert_eq!(payment["status"], "succeeded");
    assert!(payment["payment_id"].as_str().unwrap().starts_with("pay_"));
    assert!(payment["created_at"].as_u64().unwrap() > 0);

    let again = c.create(&order, "create-1", 1_500);
    assert_eq!(again.status, 201);
    assert!(again.replayed());
    assert_eq!(
        again.body, first.body,
        "the stored body comes back byte for byte"
    );
    assert_eq!(again.header("Location"), first.header("Location"));

    let stats = server.stats();
    assert_eq!(stats.replays, 1);
    assert_eq!(stats.orders[&order].payments_created, 1);
    assert_eq!(stats.orders[&order].idempotency_keys, ["create-1"]);
}

#[test]
fn declined_answer_is_stored_and_replayed() {
    let (server, c) = start_default();
    let order = unique("o");
    let r = c.create(&order, "k-decline", 2_402);
    assert_eq!((r.status, r.code().as_str()), (402, "card_declined"));
    let again = c.create(&order, "k-decline", 2_402);
    assert_eq!((again.status, again.body.clone()), (402, r.body.clone()));
    assert!(again.replayed());
    assert_eq!(server.stats().payments, 0);
    // The order id is free for another operation.
    assert_eq!(c.create(&order, "k-other", 2_000).status, 201);
}

#[test]
fn conflict_on_another_fingerprint() {
    let (server, c) = start_default();
    let order = unique("o");
    assert_eq!(c.create(&order, "k-c", 100).status, 201);
    let r = c.create(&order, "k-c", 101);
    assert_eq!((r.status, r.code().as_str()), (409, "idempotency_conflict"));
    // The path is part of the fingerprint too.
    let pid = c.get(&format!("/v1/payments?order_id={order}")).json()["payment_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = c.post(
        &format!("/v1/payments/{pid}/refunds"),
        "k-c",
        &create_body(&order, 100),
    );
    assert_eq!(r.code(), "idempotency_conflict");
    assert_eq!(server.stats().payments, 1);
}

#[test]
fn keys_are_scoped_per_key_id() {
    let config = MockConfig::default()
        .with_key(KeySpec::new("key_a", "sk_test_secret_aaaaaaaa").unwrap())
        .with_key(KeySpec::new("key_b", "sk_test_secret_bbbbbbbb").unwrap());
    let server = payidem_mock::MockServer::start(config).unwrap();
    let a = Client::with_key(&server.url(), "key_a", b"sk_test_secret_aaaaaaaa");
    let b = Client::with_key(&server.url(), "key_b", b"sk_test_secret_bbbbbbbb");
    assert_eq!(a.create(&unique("o"), "same-key", 100).status, 201);
    let r = b.create(&unique("o"), "same-key", 200);
    assert_eq!(r.status, 201);
    assert!(!r.replayed());
}

#[test]
fn in_progress_while_the_first_runs() {
    let (server, c) = start_default();
    // The first create runs 3 s; the second comes once the mock holds the
    // first's key (however long the first took to get there).
    server.set_processing_delay(Duration::from_secs(3));
    let order = unique("o");
    let body = create_body(&order, 700);
    std::thread::scope(|s| {
        let first = s.spawn(|| c.post("/v1/payments", "k-slow", &body));
        assert!(
            server.wait_for_stats(Duration::from_secs(10), |s| s.idempotency_keys_stored > 0),
            "the first create never reached the mock"
        );
        let second = c.post("/v1/payments", "k-slow", &body);
        assert_eq!(
            (second.status, second.code().as_str()),
            (409, "idempotency_in_progress")
        );
        // Another body under the running key is still a conflict.
        let other = c.post("/v1/payments", "k-slow", &create_body(&order, 701));
        assert_eq!(other.code(), "idempotency_conflict");
        let first = first.join().unwrap();
        assert_eq!(first.status, 201);
        server.set_processing_delay(Duration::ZERO);
        let third = c.post("/v1/payments", "k-slow", &body);
        assert!(third.replayed());
        assert_eq!(third.body, first.body);
    });
    let stats = server.stats();
    assert_eq!(stats.requests.by_error_code["idempotency_in_progress"], 1);
    assert_eq!(stats.orders[&order].payments_created, 1);
}

#[test]
fn many_concurrent_attempts_create_one_payment() {
    let (server, c) = start_default();
    server.set_processing_delay(Duration::from_millis(50));
    let order = unique("o");
    let body = create_body(&order, 900);
    let statuses: Vec<(u16, bool)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| s.spawn(|| c.post("/v1/payments", "k-race", &body)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .map(|r| (r.status, r.replayed()))
            .collect()
    });
    assert_eq!(
        statuses.iter().filter(|(s, r)| *s == 201 && !r).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|(s, _)| *s == 201 || *s == 409),
        "{statuses:?}"
    );
    assert_eq!(server.stats().orders[&order].payments_created, 1);
}

#[test]
fn keys_expire_after_the_retention() {
    let t0 = 1_800_000_000;
    let (server, mut c) = start(MockConfig {
        clock: ClockSetting::Fixed(t0),
        idempotency_retention_seconds: 100,
        ..MockConfig::default()
    });
    c.fixed_now = Some(t0);
    let order = unique("o");
    assert_eq!(c.create(&order, "k-exp", 100).status, 201);
    server.set_clock(ClockSetting::Fixed(t0 + 99));
    c.fixed_now = Some(t0 + 99);
    assert!(c.create(&order, "k-exp", 100).replayed());
    server.set_clock(ClockSetting::Fixed(t0 + 100));
    c.fixed_now = Some(t0 + 100);
    // The key is forgotten: the create runs again and meets the payment.
    let r = c.create(&order, "k-exp", 100);
    assert_eq!((r.status, r.code().as_str()), (409, "duplicate_order"));
    assert_eq!(server.stats().duplicate_order, 1);
    assert_eq!(server.stats().idempotency_keys_stored, 1);
}

#[test]
fn duplicate_order_under_a_new_key_is_counted() {
    let (server, c) = start_default();
    let order = unique("o");
    assert_eq!(c.create(&order, "k-1", 100).status, 201);
    let r = c.create(&order, "k-2", 100);
    assert_eq!((r.status, r.code().as_str()), (409, "duplicate_order"));
    assert!(
        c.create(&order, "k-2", 100).replayed(),
        "the 409 is a finished answer, stored"
    );
    let stats = c.stats();
    assert_eq!(stats["duplicate_order"], 1);
    assert_eq!(stats["orders"][&order]["payments_created"], 1);
    assert_eq!(
        stats["orders"][&order]["idempotency_keys"],
        serde_json::json!(["k-1"])
    );
    assert_eq!(
        stats["orders"][&order]["duplicate_keys"],
        serde_json::json!(["k-2"])
    );
    assert_eq!(server.stats().replays, 1);
}
