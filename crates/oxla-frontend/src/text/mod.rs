//! StableHLO text parser (pretty and generic syntax).

use crate::FrontendError;
use oxla_ir::Module;

/// Parses StableHLO text.
pub fn parse(text: &str) -> Result<Module, FrontendError> {
    let _ = text;
    Err(FrontendError::Text {
        line: 1,
        col: 1,
        detail: "text parser not built yet".to_string(),
    })
}
