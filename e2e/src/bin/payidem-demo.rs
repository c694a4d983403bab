//! The payidem demo: a few hundred payments and refunds through the client
//! against the mock platform with every fault kind switched on, a worker
//! process killed with SIGKILL mid-run and resumed from its SQLite journal,
//! and the platform's own count of payments per order at the end.
//!
//! `make demo` (or `cargo run --release -p payidem-e2e --bin payidem-demo`).
//! Exits non-zero if any invariant fails.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use payidem_e2e::chaos_faults;
use payidem_e2e::plan::Plan;
use payidem_e2e::report::Figures;
use payidem_e2e::worker::{self, WorkerArgs};
use payidem_mock::FaultKind;

const ORDERS: usize = 300;
const THREADS: usize = 8;
const KILLS: usize = 2;
const SEED: u64 = 42;

/// Children killed when dropped, so an early return leaves nothing behind.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            sigkill(&mut self.0);
        }
    }
}

fn sigkill(child: &mut Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) on our own child, not yet reaped.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let _ = child.wait();
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("worker") {
        return match WorkerArgs::parse(args).and_then(|a| worker::run(&a)) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("worker: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match demo() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("payidem-demo: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The mock binary next to this one (`make demo` builds it first).
fn mock_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mock = exe
        .parent()
        .ok_or("no directory of the demo binary")?
        .join("payidem-mock");
    if !mock.exists() {
        return Err(format!(
            "{} is missing: run `make demo`, which builds it",
            mock.display()
        ));
    }
    Ok(mock)
}

/// Starts the mock on port 0 with every fault kind; returns it and its URL.
fn start_mock(binary: &Path) -> Result<(Reaped, String), String> {
    let faults = chaos_faults();
    let mut command = Command::new(binary);
    command.args(["--port", "0", "--control", "--workers", "32"]);
    command.args(["--seed", &SEED.to_string()]);
    command.args(["--delay-ms", &faults.delay_ms.to_string()]);
    for kind in FaultKind::ALL {
        command.args([
            "--fault",
            &format!("{}={}", kind.name(), faults.probability(kind)),
        ]);
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let child = Reaped(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| format!("reading the mock's first line: {e}"))?;
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .ok_or_else(|| format!("unexpected first line from the mock: {line:?}"))?;
    Ok((child, format!("http://{addr}")))
}

fn spawn_worker(args: &WorkerArgs) -> Result<Reaped, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    Command::new(exe)
        .arg("worker")
        .args(args.to_args())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .map(Reaped)
        .map_err(|e| format!("cannot start a worker: {e}"))
}

fn stats(url: &str) -> Result<serde_json::Value, String> {
    let body = ureq::get(format!("{url}/_mock/stats"))
        .call()
        .map_err(|e| format!("GET /_mock/stats: {e}"))?
        .body_mut()
        .read_to_string()
        .map_err(|e| format!("GET /_mock/stats: {e}"))?;
    serde_json::from_str(&body).map_err(|e| format!("stats are not JSON: {e}"))
}

fn demo() -> Result<bool, String> {
    let started = Instant::now();
    let mock_binary = mock_binary()?;
    let (_mock, url) = start_mock(&mock_binary)?;
    println!("payidem demo: mock platform at {url}, every fault kind on (seed {SEED})");
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = Plan::new("demo", ORDERS);
    let mut args = WorkerArgs {
        url: url.clone(),
        journal: dir.path().join("journal.sqlite3"),
        events: dir.path().join("events.log"),
        prefix: plan.prefix.clone(),
        orders: ORDERS,
        threads: THREADS,
        seed: 1,
        crash: None,
    };
    println!(
        "running {} payments and {} refunds from {THREADS} threads per worker process",
        plan.orders,
        plan.refunds()
    );
    println!("  ready at {:.1} s", started.elapsed().as_secs_f64());
    let mut kills = 0;
    for (i, after) in [Duration::from_millis(900), Duration::from_millis(700)]
        .into_iter()
        .take(KILLS)
        .enumerate()
    {
        args.seed = i as u64 + 1;
        let mut worker = spawn_worker(&args)?;
        std::thread::sleep(after);
        match worker.0.try_wait() {
            Ok(None) => {
                sigkill(&mut worker.0);
                kills += 1;
                println!(
                    "  kill -9 worker {} after {} ms",
                    worker.0.id(),
                    after.as_millis()
                );
            }
            Ok(Some(status)) if status.success() => break,
            Ok(Some(status)) => return Err(format!("a worker failed: {status}")),
            Err(e) => return Err(e.to_string()),
        }
    }
    println!(
        "  a new worker resumes from the same journal (the leases of the killed \
         workers are free at once: their processes are gone)"
    );
    args.seed = 99;
    let mut last = spawn_worker(&args)?;
    let status = last.0.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("the last worker failed: {status}"));
    }
    println!(
        "  every operation settled at {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let figures = Figures::gather(&plan, &stats(&url)?, &args.journal, &args.events, kills);
    println!("{}", figures.table());
    println!("done in {:.1} s", started.elapsed().as_secs_f64());
    let ok = figures.violations.is_empty()
        && figures.payments_per_order == (1, 1, figures.orders_expecting_payment)
        && figures.max_keys_per_order == 1;
    println!(
        "{}",
        if ok {
            "every invariant holds: one payment per order id, one key per operation, nothing lost"
        } else {
            "INVARIANT FAILED"
        }
    );
    Ok(ok)
}
