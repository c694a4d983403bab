//! One simulated world, run from one seed: client instances sharing one
//! journal on a simulated disk, a simulated network, the simulated
//! platform, their clocks, and the faults. Events run in simulated time,
//! one at a time, in an order fixed by the seed; the invariants are
//! checked as each event runs.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use payidem::client::{Call, CallStep};
use payidem::journal::{Journal, SimulatedJournal};
use payidem::operation::{AttemptKind, CallTime, End, OperationState};
use payidem::policy::{Reply, RetryBudgetConfig};
use payidem::protocol::headers;
use payidem::sim::{Bug, FaultPoint};
use payidem::{Client, ClientConfig, JournalChoice, OperationSpec};

use crate::platform::{self, Platform, PlatformFault, Request};
use crate::profile::Profile;
use crate::rng::Dice;

/// Simulated Unix time at the start of every run (2026-06-01).
const EPOCH_SECS: u64 = 1_780_272_000;
/// How long the faults-free phase may take to settle every operation.
pub const LIVENESS_BOUND_MS: u64 = 4 * 3600 * 1000;
/// The client's key retention: under the platform's, by more than any
/// clock skew the world makes.
const CLIENT_KEY_RETENTION_SECS: u64 = 47 * 3600;

/// What one run found.
#[derive(Clone, Debug)]
pub struct Report {
    /// The seed of the run.
    pub seed: u64,
    /// Orders created.
    pub operations: u64,
    /// Calls driven.
    pub calls: u64,
    /// Instance crashes and power losses.
    pub crashes: u64,
    /// Faults injected (network, platform, disk, clock, fault points).
    pub faults: u64,
    /// Simulated milliseconds.
    pub simulated_ms: u64,
    /// Events run.
    pub events: u64,
    /// SHA-256 of the whole trace.
    pub trace_hash: String,
    /// The first invariant broken, with the trace that led to it.
    pub violation: Option<Violation>,
}

/// A broken invariant.
#[derive(Clone, Debug)]
pub struct Violation {
    /// What broke.
    pub what: String,
    /// The events that concern the order involved (or the last events).
    pub trace: Vec<String>,
}

#[derive(Clone, Debug)]
enum Event {
    NewOrder,
    Wake {
        inst: usize,
        token: u64,
    },
    Arrive(Box<Copy>),
    Reply {
        inst: usize,
        gen: u64,
        attempt: u64,
        reply: Reply,
    },
    Crash {
        inst: usize,
    },
    Restart {
        inst: usize,
    },
    PowerLoss,
    FsyncFaults,
    ClockStep {
        inst: usize,
    },
    PlatformClockStep,
    Quiet,
}

#[derive(Clone, Debug)]
struct Copy {
    order: String,
    request: Request,
    fault: Option<PlatformFault>,
    /// Where its answer goes: the instance, its generation, the attempt,
    /// the client's deadline, and whether the answer is cut.
    reply_to: Option<(usize, u64, u64, u64, bool)>,
}

struct Active {
    call: Call,
    id: u64,
    order: String,
    started_ms: u64,
    awaiting: Option<(u64, AttemptKind, String)>,
    not_before_ms: Option<u64>,
    /// The nonce of the POST whose answer was last reported, and its status.
    last_post_answer: Option<(String, u16)>,
}

struct Instance {
    client: Option<Client>,
    gen: u64,
    skew: i64,
    wake_token: u64,
    active: Option<Active>,
    /// Calls in a row that settled nothing: the instance looks for work
    /// less often (a sweeper's backoff), down to once in 30 minutes.
    fruitless: u32,
}

struct Order {
    body: Vec<u8>,
    status_path: Option<String>,
}

/// A run.
pub struct World {
    profile: Profile,
    dice: Dice,
    now_ms: u64,
    seq: u64,
    events: BTreeMap<(u64, u64), Event>,
    journal: Arc<SimulatedJournal>,
    platform: Platform,
    instances: Vec<Instance>,
    orders: BTreeMap<String, Order>,
    inbox: VecDeque<String>,
    quiet: bool,
    quiet_since_ms: u64,
    /// The platform's clock against true time, seconds.
    platform_skew: i64,
    key_expired: BTreeSet<String>,
    last_poster: HashMap<String, u64>,
    superseded: HashSet<u64>,
    next_attempt: u64,
    next_call: u64,
    trace: Vec<String>,
    report: Report,
    buggify_on: Arc<std::sync::atomic::AtomicBool>,
}

