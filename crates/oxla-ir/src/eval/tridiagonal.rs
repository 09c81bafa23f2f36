//! The custom calls of JAX's cpu lowering of `lax.linalg.tridiagonal_solve`.
//!
//! Operands are `dl`, `d`, `du` of shape `[..., n]` (the sub-, main and superdiagonal, with
//! `dl[0]` and `du[n - 1]` outside the matrix) and `b` of shape `[..., n, k]`.
//!
//! - `lapack_?gtsv_ffi` is LAPACK `gtsv`: Gaussian elimination with partial pivoting by
//!   magnitude (`|re| + |im|` for complex values, as LAPACK compares them), the row
//!   interchanges filling a second superdiagonal. Results are `dl`, `d`, `du` (returned as
//!   given: JAX discards them), the solution, and per matrix `info`: 0, or the 1-based row
//!   of the first exactly zero pivot (JAX then replaces that solution with NaN).
//! - `tridiagonal_solve_perturbed_ffi` (`perturb_singular=True`) eliminates with scaled
//!   partial pivoting (each row's pivot candidate relative to the sum of its magnitudes) and,
//!   in back substitution, nudges a pivot below 1 in magnitude whose quotient would overflow
//!   (or that is zero) away from zero by `eps * max|U|`, doubling the nudge until the
//!   quotient is representable; a pivot below the smallest normal that would not overflow is
//!   scaled up together with its row instead. Singular systems so get large finite
//!   solutions, not NaN. `eps` and the thresholds are those of the operands' precision.
//!
//! Everything is computed in `complex<f64>` and rounded once to the result type, like the
//! other linear-algebra calls (`lapack.rs`).

use super::context::OpCx;
use super::lapack::{
    abs1, expect_result, from_complex, from_i32, known_target, real_of, to_complex,
};
use crate::{ElementType, IrError, Literal, Op};
use num_complex::Complex64;

type C = Complex64;

const ZERO: C = C::new(0.0, 0.0);

/// `a / b` by Smith's algorithm (`complex::div`): no overflow or underflow in `|b|^2`, so
/// a tiny real pivot divides as it would in real arithmetic.
fn div(a: C, b: C) -> C {
    let (re, im) = super::complex::div(a.re, a.im, b.re, b.im);
    C::new(re, im)
}

/// The two solvers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Solver {
    /// LAPACK `gtsv`.
    Gtsv,
    /// Scaled pivoting with perturbed singular pivots.
    Perturbed,
}

fn solver(target: &str) -> Option<(Option<ElementType>, Solver)> {
    if target == "tridiagonal_solve_perturbed_ffi" {
        return Some((None, Solver::Perturbed));
    }
    let letter = target.strip_prefix("lapack_")?.strip_suffix("gtsv_ffi")?;
    let et = match letter {
        "s" => ElementType::F32,
        "d" => ElementType::F64,
        "c" => ElementType::C64,
        "z" => ElementType::C128,
        _ => return None,
    };
    Some((Some(et), Solver::Gtsv))
}

/// Whether `op` is one of the tridiagonal solvers.
pub(crate) fn supports(op: &Op) -> bool {
    super::call_target(op).and_then(solver).is_some()
}

