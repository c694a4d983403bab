//! A worker process of the chaos test and the demo: resumes what a killed
//! predecessor left unknown in the shared SQLite journal, then drives every
//! planned order (payment, then refund) to a settled outcome from several
//! threads. It may be SIGKILLed at any moment; the next worker continues.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use payidem::client::{AttemptEvent, RetryBudgetConfig};
use payidem::journal::{JournalKey, SqliteJournal, SqliteJournalOptions, SyncHook, SyncPoint};
use payidem::operation::{OperationState, Response};
use payidem::policy::RetryPolicy;
use payidem::{Client, ClientConfig, ErrorCode, JournalChoice};
use payidem_mock::{DEFAULT_KEY_ID, DEFAULT_SECRET};

use crate::plan::{Plan, PlannedOrder};
use crate::{payment_id_of, OwnedSpec};

/// What a worker is told on its command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerArgs {
    /// The platform's base URL.
    pub url: String,
    /// The shared SQLite journal.
    pub journal: PathBuf,
    /// Where attempt events and resumes are appended, one line each.
    pub events: PathBuf,
    /// The plan's order id prefix.
    pub prefix: String,
    /// The plan's size.
    pub orders: usize,
    /// Threads driving orders.
    pub threads: usize,
    /// Seed of the order in which this process takes orders.
    pub seed: u64,
    /// Test only: where the worker SIGKILLs itself.
    pub crash: Option<CrashAt>,
}

/// A point of the journal's durable write path (see
/// [`payidem::journal::SyncPoint`]) where a worker can SIGKILL itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashPoint {
    /// A first attempt's record is committed (in the WAL), its fsync has
    /// not returned: nothing of it was sent.
    Written,
    /// A leader's fsync of the WAL returned; the callers it covers have not
    /// been told (none of them sent).
    Fsynced,
    /// A caller's record is durable and `record_attempt` is returning: the
    /// attempt was about to be sent.
    Durable,
}

impl CrashPoint {
    /// Every point.
    pub const ALL: [CrashPoint; 3] = [
        CrashPoint::Written,
        CrashPoint::Fsynced,
        CrashPoint::Durable,
    ];

    /// The name on command lines and in the events file.
    pub fn name(self) -> &'static str {
        match self {
            CrashPoint::Written => "written",
            CrashPoint::Fsynced => "fsynced",
            CrashPoint::Durable => "durable",
        }
    }

    fn matches(self, point: SyncPoint) -> bool {
        matches!(
            (self, point),
            (CrashPoint::Written, SyncPoint::Written { .. })
                | (CrashPoint::Fsynced, SyncPoint::Fsynced { .. })
                | (CrashPoint::Durable, SyncPoint::Durable { .. })
        )
    }
}

/// `--crash POINT:N`: the worker SIGKILLs itself the `nth` time (from 1)
/// its journal reaches `point`, with its other threads wherever they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrashAt {
    /// Where.
    pub point: CrashPoint,
    /// The how-manieth time.
    pub nth: u64,
}

impl CrashAt {
    fn parse(text: &str) -> Result<CrashAt, String> {
        let (point, nth) = text
            .split_once(':')
            .ok_or_else(|| format!("--crash {text:?}: expected POINT:N"))?;
        let point = CrashPoint::ALL
            .into_iter()
            .find(|p| p.name() == point)
            .ok_or_else(|| format!("--crash: unknown point {point:?}"))?;
        let nth = nth
            .parse::<u64>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("--crash: {nth:?} is not a positive number"))?;
        Ok(CrashAt { point, nth })
    }
}

