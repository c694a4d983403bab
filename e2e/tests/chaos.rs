//! Chaos: 2,000 payments (and refunds of a third of them) through worker
//! processes sharing one SQLite journal, against a mock that faults over 30 %
//! of attempts with every fault kind, while the test SIGKILLs the worker at
//! random moments at least 20 times, and makes workers SIGKILL themselves
//! at the points of the journal's group commit, with 12 threads calling at
//! once: a record committed but its fsync not returned, a leader's fsync
//! returned before the callers it covers are told, a record durable before
//! its attempt is sent. The oracle must show no double charge, no lost
//! operation and no operation sent under two keys.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use payidem_e2e::chaos_faults;
use payidem_e2e::plan::Plan;
use payidem_e2e::report::Figures;
use payidem_e2e::worker::{CrashAt, CrashPoint, WorkerArgs};
use payidem_mock::{FaultKind, MockConfig, MockServer};

const ORDERS: usize = 2000;
const KILLS: usize = 22;
/// Self-kills at each point of the group commit, on top of `KILLS`.
const CRASHES_PER_POINT: usize = 3;
const THREADS: usize = 12;

/// A xorshift stream for the kill moments (reproducible).
struct Dice(u64);

impl Dice {
    fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        Duration::from_millis(lo + self.0 % (hi - lo))
    }
}

fn spawn(args: &WorkerArgs) -> Child {
    Command::new(env!("CARGO_BIN_EXE_payidem-chaos-worker"))
        .args(args.to_args())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the worker starts")
}

/// Waits up to `limit` for `child`; `None` if it is still running.
fn wait_for(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let until = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sigkill(child: &mut Child) {
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on our own child's pid, which we have not reaped yet.
    let rc = unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(rc, 0, "kill -9 {pid}");
    child.wait().unwrap();
}

#[test]
fn two_thousand_payments_through_faults_and_kills() {
    let started = Instant::now();
    let mock = MockServer::start(MockConfig {
        port: 0,
        control: true,
        seed: Some(20_260_101),
        workers: 32,
        faults: chaos_faults(),
        ..MockConfig::default()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan::new("chaos", ORDERS);
    let mut args = WorkerArgs {
        url: mock.url(),
        journal: dir.path().join("journal.sqlite3"),
        events: dir.path().join("events.log"),
        prefix: plan.prefix.clone(),
        orders: ORDERS,
        threads: THREADS,
        seed: 1,
        crash: None,
    };

    let mut dice = Dice(0x9E37_79B9_7F4A_7C15);
    let mut kills = 0;
    let mut crashes = 0;
    let mut finished_early = false;
    while kills < KILLS {
        // Every other worker before the random kills end SIGKILLs itself at
        // a point of the group commit, early in its run.
        if crashes < CrashPoint::ALL.len() * CRASHES_PER_POINT && kills % 2 == 1 {
            args.seed = 500 + crashes as u64;
            args.crash = Some(CrashAt {
                point: CrashPoint::ALL[crashes % CrashPoint::ALL.len()],
                nth: dice.millis(2, 40).as_millis() as u64,
            });
            let mut child = spawn(&args);
            args.crash = None;
            let status = wait_for(&mut child, Duration::from_secs(60)).unwrap_or_else(|| {
                sigkill(&mut child);
                panic!("a worker told to crash did not");
            });
            assert_eq!(
                status.signal(),
                Some(libc::SIGKILL),
                "a worker told to crash ended otherwise: {status}"
            );
            crashes += 1;
        }
        args.seed = kills as u64 + 1;
        let mut child = spawn(&args);
        match wait_for(&mut child, dice.millis(250, 1500)) {
            None => {
                sigkill(&mut child);
                kills += 1;
            }
            Some(status) => {
                assert!(status.success(), "a worker failed: {status}");
                finished_early = true;
                break;
            }
        }
    }
    assert!(!finished_early, "the work ended before {KILLS} kills");

    // The last worker runs to the end (after the dead workers' leases lapse).
    args.seed = 1000;
    let mut last = spawn(&args);
    let status = wait_for(&mut last, Duration::from_secs(170)).unwrap_or_else(|| {
        sigkill(&mut last);
        panic!("the last worker did not finish");
    });
    assert!(status.success(), "the last worker failed: {status}");

    let stats = serde_json::to_value(mock.stats()).unwrap();
    let figures = Figures::gather(&plan, &stats, &args.journal, &args.events, kills + crashes);
    let report = format!(
        "payidem chaos run: {ORDERS} orders, {THREADS} threads per worker, {:.1} s\n{}",
        started.elapsed().as_secs_f64(),
        figures.table()
    );
    // Straight to the stderr handle, past the test harness's capture.
    let _ = std::io::stderr().write_all(report.as_bytes());
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("chaos-report.txt");
    std::fs::write(&target, &report).unwrap();

    assert!(figures.violations.is_empty(), "{:#?}", figures.violations);
    assert!(figures.payments_planned + figures.refunds_planned >= 2000);
    assert_eq!(figures.payments_per_order.0, 1);
    assert_eq!(figures.payments_per_order.1, 1);
    assert_eq!(
        figures.payments_per_order.2,
        figures.orders_expecting_payment
    );
    assert_eq!(figures.max_keys_per_order, 1);
    assert_eq!(figures.duplicate_order, 0);
    assert!(figures.kills >= 20);
    for point in CrashPoint::ALL {
        assert_eq!(
            figures.crashes.get(point.name()).copied(),
            Some(CRASHES_PER_POINT),
            "self-kills at {point:?}: {:?}",
            figures.crashes
        );
    }
    assert!(figures.workers > figures.kills);
    assert!(figures.resumed > 0, "some kill left an operation to resume");
    assert!(
        figures.faulted_percent() >= 30.0,
        "only {:.1} % of attempts faulted",
        figures.faulted_percent()
    );
    for kind in FaultKind::ALL {
        assert!(
            figures.faults.get(kind.name()).copied().unwrap_or(0) > 0,
            "{kind} never happened"
        );
    }
    let settled: usize = figures.outcomes.values().sum();
    assert_eq!(settled, figures.payments_planned + figures.refunds_planned);
}
