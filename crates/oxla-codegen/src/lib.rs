//! Machine code for fused f32 tile programs and elementwise counted loops.
//!
//! The evaluator's fused kernels run a tile program one instruction at a time: each
//! instruction is a loop over a whole tile that loads its operands from memory and stores its
//! result, so a chain of `n` ops stores every element `n` times. Where the CPU has AVX-512
//! (or AVX2, for most instructions: [`Target`]), [`TileCode::compile`] turns such a program
//! into one loop over the elements, row by row in 16-element (8-element) chunks, that keeps
//! every intermediate value in a vector register: per chunk, each input is loaded (or
//! broadcast) once, the instructions run register to register, and only the outputs are
//! stored. A one-value input (or one value per row) whose register no
//! instruction writes is broadcast once per run (or per row) instead of in every chunk. The
//! rest of a row runs under a lane mask, so any length is handled and nothing past a slice
//! is touched. [`LoopCode::compile`] does the same for a loop whose every iteration is such
//! a program over carried values (a `fori_loop` with an elementwise body): the carried
//! values stay in registers through all iterations of a chunk.
//!
//! The instructions are exact IEEE operations (add, subtract, multiply, divide, square root,
//! floor and ceiling, compares), bit operations (negate, absolute value, selects, masks held as 0.0/1.0), XLA's
//! `maximum`/`minimum`/`clamp` rules as lane masks, and the evaluator's `exp`, `expm1`,
//! `tanh`, `logistic`, `ln`, `ln(1 + x)`, `sin` and `cos` as their sequences of exactly
//! rounded steps: the same machine operations the interpreter's loops compile to, under the
//! same floating-point control register of the calling thread, so generated code computes
//! the interpreter's bits.
//! `sin` and `cos` cover a bounded range of arguments; on any other the code stops before
//! storing the chunk and reports how far it got, for the caller to finish its own way.
//! Programs with any other operation are not compiled, and the caller keeps its interpreter.
//!
//! This crate holds the code generator's `unsafe`: mapping the code executable and calling
//! it, after [`TileCode::run`] and [`LoopCode::run`] have checked every slice they hand over
//! against the elements the code reads and writes.

#[cfg(target_arch = "x86_64")]
mod divide_by;
mod scalar;
#[cfg(target_arch = "x86_64")]
mod x86;
#[cfg(target_arch = "x86_64")]
mod x86_avx2;
#[cfg(target_arch = "x86_64")]
mod x86_scalar;

pub use scalar::{
    convertible, scalar_available, Element, FloatOp, FloatType, FloatUnary, Index, IntOp, IntType,
    Num, OutOfRange, ScalarCode, ScalarLoop, ScalarOp,
};

#[cfg(target_arch = "x86_64")]
use smallvec::SmallVec;

