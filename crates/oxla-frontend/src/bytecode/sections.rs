//! The file structure of MLIR bytecode: header, top-level sections, the string table, the
//! dialect and op-name tables, the attribute/type offset table, resources and properties.
//!
//! This module only slices the file; it decodes no attribute, type or op.

use super::reader::{error, Cursor, Result};
use oxla_ir::Attribute;

/// Section ids (`mlir/Bytecode/Encoding.h`).
pub(crate) mod section_id {
    pub const STRING: u8 = 0;
    pub const DIALECT: u8 = 1;
    pub const ATTR_TYPE: u8 = 2;
    pub const ATTR_TYPE_OFFSET: u8 = 3;
    pub const IR: u8 = 4;
    pub const RESOURCE: u8 = 5;
    pub const RESOURCE_OFFSET: u8 = 6;
    pub const DIALECT_VERSIONS: u8 = 7;
    pub const PROPERTIES: u8 = 8;
    pub const COUNT: usize = 9;
}

/// Bytecode format versions at which the encoding changed.
pub(crate) mod version {
    pub const DIALECT_VERSIONING: u64 = 1;
    pub const LAZY_LOADING: u64 = 2;
    pub const USE_LIST_ORDERING: u64 = 3;
    pub const ELIDE_UNKNOWN_BLOCK_ARG_LOCATION: u64 = 4;
    pub const NATIVE_PROPERTIES_ENCODING: u64 = 5;
    /// The newest bytecode version this reader knows.
    pub const MAX_SUPPORTED: u64 = 6;
}

/// One dialect of the dialect table.
#[derive(Debug)]
pub(crate) struct Dialect<'a> {
    /// The dialect's namespace (`vhlo`, `builtin`, `func`).
    pub name: &'a str,
    /// The dialect's encoded version, if any (VHLO writes its version here).
    #[allow(dead_code)]
    pub version: Option<Cursor<'a>>,
}

/// One op name of the op-name table.
#[derive(Debug)]
pub(crate) struct OpName {
    /// The full name (`vhlo.add_v1`).
    pub full_name: String,
    /// Whether the op was registered when written (`None` before native properties).
    pub was_registered: Option<bool>,
}

/// One entry of the attribute or type table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry<'a> {
    /// Index of the owning dialect.
    pub dialect: usize,
    /// True for a dialect-specific encoding, false for the textual assembly fallback.
    pub custom: bool,
    /// The encoded bytes.
    pub data: Cursor<'a>,
}

/// Dialect resources in handle order: key and blob (`None` when the entry holds no blob).
pub(crate) type Resources<'a> = Vec<(String, Option<&'a [u8]>)>;

/// The decoded table of contents of a bytecode file.
pub(crate) struct Sections<'a> {
    /// Bytecode format version.
    pub version: u64,
    /// The producer string (`StableHLO_v1.17.0`).
    #[allow(dead_code)]
    pub producer: String,
    /// The string table ([`NOT_UTF8`] for a string that is not UTF-8).
    pub strings: Vec<&'a str>,
    /// The string table as bytes.
    pub raw_strings: Vec<&'a [u8]>,
    /// The dialect table.
    pub dialects: Vec<Dialect<'a>>,
    /// The op-name table.
    pub op_names: Vec<OpName>,
    /// Attribute entries.
    pub attrs: Vec<Entry<'a>>,
    /// Type entries.
    pub types: Vec<Entry<'a>>,
    /// Dialect resource blobs by handle index (`None` when the entry holds no blob).
    pub resources: Resources<'a>,
    /// Properties entries, each an encoded blob.
    pub properties: Vec<Cursor<'a>>,
    /// The IR section.
    pub ir: Cursor<'a>,
}

