//! MLIR bytecode reader: StableHLO portable artifacts (VHLO ops in MLIR bytecode versions
//! 0 to 6, as written by StableHLO 0.9.0 through 1.17.0 and later) into oxla-ir.
//!
//! [`reader`] is the bounds-checked cursor, [`sections`] the file structure,
//! [`attrs_types`] the attribute and type encodings, [`ir`] the op/region/block encoding, and
//! [`vhlo`] the mapping of VHLO ops and attributes onto StableHLO names; [`sdy`] reads
//! Shardy's sharding attributes into their text.

mod attrs_types;
mod ir;
mod reader;
mod sdy;
mod sections;
mod vhlo;

use crate::FrontendError;
use oxla_ir::Module;

/// The magic number every MLIR bytecode file starts with.
pub const MAGIC: &[u8] = b"ML\xEFR";

/// Reads an MLIR bytecode file.
pub fn read(bytes: &[u8]) -> Result<Module, FrontendError> {
    let sections = sections::Sections::parse(bytes)?;
    let mut tables = attrs_types::Tables::new(&sections, bytes.len());
    let (top_level, value_types) = {
        let mut ir_reader = ir::IrReader::new(&sections, &mut tables, bytes.len());
        let top_level = ir_reader.read_top_level()?;
        (top_level, std::mem::take(&mut ir_reader.value_types))
    };
    vhlo::build_module(&sections, &mut tables, top_level, value_types)
}
