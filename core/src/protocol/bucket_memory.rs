//! The replay cache's table memory: zeroed, 64-byte aligned buckets (2 MiB
//! aligned and advised for transparent huge pages when large). The only
//! `unsafe` code of the cache lives here.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

/// Slots per bucket: three nonces and their expiries fill one 64-byte line.
pub(super) const SLOTS: usize = 3;

/// One cache line of a table. An expiry of 0 marks an empty slot; slots
/// fill from the front and are only emptied by a rebuild, so an empty slot
/// ends every probe sequence that reaches it. Expiries are seconds after the
/// table's base (see `nonce_cache::Table`).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(super) struct Bucket {
    pub(super) nonces: [[u8; 16]; SLOTS],
    pub(super) expiries: [u32; SLOTS],
}

const _: () = assert!(std::mem::size_of::<Bucket>() == 64);

/// Zeroed bucket memory (an all-zero bucket has three empty slots). A table of 2 MiB
/// or more is aligned to 2 MiB and advised for transparent huge pages before
/// it is first touched, so a lookup in a large cache rarely misses the TLB.
pub(super) struct BucketMemory {
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

    pub(super) fn zeroed(len: usize) -> BucketMemory {
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
