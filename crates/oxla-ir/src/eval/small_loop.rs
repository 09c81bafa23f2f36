//! Small loops compiled to a register program.
//!
//! A `while` whose condition and body (with the functions they call inlined) only do
//! elementwise work on small tensors — a `fori_loop` counter and a state vector, say —
//! would pay the interpreter's per-op cost (result allocation, value-table traffic,
//! dispatch on the op kind and its attributes) on every iteration. [`LoopProgram`]
//! resolves all of that once: every value gets a preallocated slot, constants and
//! broadcasts of constants are computed once, and each iteration runs a flat list of
//! instructions that read and write slots in place.
//!
//! The instructions call the same element kernels as the op-by-op path
//! (`Float::map_common`, `zip_bytes`, `compare_bytes`), so a compiled loop gives
//! the interpreter's bits. Besides elementwise ops, broadcasts and reshapes, a loop may
//! move elements: `dynamic_slice` and `dynamic_update_slice` (starts clamped as the spec
//! says), and a `scatter` of one element at one index vector that replaces or combines with
//! a commutative op (skipped when the index is out of bounds): a `fori_loop`'s
//! `x.at[i].set(v)`, and JAX's loop turning LU pivots into a permutation; these update their
//! operand in place when nothing reads it after them. Loops with any
//! other op, a value over [`MAX_ELEMENTS`] elements,
//! or an element type other than f32, f64, the 32- and 64-bit integers and `i1` run in the
//! interpreter. A loop whose every instruction works on single elements runs as generated
//! machine code instead ([`scalar_code`]).

use super::elementwise::{compare_bytes, is_binary, is_unary, ordering_matches, zip_bytes, Float};
use super::lane_group::{Block, Carried, GroupBuilder, Lane, LaneGroup, LANES};
use super::tile_code::CountedCode;
use super::trip_count::{self, CountedLoop};
use super::typed::Plain;
use super::Value;
use crate::attrs::{ComparisonDirection, ComparisonType};
use crate::{Attribute, ElementType, Function, Literal, Module, Op, OpKind, TensorType, Type};
use crate::{IrError, ValueId};
use oxla_codegen::LoopEnd;
use std::collections::HashMap;

mod scalar_code;

/// The bytes of one block of slot memory.
const BLOCK: usize = std::mem::size_of::<Block>();

/// Values larger than this run in the interpreter, whose kernels tile and thread.
const MAX_ELEMENTS: usize = 1024;

/// How deeply calls inside a loop are inlined.
const MAX_INLINE_DEPTH: usize = 8;

/// The element types slots hold.
fn slot_type(et: ElementType) -> bool {
    use ElementType as E;
    matches!(
        et,
        E::F32 | E::F64 | E::S32 | E::S64 | E::U32 | E::U64 | E::Pred
    )
}

/// One slot: a value's type and its bytes (held in cache-line [`Block`]s).
#[derive(Clone, Debug)]
struct Slot {
    ty: TensorType,
    et: ElementType,
    len: usize,
    bytes: usize,
}

/// One instruction over slots.
#[derive(Clone, Debug)]
enum Inst {
    Unary(OpKind, usize, usize),
    Binary(OpKind, usize, usize, usize),
    /// Direction, total order, the operands' element type, operands, destination.
    Compare(ComparisonDirection, bool, ElementType, usize, usize, usize),
    Select(usize, usize, usize, usize),
    /// `dst` = every element `src`'s single one, or `src`'s bytes (broadcasts, reshapes).
    Fill(usize, usize),
    /// `dst` = `src` converted to `dst`'s element type, element by element.
    Convert(usize, usize),
    /// `dst` = the window of `src` at the (clamped) scalar starts.
    DynamicSlice(usize, Vec<usize>, usize),
    /// `dst` = the operand with the update written at the (clamped) scalar starts:
    /// (operand, update, starts, dst).
    DynamicUpdateSlice(usize, usize, Vec<usize>, usize),
    /// `dst` = the operand with one element replaced by (`None`) or combined by the op with
    /// the single-element update, where the index vector lands inside the operand.
    ScatterOne(Box<ScatterOne>),
}

/// A single-element `scatter`: (operand, index vector, update, dst) slots, and for each
/// index entry the extent and element stride of the operand dimension it addresses.
#[derive(Clone, Debug)]
struct ScatterOne {
    operand: usize,
    index: usize,
    update: usize,
    dst: usize,
    targets: Vec<(i128, usize)>,
    combine: Option<OpKind>,
}

impl Inst {
    /// The slots the instruction reads.
    fn sources(&self) -> Vec<usize> {
        match self {
            Inst::Unary(_, a, _) | Inst::Fill(a, _) | Inst::Convert(a, _) => vec![*a],
            Inst::Binary(_, a, b, _) | Inst::Compare(_, _, _, a, b, _) => vec![*a, *b],
            Inst::Select(p, t, f, _) => vec![*p, *t, *f],
            Inst::DynamicSlice(a, starts, _) => [*a].iter().chain(starts).copied().collect(),
            Inst::DynamicUpdateSlice(a, u, starts, _) => {
                [*a, *u].iter().chain(starts).copied().collect()
            }
            Inst::ScatterOne(s) => vec![s.operand, s.index, s.update],
        }
    }

    /// The slot the instruction writes.
    fn dst(&self) -> usize {
        match self {
            Inst::Unary(_, _, d)
            | Inst::Binary(_, _, _, d)
            | Inst::Compare(_, _, _, _, _, d)
            | Inst::Select(_, _, _, d)
            | Inst::Fill(_, d)
            | Inst::Convert(_, d)
            | Inst::DynamicSlice(_, _, d)
            | Inst::DynamicUpdateSlice(_, _, _, d) => *d,
            Inst::ScatterOne(s) => s.dst,
        }
    }
}

/// An instruction of the shapes loops spend their time on (a counter's add and compare,
/// f32 arithmetic on the state), with its element type and length resolved when the loop
/// compiles; any other runs through [`LoopProgram::exec`].
#[derive(Clone, Copy, Debug)]
enum Fast {
    /// f32 `+ - * /` over operands of the result's length `n`: (op, a, b, dst, n).
    F32(Arith, usize, usize, usize, usize),
    /// Wrapping `+ - *` on 32-bit integers of the result's length `n`.
    Int32(Arith, usize, usize, usize, usize),
    /// A compare of one signed 32-bit integer with another.
    CmpS32(ComparisonDirection, usize, usize, usize),
    /// Group `g` of the program's [`LaneGroup`]s: a run of f32 elementwise instructions.
    Lanes(usize),
    /// A copy of `n` bytes, at most one block, from one slot to another (a reshape, a
    /// same-length broadcast): (src, dst, n).
    Copy(usize, usize, usize),
    /// A select of one element of `n` bytes: (pred, on_true, on_false, dst, n).
    SelectOne(usize, usize, usize, usize, usize),
    /// Instruction `k` of the list, run through [`LoopProgram::exec`].
    Generic(usize),
}

