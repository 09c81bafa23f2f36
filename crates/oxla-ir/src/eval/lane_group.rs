//! Runs of f32 elementwise instructions inside compiled loops, evaluated in registers.
//!
//! A loop body's f32 arithmetic and math over values of one length (the state vector of a
//! `fori_loop`) would otherwise run as one instruction after another, each a call through
//! the slice kernels with its own dispatch and its own pass over memory. A [`LaneGroup`]
//! takes such a run and evaluates it chunk by chunk: per chunk of [`LANES`] elements the
//! inputs are loaded into registers, every op reads and writes registers, and only values
//! read outside the group are stored. The whole group is compiled for the widest vectors
//! the CPU has, so one op on one chunk is a few vector instructions.
//!
//! Each op applies the element function the op-by-op path applies (`Float::map_common`,
//! `float_zip`), so a group computes the interpreter's bits.

use super::elementwise::{max_op, min_op, Float};
use super::fastmath;
use crate::OpKind;

/// Elements per chunk: two AVX2 vectors, one AVX-512 vector.
pub(crate) const LANES: usize = 16;

/// Registers one group may use; a longer run is split into several groups.
pub(crate) const MAX_REGISTERS: usize = 32;

/// One chunk of one value, aligned so its vectors never straddle cache lines.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
pub(crate) struct Lane([f32; LANES]);

/// 64 bytes of a compiled loop's slot memory: one chunk of f32, aligned like [`Lane`].
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
pub(crate) struct Block([u64; 8]);

/// An op on registers: operands, then the destination.
#[derive(Clone, Copy, Debug)]
enum LaneOp {
    Add(u8, u8, u8),
    Subtract(u8, u8, u8),
    Multiply(u8, u8, u8),
    Divide(u8, u8, u8),
    Maximum(u8, u8, u8),
    Minimum(u8, u8, u8),
    Power(u8, u8, u8),
    Abs(u8, u8),
    Negate(u8, u8),
    Sqrt(u8, u8),
    Rsqrt(u8, u8),
    Ceil(u8, u8),
    Floor(u8, u8),
    Exponential(u8, u8),
    ExponentialMinusOne(u8, u8),
    Log(u8, u8),
    LogPlusOne(u8, u8),
    Logistic(u8, u8),
    Tanh(u8, u8),
    Sine(u8, u8),
    Cosine(u8, u8),
}

/// Whether a group can compute unary `kind` on f32.
pub(crate) fn covers_unary(kind: &OpKind) -> bool {
    unary(kind, 0, 0).is_some()
}

/// Whether a group can compute binary `kind` on f32.
pub(crate) fn covers_binary(kind: &OpKind) -> bool {
    binary(kind, 0, 0, 0).is_some()
}

fn unary(kind: &OpKind, a: u8, d: u8) -> Option<LaneOp> {
    use OpKind as K;
    Some(match kind {
        K::Abs => LaneOp::Abs(a, d),
        K::Negate => LaneOp::Negate(a, d),
        K::Sqrt => LaneOp::Sqrt(a, d),
        K::Rsqrt => LaneOp::Rsqrt(a, d),
        K::Ceil => LaneOp::Ceil(a, d),
        K::Floor => LaneOp::Floor(a, d),
        K::Exponential => LaneOp::Exponential(a, d),
        K::ExponentialMinusOne => LaneOp::ExponentialMinusOne(a, d),
        K::Log => LaneOp::Log(a, d),
        K::LogPlusOne => LaneOp::LogPlusOne(a, d),
        K::Logistic => LaneOp::Logistic(a, d),
        K::Tanh => LaneOp::Tanh(a, d),
        K::Sine => LaneOp::Sine(a, d),
        K::Cosine => LaneOp::Cosine(a, d),
        _ => return None,
    })
}

fn binary(kind: &OpKind, a: u8, b: u8, d: u8) -> Option<LaneOp> {
    use OpKind as K;
    Some(match kind {
        K::Add => LaneOp::Add(a, b, d),
        K::Subtract => LaneOp::Subtract(a, b, d),
        K::Multiply => LaneOp::Multiply(a, b, d),
        K::Divide => LaneOp::Divide(a, b, d),
        K::Maximum => LaneOp::Maximum(a, b, d),
        K::Minimum => LaneOp::Minimum(a, b, d),
        K::Power => LaneOp::Power(a, b, d),
        _ => return None,
    })
}

/// A run of f32 elementwise instructions over values of `len` elements, on registers.
#[derive(Clone, Debug)]
pub(crate) struct LaneGroup {
    len: usize,
    /// Slots the group reads, loaded into a register per chunk.
    loads: Vec<(usize, u8)>,
    ops: Vec<LaneOp>,
    /// Registers whose values are read outside the group, stored to their slots per chunk.
    stores: Vec<(u8, usize)>,
    registers: usize,
    /// The register of every slot the group loads or writes.
    slot_registers: Vec<(usize, u8)>,
}

