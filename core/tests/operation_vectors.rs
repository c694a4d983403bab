//! The operation vectors (core/tests/vectors/operation-v1.json) against the
//! operation state machine. C, Go and Python run the same file with the same
//! runner rules (see the file's `about`).

use std::sync::Arc;
use std::time::Duration;

use payidem::operation::{
    AttemptKind, CallLimits, CallSetup, CallTime, End, FrozenOperation, Operation, OperationSpec,
    OperationState, OsEntropy, Progress, Reply, Response, Step,
};
use payidem::policy::{ClockOffset, Landed, RetryBudget, RetryBudgetConfig, RetryPolicy};
use payidem::protocol::Signer;
use serde_json::Value;

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
        ("send", Step::Send(a)) => {
            assert_eq!(a.kind.as_str(), text(step, "kind"), "{at}");
            assert_eq!(u64::from(a.number), num(step, "number"), "{at}");
            let header = |n: &str| {
                a.headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(n))
                    .map(|(_, v)| v.as_str())
            };
            if a.kind == AttemptKind::Operation {
                assert_eq!(a.method, r.operation.method, "{at}");
                assert_eq!(a.path, r.operation.path, "{at}");
                assert_eq!(&*a.body, &r.operation.body[..], "{at}");
                assert_eq!(
                    header("Idempotency-Key"),
                    Some(r.operation.idempotency_key.as_str()),
                    "{at}"
                );
            } else {
                assert_eq!(a.method, "GET", "{at}");
                assert_eq!(
                    Some(a.path.as_str()),
                    r.operation.status_path.as_deref(),
                    "{at}"
                );
                assert!(a.body.is_empty(), "{at}");
            }
            if let Some(ts) = step["timestamp"].as_u64() {
                assert_eq!(header("X-Timestamp"), Some(ts.to_string().as_str()), "{at}");
            }
        }
        ("wait", Step::Wait(d)) => {
            let ms = d.as_nanos().div_ceil(1_000_000) as u64;
            if let Some(exact) = step["ms"].as_u64() {
                assert_eq!(ms, exact, "{at}");
            } else {
                let max = num(step, "max_ms");
                assert!(ms > 0 && ms <= max, "{at}: waited {ms} ms, max {max}");
            }
            r.elapsed_ms += ms;
        }
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