/// The four arithmetic ops [`Fast`] resolves (division only for floats).
#[derive(Clone, Copy, Debug)]
enum Arith {
    Add,
    Subtract,
    Multiply,
    Divide,
}

/// The [`Fast`] form of `insts` over `slots`: runs of f32 elementwise instructions over one
/// length become [`LaneGroup`]s (added to `groups`), storing the values `needed` says are
/// read elsewhere; every other instruction gets its own form.
fn specialize(
    insts: &[Inst],
    slots: &[Slot],
    needed: &dyn Fn(usize, &[usize]) -> bool,
    groups: &mut Vec<LaneGroup>,
) -> Vec<Fast> {
    let mut out = Vec::new();
    // The open group and the instructions in it.
    let mut open: Option<(GroupBuilder, Vec<usize>)> = None;
    let mut close = |open: &mut Option<(GroupBuilder, Vec<usize>)>, out: &mut Vec<Fast>| {
        if let Some((builder, members)) = open.take() {
            if members.len() == 1 {
                out.push(specialize_one(insts, members[0], slots));
            } else {
                groups.push(builder.finish(|s| needed(s, &members)));
                out.push(Fast::Lanes(groups.len() - 1));
            }
        }
    };
    for (k, inst) in insts.iter().enumerate() {
        let lane = match inst {
            Inst::Unary(kind, a, d) => Some((kind, vec![*a], *d)),
            Inst::Binary(kind, a, b, d) => Some((kind, vec![*a, *b], *d)),
            _ => None,
        }
        .filter(|(_, _, d)| slots[*d].et == ElementType::F32);
        let Some((kind, sources, dst)) = lane else {
            close(&mut open, &mut out);
            out.push(specialize_one(insts, k, slots));
            continue;
        };
        let operands: Vec<(usize, usize)> = sources.iter().map(|&s| (s, slots[s].len)).collect();
        let len = slots[dst].len;
        if let Some((builder, members)) = open.as_mut() {
            if builder.len() == len && builder.push(kind, &operands, dst) {
                members.push(k);
                continue;
            }
            close(&mut open, &mut out);
        }
        let mut builder = GroupBuilder::new(len);
        if builder.push(kind, &operands, dst) {
            open = Some((builder, vec![k]));
        } else {
            out.push(specialize_one(insts, k, slots));
        }
    }
    close(&mut open, &mut out);
    out
}

/// The [`Fast`] form of instruction `k` of `insts`, over `slots`.
fn specialize_one(insts: &[Inst], k: usize, slots: &[Slot]) -> Fast {
    use ElementType as E;
    let generic = Fast::Generic(k);
    match &insts[k] {
        Inst::Binary(kind, a, b, d) => {
            let n = slots[*d].len;
            if slots[*a].len != n || slots[*b].len != n {
                return generic;
            }
            let op = match kind {
                OpKind::Add => Arith::Add,
                OpKind::Subtract => Arith::Subtract,
                OpKind::Multiply => Arith::Multiply,
                OpKind::Divide => Arith::Divide,
                _ => return generic,
            };
            match (slots[*d].et, op) {
                (E::F32, _) => Fast::F32(op, *a, *b, *d, n),
                (E::S32 | E::U32, Arith::Divide) => generic,
                (E::S32 | E::U32, _) => Fast::Int32(op, *a, *b, *d, n),
                _ => generic,
            }
        }
        Inst::Compare(dir, _, E::S32, a, b, d)
            if slots[*a].len == 1 && slots[*b].len == 1 && slots[*d].len == 1 =>
        {
            Fast::CmpS32(*dir, *a, *b, *d)
        }
        Inst::Fill(a, d) if slots[*a].bytes == slots[*d].bytes && slots[*d].bytes <= BLOCK => {
            Fast::Copy(*a, *d, slots[*d].bytes)
        }
        Inst::Select(p, t, f, d)
            if [p, t, f, d].iter().all(|&&s| slots[s].len == 1) && slots[*d].bytes <= BLOCK =>
        {
            Fast::SelectOne(*p, *t, *f, *d, slots[*d].bytes)
        }
        _ => generic,
    }
}

/// A compiled `while`.
#[derive(Debug)]
pub(crate) struct LoopProgram {
    slots: Vec<Slot>,
    /// Slots computed once before the first iteration (constants and what only they feed),
    /// with their bytes.
    fixed: Vec<(usize, Vec<u8>)>,
    /// Instructions computed once, after `fixed`, before the first iteration.
    hoisted: Vec<Inst>,
    cond: Vec<Inst>,
    cond_fast: Vec<Fast>,
    cond_result: usize,
    body: Vec<Inst>,
    body_fast: Vec<Fast>,
    /// The register runs [`Fast::Lanes`] name, and the registers the largest needs.
    groups: Vec<LaneGroup>,
    registers: usize,
    /// Set when the whole loop runs as one register run iterated in registers.
    counted: Option<CountedRun>,
    /// Set when the whole loop runs as generated scalar code (see [`scalar_code`]).
    scalar: Option<scalar_code::ScalarPlan>,
    /// Per loop-carried value whose new value is another state slot, a value computed
    /// before the loop or one returned twice: (result slot, state slot), copied.
    copied: Vec<(usize, usize)>,
    /// Per loop-carried value whose new value the body writes afresh every iteration (and
    /// for no other carried value): (result slot, state slot), which trade places.
    swapped: Vec<(usize, usize)>,
    /// The slots of the loop-carried values.
    state: Vec<usize>,
    /// Values of the enclosing function the regions read (hoisted constants, say), with
    /// their slots: filled once before the first iteration.
    captures: Vec<(ValueId, usize)>,
    /// Per slot: whether the body's `dynamic_update_slice` or one-element `scatter` writing
    /// it takes its operand's buffer and updates it in place, instead of copying it. Its
    /// operand is then a loop-carried value or one the body computed, which nothing reads
    /// after it in the iteration (not even as the next state).
    in_place: Vec<bool>,
    /// Per slot, whether it holds a value before the first iteration (loop-carried,
    /// captured, fixed or hoisted): the slots generated scalar code needs filled.
    set_before: Vec<bool>,
}

/// A counted loop whose body is one register run and the counter's step: it runs chunk by
/// chunk with its carried values in registers ([`LaneGroup::run_counted`]).
#[derive(Debug)]
struct CountedRun {
    group: usize,
    trips: u64,
    carried: Vec<Carried>,
    /// The same loop as generated code, where the machine and the ops allow.
    code: Option<CountedCode>,
    /// The counter's slot and the bytes of its final value.
    counter: (usize, Vec<u8>),
}