/// Builds a [`LaneGroup`] from instructions in program order.
pub(crate) struct GroupBuilder {
    group: LaneGroup,
    /// The register holding each slot the group has read or written.
    regs: Vec<(usize, u8)>,
}

impl GroupBuilder {
    /// An empty group over values of `len` elements.
    pub(crate) fn new(len: usize) -> GroupBuilder {
        GroupBuilder {
            group: LaneGroup {
                len,
                loads: Vec::new(),
                ops: Vec::new(),
                stores: Vec::new(),
                registers: 0,
                slot_registers: Vec::new(),
            },
            regs: Vec::new(),
        }
    }

    /// The length of the group's values.
    pub(crate) fn len(&self) -> usize {
        self.group.len
    }

    /// The register of `slot`, loaded from memory the first time the group reads it.
    fn operand(&mut self, slot: usize) -> u8 {
        if let Some(&(_, r)) = self.regs.iter().find(|(s, _)| *s == slot) {
            return r;
        }
        let r = self.new_register();
        self.group.loads.push((slot, r));
        self.regs.push((slot, r));
        r
    }

    fn new_register(&mut self) -> u8 {
        self.group.registers += 1;
        (self.group.registers - 1) as u8
    }

    /// Adds `dst = kind(operands)`, operands given as (slot, length); `false` (and nothing
    /// added) when the group cannot take it: an op it does not cover, an operand of another
    /// length than the group's, or no registers left.
    pub(crate) fn push(&mut self, kind: &OpKind, operands: &[(usize, usize)], dst: usize) -> bool {
        let len = self.group.len;
        let fresh = operands
            .iter()
            .filter(|(s, _)| !self.regs.iter().any(|(r, _)| r == s))
            .count();
        if self.group.registers + fresh + 1 > MAX_REGISTERS
            || operands.iter().any(|&(_, l)| l != len)
            || self.regs.iter().any(|&(s, _)| s == dst)
        {
            return false;
        }
        let op = match *operands {
            [(a, _)] if covers_unary(kind) => {
                let a = self.operand(a);
                unary(kind, a, self.group.registers as u8)
            }
            [(a, _), (b, _)] if covers_binary(kind) => {
                let a = self.operand(a);
                let b = self.operand(b);
                binary(kind, a, b, self.group.registers as u8)
            }
            _ => None,
        };
        let Some(op) = op else {
            return false;
        };
        let d = self.new_register();
        self.regs.push((dst, d));
        self.group.ops.push(op);
        true
    }

    /// The finished group, storing the written slots for which `needed` holds.
    pub(crate) fn finish(mut self, needed: impl Fn(usize) -> bool) -> LaneGroup {
        let loaded = |slot: usize| self.group.loads.iter().any(|&(s, _)| s == slot);
        self.group.stores = self
            .regs
            .iter()
            .filter(|&&(s, _)| !loaded(s) && needed(s))
            .map(|&(s, r)| (r, s))
            .collect();
        self.group.slot_registers = self.regs;
        self.group
    }
}

/// The chunk of a slot's memory starting at element `start` (a multiple of [`LANES`]).
#[inline(always)]
fn chunk(blocks: &[Block], start: usize) -> Lane {
    Lane(bytemuck::cast(blocks[start / LANES]))
}

#[inline(always)]
fn each(x: &Lane, f: impl Fn(f32) -> f32) -> Lane {
    let mut out = Lane::default();
    for (o, &v) in out.0.iter_mut().zip(&x.0) {
        *o = f(v);
    }
    out
}

#[inline(always)]
fn zip(x: &Lane, y: &Lane, f: impl Fn(f32, f32) -> f32) -> Lane {
    let mut out = Lane::default();
    for ((o, &a), &b) in out.0.iter_mut().zip(&x.0).zip(&y.0) {
        *o = f(a, b);
    }
    out
}

/// `sin`/`cos` of a chunk: the reduced form on all lanes when every argument allows it
/// (one vectorized loop), else element by element.
#[inline(always)]
fn trig(x: &Lane, reduced: impl Fn(f32) -> f32, f: impl Fn(f32) -> f32) -> Lane {
    if fastmath::all_reducible(&x.0) {
        each(x, reduced)
    } else {
        each(x, f)
    }
}

