//! Reading a SQLite journal (core/src/journal/sqlite.rs) whose rows hold
//! arbitrary values of any SQLite type: the fuzzer writes up to three rows
//! straight into the `operations` table, then the journal lists, gets,
//! claims, opens, records, finishes and purges. No panic; a row it cannot
//! read is a `journal_error`, never a wrong answer or a crash.
#![no_main]

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use payidem::journal::{process_owner, Journal, Lease, SqliteJournal, SqliteJournalOptions};
use payidem::operation::{FrozenOperation, OperationState};
use payidem::ErrorCode;
use rusqlite::types::Value;

#[derive(Arbitrary, Debug, Clone)]
enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
    /// A plausible value for the column, so rows get past the first check.
    Good,
}

const COLUMNS: [(&str, &str); 17] = [
    ("order_id", "'ord-1'"),
    ("idempotency_key", "'create-ord-1'"),
    ("method", "'POST'"),
    ("path", "'/v1/payments'"),
    ("body", "X'7B7D'"),
    (
        "body_sha256",
        "'44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a'",
    ),
    ("status_path", "NULL"),
    ("state", "'unknown'"),
    ("attempts", "1"),
    ("created_at", "1700000000"),
    ("updated_at", "1700000000"),
    ("lease_owner", "NULL"),
    ("lease_expires", "NULL"),
    ("response_status", "NULL"),
    ("response_headers", "NULL"),
    ("response_body", "NULL"),
    ("response_replayed", "NULL"),
];

#[derive(Arbitrary, Debug)]
struct Input {
    rows: Vec<[Cell; 17]>,
    now: u64,
    attempts: u32,
    state: u8,
}

struct Files {
    journal: SqliteJournal,
    raw: rusqlite::Connection,
}

fn files() -> &'static Mutex<Files> {
    static FILES: OnceLock<Mutex<Files>> = OnceLock::new();
    FILES.get_or_init(|| {
        let dir = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        // libFuzzer ends with exit(), so directories of earlier runs whose
        // process is gone are removed here.
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some(rest) = name.strip_prefix("payidem-fuzz-journal-") else {
                    continue;
                };
                let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
                if !pid.is_empty() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                    let _ = std::fs::remove_dir_all(entry.path());
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        // A private directory (0700): the journal refuses a directory every
        // user may write to, such as /dev/shm itself.
        let private = dir.join(format!("payidem-fuzz-journal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&private);
        std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
            .create(&private)
            .unwrap();
        let path = private.join("journal.sqlite3");
        let journal = SqliteJournal::open(&path, SqliteJournalOptions::default()).unwrap();
        let raw = rusqlite::Connection::open(&path).unwrap();
        Mutex::new(Files { journal, raw })
    })
}

fn value(cell: &Cell) -> Option<Value> {
    Some(match cell {
        Cell::Null => Value::Null,
        Cell::Int(i) => Value::Integer(*i),
        Cell::Real(f) => Value::Real(*f),
        Cell::Text(s) => Value::Text(s.clone()),
        Cell::Blob(b) => Value::Blob(b.clone()),
        Cell::Good => return None,
    })
}

fn allowed(result: payidem::Result<impl Sized>, also: &[ErrorCode]) {
    if let Err(e) = result {
        assert!(
            e.code() == ErrorCode::Journal || also.contains(&e.code()),
            "unexpected {e:?}"
        );
    }
}

fuzz_target!(|input: Input| {
    let files = files().lock().unwrap_or_else(|p| p.into_inner());
    files.raw.execute("DELETE FROM operations", []).unwrap();
    let mut order_ids = vec!["ord-1".to_owned()];
    for row in input.rows.iter().take(3) {
        let mut names = Vec::new();
        let mut exprs = Vec::new();
        let mut params: Vec<Value> = Vec::new();
        for ((name, good), cell) in COLUMNS.iter().zip(row.iter()) {
            names.push(*name);
            match value(cell) {
                Some(v) => {
                    params.push(v);
                    exprs.push(format!("?{}", params.len()));
                }
                None => exprs.push((*good).to_owned()),
            }
        }
        if let Cell::Text(id) = &row[0] {
            order_ids.push(id.clone());
        }
        let sql = format!(
            "INSERT OR REPLACE INTO operations ({}) VALUES ({})",
            names.join(", "),
            exprs.join(", ")
        );
        // NOT NULL and UNIQUE refuse some rows, as they would in a real file.
        let _ = files.raw.execute(&sql, rusqlite::params_from_iter(params));
    }
    let j = &files.journal;
    // The journal refuses a clock past i64::MAX (SQLite integers) with
    // invalid_argument naming `now`; inside that range everything goes.
    let now = input.now & (i64::MAX as u64);
    allowed(j.list(&OperationState::ALL), &[]);
    let lease = Lease {
        owner: process_owner("fuzz", 1),
        expires_at: now.saturating_add(120),
    };
    for id in &order_ids {
        allowed(j.get(id), &[]);
        allowed(
            j.claim(id, &lease, now),
            &[ErrorCode::InvalidArgument, ErrorCode::OperationBusy],
        );
        allowed(
            j.record_attempt(id, &lease, input.attempts, now),
            &[ErrorCode::InvalidArgument, ErrorCode::OperationBusy],
        );
        let state = OperationState::ALL[usize::from(input.state) % 6];
        allowed(
            j.finish(id, &lease, state, None, 0, now),
            &[ErrorCode::InvalidArgument, ErrorCode::OperationBusy],
        );
        allowed(j.release(id, &lease), &[ErrorCode::InvalidArgument]);
    }
    let op = FrozenOperation {
        order_id: "ord-1".into(),
        idempotency_key: "create-ord-1".into(),
        method: "POST".into(),
        path: "/v1/payments".into(),
        body: b"{}".to_vec(),
        body_sha256: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a".into(),
        status_path: None,
    };
    allowed(
        j.open(&op, &lease, now),
        &[ErrorCode::IdempotencyConflict, ErrorCode::OperationBusy],
    );
    allowed(
        j.list(&[OperationState::Unknown, OperationState::InFlight]),
        &[],
    );
    allowed(j.purge_settled(now), &[]);
});
