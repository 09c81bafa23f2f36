//! Conformance tests: drive the built plugin through its C ABI, as a PJRT client (JAX) does.

mod common;

use common::*;
use pjrt_sys::*;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

const ADD_PROGRAM: &str =
    "func.func public @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %a, %b : tensor<2xf32>
  return %0 : tensor<2xf32>
}
";

const DONATING_PROGRAM: &str =
    "func.func public @main(%a: tensor<2xf32> {jax.buffer_donor = true}) -> tensor<2xf32> {
  %0 = stablehlo.multiply %a, %a : tensor<2xf32>
  return %0 : tensor<2xf32>
}
";

const UNSUPPORTED_PROGRAM: &str = "func.func public @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = \"mydialect.frobnicate\"(%a) : (tensor<2xf32>) -> tensor<2xf32> loc(\"frob_here\")
  return %0 : tensor<2xf32>
}
";

#[test]
fn api_version_and_plugin_attributes() {
    let plugin = plugin();
    assert_eq!(plugin.api.pjrt_api_version.major_version, 0);
    assert_eq!(plugin.api.pjrt_api_version.minor_version, 54);
    assert!(plugin.api.struct_size >= PJRT_Api_STRUCT_SIZE as usize);
    let mut args = PJRT_Plugin_Attributes_Args::new();
    call!(plugin, PJRT_Plugin_Attributes, &mut args).unwrap();
    // SAFETY: `num_attributes` values with process lifetime.
    let attrs = unsafe { std::slice::from_raw_parts(args.attributes, args.num_attributes) };
    let mut found = Vec::new();
    for attr in attrs {
        let name = string(attr.name, attr.name_size);
        if name.starts_with("stablehlo_") {
            assert_eq!(attr.type_, PJRT_NamedValue_Type_PJRT_NamedValue_kInt64List);
            // SAFETY: the type tag says int64 list of `value_size` entries.
            let values = unsafe {
                std::slice::from_raw_parts(attr.__bindgen_anon_1.int64_array_value, attr.value_size)
            };
            found.push((name, values.to_vec()));
        }
    }
    found.sort();
    assert_eq!(
        found,
        vec![
            ("stablehlo_current_version".to_string(), vec![1, 17, 0]),
            ("stablehlo_minimum_version".to_string(), vec![0, 9, 0]),
        ]
    );
}

#[test]
fn client_create_options_and_errors() {
    let client = try_client(&[int64_option("num_devices", 3)]).unwrap();
    assert_eq!(client.devices().len(), 3);
    let mut args = PJRT_Client_PlatformName_Args::new();
    args.client = client.raw;
    call!(client.plugin, PJRT_Client_PlatformName, &mut args).unwrap();
    assert_eq!(string(args.platform_name, args.platform_name_size), "oxla");

    for bad in [0, -1, 1 << 40] {
        let err = try_client(&[int64_option("num_devices", bad)])
            .err()
            .unwrap();
        assert_eq!(
            err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT,
            "{bad}"
        );
        assert!(err.message.contains("num_devices"), "{}", err.message);
    }
    let err = try_client(&[int64_option("no_such_option", 1)])
        .err()
        .unwrap();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT);
}

#[test]
fn null_args_and_small_struct_size_are_rejected() {
    let plugin = plugin();
    // SAFETY: a null args pointer is exactly what is being tested.
    let err = plugin
        .check(unsafe { plugin.api.PJRT_Client_Create.unwrap()(std::ptr::null_mut()) })
        .unwrap_err();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT);
    assert!(err.message.contains("null"), "{}", err.message);

    let client = client();
    let mut args = PJRT_Client_Devices_Args::new();
    args.client = client.raw;
    args.struct_size = 8;
    let err = call!(plugin, PJRT_Client_Devices, &mut args).unwrap_err();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT);
    assert!(err.message.contains("struct_size"), "{}", err.message);

    let mut args = PJRT_Client_PlatformName_Args::new();
    let err = call!(plugin, PJRT_Client_PlatformName, &mut args).unwrap_err();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT);

    let mut args = PJRT_Client_LookupDevice_Args::new();
    args.client = client.raw;
    args.id = 42;
    let err = call!(plugin, PJRT_Client_LookupDevice, &mut args).unwrap_err();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_NOT_FOUND);

    let mut args = PJRT_CopyToDeviceStream_TotalBytes_Args::new();
    let err = call!(plugin, PJRT_CopyToDeviceStream_TotalBytes, &mut args).unwrap_err();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_UNIMPLEMENTED);
}

