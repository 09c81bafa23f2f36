//! Runs the `oxla` binary: `inspect` on a text program (JSON and text summaries) and on bad input.

use std::path::{Path, PathBuf};
use std::process::Command;

fn oxla() -> Command {
    Command::new(env!("CARGO_BIN_EXE_oxla"))
}

fn roundtrip_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/filetests/roundtrip")
        .join(name)
}

#[test]
fn inspect_json_summarizes_a_program() {
    let output = oxla()
        .args(["inspect", "--json"])
        .arg(roundtrip_file("jax_argmax.mlir"))
        .output()
        .expect("run oxla");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON output");
    assert_eq!(summary["producer"], serde_json::Value::Null);
    let functions = summary["functions"].as_array().expect("functions");
    assert_eq!(functions.len(), 2);
    assert_eq!(functions[0]["name"], "main");
    assert_eq!(functions[0]["visibility"], "public");
    assert_eq!(
        functions[0]["inputs"],
        serde_json::json!(["tensor<2x3xf32>"])
    );
    assert_eq!(
        functions[0]["results"],
        serde_json::json!(["tensor<2xi32>"])
    );
    assert_eq!(functions[1]["name"], "argmax");
    assert_eq!(functions[1]["visibility"], "private");
    // Counted by hand from the file: the reducer body holds 4 compares, 2 ors, 1 and,
    // 2 selects and a stablehlo.return.
    let counts = &summary["op_counts"];
    assert_eq!(counts["stablehlo.compare"], 4);
    assert_eq!(counts["stablehlo.or"], 2);
    assert_eq!(counts["stablehlo.and"], 1);
    assert_eq!(counts["stablehlo.select"], 2);
    assert_eq!(counts["stablehlo.return"], 1);
    assert_eq!(counts["stablehlo.reduce"], 1);
    assert_eq!(counts["stablehlo.iota"], 1);
    assert_eq!(counts["stablehlo.constant"], 2);
    assert_eq!(counts["func.call"], 1);
    assert_eq!(counts["func.return"], 2);
    assert!(counts.get("func.func").is_none());
    assert_eq!(summary["constants"], 2);
    // One f32 and one i32 scalar.
    assert_eq!(summary["constant_bytes"], 8);
}

#[test]
fn inspect_prints_text_then_summary() {
    let output = oxla()
        .arg("inspect")
        .arg(roundtrip_file("jax_add.mlir"))
        .output()
        .expect("run oxla");
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).expect("utf-8");
    assert!(text.starts_with("module @jit__lambda"), "{text}");
    assert!(
        text.contains("stablehlo.broadcast_in_dim %0, dims = []"),
        "{text}"
    );
    assert!(text.contains("// constants: 1 (4 bytes)"), "{text}");
    assert!(text.contains("//   stablehlo.add: 1"), "{text}");
    // The output (summary included, as comments) parses again.
    oxla_frontend::parse_text(&text).expect("inspect output parses");
}

#[test]
fn inspect_reports_errors_with_exit_code_1() {
    let dir = std::env::temp_dir().join(format!("oxla-inspect-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bad = dir.join("bad.mlir");
    std::fs::write(
        &bad,
        "module {\n  func.func @f() {\n    %0 = stablehlo.add %x, %x : tensor<f32>\n  }\n}\n",
    )
    .expect("write");
    let output = oxla().arg("inspect").arg(&bad).output().expect("run oxla");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("3:24"), "{stderr}");
    assert!(stderr.contains("undefined value %x"), "{stderr}");
    let missing = oxla()
        .arg("inspect")
        .arg(dir.join("missing.mlir"))
        .output()
        .expect("run oxla");
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read"));
    let _ = std::fs::remove_dir_all(&dir);
}
