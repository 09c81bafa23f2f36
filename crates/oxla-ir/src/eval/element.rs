//! Typed element access: decoding [`Literal`] bytes into typed vectors and back.
//!
//! Every element type maps to one *storage* variant of [`Array`]:
//! signed integers of 2..8 bits use `i8`, unsigned ones `u8` (sign- or zero-extended),
//! and every float narrower than 32 bits (f16, bf16, the f8/f6/f4 formats) is widened
//! exactly to `f32`. Kernels compute on the storage type; [`encode`] then wraps integers to
//! their bit width and rounds small floats to nearest even with each format's rules, so one
//! kernel per storage type serves every element type.

use super::floatfmt;
use crate::{ElementType, IrError, Literal, TensorType};
use half::{bf16, f16};
use num_complex::{Complex32, Complex64};

/// A tensor's elements in their storage type (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Array {
    Pred(Vec<bool>),
    S8(Vec<i8>),
    S16(Vec<i16>),
    S32(Vec<i32>),
    S64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    C64(Vec<Complex32>),
    C128(Vec<Complex64>),
}

/// The storage variant an element type decodes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Storage {
    Pred,
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    C64,
    C128,
}

/// The storage variant of `et`.
pub(crate) fn storage_of(et: ElementType) -> Storage {
    use ElementType as E;
    match et {
        E::Pred => Storage::Pred,
        E::S2 | E::S4 | E::S8 => Storage::S8,
        E::S16 => Storage::S16,
        E::S32 => Storage::S32,
        E::S64 => Storage::S64,
        E::U2 | E::U4 | E::U8 => Storage::U8,
        E::U16 => Storage::U16,
        E::U32 => Storage::U32,
        E::U64 => Storage::U64,
        E::F64 => Storage::F64,
        E::C64 => Storage::C64,
        E::C128 => Storage::C128,
        _ => Storage::F32,
    }
}

/// Applies `$body` to the vector inside any variant of an [`Array`], binding it to `$v`.
macro_rules! with_array {
    ($arr:expr, $v:ident => $body:expr) => {
        match $arr {
            Array::Pred($v) => $body,
            Array::S8($v) => $body,
            Array::S16($v) => $body,
            Array::S32($v) => $body,
            Array::S64($v) => $body,
            Array::U8($v) => $body,
            Array::U16($v) => $body,
            Array::U32($v) => $body,
            Array::U64($v) => $body,
            Array::F32($v) => $body,
            Array::F64($v) => $body,
            Array::C64($v) => $body,
            Array::C128($v) => $body,
        }
    };
}

/// Applies `$body` to the vector inside any variant and rewraps the result in the same variant.
macro_rules! map_array {
    ($arr:expr, $v:ident => $body:expr) => {
        match $arr {
            Array::Pred($v) => Array::Pred($body),
            Array::S8($v) => Array::S8($body),
            Array::S16($v) => Array::S16($body),
            Array::S32($v) => Array::S32($body),
            Array::S64($v) => Array::S64($body),
            Array::U8($v) => Array::U8($body),
            Array::U16($v) => Array::U16($body),
            Array::U32($v) => Array::U32($body),
            Array::U64($v) => Array::U64($body),
            Array::F32($v) => Array::F32($body),
            Array::F64($v) => Array::F64($body),
            Array::C64($v) => Array::C64($body),
            Array::C128($v) => Array::C128($body),
        }
    };
}

impl Array {
    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        with_array!(self, v => v.len())
    }

    /// The storage variant.
    pub(crate) fn storage(&self) -> Storage {
        match self {
            Array::Pred(_) => Storage::Pred,
            Array::S8(_) => Storage::S8,
            Array::S16(_) => Storage::S16,
            Array::S32(_) => Storage::S32,
            Array::S64(_) => Storage::S64,
            Array::U8(_) => Storage::U8,
            Array::U16(_) => Storage::U16,
            Array::U32(_) => Storage::U32,
            Array::U64(_) => Storage::U64,
            Array::F32(_) => Storage::F32,
            Array::F64(_) => Storage::F64,
            Array::C64(_) => Storage::C64,
            Array::C128(_) => Storage::C128,
        }
    }

    /// Element `i`, repeated `n` times (used to broadcast scalars).
    pub(crate) fn splat(&self, i: usize, n: usize) -> Array {
        map_array!(self, v => vec![v[i]; n])
    }
}

