//! oxla-pjrt: the PJRT plugin. `GetPjrtApi` returns a C API table whose entry points are a thin
//! shim (in [`ffi`]) over the safe model in `oxla-client`.

pub mod ffi;

pub use ffi::{api, GetPjrtApi};

/// The plugin's own allocations (every buffer and evaluator value) go to mimalloc: it keeps
/// freed large blocks for reuse, where glibc's malloc returns them to the kernel and the
/// next execution pays page faults to get them back.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
