//! Every row of protocol section 4's decision table, happening for real over
//! loopback HTTP against payidem-mock: the client's outcome, its attempt
//! events and the mock's oracle must all agree.

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use payidem::client::{AttemptEvent, RetryBudgetConfig};
use payidem::journal::{Journal, Lease, MemoryJournal};
use payidem::operation::OperationState;
use payidem::operation::{AttemptKind, NextAction};
use payidem::policy::RetryPolicy;
use payidem::protocol::{NonceSource, OsNonceSource, Signer};
use payidem::{CallOptions, ErrorCode, JournalChoice};
use payidem_e2e::*;
use payidem_mock::{
    ClockSetting, FaultKind, FaultSettings, MockServer, DEFAULT_KEY_ID, DEFAULT_SECRET,
};

/// (kind, status, error code, next) of every event, for compact asserts.
type Row = (AttemptKind, Option<u16>, Option<String>, NextAction);

fn rows(events: &[AttemptEvent]) -> Vec<Row> {
    events
        .iter()
        .map(|e| (e.kind, e.status, e.error_code.clone(), e.next))
        .collect()
}

fn row(kind: AttemptKind, status: Option<u16>, code: Option<&str>, next: NextAction) -> Row {
    (kind, status, code.map(str::to_owned), next)
}

const OP: AttemptKind = AttemptKind::Operation;
const QUERY: AttemptKind = AttemptKind::StatusQuery;

fn only(kind: FaultKind) -> FaultSettings {
    FaultSettings::none().with(kind, 1.0).unwrap()
}

