//! The operation vectors (core/tests/vectors/operation-v1.json) against the
//! operation state machine. C, Go and Python run the same file with the same
//! runner rules (see the file's `about`).

use std::sync::Arc;
use std::time::Duration;

use payidem::client::{AttemptEvent, Call, CallStep, Client, ClientConfig, JournalChoice};
use payidem::journal::{
    Journal, Lease, MemoryJournal, Opened, OperationRecord, SqliteJournal, SqliteJournalOptions,
    StoredClockOffset,
};
use payidem::operation::Outcome;
use payidem::operation::{
    Attempt, AttemptKind, CallLimits, CallSetup, CallTime, End, FrozenOperation, Operation,
    OperationSpec, OperationState, OsEntropy, Progress, Reply, Response, Step,
};
use payidem::policy::{ClockOffset, Landed, RetryBudget, RetryBudgetConfig, RetryPolicy};
use payidem::protocol::Signer;
use serde_json::Value;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

fn vectors() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/operation-v1.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("{key} in {v}"))
}

fn num(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"))
}

fn frozen(v: &Value) -> FrozenOperation {
    OperationSpec {
        order_id: text(v, "order_id"),
        method: text(v, "method"),
        path: text(v, "path"),
        body: text(v, "body").as_bytes(),
        idempotency_key: v["idempotency_key"].as_str(),
        status_path: v["status_path"].as_str(),
    }
    .freeze()
    .unwrap()
}

fn setup(v: &Value) -> CallSetup {
    let ms = |k| Duration::from_millis(num(v, k));
    let budget = match &v["retry_budget"] {
        Value::Null => None,
        b => Some(Arc::new(RetryBudget::new(RetryBudgetConfig {
            capacity: num(b, "capacity") as u32,
            retry_cost: num(b, "retry_cost") as u32,
            timeout_cost: num(b, "timeout_cost") as u32,
            success_refund: num(b, "success_refund") as u32,
        }))),
    };
    CallSetup {
        limits: CallLimits {
            policy: RetryPolicy {
                base: ms("backoff_base_ms"),
                cap: ms("backoff_cap_ms"),
                max_attempts: num(v, "max_attempts") as u32,
                deadline: ms("deadline_ms"),
            },
            key_retention_secs: num(v, "key_retention_secs"),
            max_clock_offset: Duration::from_secs(num(v, "max_clock_offset_secs")),
        },
        clock: ClockOffset::from_seconds(v["clock_offset"].as_i64().unwrap()),
        clock_trusted: v["clock_trusted"].as_bool().unwrap(),
        budget,
    }
}

fn reply(v: &Value) -> Reply {
    if let Some(why) = v["not_sent"].as_str() {
        return Reply::NotSent(why.into());
    }
    if let Some(why) = v["no_response"].as_str() {
        return Reply::SentNoResponse(why.into());
    }
    let headers: Vec<(String, String)> = v["headers"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect();
    let replayed = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("idempotent-replayed") && v == "true");
    Reply::Response(Response {
        status: num(v, "status") as u16,
        headers,
        body: text(v, "body").as_bytes().to_vec(),
        replayed,
    })
}

struct Runner {
    name: String,
    operation: FrozenOperation,
    setup: Value,
    created_at: u64,
    start: u64,
    elapsed_ms: u64,
    machine: Operation,
    last: Option<End>,
}

impl Runner {
    fn now(&self) -> CallTime {
        CallTime {
            unix: self.start + self.elapsed_ms / 1000,
            elapsed: Duration::from_millis(self.elapsed_ms),
        }
    }

    fn begin(&self, state: OperationState, attempts: u32) -> Operation {
        let progress = Progress {
            state,
            attempts,
            created_at: self.created_at,
            first_recorded: false,
        };
        Operation::start(
            &self.operation,
            progress,
            setup(&self.setup),
            self.now().unix,
        )
        .unwrap()
    }
}

fn landed(l: Landed) -> &'static str {
    l.as_str()
}