#[test]
fn devices_memories_and_descriptions() {
    let client = try_client(&[int64_option("num_devices", 2)]).unwrap();
    let plugin = client.plugin;
    let devices = client.devices();
    for (idx, &device) in devices.iter().enumerate() {
        let mut desc = PJRT_Device_GetDescription_Args::new();
        desc.device = device;
        call!(plugin, PJRT_Device_GetDescription, &mut desc).unwrap();
        let mut id = PJRT_DeviceDescription_Id_Args::new();
        id.device_description = desc.device_description;
        call!(plugin, PJRT_DeviceDescription_Id, &mut id).unwrap();
        assert_eq!(id.id as usize, idx);
        let mut kind = PJRT_DeviceDescription_Kind_Args::new();
        kind.device_description = desc.device_description;
        call!(plugin, PJRT_DeviceDescription_Kind, &mut kind).unwrap();
        assert_eq!(string(kind.device_kind, kind.device_kind_size), "cpu");
        let mut to_string = PJRT_DeviceDescription_ToString_Args::new();
        to_string.device_description = desc.device_description;
        call!(plugin, PJRT_DeviceDescription_ToString, &mut to_string).unwrap();
        assert_eq!(
            string(to_string.to_string, to_string.to_string_size),
            format!("OxlaDevice(id={idx})")
        );

        let mut lookup = PJRT_Client_LookupDevice_Args::new();
        lookup.client = client.raw;
        lookup.id = idx as i32;
        call!(plugin, PJRT_Client_LookupDevice, &mut lookup).unwrap();
        assert_eq!(lookup.device, device);

        let mut mem = PJRT_Device_DefaultMemory_Args::new();
        mem.device = device;
        call!(plugin, PJRT_Device_DefaultMemory, &mut mem).unwrap();
        let mut kind = PJRT_Memory_Kind_Args::new();
        kind.memory = mem.memory;
        call!(plugin, PJRT_Memory_Kind, &mut kind).unwrap();
        assert_eq!(string(kind.kind, kind.kind_size), "device");
        let mut by = PJRT_Memory_AddressableByDevices_Args::new();
        by.memory = mem.memory;
        call!(plugin, PJRT_Memory_AddressableByDevices, &mut by).unwrap();
        assert_eq!(
            // SAFETY: `num_devices` pointers owned by the memory.
            unsafe { std::slice::from_raw_parts(by.devices, by.num_devices) },
            &[device]
        );
    }
    let mut memories = PJRT_Client_AddressableMemories_Args::new();
    memories.client = client.raw;
    call!(plugin, PJRT_Client_AddressableMemories, &mut memories).unwrap();
    assert_eq!(memories.num_addressable_memories, 2);

    let mut topology = PJRT_Client_TopologyDescription_Args::new();
    topology.client = client.raw;
    call!(plugin, PJRT_Client_TopologyDescription, &mut topology).unwrap();
    let mut descs = PJRT_TopologyDescription_GetDeviceDescriptions_Args::new();
    descs.topology = topology.topology;
    call!(
        plugin,
        PJRT_TopologyDescription_GetDeviceDescriptions,
        &mut descs
    )
    .unwrap();
    assert_eq!(descs.num_descriptions, 2);

    let mut assignment = [0i32; 2];
    let mut args = PJRT_Client_DefaultDeviceAssignment_Args::new();
    args.client = client.raw;
    args.num_replicas = 2;
    args.num_partitions = 1;
    args.default_assignment_size = 2;
    args.default_assignment = assignment.as_mut_ptr();
    call!(plugin, PJRT_Client_DefaultDeviceAssignment, &mut args).unwrap();
    assert_eq!(assignment, [0, 1]);
    args.num_replicas = 3;
    assert!(call!(plugin, PJRT_Client_DefaultDeviceAssignment, &mut args).is_err());
}

