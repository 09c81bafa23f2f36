//! Decodes the IR section into a generic op tree: op names, locations, attributes (from the
//! attribute dictionary and from native properties), result types, operands, and regions.
//!
//! Values get file-wide numbers here (forward references included); the VHLO mapping later
//! turns them into per-function arenas. Region nesting is bounded by [`MAX_REGION_DEPTH`],
//! and the number of value slots by the input size, so hostile input cannot exhaust memory.

use super::attrs_types::Tables;
use super::reader::{error, Cursor, Result};
use super::sections::{version, Sections};
use oxla_ir::{Attribute, Location, NamedAttribute, Type};

/// The deepest nesting of regions accepted.
pub(crate) const MAX_REGION_DEPTH: usize = 64;

/// Op encoding mask bits.
mod mask {
    pub const HAS_ATTRS: u8 = 0x01;
    pub const HAS_RESULTS: u8 = 0x02;
    pub const HAS_OPERANDS: u8 = 0x04;
    pub const HAS_SUCCESSORS: u8 = 0x08;
    pub const HAS_INLINE_REGIONS: u8 = 0x10;
    pub const HAS_USE_LIST_ORDERS: u8 = 0x20;
    pub const HAS_PROPERTIES: u8 = 0x40;
}

/// A file-wide value number.
pub(crate) type ValueNum = u32;

/// Raw native properties of a registered op, decoded later by op-specific knowledge.
#[derive(Clone, Debug)]
pub(crate) enum Properties<'a> {
    /// None present.
    None,
    /// An op-specific encoding.
    Native(Cursor<'a>),
}

/// One op of the generic tree.
#[derive(Debug)]
pub(crate) struct GenericOp<'a> {
    /// Index into the op-name table.
    pub name: usize,
    /// Where it came from.
    pub location: Location,
    /// Attributes from the attribute dictionary (and from properties of unregistered ops).
    pub attributes: Vec<NamedAttribute>,
    /// Native properties, still encoded.
    pub properties: Properties<'a>,
    /// File offset of the op, for messages.
    pub offset: usize,
    /// Operands.
    pub operands: Vec<ValueNum>,
    /// Results.
    pub results: Vec<ValueNum>,
    /// Regions.
    pub regions: Vec<GenericRegion<'a>>,
}

/// A region: blocks of arguments and ops.
#[derive(Debug, Default)]
pub(crate) struct GenericRegion<'a> {
    /// The blocks.
    pub blocks: Vec<GenericBlock<'a>>,
}

/// A block.
#[derive(Debug, Default)]
pub(crate) struct GenericBlock<'a> {
    /// Block arguments.
    pub arguments: Vec<ValueNum>,
    /// Ops.
    pub ops: Vec<GenericOp<'a>>,
}

/// Value slots of one isolated-from-above scope.
#[derive(Default)]
struct Scope {
    slots: Vec<Option<ValueNum>>,
    next: Vec<usize>,
}

/// Reads the IR section of a file.
pub(crate) struct IrReader<'s, 't, 'a> {
    sections: &'s Sections<'a>,
    tables: &'t mut Tables<'s, 'a>,
    /// Types of every value, by number (`None` while only forward-referenced).
    pub value_types: Vec<Option<Type>>,
    scopes: Vec<Scope>,
    total_slots: usize,
    max_slots: usize,
}

