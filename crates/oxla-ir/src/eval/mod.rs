//! The reference evaluator: executes a [`Module`] op by op on [`Literal`]s.
//!
//! It is the living definition of each op's semantics: simple on purpose, but written on
//! typed slices so small real programs (an MLP training step) run at a usable speed.
//! Semantics follow the StableHLO spec, and XLA CPU where the spec leaves room (integer
//! division by zero, shifts past the bit width, float-to-int saturation, NaN in min/max).
//!
//! This file holds the interpreter loop: values live in a table indexed by [`ValueId`],
//! each block frees a value after its last use, regions share their function's table,
//! and nesting (regions, calls) is bounded by [`MAX_NESTING`]. Each op kind dispatches to
//! one function in a sibling module.

mod context;
mod control;
mod convert;
mod dot;
mod element;
mod elementwise;
pub(crate) use elementwise::add_bytes;
mod fastmath;
mod floatfmt;
mod fused;
mod gemm;
mod host;
mod lane_group;
mod reduce;
mod shape;
mod slab_program;
mod special;
// Ops with regions or heavier numerics: sort, gather/scatter, windows, conv, rng, linalg, fft.
mod body;
mod cache;
mod collective;
mod complex;
mod conv;
mod dense;
mod fft;
mod gather_scatter;
mod lapack;
mod linalg;
#[cfg(test)]
mod movement_tests;
mod plan;
mod pool;
pub use pool::return_buffer;
mod rng;
mod rows;
mod small_loop;
mod sort;
mod sort_keys;
#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;
mod threads;
pub mod tile_code;
mod topk;
mod tridiagonal;
mod trip_count;
mod typed;
mod window;

use crate::{Block, Function, IrError, Literal, Module, Op, OpKind, Region, Type, ValueId};
pub use cache::PlanCache;
pub use collective::{
    is_collective, is_manual_computation, reaches_manual_computation, sharding_call_target,
    Collectives, Exchange, ProcessId, SingleDevice, PER_DEVICE_REGION,
};
use context::OpCx;
pub use host::{register_host_call, unregister_host_call, HostCall, HostCallHandler};
pub use lapack::{
    lend_lapack, lent_lapack, ComplexGees, ComplexGeev, LapackElement, LapackReal, LentLapack,
    RealGees, RealGeev, Svd, Syevd,
};
use plan::{BlockPlan, Step};
use smallvec::SmallVec;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// How deeply regions and calls may nest during evaluation.
pub const MAX_NESTING: usize = 64;

/// A value inside the interpreter: tensors, plus the tokens and tuples some programs carry.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Tensor(Literal),
    Token,
    Tuple(Vec<Value>),
}

/// Runs function `name` of `module` on `args` and returns its results.
pub fn run_function(
    module: &Module,
    name: &str,
    args: &[Literal],
) -> Result<Vec<Literal>, IrError> {
    run_function_with(module, name, args, &SingleDevice)
}

/// How the evaluator runs a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvalOptions {
    /// Run groups of elementwise f32 ops as fused tile loops (bit-identical to running them
    /// one by one, and faster).
    pub fuse: bool,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions { fuse: true }
    }
}

/// Runs `f` on a thread of the evaluator's pool (the calling thread sleeps until it is
/// done); the kernels `f` runs then split their work over the pool from inside it, without
/// handing each split over from an outside thread. From inside the pool, `f` runs at once.
pub fn on_eval_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    threads::install(f)
}

/// Like [`run_function`], as process [`Collectives::process`] of a launch over several
/// devices: collective ops communicate through `collectives`.
pub fn run_function_with(
    module: &Module,
    name: &str,
    args: &[Literal],
    collectives: &dyn Collectives,
) -> Result<Vec<Literal>, IrError> {
    run_function_with_options(module, name, args, collectives, EvalOptions::default())
}

/// Like [`run_function_with`], with `options`.
pub fn run_function_with_options(
    module: &Module,
    name: &str,
    args: &[Literal],
    collectives: &dyn Collectives,
    options: EvalOptions,
) -> Result<Vec<Literal>, IrError> {
    run_function_cached(module, name, args, collectives, options, &PlanCache::new())
}

/// Like [`run_function_with_options`], keeping block plans and compiled loops in `cache`
/// for later calls. A cache serves one module: given another, it starts over.
pub fn run_function_cached(
    module: &Module,
    name: &str,
    args: &[Literal],
    collectives: &dyn Collectives,
    options: EvalOptions,
    cache: &PlanCache,
) -> Result<Vec<Literal>, IrError> {
    run_function_owned(module, name, args.to_vec(), collectives, options, cache)
}