/// A lease owner without its machine id and process id (the same in every
/// instance of one run, different between runs), so that traces replay.
fn lease_label(owner: &str) -> String {
    let mut tail: Vec<&str> = owner.rsplitn(3, '/').take(2).collect();
    tail.reverse();
    tail.join("/")
}

fn instance_label(i: usize) -> String {
    format!("i{i}")
}

impl World {
    /// A world for `seed`, with `bug` planted.
    pub fn new(seed: u64, bug: Option<Bug>) -> World {
        let mut dice = Dice::new(seed);
        let profile = Profile::draw(&mut dice);
        payidem::sim::set_random_seed(Some(seed ^ 0x5eed_c0de));
        payidem::sim::plant(bug);
        let buggify_on = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let on = Arc::clone(&buggify_on);
        let mut bug_dice = Dice::new(seed ^ 0xb0_991f);
        let p = profile.buggify;
        payidem::sim::set_buggify(Some(Box::new(move |_point: FaultPoint| {
            on.load(std::sync::atomic::Ordering::Relaxed) && bug_dice.chance(p)
        })));
        let mut world = World {
            dice,
            now_ms: 0,
            seq: 0,
            events: BTreeMap::new(),
            journal: Arc::new(SimulatedJournal::new()),
            platform: Platform::new(),
            instances: Vec::new(),
            orders: BTreeMap::new(),
            inbox: VecDeque::new(),
            quiet: false,
            quiet_since_ms: 0,
            platform_skew: 0,
            key_expired: BTreeSet::new(),
            last_poster: HashMap::new(),
            superseded: HashSet::new(),
            next_attempt: 0,
            next_call: 0,
            trace: Vec::new(),
            report: Report {
                seed,
                operations: 0,
                calls: 0,
                crashes: 0,
                faults: 0,
                simulated_ms: 0,
                events: 0,
                trace_hash: String::new(),
                violation: None,
            },
            buggify_on,
            profile,
        };
        let line = format!("profile {:?}", world.profile);
        world.note(line);
        for i in 0..world.profile.instances {
            let skew = world.dice.range(0, 2 * world.profile.max_skew) as i64
                - world.profile.max_skew as i64;
            world.instances.push(Instance {
                client: None,
                gen: 0,
                skew,
                wake_token: 0,
                active: None,
                fruitless: 0,
            });
            world.restart(i);
        }
        world.schedule(0, Event::NewOrder);
        let faults_end = world.profile.fault_ms;
        world.schedule(faults_end, Event::Quiet);
        world.schedule_faults();
        world
    }

    fn note(&mut self, line: String) {
        self.trace.push(line);
    }

    fn schedule(&mut self, at_ms: u64, event: Event) {
        self.seq += 1;
        self.events.insert((at_ms, self.seq), event);
    }

    fn schedule_faults(&mut self) {
        let p = self.profile.clone();
        let end = p.fault_ms;
        let plan = |dice: &mut Dice, mean_ms: u64| -> Vec<u64> {
            let mut at = Vec::new();
            if mean_ms == 0 {
                return at;
            }
            let mut t = dice.range(0, 2 * mean_ms);
            while t < end {
                at.push(t);
                t += dice.range(1, 2 * mean_ms);
            }
            at
        };
        for inst in 0..p.instances {
            for t in plan(&mut self.dice, p.crash_every_ms) {
                self.schedule(t, Event::Crash { inst });
            }
            for t in plan(&mut self.dice, p.clock_step_every_ms) {
                self.schedule(t, Event::ClockStep { inst });
            }
        }
        for t in plan(&mut self.dice, p.clock_step_every_ms) {
            self.schedule(t, Event::PlatformClockStep);
        }
        for t in plan(&mut self.dice, p.power_loss_every_ms) {
            self.schedule(t, Event::PowerLoss);
        }
        for t in plan(&mut self.dice, p.fsync_fault_every_ms) {
            self.schedule(t, Event::FsyncFaults);
        }
    }

    fn violation(&mut self, what: String, order: Option<&str>) {
        if self.report.violation.is_some() {
            return;
        }
        let trace = match order {
            Some(order) => {
                let tag = format!(" {order} ");
                let mut lines: Vec<String> = self
                    .trace
                    .iter()
                    .filter(|l| format!("{l} ").contains(&tag))
                    .cloned()
                    .collect();
                let keep = lines.len().saturating_sub(80);
                lines.drain(..keep);
                lines
            }
            None => self.trace[self.trace.len().saturating_sub(40)..].to_vec(),
        };
        self.note(format!("VIOLATION {what}"));
        self.report.violation = Some(Violation { what, trace });
    }

