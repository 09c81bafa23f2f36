//! Decodes the attribute and type tables: the builtin dialect's encodings, VHLO's own
//! encodings, and the textual fallback, into oxla-ir attributes, locations and types.
//!
//! Entries are decoded on first use and memoised. Nesting is bounded by [`MAX_DEPTH`] and
//! reference cycles are detected, so hostile tables cannot overflow the stack or loop.

use super::reader::{error, Cursor, Result};
use super::sections::{Entry, Sections};
use bytes::Bytes;
use oxla_ir::attrs::{
    ComparisonDirection, ComparisonType, FftType, Precision, RngAlgorithm, RngDistribution,
    Transpose,
};
use oxla_ir::{Attribute, ElementType, ElementsAttr, FunctionType, Location, TensorType, Type};
use std::sync::Arc;

/// The deepest nesting of attributes/types followed before giving up.
const MAX_DEPTH: usize = 100;

/// A decoded type: a value type, or a function signature.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ty {
    /// A type an SSA value or tensor element can have.
    Value(Type),
    /// A function type.
    Function(FunctionType),
}

impl Ty {
    /// The value type; a function type becomes an opaque type.
    pub(crate) fn into_value(self) -> Type {
        match self {
            Ty::Value(t) => t,
            Ty::Function(f) => {
                Type::Opaque(format!("({}) -> ({})", join(&f.inputs), join(&f.results)))
            }
        }
    }
}

fn join(types: &[Type]) -> String {
    types
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A decoded attribute: a value attribute or a location.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Attr {
    /// An attribute value.
    Value(Attribute),
    /// A location.
    Loc(Location),
}

impl Attr {
    /// The attribute value; a location becomes an opaque attribute.
    pub(crate) fn into_value(self) -> Attribute {
        match self {
            Attr::Value(a) => a,
            Attr::Loc(l) => Attribute::Opaque(format!("loc({l})")),
        }
    }
}

enum Slot<T> {
    Unresolved,
    InProgress,
    Done(T),
}

/// Which decoder an entry's dialect uses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum DialectKind {
    Builtin,
    Vhlo,
    Sdy,
    Other,
}

/// The lazily decoded attribute and type tables of one file.
pub(crate) struct Tables<'s, 'a> {
    pub(crate) sections: &'s Sections<'a>,
    attrs: Vec<Slot<Attr>>,
    types: Vec<Slot<Ty>>,
    kinds: Vec<DialectKind>,
    depth: usize,
    /// Function types met inside type attributes, by the text of their opaque stand-in.
    function_types: Vec<(String, FunctionType)>,
    /// Attribute/type nodes handed out so far, bounded to stop sharing-based blowups.
    produced: usize,
    max_produced: usize,
}

impl<'s, 'a> Tables<'s, 'a> {
    /// Tables over the entries of `sections`.
    pub(crate) fn new(sections: &'s Sections<'a>, input_len: usize) -> Tables<'s, 'a> {
        let kinds = sections
            .dialects
            .iter()
            .map(|d| match d.name {
                "builtin" => DialectKind::Builtin,
                "vhlo" => DialectKind::Vhlo,
                "sdy" => DialectKind::Sdy,
                _ => DialectKind::Other,
            })
            .collect();
        Tables {
            sections,
            attrs: (0..sections.attrs.len())
                .map(|_| Slot::Unresolved)
                .collect(),
            types: (0..sections.types.len())
                .map(|_| Slot::Unresolved)
                .collect(),
            kinds,
            depth: 0,
            function_types: Vec::new(),
            produced: 0,
            max_produced: input_len.saturating_mul(64).saturating_add(1 << 16),
        }
    }

    /// The attribute with table index `index`; `at` is the offset of the reference.
    pub(crate) fn attr(&mut self, index: u64, at: usize) -> Result<Attr> {
        let i = usize::try_from(index)
            .ok()
            .filter(|&i| i < self.attrs.len())
            .ok_or_else(|| error(at, format!("invalid attribute index {index}")))?;
        match &self.attrs[i] {
            Slot::Done(a) => {
                let a = a.clone();
                self.charge(attr_weight(&a), at)?;
                return Ok(a);
            }
            Slot::InProgress => return Err(error(at, "cyclic attribute reference")),
            Slot::Unresolved => {}
        }
        if self.depth >= MAX_DEPTH {
            return Err(error(at, "attributes nested too deeply"));
        }
        self.attrs[i] = Slot::InProgress;
        self.depth += 1;
        let entry = self.sections.attrs[i];
        let res = self.decode_attr(entry);
        self.depth -= 1;
        match res {
            Ok(a) => {
                self.charge(attr_weight(&a), at)?;
                self.attrs[i] = Slot::Done(a.clone());
                Ok(a)
            }
            Err(e) => {
                self.attrs[i] = Slot::Unresolved;
                Err(e)
            }
        }
    }