#[test]
fn host_round_trips_for_several_dtypes() {
    let client = client();
    let cases: Vec<(PJRT_Buffer_Type, Vec<u8>, Vec<i64>)> = vec![
        (
            PJRT_Buffer_Type_PJRT_Buffer_Type_PRED,
            vec![1, 0, 1],
            vec![3],
        ),
        (
            PJRT_Buffer_Type_PJRT_Buffer_Type_S8,
            vec![0xff, 7],
            vec![2, 1],
        ),
        (
            PJRT_Buffer_Type_PJRT_Buffer_Type_S4,
            vec![0x0f, 0x07, 0x08],
            vec![3],
        ),
        (
            PJRT_Buffer_Type_PJRT_Buffer_Type_S32,
            [-5i32, 9].iter().flat_map(|v| v.to_le_bytes()).collect(),
            vec![2],
        ),
        (
            PJRT_Buffer_Type_PJRT_Buffer_Type_BF16,
            vec![0x80, 0x3f],
            vec![],
        ),
        (
            PJRT_Buffer_Type_PJRT_Buffer_Type_F64,
            [1.5f64, -2.0, 3.25, 0.0]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
            vec![2, 2],
        ),
        (PJRT_Buffer_Type_PJRT_Buffer_Type_C64, vec![1; 16], vec![2]),
        (PJRT_Buffer_Type_PJRT_Buffer_Type_U64, vec![], vec![0, 4]),
    ];
    for (ty, data, dims) in cases {
        let buffer = client.buffer(&data, ty, &dims);
        let mut et = PJRT_Buffer_ElementType_Args::new();
        et.buffer = buffer;
        call!(client.plugin, PJRT_Buffer_ElementType, &mut et).unwrap();
        assert_eq!(et.type_, ty);
        let mut dims_args = PJRT_Buffer_Dimensions_Args::new();
        dims_args.buffer = buffer;
        call!(client.plugin, PJRT_Buffer_Dimensions, &mut dims_args).unwrap();
        // SAFETY: `num_dims` dims owned by the buffer.
        let got_dims = unsafe { std::slice::from_raw_parts(dims_args.dims, dims_args.num_dims) };
        assert_eq!(got_dims, dims.as_slice());
        let mut size = PJRT_Buffer_OnDeviceSizeInBytes_Args::new();
        size.buffer = buffer;
        call!(client.plugin, PJRT_Buffer_OnDeviceSizeInBytes, &mut size).unwrap();
        assert_eq!(size.on_device_size_in_bytes, data.len());
        assert_eq!(client.try_to_host(buffer).unwrap(), data, "type {ty}");
        client.destroy_buffer(buffer);
    }
    let err = client
        .try_buffer(
            &[0],
            PJRT_Buffer_Type_PJRT_Buffer_Type_TOKEN,
            &[1],
            None,
            PJRT_HostBufferSemantics_PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
            client.devices()[0],
        )
        .unwrap_err();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT);
}

#[test]
fn strided_input_every_semantics_and_host_layout() {
    let client = client();
    // A 2x3 f32 array stored column-major (byte strides 4, 8).
    let column_major: Vec<u8> = [0f32, 3.0, 1.0, 4.0, 2.0, 5.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    for semantics in [
        PJRT_HostBufferSemantics_PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
        PJRT_HostBufferSemantics_PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes,
        PJRT_HostBufferSemantics_PJRT_HostBufferSemantics_kImmutableZeroCopy,
        PJRT_HostBufferSemantics_PJRT_HostBufferSemantics_kMutableZeroCopy,
    ] {
        let buffer = client
            .try_buffer(
                &column_major,
                PJRT_Buffer_Type_PJRT_Buffer_Type_F32,
                &[2, 3],
                Some(&[4, 8]),
                semantics,
                client.devices()[0],
            )
            .unwrap();
        assert_eq!(
            client.to_host_f32(buffer),
            vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        );

        // Read back column-major through a requested host layout.
        let minor_to_major = [0i64, 1];
        let mut layout = PJRT_Buffer_MemoryLayout::new();
        let mut tiled = PJRT_Buffer_MemoryLayout_Tiled::new();
        tiled.minor_to_major = minor_to_major.as_ptr();
        tiled.minor_to_major_size = 2;
        layout.__bindgen_anon_1.tiled = tiled;
        layout.type_ = PJRT_Buffer_MemoryLayout_Type_PJRT_Buffer_MemoryLayout_Type_Tiled;
        let mut out = vec![0u8; 24];
        let mut args = PJRT_Buffer_ToHostBuffer_Args::new();
        args.src = buffer;
        args.host_layout = &mut layout;
        args.dst = out.as_mut_ptr().cast::<c_void>();
        args.dst_size = out.len();
        call!(client.plugin, PJRT_Buffer_ToHostBuffer, &mut args).unwrap();
        client.await_event(args.event).unwrap();
        assert_eq!(out, column_major);
        client.destroy_buffer(buffer);
    }
    // Strides that reach outside the data are caught.
    let err = client
        .try_buffer(
            &column_major,
            PJRT_Buffer_Type_PJRT_Buffer_Type_F32,
            &[2, 3],
            Some(&[4]),
            PJRT_HostBufferSemantics_PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
            client.devices()[0],
        )
        .unwrap_err();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT);
}

