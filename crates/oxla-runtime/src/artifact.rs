//! The `.oxla` program artifact: reading and checking it (the format is described in
//! `docs/program_artifact.md`).
//!
//! The file is a fixed header, JSON metadata, the program as StableHLO portable bytecode,
//! and the globals' initial values. Every offset and length is checked against the file
//! before it is used, and the metadata against itself (types, sizes, indices), so a corrupt
//! or truncated artifact is an [`RuntimeError::Artifact`] error, never a panic.

use crate::error::{Result, RuntimeError};
use oxla_ir::{ElementType, TensorType};
use serde::Deserialize;
use std::collections::HashSet;
use std::ops::Range;
use std::path::Path;

/// File magic of a program artifact.
pub const ARTIFACT_MAGIC: &[u8; 8] = b"OXLAPRG\0";
/// The format version this runtime reads.
pub const ARTIFACT_VERSION: u32 = 1;
/// Size of the fixed header: magic, version, flags, then six `u64` offsets and lengths.
pub const HEADER_SIZE: usize = 8 + 4 + 4 + 6 * 8;

/// One array in a signature or the global table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueInfo {
    /// Its name: the tree path from the Python program (`multiplier`, `out['x']`).
    pub name: String,
    /// Shape and element type.
    pub ty: TensorType,
}

/// A global: one array of the program's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalInfo {
    /// Name and type.
    pub value: ValueInfo,
    /// Whether procedures may store to it.
    pub mutable: bool,
    /// Where its initial value lies in the data section; `None` if it starts uninitialized.
    pub data: Option<Range<usize>>,
}

/// A procedure: a public function of the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionInfo {
    /// The procedure's name, which is also its function's name in the module.
    pub name: String,
    /// Indices of the globals it reads; they are its first arguments, in this order.
    pub globals_in: Vec<usize>,
    /// Indices of the globals it stores; their new values are its first results.
    pub globals_out: Vec<usize>,
    /// The caller's inputs (arguments after the globals).
    pub inputs: Vec<ValueInfo>,
    /// The caller's outputs (results after the stored globals).
    pub outputs: Vec<ValueInfo>,
}

/// The metadata of an artifact, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// The program's name (its Python class).
    pub name: String,
    /// Who wrote it.
    pub producer: String,
    /// The global table.
    pub globals: Vec<GlobalInfo>,
    /// The procedures.
    pub functions: Vec<FunctionInfo>,
    /// The metadata JSON as stored (tree structures and other descriptive fields included).
    pub json: serde_json::Value,
}

enum Storage {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Storage {
    fn bytes(&self) -> &[u8] {
        match self {
            Storage::Mapped(map) => map,
            Storage::Owned(bytes) => bytes,
        }
    }
}

/// A read, checked artifact. Opened from a file it is memory-mapped: initial values are
/// read from the mapping when the runtime first needs them.
pub struct Artifact {
    storage: Storage,
    metadata: Metadata,
    module: Range<usize>,
    data: Range<usize>,
}

impl std::fmt::Debug for Artifact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Artifact")
            .field("name", &self.metadata.name)
            .field("bytes", &self.storage.bytes().len())
            .finish()
    }
}

impl Artifact {
    /// Maps and checks the artifact at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Artifact> {
        let path = path.as_ref();
        let io_err = |err: std::io::Error| RuntimeError::Io {
            path: path.display().to_string(),
            message: err.to_string(),
            not_found: err.kind() == std::io::ErrorKind::NotFound,
        };
        let file = std::fs::File::open(path).map_err(io_err)?;
        let len = file.metadata().map_err(io_err)?.len();
        if len == 0 {
            // An empty file cannot be mapped; it is reported as truncated below.
            return Artifact::from_bytes(Vec::new());
        }
        // SAFETY: the mapping is read-only and private to this process; oxla never writes
        // through it. Another process truncating or rewriting the file while it is mapped
        // is outside what the runtime can guard against (the same holds for any mmap-based
        // loader); every access is bounds-checked against the length seen here.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io_err)?;
        Artifact::from_storage(Storage::Mapped(map))
    }

    /// Checks an artifact held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Artifact> {
        Artifact::from_storage(Storage::Owned(bytes))
    }

    fn from_storage(storage: Storage) -> Result<Artifact> {
        let (metadata, module, data) = parse(storage.bytes())?;
        Ok(Artifact {
            storage,
            metadata,
            module,
            data,
        })
    }

    /// The checked metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// The program: StableHLO portable bytecode holding one public function per procedure.
    pub fn module_bytes(&self) -> &[u8] {
        &self.storage.bytes()[self.module.clone()]
    }

    /// The initial value of global `index`, if it has one.
    pub fn initial_value(&self, index: usize) -> Option<&[u8]> {
        let range = self.metadata.globals.get(index)?.data.clone()?;
        let data = &self.storage.bytes()[self.data.clone()];
        data.get(range)
    }
}