/// The [`CountedRun`] of a loop of `counted` trips with carried `state` slots, whose body
/// computes `body_results` by `body_fast` (over `body`), when the body is one register run
/// and the counter's step.
fn counted_run(
    counted: CountedLoop,
    state: &[usize],
    body_results: &[usize],
    (body, body_fast): (&[Inst], &[Fast]),
    groups: &[LaneGroup],
    slots: &[Slot],
) -> Option<CountedRun> {
    let ci = counted.counter;
    let (g, step) = match body_fast {
        [Fast::Lanes(g), step] | [step, Fast::Lanes(g)] if !matches!(step, Fast::Lanes(_)) => {
            (*g, *step)
        }
        _ => return None,
    };
    let step_dst = match step {
        Fast::Int32(_, _, _, d, _) => d,
        Fast::Generic(k) => body.get(k)?.dst(),
        _ => return None,
    };
    if step_dst != *body_results.get(ci)? {
        return None;
    }
    let group = &groups[g];
    let mut carried = Vec::new();
    for (k, (&slot, &next)) in state.iter().zip(body_results).enumerate() {
        if k == ci || next == slot {
            continue;
        }
        let s = &slots[slot];
        if s.et != ElementType::F32 || s.len != group.len() {
            return None;
        }
        carried.push(Carried {
            state: group.loads(slot).then(|| group.register_of(slot)).flatten(),
            next: group.register_of(next)?,
            slot,
        });
    }
    let counter = state[ci];
    let size = slots[counter].bytes;
    let end = counted.end.to_le_bytes().get(..size)?.to_vec();
    Some(CountedRun {
        group: g,
        trips: counted.trips,
        code: CountedCode::new(group, &carried, counted.trips),
        carried,
        counter: (counter, end),
    })
}

/// Builds a [`LoopProgram`].
struct Builder<'m> {
    module: &'m Module,
    slots: Vec<Slot>,
    fixed: Vec<(usize, Vec<u8>)>,
    hoisted: Vec<Inst>,
    /// Whether each slot is loop-invariant (computable before the loop).
    invariant: Vec<bool>,
    captures: Vec<(ValueId, usize)>,
}

impl<'m> Builder<'m> {
    fn slot(&mut self, ty: &Type, invariant: bool) -> Option<usize> {
        let Type::Tensor(t) = ty else {
            return None;
        };
        let len = t
            .num_elements()
            .filter(|&n| n <= MAX_ELEMENTS && t.is_static())?;
        let et = t.element_type;
        if !slot_type(et) {
            return None;
        }
        self.slots.push(Slot {
            ty: t.clone(),
            et,
            len,
            bytes: t.byte_size()?,
        });
        self.invariant.push(invariant);
        Some(self.slots.len() - 1)
    }

    /// The slot of `v`, a value of the enclosing function read inside the loop.
    fn capture(&mut self, func: &Function, v: ValueId) -> Option<usize> {
        if let Some(&(_, s)) = self.captures.iter().find(|(c, _)| *c == v) {
            return Some(s);
        }
        let s = self.slot(func.values.get(v.index())?, true)?;
        self.captures.push((v, s));
        Some(s)
    }

    /// Compiles `ops` of `func` into `out`, with `env` mapping the values in scope to slots;
    /// returns the slots of the terminator's operands.
    fn block(
        &mut self,
        func: &'m Function,
        ops: &'m [Op],
        env: &mut HashMap<ValueId, usize>,
        out: &mut Vec<Inst>,
        depth: usize,
    ) -> Option<Vec<usize>> {
        use OpKind as K;
        for op in ops {
            let operands = op
                .operands
                .iter()
                .map(|&v| match env.get(&v) {
                    Some(&s) => Some(s),
                    // The loop's own regions may read values of the enclosing function.
                    None if depth == 0 => self.capture(func, v),
                    None => None,
                })
                .collect::<Option<Vec<usize>>>()?;
            if op.kind.is_terminator() {
                return Some(operands);
            }
            if op.kind == K::Call {
                if depth >= MAX_INLINE_DEPTH {
                    return None;
                }
                let callee = match op.attr("callee")? {
                    Attribute::SymbolRef(s) | Attribute::String(s) => s.trim_start_matches('@'),
                    _ => return None,
                };
                let callee = self.module.function(callee)?;
                let [block] = callee.body.blocks.as_slice() else {
                    return None;
                };
                if block.arguments.len() != operands.len() {
                    return None;
                }
                let mut inner: HashMap<ValueId, usize> =
                    block.arguments.iter().copied().zip(operands).collect();
                let results = self.block(callee, &block.ops, &mut inner, out, depth + 1)?;
                if results.len() != op.results.len() {
                    return None;
                }
                for (&r, s) in op.results.iter().zip(results) {
                    env.insert(r, s);
                }
                continue;
            }
            if (!op.regions.is_empty() && op.kind != K::Scatter) || op.results.len() != 1 {
                return None;
            }
            let invariant = operands.iter().all(|&s| self.invariant[s]);
            let dst = self.slot(func.values.get(op.results[0].index())?, invariant)?;
            env.insert(op.results[0], dst);
            if op.kind == K::Constant {
                let cx = super::OpCx { op, func };
                let lit = super::shape::constant(cx).ok()?;
                if lit.ty != self.slots[dst].ty {
                    return None;
                }
                self.fixed.push((dst, lit.data.to_vec()));
                continue;
            }
            let inst = self.inst(func, op, &operands, dst)?;
            if invariant {
                self.hoisted.push(inst);
            } else {
                out.push(inst);
            }
        }
        None
    }

