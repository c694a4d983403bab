//! The replay cache: nonces seen per key id while inside the window.
//!
//! Three rules make it safe whatever clock its callers pass:
//!
//! - **A monotonic now.** The cache keeps the newest `now` it was given and
//!   uses `max(now, newest)` for every decision, so a clock stepped back, or
//!   two threads whose clocks differ by a second, can never make it accept a
//!   nonce it may already have forgotten: a nonce whose expiry is before that
//!   now is refused ([`Refusal::Stale`]), and only nonces expired before it
//!   are ever forgotten.
//! - **An exact capacity.** Occupied slots are counted across shards (and
//!   across key ids, against the verifier-wide [`Budget`]), so a capacity of
//!   N holds exactly N live nonces; expired ones are dropped, in every shard
//!   if needed, before a nonce is refused as full.
//! - **Bounded expiries.** Each table stores 32-bit expiries relative to its
//!   own 64-bit base, rebased whenever it is rebuilt, so every `u64` time is
//!   represented exactly as long as expiries lie within 2^32 - 2 seconds
//!   of now (the verifier bounds its window to guarantee it).

use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::bucket_memory::{Bucket, BucketMemory, SLOTS};

/// Why the cache refused a nonce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The nonce was recorded before and its timestamp is still in the window.
    Reused,
    /// The cache holds its capacity in live nonces; it fails closed.
    Full,
    /// The verifier-wide budget (every key id) is used up; it fails closed.
    TotalFull,
    /// The nonce expires before the cache's monotonic now (given here): it
    /// may have been forgotten already, so it is refused.
    Stale(u64),
}

/// Fewest buckets of a table that holds anything.
const MIN_BUCKETS: usize = 4;

/// A count of occupied slots held against a limit, shared by the caches of
/// every key id of one verifier.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: AtomicUsize,
    held: AtomicUsize,
}

impl Budget {
    pub(crate) fn new(limit: usize) -> Budget {
        Budget {
            limit: AtomicUsize::new(limit),
            held: AtomicUsize::new(0),
        }
    }

    pub(crate) fn set_limit(&self, limit: usize) {
        self.limit.store(limit, Ordering::Relaxed);
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Takes one slot, unless the limit is reached.
    fn take(&self) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        self.held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| {
                (h < limit).then_some(h + 1)
            })
            .is_ok()
    }

    fn give_back(&self, count: usize) {
        if count > 0 {
            self.held.fetch_sub(count, Ordering::Relaxed);
        }
    }
}

enum Probe {
    /// The nonce is recorded at (bucket, slot).
    Found(usize, usize),
    /// The nonce is absent. `free` is the empty slot that ended the probe;
    /// `expired` is the first slot before it holding an expired nonce, which
    /// the absent nonce may take over.
    Absent {
        free: (usize, usize),
        expired: Option<(usize, usize)>,
    },
    /// The table has no empty slot to end the probe.
    NoRoom,
}

/// An open-addressing table of nonces: linear probing over 64-byte buckets,
/// so a lookup or an insert usually touches one cache line. A slot stores
/// its expiry as seconds after `base` (1..u32::MAX; 0 is an empty slot).
struct Table {
    buckets: BucketMemory,
    /// Occupied slots, live or expired.
    used: usize,
    /// Every stored expiry is `base` plus its 32-bit offset.
    base: u64,
    /// No occupied slot expires before this offset (a lower bound).
    min_expiry: u32,
}

impl Table {
    fn with_buckets(count: usize, base: u64) -> Table {
        Table {
            buckets: BucketMemory::zeroed(count),
            used: 0,
            base,
            min_expiry: u32::MAX,
        }
    }

    fn slots(&self) -> usize {
        self.buckets.len() * SLOTS
    }

    /// `now` as an offset: a slot whose offset is below it has expired. A
    /// now more than 2^32 - 1 seconds after the base expires every slot.
    fn relative_now(&self, now: u64) -> u32 {
        u32::try_from(now.saturating_sub(self.base)).unwrap_or(u32::MAX)
    }

    /// `expiry` as an offset, when the table can store it exactly.
    fn offset(&self, expiry: u64) -> Option<u32> {
        let offset = expiry.checked_sub(self.base)?;
        match u32::try_from(offset) {
            Ok(o) if o != 0 && o != u32::MAX => Some(o),
            _ => None,
        }
    }

