//! Leases that prove liveness: a call renews its lease while it waits,
//! hands out an attempt only with a fresh renewal, and a call whose lease
//! was lost (paused past it while another call took the operation over)
//! never sends again.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use payidem::client::{CallStep, ClientConfig, JournalChoice};
use payidem::journal::{Journal, Lease, MemoryJournal, Opened};
use payidem::operation::{CallTime, OperationState, Reply, Response};
use payidem::{Client, ErrorCode, OperationSpec};

const SECRET: &[u8] = b"0123456789abcdef0123";

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn client(journal: &Arc<MemoryJournal>, ttl: u64, heartbeat_ms: Option<u64>) -> Client {
    let mut config = ClientConfig::new("http://127.0.0.1:9", "key_test_1");
    config.journal = JournalChoice::Custom(journal.clone() as Arc<dyn Journal>);
    config.lease_ttl = Some(Duration::from_secs(ttl));
    config.lease_heartbeat = heartbeat_ms.map(Duration::from_millis);
    config.request_timeout = Duration::from_secs(1);
    // Long backoffs: every wait outlasts the heartbeat.
    config.retry.base = Duration::from_secs(5);
    config.retry.cap = Duration::from_secs(10);
    config.retry.max_attempts = 1_000;
    config.retry.deadline = Duration::from_secs(600);
    Client::new(config, SECRET).unwrap()
}