    /// The Unix time on instance `inst`'s clock.
    fn unix_of(&self, inst: usize) -> u64 {
        let secs = EPOCH_SECS + self.now_ms / 1000;
        secs.saturating_add_signed(self.instances[inst].skew)
    }

    fn platform_now_ms(&self) -> u64 {
        (EPOCH_SECS * 1000 + self.now_ms).saturating_add_signed(self.platform_skew * 1000)
    }

    fn enter(&self, inst: usize) {
        payidem::sim::set_clock(Some(self.unix_of(inst)));
    }

    fn wake(&mut self, inst: usize, at_ms: u64) {
        let token = self.instances[inst].wake_token + 1;
        self.instances[inst].wake_token = token;
        self.schedule(at_ms, Event::Wake { inst, token });
    }

    fn config(&self) -> ClientConfig {
        let mut config = ClientConfig::new("http://127.0.0.1:9", platform::KEY_ID);
        config.journal = JournalChoice::Custom(Arc::clone(&self.journal) as Arc<dyn Journal>);
        config.request_timeout = Duration::from_secs(10);
        config.key_retention = Duration::from_secs(CLIENT_KEY_RETENTION_SECS);
        config.lease_ttl = Some(Duration::from_secs(self.profile.lease_ttl_secs));
        config.retry_budget = RetryBudgetConfig::default();
        // Nothing is ever connected to; a one-certificate trust store spares
        // reading the system's at every restart.
        config.ca_bundle = Some(concat!(env!("CARGO_MANIFEST_DIR"), "/unused-ca.pem").into());
        config
    }

    fn restart(&mut self, inst: usize) {
        self.enter(inst);
        match Client::new(self.config(), platform::SECRET) {
            Ok(client) => {
                self.instances[inst].client = Some(client);
                self.note(format!("{} {} up", self.now_ms, instance_label(inst)));
                let at = self.now_ms + self.dice.range(1, 1000);
                self.wake(inst, at);
            }
            Err(e) => {
                self.note(format!(
                    "{} {} start failed: {e}",
                    self.now_ms,
                    instance_label(inst)
                ));
                let at = self.now_ms + 1000;
                self.schedule(at, Event::Restart { inst });
            }
        }
    }

    /// Runs the world to its end; the report.
    pub fn run(mut self) -> Report {
        while let Some(((at, _), event)) = self.events.pop_first() {
            self.now_ms = at;
            self.report.events += 1;
            self.handle(event);
            if self.report.violation.is_some() {
                break;
            }
            if self.quiet && self.settled() {
                break;
            }
            if self.quiet && self.now_ms > self.quiet_since_ms + LIVENESS_BOUND_MS {
                let open = self.unsettled();
                let first = open.first().cloned().unwrap_or_default();
                let what = format!(
                    "liveness: {} operations unsettled {} h after the faults stopped (first: {first})",
                    open.len(),
                    LIVENESS_BOUND_MS / 3_600_000
                );
                self.violation(what, Some(&first));
                break;
            }
        }
        self.finish()
    }

    fn finish(mut self) -> Report {
        if self.report.violation.is_none() {
            self.final_checks();
        }
        self.report.simulated_ms = self.now_ms;
        self.report.trace_hash =
            payidem::protocol::body_sha256_hex(self.trace.join("\n").as_bytes());
        // Every active call is dropped as a crash would leave it.
        for inst in &mut self.instances {
            if let Some(active) = inst.active.take() {
                active.call.crash();
            }
        }
        payidem::sim::set_clock(None);
        payidem::sim::set_random_seed(None);
        payidem::sim::plant(None);
        payidem::sim::set_buggify(None);
        self.report
    }

    /// Orders not settled in the journal (nor left with an expired key).
    fn unsettled(&self) -> Vec<String> {
        let mut open: Vec<String> = self.inbox.iter().cloned().collect();
        for order in self.orders.keys() {
            if self.key_expired.contains(order) {
                continue;
            }
            match self.journal.get(order) {
                Ok(Some(r)) if r.state.is_settled() => {}
                _ => open.push(order.clone()),
            }
        }
        open
    }

