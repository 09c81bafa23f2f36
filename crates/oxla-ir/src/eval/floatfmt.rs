//! Small float formats (f8, f6, f4 and the general case of f16/bf16), described by their
//! exponent and mantissa widths, bias and special-value rules, with exact decoding and
//! round-to-nearest-even encoding.
//!
//! The special-value rules follow XLA CPU: IEEE-like formats overflow to infinity;
//! `FN` formats (no infinity, NaN = all ones) overflow to NaN; `FNUZ` formats (no negative
//! zero, NaN = sign bit only) overflow to NaN and flush `-0` to `+0`; the finite-only
//! f6/f4 formats saturate to their largest value and turn NaN into `-0`; `f8E8M0FNU`
//! (powers of two only) rounds ties away from zero, has no zero, and maps zero, negative
//! values, infinities and overflow to NaN.

use crate::ElementType;

/// How a format treats infinities, NaN and overflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    /// Infinity and NaN use the all-ones exponent.
    Ieee,
    /// No infinity; NaN is all exponent and mantissa bits set.
    FiniteNanAllOnes,
    /// No infinity, no negative zero; NaN is the negative-zero pattern.
    Fnuz,
    /// No infinity or NaN at all; overflow saturates.
    FiniteOnly,
    /// Unsigned power of two (`f8E8M0FNU`).
    E8M0,
}

/// A small float format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FloatFormat {
    pub exp_bits: u32,
    pub mant_bits: u32,
    pub bias: i32,
    pub special: Special,
}

const fn fmt(exp_bits: u32, mant_bits: u32, bias: i32, special: Special) -> FloatFormat {
    FloatFormat {
        exp_bits,
        mant_bits,
        bias,
        special,
    }
}

pub(crate) const F8E4M3FN: FloatFormat = fmt(4, 3, 7, Special::FiniteNanAllOnes);
/// IEEE half precision.
pub(crate) const F16: FloatFormat = fmt(5, 10, 15, Special::Ieee);
/// bfloat16.
pub(crate) const BF16: FloatFormat = fmt(8, 7, 127, Special::Ieee);

/// The format of a small float element type (not f16/bf16/f32/f64).
pub(crate) fn format_of(et: ElementType) -> Option<FloatFormat> {
    use ElementType as E;
    Some(match et {
        E::F4E2M1FN => fmt(2, 1, 1, Special::FiniteOnly),
        E::F6E2M3FN => fmt(2, 3, 1, Special::FiniteOnly),
        E::F6E3M2FN => fmt(3, 2, 3, Special::FiniteOnly),
        E::F8E3M4 => fmt(3, 4, 3, Special::Ieee),
        E::F8E4M3 => fmt(4, 3, 7, Special::Ieee),
        E::F8E4M3FN => F8E4M3FN,
        E::F8E4M3FNUZ => fmt(4, 3, 8, Special::Fnuz),
        E::F8E4M3B11FNUZ => fmt(4, 3, 11, Special::Fnuz),
        E::F8E5M2 => fmt(5, 2, 15, Special::Ieee),
        E::F8E5M2FNUZ => fmt(5, 2, 16, Special::Fnuz),
        E::F8E8M0FNU => fmt(8, 0, 127, Special::E8M0),
        _ => return None,
    })
}

impl FloatFormat {
    fn sign_bit(self) -> u32 {
        if self.special == Special::E8M0 {
            0
        } else {
            1 << (self.exp_bits + self.mant_bits)
        }
    }

    fn max_exp_field(self) -> u32 {
        (1 << self.exp_bits) - 1
    }

    fn nan_bits(self, negative: bool) -> u32 {
        let mant_all = (1u32 << self.mant_bits) - 1;
        match self.special {
            Special::Ieee => {
                let sign = if negative { self.sign_bit() } else { 0 };
                sign | (self.max_exp_field() << self.mant_bits)
                    | (1 << self.mant_bits.saturating_sub(1))
            }
            Special::FiniteNanAllOnes => {
                let sign = if negative { self.sign_bit() } else { 0 };
                sign | (self.max_exp_field() << self.mant_bits) | mant_all
            }
            Special::Fnuz | Special::FiniteOnly => self.sign_bit(),
            Special::E8M0 => 0xff,
        }
    }

    /// Largest finite magnitude's (exponent field, mantissa field).
    fn max_finite_fields(self) -> (u32, u32) {
        let mant_all = (1u32 << self.mant_bits) - 1;
        match self.special {
            Special::Ieee => (self.max_exp_field() - 1, mant_all),
            Special::FiniteNanAllOnes => (self.max_exp_field(), mant_all - 1),
            Special::Fnuz | Special::FiniteOnly => (self.max_exp_field(), mant_all),
            Special::E8M0 => (self.max_exp_field() - 1, 0),
        }
    }

