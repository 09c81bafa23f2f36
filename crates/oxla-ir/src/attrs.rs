//! Attributes: the compile-time data attached to ops, functions and modules.
//!
//! Structured StableHLO attributes (`#stablehlo.dot<...>`, `#stablehlo.gather<...>`,
//! `#stablehlo.conv<...>`, ...) are *flattened* into one named attribute per field,
//! using the field names of the StableHLO spec (as VHLO does): a `dot_general` op carries
//! `lhs_batching_dimensions`, `rhs_batching_dimensions`, `lhs_contracting_dimensions` and
//! `rhs_contracting_dimensions` as [`Attribute::DenseI64Array`]s.
//! The printer regroups them into StableHLO's pretty syntax.

use crate::types::{ElementType, TensorType, Type};
use bytes::Bytes;

/// A name and its attribute.
pub type NamedAttribute = (String, Attribute);

/// `comparison_direction` of `stablehlo.compare`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ComparisonDirection {
    Eq,
    Ne,
    Ge,
    Gt,
    Le,
    Lt,
}

/// `compare_type` of `stablehlo.compare`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ComparisonType {
    NotType,
    Float,
    TotalOrder,
    Signed,
    Unsigned,
}

/// One entry of `precision_config`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Precision {
    Default,
    High,
    Highest,
}

/// `fft_type` of `stablehlo.fft`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum FftType {
    Fft,
    Ifft,
    Rfft,
    Irfft,
}

/// `rng_algorithm` of `stablehlo.rng_bit_generator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum RngAlgorithm {
    Default,
    ThreeFry,
    Philox,
}

/// `rng_distribution` of `stablehlo.rng`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum RngDistribution {
    Uniform,
    Normal,
}

/// `transpose_a` of `stablehlo.triangular_solve`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Transpose {
    NoTranspose,
    Transpose,
    Adjoint,
}

/// Dense tensor data (`dense<...>` / `dense_resource<...>` / VHLO tensor attributes).
///
/// `data` holds the elements in oxla's dense host layout: row-major, little-endian,
/// [`ElementType::byte_size`] bytes per element (`i1` as one byte 0 or 1).
/// A splat holds exactly one element. The bytes are shared, never copied per element.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ElementsAttr {
    /// The tensor type of the attribute.
    pub ty: TensorType,
    /// The raw element bytes.
    pub data: Bytes,
    /// True when `data` holds a single element repeated over the whole shape.
    pub splat: bool,
}

impl ElementsAttr {
    /// Bytes of the full (non-splat) representation, expanding a splat.
    pub fn to_dense_bytes(&self) -> Vec<u8> {
        if self.splat {
            let n = self.ty.num_elements().unwrap_or(0);
            self.data.repeat(n)
        } else {
            self.data.to_vec()
        }
    }
}

/// An attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attribute {
    /// `unit`: present means true.
    Unit,
    /// `true` / `false`.
    Bool(bool),
    /// An integer of the given type (`i64`, `i32`, `ui32`, ... or `index`, given as [`None`]).
    Integer {
        /// The value, sign- or zero-extended.
        value: i128,
        /// The integer type; `None` for `index`.
        ty: Option<ElementType>,
    },
    /// A float of the given type.
    Float {
        /// The value.
        value: f64,
        /// The float type.
        ty: ElementType,
    },
    /// A string.
    String(String),
    /// A string attribute whose bytes are not UTF-8 (MLIR strings are bytes: JAX's
    /// `InspectSharding` call keeps a callback handle in its backend config).
    Bytes(Vec<u8>),
    /// A type.
    Type(Type),
    /// A heterogeneous array.
    Array(Vec<Attribute>),
    /// `array<i64: ...>`.
    DenseI64Array(Vec<i64>),
    /// `array<i1: ...>`.
    DenseBoolArray(Vec<bool>),
    /// Dense tensor data.
    Elements(ElementsAttr),
    /// A dictionary.
    Dictionary(Vec<NamedAttribute>),
    /// `@symbol` (nested references joined with `::`).
    SymbolRef(String),
    /// `comparison_direction`.
    ComparisonDirection(ComparisonDirection),
    /// `compare_type`.
    ComparisonType(ComparisonType),
    /// A precision value.
    Precision(Precision),
    /// `fft_type`.
    FftType(FftType),
    /// `rng_algorithm`.
    RngAlgorithm(RngAlgorithm),
    /// `rng_distribution`.
    RngDistribution(RngDistribution),
    /// `transpose_a`.
    Transpose(Transpose),
    /// An attribute oxla does not interpret, kept as its printed text
    /// (shardings, frontend attributes, dialect attributes of other dialects).
    Opaque(String),
}

impl Attribute {
    /// The integer value, if this is an integer or bool.
    pub fn as_int(&self) -> Option<i128> {
        match self {
            Attribute::Integer { value, .. } => Some(*value),
            Attribute::Bool(b) => Some(i128::from(*b)),
            _ => None,
        }
    }

    /// The i64 list, if this is a dense i64 array (or an array of integers, or i64 elements).
    pub fn as_i64_list(&self) -> Option<Vec<i64>> {
        match self {
            Attribute::DenseI64Array(v) => Some(v.clone()),
            Attribute::Array(items) => items
                .iter()
                .map(|a| a.as_int().and_then(|v| i64::try_from(v).ok()))
                .collect(),
            Attribute::Elements(e) if e.ty.element_type == ElementType::S64 => {
                let bytes = e.to_dense_bytes();
                Some(
                    bytes
                        .chunks_exact(8)
                        .map(|c| i64::from_le_bytes(c.try_into().expect("chunk of 8")))
                        .collect(),
                )
            }
            _ => None,
        }
    }

    /// The string, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Attribute::String(s) => Some(s),
            _ => None,
        }
    }
}

/// Looks up `name` in a list of named attributes.
pub fn find_attr<'a>(attrs: &'a [NamedAttribute], name: &str) -> Option<&'a Attribute> {
    attrs.iter().find(|(n, _)| n == name).map(|(_, a)| a)
}
