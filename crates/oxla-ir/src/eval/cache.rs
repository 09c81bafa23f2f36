//! What the evaluator derives from a module before running it — block plans, compiled
//! loops, the values of small constants — kept across calls, so that a call after the first
//! does no planning and builds no constant it built before.
//!
//! Entries are keyed by the address of a block or `while` op. They stay valid because a
//! [`PlanCache`] serves one module, kept beside it by its owner (a call with another module
//! empties it first), and never drops an entry: blocks the plans themselves own (a row
//! group's slab functions) live as long as the cache.

use super::conv;
use super::plan::{plan_block, BlockPlan};
use super::small_loop::{self, LoopProgram};
use super::AddrMap;
use crate::{Block, Function, IrError, Literal, Module, Op, TensorType};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Plans and compiled loops of one module, shared by every call that runs it and by the
/// threads of one call.
#[derive(Default)]
pub struct PlanCache {
    /// Which module the entries belong to (0 while empty): the address of its function
    /// list, which stays put when the module value moves.
    module: AtomicUsize,
    plans: Mutex<AddrMap<Arc<BlockPlan>>>,
    loops: Mutex<AddrMap<Option<Arc<LoopProgram>>>>,
    /// Convolution plans, with the operand types they were made for.
    convs: Mutex<AddrMap<ConvEntry>>,
    /// Values of `constant` ops of at most [`CACHED_CONSTANT_BYTES`], by op address.
    constants: Mutex<AddrMap<Literal>>,
}

/// The largest constant whose value the cache keeps between calls. Larger ones are built
/// once per call (and shared within it): keeping them would hold a second copy of the
/// module's bytes for as long as the program is loaded.
pub(crate) const CACHED_CONSTANT_BYTES: usize = 1 << 16;

/// A convolution plan and the operand types it serves.
type ConvEntry = Arc<(TensorType, TensorType, conv::Plan)>;

impl std::fmt::Debug for PlanCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanCache")
            .field("plans", &lock(&self.plans).len())
            .field("loops", &lock(&self.loops).len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl PlanCache {
    /// An empty cache.
    pub fn new() -> PlanCache {
        PlanCache::default()
    }

    /// Whether the entries may be used for `module`: binds an empty cache to it; a cache
    /// bound to another module is emptied and bound again.
    pub(crate) fn bind(&self, module: &Module) {
        let addr = module.functions.as_ptr() as usize;
        if self.module.load(Ordering::Acquire) == addr {
            return;
        }
        let mut plans = lock(&self.plans);
        let mut loops = lock(&self.loops);
        let mut convs = lock(&self.convs);
        let mut constants = lock(&self.constants);
        if self.module.load(Ordering::Acquire) != addr {
            plans.clear();
            loops.clear();
            convs.clear();
            constants.clear();
            self.module.store(addr, Ordering::Release);
        }
    }

    /// Plans the body of function `name` of `module` ahead of its first call (the blocks of
    /// nested regions are planned when first run).
    pub fn prepare(&self, module: &Module, name: &str, options: super::EvalOptions) {
        self.bind(module);
        if let Some((func, block)) = super::entry_block(module, name) {
            self.block_plan(func, block, options.fuse, true);
        }
    }

    /// The plan of `block` of `func` for these flags, built on first use.
    pub(crate) fn block_plan(
        &self,
        func: &Function,
        block: &Block,
        fuse: bool,
        rows: bool,
    ) -> Arc<BlockPlan> {
        // Blocks are at least 8-byte aligned: the flags fit in the low bits of the key.
        let key = block as *const Block as usize | usize::from(fuse) | usize::from(rows) << 1;
        if let Some(plan) = lock(&self.plans).get(&key) {
            return plan.clone();
        }
        // Planned outside the lock: two threads may both plan a block; the first insert wins.
        let plan = Arc::new(plan_block(func, block, fuse, rows));
        lock(&self.plans).entry(key).or_insert(plan).clone()
    }

    /// The value of the `constant` op `op` if a call has built it before.
    pub(crate) fn constant(&self, op: &Op) -> Option<Literal> {
        lock(&self.constants)
            .get(&(op as *const Op as usize))
            .cloned()
    }

    /// Keeps `value`, the value of the `constant` op `op`, for later calls when it is small.
    pub(crate) fn keep_constant(&self, op: &Op, value: &Literal) {
        if value.data.len() <= CACHED_CONSTANT_BYTES {
            lock(&self.constants).insert(op as *const Op as usize, value.clone());
        }
    }

    /// The compiled form of the `while` op `op` of `func`, when it has one.
    pub(crate) fn loop_program(
        &self,
        module: &Module,
        func: &Function,
        op: &Op,
    ) -> Option<Arc<LoopProgram>> {
        let key = op as *const Op as usize;
        if let Some(program) = lock(&self.loops).get(&key) {
            return program.clone();
        }
        let program = small_loop::compile(module, func, op).map(Arc::new);
        lock(&self.loops).entry(key).or_insert(program).clone()
    }

    /// The plan of convolution `op` for operands of types `lhs` and `rhs`, made by `build`
    /// the first time (and again if the types change).
    pub(crate) fn conv_plan(
        &self,
        op: &Op,
        lhs: &TensorType,
        rhs: &TensorType,
        build: impl FnOnce() -> Result<conv::Plan, IrError>,
    ) -> Result<ConvEntry, IrError> {
        let key = op as *const Op as usize;
        if let Some(entry) = lock(&self.convs).get(&key) {
            if entry.0 == *lhs && entry.1 == *rhs {
                return Ok(entry.clone());
            }
        }
        let entry = Arc::new((lhs.clone(), rhs.clone(), build()?));
        lock(&self.convs).insert(key, entry.clone());
        Ok(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::testing::{f32s, FuncBuilder};
    use crate::eval::{run_function_cached, EvalOptions, SingleDevice};

    #[test]
    fn small_constants_are_built_once_and_large_ones_each_call() {
        let small = f32s(&[4], &[1.0, -2.0, 3.5, 0.25]);
        let large_len = CACHED_CONSTANT_BYTES / 4 + 1;
        let large_values: Vec<f32> = (0..large_len).map(|i| i as f32).collect();
        let large = f32s(&[large_len as i64], &large_values);
        let (mut b, _) = FuncBuilder::new(&[]);
        let s = b.constant(&small);
        let l = b.constant(&large);
        let module = b.finish(&[s, l]);
        let cache = PlanCache::new();
        let run = || {
            run_function_cached(
                &module,
                "main",
                &[],
                &SingleDevice,
                EvalOptions::default(),
                &cache,
            )
            .expect("runs")
        };
        let first = run();
        let second = run();
        for results in [&first, &second] {
            assert_eq!(results[0].data, small.data);
            assert_eq!(results[1].data, large.data);
        }
        assert!(Arc::ptr_eq(&first[0].data, &second[0].data), "kept");
        assert!(!Arc::ptr_eq(&first[1].data, &second[1].data), "built again");
    }
}
