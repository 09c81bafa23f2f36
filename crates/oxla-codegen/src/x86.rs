//! AVX-512 code for tile programs and loops, encoded by `iced-x86` into executable pages.
//!
//! A tile program's function takes one pointer to [`Args`] (System V convention). It walks
//! elements `start..end` row by row: within a row, full 16-element chunks, then the rest of
//! the row once under lane mask `k1` (masked-off lanes are neither loaded, so nothing past a
//! slice's end is touched, nor stored). Program register `r` is `zmm{r}`, and `zmm24` to
//! `zmm31` are scratch; small programs run two chunks at a time on two register sets
//! ([`PAIRED_REGISTERS`]). Mask registers `k2` to `k5` hold per-lane conditions, and `k6`
//! collects the lanes `sin` and `cos` do not cover: the code returns, with the count of
//! elements done, before storing a chunk where it is not empty.
//!
//! General registers: `r8` the input pointer array, `r9` the output pointer array, `rcx`
//! the element index, `r10` the end, `r11` the row length, `rbx` the row, `r12` the
//! column, `r13` the output index (`rcx - start`), `r14` what is left of the row's segment,
//! `r15` the constant pool after the code, `rax` and `edx` scratch.
//!
//! A loop's function takes one pointer to [`LoopArgs`] and runs chunk by chunk, every
//! iteration of a chunk before the next chunk (see [`assemble_loop`]).

use super::divide_by::DivideBy;
use super::{Cmp, Input, Inst, LoopBody, TileProgram, PAIRED_REGISTERS};
use iced_x86::code_asm::*;
use iced_x86::Instruction;

/// Registers a program may name: `zmm24` to `zmm31` are the generator's scratch.
const PROGRAM_REGISTERS: usize = 24;

const ZMM: [AsmRegisterZmm; 32] = [
    zmm0, zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7, zmm8, zmm9, zmm10, zmm11, zmm12, zmm13, zmm14,
    zmm15, zmm16, zmm17, zmm18, zmm19, zmm20, zmm21, zmm22, zmm23, zmm24, zmm25, zmm26, zmm27,
    zmm28, zmm29, zmm30, zmm31,
];

/// Scratch registers: the high set (a single chunk's, and a pair's second chunk's), and the
/// low set (a pair's first chunk's). A program of at most [`PAIRED_REGISTERS`] registers
/// runs two chunks at a time, the first in `zmm0` to `zmm7`, the second in `zmm8` to `zmm15`.
const S_HIGH: [AsmRegisterZmm; 8] = [zmm24, zmm25, zmm26, zmm27, zmm28, zmm29, zmm30, zmm31];
const S_LOW: [AsmRegisterZmm; 8] = [zmm16, zmm17, zmm18, zmm19, zmm20, zmm21, zmm22, zmm23];

/// Constants the code reads, placed after it in the same pages; `r15` points at them, and
/// each is broadcast from there (one load, no general register).
#[derive(Clone, Copy)]
pub(crate) enum K {
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
    Zero,
    TrigLimit,
    MinNormal,
    NegMinNormal,
    AllOnes,
    TwoPow31,
    IntOne,
    Two,
    Ten,
    TanhBelow,
    Tanh0,
    Tanh1,
    Tanh2,
    Tanh3,
    Tanh4,
    Tanh5,
}

/// The bits of each [`K`], in its order.
pub(crate) const POOL: [u32; 32] = [
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
    0,
    65536.0f32.to_bits(),
    f32::MIN_POSITIVE.to_bits(),
    (-f32::MIN_POSITIVE).to_bits(),
    u32::MAX,
    2_147_483_648.0f32.to_bits(),
    1,
    2.0f32.to_bits(),
    10.0f32.to_bits(),
    super::TANH_SERIES_BELOW.to_bits(),
    super::TANH_SERIES[0].to_bits(),
    super::TANH_SERIES[1].to_bits(),
    super::TANH_SERIES[2].to_bits(),
    super::TANH_SERIES[3].to_bits(),
    super::TANH_SERIES[4].to_bits(),
    super::TANH_SERIES[5].to_bits(),
];
// `POOL64` follows 8-byte aligned.
const _: () = assert!(POOL.len().is_multiple_of(2));

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
    /// One pointer per row sum of the program: its first row's total.
    pub sums: *const *mut f32,
}

/// What the generated function of a loop reads from its one argument, and writes back
/// when it stops early.
#[repr(C)]
pub(crate) struct LoopArgs {
    pub inputs: *const *const f32,
    pub carried: *const *mut f32,
    pub from: usize,
    pub len: usize,
    pub trips: u64,
    /// Set when the code stops: the chunk it stopped in and the iterations that chunk
    /// finished.
    pub stopped_chunk: usize,
    pub trips_done: u64,
}

/// A tile program's code: returns how many elements it computed.
type Entry = unsafe extern "sysv64" fn(*const Args) -> usize;

/// A loop's code: returns 1 when it stopped early, else 0.
type LoopEntry = unsafe extern "sysv64" fn(*mut LoopArgs) -> usize;

/// Generated code in executable pages, its entry point at their start.
pub(crate) struct Code {
    pages: memmap2::Mmap,
}

impl Code {
    /// Calls tile program code; returns the elements it computed.
    ///
    /// # Safety
    /// The code was compiled by [`compile`] or `x86_avx2::compile`; `args.inputs` and `args.outs` point to as many
    /// pointers as the program has inputs and outputs; each input is readable at every
    /// element its kind indexes for elements `start..end`, each output writable for
    /// `end - start` elements, and outputs do not overlap each other.
    pub(crate) unsafe fn call(&self, args: &Args) -> usize {
        // SAFETY: the pages hold a complete function with the `Entry` signature (assembled
        // by `compile`, or `x86_avx2::compile`, for this address-independent layout: every
        // jump is relative) for a CPU with the features its generator's `available` checks
        // (AVX-512F and BMI2, or AVX2 and FMA); the caller's contract is the code's, and the code
        // touches no memory beyond those operands and the stack slots of the registers it
        // saves.
        unsafe {
            let entry = std::mem::transmute::<*const u8, Entry>(self.pages.as_ptr());
            entry(args)
        }
    }

    /// Calls loop code; true when it stopped early (`args` then says where).
    ///
    /// # Safety
    /// The code was compiled by [`compile_loop`]; `args.inputs` and `args.carried` point
    /// to as many pointers as the body has inputs and carried values; each whole input is
    /// readable for `len` elements (one-value inputs for one), each carried slice readable
    /// and writable for `len` elements, and carried slices overlap nothing else.
    pub(crate) unsafe fn call_loop(&self, args: &mut LoopArgs) -> bool {
        // SAFETY: as in `call`, for a function with the `LoopEntry` signature.
        unsafe {
            let entry = std::mem::transmute::<*const u8, LoopEntry>(self.pages.as_ptr());
            entry(args) != 0
        }
    }
}

/// A scalar loop's code: returns nothing.
type ScalarEntry = unsafe extern "sysv64" fn(*mut u8);

impl Code {
    /// Calls scalar loop code on the arena at `arena`.
    ///
    /// # Safety
    /// The code was compiled by `x86_scalar::compile` for a program whose every access
    /// lies in its arena (`ScalarLoop::in_bounds`), and `arena` is writable for that many
    /// bytes and not otherwise borrowed.
    pub(crate) unsafe fn call_scalar(&self, arena: *mut u8) {
        // SAFETY: the pages hold a complete function with the `ScalarEntry` signature
        // (assembled with relative jumps only) using base x86-64 and SSE2; it touches the
        // arena within the bounds the caller guarantees, and no other memory.
        unsafe {
            let entry = std::mem::transmute::<*const u8, ScalarEntry>(self.pages.as_ptr());
            entry(arena);
        }
    }
}

/// Copies assembled bytes into executable pages.
pub(crate) fn load(bytes: &[u8]) -> Option<Code> {
    let mut pages = memmap2::MmapMut::map_anon(bytes.len()).ok()?;
    pages.copy_from_slice(bytes);
    Some(Code {
        pages: pages.make_exec().ok()?,
    })
}

pub(crate) fn compile(program: &TileProgram) -> Option<Code> {
    if program.registers() > PROGRAM_REGISTERS {
        return None;
    }
    // Row sums keep two accumulators per sum in the registers a pair of chunks leaves
    // free, and are not split by an instruction that stops.
    let summing = !program.row_sums.is_empty();
    if summing
        && (program.registers() + program.row_sums.len() > PAIRED_REGISTERS
            || program.insts.iter().any(|(inst, _)| inst.may_stop()))
    {
        return None;
    }
    load(&assemble(program).ok()?)
}

