//! Compiled loops of scalar work as generated machine code ([`oxla_codegen::ScalarCode`]).
//!
//! A loop whose every instruction works on single elements (integer and float arithmetic,
//! float negation, absolute value and square root, integer maximum and minimum, converts
//! (a float to an integer only to a signed one), compares, selects, copies, one-element
//! `dynamic_slice`, `dynamic_update_slice` and replacing `scatter`) gets one byte offset per slot in an arena: an update that takes its
//! operand's buffer ([`LoopProgram`]'s `in_place`) gets its operand's offset, so it writes
//! the carried array where it lies. The next state is made by copies appended to the body:
//! straight from each result to its state when no result lies where a state does, else
//! through a scratch area (all read before any is written). The values computed before the
//! first iteration (carried, captured, constant, hoisted) are copied in from the slot
//! memory, and the carried values out after the last.

use super::{Inst, Slot};
use crate::eval::tile_code::cmp_of;
use crate::{ElementType, OpKind};
use oxla_codegen::{
    Element, FloatOp, FloatType, FloatUnary, Index, IntOp, IntType, Num, OutOfRange, ScalarCode,
    ScalarLoop, ScalarOp,
};

/// A loop's generated code and where its slots lie in the arena.
#[derive(Debug)]
pub(super) struct ScalarPlan {
    code: ScalarCode,
    /// Per slot, its byte offset in the arena.
    offsets: Vec<u32>,
    /// The slots to copy in before the code runs: those holding a value before the first
    /// iteration (the arena's other bytes start as zeros, as the interpreter's slots do).
    inputs: Vec<usize>,
}

/// What [`plan`] reads of a compiled loop.
pub(super) struct LoopParts<'a> {
    pub slots: &'a [Slot],
    pub cond: &'a [Inst],
    pub cond_result: usize,
    pub body: &'a [Inst],
    pub state: &'a [usize],
    pub body_results: &'a [usize],
    pub in_place: &'a [bool],
    /// Per slot, whether it holds a value before the first iteration (a loop-carried or
    /// captured value, a constant or what is computed from constants alone).
    pub set_before: &'a [bool],
}

/// Arena offsets are 8-byte aligned.
fn align(n: usize) -> usize {
    n.next_multiple_of(8)
}

/// The generated-code plan of a loop, or `None` when an instruction has no scalar form (or
/// the machine no generator).
pub(super) fn plan(p: &LoopParts) -> Option<ScalarPlan> {
    if !oxla_codegen::scalar_available() {
        return None;
    }
    // Updates in place share their operand's offset (resolved in body order: an operand
    // is written before its update); every other slot has its own.
    let mut shares: Vec<Option<usize>> = vec![None; p.slots.len()];
    for inst in p.body {
        let operand = match inst {
            Inst::DynamicUpdateSlice(operand, ..) => *operand,
            Inst::ScatterOne(scatter) => scatter.operand,
            _ => continue,
        };
        if p.in_place[inst.dst()] {
            shares[inst.dst()] = Some(operand);
        }
    }
    let mut end = 0usize;
    let mut inputs = Vec::new();
    let mut offsets = vec![0usize; p.slots.len()];
    for (s, slot) in p.slots.iter().enumerate() {
        if shares[s].is_none() {
            offsets[s] = end;
            if p.set_before[s] {
                inputs.push(s);
            }
            end += align(slot.bytes.max(1));
        }
    }
    for inst in p.body {
        if let Some(operand) = shares[inst.dst()] {
            offsets[inst.dst()] = offsets[operand];
        }
    }
    let offsets: Vec<u32> = (offsets.into_iter())
        .map(|o| u32::try_from(o).ok())
        .collect::<Option<_>>()?;
    let t = Translate {
        slots: p.slots,
        offsets: &offsets,
        in_place: p.in_place,
    };
    let cond = t.insts(p.cond)?;
    let mut body = t.insts(p.body)?;
    // The next state: results that lie elsewhere than their state are copied there, through
    // scratch space when a result lies where some state does.
    let moves: Vec<(usize, usize)> = (p.body_results.iter().copied())
        .zip(p.state.iter().copied())
        .filter(|&(r, s)| offsets[r] != offsets[s])
        .collect();
    let clobbers = moves
        .iter()
        .any(|&(r, _)| p.state.iter().any(|&s| offsets[s] == offsets[r]));
    let mut scratch = Vec::new();
    for &(r, s) in &moves {
        let bytes = u32::try_from(p.slots[s].bytes).ok()?;
        if clobbers {
            let at = u32::try_from(end).ok()?;
            end += align(p.slots[s].bytes.max(1));
            body.push(copy(offsets[r], at, bytes));
            scratch.push(copy(at, offsets[s], bytes));
        } else {
            body.push(copy(offsets[r], offsets[s], bytes));
        }
    }
    body.extend(scratch);
    let program = ScalarLoop {
        arena: end,
        cond,
        cond_result: offsets[p.cond_result],
        body,
    };
    Some(ScalarPlan {
        code: ScalarCode::compile(&program)?,
        offsets,
        inputs,
    })
}