    /// The type with table index `index`; `at` is the offset of the reference.
    pub(crate) fn ty(&mut self, index: u64, at: usize) -> Result<Ty> {
        let i = usize::try_from(index)
            .ok()
            .filter(|&i| i < self.types.len())
            .ok_or_else(|| error(at, format!("invalid type index {index}")))?;
        match &self.types[i] {
            Slot::Done(t) => {
                let t = t.clone();
                self.charge(ty_weight(&t), at)?;
                return Ok(t);
            }
            Slot::InProgress => return Err(error(at, "cyclic type reference")),
            Slot::Unresolved => {}
        }
        if self.depth >= MAX_DEPTH {
            return Err(error(at, "types nested too deeply"));
        }
        self.types[i] = Slot::InProgress;
        self.depth += 1;
        let entry = self.sections.types[i];
        let res = self.decode_type(entry);
        self.depth -= 1;
        match res {
            Ok(t) => {
                self.charge(ty_weight(&t), at)?;
                self.types[i] = Slot::Done(t.clone());
                Ok(t)
            }
            Err(e) => {
                self.types[i] = Slot::Unresolved;
                Err(e)
            }
        }
    }

    fn charge(&mut self, weight: usize, at: usize) -> Result<()> {
        self.produced = self.produced.saturating_add(weight);
        if self.produced > self.max_produced {
            return Err(error(
                at,
                "attributes and types expand beyond any plausible size",
            ));
        }
        Ok(())
    }

    /// The function type whose opaque stand-in is `text`, if one was decoded.
    pub(crate) fn function_type(&self, text: &str) -> Option<&FunctionType> {
        self.function_types
            .iter()
            .find(|(t, _)| t == text)
            .map(|(_, f)| f)
    }

    /// Turns a decoded type into a value type, remembering function types by their text.
    fn value_of(&mut self, ty: Ty) -> Type {
        if let Ty::Function(f) = &ty {
            let f = f.clone();
            let text = ty.into_value();
            if let Type::Opaque(s) = &text {
                if self.function_type(s).is_none() {
                    self.function_types.push((s.clone(), f));
                }
            }
            return text;
        }
        ty.into_value()
    }

    /// Reads an attribute reference from `cursor` and decodes it.
    pub(crate) fn read_attr(&mut self, cursor: &mut Cursor<'a>) -> Result<Attr> {
        let at = cursor.offset();
        let index = cursor.varint()?;
        self.attr(index, at)
    }

    /// Reads a type reference from `cursor` and decodes it.
    pub(crate) fn read_ty(&mut self, cursor: &mut Cursor<'a>) -> Result<Ty> {
        let at = cursor.offset();
        let index = cursor.varint()?;
        self.ty(index, at)
    }

    /// Reads a location reference.
    pub(crate) fn read_loc(&mut self, cursor: &mut Cursor<'a>) -> Result<Location> {
        let at = cursor.offset();
        match self.read_attr(cursor)? {
            Attr::Loc(l) => Ok(l),
            _ => Err(error(at, "expected a location attribute")),
        }
    }

    /// Reads an attribute reference and requires a value attribute.
    pub(crate) fn read_value_attr(&mut self, cursor: &mut Cursor<'a>) -> Result<Attribute> {
        Ok(self.read_attr(cursor)?.into_value())
    }

    /// Reads a reference to a string attribute and returns the string.
    pub(crate) fn read_string_attr(&mut self, cursor: &mut Cursor<'a>) -> Result<String> {
        let at = cursor.offset();
        match self.read_value_attr(cursor)? {
            Attribute::String(s) => Ok(s),
            other => Err(error(
                at,
                format!("expected a string attribute, got {other:?}"),
            )),
        }
    }

    fn read_value_ty(&mut self, cursor: &mut Cursor<'a>) -> Result<Type> {
        let ty = self.read_ty(cursor)?;
        Ok(self.value_of(ty))
    }