/// [`run_function_cached`] on arguments handed over: an argument whose bytes nothing else
/// shares (a donated buffer) may be overwritten by the ops that use it last, as the
/// evaluator reuses its own values (a scatter or `dynamic_update_slice` into a donated
/// array then writes in place instead of copying it first).
pub fn run_function_owned(
    module: &Module,
    name: &str,
    args: Vec<Literal>,
    collectives: &dyn Collectives,
    options: EvalOptions,
    cache: &PlanCache,
) -> Result<Vec<Literal>, IrError> {
    // Float arithmetic flushes denormals, as on XLA's CPU backend.
    let _flush = oxla_simd::FlushDenormals::new();
    let func = module.function(name).ok_or_else(|| IrError::Eval {
        detail: format!("no function named `{name}` in the module"),
    })?;
    if args.len() != func.ty.inputs.len() {
        return Err(IrError::Eval {
            detail: format!(
                "function `{name}` takes {} arguments, got {}",
                func.ty.inputs.len(),
                args.len()
            ),
        });
    }
    for (i, (arg, ty)) in args.iter().zip(&func.ty.inputs).enumerate() {
        let ok = match ty {
            // A token crosses the function boundary as an empty `i1` tensor, as runtime
            // tokens do in PJRT.
            Type::Token => arg.ty == token_literal().ty,
            Type::Tensor(t) => {
                t.element_type == arg.ty.element_type
                    && t.rank() == arg.ty.rank()
                    && t.shape
                        .iter()
                        .zip(&arg.ty.shape)
                        .all(|(&want, &have)| want == crate::DYNAMIC || want == have)
            }
            _ => false,
        };
        if !ok {
            return Err(IrError::Eval {
                detail: format!("argument {i} of `{name}` must be {ty}, got {}", arg.ty),
            });
        }
        if Some(arg.data.len()) != arg.ty.byte_size() {
            return Err(IrError::Eval {
                detail: format!(
                    "argument {i} of `{name}` holds {} bytes, but {} needs {:?}",
                    arg.data.len(),
                    arg.ty,
                    arg.ty.byte_size()
                ),
            });
        }
    }
    let mut interp = Interp::new(module, cache, collectives, options);
    let values = args
        .into_iter()
        .zip(&func.ty.inputs)
        .map(|(arg, ty)| match ty {
            Type::Token => Value::Token,
            _ => Value::Tensor(arg),
        })
        .collect();
    let results = interp.call(func, values)?;
    results
        .into_iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::Tensor(lit) => Ok(lit),
            Value::Token => Ok(token_literal()),
            _ => Err(IrError::Eval {
                detail: format!("result {i} of `{name}` is not a tensor"),
            }),
        })
        .collect()
}

/// Function `name` of `module` and its entry block.
fn entry_block<'m>(module: &'m Module, name: &str) -> Option<(&'m Function, &'m Block)> {
    let func = module.function(name)?;
    Some((func, func.body.blocks.first()?))
}

/// `f` of each fused group the evaluator forms in the body of function `name` (its entry
/// block); empty when the function has no such group.
fn per_fused_group<T>(module: &Module, name: &str, f: impl Fn(&fused::FusedKernel) -> T) -> Vec<T> {
    let Some((func, block)) = entry_block(module, name) else {
        return Vec::new();
    };
    fused::find_groups(func, block, true, &[])
        .kernels
        .iter()
        .map(|(kernel, _)| f(kernel))
        .collect()
}

/// The fused groups the evaluator forms in the body of function `name` (its entry block),
/// each as the number of ops it covers; empty when the function has no such group.
pub fn fused_groups(module: &Module, name: &str) -> Vec<usize> {
    per_fused_group(module, name, fused::FusedKernel::num_ops)
}

/// For each fused group of function `name` (as [`fused_groups`] lists them), whether it
/// has a generated-code form on this machine ([`tile_code`]).
pub fn generated_groups(module: &Module, name: &str) -> Vec<bool> {
    per_fused_group(module, name, fused::FusedKernel::has_generated_code)
}

/// `f` of each row group the evaluator forms in the body of function `name` (its entry
/// block), in block order.
fn per_row_group<T>(module: &Module, name: &str, f: impl Fn(&rows::RowKernel) -> T) -> Vec<T> {
    let Some((func, block)) = entry_block(module, name) else {
        return Vec::new();
    };
    rows::find_row_groups(func, block)
        .kernels
        .iter()
        .map(|(kernel, _)| f(kernel))
        .collect()
}

/// The row groups ([`EvalOptions::fuse`] runs them slab by slab) the evaluator forms in the
/// body of function `name`, each as the number of ops it covers.
pub fn row_groups(module: &Module, name: &str) -> Vec<usize> {
    per_row_group(module, name, rows::RowKernel::num_ops)
}

/// For each row group of function `name` (as [`row_groups`] lists them), whether its slabs
/// run as compiled programs (`slab_program.rs`) rather than through the interpreter.
pub fn row_group_programs(module: &Module, name: &str) -> Vec<bool> {
    per_row_group(module, name, rows::RowKernel::compiled)
}

