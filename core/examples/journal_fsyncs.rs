//! Runs N operations through the fast path of a `SqliteJournal`
//! (open → record_attempt → finish(Succeeded)) so the fsyncs can be counted:
//!
//! ```text
//! cargo build --release -p payidem --example journal_fsyncs
//! strace -f -c -e trace=fsync,fdatasync target/release/examples/journal_fsyncs 1000
//! strace -f -c -e trace=fsync,fdatasync target/release/examples/journal_fsyncs 2000
//! ```
//!
//! The difference between the two counts divided by 1000 is the fsyncs per
//! operation (opening the file costs a few of its own). Arguments: the
//! number of operations (default 1000) and, optionally, the journal file
//! (default a fresh file in a temporary directory).

use std::process::ExitCode;

use payidem::journal::{Journal, Lease, SqliteJournal, SqliteJournalOptions};
use payidem::operation::{FrozenOperation, OperationState, Response};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let count: u32 = match args.next().map(|a| a.parse()) {
        None => 1000,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("usage: journal_fsyncs [operations] [journal file]");
            return ExitCode::from(2);
        }
    };
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("cannot create a temporary directory: {e}");
            return ExitCode::FAILURE;
        }
    };
    let path = args
        .next()
        .map(Into::into)
        .unwrap_or_else(|| dir.path().join("journal.db"));
    match run(&path, count) {
        Ok(()) => {
            println!("{count} operations journaled in {}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn run(path: &std::path::Path, count: u32) -> payidem::Result<()> {
    let journal = SqliteJournal::open(path, SqliteJournalOptions::default())?;
    let lease = Lease {
        owner: "journal_fsyncs".into(),
        expires_at: 2_000_000_000,
    };
    let response = Response {
        status: 201,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: br#"{"id":"pay_1","status":"captured"}"#.to_vec(),
        replayed: false,
    };
    let now = 1_700_000_000;
    let stamp = std::process::id();
    for i in 0..count {
        let body = format!(r#"{{"amount":{i},"currency":"EUR"}}"#).into_bytes();
        let operation = FrozenOperation {
            order_id: format!("order-{stamp}-{i}"),
            idempotency_key: format!("key-{stamp}-{i}"),
            method: "POST".into(),
            path: "/payments".into(),
            body_sha256: format!("{:064x}", i),
            body,
            status_path: None,
        };
        journal.open(&operation, &lease, now)?;
        journal.record_attempt(&operation.order_id, &lease, 1, now)?;
        journal.finish(
            &operation.order_id,
            &lease,
            OperationState::Succeeded,
            Some(&response),
            0,
            now,
        )?;
    }
    Ok(())
}