    fn read_types(&mut self, cursor: &mut Cursor<'a>) -> Result<Vec<Type>> {
        let n = cursor.count()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.read_value_ty(cursor)?);
        }
        Ok(out)
    }

    fn read_attrs(&mut self, cursor: &mut Cursor<'a>) -> Result<Vec<Attribute>> {
        let n = cursor.count()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.read_value_attr(cursor)?);
        }
        Ok(out)
    }

    fn decode_attr(&mut self, entry: Entry<'a>) -> Result<Attr> {
        let mut cursor = entry.data;
        if !entry.custom {
            let text = textual(&mut cursor)?;
            return Ok(Attr::Value(Attribute::Opaque(text)));
        }
        let attr = match self.kinds[entry.dialect] {
            DialectKind::Builtin => self.builtin_attr(&mut cursor)?,
            DialectKind::Vhlo => Attr::Value(self.vhlo_attr(&mut cursor)?),
            DialectKind::Sdy => match self.sdy_attr(&mut cursor)? {
                Some(attr) => attr,
                None => return Ok(Attr::Value(Attribute::Opaque("#sdy<...>".into()))),
            },
            DialectKind::Other => {
                // Another dialect's private encoding: keep a placeholder naming the dialect.
                let name = self.sections.dialects[entry.dialect].name;
                return Ok(Attr::Value(Attribute::Opaque(format!("#{name}<...>"))));
            }
        };
        if !cursor.is_empty() {
            return Err(cursor.err("trailing bytes after attribute"));
        }
        Ok(attr)
    }

    fn decode_type(&mut self, entry: Entry<'a>) -> Result<Ty> {
        let mut cursor = entry.data;
        if !entry.custom {
            let text = textual(&mut cursor)?;
            return Ok(Ty::Value(
                ElementType::from_name(&text)
                    .map(Type::Scalar)
                    .unwrap_or(Type::Opaque(text)),
            ));
        }
        let ty = match self.kinds[entry.dialect] {
            DialectKind::Builtin => self.builtin_type(&mut cursor)?,
            DialectKind::Vhlo => self.vhlo_type(&mut cursor)?,
            DialectKind::Sdy | DialectKind::Other => {
                let name = self.sections.dialects[entry.dialect].name;
                return Ok(Ty::Value(Type::Opaque(format!("!{name}<...>"))));
            }
        };
        if !cursor.is_empty() {
            return Err(cursor.err("trailing bytes after type"));
        }
        Ok(ty)
    }

    // ---------------------------------------------------------------- builtin dialect

    fn builtin_attr(&mut self, c: &mut Cursor<'a>) -> Result<Attr> {
        let at = c.offset();
        let code = c.varint()?;
        let value = match code {
            0 => Attribute::Array(self.read_attrs(c)?),
            1 => {
                let n = c.count()?;
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    let name = self.read_string_attr(c)?;
                    let value = self.read_value_attr(c)?;
                    entries.push((name, value));
                }
                Attribute::Dictionary(entries)
            }
            2 => self.sections.read_string_attribute(c)?,
            3 => {
                let s = self.sections.read_string(c)?.to_string();
                self.read_ty(c)?;
                Attribute::String(s)
            }
            4 => Attribute::SymbolRef(self.read_string_attr(c)?),
            5 => {
                let mut name = self.read_string_attr(c)?;
                let n = c.count()?;
                for _ in 0..n {
                    let nested_at = c.offset();
                    match self.read_value_attr(c)? {
                        Attribute::SymbolRef(s) => {
                            name.push_str("::");
                            name.push_str(&s);
                        }
                        _ => return Err(error(nested_at, "expected a flat symbol reference")),
                    }
                }
                Attribute::SymbolRef(name)
            }
            6 => Attribute::Type(self.read_value_ty(c)?),
            7 => Attribute::Unit,
            8 => {
                let ty = self.read_value_ty(c)?;
                integer_attr(c, &ty)?
            }
            9 => {
                let ty = self.read_value_ty(c)?;
                float_attr(c, &ty)?
            }
            10 => {
                let callee = self.read_loc(c)?;
                let caller = self.read_loc(c)?;
                return Ok(Attr::Loc(Location::CallSite {
                    callee: Arc::new(callee),
                    caller: Arc::new(caller),
                }));
            }
            11 => {
                let file = self.read_string_attr(c)?;
                let line = c.varint()?;
                let col = c.varint()?;
                return Ok(Attr::Loc(Location::FileLineCol {
                    file: file.into(),
                    line: u32::try_from(line).unwrap_or(u32::MAX),
                    col: u32::try_from(col).unwrap_or(u32::MAX),
                }));
            }
            12 | 13 => {
                let n = c.count()?;
                let mut locs = Vec::with_capacity(n);
                for _ in 0..n {
                    locs.push(self.read_loc(c)?);
                }
                if code == 13 {
                    self.read_attr(c)?;
                }
                return Ok(Attr::Loc(Location::Fused(locs.into())));
            }
            14 => {
                let name = self.read_string_attr(c)?;
                let child = self.read_loc(c)?;
                let child = (child != Location::Unknown).then(|| Arc::new(child));
                return Ok(Attr::Loc(Location::Name {
                    name: name.into(),
                    child,
                }));
            }
            15 => return Ok(Attr::Loc(Location::Unknown)),
            16 => {
                let ty = self.read_value_ty(c)?;
                let handle_at = c.offset();
                let handle = c.varint_usize()?;
                let (_, blob) =
                    self.sections.resources.get(handle).ok_or_else(|| {
                        error(handle_at, format!("invalid resource handle {handle}"))
                    })?;
                let tensor = tensor_type(&ty, at)?;
                match blob {
                    Some(data) => Attribute::Elements(elements(tensor, data, handle_at)?),
                    None => {
                        return Err(error(handle_at, "dense resource has no blob data"));
                    }
                }
            }
            17 => {
                let elem = self.read_value_ty(c)?;
                let size = c.varint()?;
                let data = c.blob()?;
                dense_array(&elem, size, data, at)?
            }
            18 => {
                let ty = self.read_value_ty(c)?;
                let data = c.blob()?;
                Attribute::Elements(elements(tensor_type(&ty, at)?, data, at)?)
            }
            19 => {
                let ty = self.read_value_ty(c)?;
                let is_splat = c.varint()? != 0;
                let n = if is_splat {
                    1
                } else {
                    tensor_type(&ty, at)?.num_elements().unwrap_or(0)
                };
                let mut strings = Vec::new();
                for _ in 0..n {
                    strings.push(Attribute::String(self.sections.read_string(c)?.to_string()));
                }
                Attribute::Array(strings)
            }
            21 => return self.read_attr(c),
            22 => {
                // FileLineColRange: a filename and up to four varints (start line first).
                let file = self.read_string_attr(c)?;
                let n = c.count()?;
                let mut parts = Vec::with_capacity(n.min(4));
                for _ in 0..n {
                    parts.push(c.varint()?);
                }
                let part = |i: usize| {
                    parts
                        .get(i)
                        .map_or(0, |&v| u32::try_from(v).unwrap_or(u32::MAX))
                };
                return Ok(Attr::Loc(Location::FileLineCol {
                    file: file.into(),
                    line: part(0),
                    col: part(1),
                }));
            }
            _ => {
                return Err(crate::FrontendError::Unsupported {
                    detail: format!("builtin attribute code {code} at byte {at}"),
                })
            }
        };
        Ok(Attr::Value(value))
    }

    fn builtin_type(&mut self, c: &mut Cursor<'a>) -> Result<Ty> {
        let at = c.offset();
        let code = c.varint()?;
        let ty = match code {
            0 => {
                let v = c.varint()?;
                let (width, signedness) = (v >> 2, v & 3);
                let elem = match (width, signedness) {
                    (1, _) => Some(ElementType::Pred),
                    (2, 2) => Some(ElementType::U2),
                    (4, 2) => Some(ElementType::U4),
                    (8, 2) => Some(ElementType::U8),
                    (16, 2) => Some(ElementType::U16),
                    (32, 2) => Some(ElementType::U32),
                    (64, 2) => Some(ElementType::U64),
                    (2, _) => Some(ElementType::S2),
                    (4, _) => Some(ElementType::S4),
                    (8, _) => Some(ElementType::S8),
                    (16, _) => Some(ElementType::S16),
                    (32, _) => Some(ElementType::S32),
                    (64, _) => Some(ElementType::S64),
                    _ => None,
                };
                match elem {
                    Some(e) => Type::Scalar(e),
                    None => Type::Opaque(format!("i{width}")),
                }
            }
            1 => Type::Index,
            2 => {
                let inputs = self.read_types(c)?;
                let results = self.read_types(c)?;
                return Ok(Ty::Function(FunctionType { inputs, results }));
            }
            3 => Type::Scalar(ElementType::BF16),
            4 => Type::Scalar(ElementType::F16),
            5 => Type::Scalar(ElementType::F32),
            6 => Type::Scalar(ElementType::F64),
            7 => Type::Opaque("f80".into()),
            8 => Type::Opaque("f128".into()),
            9 => complex_type(self.read_value_ty(c)?),
            12 => Type::Opaque("none".into()),
            13 | 14 => {
                if code == 14 {
                    self.read_attr(c)?;
                }
                let shape = read_shape(c)?;
                let elem = self.read_value_ty(c)?;
                ranked_tensor(shape, elem)
            }
            15 => Type::Tuple(self.read_types(c)?),
            18 => Type::Opaque(format!("tensor<*x{}>", self.read_value_ty(c)?)),
            _ => {
                return Err(crate::FrontendError::Unsupported {
                    detail: format!("builtin type code {code} at byte {at}"),
                })
            }
        };
        Ok(Ty::Value(ty))
    }

    // ---------------------------------------------------------------- VHLO dialect

    fn vhlo_attr(&mut self, c: &mut Cursor<'a>) -> Result<Attribute> {
        let at = c.offset();
        let code = c.varint()?;
        let enum_value = |c: &mut Cursor<'a>| -> Result<u64> { c.varint() };
        let bad_enum = |what: &str, v: u64| error(at, format!("invalid {what} value {v}"));
        Ok(match code {
            1 => Attribute::Array(self.read_attrs(c)?),
            2 => match c.varint()? {
                0 => Attribute::Bool(false),
                1 => Attribute::Bool(true),
                v => return Err(bad_enum("boolean", v)),
            },
            3 => Attribute::ComparisonDirection(match enum_value(c)? {
                0 => ComparisonDirection::Eq,
                1 => ComparisonDirection::Ne,
                2 => ComparisonDirection::Ge,
                3 => ComparisonDirection::Gt,
                4 => ComparisonDirection::Le,
                5 => ComparisonDirection::Lt,
                v => return Err(bad_enum("comparison direction", v)),
            }),
            4 => Attribute::ComparisonType(match enum_value(c)? {
                0 => ComparisonType::NotType,
                1 => ComparisonType::Float,
                2 => ComparisonType::TotalOrder,
                3 => ComparisonType::Signed,
                4 => ComparisonType::Unsigned,
                v => return Err(bad_enum("comparison type", v)),
            }),
            5 => match enum_value(c)? {
                v @ 0..=4 => Attribute::Integer {
                    value: i128::from(v),
                    ty: Some(ElementType::S32),
                },
                v => return Err(bad_enum("custom call api version", v)),
            },
            6 => {
                let n = c.count()?;
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    let name = self.read_string_attr(c)?;
                    let value = self.read_value_attr(c)?;
                    entries.push((name, value));
                }
                Attribute::Dictionary(entries)
            }
            7 => Attribute::FftType(match enum_value(c)? {
                0 => FftType::Fft,
                1 => FftType::Ifft,
                2 => FftType::Rfft,
                3 => FftType::Irfft,
                v => return Err(bad_enum("fft type", v)),
            }),
            8 => {
                let ty = self.read_value_ty(c)?;
                float_attr(c, &ty)?
            }
            9 => {
                let ty = self.read_value_ty(c)?;
                integer_attr(c, &ty)?
            }
            10 => {
                let output_tuple_indices = read_svarints(c)?;
                let operand_index = c.svarint()?;
                let operand_tuple_indices = read_svarints(c)?;
                Attribute::Dictionary(vec![
                    (
                        "output_tuple_indices".into(),
                        Attribute::DenseI64Array(output_tuple_indices),
                    ),
                    (
                        "operand_index".into(),
                        Attribute::Integer {
                            value: i128::from(operand_index),
                            ty: Some(ElementType::S64),
                        },
                    ),
                    (
                        "operand_tuple_indices".into(),
                        Attribute::DenseI64Array(operand_tuple_indices),
                    ),
                ])
            }
            11 => Attribute::Precision(match enum_value(c)? {
                0 => Precision::Default,
                1 => Precision::High,
                2 => Precision::Highest,
                v => return Err(bad_enum("precision", v)),
            }),
            12 => Attribute::RngAlgorithm(match enum_value(c)? {
                0 => RngAlgorithm::Default,
                1 => RngAlgorithm::ThreeFry,
                2 => RngAlgorithm::Philox,
                v => return Err(bad_enum("rng algorithm", v)),
            }),
            13 => Attribute::RngDistribution(match enum_value(c)? {
                1 => RngDistribution::Uniform,
                2 => RngDistribution::Normal,
                v => return Err(bad_enum("rng distribution", v)),
            }),
            14 => self.sections.read_string_attribute(c)?,
            15 => {
                let ty = self.read_value_ty(c)?;
                let data = c.blob()?;
                Attribute::Elements(elements(tensor_type(&ty, at)?, data, at)?)
            }
            16 => Attribute::Transpose(match enum_value(c)? {
                1 => Transpose::NoTranspose,
                2 => Transpose::Transpose,
                3 => Transpose::Adjoint,
                v => return Err(bad_enum("transpose", v)),
            }),
            17 => Attribute::Type(self.read_value_ty(c)?),
            18 => Attribute::Dictionary(vec![(
                "bounds".into(),
                Attribute::DenseI64Array(read_svarints(c)?),
            )]),
            19 => Attribute::String(
                match enum_value(c)? {
                    0 => "DEFAULT",
                    1 => "HIGHEST",
                    2 => "TOLERANCE",
                    v => return Err(bad_enum("result accuracy mode", v)),
                }
                .into(),
            ),
            20 => {
                let f64_attr = |c: &mut Cursor<'a>| -> Result<Attribute> {
                    float_attr(c, &Type::Scalar(ElementType::F64))
                };
                let atol = f64_attr(c)?;
                let rtol = f64_attr(c)?;
                let ulps = c.svarint()?;
                let mode = self.read_value_attr(c)?;
                Attribute::Dictionary(vec![
                    ("atol".into(), atol),
                    ("rtol".into(), rtol),
                    (
                        "ulps".into(),
                        Attribute::Integer {
                            value: i128::from(ulps),
                            ty: Some(ElementType::S64),
                        },
                    ),
                    ("mode".into(), mode),
                ])
            }
            _ => {
                return Err(crate::FrontendError::Unsupported {
                    detail: format!(
                        "VHLO attribute code {code} at byte {at} (written by a newer StableHLO?)"
                    ),
                })
            }
        })
    }

    fn vhlo_type(&mut self, c: &mut Cursor<'a>) -> Result<Ty> {
        use ElementType as E;
        let at = c.offset();
        let code = c.varint()?;
        let scalar = |e: ElementType| Ok(Ty::Value(Type::Scalar(e)));
        match code {
            0 => scalar(E::Pred),
            1 => Ok(Ty::Value(complex_type(self.read_value_ty(c)?))),
            2 => scalar(E::BF16),
            3 => scalar(E::F16),
            4 => scalar(E::F32),
            5 => scalar(E::F64),
            6 => scalar(E::F8E4M3FN),
            7 => scalar(E::F8E5M2),
            8 => {
                let inputs = self.read_types(c)?;
                let results = self.read_types(c)?;
                Ok(Ty::Function(FunctionType { inputs, results }))
            }
            9 => Ok(Ty::Value(Type::Index)),
            10 => scalar(E::S4),
            11 => scalar(E::S8),
            12 => scalar(E::S16),
            13 => scalar(E::S32),
            14 => scalar(E::S64),
            15 => scalar(E::U4),
            16 => scalar(E::U8),
            17 => scalar(E::U16),
            18 => scalar(E::U32),
            19 => scalar(E::U64),
            20 | 21 => {
                if code == 21 {
                    self.read_attr(c)?;
                }
                let shape = read_shape(c)?;
                let elem = self.read_value_ty(c)?;
                Ok(Ty::Value(ranked_tensor(shape, elem)))
            }
            22 => Ok(Ty::Value(Type::Token)),
            23 => Ok(Ty::Value(Type::Tuple(self.read_types(c)?))),
            24 => {
                // Uniform quantized: flags, storage type, expressed type, scale, zero point,
                // storage min, storage max.
                c.varint()?;
                let storage = self.read_value_ty(c)?;
                let expressed = self.read_value_ty(c)?;
                float_attr(c, &Type::Scalar(E::F64))?;
                c.svarint()?;
                c.svarint()?;
                c.svarint()?;
                Ok(Ty::Value(Type::Opaque(format!(
                    "!quant.uniform<{storage}:{expressed}>"
                ))))
            }
            25 => Ok(Ty::Value(Type::Opaque(format!(
                "tensor<*x{}>",
                self.read_value_ty(c)?
            )))),
            26 => Ok(Ty::Value(Type::Opaque("!shape.witness".into()))),
            27 => scalar(E::F8E4M3FNUZ),
            28 => scalar(E::F8E5M2FNUZ),
            29 => scalar(E::F8E4M3B11FNUZ),
            30 => {
                // Per-axis quantized: flags, storage, expressed, axis, min, max, scales, zero points.
                c.varint()?;
                let storage = self.read_value_ty(c)?;
                let expressed = self.read_value_ty(c)?;
                c.varint()?;
                c.svarint()?;
                c.svarint()?;
                let n_scales = c.count()?;
                for _ in 0..n_scales {
                    float_attr(c, &Type::Scalar(E::F64))?;
                }
                let n_zero_points = c.count()?;
                for _ in 0..n_zero_points {
                    c.svarint()?;
                }
                Ok(Ty::Value(Type::Opaque(format!(
                    "!quant.uniform<{storage}:{expressed}, per-axis>"
                ))))
            }
            31 => scalar(E::S2),
            32 => scalar(E::U2),
            33 => Ok(Ty::Value(Type::Opaque("none".into()))),
            34 => Ok(Ty::Value(Type::Opaque("tf32".into()))),
            35 => scalar(E::F8E4M3),
            36 => scalar(E::F8E3M4),
            37 => scalar(E::F4E2M1FN),
            38 => scalar(E::F6E2M3FN),
            39 => scalar(E::F6E3M2FN),
            40 => scalar(E::F8E8M0FNU),
            _ => Err(crate::FrontendError::Unsupported {
                detail: format!(
                    "VHLO type code {code} at byte {at} (written by a newer StableHLO?)"
                ),
            }),
        }
    }
}

