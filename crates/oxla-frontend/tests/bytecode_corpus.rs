//! Reads every StableHLO portable artifact of a corpus and compares the functions, their
//! signatures and the op counts with jaxlib's own view of the same artifact.
//!
//! The corpus is `tests/corpus/` (made by `python/tools/gen_bytecode_corpus.py`), or the
//! directory named by `OXLA_BYTECODE_CORPUS`.

use oxla_ir::{Module, Region, Visibility};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn corpus_dir() -> PathBuf {
    match std::env::var_os("OXLA_BYTECODE_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus"),
    }
}

fn count_region(region: &Region, counts: &mut BTreeMap<String, u64>) {
    for block in &region.blocks {
        for op in &block.ops {
            *counts.entry(op.kind.name().to_string()).or_default() += 1;
            for inner in &op.regions {
                count_region(inner, counts);
            }
        }
    }
}

fn op_counts(module: &Module) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for func in &module.functions {
        *counts.entry("func.func".to_string()).or_default() += 1;
        count_region(&func.body, &mut counts);
    }
    counts
}

fn visibility_name(v: Visibility) -> &'static str {
    match v {
        Visibility::Public => "public",
        Visibility::Private => "private",
        Visibility::Nested => "nested",
    }
}

fn check_artifact(path: &std::path::Path) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let expected_path = path.with_extension("expected.json");
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(&expected_path).map_err(|e| format!("{expected_path:?}: {e}"))?,
    )
    .map_err(|e| e.to_string())?;
    let module = oxla_frontend::read_program(&bytes).map_err(|e| format!("read failed: {e}"))?;

    let expected_funcs = expected["functions"].as_array().ok_or("no functions")?;
    if expected_funcs.len() != module.functions.len() {
        return Err(format!(
            "{} functions, expected {}",
            module.functions.len(),
            expected_funcs.len()
        ));
    }
    for (func, want) in module.functions.iter().zip(expected_funcs) {
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .map(|s| s.as_str().unwrap_or_default().to_string())
                        .collect()
                })
                .unwrap_or_default()
        };
        let got_inputs: Vec<String> = func.ty.inputs.iter().map(|t| t.to_string()).collect();
        let got_results: Vec<String> = func.ty.results.iter().map(|t| t.to_string()).collect();
        let checks = [
            (want["name"].as_str() == Some(func.name.as_str()), "name"),
            (
                want["visibility"].as_str() == Some(visibility_name(func.visibility)),
                "visibility",
            ),
            (strings(&want["inputs"]) == got_inputs, "inputs"),
            (strings(&want["results"]) == got_results, "results"),
        ];
        for (ok, what) in checks {
            if !ok {
                return Err(format!(
                    "function {}: {what} differ: got {} {:?} ({:?} -> {:?}), expected {want}",
                    func.name, func.name, func.visibility, got_inputs, got_results
                ));
            }
        }
        // Every value used in the body has a type, and the entry block matches the signature.
        let entry = func.body.blocks.first().ok_or("function without body")?;
        let arg_types: Vec<String> = entry
            .arguments
            .iter()
            .map(|&v| func.value_type(v).to_string())
            .collect();
        if arg_types != got_inputs {
            return Err(format!(
                "{}: entry block arguments {arg_types:?}",
                func.name
            ));
        }
    }
    let want_counts: BTreeMap<String, u64> = expected["op_counts"]
        .as_object()
        .ok_or("no op counts")?
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
        .collect();
    let got_counts = op_counts(&module);
    if want_counts != got_counts {
        return Err(format!(
            "op counts differ:\n got      {got_counts:?}\n expected {want_counts:?}"
        ));
    }
    Ok(())
}

#[test]
fn corpus_artifacts_match_jaxlib() {
    let dir = corpus_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read corpus {dir:?}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "mlirbc"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 10,
        "corpus {dir:?} has only {} artifacts",
        paths.len()
    );
    let failures: Vec<String> = paths
        .iter()
        .filter_map(|p| {
            check_artifact(p)
                .err()
                .map(|e| format!("{}: {e}", p.display()))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_corpus_version_reads_to_the_same_program() {
    // One program serialized for 0.9.0 and for 1.17.0 reads back to the same module.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let old = std::fs::read(dir.join("dot_general.v0.9.0.mlirbc")).unwrap();
    let new = std::fs::read(dir.join("dot_general.v1.17.0.mlirbc")).unwrap();
    let old = oxla_frontend::read_program(&old).unwrap();
    let new = oxla_frontend::read_program(&new).unwrap();
    assert_eq!(old, new);
}
