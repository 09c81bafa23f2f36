//! Executables: compiled programs, their metadata, their serialized form, and execution.
//!
//! Compiling reads the program with oxla-frontend, runs the IR verifier (a malformed program is
//! an invalid argument listing the broken rules), checks that the entry function exists, that
//! its signature is static tensors only, and that the evaluator implements every op (an
//! unsupported op fails here, naming the op and its location). Execution runs the entry function
//! once per device on the worker pool.

use crate::buffer::{Buffer, Slot};
use crate::collectives::{Rendezvous, DEFAULT_COLLECTIVE_TIMEOUT};
use crate::device::{Device, MEMORY_KIND};
use crate::dump::CompileRun;
use crate::error::{ClientError, Result};
use crate::event::Event;
use crate::flags::{FlagOverrides, Flags};
use crate::trace::Tracer;
use oxla_ir::eval::{Collectives, ProcessId};
use oxla_ir::sharding::{EntryTilings, Tiling};
use oxla_ir::{Attribute, Function, Literal, Module, Op, OpKind, Region, TensorType, Type};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Options a program is compiled with (the parts of XLA's `CompileOptionsProto` oxla keeps).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileOptions {
    /// Number of replicas (at least 1).
    pub num_replicas: usize,
    /// Number of partitions (at least 1).
    pub num_partitions: usize,
    /// Device ids by `[replica][partition]`; `None` means the client's default assignment.
    pub device_assignment: Option<Vec<Vec<i32>>>,
    /// The options as the caller serialized them (kept verbatim for serialization).
    pub serialized: Vec<u8>,
    /// Per-compile flag overrides (JAX `compiler_options`), validated when compiling.
    pub flags: FlagOverrides,
    /// The function to run; `None` picks `main` or the module's single public function.
    pub entry: Option<String>,
}

impl Default for CompileOptions {
    fn default() -> CompileOptions {
        CompileOptions {
            num_replicas: 1,
            num_partitions: 1,
            device_assignment: None,
            serialized: Vec::new(),
            flags: FlagOverrides::default(),
            entry: None,
        }
    }
}

/// The format name of programs oxla compiles and reports.
pub const PROGRAM_FORMAT: &str = "mlir";

/// Magic bytes of a serialized oxla executable.
pub const SERIALIZED_MAGIC: &[u8; 8] = b"OXLAEXE\0";
/// Version of the serialized executable format (2 added the entry function's name; version
/// 1 is still read).
pub const SERIALIZED_VERSION: u32 = 2;

/// Whether the evaluator implements `op` (for a custom call: its target).
fn op_supported(op: &Op) -> bool {
    oxla_ir::eval::is_supported_op(op)
}

fn check_region(region: &Region) -> Result<()> {
    let mut worklist = vec![region];
    while let Some(region) = worklist.pop() {
        for block in &region.blocks {
            for op in &block.ops {
                if !op_supported(op) {
                    let target = match op.attr("call_target_name") {
                        Some(Attribute::String(t)) => format!(" (target `{t}`)"),
                        _ => String::new(),
                    };
                    return Err(ClientError::Unimplemented(format!(
                        "op {}{target} at {} is not supported by oxla",
                        op.kind.name(),
                        op.location
                    )));
                }
                worklist.extend(op.regions.iter());
            }
        }
    }
    Ok(())
}

fn static_tensor(ty: &Type, what: &str) -> Result<TensorType> {
    match ty {
        Type::Tensor(t) if t.is_static() => Ok(t.clone()),
        // Runtime tokens (JAX's ordered effects) travel as empty `pred` buffers.
        Type::Token => Ok(oxla_ir::eval::token_literal().ty),
        other => Err(ClientError::Unimplemented(format!(
            "{what} has type {other}; oxla supports statically shaped tensors only"
        ))),
    }
}

fn is_donated(attrs: &[(String, Attribute)]) -> bool {
    attrs.iter().any(|(name, attr)| match name.as_str() {
        "jax.buffer_donor" => !matches!(attr, Attribute::Bool(false)),
        "tf.aliasing_output" => attr.as_int().is_some(),
        _ => false,
    })
}

struct ExecutableInner {
    name: String,
    module: Module,
    entry: String,
    program: Vec<u8>,
    options: CompileOptions,
    input_types: Vec<TensorType>,
    output_types: Vec<TensorType>,
    /// Which arguments and outputs are tokens (`!stablehlo.token` in the entry's signature).
    token_inputs: Vec<bool>,
    token_outputs: Vec<bool>,
    donated: Vec<bool>,
    fingerprint: String,
    /// For a partitioned program: the module with the entry's per-device signature.
    device_module: Option<Module>,
    /// For a program that runs on whole values (see [`Gathered`]).
    gathered: Option<Gathered>,
    /// Whether the device executions of one launch may meet: the program holds collective
    /// ops or `shard_map` regions (which exchange shards when they sit among ops on whole
    /// values). Such executions must run concurrently.
    collectives: bool,
    /// Whether a single-device execution may run on the calling thread (see [`runs_inline`]).
    inline: bool,
    /// Whether a single-device execution off the calling thread runs on the evaluator's
    /// thread pool rather than on its worker (see [`runs_on_eval_pool`]).
    on_eval_pool: bool,
    /// How the evaluator runs the program (fusion from `opt_level` 1 up).
    eval_options: oxla_ir::eval::EvalOptions,
    /// The evaluator's plans of the module that runs, made at compile time and kept for
    /// every execution.
    plans: oxla_ir::eval::PlanCache,
}

/// A compiled program, independent of devices. Cheap to clone.
#[derive(Clone)]
pub struct Executable {
    inner: Arc<ExecutableInner>,
}

impl std::fmt::Debug for Executable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executable")
            .field("name", &self.inner.name)
            .finish()
    }
}