/// The number of nodes in an attribute, for the expansion budget.
fn attr_weight(attr: &Attr) -> usize {
    fn value(a: &Attribute) -> usize {
        match a {
            Attribute::Array(items) => 1 + items.iter().map(value).sum::<usize>(),
            Attribute::Dictionary(entries) => {
                1 + entries.iter().map(|(_, v)| value(v)).sum::<usize>()
            }
            Attribute::DenseI64Array(v) => 1 + v.len() / 8,
            Attribute::DenseBoolArray(v) => 1 + v.len() / 8,
            Attribute::Type(t) => type_weight(t),
            _ => 1,
        }
    }
    fn loc(l: &Location) -> usize {
        match l {
            Location::Name { child: Some(c), .. } => 1 + loc(c),
            Location::CallSite { callee, caller } => 1 + loc(callee) + loc(caller),
            Location::Fused(ls) => 1 + ls.iter().map(loc).sum::<usize>(),
            _ => 1,
        }
    }
    match attr {
        Attr::Value(a) => value(a),
        Attr::Loc(l) => loc(l),
    }
}

fn type_weight(t: &Type) -> usize {
    match t {
        Type::Tuple(items) => 1 + items.iter().map(type_weight).sum::<usize>(),
        Type::Tensor(t) => 1 + t.shape.len() / 8,
        _ => 1,
    }
}

