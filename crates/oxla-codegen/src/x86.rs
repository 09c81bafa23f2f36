//! AVX-512 code for tile programs, encoded by `iced-x86` into executable pages.
//!
//! The generated function takes one pointer to [`Args`] (System V convention). It walks
//! elements `start..end` row by row: within a row, full 16-element chunks, then the rest of
//! the row once under lane mask `k1` (masked-off lanes are neither loaded, so nothing past a
//! slice's end is touched, nor stored). Program register `r` is `zmm{r}`, and `zmm24` to
//! `zmm31` are scratch; small programs run two chunks at a time on two register sets
//! ([`PAIRED_REGISTERS`]). Mask registers `k2` to `k5` hold per-lane conditions.
//!
//! General registers: `r8` the input pointer array, `r9` the output pointer array, `rcx`
//! the element index, `r10` the end, `r11` the row length, `rbx` the row, `r12` the
//! column, `r13` the output index (`rcx - start`), `r14` what is left of the row's segment,
//! `r15` the constant pool after the code, `rax` and `edx` scratch.

use super::{Cmp, Input, Inst, TileProgram};
use iced_x86::code_asm::*;
use iced_x86::Instruction;

/// Registers a program may name: `zmm24` to `zmm31` are the generator's scratch.
const PROGRAM_REGISTERS: usize = 24;

/// Programs of at most this many registers run two chunks at a time, their instructions
/// interleaved: `zmm0` to `zmm7` and scratch `zmm16` to `zmm23` for the first chunk, `zmm8`
/// to `zmm15` and scratch `zmm24` to `zmm31` for the second. Two independent chains keep the
/// vector units busy through long dependent sequences such as `exp`'s.
const PAIRED_REGISTERS: usize = 8;

const ZMM: [AsmRegisterZmm; 32] = [
    zmm0, zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7, zmm8, zmm9, zmm10, zmm11, zmm12, zmm13, zmm14,
    zmm15, zmm16, zmm17, zmm18, zmm19, zmm20, zmm21, zmm22, zmm23, zmm24, zmm25, zmm26, zmm27,
    zmm28, zmm29, zmm30, zmm31,
];

/// Scratch registers: the high set (a single chunk's, and a pair's second chunk's), and the
/// low set (a pair's first chunk's).
const S_HIGH: [AsmRegisterZmm; 8] = [zmm24, zmm25, zmm26, zmm27, zmm28, zmm29, zmm30, zmm31];
const S_LOW: [AsmRegisterZmm; 8] = [zmm16, zmm17, zmm18, zmm19, zmm20, zmm21, zmm22, zmm23];

/// Constants the code reads, placed after it in the same pages; `r15` points at them, and
/// each is broadcast from there (one load, no general register).
#[derive(Clone, Copy)]
enum K {
    Sign,
    Magnitude,
    One,
    Exponent,
    ExpLow,
    ExpHigh,
    Round32,
    Log2E,
    Ln2Hi,
    Ln2Lo,
    Taylor7,
    Taylor6,
    Taylor5,
    Taylor4,
    Taylor3,
    Half,
    Bias,
    Zero,
}

/// The bits of each [`K`], in its order.
const POOL: [u32; 18] = [
    0x8000_0000,
    0x7fff_ffff,
    0x3f80_0000,
    0x7f80_0000,
    (-104.0f32).to_bits(),
    89.0f32.to_bits(),
    12582912.0f32.to_bits(),
    std::f32::consts::LOG2_E.to_bits(),
    0.693_359_4f32.to_bits(),
    (-2.121_944_4e-4f32).to_bits(),
    (1.0f32 / 5040.0).to_bits(),
    (1.0f32 / 720.0).to_bits(),
    (1.0f32 / 120.0).to_bits(),
    (1.0f32 / 24.0).to_bits(),
    (1.0f32 / 6.0).to_bits(),
    0.5f32.to_bits(),
    127,
    0,
];

pub(crate) fn available() -> bool {
    std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("bmi2")
}

