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
use super::gemm::{group_stride, matmul_add_into, matmul_into, Strided};
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

/// A checked product: its dimension groups per operand, its sizes and its result type.
struct Product {
    lb: Vec<usize>,
    rb: Vec<usize>,
    lc: Vec<usize>,
    rc: Vec<usize>,
    l_free: Vec<usize>,
    r_free: Vec<usize>,
    shape: Shape,
    out_ty: TensorType,
}

/// Checks the product of `a` and `b` with batch dimensions `lb`/`rb` and contracting
/// dimensions `lc`/`rc` against each other and the op's result type.
fn check_product(
    cx: OpCx<'_>,
    a: &Literal,
    b: &Literal,
    lb: &[i64],
    rb: &[i64],
    lc: &[i64],
    rc: &[i64],
) -> Result<Product, IrError> {
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
    Ok(Product {
        lb,
        rb,
        lc,
        rc,
        l_free,
        r_free,
        shape: Shape { batch, m, k, n },
        out_ty: TensorType::new(want_shape, out_ty.element_type),
    })
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
    let Product {
        lb,
        rb,
        lc,
        rc,
        l_free,
        r_free,
        shape,
        out_ty,
    } = check_product(cx, a, b, lb, rb, lc, rc)?;
    let Shape { batch, m, k, n } = shape;
    let a_perm: Vec<usize> = lb.iter().chain(&l_free).chain(&lc).copied().collect();
    let b_perm: Vec<usize> = rb.iter().chain(&rc).chain(&r_free).copied().collect();
    let et = out_ty.element_type;
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
    encode(&out, out_ty)
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
    let n = s.batch * s.m * s.n;
    if ty.element_type == T::ET {
        // Written in place into a (pooled) result buffer: the kernels write every element
        // (a `false` discards the buffer).
        let mut done = false;
        let lit = typed::build_overwritten::<T>(ty, n, |out| {
            done = batched_product(s, &a, &b, out, false)
        })?;
        return Ok(done.then_some(lit));
    }
    let mut out = vec![T::ZERO; n];
    if !batched_product(s, &a, &b, &mut out, false) {
        return Ok(None);
    }
    encode(&T::into_array(out), ty).map(Some)
}

/// `out = a . b` (or `out += a . b` when `accumulate`) for every batch entry, `out` holding
/// the `[batch, m, n]` result row-major: the entries split over the threads when there are
/// enough of them, each product threaded otherwise. `false` when a view does not fit.
fn batched_product<T: ArrayFloat>(
    s: Shape,
    a: &FloatOperand<'_, T>,
    b: &FloatOperand<'_, T>,
    out: &mut [T],
    accumulate: bool,
) -> bool {
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
                let (x, y) = (&a.data, &b.data);
                if accumulate {
                    matmul_add_into(s.m, s.k, s.n, x, sa, y, sb, chunk, parallel)
                } else {
                    matmul_into(s.m, s.k, s.n, x, sa, y, sb, chunk, parallel)
                }
            })
    };
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
    threads::all_chunks(out, per * s.m * s.n, |t, part| {
        products(t * per, part, false)
    })
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
    let [lb, rb, lc, rc] = dimension_numbers(cx)?;
    dot_impl(cx, a, b, &lb, &rb, &lc, &rc)
}

/// `dot_general`'s lhs and rhs batching, then lhs and rhs contracting dimensions (absent
/// lists empty).
fn dimension_numbers(cx: OpCx<'_>) -> Result<[Vec<i64>; 4], IrError> {
    Ok([
        cx.i64s_or("lhs_batching_dimensions", Vec::new())?,
        cx.i64s_or("rhs_batching_dimensions", Vec::new())?,
        cx.i64s_or("lhs_contracting_dimensions", Vec::new())?,
        cx.i64s_or("rhs_contracting_dimensions", Vec::new())?,
    ])
}