#[test]
fn operation_vectors() {
    let v = vectors();
    let signer = Signer::new("key_test_1", b"0123456789abcdef0123").unwrap();
    let cases = v["vectors"].as_array().unwrap();
    assert!(cases.len() >= 30);
    for case in cases {
        let name = text(case, "name").to_owned();
        let now = num(case, "now");
        let progress = &case["progress"];
        let operation = frozen(&case["operation"]);
        let created_at = now - num(progress, "age_secs");
        let mut r = Runner {
            name: name.clone(),
            operation,
            setup: case["setup"].clone(),
            created_at,
            start: now,
            elapsed_ms: 0,
            machine: Operation::start(
                &frozen(&case["operation"]),
                Progress {
                    state: OperationState::from_name(text(progress, "state")).unwrap(),
                    attempts: num(progress, "attempts") as u32,
                    created_at,
                    first_recorded: progress["first_recorded"].as_bool().unwrap_or(false),
                },
                setup(&case["setup"]),
                now,
            )
            .unwrap(),
            last: None,
        };
        for (i, step) in case["script"].as_array().unwrap().iter().enumerate() {
            let at = format!("{name} step {i}");
            run_step(&mut r, &signer, step, &at);
        }
        assert!(
            r.last.is_some(),
            "{}: the script never checked the end",
            r.name
        );
    }
}

fn run_step(r: &mut Runner, signer: &Signer, step: &Value, at: &str) {
    if let Some(restart) = step.get("restart") {
        // Wall time goes on; the new call's elapsed clock starts at 0.
        r.start += r.elapsed_ms / 1000;
        r.elapsed_ms = 0;
        let state = OperationState::from_name(text(restart, "state")).unwrap();
        r.machine = r.begin(state, num(restart, "attempts") as u32);
        return;
    }
    if let Some(reason) = step.get("abandon") {
        r.last = Some(r.machine.abandon(reason.as_str().unwrap()));
        return;
    }
    if let Some(reply_v) = step.get("reply") {
        let reaction = r.machine.handle(reply(reply_v), r.now(), &OsEntropy);
        assert_eq!(reaction.next.as_str(), text(step, "next"), "{at}");
        assert_eq!(landed(reaction.landed), text(step, "landed"), "{at}");
        return;
    }
    let expect = text(step, "expect");
    let got = r.machine.poll(signer, r.now(), &OsEntropy);
    match (expect, got) {
        ("persist", Step::Persist(p)) => {
            assert_eq!(u64::from(p.attempt), num(step, "attempt"), "{at}");
            assert_eq!(p.first, step["first"].as_bool().unwrap(), "{at}");
            r.machine.persisted();
        }
        ("send", Step::Send(a)) => check_attempt(&a, &r.operation, step, at),
        ("wait", Step::Wait(d)) => r.elapsed_ms += waited(d, step, at),
        ("end", Step::End(end)) => {
            check_end(&end, step, at);
            r.last = Some(end);
        }
        ("end", _) if r.last.is_some() => {
            let end = r.last.clone().unwrap();
            check_end(&end, step, at);
        }
        (want, got) => panic!("{at}: expected {want}, got {got:?}"),
    }
}

/// Checks a sent attempt against a `send` step: kind, number, the
/// operation's own method, path, body and key (or the status query's), and
/// the signed timestamp when the step gives one.
fn check_attempt(a: &Attempt, operation: &FrozenOperation, step: &Value, at: &str) {
    assert_eq!(a.kind.as_str(), text(step, "kind"), "{at}");
    assert_eq!(u64::from(a.number), num(step, "number"), "{at}");
    let header = |n: &str| {
        a.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(n))
            .map(|(_, v)| v.as_str())
    };
    if a.kind == AttemptKind::Operation {
        assert_eq!(a.method, operation.method, "{at}");
        assert_eq!(a.path, operation.path, "{at}");
        assert_eq!(&*a.body, &operation.body[..], "{at}");
        assert_eq!(
            header("Idempotency-Key"),
            Some(operation.idempotency_key.as_str()),
            "{at}"
        );
    } else {
        assert_eq!(a.method, "GET", "{at}");
        assert_eq!(
            Some(a.path.as_str()),
            operation.status_path.as_deref(),
            "{at}"
        );
        assert!(a.body.is_empty(), "{at}");
    }
    if let Some(ts) = step["timestamp"].as_u64() {
        assert_eq!(header("X-Timestamp"), Some(ts.to_string().as_str()), "{at}");
    }
}

