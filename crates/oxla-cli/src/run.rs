//! `oxla run`: loads a program artifact and calls one of its procedures.

use anyhow::{bail, Context, Result};
use oxla_runtime::{format_tensor, npy, parse_tensor_literal, Module, Tensor};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What `oxla run` was asked to do.
pub struct RunArgs {
    pub file: PathBuf,
    pub function: Option<String>,
    pub inputs: Vec<String>,
    pub outputs: Vec<PathBuf>,
    pub output_dir: Option<PathBuf>,
    pub repeat: usize,
    pub time: bool,
    pub print_globals: bool,
}

/// Reads one `--input`: a literal (`3x4xf32=1`) or a `.npy` file.
fn read_input(spec: &str) -> Result<Tensor> {
    if spec.contains('=') {
        return Ok(parse_tensor_literal(spec)?);
    }
    let bytes = std::fs::read(spec).with_context(|| format!("reading input {spec}"))?;
    npy::from_npy(&bytes).with_context(|| format!("reading input {spec}"))
}

fn describe(module: &Module) -> String {
    let mut out = format!("program {}", module.metadata().name);
    if !module.metadata().producer.is_empty() {
        out.push_str(&format!(" (from {})", module.metadata().producer));
    }
    out.push_str("\nprocedures:\n");
    for f in module.functions() {
        let args: Vec<String> = f
            .inputs
            .iter()
            .map(|v| format!("{}: {}", v.name, v.ty))
            .collect();
        let outs: Vec<String> = f
            .outputs
            .iter()
            .map(|v| format!("{}: {}", v.name, v.ty))
            .collect();
        out.push_str(&format!(
            "  {}({}) -> ({})\n",
            f.name,
            args.join(", "),
            outs.join(", ")
        ));
    }
    out.push_str("globals:\n");
    for g in module.globals() {
        out.push_str(&format!(
            "  {}: {}{}{}\n",
            g.value.name,
            g.value.ty,
            if g.mutable { "" } else { " (immutable)" },
            if g.data.is_some() {
                ""
            } else {
                " (uninitialized)"
            }
        ));
    }
    out
}

/// A file name made from an output's tree path (`out['x']` -> `out_x.npy`).
fn file_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let trimmed = out.trim_matches('_');
    format!("{}.npy", if trimmed.is_empty() { "out" } else { trimmed })
}

fn save(path: &Path, tensor: &Tensor) -> Result<()> {
    let bytes = npy::to_npy(tensor)?;
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

pub fn run(args: RunArgs) -> Result<()> {
    let mut module =
        Module::load(&args.file).with_context(|| format!("loading {}", args.file.display()))?;
    let Some(function) = args.function.clone() else {
        print!("{}", describe(&module));
        return Ok(());
    };
    let info = module.function(&function)?.clone();
    let inputs = args
        .inputs
        .iter()
        .map(|spec| read_input(spec))
        .collect::<Result<Vec<_>>>()?;
    if !args.outputs.is_empty() && args.outputs.len() != info.outputs.len() {
        bail!(
            "`{function}` has {} output(s), {} --output path(s) were given",
            info.outputs.len(),
            args.outputs.len()
        );
    }
    let mut results = Vec::new();
    let mut times_ms = Vec::new();
    for _ in 0..args.repeat.max(1) {
        let start = Instant::now();
        results = module.call(&function, &inputs)?;
        times_ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    if args.time {
        eprintln!("{}", timing_summary(&times_ms));
    }
    for (idx, (value, tensor)) in info.outputs.iter().zip(&results).enumerate() {
        if let Some(path) = args.outputs.get(idx) {
            save(path, tensor)?;
        } else if let Some(dir) = &args.output_dir {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            save(&dir.join(file_name(&value.name)), tensor)?;
        } else {
            println!("{}: {}", value.name, tensor.ty);
            println!("{}", format_tensor(tensor));
        }
    }
    if args.print_globals {
        let names: Vec<String> = module
            .globals()
            .iter()
            .map(|g| g.value.name.clone())
            .collect();
        for name in names {
            match module.global(&name) {
                Ok(value) => {
                    println!("global {name}: {}", value.ty);
                    println!("{}", format_tensor(&value));
                }
                Err(err) => println!("global {name}: {err}"),
            }
        }
    }
    Ok(())
}

/// `N call(s): first F ms, median M ms, mean A ms` for the per-call wall times.
fn timing_summary(times_ms: &[f64]) -> String {
    let mut sorted = times_ms.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
    let mean = sorted.iter().sum::<f64>() / sorted.len().max(1) as f64;
    format!(
        "{} call(s): first {:.3} ms, median {median:.3} ms, mean {mean:.3} ms",
        times_ms.len(),
        times_ms.first().copied().unwrap_or(0.0)
    )
}

#[cfg(test)]
mod tests {
    use super::{file_name, timing_summary};

    #[test]
    fn timing_summary_reports_first_median_and_mean() {
        assert_eq!(
            timing_summary(&[5.0, 1.0, 3.0]),
            "3 call(s): first 5.000 ms, median 3.000 ms, mean 3.000 ms"
        );
    }

    #[test]
    fn output_file_names_come_from_tree_paths() {
        assert_eq!(file_name("out"), "out.npy");
        assert_eq!(file_name("out['x']"), "out_x.npy");
        assert_eq!(file_name("out[0].w"), "out_0_.w.npy");
        assert_eq!(file_name("[]"), "out.npy");
    }
}
