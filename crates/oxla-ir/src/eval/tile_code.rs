//! Fused kernels and counted loops run as generated machine code.
//!
//! A fused kernel's tile instructions each loop over the whole tile, storing their result
//! for the next to load, and every tile pays the kernel's bookkeeping. Where the CPU allows
//! (see [`oxla_codegen`]), a kernel made only of exact f32 arithmetic (add, subtract,
//! multiply, divide, maximum, minimum, negate, abs, sqrt, rsqrt, floor, ceil), `exp`, `expm1`, `log`,
//! `log_plus_one`, `tanh`, `logistic`, compares, selects,
//! clamps and the `i1` masks between them (held as 0.0/1.0, as the tile loops hold them)
//! whose inputs are each read whole, as one row
//! repeated over the rows (a gain or bias), as one value per row (a mean) or as one value,
//! runs instead as one generated loop over its elements that keeps every intermediate in a
//! vector register. The code is compiled the first time the kernel runs. It computes the
//! same IEEE operations as the tile loops, so results keep the interpreter's bits. `sin` and
//! `cos` cover arguments up to 65536 in magnitude; where the code meets another, it stops,
//! and the tile loops compute a block from there before the code goes on.
//!
//! A compiled loop (`small_loop`) whose whole body is one register run and a counter
//! ([`CountedCode`]) runs as one generated loop too: per chunk of 16 elements the carried
//! values stay in vector registers across all iterations. Where a `sin` or `cos` stops it,
//! the register run finishes that chunk's iterations and the code goes on with the next.
//!
//! [`set_enabled`] switches generated code off (and on) for the whole process, for
//! comparisons and benchmarks.

use super::lane_group::{Block, Carried, LaneGroup};
use crate::OpKind;
use oxla_codegen::{Cmp, Input, LoopBody, LoopCode, LoopEnd, TileCode, TileProgram};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns generated code for fused kernels on or off in this process (on by default).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether this machine runs generated code for fused kernels (x86-64 with AVX-512F and
/// BMI2, or with AVX2 and FMA).
pub fn available() -> bool {
    oxla_codegen::available()
}

/// Whether this machine runs generated counted loops (AVX-512); on AVX2 loops stay in the
/// interpreter.
pub fn loops_available() -> bool {
    oxla_codegen::loops_available()
}

/// Whether this machine runs generated scalar loops (any x86-64).
pub fn scalar_available() -> bool {
    oxla_codegen::scalar_available()
}

/// Whether fused kernels may run generated code.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Kernels over fewer elements keep the tile loops: compiling a kernel takes tens of
/// microseconds on its first run, and below a few tiles the generated loop saves less than
/// a microsecond a call.
const MIN_ELEMENTS: usize = 8192;

/// The generated-code form of one fused kernel.
#[derive(Clone)]
pub(crate) struct KernelCode(Arc<Inner>);

struct Inner {
    program: TileProgram,
    /// Elements per row of the kernel's shape, as the program's inputs index them.
    row_len: usize,
    /// The code, compiled on first use (`None` when compiling failed).
    code: OnceLock<Option<TileCode>>,
}

impl std::fmt::Debug for KernelCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelCode")
            .field("program", &self.0.program)
            .field("row_len", &self.0.row_len)
            .finish_non_exhaustive()
    }
}

/// The generated-code comparison of a direction.
pub(crate) fn cmp_of(dir: crate::attrs::ComparisonDirection) -> Cmp {
    use crate::attrs::ComparisonDirection as D;
    match dir {
        D::Eq => Cmp::Eq,
        D::Ne => Cmp::Ne,
        D::Lt => Cmp::Lt,
        D::Le => Cmp::Le,
        D::Gt => Cmp::Gt,
        D::Ge => Cmp::Ge,
    }
}

