//! What a [`Client`](super::Client) counts: attempts, call ends, time to
//! settle and journal writes, over the shared [metric model](crate::metrics).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::metrics::{Histogram, Metric, MetricKind, Series, SeriesValue, Snapshot};
use crate::operation::{AttemptKind, NextAction};

/// Upper bounds (seconds) of the attempt duration histogram's buckets.
pub const ATTEMPT_SECONDS_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Upper bounds (seconds) of the time-to-settle histogram's buckets.
pub const SETTLE_SECONDS_BUCKETS: [f64; 12] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Upper bounds (seconds) of the journal write latency histogram's buckets.
pub const JOURNAL_SECONDS_BUCKETS: [f64; 12] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

/// The names a call's end is counted under in
/// `payidem_client_calls_ended_total{end}`: the machine's ends
/// ([`crate::operation::End::as_str`]), then `cancelled` (the caller
/// stopped the call) and `journal_error` (the call's result is the
/// journal's failure).
pub const END_NAMES: [&str; 9] = [
    "succeeded",
    "rejected",
    "conflict",
    "refused",
    "not_sent",
    "unknown",
    "key_expired",
    "cancelled",
    "journal_error",
];

/// A journal write whose latency and failures are measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JournalWrite {
    /// Opening (creating or continuing) an operation with a new lease; a
    /// new operation is recorded with its first attempt, durably
    /// ([`crate::journal::Journal::open_to_send`]).
    Open,
    /// Claiming an existing operation to resume it.
    Claim,
    /// Recording the first attempt of a call that resumes an operation:
    /// durable (fsync'd, committed) before anything leaves.
    RecordAttemptDurable,
    /// Recording a later attempt (not forced to disk).
    RecordAttempt,
    /// Storing a call's end and releasing its lease.
    Finish,
    /// Renewing a call's lease (the heartbeat,
    /// [`crate::ClientConfig::lease_heartbeat`]); a renewal the journal
    /// refuses (the lease was lost, or the store failed) counts as failed.
    Renew,
}

impl JournalWrite {
    /// Every write kind.
    pub const ALL: [JournalWrite; 6] = [
        JournalWrite::Open,
        JournalWrite::Claim,
        JournalWrite::RecordAttemptDurable,
        JournalWrite::RecordAttempt,
        JournalWrite::Finish,
        JournalWrite::Renew,
    ];

    /// The `write` label: `open`, `claim`, `record_attempt`, `finish`,
    /// `renew`.
    pub fn as_str(self) -> &'static str {
        match self {
            JournalWrite::Open => "open",
            JournalWrite::Claim => "claim",
            JournalWrite::RecordAttemptDurable | JournalWrite::RecordAttempt => "record_attempt",
            JournalWrite::Finish => "finish",
            JournalWrite::Renew => "renew",
        }
    }

    /// Whether the write may wait for the disk before the call goes on (the
    /// `durable` label): an open (a new operation's record with its first
    /// attempt is fsync'd; opening an existing one is counted here too) and
    /// the first attempt record of a resumed call. A claim, a later
    /// attempt's record and a call's end are committed without waiting for
    /// the disk.
    pub fn durable(self) -> bool {
        matches!(
            self,
            JournalWrite::Open | JournalWrite::RecordAttemptDurable
        )
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|w| *w == self).unwrap_or(0)
    }
}

const STATUS_SLOTS: usize = 502; // 0: none, 1..=500: 100..=599, 501: other
const NEXTS: usize = NextAction::ALL.len();

fn status_slot(status: Option<u16>) -> usize {
    match status {
        None => 0,
        Some(s @ 100..=599) => usize::from(s) - 99,
        Some(_) => STATUS_SLOTS - 1,
    }
}

fn status_label(slot: usize) -> String {
    match slot {
        0 => "none".into(),
        s if s == STATUS_SLOTS - 1 => "other".into(),
        s => (s + 99).to_string(),
    }
}

fn kind_index(kind: AttemptKind) -> usize {
    AttemptKind::ALL
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(0)
}

fn next_index(next: NextAction) -> usize {
    NextAction::ALL.iter().position(|n| *n == next).unwrap_or(0)
}

fn http_method(kind: AttemptKind) -> &'static str {
    match kind {
        AttemptKind::Operation => "POST",
        AttemptKind::StatusQuery => "GET",
    }
}

/// The metrics one client (and its clones) keeps. Every update is a few
/// relaxed atomic additions; nothing locks.
#[derive(Debug)]
pub(crate) struct ClientMetrics {
    attempts: Box<[AtomicU64]>,
    attempt_seconds: [Histogram; 2],
    ends: [AtomicU64; END_NAMES.len()],
    settle_seconds: Histogram,
    journal_seconds: [Histogram; JournalWrite::ALL.len()],
    journal_failures: [AtomicU64; JournalWrite::ALL.len()],
}

