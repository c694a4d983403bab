//! The `payidem` command driven as an operator drives it: a real SQLite
//! journal holding unknown, expired, in-flight, pending and settled
//! operations (written through the `Journal` API with past `now` values),
//! and the real mock platform for `resume`.

use std::path::{Path, PathBuf};
use std::process::Output;

use payidem::journal::{Journal, Lease, SqliteJournal, SqliteJournalOptions};
use payidem::operation::{FrozenOperation, OperationState, Response};
use payidem_e2e::{payment_body, start_mock};
use payidem_mock::{DEFAULT_KEY_ID, DEFAULT_SECRET};
use serde_json::Value;

mod common;
use common::{now, payidem, payidem_env, payment, stderr, stdout};

const HOUR: u64 = 3600;
const DAY: u64 = 24 * HOUR;

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

#[track_caller]
fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", stdout(o), stderr(o)))
}

fn ids(v: &Value) -> Vec<String> {
    v["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["order_id"].as_str().unwrap().to_owned())
        .collect()
}

/// Writes `op` at `created` and drives it to `state` at `updated`; an
/// in-flight one keeps the lease of `owner` until `lease_until`.
fn put(
    j: &dyn Journal,
    op: &FrozenOperation,
    state: OperationState,
    created: u64,
    updated: u64,
    lease_until: u64,
) {
    let lease = Lease {
        owner: "other-host/1/abc/0".into(),
        expires_at: lease_until,
    };
    j.open(op, &lease, created).unwrap();
    if state == OperationState::Pending {
        j.release(&op.order_id, &lease).unwrap();
        return;
    }
    j.record_attempt(&op.order_id, &lease, 2, updated).unwrap();
    if state != OperationState::InFlight {
        let answer = state.is_settled().then(|| Response {
            status: 201,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: b"{\"id\":\"pay_x\"}".to_vec(),
            replayed: false,
        });
        j.finish(&op.order_id, &lease, state, answer.as_ref(), 0, updated)
            .unwrap();
    }
}

/// The operator's morning after an outage, in one journal file.
struct Fixture {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.sqlite3");
        let j = SqliteJournal::open(&path, keyed()).unwrap();
        let t = now();
        // Unknown for an hour: resumable with its key.
        put(
            &j,
            &payment("ord-unknown", false),
            OperationState::Unknown,
            t - HOUR,
            t - HOUR + 5,
            t,
        );
        // Unknown for 49 h, no status path: key_expired, only a person can close it.
        put(
            &j,
            &payment("ord-expired", false),
            OperationState::Unknown,
            t - 49 * HOUR,
            t - 48 * HOUR,
            t,
        );
        // In flight right now, driven by another process for another hour.
        put(
            &j,
            &payment("ord-inflight", false),
            OperationState::InFlight,
            t - 3 * HOUR,
            t - 60,
            t + HOUR,
        );
        // Never sent.
        put(
            &j,
            &payment("ord-pending", false),
            OperationState::Pending,
            t - 10 * HOUR,
            t - 10 * HOUR,
            t,
        );
        // Settled long ago, and recently.
        put(
            &j,
            &payment("ord-old", false),
            OperationState::Succeeded,
            t - 9 * DAY,
            t - 8 * DAY,
            t,
        );
        put(
            &j,
            &payment("ord-new", false),
            OperationState::Rejected,
            t - 2 * DAY,
            t - DAY,
            t,
        );
        Fixture { _dir: dir, path }
    }

    fn journal(&self) -> &str {
        self.path.to_str().unwrap()
    }

    /// Runs `args` on the fixture's journal; the commands that change a
    /// sealed journal (reconcile, purge) get the secret, as an operator
    /// gives it.
    fn run(&self, args: &[&str]) -> Output {
        let mut all = args.to_vec();
        all.extend(["--journal", self.journal()]);
        if matches!(args.get(1), Some(&"reconcile") | Some(&"purge")) {
            payidem_env(&all, &[("PAYIDEM_SECRET", DEFAULT_SECRET)])
        } else {
            payidem(&all)
        }
    }

    fn open(&self) -> SqliteJournal {
        SqliteJournal::open(&self.path, keyed()).unwrap()
    }
}