/// Evaluates a tridiagonal-solver custom call (see the module documentation).
pub(crate) fn custom_call(cx: OpCx<'_>, args: &[&Literal]) -> Result<Vec<Literal>, IrError> {
    let (target, (named, kind)) = known_target(cx, solver)?;
    cx.expect_operands(4)?;
    let b_ty = &args[3].ty;
    let et = b_ty.element_type;
    if named.is_some_and(|n| n != et) || !(et.is_float() || et.is_complex()) {
        return Err(cx.invalid(format!("`{target}` cannot solve for {b_ty}")));
    }
    let r = b_ty.rank();
    if r < 2 || !b_ty.is_static() {
        return Err(cx.invalid(format!("{b_ty} is not a static batch of right-hand sides")));
    }
    let diag_shape = &b_ty.shape[..r - 1];
    for (i, a) in args[..3].iter().enumerate() {
        if a.ty.shape != diag_shape || a.ty.element_type != et {
            return Err(cx.invalid(format!(
                "diagonal operand {i} is {}, expected the shape of {b_ty} without its last \
                 dimension",
                a.ty
            )));
        }
    }
    let batch_dims = &b_ty.shape[..r - 2];
    let batch: usize = batch_dims.iter().map(|&d| d as usize).product();
    let n = b_ty.shape[r - 2] as usize;
    let k = b_ty.shape[r - 1] as usize;
    let [dl, d, du, b] = [0, 1, 2, 3].map(|i| to_complex(cx, args[i]));
    let (dl, d, du, b) = (dl?, d?, du?, b?);
    let precision = Precision::of(real_of(et));
    let mut x = vec![ZERO; b.len()];
    let mut infos = Vec::with_capacity(batch);
    for m in 0..batch {
        let diags = Diagonals {
            dl: &dl[m * n..(m + 1) * n],
            d: &d[m * n..(m + 1) * n],
            du: &du[m * n..(m + 1) * n],
        };
        let rhs = &b[m * n * k..(m + 1) * n * k];
        let out = &mut x[m * n * k..(m + 1) * n * k];
        match kind {
            Solver::Gtsv => infos.push(gtsv(diags, rhs, k, out)),
            Solver::Perturbed => perturbed(diags, rhs, k, out, precision),
        }
    }
    match kind {
        Solver::Gtsv => {
            cx.expect_results(5)?;
            let info_ty = expect_result(cx, 4, batch_dims, ElementType::S32)?;
            let mut out: Vec<Literal> = args[..3].iter().map(|&a| a.clone()).collect();
            out.push(from_complex(x, expect_result(cx, 3, &b_ty.shape, et)?)?);
            out.push(from_i32(infos, info_ty)?);
            Ok(out)
        }
        Solver::Perturbed => {
            cx.expect_results(1)?;
            Ok(vec![from_complex(
                x,
                expect_result(cx, 0, &b_ty.shape, et)?,
            )?])
        }
    }
}

/// One matrix's three diagonals, each of length `n` (JAX's convention).
#[derive(Clone, Copy)]
struct Diagonals<'a> {
    dl: &'a [C],
    d: &'a [C],
    du: &'a [C],
}

/// LAPACK `gtsv` on one system: writes the solution of `A x = b` (`b` row-major `n x k`)
/// to `x` and returns `info`.
fn gtsv(a: Diagonals<'_>, b: &[C], k: usize, x: &mut [C]) -> i32 {
    let n = a.d.len();
    if n == 0 {
        return 0;
    }
    // `sub[i]` is A(i+1, i); the factorization overwrites copies of the others: `sup[i]` is
    // A(i, i+1), and `sup2[i]` the second superdiagonal row interchanges create.
    let sub = &a.dl[1..];
    let mut diag = a.d.to_vec();
    let mut sup: Vec<C> = a.du[..n - 1].to_vec();
    let mut sup2 = vec![ZERO; n.saturating_sub(2)];
    x.copy_from_slice(b);
    for i in 0..n - 1 {
        if abs1(diag[i]) >= abs1(sub[i]) {
            if diag[i] == ZERO {
                return i as i32 + 1;
            }
            let f = div(sub[i], diag[i]);
            diag[i + 1] -= f * sup[i];
            for j in 0..k {
                let above = x[i * k + j];
                x[(i + 1) * k + j] -= f * above;
            }
        } else {
            // Row i + 1 becomes the pivot row.
            let f = div(diag[i], sub[i]);
            diag[i] = sub[i];
            let below = diag[i + 1];
            diag[i + 1] = sup[i] - f * below;
            if i + 2 < n {
                sup2[i] = sup[i + 1];
                sup[i + 1] = -f * sup2[i];
            }
            sup[i] = below;
            for j in 0..k {
                let (upper, lower) = (x[i * k + j], x[(i + 1) * k + j]);
                x[i * k + j] = lower;
                x[(i + 1) * k + j] = upper - f * lower;
            }
        }
    }
    if diag[n - 1] == ZERO {
        return n as i32;
    }
    for i in (0..n).rev() {
        for j in 0..k {
            let mut v = x[i * k + j];
            if i + 1 < n {
                v -= sup[i] * x[(i + 1) * k + j];
            }
            if i + 2 < n {
                v -= sup2[i] * x[(i + 2) * k + j];
            }
            x[i * k + j] = div(v, diag[i]);
        }
    }
    0
}

/// The thresholds of one floating-point precision.
#[derive(Clone, Copy, Debug)]
struct Precision {
    eps: f64,
    /// The smallest magnitude whose reciprocal does not overflow (LAPACK's `safmin`).
    safe_min: f64,
}

