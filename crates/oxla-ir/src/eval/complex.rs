//! Complex functions whose textbook formulas lose accuracy or overflow, computed on the
//! (real, imaginary) parts in f64 (complex64 operands are widened first and the results
//! rounded back, so they come out nearly correctly rounded).
//!
//! Division follows Smith's algorithm with the recovery of C99 Annex G for results that
//! come out NaN in both parts (zero divisors, infinite numerators or divisors), which is
//! what XLA's CPU backend computes; `1 / 0` is `inf + nan i` there, not `nan + nan i`.

/// `(a + bi) / (c + di)`.
pub(crate) fn div(a: f64, b: f64, c: f64, d: f64) -> (f64, f64) {
    let (re, im) = if c.abs() < d.abs() {
        let r = c / d;
        let den = d + c * r;
        ((a * r + b) / den, (b * r - a) / den)
    } else {
        let r = d / c;
        let den = c + d * r;
        ((a + b * r) / den, (b - a * r) / den)
    };
    if !(re.is_nan() && im.is_nan()) {
        return (re, im);
    }
    // 1 or 0 with the sign of `x`, after whether `x` is infinite.
    let unit = |x: f64| if x.is_infinite() { 1f64 } else { 0.0 }.copysign(x);
    if c == 0.0 && d == 0.0 && !(a.is_nan() && b.is_nan()) {
        let inf = f64::INFINITY.copysign(c);
        (inf * a, inf * b)
    } else if (a.is_infinite() || b.is_infinite()) && c.is_finite() && d.is_finite() {
        let (a, b) = (unit(a), unit(b));
        (
            f64::INFINITY * (a * c + b * d),
            f64::INFINITY * (b * c - a * d),
        )
    } else if (c.is_infinite() || d.is_infinite()) && a.is_finite() && b.is_finite() {
        let (c, d) = (unit(c), unit(d));
        (0.0 * (a * c + b * d), 0.0 * (b * c - a * d))
    } else {
        (re, im)
    }
}

/// `exp(z) - 1`, accurate for small `z`: `expm1(x) cos(y) - 2 sin²(y/2)` for the real part;
/// a real `z` keeps its imaginary zero (also when `exp(x)` overflows).
pub(crate) fn expm1(x: f64, y: f64) -> (f64, f64) {
    if y == 0.0 {
        return (x.exp_m1(), y);
    }
    let half = (0.5 * y).sin();
    (x.exp_m1() * y.cos() - 2.0 * half * half, x.exp() * y.sin())
}

/// `ln(1 + z)`, accurate for small `z`: `ln|1 + z| = ln1p(2x + x² + y²) / 2`.
pub(crate) fn log1p(x: f64, y: f64) -> (f64, f64) {
    let im = y.atan2(1.0 + x);
    // Past 1e150 the squares overflow; there 1 + x is exact enough for a plain hypot.
    let re = if x.abs() > 1e150 || y.abs() > 1e150 {
        (1.0 + x).hypot(y).ln()
    } else {
        0.5 * (x * (2.0 + x) + y * y).ln_1p()
    };
    (re, im)
}

/// `tan(z)` as `(sin 2x + i sinh 2y) / (cos 2x + cosh 2y)`; when `|y|` is large enough that
/// `tanh(2|y|)` rounds to 1, the imaginary part is `±1` and the real part decays as
/// `2 sin(2x) e^(-2|y|)` (the plain formula would divide infinities).
pub(crate) fn tan(x: f64, y: f64) -> (f64, f64) {
    if x == 0.0 {
        // tan(iy) = i tanh(y), exactly, signed zero kept.
        return (x, y.tanh());
    }
    if y.is_infinite() {
        return (0f64.copysign(x), 1f64.copysign(y));
    }
    if y.abs() > 20.0 {
        if !x.is_finite() {
            return (f64::NAN, f64::NAN);
        }
        let re = 2.0 * (2.0 * x).sin() * (-2.0 * y.abs()).exp();
        return (re, 1f64.copysign(y));
    }
    let den = (2.0 * x).cos() + (2.0 * y).cosh();
    ((2.0 * x).sin() / den, (2.0 * y).sinh() / den)
}

/// `tanh(z) = -i tan(iz)`.
pub(crate) fn tanh(x: f64, y: f64) -> (f64, f64) {
    let (re, im) = tan(-y, x);
    (im, -re)
}

/// `sinh(z) = sinh x cos y + i cosh x sin y`; a real `z` keeps its imaginary zero.
pub(crate) fn sinh(x: f64, y: f64) -> (f64, f64) {
    if y == 0.0 {
        return (x.sinh(), y);
    }
    (x.sinh() * y.cos(), x.cosh() * y.sin())
}