/// What the generated function reads from its one argument.
#[repr(C)]
pub(crate) struct Args {
    pub inputs: *const *const f32,
    pub outs: *const *mut f32,
    pub start: usize,
    pub end: usize,
    pub row_len: usize,
    /// `start / row_len` and `start % row_len`.
    pub row: usize,
    pub col: usize,
}

type Entry = unsafe extern "sysv64" fn(*const Args);

/// Generated code in executable pages, and its entry point.
pub(crate) struct Code {
    _pages: memmap2::Mmap,
    entry: Entry,
}

impl Code {
    /// Calls the code.
    ///
    /// # Safety
    /// `args.inputs` and `args.outs` point to as many pointers as the program has inputs
    /// and outputs; each input is readable at every element its kind indexes for elements
    /// `start..end`, each output writable for `end - start` elements, and outputs do not
    /// overlap each other.
    pub(crate) unsafe fn call(&self, args: &Args) {
        // SAFETY: the caller's contract is the code's; the code was compiled for a CPU with
        // AVX-512F and BMI2 (checked in `compile`) and touches no memory beyond those
        // operands and the stack slots of the registers it saves.
        unsafe { (self.entry)(args) }
    }
}

pub(crate) fn compile(program: &TileProgram) -> Option<Code> {
    if program.registers() > PROGRAM_REGISTERS {
        return None;
    }
    let bytes = assemble(program).ok()?;
    let mut pages = memmap2::MmapMut::map_anon(bytes.len()).ok()?;
    pages.copy_from_slice(&bytes);
    let pages = pages.make_exec().ok()?;
    // SAFETY: the pages hold a complete function with the `Entry` signature, assembled
    // above for this address-independent layout (every jump is relative), and they stay
    // mapped as long as `Code` lives.
    let entry = unsafe { std::mem::transmute::<*const u8, Entry>(pages.as_ptr()) };
    Some(Code {
        _pages: pages,
        entry,
    })
}

/// Where one copy of the chunk body keeps its values: program register `r` in
/// `zmm{base + r}`, its own scratch and mask registers (`k1` is the tail mask), and its
/// elements `offset` bytes past the chunk's index (a second copy works on the next chunk).
#[derive(Clone, Copy)]
struct Lanes {
    base: usize,
    scratch: [AsmRegisterZmm; 8],
    masks: [AsmRegisterK; 2],
    offset: i32,
}

