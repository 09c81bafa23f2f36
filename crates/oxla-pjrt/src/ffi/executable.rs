//! Compile, executable, loaded-executable and execute entry points.

use super::buffer::buffer;
use super::client::{client, device};
use super::convert;
use super::entry::entry_point;
use super::event;
use super::handles::*;
use super::types;
use oxla_client::{
    Buffer, ClientError, ClientOptions, CompileOptions, Executable, ExecuteOptions, FlagOverrides,
    FlagValue, LoadedExecutable, Result, PROGRAM_FORMAT,
};
use pjrt_sys::protos::xla;
use pjrt_sys::protos::xla::option_override_proto::Value as OverrideValue;
use pjrt_sys::protos::xla::CompileOptionsProto;
use pjrt_sys::*;
use prost::Message;

/// The parts of a serialized `xla.CompileOptionsProto` oxla keeps.
pub(crate) fn parse_compile_options(bytes: &[u8]) -> Result<CompileOptions> {
    let proto = CompileOptionsProto::decode(bytes).map_err(|e| {
        ClientError::InvalidArgument(format!("compile_options is not a CompileOptionsProto: {e}"))
    })?;
    // JAX's `compiler_options` arrive here; every key must be an oxla flag (with or without
    // the `oxla_` prefix), checked when the compile starts. Sorted, so the order is stable.
    let mut flags = FlagOverrides::new();
    let mut overrides: Vec<_> = proto.env_option_overrides.iter().collect();
    overrides.sort_by(|a, b| a.0.cmp(b.0));
    for (name, value) in overrides {
        let value = match &value.value {
            Some(OverrideValue::StringField(s)) => FlagValue::Str(s.clone()),
            Some(OverrideValue::BoolField(b)) => FlagValue::Bool(*b),
            Some(OverrideValue::IntField(n)) => FlagValue::Int(*n),
            Some(OverrideValue::DoubleField(d)) => FlagValue::Str(d.to_string()),
            None => FlagValue::Str(String::new()),
        };
        flags.push(name.clone(), value);
    }
    let build = proto.executable_build_options.unwrap_or_default();
    let count = |n: i64, what: &str| -> Result<usize> {
        match n {
            n if n <= 0 => Ok(1),
            n => usize::try_from(n)
                .map_err(|_| ClientError::InvalidArgument(format!("{what} {n} is out of range"))),
        }
    };
    let num_replicas = count(build.num_replicas, "num_replicas")?;
    let num_partitions = count(build.num_partitions, "num_partitions")?;
    let device_assignment = match build.device_assignment {
        None => None,
        Some(assignment) => {
            let replicas = usize::try_from(assignment.replica_count).unwrap_or(0);
            let computations = usize::try_from(assignment.computation_count).unwrap_or(0);
            if replicas != num_replicas
                || computations != num_partitions
                || assignment.computation_devices.len() != computations
            {
                return Err(ClientError::InvalidArgument(format!(
                    "device assignment is {replicas} replicas x {computations} computations, \
                     compile options ask for {num_replicas} x {num_partitions}"
                )));
            }
            let mut rows = vec![Vec::with_capacity(computations); replicas];
            for computation in &assignment.computation_devices {
                if computation.replica_device_ids.len() != replicas {
                    return Err(ClientError::InvalidArgument(
                        "device assignment rows have the wrong length".to_string(),
                    ));
                }
                for (row, &id) in rows.iter_mut().zip(&computation.replica_device_ids) {
                    row.push(i32::try_from(id).map_err(|_| {
                        ClientError::InvalidArgument(format!("device id {id} is out of range"))
                    })?);
                }
            }
            Some(rows)
        }
    };
    Ok(CompileOptions {
        num_replicas,
        num_partitions,
        device_assignment,
        serialized: bytes.to_vec(),
        flags,
        entry: None,
    })
}