/// Checks a wait against a `wait` step; returns the milliseconds waited.
fn waited(d: Duration, step: &Value, at: &str) -> u64 {
    let ms = d.as_nanos().div_ceil(1_000_000) as u64;
    if let Some(exact) = step["ms"].as_u64() {
        assert_eq!(ms, exact, "{at}");
    } else {
        let max = num(step, "max_ms");
        assert!(ms > 0 && ms <= max, "{at}: waited {ms} ms, max {max}");
    }
    ms
}

fn check_end(end: &End, step: &Value, at: &str) {
    assert_eq!(end.as_str(), text(step, "end"), "{at}");
    assert_eq!(end.is_final(), step["final"].as_bool().unwrap(), "{at}");
    assert_eq!(landed(end.landed()), text(step, "landed"), "{at}");
    assert_eq!(end.state().as_str(), text(step, "state"), "{at}");
    let status = match end {
        End::Succeeded(r) | End::Rejected(r) | End::Conflict(r) => Some(r.status),
        End::Refused { response, .. } => Some(response.status),
        _ => None,
    };
    assert_eq!(status.map(u64::from), step["status"].as_u64(), "{at}");
    if let Some(replayed) = step["replayed"].as_bool() {
        assert!(
            matches!(end, End::Succeeded(r) if r.replayed == replayed),
            "{at}"
        );
    }
    let result = end.clone().into_result("ord-1", "create-ord-1", 1);
    match (result, step["error"].as_str()) {
        (Ok(_), None) => {}
        (Err(e), Some(code)) => {
            assert_eq!(e.code().as_str(), code, "{at}");
            assert_eq!(e.code().is_final(), end.is_final(), "{at}");
        }
        (got, want) => panic!("{at}: result {got:?}, expected error {want:?}"),
    }
}

/// A vector driving the journal-bound [`Call`] of a client over `journal`:
/// the steps the call hands out, the reactions it reports, its end and
/// result, and what the journal holds at each record and after the end.
struct CallRunner {
    client: Client,
    journal: Arc<dyn Journal>,
    operation: FrozenOperation,
    start: u64,
    elapsed_ms: u64,
    call: Option<Call>,
    events: Arc<Mutex<Vec<AttemptEvent>>>,
    /// The attempts a `persist` step says the journal holds by the next step.
    recorded: Option<u64>,
    /// The caller's result of an `abandon` (a cancel).
    cancelled: Option<Result<Outcome, payidem::Error>>,
}

/// The client a vector's `setup` describes, over `journal`: its limits and
/// retry budget (a vector without one gets the default budget, never
/// exhausted by a vector), a base URL whose clock answers are trusted or
/// not, and the clock offset learnt so far stored in the journal as a
/// previous process would have left it.
fn client_for(v: &Value, journal: &Arc<dyn Journal>) -> Client {
    let s = setup(v);
    let trusted = v["clock_trusted"].as_bool().unwrap();
    let base = if trusted {
        "https://pay.example"
    } else {
        "http://pay.example"
    };
    let mut config = ClientConfig::new(base, "key_test_1");
    config.allow_insecure_http = !trusted;
    config.journal = JournalChoice::Custom(Arc::clone(journal));
    config.retry = s.limits.policy;
    config.key_retention = Duration::from_secs(s.limits.key_retention_secs);
    config.max_clock_offset = s.limits.max_clock_offset;
    if let Some(budget) = &s.budget {
        config.retry_budget = budget.config();
    }
    if s.clock.seconds() != 0 {
        let offset = StoredClockOffset {
            platform: payidem::journal::platform_origin(base),
            offset_secs: s.clock.seconds(),
            measured_at: wall_clock(),
        };
        journal.save_clock_offset(&offset).unwrap();
    }
    Client::new(config, b"0123456789abcdef0123").unwrap()
}

