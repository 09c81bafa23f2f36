//! The client: owns the devices and the worker pool, creates buffers, compiles programs.

use crate::buffer::Buffer;
use crate::device::{Device, Memory, Runtime};
use crate::error::{ClientError, Result};
use crate::event::Event;
use crate::executable::{CompileOptions, Executable, LoadedExecutable};
use crate::flags::{FlagValue, Flags, FLAGS_ENV};
use crate::pool::WorkerPool;
use crate::trace::Tracer;
use oxla_ir::TensorType;
use std::sync::Arc;

/// The platform name oxla reports (JAX's `jax.devices()[0].platform`).
pub const PLATFORM_NAME: &str = "oxla";
/// The environment variable that sets the number of devices.
pub const NUM_DEVICES_ENV: &str = "OXLA_NUM_DEVICES";
/// The most devices a client may have.
pub const MAX_DEVICES: usize = 1024;

/// The platform version string.
pub fn platform_version() -> String {
    format!("oxla {}", env!("CARGO_PKG_VERSION"))
}

/// Options for creating a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientOptions {
    /// Number of virtual devices (1 to [`MAX_DEVICES`]).
    pub num_devices: usize,
    /// Worker threads; `None` means one per available core (at least 2).
    pub num_threads: Option<usize>,
    /// Compile and diagnostics flags (`OXLA_FLAGS`, client create options).
    pub flags: Flags,
}

impl Default for ClientOptions {
    fn default() -> ClientOptions {
        ClientOptions {
            num_devices: 1,
            num_threads: None,
            flags: Flags::default(),
        }
    }
}

impl ClientOptions {
    /// Defaults overridden by the environment (`OXLA_NUM_DEVICES`, then `OXLA_FLAGS`).
    pub fn from_env() -> Result<ClientOptions> {
        let mut options = ClientOptions::from_env_devices()?;
        if let Ok(text) = std::env::var(FLAGS_ENV) {
            options.apply_flag_text(&text, FLAGS_ENV)?;
        }
        Ok(options)
    }

    /// Applies flag text (`--opt_level=2 --num_threads=4`), as in `OXLA_FLAGS`.
    pub fn apply_flag_text(&mut self, text: &str, source: &str) -> Result<()> {
        for (name, value) in crate::flags::parse_flag_text(text, source)? {
            self.set_flag(&name, &value, source)?;
        }
        Ok(())
    }

    /// Sets one flag (any in [`crate::flags::FLAGS`], with or without the `oxla_` prefix).
    pub fn set_flag(&mut self, name: &str, value: &FlagValue, source: &str) -> Result<()> {
        let bare = name.strip_prefix(crate::flags::FLAG_PREFIX).unwrap_or(name);
        let int = |value: &FlagValue| -> Result<i64> {
            match value {
                FlagValue::Int(n) => Ok(*n),
                FlagValue::Str(s) => s.trim().parse().map_err(|_| {
                    ClientError::InvalidArgument(format!(
                        "flag {bare} in {source} takes an int value, got {s:?}; valid flags: {}",
                        crate::flags::valid_flags_list()
                    ))
                }),
                FlagValue::Bool(b) => Err(ClientError::InvalidArgument(format!(
                    "flag {bare} in {source} takes an int value, got {b}; valid flags: {}",
                    crate::flags::valid_flags_list()
                ))),
            }
        };
        match bare {
            "num_devices" => self.set_num_devices(int(value)?),
            "num_threads" => match usize::try_from(int(value)?) {
                Ok(n) if (1..=1024).contains(&n) => {
                    self.num_threads = Some(n);
                    Ok(())
                }
                _ => Err(ClientError::InvalidArgument(format!(
                    "flag num_threads in {source} must be between 1 and 1024, got {value}"
                ))),
            },
            _ => self.flags.set(name, value, source),
        }
    }

    fn from_env_devices() -> Result<ClientOptions> {
        let mut options = ClientOptions::default();
        if let Ok(value) = std::env::var(NUM_DEVICES_ENV) {
            let parsed: i64 = value.trim().parse().map_err(|_| {
                ClientError::InvalidArgument(format!(
                    "{NUM_DEVICES_ENV}={value:?} is not an integer"
                ))
            })?;
            options.set_num_devices(parsed)?;
        }
        Ok(options)
    }

