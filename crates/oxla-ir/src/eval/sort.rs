//! `sort`: sorts several operands along one dimension with a comparator region.
//!
//! The sort dimension is moved innermost, each row is sorted as a permutation of positions,
//! and the permutation is applied to every operand. Four strategies:
//! - a lexicographic comparison of keys, such as JAX's comparator (which canonicalizes NaN
//!   and -0 before a total-order compare), sorts typed keys natively (`sort_keys`), giving
//!   the stable order;
//! - a comparator that is one `compare` of the two arguments of one operand runs natively
//!   (integers, floats in IEEE or total order, complex), with a stable merge sort;
//! - another elementwise comparator runs on whole batches of pairs through a bitonic
//!   network, with ties broken by position so the result is the stable order;
//! - any other comparator is called once per comparison, with a stable merge sort.
//!
//! Every strategy gives the stable order, also where the op does not ask for one. The
//! merge sort and the network never assume the comparator is a consistent order, so a
//! strange comparator yields some permutation, never a failure.

use super::body::{region, take};
use super::context::{extents, OpCx};
use super::element::{decode, Array};
use super::reduce::lane_safe;
use super::shape::permute;
use super::sort_keys::{
    gather_elements, key_column, key_operand, lexicographic_comparator, sorted_order,
};
use super::{tensor_operand, Frame, Interp, Value};
use crate::attrs::{ComparisonDirection, ComparisonType};
use crate::{Attribute, IrError, Literal, OpKind, Region, TensorType, ValueId};
use std::cmp::Ordering;

/// Sorts `0..n` stably by `less`, which may fail or be inconsistent.
pub(crate) fn merge_sort(
    n: usize,
    less: &mut dyn FnMut(usize, usize) -> Result<bool, IrError>,
) -> Result<Vec<usize>, IrError> {
    let mut cur: Vec<usize> = (0..n).collect();
    let mut next = vec![0usize; n];
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j, mut k) = (start, mid, start);
            while i < mid && j < end {
                // Take from the right only when it is strictly smaller: stability.
                if less(cur[j], cur[i])? {
                    next[k] = cur[j];
                    j += 1;
                } else {
                    next[k] = cur[i];
                    i += 1;
                }
                k += 1;
            }
            next[k..k + (mid - i)].copy_from_slice(&cur[i..mid]);
            k += mid - i;
            next[k..k + (end - j)].copy_from_slice(&cur[j..end]);
            start = end;
        }
        std::mem::swap(&mut cur, &mut next);
        width *= 2;
    }
    Ok(cur)
}

/// The comparator `return compare(dir, arg_a, arg_b)`: (operand, direction, swapped,
/// total order) when the args are the two of one operand.
fn simple_comparator(region: &Region) -> Option<(usize, ComparisonDirection, bool, bool)> {
    let [block] = region.blocks.as_slice() else {
        return None;
    };
    let [cmp, ret] = block.ops.as_slice() else {
        return None;
    };
    if cmp.kind != OpKind::Compare
        || !matches!(ret.kind, OpKind::Return | OpKind::FuncReturn)
        || ret.operands != cmp.results
        || cmp.operands.len() != 2
    {
        return None;
    }
    let pos = |v| block.arguments.iter().position(|&a| a == v);
    let (a, b) = (pos(cmp.operands[0])?, pos(cmp.operands[1])?);
    let dir = match cmp.attr("comparison_direction")? {
        Attribute::ComparisonDirection(d) => *d,
        _ => return None,
    };
    let total = matches!(
        cmp.attr("compare_type"),
        Some(Attribute::ComparisonType(ComparisonType::TotalOrder))
    );
    if a / 2 != b / 2 || a == b {
        return None;
    }
    Some((a / 2, dir, a > b, total))
}

fn matches_dir(dir: ComparisonDirection, ord: Option<Ordering>) -> bool {
    use ComparisonDirection as D;
    match ord {
        None => dir == D::Ne,
        Some(o) => match dir {
            D::Eq => o == Ordering::Equal,
            D::Ne => o != Ordering::Equal,
            D::Lt => o == Ordering::Less,
            D::Le => o != Ordering::Greater,
            D::Gt => o == Ordering::Greater,
            D::Ge => o != Ordering::Less,
        },
    }
}

/// A native three-way comparison of two elements of `arr` (by flat position).
pub(crate) type Cmp = Box<dyn Fn(usize, usize) -> Option<Ordering>>;