fn wall_clock() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

impl CallRunner {
    fn now(&self) -> CallTime {
        CallTime {
            unix: self.start + self.elapsed_ms / 1000,
            elapsed: Duration::from_millis(self.elapsed_ms),
        }
    }

    /// The journal's record of the vector's operation.
    fn record(&self) -> OperationRecord {
        self.journal
            .get(&self.operation.order_id)
            .unwrap()
            .expect("the journal holds the operation")
    }

    /// Checks that the record a `persist` step asked for is in the journal.
    fn check_recorded(&mut self, at: &str) {
        if let Some(attempts) = self.recorded.take() {
            assert_eq!(
                u64::from(self.record().attempts),
                attempts,
                "{at}: recorded"
            );
        }
    }

    fn call(&mut self) -> &mut Call {
        self.call.as_mut().expect("a call runs")
    }

    fn run_step(&mut self, step: &Value, at: &str) {
        if let Some(restart) = step.get("restart") {
            // A crash: the call goes without ending (nothing of it runs
            // again), the journal keeps what it holds, and a new call
            // resumes the operation from there.
            std::mem::forget(self.call.take());
            self.check_recorded(at);
            let record = self.record();
            assert_eq!(record.state.as_str(), text(restart, "state"), "{at}");
            assert_eq!(u64::from(record.attempts), num(restart, "attempts"), "{at}");
            // Its lease runs out: taken and let go after it expired.
            let after = Lease {
                owner: "after-the-crash".into(),
                expires_at: u64::MAX / 2,
            };
            let long_after = wall_clock() + 1_000_000;
            let order_id = &self.operation.order_id;
            assert!(matches!(
                self.journal.claim(order_id, &after, long_after).unwrap(),
                Opened::Resumable(_)
            ));
            self.journal.release(order_id, &after).unwrap();
            self.start += self.elapsed_ms / 1000;
            self.elapsed_ms = 0;
            let resumed = self.client.begin_resume(&self.operation.order_id, None);
            self.call = Some(resumed.unwrap());
            return;
        }
        if step.get("abandon").is_some() {
            let result = self.call().cancel();
            self.cancelled = Some(result);
            return;
        }
        if let Some(reply_v) = step.get("reply") {
            let now = self.now();
            self.call().report_at(reply(reply_v), now);
            let event = self.events.lock().unwrap().pop().expect("an attempt event");
            assert_eq!(event.next.as_str(), text(step, "next"), "{at}");
            return;
        }
        let expect = text(step, "expect");
        if expect == "persist" {
            // The call makes the record itself, before its next step.
            self.recorded = Some(num(step, "attempt"));
            return;
        }
        let got = match &self.cancelled {
            Some(result) => CallStep::Done(result.clone()),
            None => {
                let now = self.now();
                self.call().step_at(now)
            }
        };
        self.check_recorded(at);
        match (expect, got) {
            ("send", CallStep::Send { attempt, .. }) => {
                if attempt.kind == AttemptKind::Operation {
                    // Never sent before its record.
                    let record = self.record();
                    assert_eq!(record.state, OperationState::InFlight, "{at}");
                    assert!(record.attempts >= attempt.number, "{at}: {record:?}");
                }
                check_attempt(&attempt, &self.operation, step, at);
            }
            ("wait", CallStep::Wait(d)) => self.elapsed_ms += waited(d, step, at),
            ("end", CallStep::Done(result)) => {
                let end = self.call().end().expect("the machine's end").clone();
                check_end(&end, step, at);
                let code = result.as_ref().err().map(|e| e.code().as_str());
                let want = match self.cancelled {
                    Some(_) => Some("cancelled"),
                    None => step["error"].as_str(),
                };
                assert_eq!(code, want, "{at}: the call's result {result:?}");
                let record = self.record();
                assert_eq!(record.state.as_str(), text(step, "state"), "{at}: journal");
                assert_eq!(
                    u64::from(record.attempts),
                    num(step, "journal_attempts"),
                    "{at}: journal"
                );
            }
            (want, got) => panic!("{at}: expected {want}, got {got:?}"),
        }
    }
}