/// Compiles a loop body that names `registers` registers.
pub(crate) fn compile_loop(body: &LoopBody, registers: usize) -> Option<Code> {
    // Carried values that trade places move through the scratch registers.
    if registers > PROGRAM_REGISTERS || body.carried.len() > S_HIGH.len() {
        return None;
    }
    load(&assemble_loop(body).ok()?)
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
/// and output index `r13` (each plus `lanes.offset` bytes), masked by `k1` when `masked`:
/// the loads and the instructions, then the stores. They use no label, so two copies can be
/// interleaved. Inputs `hoisted` marks (one flag per input) are loaded outside the chunk.
fn chunk(
    program: &TileProgram,
    hoisted: &[bool],
    masked: bool,
    lanes: Lanes,
) -> Result<(Vec<Instruction>, Vec<Instruction>), IcedError> {
    let mut a = CodeAssembler::new(64)?;
    let per_chunk = |k: usize| !hoisted[k];
    load_inputs(&mut a, r8, &program.inputs, per_chunk, masked, lanes)?;
    let live_out: Vec<u8> = (program.outputs.iter().copied())
        .chain(program.row_sums.iter().map(|&(r, _)| r))
        .collect();
    body(&mut a, &program.insts, masked, lanes, &live_out)?;
    let compute = a.take_instructions();
    store(&mut a, r9, &program.outputs, r13, masked, lanes)?;
    Ok((compute, a.take_instructions()))
}

/// Loads each input `k` that `wanted` picks (pointer `k` of the array at `array`) into its
/// register: element `rcx` (plus `lanes.offset` bytes) of a stream, column `r12` of a row
/// vector, row `rbx` of one value per row, or the one value.
fn load_inputs(
    a: &mut CodeAssembler,
    array: AsmRegister64,
    inputs: &[(Input, u8)],
    wanted: impl Fn(usize) -> bool,
    masked: bool,
    lanes: Lanes,
) -> Result<(), IcedError> {
    let off = lanes.offset;
    for (k, &(kind, r)) in inputs.iter().enumerate() {
        if kind == Input::OnDemand || !wanted(k) {
            continue;
        }
        let dst = ZMM[lanes.base + usize::from(r)];
        a.mov(rax, qword_ptr(array + 8 * k as i32))?;
        let load = |a: &mut CodeAssembler, src: AsmMemoryOperand| {
            if masked {
                a.vmovups(dst.k1().z(), src)
            } else {
                a.vmovups(dst, src)
            }
        };
        match kind {
            Input::Stream => load(a, zmmword_ptr(rax + rcx * 4 + off))?,
            Input::RowVector => load(a, zmmword_ptr(rax + r12 * 4 + off))?,
            Input::RowScalar => a.vbroadcastss(dst, dword_ptr(rax + rbx * 4))?,
            Input::Scalar => a.vbroadcastss(dst, dword_ptr(rax))?,
            Input::OnDemand => {}
        }
    }
    Ok(())
}

/// Stores each register of `regs` to pointer `k` of the array at `array`, at element
/// `index` (plus `lanes.offset` bytes).
fn store(
    a: &mut CodeAssembler,
    array: AsmRegister64,
    regs: &[u8],
    index: AsmRegister64,
    masked: bool,
    lanes: Lanes,
) -> Result<(), IcedError> {
    for (k, &r) in regs.iter().enumerate() {
        let src = ZMM[lanes.base + usize::from(r)];
        a.mov(rax, qword_ptr(array + 8 * k as i32))?;
        let dst = zmmword_ptr(rax + index * 4 + lanes.offset);
        if masked {
            a.vmovups(dst.k1(), src)?;
        } else {
            a.vmovups(dst, src)?;
        }
    }
    Ok(())
}

/// The instructions, register to register. Lanes an instruction that may stop does not
/// cover (only those under `k1` when `masked`) are added to `k6`. `live_out` holds the
/// registers read after the last instruction (the outputs, the row sums, a loop's next
/// values).
fn body(
    a: &mut CodeAssembler,
    insts: &[(Inst, u8)],
    masked: bool,
    lanes: Lanes,
    live_out: &[u8],
) -> Result<(), IcedError> {
    let z = |r: u8| ZMM[lanes.base + usize::from(r)];
    let (s0, s1) = (lanes.scratch[6], lanes.scratch[7]);
    let live_after = liveness(insts, live_out);
    let mut masks = Masks::new(lanes.masks);
    for (i, &(inst, dr)) in insts.iter().enumerate() {
        let d = z(dr);
        let live = |r: u8| live_after[i] & (1u64 << r) != 0;
        // Registers read as numbers get their value written first.
        for r in numeric_sources(inst) {
            masks.write_value(a, r, z)?;
        }
        let mask_use = MaskUse::of(inst);
        if mask_use == MaskUse::Clobbers {
            masks.write_live(a, live, z)?;
        }
        match inst {
            Inst::Add(x, y) => a.vaddps(d, z(x), z(y))?,
            Inst::Subtract(x, y) => a.vsubps(d, z(x), z(y))?,
            Inst::Multiply(x, y) => a.vmulps(d, z(x), z(y))?,
            Inst::Divide(x, y) => a.vdivps(d, z(x), z(y))?,
            Inst::Negate(x) => a.vpxord(d, z(x), constant(K::Sign))?,
            Inst::Abs(x) => a.vpandd(d, z(x), constant(K::Magnitude))?,
            Inst::Sqrt(x) => a.vsqrtps(d, z(x))?,
            Inst::Floor(x) | Inst::Ceil(x) => {
                // A denormal (exponent bits zero) becomes its signed zero, then the rounding
                // (down: mode 1, up: mode 2; the inexact exception suppressed).
                let m = lanes.masks[0];
                a.vpandd(s0, z(x), constant(K::Sign))?;
                a.vptestmd(m, z(x), constant(K::Exponent))?;
                a.vmovaps(under_z(s0, m), z(x))?;
                let mode = if matches!(inst, Inst::Floor(_)) {
                    0x09
                } else {
                    0x0a
                };
                a.vrndscaleps(d, s0, mode)?;
            }
            Inst::Rsqrt(x) => {
                a.vsqrtps(s0, z(x))?;
                splat(a, s1, K::One)?;
                a.vdivps(d, s1, s0)?;
            }
            Inst::Exp(x) => exp(a, lanes, d, z(x))?,
            Inst::Tanh(x) => tanh(a, lanes, d, z(x))?,
            Inst::Logistic(x) => logistic(a, lanes, d, z(x))?,
            Inst::Expm1(x) => expm1(a, lanes, d, z(x))?,
            Inst::Log(x) => log(a, lanes, d, z(x), false)?,
            Inst::Log1p(x) => log(a, lanes, d, z(x), true)?,
            Inst::Sin(x) => trig(a, lanes, d, z(x), false, masked)?,
            Inst::Cos(x) => trig(a, lanes, d, z(x), true, masked)?,
            Inst::Maximum(x, y) => extremum(a, lanes, d, z(x), z(y), true, true)?,
            Inst::Minimum(x, y) => extremum(a, lanes, d, z(x), z(y), false, true)?,
            Inst::MaximumOf(x, c, bits) => extremum_of(a, lanes, d, z(x), z(c), bits, true)?,
            Inst::MinimumOf(x, c, bits) => extremum_of(a, lanes, d, z(x), z(c), bits, false)?,
            Inst::Clamp(lo, x, hi) => {
                let low = lanes.scratch[2];
                extremum(a, lanes, low, z(x), z(lo), true, false)?;
                extremum(a, lanes, d, low, z(hi), false, false)?;
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
                let m = masks.take(a, None, live, z)?;
                a.vcmpps(m, z(x), z(y), predicate)?;
            }
            Inst::IntCompare(cmp, signed, x, y) => {
                // `vpcmpd` predicates: 0 ==, 1 <, 2 <=, 4 !=, 5 >=, 6 >.
                let predicate = match cmp {
                    Cmp::Eq => 0,
                    Cmp::Lt => 1,
                    Cmp::Le => 2,
                    Cmp::Ne => 4,
                    Cmp::Ge => 5,
                    Cmp::Gt => 6,
                };
                let m = masks.take(a, None, live, z)?;
                if signed {
                    a.vpcmpd(m, z(x), z(y), predicate)?;
                } else {
                    a.vpcmpud(m, z(x), z(y), predicate)?;
                }
            }
            Inst::IsFinite(x) => {
                // Finite where the exponent bits are not all ones.
                let m = masks.take(a, None, live, z)?;
                a.vpandd(s0, z(x), constant(K::Exponent))?;
                a.vpcmpd(m, s0, constant(K::Exponent), 4)?;
            }
            Inst::IntToMask(x) => {
                let m = masks.take(a, None, live, z)?;
                a.vptestmd(m, z(x), z(x))?;
            }
            Inst::Not(x) => match masks.slot_of(x) {
                Some(sx) => {
                    let m = masks.take(a, Some(sx), live, z)?;
                    a.knotw(m, masks.regs[sx])?;
                }
                None => {
                    let m = masks.take(a, None, live, z)?;
                    a.vcmpps(m, z(x), constant(K::Zero), EQ_OQ)?;
                }
            },
            Inst::And(x, y) | Inst::Or(x, y) => {
                let or = matches!(inst, Inst::Or(..));
                // The operand whose mask is held goes first.
                let (x, y) = if masks.slot_of(x).is_none() {
                    (y, x)
                } else {
                    (x, y)
                };
                match (masks.slot_of(x), masks.slot_of(y)) {
                    (Some(sx), Some(sy)) => {
                        let m = masks.take(a, Some(sx), live, z)?;
                        let (kx, ky) = (masks.regs[sx], masks.regs[sy]);
                        if or {
                            a.korw(m, kx, ky)?;
                        } else {
                            a.kandw(m, kx, ky)?;
                        }
                    }
                    (Some(sx), None) => {
                        let m = masks.take(a, Some(sx), live, z)?;
                        let kx = masks.regs[sx];
                        if or {
                            // `x | y` as `!(!x & y == 0)`.
                            a.knotw(m, kx)?;
                            a.vcmpps(under_k(m, m), z(y), constant(K::Zero), EQ_OQ)?;
                            a.knotw(m, m)?;
                        } else {
                            a.vcmpps(under_k(m, kx), z(y), constant(K::Zero), NEQ_UQ)?;
                        }
                    }
                    _ => {
                        let m = masks.take(a, None, live, z)?;
                        if or {
                            a.vcmpps(m, z(x), constant(K::Zero), EQ_OQ)?;
                            a.vcmpps(under_k(m, m), z(y), constant(K::Zero), EQ_OQ)?;
                            a.knotw(m, m)?;
                        } else {
                            a.vcmpps(m, z(x), constant(K::Zero), NEQ_UQ)?;
                            a.vcmpps(under_k(m, m), z(y), constant(K::Zero), NEQ_UQ)?;
                        }
                    }
                }
            }
            Inst::Select(p, t, f) => {
                let m = masks.read(a, p, live, z)?;
                a.vblendmps(under_z(d, m), z(f), z(t))?;
            }
            Inst::MaskToInt(x) => {
                // 1 (all ones shifted right by 31) where the value is not zero.
                let m = masks.read(a, x, live, z)?;
                a.vpsrld(under_zero(d, m), constant(K::AllOnes), 31)?;
            }
            Inst::IntAdd(x, y) => a.vpaddd(d, z(x), z(y))?,
            Inst::IntSubtract(x, y) => a.vpsubd(d, z(x), z(y))?,
            Inst::IntMultiply(x, y) => a.vpmulld(d, z(x), z(y))?,
            Inst::BitAnd(x, y) => a.vpandd(d, z(x), z(y))?,
            Inst::BitOr(x, y) => a.vpord(d, z(x), z(y))?,
            Inst::BitXor(x, y) => a.vpxord(d, z(x), z(y))?,
            Inst::BitNot(x) => a.vpxord(d, z(x), constant(K::AllOnes))?,
            Inst::ShiftLeft(x, y) => a.vpsllvd(d, z(x), z(y))?,
            Inst::ShiftRightLogical(x, y) => a.vpsrlvd(d, z(x), z(y))?,
            Inst::ShiftRightArithmetic(x, y) => a.vpsravd(d, z(x), z(y))?,
            Inst::IntMaximum(true, x, y) => a.vpmaxsd(d, z(x), z(y))?,
            Inst::IntMaximum(false, x, y) => a.vpmaxud(d, z(x), z(y))?,
            Inst::IntMinimum(true, x, y) => a.vpminsd(d, z(x), z(y))?,
            Inst::IntMinimum(false, x, y) => a.vpminud(d, z(x), z(y))?,
            Inst::IntNegate(x) => {
                a.vpxord(s0, s0, s0)?;
                a.vpsubd(d, s0, z(x))?;
            }
            Inst::IntAbs(x) => a.vpabsd(d, z(x))?,
            Inst::IntSign(true, x) => {
                // Clamped to [-1, 1].
                a.vpminsd(s0, z(x), constant(K::IntOne))?;
                a.vpmaxsd(d, s0, constant(K::AllOnes))?;
            }
            Inst::IntSign(false, x) => a.vpminud(d, z(x), constant(K::IntOne))?,
            Inst::IntDivide(signed, x, y) => int_divide(a, lanes, d, z(x), z(y), signed, false)?,
            Inst::IntRemainder(signed, x, y) => int_divide(a, lanes, d, z(x), z(y), signed, true)?,
            Inst::IntDivideBy(signed, x, c) => int_divide_by(a, lanes, d, z(x), c, signed, false)?,
            Inst::IntRemainderBy(signed, x, c) => {
                int_divide_by(a, lanes, d, z(x), c, signed, true)?
            }
            Inst::IntToF32(true, x) => a.vcvtdq2ps(d, z(x))?,
            Inst::IntToF32(false, x) => a.vcvtudq2ps(d, z(x))?,
            Inst::F32ToInt(true, x) => {
                // `vcvttps2dq` gives 0x80000000 for NaN and out of range: at or above 2^31
                // the largest value instead, NaN 0.
                let [m1, m2] = lanes.masks;
                a.vcvttps2dq(s0, z(x))?;
                a.vcmpps(m1, z(x), constant(K::TwoPow31), GE_OQ)?;
                a.vbroadcastss(under_z(s0, m1), dword_ptr(r15 + 4 * K::Magnitude as i32))?;
                a.vcmpps(m2, z(x), z(x), ORD_Q)?;
                a.vmovaps(under_zero(d, m2), s0)?;
            }
            Inst::F32ToInt(false, x) => {
                // Negative values and NaN to 0 first (`vmaxps` gives its second operand
                // for NaN); `vcvttps2udq` then saturates the rest at 0xffffffff.
                a.vmaxps(s0, z(x), constant(K::Zero))?;
                a.vcvttps2udq(d, s0)?;
            }
            Inst::LoadScalar(k) => {
                // `r8` holds the input pointers (tile programs only). In a pair of chunks
                // both copies load the same pointer into `rax` before either reads it.
                a.mov(rax, qword_ptr(r8 + 8 * i32::from(k)))?;
                a.vbroadcastss(d, dword_ptr(rax))?;
            }
        }
        // `dr` holds a new value: what was known of its old one is gone.
        match mask_use {
            MaskUse::Clobbers => masks.held = [None, None],
            MaskUse::Keeps | MaskUse::Reads => masks.forget(dr),
        }
        if let Some(s) = masks.taken.take() {
            masks.held[s] = Some(Held {
                reg: dr,
                written: false,
            });
        }
    }
    let live_out = register_set(live_out);
    masks.write_live(a, |r| live_out & (1u64 << r) != 0, z)
}

/// The set of registers `regs` as bits.
fn register_set(regs: &[u8]) -> u64 {
    regs.iter().fold(0, |set, &r| set | 1u64 << r)
}

/// Per instruction, the registers read by a later one before being written again, or in
/// `live_out` and not written again (program registers are below 32).
fn liveness(insts: &[(Inst, u8)], live_out: &[u8]) -> Vec<u64> {
    let mut live = register_set(live_out);
    let mut after = vec![0; insts.len()];
    for (i, (inst, dr)) in insts.iter().enumerate().rev() {
        after[i] = live;
        live &= !(1u64 << dr);
        live |= register_set(&inst.sources());
    }
    after
}

/// The registers an instruction reads as numbers (not as masks, which boolean ops and
/// selects take as `!= 0`).
fn numeric_sources(inst: Inst) -> Vec<u8> {
    match inst {
        Inst::And(..) | Inst::Or(..) | Inst::Not(_) | Inst::MaskToInt(_) => Vec::new(),
        Inst::Select(_, t, f) => vec![t, f],
        _ => inst.sources(),
    }
}

/// How an instruction treats the body's two mask registers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MaskUse {
    /// Leaves both as they are (it writes no register but its destination).
    Keeps,
    /// Writes one through [`Masks::take`] or reads one through [`Masks::read`], leaving
    /// the other as it is.
    Reads,
    /// Uses them as scratch.
    Clobbers,
}