pub(crate) fn native_cmp(arr: Array, total: bool) -> Cmp {
    fn lex<F: PartialOrd>(a: (F, F), b: (F, F)) -> Option<Ordering> {
        match a.0.partial_cmp(&b.0)? {
            Ordering::Equal => a.1.partial_cmp(&b.1),
            o => Some(o),
        }
    }
    match arr {
        Array::Pred(v) => Box::new(move |a, b| Some(v[a].cmp(&v[b]))),
        Array::S8(v) => Box::new(move |a, b| Some(v[a].cmp(&v[b]))),
        Array::S16(v) => Box::new(move |a, b| Some(v[a].cmp(&v[b]))),
        Array::S32(v) => Box::new(move |a, b| Some(v[a].cmp(&v[b]))),
        Array::S64(v) => Box::new(move |a, b| Some(v[a].cmp(&v[b]))),
        Array::U8(v) => Box::new(move |a, b| Some(v[a].cmp(&v[b]))),
        Array::U16(v) => Box::new(move |a, b| Some(v[a].cmp(&v[b]))),
        Array::U32(v) => Box::new(move |a, b| Some(v[a].cmp(&v[b]))),
        Array::U64(v) => Box::new(move |a, b| Some(v[a].cmp(&v[b]))),
        Array::F32(v) if total => Box::new(move |a, b| Some(v[a].total_cmp(&v[b]))),
        Array::F32(v) => Box::new(move |a, b| v[a].partial_cmp(&v[b])),
        Array::F64(v) if total => Box::new(move |a, b| Some(v[a].total_cmp(&v[b]))),
        Array::F64(v) => Box::new(move |a, b| v[a].partial_cmp(&v[b])),
        Array::C64(v) => Box::new(move |a, b| lex((v[a].re, v[a].im), (v[b].re, v[b].im))),
        Array::C128(v) => Box::new(move |a, b| lex((v[a].re, v[a].im), (v[b].re, v[b].im))),
    }
}

/// Evaluates `less(a, b)` for a batch of pairs of flat positions.
type LessBatch<'a> = dyn FnMut(&[(usize, usize)]) -> Result<Vec<bool>, IrError> + 'a;

/// Sorts rows of `len` positions (`n_rows` of them) through a bitonic network whose
/// compare-exchange steps are evaluated in batches by `less_batch(pairs)`, which returns
/// `less(a, b)` for every pair of flat positions. Ties are broken by position.
fn bitonic_rows(
    n_rows: usize,
    len: usize,
    less_batch: &mut LessBatch<'_>,
) -> Result<Vec<Vec<usize>>, IrError> {
    let p = len.next_power_of_two();
    let mut perms: Vec<Vec<usize>> = (0..n_rows).map(|_| (0..p).collect()).collect();
    let mut k = 2;
    while k <= p {
        let mut j = k / 2;
        while j > 0 {
            // Pairs of real positions need the comparator; padding sorts last.
            let mut pairs = Vec::new();
            let mut slots = Vec::new();
            for (r, perm) in perms.iter().enumerate() {
                for i in 0..p {
                    let l = i ^ j;
                    if l > i && perm[i] < len && perm[l] < len {
                        pairs.push((r * len + perm[i], r * len + perm[l]));
                        slots.push((r, i, l));
                    }
                }
            }
            let (lt, gt) = if pairs.is_empty() {
                (Vec::new(), Vec::new())
            } else {
                let swapped: Vec<(usize, usize)> = pairs.iter().map(|&(a, b)| (b, a)).collect();
                (less_batch(&pairs)?, less_batch(&swapped)?)
            };
            let mut q = 0;
            for (r, perm) in perms.iter_mut().enumerate() {
                for i in 0..p {
                    let l = i ^ j;
                    if l <= i {
                        continue;
                    }
                    let (a, b) = (perm[i], perm[l]);
                    let a_first = if a < len && b < len {
                        debug_assert_eq!(slots[q], (r, i, l));
                        let res = lt[q] || (!gt[q] && a < b);
                        q += 1;
                        res
                    } else {
                        a < b
                    };
                    let ascending = i & k == 0;
                    if a_first != ascending {
                        perm.swap(i, l);
                    }
                }
            }
            j /= 2;
        }
        k *= 2;
    }
    for perm in &mut perms {
        perm.truncate(len);
        perm.retain(|&x| x < len);
    }
    Ok(perms)
}