/// Reads a `PJRT_Program` (format and code).
fn program<'a>(ptr: *const PJRT_Program) -> Result<&'a [u8]> {
    // SAFETY: the caller keeps the program alive for the duration of the call.
    let program: &PJRT_Program = unsafe { convert::handle(ptr, "program") }?;
    if program.struct_size < PJRT_Program::STRUCT_SIZE {
        return Err(ClientError::InvalidArgument(format!(
            "program->struct_size is {}, smaller than {}",
            program.struct_size,
            PJRT_Program::STRUCT_SIZE
        )));
    }
    // SAFETY: the caller passes `format_size` bytes at `format`.
    let format = unsafe { convert::str(program.format, program.format_size, "program format") }?;
    match format {
        PROGRAM_FORMAT => {}
        "hlo" | "hlo_with_config" => {
            return Err(ClientError::Unimplemented(format!(
                "program format {format:?}: oxla compiles StableHLO (format \"mlir\") only"
            )))
        }
        other => {
            return Err(ClientError::InvalidArgument(format!(
                "unknown program format {other:?}"
            )))
        }
    }
    // SAFETY: the caller passes `code_size` bytes at `code`.
    unsafe {
        convert::slice(
            program.code.cast_const().cast::<u8>(),
            program.code_size,
            "program code",
        )
    }
}

fn options_bytes<'a>(ptr: *const std::ffi::c_char, len: usize) -> Result<&'a [u8]> {
    // SAFETY: the caller passes `len` bytes of serialized options at `ptr`.
    unsafe { convert::slice(ptr.cast::<u8>(), len, "compile_options") }
}

fn loaded_handle(client: &ClientHandle, loaded: LoadedExecutable) -> *mut PJRT_LoadedExecutable {
    let device_ptrs = loaded
        .addressable_devices()
        .iter()
        .map(|d| client.device_ptr(d.id()))
        .collect();
    Box::into_raw(Box::new(LoadedExecutableHandle {
        loaded,
        client,
        device_ptrs,
    }))
    .cast()
}

fn executable_handle(executable: Executable) -> Result<*mut PJRT_Executable> {
    // Tokens have element type TOKEN and no dimensions.
    let outputs = || {
        executable
            .output_types()
            .iter()
            .enumerate()
            .map(|(idx, t)| (executable.output_is_token(idx), t))
    };
    let output_types = outputs()
        .map(|(token, t)| match token {
            true => Ok(PJRT_Buffer_Type_PJRT_Buffer_Type_TOKEN),
            false => types::buffer_type(t.element_type),
        })
        .collect::<Result<Vec<_>>>()?;
    let output_dims = outputs()
        .filter(|(token, _)| !token)
        .flat_map(|(_, t)| t.shape.iter().copied())
        .collect();
    let output_dim_sizes = outputs()
        .map(|(token, t)| if token { 0 } else { t.rank() })
        .collect();
    let kinds = executable.output_memory_kinds();
    Ok(Box::into_raw(Box::new(ExecutableHandle {
        memory_kinds: kinds.iter().map(|k| k.as_ptr().cast()).collect(),
        memory_kind_sizes: kinds.iter().map(|k| k.len()).collect(),
        executable,
        output_types,
        output_dims,
        output_dim_sizes,
        cost_properties: Vec::new(),
        signature_hlo: std::sync::OnceLock::new(),
    }))
    .cast())
}

fn executable<'a>(ptr: *const PJRT_Executable) -> Result<&'a ExecutableHandle> {
    // SAFETY: PJRT callers pass executables this plugin created and have not destroyed.
    unsafe { convert::handle(ptr, "executable") }
}

fn loaded<'a>(ptr: *const PJRT_LoadedExecutable) -> Result<&'a LoadedExecutableHandle> {
    // SAFETY: PJRT callers pass loaded executables this plugin created and have not destroyed.
    unsafe { convert::handle(ptr, "loaded executable") }
}

entry_point!(PJRT_Client_Compile, PJRT_Client_Compile_Args, |args| {
    let client_handle = client(args.client)?;
    let code = program(args.program)?;
    let options = parse_compile_options(options_bytes(
        args.compile_options,
        args.compile_options_size,
    )?)?;
    let compiled = client_handle.client.compile(code, options)?;
    super::inspect_sharding::call_inspect_callbacks(compiled.executable())?;
    args.executable = loaded_handle(client_handle, compiled);
    Ok(())
});