    fn settled(&self) -> bool {
        self.inbox.is_empty()
            && self.instances.iter().all(|i| i.active.is_none())
            && self.unsettled().is_empty()
    }

    fn final_checks(&mut self) {
        let orders: Vec<String> = self.orders.keys().cloned().collect();
        for order in orders {
            self.check_row(&order);
        }
    }

    /// The journal's view of `order` agrees with the platform's truth.
    fn check_row(&mut self, order: &str) {
        let Ok(Some(record)) = self.journal.get(order) else {
            return;
        };
        let paid = self.platform.paid(order);
        let wrong = match record.state {
            OperationState::Succeeded => !paid,
            OperationState::Rejected => paid,
            _ => false,
        };
        if wrong {
            let what = format!(
                "order {order}: the journal says {} but the platform {}",
                record.state.as_str(),
                if paid {
                    "made the payment"
                } else {
                    "has no payment"
                }
            );
            self.violation(what, Some(order));
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::NewOrder => self.new_order(),
            Event::Wake { inst, token } => {
                if self.instances[inst].wake_token == token && self.instances[inst].client.is_some()
                {
                    self.step_instance(inst);
                }
            }
            Event::Arrive(copy) => self.arrive(*copy),
            Event::Reply {
                inst,
                gen,
                attempt,
                reply,
            } => self.reply(inst, gen, attempt, reply),
            Event::Crash { inst } => self.crash(inst),
            Event::Restart { inst } => {
                if self.instances[inst].client.is_none() {
                    self.restart(inst);
                }
            }
            Event::PowerLoss => {
                let keep = self.profile.torn_keep;
                let mut dice = Dice::new(self.dice.draw());
                self.journal.power_loss(&mut || dice.chance(keep));
                self.report.crashes += 1;
                self.report.faults += 1;
                self.note(format!("{} power loss of the journal's disk", self.now_ms));
            }
            Event::FsyncFaults => {
                let n = self.dice.range(1, 3) as u32;
                self.journal.fail_next_syncs(n);
                self.report.faults += 1;
                self.note(format!("{} the next {n} fsyncs fail", self.now_ms));
            }
            Event::ClockStep { inst } => {
                let max = self.profile.max_skew as i64 + 250;
                let step = self.dice.range(0, 2 * max as u64) as i64 - max;
                self.instances[inst].skew = (self.instances[inst].skew + step).clamp(-max, max);
                self.report.faults += 1;
                let skew = self.instances[inst].skew;
                self.note(format!(
                    "{} {} clock steps {step} s (skew {skew} s)",
                    self.now_ms,
                    instance_label(inst)
                ));
            }
            Event::PlatformClockStep => {
                let step = self.dice.range(0, 240) as i64 - 120;
                self.platform_skew = (self.platform_skew + step).clamp(-240, 240);
                self.report.faults += 1;
                let skew = self.platform_skew;
                self.note(format!(
                    "{} platform clock steps {step} s (skew {skew} s)",
                    self.now_ms
                ));
            }
            Event::Quiet => {
                self.quiet = true;
                self.quiet_since_ms = self.now_ms;
                self.buggify_on
                    .store(false, std::sync::atomic::Ordering::Relaxed);
                self.journal.fail_next_syncs(0);
                self.note(format!("{} faults stop", self.now_ms));
                for inst in 0..self.instances.len() {
                    if self.instances[inst].client.is_none() {
                        self.restart(inst);
                    }
                }
            }
        }
    }

    fn new_order(&mut self) {
        let n = self.report.operations;
        if n >= self.profile.orders || self.quiet {
            return;
        }
        self.report.operations += 1;
        let order = format!("o{n}");
        let amount = self.dice.range(1, 100_000);
        let body = serde_json::json!({"order_id": order, "amount": amount})
            .to_string()
            .into_bytes();
        let status_path = self
            .dice
            .chance(self.profile.status_path_share)
            .then(|| format!("/orders/{order}"));
        self.note(format!(
            "{} new order {order} amount {amount} status {}",
            self.now_ms,
            status_path.is_some()
        ));
        self.orders
            .insert(order.clone(), Order { body, status_path });
        self.inbox.push_back(order);
        let inst = self.dice.range(0, self.instances.len() as u64 - 1) as usize;
        if self.instances[inst].active.is_none() && self.instances[inst].client.is_some() {
            let at = self.now_ms + 1;
            self.wake(inst, at);
        }
        let gap = self
            .dice
            .range(self.profile.order_gap_ms.0, self.profile.order_gap_ms.1);
        let at = self.now_ms + gap;
        self.schedule(at, Event::NewOrder);
    }

