//! What `payidem` prints can neither leak a password nor drive the
//! operator's terminal (issue 22): `--help` and the manual never show the
//! values of PAYIDEM_* variables, error output names journal and platform
//! URLs redacted, and every row field of human output has its control,
//! separator and bidi characters escaped.

use std::process::Output;

use payidem::journal::{Journal, Lease, SqliteJournal, SqliteJournalOptions};
use serde_json::Value;

mod common;
use common::{now, payidem, payidem_env, payment, stderr, stdout};

const PASSWORD: &str = "PASSWORD-x7Qz";
const PG_URL: &str = "postgres://u:PASSWORD-x7Qz@127.0.0.1:1/db";
const PROXY_URL: &str = "http://u:PASSWORD-x7Qz@127.0.0.1:1";

fn everything(o: &Output) -> String {
    format!("{}{}", stdout(o), stderr(o))
}

#[track_caller]
fn assert_hidden(what: &str, o: &Output) {
    let all = everything(o);
    assert!(!all.contains(PASSWORD), "{what} shows the password:\n{all}");
}

#[test]
fn help_and_the_manual_never_show_environment_values() {
    let env = [
        ("PAYIDEM_JOURNAL", PG_URL),
        ("PAYIDEM_BASE_URL", PROXY_URL),
        ("PAYIDEM_KEY_ID", "key-PASSWORD-x7Qz"),
    ];
    for args in [
        &["--help"][..],
        &["journal", "--help"],
        &["journal", "list", "--help"],
        &["journal", "list", "-h"],
        &["journal", "resume", "--help"],
        &["journal", "check", "--help"],
        &["sign", "--help"],
        &["man"],
    ] {
        let out = payidem_env(args, &env);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", everything(&out));
        assert_hidden(&format!("{args:?}"), &out);
    }
    // The variables are still named.
    let help = stdout(&payidem_env(&["journal", "list", "--help"], &env));
    assert!(help.contains("PAYIDEM_JOURNAL"), "{help}");
}

#[test]
fn errors_name_journals_and_platforms_redacted() {
    let dir = tempfile::tempdir().unwrap();
    // A PostgreSQL journal nobody listens for, from the environment and
    // from the flag, in text and JSON.
    for (args, env) in [
        (vec!["journal", "list"], vec![("PAYIDEM_JOURNAL", PG_URL)]),
        (
            vec!["journal", "list", "--json"],
            vec![("PAYIDEM_JOURNAL", PG_URL)],
        ),
        (vec!["journal", "stats", "--journal", PG_URL], vec![]),
        (
            vec![
                "journal",
                "check",
                "--journal",
                "postgres://127.0.0.1:1/db?password=PASSWORD-x7Qz",
            ],
            vec![],
        ),
    ] {
        let out = payidem_env(&args, &env);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", everything(&out));
        assert!(stderr(&out).contains("journal"), "{}", everything(&out));
        assert_hidden(&format!("{args:?}"), &out);
    }
    // Mistyped URLs and libpq's key=value form are taken for file names:
    // "does not exist" names them redacted.
    for (journal, shown) in [
        (
            "postgress://u:PASSWORD-x7Qz@127.0.0.1:1/db",
            "postgress://***@127.0.0.1:1/db",
        ),
        ("postgres:/u:PASSWORD-x7Qz@127.0.0.1:1/db", "postgres:***"),
        (
            "host=127.0.0.1 user=u password=PASSWORD-x7Qz",
            "host=127.0.0.1 user=u password=***",
        ),
    ] {
        for json in [false, true] {
            let mut args = vec!["journal", "list", "--journal", journal];
            if json {
                args.push("--json");
            }
            let out = payidem(&args);
            assert_eq!(
                out.status.code(),
                Some(1),
                "{journal}: {}",
                everything(&out)
            );
            assert_hidden(journal, &out);
            assert!(stderr(&out).contains(shown), "{journal}: {}", stderr(&out));
            assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
        }
    }
    // A platform URL with credentials, in resume's error output.
    let path = dir.path().join("journal.sqlite3");
    let j = SqliteJournal::open(&path, SqliteJournalOptions::default()).unwrap();
    put_pending(&j, "ord-1");
    drop(j);
    let secret = dir.path().join("secret");
    std::fs::write(&secret, payidem_mock::DEFAULT_SECRET).unwrap();
    for json in [false, true] {
        let mut args = vec![
            "journal",
            "resume",
            "--all",
            "--journal",
            path.to_str().unwrap(),
            "--key-id",
            "k",
            "--secret-file",
            secret.to_str().unwrap(),
            "--deadline",
            "1s",
        ];
        if json {
            args.push("--json");
        }
        let out = payidem_env(
            &args,
            &[("PAYIDEM_BASE_URL", "https://u:PASSWORD-x7Qz@127.0.0.1:1?x")],
        );
        assert_ne!(out.status.code(), Some(0), "{}", everything(&out));
        assert_hidden("resume with a base URL with credentials", &out);
    }
}