/// An operation of a tile program, over registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inst {
    Add(u8, u8),
    Subtract(u8, u8),
    Multiply(u8, u8),
    Divide(u8, u8),
    /// The larger operand as XLA's CPU backend picks it: operands read with denormals
    /// flushed to their signed zero, NaN propagating (the first operand's when both are
    /// NaN), `+0` above `-0`.
    Maximum(u8, u8),
    /// The smaller operand, by the same rules as [`Inst::Maximum`] (`-0` below `+0`).
    Minimum(u8, u8),
    /// `(x, c, bits)`: [`Inst::Maximum`] of `x` and `c`, where register `c` holds the f32
    /// with these bits in every lane (a constant bound, such as `relu`'s zero or a clip's
    /// limits). Same result; a bound other than NaN and the zero (or denormals) that
    /// would tie with `x` by sign takes a sequence of two to five instructions instead of
    /// fifteen.
    MaximumOf(u8, u8, u32),
    /// [`Inst::Minimum`] of `x` and the constant `c`, as [`Inst::MaximumOf`].
    MinimumOf(u8, u8, u32),
    Negate(u8),
    Abs(u8),
    Sqrt(u8),
    /// `x` rounded down (or up, [`Inst::Ceil`]) to an integer, a denormal read as its
    /// signed zero first, as the interpreter reads it.
    Floor(u8),
    Ceil(u8),
    /// `1 / sqrt(x)`, rounded twice as the interpreter computes it.
    Rsqrt(u8),
    /// `e^x` by the evaluator's f32 algorithm (`fastmath::exp` in `oxla-ir`): `x` clamped
    /// to `[-104, 89]`, `k = round(x / ln 2)` by the `1.5 * 2^23` trick, `r = x - k ln 2`
    /// in two fused steps, a degree-6 polynomial in fused multiply-adds, `1 + r` with its
    /// rounding error, and the scale `2^k` applied as two halves. Every step is an exactly
    /// rounded operation, so the generated sequence gives the same bits.
    Exp(u8),
    /// `tanh(x)` by the evaluator's algorithm (`fastmath::tanh` in `oxla-ir`), in f32:
    /// with `a = min(|x|, 10)`, below [`TANH_SERIES_BELOW`] `a + a^3 P(a^2)` (`P` is
    /// [`TANH_SERIES`] by Horner's rule in fused multiply-adds, `a^3` rounded once, the last
    /// step fused), else `1 - 2 / (e + 1)` with `e` = [`Inst::Exp`] of `2a`; then the sign
    /// of `x`.
    Tanh(u8),
    /// `1 / (1 + e^-x)` by the evaluator's algorithm (`fastmath::logistic`), in f32: with
    /// `e` = [`Inst::Exp`] of `-|x|`, `1 / (1 + e)` where `x >= 0` and `e / (1 + e)` where
    /// `x < 0`.
    Logistic(u8),
    /// `e^x - 1` by the evaluator's algorithm (`fastmath::exp_m1`): in f64, `x` clamped to
    /// `[-110, 90]`, `x = k ln 2 + r` with `s = 2^k` and `q = expm1(r)` (a reduction by
    /// ln 2 and a degree-8 polynomial), then
    /// `s q + (s - 1)` rounded to f32 with the sign of `x`.
    Expm1(u8),
    /// `ln(x)` by the evaluator's algorithm (`fastmath::ln`): in f64, `x = 2^e m` with `m`
    /// in `[sqrt(1/2), sqrt(2))` taken from the exponent and mantissa bits, `ln m = 2
    /// atanh(f)` for `f = (m - 1) / (m + 1)` by its series through `f^11` in fused
    /// multiply-adds, `e ln 2` added; `-inf` at zero, NaN below zero and for NaN, `inf` at
    /// infinity; rounded to f32.
    Log(u8),
    /// `ln(1 + x)` by the evaluator's algorithm (`fastmath::ln_1p`): [`Inst::Log`]'s steps
    /// on `u = 1 + x` (rounded in f64), times `x / (u - 1)` (which corrects that rounding),
    /// or `x` itself where `u == 1`.
    Log1p(u8),
    /// `sin(x)` by the evaluator's algorithm (`fastmath::sin_reduced` in `oxla-ir`): in
    /// f64, `x = k pi/2 + r` with `pi/2` in three parts, Taylor polynomials of `sin r` and
    /// `cos r` in fused multiply-adds, the one the quadrant `k mod 4` picks, its sign, then
    /// rounded to f32. It covers `|x| <= 65536` only: a lane beyond that, or NaN, stops the
    /// code before the chunk holding it is stored (see [`TileCode::run`]), so the caller can
    /// compute those elements its own way.
    Sin(u8),
    /// `cos(x)`, as [`Inst::Sin`] (`fastmath::cos_reduced`), with the same bound.
    Cos(u8),
    /// `1.0` where the IEEE comparison holds, else `0.0` (false with a NaN, except `Ne`).
    Compare(Cmp, u8, u8),
    /// `1.0` where the operand is `0.0` (either sign), else `0.0`.
    Not(u8),
    /// `1.0` where the operand is finite (neither infinite nor NaN), else `0.0`.
    IsFinite(u8),
    /// `1.0` where both operands are nonzero (NaN counts as nonzero), else `0.0`.
    And(u8, u8),
    /// `1.0` where either operand is nonzero, else `0.0`.
    Or(u8, u8),
    /// `(p, t, f)`: `t` where `p` is nonzero, else `f`, bits unchanged.
    Select(u8, u8, u8),
    /// `(lo, x, hi)`: `min(max(x, lo), hi)` with [`Inst::Maximum`]'s NaN and signed-zero
    /// rules but no denormal flushing (XLA's `clamp` moves bits).
    Clamp(u8, u8, u8),
    /// The lanes' bits as 32-bit integers (s32 and u32 values share the lanes with f32
    /// ones): wrapping add, subtract and multiply.
    IntAdd(u8, u8),
    IntSubtract(u8, u8),
    IntMultiply(u8, u8),
    /// Bitwise and, or, xor and not of the lanes' bits.
    BitAnd(u8, u8),
    BitOr(u8, u8),
    BitXor(u8, u8),
    BitNot(u8),
    /// Shifts by the second operand's bits read as an unsigned count: a count of 32 or
    /// more gives 0 (left and logical right) or fills with the sign bit (arithmetic right),
    /// as XLA defines them.
    ShiftLeft(u8, u8),
    ShiftRightLogical(u8, u8),
    ShiftRightArithmetic(u8, u8),
    /// `(signed, a, b)`: the larger (or smaller) as signed or unsigned integers.
    IntMaximum(bool, u8, u8),
    IntMinimum(bool, u8, u8),
    /// `(signed, a, b)`: the quotient truncated toward zero, as XLA defines integer
    /// division: all ones for a zero divisor, and the smallest signed value divided by -1
    /// is itself.
    IntDivide(bool, u8, u8),
    /// `(signed, a, b)`: `a - (a / b) * b` with [`Inst::IntDivide`]'s quotient, wrapping
    /// (the smallest signed value by -1 gives 0); `a` for a zero divisor.
    IntRemainder(bool, u8, u8),
    /// `(signed, a, c)`: [`Inst::IntDivide`] and [`Inst::IntRemainder`] by the constant
    /// divisor `c` (its bits), without a division: shifts for a power of two, else the
    /// high half of a product by a multiplier, corrected and shifted.
    IntDivideBy(bool, u8, u32),
    IntRemainderBy(bool, u8, u32),
    /// Wrapping negation, and the absolute value of a signed integer (the smallest stays).
    IntNegate(u8),
    IntAbs(u8),
    /// `(signed, a)`: -1, 0 or 1 by the sign of `a` (0 or 1 when unsigned).
    IntSign(bool, u8),
    /// `(cmp, signed, a, b)`: `1.0` where the integer comparison holds, else `0.0`.
    IntCompare(Cmp, bool, u8, u8),
    /// `(signed, a)`: the integer as the nearest f32 (ties to even).
    IntToF32(bool, u8),
    /// `(signed, a)`: the f32 truncated to an integer, saturating at the type's bounds,
    /// NaN to 0 (Rust's `as`).
    F32ToInt(bool, u8),
    /// A `0.0`/`1.0` mask as the integer 0 or 1 (1 for any value other than zero).
    MaskToInt(u8),
    /// `1.0` where the integer is not 0, else `0.0`.
    IntToMask(u8),
    /// The first element of input `k` (an [`Input::OnDemand`] one) in every lane. Tile
    /// programs only; loops do not compile with it.
    LoadScalar(u8),
}