fn corrupt(detail: impl Into<String>) -> RuntimeError {
    RuntimeError::Artifact(detail.into())
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(a)
}

/// The byte range `offset..offset+len` of a section, checked against the file.
fn section(bytes: &[u8], what: &str, offset: u64, len: u64) -> Result<Range<usize>> {
    let end = offset.checked_add(len);
    match end {
        Some(end) if end <= bytes.len() as u64 && offset >= HEADER_SIZE as u64 => {
            Ok(offset as usize..end as usize)
        }
        _ => Err(corrupt(format!(
            "the {what} section ({len} bytes at offset {offset}) lies outside the file \
             ({} bytes): the artifact is truncated or corrupt",
            bytes.len()
        ))),
    }
}

fn parse(bytes: &[u8]) -> Result<(Metadata, Range<usize>, Range<usize>)> {
    if bytes.len() < HEADER_SIZE {
        if !bytes.is_empty() && !ARTIFACT_MAGIC.starts_with(&bytes[..bytes.len().min(8)]) {
            return Err(corrupt("not an oxla program artifact (bad magic)"));
        }
        return Err(corrupt(format!(
            "the file has {} bytes, shorter than the {HEADER_SIZE}-byte header: \
             the artifact is truncated",
            bytes.len()
        )));
    }
    if &bytes[..8] != ARTIFACT_MAGIC {
        return Err(corrupt("not an oxla program artifact (bad magic)"));
    }
    let version = u32_at(bytes, 8);
    if version != ARTIFACT_VERSION {
        return Err(RuntimeError::Unsupported(format!(
            "the artifact has format version {version}; this runtime reads version \
             {ARTIFACT_VERSION}"
        )));
    }
    let flags = u32_at(bytes, 12);
    if flags != 0 {
        return Err(RuntimeError::Unsupported(format!(
            "the artifact sets header flags {flags:#x}, which this runtime does not know"
        )));
    }
    let field = |i: usize| u64_at(bytes, 16 + 8 * i);
    let meta = section(bytes, "metadata", field(0), field(1))?;
    let module = section(bytes, "module", field(2), field(3))?;
    let data = section(bytes, "data", field(4), field(5))?;
    let json: serde_json::Value = serde_json::from_slice(&bytes[meta])
        .map_err(|err| corrupt(format!("the metadata is not valid JSON: {err}")))?;
    let raw: RawMetadata = serde_json::from_value(json.clone())
        .map_err(|err| corrupt(format!("the metadata does not describe a program: {err}")))?;
    let metadata = check_metadata(raw, json, data.len())?;
    Ok((metadata, module, data))
}

#[derive(Deserialize)]
struct RawMetadata {
    format: String,
    version: u32,
    name: String,
    #[serde(default)]
    producer: String,
    globals: Vec<RawGlobal>,
    functions: Vec<RawFunction>,
}

#[derive(Deserialize)]
struct RawValue {
    name: String,
    #[serde(rename = "type")]
    element_type: String,
    shape: Vec<i64>,
}

#[derive(Deserialize)]
struct RawGlobal {
    #[serde(flatten)]
    value: RawValue,
    mutable: bool,
    initialized: bool,
    offset: Option<u64>,
    nbytes: Option<u64>,
}

#[derive(Deserialize)]
struct RawFunction {
    name: String,
    globals_in: Vec<usize>,
    globals_out: Vec<usize>,
    inputs: Vec<RawValue>,
    outputs: Vec<RawValue>,
}

