//! Type conversions: `convert`, `bitcast_convert` and `reduce_precision`.
//!
//! `convert` follows XLA CPU: integers wrap, floats convert to integers by truncation with
//! saturation at the target's range and NaN becoming 0, complex sources contribute their
//! real part, and every float result is rounded once, to nearest even, from the exact
//! source value (integers wider than f64's mantissa go through round-to-odd first).

use super::context::OpCx;
use super::element::{decode, encode, encode_bytes, storage_of, Array, Storage};
use super::floatfmt;
use crate::{ElementType, IrError, Literal, TensorType};
use num_complex::{Complex32, Complex64};

/// Source values widened without loss.
enum Wide {
    Int(Vec<i128>),
    Float(Vec<f64>),
    Complex(Vec<Complex64>),
}

fn widen(arr: &Array) -> Wide {
    fn ints<T: Copy + Into<i128>>(v: &[T]) -> Wide {
        Wide::Int(v.iter().map(|&x| x.into()).collect())
    }
    match arr {
        Array::Pred(v) => Wide::Int(v.iter().map(|&b| i128::from(b)).collect()),
        Array::S8(v) => ints(v),
        Array::S16(v) => ints(v),
        Array::S32(v) => ints(v),
        Array::S64(v) => ints(v),
        Array::U8(v) => ints(v),
        Array::U16(v) => ints(v),
        Array::U32(v) => ints(v),
        Array::U64(v) => ints(v),
        Array::F32(v) => Wide::Float(v.iter().map(|&x| f64::from(x)).collect()),
        Array::F64(v) => Wide::Float(v.clone()),
        Array::C64(v) => Wide::Complex(
            v.iter()
                .map(|z| Complex64::new(f64::from(z.re), f64::from(z.im)))
                .collect(),
        ),
        Array::C128(v) => Wide::Complex(v.clone()),
    }
}

/// `x` as f64 without float arithmetic on a denormal (which the flushing mode executions
/// run in would read as zero).
fn f32_exact(x: f32) -> f64 {
    if x.is_subnormal() {
        let magnitude = f64::from(x.to_bits() & 0x007f_ffff) * 2f64.powi(-149);
        if x.is_sign_negative() {
            -magnitude
        } else {
            magnitude
        }
    } else {
        f64::from(x)
    }
}

/// `v` as f64, rounded to odd when inexact, so a second rounding to a narrower float is
/// correct.
fn int_to_f64_odd(v: i128) -> f64 {
    let magnitude = v.unsigned_abs();
    let significant = 128 - magnitude.leading_zeros();
    let res = if significant <= 53 {
        magnitude as f64
    } else {
        let shift = significant - 53;
        let mut kept = magnitude >> shift;
        if magnitude & ((1u128 << shift) - 1) != 0 {
            kept |= 1;
        }
        (kept as f64) * 2f64.powi(shift as i32)
    };
    if v < 0 {
        -res
    } else {
        res
    }
}

/// Float to integer as XLA CPU: truncate, saturate to `[lo, hi]`, NaN to 0.
fn float_to_int(x: f64, lo: i128, hi: i128) -> i128 {
    if x.is_nan() {
        0
    } else if x <= lo as f64 {
        lo
    } else if x >= hi as f64 {
        hi
    } else {
        x.trunc() as i128
    }
}

/// `x as u32` (truncation toward zero, saturation at 0 and `u32::MAX`, NaN to 0): the
/// general path's [`float_to_int`] for u32, through `oxla_simd::f32_to_i32` (values from
/// 2^31 on less 2^31, which is exact there), so that a loop over it vectorizes.
#[inline(always)]
pub(crate) fn f32_to_u32(x: f32) -> u32 {
    const TWO_31: f32 = 2_147_483_648.0;
    let high = x >= TWO_31;
    let low = oxla_simd::f32_to_i32(if high { x - TWO_31 } else { x });
    if high {
        (low as u32).wrapping_add(1 << 31)
    } else {
        low.max(0) as u32
    }
}

