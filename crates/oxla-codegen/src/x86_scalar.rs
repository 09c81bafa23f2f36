//! x86-64 code for [`ScalarLoop`]s, encoded by `iced-x86`.
//!
//! The function takes the arena's address (System V convention) and keeps it in `r8`; each
//! operation loads its operands from the arena into `rax`/`rcx` (integers) or `xmm0`
//! (floats), computes, and stores its result back. Element accesses sum their scaled
//! indices in `r9`; copies of more than 64 bytes use `rep movsb`. Only base x86-64
//! instructions and SSE2 appear.
//!
//! Every result is stored, but the generator remembers which arena value `rax` and `xmm0`
//! still hold ([`Held`]): an operation whose first operand is the value just computed reads
//! the register instead of loading it again (a store followed by a load of the same bytes
//! costs a store-forwarding delay on the chain of dependent operations a loop body is).

use super::scalar::{
    Element, FloatOp, FloatType, FloatUnary, IntOp, IntType, Num, OutOfRange, ScalarLoop, ScalarOp,
};
use super::x86::{load, Code};
use super::Cmp;
use iced_x86::code_asm::*;

/// Compiles `program` (checked in bounds by the caller).
pub(crate) fn compile(program: &ScalarLoop) -> Option<Code> {
    load(&assemble(program).ok()?)
}

/// The arena values the scratch registers hold as the code runs past a point: `rax` the
/// integer of (offset, size 4 or 8) zero-extended, `xmm0` the float at an offset.
#[derive(Clone, Copy, Default)]
struct Held {
    gpr: Option<(u32, u32)>,
    xmm: Option<(u32, FloatType)>,
}

impl Held {
    /// Forgets what a write of `bytes` bytes at `at` may change.
    fn written(&mut self, at: u32, bytes: u32) {
        let overlaps = |o: u32, n: u32| o < at + bytes && at < o + n;
        if self.gpr.is_some_and(|(o, n)| overlaps(o, n)) {
            self.gpr = None;
        }
        if self.xmm.is_some_and(|(o, ty)| overlaps(o, ty.size())) {
            self.xmm = None;
        }
    }

    /// `rax` now holds the value of `size` bytes at `at` (remembered for sizes 4 and 8).
    fn gpr_holds(&mut self, at: u32, size: u32) {
        self.gpr = matches!(size, 4 | 8).then_some((at, size));
    }

    /// The register already holding the `size` bytes at `src`, if any.
    fn source(&self, src: u32, size: u32) -> Option<Reg> {
        if self.gpr == Some((src, size)) {
            Some(Reg::Gpr)
        } else {
            let ty = self.xmm.filter(|&(o, ty)| o == src && ty.size() == size)?.1;
            Some(Reg::Xmm(ty))
        }
    }
}

/// A scratch register holding an arena value.
#[derive(Clone, Copy)]
enum Reg {
    Gpr,
    Xmm(FloatType),
}

/// Stores the `size` bytes at `src` (1, 4 or 8) to `to`, from the register `via` says holds
/// them, else loaded through `rax`.
fn store_from(
    a: &mut CodeAssembler,
    via: Option<Reg>,
    src: u32,
    size: u32,
    to: AsmMemoryOperand,
) -> Result<(), IcedError> {
    match via {
        Some(Reg::Xmm(FloatType::F32)) => a.movss(dword_ptr(to), xmm0),
        Some(Reg::Xmm(FloatType::F64)) => a.movsd_2(qword_ptr(to), xmm0),
        Some(Reg::Gpr) => store(a, size, to),
        None => {
            load_rax(a, size, at(src))?;
            store(a, size, to)
        }
    }
}

/// Loads the integer of `size` (4 or 8) bytes at `x` into `rax`, unless it is there.
fn load_int(a: &mut CodeAssembler, held: &Held, size: u32, x: u32) -> Result<(), IcedError> {
    match size {
        _ if held.gpr == Some((x, size)) => Ok(()),
        8 => a.mov(rax, qword_ptr(at(x))),
        _ => a.mov(eax, dword_ptr(at(x))),
    }
}

