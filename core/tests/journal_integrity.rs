//! Journal integrity on a real SQLite file: every immutable column altered
//! with raw SQL, and rows injected with a forged or no MAC, are refused by
//! every read that can lead to a send (open, claim, claim_next, get, list)
//! with `journal_error` naming the order id; `check` names them all; a v2
//! journal migrates, its legacy rows are sealed by the first keyed handle
//! and keep working; world-writable directories are refused. The same
//! over the mock platform (nothing sent) and on PostgreSQL is in
//! e2e/tests/journal_integrity.rs.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use payidem::journal::{
    Journal, JournalKey, Lease, Opened, SqliteJournal, SqliteJournalOptions, StoredClockOffset,
    SCHEMA_VERSION,
};
use payidem::operation::{FrozenOperation, OperationState};
use payidem::{Client, ClientConfig, Error, ErrorCode, JournalChoice};

mod fixtures;
use fixtures::op;

const SECRET: &[u8] = b"integrity-test-secret-0123456789";

fn lease(owner: &str) -> Lease {
    Lease {
        owner: owner.into(),
        expires_at: 200,
    }
}

fn key() -> JournalKey {
    JournalKey::derive_from_secret(SECRET)
}

/// A handle with the client's key, sealed as a client's is.
fn keyed(path: &Path) -> SqliteJournal {
    keyed_open(path).unwrap()
}

fn keyed_open(path: &Path) -> Result<SqliteJournal, Error> {
    SqliteJournal::open(
        path,
        SqliteJournalOptions {
            journal_key: Some(key()),
            ..SqliteJournalOptions::default()
        },
    )
}

fn unkeyed(path: &Path) -> SqliteJournal {
    SqliteJournal::open(path, SqliteJournalOptions::default()).unwrap()
}

/// Writes an unsettled (unknown) operation through a keyed handle.
fn put_unknown(path: &Path, order_id: &str) {
    let j = keyed(path);
    let l = lease("writer");
    j.open(&op(order_id), &l, 10).unwrap();
    j.record_attempt(order_id, &l, 1, 11).unwrap();
    j.finish(order_id, &l, OperationState::Unknown, None, 0, 12)
        .unwrap();
}

fn raw(path: &Path, sql: &str) {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(sql)
        .unwrap();
}

#[track_caller]
fn assert_refused(result: Result<impl std::fmt::Debug, Error>, order_id: &str) {
    let e = result.expect_err("a tampered row must be refused");
    assert_eq!(e.code(), ErrorCode::Journal, "{e}");
    assert!(
        e.message().contains(&format!("{order_id:?}")),
        "the refusal names the order id: {e}"
    );
    assert!(
        e.message().contains("integrity") || e.message().contains("MAC"),
        "{e}"
    );
    // Never the key material.
    let hex = JournalKey::derived_hex(SECRET);
    assert!(!e.message().contains(&hex[..16]), "{e}");
}

/// Every read path that could lead to a send refuses `order_id`.
fn assert_every_read_refuses(j: &SqliteJournal, order_id: &str, as_frozen: &FrozenOperation) {
    assert_refused(j.get(order_id), order_id);
    assert_refused(j.claim(order_id, &lease("resumer"), 20), order_id);
    assert_refused(j.claim_next(&lease("taker"), 20), order_id);
    assert_refused(
        j.list(&[OperationState::Unknown, OperationState::InFlight]),
        order_id,
    );
    assert_refused(j.open(as_frozen, &lease("opener"), 20), order_id);
    assert_refused(
        j.reconcile(order_id, OperationState::Succeeded, "op", "ref", 20),
        order_id,
    );
}