fn int_range(et: ElementType) -> (i128, i128) {
    let bits = et.bit_width() as u32;
    if et.is_signed_int() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// Converts elements of any type to the storage of `to` (small floats stay exact in f32 and
/// must be rounded by [`encode`]; use [`convert_literal`] for single rounding).
pub(crate) fn convert_array(arr: &Array, to: ElementType) -> Array {
    // Bit moves on XLA, so denormals survive: f32 to f32 storage (a narrow float widened
    // to f32, say) and f32 to a complex64's real part. Widening to f64 flushes them, as
    // XLA's conversion does.
    match (arr, storage_of(to)) {
        (Array::F32(v), Storage::F32) => return Array::F32(v.clone()),
        (Array::F32(v), Storage::C64) => {
            return Array::C64(v.iter().map(|&x| Complex32::new(x, 0.0)).collect())
        }
        _ => {}
    }
    let wide = widen(arr);
    let ints = |f: &dyn Fn(i128) -> i128| -> Vec<i128> {
        match &wide {
            Wide::Int(v) => v.iter().map(|&x| f(x)).collect(),
            Wide::Float(v) => {
                let (lo, hi) = int_range(to);
                v.iter().map(|&x| float_to_int(x, lo, hi)).collect()
            }
            Wide::Complex(v) => {
                let (lo, hi) = int_range(to);
                v.iter().map(|z| float_to_int(z.re, lo, hi)).collect()
            }
        }
    };
    let floats = || -> Vec<f64> {
        match &wide {
            Wide::Int(v) => v.iter().map(|&x| x as f64).collect(),
            Wide::Float(v) => v.clone(),
            Wide::Complex(v) => v.iter().map(|z| z.re).collect(),
        }
    };
    let id = |x: i128| x;
    match storage_of(to) {
        Storage::Pred => Array::Pred(match &wide {
            Wide::Int(v) => v.iter().map(|&x| x != 0).collect(),
            Wide::Float(v) => v.iter().map(|&x| x != 0.0).collect(),
            Wide::Complex(v) => v.iter().map(|z| z.re != 0.0).collect(),
        }),
        Storage::S8 => Array::S8(ints(&id).into_iter().map(|x| x as i8).collect()),
        Storage::S16 => Array::S16(ints(&id).into_iter().map(|x| x as i16).collect()),
        Storage::S32 => Array::S32(ints(&id).into_iter().map(|x| x as i32).collect()),
        Storage::S64 => Array::S64(ints(&id).into_iter().map(|x| x as i64).collect()),
        Storage::U8 => Array::U8(ints(&id).into_iter().map(|x| x as u8).collect()),
        Storage::U16 => Array::U16(ints(&id).into_iter().map(|x| x as u16).collect()),
        Storage::U32 => Array::U32(ints(&id).into_iter().map(|x| x as u32).collect()),
        Storage::U64 => Array::U64(ints(&id).into_iter().map(|x| x as u64).collect()),
        Storage::F32 => Array::F32(match &wide {
            Wide::Int(v) => v.iter().map(|&x| x as f32).collect(),
            _ => floats().into_iter().map(|x| x as f32).collect(),
        }),
        Storage::F64 => Array::F64(floats()),
        Storage::C64 => Array::C64(match &wide {
            Wide::Complex(v) => v
                .iter()
                .map(|z| Complex32::new(z.re as f32, z.im as f32))
                .collect(),
            Wide::Int(v) => v.iter().map(|&x| Complex32::new(x as f32, 0.0)).collect(),
            Wide::Float(v) => v.iter().map(|&x| Complex32::new(x as f32, 0.0)).collect(),
        }),
        Storage::C128 => Array::C128(match &wide {
            Wide::Complex(v) => v.clone(),
            _ => floats()
                .into_iter()
                .map(|x| Complex64::new(x, 0.0))
                .collect(),
        }),
    }
}

/// True for float types stored widened in f32 (f16, bf16 and the f8/f6/f4 formats).
fn is_narrow_float(et: ElementType) -> bool {
    et.is_float() && !matches!(et, ElementType::F32 | ElementType::F64)
}

/// The `f16` nearest (ties to even) to the f32 with bits `bits`, on the bits alone (so a
/// denormal rounds as its value whatever the thread's flushing mode): infinity past the
/// largest finite `f16`, NaN to the quiet NaN of its sign, as [`floatfmt::encode`] gives.
#[inline(always)]
pub(crate) fn f32_bits_to_f16(bits: u32) -> u16 {
    let sign = ((bits >> 16) & 0x8000) as u16;
    let a = bits & 0x7fff_ffff;
    let exp = a >> 23;
    // Normal results: rebias the exponent (127 - 15 = 112) and round 13 mantissa bits off;
    // a carry out of the mantissa moves to the next binade, up to infinity.
    let rebiased = a.wrapping_sub(112 << 23);
    let normal = rebiased.wrapping_add(0x0fff + ((rebiased >> 13) & 1)) >> 13;
    // Below 2^-14 the result is a denormal (or zero) in units of 2^-24: the significand
    // shifted right by 126 - exp, rounded to nearest even.
    let significand = (a & 0x007f_ffff) | 0x0080_0000;
    let shift = 126u32.saturating_sub(exp).min(31);
    let kept = significand >> shift;
    let rest = significand & ((1u32 << shift) - 1);
    let half_way = (1u32 << shift) >> 1;
    let round_up = rest > half_way || (rest == half_way && kept & 1 == 1);
    let denormal = kept + u32::from(round_up);
    let magnitude = if a > 0x7f80_0000 {
        0x7e00
    } else if a >= 0x477f_f000 {
        // At or past 65520, the halfway point above the largest finite f16.
        0x7c00
    } else if exp >= 113 {
        normal
    } else if exp >= 102 {
        denormal
    } else {
        0
    };
    sign | magnitude as u16
}

/// [`f32_bits_to_f16`], but a NaN keeps the top of its payload (quieted), as the `half`
/// crate's rounding (which encodes f16 arithmetic results) does.
#[inline(always)]
pub(crate) fn f32_to_f16_keeping_nan(x: f32) -> u16 {
    let bits = x.to_bits();
    if bits & 0x7fff_ffff > 0x7f80_0000 {
        ((bits >> 16) & 0x8000) as u16 | 0x7e00 | ((bits >> 13) & 0x03ff) as u16
    } else {
        f32_bits_to_f16(bits)
    }
}

/// The f32 of the `f16` with bits `h`, as decoding gives it (NaN quieted, payload kept).
#[inline(always)]
pub(crate) fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from(h >> 10) & 0x1f;
    let mantissa = u32::from(h & 0x03ff);
    let magnitude = if exp == 0x1f {
        let quiet = if mantissa != 0 { 0x0040_0000 } else { 0 };
        0x7f80_0000 | quiet | (mantissa << 13)
    } else if exp == 0 {
        // A denormal f16 is an exact, normal f32: mantissa * 2^-24.
        (mantissa as f32 * (1.0 / 16_777_216.0)).to_bits()
    } else {
        ((exp + 112) << 23) | (mantissa << 13)
    };
    f32::from_bits(sign | magnitude)
}

