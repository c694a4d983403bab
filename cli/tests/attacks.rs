//! The journal attacked by someone who can write it but holds no secret,
//! on SQLite and on PostgreSQL, against the mock on loopback. Each edit is
//! made on a journal of its own, written by a real client: afterwards no
//! request reaches the mock, every client call for the order answers
//! `journal_error` naming it (or the client is refused when it opens the
//! journal, for edits of the seal), and `payidem journal check
//! --secret-file` exits 7 naming it. Also: a client with a wrong secret is
//! refused before it writes anything; an order id paid through one platform
//! is never answered for another platform or key id; the read-only commands
//! work on a read-only journal file.

use std::path::Path;

use payidem::journal::{JournalKey, SqliteJournal, SqliteJournalOptions};
use payidem::{Client, ClientConfig, ErrorCode, JournalChoice};
use payidem_e2e::{fast_config, pg, start_mock, OwnedSpec};
use payidem_mock::{MockServer, DEFAULT_KEY_ID, DEFAULT_SECRET};

mod common;
use common::{payidem_env, stderr, stdout};

/// Where a journal under attack lives, and how to edit it behind the
/// library's back.
enum Store {
    Sqlite(tempfile::TempDir),
    Postgres(String),
}

impl Store {
    fn sqlite() -> Store {
        Store::Sqlite(tempfile::tempdir().unwrap())
    }

    fn postgres() -> Store {
        Store::Postgres(pg::fresh_db())
    }

    fn journal(&self) -> String {
        match self {
            Store::Sqlite(dir) => dir.path().join("journal.sqlite3").display().to_string(),
            Store::Postgres(url) => url.clone(),
        }
    }

    fn choice(&self) -> JournalChoice {
        match self {
            Store::Sqlite(dir) => JournalChoice::Sqlite(dir.path().join("journal.sqlite3")),
            Store::Postgres(url) => JournalChoice::Postgres(url.clone()),
        }
    }

    fn ops(&self) -> &'static str {
        match self {
            Store::Sqlite(_) => "operations",
            Store::Postgres(_) => "payidem_operations",
        }
    }

    fn seal(&self) -> &'static str {
        match self {
            Store::Sqlite(_) => "seal",
            Store::Postgres(_) => "payidem_seal",
        }
    }

    /// Runs `sql` (`{ops}` and `{seal}` name the tables) as the attacker.
    fn sql(&self, sql: &str) {
        let sql = sql
            .replace("{ops}", self.ops())
            .replace("{seal}", self.seal());
        match self {
            Store::Sqlite(dir) => rusqlite::Connection::open(dir.path().join("journal.sqlite3"))
                .unwrap()
                .execute_batch(&sql)
                .unwrap(),
            Store::Postgres(url) => pg::shared()
                .connect(pg::db_of(url))
                .batch_execute(&sql)
                .unwrap(),
        }
    }

    /// One text value per row of `sql`.
    fn texts(&self, sql: &str) -> Vec<String> {
        let sql = sql
            .replace("{ops}", self.ops())
            .replace("{seal}", self.seal());
        match self {
            Store::Sqlite(dir) => {
                let c = rusqlite::Connection::open(dir.path().join("journal.sqlite3")).unwrap();
                let mut stmt = c.prepare(&sql).unwrap();
                let rows = stmt.query_map([], |r| r.get::<_, String>(0)).unwrap();
                rows.map(Result::unwrap).collect()
            }
            Store::Postgres(url) => pg::shared()
                .connect(pg::db_of(url))
                .query(&sql, &[])
                .unwrap()
                .iter()
                .map(|r| r.get::<_, String>(0))
                .collect(),
        }
    }

    /// The row of `order_id` as an `INSERT` statement of SQL literals.
    fn snapshot(&self, order_id: &str) -> String {
        let columns = match self {
            Store::Sqlite(_) => self.texts("SELECT name FROM pragma_table_info('operations')"),
            Store::Postgres(_) => self.texts(
                "SELECT column_name::text FROM information_schema.columns \
                 WHERE table_name = 'payidem_operations' AND column_name <> 'seq'",
            ),
        };
        let quote = match self {
            Store::Sqlite(_) => "quote",
            Store::Postgres(_) => "quote_nullable",
        };
        let values: Vec<String> = columns
            .iter()
            .map(|c| {
                self.texts(&format!(
                    "SELECT {quote}({c}) FROM {{ops}} WHERE order_id = '{order_id}'"
                ))
                .remove(0)
            })
            .collect();
        format!(
            "INSERT INTO {{ops}} ({}) VALUES ({})",
            columns.join(", "),
            values.join(", ")
        )
    }

    /// `created_at` moved `secs` seconds back, in the store's own type.
    fn older(&self, column: &str, secs: u64) -> String {
        match self {
            Store::Sqlite(_) => format!("{column} = {column} - {secs}"),
            Store::Postgres(_) => format!("{column} = {column} - interval '{secs} seconds'"),
        }
    }
}

