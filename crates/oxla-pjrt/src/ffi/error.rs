//! `PJRT_Error`: the owned error object handed to callers, and its three entry points.

use super::entry::{run, run_void};
use oxla_client::{ClientError, ErrorCode};
use pjrt_sys::*;

/// What a `PJRT_Error*` points to.
pub(crate) struct ErrorHandle {
    code: PJRT_Error_Code,
    message: String,
}

/// The PJRT code for an oxla error code.
pub(crate) fn pjrt_code(code: ErrorCode) -> PJRT_Error_Code {
    match code {
        ErrorCode::InvalidArgument => PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT,
        ErrorCode::NotFound => PJRT_Error_Code_PJRT_Error_Code_NOT_FOUND,
        ErrorCode::Unimplemented => PJRT_Error_Code_PJRT_Error_Code_UNIMPLEMENTED,
        ErrorCode::FailedPrecondition => PJRT_Error_Code_PJRT_Error_Code_FAILED_PRECONDITION,
        ErrorCode::ResourceExhausted => PJRT_Error_Code_PJRT_Error_Code_RESOURCE_EXHAUSTED,
        ErrorCode::Internal => PJRT_Error_Code_PJRT_Error_Code_INTERNAL,
    }
}

/// Moves `err` to the heap and returns it as the caller-owned `PJRT_Error*`.
pub(crate) fn into_raw(err: ClientError) -> *mut PJRT_Error {
    let handle = Box::new(ErrorHandle {
        code: pjrt_code(err.code()),
        message: err.message().to_string(),
    });
    Box::into_raw(handle).cast()
}

/// `Ok` as null, `Err` as an owned error.
pub(crate) fn status_to_raw(status: Result<(), ClientError>) -> *mut PJRT_Error {
    match status {
        Ok(()) => std::ptr::null_mut(),
        Err(err) => into_raw(err),
    }
}

/// The handle behind a caller's error pointer, if non-null.
fn handle<'a>(error: *const PJRT_Error) -> Option<&'a ErrorHandle> {
    // SAFETY: PJRT callers pass null or an error made by `into_raw` and not yet destroyed.
    unsafe { error.cast::<ErrorHandle>().as_ref() }
}

const NULL_ERROR_MESSAGE: &str = "null PJRT_Error";

pub(crate) unsafe extern "C" fn PJRT_Error_Destroy(args: *mut PJRT_Error_Destroy_Args) {
    let body = |args: &mut PJRT_Error_Destroy_Args| {
        if !args.error.is_null() {
            // SAFETY: PJRT hands back an error created by `into_raw`, exactly once.
            drop(unsafe { Box::from_raw(args.error.cast::<ErrorHandle>()) });
        }
    };
    // SAFETY: `run_void` checks `args` for null and size before reading it.
    unsafe {
        run_void(
            "PJRT_Error_Destroy",
            args,
            PJRT_Error_Destroy_Args::STRUCT_SIZE,
            body,
        )
    }
}

pub(crate) unsafe extern "C" fn PJRT_Error_Message(args: *mut PJRT_Error_Message_Args) {
    let body = |args: &mut PJRT_Error_Message_Args| match handle(args.error) {
        Some(err) => {
            args.message = err.message.as_ptr().cast();
            args.message_size = err.message.len();
        }
        None => {
            args.message = NULL_ERROR_MESSAGE.as_ptr().cast();
            args.message_size = NULL_ERROR_MESSAGE.len();
        }
    };
    // SAFETY: `run_void` checks `args` for null and size before reading it.
    unsafe {
        run_void(
            "PJRT_Error_Message",
            args,
            PJRT_Error_Message_Args::STRUCT_SIZE,
            body,
        )
    }
}

pub(crate) unsafe extern "C" fn PJRT_Error_GetCode(
    args: *mut PJRT_Error_GetCode_Args,
) -> *mut PJRT_Error {
    let body = |args: &mut PJRT_Error_GetCode_Args| {
        let err = handle(args.error).ok_or_else(|| {
            ClientError::InvalidArgument("PJRT_Error_GetCode: error is null".to_string())
        })?;
        args.code = err.code;
        Ok(())
    };
    // SAFETY: `run` checks `args` for null and size before reading it.
    unsafe {
        run(
            "PJRT_Error_GetCode",
            args,
            PJRT_Error_GetCode_Args::STRUCT_SIZE,
            body,
        )
    }
}
