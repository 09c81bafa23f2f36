//! `cholesky` and `triangular_solve` on batched square matrices.
//!
//! Real f32 and f64 matrices take [`super::dense`]'s blocked kernels in their own precision.
//! Otherwise both compute in `complex<f64>` whatever the float type, then round once to the
//! result type, so one routine serves f16 to complex<f64>. Cholesky writes zeros to the triangle
//! it does not compute (the spec leaves it implementation-defined); a matrix that is not
//! positive definite yields NaN from the first failing pivot on, as XLA does.

use super::context::OpCx;
use super::convert::convert_array;
use super::dense;
use super::element::{decode, encode, Array};
use super::typed::{to_bytes, view_bytes};
use crate::attrs::Transpose;
use crate::{Attribute, ElementType, IrError, Literal, TensorType};
use num_complex::Complex64;

fn to_complex(cx: OpCx<'_>, lit: &Literal) -> Result<Vec<Complex64>, IrError> {
    let et = lit.ty.element_type;
    if !(et.is_float() || et.is_complex()) {
        return Err(cx.invalid(format!("not defined on element type {et}")));
    }
    match convert_array(&decode(lit), crate::ElementType::C128) {
        Array::C128(v) => Ok(v),
        _ => Err(cx.invalid("internal: complex conversion failed")),
    }
}

fn from_complex(values: Vec<Complex64>, ty: &TensorType) -> Result<Literal, IrError> {
    encode(
        &convert_array(&Array::C128(values), ty.element_type),
        ty.clone(),
    )
}

/// (batch count, n) of a `[..., n, n]` type.
fn square(cx: OpCx<'_>, ty: &TensorType) -> Result<(usize, usize), IrError> {
    let r = ty.rank();
    if r < 2 || ty.shape[r - 1] != ty.shape[r - 2] {
        return Err(cx.invalid(format!("{ty} is not a batch of square matrices")));
    }
    let n = ty.shape[r - 1].max(0) as usize;
    let batch = ty.shape[..r - 2]
        .iter()
        .map(|&d| d.max(0) as usize)
        .product();
    Ok((batch, n))
}

/// The lower factor `l` of `a = l * l^H`, reading only the lower triangle of `a`.
fn cholesky_lower(a: &[Complex64], n: usize) -> Vec<Complex64> {
    let mut l = vec![Complex64::new(0.0, 0.0); n * n];
    for j in 0..n {
        let mut d = a[j * n + j].re;
        for k in 0..j {
            d -= l[j * n + k].norm_sqr();
        }
        let pivot = d.sqrt();
        l[j * n + j] = Complex64::new(pivot, 0.0);
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k].conj();
            }
            l[i * n + j] = s / pivot;
        }
    }
    l
}

/// `cholesky` of real matrices on the fast path: the factor's triangle, zeros elsewhere;
/// `None` when some matrix is not positive definite (the general path gives its NaNs).
fn cholesky_real<T: dense::Real>(
    a: &Literal,
    batch: usize,
    n: usize,
    lower: bool,
) -> Option<Literal> {
    let values = view_bytes::<T>(&a.data);
    let mut out = vec![T::default(); values.len()];
    for b in 0..batch {
        let at = b * n * n..(b + 1) * n * n;
        dense::cholesky(&values[at.clone()], n, lower, &mut out[at])?;
    }
    Literal::new(a.ty.clone(), to_bytes(&out)).ok()
}

/// Evaluates `cholesky`.
pub(crate) fn cholesky(cx: OpCx<'_>, a: &Literal) -> Result<Literal, IrError> {
    let out_ty = cx.result_tensor(0)?;
    if *out_ty != a.ty {
        return Err(cx.invalid("the result must have the operand's type"));
    }
    let (batch, n) = square(cx, &a.ty)?;
    let lower = cx.flag("lower", false)?;
    let fast = match a.ty.element_type {
        ElementType::F32 => cholesky_real::<f32>(a, batch, n, lower),
        ElementType::F64 => cholesky_real::<f64>(a, batch, n, lower),
        _ => None,
    };
    if let Some(out) = fast {
        return Ok(out);
    }
    let values = to_complex(cx, a)?;
    let mut out = Vec::with_capacity(values.len());
    for b in 0..batch {
        let m = &values[b * n * n..(b + 1) * n * n];
        if lower {
            out.extend(cholesky_lower(m, n));
        } else {
            // a = u^H u with u = l^H, where l factors the lower view conj(a^T).
            let view: Vec<Complex64> = (0..n * n).map(|k| m[(k % n) * n + k / n].conj()).collect();
            let l = cholesky_lower(&view, n);
            out.extend((0..n * n).map(|k| l[(k % n) * n + k / n].conj()));
        }
    }
    from_complex(out, out_ty)
}

/// Solves `m x = b` for `x` (m: n x n triangular, b: n x k, both row-major) in place in `b`.
fn solve(m: &[Complex64], lower: bool, n: usize, b: &mut [Complex64], k: usize) {
    let rows: Vec<usize> = if lower {
        (0..n).collect()
    } else {
        (0..n).rev().collect()
    };
    for (pos, &i) in rows.iter().enumerate() {
        for c in 0..k {
            let mut s = b[i * k + c];
            for &j in &rows[..pos] {
                s -= m[i * n + j] * b[j * k + c];
            }
            b[i * k + c] = s / m[i * n + i];
        }
    }
}

