//! AVX-512 code for tile programs, encoded by `iced-x86` into executable pages.
//!
//! The generated function takes one pointer to [`Args`] (System V convention). It walks
//! elements `start..end` row by row: within a row, full 16-element chunks, then the rest of
//! the row once under lane mask `k1` (masked-off lanes are neither loaded, so nothing past a
//! slice's end is touched, nor stored). Program register `r` is `zmm{r}`; `zmm24` to
//! `zmm31` are scratch.
//!
//! General registers: `r8` the input pointer array, `r9` the output pointer array, `rcx`
//! the element index, `r10` the end, `r11` the row length, `rbx` the row, `r12` the
//! column, `r13` the output index (`rcx - start`), `r14` what is left of the row's segment,
//! `rax` and `edx` scratch.

use super::{Input, Inst, TileProgram};
use iced_x86::code_asm::*;

/// Registers a program may name: `zmm24` to `zmm31` are the generator's scratch.
const PROGRAM_REGISTERS: usize = 24;

const ZMM: [AsmRegisterZmm; 32] = [
    zmm0, zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7, zmm8, zmm9, zmm10, zmm11, zmm12, zmm13, zmm14,
    zmm15, zmm16, zmm17, zmm18, zmm19, zmm20, zmm21, zmm22, zmm23, zmm24, zmm25, zmm26, zmm27,
    zmm28, zmm29, zmm30, zmm31,
];

/// The scratch registers.
const S: [AsmRegisterZmm; 8] = [zmm24, zmm25, zmm26, zmm27, zmm28, zmm29, zmm30, zmm31];

const SIGN: u32 = 0x8000_0000;
const MAGNITUDE: u32 = 0x7fff_ffff;
const ONE: u32 = 0x3f80_0000;

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

/// Emits one chunk of the program at element `rcx`, column `r12`, row `rbx` and output
/// index `r13`, masked by `k1` when `masked`.
fn chunk(a: &mut CodeAssembler, program: &TileProgram, masked: bool) -> Result<(), IcedError> {
    for (k, &(kind, r)) in program.inputs.iter().enumerate() {
        let z = ZMM[usize::from(r)];
        a.mov(rax, qword_ptr(r8 + 8 * k as i32))?;
        let load = |a: &mut CodeAssembler, src: AsmMemoryOperand| {
            if masked {
                a.vmovups(z.k1().z(), src)
            } else {
                a.vmovups(z, src)
            }
        };
        match kind {
            Input::Stream => load(a, zmmword_ptr(rax + rcx * 4))?,
            Input::RowVector => load(a, zmmword_ptr(rax + r12 * 4))?,
            Input::RowScalar => a.vbroadcastss(z, dword_ptr(rax + rbx * 4))?,
            Input::Scalar => a.vbroadcastss(z, dword_ptr(rax))?,
        }
    }
    let (s0, s1) = (S[6], S[7]);
    for &(inst, d) in &program.insts {
        let d = ZMM[usize::from(d)];
        let z = |r: u8| ZMM[usize::from(r)];
        match inst {
            Inst::Add(x, y) => a.vaddps(d, z(x), z(y))?,
            Inst::Subtract(x, y) => a.vsubps(d, z(x), z(y))?,
            Inst::Multiply(x, y) => a.vmulps(d, z(x), z(y))?,
            Inst::Divide(x, y) => a.vdivps(d, z(x), z(y))?,
            Inst::Negate(x) => {
                a.mov(edx, SIGN)?;
                a.vpbroadcastd(s1, edx)?;
                a.vpxord(d, z(x), s1)?;
            }
            Inst::Abs(x) => {
                a.mov(edx, MAGNITUDE)?;
                a.vpbroadcastd(s1, edx)?;
                a.vpandd(d, z(x), s1)?;
            }
            Inst::Sqrt(x) => a.vsqrtps(d, z(x))?,
            Inst::Rsqrt(x) => {
                a.vsqrtps(s0, z(x))?;
                a.mov(edx, ONE)?;
                a.vpbroadcastd(s1, edx)?;
                a.vdivps(d, s1, s0)?;
            }
            Inst::Exp(x) => exp(a, d, z(x))?,
            Inst::Maximum(x, y) => extremum(a, d, z(x), z(y), true)?,
            Inst::Minimum(x, y) => extremum(a, d, z(x), z(y), false)?,
        }
    }
    for (k, &r) in program.outputs.iter().enumerate() {
        a.mov(rax, qword_ptr(r9 + 8 * k as i32))?;
        let dst = zmmword_ptr(rax + r13 * 4);
        if masked {
            a.vmovups(dst.k1(), ZMM[usize::from(r)])?;
        } else {
            a.vmovups(dst, ZMM[usize::from(r)])?;
        }
    }
    Ok(())
}

