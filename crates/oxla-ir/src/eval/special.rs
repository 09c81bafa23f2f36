//! Special functions behind the CHLO ops JAX leaves in programs (`chlo.erf`, `chlo.lgamma`,
//! `chlo.asinh`, ...), evaluated in f64 and rounded to the operand type by the caller.

use super::context::OpCx;
use crate::{Attribute, ElementType, IrError, Literal, OpKind};

/// True for CHLO unary ops evaluated elementwise on floats here or in `elementwise.rs`.
pub(crate) fn is_special_unary(kind: &OpKind) -> bool {
    use OpKind as K;
    matches!(
        kind,
        K::ChloErf
            | K::ChloErfc
            | K::ChloErfInv
            | K::ChloLgamma
            | K::ChloDigamma
            | K::ChloBesselI1e
            | K::ChloAcos
            | K::ChloAcosh
            | K::ChloAsin
            | K::ChloAsinh
            | K::ChloAtan
            | K::ChloAtanh
            | K::ChloCosh
            | K::ChloSinh
            | K::ChloTan
            | K::ChloConj
            | K::ChloIsInf
            | K::ChloIsNegInf
            | K::ChloIsPosInf
            | K::ChloSquare
    )
}

/// True for CHLO binary ops evaluated elementwise on floats.
pub(crate) fn is_special_binary(kind: &OpKind) -> bool {
    use OpKind as K;
    matches!(kind, K::ChloNextAfter | K::ChloPolygamma | K::ChloZeta)
}

/// A unary special function of `x`; `None` if `kind` is not one.
pub(crate) fn float_unary(kind: &OpKind, x: f64) -> Option<f64> {
    use OpKind as K;
    Some(match kind {
        K::ChloErf => libm::erf(x),
        K::ChloErfc => libm::erfc(x),
        K::ChloErfInv => erf_inv(x),
        K::ChloLgamma => libm::lgamma(x),
        K::ChloDigamma => digamma(x),
        K::ChloBesselI1e => bessel_i1e(x),
        K::ChloAcos => x.acos(),
        K::ChloAcosh => x.acosh(),
        K::ChloAsin => x.asin(),
        K::ChloAsinh => x.asinh(),
        K::ChloAtan => x.atan(),
        K::ChloAtanh => x.atanh(),
        K::ChloCosh => x.cosh(),
        K::ChloSinh => x.sinh(),
        _ => return None,
    })
}

/// A binary special function; `None` if `kind` is not one (next_after is typed, see caller).
pub(crate) fn float_binary(kind: &OpKind, x: f64, y: f64) -> Option<f64> {
    use OpKind as K;
    Some(match kind {
        K::ChloPolygamma => polygamma(x, y),
        K::ChloZeta => hurwitz_zeta(x, y),
        _ => return None,
    })
}

/// The inverse error function: an initial guess refined by Newton steps on `erf`.
pub(crate) fn erf_inv(y: f64) -> f64 {
    if y.is_nan() || !(-1.0..=1.0).contains(&y) {
        return f64::NAN;
    }
    if y == 1.0 {
        return f64::INFINITY;
    }
    if y == -1.0 {
        return f64::NEG_INFINITY;
    }
    // Initial guess from the logarithmic approximation of Winitzki.
    let a = 0.147;
    let ln = (1.0 - y * y).ln();
    let t = 2.0 / (std::f64::consts::PI * a) + ln / 2.0;
    let mut x = (((t * t) - ln / a).sqrt() - t).sqrt().copysign(y);
    let two_over_sqrt_pi = 2.0 / std::f64::consts::PI.sqrt();
    for _ in 0..4 {
        let err = libm::erf(x) - y;
        let deriv = two_over_sqrt_pi * (-x * x).exp();
        if deriv == 0.0 {
            break;
        }
        x -= err / deriv;
    }
    x
}

