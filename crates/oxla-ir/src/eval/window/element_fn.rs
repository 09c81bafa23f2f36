//! The scalar function of a simple combining body (`add`, `multiply`, `maximum`, `minimum`,
//! and the bitwise ops on integers) on one storage type, for the typed window loops.
//!
//! Each function computes exactly what the general path's elementwise op gives for one
//! pair: floats with [`max_op`]/[`min_op`]'s NaN, signed-zero and denormal rules, integers
//! wrapping, and `f16`/`bf16` (kept as their bits) widened to f32, combined there and
//! rounded back, as the general path decodes, computes and encodes them.

use super::super::elementwise::{max_op, min_op, Int};
use super::super::typed::Plain;
use crate::{ElementType, OpKind};
use half::{bf16, f16};

/// Work generic over the storage type `T` and the body's function on it.
pub(crate) trait Visit {
    type Out;
    fn visit<T: Plain + PartialOrd + Send + Sync, F: Fn(T, T) -> T + Copy + Send + Sync>(
        self,
        f: F,
    ) -> Self::Out;
}

/// Runs `work` with the function of the body op `kind` on elements of `et`, or `None` when
/// the pair has no typed loop here.
pub(crate) fn with_element_fn<V: Visit>(kind: &OpKind, et: ElementType, work: V) -> Option<V::Out> {
    use ElementType as E;
    use OpKind as K;
    macro_rules! float {
        ($t:ty) => {
            match kind {
                K::Add => work.visit(|a: $t, b: $t| a + b),
                K::Multiply => work.visit(|a: $t, b: $t| a * b),
                K::Maximum => work.visit(max_op::<$t>),
                K::Minimum => work.visit(min_op::<$t>),
                _ => return None,
            }
        };
    }
    macro_rules! int {
        ($t:ty) => {
            match kind {
                K::Add => work.visit(<$t as Int>::wadd),
                K::Multiply => work.visit(<$t as Int>::wmul),
                K::Maximum => work.visit(std::cmp::max::<$t>),
                K::Minimum => work.visit(std::cmp::min::<$t>),
                K::And => work.visit(<$t as Int>::bit_and),
                K::Or => work.visit(<$t as Int>::bit_or),
                K::Xor => work.visit(<$t as Int>::bit_xor),
                _ => return None,
            }
        };
    }
    macro_rules! half {
        ($h:ty) => {{
            macro_rules! widened {
                ($op:expr) => {
                    work.visit(move |a: u16, b: u16| {
                        let (a, b) = (<$h>::from_bits(a).to_f32(), <$h>::from_bits(b).to_f32());
                        <$h>::from_f32($op(a, b)).to_bits()
                    })
                };
            }
            match kind {
                K::Add => widened!(|a: f32, b: f32| a + b),
                K::Multiply => widened!(|a: f32, b: f32| a * b),
                K::Maximum => widened!(max_op::<f32>),
                K::Minimum => widened!(min_op::<f32>),
                _ => return None,
            }
        }};
    }
    Some(match et {
        E::F32 => float!(f32),
        E::F64 => float!(f64),
        E::S8 => int!(i8),
        E::S16 => int!(i16),
        E::S32 => int!(i32),
        E::S64 => int!(i64),
        E::U8 => int!(u8),
        E::U16 => int!(u16),
        E::U32 => int!(u32),
        E::U64 => int!(u64),
        E::F16 => half!(f16),
        E::BF16 => half!(bf16),
        _ => return None,
    })
}