/// The common conversions as one vector loop from the source's bytes to the result's, with
/// the same results as the general path below: `f32` to `i32` truncates and saturates with
/// NaN to 0 (Rust's `as`), integers to floats and `f64` to `f32` round to nearest even,
/// integers wrap (between any two of 32 and 64 bits), booleans become 0 or 1 and integers
/// booleans by being nonzero, `f32` to `bf16` rounds the bits to nearest even (NaN to the quiet NaN of
/// its sign) without float arithmetic, so denormals round as values, `bf16` to `f32` moves
/// the bits as decoding does, and `f32` to `f16` and back work on the bits the same way
/// ([`f32_bits_to_f16`], [`f16_bits_to_f32`]), and 8- and 16-bit integers widen exactly, narrow
/// from `i32` to their low bits and from `f32` by truncating and saturating. `None` for the
/// other pairs.
fn convert_fast(lit: &Literal, ty: &TensorType) -> Option<Result<Literal, IrError>> {
    use super::typed::{build_overwritten, view, view_bytes};
    use ElementType as E;
    /// `f` of every element, split over the threads from `2^18` elements on.
    fn map<A: super::typed::Plain + Sync, B: super::typed::Plain + Send>(
        from: &[A],
        ty: &TensorType,
        f: impl Fn(A) -> B + Sync,
    ) -> Result<Literal, IrError> {
        build_overwritten::<B>(ty.clone(), from.len(), |out| {
            super::threads::map_split(from, out, 1 << 18, |x, o| oxla_simd::map(x, o, &f));
        })
    }
    let (from, to) = (lit.ty.element_type, ty.element_type);
    Some(match (from, to) {
        (E::F32, E::S32) => map(&view::<f32>(lit)?, ty, oxla_simd::f32_to_i32),
        (E::S32, E::F32) => map(&view::<i32>(lit)?, ty, |x: i32| x as f32),
        (E::F32, E::F64) => map(&view::<f32>(lit)?, ty, f64::from),
        (E::F64, E::F32) => map(&view::<f64>(lit)?, ty, |x: f64| x as f32),
        (E::S32, E::S64) => map(&view::<i32>(lit)?, ty, i64::from),
        (E::S64, E::S32) => map(&view::<i64>(lit)?, ty, |x: i64| x as i32),
        (E::S32, E::U32) => map(&view::<i32>(lit)?, ty, |x: i32| x as u32),
        (E::U32, E::S32) => map(&view::<u32>(lit)?, ty, |x: u32| x as i32),
        (E::U32, E::F32) => map(&view::<u32>(lit)?, ty, |x: u32| x as f32),
        (E::F32, E::U32) => map(&view::<f32>(lit)?, ty, f32_to_u32),
        (E::S32, E::U64) => map(&view::<i32>(lit)?, ty, |x: i32| x as u64),
        (E::U32, E::S64) => map(&view::<u32>(lit)?, ty, i64::from),
        (E::U32, E::U64) => map(&view::<u32>(lit)?, ty, u64::from),
        (E::S64, E::U32) => map(&view::<i64>(lit)?, ty, |x: i64| x as u32),
        (E::U64, E::S32) => map(&view::<u64>(lit)?, ty, |x: u64| x as i32),
        (E::U64, E::U32) => map(&view::<u64>(lit)?, ty, |x: u64| x as u32),
        (E::S64, E::U64) => map(&view::<i64>(lit)?, ty, |x: i64| x as u64),
        (E::U64, E::S64) => map(&view::<u64>(lit)?, ty, |x: u64| x as i64),
        (E::Pred, E::S32) => map(&view_bytes::<u8>(&lit.data), ty, |b: u8| i32::from(b != 0)),
        (E::Pred, E::U32) => map(&view_bytes::<u8>(&lit.data), ty, |b: u8| u32::from(b != 0)),
        (E::S32, E::Pred) => map(&view::<i32>(lit)?, ty, |x: i32| u8::from(x != 0)),
        (E::U32, E::Pred) => map(&view::<u32>(lit)?, ty, |x: u32| u8::from(x != 0)),
        (E::Pred, E::F32) => map(&view_bytes::<u8>(&lit.data), ty, |b: u8| {
            if b != 0 {
                1.0f32
            } else {
                0.0
            }
        }),
        (E::F32, E::BF16) => map(&view_bytes::<u32>(&lit.data), ty, |bits: u32| {
            let quiet_nan = ((bits >> 16) & 0x8000) as u16 | 0x7fc0;
            let rounded = (bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) >> 16) as u16;
            if bits & 0x7fff_ffff > 0x7f80_0000 {
                quiet_nan
            } else {
                rounded
            }
        }),
        (E::BF16, E::F32) => map(&view_bytes::<u16>(&lit.data), ty, |h: u16| {
            half::bf16::from_bits(h).to_f32()
        }),
        (E::F32, E::F16) => map(&view_bytes::<u32>(&lit.data), ty, f32_bits_to_f16),
        (E::F16, E::F32) => {
            let bits = view_bytes::<u16>(&lit.data);
            build_overwritten::<f32>(ty.clone(), bits.len(), |out| {
                super::threads::map_split(&bits, out, 1 << 18, |x, o| {
                    if !oxla_simd::f16_to_f32(x, o) {
                        oxla_simd::map(x, o, f16_bits_to_f32)
                    }
                });
            })
        }
        // 8- and 16-bit integers (quantized weights, image bytes): exact in f32 and i32;
        // narrowing an integer keeps its low bits, a float saturates as `as` does.
        (E::S8, E::F32) => map(&view::<i8>(lit)?, ty, f32::from),
        (E::U8, E::F32) => map(&view::<u8>(lit)?, ty, f32::from),
        (E::S16, E::F32) => map(&view::<i16>(lit)?, ty, f32::from),
        (E::U16, E::F32) => map(&view::<u16>(lit)?, ty, f32::from),
        (E::S8, E::S32) => map(&view::<i8>(lit)?, ty, i32::from),
        (E::U8, E::S32) => map(&view::<u8>(lit)?, ty, i32::from),
        (E::S16, E::S32) => map(&view::<i16>(lit)?, ty, i32::from),
        (E::U16, E::S32) => map(&view::<u16>(lit)?, ty, i32::from),
        (E::S32, E::S8) => map(&view::<i32>(lit)?, ty, |x: i32| x as i8),
        (E::S32, E::U8) => map(&view::<i32>(lit)?, ty, |x: i32| x as u8),
        (E::S32, E::S16) => map(&view::<i32>(lit)?, ty, |x: i32| x as i16),
        (E::S32, E::U16) => map(&view::<i32>(lit)?, ty, |x: i32| x as u16),
        (E::F32, E::S8) => map(&view::<f32>(lit)?, ty, |x: f32| x as i8),
        (E::F32, E::U8) => map(&view::<f32>(lit)?, ty, |x: f32| x as u8),
        (E::F32, E::S16) => map(&view::<f32>(lit)?, ty, |x: f32| x as i16),
        (E::F32, E::U16) => map(&view::<f32>(lit)?, ty, |x: f32| x as u16),
        _ => return None,
    })
}

