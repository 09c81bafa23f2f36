//! The evaluator's thread pool: the rayon pool that large kernels split their work over.
//!
//! It is oxla's own pool, not rayon's global one, because its threads flush denormals for
//! their whole life ([`oxla_simd::FlushDenormals`], as XLA's CPU backend computes), which a
//! host program's own rayon work must not inherit. The thread that runs an execution flushes
//! for the execution's length (see [`super::run_function_cached`]). When the pool cannot
//! be started, rayon's global pool serves instead, with the guard set in each task.

use std::sync::OnceLock;

fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("oxla-eval-{i}"))
            .start_handler(|_| std::mem::forget(oxla_simd::FlushDenormals::new()))
            .build()
            .ok()
    })
    .as_ref()
}

/// How many threads large kernels split their work over.
pub(crate) fn count() -> usize {
    pool().map_or_else(
        rayon::current_num_threads,
        rayon::ThreadPool::current_num_threads,
    )
}

/// Runs `job` on every item and returns when all are done: the first item on the calling
/// thread, the others on the pool's threads. The caller works instead of sleeping while the
/// pool does the rest, so a split in two wakes one pool thread, not two.
pub(crate) fn for_each<T: Send>(items: impl IntoIterator<Item = T>, job: impl Fn(T) + Sync) {
    let mut items = items.into_iter().peekable();
    let Some(first) = items.next() else {
        return;
    };
    // One item (a small value's one part) runs here without opening a scope, which costs
    // more than a tiny job.
    if items.peek().is_none() {
        job(first);
        return;
    }
    match pool() {
        Some(pool) => pool.in_place_scope(|s| spawn_rest_run_first(s, items, first, &job)),
        None => rayon::in_place_scope(|s| spawn_rest_run_first(s, items, first, &job)),
    }
}

fn spawn_rest_run_first<'s, T: Send + 's, J: Fn(T) + Sync>(
    s: &rayon::Scope<'s>,
    rest: impl Iterator<Item = T>,
    first: T,
    job: &'s J,
) {
    for item in rest {
        s.spawn(move |_| {
            // Already set on the pool's threads; needed on the global pool's.
            let _flush = oxla_simd::FlushDenormals::new();
            job(item)
        });
    }
    job(first);
}

/// Runs `job(i, chunk)` on each `chunk_len`-element chunk of `dst` (the last one shorter)
/// as [`for_each`] does, and says whether every call returned true. The chunks themselves
/// make the calls: no count worked out beside them can leave a chunk without its result.
pub(crate) fn all_chunks<T: Send>(
    dst: &mut [T],
    chunk_len: usize,
    job: impl Fn(usize, &mut [T]) -> bool + Sync,
) -> bool {
    let chunks = dst.chunks_mut(chunk_len.max(1));
    let mut ok = vec![false; chunks.len()];
    for_each(chunks.enumerate().zip(ok.iter_mut()), |((i, chunk), ok)| {
        *ok = job(i, chunk)
    });
    ok.iter().all(|&ok| ok)
}

/// Runs `f` on the pool (which `gemm`'s own threading then uses), for work large enough to
/// be worth the hand-over.
pub(crate) fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    match pool() {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// `job(from part, out part)` over matching parts of `from` and `out`, split over the
/// threads into parts of at least `min_part` elements (one part, on the calling thread, when
/// the slices are shorter than two of them).
pub(crate) fn map_split<A: Sync, B: Send>(
    from: &[A],
    out: &mut [B],
    min_part: usize,
    job: impl Fn(&[A], &mut [B]) + Sync,
) {
    let per = from.len().div_ceil(count()).max(min_part).max(1);
    if per >= from.len() {
        job(from, out);
        return;
    }
    for_each(from.chunks(per).zip(out.chunks_mut(per)), |(x, o)| {
        job(x, o)
    });
}