/// Writes a pending operation for `order_id` through the library.
fn put_pending(j: &dyn Journal, order_id: &str) {
    let lease = Lease {
        owner: "host/1/abc/0".into(),
        expires_at: now() + 60,
    };
    j.open(&payment(order_id, false), &lease, now() - 60)
        .unwrap();
    j.release(order_id, &lease).unwrap();
}

/// Characters a terminal acts on, one of each kind.
const HOSTILE: [char; 8] = [
    '\x1b', '\x07', '\x7f', '\u{9b}', '\u{2028}', '\u{202e}', '\u{2066}', '\r',
];

#[track_caller]
fn assert_inert(what: &str, text: &str) {
    for c in HOSTILE {
        assert!(!text.contains(c), "{what} prints {c:?} raw:\n{text:?}");
    }
}

#[test]
fn rows_edited_in_the_database_cannot_drive_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let j = SqliteJournal::open(&path, SqliteJournalOptions::default()).unwrap();
    put_pending(&j, "ord-1");
    drop(j);
    // The library refuses such order ids; a row edited in the database is
    // read as stored by a keyless command.
    let order_id = "ord-\x1b[2K\x07\u{202e}evil";
    let key = "key-\u{9b}2J\u{2028}\u{2066}x\x7f";
    let path_field = "/v1/pay\rments";
    let raw = rusqlite::Connection::open(&path).unwrap();
    let changed = raw
        .execute(
            "UPDATE operations SET order_id = ?1, idempotency_key = ?2, path = ?3 \
             WHERE order_id = 'ord-1'",
            rusqlite::params![order_id, key, path_field],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(raw);
    let journal = path.to_str().unwrap();

    let list = payidem(&["journal", "list", "--journal", journal]);
    assert_eq!(list.status.code(), Some(0), "{}", everything(&list));
    let text = stdout(&list);
    assert_inert("list", &text);
    assert!(
        text.contains("ord-\\u{1b}[2K\\u{7}\\u{202e}evil"),
        "the order id is shown escaped: {text}"
    );
    assert!(
        text.contains("key=key-\\u{9b}2J\\u{2028}\\u{2066}x\\u{7f}"),
        "{text}"
    );
    assert!(text.contains("/v1/pay\\u{d}ments"), "{text}");

    let show = payidem(&["journal", "show", order_id, "--journal", journal]);
    assert_eq!(show.status.code(), Some(0), "{}", everything(&show));
    let text = stdout(&show);
    assert_inert("show", &text);
    assert!(text.contains("ord-\\u{1b}[2K\\u{7}\\u{202e}evil"), "{text}");

    let dry = payidem(&[
        "journal",
        "resume",
        "--all",
        "--dry-run",
        "--journal",
        journal,
    ]);
    assert_inert("resume --dry-run", &everything(&dry));

    // Not found: the message quotes the order id asked for.
    let missing = payidem(&[
        "journal",
        "show",
        "x\x1b]0;owned\x07\u{202e}",
        "--journal",
        journal,
    ]);
    assert_eq!(missing.status.code(), Some(3), "{}", everything(&missing));
    assert_inert("show of a missing order id", &everything(&missing));

    // JSON: the same values once parsed, no raw control character.
    for args in [
        &["journal", "list", "--json", "--journal", journal][..],
        &["journal", "show", order_id, "--json", "--journal", journal],
        &["journal", "export", "--journal", journal],
    ] {
        let out = payidem(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", everything(&out));
        assert_inert(&format!("{args:?}"), &stdout(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let op = if v["operations"].is_array() {
            v["operations"][0].clone()
        } else {
            v
        };
        assert_eq!(op["order_id"], order_id, "{args:?}");
        assert_eq!(op["idempotency_key"], key, "{args:?}");
        assert_eq!(op["path"], path_field, "{args:?}");
    }
    let missing = payidem(&[
        "journal",
        "show",
        "--json",
        "x\u{9b}\u{202e}",
        "--journal",
        journal,
    ]);
    assert_inert("a JSON error", &stderr(&missing));
}