/// Options of a journal keyed as the mock's clients key theirs: sealed, and
/// changed only with that key.
fn keyed() -> SqliteJournalOptions {
    SqliteJournalOptions {
        journal_key: Some(payidem::journal::JournalKey::derive_from_secret(
            DEFAULT_SECRET.as_bytes(),
        )),
        ..SqliteJournalOptions::default()
    }
}

#[test]
fn list_filters_by_state_and_age() {
    let f = Fixture::new();
    let all = f.run(&["journal", "list", "--json"]);
    assert_eq!(code(&all), 0, "{}", stderr(&all));
    let v = json(&all);
    assert_eq!(
        ids(&v),
        [
            "ord-old",
            "ord-expired",
            "ord-new",
            "ord-pending",
            "ord-inflight",
            "ord-unknown"
        ]
    );
    let expired = &v["operations"][1];
    assert_eq!(expired["state"], "unknown");
    assert_eq!(expired["key_expired"], true);
    assert_eq!(expired["idempotency_key"], "create-ord-expired");
    assert_eq!(expired["attempts"], 2);
    assert!(
        expired.get("body_base64").is_none(),
        "list never shows bodies"
    );
    assert_eq!(v["operations"][5]["key_expired"], false);

    let unknown = json(&f.run(&[
        "journal",
        "list",
        "--state",
        "unknown",
        "--state",
        "in_flight",
        "--json",
    ]));
    assert_eq!(
        ids(&unknown),
        ["ord-expired", "ord-inflight", "ord-unknown"]
    );
    let old = json(&f.run(&[
        "journal",
        "list",
        "--state",
        "unknown,in_flight",
        "--older-than",
        "2h",
        "--json",
    ]));
    assert_eq!(ids(&old), ["ord-expired", "ord-inflight"]);

    let text = stdout(&f.run(&["journal", "list", "--state", "unknown"]));
    assert!(
        text.contains("ord-expired") && text.contains("KEY EXPIRED"),
        "{text}"
    );
    assert!(text.contains("create-ord-unknown"), "{text}");
    let none = f.run(&["journal", "list", "--state", "conflict"]);
    assert_eq!(
        (code(&none), stdout(&none).as_str()),
        (0, "no operations\n")
    );

    let bad = f.run(&["journal", "list", "--older-than", "2 hours"]);
    assert_eq!(code(&bad), 2, "{}", stderr(&bad));
    let bad = f.run(&["journal", "list", "--state", "lost"]);
    assert_eq!(code(&bad), 2);
}