/// For each row group of function `name` (as [`row_groups`] lists them), how many of its
/// reductions run inside the generated code of the fused group computing their operand
/// (in a full slab's program).
pub fn row_group_merged_sums(module: &Module, name: &str) -> Vec<usize> {
    per_row_group(module, name, rows::RowKernel::merged_row_sums)
}

/// For each `while` in the body of function `name` (its entry block), whether it compiles to
/// a register program ([`EvalOptions::fuse`] runs it so).
pub fn compiled_loops(module: &Module, name: &str) -> Vec<bool> {
    loop_programs(module, name)
        .into_iter()
        .map(|p| p.is_some())
        .collect()
}

/// For each `while` in the body of function `name` (its entry block), whether its register
/// program runs as generated code (a counted loop whose body is one register run of ops
/// with a generated form, on a machine that runs generated code; or a loop of scalar work
/// on x86-64).
pub fn generated_loops(module: &Module, name: &str) -> Vec<bool> {
    loop_programs(module, name)
        .into_iter()
        .map(|p| p.is_some_and(|p| p.has_generated_code()))
        .collect()
}

/// For each `while` in the body of function `name`, how many runs of f32 instructions its
/// register program evaluates chunk by chunk in registers (0 for a loop that does not compile).
pub fn loop_register_runs(module: &Module, name: &str) -> Vec<usize> {
    loop_programs(module, name)
        .into_iter()
        .map(|p| p.map_or(0, |p| p.register_runs()))
        .collect()
}

/// For each `while` in the body of function `name`, its register program, if it compiles.
fn loop_programs(module: &Module, name: &str) -> Vec<Option<small_loop::LoopProgram>> {
    let Some(func) = module.function(name) else {
        return Vec::new();
    };
    func.body
        .blocks
        .iter()
        .flat_map(|b| &b.ops)
        .filter(|op| op.kind == OpKind::While)
        .map(|op| small_loop::compile(module, func, op))
        .collect()
}

/// The work of one run of `op` (a `while` of `func`) when it compiles to a register
/// program and its trip count is known before it runs: instructions executed, each
/// counted once per 16 elements it covers. `None` for any other loop.
pub fn counted_loop_work(module: &Module, func: &Function, op: &Op) -> Option<u64> {
    let trips = trip_count::counted_loop(func, op)?.trips;
    let program = small_loop::compile(module, func, op)?;
    Some(trips.saturating_mul(program.work_per_iteration()))
}

/// Whether `op` is a `scatter` whose update body replaces or combines by one binary op:
/// its cost is a copy of the inputs plus one step per update element, like elementwise work,
/// where any other body runs the interpreter per element.
pub fn is_cheap_scatter(op: &Op) -> bool {
    let n = op.results.len();
    op.kind == OpKind::Scatter
        && op.regions.first().is_some_and(|region| {
            !matches!(
                body::classify(region, n).kind,
                body::BodyKind::General { .. }
            )
        })
}

/// Whether `op` is `jax.lax.dce_sink`'s custom call, which has no results and no effect.
fn is_dce_sink(op: &Op) -> bool {
    call_target(op) == Some("dce_sink") && op.results.is_empty()
}

/// Whether `op` is the `LayoutConstraint` custom call a `with_sharding_constraint` to a
/// `Format` with a concrete layout lowers to: it asks for the value's physical layout, which
/// oxla's row-major buffers do not vary, so it passes its operand on.
fn is_layout_constraint(op: &Op) -> bool {
    call_target(op) == Some("LayoutConstraint") && op.operands.len() == 1 && op.results.len() == 1
}

/// Whether `op` is the `InspectSharding` custom call `jax.debug.inspect_array_sharding` leaves
/// in a partitioned program. Its callback belongs to compiling: the plugin calls it with the
/// operand's sharding (`sharding::inspected_shardings`); run, the call passes its operand on.
pub fn is_inspect_sharding(op: &Op) -> bool {
    call_target(op) == Some("InspectSharding") && op.operands.len() == 1 && op.results.len() == 1
}

/// Whether `op` is a custom call to a target registered with [`register_host_call`].
pub fn is_host_call(op: &Op) -> bool {
    op.kind == OpKind::CustomCall
        && call_target(op).is_some_and(|t| host::host_call_handler(t).is_some())
}

/// True for every op the evaluator implements: [`is_supported`] for its kind, and for
/// `stablehlo.custom_call` only the targets the evaluator knows (the LAPACK routines and
/// tridiagonal solvers JAX's cpu lowering rules call, the sharding custom calls, `dce_sink`,
/// `LayoutConstraint`, `InspectSharding`, and targets registered with [`register_host_call`]).
pub fn is_supported_op(op: &Op) -> bool {
    match op.kind {
        OpKind::CustomCall => {
            lapack::supports(op)
                || tridiagonal::supports(op)
                || is_dce_sink(op)
                || is_layout_constraint(op)
                || is_inspect_sharding(op)
                || sharding_call_target(op).is_some()
                || is_host_call(op)
        }
        ref kind => is_supported(kind),
    }
}