/// An IEEE comparison of [`Inst::Compare`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Inst {
    /// The registers the operation reads.
    pub fn sources(&self) -> Vec<u8> {
        match *self {
            Inst::Add(a, b)
            | Inst::Subtract(a, b)
            | Inst::Multiply(a, b)
            | Inst::Divide(a, b)
            | Inst::Maximum(a, b)
            | Inst::Minimum(a, b)
            | Inst::MaximumOf(a, b, _)
            | Inst::MinimumOf(a, b, _)
            | Inst::IntAdd(a, b)
            | Inst::IntSubtract(a, b)
            | Inst::IntMultiply(a, b)
            | Inst::BitAnd(a, b)
            | Inst::BitOr(a, b)
            | Inst::BitXor(a, b)
            | Inst::ShiftLeft(a, b)
            | Inst::ShiftRightLogical(a, b)
            | Inst::ShiftRightArithmetic(a, b)
            | Inst::IntMaximum(_, a, b)
            | Inst::IntMinimum(_, a, b)
            | Inst::IntDivide(_, a, b)
            | Inst::IntRemainder(_, a, b)
            | Inst::IntCompare(_, _, a, b)
            | Inst::Compare(_, a, b)
            | Inst::And(a, b)
            | Inst::Or(a, b) => vec![a, b],
            Inst::Negate(a)
            | Inst::Abs(a)
            | Inst::Sqrt(a)
            | Inst::Floor(a)
            | Inst::Ceil(a)
            | Inst::Rsqrt(a)
            | Inst::Exp(a)
            | Inst::Tanh(a)
            | Inst::Logistic(a)
            | Inst::Expm1(a)
            | Inst::Log(a)
            | Inst::Log1p(a)
            | Inst::Sin(a)
            | Inst::Cos(a)
            | Inst::Not(a)
            | Inst::IsFinite(a)
            | Inst::BitNot(a)
            | Inst::IntNegate(a)
            | Inst::IntAbs(a)
            | Inst::IntSign(_, a)
            | Inst::IntDivideBy(_, a, _)
            | Inst::IntRemainderBy(_, a, _)
            | Inst::IntToF32(_, a)
            | Inst::F32ToInt(_, a)
            | Inst::MaskToInt(a)
            | Inst::IntToMask(a) => vec![a],
            Inst::Select(a, b, c) | Inst::Clamp(a, b, c) => vec![a, b, c],
            Inst::LoadScalar(_) => vec![],
        }
    }

    /// Whether the operation covers only part of its arguments' range, stopping the code
    /// on the others ([`Inst::Sin`], [`Inst::Cos`]).
    pub fn may_stop(&self) -> bool {
        matches!(self, Inst::Sin(_) | Inst::Cos(_))
    }
}