impl WorkerArgs {
    /// Parses `--url U --journal F --events F --prefix P --orders N
    /// --threads T --seed S [--crash POINT:N]`.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<WorkerArgs, String> {
        let mut out = WorkerArgs {
            url: String::new(),
            journal: PathBuf::new(),
            events: PathBuf::new(),
            prefix: "chaos".into(),
            orders: 0,
            threads: 4,
            seed: 1,
            crash: None,
        };
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let number = |field: &str| {
                value
                    .parse::<u64>()
                    .map_err(|_| format!("{field}: {value:?} is not a number"))
            };
            match flag.as_str() {
                "--url" => out.url = value.clone(),
                "--journal" => out.journal = PathBuf::from(&value),
                "--events" => out.events = PathBuf::from(&value),
                "--prefix" => out.prefix = value.clone(),
                "--orders" => out.orders = number("orders")? as usize,
                "--threads" => out.threads = number("threads")?.clamp(1, 64) as usize,
                "--seed" => out.seed = number("seed")?,
                "--crash" => out.crash = Some(CrashAt::parse(&value)?),
                other => return Err(format!("unknown flag {other}")),
            }
        }
        if out.url.is_empty() || out.journal.as_os_str().is_empty() {
            return Err("--url and --journal are required".into());
        }
        if out.events.as_os_str().is_empty() {
            return Err("--events is required".into());
        }
        Ok(out)
    }

    /// The arguments as a command line.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "--url".into(),
            self.url.clone(),
            "--journal".into(),
            self.journal.display().to_string(),
            "--events".into(),
            self.events.display().to_string(),
            "--prefix".into(),
            self.prefix.clone(),
            "--orders".into(),
            self.orders.to_string(),
            "--threads".into(),
            self.threads.to_string(),
            "--seed".into(),
            self.seed.to_string(),
        ];
        if let Some(crash) = self.crash {
            args.push("--crash".into());
            args.push(format!("{}:{}", crash.point.name(), crash.nth));
        }
        args
    }
}

/// The client settings of a worker: short timeouts, small backoff, a cap
/// that fits the mock's `Retry-After: 1`, a budget that does not run dry.
pub fn worker_config(url: &str, journal: &Path) -> ClientConfig {
    let mut config = ClientConfig::new(url, DEFAULT_KEY_ID);
    config.journal = JournalChoice::Sqlite(journal.to_owned());
    config.connect_timeout = Duration::from_millis(500);
    config.request_timeout = Duration::from_millis(300);
    config.retry = RetryPolicy {
        base: Duration::from_millis(5),
        cap: Duration::from_millis(1500),
        max_attempts: 8,
        deadline: Duration::from_secs(4),
    };
    config.retry_budget = RetryBudgetConfig {
        capacity: 1_000_000,
        ..RetryBudgetConfig::default()
    };
    config
}

/// Appends whole lines to the events file; every line is one `write`.
#[derive(Clone)]
struct Sink(Arc<Mutex<File>>);

impl Sink {
    fn open(path: &Path) -> std::io::Result<Sink> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Sink(Arc::new(Mutex::new(file))))
    }

    fn line(&self, line: String) {
        let mut file = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = file.write_all(format!("{line}\n").as_bytes());
    }
}

/// The events-file line of one attempt: `event KIND STATUS CODE NEXT REPLAYED`.
pub fn event_line(e: &AttemptEvent) -> String {
    format!(
        "event {} {} {} {} {}",
        e.kind.as_str(),
        e.status.map_or_else(|| "-".to_owned(), |s| s.to_string()),
        e.error_code.as_deref().unwrap_or("-"),
        e.next.as_str(),
        e.replayed
    )
}

/// What one worker did (lost if it is killed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkerSummary {
    /// Operations a predecessor left unknown or in flight, settled by
    /// resuming them.
    pub resumed: usize,
    /// Payments settled as succeeded.
    pub payments: usize,
    /// Payments settled as declined.
    pub declined: usize,
    /// Refunds settled.
    pub refunds: usize,
}

enum Stuck {
    /// Another (maybe dead) process holds the lease: try again later.
    Busy,
    /// Something that must never happen.
    Fatal(String),
}

/// How many calls one operation gets in one pass before the worker moves on.
const CALLS_PER_PASS: usize = 12;

