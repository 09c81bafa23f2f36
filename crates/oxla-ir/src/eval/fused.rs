//! Loop fusion of elementwise f32 and 32-bit integer work.
//!
//! [`find_groups`] picks, in one block, runs of elementwise ops whose results share one
//! static shape (f32, s32 and u32 values and the `i1` masks compares make), plus the
//! `broadcast_in_dim`s that feed them. Every value lives in 32-bit lanes: integers are
//! held by their bits in the f32 registers and each integer instruction reads them as
//! `i32` or `u32` (so a `bitcast_convert` between u32 and f32, or a `convert` between s32
//! and u32, moves no data), and masks are 0.0/1.0. [`FusedKernel::run`] then evaluates a group in one pass over tiles of
//! [`TILE`] elements: every input is read in place (a broadcast through strides, never
//! materialised), intermediates live in tile-sized registers, and only the values used
//! outside the group are written out, by the instruction computing them when no later one
//! reads them. A broadcast that gives a whole tile one value (a per-row value along a row)
//! stays one value: arithmetic takes it as a scalar operand, and instructions reading only
//! such values compute one element. Large groups split their tiles over threads.
//!
//! Each tile op calls the same scalar kernels as the op-by-op path (`Float::map_common`,
//! `fmax`, `fmin`, `int_zip`, `int_map_into`, the conversions' element functions, ...),
//! so fused results are bit-identical to unfused ones. Integer instructions take a
//! one-value operand (a broadcast scalar, say) as a one-element slice, as the op-by-op
//! loops do, instead of filling a tile with it.
//!
//! A kernel whose instructions and input patterns generated code covers runs as that code
//! instead of tile by tile (see [`super::tile_code`]), with the same bits.

use super::context::{extents, strides, OpCx};
use super::elementwise::{
    fmax, fmin, int_map_into, int_zip, max_op, min_op, ordering_matches, Blend, Float,
};
use super::threads;
use super::tile_code::KernelCode;
use super::typed;
use crate::attrs::{ComparisonDirection, ComparisonType};
use crate::{
    Attribute, Block, ElementType, Function, IrError, Literal, Op, OpKind, TensorType, Type,
    ValueId,
};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::collections::HashMap;

/// Elements per tile: the registers of a group stay in the first two cache levels.
pub(crate) const TILE: usize = 1024;

/// Elements the tile loops compute where generated code stopped, before it goes on.
const STOPPED_BLOCK: usize = 256;

/// Groups over fewer elements run op by op: scalar bodies of reductions and sorts would
/// pay the kernel's setup per element.
const MIN_ELEMENTS: usize = 8;

/// Groups over at least this many elements split their tiles over threads.
const PARALLEL_ELEMENTS: usize = 1 << 16;

/// What a fusible op computes on registers.
#[derive(Clone, Debug)]
pub(crate) enum Member {
    Unary(OpKind),
    Binary(OpKind),
    Compare {
        dir: ComparisonDirection,
        total: bool,
    },
    Select,
    Clamp,
    Not,
    /// `is_finite` of an f32 operand, as a mask.
    IsFinite,
    And,
    Or,
    Xor,
    /// A unary op on 32-bit integers (signed when the flag says so).
    IntUnary(OpKind, bool),
    /// A binary op on 32-bit integers (signed when the flag says so).
    IntBinary(OpKind, bool),
    /// A compare of 32-bit integers (signed when the flag says so).
    IntCompare {
        dir: ComparisonDirection,
        signed: bool,
    },
    /// A `convert` that changes the lanes' contents.
    Convert(Conversion),
    /// A splat `constant` of the group's shape (its one value, as lane bits or a 0.0/1.0
    /// mask): the kernel holds the value, so the constant is never materialised (JAX's
    /// decompositions of CHLO ops, such as `erf_inv`, fold their coefficients into such
    /// constants).
    Splat(f32),
    /// The result is the operand's bits (`convert` i1->f32, between s32 and u32 or to the
    /// same type, and `bitcast_convert` among f32, s32 and u32; masks are 0.0/1.0).
    Identity,
    /// `broadcast_in_dim` of a value: a strided load when the value comes from outside the
    /// group, the identity when it is a group value of the same shape.
    Broadcast {
        strides: Vec<usize>,
        identity: bool,
    },
}

/// A `convert` between lane types, computed as the op-by-op path converts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Conversion {
    /// `i1` (0.0/1.0) to s32 or u32: 0 or 1.
    MaskToInt,
    /// s32 or u32 to `i1`: whether the value is not 0.
    IntToMask,
    S32ToF32,
    U32ToF32,
    /// Truncation, saturating, NaN to 0.
    F32ToS32,
    /// Truncation, saturating, NaN to 0.
    F32ToU32,
}

/// Whether values of `et` live in a fused group's 32-bit lanes as they are (not masks).
fn is_lane_type(et: ElementType) -> bool {
    matches!(et, ElementType::F32 | ElementType::S32 | ElementType::U32)
}

/// How a `convert` from `from` to `to` joins a group, if it can.
fn conversion(from: ElementType, to: ElementType) -> Option<Member> {
    use ElementType::{Pred, F32, S32, U32};
    Some(match (from, to) {
        _ if from == to => Member::Identity,
        (Pred, F32) | (S32, U32) | (U32, S32) => Member::Identity,
        (Pred, S32 | U32) => Member::Convert(Conversion::MaskToInt),
        (S32 | U32, Pred) => Member::Convert(Conversion::IntToMask),
        (S32, F32) => Member::Convert(Conversion::S32ToF32),
        (U32, F32) => Member::Convert(Conversion::U32ToF32),
        (F32, S32) => Member::Convert(Conversion::F32ToS32),
        (F32, U32) => Member::Convert(Conversion::F32ToU32),
        _ => return None,
    })
}

/// Whether `kind` is a unary op the tile loops run on 32-bit integers.
fn is_int_unary(kind: &OpKind) -> bool {
    use OpKind as K;
    matches!(
        kind,
        K::Abs | K::Negate | K::Not | K::Sign | K::PopulationCount | K::CountLeadingZeros
    )
}

/// Whether `kind` is a binary op the tile loops run on 32-bit integers.
fn is_int_binary(kind: &OpKind) -> bool {
    use OpKind as K;
    matches!(
        kind,
        K::Add
            | K::Subtract
            | K::Multiply
            | K::Divide
            | K::Remainder
            | K::Maximum
            | K::Minimum
            | K::And
            | K::Or
            | K::Xor
            | K::ShiftLeft
            | K::ShiftRightLogical
            | K::ShiftRightArithmetic
    )
}

/// The static shape and element type of a tensor value.
pub(crate) fn tensor_of(func: &Function, id: ValueId) -> Option<&TensorType> {
    match func.values.get(id.index())? {
        Type::Tensor(t) if t.is_static() => Some(t),
        _ => None,
    }
}

/// How `op` joins a fused group, with the shape of its single result; `None` when it cannot.
pub(crate) fn classify(func: &Function, op: &Op) -> Option<(Vec<i64>, Member)> {
    use OpKind as K;
    let [result] = op.results.as_slice() else {
        return None;
    };
    if !op.regions.is_empty() {
        return None;
    }
    let out = tensor_of(func, *result)?;
    let shape = out.shape.clone();
    let et = out.element_type;
    if !is_lane_type(et) && et != ElementType::Pred {
        return None;
    }
    if op.kind == K::BroadcastInDim {
        let member = broadcast_member(func, op, &shape, et)?;
        return Some((shape, member));
    }
    if op.kind == K::Constant {
        return Some((shape, Member::Splat(splat_value(op, out)?)));
    }
    // Every other member's operands have the result's shape.
    let types: SmallVec<[ElementType; 3]> = op
        .operands
        .iter()
        .map(|&v| tensor_of(func, v).filter(|t| t.shape == shape))
        .map(|t| t.map(|t| t.element_type))
        .collect::<Option<_>>()?;
    use ElementType::{Pred, F32, S32, U32};
    let signed = et == S32;
    let member = match (&op.kind, types.as_slice()) {
        (K::Convert, &[from]) => conversion(from, et)?,
        (K::BitcastConvert, &[from]) if is_lane_type(from) && is_lane_type(et) => Member::Identity,
        (K::Compare, &[a, b]) if et == Pred && a == b => {
            let dir = match op.attr("comparison_direction") {
                Some(Attribute::ComparisonDirection(d)) => *d,
                _ => return None,
            };
            let total = matches!(
                op.attr("compare_type"),
                Some(Attribute::ComparisonType(ComparisonType::TotalOrder))
            );
            match a {
                F32 => Member::Compare { dir, total },
                // Masks order as their 0.0/1.0 values.
                Pred => Member::Compare { dir, total: false },
                S32 | U32 => Member::IntCompare {
                    dir,
                    signed: a == S32,
                },
                _ => return None,
            }
        }
        (K::Select, &[Pred, t, f]) if t == et && f == et => Member::Select,
        (K::Clamp, &[F32, F32, F32]) if et == F32 => Member::Clamp,
        (K::Not, &[Pred]) if et == Pred => Member::Not,
        (K::IsFinite, &[F32]) if et == Pred => Member::IsFinite,
        (K::And, &[Pred, Pred]) if et == Pred => Member::And,
        (K::Or, &[Pred, Pred]) if et == Pred => Member::Or,
        (K::Xor, &[Pred, Pred]) if et == Pred => Member::Xor,
        (kind, &[a]) if matches!(et, S32 | U32) && a == et && is_int_unary(kind) => {
            Member::IntUnary(kind.clone(), signed)
        }
        (kind, &[a, b]) if matches!(et, S32 | U32) && a == et && b == et && is_int_binary(kind) => {
            Member::IntBinary(kind.clone(), signed)
        }
        (
            K::Add | K::Subtract | K::Multiply | K::Divide | K::Maximum | K::Minimum | K::Power,
            &[F32, F32],
        ) if et == F32 => Member::Binary(op.kind.clone()),
        (kind, &[F32]) if et == F32 && f32::map_common(&[0.0], &mut [0.0], kind) => {
            Member::Unary(kind.clone())
        }
        _ => return None,
    };
    Some((shape, member))
}

