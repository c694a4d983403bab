//! One worker process of the chaos test: resumes the shared journal's
//! unknown operations, then drives every planned order to a settled outcome.
//! Killed with SIGKILL at random moments by the test.
//!
//! ```text
//! payidem-chaos-worker --url http://127.0.0.1:PORT --journal j.sqlite3 \
//!     --events events.log --prefix chaos --orders 2000 --threads 12 --seed 1
//! ```

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
