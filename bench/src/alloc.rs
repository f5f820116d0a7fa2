//! A counting global allocator: live heap bytes, exactly, for the memory
//! benchmarks (B3's caches, B2's per-plugin heap). The bench binary and the
//! quick test install it with `#[global_allocator]`; without it,
//! [`live_bytes`] reports `None`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

static LIVE: AtomicIsize = AtomicIsize::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The system allocator, counting the bytes it has handed out and not yet
/// taken back. Costs one relaxed atomic add per allocation, in Herald and
/// in the baselines alike.
#[derive(Debug, Default, Clone, Copy)]
pub struct CountingAllocator;

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged and only adds bookkeeping on a static counter, so the
// `GlobalAlloc` contract holds exactly as it does for `System`.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged (see the impl's note).
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged (see the impl's note).
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged (see the impl's note).
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged (see the impl's note).
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        new
    }
}

fn count(delta: isize) {
    LIVE.fetch_add(delta, Ordering::Relaxed);
    if !INSTALLED.load(Ordering::Relaxed) {
        INSTALLED.store(true, Ordering::Relaxed);
    }
}

/// Heap bytes allocated and not freed, if [`CountingAllocator`] is the
/// global allocator.
pub fn live_bytes() -> Option<isize> {
    INSTALLED
        .load(Ordering::Relaxed)
        .then(|| LIVE.load(Ordering::Relaxed))
}

/// Heap bytes `build`'s result holds: live bytes after building it, less
/// before (anything `build` freed again is not counted). `None` without the
/// counting allocator.
pub fn retained_by<T>(build: impl FnOnce() -> T) -> (T, Option<isize>) {
    let before = live_bytes();
    let value = build();
    let after = live_bytes();
    let retained = before.zip(after).map(|(b, a)| a - b);
    (value, retained)
}
