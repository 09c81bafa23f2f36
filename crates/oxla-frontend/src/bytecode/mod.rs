//! MLIR bytecode reader (StableHLO portable artifacts in the VHLO dialect).

use crate::FrontendError;
use oxla_ir::Module;

/// The magic number every MLIR bytecode file starts with.
pub const MAGIC: &[u8] = b"ML\xEFR";

/// Reads an MLIR bytecode file.
pub fn read(bytes: &[u8]) -> Result<Module, FrontendError> {
    let _ = bytes;
    Err(FrontendError::Unsupported {
        detail: "bytecode reader not built yet".to_string(),
    })
}