/// True for every op kind the evaluator implements.
pub fn is_supported(kind: &OpKind) -> bool {
    use OpKind as K;
    elementwise::is_unary(kind)
        || elementwise::is_binary(kind)
        || matches!(
            kind,
            K::Call
                | K::Composite
                | K::FuncReturn
                | K::Return
                | K::Compare
                | K::Select
                | K::Clamp
                | K::Convert
                | K::BitcastConvert
                | K::ReducePrecision
                | K::Constant
                | K::Iota
                | K::BroadcastInDim
                | K::Broadcast
                | K::Reshape
                | K::Transpose
                | K::Slice
                | K::DynamicSlice
                | K::DynamicUpdateSlice
                | K::Concatenate
                | K::Pad
                | K::Reverse
                | K::GetTupleElement
                | K::Tuple
                | K::OptimizationBarrier
                | K::UnrealizedConversionCast
                | K::SdyShardingConstraint
                | K::SdyShardingGroup
                | K::CreateToken
                | K::AfterAll
                | K::Reduce
                | K::DotGeneral
                | K::Dot
                | K::While
                | K::If
                | K::Case
        )
        || body::handles(kind)
        || collective::handles(kind)
        || collective::is_region_return(kind)
}

/// A map keyed by the address of a block or op of the module being run. Looked up for
/// every block and constant a loop iteration runs, so it hashes with one multiplication
/// instead of SipHash (the keys are addresses, not chosen by an adversary).
type AddrMap<V> = HashMap<usize, V, BuildHasherDefault<AddrHasher>>;

/// The hasher of [`AddrMap`].
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_usize(&mut self, addr: usize) {
        // A folded 128-bit product: both halves of the hash (hashbrown takes the bucket
        // from the low bits, a tag from the high ones) mix every address bit.
        let h = u128::from(addr as u64) * 0x9e37_79b9_7f4a_7c15;
        self.0 = (h as u64) ^ ((h >> 64) as u64);
    }
}

/// The interpreter state shared by all frames of one `run_function` call.
struct Interp<'m> {
    module: &'m Module,
    depth: usize,
    /// Block plans and compiled loops, kept across calls when the caller keeps the cache.
    cache: &'m PlanCache,
    /// Values of the `constant` ops this call has built, by op address: a loop body's large
    /// constants (which the cache does not keep between calls) are built once per call.
    constants: AddrMap<Literal>,
    collectives: &'m dyn Collectives,
    /// Emptied value tables of finished calls, for the next calls.
    spare_envs: Vec<Vec<Option<Value>>>,
    /// Collective ops executed so far (see [`Exchange::sequence`]).
    collective_sequence: u64,
    options: EvalOptions,
    /// Whether blocks may run row groups ([`rows`]); off inside a row group's slabs.
    row_tiling: bool,
    /// How many `sdy.manual_computation` bodies are running (nested regions count each).
    manual_regions: usize,
}

/// One function activation: the function and its value table.
pub(crate) struct Frame<'m> {
    func: &'m Function,
    env: Vec<Option<Value>>,
}

