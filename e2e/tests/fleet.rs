//! Fleet chaos: client instances with no local state share one PostgreSQL
//! journal (a real server, started here). The test records 1,000 payments
//! through the outbox, in its own transactions next to an `orders` row,
//! while three worker processes take them over and drive them through a
//! mock that faults over 30 % of attempts; the test SIGKILLs workers at
//! random moments (at least 20 times; survivors take over the expired
//! leases), stops PostgreSQL with `pg_ctl stop -m immediate` and starts it
//! again mid-run, and one worker cuts its own connection just before a
//! synchronous COMMIT. Then the mock's oracle and the journal must show no
//! double charge, no lost operation, one key per order id and no write by
//! a stale lease.
//!
//! Every worker runs in a PID namespace of its own (`unshare --pid`, with a
//! user namespace when not root), as on a host of its own: no worker sees
//! that another one's process died, so a killed worker's operations are
//! freed by their leases lapsing only. The time from each kill to the
//! settlement of every operation the killed worker held is measured (the
//! summary line; the figures are BENCHMARKS.md's) and checked against what
//! the lease settings promise: no lease taken before it lapsed (a trigger
//! compares each change of holder with the old lease's expiry, by the
//! server's clock as the journal's claim does), every claim and settlement
//! within the bound the settings give (`TakeoverBound`) plus a documented
//! margin for a loaded CI host. One worker is paused (SIGSTOP) past its
//! lease while others take its operations over, then resumed: it must not
//! write (nor send) for them again.

use std::io::Write;
use std::time::{Duration, Instant};

use payidem::journal::Journal;
use payidem::operation::OperationState;
use payidem_e2e::chaos_faults;
use payidem_e2e::fleet::{
    owner_of, record_batch, sigkill, signal_group, worker_takeover_bound, Audit, Dice, Fleet,
    FleetJournal, Workers,
};
use payidem_e2e::pg::PgServer;
use payidem_e2e::takeover::{Isolation, TakeoverWatch};
use payidem_mock::{MockConfig, MockServer};

const ORDERS: usize = 1000;
const WORKERS: usize = 3;
const KILLS: usize = 21;
const THREADS: usize = 8;
/// Outbox batches, one per kill interval or so.
const BATCHES: usize = 20;

/// How much later than the settings promise (`TakeoverBound`) a takeover
/// may come on a loaded CI host, which the bound does not model: the 2
/// cores shared with the other suites (processes descheduled for
/// seconds), PostgreSQL crashed and recovering mid-run (about 1-2 s with
/// no journal), killed workers restarting, every thread of the survivors
/// busy in a call, and a taken-over call that ends unknown under the
/// chaos faults and is driven a second time (one more deadline). One run
/// came within 1.2 s of a fixed 15 s limit; the bound plus this margin is
/// 15.3 s to the claim and 19.3 s to the settlement.
const LOADED_HOST_MARGIN: Duration = Duration::from_secs(10);

