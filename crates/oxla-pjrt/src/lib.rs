//! oxla-pjrt: the PJRT plugin. `GetPjrtApi` returns a C API table whose entry points are a thin
//! shim (in [`ffi`]) over the safe model in `oxla-client`.

pub mod ffi;

pub use ffi::{api, GetPjrtApi};
