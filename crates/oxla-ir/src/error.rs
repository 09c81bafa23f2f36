//! The IR crate's error type.

use crate::module::Location;

/// Errors from building, verifying or evaluating IR.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum IrError {
    /// A type is malformed or does not fit its use.
    #[error("invalid type: {detail}")]
    InvalidType {
        /// What is wrong.
        detail: String,
    },
    /// An op breaks a rule of the spec.
    #[error("{op} at {location}: {detail}")]
    InvalidOp {
        /// Full op name.
        op: String,
        /// Where it is.
        location: Location,
        /// What is wrong.
        detail: String,
    },
    /// oxla does not implement this op or this use of it.
    #[error("unsupported: {op} at {location}: {detail}")]
    Unsupported {
        /// Full op name.
        op: String,
        /// Where it is.
        location: Location,
        /// What is missing.
        detail: String,
    },
    /// Evaluation failed for a reason other than the two above (bad arguments, limits).
    #[error("evaluation failed: {detail}")]
    Eval {
        /// What went wrong.
        detail: String,
    },
}

/// Result alias for this crate.
pub type Result<T, E = IrError> = std::result::Result<T, E>;