fn read_chunks<const N: usize, T>(data: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
    data.chunks_exact(N)
        .map(|c| {
            let mut bytes = [0u8; N];
            bytes.copy_from_slice(c);
            f(bytes)
        })
        .collect()
}

/// Like [`read_chunks`] for plain little-endian elements (`f` must be `T::from_le_bytes`):
/// one copy when the bytes can be viewed as `T` in place.
fn read_pod<const N: usize, T: bytemuck::Pod>(data: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
    if cfg!(target_endian = "little") {
        if let Ok(v) = bytemuck::try_cast_slice::<u8, T>(data) {
            return v.to_vec();
        }
    }
    read_chunks(data, f)
}

/// Little-endian bytes of plain elements (`f` must be `T::to_le_bytes`).
fn write_pod<const N: usize, T: bytemuck::Pod>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    if cfg!(target_endian = "little") {
        return bytemuck::cast_slice::<T, u8>(v).to_vec();
    }
    let mut out = Vec::with_capacity(v.len() * N);
    for &x in v {
        out.extend_from_slice(&f(x));
    }
    out
}

/// Sign-extends the low `bits` bits of `x`.
pub(crate) fn sign_extend_i8(x: i8, bits: u32) -> i8 {
    let shift = 8 - bits;
    x.wrapping_shl(shift).wrapping_shr(shift)
}

/// Keeps the low `bits` bits of `x`.
pub(crate) fn mask_u8(x: u8, bits: u32) -> u8 {
    if bits >= 8 {
        x
    } else {
        x & ((1u8 << bits) - 1)
    }
}

/// Decodes a literal's bytes into its storage type.
pub(crate) fn decode(lit: &Literal) -> Array {
    decode_bytes(&lit.data, lit.ty.element_type)
}

/// Decodes raw element bytes of type `et` (length must be a multiple of the element size).
pub(crate) fn decode_bytes(data: &[u8], et: ElementType) -> Array {
    use ElementType as E;
    let bits = et.bit_width() as u32;
    match et {
        E::Pred => Array::Pred(data.iter().map(|&b| b != 0).collect()),
        E::S2 | E::S4 => Array::S8(
            data.iter()
                .map(|&b| sign_extend_i8(b as i8, bits))
                .collect(),
        ),
        E::S8 => Array::S8(data.iter().map(|&b| b as i8).collect()),
        E::S16 => Array::S16(read_pod(data, i16::from_le_bytes)),
        E::S32 => Array::S32(read_pod(data, i32::from_le_bytes)),
        E::S64 => Array::S64(read_pod(data, i64::from_le_bytes)),
        E::U2 | E::U4 => Array::U8(data.iter().map(|&b| mask_u8(b, bits)).collect()),
        E::U8 => Array::U8(data.to_vec()),
        E::U16 => Array::U16(read_pod(data, u16::from_le_bytes)),
        E::U32 => Array::U32(read_pod(data, u32::from_le_bytes)),
        E::U64 => Array::U64(read_pod(data, u64::from_le_bytes)),
        E::F16 => Array::F32(read_chunks(data, |b| f16::from_le_bytes(b).to_f32())),
        E::BF16 => Array::F32(read_chunks(data, |b| bf16::from_le_bytes(b).to_f32())),
        E::F32 => Array::F32(read_pod(data, f32::from_le_bytes)),
        E::F64 => Array::F64(read_pod(data, f64::from_le_bytes)),
        E::C64 => Array::C64(read_chunks(data, |b: [u8; 8]| {
            let re = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            let im = f32::from_le_bytes([b[4], b[5], b[6], b[7]]);
            Complex32::new(re, im)
        })),
        E::C128 => Array::C128(read_chunks(data, |b: [u8; 16]| {
            let mut re = [0u8; 8];
            let mut im = [0u8; 8];
            re.copy_from_slice(&b[..8]);
            im.copy_from_slice(&b[8..]);
            Complex64::new(f64::from_le_bytes(re), f64::from_le_bytes(im))
        })),
        small => {
            let format = floatfmt::format_of(small).unwrap_or(floatfmt::F8E4M3FN);
            Array::F32(
                data.iter()
                    .map(|&b| floatfmt::decode(format, u32::from(b)) as f32)
                    .collect(),
            )
        }
    }
}