/// The generated-code form of one op, when it has one.
fn generated(op: LaneOp) -> Option<(oxla_codegen::Inst, u8)> {
    use oxla_codegen::Inst as G;
    use LaneOp as L;
    Some(match op {
        L::Add(a, b, d) => (G::Add(a, b), d),
        L::Subtract(a, b, d) => (G::Subtract(a, b), d),
        L::Multiply(a, b, d) => (G::Multiply(a, b), d),
        L::Divide(a, b, d) => (G::Divide(a, b), d),
        L::Maximum(a, b, d) => (G::Maximum(a, b), d),
        L::Minimum(a, b, d) => (G::Minimum(a, b), d),
        L::Abs(a, d) => (G::Abs(a), d),
        L::Negate(a, d) => (G::Negate(a), d),
        L::Sqrt(a, d) => (G::Sqrt(a), d),
        L::Rsqrt(a, d) => (G::Rsqrt(a), d),
        L::Exponential(a, d) => (G::Exp(a), d),
        L::Logistic(a, d) => (G::Logistic(a), d),
        L::ExponentialMinusOne(a, d) => (G::Expm1(a), d),
        L::Log(a, d) => (G::Log(a), d),
        L::LogPlusOne(a, d) => (G::Log1p(a), d),
        L::Tanh(a, d) => (G::Tanh(a), d),
        L::Sine(a, d) => (G::Sin(a), d),
        L::Cosine(a, d) => (G::Cos(a), d),
        L::Floor(a, d) => (G::Floor(a), d),
        L::Ceil(a, d) => (G::Ceil(a), d),
        L::Power(..) => return None,
    })
}

/// A loop-carried value of a [`LaneGroup::run_counted`] loop: the register the group reads
/// it from (none when the group does not read it), the register holding its next value after
/// an iteration, and its slot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Carried {
    pub state: Option<u8>,
    pub next: u8,
    pub slot: usize,
}

impl LaneGroup {
    /// Registers [`LaneGroup::run`] needs.
    pub(crate) fn registers(&self) -> usize {
        self.registers
    }

    /// The length of the group's values.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The register holding `slot` in the group, when the group loads or writes it.
    pub(crate) fn register_of(&self, slot: usize) -> Option<u8> {
        self.slot_registers
            .iter()
            .find(|(s, _)| *s == slot)
            .map(|&(_, r)| r)
    }

    /// The [`LaneGroup::run_counted`] loop as a body for generated code: the body, and the
    /// slots of its inputs and of its carried values in the body's order. `None` when an op
    /// has no generated form. A carried value the group does not read gets a register of
    /// its own past the group's, holding its value from one iteration to the next.
    pub(crate) fn loop_body(
        &self,
        carried: &[Carried],
    ) -> Option<(oxla_codegen::LoopBody, Vec<usize>, Vec<usize>)> {
        let insts = self
            .ops
            .iter()
            .map(|&op| generated(op))
            .collect::<Option<Vec<_>>>()?;
        let carried_slots: Vec<usize> = carried.iter().map(|c| c.slot).collect();
        let (inputs, input_slots): (Vec<_>, Vec<usize>) = self
            .loads
            .iter()
            .filter(|(s, _)| !carried_slots.contains(s))
            .map(|&(s, r)| ((oxla_codegen::Input::Stream, r), s))
            .unzip();
        let mut extra = self.registers;
        let carried_regs = carried
            .iter()
            .map(|c| {
                let state = match c.state {
                    Some(r) => r,
                    None => {
                        extra += 1;
                        u8::try_from(extra - 1).ok()?
                    }
                };
                Some((state, c.next))
            })
            .collect::<Option<Vec<_>>>()?;
        let body = oxla_codegen::LoopBody {
            inputs,
            carried: carried_regs,
            insts,
        };
        Some((body, input_slots, carried_slots))
    }

    /// Whether the group loads `slot`.
    pub(crate) fn loads(&self, slot: usize) -> bool {
        self.loads.iter().any(|&(s, _)| s == slot)
    }

    /// Runs `trips` iterations of a loop whose whole body is this group plus a counter: the
    /// loop-carried values `carried` stay in registers from one iteration to the next, chunk
    /// by chunk (every op is elementwise, so each chunk's iterations depend on that chunk
    /// alone), and only their final values are stored. Only the chunks starting in `chunks`
    /// (element indices, multiples of [`LANES`]) run. `regs` holds at least
    /// [`LaneGroup::registers`] lanes and `next` one per carried value.
    pub(crate) fn run_counted(
        &self,
        trips: u64,
        carried: &[Carried],
        chunks: std::ops::Range<usize>,
        mem: &mut [Vec<Block>],
        (regs, next): (&mut [Lane], &mut [Lane]),
    ) {
        oxla_simd::vectorized(
            #[inline(always)]
            || self.run_counted_chunks(trips, carried, chunks, mem, regs, next),
        )
    }

