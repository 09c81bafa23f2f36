//! StableHLO text parser (pretty and generic syntax) producing oxla-ir modules.
//!
//! [`parse`] reads what `jax.jit(f).lower(...).as_text()` prints (with or without debug
//! locations), MLIR's generic op syntax, and the `dense_resource` trailer.

mod dense;
mod lexer;
mod ops;
mod parser;

use crate::FrontendError;
use oxla_ir::Module;

/// Parses StableHLO text.
pub fn parse(text: &str) -> Result<Module, FrontendError> {
    parser::parse_module(text)
}