fn config(mock: &MockServer, store: &Store) -> ClientConfig {
    fast_config(&mock.url(), store.choice())
}

fn client(mock: &MockServer, store: &Store) -> payidem::Result<Client> {
    Client::new(config(mock, store), DEFAULT_SECRET.as_bytes())
}

fn paid(order_id: &str) -> OwnedSpec {
    OwnedSpec::payment(order_id, 1250, true)
}

fn declined(order_id: &str) -> OwnedSpec {
    OwnedSpec::payment(order_id, 1402, true)
}

/// A journal written by a real client: `o-ok` and `o-two` paid, `o-dec`
/// declined (402).
fn journal_with_history(mock: &MockServer, store: &Store) {
    let c = client(mock, store).unwrap();
    c.execute(&paid("o-ok").spec()).unwrap();
    c.execute(&paid("o-two").spec()).unwrap();
    let e = c.execute(&declined("o-dec").spec()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Rejected, "{e}");
}

/// `payidem journal check --secret-file` exits 7 naming `name`.
#[track_caller]
fn check_names(store: &Store, name: &str, what: &str) {
    // A directory of its own: tests running at once never share the file.
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, DEFAULT_SECRET).unwrap();
    let out = payidem_env(
        &[
            "journal",
            "check",
            "--journal",
            &store.journal(),
            "--secret-file",
            secret.to_str().unwrap(),
        ],
        &[],
    );
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(7), "{what}: {text}");
    assert!(text.contains(name), "{what}: check names {name}: {text}");
    assert!(!text.contains(DEFAULT_SECRET), "{what}");
}

/// After an edit of `order_id`'s row: every call for it is refused with
/// `journal_error` naming it, nothing reaches the mock, check exits 7.
#[track_caller]
fn refused_everywhere(mock: &MockServer, store: &Store, spec: &OwnedSpec, what: &str) {
    let before = mock.stats().requests.total;
    let order_id = spec.order_id.as_str();
    let named = format!("{order_id:?}");
    let c = client(mock, store).unwrap_or_else(|e| panic!("{what}: the client opens: {e}"));
    for (call, result) in [
        ("execute", c.execute(&spec.spec()).map(|_| ())),
        ("resume", c.resume(order_id).map(|_| ())),
        ("status", c.status(order_id).map(|_| ())),
    ] {
        let e = result.expect_err(&format!("{what}: {call} must be refused"));
        assert_eq!(e.code(), ErrorCode::Journal, "{what}: {call}: {e}");
        assert!(e.message().contains(&named), "{what}: {call}: {e}");
    }
    // take_over sees only unsettled rows: refused when it meets the row,
    // never sending it.
    match c.take_over(10) {
        Err(e) => assert!(e.message().contains(&named), "{what}: take_over: {e}"),
        Ok(taken) => assert!(
            taken.iter().all(|(o, _)| o != order_id),
            "{what}: take_over sent it"
        ),
    }
    assert_eq!(mock.stats().requests.total, before, "{what}: nothing sent");
    check_names(store, &named, what);
}

