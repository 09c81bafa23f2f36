//! `reduce`: a fast path for bodies that are one add/mul/max/min/and/or/xor of the two
//! block arguments, and a general path that evaluates the body region.
//!
//! Both paths move the reduced dimensions outermost, so each reduction step combines one
//! contiguous row of `K` kept elements into `K` accumulators. The general path calls the
//! body once per step on whole rows ("lanes") when the body is purely elementwise, and once
//! per element pair otherwise.
//!
//! The (value, index) body JAX emits for `argmax`/`argmin` runs as a typed loop
//! ([`reduce_arg_extremum`]) that makes the general path's choices in its order, reading
//! rows in place when the reduced dimensions are the trailing ones.

use super::context::{extents, OpCx};
use super::element::{decode, encode, Array};
use super::elementwise::{self, complex_cmp, max_op, min_op, ComplexOps, Float, Int};
use super::shape::permute;
use super::threads;
use super::typed::{self, Plain};
use crate::{ElementType, IrError, Literal, OpKind, Region, TensorType, ValueId};
use std::cmp::Ordering;

/// The combiner of a body `return op(arg0, arg1)` (either argument order), if it is one
/// the fast path handles.
pub(crate) fn simple_body(region: &Region) -> Option<OpKind> {
    let [block] = region.blocks.as_slice() else {
        return None;
    };
    let [a0, a1] = block.arguments.as_slice() else {
        return None;
    };
    let [op, ret] = block.ops.as_slice() else {
        return None;
    };
    use OpKind as K;
    let combiner_ok = matches!(
        op.kind,
        K::Add | K::Multiply | K::Maximum | K::Minimum | K::And | K::Or | K::Xor
    );
    let args_ok = op.operands == [*a0, *a1] || op.operands == [*a1, *a0];
    let ret_ok = matches!(ret.kind, K::Return | K::FuncReturn)
        && op.results.len() == 1
        && ret.operands == op.results;
    (combiner_ok && args_ok && ret_ok && op.regions.is_empty()).then(|| op.kind.clone())
}

/// True when every op of the body is elementwise on values of the body itself, so the body
/// can run on rows of elements instead of single elements.
pub(crate) fn lane_safe(region: &Region) -> bool {
    let [block] = region.blocks.as_slice() else {
        return false;
    };
    let mut defined: Vec<ValueId> = block.arguments.clone();
    for op in &block.ops {
        use OpKind as K;
        let elementwise = elementwise::is_unary(&op.kind)
            || elementwise::is_binary(&op.kind)
            || matches!(
                op.kind,
                K::Compare | K::Select | K::Clamp | K::Convert | K::Constant | K::Return
            );
        if !elementwise || !op.regions.is_empty() {
            return false;
        }
        if !op.operands.iter().all(|v| defined.contains(v)) {
            return false;
        }
        defined.extend_from_slice(&op.results);
    }
    true
}

/// Validated reduction layout: permutation putting reduced dims first, and the sizes.
struct Layout {
    perm: Vec<usize>,
    kept_shape: Vec<i64>,
    n_reduced: usize,
    n_kept: usize,
}

fn layout(cx: OpCx<'_>, ty: &TensorType) -> Result<Layout, IrError> {
    let dims = cx.i64s("dimensions")?;
    let rank = ty.rank();
    let dims = cx.dims("dimensions", &dims, rank)?;
    let mut is_reduced = vec![false; rank];
    for &d in &dims {
        if is_reduced[d] {
            return Err(cx.invalid(format!("dimension {d} is reduced twice")));
        }
        is_reduced[d] = true;
    }
    let ext = extents(&ty.shape);
    let kept: Vec<usize> = (0..rank).filter(|&d| !is_reduced[d]).collect();
    let mut perm = dims.clone();
    perm.extend_from_slice(&kept);
    Ok(Layout {
        kept_shape: kept.iter().map(|&d| ty.shape[d]).collect(),
        n_reduced: dims.iter().map(|&d| ext[d]).product(),
        n_kept: kept.iter().map(|&d| ext[d]).product(),
        perm,
    })
}

fn fold<T: Copy>(x: &[T], init: T, k: usize, f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut acc = vec![init; k];
    if k == 0 {
        return acc;
    }
    for row in x.chunks_exact(k) {
        for (a, &v) in acc.iter_mut().zip(row) {
            *a = f(*a, v);
        }
    }
    acc
}

fn fold_int<T: Int>(kind: &OpKind, x: &[T], init: T, k: usize) -> Option<Vec<T>> {
    use OpKind as K;
    let f: fn(T, T) -> T = match kind {
        K::Add => T::wadd,
        K::Multiply => T::wmul,
        K::Maximum => std::cmp::max,
        K::Minimum => std::cmp::min,
        K::And => T::bit_and,
        K::Or => T::bit_or,
        K::Xor => T::bit_xor,
        _ => return None,
    };
    Some(fold(x, init, k, f))
}

fn fold_float<F: Float>(kind: &OpKind, x: &[F], init: F, k: usize) -> Option<Vec<F>> {
    use OpKind as K;
    Some(match kind {
        K::Add => fold(x, init, k, |a, b| a + b),
        K::Multiply => fold(x, init, k, |a, b| a * b),
        K::Maximum => fold(x, init, k, max_op),
        K::Minimum => fold(x, init, k, min_op),
        _ => return None,
    })
}

fn fold_complex<C: ComplexOps>(kind: &OpKind, x: &[C], init: C, k: usize) -> Option<Vec<C>> {
    use OpKind as K;
    let lex = |a: &C, b: &C| complex_cmp(&(a.re_(), a.im_()), &(b.re_(), b.im_()));
    Some(match kind {
        K::Add => fold(x, init, k, C::add_),
        K::Multiply => fold(x, init, k, C::mul_),
        K::Maximum => fold(x, init, k, |a, b| {
            if lex(&a, &b) == Some(Ordering::Less) {
                b
            } else {
                a
            }
        }),
        K::Minimum => fold(x, init, k, |a, b| {
            if lex(&b, &a) == Some(Ordering::Less) {
                b
            } else {
                a
            }
        }),
        _ => return None,
    })
}

fn fold_pred(kind: &OpKind, x: &[bool], init: bool, k: usize) -> Option<Vec<bool>> {
    use OpKind as K;
    Some(match kind {
        K::And | K::Multiply | K::Minimum => fold(x, init, k, |a, b| a & b),
        K::Or | K::Add | K::Maximum => fold(x, init, k, |a, b| a | b),
        K::Xor => fold(x, init, k, |a, b| a ^ b),
        _ => return None,
    })
}