/// Waits (10 s at most) until `c`'s journal has `order_id` in flight: its
/// attempt is recorded and about to be sent, or out.
fn wait_in_flight(c: &payidem::Client, order_id: &str) {
    let give_up = std::time::Instant::now() + Duration::from_secs(10);
    while c.status(order_id).unwrap().map(|s| s.state) != Some(OperationState::InFlight) {
        assert!(
            std::time::Instant::now() < give_up,
            "{order_id} never went in flight"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A hook logging into `log` that switches the mock's faults off after `n`
/// events.
fn hook_faults_off(log: &EventLog, mock: &Arc<MockServer>, n: usize) -> payidem::client::EventHook {
    let mock = Arc::clone(mock);
    log.hook_then(move |_, seen| {
        if seen == n {
            mock.set_faults(FaultSettings::none());
        }
    })
}

fn posts(mock: &MockServer, route: &str) -> u64 {
    mock.stats()
        .requests
        .by_route
        .get(route)
        .copied()
        .unwrap_or(0)
}

const CREATE: &str = "POST /v1/payments";
const BY_ORDER: &str = "GET /v1/payments?order_id";

fn assert_one_payment(mock: &MockServer, order_id: &str, key: &str) {
    let stats = mock.stats();
    let order = &stats.orders[order_id];
    assert_eq!(order.payments_created, 1, "{order_id}: {order:?}");
    assert_eq!(order.idempotency_keys, vec![key.to_owned()]);
    assert!(order.duplicate_keys.is_empty(), "{order:?}");
    assert_eq!(stats.duplicate_order, 0);
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn success_then_replay_after_the_journal_is_lost() {
    let mock = start_mock();
    let spec = OwnedSpec::payment("ord-ok-1", 1250, true);
    let log = EventLog::new();
    let first = client(&mock.url(), JournalChoice::Memory).with_event_hook(log.hook());
    let outcome = first.execute(&spec.spec()).unwrap();
    assert_eq!(outcome.response.status, 201);
    assert!(!outcome.response.replayed);
    assert_eq!(outcome.idempotency_key, "create-ord-ok-1");
    assert_eq!(
        rows(&log.events()),
        vec![row(OP, Some(201), None, NextAction::Settle)]
    );

    // A second execute on the same client answers from the journal.
    let before = mock.stats().requests.total;
    assert_eq!(
        first.execute(&spec.spec()).unwrap().response,
        outcome.response
    );
    assert_eq!(mock.stats().requests.total, before);

    // A fresh journal re-sends the same key: the platform replays.
    let log2 = EventLog::new();
    let second = client(&mock.url(), JournalChoice::Memory).with_event_hook(log2.hook());
    let again = second.execute(&spec.spec()).unwrap();
    assert_eq!(again.response.status, 201);
    assert!(again.response.replayed);
    assert_eq!(again.response.body, outcome.response.body);
    assert!(log2.events()[0].replayed);
    assert_one_payment(&mock, "ord-ok-1", "create-ord-ok-1");
    assert_eq!(mock.stats().replays, 1);
}

#[test]
fn idempotency_conflict_from_the_platform_and_from_the_journal() {
    let mock = start_mock();
    let mut spec = OwnedSpec::payment("ord-conf-1", 1000, false);
    spec.idempotency_key = Some("key-conf-1".into());
    let a = client(&mock.url(), JournalChoice::Memory);
    a.execute(&spec.spec()).unwrap();

    // Same key, other body, through a fresh journal: the platform refuses.
    let mut other = spec.clone();
    other.body = payment_body("ord-conf-1", 2000);
    let log = EventLog::new();
    let b = client(&mock.url(), JournalChoice::Memory).with_event_hook(log.hook());
    let e = b.execute(&other.spec()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::IdempotencyConflict);
    assert_eq!(e.http_status(), Some(409));
    assert_eq!(e.idempotency_key(), Some("key-conf-1"));
    assert_eq!(
        rows(&log.events()),
        vec![row(
            OP,
            Some(409),
            Some("idempotency_conflict"),
            NextAction::Settle
        )]
    );
    assert_eq!(
        b.status("ord-conf-1").unwrap().unwrap().state,
        OperationState::Conflict
    );
    // Settled for good: executing it again sends nothing.
    let total = mock.stats().requests.total;
    assert_eq!(
        b.execute(&other.spec()).unwrap_err().code(),
        ErrorCode::IdempotencyConflict
    );
    assert_eq!(mock.stats().requests.total, total);

    // Same order id, other body, same journal: refused locally, nothing sent.
    let e = a.execute(&other.spec()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::IdempotencyConflict);
    assert_eq!(mock.stats().requests.total, total);
    assert_one_payment(&mock, "ord-conf-1", "key-conf-1");
}

/// A loopback proxy that forwards every request to the mock and, for the
/// first `duplicate` requests, forwards it twice (same headers, same nonce)
/// and answers with the second answer: the platform sees a replayed nonce
/// after the first copy already ran.
struct DuplicatingProxy {
    url: String,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl DuplicatingProxy {
    fn start(target: String, duplicate: usize) -> DuplicatingProxy {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let url = format!("http://{}", server.server_addr().to_ip().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(5)))
                .build()
                .into();
            let mut left = duplicate;
            while !flag.load(Ordering::SeqCst) {
                let Ok(Some(mut request)) = server.recv_timeout(Duration::from_millis(50)) else {
                    continue;
                };
                let mut body = Vec::new();
                std::io::Read::read_to_end(request.as_reader(), &mut body).unwrap();
                let headers: Vec<(String, String)> = request
                    .headers()
                    .iter()
                    .filter(|h| {
                        let n = h.field.as_str().as_str().to_ascii_lowercase();
                        n.starts_with("x-") || n == "idempotency-key" || n == "content-type"
                    })
                    .map(|h| (h.field.to_string(), h.value.to_string()))
                    .collect();
                let times = if left > 0 {
                    left -= 1;
                    2
                } else {
                    1
                };
                let uri = format!("{target}{}", request.url());
                let mut answer = None;
                for _ in 0..times {
                    let mut builder = ureq::http::Request::builder()
                        .method(request.method().as_str())
                        .uri(&uri);
                    for (n, v) in &headers {
                        builder = builder.header(n, v);
                    }
                    let sent =
                        ureq::RequestExt::with_agent(builder.body(body.clone()).unwrap(), &agent)
                            .run()
                            .unwrap();
                    answer = Some(sent);
                }
                let mut answer = answer.unwrap();
                let status = answer.status().as_u16();
                let headers: Vec<tiny_http::Header> = answer
                    .headers()
                    .iter()
                    .filter(|(n, _)| {
                        let n = n.as_str();
                        n == "content-type" || n == "idempotent-replayed" || n == "x-server-time"
                    })
                    .map(|(n, v)| {
                        tiny_http::Header::from_bytes(n.as_str().as_bytes(), v.as_bytes()).unwrap()
                    })
                    .collect();
                let bytes = answer.body_mut().read_to_vec().unwrap();
                let mut response = tiny_http::Response::from_data(bytes).with_status_code(status);
                for h in headers {
                    response.add_header(h);
                }
                let _ = request.respond(response);
            }
        });
        DuplicatingProxy {
            url,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for DuplicatingProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_raw_replayed_request_gets_nonce_reused() {
    let mock = start_mock();
    let signer = Signer::new(DEFAULT_KEY_ID, DEFAULT_SECRET.as_bytes()).unwrap();
    let body = payment_body("ord-raw-1", 700);
    let signed = signer
        .sign_attempt(
            "POST",
            "/v1/payments",
            "create-ord-raw-1",
            &body,
            unix_now(),
            OsNonceSource.next_nonce(),
        )
        .unwrap();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let send = || {
        let mut request = agent
            .post(format!("{}/v1/payments", mock.url()))
            .header("Content-Type", "application/json");
        for (n, v) in signed.headers() {
            request = request.header(n, v);
        }
        let mut response = request.send(&body[..]).unwrap();
        let status = response.status().as_u16();
        (status, response.body_mut().read_to_string().unwrap())
    };
    assert_eq!(send().0, 201);
    let (status, text) = send();
    assert_eq!(status, 409);
    assert!(text.contains("nonce_reused"), "{text}");
    assert_eq!(mock.stats().orders["ord-raw-1"].payments_created, 1);
}

#[test]
fn nonce_reused_is_re_signed_and_retried_at_once() {
    let mock = start_mock();
    let proxy = DuplicatingProxy::start(mock.url(), 1);
    let log = EventLog::new();
    let c = client(&proxy.url, JournalChoice::Memory).with_event_hook(log.hook());
    let spec = OwnedSpec::payment("ord-nonce-1", 1100, true);
    let outcome = c.execute(&spec.spec()).unwrap();
    // The first copy created the payment; the duplicate got nonce_reused; the
    // client re-signed and the platform replayed the stored answer.
    assert_eq!(outcome.response.status, 201);
    assert!(outcome.response.replayed);
    let events = log.events();
    assert_eq!(
        rows(&events),
        vec![
            row(OP, Some(409), Some("nonce_reused"), NextAction::RetryNow),
            row(OP, Some(201), None, NextAction::Settle),
        ]
    );
    assert_eq!(events[0].wait, None);
    assert_one_payment(&mock, "ord-nonce-1", "create-ord-nonce-1");
    assert_eq!(mock.stats().requests.by_error_code["nonce_reused"], 1);
    drop(proxy);
}

#[test]
fn in_progress_is_retried_until_the_first_call_finishes() {
    let mock = Arc::new(start_mock());
    mock.set_processing_delay(Duration::from_secs(2));
    let spec = OwnedSpec::payment("ord-busy-key-1", 1300, false);
    let mut patient = fast_config(&mock.url(), JournalChoice::Memory);
    patient.retry = RetryPolicy {
        base: Duration::from_millis(50),
        cap: Duration::from_millis(200),
        max_attempts: 100,
        deadline: Duration::from_secs(20),
    };
    let mut slow = fast_config(&mock.url(), JournalChoice::Memory);
    slow.request_timeout = Duration::from_secs(10);
    let first = client_with(slow);
    let log = EventLog::new();
    let second = client_with(patient).with_event_hook(log.hook());
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| first.execute(&spec.spec()));
        // The first create has claimed its key at the platform: it runs.
        assert!(
            mock.wait_for_stats(Duration::from_secs(10), |s| s.idempotency_keys_stored > 0),
            "the first create never arrived"
        );
        let b = s.spawn(|| second.execute(&spec.spec()));
        (a.join().unwrap().unwrap(), b.join().unwrap().unwrap())
    });
    assert!(!a.response.replayed);
    assert!(b.response.replayed);
    assert_eq!(a.response.body, b.response.body);
    let events = log.events();
    assert!(events.len() >= 2);
    for e in &events[..events.len() - 1] {
        assert_eq!(
            (e.status, e.error_code.as_deref(), e.next),
            (
                Some(409),
                Some("idempotency_in_progress"),
                NextAction::RetryLater
            )
        );
        assert!(e.wait.is_some());
    }
    assert_eq!(events.last().unwrap().next, NextAction::Settle);
    assert_one_payment(&mock, "ord-busy-key-1", "create-ord-busy-key-1");
}

#[test]
fn clock_skew_is_adjusted_once_and_the_offset_is_kept() {
    // 500 s: outside the 300 s window, inside the client's default bound on
    // a learnt offset (600 s; a larger one is refused, see core/tests/transport.rs).
    let mock = start_mock();
    mock.set_clock(ClockSetting::System { skew_seconds: 500 });
    let log = EventLog::new();
    let c = client(&mock.url(), JournalChoice::Memory).with_event_hook(log.hook());
    let outcome = c
        .execute(&OwnedSpec::payment("ord-skew-1", 1400, true).spec())
        .unwrap();
    assert_eq!(outcome.response.status, 201);
    assert_eq!(
        rows(&log.events()),
        vec![
            row(
                OP,
                Some(401),
                Some("timestamp_out_of_window"),
                NextAction::AdjustClock
            ),
            row(OP, Some(201), None, NextAction::Settle),
        ]
    );
    assert!((499..=501).contains(&c.clock_offset().seconds()));
    // The next operation signs with the learnt offset at once.
    c.execute(&OwnedSpec::payment("ord-skew-2", 1400, true).spec())
        .unwrap();
    assert_eq!(log.of("ord-skew-2").len(), 1);
    assert_eq!(
        mock.stats().requests.by_error_code["timestamp_out_of_window"],
        1
    );
}

#[test]
fn a_second_skew_in_one_call_is_refused_and_nothing_happened() {
    let mock = Arc::new(start_mock());
    mock.set_clock(ClockSetting::System { skew_seconds: 500 });
    let log = EventLog::new();
    let m = Arc::clone(&mock);
    let hook = log.hook_then(move |_, n| {
        if n == 1 {
            m.set_clock(ClockSetting::System { skew_seconds: -500 });
        }
    });
    let c = client(&mock.url(), JournalChoice::Memory).with_event_hook(hook);
    let e = c
        .execute(&OwnedSpec::payment("ord-skew-3", 1400, true).spec())
        .unwrap_err();
    assert_eq!((e.code(), e.http_status()), (ErrorCode::Refused, Some(401)));
    assert_eq!(log.events().len(), 2);
    assert_eq!(
        c.status("ord-skew-3").unwrap().unwrap().state,
        OperationState::Pending
    );
    assert_eq!(mock.stats().payments, 0);
}

#[test]
fn the_learnt_clock_offset_survives_concurrent_calls() {
    // Call B is sent before the skew and answered after call A learnt the
    // offset; B must not put the old offset back.
    let mock = start_mock();
    mock.set_processing_delay(Duration::from_millis(600));
    let c = client(&mock.url(), JournalChoice::Memory);
    std::thread::scope(|s| {
        let b = s.spawn(|| c.execute(&OwnedSpec::payment("ord-race-b", 1500, true).spec()));
        std::thread::sleep(Duration::from_millis(150));
        mock.set_processing_delay(Duration::ZERO);
        mock.set_clock(ClockSetting::System { skew_seconds: 500 });
        c.execute(&OwnedSpec::payment("ord-race-a", 1500, true).spec())
            .unwrap();
        assert!((499..=501).contains(&c.clock_offset().seconds()));
        b.join().unwrap().unwrap();
    });
    assert!(
        (499..=501).contains(&c.clock_offset().seconds()),
        "offset reverted to {}",
        c.clock_offset().seconds()
    );
}

#[test]
fn declined_and_invalid_requests_are_rejected_and_kept() {
    let mock = start_mock();
    let log = EventLog::new();
    let c = client(&mock.url(), JournalChoice::Memory).with_event_hook(log.hook());
    let e = c
        .execute(&OwnedSpec::payment("ord-402", 1402, true).spec())
        .unwrap_err();
    assert_eq!(
        (e.code(), e.http_status()),
        (ErrorCode::Rejected, Some(402))
    );
    assert!(String::from_utf8_lossy(e.body().unwrap()).contains("card_declined"));
    assert_eq!(
        rows(&log.events()),
        vec![row(
            OP,
            Some(402),
            Some("card_declined"),
            NextAction::Settle
        )]
    );
    assert_eq!(
        c.status("ord-402").unwrap().unwrap().state,
        OperationState::Rejected
    );

    let mut bad = OwnedSpec::payment("ord-400", 1000, true);
    bad.body = br#"{"order_id":"ord-400","amount":1000,"currency":"eur"}"#.to_vec();
    let e = c.execute(&bad.spec()).unwrap_err();
    assert_eq!(
        (e.code(), e.http_status()),
        (ErrorCode::Rejected, Some(400))
    );
    let body: serde_json::Value = serde_json::from_slice(e.body().unwrap()).unwrap();
    assert_eq!(body["error"]["field"], "currency");
    assert_eq!(
        c.status("ord-400").unwrap().unwrap().state,
        OperationState::Rejected
    );
    let stats = mock.stats();
    assert_eq!(stats.payments, 0);
    assert_eq!(stats.requests.total, 2);

    // The stored decline is replayed to a client that lost its journal.
    let fresh = client(&mock.url(), JournalChoice::Memory);
    let e = fresh
        .execute(&OwnedSpec::payment("ord-402", 1402, true).spec())
        .unwrap_err();
    assert_eq!(e.http_status(), Some(402));
    assert_eq!(mock.stats().replays, 1);
}

#[test]
fn rate_limits_and_unavailability_wait_for_retry_after() {
    for (kind, status, code) in [
        (FaultKind::Error503, 503, "service_unavailable"),
        (FaultKind::Error429, 429, "rate_limited"),
    ] {
        let mock = Arc::new(start_mock());
        mock.set_faults(only(kind));
        let log = EventLog::new();
        let c = client(&mock.url(), JournalChoice::Memory)
            .with_event_hook(hook_faults_off(&log, &mock, 1));
        let order = format!("ord-ra-{status}");
        let outcome = c
            .execute(&OwnedSpec::payment(&order, 1000, true).spec())
            .unwrap();
        assert!(!outcome.response.replayed);
        let events = log.events();
        assert_eq!(
            rows(&events),
            vec![
                row(OP, Some(status), Some(code), NextAction::RetryLater),
                row(OP, Some(201), None, NextAction::Settle),
            ]
        );
        assert_eq!(events[0].wait, Some(Duration::from_secs(1)));
        assert_eq!(mock.stats().faults[kind.name()], 1);
        assert_one_payment(&mock, &order, &format!("create-{order}"));
    }
}

#[test]
fn internal_errors_and_bad_gateways_are_retried_with_the_same_key() {
    for (kind, status, replayed) in [
        (FaultKind::Error500BeforeCommit, 500, false),
        (FaultKind::Error502, 502, false),
        (FaultKind::Error500AfterCommit, 500, true),
    ] {
        let mock = Arc::new(start_mock());
        mock.set_faults(only(kind));
        let log = EventLog::new();
        let c = client(&mock.url(), JournalChoice::Memory)
            .with_event_hook(hook_faults_off(&log, &mock, 1));
        let order = format!("ord-5xx-{}", kind.name().replace('_', "-"));
        let outcome = c
            .execute(&OwnedSpec::payment(&order, 1000, true).spec())
            .unwrap();
        assert_eq!(outcome.response.status, 201);
        assert_eq!(outcome.response.replayed, replayed, "{kind}");
        let events = log.events();
        assert_eq!(events.len(), 2, "{kind}: {events:?}");
        assert_eq!(
            (events[0].status, events[0].next),
            (Some(status), NextAction::RetryLater)
        );
        assert!(events[0].wait.unwrap() <= Duration::from_millis(5));
        assert_one_payment(&mock, &order, &format!("create-{order}"));
    }
}

#[test]
fn gateway_timeouts_query_the_status_then_settle_with_one_payment() {
    // Before commit: the status query finds nothing, the POST is resent with
    // the same key and runs for real.
    let mock = Arc::new(start_mock());
    mock.set_faults(only(FaultKind::Timeout504BeforeCommit));
    let log = EventLog::new();
    let c =
        client(&mock.url(), JournalChoice::Memory).with_event_hook(hook_faults_off(&log, &mock, 1));
    let outcome = c
        .execute(&OwnedSpec::payment("ord-504-b", 1000, true).spec())
        .unwrap();
    assert_eq!(
        (outcome.response.status, outcome.response.replayed),
        (201, false)
    );
    assert_eq!(
        rows(&log.events()),
        vec![
            row(
                OP,
                Some(504),
                Some("gateway_timeout"),
                NextAction::QueryStatus
            ),
            row(QUERY, Some(404), Some("not_found"), NextAction::RetryNow),
            row(OP, Some(201), None, NextAction::Settle),
        ]
    );
    assert_one_payment(&mock, "ord-504-b", "create-ord-504-b");

    // After commit: the status query finds the payment and settles.
    let mock = Arc::new(start_mock());
    mock.set_faults(only(FaultKind::Timeout504AfterCommit));
    let log = EventLog::new();
    let c =
        client(&mock.url(), JournalChoice::Memory).with_event_hook(hook_faults_off(&log, &mock, 1));
    let outcome = c
        .execute(&OwnedSpec::payment("ord-504-a", 1000, true).spec())
        .unwrap();
    assert_eq!(outcome.response.status, 200);
    assert_eq!(
        payment_id_of(&outcome.response.body),
        payment_id_of(&mock_payment(&mock, "ord-504-a"))
    );
    assert_eq!(
        rows(&log.events()),
        vec![
            row(
                OP,
                Some(504),
                Some("gateway_timeout"),
                NextAction::QueryStatus
            ),
            row(QUERY, Some(200), None, NextAction::Settle),
        ]
    );
    assert_eq!(posts(&mock, CREATE), 1);
    assert_one_payment(&mock, "ord-504-a", "create-ord-504-a");

    // After commit, no status path: retried with the same key, replayed.
    let mock = Arc::new(start_mock());
    mock.set_faults(only(FaultKind::Timeout504AfterCommit));
    let log = EventLog::new();
    let c =
        client(&mock.url(), JournalChoice::Memory).with_event_hook(hook_faults_off(&log, &mock, 1));
    let outcome = c
        .execute(&OwnedSpec::payment("ord-504-n", 1000, false).spec())
        .unwrap();
    assert_eq!(
        (outcome.response.status, outcome.response.replayed),
        (201, true)
    );
    assert_eq!(log.events()[0].next, NextAction::RetryLater);
    assert_one_payment(&mock, "ord-504-n", "create-ord-504-n");
}

/// The mock's own answer for the payment of `order_id`, read with a signed GET.
fn mock_payment(mock: &MockServer, order_id: &str) -> Vec<u8> {
    let c = client(&mock.url(), JournalChoice::Memory);
    let r = c.get(&payment_status_path(order_id)).unwrap();
    assert_eq!(r.status, 200);
    r.body
}

#[test]
fn connection_refused_is_not_sent_stays_pending_and_keeps_its_key() {
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let journal = Arc::new(MemoryJournal::new());
    let log = EventLog::new();
    let c = client(
        &format!("http://{closed}"),
        JournalChoice::Custom(journal.clone()),
    )
    .with_event_hook(log.hook());
    let spec = OwnedSpec::payment("ord-refused-1", 1000, true);
    let e = c.execute(&spec.spec()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Transport);
    assert_eq!(e.idempotency_key(), Some("create-ord-refused-1"));
    let events = log.events();
    assert_eq!(events.len(), 8);
    for e in &events {
        assert!(e.transport_error.is_some() && e.status.is_none(), "{e:?}");
        assert_eq!(e.kind, OP);
    }
    assert_eq!(events.last().unwrap().next, NextAction::GiveUp);
    let record = c.status("ord-refused-1").unwrap().unwrap();
    assert_eq!(record.state, OperationState::Pending);
    assert!(c.list_unknown().unwrap().is_empty());

    // The same journal against the live platform: the same key, one payment.
    let mock = start_mock();
    let live = client(&mock.url(), JournalChoice::Custom(journal));
    let outcome = live.execute(&spec.spec()).unwrap();
    assert_eq!(
        (outcome.response.status, outcome.response.replayed),
        (201, false)
    );
    assert_one_payment(&mock, "ord-refused-1", "create-ord-refused-1");
}

#[test]
fn a_timeout_after_sending_queries_the_status() {
    // The answer comes 8 s late; the request timeout of 1 s leaves the
    // status query that follows a whole second, however loaded the host.
    let mut faults = only(FaultKind::DelayAfterCommit);
    faults.delay_ms = 8000;
    let mock = Arc::new(start_mock());
    mock.set_faults(faults);
    let mut config = fast_config(&mock.url(), JournalChoice::Memory);
    config.request_timeout = Duration::from_secs(1);
    let log = EventLog::new();
    let c = client_with(config).with_event_hook(hook_faults_off(&log, &mock, 1));
    let outcome = c
        .execute(&OwnedSpec::payment("ord-slow-1", 1000, true).spec())
        .unwrap();
    assert_eq!(outcome.response.status, 200);
    let events = log.events();
    assert_eq!(
        rows(&events),
        vec![
            row(OP, None, None, NextAction::QueryStatus),
            row(QUERY, Some(200), None, NextAction::Settle),
        ]
    );
    assert!(events[0].transport_error.is_some());
    assert_one_payment(&mock, "ord-slow-1", "create-ord-slow-1");
}

#[test]
fn a_dropped_answer_is_settled_with_one_payment() {
    for with_status in [true, false] {
        let mock = Arc::new(start_mock());
        mock.set_faults(only(FaultKind::DropAfterCommit));
        let log = EventLog::new();
        let c = client(&mock.url(), JournalChoice::Memory)
            .with_event_hook(hook_faults_off(&log, &mock, 1));
        let outcome = c
            .execute(&OwnedSpec::payment("ord-drop-1", 1000, with_status).spec())
            .unwrap();
        let events = log.events();
        assert_eq!(events.len(), 2);
        assert!(events[0].transport_error.is_some());
        if with_status {
            assert_eq!(events[0].next, NextAction::QueryStatus);
            assert_eq!((events[1].kind, outcome.response.status), (QUERY, 200));
        } else {
            assert_eq!(events[0].next, NextAction::RetryLater);
            assert_eq!(events[1].kind, OP);
            assert_eq!(
                (outcome.response.status, outcome.response.replayed),
                (201, true)
            );
        }
        assert_eq!(mock.stats().faults["drop_after_commit"], 1);
        assert_one_payment(&mock, "ord-drop-1", "create-ord-drop-1");
        // One count: the journal says what the call said, status query included.
        let record = c.status("ord-drop-1").unwrap().unwrap();
        assert_eq!((outcome.attempts, record.attempts), (2, 2));
        let again = c
            .execute(&OwnedSpec::payment("ord-drop-1", 1000, with_status).spec())
            .unwrap();
        assert_eq!(
            again.attempts, 2,
            "a settled operation answers the stored count"
        );
    }
}

#[test]
fn exhausted_attempts_end_unknown_and_resume_settles_with_the_same_key() {
    let mock = Arc::new(start_mock());
    mock.set_faults(only(FaultKind::DropAfterCommit));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let log = EventLog::new();
    let c = client_on_disk(&mock.url(), &path).with_event_hook(log.hook());
    let spec = OwnedSpec::payment("ord-unknown-1", 1000, false);
    let e = c.execute(&spec.spec()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::OutcomeUnknown);
    assert_eq!(e.order_id(), Some("ord-unknown-1"));
    assert_eq!(e.idempotency_key(), Some("create-ord-unknown-1"));
    assert_eq!(log.events().len(), 8);
    assert_eq!(log.events().last().unwrap().next, NextAction::GiveUp);
    let unknown = c.list_unknown().unwrap();
    assert_eq!(unknown.len(), 1);
    assert_eq!(unknown[0].state, OperationState::Unknown);
    assert_eq!(unknown[0].operation.idempotency_key, "create-ord-unknown-1");
    drop(c);

    // A new process (a new client on the same file) resumes after the outage.
    mock.set_faults(FaultSettings::none());
    let log = EventLog::new();
    let c = client_on_disk(&mock.url(), &path).with_event_hook(log.hook());
    let resumed = c.resume_unknown().unwrap();
    assert_eq!(resumed.len(), 1);
    let outcome = resumed[0].1.as_ref().unwrap();
    assert_eq!(outcome.idempotency_key, "create-ord-unknown-1");
    assert!(outcome.response.replayed);
    assert_eq!(outcome.attempts, 9);
    assert_eq!(
        c.status("ord-unknown-1").unwrap().unwrap().state,
        OperationState::Succeeded
    );
    assert_one_payment(&mock, "ord-unknown-1", "create-ord-unknown-1");
}

#[test]
fn a_deadline_reached_while_unknown_ends_unknown() {
    let mock = Arc::new(start_mock());
    // A deadline long enough for the first attempt on a loaded host, and a
    // Retry-After well past it.
    let mut faults = only(FaultKind::Error503);
    faults.retry_after_seconds = 30;
    mock.set_faults(faults);
    let c = client(&mock.url(), JournalChoice::Memory);
    let spec = OwnedSpec::payment("ord-deadline-1", 1000, true);
    let e = c
        .execute_with(
            &spec.spec(),
            CallOptions {
                deadline: Some(Duration::from_secs(3)),
                ..CallOptions::default()
            },
        )
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::OutcomeUnknown);
    assert_eq!(
        posts(&mock, CREATE),
        1,
        "a Retry-After past the deadline is not slept"
    );
    mock.set_faults(FaultSettings::none());
    let outcome = c.resume("ord-deadline-1").unwrap();
    // Resuming a possibly-landed operation asks its status first.
    assert_eq!(posts(&mock, BY_ORDER), 1);
    assert_eq!(outcome.response.status, 201);
    assert_one_payment(&mock, "ord-deadline-1", "create-ord-deadline-1");
}

#[test]
fn an_expired_key_is_never_posted_again() {
    let mock = start_mock();
    let journal = Arc::new(MemoryJournal::new());
    let old = unix_now() - 49 * 3600;
    let lease = Lease {
        owner: "crashed-process".into(),
        expires_at: old + 60,
    };
    for (order, with_status) in [("ord-old-1", false), ("ord-old-2", true)] {
        let op = OwnedSpec::payment(order, 1000, with_status)
            .spec()
            .freeze()
            .unwrap();
        journal.open(&op, &lease, old).unwrap();
        journal.record_attempt(order, &lease, 1, old).unwrap();
        journal
            .finish(order, &lease, OperationState::Unknown, None, 0, old)
            .unwrap();
    }
    let log = EventLog::new();
    let c = client(&mock.url(), JournalChoice::Custom(journal)).with_event_hook(log.hook());
    let e = c.resume("ord-old-1").unwrap_err();
    assert_eq!(e.code(), ErrorCode::KeyExpired);
    assert_eq!(e.idempotency_key(), Some("create-ord-old-1"));
    assert_eq!(mock.stats().requests.total, 0, "nothing sent at all");

    // With a status path only the status is asked; the payment is not there.
    let e = c.resume("ord-old-2").unwrap_err();
    assert_eq!(e.code(), ErrorCode::KeyExpired);
    let stats = mock.stats();
    assert_eq!(posts(&mock, CREATE), 0);
    assert_eq!(stats.requests.by_route[BY_ORDER], 1);
    assert_eq!(
        rows(&log.events()),
        vec![row(QUERY, Some(404), Some("not_found"), NextAction::Settle)]
    );
    assert_eq!(
        c.status("ord-old-2").unwrap().unwrap().state,
        OperationState::Unknown
    );
}

#[test]
fn a_second_call_on_the_same_order_is_busy() {
    let mock = start_mock();
    mock.set_processing_delay(Duration::from_secs(2));
    let mut config = fast_config(&mock.url(), JournalChoice::Memory);
    config.request_timeout = Duration::from_secs(10);
    let c = client_with(config);
    let spec = OwnedSpec::payment("ord-busy-1", 1000, true);
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| c.execute(&spec.spec()));
        wait_in_flight(&c, "ord-busy-1");
        let b = c.execute(&spec.spec());
        (a.join().unwrap(), b)
    });
    assert_eq!(a.unwrap().response.status, 201);
    let e = b.unwrap_err();
    assert_eq!(e.code(), ErrorCode::OperationBusy);
    assert_eq!(e.idempotency_key(), Some("create-ord-busy-1"));
    assert_eq!(posts(&mock, CREATE), 1);
    assert_one_payment(&mock, "ord-busy-1", "create-ord-busy-1");
}