impl<'m> Interp<'m> {
    fn new(
        module: &'m Module,
        cache: &'m PlanCache,
        collectives: &'m dyn Collectives,
        options: EvalOptions,
    ) -> Interp<'m> {
        cache.bind(module);
        Interp {
            module,
            depth: 0,
            cache,
            constants: AddrMap::default(),
            collectives,
            spare_envs: Vec::new(),
            collective_sequence: 0,
            options,
            row_tiling: true,
            manual_regions: 0,
        }
    }

    fn enter(&mut self) -> Result<(), IrError> {
        if self.depth >= MAX_NESTING {
            return Err(IrError::Eval {
                detail: format!("regions and calls nest deeper than {MAX_NESTING} levels"),
            });
        }
        self.depth += 1;
        Ok(())
    }

    /// Calls `func` with `args` in a fresh frame.
    fn call(&mut self, func: &'m Function, args: Vec<Value>) -> Result<Vec<Value>, IrError> {
        let block = func.body.blocks.first().ok_or_else(|| IrError::Eval {
            detail: format!("function `{}` has no body", func.name),
        })?;
        self.enter()?;
        // Value tables are reused from call to call: a loop that calls a function each
        // iteration allocates no new table.
        let mut env = self.spare_envs.pop().unwrap_or_default();
        env.resize(func.values.len(), None);
        let mut frame = Frame { func, env };
        let res = self.exec_block(&mut frame, block, args);
        self.depth -= 1;
        let mut env = frame.env;
        for value in env.drain(..).flatten() {
            if let Value::Tensor(lit) = value {
                recycle(lit);
            }
        }
        self.spare_envs.push(env);
        res
    }

    /// Evaluates the single block of `region` in `frame` with `args` bound to its arguments.
    fn exec_region(
        &mut self,
        frame: &mut Frame<'m>,
        region: &'m Region,
        args: Vec<Value>,
    ) -> Result<Vec<Value>, IrError> {
        let block = match region.blocks.as_slice() {
            [block] => block,
            blocks => {
                return Err(IrError::Eval {
                    detail: format!("a region must have one block, found {}", blocks.len()),
                })
            }
        };
        self.enter()?;
        let res = self.exec_block(frame, block, args);
        self.depth -= 1;
        res
    }

    /// Whether each argument of `region`'s single block is read (all `true` when the region
    /// is not a single block, which `exec_region` then rejects).
    fn region_args_used(&mut self, func: &Function, region: &'m Region) -> Vec<bool> {
        match region.blocks.as_slice() {
            [block] => self.block_plan(func, block).arg_used.clone(),
            _ => Vec::new(),
        }
    }

    /// The compiled form of the `while` op `op` of `func`, when it has one (only with
    /// [`EvalOptions::fuse`]).
    fn loop_program(&mut self, func: &Function, op: &Op) -> Option<Arc<small_loop::LoopProgram>> {
        if !self.options.fuse {
            return None;
        }
        self.cache.loop_program(self.module, func, op)
    }

    fn block_plan(&mut self, func: &Function, block: &Block) -> Arc<BlockPlan> {
        self.cache
            .block_plan(func, block, self.options.fuse, self.row_tiling)
    }

    fn exec_block(
        &mut self,
        frame: &mut Frame<'m>,
        block: &'m Block,
        args: Vec<Value>,
    ) -> Result<Vec<Value>, IrError> {
        if args.len() != block.arguments.len() {
            return Err(IrError::Eval {
                detail: format!(
                    "block takes {} arguments, got {}",
                    block.arguments.len(),
                    args.len()
                ),
            });
        }
        for (&id, value) in block.arguments.iter().zip(args) {
            set_value(frame, id, value)?;
        }
        let plan = self.block_plan(frame.func, block);
        for (i, step) in plan.steps.iter().enumerate() {
            match step {
                Step::Op(k) => {
                    let op = &block.ops[*k];
                    if op.kind.is_terminator() {
                        return Ok(take_operands(frame, op, &plan.frees[i]));
                    }
                    self.exec_op(frame, op, &plan.moves[i])?;
                }
                Step::Fused(kernel) => exec_fused(frame, kernel)?,
                Step::Rows(kernel) => self.exec_rows(frame, kernel)?,
                Step::SwappedDot(op) => exec_tensor_op(frame, op)?,
                Step::AccumulatedDot(d) => exec_accumulated_dot(frame, d, &plan.frees[i])?,
                Step::ScaledWindow(w) => self.exec_scaled_window(frame, block, w)?,
            }
            for v in &plan.frees[i] {
                if let Some(Some(Value::Tensor(lit))) =
                    frame.env.get_mut(v.index()).map(Option::take)
                {
                    recycle(lit);
                }
            }
        }
        Err(IrError::Eval {
            detail: "block ends without a terminator".to_string(),
        })
    }

    /// Evaluates `op`; it may move the values in `moves` (operands at their last use) out of
    /// the table instead of cloning them.
    fn exec_op(
        &mut self,
        frame: &mut Frame<'m>,
        op: &'m Op,
        moves: &[ValueId],
    ) -> Result<(), IrError> {
        let cx = OpCx {
            op,
            func: frame.func,
        };
        use OpKind as K;
        let results: Vec<Value> = match &op.kind {
            K::While => self.exec_while(frame, cx, moves)?,
            K::If => self.exec_if(frame, cx)?,
            K::Case => self.exec_case(frame, cx)?,
            K::Call => self.exec_call(frame, cx, "callee", moves)?,
            K::Composite => {
                let native = match op.operands.as_slice() {
                    [id] => match operand(frame, cx, *id)? {
                        Value::Tensor(x) => elementwise::complex_composite(cx, x)
                            .or_else(|| special::native_composite(cx, x))
                            .map(|r| r.map(|lit| vec![lit]))
                            .or_else(|| topk::top_k_composite(cx, x)),
                        _ => None,
                    },
                    _ => None,
                };
                match native {
                    Some(results) => results?.into_iter().map(Value::Tensor).collect(),
                    None => self.exec_call(frame, cx, "decomposition", moves)?,
                }
            }
            K::Reduce => self.exec_reduce(frame, cx)?,
            K::CustomCall if sharding_call_target(op).is_some() => {
                self.exec_collective(frame, cx)?
            }
            // `lax.dce_sink` keeps its operands from being removed as dead code; it
            // computes nothing.
            K::CustomCall if is_dce_sink(op) => Vec::new(),
            K::CustomCall if is_layout_constraint(op) || is_inspect_sharding(op) => {
                let value = tensor_operand(frame, cx, op.operands[0])?;
                if &value.ty != cx.result_tensor(0)? {
                    let target = call_target(op).unwrap_or_default();
                    return Err(cx.invalid(format!("{target} changes its operand's type")));
                }
                vec![Value::Tensor(value.clone())]
            }
            K::CustomCall => match call_target(op).and_then(host::host_call_handler) {
                Some(handler) => self.exec_host_call(frame, cx, handler.as_ref())?,
                None => {
                    let args = op
                        .operands
                        .iter()
                        .map(|&id| tensor_operand(frame, cx, id))
                        .collect::<Result<Vec<_>, _>>()?;
                    let results = if tridiagonal::supports(op) {
                        tridiagonal::custom_call(cx, &args)?
                    } else {
                        lapack::custom_call(cx, &args)?
                    };
                    results.into_iter().map(Value::Tensor).collect()
                }
            },
            k if body::handles(k) => self.exec_body_op(frame, cx, moves)?,
            K::DynamicUpdateSlice if op.operands.first().is_some_and(|v| moves.contains(v)) => {
                vec![Value::Tensor(exec_dynamic_update_slice(frame, cx, moves)?)]
            }
            k if collective::handles(k) => self.exec_collective(frame, cx)?,
            K::Tuple => vec![Value::Tuple(
                op.operands
                    .iter()
                    .map(|&id| operand(frame, cx, id).cloned())
                    .collect::<Result<_, _>>()?,
            )],
            K::GetTupleElement => {
                cx.expect_operands(1)?;
                let index = cx.int("index")?;
                match operand(frame, cx, op.operands[0])? {
                    Value::Tuple(items) => vec![usize::try_from(index)
                        .ok()
                        .and_then(|i| items.get(i))
                        .cloned()
                        .ok_or_else(|| {
                            cx.invalid(format!(
                                "index {index} out of range for {} elements",
                                items.len()
                            ))
                        })?],
                    _ => return Err(cx.invalid("operand is not a tuple")),
                }
            }
            K::OptimizationBarrier | K::UnrealizedConversionCast | K::SdyShardingConstraint => op
                .operands
                .iter()
                .map(|&id| operand(frame, cx, id).cloned())
                .collect::<Result<_, _>>()?,
            // A hint that its operands share a sharding (`shard_alike`); no results.
            K::SdyShardingGroup => Vec::new(),
            K::CreateToken | K::AfterAll => vec![Value::Token],
            K::Constant => {
                let key = op as *const Op as usize;
                let lit = match self.cache.constant(op) {
                    Some(lit) => lit,
                    None => match self.constants.get(&key) {
                        Some(lit) => lit.clone(),
                        None => {
                            let lit = shape::constant(cx)?;
                            self.cache.keep_constant(op, &lit);
                            self.constants.insert(key, lit.clone());
                            lit
                        }
                    },
                };
                vec![Value::Tensor(lit)]
            }
            _ => return exec_tensor_op(frame, op),
        };
        if results.len() != op.results.len() {
            return Err(cx.invalid(format!(
                "produced {} results, the op declares {}",
                results.len(),
                op.results.len()
            )));
        }
        for (&id, value) in op.results.iter().zip(results) {
            set_value(frame, id, value)?;
        }
        Ok(())
    }
}