/// Converts `lit` to element type `to`, keeping its shape.
pub(crate) fn convert_literal(lit: &Literal, to: ElementType) -> Result<Literal, IrError> {
    let ty = TensorType::new(lit.ty.shape.clone(), to);
    match convert_fast(lit, &ty) {
        Some(done) => done,
        None => convert_general(lit, ty),
    }
}

/// [`convert_literal`] for every pair of element types, element by element.
fn convert_general(lit: &Literal, ty: TensorType) -> Result<Literal, IrError> {
    let to = ty.element_type;
    if lit.ty.element_type == ElementType::Pred && to == ElementType::U8 {
        // XLA moves a boolean's byte to `u8` as it is, so a byte other than 0 or 1 (NumPy
        // data viewed as `bool`, which JAX views back through `u8`) keeps its value.
        return Literal::from_shared(ty, lit.data.clone());
    }
    let arr = decode(lit);
    if !is_narrow_float(to) {
        return encode(&convert_array(&arr, to), ty);
    }
    let values: Vec<f64> = match (&arr, widen(&arr)) {
        // Exactly, denormals included: XLA rounds an f32 to bf16 on its bits.
        (Array::F32(v), _) => v.iter().map(|&x| f32_exact(x)).collect(),
        (_, Wide::Int(v)) => v.into_iter().map(int_to_f64_odd).collect(),
        (_, Wide::Float(v)) => v,
        (_, Wide::Complex(v)) => v.into_iter().map(|z| z.re).collect(),
    };
    let data = match to {
        // Encoded from f64 directly: converting through f32 would round twice.
        ElementType::F16 => values
            .iter()
            .flat_map(|&x| (floatfmt::encode(floatfmt::F16, x) as u16).to_le_bytes())
            .collect(),
        ElementType::BF16 => values
            .iter()
            .flat_map(|&x| (floatfmt::encode(floatfmt::BF16, x) as u16).to_le_bytes())
            .collect(),
        small => {
            let format = floatfmt::format_of(small).unwrap_or(floatfmt::F8E4M3FN);
            values
                .iter()
                .map(|&x| floatfmt::encode(format, x) as u8)
                .collect()
        }
    };
    Literal::new(ty, data)
}

