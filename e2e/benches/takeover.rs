//! Takeover time in a fleet (issue #26): three `payidem-fleet-worker`
//! processes, each in a PID namespace of its own (as on hosts of their own:
//! see payidem_e2e::takeover::Isolation), share one PostgreSQL journal with
//! 3 s leases and their heartbeat (a third of it) and take over outbox
//! orders, against the mock with the chaos test's faults (so operations
//! live long enough to be held when a worker dies). Every 0.4–1.2 s a
//! random worker is SIGKILLed and replaced; measured is the time from each
//! kill to the settlement, by another worker, of every operation the killed
//! worker held. Runs until at least KILLS kills left operations behind.
//!
//! `cargo bench -p payidem-e2e --bench takeover` (or `-- 80` for another
//! number of kills)

use std::time::{Duration, Instant};

use payidem::ClientConfig;
use payidem_e2e::fleet::{owner_of, record_batch, sigkill, Dice, Fleet, Workers};
use payidem_e2e::pg::PgServer;
use payidem_e2e::takeover::{Isolation, TakeoverWatch};
use payidem_e2e::{chaos_faults, start_mock_with};
use payidem_mock::{MockConfig, DEFAULT_KEY_ID, DEFAULT_SECRET};

const KILLS: usize = 50;
const WORKERS: usize = 3;
const THREADS: usize = 8;
const BATCH: usize = 40;

fn main() {
    let wanted: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(KILLS);
    let server = PgServer::start();
    server.create_db("takeover");
    let journal_url = server.url_for("takeover");
    let mock = start_mock_with(MockConfig {
        seed: Some(26),
        workers: 48,
        faults: chaos_faults(),
        ..MockConfig::default()
    });
    let mut app_config = ClientConfig::new(mock.url(), DEFAULT_KEY_ID);
    app_config.journal = payidem::JournalChoice::Postgres(journal_url.clone());
    let app_client = payidem::Client::new(app_config, DEFAULT_SECRET.as_bytes()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut fleet = Fleet {
        program: env!("CARGO_BIN_EXE_payidem-fleet-worker"),
        url: mock.url(),
        journal: journal_url.clone(),
        threads: THREADS,
        done: dir.path().join("done"),
        marker: dir.path().join("unused"),
        spawned: 0,
        isolation: Isolation::probe(),
        owners: Vec::new(),
    };
    let watch_url = journal_url.clone();
    let watch = TakeoverWatch::start(move || {
        let mut config: postgres::Config = watch_url.parse().ok()?;
        config.connect_timeout(Duration::from_secs(2));
        config.connect(postgres::NoTls).ok()
    });
    let mut workers = Workers((0..WORKERS).map(|slot| fleet.spawn(slot, None)).collect());
    let workers = &mut workers.0;
    let (mut app, mut db) = (None, server.connect("takeover"));
    let mut dice = Dice(0x9E37_79B9_7F4A_7C15);
    let (mut batch, mut kills, mut orphaning) = (0, 0, 0);
    let started = Instant::now();
    while orphaning < wanted {
        // Keep work in the outbox ahead of the workers.
        if record_batch(
            &server,
            &mut app,
            &app_client,
            batch * BATCH,
            (batch + 1) * BATCH,
        ) {
            batch += 1;
        }
        std::thread::sleep(dice.millis(400, 1200));
        let slot = (dice.roll() % WORKERS as u64) as usize;
        sigkill(&mut workers[slot]);
        let killed_at = Instant::now();
        kills += 1;
        if let Some(owner) = owner_of(&fleet.owners[slot]) {
            let left = watch.orphaned(&mut db, &owner, killed_at).unwrap_or(0);
            orphaning += usize::from(left > 0);
        }
        workers[slot] = fleet.spawn(slot, None);
    }
    let takeovers = watch.finish(Duration::from_secs(120));
    std::fs::write(&fleet.done, b"done").unwrap();
    println!(
        "takeover: {kills} kills ({orphaning} left operations behind), {} workers x {THREADS} \
         threads in {}, lease 3 s + 300 ms request timeout, heartbeat 1 s, {:.0} s run",
        WORKERS,
        fleet.isolation.describe(),
        started.elapsed().as_secs_f64(),
    );
    println!(
        "{}; never settled: {}",
        takeovers.summary(),
        takeovers.unsettled
    );
    let pct = |p: usize| {
        let t = &takeovers.times;
        t.get((t.len() * p / 100).min(t.len().saturating_sub(1)))
            .map_or(0.0, Duration::as_secs_f64)
    };
    println!(
        "takeover percentiles: p10 {:.1}s p50 {:.1}s p90 {:.1}s p99 {:.1}s max {:.1}s",
        pct(10),
        pct(50),
        pct(90),
        pct(99),
        takeovers.max().as_secs_f64()
    );
}
