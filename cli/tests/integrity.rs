//! `payidem journal check` and `resume` with the secret: rows are verified
//! against their integrity MAC, a tampered one is named (check: exit 7)
//! and never sent (resume: exit 1, the mock receives nothing); without the
//! secret the check says it could not verify. `check` also prints the
//! clock offsets the journal keeps, with their age.

use std::path::{Path, PathBuf};

use payidem::journal::{
    Journal, JournalKey, Lease, SqliteJournal, SqliteJournalOptions, StoredClockOffset,
};
use payidem::operation::OperationState;
use payidem_e2e::start_mock;
use payidem_mock::{DEFAULT_KEY_ID, DEFAULT_SECRET};
use serde_json::Value;

mod common;
use common::{now, payidem_env as payidem, payment, stderr, stdout};

/// `payidem --json journal check --journal JOURNAL FLAG VALUE`, parsed.
fn check_json(journal: &str, flag: &str, value: &str) -> Value {
    let out = payidem(
        &[
            "--json",
            "journal",
            "check",
            "--journal",
            journal,
            flag,
            value,
        ],
        &[],
    );
    serde_json::from_slice(&out.stdout).expect("check prints JSON")
}

/// A journal as a client of the mock's key writes it: two unknown
/// operations with their MACs, and a stored clock offset.
fn journal(dir: &Path) -> PathBuf {
    let path = dir.join("journal.sqlite3");
    let j = SqliteJournal::open(
        &path,
        SqliteJournalOptions {
            journal_key: Some(JournalKey::derive_from_secret(DEFAULT_SECRET.as_bytes())),
            ..SqliteJournalOptions::default()
        },
    )
    .unwrap();
    for id in ["ord-good", "ord-tampered"] {
        let lease = Lease {
            owner: "gone-host/1/x/0".into(),
            expires_at: now() - 1,
        };
        j.open(&payment(id, false), &lease, now() - 100).unwrap();
        j.record_attempt(id, &lease, 1, now() - 99).unwrap();
        j.finish(id, &lease, OperationState::Unknown, None, 0, now() - 98)
            .unwrap();
    }
    j.save_clock_offset(&StoredClockOffset {
        platform: "https://api.example.com:443".into(),
        offset_secs: 312,
        measured_at: now() - 7200,
    })
    .unwrap();
    path
}

#[test]
fn check_with_the_secret_names_a_tampered_row_and_resume_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal(dir.path());
    let secret = dir.path().join("secret");
    std::fs::write(&secret, format!("{DEFAULT_SECRET}\n")).unwrap();
    let (p, s) = (path.to_str().unwrap(), secret.to_str().unwrap());

    let sound = payidem(
        &["journal", "check", "--journal", p, "--secret-file", s],
        &[],
    );
    assert_eq!(sound.status.code(), Some(0), "{}", stdout(&sound));
    assert!(stdout(&sound).contains("integrity MACs: checked for every operation"));

    // Another key for the same order: the row still reads back valid, only
    // its MAC tells.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE operations SET idempotency_key = 'create-ord-other' WHERE order_id = 'ord-tampered'",
            [],
        )
        .unwrap();

    // Without the secret the check cannot see it, and says so.
    let blind = payidem(&["journal", "check", "--journal", p], &[]);
    assert_eq!(blind.status.code(), Some(0), "{}", stdout(&blind));
    assert!(
        stdout(&blind).contains("integrity MACs: not verified"),
        "{}",
        stdout(&blind)
    );

    // With it (file or environment), exit 7 and the row named.
    for out in [
        payidem(
            &["journal", "check", "--journal", p, "--secret-file", s],
            &[],
        ),
        payidem(
            &["journal", "check", "--journal", p],
            &[("PAYIDEM_SECRET", DEFAULT_SECRET)],
        ),
    ] {
        assert_eq!(out.status.code(), Some(7), "{}", stdout(&out));
        let text = stdout(&out);
        assert!(
            text.contains(
                "problem: the row of order id \"ord-tampered\" fails its integrity check"
            ),
            "{text}"
        );
        assert!(!text.contains("\"ord-good\""), "{text}");
        assert!(!text.contains(DEFAULT_SECRET), "{text}");
    }
    let v = check_json(p, "--secret-file", s);
    assert_eq!(v["ok"], false);
    assert_eq!(v["macs_verified"], true);
    assert_eq!(v["problems"].as_array().unwrap().len(), 1);

    // Resume refuses before sending anything, for one order or all.
    let mock = start_mock();
    let url = mock.url();
    for target in [&["ord-tampered"][..], &["--all"][..]] {
        let mut args = vec![
            "journal",
            "resume",
            "--journal",
            p,
            "--base-url",
            &url,
            "--key-id",
            DEFAULT_KEY_ID,
            "--secret-file",
            s,
        ];
        args.extend_from_slice(target);
        let out = payidem(&args, &[]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}{}",
            stdout(&out),
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("journal_error") && stderr(&out).contains("\"ord-tampered\""),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(mock.stats().requests.total, 0, "nothing was sent");
}