/// The instructions of one chunk of the program at element `rcx`, column `r12`, row `rbx`
/// and output index `r13` (each plus `lanes.offset` bytes), masked by `k1` when `masked`.
/// They use no label, so two copies can be interleaved.
fn chunk(program: &TileProgram, masked: bool, lanes: Lanes) -> Result<Vec<Instruction>, IcedError> {
    let mut a = CodeAssembler::new(64)?;
    let off = lanes.offset;
    let z = |r: u8| ZMM[lanes.base + usize::from(r)];
    for (k, &(kind, r)) in program.inputs.iter().enumerate() {
        let dst = z(r);
        a.mov(rax, qword_ptr(r8 + 8 * k as i32))?;
        let load = |a: &mut CodeAssembler, src: AsmMemoryOperand| {
            if masked {
                a.vmovups(dst.k1().z(), src)
            } else {
                a.vmovups(dst, src)
            }
        };
        match kind {
            Input::Stream => load(&mut a, zmmword_ptr(rax + rcx * 4 + off))?,
            Input::RowVector => load(&mut a, zmmword_ptr(rax + r12 * 4 + off))?,
            Input::RowScalar => a.vbroadcastss(dst, dword_ptr(rax + rbx * 4))?,
            Input::Scalar => a.vbroadcastss(dst, dword_ptr(rax))?,
        }
    }
    let (s0, s1) = (lanes.scratch[6], lanes.scratch[7]);
    for &(inst, d) in &program.insts {
        let d = z(d);
        match inst {
            Inst::Add(x, y) => a.vaddps(d, z(x), z(y))?,
            Inst::Subtract(x, y) => a.vsubps(d, z(x), z(y))?,
            Inst::Multiply(x, y) => a.vmulps(d, z(x), z(y))?,
            Inst::Divide(x, y) => a.vdivps(d, z(x), z(y))?,
            Inst::Negate(x) => a.vpxord(d, z(x), constant(K::Sign))?,
            Inst::Abs(x) => a.vpandd(d, z(x), constant(K::Magnitude))?,
            Inst::Sqrt(x) => a.vsqrtps(d, z(x))?,
            Inst::Rsqrt(x) => {
                a.vsqrtps(s0, z(x))?;
                splat(&mut a, s1, K::One)?;
                a.vdivps(d, s1, s0)?;
            }
            Inst::Exp(x) => exp(&mut a, lanes, d, z(x))?,
            Inst::Tanh(x) => wide(&mut a, lanes, d, z(x), true)?,
            Inst::Logistic(x) => wide(&mut a, lanes, d, z(x), false)?,
            Inst::Maximum(x, y) => extremum(&mut a, lanes, d, z(x), z(y), true, true)?,
            Inst::Minimum(x, y) => extremum(&mut a, lanes, d, z(x), z(y), false, true)?,
            Inst::Clamp(lo, x, hi) => {
                let low = lanes.scratch[2];
                extremum(&mut a, lanes, low, z(x), z(lo), true, false)?;
                extremum(&mut a, lanes, d, low, z(hi), false, false)?;
            }
            Inst::Compare(cmp, x, y) => {
                let predicate = match cmp {
                    Cmp::Eq => EQ_OQ,
                    Cmp::Ne => NEQ_UQ,
                    Cmp::Lt => LT_OQ,
                    Cmp::Le => LE_OQ,
                    Cmp::Gt => GT_OQ,
                    Cmp::Ge => GE_OQ,
                };
                let m = lanes.masks[0];
                a.vcmpps(m, z(x), z(y), predicate)?;
                a.vbroadcastss(under_zero(d, m), dword_ptr(r15 + 4 * K::One as i32))?;
            }
            Inst::Not(x) => {
                let m = lanes.masks[0];
                a.vcmpps(m, z(x), constant(K::Zero), EQ_OQ)?;
                a.vbroadcastss(under_zero(d, m), dword_ptr(r15 + 4 * K::One as i32))?;
            }
            Inst::And(x, y) => {
                let m = lanes.masks[0];
                a.vcmpps(m, z(x), constant(K::Zero), NEQ_UQ)?;
                a.vcmpps(under_k(m, m), z(y), constant(K::Zero), NEQ_UQ)?;
                a.vbroadcastss(under_zero(d, m), dword_ptr(r15 + 4 * K::One as i32))?;
            }
            Inst::Or(x, y) => {
                let [m1, m2] = lanes.masks;
                a.vcmpps(m1, z(x), constant(K::Zero), NEQ_UQ)?;
                a.vcmpps(m2, z(y), constant(K::Zero), NEQ_UQ)?;
                a.korw(m1, m1, m2)?;
                a.vbroadcastss(under_zero(d, m1), dword_ptr(r15 + 4 * K::One as i32))?;
            }
            Inst::Select(p, t, f) => {
                let m = lanes.masks[0];
                a.vcmpps(m, z(p), constant(K::Zero), NEQ_UQ)?;
                a.vblendmps(under_z(d, m), z(f), z(t))?;
            }
        }
    }
    for (k, &r) in program.outputs.iter().enumerate() {
        a.mov(rax, qword_ptr(r9 + 8 * k as i32))?;
        let dst = zmmword_ptr(rax + r13 * 4 + off);
        if masked {
            a.vmovups(dst.k1(), z(r))?;
        } else {
            a.vmovups(dst, z(r))?;
        }
    }
    Ok(a.take_instructions())
}

