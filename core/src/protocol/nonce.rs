//! Nonces: fresh random UUID v4 values, one per attempt.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use super::fields;
use crate::error::Result;

/// One nonce: a lower-case hyphenated UUID v4 (36 ASCII bytes).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Nonce([u8; fields::NONCE_LEN]);

impl Nonce {
    /// The nonce made from 16 random bytes (the version and variant bits are
    /// set as UUID v4 requires).
    pub fn from_random_bytes(bytes: [u8; 16]) -> Nonce {
        let uuid = uuid::Builder::from_random_bytes(bytes).into_uuid();
        let mut out = [0u8; fields::NONCE_LEN];
        uuid.hyphenated().encode_lower(&mut out);
        Nonce(out)
    }

    /// Parses a nonce, checking the protocol's rule.
    pub fn parse(text: &str) -> Result<Nonce> {
        fields::check_nonce(text)?;
        let mut out = [0u8; fields::NONCE_LEN];
        out.copy_from_slice(text.as_bytes());
        Ok(Nonce(out))
    }
}

ascii_text!(Nonce, "nonce");

/// A source of nonces. Production code uses [`OsNonceSource`]; tests inject
/// their own to get fixed values.
pub trait NonceSource: Send + Sync {
    /// A nonce never returned before by this source (with overwhelming
    /// probability for a random source).
    fn next_nonce(&self) -> Nonce;
}

/// Nonces from a cryptographically secure generator: a ChaCha20 stream per
/// thread, seeded from the operating system's RNG, reseeded after every
/// 1 MiB of output and in any child process after `fork()`, so that a child
/// can never repeat its parent's stream.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsNonceSource;

impl NonceSource for OsNonceSource {
    fn next_nonce(&self) -> Nonce {
        let mut bytes = [0u8; 16];
        fill_random(&mut bytes);
        Nonce::from_random_bytes(bytes)
    }
}

/// Fills `out` with cryptographically secure random bytes (see
/// [`OsNonceSource`] for the guarantees).
pub fn fill_random(out: &mut [u8]) {
    #[cfg(feature = "sim")]
    if crate::sim::fill(out) {
        return;
    }
    let epoch = fork_epoch();
    THREAD_RNG.with(|cell| {
        let mut slot = cell.borrow_mut();
        let fresh = match slot.as_ref() {
            Some(state) => state.epoch != epoch || state.produced >= RESEED_AFTER_BYTES,
            None => true,
        };
        if fresh {
            *slot = Some(ThreadRng::seeded(epoch));
        }
        let state = slot.as_mut().expect("seeded above");
        state.rng.fill_bytes(out);
        state.produced += out.len() as u64;
    });
}

const RESEED_AFTER_BYTES: u64 = 1 << 20;

struct ThreadRng {
    rng: ChaCha20Rng,
    epoch: u64,
    produced: u64,
}

impl ThreadRng {
    fn seeded(epoch: u64) -> ThreadRng {
        let mut seed = [0u8; 32];
        getrandom::getrandom(&mut seed).expect("the operating system's RNG is unavailable");
        let rng = ChaCha20Rng::from_seed(seed);
        zeroize::Zeroize::zeroize(&mut seed);
        ThreadRng {
            rng,
            epoch,
            produced: 0,
        }
    }
}

thread_local! {
    static THREAD_RNG: RefCell<Option<ThreadRng>> = const { RefCell::new(None) };
}

/// A word in a page the kernel wipes to zero in a forked child
/// (`MADV_WIPEONFORK`). While it holds the value this process set, no fork
/// happened since; a zero means this is a child that must reseed. Where the
/// page cannot be set up, every call reads a new epoch, so every call reseeds
/// from the OS (slow, but never repeats a stream).
struct ForkDetector {
    word: Option<&'static AtomicU64>,
}

static FORK_DETECTOR: OnceLock<ForkDetector> = OnceLock::new();
static FALLBACK_EPOCH: AtomicU64 = AtomicU64::new(1);

fn fork_epoch() -> u64 {
    let detector = FORK_DETECTOR.get_or_init(ForkDetector::new);
    let Some(word) = detector.word else {
        return FALLBACK_EPOCH.fetch_add(1, Ordering::Relaxed);
    };
    let current = word.load(Ordering::Acquire);
    if current != 0 {
        return current;
    }
    let fresh = ForkDetector::new_epoch();
    match word.compare_exchange(0, fresh, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => fresh,
        Err(set_by_another_thread) => set_by_another_thread,
    }
}

impl ForkDetector {
    fn new_epoch() -> u64 {
        let mut bytes = [0u8; 8];
        getrandom::getrandom(&mut bytes).expect("the operating system's RNG is unavailable");
        u64::from_ne_bytes(bytes) | 1
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn new() -> ForkDetector {
        // SAFETY: an anonymous private mapping of one page, checked for
        // failure; it is never unmapped, so the 'static reference stays valid.
        unsafe {
            let len = page_size();
            let page = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if page == libc::MAP_FAILED {
                return ForkDetector { word: None };
            }
            if libc::madvise(page, len, libc::MADV_WIPEONFORK) != 0 {
                libc::munmap(page, len);
                return ForkDetector { word: None };
            }
            let word = &*(page as *const AtomicU64);
            word.store(Self::new_epoch(), Ordering::Release);
            ForkDetector { word: Some(word) }
        }
    }

    /// Windows has no fork: a process's generators are never copied into
    /// another one, so the epoch is set once.
    #[cfg(windows)]
    fn new() -> ForkDetector {
        static WORD: AtomicU64 = AtomicU64::new(0);
        WORD.store(Self::new_epoch(), Ordering::Release);
        ForkDetector { word: Some(&WORD) }
    }

    #[cfg(not(any(target_os = "linux", target_os = "android", windows)))]
    fn new() -> ForkDetector {
        ForkDetector { word: None }
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size)
        .ok()
        .filter(|&s| s >= 8)
        .unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn nonces_are_valid_and_distinct() {
        let mut seen = HashSet::new();
        for _ in 0..10_000 {
            let n = OsNonceSource.next_nonce();
            fields::check_nonce(n.as_str()).unwrap();
            assert!(seen.insert(n));
        }
    }

    #[test]
    fn from_random_bytes_sets_version_and_variant() {
        let n = Nonce::from_random_bytes([0xff; 16]);
        assert_eq!(n.as_str(), "ffffffff-ffff-4fff-bfff-ffffffffffff");
        let n = Nonce::from_random_bytes([0; 16]);
        assert_eq!(n.as_str(), "00000000-0000-4000-8000-000000000000");
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn a_forked_child_does_not_repeat_the_parents_stream() {
        // Warm up this thread's generator so the child inherits its state.
        let _ = OsNonceSource.next_nonce();
        let mut fds = [0i32; 2];
        // SAFETY: plain pipe/fork/read/write/waitpid; the child only calls
        // async-signal-safe functions besides our generator, then _exits.
        unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                let mut bytes = [0u8; 16];
                fill_random(&mut bytes);
                libc::write(fds[1], bytes.as_ptr().cast(), 16);
                libc::_exit(0);
            }
            let mut parent = [0u8; 16];
            fill_random(&mut parent);
            let mut child = [0u8; 16];
            assert_eq!(libc::read(fds[0], child.as_mut_ptr().cast(), 16), 16);
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            libc::close(fds[0]);
            libc::close(fds[1]);
            assert_ne!(parent, child, "the child repeated the parent's stream");
        }
    }
}
