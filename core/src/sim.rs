//! Hooks for the deterministic simulator (`payidem-sim`), compiled only
//! with the `sim` feature: **not a stable API**, never in a release
//! artifact (the dist builds name their packages, which never enable it).
//!
//! Everything here is per thread (the simulator runs on one): a clock that
//! replaces the system's Unix time, a seeded generator that replaces the
//! operating system's randomness, fault points in the production code
//! (FoundationDB's BUGGIFY: the simulator decides whether each one fires)
//! and planted bugs, deliberate mutations the simulator must find. Nothing
//! is set until the simulator sets it, so a build with the feature behaves
//! as one without.

use std::cell::{Cell, RefCell};

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

/// A deliberate mutation of the production code, switched on by
/// [`plant`] for the simulator to prove that it finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Bug {
    /// A call sends an attempt without recording it in the journal first.
    SendBeforeDurable,
    /// A resumed operation whose outcome is unknown gets a new key.
    NewKeyOnUnknown,
    /// A 500 is read as "did not land".
    FiveHundredNotLanded,
    /// A journal write whose fsync failed is taken as durable and sent.
    FsyncFailureDurable,
    /// The verifier skips the signature (MAC) check.
    MacCheckSkipped,
    /// A call that lost its lease may still write (and so send).
    StaleLeaseWrites,
    /// `Retry-After` is ignored: the call backs off instead.
    RetryAfterIgnored,
    /// A status query's 404 is read as success.
    StatusNotFoundSuccess,
    /// The key's age is never checked against the retention.
    KeyAgeUnchecked,
    /// A replayed answer is read as a new payment (`replayed` false).
    ReplayedAsNew,
}

impl Bug {
    /// Every planted bug.
    pub const ALL: [Bug; 10] = [
        Bug::SendBeforeDurable,
        Bug::NewKeyOnUnknown,
        Bug::FiveHundredNotLanded,
        Bug::FsyncFailureDurable,
        Bug::MacCheckSkipped,
        Bug::StaleLeaseWrites,
        Bug::RetryAfterIgnored,
        Bug::StatusNotFoundSuccess,
        Bug::KeyAgeUnchecked,
        Bug::ReplayedAsNew,
    ];

    /// The bug's name on the simulator's command line.
    pub fn name(self) -> &'static str {
        match self {
            Bug::SendBeforeDurable => "send-before-durable",
            Bug::NewKeyOnUnknown => "new-key-on-unknown",
            Bug::FiveHundredNotLanded => "500-not-landed",
            Bug::FsyncFailureDurable => "fsync-failure-durable",
            Bug::MacCheckSkipped => "mac-check-skipped",
            Bug::StaleLeaseWrites => "stale-lease-writes",
            Bug::RetryAfterIgnored => "retry-after-ignored",
            Bug::StatusNotFoundSuccess => "status-404-success",
            Bug::KeyAgeUnchecked => "key-age-unchecked",
            Bug::ReplayedAsNew => "replayed-as-new",
        }
    }

    /// The bug named `name`.
    pub fn from_name(name: &str) -> Option<Bug> {
        Bug::ALL.into_iter().find(|b| b.name() == name)
    }
}

/// A place in the production code where the simulator may inject a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultPoint {
    /// A call's release of its lease fails (the client keeps the lease as
    /// an orphan for its next call of the operation).
    ReleaseFails,
    /// A call is abandoned just before it hands out an attempt it recorded.
    AbandonBeforeSend,
}

/// Decides whether a fault point fires.
pub type Buggify = Box<dyn FnMut(FaultPoint) -> bool>;

thread_local! {
    static CLOCK: Cell<Option<u64>> = const { Cell::new(None) };
    static RNG: RefCell<Option<ChaCha20Rng>> = const { RefCell::new(None) };
    static PLANTED: Cell<Option<Bug>> = const { Cell::new(None) };
    static BUGGIFY: RefCell<Option<Buggify>> = const { RefCell::new(None) };
}

/// Sets this thread's Unix time, read wherever the library reads the
/// system's (`None`: the system's again).
pub fn set_clock(unix: Option<u64>) {
    CLOCK.with(|c| c.set(unix));
}

/// This thread's simulated Unix time, if set.
pub fn clock() -> Option<u64> {
    CLOCK.with(Cell::get)
}

/// Replaces this thread's randomness (nonces, jitter, instance ids) by a
/// ChaCha20 stream from `seed` (`None`: the operating system's again).
pub fn set_random_seed(seed: Option<u64>) {
    RNG.with(|r| *r.borrow_mut() = seed.map(ChaCha20Rng::seed_from_u64));
}

/// Fills `out` from the seeded stream; `false` when none is set.
pub fn fill(out: &mut [u8]) -> bool {
    RNG.with(|r| match r.borrow_mut().as_mut() {
        Some(rng) => {
            rng.fill_bytes(out);
            true
        }
        None => false,
    })
}

/// Switches `bug` on for this thread (`None`: the code as shipped).
pub fn plant(bug: Option<Bug>) {
    PLANTED.with(|p| p.set(bug));
}

/// Whether `bug` is switched on.
pub fn planted(bug: Bug) -> bool {
    PLANTED.with(Cell::get) == Some(bug)
}

/// Sets who decides the fault points of this thread (`None`: none fires).
pub fn set_buggify(decide: Option<Buggify>) {
    BUGGIFY.with(|b| *b.borrow_mut() = decide);
}

/// Whether the fault at `point` fires now.
pub fn buggify(point: FaultPoint) -> bool {
    BUGGIFY.with(|b| b.borrow_mut().as_mut().is_some_and(|decide| decide(point)))
}
