//! The reference evaluator: executes a [`Module`] op by op on [`Literal`]s.
//!
//! It is the living definition of each op's semantics: slow and simple on purpose.

use crate::{IrError, Literal, Module};

/// Runs function `name` of `module` on `args` and returns its results.
pub fn run_function(
    module: &Module,
    name: &str,
    args: &[Literal],
) -> Result<Vec<Literal>, IrError> {
    let _ = (module, args);
    Err(IrError::Eval {
        detail: format!("evaluator not built yet (function {name})"),
    })
}