/// The sorted flat positions of every row when the comparator is a lexicographic
/// comparison of keys [`sort_keys`] orders natively; `None` leaves the sort to the
/// comparator.
fn sort_by_keys(
    comparator: &Region,
    outer: &dyn Fn(ValueId) -> Option<Literal>,
    rows: &[Literal],
    n_rows: usize,
    len: usize,
) -> Option<Vec<usize>> {
    #[cfg(test)]
    if tests::GENERAL_ONLY.with(std::cell::Cell::get) {
        return None;
    }
    let keys = lexicographic_comparator(comparator, outer)?;
    let mut decoded: Vec<Option<Array>> = rows.iter().map(|_| None).collect();
    let mut columns = Vec::with_capacity(keys.len());
    for key in &keys {
        let k = key_operand(key);
        let arr = decoded.get_mut(k)?;
        let arr = arr.get_or_insert_with(|| decode(&rows[k]));
        columns.push(key_column(arr, key)?);
    }
    Some(sorted_order(&columns, n_rows, len))
}

impl<'m> Interp<'m> {
    /// Evaluates `sort`.
    pub(super) fn exec_sort(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
    ) -> Result<Vec<Value>, IrError> {
        let n = cx.op.operands.len();
        if n == 0 {
            return Err(cx.invalid("needs at least one operand"));
        }
        cx.expect_results(n)?;
        let mut inputs = Vec::with_capacity(n);
        for &id in &cx.op.operands {
            inputs.push(tensor_operand(frame, cx, id)?.clone());
        }
        let shape = inputs[0].ty.shape.clone();
        for (i, x) in inputs.iter().enumerate() {
            if x.ty.shape != shape {
                return Err(cx.invalid("operands must have the same shape"));
            }
            if *cx.result_tensor(i)? != x.ty {
                return Err(cx.invalid(format!("result {i} must have the type of operand {i}")));
            }
        }
        let rank = shape.len();
        if rank == 0 {
            return Ok(inputs.into_iter().map(Value::Tensor).collect());
        }
        let dim = cx
            .op
            .attr("dimension")
            .map_or(Ok(-1), |_| cx.int("dimension"))?;
        let dim = if dim < 0 { dim + rank as i64 } else { dim };
        let dim = cx.dims("dimension", &[dim], rank)?[0];
        let mut perm: Vec<usize> = (0..rank).filter(|&d| d != dim).collect();
        perm.push(dim);
        let mut inverse = vec![0usize; rank];
        for (i, &p) in perm.iter().enumerate() {
            inverse[p] = i;
        }
        let rows: Vec<Literal> = inputs
            .iter()
            .map(|x| permute(x, &perm))
            .collect::<Result<_, _>>()?;
        let len = extents(&shape)[dim];
        let n_rows = rows[0]
            .ty
            .num_elements()
            .unwrap_or(0)
            .checked_div(len)
            .unwrap_or(0);
        let comparator = region(cx, 0)?;
        let outer = |v| tensor_operand(frame, cx, v).ok().cloned();
        let order = match sort_by_keys(comparator, &outer, &rows, n_rows, len) {
            Some(order) => order,
            None => self.sort_by_comparator(frame, cx, comparator, &rows, n_rows, len)?,
        };
        let mut out = Vec::with_capacity(n);
        for row in &rows {
            let esize = row.ty.element_type.byte_size();
            let sorted = Literal::new(
                TensorType::new(row.ty.shape.clone(), row.ty.element_type),
                gather_elements(&row.data, esize, &order),
            )?;
            out.push(Value::Tensor(permute(&sorted, &inverse)?));
        }
        Ok(out)
    }