/// The generated-code form of a kernel's instruction, when it has one; `bound` is the
/// position and value of a maximum's or minimum's constant operand, when it has one.
fn translate(inst: &super::fused::Inst, bound: Option<(usize, f32)>) -> Option<oxla_codegen::Inst> {
    use super::fused::Inst as F;
    use oxla_codegen::Inst as G;
    let r = |x: usize| u8::try_from(x).ok();
    Some(match inst {
        F::Binary(kind, a, b) => {
            let (a, b) = (r(*a)?, r(*b)?);
            // With one operand a constant other than NaN, either order gives the same
            // result.
            let bound = bound.filter(|(_, v)| !v.is_nan());
            let (x, c, bits) = match bound {
                Some((0, v)) => (b, a, v.to_bits()),
                Some((_, v)) => (a, b, v.to_bits()),
                None => (a, b, f32::NAN.to_bits()),
            };
            match kind {
                OpKind::Maximum if bound.is_some() => G::MaximumOf(x, c, bits),
                OpKind::Minimum if bound.is_some() => G::MinimumOf(x, c, bits),
                OpKind::Add => G::Add(a, b),
                OpKind::Subtract => G::Subtract(a, b),
                OpKind::Multiply => G::Multiply(a, b),
                OpKind::Divide => G::Divide(a, b),
                OpKind::Maximum => G::Maximum(a, b),
                OpKind::Minimum => G::Minimum(a, b),
                _ => return None,
            }
        }
        F::Unary(kind, a) => {
            let a = r(*a)?;
            match kind {
                OpKind::Negate => G::Negate(a),
                OpKind::Abs => G::Abs(a),
                OpKind::Sqrt => G::Sqrt(a),
                OpKind::Floor => G::Floor(a),
                OpKind::Ceil => G::Ceil(a),
                OpKind::Rsqrt => G::Rsqrt(a),
                OpKind::Exponential => G::Exp(a),
                OpKind::Tanh => G::Tanh(a),
                OpKind::Logistic => G::Logistic(a),
                OpKind::ExponentialMinusOne => G::Expm1(a),
                OpKind::Log => G::Log(a),
                OpKind::LogPlusOne => G::Log1p(a),
                OpKind::Sine => G::Sin(a),
                OpKind::Cosine => G::Cos(a),
                _ => return None,
            }
        }
        // Total-order compares have no generated form.
        F::Compare(dir, false, a, b) => G::Compare(cmp_of(*dir), r(*a)?, r(*b)?),
        F::Compare(_, true, _, _) => return None,
        F::Select(p, t, f) => G::Select(r(*p)?, r(*t)?, r(*f)?),
        F::Clamp(lo, x, hi) => G::Clamp(r(*lo)?, r(*x)?, r(*hi)?),
        F::Not(a) => G::Not(r(*a)?),
        F::IsFinite(a) => G::IsFinite(r(*a)?),
        F::And(a, b) => G::And(r(*a)?, r(*b)?),
        F::Or(a, b) => G::Or(r(*a)?, r(*b)?),
        // Masks hold exactly 0.0 or 1.0: they differ where their xor is true.
        F::Xor(a, b) => G::Compare(Cmp::Ne, r(*a)?, r(*b)?),
        F::IntUnary(kind, signed, a) => {
            let a = r(*a)?;
            match kind {
                OpKind::Negate => G::IntNegate(a),
                OpKind::Abs if *signed => G::IntAbs(a),
                OpKind::Not => G::BitNot(a),
                OpKind::Sign => G::IntSign(*signed, a),
                // Unsigned abs (the value), population count and leading zeros.
                _ => return None,
            }
        }
        F::IntBinary(kind, signed, a, b) => {
            let (a, b) = (r(*a)?, r(*b)?);
            let divisor = bound.map(|(_, v)| v.to_bits());
            match kind {
                OpKind::Divide if divisor.is_some() => G::IntDivideBy(*signed, a, divisor?),
                OpKind::Remainder if divisor.is_some() => G::IntRemainderBy(*signed, a, divisor?),
                OpKind::Add => G::IntAdd(a, b),
                OpKind::Subtract => G::IntSubtract(a, b),
                OpKind::Multiply => G::IntMultiply(a, b),
                OpKind::And => G::BitAnd(a, b),
                OpKind::Or => G::BitOr(a, b),
                OpKind::Xor => G::BitXor(a, b),
                OpKind::ShiftLeft => G::ShiftLeft(a, b),
                OpKind::ShiftRightLogical => G::ShiftRightLogical(a, b),
                OpKind::ShiftRightArithmetic => G::ShiftRightArithmetic(a, b),
                OpKind::Maximum => G::IntMaximum(*signed, a, b),
                OpKind::Minimum => G::IntMinimum(*signed, a, b),
                OpKind::Divide => G::IntDivide(*signed, a, b),
                OpKind::Remainder => G::IntRemainder(*signed, a, b),
                // Power keeps the tile loops.
                _ => return None,
            }
        }
        F::IntCompare(dir, signed, a, b) => G::IntCompare(cmp_of(*dir), *signed, r(*a)?, r(*b)?),
        F::Convert(conversion, a) => {
            use super::fused::Conversion as C;
            let a = r(*a)?;
            match conversion {
                C::MaskToInt => G::MaskToInt(a),
                C::IntToMask => G::IntToMask(a),
                C::S32ToF32 => G::IntToF32(true, a),
                C::U32ToF32 => G::IntToF32(false, a),
                C::F32ToS32 => G::F32ToInt(true, a),
                C::F32ToU32 => G::F32ToInt(false, a),
            }
        }
    })
}

