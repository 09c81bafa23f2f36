//! The error function and its inverse for f32 tensors.
//!
//! `erf` stays in f32 with fused multiply-adds, like [`super::exp`] (twice the lanes of the
//! f64 functions): two polynomials fitted for it (to the relative or weighted errors given
//! at their constants) and one exponential, measured within 1.1 ulp (the test asserts 1.5).
//!
//! `erf_inv` widens its argument to f64 like the rest of [`super`]. Its Halley steps use an
//! f64 `erf`: `x P(2x^2 - 1)` for `x < 1`, else `1 - e^(-x^2) Q(x)`, where `P` and `Q` are
//! Chebyshev interpolants (written out in powers of their variable) of `erf(x) / x` on
//! [0, 1] and of the scaled complement `e^(x^2) erfc(x)` on [1, 4]; their relative errors
//! are below 1e-12 and 4e-11.
//!
//! `erf_inv(y)` (what `jax.random.normal` spends its time in) starts from Winitzki's closed
//! form (relative error below 2e-3) and takes two Halley steps on `erf(x) = |y|`; for
//! `x >= 1` the step measures the residual as `(1 - |y|) - erfc(x)`, which keeps its
//! relative accuracy as `|y|` nears 1.

use super::{clamp, exp_parts, horner32, ln_positive};

/// `erf(sqrt t) / sqrt t` for `t` in [0, 1], in powers of `s = 2t - 1`.
const ERF_OVER_X: [f64; 9] = [
    0.9654687386698673,
    -0.14053608901553188,
    0.019852496688660258,
    -0.0022854856569336727,
    0.00021751716035374902,
    -1.7536824729018507e-05,
    1.2233672195978863e-06,
    -7.557490441753586e-08,
    4.13647681291993e-09,
];

/// `e^(x^2) erfc(x)` for `x` in [1, 4], in powers of `s = (2x - 5) / 3`.
const SCALED_ERFC: [f64; 16] = [
    0.21080636405480982,
    -0.11152102018260106,
    0.05611049425502124,
    -0.027005296932016098,
    0.012489356941208767,
    -0.005570700586254282,
    0.002403782069922871,
    -0.0010058758334247247,
    0.00040856418717135154,
    -0.00016183966947411757,
    6.366496415861069e-05,
    -2.3968659422623702e-05,
    7.47894394151575e-06,
    -2.7389805740071756e-06,
    1.8114671111512803e-06,
    -6.184192740863965e-07,
];

/// `2 / sqrt(pi)`, the derivative of `erf` at 0.
const TWO_OVER_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;

/// `c[0] + c[1] s + c[2] s^2 + ...` by Horner's rule in fused multiply-adds.
#[inline(always)]
fn horner<const N: usize>(c: &[f64; N], s: f64) -> f64 {
    let mut p = c[N - 1];
    for &k in c[..N - 1].iter().rev() {
        p = p.mul_add(s, k);
    }
    p
}

/// `erf(x)` for `x` in [0, 1].
#[inline(always)]
fn erf_below_one(x: f64) -> f64 {
    let s = (2.0 * x).mul_add(x, -1.0);
    x * horner(&ERF_OVER_X, s)
}

/// `erfc(x)` for `x` in [1, 4].
#[inline(always)]
fn erfc_one_to_four(x: f64) -> f64 {
    let s = x.mul_add(2.0 / 3.0, -5.0 / 3.0);
    let (scale, q) = exp_parts(-(x * x));
    scale.mul_add(q, scale) * horner(&SCALED_ERFC, s)
}

/// `erf(x) / x - 1` for `x^2 = t` in [0, 1], in powers of `t` (relative error of
/// `erf(x) / x` below 1.3e-9).
const ERF_OVER_X_MINUS_ONE: [f32; 7] = [
    0.128_379_17,
    -0.376_126_26,
    0.112_835_854,
    -0.026_853_811,
    0.005_188_327_7,
    -0.000_801_019_3,
    7.853_86e-5,
];

/// `x^2 + ln erfc(x)` for `x` in [1, [`ERF_ONE_FROM`]], in powers of `x - 2` (error below
/// 1.4e-10 where `erfc(x)` is 0.157, growing as `erfc` falls so that its share of `erf`
/// stays below 2.2e-11).
const LOG_SCALED_ERFC: [f32; 8] = [
    -1.364_941_2,
    -0.418_160_8,
    0.076_249_026,
    -0.016_465_815,
    0.003_570_502_6,
    -0.000_730_220_75,
    0.000_137_720_58,
    -2.168_679_4e-5,
];