fn copy(src: u32, dst: u32, bytes: u32) -> ScalarOp {
    ScalarOp::Copy { src, dst, bytes }
}

/// Instructions to [`ScalarOp`]s.
struct Translate<'a> {
    slots: &'a [Slot],
    offsets: &'a [u32],
    in_place: &'a [bool],
}

impl Translate<'_> {
    fn insts(&self, insts: &[Inst]) -> Option<Vec<ScalarOp>> {
        let mut out = Vec::new();
        for inst in insts {
            self.inst(inst, &mut out)?;
        }
        Some(out)
    }

    /// Whether every slot holds one element.
    fn single(&self, slots: &[usize]) -> bool {
        slots.iter().all(|&s| self.slots[s].len == 1)
    }

    fn int_type(&self, s: usize) -> Option<IntType> {
        use ElementType as E;
        Some(match self.slots[s].et {
            E::Pred => IntType::Pred,
            E::S32 => IntType::S32,
            E::U32 => IntType::U32,
            E::S64 => IntType::S64,
            E::U64 => IntType::U64,
            _ => return None,
        })
    }

    fn num(&self, s: usize) -> Option<Num> {
        self.float_type(s)
            .map(Num::Float)
            .or_else(|| self.int_type(s).map(Num::Int))
    }

    fn float_type(&self, s: usize) -> Option<FloatType> {
        match self.slots[s].et {
            ElementType::F32 => Some(FloatType::F32),
            ElementType::F64 => Some(FloatType::F64),
            _ => None,
        }
    }

    /// An index slot's [`Index`] into a dimension of `extent` with `stride`.
    fn index(&self, at: u32, s: usize, extent: i64, stride: i64) -> Option<Index> {
        Some(Index {
            at,
            ty: self.int_type(s).filter(|&t| t != IntType::Pred)?,
            extent: u64::try_from(extent).ok().filter(|&e| e > 0)?,
            stride: u64::try_from(stride).ok()?,
        })
    }

    /// The one-element window at `starts` (one scalar slot per dimension) of `array`.
    fn window(&self, array: usize, starts: &[usize]) -> Option<Element> {
        let shape = &self.slots[array].ty.shape;
        let mut stride = 1i64;
        let mut indices = Vec::new();
        for (&s, &extent) in starts.iter().zip(shape).rev() {
            indices.push(self.index(self.offsets[s], s, extent, stride)?);
            stride = stride.checked_mul(extent)?;
        }
        (starts.len() == shape.len()).then_some(())?;
        Some(Element {
            array: self.offsets[array],
            indices,
            size: self.element_size(array)?,
            out_of_range: OutOfRange::Clamp,
        })
    }

    fn element_size(&self, s: usize) -> Option<u32> {
        let slot = &self.slots[s];
        u32::try_from(slot.bytes / slot.len.max(1)).ok()
    }

    /// The copy of an update's operand into its result, unless it updates in place.
    fn copy_operand(&self, operand: usize, dst: usize, out: &mut Vec<ScalarOp>) -> Option<()> {
        if !self.in_place[dst] {
            let bytes = u32::try_from(self.slots[dst].bytes).ok()?;
            out.push(copy(self.offsets[operand], self.offsets[dst], bytes));
        }
        Some(())
    }

    fn inst(&self, inst: &Inst, out: &mut Vec<ScalarOp>) -> Option<()> {
        let o = |s: usize| self.offsets[s];
        let op = match inst {
            Inst::Binary(kind, a, b, d) if self.single(&[*a, *b, *d]) => {
                if let Some(ty) = self.float_type(*d) {
                    let op = match kind {
                        OpKind::Add => FloatOp::Add,
                        OpKind::Subtract => FloatOp::Subtract,
                        OpKind::Multiply => FloatOp::Multiply,
                        OpKind::Divide => FloatOp::Divide,
                        _ => return None,
                    };
                    ScalarOp::Float(op, ty, o(*a), o(*b), o(*d))
                } else {
                    let ty = self.int_type(*d)?;
                    let op = match kind {
                        OpKind::Add => IntOp::Add,
                        OpKind::Subtract => IntOp::Subtract,
                        OpKind::Multiply => IntOp::Multiply,
                        OpKind::And => IntOp::And,
                        OpKind::Or => IntOp::Or,
                        OpKind::Xor => IntOp::Xor,
                        OpKind::Maximum => IntOp::Maximum,
                        OpKind::Minimum => IntOp::Minimum,
                        _ => return None,
                    };
                    let bitwise = matches!(op, IntOp::And | IntOp::Or | IntOp::Xor);
                    (ty != IntType::Pred || bitwise).then_some(())?;
                    ScalarOp::Int(op, ty, o(*a), o(*b), o(*d))
                }
            }
            Inst::Unary(kind, a, d) if self.single(&[*a, *d]) => {
                let op = match kind {
                    OpKind::Negate => FloatUnary::Negate,
                    OpKind::Abs => FloatUnary::Abs,
                    OpKind::Sqrt => FloatUnary::Sqrt,
                    _ => return None,
                };
                ScalarOp::FloatUnary(op, self.float_type(*d)?, o(*a), o(*d))
            }
            Inst::Compare(dir, total, et, a, b, d) if self.single(&[*a, *b, *d]) => {
                let cmp = cmp_of(*dir);
                if et.is_float() {
                    // Total order compares bits, not IEEE values: left to the interpreter.
                    (!total).then_some(())?;
                    ScalarOp::CompareFloat(cmp, self.float_type(*a)?, o(*a), o(*b), o(*d))
                } else {
                    let ty = self.int_type(*a).filter(|&t| t != IntType::Pred)?;
                    ScalarOp::CompareInt(cmp, ty, o(*a), o(*b), o(*d))
                }
            }
            Inst::Convert(a, d) if self.single(&[*a, *d]) => {
                let (from, to) = (self.num(*a)?, self.num(*d)?);
                oxla_codegen::convertible(from, to).then_some(())?;
                ScalarOp::Convert(from, to, o(*a), o(*d))
            }
            Inst::Select(p, t, f, d) if self.single(&[*p, *t, *f, *d]) => ScalarOp::Select {
                pred: o(*p),
                on_true: o(*t),
                on_false: o(*f),
                dst: o(*d),
                size: self.element_size(*d)?,
            },
            Inst::Fill(s, d) if self.slots[*s].bytes == self.slots[*d].bytes => {
                copy(o(*s), o(*d), u32::try_from(self.slots[*d].bytes).ok()?)
            }
            Inst::DynamicSlice(src, starts, d) if self.slots[*d].len == 1 => {
                ScalarOp::Load(self.window(*src, starts)?, o(*d))
            }
            Inst::DynamicUpdateSlice(operand, update, starts, d)
                if self.slots[*update].len == 1 =>
            {
                self.copy_operand(*operand, *d, out)?;
                ScalarOp::Store(self.window(*d, starts)?, o(*update))
            }
            Inst::ScatterOne(sc) if sc.combine.is_none() => {
                let index = &self.slots[sc.index];
                let isz = u32::try_from(index.bytes / index.len.max(1)).ok()?;
                let indices = (sc.targets.iter().enumerate())
                    .map(|(k, &(extent, stride))| {
                        let at = o(sc.index).checked_add(u32::try_from(k).ok()? * isz)?;
                        let extent = i64::try_from(extent).ok()?;
                        self.index(at, sc.index, extent, i64::try_from(stride).ok()?)
                    })
                    .collect::<Option<Vec<_>>>()?;
                self.copy_operand(sc.operand, sc.dst, out)?;
                let element = Element {
                    array: o(sc.dst),
                    indices,
                    size: self.element_size(sc.dst)?,
                    out_of_range: OutOfRange::Skip,
                };
                ScalarOp::Store(element, o(sc.update))
            }
            _ => return None,
        };
        out.push(op);
        Some(())
    }
}

impl ScalarPlan {
    /// Runs the loop from the slot memory `mem` (carried, captured, constant and hoisted
    /// values filled in); returns each state slot's bytes after the last iteration.
    pub(super) fn run(
        &self,
        slots: &[Slot],
        mem: &[Vec<super::Block>],
        state: &[usize],
    ) -> Option<Vec<Vec<u8>>> {
        let mut arena = vec![0u64; self.code.arena().div_ceil(8)];
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut arena);
        for &s in &self.inputs {
            let n = slots[s].bytes;
            let at = self.offsets[s] as usize;
            bytes[at..at + n].copy_from_slice(super::bytes(&mem[s], n));
        }
        self.code.run(&mut arena)?;
        let bytes: &[u8] = bytemuck::cast_slice(&arena);
        Some(
            state
                .iter()
                .map(|&s| {
                    let at = self.offsets[s] as usize;
                    bytes[at..at + slots[s].bytes].to_vec()
                })
                .collect(),
        )
    }
}
