//! Injected faults: kinds, their probabilities, and the seeded draw.

use std::fmt;
use std::sync::Mutex;

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// One kind of injected fault.
///
/// "Before commit" kinds answer before the idempotency store and the ledger
/// are touched: the payment is never created and nothing is stored. "After
/// commit" kinds run the operation, store its real answer under the
/// idempotency key, and then lose or spoil the answer: the payment exists,
/// and a retry with the same key gets the stored answer replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// 500 `internal_error`; nothing happened.
    Error500BeforeCommit,
    /// 500 `internal_error` after the operation committed.
    Error500AfterCommit,
    /// 502 `bad_gateway`; nothing happened.
    Error502,
    /// 503 `service_unavailable` with `Retry-After` (`retry_after_seconds`);
    /// nothing happened.
    Error503,
    /// 429 `rate_limited` with `Retry-After` (`retry_after_seconds`); nothing
    /// happened.
    Error429,
    /// 504 `gateway_timeout`; nothing happened.
    Timeout504BeforeCommit,
    /// 504 `gateway_timeout` after the operation committed.
    Timeout504AfterCommit,
    /// The connection is closed with no answer after the operation committed.
    DropAfterCommit,
    /// The real answer is sent only after `delay_ms`.
    DelayAfterCommit,
    /// 503 `service_unavailable` with `Retry-After` (`retry_after_seconds`)
    /// on a signed GET status query (drawn separately from the POST kinds).
    StatusError503,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 10] = [
        FaultKind::Error500BeforeCommit,
        FaultKind::Error500AfterCommit,
        FaultKind::Error502,
        FaultKind::Error503,
        FaultKind::Error429,
        FaultKind::Timeout504BeforeCommit,
        FaultKind::Timeout504AfterCommit,
        FaultKind::DropAfterCommit,
        FaultKind::DelayAfterCommit,
        FaultKind::StatusError503,
    ];

    /// The kind's name in flags, JSON and stats.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Error500BeforeCommit => "error_500_before_commit",
            FaultKind::Error500AfterCommit => "error_500_after_commit",
            FaultKind::Error502 => "error_502",
            FaultKind::Error503 => "error_503",
            FaultKind::Error429 => "error_429",
            FaultKind::Timeout504BeforeCommit => "timeout_504_before_commit",
            FaultKind::Timeout504AfterCommit => "timeout_504_after_commit",
            FaultKind::DropAfterCommit => "drop_after_commit",
            FaultKind::DelayAfterCommit => "delay_after_commit",
            FaultKind::StatusError503 => "status_error_503",
        }
    }

    /// The kind with this name.
    pub fn from_name(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the operation runs (and its payment may exist) before the
    /// fault shows.
    pub fn after_commit(self) -> bool {
        matches!(
            self,
            FaultKind::Error500AfterCommit
                | FaultKind::Timeout504AfterCommit
                | FaultKind::DropAfterCommit
                | FaultKind::DelayAfterCommit
        )
    }

    fn index(self) -> usize {
        FaultKind::ALL.iter().position(|k| *k == self).unwrap_or(0)
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Default wait of `delay_after_commit`, in milliseconds.
pub const DEFAULT_DELAY_MS: u64 = 2_000;

/// Default `Retry-After` of the 429 and 503 faults, in seconds.
pub const DEFAULT_RETRY_AFTER_SECONDS: u64 = 1;

/// Probabilities of every fault kind, the delay of `delay_after_commit` and
/// the `Retry-After` of the 429 and 503 faults.
///
/// The POST kinds are drawn with one uniform number per request against
/// their cumulative probabilities, so each happens at exactly its own rate;
/// their sum must not exceed 1. `status_error_503` is drawn on its own.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultSettings {
    probabilities: [f64; FaultKind::ALL.len()],
    /// How long `delay_after_commit` holds the answer, in milliseconds.
    pub delay_ms: u64,
    /// The `Retry-After` seconds that the 429 and 503 faults answer with.
    pub retry_after_seconds: u64,
}

impl Default for FaultSettings {
    fn default() -> Self {
        FaultSettings {
            probabilities: [0.0; FaultKind::ALL.len()],
            delay_ms: DEFAULT_DELAY_MS,
            retry_after_seconds: DEFAULT_RETRY_AFTER_SECONDS,
        }
    }
}

impl FaultSettings {
    /// No faults.
    pub fn none() -> FaultSettings {
        FaultSettings::default()
    }

    /// No faults, with these settings' timings (`delay_ms`,
    /// `retry_after_seconds`): what replacing the faults starts from.
    pub fn without_faults(&self) -> FaultSettings {
        FaultSettings {
            delay_ms: self.delay_ms,
            retry_after_seconds: self.retry_after_seconds,
            ..FaultSettings::none()
        }
    }

    /// Sets one kind's probability (0..=1). Fails naming the kind when the
    /// value is out of range or the POST kinds would sum past 1.
    pub fn set(&mut self, kind: FaultKind, probability: f64) -> payidem::Result<()> {
        if !(0.0..=1.0).contains(&probability) {
            return Err(payidem::Error::invalid(
                "fault",
                format_args!("{kind} must be a probability in 0..=1"),
            ));
        }
        let old = self.probabilities[kind.index()];
        self.probabilities[kind.index()] = probability;
        if self.post_sum() > 1.0 + 1e-9 {
            self.probabilities[kind.index()] = old;
            return Err(payidem::Error::invalid(
                "fault",
                format_args!("setting {kind} makes the POST fault probabilities sum past 1"),
            ));
        }
        Ok(())
    }

    /// Builder form of [`FaultSettings::set`].
    pub fn with(mut self, kind: FaultKind, probability: f64) -> payidem::Result<FaultSettings> {
        self.set(kind, probability)?;
        Ok(self)
    }

    /// One kind's probability.
    pub fn probability(&self, kind: FaultKind) -> f64 {
        self.probabilities[kind.index()]
    }

    fn post_sum(&self) -> f64 {
        FaultKind::ALL
            .iter()
            .filter(|k| **k != FaultKind::StatusError503)
            .map(|k| self.probabilities[k.index()])
            .sum()
    }

    /// Parses `KIND=P` as given to `--fault`.
    pub fn parse_flag(&mut self, flag: &str) -> payidem::Result<()> {
        let (name, value) = flag
            .split_once('=')
            .ok_or_else(|| payidem::Error::invalid("fault", "expected KIND=PROBABILITY"))?;
        let kind = FaultKind::from_name(name).ok_or_else(|| {
            payidem::Error::invalid("fault", format_args!("unknown fault kind {name:?}"))
        })?;
        let p: f64 = value.parse().map_err(|_| {
            payidem::Error::invalid("fault", format_args!("{name}: {value:?} is not a number"))
        })?;
        self.set(kind, p)
    }

    /// The settings as JSON: every kind's probability plus `delay_ms` and
    /// `retry_after_seconds`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        for kind in FaultKind::ALL {
            map.insert(kind.name().to_owned(), self.probability(kind).into());
        }
        map.insert("delay_ms".to_owned(), self.delay_ms.into());
        map.insert(
            "retry_after_seconds".to_owned(),
            self.retry_after_seconds.into(),
        );
        serde_json::Value::Object(map)
    }
}