/// `vcmpps` predicates (ordered and quiet, except `!=`, which is true for NaN).
const EQ_OQ: i32 = 0x00;
const UNORD_Q: i32 = 0x03;
const NEQ_UQ: i32 = 0x04;
const ORD_Q: i32 = 0x07;
const LT_OQ: i32 = 0x11;
const LE_OQ: i32 = 0x12;
const GE_OQ: i32 = 0x1d;
const GT_OQ: i32 = 0x1e;

/// `z` written under mask `m` with the other lanes zeroed.
fn under_zero(z: AsmRegisterZmm, m: AsmRegisterK) -> AsmRegisterZmm {
    under_z(z, m).z()
}

/// `z` written under mask `m` (one of `k2` to `k5`, the body's masks).
fn under_z(z: AsmRegisterZmm, m: AsmRegisterK) -> AsmRegisterZmm {
    match m {
        m if m == k2 => z.k2(),
        m if m == k3 => z.k3(),
        m if m == k4 => z.k4(),
        _ => z.k5(),
    }
}

/// Mask register `r` written under mask `m` (one of `k2` to `k5`).
fn under_k(r: AsmRegisterK, m: AsmRegisterK) -> AsmRegisterK {
    match m {
        m if m == k2 => r.k2(),
        m if m == k3 => r.k3(),
        m if m == k4 => r.k4(),
        _ => r.k5(),
    }
}

/// f64 constants, placed after [`POOL`] (so at `r15 + 4 * POOL.len()`).
#[derive(Clone, Copy)]
enum K64 {
    Magnitude,
    Sign,
    Zero,
    Ten,
    Two,
    Round,
    Log2E,
    Ln2Hi,
    Ln2Lo,
    Bias,
    LogisticLow,
    LogisticHigh,
    /// The Taylor coefficients of `expm1`, `1/1!` to `1/8!`.
    C0,
    C1,
    C2,
    C3,
    C4,
    C5,
    C6,
    C7,
}

/// The bits of each [`K64`], in its order.
const POOL64: [u64; 20] = [
    0x7fff_ffff_ffff_ffff,
    0x8000_0000_0000_0000,
    0,
    10.0f64.to_bits(),
    2.0f64.to_bits(),
    6755399441055744.0f64.to_bits(),
    std::f64::consts::LOG2_E.to_bits(),
    0.6931471803691238f64.to_bits(),
    1.9082149292705877e-10f64.to_bits(),
    1023,
    (-200.0f64).to_bits(),
    200.0f64.to_bits(),
    1.0f64.to_bits(),
    (1.0f64 / 2.0).to_bits(),
    (1.0f64 / 6.0).to_bits(),
    (1.0f64 / 24.0).to_bits(),
    (1.0f64 / 120.0).to_bits(),
    (1.0f64 / 720.0).to_bits(),
    (1.0f64 / 5040.0).to_bits(),
    (1.0f64 / 40320.0).to_bits(),
];

/// f64 constant `k` as an operand broadcast to every lane.
fn constant64(k: K64) -> AsmMemoryOperand {
    qword_bcst(r15 + (4 * POOL.len() + 8 * k as usize) as i32)
}

/// Fills every f64 lane of `z` with constant `k`.
fn splat64(a: &mut CodeAssembler, z: AsmRegisterZmm, k: K64) -> Result<(), IcedError> {
    a.vbroadcastsd(z, qword_ptr(r15 + (4 * POOL.len() + 8 * k as usize) as i32))
}

const YMM: [AsmRegisterYmm; 32] = [
    ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7, ymm8, ymm9, ymm10, ymm11, ymm12, ymm13, ymm14,
    ymm15, ymm16, ymm17, ymm18, ymm19, ymm20, ymm21, ymm22, ymm23, ymm24, ymm25, ymm26, ymm27,
    ymm28, ymm29, ymm30, ymm31,
];

/// The `ymm` half of `z`.
fn low_half(z: AsmRegisterZmm) -> AsmRegisterYmm {
    let index = ZMM.iter().position(|&r| r == z).unwrap_or(0);
    YMM[index]
}

