//! The replay cache: nonces seen per key id while inside the window.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Why the cache refused a nonce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The nonce was recorded before and its timestamp is still in the window.
    Reused,
    /// The cache holds its capacity in live nonces; it fails closed.
    Full,
}

/// Slots per bucket: three nonces and their expiries fill one 64-byte line.
const SLOTS: usize = 3;
/// Fewest buckets of a table that holds anything.
const MIN_BUCKETS: usize = 4;

/// One cache line of the table. An expiry of 0 marks an empty slot; slots
/// fill from the front and are only emptied by a rebuild, so an empty slot
/// ends every probe sequence that reaches it.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Bucket {
    nonces: [[u8; 16]; SLOTS],
    expiries: [u32; SLOTS],
}

const _: () = assert!(std::mem::size_of::<Bucket>() == 64);

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

/// Zeroed bucket memory (an all-zero bucket has three empty slots). A table of 2 MiB
/// or more is aligned to 2 MiB and advised for transparent huge pages before
/// it is first touched, so a lookup in a large cache rarely misses the TLB.
struct BucketMemory {
    ptr: NonNull<Bucket>,
    len: usize,
}

const HUGE_PAGE: usize = 2 << 20;

impl BucketMemory {
    fn layout(len: usize) -> Layout {
        let size = len
            .checked_mul(std::mem::size_of::<Bucket>())
            .expect("table size overflows");
        let align = if size >= HUGE_PAGE {
            HUGE_PAGE
        } else {
            std::mem::align_of::<Bucket>()
        };
        Layout::from_size_align(size, align).expect("table layout is valid")
    }

    fn zeroed(len: usize) -> BucketMemory {
        if len == 0 {
            return BucketMemory {
                ptr: NonNull::dangling(),
                len,
            };
        }
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size; the memory is zeroed before
        // any Bucket is read from it, and all-zero is a valid Bucket.
        unsafe {
            let raw = alloc(layout);
            let Some(ptr) = NonNull::new(raw.cast::<Bucket>()) else {
                handle_alloc_error(layout);
            };
            #[cfg(any(target_os = "linux", target_os = "android"))]
            if layout.align() == HUGE_PAGE {
                // Only a hint: without huge pages the table works the same.
                libc::madvise(raw.cast(), layout.size(), libc::MADV_HUGEPAGE);
            }
            std::ptr::write_bytes(raw, 0, layout.size());
            BucketMemory { ptr, len }
        }
    }
}

impl Drop for BucketMemory {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: allocated in `zeroed` with this same layout.
            unsafe { dealloc(self.ptr.as_ptr().cast(), Self::layout(self.len)) }
        }
    }
}

impl std::ops::Deref for BucketMemory {
    type Target = [Bucket];