impl ClientMetrics {
    pub(crate) fn new() -> ClientMetrics {
        ClientMetrics {
            attempts: (0..AttemptKind::ALL.len() * NEXTS * STATUS_SLOTS)
                .map(|_| AtomicU64::new(0))
                .collect(),
            attempt_seconds: [
                Histogram::new(&ATTEMPT_SECONDS_BUCKETS),
                Histogram::new(&ATTEMPT_SECONDS_BUCKETS),
            ],
            ends: Default::default(),
            settle_seconds: Histogram::new(&SETTLE_SECONDS_BUCKETS),
            journal_seconds: std::array::from_fn(|_| Histogram::new(&JOURNAL_SECONDS_BUCKETS)),
            journal_failures: Default::default(),
        }
    }

    /// Counts one attempt.
    pub(crate) fn attempt(
        &self,
        kind: AttemptKind,
        status: Option<u16>,
        next: NextAction,
        duration: Duration,
    ) {
        let k = kind_index(kind);
        let i = (k * NEXTS + next_index(next)) * STATUS_SLOTS + status_slot(status);
        self.attempts[i].fetch_add(1, Ordering::Relaxed);
        self.attempt_seconds[k].observe(duration);
    }

    /// Counts one call's end named `end` (one of [`END_NAMES`]); `settled`
    /// is the call's duration when the end is final.
    pub(crate) fn call_ended(&self, end: &str, settled: Option<Duration>) {
        if let Some(i) = END_NAMES.iter().position(|n| *n == end) {
            self.ends[i].fetch_add(1, Ordering::Relaxed);
        }
        if let Some(d) = settled {
            self.settle_seconds.observe(d);
        }
    }

