//! Runs N payments through a payidem client with a SQLite journal in a
//! temporary directory, from T threads sharing the client, against an
//! in-process mock platform (which never syncs anything), so that
//! `strace -f -c -e trace=fsync,fdatasync` counts the journal's syncs:
//!
//! ```text
//! strace -f -c -e trace=fsync,fdatasync target/release/payidem-fsync-probe 200
//! strace -f -c -e trace=fsync,fdatasync target/release/payidem-fsync-probe 400
//! strace -f -c -e trace=fsync,fdatasync target/release/payidem-fsync-probe 800 16
//! strace -f -c -e trace=fsync,fdatasync target/release/payidem-fsync-probe 1600 16
//! ```
//!
//! The difference of two counts divided by the difference of operations is
//! the syncs per settled operation (opening the journal costs a few of its
//! own). The probe also prints the journal's own count of group-commit
//! fsyncs (SQLite's checkpoint syncs are not in it).

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use payidem::journal::{SqliteJournal, SqliteJournalOptions};
use payidem::JournalChoice;
use payidem_e2e::{client, start_mock, OwnedSpec};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let (count, threads) = match (args.next(), args.next()) {
        (None, _) => (200, 1),
        (Some(Ok(n)), None) => (n, 1),
        (Some(Ok(n)), Some(Ok(t))) if t > 0 => (n, t),
        _ => {
            eprintln!("usage: payidem-fsync-probe [operations] [threads]");
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
    let journal = match SqliteJournal::open(
        dir.path().join("journal.sqlite3"),
        SqliteJournalOptions::default(),
    ) {
        Ok(j) => Arc::new(j),
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mock = start_mock();
    let client = client(&mock.url(), JournalChoice::Custom(journal.clone()));
    let stamp = std::process::id();
    let next = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    break;
                }
                let spec = OwnedSpec::payment(
                    &format!("probe-{stamp}-{i}"),
                    1000 + (i % 400) as u64,
                    true,
                );
                if let Err(e) = client.execute(&spec.spec()) {
                    eprintln!("operation {i}: {e}");
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    if failed.load(Ordering::Relaxed) > 0 {
        return ExitCode::FAILURE;
    }
    let stats = journal.durability_stats();
    println!(
        "{count} operations settled from {threads} thread(s); group commit: {} fsyncs for {} durable writes",
        stats.fsyncs, stats.durable_writes
    );
    ExitCode::SUCCESS
}