/// Reduces one input with a simple combiner. Returns `None` when the element types do not
/// suit the fast path (the caller then uses the general path).
pub(crate) fn reduce_simple(
    cx: OpCx<'_>,
    kind: &OpKind,
    input: &Literal,
    init: &Literal,
) -> Result<Option<Literal>, IrError> {
    let et = input.ty.element_type;
    let out_ty = cx.result_tensor(0)?;
    if init.ty.element_type != et || out_ty.element_type != et || init.ty.num_elements() != Some(1)
    {
        return Ok(None);
    }
    let lay = layout(cx, &input.ty)?;
    if out_ty.shape != lay.kept_shape {
        return Err(cx.invalid(format!(
            "result type {out_ty} does not match the reduced shape {:?}",
            lay.kept_shape
        )));
    }
    use ElementType as E;
    let fast = match et {
        E::F32 => reduce_float_fast::<f32>(cx, kind, input, init, out_ty)?,
        E::F64 => reduce_float_fast::<f64>(cx, kind, input, init, out_ty)?,
        E::S8 => reduce_int_fast::<i8>(cx, kind, input, init, out_ty)?,
        E::S16 => reduce_int_fast::<i16>(cx, kind, input, init, out_ty)?,
        E::S32 => reduce_int_fast::<i32>(cx, kind, input, init, out_ty)?,
        E::S64 => reduce_int_fast::<i64>(cx, kind, input, init, out_ty)?,
        E::U8 => reduce_int_fast::<u8>(cx, kind, input, init, out_ty)?,
        E::U16 => reduce_int_fast::<u16>(cx, kind, input, init, out_ty)?,
        E::U32 => reduce_int_fast::<u32>(cx, kind, input, init, out_ty)?,
        E::U64 => reduce_int_fast::<u64>(cx, kind, input, init, out_ty)?,
        _ => None,
    };
    if let Some(res) = fast {
        return Ok(Some(res));
    }
    let permuted = permute(input, &lay.perm)?;
    let k = lay.n_kept;
    let out = match (decode(&permuted), decode(init)) {
        (Array::Pred(x), Array::Pred(i)) => fold_pred(kind, &x, i[0], k).map(Array::Pred),
        (Array::S8(x), Array::S8(i)) => fold_int(kind, &x, i[0], k).map(Array::S8),
        (Array::S16(x), Array::S16(i)) => fold_int(kind, &x, i[0], k).map(Array::S16),
        (Array::S32(x), Array::S32(i)) => fold_int(kind, &x, i[0], k).map(Array::S32),
        (Array::S64(x), Array::S64(i)) => fold_int(kind, &x, i[0], k).map(Array::S64),
        (Array::U8(x), Array::U8(i)) => fold_int(kind, &x, i[0], k).map(Array::U8),
        (Array::U16(x), Array::U16(i)) => fold_int(kind, &x, i[0], k).map(Array::U16),
        (Array::U32(x), Array::U32(i)) => fold_int(kind, &x, i[0], k).map(Array::U32),
        (Array::U64(x), Array::U64(i)) => fold_int(kind, &x, i[0], k).map(Array::U64),
        (Array::F32(x), Array::F32(i)) => fold_float(kind, &x, i[0], k).map(Array::F32),
        (Array::F64(x), Array::F64(i)) => fold_float(kind, &x, i[0], k).map(Array::F64),
        (Array::C64(x), Array::C64(i)) => fold_complex(kind, &x, i[0], k).map(Array::C64),
        (Array::C128(x), Array::C128(i)) => fold_complex(kind, &x, i[0], k).map(Array::C128),
        _ => None,
    };
    match out {
        Some(out) => encode(&out, out_ty.clone()).map(Some),
        None => Err(cx.invalid(format!(
            "{} is not defined on element type {et}",
            kind.name()
        ))),
    }
}

/// Folds a contiguous row with sixteen independent accumulators (one AVX-512 vector of f32),
/// combined at the end: only rounding (and which NaN survives) can differ from a strictly
/// sequential fold.
#[inline(always)]
fn fold_row<T: Copy>(x: &[T], init: T, f: impl Fn(T, T) -> T + Copy) -> T {
    const LANES: usize = 16;
    if x.len() < 2 * LANES {
        return x.iter().fold(init, |a, &v| f(a, v));
    }
    let mut acc = [x[0]; LANES];
    acc.copy_from_slice(&x[..LANES]);
    let mut chunks = x[LANES..].chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a = f(*a, v);
        }
    }
    let mut total = acc[0];
    for &a in &acc[1..] {
        total = f(total, a);
    }
    for &v in chunks.remainder() {
        total = f(total, v);
    }
    f(init, total)
}

/// A max/min [`fold_row`]: for f32, lane accumulators that skip NaNs (one vector max/min
/// each) while noting whether any NaN went by ([`Float::fold_lanes`]), a row holding a NaN
/// being folded again with `exact`; otherwise, and for the other types, the `fast` fold.
/// Either way the result is the value the `fast` fold gives, NaN payload aside.
#[inline(always)]
fn fold_row_extremum<F: Float>(
    x: &[F],
    init: F,
    op: oxla_simd::LaneFold,
    fast: impl Fn(F, F) -> F + Copy,
    exact: impl Fn(F, F) -> F + Copy,
) -> F {
    match F::fold_lanes(x, op) {
        Some((_, true)) => fold_row(x, init, exact),
        Some((lanes, false)) => combine_lanes(x, init, &lanes, fast),
        None => fold_row(x, init, fast),
    }
}

/// The sum of a row: f32 on [`Float::fold_lanes`]'s 32 accumulators, other types through
/// [`fold_row`]. Every f32 row sum takes this one order.
#[inline(always)]
fn fold_row_sum<F: Float>(x: &[F], init: F) -> F {
    match F::fold_lanes(x, oxla_simd::LaneFold::Add) {
        Some((lanes, _)) => combine_lanes(x, init, &lanes, |a, b| a + b),
        None => fold_row(x, init, |a, b| a + b),
    }
}

/// `f(init, (the lanes folded pairwise, then the elements of `x` past its last whole chunk
/// in order))`. Pairwise, the lanes combine as a few vector operations instead of a chain
/// of 31 dependent scalar ones per row (for a max or min, a chain as long as the row's own
/// vector fold).
#[inline(always)]
fn combine_lanes<F: Float>(
    x: &[F],
    init: F,
    lanes: &[F; oxla_simd::FOLD_LANES],
    f: impl Fn(F, F) -> F,
) -> F {
    let mut lanes = *lanes;
    let mut width = oxla_simd::FOLD_LANES / 2;
    while width > 0 {
        let (low, high) = lanes.split_at_mut(width);
        for (a, &b) in low.iter_mut().zip(&high[..width]) {
            *a = f(*a, b);
        }
        width /= 2;
    }
    let mut total = lanes[0];
    for &v in &x[x.len() - x.len() % oxla_simd::FOLD_LANES..] {
        total = f(total, v);
    }
    f(init, total)
}

/// Inputs of at least this many elements are folded on several threads.
const PARALLEL_ELEMENTS: usize = 1 << 18;

