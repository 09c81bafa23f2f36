//! oxla-client: the safe Rust model of a client (devices, memories, buffers, events,
//! executables) that the PJRT shim and the CLI drive.
//!
//! Work that PJRT describes as asynchronous (transfers, executions) runs on the client's worker
//! pool and reports through [`Event`]s. Buffers hold their bytes in oxla's dense host layout.
#![forbid(unsafe_code)]

pub mod buffer;
pub mod client;
pub mod collectives;
pub mod device;
pub mod dump;
pub mod error;
pub mod event;
pub mod executable;
pub mod flags;
pub mod layout;
pub mod pool;
pub mod trace;

pub use buffer::Buffer;
pub use client::{Client, ClientOptions, NUM_DEVICES_ENV, PLATFORM_NAME};
pub use device::{Device, Memory, DEVICE_KIND, MEMORY_KIND};
pub use dump::Reproducer;
pub use error::{ClientError, ErrorCode, Result};
pub use event::Event;
pub use executable::{
    CompileOptions, Executable, ExecuteOptions, ExecuteResult, LoadedExecutable, PROGRAM_FORMAT,
};
pub use flags::{FlagOverrides, FlagValue, Flags, ARTIFACT_DIR_ENV, FLAGS_ENV};
pub use oxla_frontend::{STABLEHLO_CURRENT_VERSION, STABLEHLO_MINIMUM_VERSION};
pub use oxla_ir::{ElementType, Literal, TensorType};