/// 64-bit FNV-1a, used for fingerprints.
fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(seed, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Executable {
    /// Compiles `program` (MLIR bytecode or StableHLO text) with default flags, then
    /// `OXLA_ARTIFACT_DIR` and the options' own flag overrides; no trace.
    pub fn compile(program: &[u8], options: CompileOptions) -> Result<Executable> {
        let flags = Flags::default().for_compile(&options.flags)?;
        Executable::compile_with(program, options, &flags, None)
    }

    /// Compiles `program` with `flags` (overrides already applied), recording its phases to
    /// `tracer`; dumps and crash reproducers follow the flags.
    pub fn compile_with(
        program: &[u8],
        options: CompileOptions,
        flags: &Flags,
        tracer: Option<&Tracer>,
    ) -> Result<Executable> {
        let mut run = CompileRun::new(program, &options, flags, tracer);
        let result = Executable::compile_phases(program, options.clone(), &mut run);
        run.finish(result)
    }

    fn compile_phases(
        program: &[u8],
        options: CompileOptions,
        run: &mut CompileRun<'_>,
    ) -> Result<Executable> {
        if options.num_replicas == 0 || options.num_partitions == 0 {
            return Err(ClientError::InvalidArgument(format!(
                "{} replicas x {} partitions: both must be at least 1",
                options.num_replicas, options.num_partitions
            )));
        }
        let mut module = run.phase("read", || Ok(oxla_frontend::read_program(program)?))?;
        run.set_module_name(module.name.as_deref().unwrap_or("program"));
        run.ir_after("read", &module);
        run.phase("verify", || {
            oxla_ir::verifier::verify_module(&module).map_err(|errors| {
                ClientError::InvalidArgument(format!(
                    "program failed verification ({} errors):\n{}",
                    errors.len(),
                    errors.summary(20)
                ))
            })
        })?;
        // Calls that run as other ops (`ApproxTopK` as a sort and slices), at every
        // optimization level.
        let lowered = run.phase("lower", || {
            Ok(oxla_ir::transform::lower_approx_top_k(&mut module)?)
        })?;
        if lowered > 0 {
            run.ir_after("lower", &module);
        }
        let entry: &Function = match &options.entry {
            Some(name) => module.function(name).ok_or_else(|| {
                ClientError::InvalidArgument(format!("program has no function named `{name}`"))
            })?,
            None => module.entry_function().ok_or_else(|| {
                ClientError::InvalidArgument(
                    "program has no entry function (`main` or a single public function)"
                        .to_string(),
                )
            })?,
        };
        run.phase("check", || {
            module
                .functions
                .iter()
                .try_for_each(|function| check_region(&function.body))
        })?;
        let input_types = entry
            .ty
            .inputs
            .iter()
            .enumerate()
            .map(|(idx, ty)| static_tensor(ty, &format!("argument {idx} of @{}", entry.name)))
            .collect::<Result<Vec<_>>>()?;
        let output_types = entry
            .ty
            .results
            .iter()
            .enumerate()
            .map(|(idx, ty)| static_tensor(ty, &format!("result {idx} of @{}", entry.name)))
            .collect::<Result<Vec<_>>>()?;
        let tokens = |types: &[Type]| types.iter().map(|ty| matches!(ty, Type::Token)).collect();
        let (token_inputs, token_outputs) = (tokens(&entry.ty.inputs), tokens(&entry.ty.results));
        let collectives = crate::collectives::uses_collectives(&module);
        let (gathered, localized) = plan_partitions(&module, entry, &options, collectives)?;
        let collectives = collectives || crate::collectives::has_any_manual_regions(&module);
        let (input_types, output_types, device_module) = match (localized, &gathered) {
            (Some(l), _) => (l.inputs, l.outputs, Some(l.module)),
            (None, Some(g)) => (
                g.tilings.inputs.iter().map(|t| t.local.clone()).collect(),
                g.tilings.outputs.iter().map(|t| t.local.clone()).collect(),
                None,
            ),
            (None, None) => (input_types, output_types, None),
        };
        let donated = (0..input_types.len())
            .map(|idx| entry.arg_attrs.get(idx).is_some_and(|a| is_donated(a)))
            .collect();
        let name = module.name.clone().unwrap_or_else(|| entry.name.clone());
        let entry_name = entry.name.clone();
        let (mut module, mut device_module) = (module, device_module);
        if run.flags().opt_level >= 1 {
            // Calls to plain private functions (`jnp.where`, `tril`, ...) become their
            // bodies, so fusion and the row groups see across them.
            let inlined = run.phase("inline", || {
                let mut inlined = oxla_ir::transform::inline_calls(&mut module);
                if let Some(device_module) = device_module.as_mut() {
                    inlined += oxla_ir::transform::inline_calls(device_module);
                }
                Ok(inlined)
            })?;
            if inlined > 0 {
                run.ir_after("inline", device_module.as_ref().unwrap_or(&module));
            }
            // Integer guards on constants (JAX's `select(c == 0, 1, c)` around a divisor)
            // become constants, so the fused code sees a constant divisor, and the 64-bit
            // counters of `jax.random` narrow to what they hold; a transpose read only by a
            // product (`a @ b.T`) becomes part of the product, which reads it in place.
            let folded = run.phase("fold", || {
                let mut folded = 0;
                for m in std::iter::once(&mut module).chain(device_module.as_mut()) {
                    folded += oxla_ir::transform::fold_integer_constants(m);
                    folded += oxla_ir::transform::simplify_counters(m);
                    folded += oxla_ir::transform::fold_transposes_into_dots(m);
                }
                Ok(folded)
            })?;
            if folded > 0 {
                run.ir_after("fold", device_module.as_ref().unwrap_or(&module));
            }
            // What nothing reads goes (JAX's `lu` builds a permutation `det` never reads).
            let removed = run.phase("dead", || {
                let mut removed = 0;
                for m in std::iter::once(&mut module).chain(device_module.as_mut()) {
                    removed += oxla_ir::transform::remove_dead_ops(m);
                }
                Ok(removed)
            })?;
            if removed > 0 {
                run.ir_after("dead", device_module.as_ref().unwrap_or(&module));
            }
        }
        if run.flags().xla_divisions {
            // Divisions round as on XLA's cpu backend (`x / c` as `x * (1/c)`, ...), so a
            // JAX program gives the bits it gives there.
            let rewritten = run.phase("divisions", || {
                let mut rewritten = oxla_ir::transform::rewrite_divisions(&mut module);
                if let Some(device_module) = device_module.as_mut() {
                    rewritten += oxla_ir::transform::rewrite_divisions(device_module);
                }
                Ok(rewritten)
            })?;
            if rewritten > 0 {
                run.ir_after("divisions", device_module.as_ref().unwrap_or(&module));
            }
        }
        let inline = !collectives && runs_inline(device_module.as_ref().unwrap_or(&module));
        let on_eval_pool =
            !collectives && runs_on_eval_pool(device_module.as_ref().unwrap_or(&module));
        let mut hash_input = Vec::new();
        hash_input.extend_from_slice(env!("CARGO_PKG_VERSION").as_bytes());
        hash_input.extend_from_slice(&(program.len() as u64).to_le_bytes());
        hash_input.extend_from_slice(program);
        hash_input.extend_from_slice(&options.serialized);
        hash_input.extend_from_slice(&(options.num_replicas as u64).to_le_bytes());
        hash_input.extend_from_slice(&(options.num_partitions as u64).to_le_bytes());
        let fingerprint = format!(
            "{:016x}{:016x}",
            fnv1a(0xcbf2_9ce4_8422_2325, &hash_input),
            fnv1a(0x6c62_272e_07bb_0142, &hash_input)
        );
        if run.flags().verify_each_pass {
            // The verifier always runs after reading; with the flag it also runs on the
            // program as planned (after inlining).
            run.phase("verify-plan", || {
                oxla_ir::verifier::verify_module(device_module.as_ref().unwrap_or(&module)).map_err(
                    |errors| {
                        ClientError::Internal(format!(
                            "the plan failed verification ({} errors):\n{}",
                            errors.len(),
                            errors.summary(20)
                        ))
                    },
                )
            })?;
        }
        run.plan(&module);
        let eval_options = oxla_ir::eval::EvalOptions {
            fuse: run.flags().opt_level >= 1,
        };
        let plans = oxla_ir::eval::PlanCache::new();
        plans.prepare(
            device_module.as_ref().unwrap_or(&module),
            &entry_name,
            eval_options,
        );
        Ok(Executable {
            inner: Arc::new(ExecutableInner {
                name,
                entry: entry_name,
                module,
                program: program.to_vec(),
                options,
                input_types,
                output_types,
                token_inputs,
                token_outputs,
                donated,
                fingerprint,
                device_module,
                gathered,
                collectives,
                inline,
                on_eval_pool,
                eval_options,
                plans,
            }),
        })
    }

    /// Reads an executable written by [`Executable::serialize`] and compiles it again.
    pub fn deserialize(bytes: &[u8]) -> Result<Executable> {
        let mut reader = Reader { bytes, pos: 0 };
        if reader.take(SERIALIZED_MAGIC.len())? != SERIALIZED_MAGIC {
            return Err(ClientError::InvalidArgument(
                "not a serialized oxla executable (bad magic)".to_string(),
            ));
        }
        let version = reader.u32()?;
        if version != 1 && version != SERIALIZED_VERSION {
            return Err(ClientError::InvalidArgument(format!(
                "serialized executable has format version {version}, this oxla reads {SERIALIZED_VERSION}"
            )));
        }
        let num_replicas = reader.u32()? as usize;
        let num_partitions = reader.u32()? as usize;
        let has_assignment = reader.u32()? != 0;
        let device_assignment = if has_assignment {
            let mut rows = Vec::new();
            for _ in 0..num_replicas {
                let mut row = Vec::new();
                for _ in 0..num_partitions {
                    row.push(reader.u32()? as i32);
                }
                rows.push(row);
            }
            Some(rows)
        } else {
            None
        };
        let program_len = reader.u64()?;
        let program = reader.take_len(program_len)?.to_vec();
        let options_len = reader.u64()?;
        let serialized = reader.take_len(options_len)?.to_vec();
        let entry = if version >= 2 {
            let entry_len = reader.u64()?;
            let name = reader.take_len(entry_len)?;
            let name = std::str::from_utf8(name).map_err(|_| {
                ClientError::InvalidArgument(
                    "serialized executable names its entry in invalid UTF-8".to_string(),
                )
            })?;
            (!name.is_empty()).then(|| name.to_string())
        } else {
            None
        };
        if reader.pos != bytes.len() {
            return Err(ClientError::InvalidArgument(
                "serialized executable has trailing bytes".to_string(),
            ));
        }
        Executable::compile(
            &program,
            CompileOptions {
                num_replicas,
                num_partitions,
                device_assignment,
                serialized,
                flags: FlagOverrides::default(),
                entry,
            },
        )
    }

    /// The versioned serialized form: magic, version, replica/partition counts, device
    /// assignment, program bytes, compile options. Loading it compiles the program again.
    pub fn serialize(&self) -> Vec<u8> {
        let options = &self.inner.options;
        let mut out = Vec::new();
        out.extend_from_slice(SERIALIZED_MAGIC);
        out.extend_from_slice(&SERIALIZED_VERSION.to_le_bytes());
        out.extend_from_slice(&(options.num_replicas as u32).to_le_bytes());
        out.extend_from_slice(&(options.num_partitions as u32).to_le_bytes());
        match &options.device_assignment {
            Some(rows) => {
                out.extend_from_slice(&1u32.to_le_bytes());
                for id in rows.iter().flatten() {
                    out.extend_from_slice(&(*id as u32).to_le_bytes());
                }
            }
            None => out.extend_from_slice(&0u32.to_le_bytes()),
        }
        out.extend_from_slice(&(self.inner.program.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.inner.program);
        out.extend_from_slice(&(options.serialized.len() as u64).to_le_bytes());
        out.extend_from_slice(&options.serialized);
        let entry = options.entry.as_deref().unwrap_or("");
        out.extend_from_slice(&(entry.len() as u64).to_le_bytes());
        out.extend_from_slice(entry.as_bytes());
        out
    }

    /// The executable's name (the module's `sym_name`, else the entry function's).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The entry function's name.
    pub fn entry_name(&self) -> &str {
        &self.inner.entry
    }

    /// The program as read.
    pub fn module(&self) -> &Module {
        &self.inner.module
    }

    /// The compile options.
    pub fn options(&self) -> &CompileOptions {
        &self.inner.options
    }

    /// The compile options as the caller serialized them.
    pub fn serialized_compile_options(&self) -> &[u8] {
        &self.inner.options.serialized
    }

    /// Number of replicas.
    pub fn num_replicas(&self) -> usize {
        self.inner.options.num_replicas
    }

    /// Number of partitions.
    pub fn num_partitions(&self) -> usize {
        self.inner.options.num_partitions
    }

    /// For a program partitioned by annotation alone (run whole): the tilings of its
    /// arguments and results over the partitions.
    pub fn tilings(&self) -> Option<(&[Tiling], &[Tiling])> {
        self.inner
            .gathered
            .as_ref()
            .map(|g| (g.tilings.inputs.as_slice(), g.tilings.outputs.as_slice()))
    }

    /// Argument types of the entry function.
    pub fn input_types(&self) -> &[TensorType] {
        &self.inner.input_types
    }

    /// Result types of the entry function.
    pub fn output_types(&self) -> &[TensorType] {
        &self.inner.output_types
    }

    /// Whether argument `idx` is a token: it travels as an empty `pred` buffer (the type
    /// [`Executable::input_types`] gives it) that holds no value.
    pub fn input_is_token(&self, idx: usize) -> bool {
        self.inner.token_inputs.get(idx).copied().unwrap_or(false)
    }

    /// Whether output `idx` is a token, as [`Executable::input_is_token`] says of arguments.
    pub fn output_is_token(&self, idx: usize) -> bool {
        self.inner.token_outputs.get(idx).copied().unwrap_or(false)
    }

    /// Number of outputs per device.
    pub fn num_outputs(&self) -> usize {
        self.inner.output_types.len()
    }

    /// The memory kind of each output.
    pub fn output_memory_kinds(&self) -> Vec<&'static str> {
        vec![MEMORY_KIND; self.num_outputs()]
    }

    /// Which arguments the program donates (`jax.buffer_donor` / `tf.aliasing_output`).
    pub fn donated_inputs(&self) -> &[bool] {
        &self.inner.donated
    }

    /// A fingerprint of the program, the options and the oxla version.
    pub fn fingerprint(&self) -> &str {
        &self.inner.fingerprint
    }

    /// The size of the "generated code" (the program bytes oxla keeps).
    pub fn code_size(&self) -> usize {
        self.inner.program.len()
    }

    /// The optimized program: its format and bytes (oxla returns the program it compiled).
    pub fn optimized_program(&self) -> (&'static str, &[u8]) {
        (PROGRAM_FORMAT, &self.inner.program)
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| {
            ClientError::InvalidArgument("serialized executable is truncated".to_string())
        })?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn take_len(&mut self, n: u64) -> Result<&'a [u8]> {
        let n = usize::try_from(n).map_err(|_| {
            ClientError::InvalidArgument("serialized executable length overflows".to_string())
        })?;
        self.take(n)
    }

    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}