    /// The sorted flat positions of every row (`n_rows` rows of `len` positions), calling
    /// the comparator region: natively for a single `compare`, on batches of pairs for an
    /// elementwise region, once per comparison otherwise.
    fn sort_by_comparator(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
        comparator: &'m Region,
        rows: &[Literal],
        n_rows: usize,
        len: usize,
    ) -> Result<Vec<usize>, IrError> {
        let n = rows.len();
        let perms: Vec<Vec<usize>> =
            if let Some((k, dir, swapped, total)) = simple_comparator(comparator) {
                let cmp = native_cmp(decode(&rows[k]), total);
                (0..n_rows)
                    .map(|r| {
                        let base = r * len;
                        merge_sort(len, &mut |a, b| {
                            let (x, y) = if swapped { (b, a) } else { (a, b) };
                            Ok(matches_dir(dir, cmp(base + x, base + y)))
                        })
                    })
                    .collect::<Result<_, _>>()?
            } else if lane_safe(comparator) {
                let mut less_batch = |pairs: &[(usize, usize)]| -> Result<Vec<bool>, IrError> {
                    let a: Vec<usize> = pairs.iter().map(|p| p.0).collect();
                    let b: Vec<usize> = pairs.iter().map(|p| p.1).collect();
                    let mut args = Vec::with_capacity(2 * n);
                    for row in rows {
                        args.push(take(row, &a, false));
                        args.push(take(row, &b, false));
                    }
                    self.call_predicate(frame, cx, comparator, args, pairs.len())
                };
                bitonic_rows(n_rows, len, &mut less_batch)?
            } else {
                let mut res = Vec::with_capacity(n_rows);
                for r in 0..n_rows {
                    let base = r * len;
                    let mut less = |a: usize, b: usize| -> Result<bool, IrError> {
                        let mut args = Vec::with_capacity(2 * n);
                        for row in rows {
                            args.push(take(row, &[base + a], true));
                            args.push(take(row, &[base + b], true));
                        }
                        Ok(self.call_predicate(frame, cx, comparator, args, 1)?[0])
                    };
                    res.push(merge_sort(len, &mut less)?);
                }
                res
            };
        Ok(perms
            .iter()
            .enumerate()
            .flat_map(|(r, p)| p.iter().map(move |&i| r * len + i))
            .collect())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::sort_keys::lexicographic_comparator;
    use super::super::testing::*;
    use super::merge_sort;
    use crate::attrs::{ComparisonDirection, ComparisonType};
    use crate::{Attribute, ElementType, Literal, Module, OpKind, Region, Type, ValueId};
    use std::cell::Cell;

    thread_local! {
        /// Set to sort through the comparator region only, never by keys.
        pub(in super::super) static GENERAL_ONLY: Cell<bool> = const { Cell::new(false) };
    }

    /// Bit patterns of the element type `et` for random data: many ties, NaNs of both
    /// signs and payloads, signed zeros, infinities, denormals.
    fn patterns(et: ElementType) -> Vec<u64> {
        use ElementType as E;
        match et {
            E::F32 => [
                0.0f32,
                -0.0,
                1.0,
                -1.0,
                2.5,
                -2.5,
                f32::INFINITY,
                f32::NEG_INFINITY,
                1e-40,
                -1e-40,
            ]
            .iter()
            .map(|x| u64::from(x.to_bits()))
            .chain([0x7FC0_0000, 0xFFC0_0000, 0x7F80_0001, 0x7FC0_1234])
            .collect(),
            E::F64 => [
                0.0f64,
                -0.0,
                1.0,
                -1.0,
                2.5,
                f64::INFINITY,
                f64::NEG_INFINITY,
                1e-310,
            ]
            .iter()
            .map(|x| x.to_bits())
            .chain([
                0x7FF8_0000_0000_0000,
                0xFFF8_0000_0000_0000,
                0x7FF0_0000_0000_0001,
            ])
            .collect(),
            E::F16 => vec![
                0x0000, 0x8000, 0x3C00, 0xBC00, 0x4100, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x0001,
                0x8001, 0x7C01,
            ],
            E::BF16 => vec![
                0x0000, 0x8000, 0x3F80, 0xBF80, 0x4020, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x0001,
                0x8001, 0x7F81,
            ],
            E::Pred => vec![0, 1],
            E::S8 | E::S16 | E::S32 | E::S64 => [
                -3i64,
                -1,
                0,
                1,
                2,
                7,
                i64::from(i8::MIN),
                i64::from(i8::MAX),
            ]
            .iter()
            .map(|&x| x as u64)
            .collect(),
            _ => vec![0, 1, 2, 3, 200, 255],
        }
    }

    /// `n` random elements of `et` drawn from [`patterns`] (complex: pairs of f32 ones).
    pub(in super::super) fn random_literal(
        shape: &[i64],
        et: ElementType,
        seed: &mut u64,
    ) -> Literal {
        let n: usize = shape.iter().product::<i64>() as usize;
        let mut next = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed
        };
        let (pool, parts) = match et {
            ElementType::C64 => (patterns(ElementType::F32), 2),
            _ => (patterns(et), 1),
        };
        let size = et.byte_size() / parts;
        let mut data = Vec::with_capacity(n * et.byte_size());
        for _ in 0..n * parts {
            let bits = pool[(next() % pool.len() as u64) as usize];
            data.extend_from_slice(&bits.to_le_bytes()[..size]);
        }
        lit_bytes(shape, et, data)
    }