    #[inline(always)]
    fn run_counted_chunks(
        &self,
        trips: u64,
        carried: &[Carried],
        chunks: std::ops::Range<usize>,
        mem: &mut [Vec<Block>],
        regs: &mut [Lane],
        next: &mut [Lane],
    ) {
        if trips == 0 {
            return;
        }
        let mut start = chunks.start;
        while start < self.len.min(chunks.end) {
            for &(s, r) in &self.loads {
                regs[usize::from(r)] = chunk(&mem[s], start);
            }
            for _ in 0..trips {
                for op in &self.ops {
                    Self::step(*op, regs);
                }
                // All next values are read before any is written: one may be another's
                // current value (two carried values that trade places).
                for (n, c) in next.iter_mut().zip(carried) {
                    *n = regs[usize::from(c.next)];
                }
                for (n, c) in next.iter().zip(carried) {
                    if let Some(r) = c.state {
                        regs[usize::from(r)] = *n;
                    }
                }
            }
            let n = (self.len - start).min(LANES);
            for (value, c) in next.iter().zip(carried) {
                let values: &mut [f32] = bytemuck::cast_slice_mut(&mut mem[c.slot]);
                values[start..start + n].copy_from_slice(&value.0[..n]);
            }
            start += LANES;
        }
    }

    /// Evaluates the group on `mem` (slot memory, every slot whole chunks) with
    /// `regs` (at least [`LaneGroup::registers`]) as scratch.
    pub(crate) fn run(&self, mem: &mut [Vec<Block>], regs: &mut [Lane]) {
        oxla_simd::vectorized(
            #[inline(always)]
            || self.run_chunks(mem, regs),
        )
    }

    #[inline(always)]
    fn run_chunks(&self, mem: &mut [Vec<Block>], regs: &mut [Lane]) {
        let mut start = 0;
        while start < self.len {
            for &(s, r) in &self.loads {
                regs[usize::from(r)] = chunk(&mem[s], start);
            }
            for op in &self.ops {
                Self::step(*op, regs);
            }
            let n = (self.len - start).min(LANES);
            for &(r, s) in &self.stores {
                // Only the value's own elements: the padding past them stays zero.
                let values: &mut [f32] = bytemuck::cast_slice_mut(&mut mem[s]);
                values[start..start + n].copy_from_slice(&regs[usize::from(r)].0[..n]);
            }
            start += LANES;
        }
    }

    #[inline(always)]
    fn step(op: LaneOp, regs: &mut [Lane]) {
        let r = |i: u8| usize::from(i);
        macro_rules! bin {
            ($a:expr, $b:expr, $d:expr, $f:expr) => {{
                let (x, y) = (regs[r($a)], regs[r($b)]);
                regs[r($d)] = zip(&x, &y, $f);
            }};
        }
        macro_rules! un {
            ($a:expr, $d:expr, $f:expr) => {{
                let x = regs[r($a)];
                regs[r($d)] = each(&x, $f);
            }};
        }
        use LaneOp as L;
        match op {
            L::Add(a, b, d) => bin!(a, b, d, |x, y| x + y),
            L::Subtract(a, b, d) => bin!(a, b, d, |x, y| x - y),
            L::Multiply(a, b, d) => bin!(a, b, d, |x, y| x * y),
            L::Divide(a, b, d) => bin!(a, b, d, |x, y| x / y),
            L::Maximum(a, b, d) => bin!(a, b, d, max_op),
            L::Minimum(a, b, d) => bin!(a, b, d, min_op),
            L::Power(a, b, d) => bin!(a, b, d, f32::powf),
            L::Abs(a, d) => un!(a, d, f32::abs),
            L::Negate(a, d) => un!(a, d, |x: f32| -x),
            L::Sqrt(a, d) => un!(a, d, f32::sqrt),
            L::Rsqrt(a, d) => un!(a, d, |x: f32| 1.0 / x.sqrt()),
            L::Ceil(a, d) => un!(a, d, |x: f32| Float::flushed(x).ceil()),
            L::Floor(a, d) => un!(a, d, |x: f32| Float::flushed(x).floor()),
            L::Exponential(a, d) => un!(a, d, fastmath::exp),
            L::ExponentialMinusOne(a, d) => un!(a, d, fastmath::exp_m1),
            L::Log(a, d) => un!(a, d, fastmath::ln),
            L::LogPlusOne(a, d) => un!(a, d, fastmath::ln_1p),
            L::Logistic(a, d) => un!(a, d, fastmath::logistic),
            L::Tanh(a, d) => un!(a, d, fastmath::tanh),
            L::Sine(a, d) => {
                let x = regs[r(a)];
                regs[r(d)] = trig(&x, fastmath::sin_reduced, fastmath::sin);
            }
            L::Cosine(a, d) => {
                let x = regs[r(a)];
                regs[r(d)] = trig(&x, fastmath::cos_reduced, fastmath::cos);
            }
        }
    }
}