/// Per-call execution options.
#[derive(Clone, Debug, Default)]
pub struct ExecuteOptions {
    /// Argument indices that must not be donated even if the program donates them.
    pub non_donatable_inputs: Vec<usize>,
    /// Run on this one device only (its argument list is the only one given).
    pub execute_device: Option<Device>,
}

/// What [`LoadedExecutable::execute`] returns.
#[derive(Debug)]
pub struct ExecuteResult {
    /// Output buffers per device, in the order of the argument lists.
    pub outputs: Vec<Vec<Buffer>>,
    /// One completion event per device.
    pub completions: Vec<Event>,
}

struct LoadedInner {
    executable: Executable,
    devices: Vec<Device>,
    deleted: AtomicBool,
}

/// An executable loaded onto devices, ready to run. Cheap to clone.
#[derive(Clone)]
pub struct LoadedExecutable {
    inner: Arc<LoadedInner>,
}

impl std::fmt::Debug for LoadedExecutable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedExecutable")
            .field("name", &self.inner.executable.name())
            .field("devices", &self.inner.devices)
            .finish()
    }
}

impl LoadedExecutable {
    pub(crate) fn new(executable: Executable, devices: Vec<Device>) -> LoadedExecutable {
        LoadedExecutable {
            inner: Arc::new(LoadedInner {
                executable,
                devices,
                deleted: AtomicBool::new(false),
            }),
        }
    }

    /// The device-independent executable.
    pub fn executable(&self) -> &Executable {
        &self.inner.executable
    }

    /// The devices it runs on, in argument-list order.
    pub fn addressable_devices(&self) -> &[Device] {
        &self.inner.devices
    }

    /// Marks the executable deleted; running executions finish. Idempotent.
    pub fn delete(&self) {
        self.inner.deleted.store(true, Ordering::SeqCst);
    }

    /// True once [`LoadedExecutable::delete`] has been called.
    pub fn is_deleted(&self) -> bool {
        self.inner.deleted.load(Ordering::SeqCst)
    }

    /// Runs the program once per device, with `argument_lists[i]` on device `i`.
    /// Arguments are validated now; the work runs on the worker pool and its errors arrive
    /// through the completion events and the outputs' ready events.
    pub fn execute(
        &self,
        argument_lists: &[Vec<Buffer>],
        options: &ExecuteOptions,
    ) -> Result<ExecuteResult> {
        if self.is_deleted() {
            return Err(ClientError::FailedPrecondition(format!(
                "executable {} has been deleted",
                self.executable().name()
            )));
        }
        let devices: std::borrow::Cow<'_, [Device]> = match &options.execute_device {
            Some(device) => std::borrow::Cow::Owned(vec![device.clone()]),
            None => std::borrow::Cow::Borrowed(&self.inner.devices),
        };
        if argument_lists.len() != devices.len() {
            return Err(ClientError::InvalidArgument(format!(
                "executable {} runs on {} device(s), got {} argument list(s)",
                self.executable().name(),
                devices.len(),
                argument_lists.len()
            )));
        }
        let exe = self.executable().clone();
        // Validate everything before touching any buffer.
        for (device, args) in devices.iter().zip(argument_lists) {
            self.check_arguments(device, args, options)?;
        }
        if let Some(gathered) = &exe.inner.gathered {
            return self.execute_gathered(gathered, &devices, argument_lists, options);
        }
        let mut outputs = Vec::with_capacity(devices.len());
        let mut completions = Vec::with_capacity(devices.len());
        // Replica and partition ids come from each device's place in the device assignment.
        let num_partitions = exe.num_partitions().max(1);
        let processes: Vec<ProcessId> = devices
            .iter()
            .map(|device| {
                let pos = self.inner.devices.iter().position(|d| d == device);
                let pos = pos.unwrap_or(0);
                ProcessId {
                    replica: (pos / num_partitions) as u32,
                    partition: (pos % num_partitions) as u32,
                }
            })
            .collect();
        // A program of one replica and one partition meets nobody: its collectives are
        // those of one device alone, with no rendezvous to set up.
        let rendezvous = (exe.num_replicas() > 1 || num_partitions > 1).then(|| {
            Rendezvous::new(
                exe.num_replicas(),
                num_partitions,
                processes.clone(),
                DEFAULT_COLLECTIVE_TIMEOUT,
            )
        });
        // Executions that meet in collectives must all run at once: each gets its own thread.
        let concurrent = devices.len() > 1 && exe.inner.collectives;
        for ((device, args), &process) in devices.iter().zip(argument_lists).zip(&processes) {
            let arg_slots = self.argument_slots(args, options)?;
            // A small program whose arguments are ready runs on the calling thread: its
            // results are ready when execute returns, and the two thread hand-offs (to a
            // worker and back to the waiting caller) that dominate a tiny call are saved. Its
            // buffers are made ready, and its completion is the shared ready event, so no
            // pending slot or event is made and completed. A failed inline run fails the
            // call itself, as a synchronous execution on JAX's cpu backend does: the caller
            // sees a host callback's error even when it never reads the results.
            let inline = devices.len() == 1
                && exe.inner.inline
                && rendezvous.is_none()
                && device.runtime().pool.tracer().is_none()
                && arg_slots.iter().all(|slot| slot.event().is_ready());
            if inline {
                let context = || format!("execution of {}", exe.name());
                let values = crate::pool::catch_panic_with(context, || {
                    run_on_worker(&exe, arg_slots, None)
                })?;
                outputs.push(ready_outputs(&exe, device, values));
                completions.push(Event::ready());
                continue;
            }
            let (out_slots, out_buffers) = pending_outputs(&exe, device);
            let done = Event::new();
            let job_done = done.clone();
            let job_exe = exe.clone();
            let trace_name = || format!("execute {} on device {}", exe.name(), device.id());
            let job_rendezvous = rendezvous.clone();
            let device_id = device.id();
            let job = move || {
                let context = || format!("execution of {}", job_exe.name());
                let result = crate::pool::catch_panic_with(context, || match &job_rendezvous {
                    Some(rendezvous) => {
                        run_on_worker(&job_exe, arg_slots, Some(&rendezvous.device(process)))
                    }
                    None => run_on_worker(&job_exe, arg_slots, None),
                });
                match (&result, &job_rendezvous) {
                    (Ok(_), Some(rendezvous)) => rendezvous.finish(process),
                    (Err(err), Some(rendezvous)) => {
                        rendezvous.cancel(&format!("device {device_id} failed: {err}"))
                    }
                    (_, None) => {}
                }
                match result {
                    Ok(values) => {
                        for (slot, value) in out_slots.into_iter().zip(values) {
                            slot.fill(Ok(value.data));
                        }
                        job_done.set(Ok(()));
                    }
                    Err(err) => {
                        for slot in out_slots {
                            slot.fill(Err(err.clone()));
                        }
                        job_done.set(Err(err));
                    }
                }
            };
            if concurrent {
                spawn_thread(&format!("oxla-device-{device_id}"), job, |job| {
                    device
                        .runtime()
                        .pool
                        .spawn_traced("execute", trace_name, job)
                });
            } else {
                device
                    .runtime()
                    .pool
                    .spawn_traced("execute", trace_name, job);
            }
            outputs.push(out_buffers);
            completions.push(done);
        }
        Ok(ExecuteResult {
            outputs,
            completions,
        })
    }

    /// The slots of one device's arguments; donated buffers give theirs up, as PJRT's
    /// contract says.
    fn argument_slots(&self, args: &[Buffer], options: &ExecuteOptions) -> Result<Vec<Arc<Slot>>> {
        let exe = self.executable();
        let mut arg_slots = Vec::with_capacity(args.len());
        for (arg_idx, buffer) in args.iter().enumerate() {
            let donate = donates(exe, options, arg_idx, buffer);
            // The argument is named only when there is an error to report.
            let slot = if donate {
                buffer.take_slot("")
            } else {
                buffer.slot("")
            }
            .map_err(|err| match err {
                ClientError::FailedPrecondition(msg) => ClientError::FailedPrecondition(format!(
                    "argument {arg_idx} of {}{msg}",
                    exe.name()
                )),
                other => other,
            })?;
            arg_slots.push(slot);
        }
        Ok(arg_slots)
    }

    /// Runs a program on whole values ([`Gathered`]): the arguments' shards are put together,
    /// the program runs (once, or on every device at the same time), and each device gets
    /// its shards of the results.
    fn execute_gathered(
        &self,
        gathered: &Gathered,
        devices: &[Device],
        argument_lists: &[Vec<Buffer>],
        options: &ExecuteOptions,
    ) -> Result<ExecuteResult> {
        let exe = self.executable().clone();
        if devices.len() != exe.num_partitions() || devices[..] != self.inner.devices[..] {
            return Err(ClientError::InvalidArgument(format!(
                "executable {} is partitioned over {} devices and runs on all of them together",
                exe.name(),
                exe.num_partitions()
            )));
        }
        let slots = Arc::new(
            argument_lists
                .iter()
                .map(|args| self.argument_slots(args, options))
                .collect::<Result<Vec<_>>>()?,
        );
        let mut outputs = Vec::with_capacity(devices.len());
        let mut out_slots = Vec::with_capacity(devices.len());
        let mut completions = Vec::with_capacity(devices.len());
        for device in devices {
            let (slots, buffers) = pending_outputs(&exe, device);
            outputs.push(buffers);
            out_slots.push(slots);
            completions.push(Event::new());
        }
        // Hands `result` (the shards of devices `first..`) to those devices.
        let deliver = |out_slots: Vec<Vec<Arc<Slot>>>,
                       done: &[Event],
                       result: Result<Vec<Vec<Arc<Vec<u8>>>>>| match result {
            Ok(per_device) => {
                for ((slots, values), done) in out_slots.into_iter().zip(per_device).zip(done) {
                    for (slot, value) in slots.into_iter().zip(values) {
                        slot.fill(Ok(value));
                    }
                    done.set(Ok(()));
                }
            }
            Err(err) => {
                for (slots, done) in out_slots.into_iter().zip(done) {
                    for slot in slots {
                        slot.fill(Err(err.clone()));
                    }
                    done.set(Err(err.clone()));
                }
            }
        };
        let context = format!("execution of {}", exe.name());
        if !gathered.every_device {
            let (job_exe, tilings, job_done) =
                (exe.clone(), gathered.tilings.clone(), completions.clone());
            let job = move || {
                let result = crate::pool::catch_panic(&context, || {
                    let partitions: Vec<usize> = (0..slots.len()).collect();
                    run_gathered(
                        &job_exe,
                        &tilings,
                        &slots,
                        &oxla_ir::eval::SingleDevice,
                        &partitions,
                    )
                });
                drop(slots);
                deliver(out_slots, &job_done, result);
            };
            let trace_name = || format!("execute {} on {} devices", exe.name(), devices.len());
            devices[0]
                .runtime()
                .pool
                .spawn_traced("execute", trace_name, job);
        } else {
            // Every device runs the program; their `shard_map` regions meet in collectives,
            // so each gets a thread of its own.
            let processes: Vec<ProcessId> = (0..devices.len() as u32)
                .map(|partition| ProcessId {
                    replica: 0,
                    partition,
                })
                .collect();
            let rendezvous = Rendezvous::new(
                1,
                devices.len(),
                processes.clone(),
                DEFAULT_COLLECTIVE_TIMEOUT,
            );
            for (p, (device, out_slots)) in devices.iter().zip(out_slots).enumerate() {
                let (job_exe, tilings, slots) =
                    (exe.clone(), gathered.tilings.clone(), slots.clone());
                let (done, context) = (completions[p].clone(), context.clone());
                let process = processes[p];
                let (collectives, job_rendezvous) = (
                    rendezvous.device(process).running_whole_program(),
                    rendezvous.clone(),
                );
                let job = move || {
                    let result = crate::pool::catch_panic(&context, || {
                        run_gathered(&job_exe, &tilings, &slots, &collectives, &[p])
                    });
                    drop(slots);
                    match &result {
                        Ok(_) => job_rendezvous.finish(process),
                        Err(err) => job_rendezvous.cancel(&format!("device {p} failed: {err}")),
                    }
                    deliver(vec![out_slots], std::slice::from_ref(&done), result);
                };
                let trace_name = || format!("execute {} on device {}", exe.name(), device.id());
                spawn_thread(&format!("oxla-device-{}", device.id()), job, |job| {
                    device
                        .runtime()
                        .pool
                        .spawn_traced("execute", trace_name, job)
                });
            }
        }
        Ok(ExecuteResult {
            outputs,
            completions,
        })
    }

    fn check_arguments(
        &self,
        device: &Device,
        args: &[Buffer],
        options: &ExecuteOptions,
    ) -> Result<()> {
        let exe = self.executable();
        let expected = exe.input_types();
        if args.len() != expected.len() {
            return Err(ClientError::InvalidArgument(format!(
                "executable {} takes {} argument(s), got {}",
                exe.name(),
                expected.len(),
                args.len()
            )));
        }
        for (arg_idx, (buffer, ty)) in args.iter().zip(expected).enumerate() {
            if buffer.ty() != ty {
                return Err(ClientError::InvalidArgument(format!(
                    "argument {arg_idx} of {} must be {ty}, got {}",
                    exe.name(),
                    buffer.ty()
                )));
            }
            if buffer.device() != device {
                return Err(ClientError::InvalidArgument(format!(
                    "argument {arg_idx} of {} is on device {}, but this execution runs on device {}",
                    exe.name(),
                    buffer.device().id(),
                    device.id()
                )));
            }
            if buffer.is_deleted() {
                return Err(ClientError::FailedPrecondition(format!(
                    "argument {arg_idx} of {} has been deleted or donated",
                    exe.name()
                )));
            }
        }
        for (arg_idx, buffer) in args.iter().enumerate() {
            if donates(exe, options, arg_idx, buffer)
                && args
                    .iter()
                    .enumerate()
                    .any(|(other_idx, other)| other_idx != arg_idx && other.same_buffer(buffer))
            {
                // A buffer passed twice cannot be donated (the caller should list it as
                // non-donatable).
                return Err(ClientError::InvalidArgument(format!(
                    "argument {arg_idx} of {} is donated but passed more than once",
                    exe.name()
                )));
            }
        }
        Ok(())
    }
}

