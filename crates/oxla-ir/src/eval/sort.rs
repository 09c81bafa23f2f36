//! `sort`: sorts several operands along one dimension with a comparator region.
//!
//! The sort dimension is moved innermost, each row is sorted as a permutation of positions,
//! and the permutation is applied to every operand. Three strategies:
//! - a comparator that is one `compare` of the two arguments of one operand runs natively
//!   (integers, floats in IEEE or total order, complex), with a stable merge sort;
//! - an elementwise comparator (such as JAX's, which canonicalizes NaN and -0 before a
//!   total-order compare) runs on whole batches of pairs through a bitonic network, with
//!   ties broken by position so the result is the stable order;
//! - any other comparator is called once per comparison, with a stable merge sort.
//!
//! The merge sort and the network never assume the comparator is a consistent order, so a
//! strange comparator yields some permutation, never a failure.

use super::body::{region, take};
use super::context::{extents, OpCx};
use super::element::{decode, Array};
use super::reduce::lane_safe;
use super::shape::permute;
use super::{tensor_operand, Frame, Interp, Value};
use crate::attrs::{ComparisonDirection, ComparisonType};
use crate::{Attribute, IrError, Literal, OpKind, Region, TensorType};
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
                    for row in &rows {
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
                        for row in &rows {
                            args.push(take(row, &[base + a], true));
                            args.push(take(row, &[base + b], true));
                        }
                        Ok(self.call_predicate(frame, cx, comparator, args, 1)?[0])
                    };
                    res.push(merge_sort(len, &mut less)?);
                }
                res
            };
        let order: Vec<usize> = perms
            .iter()
            .enumerate()
            .flat_map(|(r, p)| p.iter().map(move |&i| r * len + i))
            .collect();
        let mut out = Vec::with_capacity(n);
        for row in &rows {
            let sorted = take(row, &order, false);
            let sorted = Literal::from_shared(
                TensorType::new(row.ty.shape.clone(), row.ty.element_type),
                sorted.data,
            )?;
            out.push(Value::Tensor(permute(&sorted, &inverse)?));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::merge_sort;
    use crate::attrs::{ComparisonDirection, ComparisonType};
    use crate::{Attribute, ElementType, Literal, Module, OpKind, Type};

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