static CALLBACK_COUNT: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn count_callback(error: *mut PJRT_Error, user_arg: *mut c_void) {
    assert!(error.is_null());
    assert_eq!(user_arg as usize, 0x1234);
    CALLBACK_COUNT.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn events_await_and_on_ready() {
    let client = client();
    let buffer = client.f32_buffer(&[1.0, 2.0], &[2]);
    let mut ready = PJRT_Buffer_ReadyEvent_Args::new();
    ready.buffer = buffer;
    call!(client.plugin, PJRT_Buffer_ReadyEvent, &mut ready).unwrap();
    let mut on_ready = PJRT_Event_OnReady_Args::new();
    on_ready.event = ready.event;
    on_ready.callback = Some(count_callback);
    on_ready.user_arg = 0x1234 as *mut c_void;
    call!(client.plugin, PJRT_Event_OnReady, &mut on_ready).unwrap();
    let mut is_ready = PJRT_Event_IsReady_Args::new();
    is_ready.event = ready.event;
    call!(client.plugin, PJRT_Event_IsReady, &mut is_ready).unwrap();
    assert!(is_ready.is_ready);
    let mut error = PJRT_Event_Error_Args::new();
    error.event = ready.event;
    call!(client.plugin, PJRT_Event_Error, &mut error).unwrap();
    client.await_event(ready.event).unwrap();
    assert_eq!(
        CALLBACK_COUNT.load(Ordering::SeqCst),
        1,
        "fires exactly once"
    );

    // A deleted buffer's ready event carries an error; using the buffer fails.
    let mut delete = PJRT_Buffer_Delete_Args::new();
    delete.buffer = buffer;
    call!(client.plugin, PJRT_Buffer_Delete, &mut delete).unwrap();
    let mut is_deleted = PJRT_Buffer_IsDeleted_Args::new();
    is_deleted.buffer = buffer;
    call!(client.plugin, PJRT_Buffer_IsDeleted, &mut is_deleted).unwrap();
    assert!(is_deleted.is_deleted);
    call!(client.plugin, PJRT_Buffer_ReadyEvent, &mut ready).unwrap();
    let err = client.await_event(ready.event).unwrap_err();
    assert_eq!(
        err.code,
        PJRT_Error_Code_PJRT_Error_Code_FAILED_PRECONDITION
    );
    let err = client.try_to_host(buffer).unwrap_err();
    assert_eq!(
        err.code,
        PJRT_Error_Code_PJRT_Error_Code_FAILED_PRECONDITION
    );
    client.destroy_buffer(buffer);
}

#[test]
fn compile_and_execute_add() {
    let client = client();
    let exe = client.try_compile(ADD_PROGRAM, &compile_options()).unwrap();
    let a = client.f32_buffer(&[1.0, 2.0], &[2]);
    let b = client.f32_buffer(&[10.0, 20.0], &[2]);
    let (outputs, status) = client.try_execute(exe, &[a, b], 1, &[]).unwrap();
    status.unwrap();
    assert_eq!(client.to_host_f32(outputs[0]), vec![11.0, 22.0]);

    let mut get = PJRT_LoadedExecutable_GetExecutable_Args::new();
    get.loaded_executable = exe;
    call!(client.plugin, PJRT_LoadedExecutable_GetExecutable, &mut get).unwrap();
    let mut n_out = PJRT_Executable_NumOutputs_Args::new();
    n_out.executable = get.executable;
    call!(client.plugin, PJRT_Executable_NumOutputs, &mut n_out).unwrap();
    assert_eq!(n_out.num_outputs, 1);
    assert_eq!(
        output_element_types(&client, exe),
        [PJRT_Buffer_Type_PJRT_Buffer_Type_F32]
    );
    let mut program = Box::new(PJRT_Program::new());
    let program_ptr: *mut PJRT_Program = &mut *program;
    let mut opt = PJRT_Executable_OptimizedProgram_Args::new();
    opt.executable = get.executable;
    opt.program = program_ptr;
    call!(client.plugin, PJRT_Executable_OptimizedProgram, &mut opt).unwrap();
    // SAFETY: `program_ptr` points at the live boxed program.
    let (format, code_size) = unsafe {
        (
            string((*program_ptr).format, (*program_ptr).format_size),
            (*program_ptr).code_size,
        )
    };
    assert_eq!(format, "mlir");
    let mut code = vec![0u8; code_size];
    // SAFETY: as above; the plugin writes `code_size` bytes into `code`.
    unsafe { (*program_ptr).code = code.as_mut_ptr().cast() };
    call!(client.plugin, PJRT_Executable_OptimizedProgram, &mut opt).unwrap();
    assert_eq!(code, ADD_PROGRAM.as_bytes());

    // Wrong argument count, wrong shape, deleted argument.
    let err = client.try_execute(exe, &[a], 1, &[]).unwrap_err();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT);
    assert!(err.message.contains("2 argument"), "{}", err.message);
    let c = client.f32_buffer(&[1.0, 2.0, 3.0], &[3]);
    let err = client.try_execute(exe, &[a, c], 1, &[]).unwrap_err();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT);
    assert!(err.message.contains("tensor<2xf32>"), "{}", err.message);
    let mut delete = PJRT_Buffer_Delete_Args::new();
    delete.buffer = b;
    call!(client.plugin, PJRT_Buffer_Delete, &mut delete).unwrap();
    let err = client.try_execute(exe, &[a, b], 1, &[]).unwrap_err();
    assert_eq!(
        err.code,
        PJRT_Error_Code_PJRT_Error_Code_FAILED_PRECONDITION
    );

    for buffer in [a, b, c, outputs[0]] {
        client.destroy_buffer(buffer);
    }
    let mut destroy = PJRT_Executable_Destroy_Args::new();
    destroy.executable = get.executable;
    call!(client.plugin, PJRT_Executable_Destroy, &mut destroy).unwrap();
    let mut destroy = PJRT_LoadedExecutable_Destroy_Args::new();
    destroy.executable = exe;
    call!(client.plugin, PJRT_LoadedExecutable_Destroy, &mut destroy).unwrap();
}