/// Whether argument `arg_idx` (`buffer`) is donated to this execution: the program donates
/// it and the caller allows it. A buffer another framework reads in place (external
/// references, such as a NumPy view of the array) is not: its memory must stay as it is.
fn donates(exe: &Executable, options: &ExecuteOptions, arg_idx: usize, buffer: &Buffer) -> bool {
    exe.donated_inputs()[arg_idx]
        && !options.non_donatable_inputs.contains(&arg_idx)
        && buffer.external_refs() == 0
}

/// A program over several partitions that runs on whole values: the shards of each argument
/// are put together, the program runs, and each device gets its shards of the results
/// ([`oxla_ir::sharding`]).
#[derive(Clone, Debug)]
struct Gathered {
    tilings: EntryTilings,
    /// Whether every device runs the program (it holds `shard_map` regions, whose bodies run
    /// per device and meet in collectives; the rest is computed alike everywhere). Otherwise
    /// it runs once for all devices.
    every_device: bool,
}

/// How a program over `options.num_partitions` partitions runs: whole (annotated programs,
/// and programs mixing `shard_map` regions with other ops), per device on shards (programs
/// whose work is all in per-device regions, as `jax.pmap` lowers), or as written (one
/// partition, or no shardings anywhere).
fn plan_partitions(
    module: &Module,
    entry: &Function,
    options: &CompileOptions,
    collectives: bool,
) -> Result<(Option<Gathered>, Option<crate::collectives::Localized>)> {
    let partitions = options.num_partitions;
    let whole = |every_device: bool| -> Result<Option<Gathered>> {
        let tilings = oxla_ir::sharding::entry_tilings(module, entry, partitions)
            .map_err(|e| ClientError::Unimplemented(format!("sharded program: {e}")))?;
        Ok(Some(Gathered {
            tilings,
            every_device,
        }))
    };
    if partitions <= 1 || options.num_replicas != 1 {
        return Ok((
            None,
            crate::collectives::localize(module, entry, partitions)?,
        ));
    }
    // Without shard_map regions (in any function) or collectives, the program runs on whole
    // values whatever its annotations say (a value without a sharding is replicated unless
    // one is passed to it: `oxla_ir::sharding::entry_tilings`).
    if !collectives && !crate::collectives::has_any_manual_regions(module) {
        return Ok((whole(false)?, None));
    }
    let regions = crate::collectives::has_sdy_manual_regions(module);
    if regions && oxla_ir::sharding::makes_unreduced(module) {
        return Ok((whole(true)?, None));
    }
    match crate::collectives::localize(module, entry, partitions) {
        // Per device on shards, unless the signature's own shardings say otherwise (a
        // replicated argument that a region takes in shards is cut on entering it).
        Ok(Some(localized))
            if regions && !signature_agrees(module, entry, &localized, partitions) =>
        {
            Ok((whole(true)?, None))
        }
        Ok(localized) => Ok((None, localized)),
        Err(ClientError::Unimplemented(_)) if regions => Ok((whole(true)?, None)),
        Err(err) => Err(err),
    }
}

/// Whether the per-device types `localized` infers agree with the shardings the entry's
/// signature names (values without one agree), and with those its results without one get
/// from where they are made (a `shard_map` in a called function hands out shards).
fn signature_agrees(
    module: &Module,
    entry: &Function,
    localized: &crate::collectives::Localized,
    partitions: usize,
) -> bool {
    let Ok(tilings) = oxla_ir::sharding::entry_tilings(module, entry, partitions) else {
        return !oxla_ir::sharding::is_annotated(entry);
    };
    let named = |attrs: &[Vec<(String, Attribute)>], i: usize| {
        attrs
            .get(i)
            .and_then(|a| oxla_ir::sharding::sharding_text(a))
            .is_some()
    };
    let inputs_agree = tilings
        .inputs
        .iter()
        .zip(&localized.inputs)
        .enumerate()
        .all(|(i, (t, l))| !named(&entry.arg_attrs, i) || &t.local == l);
    let outputs_agree = tilings
        .outputs
        .iter()
        .zip(&localized.outputs)
        .enumerate()
        .all(|(i, (t, l))| (!named(&entry.res_attrs, i) && t.is_replicated()) || &t.local == l);
    inputs_agree && outputs_agree
}

/// Programs at most this many ops (counting nested regions) may run on the calling thread.
const INLINE_MAX_OPS: usize = 64;
/// ... when their ops together write at most this many elements (a few milliseconds of
/// elementwise work at most; a softmax or layer norm over a million elements is well
/// inside it, and runs in a few hundred microseconds, where handing it to a worker and
/// waking the caller again would add tens of microseconds) ...
const INLINE_MAX_ELEMENTS: u64 = 16 << 20;
/// ... when their products, convolutions, sorts, FFTs and other heavy ops read and write
/// values of at most this many bytes ...
const INLINE_MAX_HEAVY_BYTES: usize = 64 * 1024;
/// ... and when their loops together do at most this much work
/// ([`oxla_ir::eval::counted_loop_work`]: about ten microseconds per thousand).
const INLINE_MAX_LOOP_WORK: u64 = 16 * 1024;

/// Whether `kind` costs far more than one step per element it writes.
fn heavy(kind: &OpKind) -> bool {
    use OpKind as K;
    matches!(
        kind,
        K::DotGeneral
            | K::Dot
            | K::Convolution
            | K::Sort
            | K::Fft
            | K::ReduceWindow
            | K::SelectAndScatter
            | K::Scatter
            | K::Cholesky
            | K::TriangularSolve
    )
}