/// `d = tanh(x)` (when `tanh`) or `d = logistic(x)`, as `Inst::Tanh` and `Inst::Logistic`
/// describe: each half of the chunk widened to eight f64 lanes, computed, and narrowed back.
/// Reads `x` before writing `d`.
fn wide(
    a: &mut CodeAssembler,
    lanes: Lanes,
    d: AsmRegisterZmm,
    x: AsmRegisterZmm,
    tanh: bool,
) -> Result<(), IcedError> {
    let [xs, out, y, s, q, t, e, high] = lanes.scratch;
    a.vmovaps(xs, x)?;
    for half in 0..2 {
        if half == 0 {
            a.vcvtps2pd(y, low_half(xs))?;
        } else {
            a.vextracti64x4(low_half(high), xs, 1)?;
            a.vcvtps2pd(y, low_half(high))?;
        }
        // The argument of `exp_parts`, clamped with the bound first so NaN stays.
        if tanh {
            a.vpandq(y, y, constant64(K64::Magnitude))?;
            splat64(a, t, K64::Zero)?;
            a.vmaxpd(y, t, y)?;
            splat64(a, t, K64::Ten)?;
            a.vminpd(y, t, y)?;
            a.vaddpd(y, y, y)?;
        } else {
            a.vpxorq(y, y, constant64(K64::Sign))?;
            splat64(a, t, K64::LogisticLow)?;
            a.vmaxpd(y, t, y)?;
            splat64(a, t, K64::LogisticHigh)?;
            a.vminpd(y, t, y)?;
        }
        // k = round(y log2 e) by adding and subtracting 1.5 * 2^52; s = 2^k.
        a.vmulpd(s, y, constant64(K64::Log2E))?;
        a.vaddpd(s, s, constant64(K64::Round))?;
        a.vsubpd(q, s, constant64(K64::Round))?;
        splat64(a, t, K64::Round)?;
        a.vpsubq(s, s, t)?;
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
        if tanh {
            // e = s q + (s - 1); e / (e + 2).
            a.vmulpd(t, s, q)?;
            a.vsubpd(e, s, constant64(K64::C0))?;
            a.vaddpd(e, t, e)?;
            a.vaddpd(t, e, constant64(K64::Two))?;
            a.vdivpd(e, e, t)?;
        } else {
            // 1 / (1 + (s q + s)).
            a.vmulpd(t, s, q)?;
            a.vaddpd(t, t, s)?;
            a.vaddpd(t, t, constant64(K64::C0))?;
            splat64(a, e, K64::C0)?;
            a.vdivpd(e, e, t)?;
        }
        if half == 0 {
            a.vcvtpd2ps(low_half(out), e)?;
        } else {
            a.vcvtpd2ps(low_half(high), e)?;
            a.vinserti64x4(out, out, low_half(high), 1)?;
        }
    }
    if tanh {
        // The sign of x.
        a.vpandd(out, out, constant(K::Magnitude))?;
        a.vpandd(t, xs, constant(K::Sign))?;
        a.vpord(d, out, t)
    } else {
        a.vmovaps(d, out)
    }
}

/// Constant `k` as an operand broadcast to every lane.
fn constant(k: K) -> AsmMemoryOperand {
    dword_bcst(r15 + 4 * k as i32)
}

/// Fills every lane of `z` with constant `k`.
fn splat(a: &mut CodeAssembler, z: AsmRegisterZmm, k: K) -> Result<(), IcedError> {
    a.vbroadcastss(z, dword_ptr(r15 + 4 * k as i32))
}

