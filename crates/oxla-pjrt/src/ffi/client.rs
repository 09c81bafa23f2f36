//! Plugin, client, device, device-description, memory and topology entry points.

use super::convert;
use super::entry::entry_point;
use super::handles::*;
use oxla_client::{Client, ClientError, ClientOptions, FlagValue, Result};
use pjrt_sys::*;
use std::ffi::c_char;
use std::sync::OnceLock;

/// Writes a borrowed string into a `(ptr, len)` out pair.
fn out_str(s: &str) -> (*const c_char, usize) {
    (s.as_ptr().cast(), s.len())
}

/// A named value borrowing `name` and an int64 list; both must outlive the value.
fn named_int64_list(name: &'static str, values: &'static [i64]) -> PJRT_NamedValue {
    let mut value = PJRT_NamedValue::new();
    value.name = name.as_ptr().cast();
    value.name_size = name.len();
    value.type_ = PJRT_NamedValue_Type_PJRT_NamedValue_kInt64List;
    value.__bindgen_anon_1.int64_array_value = values.as_ptr();
    value.value_size = values.len();
    value
}

fn named_bool(name: &'static str, flag: bool) -> PJRT_NamedValue {
    let mut value = PJRT_NamedValue::new();
    value.name = name.as_ptr().cast();
    value.name_size = name.len();
    value.type_ = PJRT_NamedValue_Type_PJRT_NamedValue_kBool;
    value.__bindgen_anon_1.bool_value = flag;
    value.value_size = 1;
    value
}

/// The plugin attributes, built once and kept for the life of the process.
struct PluginAttributes(Vec<PJRT_NamedValue>);

// SAFETY: the named values only point at `'static` data and are never mutated after creation.
unsafe impl Send for PluginAttributes {}
// SAFETY: as above; shared reads of immutable data are fine from any thread.
unsafe impl Sync for PluginAttributes {}

static CURRENT_VERSION: OnceLock<[i64; 3]> = OnceLock::new();
static MINIMUM_VERSION: OnceLock<[i64; 3]> = OnceLock::new();
static ATTRIBUTES: OnceLock<PluginAttributes> = OnceLock::new();

fn version_i64(version: [u32; 3]) -> [i64; 3] {
    version.map(i64::from)
}

fn plugin_attributes() -> &'static [PJRT_NamedValue] {
    &ATTRIBUTES
        .get_or_init(|| {
            let current =
                CURRENT_VERSION.get_or_init(|| version_i64(oxla_client::STABLEHLO_CURRENT_VERSION));
            let minimum =
                MINIMUM_VERSION.get_or_init(|| version_i64(oxla_client::STABLEHLO_MINIMUM_VERSION));
            PluginAttributes(vec![
                named_int64_list("stablehlo_current_version", current),
                named_int64_list("stablehlo_minimum_version", minimum),
                named_bool("supports_executable_serialization", true),
            ])
        })
        .0
}

entry_point!(
    PJRT_Plugin_Initialize,
    PJRT_Plugin_Initialize_Args,
    |args| {
        let _ = args;
        plugin_attributes();
        Ok(())
    }
);

entry_point!(
    PJRT_Plugin_Attributes,
    PJRT_Plugin_Attributes_Args,
    |args| {
        let attributes = plugin_attributes();
        args.attributes = attributes.as_ptr();
        args.num_attributes = attributes.len();
        Ok(())
    }
);

/// Reads the client create options (every oxla flag, e.g. `num_devices` as int64 or
/// `dump_dir` as a string) over the environment's defaults (`OXLA_NUM_DEVICES`, `OXLA_FLAGS`).
fn client_options(values: &[PJRT_NamedValue]) -> Result<ClientOptions> {
    let mut options = ClientOptions::from_env()?;
    for value in values {
        // SAFETY: PJRT named values carry `name_size` bytes at `name`.
        let name = unsafe { convert::str(value.name, value.name_size, "option name") }?;
        let flag_value = match value.type_ {
            PJRT_NamedValue_Type_PJRT_NamedValue_kInt64 => {
                // SAFETY: the type tag says the union holds `int64_value`.
                let n = unsafe { value.__bindgen_anon_1.int64_value };
                FlagValue::Int(n)
            }
            PJRT_NamedValue_Type_PJRT_NamedValue_kBool => {
                // SAFETY: the type tag says the union holds `bool_value`.
                let b = unsafe { value.__bindgen_anon_1.bool_value };
                FlagValue::Bool(b)
            }
            PJRT_NamedValue_Type_PJRT_NamedValue_kString => {
                // SAFETY: the type tag says the union holds `string_value`, `value_size` bytes.
                let text = unsafe {
                    convert::str(
                        value.__bindgen_anon_1.string_value,
                        value.value_size,
                        "option value",
                    )
                }?;
                FlagValue::Str(text.to_string())
            }
            _ => {
                return Err(ClientError::InvalidArgument(format!(
                    "client option {name:?} must be an int64, bool or string; valid options: {}",
                    oxla_client::flags::valid_flags_list()
                )))
            }
        };
        options.set_flag(name, &flag_value, "client create options")?;
    }
    Ok(options)
}