impl Interp<'_> {
    /// Runs a row group: reads its inputs from the table and stores its outputs.
    fn exec_rows(
        &mut self,
        frame: &mut Frame<'_>,
        kernel: &rows::RowKernel,
    ) -> Result<(), IrError> {
        let args = group_inputs(frame, kernel.input_values(), "row group")?;
        let results = kernel.run(self.module, self.cache, &args, self.options)?;
        for (&id, lit) in kernel.output_values().iter().zip(results) {
            set_value(frame, id, Value::Tensor(lit))?;
        }
        Ok(())
    }
}

/// Runs a fused group: reads its inputs from the table and stores its outputs.
fn exec_fused(frame: &mut Frame<'_>, kernel: &fused::FusedKernel) -> Result<(), IrError> {
    let args = group_inputs(frame, kernel.input_values(), "fused group")?;
    let results = kernel.run(&args)?;
    for (id, lit) in kernel.output_values().zip(results) {
        set_value(frame, id, Value::Tensor(lit))?;
    }
    Ok(())
}

/// Runs `op`, a [`tensor_op`] with one result, and stores its result.
fn exec_tensor_op(frame: &mut Frame<'_>, op: &Op) -> Result<(), IrError> {
    let cx = OpCx {
        op,
        func: frame.func,
    };
    let args = op
        .operands
        .iter()
        .map(|&id| tensor_operand(frame, cx, id))
        .collect::<Result<SmallVec<[_; 4]>, _>>()?;
    let result = tensor_op(cx, &args)?;
    drop(args);
    cx.expect_results(1)?;
    set_value(frame, op.results[0], Value::Tensor(result))
}