/// `d = max(x, y)` (or `min` when not `max`) as `Inst::Maximum` describes, with denormal
/// operands read as their signed zero when `flush`; reads both operands before writing `d`
/// (uses scratch registers 0 and 1 only).
fn extremum(
    a: &mut CodeAssembler,
    lanes: Lanes,
    d: AsmRegisterZmm,
    x: AsmRegisterZmm,
    y: AsmRegisterZmm,
    max: bool,
    flush: bool,
) -> Result<(), IcedError> {
    let [m1, m2] = lanes.masks;
    let (fx, fy) = if flush {
        let [fx, fy, ..] = lanes.scratch;
        // A denormal (exponent bits zero) becomes its signed zero; zeros are unchanged.
        for (f, v, m) in [(fx, x, m1), (fy, y, m2)] {
            a.vpandd(f, v, constant(K::Sign))?;
            a.vptestmd(m, v, constant(K::Exponent))?;
            a.vmovaps(under_z(f, m), v)?;
        }
        (fx, fy)
    } else {
        (x, y)
    };
    // Pick x where x is strictly beyond y, or they are equal and x's sign is the one that
    // wins (positive for max, negative for min), and y is not NaN; or where x is NaN.
    a.vcmpps(m1, fx, fy, if max { GT_OQ } else { LT_OQ })?;
    a.vcmpps(m2, fx, fy, EQ_OQ)?;
    if max {
        a.vptestnmd(under_k(m2, m2), fx, constant(K::Sign))?;
    } else {
        a.vptestmd(under_k(m2, m2), fx, constant(K::Sign))?;
    }
    a.korw(m1, m1, m2)?;
    a.vcmpps(under_k(m1, m1), fy, fy, ORD_Q)?;
    a.vcmpps(m2, fx, fx, UNORD_Q)?;
    a.korw(m1, m1, m2)?;
    a.vblendmps(under_z(d, m1), fy, fx)
}

/// `d = e^x`, step for step as `Inst::Exp` describes; reads `x` before writing `d`.
fn exp(
    a: &mut CodeAssembler,
    lanes: Lanes,
    d: AsmRegisterZmm,
    x: AsmRegisterZmm,
) -> Result<(), IcedError> {
    let [xs, c, t, ki, p, err, s1, s2] = lanes.scratch;
    // Clamp to [-104, 89]. `vmaxps`/`vminps` return their second operand when either is
    // NaN or they are equal, so with the bound first a NaN `x` stays.
    splat(a, c, K::ExpLow)?;
    a.vmaxps(xs, c, x)?;
    splat(a, c, K::ExpHigh)?;
    a.vminps(xs, c, xs)?;
    // t = x * log2(e) + ROUND32 (one rounding); ki = bits(t) - bits(ROUND32); k = t - ROUND32.
    splat(a, t, K::Round32)?;
    a.vfmadd231ps(t, xs, constant(K::Log2E))?;
    a.vpsubd(ki, t, constant(K::Round32))?;
    a.vsubps(t, t, constant(K::Round32))?;
    // r = x - k * LN2_HI, then r - k * LN2_LO, each one rounding.
    a.vfnmadd231ps(xs, t, constant(K::Ln2Hi))?;
    a.vfnmadd231ps(xs, t, constant(K::Ln2Lo))?;
    // p = ((((1/5040 r + 1/720) r + 1/120) r + 1/24) r + 1/6) r + 1/2.
    splat(a, p, K::Taylor7)?;
    for coefficient in [K::Taylor6, K::Taylor5, K::Taylor4, K::Taylor3, K::Half] {
        a.vfmadd213ps(p, xs, constant(coefficient))?;
    }
    // t = 1 + r; err = (1 - t) + r; e = t + (r * r * p + err).
    a.vaddps(t, xs, constant(K::One))?;
    splat(a, c, K::One)?;
    a.vsubps(err, c, t)?;
    a.vaddps(err, err, xs)?;
    a.vmulps(s1, xs, xs)?;
    a.vfmadd213ps(s1, p, err)?;
    a.vaddps(t, t, s1)?;
    // The scale 2^ki as 2^h * 2^(ki - h), h = ki >> 1 (arithmetic).
    a.vpsrad(p, ki, 1)?;
    a.vpaddd(s1, p, constant(K::Bias))?;
    a.vpslld(s1, s1, 23)?;
    a.vpsubd(s2, ki, p)?;
    a.vpaddd(s2, s2, constant(K::Bias))?;
    a.vpslld(s2, s2, 23)?;
    a.vmulps(t, t, s1)?;
    a.vmulps(d, t, s2)
}

