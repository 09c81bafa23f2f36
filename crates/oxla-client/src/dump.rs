//! Compile diagnostics: per-phase timing, dumps (the `dump_dir` flag) and crash reproducers
//! (the `crash_reproducer_dir` flag).
//!
//! Each compile with a dump directory gets its own folder `<module>-<n>-<hash>/` (the module's
//! `sym_name`, e.g. `jit_f`, a per-process counter and 8 hex digits of the program's hash):
//! - `input.mlirbc` or `input.mlir`: the program as received;
//! - `ir.010-read.mlir`: the IR after each pass group, numbered in steps of 10 so later passes
//!   slot in between (today reading is the only group);
//! - `plan.mlir`: what will run (today the printed module the evaluator runs);
//! - `options.txt`: the compile options and flags in readable form;
//! - `timings.json`: the time of each phase, and whether the compile succeeded;
//! - `error.txt`: the error, for a failed compile.
//!
//! A crash reproducer is one file, `<module>-<hash>.oxrepro`: a text header of `key: value`
//! lines ending with an empty line, then the program bytes, then the serialized compile options
//! (see [`Reproducer`]). Writing diagnostics never fails a compile: problems are logged.

use crate::error::{ClientError, Result};
use crate::executable::CompileOptions;
use crate::flags::{FlagOverrides, Flags};
use crate::trace::Tracer;
use oxla_ir::Module;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// First line of a reproducer file.
pub const REPRO_MAGIC: &str = "OXLA-REPRO 1";
/// File extension of reproducers.
pub const REPRO_EXTENSION: &str = "oxrepro";

const MLIR_BYTECODE_MAGIC: &[u8] = b"ML\xEFR";

/// 64-bit FNV-1a of `bytes`.
fn hash64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A name safe in any filesystem: ASCII letters, digits, `_`, `-` and `.`, at most 80 chars.
pub fn sanitize_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    if clean.is_empty() || clean.starts_with('.') {
        format!("program{clean}")
    } else {
        clean
    }
}

/// Whether `program` is MLIR bytecode (else it is text).
fn program_extension(program: &[u8]) -> &'static str {
    if program.starts_with(MLIR_BYTECODE_MAGIC) {
        "mlirbc"
    } else {
        "mlir"
    }
}

fn describe_options(options: &CompileOptions, flags: &Flags) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "num_replicas: {}", options.num_replicas);
    let _ = writeln!(out, "num_partitions: {}", options.num_partitions);
    if let Some(entry) = &options.entry {
        let _ = writeln!(out, "entry: {entry}");
    }
    let _ = writeln!(
        out,
        "device_assignment: {}",
        assignment_text(&options.device_assignment)
    );
    let _ = writeln!(
        out,
        "compile_options_proto_bytes: {}",
        options.serialized.len()
    );
    let overrides: Vec<String> = options
        .flags
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    let _ = writeln!(out, "per_compile_overrides: {}", overrides.join(" "));
    let _ = writeln!(out, "flags: {}", flags.to_flag_text());
    let _ = writeln!(
        out,
        "opt_level: {} (0: op by op; 1 and up: elementwise fusion)",
        flags.opt_level
    );
    let _ = writeln!(out, "verify_each_pass: {}", flags.verify_each_pass);
    out
}

