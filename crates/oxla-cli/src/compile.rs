//! `oxla compile FILE`: compiles a program or replays a crash reproducer outside Python, then
//! prints `ok` or the compile's error (exit status 1).
//!
//! A reproducer (`.oxrepro`, see `oxla_client::Reproducer`) carries the program, the compile
//! options and the flags of the failed compile; a plain program compiles with default options.
//! `OXLA_FLAGS` and `--flags` add flags on top (for example `--dump_dir=DIR` to see the IR).

use anyhow::{bail, Context, Result};
use oxla_client::{ClientOptions, CompileOptions, Executable, FlagOverrides, Reproducer};
use std::path::Path;

/// Compiles `file` (a program or a reproducer) with extra `flags`.
pub fn run(file: &Path, flags: Option<&str>) -> Result<()> {
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let (program, options, recorded_error) = if Reproducer::is_reproducer(&bytes) {
        let reproducer = Reproducer::parse(&bytes)?;
        (
            reproducer.program,
            CompileOptions {
                flags: reproducer.flags,
                ..reproducer.options
            },
            Some(reproducer.error),
        )
    } else {
        (bytes, CompileOptions::default(), None)
    };
    let base = ClientOptions::from_env()?.flags;
    let mut compile_flags = base.for_compile(&options.flags)?;
    if let Some(text) = flags {
        compile_flags =
            compile_flags.with_overrides(&FlagOverrides::from_text(text, "--flags")?, "--flags")?;
    }
    match Executable::compile_with(&program, options, &compile_flags, None) {
        Ok(executable) => {
            println!("ok: {} ({})", executable.name(), executable.fingerprint());
            if let Some(recorded) = recorded_error {
                eprintln!("note: the reproducer recorded a failure this oxla does not repeat:\n{recorded}");
            }
            Ok(())
        }
        Err(err) => bail!("{err}"),
    }
}