    fn deref(&self) -> &[Bucket] {
        // SAFETY: `ptr` holds `len` initialised buckets (or is dangling with
        // `len` 0), owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for BucketMemory {
    fn deref_mut(&mut self) -> &mut [Bucket] {
        // SAFETY: as in `deref`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

// SAFETY: BucketMemory owns plain data, like a Vec<Bucket>.
unsafe impl Send for BucketMemory {}
// SAFETY: shared access only reads, like &[Bucket].
unsafe impl Sync for BucketMemory {}

/// An open-addressing table of nonces: linear probing over 64-byte buckets,
/// so a lookup or an insert usually touches one cache line.
struct Table {
    buckets: BucketMemory,
    /// Occupied slots, live or expired.
    used: usize,
    /// No occupied slot expires before this (a lower bound).
    min_expiry: u32,
}

impl Table {
    fn with_buckets(count: usize) -> Table {
        Table {
            buckets: BucketMemory::zeroed(count),
            used: 0,
            min_expiry: u32::MAX,
        }
    }

    fn slots(&self) -> usize {
        self.buckets.len() * SLOTS
    }

    /// Whether one more nonce keeps the load at or under three quarters.
    fn fits_one_more(&self) -> bool {
        (self.used + 1) * 4 <= self.slots() * 3
    }

    /// Looks `nonce` up; slots whose expiry is before `now` count as expired.
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

    /// Whether some occupied slot may hold an expired nonce at `now`.
    fn may_hold_expired(&self, now: u32) -> bool {
        self.used > 0 && self.min_expiry < now
    }

    fn live_entries(&self, now: u32) -> impl Iterator<Item = ([u8; 16], u32)> + '_ {
        self.buckets.iter().flat_map(move |b| {
            (0..SLOTS)
                .filter(move |&s| b.expiries[s] != 0 && b.expiries[s] >= now)
                .map(move |s| (b.nonces[s], b.expiries[s]))
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
    /// An insert found no room: forget expired nonces, grow when needed.
    Room,
}

struct Shard {
    table: Table,
    next_sweep: u64,
}

impl Shard {
    /// Rebuilds the table with only its live nonces, sized so the load stays
    /// at or under a half after a growth (a quarter after a shrink).
    fn rebuild(&mut self, now: u32, why: Rebuild, hasher: &NonceHasher) {
        if why == Rebuild::Sweep && !self.table.may_hold_expired(now) {
            return;
        }
        let live = self.table.live_entries(now).count();
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
            Rebuild::Sweep => {
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
            return;
        }
        let mut table = Table::with_buckets(count);
        for (nonce, expiry) in self.table.live_entries(now) {
            match table.probe(&nonce, hasher.hash_one(nonce), 0) {
                Probe::Absent {
                    free: (bucket, slot),
                    ..
                } => table.insert_at(bucket, slot, nonce, expiry),
                // A nonce appears once in the old table and the new one has
                // room for every live nonce plus one.
                Probe::Found(..) | Probe::NoRoom => {
                    unreachable!("rebuild sized for every live nonce")
                }
            }
        }
        self.table = table;
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
/// expiry in Unix seconds) in 64-byte buckets of three slots, at most three
/// quarters full (see BENCHMARKS.md for the measured bytes per nonce).
/// Expiries past 2106 saturate to `u32::MAX`, which keeps
/// such nonces (fails closed) rather than forgetting them early; an expiry of
/// 0 is kept as 1 (one more second of refusal). Buckets are chosen by a
/// randomly keyed hash, so clients cannot aim nonces at one shard or bucket.
pub(crate) struct NonceCache {
    shards: Box<[ShardCell]>,
    hasher: NonceHasher,
    shard_capacity: usize,
    sweep_every: u64,
}

fn clamp_u32(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
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
    /// least 1), forgetting expired ones at least every `sweep_every` seconds.
    pub(crate) fn new(capacity: usize, shards: usize, sweep_every: u64) -> NonceCache {
        let shards = shards.max(1);
        NonceCache {
            shards: (0..shards)
                .map(|_| ShardCell {
                    shard: Mutex::new(Shard {
                        table: Table::with_buckets(0),
                        next_sweep: 0,
                    }),
                    buckets: AtomicPtr::new(std::ptr::null_mut()),
                    mask: AtomicUsize::new(0),
                })
                .collect(),
            hasher: NonceHasher::random(),
            shard_capacity: capacity.div_ceil(shards),
            sweep_every: sweep_every.max(1),
        }
    }

    fn shard_of(&self, hash: u64) -> &ShardCell {
        // The high bits pick the shard, the low bits the bucket.
        &self.shards[((hash >> 40) as usize) % self.shards.len()]
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

    /// Records the located nonce, which stays refused until `expires_at`
    /// (inclusive), unless it is already live. Never evicts a live nonce.
    pub(crate) fn check_and_record(
        &self,
        located: &Located,
        expires_at: u64,
        now: u64,
    ) -> Result<(), Refusal> {
        let Located { nonce, hash } = *located;
        let expiry = clamp_u32(expires_at).max(1);
        // A clock past 2106 must not make saturated entries look expired.
        let now32 = clamp_u32(now).min(u32::MAX - 1);
        let cell = self.shard_of(hash);
        // A poisoned shard is still consistent: a panic can only come from a
        // failed allocation, before the new table replaces the old one.
        let mut shard = cell.shard.lock().unwrap_or_else(|p| p.into_inner());
        if now >= shard.next_sweep {
            shard.rebuild(now32, Rebuild::Sweep, &self.hasher);
            cell.publish(&shard.table);
            shard.next_sweep = now.saturating_add(self.sweep_every);
        }
        match shard.table.probe(&nonce, hash, now32) {
            Probe::Found(bucket, slot) => {
                let recorded = &mut shard.table.buckets[bucket].expiries[slot];
                if *recorded >= now32 {
                    return Err(Refusal::Reused);
                }
                *recorded = expiry;
                return Ok(());
            }
            // Taking over an expired slot keeps the count of occupied slots,
            // which bounds the live nonces, unchanged.
            Probe::Absent {
                expired: Some((bucket, slot)),
                ..
            } => {
                shard.table.replace_at(bucket, slot, nonce, expiry);
                return Ok(());
            }
            Probe::Absent { expired: None, .. } | Probe::NoRoom => {}
        }
        if shard.table.used >= self.shard_capacity || !shard.table.fits_one_more() {
            if shard.table.used >= self.shard_capacity && !shard.table.may_hold_expired(now32) {
                return Err(Refusal::Full);
            }
            shard.rebuild(now32, Rebuild::Room, &self.hasher);
            cell.publish(&shard.table);
            if shard.table.used >= self.shard_capacity {
                return Err(Refusal::Full);
            }
        }
        match shard.table.probe(&nonce, hash, now32) {
            Probe::Absent {
                free: (bucket, slot),
                ..
            } => {
                shard.table.insert_at(bucket, slot, nonce, expiry);
                Ok(())
            }
            // Neither can happen (the nonce was absent and the rebuild left
            // room); refusing keeps the cache fail-closed if it ever did.
            Probe::Found(..) => Err(Refusal::Reused),
            Probe::NoRoom => Err(Refusal::Full),
        }
    }

    /// How many nonces the cache holds: the live ones, and expired ones whose
    /// slots are not yet reused or dropped.
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.shard.lock().unwrap_or_else(|p| p.into_inner()).table.used)
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

    fn record(c: &NonceCache, nonce: [u8; 16], expires_at: u64, now: u64) -> Result<(), Refusal> {
        c.check_and_record(&c.locate(nonce), expires_at, now)
    }

    #[test]
    fn reused_inside_window_forgotten_after() {
        let c = NonceCache::new(100, 4, 10);
        assert_eq!(record(&c, n(1), 1300, 1000), Ok(()));
        assert_eq!(record(&c, n(1), 1300, 1300), Err(Refusal::Reused));
        assert_eq!(record(&c, n(1), 1601, 1301), Ok(()));
        assert_eq!(record(&c, n(1), 1601, 1301), Err(Refusal::Reused));
    }

    #[test]
    fn full_cache_fails_closed_and_recovers_after_expiry() {
        let c = NonceCache::new(4, 1, 1000);
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
    fn saturated_expiry_is_never_forgotten() {
        let c = NonceCache::new(4, 1, 1);
        record(&c, n(1), u64::MAX, 5_000_000_000).unwrap();
        assert_eq!(record(&c, n(1), u64::MAX, u64::MAX), Err(Refusal::Reused));
    }

    #[test]
    fn zero_expiry_is_still_recorded() {
        let c = NonceCache::new(4, 1, 1000);
        record(&c, n(0), 0, 0).unwrap();
        assert_eq!(record(&c, n(0), 0, 0), Err(Refusal::Reused));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn growth_and_sweeps_keep_every_live_nonce() {
        let c = NonceCache::new(1_000_000, 1, 50);
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
        for (capacity, sweep_every, seed) in
            [(5usize, 7u64, 1u64), (50, 3, 2), (1000, 11, 3), (40, 1, 4)]
        {
            let c = NonceCache::new(capacity, 1, sweep_every);
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
        let c = NonceCache::new(10, 1, 1_000_000);
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