/// The one value of a splat `constant` of type `ty` as its lane holds it (a mask as
/// 0.0/1.0); `None` for other constants.
fn splat_value(op: &Op, ty: &TensorType) -> Option<f32> {
    let Some(Attribute::Elements(e)) = op.attr("value") else {
        return None;
    };
    if !e.splat || e.ty != *ty || !op.operands.is_empty() {
        return None;
    }
    match (ty.element_type, e.data.as_ref()) {
        (et, &[a, b, c, d]) if is_lane_type(et) => Some(f32::from_le_bytes([a, b, c, d])),
        (ElementType::Pred, &[b]) => Some(f32::from(u8::from(b != 0))),
        _ => None,
    }
}

/// How a `broadcast_in_dim` of a value of element type `et` to `shape` joins a group: its
/// operand's stride per output dimension.
fn broadcast_member(func: &Function, op: &Op, shape: &[i64], et: ElementType) -> Option<Member> {
    let operand = tensor_of(func, *op.operands.first()?)?;
    if op.operands.len() != 1 || operand.element_type != et {
        return None;
    }
    let cx = OpCx { op, func };
    let dims = cx.i64s("broadcast_dimensions").ok()?;
    let dims = cx.dims("broadcast_dimensions", &dims, shape.len()).ok()?;
    let (src, dst) = (extents(&operand.shape), extents(shape));
    if dims.len() != src.len() {
        return None;
    }
    let src_strides = strides(&src);
    let mut out_strides = vec![0usize; dst.len()];
    for (i, &d) in dims.iter().enumerate() {
        if out_strides[d] != 0 || (src[i] != 1 && src[i] != dst[d]) {
            return None;
        }
        if src[i] == dst[d] && src[i] != 1 {
            out_strides[d] = src_strides[i];
        }
    }
    let identity = src == dst && dims.iter().enumerate().all(|(i, &d)| i == d);
    Some(Member::Broadcast {
        strides: out_strides,
        identity,
    })
}

/// Every value `op` reads, including from inside its regions.
pub(crate) fn collect_uses(op: &Op, out: &mut Vec<ValueId>) {
    out.extend_from_slice(&op.operands);
    for region in &op.regions {
        for block in &region.blocks {
            for inner in &block.ops {
                collect_uses(inner, out);
            }
        }
    }
}

/// The fused groups of one block.
pub(crate) struct Groups {
    /// Per op of the block: the group it belongs to.
    pub of_op: Vec<Option<usize>>,
    /// Per group: its kernel and the index of its last op, where it runs.
    pub kernels: Vec<(FusedKernel, usize)>,
}

/// Picks the fused groups of `block` (none unless `fuse`), leaving out the ops `taken`
/// marks (row groups hold them).
///
/// Ops join the open group of their result shape; a group closes when an op outside it
/// reads one of its values, so it can run at the place of its last op. Groups that would
/// not save work (a single op, or under [`MIN_ELEMENTS`] elements) are dropped.
pub(crate) fn find_groups(func: &Function, block: &Block, fuse: bool, taken: &[bool]) -> Groups {
    let n_ops = block.ops.len();
    if !fuse {
        return Groups {
            of_op: vec![None; n_ops],
            kernels: Vec::new(),
        };
    }
    let mut of_op: Vec<Option<usize>> = vec![None; n_ops];
    let mut members: Vec<Vec<(usize, Member)>> = Vec::new();
    let mut open: HashMap<Vec<i64>, usize> = HashMap::new();
    let mut is_open: Vec<bool> = Vec::new();
    let mut value_group: HashMap<ValueId, usize> = HashMap::new();
    let mut uses_of_op: Vec<Vec<ValueId>> = Vec::with_capacity(n_ops);
    let mut scalars: HashMap<ValueId, f32> = HashMap::new();
    for (i, op) in block.ops.iter().enumerate() {
        note_scalar_constant(func, op, &mut scalars);
        let mut uses = Vec::new();
        collect_uses(op, &mut uses);
        let cand = classify(func, op)
            .filter(|_| !taken.get(i).copied().unwrap_or(false))
            .filter(|(shape, _)| extents(shape).iter().product::<usize>() >= MIN_ELEMENTS);
        let mut target = cand
            .as_ref()
            .and_then(|(shape, _)| open.get(shape).copied());
        // Close the groups whose values this op reads without joining them.
        for v in &uses {
            let Some(&g) = value_group.get(v) else {
                continue;
            };
            if !is_open[g] {
                continue;
            }
            let joins = target == Some(g)
                && match &cand {
                    Some((_, Member::Broadcast { identity, .. })) => *identity,
                    Some(_) => true,
                    None => false,
                };
            if !joins {
                is_open[g] = false;
                open.retain(|_, &mut open_g| open_g != g);
                if target == Some(g) {
                    target = None;
                }
            }
        }
        if let Some((shape, member)) = cand {
            let g = target.unwrap_or_else(|| {
                members.push(Vec::new());
                is_open.push(true);
                open.insert(shape, members.len() - 1);
                members.len() - 1
            });
            members[g].push((i, member));
            of_op[i] = Some(g);
            value_group.insert(op.results[0], g);
        }
        uses_of_op.push(uses);
    }

    // Keep the groups that do real work, and build their kernels.
    let mut kernels = Vec::new();
    let mut group_index: Vec<Option<usize>> = vec![None; members.len()];
    for (g, list) in members.iter().enumerate() {
        let computes = list
            .iter()
            .filter(|(_, m)| {
                !matches!(
                    m,
                    Member::Identity | Member::Broadcast { .. } | Member::Splat(_)
                )
            })
            .count();
        if list.len() < 2 || computes == 0 {
            continue;
        }
        let in_group = |j: usize| of_op[j] == Some(g);
        let mut outputs = Vec::new();
        for &(i, _) in list {
            let v = block.ops[i].results[0];
            let used_outside = uses_of_op
                .iter()
                .enumerate()
                .any(|(j, uses)| !in_group(j) && uses.contains(&v));
            if used_outside {
                outputs.push(v);
            }
        }
        if outputs.is_empty() {
            continue;
        }
        let ops: Vec<(&Op, &Member)> = list.iter().map(|(i, m)| (&block.ops[*i], m)).collect();
        let last = list.last().map_or(0, |(i, _)| *i);
        if let Some(kernel) = FusedKernel::build(func, &ops, &outputs, &scalars) {
            group_index[g] = Some(kernels.len());
            kernels.push((kernel, last));
        }
    }
    let of_op = of_op
        .into_iter()
        .map(|g| g.and_then(|g| group_index[g]))
        .collect();
    Groups { of_op, kernels }
}

/// Notes the value of `op`'s result in `scalars` (as its lane bits, in an f32) when it is
/// a constant of a lane type with one value everywhere: a constant, or a same-type
/// `convert` or a `reshape` of one (JAX converts weakly typed Python scalars such as a
/// clip's limits or a divisor).
fn note_scalar_constant(func: &Function, op: &Op, scalars: &mut HashMap<ValueId, f32>) {
    let [result] = op.results.as_slice() else {
        return;
    };
    let Some(ty) = tensor_of(func, *result).filter(|t| is_lane_type(t.element_type)) else {
        return;
    };
    let value = match op.kind {
        OpKind::Constant => {
            let Some(Attribute::Elements(e)) = op.attr("value") else {
                return;
            };
            match (e.splat || ty.num_elements() == Some(1), e.data.as_ref()) {
                (true, &[a, b, c, d, ..]) if e.ty == *ty => f32::from_le_bytes([a, b, c, d]),
                _ => return,
            }
        }
        OpKind::Convert | OpKind::Reshape => {
            let same_type = op
                .operands
                .first()
                .and_then(|&v| tensor_of(func, v))
                .is_some_and(|t| t.element_type == ty.element_type);
            match op.operands.first().and_then(|v| scalars.get(v)) {
                Some(&v) if same_type => v,
                _ => return,
            }
        }
        _ => return,
    };
    scalars.insert(*result, value);
}

