//! The one seeded generator of a run.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// Every random choice of a run comes from here (and from the core's
/// seeded stream, see `payidem::sim::set_random_seed`).
pub struct Dice(ChaCha8Rng);

impl Dice {
    /// The generator of `seed`.
    pub fn new(seed: u64) -> Dice {
        Dice(ChaCha8Rng::seed_from_u64(seed))
    }

    /// A fresh 64-bit value.
    pub fn draw(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.draw() % (hi - lo + 1)
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && ((self.draw() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    /// One of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.draw() % items.len() as u64) as usize]
    }
}