/// Evaluates `convert`.
pub(crate) fn convert(cx: OpCx<'_>, x: &Literal) -> Result<Literal, IrError> {
    let to = cx.result_tensor(0)?.element_type;
    convert_literal(x, to)
}

/// Raw bits of element `i` of `data` (element type `et`, masked to its bit width).
fn raw_bits(data: &[u8], et: ElementType, i: usize) -> u128 {
    let size = et.byte_size();
    let mut v = 0u128;
    for (k, &b) in data[i * size..(i + 1) * size].iter().enumerate() {
        v |= u128::from(b) << (8 * k);
    }
    let bits = et.bit_width();
    if bits < 128 {
        v &= (1u128 << bits) - 1;
    }
    v
}

/// Appends raw bits `v` as one element of `et` in oxla's layout (sub-byte signed types
/// sign-extended).
fn push_bits(out: &mut Vec<u8>, et: ElementType, v: u128) {
    let bits = et.bit_width();
    if bits < 8 {
        let mut byte = v as u8;
        if et.is_signed_int() && (byte >> (bits - 1)) & 1 == 1 {
            byte |= !((1u8 << bits) - 1);
        }
        out.push(byte);
    } else {
        out.extend_from_slice(&v.to_le_bytes()[..et.byte_size()]);
    }
}

/// Evaluates `bitcast_convert`, including changes of element width (which add or remove a
/// trailing dimension, lowest-addressed part first).
pub(crate) fn bitcast_convert(cx: OpCx<'_>, x: &Literal) -> Result<Literal, IrError> {
    let ty = cx.result_tensor(0)?.clone();
    let from = x.ty.element_type;
    let to = ty.element_type;
    let (in_bits, out_bits) = (from.bit_width(), to.bit_width());
    let n_in = x.ty.num_elements().unwrap_or(0);
    let expected: Vec<i64> = if in_bits == out_bits {
        x.ty.shape.clone()
    } else if in_bits > out_bits {
        if in_bits % out_bits != 0 {
            return Err(cx.invalid(format!("cannot bitcast {from} to {to}")));
        }
        let mut s = x.ty.shape.clone();
        s.push((in_bits / out_bits) as i64);
        s
    } else {
        if out_bits % in_bits != 0 || x.ty.shape.last() != Some(&((out_bits / in_bits) as i64)) {
            return Err(cx.invalid(format!(
                "bitcasting {} to {to} needs a trailing dimension of {}",
                x.ty,
                out_bits / in_bits.max(1)
            )));
        }
        x.ty.shape[..x.ty.rank() - 1].to_vec()
    };
    if expected != ty.shape {
        return Err(cx.invalid(format!(
            "result type {ty} does not match the bitcast of {}",
            x.ty
        )));
    }
    if from.byte_size() * 8 == in_bits && to.byte_size() * 8 == out_bits {
        return Literal::from_shared(ty, x.data.clone());
    }
    let mut out = Vec::with_capacity(ty.byte_size().unwrap_or(0));
    if in_bits >= out_bits {
        let k = in_bits / out_bits;
        let mask = if out_bits >= 128 {
            u128::MAX
        } else {
            (1u128 << out_bits) - 1
        };
        for i in 0..n_in {
            let v = raw_bits(&x.data, from, i);
            for j in 0..k {
                push_bits(&mut out, to, (v >> (j * out_bits)) & mask);
            }
        }
    } else {
        let k = out_bits / in_bits;
        for group in 0..n_in / k {
            let mut v = 0u128;
            for j in 0..k {
                v |= raw_bits(&x.data, from, group * k + j) << (j * in_bits);
            }
            push_bits(&mut out, to, v);
        }
    }
    Literal::new(ty, out)
}