/// An edit of one row: what it is, the order it targets (`o-ok` paid, or
/// `o-dec` declined), and its SQL (`{ops}` names the table; `{older}`
/// stands for `created_at` moved an hour back, `{forged}` for a forged
/// response body, each in the store's own types).
fn row_edits() -> Vec<(&'static str, &'static str, String)> {
    let mut edits: Vec<(&'static str, &'static str, String)> = ["pending", "unknown", "in_flight"]
        .into_iter()
        .map(|state| {
            (
                "settled -> unsettled",
                "o-ok",
                format!("UPDATE {{ops}} SET state = '{state}' WHERE order_id = 'o-ok'"),
            )
        })
        .collect();
    let one = |what: &'static str, order: &'static str, set: &str| {
        (
            what,
            order,
            format!("UPDATE {{ops}} SET {set} WHERE order_id = '{order}'"),
        )
    };
    edits.extend([
        one(
            "rejected -> succeeded",
            "o-dec",
            "state = 'succeeded', response_status = 201",
        ),
        one(
            "succeeded -> rejected",
            "o-ok",
            "state = 'rejected', response_status = 402",
        ),
        one("forged stored response", "o-ok", "response_body = {forged}"),
        one("created_at changed", "o-ok", "{older}"),
        one("key changed", "o-ok", "idempotency_key = 'create-o-other'"),
        one(
            "path changed",
            "o-ok",
            "path = '/v1/payments/pay_x/refunds'",
        ),
        one(
            "body changed with its hash",
            "o-ok",
            "body = (SELECT body FROM {ops} WHERE order_id = 'o-two'), \
             body_sha256 = (SELECT body_sha256 FROM {ops} WHERE order_id = 'o-two')",
        ),
        one(
            "MACs of one row moved onto another",
            "o-ok",
            "row_mac = (SELECT row_mac FROM {ops} WHERE order_id = 'o-two'), \
             state_mac = (SELECT state_mac FROM {ops} WHERE order_id = 'o-two')",
        ),
    ]);
    edits.push((
        "bodies swapped between two orders",
        "o-ok",
        "UPDATE {ops} SET body = (SELECT body FROM {ops} o2 WHERE o2.order_id = \
         CASE WHEN {ops}.order_id = 'o-ok' THEN 'o-two' ELSE 'o-ok' END), \
         body_sha256 = (SELECT body_sha256 FROM {ops} o2 WHERE o2.order_id = \
         CASE WHEN {ops}.order_id = 'o-ok' THEN 'o-two' ELSE 'o-ok' END) \
         WHERE order_id IN ('o-ok', 'o-two')"
            .to_owned(),
    ));
    edits
}

fn every_row_edit_is_refused_and_nothing_is_sent(new_store: fn() -> Store) {
    for (what, order, sql) in row_edits() {
        let mock = start_mock();
        let store = new_store();
        journal_with_history(&mock, &store);
        let forged = match store {
            Store::Sqlite(_) => "CAST('{\"payment_id\":\"pay_forged\"}' AS BLOB)",
            Store::Postgres(_) => "convert_to('{\"payment_id\":\"pay_forged\"}', 'UTF8')",
        };
        let sql = sql
            .replace("{forged}", forged)
            .replace("{older}", &store.older("created_at", 3600));
        store.sql(&sql);
        let spec = if order == "o-dec" {
            declined(order)
        } else {
            paid(order)
        };
        refused_everywhere(&mock, &store, &spec, what);
    }
}

#[test]
fn sqlite_every_row_edit_is_refused_and_nothing_is_sent() {
    every_row_edit_is_refused_and_nothing_is_sent(Store::sqlite);
}

#[test]
fn postgres_every_row_edit_is_refused_and_nothing_is_sent() {
    every_row_edit_is_refused_and_nothing_is_sent(Store::postgres);
}

