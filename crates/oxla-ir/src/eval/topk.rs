//! `chlo.top_k`: the k largest elements along the last dimension and their indices.
//!
//! Elements are ordered as XLA's top-k orders them: floats by total order (so NaN is
//! largest and -0 below +0), complex numbers lexicographically; equal elements keep their
//! original order, so the lower index comes first.
//!
//! Real and integer elements become unsigned keys in that order, packed with their inverted
//! index so that every element of a row is distinct and larger means earlier; each row
//! then keeps its k largest in a small sorted buffer (or by a selection, for large k)
//! instead of sorting the whole row. Complex rows are sorted with the comparison.

use super::context::OpCx;
use super::convert::convert_array;
use super::element::{decode, encode, Array};
use super::sort::{merge_sort, native_cmp};
use super::sort_keys::gather_elements;
use super::sort_keys::order_keys;
use crate::{Attribute, IrError, Literal, TensorType};
use std::cmp::Ordering;

/// Evaluates `chlo.top_k`; returns the values and the indices.
pub(crate) fn top_k(cx: OpCx<'_>, x: &Literal) -> Result<Vec<Literal>, IrError> {
    top_k_of(cx, x, cx.int("k")?)
}

/// Evaluates a `stablehlo.composite "chlo.top_k"` (how `chlo.top_k` reaches a plugin in a
/// portable artifact) natively instead of through its decomposition, a stable sort of
/// whole rows in the same order, then a slice; `None` for any other composite.
pub(crate) fn top_k_composite(cx: OpCx<'_>, x: &Literal) -> Option<Result<Vec<Literal>, IrError>> {
    match cx.op.attr("name") {
        Some(Attribute::String(name)) if name == "chlo.top_k" => {}
        _ => return None,
    }
    let Some(Attribute::Dictionary(attrs)) = cx.op.attr("composite_attributes") else {
        return None;
    };
    let k = attrs
        .iter()
        .find(|(name, _)| name == "k")
        .and_then(|(_, a)| i64::try_from(a.as_int()?).ok())?;
    Some(top_k_of(cx, x, k))
}

/// The `k` largest elements of each last-dimension row of `x` and their indices.
fn top_k_of(cx: OpCx<'_>, x: &Literal, k: i64) -> Result<Vec<Literal>, IrError> {
    cx.expect_results(2)?;
    let rank = x.ty.rank();
    if rank == 0 {
        return Err(cx.invalid("the operand must have rank 1 or more"));
    }
    let len = x.ty.shape[rank - 1].max(0) as usize;
    let k = usize::try_from(k)
        .ok()
        .filter(|&k| k <= len)
        .ok_or_else(|| cx.invalid(format!("k must lie in [0, {len}]")))?;
    let values_ty = cx.result_tensor(0)?;
    let indices_ty = cx.result_tensor(1)?;
    let mut want = x.ty.shape.clone();
    want[rank - 1] = k as i64;
    if values_ty.shape != want
        || indices_ty.shape != want
        || values_ty.element_type != x.ty.element_type
    {
        return Err(cx.invalid(format!("results must have shape {want:?}")));
    }
    if !indices_ty.element_type.is_int() {
        return Err(cx.invalid("indices must be integers"));
    }
    let n_rows =
        x.ty.num_elements()
            .unwrap_or(0)
            .checked_div(len)
            .unwrap_or(0);
    let esize = x.ty.element_type.byte_size();
    let arr = decode(x);
    let order = match order_keys(&arr) {
        Some((keys, bits)) => top_positions(&keys, bits, n_rows, len, k),
        None => {
            let cmp = native_cmp(arr, true);
            let mut order = Vec::with_capacity(n_rows * k);
            for r in 0..n_rows {
                let base = r * len;
                let row = merge_sort(len, &mut |a, b| {
                    Ok(cmp(base + a, base + b) == Some(Ordering::Greater))
                })?;
                order.extend(row[..k].iter().map(|&i| base + i));
            }
            order
        }
    };
    let data = gather_elements(&x.data, esize, &order);
    let indices: Vec<i64> = order.iter().map(|&p| (p % len.max(1)) as i64).collect();
    let idx = convert_array(&Array::S64(indices), indices_ty.element_type);
    Ok(vec![
        Literal::new(values_ty.clone(), data)?,
        encode(&idx, TensorType::new(want, indices_ty.element_type))?,
    ])
}

/// Rows of at most this many wanted elements keep them in a sorted buffer.
const BUFFER_MAX: usize = 32;