/// Loads the float at `x` into `xmm0`, unless it is there.
fn load_float(a: &mut CodeAssembler, held: &Held, ty: FloatType, x: u32) -> Result<(), IcedError> {
    match ty {
        _ if held.xmm == Some((x, ty)) => Ok(()),
        FloatType::F32 => a.movss(xmm0, dword_ptr(at(x))),
        FloatType::F64 => a.movsd_2(xmm0, qword_ptr(at(x))),
    }
}

fn assemble(program: &ScalarLoop) -> Result<Vec<u8>, IcedError> {
    let mut a = CodeAssembler::new(64)?;
    let mut top = a.create_label();
    let mut done = a.create_label();
    a.mov(r8, rdi)?;
    a.set_label(&mut top)?;
    // The top is reached from the entry and from the body's end: nothing is held there.
    let mut held = Held::default();
    for op in &program.cond {
        emit(&mut a, op, &mut held)?;
    }
    a.cmp(byte_ptr(r8 + disp(program.cond_result)), 0)?;
    a.je(done)?;
    for op in &program.body {
        emit(&mut a, op, &mut held)?;
    }
    a.jmp(top)?;
    a.set_label(&mut done)?;
    a.ret()?;
    a.assemble(0)
}

/// An arena offset as a displacement (the caller bounds the arena below 2^30 bytes).
fn disp(at: u32) -> i32 {
    at as i32
}

/// The arena's bytes at `at`, as a memory operand.
fn at(offset: u32) -> AsmMemoryOperand {
    r8 + disp(offset)
}

/// Emits `op`, reading and updating what the registers hold.
fn emit(a: &mut CodeAssembler, op: &ScalarOp, held: &mut Held) -> Result<(), IcedError> {
    emit_op(a, op, held)?;
    // What the operation wrote, and what its registers hold after it.
    match *op {
        ScalarOp::Int(_, ty, _, _, d) => {
            held.written(d, ty.size());
            held.gpr_holds(d, ty.size());
        }
        ScalarOp::Float(_, ty, _, _, d) | ScalarOp::FloatUnary(FloatUnary::Sqrt, ty, _, d) => {
            held.written(d, ty.size());
            held.xmm = Some((d, ty));
        }
        ScalarOp::FloatUnary(_, ty, _, d) => {
            held.written(d, ty.size());
            held.gpr_holds(d, ty.size());
        }
        ScalarOp::Convert(from, to, _, d) => {
            held.written(d, to.size());
            match to {
                Num::Int(t) => held.gpr_holds(d, t.size()),
                Num::Float(t) => {
                    held.xmm = Some((d, t));
                    held.gpr = None;
                }
            }
            if matches!(from, Num::Float(_)) {
                held.xmm = held.xmm.filter(|&(o, _)| o == d);
            }
        }
        ScalarOp::CompareInt(_, ty, x, _, d) => {
            held.written(d, 1);
            held.gpr_holds(x, ty.size());
        }
        ScalarOp::CompareFloat(cmp, ty, x, y, d) => {
            held.written(d, 1);
            let first = if matches!(cmp, Cmp::Lt | Cmp::Le) {
                y
            } else {
                x
            };
            held.xmm = Some((first, ty));
            if matches!(cmp, Cmp::Eq | Cmp::Ne) {
                held.gpr = None;
            }
        }
        ScalarOp::Select { dst, size, .. } => {
            held.written(dst, size);
            held.gpr_holds(dst, size);
        }
        ScalarOp::Copy { src, dst, bytes } => {
            let via = held.source(src, bytes);
            held.written(dst, bytes);
            match via {
                Some(Reg::Gpr) => held.gpr_holds(dst, bytes),
                Some(Reg::Xmm(ty)) => held.xmm = Some((dst, ty)),
                None => {
                    held.gpr = None;
                    if bytes > 0 && bytes <= 64 && matches!(bytes % 8, 0 | 4) {
                        // The last piece moved through `rax`.
                        let last = if bytes % 8 == 4 { 4 } else { 8 };
                        held.gpr_holds(dst + bytes - last, last);
                    }
                }
            }
        }
        ScalarOp::Load(ref e, dst) => {
            held.written(dst, e.size);
            held.gpr_holds(dst, e.size);
            if e.out_of_range == OutOfRange::Skip {
                *held = Held::default();
            }
        }
        // A store may write any element of its array, and jumps past itself when skipped.
        ScalarOp::Store(..) => *held = Held::default(),
    }
    Ok(())
}