/// Edits of the seal: the client is refused when it opens the journal,
/// for the reason given, before it writes or sends anything (a seal is
/// never written again over the rows: the injected refund is never sent);
/// MACs set to NULL under an intact seal refuse each row. Check exits 7.
fn seal_edits_refuse_the_client(new_store: fn() -> Store) {
    let edits: [(&str, &str, Option<&str>); 4] = [
        ("seal deleted", "DELETE FROM {seal}", Some("no seal")),
        (
            "every MAC set to NULL",
            "UPDATE {ops} SET row_mac = NULL, state_mac = NULL",
            None,
        ),
        (
            "seal deleted, every MAC NULL, a refund injected",
            "DELETE FROM {seal}; UPDATE {ops} SET row_mac = NULL, state_mac = NULL; \
             INSERT INTO {ops} (order_id, idempotency_key, method, path, body, body_sha256, \
             state, attempts, created_at, updated_at) SELECT 'evil-2', 'refund-evil-2', 'POST', \
             '/v1/payments/pay_1/refunds', body, body_sha256, 'pending', 0, created_at, \
             updated_at FROM {ops} WHERE order_id = 'o-ok'",
            Some("no seal"),
        ),
        (
            "purge horizon moved back",
            "UPDATE {seal} SET purged_before = purged_before + 1",
            Some("purge horizon"),
        ),
    ];
    for (what, sql, refusal) in edits {
        let mock = start_mock();
        let store = new_store();
        journal_with_history(&mock, &store);
        let before = mock.stats().requests.total;
        store.sql(sql);
        match (client(&mock, &store), refusal) {
            (Err(e), Some(why)) => {
                assert_eq!(e.code(), ErrorCode::Journal, "{what}: {e}");
                assert!(e.message().contains(why), "{what}: {e}");
                // Refused again: the refusal wrote no seal.
                let again = client(&mock, &store).map(|_| ()).unwrap_err();
                assert!(again.message().contains(why), "{what}: {again}");
            }
            (Ok(c), None) => {
                for (call, e) in [
                    ("execute", c.execute(&paid("o-ok").spec()).map(|_| ())),
                    ("status", c.status("o-dec").map(|_| ())),
                ]
                .map(|(call, r)| (call, r.expect_err(call)))
                {
                    assert_eq!(e.code(), ErrorCode::Journal, "{what}: {call}: {e}");
                }
            }
            (Err(e), None) => panic!("{what}: the client must open: {e}"),
            (Ok(_), Some(why)) => panic!("{what}: the client must be refused ({why})"),
        }
        assert_eq!(mock.stats().requests.total, before, "{what}: nothing sent");
        let name = if refusal.is_none() {
            "\"o-ok\""
        } else {
            "seal"
        };
        check_names(&store, name, what);
    }
}

#[test]
fn sqlite_seal_edits_refuse_the_client() {
    seal_edits_refuse_the_client(Store::sqlite);
}

#[test]
fn postgres_seal_edits_refuse_the_client() {
    seal_edits_refuse_the_client(Store::postgres);
}

/// A row copied from another journal (same key), and a purged row
/// re-inserted from an earlier copy, are refused.
fn copied_and_reinserted_rows_are_refused(new_store: fn() -> Store) {
    let mock = start_mock();
    let other = new_store();
    let c = client(&mock, &other).unwrap();
    c.execute(&paid("o-copied").spec()).unwrap();
    let copy = other.snapshot("o-copied");
    let store = new_store();
    journal_with_history(&mock, &store);
    store.sql(&copy);
    refused_everywhere(
        &mock,
        &store,
        &paid("o-copied"),
        "row copied from another journal",
    );

    let mock = start_mock();
    let store = new_store();
    journal_with_history(&mock, &store);
    let saved = store.snapshot("o-ok");
    let key = JournalKey::derive_from_secret(DEFAULT_SECRET.as_bytes());
    match &store {
        Store::Sqlite(_) => {
            let j = SqliteJournal::open(
                store.journal(),
                SqliteJournalOptions {
                    journal_key: Some(key),
                    ..SqliteJournalOptions::default()
                },
            )
            .unwrap();
            use payidem::journal::Journal;
            assert!(j.purge_settled(u64::MAX / 4).unwrap() >= 1);
        }
        Store::Postgres(url) => {
            let j = payidem::journal::PostgresJournal::connect(
                url,
                payidem::journal::PostgresJournalOptions {
                    journal_key: Some(key),
                    ..Default::default()
                },
            )
            .unwrap();
            use payidem::journal::Journal;
            assert!(j.purge_settled(u64::MAX / 4).unwrap() >= 1);
        }
    }
    store.sql(&saved);
    refused_everywhere(&mock, &store, &paid("o-ok"), "purged row re-inserted");
}