/// `out[o, i] = fold over r of x[o, r, i]` for an `[outer, reduced, inner]` array, on the
/// widest vectors the CPU has and, for large inputs, on several threads (split by `o`, or
/// by `i` when there is one `o`), folding with `f`, or with `row` each contiguous row when
/// the reduced elements are adjacent (`inner == 1`). Each output element's fold order is
/// the same however the work is split: it depends on `(reduced, inner)` alone (a large
/// `[reduced, inner]` block folds by blocks of rows, [`fold_row_blocks`], whatever `outer`
/// is), so a fold of some of the `o` gives the bits of a fold of all of them.
fn fold_block<T: Copy + Send + Sync>(
    x: &[T],
    out: &mut [T],
    init: T,
    (reduced, inner): (usize, usize),
    f: impl Fn(T, T) -> T + Copy + Send + Sync,
    row: impl Fn(&[T], T) -> T + Copy + Send + Sync,
) {
    if inner == 0 || out.is_empty() {
        return;
    }
    if inner > 1 && reduced >= 8 * ROW_BLOCKS && reduced * inner >= PARALLEL_ELEMENTS {
        let blocks = x
            .chunks_exact(reduced * inner)
            .zip(out.chunks_exact_mut(inner));
        for (xs, os) in blocks {
            fold_row_blocks(xs, os, init, inner, f);
        }
        return;
    }
    let outer = out.len() / inner;
    let threads = if x.len() >= PARALLEL_ELEMENTS {
        threads::count()
    } else {
        1
    };
    if threads > 1 && outer >= threads {
        let per = outer.div_ceil(threads);
        let parts = x
            .chunks(per * reduced * inner)
            .zip(out.chunks_mut(per * inner));
        threads::for_each(parts, |(xs, os)| {
            oxla_simd::vectorized(
                #[inline(always)]
                || fold_rows(xs, os, init, (reduced, inner), f, row),
            )
        });
    } else if threads > 1 && outer == 1 && inner >= 2 * threads {
        let per = inner.div_ceil(threads);
        threads::for_each(out.chunks_mut(per).enumerate(), |(t, os)| {
            oxla_simd::vectorized(
                #[inline(always)]
                || fold_columns(x, os, init, t * per, (reduced, inner), f),
            )
        });
    } else {
        oxla_simd::vectorized(
            #[inline(always)]
            || fold_rows(x, out, init, (reduced, inner), f, row),
        );
    }
}

/// How many contiguous blocks of rows [`fold_row_blocks`] folds apart.
const ROW_BLOCKS: usize = 8;

/// [`fold_block`] of one large `[reduced, inner]` array: [`ROW_BLOCKS`] contiguous blocks of
/// rows folded apart (over the threads; the first from `init`, the others from their first
/// row, so `init` is folded in once), then their results folded in block order. Each thread
/// streams through whole blocks of memory, where splitting the columns would give each a
/// part of every row; the fold order depends on the shape alone.
fn fold_row_blocks<T: Copy + Send + Sync>(
    x: &[T],
    out: &mut [T],
    init: T,
    inner: usize,
    f: impl Fn(T, T) -> T + Copy + Send + Sync,
) {
    let reduced = x.len() / inner;
    let per = reduced.div_ceil(ROW_BLOCKS);
    let mut partial = vec![init; reduced.div_ceil(per) * inner];
    let parts = x.chunks(per * inner).zip(partial.chunks_mut(inner));
    threads::for_each(parts.enumerate(), |(k, (xs, acc))| {
        let rows = if k == 0 {
            xs
        } else {
            acc.copy_from_slice(&xs[..inner]);
            &xs[inner..]
        };
        oxla_simd::vectorized(
            #[inline(always)]
            || fold_into(acc, rows, f),
        )
    });
    let (first, rest) = partial.split_at(inner);
    out.copy_from_slice(first);
    oxla_simd::vectorized(
        #[inline(always)]
        || fold_into(out, rest, f),
    );
}

/// `acc[i] = f(acc[i], row[i])` for each row of `rows` (rows as long as `acc`) in order.
#[inline(always)]
fn fold_into<T: Copy>(acc: &mut [T], rows: &[T], f: impl Fn(T, T) -> T + Copy) {
    for row in rows.chunks_exact(acc.len()) {
        for (a, &v) in acc.iter_mut().zip(row) {
            *a = f(*a, v);
        }
    }
}

/// `out[i - first] = fold over r of x[r, i]` for the columns `first..first + out.len()` of
/// a `[reduced, inner]` array.
#[inline(always)]
fn fold_columns<T: Copy>(
    x: &[T],
    out: &mut [T],
    init: T,
    first: usize,
    (reduced, inner): (usize, usize),
    f: impl Fn(T, T) -> T + Copy,
) {
    out.fill(init);
    for r in 0..reduced {
        let row = &x[r * inner + first..r * inner + first + out.len()];
        for (a, &v) in out.iter_mut().zip(row) {
            *a = f(*a, v);
        }
    }
}

/// [`fold_block`] on one thread.
#[inline(always)]
fn fold_rows<T: Copy>(
    x: &[T],
    out: &mut [T],
    init: T,
    (reduced, inner): (usize, usize),
    f: impl Fn(T, T) -> T + Copy,
    row: impl Fn(&[T], T) -> T + Copy,
) {
    for (o, acc) in out.chunks_exact_mut(inner).enumerate() {
        let block = &x[o * reduced * inner..(o + 1) * reduced * inner];
        if inner == 1 {
            acc[0] = row(block, init);
            continue;
        }
        acc.fill(init);
        fold_into(acc, block, f);
    }
}

/// `max(a, b)` that picks `b` when it is larger or NaN: the same value as [`max_op`] except
/// for zeros and denormals (which `max_op` reads as signed zeros) and which NaN payload
/// survives, in fewer vector operations.
#[inline(always)]
fn fast_max<F: Float>(a: F, b: F) -> F {
    if (b > a) | b.is_nan() {
        b
    } else {
        a
    }
}

/// The [`fast_max`] counterpart of [`min_op`].
#[inline(always)]
fn fast_min<F: Float>(a: F, b: F) -> F {
    if (b < a) | b.is_nan() {
        b
    } else {
        a
    }
}

