//! The C ABI of the oxla runtime (`include/oxla.h`): load a program artifact, call its
//! procedures, read and write tensors.
//!
//! Every entry point checks its pointers, runs under `catch_unwind`, and reports failures
//! as an `oxla_status` with a per-thread message (`oxla_last_error`), so no panic crosses
//! the ABI.

use oxla_runtime::{ElementType, ErrorCode, Module, RuntimeError, Tensor, TensorType};
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

/// The C API version (`OXLA_C_API_VERSION`).
const API_VERSION: c_int = 1;

/// `oxla_status`.
pub type Status = c_int;
const OK: Status = 0;
const INVALID_ARGUMENT: Status = 3;
const NOT_FOUND: Status = 5;
const RESOURCE_EXHAUSTED: Status = 8;
const FAILED_PRECONDITION: Status = 9;
const UNIMPLEMENTED: Status = 12;
const INTERNAL: Status = 13;

/// A loaded module: calls on it are serialized by the mutex.
pub struct OxlaModule {
    module: Mutex<Module>,
    names: Vec<CString>,
}

/// A tensor owned by the caller.
pub struct OxlaTensor {
    tensor: Tensor,
    dims: Vec<i64>,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|slot| *slot.borrow_mut() = text);
}

struct Failure {
    status: Status,
    message: String,
}

impl From<RuntimeError> for Failure {
    fn from(err: RuntimeError) -> Failure {
        let status = match err.code() {
            ErrorCode::InvalidArgument => INVALID_ARGUMENT,
            ErrorCode::NotFound => NOT_FOUND,
            ErrorCode::Unimplemented => UNIMPLEMENTED,
            ErrorCode::FailedPrecondition => FAILED_PRECONDITION,
            ErrorCode::ResourceExhausted => RESOURCE_EXHAUSTED,
            ErrorCode::Internal => INTERNAL,
        };
        Failure {
            status,
            message: err.to_string(),
        }
    }
}

fn invalid(message: impl Into<String>) -> Failure {
    Failure {
        status: INVALID_ARGUMENT,
        message: message.into(),
    }
}

/// Runs `body`, turning an error or a panic into a status and the thread's last error.
fn guard(name: &str, body: impl FnOnce() -> Result<(), Failure>) -> Status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => OK,
        Ok(Err(failure)) => {
            set_last_error(&format!("{name}: {}", failure.message));
            failure.status
        }
        Err(panic) => {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            set_last_error(&format!("{name}: internal error: {detail}"));
            INTERNAL
        }
    }
}

/// The string at `ptr`, which must be non-null and NUL-terminated.
///
/// # Safety
/// `ptr` is null or points to a NUL-terminated string that outlives the call.
unsafe fn c_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return Err(invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-null, and the caller promises a NUL-terminated string.
    unsafe { CStr::from_ptr(ptr) }
        .to_str()
        .map_err(|_| invalid(format!("{what} is not UTF-8")))
}

/// The module behind `ptr`.
///
/// # Safety
/// `ptr` is null or came from `oxla_module_load` and was not freed.
unsafe fn module_ref<'a>(ptr: *const OxlaModule) -> Result<&'a OxlaModule, Failure> {
    // SAFETY: the caller promises a live module or null.
    unsafe { ptr.as_ref() }.ok_or_else(|| invalid("module is NULL"))
}

fn lock(module: &OxlaModule) -> std::sync::MutexGuard<'_, Module> {
    module
        .module
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether `oxla.h`'s `oxla_dtype` enum names `ty` (the XLA numbers of the non-float8 types).
fn in_header(ty: ElementType) -> bool {
    ty.xla_primitive_type().is_some_and(|code| code <= 18)
}

fn dtype_to_element(dtype: c_int) -> Option<ElementType> {
    ElementType::from_xla_primitive_type(dtype).filter(|&ty| in_header(ty))
}

fn element_to_dtype(ty: ElementType) -> c_int {
    // Types outside the header's enum (sub-byte and float8) report 0.
    ty.xla_primitive_type()
        .filter(|_| in_header(ty))
        .unwrap_or(0)
}