#[test]
fn sqlite_copied_and_reinserted_rows_are_refused() {
    copied_and_reinserted_rows_are_refused(Store::sqlite);
}

#[test]
fn postgres_copied_and_reinserted_rows_are_refused() {
    copied_and_reinserted_rows_are_refused(Store::postgres);
}

/// A mistyped secret is refused when the client is created, with what to
/// do, and nothing is written; the right secret then works.
#[test]
fn a_wrong_secret_is_refused_at_creation_and_writes_nothing() {
    for store in [Store::sqlite(), Store::postgres()] {
        let mock = start_mock();
        journal_with_history(&mock, &store);
        let count = || store.texts("SELECT CAST(count(*) AS TEXT) FROM {ops}");
        let rows = count();
        let e = Client::new(config(&mock, &store), b"a-mistyped-secret-0123456789").unwrap_err();
        assert_eq!(e.code(), ErrorCode::Journal, "{e}");
        assert!(e.message().contains("another journal key"), "{e}");
        assert!(e.message().contains("payidem journal key"), "{e}");
        assert_eq!(count(), rows, "nothing written");
        client(&mock, &store)
            .unwrap()
            .execute(&paid("o-after").spec())
            .unwrap();
    }
}

/// The same order id through another platform or key id is refused,
/// never answered with the first platform's payment.
#[test]
fn another_platform_or_key_id_never_gets_the_first_ones_answer() {
    for store in [Store::sqlite(), Store::postgres()] {
        let first = start_mock();
        let second = start_mock();
        journal_with_history(&first, &store);
        let on_second = Client::new(
            fast_config(&second.url(), store.choice()),
            DEFAULT_SECRET.as_bytes(),
        )
        .unwrap();
        let e = on_second.execute(&paid("o-ok").spec()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::IdempotencyConflict, "{e}");
        assert!(
            e.message().contains("another platform") || e.message().contains("platform"),
            "{e}"
        );
        assert!(on_second.status("o-ok").is_err());
        assert_eq!(second.stats().requests.total, 0);
        let mut other_key = fast_config(&first.url(), store.choice());
        other_key.key_id = format!("{DEFAULT_KEY_ID}-other");
        let c = Client::new(other_key, DEFAULT_SECRET.as_bytes()).unwrap();
        let e = c.execute(&paid("o-ok").spec()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::IdempotencyConflict, "{e}");
    }
}

/// list, stats, export and check work on a read-only journal file in a
/// read-only directory, and change nothing.
#[test]
fn read_only_commands_work_on_a_read_only_journal() {
    use std::os::unix::fs::PermissionsExt;
    let mock = start_mock();
    let store = Store::sqlite();
    journal_with_history(&mock, &store);
    let Store::Sqlite(dir) = &store else {
        unreachable!()
    };
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let copy = ro.join("journal.sqlite3");
    std::fs::copy(dir.path().join("journal.sqlite3"), &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o400)).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o500)).unwrap();
    let bytes = std::fs::read(&copy).unwrap();
    let journal = copy.to_str().unwrap();
    for args in [
        vec!["journal", "list", "--journal", journal],
        vec!["journal", "stats", "--journal", journal],
        vec!["journal", "export", "--journal", journal],
        vec!["journal", "show", "--journal", journal, "o-ok"],
    ] {
        let out = payidem_env(&args, &[]);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(
            stdout(&out).contains("o-ok") || args[1] == "stats",
            "{args:?}"
        );
    }
    check_names_ok(journal, dir.path());
    assert_eq!(std::fs::read(&copy).unwrap(), bytes, "nothing written");
    let names: Vec<_> = std::fs::read_dir(&ro)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "no -wal or -shm created: {names:?}");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o700)).unwrap();
}

