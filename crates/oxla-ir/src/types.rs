//! Element types, tensor types and the other value types of StableHLO programs.
//!
//! Names follow the StableHLO spec (`i1`, `si8`, `ui32`, `f8E4M3FN`, `complex<f32>`).
//! Shapes hold `i64` extents; a dynamic extent is [`DYNAMIC`].

use std::fmt;

/// The extent of a dynamic dimension (MLIR's `ShapedType::kDynamic`).
pub const DYNAMIC: i64 = i64::MIN;

/// Every element type a StableHLO tensor can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementType {
    /// Boolean (`i1`).
    Pred,
    /// Signed 2-bit integer.
    S2,
    /// Signed 4-bit integer.
    S4,
    /// Signed 8-bit integer.
    S8,
    /// Signed 16-bit integer.
    S16,
    /// Signed 32-bit integer.
    S32,
    /// Signed 64-bit integer.
    S64,
    /// Unsigned 2-bit integer.
    U2,
    /// Unsigned 4-bit integer.
    U4,
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// 4-bit float, 2 exponent bits, 1 mantissa bit, finite only.
    F4E2M1FN,
    /// 6-bit float, 2 exponent bits, 3 mantissa bits, finite only.
    F6E2M3FN,
    /// 6-bit float, 3 exponent bits, 2 mantissa bits, finite only.
    F6E3M2FN,
    /// 8-bit float with 3 exponent and 4 mantissa bits (IEEE-like).
    F8E3M4,
    /// 8-bit float with 4 exponent and 3 mantissa bits (IEEE-like).
    F8E4M3,
    /// 8-bit float, 4 exponent bits, 3 mantissa bits, finite only, NaN = all ones.
    F8E4M3FN,
    /// 8-bit float, 4 exponent bits, 3 mantissa bits, unsigned zero, NaN = negative zero.
    F8E4M3FNUZ,
    /// 8-bit float, 4 exponent bits with bias 11, unsigned zero.
    F8E4M3B11FNUZ,
    /// 8-bit float with 5 exponent and 2 mantissa bits (IEEE-like).
    F8E5M2,
    /// 8-bit float, 5 exponent bits, 2 mantissa bits, unsigned zero.
    F8E5M2FNUZ,
    /// 8-bit exponent-only float (scale type).
    F8E8M0FNU,
    /// bfloat16.
    BF16,
    /// IEEE half precision.
    F16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
    /// Complex with f32 parts.
    C64,
    /// Complex with f64 parts.
    C128,
}

impl ElementType {
    /// All element types, in declaration order.
    pub const ALL: [ElementType; 30] = [
        ElementType::Pred,
        ElementType::S2,
        ElementType::S4,
        ElementType::S8,
        ElementType::S16,
        ElementType::S32,
        ElementType::S64,
        ElementType::U2,
        ElementType::U4,
        ElementType::U8,
        ElementType::U16,
        ElementType::U32,
        ElementType::U64,
        ElementType::F4E2M1FN,
        ElementType::F6E2M3FN,
        ElementType::F6E3M2FN,
        ElementType::F8E3M4,
        ElementType::F8E4M3,
        ElementType::F8E4M3FN,
        ElementType::F8E4M3FNUZ,
        ElementType::F8E4M3B11FNUZ,
        ElementType::F8E5M2,
        ElementType::F8E5M2FNUZ,
        ElementType::F8E8M0FNU,
        ElementType::BF16,
        ElementType::F16,
        ElementType::F32,
        ElementType::F64,
        ElementType::C64,
        ElementType::C128,
    ];

    /// Bytes one element occupies in oxla's dense host layout.
    /// Sub-byte types (`i1`, `si4`, `f4E2M1FN`, ...) take one byte each.
    pub fn byte_size(self) -> usize {
        use ElementType::*;
        match self {
            Pred | S2 | S4 | S8 | U2 | U4 | U8 => 1,
            F4E2M1FN | F6E2M3FN | F6E3M2FN | F8E3M4 | F8E4M3 | F8E4M3FN | F8E4M3FNUZ
            | F8E4M3B11FNUZ | F8E5M2 | F8E5M2FNUZ | F8E8M0FNU => 1,
            S16 | U16 | BF16 | F16 => 2,
            S32 | U32 | F32 => 4,
            S64 | U64 | F64 | C64 => 8,
            C128 => 16,
        }
    }