impl<'s, 't, 'a> IrReader<'s, 't, 'a> {
    /// A reader over `sections`, resolving attributes and types through `tables`.
    pub(crate) fn new(
        sections: &'s Sections<'a>,
        tables: &'t mut Tables<'s, 'a>,
        input_len: usize,
    ) -> IrReader<'s, 't, 'a> {
        IrReader {
            sections,
            tables,
            value_types: Vec::new(),
            scopes: Vec::new(),
            total_slots: 0,
            max_slots: input_len.saturating_mul(2).saturating_add(16),
        }
    }

    /// Reads the top-level block of the IR section.
    pub(crate) fn read_top_level(&mut self) -> Result<Vec<GenericOp<'a>>> {
        let mut cursor = self.sections.ir;
        self.scopes.push(Scope::default());
        self.push_region_values(0, &cursor)?;
        let block = self.read_block(&mut cursor, false, 0)?;
        self.pop_region_values(0);
        self.scopes.pop();
        if !cursor.is_empty() {
            return Err(cursor.err("trailing data in the IR section"));
        }
        if let Some(n) = self.value_types.iter().position(Option::is_none) {
            return Err(error(
                self.sections.ir.base(),
                format!("value #{n} is used but never defined"),
            ));
        }
        Ok(block.ops)
    }

    fn scope(&mut self) -> &mut Scope {
        // A scope is pushed before any region is read; `read_top_level` guarantees it.
        if self.scopes.is_empty() {
            self.scopes.push(Scope::default());
        }
        let last = self.scopes.len() - 1;
        &mut self.scopes[last]
    }

    fn push_region_values(&mut self, n_values: usize, cursor: &Cursor<'a>) -> Result<()> {
        self.total_slots = self.total_slots.saturating_add(n_values);
        if self.total_slots > self.max_slots || n_values > cursor.remaining() + 1 {
            return Err(cursor.err(format!("region declares too many values ({n_values})")));
        }
        let scope = self.scope();
        scope.next.push(scope.slots.len());
        scope.slots.resize(scope.slots.len() + n_values, None);
        Ok(())
    }

    fn pop_region_values(&mut self, n_values: usize) {
        self.total_slots -= n_values;
        let scope = self.scope();
        let len = scope.slots.len().saturating_sub(n_values);
        scope.slots.truncate(len);
        scope.next.pop();
    }

    /// Defines `types.len()` new values in the current region, in order.
    fn define_values(&mut self, types: Vec<Type>, at: usize) -> Result<Vec<ValueNum>> {
        let n_values = self.value_types.len();
        let scope_index = self.scopes.len().saturating_sub(1);
        let scope = self
            .scopes
            .get_mut(scope_index)
            .ok_or_else(|| error(at, "value defined outside any region"))?;
        let next = scope
            .next
            .last_mut()
            .ok_or_else(|| error(at, "value defined outside any region"))?;
        let start = *next;
        let end = start + types.len();
        if end > scope.slots.len() {
            return Err(error(
                at,
                format!(
                    "value numbers {start}..{end} exceed the {} reserved in the region",
                    scope.slots.len()
                ),
            ));
        }
        *next = end;
        let mut out = Vec::with_capacity(types.len());
        let mut fresh = n_values;
        let mut new_types = Vec::new();
        for (slot, ty) in scope.slots[start..end].iter_mut().zip(types) {
            match *slot {
                Some(num) => {
                    // A forward reference now gets its definition.
                    let entry = &mut self.value_types[num as usize];
                    if entry.is_some() {
                        return Err(error(at, "value defined twice"));
                    }
                    *entry = Some(ty);
                    out.push(num);
                }
                None => {
                    let num =
                        ValueNum::try_from(fresh).map_err(|_| error(at, "too many values"))?;
                    fresh += 1;
                    *slot = Some(num);
                    new_types.push(Some(ty));
                    out.push(num);
                }
            }
        }
        self.value_types.extend(new_types);
        Ok(out)
    }

    fn read_operand(&mut self, cursor: &mut Cursor<'a>) -> Result<ValueNum> {
        let at = cursor.offset();
        let index = cursor.varint()?;
        let next_num = self.value_types.len();
        let scope = self.scope();
        let slot = usize::try_from(index)
            .ok()
            .and_then(|i| scope.slots.get_mut(i))
            .ok_or_else(|| error(at, format!("invalid value index {index}")))?;
        if let Some(num) = *slot {
            return Ok(num);
        }
        let num = ValueNum::try_from(next_num).map_err(|_| error(at, "too many values"))?;
        *slot = Some(num);
        self.value_types.push(None);
        Ok(num)
    }

    fn skip_use_list_orders(&mut self, cursor: &mut Cursor<'a>, n_values: usize) -> Result<()> {
        let n_entries = if n_values > 1 { cursor.varint()? } else { 1 };
        for _ in 0..n_entries {
            if n_values > 1 {
                cursor.varint()?;
            }
            let (n_indices, _) = cursor.varint_flag()?;
            for _ in 0..n_indices {
                cursor.varint()?;
            }
        }
        Ok(())
    }

    fn read_block(
        &mut self,
        cursor: &mut Cursor<'a>,
        defines_values: bool,
        depth: usize,
    ) -> Result<GenericBlock<'a>> {
        let (n_ops, has_args) = cursor.varint_flag()?;
        let mut block = GenericBlock::default();
        if has_args {
            let at = cursor.offset();
            let n_args = cursor.count()?;
            let mut types = Vec::with_capacity(n_args);
            for _ in 0..n_args {
                if self.sections.version >= version::ELIDE_UNKNOWN_BLOCK_ARG_LOCATION {
                    let ty_at = cursor.offset();
                    let (ty_index, has_loc) = cursor.varint_flag()?;
                    types.push(self.tables.ty(ty_index, ty_at)?.into_value());
                    if has_loc {
                        self.tables.read_loc(cursor)?;
                    }
                } else {
                    types.push(self.tables.read_ty(cursor)?.into_value());
                    self.tables.read_loc(cursor)?;
                }
            }
            block.arguments = self.define_values(types, at)?;
            if self.sections.version >= version::USE_LIST_ORDERING && cursor.byte()? != 0 {
                self.skip_use_list_orders(cursor, n_args)?;
            }
        }
        for _ in 0..n_ops {
            let op = self.read_op(cursor, defines_values, depth)?;
            block.ops.push(op);
        }
        Ok(block)
    }

    fn read_op(
        &mut self,
        cursor: &mut Cursor<'a>,
        defines_values: bool,
        depth: usize,
    ) -> Result<GenericOp<'a>> {
        let offset = cursor.offset();
        let name = cursor.varint_usize()?;
        let op_name = self
            .sections
            .op_names
            .get(name)
            .ok_or_else(|| error(offset, format!("invalid op name index {name}")))?;
        let op_mask = cursor.byte()?;
        let location = self.tables.read_loc(cursor)?;
        let mut attributes = Vec::new();
        if op_mask & mask::HAS_ATTRS != 0 {
            let at = cursor.offset();
            match self.tables.read_value_attr(cursor)? {
                Attribute::Dictionary(entries) => attributes = entries,
                _ => return Err(error(at, "op attributes are not a dictionary")),
            }
        }
        let mut properties = Properties::None;
        if op_mask & mask::HAS_PROPERTIES != 0 {
            let at = cursor.offset();
            match op_name.was_registered {
                None => return Err(error(at, "op properties in bytecode that cannot have them")),
                Some(true) => {
                    let index = cursor.varint_usize()?;
                    let entry =
                        self.sections.properties.get(index).ok_or_else(|| {
                            error(at, format!("invalid properties index {index}"))
                        })?;
                    properties = Properties::Native(*entry);
                }
                Some(false) => {
                    if let Attribute::Dictionary(entries) = self.tables.read_value_attr(cursor)? {
                        attributes.extend(entries);
                    }
                }
            }
        }
        let mut result_types = Vec::new();
        if op_mask & mask::HAS_RESULTS != 0 {
            let n_results = cursor.count()?;
            result_types.reserve(n_results);
            for _ in 0..n_results {
                result_types.push(self.tables.read_ty(cursor)?.into_value());
            }
        }
        let mut operands = Vec::new();
        if op_mask & mask::HAS_OPERANDS != 0 {
            let n_operands = cursor.count()?;
            operands.reserve(n_operands);
            for _ in 0..n_operands {
                operands.push(self.read_operand(cursor)?);
            }
        }
        if op_mask & mask::HAS_SUCCESSORS != 0 {
            let n_successors = cursor.count()?;
            for _ in 0..n_successors {
                cursor.varint()?;
            }
        }
        if self.sections.version >= version::USE_LIST_ORDERING
            && op_mask & mask::HAS_USE_LIST_ORDERS != 0
        {
            self.skip_use_list_orders(cursor, result_types.len())?;
        }
        let (n_regions, isolated) = if op_mask & mask::HAS_INLINE_REGIONS != 0 {
            cursor.varint_flag()?
        } else {
            (0, false)
        };
        let results = if defines_values && !result_types.is_empty() {
            self.define_values(result_types, offset)?
        } else {
            // MLIR numbers no results in a region that declares no values; such results
            // cannot be used, but still get numbers so that ops keep their arity.
            let start = self.value_types.len();
            self.value_types.extend(result_types.into_iter().map(Some));
            (start..self.value_types.len())
                .map(|n| ValueNum::try_from(n).map_err(|_| error(offset, "too many values")))
                .collect::<Result<_>>()?
        };
        let mut regions = Vec::new();
        if n_regions > 0 {
            if depth >= MAX_REGION_DEPTH {
                return Err(error(offset, "regions nested too deeply"));
            }
            if n_regions > cursor.remaining() as u64 {
                return Err(error(offset, format!("op declares {n_regions} regions")));
            }
            if isolated {
                self.scopes.push(Scope::default());
            }
            let res = if isolated && self.sections.version >= version::LAZY_LOADING {
                let at = cursor.offset();
                let (id, mut section) = cursor.section()?;
                if id != super::sections::section_id::IR {
                    return Err(error(at, "expected an IR section for an isolated region"));
                }
                let res = self.read_regions(&mut section, n_regions, depth + 1);
                if res.is_ok() && !section.is_empty() {
                    Err(section.err("trailing data after isolated regions"))
                } else {
                    res
                }
            } else {
                self.read_regions(cursor, n_regions, depth + 1)
            };
            if isolated {
                self.scopes.pop();
            }
            regions = res?;
        }
        Ok(GenericOp {
            name,
            location,
            attributes,
            properties,
            offset,
            operands,
            results,
            regions,
        })
    }

    fn read_regions(
        &mut self,
        cursor: &mut Cursor<'a>,
        n_regions: u64,
        depth: usize,
    ) -> Result<Vec<GenericRegion<'a>>> {
        let mut regions = Vec::new();
        for _ in 0..n_regions {
            let at = cursor.offset();
            let n_blocks = cursor.count()?;
            if n_blocks == 0 {
                regions.push(GenericRegion::default());
                continue;
            }
            let n_values = cursor.varint_usize()?;
            self.push_region_values(n_values, cursor)
                .map_err(|e| match e {
                    crate::FrontendError::Bytecode { detail, .. } => error(at, detail),
                    other => other,
                })?;
            let mut region = GenericRegion::default();
            let mut res = Ok(());
            for _ in 0..n_blocks {
                match self.read_block(cursor, n_values > 0, depth) {
                    Ok(block) => region.blocks.push(block),
                    Err(e) => {
                        res = Err(e);
                        break;
                    }
                }
            }
            self.pop_region_values(n_values);
            res?;
            regions.push(region);
        }
        Ok(regions)
    }
}
