//! The `oxla` command line: argument parsing and dispatch to the subcommands.

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect {
            file,
            json,
            locations,
        } => inspect::run(&file, json, locations),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(1)
        }
    }
}
