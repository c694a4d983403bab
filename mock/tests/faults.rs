//! Injected faults: rates on seeded runs, and their effect on payments.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use payidem_mock::{FaultKind, FaultSettings, MockConfig};

const N: usize = 1000;

#[derive(Debug)]
struct Attempt {
    order: String,
    key: String,
    result: Result<Resp, String>,
    elapsed: Duration,
}

fn run(c: &Client, n: usize) -> Vec<Attempt> {
    (0..n)
        .map(|_| {
            let order = unique("fo");
            let key = format!("create-{order}");
            let started = Instant::now();
            let result = c
                .try_post("/v1/payments", &key, &create_body(&order, 1_000))
                .map_err(|e| e.to_string());
            Attempt {
                order,
                key,
                result,
                elapsed: started.elapsed(),
            }
        })
        .collect::<Vec<_>>()
}

fn faulted(probabilities: &[(FaultKind, f64)], delay_ms: u64) -> FaultSettings {
    let mut s = FaultSettings::none();
    for (k, p) in probabilities {
        s.set(*k, *p).unwrap();
    }
    s.delay_ms = delay_ms;
    s
}

fn rate(count: usize) -> f64 {
    count as f64 / N as f64
}

fn assert_rate(name: &str, count: usize, p: f64) {
    let r = rate(count);
    assert!(
        (p - 0.08..=p + 0.08).contains(&r),
        "{name}: rate {r} for p={p}"
    );
}

/// Every attempt in `attempts` matching `pred` must (or must not) have left
/// a payment, and a retry with the same key must replay it (or create it).
fn check_effect(c: &Client, attempts: &[&Attempt], created: bool) {
    assert!(!attempts.is_empty());
    for a in attempts {
        let status = c.get(&format!("/v1/payments?order_id={}", a.order));
        assert_eq!(status.status, if created { 200 } else { 404 }, "{a:?}");
        let retry = c.post("/v1/payments", &a.key, &create_body(&a.order, 1_000));
        assert_eq!(retry.status, 201, "{a:?}");
        assert_eq!(retry.replayed(), created, "{a:?}");
        if created {
            assert_eq!(retry.json(), status.json());
        }
    }
}

fn classify(
    attempts: &[Attempt],
    f: impl Fn(&Attempt) -> Option<&'static str>,
) -> BTreeMap<&'static str, Vec<&Attempt>> {
    let mut out: BTreeMap<&'static str, Vec<&Attempt>> = BTreeMap::new();
    for a in attempts {
        out.entry(f(a).unwrap_or("none")).or_default().push(a);
    }
    out
}

#[test]
fn before_commit_faults_happen_at_their_rate_and_create_nothing() {
    let p = 0.2;
    let faults = faulted(
        &[
            (FaultKind::Error500BeforeCommit, p),
            (FaultKind::Error502, p),
            (FaultKind::Error503, p),
            (FaultKind::Error429, p),
        ],
        0,
    );
    let (server, c) = start(MockConfig {
        seed: Some(42),
        faults,
        ..MockConfig::default()
    });
    let attempts = run(&c, N);
    let by = classify(&attempts, |a| {
        let r = a.result.as_ref().unwrap();
        match (r.status, r.code().as_str()) {
            (201, _) => None,
            (500, "internal_error") => Some("error_500_before_commit"),
            (502, "bad_gateway") => Some("error_502"),
            (503, "service_unavailable") if r.header("Retry-After") == Some("1") => {
                Some("error_503")
            }
            (429, "rate_limited") if r.header("Retry-After") == Some("1") => Some("error_429"),
            other => panic!("unexpected {other:?}"),
        }
    });
    let stats = server.stats();
    for name in [
        "error_500_before_commit",
        "error_502",
        "error_503",
        "error_429",
    ] {
        assert_rate(name, by[name].len(), p);
        assert_eq!(stats.faults[name], by[name].len() as u64, "{name}");
    }
    assert_eq!(stats.payments as usize, by["none"].len());
    assert_eq!(
        stats.idempotency_keys_stored as usize,
        by["none"].len(),
        "faults before commit are never stored"
    );
    server.set_faults(FaultSettings::none());
    for name in [
        "error_500_before_commit",
        "error_502",
        "error_503",
        "error_429",
    ] {
        check_effect(&c, &by[name], false);
    }
}