    /// The earliest expiry any occupied slot may have.
    fn earliest(&self) -> u64 {
        if self.used == 0 {
            u64::MAX
        } else {
            self.base.saturating_add(u64::from(self.min_expiry))
        }
    }

    /// Whether one more nonce keeps the load at or under three quarters.
    fn fits_one_more(&self) -> bool {
        (self.used + 1) * 4 <= self.slots() * 3
    }

    /// Looks `nonce` up; slots whose offset is below `now` count as expired.
    fn probe(&self, nonce: &[u8; 16], hash: u64, now: u32) -> Probe {
        let count = self.buckets.len();
        if count == 0 {
            return Probe::NoRoom;
        }
        let mask = count - 1;
        let mut index = bucket_index(hash, mask);
        let mut expired = None;
        for _ in 0..count {
            let bucket = &self.buckets[index];
            for slot in 0..SLOTS {
                if bucket.expiries[slot] == 0 {
                    return Probe::Absent {
                        free: (index, slot),
                        expired,
                    };
                }
                if bucket.nonces[slot] == *nonce {
                    return Probe::Found(index, slot);
                }
                if expired.is_none() && bucket.expiries[slot] < now {
                    expired = Some((index, slot));
                }
            }
            index = (index + 1) & mask;
        }
        Probe::NoRoom
    }

    fn insert_at(&mut self, bucket: usize, slot: usize, nonce: [u8; 16], expiry: u32) {
        self.replace_at(bucket, slot, nonce, expiry);
        self.used += 1;
    }

    /// Overwrites an occupied slot whose nonce has expired. The slot stays
    /// occupied, so no probe sequence is cut short.
    fn replace_at(&mut self, bucket: usize, slot: usize, nonce: [u8; 16], expiry: u32) {
        let b = &mut self.buckets[bucket];
        b.nonces[slot] = nonce;
        b.expiries[slot] = expiry;
        self.min_expiry = self.min_expiry.min(expiry);
    }

    /// Whether some occupied slot may hold an expired nonce at offset `now`.
    fn may_hold_expired(&self, now: u32) -> bool {
        self.used > 0 && self.min_expiry < now
    }

    /// The live nonces at offset `now`, with their absolute expiries.
    fn live_entries(&self, now: u32) -> impl Iterator<Item = ([u8; 16], u64)> + '_ {
        let base = self.base;
        self.buckets.iter().flat_map(move |b| {
            (0..SLOTS)
                .filter(move |&s| b.expiries[s] != 0 && b.expiries[s] >= now)
                .map(move |s| (b.nonces[s], base + u64::from(b.expiries[s])))
        })
    }
}

/// A randomly keyed mix of a nonce into 64 bits (a folded multiply of the
/// nonce's halves, each XORed with a secret key): nonces are chosen by
/// clients, so where one lands must not be predictable. Not a MAC; it only
/// spreads nonces over shards and buckets.
struct NonceHasher([u64; 2]);

impl NonceHasher {
    fn random() -> NonceHasher {
        let mut key = [0u8; 16];
        super::nonce::fill_random(&mut key);
        let (low, high) = key.split_at(8);
        NonceHasher([
            u64::from_le_bytes(low.try_into().expect("8 bytes")),
            u64::from_le_bytes(high.try_into().expect("8 bytes")),
        ])
    }

    fn hash_one(&self, nonce: [u8; 16]) -> u64 {
        let (low, high) = nonce.split_at(8);
        let low = u64::from_le_bytes(low.try_into().expect("8 bytes")) ^ self.0[0];
        let high = u64::from_le_bytes(high.try_into().expect("8 bytes")) ^ self.0[1];
        let product = u128::from(low) * u128::from(high);
        // Truncations are intended: the two halves of the product are folded.
        (product as u64) ^ ((product >> 64) as u64)
    }
}

fn bucket_index(hash: u64, mask: usize) -> usize {
    // Truncation is intended: the low bits pick the bucket.
    (hash as usize) & mask
}

/// Why a shard's table is rebuilt.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rebuild {
    /// The periodic sweep: shrink a table that is mostly empty or expired.
    Sweep,
    /// Drop every expired nonce (and rebase), shrinking when possible.
    Purge,
    /// An insert found no room: forget expired nonces, grow when needed.
    Room,
}