#[test]
fn a_change_to_any_immutable_column_is_refused_by_every_read_and_named_by_check() {
    let columns: [(&str, &str); 7] = [
        ("order_id", "UPDATE operations SET order_id = 'o-evil' WHERE order_id = 'o'"),
        ("idempotency_key", "UPDATE operations SET idempotency_key = 'create-o2' WHERE order_id = 'o'"),
        ("method", "UPDATE operations SET method = 'PUT' WHERE order_id = 'o'"),
        ("path", "UPDATE operations SET path = '/v1/refunds' WHERE order_id = 'o'"),
        // Both changed together, so that the row still reads back valid.
        ("body and body_sha256", "UPDATE operations SET body = CAST('{\"amount\":9999}' AS BLOB), body_sha256 = '__HASH__' WHERE order_id = 'o'"),
        ("body_sha256", "UPDATE operations SET body_sha256 = '__HASH__' WHERE order_id = 'o'"),
        ("status_path", "UPDATE operations SET status_path = '/v1/payments?order_id=other' WHERE order_id = 'o'"),
    ];
    let evil_hash = payidem::protocol::body_sha256_hex(b"{\"amount\":9999}");
    for (column, sql) in columns {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.sqlite3");
        put_unknown(&path, "o");
        raw(&path, &sql.replace("__HASH__", &evil_hash));
        let order_id = if column == "order_id" { "o-evil" } else { "o" };
        // What a caller executing the tampered request would freeze.
        let mut frozen = op("o");
        frozen.order_id = order_id.into();
        let j = keyed(&path);
        assert_every_read_refuses(&j, order_id, &frozen);
        let report = j.check().unwrap();
        assert!(report.macs_verified);
        assert!(!report.is_sound(), "{column}");
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.contains(&format!("{order_id:?}")) && p.contains("integrity check")),
            "{column}: {:?}",
            report.problems
        );
        // Unchanged by the refusals: still unknown, no lease taken.
        let state: String = rusqlite::Connection::open(&path)
            .unwrap()
            .query_row(
                "SELECT state || '/' || IFNULL(lease_owner, '-') FROM operations",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(state, "unknown/-", "{column}");
        // A handle without the key reads it (tools that only look), and
        // its check says it could not verify MACs.
        let plain = unkeyed(&path);
        assert!(plain.get(order_id).unwrap().is_some());
        assert!(!plain.check().unwrap().macs_verified);
    }
}

/// A holder writes without reading its row again only while the row is
/// what it wrote itself: a state edited behind it (the MAC left as it was)
/// is read, refused, and not written over.
#[test]
fn a_state_edited_behind_the_holder_is_refused_by_its_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let j = keyed(&path);
    let l = lease("holder");
    for (order_id, edit) in [
        ("o-attempts", "attempts = 7"),
        ("o-state", "state = 'unknown'"),
        ("o-mac", "state_mac = row_mac"),
    ] {
        j.open_to_send(&op(order_id), &l, 10).unwrap();
        raw(
            &path,
            &format!("UPDATE operations SET {edit} WHERE order_id = '{order_id}'"),
        );
        assert_refused(j.record_attempt(order_id, &l, 2, 11), order_id);
        assert_refused(
            j.finish(order_id, &l, OperationState::Succeeded, None, 2, 12),
            order_id,
        );
        // Nothing written over the edit: every read still refuses it.
        assert_refused(j.get(order_id), order_id);
    }
}

#[test]
fn injected_rows_with_a_forged_or_no_mac_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    put_unknown(&path, "good");
    let body = "{\"order_id\":\"inj\",\"amount\":5}";
    let hash = payidem::protocol::body_sha256_hex(body.as_bytes());
    let forged = "ab".repeat(32);
    for (order_id, mac) in [
        ("inj-none", "NULL".to_owned()),
        ("inj-forged", format!("'{forged}'")),
    ] {
        raw(
            &path,
            &format!(
                "INSERT INTO operations (order_id, idempotency_key, method, path, body, body_sha256,
                     status_path, state, attempts, created_at, updated_at, row_mac)
                 VALUES ('{order_id}', 'create-{order_id}', 'POST', '/v1/refunds', CAST('{body}' AS BLOB),
                     '{hash}', NULL, 'pending', 0, 1, 1, {mac})"
            ),
        );
    }
    let j = keyed(&path);
    for order_id in ["inj-none", "inj-forged"] {
        assert_refused(j.get(order_id), order_id);
        assert_refused(j.claim(order_id, &lease("r"), 20), order_id);
    }
    // The oldest unsettled row is an injected one: take-over refuses.
    assert!(j.claim_next(&lease("taker"), 20).is_err());
    // The sound row still works.
    assert!(matches!(
        j.claim("good", &lease("r"), 20).unwrap(),
        Opened::Resumable(_)
    ));
    let report = j.check().unwrap();
    assert_eq!(report.problems.len(), 2, "{:?}", report.problems);
    let all = report.problems.join("\n");
    assert!(
        all.contains("\"inj-none\"") && all.contains("no integrity MAC"),
        "{all}"
    );
    assert!(all.contains("\"inj-forged\""), "{all}");
}

