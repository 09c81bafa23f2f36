//! Test harness: loads the built `liboxla_pjrt.so` through its C ABI, as JAX does, and wraps
//! the calls the tests need.

#![allow(dead_code, non_upper_case_globals)]

use pjrt_sys::*;
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The loaded plugin: the library (kept loaded for the process) and its API table.
pub struct Plugin {
    _library: libloading::Library,
    pub api: &'static PJRT_Api,
}

/// Where cargo put the shared library: next to the test executable's `deps/` directory.
fn library_path() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps directory").to_path_buf();
    let candidates = [
        deps.join("liboxla_pjrt.so"),
        deps.parent()
            .expect("profile directory")
            .join("liboxla_pjrt.so"),
    ];
    candidates
        .iter()
        .find(|p| p.exists())
        .cloned()
        .unwrap_or_else(|| panic!("liboxla_pjrt.so not found in {candidates:?}"))
}

// SAFETY: the API table is immutable static data inside the loaded library.
unsafe impl Sync for Plugin {}
// SAFETY: as above.
unsafe impl Send for Plugin {}

static PLUGIN: OnceLock<Plugin> = OnceLock::new();

/// The plugin, loaded and initialized once per test process.
pub fn plugin() -> &'static Plugin {
    PLUGIN.get_or_init(|| {
        // SAFETY: loading our own plugin library; its initializers have no preconditions.
        let library = unsafe { libloading::Library::new(library_path()) }.expect("dlopen plugin");
        // SAFETY: `GetPjrtApi` has this signature in every PJRT plugin.
        let get_api: libloading::Symbol<unsafe extern "C" fn() -> *const PJRT_Api> =
            unsafe { library.get(b"GetPjrtApi") }.expect("GetPjrtApi symbol");
        // SAFETY: the table is static inside the library, which stays loaded.
        let api: &'static PJRT_Api = unsafe { &*get_api() };
        let plugin = Plugin {
            _library: library,
            api,
        };
        let mut args = PJRT_Plugin_Initialize_Args::new();
        // SAFETY: valid args for the plugin's initializer.
        plugin.ok(unsafe { plugin.api.PJRT_Plugin_Initialize.unwrap()(&mut args) });
        plugin
    })
}

/// An error returned by the plugin: code and message.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub code: PJRT_Error_Code,
    pub message: String,
}

impl Plugin {
    /// Converts (and frees) a returned `PJRT_Error*`.
    pub fn check(&self, error: *mut PJRT_Error) -> Result<(), Failure> {
        if error.is_null() {
            return Ok(());
        }
        let mut code_args = PJRT_Error_GetCode_Args::new();
        code_args.error = error;
        // SAFETY: valid args; `error` is a live error from the plugin.
        let code_err = unsafe { self.api.PJRT_Error_GetCode.unwrap()(&mut code_args) };
        assert!(code_err.is_null());
        let mut msg_args = PJRT_Error_Message_Args::new();
        msg_args.error = error;
        // SAFETY: as above.
        unsafe { self.api.PJRT_Error_Message.unwrap()(&mut msg_args) };
        // SAFETY: the message has `message_size` bytes and lives as long as `error`.
        let message = String::from_utf8_lossy(unsafe {
            std::slice::from_raw_parts(msg_args.message.cast::<u8>(), msg_args.message_size)
        })
        .into_owned();
        let mut destroy = PJRT_Error_Destroy_Args::new();
        destroy.error = error;
        // SAFETY: destroys the error once.
        unsafe { self.api.PJRT_Error_Destroy.unwrap()(&mut destroy) };
        Err(Failure {
            code: code_args.code,
            message,
        })
    }

    /// Panics (failing the test) if `error` is non-null.
    pub fn ok(&self, error: *mut PJRT_Error) {
        if let Err(failure) = self.check(error) {
            panic!("PJRT call failed: {failure:?}");
        }
    }
}

/// Calls an entry point by name with a mutable args struct and returns the checked result.
#[macro_export]
macro_rules! call {
    ($plugin:expr, $entry:ident, $args:expr) => {{
        let plugin: &$crate::common::Plugin = $plugin;
        let entry = plugin.api.$entry.unwrap();
        let args = $args;
        // SAFETY: the args struct was built with `::new()` and filled with valid pointers.
        plugin.check(unsafe { entry(args) })
    }};
}