    /// Width in bits as StableHLO counts it (`i1` is 1, `si4` is 4, `complex<f32>` is 64).
    pub fn bit_width(self) -> usize {
        use ElementType::*;
        match self {
            Pred => 1,
            S2 | U2 => 2,
            S4 | U4 | F4E2M1FN => 4,
            F6E2M3FN | F6E3M2FN => 6,
            _ => self.byte_size() * 8,
        }
    }

    /// True for `i1`.
    pub fn is_pred(self) -> bool {
        self == ElementType::Pred
    }

    /// True for signed integer types.
    pub fn is_signed_int(self) -> bool {
        use ElementType::*;
        matches!(self, S2 | S4 | S8 | S16 | S32 | S64)
    }

    /// True for unsigned integer types.
    pub fn is_unsigned_int(self) -> bool {
        use ElementType::*;
        matches!(self, U2 | U4 | U8 | U16 | U32 | U64)
    }

    /// True for signed or unsigned integer types (not `i1`).
    pub fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }

    /// True for real floating-point types.
    pub fn is_float(self) -> bool {
        !self.is_pred() && !self.is_int() && !self.is_complex()
    }

    /// True for complex types.
    pub fn is_complex(self) -> bool {
        matches!(self, ElementType::C64 | ElementType::C128)
    }

    /// The spec's spelling of the type (`i1`, `i32`, `ui8`, `f32`, `complex<f32>`).
    /// Signed integers print as MLIR does, `i32` rather than `si32`.
    pub fn name(self) -> &'static str {
        use ElementType::*;
        match self {
            Pred => "i1",
            S2 => "i2",
            S4 => "i4",
            S8 => "i8",
            S16 => "i16",
            S32 => "i32",
            S64 => "i64",
            U2 => "ui2",
            U4 => "ui4",
            U8 => "ui8",
            U16 => "ui16",
            U32 => "ui32",
            U64 => "ui64",
            F4E2M1FN => "f4E2M1FN",
            F6E2M3FN => "f6E2M3FN",
            F6E3M2FN => "f6E3M2FN",
            F8E3M4 => "f8E3M4",
            F8E4M3 => "f8E4M3",
            F8E4M3FN => "f8E4M3FN",
            F8E4M3FNUZ => "f8E4M3FNUZ",
            F8E4M3B11FNUZ => "f8E4M3B11FNUZ",
            F8E5M2 => "f8E5M2",
            F8E5M2FNUZ => "f8E5M2FNUZ",
            F8E8M0FNU => "f8E8M0FNU",
            BF16 => "bf16",
            F16 => "f16",
            F32 => "f32",
            F64 => "f64",
            C64 => "complex<f32>",
            C128 => "complex<f64>",
        }
    }

    /// XLA's `PrimitiveType` number of the type; `None` for types whose XLA layout is not the
    /// plain dense one (sub-byte types) or that XLA does not number.
    pub fn xla_primitive_type(self) -> Option<i32> {
        use ElementType::*;
        Some(match self {
            Pred => 1,
            S8 => 2,
            S16 => 3,
            S32 => 4,
            S64 => 5,
            U8 => 6,
            U16 => 7,
            U32 => 8,
            U64 => 9,
            F16 => 10,
            F32 => 11,
            F64 => 12,
            C64 => 15,
            BF16 => 16,
            C128 => 18,
            F8E5M2 => 19,
            F8E4M3FN => 20,
            F8E4M3B11FNUZ => 23,
            F8E5M2FNUZ => 24,
            F8E4M3FNUZ => 25,
            F8E4M3 => 28,
            F8E3M4 => 29,
            F8E8M0FNU => 31,
            _ => return None,
        })
    }

    /// The type XLA's `PrimitiveType` number `code` names (the inverse of
    /// [`ElementType::xla_primitive_type`]).
    pub fn from_xla_primitive_type(code: i32) -> Option<ElementType> {
        ElementType::ALL
            .into_iter()
            .find(|ty| ty.xla_primitive_type() == Some(code))
    }

    /// Parses the spelling produced by [`ElementType::name`]; also accepts `si32`.
    pub fn from_name(name: &str) -> Option<ElementType> {
        let name = match name {
            "si2" => "i2",
            "si4" => "i4",
            "si8" => "i8",
            "si16" => "i16",
            "si32" => "i32",
            "si64" => "i64",
            other => other,
        };
        ElementType::ALL.into_iter().find(|ty| ty.name() == name)
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A ranked tensor type: shape plus element type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    /// Extents, outermost first; [`DYNAMIC`] marks a dynamic extent.
    pub shape: Vec<i64>,
    /// The element type.
    pub element_type: ElementType,
}

