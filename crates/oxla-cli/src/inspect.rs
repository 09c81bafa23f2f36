//! `oxla inspect`: prints a program as StableHLO text plus a summary (or the summary as JSON).

use anyhow::{Context, Result};
use oxla_ir::print::{print_module_with, PrintOptions};
use oxla_ir::{Attribute, Module, OpKind, Visibility};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// What `inspect` reports about a module.
struct Summary {
    producer: Option<String>,
    functions: Vec<FunctionSummary>,
    op_counts: BTreeMap<String, u64>,
    constants: u64,
    constant_bytes: u64,
}

struct FunctionSummary {
    name: String,
    visibility: &'static str,
    inputs: Vec<String>,
    results: Vec<String>,
}

/// Reads `file`, then prints the text and summary, or the JSON summary.
pub fn run(file: &Path, json: bool, locations: bool) -> Result<()> {
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let module = oxla_frontend::read_program(&bytes)
        .with_context(|| format!("cannot read a program from {}", file.display()))?;
    let summary = summarize(&module);
    let text = if json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&summary_json(&summary))?
        )
    } else {
        print_module_with(&module, PrintOptions { locations }) + &summary_text(&summary)
    };
    // A reader that stops early (`| head`) is not an error.
    match std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes()) {
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

fn summarize(module: &Module) -> Summary {
    let producer = module
        .attr("oxla.producer")
        .and_then(Attribute::as_str)
        .map(str::to_string);
    let mut op_counts = BTreeMap::new();
    let mut constants = 0u64;
    let mut constant_bytes = 0u64;
    let mut functions = Vec::new();
    for f in &module.functions {
        functions.push(FunctionSummary {
            name: f.name.clone(),
            visibility: match f.visibility {
                Visibility::Public => "public",
                Visibility::Private => "private",
                Visibility::Nested => "nested",
            },
            inputs: f.ty.inputs.iter().map(|t| t.to_string()).collect(),
            results: f.ty.results.iter().map(|t| t.to_string()).collect(),
        });
        // Walk every region with a worklist, so deep nesting cannot overflow the stack.
        let mut stack: Vec<&oxla_ir::Region> = vec![&f.body];
        while let Some(region) = stack.pop() {
            for block in &region.blocks {
                for op in &block.ops {
                    *op_counts.entry(op.kind.name().to_string()).or_insert(0) += 1;
                    if op.kind == OpKind::Constant {
                        constants += 1;
                        if let Some(Attribute::Elements(e)) = op.attr("value") {
                            constant_bytes += e.ty.byte_size().unwrap_or(0) as u64;
                        }
                    }
                    stack.extend(op.regions.iter());
                }
            }
        }
    }
    Summary {
        producer,
        functions,
        op_counts,
        constants,
        constant_bytes,
    }
}

fn summary_json(s: &Summary) -> Value {
    json!({
        "producer": s.producer,
        "functions": s.functions.iter().map(|f| json!({
            "name": f.name,
            "visibility": f.visibility,
            "inputs": f.inputs,
            "results": f.results,
        })).collect::<Vec<_>>(),
        "op_counts": s.op_counts,
        "constants": s.constants,
        "constant_bytes": s.constant_bytes,
    })
}

/// The summary as `//` comment lines, so the whole output still parses as MLIR.
fn summary_text(s: &Summary) -> String {
    let mut out = String::from("\n// ---- summary ----\n");
    let _ = writeln!(
        out,
        "// producer: {}",
        s.producer.as_deref().unwrap_or("unknown")
    );
    let _ = writeln!(out, "// functions:");
    for f in &s.functions {
        let _ = writeln!(
            out,
            "//   {} @{}({}) -> ({})",
            f.visibility,
            f.name,
            f.inputs.join(", "),
            f.results.join(", ")
        );
    }
    let total: u64 = s.op_counts.values().sum();
    let _ = writeln!(out, "// ops: {total}");
    for (name, count) in &s.op_counts {
        let _ = writeln!(out, "//   {name}: {count}");
    }
    let _ = writeln!(
        out,
        "// constants: {} ({} bytes)",
        s.constants, s.constant_bytes
    );
    out
}
