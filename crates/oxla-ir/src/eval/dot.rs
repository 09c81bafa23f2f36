//! `dot_general` and the legacy `dot`.
//!
//! Float results (f64, f32 and the narrower floats, which accumulate in f32 and are rounded
//! once at the end) go through the blocked kernels of [`gemm`](super::gemm): each operand
//! is viewed as `[batch, M, K]` / `[batch, K, N]` through strides when its batch, free and
//! contracting dimensions each collapse to one stride (transposes need no copy), and is
//! permuted into that order otherwise.
//!
//! Every other type is permuted to `[batch, M, K]` and `[batch, K, N]`, converted to the
//! storage of the result element type, and multiplied with a plain loop whose inner loop
//! runs over contiguous rows of the right-hand side.

use super::context::{extents, strides, OpCx};
use super::convert::convert_array;
use super::element::{decode, encode, storage_of, Array, Storage};
use super::elementwise::{ComplexOps, Int};
use super::gemm::{group_stride, matmul_into, Strided};
use super::shape::permute;
use super::threads;
use super::typed::{self, view_bytes, ArrayFloat};
use crate::{ElementType, IrError, Literal, TensorType};
use num_complex::Complex;
use std::borrow::Cow;

/// Multiply-accumulate for one storage type (shared with `convolution`).
pub(super) trait Mac: Copy {
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
            #[inline(always)]
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
    let shape = Shape { batch, m, k, n };
    let out_ty = TensorType::new(want_shape.clone(), et);
    match storage_of(et) {
        Storage::F32 => {
            let lhs = float_operand::<f32>(a, et, [&lb, &l_free, &lc])?;
            let rhs = float_operand::<f32>(b, et, [&rb, &rc, &r_free])?;
            if let Some(res) = float_product(shape, lhs, rhs, out_ty.clone())? {
                return Ok(res);
            }
        }
        Storage::F64 => {
            let lhs = float_operand::<f64>(a, et, [&lb, &l_free, &lc])?;
            let rhs = float_operand::<f64>(b, et, [&rb, &rc, &r_free])?;
            if let Some(res) = float_product(shape, lhs, rhs, out_ty.clone())? {
                return Ok(res);
            }
        }
        _ => {}
    }
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

/// The sizes of a batched product `[batch, m, k] x [batch, k, n]`.
#[derive(Clone, Copy)]
struct Shape {
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
}

/// A float operand as `T` elements with the strides of its three dimension groups
/// (batch, then the two matrix dimensions in product order).
struct FloatOperand<'a, T: Clone> {
    data: Cow<'a, [T]>,
    batch_stride: usize,
    matrix: Strided,
}

/// Views `lit` as a batch of matrices whose dimension groups are `groups`, converting it to
/// `T` (the storage of result type `et`) and permuting it only when a group does not
/// collapse to one stride.
fn float_operand<'a, T: ArrayFloat>(
    lit: &'a Literal,
    et: ElementType,
    groups: [&[usize]; 3],
) -> Result<FloatOperand<'a, T>, IrError> {
    let ext = extents(&lit.ty.shape);
    let st = strides(&ext);
    let collapsed = (
        group_stride(groups[0], &ext, &st),
        group_stride(groups[1], &ext, &st),
        group_stride(groups[2], &ext, &st),
    );
    let to_t = |lit: &Literal| -> Result<Vec<T>, IrError> {
        T::from_array(convert_array(&decode(lit), et)).ok_or_else(|| IrError::Eval {
            detail: format!("internal: {et} operand did not convert to its storage"),
        })
    };
    if let (Some(bs), Some(rs), Some(cs)) = collapsed {
        let data = if lit.ty.element_type == T::ET {
            view_bytes(&lit.data)
        } else {
            Cow::Owned(to_t(lit)?)
        };
        return Ok(FloatOperand {
            data,
            batch_stride: bs,
            matrix: Strided {
                offset: 0,
                row: rs,
                col: cs,
            },
        });
    }
    let perm: Vec<usize> = groups.iter().flat_map(|g| g.iter().copied()).collect();
    let permuted = permute(lit, &perm)?;
    let size = |g: &[usize]| g.iter().map(|&d| ext[d]).product::<usize>();
    let (rows, cols) = (size(groups[1]), size(groups[2]));
    Ok(FloatOperand {
        data: Cow::Owned(to_t(&permuted)?),
        batch_stride: rows * cols,
        matrix: Strided {
            offset: 0,
            row: cols,
            col: 1,
        },
    })
}