/// How an input reaches its register in each chunk. Elements are numbered row-major over
/// rows of `row_len` elements (see [`TileCode::run`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// Element `i` of the input is the value at element `i`.
    Stream,
    /// Element `i` of the input is the value at `i % row_len`: one row for every row.
    RowVector,
    /// Element `i` of the input is the value at `i / row_len`: one value per row.
    RowScalar,
    /// The input's first element is the value everywhere.
    Scalar,
    /// As [`Input::Scalar`], but not loaded into a register per chunk: each
    /// [`Inst::LoadScalar`] of it loads it where an instruction needs it, so programs with
    /// many one-value inputs (constants folded into a long chain) fit the registers. Its
    /// register is ignored.
    OnDemand,
}

/// A straight-line program over vector registers, run once per chunk of elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileProgram {
    /// Per input, in the order [`TileCode::run`] takes them: how it is read and the
    /// register it is read into.
    pub inputs: Vec<(Input, u8)>,
    /// Instructions with their destination register, in order.
    pub insts: Vec<(Inst, u8)>,
    /// The register of each output, stored after the last instruction.
    pub outputs: Vec<u8>,
    /// Per row sum: the register whose values are summed along each row, and the input
    /// (read as one value) the sum starts from; [`TileCode::run_with_row_sums`] writes one
    /// total per row. The order is the evaluator's for rows of at least 32 elements: 32
    /// lanes, lane `j` adding elements `j`, `32 + j`, ... of the row's whole 32-element
    /// pieces in order; the lanes added pairwise (lane `j` plus lane `j + 16`, then `+ 8`,
    /// `+ 4`, `+ 2`, `+ 1`); the rest of the row added one element at a time; the initial
    /// value plus that total. Programs with row sums compile when they leave two registers
    /// per sum in a pair of chunks (at most 8 registers with the accumulators) and have no
    /// instruction that may stop.
    pub row_sums: Vec<(u8, usize)>,
}

impl TileProgram {
    /// How many registers the program names (one more than the highest).
    pub fn registers(&self) -> usize {
        let inputs = self.inputs.iter().map(|&(_, r)| r);
        let insts = self
            .insts
            .iter()
            .flat_map(|(inst, d)| inst.sources().into_iter().chain([*d]));
        inputs
            .chain(insts)
            .chain(self.outputs.iter().copied())
            .chain(self.row_sums.iter().map(|&(r, _)| r))
            .map(|r| usize::from(r) + 1)
            .max()
            .unwrap_or(0)
    }
}

/// Generated code for one [`TileProgram`].
pub struct TileCode {
    #[cfg(target_arch = "x86_64")]
    code: x86::Code,
    inputs: Vec<Input>,
    outputs: usize,
    row_sums: usize,
}

impl std::fmt::Debug for TileCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TileCode")
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish_non_exhaustive()
    }
}

/// An instruction set tile programs are generated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// AVX-512F and BMI2: every [`Inst`], 16-element chunks, loops ([`LoopCode`]).
    Avx512,
    /// AVX2 and FMA: every [`Inst`], 8-element chunks; tile programs only.
    Avx2,
}

