//! Malformed bytecode: every truncation and many byte flips of real artifacts must give an
//! error (or, for a harmless flip, a module), never a panic, a hang or a huge allocation.

use oxla_frontend::{read_program, FrontendError};
use std::path::PathBuf;

fn corpus_file(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    std::fs::read(path).unwrap()
}

const SMALL_FILES: &[&str] = &[
    "compare_select.v0.9.0.mlirbc",
    "compare_select.v1.0.0.mlirbc",
    "while_loop.v1.17.0.mlirbc",
];

fn check_error(bytes: &[u8], err: &FrontendError) {
    match err {
        FrontendError::Bytecode { offset, detail } => {
            assert!(*offset <= bytes.len(), "offset {offset} past end: {detail}");
            assert!(!detail.is_empty());
        }
        FrontendError::Unsupported { detail } => assert!(!detail.is_empty()),
        FrontendError::Text { .. } => panic!("bytecode reported as text: {err}"),
    }
}

#[test]
fn every_truncation_is_an_error() {
    for name in SMALL_FILES {
        let bytes = corpus_file(name);
        assert!(read_program(&bytes).is_ok());
        for len in 4..bytes.len() {
            let cut = &bytes[..len];
            match read_program(cut) {
                Err(e) => check_error(cut, &e),
                Ok(_) => panic!("{name} truncated to {len} bytes read without error"),
            }
        }
    }
}

#[test]
fn flipped_bytes_never_panic() {
    for name in SMALL_FILES {
        let bytes = corpus_file(name);
        let mut n_errors = 0;
        for offset in 4..bytes.len() {
            for mask in [0x01u8, 0x80, 0xFF] {
                let mut mutated = bytes.clone();
                mutated[offset] ^= mask;
                if let Err(e) = read_program(&mutated) {
                    check_error(&mutated, &e);
                    n_errors += 1;
                }
            }
        }
        assert!(n_errors > 0, "{name}: no flip was detected");
    }
}

#[test]
fn garbage_and_oversized_lengths_are_errors() {
    let mut bytes = b"ML\xEFR".to_vec();
    // Version 6, a producer, then a string section claiming 2^56 bytes.
    bytes.extend_from_slice(&[0x0D, b'x', 0, 0x00, 0x80]);
    bytes.extend_from_slice(&[0xFF; 7]);
    let err = read_program(&bytes).unwrap_err();
    check_error(&bytes, &err);

    let mut garbage = b"ML\xEFR".to_vec();
    let mut state = 0x1234_5678_u32;
    for _ in 0..4096 {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        garbage.push((state >> 24) as u8);
    }
    if let Err(e) = read_program(&garbage) {
        check_error(&garbage, &e);
    }
}

#[test]
fn newer_bytecode_versions_are_unsupported() {
    let mut bytes = b"ML\xEFR".to_vec();
    bytes.extend_from_slice(&[0x0F, b'x', 0]); // version 7
    assert!(matches!(
        read_program(&bytes),
        Err(FrontendError::Unsupported { .. })
    ));
}