/// Adds `dot_general(a, b)` (the op of `cx`) to `acc` in `acc`'s own bytes: the product's
/// kernels read `acc` as their starting sums. Only for f32 and f64 products whose result type
/// is `acc`'s; `Ok(false)`, with nothing written, for any other.
pub(crate) fn dot_general_into(
    cx: OpCx<'_>,
    a: &Literal,
    b: &Literal,
    acc: &mut Literal,
) -> Result<bool, IrError> {
    let [lb, rb, lc, rc] = dimension_numbers(cx)?;
    let product = check_product(cx, a, b, &lb, &rb, &lc, &rc)?;
    if product.out_ty != acc.ty || !cfg!(target_endian = "little") {
        return Ok(false);
    }
    match product.out_ty.element_type {
        ElementType::F32 => add_product::<f32>(&product, a, b, acc),
        ElementType::F64 => add_product::<f64>(&product, a, b, acc),
        _ => Ok(false),
    }
}

/// [`dot_general_into`] for storage `T` (the result's element type).
fn add_product<T: ArrayFloat>(
    p: &Product,
    a: &Literal,
    b: &Literal,
    acc: &mut Literal,
) -> Result<bool, IrError> {
    let lhs = float_operand::<T>(a, T::ET, [&p.lb, &p.l_free, &p.lc])?;
    let rhs = float_operand::<T>(b, T::ET, [&p.rb, &p.rc, &p.r_free])?;
    let Ok(out) = bytemuck::try_cast_slice_mut::<u8, T>(acc.data_mut()) else {
        return Ok(false);
    };
    // The views come from the operands' own shapes and `out` has the result's length, so
    // they always fit; a `false` here would have left `acc` partly summed.
    if !batched_product(p.shape, &lhs, &rhs, out, true) {
        return Err(IrError::Eval {
            detail: "internal: an accumulating product's views do not fit its operands".to_string(),
        });
    }
    Ok(true)
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

    /// One `x + dot(a, b)` case: the shapes, the contracting dimensions, and how the sum
    /// is written.
    struct Added {
        a: Vec<i64>,
        b: Vec<i64>,
        /// `(lhs, rhs)` batch and contracting dimensions.
        batch: (Vec<i64>, Vec<i64>),
        contract: (Vec<i64>, Vec<i64>),
        /// The add reads the product's `[1, 0]` transpose.
        transposed: bool,
        /// The product is the add's first operand.
        product_first: bool,
        /// The addend is also returned (its buffer cannot become the sum's).
        addend_kept: bool,
        /// What the addend is.
        addend: Addend,
    }

    /// The addend of an [`Added`] case.
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Addend {
        /// The function's argument (its bytes shared with the caller).
        Argument,
        /// `reverse(x0)`: a buffer of the function's own.
        Reversed,
        /// `negate(x0)`, which a fused group holding the add would compute: the sum stays
        /// in the group.
        Negated,
    }

    /// `main(x0, a, b)`: `x + dot(a, b)` as `added` says, with `x` from `x0` as its
    /// `addend` says; and the sum's shape.
    fn added_product_module(added: &Added, et: ElementType) -> (crate::Module, Vec<i64>) {
        let dims = |shape: &[i64], batch: &[i64], contract: &[i64]| -> Vec<i64> {
            (0..shape.len() as i64)
                .filter(|d| !batch.contains(d) && !contract.contains(d))
                .map(|d| shape[d as usize])
                .collect()
        };
        let mut product: Vec<i64> = added.batch.0.iter().map(|&d| added.a[d as usize]).collect();
        product.extend(dims(&added.a, &added.batch.0, &added.contract.0));
        product.extend(dims(&added.b, &added.batch.1, &added.contract.1));
        let sum = if added.transposed {
            vec![product[1], product[0]]
        } else {
            product.clone()
        };
        let (mut f, p) = FuncBuilder::new(&[t(&sum, et), t(&added.a, et), t(&added.b, et)]);
        let x = match added.addend {
            Addend::Argument => p[0],
            Addend::Reversed => {
                let dims = vec![("dimensions", i64s(&[0]))];
                f.op(OpKind::Reverse, &[p[0]], t(&sum, et), dims)
            }
            Addend::Negated => f.op(OpKind::Negate, &[p[0]], t(&sum, et), vec![]),
        };
        let attrs = vec![
            ("lhs_batching_dimensions", i64s(&added.batch.0)),
            ("rhs_batching_dimensions", i64s(&added.batch.1)),
            ("lhs_contracting_dimensions", i64s(&added.contract.0)),
            ("rhs_contracting_dimensions", i64s(&added.contract.1)),
        ];
        let mut y = f.op(OpKind::DotGeneral, &[p[1], p[2]], t(&product, et), attrs);
        if added.transposed {
            let perm = vec![("permutation", i64s(&[1, 0]))];
            y = f.op(OpKind::Transpose, &[y], t(&sum, et), perm);
        }
        let operands = if added.product_first { [y, x] } else { [x, y] };
        let r = f.op(OpKind::Add, &operands, t(&sum, et), vec![]);
        let results = if added.addend_kept {
            vec![r, x]
        } else {
            vec![r]
        };
        (f.finish(&results), sum)
    }

    /// Small integers as `et` (f32, f64 or s32) of `shape`: every product and sum exact.
    fn small_ints(shape: &[i64], et: ElementType, seed: i64) -> crate::Literal {
        let n = shape.iter().product::<i64>();
        let v: Vec<i64> = (0..n).map(|i| (i * 7 + seed) % 9 - 4).collect();
        match et {
            ElementType::F32 => f32s(shape, &v.iter().map(|&x| x as f32).collect::<Vec<_>>()),
            ElementType::F64 => f64s(shape, &v.iter().map(|&x| x as f64).collect::<Vec<_>>()),
            _ => i32s(shape, &v.iter().map(|&x| x as i32).collect::<Vec<_>>()),
        }
    }

    /// `x + dot(a, b)` and `x + transpose(dot(a, b))` run as one accumulating product
    /// (a plan step) for f32 and f64, in the addend's buffer or a copy of it, through the
    /// direct, row-major-copy and transposed kernels and over a batch, and give the sums
    /// of the product and the add run apart (exact: small integers).
    #[test]
    fn products_added_to_a_value_sum_into_it() {
        let v = |d: &[i64]| d.to_vec();
        let case = |a: &[i64], b: &[i64], contract: (&[i64], &[i64])| Added {
            a: v(a),
            b: v(b),
            batch: (Vec::new(), Vec::new()),
            contract: (v(contract.0), v(contract.1)),
            transposed: false,
            product_first: false,
            addend_kept: false,
            addend: Addend::Reversed,
        };
        let cases = [
            case(&[5, 7], &[7, 3], (&[1], &[0])),
            // `b` contiguous down its columns: the row-major copy, and for few rows of
            // `a` the transposed product, whose result is added at the end.
            case(&[20, 24], &[18, 24], (&[1], &[1])),
            case(&[2, 64], &[64, 64], (&[1], &[1])),
            // Contracting the leading dimensions (a weight gradient, `dz^T . h`).
            case(&[32, 40], &[32, 24], (&[0], &[0])),
            case(&[3, 0], &[0, 4], (&[1], &[0])),
            Added {
                transposed: true,
                ..case(&[32, 40], &[32, 24], (&[0], &[0]))
            },
            Added {
                transposed: true,
                product_first: true,
                addend_kept: true,
                ..case(&[6, 9], &[9, 11], (&[1], &[0]))
            },
            Added {
                product_first: true,
                addend_kept: true,
                ..case(&[2, 64], &[64, 64], (&[1], &[1]))
            },
            Added {
                batch: (v(&[0]), v(&[0])),
                ..case(&[4, 5, 6], &[4, 6, 7], (&[2], &[1]))
            },
            Added {
                addend: Addend::Argument,
                ..case(&[20, 24], &[18, 24], (&[1], &[1]))
            },
            Added {
                addend: Addend::Negated,
                ..case(&[5, 7], &[7, 3], (&[1], &[0]))
            },
        ];
        for (i, added) in cases.iter().enumerate() {
            for et in [ElementType::F32, ElementType::F64, ElementType::S32] {
                let (m, sum) = added_product_module(added, et);
                let func = &m.functions[0];
                let plan = super::super::plan::plan_block(func, &func.body.blocks[0], true, true);
                let steps = plan
                    .steps
                    .iter()
                    .filter(|s| matches!(s, super::super::plan::Step::AccumulatedDot(_)))
                    .count();
                // f32 `negate` and `add` make a fused group, which keeps the sum.
                let grouped = added.addend == Addend::Negated && et == ElementType::F32;
                let planned = et != ElementType::S32 && !grouped;
                assert_eq!(steps, usize::from(planned), "case {i} {et:?}");
                let args = [
                    small_ints(&sum, et, 1),
                    small_ints(&added.a, et, 2),
                    small_ints(&added.b, et, 5),
                ];
                let run = |fuse: bool| {
                    let options = crate::eval::EvalOptions { fuse };
                    let none = crate::eval::SingleDevice;
                    crate::eval::run_function_with_options(&m, "main", &args, &none, options)
                        .unwrap()
                };
                let (together, apart) = (run(true), run(false));
                assert_eq!(together.len(), apart.len());
                for (x, y) in together.iter().zip(&apart) {
                    assert_eq!(x.ty, y.ty, "case {i} {et:?}");
                    assert_eq!(x.data, y.data, "case {i} {et:?}");
                }
            }
        }
    }

    /// Two independent sums of the same shape (the weight gradients of a recurrent step,
    /// which a fused group would hold together) both leave the group and accumulate.
    #[test]
    fn independent_sums_of_one_shape_both_accumulate() {
        let f = ElementType::F32;
        let shape = [12, 10];
        let (mut b, p) = FuncBuilder::new(&[t(&shape, f), t(&shape, f), t(&[12, 6], f)]);
        let contract = |l: i64, r: i64| {
            vec![
                ("lhs_contracting_dimensions", i64s(&[l])),
                ("rhs_contracting_dimensions", i64s(&[r])),
            ]
        };
        let wide = b.op(OpKind::Concatenate, &[p[2], p[2]], t(&[12, 12], f), {
            vec![("dimension", int(1))]
        });
        let y0 = b.op(
            OpKind::DotGeneral,
            &[wide, p[0]],
            t(&shape, f),
            contract(1, 0),
        );
        let y1 = b.op(
            OpKind::DotGeneral,
            &[p[1], wide],
            t(&[10, 12], f),
            contract(0, 0),
        );
        let perm = vec![("permutation", i64s(&[1, 0]))];
        let y1 = b.op(OpKind::Transpose, &[y1], t(&shape, f), perm);
        let s0 = b.op(OpKind::Add, &[p[0], y0], t(&shape, f), vec![]);
        let s1 = b.op(OpKind::Add, &[y1, p[1]], t(&shape, f), vec![]);
        let m = b.finish(&[s0, s1]);
        let func = &m.functions[0];
        let plan = super::super::plan::plan_block(func, &func.body.blocks[0], true, true);
        let steps = plan
            .steps
            .iter()
            .filter(|s| matches!(s, super::super::plan::Step::AccumulatedDot(_)))
            .count();
        assert_eq!(steps, 2);
        let args = [
            small_ints(&shape, f, 0),
            small_ints(&shape, f, 3),
            small_ints(&[12, 6], f, 4),
        ];
        let run = |fuse: bool| {
            let options = crate::eval::EvalOptions { fuse };
            let none = crate::eval::SingleDevice;
            crate::eval::run_function_with_options(&m, "main", &args, &none, options).unwrap()
        };
        let (together, apart) = (run(true), run(false));
        for (x, y) in together.iter().zip(&apart) {
            assert_eq!(to_f32(x), to_f32(y));
        }
    }
}
