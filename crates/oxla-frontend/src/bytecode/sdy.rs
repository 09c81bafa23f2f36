//! Shardy's (`sdy`) attribute encodings, decoded into the text MLIR prints for them.
//!
//! A partitioned program names its device mesh (`sdy.mesh @mesh = <["x"=4]>`) and gives
//! arguments and results shardings (`#sdy.sharding<@mesh, [{"x"}, {}]>`). The bytecode
//! holds these in the dialect's own encoding (an attribute code, then the fields in order);
//! oxla keeps them as [`Attribute::Opaque`] text, the same form the text reader keeps, so
//! one parser downstream reads both. Encodings oxla has no use for (sharding rules, collective
//! parameters) become a placeholder naming the dialect.

use super::attrs_types::{read_svarints, Attr, Tables};
use super::reader::{Cursor, Result};
use oxla_ir::Attribute;

/// Attribute codes of the `sdy` dialect's bytecode, in its encoding order.
mod code {
    pub const MANUAL_AXES: u64 = 0;
    pub const MESH_AXIS: u64 = 1;
    pub const MESH: u64 = 2;
    pub const SUB_AXIS_INFO: u64 = 3;
    pub const AXIS_REF: u64 = 4;
    pub const DIMENSION_SHARDING: u64 = 5;
    pub const TENSOR_SHARDING_V1: u64 = 6;
    pub const PER_VALUE_V1: u64 = 7;
    pub const AXIS_REF_LIST: u64 = 11;
    pub const TENSOR_SHARDING_V2: u64 = 15;
    pub const PER_VALUE_V2: u64 = 16;
    pub const TENSOR_SHARDING_V3: u64 = 17;
}

/// Prefixes marking which piece of sharding syntax a decoded nested attribute holds; the
/// pieces nest inside larger attributes and are only printed there.
const MESH_PREFIX: &str = "#sdy.mesh";
const SHARDING_PREFIX: &str = "#sdy.sharding";

impl<'s, 'a> Tables<'s, 'a> {
    /// Decodes one `sdy` attribute entry. Returns `None` for encodings oxla does not read
    /// (the caller keeps a placeholder and does not check for trailing bytes).
    pub(crate) fn sdy_attr(&mut self, c: &mut Cursor<'a>) -> Result<Option<Attr>> {
        let at = c.offset();
        let text = match c.varint()? {
            code::MANUAL_AXES => {
                let n = c.count()?;
                let mut names = Vec::with_capacity(n);
                for _ in 0..n {
                    names.push(quoted(&self.read_string_attr(c)?));
                }
                format!("#sdy<manual_axes{{{}}}>", names.join(", "))
            }
            code::MESH_AXIS => {
                let name = self.sections.read_string(c)?;
                let size = c.svarint()?;
                format!("{}={size}", quoted(name))
            }
            code::MESH => {
                let axes = self.sdy_list(c)?;
                let devices = read_svarints(c)?;
                let mut text = format!("{MESH_PREFIX}<[{}]", axes.join(", "));
                if !devices.is_empty() {
                    let ids: Vec<String> = devices.iter().map(i64::to_string).collect();
                    text.push_str(&format!(", device_ids=[{}]", ids.join(",")));
                }
                text.push('>');
                text
            }
            code::SUB_AXIS_INFO => {
                let pre_size = c.svarint()?;
                let size = c.svarint()?;
                format!("({pre_size}){size}")
            }
            code::AXIS_REF => {
                let name = self.sections.read_string(c)?;
                let (index, present) = c.varint_flag()?;
                let mut text = quoted(name);
                if present {
                    let sub = self.sdy_nested(index, c.offset())?;
                    text.push(':');
                    text.push_str(&sub);
                }
                text
            }
            code::DIMENSION_SHARDING => {
                let mut axes = self.sdy_list(c)?;
                let closed = c.byte()? != 0;
                let (priority, has_priority) = c.varint_flag()?;
                if !closed {
                    axes.push("?".into());
                }
                let mut text = format!("{{{}}}", axes.join(", "));
                if has_priority {
                    text.push_str(&format!("p{priority}"));
                }
                text
            }
            kind @ (code::TENSOR_SHARDING_V1
            | code::TENSOR_SHARDING_V2
            | code::TENSOR_SHARDING_V3) => {
                let mesh = match self.read_value_attr(c)? {
                    Attribute::SymbolRef(name) => format!("@{name}"),
                    Attribute::Opaque(text) if text.starts_with(MESH_PREFIX) => {
                        format!("mesh{}", &text[MESH_PREFIX.len()..])
                    }
                    other => return Err(c.err(format!("an sdy sharding's mesh is {other:?}"))),
                };
                let dims = self.sdy_list(c)?;
                let replicated = self.sdy_list(c)?;
                let unreduced = if kind == code::TENSOR_SHARDING_V1 {
                    Vec::new()
                } else {
                    self.sdy_list(c)?
                };
                let reduction = if kind == code::TENSOR_SHARDING_V3 {
                    Some(c.svarint()?)
                } else {
                    None
                };
                let mut text = format!("{SHARDING_PREFIX}<{mesh}, [{}]", dims.join(", "));
                if !replicated.is_empty() {
                    text.push_str(&format!(", replicated={{{}}}", replicated.join(", ")));
                }
                if !unreduced.is_empty() {
                    text.push_str(&format!(", unreduced={{{}}}", unreduced.join(", ")));
                }
                if let Some(op) = reduction {
                    text.push_str(&format!(", reduction={op}"));
                }
                text.push('>');
                text
            }
            code::PER_VALUE_V1 | code::PER_VALUE_V2 => {
                let shardings = self.sdy_list(c)?;
                let inner: Vec<&str> = shardings
                    .iter()
                    .map(|s| s.strip_prefix(SHARDING_PREFIX).unwrap_or(s))
                    .collect();
                format!("#sdy.sharding_per_value<[{}]>", inner.join(", "))
            }
            code::AXIS_REF_LIST => {
                let axes = self.sdy_list(c)?;
                format!("{{{}}}", axes.join(", "))
            }
            _ => {
                let _ = at;
                return Ok(None);
            }
        };
        Ok(Some(Attr::Value(Attribute::Opaque(text))))
    }

    /// A list of references to `sdy` attributes, as their texts.
    fn sdy_list(&mut self, c: &mut Cursor<'a>) -> Result<Vec<String>> {
        let n = c.count()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let at = c.offset();
            let index = c.varint()?;
            out.push(self.sdy_nested(index, at)?);
        }
        Ok(out)
    }

    /// The text of the `sdy` attribute with table index `index`.
    fn sdy_nested(&mut self, index: u64, at: usize) -> Result<String> {
        match self.attr(index, at)? {
            Attr::Value(Attribute::Opaque(text)) => Ok(text),
            other => Err(super::reader::error(
                at,
                format!("expected an sdy attribute, found {other:?}"),
            )),
        }
    }
}

/// `name` as an MLIR string literal.
fn quoted(name: &str) -> String {
    format!("{name:?}")
}

/// The mesh text of an `sdy.mesh` op's `mesh` attribute, as a declaration prints it
/// (`<["x"=4]>`), or `None` if `attr` is not a decoded mesh.
pub(crate) fn mesh_body(attr: &Attribute) -> Option<&str> {
    match attr {
        Attribute::Opaque(text) => text.strip_prefix(MESH_PREFIX),
        _ => None,
    }
}
