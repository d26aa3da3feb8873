//! `hetsched`: the command-line front of every subsystem.
//!
//! Each subcommand lives in its own module; this file only parses and dispatches.
//! Errors print as one line on stderr; bad input exits 2 (as clap does for usage
//! errors), failures while doing valid work exit 1.

mod bench;
mod experiment;
mod signature_cmd;

use clap::{Parser, Subcommand};
use hetsched_core::Result;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "hetsched",
    version,
    about = "A heterogeneity-aware scheduler: simulator, live runtime and profiling tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a benchmark program and print its figures.
    Bench {
        #[command(subcommand)]
        which: bench::Bench,
    },
    /// Reproduce an experiment (a paper's figure or table) and write its outputs.
    Experiment {
        #[command(subcommand)]
        which: experiment::Experiment,
    },
    /// Architectural signatures: memory traces -> reuse distances -> miss rates -> elasticity.
    Signature {
        #[command(subcommand)]
        which: signature_cmd::SignatureCmd,
    },
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Bench { which } => bench::run(which),
        Command::Experiment { which } => experiment::run(which),
        Command::Signature { which } => signature_cmd::run(which),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hetsched: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