    /// A scalar constant of float type `et`: zero, or JAX's NaN.
    fn float_constant(b: &mut FuncBuilder, et: ElementType, nan: bool) -> ValueId {
        use ElementType as E;
        let bits: u64 = match (et, nan) {
            (_, false) => 0,
            (E::F32, true) => 0x7FC0_0000,
            (E::F64, true) => 0x7FF8_0000_0000_0000,
            (E::F16, true) => 0x7E00,
            (_, true) => 0x7FC0,
        };
        let size = et.byte_size();
        b.constant(&lit_bytes(&[], et, bits.to_le_bytes()[..size].to_vec()))
    }

    /// `select(x != x, NaN, select(x == 0, 0, x))`, JAX's canonical float key; with the
    /// constants (zero, NaN) from outside the region when given.
    fn canonical(
        b: &mut FuncBuilder,
        x: ValueId,
        et: ElementType,
        hoisted: Option<(ValueId, ValueId)>,
    ) -> ValueId {
        let constant = |b: &mut FuncBuilder, nan| match hoisted {
            Some((zero, nan_value)) => {
                if nan {
                    nan_value
                } else {
                    zero
                }
            }
            None => float_constant(b, et, nan),
        };
        let zero = constant(b, false);
        let is_zero = b.compare(ComparisonDirection::Eq, x, zero, &[]);
        let zero = constant(b, false);
        let x1 = b.op(OpKind::Select, &[is_zero, zero, x], t(&[], et), vec![]);
        let is_nan = b.compare(ComparisonDirection::Ne, x, x, &[]);
        let nan = constant(b, true);
        b.op(OpKind::Select, &[is_nan, nan, x1], t(&[], et), vec![])
    }

    fn compare_typed(
        b: &mut FuncBuilder,
        dir: ComparisonDirection,
        x: ValueId,
        y: ValueId,
        total: bool,
    ) -> ValueId {
        let mut attrs = vec![("comparison_direction", Attribute::ComparisonDirection(dir))];
        if total {
            attrs.push((
                "compare_type",
                Attribute::ComparisonType(ComparisonType::TotalOrder),
            ));
        }
        b.op(OpKind::Compare, &[x, y], t(&[], ElementType::Pred), attrs)
    }

    /// JAX's `_sort_lt_comparator` over operands of `types`, lexicographic on the first
    /// `descending.len()` of them (`gt` instead of `lt` where `descending`); `hoisted` puts
    /// its constants outside the region, as JAX's lowering does.
    fn jax_comparator(
        b: &mut FuncBuilder,
        types: &[ElementType],
        descending: &[bool],
        hoisted: bool,
    ) -> Region {
        let arg_types: Vec<Type> = types
            .iter()
            .flat_map(|&et| [t(&[], et), t(&[], et)])
            .collect();
        let mut outer = std::collections::HashMap::new();
        if hoisted {
            for &et in types {
                let et = if et == ElementType::C64 {
                    ElementType::F32
                } else {
                    et
                };
                if et.is_float() && !outer.contains_key(&et) {
                    let zero = float_constant(b, et, false);
                    let nan = float_constant(b, et, true);
                    outer.insert(et, (zero, nan));
                }
            }
        }
        b.region(&arg_types, |b, a| {
            // (x key, y key, float, descending), most significant first.
            let mut keys = Vec::new();
            for (k, &desc) in descending.iter().enumerate() {
                let et = types[k];
                let (x, y) = (a[2 * k], a[2 * k + 1]);
                match et {
                    ElementType::C64 => {
                        let f = ElementType::F32;
                        for kind in [OpKind::Real, OpKind::Imag] {
                            let xp = b.op(kind.clone(), &[x], t(&[], f), vec![]);
                            let yp = b.op(kind, &[y], t(&[], f), vec![]);
                            let h = outer.get(&f).copied();
                            let (xc, yc) = (canonical(b, xp, f, h), canonical(b, yp, f, h));
                            keys.push((xc, yc, true, desc));
                        }
                    }
                    _ if et.is_float() => {
                        let h = outer.get(&et).copied();
                        let (xc, yc) = (canonical(b, x, et, h), canonical(b, y, et, h));
                        keys.push((xc, yc, true, desc));
                    }
                    _ => keys.push((x, y, false, desc)),
                }
            }
            let strict =
                |b: &mut FuncBuilder, &(x, y, total, desc): &(ValueId, ValueId, bool, bool)| {
                    let dir = if desc {
                        ComparisonDirection::Gt
                    } else {
                        ComparisonDirection::Lt
                    };
                    compare_typed(b, dir, x, y, total)
                };
            let last = keys.last().expect("a key");
            let mut p = strict(b, last);
            for key in keys.iter().rev().skip(1) {
                let lt = strict(b, key);
                let eq = compare_typed(b, ComparisonDirection::Eq, key.0, key.1, key.2);
                let tie = b.op(OpKind::And, &[eq, p], t(&[], ElementType::Pred), vec![]);
                p = b.op(OpKind::Or, &[lt, tie], t(&[], ElementType::Pred), vec![]);
            }
            vec![p]
        })
    }

