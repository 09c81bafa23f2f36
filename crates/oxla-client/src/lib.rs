//! oxla-client: the safe Rust model of a client (devices, memories, buffers, events,
//! executables) that the PJRT shim and the CLI drive.
//!
//! Work that PJRT describes as asynchronous (transfers, executions) runs on the client's worker
//! pool and reports through [`Event`]s. Buffers hold their bytes in oxla's dense host layout.
#![forbid(unsafe_code)]

pub mod buffer;
pub mod client;
pub mod device;
pub mod error;
pub mod event;
pub mod executable;
pub mod layout;
pub mod pool;

pub use buffer::Buffer;
pub use client::{Client, ClientOptions, NUM_DEVICES_ENV, PLATFORM_NAME};
pub use device::{Device, Memory, DEVICE_KIND, MEMORY_KIND};
pub use error::{ClientError, ErrorCode, Result};
pub use event::Event;
pub use executable::{
    CompileOptions, Executable, ExecuteOptions, ExecuteResult, LoadedExecutable, PROGRAM_FORMAT,
};
pub use oxla_frontend::{STABLEHLO_CURRENT_VERSION, STABLEHLO_MINIMUM_VERSION};
pub use oxla_ir::{ElementType, Literal, TensorType};