fn assignment_text(assignment: &Option<Vec<Vec<i32>>>) -> String {
    match assignment {
        None => "default".to_string(),
        Some(rows) => rows
            .iter()
            .map(|row| {
                row.iter()
                    .map(|id| id.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect::<Vec<_>>()
            .join(";"),
    }
}

fn parse_assignment(text: &str) -> Result<Option<Vec<Vec<i32>>>> {
    if text == "default" {
        return Ok(None);
    }
    text.split(';')
        .map(|row| {
            row.split(',')
                .map(|id| {
                    id.trim().parse::<i32>().map_err(|_| {
                        ClientError::InvalidArgument(format!(
                            "reproducer device_assignment {text:?} is malformed"
                        ))
                    })
                })
                .collect()
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

fn write_file(path: &Path, bytes: &[u8]) {
    if let Err(err) = std::fs::write(path, bytes) {
        tracing::warn!("cannot write {}: {err}", path.display());
    }
}

/// One compile's diagnostics: phase timings, trace events, dumps and the reproducer.
pub(crate) struct CompileRun<'a> {
    program: &'a [u8],
    options: &'a CompileOptions,
    flags: &'a Flags,
    tracer: Option<&'a Tracer>,
    start: Instant,
    module_name: Option<String>,
    phases: Vec<(String, Duration)>,
    dump: Option<PathBuf>,
    next_step: u32,
}

impl<'a> CompileRun<'a> {
    pub(crate) fn new(
        program: &'a [u8],
        options: &'a CompileOptions,
        flags: &'a Flags,
        tracer: Option<&'a Tracer>,
    ) -> CompileRun<'a> {
        CompileRun {
            program,
            options,
            flags,
            tracer,
            start: Instant::now(),
            module_name: None,
            phases: Vec::new(),
            dump: None,
            next_step: 10,
        }
    }

    /// The flags of this compile.
    pub(crate) fn flags(&self) -> &Flags {
        self.flags
    }

    /// Runs phase `name`, timing and tracing it.
    pub(crate) fn phase<T>(&mut self, name: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let start = Instant::now();
        let result = f();
        let elapsed = start.elapsed();
        tracing::debug!(
            phase = name,
            module = self.module_name.as_deref().unwrap_or("?"),
            us = elapsed.as_micros() as u64,
            ok = result.is_ok(),
            "compile phase"
        );
        if let Some(tracer) = self.tracer {
            let module = self.module_name.clone().unwrap_or_default();
            tracer.record("compile", name, start, vec![("module", module)]);
        }
        self.phases.push((name.to_string(), elapsed));
        result
    }

    /// Names the compile after the module (once it is read) and writes the input dump.
    pub(crate) fn set_module_name(&mut self, name: &str) {
        self.module_name = Some(name.to_string());
        self.open_dump();
    }

    fn open_dump(&mut self) {
        if self.dump.is_some() {
            return;
        }
        let Some(root) = &self.flags.dump_dir else {
            return;
        };
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let seq = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = sanitize_name(self.module_name.as_deref().unwrap_or("program"));
        let dir = root.join(format!(
            "{name}-{seq:04}-{:08x}",
            hash64(self.program) as u32
        ));
        if let Err(err) = std::fs::create_dir_all(&dir) {
            tracing::warn!("cannot create dump directory {}: {err}", dir.display());
            return;
        }
        tracing::debug!("dumping compile to {}", dir.display());
        let input = dir.join(format!("input.{}", program_extension(self.program)));
        write_file(&input, self.program);
        self.dump = Some(dir);
    }

    /// Dumps the IR after pass group `pass`.
    pub(crate) fn ir_after(&mut self, pass: &str, module: &Module) {
        let step = self.next_step;
        self.next_step += 10;
        if let Some(dir) = &self.dump {
            let text = oxla_ir::print::print_module(module);
            write_file(
                &dir.join(format!("ir.{step:03}-{pass}.mlir")),
                text.as_bytes(),
            );
        }
    }

    /// Dumps the final plan.
    pub(crate) fn plan(&mut self, module: &Module) {
        if let Some(dir) = &self.dump {
            let text = oxla_ir::print::print_module(module);
            write_file(&dir.join("plan.mlir"), text.as_bytes());
        }
    }

    /// Ends the compile: writes options and timings, and on failure a reproducer whose path the
    /// returned error names.
    pub(crate) fn finish<T>(mut self, result: Result<T>) -> Result<T> {
        self.open_dump();
        let total = self.start.elapsed();
        if let Some(dir) = &self.dump {
            write_file(
                &dir.join("options.txt"),
                describe_options(self.options, self.flags).as_bytes(),
            );
            let phases: Vec<serde_json::Value> = self
                .phases
                .iter()
                .map(|(name, d)| serde_json::json!({"name": name, "us": d.as_secs_f64() * 1e6}))
                .collect();
            let timings = serde_json::json!({
                "module": self.module_name,
                "ok": result.is_ok(),
                "phases": phases,
                "total_us": total.as_secs_f64() * 1e6,
            });
            let text = serde_json::to_string_pretty(&timings).unwrap_or_default();
            write_file(&dir.join("timings.json"), text.as_bytes());
            if let Err(err) = &result {
                write_file(&dir.join("error.txt"), format!("{err}\n").as_bytes());
            }
        }
        if let Some(tracer) = self.tracer {
            tracer.flush_quietly();
        }
        let err = match result {
            Ok(value) => return Ok(value),
            Err(err) => err,
        };
        tracing::debug!("compile failed: {err}");
        let Some(dir) = self.flags.crash_reproducer_dir.clone() else {
            return Err(err);
        };
        let reproducer = Reproducer {
            program: self.program.to_vec(),
            options: self.options.clone(),
            flags: FlagOverrides::from_text(&self.flags.semantic_flag_text(), "reproducer")
                .unwrap_or_default(),
            error: err.to_string(),
        };
        let name = sanitize_name(self.module_name.as_deref().unwrap_or("program"));
        let path = dir.join(format!(
            "{name}-{:08x}.{REPRO_EXTENSION}",
            hash64(self.program) as u32
        ));
        match std::fs::create_dir_all(&dir).and_then(|()| reproducer.write(&path)) {
            Ok(()) => Err(append_message(
                err,
                &format!(
                    " [crash reproducer: {}; replay with `oxla compile {}`]",
                    path.display(),
                    path.display()
                ),
            )),
            Err(io) => Err(append_message(
                err,
                &format!(" [cannot write crash reproducer {}: {io}]", path.display()),
            )),
        }
    }
}

/// Undoes the escaping of `\\` and newlines in a header line.
fn unescape_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, chars.clone().next()) {
            ('\\', Some('n')) => {
                out.push('\n');
                chars.next();
            }
            ('\\', Some('\\')) => {
                out.push('\\');
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// `err` with `suffix` appended to its message, keeping its code.
fn append_message(err: ClientError, suffix: &str) -> ClientError {
    let message = format!("{}{suffix}", err.message());
    match err {
        ClientError::InvalidArgument(_) => ClientError::InvalidArgument(message),
        ClientError::NotFound(_) => ClientError::NotFound(message),
        ClientError::Unimplemented(_) => ClientError::Unimplemented(message),
        ClientError::FailedPrecondition(_) => ClientError::FailedPrecondition(message),
        ClientError::ResourceExhausted(_) => ClientError::ResourceExhausted(message),
        ClientError::Internal(_) => ClientError::Internal(message),
    }
}

/// A failed compile, saved to replay it: program, options, the flags that change what a compile
/// does, and the error it gave.
///
/// File format (`.oxrepro`), header lines in this order:
/// ```text
/// OXLA-REPRO 1
/// oxla_version: 0.1.0
/// error: <the error, newlines as \n>
/// flags: --opt_level=2 --verify_each_pass=false
/// num_replicas: 1
/// num_partitions: 1
/// device_assignment: default | 0,1;2,3
/// program_format: mlirbc | mlir
/// program_bytes: N
/// compile_options_bytes: M
///
/// <N bytes of program><M bytes of serialized xla.CompileOptionsProto>
/// ```
/// Lines starting with `#` are comments; unknown keys are ignored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reproducer {
    /// The program bytes as received.
    pub program: Vec<u8>,
    /// The compile options (the serialized proto included).
    pub options: CompileOptions,
    /// The flags the compile ran with.
    pub flags: FlagOverrides,
    /// The error the compile gave.
    pub error: String,
}

impl Reproducer {
    /// True when `bytes` start like a reproducer file.
    pub fn is_reproducer(bytes: &[u8]) -> bool {
        bytes.starts_with(REPRO_MAGIC.as_bytes())
    }

    /// The file contents.
    pub fn to_bytes(&self) -> Vec<u8> {
        let flags: Vec<String> = self
            .flags
            .iter()
            .map(|(name, value)| format!("--{name}={value}"))
            .collect();
        let mut header = String::new();
        let _ = writeln!(header, "{REPRO_MAGIC}");
        let _ = writeln!(
            header,
            "# oxla crash reproducer; replay: oxla compile THIS_FILE"
        );
        let _ = writeln!(header, "oxla_version: {}", env!("CARGO_PKG_VERSION"));
        let _ = writeln!(
            header,
            "error: {}",
            self.error.replace('\\', "\\\\").replace('\n', "\\n")
        );
        let _ = writeln!(header, "flags: {}", flags.join(" "));
        let _ = writeln!(header, "num_replicas: {}", self.options.num_replicas);
        let _ = writeln!(header, "num_partitions: {}", self.options.num_partitions);
        if let Some(entry) = &self.options.entry {
            let _ = writeln!(header, "entry: {entry}");
        }
        let _ = writeln!(
            header,
            "device_assignment: {}",
            assignment_text(&self.options.device_assignment)
        );
        let _ = writeln!(
            header,
            "program_format: {}",
            program_extension(&self.program)
        );
        let _ = writeln!(header, "program_bytes: {}", self.program.len());
        let _ = writeln!(
            header,
            "compile_options_bytes: {}",
            self.options.serialized.len()
        );
        header.push('\n');
        let mut out = header.into_bytes();
        out.extend_from_slice(&self.program);
        out.extend_from_slice(&self.options.serialized);
        out
    }

    /// Writes the file.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.to_bytes())
    }

    /// Reads a reproducer file's contents.
    pub fn parse(bytes: &[u8]) -> Result<Reproducer> {
        let bad = |why: &str| ClientError::InvalidArgument(format!("bad reproducer file: {why}"));
        if !Reproducer::is_reproducer(bytes) {
            return Err(bad("missing the OXLA-REPRO header"));
        }
        let header_end = bytes
            .windows(2)
            .position(|w| w == b"\n\n")
            .ok_or_else(|| bad("the header does not end"))?;
        let header = std::str::from_utf8(&bytes[..header_end])
            .map_err(|_| bad("the header is not UTF-8"))?;
        let body = &bytes[header_end + 2..];
        let mut fields = std::collections::HashMap::new();
        for line in header.lines().skip(1) {
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let (key, value) = line
                .split_once(':')
                .ok_or_else(|| bad(&format!("line {line:?} is not `key: value`")))?;
            fields.insert(key.trim(), value.trim());
        }
        let field = |key: &str| {
            fields
                .get(key)
                .copied()
                .ok_or_else(|| bad(&format!("no {key} line")))
        };
        let number = |key: &str| -> Result<usize> {
            field(key)?
                .parse()
                .map_err(|_| bad(&format!("{key} is not a number")))
        };
        let program_len = number("program_bytes")?;
        let options_len = number("compile_options_bytes")?;
        if program_len.checked_add(options_len) != Some(body.len()) {
            return Err(bad(&format!(
                "the body has {} bytes, the header promises {program_len} + {options_len}",
                body.len()
            )));
        }
        let error = unescape_line(field("error").unwrap_or(""));
        Ok(Reproducer {
            program: body[..program_len].to_vec(),
            options: CompileOptions {
                num_replicas: number("num_replicas")?,
                num_partitions: number("num_partitions")?,
                device_assignment: parse_assignment(field("device_assignment")?)?,
                serialized: body[program_len..].to_vec(),
                entry: fields.get("entry").map(|name| name.to_string()),
                ..CompileOptions::default()
            },
            flags: FlagOverrides::from_text(field("flags").unwrap_or(""), "reproducer flags")?,
            error,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executable::Executable;
    use crate::flags::FlagValue;
    use crate::ErrorCode;

    const ADD: &str = "module @jit_add {
  func.func public @main(%a: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.add %a, %a : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
";

    const INFEED: &str = "module @jit_feed {
  func.func public @main(%t: !stablehlo.token) -> tensor<2xf32> {
    %0:2 = \"stablehlo.infeed\"(%t) {infeed_config = \"\"} : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
    return %0#0 : tensor<2xf32>
  }
}
";

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("oxla-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn only_entry(dir: &Path) -> PathBuf {
        let entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(entries.len(), 1, "{entries:?}");
        entries[0].clone()
    }

    #[test]
    fn dump_dir_gets_input_ir_plan_options_and_timings() {
        let dir = scratch("dump");
        let flags = Flags {
            dump_dir: Some(dir.clone()),
            opt_level: 1,
            ..Flags::default()
        };
        Executable::compile_with(ADD.as_bytes(), CompileOptions::default(), &flags, None).unwrap();
        let compile_dir = only_entry(&dir);
        let name = compile_dir.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("jit_add-"), "{name}");
        assert_eq!(
            std::fs::read(compile_dir.join("input.mlir")).unwrap(),
            ADD.as_bytes()
        );
        let ir = std::fs::read_to_string(compile_dir.join("ir.010-read.mlir")).unwrap();
        assert!(ir.contains("stablehlo.add"), "{ir}");
        let plan = std::fs::read_to_string(compile_dir.join("plan.mlir")).unwrap();
        assert!(plan.contains("stablehlo.add"), "{plan}");
        let options = std::fs::read_to_string(compile_dir.join("options.txt")).unwrap();
        assert!(options.contains("opt_level: 1"), "{options}");
        let timings: serde_json::Value =
            serde_json::from_slice(&std::fs::read(compile_dir.join("timings.json")).unwrap())
                .unwrap();
        assert_eq!(timings["module"], "jit_add");
        assert_eq!(timings["ok"], true);
        let phases: Vec<&str> = timings["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            phases,
            [
                "read",
                "verify",
                "lower",
                "check",
                "inline",
                "fold",
                "dead",
                "divisions"
            ]
        );
        // Nothing was inlined, so there is no IR after the pass.
        assert!(!compile_dir.join("ir.020-inline.mlir").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dump_dir_gets_the_ir_after_inlining() {
        const CALLED_ADD: &str = "module @jit_call {
  func.func public @main(%a: tensor<2xf32>) -> tensor<2xf32> {
    %0 = func.call @twice(%a) : (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
  func.func private @twice(%a: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.add %a, %a : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
";
        for (opt_level, inlined) in [(0, false), (2, true)] {
            let dir = scratch(&format!("dump-inline-{opt_level}"));
            let flags = Flags {
                dump_dir: Some(dir.clone()),
                opt_level,
                verify_each_pass: true,
                ..Flags::default()
            };
            Executable::compile_with(
                CALLED_ADD.as_bytes(),
                CompileOptions::default(),
                &flags,
                None,
            )
            .unwrap();
            let compile_dir = only_entry(&dir);
            let after = compile_dir.join("ir.020-inline.mlir");
            assert_eq!(after.exists(), inlined, "opt_level {opt_level}");
            let plan = std::fs::read_to_string(compile_dir.join("plan.mlir")).unwrap();
            // The callee stays; its call goes when inlined.
            let mentions = plan.matches("@twice").count();
            assert_eq!(mentions, if inlined { 1 } else { 2 }, "{plan}");
            if inlined {
                let ir = std::fs::read_to_string(&after).unwrap();
                assert!(ir.contains("stablehlo.add"), "{ir}");
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    #[test]
    fn failed_compile_writes_a_reproducer_that_replays() {
        let dir = scratch("repro");
        let flags = Flags {
            crash_reproducer_dir: Some(dir.clone()),
            ..Flags::default()
        };
        let mut options = CompileOptions {
            serialized: vec![1, 2, 3],
            ..CompileOptions::default()
        };
        options.flags.push("opt_level", FlagValue::Int(3));
        let flags = flags.with_overrides(&options.flags, "test").unwrap();
        let err =
            Executable::compile_with(INFEED.as_bytes(), options.clone(), &flags, None).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Unimplemented, "{err}");
        assert!(err.message().contains("stablehlo.infeed"), "{err}");
        let path = only_entry(&dir);
        assert!(err.message().contains(&path.display().to_string()), "{err}");
        let reproducer = Reproducer::parse(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(reproducer.program, INFEED.as_bytes());
        assert_eq!(reproducer.options.serialized, vec![1, 2, 3]);
        assert!(reproducer
            .flags
            .iter()
            .any(|(n, v)| n == "opt_level" && v.to_string() == "3"));
        let replay_flags = Flags::default()
            .with_overrides(&reproducer.flags, "test")
            .unwrap();
        assert_eq!(replay_flags.opt_level, 3);
        let again = Executable::compile_with(
            &reproducer.program,
            reproducer.options.clone(),
            &replay_flags,
            None,
        )
        .unwrap_err();
        assert_eq!(again.to_string(), reproducer.error);
        assert!(Reproducer::parse(b"OXLA-REPRO 1\nprogram_bytes: 9\n\nabc").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reproducer_roundtrips_assignment_and_binary_program() {
        let reproducer = Reproducer {
            program: b"ML\xEFR\n\n\0binary".to_vec(),
            options: CompileOptions {
                num_replicas: 2,
                num_partitions: 1,
                device_assignment: Some(vec![vec![1], vec![0]]),
                ..CompileOptions::default()
            },
            flags: FlagOverrides::from_text("--opt_level=0", "test").unwrap(),
            error: "line one\nline \\two \\n".to_string(),
        };
        assert_eq!(
            Reproducer::parse(&reproducer.to_bytes()).unwrap(),
            reproducer
        );
    }

    #[test]
    fn names_are_sanitized() {
        assert_eq!(sanitize_name("jit_f"), "jit_f");
        assert_eq!(sanitize_name("a/b c"), "a_b_c");
        assert_eq!(sanitize_name(".."), "program..");
        assert_eq!(sanitize_name(""), "program");
    }
}
