//! One client instance of the fleet chaos test and the takeover benchmark:
//! no local state, only the shared PostgreSQL journal. Executes a few
//! orders of its own, then takes over whatever no live call holds (outbox
//! rows, operations of killed instances once their leases expire), with
//! `Client::take_over_loop` on each thread, until the done file exists and
//! nothing unsettled is left. Killed with SIGKILL at random moments.
//!
//! ```text
//! payidem-fleet-worker --url http://127.0.0.1:PORT --journal postgresql://… \
//!     --threads 8 --name w3 --done /tmp/…/done [--kill-commit N --marker /tmp/…/killed] \
//!     [--owner-file /tmp/…/owner-w3]
//! ```
//!
//! `--owner-file` receives, at start, the prefix of every lease owner id
//! of this process (`{host and PID namespace}/{pid}/`), so that the test
//! can tell which operations it held when it was killed.
//!
//! `--kill-commit N` (test only) terminates the worker's own database
//! connection (`pg_terminate_backend`) just before its N-th synchronous
//! COMMIT, then appends a line to the marker file.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use payidem::journal::{Journal, JournalKey, PgPoint, PostgresJournal, PostgresJournalOptions};
use payidem::operation::OperationState;
use payidem::{Client, JournalChoice, OperationSpec};
use payidem_e2e::fleet::{fleet_worker_config, WORKER_LEASE_HEARTBEAT};
use payidem_e2e::{payment_body, payment_status_path};
use payidem_mock::DEFAULT_SECRET;

struct Args {
    url: String,
    journal: String,
    threads: usize,
    name: String,
    done: PathBuf,
    kill_commit: Option<u64>,
    marker: Option<PathBuf>,
    owner_file: Option<PathBuf>,
}

fn parse() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut get = |flag: &str| -> Result<String, String> {
        it.next().ok_or_else(|| format!("{flag} needs a value"))
    };
    let (mut url, mut journal, mut threads, mut name, mut done) =
        (None, None, 4, String::from("w"), None);
    let (mut kill_commit, mut marker, mut owner_file) = (None, None, None);
    while let Ok(flag) = get("") {
        match flag.as_str() {
            "--url" => url = Some(get("--url")?),
            "--journal" => journal = Some(get("--journal")?),
            "--threads" => threads = get("--threads")?.parse().map_err(|_| "--threads")?,
            "--name" => name = get("--name")?,
            "--done" => done = Some(PathBuf::from(get("--done")?)),
            "--kill-commit" => {
                kill_commit = Some(get("--kill-commit")?.parse().map_err(|_| "--kill-commit")?)
            }
            "--marker" => marker = Some(PathBuf::from(get("--marker")?)),
            "--owner-file" => owner_file = Some(PathBuf::from(get("--owner-file")?)),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Args {
        url: url.ok_or("--url is required")?,
        journal: journal.ok_or("--journal is required")?,
        threads,
        name,
        done: done.ok_or("--done is required")?,
        kill_commit,
        marker,
        owner_file,
    })
}

/// The hook that cuts the worker's own connection before its N-th
/// synchronous COMMIT, from a second connection.
fn commit_killer(url: &str, nth: u64, marker: PathBuf) -> payidem::journal::PgHook {
    let killer: Mutex<Option<postgres::Client>> = Mutex::new(None);
    let url = url.to_owned();
    let seen = AtomicU64::new(0);
    Arc::new(move |point: PgPoint| {
        let PgPoint::BeforeCommit {
            durable: true,
            backend_pid,
        } = point
        else {
            return;
        };
        if seen.fetch_add(1, Ordering::SeqCst) + 1 != nth {
            return;
        }
        let mut killer = killer.lock().unwrap();
        if killer.is_none() {
            *killer = url
                .parse::<postgres::Config>()
                .ok()
                .and_then(|c| c.connect(postgres::NoTls).ok());
        }
        if let Some(c) = killer.as_mut() {
            if c.execute("SELECT pg_terminate_backend($1)", &[&backend_pid])
                .is_ok()
            {
                if let Ok(mut f) = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&marker)
                {
                    let _ = writeln!(f, "terminated backend {backend_pid} before COMMIT");
                }
            }
        }
    })
}

/// The shared journal and a client on it.
fn open(args: &Args) -> payidem::Result<(Arc<PostgresJournal>, Client)> {
    // Keyed like a client's own journal: every row taken over (the
    // outbox rows included) is checked against its integrity MAC.
    let options = PostgresJournalOptions {
        journal_key: Some(JournalKey::derive_from_secret(DEFAULT_SECRET.as_bytes())),
        ..PostgresJournalOptions::default()
    };
    let mut journal = PostgresJournal::connect(&args.journal, options)?;
    if let (Some(nth), Some(marker)) = (args.kill_commit, &args.marker) {
        journal = journal.with_hook(commit_killer(&args.journal, nth, marker.clone()));
    }
    let journal = Arc::new(journal);
    let mut config = fleet_worker_config(&args.url);
    config.journal = JournalChoice::Custom(journal.clone());
    let client = Client::new(config, DEFAULT_SECRET.as_bytes())?;
    Ok((journal, client))
}

fn run(args: &Args) -> Result<(), String> {
    if let Some(path) = &args.owner_file {
        let owner = payidem::journal::process_owner("i", 0);
        let prefix = owner.strip_suffix("i/0").unwrap_or(&owner);
        std::fs::write(path, prefix).map_err(|e| format!("--owner-file: {e}"))?;
    }
    // Started while the database restarts: wait for it.
    let mut tries = 0;
    let (journal, client) = loop {
        match open(args) {
            Ok(opened) => break opened,
            Err(_) if tries < 150 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => return Err(e.to_string()),
        }
    };

    // A few orders of its own, through `execute` (open → attempts → finish).
    for k in 0..3 {
        let order_id = format!("fleet-direct-{}-{k}", args.name);
        let body = payment_body(&order_id, 100 + k);
        let status = payment_status_path(&order_id);
        let _ = client.execute(&OperationSpec {
            order_id: &order_id,
            method: "POST",
            path: "/v1/payments",
            body: &body,
            idempotency_key: None,
            status_path: Some(&status),
        });
    }

    let unsettled = [
        OperationState::Pending,
        OperationState::InFlight,
        OperationState::Unknown,
    ];
    // The end: the done file exists and nothing unsettled is left (asked
    // of the journal at most every 200 ms, by whichever thread looks).
    let last_look = Mutex::new(Instant::now());
    let finished = || {
        if !args.done.exists() {
            return false;
        }
        let mut last = last_look.lock().unwrap_or_else(PoisonError::into_inner);
        if last.elapsed() < Duration::from_millis(200) {
            return false;
        }
        *last = Instant::now();
        journal.list(&unsettled).is_ok_and(|left| left.is_empty())
    };
    // The core's take-over loop, one operation at a time on each thread,
    // idle at most a heartbeat; journal errors (the database restarting)
    // are retried by the loop.
    std::thread::scope(|s| {
        for _ in 0..args.threads {
            s.spawn(|| client.take_over_loop(1, WORKER_LEASE_HEARTBEAT, &finished));
        }
    });
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("payidem-fleet-worker: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("payidem-fleet-worker {}: {e}", args.name);
            ExitCode::FAILURE
        }
    }
}
