//! AVX2 code for tile programs, for x86-64 CPUs without AVX-512 (AVX2 and FMA).
//!
//! The function has [`x86`](super::x86)'s signature and walks elements the same way, row
//! by row, in 8-element chunks; the rest of a row runs once under a lane mask held as a
//! vector (`vmaskmovps` loads and stores only its lanes, so nothing past a slice's end is
//! touched). With 16 vector registers, program registers `0..9` live in `ymm0` to `ymm8`
//! and the others in stack slots; `ymm9` to `ymm15` are scratch, the last three also the
//! registers a spilled operand is loaded into (and a spilled result computed in). Lane
//! conditions are vectors of all-ones lanes, never held between instructions: a compare
//! writes its `1.0`/`0.0` register at once and a select compares its condition again.
//!
//! It covers the instructions whose exact IEEE sequences need no AVX-512 operation
//! ([`covers`]); a program with any other instruction is left to the AVX-512 generator or
//! the caller's interpreter. The instruction sequences are the AVX-512 generator's, step
//! for step, so both compute the interpreter's bits.
//!
//! General registers as in `x86`: `r8` the input pointer array, `r9` the output pointer
//! array, `rcx` the element index, `r10` the end, `r11` the row length, `rbx` the row,
//! `r12` the column, `r13` the output index, `r14` what is left of the row's segment, `r15`
//! the constants after the code, `rbp` the first row, `rdi` the row sums' pointer array,
//! `rax`, `rdx` and `rsi` scratch; `rsp` the frame of spilled registers and row-sum state.

use super::x86::{
    advance, invariant_inputs, Args, Code, EQ_OQ, GE_OQ, GT_OQ, K, LE_OQ, LT_OQ, NEQ_UQ, NGE_UQ,
    NGT_UQ, NLE_UQ, NLT_UQ, ORD_Q, POOL, UNORD_Q,
};
use super::{Cmp, Input, Inst, TileProgram};
use iced_x86::code_asm::*;

/// Program registers a program may name, as for AVX-512.
const PROGRAM_REGISTERS: usize = 24;

/// Program registers kept in vector registers; the rest are spilled.
const IN_REGISTERS: usize = 9;

const YMM: [AsmRegisterYmm; 16] = [
    ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7, ymm8, ymm9, ymm10, ymm11, ymm12, ymm13, ymm14,
    ymm15,
];

/// Scratch registers. An instruction's spilled operands are loaded into `S[6]`, `S[5]`
/// and `S[4]` (first, second, third), and a spilled result is computed in `S[6]`; so a
/// unary instruction may use `S[0..6]`, a binary one `S[0..5]`, a ternary one `S[0..4]`.
const S: [AsmRegisterYmm; 7] = [ymm9, ymm10, ymm11, ymm12, ymm13, ymm14, ymm15];

const XMM: [AsmRegisterXmm; 16] = [
    xmm0, xmm1, xmm2, xmm3, xmm4, xmm5, xmm6, xmm7, xmm8, xmm9, xmm10, xmm11, xmm12, xmm13, xmm14,
    xmm15,
];

/// Bytes of one vector slot.
const SLOT: i32 = 32;

/// Where the constants begin after the code: [`POOL`] with each value in all 8 lanes, then
/// 8 all-ones lanes and 8 zero lanes (whose window at `8 - n` is the mask of `n` lanes).
const MASK_TABLE: i32 = POOL.len() as i32 * SLOT;

/// Whether this machine runs AVX2 tile code.
pub(crate) fn available() -> bool {
    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
}

/// Whether the AVX2 generator has a sequence for `inst`.
pub(crate) fn covers(inst: &Inst) -> bool {
    !matches!(
        inst,
        Inst::Expm1(_)
            | Inst::Log(_)
            | Inst::Log1p(_)
            | Inst::Sin(_)
            | Inst::Cos(_)
            | Inst::IntDivide(..)
            | Inst::IntRemainder(..)
            | Inst::IntDivideBy(..)
            | Inst::IntRemainderBy(..)
            | Inst::IntToF32(false, _)
            | Inst::F32ToInt(false, _)
    )
}

pub(crate) fn compile(program: &TileProgram) -> Option<Code> {
    if program.registers() > PROGRAM_REGISTERS || !program.insts.iter().all(|(i, _)| covers(i)) {
        return None;
    }
    super::x86::load(&assemble(program).ok()?)
}

/// The stack frame: spilled program registers, then per row sum its four 8-lane
/// accumulators and its running total, then one chunk's summed values, the tail mask and
/// `tanh`'s three waiting values.
struct Frame {
    sums: usize,
}