    fn value_of_fields(self, exp_field: u32, mant_field: u32) -> f64 {
        let mant_scale = f64::from(1u32 << self.mant_bits);
        if exp_field == 0 && self.special != Special::E8M0 {
            f64::from(mant_field) / mant_scale * pow2(1 - self.bias)
        } else {
            (1.0 + f64::from(mant_field) / mant_scale) * pow2(exp_field as i32 - self.bias)
        }
    }
}

fn pow2(e: i32) -> f64 {
    2f64.powi(e)
}

/// The exact value of `bits` in `format`.
pub(crate) fn decode(format: FloatFormat, bits: u32) -> f64 {
    let total = format.exp_bits + format.mant_bits + u32::from(format.special != Special::E8M0);
    let bits = if total < 32 {
        bits & ((1 << total) - 1)
    } else {
        bits
    };
    if format.special == Special::E8M0 {
        return if bits == 0xff {
            f64::NAN
        } else {
            pow2(bits as i32 - format.bias)
        };
    }
    let negative = bits & format.sign_bit() != 0;
    let exp_field = (bits >> format.mant_bits) & format.max_exp_field();
    let mant_field = bits & ((1 << format.mant_bits) - 1);
    let magnitude = match format.special {
        Special::Ieee if exp_field == format.max_exp_field() => {
            if mant_field == 0 {
                f64::INFINITY
            } else {
                f64::NAN
            }
        }
        Special::FiniteNanAllOnes
            if exp_field == format.max_exp_field() && mant_field == (1 << format.mant_bits) - 1 =>
        {
            f64::NAN
        }
        Special::Fnuz if negative && exp_field == 0 && mant_field == 0 => return f64::NAN,
        _ => format.value_of_fields(exp_field, mant_field),
    };
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

/// Encodes `x` in `format`, rounding to nearest (ties to even; ties away for E8M0).
pub(crate) fn encode(format: FloatFormat, x: f64) -> u32 {
    let negative = x.is_sign_negative();
    if x.is_nan() {
        return format.nan_bits(negative);
    }
    if format.special == Special::E8M0 {
        return encode_e8m0(format, x);
    }
    let sign = if negative { format.sign_bit() } else { 0 };
    let (max_exp, max_mant) = format.max_finite_fields();
    let max_value = format.value_of_fields(max_exp, max_mant);
    let overflow = || -> u32 {
        match format.special {
            Special::Ieee => sign | (format.max_exp_field() << format.mant_bits),
            Special::FiniteNanAllOnes | Special::Fnuz => format.nan_bits(negative),
            Special::FiniteOnly | Special::E8M0 => sign | (max_exp << format.mant_bits) | max_mant,
        }
    };
    let a = x.abs();
    if a.is_infinite() {
        return overflow();
    }
    if a == 0.0 {
        return if format.special == Special::Fnuz {
            0
        } else {
            sign
        };
    }
    let min_normal_exp = 1 - format.bias;
    // Exponent of `a` (floor(log2 a)), exact from the f64 representation.
    let exp = exponent_of(a).max(min_normal_exp);
    let quantum_exp = exp - format.mant_bits as i32;
    let scaled = a * pow2(-quantum_exp);
    let q = scaled.round_ties_even();
    let rounded = q * pow2(quantum_exp);
    if rounded > max_value {
        return overflow();
    }
    if rounded == 0.0 {
        return if format.special == Special::Fnuz {
            0
        } else {
            sign
        };
    }
    let r_exp = exponent_of(rounded);
    let fields = if r_exp < min_normal_exp {
        // Subnormal: the mantissa field is the count of quanta.
        q as u32
    } else {
        let exp_field = (r_exp + format.bias) as u32;
        let mant =
            rounded * pow2(format.mant_bits as i32 - r_exp) - f64::from(1u32 << format.mant_bits);
        (exp_field << format.mant_bits) | mant as u32
    };
    sign | fields
}

fn encode_e8m0(format: FloatFormat, x: f64) -> u32 {
    if x <= 0.0 || x.is_infinite() {
        return format.nan_bits(false);
    }
    let mut exp = exponent_of(x);
    if x * pow2(-exp) >= 1.5 {
        exp += 1;
    }
    let field = (exp + format.bias).max(0);
    if field > 254 {
        format.nan_bits(false)
    } else {
        field as u32
    }
}

/// floor(log2(a)) for a finite positive f64, subnormals included.
fn exponent_of(a: f64) -> i32 {
    let bits = a.to_bits();
    let exp_field = ((bits >> 52) & 0x7ff) as i32;
    if exp_field == 0 {
        let mant = bits & ((1u64 << 52) - 1);
        // Subnormal: value = mant * 2^-1074.
        63 - mant.leading_zeros() as i32 - 1074
    } else {
        exp_field - 1023
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_and_bf16_agree_with_half_on_f32_inputs() {
        for &x in &[
            1.0f32 + 2f32.powi(-11),
            65519.0,
            65520.0,
            1e-7,
            -3.3e-5,
            3.4e38,
            1.17e-38,
            -0.0,
        ] {
            let h = half::f16::from_f32(x).to_bits();
            assert_eq!(encode(F16, f64::from(x)), u32::from(h), "f16 {x}");
            let b = half::bf16::from_f32(x).to_bits();
            assert_eq!(encode(BF16, f64::from(x)), u32::from(b), "bf16 {x}");
            assert_eq!(decode(F16, u32::from(h)), half::f16::from_bits(h).to_f64());
        }
    }

    fn round_trip(et: ElementType, x: f64) -> f64 {
        let f = format_of(et).unwrap();
        decode(f, encode(f, x))
    }

    #[test]
    fn e4m3fn_rounds_and_overflows_to_nan() {
        let et = ElementType::F8E4M3FN;
        assert_eq!(round_trip(et, 448.0), 448.0);
        // 464 is halfway between 448 (mantissa 110) and 480 (not representable): ties to 448.
        assert_eq!(round_trip(et, 464.0), 448.0);
        assert!(round_trip(et, 500.0).is_nan());
        assert!(round_trip(et, f64::INFINITY).is_nan());
        assert_eq!(round_trip(et, 3.0), 3.0);
        // Smallest subnormal 2^-9; half of it ties to zero, 1.5 of it ties to 2^-8.
        assert_eq!(round_trip(et, 2f64.powi(-10)), 0.0);
        assert_eq!(round_trip(et, 1.5 * 2f64.powi(-9)), 2f64.powi(-8));
        let f = format_of(et).unwrap();
        assert_eq!(encode(f, -0.0), 0x80);
        assert_eq!(encode(f, f64::NAN), 0x7f);
        assert_eq!(encode(f, 3.0), 0x44);
    }

    #[test]
    fn e5m2_is_ieee_like() {
        let et = ElementType::F8E5M2;
        let f = format_of(et).unwrap();
        assert_eq!(round_trip(et, 500.0), 512.0);
        assert_eq!(round_trip(et, 1e6), f64::INFINITY);
        assert_eq!(encode(f, f64::NEG_INFINITY), 0xfc);
        assert_eq!(encode(f, f64::NAN), 0x7e);
        assert_eq!(round_trip(et, 57344.0), 57344.0);
    }

    #[test]
    fn fnuz_formats_have_unsigned_zero() {
        let f = format_of(ElementType::F8E4M3FNUZ).unwrap();
        assert_eq!(encode(f, -0.0), 0);
        assert_eq!(encode(f, f64::NAN), 0x80);
        assert_eq!(encode(f, 240.0), 0x7f);
        assert_eq!(encode(f, 1000.0), 0x80);
        assert!(decode(f, 0x80).is_nan());
        assert_eq!(decode(f, 0x7f), 240.0);
        let f = format_of(ElementType::F8E4M3B11FNUZ).unwrap();
        assert_eq!(encode(f, 3.0), 100);
    }

    #[test]
    fn finite_only_formats_saturate() {
        let et = ElementType::F4E2M1FN;
        assert_eq!(round_trip(et, 500.0), 6.0);
        assert_eq!(round_trip(et, f64::NEG_INFINITY), -6.0);
        assert_eq!(round_trip(et, 5.0), 4.0);
        let f = format_of(et).unwrap();
        assert_eq!(encode(f, f64::NAN), 0x8);
        assert_eq!(round_trip(ElementType::F6E2M3FN, 100.0), 7.5);
        assert_eq!(round_trip(ElementType::F6E3M2FN, 100.0), 28.0);
        assert_eq!(round_trip(ElementType::F6E3M2FN, 0.0625), 0.0625);
    }

    #[test]
    fn e8m0_rounds_ties_up_and_has_no_zero() {
        let et = ElementType::F8E8M0FNU;
        assert_eq!(round_trip(et, 1.5), 2.0);
        assert_eq!(round_trip(et, 3.0), 4.0);
        assert_eq!(round_trip(et, 5.0), 4.0);
        assert_eq!(round_trip(et, 1e-40), 2f64.powi(-127));
        assert!(round_trip(et, 0.0).is_nan());
        assert!(round_trip(et, -2.0).is_nan());
        assert!(round_trip(et, 3.4e38).is_nan());
    }

    #[test]
    fn e5m2_decodes_like_the_top_byte_of_f16() {
        for i in 0..=255u8 {
            let f = format_of(ElementType::F8E5M2).unwrap();
            let v = decode(f, u32::from(i));
            // f8E5M2 is the top byte of f16: decoding must agree with half's f16.
            let h = half::f16::from_bits(u16::from(i) << 8).to_f64();
            assert!(v == h || (v.is_nan() && h.is_nan()), "byte {i}: {v} vs {h}");
            if !v.is_nan() {
                assert_eq!(encode(f, v), u32::from(i));
            }
        }
    }
}