fn emit_op(a: &mut CodeAssembler, op: &ScalarOp, held: &Held) -> Result<(), IcedError> {
    match *op {
        ScalarOp::Int(kind, ty, x, y, d) => int(a, held, kind, ty, (x, y, d)),
        ScalarOp::Float(kind, ty, x, y, d) => float(a, held, kind, ty, (x, y, d)),
        ScalarOp::FloatUnary(FloatUnary::Sqrt, ty, x, d) => match ty {
            FloatType::F32 => {
                a.sqrtss(xmm0, dword_ptr(at(x)))?;
                a.movss(dword_ptr(at(d)), xmm0)
            }
            FloatType::F64 => {
                a.sqrtsd(xmm0, qword_ptr(at(x)))?;
                a.movsd_2(qword_ptr(at(d)), xmm0)
            }
        },
        ScalarOp::Convert(from, to, x, d) => convert(a, held, (from, to), x, d),
        ScalarOp::FloatUnary(kind, ty, x, d) => {
            // The sign bit, flipped or cleared in the value's bits.
            let size = ty.size();
            load_int(a, held, size, x)?;
            let sign = 8 * size - 1;
            match (kind, size) {
                (FloatUnary::Negate, 8) => a.btc(rax, sign)?,
                (FloatUnary::Negate, _) => a.btc(eax, sign)?,
                (_, 8) => a.btr(rax, sign)?,
                _ => a.btr(eax, sign)?,
            }
            store(a, size, at(d))
        }
        ScalarOp::CompareInt(cmp, ty, x, y, d) => {
            load_int(a, held, ty.size(), x)?;
            match ty.size() {
                8 => a.cmp(rax, qword_ptr(at(y)))?,
                _ => a.cmp(eax, dword_ptr(at(y)))?,
            }
            let dst = byte_ptr(at(d));
            match (cmp, ty.signed()) {
                (Cmp::Eq, _) => a.sete(dst),
                (Cmp::Ne, _) => a.setne(dst),
                (Cmp::Lt, true) => a.setl(dst),
                (Cmp::Le, true) => a.setle(dst),
                (Cmp::Gt, true) => a.setg(dst),
                (Cmp::Ge, true) => a.setge(dst),
                (Cmp::Lt, false) => a.setb(dst),
                (Cmp::Le, false) => a.setbe(dst),
                (Cmp::Gt, false) => a.seta(dst),
                (Cmp::Ge, false) => a.setae(dst),
            }
        }
        ScalarOp::CompareFloat(cmp, ty, x, y, d) => {
            // `ucomis*` sets CF and ZF as an unsigned compare would, and all of ZF, PF and
            // CF when unordered: `a`/`ae` are false then, so `x < y` is `y > x`.
            let (first, second) = match cmp {
                Cmp::Lt | Cmp::Le => (y, x),
                _ => (x, y),
            };
            load_float(a, held, ty, first)?;
            match ty {
                FloatType::F32 => a.ucomiss(xmm0, dword_ptr(at(second)))?,
                FloatType::F64 => a.ucomisd(xmm0, qword_ptr(at(second)))?,
            }
            let dst = byte_ptr(at(d));
            match cmp {
                Cmp::Lt | Cmp::Gt => a.seta(dst),
                Cmp::Le | Cmp::Ge => a.setae(dst),
                Cmp::Eq => {
                    a.sete(al)?;
                    a.setnp(cl)?;
                    a.and(al, cl)?;
                    a.mov(dst, al)
                }
                Cmp::Ne => {
                    a.setne(al)?;
                    a.setp(cl)?;
                    a.or(al, cl)?;
                    a.mov(dst, al)
                }
            }
        }
        ScalarOp::Select {
            pred,
            on_true,
            on_false,
            dst,
            size,
        } => {
            match size {
                8 => {
                    a.mov(rax, qword_ptr(at(on_false)))?;
                    a.mov(rcx, qword_ptr(at(on_true)))?;
                }
                4 => {
                    a.mov(eax, dword_ptr(at(on_false)))?;
                    a.mov(ecx, dword_ptr(at(on_true)))?;
                }
                _ => {
                    a.movzx(eax, byte_ptr(at(on_false)))?;
                    a.movzx(ecx, byte_ptr(at(on_true)))?;
                }
            }
            a.cmp(byte_ptr(at(pred)), 0)?;
            a.cmovne(rax, rcx)?;
            store(a, size, at(dst))
        }
        ScalarOp::Copy { src, dst, bytes } => match held.source(src, bytes) {
            None => copy(a, src, dst, bytes),
            via => store_from(a, via, src, bytes, at(dst)),
        },
        ScalarOp::Load(ref e, dst) => {
            let mut skip = a.create_label();
            element_address(a, e, &mut skip)?;
            load_rax(a, e.size, r8 + r9 * e.size as i32 + disp(e.array))?;
            store(a, e.size, at(dst))?;
            finish(a, e, &mut skip)
        }
        ScalarOp::Store(ref e, src) => {
            let mut skip = a.create_label();
            // The element's address leaves `rax` and `xmm0` as they were.
            element_address(a, e, &mut skip)?;
            let to = r8 + r9 * e.size as i32 + disp(e.array);
            store_from(a, held.source(src, e.size), src, e.size, to)?;
            finish(a, e, &mut skip)
        }
    }
}