impl Frame {
    fn spilled(r: u8) -> i32 {
        (i32::from(r) - IN_REGISTERS as i32) * SLOT
    }
    fn spill_slots() -> i32 {
        (PROGRAM_REGISTERS - IN_REGISTERS) as i32 * SLOT
    }
    fn accumulator(&self, sum: usize, k: usize) -> AsmMemoryOperand {
        ymmword_ptr(rsp + Self::spill_slots() + (5 * sum + k) as i32 * SLOT)
    }
    fn total(&self, sum: usize) -> AsmMemoryOperand {
        dword_ptr(rsp + Self::spill_slots() + (5 * sum + 4) as i32 * SLOT)
    }
    fn values(&self) -> i32 {
        Self::spill_slots() + 5 * self.sums as i32 * SLOT
    }
    fn tail_mask(&self) -> AsmMemoryOperand {
        ymmword_ptr(rsp + self.values() + SLOT)
    }
    fn waiting(&self, k: i32) -> AsmMemoryOperand {
        ymmword_ptr(rsp + self.values() + (2 + k) * SLOT)
    }
    fn bytes(&self) -> i32 {
        // Keeps `rsp` as aligned as it was (six pushes and the return address leave it at
        // 8 mod 16; alignment does not matter to the unaligned moves used).
        self.values() + 5 * SLOT
    }
}

/// Constant `k` in all 8 lanes, as a memory operand.
fn constant(k: K) -> AsmMemoryOperand {
    ymmword_ptr(r15 + SLOT * k as i32)
}

/// Fills every lane of `y` with constant `k`.
fn splat(a: &mut CodeAssembler, y: AsmRegisterYmm, k: K) -> Result<(), IcedError> {
    a.vmovups(y, constant(k))
}

/// How a chunk reaches its registers: whether it runs under the tail mask, and the frame.
#[derive(Clone, Copy)]
struct Chunk<'f> {
    masked: bool,
    frame: &'f Frame,
}

/// Program register `r` as an operand: its vector register, or its slot loaded into
/// `temp`.
fn source(a: &mut CodeAssembler, r: u8, temp: AsmRegisterYmm) -> Result<AsmRegisterYmm, IcedError> {
    if usize::from(r) < IN_REGISTERS {
        return Ok(YMM[usize::from(r)]);
    }
    a.vmovups(temp, ymmword_ptr(rsp + Frame::spilled(r)))?;
    Ok(temp)
}

/// Where an instruction writing program register `r` computes: its vector register, or
/// `S[6]` (stored by [`finish`]).
fn destination(r: u8) -> AsmRegisterYmm {
    if usize::from(r) < IN_REGISTERS {
        YMM[usize::from(r)]
    } else {
        S[6]
    }
}

/// Stores a spilled register's new value from `S[6]`.
fn finish(a: &mut CodeAssembler, r: u8) -> Result<(), IcedError> {
    if usize::from(r) >= IN_REGISTERS {
        a.vmovups(ymmword_ptr(rsp + Frame::spilled(r)), S[6])?;
    }
    Ok(())
}

/// Loads each input `k` that `wanted` picks into its register: element `rcx` of a stream,
/// column `r12` of a row vector, row `rbx` of one value per row, or the one value.
fn load_inputs(
    a: &mut CodeAssembler,
    inputs: &[(Input, u8)],
    wanted: impl Fn(usize) -> bool,
    chunk: Chunk,
) -> Result<(), IcedError> {
    if chunk.masked {
        a.vmovups(S[0], chunk.frame.tail_mask())?;
    }
    for (k, &(kind, r)) in inputs.iter().enumerate() {
        if kind == Input::OnDemand || !wanted(k) {
            continue;
        }
        let dst = destination(r);
        a.mov(rax, qword_ptr(r8 + 8 * k as i32))?;
        let load = |a: &mut CodeAssembler, src: AsmMemoryOperand| {
            if chunk.masked {
                a.vmaskmovps(dst, S[0], src)
            } else {
                a.vmovups(dst, src)
            }
        };
        match kind {
            Input::Stream => load(a, ymmword_ptr(rax + rcx * 4))?,
            Input::RowVector => load(a, ymmword_ptr(rax + r12 * 4))?,
            Input::RowScalar => a.vbroadcastss(dst, dword_ptr(rax + rbx * 4))?,
            Input::Scalar => a.vbroadcastss(dst, dword_ptr(rax))?,
            Input::OnDemand => {}
        }
        finish(a, r)?;
    }
    Ok(())
}

/// Stores each output register to its pointer at element `r13`.
fn store(a: &mut CodeAssembler, outputs: &[u8], chunk: Chunk) -> Result<(), IcedError> {
    if chunk.masked {
        a.vmovups(S[0], chunk.frame.tail_mask())?;
    }
    for (k, &r) in outputs.iter().enumerate() {
        let src = source(a, r, S[6])?;
        a.mov(rax, qword_ptr(r9 + 8 * k as i32))?;
        let dst = ymmword_ptr(rax + r13 * 4);
        if chunk.masked {
            a.vmaskmovps(dst, S[0], src)?;
        } else {
            a.vmovups(dst, src)?;
        }
    }
    Ok(())
}

