//! `chlo.top_k`: the k largest elements along the last dimension and their indices.
//!
//! Elements are ordered as XLA's top-k orders them: floats by total order (so NaN is
//! largest and -0 below +0), complex numbers lexicographically; equal elements keep their
//! original order, so the lower index comes first.

use super::context::OpCx;
use super::convert::convert_array;
use super::element::{decode, encode, Array};
use super::sort::{merge_sort, native_cmp};
use crate::{IrError, Literal, TensorType};
use std::cmp::Ordering;

/// Evaluates `chlo.top_k`; returns the values and the indices.
pub(crate) fn top_k(cx: OpCx<'_>, x: &Literal) -> Result<Vec<Literal>, IrError> {
    cx.expect_results(2)?;
    let rank = x.ty.rank();
    if rank == 0 {
        return Err(cx.invalid("the operand must have rank 1 or more"));
    }
    let len = x.ty.shape[rank - 1].max(0) as usize;
    let k = usize::try_from(cx.int("k")?)
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
    let cmp = native_cmp(decode(x), true);
    let esize = x.ty.element_type.byte_size();
    let mut data = Vec::with_capacity(n_rows * k * esize);
    let mut indices = Vec::with_capacity(n_rows * k);
    for r in 0..n_rows {
        let base = r * len;
        let order = merge_sort(len, &mut |a, b| {
            Ok(cmp(base + a, base + b) == Some(Ordering::Greater))
        })?;
        for &i in &order[..k] {
            let at = (base + i) * esize;
            data.extend_from_slice(&x.data[at..at + esize]);
            indices.push(i as i64);
        }
    }
    let idx = convert_array(&Array::S64(indices), indices_ty.element_type);
    Ok(vec![
        Literal::new(values_ty.clone(), data)?,
        encode(&idx, TensorType::new(want, indices_ty.element_type))?,
    ])
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
}