fn ty_weight(t: &Ty) -> usize {
    match t {
        Ty::Value(v) => type_weight(v),
        Ty::Function(f) => {
            1 + f.inputs.iter().map(type_weight).sum::<usize>()
                + f.results.iter().map(type_weight).sum::<usize>()
        }
    }
}

/// Reads the textual fallback of an attribute or type (a null-terminated string).
fn textual(cursor: &mut Cursor<'_>) -> Result<String> {
    let at = cursor.offset();
    let raw = cursor.null_terminated()?;
    let text = std::str::from_utf8(raw)
        .map_err(|_| error(at, "attribute/type text is not UTF-8"))?
        .to_string();
    if !cursor.is_empty() {
        return Err(cursor.err("trailing bytes after attribute/type text"));
    }
    Ok(text)
}

/// A list of zigzag-encoded integers: a count, then the values.
pub(crate) fn read_svarints(c: &mut Cursor<'_>) -> Result<Vec<i64>> {
    let n = c.count()?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(c.svarint()?);
    }
    Ok(out)
}

fn read_shape(c: &mut Cursor<'_>) -> Result<Vec<i64>> {
    read_svarints(c)
}

fn complex_type(part: Type) -> Type {
    match part {
        Type::Scalar(ElementType::F32) => Type::Scalar(ElementType::C64),
        Type::Scalar(ElementType::F64) => Type::Scalar(ElementType::C128),
        other => Type::Opaque(format!("complex<{other}>")),
    }
}