/// The instructions, each from its operands (loaded if spilled) to its destination (stored
/// if spilled).
fn body(a: &mut CodeAssembler, insts: &[(Inst, u8)], frame: &Frame) -> Result<(), Error> {
    for &(inst, dr) in insts {
        let sources = inst.sources();
        let mut ops = [S[6]; 3];
        for (k, &r) in sources.iter().enumerate() {
            ops[k] = source(a, r, S[6 - k])?;
        }
        let [x, y, w] = ops;
        let d = destination(dr);
        let [s0, s1, s2, s3, s4, ..] = S;
        match inst {
            Inst::Add(..) => a.vaddps(d, x, y)?,
            Inst::Subtract(..) => a.vsubps(d, x, y)?,
            Inst::Multiply(..) => a.vmulps(d, x, y)?,
            Inst::Divide(..) => a.vdivps(d, x, y)?,
            Inst::Negate(_) => a.vxorps(d, x, constant(K::Sign))?,
            Inst::Abs(_) => a.vandps(d, x, constant(K::Magnitude))?,
            Inst::Sqrt(_) => a.vsqrtps(d, x)?,
            Inst::Floor(_) | Inst::Ceil(_) => {
                // A denormal becomes its signed zero, then the rounding (down: mode 1, up:
                // mode 2; the inexact exception suppressed).
                flush(a, s0, x, s1)?;
                let mode = if matches!(inst, Inst::Floor(_)) {
                    0x09
                } else {
                    0x0a
                };
                a.vroundps(d, s0, mode)?;
            }
            Inst::Rsqrt(_) => {
                a.vsqrtps(s0, x)?;
                splat(a, s1, K::One)?;
                a.vdivps(d, s1, s0)?;
            }
            Inst::Exp(_) => exp(a, d, x)?,
            Inst::Tanh(_) => tanh(a, d, x, frame)?,
            Inst::Logistic(_) => logistic(a, d, x)?,
            Inst::Maximum(..) => extremum(a, d, x, y, true, true, [s0, s1, s2, s3, s4])?,
            Inst::Minimum(..) => extremum(a, d, x, y, false, true, [s0, s1, s2, s3, s4])?,
            Inst::MaximumOf(_, _, bits) => extremum_of(a, d, x, y, bits, true)?,
            Inst::MinimumOf(_, _, bits) => extremum_of(a, d, x, y, bits, false)?,
            Inst::Clamp(..) => {
                // Operands (lo, x, hi): the value is the second.
                let (lo, v, hi) = (x, y, w);
                extremum(a, s2, v, lo, true, false, [s0, s1, s3, s3, s3])?;
                extremum(a, d, s2, hi, false, false, [s0, s1, s3, s3, s3])?;
            }
            Inst::Compare(cmp, ..) => {
                let predicate = match cmp {
                    Cmp::Eq => EQ_OQ,
                    Cmp::Ne => NEQ_UQ,
                    Cmp::Lt => LT_OQ,
                    Cmp::Le => LE_OQ,
                    Cmp::Gt => GT_OQ,
                    Cmp::Ge => GE_OQ,
                };
                a.vcmpps(s0, x, y, predicate)?;
                a.vandps(d, s0, constant(K::One))?;
            }
            Inst::IntCompare(cmp, signed, ..) => {
                let (x, y) = if signed {
                    (x, y)
                } else {
                    // Unsigned order is the signed order with the sign bits flipped.
                    a.vpxor(s1, x, constant(K::Sign))?;
                    a.vpxor(s2, y, constant(K::Sign))?;
                    (s1, s2)
                };
                // `s0` all ones where the comparison (or, `negated`, its opposite) holds.
                let negated = match cmp {
                    Cmp::Eq | Cmp::Ne => {
                        a.vpcmpeqd(s0, x, y)?;
                        cmp == Cmp::Ne
                    }
                    Cmp::Gt | Cmp::Le => {
                        a.vpcmpgtd(s0, x, y)?;
                        cmp == Cmp::Le
                    }
                    Cmp::Lt | Cmp::Ge => {
                        a.vpcmpgtd(s0, y, x)?;
                        cmp == Cmp::Ge
                    }
                };
                one_where(a, d, s0, negated)?;
            }
            Inst::IsFinite(_) => {
                // Finite where the exponent bits are not all ones.
                a.vpand(s0, x, constant(K::Exponent))?;
                a.vpcmpeqd(s0, s0, constant(K::Exponent))?;
                one_where(a, d, s0, true)?;
            }
            Inst::IntToMask(_) => {
                a.vpxor(s0, s0, s0)?;
                a.vpcmpeqd(s0, x, s0)?;
                one_where(a, d, s0, true)?;
            }
            Inst::Not(_) => {
                a.vcmpps(s0, x, constant(K::Zero), EQ_OQ)?;
                a.vandps(d, s0, constant(K::One))?;
            }
            Inst::And(..) | Inst::Or(..) => {
                // Nonzero, NaN included, is true.
                a.vcmpps(s0, x, constant(K::Zero), NEQ_UQ)?;
                a.vcmpps(s1, y, constant(K::Zero), NEQ_UQ)?;
                if matches!(inst, Inst::Or(..)) {
                    a.vorps(s0, s0, s1)?;
                } else {
                    a.vandps(s0, s0, s1)?;
                }
                a.vandps(d, s0, constant(K::One))?;
            }
            Inst::Select(..) => {
                // Operands (p, t, f).
                a.vcmpps(s0, x, constant(K::Zero), NEQ_UQ)?;
                a.vblendvps(d, w, y, s0)?;
            }
            Inst::MaskToInt(_) => {
                // 1 (all ones shifted right by 31) where the value is not zero.
                a.vcmpps(s0, x, constant(K::Zero), NEQ_UQ)?;
                a.vpsrld(d, s0, 31)?;
            }
            Inst::IntAdd(..) => a.vpaddd(d, x, y)?,
            Inst::IntSubtract(..) => a.vpsubd(d, x, y)?,
            Inst::IntMultiply(..) => a.vpmulld(d, x, y)?,
            Inst::BitAnd(..) => a.vpand(d, x, y)?,
            Inst::BitOr(..) => a.vpor(d, x, y)?,
            Inst::BitXor(..) => a.vpxor(d, x, y)?,
            Inst::BitNot(_) => a.vpxor(d, x, constant(K::AllOnes))?,
            // Counts of 32 or more give 0 (or the sign bit everywhere), as XLA defines.
            Inst::ShiftLeft(..) => a.vpsllvd(d, x, y)?,
            Inst::ShiftRightLogical(..) => a.vpsrlvd(d, x, y)?,
            Inst::ShiftRightArithmetic(..) => a.vpsravd(d, x, y)?,
            Inst::IntMaximum(true, ..) => a.vpmaxsd(d, x, y)?,
            Inst::IntMaximum(false, ..) => a.vpmaxud(d, x, y)?,
            Inst::IntMinimum(true, ..) => a.vpminsd(d, x, y)?,
            Inst::IntMinimum(false, ..) => a.vpminud(d, x, y)?,
            Inst::IntNegate(_) => {
                a.vpxor(s0, s0, s0)?;
                a.vpsubd(d, s0, x)?;
            }
            Inst::IntAbs(_) => a.vpabsd(d, x)?,
            Inst::IntSign(true, _) => {
                // Clamped to [-1, 1].
                a.vpminsd(s0, x, constant(K::IntOne))?;
                a.vpmaxsd(d, s0, constant(K::AllOnes))?;
            }
            Inst::IntSign(false, _) => a.vpminud(d, x, constant(K::IntOne))?,
            Inst::IntToF32(true, _) => a.vcvtdq2ps(d, x)?,
            Inst::F32ToInt(true, _) => {
                // `vcvttps2dq` gives 0x80000000 for NaN and out of range: at or above 2^31
                // the largest value instead, NaN 0.
                a.vcvttps2dq(s0, x)?;
                a.vcmpps(s1, x, constant(K::TwoPow31), GE_OQ)?;
                a.vblendvps(s0, s0, constant(K::Magnitude), s1)?;
                a.vcmpps(s1, x, x, ORD_Q)?;
                a.vandps(d, s0, s1)?;
            }
            Inst::LoadScalar(k) => {
                a.mov(rax, qword_ptr(r8 + 8 * i32::from(k)))?;
                a.vbroadcastss(d, dword_ptr(rax))?;
            }
            Inst::Expm1(_)
            | Inst::Log(_)
            | Inst::Log1p(_)
            | Inst::Sin(_)
            | Inst::Cos(_)
            | Inst::IntDivide(..)
            | Inst::IntRemainder(..)
            | Inst::IntDivideBy(..)
            | Inst::IntRemainderBy(..)
            | Inst::IntToF32(false, _)
            | Inst::F32ToInt(false, _) => return Err(Error::Uncovered),
        }
        finish(a, dr)?;
    }
    Ok(())
}