entry_point!(PJRT_Client_Create, PJRT_Client_Create_Args, |args| {
    // SAFETY: the caller passes `num_options` named values at `create_options`.
    let values =
        unsafe { convert::slice(args.create_options, args.num_options, "create_options") }?;
    let options = client_options(values)?;
    let client = Client::new(&options)?;
    args.client = Box::into_raw(ClientHandle::new(client)).cast();
    Ok(())
});

entry_point!(PJRT_Client_Destroy, PJRT_Client_Destroy_Args, |args| {
    if !args.client.is_null() {
        // SAFETY: `client` came from PJRT_Client_Create and is destroyed once.
        drop(unsafe { Box::from_raw(args.client.cast::<ClientHandle>()) });
    }
    Ok(())
});

/// The client handle behind `ptr`.
pub(crate) fn client<'a>(ptr: *const PJRT_Client) -> Result<&'a ClientHandle> {
    // SAFETY: PJRT callers pass client pointers this plugin created and has not destroyed.
    unsafe { convert::handle(ptr, "client") }
}

/// The device handle behind `ptr`.
pub(crate) fn device<'a>(ptr: *const PJRT_Device) -> Result<&'a DeviceHandle> {
    // SAFETY: PJRT callers pass device pointers owned by a live client of this plugin.
    unsafe { convert::handle(ptr, "device") }
}

/// The memory handle behind `ptr`.
pub(crate) fn memory<'a>(ptr: *const PJRT_Memory) -> Result<&'a MemoryHandle> {
    // SAFETY: PJRT callers pass memory pointers owned by a live client of this plugin.
    unsafe { convert::handle(ptr, "memory") }
}

fn description<'a>(ptr: *const PJRT_DeviceDescription) -> Result<&'a DescriptionHandle> {
    // SAFETY: PJRT callers pass descriptions owned by a live device or topology.
    unsafe { convert::handle(ptr, "device_description") }
}

fn topology<'a>(ptr: *const PJRT_TopologyDescription) -> Result<&'a TopologyHandle> {
    // SAFETY: PJRT callers pass topologies owned by a live client or created by this plugin.
    unsafe { convert::handle(ptr, "topology") }
}

entry_point!(
    PJRT_Client_PlatformName,
    PJRT_Client_PlatformName_Args,
    |args| {
        let handle = client(args.client)?;
        (args.platform_name, args.platform_name_size) = out_str(handle.client.platform_name());
        Ok(())
    }
);

entry_point!(
    PJRT_Client_ProcessIndex,
    PJRT_Client_ProcessIndex_Args,
    |args| {
        args.process_index = client(args.client)?.client.process_index();
        Ok(())
    }
);

entry_point!(
    PJRT_Client_PlatformVersion,
    PJRT_Client_PlatformVersion_Args,
    |args| {
        let handle = client(args.client)?;
        (args.platform_version, args.platform_version_size) = out_str(&handle.platform_version);
        Ok(())
    }
);

entry_point!(
    PJRT_Client_TopologyDescription,
    PJRT_Client_TopologyDescription_Args,
    |args| {
        let handle = client(args.client)?;
        args.topology = (&handle.topology as *const TopologyHandle)
            .cast_mut()
            .cast();
        Ok(())
    }
);

entry_point!(PJRT_Client_Devices, PJRT_Client_Devices_Args, |args| {
    let handle = client(args.client)?;
    args.devices = handle.device_ptrs.as_ptr();
    args.num_devices = handle.device_ptrs.len();
    Ok(())
});

entry_point!(
    PJRT_Client_AddressableDevices,
    PJRT_Client_AddressableDevices_Args,
    |args| {
        let handle = client(args.client)?;
        args.addressable_devices = handle.device_ptrs.as_ptr();
        args.num_addressable_devices = handle.device_ptrs.len();
        Ok(())
    }
);

entry_point!(
    PJRT_Client_LookupDevice,
    PJRT_Client_LookupDevice_Args,
    |args| {
        let handle = client(args.client)?;
        let device = handle.client.lookup_device(i64::from(args.id))?;
        args.device = handle.device_ptr(device.id());
        Ok(())
    }
);

entry_point!(
    PJRT_Client_LookupAddressableDevice,
    PJRT_Client_LookupAddressableDevice_Args,
    |args| {
        let handle = client(args.client)?;
        let device = handle
            .client
            .lookup_addressable_device(i64::from(args.local_hardware_id))?;
        args.addressable_device = handle.device_ptr(device.id());
        Ok(())
    }
);