impl Precision {
    fn of(real: ElementType) -> Self {
        if real == ElementType::F64 {
            Self::from_limits(f64::EPSILON, f64::MIN_POSITIVE, f64::MAX)
        } else {
            Self::from_limits(
                f64::from(f32::EPSILON),
                f64::from(f32::MIN_POSITIVE),
                f64::from(f32::MAX),
            )
        }
    }

    fn from_limits(eps: f64, tiny: f64, max: f64) -> Self {
        let small = 1.0 / max;
        let safe_min = if small < tiny {
            tiny
        } else {
            small * (1.0 + eps)
        };
        Self { eps, safe_min }
    }
}

/// Makes `pivot` safe to divide `row` by: a pivot of magnitude 1 or more stays; a smaller
/// one moves away from zero by `nudge` (at least `safe_min`, with the sign of the pivot's
/// real part), doubled each time, while the row's largest magnitude divided by it would
/// overflow; a nonzero pivot below `safe_min` that would not overflow is scaled by
/// `1 / safe_min` together with the row instead. Ends: the nudge doubles until the pivot
/// reaches magnitude 1 at the latest, and NaN compares false everywhere.
fn perturb_pivot(nudge: f64, pivot: &mut C, row: &mut [C], p: Precision) {
    let mut size = pivot.norm();
    if size >= 1.0 {
        return;
    }
    let big = 1.0 / p.safe_min;
    let mut nudge = nudge.abs().max(p.safe_min).copysign(pivot.re);
    let largest = row.iter().map(|v| v.norm()).fold(0.0, f64::max);
    while size < 1.0 {
        if size < p.safe_min {
            if size == 0.0 || largest * p.safe_min > size {
                *pivot += nudge;
                nudge *= 2.0;
            } else {
                *pivot *= big;
                row.iter_mut().for_each(|v| *v *= big);
                return;
            }
        } else if largest > size * big {
            *pivot += nudge;
            nudge *= 2.0;
        } else {
            return;
        }
        size = pivot.norm();
    }
}