fn boxed_tensor(tensor: Tensor) -> *mut OxlaTensor {
    let dims = tensor.ty.shape.clone();
    Box::into_raw(Box::new(OxlaTensor { tensor, dims }))
}

/// See `oxla.h`.
#[no_mangle]
pub extern "C" fn oxla_api_version() -> c_int {
    API_VERSION
}

/// See `oxla.h`.
#[no_mangle]
pub extern "C" fn oxla_last_error() -> *const c_char {
    LAST_ERROR.with(|slot| slot.borrow().as_ptr())
}

/// See `oxla.h`.
///
/// # Safety
/// `path` is a NUL-terminated string; `out` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn oxla_module_load(
    path: *const c_char,
    out: *mut *mut OxlaModule,
) -> Status {
    guard("oxla_module_load", || {
        if out.is_null() {
            return Err(invalid("out is NULL"));
        }
        // SAFETY: the caller passes a NUL-terminated path.
        let path = unsafe { c_str(path, "path") }?;
        let module = Module::load(path)?;
        let names = module
            .functions()
            .iter()
            .map(|f| CString::new(f.name.clone()).unwrap_or_default())
            .collect();
        let boxed = Box::new(OxlaModule {
            module: Mutex::new(module),
            names,
        });
        // SAFETY: `out` is non-null and the caller promises it is writable.
        unsafe { *out = Box::into_raw(boxed) };
        Ok(())
    })
}

/// See `oxla.h`.
///
/// # Safety
/// `module` is null or a live module from `oxla_module_load`, freed only once.
#[no_mangle]
pub unsafe extern "C" fn oxla_module_free(module: *mut OxlaModule) {
    if !module.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the caller hands back ownership of a module `Box::into_raw` made.
            drop(unsafe { Box::from_raw(module) });
        }));
    }
}

/// See `oxla.h`.
///
/// # Safety
/// `module` is null or a live module.
#[no_mangle]
pub unsafe extern "C" fn oxla_module_num_functions(module: *const OxlaModule) -> usize {
    // SAFETY: the caller promises a live module or null.
    unsafe { module.as_ref() }.map_or(0, |m| m.names.len())
}

/// See `oxla.h`.
///
/// # Safety
/// `module` is null or a live module.
#[no_mangle]
pub unsafe extern "C" fn oxla_module_function_name(
    module: *const OxlaModule,
    index: usize,
) -> *const c_char {
    // SAFETY: the caller promises a live module or null.
    unsafe { module.as_ref() }
        .and_then(|m| m.names.get(index))
        .map_or(std::ptr::null(), |name| name.as_ptr())
}

/// See `oxla.h`.
///
/// # Safety
/// `module` is a live module, `function` a NUL-terminated string, `inputs` null (when
/// `num_inputs` is 0) or `num_inputs` live tensor pointers, `outputs` and `num_outputs`
/// writable.
#[no_mangle]
pub unsafe extern "C" fn oxla_module_call(
    module: *mut OxlaModule,
    function: *const c_char,
    inputs: *const *const OxlaTensor,
    num_inputs: usize,
    outputs: *mut *mut *mut OxlaTensor,
    num_outputs: *mut usize,
) -> Status {
    guard("oxla_module_call", || {
        // SAFETY: the caller promises a live module.
        let module = unsafe { module_ref(module) }?;
        // SAFETY: the caller passes a NUL-terminated name.
        let function = unsafe { c_str(function, "function") }?;
        if outputs.is_null() || num_outputs.is_null() {
            return Err(invalid("outputs or num_outputs is NULL"));
        }
        if inputs.is_null() && num_inputs > 0 {
            return Err(invalid("inputs is NULL"));
        }
        let pointers: &[*const OxlaTensor] = if num_inputs == 0 {
            &[]
        } else {
            // SAFETY: non-null, and the caller promises `num_inputs` entries.
            unsafe { std::slice::from_raw_parts(inputs, num_inputs) }
        };
        let mut values = Vec::with_capacity(num_inputs);
        for (idx, &ptr) in pointers.iter().enumerate() {
            // SAFETY: each entry is a live tensor or null.
            let tensor =
                unsafe { ptr.as_ref() }.ok_or_else(|| invalid(format!("input {idx} is NULL")))?;
            values.push(tensor.tensor.clone());
        }
        let results = lock(module).call(function, &values)?;
        let count = results.len();
        let array: Box<[*mut OxlaTensor]> = results.into_iter().map(boxed_tensor).collect();
        // SAFETY: both out-pointers are non-null and writable, as the caller promises.
        unsafe {
            *outputs = Box::into_raw(array) as *mut *mut OxlaTensor;
            *num_outputs = count;
        }
        Ok(())
    })
}