    fn crash(&mut self, inst: usize) {
        if self.quiet || self.instances[inst].client.is_none() {
            return;
        }
        let i = &mut self.instances[inst];
        i.gen += 1;
        i.client = None;
        let order = i.active.take().map(|a| {
            let order = a.order.clone();
            a.call.crash();
            order
        });
        self.report.crashes += 1;
        self.report.faults += 1;
        self.note(format!(
            "{} {} crashes (driving {})",
            self.now_ms,
            instance_label(inst),
            order.as_deref().unwrap_or("nothing")
        ));
        let down = self.dice.range(100, self.profile.down_max_ms);
        let at = self.now_ms + down;
        self.schedule(at, Event::Restart { inst });
    }

    fn step_instance(&mut self, inst: usize) {
        if self.instances[inst].active.is_some() {
            if self.instances[inst]
                .active
                .as_ref()
                .is_some_and(|a| a.awaiting.is_some())
            {
                return;
            }
            self.drive(inst);
            return;
        }
        self.enter(inst);
        let client = self.instances[inst]
            .client
            .clone()
            .expect("an instance that is up");
        let (order, call) = if let Some(order) = self.inbox.pop_front() {
            let o = &self.orders[&order];
            let spec = OperationSpec {
                order_id: &order,
                method: "POST",
                path: "/payments",
                body: &o.body,
                idempotency_key: None,
                status_path: o.status_path.as_deref(),
            };
            let begun = client.begin(&spec, None);
            if begun.is_err() {
                // The application keeps the order and tries again later.
                self.inbox.push_back(order.clone());
            }
            (order, begun)
        } else {
            let candidates: Vec<String> = match self.journal.list(&[
                OperationState::Pending,
                OperationState::InFlight,
                OperationState::Unknown,
            ]) {
                Ok(rows) => rows
                    .into_iter()
                    .map(|r| r.operation.order_id)
                    .filter(|o| !self.key_expired.contains(o))
                    .collect(),
                Err(_) => Vec::new(),
            };
            if candidates.is_empty() {
                let (lo, hi) = self.idle_ms(inst);
                let at = self.now_ms + self.dice.range(lo, hi);
                self.wake(inst, at);
                return;
            }
            let order =
                candidates[self.dice.range(0, candidates.len() as u64 - 1) as usize].clone();
            (order.clone(), client.begin_resume(&order, None))
        };
        match call {
            Ok(call) => {
                self.next_call += 1;
                self.report.calls += 1;
                self.note(format!(
                    "{} {} call c{} {order} begins (lease {})",
                    self.now_ms,
                    instance_label(inst),
                    self.next_call,
                    lease_label(call.lease_owner())
                ));
                self.instances[inst].active = Some(Active {
                    call,
                    id: self.next_call,
                    order,
                    started_ms: self.now_ms,
                    awaiting: None,
                    not_before_ms: None,
                    last_post_answer: None,
                });
                self.drive(inst);
            }
            Err(e) => {
                self.note(format!(
                    "{} {} {order} not begun: {}",
                    self.now_ms,
                    instance_label(inst),
                    e.code().as_str()
                ));
                let (lo, hi) = self.idle_ms(inst);
                let at = self.now_ms + self.dice.range(lo, hi);
                self.wake(inst, at);
            }
        }
    }

    fn idle_ms(&self, inst: usize) -> (u64, u64) {
        if self.quiet {
            return (500, 5_000);
        }
        let (lo, hi) = self.profile.idle_ms;
        let backoff = 1u64 << self.instances[inst].fruitless.min(8);
        (lo, (hi * backoff).min(30 * 60 * 1000))
    }

    fn call_time(&self, inst: usize) -> CallTime {
        let started = self.instances[inst]
            .active
            .as_ref()
            .map_or(0, |a| a.started_ms);
        CallTime {
            unix: self.unix_of(inst),
            elapsed: Duration::from_millis(self.now_ms - started),
        }
    }