impl MaskUse {
    fn of(inst: Inst) -> MaskUse {
        match inst {
            Inst::Compare(..)
            | Inst::IntCompare(..)
            | Inst::Not(_)
            | Inst::IsFinite(_)
            | Inst::And(..)
            | Inst::Or(..)
            | Inst::IntToMask(_)
            | Inst::Select(..)
            | Inst::MaskToInt(_) => MaskUse::Reads,
            Inst::Add(..)
            | Inst::Subtract(..)
            | Inst::Multiply(..)
            | Inst::Divide(..)
            | Inst::Negate(_)
            | Inst::Abs(_)
            | Inst::Sqrt(_)
            | Inst::Rsqrt(_)
            | Inst::IntAdd(..)
            | Inst::IntSubtract(..)
            | Inst::IntMultiply(..)
            | Inst::BitAnd(..)
            | Inst::BitOr(..)
            | Inst::BitXor(..)
            | Inst::BitNot(_)
            | Inst::ShiftLeft(..)
            | Inst::ShiftRightLogical(..)
            | Inst::ShiftRightArithmetic(..)
            | Inst::IntMaximum(..)
            | Inst::IntMinimum(..)
            | Inst::IntNegate(_)
            | Inst::IntAbs(_)
            | Inst::IntSign(..)
            | Inst::IntDivideBy(..)
            | Inst::IntRemainderBy(..)
            | Inst::IntToF32(..)
            | Inst::F32ToInt(false, _)
            | Inst::LoadScalar(_) => MaskUse::Keeps,
            _ => MaskUse::Clobbers,
        }
    }
}

/// A program register whose lanes a mask register holds (`!= 0`), and whether the register
/// itself has been written (1.0 under the mask, 0.0 elsewhere).
#[derive(Clone, Copy)]
struct Held {
    reg: u8,
    written: bool,
}

