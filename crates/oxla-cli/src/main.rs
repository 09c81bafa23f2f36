//! The `oxla` command line: argument parsing and dispatch to the subcommands.

mod compile;
mod flags;
mod inspect;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// oxla: a StableHLO compiler and runtime.
#[derive(Parser)]
#[command(name = "oxla", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print a program (MLIR bytecode or StableHLO text) as StableHLO text, then a summary:
    /// producer, function signatures, op counts (nested regions included), the number of
    /// constants and their total size in bytes.
    Inspect {
        /// The program file.
        file: PathBuf,
        /// Print only the summary, as JSON.
        #[arg(long)]
        json: bool,
        /// Print `loc(...)` source locations in the text.
        #[arg(long)]
        locations: bool,
    },
    /// Compile a program, or replay a crash reproducer (`.oxrepro`), and print `ok` or the
    /// compile's error (exit status 1). `OXLA_FLAGS` applies.
    Compile {
        /// The program file (MLIR bytecode or StableHLO text) or reproducer file.
        file: PathBuf,
        /// Extra flags, as in `OXLA_FLAGS` (e.g. "--dump_dir=out --verify_each_pass").
        #[arg(long, allow_hyphen_values = true)]
        flags: Option<String>,
    },
    /// Print every flag with its type, default and help.
    Flags,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect {
            file,
            json,
            locations,
        } => inspect::run(&file, json, locations),
        Command::Compile { file, flags } => compile::run(&file, flags.as_deref()),
        Command::Flags => {
            flags::run();
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(1)
        }
    }
}