    /// The instruction for `op` (not a constant or call) writing slot `dst`.
    fn inst(&self, func: &Function, op: &Op, operands: &[usize], dst: usize) -> Option<Inst> {
        use OpKind as K;
        let out = &self.slots[dst];
        let slot = |i: usize| &self.slots[operands[i]];
        // Operands of an elementwise op: the given element type and the result's element
        // count, or a single element that broadcasts; one of them must be full-sized.
        let full = (0..operands.len()).any(|i| slot(i).len == out.len);
        let fits = |i: usize, et: ElementType| {
            let s = slot(i);
            full && s.et == et && (s.len == out.len || s.len == 1)
        };
        Some(match &op.kind {
            k if is_unary(k) && operands.len() == 1 => {
                let probe_ok = match out.et {
                    ElementType::F32 => f32::map_common(&[0.0], &mut [0.0], k),
                    ElementType::F64 => f64::map_common(&[0.0], &mut [0.0], k),
                    _ => false,
                };
                if !probe_ok || slot(0).et != out.et || slot(0).len != out.len {
                    return None;
                }
                Inst::Unary(k.clone(), operands[0], dst)
            }
            k if is_binary(k) && operands.len() == 2 => {
                // Only the ops and types the slice kernels cover (asked on empty slices).
                if !(fits(0, out.et) && fits(1, out.et) && zip_bytes(out.et, k, &mut [], &[], &[]))
                {
                    return None;
                }
                Inst::Binary(k.clone(), operands[0], operands[1], dst)
            }
            K::Compare if operands.len() == 2 && out.et == ElementType::Pred => {
                let et = slot(0).et;
                let covered = compare_bytes(et, ComparisonDirection::Eq, false, &[], &[], &mut []);
                if !(covered && fits(0, et) && fits(1, et)) {
                    return None;
                }
                let dir = match op.attr("comparison_direction")? {
                    Attribute::ComparisonDirection(d) => *d,
                    _ => return None,
                };
                let total = matches!(
                    op.attr("compare_type"),
                    Some(Attribute::ComparisonType(ComparisonType::TotalOrder))
                );
                Inst::Compare(dir, total, et, operands[0], operands[1], dst)
            }
            K::Select if operands.len() == 3 => {
                if !(fits(0, ElementType::Pred) && fits(1, out.et) && fits(2, out.et)) {
                    return None;
                }
                Inst::Select(operands[0], operands[1], operands[2], dst)
            }
            K::Convert if operands.len() == 1 && slot(0).ty == out.ty => {
                Inst::Fill(operands[0], dst)
            }
            K::Convert if operands.len() == 1 && slot(0).ty.shape == out.ty.shape => {
                Inst::Convert(operands[0], dst)
            }
            K::DynamicSlice if operands.len() == 1 + out.ty.rank() => {
                let src = slot(0);
                let starts = &operands[1..];
                let sizes = super::OpCx { op, func }.i64s("slice_sizes").ok()?;
                if src.et != out.et || sizes != out.ty.shape || !self.scalars(starts) {
                    return None;
                }
                Inst::DynamicSlice(operands[0], starts.to_vec(), dst)
            }
            K::DynamicUpdateSlice if operands.len() == 2 + out.ty.rank() => {
                let (src, update) = (slot(0), slot(1));
                let starts = &operands[2..];
                let fits = update.ty.rank() == out.ty.rank()
                    && update
                        .ty
                        .shape
                        .iter()
                        .zip(&out.ty.shape)
                        .all(|(u, o)| u <= o);
                if src.ty != out.ty || update.et != out.et || !fits || !self.scalars(starts) {
                    return None;
                }
                Inst::DynamicUpdateSlice(operands[0], operands[1], starts.to_vec(), dst)
            }
            K::Scatter if operands.len() == 3 => {
                Inst::ScatterOne(Box::new(self.scatter_one(func, op, operands, dst)?))
            }
            K::BroadcastInDim | K::Reshape if operands.len() == 1 => {
                let src = slot(0);
                if src.et != out.et {
                    return None;
                }
                // A broadcast of one element, or one that only adds unit dimensions (the
                // same bytes); reshapes always keep the bytes.
                let same_order = op.kind == K::Reshape || {
                    let cx = super::OpCx { op, func };
                    let dims = cx.i64s("broadcast_dimensions").ok()?;
                    dims.windows(2).all(|w| w[0] < w[1])
                };
                if !(src.len == 1 || (src.len == out.len && same_order)) {
                    return None;
                }
                Inst::Fill(operands[0], dst)
            }
            _ => return None,
        })
    }
}

impl Builder<'_> {
    /// Whether every slot of `starts` holds one integer.
    fn scalars(&self, starts: &[usize]) -> bool {
        starts.iter().all(|&s| {
            let s = &self.slots[s];
            s.len == 1 && s.ty.rank() == 0 && s.et != ElementType::Pred && !s.et.is_float()
        })
    }

    /// The [`ScatterOne`] form of a `scatter` (operands `[operand, indices, update]`): one
    /// index vector naming every operand dimension, a single-element update, no window, no
    /// batching dimensions, a body that replaces or is one commutative op.
    fn scatter_one(
        &self,
        func: &Function,
        op: &Op,
        operands: &[usize],
        dst: usize,
    ) -> Option<ScatterOne> {
        let cx = super::OpCx { op, func };
        let (operand, index, update) = (
            &self.slots[operands[0]],
            &self.slots[operands[1]],
            &self.slots[operands[2]],
        );
        let rank = operand.ty.rank();
        let empty = |name: &str| {
            cx.i64s_or(name, Vec::new())
                .ok()
                .is_some_and(|v| v.is_empty())
        };
        let mut inserted = cx.i64s_or("inserted_window_dims", Vec::new()).ok()?;
        inserted.sort_unstable();
        let all: Vec<i64> = (0..rank as i64).collect();
        let to_operand = cx.i64s("scatter_dims_to_operand_dims").ok()?;
        let mut mapped = to_operand.clone();
        mapped.sort_unstable();
        let index_ok = index.len == rank
            && index.ty.rank() <= 1
            && cx.int("index_vector_dim").ok()? == 0
            && (index.ty.rank() == 1 || rank == 1)
            && index.et != ElementType::Pred
            && !index.et.is_float();
        if operand.ty != self.slots[dst].ty
            || update.et != operand.et
            || update.len != 1
            || update.ty.rank() != 0
            || inserted != all
            || mapped != all
            || !index_ok
            || !empty("update_window_dims")
            || !empty("input_batching_dims")
            || !empty("scatter_indices_batching_dims")
        {
            return None;
        }
        let combine = match super::body::classify(op.regions.first()?, 1).kind {
            super::body::BodyKind::Replace => None,
            super::body::BodyKind::Simple(kind)
                if zip_bytes(operand.et, &kind, &mut [], &[], &[]) =>
            {
                Some(kind)
            }
            _ => return None,
        };
        let extents = &operand.ty.shape;
        let targets = to_operand
            .iter()
            .map(|&d| {
                let d = d as usize;
                let stride: i64 = extents[d + 1..].iter().product();
                (i128::from(extents[d]), stride as usize)
            })
            .collect();
        Some(ScatterOne {
            operand: operands[0],
            index: operands[1],
            update: operands[2],
            dst,
            targets,
            combine,
        })
    }
}

