//! The PJRT C API edge: the only module with `extern "C"`, raw pointers and PJRT names.
//!
//! [`api`] builds the `PJRT_Api` table with every slot filled. Each entry point goes through
//! [`entry::run`], which checks `args` and `args->struct_size`, runs the safe body under
//! `catch_unwind`, and converts errors and panics into owned `PJRT_Error`s.
//! PJRT's own spellings are kept (entry points, enum constants), so a grep lines up with the
//! header.

#![allow(non_upper_case_globals, non_snake_case)]

mod buffer;
mod client;
mod convert;
mod entry;
mod error;
mod event;
mod executable;
mod handles;
mod host_callback;
mod inspect_sharding;
mod lent_lapack;
mod types;
mod unimplemented;

use pjrt_sys::*;
use std::sync::OnceLock;

/// The API table, built once.
struct Api(PJRT_Api);

// SAFETY: the table holds only function pointers and a null extension pointer, and is never
// mutated after it is built.
unsafe impl Send for Api {}
// SAFETY: as above.
unsafe impl Sync for Api {}

static API: OnceLock<Api> = OnceLock::new();

/// The `PJRT_Api` table this plugin exports.
pub fn api() -> &'static PJRT_Api {
    &API.get_or_init(|| Api(build_api())).0
}

fn build_api() -> PJRT_Api {
    let mut version = PJRT_Api_Version::new();
    version.major_version = PJRT_API_MAJOR as i32;
    version.minor_version = PJRT_API_MINOR as i32;
    PJRT_Api {
        // Every slot of this header's table is filled, including the ones after
        // PJRT_Api_STRUCT_SIZE's nominal last field.
        struct_size: std::mem::size_of::<PJRT_Api>(),
        extension_start: std::ptr::null_mut(),
        pjrt_api_version: version,
        PJRT_Error_Destroy: Some(error::PJRT_Error_Destroy),
        PJRT_Error_Message: Some(error::PJRT_Error_Message),
        PJRT_Error_GetCode: Some(error::PJRT_Error_GetCode),
        PJRT_Plugin_Initialize: Some(client::PJRT_Plugin_Initialize),
        PJRT_Plugin_Attributes: Some(client::PJRT_Plugin_Attributes),
        PJRT_Event_Destroy: Some(event::PJRT_Event_Destroy),
        PJRT_Event_IsReady: Some(event::PJRT_Event_IsReady),
        PJRT_Event_Error: Some(event::PJRT_Event_Error),
        PJRT_Event_Await: Some(event::PJRT_Event_Await),
        PJRT_Event_OnReady: Some(event::PJRT_Event_OnReady),
        PJRT_Client_Create: Some(client::PJRT_Client_Create),
        PJRT_Client_Destroy: Some(client::PJRT_Client_Destroy),
        PJRT_Client_PlatformName: Some(client::PJRT_Client_PlatformName),
        PJRT_Client_ProcessIndex: Some(client::PJRT_Client_ProcessIndex),
        PJRT_Client_PlatformVersion: Some(client::PJRT_Client_PlatformVersion),
        PJRT_Client_Devices: Some(client::PJRT_Client_Devices),
        PJRT_Client_AddressableDevices: Some(client::PJRT_Client_AddressableDevices),
        PJRT_Client_LookupDevice: Some(client::PJRT_Client_LookupDevice),
        PJRT_Client_LookupAddressableDevice: Some(client::PJRT_Client_LookupAddressableDevice),
        PJRT_Client_AddressableMemories: Some(client::PJRT_Client_AddressableMemories),
        PJRT_Client_Compile: Some(executable::PJRT_Client_Compile),
        PJRT_Client_DefaultDeviceAssignment: Some(client::PJRT_Client_DefaultDeviceAssignment),
        PJRT_Client_BufferFromHostBuffer: Some(buffer::PJRT_Client_BufferFromHostBuffer),
        PJRT_DeviceDescription_Id: Some(client::PJRT_DeviceDescription_Id),
        PJRT_DeviceDescription_ProcessIndex: Some(client::PJRT_DeviceDescription_ProcessIndex),
        PJRT_DeviceDescription_Attributes: Some(client::PJRT_DeviceDescription_Attributes),
        PJRT_DeviceDescription_Kind: Some(client::PJRT_DeviceDescription_Kind),
        PJRT_DeviceDescription_DebugString: Some(client::PJRT_DeviceDescription_DebugString),
        PJRT_DeviceDescription_ToString: Some(client::PJRT_DeviceDescription_ToString),
        PJRT_Device_GetDescription: Some(client::PJRT_Device_GetDescription),
        PJRT_Device_IsAddressable: Some(client::PJRT_Device_IsAddressable),
        PJRT_Device_LocalHardwareId: Some(client::PJRT_Device_LocalHardwareId),
        PJRT_Device_AddressableMemories: Some(client::PJRT_Device_AddressableMemories),
        PJRT_Device_DefaultMemory: Some(client::PJRT_Device_DefaultMemory),
        PJRT_Device_MemoryStats: Some(client::PJRT_Device_MemoryStats),
        PJRT_Memory_Id: Some(client::PJRT_Memory_Id),
        PJRT_Memory_Kind: Some(client::PJRT_Memory_Kind),
        PJRT_Memory_DebugString: Some(client::PJRT_Memory_DebugString),
        PJRT_Memory_ToString: Some(client::PJRT_Memory_ToString),
        PJRT_Memory_AddressableByDevices: Some(client::PJRT_Memory_AddressableByDevices),
        PJRT_Executable_Destroy: Some(executable::PJRT_Executable_Destroy),
        PJRT_Executable_Name: Some(executable::PJRT_Executable_Name),
        PJRT_Executable_NumReplicas: Some(executable::PJRT_Executable_NumReplicas),
        PJRT_Executable_NumPartitions: Some(executable::PJRT_Executable_NumPartitions),
        PJRT_Executable_NumOutputs: Some(executable::PJRT_Executable_NumOutputs),
        PJRT_Executable_SizeOfGeneratedCodeInBytes: Some(
            executable::PJRT_Executable_SizeOfGeneratedCodeInBytes,
        ),
        PJRT_Executable_GetCostAnalysis: Some(executable::PJRT_Executable_GetCostAnalysis),
        PJRT_Executable_OutputMemoryKinds: Some(executable::PJRT_Executable_OutputMemoryKinds),
        PJRT_Executable_OptimizedProgram: Some(executable::PJRT_Executable_OptimizedProgram),
        PJRT_Executable_Serialize: Some(executable::PJRT_Executable_Serialize),
        PJRT_LoadedExecutable_Destroy: Some(executable::PJRT_LoadedExecutable_Destroy),
        PJRT_LoadedExecutable_GetExecutable: Some(executable::PJRT_LoadedExecutable_GetExecutable),
        PJRT_LoadedExecutable_AddressableDevices: Some(
            executable::PJRT_LoadedExecutable_AddressableDevices,
        ),
        PJRT_LoadedExecutable_Delete: Some(executable::PJRT_LoadedExecutable_Delete),
        PJRT_LoadedExecutable_IsDeleted: Some(executable::PJRT_LoadedExecutable_IsDeleted),
        PJRT_LoadedExecutable_Execute: Some(executable::PJRT_LoadedExecutable_Execute),
        PJRT_Executable_DeserializeAndLoad: Some(executable::PJRT_Executable_DeserializeAndLoad),
        PJRT_LoadedExecutable_Fingerprint: Some(executable::PJRT_LoadedExecutable_Fingerprint),
        PJRT_Buffer_Destroy: Some(buffer::PJRT_Buffer_Destroy),
        PJRT_Buffer_ElementType: Some(buffer::PJRT_Buffer_ElementType),
        PJRT_Buffer_Dimensions: Some(buffer::PJRT_Buffer_Dimensions),
        PJRT_Buffer_UnpaddedDimensions: Some(buffer::PJRT_Buffer_UnpaddedDimensions),
        PJRT_Buffer_DynamicDimensionIndices: Some(buffer::PJRT_Buffer_DynamicDimensionIndices),
        PJRT_Buffer_GetMemoryLayout: Some(buffer::PJRT_Buffer_GetMemoryLayout),
        PJRT_Buffer_OnDeviceSizeInBytes: Some(buffer::PJRT_Buffer_OnDeviceSizeInBytes),
        PJRT_Buffer_Device: Some(buffer::PJRT_Buffer_Device),
        PJRT_Buffer_Memory: Some(buffer::PJRT_Buffer_Memory),
        PJRT_Buffer_Delete: Some(buffer::PJRT_Buffer_Delete),
        PJRT_Buffer_IsDeleted: Some(buffer::PJRT_Buffer_IsDeleted),
        PJRT_Buffer_CopyToDevice: Some(buffer::PJRT_Buffer_CopyToDevice),
        PJRT_Buffer_ToHostBuffer: Some(buffer::PJRT_Buffer_ToHostBuffer),
        PJRT_Buffer_IsOnCpu: Some(buffer::PJRT_Buffer_IsOnCpu),
        PJRT_Buffer_ReadyEvent: Some(buffer::PJRT_Buffer_ReadyEvent),
        PJRT_Buffer_UnsafePointer: Some(buffer::PJRT_Buffer_UnsafePointer),
        PJRT_Buffer_IncreaseExternalReferenceCount: Some(
            buffer::PJRT_Buffer_IncreaseExternalReferenceCount,
        ),
        PJRT_Buffer_DecreaseExternalReferenceCount: Some(
            buffer::PJRT_Buffer_DecreaseExternalReferenceCount,
        ),
        PJRT_Buffer_OpaqueDeviceMemoryDataPointer: Some(
            buffer::PJRT_Buffer_OpaqueDeviceMemoryDataPointer,
        ),
        PJRT_CopyToDeviceStream_Destroy: Some(unimplemented::PJRT_CopyToDeviceStream_Destroy),
        PJRT_CopyToDeviceStream_AddChunk: Some(unimplemented::PJRT_CopyToDeviceStream_AddChunk),
        PJRT_CopyToDeviceStream_TotalBytes: Some(unimplemented::PJRT_CopyToDeviceStream_TotalBytes),
        PJRT_CopyToDeviceStream_GranuleSize: Some(
            unimplemented::PJRT_CopyToDeviceStream_GranuleSize,
        ),
        PJRT_CopyToDeviceStream_CurrentBytes: Some(
            unimplemented::PJRT_CopyToDeviceStream_CurrentBytes,
        ),
        PJRT_TopologyDescription_Create: Some(client::PJRT_TopologyDescription_Create),
        PJRT_TopologyDescription_Destroy: Some(client::PJRT_TopologyDescription_Destroy),
        PJRT_TopologyDescription_PlatformName: Some(client::PJRT_TopologyDescription_PlatformName),
        PJRT_TopologyDescription_PlatformVersion: Some(
            client::PJRT_TopologyDescription_PlatformVersion,
        ),
        PJRT_TopologyDescription_GetDeviceDescriptions: Some(
            client::PJRT_TopologyDescription_GetDeviceDescriptions,
        ),
        PJRT_TopologyDescription_Serialize: Some(unimplemented::PJRT_TopologyDescription_Serialize),
        PJRT_TopologyDescription_Attributes: Some(client::PJRT_TopologyDescription_Attributes),
        PJRT_Compile: Some(executable::PJRT_Compile),
        PJRT_Executable_OutputElementTypes: Some(executable::PJRT_Executable_OutputElementTypes),
        PJRT_Executable_OutputDimensions: Some(executable::PJRT_Executable_OutputDimensions),
        PJRT_Buffer_CopyToMemory: Some(buffer::PJRT_Buffer_CopyToMemory),
        PJRT_Client_CreateViewOfDeviceBuffer: Some(
            unimplemented::PJRT_Client_CreateViewOfDeviceBuffer,
        ),
        PJRT_Executable_Fingerprint: Some(executable::PJRT_Executable_Fingerprint),
        PJRT_Client_TopologyDescription: Some(client::PJRT_Client_TopologyDescription),
        PJRT_Executable_GetCompiledMemoryStats: Some(
            executable::PJRT_Executable_GetCompiledMemoryStats,
        ),
        PJRT_Memory_Kind_Id: Some(client::PJRT_Memory_Kind_Id),
        PJRT_ExecuteContext_Create: Some(unimplemented::PJRT_ExecuteContext_Create),
        PJRT_ExecuteContext_Destroy: Some(unimplemented::PJRT_ExecuteContext_Destroy),
    }
}