/// Encodes `arr` as element type `ty.element_type` (wrapping integers, rounding small floats).
///
/// `arr` must use the storage variant of the element type and hold exactly the type's number
/// of elements; otherwise this is an internal error.
pub(crate) fn encode(arr: &Array, ty: TensorType) -> Result<Literal, IrError> {
    let et = ty.element_type;
    if arr.storage() != storage_of(et) {
        return Err(IrError::Eval {
            detail: format!("internal: {:?} storage cannot encode {et}", arr.storage()),
        });
    }
    let n = ty.num_elements().ok_or_else(|| IrError::Eval {
        detail: format!("{ty} has no static shape"),
    })?;
    if arr.len() != n {
        return Err(IrError::Eval {
            detail: format!("internal: {} elements do not fill {ty}", arr.len()),
        });
    }
    let data = encode_bytes(arr, et);
    Literal::new(ty, data)
}

/// Encodes `arr` (in `et`'s storage) to raw bytes.
pub(crate) fn encode_bytes(arr: &Array, et: ElementType) -> Vec<u8> {
    use ElementType as E;
    let bits = et.bit_width() as u32;
    match (arr, et) {
        (Array::Pred(v), _) => v.iter().map(|&b| u8::from(b)).collect(),
        (Array::S8(v), E::S2 | E::S4) => v.iter().map(|&x| sign_extend_i8(x, bits) as u8).collect(),
        (Array::S8(v), _) => v.iter().map(|&x| x as u8).collect(),
        (Array::U8(v), _) => v.iter().map(|&x| mask_u8(x, bits)).collect(),
        (Array::S16(v), _) => write_pod(v, |x| x.to_le_bytes()),
        (Array::S32(v), _) => write_pod(v, |x| x.to_le_bytes()),
        (Array::S64(v), _) => write_pod(v, |x| x.to_le_bytes()),
        (Array::U16(v), _) => write_pod(v, |x| x.to_le_bytes()),
        (Array::U32(v), _) => write_pod(v, |x| x.to_le_bytes()),
        (Array::U64(v), _) => write_pod(v, |x| x.to_le_bytes()),
        (Array::F64(v), _) => write_pod(v, |x| x.to_le_bytes()),
        (Array::C64(v), _) => v
            .iter()
            .flat_map(|c| {
                let mut b = [0u8; 8];
                b[..4].copy_from_slice(&c.re.to_le_bytes());
                b[4..].copy_from_slice(&c.im.to_le_bytes());
                b
            })
            .collect(),
        (Array::C128(v), _) => v
            .iter()
            .flat_map(|c| {
                let mut b = [0u8; 16];
                b[..8].copy_from_slice(&c.re.to_le_bytes());
                b[8..].copy_from_slice(&c.im.to_le_bytes());
                b
            })
            .collect(),
        (Array::F32(v), E::F16) => v
            .iter()
            .flat_map(|&x| f16::from_f32(x).to_le_bytes())
            .collect(),
        (Array::F32(v), E::BF16) => v
            .iter()
            .flat_map(|&x| bf16::from_f32(x).to_le_bytes())
            .collect(),
        (Array::F32(v), E::F32) => write_pod(v, |x| x.to_le_bytes()),
        (Array::F32(v), small) => {
            let format = floatfmt::format_of(small).unwrap_or(floatfmt::F8E4M3FN);
            v.iter()
                .map(|&x| floatfmt::encode(format, f64::from(x)) as u8)
                .collect()
        }
    }
}