struct Shard {
    table: Table,
    next_sweep: u64,
}

impl Shard {
    /// Rebuilds the table with only its nonces live at `now` (the cache's
    /// monotonic now), based at `now - 1`, sized so the load stays at or
    /// under a half after a growth (a quarter after a shrink). Returns how
    /// many expired nonces it dropped.
    fn rebuild(&mut self, now: u64, why: Rebuild, hasher: &NonceHasher) -> usize {
        let now_rel = self.table.relative_now(now);
        if why == Rebuild::Sweep && !self.table.may_hold_expired(now_rel) {
            return 0;
        }
        let live = self.table.live_entries(now_rel).count();
        let current = self.table.buckets.len();
        let mut count = current.max(MIN_BUCKETS);
        match why {
            Rebuild::Room => {
                if (live + 1) * 2 > count * SLOTS {
                    count *= 2;
                }
                while (live + 1) * 4 > count * SLOTS * 3 {
                    count *= 2;
                }
            }
            Rebuild::Sweep | Rebuild::Purge => {
                while count > MIN_BUCKETS && (live + 1) * 4 <= (count / 2) * SLOTS {
                    count /= 2;
                }
                if live == 0 {
                    count = 0;
                }
            }
        }
        if why == Rebuild::Sweep && count == current {
            // Expired slots are taken over by new nonces; only a shrink is
            // worth a rebuild.
            return 0;
        }
        let mut table = Table::with_buckets(count, now.saturating_sub(1));
        for (nonce, expiry) in self.table.live_entries(now_rel) {
            // A live expiry is at least `now`, above the new base, and the new
            // base is not below the old one, so the offset fits.
            let offset = table
                .offset(expiry)
                .expect("a live expiry fits a newer base");
            match table.probe(&nonce, hasher.hash_one(nonce), 0) {
                Probe::Absent {
                    free: (bucket, slot),
                    ..
                } => table.insert_at(bucket, slot, nonce, offset),
                // A nonce appears once in the old table and the new one has
                // room for every live nonce plus one.
                Probe::Found(..) | Probe::NoRoom => {
                    unreachable!("rebuild sized for every live nonce")
                }
            }
        }
        let dropped = self.table.used - table.used;
        self.table = table;
        dropped
    }
}

/// One shard with its own lock, and the location of its table published for
/// lock-free prefetching (a stale location only prefetches a useless line).
#[repr(align(64))]
struct ShardCell {
    shard: Mutex<Shard>,
    buckets: AtomicPtr<Bucket>,
    mask: AtomicUsize,
}

impl ShardCell {
    fn lock(&self) -> MutexGuard<'_, Shard> {
        // A poisoned shard is still consistent: a panic can only come from a
        // failed allocation, before the new table replaces the old one.
        self.shard.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn publish(&self, table: &Table) {
        self.buckets
            .store(table.buckets.as_ptr().cast_mut(), Ordering::Relaxed);
        self.mask
            .store(table.buckets.len().saturating_sub(1), Ordering::Relaxed);
    }
}

/// A nonce located in a cache: computed once, used to prefetch its bucket
/// while the signature is checked, then to record it.
#[derive(Clone, Copy)]
pub(crate) struct Located {
    nonce: [u8; 16],
    hash: u64,
}

/// Nonces of one key id, sharded so concurrent verifications rarely share a
/// lock.
///
/// Each live nonce costs one 20-byte slot (16 bytes of UUID and a 4-byte
/// expiry relative to its table's 64-bit base) in 64-byte buckets of three
/// slots, at most three quarters full (see BENCHMARKS.md for the measured
/// bytes per nonce). An expiry of 0 is kept as 1 (one more second of
/// refusal). Buckets are chosen by a randomly keyed hash, so clients cannot
/// aim nonces at one shard or bucket.
pub(crate) struct NonceCache {
    shards: Box<[ShardCell]>,
    hasher: NonceHasher,
    sweep_every: u64,
    /// The newest `now` seen: the cache's monotonic clock.
    clock: AtomicU64,
    /// No occupied slot of any shard expires before this (a lower bound).
    earliest: AtomicU64,
    /// Serialises cache-wide purges, so that `earliest` is only raised by one.
    purging: Mutex<()>,
    /// Occupied slots of this cache against its capacity.
    held: Budget,
    /// Occupied slots of every cache of the verifier against its limit.
    total: Arc<Budget>,
}

