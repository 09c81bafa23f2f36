//! A per-thread cache of large tensor buffers, so the evaluator reuses the memory of dead
//! values instead of asking the allocator for fresh pages on every op.
//!
//! Fresh large allocations come from the kernel as untouched pages: each first write
//! faults, and each free returns them. The interpreter gives the bytes of every value it
//! frees (when nothing else shares them) to this cache, and kernels take their output
//! buffers from it. The cache belongs to the thread (an execution runs on one worker
//! thread), so it needs no lock and carries over to the next execution on that thread.
//! It holds at most [`MAX_BUFFERS`] buffers and [`MAX_BYTES`] in all, dropping the oldest
//! beyond that; buffers under [`MIN_BYTES`] are left to the allocator.

use std::cell::RefCell;

/// Smaller buffers are cheap to allocate and are not cached.
const MIN_BYTES: usize = 64 << 10;
/// The most bytes one thread's cache keeps.
const MAX_BYTES: usize = 256 << 20;
/// The most buffers one thread's cache keeps.
const MAX_BUFFERS: usize = 32;

#[derive(Default)]
struct Cache {
    /// Oldest first.
    buffers: Vec<Vec<u8>>,
    bytes: usize,
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
            let i = cache.buffers.iter().rposition(|b| b.len() == len)?;
            let buffer = cache.buffers.remove(i);
            cache.bytes -= len;
            Some(buffer)
        })
        .ok()
        .flatten()
}

/// `len` zero bytes.
pub(crate) fn take_zeroed(len: usize) -> Vec<u8> {
    match take(len) {
        Some(mut buffer) => {
            buffer.fill(0);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_given_buffers_and_zeroes_on_request() {
        let len = MIN_BYTES + 8;
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
    fn stays_within_its_bounds() {
        for _ in 0..MAX_BUFFERS + 5 {
            give(vec![0u8; MIN_BYTES]);
        }
        give(vec![0u8; MIN_BYTES - 1]);
        CACHE.with(|cache| {
            let cache = cache.borrow();
            assert_eq!(cache.buffers.len(), MAX_BUFFERS);
            assert_eq!(cache.bytes, MAX_BUFFERS * MIN_BYTES);
        });
        give(vec![0u8; MAX_BYTES]);
        CACHE.with(|cache| {
            let cache = cache.borrow();
            assert_eq!(cache.buffers.len(), 1);
            assert_eq!(cache.bytes, MAX_BYTES);
        });
    }
}