/// A max/min [`fold_block`] with the cheap `fast` fold, then the zero outputs (whose sign
/// `fast` may get wrong) folded again with `exact` in row order (a max or min has the same
/// value in any order). Every
/// output therefore has the value of the `exact` fold, signed zeros included; a NaN output
/// is NaN in both, with an unspecified payload (the compiler may lower either select to a
/// vector max instruction, which keeps a different NaN).
fn fold_extremum<T: Float + Send + Sync>(
    x: &[T],
    out: &mut [T],
    init: T,
    (reduced, inner): (usize, usize),
    op: oxla_simd::LaneFold,
    fast: impl Fn(T, T) -> T + Copy + Send + Sync,
    exact: impl Fn(T, T) -> T + Copy + Send + Sync,
) {
    fold_block(
        x,
        out,
        init,
        (reduced, inner),
        fast,
        #[inline(always)]
        move |row, init| fold_row_extremum(row, init, op, fast, exact),
    );
    if inner == 0 {
        return;
    }
    let zero = T::from_f64(0.0);
    for (k, o) in out.iter_mut().enumerate() {
        // Zeros and denormals (which `exact` flushes) are folded again.
        if o.flushed() != zero {
            continue;
        }
        let (outer, i) = (k / inner, k % inner);
        let block = &x[outer * reduced * inner..(outer + 1) * reduced * inner];
        *o = if inner == 1 {
            fold_row(block, init, exact)
        } else {
            block
                .iter()
                .skip(i)
                .step_by(inner)
                .fold(init, |a, &v| exact(a, v))
        };
    }
}

/// `out[o, i] = fold over r of x[o, r, i]` for an `[outer, reduced, inner]` array and an
/// add, max, min or multiply `kind` (anything else folds as a product): the order every
/// reduction over adjacent dimensions uses, so row groups that fold a slab of rows at a
/// time get the same bits as one fold of the whole array.
pub(crate) fn fold_float_block<T: Float + Send + Sync>(
    kind: &OpKind,
    x: &[T],
    out: &mut [T],
    init: T,
    shape: (usize, usize),
) {
    use OpKind as K;
    let (reduced, inner) = shape;
    match kind {
        K::Add => fold_block(x, out, init, shape, |a, b| a + b, fold_row_sum),
        K::Maximum => fold_extremum(
            x,
            out,
            init,
            shape,
            oxla_simd::LaneFold::Max,
            fast_max,
            max_op,
        ),
        K::Minimum => fold_extremum(
            x,
            out,
            init,
            shape,
            oxla_simd::LaneFold::Min,
            fast_min,
            min_op,
        ),
        _ => {
            // Products keep the strictly sequential order.
            if inner == 0 {
                return;
            }
            for (o, acc) in out.chunks_exact_mut(inner).enumerate() {
                acc.fill(init);
                let block = &x[o * reduced * inner..(o + 1) * reduced * inner];
                for row in block.chunks_exact(inner) {
                    for (a, &v) in acc.iter_mut().zip(row) {
                        *a = *a * v;
                    }
                }
            }
        }
    }
}

/// The `(outer, reduced, inner)` extents of `input` when the reduced dimensions are
/// adjacent, so the reduction reads it in place as an `[outer, reduced, inner]` array;
/// `None` for other layouts.
fn adjacent_block(cx: OpCx<'_>, input: &Literal) -> Result<Option<(usize, usize, usize)>, IrError> {
    let rank = input.ty.rank();
    let mut dims = cx.dims("dimensions", &cx.i64s("dimensions")?, rank)?;
    dims.sort_unstable();
    let (Some(&first), Some(&last)) = (dims.first(), dims.last()) else {
        return Ok(None);
    };
    if last - first + 1 != dims.len() {
        return Ok(None);
    }
    let ext = extents(&input.ty.shape);
    let outer: usize = ext[..first].iter().product();
    let reduced: usize = ext[first..=last].iter().product();
    let inner: usize = ext[last + 1..].iter().product();
    Ok(Some((outer, reduced, inner)))
}

/// The f32/f64 add/max/min/mul reductions over a block of adjacent dimensions, read in
/// place without moving the reduced dimensions first. `None` for other layouts.
fn reduce_float_fast<T: Plain + Float + Send + Sync>(
    cx: OpCx<'_>,
    kind: &OpKind,
    input: &Literal,
    init: &Literal,
    out_ty: &TensorType,
) -> Result<Option<Literal>, IrError> {
    use OpKind as K;
    if !matches!(kind, K::Add | K::Maximum | K::Minimum | K::Multiply) {
        return Ok(None);
    }
    let Some((outer, reduced, inner)) = adjacent_block(cx, input)? else {
        return Ok(None);
    };
    let (Some(x), Some(init)) = (typed::view::<T>(input), typed::view::<T>(init)) else {
        return Ok(None);
    };
    let init = init[0];
    // Every output element is one fold's result.
    typed::build_overwritten::<T>(out_ty.clone(), outer * inner, |out| {
        fold_float_block(kind, &x, out, init, (reduced, inner));
    })
    .map(Some)
}

/// The integer add/mul/max/min/and/or/xor reductions over a block of adjacent dimensions,
/// read in place and folded on vectors ([`fold_block`]). These combiners (wrapping) are
/// associative and commutative, so any fold order gives the general path's value. `None`
/// for other ops and layouts.
fn reduce_int_fast<T: Plain + Int + Send + Sync>(
    cx: OpCx<'_>,
    kind: &OpKind,
    input: &Literal,
    init: &Literal,
    out_ty: &TensorType,
) -> Result<Option<Literal>, IrError> {
    use OpKind as K;
    if !matches!(
        kind,
        K::Add | K::Multiply | K::Maximum | K::Minimum | K::And | K::Or | K::Xor
    ) {
        return Ok(None);
    }
    let Some((outer, reduced, inner)) = adjacent_block(cx, input)? else {
        return Ok(None);
    };
    let (Some(x), Some(init)) = (typed::view::<T>(input), typed::view::<T>(init)) else {
        return Ok(None);
    };
    let init = init[0];
    let shape = (reduced, inner);
    // Every output element is one fold's result.
    typed::build_overwritten::<T>(out_ty.clone(), outer * inner, |out| match kind {
        K::Add => fold_int_block(&x, out, init, shape, T::wadd),
        K::Multiply => fold_int_block(&x, out, init, shape, T::wmul),
        K::Maximum => fold_int_block(&x, out, init, shape, std::cmp::max),
        K::Minimum => fold_int_block(&x, out, init, shape, std::cmp::min),
        K::And => fold_int_block(&x, out, init, shape, T::bit_and),
        K::Or => fold_int_block(&x, out, init, shape, T::bit_or),
        _ => fold_int_block(&x, out, init, shape, T::bit_xor),
    })
    .map(Some)
}

/// [`fold_block`] with `f`, an associative and commutative integer operation, so any
/// order gives the same result: rows fold as one plain loop (which the compiler turns
/// into vector lanes and combines at the end), and a single long row splits over the
/// threads, whose totals fold last.
#[inline(always)]
fn fold_int_block<T: Copy + Send + Sync>(
    x: &[T],
    out: &mut [T],
    init: T,
    shape: (usize, usize),
    f: impl Fn(T, T) -> T + Copy + Send + Sync,
) {
    let threads = threads::count();
    if let ([total], true) = (&mut *out, x.len() >= PARALLEL_ELEMENTS && threads > 1) {
        let per = x.len().div_ceil(threads);
        let mut parts: Vec<Option<T>> = vec![None; threads];
        threads::for_each(x.chunks(per).zip(parts.iter_mut()), |(chunk, part)| {
            let (&first, rest) = chunk.split_first().expect("chunks are not empty");
            *part = Some(oxla_simd::vectorized(
                #[inline(always)]
                || fold_plain(rest, first, f),
            ));
        });
        *total = parts.into_iter().flatten().fold(init, f);
        return;
    }
    fold_block(
        x,
        out,
        init,
        shape,
        f,
        #[inline(always)]
        move |row, init| fold_plain(row, init, f),
    );
}