/// `cosh(z) = cosh x cos y + i sinh x sin y`; a real `z` gets an imaginary zero signed as
/// `sinh x * y` (also when `sinh x` overflows).
pub(crate) fn cosh(x: f64, y: f64) -> (f64, f64) {
    if y == 0.0 {
        return (x.cosh(), if x.is_sign_negative() { -y } else { y });
    }
    (x.cosh() * y.cos(), x.sinh() * y.sin())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: (f64, f64), want: (f64, f64)) -> bool {
        let near = |a: f64, b: f64| a == b || (a - b).abs() <= 1e-14 * a.abs().max(b.abs());
        near(got.0, want.0) && near(got.1, want.1)
    }

    #[test]
    fn division_scales_and_recovers_edge_values() {
        // Ordinary quotients, either branch of Smith's algorithm.
        assert!(close(div(1.0, 2.0, 3.0, 4.0), (11.0 / 25.0, 2.0 / 25.0)));
        assert!(close(div(1.0, 2.0, 4.0, 3.0), (10.0 / 25.0, 5.0 / 25.0)));
        // No overflow in |c|² + |d|², no underflow for tiny divisors.
        assert!(close(div(1e300, 1e300, 1e300, 1e300), (1.0, 0.0)));
        assert!(close(div(1.0, 0.0, 0.0, 1.2e-300), (0.0, -1.0 / 1.2e-300)));
        // Zero divisor: infinities signed by the divisor's real zero.
        let (re, im) = div(1.0, 0.0, 0.0, 0.0);
        assert!(re == f64::INFINITY && im.is_nan());
        let (re, im) = div(1.0, 2.0, -0.0, 0.0);
        assert!(re == f64::NEG_INFINITY && im == f64::NEG_INFINITY);
        // Infinite numerator over a finite divisor, finite over infinite.
        let (re, im) = div(f64::INFINITY, f64::NAN, 2.0, 1.0);
        assert!(re == f64::INFINITY && im == f64::NEG_INFINITY);
        assert_eq!(div(1.0, 0.0, f64::INFINITY, f64::INFINITY), (0.0, -0.0));
        // NaN stays NaN.
        assert!(div(f64::NAN, 0.0, 1.0, 0.0).0.is_nan());
    }

    #[test]
    fn small_arguments_keep_their_digits() {
        // exp(iy) - 1 = cos y - 1 + i sin y, with cos y - 1 ≈ -y²/2.
        let (re, im) = expm1(0.0, 1e-15);
        assert!(close((re, im), (-5e-31, 1e-15)), "{re} {im}");
        assert!(close(expm1(1e-20, 0.0), (1e-20, 0.0)));
        assert_eq!(expm1(1e6, 0.0), (f64::INFINITY, 0.0));
        // ln(1 + z) ≈ z for tiny z.
        assert!(close(log1p(1e-20, 1e-20), (1e-20, 1e-20)));
        assert!(close(log1p(-0.5, 0.0), ((0.5f64).ln(), 0.0)));
    }

    #[test]
    fn tangents_saturate_instead_of_dividing_infinities() {
        let (re, im) = tan(0.3, 400.0);
        assert_eq!(im, 1.0);
        assert!(re.abs() < 1e-300);
        assert_eq!(tan(0.3, -f64::INFINITY).1, -1.0);
        let (re, im) = tan(0.0, f64::NAN);
        assert!(re == 0.0 && im.is_nan());
        assert!(tan(f64::INFINITY, 88.0).0.is_nan());
        // tanh(z) = -i tan(iz), and tanh of a real stays real.
        let (re, im) = tanh(0.5, 0.0);
        assert!(close((re, im), (0.5f64.tanh(), 0.0)));
        let (a, b) = tan(0.25, 0.75);
        assert!(close(tanh(-0.75, 0.25), (-b, a)));
    }

    #[test]
    fn hyperbolic_functions_of_reals_keep_the_imaginary_zero() {
        assert_eq!(sinh(1000.0, 0.0), (f64::INFINITY, 0.0));
        assert_eq!(cosh(-1000.0, 0.0), (f64::INFINITY, -0.0));
        let (re, im) = cosh(f64::NEG_INFINITY, f64::INFINITY);
        assert!(re.is_nan() && im.is_nan());
        assert!(close(
            sinh(0.5, 0.25),
            (0.5f64.sinh() * 0.25f64.cos(), 0.5f64.cosh() * 0.25f64.sin())
        ));
    }
}