    /// Steps the active call of `inst` until it sends, waits or ends.
    fn drive(&mut self, inst: usize) {
        self.enter(inst);
        let now = self.call_time(inst);
        let active = self.instances[inst]
            .active
            .as_mut()
            .expect("an active call");
        let step = active.call.step_at(now);
        match step {
            CallStep::Send { attempt, timeout } => self.send(inst, attempt, timeout),
            CallStep::Wait(wait) => {
                let ms = (wait.as_micros().div_ceil(1000) as u64).max(1);
                let at = self.now_ms + ms;
                self.wake(inst, at);
            }
            CallStep::Done(result) => {
                let active = self.instances[inst].active.take().expect("an active call");
                let settled = matches!(active.call.end(), Some(e) if e.is_final());
                self.ended(inst, active, result);
                let i = &mut self.instances[inst];
                i.fruitless = if settled {
                    0
                } else {
                    i.fruitless.saturating_add(1)
                };
                let (lo, hi) = if self.inbox.is_empty() {
                    self.idle_ms(inst)
                } else {
                    (1, 2_000)
                };
                let at = self.now_ms + self.dice.range(lo, hi);
                self.wake(inst, at);
            }
        }
    }

    fn ended(&mut self, inst: usize, active: Active, result: payidem::Result<payidem::Outcome>) {
        let order = active.order.clone();
        let end = active.call.end().cloned();
        let name = end.as_ref().map_or("none", End::as_str);
        let said = match &result {
            Ok(o) => format!("ok replayed={}", o.response.replayed),
            Err(e) => e.code().as_str().to_owned(),
        };
        self.note(format!(
            "{} {} call c{} {order} ends {name} ({said})",
            self.now_ms,
            instance_label(inst),
            active.id
        ));
        let paid = self.platform.paid(&order);
        let wrong = match &end {
            Some(End::Succeeded(_)) => {
                (!paid).then_some("succeeded, but the platform has no payment")
            }
            Some(End::Rejected(_)) => paid.then_some("rejected, but the platform made the payment"),
            // Told to the caller only when the call still held the lease
            // (its end stored): otherwise another call may have paid since.
            Some(e @ (End::Refused { .. } | End::NotSent { .. })) => {
                let told =
                    matches!(&result, Err(err) if Some(err.code()) == e.kind().meaning().error);
                (told && paid).then_some("said nothing happened, but the platform made the payment")
            }
            _ => None,
        };
        if let Some(why) = wrong {
            self.violation(
                format!("order {order}: call c{} {why}", active.id),
                Some(&order),
            );
        }
        if matches!(end, Some(End::KeyExpired { .. })) {
            self.key_expired.insert(order.clone());
        }
        // A payment made by another request than the one whose answer
        // settled the call was replayed: never reported as new.
        if let (Ok(outcome), Some((nonce, status))) = (&result, &active.last_post_answer) {
            let creator = self
                .platform
                .payments
                .get(&order)
                .and_then(|p| p.first())
                .map(|p| p.nonce.clone());
            if (200..300).contains(status)
                && creator.as_deref() != Some(nonce.as_str())
                && !outcome.response.replayed
            {
                let what = format!(
                    "order {order}: call c{} reported a replayed answer as a new payment",
                    active.id
                );
                self.violation(what, Some(&order));
            }
        }
        self.check_row(&order);
        active.call.crash();
    }

