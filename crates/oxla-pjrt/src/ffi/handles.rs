//! The opaque objects behind PJRT's handle pointers. Each owns the C-facing data it hands out
//! (strings, dims arrays, pointer lists), so that data lives as long as the handle.

use oxla_client::{Buffer, Client, Device, Event, Executable, LoadedExecutable, Memory};
use pjrt_sys::*;

/// Behind `PJRT_DeviceDescription*`.
pub(crate) struct DescriptionHandle {
    pub(crate) id: i32,
    pub(crate) process_index: i32,
    pub(crate) kind: String,
    pub(crate) debug_string: String,
    pub(crate) to_string: String,
    pub(crate) attributes: Vec<PJRT_NamedValue>,
}

impl DescriptionHandle {
    pub(crate) fn new(device: &Device) -> DescriptionHandle {
        DescriptionHandle {
            id: device.id(),
            process_index: device.process_index(),
            kind: device.kind().to_string(),
            debug_string: device.debug_string(),
            to_string: device.to_display_string(),
            attributes: Vec::new(),
        }
    }
}

/// Behind `PJRT_Device*`; owned by its client handle.
pub(crate) struct DeviceHandle {
    pub(crate) device: Device,
    pub(crate) description: DescriptionHandle,
    pub(crate) memories: Vec<*mut PJRT_Memory>,
}

/// Behind `PJRT_Memory*`; owned by its client handle.
pub(crate) struct MemoryHandle {
    pub(crate) memory: Memory,
    pub(crate) kind: String,
    pub(crate) to_string: String,
    pub(crate) debug_string: String,
    pub(crate) devices: Vec<*mut PJRT_Device>,
}

/// Behind `PJRT_TopologyDescription*`.
pub(crate) struct TopologyHandle {
    pub(crate) platform_name: String,
    pub(crate) platform_version: String,
    /// Descriptions this topology owns (empty for a client's topology, which points at its
    /// devices' descriptions).
    // Boxed so the addresses handed to callers stay fixed while the list is built.
    #[allow(clippy::vec_box)]
    pub(crate) owned: Vec<Box<DescriptionHandle>>,
    pub(crate) descriptions: Vec<*mut PJRT_DeviceDescription>,
    pub(crate) attributes: Vec<PJRT_NamedValue>,
}

/// Behind `PJRT_Client*`.
pub(crate) struct ClientHandle {
    pub(crate) client: Client,
    pub(crate) platform_version: String,
    // Boxed so the addresses handed to callers stay fixed while the list is built.
    #[allow(clippy::vec_box)]
    pub(crate) devices: Vec<Box<DeviceHandle>>,
    pub(crate) device_ptrs: Vec<*mut PJRT_Device>,
    // Boxed so the addresses handed to callers stay fixed while the list is built.
    #[allow(clippy::vec_box)]
    pub(crate) memories: Vec<Box<MemoryHandle>>,
    pub(crate) memory_ptrs: Vec<*mut PJRT_Memory>,
    pub(crate) topology: TopologyHandle,
}

impl ClientHandle {
    /// Builds the handle with all its devices and memories, linked to each other.
    pub(crate) fn new(client: Client) -> Box<ClientHandle> {
        let platform_version = client.platform_version();
        let mut handle = Box::new(ClientHandle {
            client: client.clone(),
            platform_version: platform_version.clone(),
            devices: Vec::new(),
            device_ptrs: Vec::new(),
            memories: Vec::new(),
            memory_ptrs: Vec::new(),
            topology: TopologyHandle {
                platform_name: client.platform_name().to_string(),
                platform_version,
                owned: Vec::new(),
                descriptions: Vec::new(),
                attributes: Vec::new(),
            },
        });
        for device in client.devices() {
            let mut device_handle = Box::new(DeviceHandle {
                device: device.clone(),
                description: DescriptionHandle::new(device),
                memories: Vec::new(),
            });
            handle
                .topology
                .descriptions
                .push((&mut device_handle.description as *mut DescriptionHandle).cast());
            handle
                .device_ptrs
                .push((&mut *device_handle as *mut DeviceHandle).cast());
            handle.devices.push(device_handle);
        }
        for (device_idx, device) in client.devices().iter().enumerate() {
            let memory = device.default_memory().clone();
            let mut memory_handle = Box::new(MemoryHandle {
                kind: memory.kind().to_string(),
                to_string: memory.to_display_string(),
                debug_string: memory.debug_string(),
                memory,
                devices: vec![handle.device_ptrs[device_idx]],
            });
            let memory_ptr: *mut PJRT_Memory = (&mut *memory_handle as *mut MemoryHandle).cast();
            handle.devices[device_idx].memories.push(memory_ptr);
            handle.memory_ptrs.push(memory_ptr);
            handle.memories.push(memory_handle);
        }
        handle
    }