/// Whether executions of `module` are cheap enough to run on the calling thread: few ops
/// writing a bounded number of elements, heavy ops only on small values, only loops whose
/// trip count is known and whose work is small (compiled counted loops, `fori_loop` with
/// constant bounds over small values) and no custom calls (host callbacks call back into
/// the embedding program, which may expect to run them on a worker).
fn runs_inline(module: &oxla_ir::Module) -> bool {
    struct Budget {
        ops: usize,
        elements: u64,
        loop_work: u64,
    }
    fn bytes(ty: &Type) -> usize {
        match ty {
            Type::Tensor(t) => t.byte_size().unwrap_or(usize::MAX),
            Type::Tuple(types) => types.iter().map(bytes).fold(0, usize::saturating_add),
            _ => 0,
        }
    }
    fn elements(ty: &Type) -> u64 {
        match ty {
            Type::Tensor(t) => t.num_elements().map_or(u64::MAX, |n| n as u64),
            Type::Tuple(types) => types.iter().map(elements).fold(0, u64::saturating_add),
            _ => 0,
        }
    }
    fn region_ok(
        module: &oxla_ir::Module,
        func: &oxla_ir::Function,
        region: &oxla_ir::Region,
        budget: &mut Budget,
    ) -> bool {
        let ty = |v: &oxla_ir::ValueId| func.values.get(v.index());
        region.blocks.iter().all(|block| {
            block.ops.iter().all(|op| {
                // Host callbacks run inline too (their errors then fail the call that ran
                // them, as on JAX's cpu backend); other custom calls are linear algebra.
                if budget.ops == 0
                    || (op.kind == OpKind::CustomCall && !oxla_ir::eval::is_host_call(op))
                {
                    return false;
                }
                budget.ops -= 1;
                // A scatter with a replacing or one-op body copies its inputs and then
                // writes each update element once: elementwise work over both.
                let cheap_scatter = oxla_ir::eval::is_cheap_scatter(op);
                let mut written: u64 = op.results.iter().filter_map(ty).map(elements).sum();
                if cheap_scatter {
                    let updates = op.operands.len().div_ceil(2);
                    let update_elements: u64 = op.operands[updates..]
                        .iter()
                        .filter_map(ty)
                        .map(elements)
                        .sum();
                    written = written.saturating_add(update_elements);
                }
                match budget.elements.checked_sub(written) {
                    Some(left) => budget.elements = left,
                    None => return false,
                }
                if heavy(&op.kind)
                    && !cheap_scatter
                    && op
                        .operands
                        .iter()
                        .chain(&op.results)
                        .filter_map(ty)
                        .any(|t| bytes(t) > INLINE_MAX_HEAVY_BYTES)
                {
                    return false;
                }
                if op.kind == OpKind::While {
                    let work = oxla_ir::eval::counted_loop_work(module, func, op);
                    match work {
                        Some(work) if work <= budget.loop_work => budget.loop_work -= work,
                        _ => return false,
                    }
                }
                op.regions
                    .iter()
                    .all(|r| region_ok(module, func, r, budget))
            })
        })
    }
    let mut budget = Budget {
        ops: INLINE_MAX_OPS,
        elements: INLINE_MAX_ELEMENTS,
        loop_work: INLINE_MAX_LOOP_WORK,
    };
    module
        .functions
        .iter()
        .all(|f| region_ok(module, f, &f.body, &mut budget))
}

/// Whether executions of `module` (on one device) should run on the evaluator's thread pool
/// instead of the worker that took them: programs with at least two matrix products or
/// convolutions, which the worker would otherwise hand to the pool one by one (waking a pool
/// thread and sleeping itself each time) while a third thread competes for the cores during
/// the elementwise work between them. Not with custom calls: a host callback may run another
/// execution that needs the pool's threads.
fn runs_on_eval_pool(module: &oxla_ir::Module) -> bool {
    fn scan(region: &oxla_ir::Region, products: &mut usize) -> bool {
        region.blocks.iter().all(|block| {
            block.ops.iter().all(|op| {
                if matches!(op.kind, OpKind::DotGeneral | OpKind::Convolution) {
                    *products += 1;
                }
                op.kind != OpKind::CustomCall && op.regions.iter().all(|r| scan(r, products))
            })
        })
    }
    let mut products = 0;
    module
        .functions
        .iter()
        .all(|f| scan(&f.body, &mut products))
        && products >= 2
}

/// Runs `job` on a thread of its own; if no thread can be started, hands it to `fallback`.
fn spawn_thread<F: FnOnce() + Send + 'static>(name: &str, job: F, fallback: impl FnOnce(F)) {
    let cell = Arc::new(std::sync::Mutex::new(Some(job)));
    let thread_cell = cell.clone();
    let spawned = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            let job = thread_cell
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take();
            if let Some(job) = job {
                job();
            }
        });
    if spawned.is_err() {
        let job = cell
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(job) = job {
            fallback(job);
        }
    }
}

/// Gives every output bytes of its own: an output that is an argument passed through, the
/// same value as another output, or a constant the executable's plan cache keeps for later
/// calls shares its bytes in the evaluator, but each output is a new buffer with its own
/// memory (as XLA's are; `unsafe_buffer_pointer` shows it, and memory handed out through
/// DLPack may be written).
fn distinct_outputs(results: &mut [Literal]) {
    for out in results.iter_mut() {
        if !out.data.is_empty() && Arc::strong_count(&out.data) > 1 {
            out.data = Arc::new(out.data.as_ref().clone());
        }
    }
}

/// Runs an execution on a worker once its arguments are ready: one of a launch over several
/// devices through `collectives`, or a single-device one (`None`).
fn run_on_worker(
    exe: &Executable,
    arg_slots: Vec<Arc<Slot>>,
    collectives: Option<&dyn Collectives>,
) -> Result<Vec<Literal>> {
    let mut args = Vec::with_capacity(arg_slots.len());
    for (slot, ty) in arg_slots.into_iter().zip(exe.input_types()) {
        // The evaluator shares the buffer's bytes, and an op that writes copies them first;
        // a donated buffer's slot is this execution's alone, so its bytes are handed over
        // and may be written in place.
        args.push(Literal::from_shared(ty.clone(), slot.into_data()?)?);
    }
    let module = exe.inner.device_module.as_ref().unwrap_or(exe.module());
    let expected: Vec<&TensorType> = exe.output_types().iter().collect();
    match collectives {
        Some(collectives) => evaluate(exe, module, args, collectives, &expected),
        // The arguments are ready, so nothing below waits on another execution.
        None if exe.inner.on_eval_pool => oxla_ir::eval::on_eval_pool(|| {
            evaluate(exe, module, args, &oxla_ir::eval::SingleDevice, &expected)
        }),
        None => evaluate(exe, module, args, &oxla_ir::eval::SingleDevice, &expected),
    }
}

/// Runs `module`'s entry on `args`, gives each result memory of its own and checks the
/// results against the `expected` types.
fn evaluate(
    exe: &Executable,
    module: &Module,
    args: Vec<Literal>,
    collectives: &dyn Collectives,
    expected: &[&TensorType],
) -> Result<Vec<Literal>> {
    let mut results = oxla_ir::eval::run_function_owned(
        module,
        exe.entry_name(),
        args,
        collectives,
        exe.inner.eval_options,
        &exe.inner.plans,
    )?;
    distinct_outputs(&mut results);
    if results.len() != expected.len() {
        return Err(ClientError::Internal(format!(
            "{} returned {} values, its signature has {}",
            exe.name(),
            results.len(),
            expected.len()
        )));
    }
    for (idx, (value, &ty)) in results.iter().zip(expected).enumerate() {
        if &value.ty != ty || Some(value.data.len()) != ty.byte_size() {
            return Err(ClientError::Internal(format!(
                "result {idx} of {} is {}, its signature says {ty}",
                exe.name(),
                value.ty
            )));
        }
    }
    Ok(results)
}

/// The buffers of one device's results, computed already.
fn ready_outputs(exe: &Executable, device: &Device, values: Vec<Literal>) -> Vec<Buffer> {
    exe.output_types()
        .iter()
        .zip(values)
        .map(|(ty, value)| {
            Buffer::from_slot(
                ty.clone(),
                device.default_memory(),
                device,
                Slot::ready(value.data),
            )
        })
        .collect()
}

/// One device's pending output slots and the buffers over them.
fn pending_outputs(exe: &Executable, device: &Device) -> (Vec<Arc<Slot>>, Vec<Buffer>) {
    let slots: Vec<_> = exe.output_types().iter().map(|_| Slot::pending()).collect();
    let buffers = exe
        .output_types()
        .iter()
        .zip(&slots)
        .map(|(ty, slot)| {
            Buffer::from_slot(ty.clone(), device.default_memory(), device, slot.clone())
        })
        .collect();
    (slots, buffers)
}