impl<'a> Sections<'a> {
    /// Splits `bytes` (a whole file, magic included) into its sections.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<Sections<'a>> {
        let mut file = Cursor::new(bytes, 0);
        let magic = file.bytes(4)?;
        if magic != super::MAGIC {
            return Err(error(0, "missing MLIR bytecode magic number"));
        }
        let version_at = file.offset();
        let version = file.varint()?;
        if version > version::MAX_SUPPORTED {
            return Err(crate::FrontendError::Unsupported {
                detail: format!(
                    "MLIR bytecode version {version} (at byte {version_at}) is newer than the newest supported, {}",
                    version::MAX_SUPPORTED
                ),
            });
        }
        let producer_at = file.offset();
        let producer = std::str::from_utf8(file.null_terminated()?)
            .map_err(|_| error(producer_at, "producer string is not UTF-8"))?
            .to_string();

        let mut found: [Option<Cursor<'a>>; section_id::COUNT] = [None; section_id::COUNT];
        while !file.is_empty() {
            let at = file.offset();
            let (id, data) = file.section()?;
            let slot = found
                .get_mut(usize::from(id))
                .ok_or_else(|| error(at, format!("invalid section id {id}")))?;
            if slot.is_some() {
                return Err(error(at, format!("duplicate section {id}")));
            }
            *slot = Some(data);
        }
        let required = |id: u8| {
            found[usize::from(id)]
                .ok_or_else(|| error(bytes.len(), format!("missing required section {id}")))
        };
        let raw_strings = parse_strings(required(section_id::STRING)?)?;
        // MLIR strings are bytes: a string attribute may hold binary data (JAX's
        // `InspectSharding` call keeps a callback handle in its backend config). Such a
        // string reads as a marker where a name is expected, and as bytes where it is an
        // attribute's value (`read_string_attribute`).
        let strings: Vec<&str> = raw_strings
            .iter()
            .map(|&raw| std::str::from_utf8(raw).unwrap_or(NOT_UTF8))
            .collect();
        let (dialects, op_names) =
            parse_dialects(required(section_id::DIALECT)?, version, &strings)?;
        let (attrs, types) = parse_attr_type_offsets(
            required(section_id::ATTR_TYPE)?,
            required(section_id::ATTR_TYPE_OFFSET)?,
            dialects.len(),
        )?;
        let resources = match (
            found[usize::from(section_id::RESOURCE)],
            found[usize::from(section_id::RESOURCE_OFFSET)],
        ) {
            (Some(data), Some(offsets)) => parse_resources(data, offsets, &strings, &dialects)?,
            (None, None) => Vec::new(),
            (Some(data), None) => {
                return Err(error(data.base(), "resource section without offsets"))
            }
            (None, Some(offsets)) => {
                return Err(error(offsets.base(), "resource offsets without resources"))
            }
        };
        let properties = match found[usize::from(section_id::PROPERTIES)] {
            Some(data) => parse_properties(data)?,
            None => Vec::new(),
        };
        Ok(Sections {
            version,
            producer,
            strings,
            raw_strings,
            dialects,
            op_names,
            attrs,
            types,
            resources,
            properties,
            ir: required(section_id::IR)?,
        })
    }

    /// The string with the given index.
    pub(crate) fn string(&self, index: u64, at: usize) -> Result<&'a str> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.strings.get(i))
            .copied()
            .ok_or_else(|| error(at, format!("invalid string index {index}")))
    }

    /// Reads a string reference from `cursor` as a string attribute's value: the string,
    /// or its bytes when they are not UTF-8.
    pub(crate) fn read_string_attribute(&self, cursor: &mut Cursor<'a>) -> Result<Attribute> {
        let at = cursor.offset();
        let index = cursor.varint()?;
        let text = self.string(index, at)?;
        Ok(
            match usize::try_from(index)
                .ok()
                .and_then(|i| self.raw_strings.get(i))
            {
                Some(raw) if text.as_bytes() != *raw => Attribute::Bytes(raw.to_vec()),
                _ => Attribute::String(text.to_string()),
            },
        )
    }

    /// Reads a string reference from `cursor`.
    pub(crate) fn read_string(&self, cursor: &mut Cursor<'a>) -> Result<&'a str> {
        let at = cursor.offset();
        let index = cursor.varint()?;
        self.string(index, at)
    }
}

