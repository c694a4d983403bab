//! `payidem journal stats`: what the journal holds, by state, and how old
//! its oldest unknown operation is: text for people, JSON, or Prometheus
//! text for node_exporter's textfile collector (docs/metrics.md).

use payidem::journal::{Journal, Listed};
use payidem::metrics::{Metric, MetricKind, Series, SeriesValue, Snapshot};
use payidem::operation::OperationState;
use serde_json::{json, Map, Value};

use crate::render;
use crate::{out, out_json, Done, Exit};

/// The journal's counts at `now`.
struct Stats {
    /// Operations per state, in `OperationState::ALL` order.
    states: Vec<(OperationState, usize)>,
    /// Unknown or in-flight operations whose key is past the platform's
    /// retention (never sent again; reconcile by hand).
    key_expired: usize,
    /// Age in seconds of the oldest unknown or in-flight operation.
    oldest_unknown_age: Option<u64>,
    /// Rows that do not read back valid (an unknown state, a failing MAC).
    invalid: usize,
}

fn read(journal: &dyn Journal, now: u64) -> Result<Stats, payidem::Error> {
    let listed = journal.list_every()?;
    let invalid = listed
        .iter()
        .filter(|l| matches!(l, Listed::Invalid { .. }))
        .count();
    let records: Vec<_> = listed
        .into_iter()
        .filter_map(|l| match l {
            Listed::Valid(record) => Some(record),
            Listed::Invalid { .. } => None,
        })
        .collect();
    let states = OperationState::ALL
        .iter()
        .map(|s| (*s, records.iter().filter(|r| r.state == *s).count()))
        .collect();
    let unknown = || records.iter().filter(|r| r.state.is_unresolved());
    Ok(Stats {
        states,
        key_expired: unknown().filter(|r| render::key_expired(r, now)).count(),
        oldest_unknown_age: unknown().map(|r| render::age(r, now)).max(),
        invalid,
    })
}

fn gauge(name: &'static str, help: &'static str, series: Vec<Series>) -> Metric {
    Metric {
        name,
        help,
        kind: MetricKind::Gauge,
        series,
    }
}

fn value(labels: Vec<(&'static str, String)>, v: f64) -> Series {
    Series {
        labels,
        value: SeriesValue::Number(v),
    }
}

impl Stats {
    fn snapshot(&self) -> Snapshot {
        let by_state = self
            .states
            .iter()
            .map(|(s, n)| value(vec![("state", s.as_str().to_owned())], *n as f64))
            .chain([value(
                vec![("state", "invalid".to_owned())],
                self.invalid as f64,
            )])
            .collect();
        Snapshot {
            metrics: vec![
                gauge(
                    "payidem_journal_operations",
                    "Operations in the journal, by state (\"invalid\": rows that do not read back valid).",
                    by_state,
                ),
                gauge(
                    "payidem_journal_key_expired_operations",
                    "Unknown or in-flight operations whose key is older than the platform's retention: never sent again, reconcile by hand.",
                    vec![value(Vec::new(), self.key_expired as f64)],
                ),
                gauge(
                    "payidem_journal_oldest_unknown_age_seconds",
                    "Age of the oldest unknown or in-flight operation (0 when there is none).",
                    vec![value(
                        Vec::new(),
                        self.oldest_unknown_age.unwrap_or(0) as f64,
                    )],
                ),
            ],
        }
    }

    fn json(&self, name: &str) -> Value {
        let states: Map<String, Value> = self
            .states
            .iter()
            .map(|(s, n)| (s.as_str().to_owned(), Value::from(*n)))
            .collect();
        json!({
            "journal": name,
            "states": states,
            "unknown": self.states.iter()
                .filter(|(s, _)| s.is_unresolved())
                .map(|(_, n)| n)
                .sum::<usize>(),
            "key_expired": self.key_expired,
            "oldest_unknown_age_s": self.oldest_unknown_age,
            "invalid": self.invalid,
        })
    }

    fn text(&self, name: &str) -> String {
        let mut text = format!("journal {}\n", render::field(name));
        for (s, n) in &self.states {
            text.push_str(&format!("{:<10} {n}\n", s.as_str()));
        }
        text.push_str(&format!("{:<10} {}\n", "invalid", self.invalid));
        text.push_str(&format!("key expired {}\n", self.key_expired));
        match self.oldest_unknown_age {
            Some(age) => text.push_str(&format!("oldest unknown {}\n", render::span(age))),
            None => text.push_str("oldest unknown -\n"),
        }
        text
    }
}

/// Prints the stats of `journal` (named `name`): Prometheus text when
/// `prometheus`, else JSON when `json`, else text. Exits 0.
pub fn run(journal: &dyn Journal, name: &str, prometheus: bool, json: bool) -> Done {
    let stats = read(journal, crate::journal::unix_now())?;
    if prometheus {
        out(&stats.snapshot().to_prometheus());
    } else if json {
        out_json(&stats.json(name));
    } else {
        out(&stats.text(name));
    }
    Ok(Exit::Ok)
}