/// Moves the element index, column and output index `n` elements on, and takes `n` off
/// what is left of the row's segment.
fn advance(a: &mut CodeAssembler, n: i32) -> Result<(), IcedError> {
    for r in [rcx, r12, r13] {
        a.add(r, n)?;
    }
    a.sub(r14, n)
}

fn assemble(program: &TileProgram) -> Result<Vec<u8>, IcedError> {
    let mut a = CodeAssembler::new(64)?;
    let mut row_loop = a.create_label();
    let mut full = a.create_label();
    let mut tail = a.create_label();
    let mut next_row = a.create_label();
    let mut done = a.create_label();
    let mut pool = a.create_label();
    for r in [rbx, r12, r13, r14, r15] {
        a.push(r)?;
    }
    a.lea(r15, ptr(pool))?;
    a.mov(r8, qword_ptr(rdi))?;
    a.mov(r9, qword_ptr(rdi + 8))?;
    a.mov(rcx, qword_ptr(rdi + 16))?;
    a.mov(r10, qword_ptr(rdi + 24))?;
    a.mov(r11, qword_ptr(rdi + 32))?;
    a.mov(rbx, qword_ptr(rdi + 40))?;
    a.mov(r12, qword_ptr(rdi + 48))?;
    a.xor(r13, r13)?;
    a.set_label(&mut row_loop)?;
    a.cmp(rcx, r10)?;
    a.jae(done)?;
    // This row's segment: to the row's end or to `end`, whichever comes first.
    a.mov(r14, r11)?;
    a.sub(r14, r12)?;
    a.mov(rax, r10)?;
    a.sub(rax, rcx)?;
    a.cmp(rax, r14)?;
    a.cmovb(r14, rax)?;
    let paired = program.registers() <= PAIRED_REGISTERS;
    let single = if paired {
        Lanes {
            base: 0,
            scratch: S_LOW,
            masks: [k2, k3],
            offset: 0,
        }
    } else {
        Lanes {
            base: 0,
            scratch: S_HIGH,
            masks: [k2, k3],
            offset: 0,
        }
    };
    if paired {
        let second = Lanes {
            base: PAIRED_REGISTERS,
            scratch: S_HIGH,
            masks: [k4, k5],
            offset: 64,
        };
        let mut pair = a.create_label();
        a.set_label(&mut pair)?;
        a.cmp(r14, 32)?;
        a.jb(full)?;
        let first = chunk(program, false, single)?;
        let second = chunk(program, false, second)?;
        // The copies are the same instructions on other registers: a shared `rax` is
        // loaded with the same pointer by both before either uses it.
        for (x, y) in first.into_iter().zip(second) {
            a.add_instruction(x)?;
            a.add_instruction(y)?;
        }
        advance(&mut a, 32)?;
        a.jmp(pair)?;
    }
    a.set_label(&mut full)?;
    a.cmp(r14, 16)?;
    a.jb(tail)?;
    for x in chunk(program, false, single)? {
        a.add_instruction(x)?;
    }
    advance(&mut a, 16)?;
    a.jmp(full)?;
    a.set_label(&mut tail)?;
    a.test(r14, r14)?;
    a.jz(next_row)?;
    // k1: the low `r14` (1..15) lanes.
    a.mov(edx, -1)?;
    a.bzhi(edx, edx, r14d)?;
    a.kmovw(k1, edx)?;
    for x in chunk(program, true, single)? {
        a.add_instruction(x)?;
    }
    a.add(rcx, r14)?;
    a.add(r13, r14)?;
    a.set_label(&mut next_row)?;
    a.inc(rbx)?;
    a.xor(r12, r12)?;
    a.jmp(row_loop)?;
    a.set_label(&mut done)?;
    for r in [r15, r14, r13, r12, rbx] {
        a.pop(r)?;
    }
    a.vzeroupper()?;
    a.ret()?;
    a.set_label(&mut pool)?;
    a.dd(&POOL)?;
    a.dq(&POOL64)?;
    a.assemble(0)
}
