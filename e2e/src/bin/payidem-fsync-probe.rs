//! Runs N payments through a payidem client with a SQLite journal in a
//! temporary directory, against an in-process mock platform (which never
//! syncs anything), so that `strace -f -c -e trace=fsync,fdatasync` counts
//! the journal's syncs:
//!
//! ```text
//! strace -f -c -e trace=fsync,fdatasync target/release/payidem-fsync-probe 200
//! strace -f -c -e trace=fsync,fdatasync target/release/payidem-fsync-probe 400
//! ```
//!
//! The difference of the two counts divided by 200 is the syncs per
//! successful operation (opening the journal costs a few of its own).

use std::process::ExitCode;

use payidem::JournalChoice;
use payidem_e2e::{client, start_mock, OwnedSpec};

fn main() -> ExitCode {
    let count: usize = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 200,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("usage: payidem-fsync-probe [operations]");
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
    let mock = start_mock();
    let client = client(
        &mock.url(),
        JournalChoice::Sqlite(dir.path().join("journal.sqlite3")),
    );
    let stamp = std::process::id();
    for i in 0..count {
        let spec = OwnedSpec::payment(&format!("probe-{stamp}-{i}"), 1000 + (i % 400) as u64, true);
        if let Err(e) = client.execute(&spec.spec()) {
            eprintln!("operation {i}: {e}");
            return ExitCode::FAILURE;
        }
    }
    println!("{count} operations settled");
    ExitCode::SUCCESS
}