/// `d = 1.0` where `m` is all ones (or, when `negated`, where it is zero), else `0.0`.
fn one_where(
    a: &mut CodeAssembler,
    d: AsmRegisterYmm,
    m: AsmRegisterYmm,
    negated: bool,
) -> Result<(), IcedError> {
    if negated {
        a.vandnps(d, m, constant(K::One))
    } else {
        a.vandps(d, m, constant(K::One))
    }
}

/// `f = x` with a denormal (exponent bits zero) read as its signed zero; uses `t`.
fn flush(
    a: &mut CodeAssembler,
    f: AsmRegisterYmm,
    x: AsmRegisterYmm,
    t: AsmRegisterYmm,
) -> Result<(), IcedError> {
    a.vpand(t, x, constant(K::Exponent))?;
    a.vpcmpeqd(t, t, constant(K::Zero))?;
    a.vpand(f, x, constant(K::Sign))?;
    a.vblendvps(f, x, f, t)
}

/// `d = max(x, y)` (or `min` when not `max`) as `Inst::Maximum` describes, with denormal
/// operands read as their signed zero when `flush`; reads both operands before writing `d`.
/// Uses `scratch[0..2]` always and `scratch[2..5]` when flushing (`scratch[2]` alone
/// otherwise).
fn extremum(
    a: &mut CodeAssembler,
    d: AsmRegisterYmm,
    x: AsmRegisterYmm,
    y: AsmRegisterYmm,
    max: bool,
    flushing: bool,
    scratch: [AsmRegisterYmm; 5],
) -> Result<(), IcedError> {
    let [m1, m2, t, fx, fy] = scratch;
    let (fx, fy) = if flushing {
        flush(a, fx, x, t)?;
        flush(a, fy, y, t)?;
        (fx, fy)
    } else {
        (x, y)
    };
    // Pick x where x is strictly beyond y, or they are equal and x's sign is the one that
    // wins (positive for max, negative for min), and y is not NaN; or where x is NaN.
    a.vcmpps(m1, fx, fy, if max { GT_OQ } else { LT_OQ })?;
    a.vcmpps(m2, fx, fy, EQ_OQ)?;
    a.vpsrad(t, fx, 31)?;
    if max {
        a.vandnps(m2, t, m2)?;
    } else {
        a.vandps(m2, t, m2)?;
    }
    a.vorps(m1, m1, m2)?;
    a.vcmpps(m2, fy, fy, ORD_Q)?;
    a.vandps(m1, m1, m2)?;
    a.vcmpps(m2, fx, fx, UNORD_Q)?;
    a.vorps(m1, m1, m2)?;
    a.vblendvps(d, fy, fx, m1)
}