/// `init` folded with every element of `row` in order, as one plain loop.
#[inline(always)]
fn fold_plain<T: Copy>(row: &[T], init: T, f: impl Fn(T, T) -> T) -> T {
    row.iter().fold(init, |a, &v| f(a, v))
}

fn row(lit: &Literal, index: usize, len: usize, shape: Vec<i64>) -> Literal {
    let esize = lit.ty.element_type.byte_size();
    Literal {
        ty: TensorType::new(shape, lit.ty.element_type),
        data: lit.data[index * esize..(index + len) * esize]
            .to_vec()
            .into(),
    }
}

/// Reduces `inputs` with a body evaluated by `body` (on rows of `K` elements when `lanes`,
/// else on single elements).
pub(crate) fn reduce_general(
    cx: OpCx<'_>,
    inputs: &[Literal],
    inits: &[Literal],
    lanes: bool,
    body: &mut dyn FnMut(Vec<Literal>) -> Result<Vec<Literal>, IrError>,
) -> Result<Vec<Literal>, IrError> {
    let n = inputs.len();
    let first = inputs
        .first()
        .ok_or_else(|| cx.invalid("needs at least one input"))?;
    if inits.len() != n {
        return Err(cx.invalid("needs one init value per input"));
    }
    for (input, init) in inputs.iter().zip(inits) {
        if input.ty.shape != first.ty.shape {
            return Err(cx.invalid("inputs must have the same shape"));
        }
        if init.ty.num_elements() != Some(1) {
            return Err(cx.invalid("init values must be scalars"));
        }
    }
    let lay = layout(cx, &first.ty)?;
    let mut out_types = Vec::with_capacity(n);
    for i in 0..n {
        let ty = cx.result_tensor(i)?;
        if ty.shape != lay.kept_shape {
            return Err(cx.invalid(format!(
                "result type {ty} does not match the reduced shape {:?}",
                lay.kept_shape
            )));
        }
        out_types.push(ty.clone());
    }
    let permuted: Vec<Literal> = inputs
        .iter()
        .map(|x| permute(x, &lay.perm))
        .collect::<Result<_, _>>()?;
    let k = lay.n_kept;
    let check_step = |out: &[Literal], want_len: usize| -> Result<(), IrError> {
        if out.len() != n {
            return Err(cx.invalid(format!("body returned {} values, expected {n}", out.len())));
        }
        for (v, ty) in out.iter().zip(&out_types) {
            let len = v.ty.num_elements().unwrap_or(0);
            if v.ty.element_type != ty.element_type || (len != want_len && len != 1) {
                return Err(cx.invalid(format!(
                    "body returned {}, expected {}",
                    v.ty, ty.element_type
                )));
            }
        }
        Ok(())
    };
    let widen = |v: Literal, len: usize| -> Literal {
        if v.ty.num_elements() == Some(len) {
            Literal {
                ty: TensorType::new(vec![len as i64], v.ty.element_type),
                data: v.data,
            }
        } else {
            Literal {
                ty: TensorType::new(vec![len as i64], v.ty.element_type),
                data: v.data.repeat(len).into(),
            }
        }
    };
    if lanes {
        let mut acc: Vec<Literal> = inits.iter().map(|init| widen(init.clone(), k)).collect();
        if k > 0 {
            for r in 0..lay.n_reduced {
                let mut args = acc;
                args.extend(permuted.iter().map(|x| row(x, r * k, k, vec![k as i64])));
                let out = body(args)?;
                check_step(&out, k)?;
                acc = out.into_iter().map(|v| widen(v, k)).collect();
            }
        }
        return acc
            .into_iter()
            .zip(out_types)
            .map(|(a, ty)| Literal::from_shared(ty, a.data))
            .collect();
    }
    let mut data: Vec<Vec<u8>> = vec![Vec::new(); n];
    for j in 0..k {
        let mut acc: Vec<Literal> = inits
            .iter()
            .map(|init| Literal {
                ty: TensorType::scalar(init.ty.element_type),
                data: init.data.clone(),
            })
            .collect();
        for r in 0..lay.n_reduced {
            let mut args = acc;
            args.extend(permuted.iter().map(|x| row(x, r * k + j, 1, Vec::new())));
            let out = body(args)?;
            check_step(&out, 1)?;
            acc = out;
        }
        for (d, a) in data.iter_mut().zip(acc) {
            d.extend_from_slice(&a.data);
        }
    }
    data.into_iter()
        .zip(out_types)
        .map(|(d, ty)| Literal::new(ty, d))
        .collect()
}

/// Which element an argmax/argmin body keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Extremum {
    Max,
    Min,
}