/// Per instruction of a kernel (virtual registers, each written once), the constant
/// operand of a float maximum or minimum, or the constant divisor of an integer division
/// or remainder (its bits in the f32): a splat constant of the group, or an input
/// broadcast from a scalar constant.
fn constant_bounds(
    insts: &[(Inst, usize)],
    inputs: &[Input],
    scalars: &HashMap<ValueId, f32>,
    splat_regs: &[usize],
    splat_values: &[f32],
) -> Vec<Option<(usize, f32)>> {
    let mut known: HashMap<usize, f32> = splat_regs
        .iter()
        .copied()
        .zip(splat_values.iter().copied())
        .collect();
    for input in inputs {
        if input.strides.iter().all(|&s| s == 0) {
            if let Some(&v) = scalars.get(&input.value) {
                known.insert(input.reg, v);
            }
        }
    }
    insts
        .iter()
        .map(|(inst, _)| match inst {
            Inst::Binary(OpKind::Maximum | OpKind::Minimum, a, b) => known
                .get(b)
                .map(|&v| (1, v))
                .or_else(|| known.get(a).map(|&v| (0, v))),
            Inst::IntBinary(OpKind::Divide | OpKind::Remainder, _, _, b) => {
                known.get(b).map(|&v| (1, v))
            }
            _ => None,
        })
        .collect()
}

/// Rewrites each integer remainder whose quotient the kernel computes earlier (JAX's
/// floor division computes both of the same operands) as `a - q * b` from that quotient,
/// which gives XLA's remainder in every case: a zero divisor's quotient is all ones, so
/// `q * 0` leaves `a`, and `MIN / -1 = MIN` leaves `MIN - MIN = 0`. Operands count as the
/// same when they are one register, the same outside value read the same way, or splat
/// constants with the same bits (JAX broadcasts the divisor once for each).
fn reuse_quotients(
    insts: &mut Vec<(Inst, usize)>,
    inputs: &[Input],
    splat_regs: &[usize],
    splat_values: &[f32],
    n_vregs: &mut usize,
) {
    let same = |x: usize, y: usize| {
        let read = |r: usize| inputs.iter().find(|i| i.reg == r);
        let splat = |r: usize| {
            let k = splat_regs.iter().position(|&s| s == r)?;
            Some(splat_values[k].to_bits())
        };
        x == y
            || matches!((read(x), read(y)), (Some(i), Some(j)) if i.value == j.value && i.strides == j.strides)
            || matches!((splat(x), splat(y)), (Some(a), Some(b)) if a == b)
    };
    let mut k = 0;
    while k < insts.len() {
        if let (Inst::IntBinary(OpKind::Remainder, signed, a, b), d) = &insts[k] {
            let (signed, a, b, d) = (*signed, *a, *b, *d);
            let quotient = insts[..k].iter().find_map(|(inst, q)| match inst {
                Inst::IntBinary(OpKind::Divide, s, x, y)
                    if *s == signed && same(*x, a) && same(*y, b) =>
                {
                    Some(*q)
                }
                _ => None,
            });
            if let Some(q) = quotient {
                let product = *n_vregs;
                *n_vregs += 1;
                insts[k] = (Inst::IntBinary(OpKind::Multiply, signed, q, b), product);
                insts.insert(
                    k + 1,
                    (Inst::IntBinary(OpKind::Subtract, signed, a, product), d),
                );
                k += 1;
            }
        }
        k += 1;
    }
}

/// Registers for `n` values by liveness: the `live_in` values first (in order), then each
/// step's destination, taken before the step's sources are released so it never aliases
/// them; a value is released after the last step reading it (outputs live to the end) and
/// its register reused. Returns each value's register (`None` for values no step or input
/// defines) and how many registers there are.
pub(crate) fn assign_registers<S: AsRef<[usize]>>(
    n: usize,
    live_in: &[usize],
    steps: &[(S, usize)],
    outputs: &[usize],
) -> (Vec<Option<usize>>, usize) {
    let end = steps.len();
    let mut last_read = vec![0usize; n];
    for (i, (sources, _)) in steps.iter().enumerate() {
        for &r in sources.as_ref() {
            last_read[r] = last_read[r].max(i);
        }
    }
    for &r in outputs {
        last_read[r] = end;
    }
    let mut phys: Vec<Option<usize>> = vec![None; n];
    let mut free: Vec<usize> = Vec::new();
    let mut count = 0usize;
    let mut alloc = |free: &mut Vec<usize>| {
        free.pop().unwrap_or_else(|| {
            count += 1;
            count - 1
        })
    };
    for &r in live_in {
        phys[r] = Some(alloc(&mut free));
    }
    for (i, (sources, dst)) in steps.iter().enumerate() {
        phys[*dst] = Some(alloc(&mut free));
        let mut released: Vec<usize> = sources
            .as_ref()
            .iter()
            .copied()
            .filter(|&r| last_read[r] == i)
            .collect();
        if last_read[*dst] <= i {
            released.push(*dst);
        }
        released.sort_unstable();
        released.dedup();
        free.extend(released.into_iter().filter_map(|r| phys[r]));
    }
    (phys, count)
}

/// One tile instruction over registers.
#[derive(Clone, Debug)]
pub(crate) enum Inst {
    Unary(OpKind, usize),
    Binary(OpKind, usize, usize),
    Compare(ComparisonDirection, bool, usize, usize),
    Select(usize, usize, usize),
    Clamp(usize, usize, usize),
    Not(usize),
    IsFinite(usize),
    And(usize, usize),
    Or(usize, usize),
    Xor(usize, usize),
    IntUnary(OpKind, bool, usize),
    IntBinary(OpKind, bool, usize, usize),
    IntCompare(ComparisonDirection, bool, usize, usize),
    Convert(Conversion, usize),
}

/// A value read from outside the group.
#[derive(Clone, Debug)]
struct Input {
    value: ValueId,
    ty: TensorType,
    /// Per output dimension, the input's stride in elements (0 where it broadcasts).
    strides: Vec<usize>,
    /// Whether the input is laid out like the output (32-bit lanes, no broadcast), so tiles
    /// read it in place.
    in_place: bool,
    reg: usize,
}

/// A group of elementwise ops compiled to tile instructions.
#[derive(Clone, Debug)]
pub(crate) struct FusedKernel {
    shape: Vec<usize>,
    inputs: Vec<Input>,
    /// Instructions with their destination register.
    insts: Vec<(Inst, usize)>,
    /// Values written out, with their register and element type.
    outputs: Vec<(ValueId, usize, ElementType)>,
    num_regs: usize,
    /// The first op's name and location, for errors.
    first_op: (String, crate::Location),
    /// How many ops of the block the kernel covers.
    num_ops: usize,
    /// The distinct input values, in the order `run` takes them.
    input_values: Vec<ValueId>,
    /// Per input: its index in `input_values`.
    input_slot: Vec<usize>,
    /// The splat constants the kernel holds: their registers and values (one-element
    /// slices, as generated code reads a one-value input).
    splat_regs: Vec<usize>,
    splat_values: Vec<f32>,
    /// Per instruction: for a maximum or minimum with an operand known to be one f32
    /// constant everywhere, that operand's position and value (generated code picks a
    /// shorter sequence for it).
    bounds: Vec<Option<(usize, f32)>>,
    /// All-zero strides, as generated code reads a splat constant.
    zero_strides: Vec<usize>,
    /// Per instruction: the output it may write straight into the caller's memory (an
    /// output of 32-bit lanes whose register no later instruction reads), skipping the
    /// register.
    direct: Vec<Option<usize>>,
    /// The kernel as generated code, where it has that form (see [`super::tile_code`]).
    code: Option<KernelCode>,
}

impl FusedKernel {
    /// The kernel of `op` alone (an elementwise op that joins groups), writing its result:
    /// for a slab program whose row sum reads that result, so the sum can run in the
    /// kernel's generated code. `None` for other ops.
    pub(crate) fn of_one_op(func: &Function, op: &Op) -> Option<Self> {
        let (_, member) = classify(func, op)?;
        if matches!(
            member,
            Member::Identity | Member::Broadcast { .. } | Member::Splat(_)
        ) {
            return None;
        }
        Self::build(func, &[(op, &member)], &op.results, &HashMap::new())
    }

