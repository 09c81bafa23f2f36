//! Zero-copy typed views of literal bytes for the fast paths of plain element types
//! (f32, f64 and the 8- to 64-bit integers).
//!
//! A literal's bytes are little-endian elements; on a little-endian target whose buffer
//! happens to be aligned for the element type (always, in practice, for heap buffers),
//! they can be read and written as `&[f32]`/`&[f64]` directly. Every function here falls
//! back to an exact element-by-element copy when that is not possible, so callers never
//! depend on alignment or byte order for correctness.

use crate::{ElementType, IrError, Literal, TensorType};
use bytemuck::Pod;
use std::borrow::Cow;

/// An element type stored as one plain little-endian Rust scalar: its element type and
/// little-endian conversions.
pub(crate) trait Plain: Pod + Default {
    const ET: ElementType;
    fn from_le(b: &[u8]) -> Self;
    fn to_le(self, out: &mut [u8]);
}

macro_rules! plain {
    ($t:ty, $et:expr, $n:expr) => {
        impl Plain for $t {
            const ET: ElementType = $et;
            fn from_le(b: &[u8]) -> Self {
                let mut a = [0u8; $n];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
            fn to_le(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
        }
    };
}
plain!(f32, ElementType::F32, 4);
plain!(f64, ElementType::F64, 8);
plain!(i8, ElementType::S8, 1);
plain!(i16, ElementType::S16, 2);
plain!(i32, ElementType::S32, 4);
plain!(i64, ElementType::S64, 8);
plain!(u8, ElementType::U8, 1);
plain!(u16, ElementType::U16, 2);
plain!(u32, ElementType::U32, 4);
plain!(u64, ElementType::U64, 8);

/// The elements of `data` as `T`: borrowed when the bytes can be viewed in place.
pub(crate) fn view_bytes<T: Plain>(data: &[u8]) -> Cow<'_, [T]> {
    let size = std::mem::size_of::<T>();
    if cfg!(target_endian = "little") {
        if let Ok(s) = bytemuck::try_cast_slice::<u8, T>(data) {
            return Cow::Borrowed(s);
        }
    }
    Cow::Owned(data.chunks_exact(size).map(T::from_le).collect())
}

/// The elements of `lit` as `T`, or `None` when its element type is not `T`'s.
pub(crate) fn view<T: Plain>(lit: &Literal) -> Option<Cow<'_, [T]>> {
    (lit.ty.element_type == T::ET).then(|| view_bytes(&lit.data))
}

/// Little-endian bytes of `values`.
pub(crate) fn to_bytes<T: Plain>(values: &[T]) -> Vec<u8> {
    if cfg!(target_endian = "little") {
        return bytemuck::cast_slice::<T, u8>(values).to_vec();
    }
    let size = std::mem::size_of::<T>();
    let mut out = vec![0u8; std::mem::size_of_val(values)];
    for (o, &v) in out.chunks_exact_mut(size).zip(values) {
        v.to_le(o);
    }
    out
}

/// Runs `f` on a scratch slice of `n` elements of unspecified content (a buffer of the
/// thread's cache, given back afterwards), for work areas `f` writes before reading.
pub(crate) fn with_scratch<T: Plain, R>(n: usize, f: impl FnOnce(&mut [T]) -> R) -> R {
    let mut data = super::pool::take_for_overwrite(n * std::mem::size_of::<T>());
    let result = match bytemuck::try_cast_slice_mut::<u8, T>(&mut data) {
        Ok(scratch) => f(scratch),
        Err(_) => f(&mut vec![T::default(); n]),
    };
    super::pool::give(data);
    result
}

/// A literal of type `ty` (element type `T::ET`, `n` elements) whose elements `fill` writes,
/// starting from zeros.
pub(crate) fn build<T: Plain>(
    ty: TensorType,
    n: usize,
    fill: impl FnOnce(&mut [T]),
) -> Result<Literal, IrError> {
    build_from(
        super::pool::take_zeroed(n * std::mem::size_of::<T>()),
        ty,
        n,
        fill,
    )
}

/// [`build`] for a `fill` that writes every element: the buffer is not zeroed first (a
/// reused one holds a dead value's bytes until `fill` overwrites them).
pub(crate) fn build_overwritten<T: Plain>(
    ty: TensorType,
    n: usize,
    fill: impl FnOnce(&mut [T]),
) -> Result<Literal, IrError> {
    let data = super::pool::take_for_overwrite(n * std::mem::size_of::<T>());
    build_from(data, ty, n, fill)
}

fn build_from<T: Plain>(
    mut data: Vec<u8>,
    ty: TensorType,
    n: usize,
    fill: impl FnOnce(&mut [T]),
) -> Result<Literal, IrError> {
    if cfg!(target_endian = "little") {
        if let Ok(out) = bytemuck::try_cast_slice_mut::<u8, T>(&mut data) {
            fill(out);
            return Literal::new(ty, data);
        }
    }
    let mut values = vec![T::default(); n];
    fill(&mut values);
    Literal::new(ty, to_bytes(&values))
}

/// Conversions between `T` vectors and the evaluator's [`Array`](super::element::Array).
pub(crate) trait ArrayFloat: Plain + oxla_simd::GemmScalar {
    fn from_array(a: super::element::Array) -> Option<Vec<Self>>;
    fn into_array(v: Vec<Self>) -> super::element::Array;
}

impl ArrayFloat for f32 {
    fn from_array(a: super::element::Array) -> Option<Vec<f32>> {
        match a {
            super::element::Array::F32(v) => Some(v),
            _ => None,
        }
    }
    fn into_array(v: Vec<f32>) -> super::element::Array {
        super::element::Array::F32(v)
    }
}

impl ArrayFloat for f64 {
    fn from_array(a: super::element::Array) -> Option<Vec<f64>> {
        match a {
            super::element::Array::F64(v) => Some(v),
            _ => None,
        }
    }
    fn into_array(v: Vec<f64>) -> super::element::Array {
        super::element::Array::F64(v)
    }
}