/// From here on `erf` rounds to 1 in f32 (it does from 3.83).
const ERF_ONE_FROM: f32 = 3.92;

/// `erf(x)`, in f32 arithmetic (twice the lanes of the f64 functions; within 1.5 ulp):
/// below 1, `x + x q(x^2)` with `q` the polynomial above, whose rounding errors are small
/// beside `x`; from 1, `1 - e^(g(x) - x^2)` with `g(x) = x^2 + ln erfc(x)`, where the
/// exponential's errors, relative to `erfc(x) <= 0.157`, stay small beside 1.
#[inline(always)]
pub(crate) fn erf(x: f32) -> f32 {
    // NaN stays NaN through the clamp, both branches and the sign.
    let a = x.abs();
    let a = if a > ERF_ONE_FROM { ERF_ONE_FROM } else { a };
    let t = a * a;
    let below = a.mul_add(horner32(&ERF_OVER_X_MINUS_ONE, t), a);
    let above = 1.0 - super::exp(horner32(&LOG_SCALED_ERFC, a - 2.0) - t);
    let r = if a < 1.0 { below } else { above };
    r.copysign(x)
}

/// `erf(x) - a` for `x >= 0` and `a` in [0, 1), accurate relative to `1 - a` as well when
/// `x >= 1`.
#[inline(always)]
fn erf_residual(x: f64, a: f64) -> f64 {
    let below = erf_below_one(clamp(x, 0.0, 1.0)) - a;
    let above = (1.0 - a) - erfc_one_to_four(clamp(x, 1.0, 4.0));
    if x < 1.0 {
        below
    } else {
        above
    }
}

/// The inverse of `erf`: NaN outside [-1, 1], `±inf` at `±1`.
#[inline(always)]
pub(crate) fn erf_inv(y: f32) -> f32 {
    let yd = y as f64;
    let a = yd.abs();
    // Winitzki: erfinv(a) ~ sqrt(sqrt(t^2 - l/k) - t), t = 2/(pi k) + l/2, l = ln(1 - a^2).
    const K: f64 = 0.147;
    let l = ln_positive((1.0 - a) * (1.0 + a));
    let t = 2.0 / (std::f64::consts::PI * K) + 0.5 * l;
    let mut x = (t.mul_add(t, -l / K).sqrt() - t).sqrt();
    for _ in 0..2 {
        // Halley on f(x) = erf(x) - a, f' = d, f'' = -2x d: x -= f / (d + x f).
        let f = erf_residual(x, a);
        let (scale, q) = exp_parts(-(x * x));
        let d = TWO_OVER_SQRT_PI * scale.mul_add(q, scale);
        x -= f / x.mul_add(f, d);
    }
    let r = if a < 1.0 {
        x
    } else if a == 1.0 {
        f64::INFINITY
    } else {
        f64::NAN
    };
    (r as f32).copysign(y)
}

#[cfg(test)]
mod tests {
    use super::super::tests::check;
    use super::*;

    #[test]
    fn erf_within_one_and_a_half_ulp() {
        check("erf", erf, libm::erf, 1.5);
    }

    #[test]
    fn erf_inv_within_one_ulp() {
        check("erf_inv", erf_inv, crate::eval::special::erf_inv, 1.0);
    }

    #[test]
    fn erf_inv_special_cases() {
        assert_eq!(erf_inv(1.0), f32::INFINITY);
        assert_eq!(erf_inv(-1.0), f32::NEG_INFINITY);
        for y in [f32::NAN, 1.5, -1.0000001, f32::INFINITY, f32::NEG_INFINITY] {
            assert!(erf_inv(y).is_nan(), "erf_inv({y})");
        }
        assert_eq!(erf_inv(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(erf_inv(-0.0).to_bits(), (-0.0f32).to_bits());
        // The largest f32 below 1 and its negation, and a denormal.
        for y in [
            f32::from_bits(0x3f7f_ffff),
            -f32::from_bits(0x3f7f_ffff),
            f32::from_bits(3),
        ] {
            let want = crate::eval::special::erf_inv(y as f64) as f32;
            assert_eq!(erf_inv(y), want, "erf_inv({y:e})");
        }
    }

    #[test]
    fn erf_special_cases() {
        for (x, want) in [
            (0.0f32, 0.0f32),
            (-0.0, -0.0),
            (f32::INFINITY, 1.0),
            (f32::NEG_INFINITY, -1.0),
            (10.0, 1.0),
            (-4.0, -1.0),
        ] {
            assert_eq!(erf(x).to_bits(), want.to_bits(), "erf({x})");
        }
        assert!(erf(f32::NAN).is_nan());
    }
}