fn ranked_tensor(shape: Vec<i64>, elem: Type) -> Type {
    let element_type = match elem {
        Type::Scalar(e) => e,
        Type::Index => ElementType::S64,
        other => {
            let dims: String = shape
                .iter()
                .map(|&d| {
                    if d == oxla_ir::DYNAMIC {
                        "?x".to_string()
                    } else {
                        format!("{d}x")
                    }
                })
                .collect();
            return Type::Opaque(format!("tensor<{dims}{other}>"));
        }
    };
    Type::Tensor(TensorType::new(shape, element_type))
}

fn tensor_type(ty: &Type, at: usize) -> Result<TensorType> {
    match ty {
        Type::Tensor(t) => Ok(t.clone()),
        other => Err(error(
            at,
            format!("expected a ranked tensor type, got {other}"),
        )),
    }
}

/// The integer type's element type and bit width; `None` element type for `index`.
fn int_width(ty: &Type) -> Option<(Option<ElementType>, usize)> {
    match ty {
        Type::Index => Some((None, 64)),
        Type::Scalar(e) if e.is_pred() || e.is_int() => Some((Some(*e), e.bit_width())),
        _ => None,
    }
}

/// Reads an APInt of the width of `ty` and builds the integer (or bool) attribute.
fn integer_attr(c: &mut Cursor<'_>, ty: &Type) -> Result<Attribute> {
    let at = c.offset();
    let (elem, width) =
        int_width(ty).ok_or_else(|| error(at, format!("integer attribute of type {ty}")))?;
    let raw = read_apint(c, width)?;
    let value = match elem {
        Some(e) if e.is_unsigned_int() || e.is_pred() => i128::from(truncate(raw, width)),
        _ => i128::from(sign_extend(raw, width)),
    };
    if elem == Some(ElementType::Pred) {
        return Ok(Attribute::Bool(value != 0));
    }
    Ok(Attribute::Integer { value, ty: elem })
}