/// The product through the blocked kernels, or `None` when a view does not fit (the caller
/// then takes the plain loop).
fn float_product<T: ArrayFloat>(
    s: Shape,
    a: FloatOperand<'_, T>,
    b: FloatOperand<'_, T>,
    ty: TensorType,
) -> Result<Option<Literal>, IrError> {
    // The products of batch entries `first..` into `out`, each threaded or not.
    let products = |first: usize, out: &mut [T], parallel: bool| -> bool {
        out.chunks_exact_mut(s.m * s.n)
            .zip(first..)
            .all(|(chunk, i)| {
                let sa = Strided {
                    offset: i * a.batch_stride,
                    ..a.matrix
                };
                let sb = Strided {
                    offset: i * b.batch_stride,
                    ..b.matrix
                };
                matmul_into(s.m, s.k, s.n, &a.data, sa, &b.data, sb, chunk, parallel)
            })
    };
    let product = |out: &mut [T]| -> bool {
        if s.m * s.n == 0 {
            return true;
        }
        let threads = threads::count();
        let work = s.batch.saturating_mul(s.m * s.n).saturating_mul(s.k);
        if !split_batch(s.batch, threads, work) {
            return products(0, out, true);
        }
        // Whole products per thread: no hand-offs inside each (small) product.
        let per = s.batch.div_ceil(threads);
        let mut ok = vec![true; s.batch.div_ceil(per)];
        let parts = out
            .chunks_mut(per * s.m * s.n)
            .zip(ok.iter_mut())
            .enumerate();
        threads::for_each(parts, |(t, (part, ok))| {
            *ok = products(t * per, part, false)
        });
        ok.iter().all(|&ok| ok)
    };
    let n = s.batch * s.m * s.n;
    if ty.element_type == T::ET {
        // Written in place into a (pooled) result buffer: the kernels write every element
        // (a `false` discards the buffer).
        let mut done = false;
        let lit = typed::build_overwritten::<T>(ty, n, |out| done = product(out))?;
        return Ok(done.then_some(lit));
    }
    let mut out = vec![T::ZERO; n];
    if !product(&mut out) {
        return Ok(None);
    }
    encode(&T::into_array(out), ty).map(Some)
}

