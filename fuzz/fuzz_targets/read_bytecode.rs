//! Fuzz target: the MLIR bytecode reader must return `Ok` or `Err` on any input, never panic,
//! hang or allocate without bound; what it accepts must verify (`Ok` or `Err`) and print
//! without panicking.
//!
//! Run with `cargo fuzz run read_bytecode` from the repository root (or `scripts/fuzz.sh`).
//! Inputs without the bytecode magic get it prepended, so every input reaches the bytecode
//! reader instead of stopping at `read_program`'s text/bytecode dispatch.

#![no_main]

use libfuzzer_sys::fuzz_target;

const MAGIC: &[u8] = b"ML\xEFR";

fuzz_target!(|data: &[u8]| {
    let result = if data.starts_with(MAGIC) {
        oxla_frontend::read_program(data)
    } else {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(data);
        oxla_frontend::read_program(&bytes)
    };
    if let Ok(module) = result {
        let _ = oxla_ir::verifier::verify_module(&module);
        let _ = oxla_ir::print::print_module(&module);
    }
});