#[test]
fn a_fleet_without_local_state_survives_kills_a_database_crash_and_a_lost_commit() {
    let started = Instant::now();
    let journal = FleetJournal::start();

    let mock = MockServer::start(MockConfig {
        port: 0,
        control: true,
        seed: Some(20_261_111),
        workers: 48,
        faults: chaos_faults(),
        ..MockConfig::default()
    })
    .unwrap();
    let app_client = journal.app_client(&mock.url());
    let FleetJournal {
        mut server,
        url: journal_url,
        admin,
    } = journal;
    let dir = tempfile::tempdir().unwrap();
    let mut fleet = Fleet::new(
        env!("CARGO_BIN_EXE_payidem-fleet-worker"),
        mock.url(),
        journal_url.clone(),
        THREADS,
        dir.path(),
    );
    let watch = TakeoverWatch::on(&journal_url);
    let mut db: Option<postgres::Client> = None;
    // The owner of `slot`'s worker was killed or paused at `at`: its
    // unsettled operations are watched until another worker settles them.
    let orphans = |fleet: &Fleet,
                   server: &PgServer,
                   slot: usize,
                   at: Instant,
                   db: &mut Option<postgres::Client>| {
        let Some(owner) = owner_of(&fleet.owners[slot]) else {
            return 0;
        };
        if db.as_ref().is_none_or(postgres::Client::is_closed) {
            *db = std::panic::catch_unwind(|| server.connect("fleet")).ok();
        }
        let found = db.as_mut().and_then(|c| watch.orphaned(c, &owner, at));
        if found.is_none() {
            *db = None;
        }
        found.unwrap_or(0)
    };
    let mut app = None;

    let mut workers = Workers((0..WORKERS).map(|slot| fleet.spawn(slot, None)).collect());
    let workers = &mut workers.0;
    // One worker cuts its connection before its 3rd synchronous COMMIT;
    // it is not killed before it has.
    // The owner id prefixes of the workers killed (their processes gone).
    let mut killed_owners: Vec<String> = Vec::new();
    workers[0] = {
        sigkill(&mut workers[0]);
        killed_owners.extend(owner_of(&fleet.owners[0]));
        fleet.spawn(0, Some(3))
    };
    let mut dice = Dice(0x2545_F491_4F6C_DD1D);
    let (mut kills, mut batch, mut restarted, mut paused) = (1, 0, false, None);
    let per_batch = ORDERS / BATCHES;
    while kills < KILLS || batch < BATCHES {
        if batch < BATCHES
            && record_batch(
                &server,
                &mut app,
                &app_client,
                batch * per_batch,
                (batch + 1) * per_batch,
            )
        {
            batch += 1;
        }
        std::thread::sleep(dice.millis(300, 900));
        if kills < KILLS {
            let mut slot = (dice.roll() % WORKERS as u64) as usize;
            if slot == 0 && !fleet.marker.exists() {
                slot = 1;
            }
            if let Some(status) = workers[slot].try_wait().unwrap() {
                panic!("a worker ended before the work was done: {status}");
            }
            sigkill(&mut workers[slot]);
            let killed_at = Instant::now();
            kills += 1;
            killed_owners.extend(owner_of(&fleet.owners[slot]));
            orphans(&fleet, &server, slot, killed_at, &mut db);
            workers[slot] = fleet.spawn(slot, None);
        }
        if kills == KILLS / 3 && paused.is_none() {
            // A worker stops (a long GC pause, a frozen VM) past its
            // leases, others take its operations over, and it comes back.
            let slot = 1 + (dice.roll() % (WORKERS as u64 - 1)) as usize;
            signal_group(&workers[slot], libc::SIGSTOP);
            let stopped_at = Instant::now();
            paused = Some(orphans(&fleet, &server, slot, stopped_at, &mut db));
            std::thread::sleep(Duration::from_secs(8));
            signal_group(&workers[slot], libc::SIGCONT);
        }
        if kills == KILLS / 2 && !restarted {
            // PostgreSQL crashes and comes back: no checkpoint, every
            // connection cut, recovery from WAL.
            server.stop_immediate().unwrap();
            std::thread::sleep(Duration::from_millis(700));
            server.start_again().unwrap();
            restarted = true;
            app = None;
        }
    }
    assert_eq!(batch, BATCHES);
    let takeovers = watch.finish(Duration::from_secs(60));
    std::fs::write(&fleet.done, b"done").unwrap();
    for w in workers.iter_mut() {
        let until = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = w.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > until {
                sigkill(w);
                panic!("a worker did not finish");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success(), "a worker failed: {status}");
    }

    // The journal: every operation settled as succeeded.
    let all = admin.list(&OperationState::ALL).unwrap();
    let unsettled: Vec<_> = all.iter().filter(|r| !r.state.is_settled()).collect();
    assert!(unsettled.is_empty(), "unsettled: {unsettled:?}");
    let outbox = all
        .iter()
        .filter(|r| r.operation.order_id.starts_with("fleet-0"))
        .count();
    assert_eq!(outbox, ORDERS, "every outbox order is journaled");
    // The mock declines amounts ending in 402: those end rejected, with no
    // payment; every other one succeeded.
    let declined = |r: &payidem::journal::OperationRecord| {
        let body: serde_json::Value = serde_json::from_slice(&r.operation.body).unwrap();
        body["amount"].as_u64().unwrap() % 1000 == 402
    };
    for r in &all {
        let expected = if declined(r) {
            OperationState::Rejected
        } else {
            OperationState::Succeeded
        };
        assert_eq!(r.state, expected, "{}", r.operation.order_id);
        assert_eq!(
            r.operation.idempotency_key,
            format!("create-{}", r.operation.order_id)
        );
    }
    let mut db = server.connect("fleet");
    let audit = Audit::read(&mut db);
    let stale = audit.stale_writes;
    // Without PID namespaces a killed worker's process is seen gone on this
    // machine, which frees its leases at once (the journal's rule); with
    // them, no lease may go before it lapsed.
    let gone = if fleet.isolation == Isolation::None {
        &killed_owners[..]
    } else {
        &[]
    };
    let early = audit.early_from_live(gone);
    let orders: i64 = db
        .query_one("SELECT count(*) FROM orders", &[])
        .unwrap()
        .get(0);
    assert_eq!(orders as usize, ORDERS);

    // The oracle: one payment per journaled order, under its one key.
    let stats = mock.stats();
    let mut double = 0;
    let mut lost = 0;
    let mut rekeyed = stats.duplicate_order as usize;
    for r in &all {
        match stats.orders.get(&r.operation.order_id) {
            Some(o) => {
                double += (o.payments_created as usize).saturating_sub(1);
                lost += usize::from(o.payments_created == 0 && !declined(r));
                rekeyed += o.duplicate_keys.len();
                assert!(o
                    .idempotency_keys
                    .iter()
                    .all(|k| *k == r.operation.idempotency_key));
            }
            None => lost += usize::from(!declined(r)),
        }
    }
    // No payment the journal does not know of.
    lost += stats
        .orders
        .keys()
        .filter(|id| !all.iter().any(|r| &r.operation.order_id == *id))
        .count();
    let faults: u64 = stats.faults.values().sum();
    let post = stats
        .requests
        .by_route
        .get("POST /v1/payments")
        .copied()
        .unwrap_or(0);
    let faulted_ops: u64 = stats
        .faults
        .iter()
        .filter(|(k, _)| !k.starts_with("status"))
        .map(|(_, v)| v)
        .sum();
    let percent = 100.0 * faulted_ops as f64 / post.max(1) as f64;
    let killed_commit = std::fs::read_to_string(&fleet.marker).unwrap_or_default();

    let summary = format!(
        "fleet run: {:.1} s, {} worker processes, {} POST attempts ({percent:.1} % faulted), \
         stale-lease writes {stale}, early takeovers {}, commit cut: {}, workers in {}\nfleet: \
         {} ops, {WORKERS} \
         workers, {kills} kills, {faults} faults, double {double}, lost {lost}, rekeyed \
         {rekeyed}, {}, paused worker's operations {}\n",
        started.elapsed().as_secs_f64(),
        fleet.spawned,
        post,
        early.len(),
        killed_commit.trim(),
        fleet.isolation.describe(),
        all.len(),
        takeovers.summary(),
        paused.unwrap_or(0),
    );
    let _ = std::io::stderr().write_all(summary.as_bytes());

    assert!(restarted);
    assert!(
        killed_commit.contains("terminated backend"),
        "the COMMIT was never cut"
    );
    assert_eq!((double, lost, rekeyed, stale), (0, 0, 0, 0));
    assert!(kills >= 20);
    assert!(all.len() >= ORDERS);
    assert!(percent >= 30.0, "only {percent:.1} % of attempts faulted");
    // Every operation a killed or paused worker held was taken over, never
    // before its lease lapsed, and settled within what the lease settings
    // promise (plus the loaded host's margin): a database crash and 30 %
    // faults on the way. The times themselves are BENCHMARKS.md's.
    assert!(paused.is_some(), "no worker was paused");
    assert_eq!(takeovers.unsettled, 0, "{}", takeovers.summary());
    assert!(
        early.is_empty(),
        "leases taken before they lapsed, from {early:?}"
    );
    assert!(
        takeovers.times.len() >= KILLS / 2,
        "too few operations of killed workers seen: {}",
        takeovers.summary()
    );
    let bound = worker_takeover_bound();
    for (what, longest, promised) in [
        ("claimed", takeovers.claim_max(), bound.claim()),
        ("settled", takeovers.max(), bound.settle()),
    ] {
        assert!(
            longest <= promised + LOADED_HOST_MARGIN,
            "{what} later than the lease settings allow ({bound:?}: {promised:?} + margin \
             {LOADED_HOST_MARGIN:?}): {}",
            takeovers.summary()
        );
    }
}