/// A scalar element of any storage type, for attributes and per-element region calls.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Scalar {
    Int(i128),
    Float(f64),
    Complex(Complex64),
}

impl Array {
    /// Element `i` widened to a [`Scalar`] (exact for every storage type).
    pub(crate) fn scalar_at(&self, i: usize) -> Scalar {
        match self {
            Array::Pred(v) => Scalar::Int(i128::from(v[i])),
            Array::S8(v) => Scalar::Int(i128::from(v[i])),
            Array::S16(v) => Scalar::Int(i128::from(v[i])),
            Array::S32(v) => Scalar::Int(i128::from(v[i])),
            Array::S64(v) => Scalar::Int(i128::from(v[i])),
            Array::U8(v) => Scalar::Int(i128::from(v[i])),
            Array::U16(v) => Scalar::Int(i128::from(v[i])),
            Array::U32(v) => Scalar::Int(i128::from(v[i])),
            Array::U64(v) => Scalar::Int(i128::from(v[i])),
            Array::F32(v) => Scalar::Float(f64::from(v[i])),
            Array::F64(v) => Scalar::Float(v[i]),
            Array::C64(v) => {
                Scalar::Complex(Complex64::new(f64::from(v[i].re), f64::from(v[i].im)))
            }
            Array::C128(v) => Scalar::Complex(v[i]),
        }
    }
}

/// Reads element `index` of an integer literal as i64 (for indices: dynamic_slice starts,
/// case branch indices). `None` if the literal is not an integer type or too short.
pub(crate) fn int_at(lit: &Literal, index: usize) -> Option<i64> {
    let et = lit.ty.element_type;
    if !(et.is_int() || et.is_pred()) {
        return None;
    }
    let size = et.byte_size();
    let bytes = lit.data.get(index * size..(index + 1) * size)?;
    let arr = decode_bytes(bytes, et);
    match arr.scalar_at(0) {
        Scalar::Int(v) => Some(i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_byte_ints_wrap_and_sign_extend() {
        let ty = TensorType::new([3], ElementType::S4);
        let lit = encode(&Array::S8(vec![7, 8, -9]), ty).unwrap();
        // 8 wraps to -8 and -9 wraps to 7 in 4 bits.
        assert_eq!(*lit.data, vec![7, (-8i8) as u8, 7]);
        assert_eq!(decode(&lit), Array::S8(vec![7, -8, 7]));
        let ty = TensorType::new([2], ElementType::U2);
        let lit = encode(&Array::U8(vec![5, 3]), ty).unwrap();
        assert_eq!(*lit.data, vec![1, 3]);
    }

    #[test]
    fn f16_and_bf16_round_to_nearest_even() {
        // 1 + 2^-11 is halfway between 1 and the next f16 (1 + 2^-10): ties to even, so 1.
        // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: ties to 1 + 2^-9.
        let x = [1.0 + 2f32.powi(-11), 1.0 + 3.0 * 2f32.powi(-11)];
        let lit = encode(
            &Array::F32(x.to_vec()),
            TensorType::new([2], ElementType::F16),
        )
        .unwrap();
        assert_eq!(decode(&lit), Array::F32(vec![1.0, 1.0 + 2f32.powi(-9)]));
        // bf16 has 8 significant bits: 1 + 2^-8 ties down to 1, 1 + 3 * 2^-8 ties up.
        let x = [1.0 + 2f32.powi(-8), 1.0 + 3.0 * 2f32.powi(-8)];
        let lit = encode(
            &Array::F32(x.to_vec()),
            TensorType::new([2], ElementType::BF16),
        )
        .unwrap();
        assert_eq!(decode(&lit), Array::F32(vec![1.0, 1.0 + 2f32.powi(-6)]));
    }

    #[test]
    fn encode_checks_storage_and_length() {
        let ty = TensorType::new([2], ElementType::S32);
        assert!(encode(&Array::F32(vec![1.0, 2.0]), ty.clone()).is_err());
        assert!(encode(&Array::S32(vec![1]), ty).is_err());
    }
}