/// The flat positions of the `k` largest keys of every row, largest first and equal keys by
/// position; `keys` use `bits` low bits.
fn top_positions(keys: &[u64], bits: u32, n_rows: usize, len: usize, k: usize) -> Vec<usize> {
    let mut order = Vec::with_capacity(n_rows * k);
    if k == 0 {
        return order;
    }
    let mut top = Vec::with_capacity(k.min(BUFFER_MAX) + 1);
    for r in 0..n_rows {
        let base = r * len;
        let row = &keys[base..base + len];
        // Larger packed value: larger key, then lower index.
        if bits <= 32 && u32::try_from(len).is_ok() {
            let packed = row
                .iter()
                .enumerate()
                .map(|(i, &key)| key << 32 | u64::from(u32::MAX - i as u32));
            largest(packed, k, &mut top);
            order.extend(top.iter().map(|&p| base + (u32::MAX - p as u32) as usize));
        } else {
            let packed = row
                .iter()
                .enumerate()
                .map(|(i, &key)| u128::from(key) << 64 | u128::from(u64::MAX - i as u64));
            let mut top = Vec::new();
            largest(packed, k, &mut top);
            order.extend(top.iter().map(|&p| base + (u64::MAX - p as u64) as usize));
        }
    }
    order
}

/// The `k` largest of the distinct `values` into `top`, largest first.
fn largest<P: Ord + Copy>(values: impl Iterator<Item = P>, k: usize, top: &mut Vec<P>) {
    top.clear();
    if k > BUFFER_MAX {
        top.extend(values);
        if k < top.len() {
            top.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
            top.truncate(k);
        }
        top.sort_unstable_by(|a, b| b.cmp(a));
        return;
    }
    for v in values {
        if top.len() == k {
            if v <= top[k - 1] {
                continue;
            }
            top.pop();
        }
        let at = top.partition_point(|&t| t > v);
        top.insert(at, v);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::{ElementType, OpKind, Type};

    #[test]
    fn top_k_takes_largest_first_with_ties_by_index_and_nan_on_top() {
        let x = f32s(&[2, 4], &[1.0, 3.0, 3.0, 2.0, f32::NAN, -0.0, 0.0, 5.0]);
        let (mut b, p) = FuncBuilder::new(&[Type::Tensor(x.ty.clone())]);
        let r = b.op_full(
            OpKind::ChloTopK,
            &p,
            &[t(&[2, 3], ElementType::F32), t(&[2, 3], ElementType::S32)],
            vec![("k", int(3))],
            vec![],
        );
        let m = b.finish(&r);
        let out = crate::eval::run_function(&m, "main", &[x]).unwrap();
        let v = to_f32(&out[0]);
        assert_eq!(&v[..3], &[3.0, 3.0, 2.0]);
        assert!(v[3].is_nan());
        assert_eq!(&v[4..], &[5.0, 0.0]);
        assert_eq!(to_i32(&out[1]), vec![1, 2, 3, 0, 3, 2]);
    }
    #[test]
    fn top_k_by_keys_matches_a_sort_of_each_row() {
        use super::super::element::decode;
        use super::super::sort::tests::random_literal;
        use super::super::sort::{merge_sort, native_cmp};
        use std::cmp::Ordering;
        use ElementType as E;
        let mut seed = 99u64;
        for et in [
            E::F32,
            E::F64,
            E::F16,
            E::BF16,
            E::S32,
            E::U8,
            E::S64,
            E::Pred,
        ] {
            for &(rows, len) in &[(1usize, 1usize), (3, 5), (4, 40), (2, 100), (5, 0)] {
                for k in [0, 1, 3, 8, 33, 40, 100] {
                    if k > len {
                        continue;
                    }
                    let x = random_literal(&[rows as i64, len as i64], et, &mut seed);
                    let (mut b, p) = FuncBuilder::new(&[Type::Tensor(x.ty.clone())]);
                    let shape = [rows as i64, k as i64];
                    let r = b.op_full(
                        OpKind::ChloTopK,
                        &p,
                        &[t(&shape, et), t(&shape, ElementType::S32)],
                        vec![("k", int(k as i64))],
                        vec![],
                    );
                    let m = b.finish(&r);
                    let out =
                        crate::eval::run_function(&m, "main", std::slice::from_ref(&x)).unwrap();
                    let cmp = native_cmp(decode(&x), true);
                    let esize = et.byte_size();
                    let (mut values, mut indices) = (Vec::new(), Vec::new());
                    for r in 0..rows {
                        let base = r * len;
                        let order = merge_sort(len, &mut |a, b| {
                            Ok(cmp(base + a, base + b) == Some(Ordering::Greater))
                        })
                        .unwrap();
                        for &i in &order[..k] {
                            let at = (base + i) * esize;
                            values.extend_from_slice(&x.data[at..at + esize]);
                            indices.push(i as i32);
                        }
                    }
                    let what = format!("{et:?} {rows}x{len} k {k}");
                    assert!(out[0].data.as_slice() == values.as_slice(), "{what}");
                    assert_eq!(to_i32(&out[1]), indices, "{what}");
                }
            }
        }
    }
    /// `chlo.top_k` as a composite whose decomposition is JAX's: a stable sort of whole
    /// rows with `gt` in total order, then slices.
    fn top_k_composite_module(x: &crate::Literal, k: i64) -> crate::Module {
        use crate::attrs::{ComparisonDirection, ComparisonType};
        use crate::{Attribute, Module};
        let et = x.ty.element_type;
        let [rows, len] = x.ty.shape[..] else {
            panic!("a matrix")
        };
        let out = [t(&[rows, k], et), t(&[rows, k], ElementType::S32)];
        let (mut d, p) = FuncBuilder::new(&[Type::Tensor(x.ty.clone())]);
        let iota = d.op(
            OpKind::Iota,
            &[],
            t(&[rows, len], ElementType::S32),
            vec![("iota_dimension", int(1))],
        );
        let cmp = d.region(
            &[
                t(&[], et),
                t(&[], et),
                t(&[], ElementType::S32),
                t(&[], ElementType::S32),
            ],
            |b, a| {
                vec![b.op(
                    OpKind::Compare,
                    &[a[0], a[1]],
                    t(&[], ElementType::Pred),
                    vec![
                        (
                            "comparison_direction",
                            Attribute::ComparisonDirection(ComparisonDirection::Gt),
                        ),
                        (
                            "compare_type",
                            Attribute::ComparisonType(ComparisonType::TotalOrder),
                        ),
                    ],
                )]
            },
        );
        let sorted = d.op_full(
            OpKind::Sort,
            &[p[0], iota],
            &[t(&[rows, len], et), t(&[rows, len], ElementType::S32)],
            vec![("dimension", int(1)), ("is_stable", Attribute::Bool(true))],
            vec![cmp],
        );
        let slice = |d: &mut FuncBuilder, v, ty: &Type| {
            d.op(
                OpKind::Slice,
                &[v],
                ty.clone(),
                vec![
                    ("start_indices", i64s(&[0, 0])),
                    ("limit_indices", i64s(&[rows, k])),
                    ("strides", i64s(&[1, 1])),
                ],
            )
        };
        let values = slice(&mut d, sorted[0], &out[0]);
        let indices = slice(&mut d, sorted[1], &out[1]);
        let mut decomposition = d.finish_function(&[values, indices]);
        decomposition.name = "top_k_impl".to_string();
        let (mut b, p) = FuncBuilder::new(&[Type::Tensor(x.ty.clone())]);
        let r = b.op_full(
            OpKind::Composite,
            &p,
            &out,
            vec![
                ("name", Attribute::String("chlo.top_k".to_string())),
                (
                    "composite_attributes",
                    Attribute::Dictionary(vec![("k".to_string(), int(k))]),
                ),
                (
                    "decomposition",
                    Attribute::SymbolRef("top_k_impl".to_string()),
                ),
            ],
            vec![],
        );
        let main = b.finish_function(&r);
        Module {
            functions: vec![main, decomposition],
            ..Module::default()
        }
    }

    #[test]
    fn top_k_composites_run_natively_with_their_decompositions_results() {
        use super::super::sort::tests::random_literal;
        use ElementType as E;
        let mut seed = 5u64;
        for et in [E::F32, E::BF16, E::F16, E::F64, E::S32, E::U8] {
            for (rows, len, k) in [(3, 40, 8), (2, 7, 7), (4, 1, 1), (2, 9, 0)] {
                let x = random_literal(&[rows, len], et, &mut seed);
                let m = top_k_composite_module(&x, k);
                let native =
                    crate::eval::run_function(&m, "main", std::slice::from_ref(&x)).unwrap();
                let sorted = crate::eval::run_function(&m, "top_k_impl", &[x]).unwrap();
                assert_eq!(native, sorted, "{et:?} {rows}x{len} k {k}");
            }
        }
    }
}