#[test]
fn buffer_on_wrong_device_is_rejected() {
    let client = try_client(&[int64_option("num_devices", 2)]).unwrap();
    let exe = client.compile(ADD_PROGRAM);
    let bytes: Vec<u8> = [1f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let on_device_1 = client
        .try_buffer(
            &bytes,
            PJRT_Buffer_Type_PJRT_Buffer_Type_F32,
            &[2],
            None,
            PJRT_HostBufferSemantics_PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
            client.devices()[1],
        )
        .unwrap();
    let a = client.f32_buffer(&[1.0, 2.0], &[2]);
    let err = client
        .try_execute(exe, &[a, on_device_1], 1, &[])
        .unwrap_err();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT);
    assert!(err.message.contains("device 1"), "{}", err.message);

    // Copying it to device 0 makes it usable.
    let mut copy = PJRT_Buffer_CopyToDevice_Args::new();
    copy.buffer = on_device_1;
    copy.dst_device = client.devices()[0];
    call!(client.plugin, PJRT_Buffer_CopyToDevice, &mut copy).unwrap();
    let (outputs, status) = client
        .try_execute(exe, &[a, copy.dst_buffer], 1, &[])
        .unwrap();
    status.unwrap();
    assert_eq!(client.to_host_f32(outputs[0]), vec![2.0, 4.0]);
}

#[test]
fn donation_deletes_the_donated_buffer() {
    let client = client();
    let exe = client.compile(DONATING_PROGRAM);
    let a = client.f32_buffer(&[3.0, 4.0], &[2]);
    let (outputs, status) = client.try_execute(exe, &[a], 1, &[]).unwrap();
    status.unwrap();
    assert_eq!(client.to_host_f32(outputs[0]), vec![9.0, 16.0]);
    let mut is_deleted = PJRT_Buffer_IsDeleted_Args::new();
    is_deleted.buffer = a;
    call!(client.plugin, PJRT_Buffer_IsDeleted, &mut is_deleted).unwrap();
    assert!(is_deleted.is_deleted, "a donated argument is consumed");

    // Listed as non-donatable, the argument survives.
    let b = client.f32_buffer(&[5.0, 6.0], &[2]);
    let (outputs, status) = client.try_execute(exe, &[b], 1, &[0]).unwrap();
    status.unwrap();
    assert_eq!(client.to_host_f32(outputs[0]), vec![25.0, 36.0]);
    is_deleted.buffer = b;
    call!(client.plugin, PJRT_Buffer_IsDeleted, &mut is_deleted).unwrap();
    assert!(!is_deleted.is_deleted);
}