#[test]
fn check_prints_the_stored_clock_offsets_and_their_age() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal(dir.path());
    let p = path.to_str().unwrap();
    let text = stdout(&payidem(&["journal", "check", "--journal", p], &[]));
    assert!(
        text.contains("clock offset for https://api.example.com:443: +312 s, measured 2h"),
        "{text}"
    );
    let out = payidem(&["--json", "journal", "check", "--journal", p], &[]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let offsets = v["clock_offsets"].as_array().unwrap();
    assert_eq!(offsets.len(), 1);
    assert_eq!(offsets[0]["platform"], "https://api.example.com:443");
    assert_eq!(offsets[0]["offset_secs"], 312);
    let age = offsets[0]["age_secs"].as_u64().unwrap();
    assert!((7200..7260).contains(&age), "{age}");
}

/// Clients given a journal key of their own: `check` and `resume` verify
/// rows with `--journal-key-file`; the key derived from the secret fails
/// every row (check exit 7, resume sends nothing), and a file that is not a
/// key is refused naming the file, never its content.
#[test]
fn a_journal_key_of_its_own_comes_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let key_hex = format!("{}{}", "5a".repeat(16), "c3".repeat(16));
    {
        let j = SqliteJournal::open(
            &path,
            SqliteJournalOptions {
                journal_key: Some(JournalKey::from_hex(&key_hex).unwrap()),
                ..SqliteJournalOptions::default()
            },
        )
        .unwrap();
        let lease = Lease {
            owner: "gone-host/1/x/0".into(),
            expires_at: now() - 1,
        };
        j.open(&payment("ord-own-key", false), &lease, now() - 100)
            .unwrap();
        j.record_attempt("ord-own-key", &lease, 1, now() - 99)
            .unwrap();
        j.finish(
            "ord-own-key",
            &lease,
            OperationState::Unknown,
            None,
            0,
            now() - 98,
        )
        .unwrap();
    }
    let key_file = dir.path().join("journal.key");
    std::fs::write(&key_file, format!("{key_hex}\n")).unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, DEFAULT_SECRET).unwrap();
    let (p, k, s) = (
        path.to_str().unwrap(),
        key_file.to_str().unwrap(),
        secret.to_str().unwrap(),
    );

    let sound = payidem(
        &["journal", "check", "--journal", p, "--journal-key-file", k],
        &[],
    );
    assert_eq!(sound.status.code(), Some(0), "{}", stdout(&sound));
    assert!(
        stdout(&sound).contains(
            "integrity MACs: checked for every operation (journal key from --journal-key-file)"
        ),
        "{}",
        stdout(&sound)
    );
    let v = check_json(p, "--journal-key-file", k);
    assert_eq!(v["ok"], true);
    assert_eq!(v["macs_verified"], true);
    assert_eq!(v["journal_key"], "file");

    // The key derived from the secret is not the clients' key.
    let derived = payidem(
        &["journal", "check", "--journal", p, "--secret-file", s],
        &[],
    );
    assert_eq!(derived.status.code(), Some(7), "{}", stdout(&derived));
    assert!(
        stdout(&derived).contains("problem: ")
            && stdout(&derived).contains("sealed under another journal key"),
        "{}",
        stdout(&derived)
    );

    let mock = start_mock();
    let url = mock.url();
    let resume = |extra: &[&str]| {
        let mut args = vec![
            "journal",
            "resume",
            "ord-own-key",
            "--journal",
            p,
            "--base-url",
            &url,
            "--key-id",
            DEFAULT_KEY_ID,
            "--secret-file",
            s,
        ];
        args.extend_from_slice(extra);
        payidem(&args, &[])
    };
    let refused = resume(&[]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("journal_error")
            && stderr(&refused).contains("sealed under another journal key"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(mock.stats().requests.total, 0, "nothing was sent");

    let resumed = resume(&["--journal-key-file", k]);
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}{}",
        stdout(&resumed),
        stderr(&resumed)
    );
    assert!(mock.stats().requests.total >= 1);
    let journal = SqliteJournal::open(&path, SqliteJournalOptions::default()).unwrap();
    let record = journal.get("ord-own-key").unwrap().unwrap();
    assert_eq!(record.state, OperationState::Succeeded);
    assert_eq!(record.response.unwrap().status, 201);

    // Not a key: refused, naming the file and not what it holds.
    let bad = dir.path().join("bad.key");
    std::fs::write(&bad, "zz-not-a-key-zz\n").unwrap();
    let out = payidem(
        &[
            "journal",
            "check",
            "--journal",
            p,
            "--journal-key-file",
            bad.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(bad.to_str().unwrap()) && stderr(&out).contains("journal_key"),
        "{}",
        stderr(&out)
    );
    assert!(
        !stderr(&out).contains("zz-not-a-key-zz"),
        "{}",
        stderr(&out)
    );
    let missing = payidem(
        &[
            "journal",
            "check",
            "--journal",
            p,
            "--journal-key-file",
            "/nonexistent/journal.key",
        ],
        &[],
    );
    assert_eq!(missing.status.code(), Some(1), "{}", stderr(&missing));
    assert!(
        stderr(&missing).contains("--journal-key-file /nonexistent/journal.key"),
        "{}",
        stderr(&missing)
    );
}