/// The body's two mask registers and the values they hold. A compare and the like set a
/// mask and leave their 1.0-or-0.0 register unwritten until something reads it as a
/// number, an instruction uses the masks as scratch, or the body ends with it live; a
/// select or boolean op reads a held mask as it is, so a condition only selects and
/// combines with is never written at all.
struct Masks {
    regs: [AsmRegisterK; 2],
    held: [Option<Held>; 2],
    /// The mask [`Masks::take`] handed out for the current instruction's result.
    taken: Option<usize>,
    /// Which mask was taken last (the other is the one to give up first).
    last: usize,
}

impl Masks {
    fn new(regs: [AsmRegisterK; 2]) -> Masks {
        Masks {
            regs,
            held: [None, None],
            taken: None,
            last: 0,
        }
    }

    /// The mask holding register `r`'s lanes, if any.
    fn slot_of(&self, r: u8) -> Option<usize> {
        (0..2).find(|&s| self.held[s].is_some_and(|h| h.reg == r))
    }

    /// Writes mask `s`'s register if it has not been.
    fn write_slot(
        &mut self,
        a: &mut CodeAssembler,
        s: usize,
        z: impl Fn(u8) -> AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        if let Some(h) = self.held[s].as_mut().filter(|h| !h.written) {
            a.vbroadcastss(
                under_zero(z(h.reg), self.regs[s]),
                dword_ptr(r15 + 4 * K::One as i32),
            )?;
            h.written = true;
        }
        Ok(())
    }

    /// Writes register `r` if a mask holds it unwritten.
    fn write_value(
        &mut self,
        a: &mut CodeAssembler,
        r: u8,
        z: impl Fn(u8) -> AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        match self.slot_of(r) {
            Some(s) => self.write_slot(a, s, z),
            None => Ok(()),
        }
    }

    /// Writes every unwritten register that `live` says is read later.
    fn write_live(
        &mut self,
        a: &mut CodeAssembler,
        live: impl Fn(u8) -> bool,
        z: impl Fn(u8) -> AsmRegisterZmm + Copy,
    ) -> Result<(), IcedError> {
        for s in 0..2 {
            if self.held[s].is_some_and(|h| live(h.reg)) {
                self.write_slot(a, s, z)?;
            }
        }
        Ok(())
    }

    /// A mask for the current instruction's result, which becomes what it holds once the
    /// instruction is done. With `operand` (a mask the instruction reads; it is overwritten
    /// only after being read), the other mask if it is free (holds nothing, or a value no
    /// later instruction reads), else `operand`; without, a free one, else the one taken
    /// longer ago. A value given up is written first if it is read later.
    fn take(
        &mut self,
        a: &mut CodeAssembler,
        operand: Option<usize>,
        live: impl Fn(u8) -> bool + Copy,
        z: impl Fn(u8) -> AsmRegisterZmm + Copy,
    ) -> Result<AsmRegisterK, IcedError> {
        let s = self.take_slot(a, operand, live, z)?;
        self.taken = Some(s);
        Ok(self.regs[s])
    }

    /// [`Masks::take`], returning the mask's index, holding nothing.
    fn take_slot(
        &mut self,
        a: &mut CodeAssembler,
        operand: Option<usize>,
        live: impl Fn(u8) -> bool + Copy,
        z: impl Fn(u8) -> AsmRegisterZmm + Copy,
    ) -> Result<usize, IcedError> {
        let free = |s: usize| self.held[s].is_none_or(|h| !live(h.reg));
        let s = match operand {
            Some(o) if free(1 - o) => 1 - o,
            Some(o) => o,
            None if free(1 - self.last) || !free(self.last) => 1 - self.last,
            None => self.last,
        };
        if self.held[s].is_some_and(|h| live(h.reg)) {
            self.write_slot(a, s, z)?;
        }
        self.held[s] = None;
        self.last = s;
        Ok(s)
    }

    /// A mask holding register `p`'s lanes for an instruction that reads it as a condition:
    /// the one holding it, or one it is compared into (its register is written already).
    fn read(
        &mut self,
        a: &mut CodeAssembler,
        p: u8,
        live: impl Fn(u8) -> bool + Copy,
        z: impl Fn(u8) -> AsmRegisterZmm + Copy,
    ) -> Result<AsmRegisterK, IcedError> {
        if let Some(s) = self.slot_of(p) {
            return Ok(self.regs[s]);
        }
        let s = self.take_slot(a, None, live, z)?;
        let m = self.regs[s];
        a.vcmpps(m, z(p), constant(K::Zero), NEQ_UQ)?;
        self.held[s] = Some(Held {
            reg: p,
            written: true,
        });
        Ok(m)
    }

    /// Register `r` is written: no mask holds its lanes any more.
    fn forget(&mut self, r: u8) {
        for h in &mut self.held {
            if h.is_some_and(|h| h.reg == r) {
                *h = None;
            }
        }
    }
}

/// `d = x / y` (or the remainder `x - (x / y) y` when `remainder`) on 32-bit integers, as
/// `Inst::IntDivide` and `Inst::IntRemainder` describe, the way the evaluator divides
/// (`narrow_div` in `oxla-ir`): each half of the chunk widened to eight f64 lanes, where
/// the correctly rounded quotient of two such integers truncates to the exact truncated
/// quotient ([`narrow_quotient`]; `MIN / -1` comes out as `MIN`, as wrapping gives). A zero
/// divisor is read as 1, and its lanes take all ones (the quotient) or `x` (the
/// remainder) afterwards. Reads `x` and `y` before writing `d`.
fn int_divide(
    a: &mut CodeAssembler,
    lanes: Lanes,
    d: AsmRegisterZmm,
    x: AsmRegisterZmm,
    y: AsmRegisterZmm,
    signed: bool,
    remainder: bool,
) -> Result<(), IcedError> {
    let [xs, ys, q, xd, yd, part, t, _] = lanes.scratch;
    let zero = lanes.masks[0];
    a.vmovdqa32(xs, x)?;
    a.vmovdqa32(ys, y)?;
    a.vptestnmd(zero, ys, ys)?;
    // 1 (all ones shifted right by 31) in the zero lanes.
    a.vpsrld(under_z(ys, zero), constant(K::AllOnes), 31)?;
    for half in 0..2 {
        let (xh, yh) = if half == 0 {
            (low_half(xs), low_half(ys))
        } else {
            a.vextracti64x4(low_half(xd), xs, 1)?;
            a.vextracti64x4(low_half(yd), ys, 1)?;
            (low_half(xd), low_half(yd))
        };
        widen_int(a, xd, xh, signed)?;
        widen_int(a, yd, yh, signed)?;
        a.vdivpd(xd, xd, yd)?;
        narrow_quotient(a, xd, half, q, part, signed)?;
    }
    if remainder {
        a.vpmulld(t, q, ys)?;
        a.vpsubd(t, xs, t)?;
        a.vmovdqa32(under_z(t, zero), xs)?;
        a.vmovdqa32(d, t)
    } else {
        a.vpternlogd(under_z(q, zero), q, q, 0xff)?;
        a.vmovdqa32(d, q)
    }
}

/// Eight 32-bit integers (signed or not) as f64 lanes.
fn widen_int(
    a: &mut CodeAssembler,
    d: AsmRegisterZmm,
    x: AsmRegisterYmm,
    signed: bool,
) -> Result<(), IcedError> {
    if signed {
        a.vcvtdq2pd(d, x)
    } else {
        a.vcvtudq2pd(d, x)
    }
}

/// Half `half` of a chunk's quotients, f64 lanes in `xd`, truncated toward zero and placed
/// in that half of `q` as 32-bit integers by one truncating conversion (`part` is scratch).
/// Signed quotients lie in [-2^31, 2^31]: only `MIN / -1` reaches 2^31, which converts to
/// the out-of-range value `0x8000_0000`, the `MIN` that wrapping gives; unsigned ones stay
/// below 2^32.
fn narrow_quotient(
    a: &mut CodeAssembler,
    xd: AsmRegisterZmm,
    half: usize,
    q: AsmRegisterZmm,
    part: AsmRegisterZmm,
    signed: bool,
) -> Result<(), IcedError> {
    let dst = if half == 0 {
        low_half(q)
    } else {
        low_half(part)
    };
    if signed {
        a.vcvttpd2dq(dst, xd)?;
    } else {
        a.vcvttpd2udq(dst, xd)?;
    }
    if half == 1 {
        a.vinserti64x4(q, q, low_half(part), 1)?;
    }
    Ok(())
}

/// `d = x / c` (or the remainder `x - (x / c) c` when `remainder`) for the constant 32-bit
/// divisor `c`, as `Inst::IntDivideBy` and `Inst::IntRemainderBy` describe, by the sequence
/// [`DivideBy`] picks: a copy, a negation, shifts for a power of two, or the high halves of
/// products by a multiplier ([`multiply_high`]) corrected and shifted. A zero divisor gives
/// all ones (the quotient) or `x` (the remainder). Reads `x` before writing `d`.
fn int_divide_by(
    a: &mut CodeAssembler,
    lanes: Lanes,
    d: AsmRegisterZmm,
    x: AsmRegisterZmm,
    c: u32,
    signed: bool,
    remainder: bool,
) -> Result<(), IcedError> {
    let [t, u, m, q, _, _, _, _] = lanes.scratch;
    let division = DivideBy::new(c, signed);
    // `x` is read to the end and `d` written last, so the two may be one register.
    quotient_by(a, q, x, division, [t, u, m])?;
    if remainder {
        match division {
            DivideBy::SignedPowerOfTwo(k) | DivideBy::UnsignedPowerOfTwo(k) => {
                a.vpslld(t, q, k as i32)?
            }
            _ => {
                a.mov(eax, c)?;
                a.vpbroadcastd(t, eax)?;
                a.vpmulld(t, q, t)?;
            }
        }
        a.vpsubd(d, x, t)
    } else {
        a.vmovdqa32(d, q)
    }
}

