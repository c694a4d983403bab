//! What a [`Verifier`](super::Verifier) counts: verdicts by code and its
//! in-memory replay cache's size, over the shared
//! [metric model](crate::metrics).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::ErrorCode;
use crate::metrics::{Metric, MetricKind, Series, SeriesValue, Snapshot};

/// The verdict label of a verification: `accepted`, or the refusal's
/// [`ErrorCode`] name.
pub const ACCEPTED: &str = "accepted";

/// The metrics one verifier keeps: verdicts by code.
#[derive(Debug, Default)]
pub(crate) struct VerifierMetrics {
    /// Slot 0: accepted; slot 1 + i: `ErrorCode::ALL[i]`.
    verdicts: [AtomicU64; 1 + ErrorCode::ALL.len()],
}

impl VerifierMetrics {
    /// Counts one verdict: `None` for accepted, else the refusal's code.
    pub(crate) fn verdict(&self, code: Option<ErrorCode>) {
        let slot = match code {
            None => 0,
            Some(c) => 1 + ErrorCode::ALL.iter().position(|x| *x == c).unwrap_or(0),
        };
        self.verdicts[slot].fetch_add(1, Ordering::Relaxed);
    }

    /// Every metric now; `cache` is the in-memory replay cache's
    /// `(entries, capacity)`, `None` with a shared replay store.
    pub(crate) fn snapshot(&self, cache: Option<(usize, usize)>) -> Snapshot {
        let names = std::iter::once(ACCEPTED).chain(ErrorCode::ALL.iter().map(|c| c.as_str()));
        let verdicts = names
            .zip(self.verdicts.iter())
            .filter(|(_, c)| c.load(Ordering::Relaxed) > 0)
            .map(|(name, c)| Series {
                labels: vec![("code", name.to_owned())],
                value: SeriesValue::Number(c.load(Ordering::Relaxed) as f64),
            })
            .collect();
        let mut metrics = vec![Metric {
            name: "payidem_verifier_verdicts_total",
            help: "Requests verified, by verdict: accepted or the refusal's error code.",
            kind: MetricKind::Counter,
            series: verdicts,
        }];
        if let Some((entries, capacity)) = cache {
            let gauge = |name, help, v: usize| Metric {
                name,
                help,
                kind: MetricKind::Gauge,
                series: vec![Series {
                    labels: Vec::new(),
                    value: SeriesValue::Number(v as f64),
                }],
            };
            metrics.push(gauge(
                "payidem_verifier_replay_cache_entries",
                "Nonces held by the in-memory replay cache, over every key id.",
                entries,
            ));
            metrics.push(gauge(
                "payidem_verifier_replay_cache_capacity",
                "The most nonces the in-memory replay cache may hold, over every key id; past it verification fails closed.",
                capacity,
            ));
        }
        Snapshot { metrics }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_form_carries_every_series() {
        let v = VerifierMetrics::default();
        v.verdict(None);
        v.verdict(Some(ErrorCode::NonceReused));
        v.verdict(Some(ErrorCode::NonceReused));
        let json = v.snapshot(Some((5, 100))).to_json_value();
        let verdicts = &json["metrics"][0];
        assert_eq!(verdicts["name"], "payidem_verifier_verdicts_total");
        assert_eq!(verdicts["type"], "counter");
        assert_eq!(verdicts["series"][1]["labels"]["code"], "nonce_reused");
        assert_eq!(verdicts["series"][1]["value"], 2.0);
        assert_eq!(json["metrics"][2]["series"][0]["value"], 100.0);
    }
}