/// Whether a batch of `batch` products splits over `threads` threads by whole products
/// (each on one thread) rather than threading each product: when every thread gets the
/// same number of them, or enough that the last thread's shortfall is small, and the
/// `work` (multiply-adds in all) is worth a hand-off.
fn split_batch(batch: usize, threads: usize, work: usize) -> bool {
    threads > 1
        && batch >= threads
        && (batch.is_multiple_of(threads) || batch >= 4 * threads)
        && work >= super::gemm::THREADED_PRODUCT
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

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::{ElementType, OpKind};

    /// A batched product whose contracting dimensions are not innermost (strided views on
    /// both sides) and whose lhs needs a permute (batch dimension in the middle) gives the
    /// same sums on the float path as on the exact integer path.
    #[test]
    fn strided_and_permuted_float_products_match_the_integer_loop() {
        let lv: Vec<i32> = (0..24).map(|i| (i * 7 % 11) - 5).collect();
        let rv: Vec<i32> = (0..30).map(|i| (i * 5 % 7) - 3).collect();
        // lhs [3, 2, 4]: contracting 0, batch 1, free 2. rhs [2, 5, 3]: batch 0, contracting 2.
        let attrs = || {
            vec![
                ("lhs_batching_dimensions", i64s(&[1])),
                ("rhs_batching_dimensions", i64s(&[0])),
                ("lhs_contracting_dimensions", i64s(&[0])),
                ("rhs_contracting_dimensions", i64s(&[2])),
            ]
        };
        let want = run_op(
            OpKind::DotGeneral,
            &[i32s(&[3, 2, 4], &lv), i32s(&[2, 5, 3], &rv)],
            t(&[2, 4, 5], ElementType::S32),
            attrs(),
        )
        .unwrap();
        let as_f32 = |v: &[i32]| v.iter().map(|&x| x as f32).collect::<Vec<_>>();
        let got = run_op(
            OpKind::DotGeneral,
            &[
                f32s(&[3, 2, 4], &as_f32(&lv)),
                f32s(&[2, 5, 3], &as_f32(&rv)),
            ],
            t(&[2, 4, 5], ElementType::F32),
            attrs(),
        )
        .unwrap();
        assert_eq!(to_f32(&got), as_f32(&to_i32(&want)));
    }

    /// Batches of products split over the threads (whole products per thread, each run
    /// alone) give the bits of every batch entry's product computed on its own, and the
    /// sums of the definition; batch counts that do not split evenly included.
    #[test]
    fn batches_split_over_threads_give_each_products_bits() {
        // (batch, m, k, n, rhs transposed: `q . k^T`, contracting both last dimensions)
        for (batch, m, k, n, transposed) in [
            (8, 40, 24, 36, true),
            (9, 33, 17, 20, false),
            (3, 64, 40, 48, true),
            (16, 16, 16, 16, false),
            (2, 70, 90, 30, true),
        ] {
            let rhs_shape = if transposed {
                [batch, n, k]
            } else {
                [batch, k, n]
            };
            let lv: Vec<f32> = (0..batch * m * k)
                .map(|i| ((i * 7) % 23) as f32 * 0.25 - 2.0)
                .collect();
            let rv: Vec<f32> = (0..batch * k * n)
                .map(|i| ((i * 5) % 19) as f32 * 0.5 - 4.0)
                .collect();
            let rhs_contracting = if transposed { 2 } else { 1 };
            let batched = run_op(
                OpKind::DotGeneral,
                &[
                    f32s(&[batch as i64, m as i64, k as i64], &lv),
                    f32s(&rhs_shape.map(|d| d as i64), &rv),
                ],
                t(&[batch as i64, m as i64, n as i64], ElementType::F32),
                vec![
                    ("lhs_batching_dimensions", i64s(&[0])),
                    ("rhs_batching_dimensions", i64s(&[0])),
                    ("lhs_contracting_dimensions", i64s(&[2])),
                    ("rhs_contracting_dimensions", i64s(&[rhs_contracting])),
                ],
            )
            .unwrap();
            let got = to_f32(&batched);
            for b in 0..batch {
                let lhs = &lv[b * m * k..(b + 1) * m * k];
                let rhs = &rv[b * k * n..(b + 1) * k * n];
                let alone = run_op(
                    OpKind::DotGeneral,
                    &[
                        f32s(&[m as i64, k as i64], lhs),
                        f32s(
                            &rhs_shape[1..].iter().map(|&d| d as i64).collect::<Vec<_>>(),
                            rhs,
                        ),
                    ],
                    t(&[m as i64, n as i64], ElementType::F32),
                    vec![
                        ("lhs_contracting_dimensions", i64s(&[1])),
                        ("rhs_contracting_dimensions", i64s(&[rhs_contracting - 1])),
                    ],
                )
                .unwrap();
                let entry = &got[b * m * n..(b + 1) * m * n];
                let alone = to_f32(&alone);
                assert!(
                    entry
                        .iter()
                        .zip(&alone)
                        .all(|(x, y)| x.to_bits() == y.to_bits()),
                    "batch {batch} entry {b}"
                );
                for i in 0..m {
                    for j in 0..n {
                        let exact: f64 = (0..k)
                            .map(|p| {
                                let r = if transposed {
                                    rhs[j * k + p]
                                } else {
                                    rhs[p * n + j]
                                };
                                f64::from(lhs[i * k + p]) * f64::from(r)
                            })
                            .sum();
                        let g = f64::from(entry[i * n + j]);
                        assert!((g - exact).abs() <= 1e-3 * exact.abs().max(1.0));
                    }
                }
            }
        }
    }
}