#[test]
fn after_commit_faults_leave_the_payment_created() {
    let p = 0.2;
    let faults = faulted(
        &[
            (FaultKind::Error500AfterCommit, p),
            (FaultKind::Timeout504BeforeCommit, p),
            (FaultKind::DropAfterCommit, p),
        ],
        0,
    );
    let (server, c) = start(MockConfig {
        seed: Some(7),
        faults,
        ..MockConfig::default()
    });
    let attempts = run(&c, N);
    let by = classify(&attempts, |a| match &a.result {
        Err(e) => {
            assert!(
                a.elapsed < Duration::from_secs(5),
                "a dropped connection fails at once: {a:?}"
            );
            assert!(!e.contains("timeout"), "closed, not timed out: {e}");
            Some("drop_after_commit")
        }
        Ok(r) => match (r.status, r.code().as_str()) {
            (201, _) => None,
            (500, "internal_error") => Some("error_500_after_commit"),
            (504, "gateway_timeout") => Some("timeout_504_before_commit"),
            other => panic!("unexpected {other:?}"),
        },
    });
    let stats = server.stats();
    for name in [
        "error_500_after_commit",
        "timeout_504_before_commit",
        "drop_after_commit",
    ] {
        assert_rate(name, by[name].len(), p);
        assert_eq!(stats.faults[name], by[name].len() as u64, "{name}");
    }
    assert_eq!(
        stats.requests.by_status["dropped"],
        by["drop_after_commit"].len() as u64
    );
    let committed =
        by["none"].len() + by["error_500_after_commit"].len() + by["drop_after_commit"].len();
    assert_eq!(stats.payments as usize, committed);
    server.set_faults(FaultSettings::none());
    check_effect(&c, &by["error_500_after_commit"], true);
    check_effect(&c, &by["drop_after_commit"], true);
    check_effect(&c, &by["timeout_504_before_commit"], false);
    assert!(stats.orders.values().all(|o| o.payments_created == 1));
}

