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

/// Runs `f` with a rayon scope of the pool; tasks spawned with [`spawn`] run on its threads.
pub(crate) fn scope<'s, R: Send>(f: impl FnOnce(&rayon::Scope<'s>) -> R + Send) -> R {
    match pool() {
        Some(pool) => pool.scope(f),
        None => rayon::scope(f),
    }
}

/// Spawns `job` on `scope`, with denormals flushed.
pub(crate) fn spawn<'s>(scope: &rayon::Scope<'s>, job: impl FnOnce() + Send + 's) {
    scope.spawn(move |_| {
        // Already set on the pool's threads; needed on the global pool's.
        let _flush = oxla_simd::FlushDenormals::new();
        job()
    });
}

/// Runs `f` on the pool (which `gemm`'s own threading then uses), for work large enough to
/// be worth the hand-over.
pub(crate) fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    match pool() {
        Some(pool) => pool.install(f),
        None => f(),
    }
}