/// `d = max(x, c)` (or `min`) as [`extremum`] computes it with flushing, where register `c`
/// holds the f32 `bits` in every lane; the cases as the AVX-512 generator's `extremum_of`
/// takes them. A binary instruction's sequence.
fn extremum_of(
    a: &mut CodeAssembler,
    d: AsmRegisterYmm,
    x: AsmRegisterYmm,
    c: AsmRegisterYmm,
    bits: u32,
    max: bool,
) -> Result<(), IcedError> {
    let [m1, s, t, ..] = S;
    let bound = f32::from_bits(bits);
    let beyond = if max { NLE_UQ } else { NGE_UQ };
    let reached = if max { NLT_UQ } else { NGT_UQ };
    let flushed = if bound.is_subnormal() {
        0.0f32.copysign(bound)
    } else {
        bound
    };
    let winning_zero = flushed == 0.0 && flushed.is_sign_positive() == max;
    if bound.is_nan() || (flushed == 0.0 && !winning_zero) {
        return extremum(a, d, x, c, max, true, [S[0], S[1], S[2], S[3], S[4]]);
    }
    if winning_zero {
        // `x` where it is at least the smallest normal (beyond it for `min`, negated) or
        // NaN, else the zero.
        let limit = if max { K::MinNormal } else { K::NegMinNormal };
        a.vcmpps(m1, x, constant(limit), reached)?;
        if max {
            return a.vandps(d, x, m1);
        }
        splat(a, s, K::Sign)?;
        return a.vblendvps(d, s, x, m1);
    }
    if (flushed > 0.0) == max {
        // Beyond a bound on the far side of zero, `x` is normal.
        a.vcmpps(m1, x, c, beyond)?;
        return a.vblendvps(d, c, x, m1);
    }
    // A bound on the near side: `x` (flushed) where it reaches the bound or is NaN.
    a.vcmpps(m1, x, c, reached)?;
    flush(a, s, x, t)?;
    a.vblendvps(d, c, s, m1)
}