    /// A sort of `inputs` with JAX's comparator (constants hoisted out of it when `stable`,
    /// so that both forms are tested).
    fn jax_sort_module(inputs: &[&Literal], dim: i64, descending: &[bool], stable: bool) -> Module {
        let types: Vec<Type> = inputs.iter().map(|l| Type::Tensor(l.ty.clone())).collect();
        let ets: Vec<ElementType> = inputs.iter().map(|l| l.ty.element_type).collect();
        let (mut b, p) = FuncBuilder::new(&types);
        let region = jax_comparator(&mut b, &ets, descending, stable);
        let r = b.op_full(
            OpKind::Sort,
            &p,
            &types,
            vec![
                ("dimension", int(dim)),
                ("is_stable", Attribute::Bool(stable)),
            ],
            vec![region],
        );
        b.finish(&r)
    }

    /// Runs `module` by keys and through the comparator; asserts both give the same bytes.
    fn run_both_ways(module: &Module, args: &[Literal], what: &str) -> Vec<Literal> {
        let fast = crate::eval::run_function(module, "main", args).unwrap();
        GENERAL_ONLY.with(|g| g.set(true));
        let general = crate::eval::run_function(module, "main", args);
        GENERAL_ONLY.with(|g| g.set(false));
        let general = general.unwrap();
        assert_eq!(fast.len(), general.len(), "{what}");
        for (i, (f, g)) in fast.iter().zip(&general).enumerate() {
            assert_eq!(f.ty, g.ty, "{what}: result {i}");
            assert!(f.data == g.data, "{what}: result {i} differs");
        }
        fast
    }

    #[test]
    fn jax_comparators_are_read_as_keys() {
        use ElementType as E;
        let (mut b, _) = FuncBuilder::new(&[]);
        let none = |_| None;
        let one = jax_comparator(&mut b, &[E::F32, E::S32], &[false], false);
        assert_eq!(
            lexicographic_comparator(&one, &none).map(|k| k.len()),
            Some(1)
        );
        let three = jax_comparator(
            &mut b,
            &[E::F32, E::S32, E::C64],
            &[false, true, false],
            false,
        );
        assert_eq!(
            lexicographic_comparator(&three, &none).map(|k| k.len()),
            Some(4)
        );
        // Constants outside the region are read through `outer`.
        let hoisted = jax_comparator(&mut b, &[E::F32], &[false], true);
        assert!(lexicographic_comparator(&hoisted, &none).is_none());
        let zero_or_nan = |_| Some(f32s(&[], &[0.0]));
        assert!(lexicographic_comparator(&hoisted, &zero_or_nan).is_some());
        // `le` is no strict comparison, and keys of different operands are no key.
        let le = b.region(&[t(&[], E::S32), t(&[], E::S32)], |b, a| {
            vec![compare_typed(b, ComparisonDirection::Le, a[0], a[1], false)]
        });
        assert!(lexicographic_comparator(&le, &none).is_none());
        let mixed = b.region(&vec![t(&[], E::S32); 4], |b, a| {
            vec![compare_typed(b, ComparisonDirection::Lt, a[0], a[3], false)]
        });
        assert!(lexicographic_comparator(&mixed, &none).is_none());
    }