/// Writes a vector's `progress` into `journal` as an earlier call (or
/// process) would have left it, with its lease long expired.
fn seed(journal: &dyn Journal, operation: &FrozenOperation, progress: &Value, created_at: u64) {
    let lease = Lease {
        owner: "an-earlier-process".into(),
        expires_at: created_at + 1,
    };
    let order_id = &operation.order_id;
    assert!(matches!(
        journal.open(operation, &lease, created_at).unwrap(),
        Opened::Created(_)
    ));
    let state = OperationState::from_name(text(progress, "state")).unwrap();
    let attempts = num(progress, "attempts") as u32;
    if state != OperationState::Pending || attempts > 0 {
        (journal.record_attempt(order_id, &lease, attempts, created_at)).unwrap();
    }
    match state {
        OperationState::Pending | OperationState::InFlight => {
            journal.release(order_id, &lease).unwrap()
        }
        _ => (journal.finish(order_id, &lease, state, None, 0, created_at)).unwrap(),
    }
}

/// Runs every vector through a client's [`Call`] over journals made by
/// `journal`; returns how many ran.
fn drive_calls(journal: impl Fn() -> Arc<dyn Journal>) -> usize {
    let v = vectors();
    let cases = v["vectors"].as_array().unwrap();
    for case in cases {
        let name = text(case, "name").to_owned();
        let now = num(case, "now");
        let progress = &case["progress"];
        let operation = frozen(&case["operation"]);
        let journal = journal();
        let mut client = client_for(&case["setup"], &journal);
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&events);
        client = client.with_event_hook(Arc::new(move |e: &AttemptEvent| {
            sink.lock().unwrap().push(e.clone());
        }));
        // A new operation is opened by the call (its first attempt recorded
        // as it opens); any other starts from the journal's record.
        let fresh = num(progress, "age_secs") == 0
            && (progress["first_recorded"].as_bool() == Some(true)
                || (text(progress, "state") == "pending" && num(progress, "attempts") == 0));
        let call = if fresh {
            let spec = OperationSpec {
                order_id: &operation.order_id,
                method: &operation.method,
                path: &operation.path,
                body: &operation.body,
                idempotency_key: Some(&operation.idempotency_key),
                status_path: operation.status_path.as_deref(),
            };
            client.begin(&spec, None).unwrap()
        } else {
            let created_at = now - num(progress, "age_secs");
            seed(journal.as_ref(), &operation, progress, created_at);
            client.begin_resume(&operation.order_id, None).unwrap()
        };
        let mut r = CallRunner {
            client,
            journal,
            operation,
            start: now,
            elapsed_ms: 0,
            call: Some(call),
            events,
            recorded: None,
            cancelled: None,
        };
        for (i, step) in case["script"].as_array().unwrap().iter().enumerate() {
            r.run_step(step, &format!("{name} (call) step {i}"));
        }
        assert!(r.call().is_done(), "{name}: the call did not end");
    }
    cases.len()
}

#[test]
fn operation_vectors_drive_call_over_memory_journal() {
    let ran = drive_calls(|| Arc::new(MemoryJournal::new()));
    assert!(ran >= 36);
}

#[test]
fn operation_vectors_drive_call_over_sqlite_journal() {
    let dir = tempfile::tempdir().unwrap();
    let made = std::sync::atomic::AtomicUsize::new(0);
    let ran = drive_calls(|| {
        let n = made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.path().join(format!("journal-{n}.db"));
        Arc::new(SqliteJournal::open(path, SqliteJournalOptions::default()).unwrap())
    });
    assert!(ran >= 36);
}
