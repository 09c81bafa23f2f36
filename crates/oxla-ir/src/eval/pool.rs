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

use std::cell::RefCell;

/// Smaller buffers are cheap to allocate and are not cached.
const MIN_BYTES: usize = 64 << 10;
/// The most bytes one thread's cache keeps.
const MAX_BYTES: usize = 256 << 20;
/// The most buffers one thread's cache keeps.
const MAX_BUFFERS: usize = 32;
/// The most buffers of one length the cache keeps.
const MAX_PER_LENGTH: usize = 4;
/// How many recently asked-for lengths the cache remembers.
const MAX_WANTED: usize = 64;

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
            cache.wanted.retain(|&w| w != len);
            if cache.wanted.len() >= MAX_WANTED {
                cache.wanted.remove(0);
            }
            cache.wanted.push(len);
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
