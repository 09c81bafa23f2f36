//! `oxla_set_python_callback_handler`: the C entry point through which the Python package
//! installs the function that runs JAX host callbacks (`jax.debug.print`,
//! `jax.pure_callback`, `jax.experimental.io_callback`).
//!
//! The Python package lowers those callbacks for platform `oxla` to
//! `stablehlo.custom_call @oxla_python_callback` with the callback's index in its registry as
//! `backend_config`. When the evaluator reaches such a call it calls the installed handler
//! with the index, the operands' bytes and preallocated result buffers (dense layout, sizes
//! fixed by the declared types, which the Python side also knows).

use oxla_ir::eval::{register_host_call, unregister_host_call, HostCall};
use oxla_ir::Literal;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// The custom-call target the Python package emits for host callbacks.
pub const PYTHON_CALLBACK_TARGET: &str = "oxla_python_callback";

/// Bytes the handler may write as its error message.
const ERROR_CAPACITY: usize = 4096;

/// `int32_t handler(uint64_t index, uint64_t num_args, const void* const* args,
/// uint64_t num_results, void* const* results, char* error, uint64_t error_capacity)`:
/// returns 0 on success; otherwise writes a NUL-terminated message into `error`.
pub type PythonCallbackHandler = unsafe extern "C" fn(
    index: u64,
    num_args: u64,
    args: *const *const c_void,
    num_results: u64,
    results: *const *mut c_void,
    error: *mut c_char,
    error_capacity: u64,
) -> i32;

/// Installs `handler` for `oxla_python_callback` custom calls, or removes it when null.
///
/// # Safety
/// `handler`, when non-null, must stay callable for as long as programs may run, from any
/// thread, and must follow the contract of [`PythonCallbackHandler`].
#[no_mangle]
pub unsafe extern "C" fn oxla_set_python_callback_handler(handler: Option<PythonCallbackHandler>) {
    let _ = std::panic::catch_unwind(|| match handler {
        None => unregister_host_call(PYTHON_CALLBACK_TARGET),
        Some(handler) => register_host_call(
            PYTHON_CALLBACK_TARGET,
            Arc::new(move |call: &HostCall<'_>| run_handler(handler, call)),
        ),
    });
}

fn run_handler(
    handler: PythonCallbackHandler,
    call: &HostCall<'_>,
) -> Result<Vec<Literal>, String> {
    let index: u64 = call.backend_config.trim().parse().map_err(|_| {
        format!(
            "backend_config {:?} is not a callback index",
            call.backend_config
        )
    })?;
    let mut results = call
        .result_types
        .iter()
        .map(|ty| Literal::zeros(ty.clone()).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let arg_ptrs: Vec<*const c_void> = call
        .args
        .iter()
        .map(|a| a.data.as_ptr() as *const c_void)
        .collect();
    let result_ptrs: Vec<*mut c_void> = results
        .iter_mut()
        .map(|r| r.data_mut().as_mut_ptr() as *mut c_void)
        .collect();
    let mut error = vec![0u8; ERROR_CAPACITY];
    // SAFETY: every pointer is valid for the call: `arg_ptrs[i]` points to the operand's
    // dense bytes (its size follows from the type both sides know), `result_ptrs[i]` to a
    // zeroed buffer of the declared result's size, `error` to ERROR_CAPACITY writable bytes;
    // the installer promised the handler stays callable.
    let status = unsafe {
        handler(
            index,
            arg_ptrs.len() as u64,
            arg_ptrs.as_ptr(),
            result_ptrs.len() as u64,
            result_ptrs.as_ptr(),
            error.as_mut_ptr() as *mut c_char,
            ERROR_CAPACITY as u64,
        )
    };
    if status != 0 {
        let len = error.iter().position(|&b| b == 0).unwrap_or(error.len());
        let message = String::from_utf8_lossy(&error[..len]).into_owned();
        return Err(if message.is_empty() {
            format!("callback {index} failed")
        } else {
            message
        });
    }
    Ok(results)
}