impl Target {
    /// The targets this machine runs, best first.
    pub fn here() -> Vec<Target> {
        [Target::Avx512, Target::Avx2]
            .into_iter()
            .filter(|t| t.runs_here())
            .collect()
    }

    /// The best target this machine runs.
    pub fn best() -> Option<Target> {
        Target::here().first().copied()
    }

    /// Whether this machine has the target's instructions.
    pub fn runs_here(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                Target::Avx512 => x86::available(),
                Target::Avx2 => x86_avx2::available(),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }
}

/// Whether this machine runs generated tile programs (x86-64 with AVX-512F and BMI2, or
/// with AVX2 and FMA).
pub fn available() -> bool {
    Target::best().is_some()
}

/// Whether this machine runs generated loops ([`LoopCode`]: AVX-512).
pub fn loops_available() -> bool {
    Target::best() == Some(Target::Avx512)
}

impl TileCode {
    /// Compiles `program` for this machine's best target; `None` when this machine has no
    /// code generator, the program needs more registers than the generator has, or reads
    /// a register no input or earlier instruction wrote.
    pub fn compile(program: &TileProgram) -> Option<TileCode> {
        TileCode::compile_for(program, Target::best()?)
    }

    /// [`TileCode::compile`] for `target`; `None` too when this machine does not run it.
    pub fn compile_for(program: &TileProgram, target: Target) -> Option<TileCode> {
        if !target.runs_here() || !defined_before_use(program) {
            return None;
        }
        #[cfg(target_arch = "x86_64")]
        {
            let code = match target {
                Target::Avx512 => x86::compile(program)?,
                Target::Avx2 => x86_avx2::compile(program)?,
            };
            Some(TileCode {
                code,
                inputs: program.inputs.iter().map(|&(kind, _)| kind).collect(),
                outputs: program.outputs.len(),
                row_sums: program.row_sums.len(),
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }

    /// Runs the program over elements `start..end` of values laid out as rows of
    /// `row_len` elements: `inputs` in program order, each the whole value its [`Input`]
    /// kind indexes, and `outs` the outputs' elements from `start`. Returns how many
    /// elements from `start` it computed: all of them, or fewer when an instruction that
    /// may stop ([`Inst::may_stop`]) met an argument it does not cover; the outputs then
    /// hold exactly those elements, and the rest is left to the caller. `None`, with
    /// nothing written, when the counts do not match the program (a program with row sums
    /// runs through [`TileCode::run_with_row_sums`]) or a slice is too short for the
    /// elements it must provide.
    pub fn run(
        &self,
        inputs: &[&[f32]],
        outs: &mut [&mut [f32]],
        start: usize,
        end: usize,
        row_len: usize,
    ) -> Option<usize> {
        self.run_with_row_sums(inputs, outs, &mut [], start, end, row_len)
    }

    /// [`TileCode::run`] for a program with row sums: `sums` holds one slice per row sum,
    /// receiving the totals of rows `start / row_len..end / row_len` from its start.
    /// `start` and `end` must fall on row boundaries, and rows hold at least 32 elements.
    pub fn run_with_row_sums(
        &self,
        inputs: &[&[f32]],
        outs: &mut [&mut [f32]],
        sums: &mut [&mut [f32]],
        start: usize,
        end: usize,
        row_len: usize,
    ) -> Option<usize> {
        if end < start || row_len == 0 || sums.len() != self.row_sums {
            return None;
        }
        if self.row_sums > 0
            && (row_len < 32
                || !start.is_multiple_of(row_len)
                || !end.is_multiple_of(row_len)
                || sums.iter().any(|s| s.len() < (end - start) / row_len))
        {
            return None;
        }
        let rows = end.div_ceil(row_len);
        let fits = |(input, kind): (&&[f32], &Input)| {
            input.len()
                >= match kind {
                    Input::Stream => end,
                    Input::RowVector => row_len.min(end),
                    Input::RowScalar => rows,
                    Input::Scalar | Input::OnDemand => 1,
                }
        };
        if inputs.len() != self.inputs.len()
            || outs.len() != self.outputs
            || !inputs.iter().zip(&self.inputs).all(fits)
            || outs.iter().any(|o| o.len() < end - start)
        {
            return None;
        }
        if end == start {
            return Some(0);
        }
        #[cfg(target_arch = "x86_64")]
        {
            let input_ptrs: SmallVec<[*const f32; 8]> = inputs.iter().map(|s| s.as_ptr()).collect();
            let out_ptrs: SmallVec<[*mut f32; 8]> =
                outs.iter_mut().map(|o| o.as_mut_ptr()).collect();
            let sum_ptrs: SmallVec<[*mut f32; 4]> =
                sums.iter_mut().map(|o| o.as_mut_ptr()).collect();
            let args = x86::Args {
                inputs: input_ptrs.as_ptr(),
                outs: out_ptrs.as_ptr(),
                start,
                end,
                row_len,
                row: start / row_len,
                col: start % row_len,
                sums: sum_ptrs.as_ptr(),
            };
            // SAFETY: the code reads, per input kind, elements below `end`, `row_len` or
            // `end.div_ceil(row_len)` (or element 0), writes elements `0..end - start` of
            // each output and, with row sums, elements `0..(end - start) / row_len` of each
            // sum (whole rows, checked above), all inside the slices; the pointer arrays
            // have the counts the program was compiled for.
            let done = unsafe { self.code.call(&args) };
            Some(done.min(end - start))
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }
}

/// A loop of many iterations of one straight-line program over vectors, each element's
/// iterations depending on that element alone (a `fori_loop` whose body is elementwise):
/// the generated code keeps the loop-carried values in registers from one iteration to the
/// next, chunk by chunk, and stores only their final values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopBody {
    /// Values the loop reads and never changes, in the order [`LoopCode::run`] takes them:
    /// each read whole ([`Input::Stream`]) or as one value ([`Input::Scalar`]), with the
    /// register it is read into once per chunk.
    pub inputs: Vec<(Input, u8)>,
    /// Per loop-carried value, in the order [`LoopCode::run`] takes them: the register that
    /// holds it at the start of an iteration (read from its slice before the first), and
    /// the register holding its next value once the instructions have run.
    pub carried: Vec<(u8, u8)>,
    /// One iteration's instructions with their destination register, in order. They
    /// write neither an input's register nor a carried value's.
    pub insts: Vec<(Inst, u8)>,
}

/// How a [`LoopCode::run`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopEnd {
    /// Every element ran every iteration; the carried slices hold the final values.
    Finished,
    /// An instruction that may stop ([`Inst::may_stop`]) met an argument it does not
    /// cover in iteration `trips_done` (counting from zero) of the chunk of elements
    /// starting at `chunk`: that chunk's carried values are those before that iteration,
    /// the elements before `chunk` are finished and those after it untouched.
    Stopped { chunk: usize, trips_done: u64 },
}

/// Generated code for one [`LoopBody`].
pub struct LoopCode {
    #[cfg(target_arch = "x86_64")]
    code: x86::Code,
    inputs: Vec<Input>,
    carried: usize,
}

impl std::fmt::Debug for LoopCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopCode")
            .field("inputs", &self.inputs)
            .field("carried", &self.carried)
            .finish_non_exhaustive()
    }
}