#[inline]
fn prefetch(address: *const Bucket) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults and changes no
    // memory, so any address, even a dangling one, is acceptable.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(address.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

impl NonceCache {
    /// A cache for at most `capacity` live nonces, in `shards` shards (at
    /// least 1), forgetting expired ones at least every `sweep_every` seconds,
    /// whose occupied slots also count against `total`.
    pub(crate) fn new(
        capacity: usize,
        shards: usize,
        sweep_every: u64,
        total: Arc<Budget>,
    ) -> NonceCache {
        let shards = shards.max(1);
        NonceCache {
            shards: (0..shards)
                .map(|_| ShardCell {
                    shard: Mutex::new(Shard {
                        table: Table::with_buckets(0, 0),
                        next_sweep: 0,
                    }),
                    buckets: AtomicPtr::new(std::ptr::null_mut()),
                    mask: AtomicUsize::new(0),
                })
                .collect(),
            hasher: NonceHasher::random(),
            sweep_every: sweep_every.max(1),
            clock: AtomicU64::new(0),
            earliest: AtomicU64::new(u64::MAX),
            purging: Mutex::new(()),
            held: Budget::new(capacity),
            total,
        }
    }

    /// A cache with its own verifier-wide budget (no limit), for tests.
    #[cfg(test)]
    fn alone(capacity: usize, shards: usize, sweep_every: u64) -> NonceCache {
        NonceCache::new(
            capacity,
            shards,
            sweep_every,
            Arc::new(Budget::new(usize::MAX)),
        )
    }

    fn shard_of(&self, hash: u64) -> &ShardCell {
        // The high bits pick the shard, the low bits the bucket.
        &self.shards[((hash >> 40) as usize) % self.shards.len()]
    }

    /// Advances the monotonic clock to `now` and returns it: never older than
    /// the newest `now` given to this cache.
    pub(crate) fn observe(&self, now: u64) -> u64 {
        let seen = self.clock.load(Ordering::Acquire);
        if now <= seen {
            return seen;
        }
        self.clock.fetch_max(now, Ordering::AcqRel).max(now)
    }

    fn note_expiry(&self, expiry: u64) {
        if expiry < self.earliest.load(Ordering::Relaxed) {
            self.earliest.fetch_min(expiry, Ordering::Relaxed);
        }
    }

    fn reserve(&self) -> Result<(), Refusal> {
        if !self.held.take() {
            return Err(Refusal::Full);
        }
        if !self.total.take() {
            self.held.give_back(1);
            return Err(Refusal::TotalFull);
        }
        Ok(())
    }

    fn release(&self, count: usize) {
        self.held.give_back(count);
        self.total.give_back(count);
    }

    /// Hashes `nonce` and starts loading its bucket into the cache, so that
    /// [`NonceCache::check_and_record`] later finds it there.
    pub(crate) fn locate(&self, nonce: [u8; 16]) -> Located {
        let hash = self.hasher.hash_one(nonce);
        let cell = self.shard_of(hash);
        let buckets = cell.buckets.load(Ordering::Relaxed);
        let index = bucket_index(hash, cell.mask.load(Ordering::Relaxed));
        prefetch(buckets.wrapping_add(index));
        Located { nonce, hash }
    }

    /// Drops the expired nonces of every shard (at the monotonic `now`) when
    /// some may be held; returns how many it dropped.
    pub(crate) fn purge(&self, now: u64) -> usize {
        let now = self.observe(now);
        let _one = self.purging.lock().unwrap_or_else(|p| p.into_inner());
        if self.earliest.load(Ordering::Relaxed) >= now {
            return 0;
        }
        self.earliest.store(u64::MAX, Ordering::Relaxed);
        let mut dropped = 0;
        for cell in self.shards.iter() {
            let mut shard = cell.lock();
            if shard.table.may_hold_expired(shard.table.relative_now(now)) {
                let d = shard.rebuild(now, Rebuild::Purge, &self.hasher);
                self.release(d);
                dropped += d;
                cell.publish(&shard.table);
            }
            self.note_expiry(shard.table.earliest());
        }
        dropped
    }