entry_point!(PJRT_Compile, PJRT_Compile_Args, |args| {
    let code = program(args.program)?;
    let options = parse_compile_options(options_bytes(
        args.compile_options,
        args.compile_options_size,
    )?)?;
    // No client here: the flags come from the environment (`OXLA_FLAGS`) and the options.
    let flags = ClientOptions::from_env()?
        .flags
        .for_compile(&options.flags)?;
    let compiled = Executable::compile_with(code, options, &flags, None)?;
    super::inspect_sharding::call_inspect_callbacks(&compiled)?;
    args.executable = executable_handle(compiled)?;
    Ok(())
});

entry_point!(
    PJRT_Executable_DeserializeAndLoad,
    PJRT_Executable_DeserializeAndLoad_Args,
    |args| {
        let client_handle = client(args.client)?;
        // SAFETY: the caller passes `serialized_executable_size` bytes.
        let bytes = unsafe {
            convert::slice(
                args.serialized_executable.cast::<u8>(),
                args.serialized_executable_size,
                "serialized_executable",
            )
        }?;
        let loaded = client_handle.client.deserialize_and_load(bytes)?;
        args.loaded_executable = loaded_handle(client_handle, loaded);
        Ok(())
    }
);

entry_point!(
    PJRT_Executable_Destroy,
    PJRT_Executable_Destroy_Args,
    |args| {
        if !args.executable.is_null() {
            // SAFETY: `executable` was created by this plugin and is destroyed once.
            drop(unsafe { Box::from_raw(args.executable.cast::<ExecutableHandle>()) });
        }
        Ok(())
    }
);

entry_point!(PJRT_Executable_Name, PJRT_Executable_Name_Args, |args| {
    let name = executable(args.executable)?.executable.name();
    args.executable_name = name.as_ptr().cast();
    args.executable_name_size = name.len();
    Ok(())
});

entry_point!(
    PJRT_Executable_NumReplicas,
    PJRT_Executable_NumReplicas_Args,
    |args| {
        args.num_replicas = executable(args.executable)?.executable.num_replicas();
        Ok(())
    }
);

entry_point!(
    PJRT_Executable_NumPartitions,
    PJRT_Executable_NumPartitions_Args,
    |args| {
        args.num_partitions = executable(args.executable)?.executable.num_partitions();
        Ok(())
    }
);

entry_point!(
    PJRT_Executable_NumOutputs,
    PJRT_Executable_NumOutputs_Args,
    |args| {
        args.num_outputs = executable(args.executable)?.executable.num_outputs();
        Ok(())
    }
);

entry_point!(
    PJRT_Executable_SizeOfGeneratedCodeInBytes,
    PJRT_Executable_SizeOfGeneratedCodeInBytes_Args,
    |args| {
        let size = executable(args.executable)?.executable.code_size();
        args.size_in_bytes = i64::try_from(size).unwrap_or(i64::MAX);
        Ok(())
    }
);

entry_point!(
    PJRT_Executable_GetCostAnalysis,
    PJRT_Executable_GetCostAnalysis_Args,
    |args| {
        let handle = executable(args.executable)?;
        args.properties = handle.cost_properties.as_ptr();
        args.num_properties = handle.cost_properties.len();
        Ok(())
    }
);

entry_point!(
    PJRT_Executable_GetCompiledMemoryStats,
    PJRT_Executable_GetCompiledMemoryStats_Args,
    |args| {
        let exe = &executable(args.executable)?.executable;
        let bytes = |types: &[oxla_client::TensorType]| -> i64 {
            types
                .iter()
                .map(|t| t.byte_size().unwrap_or(0) as i64)
                .sum()
        };
        args.generated_code_size_in_bytes = exe.code_size() as i64;
        args.argument_size_in_bytes = bytes(exe.input_types());
        args.output_size_in_bytes = bytes(exe.output_types());
        args.alias_size_in_bytes = 0;
        args.temp_size_in_bytes = 0;
        args.host_generated_code_size_in_bytes = 0;
        args.host_argument_size_in_bytes = 0;
        args.host_output_size_in_bytes = 0;
        args.host_alias_size_in_bytes = 0;
        args.host_temp_size_in_bytes = 0;
        Ok(())
    }
);

entry_point!(
    PJRT_Executable_OutputElementTypes,
    PJRT_Executable_OutputElementTypes_Args,
    |args| {
        let handle = executable(args.executable)?;
        args.output_types = handle.output_types.as_ptr().cast_mut();
        args.num_output_types = handle.output_types.len();
        Ok(())
    }
);