/// Drives `spec` until settled: `Ok(Some(response))` succeeded,
/// `Ok(None)` settled as rejected.
fn settle(client: &Client, spec: &OwnedSpec) -> Result<Option<Response>, Stuck> {
    let mut last = String::new();
    for _ in 0..CALLS_PER_PASS {
        match client.execute(&spec.spec()) {
            Ok(outcome) => return Ok(Some(outcome.response)),
            Err(e) => match e.code() {
                ErrorCode::OperationBusy => return Err(Stuck::Busy),
                ErrorCode::Rejected => {
                    let record = client
                        .status(&spec.order_id)
                        .map_err(|e| Stuck::Fatal(e.to_string()))?;
                    if record.is_some_and(|r| r.state == OperationState::Rejected) {
                        return Ok(None);
                    }
                    // Refused before it ran (e.g. rate limited to the end):
                    // still pending with its key; call again.
                    last = e.to_string();
                }
                ErrorCode::OutcomeUnknown | ErrorCode::Transport => last = e.to_string(),
                _ => return Err(Stuck::Fatal(format!("{}: {e}", spec.order_id))),
            },
        }
    }
    Err(Stuck::Fatal(format!(
        "{}: not settled after {CALLS_PER_PASS} calls: {last}",
        spec.order_id
    )))
}

fn drive_order(client: &Client, order: &PlannedOrder) -> Result<(), Stuck> {
    let payment = OwnedSpec::payment(&order.order_id, order.amount, true);
    let response = settle(client, &payment)?;
    match (response, order.declined) {
        (None, true) => Ok(()),
        (Some(response), false) => {
            let Some(refund) = order.refund else {
                return Ok(());
            };
            let payment_id = payment_id_of(&response.body).ok_or_else(|| {
                Stuck::Fatal(format!("{}: no payment_id in the answer", order.order_id))
            })?;
            match settle(
                client,
                &OwnedSpec::refund(&order.order_id, &payment_id, refund),
            )? {
                Some(_) => Ok(()),
                None => Err(Stuck::Fatal(format!(
                    "{}: the refund was rejected",
                    order.order_id
                ))),
            }
        }
        (Some(_), true) => Err(Stuck::Fatal(format!(
            "{}: a declined amount succeeded",
            order.order_id
        ))),
        (None, false) => Err(Stuck::Fatal(format!(
            "{}: the payment was rejected",
            order.order_id
        ))),
    }
}

/// A small deterministic shuffle (xorshift), so each process takes the
/// orders in its own order.
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut state = seed | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
    v
}

/// How long a worker keeps retrying operations leased by a dead process.
const BUSY_PATIENCE: Duration = Duration::from_secs(120);

/// The journal hook of `--crash`: logs `crash POINT PID`, then SIGKILLs the
/// process the `nth` time `point` is reached.
fn crash_hook(crash: CrashAt, sink: Sink) -> SyncHook {
    let seen = AtomicU64::new(0);
    Arc::new(move |point| {
        if crash.point.matches(point) && seen.fetch_add(1, Ordering::SeqCst) + 1 == crash.nth {
            sink.line(format!(
                "crash {} {}",
                crash.point.name(),
                std::process::id()
            ));
            // SAFETY: kill(2) on this very process.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
            loop {
                std::thread::park();
            }
        }
        Ok(())
    })
}