entry_point!(
    PJRT_Client_AddressableMemories,
    PJRT_Client_AddressableMemories_Args,
    |args| {
        let handle = client(args.client)?;
        args.addressable_memories = handle.memory_ptrs.as_ptr();
        args.num_addressable_memories = handle.memory_ptrs.len();
        Ok(())
    }
);

entry_point!(
    PJRT_Client_DefaultDeviceAssignment,
    PJRT_Client_DefaultDeviceAssignment_Args,
    |args| {
        let handle = client(args.client)?;
        let (replicas, partitions) = match (
            usize::try_from(args.num_replicas),
            usize::try_from(args.num_partitions),
        ) {
            (Ok(r), Ok(p)) => (r, p),
            _ => {
                return Err(ClientError::InvalidArgument(format!(
                    "negative replica ({}) or partition ({}) count",
                    args.num_replicas, args.num_partitions
                )))
            }
        };
        let assignment = handle
            .client
            .default_device_assignment(replicas, partitions)?;
        let needed = replicas * partitions;
        if args.default_assignment_size < needed {
            return Err(ClientError::InvalidArgument(format!(
                "default_assignment_size {} is smaller than {needed}",
                args.default_assignment_size
            )));
        }
        // SAFETY: the caller owns `default_assignment_size` ints at `default_assignment`.
        let out = unsafe {
            convert::bytes_mut(
                args.default_assignment.cast(),
                needed * std::mem::size_of::<i32>(),
                "default_assignment",
            )
        }?;
        for (chunk, id) in out.chunks_exact_mut(4).zip(assignment.iter().flatten()) {
            chunk.copy_from_slice(&id.to_ne_bytes());
        }
        Ok(())
    }
);

entry_point!(
    PJRT_DeviceDescription_Id,
    PJRT_DeviceDescription_Id_Args,
    |args| {
        args.id = description(args.device_description)?.id;
        Ok(())
    }
);

entry_point!(
    PJRT_DeviceDescription_ProcessIndex,
    PJRT_DeviceDescription_ProcessIndex_Args,
    |args| {
        args.process_index = description(args.device_description)?.process_index;
        Ok(())
    }
);

entry_point!(
    PJRT_DeviceDescription_Attributes,
    PJRT_DeviceDescription_Attributes_Args,
    |args| {
        let desc = description(args.device_description)?;
        args.attributes = desc.attributes.as_ptr();
        args.num_attributes = desc.attributes.len();
        Ok(())
    }
);

entry_point!(
    PJRT_DeviceDescription_Kind,
    PJRT_DeviceDescription_Kind_Args,
    |args| {
        let desc = description(args.device_description)?;
        (args.device_kind, args.device_kind_size) = out_str(&desc.kind);
        Ok(())
    }
);

entry_point!(
    PJRT_DeviceDescription_DebugString,
    PJRT_DeviceDescription_DebugString_Args,
    |args| {
        let desc = description(args.device_description)?;
        (args.debug_string, args.debug_string_size) = out_str(&desc.debug_string);
        Ok(())
    }
);

entry_point!(
    PJRT_DeviceDescription_ToString,
    PJRT_DeviceDescription_ToString_Args,
    |args| {
        let desc = description(args.device_description)?;
        (args.to_string, args.to_string_size) = out_str(&desc.to_string);
        Ok(())
    }
);

entry_point!(
    PJRT_Device_GetDescription,
    PJRT_Device_GetDescription_Args,
    |args| {
        let handle = device(args.device)?;
        args.device_description = (&handle.description as *const DescriptionHandle)
            .cast_mut()
            .cast();
        Ok(())
    }
);

entry_point!(
    PJRT_Device_IsAddressable,
    PJRT_Device_IsAddressable_Args,
    |args| {
        args.is_addressable = device(args.device)?.device.is_addressable();
        Ok(())
    }
);

entry_point!(
    PJRT_Device_LocalHardwareId,
    PJRT_Device_LocalHardwareId_Args,
    |args| {
        args.local_hardware_id = device(args.device)?.device.local_hardware_id();
        Ok(())
    }
);

entry_point!(
    PJRT_Device_AddressableMemories,
    PJRT_Device_AddressableMemories_Args,
    |args| {
        let handle = device(args.device)?;
        args.memories = handle.memories.as_ptr();
        args.num_memories = handle.memories.len();
        Ok(())
    }
);

entry_point!(
    PJRT_Device_DefaultMemory,
    PJRT_Device_DefaultMemory_Args,
    |args| {
        let handle = device(args.device)?;
        args.memory = handle.memories.first().copied().ok_or_else(|| {
            ClientError::Internal(format!("device {} has no memory", handle.device.id()))
        })?;
        Ok(())
    }
);

