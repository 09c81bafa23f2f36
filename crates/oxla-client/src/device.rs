//! Devices and memories: oxla's virtual CPU devices, each with one default memory.

use crate::pool::WorkerPool;
use std::sync::Arc;

/// The kind string of every oxla device (JAX's CPU backend reports the same).
pub const DEVICE_KIND: &str = "cpu";
/// The kind string of a device's default memory (as XLA's CPU client names it).
pub const MEMORY_KIND: &str = "device";
/// The numeric id of [`MEMORY_KIND`].
pub const MEMORY_KIND_ID: i32 = 0;

/// State shared by every object of one client: the worker pool.
pub(crate) struct Runtime {
    pub(crate) pool: WorkerPool,
}

/// A memory space: the storage a buffer lives in. Each device has exactly one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Memory {
    id: i32,
    device_id: i32,
}

impl Memory {
    /// The memory id (unique within the client; equal to its device's id).
    pub fn id(&self) -> i32 {
        self.id
    }

    /// The id of the one device that addresses this memory.
    pub fn device_id(&self) -> i32 {
        self.device_id
    }

    /// The memory kind (see [`MEMORY_KIND`]).
    pub fn kind(&self) -> &'static str {
        MEMORY_KIND
    }

    /// The numeric kind id.
    pub fn kind_id(&self) -> i32 {
        MEMORY_KIND_ID
    }

    /// A terse description for users.
    pub fn to_display_string(&self) -> String {
        format!("OxlaDeviceMemory(id={})", self.id)
    }

    /// A verbose description for logs.
    pub fn debug_string(&self) -> String {
        format!(
            "OxlaDeviceMemory(id={}, kind={}, device={})",
            self.id, MEMORY_KIND, self.device_id
        )
    }
}

struct DeviceInner {
    id: i32,
    memory: Memory,
    runtime: Arc<Runtime>,
}

/// One virtual device. Cheap to clone; equality is by id.
#[derive(Clone)]
pub struct Device {
    inner: Arc<DeviceInner>,
}

impl PartialEq for Device {
    fn eq(&self, other: &Device) -> bool {
        self.id() == other.id()
    }
}

impl Eq for Device {}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_display_string())
    }
}

impl Device {
    pub(crate) fn new(id: i32, runtime: Arc<Runtime>) -> Device {
        Device {
            inner: Arc::new(DeviceInner {
                id,
                memory: Memory { id, device_id: id },
                runtime,
            }),
        }
    }

    pub(crate) fn runtime(&self) -> &Arc<Runtime> {
        &self.inner.runtime
    }

    /// The global device id.
    pub fn id(&self) -> i32 {
        self.inner.id
    }

    /// The process that owns the device (always 0).
    pub fn process_index(&self) -> i32 {
        0
    }

    /// The local hardware id (equal to the id).
    pub fn local_hardware_id(&self) -> i32 {
        self.inner.id
    }

    /// Whether this client can run work on the device (always true).
    pub fn is_addressable(&self) -> bool {
        true
    }

    /// The device kind (see [`DEVICE_KIND`]).
    pub fn kind(&self) -> &'static str {
        DEVICE_KIND
    }

    /// A terse description for users, in the style of JAX's `CpuDevice(id=0)`.
    pub fn to_display_string(&self) -> String {
        format!("OxlaDevice(id={})", self.inner.id)
    }

    /// A verbose description for logs.
    pub fn debug_string(&self) -> String {
        format!("oxla:{}", self.inner.id)
    }

    /// The device's default (and only) memory.
    pub fn default_memory(&self) -> &Memory {
        &self.inner.memory
    }

    /// The memories this device addresses.
    pub fn memories(&self) -> Vec<Memory> {
        vec![self.inner.memory.clone()]
    }
}
