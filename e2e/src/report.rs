//! The figures of a chaos run or a demo, from the mock's oracle, the shared
//! journal and the workers' event lines, and the invariants they must meet.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use payidem::journal::{Journal, SqliteJournal, SqliteJournalOptions};
use payidem::operation::OperationState;
use serde_json::Value;

use crate::plan::Plan;

/// Everything a run is judged by.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// Payments planned.
    pub payments_planned: usize,
    /// Refunds planned.
    pub refunds_planned: usize,
    /// Signed `/v1` requests the platform saw (operation attempts and status
    /// queries).
    pub attempts: u64,
    /// Of which POSTs (operation attempts).
    pub operation_attempts: u64,
    /// Of which signed GETs (status queries).
    pub status_queries: u64,
    /// Faults the platform injected, per kind.
    pub faults: BTreeMap<String, u64>,
    /// Answers the platform replayed from its idempotency store.
    pub replays: u64,
    /// Worker processes started.
    pub workers: usize,
    /// Worker processes killed with SIGKILL (by the test, or by themselves
    /// at a sync point of the journal).
    pub kills: usize,
    /// Workers that SIGKILLed themselves at a sync point of the journal's
    /// durable write path (`crash POINT PID` lines), by point.
    pub crashes: BTreeMap<String, usize>,
    /// Operations a killed worker left in flight or unknown that a later
    /// worker settled by resuming them (distinct order ids).
    pub resumed: usize,
    /// Resume calls that found the operation still leased by a killed worker
    /// (its lease had not lapsed yet), or ended otherwise unsettled, by code.
    pub resume_errors: BTreeMap<String, usize>,
    /// Attempt events the clients reported (a killed worker may lose its
    /// last few).
    pub events: usize,
    /// Journal states of every operation, by name.
    pub outcomes: BTreeMap<String, usize>,
    /// Payments per planned, non-declined order id: (min, max, orders with
    /// exactly one).
    pub payments_per_order: (u64, u64, usize),
    /// Non-declined orders planned.
    pub orders_expecting_payment: usize,
    /// Most idempotency keys the platform saw creating or trying to create
    /// one order's payment.
    pub max_keys_per_order: usize,
    /// Creates refused as a second payment of an order.
    pub duplicate_order: u64,
    /// Payments and refunds the platform holds.
    pub platform_payments: u64,
    /// Refunds the platform holds.
    pub platform_refunds: u64,
    /// Every invariant that failed, in words.
    pub violations: Vec<String>,
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

impl Figures {
    /// Gathers the figures of `plan` from the oracle `stats` (the JSON of
    /// `GET /_mock/stats`), the journal file and the events file, and checks
    /// the invariants: one payment per order under one key, no duplicate,
    /// every refund exactly once, every operation settled as planned.
    pub fn gather(
        plan: &Plan,
        stats: &Value,
        journal: &Path,
        events: &Path,
        kills: usize,
    ) -> Figures {
        let mut f = Figures {
            payments_planned: plan.orders,
            refunds_planned: plan.refunds(),
            kills,
            ..Figures::default()
        };
        let empty = serde_json::Map::new();
        let by_route = stats["requests"]["by_route"].as_object().unwrap_or(&empty);
        for (route, n) in by_route {
            if route.starts_with("POST /v1") {
                f.operation_attempts += u(n);
            } else if route.starts_with("GET /v1") {
                f.status_queries += u(n);
            }
        }
        f.attempts = f.operation_attempts + f.status_queries;
        if let Some(faults) = stats["faults"].as_object() {
            f.faults = faults.iter().map(|(k, v)| (k.clone(), u(v))).collect();
        }
        f.replays = u(&stats["replays"]);
        f.duplicate_order = u(&stats["duplicate_order"]);
        f.platform_payments = u(&stats["payments"]);
        f.platform_refunds = u(&stats["refunds"]);
        if f.duplicate_order != 0 {
            f.violations
                .push(format!("{} duplicate_order answers", f.duplicate_order));
        }

        let orders = stats["orders"].as_object().unwrap_or(&empty);
        let mut min = u64::MAX;
        let mut max = 0;
        let mut exactly_one = 0;
        for order in plan.all() {
            let entry = orders.get(&order.order_id);
            let created = entry.map_or(0, |o| u(&o["payments_created"]));
            let keys: Vec<&str> = entry
                .and_then(|o| o["idempotency_keys"].as_array())
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let duplicates = entry
                .and_then(|o| o["duplicate_keys"].as_array())
                .map_or(0, Vec::len);
            f.max_keys_per_order = f.max_keys_per_order.max(keys.len() + duplicates);
            if duplicates > 0 {
                f.violations
                    .push(format!("{}: tried with a second key", order.order_id));
            }
            if order.declined {
                if created != 0 {
                    f.violations.push(format!(
                        "{}: declined but {created} payments",
                        order.order_id
                    ));
                }
                continue;
            }
            f.orders_expecting_payment += 1;
            min = min.min(created);
            max = max.max(created);
            if created == 1 {
                exactly_one += 1;
            } else {
                f.violations
                    .push(format!("{}: {created} payments", order.order_id));
            }
            let key = format!("create-{}", order.order_id);
            if created == 1 && keys != [key.as_str()] {
                f.violations
                    .push(format!("{}: created under keys {keys:?}", order.order_id));
            }
        }
        f.payments_per_order = (if min == u64::MAX { 0 } else { min }, max, exactly_one);
        if f.platform_payments != f.orders_expecting_payment as u64 {
            f.violations.push(format!(
                "the platform holds {} payments, {} planned",
                f.platform_payments, f.orders_expecting_payment
            ));
        }
        if f.platform_refunds != f.refunds_planned as u64 {
            f.violations.push(format!(
                "the platform holds {} refunds, {} planned",
                f.platform_refunds, f.refunds_planned
            ));
        }

        f.check_journal(plan, journal);
        f.read_events(events);
        f
    }

