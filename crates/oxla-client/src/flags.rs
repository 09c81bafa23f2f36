//! oxla's flags: one table of named options, read from `OXLA_FLAGS`, from PJRT client create
//! options and from per-compile overrides (JAX's `compiler_options`).
//!
//! Every flag has a type, a default, a scope and a help line ([`FLAGS`]); `oxla flags` prints
//! the table. A name may carry an optional `oxla_` prefix (`oxla_dump_dir` and `dump_dir` are the
//! same flag), so oxla's options can be told apart from other compilers' in a shared dict.
//! An unknown name or a malformed value is an `INVALID_ARGUMENT` error that lists the valid
//! flags. This module parses and validates; it does not act on the flags.

use crate::error::{ClientError, Result};
use std::fmt::Write;
use std::path::PathBuf;

/// The environment variable holding flags, e.g. `--opt_level=2 --dump_dir=/tmp/d`.
pub const FLAGS_ENV: &str = "OXLA_FLAGS";
/// The environment variable re-read at every compile: when set, dumps and crash reproducers
/// of that compile go to this directory (the pytest plugin points it at each test's folder).
pub const ARTIFACT_DIR_ENV: &str = "OXLA_ARTIFACT_DIR";
/// The optional prefix of flag names.
pub const FLAG_PREFIX: &str = "oxla_";
/// The value of `crash_reproducer_dir` that means the system's temporary directory.
pub const TEMP_DIR_VALUE: &str = "@tmp";
/// The highest optimization level.
pub const MAX_OPT_LEVEL: u8 = 3;

/// The type of a flag's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagType {
    /// A decimal integer.
    Int,
    /// `true`/`false` (also `1`/`0`); `--name` alone means `true`.
    Bool,
    /// A filesystem path; empty means unset.
    Path,
}

impl FlagType {
    /// The type's name as `oxla flags` prints it.
    pub fn name(self) -> &'static str {
        match self {
            FlagType::Int => "int",
            FlagType::Bool => "bool",
            FlagType::Path => "path",
        }
    }
}

/// Where a flag may be set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagScope {
    /// When the client is created only (`OXLA_FLAGS`, client create options).
    Client,
    /// When the client is created, and overridden per compile.
    Compile,
}

/// One flag's description.
#[derive(Clone, Copy, Debug)]
pub struct FlagSpec {
    /// The name, without prefix.
    pub name: &'static str,
    /// The value type.
    pub ty: FlagType,
    /// The default, as text.
    pub default: &'static str,
    /// Where it may be set.
    pub scope: FlagScope,
    /// One line of help.
    pub help: &'static str,
}

/// Every flag oxla knows.
pub const FLAGS: &[FlagSpec] = &[
    FlagSpec {
        name: "num_devices",
        ty: FlagType::Int,
        default: "1",
        scope: FlagScope::Client,
        help: "number of in-process devices (1 to 1024); overrides OXLA_NUM_DEVICES",
    },
    FlagSpec {
        name: "num_threads",
        ty: FlagType::Int,
        default: "one per core, at least 2",
        scope: FlagScope::Client,
        help: "worker threads running transfers and executions (the pool size)",
    },
    FlagSpec {
        name: "opt_level",
        ty: FlagType::Int,
        default: "2",
        scope: FlagScope::Compile,
        help: "optimization level 0-3: 0 runs every op on its own, 1 and up fuse elementwise f32 ops into tile loops",
    },
    FlagSpec {
        name: "dump_dir",
        ty: FlagType::Path,
        default: "unset",
        scope: FlagScope::Compile,
        help: "write each compile's input, IR after each pass, plan, options and timings under DIR/<module>-<n>-<hash>/",
    },
    FlagSpec {
        name: "crash_reproducer_dir",
        ty: FlagType::Path,
        default: "unset",
        scope: FlagScope::Compile,
        help: "on a failed compile write DIR/<module>-<hash>.oxrepro (replay: oxla compile FILE); @tmp means the system temp dir",
    },
    FlagSpec {
        name: "trace_path",
        ty: FlagType::Path,
        default: "unset",
        scope: FlagScope::Client,
        help: "write a Chrome trace-event JSON file of compile phases, executions and transfers (Perfetto loads it)",
    },
    FlagSpec {
        name: "codegen",
        ty: FlagType::Bool,
        default: "true",
        scope: FlagScope::Client,
        help: "run fused f32 arithmetic as generated AVX-512 code where the CPU has it (false: the tile interpreter; process-wide)",
    },
    FlagSpec {
        name: "xla_divisions",
        ty: FlagType::Bool,
        default: "true",
        scope: FlagScope::Compile,
        help: "round divisions as XLA's cpu backend does (x / c as x * (1/c), x / broadcast(y) as x * broadcast(1/y), x / sqrt(y) as x * rsqrt(y)), so results match JAX's cpu bit for bit; false: every divide rounds once",
    },
    FlagSpec {
        name: "verify_each_pass",
        ty: FlagType::Bool,
        default: "false",
        scope: FlagScope::Compile,
        help: "run the IR verifier after reading and after every pass group",
    },
];