/// Elements per chunk of generated code (one 512-bit vector of f32).
pub const CHUNK: usize = 16;

/// Tile programs naming at most this many registers run two chunks at a time, their
/// instructions interleaved (two independent chains keep the vector units busy through
/// long dependent sequences such as `exp`'s).
pub const PAIRED_REGISTERS: usize = 8;

/// Where [`Inst::Tanh`] (and the evaluator's `tanh`) changes from its series to its
/// exponential: from here `1 - 2 / (e^(2a) + 1)` is within an ulp.
pub const TANH_SERIES_BELOW: f32 = 0.85;

/// `(tanh(a) / a - 1) / a^2` on `[0, TANH_SERIES_BELOW]` as a polynomial in `a^2` (fitted
/// to a weighted error below 8e-9 relative to `tanh(a)`), constant term first.
pub const TANH_SERIES: [f32; 6] = [
    -0.333_332_66,
    0.133_314_79,
    -0.053_796_463,
    0.021_121_09,
    -0.007_142_826,
    0.001_440_178_8,
];

impl LoopCode {
    /// Compiles `body`; `None` when this machine has no code generator, the body needs more
    /// registers than the generator has, reads a register nothing wrote, writes an input's
    /// or a carried value's register, or reads an input in another way than whole or as
    /// one value.
    pub fn compile(body: &LoopBody) -> Option<LoopCode> {
        if !Target::Avx512.runs_here() {
            return None;
        }
        let fixed: Vec<u8> = body
            .inputs
            .iter()
            .map(|&(_, r)| r)
            .chain(body.carried.iter().map(|&(state, _)| state))
            .collect();
        let program = TileProgram {
            inputs: fixed.iter().map(|&r| (Input::Stream, r)).collect(),
            insts: body.insts.clone(),
            outputs: body.carried.iter().map(|&(_, next)| next).collect(),
            row_sums: Vec::new(),
        };
        let distinct = fixed
            .iter()
            .enumerate()
            .all(|(k, r)| !fixed[..k].contains(r));
        if !distinct
            || !defined_before_use(&program)
            || body.insts.iter().any(|(_, d)| fixed.contains(d))
            || body
                .insts
                .iter()
                .any(|(inst, _)| matches!(inst, Inst::LoadScalar(_)))
            || body
                .inputs
                .iter()
                .any(|(kind, _)| !matches!(kind, Input::Stream | Input::Scalar))
        {
            return None;
        }
        #[cfg(target_arch = "x86_64")]
        {
            Some(LoopCode {
                code: x86::compile_loop(body, program.registers())?,
                inputs: body.inputs.iter().map(|&(kind, _)| kind).collect(),
                carried: body.carried.len(),
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }

    /// Runs `trips` iterations on elements `from..len`, chunk by chunk from `from` (a
    /// multiple of [`CHUNK`]): `inputs` the loop's inputs in body order (whole values of
    /// `len` elements, or one value), `carried` the carried values of `len` elements,
    /// read before the first iteration and holding the values after the last. `None`,
    /// with nothing written, when the counts do not match the body or a slice is short.
    pub fn run(
        &self,
        inputs: &[&[f32]],
        carried: &mut [&mut [f32]],
        from: usize,
        len: usize,
        trips: u64,
    ) -> Option<LoopEnd> {
        let fits = |(input, kind): (&&[f32], &Input)| {
            input.len()
                >= match kind {
                    Input::Scalar => 1,
                    _ => len,
                }
        };
        if inputs.len() != self.inputs.len()
            || carried.len() != self.carried
            || !inputs.iter().zip(&self.inputs).all(fits)
            || carried.iter().any(|c| c.len() < len)
            || !from.is_multiple_of(CHUNK)
        {
            return None;
        }
        if from >= len || trips == 0 {
            return Some(LoopEnd::Finished);
        }
        #[cfg(target_arch = "x86_64")]
        {
            let input_ptrs: SmallVec<[*const f32; 8]> = inputs.iter().map(|s| s.as_ptr()).collect();
            let carried_ptrs: SmallVec<[*mut f32; 8]> =
                carried.iter_mut().map(|c| c.as_mut_ptr()).collect();
            let mut args = x86::LoopArgs {
                inputs: input_ptrs.as_ptr(),
                carried: carried_ptrs.as_ptr(),
                from,
                len,
                trips,
                stopped_chunk: 0,
                trips_done: 0,
            };
            // SAFETY: the code reads elements below `len` of each whole input (element 0 of
            // one-value inputs) and reads and writes elements below `len` of each carried
            // slice, all checked above; the pointer arrays have the counts the body was
            // compiled for, and the carried slices are distinct `&mut` borrows.
            let stopped = unsafe { self.code.call_loop(&mut args) };
            Some(if stopped {
                LoopEnd::Stopped {
                    chunk: args.stopped_chunk,
                    trips_done: args.trips_done,
                }
            } else {
                LoopEnd::Finished
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }
}

/// Whether every register the program reads was written earlier in the chunk (by an input
/// or an instruction), so generated code never reads a stale register.
fn defined_before_use(program: &TileProgram) -> bool {
    let mut defined = [false; 256];
    for &(_, r) in &program.inputs {
        defined[usize::from(r)] = true;
    }
    for (inst, d) in &program.insts {
        if inst.sources().iter().any(|&r| !defined[usize::from(r)]) {
            return false;
        }
        defined[usize::from(*d)] = true;
    }
    let sums_ok = program.row_sums.iter().all(|&(r, init)| {
        defined[usize::from(r)] && matches!(program.inputs.get(init), Some((Input::Scalar, _)))
    });
    sums_ok && program.outputs.iter().all(|&r| defined[usize::from(r)])
}