fn reduce_bits(x: u64, src_exp: u32, src_mant: u32, exp_bits: u32, mant_bits: u32) -> u64 {
    let mut x = x;
    if mant_bits < src_mant {
        let shift = src_mant - mant_bits;
        let last_bit_mask = 1u64 << shift;
        let base_bias = (last_bit_mask >> 1) - 1;
        let last_bit = (x & last_bit_mask) >> shift;
        x = x.wrapping_add(last_bit + base_bias) & !(last_bit_mask - 1);
    }
    if exp_bits < src_exp {
        let sign_mask = 1u64 << (src_exp + src_mant);
        let exp_mask = ((1u64 << src_exp) - 1) << src_mant;
        let src_bias = (1u64 << (src_exp - 1)) - 1;
        let reduced_bias = (1u64 << (exp_bits - 1)) - 1;
        let max_exp = src_bias + reduced_bias;
        let min_exp = src_bias - reduced_bias;
        let exponent = x & exp_mask;
        if exponent > (max_exp << src_mant) {
            x = (x & sign_mask) | exp_mask;
        } else if exponent <= (min_exp << src_mant) {
            x &= sign_mask;
        }
    }
    x
}

/// Evaluates `reduce_precision`.
pub(crate) fn reduce_precision(cx: OpCx<'_>, x: &Literal) -> Result<Literal, IrError> {
    let exp_bits = u32::try_from(cx.int("exponent_bits")?)
        .ok()
        .filter(|&e| e >= 1)
        .ok_or_else(|| cx.invalid("`exponent_bits` must be at least 1"))?;
    let mant_bits = u32::try_from(cx.int("mantissa_bits")?)
        .map_err(|_| cx.invalid("`mantissa_bits` must be non-negative"))?;
    let et = x.ty.element_type;
    let out = match decode(x) {
        Array::F32(v) => Array::F32(
            v.iter()
                .map(|&f| {
                    if f.is_nan() {
                        f
                    } else {
                        let b = reduce_bits(u64::from(f.to_bits()), 8, 23, exp_bits, mant_bits);
                        f32::from_bits(b as u32)
                    }
                })
                .collect(),
        ),
        Array::F64(v) => Array::F64(
            v.iter()
                .map(|&f| {
                    if f.is_nan() {
                        f
                    } else {
                        f64::from_bits(reduce_bits(f.to_bits(), 11, 52, exp_bits, mant_bits))
                    }
                })
                .collect(),
        ),
        _ => return Err(cx.invalid(format!("not defined on element type {et}"))),
    };
    let data = encode_bytes(&out, et);
    Literal::new(x.ty.clone(), data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(lit: &Literal, to: ElementType) -> Array {
        decode(&convert_literal(lit, to).unwrap())
    }

    #[test]
    fn float_to_int_saturates_like_xla() {
        let x = Literal::from_f32(
            &[8],
            &[
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                3e9,
                -3e9,
                2.7,
                -2.7,
                300.0,
            ],
        )
        .unwrap();
        assert_eq!(
            conv(&x, ElementType::S32),
            Array::S32(vec![0, i32::MAX, i32::MIN, i32::MAX, i32::MIN, 2, -2, 300])
        );
        assert_eq!(
            conv(&x, ElementType::U8),
            Array::U8(vec![0, 255, 0, 255, 0, 2, 0, 255])
        );
        assert_eq!(
            conv(&x, ElementType::S4),
            Array::S8(vec![0, 7, -8, 7, -8, 2, -2, 7])
        );
        assert_eq!(conv(&x, ElementType::Pred), Array::Pred(vec![true; 8]));
    }

    #[test]
    fn booleans_move_their_byte_to_u8() {
        // Bytes 0, 1 and a non-canonical 96 (a NumPy view of uint8 data as bool).
        let x = Literal::new(TensorType::new([3], ElementType::Pred), vec![0, 1, 96]).unwrap();
        assert_eq!(conv(&x, ElementType::U8), Array::U8(vec![0, 1, 96]));
        // Other targets read a boolean as 0 or 1.
        assert_eq!(conv(&x, ElementType::S8), Array::S8(vec![0, 1, 1]));
        assert_eq!(conv(&x, ElementType::U32), Array::U32(vec![0, 1, 1]));
        assert_eq!(conv(&x, ElementType::F32), Array::F32(vec![0.0, 1.0, 1.0]));
    }

    /// Every fast conversion gives the general path's bytes, with denormals flushed (as
    /// executions run) and without: special values, denormals, NaN payloads, rounding ties
    /// of bf16, the saturation edges of i32 and a sweep of bit patterns.
    #[test]
    fn fast_conversions_give_the_general_paths_bytes() {
        use ElementType as E;
        let mut f32s: Vec<f32> = vec![
            0.0,
            -0.0,
            1.0,
            -1.5,
            2.5,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7f80_0001),
            f32::from_bits(0xffc1_2345),
            f32::from_bits(1),
            -f32::from_bits(0x0040_8000),
            f32::MIN_POSITIVE,
            f32::MAX,
            f32::MIN,
            2_147_483_520.0,
            2_147_483_648.0,
            -2_147_483_648.0,
            -2_147_483_904.0,
            // u32's edges.
            4_294_967_040.0,
            4_294_967_296.0,
            3_000_000_000.5,
            -0.75,
            0.999_999_9,
            f32::from_bits(0x3f80_8000),
            f32::from_bits(0x3f81_8000),
            f32::from_bits(0x7f7f_ffff),
            // f16's edges: the largest finite and the halfway point above it, the smallest
            // normal, denormal ties and the halfway point below the smallest denormal.
            65504.0,
            65519.996,
            65520.0,
            65536.0,
            6.103_515_6e-5,
            6.102_037_4e-5,
            5.960_464_5e-8,
            2.980_232_2e-8,
            4.470_348_4e-8,
            2.980_232_6e-8,
            1.000_488_3,
            1.001_464_8,
            // The 8- and 16-bit integers' edges.
            -128.9,
            -129.0,
            127.9,
            128.0,
            255.9,
            256.0,
            -32768.9,
            -32769.0,
            32767.9,
            65535.9,
            65536.5,
        ];
        f32s.extend((0..=u16::MAX).map(|h| f16_bits_to_f32(h) * 1.000_000_1));
        let mut bits = 0x2545_f491u32;
        for _ in 0..4000 {
            bits ^= bits << 13;
            bits ^= bits >> 17;
            bits ^= bits << 5;
            f32s.push(f32::from_bits(bits));
            f32s.push((bits >> 8) as f32 - 8_388_608.0);
        }
        let n = f32s.len() as i64;
        let bytes = |et: ElementType, data: Vec<u8>| {
            Literal::new(TensorType::new(vec![n], et), data).unwrap()
        };
        let from_f32 = bytes(E::F32, f32s.iter().flat_map(|x| x.to_le_bytes()).collect());
        let raw = |size: usize| -> Vec<u8> {
            f32s.iter()
                .flat_map(|x| x.to_bits().to_le_bytes())
                .cycle()
                .take(f32s.len() * size)
                .collect()
        };
        // `size` bytes per element from the little-endian bytes of 0, 1, ..., u16::MAX.
        let every_u16 = |size: usize| -> Vec<u8> {
            (0..=u16::MAX)
                .flat_map(u16::to_le_bytes)
                .cycle()
                .take(f32s.len() * size)
                .collect()
        };
        let sources = [
            (
                from_f32.clone(),
                vec![
                    E::S32,
                    E::U32,
                    E::F64,
                    E::BF16,
                    E::F16,
                    E::S8,
                    E::U8,
                    E::S16,
                    E::U16,
                ],
            ),
            (
                bytes(E::S32, raw(4)),
                vec![
                    E::F32,
                    E::S64,
                    E::U32,
                    E::U64,
                    E::Pred,
                    E::S8,
                    E::U8,
                    E::S16,
                    E::U16,
                ],
            ),
            (
                bytes(E::U32, raw(4)),
                vec![E::S32, E::F32, E::S64, E::U64, E::Pred],
            ),
            (bytes(E::S64, raw(8)), vec![E::S32, E::U32, E::U64]),
            (bytes(E::U64, raw(8)), vec![E::S32, E::U32, E::S64]),
            (bytes(E::F64, raw(8)), vec![E::F32]),
            (bytes(E::BF16, raw(2)), vec![E::F32]),
            (bytes(E::F16, raw(2)), vec![E::F32]),
            // Every 8- and 16-bit pattern.
            (bytes(E::S8, every_u16(1)), vec![E::F32, E::S32]),
            (bytes(E::U8, every_u16(1)), vec![E::F32, E::S32]),
            (bytes(E::S16, every_u16(2)), vec![E::F32, E::S32]),
            (bytes(E::U16, every_u16(2)), vec![E::F32, E::S32]),
            (
                bytes(
                    E::F16,
                    (0..=u16::MAX)
                        .flat_map(u16::to_le_bytes)
                        .cycle()
                        .take(2 * f32s.len())
                        .collect(),
                ),
                vec![E::F32],
            ),
            (
                bytes(
                    E::Pred,
                    (0..f32s.len()).map(|i| (i % 3 == 0) as u8).collect(),
                ),
                vec![E::F32, E::S32, E::U32],
            ),
        ];
        for flush in [false, true] {
            let _flush = flush.then(oxla_simd::FlushDenormals::new);
            for (lit, targets) in &sources {
                for &to in targets {
                    let ty = TensorType::new(lit.ty.shape.clone(), to);
                    let fast = convert_fast(lit, &ty).expect("a fast pair").unwrap();
                    let general = convert_general(lit, ty).unwrap();
                    assert_eq!(
                        fast.data, general.data,
                        "{} to {to} (flushing: {flush})",
                        lit.ty.element_type
                    );
                }
            }
        }
    }

    /// The bit-level f16 conversions and the slice conversions (`oxla_simd`'s F16C loops,
    /// where the CPU has them) give the `half` crate's bits (which decoding and the encoding
    /// of f16 arithmetic use): every f16 pattern widened, and f32 values around every f16,
    /// its edges, f32 denormals, NaN payloads and random patterns narrowed, flushing or not.
    #[test]
    fn f16_bit_conversions_match_the_half_crate() {
        let mut xs: Vec<f32> = vec![65504.0, 65519.996, 65520.0, f32::NAN, -f32::NAN];
        xs.push(f32::from_bits(0x7f80_2001));
        xs.push(f32::from_bits(0xffa1_2345));
        xs.extend([1, 0x8000_0001, 0x007f_ffff, 0x807f_ffff].map(f32::from_bits));
        let mut bits = 0x9e37_79b9u32;
        for h in 0..=u16::MAX {
            bits ^= bits << 13;
            bits ^= bits >> 17;
            bits ^= bits << 5;
            let x = half::f16::from_bits(h).to_f32();
            xs.extend([x, x * 1.000_000_1, x * 0.999_999_9, f32::from_bits(bits)]);
        }
        for flush in [false, true] {
            let _flush = flush.then(oxla_simd::FlushDenormals::new);
            for h in 0..=u16::MAX {
                let want = half::f16::from_bits(h).to_f32().to_bits();
                assert_eq!(f16_bits_to_f32(h).to_bits(), want, "{h:#06x}");
            }
            for &x in &xs {
                let want = half::f16::from_f32(x).to_bits();
                assert_eq!(f32_to_f16_keeping_nan(x), want, "{:#010x}", x.to_bits());
            }
            // Every pattern, in a slice whose length is no multiple of the vector width.
            let patterns: Vec<u16> = (0..=u16::MAX).chain([0x7c01, 3, 0x8001]).collect();
            let mut wide = vec![0.0f32; patterns.len()];
            if oxla_simd::f16_to_f32(&patterns, &mut wide) {
                for (&h, w) in patterns.iter().zip(&wide) {
                    let want = half::f16::from_bits(h).to_f32().to_bits();
                    assert_eq!(w.to_bits(), want, "{h:#06x} (flushing: {flush})");
                }
            }
            let mut narrow = vec![0u16; xs.len()];
            if oxla_simd::f32_to_f16(&xs, &mut narrow) {
                for (&x, &h) in xs.iter().zip(&narrow) {
                    let want = half::f16::from_f32(x).to_bits();
                    assert_eq!(h, want, "{:#010x} (flushing: {flush})", x.to_bits());
                }
            }
        }
    }

    #[test]
    fn int_to_int_wraps() {
        let x = Literal::from_i32(&[3], &[300, -129, 17]).unwrap();
        assert_eq!(conv(&x, ElementType::S8), Array::S8(vec![44, 127, 17]));
        assert_eq!(conv(&x, ElementType::U4), Array::U8(vec![12, 15, 1]));
    }

    #[test]
    fn large_int_to_bf16_rounds_once() {
        // 2^24 + 2^16 + 1 is just above the midpoint between two bf16 neighbours
        // (2^24 and 2^24 + 2^17); rounding through f32 first would land on the midpoint
        // 2^24 + 2^16 and then tie to even (2^24).
        let v: i64 = (1 << 24) + (1 << 16) + 1;
        let lit = Literal::new(
            TensorType::new([1], ElementType::S64),
            v.to_le_bytes().to_vec(),
        )
        .unwrap();
        assert_eq!(
            conv(&lit, ElementType::BF16),
            Array::F32(vec![((1 << 24) + (1 << 17)) as f32])
        );
    }

    #[test]
    fn complex_converts_its_real_part() {
        let lit = Literal::new(
            TensorType::new([2], ElementType::C64),
            [1.7f32, 2.0, 0.0, 2.0]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        )
        .unwrap();
        assert_eq!(conv(&lit, ElementType::S32), Array::S32(vec![1, 0]));
        assert_eq!(
            conv(&lit, ElementType::Pred),
            Array::Pred(vec![true, false])
        );
    }

    #[test]
    fn reduce_precision_to_bf16_matches_bf16_rounding() {
        for &x in &[1.0f32 + 2f32.powi(-8), 3.25159, 1e-39, 3.4e38, -2.5e-3] {
            let b = reduce_bits(u64::from(x.to_bits()), 8, 23, 8, 7);
            assert_eq!(
                f32::from_bits(b as u32),
                half::bf16::from_f32(x).to_f32(),
                "x = {x}"
            );
        }
        // To f16's format: 65520 overflows, 1e-8 underflows to zero.
        let b = reduce_bits(u64::from(65520f32.to_bits()), 8, 23, 5, 10);
        assert_eq!(f32::from_bits(b as u32), f32::INFINITY);
        let b = reduce_bits(u64::from(1e-8f32.to_bits()), 8, 23, 5, 10);
        assert_eq!(f32::from_bits(b as u32), 0.0);
    }
}