/// The registers generated tile programs may name.
const REGISTERS: usize = 24;

/// One step of a program being given registers anew: a one-value input loaded where an
/// instruction reads it, or a kernel instruction (over value numbers) with its bound.
enum Step {
    Load(usize),
    Inst(super::fused::Inst, Option<(usize, f32)>),
}

/// The kernel's program with registers given anew by liveness (a destination never shares
/// a register with its instruction's sources), and how many registers it names. The inputs
/// `pinned` marks (one flag per input; one value, or one value per row) keep their register
/// for the whole run, so the generated code loads them once (per run or per row) instead of
/// in every chunk; the other one-value inputs become [`Input::OnDemand`], loaded by an
/// [`oxla_codegen::Inst::LoadScalar`] before each instruction that reads them (long chains
/// with many constants, such as JAX's unrolled threefry hash, fit the registers that way).
/// `None` when an output is an input read on demand or a register number overflows.
fn allocated_program(
    kinds: &[Input],
    inputs: &[(&[usize], usize)],
    insts: &[(super::fused::Inst, usize)],
    bounds: &[Option<(usize, f32)>],
    outputs: &[usize],
    pinned: &[bool],
) -> Option<(TileProgram, usize)> {
    // Value numbers: one per input, then one per step's result.
    let mut current: std::collections::HashMap<usize, usize> = Default::default();
    let mut on_demand: Vec<Option<usize>> = Vec::new();
    for (k, (&kind, &(_, r))) in kinds.iter().zip(inputs).enumerate() {
        current.insert(r, on_demand.len());
        on_demand.push((kind == Input::Scalar && !pinned[k]).then_some(k));
    }
    let n_inputs = on_demand.len();
    let mut next = n_inputs;
    let mut steps: Vec<(Step, Vec<usize>, usize)> = Vec::new();
    for (i, (inst, d)) in insts.iter().enumerate() {
        let mut renamed: Vec<(usize, usize)> = Vec::new();
        for r in inst.sources() {
            if renamed.iter().any(|&(from, _)| from == r) {
                continue;
            }
            let v = *current.get(&r)?;
            let v = match on_demand.get(v).copied().flatten() {
                Some(k) => {
                    steps.push((Step::Load(k), Vec::new(), next));
                    next += 1;
                    next - 1
                }
                None => v,
            };
            renamed.push((r, v));
        }
        let mut inst = inst.clone();
        inst.map_sources(|r| {
            renamed
                .iter()
                .find(|&&(from, _)| from == r)
                .map_or(r, |&(_, v)| v)
        });
        let sources = inst.sources().to_vec();
        steps.push((
            Step::Inst(inst, bounds.get(i).copied().flatten()),
            sources,
            next,
        ));
        current.insert(*d, next);
        next += 1;
    }
    let out_values: Vec<usize> = outputs
        .iter()
        .map(|r| current.get(r).copied())
        .collect::<Option<_>>()?;
    // An output that is an input read on demand has no register to store from.
    if out_values
        .iter()
        .any(|&v| v < n_inputs && on_demand[v].is_some())
    {
        return None;
    }
    let live_in: Vec<usize> = (0..n_inputs).filter(|&v| on_demand[v].is_none()).collect();
    let reads: Vec<(&[usize], usize)> = steps
        .iter()
        .map(|(_, sources, dst)| (sources.as_slice(), *dst))
        .collect();
    // Pinned inputs live to the end, as the outputs do.
    let to_end: Vec<usize> = out_values
        .iter()
        .copied()
        .chain((0..n_inputs).filter(|&v| pinned[v]))
        .collect();
    let (phys, count) = super::fused::assign_registers(next, &live_in, &reads, &to_end);
    let reg = |v: usize| {
        phys.get(v)
            .copied()
            .flatten()
            .and_then(|p| u8::try_from(p).ok())
    };
    let program = TileProgram {
        inputs: (0..n_inputs)
            .map(|v| match on_demand[v] {
                Some(_) => Some((Input::OnDemand, 0)),
                None => Some((kinds[v], reg(v)?)),
            })
            .collect::<Option<_>>()?,
        insts: steps
            .into_iter()
            .map(|(step, _, dst)| {
                let inst = match step {
                    Step::Load(k) => oxla_codegen::Inst::LoadScalar(u8::try_from(k).ok()?),
                    Step::Inst(mut inst, bound) => {
                        inst.map_sources(|v| phys[v].unwrap_or(usize::MAX));
                        translate(&inst, bound)?
                    }
                };
                Some((inst, reg(dst)?))
            })
            .collect::<Option<_>>()?,
        outputs: out_values.iter().map(|&v| reg(v)).collect::<Option<_>>()?,
        row_sums: Vec::new(),
    };
    Some((program, count))
}

