//! The metric model shared by the client and the verifier: lock-free
//! counters and fixed-bucket histograms, read as a [`Snapshot`] that renders
//! as JSON or as Prometheus text (exposition format 0.0.4, in
//! [`prometheus`]). What each of them counts lives beside what it measures:
//! [`crate::client::metrics`] and [`crate::verifier::metrics`].
//!
//! Every metric name starts with `payidem_`; label names follow the
//! OpenTelemetry semantic conventions where one exists, in Prometheus form
//! (`http.response.status_code` → `http_response_status_code`). The list of
//! metrics, their labels and their buckets is in `docs/metrics.md`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{json, Map, Value};

pub mod prometheus;

/// The kind of a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    /// A count that only grows.
    Counter,
    /// A value read at snapshot time.
    Gauge,
    /// Observations counted in cumulative buckets, with their sum.
    Histogram,
}

impl MetricKind {
    /// The Prometheus `# TYPE` word: `counter`, `gauge`, `histogram`.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
            MetricKind::Histogram => "histogram",
        }
    }
}

/// A histogram's value at snapshot time.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramValue {
    /// `(upper bound in seconds, cumulative count)` for every finite
    /// bucket, in increasing order; the `+Inf` bucket is `count`.
    pub buckets: Vec<(f64, u64)>,
    /// The sum of every observation, in seconds.
    pub sum: f64,
    /// How many observations.
    pub count: u64,
}

/// One series' value.
#[derive(Clone, Debug, PartialEq)]
pub enum SeriesValue {
    /// A counter's or a gauge's value.
    Number(f64),
    /// A histogram's buckets, sum and count.
    Histogram(HistogramValue),
}

/// One labelled series of a metric.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// `(label name, label value)` pairs, in a fixed order.
    pub labels: Vec<(&'static str, String)>,
    /// The value.
    pub value: SeriesValue,
}

/// One metric (a Prometheus metric family): its name, help text, kind and
/// series.
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    /// The name, e.g. `payidem_client_attempts_total`.
    pub name: &'static str,
    /// One line saying what it counts.
    pub help: &'static str,
    /// Counter, gauge or histogram.
    pub kind: MetricKind,
    /// Its series; a counter or histogram without observations has none.
    pub series: Vec<Series>,
}

/// Every metric of a client or a verifier at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// The metrics, in a fixed order.
    pub metrics: Vec<Metric>,
}

impl Snapshot {
    /// The metric named `name`, if present.
    pub fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// The value of the counter or gauge `name` whose labels include every
    /// pair of `labels`, summed over the matching series (0 when none
    /// matches); for a histogram, its observation count.
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let Some(metric) = self.metric(name) else {
            return 0.0;
        };
        metric
            .series
            .iter()
            .filter(|s| {
                labels
                    .iter()
                    .all(|(k, v)| s.labels.iter().any(|(n, x)| n == k && x == v))
            })
            .map(|s| match &s.value {
                SeriesValue::Number(n) => *n,
                SeriesValue::Histogram(h) => h.count as f64,
            })
            .sum()
    }

    /// The snapshot as a JSON value: `{"metrics": [{"name", "type", "help",
    /// "series": [{"labels": {…}, "value": n}]}]}`, a histogram's series
    /// carrying `count`, `sum` (seconds) and `buckets` (`[{"le", "count"}]`,
    /// cumulative, finite bounds only) instead of `value`.
    pub fn to_json_value(&self) -> Value {
        let metrics: Vec<Value> = self
            .metrics
            .iter()
            .map(|m| {
                let series: Vec<Value> = m
                    .series
                    .iter()
                    .map(|s| {
                        let labels: Map<String, Value> = s
                            .labels
                            .iter()
                            .map(|(k, v)| ((*k).to_owned(), Value::String(v.clone())))
                            .collect();
                        match &s.value {
                            SeriesValue::Number(n) => json!({"labels": labels, "value": n}),
                            SeriesValue::Histogram(h) => json!({
                                "labels": labels,
                                "count": h.count,
                                "sum": h.sum,
                                "buckets": h.buckets.iter()
                                    .map(|(le, c)| json!({"le": le, "count": c}))
                                    .collect::<Vec<_>>(),
                            }),
                        }
                    })
                    .collect();
                json!({"name": m.name, "type": m.kind.as_str(), "help": m.help, "series": series})
            })
            .collect();
        json!({ "metrics": metrics })
    }

    /// The snapshot as JSON text (see [`Snapshot::to_json_value`]).
    pub fn to_json(&self) -> String {
        self.to_json_value().to_string()
    }
}

/// A lock-free histogram with fixed bucket bounds (seconds).
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Non-cumulative counts; the last slot is `+Inf`.
    counts: Box<[AtomicU64]>,
    sum_nanos: AtomicU64,
    count: AtomicU64,
}

impl Histogram {
    /// An empty histogram with `bounds` (seconds, increasing).
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_nanos: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    /// Counts one observation of `d`.
    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let slot = self
            .bounds
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(self.bounds.len());
        self.counts[slot].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// How many observations so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The histogram's value now (cumulative buckets).
    pub fn value(&self) -> HistogramValue {
        let mut cumulative = 0u64;
        let buckets = self
            .bounds
            .iter()
            .zip(self.counts.iter())
            .map(|(b, c)| {
                cumulative += c.load(Ordering::Relaxed);
                (*b, cumulative)
            })
            .collect();
        let inf = cumulative + self.counts[self.bounds.len()].load(Ordering::Relaxed);
        HistogramValue {
            buckets,
            sum: self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            count: inf,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_counts_each_observation_in_its_bucket_cumulatively() {
        let h = Histogram::new(&[0.005, 0.01, 0.025, 30.0]);
        h.observe(Duration::from_millis(3));
        h.observe(Duration::from_millis(7));
        h.observe(Duration::from_secs(60));
        let v = h.value();
        assert_eq!(v.count, 3);
        assert_eq!(v.buckets[0], (0.005, 1));
        assert_eq!(v.buckets[1], (0.01, 2));
        assert_eq!(v.buckets.last().unwrap().1, 2);
        assert!((v.sum - 60.010).abs() < 1e-9);
    }
}