    /// Records the located nonce, which stays refused until `expires_at`
    /// (inclusive), unless it is already live. Never evicts a live nonce;
    /// every decision uses the cache's monotonic now (`now` or newer).
    pub(crate) fn check_and_record(
        &self,
        located: &Located,
        expires_at: u64,
        now: u64,
    ) -> Result<(), Refusal> {
        let Located { nonce, hash } = *located;
        let expiry = expires_at.max(1);
        let now = self.observe(now);
        let cell = self.shard_of(hash);
        let mut purged = false;
        loop {
            let mut shard = cell.lock();
            // Another thread may have advanced the clock and forgotten
            // nonces under this lock since `observe`.
            let now = self.clock.load(Ordering::Acquire).max(now);
            if expiry < now {
                return Err(Refusal::Stale(now));
            }
            if now >= shard.next_sweep {
                let d = shard.rebuild(now, Rebuild::Sweep, &self.hasher);
                self.release(d);
                cell.publish(&shard.table);
                shard.next_sweep = now.saturating_add(self.sweep_every);
            }
            if shard.table.used > 0 && shard.table.offset(expiry).is_none() {
                // Rebase: a rebuild bases the table just below now.
                let d = shard.rebuild(now, Rebuild::Purge, &self.hasher);
                self.release(d);
                cell.publish(&shard.table);
            }
            let now_rel = shard.table.relative_now(now);
            let table = &mut shard.table;
            match (table.probe(&nonce, hash, now_rel), table.offset(expiry)) {
                (Probe::Found(bucket, slot), offset) => {
                    let recorded = &mut table.buckets[bucket].expiries[slot];
                    if *recorded >= now_rel {
                        return Err(Refusal::Reused);
                    }
                    // Expiries only grow here, so the lower bounds hold.
                    *recorded = offset.ok_or(Refusal::Full)?;
                    return Ok(());
                }
                // Taking over an expired slot keeps the count of occupied
                // slots unchanged.
                (
                    Probe::Absent {
                        expired: Some((bucket, slot)),
                        ..
                    },
                    Some(offset),
                ) => {
                    table.replace_at(bucket, slot, nonce, offset);
                    self.note_expiry(expiry);
                    return Ok(());
                }
                _ => {}
            }
            // A new slot is needed.
            let mut reserved = self.reserve();
            if reserved.is_err() && shard.table.may_hold_expired(now_rel) {
                let d = shard.rebuild(now, Rebuild::Purge, &self.hasher);
                self.release(d);
                cell.publish(&shard.table);
                reserved = self.reserve();
            }
            if let Err(refusal) = reserved {
                drop(shard);
                // Expired nonces of other shards may be holding the slots.
                if !purged && self.purge(now) > 0 {
                    purged = true;
                    continue;
                }
                return Err(refusal);
            }
            if !shard.table.fits_one_more() {
                let d = shard.rebuild(now, Rebuild::Room, &self.hasher);
                self.release(d);
                cell.publish(&shard.table);
            }
            let now_rel = shard.table.relative_now(now);
            let table = &mut shard.table;
            return match (table.probe(&nonce, hash, now_rel), table.offset(expiry)) {
                (
                    Probe::Absent {
                        free: (bucket, slot),
                        ..
                    },
                    Some(offset),
                ) => {
                    table.insert_at(bucket, slot, nonce, offset);
                    self.note_expiry(expiry);
                    Ok(())
                }
                // None can happen (the nonce was absent, the rebuild left room
                // and based the table below now); refusing keeps the cache
                // fail-closed if one ever did.
                (Probe::Found(..), _) => {
                    self.release(1);
                    Err(Refusal::Reused)
                }
                _ => {
                    self.release(1);
                    Err(Refusal::Full)
                }
            };
        }
    }

    /// How many nonces the cache holds: the live ones, and expired ones whose
    /// slots are not yet reused or dropped.
    pub(crate) fn len(&self) -> usize {
        self.held.held()
    }
}