    /// Sets the device count, checking its range.
    pub fn set_num_devices(&mut self, num_devices: i64) -> Result<()> {
        match usize::try_from(num_devices) {
            Ok(n) if (1..=MAX_DEVICES).contains(&n) => {
                self.num_devices = n;
                Ok(())
            }
            _ => Err(ClientError::InvalidArgument(format!(
                "num_devices must be between 1 and {MAX_DEVICES}, got {num_devices}"
            ))),
        }
    }
}

struct ClientInner {
    devices: Vec<Device>,
    runtime: Arc<Runtime>,
    flags: Flags,
}

/// An oxla client. Cheap to clone; the worker pool stops when the last clone and every
/// object made from it are gone.
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("devices", &self.inner.devices)
            .finish()
    }
}

impl Client {
    /// Creates a client.
    pub fn new(options: &ClientOptions) -> Result<Client> {
        if !(1..=MAX_DEVICES).contains(&options.num_devices) {
            return Err(ClientError::InvalidArgument(format!(
                "num_devices must be between 1 and {MAX_DEVICES}, got {}",
                options.num_devices
            )));
        }
        let num_threads = options.num_threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .max(2)
        });
        crate::trace::init_logging()?;
        oxla_ir::eval::tile_code::set_enabled(options.flags.codegen);
        let tracer = options
            .flags
            .trace_path
            .clone()
            .map(|p| Arc::new(Tracer::new(p)));
        let pool = WorkerPool::with_tracer(num_threads, tracer)
            .map_err(|e| ClientError::ResourceExhausted(format!("cannot start workers: {e}")))?;
        tracing::debug!(
            num_devices = options.num_devices,
            num_threads,
            flags = %options.flags.to_flag_text(),
            "oxla client created"
        );
        let runtime = Arc::new(Runtime { pool });
        let devices = (0..options.num_devices)
            .map(|id| Device::new(id as i32, runtime.clone()))
            .collect();
        Ok(Client {
            inner: Arc::new(ClientInner {
                devices,
                runtime,
                flags: options.flags.clone(),
            }),
        })
    }

    /// The platform name, `oxla`.
    pub fn platform_name(&self) -> &'static str {
        PLATFORM_NAME
    }

    /// The platform version.
    pub fn platform_version(&self) -> String {
        platform_version()
    }

    /// The index of this process (always 0).
    pub fn process_index(&self) -> i32 {
        0
    }

    /// The client's flags (before per-compile overrides).
    pub fn flags(&self) -> &Flags {
        &self.inner.flags
    }

    /// Writes the trace file now (it is also written after each compile, about once a second
    /// while events arrive, and when the client is dropped). Does nothing without `trace_path`.
    pub fn flush_trace(&self) -> Result<()> {
        match self.inner.runtime.pool.tracer() {
            Some(tracer) => tracer.flush().map_err(|e| {
                ClientError::ResourceExhausted(format!(
                    "cannot write trace {}: {e}",
                    tracer.path().display()
                ))
            }),
            None => Ok(()),
        }
    }

    /// Number of worker threads.
    pub fn num_threads(&self) -> usize {
        self.inner.runtime.pool.num_threads()
    }

    /// All devices, by id.
    pub fn devices(&self) -> &[Device] {
        &self.inner.devices
    }

    /// The devices this client can use (all of them).
    pub fn addressable_devices(&self) -> &[Device] {
        &self.inner.devices
    }

    /// The device with global id `id`.
    pub fn lookup_device(&self, id: i64) -> Result<&Device> {
        usize::try_from(id)
            .ok()
            .and_then(|idx| self.inner.devices.get(idx))
            .ok_or_else(|| {
                ClientError::NotFound(format!(
                    "no device with id {id} (the client has {} devices)",
                    self.inner.devices.len()
                ))
            })
    }

    /// The addressable device with local hardware id `id`.
    pub fn lookup_addressable_device(&self, id: i64) -> Result<&Device> {
        self.lookup_device(id)
    }

    /// Every memory of every device.
    pub fn addressable_memories(&self) -> Vec<Memory> {
        self.inner
            .devices
            .iter()
            .map(|d| d.default_memory().clone())
            .collect()
    }

    /// The device owning `memory`.
    pub fn memory_device(&self, memory: &Memory) -> Result<&Device> {
        self.lookup_device(i64::from(memory.device_id()))
    }

    /// Device ids for `num_replicas` x `num_partitions`, by `[replica][partition]`.
    pub fn default_device_assignment(
        &self,
        num_replicas: usize,
        num_partitions: usize,
    ) -> Result<Vec<Vec<i32>>> {
        let needed = num_replicas.saturating_mul(num_partitions);
        if num_replicas == 0 || num_partitions == 0 || needed > self.inner.devices.len() {
            return Err(ClientError::InvalidArgument(format!(
                "{num_replicas} replicas x {num_partitions} partitions need {needed} devices; \
                 the client has {}",
                self.inner.devices.len()
            )));
        }
        Ok((0..num_replicas)
            .map(|r| {
                (0..num_partitions)
                    .map(|p| (r * num_partitions + p) as i32)
                    .collect()
            })
            .collect())
    }

    /// A ready buffer on `device` holding dense `data`.
    pub fn buffer_from_bytes(
        &self,
        device: &Device,
        ty: TensorType,
        data: Vec<u8>,
    ) -> Result<Buffer> {
        self.check_own_device(device)?;
        Buffer::from_bytes(device, ty, data)
    }

    /// A ready buffer on `device` whose dense bytes `produce` computes on the calling thread.
    pub fn buffer_from_host_now(
        &self,
        device: &Device,
        ty: TensorType,
        produce: impl FnOnce() -> Result<Vec<u8>>,
    ) -> Result<Buffer> {
        self.check_own_device(device)?;
        Buffer::from_host_now(device, ty, produce)
    }

    /// A buffer on `device` whose dense bytes `produce` computes on the worker pool; the event
    /// is ready once `produce` has returned (the host data is no longer needed).
    pub fn buffer_from_producer(
        &self,
        device: &Device,
        ty: TensorType,
        produce: impl FnOnce() -> Result<Vec<u8>> + Send + 'static,
    ) -> Result<(Buffer, Event)> {
        self.check_own_device(device)?;
        Buffer::from_producer(device, ty, produce)
    }

    fn check_own_device(&self, device: &Device) -> Result<()> {
        match self.inner.devices.get(device.id() as usize) {
            Some(own) if Arc::ptr_eq(own.runtime(), device.runtime()) => Ok(()),
            _ => Err(ClientError::InvalidArgument(format!(
                "device {} belongs to another client",
                device.id()
            ))),
        }
    }

    /// Compiles `program` (MLIR bytecode or StableHLO text) and loads it.
    pub fn compile(&self, program: &[u8], options: CompileOptions) -> Result<LoadedExecutable> {
        let flags = self.inner.flags.for_compile(&options.flags)?;
        let tracer = self.inner.runtime.pool.tracer().map(|t| &**t);
        let executable = Executable::compile_with(program, options, &flags, tracer)?;
        self.load(executable)
    }

    /// Loads a serialized executable (compiling its program again).
    pub fn deserialize_and_load(&self, bytes: &[u8]) -> Result<LoadedExecutable> {
        let executable = Executable::deserialize(bytes)?;
        self.load(executable)
    }

    /// Loads `executable` onto the devices its options assign.
    pub fn load(&self, executable: Executable) -> Result<LoadedExecutable> {
        let options = executable.options();
        let assignment = match &options.device_assignment {
            Some(rows) => {
                if rows.len() != options.num_replicas
                    || rows.iter().any(|row| row.len() != options.num_partitions)
                {
                    return Err(ClientError::InvalidArgument(format!(
                        "device assignment {rows:?} is not {} replicas x {} partitions",
                        options.num_replicas, options.num_partitions
                    )));
                }
                rows.clone()
            }
            None => self.default_device_assignment(options.num_replicas, options.num_partitions)?,
        };
        let mut devices: Vec<Device> = Vec::new();
        for &id in assignment.iter().flatten() {
            let device = self.lookup_device(i64::from(id))?;
            if devices.contains(device) {
                return Err(ClientError::InvalidArgument(format!(
                    "device {id} appears twice in the device assignment"
                )));
            }
            devices.push(device.clone());
        }
        Ok(LoadedExecutable::new(executable, devices))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executable::ExecuteOptions;
    use oxla_ir::{ElementType, Literal};

    const ADD: &str = "func.func public @main(%a: tensor<2xf32> {jax.buffer_donor = true}, %b: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %a, %b : tensor<2xf32>
  return %0 : tensor<2xf32>
}
";

    #[test]
    fn copies_into_the_same_memory_are_new_buffers_with_the_same_data() {
        let client = Client::new(&ClientOptions::from_env().unwrap()).unwrap();
        let device = &client.addressable_devices()[0];
        let values = Literal::from_f32(&[3], &[1.0, -2.0, 3.5]).unwrap();
        let buffer = Buffer::from_literal(device, values.clone()).unwrap();
        let copy = buffer
            .copy_to_memory(device, device.default_memory())
            .unwrap();
        assert!(!copy.same_buffer(&buffer));
        buffer.delete();
        assert_eq!(copy.to_literal().unwrap(), values);
    }

    #[test]
    fn compile_rejects_a_program_that_fails_verification() {
        let client = Client::new(&ClientOptions::default()).unwrap();
        let bad = "func.func public @main(%a: tensor<2xf32>, %b: tensor<3xf32>) -> tensor<2xf32> {
  %0 = \"stablehlo.add\"(%a, %b) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
";
        let err = client
            .compile(bad.as_bytes(), CompileOptions::default())
            .unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::InvalidArgument);
        assert!(err.message().contains("failed verification"), "{err}");
        assert!(err.message().contains("stablehlo.add at "), "{err}");
        assert!(
            err.message().contains("operand shapes [2] and [3] differ"),
            "{err}"
        );
    }

    #[test]
    fn options_and_devices() {
        let mut options = ClientOptions::default();
        assert!(options.set_num_devices(0).is_err());
        options.set_num_devices(3).unwrap();
        let client = Client::new(&options).unwrap();
        assert_eq!(client.devices().len(), 3);
        assert_eq!(client.lookup_device(2).unwrap().id(), 2);
        assert_eq!(
            client.lookup_device(3).unwrap_err().code(),
            crate::ErrorCode::NotFound
        );
        assert_eq!(
            client.default_device_assignment(1, 2).unwrap(),
            vec![vec![0, 1]]
        );
        assert!(client.default_device_assignment(2, 2).is_err());
    }

    #[test]
    fn compile_execute_donate_and_serialize() {
        let client = Client::new(&ClientOptions::default()).unwrap();
        let device = &client.devices()[0];
        let exe = client
            .compile(ADD.as_bytes(), CompileOptions::default())
            .unwrap();
        assert_eq!(exe.executable().donated_inputs(), &[true, false]);
        let a =
            Buffer::from_literal(device, Literal::from_f32(&[2], &[1.0, 2.0]).unwrap()).unwrap();
        let b =
            Buffer::from_literal(device, Literal::from_f32(&[2], &[3.0, 4.0]).unwrap()).unwrap();
        let result = exe
            .execute(&[vec![a.clone(), b.clone()]], &ExecuteOptions::default())
            .unwrap();
        result.completions[0].wait().unwrap();
        let out = result.outputs[0][0].to_literal().unwrap();
        assert_eq!(out.to_f32_vec().unwrap(), vec![4.0, 6.0]);
        assert!(a.is_deleted(), "donated");
        assert!(!b.is_deleted());

        let wrong =
            Buffer::from_bytes(device, TensorType::new([2], ElementType::S32), vec![0; 8]).unwrap();
        let err = exe
            .execute(&[vec![wrong, b.clone()]], &ExecuteOptions::default())
            .unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::InvalidArgument);

        let bytes = exe.executable().serialize();
        let again = client.deserialize_and_load(&bytes).unwrap();
        assert_eq!(
            again.executable().fingerprint(),
            exe.executable().fingerprint()
        );
        assert!(client.deserialize_and_load(&bytes[..10]).is_err());
    }
}