/// The program of a kernel that reads one-value or one-value-per-row inputs, with as many
/// of them pinned to registers ([`allocated_program`]) as fit in `limit` registers, those
/// read most often first; the others are loaded where they are read (one value) or in
/// every chunk (one value per row). `None` when even none pinned needs more than `limit`.
fn pinned_program(
    kinds: &[Input],
    inputs: &[(&[usize], usize)],
    insts: &[(super::fused::Inst, usize)],
    bounds: &[Option<(usize, f32)>],
    outputs: &[usize],
    limit: usize,
) -> Option<TileProgram> {
    // Reads of each input's value before its register is written.
    let mut reads = vec![0usize; inputs.len()];
    let mut holder: std::collections::HashMap<usize, usize> = Default::default();
    for (k, &(_, r)) in inputs.iter().enumerate() {
        holder.insert(r, k);
    }
    for (inst, d) in insts {
        for r in inst.sources() {
            if let Some(&k) = holder.get(&r) {
                reads[k] += 1;
            }
        }
        holder.remove(d);
    }
    let mut pinned: Vec<bool> = kinds
        .iter()
        .zip(&reads)
        .map(|(&kind, &n)| matches!(kind, Input::Scalar | Input::RowScalar) && n > 0)
        .collect();
    let mut order: Vec<usize> = (0..inputs.len()).filter(|&k| pinned[k]).collect();
    // Unpinned first: the fewest reads (ties: the later input).
    order.sort_by_key(|&k| (reads[k], std::cmp::Reverse(k)));
    let mut order = order.into_iter();
    loop {
        if let Some((program, count)) =
            allocated_program(kinds, inputs, insts, bounds, outputs, &pinned)
        {
            if count <= limit {
                return Some(program);
            }
        }
        pinned[order.next()?] = false;
    }
}

/// How an input with `strides` (per dimension of `shape`, 0 where it broadcasts) is read
/// over rows of `shape`'s last dimension, when it is one of the generated code's patterns.
fn classify(shape: &[usize], strides: &[usize]) -> Option<Input> {
    if strides.len() != shape.len() {
        return None;
    }
    let Some((&row_len, leading)) = shape.split_last() else {
        return Some(Input::Scalar);
    };
    let last = strides[leading.len()];
    // Dimensions of extent 1 take any stride.
    let leading_broadcast = (0..leading.len()).all(|d| shape[d] == 1 || strides[d] == 0);
    Some(if row_major(shape, strides) {
        Input::Stream
    } else if leading_broadcast && (row_len == 1 || last == 0) {
        Input::Scalar
    } else if leading_broadcast && last == 1 {
        Input::RowVector
    } else if row_major(leading, &strides[..leading.len()]) && (row_len == 1 || last == 0) {
        // One element per row, in row order.
        Input::RowScalar
    } else {
        return None;
    })
}

/// Whether `strides` lay the input out like `shape` itself (dimensions of extent 1 aside).
fn row_major(shape: &[usize], strides: &[usize]) -> bool {
    let mut step = 1usize;
    for d in (0..shape.len()).rev() {
        if shape[d] != 1 && strides[d] != step {
            return false;
        }
        step *= shape[d];
    }
    true
}

impl KernelCode {
    /// The generated-code form of a kernel over `shape` whose f32 inputs are read with
    /// `inputs` (per input: its strides over `shape` and its register), running `insts`
    /// (with `bounds`, per instruction, a maximum's or minimum's constant operand: its
    /// position and value) and writing the f32 registers `outputs`; `None` when this machine has no code
    /// generator, or an instruction or an input's pattern has no generated form.
    pub(crate) fn new(
        shape: &[usize],
        inputs: &[(&[usize], usize)],
        insts: &[(super::fused::Inst, usize)],
        bounds: &[Option<(usize, f32)>],
        outputs: &[usize],
    ) -> Option<KernelCode> {
        Self::build(shape, inputs, insts, bounds, outputs, None)
    }

    /// [`KernelCode::new`] for a kernel that also sums register `sum` along each row of
    /// `shape` (rows of at least 32 elements), in the evaluator's fold order, from an
    /// initial value given as one more input after the kernel's (see
    /// [`KernelCode::run_with_row_sum`]).
    pub(crate) fn with_row_sum(
        shape: &[usize],
        inputs: &[(&[usize], usize)],
        insts: &[(super::fused::Inst, usize)],
        bounds: &[Option<(usize, f32)>],
        outputs: &[usize],
        sum: usize,
    ) -> Option<KernelCode> {
        if shape.last().is_none_or(|&row| row < 32) {
            return None;
        }
        Self::build(shape, inputs, insts, bounds, outputs, Some(sum))
    }

