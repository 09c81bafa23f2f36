//! The one path every entry point takes: null and `struct_size` checks, `catch_unwind`, and
//! turning `Err` or a panic into an owned `PJRT_Error`.

use super::error::into_raw;
use oxla_client::{ClientError, Result};
use pjrt_sys::PJRT_Error;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Checks `args` and returns it as a reference.
///
/// # Safety
/// `args` must be null or point to a struct whose first field is `size_t struct_size` and that
/// is at least `struct_size` bytes long.
unsafe fn checked_args<'a, A>(name: &str, args: *mut A, min_size: usize) -> Result<&'a mut A> {
    if args.is_null() {
        return Err(ClientError::InvalidArgument(format!(
            "{name}: args is null"
        )));
    }
    // SAFETY: `args` is non-null and every PJRT args struct starts with `size_t struct_size`.
    let struct_size = unsafe { std::ptr::read(args.cast::<usize>()) };
    if struct_size < min_size {
        return Err(ClientError::InvalidArgument(format!(
            "{name}: args->struct_size is {struct_size}, smaller than the {min_size} bytes of the \
             fields this plugin reads"
        )));
    }
    // SAFETY: the caller promised `struct_size` valid bytes, and we checked that they cover
    // every field of `A`.
    Ok(unsafe { &mut *args })
}

/// Runs an entry point's body and converts its outcome to a `PJRT_Error*` (null on success).
///
/// # Safety
/// As for [`checked_args`].
pub(crate) unsafe fn run<A>(
    name: &str,
    args: *mut A,
    min_size: usize,
    body: impl FnOnce(&mut A) -> Result<()>,
) -> *mut PJRT_Error {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: forwarded from this function's contract.
        let args = unsafe { checked_args(name, args, min_size) }?;
        body(args)
    }));
    match outcome {
        Ok(Ok(())) => std::ptr::null_mut(),
        Ok(Err(err)) => into_raw(err),
        Err(payload) => into_raw(ClientError::from_panic(name, payload.as_ref())),
    }
}

/// Like [`run`] for the entry points that return nothing: failures are dropped.
///
/// # Safety
/// As for [`checked_args`].
pub(crate) unsafe fn run_void<A>(
    name: &str,
    args: *mut A,
    min_size: usize,
    body: impl FnOnce(&mut A),
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: forwarded from this function's contract.
        if let Ok(args) = unsafe { checked_args(name, args, min_size) } {
            body(args);
        }
    }));
}

/// Defines `extern "C" fn $name(args: *mut $args) -> *mut PJRT_Error` running `$body` via
/// [`run`] with the header's struct size for `$args`.
macro_rules! entry_point {
    ($name:ident, $args_ty:ty, |$args:ident| $body:block) => {
        #[allow(non_snake_case)]
        pub(crate) unsafe extern "C" fn $name(raw: *mut $args_ty) -> *mut pjrt_sys::PJRT_Error {
            let body = |$args: &mut $args_ty| -> oxla_client::Result<()> { $body };
            // SAFETY: PJRT callers pass null or an args struct at least `struct_size` bytes
            // long; `run` checks both before reading any other field.
            unsafe {
                $crate::ffi::entry::run(stringify!($name), raw, <$args_ty>::STRUCT_SIZE, body)
            }
        }
    };
}

/// Defines entry points that only return UNIMPLEMENTED (after the usual checks).
macro_rules! unimplemented_entry_points {
    ($($name:ident($args_ty:ty): $why:literal;)*) => {
        $(
            entry_point!($name, $args_ty, |args| {
                let _ = args;
                Err(oxla_client::ClientError::Unimplemented(format!(
                    "{} is not implemented by oxla: {}",
                    stringify!($name),
                    $why
                )))
            });
        )*
    };
}

pub(crate) use entry_point;
pub(crate) use unimplemented_entry_points;
