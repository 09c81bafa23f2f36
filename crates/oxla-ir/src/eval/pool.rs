//! A per-thread cache of large tensor buffers, so the evaluator reuses the memory of dead
//! values instead of asking the allocator for fresh pages on every op.
//!
//! Fresh large allocations come from the kernel as untouched pages: each first write
//! faults, and each free returns them. The interpreter gives the bytes of every value it
//! frees (when nothing else shares them) to this cache, and kernels take their output
//! buffers from it. The cache belongs to the thread (an execution runs on one worker
//! thread), so it needs no lock and carries over to the next execution on that thread.
//!
//! Cached memory stays resident, so the cache keeps only what is likely to be asked for
//! again: buffers of a length some kernel recently asked for (the last [`MAX_WANTED`]
//! lengths), at most [`MAX_PER_LENGTH`] of each length, at most [`MAX_BUFFERS`] buffers and
//! [`MAX_BYTES`] in all (the oldest go first). Buffers under [`MIN_BYTES`] are left to the
//! allocator.
//!
//! Results leave the evaluator and die elsewhere (a device buffer the host program drops
//! on its own thread). [`return_buffer`] takes such bytes into a small process-wide cache
//! ([`MAX_RETURNED`] buffers, [`MAX_RETURNED_BYTES`] in all) that a thread's own cache
//! falls back on, so the next execution's results reuse them too.

use std::cell::RefCell;
use std::sync::Mutex;

/// Smaller buffers are cheap to allocate and are not cached.
const MIN_BYTES: usize = 64 << 10;
/// The most bytes one thread's cache keeps.
const MAX_BYTES: usize = 256 << 20;
/// The most buffers one thread's cache keeps.
const MAX_BUFFERS: usize = 64;
/// The most buffers of one length the cache keeps.
const MAX_PER_LENGTH: usize = 8;
/// How many recently asked-for lengths the cache remembers.
const MAX_WANTED: usize = 64;
/// The most returned buffers the process-wide cache keeps.
const MAX_RETURNED: usize = 8;
/// The most bytes the process-wide cache keeps.
const MAX_RETURNED_BYTES: usize = 256 << 20;

/// Returned buffers (oldest first), and the lengths kernels on any thread recently asked
/// for (least recent first).
struct Returned {
    buffers: Vec<Vec<u8>>,
    wanted: Vec<usize>,
}

static RETURNED: Mutex<Returned> = Mutex::new(Returned {
    buffers: Vec::new(),
    wanted: Vec::new(),
});

fn returned() -> std::sync::MutexGuard<'static, Returned> {
    RETURNED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Keeps the bytes of a dead result for a later execution on any thread, when kernels
/// recently asked for buffers of its length (otherwise they are freed).
pub fn return_buffer(buffer: Vec<u8>) {
    let len = buffer.len();
    if !(MIN_BYTES..=MAX_BYTES).contains(&len) {
        return;
    }
    let mut guard = returned();
    if !guard.wanted.contains(&len) {
        return;
    }
    let cache = &mut guard.buffers;
    let mut bytes: usize = cache.iter().map(Vec::len).sum::<usize>() + len;
    while !cache.is_empty() && (cache.len() >= MAX_RETURNED || bytes > MAX_RETURNED_BYTES) {
        bytes -= cache.remove(0).len();
    }
    if bytes <= MAX_RETURNED_BYTES {
        cache.push(buffer);
    }
}

/// Makes `len` the most recently wanted length of `wanted` (least recent first), which
/// remembers at most [`MAX_WANTED`].
fn note_wanted(wanted: &mut Vec<usize>, len: usize) {
    wanted.retain(|&w| w != len);
    if wanted.len() >= MAX_WANTED {
        wanted.remove(0);
    }
    wanted.push(len);
}

/// A returned buffer of exactly `len` bytes, if any; notes `len` as wanted.
fn take_returned(len: usize) -> Option<Vec<u8>> {
    let mut guard = returned();
    note_wanted(&mut guard.wanted, len);
    let i = guard.buffers.iter().rposition(|b| b.len() == len)?;
    Some(guard.buffers.remove(i))
}

