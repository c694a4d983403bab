//! Runs seeds: one, a list (the regression seeds), or as many as fit in
//! a budget of real time; and hunts a planted bug.

use std::time::{Duration, Instant};

use payidem::sim::Bug;

use crate::world::{Report, World};

/// Runs the world of `seed` with `bug` planted.
pub fn run_seed(seed: u64, bug: Option<Bug>) -> Report {
    World::new(seed, bug).run()
}

/// Totals over many runs.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Seeds run.
    pub seeds: u64,
    /// Orders created.
    pub operations: u64,
    /// Instance crashes and power losses.
    pub crashes: u64,
    /// Faults injected.
    pub faults: u64,
    /// Events run.
    pub events: u64,
    /// Simulated milliseconds.
    pub simulated_ms: u64,
    /// Runs that broke an invariant.
    pub violations: u64,
    /// The first failing run.
    pub failure: Option<Report>,
    /// Real time taken.
    pub real: Duration,
}

impl Summary {
    /// Adds one run.
    pub fn add(&mut self, report: Report) {
        self.seeds += 1;
        self.operations += report.operations;
        self.crashes += report.crashes;
        self.faults += report.faults;
        self.events += report.events;
        self.simulated_ms += report.simulated_ms;
        if report.violation.is_some() {
            self.violations += 1;
            if self.failure.is_none() {
                self.failure = Some(report);
            }
        }
    }

    /// The one summary line.
    pub fn line(&self) -> String {
        format!(
            "sim: {} seeds, {} operations, {} crashes, {} faults, {:.1} simulated hours, violations {}",
            self.seeds,
            self.operations,
            self.crashes,
            self.faults,
            self.simulated_ms as f64 / 3_600_000.0,
            self.violations
        )
    }

    /// Simulated operations per real second and simulated seconds per real second.
    pub fn rates(&self) -> (f64, f64) {
        let real = self.real.as_secs_f64().max(1e-9);
        (
            self.operations as f64 / real,
            self.simulated_ms as f64 / 1000.0 / real,
        )
    }
}

/// Runs `seeds`, then fresh seeds from `first` on until `budget` of real
/// time has passed, stopping at the first violation.
pub fn run_for(seeds: &[u64], first: u64, budget: Duration, bug: Option<Bug>) -> Summary {
    let started = Instant::now();
    let mut summary = Summary::default();
    let fresh = (first..).take_while(|_| started.elapsed() < budget);
    for seed in seeds.iter().copied().chain(fresh) {
        summary.add(run_seed(seed, bug));
        if summary.failure.is_some() {
            break;
        }
    }
    summary.real = started.elapsed();
    summary
}

/// The regression seeds of `text`: one a line, `#` starts a comment.
pub fn parse_seeds(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|l| l.split('#').next())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| l.parse().unwrap_or_else(|_| panic!("not a seed: {l:?}")))
        .collect()
}

/// Prints a failing run: its seed, what broke and its minimal trace.
pub fn describe(report: &Report) -> String {
    let mut out = String::new();
    if let Some(v) = &report.violation {
        out.push_str(&format!("seed {}: VIOLATION {}\n", report.seed, v.what));
        out.push_str(&format!("replay: payidem-sim --seed {}\n", report.seed));
        out.push_str("trace (events of the order involved):\n");
        for line in &v.trace {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