#[test]
fn serialize_and_deserialize_round_trip() {
    let client = client();
    let exe = client.try_compile(ADD_PROGRAM, &compile_options()).unwrap();
    let mut get = PJRT_LoadedExecutable_GetExecutable_Args::new();
    get.loaded_executable = exe;
    call!(client.plugin, PJRT_LoadedExecutable_GetExecutable, &mut get).unwrap();
    let mut fingerprint = PJRT_Executable_Fingerprint_Args::new();
    fingerprint.executable = get.executable;
    call!(client.plugin, PJRT_Executable_Fingerprint, &mut fingerprint).unwrap();
    let fingerprint = string(
        fingerprint.executable_fingerprint,
        fingerprint.executable_fingerprint_size,
    );
    let mut ser = PJRT_Executable_Serialize_Args::new();
    ser.executable = get.executable;
    call!(client.plugin, PJRT_Executable_Serialize, &mut ser).unwrap();
    // SAFETY: `serialized_bytes_size` bytes live until the deleter runs.
    let bytes = unsafe {
        std::slice::from_raw_parts(ser.serialized_bytes.cast::<u8>(), ser.serialized_bytes_size)
    }
    .to_vec();
    // SAFETY: the deleter frees the serialized executable once.
    unsafe { ser.serialized_executable_deleter.unwrap()(ser.serialized_executable) };
    assert!(bytes.starts_with(b"OXLAEXE\0"));

    let mut load = PJRT_Executable_DeserializeAndLoad_Args::new();
    load.client = client.raw;
    load.serialized_executable = bytes.as_ptr().cast();
    load.serialized_executable_size = bytes.len();
    call!(client.plugin, PJRT_Executable_DeserializeAndLoad, &mut load).unwrap();
    let a = client.f32_buffer(&[1.0, 2.0], &[2]);
    let (outputs, status) = client
        .try_execute(load.loaded_executable, &[a, a], 1, &[])
        .unwrap();
    status.unwrap();
    assert_eq!(client.to_host_f32(outputs[0]), vec![2.0, 4.0]);

    let mut reloaded = PJRT_LoadedExecutable_Fingerprint_Args::new();
    reloaded.executable = load.loaded_executable;
    call!(
        client.plugin,
        PJRT_LoadedExecutable_Fingerprint,
        &mut reloaded
    )
    .unwrap();
    assert_eq!(
        string(
            reloaded.executable_fingerprint,
            reloaded.executable_fingerprint_size
        ),
        fingerprint
    );

    // Corrupt bytes are rejected, not trusted.
    let mut load = PJRT_Executable_DeserializeAndLoad_Args::new();
    load.client = client.raw;
    load.serialized_executable = bytes.as_ptr().cast();
    load.serialized_executable_size = bytes.len() - 3;
    let err = call!(client.plugin, PJRT_Executable_DeserializeAndLoad, &mut load).unwrap_err();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT);
}

#[test]
fn compile_errors_name_the_problem() {
    let client = client();
    let err = client.try_compile(UNSUPPORTED_PROGRAM, &[]).unwrap_err();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_UNIMPLEMENTED);
    assert!(
        err.message.contains("mydialect.frobnicate"),
        "{}",
        err.message
    );
    assert!(err.message.contains("frob_here"), "{}", err.message);

    let err = client
        .try_compile("this is not a program", &[])
        .unwrap_err();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT);

    let err = client
        .try_compile(ADD_PROGRAM, b"\xff\xff\xff")
        .unwrap_err();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT);
    assert!(
        err.message.contains("CompileOptionsProto"),
        "{}",
        err.message
    );
}

#[test]
fn a_program_without_outputs_runs_with_null_output_lists() {
    let client = try_client(&[]).unwrap();
    let exe = client.compile("func.func @main(%a: tensor<2xf32>) {\n  return\n}\n");
    let arg = client.f32_buffer(&[1.0, 2.0], &[2]);
    let (outputs, status) = client.try_execute(exe, &[arg], 0, &[]).unwrap();
    assert!(outputs.is_empty());
    status.unwrap();
}

/// The element types an executable reports for its outputs.
fn output_element_types(
    client: &TestClient,
    exe: *mut PJRT_LoadedExecutable,
) -> Vec<PJRT_Buffer_Type> {
    let mut get = PJRT_LoadedExecutable_GetExecutable_Args::new();
    get.loaded_executable = exe;
    call!(client.plugin, PJRT_LoadedExecutable_GetExecutable, &mut get).unwrap();
    let mut types = PJRT_Executable_OutputElementTypes_Args::new();
    types.executable = get.executable;
    call!(
        client.plugin,
        PJRT_Executable_OutputElementTypes,
        &mut types
    )
    .unwrap();
    // SAFETY: `num_output_types` entries owned by the executable, read before it is destroyed.
    let list =
        unsafe { std::slice::from_raw_parts(types.output_types, types.num_output_types) }.to_vec();
    let mut destroy = PJRT_Executable_Destroy_Args::new();
    destroy.executable = get.executable;
    call!(client.plugin, PJRT_Executable_Destroy, &mut destroy).unwrap();
    list
}