entry_point!(
    PJRT_Executable_OutputDimensions,
    PJRT_Executable_OutputDimensions_Args,
    |args| {
        let handle = executable(args.executable)?;
        args.num_outputs = handle.output_dim_sizes.len();
        args.dims = handle.output_dims.as_ptr();
        args.dim_sizes = handle.output_dim_sizes.as_ptr();
        Ok(())
    }
);

entry_point!(
    PJRT_Executable_OutputMemoryKinds,
    PJRT_Executable_OutputMemoryKinds_Args,
    |args| {
        let handle = executable(args.executable)?;
        args.num_outputs = handle.memory_kinds.len();
        args.memory_kinds = handle.memory_kinds.as_ptr();
        args.memory_kind_sizes = handle.memory_kind_sizes.as_ptr();
        Ok(())
    }
);

/// PJRT's name for a serialized `xla.HloModuleProtoWithConfig`.
const HLO_WITH_CONFIG_FORMAT: &str = "hlo_with_config";

/// Magic bytes that open an MLIR bytecode file.
const MLIR_BYTECODE_MAGIC: &[u8] = b"ML\xefR";

/// An array shape with XLA's default (major-to-minor) layout.
fn shape_proto(ty: &oxla_client::TensorType) -> Option<xla::ShapeProto> {
    let rank = ty.shape.len();
    Some(xla::ShapeProto {
        element_type: ty.element_type.xla_primitive_type()?,
        dimensions: ty.shape.clone(),
        is_dynamic_dimension: vec![false; rank],
        layout: Some(Box::new(xla::LayoutProto {
            minor_to_major: (0..rank as i64).rev().collect(),
            ..Default::default()
        })),
        ..Default::default()
    })
}

/// The shape of a token: element type `TOKEN`, no dimensions and no layout.
fn token_shape_proto() -> xla::ShapeProto {
    xla::ShapeProto {
        element_type: 17, // TOKEN
        ..Default::default()
    }
}

/// The sharding of a value that is `global` as a whole and `local` on each of `partitions`
/// devices: replicated when they are equal, tiled when the split dimensions make one tile per
/// device (partition `p` holding tile `p` in row-major order, as `jax.pmap` and a
/// `shard_map` over all mesh axes lay them out). `None` for anything else, where which
/// partitions share a tile cannot be told from the shapes alone.
fn sharding_proto(
    global: &oxla_client::TensorType,
    local: &oxla_client::TensorType,
    partitions: usize,
) -> Option<xla::OpSharding> {
    if global == local {
        return Some(xla::OpSharding {
            r#type: xla::op_sharding::Type::Replicated as i32,
            ..Default::default()
        });
    }
    if global.element_type != local.element_type || global.rank() != local.rank() {
        return None;
    }
    let mut tiles = Vec::with_capacity(global.rank());
    for (&g, &l) in global.shape.iter().zip(&local.shape) {
        if g == l {
            tiles.push(1);
        } else if l > 0 && g % l == 0 {
            tiles.push(g / l);
        } else {
            return None;
        }
    }
    // Every partition holds its own shard, in row-major order over the split dimensions
    // (a `shard_map` over all mesh axes, its mesh in device order). Fewer shards than
    // partitions do not say which partitions share one.
    if tiles.iter().product::<i64>() != partitions as i64 {
        return None;
    }
    Some(xla::OpSharding {
        r#type: xla::op_sharding::Type::Other as i32,
        tile_assignment_dimensions: tiles,
        tile_assignment_devices: (0..partitions as i64).collect(),
        ..Default::default()
    })
}