/// See `oxla.h`.
///
/// # Safety
/// `module` is a live module, `name` a NUL-terminated string, `out` writable.
#[no_mangle]
pub unsafe extern "C" fn oxla_module_get_global(
    module: *mut OxlaModule,
    name: *const c_char,
    out: *mut *mut OxlaTensor,
) -> Status {
    guard("oxla_module_get_global", || {
        // SAFETY: the caller promises a live module.
        let module = unsafe { module_ref(module) }?;
        // SAFETY: the caller passes a NUL-terminated name.
        let name = unsafe { c_str(name, "name") }?;
        if out.is_null() {
            return Err(invalid("out is NULL"));
        }
        let value = lock(module).global(name)?;
        // SAFETY: `out` is non-null and writable.
        unsafe { *out = boxed_tensor(value) };
        Ok(())
    })
}

/// See `oxla.h`.
///
/// # Safety
/// `module` is a live module, `name` a NUL-terminated string, `value` a live tensor.
#[no_mangle]
pub unsafe extern "C" fn oxla_module_set_global(
    module: *mut OxlaModule,
    name: *const c_char,
    value: *const OxlaTensor,
) -> Status {
    guard("oxla_module_set_global", || {
        // SAFETY: the caller promises a live module.
        let module = unsafe { module_ref(module) }?;
        // SAFETY: the caller passes a NUL-terminated name.
        let name = unsafe { c_str(name, "name") }?;
        // SAFETY: the caller promises a live tensor or null.
        let value = unsafe { value.as_ref() }.ok_or_else(|| invalid("value is NULL"))?;
        lock(module).set_global(name, value.tensor.clone())?;
        Ok(())
    })
}

/// See `oxla.h`.
///
/// # Safety
/// `dims` points to `rank` extents (or is null when `rank` is 0), `data` to `num_bytes`
/// readable bytes (or is null when `num_bytes` is 0), `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn oxla_tensor_create(
    dtype: c_int,
    dims: *const i64,
    rank: usize,
    data: *const c_void,
    num_bytes: usize,
    out: *mut *mut OxlaTensor,
) -> Status {
    guard("oxla_tensor_create", || {
        if out.is_null() {
            return Err(invalid("out is NULL"));
        }
        let element =
            dtype_to_element(dtype).ok_or_else(|| invalid(format!("unknown dtype {dtype}")))?;
        if dims.is_null() && rank > 0 {
            return Err(invalid("dims is NULL"));
        }
        let shape = if rank == 0 {
            Vec::new()
        } else {
            // SAFETY: non-null, and the caller promises `rank` extents.
            unsafe { std::slice::from_raw_parts(dims, rank) }.to_vec()
        };
        if let Some(d) = shape.iter().find(|&&d| d < 0) {
            return Err(invalid(format!("negative extent {d}")));
        }
        let ty = TensorType::new(shape, element);
        let expected = ty
            .byte_size()
            .ok_or_else(|| invalid(format!("{ty} is too large")))?;
        if num_bytes != expected {
            return Err(invalid(format!(
                "{ty} needs {expected} bytes, got {num_bytes}"
            )));
        }
        let bytes = if num_bytes == 0 {
            Vec::new()
        } else {
            if data.is_null() {
                return Err(invalid("data is NULL"));
            }
            // SAFETY: non-null, and the caller promises `num_bytes` readable bytes.
            unsafe { std::slice::from_raw_parts(data as *const u8, num_bytes) }.to_vec()
        };
        let tensor = Tensor::new(ty, bytes).map_err(|err| invalid(err.to_string()))?;
        // SAFETY: `out` is non-null and writable.
        unsafe { *out = boxed_tensor(tensor) };
        Ok(())
    })
}

