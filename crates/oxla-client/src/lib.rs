//! oxla-client: the safe Rust model of a client (devices, buffers, executables).
#![forbid(unsafe_code)]