    /// Compiles `ops` (in program order) to tile instructions writing `outputs`.
    fn build(
        func: &Function,
        ops: &[(&Op, &Member)],
        outputs: &[ValueId],
        scalars: &HashMap<ValueId, f32>,
    ) -> Option<Self> {
        let (first, _) = ops.first()?;
        let shape_i64 = tensor_of(func, first.results[0])?.shape.clone();
        let shape = extents(&shape_i64);
        let row_major = strides(&shape);
        // Virtual registers: one per value, then packed by liveness below.
        let mut vreg: HashMap<ValueId, usize> = HashMap::new();
        let mut inputs: Vec<Input> = Vec::new();
        let mut insts: Vec<(Inst, usize)> = Vec::new();
        let mut n_vregs = 0usize;
        let input_reg = |value: ValueId,
                         strides: Vec<usize>,
                         inputs: &mut Vec<Input>,
                         n_vregs: &mut usize|
         -> Option<usize> {
            if let Some(i) = inputs
                .iter()
                .find(|i| i.value == value && i.strides == strides)
            {
                return Some(i.reg);
            }
            let ty = tensor_of(func, value)?.clone();
            *n_vregs += 1;
            let in_place = is_lane_type(ty.element_type) && strides == row_major;
            inputs.push(Input {
                value,
                ty,
                strides,
                in_place,
                reg: *n_vregs - 1,
            });
            Some(*n_vregs - 1)
        };
        let (mut splat_regs, mut splat_values) = (Vec::new(), Vec::new());
        for (op, member) in ops {
            if let Member::Splat(v) = member {
                n_vregs += 1;
                vreg.insert(op.results[0], n_vregs - 1);
                splat_regs.push(n_vregs - 1);
                splat_values.push(*v);
                continue;
            }
            let mut src = Vec::with_capacity(op.operands.len());
            if !matches!(member, Member::Broadcast { .. }) {
                for &v in &op.operands {
                    let r = match vreg.get(&v) {
                        Some(&r) => r,
                        None => input_reg(v, row_major.clone(), &mut inputs, &mut n_vregs)?,
                    };
                    src.push(r);
                }
            }
            let result = op.results[0];
            let inst = match member {
                Member::Identity => {
                    vreg.insert(result, src[0]);
                    continue;
                }
                Member::Broadcast { strides, identity } => {
                    let v = op.operands[0];
                    let r = match vreg.get(&v) {
                        Some(&r) if *identity => r,
                        Some(_) => return None,
                        None => input_reg(v, strides.clone(), &mut inputs, &mut n_vregs)?,
                    };
                    vreg.insert(result, r);
                    continue;
                }
                Member::Unary(kind) => Inst::Unary(kind.clone(), src[0]),
                Member::Binary(kind) => Inst::Binary(kind.clone(), src[0], src[1]),
                Member::Compare { dir, total } => Inst::Compare(*dir, *total, src[0], src[1]),
                Member::Select => Inst::Select(src[0], src[1], src[2]),
                Member::Clamp => Inst::Clamp(src[0], src[1], src[2]),
                Member::Not => Inst::Not(src[0]),
                Member::IsFinite => Inst::IsFinite(src[0]),
                Member::And => Inst::And(src[0], src[1]),
                Member::Or => Inst::Or(src[0], src[1]),
                Member::Xor => Inst::Xor(src[0], src[1]),
                Member::IntUnary(kind, signed) => Inst::IntUnary(kind.clone(), *signed, src[0]),
                Member::IntBinary(kind, signed) => {
                    Inst::IntBinary(kind.clone(), *signed, src[0], src[1])
                }
                Member::IntCompare { dir, signed } => {
                    Inst::IntCompare(*dir, *signed, src[0], src[1])
                }
                Member::Convert(conversion) => Inst::Convert(*conversion, src[0]),
                Member::Splat(_) => continue,
            };
            n_vregs += 1;
            vreg.insert(result, n_vregs - 1);
            insts.push((inst, n_vregs - 1));
        }
        let outputs: Vec<(ValueId, usize, ElementType)> = outputs
            .iter()
            .map(|&v| Some((v, *vreg.get(&v)?, tensor_of(func, v)?.element_type)))
            .collect::<Option<_>>()?;
        reuse_quotients(
            &mut insts,
            &inputs,
            &splat_regs,
            &splat_values,
            &mut n_vregs,
        );
        let bounds = constant_bounds(&insts, &inputs, scalars, &splat_regs, &splat_values);
        let shape_rank = shape.len();
        let mut kernel = FusedKernel {
            shape,
            inputs,
            insts,
            outputs,
            num_regs: n_vregs,
            first_op: (first.kind.name().to_string(), first.location.clone()),
            num_ops: ops.len(),
            input_values: Vec::new(),
            input_slot: Vec::new(),
            splat_regs,
            splat_values,
            bounds,
            zero_strides: vec![0; shape_rank],
            direct: Vec::new(),
            code: None,
        };
        for input in &kernel.inputs {
            let slot = match kernel.input_values.iter().position(|&v| v == input.value) {
                Some(k) => k,
                None => {
                    kernel.input_values.push(input.value);
                    kernel.input_values.len() - 1
                }
            };
            kernel.input_slot.push(slot);
        }
        kernel.pack_registers();
        kernel.direct = kernel.direct_outputs();
        if let Some(inputs) = kernel.code_inputs() {
            let outputs: Vec<usize> = kernel.outputs.iter().map(|&(_, r, _)| r).collect();
            kernel.code = KernelCode::new(
                &kernel.shape,
                &inputs,
                &kernel.insts,
                &kernel.bounds,
                &outputs,
            );
        }
        Some(kernel)
    }

    /// Per instruction, the output it writes directly (see [`FusedKernel::direct`]): the
    /// last writer of the register of an output of 32-bit lanes, when no later instruction
    /// reads that register and no other output shares it.
    fn direct_outputs(&self) -> Vec<Option<usize>> {
        let mut direct = vec![None; self.insts.len()];
        for (k, &(_, r, et)) in self.outputs.iter().enumerate() {
            let shared = self.outputs.iter().filter(|&&(_, o, _)| o == r).count() > 1;
            let Some(i) = self.insts.iter().rposition(|&(_, d)| d == r) else {
                continue;
            };
            let read_later = self.insts[i + 1..]
                .iter()
                .any(|(inst, _)| inst.sources().contains(&r));
            if is_lane_type(et) && !shared && !read_later {
                direct[i] = Some(k);
            }
        }
        direct
    }

    /// Renumbers virtual registers so that a register is reused once its value is dead.
    fn pack_registers(&mut self) {
        let live_in: Vec<usize> = (self.inputs.iter().map(|i| i.reg))
            .chain(self.splat_regs.iter().copied())
            .collect();
        let steps: Vec<(SmallVec<[usize; 3]>, usize)> = self
            .insts
            .iter()
            .map(|(inst, dst)| (inst.sources(), *dst))
            .collect();
        let outputs: Vec<usize> = self.outputs.iter().map(|&(_, r, _)| r).collect();
        let (phys, count) = assign_registers(self.num_regs, &live_in, &steps, &outputs);
        let map = |r: usize| phys[r].unwrap_or(0);
        for input in &mut self.inputs {
            input.reg = map(input.reg);
        }
        for r in &mut self.splat_regs {
            *r = map(*r);
        }
        for (inst, dst) in &mut self.insts {
            inst.map_sources(map);
            *dst = map(*dst);
        }
        for (_, r, _) in &mut self.outputs {
            *r = map(*r);
        }
        self.num_regs = count;
    }

    /// The shape every value of the kernel has.
    pub(crate) fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Whether the kernel has a generated-code form.
    pub(crate) fn has_generated_code(&self) -> bool {
        self.code.is_some()
    }

    /// How many ops of the block the kernel covers.
    pub(crate) fn num_ops(&self) -> usize {
        self.num_ops
    }

    /// The values the kernel reads, in the order [`FusedKernel::run`] takes them.
    pub(crate) fn input_values(&self) -> &[ValueId] {
        &self.input_values
    }