#[test]
fn tokens_have_the_token_type_and_pass_back_as_arguments() {
    let client = client();
    let make = client.compile(
        "func.func public @main(%a: tensor<2xf32>) -> (!stablehlo.token, tensor<2xf32>) {
  %t = stablehlo.after_all : !stablehlo.token
  return %t, %a : !stablehlo.token, tensor<2xf32>
}
",
    );
    assert_eq!(
        output_element_types(&client, make),
        [
            PJRT_Buffer_Type_PJRT_Buffer_Type_TOKEN,
            PJRT_Buffer_Type_PJRT_Buffer_Type_F32
        ]
    );
    let a = client.f32_buffer(&[1.0, 2.0], &[2]);
    let (outputs, status) = client.try_execute(make, &[a], 2, &[]).unwrap();
    status.unwrap();
    let token = outputs[0];
    let mut ty = PJRT_Buffer_ElementType_Args::new();
    ty.buffer = token;
    call!(client.plugin, PJRT_Buffer_ElementType, &mut ty).unwrap();
    assert_eq!(ty.type_, PJRT_Buffer_Type_PJRT_Buffer_Type_TOKEN);
    let mut dims = PJRT_Buffer_Dimensions_Args::new();
    dims.buffer = token;
    call!(client.plugin, PJRT_Buffer_Dimensions, &mut dims).unwrap();
    assert_eq!(dims.num_dims, 0);
    ty.buffer = outputs[1];
    call!(client.plugin, PJRT_Buffer_ElementType, &mut ty).unwrap();
    assert_eq!(ty.type_, PJRT_Buffer_Type_PJRT_Buffer_Type_F32);
    // A token holds no value to read.
    let err = client.try_to_host(token).unwrap_err();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT);
    assert!(err.message.contains("token"), "{}", err.message);

    // The token, and a copy of it, go back in as arguments; the copy is a token too.
    let mut copy = PJRT_Buffer_CopyToDevice_Args::new();
    copy.buffer = token;
    copy.dst_device = client.devices()[0];
    call!(client.plugin, PJRT_Buffer_CopyToDevice, &mut copy).unwrap();
    ty.buffer = copy.dst_buffer;
    call!(client.plugin, PJRT_Buffer_ElementType, &mut ty).unwrap();
    assert_eq!(ty.type_, PJRT_Buffer_Type_PJRT_Buffer_Type_TOKEN);
    let pass = client.compile(
        "func.func public @main(%t: !stablehlo.token, %a: tensor<2xf32>) -> (tensor<2xf32>, !stablehlo.token) {
  %0 = stablehlo.add %a, %a : tensor<2xf32>
  %u = stablehlo.after_all %t : !stablehlo.token
  return %0, %u : tensor<2xf32>, !stablehlo.token
}
",
    );
    for t in [token, copy.dst_buffer] {
        let (out, status) = client.try_execute(pass, &[t, outputs[1]], 2, &[]).unwrap();
        status.unwrap();
        assert_eq!(client.to_host_f32(out[0]), vec![2.0, 4.0]);
        ty.buffer = out[1];
        call!(client.plugin, PJRT_Buffer_ElementType, &mut ty).unwrap();
        assert_eq!(ty.type_, PJRT_Buffer_Type_PJRT_Buffer_Type_TOKEN);
    }
}

/// jaxlib's `JAX_InspectSharding_Callback_Args`, as the plugin fills them.
#[repr(C)]
struct InspectArgs {
    sharding_spec: *mut std::ffi::c_char,
    sharding_spec_size: usize,
    error_txt: *const std::ffi::c_char,
    error_scratch: *mut c_void,
    free_error: Option<unsafe extern "C" fn(*mut InspectArgs)>,
}

/// What the test callbacks saw: each serialized sharding, and the errors released.
#[derive(Default)]
struct Inspected {
    specs: Vec<Vec<u8>>,
    freed: usize,
}

/// Records the serialized sharding in the `Inspected` at `data`.
unsafe extern "C" fn record_sharding(data: *mut c_void, args: *mut InspectArgs) {
    // SAFETY: the test passes a live `Mutex<Inspected>` as data, the plugin valid args.
    let (seen, args) = unsafe { (&*(data as *const std::sync::Mutex<Inspected>), &*args) };
    // SAFETY: the plugin's spec has `sharding_spec_size` bytes.
    let spec = unsafe {
        std::slice::from_raw_parts(args.sharding_spec.cast::<u8>(), args.sharding_spec_size)
    };
    seen.lock().unwrap().specs.push(spec.to_vec());
}

