//! Runs the IR verifier over real programs: every portable artifact of `tests/corpus/` (read
//! with `read_program`) and every `tests/filetests/roundtrip/*.mlir` file (parsed with
//! `parse_text`). A failure names the file and lists the verifier's errors.

use oxla_frontend::{parse_text, read_program};
use oxla_ir::verifier::verify_module;
use std::path::{Path, PathBuf};

fn files_with_extension(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    files.sort();
    files
}

#[test]
fn bytecode_corpus_verifies() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let files = files_with_extension(&dir, "mlirbc");
    assert!(!files.is_empty(), "no artifacts in {}", dir.display());
    let mut failures = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path).expect("read artifact");
        let module =
            read_program(&bytes).unwrap_or_else(|e| panic!("{}: read failed: {e}", path.display()));
        if let Err(errors) = verify_module(&module) {
            failures.push(format!("{}:\n{}", path.display(), errors.summary(10)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn roundtrip_filetests_verify() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/filetests/roundtrip");
    let files = files_with_extension(&dir, "mlir");
    assert!(!files.is_empty(), "no filetests in {}", dir.display());
    let mut failures = Vec::new();
    let mut n_parsed = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read filetest");
        // Files the parser does not accept yet are the text parser tests' concern.
        let Ok(module) = parse_text(&text) else {
            continue;
        };
        n_parsed += 1;
        if let Err(errors) = verify_module(&module) {
            failures.push(format!("{}:\n{}", path.display(), errors.summary(10)));
        }
    }
    eprintln!("verified {n_parsed} of {} filetests", files.len());
    assert!(n_parsed > 0, "no filetest parsed");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn corrupted_real_program_fails_verification() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/filetests/roundtrip/jax_mm.mlir");
    let text = std::fs::read_to_string(path).expect("read filetest");
    assert!(verify_module(&parse_text(&text).expect("parse")).is_ok());
    // Contract over dimension 0 of the lhs (extent 2) against the rhs's extent 3.
    let corrupted = text.replace(
        "contracting_dims = [1] x [0]",
        "contracting_dims = [0] x [0]",
    );
    assert_ne!(corrupted, text);
    let module = parse_text(&corrupted).expect("parse the corrupted program");
    let errors = verify_module(&module).expect_err("the corrupted program must fail");
    let message = errors.to_string();
    assert!(
        message.starts_with("stablehlo.dot_general at "),
        "{message}"
    );
    assert!(
        message
            .contains("contracting dimension 0 of lhs has extent 2 but dimension 0 of rhs has 3"),
        "{message}"
    );
}
