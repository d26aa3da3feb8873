//! `hetsched`: the command-line front of every subsystem.
//!
//! Each subcommand lives in its own module; this file only parses and dispatches.
//! Errors print as one line on stderr; bad input exits 2 (as clap does for usage
//! errors), failures while doing valid work exit 1.

mod app_cmd;
mod beisel_cmd;
mod beisel_live;
mod bench;
mod daemon_bench;
mod daemon_cmd;
mod experiment;
mod nuca_cmd;
mod o2_cmd;
mod o2_plot;
mod run_cmd;
mod signature_cmd;
mod simulate_cmd;
mod topology_cmd;

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
    /// The main job on built-in defaults: Beisel's 25 MD5 + 50 prime tasks on the paper's
    /// machine under fcfs, cfs, dmda and affinity (table, plots, Perfetto trace).
    Demo(beisel_cmd::OutArgs),
    /// Print a machine (this one by default) as a tree or JSON.
    Topology(topology_cmd::TopologyArgs),
    /// List the built-in machine presets.
    Machines,
    /// Run the live scheduler daemon on a Unix socket.
    Daemon(daemon_cmd::DaemonArgs),
    /// Talk to a running daemon: list units, statistics, hold a unit.
    Client(daemon_cmd::ClientArgs),
    /// Run a program as a task of the daemon: its grants become its CPU affinity, and
    /// `hetsched run` exits as the program did.
    Run(run_cmd::RunArgs),
    /// Run an example application (Beisel et al.) on the worker model.
    App {
        #[command(subcommand)]
        which: app_cmd::App,
    },
    /// Compare scheduling policies on a scenario in the discrete-event simulator.
    Simulate(simulate_cmd::SimulateArgs),
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
        Command::Demo(args) => beisel_cmd::demo(args),
        Command::Topology(args) => topology_cmd::topology(args),
        Command::Machines => topology_cmd::machines(),
        Command::Daemon(args) => daemon_cmd::daemon(args),
        Command::Client(args) => daemon_cmd::client(args),
        Command::Run(args) => run_cmd::run(args),
        Command::App { which } => app_cmd::run_app(which),
        Command::Simulate(args) => simulate_cmd::simulate(args),
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
