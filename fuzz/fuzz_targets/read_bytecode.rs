//! Fuzz target: the MLIR bytecode reader must return `Ok` or `Err` on any input, never panic.
//!
//! Run with `cargo fuzz run read_bytecode fuzz/corpus/read_bytecode` from the `fuzz` folder's
//! parent; inputs without the bytecode magic get it prepended so the reader is exercised.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.starts_with(b"ML\xEFR") {
        let _ = oxla_frontend::read_program(data);
    } else {
        let mut bytes = b"ML\xEFR".to_vec();
        bytes.extend_from_slice(data);
        let _ = oxla_frontend::read_program(&bytes);
    }
});