    #[test]
    fn sorting_by_keys_matches_the_comparator_for_every_element_type() {
        use ElementType as E;
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let types = [
            E::F32,
            E::F64,
            E::F16,
            E::BF16,
            E::S32,
            E::S8,
            E::S64,
            E::U8,
            E::U32,
            E::Pred,
            E::C64,
        ];
        let shapes: [(&[i64], i64); 7] = [
            (&[0], 0),
            (&[1], 0),
            (&[7], 0),
            (&[65], 0),
            (&[6, 17], 1),
            (&[17, 6], 0),
            (&[3, 0], 1),
        ];
        for et in types {
            for &(shape, dim) in &shapes {
                for desc in [false, true] {
                    let keys = random_literal(shape, et, &mut seed);
                    let n: i64 = shape.iter().product();
                    let payload = i32s(shape, &(0..n as i32).collect::<Vec<_>>());
                    let m = jax_sort_module(&[&keys, &payload], dim, &[desc], desc);
                    let what = format!("{et:?} {shape:?} dim {dim} descending {desc}");
                    run_both_ways(&m, &[keys, payload], &what);
                }
            }
        }
    }

    #[test]
    fn sorting_by_several_keys_matches_the_comparator() {
        use ElementType as E;
        let mut seed = 12345u64;
        for (shape, dim) in [(&[40][..], 0), (&[5, 23][..], 1), (&[300][..], 0)] {
            let ops = [
                random_literal(shape, E::F32, &mut seed),
                random_literal(shape, E::S32, &mut seed),
                random_literal(shape, E::F64, &mut seed),
                random_literal(shape, E::Pred, &mut seed),
                random_literal(shape, E::BF16, &mut seed),
            ];
            let refs: Vec<&Literal> = ops.iter().collect();
            for descending in [
                &[false, false][..],
                &[true, false],
                &[false, true, false],
                &[false, false, true, true],
                &[true, false, false, false, true],
            ] {
                let m = jax_sort_module(&refs, dim, descending, true);
                let what = format!("{shape:?} keys {descending:?}");
                run_both_ways(&m, &ops, &what);
            }
        }
    }

    #[test]
    fn long_rows_sort_by_radix_passes_as_the_comparator_does() {
        use ElementType as E;
        let mut seed = 777u64;
        for et in [E::F32, E::Pred, E::S8, E::F16] {
            let keys = random_literal(&[5000], et, &mut seed);
            let payload = i32s(&[5000], &(0..5000).collect::<Vec<_>>());
            for desc in [false, true] {
                let m = jax_sort_module(&[&keys, &payload], 0, &[desc], true);
                let what = format!("{et:?} descending {desc}");
                run_both_ways(&m, &[keys.clone(), payload.clone()], &what);
            }
        }
    }

    /// Sorts `inputs` along `dim`; `comparator` is `simple` (LT on operand 0), `total`
    /// (LT total order on operand 0), `jax` (JAX's canonicalizing comparator) or `scalar`
    /// (a non-elementwise comparator: a reshape before the compare).
    fn sort_module(inputs: &[&Literal], dim: i64, comparator: &str) -> Module {
        let types: Vec<Type> = inputs.iter().map(|l| Type::Tensor(l.ty.clone())).collect();
        let (mut b, p) = FuncBuilder::new(&types);
        let arg_types: Vec<Type> = inputs
            .iter()
            .flat_map(|l| [t(&[], l.ty.element_type), t(&[], l.ty.element_type)])
            .collect();
        let et = inputs[0].ty.element_type;
        let region = b.region(&arg_types, |b, a| {
            let lt = |b: &mut super::super::testing::FuncBuilder, x, y, total: bool| {
                let mut attrs = vec![(
                    "comparison_direction",
                    Attribute::ComparisonDirection(ComparisonDirection::Lt),
                )];
                if total {
                    attrs.push((
                        "compare_type",
                        Attribute::ComparisonType(ComparisonType::TotalOrder),
                    ));
                }
                b.op(OpKind::Compare, &[x, y], t(&[], ElementType::Pred), attrs)
            };
            match comparator {
                "simple" => vec![lt(b, a[0], a[1], false)],
                "total" => vec![lt(b, a[0], a[1], true)],
                "jax" => {
                    let s = t(&[], et);
                    let canon = |b: &mut super::super::testing::FuncBuilder, x| {
                        let zero = b.constant(&f32s(&[], &[0.0]));
                        let is_zero = b.compare(ComparisonDirection::Eq, x, zero, &[]);
                        let x1 = b.op(OpKind::Select, &[is_zero, zero, x], s.clone(), vec![]);
                        let is_nan = b.compare(ComparisonDirection::Ne, x, x, &[]);
                        let nan = b.constant(&f32s(&[], &[f32::NAN]));
                        b.op(OpKind::Select, &[is_nan, nan, x1], s.clone(), vec![])
                    };
                    let (x, y) = (canon(b, a[0]), canon(b, a[1]));
                    vec![lt(b, x, y, true)]
                }
                _ => {
                    let x = b.op(OpKind::Reshape, &[a[0]], t(&[1], et), vec![]);
                    let y = b.op(OpKind::Reshape, &[a[1]], t(&[1], et), vec![]);
                    let c = lt(b, x, y, false);
                    vec![b.op(OpKind::Reshape, &[c], t(&[], ElementType::Pred), vec![])]
                }
            }
        });
        let result_types: Vec<Type> = types.clone();
        let r = b.op_full(
            OpKind::Sort,
            &p,
            &result_types,
            vec![
                ("dimension", int(dim)),
                ("is_stable", Attribute::Bool(true)),
            ],
            vec![region],
        );
        b.finish(&r)
    }