    fn build(
        shape: &[usize],
        inputs: &[(&[usize], usize)],
        insts: &[(super::fused::Inst, usize)],
        bounds: &[Option<(usize, f32)>],
        outputs: &[usize],
        sum: Option<usize>,
    ) -> Option<KernelCode> {
        let n: usize = shape.iter().product();
        if !oxla_codegen::available() || insts.is_empty() || n < MIN_ELEMENTS {
            return None;
        }
        let reg = |x: usize| u8::try_from(x).ok();
        // Registers read before any instruction writes them: the inputs in use. A broadcast
        // of the group that nothing reads still has an input, read as one value (it costs
        // one broadcast per chunk and its pattern does not matter).
        let mut written = vec![false; 256];
        let mut read = vec![false; 256];
        for (inst, d) in insts {
            for r in inst.sources() {
                if r < 256 && !written[r] {
                    read[r] = true;
                }
            }
            if *d < 256 {
                written[*d] = true;
            }
        }
        for &r in outputs.iter().chain(&sum) {
            if r < 256 && !written[r] {
                read[r] = true;
            }
        }
        let mut kinds = inputs
            .iter()
            .map(|&(strides, r)| match read.get(r) {
                Some(true) => classify(shape, strides),
                _ => Some(Input::Scalar),
            })
            .collect::<Option<Vec<_>>>()?;
        let mut row_len = shape.last().copied().unwrap_or(1);
        // Inputs read whole or as one value: one row of everything, no per-row steps
        // (unless the rows are summed).
        if sum.is_none()
            && kinds
                .iter()
                .all(|k| matches!(k, Input::Stream | Input::Scalar))
        {
            row_len = n.max(1);
        }
        // Rows of one element: a row vector is one value, one value per row is the stream.
        if row_len == 1 {
            for k in &mut kinds {
                *k = match *k {
                    Input::RowVector => Input::Scalar,
                    Input::RowScalar => Input::Stream,
                    other => other,
                };
            }
        }
        if sum.is_none()
            && kinds
                .iter()
                .any(|k| matches!(k, Input::Scalar | Input::RowScalar))
        {
            let named = inputs
                .iter()
                .map(|&(_, r)| r)
                .chain(
                    insts
                        .iter()
                        .flat_map(|(i, d)| i.sources().into_iter().chain([*d])),
                )
                .chain(outputs.iter().copied())
                .max()
                .map_or(0, |r| r + 1);
            // A program the generated code runs two chunks at a time stays that small.
            let limit = if named <= oxla_codegen::PAIRED_REGISTERS {
                oxla_codegen::PAIRED_REGISTERS
            } else {
                REGISTERS
            };
            match pinned_program(&kinds, inputs, insts, bounds, outputs, limit) {
                Some(program) => {
                    return Some(KernelCode(Arc::new(Inner {
                        program,
                        row_len,
                        code: OnceLock::new(),
                    })))
                }
                None if named > REGISTERS => return None,
                None => {}
            }
        }
        let mut program = TileProgram {
            inputs: kinds
                .into_iter()
                .zip(inputs)
                .map(|(kind, &(_, r))| Some((kind, reg(r)?)))
                .collect::<Option<_>>()?,
            insts: insts
                .iter()
                .enumerate()
                .map(|(i, (inst, d))| {
                    let bound = bounds.get(i).copied().flatten();
                    Some((translate(inst, bound)?, reg(*d)?))
                })
                .collect::<Option<_>>()?,
            outputs: outputs.iter().map(|&r| reg(r)).collect::<Option<_>>()?,
            row_sums: Vec::new(),
        };
        if let Some(sum) = sum {
            // The initial value: one more input, read as one value into a register of its
            // own.
            let init = reg(program.registers())?;
            program.inputs.push((Input::Scalar, init));
            program.row_sums.push((reg(sum)?, program.inputs.len() - 1));
        }
        Some(KernelCode(Arc::new(Inner {
            program,
            row_len,
            code: OnceLock::new(),
        })))
    }