/// Reads an APInt of a known width as its low 64 bits.
fn read_apint(c: &mut Cursor<'_>, width: usize) -> Result<u64> {
    if width <= 8 {
        return Ok(u64::from(c.byte()?));
    }
    if width <= 64 {
        return Ok(c.svarint()? as u64);
    }
    let n_words = c.count()?;
    let mut low = 0;
    for i in 0..n_words {
        let word = c.svarint()? as u64;
        if i == 0 {
            low = word;
        }
    }
    Ok(low)
}

fn truncate(v: u64, width: usize) -> u64 {
    if width >= 64 {
        v
    } else {
        v & ((1u64 << width) - 1)
    }
}

fn sign_extend(v: u64, width: usize) -> i64 {
    if width >= 64 || width == 0 {
        v as i64
    } else {
        let shift = 64 - width;
        ((v << shift) as i64) >> shift
    }
}

/// Reads an APFloat of the semantics of `ty` and builds the float attribute.
fn float_attr(c: &mut Cursor<'_>, ty: &Type) -> Result<Attribute> {
    let at = c.offset();
    let elem = match ty {
        Type::Scalar(e) if e.is_float() => *e,
        other => return Err(error(at, format!("float attribute of type {other}"))),
    };
    let bits = truncate(read_apint(c, elem.bit_width())?, elem.bit_width());
    let value = match elem {
        ElementType::F64 => f64::from_bits(bits),
        ElementType::F32 => f64::from(f32::from_bits(bits as u32)),
        ElementType::BF16 => f64::from(f32::from_bits((bits as u32) << 16)),
        ElementType::F16 => f16_to_f64(bits as u16),
        other => return Ok(Attribute::Opaque(format!("{bits:#x} : {}", other.name()))),
    };
    Ok(Attribute::Float { value, ty: elem })
}

/// Converts IEEE half-precision bits to f64.
fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((bits >> 10) & 0x1F);
    let mant = f64::from(bits & 0x3FF);
    let magnitude = match exp {
        0 => mant * 2f64.powi(-24),
        31 if mant == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1.0 + mant / 1024.0) * 2f64.powi(exp - 15),
    };
    sign * magnitude
}

/// Converts an MLIR dense elements blob to oxla's dense layout.
///
/// MLIR stores one element per byte for sub-byte integers, and a splat as a single element.
/// `i1` data may be bit-packed (eight elements per byte, LSB first), a splat byte `0x00` or
/// `0xFF`, or one byte per element; all become one byte 0/1 per element. As in MLIR, a single
/// byte for several elements is a splat only when it is `0x00` or `0xFF`: any other byte
/// packs up to eight distinct elements (`[false, true]` is `0x02`).
pub(crate) fn elements(ty: TensorType, blob: &[u8], at: usize) -> Result<ElementsAttr> {
    let n = ty
        .num_elements()
        .ok_or_else(|| error(at, format!("dense elements of non-static type {ty}")))?;
    let elem_size = ty.element_type.byte_size();
    if ty.element_type.is_pred() {
        let packed = n.div_ceil(8);
        if blob.len() == 1 && n != 1 && (blob[0] == 0 || blob[0] == 0xFF) {
            return Ok(ElementsAttr {
                ty,
                data: Bytes::from(vec![u8::from(blob[0] != 0)]),
                splat: true,
            });
        }
        if blob.len() == packed && blob.len() != n {
            let data: Vec<u8> = (0..n).map(|i| (blob[i / 8] >> (i % 8)) & 1).collect();
            return Ok(ElementsAttr {
                ty,
                data: Bytes::from(data),
                splat: false,
            });
        }
        if blob.len() == n {
            let data: Vec<u8> = blob.iter().map(|&b| u8::from(b != 0)).collect();
            return Ok(ElementsAttr {
                ty,
                data: Bytes::from(data),
                splat: false,
            });
        }
        return Err(error(at, format!("{} bytes of data for {ty}", blob.len())));
    }
    let full = n
        .checked_mul(elem_size)
        .ok_or_else(|| error(at, format!("{ty} is too large")))?;
    if blob.len() == full {
        return Ok(ElementsAttr {
            ty,
            data: Bytes::copy_from_slice(blob),
            splat: false,
        });
    }
    if blob.len() == elem_size {
        return Ok(ElementsAttr {
            ty,
            data: Bytes::copy_from_slice(blob),
            splat: true,
        });
    }
    Err(error(
        at,
        format!("{} bytes of data for {ty}, expected {full}", blob.len()),
    ))
}