#[test]
fn another_journal_key_refuses_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    put_unknown(&path, "o");
    // A handle with another key is refused when it opens the journal,
    // before it reads or writes anything.
    let e = SqliteJournal::open(
        &path,
        SqliteJournalOptions {
            journal_key: Some(JournalKey::derive_from_secret(
                b"a-rotated-secret-0123456789",
            )),
            ..SqliteJournalOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Journal);
    assert!(
        e.message().contains("sealed under another journal key"),
        "{e}"
    );
    // The old derived key, set explicitly, reads it.
    let old = JournalKey::derived_hex(SECRET);
    let bytes: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&old[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let j = SqliteJournal::open(
        &path,
        SqliteJournalOptions {
            journal_key: Some(JournalKey::new(&bytes).unwrap()),
            ..SqliteJournalOptions::default()
        },
    )
    .unwrap();
    assert!(j.get("o").unwrap().is_some());
}

/// A journal as schema version 2 wrote it: today's file without the MAC
/// column, the clock offset table and the seal, with the second state
/// index.
fn make_version_2(path: &Path) {
    let j = unkeyed(path);
    for id in ["legacy-unknown", "legacy-pending"] {
        j.open(&op(id), &lease("old"), 5).unwrap();
    }
    j.record_attempt("legacy-unknown", &lease("old"), 1, 6)
        .unwrap();
    j.finish(
        "legacy-unknown",
        &lease("old"),
        OperationState::Unknown,
        None,
        0,
        7,
    )
    .unwrap();
    j.release("legacy-pending", &lease("old")).unwrap();
    drop(j);
    raw(
        path,
        "DROP TABLE clock_offsets;
         DROP TABLE seal;
         ALTER TABLE operations DROP COLUMN row_mac;
         ALTER TABLE operations DROP COLUMN platform;
         ALTER TABLE operations DROP COLUMN key_id;
         ALTER TABLE operations DROP COLUMN state_mac;
         CREATE INDEX operations_by_state_updated ON operations (state, updated_at);
         DROP INDEX operations_unsettled;
         CREATE INDEX operations_by_state ON operations (state, created_at);
         UPDATE meta SET value = 2 WHERE key = 'schema_version';",
    );
}

#[test]
fn a_version_2_journal_migrates_without_a_key_and_is_refused_with_one() {
    assert_eq!(SCHEMA_VERSION, 5);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    make_version_2(&path);
    // A keyed handle cannot authenticate MAC-less rows: refused, unchanged.
    let e = keyed_open(&path).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Journal);
    assert!(e.message().contains("\"legacy-unknown\""), "{e}");
    assert!(e.message().contains("left untouched"), "{e}");
    // Without a key it migrates, unsealed, and keeps working as before.
    let j = unkeyed(&path);
    let report = j.check().unwrap();
    assert_eq!(report.migrated_from, Some(2));
    assert!(
        report.problems.iter().any(|p| p.contains("not sealed")),
        "{report:?}"
    );
    assert!(matches!(
        j.claim("legacy-unknown", &lease("new"), 20).unwrap(),
        Opened::Resumable(r) if r.attempts == 1
    ));
    drop(j);
    // Once unsealed with rows, a keyed handle refuses it: a seal is never
    // written over rows nobody authenticated.
    let e = keyed_open(&path).unwrap_err();
    assert!(e.message().contains("no seal"), "{e}");
}