    /// The values the kernel writes, in the order [`FusedKernel::run`] returns them.
    pub(crate) fn output_values(&self) -> impl Iterator<Item = ValueId> + '_ {
        self.outputs.iter().map(|&(v, _, _)| v)
    }

    fn error(&self, detail: String) -> IrError {
        IrError::InvalidOp {
            op: self.first_op.0.clone(),
            location: self.first_op.1.clone(),
            detail: format!("in a fused group: {detail}"),
        }
    }

    /// Runs the group on `args` (the values of [`FusedKernel::input_values`]).
    pub(crate) fn run(&self, args: &[&Literal]) -> Result<Vec<Literal>, IrError> {
        if args.len() != self.input_values.len() {
            return Err(self.error(format!(
                "expects {} inputs, got {}",
                self.input_values.len(),
                args.len()
            )));
        }
        for (input, &k) in self.inputs.iter().zip(&self.input_slot) {
            let lit = args[k];
            if lit.ty != input.ty || Some(lit.data.len()) != lit.ty.byte_size() {
                return Err(self.error(format!(
                    "input %{} is {}, expected {}",
                    input.value.0, lit.ty, input.ty
                )));
            }
        }
        // Generated code reads masks as 0.0/1.0 values: widened once, here, into buffers
        // of the thread's cache.
        let widen_masks = self.code.is_some() && super::tile_code::enabled();
        let widened: SmallVec<[Vec<u8>; 2]> = self
            .inputs
            .iter()
            .zip(&self.input_slot)
            .filter(|(input, _)| widen_masks && input.ty.element_type == ElementType::Pred)
            .map(|(_, &k)| widened_mask(&args[k].data))
            .collect();
        let mut widened_views = widened.iter();
        let mut sources: SmallVec<[Source<'_>; 8]> = SmallVec::with_capacity(self.inputs.len());
        for (input, &k) in self.inputs.iter().zip(&self.input_slot) {
            let lit = args[k];
            let data = match input.ty.element_type {
                et if is_lane_type(et) => Source::F32(typed::view_bytes::<f32>(&lit.data)),
                _ if widen_masks => match widened_views.next() {
                    Some(wide) => Source::F32(typed::view_bytes::<f32>(wide)),
                    None => Source::Pred(&lit.data),
                },
                _ => Source::Pred(&lit.data),
            };
            sources.push(data);
        }
        let n: usize = self.shape.iter().product();
        let mut outs: SmallVec<[Vec<u8>; 4]> = self
            .outputs
            .iter()
            // `run_range` writes every element.
            .map(|&(_, _, et)| super::pool::take_for_overwrite(n * et.byte_size()))
            .collect();
        let threads = if n >= PARALLEL_ELEMENTS {
            threads::count().min(n.div_ceil(PARALLEL_ELEMENTS / 4))
        } else {
            1
        };
        if threads <= 1 {
            let mut parts: SmallVec<[&mut [u8]; 4]> =
                outs.iter_mut().map(|o| o.as_mut_slice()).collect();
            self.run_range(&sources, 0, n, &mut parts);
        } else {
            // Whole tiles per thread; each thread writes its own part of every output.
            let per = n.div_ceil(threads).div_ceil(TILE) * TILE;
            let mut parts: Vec<Vec<&mut [u8]>> = (0..threads).map(|_| Vec::new()).collect();
            for (out, &(_, _, et)) in outs.iter_mut().zip(&self.outputs) {
                for (t, chunk) in out.chunks_mut(per * et.byte_size()).enumerate() {
                    parts[t].push(chunk);
                }
            }
            let sources = &sources;
            let jobs = parts
                .into_iter()
                .enumerate()
                .map(|(t, part)| (t * per, part))
                .take_while(|&(start, _)| start < n);
            threads::for_each(jobs, |(start, mut part)| {
                self.run_range(sources, start, (start + per).min(n), &mut part)
            });
        }
        drop(sources);
        widened.into_iter().for_each(super::pool::give);
        self.outputs
            .iter()
            .zip(outs)
            .map(|(&(_, _, et), data)| {
                let shape = self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>();
                Literal::new(TensorType::new(shape, et), data)
            })
            .collect()
    }

    /// Runs the group on the calling thread over f32 slices: `args` in
    /// [`FusedKernel::input_values`] order (an `i1` input as a 0.0/1.0 mask), `outs[k]` the
    /// bytes of output `k`, which must be f32. `false`, with nothing written, when an
    /// argument or output does not have the group's element count.
    pub(crate) fn run_f32(&self, args: &[&[f32]], outs: &mut [&mut [u8]]) -> bool {
        let n: usize = self.shape.iter().product();
        let Some(inputs) = self.input_slices(args) else {
            return false;
        };
        if outs.len() != self.outputs.len() {
            return false;
        }
        let sources: SmallVec<[Source<'_>; 8]> = inputs
            .into_iter()
            .map(|arg| Source::F32(Cow::Borrowed(arg)))
            .collect();
        let fits = |(&(_, _, et), out): (&(ValueId, usize, ElementType), &&mut [u8])| {
            et == ElementType::F32 && out.len() == n * 4
        };
        if !self.outputs.iter().zip(outs.iter()).all(fits) {
            return false;
        }
        if n > 0 {
            self.run_range(&sources, 0, n, outs);
        }
        true
    }

    /// The kernel's inputs as its generated code reads them (strides and register), then
    /// its splat constants (one value each, [`FusedKernel::splat_slices`]). The code
    /// computes on f32: `i1` inputs reach it widened to 0.0/1.0 ([`FusedKernel::run`]) and
    /// `i1` outputs leave it narrowed back ([`FusedKernel::run_generated`]).
    fn code_inputs(&self) -> Option<Vec<(&[usize], usize)>> {
        // Integers travel as their bits in the same lanes.
        let f32_or_mask = |et: ElementType| is_lane_type(et) || et == ElementType::Pred;
        let inputs = self.inputs.iter().all(|i| f32_or_mask(i.ty.element_type));
        let outputs = self.outputs.iter().all(|&(_, _, et)| f32_or_mask(et));
        (inputs && outputs).then(|| {
            let splats = self
                .splat_regs
                .iter()
                .map(|&r| (self.zero_strides.as_slice(), r));
            self.inputs
                .iter()
                .map(|i| (i.strides.as_slice(), i.reg))
                .chain(splats)
                .collect()
        })
    }

    /// The splat constants' values as one-element inputs of the generated code, in
    /// [`FusedKernel::code_inputs`] order.
    fn splat_slices(&self) -> impl Iterator<Item = &[f32]> {
        self.splat_values.iter().map(std::slice::from_ref)
    }

    /// Per input of the kernel, its value among `args` (the distinct input values, as
    /// [`FusedKernel::run_f32`] takes them); `None` when the count or a length is not the
    /// kernel's.
    fn input_slices<'a>(&self, args: &[&'a [f32]]) -> Option<SmallVec<[&'a [f32]; 8]>> {
        if args.len() != self.input_values.len() {
            return None;
        }
        self.inputs
            .iter()
            .zip(&self.input_slot)
            .map(|(input, &k)| {
                let arg = args[k];
                (Some(arg.len()) == input.ty.num_elements()).then_some(arg)
            })
            .collect()
    }

    /// The kernel as generated code that also sums output `value` along each row of the
    /// kernel's shape, in the evaluator's fold order; `keep` says whether the code still
    /// writes that output. Returns the code and the outputs it writes (indices into the
    /// kernel's outputs); `None` where there is no such code.
    pub(crate) fn row_sum_code(
        &self,
        value: ValueId,
        keep: bool,
    ) -> Option<(KernelCode, Vec<usize>)> {
        if !self.writes_only_f32() {
            return None;
        }
        let inputs = self.code_inputs()?;
        let sum = self.outputs.iter().find(|o| o.0 == value)?.1;
        let kept: Vec<usize> = (0..self.outputs.len())
            .filter(|&k| keep || self.outputs[k].0 != value)
            .collect();
        let outputs: Vec<usize> = kept.iter().map(|&k| self.outputs[k].1).collect();
        let code = KernelCode::with_row_sum(
            &self.shape,
            &inputs,
            &self.insts,
            &self.bounds,
            &outputs,
            sum,
        )?;
        Some((code, kept))
    }

    /// Runs the kernel through `code` (from [`FusedKernel::row_sum_code`], writing the
    /// outputs `kept`) on `args` (as [`FusedKernel::run_f32`] takes them): `outs` every
    /// output of the kernel (those not kept are left alone), `sums` the row totals, from
    /// `init`. `false`, with nothing written, when the code does not run.
    pub(crate) fn run_row_sum(
        &self,
        (code, kept): (&KernelCode, &[usize]),
        args: &[&[f32]],
        outs: &mut [&mut [f32]],
        (init, sums): (&[f32], &mut [f32]),
    ) -> bool {
        let n: usize = self.shape.iter().product();
        let Some(mut inputs) = self.input_slices(args) else {
            return false;
        };
        if outs.len() != self.outputs.len() {
            return false;
        }
        inputs.extend(self.splat_slices());
        inputs.push(init);
        let mut dsts: SmallVec<[&mut [f32]; 4]> = outs
            .iter_mut()
            .enumerate()
            .filter(|(k, _)| kept.contains(k))
            .map(|(_, o)| &mut **o)
            .collect();
        if dsts.iter().any(|o| o.len() != n) {
            return false;
        }
        code.run_with_row_sum(&inputs, &mut dsts, sums, 0, n)
    }

    /// Whether every value the kernel writes is f32.
    pub(crate) fn writes_only_f32(&self) -> bool {
        self.outputs
            .iter()
            .all(|&(_, _, et)| et == ElementType::F32)
    }

    /// Evaluates elements `start..end`; `outs[k]` holds output `k`'s elements from `start`.
    fn run_range(&self, sources: &[Source<'_>], start: usize, end: usize, outs: &mut [&mut [u8]]) {
        let mut at = start;
        while let Some(done) = self.run_generated(sources, at, end, outs, at - start) {
            at += done;
            if at == end {
                return;
            }
            // The code stopped at an element it does not cover (the sine of a huge argument,
            // say): the tile loops take a block from there, then the code goes on.
            let stop = (at + STOPPED_BLOCK).min(end);
            self.interpret_part(sources, (start, at, stop), outs);
            at = stop;
        }
        self.interpret_part(sources, (start, at, end), outs);
    }

    /// Elements `at..stop` on the tile loops, where `outs` hold the elements from `start`
    /// (all f32 when `at > start`: generated code computed the ones before).
    fn interpret_part(
        &self,
        sources: &[Source<'_>],
        (start, at, stop): (usize, usize, usize),
        outs: &mut [&mut [u8]],
    ) {
        if at == start {
            return self.interpret(sources, at, stop, outs);
        }
        let mut part: SmallVec<[&mut [u8]; 4]> = outs
            .iter_mut()
            .zip(&self.outputs)
            .map(|(o, &(_, _, et))| &mut o[(at - start) * et.byte_size()..])
            .collect();
        self.interpret(sources, at, stop, &mut part);
    }

    /// [`FusedKernel::run_range`] on the tile loops.
    fn interpret(&self, sources: &[Source<'_>], start: usize, end: usize, outs: &mut [&mut [u8]]) {
        if start >= end {
            return;
        }
        let need = TILE.min(end - start) * self.num_regs;
        REGISTERS.with(|cell| match cell.try_borrow_mut() {
            Ok(mut regs) => {
                if regs.len() < need {
                    regs.resize(need, 0.0);
                }
                self.run_tiles(sources, start, end, outs, &mut regs[..need]);
            }
            Err(_) => self.run_tiles(sources, start, end, outs, &mut vec![0.0; need]),
        });
    }

    /// [`FusedKernel::run_range`] through the kernel's generated code, from element
    /// `start` (which `outs` hold from element `skip` on): how many elements it computed,
    /// or `None`, with nothing written, when it has none (or it is off) or an output is
    /// not f32-aligned.
    fn run_generated(
        &self,
        sources: &[Source<'_>],
        start: usize,
        end: usize,
        outs: &mut [&mut [u8]],
        skip: usize,
    ) -> Option<usize> {
        let code = self.code.as_ref()?;
        let mut inputs: SmallVec<[&[f32]; 8]> = SmallVec::with_capacity(sources.len());
        for src in sources {
            match src {
                Source::F32(v) => inputs.push(v),
                Source::Pred(_) => return None,
            }
        }
        inputs.extend(self.splat_slices());
        // Mask outputs are computed as 0.0/1.0 into scratch values, then narrowed to bytes.
        let mut masks: SmallVec<[Vec<u8>; 2]> = self
            .outputs
            .iter()
            .filter(|&&(_, _, et)| et == ElementType::Pred)
            .map(|_| super::pool::take_for_overwrite((end - start) * 4))
            .collect();
        let done = {
            let mut scratch = masks.iter_mut();
            let mut dsts: SmallVec<[&mut [f32]; 4]> = SmallVec::with_capacity(outs.len());
            for (out, &(_, _, et)) in outs.iter_mut().zip(&self.outputs) {
                if et == ElementType::Pred {
                    let values = bytemuck::try_cast_slice_mut::<u8, f32>(scratch.next()?);
                    dsts.push(values.ok()?);
                } else {
                    let values = bytemuck::try_cast_slice_mut::<u8, f32>(out).ok()?;
                    dsts.push(values.get_mut(skip..)?);
                }
            }
            code.run(&inputs, &mut dsts, start, end)?
        };
        let mut scratch = masks.iter();
        for (out, &(_, _, et)) in outs.iter_mut().zip(&self.outputs) {
            if et == ElementType::Pred {
                let values = bytemuck::try_cast_slice::<u8, f32>(scratch.next()?).ok()?;
                narrow_mask(values.get(..done)?, out.get_mut(skip..skip + done)?);
            }
        }
        masks.into_iter().for_each(super::pool::give);
        Some(done)
    }

    /// [`FusedKernel::run_range`] with `regs` as the register file.
    fn run_tiles(
        &self,
        sources: &[Source<'_>],
        start: usize,
        end: usize,
        outs: &mut [&mut [u8]],
        regs: &mut [f32],
    ) {
        let width = TILE.min(end - start);
        // Register `r` is `regs[r * width..][..width]`.
        // Per register, what it currently holds: its own tile, an input read in place, or
        // one value for the whole tile (a per-row value broadcast along a row, say, or what
        // instructions computed from such values alone).
        let mut views: SmallVec<[View<'_>; 16]> = smallvec::smallvec![View::Tile; self.num_regs];
        let mut direct_done: SmallVec<[bool; 4]> = smallvec::smallvec![false; self.outputs.len()];
        let mut pos = start;
        // The tile's first element as a multi-index, computed once per tile for all inputs.
        let mut index: SmallVec<[usize; 8]> = smallvec::smallvec![0; self.shape.len()];
        while pos < end {
            let len = width.min(end - pos);
            let off = pos - start;
            unravel(&self.shape, pos, &mut index);
            for (input, src) in self.inputs.iter().zip(sources) {
                // A broadcast whose tile is one contiguous run of its source (a row vector
                // broadcast over rows, say) is read in place too.
                let run = match src {
                    Source::F32(_) if input.in_place => Some(pos),
                    Source::F32(_) => contiguous_run(&self.shape, &input.strides, &index, len),
                    Source::Pred(_) => None,
                };
                views[input.reg] = match (src, run) {
                    (Source::F32(v), Some(at)) => View::Slice(&v[at..at + len]),
                    _ => match splat_at(&self.shape, &input.strides, &index, len) {
                        Some(at) => View::Splat(src.get(at)),
                        None => {
                            load(
                                src,
                                &self.shape,
                                &input.strides,
                                pos,
                                &mut regs[input.reg * width..][..len],
                            );
                            View::Tile
                        }
                    },
                };
            }
            for (&r, &v) in self.splat_regs.iter().zip(&self.splat_values) {
                views[r] = View::Splat(v);
            }
            direct_done.fill(false);
            for (i, (inst, dst)) in self.insts.iter().enumerate() {
                let dst = *dst;
                let srcs = inst.sources();
                // Only one-value operands: the result is one value too.
                if srcs.iter().all(|&r| matches!(views[r], View::Splat(_))) {
                    let one: SmallVec<[[f32; 1]; 4]> = srcs
                        .iter()
                        .map(|&r| [views[r].splat().unwrap_or(0.0)])
                        .collect();
                    let read = |r: usize| match srcs.iter().position(|&s| s == r) {
                        Some(k) => &one[k][..],
                        None => &[][..],
                    };
                    let mut out = [0.0f32];
                    inst.exec(&read, &mut out);
                    views[dst] = View::Splat(out[0]);
                    continue;
                }
                // Arithmetic with one one-value operand runs with it as a scalar, integer
                // instructions read it as a one-element slice; any other instruction reads
                // one-value operands filled out to tiles.
                let scalar_op = scalar_operand(inst, &views);
                if scalar_op.is_none() && !inst.broadcasts_one_value() {
                    for &r in &srcs {
                        if let View::Splat(v) = views[r] {
                            let reg = &mut regs[r * width..][..len];
                            oxla_simd::vectorized(
                                #[inline(always)]
                                || fill(reg, v),
                            );
                            views[r] = View::Tile;
                        }
                    }
                }
                // The destination never aliases a source (see `pack_registers`).
                let (below, rest) = regs.split_at_mut(dst * width);
                let (reg_out, above) = rest.split_at_mut(width);
                let (below, above) = (&*below, &*above);
                let held = &views;
                let read = |r: usize| match &held[r] {
                    View::Slice(v) => v,
                    View::Splat(v) => std::slice::from_ref(v),
                    _ if r < dst => &below[r * width..][..len],
                    _ => &above[(r - dst - 1) * width..][..len],
                };
                // An output no later instruction reads goes straight to the caller's memory.
                let direct = self.direct[i].and_then(|k| {
                    let bytes = outs[k].get_mut(off * 4..(off + len) * 4)?;
                    Some((k, bytemuck::try_cast_slice_mut::<u8, f32>(bytes).ok()?))
                });
                let out = match direct {
                    Some((k, out)) => {
                        direct_done[k] = true;
                        out
                    }
                    None => &mut reg_out[..len],
                };
                match scalar_op {
                    Some((kind, a, s, scalar_first)) => {
                        binary_scalar(kind, read(a), s, scalar_first, out);
                    }
                    None => inst.exec(&read, out),
                }
                views[dst] = View::Tile;
            }
            for (k, &(_, r, et)) in self.outputs.iter().enumerate() {
                if direct_done[k] {
                    continue;
                }
                let vals = match views[r] {
                    View::Slice(v) => v,
                    View::Splat(v) => {
                        let reg = &mut regs[r * width..][..len];
                        oxla_simd::vectorized(
                            #[inline(always)]
                            || fill(reg, v),
                        );
                        views[r] = View::Tile;
                        &regs[r * width..][..len]
                    }
                    View::Tile => &regs[r * width..][..len],
                };
                store(vals, et, &mut outs[k][off * et.byte_size()..]);
            }
            pos += len;
        }
    }
}

thread_local! {
    /// Each thread's tile registers, reused by every kernel it runs: an instruction writes
    /// its register before any instruction reads it, so the buffer is never cleared.
    static REGISTERS: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What a register holds for the current tile.
#[derive(Clone, Copy, Debug)]
enum View<'a> {
    /// Its own elements.
    Tile,
    /// An input's elements, read in place.
    Slice(&'a [f32]),
    /// One value for every element.
    Splat(f32),
}

impl View<'_> {
    fn splat(self) -> Option<f32> {
        match self {
            View::Splat(v) => Some(v),
            _ => None,
        }
    }
}

/// For an arithmetic instruction with exactly one one-value operand: its kind, the other
/// operand's register, the value, and whether the value is the first operand.
fn scalar_operand(inst: &Inst, views: &[View<'_>]) -> Option<(BinaryKind, usize, f32, bool)> {
    let Inst::Binary(kind, a, b) = inst else {
        return None;
    };
    let kind = BinaryKind::of(kind)?;
    match (views[*a].splat(), views[*b].splat()) {
        (Some(s), None) => Some((kind, *b, s, true)),
        (None, Some(s)) => Some((kind, *a, s, false)),
        _ => None,
    }
}

/// The binary ops [`binary_scalar`] runs with a scalar operand.
#[derive(Clone, Copy, Debug)]
enum BinaryKind {
    Add,
    Subtract,
    Multiply,
    Divide,
    Maximum,
    Minimum,
}

impl BinaryKind {
    fn of(kind: &OpKind) -> Option<BinaryKind> {
        Some(match kind {
            OpKind::Add => BinaryKind::Add,
            OpKind::Subtract => BinaryKind::Subtract,
            OpKind::Multiply => BinaryKind::Multiply,
            OpKind::Divide => BinaryKind::Divide,
            OpKind::Maximum => BinaryKind::Maximum,
            OpKind::Minimum => BinaryKind::Minimum,
            _ => return None,
        })
    }
}

/// `out = kind(s, a)` when `scalar_first`, else `kind(a, s)`: the same scalar arithmetic as
/// [`Inst::exec`], with one operand held in a register instead of a tile.
fn binary_scalar(kind: BinaryKind, a: &[f32], s: f32, scalar_first: bool, out: &mut [f32]) {
    use BinaryKind as B;
    match (kind, scalar_first) {
        (B::Add, true) => oxla_simd::map(a, out, |x| s + x),
        (B::Add, false) => oxla_simd::map(a, out, |x| x + s),
        (B::Subtract, true) => oxla_simd::map(a, out, |x| s - x),
        (B::Subtract, false) => oxla_simd::map(a, out, |x| x - s),
        (B::Multiply, true) => oxla_simd::map(a, out, |x| s * x),
        (B::Multiply, false) => oxla_simd::map(a, out, |x| x * s),
        (B::Divide, true) => oxla_simd::map(a, out, |x| s / x),
        (B::Divide, false) => oxla_simd::map(a, out, |x| x / s),
        (B::Maximum, true) => oxla_simd::map(a, out, |x| max_op(s, x)),
        (B::Maximum, false) => oxla_simd::map(a, out, |x| max_op(x, s)),
        (B::Minimum, true) => oxla_simd::map(a, out, |x| min_op(s, x)),
        (B::Minimum, false) => oxla_simd::map(a, out, |x| min_op(x, s)),
    }
}

/// Where the single source element of a tile's elements lies, when they all read one (a
/// per-row value broadcast along a row, or a broadcast scalar); `index` is the tile's
/// first element as a multi-index.
fn splat_at(shape: &[usize], strides: &[usize], index: &[usize], len: usize) -> Option<usize> {
    if strides.iter().all(|&s| s == 0) {
        return Some(0);
    }
    offset_in_row(shape, strides, index, len, 0)
}

impl Inst {
    pub(crate) fn sources(&self) -> SmallVec<[usize; 3]> {
        match *self {
            Inst::Unary(_, a)
            | Inst::Not(a)
            | Inst::IsFinite(a)
            | Inst::IntUnary(_, _, a)
            | Inst::Convert(_, a) => smallvec::smallvec![a],
            Inst::Binary(_, a, b)
            | Inst::Compare(_, _, a, b)
            | Inst::And(a, b)
            | Inst::Or(a, b)
            | Inst::Xor(a, b)
            | Inst::IntBinary(_, _, a, b)
            | Inst::IntCompare(_, _, a, b) => smallvec::smallvec![a, b],
            Inst::Select(a, b, c) | Inst::Clamp(a, b, c) => smallvec::smallvec![a, b, c],
        }
    }

    /// Whether the instruction reads a one-value operand as a one-element slice (the
    /// integer loops broadcast it, as the op-by-op path's do) rather than a filled tile.
    fn broadcasts_one_value(&self) -> bool {
        matches!(self, Inst::IntBinary(..) | Inst::IntCompare(..))
    }

    pub(crate) fn map_sources(&mut self, f: impl Fn(usize) -> usize) {
        match self {
            Inst::Unary(_, a)
            | Inst::Not(a)
            | Inst::IsFinite(a)
            | Inst::IntUnary(_, _, a)
            | Inst::Convert(_, a) => *a = f(*a),
            Inst::Binary(_, a, b)
            | Inst::Compare(_, _, a, b)
            | Inst::And(a, b)
            | Inst::Or(a, b)
            | Inst::Xor(a, b)
            | Inst::IntBinary(_, _, a, b)
            | Inst::IntCompare(_, _, a, b) => {
                *a = f(*a);
                *b = f(*b);
            }
            Inst::Select(a, b, c) | Inst::Clamp(a, b, c) => {
                *a = f(*a);
                *b = f(*b);
                *c = f(*c);
            }
        }
    }

    /// Computes one tile into `out` from the registers `r` reads (tiles of `out.len()`
    /// elements; an integer instruction's operand may be one element, which broadcasts).
    pub(crate) fn exec<'r>(&self, r: &dyn Fn(usize) -> &'r [f32], out: &mut [f32]) {
        use OpKind as K;
        let mask = |b: bool| if b { 1.0 } else { 0.0 };
        match self {
            Inst::Unary(kind, a) => {
                f32::map_common(r(*a), out, kind);
            }
            Inst::Binary(kind, a, b) => {
                let (a, b) = (r(*a), r(*b));
                match kind {
                    K::Add => zip(out, a, b, |x, y| x + y),
                    K::Subtract => zip(out, a, b, |x, y| x - y),
                    K::Multiply => zip(out, a, b, |x, y| x * y),
                    K::Divide => zip(out, a, b, |x, y| x / y),
                    K::Maximum => zip(out, a, b, max_op),
                    K::Minimum => zip(out, a, b, min_op),
                    _ => zip(out, a, b, f32::powf),
                }
            }
            Inst::Compare(dir, total, a, b) => {
                let (a, b) = (r(*a), r(*b));
                use ComparisonDirection as D;
                match (dir, total) {
                    (_, true) => zip(out, a, b, |x, y| {
                        mask(ordering_matches(*dir, Some(Float::total_cmp(&x, &y))))
                    }),
                    // IEEE comparisons: false with a NaN, except `!=`.
                    (D::Eq, false) => zip(out, a, b, |x, y| mask(x == y)),
                    (D::Ne, false) => zip(out, a, b, |x, y| mask(x != y)),
                    (D::Lt, false) => zip(out, a, b, |x, y| mask(x < y)),
                    (D::Le, false) => zip(out, a, b, |x, y| mask(x <= y)),
                    (D::Gt, false) => zip(out, a, b, |x, y| mask(x > y)),
                    (D::Ge, false) => zip(out, a, b, |x, y| mask(x >= y)),
                }
            }
            // Three-operand loops as selects without branches, on the widest vectors: a
            // branch per element mispredicts on masks such as `x > 0` of random data.
            Inst::Select(p, t, f) => {
                let (p, t, f) = (r(*p), r(*t), r(*f));
                oxla_simd::vectorized(
                    #[inline(always)]
                    || {
                        for (((o, &p), &t), &f) in out.iter_mut().zip(p).zip(t).zip(f) {
                            let bits = u32::blend(p != 0.0, t.to_bits(), f.to_bits());
                            *o = f32::from_bits(bits);
                        }
                    },
                );
            }
            Inst::Clamp(lo, x, hi) => {
                let (lo, x, hi) = (r(*lo), r(*x), r(*hi));
                oxla_simd::vectorized(
                    #[inline(always)]
                    || {
                        for (((o, &lo), &x), &hi) in out.iter_mut().zip(lo).zip(x).zip(hi) {
                            *o = fmin(fmax(x, lo), hi);
                        }
                    },
                );
            }
            Inst::Not(a) => oxla_simd::map(r(*a), out, |x| mask(x == 0.0)),
            Inst::IsFinite(a) => oxla_simd::map(r(*a), out, |x| mask(x.is_finite())),
            Inst::And(a, b) => zip(out, r(*a), r(*b), |x, y| mask(x != 0.0 && y != 0.0)),
            Inst::Or(a, b) => zip(out, r(*a), r(*b), |x, y| mask(x != 0.0 || y != 0.0)),
            Inst::Xor(a, b) => zip(out, r(*a), r(*b), |x, y| mask((x != 0.0) != (y != 0.0))),
            Inst::IntUnary(kind, signed, a) => {
                let a = r(*a);
                if *signed {
                    int_map_into::<i32>(kind, lanes(a), lanes_mut(out));
                } else {
                    int_map_into::<u32>(kind, lanes(a), lanes_mut(out));
                }
            }
            Inst::IntBinary(kind, signed, a, b) => {
                let (a, b) = (r(*a), r(*b));
                if *signed {
                    int_zip::<i32>(kind, lanes_mut(out), lanes(a), lanes(b));
                } else {
                    int_zip::<u32>(kind, lanes_mut(out), lanes(a), lanes(b));
                }
            }
            Inst::IntCompare(dir, signed, a, b) => {
                let (a, b) = (r(*a), r(*b));
                if *signed {
                    compare_ints::<i32>(*dir, lanes(a), lanes(b), out);
                } else {
                    compare_ints::<u32>(*dir, lanes(a), lanes(b), out);
                }
            }
            Inst::Convert(conversion, a) => convert_lanes(*conversion, r(*a), out),
        }
    }
}

/// A register's lanes as integers of `T` (bits reinterpreted).
fn lanes<T: bytemuck::Pod>(v: &[f32]) -> &[T] {
    bytemuck::cast_slice(v)
}

/// [`lanes`] for writing.
fn lanes_mut<T: bytemuck::Pod>(v: &mut [f32]) -> &mut [T] {
    bytemuck::cast_slice_mut(v)
}

/// `out[i] = a[i] dir b[i]` as 0.0/1.0 masks under the integers' order, where an operand of
/// one element broadcasts (the op-by-op path compares the same way into bytes).
fn compare_ints<T: Copy + PartialOrd>(dir: ComparisonDirection, a: &[T], b: &[T], out: &mut [f32]) {
    use ComparisonDirection as D;
    let n = out.len();
    let mask = |b: bool| if b { 1.0f32 } else { 0.0 };
    macro_rules! each {
        ($op:tt) => {
            match (a, b) {
                (&[x], _) if b.len() == n => oxla_simd::map(b, out, |y| mask(x $op y)),
                (_, &[y]) if a.len() == n => oxla_simd::map(a, out, |x| mask(x $op y)),
                _ => oxla_simd::zip(a, b, out, |x, y| mask(x $op y)),
            }
        };
    }
    match dir {
        D::Eq => each!(==),
        D::Ne => each!(!=),
        D::Lt => each!(<),
        D::Le => each!(<=),
        D::Gt => each!(>),
        D::Ge => each!(>=),
    }
}

/// `out = conversion(a)` on 32-bit lanes, with the element functions of the op-by-op
/// conversions (`convert::convert_fast` and the general path agree on each).
fn convert_lanes(conversion: Conversion, a: &[f32], out: &mut [f32]) {
    use Conversion as C;
    match conversion {
        C::MaskToInt => oxla_simd::map(a, lanes_mut::<u32>(out), |x| u32::from(x != 0.0)),
        C::IntToMask => oxla_simd::map(lanes::<u32>(a), out, |x| f32::from(u8::from(x != 0))),
        C::S32ToF32 => oxla_simd::map(lanes::<i32>(a), out, |x| x as f32),
        C::U32ToF32 => oxla_simd::map(lanes::<u32>(a), out, |x| x as f32),
        C::F32ToS32 => oxla_simd::map(a, lanes_mut::<i32>(out), oxla_simd::f32_to_i32),
        C::F32ToU32 => oxla_simd::map(a, lanes_mut::<u32>(out), super::convert::f32_to_u32),
    }
}

fn zip(out: &mut [f32], a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) {
    oxla_simd::zip(a, b, out, f);
}

/// An input's elements: f32 values, or `i1` bytes read as 0.0/1.0.
pub(crate) enum Source<'a> {
    F32(Cow<'a, [f32]>),
    Pred(&'a [u8]),
}

impl Source<'_> {
    fn get(&self, i: usize) -> f32 {
        match self {
            Source::F32(v) => v[i],
            Source::Pred(b) => f32::from(u8::from(b[i] != 0)),
        }
    }

    /// Copies `dst.len()` elements starting at `at`, `step` apart.
    fn copy(&self, at: usize, step: usize, dst: &mut [f32]) {
        match (self, step) {
            (Source::F32(v), 1) => dst.copy_from_slice(&v[at..at + dst.len()]),
            (Source::Pred(b), 1) => widen_mask_into(&b[at..at + dst.len()], dst),
            _ => {
                for (k, d) in dst.iter_mut().enumerate() {
                    *d = self.get(at + k * step);
                }
            }
        }
    }
}

/// `i1` bytes as 0.0/1.0 (a loop the compiler vectorizes).
#[inline(always)]
fn widen(bytes: &[u8], dst: &mut [f32]) {
    for (d, &b) in dst.iter_mut().zip(bytes) {
        *d = f32::from(u8::from(b != 0));
    }
}

/// `i1` bytes as 0.0/1.0 f32 values (native bytes, 4 per element) in a buffer of the
/// thread's cache, for code that computes on masks as floats; give it back when done.
pub(crate) fn widened_mask(bytes: &[u8]) -> Vec<u8> {
    let mut wide = super::pool::take_for_overwrite(bytes.len() * 4);
    match bytemuck::try_cast_slice_mut::<u8, f32>(&mut wide) {
        Ok(values) => widen_mask_into(bytes, values),
        Err(_) => {
            for (o, &b) in wide.chunks_exact_mut(4).zip(bytes) {
                o.copy_from_slice(&f32::from(u8::from(b != 0)).to_ne_bytes());
            }
        }
    }
    wide
}

/// `i1` bytes as 0.0/1.0 f32 values.
pub(crate) fn widen_mask_into(bytes: &[u8], dst: &mut [f32]) {
    oxla_simd::vectorized(
        #[inline(always)]
        || widen(bytes, dst),
    );
}

/// 0.0/1.0 masks as `i1` bytes.
pub(crate) fn narrow_mask(values: &[f32], dst: &mut [u8]) {
    oxla_simd::vectorized(
        #[inline(always)]
        || {
            for (d, &v) in dst.iter_mut().zip(values) {
                *d = u8::from(v != 0.0);
            }
        },
    );
}

/// Where a tile's elements start in a source whose stride along output dimension `d` is
/// `strides[d]`, when they lie in one row of the last dimension and that dimension has
/// stride 1 (so they are contiguous there); `index` is the tile's first element as a
/// multi-index.
fn contiguous_run(
    shape: &[usize],
    strides: &[usize],
    index: &[usize],
    len: usize,
) -> Option<usize> {
    offset_in_row(shape, strides, index, len, 1)
}

/// Where the tile starting at multi-index `index` starts in a source of strides `strides`,
/// when its `len` elements lie in one row of the last dimension and the source's stride
/// along that dimension is `step`.
fn offset_in_row(
    shape: &[usize],
    strides: &[usize],
    index: &[usize],
    len: usize,
    step: usize,
) -> Option<usize> {
    let (&inner, &last, &at_last) = (shape.last()?, strides.last()?, index.last()?);
    if last != step || at_last + len > inner {
        return None;
    }
    Some(index.iter().zip(strides).map(|(&i, &s)| i * s).sum())
}

/// Writes the multi-index of element `pos` of `shape` (row-major) into `index`.
fn unravel(shape: &[usize], mut pos: usize, index: &mut [usize]) {
    for (i, &extent) in index.iter_mut().zip(shape).rev() {
        *i = pos % extent.max(1);
        pos /= extent.max(1);
    }
}

/// Loads elements `start..start + dst.len()` of the output index space from `src`, whose
/// stride along output dimension `d` is `strides[d]`.
pub(crate) fn load(
    src: &Source<'_>,
    shape: &[usize],
    strides: &[usize],
    start: usize,
    dst: &mut [f32],
) {
    let Some(last) = shape.len().checked_sub(1) else {
        dst.fill(src.get(0));
        return;
    };
    if strides.iter().all(|&s| s == 0) {
        dst.fill(src.get(0));
        return;
    }
    let mut idx: SmallVec<[usize; 8]> = smallvec::smallvec![0; shape.len()];
    let mut rem = start;
    for d in (0..shape.len()).rev() {
        idx[d] = rem % shape[d];
        rem /= shape[d];
    }
    let inner = shape[last];
    let mut filled = 0;
    while filled < dst.len() {
        let base: usize = (0..last).map(|d| idx[d] * strides[d]).sum();
        let run = (inner - idx[last]).min(dst.len() - filled);
        let seg = &mut dst[filled..filled + run];
        if strides[last] == 0 {
            // A per-row value broadcast along the row fills a whole tile: use wide stores.
            let v = src.get(base);
            oxla_simd::vectorized(
                #[inline(always)]
                || fill(seg, v),
            );
        } else {
            src.copy(base + idx[last] * strides[last], strides[last], seg);
        }
        filled += run;
        idx[last] += run;
        let mut d = last;
        while idx[d] == shape[d] && d > 0 {
            idx[d] = 0;
            d -= 1;
            idx[d] += 1;
        }
    }
}

#[inline(always)]
fn fill(dst: &mut [f32], v: f32) {
    for d in dst {
        *d = v;
    }
}

/// Writes `vals` as elements of type `et` to the start of `dst` (32-bit lanes by their
/// bits, masks as bytes).
fn store(vals: &[f32], et: ElementType, dst: &mut [u8]) {
    match et {
        _ if is_lane_type(et) => {
            let dst = &mut dst[..vals.len() * 4];
            match bytemuck::try_cast_slice_mut::<u8, f32>(dst) {
                Ok(d) if cfg!(target_endian = "little") => d.copy_from_slice(vals),
                _ => {
                    for (o, v) in dst.chunks_exact_mut(4).zip(vals) {
                        o.copy_from_slice(&v.to_le_bytes());
                    }
                }
            }
        }
        _ => {
            for (o, &v) in dst.iter_mut().zip(vals) {
                *o = u8::from(v != 0.0);
            }
        }
    }
}
