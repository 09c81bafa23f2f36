//! Runs `oxla compile` and `oxla flags`: a failing compile writes a crash reproducer that
//! `oxla compile` replays with the same error; a good program prints `ok`.

use std::path::PathBuf;
use std::process::Command;

fn oxla() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxla"));
    cmd.env_remove("OXLA_FLAGS").env_remove("OXLA_ARTIFACT_DIR");
    cmd
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oxla-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const INFEED: &str = "module @jit_feed {
  func.func public @main(%t: !stablehlo.token) -> tensor<2xf32> {
    %0:2 = \"stablehlo.infeed\"(%t) {infeed_config = \"\"} : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
    return %0#0 : tensor<2xf32>
  }
}
";

const ADD: &str = "func.func public @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %a, %a : tensor<2xf32>
  return %0 : tensor<2xf32>
}
";

#[test]
fn failing_compile_writes_a_reproducer_that_replays() {
    let dir = scratch("repro");
    let program = dir.join("feed.mlir");
    std::fs::write(&program, INFEED).unwrap();
    let repro_dir = dir.join("repros");
    let first = oxla()
        .arg("compile")
        .arg(&program)
        .env(
            "OXLA_FLAGS",
            format!("--crash_reproducer_dir={}", repro_dir.display()),
        )
        .output()
        .unwrap();
    assert_eq!(first.status.code(), Some(1));
    let first_err = String::from_utf8(first.stderr).unwrap();
    assert!(first_err.contains("stablehlo.infeed"), "{first_err}");
    let repros: Vec<PathBuf> = std::fs::read_dir(&repro_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(repros.len(), 1);
    let repro = &repros[0];
    assert_eq!(repro.extension().unwrap(), "oxrepro");
    assert!(
        first_err.contains(&repro.display().to_string()),
        "{first_err}"
    );

    let replay = oxla().arg("compile").arg(repro).output().unwrap();
    assert_eq!(replay.status.code(), Some(1));
    let replay_err = String::from_utf8(replay.stderr).unwrap();
    // The same error, without the note about where the reproducer went.
    let (without_note, _) = first_err.split_once(" [crash reproducer").unwrap();
    assert_eq!(replay_err.trim_end(), without_note.trim_end());
    assert!(
        replay_err.starts_with("error: unimplemented: "),
        "{replay_err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn malformed_text_is_reported_and_a_good_program_is_ok() {
    let dir = scratch("text");
    let bad = dir.join("bad.mlir");
    std::fs::write(&bad, "func.func @main( {").unwrap();
    let out = oxla().arg("compile").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: invalid argument"));

    let good = dir.join("add.mlir");
    std::fs::write(&good, ADD).unwrap();
    let dumps = dir.join("dumps");
    let out = oxla()
        .arg("compile")
        .arg(&good)
        .arg("--flags")
        .arg(format!("--dump_dir={}", dumps.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .starts_with("ok: main "));
    assert_eq!(std::fs::read_dir(&dumps).unwrap().count(), 1);

    let out = oxla()
        .arg("compile")
        .arg(&good)
        .env("OXLA_FLAGS", "--no_such_flag")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("no_such_flag") && err.contains("verify_each_pass"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn flags_lists_every_flag() {
    let out = oxla().arg("flags").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for flag in [
        "--num_devices=<int>",
        "--num_threads=<int>",
        "--opt_level=<int>",
        "--dump_dir=<path>",
        "--crash_reproducer_dir=<path>",
        "--trace_path=<path>",
        "--verify_each_pass=<bool>",
    ] {
        assert!(text.contains(flag), "{flag} missing from:\n{text}");
    }
}