/// `tridiagonal_solve_perturbed_ffi` on one system (see the module documentation).
fn perturbed(a: Diagonals<'_>, b: &[C], k: usize, x: &mut [C], p: Precision) {
    let n = a.d.len();
    if n == 0 {
        return;
    }
    let mut row = vec![ZERO; k];
    if n == 1 {
        let mut pivot = a.d[0];
        row.copy_from_slice(&b[..k]);
        perturb_pivot(p.eps * pivot.norm(), &mut pivot, &mut row, p);
        for (o, v) in x.iter_mut().zip(&row) {
            *o = div(*v, pivot);
        }
        return;
    }
    // The rows of U: diagonal, superdiagonal, second superdiagonal.
    let mut u = vec![[ZERO; 3]; n];
    u[0] = [a.d[0], a.du[0], ZERO];
    let mut largest_u = a.d[0].norm().max(a.du[0].norm());
    let mut scale = a.d[0].norm() + a.du[0].norm();
    x[..k].copy_from_slice(&b[..k]);
    for i in 0..n - 1 {
        let next = i + 1;
        u[next][0] = a.d[next];
        let mut next_scale = a.dl[next].norm() + a.d[next].norm();
        if next + 1 < n {
            next_scale += a.du[next].norm();
        }
        if a.dl[next] == ZERO {
            scale = next_scale;
            u[next][1] = a.du[next];
            u[i][2] = ZERO;
            x[next * k..(next + 1) * k].copy_from_slice(&b[next * k..(next + 1) * k]);
        } else {
            let keep = if u[i][0] == ZERO {
                0.0
            } else {
                u[i][0].norm() / scale
            };
            let swap = a.dl[next].norm() / next_scale;
            if swap <= keep {
                scale = next_scale;
                let f = div(a.dl[next], u[i][0]);
                let above = u[i][1];
                u[next][0] -= f * above;
                u[next][1] = a.du[next];
                u[i][2] = ZERO;
                for j in 0..k {
                    x[next * k + j] = b[next * k + j] - f * x[i * k + j];
                }
            } else {
                let f = div(u[i][0], a.dl[next]);
                let old_sup = u[i][1];
                u[i][0] = a.dl[next];
                u[next][0] = old_sup - f * a.d[next];
                u[i][1] = a.d[next];
                if next + 1 < n {
                    u[i][2] = a.du[next];
                    u[next][1] = -f * a.du[next];
                }
                for j in 0..k {
                    let upper = x[i * k + j];
                    x[next * k + j] = upper - f * b[next * k + j];
                    x[i * k + j] = b[next * k + j];
                }
                scale = u[next][0].norm() + u[next][1].norm();
            }
        }
        if next + 1 < n {
            largest_u = u[i].iter().map(|v| v.norm()).fold(largest_u, f64::max);
        }
    }
    largest_u = largest_u.max(u[n - 1][0].norm());
    let nudge = p.eps * largest_u;
    for i in (0..n).rev() {
        let mut pivot = u[i][0];
        for j in 0..k {
            let mut v = x[i * k + j];
            if i + 1 < n {
                v -= u[i][1] * x[(i + 1) * k + j];
            }
            if i + 2 < n {
                v -= u[i][2] * x[(i + 2) * k + j];
            }
            row[j] = v;
        }
        perturb_pivot(nudge, &mut pivot, &mut row, p);
        let inverse = div(C::new(1.0, 0.0), pivot);
        for j in 0..k {
            x[i * k + j] = row[j] * inverse;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::Type;

    fn call(target: &str, args: &[Literal], results: &[Type]) -> Result<Vec<Literal>, IrError> {
        run_custom_call(target, Vec::new(), args, results)
    }

    #[test]
    fn calls_solve_batches_and_reject_malformed_operands() {
        // Two systems of 3 rows: [[2, 1, 0], [1, 2, 1], [0, 1, 2]] x = b, and a zero matrix.
        let dl = f32s(&[2, 3], &[0.0, 1.0, 1.0, 0.0, 0.0, 0.0]);
        let d = f32s(&[2, 3], &[2.0, 2.0, 2.0, 0.0, 0.0, 0.0]);
        let du = f32s(&[2, 3], &[1.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
        let b = f32s(&[2, 3, 1], &[4.0, 8.0, 8.0, 1.0, 1.0, 1.0]);
        let args = [dl.clone(), d.clone(), du.clone(), b.clone()];
        let f = ElementType::F32;
        let gtsv_results = [
            t(&[2, 3], f),
            t(&[2, 3], f),
            t(&[2, 3], f),
            t(&[2, 3, 1], f),
        ];
        let mut results = gtsv_results.to_vec();
        results.push(t(&[2], ElementType::S32));
        let out = call("lapack_sgtsv_ffi", &args, &results).unwrap();
        assert_eq!(to_f32(&out[3])[..3], [1.0, 2.0, 3.0]);
        assert_eq!(to_i32(&out[4]), [0, 1]);
        let out = call(
            "tridiagonal_solve_perturbed_ffi",
            &args,
            &[t(&[2, 3, 1], f)],
        )
        .unwrap();
        assert_eq!(to_f32(&out[0])[..3], [1.0, 2.0, 3.0]);
        assert!(to_f32(&out[0])[3..]
            .iter()
            .all(|v| v.is_finite() && v.abs() > 1e6));
        // The target's type letter must match the operands.
        assert!(call("lapack_dgtsv_ffi", &args, &results).is_err());
        // A diagonal of the wrong length, right-hand sides without their column dimension,
        // too few operands, a missing info result: errors, not panics.
        let short = f32s(&[2, 2], &[0.0; 4]);
        let bad = [short, d.clone(), du.clone(), b.clone()];
        assert!(call("lapack_sgtsv_ffi", &bad, &results).is_err());
        let flat = f32s(&[2, 3], &[1.0; 6]);
        let bad = [dl.clone(), d.clone(), du.clone(), flat];
        assert!(call("tridiagonal_solve_perturbed_ffi", &bad, &[t(&[2, 3], f)]).is_err());
        assert!(call("lapack_sgtsv_ffi", &args[..3], &results).is_err());
        assert!(call("lapack_sgtsv_ffi", &args, &gtsv_results).is_err());
        // Integer systems are not solved.
        let ints: Vec<Literal> = (0..3).map(|_| i32s(&[3], &[1, 1, 1])).collect();
        let mut bad = ints.clone();
        bad.push(i32s(&[3, 1], &[1, 1, 1]));
        assert!(call(
            "tridiagonal_solve_perturbed_ffi",
            &bad,
            &[t(&[3, 1], ElementType::S32)]
        )
        .is_err());
    }

    fn c(v: &[f64]) -> Vec<C> {
        v.iter().map(|&r| C::new(r, 0.0)).collect()
    }

    /// `A x` for the tridiagonal `A` of `a` and row-major `n x k` `x`.
    fn product(a: Diagonals<'_>, x: &[C], k: usize) -> Vec<C> {
        let n = a.d.len();
        let mut out = vec![ZERO; n * k];
        for i in 0..n {
            for j in 0..k {
                let mut v = a.d[i] * x[i * k + j];
                if i > 0 {
                    v += a.dl[i] * x[(i - 1) * k + j];
                }
                if i + 1 < n {
                    v += a.du[i] * x[(i + 1) * k + j];
                }
                out[i * k + j] = v;
            }
        }
        out
    }

    /// A pseudo-random value in [-1, 1).
    fn noise(seed: u64) -> f64 {
        let mut z = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    #[test]
    fn both_solvers_solve_systems_that_need_row_interchanges() {
        // Small diagonals force pivoting on every row; complex entries check that the
        // interchanges and products keep both parts.
        for n in [1usize, 2, 3, 7, 20] {
            for k in [1usize, 3] {
                let gen = |base: u64, scale: f64| -> Vec<C> {
                    (0..n as u64)
                        .map(|i| C::new(noise(base + i) * scale, noise(base + 500 + i) * scale))
                        .collect()
                };
                let (dl, d, du) = (gen(1, 1.0), gen(100, 0.01), gen(200, 1.0));
                let b: Vec<C> = (0..(n * k) as u64)
                    .map(|i| C::new(noise(300 + i), 0.0))
                    .collect();
                let a = Diagonals {
                    dl: &dl,
                    d: &d,
                    du: &du,
                };
                let mut x = vec![ZERO; n * k];
                assert_eq!(gtsv(a, &b, k, &mut x), 0, "n {n}");
                let residual = product(a, &x, k);
                for (r, want) in residual.iter().zip(&b) {
                    assert!((r - want).norm() < 1e-9, "gtsv n {n} k {k}: {r} vs {want}");
                }
                let mut y = vec![ZERO; n * k];
                perturbed(a, &b, k, &mut y, Precision::of(ElementType::F64));
                for (u, v) in x.iter().zip(&y) {
                    assert!(
                        (u - v).norm() < 1e-9 * (1.0 + u.norm()),
                        "n {n}: {u} vs {v}"
                    );
                }
            }
        }
    }

    #[test]
    fn gtsv_reports_the_first_zero_pivot() {
        let zeros = c(&[0.0; 3]);
        let mut x = vec![ZERO; 3];
        let a = Diagonals {
            dl: &zeros,
            d: &zeros,
            du: &zeros,
        };
        assert_eq!(gtsv(a, &c(&[1.0; 3]), 1, &mut x), 1);
        // [[1, 1], [1, 1]]: the second pivot is exactly zero.
        let ones = c(&[1.0, 1.0]);
        let a = Diagonals {
            dl: &ones,
            d: &ones,
            du: &ones,
        };
        assert_eq!(gtsv(a, &c(&[1.0, 2.0]), 1, &mut x[..2]), 2);
    }

    #[test]
    fn perturbed_pivots_give_large_finite_solutions_in_the_operands_precision() {
        let zeros = c(&[0.0; 3]);
        let a = Diagonals {
            dl: &zeros,
            d: &zeros,
            du: &zeros,
        };
        for (et, max) in [
            (ElementType::F32, f64::from(f32::MAX)),
            (ElementType::F64, f64::MAX),
        ] {
            let mut x = vec![ZERO; 3];
            perturbed(a, &c(&[1.0; 3]), 1, &mut x, Precision::of(et));
            for v in &x {
                assert!(
                    v.re.is_finite() && v.re.abs() > 1e6 && v.re.abs() <= max,
                    "{et}: {v}"
                );
            }
        }
        // A NaN pivot ends the loop and stays NaN.
        let nan = c(&[f64::NAN]);
        let mut x = vec![ZERO; 1];
        perturbed(
            Diagonals {
                dl: &nan,
                d: &nan,
                du: &nan,
            },
            &c(&[1.0]),
            1,
            &mut x,
            Precision::of(ElementType::F32),
        );
        assert!(x[0].re.is_nan());
    }
}