/// What a triangular solve solves: `op(a) x = b` (`left`) or `x op(a) = b`, with `a`'s
/// lower or upper triangle, its diagonal read or taken as ones, and `op` one of
/// [`Transpose`]'s.
pub(crate) struct TriangularSolve {
    pub left: bool,
    pub lower: bool,
    pub unit: bool,
    pub transpose: Transpose,
}

/// Evaluates `triangular_solve`.
pub(crate) fn triangular_solve(cx: OpCx<'_>, a: &Literal, b: &Literal) -> Result<Literal, IrError> {
    let system = TriangularSolve {
        left: cx.flag("left_side", false)?,
        lower: cx.flag("lower", false)?,
        unit: cx.flag("unit_diagonal", false)?,
        transpose: match cx.op.attr("transpose_a") {
            None => Transpose::NoTranspose,
            Some(Attribute::Transpose(t)) => *t,
            Some(_) => return Err(cx.invalid("`transpose_a` has the wrong kind")),
        },
    };
    solve_triangular(cx, a, b, &system)
}

/// Solves with the triangle of `a` as `system` says, for every batch of `a` and `b`.
pub(crate) fn solve_triangular(
    cx: OpCx<'_>,
    a: &Literal,
    b: &Literal,
    system: &TriangularSolve,
) -> Result<Literal, IrError> {
    let out_ty = cx.result_tensor(0)?;
    if *out_ty != b.ty || a.ty.element_type != b.ty.element_type {
        return Err(cx.invalid("the result must have b's type, and a and b one element type"));
    }
    let (batch, n) = square(cx, &a.ty)?;
    let &TriangularSolve {
        left,
        lower,
        unit,
        transpose,
    } = system;
    let r = b.ty.rank();
    if r != a.ty.rank() || b.ty.shape[..r - 2] != a.ty.shape[..r - 2] {
        return Err(cx.invalid("a and b must have the same batch dimensions"));
    }
    let (b_rows, b_cols) = (
        b.ty.shape[r - 2].max(0) as usize,
        b.ty.shape[r - 1].max(0) as usize,
    );
    let k = if left { b_cols } else { b_rows };
    if (left && b_rows != n) || (!left && b_cols != n) {
        return Err(cx.invalid(format!(
            "b's shape {:?} does not fit a {n}x{n} matrix",
            b.ty.shape
        )));
    }
    match a.ty.element_type {
        ElementType::F32 => return solve_real::<f32>(a, b, batch, n, (b_rows, b_cols), system),
        ElementType::F64 => return solve_real::<f64>(a, b, batch, n, (b_rows, b_cols), system),
        _ => {}
    }
    let av = to_complex(cx, a)?;
    let bv = to_complex(cx, b)?;
    let mut out = Vec::with_capacity(bv.len());
    for bi in 0..batch {
        let am = &av[bi * n * n..(bi + 1) * n * n];
        // op(a) restricted to its triangle, with a unit diagonal when asked.
        let mut m = vec![Complex64::new(0.0, 0.0); n * n];
        for i in 0..n {
            for j in 0..n {
                let inside = if lower { j <= i } else { j >= i };
                let v = if i == j && unit {
                    Complex64::new(1.0, 0.0)
                } else if inside {
                    am[i * n + j]
                } else {
                    continue;
                };
                match transpose {
                    Transpose::NoTranspose => m[i * n + j] = v,
                    Transpose::Transpose => m[j * n + i] = v,
                    Transpose::Adjoint => m[j * n + i] = v.conj(),
                }
            }
        }
        let m_lower = lower == (transpose == Transpose::NoTranspose);
        let bm = &bv[bi * n * k..(bi + 1) * n * k];
        if left {
            let mut x = bm.to_vec();
            solve(&m, m_lower, n, &mut x, k);
            out.extend(x);
        } else {
            // x m = b  <=>  m^T x^T = b^T.
            let mt: Vec<Complex64> = (0..n * n).map(|q| m[(q % n) * n + q / n]).collect();
            let mut xt: Vec<Complex64> = (0..n * k).map(|q| bm[(q % k) * n + q / k]).collect();
            solve(&mt, !m_lower, n, &mut xt, k);
            out.extend((0..n * k).map(|q| xt[(q % n) * k + q / n]));
        }
    }
    from_complex(out, out_ty)
}