    /// Runs a kernel built by [`KernelCode::with_row_sum`] over whole rows `start..end` (as
    /// elements): `inputs` as for [`KernelCode::run`] then the sum's initial value, `outs`
    /// the outputs' elements from `start`, `sums` one total per row from `start`'s row.
    /// `false`, with nothing written, when the code is off, did not compile, or an operand
    /// does not fit.
    pub(crate) fn run_with_row_sum(
        &self,
        inputs: &[&[f32]],
        outs: &mut [&mut [f32]],
        sums: &mut [f32],
        start: usize,
        end: usize,
    ) -> bool {
        let Some(code) = self.code() else {
            return false;
        };
        code.run_with_row_sums(inputs, outs, &mut [sums], start, end, self.0.row_len)
            == Some(end - start)
    }

    /// Runs elements `start..end` of the kernel: `inputs` the whole input values in the
    /// kernel's input order, `outs` the outputs' elements from `start`. Returns how many
    /// elements from `start` it computed (fewer than all where a `sin` or `cos` argument
    /// is beyond what the code reduces); `None`, with nothing written, when the code is
    /// off, did not compile, or an operand does not fit.
    pub(crate) fn run(
        &self,
        inputs: &[&[f32]],
        outs: &mut [&mut [f32]],
        start: usize,
        end: usize,
    ) -> Option<usize> {
        self.code()?.run(inputs, outs, start, end, self.0.row_len)
    }

    /// The code when generated code is on, compiled on first use; `None` when it is off or
    /// did not compile.
    fn code(&self) -> Option<&TileCode> {
        if !enabled() {
            return None;
        }
        self.0
            .code
            .get_or_init(|| TileCode::compile(&self.0.program))
            .as_ref()
    }
}

/// Counted loops with less work than this (iterations times 16-element chunks) keep the
/// register run: their generated code would take longer to compile than it saves.
const MIN_LOOP_WORK: u64 = 256;

// Generated loops and register runs split values into the same chunks.
const _: () = assert!(super::lane_group::LANES == oxla_codegen::CHUNK);

/// The generated-code form of a counted loop's register run
/// ([`LaneGroup::run_counted`]).
pub(crate) struct CountedCode {
    body: LoopBody,
    /// The slots of the body's inputs and of its carried values, in the body's order.
    input_slots: Vec<usize>,
    carried_slots: Vec<usize>,
    /// The code, compiled on first use (`None` when compiling failed).
    code: OnceLock<Option<LoopCode>>,
}

impl std::fmt::Debug for CountedCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountedCode")
            .field("body", &self.body)
            .field("input_slots", &self.input_slots)
            .field("carried_slots", &self.carried_slots)
            .finish_non_exhaustive()
    }
}

impl CountedCode {
    /// The generated form of `trips` iterations of `group` carrying `carried`; `None` when
    /// this machine has no code generator, the loop is too small to gain from it, or an op
    /// has no generated form.
    pub(crate) fn new(group: &LaneGroup, carried: &[Carried], trips: u64) -> Option<CountedCode> {
        let chunks = group.len().div_ceil(oxla_codegen::CHUNK) as u64;
        if !oxla_codegen::Target::Avx512.runs_here() || trips.saturating_mul(chunks) < MIN_LOOP_WORK
        {
            return None;
        }
        let (body, input_slots, carried_slots) = group.loop_body(carried)?;
        Some(CountedCode {
            body,
            input_slots,
            carried_slots,
            code: OnceLock::new(),
        })
    }

