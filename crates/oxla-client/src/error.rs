//! The client's error type: one variant per kind of failure, each mapping to a status code.

use oxla_frontend::FrontendError;
use oxla_ir::IrError;

/// The status code an error maps to (the abseil / PJRT status codes oxla uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The caller passed something malformed or inconsistent.
    InvalidArgument,
    /// A named thing (device, memory, function) does not exist.
    NotFound,
    /// oxla does not implement this (op, format, entry point).
    Unimplemented,
    /// The object is in the wrong state (deleted buffer, deleted executable).
    FailedPrecondition,
    /// Out of memory or another limit.
    ResourceExhausted,
    /// A bug in oxla (a caught panic, a broken invariant).
    Internal,
}

/// Errors from the oxla client.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// Malformed or inconsistent input.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Something named does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// Not implemented by oxla.
    #[error("unimplemented: {0}")]
    Unimplemented(String),
    /// The object is in the wrong state.
    #[error("failed precondition: {0}")]
    FailedPrecondition(String),
    /// A resource limit was hit.
    #[error("resource exhausted: {0}")]
    ResourceExhausted(String),
    /// An internal error (a caught panic or a broken invariant).
    #[error("internal: {0}")]
    Internal(String),
}

impl ClientError {
    /// The status code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            ClientError::InvalidArgument(_) => ErrorCode::InvalidArgument,
            ClientError::NotFound(_) => ErrorCode::NotFound,
            ClientError::Unimplemented(_) => ErrorCode::Unimplemented,
            ClientError::FailedPrecondition(_) => ErrorCode::FailedPrecondition,
            ClientError::ResourceExhausted(_) => ErrorCode::ResourceExhausted,
            ClientError::Internal(_) => ErrorCode::Internal,
        }
    }

    /// The message without the code prefix.
    pub fn message(&self) -> &str {
        match self {
            ClientError::InvalidArgument(m)
            | ClientError::NotFound(m)
            | ClientError::Unimplemented(m)
            | ClientError::FailedPrecondition(m)
            | ClientError::ResourceExhausted(m)
            | ClientError::Internal(m) => m,
        }
    }

    /// An internal error describing a caught panic payload.
    pub fn from_panic(context: &str, payload: &(dyn std::any::Any + Send)) -> ClientError {
        let detail = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic payload".to_string());
        ClientError::Internal(format!("panic in {context}: {detail}"))
    }
}

impl From<FrontendError> for ClientError {
    fn from(err: FrontendError) -> ClientError {
        match err {
            FrontendError::Unsupported { .. } => ClientError::Unimplemented(err.to_string()),
            _ => ClientError::InvalidArgument(err.to_string()),
        }
    }
}

impl From<IrError> for ClientError {
    fn from(err: IrError) -> ClientError {
        match err {
            IrError::Unsupported { .. } => ClientError::Unimplemented(err.to_string()),
            IrError::InvalidType { .. } | IrError::InvalidOp { .. } => {
                ClientError::InvalidArgument(err.to_string())
            }
            IrError::Eval { .. } => ClientError::Internal(err.to_string()),
        }
    }
}

/// Result alias for this crate.
pub type Result<T, E = ClientError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_messages() {
        let err = ClientError::NotFound("device 7".to_string());
        assert_eq!(err.code(), ErrorCode::NotFound);
        assert_eq!(err.message(), "device 7");
        assert_eq!(err.to_string(), "not found: device 7");
        let unsupported: ClientError = FrontendError::Unsupported {
            detail: "x".to_string(),
        }
        .into();
        assert_eq!(unsupported.code(), ErrorCode::Unimplemented);
    }

    #[test]
    fn panic_payloads_become_internal_errors() {
        let payload: Box<dyn std::any::Any + Send> = Box::new("boom");
        let err = ClientError::from_panic("execute", payload.as_ref());
        assert_eq!(err.code(), ErrorCode::Internal);
        assert!(err.message().contains("boom"));
    }
}