/// Recognises the body JAX emits for `argmax`/`argmin` over the arguments `(v0, i0, v1,
/// i1)` (the accumulated value and index, then the element's):
/// `p = (v0 > v1) or (v0 != v0)` (`<` for argmin), `q = p or (v0 == v1 and i0 < i1)`,
/// returning `select(p, v0, v1), select(q, i0, i1)`: the larger value, a NaN first,
/// and of equal values the lower index.
pub(crate) fn arg_extremum_body(region: &Region) -> Option<Extremum> {
    use crate::attrs::{ComparisonDirection as D, ComparisonType};
    use crate::Attribute;
    let [block] = region.blocks.as_slice() else {
        return None;
    };
    let &[v0, i0, v1, i1] = block.arguments.as_slice() else {
        return None;
    };
    let def = |v: ValueId, kind: OpKind| {
        block
            .ops
            .iter()
            .find(|o| o.results == [v])
            .filter(|o| o.kind == kind && o.regions.is_empty())
    };
    let pair = |v: ValueId, kind: OpKind| -> Option<[ValueId; 2]> {
        def(v, kind)?.operands.as_slice().try_into().ok()
    };
    // `compare dir a b` (not in total order), as (dir, a, b).
    let compare = |v: ValueId| {
        let op = def(v, OpKind::Compare)?;
        let Some(Attribute::ComparisonDirection(dir)) = op.attr("comparison_direction") else {
            return None;
        };
        let total = matches!(
            op.attr("compare_type"),
            Some(Attribute::ComparisonType(ComparisonType::TotalOrder))
        );
        let [a, b] = op.operands[..] else {
            return None;
        };
        (!total).then_some((*dir, a, b))
    };
    let either = |[a, b]: [ValueId; 2], f: &dyn Fn(ValueId, ValueId) -> bool| f(a, b) || f(b, a);
    let ret = block.ops.last()?;
    if !matches!(ret.kind, OpKind::Return | OpKind::FuncReturn) {
        return None;
    }
    let &[value, index] = ret.operands.as_slice() else {
        return None;
    };
    let [p, pv0, pv1] = def(value, OpKind::Select)?.operands[..] else {
        return None;
    };
    let [q, qi0, qi1] = def(index, OpKind::Select)?.operands[..] else {
        return None;
    };
    if [pv0, pv1, qi0, qi1] != [v0, v1, i0, i1] {
        return None;
    }
    let mut extremum = None;
    let keeps_first = |c: ValueId, nan: ValueId| {
        let ext = match compare(c)? {
            (D::Gt, a, b) if (a, b) == (v0, v1) => Extremum::Max,
            (D::Lt, a, b) if (a, b) == (v0, v1) => Extremum::Min,
            _ => return None,
        };
        (compare(nan)? == (D::Ne, v0, v0)).then_some(ext)
    };
    let [c, nan] = pair(p, OpKind::Or)?;
    if let Some(ext) = keeps_first(c, nan).or_else(|| keeps_first(nan, c)) {
        extremum = Some(ext);
    }
    let tie = |and: ValueId| {
        pair(and, OpKind::And).is_some_and(|ab| {
            either(ab, &|eq, lt| {
                matches!(compare(eq), Some((D::Eq, a, b)) if (a, b) == (v0, v1) || (a, b) == (v1, v0))
                    && compare(lt) == Some((D::Lt, i0, i1))
            })
        })
    };
    let q_ok = either(pair(q, OpKind::Or)?, &|x, y| x == p && tie(y));
    extremum.filter(|_| q_ok)
}

/// Where an argmax/argmin fold took its value or index from: `usize::MAX` for the init
/// value, else the element's flat position.
const FROM_INIT: usize = usize::MAX;

/// Folds (value, index) pairs as [`arg_extremum_body`] does, one output per kept position,
/// over the reduced positions in order; returns where each output's value and index come
/// from. `rows`: the reduced positions of an output are contiguous (`[kept][reduced]`),
/// else `[reduced][kept]`.
#[allow(clippy::too_many_arguments)]
fn arg_fold<V: Copy + PartialOrd, I: Copy + Ord>(
    ext: Extremum,
    values: &[V],
    indices: &[I],
    init: (V, I),
    rows: bool,
    n_kept: usize,
    n_reduced: usize,
) -> (Vec<usize>, Vec<usize>) {
    #[derive(Clone, Copy)]
    struct Acc<V, I> {
        value: V,
        index: I,
        value_from: usize,
        index_from: usize,
    }
    #[inline(always)]
    fn step<V: Copy + PartialOrd, I: Copy + Ord>(
        max: bool,
        acc: &mut Acc<V, I>,
        v: V,
        i: I,
        at: usize,
    ) {
        let a = acc.value;
        let better = if max { a > v } else { a < v };
        #[allow(clippy::eq_op)]
        let keep_value = better || a != a;
        let keep_index = keep_value || (a == v && acc.index < i);
        if !keep_value {
            acc.value = v;
            acc.value_from = at;
        }
        if !keep_index {
            acc.index = i;
            acc.index_from = at;
        }
    }
    let max = ext == Extremum::Max;
    let start = Acc {
        value: init.0,
        index: init.1,
        value_from: FROM_INIT,
        index_from: FROM_INIT,
    };
    let mut accs = vec![start; n_kept];
    if rows {
        for (j, acc) in accs.iter_mut().enumerate() {
            let base = j * n_reduced;
            for at in base..base + n_reduced {
                step(max, acc, values[at], indices[at], at);
            }
        }
    } else {
        for r in 0..n_reduced {
            let base = r * n_kept;
            for (j, acc) in accs.iter_mut().enumerate() {
                let at = base + j;
                step(max, acc, values[at], indices[at], at);
            }
        }
    }
    accs.iter().map(|a| (a.value_from, a.index_from)).unzip()
}

/// The elements of `src` at `from` (one per output), [`FROM_INIT`] taking `init`'s.
fn pick_elements(src: &Literal, init: &Literal, from: &[usize]) -> Vec<u8> {
    let esize = src.ty.element_type.byte_size();
    let mut out = Vec::with_capacity(from.len() * esize);
    for &at in from {
        if at == FROM_INIT {
            out.extend_from_slice(&init.data[..esize]);
        } else {
            out.extend_from_slice(&src.data[at * esize..(at + 1) * esize]);
        }
    }
    out
}

