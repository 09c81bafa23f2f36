//! Dense element literals: turns the parsed contents of `dense<...>` into oxla's dense
//! byte layout (row-major, little-endian, one byte per `i1` and sub-byte element).
//!
//! Also encodes decimal literals into every float format StableHLO has, rounding to
//! nearest-even, so `dense<1.5> : tensor<f8E4M3FN>` gets the same bits MLIR would.

use bytes::Bytes;
use oxla_ir::{ElementType, ElementsAttr, TensorType};

/// One scalar literal inside `dense<...>`.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    /// An integer; `hex` marks a `0x` literal (a bit pattern for float types).
    Int {
        /// True when written with a leading `-`.
        negative: bool,
        /// The magnitude.
        magnitude: u128,
        /// True for `0x...` literals.
        hex: bool,
    },
    /// A decimal float literal, as written (including a leading `-`).
    Float(String),
    /// `true` / `false`.
    Bool(bool),
    /// `(real, imag)`.
    Complex(Box<Scalar>, Box<Scalar>),
}

/// The parsed contents of `dense<...>` before the tensor type is known.
#[derive(Clone, Debug, PartialEq)]
pub enum DenseLiteral {
    /// `dense<"0x...">`: raw bytes in MLIR's dense layout.
    Hex(Vec<u8>),
    /// A single scalar, splatted over the shape.
    Splat(Scalar),
    /// A (possibly nested) list with its inferred shape and the elements in row-major order.
    List {
        /// The shape the nesting implies.
        shape: Vec<i64>,
        /// The elements.
        elements: Vec<Scalar>,
    },
}