fn check_names_ok(journal: &str, dir: &Path) {
    let secret = dir.join("secret-ro");
    std::fs::write(&secret, DEFAULT_SECRET).unwrap();
    let out = payidem_env(
        &[
            "journal",
            "check",
            "--journal",
            journal,
            "--secret-file",
            secret.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

/// A journal restored from an older copy is consistent (every MAC holds),
/// but `check --against` an export taken since names what went back.
#[test]
fn check_against_an_earlier_export_finds_a_restored_older_copy() {
    use payidem::journal::{Journal, Lease};
    use payidem::operation::OperationState;
    let mock = start_mock();
    let store = Store::sqlite();
    journal_with_history(&mock, &store);
    let Store::Sqlite(dir) = &store else {
        unreachable!()
    };
    let path = dir.path().join("journal.sqlite3");
    let keyed = || {
        SqliteJournal::open(
            &path,
            SqliteJournalOptions {
                journal_key: Some(JournalKey::derive_from_secret(DEFAULT_SECRET.as_bytes())),
                ..SqliteJournalOptions::default()
            },
        )
        .unwrap()
    };
    let lease = Lease {
        owner: "seeder".into(),
        expires_at: common::now() + 60,
    };
    let frozen = client(&mock, &store)
        .unwrap()
        .freeze(&paid("o-unk").spec())
        .unwrap();
    {
        let j = keyed();
        j.open(&frozen, &lease, common::now()).unwrap();
        j.record_attempt("o-unk", &lease, 1, common::now()).unwrap();
        j.finish(
            "o-unk",
            &lease,
            OperationState::Unknown,
            None,
            0,
            common::now(),
        )
        .unwrap();
    }
    let older = dir.path().join("older.sqlite3");
    std::fs::copy(&path, &older).unwrap();
    let export = |name: &str| {
        let out = payidem_env(
            &["journal", "export", "--journal", path.to_str().unwrap()],
            &[],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let file = dir.path().join(name);
        std::fs::write(&file, &out.stdout).unwrap();
        file
    };
    let check_against = |file: &Path| {
        let secret = dir.path().join("secret");
        std::fs::write(&secret, DEFAULT_SECRET).unwrap();
        payidem_env(
            &[
                "journal",
                "check",
                "--journal",
                path.to_str().unwrap(),
                "--secret-file",
                secret.to_str().unwrap(),
                "--against",
                file.to_str().unwrap(),
            ],
            &[],
        )
    };
    // Settled since the copy: restoring the copy takes it back to unknown.
    {
        let j = keyed();
        j.claim("o-unk", &lease, common::now() + 1).unwrap();
        j.finish(
            "o-unk",
            &lease,
            OperationState::Succeeded,
            None,
            0,
            common::now() + 1,
        )
        .unwrap();
    }
    let settled = export("settled.json");
    let out = check_against(&settled);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    std::fs::copy(&older, &path).unwrap();
    let out = check_against(&settled);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(7), "{text}{}", stderr(&out));
    assert!(text.contains("\"o-unk\" went back"), "{text}");
    // Unknown in an export and gone now: deleted or rolled back further.
    let unknown = export("unknown.json");
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute("DELETE FROM operations WHERE order_id = 'o-unk'", [])
        .unwrap();
    drop(c);
    let out = check_against(&unknown);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(7), "{text}");
    assert!(
        text.contains("\"o-unk\" was unknown in the export and is gone"),
        "{text}"
    );
}

/// A row edited into a state that does not exist is listed as invalid,
/// exported and counted, never dropped from an audit.
#[test]
fn a_row_in_an_unknown_state_is_listed_exported_and_counted() {
    let mock = start_mock();
    let store = Store::sqlite();
    journal_with_history(&mock, &store);
    store.sql("UPDATE {ops} SET state = 'exploded' WHERE order_id = 'o-ok'");
    let journal = store.journal();
    let run = |args: &[&str]| {
        let mut all = vec!["journal", args[0], "--journal", journal.as_str()];
        all.extend(&args[1..]);
        let out = payidem_env(&all, &[]);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    let text = run(&["list"]);
    assert!(text.contains("INVALID") && text.contains("o-ok"), "{text}");
    assert!(text.contains("unknown state"), "{text}");
    let text = run(&["list", "--state", "succeeded"]);
    assert!(
        text.contains("INVALID") && text.contains("o-ok"),
        "filtered: {text}"
    );
    let export: serde_json::Value = serde_json::from_str(&run(&["export"])).unwrap();
    assert_eq!(
        export["invalid_operations"][0]["order_id"], "o-ok",
        "{export}"
    );
    assert_eq!(
        export["operations"].as_array().unwrap().len(),
        2,
        "{export}"
    );
    let stats = run(&["stats"]);
    assert!(
        stats
            .lines()
            .any(|l| l.split_whitespace().eq(["invalid", "1"])),
        "{stats}"
    );
    let prometheus = run(&["stats", "--prometheus"]);
    assert!(
        prometheus.contains("payidem_journal_operations{state=\"invalid\"} 1"),
        "{prometheus}"
    );
}

/// `payidem journal resume` sends only the operations made for the
/// platform and key id it is given: another platform's unknown operation
/// is neither listed by `--all` nor sent by name.
#[test]
fn resume_never_sends_another_platforms_operation() {
    use payidem::journal::{Journal, JournalScope, Lease};
    use payidem::operation::OperationState;
    let first = start_mock();
    let second = start_mock();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let frozen = Client::new(
        fast_config(&first.url(), JournalChoice::Memory),
        DEFAULT_SECRET.as_bytes(),
    )
    .unwrap()
    .freeze(&paid("o-first").spec())
    .unwrap();
    {
        let j = SqliteJournal::open(
            &path,
            SqliteJournalOptions {
                journal_key: Some(JournalKey::derive_from_secret(DEFAULT_SECRET.as_bytes())),
                scope: Some(JournalScope {
                    platform: payidem::journal::platform_origin(&first.url()),
                    key_id: DEFAULT_KEY_ID.to_owned(),
                }),
                ..SqliteJournalOptions::default()
            },
        )
        .unwrap();
        let lease = Lease {
            owner: "gone".into(),
            expires_at: common::now() - 1,
        };
        j.open(&frozen, &lease, common::now()).unwrap();
        j.record_attempt("o-first", &lease, 1, common::now())
            .unwrap();
        j.finish(
            "o-first",
            &lease,
            OperationState::Unknown,
            None,
            0,
            common::now(),
        )
        .unwrap();
    }
    let secret = dir.path().join("secret");
    std::fs::write(&secret, DEFAULT_SECRET).unwrap();
    let resume = |url: &str, target: &str| {
        let mut args = vec![
            "journal",
            "resume",
            "--journal",
            path.to_str().unwrap(),
            "--base-url",
            url,
            "--key-id",
            DEFAULT_KEY_ID,
            "--secret-file",
            secret.to_str().unwrap(),
        ];
        args.push(target);
        payidem_env(&args, &[])
    };
    let all = resume(&second.url(), "--all");
    assert!(all.status.success(), "{}", stderr(&all));
    assert!(!stdout(&all).contains("o-first"), "{}", stdout(&all));
    let named = resume(&second.url(), "o-first");
    assert!(!named.status.success(), "{}", stdout(&named));
    assert!(
        stderr(&named).contains("idempotency_conflict"),
        "{}",
        stderr(&named)
    );
    assert_eq!(
        second.stats().requests.total,
        0,
        "nothing sent to the other platform"
    );
    // Its own platform resumes it.
    let own = resume(&first.url(), "o-first");
    assert!(own.status.success(), "{}{}", stdout(&own), stderr(&own));
    assert_eq!(first.stats().orders["o-first"].payments_created, 1);
}
