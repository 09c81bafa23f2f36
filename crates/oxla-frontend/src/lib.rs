//! oxla-frontend: reads StableHLO programs into oxla-ir.
//!
//! Accepts MLIR bytecode (StableHLO portable artifacts in the VHLO dialect, and plain
//! StableHLO bytecode) and StableHLO text. It is the only crate that knows MLIR syntax,
//! bytecode or VHLO versions.

#![forbid(unsafe_code)]

mod bytecode;
mod text;

use oxla_ir::Module;

/// Errors from reading a program.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum FrontendError {
    /// Malformed input at a byte offset (bytecode).
    #[error("bytecode error at byte {offset}: {detail}")]
    Bytecode {
        /// Byte offset into the input.
        offset: usize,
        /// What was expected or found.
        detail: String,
    },
    /// Malformed input at a line and column (text).
    #[error("parse error at {line}:{col}: {detail}")]
    Text {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// What was expected or found.
        detail: String,
    },
    /// Well-formed input that oxla does not support (a newer version, an unknown encoding).
    #[error("unsupported: {detail}")]
    Unsupported {
        /// What is unsupported.
        detail: String,
    },
}

/// The newest StableHLO version whose portable artifacts the reader handles.
pub const STABLEHLO_CURRENT_VERSION: [u32; 3] = [1, 17, 0];
/// The oldest StableHLO version whose portable artifacts the reader handles.
pub const STABLEHLO_MINIMUM_VERSION: [u32; 3] = [0, 9, 0];

/// Reads a program from bytes: MLIR bytecode (starts with `ML\xEFR`) or StableHLO text.
pub fn read_program(bytes: &[u8]) -> Result<Module, FrontendError> {
    if bytes.starts_with(bytecode::MAGIC) {
        bytecode::read(bytes)
    } else {
        let text = std::str::from_utf8(bytes).map_err(|e| FrontendError::Text {
            line: 1,
            col: 1,
            detail: format!("input is neither MLIR bytecode nor UTF-8 text: {e}"),
        })?;
        parse_text(text)
    }
}

/// Parses StableHLO text (pretty or generic syntax).
pub fn parse_text(text: &str) -> Result<Module, FrontendError> {
    text::parse(text)
}
