//! `jax.debug.inspect_array_sharding` in partitioned programs.
//!
//! JAX lowers the call to an `InspectSharding` custom call whose backend config holds a
//! callback handle, jaxlib's `JAX_InspectSharding_Callback` (a function and its data, copied
//! byte for byte into the string), for XLA's partitioner to call with the value's sharding as
//! a serialized `xla.OpSharding`. oxla calls it when the program compiles, with the sharding
//! its own propagation gives the value ([`oxla_ir::sharding::inspected_shardings`]).
//!
//! The handle is a pointer into the compiling process, so only a compile through this plugin
//! calls it; an executable read back from its serialized form (a compilation cache) calls
//! nothing, as XLA does not partition such a program again.

use super::executable::tiling_proto;
use oxla_client::{ClientError, Executable, Result};
use oxla_ir::sharding::{inspected_shardings, InspectedSharding};
use oxla_ir::Attribute;
use pjrt_sys::protos::xla;
use prost::Message;
use std::ffi::{c_char, c_void, CStr};

/// jaxlib's `JAX_InspectSharding_Callback_Args`.
#[repr(C)]
struct CallbackArgs {
    /// The serialized `xla.OpSharding`.
    sharding_spec: *mut c_char,
    sharding_spec_size: usize,
    /// Set by the callback on failure, with `free_error` to release it.
    error_txt: *const c_char,
    error_scratch: *mut c_void,
    free_error: Option<unsafe extern "C" fn(*mut CallbackArgs)>,
}

/// jaxlib's `JAX_InspectSharding_Callback`, as the backend config holds it.
#[repr(C)]
#[derive(Clone, Copy)]
struct Callback {
    call: Option<unsafe extern "C" fn(*mut c_void, *mut CallbackArgs)>,
    data: *mut c_void,
}

/// Calls the callback of every `InspectSharding` call of `executable`'s program with the
/// sharding of its operand; the first callback that reports an error fails the compile with
/// its message.
pub(crate) fn call_inspect_callbacks(executable: &Executable) -> Result<()> {
    let module = executable.module();
    let Some(entry) = module.function(executable.entry_name()) else {
        return Ok(());
    };
    for (op, reported) in inspected_shardings(module, entry, executable.num_partitions()) {
        let handle = match op.attr("backend_config") {
            Some(Attribute::Bytes(bytes)) => bytes.as_slice(),
            Some(Attribute::String(text)) => text.as_bytes(),
            _ => &[],
        };
        if handle.len() != std::mem::size_of::<Callback>() {
            return Err(ClientError::InvalidArgument(format!(
                "InspectSharding: a backend config of {} bytes is not a callback handle",
                handle.len()
            )));
        }
        // SAFETY: `handle` holds `size_of::<Callback>()` bytes; the struct is plain data, read
        // unaligned.
        let callback: Callback = unsafe { std::ptr::read_unaligned(handle.as_ptr().cast()) };
        let Some(call) = callback.call else {
            return Err(ClientError::InvalidArgument(
                "InspectSharding: the callback handle has no function".to_string(),
            ));
        };
        let proto = match reported {
            InspectedSharding::Tiled(tiling) => {
                tiling_proto(&tiling).unwrap_or_else(|| xla::OpSharding {
                    r#type: xla::op_sharding::Type::Replicated as i32,
                    ..Default::default()
                })
            }
            InspectedSharding::Manual => xla::OpSharding {
                r#type: xla::op_sharding::Type::Manual as i32,
                ..Default::default()
            },
        };
        let mut spec = proto.encode_to_vec();
        let mut args = CallbackArgs {
            sharding_spec: spec.as_mut_ptr().cast(),
            sharding_spec_size: spec.len(),
            error_txt: std::ptr::null(),
            error_scratch: std::ptr::null_mut(),
            free_error: None,
        };
        // SAFETY: JAX put the handle into the program it handed this process to compile
        // (`encode_inspect_sharding_callback`) and keeps its data alive with the lowering;
        // `args` and the sharding it points to outlive the call.
        unsafe { call(callback.data, &mut args) };
        if !args.error_txt.is_null() {
            // SAFETY: the callback set `error_txt` to a NUL-terminated string that stays valid
            // until `free_error` is called.
            let message = unsafe { CStr::from_ptr(args.error_txt) }
                .to_string_lossy()
                .into_owned();
            if let Some(free) = args.free_error {
                // SAFETY: the callback's own deleter for the error it set, called once.
                unsafe { free(&mut args) };
            }
            return Err(ClientError::Internal(format!(
                "error calling inspect_sharding: {message}"
            )));
        }
    }
    Ok(())
}
