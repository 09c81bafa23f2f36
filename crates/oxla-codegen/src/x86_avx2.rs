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
//! It covers every instruction. The sequences are the AVX-512 generator's, step for step
//! (the f64 ones on each half of a chunk widened to four f64 lanes, an unsigned conversion
//! by its halves where AVX2 has none), so both compute the interpreter's bits. A lane
//! `sin` or `cos` does not cover stops the code before the chunk's stores, as there.
//!
//! General registers as in `x86`: `r8` the input pointer array, `r9` the output pointer
//! array, `rcx` the element index, `r10` the end, `r11` the row length, `rbx` the row,
//! `r12` the column, `r13` the output index, `r14` what is left of the row's segment, `r15`
//! the constants after the code, `rbp` the first row, `rdi` the row sums' pointer array,
//! `rax`, `rdx` and `rsi` scratch; `rsp` the frame of spilled registers and row-sum state.

use super::divide_by::DivideBy;
use super::x86::{
    advance, invariant_inputs, Args, Code, EQ_OQ, GE_OQ, GT_OQ, K, K64, LE_OQ, LT_OQ, NEQ_UQ,
    NGE_UQ, NGT_UQ, NLE_UQ, NLT_UQ, ORD_Q, POOL, POOL64, UNORD_Q,
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
/// 8 all-ones lanes and 8 zero lanes (whose window at `8 - n` is the mask of `n` lanes),
/// then [`POOL64`] with each value in all 4 f64 lanes.
const MASK_TABLE: i32 = POOL.len() as i32 * SLOT;

/// Where [`POOL64`] begins after the mask table.
const POOL64_START: i32 = MASK_TABLE + 2 * SLOT;

/// Whether this machine runs AVX2 tile code.
pub(crate) fn available() -> bool {
    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
}

pub(crate) fn compile(program: &TileProgram) -> Option<Code> {
    if program.registers() > PROGRAM_REGISTERS {
        return None;
    }
    super::x86::load(&assemble(program).ok()?)
}

/// The stack frame: spilled program registers, then per row sum its four 8-lane
/// accumulators and its running total, then one chunk's summed values, the tail mask,
/// three slots for values an instruction keeps while it computes others (`tanh`, and the
/// f64 sequences' first half and lane conditions), and the lanes that stopped the code.
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
    fn waiting_half(&self) -> AsmMemoryOperand {
        xmmword_ptr(rsp + self.values() + 2 * SLOT)
    }
    fn stopped(&self) -> AsmMemoryOperand {
        dword_ptr(rsp + self.values() + 5 * SLOT)
    }
    fn bytes(&self) -> i32 {
        // Keeps `rsp` as aligned as it was (six pushes and the return address leave it at
        // 8 mod 16; alignment does not matter to the unaligned moves used).
        self.values() + 6 * SLOT
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

/// f64 constant `k` in all 4 lanes, as a memory operand.
fn constant64(k: K64) -> AsmMemoryOperand {
    ymmword_ptr(r15 + POOL64_START + SLOT * k as i32)
}

/// Fills every f64 lane of `y` with constant `k`.
fn splat64(a: &mut CodeAssembler, y: AsmRegisterYmm, k: K64) -> Result<(), IcedError> {
    a.vmovupd(y, constant64(k))
}

/// The `xmm` half of `y`.
fn low_half(y: AsmRegisterYmm) -> AsmRegisterXmm {
    XMM[YMM.iter().position(|&r| r == y).unwrap_or(0)]
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
fn body(a: &mut CodeAssembler, insts: &[(Inst, u8)], chunk: Chunk) -> Result<(), IcedError> {
    let frame = chunk.frame;
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
            Inst::Expm1(_) => expm1(a, d, x, frame)?,
            Inst::Log(_) => log(a, d, x, false, frame)?,
            Inst::Log1p(_) => log(a, d, x, true, frame)?,
            Inst::Sin(_) => trig(a, d, x, false, chunk)?,
            Inst::Cos(_) => trig(a, d, x, true, chunk)?,
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
            Inst::IntToF32(false, _) => {
                // The high and low 16 bits converted exactly, then `high * 65536 + low`
                // rounded once (`TrigLimit` is 65536.0).
                a.vpslld(s0, x, 16)?;
                a.vpsrld(s0, s0, 16)?;
                a.vcvtdq2ps(s0, s0)?;
                a.vpsrld(s1, x, 16)?;
                a.vcvtdq2ps(s1, s1)?;
                a.vfmadd231ps(s0, s1, constant(K::TrigLimit))?;
                a.vmovaps(d, s0)?;
            }
            Inst::F32ToInt(true, _) => {
                // `vcvttps2dq` gives 0x80000000 for NaN and out of range: at or above 2^31
                // the largest value instead, NaN 0.
                a.vcvttps2dq(s0, x)?;
                a.vcmpps(s1, x, constant(K::TwoPow31), GE_OQ)?;
                a.vblendvps(s0, s0, constant(K::Magnitude), s1)?;
                a.vcmpps(s1, x, x, ORD_Q)?;
                a.vandps(d, s0, s1)?;
            }
            Inst::F32ToInt(false, _) => {
                // Negative values and NaN to 0 (`vmaxps` gives its second operand for NaN).
                // From 2^31 on, 2^31 is taken away before the signed conversion and its bit
                // put back; at or above 2^32 that conversion still overflows to
                // 0x80000000, whose sign spread over the lane saturates it at 0xffffffff.
                a.vmaxps(s0, x, constant(K::Zero))?;
                a.vcmpps(s1, s0, constant(K::TwoPow31), GE_OQ)?;
                a.vsubps(s2, s0, constant(K::TwoPow31))?;
                a.vblendvps(s0, s0, s2, s1)?;
                a.vcvttps2dq(s0, s0)?;
                a.vandps(s1, s1, constant(K::Sign))?;
                a.vpsrad(s2, s0, 31)?;
                a.vpor(s0, s0, s1)?;
                a.vpor(d, s0, s2)?;
            }
            Inst::LoadScalar(k) => {
                a.mov(rax, qword_ptr(r8 + 8 * i32::from(k)))?;
                a.vbroadcastss(d, dword_ptr(rax))?;
            }
            Inst::IntDivide(signed, ..) => int_divide(a, d, x, y, signed, false, frame)?,
            Inst::IntRemainder(signed, ..) => int_divide(a, d, x, y, signed, true, frame)?,
            Inst::IntDivideBy(signed, _, c) => int_divide_by(a, d, x, c, signed, false)?,
            Inst::IntRemainderBy(signed, _, c) => int_divide_by(a, d, x, c, signed, true)?,
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

/// `d = x / y` (or the remainder `x - (x / y) y` when `remainder`) for 32-bit integers,
/// as the AVX-512 generator's `int_divide` computes them: each half of the chunk widened to
/// four f64 lanes, divided, and truncated by one conversion. A zero divisor is read as 1,
/// and its lanes take all ones (the quotient) or `x` (the remainder) afterwards. AVX2
/// converts only signed integers: an unsigned one goes in with its top bit flipped and
/// comes back 2^31 greater, and an unsigned quotient (floored first, which truncates it)
/// goes out 2^31 smaller with its top bit flipped back. Reads `x` and `y` before writing
/// `d` (uses `S[0..5]` and the frame's first waiting slot).
fn int_divide(
    a: &mut CodeAssembler,
    d: AsmRegisterYmm,
    x: AsmRegisterYmm,
    y: AsmRegisterYmm,
    signed: bool,
    remainder: bool,
    frame: &Frame,
) -> Result<(), IcedError> {
    let [zero, ys, xd, yd, t, ..] = S;
    a.vpxor(t, t, t)?;
    a.vpcmpeqd(zero, y, t)?;
    // 1 (all ones shifted right by 31) in the zero lanes.
    a.vpsrld(ys, zero, 31)?;
    a.vpor(ys, ys, y)?;
    let widen = |a: &mut CodeAssembler, v: AsmRegisterYmm, of: AsmRegisterYmm, half: usize| {
        let part = low_half(v);
        if half == 0 {
            a.vmovaps(part, low_half(of))?;
        } else {
            a.vextractf128(part, of, 1)?;
        }
        if !signed {
            a.vpxor(part, part, xmmword_ptr(r15 + SLOT * K::Sign as i32))?;
        }
        a.vcvtdq2pd(v, part)?;
        if !signed {
            a.vaddpd(v, v, constant64(K64::TwoP31))?;
        }
        Ok::<(), IcedError>(())
    };
    for half in 0..2 {
        widen(a, xd, x, half)?;
        widen(a, yd, ys, half)?;
        a.vdivpd(xd, xd, yd)?;
        if !signed {
            a.vroundpd(xd, xd, 0x09)?;
            a.vsubpd(xd, xd, constant64(K64::TwoP31))?;
        }
        a.vcvttpd2dq(low_half(xd), xd)?;
        if !signed {
            a.vpxor(
                low_half(xd),
                low_half(xd),
                xmmword_ptr(r15 + SLOT * K::Sign as i32),
            )?;
        }
        if half == 0 {
            a.vmovups(frame.waiting_half(), low_half(xd))?;
        } else {
            a.vmovups(low_half(t), frame.waiting_half())?;
            a.vinsertf128(xd, t, low_half(xd), 1)?;
        }
    }
    let q = xd;
    if remainder {
        a.vpmulld(t, q, ys)?;
        a.vpsubd(t, x, t)?;
        a.vblendvps(d, t, x, zero)
    } else {
        a.vpor(d, q, zero)
    }
}

/// `d = x / c` (or the remainder `x - (x / c) c` when `remainder`) for the constant 32-bit
/// divisor `c` by the sequence [`DivideBy`] picks, as the AVX-512 generator's
/// `int_divide_by`: a copy, a negation, shifts for a power of two, or the high halves of
/// products by a multiplier corrected and shifted. A zero divisor gives all ones (the
/// quotient) or `x` (the remainder). Reads `x` before writing `d` (uses `S[0..4]`).
fn int_divide_by(
    a: &mut CodeAssembler,
    d: AsmRegisterYmm,
    x: AsmRegisterYmm,
    c: u32,
    signed: bool,
    remainder: bool,
) -> Result<(), IcedError> {
    let [t, u, m, q, ..] = S;
    let division = DivideBy::new(c, signed);
    match division {
        DivideBy::Zero => a.vpcmpeqd(q, q, q)?,
        DivideBy::One => a.vmovaps(q, x)?,
        DivideBy::MinusOne => {
            a.vpxor(q, q, q)?;
            a.vpsubd(q, q, x)?;
        }
        DivideBy::SignedPowerOfTwo(k) => {
            a.vpsrad(t, x, 31)?;
            a.vpsrld(t, t, 32 - k as i32)?;
            a.vpaddd(t, t, x)?;
            a.vpsrad(q, t, k as i32)?;
        }
        DivideBy::UnsignedPowerOfTwo(k) => a.vpsrld(q, x, k as i32)?,
        DivideBy::Signed { magic, add, shift } => {
            multiply_high(a, q, x, magic as u32, true, [m, t, u])?;
            match add {
                1.. => a.vpaddd(q, q, x)?,
                0 => {}
                _ => a.vpsubd(q, q, x)?,
            }
            if shift > 0 {
                a.vpsrad(q, q, shift as i32)?;
            }
            // Plus one where negative: toward zero.
            a.vpsrld(t, q, 31)?;
            a.vpaddd(q, q, t)?;
        }
        DivideBy::Unsigned { magic, add, shift } => {
            multiply_high(a, q, x, magic, false, [m, t, u])?;
            if add {
                a.vpsubd(t, x, q)?;
                a.vpsrld(t, t, 1)?;
                a.vpaddd(t, t, q)?;
                a.vpsrld(q, t, shift as i32 - 1)?;
            } else if shift > 0 {
                a.vpsrld(q, q, shift as i32)?;
            }
        }
    }
    if !remainder {
        return a.vmovaps(d, q);
    }
    match division {
        DivideBy::SignedPowerOfTwo(k) | DivideBy::UnsignedPowerOfTwo(k) => {
            a.vpslld(t, q, k as i32)?
        }
        _ => {
            broadcast(a, t, c)?;
            a.vpmulld(t, q, t)?;
        }
    }
    a.vpsubd(d, x, t)
}

/// `v` = `bits` in every 32-bit lane.
fn broadcast(a: &mut CodeAssembler, v: AsmRegisterYmm, bits: u32) -> Result<(), IcedError> {
    a.mov(eax, bits)?;
    a.vmovd(low_half(v), eax)?;
    a.vpbroadcastd(v, low_half(v))
}

/// `d` = the high 32 bits of each lane's 64-bit product `x * magic` (signed or unsigned),
/// as the AVX-512 generator's `multiply_high`: the even lanes' products and the odd
/// lanes' in 64-bit lanes, their high halves gathered by `vshufps` and put in order by
/// `vpshufd`. `m`, `even` and `odd` are scratch.
fn multiply_high(
    a: &mut CodeAssembler,
    d: AsmRegisterYmm,
    x: AsmRegisterYmm,
    magic: u32,
    signed: bool,
    [m, even, odd]: [AsmRegisterYmm; 3],
) -> Result<(), IcedError> {
    broadcast(a, m, magic)?;
    a.vpsrlq(odd, x, 32)?;
    if signed {
        a.vpmuldq(even, x, m)?;
        a.vpmuldq(odd, odd, m)?;
    } else {
        a.vpmuludq(even, x, m)?;
        a.vpmuludq(odd, odd, m)?;
    }
    a.vshufps(d, even, odd, 0xdd)?;
    a.vpshufd(d, d, 0xd8)
}

/// Half `half` of the eight f32 lanes of `x` widened to four f64 lanes in `d`.
fn widen_half(
    a: &mut CodeAssembler,
    d: AsmRegisterYmm,
    x: AsmRegisterYmm,
    half: usize,
) -> Result<(), IcedError> {
    if half == 0 {
        a.vcvtps2pd(d, low_half(x))
    } else {
        a.vextractf128(low_half(d), x, 1)?;
        a.vcvtps2pd(d, low_half(d))
    }
}

/// The four f64 lanes of `v` narrowed to f32 as half `half` of a chunk: the first half
/// waits in the frame, the second joins it in `into` (`t` is scratch). Overwrites `v`.
fn narrow_half(
    a: &mut CodeAssembler,
    v: AsmRegisterYmm,
    half: usize,
    into: AsmRegisterYmm,
    t: AsmRegisterYmm,
    frame: &Frame,
) -> Result<(), IcedError> {
    a.vcvtpd2ps(low_half(v), v)?;
    if half == 0 {
        a.vmovups(frame.waiting_half(), low_half(v))
    } else {
        a.vmovups(low_half(t), frame.waiting_half())?;
        a.vinsertf128(into, t, low_half(v), 1)
    }
}

/// `d = expm1(x)` as `Inst::Expm1` describes, on each half of the chunk widened to four
/// f64 lanes; reads `x` before writing `d` (uses `S[0..5]`).
fn expm1(
    a: &mut CodeAssembler,
    d: AsmRegisterYmm,
    x: AsmRegisterYmm,
    frame: &Frame,
) -> Result<(), IcedError> {
    let [y, s, q, t, e, ..] = S;
    for half in 0..2 {
        widen_half(a, y, x, half)?;
        // The argument of `exp_parts`, clamped with the bound first so NaN stays.
        splat64(a, t, K64::Expm1Low)?;
        a.vmaxpd(y, t, y)?;
        splat64(a, t, K64::Expm1High)?;
        a.vminpd(y, t, y)?;
        // k = round(y log2 e) by adding and subtracting 1.5 * 2^52; s = 2^k.
        a.vmulpd(s, y, constant64(K64::Log2E))?;
        a.vaddpd(s, s, constant64(K64::Round))?;
        a.vsubpd(q, s, constant64(K64::Round))?;
        a.vpsubq(s, s, constant64(K64::Round))?;
        a.vpaddq(s, s, constant64(K64::Bias))?;
        a.vpsllq(s, s, 52)?;
        // r = (y - k LN2_HI) - k LN2_LO, each product and difference rounded.
        a.vmulpd(t, q, constant64(K64::Ln2Hi))?;
        a.vsubpd(y, y, t)?;
        a.vmulpd(t, q, constant64(K64::Ln2Lo))?;
        a.vsubpd(y, y, t)?;
        // q = expm1(r): the polynomial in fused multiply-adds from 1/8!, then times r.
        splat64(a, q, K64::C7)?;
        for c in [
            K64::C6,
            K64::C5,
            K64::C4,
            K64::C3,
            K64::C2,
            K64::C1,
            K64::C0,
        ] {
            a.vfmadd213pd(q, y, constant64(c))?;
        }
        a.vmulpd(q, q, y)?;
        // e = s q + (s - 1).
        a.vmulpd(t, s, q)?;
        a.vsubpd(e, s, constant64(K64::C0))?;
        a.vaddpd(e, t, e)?;
        narrow_half(a, e, half, t, q, frame)?;
    }
    // The sign of x.
    a.vandps(t, t, constant(K::Magnitude))?;
    a.vandps(q, x, constant(K::Sign))?;
    a.vorps(d, t, q)
}

/// `d = ln(x)` (or `ln(1 + x)` when `plus_one`), step for step as `Inst::Log` and
/// `Inst::Log1p` describe, on each half of the chunk widened to four f64 lanes; reads `x`
/// before writing `d` (uses `S[0..6]`).
fn log(
    a: &mut CodeAssembler,
    d: AsmRegisterYmm,
    x: AsmRegisterYmm,
    plus_one: bool,
    frame: &Frame,
) -> Result<(), IcedError> {
    let [xd, u, t, m, f, p, _] = S;
    for half in 0..2 {
        widen_half(a, xd, x, half)?;
        let u = if plus_one {
            a.vaddpd(u, xd, constant64(K64::C0))?;
            u
        } else {
            xd
        };
        // The biased exponent: its bits put under the mantissa of 2^52, then 2^52 taken
        // away.
        a.vpsrlq(t, u, 52)?;
        a.vpor(t, t, constant64(K64::TwoP52))?;
        a.vsubpd(t, t, constant64(K64::TwoP52))?;
        // m in [1, 2) from the mantissa; halved (and the exponent one more) above sqrt 2.
        // `p` holds the condition and `f` the changed values until they are chosen.
        a.vpand(m, u, constant64(K64::Mantissa))?;
        a.vpor(m, m, constant64(K64::C0))?;
        a.vcmppd(p, m, constant64(K64::Sqrt2), GT_OQ)?;
        a.vmulpd(f, m, constant64(K64::C1))?;
        a.vblendvpd(m, m, f, p)?;
        a.vsubpd(t, t, constant64(K64::Bias1023))?;
        a.vaddpd(f, t, constant64(K64::C0))?;
        a.vblendvpd(t, t, f, p)?;
        // f = (m - 1) / (m + 1); 2 atanh(f) = 2 f (((((f2/11 + 1/9) f2 + 1/7) ...) f2 + 1).
        a.vsubpd(f, m, constant64(K64::C0))?;
        a.vaddpd(m, m, constant64(K64::C0))?;
        a.vdivpd(f, f, m)?;
        a.vmulpd(m, f, f)?;
        splat64(a, p, K64::Inv11)?;
        for c in [K64::Inv9, K64::Inv7, K64::Inv5, K64::Inv3, K64::C0] {
            a.vfmadd213pd(p, m, constant64(c))?;
        }
        // e ln 2 + (2 f) p.
        a.vmulpd(t, t, constant64(K64::Ln2))?;
        a.vaddpd(f, f, f)?;
        a.vmulpd(f, f, p)?;
        a.vaddpd(t, t, f)?;
        if plus_one {
            // ln(u) x / (u - 1), or x itself where u == 1.
            a.vsubpd(m, u, constant64(K64::C0))?;
            a.vdivpd(m, xd, m)?;
            a.vmulpd(t, t, m)?;
            a.vcmppd(f, u, constant64(K64::C0), EQ_OQ)?;
            a.vblendvpd(t, t, xd, f)?;
        }
        // ln(±0) = -inf, ln of a negative or NaN is NaN, ln(inf) = inf.
        for (predicate, bound, what) in [
            (EQ_OQ, K64::Zero, K64::NegInfinity),
            (NGE_UQ, K64::Zero, K64::NaN),
            (EQ_OQ, K64::Infinity, K64::Infinity),
        ] {
            a.vcmppd(f, u, constant64(bound), predicate)?;
            a.vblendvpd(t, t, constant64(what), f)?;
        }
        narrow_half(a, t, half, d, m, frame)?;
    }
    Ok(())
}

/// `d = sin(x)` (or `cos(x)` when `cos`), step for step as `Inst::Sin` describes, on each
/// half of the chunk widened to four f64 lanes; lanes with `|x| > 65536` or NaN (of those
/// under the tail mask when masked) stop the code. Reads `x` before writing `d` (uses
/// `S[0..6]` and the frame's three waiting slots).
fn trig(
    a: &mut CodeAssembler,
    d: AsmRegisterYmm,
    x: AsmRegisterYmm,
    cos: bool,
    chunk: Chunk,
) -> Result<(), IcedError> {
    let frame = chunk.frame;
    let [y, t, r, r2, s, tmp, _] = S;
    a.vandps(tmp, x, constant(K::Magnitude))?;
    a.vcmpps(tmp, tmp, constant(K::TrigLimit), NLE_UQ)?;
    if chunk.masked {
        a.vandps(tmp, tmp, frame.tail_mask())?;
    }
    a.vmovmskps(eax, tmp)?;
    a.or(frame.stopped(), eax)?;
    for half in 0..2 {
        widen_half(a, y, x, half)?;
        // t = x 2/pi + ROUND (two roundings): its low bits are the quadrant k mod 4. The
        // lanes of odd quadrants wait in slot 1, those whose result is negated in slot 2.
        a.vmulpd(t, y, constant64(K64::TwoOverPi))?;
        a.vaddpd(t, t, constant64(K64::Round))?;
        let bit_set = |a: &mut CodeAssembler, v, bit, slot| -> Result<(), IcedError> {
            a.vpand(tmp, v, constant64(bit))?;
            a.vpcmpeqq(tmp, tmp, constant64(bit))?;
            a.vmovups(frame.waiting(slot), tmp)
        };
        bit_set(a, t, K64::BitOne, 1)?;
        if cos {
            // cos is negated in quadrants 1 and 2: bit 1 of k + 1.
            a.vpaddq(r, t, constant64(K64::BitOne))?;
            bit_set(a, r, K64::BitTwo, 2)?;
        } else {
            bit_set(a, t, K64::BitTwo, 2)?;
        }
        // k = t - ROUND; r = ((x - k HI) - k MID) - k LO, each step rounded (`k HI` is
        // exact, so the first step is one multiply-add).
        a.vsubpd(t, t, constant64(K64::Round))?;
        a.vmovapd(r, y)?;
        a.vfnmadd231pd(r, t, constant64(K64::PiO2Hi))?;
        a.vmulpd(tmp, t, constant64(K64::PiO2Mid))?;
        a.vsubpd(r, r, tmp)?;
        a.vmulpd(tmp, t, constant64(K64::PiO2Lo))?;
        a.vsubpd(r, r, tmp)?;
        a.vmulpd(r2, r, r)?;
        // From here `y` holds r^4 and `t` and `tmp` the coefficient pairs of Estrin's
        // scheme: sin r = r (((S0 r2 + S1) r4 + (S2 r2 + S3)) r4 + (S4 r2 + 1)).
        a.vmulpd(y, r2, r2)?;
        let pair = |a: &mut CodeAssembler, z, high, low| -> Result<(), IcedError> {
            splat64(a, z, high)?;
            a.vfmadd213pd(z, r2, constant64(low))
        };
        pair(a, s, K64::Sin0, K64::Sin1)?;
        pair(a, t, K64::Sin2, K64::Sin3)?;
        a.vfmadd213pd(s, y, t)?;
        pair(a, tmp, K64::Sin4, K64::C0)?;
        a.vfmadd213pd(s, y, tmp)?;
        a.vmulpd(s, s, r)?;
        // cos r = ((C0 r4 + (C1 r2 + C2)) r4 + (C3 r2 + C4)) r4 + (C5 r2 + 1), in `r`.
        let c = r;
        splat64(a, c, K64::Cos0)?;
        pair(a, t, K64::Cos1, K64::Cos2)?;
        a.vfmadd213pd(c, y, t)?;
        pair(a, tmp, K64::Cos3, K64::Cos4)?;
        a.vfmadd213pd(c, y, tmp)?;
        pair(a, t, K64::Cos5, K64::C0)?;
        a.vfmadd213pd(c, y, t)?;
        // sin takes cos r in odd quadrants, cos takes sin r; then the sign.
        a.vmovupd(t, frame.waiting(1))?;
        if cos {
            a.vblendvpd(tmp, c, s, t)?;
        } else {
            a.vblendvpd(tmp, s, c, t)?;
        }
        a.vmovupd(t, frame.waiting(2))?;
        a.vandpd(t, t, constant64(K64::Sign))?;
        a.vxorpd(tmp, tmp, t)?;
        narrow_half(a, tmp, half, d, t, frame)?;
    }
    Ok(())
}

/// One chunk: its loads, instructions and stores; when the program may stop, a lane that
/// stopped jumps to `stop` before the stores.
fn emit_chunk(
    a: &mut CodeAssembler,
    program: &TileProgram,
    hoisted: &[bool],
    chunk: Chunk,
    stop: CodeLabel,
) -> Result<(), IcedError> {
    let stops = program.insts.iter().any(|(inst, _)| inst.may_stop());
    load_inputs(a, &program.inputs, |k| !hoisted[k], chunk)?;
    if stops {
        a.mov(chunk.frame.stopped(), 0)?;
    }
    body(a, &program.insts, chunk)?;
    if stops {
        a.cmp(chunk.frame.stopped(), 0)?;
        a.jne(stop)?;
    }
    store(a, &program.outputs, chunk)
}

fn assemble(program: &TileProgram) -> Result<Vec<u8>, IcedError> {
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
    let hoist = |a: &mut CodeAssembler, kind: Input| {
        let wanted = |k: usize| hoisted[k] && program.inputs[k].0 == kind;
        load_inputs(a, &program.inputs, wanted, whole)
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
            emit_chunk(&mut a, program, &hoisted, whole, done)?;
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
    emit_chunk(&mut a, program, &hoisted, whole, done)?;
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
    emit_chunk(&mut a, program, &hoisted, masked, done)?;
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
    let lanes64: Vec<u64> = POOL64.iter().flat_map(|&v| [v; 4]).collect();
    a.dq(&lanes64)?;
    a.assemble(0)
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
