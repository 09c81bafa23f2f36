//! Buffer entry points, including host-to-device and device-to-host transfers.

use super::client::{client, device, memory};
use super::convert::{self, SendPtr};
use super::entry::entry_point;
use super::event;
use super::handles::{BufferHandle, ClientHandle};
use super::types;
use oxla_client::layout::{dense_byte_strides, gather_strided, minor_to_major_byte_strides};
use oxla_client::{ClientError, Event, Result, TensorType};
use pjrt_sys::*;

/// Host arrays up to this many bytes are copied on the calling thread whatever the host
/// buffer semantics: a copy this size takes a few microseconds, less than waking a worker.
const COPY_ON_CALLER_BYTES: usize = 64 * 1024;

pub(crate) fn buffer<'a>(ptr: *const PJRT_Buffer) -> Result<&'a BufferHandle> {
    // SAFETY: PJRT callers pass buffers this plugin created and have not destroyed.
    unsafe { convert::handle(ptr, "buffer") }
}

/// The client handle a buffer handle belongs to.
fn owning_client<'a>(handle: &BufferHandle) -> Result<&'a ClientHandle> {
    // SAFETY: a buffer handle stores its client's handle pointer; PJRT requires clients to
    // outlive their buffers.
    unsafe { convert::handle(handle.client, "buffer's client") }
}

/// Byte strides a `PJRT_Buffer_MemoryLayout` describes for `dims` (dense layouts only).
fn layout_byte_strides(
    layout: &PJRT_Buffer_MemoryLayout,
    dims: &[i64],
    elem_size: usize,
) -> Result<Vec<i64>> {
    match layout.type_ {
        PJRT_Buffer_MemoryLayout_Type_PJRT_Buffer_MemoryLayout_Type_Tiled => {
            // SAFETY: the type tag says the union holds `tiled`.
            let tiled = unsafe { &layout.__bindgen_anon_1.tiled };
            if tiled.num_tiles > 0 {
                return Err(ClientError::Unimplemented(
                    "tiled host layouts are not supported".to_string(),
                ));
            }
            // SAFETY: the caller keeps `minor_to_major_size` entries alive during the call.
            let minor_to_major = unsafe {
                convert::slice(
                    tiled.minor_to_major,
                    tiled.minor_to_major_size,
                    "minor_to_major",
                )
            }?;
            minor_to_major_byte_strides(dims, minor_to_major, elem_size)
        }
        PJRT_Buffer_MemoryLayout_Type_PJRT_Buffer_MemoryLayout_Type_Strides => {
            // SAFETY: the type tag says the union holds `strides`.
            let strides = unsafe { &layout.__bindgen_anon_1.strides };
            // SAFETY: the caller keeps `num_byte_strides` entries alive during the call.
            let byte_strides = unsafe {
                convert::slice(
                    strides.byte_strides,
                    strides.num_byte_strides,
                    "byte_strides",
                )
            }?;
            Ok(byte_strides.to_vec())
        }
        other => Err(ClientError::InvalidArgument(format!(
            "unknown memory layout type {other}"
        ))),
    }
}

fn check_dims(dims: &[i64]) -> Result<()> {
    match dims.iter().find(|&&d| d < 0) {
        Some(bad) => Err(ClientError::InvalidArgument(format!(
            "negative dimension {bad} in {dims:?}"
        ))),
        None => Ok(()),
    }
}