    fn send(&mut self, inst: usize, attempt: payidem::operation::Attempt, timeout: Duration) {
        self.next_attempt += 1;
        let attempt_id = self.next_attempt;
        let gen = self.instances[inst].gen;
        let (call_id, order, lease_owner, not_before) = {
            let a = self.instances[inst]
                .active
                .as_mut()
                .expect("an active call");
            let nb = a.not_before_ms.take();
            (a.id, a.order.clone(), a.call.lease_owner().to_owned(), nb)
        };
        let nonce = headers::find(&attempt.headers, headers::NONCE)
            .unwrap_or("")
            .to_owned();
        let kind = attempt.kind;
        self.note(format!(
            "{} {} call c{call_id} {order} sends #{} {} {}",
            self.now_ms,
            instance_label(inst),
            attempt.number,
            kind.as_str(),
            attempt.path
        ));
        if let Some(nb) = not_before {
            if self.now_ms < nb {
                let what = format!(
                    "order {order}: call c{call_id} sent {} ms before the platform's Retry-After allowed",
                    nb - self.now_ms
                );
                self.violation(what, Some(&order));
            }
        }
        if kind == AttemptKind::Operation {
            self.check_post(call_id, &order, &lease_owner, attempt.number);
        }
        self.instances[inst]
            .active
            .as_mut()
            .expect("active")
            .awaiting = Some((attempt_id, kind, nonce));
        let deadline = self.now_ms + timeout.as_millis() as u64;
        // The client gives up on the attempt at its timeout at the latest.
        self.schedule(
            deadline,
            Event::Reply {
                inst,
                gen,
                attempt: attempt_id,
                reply: Reply::SentNoResponse("timed out".into()),
            },
        );
        let mut body = attempt.body.to_vec();
        let mut request_headers: Vec<(String, String)> = attempt
            .headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), v.clone()))
            .collect();
        if !body.is_empty() {
            request_headers.push(("Content-Type".into(), "application/json".into()));
        }
        let p = self.profile.clone();
        let faulty = !self.quiet;
        let outage = faulty
            && p.outage
                .is_some_and(|(s, e)| self.now_ms >= s && self.now_ms < e);
        if outage || (faulty && self.dice.chance(p.not_sent)) {
            self.report.faults += 1;
            self.note(format!(
                "{} net: #{attempt_id} {order} connection refused",
                self.now_ms
            ));
            let at = self.now_ms + self.dice.range(1, 50);
            self.schedule(
                at,
                Event::Reply {
                    inst,
                    gen,
                    attempt: attempt_id,
                    reply: Reply::NotSent("connection refused".into()),
                },
            );
            return;
        }
        if faulty && kind == AttemptKind::Operation && self.dice.chance(p.corrupt) {
            // A digit of the amount changed in transit (the body keeps its length).
            if let Some(pos) = body.iter().rposition(u8::is_ascii_digit) {
                body[pos] = b'0' + (body[pos] - b'0' + 1) % 10;
                self.report.faults += 1;
                self.note(format!(
                    "{} net: #{attempt_id} {order} body corrupted",
                    self.now_ms
                ));
            }
        }
        if faulty && self.dice.chance(p.partial) {
            let cut = self.dice.range(0, body.len() as u64) as usize;
            body.truncate(cut);
            self.report.faults += 1;
            self.note(format!(
                "{} net: #{attempt_id} {order} partial body ({cut} bytes)",
                self.now_ms
            ));
        }
        let fault = if faulty && self.dice.chance(p.platform_fault) {
            self.report.faults += 1;
            Some(match kind {
                AttemptKind::Operation => match self.dice.range(0, 6) {
                    0 => PlatformFault::E500Before,
                    1 => PlatformFault::E500After,
                    2 => PlatformFault::E502,
                    3 => PlatformFault::E503Secs(self.dice.range(1, 8)),
                    4 => PlatformFault::E429Date(self.dice.range(1, 8)),
                    5 => PlatformFault::E504Before,
                    _ => PlatformFault::E504After,
                },
                AttemptKind::StatusQuery => match self.dice.range(0, 2) {
                    0 => PlatformFault::E503Secs(self.dice.range(1, 8)),
                    1 => PlatformFault::E500Before,
                    _ => PlatformFault::E504Before,
                },
            })
        } else {
            None
        };
        let request = Request {
            method: attempt.method.clone(),
            path: attempt.path.clone(),
            headers: request_headers,
            body,
        };
        let lost = faulty && self.dice.chance(p.lost);
        let cut = faulty && self.dice.chance(p.cut);
        let copies = if faulty && self.dice.chance(p.duplicate) {
            2
        } else {
            1
        };
        for copy in 0..copies {
            if copy == 0 && lost {
                self.report.faults += 1;
                self.note(format!(
                    "{} net: #{attempt_id} {order} request lost",
                    self.now_ms
                ));
                continue;
            }
            let delay = if faulty && self.dice.chance(p.delay) {
                self.report.faults += 1;
                self.dice.range(1, 30_000)
            } else {
                self.dice.range(1, 40)
            };
            let reply_to = (copy == 0).then_some((inst, gen, attempt_id, deadline, cut));
            if copy == 1 {
                self.report.faults += 1;
                self.note(format!(
                    "{} net: #{attempt_id} {order} duplicated (+{delay} ms)",
                    self.now_ms
                ));
            }
            let at = self.now_ms + delay;
            self.schedule(
                at,
                Event::Arrive(Box::new(Copy {
                    order: order.clone(),
                    request: request.clone(),
                    fault,
                    reply_to,
                })),
            );
        }
    }

    /// Checks a POST about to leave: its record is durable, its sender
    /// holds the lease, and no call taken over from sends again.
    fn check_post(&mut self, call_id: u64, order: &str, lease_owner: &str, number: u32) {
        let durable = self.journal.durable_record(order);
        let ok = durable
            .as_ref()
            .is_some_and(|r| r.state == OperationState::InFlight && r.attempts >= number);
        if !ok {
            let what = format!(
                "order {order}: attempt {number} sent before its record was durable (disk holds {})",
                durable.map_or("no row".to_owned(), |r| format!("{} with {} attempts", r.state.as_str(), r.attempts))
            );
            self.violation(what, Some(order));
        }
        let holder = self.journal.lease_holder(order).map(|(o, _)| o);
        if holder.as_deref() != Some(lease_owner) {
            let what = format!("order {order}: call c{call_id} sent without holding the lease");
            self.violation(what, Some(order));
        }
        if self.superseded.contains(&call_id) {
            let what = format!(
                "order {order}: call c{call_id} sent after another call took the operation over (two live lease holders)"
            );
            self.violation(what, Some(order));
        }
        if let Some(previous) = self.last_poster.insert(order.to_owned(), call_id) {
            if previous != call_id {
                self.superseded.insert(previous);
            }
        }
    }

    fn arrive(&mut self, copy: Copy) {
        let processing = if !self.quiet && self.dice.chance(self.profile.slow_commit) {
            self.dice.range(500, 15_000)
        } else {
            self.dice.range(0, 200)
        };
        let orders = &self.orders;
        let frozen = |o: &str| orders.get(o).map(|x| x.body.clone());
        let now = self.platform_now_ms();
        let answer = self
            .platform
            .handle(&copy.request, now, copy.fault, processing, &frozen);
        // Back to true time: the answer leaves after the work it waited for.
        let ready = self.now_ms + answer.ready_at_ms.saturating_sub(now);
        self.note(format!(
            "{} platform {} {} {}: {}{}",
            self.now_ms,
            copy.order,
            copy.request.method,
            copy.fault.map_or("", Platform::fault_name),
            answer.response.status,
            if answer.response.replayed {
                " replayed"
            } else {
                ""
            }
        ));
        if let Some(what) = answer.violation {
            self.violation(what, Some(&copy.order));
            return;
        }
        self.check_row(&copy.order);
        let Some((inst, gen, attempt, deadline, cut)) = copy.reply_to else {
            return;
        };
        let back = self.dice.range(1, 40);
        let at = ready.max(self.now_ms) + back;
        if at >= deadline {
            return;
        }
        let reply = if cut {
            self.report.faults += 1;
            Reply::SentNoResponse("connection reset after the request was sent".into())
        } else {
            Reply::Response(answer.response)
        };
        self.schedule(
            at,
            Event::Reply {
                inst,
                gen,
                attempt,
                reply,
            },
        );
    }

    fn reply(&mut self, inst: usize, gen: u64, attempt: u64, reply: Reply) {
        let i = &mut self.instances[inst];
        if i.gen != gen {
            return;
        }
        let Some(active) = i.active.as_mut() else {
            return;
        };
        let Some((awaited, kind, nonce)) = active.awaiting.clone() else {
            return;
        };
        if awaited != attempt {
            return;
        }
        active.awaiting = None;
        if let Reply::Response(r) = &reply {
            if matches!(r.status, 429 | 503) {
                let secs = r
                    .header_pairs()
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(headers::RETRY_AFTER))
                    .and_then(|(_, v)| v.parse::<u64>().ok());
                active.not_before_ms = secs.map(|s| self.now_ms + s * 1000);
            }
            if kind == AttemptKind::Operation {
                active.last_post_answer = Some((nonce, r.status));
            }
        } else if kind == AttemptKind::Operation {
            active.last_post_answer = None;
        }
        let what = match &reply {
            Reply::Response(r) => format!("HTTP {}", r.status),
            Reply::NotSent(w) | Reply::SentNoResponse(w) => w.clone(),
        };
        let (id, order) = (active.id, active.order.clone());
        self.note(format!(
            "{} {} call c{id} {order} told {what}",
            self.now_ms,
            instance_label(inst)
        ));
        self.enter(inst);
        let now = self.call_time(inst);
        let active = self.instances[inst].active.as_mut().expect("active");
        active.call.report_at(reply, now);
        self.drive(inst);
    }
}
