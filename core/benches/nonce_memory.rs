//! Heap bytes a `Verifier` holds per live nonce, counted by a global
//! allocator that tracks every allocation.
//!
//! `cargo bench -p payidem --bench nonce_memory` (optionally followed by
//! counts, e.g. `-- 100000 1000000`). Target: at most 64 bytes per live
//! nonce.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use payidem::protocol::{NonceSource, OsNonceSource, Signer};
use payidem::verifier::{IncomingRequest, Verifier, VerifierConfig};

/// The system allocator, counting the bytes currently allocated and the
/// peak since the last reset.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = CURRENT.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call forwards to `System` with the caller's layout; the
// counters have no effect on the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const KEY_ID: &str = "key_live_1";
const SECRET: &[u8] = b"sk_live_0123456789abcdef0123456789abcdef";
const NOW: u64 = 1_767_225_600;
const TARGET_BYTES_PER_NONCE: f64 = 64.0;

struct Measured {
    nonces: usize,
    held: usize,
    peak: usize,
}

/// Fills a fresh verifier with `count` nonces through `verify` and measures
/// what it holds (and the peak while filling), net of everything else.
fn measure(count: usize) -> Measured {
    let signer = Signer::new(KEY_ID, SECRET).unwrap();
    let body = br#"{"order_id":"o1","amount":100}"#;
    // Warm up the thread's nonce generator outside the measurement.
    let _ = OsNonceSource.next_nonce();

    let before = CURRENT.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    // The capacity only bounds the cache (nothing is reserved up front) and
    // is exact over every shard, so exactly `count` fits.
    let config = VerifierConfig {
        nonce_capacity_per_key: count,
        ..VerifierConfig::default()
    };
    let mut verifier = Verifier::new(config).unwrap();
    verifier.add_key(KEY_ID, &[SECRET]).unwrap();
    for _ in 0..count {
        let attempt = signer
            .sign_attempt(
                "POST",
                "/v1/payments",
                "create-o1",
                body,
                NOW,
                OsNonceSource.next_nonce(),
            )
            .unwrap();
        let mut headers = attempt.headers();
        let headers: [(&str, &str); 5] = std::array::from_fn(|_| headers.next().unwrap());
        let request = IncomingRequest {
            method: "POST",
            path: "/v1/payments",
            headers: &headers,
            body,
        };
        verifier
            .verify(&request, NOW)
            .expect("a fresh nonce is accepted");
    }
    let held = CURRENT.load(Ordering::Relaxed) - before;
    let peak = PEAK.load(Ordering::Relaxed) - before;
    let nonces = verifier.nonces_held(KEY_ID);
    assert_eq!(nonces, count, "every nonce is live");
    eprintln!(
        "  {count} nonces: {} KiB of the process in transparent huge pages",
        anon_huge_kib()
    );
    drop(verifier);
    Measured { nonces, held, peak }
}

/// `AnonHugePages` of this process (Linux), in KiB; 0 where unknown.
fn anon_huge_kib() -> u64 {
    std::fs::read_to_string("/proc/self/smaps_rollup")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("AnonHugePages:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let mut counts: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    if counts.is_empty() {
        counts = vec![100_000, 1_000_000, 4_000_000];
    }
    println!(
        "nonce_memory: heap held by one Verifier ({} shards), per live nonce",
        VerifierConfig::default().shards
    );
    println!(
        "{:>10} {:>14} {:>10} {:>14} {:>10}  target <= {TARGET_BYTES_PER_NONCE}",
        "nonces", "held bytes", "B/nonce", "peak bytes", "peak B/n"
    );
    for count in counts {
        let m = measure(count);
        let per = m.held as f64 / m.nonces as f64;
        let peak_per = m.peak as f64 / m.nonces as f64;
        let verdict = if per <= TARGET_BYTES_PER_NONCE {
            "ok"
        } else {
            "MISSED"
        };
        println!(
            "{:>10} {:>14} {:>10.1} {:>14} {:>10.1}  {verdict}",
            m.nonces, m.held, per, m.peak, peak_per
        );
    }
}