entry_point!(
    PJRT_Client_BufferFromHostBuffer,
    PJRT_Client_BufferFromHostBuffer_Args,
    |args| {
        let client_handle = client(args.client)?;
        let device_handle = if !args.memory.is_null() {
            let memory_handle = memory(args.memory)?;
            device(client_handle.device_ptr(memory_handle.memory.device_id()))?
        } else {
            device(args.device)?
        };
        let element_type = types::element_type(args.type_)?;
        let elem_size = element_type.byte_size();
        // SAFETY: the caller passes `num_dims` dims.
        let dims = unsafe { convert::slice(args.dims, args.num_dims, "dims") }?.to_vec();
        check_dims(&dims)?;
        let byte_strides = if args.num_byte_strides == 0 {
            dense_byte_strides(&dims, elem_size)
        } else {
            // SAFETY: the caller passes `num_byte_strides` strides.
            unsafe { convert::slice(args.byte_strides, args.num_byte_strides, "byte_strides") }?
                .to_vec()
        };
        if !args.device_layout.is_null() {
            // SAFETY: non-null; the caller keeps the layout alive during the call.
            let layout = unsafe { &*args.device_layout };
            let wanted = layout_byte_strides(layout, &dims, elem_size)?;
            if wanted != dense_byte_strides(&dims, elem_size) {
                return Err(ClientError::Unimplemented(
                    "device layouts other than dense row-major are not supported".to_string(),
                ));
            }
        }
        let ty = TensorType::new(dims.clone(), element_type);
        let device = &device_handle.device;
        let small = ty
            .byte_size()
            .is_some_and(|size| size <= COPY_ON_CALLER_BYTES);
        let (buffer, done) = if small
            || args.host_buffer_semantics
                == PJRT_HostBufferSemantics_PJRT_HostBufferSemantics_kImmutableOnlyDuringCall
        {
            // The data is only valid during this call, or so small that copying it costs
            // less than handing the copy to a worker (and the buffer is ready at once, so a
            // small program reading it runs on the calling thread too): copy it now.
            let buffer = client_handle.client.buffer_from_host_now(device, ty, || {
                // SAFETY: the caller's data holds the array `dims`/`byte_strides` describe.
                let (bytes, base) = unsafe {
                    convert::strided_host(args.data.cast(), &dims, &byte_strides, elem_size)
                }?;
                gather_strided(bytes, base, &dims, &byte_strides, elem_size)
            })?;
            (buffer, Event::ready_with(Ok(())))
        } else {
            // The data stays valid until `done_with_host_buffer` fires: copy on a worker.
            // SAFETY: check the description now, on the caller's thread, so bad strides fail here.
            unsafe { convert::strided_host(args.data.cast(), &dims, &byte_strides, elem_size) }?;
            let data = SendPtr(args.data.cast_mut().cast::<u8>());
            client_handle
                .client
                .buffer_from_producer(device, ty, move || {
                    let data = data;
                    // SAFETY: PJRT's host buffer semantics keep `data` alive and unchanged until
                    // the done event fires, which happens after this copy.
                    let (bytes, base) = unsafe {
                        convert::strided_host(data.0.cast_const(), &dims, &byte_strides, elem_size)
                    }?;
                    gather_strided(bytes, base, &dims, &byte_strides, elem_size)
                })?
        };
        args.done_with_host_buffer = event::into_raw(done);
        args.buffer = Box::into_raw(client_handle.buffer_handle(buffer)).cast();
        Ok(())
    }
);

entry_point!(PJRT_Buffer_Destroy, PJRT_Buffer_Destroy_Args, |args| {
    if !args.buffer.is_null() {
        // SAFETY: `buffer` was created by this plugin and is destroyed once.
        let handle = unsafe { Box::from_raw(args.buffer.cast::<BufferHandle>()) };
        handle.buffer.delete();
    }
    Ok(())
});

entry_point!(
    PJRT_Buffer_ElementType,
    PJRT_Buffer_ElementType_Args,
    |args| {
        let handle = buffer(args.buffer)?;
        args.type_ = if handle.token {
            PJRT_Buffer_Type_PJRT_Buffer_Type_TOKEN
        } else {
            types::buffer_type(handle.buffer.element_type())?
        };
        Ok(())
    }
);

entry_point!(
    PJRT_Buffer_Dimensions,
    PJRT_Buffer_Dimensions_Args,
    |args| {
        let handle = buffer(args.buffer)?;
        args.dims = handle.dims.as_ptr();
        args.num_dims = handle.dims.len();
        Ok(())
    }
);

entry_point!(
    PJRT_Buffer_UnpaddedDimensions,
    PJRT_Buffer_UnpaddedDimensions_Args,
    |args| {
        let handle = buffer(args.buffer)?;
        args.unpadded_dims = handle.dims.as_ptr();
        args.num_dims = handle.dims.len();
        Ok(())
    }
);

entry_point!(
    PJRT_Buffer_DynamicDimensionIndices,
    PJRT_Buffer_DynamicDimensionIndices_Args,
    |args| {
        let handle = buffer(args.buffer)?;
        args.dynamic_dim_indices = handle.dynamic_dims.as_ptr();
        args.num_dynamic_dims = handle.dynamic_dims.len();
        Ok(())
    }
);

entry_point!(
    PJRT_Buffer_GetMemoryLayout,
    PJRT_Buffer_GetMemoryLayout_Args,
    |args| {
        let handle = buffer(args.buffer)?;
        let mut layout = PJRT_Buffer_MemoryLayout::new();
        let mut tiled = PJRT_Buffer_MemoryLayout_Tiled::new();
        tiled.minor_to_major = handle.minor_to_major.as_ptr();
        tiled.minor_to_major_size = handle.minor_to_major.len();
        layout.__bindgen_anon_1.tiled = tiled;
        layout.type_ = PJRT_Buffer_MemoryLayout_Type_PJRT_Buffer_MemoryLayout_Type_Tiled;
        args.layout = layout;
        Ok(())
    }
);

entry_point!(
    PJRT_Buffer_OnDeviceSizeInBytes,
    PJRT_Buffer_OnDeviceSizeInBytes_Args,
    |args| {
        let handle = buffer(args.buffer)?;
        if handle.buffer.is_deleted() {
            return Err(ClientError::FailedPrecondition(
                "PJRT_Buffer_OnDeviceSizeInBytes: buffer has been deleted".to_string(),
            ));
        }
        args.on_device_size_in_bytes = handle.buffer.on_device_size();
        Ok(())
    }
);