#[test]
fn an_empty_retry_budget_ends_unknown_and_never_re_keys() {
    let mock = Arc::new(start_mock());
    mock.set_faults(only(FaultKind::DropAfterCommit));
    let mut config = fast_config(&mock.url(), JournalChoice::Memory);
    config.retry_budget = RetryBudgetConfig {
        capacity: 5,
        retry_cost: 5,
        timeout_cost: 10,
        success_refund: 1,
    };
    let log = EventLog::new();
    let c = client_with(config).with_event_hook(log.hook());
    let e = c
        .execute(&OwnedSpec::payment("ord-budget-1", 1000, false).spec())
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::OutcomeUnknown);
    assert_eq!(e.idempotency_key(), Some("create-ord-budget-1"));
    assert_eq!(
        rows(&log.events()),
        vec![row(OP, None, None, NextAction::GiveUp)]
    );
    assert_eq!(c.retry_budget().available(), 5);
    mock.set_faults(FaultSettings::none());
    let outcome = c.resume("ord-budget-1").unwrap();
    assert_eq!(outcome.idempotency_key, "create-ord-budget-1");
    assert!(outcome.response.replayed);
    assert_one_payment(&mock, "ord-budget-1", "create-ord-budget-1");
}

#[test]
fn cancellation_keeps_the_key_and_the_operation_resumes() {
    let mock = Arc::new(start_mock());
    // An 8 s Retry-After: a wait not cut short stands out by seconds.
    let mut faults = only(FaultKind::Error503);
    faults.retry_after_seconds = 8;
    mock.set_faults(faults);
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let log = EventLog::new();
    let mut config = fast_config(&mock.url(), JournalChoice::Memory);
    config.retry.cap = Duration::from_secs(10);
    let c = client_with(config)
        .with_event_hook(log.hook_then(move |_, _| flag.store(true, Ordering::SeqCst)));
    let is_cancelled = || cancel.load(Ordering::SeqCst);
    let options = CallOptions {
        cancel: Some(&is_cancelled),
        deadline: None,
    };
    let spec = OwnedSpec::payment("ord-cancel-1", 1000, true);
    let started = std::time::Instant::now();
    let e = c.execute_with(&spec.spec(), options).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Cancelled);
    assert_eq!(e.idempotency_key(), Some("create-ord-cancel-1"));
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the 8 s Retry-After wait was cut short"
    );
    assert_eq!(
        c.status("ord-cancel-1").unwrap().unwrap().state,
        OperationState::Unknown
    );

    // Cancelled before anything was sent: pending, nothing on the platform.
    let other = OwnedSpec::payment("ord-cancel-2", 1000, true);
    let e = c.execute_with(&other.spec(), options).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Cancelled);
    assert_eq!(
        c.status("ord-cancel-2").unwrap().unwrap().state,
        OperationState::Pending
    );
    assert_eq!(posts(&mock, CREATE), 1);

    mock.set_faults(FaultSettings::none());
    let outcome = c.resume("ord-cancel-1").unwrap();
    assert_eq!(outcome.idempotency_key, "create-ord-cancel-1");
    assert_one_payment(&mock, "ord-cancel-1", "create-ord-cancel-1");
    c.execute(&other.spec()).unwrap();
    assert_one_payment(&mock, "ord-cancel-2", "create-ord-cancel-2");
}