/// `d = e^x`, step for step as `Inst::Exp` describes; reads `x` before writing `d` (uses
/// `S[0..6]`).
fn exp(a: &mut CodeAssembler, d: AsmRegisterYmm, x: AsmRegisterYmm) -> Result<(), IcedError> {
    let [xs, t, k, p, err, s1, _] = S;
    // Clamp to [-104, 89], the bound first so a NaN `x` stays.
    splat(a, t, K::ExpLow)?;
    a.vmaxps(xs, t, x)?;
    splat(a, t, K::ExpHigh)?;
    a.vminps(xs, t, xs)?;
    // t = x * log2(e) + ROUND32 (one rounding); k = t - ROUND32, an integer, and its bits
    // as an integer `t`'s bits minus ROUND32's.
    splat(a, t, K::Round32)?;
    a.vfmadd231ps(t, xs, constant(K::Log2E))?;
    a.vsubps(k, t, constant(K::Round32))?;
    // r = x - k * LN2_HI, then r - k * LN2_LO, each one rounding.
    a.vfnmadd231ps(xs, k, constant(K::Ln2Hi))?;
    a.vfnmadd231ps(xs, k, constant(K::Ln2Lo))?;
    a.vpsubd(k, t, constant(K::Round32))?;
    splat(a, p, K::Taylor7)?;
    for coefficient in [K::Taylor6, K::Taylor5, K::Taylor4, K::Taylor3, K::Half] {
        a.vfmadd213ps(p, xs, constant(coefficient))?;
    }
    // t = 1 + r; err = (1 - t) + r; e = t + (r * r * p + err).
    a.vaddps(t, xs, constant(K::One))?;
    splat(a, err, K::One)?;
    a.vsubps(err, err, t)?;
    a.vaddps(err, err, xs)?;
    a.vmulps(s1, xs, xs)?;
    a.vfmadd213ps(s1, p, err)?;
    a.vaddps(t, t, s1)?;
    // e 2^h 2^(k - h), h = k >> 1: each half a normal power of two, built from its bits.
    // (n + 127) << 23 as (n << 23) plus the bits of 1.0.
    a.vpsrad(p, k, 1)?;
    a.vpsubd(k, k, p)?;
    for v in [p, k] {
        a.vpslld(v, v, 23)?;
        a.vpaddd(v, v, constant(K::One))?;
    }
    a.vmulps(t, t, p)?;
    a.vmulps(d, t, k)
}

/// `d = tanh(x)` as `Inst::Tanh` describes (uses `S[0..6]` and three stack slots).
fn tanh(
    a: &mut CodeAssembler,
    d: AsmRegisterYmm,
    x: AsmRegisterYmm,
    frame: &Frame,
) -> Result<(), IcedError> {
    let [t, p, series, abs, ..] = S;
    // x's sign bits wait, as do `a = min(|x|, 10)` and the series.
    a.vandps(t, x, constant(K::Sign))?;
    a.vmovups(frame.waiting(0), t)?;
    // With the bound first, `vminps` keeps a NaN.
    a.vandps(abs, x, constant(K::Magnitude))?;
    splat(a, t, K::Ten)?;
    a.vminps(abs, t, abs)?;
    a.vmovups(frame.waiting(1), abs)?;
    // The series: a + (a * t) P(t), t = a * a.
    a.vmulps(t, abs, abs)?;
    splat(a, series, K::Tanh5)?;
    for k in [K::Tanh4, K::Tanh3, K::Tanh2, K::Tanh1, K::Tanh0] {
        a.vfmadd213ps(series, t, constant(k))?;
    }
    a.vmulps(p, abs, t)?;
    a.vfmadd213ps(series, p, abs)?;
    a.vmovups(frame.waiting(2), series)?;
    // Far: 1 - 2 / (e^(2a) + 1).
    a.vaddps(t, abs, abs)?;
    exp(a, t, t)?;
    let [_, c, e, abs, below, ..] = S;
    a.vaddps(e, t, constant(K::One))?;
    splat(a, c, K::Two)?;
    a.vdivps(e, c, e)?;
    splat(a, c, K::One)?;
    a.vsubps(e, c, e)?;
    a.vmovups(abs, frame.waiting(1))?;
    a.vcmpps(below, abs, constant(K::TanhBelow), LT_OQ)?;
    a.vblendvps(e, e, frame.waiting(2), below)?;
    // The sign of x.
    a.vxorps(d, e, frame.waiting(0))
}

/// `d = logistic(x)` as `Inst::Logistic` describes; reads `x` before writing `d`.
fn logistic(a: &mut CodeAssembler, d: AsmRegisterYmm, x: AsmRegisterYmm) -> Result<(), IcedError> {
    let [e, sum, above, negative, ..] = S;
    a.vorps(e, x, constant(K::Sign))?;
    exp(a, e, e)?;
    // `exp` leaves `x` alone (a spilled one waits in `S[6]`).
    a.vcmpps(negative, x, constant(K::Zero), LT_OQ)?;
    a.vaddps(sum, e, constant(K::One))?;
    splat(a, above, K::One)?;
    a.vblendvps(above, above, e, negative)?;
    a.vdivps(d, above, sum)
}

/// One chunk: its loads, instructions and stores.
fn emit_chunk(
    a: &mut CodeAssembler,
    program: &TileProgram,
    hoisted: &[bool],
    chunk: Chunk,
) -> Result<(), Error> {
    load_inputs(a, &program.inputs, |k| !hoisted[k], chunk)?;
    body(a, &program.insts, chunk.frame)?;
    Ok(store(a, &program.outputs, chunk)?)
}