entry_point!(PJRT_Buffer_Device, PJRT_Buffer_Device_Args, |args| {
    args.device = buffer(args.buffer)?.device;
    Ok(())
});

entry_point!(PJRT_Buffer_Memory, PJRT_Buffer_Memory_Args, |args| {
    args.memory = buffer(args.buffer)?.memory;
    Ok(())
});

entry_point!(PJRT_Buffer_Delete, PJRT_Buffer_Delete_Args, |args| {
    buffer(args.buffer)?.buffer.delete();
    Ok(())
});

entry_point!(PJRT_Buffer_IsDeleted, PJRT_Buffer_IsDeleted_Args, |args| {
    args.is_deleted = buffer(args.buffer)?.buffer.is_deleted();
    Ok(())
});

entry_point!(PJRT_Buffer_IsOnCpu, PJRT_Buffer_IsOnCpu_Args, |args| {
    let _ = buffer(args.buffer)?;
    args.is_on_cpu = true;
    Ok(())
});

entry_point!(
    PJRT_Buffer_ReadyEvent,
    PJRT_Buffer_ReadyEvent_Args,
    |args| {
        args.event = event::into_raw(buffer(args.buffer)?.buffer.ready_event());
        Ok(())
    }
);

entry_point!(
    PJRT_Buffer_CopyToDevice,
    PJRT_Buffer_CopyToDevice_Args,
    |args| {
        let handle = buffer(args.buffer)?;
        let dst = device(args.dst_device)?;
        let client_handle = owning_client(handle)?;
        let copy = handle.buffer.copy_to_device(&dst.device)?;
        args.dst_buffer = Box::into_raw(client_handle.copy_handle(handle, copy)).cast();
        Ok(())
    }
);

entry_point!(
    PJRT_Buffer_CopyToMemory,
    PJRT_Buffer_CopyToMemory_Args,
    |args| {
        let handle = buffer(args.buffer)?;
        let dst = memory(args.dst_memory)?;
        let client_handle = owning_client(handle)?;
        let dst_device = client_handle.client.memory_device(&dst.memory)?;
        let copy = handle.buffer.copy_to_memory(dst_device, &dst.memory)?;
        args.dst_buffer = Box::into_raw(client_handle.copy_handle(handle, copy)).cast();
        Ok(())
    }
);

entry_point!(
    PJRT_Buffer_ToHostBuffer,
    PJRT_Buffer_ToHostBuffer_Args,
    |args| {
        let handle = buffer(args.src)?;
        if handle.token {
            return Err(ClientError::InvalidArgument(
                "a token has no value to copy to the host".to_string(),
            ));
        }
        let src = &handle.buffer;
        let elem_size = src.element_type().byte_size();
        let dims = src.dims().to_vec();
        let byte_strides = if args.host_layout.is_null() {
            dense_byte_strides(&dims, elem_size)
        } else {
            // SAFETY: non-null; the caller keeps the layout alive during the call.
            layout_byte_strides(unsafe { &*args.host_layout }, &dims, elem_size)?
        };
        let (low, needed) = oxla_client::layout::strided_extent(&dims, &byte_strides, elem_size)?;
        if args.dst.is_null() {
            args.dst_size = needed;
            return Ok(());
        }
        if args.dst_size < needed {
            return Err(ClientError::InvalidArgument(format!(
                "dst_size {} is smaller than the {needed} bytes the array needs",
                args.dst_size
            )));
        }
        let dst = SendPtr(args.dst.cast::<u8>());
        let dst_size = args.dst_size;
        let base = low.unsigned_abs() as usize;
        let done = src.to_host_async(move |dense| {
            let dst = dst;
            // SAFETY: the caller keeps `dst_size` writable bytes at `dst` until the event fires,
            // and nothing else writes them meanwhile.
            let out = unsafe { convert::bytes_mut(dst.0, dst_size, "dst") }?;
            oxla_client::layout::scatter_strided(dense, out, base, &dims, &byte_strides, elem_size)
        })?;
        args.event = event::into_raw(done);
        Ok(())
    }
);

entry_point!(
    PJRT_Buffer_UnsafePointer,
    PJRT_Buffer_UnsafePointer_Args,
    |args| {
        args.buffer_pointer = buffer(args.buffer)?.buffer.data_address()?;
        Ok(())
    }
);

entry_point!(
    PJRT_Buffer_OpaqueDeviceMemoryDataPointer,
    PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args,
    |args| {
        let address = buffer(args.buffer)?.buffer.data_address()?;
        args.device_memory_ptr = address as *mut std::ffi::c_void;
        Ok(())
    }
);

entry_point!(
    PJRT_Buffer_IncreaseExternalReferenceCount,
    PJRT_Buffer_IncreaseExternalReferenceCount_Args,
    |args| { buffer(args.buffer)?.buffer.increase_external_refs() }
);

entry_point!(
    PJRT_Buffer_DecreaseExternalReferenceCount,
    PJRT_Buffer_DecreaseExternalReferenceCount_Args,
    |args| { buffer(args.buffer)?.buffer.decrease_external_refs() }
);
