//! Fleet takeover: how long after a lease holder's SIGKILL another worker
//! settles each operation it held, over at least 50 kills of workers that
//! held leases (BENCHMARKS.md, "Fleet takeover").
//!
//! Four `payidem-fleet-worker` processes (4 threads each, every one in a
//! PID namespace of its own via `unshare`, as on separate hosts: only
//! lease expiry frees a dead worker's operations) share one PostgreSQL
//! journal (a throwaway server started here) and take over, with
//! `Client::take_over_loop`, the payments the application records through
//! the outbox (about 75 a second). The mock holds every payment 150 ms
//! before it answers, so that a worker's threads are mid-call, holding
//! leases, when it is killed. Every 0.4-1.2 s the longest-lived worker is
//! SIGKILLed and replaced; a kill counts when the worker held at least one
//! unsettled operation's lease. The run checks, as the fleet test does,
//! that every orphan was settled, nobody was charged twice, no stale
//! holder wrote and no lease was taken before it lapsed.
//!
//! `cargo bench -p payidem-e2e --bench takeover` (or `-- 80` for 80 kills
//! of lease holders)

use std::time::{Duration, Instant};

use payidem::journal::Journal;
use payidem::operation::OperationState;
use payidem_e2e::fleet::{
    owner_of, record_batch, sigkill, worker_takeover_bound, Audit, Dice, Fleet, FleetJournal,
    Workers,
};
use payidem_e2e::takeover::TakeoverWatch;
use payidem_mock::{FaultSettings, MockConfig, MockServer};

const DEFAULT_KILLS: usize = 50;
const WORKERS: usize = 4;
const THREADS: usize = 4;
/// How long the mock holds each payment before answering (below the
/// workers' 300 ms request timeout).
const PROCESSING_DELAY_MS: u64 = 150;
/// Outbox orders recorded between two kills.
const BATCH: usize = 60;

/// The 1-minute load average (`/proc/loadavg`).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

fn main() {
    let wanted = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(DEFAULT_KILLS);
    let started = Instant::now();
    let load_before = load_average();
    let journal = FleetJournal::start();
    let (server, url, admin) = (&journal.server, journal.url.clone(), &journal.admin);
    let mock = MockServer::start(MockConfig {
        port: 0,
        control: true,
        seed: Some(20_261_205),
        workers: 64,
        faults: FaultSettings::none(),
        processing_delay_ms: PROCESSING_DELAY_MS,
        ..MockConfig::default()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut fleet = Fleet::new(
        env!("CARGO_BIN_EXE_payidem-fleet-worker"),
        mock.url(),
        url.clone(),
        THREADS,
        dir.path(),
    );
    let watch = TakeoverWatch::on(&url);
    let app_client = journal.app_client(&mock.url());
    let mut app = None;
    let mut db = server.connect("fleet");

    let mut workers = Workers((0..WORKERS).map(|slot| fleet.spawn(slot, None)).collect());
    let mut born = [Instant::now(); WORKERS];
    let mut dice = Dice(0x9E37_79B9_7F4A_7C15);
    let (mut kills, mut hits, mut orphaned, mut batch) = (0usize, 0usize, 0usize, 0usize);
    while hits < wanted {
        if record_batch(
            server,
            &mut app,
            &app_client,
            batch * BATCH,
            (batch + 1) * BATCH,
        ) {
            batch += 1;
        }
        std::thread::sleep(dice.millis(400, 1200));
        let slot = (0..WORKERS).min_by_key(|&s| born[s]).unwrap();
        if let Some(status) = workers.0[slot].try_wait().unwrap() {
            panic!("a worker ended before the work was done: {status}");
        }
        let owner = owner_of(&fleet.owners[slot]);
        sigkill(&mut workers.0[slot]);
        let killed_at = Instant::now();
        kills += 1;
        let held = owner.map_or(0, |o| {
            watch
                .orphaned(&mut db, &o, killed_at)
                .expect("the journal answers")
        });
        if held > 0 {
            hits += 1;
            orphaned += held;
        }
        workers.0[slot] = fleet.spawn(slot, None);
        born[slot] = Instant::now();
    }
    let takeovers = watch.finish(Duration::from_secs(120));
    std::fs::write(&fleet.done, b"done").unwrap();
    for w in &mut workers.0 {
        let until = Instant::now() + Duration::from_secs(120);
        while w.try_wait().unwrap().is_none() {
            assert!(Instant::now() < until, "a worker did not finish");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let load_after = load_average();

    // What must hold whatever the times: every orphan and every order
    // settled, one payment each, no stale write, no early takeover.
    let all = admin.list(&OperationState::ALL).unwrap();
    assert!(
        all.iter().all(|r| r.state.is_settled()),
        "an operation is unsettled"
    );
    let stats = mock.stats();
    let double: u64 = stats
        .orders
        .values()
        .map(|o| o.payments_created.saturating_sub(1))
        .sum();
    let audit = Audit::read(&mut db);
    let early = audit.early_from_live(&[]);
    assert_eq!(takeovers.unsettled, 0, "{}", takeovers.summary());
    assert_eq!((double, audit.stale_writes), (0, 0));
    assert!(
        early.is_empty(),
        "leases taken before they lapsed, from {early:?}"
    );

    let bound = worker_takeover_bound();
    let s = |d: Duration| format!("{:.1} s", d.as_secs_f64());
    println!(
        "fleet takeover: {hits} kills of lease holders ({kills} kills), {orphaned} leases held at \
         the kills, {} operations taken over (one orphaned by two kills counts once, timed from \
         the last); {}; {} orders, double {double}, stale-lease writes {}, early \
         takeovers 0; {WORKERS} workers x {THREADS} threads in {}; lease_ttl {:?} + request \
         timeout {:?}, heartbeat {:?}; mock answers after {PROCESSING_DELAY_MS} ms; load \
         average {load_before} -> {load_after}; {:.0} s",
        takeovers.times.len(),
        takeovers.summary(),
        all.len(),
        audit.stale_writes,
        fleet.isolation.describe(),
        bound.lease_ttl,
        bound.request_timeout,
        bound.heartbeat,
        started.elapsed().as_secs_f64(),
    );
    println!(
        "| kills of lease holders (all kills) | operations taken over | kill to settled p50 | max \
         | kill to claimed p50 | max | double | stale-lease writes | early takeovers |"
    );
    println!(
        "| {hits} ({kills}) | {} | {} | {} | {} | {} | {double} | {} | 0 |",
        takeovers.times.len(),
        s(takeovers.p50()),
        s(takeovers.max()),
        s(takeovers.claim_p50()),
        s(takeovers.claim_max()),
        audit.stale_writes,
    );
}
