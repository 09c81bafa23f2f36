//! Elementwise ops: unary and binary arithmetic, bitwise ops, compare, select and clamp.
//!
//! Each op is written once per element category (integers through the [`Int`] trait,
//! floats through [`Float`], complex through `num_complex`) and dispatched on the
//! storage variant of [`Array`]. Integer behaviour follows XLA CPU: arithmetic wraps,
//! `x / 0` is all ones, `x % 0` is `x`, `MIN / -1` is `MIN`, shifts by the bit width or
//! more give 0 (or the sign for arithmetic right shifts). Float `maximum`/`minimum`
//! propagate NaN and order `-0 < +0`.
//!
//! Operand shapes are taken from the operands (a rank-0 operand broadcasts); only the
//! element type comes from the declared result type. This lets reduce bodies run over
//! whole lanes of elements at once (see `reduce.rs`).

use super::context::OpCx;
use super::element::{decode, decode_bytes, encode, encode_bytes, storage_of, Array};
use super::special;
use super::typed::{self, Plain};
use crate::attrs::{ComparisonDirection, ComparisonType};
use crate::{Attribute, ElementType, IrError, Literal, OpKind, TensorType};
use num_complex::Complex;
use std::cmp::Ordering;

/// Integer element operations with XLA CPU's edge-case behaviour.
pub(crate) trait Int: Copy + Ord + Eq + Default {
    const SIGNED: bool;
    fn wadd(self, o: Self) -> Self;
    fn wsub(self, o: Self) -> Self;
    fn wmul(self, o: Self) -> Self;
    fn wneg(self) -> Self;
    fn wabs(self) -> Self;
    fn xla_div(self, o: Self) -> Self;
    fn xla_rem(self, o: Self) -> Self;
    fn bits(self) -> u64;
    fn from_bits(b: u64) -> Self;
    fn one() -> Self;
    fn bit_not(self) -> Self;
    fn bit_and(self, o: Self) -> Self;
    fn bit_or(self, o: Self) -> Self;
    fn bit_xor(self, o: Self) -> Self;
    fn is_negative(self) -> bool;
    /// Whether the type has at most 32 bits, so that [`narrow_div`] computes its quotients.
    const NARROW: bool;
    /// The value as f64 (exact for [`Int::NARROW`] types).
    fn to_f64(self) -> f64;
}