/// The digamma function.
pub(crate) fn digamma(mut x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x <= 0.0 && x == x.floor() {
        return f64::NAN;
    }
    let mut res = 0.0;
    if x < 0.5 {
        // Reflection: psi(1 - x) - psi(x) = pi / tan(pi x).
        let pi = std::f64::consts::PI;
        res -= pi / (pi * x).tan();
        x = 1.0 - x;
    }
    while x < 10.0 {
        res -= 1.0 / x;
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    let series = inv2
        * (1.0 / 12.0
            - inv2 * (1.0 / 120.0 - inv2 * (1.0 / 252.0 - inv2 * (1.0 / 240.0 - inv2 / 132.0))));
    res + x.ln() - 0.5 * inv - series
}

/// The exponentially scaled modified Bessel function of order one.
pub(crate) fn bessel_i1e(x: f64) -> f64 {
    let ax = x.abs();
    if x.is_nan() {
        return x;
    }
    let res = if ax <= 30.0 {
        // Power series of I1, scaled by exp(-|x|).
        let half = ax / 2.0;
        let mut term = half;
        let mut sum = term;
        let mut k = 1.0;
        while term > sum * 1e-17 {
            term *= half * half / (k * (k + 1.0));
            sum += term;
            k += 1.0;
        }
        sum * (-ax).exp()
    } else {
        // Asymptotic expansion: e^-x I1(x) ~ (2 pi x)^-1/2 sum_k (-1)^k a_k(1) / x^k.
        let mut term = 1.0;
        let mut sum = 1.0;
        for k in 1..40 {
            let kf = f64::from(k);
            let odd = 2.0 * kf - 1.0;
            term *= -(4.0 - odd * odd) / (kf * 8.0 * ax);
            sum += term;
            if term.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        sum / (2.0 * std::f64::consts::PI * ax).sqrt()
    };
    res.copysign(x)
}

/// The Hurwitz zeta function zeta(s, q) for s > 1 (Euler-Maclaurin summation).
pub(crate) fn hurwitz_zeta(s: f64, q: f64) -> f64 {
    if s.is_nan() || q.is_nan() {
        return f64::NAN;
    }
    if s == 1.0 {
        return f64::INFINITY;
    }
    if s < 1.0 {
        return f64::NAN;
    }
    if q <= 0.0 {
        if q == q.floor() {
            return f64::INFINITY;
        }
        return f64::NAN;
    }
    const N: usize = 12;
    let mut sum = 0.0;
    for k in 0..N {
        sum += (q + k as f64).powf(-s);
    }
    let a = q + N as f64;
    sum += a.powf(1.0 - s) / (s - 1.0) + 0.5 * a.powf(-s);
    // Bernoulli numbers B2, B4, ..., B16 divided by their factorials' index (2j)!.
    const B: [f64; 8] = [
        1.0 / 6.0,
        -1.0 / 30.0,
        1.0 / 42.0,
        -1.0 / 30.0,
        5.0 / 66.0,
        -691.0 / 2730.0,
        7.0 / 6.0,
        -3617.0 / 510.0,
    ];
    let mut rising = s; // s (s+1) ... (s + 2j - 2)
    let mut factorial = 2.0; // (2j)!
    let mut power = a.powf(-s - 1.0);
    for (j, b) in B.iter().enumerate() {
        sum += b / factorial * rising * power;
        let j2 = 2.0 * (j as f64 + 1.0);
        rising *= (s + j2 - 1.0) * (s + j2);
        factorial *= (j2 + 1.0) * (j2 + 2.0);
        power /= a * a;
    }
    sum
}

/// The polygamma function psi^(n)(x) for integer n >= 0.
pub(crate) fn polygamma(n: f64, x: f64) -> f64 {
    if n != n.floor() || n < 0.0 {
        return f64::NAN;
    }
    if n == 0.0 {
        return digamma(x);
    }
    let factorial = libm::tgamma(n + 1.0);
    let sign = if n % 2.0 == 0.0 { -1.0 } else { 1.0 };
    sign * factorial * hurwitz_zeta(n + 1.0, x)
}

/// A `chlo.erf` composite on f32, evaluated as the vector `erf` of
/// [`super::fastmath`] (within 1 ulp, in f32 lanes) instead of its decomposition: jaxlib writes
/// `erf` as a composite whose decomposition is a rational approximation over sixteen
/// full-size constants, which ran about ten times slower; XLA's cpu backend evaluates the op
/// itself too, with its own approximation, so neither form gives its bits. `None` for every
/// other composite and element type.
pub(crate) fn native_composite(cx: OpCx<'_>, x: &Literal) -> Option<Result<Literal, IrError>> {
    match cx.attr("name") {
        Ok(Attribute::String(name)) if name == "chlo.erf" => {}
        _ => return None,
    }
    if x.ty.element_type != ElementType::F32 {
        return None;
    }
    let v = super::typed::view::<f32>(x)?;
    Some(super::typed::build_overwritten::<f32>(
        x.ty.clone(),
        v.len(),
        |out| {
            super::threads::map_split(&v, out, 1 << 15, |v, o| {
                super::fastmath::map_f32(v, o, &OpKind::ChloErf);
            });
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_inv_inverts_erf() {
        for &x in &[-2.5, -1.0, -0.3, 0.0, 0.1, 0.7, 1.9] {
            let y = libm::erf(x);
            assert!((erf_inv(y) - x).abs() < 1e-9, "x = {x}");
        }
        assert_eq!(erf_inv(1.0), f64::INFINITY);
        assert!(erf_inv(1.5).is_nan());
    }

    #[test]
    fn digamma_known_values() {
        // psi(1) = -gamma (Euler-Mascheroni), psi(1/2) = -gamma - 2 ln 2.
        let gamma = 0.577_215_664_901_532_9;
        assert!((digamma(1.0) + gamma).abs() < 1e-12);
        assert!((digamma(0.5) + gamma + 2.0 * 2f64.ln()).abs() < 1e-12);
        // Recurrence psi(x + 1) = psi(x) + 1 / x, also for negative x.
        assert!((digamma(-1.5) + 1.0 / -1.5 - digamma(-0.5)).abs() < 1e-12);
        assert!(digamma(0.0).is_nan());
    }

    #[test]
    fn zeta_and_polygamma_known_values() {
        // zeta(2, 1) = pi^2 / 6; psi'(1) = pi^2 / 6.
        let z2 = std::f64::consts::PI.powi(2) / 6.0;
        assert!((hurwitz_zeta(2.0, 1.0) - z2).abs() < 1e-12);
        assert!((polygamma(1.0, 1.0) - z2).abs() < 1e-12);
        // zeta(3, 2) = zeta(3) - 1.
        assert!((hurwitz_zeta(3.0, 2.0) - (1.202_056_903_159_594_3 - 1.0)).abs() < 1e-12);
    }

    #[test]
    fn bessel_i1e_series_and_asymptotic_agree() {
        // I1(1) = 0.565159103992485...
        assert!((bessel_i1e(1.0) - 0.565_159_103_992_485 * (-1f64).exp()).abs() < 1e-14);
        assert!((bessel_i1e(30.0) - bessel_i1e(30.000_000_1)).abs() < 1e-9);
        assert!((bessel_i1e(-2.0) + bessel_i1e(2.0)).abs() < 1e-15);
    }
}
