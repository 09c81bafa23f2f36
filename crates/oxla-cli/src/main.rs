//! The `oxla` command line: argument parsing and dispatch to the subcommands.

mod compile;
mod flags;
mod inspect;
mod run;

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
    /// Load a program artifact (`.oxla`, from Python's `oxla.Program`) and call one of its
    /// procedures, printing the outputs (or saving them as `.npy`). Without `--function`,
    /// list the procedures and globals. Globals start from the artifact's values and carry
    /// over between the calls of one run (`--repeat`).
    Run {
        /// The artifact file.
        file: PathBuf,
        /// The procedure to call.
        #[arg(long, short = 'f')]
        function: Option<String>,
        /// An input, in signature order: a literal such as `3x4xf32=1`, `f32=2.5` or
        /// `3xi32=1,2,3`, or a `.npy` file. Repeat for each input.
        #[arg(long, short = 'i', allow_hyphen_values = true)]
        input: Vec<String>,
        /// Save the outputs as `.npy` files, one path per output in order.
        #[arg(long, short = 'o')]
        output: Vec<PathBuf>,
        /// Save every output as `DIR/<output name>.npy`.
        #[arg(long)]
        output_dir: Option<PathBuf>,
        /// Call the procedure this many times (globals carry over); outputs of the last.
        #[arg(long, default_value_t = 1)]
        repeat: usize,
        /// Print the calls' wall times (first, median, mean) to stderr.
        #[arg(long)]
        time: bool,
        /// Print every global's value after the calls.
        #[arg(long)]
        print_globals: bool,
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
        Command::Compile { file, flags } => compile::run(&file, flags.as_deref()),
        Command::Run {
            file,
            function,
            input,
            output,
            output_dir,
            repeat,
            time,
            print_globals,
        } => run::run(run::RunArgs {
            file,
            function,
            inputs: input,
            outputs: output,
            output_dir,
            repeat,
            time,
            print_globals,
        }),
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