/// The sharding of a value that a program run whole hands out as `tiling` says: shards in
/// row-major order over the tiled dimensions, then a dimension of summands when the value has
/// unreduced axes and one of replicas when several partitions hold each shard (XLA's
/// `last_tile_dims={unreduced, replicated}`).
pub(super) fn tiling_proto(tiling: &oxla_ir::sharding::Tiling) -> Option<xla::OpSharding> {
    // `OpSharding.Type.UNREDUCED` (newer than the protos this crate is built from).
    const UNREDUCED: i32 = 6;
    if tiling.is_replicated() {
        return Some(xla::OpSharding {
            r#type: xla::op_sharding::Type::Replicated as i32,
            ..Default::default()
        });
    }
    let assignment = tiling.tile_assignment()?;
    let mut dimensions = tiling.tiles_per_dim();
    if assignment.summands == tiling.origins.len() {
        // Every partition holds a summand of the whole value.
        return Some(xla::OpSharding {
            r#type: UNREDUCED,
            ..Default::default()
        });
    }
    let mut last_tile_dims = Vec::new();
    if assignment.summands > 1 {
        dimensions.push(assignment.summands as i64);
        last_tile_dims.push(UNREDUCED);
    }
    if assignment.replicas > 1 {
        dimensions.push(assignment.replicas as i64);
        last_tile_dims.push(xla::op_sharding::Type::Replicated as i32);
    }
    // A single subgroup of replicas is written the older way.
    let replicate_on_last_tile_dim = last_tile_dims == [xla::op_sharding::Type::Replicated as i32];
    if replicate_on_last_tile_dim {
        last_tile_dims.clear();
    }
    Some(xla::OpSharding {
        r#type: xla::op_sharding::Type::Other as i32,
        tile_assignment_dimensions: dimensions,
        tile_assignment_devices: assignment.devices,
        replicate_on_last_tile_dim,
        last_tile_dims,
        ..Default::default()
    })
}

