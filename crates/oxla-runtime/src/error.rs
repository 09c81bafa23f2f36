//! The runtime's error type.

use oxla_client::{ClientError, ErrorCode};

/// Errors from loading an artifact or calling a procedure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    /// The artifact file could not be read.
    #[error("cannot read {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What the operating system said.
        message: String,
        /// Whether the file does not exist.
        not_found: bool,
    },
    /// The artifact is truncated, corrupt or inconsistent.
    #[error("invalid artifact: {0}")]
    Artifact(String),
    /// The artifact uses a format version or feature this runtime does not read.
    #[error("unsupported artifact: {0}")]
    Unsupported(String),
    /// A call named something that does not exist (a procedure, a global).
    #[error("not found: {0}")]
    NotFound(String),
    /// A call passed the wrong number, types or shapes of values.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The program is in a state that forbids the call (a global read before it is set).
    #[error("failed precondition: {0}")]
    FailedPrecondition(String),
    /// Compiling or running the program failed.
    #[error(transparent)]
    Client(#[from] ClientError),
}

impl From<oxla_ir::IrError> for RuntimeError {
    fn from(err: oxla_ir::IrError) -> RuntimeError {
        RuntimeError::InvalidArgument(err.to_string())
    }
}

impl RuntimeError {
    /// The status code this error maps to (shared with the PJRT plugin and the C ABI).
    pub fn code(&self) -> ErrorCode {
        match self {
            RuntimeError::Io { not_found, .. } => {
                if *not_found {
                    ErrorCode::NotFound
                } else {
                    ErrorCode::InvalidArgument
                }
            }
            RuntimeError::Artifact(_) | RuntimeError::InvalidArgument(_) => {
                ErrorCode::InvalidArgument
            }
            RuntimeError::Unsupported(_) => ErrorCode::Unimplemented,
            RuntimeError::NotFound(_) => ErrorCode::NotFound,
            RuntimeError::FailedPrecondition(_) => ErrorCode::FailedPrecondition,
            RuntimeError::Client(err) => err.code(),
        }
    }
}

/// The runtime's result type.
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;
