//! Fuzz target: the StableHLO text parser must return `Ok` or `Err` on any input, never panic,
//! hang or allocate without bound; whatever it accepts must verify (`Ok` or `Err`) without
//! panicking, and print to text that parses again and prints identically.
//!
//! Run with `cargo fuzz run parse_text` from the repository root (or `scripts/fuzz.sh`).
//! The input bytes are read as UTF-8, invalid sequences replaced by U+FFFD.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(module) = oxla_frontend::parse_text(&text) else {
        return;
    };
    let _ = oxla_ir::verifier::verify_module(&module);
    let printed = oxla_ir::print::print_module(&module);
    let reparsed = oxla_frontend::parse_text(&printed)
        .unwrap_or_else(|e| panic!("printed text does not parse: {e}\n{printed}"));
    assert_eq!(printed, oxla_ir::print::print_module(&reparsed), "print is not stable");
});