/// The spec of flag `name` (with or without the `oxla_` prefix).
pub fn lookup(name: &str) -> Option<&'static FlagSpec> {
    let bare = name.strip_prefix(FLAG_PREFIX).unwrap_or(name);
    FLAGS.iter().find(|spec| spec.name == bare)
}

/// The list of valid flags, for error messages.
pub fn valid_flags_list() -> String {
    FLAGS
        .iter()
        .map(|spec| format!("{} ({})", spec.name, spec.ty.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `oxla flags`: every flag with its type, default, scope and help, one per line.
pub fn describe_flags() -> String {
    let mut out = String::new();
    for spec in FLAGS {
        let scope = match spec.scope {
            FlagScope::Client => "client",
            FlagScope::Compile => "client, per compile",
        };
        let _ = writeln!(
            out,
            "--{}=<{}>  (default: {}; set at: {})\n    {}",
            spec.name,
            spec.ty.name(),
            spec.default,
            scope,
            spec.help
        );
    }
    out
}

/// A flag value as it arrived (text from `OXLA_FLAGS`, typed from PJRT named values).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlagValue {
    /// Text, converted to the flag's type.
    Str(String),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
}

impl std::fmt::Display for FlagValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlagValue::Str(s) => write!(f, "{s}"),
            FlagValue::Int(n) => write!(f, "{n}"),
            FlagValue::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// The prefix of XLA's own compile options (`xla_dump_to`, `xla_cpu_enable_fast_math`, ...),
/// which per-compile overrides may carry and oxla ignores.
const XLA_OPTION_PREFIX: &str = "xla_";

/// XLA options known to take a boolean (the common debug options of its CPU backend).
const XLA_BOOL_OPTIONS: &[&str] = &[
    "xla_cpu_enable_fast_math",
    "xla_cpu_fast_math_honor_division",
    "xla_cpu_fast_math_honor_functions",
    "xla_cpu_fast_math_honor_infs",
    "xla_cpu_fast_math_honor_nans",
    "xla_cpu_use_thunk_runtime",
    "xla_dump_hlo_as_dot",
    "xla_dump_hlo_as_html",
    "xla_dump_hlo_as_proto",
    "xla_dump_hlo_as_text",
    "xla_dump_include_timestamp",
    "xla_dump_large_constants",
    "xla_embed_ir_in_executable",
    "xla_hlo_profile",
    "xla_llvm_disable_expensive_passes",
];

/// Rejects a value XLA would reject for option `name`, with XLA's wording.
fn check_xla_option(name: &str, value: &FlagValue) -> Result<()> {
    if !XLA_BOOL_OPTIONS.contains(&name) {
        return Ok(());
    }
    match value {
        FlagValue::Bool(_) | FlagValue::Int(0 | 1) => Ok(()),
        FlagValue::Str(s) if matches!(s.trim(), "true" | "false" | "1" | "0") => Ok(()),
        other => Err(ClientError::InvalidArgument(format!(
            "compile option {name}: {other} is not a valid bool value."
        ))),
    }
}

/// The source name of per-compile overrides (JAX's `compiler_options`) in messages.
const COMPILE_OPTIONS_SOURCE: &str = "compile options";

fn unknown_flag(name: &str, source: &str) -> ClientError {
    // Per-compile options get XLA's wording, which JAX code and tests match on.
    let lead = if source == COMPILE_OPTIONS_SOURCE {
        format!("No such compile option: '{name}'")
    } else {
        format!("unknown flag {name:?} in {source}")
    };
    ClientError::InvalidArgument(format!(
        "{lead}; valid flags (optionally prefixed with {FLAG_PREFIX:?}): {}",
        valid_flags_list()
    ))
}

fn bad_value(spec: &FlagSpec, value: &FlagValue, source: &str, why: &str) -> ClientError {
    ClientError::InvalidArgument(format!(
        "flag {} in {source} takes a {} value, got {value:?}: {why}; valid flags: {}",
        spec.name,
        spec.ty.name(),
        valid_flags_list()
    ))
}

impl FlagValue {
    fn as_int(&self, spec: &FlagSpec, source: &str) -> Result<i64> {
        match self {
            FlagValue::Int(n) => Ok(*n),
            FlagValue::Str(s) => s
                .trim()
                .parse()
                .map_err(|_| bad_value(spec, self, source, "not an integer")),
            FlagValue::Bool(_) => Err(bad_value(spec, self, source, "not an integer")),
        }
    }

    fn as_bool(&self, spec: &FlagSpec, source: &str) -> Result<bool> {
        match self {
            FlagValue::Bool(b) => Ok(*b),
            FlagValue::Int(0) => Ok(false),
            FlagValue::Int(1) => Ok(true),
            FlagValue::Str(s) => match s.trim() {
                "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                _ => Err(bad_value(spec, self, source, "not true/false")),
            },
            FlagValue::Int(_) => Err(bad_value(spec, self, source, "not true/false")),
        }
    }

    fn as_path(&self, spec: &FlagSpec, source: &str) -> Result<Option<PathBuf>> {
        match self {
            FlagValue::Str(s) if s.is_empty() => Ok(None),
            FlagValue::Str(s) => Ok(Some(PathBuf::from(s))),
            _ => Err(bad_value(spec, self, source, "not a path")),
        }
    }
}

/// Splits flag text (`--a=1 --b --c=x`) into names and values; `--b` alone is `Bool(true)`.
pub fn parse_flag_text(text: &str, source: &str) -> Result<Vec<(String, FlagValue)>> {
    let mut out = Vec::new();
    for token in text.split_whitespace() {
        let body = token.strip_prefix("--").ok_or_else(|| {
            ClientError::InvalidArgument(format!(
                "malformed flag {token:?} in {source}: flags look like --name=value; valid flags: {}",
                valid_flags_list()
            ))
        })?;
        let (name, value) = match body.split_once('=') {
            Some((name, value)) => (name, FlagValue::Str(value.to_string())),
            None => (body, FlagValue::Bool(true)),
        };
        if lookup(name).is_none() {
            return Err(unknown_flag(name, source));
        }
        out.push((name.to_string(), value));
    }
    Ok(out)
}

/// Per-compile flag overrides, as they arrived (validated when the compile starts).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlagOverrides {
    entries: Vec<(String, FlagValue)>,
}

impl FlagOverrides {
    /// No overrides.
    pub fn new() -> FlagOverrides {
        FlagOverrides::default()
    }

    /// Adds `name = value`; later entries win.
    pub fn push(&mut self, name: impl Into<String>, value: FlagValue) {
        self.entries.push((name.into(), value));
    }

    /// Parses flag text (`--opt_level=1 --verify_each_pass`).
    pub fn from_text(text: &str, source: &str) -> Result<FlagOverrides> {
        Ok(FlagOverrides {
            entries: parse_flag_text(text, source)?,
        })
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in order.
    pub fn iter(&self) -> impl Iterator<Item = &(String, FlagValue)> {
        self.entries.iter()
    }
}

/// The compile- and runtime-level flags a client carries (device and thread counts live in
/// [`crate::ClientOptions`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flags {
    /// Optimization level, 0 to [`MAX_OPT_LEVEL`].
    pub opt_level: u8,
    /// Where compiles dump their input, IR, plan, options and timings.
    pub dump_dir: Option<PathBuf>,
    /// Where failed compiles write crash reproducers.
    pub crash_reproducer_dir: Option<PathBuf>,
    /// Where the client writes its Chrome trace.
    pub trace_path: Option<PathBuf>,
    /// Run the verifier after every pass group.
    pub verify_each_pass: bool,
    /// Let fused kernels run generated machine code (set for the whole process when a client
    /// is created).
    pub codegen: bool,
    /// Rewrite divisions the way XLA's cpu backend computes them.
    pub xla_divisions: bool,
}

impl Default for Flags {
    fn default() -> Flags {
        Flags {
            opt_level: 2,
            dump_dir: None,
            crash_reproducer_dir: None,
            trace_path: None,
            verify_each_pass: false,
            codegen: true,
            xla_divisions: true,
        }
    }
}

impl Flags {
    /// Sets one compile- or client-level flag of this struct; `num_devices` and `num_threads`
    /// are rejected here (they belong to [`crate::ClientOptions`]).
    pub fn set(&mut self, name: &str, value: &FlagValue, source: &str) -> Result<()> {
        let spec = lookup(name).ok_or_else(|| unknown_flag(name, source))?;
        match spec.name {
            "opt_level" => {
                let level = value.as_int(spec, source)?;
                self.opt_level = u8::try_from(level)
                    .ok()
                    .filter(|l| *l <= MAX_OPT_LEVEL)
                    .ok_or_else(|| bad_value(spec, value, source, "must be between 0 and 3"))?;
            }
            "dump_dir" => self.dump_dir = value.as_path(spec, source)?,
            "crash_reproducer_dir" => {
                self.crash_reproducer_dir = value.as_path(spec, source)?.map(|p| {
                    if p.as_os_str() == TEMP_DIR_VALUE {
                        std::env::temp_dir()
                    } else {
                        p
                    }
                })
            }
            "trace_path" => self.trace_path = value.as_path(spec, source)?,
            "verify_each_pass" => self.verify_each_pass = value.as_bool(spec, source)?,
            "codegen" => self.codegen = value.as_bool(spec, source)?,
            "xla_divisions" => self.xla_divisions = value.as_bool(spec, source)?,
            other => {
                return Err(ClientError::InvalidArgument(format!(
                    "flag {other} in {source} is a client option, not handled here"
                )))
            }
        }
        Ok(())
    }

    /// These flags with per-compile `overrides` applied; client-only flags are an error.
    pub fn with_overrides(&self, overrides: &FlagOverrides, source: &str) -> Result<Flags> {
        let mut flags = self.clone();
        for (name, value) in overrides.iter() {
            if source == COMPILE_OPTIONS_SOURCE && name.starts_with(XLA_OPTION_PREFIX) {
                // XLA's debug options tune XLA's own passes: they have no meaning here,
                // and rejecting them would fail programs written for the cpu backend. A
                // value no XLA would take is still an error.
                check_xla_option(name, value)?;
                tracing::debug!("ignoring XLA compile option {name}={value}");
                continue;
            }
            let spec = lookup(name).ok_or_else(|| unknown_flag(name, source))?;
            if spec.scope == FlagScope::Client {
                return Err(ClientError::InvalidArgument(format!(
                    "flag {} is set when the client is created (OXLA_FLAGS or client create \
                     options), not per compile; per-compile flags: {}",
                    spec.name,
                    FLAGS
                        .iter()
                        .filter(|s| s.scope == FlagScope::Compile)
                        .map(|s| s.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            flags.set(name, value, source)?;
        }
        Ok(flags)
    }

    /// Points the dump and reproducer directories at `artifact_dir` (when set and non-empty).
    pub fn with_artifact_dir(mut self, artifact_dir: Option<&str>) -> Flags {
        if let Some(dir) = artifact_dir.filter(|d| !d.is_empty()) {
            self.dump_dir = Some(PathBuf::from(dir));
            self.crash_reproducer_dir = Some(PathBuf::from(dir));
        }
        self
    }

    /// The flags one compile runs with: these, then `OXLA_ARTIFACT_DIR` (read now), then the
    /// compile's own overrides.
    pub fn for_compile(&self, overrides: &FlagOverrides) -> Result<Flags> {
        let artifact_dir = std::env::var(ARTIFACT_DIR_ENV).ok();
        self.clone()
            .with_artifact_dir(artifact_dir.as_deref())
            .with_overrides(overrides, COMPILE_OPTIONS_SOURCE)
    }

    /// The flags as `OXLA_FLAGS` text.
    pub fn to_flag_text(&self) -> String {
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        let mut parts = vec![format!("--opt_level={}", self.opt_level)];
        if let Some(dir) = path(&self.dump_dir) {
            parts.push(format!("--dump_dir={dir}"));
        }
        if let Some(dir) = path(&self.crash_reproducer_dir) {
            parts.push(format!("--crash_reproducer_dir={dir}"));
        }
        if let Some(p) = path(&self.trace_path) {
            parts.push(format!("--trace_path={p}"));
        }
        parts.push(format!("--verify_each_pass={}", self.verify_each_pass));
        parts.push(format!("--codegen={}", self.codegen));
        parts.push(format!("--xla_divisions={}", self.xla_divisions));
        parts.join(" ")
    }

    /// The flags that change what a compile does (not where it writes), as flag text; a crash
    /// reproducer records these.
    pub fn semantic_flag_text(&self) -> String {
        format!(
            "--opt_level={} --verify_each_pass={} --xla_divisions={}",
            self.opt_level, self.verify_each_pass, self.xla_divisions
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn parses_text_with_and_without_prefix() {
        let parsed = parse_flag_text(
            "--opt_level=1 --oxla_verify_each_pass --dump_dir=d --codegen=0 --xla_divisions=0",
            "test",
        )
        .unwrap();
        let mut flags = Flags::default();
        for (name, value) in &parsed {
            flags.set(name, value, "test").unwrap();
        }
        assert_eq!(flags.opt_level, 1);
        assert!(flags.verify_each_pass);
        assert_eq!(flags.dump_dir, Some(PathBuf::from("d")));
        assert!(!flags.codegen);
        assert!(!flags.xla_divisions);
        assert_eq!(
            flags.to_flag_text(),
            "--opt_level=1 --dump_dir=d --verify_each_pass=true --codegen=false \
             --xla_divisions=false"
        );
    }

    #[test]
    fn unknown_and_malformed_flags_list_the_valid_ones() {
        for text in ["--bogus=1", "opt_level=1", "--oxla_nope"] {
            let err = parse_flag_text(text, "OXLA_FLAGS").unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidArgument, "{text}");
            for spec in FLAGS {
                assert!(err.message().contains(spec.name), "{err}");
            }
        }
        let mut flags = Flags::default();
        for (name, value) in [
            ("opt_level", FlagValue::Str("4".to_string())),
            ("opt_level", FlagValue::Str("high".to_string())),
            ("verify_each_pass", FlagValue::Str("maybe".to_string())),
            ("dump_dir", FlagValue::Int(3)),
        ] {
            let err = flags.set(name, &value, "test").unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidArgument);
            assert!(err.message().contains("valid flags"), "{err}");
        }
        assert_eq!(flags, Flags::default(), "failed sets change nothing");
    }

    #[test]
    fn overrides_and_artifact_dir() {
        let base = Flags {
            dump_dir: Some(PathBuf::from("base")),
            ..Flags::default()
        };
        let with_artifacts = base.clone().with_artifact_dir(Some("art"));
        assert_eq!(with_artifacts.dump_dir, Some(PathBuf::from("art")));
        assert_eq!(
            with_artifacts.crash_reproducer_dir,
            Some(PathBuf::from("art"))
        );
        assert_eq!(base.clone().with_artifact_dir(Some("")), base);

        let mut overrides = FlagOverrides::new();
        overrides.push("oxla_opt_level", FlagValue::Int(0));
        overrides.push("crash_reproducer_dir", FlagValue::Str("@tmp".to_string()));
        let flags = with_artifacts.with_overrides(&overrides, "test").unwrap();
        assert_eq!(flags.opt_level, 0);
        assert_eq!(flags.crash_reproducer_dir, Some(std::env::temp_dir()));

        // XLA's own options are ignored per compile, and still unknown elsewhere.
        let mut xla = FlagOverrides::new();
        xla.push("xla_cpu_enable_fast_math", FlagValue::Bool(true));
        xla.push("xla_dump_to", FlagValue::Str("somewhere".to_string()));
        let ignored = base.with_overrides(&xla, COMPILE_OPTIONS_SOURCE).unwrap();
        assert_eq!(ignored, base);
        let err = base.with_overrides(&xla, "OXLA_FLAGS").unwrap_err();
        assert!(err.message().contains("xla_cpu_enable_fast_math"), "{err}");
        // ... but a value that option cannot take is an error.
        let mut bad = FlagOverrides::new();
        bad.push(
            "xla_embed_ir_in_executable",
            FlagValue::Str("maybe".to_string()),
        );
        let err = base
            .with_overrides(&bad, COMPILE_OPTIONS_SOURCE)
            .unwrap_err();
        assert!(
            err.message().contains("is not a valid bool value."),
            "{err}"
        );

        let mut client_only = FlagOverrides::new();
        client_only.push("num_threads", FlagValue::Int(2));
        let err = base.with_overrides(&client_only, "test").unwrap_err();
        assert!(err.message().contains("client is created"), "{err}");
    }

    #[test]
    fn describe_lists_every_flag() {
        let text = describe_flags();
        for spec in FLAGS {
            assert!(text.contains(&format!("--{}=<{}>", spec.name, spec.ty.name())));
        }
    }
}