    /// Runs `trips` iterations over the chunks from element `from` of slot memory `mem`
    /// (values of `len` elements): where it ended, or `None`, with nothing run, when the
    /// code is off or did not compile.
    pub(crate) fn run(
        &self,
        mem: &mut [Vec<Block>],
        from: usize,
        len: usize,
        trips: u64,
    ) -> Option<LoopEnd> {
        if !enabled() {
            return None;
        }
        let code = self
            .code
            .get_or_init(|| LoopCode::compile(&self.body))
            .as_ref()?;
        // One borrow per slot: the inputs' shared, the carried values' exclusive.
        let mut inputs: Vec<Option<&[f32]>> = vec![None; self.input_slots.len()];
        let mut carried: Vec<Option<&mut [f32]>> = Vec::new();
        carried.resize_with(self.carried_slots.len(), || None);
        for (s, blocks) in mem.iter_mut().enumerate() {
            if let Some(k) = self.carried_slots.iter().position(|&c| c == s) {
                carried[k] = Some(bytemuck::cast_slice_mut(blocks.as_mut_slice()));
            } else if let Some(k) = self.input_slots.iter().position(|&i| i == s) {
                inputs[k] = Some(bytemuck::cast_slice(blocks.as_slice()));
            }
        }
        let inputs: Vec<&[f32]> = inputs.into_iter().collect::<Option<_>>()?;
        let mut carried: Vec<&mut [f32]> = carried.into_iter().collect::<Option<_>>()?;
        code.run(&inputs, &mut carried, from, len, trips)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::fused::Inst as F;

    /// A chain of `terms` Horner steps `p = p * x + c_k` over one streamed input (register
    /// 0) and one-value inputs `c_k` (registers `1..=terms`), each constant read once more
    /// at the end (`p + c_k`, from the last to the first) when `reuse` is set: its
    /// instructions (the inputs' registers are `0..=terms`).
    fn horner_kernel(terms: usize, reuse: bool) -> Vec<(F, usize)> {
        let mut insts = Vec::new();
        let mut next = terms + 1;
        let mut p = 1;
        for k in 2..=terms {
            insts.push((F::Binary(OpKind::Multiply, p, 0), next));
            insts.push((F::Binary(OpKind::Add, next, k), next + 1));
            p = next + 1;
            next += 2;
        }
        if reuse {
            for k in (1..=terms).rev() {
                insts.push((F::Binary(OpKind::Add, p, k), next));
                p = next;
                next += 1;
            }
        }
        insts
    }

    /// What [`horner_kernel`] computes at `x` with constants `c`, in plain f32.
    fn horner_reference(x: f32, c: &[f32], reuse: bool) -> f32 {
        let mut p = c[0];
        for &ck in &c[1..] {
            p = p * x + ck;
        }
        if reuse {
            for &ck in c.iter().rev() {
                p += ck;
            }
        }
        p
    }

    /// A kernel's one-value inputs keep registers no instruction writes, so the generated
    /// code loads them once per run: all of them when they fit, the most read ones when
    /// they do not (the rest loaded where they are read); either way the code computes the
    /// plain f32 chain's bits.
    #[test]
    fn one_value_inputs_stay_in_registers_that_fit() {
        if !available() {
            return;
        }
        let n = 40_000;
        let xs: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        for (terms, reuse) in [(3, false), (13, false), (13, true), (30, true)] {
            let insts = horner_kernel(terms, reuse);
            let registers: Vec<usize> = (0..=terms).collect();
            let consts: Vec<f32> = (0..terms).map(|k| 0.5 / (k as f32 + 1.0)).collect();
            let stream = [1usize];
            let one_value = [0usize];
            let inputs: Vec<(&[usize], usize)> = registers
                .iter()
                .map(|&r| (if r == 0 { &stream[..] } else { &one_value[..] }, r))
                .collect();
            let bounds = vec![None; insts.len()];
            let out = insts.last().map(|&(_, d)| d).unwrap();
            let code = KernelCode::new(&[n], &inputs, &insts, &bounds, &[out]).expect("kernel");
            let program = &code.0.program;
            let written: Vec<u8> = program.insts.iter().map(|&(_, d)| d).collect();
            let pinned = program
                .inputs
                .iter()
                .filter(|&&(kind, r)| kind == Input::Scalar && !written.contains(&r))
                .count();
            let on_demand = program
                .inputs
                .iter()
                .filter(|&&(kind, _)| kind == Input::OnDemand)
                .count();
            assert_eq!(pinned + on_demand, terms, "{terms} terms: {program:?}");
            assert!(program.registers() <= REGISTERS);
            if terms <= 13 {
                assert_eq!(pinned, terms, "{terms} terms fit: {program:?}");
            } else {
                // Beside the pinned constants: the stream, the chain's value, a constant
                // loaded where it is read and the step's result.
                assert_eq!(pinned, REGISTERS - 4, "{terms} terms: {program:?}");
            }
            if terms == 3 {
                assert!(program.registers() <= oxla_codegen::PAIRED_REGISTERS);
            }
            let mut values: Vec<Vec<f32>> = vec![xs.clone()];
            values.extend(consts.iter().map(|&c| vec![c]));
            let slices: Vec<&[f32]> = values.iter().map(|v| v.as_slice()).collect();
            let mut got = vec![0.0f32; n];
            assert_eq!(code.run(&slices, &mut [&mut got], 0, n), Some(n));
            for (x, g) in xs.iter().zip(&got) {
                let want = horner_reference(*x, &consts, reuse);
                assert_eq!(want.to_bits(), g.to_bits(), "{terms} terms at {x}");
            }
        }
    }

    /// Generated `exp`, `expm1`, `ln`, `ln(1 + x)`, `tanh`, `logistic`, `sin` and `cos`
    /// against the evaluator's, bit for bit, over special values, the clamping bounds,
    /// results that turn denormal or overflow, quadrant boundaries, the logarithm's mantissa
    /// split at sqrt 2 and `1 + x` around -1 and 1, and a sweep of the range.
    #[test]
    fn generated_math_gives_the_evaluators_bits() {
        if !available() {
            return;
        }
        let mut xs: Vec<f32> = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            -f32::from_bits(1),
            -104.0,
            -103.99,
            -104.01,
            89.0,
            88.73,
            88.72,
            89.01,
            -87.33,
            -87.34,
            -100.0,
            -126.0 * std::f32::consts::LN_2,
            10.0,
            -10.0,
            9.99,
            5.0,
            200.0,
            -200.0,
            1e-8,
            -1e-8,
        ];
        let mut bits = 0x2545_f491u32;
        for _ in 0..100_000 {
            bits ^= bits << 13;
            bits ^= bits >> 17;
            bits ^= bits << 5;
            xs.push(f32::from_bits(bits));
            xs.push((bits >> 8) as f32 / (1u32 << 24) as f32 * 220.0 - 110.0);
            xs.push((bits >> 8) as f32 / (1u32 << 24) as f32 * 24.0 - 12.0);
        }
        use super::super::fastmath;
        type Reference = fn(f32) -> f32;
        type Make = fn(u8) -> oxla_codegen::Inst;
        let cases: [(Make, Reference, &str); 8] = [
            (oxla_codegen::Inst::Exp, fastmath::exp, "exp"),
            (oxla_codegen::Inst::Expm1, fastmath::exp_m1, "expm1"),
            (oxla_codegen::Inst::Log, fastmath::ln, "log"),
            (oxla_codegen::Inst::Log1p, fastmath::ln_1p, "log1p"),
            (oxla_codegen::Inst::Tanh, fastmath::tanh, "tanh"),
            (oxla_codegen::Inst::Logistic, fastmath::logistic, "logistic"),
            (oxla_codegen::Inst::Sin, fastmath::sin, "sin"),
            (oxla_codegen::Inst::Cos, fastmath::cos, "cos"),
        ];
        // Arguments around multiples of pi/4 (where the quadrant changes) and up to the
        // trigonometric functions' bound; beyond it they stop (tested in oxla-codegen).
        for k in -200..200 {
            let x = k as f32 * std::f32::consts::FRAC_PI_4;
            let near = |d: i32| f32::from_bits(x.to_bits().wrapping_add_signed(d));
            xs.extend([x, near(1), near(-1)]);
        }
        xs.extend([65536.0, -65536.0, 65535.99, 1e4, 12345.678, -40000.5]);
        // ln's split of the mantissa at sqrt 2, arguments next to 1 (and 1 + x next to 0
        // and 1), and ln(1 + x) where 1 + x rounds to 1.
        for x in [
            std::f32::consts::SQRT_2,
            1.0,
            2.0,
            0.5,
            -1.0,
            1e-7,
            -1e-7,
            6e-8,
        ] {
            xs.extend((-40..40).map(|d| f32::from_bits(x.to_bits().wrapping_add_signed(d))));
        }
        // exp's denormal results (one rounding of a scaled value) and its overflow edge.
        xs.extend((0..20_000).map(|i| -104.0 + i as f32 * (17.0 / 20_000.0)));
        xs.extend((0..2_000).map(|i| 88.0 + i as f32 * (1.0 / 2_000.0)));
        // The argument and result registers: distinct, the same, and (on AVX2, whose
        // registers from 9 on live in memory) spilled, alone or both.
        let layouts = [(0u8, 1u8), (0, 0), (20, 21), (20, 20), (2, 12), (12, 2)];
        for (target, (make, reference, name)) in oxla_codegen::Target::here()
            .into_iter()
            .flat_map(|t| cases.map(|case| (t, case)))
        {
            let trig = make(0).may_stop();
            let xs: Vec<f32> = if trig {
                xs.iter().copied().filter(|x| x.abs() <= 65536.0).collect()
            } else {
                xs.clone()
            };
            let wants: Vec<f32> = xs.iter().map(|&x| reference(x)).collect();
            for (from, to) in layouts {
                let program = TileProgram {
                    inputs: vec![(Input::Stream, from)],
                    insts: vec![(make(from), to)],
                    outputs: vec![to],
                    row_sums: Vec::new(),
                };
                let code = TileCode::compile_for(&program, target).expect("compiles");
                let mut out = vec![0.0f32; xs.len()];
                let done = code.run(&[&xs], &mut [&mut out], 0, xs.len(), xs.len());
                assert_eq!(done, Some(xs.len()), "{target:?} {name}");
                for ((x, got), want) in xs.iter().zip(&out).zip(&wants) {
                    assert!(
                        want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()),
                        "{target:?} {name}({x:e}) from {from} to {to}: {want:e} against \
                         generated {got:e}"
                    );
                }
            }
        }
    }
}