/// Loads the `size` bytes (1, 4 or 8) at `from` into `rax`, zero-extended.
fn load_rax(a: &mut CodeAssembler, size: u32, from: AsmMemoryOperand) -> Result<(), IcedError> {
    match size {
        8 => a.mov(rax, qword_ptr(from)),
        4 => a.mov(eax, dword_ptr(from)),
        _ => a.movzx(eax, byte_ptr(from)),
    }
}

/// Stores the low `size` bytes of `rax` at `to`.
fn store(a: &mut CodeAssembler, size: u32, to: AsmMemoryOperand) -> Result<(), IcedError> {
    match size {
        8 => a.mov(qword_ptr(to), rax),
        4 => a.mov(dword_ptr(to), eax),
        _ => a.mov(byte_ptr(to), al),
    }
}

fn int(
    a: &mut CodeAssembler,
    held: &Held,
    kind: IntOp,
    ty: IntType,
    (x, y, d): (u32, u32, u32),
) -> Result<(), IcedError> {
    match ty.size() {
        8 => {
            let src = qword_ptr(at(y));
            load_int(a, held, 8, x)?;
            if matches!(kind, IntOp::Maximum | IntOp::Minimum) {
                a.mov(rcx, src)?;
                a.cmp(rax, rcx)?;
                pick(a, kind, ty.signed(), rax, rcx)?;
                return store(a, 8, at(d));
            }
            match kind {
                IntOp::Add => a.add(rax, src)?,
                IntOp::Subtract => a.sub(rax, src)?,
                IntOp::Multiply => a.imul_2(rax, src)?,
                IntOp::And => a.and(rax, src)?,
                IntOp::Or => a.or(rax, src)?,
                IntOp::Xor => a.xor(rax, src)?,
                IntOp::Maximum | IntOp::Minimum => {}
            }
        }
        4 => {
            let src = dword_ptr(at(y));
            load_int(a, held, 4, x)?;
            if matches!(kind, IntOp::Maximum | IntOp::Minimum) {
                a.mov(ecx, src)?;
                a.cmp(eax, ecx)?;
                pick(a, kind, ty.signed(), rax, rcx)?;
                return store(a, 4, at(d));
            }
            match kind {
                IntOp::Add => a.add(eax, src)?,
                IntOp::Subtract => a.sub(eax, src)?,
                IntOp::Multiply => a.imul_2(eax, src)?,
                IntOp::And => a.and(eax, src)?,
                IntOp::Or => a.or(eax, src)?,
                IntOp::Xor => a.xor(eax, src)?,
                IntOp::Maximum | IntOp::Minimum => {}
            }
        }
        _ => {
            // Predicates: the bitwise operations only (checked by the caller).
            let src = byte_ptr(at(y));
            a.mov(al, byte_ptr(at(x)))?;
            match kind {
                IntOp::Or => a.or(al, src)?,
                IntOp::Xor => a.xor(al, src)?,
                _ => a.and(al, src)?,
            }
        }
    }
    store(a, ty.size(), at(d))
}

/// Loads the integer at `x` into `rax`, extended to 64 bits by its type (a predicate's
/// byte zero-extended).
fn load_wide(a: &mut CodeAssembler, held: &Held, ty: IntType, x: u32) -> Result<(), IcedError> {
    match ty {
        IntType::Pred => a.movzx(eax, byte_ptr(at(x))),
        IntType::S32 => a.movsxd(rax, dword_ptr(at(x))),
        IntType::U32 => load_int(a, held, 4, x),
        IntType::S64 | IntType::U64 => load_int(a, held, 8, x),
    }
}

