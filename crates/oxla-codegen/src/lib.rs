//! Machine code for fused f32 tile programs.
//!
//! The evaluator's fused kernels run a tile program one instruction at a time: each
//! instruction is a loop over a whole tile that loads its operands from memory and stores its
//! result, so a chain of `n` ops stores every element `n` times. Where the CPU has AVX-512,
//! [`TileCode::compile`] turns such a program into one loop over the elements, row by row in
//! 16-element chunks, that keeps every intermediate value in a vector register: per chunk,
//! each input is loaded (or broadcast) once, the instructions run register to register, and
//! only the outputs are stored. The rest of a row runs under a lane mask, so any length is
//! handled and nothing past a slice is touched.
//!
//! The instructions are exact IEEE operations (add, subtract, multiply, divide, square root,
//! compares), bit operations (negate, absolute value, selects, masks held as 0.0/1.0), XLA's
//! `maximum`/`minimum`/`clamp` rules as lane masks, and the evaluator's `exp`, `tanh` and
//! `logistic` as their sequences of exactly rounded steps: the same machine operations the
//! interpreter's loops compile to, under the same floating-point control register of the
//! calling thread, so generated code computes the interpreter's bits. Programs with any other
//! operation are not compiled, and the caller keeps its interpreter.
//!
//! This crate holds the code generator's `unsafe`: mapping the code executable and calling
//! it, after [`TileCode::run`] has checked every slice it hands over against the elements
//! the code reads and writes.

#[cfg(target_arch = "x86_64")]
mod x86;

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
    Negate(u8),
    Abs(u8),
    Sqrt(u8),
    /// `1 / sqrt(x)`, rounded twice as the interpreter computes it.
    Rsqrt(u8),
    /// `e^x` by the evaluator's f32 algorithm (`fastmath::exp` in `oxla-ir`): `x` clamped
    /// to `[-104, 89]`, `k = round(x / ln 2)` by the `1.5 * 2^23` trick, `r = x - k ln 2`
    /// in two fused steps, a degree-6 polynomial in fused multiply-adds, `1 + r` with its
    /// rounding error, and the scale `2^k` applied as two halves. Every step is an exactly
    /// rounded operation, so the generated sequence gives the same bits.
    Exp(u8),
    /// `tanh(x)` by the evaluator's algorithm (`fastmath::tanh` in `oxla-ir`): in f64,
    /// `e = expm1(2 min(|x|, 10))` from a reduction by ln 2 and a degree-8 polynomial, then
    /// `e / (e + 2)` rounded to f32 with the sign of `x`.
    Tanh(u8),
    /// `1 / (1 + e^-x)` by the evaluator's algorithm (`fastmath::logistic`): in f64, with
    /// `-x` clamped to `[-200, 200]` and the same `e^y` parts as [`Inst::Tanh`].
    Logistic(u8),
    /// `1.0` where the IEEE comparison holds, else `0.0` (false with a NaN, except `Ne`).
    Compare(Cmp, u8, u8),
    /// `1.0` where the operand is `0.0` (either sign), else `0.0`.
    Not(u8),
    /// `1.0` where both operands are nonzero (NaN counts as nonzero), else `0.0`.
    And(u8, u8),
    /// `1.0` where either operand is nonzero, else `0.0`.
    Or(u8, u8),
    /// `(p, t, f)`: `t` where `p` is nonzero, else `f`, bits unchanged.
    Select(u8, u8, u8),
    /// `(lo, x, hi)`: `min(max(x, lo), hi)` with [`Inst::Maximum`]'s NaN and signed-zero
    /// rules but no denormal flushing (XLA's `clamp` moves bits).
    Clamp(u8, u8, u8),
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
            | Inst::Compare(_, a, b)
            | Inst::And(a, b)
            | Inst::Or(a, b) => vec![a, b],
            Inst::Negate(a)
            | Inst::Abs(a)
            | Inst::Sqrt(a)
            | Inst::Rsqrt(a)
            | Inst::Exp(a)
            | Inst::Tanh(a)
            | Inst::Logistic(a)
            | Inst::Not(a) => vec![a],
            Inst::Select(a, b, c) | Inst::Clamp(a, b, c) => vec![a, b, c],
        }
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
}

impl std::fmt::Debug for TileCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TileCode")
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish_non_exhaustive()
    }
}

/// Whether this machine runs generated code (x86-64 with AVX-512F and BMI2).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        x86::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

impl TileCode {
    /// Compiles `program`; `None` when this machine has no code generator, the program
    /// needs more registers than the generator has, or it reads a register no input or
    /// earlier instruction wrote.
    pub fn compile(program: &TileProgram) -> Option<TileCode> {
        if !available() || !defined_before_use(program) {
            return None;
        }
        #[cfg(target_arch = "x86_64")]
        {
            Some(TileCode {
                code: x86::compile(program)?,
                inputs: program.inputs.iter().map(|&(kind, _)| kind).collect(),
                outputs: program.outputs.len(),
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }

    /// Runs the program over elements `start..end` of values laid out as rows of
    /// `row_len` elements: `inputs` in program order, each the whole value its [`Input`]
    /// kind indexes, and `outs` the outputs' elements from `start`. `false`, with nothing
    /// written, when the counts do not match the program or a slice is too short for the
    /// elements it must provide.
    pub fn run(
        &self,
        inputs: &[&[f32]],
        outs: &mut [&mut [f32]],
        start: usize,
        end: usize,
        row_len: usize,
    ) -> bool {
        if end < start || row_len == 0 {
            return false;
        }
        let rows = end.div_ceil(row_len);
        let fits = |(input, kind): (&&[f32], &Input)| {
            input.len()
                >= match kind {
                    Input::Stream => end,
                    Input::RowVector => row_len.min(end),
                    Input::RowScalar => rows,
                    Input::Scalar => 1,
                }
        };
        if inputs.len() != self.inputs.len()
            || outs.len() != self.outputs
            || !inputs.iter().zip(&self.inputs).all(fits)
            || outs.iter().any(|o| o.len() < end - start)
        {
            return false;
        }
        if end == start {
            return true;
        }
        #[cfg(target_arch = "x86_64")]
        {
            let input_ptrs: SmallVec<[*const f32; 8]> = inputs.iter().map(|s| s.as_ptr()).collect();
            let out_ptrs: SmallVec<[*mut f32; 8]> =
                outs.iter_mut().map(|o| o.as_mut_ptr()).collect();
            let args = x86::Args {
                inputs: input_ptrs.as_ptr(),
                outs: out_ptrs.as_ptr(),
                start,
                end,
                row_len,
                row: start / row_len,
                col: start % row_len,
            };
            // SAFETY: the code reads, per input kind, elements below `end`, `row_len` or
            // `end.div_ceil(row_len)` (or element 0), and writes elements `0..end - start`
            // of each output, all checked above; the pointer arrays have the counts the
            // program was compiled for.
            unsafe { self.code.call(&args) };
            true
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
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
    program.outputs.iter().all(|&r| defined[usize::from(r)])
}