/// Why a program was not assembled.
enum Error {
    Asm,
    /// An instruction [`covers`] leaves out.
    Uncovered,
}

impl From<IcedError> for Error {
    fn from(_: IcedError) -> Error {
        Error::Asm
    }
}

fn assemble(program: &TileProgram) -> Result<Vec<u8>, Error> {
    let frame = Frame {
        sums: program.row_sums.len(),
    };
    let mut a = CodeAssembler::new(64)?;
    let mut row_loop = a.create_label();
    let mut pieces = a.create_label();
    let mut pieces_done = a.create_label();
    let mut full = a.create_label();
    let mut tail = a.create_label();
    let mut next_row = a.create_label();
    let mut done = a.create_label();
    let mut pool = a.create_label();
    for r in [rbx, r12, r13, r14, r15, rbp] {
        a.push(r)?;
    }
    a.sub(rsp, frame.bytes())?;
    a.lea(r15, ptr(pool))?;
    a.mov(r8, qword_ptr(rdi))?;
    a.mov(r9, qword_ptr(rdi + 8))?;
    a.mov(rcx, qword_ptr(rdi + 16))?;
    a.mov(r10, qword_ptr(rdi + 24))?;
    a.mov(r11, qword_ptr(rdi + 32))?;
    a.mov(rbx, qword_ptr(rdi + 40))?;
    a.mov(r12, qword_ptr(rdi + 48))?;
    a.mov(rbp, rbx)?;
    a.mov(rdi, qword_ptr(rdi + 56))?;
    a.xor(r13, r13)?;
    let sums = RowSums {
        program,
        frame: &frame,
    };
    let hoisted = invariant_inputs(program);
    let whole = Chunk {
        masked: false,
        frame: &frame,
    };
    let hoist = |a: &mut CodeAssembler, kind: Input| -> Result<(), Error> {
        let wanted = |k: usize| hoisted[k] && program.inputs[k].0 == kind;
        Ok(load_inputs(a, &program.inputs, wanted, whole)?)
    };
    hoist(&mut a, Input::Scalar)?;
    a.set_label(&mut row_loop)?;
    a.cmp(rcx, r10)?;
    a.jae(done)?;
    hoist(&mut a, Input::RowScalar)?;
    // This row's segment: to the row's end or to `end`, whichever comes first.
    a.mov(r14, r11)?;
    a.sub(r14, r12)?;
    a.mov(rax, r10)?;
    a.sub(rax, rcx)?;
    a.cmp(rax, r14)?;
    a.cmovb(r14, rax)?;
    if !program.row_sums.is_empty() {
        // Whole 32-element pieces, chunk `k` of each into accumulator `k`.
        sums.start_row(&mut a)?;
        a.set_label(&mut pieces)?;
        a.cmp(r14, 32)?;
        a.jb(pieces_done)?;
        for k in 0..4 {
            emit_chunk(&mut a, program, &hoisted, whole)?;
            sums.accumulate(&mut a, k)?;
            advance(&mut a, 8)?;
        }
        a.jmp(pieces)?;
        a.set_label(&mut pieces_done)?;
        sums.combine(&mut a)?;
    }
    a.set_label(&mut full)?;
    a.cmp(r14, 8)?;
    a.jb(tail)?;
    emit_chunk(&mut a, program, &hoisted, whole)?;
    sums.add_lanes(&mut a, false)?;
    advance(&mut a, 8)?;
    a.jmp(full)?;
    a.set_label(&mut tail)?;
    a.test(r14, r14)?;
    a.jz(next_row)?;
    // The tail mask: the low `r14` (1..7) lanes.
    a.mov(eax, 8)?;
    a.sub(rax, r14)?;
    a.vmovups(S[0], ymmword_ptr(r15 + rax * 4 + MASK_TABLE))?;
    a.vmovups(frame.tail_mask(), S[0])?;
    let masked = Chunk {
        masked: true,
        frame: &frame,
    };
    emit_chunk(&mut a, program, &hoisted, masked)?;
    sums.add_lanes(&mut a, true)?;
    a.add(rcx, r14)?;
    a.add(r13, r14)?;
    a.set_label(&mut next_row)?;
    sums.finish_row(&mut a)?;
    a.inc(rbx)?;
    a.xor(r12, r12)?;
    a.jmp(row_loop)?;
    a.set_label(&mut done)?;
    a.mov(rax, r13)?;
    a.add(rsp, frame.bytes())?;
    for r in [rbp, r15, r14, r13, r12, rbx] {
        a.pop(r)?;
    }
    a.vzeroupper()?;
    a.ret()?;
    a.set_label(&mut pool)?;
    let lanes: Vec<u32> = POOL.iter().flat_map(|&v| [v; 8]).collect();
    a.dd(&lanes)?;
    a.dd(&[u32::MAX; 8])?;
    a.dd(&[0; 8])?;
    Ok(a.assemble(0)?)
}