/// Fills every lane of `z` with the bits `bits`.
fn splat(a: &mut CodeAssembler, z: AsmRegisterZmm, bits: u32) -> Result<(), IcedError> {
    a.mov(edx, bits)?;
    a.vpbroadcastd(z, edx)
}

/// `d = max(x, y)` (or `min` when not `max`) as `Inst::Maximum` describes; reads both
/// operands before writing `d`. Uses mask registers `k2` to `k7` (`k1` is the tail mask).
fn extremum(
    a: &mut CodeAssembler,
    d: AsmRegisterZmm,
    x: AsmRegisterZmm,
    y: AsmRegisterZmm,
    max: bool,
) -> Result<(), IcedError> {
    const EQ_OQ: i32 = 0x00;
    const UNORD_Q: i32 = 0x03;
    const ORD_Q: i32 = 0x07;
    const LT_OQ: i32 = 0x11;
    const GT_OQ: i32 = 0x1e;
    let [fx, fy, sign, exponent, ..] = S;
    splat(a, sign, SIGN)?;
    splat(a, exponent, 0x7f80_0000)?;
    // A denormal (exponent bits zero) becomes its signed zero; zeros are unchanged.
    for (f, v) in [(fx, x), (fy, y)] {
        a.vpandd(f, v, sign)?;
        a.vptestmd(k2, v, exponent)?;
        a.vmovaps(f.k2(), v)?;
    }
    // Pick x where x is NaN, or y is not NaN and x is strictly beyond y, or they are equal
    // and x's sign is the one that wins (positive for max, negative for min).
    a.vcmpps(k3, fx, fx, UNORD_Q)?;
    a.vcmpps(k4, fy, fy, ORD_Q)?;
    a.vcmpps(k5, fx, fy, if max { GT_OQ } else { LT_OQ })?;
    a.vcmpps(k6, fx, fy, EQ_OQ)?;
    if max {
        a.vptestnmd(k7, fx, sign)?;
    } else {
        a.vptestmd(k7, fx, sign)?;
    }
    a.kandw(k6, k6, k7)?;
    a.korw(k5, k5, k6)?;
    a.kandw(k5, k5, k4)?;
    a.korw(k5, k5, k3)?;
    a.vblendmps(d.k5(), fy, fx)
}