entry_point!(
    PJRT_Device_MemoryStats,
    PJRT_Device_MemoryStats_Args,
    |args| {
        let _ = device(args.device)?;
        Err(ClientError::Unimplemented(
            "PJRT_Device_MemoryStats: oxla does not track device memory statistics".to_string(),
        ))
    }
);

entry_point!(PJRT_Memory_Id, PJRT_Memory_Id_Args, |args| {
    args.id = memory(args.memory)?.memory.id();
    Ok(())
});

entry_point!(PJRT_Memory_Kind, PJRT_Memory_Kind_Args, |args| {
    let handle = memory(args.memory)?;
    (args.kind, args.kind_size) = out_str(&handle.kind);
    Ok(())
});

entry_point!(PJRT_Memory_Kind_Id, PJRT_Memory_Kind_Id_Args, |args| {
    args.kind_id = memory(args.memory)?.memory.kind_id();
    Ok(())
});

entry_point!(
    PJRT_Memory_DebugString,
    PJRT_Memory_DebugString_Args,
    |args| {
        let handle = memory(args.memory)?;
        (args.debug_string, args.debug_string_size) = out_str(&handle.debug_string);
        Ok(())
    }
);

entry_point!(PJRT_Memory_ToString, PJRT_Memory_ToString_Args, |args| {
    let handle = memory(args.memory)?;
    (args.to_string, args.to_string_size) = out_str(&handle.to_string);
    Ok(())
});

entry_point!(
    PJRT_Memory_AddressableByDevices,
    PJRT_Memory_AddressableByDevices_Args,
    |args| {
        let handle = memory(args.memory)?;
        args.devices = handle.devices.as_ptr();
        args.num_devices = handle.devices.len();
        Ok(())
    }
);

entry_point!(
    PJRT_TopologyDescription_Create,
    PJRT_TopologyDescription_Create_Args,
    |args| {
        // SAFETY: the caller passes `num_options` named values at `create_options`.
        let values =
            unsafe { convert::slice(args.create_options, args.num_options, "create_options") }?;
        let options = client_options(values)?;
        // A topology needs descriptions only; a short-lived client provides them.
        let client = Client::new(&ClientOptions {
            num_threads: Some(1),
            ..options
        })?;
        let mut owned: Vec<Box<DescriptionHandle>> = client
            .devices()
            .iter()
            .map(|d| Box::new(DescriptionHandle::new(d)))
            .collect();
        let descriptions = owned
            .iter_mut()
            .map(|d| (&mut **d as *mut DescriptionHandle).cast())
            .collect();
        let handle = Box::new(TopologyHandle {
            platform_name: client.platform_name().to_string(),
            platform_version: client.platform_version(),
            owned,
            descriptions,
            attributes: Vec::new(),
        });
        args.topology = Box::into_raw(handle).cast();
        Ok(())
    }
);

entry_point!(
    PJRT_TopologyDescription_Destroy,
    PJRT_TopologyDescription_Destroy_Args,
    |args| {
        if !args.topology.is_null() {
            // SAFETY: only topologies from PJRT_TopologyDescription_Create may be destroyed; a
            // client's own topology is owned by the client.
            drop(unsafe { Box::from_raw(args.topology.cast::<TopologyHandle>()) });
        }
        Ok(())
    }
);

entry_point!(
    PJRT_TopologyDescription_PlatformName,
    PJRT_TopologyDescription_PlatformName_Args,
    |args| {
        let handle = topology(args.topology)?;
        (args.platform_name, args.platform_name_size) = out_str(&handle.platform_name);
        Ok(())
    }
);

entry_point!(
    PJRT_TopologyDescription_PlatformVersion,
    PJRT_TopologyDescription_PlatformVersion_Args,
    |args| {
        let handle = topology(args.topology)?;
        (args.platform_version, args.platform_version_size) = out_str(&handle.platform_version);
        Ok(())
    }
);

entry_point!(
    PJRT_TopologyDescription_GetDeviceDescriptions,
    PJRT_TopologyDescription_GetDeviceDescriptions_Args,
    |args| {
        let handle = topology(args.topology)?;
        let _ = handle.owned.len();
        args.descriptions = handle.descriptions.as_ptr();
        args.num_descriptions = handle.descriptions.len();
        Ok(())
    }
);

entry_point!(
    PJRT_TopologyDescription_Attributes,
    PJRT_TopologyDescription_Attributes_Args,
    |args| {
        let handle = topology(args.topology)?;
        args.attributes = handle.attributes.as_ptr();
        args.num_attributes = handle.attributes.len();
        Ok(())
    }
);