/// Runs an argmax/argmin reduce (body recognised by [`arg_extremum_body`]) of `inputs`
/// (values, indices) as a typed fold in the general path's order, giving its results bit
/// for bit; `None` for element types it does not cover.
pub(crate) fn reduce_arg_extremum(
    cx: OpCx<'_>,
    ext: Extremum,
    inputs: &[Literal],
    inits: &[Literal],
) -> Result<Option<Vec<Literal>>, IrError> {
    #[cfg(test)]
    if tests::GENERAL_ONLY.with(std::cell::Cell::get) {
        return Ok(None);
    }
    let ([values, indices], [v_init, i_init]) = (inputs, inits) else {
        return Ok(None);
    };
    let ty = &values.ty;
    let valid = indices.ty.shape == ty.shape
        && v_init.ty.element_type == ty.element_type
        && i_init.ty.element_type == indices.ty.element_type
        && v_init.ty.num_elements() == Some(1)
        && i_init.ty.num_elements() == Some(1);
    if !valid {
        return Ok(None);
    }
    let lay = layout(cx, ty)?;
    for (i, x) in inputs.iter().enumerate() {
        let want = TensorType::new(lay.kept_shape.clone(), x.ty.element_type);
        if *cx.result_tensor(i)? != want {
            return Ok(None);
        }
    }
    let rank = ty.rank();
    let n_dims = rank - lay.kept_shape.len();
    // Reducing the trailing dimensions in order: each output folds one contiguous row.
    let rows = lay.perm[..n_dims]
        .iter()
        .enumerate()
        .all(|(i, &d)| d == rank - n_dims + i);
    let (values, indices) = if rows {
        (values.clone(), indices.clone())
    } else {
        (permute(values, &lay.perm)?, permute(indices, &lay.perm)?)
    };
    let (n_kept, n_reduced) = (lay.n_kept, lay.n_reduced);
    macro_rules! with_indices {
        ($vals:expr, $vinit:expr) => {{
            let (vals, vinit) = ($vals, $vinit);
            macro_rules! go {
                ($it:ty) => {{
                    let idx = typed::view::<$it>(&indices).expect("index type");
                    let iinit = typed::view::<$it>(i_init).expect("index type")[0];
                    Some(arg_fold(
                        ext,
                        &vals,
                        &idx,
                        (vinit, iinit),
                        rows,
                        n_kept,
                        n_reduced,
                    ))
                }};
            }
            match indices.ty.element_type {
                ElementType::S32 => go!(i32),
                ElementType::S64 => go!(i64),
                ElementType::U32 => go!(u32),
                ElementType::U64 => go!(u64),
                _ => None,
            }
        }};
    }
    macro_rules! plain {
        ($vt:ty) => {{
            let vals = typed::view::<$vt>(&values).expect("value type");
            let vinit = typed::view::<$vt>(v_init).expect("value type")[0];
            with_indices!(vals, vinit)
        }};
    }
    use ElementType as E;
    let from = match ty.element_type {
        E::F32 => plain!(f32),
        E::F64 => plain!(f64),
        E::S8 => plain!(i8),
        E::S16 => plain!(i16),
        E::S32 => plain!(i32),
        E::S64 => plain!(i64),
        E::U8 => plain!(u8),
        E::U16 => plain!(u16),
        E::U32 => plain!(u32),
        E::U64 => plain!(u64),
        // Compared as the general path compares them: widened to f32, or as booleans.
        E::F16 | E::BF16 | E::Pred => match (decode(&values), decode(v_init)) {
            (Array::F32(v), Array::F32(i)) => with_indices!(v, i[0]),
            (Array::Pred(v), Array::Pred(i)) => with_indices!(v, i[0]),
            _ => None,
        },
        _ => None,
    };
    let Some((value_from, index_from)) = from else {
        return Ok(None);
    };
    let out = [
        (&values, v_init, value_from),
        (&indices, i_init, index_from),
    ];
    out.into_iter()
        .enumerate()
        .map(|(i, (src, init, from))| {
            Literal::new(
                cx.result_tensor(i)?.clone(),
                pick_elements(src, init, &from),
            )
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// Set to run argmax/argmin bodies through the general path only.
        pub(super) static GENERAL_ONLY: Cell<bool> = const { Cell::new(false) };
    }

    /// Values full of the cases where a cheap max/min may differ from the exact one: signed
    /// zeros and NaNs, next to ordinary numbers.
    fn tricky(n: usize, seed: u32) -> Vec<f32> {
        let mut state = seed | 1;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                match state % 16 {
                    0 => 0.0,
                    1 => -0.0,
                    2 => f32::from_bits(0x7fc0_0001),
                    3 => f32::from_bits(0xffc0_0002),
                    _ => (state >> 8) as f32 / (1u32 << 20) as f32 - 8.0,
                }
            })
            .collect()
    }

    #[test]
    fn fast_extremum_folds_match_the_exact_fold() {
        // Rows and columns, small and large enough for threads; NaN-free rows too, and
        // rows of zeros only, where the sign of the result depends on the order.
        for &(outer, reduced, inner) in &[
            (3, 17, 1),
            (5, 40, 3),
            (1, 7, 600),
            (700, 512, 1),
            (2, 300, 500),
        ] {
            for seed in 1..4u32 {
                let mut x = tricky(outer * reduced * inner, seed);
                if seed == 2 {
                    x.retain(|v| !v.is_nan());
                    x.resize(outer * reduced * inner, -0.0);
                }
                if seed == 3 {
                    x.iter_mut()
                        .for_each(|v| *v = if v.is_sign_negative() { -0.0 } else { 0.0 });
                }
                for init in [f32::NEG_INFINITY, f32::INFINITY, -0.0, f32::NAN] {
                    let shape = (reduced, inner);
                    let mut want = vec![0.0f32; outer * inner];
                    let mut got = want.clone();
                    fold_block(&x, &mut want, init, shape, max_op, |r, i| {
                        fold_row(r, i, max_op)
                    });
                    fold_extremum(
                        &x,
                        &mut got,
                        init,
                        shape,
                        oxla_simd::LaneFold::Max,
                        fast_max,
                        max_op,
                    );
                    // Bits, with every NaN as one canonical NaN.
                    let bits = |v: &[f32]| {
                        v.iter()
                            .map(|f| if f.is_nan() { u32::MAX } else { f.to_bits() })
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(bits(&got), bits(&want), "max {outer}x{reduced}x{inner}");
                    fold_block(&x, &mut want, init, shape, min_op, |r, i| {
                        fold_row(r, i, min_op)
                    });
                    fold_extremum(
                        &x,
                        &mut got,
                        init,
                        shape,
                        oxla_simd::LaneFold::Min,
                        fast_min,
                        min_op,
                    );
                    assert_eq!(bits(&got), bits(&want), "min {outer}x{reduced}x{inner}");
                }
            }
        }
    }
    /// JAX's argmax (`Gt`) or argmin (`Lt`) reduce of `values` with `indices` over `dims`.
    fn arg_module(
        values: &Literal,
        indices: &Literal,
        inits: (&Literal, &Literal),
        dims: &[i64],
        dir: crate::attrs::ComparisonDirection,
    ) -> crate::Module {
        use super::super::testing::*;
        use crate::attrs::ComparisonDirection as D;
        use crate::Type;
        let (vet, iet) = (values.ty.element_type, indices.ty.element_type);
        let types: Vec<Type> = [values, indices, inits.0, inits.1]
            .iter()
            .map(|l| Type::Tensor(l.ty.clone()))
            .collect();
        let (mut b, p) = FuncBuilder::new(&types);
        let scalar = |et| t(&[], et);
        let pred = t(&[], ElementType::Pred);
        let body = b.region(
            &[scalar(vet), scalar(iet), scalar(vet), scalar(iet)],
            |b, a| {
                let c = b.compare(dir, a[0], a[2], &[]);
                let nan = b.compare(D::Ne, a[0], a[0], &[]);
                let keep = b.op(OpKind::Or, &[c, nan], pred.clone(), vec![]);
                let eq = b.compare(D::Eq, a[0], a[2], &[]);
                let lt = b.compare(D::Lt, a[1], a[3], &[]);
                let tie = b.op(OpKind::And, &[eq, lt], pred.clone(), vec![]);
                let keep_index = b.op(OpKind::Or, &[keep, tie], pred.clone(), vec![]);
                let v = b.op(OpKind::Select, &[keep, a[0], a[2]], scalar(vet), vec![]);
                let i = b.op(
                    OpKind::Select,
                    &[keep_index, a[1], a[3]],
                    scalar(iet),
                    vec![],
                );
                vec![v, i]
            },
        );
        let kept: Vec<i64> = (0..values.ty.rank() as i64)
            .filter(|d| !dims.contains(d))
            .map(|d| values.ty.shape[d as usize])
            .collect();
        let r = b.op_full(
            OpKind::Reduce,
            &p,
            &[t(&kept, vet), t(&kept, iet)],
            vec![("dimensions", i64s(dims))],
            vec![body],
        );
        b.finish(&r)
    }

    #[test]
    fn jax_arg_extremum_bodies_are_recognised() {
        use crate::attrs::ComparisonDirection as D;
        let v = super::super::testing::f32s(&[3], &[1.0, 2.0, 3.0]);
        let i = super::super::testing::i32s(&[3], &[0, 1, 2]);
        let (vi, ii) = (
            super::super::testing::f32s(&[], &[0.0]),
            super::super::testing::i32s(&[], &[0]),
        );
        for (dir, want) in [(D::Gt, Extremum::Max), (D::Lt, Extremum::Min)] {
            let m = arg_module(&v, &i, (&vi, &ii), &[0], dir);
            let reduce = &m.functions[0].body.blocks[0].ops[0];
            assert_eq!(arg_extremum_body(&reduce.regions[0]), Some(want));
        }
        let m = arg_module(&v, &i, (&vi, &ii), &[0], D::Ge);
        let reduce = &m.functions[0].body.blocks[0].ops[0];
        assert_eq!(arg_extremum_body(&reduce.regions[0]), None);
    }

    #[test]
    fn arg_extremum_loops_match_the_general_path() {
        use super::super::sort::tests::random_literal;
        use crate::attrs::ComparisonDirection as D;
        use ElementType as E;
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let cases: [(&[i64], &[i64]); 10] = [
            (&[1], &[0]),
            (&[40], &[0]),
            (&[6, 17], &[1]),
            (&[6, 17], &[0]),
            (&[4, 5, 3], &[2]),
            (&[4, 5, 3], &[1, 2]),
            (&[4, 5, 3], &[0, 2]),
            (&[4, 5, 3], &[2, 1]),
            (&[0, 5], &[1]),
            (&[5, 0], &[1]),
        ];
        for vet in [
            E::F32,
            E::F64,
            E::F16,
            E::BF16,
            E::S32,
            E::U8,
            E::S8,
            E::Pred,
        ] {
            for iet in [E::S32, E::S64, E::U32] {
                for &(shape, dims) in &cases {
                    for dir in [D::Gt, D::Lt] {
                        let values = random_literal(shape, vet, &mut seed);
                        // Indices with ties; and the inits: a random value, a low index.
                        let indices = random_literal(shape, iet, &mut seed);
                        let v_init = random_literal(&[], vet, &mut seed);
                        let i_init = random_literal(&[], iet, &mut seed);
                        let m = arg_module(&values, &indices, (&v_init, &i_init), dims, dir);
                        let args = [values, indices, v_init, i_init];
                        let fast = crate::eval::run_function(&m, "main", &args).unwrap();
                        GENERAL_ONLY.with(|g| g.set(true));
                        let general = crate::eval::run_function(&m, "main", &args);
                        GENERAL_ONLY.with(|g| g.set(false));
                        let general = general.unwrap();
                        let what = format!("{vet:?} {iet:?} {shape:?} over {dims:?} {dir:?}");
                        for (f, g) in fast.iter().zip(&general) {
                            assert_eq!(f.ty, g.ty, "{what}");
                            assert!(f.data == g.data, "{what}");
                        }
                    }
                }
            }
        }
    }

    /// A float fold of several outer blocks gives each block the bits of that block folded
    /// alone (as row groups fold a slab of rows at a time), also for blocks large enough to
    /// fold by blocks of rows.
    #[test]
    fn float_folds_of_some_outer_blocks_match_the_whole_fold() {
        let (reduced, inner) = (2048, 160);
        let block = reduced * inner;
        let x: Vec<f32> = (0..3 * block)
            .map(|k| ((k as f32) * 0.618_034).sin() * (1.0 + (k % 7) as f32))
            .collect();
        for kind in [OpKind::Add, OpKind::Multiply, OpKind::Maximum] {
            let mut whole = vec![0.0f32; 3 * inner];
            fold_float_block(&kind, &x, &mut whole, 0.5, (reduced, inner));
            for (o, want) in whole.chunks_exact(inner).enumerate() {
                let mut alone = vec![0.0f32; inner];
                let xs = &x[o * block..(o + 1) * block];
                fold_float_block(&kind, xs, &mut alone, 0.5, (reduced, inner));
                let bits = |v: &[f32]| v.iter().map(|e| e.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&alone), bits(want), "{kind:?}, block {o}");
            }
        }
    }

    /// The integer folds on vectors, threads and lane accumulators give the sequential
    /// fold's values for every combiner, over blocks of every shape (rows, columns,
    /// several outer blocks, empty ones, and large enough to split over threads).
    #[test]
    fn integer_block_folds_match_the_sequential_fold() {
        fn check<T: Int + Send + Sync + std::fmt::Debug>(values: &[T], init: T) {
            let shapes = [
                (1, 0, 1),
                (1, 1, 1),
                (1, 31, 1),
                (1, 33, 1),
                (3, 100, 1),
                (2, 7, 5),
                (1, 1000, 3),
                (1, 1 << 18, 1),
                (1, (1 << 18) + 5, 1),
                (4, 1 << 16, 1),
                (1, 2048, 160),
            ];
            type Combiner<T> = (&'static str, fn(T, T) -> T);
            let combiners: [Combiner<T>; 7] = [
                ("add", T::wadd),
                ("mul", T::wmul),
                ("max", std::cmp::max),
                ("min", std::cmp::min),
                ("and", T::bit_and),
                ("or", T::bit_or),
                ("xor", T::bit_xor),
            ];
            for (outer, reduced, inner) in shapes {
                let x: Vec<T> = values
                    .iter()
                    .copied()
                    .cycle()
                    .take(outer * reduced * inner)
                    .collect();
                for (name, f) in combiners {
                    let mut got = vec![T::default(); outer * inner];
                    fold_int_block(&x, &mut got, init, (reduced, inner), f);
                    let want: Vec<T> = (0..outer * inner)
                        .map(|k| {
                            let (o, i) = (k / inner, k % inner);
                            (0..reduced).fold(init, |a, r| f(a, x[(o * reduced + r) * inner + i]))
                        })
                        .collect();
                    assert_eq!(got, want, "{name} over {outer}x{reduced}x{inner}");
                }
            }
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let bits: Vec<u64> = (0..4099)
            .map(|k| match k % 7 {
                0 => next() | 1,
                1 => u64::MAX,
                2 => 1 << 63,
                _ => next() % 2000,
            })
            .collect();
        check(&bits.iter().map(|&b| b as i32).collect::<Vec<_>>(), 7);
        check(
            &bits.iter().map(|&b| b as u32).collect::<Vec<_>>(),
            u32::MAX,
        );
        check(&bits.iter().map(|&b| b as i64).collect::<Vec<_>>(), -3);
        check(&bits, 1);
        check(&bits.iter().map(|&b| b as i8).collect::<Vec<_>>(), 0);
        check(&bits.iter().map(|&b| b as u16).collect::<Vec<_>>(), 5);
    }
}