/// Builds the attribute of a builtin dense array (`array<i64: ...>` and friends).
fn dense_array(elem: &Type, size: u64, data: &[u8], at: usize) -> Result<Attribute> {
    let e = match elem {
        Type::Scalar(e) => *e,
        other => return Err(error(at, format!("dense array of {other}"))),
    };
    let size = usize::try_from(size).map_err(|_| error(at, "dense array too large"))?;
    let width = e.byte_size();
    if size.checked_mul(width) != Some(data.len()) {
        return Err(error(
            at,
            format!("dense array of {size} {e} has {} bytes", data.len()),
        ));
    }
    let chunks = data.chunks_exact(width);
    Ok(match e {
        ElementType::Pred => Attribute::DenseBoolArray(data.iter().map(|&b| b != 0).collect()),
        ElementType::S64 => Attribute::DenseI64Array(
            chunks
                .map(|ch| i64::from_le_bytes(ch.try_into().unwrap_or([0; 8])))
                .collect(),
        ),
        _ if e.is_int() => Attribute::Array(
            chunks
                .map(|ch| {
                    let mut le = [0u8; 8];
                    le[..width].copy_from_slice(ch);
                    let raw = u64::from_le_bytes(le);
                    let value = if e.is_unsigned_int() {
                        i128::from(raw)
                    } else {
                        i128::from(sign_extend(raw, width * 8))
                    };
                    Attribute::Integer { value, ty: Some(e) }
                })
                .collect(),
        ),
        ElementType::F32 => Attribute::Array(
            chunks
                .map(|ch| Attribute::Float {
                    value: f64::from(f32::from_le_bytes(ch.try_into().unwrap_or([0; 4]))),
                    ty: e,
                })
                .collect(),
        ),
        ElementType::F64 => Attribute::Array(
            chunks
                .map(|ch| Attribute::Float {
                    value: f64::from_le_bytes(ch.try_into().unwrap_or([0; 8])),
                    ty: e,
                })
                .collect(),
        ),
        _ => Attribute::Opaque(format!("array<{e}: {size} elements>")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_i1_unpacks_lsb_first() {
        let ty = TensorType::new([10], ElementType::Pred);
        let e = elements(ty, &[0b0000_0101, 0b10], 0).unwrap();
        assert!(!e.splat);
        assert_eq!(&e.data[..], &[1, 0, 1, 0, 0, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn one_packed_byte_of_a_few_elements_is_not_a_splat() {
        let ty = TensorType::new([2], ElementType::Pred);
        let e = elements(ty, &[0b10], 0).unwrap();
        assert!(!e.splat);
        assert_eq!(&e.data[..], &[0, 1]);
        let ty = TensorType::new([5], ElementType::Pred);
        let e = elements(ty, &[0b1_1111], 0).unwrap();
        assert!(!e.splat);
        assert_eq!(&e.data[..], &[1, 1, 1, 1, 1]);
        let ty = TensorType::new([3], ElementType::Pred);
        let e = elements(ty, &[0b001], 0).unwrap();
        assert_eq!(&e.data[..], &[1, 0, 0]);
    }

    #[test]
    fn i1_splat_forms() {
        let ty = TensorType::new([3, 3], ElementType::Pred);
        let e = elements(ty.clone(), &[0xFF], 0).unwrap();
        assert!(e.splat);
        assert_eq!(&e.data[..], &[1]);
        let e = elements(ty, &[0x00], 0).unwrap();
        assert!(e.splat);
        assert_eq!(&e.data[..], &[0]);
    }

    #[test]
    fn dense_splat_and_full() {
        let ty = TensorType::new([4], ElementType::F32);
        let e = elements(ty.clone(), &1.5f32.to_le_bytes(), 0).unwrap();
        assert!(e.splat);
        assert_eq!(e.to_dense_bytes().len(), 16);
        assert!(elements(ty, &[0; 7], 0).is_err());
    }

    #[test]
    fn half_precision_decodes() {
        assert_eq!(f16_to_f64(0x3C00), 1.0);
        assert_eq!(f16_to_f64(0xC000), -2.0);
        assert_eq!(f16_to_f64(0x0001), 2f64.powi(-24));
    }
}