/// The settings plus the seeded stream they are drawn from.
pub(crate) struct FaultDice {
    inner: Mutex<(FaultSettings, ChaCha8Rng)>,
}

fn uniform(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

impl FaultDice {
    pub(crate) fn new(settings: FaultSettings, seed: u64) -> FaultDice {
        FaultDice {
            inner: Mutex::new((settings, ChaCha8Rng::seed_from_u64(seed))),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (FaultSettings, ChaCha8Rng)> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn settings(&self) -> FaultSettings {
        self.lock().0.clone()
    }

    pub(crate) fn set_settings(&self, settings: FaultSettings) {
        self.lock().0 = settings;
    }

    /// The `Retry-After` seconds of the 429 and 503 faults now.
    pub(crate) fn retry_after_seconds(&self) -> u64 {
        self.lock().0.retry_after_seconds
    }

    /// The fault for one verified POST operation, if any, and the delay.
    pub(crate) fn draw_post(&self) -> (Option<FaultKind>, u64) {
        let mut guard = self.lock();
        let (settings, rng) = &mut *guard;
        let u = uniform(rng);
        let mut acc = 0.0;
        for kind in FaultKind::ALL {
            if kind == FaultKind::StatusError503 {
                continue;
            }
            acc += settings.probability(kind);
            if u < acc {
                return (Some(kind), settings.delay_ms);
            }
        }
        (None, settings.delay_ms)
    }

    /// Whether one verified GET status query fails with 503.
    pub(crate) fn draw_status(&self) -> bool {
        let mut guard = self.lock();
        let (settings, rng) = &mut *guard;
        let p = settings.probability(FaultKind::StatusError503);
        p > 0.0 && uniform(rng) < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sum_is_bounded() {
        for k in FaultKind::ALL {
            assert_eq!(FaultKind::from_name(k.name()), Some(k));
        }
        let mut s = FaultSettings::none();
        s.parse_flag("error_503=0.6").unwrap();
        assert_eq!(
            s.parse_flag("error_429=0.5").unwrap_err().field(),
            Some("fault")
        );
        assert_eq!(s.probability(FaultKind::Error429), 0.0);
        s.parse_flag("status_error_503=1").unwrap();
        assert!(s.parse_flag("nope=0.1").is_err());
        assert!(s.parse_flag("error_502=1.5").is_err());
        assert!(s.parse_flag("error_502=NaN").is_err());
    }

    #[test]
    fn without_faults_keeps_the_timings_only() {
        let mut s = FaultSettings::none()
            .with(FaultKind::Error503, 0.5)
            .unwrap()
            .with(FaultKind::StatusError503, 1.0)
            .unwrap();
        s.delay_ms = 2_500;
        s.retry_after_seconds = 30;
        let cleared = s.without_faults();
        for k in FaultKind::ALL {
            assert_eq!(cleared.probability(k), 0.0, "{k}");
        }
        assert_eq!((cleared.delay_ms, cleared.retry_after_seconds), (2_500, 30));
        assert_eq!(
            FaultSettings::none().without_faults(),
            FaultSettings::none()
        );
    }

    #[test]
    fn draws_follow_the_rates() {
        let s = FaultSettings::none()
            .with(FaultKind::Error503, 0.25)
            .unwrap()
            .with(FaultKind::DropAfterCommit, 0.25)
            .unwrap();
        let dice = FaultDice::new(s, 7);
        let mut counts = [0u32; 3];
        for _ in 0..4000 {
            match dice.draw_post().0 {
                Some(FaultKind::Error503) => counts[0] += 1,
                Some(FaultKind::DropAfterCommit) => counts[1] += 1,
                None => counts[2] += 1,
                Some(other) => panic!("unexpected {other}"),
            }
        }
        assert!((800..1200).contains(&counts[0]), "{counts:?}");
        assert!((800..1200).contains(&counts[1]), "{counts:?}");
        assert!(!dice.draw_status());
    }
}