/// The executable's signature as an HLO module (`hlo_with_config`): one parameter per input
/// and a body of opaque custom calls producing the outputs.
///
/// jaxlib reads the optimized program after every compile, several times, only for the
/// parameter and output layouts and the output shardings. A StableHLO program costs it an MLIR
/// context, a VHLO upgrade and a conversion to HLO each time (most of a small program's compile
/// time); a signature module is decoded directly. A partitioned program's module carries
/// global shapes and the parameter and output shardings jaxlib asks for. `None` (the program
/// itself is returned) for programs received as text, replicated programs, shardings
/// [`sharding_proto`] cannot express, and element types without a plain XLA layout.
fn signature_hlo(exe: &Executable) -> Option<Vec<u8>> {
    if exe.num_replicas() != 1 || !exe.optimized_program().1.starts_with(MLIR_BYTECODE_MAGIC) {
        return None;
    }
    let partitions = exe.num_partitions();
    // A partitioned program's HLO signature is global: shapes from the entry function, and
    // each value's sharding from how its per-device shape relates to the global one.
    let (global_in, global_out) = if partitions > 1 {
        let entry = exe.module().function(exe.entry_name())?;
        // Tokens stand in as the empty buffers they travel as (written as tokens below).
        let tensors = |tys: &[oxla_ir::Type]| {
            tys.iter()
                .map(|t| match t {
                    oxla_ir::Type::Token => Some(oxla_ir::eval::token_literal().ty),
                    t => t.as_tensor().filter(|t| t.is_static()).cloned(),
                })
                .collect::<Option<Vec<_>>>()
        };
        (tensors(&entry.ty.inputs)?, tensors(&entry.ty.results)?)
    } else {
        (exe.input_types().to_vec(), exe.output_types().to_vec())
    };
    let (param_shardings, result_shardings) = if let Some((inputs, outputs)) = exe.tilings() {
        let protos = |tilings: &[oxla_ir::sharding::Tiling]| {
            tilings.iter().map(tiling_proto).collect::<Option<Vec<_>>>()
        };
        (protos(inputs)?, protos(outputs)?)
    } else if partitions > 1 {
        // Run per device: where the signature names a sharding whose shards have the
        // per-device type, it says which device holds which shard; otherwise the shapes do.
        let entry = exe.module().function(exe.entry_name())?;
        let named = oxla_ir::sharding::entry_tilings(exe.module(), entry, partitions).ok();
        let protos = |tilings: Option<&Vec<oxla_ir::sharding::Tiling>>,
                      global: &[oxla_client::TensorType],
                      local: &[oxla_client::TensorType]| {
            global
                .iter()
                .zip(local)
                .enumerate()
                .map(|(i, (g, l))| {
                    tilings
                        .and_then(|t| t.get(i))
                        .filter(|t| &t.local == l)
                        .and_then(tiling_proto)
                        .or_else(|| sharding_proto(g, l, partitions))
                })
                .collect::<Option<Vec<_>>>()
        };
        (
            protos(
                named.as_ref().map(|t| &t.inputs),
                &global_in,
                exe.input_types(),
            )?,
            protos(
                named.as_ref().map(|t| &t.outputs),
                &global_out,
                exe.output_types(),
            )?,
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let signature = |types: &[oxla_client::TensorType], is_token: &dyn Fn(usize) -> bool| {
        types
            .iter()
            .enumerate()
            .map(|(idx, ty)| match is_token(idx) {
                true => Some(token_shape_proto()),
                false => shape_proto(ty),
            })
            .collect::<Option<Vec<_>>>()
    };
    let params = signature(&global_in, &|idx| exe.input_is_token(idx))?;
    let results = signature(&global_out, &|idx| exe.output_is_token(idx))?;
    let result = if results.len() == 1 {
        results[0].clone()
    } else {
        xla::ShapeProto {
            element_type: 13, // TUPLE
            tuple_shapes: results.clone(),
            ..Default::default()
        }
    };
    let program_shape = xla::ProgramShapeProto {
        parameter_names: (0..params.len()).map(|i| format!("p{i}")).collect(),
        parameters: params.clone(),
        result: Some(result.clone()),
    };
    let mut instructions = Vec::with_capacity(params.len() + results.len() + 1);
    for (i, shape) in params.into_iter().enumerate() {
        instructions.push(xla::HloInstructionProto {
            name: format!("p{i}"),
            opcode: "parameter".to_string(),
            shape: Some(shape),
            id: i as i64,
            parameter_number: i as i64,
            sharding: param_shardings.get(i).cloned(),
            ..Default::default()
        });
    }
    let first_result = instructions.len() as i64;
    for (i, shape) in results.iter().enumerate() {
        instructions.push(xla::HloInstructionProto {
            name: format!("r{i}"),
            opcode: "custom-call".to_string(),
            shape: Some(shape.clone()),
            id: first_result + i as i64,
            custom_call_target: "oxla.result".to_string(),
            ..Default::default()
        });
    }
    let root_id = if results.len() == 1 {
        first_result
    } else {
        let id = first_result + results.len() as i64;
        instructions.push(xla::HloInstructionProto {
            name: "tuple".to_string(),
            opcode: "tuple".to_string(),
            shape: Some(result),
            id,
            operand_ids: (first_result..id).collect(),
            ..Default::default()
        });
        id
    };
    let computation_id = root_id + 1;
    let name = exe.entry_name().to_string();
    let module = xla::HloModuleProtoWithConfig {
        hlo_module: Some(xla::HloModuleProto {
            name: exe.name().to_string(),
            entry_computation_name: name.clone(),
            entry_computation_id: computation_id,
            computations: vec![xla::HloComputationProto {
                name,
                instructions,
                program_shape: Some(program_shape.clone()),
                id: computation_id,
                root_id,
                ..Default::default()
            }],
            host_program_shape: Some(program_shape.clone()),
            // A program without results has one output sharding, a replicated one, for its
            // empty tuple (jaxlib requires exactly one there).
            spmd_output_sharding: (partitions > 1).then(|| {
                if result_shardings.is_empty() {
                    xla::OpSharding {
                        r#type: xla::op_sharding::Type::Replicated as i32,
                        ..Default::default()
                    }
                } else {
                    xla::OpSharding {
                        r#type: xla::op_sharding::Type::Tuple as i32,
                        tuple_shardings: result_shardings,
                        ..Default::default()
                    }
                }
            }),
            spmd_parameters_shardings: param_shardings,
            ..Default::default()
        }),
        config: Some(xla::HloModuleConfigProto {
            entry_computation_layout: Some(program_shape),
            replica_count: 1,
            num_partitions: partitions as i64,
            use_spmd_partitioning: partitions > 1,
            intra_op_parallelism_threads: -1,
            ..Default::default()
        }),
    };
    Some(module.encode_to_vec())
}

entry_point!(
    PJRT_Executable_OptimizedProgram,
    PJRT_Executable_OptimizedProgram_Args,
    |args| {
        let handle = executable(args.executable)?;
        if args.program.is_null() {
            return Err(ClientError::InvalidArgument("program is null".to_string()));
        }
        // SAFETY: non-null; the caller owns the program struct for the duration of the call.
        let program = unsafe { &mut *args.program };
        if program.struct_size < PJRT_Program::STRUCT_SIZE {
            return Err(ClientError::InvalidArgument(format!(
                "program->struct_size is {}, smaller than {}",
                program.struct_size,
                PJRT_Program::STRUCT_SIZE
            )));
        }
        let signature = handle
            .signature_hlo
            .get_or_init(|| signature_hlo(&handle.executable));
        let (format, code) = match signature {
            Some(bytes) => (HLO_WITH_CONFIG_FORMAT, bytes.as_slice()),
            None => handle.executable.optimized_program(),
        };
        program.format = format.as_ptr().cast();
        program.format_size = format.len();
        if program.code.is_null() {
            program.code_size = code.len();
            return Ok(());
        }
        if program.code_size < code.len() {
            return Err(ClientError::InvalidArgument(format!(
                "program->code_size {} is smaller than the {} bytes of the program",
                program.code_size,
                code.len()
            )));
        }
        // SAFETY: the caller provides `code_size` writable bytes at `code`.
        let out = unsafe { convert::bytes_mut(program.code.cast(), code.len(), "program code") }?;
        out.copy_from_slice(code);
        program.code_size = code.len();
        Ok(())
    }
);

unsafe extern "C" fn delete_serialized(serialized: *mut PJRT_SerializedExecutable) {
    if !serialized.is_null() {
        // SAFETY: `serialized` came from PJRT_Executable_Serialize and is deleted once.
        drop(unsafe { Box::from_raw(serialized.cast::<SerializedHandle>()) });
    }
}

entry_point!(
    PJRT_Executable_Serialize,
    PJRT_Executable_Serialize_Args,
    |args| {
        let handle = executable(args.executable)?;
        let serialized = Box::new(SerializedHandle {
            bytes: handle.executable.serialize(),
        });
        args.serialized_bytes = serialized.bytes.as_ptr().cast();
        args.serialized_bytes_size = serialized.bytes.len();
        args.serialized_executable = Box::into_raw(serialized).cast();
        args.serialized_executable_deleter = Some(delete_serialized);
        Ok(())
    }
);

entry_point!(
    PJRT_Executable_Fingerprint,
    PJRT_Executable_Fingerprint_Args,
    |args| {
        let fingerprint = executable(args.executable)?.executable.fingerprint();
        args.executable_fingerprint = fingerprint.as_ptr().cast();
        args.executable_fingerprint_size = fingerprint.len();
        Ok(())
    }
);

entry_point!(
    PJRT_LoadedExecutable_Destroy,
    PJRT_LoadedExecutable_Destroy_Args,
    |args| {
        if !args.executable.is_null() {
            // SAFETY: `executable` was created by this plugin and is destroyed once.
            let handle = unsafe { Box::from_raw(args.executable.cast::<LoadedExecutableHandle>()) };
            handle.loaded.delete();
        }
        Ok(())
    }
);

entry_point!(
    PJRT_LoadedExecutable_GetExecutable,
    PJRT_LoadedExecutable_GetExecutable_Args,
    |args| {
        let handle = loaded(args.loaded_executable)?;
        args.executable = executable_handle(handle.loaded.executable().clone())?;
        Ok(())
    }
);

entry_point!(
    PJRT_LoadedExecutable_AddressableDevices,
    PJRT_LoadedExecutable_AddressableDevices_Args,
    |args| {
        let handle = loaded(args.executable)?;
        args.addressable_devices = handle.device_ptrs.as_ptr();
        args.num_addressable_devices = handle.device_ptrs.len();
        Ok(())
    }
);

entry_point!(
    PJRT_LoadedExecutable_Delete,
    PJRT_LoadedExecutable_Delete_Args,
    |args| {
        loaded(args.executable)?.loaded.delete();
        Ok(())
    }
);

entry_point!(
    PJRT_LoadedExecutable_IsDeleted,
    PJRT_LoadedExecutable_IsDeleted_Args,
    |args| {
        args.is_deleted = loaded(args.executable)?.loaded.is_deleted();
        Ok(())
    }
);

entry_point!(
    PJRT_LoadedExecutable_Fingerprint,
    PJRT_LoadedExecutable_Fingerprint_Args,
    |args| {
        let fingerprint = loaded(args.executable)?.loaded.executable().fingerprint();
        args.executable_fingerprint = fingerprint.as_ptr().cast();
        args.executable_fingerprint_size = fingerprint.len();
        Ok(())
    }
);

/// Reads the per-call execute options.
fn execute_options(ptr: *const PJRT_ExecuteOptions) -> Result<Vec<usize>> {
    if ptr.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: non-null; the caller keeps the options alive for the call.
    let options: &PJRT_ExecuteOptions = unsafe { &*ptr };
    if options.struct_size < PJRT_ExecuteOptions::STRUCT_SIZE {
        return Err(ClientError::InvalidArgument(format!(
            "options->struct_size is {}, smaller than {}",
            options.struct_size,
            PJRT_ExecuteOptions::STRUCT_SIZE
        )));
    }
    // SAFETY: the caller passes `num_non_donatable_input_indices` indices.
    let indices = unsafe {
        convert::slice(
            options.non_donatable_input_indices,
            options.num_non_donatable_input_indices,
            "non_donatable_input_indices",
        )
    }?;
    Ok(indices
        .iter()
        .filter_map(|&i| usize::try_from(i).ok())
        .collect())
}

entry_point!(
    PJRT_LoadedExecutable_Execute,
    PJRT_LoadedExecutable_Execute_Args,
    |args| {
        let handle = loaded(args.executable)?;
        // SAFETY: the loaded executable stores its client's handle; clients outlive executables.
        let client_handle: &ClientHandle = unsafe { convert::handle(handle.client, "client") }?;
        let non_donatable_inputs = execute_options(args.options)?;
        let execute_device = if args.execute_device.is_null() {
            None
        } else {
            Some(device(args.execute_device)?.device.clone())
        };
        // SAFETY: the caller passes `num_devices` argument lists of `num_args` buffers each.
        let lists =
            unsafe { convert::slice(args.argument_lists, args.num_devices, "argument_lists") }?;
        let mut argument_lists: Vec<Vec<Buffer>> = Vec::with_capacity(lists.len());
        for (device_idx, &list) in lists.iter().enumerate() {
            // SAFETY: as above.
            let ptrs = unsafe { convert::slice(list, args.num_args, "argument list") }?;
            let buffers = ptrs
                .iter()
                .enumerate()
                .map(|(arg_idx, &ptr)| {
                    buffer(ptr).map(|h| h.buffer.clone()).map_err(|_| {
                        ClientError::InvalidArgument(format!(
                            "argument {arg_idx} for device {device_idx} is null"
                        ))
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            argument_lists.push(buffers);
        }
        // A program without outputs writes nothing, and JAX may then pass null lists.
        let num_outputs = handle.loaded.executable().num_outputs();
        let output_lists: &[*mut *mut PJRT_Buffer] = if num_outputs == 0 {
            &[]
        } else {
            // SAFETY: the caller passes `num_devices` output lists.
            unsafe { convert::slice(args.output_lists, args.num_devices, "output_lists") }?
        };
        if output_lists.iter().any(|list| list.is_null()) {
            return Err(ClientError::InvalidArgument(
                "an output list is null".to_string(),
            ));
        }
        let result = handle.loaded.execute(
            &argument_lists,
            &ExecuteOptions {
                non_donatable_inputs,
                execute_device,
            },
        )?;
        for (&list, outputs) in output_lists.iter().zip(result.outputs) {
            for (output_idx, output) in outputs.into_iter().enumerate() {
                let output = if handle.loaded.executable().output_is_token(output_idx) {
                    client_handle.token_handle(output)
                } else {
                    client_handle.buffer_handle(output)
                };
                let ptr: *mut PJRT_Buffer = Box::into_raw(output).cast();
                // SAFETY: the caller allocated `num_outputs` slots in each output list.
                unsafe { list.add(output_idx).write(ptr) };
            }
        }
        if !args.device_complete_events.is_null() {
            for (device_idx, done) in result.completions.into_iter().enumerate() {
                // SAFETY: when non-null, the caller allocated `num_devices` event slots.
                unsafe {
                    args.device_complete_events
                        .add(device_idx)
                        .write(event::into_raw(done))
                };
            }
        }
        Ok(())
    }
);
