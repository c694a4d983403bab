//! The replay cache: nonces seen per key id while inside the window.

use std::collections::hash_map::{Entry, HashMap};
use std::sync::Mutex;

/// Why the cache refused a nonce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The nonce was recorded before and its timestamp is still in the window.
    Reused,
    /// The cache holds its capacity in live nonces; it fails closed.
    Full,
}

/// Nonces of one key id, sharded so concurrent verifications rarely share a
/// lock.
///
/// Each live nonce costs one map slot: 16 bytes of UUID, a 4-byte expiry in
/// Unix seconds and the map's own control byte (see BENCHMARKS.md for the
/// measured bytes per nonce). Expiries past 2106 saturate to `u32::MAX`, which
/// keeps such nonces (fails closed) rather than forgetting them early.
pub(crate) struct NonceCache {
    shards: Box<[Mutex<Shard>]>,
    shard_capacity: usize,
    sweep_every: u64,
}

struct Shard {
    live: HashMap<[u8; 16], u32>,
    next_sweep: u64,
}

impl Shard {
    fn sweep(&mut self, now: u32) {
        self.live.retain(|_, expires| *expires >= now);
    }
}

fn clamp_u32(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

impl NonceCache {
    /// A cache for at most `capacity` live nonces, in `shards` shards (at
    /// least 1), forgetting expired ones at least every `sweep_every` seconds.
    pub(crate) fn new(capacity: usize, shards: usize, sweep_every: u64) -> NonceCache {
        let shards = shards.max(1);
        NonceCache {
            shards: (0..shards)
                .map(|_| {
                    Mutex::new(Shard {
                        live: HashMap::new(),
                        next_sweep: 0,
                    })
                })
                .collect(),
            shard_capacity: capacity.div_ceil(shards),
            sweep_every: sweep_every.max(1),
        }
    }

    /// Records `nonce`, which stays refused until `expires_at` (inclusive),
    /// unless it is already live. Never evicts a live nonce.
    pub(crate) fn check_and_record(
        &self,
        nonce: [u8; 16],
        expires_at: u64,
        now: u64,
    ) -> Result<(), Refusal> {
        let expires_at = clamp_u32(expires_at);
        // A clock past 2106 must not make saturated entries look expired.
        let now32 = clamp_u32(now).min(u32::MAX - 1);
        let index = usize::from(nonce[0]) % self.shards.len();
        // A poisoned shard is still consistent: every mutation is one map call.
        let mut shard = self.shards[index].lock().unwrap_or_else(|p| p.into_inner());
        if now >= shard.next_sweep {
            shard.sweep(now32);
            shard.next_sweep = now.saturating_add(self.sweep_every);
        }
        let full = shard.live.len() >= self.shard_capacity;
        match shard.live.entry(nonce) {
            Entry::Occupied(mut seen) => {
                if *seen.get() >= now32 {
                    return Err(Refusal::Reused);
                }
                seen.insert(expires_at);
                Ok(())
            }
            Entry::Vacant(slot) if !full => {
                slot.insert(expires_at);
                Ok(())
            }
            Entry::Vacant(_) => {
                shard.sweep(now32);
                if shard.live.len() >= self.shard_capacity {
                    return Err(Refusal::Full);
                }
                shard.live.insert(nonce, expires_at);
                Ok(())
            }
        }
    }

    /// How many nonces the cache holds (live or awaiting a sweep).
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).live.len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(i: u32) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(&i.to_le_bytes());
        b
    }

    #[test]
    fn reused_inside_window_forgotten_after() {
        let c = NonceCache::new(100, 4, 10);
        assert_eq!(c.check_and_record(n(1), 1300, 1000), Ok(()));
        assert_eq!(c.check_and_record(n(1), 1300, 1300), Err(Refusal::Reused));
        assert_eq!(c.check_and_record(n(1), 1601, 1301), Ok(()));
    }

    #[test]
    fn full_cache_fails_closed_and_recovers_after_expiry() {
        let c = NonceCache::new(4, 1, 1000);
        for i in 0..4 {
            c.check_and_record(n(i), 1300, 1000).unwrap();
        }
        assert_eq!(c.check_and_record(n(9), 1300, 1000), Err(Refusal::Full));
        for i in 0..4 {
            assert_eq!(c.check_and_record(n(i), 1300, 1100), Err(Refusal::Reused));
        }
        assert_eq!(c.check_and_record(n(9), 1700, 1301), Ok(()));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn saturated_expiry_is_never_forgotten() {
        let c = NonceCache::new(4, 1, 1);
        c.check_and_record(n(1), u64::MAX, 5_000_000_000).unwrap();
        assert_eq!(
            c.check_and_record(n(1), u64::MAX, u64::MAX),
            Err(Refusal::Reused)
        );
    }
}