fn convert(
    a: &mut CodeAssembler,
    held: &Held,
    (from, to): (Num, Num),
    x: u32,
    d: u32,
) -> Result<(), IcedError> {
    match (from, to) {
        (Num::Int(f), Num::Int(IntType::Pred)) => {
            load_wide(a, held, f, x)?;
            a.test(rax, rax)?;
            a.setne(al)?;
            a.mov(byte_ptr(at(d)), al)
        }
        (Num::Int(f), Num::Int(t)) => {
            load_wide(a, held, f, x)?;
            if t.size() == 4 {
                // The low half, and `rax` zero-extended from it as `Held` assumes.
                a.mov(eax, eax)?;
            }
            store(a, t.size(), at(d))
        }
        (Num::Int(f), Num::Float(t)) => {
            // Every source but u64 is exact as a signed 64-bit integer.
            load_wide(a, held, f, x)?;
            a.xorps(xmm0, xmm0)?;
            match t {
                FloatType::F32 => {
                    a.cvtsi2ss(xmm0, rax)?;
                    a.movss(dword_ptr(at(d)), xmm0)
                }
                FloatType::F64 => {
                    a.cvtsi2sd(xmm0, rax)?;
                    a.movsd_2(qword_ptr(at(d)), xmm0)
                }
            }
        }
        (Num::Float(f), Num::Float(t)) => {
            load_float(a, held, f, x)?;
            match (f, t) {
                (FloatType::F32, FloatType::F64) => a.cvtss2sd(xmm0, xmm0)?,
                (FloatType::F64, FloatType::F32) => a.cvtsd2ss(xmm0, xmm0)?,
                _ => {}
            }
            match t {
                FloatType::F32 => a.movss(dword_ptr(at(d)), xmm0),
                FloatType::F64 => a.movsd_2(qword_ptr(at(d)), xmm0),
            }
        }
        (Num::Float(f), Num::Int(t)) => {
            // Truncated (the instruction gives the smallest integer for NaN and values out
            // of range), then the largest integer from 2^(bits - 1) up, and 0 for NaN.
            load_float(a, held, f, x)?;
            let wide = t.size() == 8;
            match (f, wide) {
                (FloatType::F32, false) => a.cvttss2si(eax, xmm0)?,
                (FloatType::F32, true) => a.cvttss2si(rax, xmm0)?,
                (FloatType::F64, false) => a.cvttsd2si(eax, xmm0)?,
                (FloatType::F64, true) => a.cvttsd2si(rax, xmm0)?,
            }
            let limit: f64 = if wide {
                9_223_372_036_854_775_808.0
            } else {
                2_147_483_648.0
            };
            match f {
                FloatType::F32 => {
                    a.mov(ecx, (limit as f32).to_bits())?;
                    a.movd(xmm1, ecx)?;
                    a.ucomiss(xmm0, xmm1)?;
                }
                FloatType::F64 => {
                    a.mov(rcx, limit.to_bits())?;
                    a.movq(xmm1, rcx)?;
                    a.ucomisd(xmm0, xmm1)?;
                }
            }
            // `mov` leaves the flags of the compare.
            if wide {
                a.mov(rcx, i64::MAX)?;
                a.cmovae(rax, rcx)?;
            } else {
                a.mov(ecx, i32::MAX as u32)?;
                a.cmovae(eax, ecx)?;
            }
            a.mov(ecx, 0u32)?;
            a.cmovp(rax, rcx)?;
            store(a, t.size(), at(d))
        }
    }
}

/// After `cmp x, y`: `x = y` where `y` is the larger (`Maximum`) or the smaller.
fn pick(
    a: &mut CodeAssembler,
    kind: IntOp,
    signed: bool,
    x: AsmRegister64,
    y: AsmRegister64,
) -> Result<(), IcedError> {
    match (kind, signed) {
        (IntOp::Maximum, true) => a.cmovl(x, y),
        (IntOp::Maximum, false) => a.cmovb(x, y),
        (_, true) => a.cmovg(x, y),
        _ => a.cmova(x, y),
    }
}