/// Runs an [`AccumulatedDot`](plan::AccumulatedDot) step: the product summed into the
/// addend's buffer (taken over when this step is the addend's last use and nothing else
/// shares it, a pooled copy otherwise), or, where the accumulating kernels do not apply,
/// the product stored and the add run on it.
fn exec_accumulated_dot(
    frame: &mut Frame<'_>,
    step: &plan::AccumulatedDot,
    frees: &[ValueId],
) -> Result<(), IrError> {
    let func = frame.func;
    let cx = OpCx {
        op: &step.product,
        func,
    };
    let [lhs, rhs] = step.product.operands[..] else {
        return Err(cx.invalid("expects two operands"));
    };
    for id in [lhs, rhs, step.addend] {
        tensor_operand(frame, cx, id)?;
    }
    let last_use = frees.contains(&step.addend) && lhs != step.addend && rhs != step.addend;
    let slot = &mut frame.env[step.addend.index()];
    let unshared = matches!(slot, Some(Value::Tensor(lit))
        if Arc::strong_count(&lit.data) == 1 && Arc::weak_count(&lit.data) == 0);
    let owned = match slot {
        Some(Value::Tensor(_)) if last_use && unshared => match slot.take() {
            Some(Value::Tensor(lit)) => Some(lit),
            _ => None,
        },
        _ => None,
    };
    let mut acc = match owned {
        Some(lit) => lit,
        None => {
            let x = tensor_operand(frame, cx, step.addend)?;
            let mut bytes = pool::take_for_overwrite(x.data.len());
            bytes.copy_from_slice(&x.data);
            Literal::new(x.ty.clone(), bytes)?
        }
    };
    let (a, b) = (
        tensor_operand(frame, cx, lhs)?,
        tensor_operand(frame, cx, rhs)?,
    );
    if dot::dot_general_into(cx, a, b, &mut acc)? {
        return set_value(frame, step.add.results[0], Value::Tensor(acc));
    }
    // Not a product the kernels sum into (checked before anything is written): the
    // product is stored and added as the two ops would have been.
    let product = tensor_op(cx, &[a, b])?;
    let add_cx = OpCx {
        op: &step.add,
        func,
    };
    let args = step
        .add
        .operands
        .iter()
        .map(|&id| if id == step.summand { &product } else { &acc })
        .collect::<SmallVec<[_; 2]>>();
    let result = tensor_op(add_cx, &args)?;
    drop(args);
    recycle(product);
    recycle(acc);
    set_value(frame, step.add.results[0], Value::Tensor(result))
}

/// Runs `dynamic_update_slice` at its operand's last use: the operand moves out of the
/// table, so the update is written into its bytes instead of a copy of them.
fn exec_dynamic_update_slice(
    frame: &mut Frame<'_>,
    cx: OpCx<'_>,
    moves: &[ValueId],
) -> Result<Literal, IrError> {
    if cx.op.operands.len() < 2 {
        return Err(cx.invalid("expects an operand and an update"));
    }
    for &id in &cx.op.operands {
        tensor_operand(frame, cx, id)?;
    }
    let mut args = take_operands(frame, cx.op, moves)
        .into_iter()
        .map(|v| match v {
            Value::Tensor(lit) => Ok(lit),
            _ => Err(cx.invalid("operands must be tensors")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let rest = args.split_off(1);
    let x = args.pop().ok_or_else(|| cx.invalid("expects an operand"))?;
    let starts: Vec<&Literal> = rest[1..].iter().collect();
    shape::dynamic_update_slice(cx, x, &rest[0], &starts)
}

/// The tensor values of a group's `inputs` (`what` names the group in errors).
fn group_inputs<'f>(
    frame: &'f Frame<'_>,
    inputs: &[ValueId],
    what: &str,
) -> Result<Vec<&'f Literal>, IrError> {
    inputs
        .iter()
        .map(
            |&id| match frame.env.get(id.index()).and_then(|v| v.as_ref()) {
                Some(Value::Tensor(lit)) => Ok(lit),
                _ => Err(IrError::Eval {
                    detail: format!("{what} input %{} has no tensor value", id.0),
                }),
            },
        )
        .collect()
}

/// Gives the bytes of a dead value to the buffer cache, unless something else shares them.
fn recycle(lit: Literal) {
    if let Ok(bytes) = std::sync::Arc::try_unwrap(lit.data) {
        pool::give(bytes);
    }
}

fn set_value(frame: &mut Frame<'_>, id: ValueId, value: Value) -> Result<(), IrError> {
    let slot = frame.env.get_mut(id.index()).ok_or_else(|| IrError::Eval {
        detail: format!(
            "value %{} is outside the value table of `{}`",
            id.0, frame.func.name
        ),
    })?;
    *slot = Some(value);
    Ok(())
}

/// The value of `id`, which must have been computed.
fn operand<'f>(frame: &'f Frame<'_>, cx: OpCx<'_>, id: ValueId) -> Result<&'f Value, IrError> {
    frame
        .env
        .get(id.index())
        .and_then(|v| v.as_ref())
        .ok_or_else(|| cx.invalid(format!("operand %{} has no value here", id.0)))
}

