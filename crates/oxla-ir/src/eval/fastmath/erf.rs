//! The error function and its inverse for f32 tensors.
//!
//! `erf` stays in f32 with fused multiply-adds (twice the lanes of the f64 functions): one
//! polynomial of degree 5 per quarter of `|x|` up to 4, whose coefficients each lane picks
//! from registers ([`ERF`]), about twenty vector instructions per sixteen values; measured
//! within 0.79 ulp.
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

use super::{clamp, exp_parts, ln_positive};
use oxla_simd::OddPiecewise;

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

/// `erf` as sixteen polynomials of degree 5 over `|x|` in [0, 4), a quarter wide each
/// (`oxla_simd::OddPiecewise`): on [0, 1/4) `a + a p(s)`, elsewhere `erf(m) + s p(s)`,
/// where `s` is the offset from a point `m` near the interval's middle, in quarters, chosen
/// where `erf(m)` is within a twentieth of an ulp of an f32 (the `base`). Fitted by
/// weighted least squares to the error in f32 ulps, then rounded to f32; the last interval
/// is fitted up to the clamp at 3.94, past which `erf` rounds to 1 (it does from 3.92).
/// Measured within 0.79 ulp, and correctly rounded for 98.6% of the arguments, over every
/// third f32 from the smallest normal to 4 (the test asserts 0.85).
static ERF: OddPiecewise = OddPiecewise {
    clamp: 3.94,
    scale: 4.0,
    center: [
        0.5, 0.5103656, 0.50739, 0.487028, 0.49864745, 0.504846, 0.48141384, 0.5110558, 0.5090506,
        0.48838842, 0.5091171, 0.49989402, 0.5075537, 0.5085758, 0.49482012, 0.35615826,
    ],
    coefficients: [
        [
            0.12252963,
            0.24461068,
            0.19043393,
            0.13193151,
            0.07962904,
            0.042448223,
            0.020423736,
            0.008299918,
            0.0030556633,
            0.0010155176,
            0.0002835539,
            7.256818e-05,
            1.5999683e-05,
            3.142129e-06,
            5.59208e-07,
            1.0938176e-07,
        ],
        [
            -0.023288738,
            -0.023090722,
            -0.02984326,
            -0.028753052,
            -0.022388937,
            -0.014604433,
            -0.008273419,
            -0.0038963214,
            -0.0016250495,
            -0.0006022266,
            -0.00018624382,
            -5.2157862e-05,
            -1.2507304e-05,
            -2.652852e-06,
            -5.06599e-07,
            5.3730393e-08,
        ],
        [
            -0.022852644,
            -0.0036428967,
            -0.00084955775,
            0.0014289784,
            0.0025376934,
            0.0024654649,
            0.0018088358,
            0.0010464967,
            0.0005124978,
            0.00021693304,
            7.564278e-05,
            2.3478478e-05,
            6.1839364e-06,
            1.4273736e-06,
            2.9420386e-07,
            1.6682507e-07,
        ],
        [
            0.0008652758,
            0.00065297546,
            0.0006883027,
            0.00044327625,
            0.00010968084,
            -0.00011986143,
            -0.00019398938,
            -0.00016446435,
            -0.000102423604,
            -5.177772e-05,
            -2.0961881e-05,
            -7.351384e-06,
            -2.1564988e-06,
            -5.4730185e-07,
            -1.2274555e-07,
            -2.2268423e-06,
        ],
        [
            0.00041428776,
            4.351329e-05,
            -2.6846612e-05,
            -6.4946966e-05,
            -5.9660488e-05,
            -2.9769317e-05,
            -2.6416685e-06,
            1.1129583e-05,
            1.212893e-05,
            8.217294e-06,
            4.1071435e-06,
            1.6873919e-06,
            5.655288e-07,
            1.6081837e-07,
            3.981644e-08,
            -6.835516e-07,
        ],
        [
            -1.898006e-05,
            -1.2137808e-05,
            -1.003866e-05,
            -2.5590587e-06,
            3.7481827e-06,
            5.3786607e-06,
            3.5216651e-06,
            1.0094014e-06,
            -4.3556915e-07,
            -7.5609233e-07,
            -5.478948e-07,
            -2.793108e-07,
            -1.11134305e-07,
            -3.6043e-08,
            -9.827313e-09,
            8.674877e-06,
        ],
    ],
    base: [
        0.0, 0.40665492, 0.6246498, 0.7823685, 0.8882806, 0.9483761, 0.978067, 0.9920823,
        0.99737376, 0.99920535, 0.9997972, 0.99995214, 0.9999902, 0.9999982, 0.9999997, 0.99999994,
    ],
};

/// `out[i] = erf(v[i])` in f32 arithmetic (within 1 ulp), sixteen lanes a step where the
/// CPU has AVX-512; every CPU computes the same bits.
pub(crate) fn map_erf(v: &[f32], out: &mut [f32]) {
    ERF.map(v, out);
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
    fn erf_within_085_ulp() {
        check("erf", |x| ERF.eval(x), libm::erf, 0.85);
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
            assert_eq!(ERF.eval(x).to_bits(), want.to_bits(), "erf({x})");
        }
        assert!(ERF.eval(f32::NAN).is_nan());
    }
}