/// Compiles `op` (a `while` of `func`), or `None` when it does not qualify.
pub(crate) fn compile(module: &Module, func: &Function, op: &Op) -> Option<LoopProgram> {
    // Slots are viewed as native elements; literal bytes are little-endian.
    if cfg!(target_endian = "big") {
        return None;
    }
    let [cond, body] = op.regions.as_slice() else {
        return None;
    };
    let ([cond], [body]) = (cond.blocks.as_slice(), body.blocks.as_slice()) else {
        return None;
    };
    let n = op.operands.len();
    if cond.arguments.len() != n || body.arguments.len() != n || op.results.len() != n {
        return None;
    }
    let mut b = Builder {
        module,
        slots: Vec::new(),
        fixed: Vec::new(),
        hoisted: Vec::new(),
        invariant: Vec::new(),
        captures: Vec::new(),
    };
    let state = op
        .operands
        .iter()
        .map(|v| b.slot(func.values.get(v.index())?, false))
        .collect::<Option<Vec<_>>>()?;
    let mut cond_env: HashMap<ValueId, usize> =
        cond.arguments.iter().copied().zip(state.clone()).collect();
    let mut cond_insts = Vec::new();
    let cond_out = b.block(func, &cond.ops, &mut cond_env, &mut cond_insts, 0)?;
    let [cond_result] = cond_out.as_slice() else {
        return None;
    };
    let cs = &b.slots[*cond_result];
    if cs.et != ElementType::Pred || cs.len != 1 {
        return None;
    }
    let mut body_env: HashMap<ValueId, usize> =
        body.arguments.iter().copied().zip(state.clone()).collect();
    let mut body_insts = Vec::new();
    let body_results = b.block(func, &body.ops, &mut body_env, &mut body_insts, 0)?;
    if body_results.len() != n
        || body_results
            .iter()
            .zip(&state)
            .any(|(&r, &s)| b.slots[r].ty != b.slots[s].ty)
    {
        return None;
    }
    let (swapped, copied): (Vec<_>, Vec<_>) = body_results
        .iter()
        .copied()
        .zip(state.iter().copied())
        .partition(|&(r, _)| {
            body_insts.iter().any(|inst| inst.dst() == r)
                && body_results.iter().filter(|&&w| w == r).count() == 1
                && !state.contains(&r)
        });
    let mut in_place = vec![false; b.slots.len()];
    for (k, inst) in body_insts.iter().enumerate() {
        let operand = match inst {
            Inst::DynamicUpdateSlice(operand, ..) => *operand,
            Inst::ScatterOne(scatter) => scatter.operand,
            _ => continue,
        };
        let per_iteration =
            state.contains(&operand) || body_insts[..k].iter().any(|i| i.dst() == operand);
        let read_after = body_results.contains(&operand)
            || inst.sources()[1..].contains(&operand)
            || body_insts[k + 1..]
                .iter()
                .any(|i| i.sources().contains(&operand));
        in_place[inst.dst()] = per_iteration && !read_after;
    }
    // A value a group computes is stored when anything outside the group reads it: another
    // instruction of either region, the condition's result, or the loop's next state.
    let mut reads = vec![0usize; b.slots.len()];
    for inst in cond_insts.iter().chain(&body_insts) {
        for s in inst.sources() {
            reads[s] += 1;
        }
    }
    let needed = |slot: usize, members: &[usize]| {
        let inside: usize = members
            .iter()
            .map(|&k| {
                body_insts[k]
                    .sources()
                    .iter()
                    .filter(|&&s| s == slot)
                    .count()
            })
            .sum();
        reads[slot] > inside || slot == *cond_result || body_results.contains(&slot)
    };
    // Only the body's instructions are grouped (the condition is a counter's compare).
    let mut groups = Vec::new();
    let body_fast = specialize(&body_insts, &b.slots, &needed, &mut groups);
    let cond_fast = (0..cond_insts.len())
        .map(|k| specialize_one(&cond_insts, k, &b.slots))
        .collect();
    let registers = groups.iter().map(LaneGroup::registers).max().unwrap_or(0);
    let counted = trip_count::counted_loop(func, op).and_then(|counted| {
        let body = (body_insts.as_slice(), body_fast.as_slice());
        counted_run(counted, &state, &body_results, body, &groups, &b.slots)
    });
    // Loop-invariant slots are captured, constant or hoisted: all set before the loop.
    let mut set_before = b.invariant.clone();
    for &s in &state {
        set_before[s] = true;
    }
    let scalar = if counted.is_none() {
        scalar_code::plan(&scalar_code::LoopParts {
            slots: &b.slots,
            cond: &cond_insts,
            cond_result: *cond_result,
            body: &body_insts,
            state: &state,
            body_results: &body_results,
            in_place: &in_place,
            set_before: &set_before,
        })
    } else {
        None
    };
    Some(LoopProgram {
        counted,
        scalar,
        cond_fast,
        body_fast,
        groups,
        registers,
        slots: b.slots,
        fixed: b.fixed,
        hoisted: b.hoisted,
        cond: cond_insts,
        cond_result: *cond_result,
        body: body_insts,
        copied,
        swapped,
        state,
        captures: b.captures,
        in_place,
        set_before,
    })
}

/// The bytes of one slot.
fn bytes(words: &[Block], n: usize) -> &[u8] {
    &bytemuck::cast_slice(words)[..n]
}

/// Copies the first `n` bytes (at most one block) of slot `src` into slot `dst`.
fn copy_head(mem: &mut [Vec<Block>], src: usize, dst: usize, n: usize) {
    let block = mem[src][0];
    bytes_mut(&mut mem[dst], n).copy_from_slice(&bytemuck::bytes_of(&block)[..n]);
}

fn bytes_mut(words: &mut [Block], n: usize) -> &mut [u8] {
    &mut bytemuck::cast_slice_mut(words)[..n]
}

/// The bytes of slot `s` in `mem`.
fn slot_bytes<'a>(mem: &'a [Vec<Block>], slots: &[Slot], s: usize) -> &'a [u8] {
    bytes(&mem[s], slots[s].bytes)
}

/// The elements of a slot as `T`.
fn view<T: Plain>(words: &[Block], len: usize) -> &[T] {
    &bytemuck::cast_slice(words)[..len]
}

fn view_mut<T: Plain>(words: &mut [Block], len: usize) -> &mut [T] {
    &mut bytemuck::cast_slice_mut(words)[..len]
}

/// `out[i] = f(a[i], b[i])` for the first `len` elements of three slots viewed as `T`.
#[inline(always)]
fn zip_words<T: Plain>(
    f: impl Fn(T, T) -> T,
    a: &[Block],
    b: &[Block],
    out: &mut [Block],
    len: usize,
) {
    let (a, b) = (view::<T>(a, len), view::<T>(b, len));
    for ((o, &x), &y) in view_mut::<T>(out, len).iter_mut().zip(a).zip(b) {
        *o = f(x, y);
    }
}