/// The work of [`LoadedExecutable::execute_gathered`]: `slots[p]` are partition `p`'s
/// argument shards; returns the result shards of each partition in `partitions`.
fn run_gathered(
    exe: &Executable,
    tilings: &EntryTilings,
    slots: &[Vec<Arc<Slot>>],
    collectives: &dyn Collectives,
    partitions: &[usize],
) -> Result<Vec<Vec<Arc<Vec<u8>>>>> {
    let mut args = Vec::with_capacity(tilings.inputs.len());
    for (i, tiling) in tilings.inputs.iter().enumerate() {
        let whole = if tiling.is_replicated() {
            slots[partitions[0]][i].wait()?
        } else {
            let shards = slots
                .iter()
                .map(|device| device[i].wait())
                .collect::<Result<Vec<_>>>()?;
            let refs: Vec<&[u8]> = shards.iter().map(|s| s.as_slice()).collect();
            let whole = oxla_ir::sharding::assemble(tiling, &refs).ok_or_else(|| {
                ClientError::InvalidArgument(format!(
                    "argument {i}'s shards cannot be summed over its unreduced axes"
                ))
            })?;
            Arc::new(whole)
        };
        args.push(Literal::from_shared(tiling.global.clone(), whole)?);
    }
    let expected: Vec<&TensorType> = tilings.outputs.iter().map(|t| &t.global).collect();
    let results = evaluate(exe, exe.module(), args, collectives, &expected)?;
    // Every partition's results have memory of their own, replicated ones included.
    Ok(partitions
        .iter()
        .enumerate()
        .map(|(k, &p)| {
            results
                .iter()
                .zip(&tilings.outputs)
                .map(|(value, tiling)| match tiling.is_replicated() {
                    true if k == 0 => value.data.clone(),
                    true => Arc::new(value.data.as_ref().clone()),
                    false => Arc::new(oxla_ir::sharding::shard_of(tiling, &value.data, p)),
                })
                .collect()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    const TWO_FUNCTIONS: &str = "
module {
  func.func public @f(%a: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.add %a, %a : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
  func.func public @g(%a: tensor<3xi32>, %b: tensor<3xi32>) -> tensor<3xi32> {
    %0 = stablehlo.multiply %a, %b : tensor<3xi32>
    return %0 : tensor<3xi32>
  }
}
";

    #[test]
    fn entry_option_picks_the_function_and_survives_serialization() {
        // Two public functions and no `main`: without an entry there is no default.
        let err =
            Executable::compile(TWO_FUNCTIONS.as_bytes(), CompileOptions::default()).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
        let options = CompileOptions {
            entry: Some("g".to_string()),
            ..CompileOptions::default()
        };
        let exe = Executable::compile(TWO_FUNCTIONS.as_bytes(), options).unwrap();
        assert_eq!(exe.entry_name(), "g");
        assert_eq!(exe.input_types().len(), 2);
        let again = Executable::deserialize(&exe.serialize()).unwrap();
        assert_eq!(again.entry_name(), "g");
        assert_eq!(again.input_types(), exe.input_types());
        let missing = CompileOptions {
            entry: Some("h".to_string()),
            ..CompileOptions::default()
        };
        let err = Executable::compile(TWO_FUNCTIONS.as_bytes(), missing).unwrap_err();
        assert!(err.message().contains("`h`"), "{err}");
    }

    const HOST_CALL: &str = "
module {
  func.func public @main(%t: !stablehlo.token, %a: tensor<3xf32>) -> (!stablehlo.token, tensor<3xf32>) {
    %0 = stablehlo.custom_call @oxla_test_reverse(%a) {backend_config = \"7\", has_side_effect = true} : (tensor<3xf32>) -> tensor<3xf32>
    return %t, %0 : !stablehlo.token, tensor<3xf32>
  }
}
";

    #[test]
    fn registered_host_calls_run_and_tokens_cross_as_empty_buffers() {
        use oxla_ir::eval::{register_host_call, unregister_host_call, HostCall};
        let client = crate::Client::new(&crate::ClientOptions::default()).unwrap();
        // Unregistered: the target is rejected at compile time, naming it.
        let err = client
            .compile(HOST_CALL.as_bytes(), CompileOptions::default())
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::Unimplemented, "{err}");
        assert!(err.message().contains("oxla_test_reverse"), "{err}");
        register_host_call(
            "oxla_test_reverse",
            std::sync::Arc::new(|call: &HostCall<'_>| {
                assert_eq!(call.backend_config, "7");
                let mut out = call.args[0].clone();
                let values: Vec<f32> = out.to_f32_vec().unwrap().into_iter().rev().collect();
                out.data =
                    std::sync::Arc::new(values.iter().flat_map(|v| v.to_le_bytes()).collect());
                Ok(vec![out])
            }),
        );
        let exe = client
            .compile(HOST_CALL.as_bytes(), CompileOptions::default())
            .unwrap();
        let token_ty = oxla_ir::eval::token_literal().ty;
        assert_eq!(exe.executable().input_types()[0], token_ty);
        assert_eq!(exe.executable().output_types()[0], token_ty);
        let device = &client.addressable_devices()[0];
        let token = Buffer::from_bytes(device, token_ty.clone(), Vec::new()).unwrap();
        let values = oxla_ir::Literal::from_f32(&[3], &[1.0, 2.0, 3.0]).unwrap();
        let arg = Buffer::from_literal(device, values).unwrap();
        let result = exe
            .execute(&[vec![token, arg]], &ExecuteOptions::default())
            .unwrap();
        result.completions[0].wait().unwrap();
        let outputs = &result.outputs[0];
        assert_eq!(outputs[0].to_literal().unwrap().ty, token_ty);
        assert_eq!(
            outputs[1].to_literal().unwrap().to_f32_vec().unwrap(),
            vec![3.0, 2.0, 1.0]
        );
        // A handler's error fails the execution with its text: the call itself, since a
        // small program with ready arguments runs on the calling thread.
        assert!(exe.executable().inner.inline);
        register_host_call(
            "oxla_test_reverse",
            std::sync::Arc::new(|_: &HostCall<'_>| Err("the host refused".to_string())),
        );
        let token = Buffer::from_bytes(device, token_ty, Vec::new()).unwrap();
        let arg =
            Buffer::from_literal(device, oxla_ir::Literal::from_f32(&[3], &[0.0; 3]).unwrap())
                .unwrap();
        let Err(err) = exe.execute(&[vec![token, arg]], &ExecuteOptions::default()) else {
            panic!("the execution succeeded");
        };
        assert!(err.message().contains("the host refused"), "{err}");
        unregister_host_call("oxla_test_reverse");
    }

    const UNREDUCED: &str = r#"
module @m attributes {mhlo.num_partitions = 2 : i32} {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%a: tensor<4xi32> {sdy.sharding = #sdy.sharding<@mesh, [{}], unreduced={"x"}>}) -> (tensor<4xi32> {sdy.sharding = #sdy.sharding<@mesh, [{}], unreduced={"x"}>}, tensor<4xi32>) {
    %0 = stablehlo.multiply %a, %a : tensor<4xi32>
    return %0, %0 : tensor<4xi32>, tensor<4xi32>
  }
}
"#;

    #[test]
    fn unreduced_arguments_are_summed_and_unreduced_results_go_to_the_first_device() {
        let options = crate::ClientOptions {
            num_devices: 2,
            ..crate::ClientOptions::default()
        };
        let client = crate::Client::new(&options).unwrap();
        let compile = CompileOptions {
            num_partitions: 2,
            ..CompileOptions::default()
        };
        let exe = client.compile(UNREDUCED.as_bytes(), compile).unwrap();
        let devices = client.addressable_devices();
        let arg = |device: &Device, values: &[i32]| {
            let literal = oxla_ir::Literal::from_i32(&[4], values).unwrap();
            vec![Buffer::from_literal(device, literal).unwrap()]
        };
        // The argument is the sum of the shards, [11, 22, 33, 44]; squaring is not linear,
        // so squaring each shard instead would give other sums.
        let args = [
            arg(&devices[0], &[1, 2, 3, 4]),
            arg(&devices[1], &[10, 20, 30, 40]),
        ];
        let result = exe.execute(&args, &ExecuteOptions::default()).unwrap();
        let read = |device: usize, output: usize| {
            result.completions[device].wait().unwrap();
            let literal = result.outputs[device][output].to_literal().unwrap();
            literal.to_i32_vec().unwrap()
        };
        let square = vec![121, 484, 1089, 1936];
        assert_eq!(read(0, 0), square);
        assert_eq!(read(1, 0), vec![0; 4]);
        // The result without a sharding of its own is not unreduced like the argument it is
        // computed from: the whole value on both devices.
        assert_eq!(read(0, 1), square);
        assert_eq!(read(1, 1), square);
    }

    /// `text` compiled for four partitions on a client with four devices.
    fn compile_on_four_partitions(text: &str) -> LoadedExecutable {
        let options = crate::ClientOptions {
            num_devices: 4,
            ..crate::ClientOptions::default()
        };
        let client = crate::Client::new(&options).unwrap();
        let compile = CompileOptions {
            num_partitions: 4,
            ..CompileOptions::default()
        };
        client.compile(text.as_bytes(), compile).unwrap()
    }

    #[test]
    fn inspect_sharding_calls_report_propagated_and_manual_shardings() {
        // `jax.debug.inspect_array_sharding` in a partitioned program: a call on an argument,
        // one on a value computed from it and one inside a `shard_map` region. The backend
        // config's escapes spell bytes that are not UTF-8 (a callback handle).
        let text = r#"
module @m attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
  func.func public @main(%a: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
    %0 = stablehlo.custom_call @InspectSharding(%a) {backend_config = "\90\01\02\03\04\05\06\07\F8\09\0A\0B\0C\0D\0E\0F", has_side_effect = true} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %1 = stablehlo.transpose %a, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
    %2 = stablehlo.custom_call @InspectSharding(%1) {backend_config = "\90", has_side_effect = true} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %3 = "sdy.manual_computation"(%a) <{in_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>]>, manual_axes = #sdy<manual_axes{"x", "y"}>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>]>}> ({
    ^bb0(%b: tensor<4x2xf32>):
      %4 = stablehlo.custom_call @InspectSharding(%b) {backend_config = "\90", has_side_effect = true} : (tensor<4x2xf32>) -> tensor<4x2xf32>
      %5 = stablehlo.add %4, %4 : tensor<4x2xf32>
      "sdy.return"(%5) : (tensor<4x2xf32>) -> ()
    }) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    return %3 : tensor<8x4xf32>
  }
}
"#;
        let exe = compile_on_four_partitions(text);
        let module = exe.executable().module();
        let entry = module.function("main").unwrap();
        let reported = oxla_ir::sharding::inspected_shardings(module, entry, 4);
        assert_eq!(reported.len(), 3);
        let handle: Vec<u8> = [0x90u8, 1, 2, 3, 4, 5, 6, 7, 0xF8, 9, 10, 11, 12, 13, 14, 15].into();
        assert_eq!(
            reported[0].0.attr("backend_config"),
            Some(&oxla_ir::Attribute::Bytes(handle))
        );
        let tiled = |k: usize| match &reported[k].1 {
            oxla_ir::sharding::InspectedSharding::Tiled(t) => {
                (t.local.shape.clone(), t.origins[1].clone())
            }
            other => panic!("call {k}: {other:?}"),
        };
        // Partition 1 is at x = 0, y = 1: the argument as its sharding says, the transpose
        // with the axes moved along.
        assert_eq!(tiled(0), (vec![4, 2], vec![0, 2]));
        assert_eq!(tiled(1), (vec![2, 4], vec![2, 0]));
        assert_eq!(reported[2].1, oxla_ir::sharding::InspectedSharding::Manual);
    }

    #[test]
    fn unannotated_results_take_the_shardings_propagated_to_them() {
        // Over a 2x2 mesh ("x" major): results without a sharding of their own get the one
        // XLA's propagation gives them from the arguments' and constraints' shardings.
        let text = r#"
module @m attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
  func.func public @main(%a: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}, %b: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}, %c: tensor<8x4xf32>, %t: !stablehlo.token) -> (tensor<8x4xf32>, tensor<8x8xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<3x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x2xf32>, tensor<4xf32>, !stablehlo.token, tensor<8x4xf32>) {
    %0 = stablehlo.multiply %a, %a : tensor<8x4xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{?}, {"y", ?}]> : tensor<8x4xf32>
    %2 = stablehlo.sine %1 : tensor<8x4xf32>
    %3 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %zero = stablehlo.constant dense<0.0> : tensor<f32>
    %4 = stablehlo.reduce(%a init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<8x4xf32>, tensor<f32>) -> tensor<4xf32>
    %5 = stablehlo.transpose %a, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
    %6 = stablehlo.broadcast_in_dim %4, dims = [1] : (tensor<4xf32>) -> tensor<3x4xf32>
    %7 = stablehlo.add %c, %a : tensor<8x4xf32>
    %8 = stablehlo.add %c, %c : tensor<8x4xf32>
    %9 = stablehlo.slice %a [0:8, 1:3] : (tensor<8x4xf32>) -> tensor<8x2xf32>
    %10 = stablehlo.slice %a [2:3, 0:4] : (tensor<8x4xf32>) -> tensor<1x4xf32>
    %11 = stablehlo.reshape %10 : (tensor<1x4xf32>) -> tensor<4xf32>
    %12 = stablehlo.iota dim = 0 : tensor<8x4xf32>
    %13 = "builtin.unrealized_conversion_cast"(%12) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    sdy.sharding_group %a group_id=0 : tensor<8x4xf32>
    sdy.sharding_group %13 group_id=0 : tensor<8x4xf32>
    return %2, %3, %4, %5, %6, %7, %8, %9, %11, %t, %12 : tensor<8x4xf32>, tensor<8x8xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<3x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x2xf32>, tensor<4xf32>, !stablehlo.token, tensor<8x4xf32>
  }
}
"#;
        let exe = compile_on_four_partitions(text);
        let (_, outputs) = exe.executable().tilings().expect("runs on whole values");
        let local = |i: usize| outputs[i].local.shape.clone();
        // Partition 1 is at x = 0, y = 1.
        let origin = |i: usize| outputs[i].origins[1].clone();
        // The constraint's open first dimension takes "x" from the product of `a`.
        assert_eq!((local(0), origin(0)), (vec![4, 2], vec![0, 2]));
        // The lhs's free dimension keeps "x"; the rhs's cannot use it again.
        assert_eq!((local(1), origin(1)), (vec![4, 8], vec![0, 0]));
        // Summing away the dimension over "x" keeps the one over "y".
        assert_eq!((local(2), origin(2)), (vec![2], vec![2]));
        // Transposing moves the axes with the dimensions.
        assert_eq!((local(3), origin(3)), (vec![2, 4], vec![2, 0]));
        assert_eq!((local(4), origin(4)), (vec![3, 2], vec![0, 2]));
        // A replicated operand does not hide a sharded one; two replicated give replicated.
        assert_eq!((local(5), origin(5)), (vec![4, 2], vec![0, 2]));
        assert!(outputs[6].is_replicated());
        // A slice keeps the axes of the dimensions it leaves longer than one; a reshape
        // dropping a dimension of size one keeps the others'.
        assert_eq!((local(7), origin(7)), (vec![4, 1], vec![0, 1]));
        assert_eq!((local(8), origin(8)), (vec![2], vec![2]));
        // A value grouped with `a` (`shard_alike`, through a cast) is sharded as `a` is.
        assert_eq!((local(10), origin(10)), (vec![4, 2], vec![0, 2]));
        // A token (an ordered effect's) is every device's, as the empty buffer it travels as.
        let (inputs, _) = exe.executable().tilings().unwrap();
        for tiling in [&inputs[3], &outputs[9]] {
            assert!(tiling.is_replicated());
            assert_eq!(tiling.global, oxla_ir::eval::token_literal().ty);
        }
    }

    #[test]
    fn a_result_is_held_only_by_its_buffer_when_it_becomes_ready() {
        // Whoever the ready event wakes may drop the buffer and run again at once; its bytes
        // must then go back to the buffer cache, which needs the worker's reference gone.
        let client = crate::Client::new(&crate::ClientOptions::default()).unwrap();
        let text = "
func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
";
        let exe = client
            .compile(text.as_bytes(), CompileOptions::default())
            .unwrap();
        let device = &client.addressable_devices()[0];
        for fail in [false, true] {
            let ty = TensorType::new([4], oxla_ir::ElementType::F32);
            let gate = std::sync::Arc::new(std::sync::Barrier::new(2));
            let producer_gate = gate.clone();
            // An argument that is not ready yet: the run goes to a worker and waits there.
            let (pending, _) = client
                .buffer_from_producer(device, ty, move || {
                    producer_gate.wait();
                    if fail {
                        return Err(ClientError::Internal("no bytes".to_string()));
                    }
                    Ok([1.0f32, 2.0, 3.0, 4.0]
                        .iter()
                        .flat_map(|v| v.to_le_bytes())
                        .collect())
                })
                .unwrap();
            let result = exe
                .execute(&[vec![pending]], &ExecuteOptions::default())
                .unwrap();
            let output = &result.outputs[0][0];
            let slot = Arc::downgrade(&output.slot("").unwrap());
            let (tx, rx) = std::sync::mpsc::channel();
            // Runs on the worker, inside the completion of the output's event.
            output.ready_event().on_ready(move |status| {
                tx.send((status.is_ok(), slot.strong_count())).unwrap();
            });
            gate.wait();
            let (ok, holders) = rx.recv().unwrap();
            assert_eq!((ok, holders), (!fail, 1), "failed run: {fail}");
        }
    }

    #[test]
    fn a_donated_argument_is_updated_in_place() {
        // Rows added into a donated table: the result takes the table's memory, written in
        // place, instead of a copy of it.
        let client = crate::Client::new(&crate::ClientOptions::default()).unwrap();
        let text = r#"
func.func public @main(%t: tensor<6x3xf32> {tf.aliasing_output = 0 : i32}, %i: tensor<2x1xi32>, %u: tensor<2x3xf32>) -> tensor<6x3xf32> {
  %0 = "stablehlo.scatter"(%t, %i, %u) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<6x3xf32>, tensor<2x1xi32>, tensor<2x3xf32>) -> tensor<6x3xf32>
  return %0 : tensor<6x3xf32>
}
"#;
        let exe = client
            .compile(text.as_bytes(), CompileOptions::default())
            .unwrap();
        let device = &client.addressable_devices()[0];
        let table: Vec<f32> = (0..18).map(|v| v as f32).collect();
        let mut want = table.clone();
        for (row, add) in [(4, 100.0), (1, 10.0)] {
            for v in &mut want[row * 3..row * 3 + 3] {
                *v += add;
            }
        }
        let run = |donate: bool, viewed: bool| {
            let t =
                Buffer::from_literal(device, Literal::from_f32(&[6, 3], &table).unwrap()).unwrap();
            if viewed {
                t.increase_external_refs().unwrap();
            }
            let i =
                Buffer::from_literal(device, Literal::from_i32(&[2, 1], &[4, 1]).unwrap()).unwrap();
            let updates = [100.0f32, 100.0, 100.0, 10.0, 10.0, 10.0];
            let u = Buffer::from_literal(device, Literal::from_f32(&[2, 3], &updates).unwrap())
                .unwrap();
            let address = t.data_address().unwrap();
            let options = ExecuteOptions {
                non_donatable_inputs: if donate { vec![] } else { vec![0] },
                ..ExecuteOptions::default()
            };
            let result = exe.execute(&[vec![t.clone(), i, u]], &options).unwrap();
            result.completions[0].wait().unwrap();
            let out = &result.outputs[0][0];
            assert_eq!(out.to_literal().unwrap().to_f32_vec().unwrap(), want);
            (t, address, out.data_address().unwrap())
        };
        let (t, before, after) = run(true, false);
        assert!(t.is_deleted());
        assert_eq!(before, after, "the donated table is written in place");
        // Not donated, or read in place by another framework (external references): the
        // table stays as it was.
        for (donate, viewed) in [(false, false), (true, true)] {
            let (t, before, after) = run(donate, viewed);
            assert_ne!(before, after);
            assert_eq!(t.to_literal().unwrap().to_f32_vec().unwrap(), table);
        }
    }

    #[test]
    fn small_programs_and_short_counted_loops_run_on_the_calling_thread() {
        let client = crate::Client::new(&crate::ClientOptions::default()).unwrap();
        let options = || CompileOptions {
            entry: Some("f".to_string()),
            ..CompileOptions::default()
        };
        // The first output of a single-device execution, as f32 values.
        let first_f32 = |result: &ExecuteResult| {
            result.outputs[0][0]
                .to_literal()
                .unwrap()
                .to_f32_vec()
                .unwrap()
        };
        let exe = client.compile(TWO_FUNCTIONS.as_bytes(), options()).unwrap();
        assert!(exe.executable().inner.inline);
        let device = &client.addressable_devices()[0];
        let arg = Buffer::from_literal(
            device,
            oxla_ir::Literal::from_f32(&[2], &[1.0, 2.5]).unwrap(),
        )
        .unwrap();
        let result = exe
            .execute(&[vec![arg]], &ExecuteOptions::default())
            .unwrap();
        // Run on the calling thread: complete before execute returned.
        assert!(result.completions[0].is_ready());
        assert_eq!(first_f32(&result), vec![2.0, 5.0]);
        // An argument that is not ready yet sends the run to a worker, which waits for it.
        let ty = TensorType::new([2], oxla_ir::ElementType::F32);
        let gate = std::sync::Arc::new(std::sync::Barrier::new(2));
        let producer_gate = gate.clone();
        let (pending, _) = client
            .buffer_from_producer(device, ty, move || {
                producer_gate.wait();
                Ok([1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect())
            })
            .unwrap();
        let result = exe
            .execute(&[vec![pending]], &ExecuteOptions::default())
            .unwrap();
        gate.wait();
        result.completions[0].wait().unwrap();
        assert_eq!(first_f32(&result), vec![2.0, 4.0]);
        // Loops and large values keep the asynchronous path.
        let looped = "
func.func public @main(%a: tensor<i32>) -> tensor<i32> {
  %0 = stablehlo.while(%i = %a) : tensor<i32>
    cond {
      %c = stablehlo.constant dense<10> : tensor<i32>
      %p = stablehlo.compare LT, %i, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %n = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %n : tensor<i32>
    }
  return %0 : tensor<i32>
}
";
        let exe = client
            .compile(looped.as_bytes(), CompileOptions::default())
            .unwrap();
        assert!(!exe.executable().inner.inline);
        // Elementwise work over a million elements runs inline; over a hundred million,
        // or a product of large matrices, it does not.
        let elementwise = |n: usize| {
            format!(
                "
func.func public @main(%a: tensor<{n}x1024xf32>) -> tensor<{n}x1024xf32> {{
  %0 = stablehlo.add %a, %a : tensor<{n}x1024xf32>
  %1 = stablehlo.multiply %0, %a : tensor<{n}x1024xf32>
  return %1 : tensor<{n}x1024xf32>
}}
"
            )
        };
        let inline = |text: &str| {
            let exe = client
                .compile(text.as_bytes(), CompileOptions::default())
                .unwrap();
            exe.executable().inner.inline
        };
        assert!(inline(&elementwise(1024)));
        assert!(!inline(&elementwise(100 * 1024)));
        let product = |n: usize| {
            format!(
                "
func.func public @main(%a: tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32> {{
  %0 = stablehlo.dot_general %a, %a, contracting_dims = [1] x [0] : (tensor<{n}x{n}xf32>, tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32>
  return %0 : tensor<{n}x{n}xf32>
}}
"
            )
        };
        assert!(inline(&product(16)));
        assert!(!inline(&product(512)));
        // A scatter that replaces (or adds) a window of a large input is a copy and a
        // write: it runs inline. One whose body takes several ops runs per element, so
        // on a large input it does not.
        let scatter = |body: &str| {
            format!(
                "
func.func public @main(%a: tensor<1024x1024xf32>, %u: tensor<100x850xf32>) -> tensor<1024x1024xf32> {{
  %i = stablehlo.constant dense<[100, 50]> : tensor<2xi32>
  %0 = \"stablehlo.scatter\"(%a, %i, %u) <{{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1]>, unique_indices = true}}> ({{
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    {body}
  }}) : (tensor<1024x1024xf32>, tensor<2xi32>, tensor<100x850xf32>) -> tensor<1024x1024xf32>
  return %0 : tensor<1024x1024xf32>
}}
"
            )
        };
        assert!(inline(&scatter("stablehlo.return %y : tensor<f32>")));
        assert!(inline(&scatter(
            "%s = stablehlo.add %x, %y : tensor<f32>\n    stablehlo.return %s : tensor<f32>"
        )));
        assert!(!inline(&scatter(
            "%s = stablehlo.add %x, %y : tensor<f32>\n    %t = stablehlo.multiply %s, %y : tensor<f32>\n    stablehlo.return %t : tensor<f32>"
        )));
        // A counted loop (constant start, bound and step) of little work runs inline, and
        // gives the same answer; the same loop with a million trips does not.
        let counted = |trips: u32| {
            format!(
                "
func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {{
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %n = stablehlo.constant dense<{trips}> : tensor<i32>
  %0:2 = stablehlo.while(%i = %zero, %v = %x) : tensor<i32>, tensor<4xf32>
    cond {{
      %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    }} do {{
      %one = stablehlo.constant dense<1> : tensor<i32>
      %next = stablehlo.add %i, %one : tensor<i32>
      %w = stablehlo.add %v, %v : tensor<4xf32>
      stablehlo.return %next, %w : tensor<i32>, tensor<4xf32>
    }}
  return %0#1 : tensor<4xf32>
}}
"
            )
        };
        let exe = client
            .compile(counted(10).as_bytes(), CompileOptions::default())
            .unwrap();
        assert!(exe.executable().inner.inline);
        let arg = Buffer::from_literal(
            device,
            oxla_ir::Literal::from_f32(&[4], &[1.0, -2.0, 0.5, 0.0]).unwrap(),
        )
        .unwrap();
        let result = exe
            .execute(&[vec![arg]], &ExecuteOptions::default())
            .unwrap();
        assert!(result.completions[0].is_ready());
        assert_eq!(first_f32(&result), vec![1024.0, -2048.0, 512.0, 0.0]);
        let exe = client
            .compile(counted(1_000_000).as_bytes(), CompileOptions::default())
            .unwrap();
        assert!(!exe.executable().inner.inline);
        // A `fori_loop` over the elements of a 1024-element vector (`v.at[i].set(..)`)
        // updates it in place one element per trip: a thousand trips run inline, a million
        // do not.
        let elementwise_loop = |trips: u32| {
            format!(
                "
func.func public @main(%x: tensor<1024xf32>) -> tensor<1024xf32> {{
  %start = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<{}> : tensor<i32>
  %0:2 = stablehlo.while(%i = %start, %v = %x) : tensor<i32>, tensor<1024xf32>
    cond {{
      %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    }} do {{
      %one = stablehlo.constant dense<1> : tensor<i32>
      %prev = stablehlo.subtract %i, %one : tensor<i32>
      %e = stablehlo.dynamic_slice %v, %prev, sizes = [1] : (tensor<1024xf32>, tensor<i32>) -> tensor<1xf32>
      %half = stablehlo.constant dense<0.5> : tensor<1xf32>
      %h = stablehlo.multiply %e, %half : tensor<1xf32>
      %ones = stablehlo.constant dense<1.0> : tensor<1xf32>
      %g = stablehlo.add %h, %ones : tensor<1xf32>
      %w = stablehlo.dynamic_update_slice %v, %g, %i : (tensor<1024xf32>, tensor<1xf32>, tensor<i32>) -> tensor<1024xf32>
      %next = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %next, %w : tensor<i32>, tensor<1024xf32>
    }}
  return %0#1 : tensor<1024xf32>
}}
",
                trips + 1
            )
        };
        let exe = client
            .compile(elementwise_loop(1023).as_bytes(), CompileOptions::default())
            .unwrap();
        assert!(exe.executable().inner.inline);
        let x: Vec<f32> = (0..1024).map(|k| 1.0 + k as f32).collect();
        let arg =
            Buffer::from_literal(device, oxla_ir::Literal::from_f32(&[1024], &x).unwrap()).unwrap();
        let result = exe
            .execute(&[vec![arg]], &ExecuteOptions::default())
            .unwrap();
        assert!(result.completions[0].is_ready());
        let mut expected = x.clone();
        for k in 1..1024 {
            expected[k] = expected[k - 1] * 0.5 + 1.0;
        }
        assert_eq!(first_f32(&result), expected);
        assert!(!inline(&elementwise_loop(1_000_000)));
    }

    #[test]
    fn programs_of_several_products_run_on_the_evaluator_pool_and_agree() {
        let client = crate::Client::new(&crate::ClientOptions::default()).unwrap();
        // Two chained 256 x 256 products with a relu between: too large to run inline.
        let two = "
func.func public @main(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %z = stablehlo.constant dense<0.0> : tensor<256x256xf32>
  %1 = stablehlo.maximum %0, %z : tensor<256x256xf32>
  %2 = stablehlo.dot_general %1, %b, contracting_dims = [1] x [0] : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  return %2 : tensor<256x256xf32>
}
";
        let compile = |text: &str| {
            client
                .compile(text.as_bytes(), CompileOptions::default())
                .unwrap()
        };
        let exe = compile(two);
        assert!(exe.executable().inner.on_eval_pool);
        assert!(!exe.executable().inner.inline);
        // One product, or a custom call (a host callback may run another execution that
        // needs the pool), keep the worker.
        let one = two
            .replace("%2 = stablehlo.dot_general %1, %b, contracting_dims = [1] x [0] : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>", "%2 = stablehlo.add %1, %b : tensor<256x256xf32>");
        assert!(!compile(&one).executable().inner.on_eval_pool);
        let called = two.replace(
            "return %2",
            "%3 = stablehlo.custom_call @oxla_test_missing(%2) : (tensor<256x256xf32>) -> tensor<256x256xf32>\n  return %2",
        );
        assert!(!runs_on_eval_pool(
            &oxla_frontend::parse_text(&called).unwrap()
        ));
        // The answer is the evaluator's, for an argument produced by a pending execution too.
        let device = &client.addressable_devices()[0];
        let values: Vec<f32> = (0..256 * 256)
            .map(|i| ((i * 7) % 13) as f32 * 0.125 - 0.75)
            .collect();
        let literal = oxla_ir::Literal::from_f32(&[256, 256], &values).unwrap();
        let want = oxla_ir::eval::run_function(
            &oxla_frontend::parse_text(two).unwrap(),
            "main",
            &[literal.clone(), literal.clone()],
        )
        .unwrap();
        let arg = || Buffer::from_literal(device, literal.clone()).unwrap();
        let first = exe
            .execute(&[vec![arg(), arg()]], &ExecuteOptions::default())
            .unwrap();
        let pending = first.outputs[0][0].clone();
        let second = exe
            .execute(&[vec![pending, arg()]], &ExecuteOptions::default())
            .unwrap();
        second.completions[0].wait().unwrap();
        assert_eq!(first.outputs[0][0].to_literal().unwrap(), want[0]);
        let want_second = oxla_ir::eval::run_function(
            &oxla_frontend::parse_text(two).unwrap(),
            "main",
            &[want[0].clone(), literal.clone()],
        )
        .unwrap();
        assert_eq!(second.outputs[0][0].to_literal().unwrap(), want_second[0]);
    }
}