/// Runs one worker to the end: every planned operation settled.
pub fn run(args: &WorkerArgs) -> Result<WorkerSummary, String> {
    let sink = Sink::open(&args.events).map_err(|e| format!("events file: {e}"))?;
    sink.line(format!("start {}", std::process::id()));
    let hook_sink = sink.clone();
    let mut config = worker_config(&args.url, &args.journal);
    if let Some(crash) = args.crash {
        // Keyed (and so sealed when new) like the journal a client opens
        // itself, so that its rows verify for the workers that follow.
        let options = SqliteJournalOptions {
            journal_key: Some(JournalKey::derive_from_secret(DEFAULT_SECRET.as_bytes())),
            ..SqliteJournalOptions::default()
        };
        let journal = SqliteJournal::open(&args.journal, options)
            .map_err(|e| e.to_string())?
            .with_sync_hook(crash_hook(crash, sink.clone()));
        config.journal = JournalChoice::Custom(Arc::new(journal));
    }
    let client = Client::new(config, DEFAULT_SECRET.as_bytes())
        .map_err(|e| e.to_string())?
        .with_event_hook(Arc::new(move |e: &AttemptEvent| {
            hook_sink.line(event_line(e))
        }));

    let mut summary = WorkerSummary::default();
    // What a killed predecessor left in flight or unknown. Those it still
    // holds the lease of (until the lease lapses) are resumed later.
    let mut leased: Vec<String> = Vec::new();
    for (order_id, result) in client.resume_unknown().map_err(|e| e.to_string())? {
        match &result {
            Ok(_) => {
                sink.line(format!("resume {order_id} ok"));
                summary.resumed += 1;
            }
            Err(e) => {
                sink.line(format!("resume {order_id} {}", e.code().as_str()));
                leased.push(order_id);
            }
        }
    }

    let plan = Plan::new(&args.prefix, args.orders);
    let queue = shuffled(args.orders, args.seed);
    let next = AtomicUsize::new(0);
    let busy = Mutex::new(Vec::new());
    let fatal = Mutex::new(Vec::new());
    let fail = |why: String| {
        fatal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(why)
    };
    std::thread::scope(|s| {
        for _ in 0..args.threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&index) = queue.get(i) else { break };
                match drive_order(&client, &plan.order(index)) {
                    Ok(()) => {}
                    Err(Stuck::Busy) => busy
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(index),
                    Err(Stuck::Fatal(why)) => fail(why),
                }
            });
        }
    });
    let mut busy = busy.into_inner().unwrap_or_else(PoisonError::into_inner);
    let started = Instant::now();
    while !(busy.is_empty() && leased.is_empty()) && started.elapsed() < BUSY_PATIENCE {
        let mut still = Vec::new();
        for order_id in leased {
            match client.resume(&order_id) {
                Ok(_) => {
                    sink.line(format!("resume {order_id} ok"));
                    summary.resumed += 1;
                }
                Err(e) if e.code() == ErrorCode::Rejected => {
                    sink.line(format!("resume {order_id} ok"));
                    summary.resumed += 1;
                }
                Err(_) => still.push(order_id),
            }
        }
        leased = still;
        let mut still = Vec::new();
        for index in busy {
            match drive_order(&client, &plan.order(index)) {
                Ok(()) => {}
                Err(Stuck::Busy) => still.push(index),
                Err(Stuck::Fatal(why)) => fail(why),
            }
        }
        busy = still;
        if !(busy.is_empty() && leased.is_empty()) {
            std::thread::sleep(Duration::from_millis(250));
        }
    }
    let fatal = fatal.into_inner().unwrap_or_else(PoisonError::into_inner);
    if !fatal.is_empty() {
        return Err(fatal.join("\n"));
    }
    if !busy.is_empty() {
        return Err(format!(
            "{} orders still leased after {BUSY_PATIENCE:?}",
            busy.len()
        ));
    }
    for order in plan.all() {
        let state = |id: &str| client.status(id).ok().flatten().map(|r| r.state);
        match state(&order.order_id) {
            Some(OperationState::Succeeded) => summary.payments += 1,
            Some(OperationState::Rejected) => summary.declined += 1,
            other => return Err(format!("{}: ends {other:?}", order.order_id)),
        }
        if order.refund.is_some() {
            match state(&crate::refund_order_id(&order.order_id)) {
                Some(OperationState::Succeeded) => summary.refunds += 1,
                other => return Err(format!("{} refund: ends {other:?}", order.order_id)),
            }
        }
    }
    sink.line(format!("done {}", std::process::id()));
    Ok(summary)
}