/// Reads a `(ptr, len)` string.
pub fn string(ptr: *const std::ffi::c_char, len: usize) -> String {
    // SAFETY: the plugin returns `len` bytes at `ptr` that outlive this call.
    String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
        .into_owned()
}

/// A named int64 option.
pub fn int64_option(name: &'static str, value: i64) -> PJRT_NamedValue {
    let mut option = PJRT_NamedValue::new();
    option.name = name.as_ptr().cast();
    option.name_size = name.len();
    option.type_ = PJRT_NamedValue_Type_PJRT_NamedValue_kInt64;
    option.__bindgen_anon_1.int64_value = value;
    option.value_size = 1;
    option
}

/// A client plus the plugin it came from; destroyed on drop.
pub struct TestClient {
    pub plugin: &'static Plugin,
    pub raw: *mut PJRT_Client,
}

impl Drop for TestClient {
    fn drop(&mut self) {
        let mut args = PJRT_Client_Destroy_Args::new();
        args.client = self.raw;
        let _ = call!(self.plugin, PJRT_Client_Destroy, &mut args);
    }
}

/// Creates a client with the given options.
pub fn try_client(options: &[PJRT_NamedValue]) -> Result<TestClient, Failure> {
    let plugin = plugin();
    let mut args = PJRT_Client_Create_Args::new();
    args.create_options = options.as_ptr();
    args.num_options = options.len();
    call!(plugin, PJRT_Client_Create, &mut args)?;
    Ok(TestClient {
        plugin,
        raw: args.client,
    })
}

pub fn client() -> TestClient {
    try_client(&[]).expect("client")
}

impl TestClient {
    pub fn devices(&self) -> Vec<*mut PJRT_Device> {
        let mut args = PJRT_Client_Devices_Args::new();
        args.client = self.raw;
        call!(self.plugin, PJRT_Client_Devices, &mut args).unwrap();
        // SAFETY: `num_devices` pointers owned by the client.
        unsafe { std::slice::from_raw_parts(args.devices, args.num_devices) }.to_vec()
    }

    /// Uploads `data` with the given type, dims and optional byte strides; waits for it.
    pub fn try_buffer(
        &self,
        data: &[u8],
        ty: PJRT_Buffer_Type,
        dims: &[i64],
        byte_strides: Option<&[i64]>,
        semantics: PJRT_HostBufferSemantics,
        device: *mut PJRT_Device,
    ) -> Result<*mut PJRT_Buffer, Failure> {
        let mut args = PJRT_Client_BufferFromHostBuffer_Args::new();
        args.client = self.raw;
        args.data = data.as_ptr().cast();
        args.type_ = ty;
        args.dims = dims.as_ptr();
        args.num_dims = dims.len();
        if let Some(strides) = byte_strides {
            args.byte_strides = strides.as_ptr();
            args.num_byte_strides = strides.len();
        }
        args.host_buffer_semantics = semantics;
        args.device = device;
        call!(self.plugin, PJRT_Client_BufferFromHostBuffer, &mut args)?;
        self.await_event(args.done_with_host_buffer)?;
        Ok(args.buffer)
    }

    pub fn buffer(&self, data: &[u8], ty: PJRT_Buffer_Type, dims: &[i64]) -> *mut PJRT_Buffer {
        self.try_buffer(
            data,
            ty,
            dims,
            None,
            PJRT_HostBufferSemantics_PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
            self.devices()[0],
        )
        .expect("buffer from host")
    }

    pub fn f32_buffer(&self, values: &[f32], dims: &[i64]) -> *mut PJRT_Buffer {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.buffer(&bytes, PJRT_Buffer_Type_PJRT_Buffer_Type_F32, dims)
    }

    /// Awaits and destroys an event.
    pub fn await_event(&self, event: *mut PJRT_Event) -> Result<(), Failure> {
        let mut args = PJRT_Event_Await_Args::new();
        args.event = event;
        let result = call!(self.plugin, PJRT_Event_Await, &mut args);
        let mut destroy = PJRT_Event_Destroy_Args::new();
        destroy.event = event;
        call!(self.plugin, PJRT_Event_Destroy, &mut destroy).unwrap();
        result
    }