    /// The handle pointer of the device with id `id`.
    pub(crate) fn device_ptr(&self, id: i32) -> *mut PJRT_Device {
        usize::try_from(id)
            .ok()
            .and_then(|idx| self.device_ptrs.get(idx).copied())
            .unwrap_or(std::ptr::null_mut())
    }

    /// The handle pointer of the memory with id `id`.
    pub(crate) fn memory_ptr(&self, id: i32) -> *mut PJRT_Memory {
        usize::try_from(id)
            .ok()
            .and_then(|idx| self.memory_ptrs.get(idx).copied())
            .unwrap_or(std::ptr::null_mut())
    }

    /// Wraps `buffer` in a handle pointing at this client's device and memory handles.
    pub(crate) fn buffer_handle(&self, buffer: Buffer) -> Box<BufferHandle> {
        self.new_handle(buffer, false)
    }

    /// Wraps the empty buffer of a token output: PJRT sees element type `TOKEN` and no
    /// dimensions, and a token argument hands the same buffer back.
    pub(crate) fn token_handle(&self, buffer: Buffer) -> Box<BufferHandle> {
        self.new_handle(buffer, true)
    }

    /// Wraps `buffer`, a copy of the buffer behind `like`: a token's copy is a token.
    pub(crate) fn copy_handle(&self, like: &BufferHandle, buffer: Buffer) -> Box<BufferHandle> {
        self.new_handle(buffer, like.token)
    }

    fn new_handle(&self, buffer: Buffer, token: bool) -> Box<BufferHandle> {
        let dims = if token {
            Vec::new()
        } else {
            buffer.dims().to_vec()
        };
        let minor_to_major = (0..dims.len() as i64).rev().collect();
        Box::new(BufferHandle {
            device: self.device_ptr(buffer.device().id()),
            memory: self.memory_ptr(buffer.memory().id()),
            client: self,
            buffer,
            token,
            dims,
            minor_to_major,
            dynamic_dims: Vec::new(),
        })
    }
}

/// Behind `PJRT_Buffer*`.
pub(crate) struct BufferHandle {
    pub(crate) buffer: Buffer,
    /// A token (an executable's `!stablehlo.token` output or a copy of one): it holds an
    /// empty `pred` buffer, and PJRT sees element type `TOKEN` with no dimensions.
    pub(crate) token: bool,
    pub(crate) dims: Vec<i64>,
    pub(crate) minor_to_major: Vec<i64>,
    pub(crate) dynamic_dims: Vec<usize>,
    pub(crate) device: *mut PJRT_Device,
    pub(crate) memory: *mut PJRT_Memory,
    pub(crate) client: *const ClientHandle,
}

/// Behind `PJRT_Event*`.
pub(crate) struct EventHandle {
    pub(crate) event: Event,
}

/// Behind `PJRT_Executable*`.
pub(crate) struct ExecutableHandle {
    pub(crate) executable: Executable,
    pub(crate) output_types: Vec<PJRT_Buffer_Type>,
    pub(crate) output_dims: Vec<i64>,
    pub(crate) output_dim_sizes: Vec<usize>,
    pub(crate) memory_kinds: Vec<*const std::ffi::c_char>,
    pub(crate) memory_kind_sizes: Vec<usize>,
    pub(crate) cost_properties: Vec<PJRT_NamedValue>,
    /// The signature HLO `PJRT_Executable_OptimizedProgram` returns, made on the first call
    /// (jaxlib asks for it several times per compile: size, bytes, once per layout query).
    pub(crate) signature_hlo: std::sync::OnceLock<Option<Vec<u8>>>,
}

/// Behind `PJRT_LoadedExecutable*`.
pub(crate) struct LoadedExecutableHandle {
    pub(crate) loaded: LoadedExecutable,
    pub(crate) client: *const ClientHandle,
    pub(crate) device_ptrs: Vec<*mut PJRT_Device>,
}

/// Behind `PJRT_SerializedExecutable*`.
pub(crate) struct SerializedHandle {
    pub(crate) bytes: Vec<u8>,
}