impl TensorType {
    /// A tensor type of the given shape and element type.
    pub fn new(shape: impl Into<Vec<i64>>, element_type: ElementType) -> TensorType {
        TensorType {
            shape: shape.into(),
            element_type,
        }
    }

    /// A rank-0 tensor type.
    pub fn scalar(element_type: ElementType) -> TensorType {
        TensorType {
            shape: Vec::new(),
            element_type,
        }
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// True when every extent is static.
    pub fn is_static(&self) -> bool {
        self.shape.iter().all(|&d| d != DYNAMIC)
    }

    /// Number of elements; `None` when some extent is dynamic or the count overflows.
    pub fn num_elements(&self) -> Option<usize> {
        self.shape.iter().try_fold(1usize, |acc, &d| {
            if d < 0 {
                None
            } else {
                acc.checked_mul(usize::try_from(d).ok()?)
            }
        })
    }

    /// Bytes of the dense host representation; `None` as for [`TensorType::num_elements`].
    pub fn byte_size(&self) -> Option<usize> {
        self.num_elements()?
            .checked_mul(self.element_type.byte_size())
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tensor<")?;
        for &d in &self.shape {
            if d == DYNAMIC {
                f.write_str("?x")?;
            } else {
                write!(f, "{d}x")?;
            }
        }
        write!(f, "{}>", self.element_type)
    }
}

/// The type of an SSA value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// A ranked tensor.
    Tensor(TensorType),
    /// `!stablehlo.token`.
    Token,
    /// `tuple<...>`.
    Tuple(Vec<Type>),
    /// A scalar of an element type outside a tensor (MLIR builtin `i64`, `f32`, `index`),
    /// as appears in attributes and some dialect ops.
    Scalar(ElementType),
    /// `index` (MLIR builtin).
    Index,
    /// A type oxla keeps as text only (for example a quantized type); ops on it are unsupported.
    Opaque(String),
}

impl Type {
    /// The tensor type, if this is a tensor.
    pub fn as_tensor(&self) -> Option<&TensorType> {
        match self {
            Type::Tensor(t) => Some(t),
            _ => None,
        }
    }
}

impl From<TensorType> for Type {
    fn from(t: TensorType) -> Type {
        Type::Tensor(t)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Tensor(t) => t.fmt(f),
            Type::Token => f.write_str("!stablehlo.token"),
            Type::Tuple(elems) => {
                f.write_str("tuple<")?;
                for (i, e) in elems.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    e.fmt(f)?;
                }
                f.write_str(">")
            }
            Type::Scalar(e) => e.fmt(f),
            Type::Index => f.write_str("index"),
            Type::Opaque(s) => f.write_str(s),
        }
    }
}

/// A function signature.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct FunctionType {
    /// Argument types.
    pub inputs: Vec<Type>,
    /// Result types.
    pub results: Vec<Type>,
}

#[cfg(test)]
mod tests {
    use super::ElementType;

    #[test]
    fn xla_primitive_type_numbers_round_trip() {
        let mut numbered = 0;
        for ty in ElementType::ALL {
            if let Some(code) = ty.xla_primitive_type() {
                numbered += 1;
                assert_eq!(ElementType::from_xla_primitive_type(code), Some(ty));
            }
        }
        assert_eq!(numbered, 23);
        assert_eq!(ElementType::F32.xla_primitive_type(), Some(11));
        assert_eq!(ElementType::BF16.xla_primitive_type(), Some(16));
        assert_eq!(ElementType::from_xla_primitive_type(13), None);
    }
}