    /// Copies a buffer to the host (dense layout) and waits.
    pub fn try_to_host(&self, buffer: *mut PJRT_Buffer) -> Result<Vec<u8>, Failure> {
        let mut args = PJRT_Buffer_ToHostBuffer_Args::new();
        args.src = buffer;
        call!(self.plugin, PJRT_Buffer_ToHostBuffer, &mut args)?;
        let mut out = vec![0u8; args.dst_size];
        args.dst = out.as_mut_ptr().cast::<c_void>();
        call!(self.plugin, PJRT_Buffer_ToHostBuffer, &mut args)?;
        self.await_event(args.event)?;
        Ok(out)
    }

    pub fn to_host_f32(&self, buffer: *mut PJRT_Buffer) -> Vec<f32> {
        self.try_to_host(buffer)
            .unwrap()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    pub fn destroy_buffer(&self, buffer: *mut PJRT_Buffer) {
        let mut args = PJRT_Buffer_Destroy_Args::new();
        args.buffer = buffer;
        call!(self.plugin, PJRT_Buffer_Destroy, &mut args).unwrap();
    }

    /// Compiles StableHLO text with serialized compile options.
    pub fn try_compile(
        &self,
        code: &str,
        options: &[u8],
    ) -> Result<*mut PJRT_LoadedExecutable, Failure> {
        let format = "mlir";
        let mut program = PJRT_Program::new();
        program.code = code.as_ptr().cast_mut().cast();
        program.code_size = code.len();
        program.format = format.as_ptr().cast();
        program.format_size = format.len();
        let mut args = PJRT_Client_Compile_Args::new();
        args.client = self.raw;
        args.program = &program;
        args.compile_options = options.as_ptr().cast();
        args.compile_options_size = options.len();
        call!(self.plugin, PJRT_Client_Compile, &mut args)?;
        Ok(args.executable)
    }

    pub fn compile(&self, code: &str) -> *mut PJRT_LoadedExecutable {
        self.try_compile(code, &[]).expect("compile")
    }

    /// Runs on one device; returns outputs and the completion status.
    pub fn try_execute(
        &self,
        exe: *mut PJRT_LoadedExecutable,
        args_in: &[*mut PJRT_Buffer],
        num_outputs: usize,
        non_donatable: &[i64],
    ) -> Result<(Vec<*mut PJRT_Buffer>, Result<(), Failure>), Failure> {
        let mut options = PJRT_ExecuteOptions::new();
        options.non_donatable_input_indices = non_donatable.as_ptr();
        options.num_non_donatable_input_indices = non_donatable.len();
        let arg_list: *const *mut PJRT_Buffer = args_in.as_ptr();
        let lists = [arg_list];
        let mut outputs = vec![std::ptr::null_mut::<PJRT_Buffer>(); num_outputs.max(1)];
        // Like jaxlib, pass null output lists when there are no outputs.
        let output_lists = if num_outputs == 0 {
            [std::ptr::null_mut()]
        } else {
            [outputs.as_mut_ptr()]
        };
        let mut events = [std::ptr::null_mut::<PJRT_Event>()];
        let mut args = PJRT_LoadedExecutable_Execute_Args::new();
        args.executable = exe;
        args.options = &mut options;
        args.argument_lists = lists.as_ptr();
        args.num_devices = 1;
        args.num_args = args_in.len();
        args.output_lists = output_lists.as_ptr();
        args.device_complete_events = events.as_mut_ptr();
        call!(self.plugin, PJRT_LoadedExecutable_Execute, &mut args)?;
        let status = self.await_event(events[0]);
        outputs.truncate(num_outputs);
        Ok((outputs, status))
    }
}

/// A minimal serialized `xla.CompileOptionsProto` (num_replicas = num_partitions = 1).
pub fn compile_options() -> Vec<u8> {
    use pjrt_sys::protos::xla::{CompileOptionsProto, ExecutableBuildOptionsProto};
    use prost::Message;
    CompileOptionsProto {
        executable_build_options: Some(ExecutableBuildOptionsProto {
            num_replicas: 1,
            num_partitions: 1,
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}
