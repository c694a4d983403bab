//! The `payidem journal` commands on a PostgreSQL journal (a real server
//! started by the test, e2e/src/pg.rs): a database without a journal is
//! refused and left without one; `list`, `show`, `check` with the secret,
//! `resume` against the mock on loopback, and `reconcile` work on the rows
//! clients wrote.

use std::process::Output;

use payidem::journal::{Journal, JournalKey, Lease, PostgresJournal, PostgresJournalOptions};
use payidem::operation::OperationState;
use payidem_e2e::{pg, start_mock};
use payidem_mock::{DEFAULT_KEY_ID, DEFAULT_SECRET};
use serde_json::Value;

mod common;
use common::{now, payidem, payment, stderr, stdout};

/// Asserts that a run of the command exited 0.
fn succeeded(out: &Output) {
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(out), stderr(out));
}

/// `payidem --json ARGS`, which must succeed, parsed.
fn json(args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = payidem(&all);
    succeeded(&out);
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn a_database_without_a_journal_is_refused_and_left_without_one() {
    let url = pg::fresh_db();
    for command in ["list", "check", "stats"] {
        let out = payidem(&["journal", command, "--journal", &url]);
        assert_eq!(out.status.code(), Some(1), "{command}: {}", stdout(&out));
        assert!(
            stderr(&out).contains("holds no payidem journal"),
            "{command}: {}",
            stderr(&out)
        );
    }
    assert_eq!(pg::journal_tables(&url), 0);
}

#[test]
fn list_check_resume_and_reconcile_work_on_a_postgres_journal() {
    let url = pg::fresh_db();
    {
        let j = PostgresJournal::connect(
            &url,
            PostgresJournalOptions {
                journal_key: Some(JournalKey::derive_from_secret(DEFAULT_SECRET.as_bytes())),
                ..PostgresJournalOptions::default()
            },
        )
        .unwrap();
        // Two payments whose first attempt's outcome was never learnt, as a
        // client that died leaves them.
        for id in ["pg-ord-1", "pg-ord-2"] {
            let lease = Lease {
                owner: "gone-host/1/x/0".into(),
                expires_at: now() - 1,
            };
            j.open(&payment(id, true), &lease, now()).unwrap();
            j.record_attempt(id, &lease, 1, now()).unwrap();
            j.finish(id, &lease, OperationState::Unknown, None, 0, now())
                .unwrap();
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, format!("{DEFAULT_SECRET}\n")).unwrap();
    let s = secret.to_str().unwrap();

    let listed = json(&["journal", "list", "--journal", &url]);
    let ops = listed["operations"].as_array().unwrap();
    assert_eq!(ops.len(), 2, "{listed}");
    assert!(ops.iter().all(|o| o["state"] == "unknown"), "{listed}");
    let journal_name = listed["journal"].as_str().unwrap();
    assert!(journal_name.contains(pg::db_of(&url)), "{journal_name}");

    let stats = json(&["journal", "stats", "--journal", &url]);
    assert_eq!(stats["unknown"], 2, "{stats}");

    let checked = json(&["journal", "check", "--journal", &url, "--secret-file", s]);
    assert_eq!(checked["ok"], true, "{checked}");
    assert_eq!(checked["macs_verified"], true, "{checked}");

    let shown = json(&["journal", "show", "pg-ord-1", "--journal", &url]);
    assert_eq!(shown["idempotency_key"], "create-pg-ord-1", "{shown}");

    // Resume one against the mock: its key, its body; settled.
    let mock = start_mock();
    let base = mock.url();
    let out = payidem(&[
        "journal",
        "resume",
        "pg-ord-1",
        "--journal",
        &url,
        "--base-url",
        &base,
        "--key-id",
        DEFAULT_KEY_ID,
        "--secret-file",
        s,
    ]);
    succeeded(&out);
    let shown = json(&["journal", "show", "pg-ord-1", "--journal", &url]);
    assert_eq!(shown["state"], "succeeded", "{shown}");
    let stats = mock.stats();
    assert_eq!(stats.orders["pg-ord-1"].payments_created, 1);
    assert_eq!(
        stats.orders["pg-ord-1"].idempotency_keys,
        ["create-pg-ord-1"]
    );
    assert!(
        !stats.orders.contains_key("pg-ord-2"),
        "only the one asked for"
    );

    // Reconcile the other by hand.
    let out = payidem(&[
        "journal",
        "reconcile",
        "pg-ord-2",
        "--as",
        "rejected",
        "--reference",
        "ticket 4711",
        "--journal",
        &url,
        "--secret-file",
        secret.to_str().unwrap(),
    ]);
    succeeded(&out);
    let listed = json(&["journal", "list", "--journal", &url, "--state", "unknown"]);
    assert_eq!(
        listed["operations"].as_array().unwrap().len(),
        0,
        "{listed}"
    );
    let shown = json(&["journal", "show", "pg-ord-2", "--journal", &url]);
    assert_eq!(shown["state"], "rejected", "{shown}");
    assert_eq!(
        shown["reconciliations"][0]["reference"], "ticket 4711",
        "{shown}"
    );
}