#[test]
fn gateway_timeout_after_commit_delay_and_status_faults() {
    let faults = faulted(
        &[
            (FaultKind::Timeout504AfterCommit, 0.25),
            (FaultKind::DelayAfterCommit, 0.25),
            (FaultKind::StatusError503, 0.2),
        ],
        40,
    );
    let (server, c) = start(MockConfig {
        seed: Some(9),
        faults,
        ..MockConfig::default()
    });
    let attempts = run(&c, N);
    let by = classify(&attempts, |a| {
        let r = a.result.as_ref().unwrap();
        match (r.status, r.code().as_str()) {
            (201, _) => None,
            (504, "gateway_timeout") => Some("timeout_504_after_commit"),
            other => panic!("unexpected {other:?}"),
        }
    });
    let stats = server.stats();
    assert_rate(
        "timeout_504_after_commit",
        by["timeout_504_after_commit"].len(),
        0.25,
    );
    assert_eq!(
        stats.faults["timeout_504_after_commit"],
        by["timeout_504_after_commit"].len() as u64
    );
    let delayed = stats.faults["delay_after_commit"] as usize;
    assert_rate("delay_after_commit", delayed, 0.25);
    let slow = by["none"]
        .iter()
        .filter(|a| a.elapsed >= Duration::from_millis(40))
        .count();
    assert!(
        slow >= delayed,
        "every delayed answer took at least delay_ms ({slow} < {delayed})"
    );
    assert_eq!(stats.payments as usize, N, "every attempt committed");
    assert!(
        !stats.faults.contains_key("status_error_503"),
        "POSTs never draw the status fault"
    );

    // Status queries fail at their own rate, with Retry-After.
    let mut unavailable = 0;
    for a in &attempts {
        let r = c.get(&format!("/v1/payments?order_id={}", a.order));
        match r.status {
            200 => {}
            503 => {
                assert_eq!(
                    (r.code().as_str(), r.header("Retry-After")),
                    ("service_unavailable", Some("1"))
                );
                unavailable += 1;
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_rate("status_error_503", unavailable, 0.2);
    assert_eq!(
        server.stats().faults["status_error_503"],
        unavailable as u64
    );
    server.set_faults(FaultSettings::none());
    check_effect(&c, &by["timeout_504_after_commit"], true);
}

#[test]
fn a_delayed_answer_times_the_client_out_but_the_payment_exists() {
    let faults = faulted(&[(FaultKind::DelayAfterCommit, 1.0)], 1_500);
    let (server, mut c) = start(MockConfig {
        seed: Some(1),
        faults,
        ..MockConfig::default()
    });
    c.agent = agent(Duration::from_millis(300));
    let order = unique("o");
    let key = format!("create-{order}");
    let err = c
        .try_post("/v1/payments", &key, &create_body(&order, 500))
        .unwrap_err();
    assert!(matches!(err, ureq::Error::Timeout(_)), "{err:?}");
    server.set_faults(FaultSettings::none());
    let c = Client::new(&server.url());
    assert_eq!(c.get(&format!("/v1/payments?order_id={order}")).status, 200);
    assert!(c
        .post("/v1/payments", &key, &create_body(&order, 500))
        .replayed());
}

#[test]
fn faults_touch_only_signed_verified_posts() {
    let faults = faulted(&[(FaultKind::Error503, 1.0)], 0);
    let (server, c) = start(MockConfig {
        seed: Some(1),
        faults,
        ..MockConfig::default()
    });
    let unsigned = c
        .send("POST", "/v1/payments", &[], &create_body("o", 1))
        .unwrap();
    assert_eq!(unsigned.code(), "missing_signature");
    assert_eq!(c.get("/v1/payments?order_id=o").status, 404);
    assert_eq!(c.plain("GET", "/_mock/ping", b"").status, 200);
    assert_eq!(c.create(&unique("o"), "k", 1).status, 503);
    assert_eq!(server.stats().faults["error_503"], 1);
}

#[test]
fn a_seed_reproduces_the_run() {
    let statuses = |seed| {
        let faults = faulted(
            &[
                (FaultKind::Error502, 0.3),
                (FaultKind::Error500AfterCommit, 0.3),
            ],
            0,
        );
        let (_server, c) = start(MockConfig {
            seed: Some(seed),
            faults,
            ..MockConfig::default()
        });
        run(&c, 60)
            .into_iter()
            .map(|a| a.result.unwrap().status)
            .collect::<Vec<_>>()
    };
    assert_eq!(statuses(5), statuses(5));
    assert_ne!(statuses(5), statuses(6));
}

#[test]
fn faults_change_at_run_time_through_the_control_route() {
    let (server, c) = start_default();
    let r = c.plain(
        "POST",
        "/_mock/faults",
        br#"{"error_429": 1, "delay_ms": 10, "retry_after_seconds": 30, "clock_skew_seconds": -5}"#,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["error_429"], 1.0);
    assert_eq!(r.json()["delay_ms"], 10);
    assert_eq!(r.json()["retry_after_seconds"], 30);
    assert_eq!(r.json()["clock_skew_seconds"], -5);
    let refused = c.create(&unique("o"), "k", 1);
    assert_eq!(
        (refused.status, refused.header("Retry-After")),
        (429, Some("30"))
    );
    let r = c.plain("POST", "/_mock/faults", br#"{"error_503": 1}"#);
    assert_eq!(r.json()["retry_after_seconds"], 30, "kept when absent");
    let refused = c.create(&unique("o"), "k1", 1);
    assert_eq!(
        (refused.status, refused.header("Retry-After")),
        (503, Some("30"))
    );
    c.plain("POST", "/_mock/faults", br#"{"error_429": 1}"#);
    for (body, field) in [
        (&br#"{"error_429": 2}"#[..], "error_429"),
        (br#"{"nope": 0.1}"#, "nope"),
        (br#"{"error_502": 0.6, "error_503": 0.6}"#, "error_503"),
        (br#"{"delay_ms": -1}"#, "delay_ms"),
        (br#"{"retry_after_seconds": 1.5}"#, "retry_after_seconds"),
        (b"[]", "body"),
    ] {
        let r = c.plain("POST", "/_mock/faults", body);
        assert_eq!(
            (r.status, r.field().as_str()),
            (400, field),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    assert_eq!(
        c.plain("GET", "/_mock/faults", b"").json()["error_429"],
        1.0,
        "a refused update changes nothing"
    );
    assert_eq!(
        c.plain("POST", "/_mock/faults", b"{}").json()["error_429"],
        0.0
    );
    assert_eq!(c.create(&unique("o"), "k2", 1).status, 201);
    drop(server);
}