/// The tensor value of `id`.
fn tensor_operand<'f>(
    frame: &'f Frame<'_>,
    cx: OpCx<'_>,
    id: ValueId,
) -> Result<&'f Literal, IrError> {
    match operand(frame, cx, id)? {
        Value::Tensor(lit) => Ok(lit),
        _ => Err(cx.invalid(format!("operand %{} is not a tensor", id.0))),
    }
}

/// The operands of a terminator: moved out of the table when this is their last use.
fn take_operands(frame: &mut Frame<'_>, op: &Op, frees: &[ValueId]) -> Vec<Value> {
    let mut res = Vec::with_capacity(op.operands.len());
    for (i, &id) in op.operands.iter().enumerate() {
        let last_occurrence = !op.operands[i + 1..].contains(&id);
        let slot = frame.env.get_mut(id.index());
        let value = match slot {
            Some(slot) if last_occurrence && frees.contains(&id) => slot.take(),
            Some(slot) => slot.clone(),
            None => None,
        };
        // A missing value becomes a token so the caller reports a type error, not a panic.
        res.push(value.unwrap_or(Value::Token));
    }
    res
}

/// Ops on tensors only, each with one result: one function per op kind.
fn tensor_op(cx: OpCx<'_>, args: &[&Literal]) -> Result<Literal, IrError> {
    use OpKind as K;
    let kind = &cx.op.kind;
    let res = match kind {
        K::Constant => shape::constant(cx)?,
        k if elementwise::is_unary(k) => {
            cx.expect_operands(1)?;
            elementwise::unary(cx, args[0])?
        }
        k if elementwise::is_binary(k) => {
            cx.expect_operands(2)?;
            elementwise::binary(cx, args[0], args[1])?
        }
        K::Compare => {
            cx.expect_operands(2)?;
            elementwise::compare(cx, args[0], args[1])?
        }
        K::Select => {
            cx.expect_operands(3)?;
            elementwise::select(cx, args[0], args[1], args[2])?
        }
        K::Clamp => {
            cx.expect_operands(3)?;
            elementwise::clamp(cx, args[0], args[1], args[2])?
        }
        K::Convert => {
            cx.expect_operands(1)?;
            convert::convert(cx, args[0])?
        }
        K::BitcastConvert => {
            cx.expect_operands(1)?;
            convert::bitcast_convert(cx, args[0])?
        }
        K::ReducePrecision => {
            cx.expect_operands(1)?;
            convert::reduce_precision(cx, args[0])?
        }
        K::Iota => shape::iota(cx)?,
        K::BroadcastInDim => {
            cx.expect_operands(1)?;
            shape::broadcast_in_dim(cx, args[0])?
        }
        K::Broadcast => {
            cx.expect_operands(1)?;
            shape::broadcast(cx, args[0])?
        }
        K::Reshape => {
            cx.expect_operands(1)?;
            shape::reshape(cx, args[0])?
        }
        K::Transpose => {
            cx.expect_operands(1)?;
            shape::transpose(cx, args[0])?
        }
        K::Slice => {
            cx.expect_operands(1)?;
            shape::slice(cx, args[0])?
        }
        K::DynamicSlice => {
            if args.is_empty() {
                return Err(cx.invalid("expects an operand"));
            }
            shape::dynamic_slice(cx, args[0], &args[1..])?
        }
        K::DynamicUpdateSlice => {
            if args.len() < 2 {
                return Err(cx.invalid("expects an operand and an update"));
            }
            shape::dynamic_update_slice(cx, args[0].clone(), args[1], &args[2..])?
        }
        K::Concatenate => shape::concatenate(cx, args)?,
        K::Pad => {
            cx.expect_operands(2)?;
            shape::pad(cx, args[0], args[1])?
        }
        K::Reverse => {
            cx.expect_operands(1)?;
            shape::reverse(cx, args[0])?
        }
        K::DotGeneral => {
            cx.expect_operands(2)?;
            dot::dot_general(cx, args[0], args[1])?
        }
        K::Dot => {
            cx.expect_operands(2)?;
            dot::dot(cx, args[0], args[1])?
        }
        _ => return Err(cx.unsupported("the reference evaluator does not implement this op")),
    };
    Ok(res)
}

/// How a token argument or result crosses the function boundary: an empty `i1` tensor.
pub fn token_literal() -> Literal {
    Literal {
        ty: crate::TensorType::new(vec![0], crate::ElementType::Pred),
        data: Default::default(),
    }
}

/// The custom call's `call_target_name`, if it is a string.
pub(crate) fn call_target(op: &Op) -> Option<&str> {
    match op.attr("call_target_name") {
        Some(crate::Attribute::String(t)) => Some(t.as_str()),
        _ => None,
    }
}