/// `d = e^x`, step for step as `Inst::Exp` describes; reads `x` before writing `d`.
fn exp(a: &mut CodeAssembler, d: AsmRegisterZmm, x: AsmRegisterZmm) -> Result<(), IcedError> {
    const ROUND32: f32 = 12582912.0;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    /// `vcmpps` predicates: less than and greater than, ordered, quiet.
    const LT_OQ: i32 = 0x11;
    const GT_OQ: i32 = 0x1e;
    let [xs, c, t, ki, p, err, s1, s2] = S;
    a.vmovaps(xs, x)?;
    // Clamp to [-104, 89]; NaN compares false and stays.
    splat(a, c, (-104.0f32).to_bits())?;
    a.vcmpps(k2, xs, c, LT_OQ)?;
    a.vmovaps(xs.k2(), c)?;
    splat(a, c, 89.0f32.to_bits())?;
    a.vcmpps(k2, xs, c, GT_OQ)?;
    a.vmovaps(xs.k2(), c)?;
    // t = x * log2(e) + ROUND32 (one rounding); ki = bits(t) - bits(ROUND32); k = t - ROUND32.
    splat(a, t, ROUND32.to_bits())?;
    splat(a, c, std::f32::consts::LOG2_E.to_bits())?;
    a.vfmadd231ps(t, xs, c)?;
    splat(a, c, ROUND32.to_bits())?;
    a.vpsubd(ki, t, c)?;
    a.vsubps(t, t, c)?;
    // r = x - k * LN2_HI, then r - k * LN2_LO, each one rounding.
    splat(a, c, LN2_HI.to_bits())?;
    a.vfnmadd231ps(xs, t, c)?;
    splat(a, c, LN2_LO.to_bits())?;
    a.vfnmadd231ps(xs, t, c)?;
    // p = ((((1/5040 r + 1/720) r + 1/120) r + 1/24) r + 1/6) r + 1/2.
    splat(a, p, (1.0f32 / 5040.0).to_bits())?;
    for coefficient in [1.0f32 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5] {
        splat(a, c, coefficient.to_bits())?;
        a.vfmadd213ps(p, xs, c)?;
    }
    // t = 1 + r; err = (1 - t) + r; e = t + (r * r * p + err).
    splat(a, c, 1.0f32.to_bits())?;
    a.vaddps(t, c, xs)?;
    a.vsubps(err, c, t)?;
    a.vaddps(err, err, xs)?;
    a.vmulps(s1, xs, xs)?;
    a.vfmadd213ps(s1, p, err)?;
    a.vaddps(t, t, s1)?;
    // The scale 2^ki as 2^h * 2^(ki - h), h = ki >> 1 (arithmetic).
    a.vpsrad(p, ki, 1)?;
    splat(a, c, 127)?;
    a.vpaddd(s1, p, c)?;
    a.vpslld(s1, s1, 23)?;
    a.vpsubd(s2, ki, p)?;
    a.vpaddd(s2, s2, c)?;
    a.vpslld(s2, s2, 23)?;
    a.vmulps(t, t, s1)?;
    a.vmulps(d, t, s2)
}

fn assemble(program: &TileProgram) -> Result<Vec<u8>, IcedError> {
    let mut a = CodeAssembler::new(64)?;
    let mut row_loop = a.create_label();
    let mut full = a.create_label();
    let mut tail = a.create_label();
    let mut next_row = a.create_label();
    let mut done = a.create_label();
    for r in [rbx, r12, r13, r14] {
        a.push(r)?;
    }
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
    a.set_label(&mut full)?;
    a.cmp(r14, 16)?;
    a.jb(tail)?;
    chunk(&mut a, program, false)?;
    for r in [rcx, r12, r13] {
        a.add(r, 16)?;
    }
    a.sub(r14, 16)?;
    a.jmp(full)?;
    a.set_label(&mut tail)?;
    a.test(r14, r14)?;
    a.jz(next_row)?;
    // k1: the low `r14` (1..15) lanes.
    a.mov(edx, -1)?;
    a.bzhi(edx, edx, r14d)?;
    a.kmovw(k1, edx)?;
    chunk(&mut a, program, true)?;
    a.add(rcx, r14)?;
    a.add(r13, r14)?;
    a.set_label(&mut next_row)?;
    a.inc(rbx)?;
    a.xor(r12, r12)?;
    a.jmp(row_loop)?;
    a.set_label(&mut done)?;
    for r in [r14, r13, r12, rbx] {
        a.pop(r)?;
    }
    a.vzeroupper()?;
    a.ret()?;
    a.assemble(0)
}