    fn check_journal(&mut self, plan: &Plan, path: &Path) {
        let journal = match SqliteJournal::open(path, SqliteJournalOptions::default()) {
            Ok(j) => j,
            Err(e) => {
                self.violations.push(format!("journal: {e}"));
                return;
            }
        };
        match journal.list(&OperationState::ALL) {
            Ok(records) => {
                for r in &records {
                    *self
                        .outcomes
                        .entry(r.state.as_str().to_owned())
                        .or_default() += 1;
                }
            }
            Err(e) => self.violations.push(format!("journal: {e}")),
        }
        let state = |id: &str| journal.get(id).ok().flatten().map(|r| r.state);
        for order in plan.all() {
            let want = if order.declined {
                OperationState::Rejected
            } else {
                OperationState::Succeeded
            };
            let got = state(&order.order_id);
            if got != Some(want) {
                self.violations
                    .push(format!("{}: journal state {got:?}", order.order_id));
            }
            if order.refund.is_some() {
                let id = crate::refund_order_id(&order.order_id);
                let got = state(&id);
                if got != Some(OperationState::Succeeded) {
                    self.violations.push(format!("{id}: journal state {got:?}"));
                }
            }
        }
    }

    fn read_events(&mut self, path: &Path) {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut resumed = std::collections::BTreeSet::new();
        for line in text.lines() {
            let mut words = line.split(' ');
            match words.next() {
                Some("start") => self.workers += 1,
                Some("event") => self.events += 1,
                Some("crash") => {
                    if let Some(point) = words.next() {
                        *self.crashes.entry(point.to_owned()).or_default() += 1;
                    }
                }
                Some("resume") => match (words.next(), words.next()) {
                    (Some(id), Some("ok")) => {
                        resumed.insert(id.to_owned());
                    }
                    (_, Some(code)) => *self.resume_errors.entry(code.to_owned()).or_default() += 1,
                    _ => {}
                },
                _ => {}
            }
        }
        self.resumed = resumed.len();
    }

    /// Faults injected, all kinds.
    pub fn faulted(&self) -> u64 {
        self.faults.values().sum()
    }

    /// Faulted attempts as a percentage of all attempts.
    pub fn faulted_percent(&self) -> f64 {
        if self.attempts == 0 {
            return 0.0;
        }
        self.faulted() as f64 * 100.0 / self.attempts as f64
    }

    /// A short table for people.
    pub fn table(&self) -> String {
        let mut t = String::new();
        let mut row = |name: &str, value: String| {
            let _ = writeln!(t, "  {name:<34} {value}");
        };
        row(
            "operations (payments + refunds)",
            format!(
                "{} ({} + {})",
                self.payments_planned + self.refunds_planned,
                self.payments_planned,
                self.refunds_planned
            ),
        );
        row(
            "attempts seen by the platform",
            format!(
                "{} ({} POST, {} status queries)",
                self.attempts, self.operation_attempts, self.status_queries
            ),
        );
        row(
            "faulted attempts",
            format!("{} ({:.1} %)", self.faulted(), self.faulted_percent()),
        );
        for (kind, n) in &self.faults {
            row(&format!("  {kind}"), n.to_string());
        }
        row("replays by the platform", self.replays.to_string());
        row(
            "worker processes / SIGKILLs",
            format!("{} / {}", self.workers, self.kills),
        );
        let crashes: Vec<String> = self
            .crashes
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        row(
            "  of them at journal sync points",
            if crashes.is_empty() {
                "none".to_owned()
            } else {
                crashes.join(", ")
            },
        );
        row("operations resumed after a kill", self.resumed.to_string());
        for (code, n) in &self.resume_errors {
            row(&format!("  resume calls: {code}"), n.to_string());
        }
        row("attempt events logged", self.events.to_string());
        let outcomes: Vec<String> = self
            .outcomes
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        row("journal outcomes", outcomes.join(", "));
        let (min, max, one) = self.payments_per_order;
        row(
            "payments per order id (min/max)",
            format!(
                "{min} / {max}; {one} of {} with exactly 1",
                self.orders_expecting_payment
            ),
        );
        row(
            "platform payments / refunds",
            format!("{} / {}", self.platform_payments, self.platform_refunds),
        );
        row(
            "keys per order id (max)",
            self.max_keys_per_order.to_string(),
        );
        row("duplicate_order", self.duplicate_order.to_string());
        row(
            "invariant violations",
            if self.violations.is_empty() {
                "none".to_owned()
            } else {
                self.violations.len().to_string()
            },
        );
        for v in self.violations.iter().take(20) {
            let _ = writeln!(t, "    ! {v}");
        }
        t
    }
}