#[test]
fn a_cancel_that_comes_after_the_answer_reports_the_answer() {
    // The caller cancels while the first attempt is in flight; the platform
    // has already charged the card, so the call must report the payment,
    // never "cancelled, nothing was sent".
    let mock = start_mock();
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let log = EventLog::new();
    let c = client(&mock.url(), JournalChoice::Memory)
        .with_event_hook(log.hook_then(move |_, _| flag.store(true, Ordering::SeqCst)));
    let is_cancelled = || cancel.load(Ordering::SeqCst);
    let options = CallOptions {
        cancel: Some(&is_cancelled),
        deadline: None,
    };
    let spec = OwnedSpec::payment("ord-cancel-late-1", 1000, true);
    let outcome = c.execute_with(&spec.spec(), options).unwrap();
    assert_eq!(outcome.response.status, 201);
    assert_eq!(log.events().len(), 1);
    assert_eq!(
        c.status("ord-cancel-late-1").unwrap().unwrap().state,
        OperationState::Succeeded
    );
    assert_one_payment(&mock, "ord-cancel-late-1", "create-ord-cancel-late-1");
}

#[test]
fn an_unexplained_409_is_retried_and_ends_unknown_never_rejected() {
    // The order already has a payment under another key: the platform answers
    // 409 duplicate_order, which says nothing about this key's operation.
    let mock = start_mock();
    let mut first = OwnedSpec::payment("ord-dup-1", 1000, false);
    first.idempotency_key = Some("key-dup-a".into());
    client(&mock.url(), JournalChoice::Memory)
        .execute(&first.spec())
        .unwrap();
    let mut second = first.clone();
    second.idempotency_key = Some("key-dup-b".into());
    let log = EventLog::new();
    let c = client(&mock.url(), JournalChoice::Memory).with_event_hook(log.hook());
    let e = c.execute(&second.spec()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::OutcomeUnknown);
    let events = log.events();
    assert_eq!(events.len(), 8);
    assert!(events
        .iter()
        .all(|e| e.status == Some(409) && e.error_code.as_deref() == Some("duplicate_order")));
    let stats = mock.stats();
    assert_eq!(stats.orders["ord-dup-1"].payments_created, 1);
    // The mock stores duplicate_order under key-dup-b and replays it.
    assert_eq!(stats.duplicate_order, 1);
}