impl Drop for NonceCache {
    fn drop(&mut self) {
        self.total.give_back(self.held.held());
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

    fn record(c: &NonceCache, nonce: [u8; 16], expires_at: u64, now: u64) -> Result<(), Refusal> {
        c.check_and_record(&c.locate(nonce), expires_at, now)
    }

    #[test]
    fn reused_inside_window_forgotten_after() {
        let c = NonceCache::alone(100, 4, 10);
        assert_eq!(record(&c, n(1), 1300, 1000), Ok(()));
        assert_eq!(record(&c, n(1), 1300, 1300), Err(Refusal::Reused));
        assert_eq!(record(&c, n(1), 1601, 1301), Ok(()));
        assert_eq!(record(&c, n(1), 1601, 1301), Err(Refusal::Reused));
    }

    #[test]
    fn full_cache_fails_closed_and_recovers_after_expiry() {
        let c = NonceCache::alone(4, 1, 1000);
        for i in 0..4 {
            record(&c, n(i), 1300, 1000).unwrap();
        }
        assert_eq!(record(&c, n(9), 1300, 1000), Err(Refusal::Full));
        for i in 0..4 {
            assert_eq!(record(&c, n(i), 1300, 1100), Err(Refusal::Reused));
        }
        assert_eq!(record(&c, n(9), 1700, 1301), Ok(()));
        // Expired slots are taken over; the live count is what is bounded.
        for i in 10..13 {
            assert_eq!(record(&c, n(i), 1700, 1301), Ok(()));
        }
        assert_eq!(record(&c, n(0), 1700, 1301), Err(Refusal::Full));
        assert_eq!(c.len(), 4);
    }

    #[test]
    fn expiries_after_2106_stay_exact() {
        for now in [5_000_000_000u64, u64::MAX - 1_000] {
            let c = NonceCache::alone(4, 1, 1);
            record(&c, n(1), now + 300, now).unwrap();
            assert_eq!(record(&c, n(1), now + 600, now + 300), Err(Refusal::Reused));
            // Bounded: forgotten once expired, and its slot is reused.
            for i in 2..6 {
                assert_eq!(record(&c, n(i), now + 601, now + 301), Ok(()), "{now}");
            }
            assert_eq!(record(&c, n(1), now + 601, now + 301), Err(Refusal::Full));
            assert_eq!(c.len(), 4);
        }
    }

    #[test]
    fn a_table_is_rebased_when_an_expiry_does_not_fit() {
        let c = NonceCache::alone(8, 1, u64::MAX);
        record(&c, n(1), 1_300, 1_000).unwrap();
        // 2^33 seconds later: the old nonce has expired, the new expiry does
        // not fit the old base.
        let later = 1_000 + (1u64 << 33);
        record(&c, n(2), later + 300, later).unwrap();
        assert_eq!(
            record(&c, n(2), later + 300, later + 300),
            Err(Refusal::Reused)
        );
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn the_clock_never_goes_back() {
        let c = NonceCache::alone(4, 1, 1);
        for i in 0..4 {
            record(&c, n(i), 1_300, 1_000).unwrap();
        }
        // A burst at 1_301 forgets them...
        for i in 10..14 {
            record(&c, n(i), 1_601, 1_301).unwrap();
        }
        // ...so a caller whose clock is behind may not bring them back.
        for i in 0..4 {
            assert_eq!(record(&c, n(i), 1_300, 1_181), Err(Refusal::Stale(1_301)));
        }
        assert_eq!(c.observe(1_000), 1_301);
    }

    #[test]
    fn capacity_is_exact_over_every_shard() {
        for (capacity, shards) in [(1usize, 16usize), (1025, 16), (7, 3), (100, 256)] {
            let c = NonceCache::alone(capacity, shards, 10);
            for i in 0..capacity as u32 {
                assert_eq!(
                    record(&c, n(i), 1_300, 1_000),
                    Ok(()),
                    "{capacity}/{shards}: {i}"
                );
            }
            assert_eq!(record(&c, n(1 << 30), 1_300, 1_000), Err(Refusal::Full));
            // Once they expire, exactly `capacity` more are accepted.
            for i in 0..capacity as u32 {
                let nonce = n(i + (1 << 20));
                assert_eq!(
                    record(&c, nonce, 1_700, 1_400),
                    Ok(()),
                    "{capacity}/{shards}: {i}"
                );
            }
            assert_eq!(record(&c, n(1 << 30), 1_700, 1_400), Err(Refusal::Full));
            assert_eq!(c.len(), capacity);
        }
    }

    #[test]
    fn the_total_budget_is_shared_and_given_back() {
        let total = Arc::new(Budget::new(10));
        let a = NonceCache::new(8, 4, 10, total.clone());
        let b = NonceCache::new(8, 4, 10, total.clone());
        for i in 0..8 {
            record(&a, n(i), 1_300, 1_000).unwrap();
        }
        record(&b, n(100), 1_300, 1_000).unwrap();
        record(&b, n(101), 1_300, 1_000).unwrap();
        assert_eq!(record(&b, n(102), 1_300, 1_000), Err(Refusal::TotalFull));
        assert_eq!(total.held(), 10);
        drop(a);
        assert_eq!(total.held(), 2);
        record(&b, n(102), 1_300, 1_000).unwrap();
    }

    #[test]
    fn zero_expiry_is_still_recorded() {
        let c = NonceCache::alone(4, 1, 1000);
        record(&c, n(0), 0, 0).unwrap();
        assert_eq!(record(&c, n(0), 0, 0), Err(Refusal::Reused));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn growth_and_sweeps_keep_every_live_nonce() {
        let c = NonceCache::alone(1_000_000, 1, 50);
        // Nonces recorded over 400 seconds, each live for 100 seconds, with
        // growth and periodic sweeps along the way.
        for i in 0..40_000u32 {
            let now = 1000 + u64::from(i / 100);
            record(&c, n(i), now + 100, now).unwrap();
        }
        let end = 1000 + 399;
        for i in 0..40_000u32 {
            let recorded_at = 1000 + u64::from(i / 100);
            let live = recorded_at + 100 >= end;
            let again = record(&c, n(i), end + 100, end);
            if live {
                assert_eq!(again, Err(Refusal::Reused), "nonce {i}");
            } else {
                assert_eq!(again, Ok(()), "nonce {i}");
            }
        }
        // A sweep forgets everything once it has expired.
        record(&c, n(1_000_000), 10_000, 5_000).unwrap();
        assert_eq!(c.len(), 1);
    }

    /// The cache answers exactly like a plain map of nonce to expiry, over
    /// long random runs that force growth, sweeps and a full cache.
    #[test]
    fn matches_a_simple_model() {
        for (capacity, sweep_every, seed, shards) in [
            (5usize, 7u64, 1u64, 1usize),
            (50, 3, 2, 1),
            (1000, 11, 3, 1),
            (40, 1, 4, 1),
            (5, 7, 5, 16),
            (50, 3, 6, 4),
            (1000, 11, 7, 16),
        ] {
            let c = NonceCache::alone(capacity, shards, sweep_every);
            let mut model: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
            let mut state = seed;
            let mut next = move || {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (state >> 33) as u32
            };
            let mut now = 1_000u32;
            let (mut accepted, mut reused, mut full) = (0, 0, 0);
            for _ in 0..30_000 {
                // About capacity / 4 attempts a second, each live for ~10 s.
                now += u32::from(next() % (capacity as u32 / 4 + 1) == 0);
                let nonce = next() % (capacity as u32 * 4);
                let expiry = now + next() % 20;
                let live = model.values().filter(|&&e| e >= now).count();
                let want = match model.get(&nonce) {
                    Some(&e) if e >= now => Err(Refusal::Reused),
                    Some(_) => Ok(()),
                    None if live >= capacity => Err(Refusal::Full),
                    None => Ok(()),
                };
                let got = record(&c, n(nonce), u64::from(expiry), u64::from(now));
                assert_eq!(got, want, "capacity {capacity}, nonce {nonce} at {now}");
                match got {
                    Ok(()) => {
                        model.insert(nonce, expiry);
                        accepted += 1;
                    }
                    Err(Refusal::Reused) => reused += 1,
                    Err(Refusal::Full) => full += 1,
                    Err(other) => panic!("{other:?}"),
                }
                model.retain(|_, e| *e >= now);
            }
            assert!(
                accepted > 500 && reused > 100 && full > 100,
                "capacity {capacity}: {accepted} accepted, {reused} reused, {full} full"
            );
        }
    }

    #[test]
    fn capacity_counts_live_nonces_only() {
        let c = NonceCache::alone(10, 1, 1_000_000);
        for round in 0..5u64 {
            let now = 1000 + round * 1000;
            for i in 0..10 {
                assert_eq!(
                    record(&c, n(i + 100 * round as u32), now + 300, now),
                    Ok(()),
                    "round {round}"
                );
            }
            assert_eq!(
                record(&c, n(99), now + 300, now),
                Err(Refusal::Full),
                "round {round}"
            );
        }
    }
}