macro_rules! impl_int {
    ($t:ty, $u:ty, $signed:expr, $narrow:expr) => {
        impl Int for $t {
            const SIGNED: bool = $signed;
            const NARROW: bool = $narrow;
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn wadd(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn wsub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            fn wmul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            fn wneg(self) -> Self {
                self.wrapping_neg()
            }
            #[allow(unused_comparisons)]
            fn wabs(self) -> Self {
                if self < 0 as $t {
                    self.wrapping_neg()
                } else {
                    self
                }
            }
            fn xla_div(self, o: Self) -> Self {
                if o == 0 {
                    !(0 as $t)
                } else {
                    self.wrapping_div(o)
                }
            }
            fn xla_rem(self, o: Self) -> Self {
                if o == 0 {
                    self
                } else {
                    self.wrapping_rem(o)
                }
            }
            fn bits(self) -> u64 {
                (self as $u) as u64
            }
            fn from_bits(b: u64) -> Self {
                (b as $u) as $t
            }
            fn one() -> Self {
                1
            }
            fn bit_not(self) -> Self {
                !self
            }
            fn bit_and(self, o: Self) -> Self {
                self & o
            }
            fn bit_or(self, o: Self) -> Self {
                self | o
            }
            fn bit_xor(self, o: Self) -> Self {
                self ^ o
            }
            #[allow(unused_comparisons)]
            fn is_negative(self) -> bool {
                self < 0 as $t
            }
        }
    };
}
impl_int!(i8, u8, true, true);
impl_int!(i16, u16, true, true);
impl_int!(i32, u32, true, true);
impl_int!(i64, u64, true, false);
impl_int!(u8, u8, false, true);
impl_int!(u16, u16, false, true);
impl_int!(u32, u32, false, true);
impl_int!(u64, u64, false, false);

/// [`Int::xla_div`] for types of at most 32 bits ([`Int::NARROW`]) on f64 lanes, which
/// vectorize where integer division does not (x86 has no vector integer divide). The
/// quotient of two such integers rounds to an f64 whose truncation is the exact truncated
/// quotient: its rounding error, under `|a| * 2^-53`, stays below the distance `1 / |b|`
/// from a non-integer quotient to the nearest integer. The truncated quotient (at most
/// 2^32 in magnitude) plus `1.5 * 2^52` holds it, wrapped, in its low mantissa bits (a
/// conversion that vectorizes, where `as` is a scalar loop): `MIN / -1` comes out as
/// `2^31`, which wraps to `MIN`, and `x / 0` is all ones, as in [`Int::xla_div`].
#[inline(always)]
pub(crate) fn narrow_div<T: Int>(a: T, b: T) -> T {
    const INTEGER_BITS: f64 = 6_755_399_441_055_744.0;
    let zero = b == T::default();
    let divisor = if zero { 1.0 } else { b.to_f64() };
    let q = (a.to_f64() / divisor).trunc() + INTEGER_BITS;
    if zero {
        T::from_bits(u64::MAX)
    } else {
        T::from_bits(q.to_bits())
    }
}

/// [`Int::xla_rem`] for [`Int::NARROW`] types: `a - (a / b) * b` from [`narrow_div`]'s
/// quotient, wrapping (`MIN % -1` is 0), and `a` for `b == 0`.
#[inline(always)]
pub(crate) fn narrow_rem<T: Int>(a: T, b: T) -> T {
    let zero = b == T::default();
    let q = narrow_div(a, b);
    let r = a.wsub(q.wmul(b));
    if zero {
        a
    } else {
        r
    }
}

/// The integer `sign`: -1, 0 or 1.
#[inline(always)]
fn int_sign<T: Int>(x: T) -> T {
    if x.is_negative() {
        T::one().wneg()
    } else if x == T::default() {
        x
    } else {
        T::one()
    }
}

/// `popcnt` of the low `bits` bits.
#[inline(always)]
fn int_popcount<T: Int>(x: T, bits: u32) -> T {
    T::from_bits(u64::from((x.bits() & low_mask(bits)).count_ones()))
}

/// `count_leading_zeros` at bit width `bits`.
#[inline(always)]
fn int_clz<T: Int>(x: T, bits: u32) -> T {
    let lz = (x.bits() & low_mask(bits)).leading_zeros() - (64 - bits);
    T::from_bits(u64::from(lz))
}

fn low_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Left shift at bit width `bits`; amounts of `bits` or more (or negative) give 0.
pub(crate) fn shl<T: Int>(a: T, amount: T, bits: u32) -> T {
    let amount = amount.bits();
    if amount >= u64::from(bits) {
        T::from_bits(0)
    } else {
        T::from_bits(a.bits() << amount)
    }
}

/// Logical right shift at bit width `bits`.
pub(crate) fn shr_logical<T: Int>(a: T, amount: T, bits: u32) -> T {
    let amount = amount.bits();
    if amount >= u64::from(bits) {
        T::from_bits(0)
    } else {
        T::from_bits((a.bits() & low_mask(bits)) >> amount)
    }
}

/// Arithmetic right shift at bit width `bits`; large amounts fill with the sign bit.
pub(crate) fn shr_arithmetic<T: Int>(a: T, amount: T, bits: u32) -> T {
    let amount = amount.bits().min(u64::from(bits) - 1);
    let unused = 64 - bits;
    let signed = ((a.bits() << unused) as i64) >> unused;
    T::from_bits((signed >> amount) as u64)
}

/// Integer power by squaring, wrapping; negative exponents give 0 unless the base is ±1.
pub(crate) fn int_pow<T: Int>(base: T, exponent: T) -> T {
    if exponent.is_negative() {
        let one = T::one();
        return if base == one {
            one
        } else if base == one.wneg() && T::SIGNED {
            if exponent.bits() & 1 == 1 {
                base
            } else {
                one
            }
        } else {
            T::from_bits(0)
        };
    }
    let mut result = T::one();
    let mut b = base;
    let mut e = exponent.bits();
    while e > 0 {
        if e & 1 == 1 {
            result = result.wmul(b);
        }
        b = b.wmul(b);
        e >>= 1;
    }
    result
}

/// Float element operations, implemented for `f32` and `f64`.
pub(crate) trait Float:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Rem<Output = Self>
    + std::ops::Neg<Output = Self>
    + Default
{
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    fn is_nan(self) -> bool;
    fn is_sign_negative(self) -> bool;
    fn total_cmp(&self, o: &Self) -> Ordering;
    fn apply(self, kind: &OpKind) -> Option<Self>;
    fn atan2(self, o: Self) -> Self;
    fn powf(self, o: Self) -> Self;
    fn next_after(self, toward: Self) -> Self;
    /// Writes `apply(kind)` of every element of `v` to `out` (as long) with the op chosen
    /// once, for the common ops; false for the others (the caller then applies element by
    /// element).
    fn map_common(v: &[Self], out: &mut [Self], kind: &OpKind) -> bool;
    /// `self`, or its signed zero when it is a denormal: how XLA's CPU backend, which
    /// computes with denormals flushed, reads the operand of an op that does no float
    /// arithmetic (rounding, sign), which the flushing mode itself does not reach.
    fn flushed(self) -> Self;
    /// [`oxla_simd::fold_lanes_f32`] for this type, where it has one.
    fn fold_lanes(
        x: &[Self],
        op: oxla_simd::LaneFold,
    ) -> Option<([Self; oxla_simd::FOLD_LANES], bool)>;
}

macro_rules! impl_float {
    ($t:ident, $bits:ty, $fast:path, $lanes:path, $erf_inv:path) => {
        impl Float for $t {
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn is_nan(self) -> bool {
                $t::is_nan(self)
            }
            fn is_sign_negative(self) -> bool {
                $t::is_sign_negative(self)
            }
            fn total_cmp(&self, o: &Self) -> Ordering {
                $t::total_cmp(self, o)
            }
            fn atan2(self, o: Self) -> Self {
                $t::atan2(self, o)
            }
            fn powf(self, o: Self) -> Self {
                $t::powf(self, o)
            }
            fn next_after(self, toward: Self) -> Self {
                if self.is_nan() || toward.is_nan() {
                    return $t::NAN;
                }
                if self == toward {
                    return toward;
                }
                if self == 0.0 {
                    return $t::from_bits(1).copysign(toward);
                }
                let bits = self.to_bits();
                let away_from_zero = (toward > self) == (self > 0.0);
                $t::from_bits(if away_from_zero { bits + 1 } else { bits - 1 } as $bits)
            }
            fn flushed(self) -> Self {
                if self.is_subnormal() {
                    (0.0 as $t).copysign(self)
                } else {
                    self
                }
            }
            fn fold_lanes(
                x: &[Self],
                op: oxla_simd::LaneFold,
            ) -> Option<([Self; oxla_simd::FOLD_LANES], bool)> {
                $lanes(x, op)
            }
            fn map_common(v: &[Self], out: &mut [Self], kind: &OpKind) -> bool {
                use OpKind as K;
                // On the widest vectors the CPU has: rounding to an integer is then one
                // instruction per vector instead of a library call per element (the
                // baseline x86-64 target has no rounding instruction).
                fn each(v: &[$t], out: &mut [$t], f: impl Fn($t) -> $t) {
                    oxla_simd::map(v, out, f);
                }
                // Vectorizable transcendentals first (f32: within 1 ulp, see `fastmath`).
                if $fast(v, out, kind) {
                    return true;
                }
                // The same expressions as `apply`, one loop per op.
                match kind {
                    K::Abs => each(v, out, |x| x.abs()),
                    K::Ceil => each(v, out, |x| Float::flushed(x).ceil()),
                    K::Cosine => each(v, out, |x| x.cos()),
                    K::Exponential => each(v, out, |x| x.exp()),
                    K::ExponentialMinusOne => each(v, out, |x| x.exp_m1()),
                    K::Floor => each(v, out, |x| Float::flushed(x).floor()),
                    K::RoundNearestAfz => each(v, out, |x| Float::flushed(x).round()),
                    K::RoundNearestEven => each(v, out, |x| Float::flushed(x).round_ties_even()),
                    K::Sign => each(v, out, |x| {
                        let x = Float::flushed(x);
                        if x.is_nan() || x == 0.0 {
                            x
                        } else {
                            x.signum()
                        }
                    }),
                    K::Log => each(v, out, |x| x.ln()),
                    K::LogPlusOne => each(v, out, |x| x.ln_1p()),
                    K::Logistic => each(v, out, |x| 1.0 / (1.0 + (-x).exp())),
                    K::Negate => each(v, out, |x| -x),
                    K::Rsqrt => each(v, out, |x| 1.0 / x.sqrt()),
                    K::Sine => each(v, out, |x| x.sin()),
                    K::Sqrt => each(v, out, |x| x.sqrt()),
                    K::Tanh => each(v, out, |x| x.tanh()),
                    K::ChloErfInv => each(v, out, $erf_inv),
                    _ => return false,
                }
                true
            }
            fn apply(self, kind: &OpKind) -> Option<Self> {
                use OpKind as K;
                let x = self;
                Some(match kind {
                    K::Abs => x.abs(),
                    K::Cbrt => x.cbrt(),
                    K::Ceil => Float::flushed(x).ceil(),
                    K::Cosine => x.cos(),
                    K::Exponential => x.exp(),
                    K::ExponentialMinusOne => x.exp_m1(),
                    K::Floor => Float::flushed(x).floor(),
                    K::Log => x.ln(),
                    K::LogPlusOne => x.ln_1p(),
                    K::Logistic => 1.0 / (1.0 + (-x).exp()),
                    K::Negate => -x,
                    K::RoundNearestAfz => Float::flushed(x).round(),
                    K::RoundNearestEven => Float::flushed(x).round_ties_even(),
                    K::Rsqrt => 1.0 / x.sqrt(),
                    K::Sign => {
                        let x = Float::flushed(x);
                        if x.is_nan() || x == 0.0 {
                            x
                        } else {
                            x.signum()
                        }
                    }
                    K::Sine => x.sin(),
                    K::Sqrt => x.sqrt(),
                    K::Tan | K::ChloTan => x.tan(),
                    K::Tanh => x.tanh(),
                    K::ChloErfInv => $erf_inv(x),
                    _ => return special::float_unary(kind, x as f64).map(|v| v as $t),
                })
            }
        }
    };
}
impl_float!(
    f32,
    u32,
    super::fastmath::map_f32,
    oxla_simd::fold_lanes_f32,
    super::fastmath::erf_inv
);
impl_float!(f64, u64, no_fast_path, no_lane_fold, special::erf_inv);

/// f64 rows fold through the generic [`fold_row`](super::reduce) loop.
fn no_lane_fold(_: &[f64], _: oxla_simd::LaneFold) -> Option<([f64; oxla_simd::FOLD_LANES], bool)> {
    None
}

/// f64 keeps the library functions.
fn no_fast_path(_: &[f64], _: &mut [f64], _: &OpKind) -> bool {
    false
}

/// Float maximum as XLA: NaN propagates (the first operand's when both are NaN), `+0 > -0`.
/// Written with non-short-circuit logic so loops over it compile to vector selects.
#[inline(always)]
pub(crate) fn fmax<F: Float>(a: F, b: F) -> F {
    let pick_a = a.is_nan() | (!b.is_nan() & ((a > b) | ((a == b) & !a.is_sign_negative())));
    if pick_a {
        a
    } else {
        b
    }
}

/// The `maximum` op on floats as XLA's CPU backend computes it: [`fmax`] of operands read
/// with denormals flushed to their signed zero (`relu` of a denormal is `+0`). `clamp`
/// keeps denormals on XLA and uses [`fmax`] and [`fmin`] directly.
#[inline(always)]
pub(crate) fn max_op<F: Float>(a: F, b: F) -> F {
    fmax(a.flushed(), b.flushed())
}

/// The `minimum` op on floats: [`fmin`] of operands read with denormals flushed.
#[inline(always)]
pub(crate) fn min_op<F: Float>(a: F, b: F) -> F {
    fmin(a.flushed(), b.flushed())
}

/// Float minimum as XLA: NaN propagates (the first operand's when both are NaN), `-0 < +0`.
#[inline(always)]
pub(crate) fn fmin<F: Float>(a: F, b: F) -> F {
    let pick_a = a.is_nan() | (!b.is_nan() & ((a < b) | ((a == b) & a.is_sign_negative())));
    if pick_a {
        a
    } else {
        b
    }
}

/// Lexicographic order on (real, imaginary), as the spec orders complex numbers.
pub(crate) fn complex_cmp<F: Float>(a: &(F, F), b: &(F, F)) -> Option<Ordering> {
    match a.0.partial_cmp(&b.0)? {
        Ordering::Equal => a.1.partial_cmp(&b.1),
        other => Some(other),
    }
}

/// True for the unary elementwise ops this module implements.
pub(crate) fn is_unary(kind: &OpKind) -> bool {
    use OpKind as K;
    matches!(
        kind,
        K::Abs
            | K::Cbrt
            | K::Ceil
            | K::Cosine
            | K::Exponential
            | K::ExponentialMinusOne
            | K::Floor
            | K::Imag
            | K::IsFinite
            | K::Log
            | K::LogPlusOne
            | K::Logistic
            | K::Negate
            | K::Not
            | K::PopulationCount
            | K::Real
            | K::RoundNearestAfz
            | K::RoundNearestEven
            | K::Rsqrt
            | K::Sign
            | K::Sine
            | K::Sqrt
            | K::Tan
            | K::Tanh
            | K::CountLeadingZeros
    ) || special::is_special_unary(kind)
}

/// True for the binary elementwise ops this module implements.
pub(crate) fn is_binary(kind: &OpKind) -> bool {
    use OpKind as K;
    matches!(
        kind,
        K::Add
            | K::And
            | K::Atan2
            | K::Complex
            | K::Divide
            | K::Maximum
            | K::Minimum
            | K::Multiply
            | K::Or
            | K::Power
            | K::Remainder
            | K::ShiftLeft
            | K::ShiftRightArithmetic
            | K::ShiftRightLogical
            | K::Subtract
            | K::Xor
    ) || special::is_special_binary(kind)
}

/// The declared element type of result 0 (the shape comes from the operands).
fn result_element_type(cx: OpCx<'_>) -> Result<ElementType, IrError> {
    match cx.result_type(0)? {
        crate::Type::Tensor(t) => Ok(t.element_type),
        other => Err(cx.invalid(format!("result has non-tensor type {other}"))),
    }
}

/// The common shape of elementwise operands; rank-0 operands broadcast.
fn common_shape(cx: OpCx<'_>, operands: &[&Literal]) -> Result<Vec<i64>, IrError> {
    let mut shape: Option<&Vec<i64>> = None;
    for lit in operands {
        if lit.ty.rank() == 0 {
            continue;
        }
        match shape {
            None => shape = Some(&lit.ty.shape),
            Some(s) if *s == lit.ty.shape => {}
            Some(s) => {
                return Err(cx.invalid(format!(
                    "operand shapes differ: {:?} vs {:?}",
                    s, lit.ty.shape
                )))
            }
        }
    }
    Ok(shape.cloned().unwrap_or_default())
}

fn num_elements(shape: &[i64]) -> usize {
    shape.iter().map(|&d| d.max(0) as usize).product()
}

/// Decodes `lit`, broadcasting a single element to `n`.
fn decode_n(lit: &Literal, n: usize) -> Array {
    let arr = decode(lit);
    if arr.len() == 1 && n != 1 {
        arr.splat(0, n)
    } else {
        arr
    }
}

fn finish(cx: OpCx<'_>, out: Array, shape: Vec<i64>, et: ElementType) -> Result<Literal, IrError> {
    if out.storage() != storage_of(et) {
        return Err(cx.invalid(format!(
            "result element type {et} does not match the operand types"
        )));
    }
    encode(&out, TensorType::new(shape, et))
}

fn type_error(cx: OpCx<'_>, et: ElementType) -> IrError {
    cx.invalid(format!("not defined on element type {et}"))
}

fn map_int<T: Int>(v: &[T], kind: &OpKind, bits: u32) -> Option<Vec<T>> {
    use OpKind as K;
    Some(match kind {
        K::Abs => v.iter().map(|x| x.wabs()).collect(),
        K::Negate => v.iter().map(|x| x.wneg()).collect(),
        K::Not => v.iter().map(|x| x.bit_not()).collect(),
        K::Sign => v.iter().map(|&x| int_sign(x)).collect(),
        K::PopulationCount => v.iter().map(|&x| int_popcount(x, bits)).collect(),
        K::CountLeadingZeros => v.iter().map(|&x| int_clz(x, bits)).collect(),
        _ => return None,
    })
}

/// `out[i] = kind(v[i])` for the unary ops on a plain integer type, on the widest vectors
/// the CPU has, with [`map_int`]'s element functions; false, writing nothing, for the
/// other ops.
pub(crate) fn int_map_into<T: Plain + Int>(kind: &OpKind, v: &[T], out: &mut [T]) -> bool {
    use OpKind as K;
    let bits = 8 * std::mem::size_of::<T>() as u32;
    match kind {
        K::Abs => oxla_simd::map(v, out, T::wabs),
        K::Negate => oxla_simd::map(v, out, T::wneg),
        K::Not => oxla_simd::map(v, out, T::bit_not),
        K::Sign => oxla_simd::map(v, out, int_sign),
        K::PopulationCount => oxla_simd::map(v, out, |x| int_popcount(x, bits)),
        K::CountLeadingZeros => oxla_simd::map(v, out, |x| int_clz(x, bits)),
        _ => return false,
    }
    true
}

/// A unary op on a literal of a plain integer type, read in place ([`int_map_into`]) and
/// split over the threads when large; `None` for the other types and ops.
fn int_unary_fast(kind: &OpKind, x: &Literal) -> Option<Result<Literal, IrError>> {
    fn go<T: Plain + Int + Send + Sync>(
        kind: &OpKind,
        x: &Literal,
    ) -> Option<Result<Literal, IrError>> {
        if !int_map_into::<T>(kind, &[], &mut []) {
            return None;
        }
        let v = typed::view::<T>(x)?;
        let n = v.len();
        Some(typed::build_overwritten::<T>(x.ty.clone(), n, |out| {
            super::threads::map_split(&v, out, PARALLEL_ELEMENTS, |v, o| {
                int_map_into(kind, v, o);
            });
        }))
    }
    use ElementType as E;
    match x.ty.element_type {
        E::S8 => go::<i8>(kind, x),
        E::S16 => go::<i16>(kind, x),
        E::S32 => go::<i32>(kind, x),
        E::S64 => go::<i64>(kind, x),
        E::U8 => go::<u8>(kind, x),
        E::U16 => go::<u16>(kind, x),
        E::U32 => go::<u32>(kind, x),
        E::U64 => go::<u64>(kind, x),
        _ => None,
    }
}

fn map_float<F: Float>(v: &[F], kind: &OpKind) -> Option<Vec<F>> {
    let mut out = vec![F::default(); v.len()];
    if F::map_common(v, &mut out, kind) {
        return Some(out);
    }
    // Check the op once, on a sample element, so unknown ops fail before the loop.
    F::default().apply(kind)?;
    Some(
        v.iter()
            .map(|x| x.apply(kind).unwrap_or_default())
            .collect(),
    )
}

fn map_complex<C: ComplexOps>(v: &[C], kind: &OpKind) -> Option<Vec<C>> {
    use OpKind as K;
    let one = C::from_parts(C::Real::from_f64(1.0), C::Real::default());
    let f: Box<dyn Fn(C) -> C> = match kind {
        K::Negate => Box::new(|z: C| z.neg_()),
        K::Cosine => Box::new(C::cos_),
        K::Sine => Box::new(C::sin_),
        K::Tan | K::ChloTan => Box::new(C::tan_),
        K::Tanh => Box::new(C::tanh_),
        K::Exponential => Box::new(C::exp_),
        K::ExponentialMinusOne => Box::new(|z: C| z.wide(super::complex::expm1)),
        K::Log => Box::new(C::ln_),
        K::LogPlusOne => Box::new(|z: C| z.wide(super::complex::log1p)),
        K::Logistic => Box::new(move |z: C| one.div_(one.add_(z.neg_().exp_()))),
        K::Sqrt => Box::new(C::sqrt_),
        K::Rsqrt => Box::new(move |z: C| one.div_(z.sqrt_())),
        K::Cbrt => Box::new(C::cbrt_),
        K::Sign => Box::new(|z: C| {
            let n = z.norm_();
            if n.is_nan() {
                C::from_parts(n, n)
            } else if n == C::Real::default() {
                z
            } else {
                C::from_parts(z.re_() / n, z.im_() / n)
            }
        }),
        K::ChloConj => Box::new(|z: C| C::from_parts(z.re_(), -z.im_())),
        _ => return None,
    };
    Some(v.iter().map(|&z| f(z)).collect())
}

/// Complex element operations, implemented for `Complex<f32>` and `Complex<f64>`.
pub(crate) trait ComplexOps: Copy {
    type Real: Float;
    fn from_parts(re: Self::Real, im: Self::Real) -> Self;
    fn re_(self) -> Self::Real;
    fn im_(self) -> Self::Real;
    fn neg_(self) -> Self;
    fn add_(self, o: Self) -> Self;
    fn sub_(self, o: Self) -> Self;
    fn mul_(self, o: Self) -> Self;
    fn div_(self, o: Self) -> Self;
    fn cos_(self) -> Self;
    fn sin_(self) -> Self;
    fn tan_(self) -> Self;
    fn tanh_(self) -> Self;
    fn exp_(self) -> Self;
    fn ln_(self) -> Self;
    fn sqrt_(self) -> Self;
    fn cbrt_(self) -> Self;
    fn norm_(self) -> Self::Real;
    fn powc_(self, o: Self) -> Self;
    /// `f` applied to the parts widened to f64, rounded back.
    fn wide(self, f: impl Fn(f64, f64) -> (f64, f64)) -> Self {
        let (re, im) = f(self.re_().to_f64(), self.im_().to_f64());
        Self::from_parts(Self::Real::from_f64(re), Self::Real::from_f64(im))
    }
}

macro_rules! impl_complex_ops {
    ($t:ty) => {
        impl ComplexOps for Complex<$t> {
            type Real = $t;
            fn from_parts(re: $t, im: $t) -> Self {
                Complex::new(re, im)
            }
            fn re_(self) -> $t {
                self.re
            }
            fn im_(self) -> $t {
                self.im
            }
            fn neg_(self) -> Self {
                -self
            }
            fn add_(self, o: Self) -> Self {
                self + o
            }
            fn sub_(self, o: Self) -> Self {
                self - o
            }
            fn mul_(self, o: Self) -> Self {
                self * o
            }
            fn div_(self, o: Self) -> Self {
                let (re, im) = super::complex::div(
                    f64::from(self.re),
                    f64::from(self.im),
                    f64::from(o.re),
                    f64::from(o.im),
                );
                Complex::new(re as $t, im as $t)
            }
            fn cos_(self) -> Self {
                self.cos()
            }
            fn sin_(self) -> Self {
                self.sin()
            }
            fn tan_(self) -> Self {
                self.wide(super::complex::tan)
            }
            fn tanh_(self) -> Self {
                self.wide(super::complex::tanh)
            }
            fn exp_(self) -> Self {
                self.exp()
            }
            fn ln_(self) -> Self {
                self.ln()
            }
            fn sqrt_(self) -> Self {
                self.sqrt()
            }
            fn cbrt_(self) -> Self {
                self.cbrt()
            }
            fn norm_(self) -> $t {
                self.norm()
            }
            fn powc_(self, o: Self) -> Self {
                if o.re == 0.0 && o.im == 0.0 {
                    Complex::new(1.0, 0.0)
                } else {
                    self.powc(o)
                }
            }
        }
    };
}
impl_complex_ops!(f32);
impl_complex_ops!(f64);

fn complex_abs<C: ComplexOps>(z: C) -> C::Real {
    if z.re_().is_nan() || z.im_().is_nan() {
        C::Real::from_f64(f64::NAN)
    } else {
        z.norm_()
    }
}

/// A `chlo.sinh` or `chlo.cosh` composite on a complex operand, evaluated directly: their
/// decompositions (through `exp(z + ln ½)`) divide infinities where XLA's CPU backend,
/// which evaluates the CHLO op itself, does not. `None` for every other composite.
pub(crate) fn complex_composite(cx: OpCx<'_>, x: &Literal) -> Option<Result<Literal, IrError>> {
    let f = match cx.attr("name") {
        Ok(Attribute::String(name)) if name == "chlo.sinh" => super::complex::sinh,
        Ok(Attribute::String(name)) if name == "chlo.cosh" => super::complex::cosh,
        _ => return None,
    };
    let out = match decode(x) {
        Array::C64(v) => Array::C64(v.iter().map(|z| z.wide(f)).collect()),
        Array::C128(v) => Array::C128(v.iter().map(|z| z.wide(f)).collect()),
        _ => return None,
    };
    Some(finish(cx, out, x.ty.shape.clone(), x.ty.element_type))
}

/// Evaluates a unary elementwise op.
pub(crate) fn unary(cx: OpCx<'_>, x: &Literal) -> Result<Literal, IrError> {
    use OpKind as K;
    let kind = &cx.op.kind;
    let out_et = result_element_type(cx)?;
    let in_et = x.ty.element_type;
    let shape = x.ty.shape.clone();
    if out_et == in_et {
        let fast = match in_et {
            ElementType::F32 => float_unary_fast::<f32>(kind, x),
            ElementType::F64 => float_unary_fast::<f64>(kind, x),
            ElementType::BF16 | ElementType::F16 => narrow_unary_fast(kind, x),
            _ => int_unary_fast(kind, x),
        };
        if let Some(res) = fast {
            return res;
        }
    }
    let arr = decode(x);
    let bits = in_et.bit_width() as u32;
    let err = || type_error(cx, in_et);
    let out = match (kind, arr) {
        (K::Real, Array::C64(v)) => Array::F32(v.iter().map(|z| z.re).collect()),
        (K::Real, Array::C128(v)) => Array::F64(v.iter().map(|z| z.re).collect()),
        (K::Imag, Array::C64(v)) => Array::F32(v.iter().map(|z| z.im).collect()),
        (K::Imag, Array::C128(v)) => Array::F64(v.iter().map(|z| z.im).collect()),
        (K::Real, a @ (Array::F32(_) | Array::F64(_))) => a,
        (K::Imag, Array::F32(v)) => Array::F32(vec![0.0; v.len()]),
        (K::Imag, Array::F64(v)) => Array::F64(vec![0.0; v.len()]),
        // A NaN part makes the magnitude NaN, even beside an infinite one (as on XLA's
        // CPU backend; C's `cabs` would give infinity).
        (K::Abs, Array::C64(v)) => Array::F32(v.iter().map(|z| complex_abs(*z)).collect()),
        (K::Abs, Array::C128(v)) => Array::F64(v.iter().map(|z| complex_abs(*z)).collect()),
        (K::IsFinite, Array::F32(v)) => Array::Pred(v.iter().map(|x| x.is_finite()).collect()),
        (K::IsFinite, Array::F64(v)) => Array::Pred(v.iter().map(|x| x.is_finite()).collect()),
        (K::ChloIsInf, Array::F32(v)) => Array::Pred(v.iter().map(|x| x.is_infinite()).collect()),
        (K::ChloIsInf, Array::F64(v)) => Array::Pred(v.iter().map(|x| x.is_infinite()).collect()),
        (K::ChloIsPosInf, Array::F32(v)) => {
            Array::Pred(v.iter().map(|&x| x == f32::INFINITY).collect())
        }
        (K::ChloIsPosInf, Array::F64(v)) => {
            Array::Pred(v.iter().map(|&x| x == f64::INFINITY).collect())
        }
        (K::ChloIsNegInf, Array::F32(v)) => {
            Array::Pred(v.iter().map(|&x| x == f32::NEG_INFINITY).collect())
        }
        (K::ChloIsNegInf, Array::F64(v)) => {
            Array::Pred(v.iter().map(|&x| x == f64::NEG_INFINITY).collect())
        }
        (K::Not, Array::Pred(v)) => Array::Pred(v.iter().map(|b| !b).collect()),
        (K::ChloConj, a @ (Array::F32(_) | Array::F64(_))) => a,
        (K::ChloSquare, a) => {
            let b = a.clone();
            binary_arrays(&K::Multiply, a, b, bits).ok_or_else(err)?
        }
        (_, Array::Pred(_)) => return Err(err()),
        (_, Array::S8(v)) => Array::S8(map_int(&v, kind, bits).ok_or_else(err)?),
        (_, Array::S16(v)) => Array::S16(map_int(&v, kind, bits).ok_or_else(err)?),
        (_, Array::S32(v)) => Array::S32(map_int(&v, kind, bits).ok_or_else(err)?),
        (_, Array::S64(v)) => Array::S64(map_int(&v, kind, bits).ok_or_else(err)?),
        (_, Array::U8(v)) => Array::U8(map_int(&v, kind, bits).ok_or_else(err)?),
        (_, Array::U16(v)) => Array::U16(map_int(&v, kind, bits).ok_or_else(err)?),
        (_, Array::U32(v)) => Array::U32(map_int(&v, kind, bits).ok_or_else(err)?),
        (_, Array::U64(v)) => Array::U64(map_int(&v, kind, bits).ok_or_else(err)?),
        (_, Array::F32(v)) => Array::F32(map_float(&v, kind).ok_or_else(err)?),
        (_, Array::F64(v)) => Array::F64(map_float(&v, kind).ok_or_else(err)?),
        (_, Array::C64(v)) => Array::C64(map_complex(&v, kind).ok_or_else(err)?),
        (_, Array::C128(v)) => Array::C128(map_complex(&v, kind).ok_or_else(err)?),
    };
    finish(cx, out, shape, out_et)
}

fn zip<T: Copy, R>(a: &[T], b: &[T], f: impl Fn(T, T) -> R) -> Vec<R> {
    a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
}

fn int_binary<T: Int>(kind: &OpKind, a: &[T], b: &[T], bits: u32) -> Option<Vec<T>> {
    use OpKind as K;
    Some(match kind {
        K::Add => zip(a, b, T::wadd),
        K::Subtract => zip(a, b, T::wsub),
        K::Multiply => zip(a, b, T::wmul),
        K::Divide => zip(a, b, T::xla_div),
        K::Remainder => zip(a, b, T::xla_rem),
        K::Maximum => zip(a, b, std::cmp::max),
        K::Minimum => zip(a, b, std::cmp::min),
        K::And => zip(a, b, T::bit_and),
        K::Or => zip(a, b, T::bit_or),
        K::Xor => zip(a, b, T::bit_xor),
        K::Power => zip(a, b, int_pow),
        K::ShiftLeft => zip(a, b, |x, y| shl(x, y, bits)),
        K::ShiftRightLogical => zip(a, b, |x, y| shr_logical(x, y, bits)),
        K::ShiftRightArithmetic => zip(a, b, |x, y| shr_arithmetic(x, y, bits)),
        _ => return None,
    })
}

fn float_binary<F: Float>(kind: &OpKind, a: &[F], b: &[F]) -> Option<Vec<F>> {
    use OpKind as K;
    Some(match kind {
        K::Add => zip(a, b, |x, y| x + y),
        K::Subtract => zip(a, b, |x, y| x - y),
        K::Multiply => zip(a, b, |x, y| x * y),
        K::Divide => zip(a, b, |x, y| x / y),
        K::Remainder => zip(a, b, |x, y| x % y),
        K::Maximum => zip(a, b, max_op),
        K::Minimum => zip(a, b, min_op),
        K::Power => zip(a, b, F::powf),
        K::Atan2 => zip(a, b, F::atan2),
        K::ChloNextAfter => zip(a, b, F::next_after),
        other => {
            special::float_binary(other, 0.0, 0.0)?;
            zip(a, b, |x, y| {
                F::from_f64(special::float_binary(other, x.to_f64(), y.to_f64()).unwrap_or(0.0))
            })
        }
    })
}

fn complex_binary<C: ComplexOps>(kind: &OpKind, a: &[C], b: &[C]) -> Option<Vec<C>> {
    use OpKind as K;
    let lex = |x: &C, y: &C| complex_cmp(&(x.re_(), x.im_()), &(y.re_(), y.im_()));
    Some(match kind {
        K::Add => zip(a, b, C::add_),
        K::Subtract => zip(a, b, C::sub_),
        K::Multiply => zip(a, b, C::mul_),
        K::Divide => zip(a, b, C::div_),
        K::Power => zip(a, b, C::powc_),
        K::Maximum => zip(a, b, |x, y| {
            if lex(&x, &y) == Some(Ordering::Less) {
                y
            } else {
                x
            }
        }),
        K::Minimum => zip(a, b, |x, y| {
            if lex(&y, &x) == Some(Ordering::Less) {
                y
            } else {
                x
            }
        }),
        _ => return None,
    })
}

fn pred_binary(kind: &OpKind, a: &[bool], b: &[bool]) -> Option<Vec<bool>> {
    use OpKind as K;
    Some(match kind {
        K::And | K::Multiply | K::Minimum => zip(a, b, |x, y| x & y),
        K::Or | K::Add | K::Maximum => zip(a, b, |x, y| x | y),
        K::Xor | K::Subtract => zip(a, b, |x, y| x ^ y),
        _ => return None,
    })
}

/// A binary op on two arrays of the same storage, `None` when undefined for it.
pub(crate) fn binary_arrays(kind: &OpKind, a: Array, b: Array, bits: u32) -> Option<Array> {
    Some(match (a, b) {
        (Array::Pred(a), Array::Pred(b)) => Array::Pred(pred_binary(kind, &a, &b)?),
        (Array::S8(a), Array::S8(b)) => Array::S8(int_binary(kind, &a, &b, bits)?),
        (Array::S16(a), Array::S16(b)) => Array::S16(int_binary(kind, &a, &b, bits)?),
        (Array::S32(a), Array::S32(b)) => Array::S32(int_binary(kind, &a, &b, bits)?),
        (Array::S64(a), Array::S64(b)) => Array::S64(int_binary(kind, &a, &b, bits)?),
        (Array::U8(a), Array::U8(b)) => Array::U8(int_binary(kind, &a, &b, bits)?),
        (Array::U16(a), Array::U16(b)) => Array::U16(int_binary(kind, &a, &b, bits)?),
        (Array::U32(a), Array::U32(b)) => Array::U32(int_binary(kind, &a, &b, bits)?),
        (Array::U64(a), Array::U64(b)) => Array::U64(int_binary(kind, &a, &b, bits)?),
        (Array::F32(a), Array::F32(b)) => match kind {
            OpKind::Complex => Array::C64(zip(&a, &b, Complex::new)),
            _ => Array::F32(float_binary(kind, &a, &b)?),
        },
        (Array::F64(a), Array::F64(b)) => match kind {
            OpKind::Complex => Array::C128(zip(&a, &b, Complex::new)),
            _ => Array::F64(float_binary(kind, &a, &b)?),
        },
        (Array::C64(a), Array::C64(b)) => Array::C64(complex_binary(kind, &a, &b)?),
        (Array::C128(a), Array::C128(b)) => Array::C128(complex_binary(kind, &a, &b)?),
        _ => return None,
    })
}

/// The elementwise sum of two arrays of `et` elements given as their bytes (how partial sums
/// held by several devices add up); `None` for an element type without addition or arrays of
/// different lengths.
pub(crate) fn add_bytes(et: ElementType, a: &[u8], b: &[u8]) -> Option<Vec<u8>> {
    if a.len() != b.len() {
        return None;
    }
    let bits = et.bit_width() as u32;
    let sum = binary_arrays(&OpKind::Add, decode_bytes(a, et), decode_bytes(b, et), bits)?;
    Some(encode_bytes(&sum, et))
}

/// Evaluates a binary elementwise op.
pub(crate) fn binary(cx: OpCx<'_>, a: &Literal, b: &Literal) -> Result<Literal, IrError> {
    let out_et = result_element_type(cx)?;
    let et = a.ty.element_type;
    if b.ty.element_type != et {
        return Err(cx.invalid(format!(
            "operand element types differ: {et} vs {}",
            b.ty.element_type
        )));
    }
    if cx.op.kind == OpKind::ChloNextAfter && !matches!(et, ElementType::F32 | ElementType::F64) {
        return Err(cx.unsupported(format!("next_after on {et}")));
    }
    let shape = common_shape(cx, &[a, b])?;
    let n = num_elements(&shape);
    if out_et == et {
        if let Some(res) = binary_fast(&cx.op.kind, a, b, &shape, n) {
            return res;
        }
        if let Some(res) = narrow_binary_fast(&cx.op.kind, a, b, &shape, n) {
            return res;
        }
    }
    let bits = et.bit_width() as u32;
    let out = binary_arrays(&cx.op.kind, decode_n(a, n), decode_n(b, n), bits)
        .ok_or_else(|| type_error(cx, et))?;
    finish(cx, out, shape, out_et)
}

/// `bf16` or `f16` elements (their bits) widened to f32 as decoding widens them.
fn widen_narrow(et: ElementType, bits: &[u16], out: &mut [f32]) {
    if et == ElementType::BF16 {
        oxla_simd::map(bits, out, |h| half::bf16::from_bits(h).to_f32());
    } else if !oxla_simd::f16_to_f32(bits, out) {
        // The same bits as `half`'s conversion (and F16C's), in a loop that vectorizes.
        oxla_simd::map(bits, out, super::convert::f16_bits_to_f32);
    }
}

/// f32 values rounded to `bf16` or `f16` bits as encoding rounds them.
fn narrow_f32(et: ElementType, v: &[f32], out: &mut [u16]) {
    if et == ElementType::BF16 {
        oxla_simd::map(v, out, |x| half::bf16::from_f32(x).to_bits());
    } else if !oxla_simd::f32_to_f16(v, out) {
        oxla_simd::map(v, out, super::convert::f32_to_f16_keeping_nan);
    }
}

/// Elements per block of the `bf16`/`f16` paths: a block's f32 operands and result stay in
/// the first-level cache between widening, the f32 kernel and rounding back.
const NARROW_BLOCK: usize = 1024;

/// Elements per thread from which the `bf16`/`f16` paths split over the threads.
const NARROW_PER_THREAD: usize = 1 << 16;

/// A unary op on a `bf16` or `f16` literal as the general path computes it (widened to
/// f32, the f32 kernel, rounded back), a block at a time, the blocks split over the threads;
/// `None` for the ops the f32 kernels do not cover.
fn narrow_unary_fast(kind: &OpKind, x: &Literal) -> Option<Result<Literal, IrError>> {
    if !f32::map_common(&[0.0], &mut [0.0], kind) {
        return None;
    }
    let et = x.ty.element_type;
    let bits = typed::view_bytes::<u16>(&x.data);
    Some(typed::build_overwritten::<u16>(
        x.ty.clone(),
        bits.len(),
        |res| {
            super::threads::map_split(&bits, res, NARROW_PER_THREAD, |src, dst| {
                let mut wide = [0.0f32; NARROW_BLOCK];
                let mut out = [0.0f32; NARROW_BLOCK];
                for (s, d) in src.chunks(NARROW_BLOCK).zip(dst.chunks_mut(NARROW_BLOCK)) {
                    let k = s.len();
                    widen_narrow(et, s, &mut wide[..k]);
                    f32::map_common(&wide[..k], &mut out[..k], kind);
                    narrow_f32(et, &out[..k], d);
                }
            })
        },
    ))
}

/// A binary float op on `bf16` or `f16` literals as the general path computes it (both
/// widened to f32, the f32 op, rounded back), a block at a time, the blocks split over the
/// threads; an operand of one element broadcasts. `None` for other types and ops, or
/// operands that do not fit `n`.
fn narrow_binary_fast(
    kind: &OpKind,
    a: &Literal,
    b: &Literal,
    shape: &[i64],
    n: usize,
) -> Option<Result<Literal, IrError>> {
    let et = a.ty.element_type;
    if !matches!(et, ElementType::BF16 | ElementType::F16)
        || !float_zip::<f32>(kind, &mut [], &[], &[])
        || !fits_plain(et, n, &[a, b])
    {
        return None;
    }
    let (a, b) = (
        typed::view_bytes::<u16>(&a.data),
        typed::view_bytes::<u16>(&b.data),
    );
    let ty = TensorType::new(shape.to_vec(), et);
    Some(typed::build_overwritten::<u16>(ty, n, |res| {
        let per = n
            .div_ceil(super::threads::count())
            .max(NARROW_PER_THREAD)
            .max(1);
        super::threads::for_each(res.chunks_mut(per).enumerate(), |(part, dst)| {
            let mut wa = [0.0f32; NARROW_BLOCK];
            let mut wb = [0.0f32; NARROW_BLOCK];
            let mut out = [0.0f32; NARROW_BLOCK];
            for (block, d) in dst.chunks_mut(NARROW_BLOCK).enumerate() {
                let (at, k) = (part * per + block * NARROW_BLOCK, d.len());
                // A one-element operand is widened whole for every block.
                let bits_of = |v: &[u16]| -> (usize, usize) {
                    if v.len() == 1 {
                        (0, 1)
                    } else {
                        (at, k)
                    }
                };
                let ((sa, ka), (sb, kb)) = (bits_of(&a), bits_of(&b));
                widen_narrow(et, &a[sa..sa + ka], &mut wa[..ka]);
                widen_narrow(et, &b[sb..sb + kb], &mut wb[..kb]);
                float_zip(kind, &mut out[..k], &wa[..ka], &wb[..kb]);
                narrow_f32(et, &out[..k], d);
            }
        });
    }))
}

/// The common float unary ops on an f32/f64 literal, read and written in place; `None`
/// for the other ops.
fn float_unary_fast<T: Plain + Float + Send + Sync>(
    kind: &OpKind,
    x: &Literal,
) -> Option<Result<Literal, IrError>> {
    let v = typed::view::<T>(x)?;
    let mut probe = [T::default()];
    if !T::map_common(&[T::default()], &mut probe, kind) {
        return None;
    }
    Some(typed::build_overwritten::<T>(
        x.ty.clone(),
        v.len(),
        |out| {
            super::threads::map_split(&v, out, UNARY_PARALLEL_ELEMENTS, |v, o| {
                T::map_common(v, o, kind);
            });
        },
    ))
}

/// Unary ops on at least twice this many elements split over the threads: a transcendental
/// spends several nanoseconds per element, so the split pays off well before the memory-bound
/// binary ops' [`PARALLEL_ELEMENTS`].
const UNARY_PARALLEL_ELEMENTS: usize = 1 << 16;

/// `out[i] = f(a[i], b[i])`, where an operand of one element broadcasts, on the widest
/// vectors the CPU has (the baseline x86-64 target has 4-lane vectors and no blend, which
/// left `maximum`'s selects and flushes three times slower than an add).
fn zip_into<T: Copy>(out: &mut [T], a: &[T], b: &[T], f: impl Fn(T, T) -> T) {
    match (a, b) {
        (&[x], _) if b.len() == out.len() => oxla_simd::map(b, out, |y| f(x, y)),
        (_, &[y]) if a.len() == out.len() => oxla_simd::map(a, out, |x| f(x, y)),
        _ => oxla_simd::zip(a, b, out, f),
    }
}

/// `out[i] = a[i] op b[i]` for the common float binary ops (an operand of one element
/// broadcasts); false, writing nothing, for the others.
pub(crate) fn float_zip<T: Float>(kind: &OpKind, out: &mut [T], a: &[T], b: &[T]) -> bool {
    use OpKind as K;
    match kind {
        K::Add => zip_into(out, a, b, |x, y| x + y),
        K::Subtract => zip_into(out, a, b, |x, y| x - y),
        K::Multiply => zip_into(out, a, b, |x, y| x * y),
        K::Divide => zip_into(out, a, b, |x, y| x / y),
        K::Maximum => zip_into(out, a, b, max_op),
        K::Minimum => zip_into(out, a, b, min_op),
        K::Power => zip_into(out, a, b, T::powf),
        _ => return false,
    }
    true
}

/// A binary op on literals of a plain element type without decoding: [`zip_bytes`] reads
/// the operands in place and writes the result in place. `None` for the ops and element
/// types it does not cover, or operand sizes that do not fit `n`; they take the general
/// path.
fn binary_fast(
    kind: &OpKind,
    a: &Literal,
    b: &Literal,
    shape: &[i64],
    n: usize,
) -> Option<Result<Literal, IrError>> {
    let et = a.ty.element_type;
    // On empty slices `zip_bytes` only says whether it covers the op.
    if !zip_bytes(et, kind, &mut [], &[], &[]) || !fits_plain(et, n, &[a, b]) {
        return None;
    }
    // `zip_bytes` writes every element; large outputs split over the threads (an operand
    // of one element goes whole to every part).
    let size = et.byte_size();
    let mut data = super::pool::take_for_overwrite(n * size);
    let per = n.div_ceil(super::threads::count()).max(PARALLEL_ELEMENTS) * size;
    let part = |lit: &'_ Literal, c: usize| -> std::ops::Range<usize> {
        if lit.data.len() == size {
            0..size
        } else {
            c * per..((c + 1) * per).min(lit.data.len())
        }
    };
    let failed = std::sync::atomic::AtomicBool::new(false);
    super::threads::for_each(data.chunks_mut(per.max(1)).enumerate(), |(c, out)| {
        if !zip_bytes(et, kind, out, &a.data[part(a, c)], &b.data[part(b, c)]) {
            failed.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
    if failed.into_inner() {
        return None;
    }
    Some(Literal::new(TensorType::new(shape.to_vec(), et), data))
}

/// Outputs of at least this many elements split over the threads.
const PARALLEL_ELEMENTS: usize = 1 << 18;

/// Whether each operand holds `n` elements of `et`, or one that broadcasts.
fn fits_plain(et: ElementType, n: usize, operands: &[&Literal]) -> bool {
    operands.iter().all(|lit| {
        let len = lit.data.len() / et.byte_size();
        len == n || (len == 1 && n > 0)
    })
}

/// [`float_zip`] or [`int_zip`] on the little-endian bytes of elements of `et` (an operand
/// of one element broadcasts; `out` is written in place; `i1` for `and`, `or` and `xor`).
/// False, writing nothing, for the element types and ops they do not cover, or an `out`
/// that cannot be viewed as `et`.
pub(crate) fn zip_bytes(
    et: ElementType,
    kind: &OpKind,
    out: &mut [u8],
    a: &[u8],
    b: &[u8],
) -> bool {
    fn go<T: Plain>(
        zip: impl Fn(&OpKind, &mut [T], &[T], &[T]) -> bool,
        kind: &OpKind,
        out: &mut [u8],
        a: &[u8],
        b: &[u8],
    ) -> bool {
        if !cfg!(target_endian = "little") || !zip(kind, &mut [], &[], &[]) {
            return false;
        }
        // Nothing to write (an empty slice need not be aligned for `T`).
        if out.is_empty() {
            return true;
        }
        match bytemuck::try_cast_slice_mut::<u8, T>(out) {
            Ok(out) => zip(kind, out, &typed::view_bytes(a), &typed::view_bytes(b)),
            Err(_) => false,
        }
    }
    use ElementType as E;
    match et {
        E::F32 => go(float_zip::<f32>, kind, out, a, b),
        E::F64 => go(float_zip::<f64>, kind, out, a, b),
        E::S8 => go(int_zip::<i8>, kind, out, a, b),
        E::S16 => go(int_zip::<i16>, kind, out, a, b),
        E::S32 => go(int_zip::<i32>, kind, out, a, b),
        E::S64 => go(int_zip::<i64>, kind, out, a, b),
        E::U8 => go(int_zip::<u8>, kind, out, a, b),
        E::U16 => go(int_zip::<u16>, kind, out, a, b),
        E::U32 => go(int_zip::<u32>, kind, out, a, b),
        E::U64 => go(int_zip::<u64>, kind, out, a, b),
        // Predicates are 0/1 bytes: the bitwise ops are the logical ones.
        E::Pred if matches!(kind, OpKind::And | OpKind::Or | OpKind::Xor) => {
            go(int_zip::<u8>, kind, out, a, b)
        }
        _ => false,
    }
}

/// `out[i] = a[i] op b[i]` for the common binary ops on a plain integer type (an operand of
/// one element broadcasts); false, writing nothing, for the others.
pub(crate) fn int_zip<T: Plain + Int>(kind: &OpKind, out: &mut [T], a: &[T], b: &[T]) -> bool {
    use OpKind as K;
    let bits = 8 * std::mem::size_of::<T>() as u32;
    match kind {
        K::Add => zip_into(out, a, b, T::wadd),
        K::Subtract => zip_into(out, a, b, T::wsub),
        K::Multiply => zip_into(out, a, b, T::wmul),
        K::Divide if T::NARROW => zip_into(out, a, b, narrow_div),
        K::Remainder if T::NARROW => zip_into(out, a, b, narrow_rem),
        K::Divide => zip_into(out, a, b, T::xla_div),
        K::Remainder => zip_into(out, a, b, T::xla_rem),
        K::Maximum => zip_into(out, a, b, std::cmp::max),
        K::Minimum => zip_into(out, a, b, std::cmp::min),
        K::And => zip_into(out, a, b, T::bit_and),
        K::Or => zip_into(out, a, b, T::bit_or),
        K::Xor => zip_into(out, a, b, T::bit_xor),
        K::ShiftLeft => zip_into(out, a, b, |x, y| shl(x, y, bits)),
        K::ShiftRightLogical => zip_into(out, a, b, |x, y| shr_logical(x, y, bits)),
        K::ShiftRightArithmetic => zip_into(out, a, b, |x, y| shr_arithmetic(x, y, bits)),
        _ => return false,
    }
    true
}

/// `compare` on the little-endian bytes of elements of `et`, read in place, into 0/1 bytes
/// (an operand of one element broadcasts); false, writing nothing, for element types
/// without a plain view (`i1`, sub-byte, narrow floats, complex).
pub(crate) fn compare_bytes(
    et: ElementType,
    dir: ComparisonDirection,
    total: bool,
    a: &[u8],
    b: &[u8],
    out: &mut [u8],
) -> bool {
    fn go<T: Plain>(
        cmp: impl Fn(&T, &T) -> Option<Ordering>,
        dir: ComparisonDirection,
        a: &[u8],
        b: &[u8],
        out: &mut [u8],
    ) -> bool {
        compare_into(
            dir,
            &cmp,
            &typed::view_bytes::<T>(a),
            &typed::view_bytes(b),
            out,
        );
        true
    }
    fn ieee<T: Plain + PartialOrd>(
        dir: ComparisonDirection,
        a: &[u8],
        b: &[u8],
        out: &mut [u8],
    ) -> bool {
        compare_ieee_into(
            dir,
            &typed::view_bytes::<T>(a),
            &typed::view_bytes::<T>(b),
            out,
        );
        true
    }
    use ElementType as E;
    match et {
        E::F32 if total => go(|x: &f32, y| Some(Float::total_cmp(x, y)), dir, a, b, out),
        E::F64 if total => go(|x: &f64, y| Some(Float::total_cmp(x, y)), dir, a, b, out),
        E::F32 => ieee::<f32>(dir, a, b, out),
        E::F64 => ieee::<f64>(dir, a, b, out),
        E::S8 => ieee::<i8>(dir, a, b, out),
        E::S16 => ieee::<i16>(dir, a, b, out),
        E::S32 => ieee::<i32>(dir, a, b, out),
        E::S64 => ieee::<i64>(dir, a, b, out),
        E::U8 => ieee::<u8>(dir, a, b, out),
        E::U16 => ieee::<u16>(dir, a, b, out),
        E::U32 => ieee::<u32>(dir, a, b, out),
        E::U64 => ieee::<u64>(dir, a, b, out),
        _ => false,
    }
}

/// [`compare_into`] for the ordering of `PartialOrd` (IEEE comparisons of floats: false
/// with a NaN, except `!=`; integers' order), one comparison operator per direction on the
/// widest vectors the CPU has. An operand of one element broadcasts.
fn compare_ieee_into<T: Copy + PartialOrd>(
    dir: ComparisonDirection,
    a: &[T],
    b: &[T],
    out: &mut [u8],
) {
    use ComparisonDirection as D;
    let n = out.len();
    macro_rules! each {
        ($op:tt) => {
            match (a, b) {
                (&[x], &[y]) => out.fill(u8::from(x $op y)),
                (&[x], _) if b.len() == n => oxla_simd::map(b, out, |y| u8::from(x $op y)),
                (_, &[y]) if a.len() == n => oxla_simd::map(a, out, |x| u8::from(x $op y)),
                _ => oxla_simd::zip(a, b, out, |x, y| u8::from(x $op y)),
            }
        };
    }
    match dir {
        D::Eq => each!(==),
        D::Ne => each!(!=),
        D::Lt => each!(<),
        D::Le => each!(<=),
        D::Gt => each!(>),
        D::Ge => each!(>=),
    }
}

/// `out[i] = a[i] dir b[i]` as 0/1 bytes under the order `cmp` (an operand of one element
/// broadcasts).
pub(crate) fn compare_into<T>(
    dir: ComparisonDirection,
    cmp: &impl Fn(&T, &T) -> Option<Ordering>,
    a: &[T],
    b: &[T],
    out: &mut [u8],
) {
    let at = |v: &[T], i: usize| if v.len() == 1 { 0 } else { i };
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from(ordering_matches(dir, cmp(&a[at(a, i)], &b[at(b, i)])));
    }
}

pub(crate) fn ordering_matches(dir: ComparisonDirection, ord: Option<Ordering>) -> bool {
    use ComparisonDirection as D;
    match ord {
        None => dir == D::Ne,
        Some(o) => match dir {
            D::Eq => o == Ordering::Equal,
            D::Ne => o != Ordering::Equal,
            D::Lt => o == Ordering::Less,
            D::Le => o != Ordering::Greater,
            D::Gt => o == Ordering::Greater,
            D::Ge => o != Ordering::Less,
        },
    }
}

fn cmp_with<T: Copy>(
    a: &[T],
    b: &[T],
    dir: ComparisonDirection,
    f: impl Fn(&T, &T) -> Option<Ordering>,
) -> Vec<bool> {
    a.iter()
        .zip(b)
        .map(|(x, y)| ordering_matches(dir, f(x, y)))
        .collect()
}

/// Evaluates `compare`.
pub(crate) fn compare(cx: OpCx<'_>, a: &Literal, b: &Literal) -> Result<Literal, IrError> {
    let dir = match cx.attr("comparison_direction")? {
        Attribute::ComparisonDirection(d) => *d,
        _ => return Err(cx.invalid("`comparison_direction` has the wrong kind")),
    };
    let total = matches!(
        cx.op.attr("compare_type"),
        Some(Attribute::ComparisonType(ComparisonType::TotalOrder))
    );
    let et = a.ty.element_type;
    if b.ty.element_type != et {
        return Err(cx.invalid(format!(
            "operand element types differ: {et} vs {}",
            b.ty.element_type
        )));
    }
    let shape = common_shape(cx, &[a, b])?;
    let n = num_elements(&shape);
    if fits_plain(et, n, &[a, b]) {
        let mut out = vec![0u8; n];
        if compare_bytes(et, dir, total, &a.data, &b.data, &mut out) {
            return Literal::new(TensorType::new(shape, ElementType::Pred), out);
        }
    }
    let out = match (decode_n(a, n), decode_n(b, n)) {
        (Array::Pred(a), Array::Pred(b)) => cmp_with(&a, &b, dir, |x, y| Some(x.cmp(y))),
        (Array::S8(a), Array::S8(b)) => cmp_with(&a, &b, dir, |x, y| Some(x.cmp(y))),
        (Array::S16(a), Array::S16(b)) => cmp_with(&a, &b, dir, |x, y| Some(x.cmp(y))),
        (Array::S32(a), Array::S32(b)) => cmp_with(&a, &b, dir, |x, y| Some(x.cmp(y))),
        (Array::S64(a), Array::S64(b)) => cmp_with(&a, &b, dir, |x, y| Some(x.cmp(y))),
        (Array::U8(a), Array::U8(b)) => cmp_with(&a, &b, dir, |x, y| Some(x.cmp(y))),
        (Array::U16(a), Array::U16(b)) => cmp_with(&a, &b, dir, |x, y| Some(x.cmp(y))),
        (Array::U32(a), Array::U32(b)) => cmp_with(&a, &b, dir, |x, y| Some(x.cmp(y))),
        (Array::U64(a), Array::U64(b)) => cmp_with(&a, &b, dir, |x, y| Some(x.cmp(y))),
        (Array::F32(a), Array::F32(b)) if total => {
            cmp_with(&a, &b, dir, |x, y| Some(Float::total_cmp(x, y)))
        }
        (Array::F64(a), Array::F64(b)) if total => {
            cmp_with(&a, &b, dir, |x, y| Some(Float::total_cmp(x, y)))
        }
        (Array::F32(a), Array::F32(b)) => cmp_with(&a, &b, dir, |x, y| x.partial_cmp(y)),
        (Array::F64(a), Array::F64(b)) => cmp_with(&a, &b, dir, |x, y| x.partial_cmp(y)),
        (Array::C64(a), Array::C64(b)) => cmp_with(&a, &b, dir, |x, y| {
            complex_cmp(&(x.re, x.im), &(y.re, y.im))
        }),
        (Array::C128(a), Array::C128(b)) => cmp_with(&a, &b, dir, |x, y| {
            complex_cmp(&(x.re, x.im), &(y.re, y.im))
        }),
        _ => return Err(type_error(cx, et)),
    };
    finish(cx, Array::Pred(out), shape, ElementType::Pred)
}

fn pick(pred: &[bool], t: Array, f: Array) -> Option<Array> {
    fn sel<T: Copy>(p: &[bool], t: Vec<T>, f: Vec<T>) -> Vec<T> {
        p.iter()
            .zip(t.into_iter().zip(f))
            .map(|(&p, (t, f))| if p { t } else { f })
            .collect()
    }
    Some(match (t, f) {
        (Array::Pred(t), Array::Pred(f)) => Array::Pred(sel(pred, t, f)),
        (Array::S8(t), Array::S8(f)) => Array::S8(sel(pred, t, f)),
        (Array::S16(t), Array::S16(f)) => Array::S16(sel(pred, t, f)),
        (Array::S32(t), Array::S32(f)) => Array::S32(sel(pred, t, f)),
        (Array::S64(t), Array::S64(f)) => Array::S64(sel(pred, t, f)),
        (Array::U8(t), Array::U8(f)) => Array::U8(sel(pred, t, f)),
        (Array::U16(t), Array::U16(f)) => Array::U16(sel(pred, t, f)),
        (Array::U32(t), Array::U32(f)) => Array::U32(sel(pred, t, f)),
        (Array::U64(t), Array::U64(f)) => Array::U64(sel(pred, t, f)),
        (Array::F32(t), Array::F32(f)) => Array::F32(sel(pred, t, f)),
        (Array::F64(t), Array::F64(f)) => Array::F64(sel(pred, t, f)),
        (Array::C64(t), Array::C64(f)) => Array::C64(sel(pred, t, f)),
        (Array::C128(t), Array::C128(f)) => Array::C128(sel(pred, t, f)),
        _ => return None,
    })
}

/// A choice between two values by their bits, written as a mask blend: in a loop, a choice
/// between two elements would compile into a gather through their addresses.
pub(crate) trait Blend: Copy {
    fn blend(pick_first: bool, a: Self, b: Self) -> Self;
}

macro_rules! blend {
    ($($t:ty),*) => {$(
        impl Blend for $t {
            #[inline(always)]
            fn blend(pick_first: bool, a: $t, b: $t) -> $t {
                let mask = (0 as $t).wrapping_sub(<$t>::from(pick_first));
                (a & mask) | (b & !mask)
            }
        }
    )*};
}
blend!(u8, u16, u32, u64);

/// `select` as a move of each element's bits (as XLA's `select` is), for element types of
/// 1, 2, 4 or 8 bytes whose operands each hold `n` elements or one that broadcasts.
fn select_fast(
    pred: &Literal,
    on_true: &Literal,
    on_false: &Literal,
    shape: &[i64],
    n: usize,
) -> Option<Result<Literal, IrError>> {
    fn go<T: Plain + Blend>(
        p: &[u8],
        t: &[u8],
        f: &[u8],
        ty: TensorType,
        n: usize,
    ) -> Result<Literal, IrError> {
        let (t, f) = (typed::view_bytes::<T>(t), typed::view_bytes::<T>(f));
        let at = |len: usize, i: usize| if len == 1 { 0 } else { i };
        typed::build_overwritten::<T>(ty, n, |out| {
            if p.len() == n && t.len() == n && f.len() == n {
                // A blend of bits under a mask of the predicate: a choice between the two
                // elements would compile into a gather through their addresses.
                oxla_simd::vectorized(
                    #[inline(always)]
                    || {
                        for (((o, &p), &t), &f) in out.iter_mut().zip(p).zip(&*t).zip(&*f) {
                            *o = T::blend(p != 0, t, f);
                        }
                    },
                );
            } else {
                for (i, o) in out.iter_mut().enumerate() {
                    let p = p[at(p.len(), i)];
                    *o = if p != 0 {
                        t[at(t.len(), i)]
                    } else {
                        f[at(f.len(), i)]
                    };
                }
            }
        })
    }
    let et = on_true.ty.element_type;
    if et.bit_width() != 8 * et.byte_size()
        || !fits_plain(ElementType::Pred, n, &[pred])
        || !fits_plain(et, n, &[on_true, on_false])
    {
        return None;
    }
    let ty = TensorType::new(shape.to_vec(), et);
    let (p, t, f) = (&pred.data[..], &on_true.data[..], &on_false.data[..]);
    Some(match et.byte_size() {
        1 => go::<u8>(p, t, f, ty, n),
        2 => go::<u16>(p, t, f, ty, n),
        4 => go::<u32>(p, t, f, ty, n),
        8 => go::<u64>(p, t, f, ty, n),
        _ => return None,
    })
}

/// Evaluates `select` (the predicate may be a scalar).
pub(crate) fn select(
    cx: OpCx<'_>,
    pred: &Literal,
    on_true: &Literal,
    on_false: &Literal,
) -> Result<Literal, IrError> {
    if pred.ty.element_type != ElementType::Pred {
        return Err(cx.invalid("predicate must be i1"));
    }
    let et = on_true.ty.element_type;
    if on_false.ty.element_type != et {
        return Err(cx.invalid("on_true and on_false element types differ"));
    }
    let shape = common_shape(cx, &[pred, on_true, on_false])?;
    let n = num_elements(&shape);
    if let Some(done) = select_fast(pred, on_true, on_false, &shape, n) {
        return done;
    }
    let Array::Pred(p) = decode_n(pred, n) else {
        return Err(cx.invalid("predicate must be i1"));
    };
    let out =
        pick(&p, decode_n(on_true, n), decode_n(on_false, n)).ok_or_else(|| type_error(cx, et))?;
    finish(cx, out, shape, et)
}

/// Evaluates `clamp` (the bounds may be scalars): `min(max(operand, min), max)`.
pub(crate) fn clamp(
    cx: OpCx<'_>,
    lo: &Literal,
    x: &Literal,
    hi: &Literal,
) -> Result<Literal, IrError> {
    let et = x.ty.element_type;
    if lo.ty.element_type != et || hi.ty.element_type != et {
        return Err(cx.invalid("bound element types differ from the operand's"));
    }
    let shape = common_shape(cx, &[lo, x, hi])?;
    let n = num_elements(&shape);
    let bits = et.bit_width() as u32;
    // Float clamps keep denormals (XLA flushes only `maximum` and `minimum` operands).
    fn floats<F: Float>(lo: &[F], x: &[F], hi: &[F]) -> Vec<F> {
        x.iter()
            .zip(lo)
            .zip(hi)
            .map(|((&x, &l), &h)| fmin(fmax(x, l), h))
            .collect()
    }
    let out = match (decode_n(lo, n), decode_n(x, n), decode_n(hi, n)) {
        (Array::F32(l), Array::F32(v), Array::F32(h)) => Array::F32(floats(&l, &v, &h)),
        (Array::F64(l), Array::F64(v), Array::F64(h)) => Array::F64(floats(&l, &v, &h)),
        (l, v, h) => {
            let raised =
                binary_arrays(&OpKind::Maximum, v, l, bits).ok_or_else(|| type_error(cx, et))?;
            binary_arrays(&OpKind::Minimum, raised, h, bits).ok_or_else(|| type_error(cx, et))?
        }
    };
    finish(cx, out, shape, et)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Edge values of a narrow integer type and a sweep of bit patterns.
    fn samples<T: Int>(bits: u32) -> Vec<T> {
        let min = if T::SIGNED { 1u64 << (bits - 1) } else { 0 };
        let max = min.wrapping_sub(1) & low_mask(bits);
        let mut v: Vec<T> = [
            0,
            1,
            2,
            3,
            7,
            min,
            max,
            min + 1,
            max - 1,
            u64::MAX,
            u64::MAX - 6,
        ]
        .iter()
        .map(|&b| T::from_bits(b))
        .collect();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..300 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.push(T::from_bits(x));
            v.push(T::from_bits(x % 1000));
            v.push(T::from_bits((x % 1000).wrapping_neg()));
        }
        v
    }

    /// `int_zip`'s divide and remainder give `xla_div`/`xla_rem` for every pair of samples,
    /// element by element and with either operand broadcast.
    fn check_division<T: Plain + Int + std::fmt::Debug>(values: &[T]) {
        let n = values.len();
        for (kind, exact) in [
            (OpKind::Divide, T::xla_div as fn(T, T) -> T),
            (OpKind::Remainder, T::xla_rem),
        ] {
            let mut out = vec![T::default(); n];
            for &b in values {
                let divisors = vec![b; n];
                assert!(int_zip(&kind, &mut out, values, &divisors));
                let want: Vec<T> = values.iter().map(|&a| exact(a, b)).collect();
                assert_eq!(out, want, "{kind:?} by {b:?}");
                assert!(int_zip(&kind, &mut out, values, &[b]));
                assert_eq!(out, want, "{kind:?} by a broadcast {b:?}");
                assert!(int_zip(&kind, &mut out, &[b], values));
                let want: Vec<T> = values.iter().map(|&d| exact(b, d)).collect();
                assert_eq!(out, want, "{kind:?} of a broadcast {b:?}");
            }
        }
    }

    #[test]
    fn narrow_division_matches_xla_division() {
        let every_i8: Vec<i8> = (i8::MIN..=i8::MAX).collect();
        let every_u8: Vec<u8> = (0..=u8::MAX).collect();
        check_division(&every_i8);
        check_division(&every_u8);
        check_division(&samples::<i16>(16));
        check_division(&samples::<u16>(16));
        check_division(&samples::<i32>(32));
        check_division(&samples::<u32>(32));
        // The wide types keep the scalar kernels.
        check_division(&samples::<i64>(64)[..100]);
        check_division(&samples::<u64>(64)[..100]);
    }

    fn check_unary<T: Plain + Int + std::fmt::Debug>(values: &[T]) {
        let bits = 8 * std::mem::size_of::<T>() as u32;
        use OpKind as K;
        for kind in [
            K::Abs,
            K::Negate,
            K::Not,
            K::Sign,
            K::PopulationCount,
            K::CountLeadingZeros,
        ] {
            let mut out = vec![T::default(); values.len()];
            assert!(int_map_into(&kind, values, &mut out));
            assert_eq!(Some(out), map_int(values, &kind, bits), "{kind:?}");
        }
        assert!(!int_map_into(&K::Exponential, values, &mut []));
    }

    #[test]
    fn large_integer_unary_ops_split_over_the_threads_match_the_element_functions() {
        // Long enough that a pool of two or more threads splits it, with parts that end
        // off any vector boundary.
        let base = samples::<i32>(32);
        let values: Vec<i32> = (0..900_007)
            .map(|i| base[i % base.len()].wrapping_add((i / base.len()) as i32))
            .collect();
        let x = Literal::from_i32(&[values.len() as i64], &values).unwrap();
        use OpKind as K;
        for kind in [K::Abs, K::Sign, K::PopulationCount, K::CountLeadingZeros] {
            let got = int_unary_fast(&kind, &x)
                .expect("a plain integer op")
                .unwrap();
            assert_eq!(got.to_i32_vec(), map_int(&values, &kind, 32), "{kind:?}");
        }
    }

    #[test]
    fn integer_unary_loops_match_the_element_functions() {
        check_unary(&samples::<i8>(8));
        check_unary(&samples::<i16>(16));
        check_unary(&samples::<i32>(32));
        check_unary(&samples::<i64>(64));
        check_unary(&samples::<u8>(8));
        check_unary(&samples::<u16>(16));
        check_unary(&samples::<u32>(32));
        check_unary(&samples::<u64>(64));
    }

    /// f32 `erf_inv` (`fastmath::erf_inv`): within an ulp of the exact inverse, infinite at
    /// ±1, NaN outside, and the vector loop gives the element function's bits.
    #[test]
    fn f32_erf_inv_loop_and_element_agree_and_are_accurate() {
        let mut xs: Vec<f32> = vec![0.0, -0.0, 1.0, -1.0, 1.5, -2.0, f32::NAN, 0.999_999_94];
        xs.extend((1..20_000).map(|k| k as f32 / 20_000.0));
        xs.extend((1..20_000).map(|k| -(k as f32) / 20_000.0));
        let mut out = vec![0.0f32; xs.len()];
        assert!(f32::map_common(&xs, &mut out, &OpKind::ChloErfInv));
        for (&x, &y) in xs.iter().zip(&out) {
            let one = x.apply(&OpKind::ChloErfInv).unwrap();
            assert_eq!(one.to_bits(), y.to_bits(), "erf_inv({x}) element vs loop");
            let exact = special::erf_inv(f64::from(x));
            if exact.is_nan() {
                assert!(y.is_nan(), "erf_inv({x}) = {y}");
            } else if exact.is_infinite() || x == 0.0 {
                assert_eq!(f64::from(y), exact, "erf_inv({x})");
            } else {
                let err = (f64::from(y) - exact).abs() / exact.abs();
                assert!(err < 1.2e-7, "erf_inv({x}) = {y}, exactly {exact}");
            }
        }
        assert!(super::super::fastmath::erf_inv(-0.0).is_sign_negative());
    }

    /// The blocked, threaded `bf16`/`f16` paths give the general path's bytes (decode, the
    /// f32 op, encode): every bit pattern in the operands, lengths around the block and the
    /// thread split, one-element operands, with denormals flushed as executions run.
    #[test]
    fn narrow_float_paths_give_the_general_paths_bytes() {
        let _flush = oxla_simd::FlushDenormals::new();
        let mut x = 0x2545_f491u32;
        let mut patterns = |n: usize| -> Vec<u8> {
            (0..n)
                .flat_map(|i| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    // Every pattern once in the first 65536 elements, then random ones.
                    let bits = if i <= 0xffff { i as u16 } else { x as u16 };
                    bits.to_le_bytes()
                })
                .collect()
        };
        for et in [ElementType::BF16, ElementType::F16] {
            for n in [1usize, 7, 1024, 1025, 65_536 + 3, 200_003] {
                let ty = TensorType::new(vec![n as i64], et);
                let a = Literal::new(ty.clone(), patterns(n)).unwrap();
                let mut shifted = patterns(n + 1);
                shifted.drain(..2);
                let b = Literal::new(ty.clone(), shifted).unwrap();
                let one =
                    Literal::new(TensorType::new(vec![], et), patterns(3)[4..].to_vec()).unwrap();
                let f32s = |lit: &Literal| match decode_n(lit, n) {
                    Array::F32(v) => v,
                    other => panic!("{et} decodes to {other:?}"),
                };
                for kind in [
                    OpKind::Add,
                    OpKind::Multiply,
                    OpKind::Divide,
                    OpKind::Maximum,
                ] {
                    for (l, r) in [(&a, &b), (&one, &a), (&b, &one)] {
                        let fast = narrow_binary_fast(&kind, l, r, &[n as i64], n)
                            .expect("a narrow pair")
                            .unwrap();
                        let mut want = vec![0.0f32; n];
                        assert!(float_zip(&kind, &mut want, &f32s(l), &f32s(r)));
                        let want = encode(&Array::F32(want), ty.clone()).unwrap();
                        assert!(fast.data == want.data, "{kind:?} on {n} {et}");
                    }
                }
                for kind in [OpKind::Exponential, OpKind::Tanh, OpKind::Negate] {
                    let fast = narrow_unary_fast(&kind, &a).expect("a narrow op").unwrap();
                    let want = map_float(&f32s(&a), &kind).unwrap();
                    let want = encode(&Array::F32(want), ty.clone()).unwrap();
                    assert!(fast.data == want.data, "{kind:?} on {n} {et}");
                }
            }
        }
    }
}
