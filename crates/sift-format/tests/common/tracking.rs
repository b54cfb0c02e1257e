//! A global allocator that records the largest single allocation per thread, shared by
//! the hostile-file tests of sift-format (`robustness.rs`) and sift-scan (`hostile.rs`,
//! which includes this file by path): they catch allocations sized by hostile metadata
//! rather than by the file. Each test sets its own limit; a test may also have requests
//! above a limit refused outright.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Forwards to the system allocator, noting each request's size.
struct Tracking;

thread_local! {
    // Const-initialized Cells without destructor: accessing them never allocates.
    static LARGEST_ALLOC: Cell<usize> = const { Cell::new(0) };
    static REFUSE_ABOVE: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Notes a request; false if it is above this thread's refusal limit.
fn note(size: usize) -> bool {
    let _ = LARGEST_ALLOC.try_with(|m| m.set(m.get().max(size)));
    REFUSE_ABOVE.try_with(|l| size <= l.get()).unwrap_or(true)
}

// SAFETY: forwards to the system allocator unchanged; only records sizes.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !note(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !note(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !note(new_size) {
            return std::ptr::null_mut();
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

/// Runs `f`, returning its result and the largest allocation it made on this thread.
pub fn tracked<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST_ALLOC.with(|m| m.set(0));
    let out = f();
    (out, LARGEST_ALLOC.with(|m| m.get()))
}

/// [`tracked`], with every allocation above `limit` bytes on this thread refused (the
/// allocator returns null, which aborts the process): for cases that would otherwise
/// really allocate gigabytes when the code under test is wrong.
pub fn tracked_refusing_above<T>(limit: usize, f: impl FnOnce() -> T) -> (T, usize) {
    REFUSE_ABOVE.with(|l| l.set(limit));
    let out = tracked(f);
    REFUSE_ABOVE.with(|l| l.set(usize::MAX));
    out
}