fn check_value(raw: RawValue, what: &str) -> Result<ValueInfo> {
    let element_type = ElementType::from_name(&raw.element_type).ok_or_else(|| {
        corrupt(format!(
            "{what} `{}` has unknown element type `{}`",
            raw.name, raw.element_type
        ))
    })?;
    if raw.shape.iter().any(|&d| d < 0) {
        return Err(corrupt(format!(
            "{what} `{}` has a negative extent in {:?}",
            raw.name, raw.shape
        )));
    }
    let ty = TensorType::new(raw.shape, element_type);
    if ty.byte_size().is_none() {
        return Err(corrupt(format!(
            "{what} `{}` of type {ty} is too large",
            raw.name
        )));
    }
    Ok(ValueInfo { name: raw.name, ty })
}

fn check_metadata(raw: RawMetadata, json: serde_json::Value, data_len: usize) -> Result<Metadata> {
    if raw.format != "oxla-program" {
        return Err(corrupt(format!(
            "the metadata's format is `{}`, not `oxla-program`",
            raw.format
        )));
    }
    if raw.version != ARTIFACT_VERSION {
        return Err(corrupt(format!(
            "the metadata's version {} differs from the header's {ARTIFACT_VERSION}",
            raw.version
        )));
    }
    let mut globals = Vec::with_capacity(raw.globals.len());
    for raw_global in raw.globals {
        let value = check_value(raw_global.value, "global")?;
        let data = if raw_global.initialized {
            let (Some(offset), Some(nbytes)) = (raw_global.offset, raw_global.nbytes) else {
                return Err(corrupt(format!(
                    "initialized global `{}` has no offset or size",
                    value.name
                )));
            };
            let expected = value.ty.byte_size().unwrap_or(usize::MAX) as u64;
            if nbytes != expected {
                return Err(corrupt(format!(
                    "global `{}` of type {} needs {expected} bytes, the metadata says {nbytes}",
                    value.name, value.ty
                )));
            }
            match offset.checked_add(nbytes) {
                Some(end) if end <= data_len as u64 => Some(offset as usize..end as usize),
                _ => {
                    return Err(corrupt(format!(
                        "global `{}` ({nbytes} bytes at offset {offset}) lies outside the \
                         {data_len}-byte data section",
                        value.name
                    )))
                }
            }
        } else {
            None
        };
        globals.push(GlobalInfo {
            value,
            mutable: raw_global.mutable,
            data,
        });
    }
    let mut names = HashSet::new();
    let mut functions = Vec::with_capacity(raw.functions.len());
    for raw_fn in raw.functions {
        if !names.insert(raw_fn.name.clone()) {
            return Err(corrupt(format!(
                "procedure `{}` is listed twice",
                raw_fn.name
            )));
        }
        for (list, what) in [
            (&raw_fn.globals_in, "reads"),
            (&raw_fn.globals_out, "stores"),
        ] {
            if let Some(bad) = list.iter().find(|&&g| g >= globals.len()) {
                return Err(corrupt(format!(
                    "procedure `{}` {what} global {bad}, but there are {}",
                    raw_fn.name,
                    globals.len()
                )));
            }
        }
        if let Some(&g) = raw_fn.globals_out.iter().find(|&&g| !globals[g].mutable) {
            return Err(corrupt(format!(
                "procedure `{}` stores immutable global `{}`",
                raw_fn.name, globals[g].value.name
            )));
        }
        let inputs = raw_fn
            .inputs
            .into_iter()
            .map(|v| check_value(v, "input"))
            .collect::<Result<Vec<_>>>()?;
        let outputs = raw_fn
            .outputs
            .into_iter()
            .map(|v| check_value(v, "output"))
            .collect::<Result<Vec<_>>>()?;
        functions.push(FunctionInfo {
            name: raw_fn.name,
            globals_in: raw_fn.globals_in,
            globals_out: raw_fn.globals_out,
            inputs,
            outputs,
        });
    }
    Ok(Metadata {
        name: raw.name,
        producer: raw.producer,
        globals,
        functions,
        json,
    })
}
