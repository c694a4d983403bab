//! One worker process of the chaos test: resumes the shared journal's
//! unknown operations, then drives every planned order to a settled outcome.
//! Killed with SIGKILL at random moments by the test.
//!
//! ```text
//! payidem-chaos-worker --url http://127.0.0.1:PORT --journal j.sqlite3 \
//!     --events events.log --prefix chaos --orders 2000 --threads 12 --seed 1 \
//!     [--crash written:N | fsynced:N | durable:N]
//! ```
//!
//! `--crash` (test only) makes the worker SIGKILL itself the N-th time its
//! journal reaches that point of the durable write path: a first attempt's
//! record committed but not fsync'd (`written`), a leader's fsync returned
//! before it tells the callers it covers (`fsynced`), or a record durable
//! just before its attempt is sent (`durable`).

use std::process::ExitCode;

use payidem_e2e::worker::{run, WorkerArgs};

fn main() -> ExitCode {
    let args = match WorkerArgs::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("payidem-chaos-worker: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(summary) => {
            println!(
                "resumed {} payments {} declined {} refunds {}",
                summary.resumed, summary.payments, summary.declined, summary.refunds
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("payidem-chaos-worker: {e}");
            ExitCode::FAILURE
        }
    }
}