/// What a string of the string section that is not UTF-8 reads as.
pub(crate) const NOT_UTF8: &str = "<bytes that are not UTF-8>";

/// Parses the string section: a count, the sizes in reverse order, then the data.
fn parse_strings(mut section: Cursor<'_>) -> Result<Vec<&[u8]>> {
    let all = {
        let mut whole = section;
        whole.bytes(whole.remaining() as u64)?
    };
    let n_strings = section.count()?;
    let mut ranges = Vec::with_capacity(n_strings);
    let mut end = all.len();
    for _ in 0..n_strings {
        let at = section.offset();
        let size = section.varint_usize()?;
        if size == 0 || size > end {
            return Err(error(at, format!("string size {size} is out of range")));
        }
        ranges.push((end - size, end - 1));
        end -= size;
    }
    if all.len() - section.remaining() != end {
        return Err(section.err("string sizes do not match the string data"));
    }
    ranges.reverse();
    let base = section.base();
    ranges
        .into_iter()
        .map(|(start, stop)| {
            if all[stop] != 0 {
                return Err(error(base + stop, "string is not null-terminated"));
            }
            Ok(&all[start..stop])
        })
        .collect()
}

/// Parses the dialect section: the dialects (with versions) and the op names by dialect.
fn parse_dialects<'a>(
    mut section: Cursor<'a>,
    version: u64,
    strings: &[&'a str],
) -> Result<(Vec<Dialect<'a>>, Vec<OpName>)> {
    let string_at = |index: u64, at: usize| {
        usize::try_from(index)
            .ok()
            .and_then(|i| strings.get(i))
            .copied()
            .ok_or_else(|| error(at, format!("invalid string index {index}")))
    };
    let n_dialects = section.count()?;
    let mut dialects = Vec::with_capacity(n_dialects);
    for _ in 0..n_dialects {
        let at = section.offset();
        if version < version::DIALECT_VERSIONING {
            let index = section.varint()?;
            dialects.push(Dialect {
                name: string_at(index, at)?,
                version: None,
            });
            continue;
        }
        let (index, has_version) = section.varint_flag()?;
        let name = string_at(index, at)?;
        let version_data = if has_version {
            let at = section.offset();
            let (id, data) = section.section()?;
            if id != section_id::DIALECT_VERSIONS {
                return Err(error(at, "expected a dialect version section"));
            }
            Some(data)
        } else {
            None
        };
        dialects.push(Dialect {
            name,
            version: version_data,
        });
    }
    if version >= version::ELIDE_UNKNOWN_BLOCK_ARG_LOCATION {
        // The total number of op names, a reservation hint only.
        section.varint()?;
    }
    let mut op_names = Vec::new();
    while !section.is_empty() {
        let at = section.offset();
        let dialect = section.varint_usize()?;
        let dialect_name = dialects
            .get(dialect)
            .ok_or_else(|| error(at, format!("invalid dialect index {dialect}")))?
            .name;
        let n_names = section.count()?;
        for _ in 0..n_names {
            let at = section.offset();
            let (index, was_registered) = if version < version::NATIVE_PROPERTIES_ENCODING {
                (section.varint()?, None)
            } else {
                let (index, flag) = section.varint_flag()?;
                (index, Some(flag))
            };
            let name = string_at(index, at)?;
            let full_name = if name.is_empty() {
                dialect_name.to_string()
            } else {
                format!("{dialect_name}.{name}")
            };
            op_names.push(OpName {
                full_name,
                was_registered,
            });
        }
    }
    Ok((dialects, op_names))
}

