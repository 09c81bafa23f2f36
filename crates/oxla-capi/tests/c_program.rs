//! Compiles `tests/c/run_trivial.c` against `include/oxla.h` and the built `liboxla.so`
//! with the system C compiler, then runs it on the trivial artifact.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory where cargo put `liboxla.so` (the profile directory or its `deps/`).
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps directory").to_path_buf();
    let profile = deps.parent().expect("profile directory").to_path_buf();
    [deps, profile]
        .into_iter()
        .find(|dir| dir.join("liboxla.so").exists())
        .expect("liboxla.so next to the test executable")
}

fn compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

#[test]
fn c_program_loads_and_calls_an_artifact() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib_dir = library_dir();
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let exe = out_dir.join("run_trivial");
    let status = Command::new(compiler())
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(crate_dir.join("tests/c/run_trivial.c"))
        .arg("-I")
        .arg(crate_dir.join("include"))
        .arg("-L")
        .arg(&lib_dir)
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-loxla")
        .status()
        .expect("the C compiler (cc, or $CC) runs");
    assert!(status.success(), "compiling the C test failed");
    let artifact = crate_dir.join("../oxla-runtime/tests/data/trivial.oxla");
    let output = Command::new(&exe).arg(&artifact).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("c runtime test passed"), "{stdout}");
}