fn float(
    a: &mut CodeAssembler,
    held: &Held,
    kind: FloatOp,
    ty: FloatType,
    (x, y, d): (u32, u32, u32),
) -> Result<(), IcedError> {
    load_float(a, held, ty, x)?;
    match ty {
        FloatType::F32 => {
            let src = dword_ptr(at(y));
            match kind {
                FloatOp::Add => a.addss(xmm0, src)?,
                FloatOp::Subtract => a.subss(xmm0, src)?,
                FloatOp::Multiply => a.mulss(xmm0, src)?,
                FloatOp::Divide => a.divss(xmm0, src)?,
            }
            a.movss(dword_ptr(at(d)), xmm0)
        }
        FloatType::F64 => {
            let src = qword_ptr(at(y));
            match kind {
                FloatOp::Add => a.addsd(xmm0, src)?,
                FloatOp::Subtract => a.subsd(xmm0, src)?,
                FloatOp::Multiply => a.mulsd(xmm0, src)?,
                FloatOp::Divide => a.divsd(xmm0, src)?,
            }
            a.movsd_2(qword_ptr(at(d)), xmm0)
        }
    }
}

/// Copies `bytes` bytes: 8, then 4, then 1 at a time up to 64 bytes, else `rep movsb`.
fn copy(a: &mut CodeAssembler, src: u32, dst: u32, bytes: u32) -> Result<(), IcedError> {
    if bytes > 64 {
        a.lea(rsi, at(src))?;
        a.lea(rdi, at(dst))?;
        a.mov(ecx, bytes)?;
        a.rep().movsb()?;
        return Ok(());
    }
    let mut done = 0;
    while done < bytes {
        let step = match bytes - done {
            8.. => 8,
            4..=7 => 4,
            _ => 1,
        };
        match step {
            8 => {
                a.mov(rax, qword_ptr(at(src + done)))?;
                a.mov(qword_ptr(at(dst + done)), rax)?;
            }
            4 => {
                a.mov(eax, dword_ptr(at(src + done)))?;
                a.mov(dword_ptr(at(dst + done)), eax)?;
            }
            _ => {
                a.mov(al, byte_ptr(at(src + done)))?;
                a.mov(byte_ptr(at(dst + done)), al)?;
            }
        }
        done += step;
    }
    Ok(())
}

/// Leaves in `r9` the element's index in elements (each index clamped, or a jump to
/// `skip` when one is out of range and the access skips).
fn element_address(
    a: &mut CodeAssembler,
    e: &Element,
    skip: &mut CodeLabel,
) -> Result<(), IcedError> {
    a.xor(r9d, r9d)?;
    for ix in &e.indices {
        match ix.ty {
            IntType::S32 => a.movsxd(rcx, dword_ptr(at(ix.at)))?,
            IntType::U32 => a.mov(ecx, dword_ptr(at(ix.at)))?,
            _ => a.mov(rcx, qword_ptr(at(ix.at)))?,
        }
        match e.out_of_range {
            OutOfRange::Clamp => {
                if ix.ty.signed() {
                    a.xor(edx, edx)?;
                    a.test(rcx, rcx)?;
                    a.cmovl(rcx, rdx)?;
                }
                // Extents are below 2^30 (the arena bounds them).
                let highest = (ix.extent - 1) as u32;
                a.mov(edx, highest)?;
                a.cmp(rcx, rdx)?;
                if ix.ty.signed() {
                    a.cmovg(rcx, rdx)?;
                } else {
                    a.cmova(rcx, rdx)?;
                }
            }
            OutOfRange::Skip => {
                // A negative index reads as a huge unsigned one: one unsigned compare.
                a.mov(edx, ix.extent as u32)?;
                a.cmp(rcx, rdx)?;
                a.jae(*skip)?;
            }
        }
        if ix.stride != 1 {
            a.imul_3(rcx, rcx, ix.stride as i32)?;
        }
        a.add(r9, rcx)?;
    }
    Ok(())
}

/// Places the skip label after the access (a no-op when nothing jumps to it).
fn finish(a: &mut CodeAssembler, e: &Element, skip: &mut CodeLabel) -> Result<(), IcedError> {
    if e.out_of_range == OutOfRange::Skip {
        a.set_label(skip)?;
        a.nop()?;
    }
    Ok(())
}