/// [`solve_triangular`] for real matrices, in their own precision.
fn solve_real<T: dense::Real>(
    a: &Literal,
    b: &Literal,
    batch: usize,
    n: usize,
    (rows, cols): (usize, usize),
    system: &TriangularSolve,
) -> Result<Literal, IrError> {
    let av = view_bytes::<T>(&a.data);
    let mut x = view_bytes::<T>(&b.data).into_owned();
    for bi in 0..batch {
        dense::solve_triangular(
            &av[bi * n * n..(bi + 1) * n * n],
            n,
            &mut x[bi * rows * cols..(bi + 1) * rows * cols],
            rows,
            cols,
            system,
        );
    }
    Literal::new(b.ty.clone(), to_bytes(&x))
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::attrs::Transpose;
    use crate::{Attribute, ElementType, OpKind};

    #[test]
    fn cholesky_of_a_known_product() {
        // l = [[2, 0, 0], [6, 1, 0], [-8, 5, 3]]; a = l l^T = [[4, 12, -16], [12, 37, -43],
        // [-16, -43, 98]] (the classic example).
        let a = f64s(
            &[3, 3],
            &[4.0, 12.0, -16.0, 12.0, 37.0, -43.0, -16.0, -43.0, 98.0],
        );
        let r = run_op(
            OpKind::Cholesky,
            std::slice::from_ref(&a),
            t(&[3, 3], ElementType::F64),
            vec![("lower", Attribute::Bool(true))],
        )
        .unwrap();
        assert_eq!(
            to_f64(&r),
            vec![2.0, 0.0, 0.0, 6.0, 1.0, 0.0, -8.0, 5.0, 3.0]
        );
        let r = run_op(OpKind::Cholesky, &[a], t(&[3, 3], ElementType::F64), vec![]).unwrap();
        assert_eq!(
            to_f64(&r),
            vec![2.0, 6.0, -8.0, 0.0, 1.0, 5.0, 0.0, 0.0, 3.0]
        );
    }

    #[test]
    fn cholesky_of_an_indefinite_matrix_gives_nan() {
        let a = f32s(&[2, 2], &[1.0, 2.0, 2.0, 1.0]);
        let r = run_op(
            OpKind::Cholesky,
            &[a],
            t(&[2, 2], ElementType::F32),
            vec![("lower", Attribute::Bool(true))],
        )
        .unwrap();
        let v = to_f32(&r);
        assert_eq!(v[0], 1.0);
        assert!(v[3].is_nan());
    }

    fn solve(
        a: &[f64],
        b: &[f64],
        b_shape: &[i64],
        attrs: Vec<(&'static str, Attribute)>,
    ) -> Vec<f64> {
        let a = f64s(&[2, 2], a);
        let b = f64s(b_shape, b);
        to_f64(
            &run_op(
                OpKind::TriangularSolve,
                &[a, b],
                t(b_shape, ElementType::F64),
                attrs,
            )
            .unwrap(),
        )
    }

    #[test]
    fn triangular_solve_all_sides_and_transposes() {
        // a = [[2, 9], [3, 4]]: lower triangle L = [[2, 0], [3, 4]], upper U = [[2, 9], [0, 4]].
        let a = [2.0, 9.0, 3.0, 4.0];
        let flags = |left: bool, lower: bool, tr: Transpose| {
            vec![
                ("left_side", Attribute::Bool(left)),
                ("lower", Attribute::Bool(lower)),
                ("unit_diagonal", Attribute::Bool(false)),
                ("transpose_a", Attribute::Transpose(tr)),
            ]
        };
        // L x = [2, 11] -> x = [1, 2].
        assert_eq!(
            solve(
                &a,
                &[2.0, 11.0],
                &[2, 1],
                flags(true, true, Transpose::NoTranspose)
            ),
            vec![1.0, 2.0]
        );
        // L^T x = [2 + 6, 8] = [8, 8] for x = [1, 2].
        assert_eq!(
            solve(
                &a,
                &[8.0, 8.0],
                &[2, 1],
                flags(true, true, Transpose::Transpose)
            ),
            vec![1.0, 2.0]
        );
        // U x = [2 + 18, 8] for x = [1, 2].
        assert_eq!(
            solve(
                &a,
                &[20.0, 8.0],
                &[2, 1],
                flags(true, false, Transpose::NoTranspose)
            ),
            vec![1.0, 2.0]
        );
        // U^H x = U^T x = [2, 9 + 8] for x = [1, 2] (real, so the adjoint is the transpose).
        assert_eq!(
            solve(
                &a,
                &[2.0, 17.0],
                &[2, 1],
                flags(true, false, Transpose::Adjoint)
            ),
            vec![1.0, 2.0]
        );
        // x L = [1*2 + 2*3, 2*4] = [8, 8] for x = [1, 2] (right side).
        assert_eq!(
            solve(
                &a,
                &[8.0, 8.0],
                &[1, 2],
                flags(false, true, Transpose::NoTranspose)
            ),
            vec![1.0, 2.0]
        );
        // x U^T with U^T = [[2, 0], [9, 4]]: [2 + 18, 8] = [20, 8] for x = [1, 2].
        assert_eq!(
            solve(
                &a,
                &[20.0, 8.0],
                &[1, 2],
                flags(false, false, Transpose::Transpose)
            ),
            vec![1.0, 2.0]
        );
        // Unit diagonal: [[1, 0], [3, 1]] x = [1, 5] -> x = [1, 2].
        let mut unit = flags(true, true, Transpose::NoTranspose);
        unit[2].1 = Attribute::Bool(true);
        assert_eq!(solve(&a, &[1.0, 5.0], &[2, 1], unit), vec![1.0, 2.0]);
    }
}