fn spec(order_id: &'static str) -> OperationSpec<'static> {
    OperationSpec {
        order_id,
        method: "POST",
        path: "/v1/payments",
        body: b"{\"amount\":100}",
        idempotency_key: None,
        status_path: None,
    }
}

fn unavailable() -> Reply {
    Reply::Response(Response {
        status: 503,
        headers: Vec::new(),
        body: b"{\"error\":{\"code\":\"unavailable\"}}".to_vec(),
        replayed: false,
    })
}

fn at(base: u64, elapsed_ms: u64) -> CallTime {
    CallTime {
        unix: base + elapsed_ms / 1000,
        elapsed: Duration::from_millis(elapsed_ms),
    }
}

/// Steps `call` from `t` ms on, 100 ms apart, answering every attempt
/// "unavailable", until it waits: the wait, when it came, and when the last
/// attempt was handed out (`last_send` if none was). The backoff is full
/// jitter, so now and then a retry is due at once instead of a wait.
fn until_wait(
    call: &mut payidem::client::Call,
    base: u64,
    mut t: u64,
    mut last_send: u64,
) -> (Duration, u64, u64) {
    loop {
        match call.step_at(at(base, t)) {
            CallStep::Wait(wait) => return (wait, t, last_send),
            CallStep::Send { .. } => {
                call.report_at(unavailable(), at(base, t));
                last_send = t;
            }
            CallStep::Done(result) => panic!("the call ended: {result:?}"),
        }
        t += 100;
    }
}

fn other(owner: &str, expires_at: u64) -> Lease {
    Lease {
        owner: owner.into(),
        expires_at,
    }
}

#[test]
fn waits_are_cut_to_the_heartbeat_and_renewals_keep_the_lease() {
    let journal = Arc::new(MemoryJournal::new());
    let client = client(&journal, 3, None);
    let base = unix_now();
    let mut call = client.begin(&spec("ord-hb"), None).unwrap();
    assert!(matches!(call.step_at(at(base, 0)), CallStep::Send { .. }));
    call.report_at(unavailable(), at(base, 100));
    // Backoff (up to 5 s) is cut to what is left of the heartbeat (a third
    // of 3 s) since the last attempt's record renewed the lease.
    let (wait, waited_at, last_send) = until_wait(&mut call, base, 200, 0);
    let left = Duration::from_millis(1_000 - (waited_at - last_send));
    assert!(wait <= left, "{wait:?} > {left:?}");
    // Long after the lease taken at the open would have lapsed, the
    // heartbeats renewed it: nobody else can take the operation.
    let mut elapsed = waited_at;
    while elapsed < 50_000 {
        elapsed += 900;
        match call.step_at(at(base, elapsed)) {
            CallStep::Wait(wait) => assert!(wait <= Duration::from_secs(1), "{wait:?}"),
            // Every attempt is answered "unavailable" at once.
            CallStep::Send { .. } => call.report_at(unavailable(), at(base, elapsed)),
            CallStep::Done(result) => panic!("the call ended: {result:?}"),
        }
    }
    let now = base + elapsed / 1000;
    let busy = journal.claim("ord-hb", &other("b", now + 10), now + 2);
    assert_eq!(busy.unwrap_err().code(), ErrorCode::OperationBusy);
    drop(call);
}

#[test]
fn a_call_paused_past_its_lease_never_sends_again() {
    let journal = Arc::new(MemoryJournal::new());
    let client = client(&journal, 2, Some(500));
    let base = unix_now();
    let mut call = client.begin(&spec("ord-paused"), None).unwrap();
    assert!(matches!(call.step_at(at(base, 0)), CallStep::Send { .. }));
    call.report_at(unavailable(), at(base, 100));
    until_wait(&mut call, base, 150, 0);

    // The call is paused for a minute: its lease (2 s + the 1 s request
    // timeout) lapses and another instance takes the operation over.
    let later = base + 60;
    let taken = journal
        .claim("ord-paused", &other("b", later + 30), later)
        .unwrap();
    assert!(matches!(taken, Opened::Resumable(_)));
    let before = journal.get("ord-paused").unwrap().unwrap();

    // Resumed, the call renews first, finds its lease lost and stops
    // without handing out another attempt.
    match call.step_at(at(base, 60_000)) {
        CallStep::Done(Err(e)) => {
            assert_eq!(e.code(), ErrorCode::OperationBusy, "{e}");
            assert_eq!(e.order_id(), Some("ord-paused"));
        }
        other => panic!("a call that lost its lease must stop, got {other:?}"),
    }
    assert!(call.is_done());
    assert!(matches!(
        call.step_at(at(base, 60_100)),
        CallStep::Done(Err(_))
    ));
    // The new holder's operation is untouched and still held by it.
    let after = journal.get("ord-paused").unwrap().unwrap();
    assert_eq!(after, before);
    assert_eq!(after.state, OperationState::InFlight);
    let busy = journal.claim("ord-paused", &other("c", later + 30), later + 1);
    assert_eq!(busy.unwrap_err().code(), ErrorCode::OperationBusy);
}

#[test]
fn a_heartbeat_must_be_shorter_than_the_lease() {
    let journal = Arc::new(MemoryJournal::new());
    let mut config = ClientConfig::new("http://127.0.0.1:9", "key_test_1");
    config.journal = JournalChoice::Custom(journal.clone() as Arc<dyn Journal>);
    config.lease_ttl = Some(Duration::from_secs(3));
    for bad in [3_000, 5_000, 99] {
        config.lease_heartbeat = Some(Duration::from_millis(bad));
        let e = Client::new(config.clone(), SECRET).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        assert_eq!(e.field(), Some("lease_heartbeat"), "{e}");
    }
    config.lease_heartbeat = Some(Duration::from_millis(2_999));
    Client::new(config, SECRET).unwrap();
}

#[test]
fn a_takeover_loop_polls_at_the_lease_heartbeat_however_long_its_idle() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;

    let journal = Arc::new(MemoryJournal::new());
    let mut config = ClientConfig::new("http://127.0.0.1:9", "key_test_1");
    config.journal = JournalChoice::Custom(journal.clone() as Arc<dyn Journal>);
    config.lease_ttl = Some(Duration::from_secs(1));
    config.retry.max_attempts = 1;
    let client = Client::new(config, SECRET).unwrap();
    assert_eq!(client.takeover_poll(), Duration::from_secs(1) / 3);
    let attempted = Arc::new(AtomicBool::new(false));
    let seen = attempted.clone();
    let client = client.with_event_hook(Arc::new(move |_| seen.store(true, Ordering::SeqCst)));
    let started = Instant::now();
    let stop = || attempted.load(Ordering::SeqCst) || started.elapsed() > Duration::from_secs(60);
    std::thread::scope(|s| {
        let looping = s.spawn(|| client.take_over_loop(1, Duration::from_secs(3_600), &stop));
        // Nothing to take at first: the loop goes idle. Then a holder that
        // will never renew takes an operation, and its lease lapses.
        std::thread::sleep(Duration::from_millis(200));
        let operation = client.freeze(&spec("ord-orphan")).unwrap();
        let now = unix_now();
        journal
            .open(&operation, &other("dead", now + 1), now)
            .unwrap();
        assert!(looping.join().unwrap() >= 1);
    });
    // Taken over after the lease lapsed, not after the hour of `idle`.
    assert!(attempted.load(Ordering::SeqCst));
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn renewals_are_counted_in_the_journal_metrics() {
    let journal = Arc::new(MemoryJournal::new());
    let client = client(&journal, 3, None);
    let writes = |write: &str| {
        let m = client.metrics();
        let labels = [("write", write), ("durable", "false")];
        (
            m.sum("payidem_client_journal_write_duration_seconds", &labels),
            m.sum("payidem_client_journal_failures_total", &labels),
        )
    };
    let base = unix_now();
    let mut call = client.begin(&spec("ord-renew"), None).unwrap();
    assert!(matches!(call.step_at(at(base, 0)), CallStep::Send { .. }));
    call.report_at(unavailable(), at(base, 100));
    assert_eq!(
        writes("renew"),
        (0.0, 0.0),
        "no renewal within the heartbeat"
    );
    // Each step comes a heartbeat (a third of 3 s) after the last renewal:
    // the call renews before it waits on or hands out an attempt.
    for k in 1..=4u64 {
        match call.step_at(at(base, 100 + k * 1_100)) {
            CallStep::Wait(_) => {}
            CallStep::Send { .. } => call.report_at(unavailable(), at(base, 100 + k * 1_100)),
            CallStep::Done(result) => panic!("the call ended: {result:?}"),
        }
        assert_eq!(writes("renew"), (k as f64, 0.0));
    }
    // Paused past its lease while another call took the operation over:
    // the renewal is refused, and counted as a failed one.
    let later = base + 60;
    journal
        .claim("ord-renew", &other("b", later + 30), later)
        .unwrap();
    assert!(matches!(
        call.step_at(at(base, 60_000)),
        CallStep::Done(Err(_))
    ));
    assert_eq!(writes("renew"), (5.0, 1.0));
}