/// The four arithmetic ops on f32/f64 and wrapping add/subtract/multiply on 32- and 64-bit
/// integers, as plain loops over `len` elements (a loop's values are small: these beat the
/// general byte-level dispatch of [`zip_bytes`], and compute the same bits). `false` for
/// anything else.
fn arithmetic(
    et: ElementType,
    kind: &OpKind,
    a: &[Block],
    b: &[Block],
    out: &mut [Block],
    len: usize,
) -> bool {
    use ElementType as E;
    use OpKind as K;
    match (et, kind) {
        (E::F32, K::Add) => zip_words(|x: f32, y| x + y, a, b, out, len),
        (E::F32, K::Subtract) => zip_words(|x: f32, y| x - y, a, b, out, len),
        (E::F32, K::Multiply) => zip_words(|x: f32, y| x * y, a, b, out, len),
        (E::F32, K::Divide) => zip_words(|x: f32, y| x / y, a, b, out, len),
        (E::F64, K::Add) => zip_words(|x: f64, y| x + y, a, b, out, len),
        (E::F64, K::Subtract) => zip_words(|x: f64, y| x - y, a, b, out, len),
        (E::F64, K::Multiply) => zip_words(|x: f64, y| x * y, a, b, out, len),
        (E::F64, K::Divide) => zip_words(|x: f64, y| x / y, a, b, out, len),
        (E::S32 | E::U32, K::Add) => zip_words(u32::wrapping_add, a, b, out, len),
        (E::S32 | E::U32, K::Subtract) => zip_words(u32::wrapping_sub, a, b, out, len),
        (E::S32 | E::U32, K::Multiply) => zip_words(u32::wrapping_mul, a, b, out, len),
        (E::S64 | E::U64, K::Add) => zip_words(u64::wrapping_add, a, b, out, len),
        (E::S64 | E::U64, K::Subtract) => zip_words(u64::wrapping_sub, a, b, out, len),
        (E::S64 | E::U64, K::Multiply) => zip_words(u64::wrapping_mul, a, b, out, len),
        _ => return false,
    }
    true
}

/// Compares 32- and 64-bit integers (a loop's counter against its bound) as plain loops
/// over `len` elements, writing `i1` bytes; `false` for other element types.
fn int_compare(
    et: ElementType,
    dir: ComparisonDirection,
    a: &[Block],
    b: &[Block],
    out: &mut [Block],
    len: usize,
) -> bool {
    fn go<T: Plain + Ord>(
        dir: ComparisonDirection,
        a: &[Block],
        b: &[Block],
        out: &mut [Block],
        len: usize,
    ) {
        let (a, b) = (view::<T>(a, len), view::<T>(b, len));
        for ((o, x), y) in bytes_mut(out, len).iter_mut().zip(a).zip(b) {
            *o = u8::from(ordering_matches(dir, Some(x.cmp(y))));
        }
    }
    use ElementType as E;
    match et {
        E::S32 => go::<i32>(dir, a, b, out, len),
        E::S64 => go::<i64>(dir, a, b, out, len),
        E::U32 => go::<u32>(dir, a, b, out, len),
        E::U64 => go::<u64>(dir, a, b, out, len),
        _ => return false,
    }
    true
}

/// Entry `k` of an integer slot, widened.
fn read_int(words: &[Block], et: ElementType, k: usize) -> i128 {
    use ElementType as E;
    match et {
        E::S32 => i128::from(view::<i32>(words, k + 1)[k]),
        E::S64 => i128::from(view::<i64>(words, k + 1)[k]),
        E::U32 => i128::from(view::<u32>(words, k + 1)[k]),
        _ => i128::from(view::<u64>(words, k + 1)[k]),
    }
}

/// Calls `copy(whole offset, window offset, length)` (in bytes) for each row, along the last
/// dimension, of the window at `at` (extents `window_shape`) of a value of extents
/// `whole_shape`, with `size`-byte elements; the window is dense.
fn window_rows(
    whole_shape: &[i64],
    at: &[usize],
    window_shape: &[i64],
    size: usize,
    mut copy: impl FnMut(usize, usize, usize),
) {
    let rank = whole_shape.len();
    let ext = |s: &[i64]| -> Vec<usize> { s.iter().map(|&d| d.max(0) as usize).collect() };
    let (outer, inner) = (ext(whole_shape), ext(window_shape));
    if inner.contains(&0) {
        return;
    }
    let row = inner.last().map_or(1, |&r| r) * size;
    let rows: usize = inner.iter().rev().skip(1).product();
    let mut pos = vec![0usize; rank.saturating_sub(1)];
    for r in 0..rows {
        let mut offset = 0usize;
        for d in 0..rank {
            let p = at[d] + if d + 1 < rank { pos[d] } else { 0 };
            offset = offset * outer[d] + p;
        }
        copy(offset * size, r * row, row);
        // The next row's position in the window.
        for d in (0..rank.saturating_sub(1)).rev() {
            pos[d] += 1;
            if pos[d] < inner[d] {
                break;
            }
            pos[d] = 0;
        }
    }
}

impl LoopProgram {
    /// The starts of a window of `window` extents in a value of `whole` extents, read from
    /// the start slots and clamped so that the window fits, as `dynamic_slice` and
    /// `dynamic_update_slice` define.
    fn clamped_starts(
        &self,
        mem: &[Vec<Block>],
        starts: &[usize],
        whole: &[i64],
        window: &[i64],
    ) -> Vec<usize> {
        starts
            .iter()
            .zip(whole.iter().zip(window))
            .map(|(&s, (&w, &n))| {
                let highest = i128::from((w - n).max(0));
                read_int(&mem[s], self.slots[s].et, 0).clamp(0, highest) as usize
            })
            .collect()
    }

    /// The row-major offset of the one element a window of extent 1 in every dimension
    /// takes at the scalar `starts` (each clamped into the array) in an array of `shape`.
    fn element_offset(&self, mem: &[Vec<Block>], starts: &[usize], shape: &[i64]) -> usize {
        starts.iter().zip(shape).fold(0, |offset, (&s, &w)| {
            let extent = w.max(1) as usize;
            let at = read_int(&mem[s], self.slots[s].et, 0).clamp(0, extent as i128 - 1);
            offset * extent + at as usize
        })
    }

    /// Whether the loop runs as generated code ([`CountedCode`], or scalar code from
    /// [`scalar_code`]).
    pub(crate) fn has_generated_code(&self) -> bool {
        self.counted.as_ref().is_some_and(|c| c.code.is_some()) || self.scalar.is_some()
    }

    /// How many runs of f32 instructions the loop evaluates in registers.
    pub(crate) fn register_runs(&self) -> usize {
        self.groups.len()
    }

    /// The work of one iteration in units of about ten nanoseconds: interpreted, each
    /// instruction (condition and body) counts once per 16 elements it writes (an in-place
    /// update writes its update's elements, not its operand's), each copied state value
    /// likewise, plus one for the iteration itself. As generated scalar code an iteration
    /// runs in about a nanosecond per instruction, so it counts one per 16 instructions.
    pub(crate) fn work_per_iteration(&self) -> u64 {
        let insts = self.cond.iter().chain(&self.body);
        if self.scalar.is_some() && super::tile_code::enabled() {
            return insts.count().div_ceil(16) as u64 + 1;
        }
        let written = |inst: &Inst| match inst {
            Inst::DynamicUpdateSlice(_, update, _, dst) if self.in_place[*dst] => {
                self.slots[*update].len
            }
            Inst::ScatterOne(scatter) if self.in_place[scatter.dst] => 1,
            inst => self.slots[inst.dst()].len,
        };
        let work: usize = insts.map(|i| 1 + written(i) / 16).sum();
        let copies: usize = self
            .copied
            .iter()
            .map(|&(_, s)| self.slots[s].len / 16)
            .sum();
        (work + copies) as u64 + 1
    }