/// Counts the release of the error `refuse` set.
unsafe extern "C" fn free_refusal(args: *mut InspectArgs) {
    // SAFETY: `refuse` put the `Mutex<Inspected>` in the scratch slot.
    let seen = unsafe { &*((*args).error_scratch as *const std::sync::Mutex<Inspected>) };
    seen.lock().unwrap().freed += 1;
}

/// Fails, as a callback raising a Python exception does.
unsafe extern "C" fn refuse(data: *mut c_void, args: *mut InspectArgs) {
    // SAFETY: the plugin passes writable args.
    let args = unsafe { &mut *args };
    args.error_txt = c"the callback refused".as_ptr();
    args.error_scratch = data;
    args.free_error = Some(free_refusal);
}

/// A program over two partitions whose argument (sharded along "x") goes to an
/// `InspectSharding` call with `handle` in its backend config, escaped byte by byte.
fn inspecting_program(handle: &[u8]) -> String {
    let escaped: String = handle.iter().map(|b| format!("\\{b:02X}")).collect();
    format!(
        r#"module @m attributes {{mhlo.num_partitions = 2 : i32}} {{
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%a: tensor<8x2xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{}}]>}}) -> (tensor<8x2xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{}}]>}}) {{
    %0 = stablehlo.custom_call @InspectSharding(%a) {{backend_config = "{escaped}", has_side_effect = true}} : (tensor<8x2xf32>) -> tensor<8x2xf32>
    %1 = stablehlo.add %a, %a : tensor<8x2xf32>
    return %1 : tensor<8x2xf32>
  }}
}}
"#
    )
}

/// The backend config JAX's `encode_inspect_sharding_callback` makes: the function and its
/// data, byte for byte.
fn callback_handle(
    call: unsafe extern "C" fn(*mut c_void, *mut InspectArgs),
    data: &std::sync::Mutex<Inspected>,
) -> Vec<u8> {
    let mut handle = (call as usize).to_ne_bytes().to_vec();
    handle.extend_from_slice(&(data as *const _ as usize).to_ne_bytes());
    handle
}

#[test]
fn compile_calls_inspect_sharding_callbacks_with_the_value_sharding() {
    use pjrt_sys::protos::xla::{CompileOptionsProto, ExecutableBuildOptionsProto, OpSharding};
    use prost::Message;
    let client = try_client(&[int64_option("num_devices", 2)]).unwrap();
    let options = CompileOptionsProto {
        executable_build_options: Some(ExecutableBuildOptionsProto {
            num_replicas: 1,
            num_partitions: 2,
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec();
    let seen = std::sync::Mutex::new(Inspected::default());

    let program = inspecting_program(&callback_handle(record_sharding, &seen));
    let exe = client.try_compile(&program, &options).expect("compile");
    let specs = std::mem::take(&mut seen.lock().unwrap().specs);
    assert_eq!(specs.len(), 1);
    let sharding = OpSharding::decode(specs[0].as_slice()).expect("an OpSharding");
    // Rows split in two, partition 0 holding the first half.
    assert_eq!(
        sharding.r#type,
        pjrt_sys::protos::xla::op_sharding::Type::Other as i32
    );
    assert_eq!(sharding.tile_assignment_dimensions, vec![2, 1]);
    assert_eq!(sharding.tile_assignment_devices, vec![0, 1]);
    let mut destroy = PJRT_LoadedExecutable_Destroy_Args::new();
    destroy.executable = exe;
    call!(client.plugin, PJRT_LoadedExecutable_Destroy, &mut destroy).unwrap();

    // A callback's error fails the compile with its message, and is released.
    let program = inspecting_program(&callback_handle(refuse, &seen));
    let err = client
        .try_compile(&program, &options)
        .expect_err("the callback refused");
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_INTERNAL);
    assert!(
        err.message.contains("the callback refused"),
        "{}",
        err.message
    );
    assert_eq!(seen.lock().unwrap().freed, 1);

    // A backend config that is no callback handle is refused, and nothing is called.
    let err = client
        .try_compile(&inspecting_program(&[0x90; 5]), &options)
        .expect_err("not a handle");
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT);
    assert!(err.message.contains("InspectSharding"), "{}", err.message);
    assert!(seen.lock().unwrap().specs.is_empty());
}