/// The plugin's entry point: returns the `PJRT_Api` table (valid for the process lifetime).
#[no_mangle]
pub extern "C" fn GetPjrtApi() -> *const PJRT_Api {
    // Building the table cannot fail, but no panic may cross the C ABI.
    std::panic::catch_unwind(api)
        .map(|table| table as *const PJRT_Api)
        .unwrap_or(std::ptr::null())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_is_filled() {
        let table = api();
        assert_eq!(table.struct_size, std::mem::size_of::<PJRT_Api>());
        assert_eq!(table.pjrt_api_version.major_version, 0);
        assert_eq!(table.pjrt_api_version.minor_version, 54);
        // The slots after the version struct are all function pointers.
        let first = std::mem::offset_of!(PJRT_Api, PJRT_Error_Destroy);
        let n_slots = (table.struct_size - first) / std::mem::size_of::<usize>();
        assert_eq!(n_slots, 100, "PJRT C API 0.54 has this many slots");
        // SAFETY: the table is `repr(C)`; from `first` on it holds `n_slots` pointer-sized
        // `Option<fn>` fields, which have the same layout as nullable pointers.
        let slots = unsafe {
            std::slice::from_raw_parts(
                (table as *const PJRT_Api)
                    .cast::<u8>()
                    .add(first)
                    .cast::<usize>(),
                n_slots,
            )
        };
        assert!(slots.iter().all(|&p| p != 0), "a PJRT_Api slot is null");
        assert!(!GetPjrtApi().is_null());
    }
}