/// See `oxla.h`.
///
/// # Safety
/// `tensor` is null or a live tensor, freed only once.
#[no_mangle]
pub unsafe extern "C" fn oxla_tensor_free(tensor: *mut OxlaTensor) {
    if !tensor.is_null() {
        // SAFETY: the caller hands back ownership of a tensor `Box::into_raw` made.
        drop(unsafe { Box::from_raw(tensor) });
    }
}

/// See `oxla.h`.
///
/// # Safety
/// `tensors` is null or an array from `oxla_module_call` with its `count`, freed only once.
#[no_mangle]
pub unsafe extern "C" fn oxla_tensors_free(tensors: *mut *mut OxlaTensor, count: usize) {
    if tensors.is_null() {
        return;
    }
    // SAFETY: the array was made by `Box::<[_]>::into_raw` with `count` entries.
    let array = unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(tensors, count)) };
    for &tensor in array.iter() {
        // SAFETY: each entry is a tensor the array owns.
        unsafe { oxla_tensor_free(tensor) };
    }
}

/// The tensor behind `ptr`, if any.
///
/// # Safety
/// `ptr` is null or a live tensor.
unsafe fn tensor_ref<'a>(ptr: *const OxlaTensor) -> Option<&'a OxlaTensor> {
    // SAFETY: the caller promises a live tensor or null.
    unsafe { ptr.as_ref() }
}

/// See `oxla.h`. Returns 0 for a null tensor.
///
/// # Safety
/// `tensor` is null or a live tensor.
#[no_mangle]
pub unsafe extern "C" fn oxla_tensor_dtype(tensor: *const OxlaTensor) -> c_int {
    // SAFETY: as the caller promises.
    unsafe { tensor_ref(tensor) }.map_or(0, |t| element_to_dtype(t.tensor.ty.element_type))
}

/// See `oxla.h`. Returns 0 for a null tensor.
///
/// # Safety
/// `tensor` is null or a live tensor.
#[no_mangle]
pub unsafe extern "C" fn oxla_tensor_rank(tensor: *const OxlaTensor) -> usize {
    // SAFETY: as the caller promises.
    unsafe { tensor_ref(tensor) }.map_or(0, |t| t.dims.len())
}

/// See `oxla.h`. Returns null for a null tensor.
///
/// # Safety
/// `tensor` is null or a live tensor.
#[no_mangle]
pub unsafe extern "C" fn oxla_tensor_dims(tensor: *const OxlaTensor) -> *const i64 {
    // SAFETY: as the caller promises.
    unsafe { tensor_ref(tensor) }.map_or(std::ptr::null(), |t| t.dims.as_ptr())
}

/// See `oxla.h`. Returns null for a null tensor.
///
/// # Safety
/// `tensor` is null or a live tensor.
#[no_mangle]
pub unsafe extern "C" fn oxla_tensor_data(tensor: *const OxlaTensor) -> *const c_void {
    // SAFETY: as the caller promises.
    unsafe { tensor_ref(tensor) }.map_or(std::ptr::null(), |t| {
        t.tensor.data.as_ptr() as *const c_void
    })
}

/// See `oxla.h`. Returns 0 for a null tensor.
///
/// # Safety
/// `tensor` is null or a live tensor.
#[no_mangle]
pub unsafe extern "C" fn oxla_tensor_num_bytes(tensor: *const OxlaTensor) -> usize {
    // SAFETY: as the caller promises.
    unsafe { tensor_ref(tensor) }.map_or(0, |t| t.tensor.data.len())
}