/// `q = x / c` by the sequence `division` stands for (all ones for a zero divisor, as XLA
/// gives; the remainder `x - q * 0` is then `x`); `t`, `u` and `m` are scratch.
fn quotient_by(
    a: &mut CodeAssembler,
    q: AsmRegisterZmm,
    x: AsmRegisterZmm,
    division: DivideBy,
    [t, u, m]: [AsmRegisterZmm; 3],
) -> Result<(), IcedError> {
    match division {
        DivideBy::Zero => a.vpternlogd(q, q, q, 0xff)?,
        DivideBy::One => a.vmovdqa32(q, x)?,
        DivideBy::MinusOne => {
            a.vpxord(q, q, q)?;
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
    Ok(())
}

/// `d` = the high 32 bits of each lane's 64-bit product `x * magic` (signed or unsigned):
/// the even lanes' products and the odd lanes' (shifted down into the even places) are
/// taken in 64-bit lanes, their high halves gathered by one `vshufps` (even, even, odd, odd
/// in each 128-bit lane) and put in order by one `vpshufd`. `m`, `even` and `odd` are scratch.
fn multiply_high(
    a: &mut CodeAssembler,
    d: AsmRegisterZmm,
    x: AsmRegisterZmm,
    magic: u32,
    signed: bool,
    [m, even, odd]: [AsmRegisterZmm; 3],
) -> Result<(), IcedError> {
    a.mov(eax, magic)?;
    a.vpbroadcastd(m, eax)?;
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

/// `vcmpps` predicates (ordered and quiet, except `!=`, which is true for NaN).
pub(crate) const EQ_OQ: i32 = 0x00;
pub(crate) const UNORD_Q: i32 = 0x03;
pub(crate) const NEQ_UQ: i32 = 0x04;
pub(crate) const NLT_UQ: i32 = 0x15;
pub(crate) const NLE_UQ: i32 = 0x16;
pub(crate) const NGE_UQ: i32 = 0x19;
pub(crate) const NGT_UQ: i32 = 0x1a;
pub(crate) const ORD_Q: i32 = 0x07;
pub(crate) const LT_OQ: i32 = 0x11;
pub(crate) const LE_OQ: i32 = 0x12;
pub(crate) const GE_OQ: i32 = 0x1d;
pub(crate) const GT_OQ: i32 = 0x1e;

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
pub(crate) enum K64 {
    Sign,
    Zero,
    Round,
    Log2E,
    Ln2Hi,
    Ln2Lo,
    Bias,
    /// The Taylor coefficients of `expm1`, `1/1!` to `1/8!`.
    C0,
    C1,
    C2,
    C3,
    C4,
    C5,
    C6,
    C7,
    TwoOverPi,
    /// `pi/2` in three parts: the first 33 bits, the next 33, the rest.
    PiO2Hi,
    PiO2Mid,
    PiO2Lo,
    /// The integers 1 and 2 (quadrant bits).
    BitOne,
    BitTwo,
    /// The Taylor coefficients of `sin r / r` in `r^2`, highest first, then of `cos r`.
    Sin0,
    Sin1,
    Sin2,
    Sin3,
    Sin4,
    Cos0,
    Cos1,
    Cos2,
    Cos3,
    Cos4,
    Cos5,
    /// `expm1`'s argument bounds.
    Expm1Low,
    Expm1High,
    /// `ln`: the mantissa bits, `2^52` (whose bits also put an exponent field into a
    /// mantissa), `sqrt 2`, the exponent bias as a float, `ln 2`, the odd reciprocals of
    /// `atanh`'s series from `1/11` down, and the special results.
    Mantissa,
    TwoP52,
    Sqrt2,
    Bias1023,
    Ln2,
    Inv11,
    Inv9,
    Inv7,
    Inv5,
    Inv3,
    NegInfinity,
    Infinity,
    NaN,
    /// `2^31`, for the AVX2 generator's unsigned conversions.
    TwoP31,
}

/// The bits of each [`K64`], in its order.
pub(crate) const POOL64: [u64; 48] = [
    0x8000_0000_0000_0000,
    0,
    6755399441055744.0f64.to_bits(),
    std::f64::consts::LOG2_E.to_bits(),
    0.6931471803691238f64.to_bits(),
    1.9082149292705877e-10f64.to_bits(),
    1023,
    1.0f64.to_bits(),
    (1.0f64 / 2.0).to_bits(),
    (1.0f64 / 6.0).to_bits(),
    (1.0f64 / 24.0).to_bits(),
    (1.0f64 / 120.0).to_bits(),
    (1.0f64 / 720.0).to_bits(),
    (1.0f64 / 5040.0).to_bits(),
    (1.0f64 / 40320.0).to_bits(),
    std::f64::consts::FRAC_2_PI.to_bits(),
    1.5707963267341256f64.to_bits(),
    6.077100506303966e-11f64.to_bits(),
    2.0222662487959506e-21f64.to_bits(),
    1,
    2,
    (-1.0f64 / 39916800.0).to_bits(),
    (1.0f64 / 362880.0).to_bits(),
    (-1.0f64 / 5040.0).to_bits(),
    (1.0f64 / 120.0).to_bits(),
    (-1.0f64 / 6.0).to_bits(),
    (1.0f64 / 479001600.0).to_bits(),
    (-1.0f64 / 3628800.0).to_bits(),
    (1.0f64 / 40320.0).to_bits(),
    (-1.0f64 / 720.0).to_bits(),
    (1.0f64 / 24.0).to_bits(),
    (-1.0f64 / 2.0).to_bits(),
    (-110.0f64).to_bits(),
    90.0f64.to_bits(),
    0x000f_ffff_ffff_ffff,
    4503599627370496.0f64.to_bits(),
    std::f64::consts::SQRT_2.to_bits(),
    1023.0f64.to_bits(),
    std::f64::consts::LN_2.to_bits(),
    (1.0f64 / 11.0).to_bits(),
    (1.0f64 / 9.0).to_bits(),
    (1.0f64 / 7.0).to_bits(),
    (1.0f64 / 5.0).to_bits(),
    (1.0f64 / 3.0).to_bits(),
    f64::NEG_INFINITY.to_bits(),
    f64::INFINITY.to_bits(),
    f64::NAN.to_bits(),
    2_147_483_648.0f64.to_bits(),
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

/// `d = expm1(x)` as `Inst::Expm1` describes: each half of the chunk widened to eight f64
/// lanes, computed, and narrowed back. Reads `x` before writing `d`.
fn expm1(
    a: &mut CodeAssembler,
    lanes: Lanes,
    d: AsmRegisterZmm,
    x: AsmRegisterZmm,
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
        splat64(a, t, K64::Expm1Low)?;
        a.vmaxpd(y, t, y)?;
        splat64(a, t, K64::Expm1High)?;
        a.vminpd(y, t, y)?;
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
        // e = s q + (s - 1).
        a.vmulpd(t, s, q)?;
        a.vsubpd(e, s, constant64(K64::C0))?;
        a.vaddpd(e, t, e)?;
        if half == 0 {
            a.vcvtpd2ps(low_half(out), e)?;
        } else {
            a.vcvtpd2ps(low_half(high), e)?;
            a.vinserti64x4(out, out, low_half(high), 1)?;
        }
    }
    // The sign of x.
    a.vpandd(out, out, constant(K::Magnitude))?;
    a.vpandd(t, xs, constant(K::Sign))?;
    a.vpord(d, out, t)
}

/// `d = ln(x)` (or `ln(1 + x)` when `plus_one`), step for step as `Inst::Log` and
/// `Inst::Log1p` describe, on each half of the chunk widened to eight f64 lanes. Reads `x`
/// before writing `d`.
fn log(
    a: &mut CodeAssembler,
    lanes: Lanes,
    d: AsmRegisterZmm,
    x: AsmRegisterZmm,
    plus_one: bool,
) -> Result<(), IcedError> {
    let [xd, u, t, m, f, p, tmp, out] = lanes.scratch;
    let k = lanes.masks[0];
    for half in 0..2 {
        if half == 0 {
            a.vcvtps2pd(xd, low_half(x))?;
        } else {
            a.vextracti64x4(low_half(tmp), x, 1)?;
            a.vcvtps2pd(xd, low_half(tmp))?;
        }
        let u = if plus_one {
            a.vaddpd(u, xd, constant64(K64::C0))?;
            u
        } else {
            xd
        };
        // The biased exponent: its bits put under the mantissa of 2^52, then 2^52 taken
        // away.
        a.vpsrlq(t, u, 52)?;
        a.vporq(t, t, constant64(K64::TwoP52))?;
        a.vsubpd(t, t, constant64(K64::TwoP52))?;
        // m in [1, 2) from the mantissa; halved (and the exponent one more) above sqrt 2.
        a.vpandq(m, u, constant64(K64::Mantissa))?;
        a.vporq(m, m, constant64(K64::C0))?;
        a.vcmppd(k, m, constant64(K64::Sqrt2), GT_OQ)?;
        a.vmulpd(under_z(m, k), m, constant64(K64::C1))?;
        a.vsubpd(t, t, constant64(K64::Bias1023))?;
        a.vaddpd(under_z(t, k), t, constant64(K64::C0))?;
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
            a.vcmppd(k, u, constant64(K64::C0), EQ_OQ)?;
            a.vmovapd(under_z(t, k), xd)?;
        }
        // ln(±0) = -inf, ln of a negative or NaN is NaN, ln(inf) = inf.
        let special = |a: &mut CodeAssembler, predicate: i32, what: K64, bound: K64| {
            a.vcmppd(k, u, constant64(bound), predicate)?;
            a.vbroadcastsd(
                under_z(t, k),
                qword_ptr(r15 + (4 * POOL.len() + 8 * what as usize) as i32),
            )
        };
        special(a, EQ_OQ, K64::NegInfinity, K64::Zero)?;
        special(a, NGE_UQ, K64::NaN, K64::Zero)?;
        special(a, EQ_OQ, K64::Infinity, K64::Infinity)?;
        if half == 0 {
            a.vcvtpd2ps(low_half(out), t)?;
        } else {
            a.vcvtpd2ps(low_half(t), t)?;
            a.vinserti64x4(out, out, low_half(t), 1)?;
        }
    }
    a.vmovaps(d, out)
}

/// `d = sin(x)` (or `cos(x)` when `cos`), step for step as `Inst::Sin` describes, on each
/// half of the chunk widened to eight f64 lanes; lanes with `|x| > 65536` or NaN (under
/// `k1` when `masked`) are added to `k6`. Reads `x` before writing `d`.
fn trig(
    a: &mut CodeAssembler,
    lanes: Lanes,
    d: AsmRegisterZmm,
    x: AsmRegisterZmm,
    cos: bool,
    masked: bool,
) -> Result<(), IcedError> {
    let [y, t, r, r2, s, c, tmp, out] = lanes.scratch;
    let [odd, negative] = lanes.masks;
    a.vpandd(tmp, x, constant(K::Magnitude))?;
    let beyond = if masked { odd.k1() } else { odd };
    a.vcmpps(beyond, tmp, constant(K::TrigLimit), NLE_UQ)?;
    a.korw(k6, k6, odd)?;
    for half in 0..2 {
        if half == 0 {
            a.vcvtps2pd(y, low_half(x))?;
        } else {
            a.vextracti64x4(low_half(y), x, 1)?;
            a.vcvtps2pd(y, low_half(y))?;
        }
        // t = x 2/pi + ROUND (two roundings): its low bits are the quadrant k mod 4.
        a.vmulpd(t, y, constant64(K64::TwoOverPi))?;
        a.vaddpd(t, t, constant64(K64::Round))?;
        a.vptestmq(odd, t, constant64(K64::BitOne))?;
        if cos {
            // cos is negated in quadrants 1 and 2: bit 1 of k + 1.
            a.vpaddq(tmp, t, constant64(K64::BitOne))?;
            a.vptestmq(negative, tmp, constant64(K64::BitTwo))?;
        } else {
            a.vptestmq(negative, t, constant64(K64::BitTwo))?;
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
        // cos r = ((C0 r4 + (C1 r2 + C2)) r4 + (C3 r2 + C4)) r4 + (C5 r2 + 1).
        splat64(a, c, K64::Cos0)?;
        pair(a, t, K64::Cos1, K64::Cos2)?;
        a.vfmadd213pd(c, y, t)?;
        pair(a, tmp, K64::Cos3, K64::Cos4)?;
        a.vfmadd213pd(c, y, tmp)?;
        pair(a, t, K64::Cos5, K64::C0)?;
        a.vfmadd213pd(c, y, t)?;
        // sin takes cos r in odd quadrants, cos takes sin r; then the sign.
        if cos {
            a.vblendmpd(under_z(tmp, odd), c, s)?;
        } else {
            a.vblendmpd(under_z(tmp, odd), s, c)?;
        }
        a.vpxorq(under_z(tmp, negative), tmp, constant64(K64::Sign))?;
        if half == 0 {
            a.vcvtpd2ps(low_half(out), tmp)?;
        } else {
            a.vcvtpd2ps(low_half(tmp), tmp)?;
            a.vinserti64x4(out, out, low_half(tmp), 1)?;
        }
    }
    a.vmovaps(d, out)
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

/// `d = max(x, c)` (or `min`) as [`extremum`] computes it with flushing, where register `c`
/// holds the f32 `bits` in every lane; reads both operands before writing `d` (uses scratch
/// register 0 and masks 1 and 2 only).
///
/// With a bound that is not NaN, the result is `x` itself wherever `x` is NaN or strictly
/// beyond the bound, and the bound (the same bits as an equal `x`) wherever `x` falls
/// short. Beyond a bound away from zero on the far side of zero (`max` with a positive
/// bound), `x` is normal, so it needs no flushing; a zero bound (or a denormal one, which
/// reads as zero) of the winning sign turns every `x` short of the smallest normal into that
/// zero. A bound on the near side of zero needs `x` flushed, as a denormal `x` beats it.
/// A zero bound of the losing sign ties with the zeros and denormals of both signs, and
/// takes [`extremum`]'s full sequence, as does NaN.
fn extremum_of(
    a: &mut CodeAssembler,
    lanes: Lanes,
    d: AsmRegisterZmm,
    x: AsmRegisterZmm,
    c: AsmRegisterZmm,
    bits: u32,
    max: bool,
) -> Result<(), IcedError> {
    let bound = f32::from_bits(bits);
    let [m1, m2] = lanes.masks;
    // Where `x` is beyond the bound or NaN (unordered compares are true for NaN).
    let beyond = if max { NLE_UQ } else { NGE_UQ };
    let reached = if max { NLT_UQ } else { NGT_UQ };
    // The bound as it compares: a denormal reads as its signed zero.
    let flushed = if bound.is_subnormal() {
        0.0f32.copysign(bound)
    } else {
        bound
    };
    let winning_zero = flushed == 0.0 && flushed.is_sign_positive() == max;
    if bound.is_nan() || (flushed == 0.0 && !winning_zero) {
        return extremum(a, lanes, d, x, c, max, true);
    }
    if winning_zero {
        // `x` where it is at least the smallest normal (beyond it for `min`, negated) or
        // NaN, else the zero.
        let limit = if max { K::MinNormal } else { K::NegMinNormal };
        a.vcmpps(m1, x, constant(limit), reached)?;
        if max {
            return a.vmovaps(under_zero(d, m1), x);
        }
        let s = lanes.scratch[0];
        splat(a, s, K::Sign)?;
        return a.vblendmps(under_z(d, m1), s, x);
    }
    if (flushed > 0.0) == max {
        // Beyond a bound on the far side of zero, `x` is normal.
        a.vcmpps(m1, x, c, beyond)?;
        return a.vblendmps(under_z(d, m1), c, x);
    }
    // A bound on the near side: `x` (flushed) where it reaches the bound or is NaN.
    let s = lanes.scratch[0];
    a.vcmpps(m1, x, c, reached)?;
    a.vpandd(s, x, constant(K::Sign))?;
    a.vptestmd(m2, x, constant(K::Exponent))?;
    a.vmovaps(under_z(s, m2), x)?;
    a.vblendmps(under_z(d, m1), c, s)
}

/// `d = tanh(x)` as `Inst::Tanh` describes. Reads `x` before writing `d`; the sign of `x`
/// waits in mask 1, `a = min(|x|, 10)` in the scratch register [`exp`] leaves alone.
fn tanh(
    a: &mut CodeAssembler,
    lanes: Lanes,
    d: AsmRegisterZmm,
    x: AsmRegisterZmm,
) -> Result<(), IcedError> {
    let [t, p, series, c, _, _, _, abs] = lanes.scratch;
    let [below, negative] = lanes.masks;
    a.vptestmd(negative, x, constant(K::Sign))?;
    // With the bound first, `vminps` keeps a NaN.
    a.vpandd(abs, x, constant(K::Magnitude))?;
    splat(a, c, K::Ten)?;
    a.vminps(abs, c, abs)?;
    // The series: a + (a * t) P(t), t = a * a.
    a.vmulps(t, abs, abs)?;
    splat(a, series, K::Tanh5)?;
    for k in [K::Tanh4, K::Tanh3, K::Tanh2, K::Tanh1, K::Tanh0] {
        a.vfmadd213ps(series, t, constant(k))?;
    }
    a.vmulps(p, abs, t)?;
    a.vfmadd213ps(series, p, abs)?;
    a.vcmpps(below, abs, constant(K::TanhBelow), LT_OQ)?;
    // `series` waits in `d` (`x` is read) while `exp` uses the other scratch registers.
    a.vmovaps(d, series)?;
    // Far: 1 - 2 / (e^(2a) + 1).
    a.vaddps(t, abs, abs)?;
    exp(a, lanes, t, t)?;
    let [_, c, e, _, _, _, _, _] = lanes.scratch;
    a.vaddps(e, t, constant(K::One))?;
    splat(a, c, K::Two)?;
    a.vdivps(e, c, e)?;
    splat(a, c, K::One)?;
    a.vsubps(e, c, e)?;
    a.vmovaps(under_z(e, below), d)?;
    // The sign of x.
    a.vpxord(under_z(e, negative), e, constant(K::Sign))?;
    a.vmovaps(d, e)
}

/// `d = logistic(x)` as `Inst::Logistic` describes; reads `x` before writing `d`.
fn logistic(
    a: &mut CodeAssembler,
    lanes: Lanes,
    d: AsmRegisterZmm,
    x: AsmRegisterZmm,
) -> Result<(), IcedError> {
    let [e, sum, above, _, _, _, _, _] = lanes.scratch;
    let negative = lanes.masks[0];
    a.vcmpps(negative, x, constant(K::Zero), LT_OQ)?;
    a.vpord(e, x, constant(K::Sign))?;
    exp(a, lanes, e, e)?;
    a.vaddps(sum, e, constant(K::One))?;
    splat(a, above, K::One)?;
    a.vmovaps(under_z(above, negative), e)?;
    a.vdivps(d, above, sum)
}

/// `d = e^x`, step for step as `Inst::Exp` describes; reads `x` before writing `d`.
fn exp(
    a: &mut CodeAssembler,
    lanes: Lanes,
    d: AsmRegisterZmm,
    x: AsmRegisterZmm,
) -> Result<(), IcedError> {
    let [xs, c, t, k, p, err, s1, _] = lanes.scratch;
    // Clamp to [-104, 89]. `vmaxps`/`vminps` return their second operand when either is
    // NaN or they are equal, so with the bound first a NaN `x` stays.
    splat(a, c, K::ExpLow)?;
    a.vmaxps(xs, c, x)?;
    splat(a, c, K::ExpHigh)?;
    a.vminps(xs, c, xs)?;
    // t = x * log2(e) + ROUND32 (one rounding); k = t - ROUND32, an integer.
    splat(a, t, K::Round32)?;
    a.vfmadd231ps(t, xs, constant(K::Log2E))?;
    a.vsubps(k, t, constant(K::Round32))?;
    // r = x - k * LN2_HI, then r - k * LN2_LO, each one rounding.
    a.vfnmadd231ps(xs, k, constant(K::Ln2Hi))?;
    a.vfnmadd231ps(xs, k, constant(K::Ln2Lo))?;
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
    // e 2^k, rounded once. The evaluator scales by 2^h then 2^(k - h), h = k >> 1: the
    // first product is exact (|k| <= 150 keeps both factors and it normal), so the second
    // rounds the same exact value `vscalefps` rounds.
    a.vscalefps(d, t, k)
}

/// Per input, whether it is loaded once instead of in every chunk: a one-value input (once
/// per run) or a one-value-per-row input (once per row) whose register no instruction and
/// no other input writes, so it holds the value through every chunk.
pub(crate) fn invariant_inputs(program: &TileProgram) -> Vec<bool> {
    let written = |r: u8| program.insts.iter().any(|&(_, d)| d == r);
    let shared = |k: usize, r: u8| {
        program
            .inputs
            .iter()
            .enumerate()
            .any(|(j, &(kind, q))| j != k && kind != Input::OnDemand && q == r)
    };
    program
        .inputs
        .iter()
        .enumerate()
        .map(|(k, &(kind, r))| {
            matches!(kind, Input::Scalar | Input::RowScalar) && !written(r) && !shared(k, r)
        })
        .collect()
}

/// Moves the element index, column and output index `n` elements on, and takes `n` off
/// what is left of the row's segment.
pub(crate) fn advance(a: &mut CodeAssembler, n: i32) -> Result<(), IcedError> {
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
    let mut pairs_done = a.create_label();
    for r in [rbx, r12, r13, r14, r15, rbp] {
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
    // Row sums: `rdi` the pointer array, `rbp` the first row.
    a.mov(rbp, rbx)?;
    a.mov(rdi, qword_ptr(rdi + 56))?;
    a.xor(r13, r13)?;
    let sums = RowSums::new(program);
    let paired = program.registers() <= PAIRED_REGISTERS;
    let hoisted = invariant_inputs(program);
    let copies: &[usize] = if paired { &[0, PAIRED_REGISTERS] } else { &[0] };
    let hoist = |a: &mut CodeAssembler, kind: Input| {
        for &base in copies {
            let lanes = Lanes {
                base,
                scratch: S_HIGH,
                masks: [k2, k3],
                offset: 0,
            };
            let wanted = |k: usize| hoisted[k] && program.inputs[k].0 == kind;
            load_inputs(a, r8, &program.inputs, wanted, false, lanes)?;
        }
        Ok::<(), IcedError>(())
    };
    hoist(&mut a, Input::Scalar)?;
    a.set_label(&mut row_loop)?;
    a.cmp(rcx, r10)?;
    a.jae(done)?;
    hoist(&mut a, Input::RowScalar)?;
    sums.start_row(&mut a)?;
    // This row's segment: to the row's end or to `end`, whichever comes first.
    a.mov(r14, r11)?;
    a.sub(r14, r12)?;
    a.mov(rax, r10)?;
    a.sub(rax, rcx)?;
    a.cmp(rax, r14)?;
    a.cmovb(r14, rax)?;
    let stops = program.insts.iter().any(|(inst, _)| inst.may_stop());
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
        // Row sums combine their lanes once the pairs are done.
        a.jb(if sums.sums.is_empty() {
            full
        } else {
            pairs_done
        })?;
        let first = chunk(program, &hoisted, false, single)?;
        let second = chunk(program, &hoisted, false, second)?;
        // The copies are the same instructions on other registers: a shared `rax` is
        // loaded with the same pointer by both before either uses it.
        start_check(&mut a, stops)?;
        for (x, y) in first.0.into_iter().zip(second.0) {
            a.add_instruction(x)?;
            a.add_instruction(y)?;
        }
        end_check(&mut a, stops, done)?;
        sums.add_pair(&mut a)?;
        for (x, y) in first.1.into_iter().zip(second.1) {
            a.add_instruction(x)?;
            a.add_instruction(y)?;
        }
        advance(&mut a, 32)?;
        a.jmp(pair)?;
        if !sums.sums.is_empty() {
            a.set_label(&mut pairs_done)?;
            sums.combine(&mut a)?;
        }
    }
    a.set_label(&mut full)?;
    a.cmp(r14, 16)?;
    a.jb(tail)?;
    emit_chunk(
        &mut a,
        chunk(program, &hoisted, false, single)?,
        stops,
        done,
    )?;
    sums.add_lanes(&mut a, false)?;
    advance(&mut a, 16)?;
    a.jmp(full)?;
    a.set_label(&mut tail)?;
    a.test(r14, r14)?;
    a.jz(next_row)?;
    // k1: the low `r14` (1..15) lanes.
    a.mov(edx, -1)?;
    a.bzhi(edx, edx, r14d)?;
    a.kmovw(k1, edx)?;
    emit_chunk(&mut a, chunk(program, &hoisted, true, single)?, stops, done)?;
    sums.add_lanes(&mut a, true)?;
    a.add(rcx, r14)?;
    a.add(r13, r14)?;
    a.set_label(&mut next_row)?;
    sums.finish_row(&mut a)?;
    a.inc(rbx)?;
    a.xor(r12, r12)?;
    a.jmp(row_loop)?;
    // Here when finished or stopped: `r13` elements are done.
    a.set_label(&mut done)?;
    a.mov(rax, r13)?;
    for r in [rbp, r15, r14, r13, r12, rbx] {
        a.pop(r)?;
    }
    a.vzeroupper()?;
    a.ret()?;
    a.set_label(&mut pool)?;
    a.dd(&POOL)?;
    a.dq(&POOL64)?;
    a.assemble(0)
}

const XMM: [AsmRegisterXmm; 16] = [
    xmm0, xmm1, xmm2, xmm3, xmm4, xmm5, xmm6, xmm7, xmm8, xmm9, xmm10, xmm11, xmm12, xmm13, xmm14,
    xmm15,
];

/// The row sums of a program (`TileProgram::row_sums`), in the evaluator's order for a row
/// of at least 32 elements: 32 lanes, lane `j` adding elements `j`, `32 + j`, ... of the
/// row's whole 32-element pieces (here the first and second chunk of each pair, into two
/// accumulators that start at `-0.0`, so the first add copies); then the lanes added
/// pairwise (16, 8, 4, 2, 1); then the rest of the row element by element; then the
/// initial value plus that total. Per sum: the value's register index, the one-value input
/// holding the initial value, and the accumulators, in the registers past the program's in
/// each chunk's set (so below 8, which VEX instructions reach).
struct RowSums {
    sums: Vec<(usize, usize, usize, usize)>,
}

impl RowSums {
    fn new(program: &TileProgram) -> RowSums {
        let base = program.registers();
        RowSums {
            sums: program
                .row_sums
                .iter()
                .enumerate()
                .map(|(s, &(value, init))| {
                    let value = usize::from(value);
                    (value, init, base + s, PAIRED_REGISTERS + base + s)
                })
                .collect(),
        }
    }

    /// Both accumulators of every sum to `-0.0` (`-0.0 + x` is `x`, for every `x`).
    fn start_row(&self, a: &mut CodeAssembler) -> Result<(), IcedError> {
        for &(_, _, lo, hi) in &self.sums {
            splat(a, ZMM[lo], K::Sign)?;
            splat(a, ZMM[hi], K::Sign)?;
        }
        Ok(())
    }

    /// Adds a pair of chunks: the first chunk's value to the low lanes, the second's (in
    /// the second register set) to the high ones.
    fn add_pair(&self, a: &mut CodeAssembler) -> Result<(), IcedError> {
        for &(value, _, lo, hi) in &self.sums {
            a.vaddps(ZMM[lo], ZMM[lo], ZMM[value])?;
            a.vaddps(ZMM[hi], ZMM[hi], ZMM[PAIRED_REGISTERS + value])?;
        }
        Ok(())
    }

    /// The 32 lanes added pairwise, low half plus high half, down to lane 0 of `lo`.
    fn combine(&self, a: &mut CodeAssembler) -> Result<(), IcedError> {
        for &(_, _, lo, hi) in &self.sums {
            let (zl, zh) = (ZMM[lo], ZMM[hi]);
            let (xl, xh) = (XMM[lo], XMM[hi]);
            a.vaddps(zl, zl, zh)?;
            a.vextractf64x4(low_half(zh), zl, 1)?;
            a.vaddps(low_half(zl), low_half(zl), low_half(zh))?;
            a.vextractf128(xh, low_half(zl), 1)?;
            a.vaddps(xl, xl, xh)?;
            a.vmovhlps(xh, xh, xl)?;
            a.vaddps(xl, xl, xh)?;
            a.vmovshdup(xh, xl)?;
            a.vaddss(xl, xl, xh)?;
        }
        Ok(())
    }

    /// Adds the chunk's values one by one to the total: all 16, or the low `r14` when
    /// `masked`. The values go through the red zone below the stack pointer.
    fn add_lanes(&self, a: &mut CodeAssembler, masked: bool) -> Result<(), IcedError> {
        for &(value, _, lo, _) in &self.sums {
            a.vmovups(zmmword_ptr(rsp - 64), ZMM[value])?;
            if masked {
                let mut lane = a.create_label();
                a.xor(esi, esi)?;
                a.set_label(&mut lane)?;
                a.vaddss(XMM[lo], XMM[lo], dword_ptr(rsp + rsi * 4 - 64))?;
                a.inc(rsi)?;
                a.cmp(rsi, r14)?;
                a.jb(lane)?;
            } else {
                for i in 0..16 {
                    a.vaddss(XMM[lo], XMM[lo], dword_ptr(rsp + (4 * i - 64)))?;
                }
            }
        }
        Ok(())
    }

    /// Stores the initial value plus the total for row `rbx` (at `rbx - rbp` of each sum's
    /// output).
    fn finish_row(&self, a: &mut CodeAssembler) -> Result<(), IcedError> {
        for (s, &(_, init, lo, hi)) in self.sums.iter().enumerate() {
            a.mov(rax, qword_ptr(r8 + 8 * init as i32))?;
            a.vmovss(XMM[hi], dword_ptr(rax))?;
            a.vaddss(XMM[hi], XMM[hi], XMM[lo])?;
            a.mov(rax, qword_ptr(rdi + 8 * s as i32))?;
            a.mov(rdx, rbx)?;
            a.sub(rdx, rbp)?;
            a.vmovss(dword_ptr(rax + rdx * 4), XMM[hi])?;
        }
        Ok(())
    }
}

/// Clears `k6`, where the instructions collect lanes they do not cover, when the program
/// has instructions that may stop.
fn start_check(a: &mut CodeAssembler, stops: bool) -> Result<(), IcedError> {
    if stops {
        a.kxorw(k6, k6, k6)?;
    }
    Ok(())
}

/// Jumps to `stop` when any lane went into `k6`.
fn end_check(a: &mut CodeAssembler, stops: bool, stop: CodeLabel) -> Result<(), IcedError> {
    if stops {
        a.kortestw(k6, k6)?;
        a.jnz(stop)?;
    }
    Ok(())
}

/// One chunk's computing instructions, then (unless a lane stops the code) its stores.
fn emit_chunk(
    a: &mut CodeAssembler,
    (compute, stores): (Vec<Instruction>, Vec<Instruction>),
    stops: bool,
    stop: CodeLabel,
) -> Result<(), IcedError> {
    start_check(a, stops)?;
    for x in compute {
        a.add_instruction(x)?;
    }
    end_check(a, stops, stop)?;
    for x in stores {
        a.add_instruction(x)?;
    }
    Ok(())
}

/// The loop's function: for each chunk from `from` (the last under a lane mask), loads the
/// inputs and carried values, runs `trips` iterations that move each carried value's next
/// register into its own, and stores the carried values. `rdi` the arguments, `r8` and `r9`
/// the pointer arrays, `rcx` the chunk's first element, `r10` the length, `r11` the trips,
/// `rdx` the iterations left, `r15` the constants.
fn assemble_loop(body: &LoopBody) -> Result<Vec<u8>, IcedError> {
    let mut a = CodeAssembler::new(64)?;
    let mut chunk_loop = a.create_label();
    let mut partial = a.create_label();
    let mut have_mask = a.create_label();
    let mut iteration = a.create_label();
    let mut chunk_done = a.create_label();
    let mut stop = a.create_label();
    let mut finished = a.create_label();
    let mut exit = a.create_label();
    let mut pool = a.create_label();
    let lanes = Lanes {
        base: 0,
        scratch: S_HIGH,
        masks: [k2, k3],
        offset: 0,
    };
    let stops = body.insts.iter().any(|(inst, _)| inst.may_stop());
    let states: Vec<u8> = body.carried.iter().map(|&(state, _)| state).collect();
    // Next values that are another carried value's register (values that trade places)
    // go through scratch registers (`compile_loop` allows no more carried values than
    // there are), so every move reads the iteration's values.
    let through_scratch = body.carried.iter().any(|&(_, next)| states.contains(&next));
    a.push(r15)?;
    a.lea(r15, ptr(pool))?;
    a.mov(r8, qword_ptr(rdi))?;
    a.mov(r9, qword_ptr(rdi + 8))?;
    a.mov(rcx, qword_ptr(rdi + 16))?;
    a.mov(r10, qword_ptr(rdi + 24))?;
    a.mov(r11, qword_ptr(rdi + 32))?;
    a.set_label(&mut chunk_loop)?;
    a.cmp(rcx, r10)?;
    a.jae(finished)?;
    // k1: all 16 lanes, or the `len - rcx` left.
    a.mov(rax, r10)?;
    a.sub(rax, rcx)?;
    a.cmp(rax, 16)?;
    a.jb(partial)?;
    a.mov(eax, 0xffff)?;
    a.jmp(have_mask)?;
    a.set_label(&mut partial)?;
    a.mov(edx, -1)?;
    a.bzhi(eax, edx, eax)?;
    a.set_label(&mut have_mask)?;
    a.kmovw(k1, eax)?;
    load_inputs(&mut a, r8, &body.inputs, |_| true, true, lanes)?;
    let carried_inputs: Vec<(Input, u8)> = states.iter().map(|&r| (Input::Stream, r)).collect();
    load_inputs(&mut a, r9, &carried_inputs, |_| true, true, lanes)?;
    a.mov(rdx, r11)?;
    a.set_label(&mut iteration)?;
    start_check(&mut a, stops)?;
    let nexts: Vec<u8> = body.carried.iter().map(|&(_, next)| next).collect();
    self::body(&mut a, &body.insts, true, lanes, &nexts)?;
    end_check(&mut a, stops, stop)?;
    if through_scratch {
        for (k, &(_, next)) in body.carried.iter().enumerate() {
            a.vmovaps(S_HIGH[k], ZMM[usize::from(next)])?;
        }
        for (k, &(state, _)) in body.carried.iter().enumerate() {
            a.vmovaps(ZMM[usize::from(state)], S_HIGH[k])?;
        }
    } else {
        for &(state, next) in &body.carried {
            a.vmovaps(ZMM[usize::from(state)], ZMM[usize::from(next)])?;
        }
    }
    a.dec(rdx)?;
    a.jnz(iteration)?;
    a.set_label(&mut chunk_done)?;
    store(&mut a, r9, &states, rcx, true, lanes)?;
    a.add(rcx, 16)?;
    a.jmp(chunk_loop)?;
    // Stopped in iteration `trips - rdx` of chunk `rcx`: the carried registers still hold
    // the values before it.
    a.set_label(&mut stop)?;
    store(&mut a, r9, &states, rcx, true, lanes)?;
    a.mov(qword_ptr(rdi + 40), rcx)?;
    a.mov(rax, r11)?;
    a.sub(rax, rdx)?;
    a.mov(qword_ptr(rdi + 48), rax)?;
    a.mov(eax, 1)?;
    a.jmp(exit)?;
    a.set_label(&mut finished)?;
    a.xor(eax, eax)?;
    a.set_label(&mut exit)?;
    a.pop(r15)?;
    a.vzeroupper()?;
    a.ret()?;
    a.set_label(&mut pool)?;
    a.dd(&POOL)?;
    a.dq(&POOL64)?;
    a.assemble(0)
}