    /// Runs the loop from `state` (the `while` operands), reading captured values through
    /// `outer`; `None` when a value is not the tensor the program was compiled for (the
    /// caller then interprets the loop).
    pub(crate) fn run<'v>(
        &self,
        state: &[Value],
        outer: impl Fn(ValueId) -> Option<&'v Value>,
    ) -> Option<Result<Vec<Value>, IrError>> {
        // Every slot is padded with zeros to whole cache-line blocks, whole chunks for the
        // register runs. Generated scalar code keeps its values in an arena of its own, so
        // then only the slots holding values before the first iteration are made here.
        let scalar = self.scalar.as_ref().filter(|_| super::tile_code::enabled());
        let blocks =
            |s: &Slot| vec![Block::default(); s.bytes.div_ceil(std::mem::size_of::<Block>())];
        let mut mem: Vec<Vec<Block>> = (self.slots.iter().zip(&self.set_before))
            .map(|(s, &before)| match scalar {
                Some(_) if !before => Vec::new(),
                _ => blocks(s),
            })
            .collect();
        let mut regs: Vec<Lane> = vec![Lane::default(); self.registers];
        let captured = self.captures.iter().map(|&(v, s)| (outer(v), s));
        let carried = state.iter().map(Some).zip(self.state.iter().copied());
        for (value, s) in carried.chain(captured) {
            let Some(Value::Tensor(lit)) = value else {
                return None;
            };
            let slot = &self.slots[s];
            if lit.ty != slot.ty || lit.data.len() != slot.bytes {
                return None;
            }
            bytes_mut(&mut mem[s], slot.bytes).copy_from_slice(&lit.data);
        }
        for (s, data) in &self.fixed {
            bytes_mut(&mut mem[*s], self.slots[*s].bytes).copy_from_slice(data);
        }
        for inst in &self.hoisted {
            self.exec(inst, &mut mem);
        }
        if let Some(plan) = scalar {
            if let Some(states) = plan.run(&self.slots, &mem, &self.state) {
                let values = (self.state.iter().zip(states)).map(|(&s, data)| {
                    Literal::new(self.slots[s].ty.clone(), data).map(Value::Tensor)
                });
                return Some(values.collect());
            }
            for (m, (s, &before)) in mem.iter_mut().zip(self.slots.iter().zip(&self.set_before)) {
                if !before {
                    *m = blocks(s);
                }
            }
        }
        let mut carried: Vec<Vec<Block>> = self
            .copied
            .iter()
            .map(|&(_, s)| vec![Block::default(); mem[s].len()])
            .collect();
        if let Some(counted) = &self.counted {
            let mut next = vec![Lane::default(); counted.carried.len()];
            let group = &self.groups[counted.group];
            let (trips, len) = (counted.trips, group.len());
            // Generated code first, chunk by chunk from `from`; a chunk it stopped in
            // finishes its iterations in the register run.
            let mut from = 0;
            while let Some(end) = counted
                .code
                .as_ref()
                .and_then(|c| c.run(&mut mem, from, len, trips))
            {
                let LoopEnd::Stopped { chunk, trips_done } = end else {
                    from = len;
                    break;
                };
                let rest = chunk..chunk + LANES;
                let lanes = (regs.as_mut_slice(), next.as_mut_slice());
                group.run_counted(trips - trips_done, &counted.carried, rest, &mut mem, lanes);
                from = chunk + LANES;
            }
            let lanes = (regs.as_mut_slice(), next.as_mut_slice());
            group.run_counted(trips, &counted.carried, from..len, &mut mem, lanes);
            let (slot, end) = &counted.counter;
            bytes_mut(&mut mem[*slot], end.len()).copy_from_slice(end);
        }
        while self.counted.is_none() {
            for fast in &self.cond_fast {
                self.exec_fast(*fast, &self.cond, &mut mem, &mut regs);
            }
            if bytes(&mem[self.cond_result], 1)[0] == 0 {
                break;
            }
            for fast in &self.body_fast {
                self.exec_fast(*fast, &self.body, &mut mem, &mut regs);
            }
            // Results may be other state slots: read them all before writing any. A
            // result the body computes afresh trades places with its state slot (the
            // body writes it again before reading it in the next iteration).
            for (c, &(r, _)) in carried.iter_mut().zip(&self.copied) {
                c.copy_from_slice(&mem[r]);
            }
            for &(r, s) in &self.swapped {
                mem.swap(r, s);
            }
            for (c, &(_, s)) in carried.iter().zip(&self.copied) {
                mem[s].copy_from_slice(c);
            }
        }
        Some(
            self.state
                .iter()
                .map(|&s| {
                    let slot = &self.slots[s];
                    Literal::new(slot.ty.clone(), bytes(&mem[s], slot.bytes).to_vec())
                        .map(Value::Tensor)
                })
                .collect(),
        )
    }

    /// Runs one instruction of `insts` in its [`Fast`] form (the same bits as
    /// [`LoopProgram::exec`]).
    fn exec_fast(&self, fast: Fast, insts: &[Inst], mem: &mut [Vec<Block>], regs: &mut [Lane]) {
        fn go<T: Plain>(
            f: impl Fn(T, T) -> T,
            (a, b, d, n): (usize, usize, usize, usize),
            mem: &mut [Vec<Block>],
        ) {
            let mut out = std::mem::take(&mut mem[d]);
            zip_words(f, &mem[a], &mem[b], &mut out, n);
            mem[d] = out;
        }
        match fast {
            Fast::F32(op, a, b, d, n) => match op {
                Arith::Add => go(|x: f32, y| x + y, (a, b, d, n), mem),
                Arith::Subtract => go(|x: f32, y| x - y, (a, b, d, n), mem),
                Arith::Multiply => go(|x: f32, y| x * y, (a, b, d, n), mem),
                Arith::Divide => go(|x: f32, y| x / y, (a, b, d, n), mem),
            },
            Fast::Int32(op, a, b, d, n) => match op {
                Arith::Add => go(u32::wrapping_add, (a, b, d, n), mem),
                Arith::Subtract => go(u32::wrapping_sub, (a, b, d, n), mem),
                Arith::Multiply => go(u32::wrapping_mul, (a, b, d, n), mem),
                // Integer division has its own rules (by zero, overflow): never resolved.
                Arith::Divide => {}
            },
            Fast::CmpS32(dir, a, b, d) => {
                let (x, y) = (view::<i32>(&mem[a], 1)[0], view::<i32>(&mem[b], 1)[0]);
                bytes_mut(&mut mem[d], 1)[0] = u8::from(ordering_matches(dir, Some(x.cmp(&y))));
            }
            Fast::Lanes(g) => self.groups[g].run(mem, regs),
            Fast::Copy(a, d, n) => copy_head(mem, a, d, n),
            Fast::SelectOne(p, t, f, d, n) => {
                let from = if bytes(&mem[p], 1)[0] != 0 { t } else { f };
                copy_head(mem, from, d, n);
            }
            Fast::Generic(k) => self.exec(&insts[k], mem),
        }
    }

    /// Runs one instruction. Its destination is never one of its sources (SSA).
    fn exec(&self, inst: &Inst, mem: &mut [Vec<Block>]) {
        let dst = inst.dst();
        let mut out = std::mem::take(&mut mem[dst]);
        let o = &self.slots[dst];
        let len = |s: usize| self.slots[s].len;
        match inst {
            Inst::Unary(kind, a, _) => match o.et {
                ElementType::F32 => {
                    f32::map_common(view(&mem[*a], o.len), view_mut(&mut out, o.len), kind);
                }
                _ => {
                    f64::map_common(view(&mem[*a], o.len), view_mut(&mut out, o.len), kind);
                }
            },
            Inst::Binary(kind, a, b, _) => {
                let same_len = len(*a) == o.len && len(*b) == o.len;
                if !(same_len && arithmetic(o.et, kind, &mem[*a], &mem[*b], &mut out, o.len)) {
                    let (a, b) = (
                        slot_bytes(mem, &self.slots, *a),
                        slot_bytes(mem, &self.slots, *b),
                    );
                    zip_bytes(o.et, kind, bytes_mut(&mut out, o.bytes), a, b);
                }
            }
            Inst::Compare(dir, _, et, a, b, _)
                if len(*a) == o.len
                    && len(*b) == o.len
                    && int_compare(*et, *dir, &mem[*a], &mem[*b], &mut out, o.len) => {}
            Inst::Compare(dir, total, et, a, b, _) => {
                let (a, b) = (
                    slot_bytes(mem, &self.slots, *a),
                    slot_bytes(mem, &self.slots, *b),
                );
                compare_bytes(*et, *dir, *total, a, b, bytes_mut(&mut out, o.len));
            }
            Inst::Select(p, t, f, _) => {
                let size = o.bytes / o.len.max(1);
                let (lp, lt, lf) = (len(*p), len(*t), len(*f));
                let pred = bytes(&mem[*p], lp);
                let (tv, fv) = (bytes(&mem[*t], lt * size), bytes(&mem[*f], lf * size));
                let out = bytes_mut(&mut out, o.bytes);
                let at = |l: usize, i: usize| if l == 1 { 0 } else { i };
                for (i, o) in out.chunks_exact_mut(size).enumerate() {
                    let src = if pred[at(lp, i)] != 0 {
                        &tv[at(lt, i) * size..][..size]
                    } else {
                        &fv[at(lf, i) * size..][..size]
                    };
                    o.copy_from_slice(src);
                }
            }
            Inst::DynamicSlice(src, starts, _) if o.len == 1 => {
                let s = &self.slots[*src];
                let size = o.bytes;
                let at = self.element_offset(mem, starts, &s.ty.shape) * size;
                bytes_mut(&mut out, size)
                    .copy_from_slice(&bytes(&mem[*src], s.bytes)[at..at + size]);
            }
            Inst::DynamicSlice(src, starts, _) => {
                let s = &self.slots[*src];
                let at = self.clamped_starts(mem, starts, &s.ty.shape, &o.ty.shape);
                let size = o.bytes / o.len.max(1);
                let (from, window) = (bytes(&mem[*src], s.bytes), bytes_mut(&mut out, o.bytes));
                window_rows(&s.ty.shape, &at, &o.ty.shape, size, |w, d, n| {
                    window[d..d + n].copy_from_slice(&from[w..w + n]);
                });
            }
            Inst::DynamicUpdateSlice(src, update, starts, _) => {
                let u = &self.slots[*update];
                let size = o.bytes / o.len.max(1);
                // One element: its offset without building the window's rows.
                let one = (u.len == 1).then(|| self.element_offset(mem, starts, &o.ty.shape));
                let at = match one {
                    Some(_) => Vec::new(),
                    None => self.clamped_starts(mem, starts, &o.ty.shape, &u.ty.shape),
                };
                if self.in_place[dst] {
                    std::mem::swap(&mut out, &mut mem[*src]);
                } else {
                    out.copy_from_slice(&mem[*src]);
                }
                let whole = bytes_mut(&mut out, o.bytes);
                let from = bytes(&mem[*update], u.bytes);
                match one {
                    Some(at) => whole[at * size..][..size].copy_from_slice(&from[..size]),
                    None => window_rows(&o.ty.shape, &at, &u.ty.shape, size, |w, d, n| {
                        whole[w..w + n].copy_from_slice(&from[d..d + n]);
                    }),
                }
            }
            Inst::ScatterOne(sc) => {
                if self.in_place[dst] {
                    std::mem::swap(&mut out, &mut mem[sc.operand]);
                } else {
                    out.copy_from_slice(&mem[sc.operand]);
                }
                let whole = bytes_mut(&mut out, o.bytes);
                let et = self.slots[sc.index].et;
                let mut offset = Some(0usize);
                for (k, &(extent, stride)) in sc.targets.iter().enumerate() {
                    let p = read_int(&mem[sc.index], et, k);
                    offset = offset
                        .filter(|_| (0..extent).contains(&p))
                        .map(|o| o + p as usize * stride);
                }
                if let Some(offset) = offset {
                    let size = o.bytes / o.len.max(1);
                    let update = &bytes(&mem[sc.update], size)[..size];
                    let dst = &mut whole[offset * size..][..size];
                    match &sc.combine {
                        None => dst.copy_from_slice(update),
                        Some(kind) => {
                            // Slot elements are at most 8 bytes.
                            let mut old = [0u8; 8];
                            old[..size].copy_from_slice(dst);
                            zip_bytes(o.et, kind, dst, &old[..size], update);
                        }
                    }
                }
            }
            Inst::Convert(src, _) => {
                // The op-by-op conversion (loops that run it often are generated code).
                let s = &self.slots[*src];
                let from = Literal::new(s.ty.clone(), bytes(&mem[*src], s.bytes).to_vec());
                let to = from.and_then(|lit| super::convert::convert_literal(&lit, o.et));
                if let Ok(to) = to {
                    bytes_mut(&mut out, o.bytes).copy_from_slice(&to.data);
                }
            }
            Inst::Fill(src, _) => {
                let s = &self.slots[*src];
                let from = bytes(&mem[*src], s.bytes);
                let out = bytes_mut(&mut out, o.bytes);
                if s.len == o.len {
                    out.copy_from_slice(from);
                } else {
                    for chunk in out.chunks_exact_mut(s.bytes.max(1)) {
                        chunk.copy_from_slice(from);
                    }
                }
            }
        }
        mem[dst] = out;
    }
}
