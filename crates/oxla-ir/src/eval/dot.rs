//! `dot_general` and the legacy `dot`.
//!
//! Operands are permuted to `[batch, M, K]` and `[batch, K, N]`, converted to the storage of
//! the result element type, and multiplied with a plain loop whose inner loop runs over
//! contiguous rows of the right-hand side. Narrow float results accumulate in f32 and are
//! rounded once at the end.

use super::context::{extents, OpCx};
use super::convert::convert_array;
use super::element::{decode, encode, Array};
use super::elementwise::{ComplexOps, Int};
use super::shape::permute;
use crate::{IrError, Literal, TensorType};
use num_complex::Complex;

/// Multiply-accumulate for one storage type.
trait Mac: Copy {
    fn zero() -> Self;
    fn mac(acc: Self, a: Self, b: Self) -> Self;
}

macro_rules! mac_int {
    ($($t:ty),*) => {$(
        impl Mac for $t {
            fn zero() -> Self { 0 }
            fn mac(acc: Self, a: Self, b: Self) -> Self { acc.wadd(a.wmul(b)) }
        }
    )*};
}
mac_int!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! mac_float {
    ($($t:ty),*) => {$(
        impl Mac for $t {
            fn zero() -> Self { 0.0 }
            fn mac(acc: Self, a: Self, b: Self) -> Self { acc + a * b }
        }
        impl Mac for Complex<$t> {
            fn zero() -> Self { Complex::new(0.0, 0.0) }
            fn mac(acc: Self, a: Self, b: Self) -> Self { acc.add_(a.mul_(b)) }
        }
    )*};
}
mac_float!(f32, f64);

impl Mac for bool {
    fn zero() -> Self {
        false
    }
    fn mac(acc: Self, a: Self, b: Self) -> Self {
        acc | (a & b)
    }
}

/// `out[b, m, n] = sum_k a[b, m, k] * w[b, k, n]`.
fn matmul<T: Mac>(a: &[T], w: &[T], batch: usize, m: usize, k: usize, n: usize) -> Vec<T> {
    let mut out = vec![T::zero(); batch * m * n];
    if n == 0 {
        return out;
    }
    for b in 0..batch {
        for i in 0..m {
            let out_row = &mut out[(b * m + i) * n..(b * m + i + 1) * n];
            let a_row = &a[(b * m + i) * k..(b * m + i + 1) * k];
            for (kk, &aik) in a_row.iter().enumerate() {
                let w_row = &w[(b * k + kk) * n..(b * k + kk + 1) * n];
                for (o, &wv) in out_row.iter_mut().zip(w_row) {
                    *o = T::mac(*o, aik, wv);
                }
            }
        }
    }
    out
}

fn check_dims(cx: OpCx<'_>, name: &str, dims: &[i64], rank: usize) -> Result<Vec<usize>, IrError> {
    let dims = cx.dims(name, dims, rank)?;
    for (i, d) in dims.iter().enumerate() {
        if dims[..i].contains(d) {
            return Err(cx.invalid(format!("`{name}` repeats dimension {d}")));
        }
    }
    Ok(dims)
}