/// Parses the attribute/type offset section and slices the attribute/type section by it.
fn parse_attr_type_offsets<'a>(
    data: Cursor<'a>,
    mut offsets: Cursor<'a>,
    n_dialects: usize,
) -> Result<(Vec<Entry<'a>>, Vec<Entry<'a>>)> {
    let n_attrs = offsets.count()?;
    let n_types = offsets.count()?;
    let mut data = data;
    let mut read_group = |count: usize, offsets: &mut Cursor<'a>| -> Result<Vec<Entry<'a>>> {
        let mut entries = Vec::with_capacity(count);
        while entries.len() < count {
            let at = offsets.offset();
            let dialect = offsets.varint_usize()?;
            if dialect >= n_dialects {
                return Err(error(at, format!("invalid dialect index {dialect}")));
            }
            let n_entries = offsets.count()?;
            if n_entries > count - entries.len() {
                return Err(error(at, "more attribute/type entries than declared"));
            }
            for _ in 0..n_entries {
                let (size, custom) = offsets.varint_flag()?;
                let entry_data = data.sub(size).map_err(|_| {
                    error(
                        offsets.offset(),
                        "attribute/type entry extends past its section",
                    )
                })?;
                entries.push(Entry {
                    dialect,
                    custom,
                    data: entry_data,
                });
            }
        }
        Ok(entries)
    };
    let attrs = read_group(n_attrs, &mut offsets)?;
    let types = read_group(n_types, &mut offsets)?;
    if !offsets.is_empty() {
        return Err(offsets.err("trailing data in the attribute/type offset section"));
    }
    Ok((attrs, types))
}

/// Parses the resource sections, returning the dialect resources in handle order.
fn parse_resources<'a>(
    mut data: Cursor<'a>,
    mut offsets: Cursor<'a>,
    strings: &[&'a str],
    dialects: &[Dialect<'a>],
) -> Result<Resources<'a>> {
    let read_key = |cursor: &mut Cursor<'a>| -> Result<&'a str> {
        let at = cursor.offset();
        let index = cursor.varint()?;
        usize::try_from(index)
            .ok()
            .and_then(|i| strings.get(i))
            .copied()
            .ok_or_else(|| error(at, format!("invalid string index {index}")))
    };
    // Resource kinds (`AsmResourceEntryKind`): 0 blob, 1 bool, 2 string.
    const KIND_BLOB: u8 = 0;
    let read_group = |offsets: &mut Cursor<'a>,
                      data: &mut Cursor<'a>,
                      keep: bool,
                      out: &mut Resources<'a>|
     -> Result<()> {
        let n_resources = offsets.count()?;
        for _ in 0..n_resources {
            let key = read_key(offsets)?;
            let size = offsets.varint()?;
            let kind = offsets.byte()?;
            let mut entry = data.sub(size)?;
            if !keep {
                continue;
            }
            let blob = if kind == KIND_BLOB && !entry.is_empty() {
                let alignment = entry.varint()?;
                let len = entry.varint()?;
                entry.align(alignment)?;
                Some(entry.bytes(len)?)
            } else {
                None
            };
            out.push((key.to_string(), blob));
        }
        Ok(())
    };
    let n_external = offsets.count()?;
    let mut ignored = Vec::new();
    for _ in 0..n_external {
        read_key(&mut offsets)?;
        read_group(&mut offsets, &mut data, false, &mut ignored)?;
    }
    let mut resources = Vec::new();
    while !offsets.is_empty() {
        let at = offsets.offset();
        let dialect = offsets.varint_usize()?;
        if dialect >= dialects.len() {
            return Err(error(at, format!("invalid dialect index {dialect}")));
        }
        read_group(&mut offsets, &mut data, true, &mut resources)?;
    }
    Ok(resources)
}

/// Parses the properties section into its entries (each a blob).
fn parse_properties(mut section: Cursor<'_>) -> Result<Vec<Cursor<'_>>> {
    if section.is_empty() {
        return Ok(Vec::new());
    }
    let count = section.count()?;
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        let len = section.varint()?;
        entries.push(section.sub(len)?);
    }
    if !section.is_empty() {
        return Err(section.err("trailing data in the properties section"));
    }
    Ok(entries)
}