#[test]
fn show_prints_one_operation_and_its_body_only_when_asked() {
    let f = Fixture::new();
    let body = payment_body("ord-expired", 1250);
    let sha = payidem::protocol::body_sha256_hex(&body);
    let text = f.run(&["journal", "show", "ord-expired"]);
    assert_eq!(code(&text), 0, "{}", stderr(&text));
    let text = stdout(&text);
    for words in [
        "order id        ord-expired",
        "state           unknown",
        "idempotency key create-ord-expired",
        "attempts        2",
        "2d1h ago",
        "key expired     yes",
        "method          POST",
        "path            /v1/payments",
        &sha,
    ] {
        assert!(text.contains(words), "{words:?} missing:\n{text}");
    }
    assert!(
        !text.contains("currency"),
        "the body is shown only with --body:\n{text}"
    );
    let with_body = stdout(&f.run(&["journal", "show", "ord-expired", "--body"]));
    assert!(
        with_body.contains(std::str::from_utf8(&body).unwrap()),
        "{with_body}"
    );

    let v = json(&f.run(&["journal", "show", "ord-old", "--json"]));
    assert_eq!(v["state"], "succeeded");
    assert_eq!(v["settled"], true);
    assert_eq!(v["response"]["status"], 201);
    assert_eq!(
        v["body_sha256"],
        payidem::protocol::body_sha256_hex(&payment_body("ord-old", 1250))
    );
    assert!(v.get("body_base64").is_none());
    assert_eq!(v["reconciliations"], serde_json::json!([]));
    let v = json(&f.run(&["journal", "show", "ord-old", "--json", "--body"]));
    assert!(v["body_base64"].is_string());

    let missing = f.run(&["journal", "show", "ord-nope"]);
    assert_eq!(code(&missing), 3);
    assert!(
        stderr(&missing).contains("\"ord-nope\""),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn resume_drives_unknown_operations_against_the_platform() {
    let f = Fixture::new();
    let mock = start_mock();
    let dir = tempfile::tempdir().unwrap();
    let secret_file = dir.path().join("secret");
    std::fs::write(&secret_file, format!("{DEFAULT_SECRET}\n")).unwrap();

    // A dry run needs no platform and sends nothing.
    let dry = f.run(&["journal", "resume", "--all", "--dry-run", "--json"]);
    assert_eq!(code(&dry), 0, "{}", stderr(&dry));
    assert_eq!(
        ids(&json(&dry)),
        ["ord-expired", "ord-inflight", "ord-unknown"]
    );
    let dry = stdout(&f.run(&["journal", "resume", "--all", "--dry-run"]));
    assert!(dry.contains("ord-expired (unknown, 2d1h old, key create-ord-expired): key expired: would answer key_expired"), "{dry}");
    assert_eq!(mock.stats().requests.total, 0);

    let url = mock.url();
    let run = f.run(&[
        "journal",
        "resume",
        "--all",
        "--json",
        "--base-url",
        &url,
        "--key-id",
        DEFAULT_KEY_ID,
        "--secret-file",
        secret_file.to_str().unwrap(),
    ]);
    // ord-expired and ord-inflight stay unsettled: exit 4.
    assert_eq!(code(&run), 4, "{}\n{}", stdout(&run), stderr(&run));
    let v = json(&run);
    assert_eq!(v["unsettled"], 2);
    let results = v["results"].as_array().unwrap();
    let by_id = |id: &str| {
        results
            .iter()
            .find(|r| r["order_id"] == id)
            .unwrap()
            .clone()
    };
    let done = by_id("ord-unknown");
    assert_eq!(
        (
            done["ok"].clone(),
            done["status"].clone(),
            done["state"].clone()
        ),
        (true.into(), 201.into(), "succeeded".into())
    );
    let expired = by_id("ord-expired");
    assert_eq!(
        (expired["code"].clone(), expired["state"].clone()),
        ("key_expired".into(), "unknown".into())
    );
    let busy = by_id("ord-inflight");
    assert_eq!(
        (busy["code"].clone(), busy["state"].clone()),
        ("operation_busy".into(), "in_flight".into())
    );
    // Exactly one payment reached the platform, under the journaled key.
    let stats = mock.stats();
    assert_eq!(stats.payments, 1);
    assert_eq!(
        stats.orders["ord-unknown"].idempotency_keys,
        ["create-ord-unknown"]
    );
    assert!(!stats.orders.contains_key("ord-expired"));

    // Resuming one settled order id answers its end: exit 0. The secret
    // may come from the environment instead of a file.
    let one = payidem_env(
        &[
            "journal",
            "resume",
            "ord-unknown",
            "--journal",
            f.journal(),
            "--base-url",
            &url,
            "--key-id",
            DEFAULT_KEY_ID,
        ],
        &[("PAYIDEM_SECRET", DEFAULT_SECRET)],
    );
    assert_eq!(code(&one), 0, "{}\n{}", stdout(&one), stderr(&one));
    assert!(
        stdout(&one).contains("ord-unknown: HTTP 201"),
        "{}",
        stdout(&one)
    );
    assert!(
        stdout(&one).contains("0 operation(s) left unsettled"),
        "{}",
        stdout(&one)
    );
    assert_eq!(mock.stats().payments, 1);

    // No secret anywhere: usage, naming both ways, nothing sent.
    let none = f.run(&[
        "journal",
        "resume",
        "--all",
        "--base-url",
        &url,
        "--key-id",
        DEFAULT_KEY_ID,
    ]);
    assert_eq!(code(&none), 2);
    assert!(
        stderr(&none).contains("--secret-file") && stderr(&none).contains("PAYIDEM_SECRET"),
        "{}",
        stderr(&none)
    );
    // There is no flag that takes the secret itself.
    let argv = f.run(&["journal", "resume", "--all", "--secret", DEFAULT_SECRET]);
    assert_eq!(code(&argv), 2);
}

#[test]
fn reconcile_ends_the_key_expired_case() {
    let f = Fixture::new();
    let unknown = |f: &Fixture| {
        ids(&json(&f.run(&[
            "journal",
            "list",
            "--state",
            "unknown,in_flight",
            "--json",
        ])))
    };
    assert!(unknown(&f).contains(&"ord-expired".to_owned()));

    let done = f.run(&[
        "journal",
        "reconcile",
        "ord-expired",
        "--as",
        "succeeded",
        "--reference",
        "PSP pay_123 seen by phone",
        "--json",
    ]);
    assert_eq!(code(&done), 0, "{}", stderr(&done));
    let r = &json(&done)["reconciled"];
    assert_eq!(r["previous_state"], "unknown");
    assert_eq!(r["state"], "succeeded");
    assert_eq!(r["by"], "carol", "the default is $USER");
    assert_eq!(r["reference"], "PSP pay_123 seen by phone");
    let at = r["at"].as_u64().unwrap();
    assert!(at.abs_diff(now()) < 60);

    // It leaves the unknown list for good, and the library sees it settled.
    assert!(!unknown(&f).contains(&"ord-expired".to_owned()));
    assert!(f
        .open()
        .list(&[OperationState::InFlight, OperationState::Unknown])
        .unwrap()
        .iter()
        .all(|r| r.operation.order_id != "ord-expired"));
    let show = stdout(&f.run(&["journal", "show", "ord-expired"]));
    assert!(show.contains("state           succeeded"), "{show}");
    assert!(
        show.contains("reconciled      unknown -> succeeded by carol at "),
        "{show}"
    );
    assert!(show.contains("PSP pay_123 seen by phone"), "{show}");
    let v = json(&f.run(&["journal", "show", "ord-expired", "--json"]));
    assert_eq!(v["reconciliations"][0]["by"], "carol");
    // History kept: attempts and creation time are untouched.
    assert_eq!(v["attempts"], 2);

    // Refused: settled (this one now, and one settled by the platform),
    // and one another process is driving. Nothing changes.
    for (order_id, words) in [
        ("ord-expired", "already settled"),
        ("ord-old", "already settled"),
        ("ord-inflight", "another call"),
    ] {
        let no = f.run(&[
            "journal",
            "reconcile",
            order_id,
            "--as",
            "rejected",
            "--reference",
            "x",
            "--by",
            "dave",
        ]);
        assert_eq!(code(&no), 5, "{order_id}: {}", stderr(&no));
        assert!(stderr(&no).contains(words), "{order_id}: {}", stderr(&no));
    }
    assert_eq!(f.open().reconciliations(None).unwrap().len(), 1);
    let missing = f.run(&[
        "journal",
        "reconcile",
        "ord-nope",
        "--as",
        "rejected",
        "--reference",
        "x",
    ]);
    assert_eq!(code(&missing), 3);
    let bad = f.run(&[
        "journal",
        "reconcile",
        "ord-pending",
        "--as",
        "rejected",
        "--reference",
        "two\nlines",
    ]);
    assert_eq!(code(&bad), 2);
    assert!(
        stderr(&bad).contains("invalid_argument") && stderr(&bad).contains("reference"),
        "{}",
        stderr(&bad)
    );
    let bad = f.run(&[
        "journal",
        "reconcile",
        "ord-pending",
        "--as",
        "unknown",
        "--reference",
        "x",
    ]);
    assert_eq!(code(&bad), 2);

    // A pending one closed as rejected, by a named person.
    let ok = f.run(&[
        "journal",
        "reconcile",
        "ord-pending",
        "--as",
        "rejected",
        "--reference",
        "customer cancelled",
        "--by",
        "erin",
    ]);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    assert!(
        stdout(&ok).contains("pending -> rejected by erin"),
        "{}",
        stdout(&ok)
    );
}

#[test]
fn purge_deletes_only_old_settled_operations() {
    let f = Fixture::new();
    let out = f.run(&["journal", "purge", "--settled-older-than", "7d", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out)["purged"], 1);
    let left = ids(&json(&f.run(&["journal", "list", "--json"])));
    assert_eq!(
        left,
        [
            "ord-expired",
            "ord-new",
            "ord-pending",
            "ord-inflight",
            "ord-unknown"
        ]
    );
    let out = f.run(&["journal", "purge", "--settled-older-than", "1h"]);
    assert_eq!(code(&out), 0);
    assert!(
        stdout(&out).starts_with("purged 1 settled operation(s)"),
        "{}",
        stdout(&out)
    );
    let left = ids(&json(&f.run(&["journal", "list", "--json"])));
    assert_eq!(
        left,
        ["ord-expired", "ord-pending", "ord-inflight", "ord-unknown"]
    );
    assert_eq!(
        code(&f.run(&["journal", "purge"])),
        2,
        "the age is required"
    );
}

#[test]
fn export_holds_every_operation_with_its_bodies() {
    let f = Fixture::new();
    f.run(&[
        "journal",
        "reconcile",
        "ord-expired",
        "--as",
        "rejected",
        "--reference",
        "refunded by hand",
    ]);
    let out = f.run(&["journal", "export", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["format"], "payidem-journal-export");
    assert_eq!(v["version"], 1);
    assert_eq!(ids(&v).len(), 6);
    use base64::Engine;
    let decode = |s: &Value| {
        base64::engine::general_purpose::STANDARD
            .decode(s.as_str().unwrap())
            .unwrap()
    };
    for op in v["operations"].as_array().unwrap() {
        let id = op["order_id"].as_str().unwrap();
        assert_eq!(decode(&op["body_base64"]), payment_body(id, 1250), "{id}");
    }
    let old = v["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["order_id"] == "ord-old")
        .unwrap();
    assert_eq!(
        decode(&old["response"]["body_base64"]),
        b"{\"id\":\"pay_x\"}"
    );
    assert_eq!(old["response"]["headers"][0][0], "Content-Type");
    let expired = v["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["order_id"] == "ord-expired")
        .unwrap();
    assert_eq!(
        expired["reconciliations"][0]["reference"],
        "refunded by hand"
    );
    assert_eq!(v["reconciliations"].as_array().unwrap().len(), 1);
}

#[test]
fn check_passes_a_sound_journal_and_names_a_bad_row() {
    let f = Fixture::new();
    let ok = f.run(&["journal", "check", "--json"]);
    assert_eq!(code(&ok), 0, "{}", stdout(&ok));
    let v = json(&ok);
    assert_eq!(v["ok"], true);
    assert_eq!(v["backend"], "sqlite");
    assert_eq!(v["schema_version"], payidem::journal::SCHEMA_VERSION);
    assert_eq!(
        v["library_schema_version"],
        payidem::journal::SCHEMA_VERSION
    );
    assert_eq!(v["operations"], 6);
    assert!(stdout(&f.run(&["journal", "check"])).ends_with("ok\n"));

    // A body changed behind the library's back.
    let raw = rusqlite::Connection::open(&f.path).unwrap();
    raw.execute(
        "UPDATE operations SET body = X'7B7D' WHERE order_id = 'ord-unknown'",
        [],
    )
    .unwrap();
    drop(raw);
    let bad = f.run(&["journal", "check"]);
    assert_eq!(code(&bad), 7, "{}", stdout(&bad));
    let text = stdout(&bad);
    assert!(
        text.contains(
            "problem: order id \"ord-unknown\": the body does not match its stored SHA-256"
        ),
        "{text}"
    );
    assert!(text.ends_with("NOT OK\n"), "{text}");
}

#[test]
fn a_missing_or_foreign_journal_is_named_and_never_created() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.sqlite3");
    let out = payidem(&["journal", "list", "--journal", missing.to_str().unwrap()]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains(missing.to_str().unwrap()),
        "{}",
        stderr(&out)
    );
    assert!(!missing.exists());
    // The environment names it too.
    let out = payidem_env(
        &["journal", "check"],
        &[("PAYIDEM_JOURNAL", missing.to_str().unwrap())],
    );
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("does not exist"));
    // The library's default journal when nothing names one.
    let out = payidem_env(
        &["journal", "list"],
        &[("XDG_STATE_HOME", dir.path().to_str().unwrap())],
    );
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains(&format!("{}/payidem/journal.sqlite3", dir.path().display())),
        "{}",
        stderr(&out)
    );

    let foreign = dir.path().join("app.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    let out = payidem(&[
        "journal",
        "list",
        "--json",
        "--journal",
        foreign.to_str().unwrap(),
    ]);
    assert_eq!(code(&out), 1);
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(err["error"]["code"], "journal_error");
    assert_eq!(err["error"]["exit"], 1);
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not a payidem journal"));
    let out = payidem(&[
        "journal",
        "list",
        "--journal",
        "postgresql://ops:pw-never-shown@/payidem?host=/nonexistent-payidem-dir",
    ]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("journal postgres ops@/nonexistent-payidem-dir/payidem")
            && stderr(&out).contains("no connection to the server"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("pw-never-shown"));
}

/// Signs with `payidem sign --json` and writes the headers as captured.
fn sign_to_files(dir: &Path, body: &[u8]) -> (PathBuf, PathBuf, PathBuf) {
    let secret = dir.join("secret");
    let body_file = dir.join("body.json");
    let headers = dir.join("headers.txt");
    std::fs::write(&secret, DEFAULT_SECRET).unwrap();
    std::fs::write(&body_file, body).unwrap();
    let out = payidem(&[
        "sign",
        "--json",
        "--method",
        "POST",
        "--path",
        "/v1/payments",
        "--body-file",
        body_file.to_str().unwrap(),
        "--key-id",
        DEFAULT_KEY_ID,
        "--secret-file",
        secret.to_str().unwrap(),
        "--idempotency-key",
        "create-ord-9",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v = json(&out);
    let mut text = String::from("POST /v1/payments HTTP/1.1\r\n");
    for h in v["headers"].as_array().unwrap() {
        text.push_str(&format!(
            "{}: {}\r\n",
            h[0].as_str().unwrap(),
            h[1].as_str().unwrap()
        ));
    }
    std::fs::write(&headers, text).unwrap();
    (secret, body_file, headers)
}

fn verify(secret: &Path, body: &Path, headers: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "verify",
        "--headers-file",
        headers.to_str().unwrap(),
        "--body-file",
        body.to_str().unwrap(),
        "--method",
        "POST",
        "--path",
        "/v1/payments",
        "--key-id",
        DEFAULT_KEY_ID,
        "--secret-file",
        secret.to_str().unwrap(),
    ];
    args.extend(extra);
    payidem(&args)
}

#[test]
fn sign_output_verifies_and_a_tampered_body_names_invalid_signature() {
    let dir = tempfile::tempdir().unwrap();
    let body = payment_body("ord-9", 500);
    let (secret, body_file, headers) = sign_to_files(dir.path(), &body);

    let ok = verify(&secret, &body_file, &headers, &["--json"]);
    assert_eq!(code(&ok), 0, "{}\n{}", stdout(&ok), stderr(&ok));
    let v = json(&ok);
    assert_eq!(
        (v["valid"].clone(), v["idempotency_key"].clone()),
        (true.into(), "create-ord-9".into())
    );
    assert!(stdout(&verify(&secret, &body_file, &headers, &[]))
        .starts_with("valid: signed by key_test_1"));

    std::fs::write(&body_file, payment_body("ord-9", 50_000)).unwrap();
    let bad = verify(&secret, &body_file, &headers, &[]);
    assert_eq!(code(&bad), 6);
    assert!(
        stdout(&bad).starts_with("invalid: invalid_signature: "),
        "{}",
        stdout(&bad)
    );
    std::fs::write(&body_file, &body).unwrap();

    // Each rule is named: an old capture, a missing header, another key id.
    let late = verify(
        &secret,
        &body_file,
        &headers,
        &["--json", "--at", &(now() + 3600).to_string()],
    );
    assert_eq!(
        (code(&late), json(&late)["code"].clone()),
        (6, "timestamp_out_of_window".into())
    );
    let at_capture = verify(
        &secret,
        &body_file,
        &headers,
        &["--at", &(now() + 200).to_string()],
    );
    assert_eq!(code(&at_capture), 0, "{}", stdout(&at_capture));
    let text = std::fs::read_to_string(&headers).unwrap();
    let stripped: String = text
        .lines()
        .filter(|l| !l.starts_with("X-Nonce"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&headers, stripped).unwrap();
    let missing = verify(&secret, &body_file, &headers, &["--json"]);
    assert_eq!(
        (code(&missing), json(&missing)["code"].clone()),
        (6, "missing_signature".into())
    );
    std::fs::write(
        &headers,
        text.replace("X-Api-Key: key_test_1", "X-Api-Key: key_other"),
    )
    .unwrap();
    let other = verify(&secret, &body_file, &headers, &["--json"]);
    assert_eq!(
        (code(&other), json(&other)["code"].clone()),
        (6, "unknown_api_key".into())
    );
    std::fs::write(&headers, "X-Api-Key key_test_1\n").unwrap();
    let garbled = verify(&secret, &body_file, &headers, &[]);
    assert_eq!(code(&garbled), 2);
    assert!(stderr(&garbled).contains("line 1"), "{}", stderr(&garbled));
}

#[test]
fn sign_prints_headers_or_a_curl_command() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, DEFAULT_SECRET).unwrap();
    let body_file = dir.path().join("it's.json");
    std::fs::write(&body_file, b"{}").unwrap();
    let base = [
        "sign",
        "--method",
        "POST",
        "--path",
        "/v1/payments",
        "--body-file",
        body_file.to_str().unwrap(),
        "--key-id",
        DEFAULT_KEY_ID,
        "--secret-file",
        secret.to_str().unwrap(),
        "--idempotency-key",
        "k-1",
        "--timestamp",
        "1700000000",
    ];
    let out = payidem(&base);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let names: Vec<&str> = text.lines().map(|l| l.split(':').next().unwrap()).collect();
    assert_eq!(
        names,
        [
            "X-Api-Key",
            "X-Timestamp",
            "X-Nonce",
            "X-Signature",
            "Idempotency-Key"
        ]
    );
    assert!(text.contains("X-Timestamp: 1700000000\n"), "{text}");
    let mut curl = base.to_vec();
    curl.extend(["--curl", "https://api.example.com/"]);
    let text = stdout(&payidem(&curl));
    assert!(
        text.starts_with(
            "curl -sS -X 'POST' 'https://api.example.com/v1/payments' -H 'X-Api-Key: key_test_1'"
        ),
        "{text}"
    );
    assert!(text.contains(" -H 'Idempotency-Key: k-1'"), "{text}");
    assert!(
        text.contains("--data-binary '@") && text.contains("it'\\''s.json'"),
        "{text}"
    );
    // A POST without a key is refused, naming the field.
    let out = payidem(&base[..11]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("idempotency_key"), "{}", stderr(&out));
}

#[test]
fn errors_never_print_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    let f = Fixture::new();
    let short = "hunter2-short";
    let long = "S3CR3T-".repeat(200);
    for secret in [short, long.as_str()] {
        let file = dir.path().join("secret");
        std::fs::write(&file, secret).unwrap();
        let outs = [
            payidem(&[
                "sign",
                "--method",
                "GET",
                "--path",
                "/v1/x",
                "--key-id",
                "k",
                "--secret-file",
                file.to_str().unwrap(),
            ]),
            payidem(&[
                "sign",
                "--json",
                "--method",
                "GET",
                "--path",
                "/v1/x",
                "--key-id",
                "k",
                "--secret-file",
                file.to_str().unwrap(),
            ]),
            payidem_env(
                &[
                    "verify",
                    "--headers-file",
                    file.to_str().unwrap(),
                    "--method",
                    "GET",
                    "--path",
                    "/",
                    "--key-id",
                    "k",
                ],
                &[("PAYIDEM_SECRET", secret)],
            ),
            payidem_env(
                &[
                    "journal",
                    "resume",
                    "--all",
                    "--journal",
                    f.journal(),
                    "--base-url",
                    "http://127.0.0.1:9",
                    "--key-id",
                    "k",
                    "--deadline",
                    "1s",
                ],
                &[("PAYIDEM_SECRET", secret)],
            ),
        ];
        for out in outs {
            assert_ne!(code(&out), 0);
            let all = format!("{}{}", stdout(&out), stderr(&out));
            assert!(
                all.contains("secret"),
                "the error names the secret's problem: {all}"
            );
            assert!(!all.contains(&secret[..10]), "secret printed: {all}");
        }
    }
    // A good secret with a bad key id, and a resume that cannot connect.
    let file = dir.path().join("good");
    std::fs::write(&file, DEFAULT_SECRET).unwrap();
    let outs = [
        payidem(&[
            "sign",
            "--method",
            "GET",
            "--path",
            "/v1/x",
            "--key-id",
            "bad key",
            "--secret-file",
            file.to_str().unwrap(),
        ]),
        payidem(&[
            "journal",
            "resume",
            "ord-unknown",
            "--journal",
            f.journal(),
            "--base-url",
            "http://127.0.0.1:9",
            "--key-id",
            DEFAULT_KEY_ID,
            "--deadline",
            "1s",
            "--secret-file",
            file.to_str().unwrap(),
        ]),
    ];
    for out in outs {
        assert_ne!(code(&out), 0);
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!all.contains(DEFAULT_SECRET), "secret printed: {all}");
    }
    let unreadable = payidem(&[
        "sign",
        "--method",
        "GET",
        "--path",
        "/",
        "--key-id",
        "k",
        "--secret-file",
        "/nonexistent/s",
    ]);
    assert_eq!(code(&unreadable), 1);
    assert!(
        stderr(&unreadable).contains("cannot read the secret file /nonexistent/s"),
        "{}",
        stderr(&unreadable)
    );
}

#[test]
fn completions_and_the_manual() {
    for shell in ["bash", "zsh", "fish"] {
        let out = payidem(&["completions", shell]);
        assert_eq!(code(&out), 0, "{shell}");
        let text = stdout(&out);
        assert!(
            text.contains("payidem") && text.contains("reconcile"),
            "{shell}: {text}"
        );
    }
    assert_eq!(code(&payidem(&["completions", "tcsh"])), 2);
    let man = stdout(&payidem(&["man"]));
    assert!(
        man.starts_with(".ie") || man.contains(".TH payidem"),
        "{man}"
    );
    assert!(man.contains("journal"), "{man}");
}