/// The row sums of a program in the evaluator's order (`TileProgram::row_sums`): 32
/// lanes as four 8-lane accumulators in the frame, accumulator `k` adding chunk `k` of
/// each whole 32-element piece (they start at `-0.0`, so the first add copies); the lanes
/// added pairwise (lane `j` plus `j + 16`: accumulators 0 + 2 and 1 + 3; then `+ 8`, `+ 4`,
/// `+ 2`, `+ 1`) into the running total; the rest of the row added to it element by
/// element; then the initial value plus the total.
struct RowSums<'p> {
    program: &'p TileProgram,
    frame: &'p Frame,
}

impl RowSums<'_> {
    fn start_row(&self, a: &mut CodeAssembler) -> Result<(), IcedError> {
        splat(a, S[0], K::Sign)?;
        for s in 0..self.program.row_sums.len() {
            for k in 0..4 {
                a.vmovups(self.frame.accumulator(s, k), S[0])?;
            }
        }
        Ok(())
    }

    /// Adds the chunk's values to accumulator `k` of each sum.
    fn accumulate(&self, a: &mut CodeAssembler, k: usize) -> Result<(), IcedError> {
        for (s, &(value, _)) in self.program.row_sums.iter().enumerate() {
            let v = source(a, value, S[1])?;
            a.vmovups(S[0], self.frame.accumulator(s, k))?;
            a.vaddps(S[0], S[0], v)?;
            a.vmovups(self.frame.accumulator(s, k), S[0])?;
        }
        Ok(())
    }

    /// The 32 lanes added pairwise into each sum's total.
    fn combine(&self, a: &mut CodeAssembler) -> Result<(), IcedError> {
        let (lo, hi) = (S[0], S[1]);
        let (xl, xh) = (XMM[9], XMM[10]);
        for s in 0..self.program.row_sums.len() {
            a.vmovups(lo, self.frame.accumulator(s, 0))?;
            a.vaddps(lo, lo, self.frame.accumulator(s, 2))?;
            a.vmovups(hi, self.frame.accumulator(s, 1))?;
            a.vaddps(hi, hi, self.frame.accumulator(s, 3))?;
            a.vaddps(lo, lo, hi)?;
            a.vextractf128(xh, lo, 1)?;
            a.vaddps(xl, xl, xh)?;
            a.vmovhlps(xh, xh, xl)?;
            a.vaddps(xl, xl, xh)?;
            a.vmovshdup(xh, xl)?;
            a.vaddss(xl, xl, xh)?;
            a.vmovss(self.frame.total(s), xl)?;
        }
        Ok(())
    }

    /// Adds the chunk's values one by one to each total: all 8, or the low `r14` when
    /// `masked`.
    fn add_lanes(&self, a: &mut CodeAssembler, masked: bool) -> Result<(), IcedError> {
        let values = self.frame.values();
        for (s, &(value, _)) in self.program.row_sums.iter().enumerate() {
            let v = source(a, value, S[1])?;
            a.vmovups(ymmword_ptr(rsp + values), v)?;
            let total = XMM[9];
            a.vmovss(total, self.frame.total(s))?;
            if masked {
                let mut lane = a.create_label();
                a.xor(esi, esi)?;
                a.set_label(&mut lane)?;
                a.vaddss(total, total, dword_ptr(rsp + rsi * 4 + values))?;
                a.inc(rsi)?;
                a.cmp(rsi, r14)?;
                a.jb(lane)?;
            } else {
                for i in 0..8 {
                    a.vaddss(total, total, dword_ptr(rsp + values + 4 * i))?;
                }
            }
            a.vmovss(self.frame.total(s), total)?;
        }
        Ok(())
    }

    /// Stores the initial value plus the total for row `rbx` (at `rbx - rbp`).
    fn finish_row(&self, a: &mut CodeAssembler) -> Result<(), IcedError> {
        for (s, &(_, init)) in self.program.row_sums.iter().enumerate() {
            let (x, total) = (XMM[9], XMM[10]);
            a.mov(rax, qword_ptr(r8 + 8 * init as i32))?;
            a.vmovss(x, dword_ptr(rax))?;
            a.vmovss(total, self.frame.total(s))?;
            a.vaddss(x, x, total)?;
            a.mov(rax, qword_ptr(rdi + 8 * s as i32))?;
            a.mov(rdx, rbx)?;
            a.sub(rdx, rbp)?;
            a.vmovss(dword_ptr(rax + rdx * 4), x)?;
        }
        Ok(())
    }
}

/// `Args` is the AVX-512 code's; both read it at the same offsets.
const _: () = assert!(std::mem::size_of::<Args>() == 64);