#[derive(Default)]
struct Cache {
    /// Oldest first.
    buffers: Vec<Vec<u8>>,
    bytes: usize,
    /// Lengths kernels asked for, least recent first.
    wanted: Vec<usize>,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// Keeps `buffer` for a later [`take_zeroed`] or [`take_for_overwrite`] of its length.
pub(crate) fn give(buffer: Vec<u8>) {
    let len = buffer.len();
    if !(MIN_BYTES..=MAX_BYTES).contains(&len) {
        return;
    }
    // A thread being torn down has no cache; the buffer is then simply freed.
    let _ = CACHE.try_with(|cache| {
        let mut cache = cache.borrow_mut();
        let same_length = cache.buffers.iter().filter(|b| b.len() == len).count();
        if !cache.wanted.contains(&len) || same_length >= MAX_PER_LENGTH {
            return;
        }
        while cache.buffers.len() >= MAX_BUFFERS || cache.bytes + len > MAX_BYTES {
            let oldest = cache.buffers.remove(0);
            cache.bytes -= oldest.len();
        }
        cache.bytes += len;
        cache.buffers.push(buffer);
    });
}

/// A cached buffer of exactly `len` bytes (the most recently given), if any.
fn take(len: usize) -> Option<Vec<u8>> {
    if len < MIN_BYTES {
        return None;
    }
    CACHE
        .try_with(|cache| {
            let mut cache = cache.borrow_mut();
            note_wanted(&mut cache.wanted, len);
            let i = cache.buffers.iter().rposition(|b| b.len() == len)?;
            let buffer = cache.buffers.remove(i);
            cache.bytes -= len;
            Some(buffer)
        })
        .ok()
        .flatten()
        .or_else(|| take_returned(len))
}

/// `len` zero bytes: a cached buffer cleared over the threads, or a fresh zeroed
/// allocation (which the allocator may take from the kernel already zero).
pub(crate) fn take_zeroed(len: usize) -> Vec<u8> {
    match take(len) {
        Some(mut buffer) => {
            super::shape::split_bytes(&mut buffer, 1, |_, piece| piece.fill(0));
            buffer
        }
        None => vec![0; len],
    }
}

/// `len` bytes of unspecified (but initialised) content, for a caller that overwrites
/// every byte.
pub(crate) fn take_for_overwrite(len: usize) -> Vec<u8> {
    take(len).unwrap_or_else(|| vec![0; len])
}

/// An empty buffer with room for `len` bytes (a cached one when there is one), for a
/// caller that appends exactly `len` bytes.
pub(crate) fn take_empty(len: usize) -> Vec<u8> {
    match take(len) {
        Some(mut buffer) => {
            buffer.clear();
            buffer
        }
        None => Vec::with_capacity(len),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_given_buffers_and_zeroes_on_request() {
        let len = MIN_BYTES + 8;
        // A length nobody asked for is not kept.
        give(vec![7u8; len]);
        CACHE.with(|cache| assert!(cache.borrow().buffers.is_empty()));
        let _first = take_for_overwrite(len);
        let mut buffer = vec![7u8; len];
        buffer[0] = 1;
        let ptr = buffer.as_ptr();
        give(buffer);
        // Another length does not take it.
        let other = take_for_overwrite(len + 1);
        assert_ne!(other.as_ptr(), ptr);
        let again = take_for_overwrite(len);
        assert_eq!(again.as_ptr(), ptr);
        assert_eq!(again[0], 1);
        give(again);
        let zeroed = take_zeroed(len);
        assert_eq!(zeroed.as_ptr(), ptr);
        assert!(zeroed.iter().all(|&b| b == 0));
        // Nothing left to reuse (`zeroed` is still alive, so a fresh buffer is elsewhere).
        let fresh = take_zeroed(len);
        assert_ne!(fresh.as_ptr(), ptr);
    }

    #[test]
    fn returned_buffers_serve_any_thread() {
        // A length no other test uses: the process-wide cache is shared between tests.
        let len = MIN_BYTES + 4096 + 3;
        // A length no kernel asked for is not kept.
        return_buffer(vec![5u8; len]);
        assert!(returned().buffers.iter().all(|b| b.len() != len));
        let _first = take_for_overwrite(len);
        let mut buffer = vec![5u8; len];
        buffer[1] = 9;
        let ptr = buffer.as_ptr() as usize;
        std::thread::spawn(move || return_buffer(buffer))
            .join()
            .unwrap();
        let taken = take_for_overwrite(len);
        assert_eq!(taken.as_ptr() as usize, ptr);
        assert_eq!(taken[1], 9);
        // Taken once: the next one is fresh.
        let fresh = take_for_overwrite(len);
        assert_ne!(fresh.as_ptr() as usize, ptr);
        // Small buffers are left to the allocator.
        return_buffer(vec![1u8; MIN_BYTES - 1]);
        assert!(take_returned(MIN_BYTES - 1).is_none());
    }

    #[test]
    fn stays_within_its_bounds() {
        let lengths: Vec<usize> = (0..MAX_WANTED + 1).map(|k| MIN_BYTES + k).collect();
        for &len in &lengths {
            take_for_overwrite(len);
        }
        for _ in 0..MAX_PER_LENGTH + 2 {
            give(vec![0u8; MIN_BYTES + 1]);
        }
        CACHE.with(|cache| assert_eq!(cache.borrow().buffers.len(), MAX_PER_LENGTH));
        // The first length asked for has been forgotten.
        give(vec![0u8; MIN_BYTES]);
        CACHE.with(|cache| assert_eq!(cache.borrow().buffers.len(), MAX_PER_LENGTH));
        for &len in &lengths[2..] {
            give(vec![0u8; len]);
        }
        give(vec![0u8; MIN_BYTES - 1]);
        CACHE.with(|cache| {
            let cache = cache.borrow();
            assert_eq!(cache.buffers.len(), MAX_BUFFERS);
            assert_eq!(
                cache.bytes,
                cache.buffers.iter().map(Vec::len).sum::<usize>()
            );
        });
        take_zeroed(MAX_BYTES);
        give(vec![0u8; MAX_BYTES]);
        CACHE.with(|cache| {
            let cache = cache.borrow();
            assert_eq!(cache.buffers.len(), 1);
            assert_eq!(cache.bytes, MAX_BYTES);
        });
    }
}