    fn run(inputs: &[&Literal], dim: i64, comparator: &str) -> Vec<Literal> {
        let m = sort_module(inputs, dim, comparator);
        let args: Vec<Literal> = inputs.iter().map(|l| (*l).clone()).collect();
        crate::eval::run_function(&m, "main", &args).unwrap()
    }

    #[test]
    fn merge_sort_is_stable() {
        let keys = [3, 1, 3, 0, 1];
        let order = merge_sort(5, &mut |a, b| Ok(keys[a] < keys[b])).unwrap();
        assert_eq!(order, vec![3, 1, 4, 0, 2]);
    }

    #[test]
    fn argsort_keeps_equal_keys_in_order_on_every_path() {
        // Keys [2, 1, 2, 1, 0, 2]: stable order of positions is 4, 1, 3, 0, 2, 5.
        let keys = f32s(&[6], &[2.0, 1.0, 2.0, 1.0, 0.0, 2.0]);
        let idx = i32s(&[6], &[0, 1, 2, 3, 4, 5]);
        for comparator in ["simple", "total", "jax", "scalar"] {
            let r = run(&[&keys, &idx], 0, comparator);
            assert_eq!(
                to_f32(&r[0]),
                vec![0.0, 1.0, 1.0, 2.0, 2.0, 2.0],
                "{comparator}"
            );
            assert_eq!(to_i32(&r[1]), vec![4, 1, 3, 0, 2, 5], "{comparator}");
        }
    }

    #[test]
    fn total_order_puts_nan_last_and_negative_zero_first() {
        // Total order: -inf < -0 < +0 < 1 < NaN. JAX's comparator treats -0 as +0, so those
        // two keep their input order there (+0 came first).
        let x = f32s(&[5], &[f32::NAN, 0.0, 1.0, -0.0, f32::NEG_INFINITY]);
        let idx = i32s(&[5], &[0, 1, 2, 3, 4]);
        let r = run(&[&x, &idx], 0, "total");
        assert_eq!(to_i32(&r[1]), vec![4, 3, 1, 2, 0]);
        let r = run(&[&x, &idx], 0, "jax");
        assert_eq!(to_i32(&r[1]), vec![4, 1, 3, 2, 0]);
        assert!(to_f32(&r[0])[4].is_nan());
    }

    #[test]
    fn sorts_along_an_inner_dimension_of_a_matrix() {
        // Sorting each column of [[3, 1], [1, 2], [2, 0]] along dim 0.
        let x = i32s(&[3, 2], &[3, 1, 1, 2, 2, 0]);
        for comparator in ["simple", "scalar"] {
            let r = run(&[&x], 0, comparator);
            assert_eq!(to_i32(&r[0]), vec![1, 0, 2, 1, 3, 2], "{comparator}");
        }
        // A longer row through the network: 37 values, compared with a sorted copy.
        let v: Vec<f32> = (0..37).map(|i| ((i * 17) % 37) as f32 - 5.0).collect();
        let x = f32s(&[37], &v);
        let r = run(&[&x], 0, "jax");
        let mut want = v.clone();
        want.sort_by(f32::total_cmp);
        assert_eq!(to_f32(&r[0]), want);
    }
}