    /// Counts one journal write and its latency.
    pub(crate) fn journal(&self, write: JournalWrite, duration: Duration, failed: bool) {
        let i = write.index();
        self.journal_seconds[i].observe(duration);
        if failed {
            self.journal_failures[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Every metric now; `unknown` is the journal's count of operations
    /// whose outcome is unknown (`None` when the journal could not answer).
    pub(crate) fn snapshot(&self, unknown: Option<usize>) -> Snapshot {
        let mut attempts = Vec::new();
        for (k, kind) in AttemptKind::ALL.iter().enumerate() {
            for (n, next) in NextAction::ALL.iter().enumerate() {
                for slot in 0..STATUS_SLOTS {
                    let v = self.attempts[(k * NEXTS + n) * STATUS_SLOTS + slot]
                        .load(Ordering::Relaxed);
                    if v == 0 {
                        continue;
                    }
                    attempts.push(Series {
                        labels: vec![
                            ("kind", kind.as_str().to_owned()),
                            ("http_request_method", http_method(*kind).to_owned()),
                            ("http_response_status_code", status_label(slot)),
                            ("next", next.as_str().to_owned()),
                        ],
                        value: SeriesValue::Number(v as f64),
                    });
                }
            }
        }
        let attempt_seconds = AttemptKind::ALL
            .iter()
            .zip(self.attempt_seconds.iter())
            .filter(|(_, h)| h.count() > 0)
            .map(|(kind, h)| Series {
                labels: vec![
                    ("kind", kind.as_str().to_owned()),
                    ("http_request_method", http_method(*kind).to_owned()),
                ],
                value: SeriesValue::Histogram(h.value()),
            })
            .collect();
        let ends = END_NAMES
            .iter()
            .zip(self.ends.iter())
            .filter(|(_, c)| c.load(Ordering::Relaxed) > 0)
            .map(|(name, c)| Series {
                labels: vec![("end", (*name).to_owned())],
                value: SeriesValue::Number(c.load(Ordering::Relaxed) as f64),
            })
            .collect();
        let journal_labels = |w: JournalWrite| {
            vec![
                ("write", w.as_str().to_owned()),
                ("durable", w.durable().to_string()),
            ]
        };
        let journal_seconds = JournalWrite::ALL
            .iter()
            .zip(self.journal_seconds.iter())
            .filter(|(_, h)| h.count() > 0)
            .map(|(w, h)| Series {
                labels: journal_labels(*w),
                value: SeriesValue::Histogram(h.value()),
            })
            .collect();
        let journal_failures = JournalWrite::ALL
            .iter()
            .zip(self.journal_failures.iter())
            .filter(|(_, c)| c.load(Ordering::Relaxed) > 0)
            .map(|(w, c)| Series {
                labels: journal_labels(*w),
                value: SeriesValue::Number(c.load(Ordering::Relaxed) as f64),
            })
            .collect();
        let settle = if self.settle_seconds.count() > 0 {
            vec![Series {
                labels: Vec::new(),
                value: SeriesValue::Histogram(self.settle_seconds.value()),
            }]
        } else {
            Vec::new()
        };
        let mut metrics = vec![
            Metric {
                name: "payidem_client_attempts_total",
                help: "Attempts sent, by kind, HTTP method, HTTP status (none when no response came) and the client's next action.",
                kind: MetricKind::Counter,
                series: attempts,
            },
            Metric {
                name: "payidem_client_attempt_duration_seconds",
                help: "Duration of one attempt, from sending to the response or the failure.",
                kind: MetricKind::Histogram,
                series: attempt_seconds,
            },
            Metric {
                name: "payidem_client_calls_ended_total",
                help: "Calls (execute, resume, take-over) that ended, by end.",
                kind: MetricKind::Counter,
                series: ends,
            },
            Metric {
                name: "payidem_client_settle_duration_seconds",
                help: "Duration of the calls that settled their operation for good (a final end), from the call's start.",
                kind: MetricKind::Histogram,
                series: settle,
            },
            Metric {
                name: "payidem_client_journal_write_duration_seconds",
                help: "Latency of the journal writes a call makes, by write and whether it is forced to disk.",
                kind: MetricKind::Histogram,
                series: journal_seconds,
            },
            Metric {
                name: "payidem_client_journal_failures_total",
                help: "Journal writes that failed, by write.",
                kind: MetricKind::Counter,
                series: journal_failures,
            },
        ];
        if let Some(unknown) = unknown {
            metrics.push(Metric {
                name: "payidem_client_unknown_operations",
                help: "Operations of the journal whose outcome is unknown (unknown or in flight), read from the journal at snapshot time.",
                kind: MetricKind::Gauge,
                series: vec![Series {
                    labels: Vec::new(),
                    value: SeriesValue::Number(unknown as f64),
                }],
            });
        }
        Snapshot { metrics }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_are_labelled_by_kind_status_and_next_action() {
        let m = ClientMetrics::new();
        let d = Duration::from_millis(1);
        m.attempt(
            AttemptKind::Operation,
            Some(504),
            NextAction::QueryStatus,
            d,
        );
        m.attempt(AttemptKind::StatusQuery, Some(200), NextAction::Settle, d);
        m.attempt(AttemptKind::Operation, None, NextAction::RetryLater, d);
        m.attempt(
            AttemptKind::Operation,
            Some(504),
            NextAction::QueryStatus,
            d,
        );
        let s = m.snapshot(Some(3));
        let name = "payidem_client_attempts_total";
        assert_eq!(s.sum(name, &[("http_response_status_code", "504")]), 2.0);
        assert_eq!(s.sum(name, &[("http_response_status_code", "none")]), 1.0);
        assert_eq!(
            s.sum(name, &[("kind", "status_query"), ("next", "settle")]),
            1.0
        );
        assert_eq!(s.sum(name, &[("http_request_method", "POST")]), 3.0);
        assert_eq!(s.sum("payidem_client_unknown_operations", &[]), 3.0);
        assert_eq!(s.sum("payidem_client_attempt_duration_seconds", &[]), 4.0);
    }

    #[test]
    fn prometheus_text_has_help_type_and_histogram_samples() {
        let m = ClientMetrics::new();
        m.attempt(
            AttemptKind::Operation,
            Some(201),
            NextAction::Settle,
            Duration::from_millis(20),
        );
        m.call_ended("succeeded", Some(Duration::from_millis(30)));
        m.journal(
            JournalWrite::RecordAttemptDurable,
            Duration::from_micros(300),
            false,
        );
        let text = m.snapshot(None).to_prometheus();
        assert!(text.contains("# TYPE payidem_client_attempts_total counter\n"));
        assert!(text.contains(
            "payidem_client_attempts_total{kind=\"operation\",http_request_method=\"POST\",http_response_status_code=\"201\",next=\"settle\"} 1\n"
        ));
        assert!(text.contains(
            "payidem_client_attempt_duration_seconds_bucket{kind=\"operation\",http_request_method=\"POST\",le=\"0.025\"} 1\n"
        ));
        assert!(text.contains("payidem_client_settle_duration_seconds_bucket{le=\"+Inf\"} 1\n"));
        assert!(text.contains("payidem_client_settle_duration_seconds_count 1\n"));
        assert!(text.contains(
            "payidem_client_journal_write_duration_seconds_count{write=\"record_attempt\",durable=\"true\"} 1\n"
        ));
        assert!(text.contains("payidem_client_calls_ended_total{end=\"succeeded\"} 1\n"));
        assert!(!text.contains("payidem_client_unknown_operations"));
        // Every non-comment line is `name{labels} value`.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, value) = line.rsplit_once(' ').unwrap();
            assert!(value == "+Inf" || value.parse::<f64>().is_ok(), "{line}");
        }
    }
}