/// The indexes of the operations table, by name.
fn operation_indexes(path: &Path) -> Vec<String> {
    rusqlite::Connection::open(path)
        .unwrap()
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'operations'
             ORDER BY name",
        )
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// A keyed journal of schema 4 (its index over every row's state and
/// creation time in place of today's over the unsettled rows) holding an
/// operation in flight and a settled one migrates to schema 5: the
/// operation in flight is listed, claimed once its lease has expired,
/// finished and purged, every MAC still checked.
#[test]
fn a_version_4_journal_migrates_to_one_index_over_the_unsettled_rows() {
    assert_eq!(SCHEMA_VERSION, 5);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    {
        let j = keyed(&path);
        j.open_to_send(&op("in-flight"), &lease("old"), 10).unwrap();
        j.open_to_send(&op("settled"), &lease("old"), 11).unwrap();
        j.finish(
            "settled",
            &lease("old"),
            OperationState::Succeeded,
            None,
            1,
            12,
        )
        .unwrap();
    }
    raw(
        &path,
        "DROP INDEX operations_unsettled;
         CREATE INDEX operations_by_state ON operations (state, created_at);
         UPDATE meta SET value = 4 WHERE key = 'schema_version';",
    );
    assert!(operation_indexes(&path).contains(&"operations_by_state".to_owned()));

    let j = keyed(&path);
    let report = j.check().unwrap();
    assert_eq!(report.migrated_from, Some(4));
    assert_eq!(report.schema_version, Some(SCHEMA_VERSION));
    assert!(report.is_sound(), "{report:?}");
    assert_eq!(
        operation_indexes(&path),
        [
            "operations_unsettled",
            "sqlite_autoindex_operations_1",
            "sqlite_autoindex_operations_2"
        ]
    );
    let unsettled = [
        OperationState::Pending,
        OperationState::InFlight,
        OperationState::Unknown,
    ];
    let listed: Vec<String> = j
        .list(&unsettled)
        .unwrap()
        .into_iter()
        .map(|r| r.operation.order_id)
        .collect();
    assert_eq!(listed, ["in-flight"]);
    // The old lease ends at 200: before, the operation is busy; after, the
    // takeover claims it with its attempt kept.
    let new = Lease {
        owner: "new".into(),
        expires_at: 400,
    };
    assert!(j.claim_next(&new, 150).unwrap().is_none());
    assert!(matches!(
        j.claim_next(&new, 300).unwrap(),
        Some(Opened::Resumable(r)) if r.operation.order_id == "in-flight" && r.attempts == 1
    ));
    j.finish("in-flight", &new, OperationState::Succeeded, None, 1, 301)
        .unwrap();
    assert!(j.list(&unsettled).unwrap().is_empty());
    assert_eq!(j.list(&[OperationState::Succeeded]).unwrap().len(), 2);
    // Purged by their update time: the one settled at 12 first.
    assert_eq!(j.purge_settled(100).unwrap(), 1);
    assert_eq!(j.get("settled").unwrap(), None);
    assert_eq!(j.purge_settled(302).unwrap(), 1);
    assert_eq!(j.get("in-flight").unwrap(), None);
    assert!(j.check().unwrap().is_sound());
    drop(j);
    // Reopened: nothing left to migrate.
    assert_eq!(keyed(&path).check().unwrap().migrated_from, None);
}

#[test]
fn a_world_writable_directory_is_refused_by_the_journal_and_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let path = shared.join("journal.sqlite3");
    let e = SqliteJournal::open(&path, SqliteJournalOptions::default()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Journal);
    assert!(e.message().contains(&shared.display().to_string()), "{e}");
    assert!(e.message().contains("writable by every user"), "{e}");
    assert!(!path.exists(), "nothing is created in a refused directory");
    let mut config = ClientConfig::new("http://127.0.0.1:9", "k");
    config.journal = JournalChoice::Sqlite(path.clone());
    let e = Client::new(config, SECRET).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Journal, "{e}");
    // Group-writable is accepted.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o770)).unwrap();
    SqliteJournal::open(&path, SqliteJournalOptions::default()).unwrap();
    // A file every user can write is refused; one they can read is
    // reported by check.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let e = SqliteJournal::open(&path, SqliteJournalOptions::default()).unwrap_err();
    assert!(e.message().contains("chmod 600"), "{e}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let report = unkeyed(&path).check().unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("readable by every user")),
        "{report:?}"
    );
}

#[test]
fn clock_offsets_are_kept_per_platform_across_handles() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let j = unkeyed(&path);
    assert_eq!(j.clock_offset("https://a:443").unwrap(), None);
    for (platform, offset_secs, measured_at) in [
        ("https://a:443", 500, 100),
        ("https://b:443", -20, 90),
        ("https://a:443", 480, 110),
    ] {
        j.save_clock_offset(&StoredClockOffset {
            platform: platform.into(),
            offset_secs,
            measured_at,
        })
        .unwrap();
    }
    drop(j);
    let j = unkeyed(&path);
    assert_eq!(
        j.clock_offset("https://a:443").unwrap(),
        Some(StoredClockOffset {
            platform: "https://a:443".into(),
            offset_secs: 480,
            measured_at: 110
        })
    );
    let all = j.clock_offsets().unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[1].offset_secs, -20);
}