/// The general product with explicit batch and contracting dimensions.
fn dot_impl(
    cx: OpCx<'_>,
    a: &Literal,
    b: &Literal,
    lb: &[i64],
    rb: &[i64],
    lc: &[i64],
    rc: &[i64],
) -> Result<Literal, IrError> {
    let (ra, rb_rank) = (a.ty.rank(), b.ty.rank());
    let lb = check_dims(cx, "lhs_batching_dimensions", lb, ra)?;
    let rb = check_dims(cx, "rhs_batching_dimensions", rb, rb_rank)?;
    let lc = check_dims(cx, "lhs_contracting_dimensions", lc, ra)?;
    let rc = check_dims(cx, "rhs_contracting_dimensions", rc, rb_rank)?;
    if lb.len() != rb.len() || lc.len() != rc.len() {
        return Err(cx.invalid("batching and contracting dimension lists must pair up"));
    }
    let a_ext = extents(&a.ty.shape);
    let b_ext = extents(&b.ty.shape);
    for (&l, &r) in lb.iter().zip(&rb).chain(lc.iter().zip(&rc)) {
        if a_ext[l] != b_ext[r] {
            return Err(cx.invalid(format!(
                "lhs dimension {l} (size {}) does not match rhs dimension {r} (size {})",
                a_ext[l], b_ext[r]
            )));
        }
    }
    if lb.iter().any(|d| lc.contains(d)) || rb.iter().any(|d| rc.contains(d)) {
        return Err(cx.invalid("a dimension is both batching and contracting"));
    }
    let l_free: Vec<usize> = (0..ra)
        .filter(|d| !lb.contains(d) && !lc.contains(d))
        .collect();
    let r_free: Vec<usize> = (0..rb_rank)
        .filter(|d| !rb.contains(d) && !rc.contains(d))
        .collect();
    let batch: usize = lb.iter().map(|&d| a_ext[d]).product();
    let m: usize = l_free.iter().map(|&d| a_ext[d]).product();
    let k: usize = lc.iter().map(|&d| a_ext[d]).product();
    let n: usize = r_free.iter().map(|&d| b_ext[d]).product();
    let out_ty = cx.result_tensor(0)?;
    let want_shape: Vec<i64> = lb
        .iter()
        .map(|&d| a.ty.shape[d])
        .chain(l_free.iter().map(|&d| a.ty.shape[d]))
        .chain(r_free.iter().map(|&d| b.ty.shape[d]))
        .collect();
    if out_ty.shape != want_shape {
        return Err(cx.invalid(format!(
            "result type {out_ty} does not match the product shape {want_shape:?}"
        )));
    }
    let a_perm: Vec<usize> = lb.iter().chain(&l_free).chain(&lc).copied().collect();
    let b_perm: Vec<usize> = rb.iter().chain(&rc).chain(&r_free).copied().collect();
    let et = out_ty.element_type;
    let av = convert_array(&decode(&permute(a, &a_perm)?), et);
    let bv = convert_array(&decode(&permute(b, &b_perm)?), et);
    let out = match (av, bv) {
        (Array::Pred(x), Array::Pred(y)) => Array::Pred(matmul(&x, &y, batch, m, k, n)),
        (Array::S8(x), Array::S8(y)) => Array::S8(matmul(&x, &y, batch, m, k, n)),
        (Array::S16(x), Array::S16(y)) => Array::S16(matmul(&x, &y, batch, m, k, n)),
        (Array::S32(x), Array::S32(y)) => Array::S32(matmul(&x, &y, batch, m, k, n)),
        (Array::S64(x), Array::S64(y)) => Array::S64(matmul(&x, &y, batch, m, k, n)),
        (Array::U8(x), Array::U8(y)) => Array::U8(matmul(&x, &y, batch, m, k, n)),
        (Array::U16(x), Array::U16(y)) => Array::U16(matmul(&x, &y, batch, m, k, n)),
        (Array::U32(x), Array::U32(y)) => Array::U32(matmul(&x, &y, batch, m, k, n)),
        (Array::U64(x), Array::U64(y)) => Array::U64(matmul(&x, &y, batch, m, k, n)),
        (Array::F32(x), Array::F32(y)) => Array::F32(matmul(&x, &y, batch, m, k, n)),
        (Array::F64(x), Array::F64(y)) => Array::F64(matmul(&x, &y, batch, m, k, n)),
        (Array::C64(x), Array::C64(y)) => Array::C64(matmul(&x, &y, batch, m, k, n)),
        (Array::C128(x), Array::C128(y)) => Array::C128(matmul(&x, &y, batch, m, k, n)),
        _ => return Err(cx.invalid("operands do not convert to the result element type")),
    };
    encode(&out, TensorType::new(want_shape, et))
}

/// Evaluates `dot_general`.
pub(crate) fn dot_general(cx: OpCx<'_>, a: &Literal, b: &Literal) -> Result<Literal, IrError> {
    let lb = cx.i64s_or("lhs_batching_dimensions", Vec::new())?;
    let rb = cx.i64s_or("rhs_batching_dimensions", Vec::new())?;
    let lc = cx.i64s_or("lhs_contracting_dimensions", Vec::new())?;
    let rc = cx.i64s_or("rhs_contracting_dimensions", Vec::new())?;
    dot_impl(cx, a, b, &lb, &rb, &lc, &rc)
}

/// Evaluates the legacy `dot` (vector/matrix products contracting lhs's last dimension with
/// rhs's first).
pub(crate) fn dot(cx: OpCx<'_>, a: &Literal, b: &Literal) -> Result<Literal, IrError> {
    let (ra, rb) = (a.ty.rank(), b.ty.rank());
    if !(1..=2).contains(&ra) || !(1..=2).contains(&rb) {
        return Err(cx.invalid("operands must be vectors or matrices"));
    }
    dot_impl(cx, a, b, &[], &[], &[ra as i64 - 1], &[0])
}