/// Builds the elements attribute for `literal` of type `ty`.
pub fn encode(literal: &DenseLiteral, ty: &TensorType) -> Result<ElementsAttr, String> {
    let n_elements = ty
        .num_elements()
        .ok_or_else(|| format!("dense literal needs a static shape, got {ty}"))?;
    let elem_size = ty.element_type.byte_size();
    let (data, splat) = match literal {
        DenseLiteral::Hex(bytes) => {
            if bytes.len() == n_elements * elem_size {
                (bytes.clone(), false)
            } else if bytes.len() == elem_size {
                (bytes.clone(), true)
            } else {
                return Err(format!(
                    "hex data of {} bytes does not fit {ty} ({} bytes, or {elem_size} for a splat)",
                    bytes.len(),
                    n_elements * elem_size
                ));
            }
        }
        DenseLiteral::Splat(scalar) => {
            let mut out = Vec::with_capacity(elem_size);
            encode_scalar(scalar, ty.element_type, &mut out)?;
            (out, true)
        }
        DenseLiteral::List { shape, elements } => {
            let matches = shape == &ty.shape || (n_elements == 0 && elements.is_empty());
            if !matches {
                return Err(format!(
                    "dense literal has shape [{}] but the type is {ty}",
                    shape
                        .iter()
                        .map(|d| d.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            let mut out = Vec::with_capacity(n_elements * elem_size);
            for scalar in elements {
                encode_scalar(scalar, ty.element_type, &mut out)?;
            }
            (out, false)
        }
    };
    Ok(ElementsAttr {
        ty: ty.clone(),
        data: Bytes::from(data),
        splat,
    })
}

/// Appends the bytes of one scalar of element type `ty`.
pub fn encode_scalar(scalar: &Scalar, ty: ElementType, out: &mut Vec<u8>) -> Result<(), String> {
    use ElementType::*;
    match ty {
        Pred => {
            let value = match scalar {
                Scalar::Bool(b) => *b,
                Scalar::Int {
                    negative: false,
                    magnitude,
                    ..
                } if *magnitude <= 1 => *magnitude == 1,
                other => return Err(format!("expected a boolean literal for i1, got {other:?}")),
            };
            out.push(u8::from(value));
            Ok(())
        }
        C64 | C128 => {
            let part = if ty == C64 { F32 } else { F64 };
            match scalar {
                Scalar::Complex(re, im) => {
                    encode_scalar(re, part, out)?;
                    encode_scalar(im, part, out)
                }
                other => Err(format!(
                    "expected a complex literal (re, im) for {ty}, got {other:?}"
                )),
            }
        }
        _ if ty.is_int() => {
            let Scalar::Int {
                negative,
                magnitude,
                ..
            } = scalar
            else {
                return Err(format!(
                    "expected an integer literal for {ty}, got {scalar:?}"
                ));
            };
            let bits = ty.bit_width() as u32;
            let max_unsigned: u128 = (1u128 << bits) - 1;
            let value: u128 = if *negative {
                if ty.is_unsigned_int() || *magnitude > (1u128 << (bits - 1)) {
                    return Err(format!(
                        "integer literal -{magnitude} out of range for {ty}"
                    ));
                }
                magnitude.wrapping_neg() & max_unsigned
            } else {
                if *magnitude > max_unsigned {
                    return Err(format!("integer literal {magnitude} out of range for {ty}"));
                }
                *magnitude
            };
            // Signed values are stored sign-extended to the storage width.
            let stored: u128 = if ty.is_signed_int() && bits < 128 && (value >> (bits - 1)) & 1 == 1
            {
                value | !max_unsigned
            } else {
                value
            };
            out.extend_from_slice(&stored.to_le_bytes()[..ty.byte_size()]);
            Ok(())
        }
        _ => {
            let bits = float_bits(scalar, ty)?;
            out.extend_from_slice(&bits.to_le_bytes()[..ty.byte_size()]);
            Ok(())
        }
    }
}

/// The bit pattern of a float scalar in float type `ty`.
fn float_bits(scalar: &Scalar, ty: ElementType) -> Result<u64, String> {
    let width = ty.bit_width() as u32;
    let mask = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    match scalar {
        Scalar::Int {
            hex: true,
            negative: false,
            magnitude,
        } => {
            if *magnitude > u128::from(mask) {
                return Err(format!("hexadecimal float literal too wide for {ty}"));
            }
            Ok(*magnitude as u64)
        }
        Scalar::Int {
            negative,
            magnitude,
            ..
        } => {
            let value = *magnitude as f64;
            encode_float(if *negative { -value } else { value }, ty)
        }
        Scalar::Float(text) => {
            if ty == ElementType::F32 {
                let value: f32 = text
                    .parse()
                    .map_err(|_| format!("invalid float literal {text}"))?;
                return Ok(u64::from(value.to_bits()));
            }
            let value: f64 = text
                .parse()
                .map_err(|_| format!("invalid float literal {text}"))?;
            encode_float(value, ty)
        }
        other => Err(format!("expected a float literal for {ty}, got {other:?}")),
    }
}

/// How a float format spends its special encodings.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Specials {
    /// IEEE-754 style: all-ones exponent holds infinities and NaNs.
    Ieee,
    /// No infinities; NaN is all ones (`FN` types).
    FiniteNanAllOnes,
    /// No infinities, no negative zero; NaN is the negative-zero pattern (`FNUZ` types).
    Fnuz,
    /// No infinities and no NaN (`f4E2M1FN`, `f6E*`).
    FiniteOnly,
}

/// Encodes `value` (rounded to nearest, ties to even) in float type `ty`.
pub fn encode_float(value: f64, ty: ElementType) -> Result<u64, String> {
    use ElementType::*;
    let (exp_bits, man_bits, bias, specials) = match ty {
        F64 => return Ok(value.to_bits()),
        F32 => return Ok(u64::from((value as f32).to_bits())),
        F16 => (5, 10, 15, Specials::Ieee),
        BF16 => (8, 7, 127, Specials::Ieee),
        F8E5M2 => (5, 2, 15, Specials::Ieee),
        F8E4M3 => (4, 3, 7, Specials::Ieee),
        F8E3M4 => (3, 4, 3, Specials::Ieee),
        F8E4M3FN => (4, 3, 7, Specials::FiniteNanAllOnes),
        F8E4M3FNUZ => (4, 3, 8, Specials::Fnuz),
        F8E4M3B11FNUZ => (4, 3, 11, Specials::Fnuz),
        F8E5M2FNUZ => (5, 2, 16, Specials::Fnuz),
        F4E2M1FN => (2, 1, 1, Specials::FiniteOnly),
        F6E2M3FN => (2, 3, 1, Specials::FiniteOnly),
        F6E3M2FN => (3, 2, 3, Specials::FiniteOnly),
        F8E8M0FNU => return encode_e8m0(value),
        other => return Err(format!("{other} is not a float type")),
    };
    let sign_bit: u64 = 1 << (exp_bits + man_bits);
    let exp_all_ones: u64 = (1 << exp_bits) - 1;
    let man_all_ones: u64 = (1 << man_bits) - 1;
    let sign = if value.is_sign_negative() {
        sign_bit
    } else {
        0
    };
    let nan = match specials {
        Specials::Ieee => Some(sign | (exp_all_ones << man_bits) | (1 << (man_bits - 1))),
        Specials::FiniteNanAllOnes => Some(sign | (exp_all_ones << man_bits) | man_all_ones),
        Specials::Fnuz => Some(sign_bit),
        Specials::FiniteOnly => None,
    };
    let overflow = match specials {
        Specials::Ieee => Some(sign | (exp_all_ones << man_bits)),
        _ => nan,
    };
    let max_finite = match specials {
        Specials::Ieee => ((exp_all_ones - 1) << man_bits) | man_all_ones,
        Specials::FiniteNanAllOnes => (exp_all_ones << man_bits) | (man_all_ones - 1),
        Specials::Fnuz | Specials::FiniteOnly => (exp_all_ones << man_bits) | man_all_ones,
    };
    if value.is_nan() {
        return nan.ok_or_else(|| format!("NaN is not representable in {ty}"));
    }
    if value.is_infinite() {
        return overflow.ok_or_else(|| format!("infinity is not representable in {ty}"));
    }
    let magnitude = value.abs();
    if magnitude == 0.0 {
        return Ok(if specials == Specials::Fnuz { 0 } else { sign });
    }
    let min_exp = 1 - bias;
    let exponent = exponent_of(magnitude);
    let bits = if exponent < min_exp {
        // Subnormal (or rounds up to the smallest normal, which the same formula yields).
        let quantum = (2.0f64).powi(min_exp - man_bits);
        round_half_even(magnitude / quantum)
    } else {
        let quantum = (2.0f64).powi(exponent - man_bits);
        let mut mantissa = round_half_even(magnitude / quantum);
        let mut exponent = exponent;
        if mantissa == (2 << man_bits) {
            mantissa = 1 << man_bits;
            exponent += 1;
        }
        let biased = (exponent + bias) as u64;
        if biased > exp_all_ones {
            u64::MAX
        } else {
            (biased << man_bits) | (mantissa - (1 << man_bits))
        }
    };
    if bits > max_finite {
        return overflow.ok_or_else(|| format!("{value} is out of range for {ty}"));
    }
    if bits == 0 && specials == Specials::Fnuz {
        return Ok(0);
    }
    Ok(sign | bits)
}

/// `floor(log2(x))` for a positive finite `x`.
fn exponent_of(x: f64) -> i32 {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // f64 subnormal: far below every smaller format's range.
        -1075
    } else {
        biased - 1023
    }
}

/// Rounds a non-negative value to the nearest integer, ties to even.
fn round_half_even(x: f64) -> u64 {
    let floor = x.floor();
    let diff = x - floor;
    let base = floor as u64;
    if diff > 0.5 || (diff == 0.5 && base % 2 == 1) {
        base + 1
    } else {
        base
    }
}

/// Encodes into `f8E8M0FNU` (a power of two; 0xFF is NaN).
fn encode_e8m0(value: f64) -> Result<u64, String> {
    if value.is_nan() || value <= 0.0 || value.is_infinite() {
        return Ok(0xff);
    }
    let exponent = exponent_of(value);
    // Round to the nearer power of two (ties go up, as the mantissa would round to even).
    let lower = (2.0f64).powi(exponent);
    let rounded = if value - lower >= lower / 2.0 {
        exponent + 1
    } else {
        exponent
    };
    let biased = rounded + 127;
    if !(0..=254).contains(&biased) {
        return Err(format!("{value} is out of range for f8E8M0FNU"));
    }
    Ok(biased as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(text: &str) -> Scalar {
        Scalar::Float(text.to_string())
    }

    #[test]
    fn encodes_small_floats_like_ieee() {
        // 1.0 in f16 is 0x3C00, in bf16 0x3F80; 65504 is f16's largest finite value.
        assert_eq!(encode_float(1.0, ElementType::F16), Ok(0x3C00));
        assert_eq!(encode_float(-2.0, ElementType::BF16), Ok(0xC000));
        assert_eq!(encode_float(65504.0, ElementType::F16), Ok(0x7BFF));
        assert_eq!(encode_float(1e6, ElementType::F16), Ok(0x7C00));
        // The smallest f16 subnormal is 2^-24.
        assert_eq!(encode_float(2f64.powi(-24), ElementType::F16), Ok(0x0001));
        // 448 is the largest f8E4M3FN value; NaN is 0x7F.
        assert_eq!(encode_float(448.0, ElementType::F8E4M3FN), Ok(0x7E));
        assert_eq!(encode_float(f64::NAN, ElementType::F8E4M3FN), Ok(0x7F));
        // f8E5M2: 1.0 = 0 01111 00.
        assert_eq!(encode_float(1.0, ElementType::F8E5M2), Ok(0x3C));
        // FNUZ: NaN is 0x80 and there is no negative zero.
        assert_eq!(encode_float(-0.0, ElementType::F8E4M3FNUZ), Ok(0x00));
        assert_eq!(encode_float(f64::NAN, ElementType::F8E5M2FNUZ), Ok(0x80));
        // f4E2M1FN: 6.0 is the largest value, 0b0111.
        assert_eq!(encode_float(6.0, ElementType::F4E2M1FN), Ok(0x7));
        assert!(encode_float(f64::INFINITY, ElementType::F4E2M1FN).is_err());
        assert_eq!(encode_float(1.0, ElementType::F8E8M0FNU), Ok(127));
    }

    #[test]
    fn ties_round_to_even() {
        // 1 + 2^-11 lies halfway between two f16 values; it rounds down to 1.0.
        assert_eq!(
            encode_float(1.0 + 2f64.powi(-11), ElementType::F16),
            Ok(0x3C00)
        );
        assert_eq!(
            encode_float(1.0 + 3.0 * 2f64.powi(-11), ElementType::F16),
            Ok(0x3C02)
        );
    }

    #[test]
    fn encodes_lists_and_checks_shapes() {
        let ty = TensorType::new([2], ElementType::S32);
        let lit = DenseLiteral::List {
            shape: vec![2],
            elements: vec![
                Scalar::Int {
                    negative: true,
                    magnitude: 1,
                    hex: false,
                },
                Scalar::Int {
                    negative: false,
                    magnitude: 7,
                    hex: false,
                },
            ],
        };
        let attr = encode(&lit, &ty).expect("encodes");
        assert_eq!(attr.data.as_ref(), &[0xff, 0xff, 0xff, 0xff, 7, 0, 0, 0]);
        assert!(!attr.splat);
        let wrong = TensorType::new([3], ElementType::S32);
        assert!(encode(&lit, &wrong).is_err());
        let f32_ty = TensorType::new([4], ElementType::F32);
        let splat = encode(&DenseLiteral::Splat(float("0.5")), &f32_ty).expect("splat");
        assert!(splat.splat);
        assert_eq!(splat.data.as_ref(), &0.5f32.to_le_bytes());
    }

    #[test]
    fn rejects_out_of_range_integers() {
        let mut out = Vec::new();
        let big = Scalar::Int {
            negative: false,
            magnitude: 256,
            hex: false,
        };
        assert!(encode_scalar(&big, ElementType::U8, &mut out).is_err());
        let minus = Scalar::Int {
            negative: true,
            magnitude: 1,
            hex: false,
        };
        assert!(encode_scalar(&minus, ElementType::U8, &mut out).is_err());
        // Signless 8-bit accepts 255 (as -1) and -128.
        encode_scalar(
            &Scalar::Int {
                negative: false,
                magnitude: 255,
                hex: false,
            },
            ElementType::S8,
            &mut out,
        )
        .expect("255 fits i8 as a bit pattern");
        assert_eq!(out, vec![0xff]);
    }
}
