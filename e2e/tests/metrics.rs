//! Metrics and events during a run with faults against the real mock: the
//! client's counters match the mock's oracle, the mock's `/metrics` counts
//! the same verdicts, and every call's end reaches the event listener with
//! the core's log level.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};

use payidem::client::{Event, LogLevel};
use payidem::metrics::Snapshot;
use payidem::JournalChoice;
use payidem_e2e::*;
use payidem_mock::{FaultKind, FaultSettings};

const CREATE: &str = "POST /v1/payments";
const BY_ORDER: &str = "GET /v1/payments?order_id";

fn faults() -> FaultSettings {
    let mut f = FaultSettings::none();
    for (kind, p) in [
        (FaultKind::Error500BeforeCommit, 0.15),
        (FaultKind::Timeout504AfterCommit, 0.2),
        (FaultKind::DropAfterCommit, 0.1),
    ] {
        f.set(kind, p).unwrap();
    }
    f
}

fn get_metrics_text(mock: &payidem_mock::MockServer) -> (String, String) {
    let mut s = TcpStream::connect(mock.addr()).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: mock\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

/// The value of the sample line `name{labels}` in Prometheus text.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {series} in\n{text}"))
        .parse()
        .unwrap()
}

#[test]
fn client_and_verifier_metrics_match_the_mocks_oracle_during_a_faulty_run() {
    let mock = start_mock();
    mock.set_faults(faults());
    let events: Arc<Mutex<Vec<Event>>> = Arc::default();
    let sink = Arc::clone(&events);
    let c = client(&mock.url(), JournalChoice::Memory).with_event_listener(Arc::new(
        move |e: &Event| sink.lock().unwrap().push(e.clone()),
    ));
    let n = 30;
    let mut ok = 0;
    for i in 0..n {
        let spec = OwnedSpec::payment(&format!("ord-metrics-{i}"), 100 + i, true);
        if c.execute(&spec.spec()).is_ok() {
            ok += 1;
        }
    }
    let stats = mock.stats();
    let m: Snapshot = c.metrics();
    let attempts = "payidem_client_attempts_total";
    let route = |r: &str| stats.requests.by_route.get(r).copied().unwrap_or(0) as f64;
    let status = |s: &str| stats.requests.by_status.get(s).copied().unwrap_or(0) as f64;
    let fault = |k: FaultKind| stats.faults.get(k.name()).copied().unwrap_or(0) as f64;

    assert_eq!(m.sum(attempts, &[("kind", "operation")]), route(CREATE));
    assert_eq!(
        m.sum(attempts, &[("kind", "status_query")]),
        route(BY_ORDER)
    );
    assert!(
        route(BY_ORDER) > 0.0,
        "the faults made the client query: {stats:?}"
    );
    assert_eq!(
        m.sum(attempts, &[("http_response_status_code", "504")]),
        status("504")
    );
    assert_eq!(
        m.sum(attempts, &[("http_response_status_code", "500")]),
        status("500")
    );
    assert_eq!(
        m.sum(attempts, &[("http_response_status_code", "none")]),
        fault(FaultKind::DropAfterCommit)
    );
    assert_eq!(
        m.sum(attempts, &[("next", "query_status")]),
        fault(FaultKind::Timeout504AfterCommit) + fault(FaultKind::DropAfterCommit)
    );
    let ended = "payidem_client_calls_ended_total";
    assert_eq!(m.sum(ended, &[]), n as f64);
    assert_eq!(m.sum(ended, &[("end", "succeeded")]), ok as f64);
    assert_eq!(
        m.sum("payidem_client_settle_duration_seconds", &[]),
        ok as f64
    );
    let journal = "payidem_client_journal_write_duration_seconds";
    assert_eq!(m.sum(journal, &[("write", "open")]), n as f64);
    // A call's end is committed without waiting for the disk.
    assert_eq!(
        m.sum(journal, &[("write", "finish"), ("durable", "false")]),
        n as f64
    );
    // Each open recorded its operation's first attempt, durably: no call
    // resumed an operation, so no attempt record had to be durable.
    assert_eq!(
        m.sum(journal, &[("write", "open"), ("durable", "true")]),
        n as f64
    );
    assert_eq!(
        m.sum(journal, &[("write", "record_attempt"), ("durable", "true")]),
        0.0
    );
    assert_eq!(
        m.sum(
            journal,
            &[("write", "record_attempt"), ("durable", "false")]
        ),
        route(CREATE) - n as f64
    );
    assert_eq!(
        m.sum("payidem_client_unknown_operations", &[]),
        (n - ok) as f64
    );

    // Every call's end reached the listener, each with the core's level.
    let events = events.lock().unwrap();
    let ends: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::CallEnded(end) => Some(end),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), n as usize);
    for end in &ends {
        let expected = match (end.end, end.attempts) {
            ("succeeded", 1) => LogLevel::Debug,
            ("succeeded", _) => LogLevel::Info,
            _ => LogLevel::Warn,
        };
        assert_eq!(
            Event::CallEnded((*end).clone()).level(),
            expected,
            "{end:?}"
        );
    }
    let attempt_events = events
        .iter()
        .filter(|e| matches!(e, Event::Attempt(_)))
        .count();
    assert_eq!(attempt_events as f64, m.sum(attempts, &[]));

    // The mock's verifier counted every signed request as accepted.
    let (head, text) = get_metrics_text(&mock);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    assert!(text.contains("# TYPE payidem_verifier_verdicts_total counter\n"));
    assert_eq!(
        sample(&text, "payidem_verifier_verdicts_total{code=\"accepted\"}"),
        route(CREATE) + route(BY_ORDER)
    );
    assert!(sample(&text, "payidem_verifier_replay_cache_entries") >= route(CREATE));
    assert!(sample(&text, "payidem_verifier_replay_cache_capacity") > 0.0);

    if let Ok(path) = std::env::var("PAYIDEM_METRICS_SAMPLE") {
        let sample = format!("# client\n{}\n# mock /metrics\n{}", m.to_prometheus(), text);
        std::fs::write(path, sample).unwrap();
    }
}
