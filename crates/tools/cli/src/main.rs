//! `hetsched`: the command-line front of every subsystem.
//!
//! Each subcommand lives in its own module; this file only parses and dispatches.
//! Errors print as one line on stderr; bad input exits 2 (as clap does for usage
//! errors), failures while doing valid work exit 1. A reader that closes stdout early
//! (`hetsched topology | head -1`) ends the command quietly with exit 0.

mod app_cmd;
mod bench;
mod daemon_cmd;
mod demo_cmd;
mod experiment;
mod iobench_cmd;
mod policies_cmd;
mod registry;
mod reproduce_cmd;
mod run_cmd;
mod run_graph_cmd;
mod signature_cmd;
mod simulate_cmd;
mod slow_cpu_cmd;
mod topology_cmd;
mod validate_cmd;
mod watch;

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
    Demo(demo_cmd::DemoArgs),
    /// Print a machine (this one by default) as a tree or JSON.
    Topology(topology_cmd::TopologyArgs),
    /// List the built-in machine presets.
    Machines,
    /// List the scheduling policies, their parameters, defaults and accepted ranges.
    Policies(policies_cmd::PoliciesArgs),
    /// Run the live scheduler daemon on a Unix socket.
    Daemon(daemon_cmd::DaemonArgs),
    /// Talk to a running daemon: list units, statistics, hold a unit.
    Client(daemon_cmd::ClientArgs),
    /// Run a program as a task of the daemon: its grants become its CPU affinity, and
    /// `hetsched run` exits as the program did.
    Run(run_cmd::RunArgs),
    /// Run a task graph of programs (WfFormat or DOT) under the daemon, like `make -j`
    /// with the policy's placement: each task once its predecessors succeeded.
    RunGraph(run_graph_cmd::RunGraphArgs),
    /// Run a command while one CPU is made slower (a real-time duty-cycle load pinned to
    /// it), so that a machine of equal CPUs has a fast and a slow one.
    SlowCpu(slow_cpu_cmd::SlowCpuArgs),
    /// Measure this machine for the simulator: each CPU's speed per kernel, start-up and
    /// decision costs, the OpenCL device (a calibration and a machine file).
    Calibrate(validate_cmd::CalibrateArgs),
    /// Run a workload live under each policy and simulated on the calibrated machine;
    /// report each prediction's error and whether the policies' order is the same.
    Validate(validate_cmd::ValidateArgs),
    /// Run an example application (Beisel et al.) on the worker model.
    App {
        #[command(subcommand)]
        which: app_cmd::App,
    },
    /// zmIO-like direct-I/O benchmark (Akram et al.): throughput, IOPS, latency, CPIO.
    Iobench(iobench_cmd::IobenchArgs),
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
    /// Run every paper's reproduction and write one report (HTML, Markdown, JSON):
    /// figures beside the paper's numbers, judged claims, assumptions.
    Reproduce(reproduce_cmd::ReproduceArgs),
    /// Architectural signatures: memory traces -> reuse distances -> miss rates -> elasticity.
    Signature {
        #[command(subcommand)]
        which: signature_cmd::SignatureCmd,
    },
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Demo(args) => demo_cmd::demo(args),
        Command::Topology(args) => topology_cmd::topology(args),
        Command::Machines => topology_cmd::machines(),
        Command::Policies(args) => policies_cmd::policies(args),
        Command::Daemon(args) => daemon_cmd::daemon(args),
        Command::Client(args) => daemon_cmd::client(args),
        Command::Run(args) => run_cmd::run(args),
        Command::RunGraph(args) => run_graph_cmd::run(args),
        Command::SlowCpu(args) => slow_cpu_cmd::run(args),
        Command::Calibrate(args) => validate_cmd::calibrate(args),
        Command::Validate(args) => validate_cmd::validate(args),
        Command::App { which } => app_cmd::run_app(which),
        Command::Iobench(args) => iobench_cmd::iobench(args),
        Command::Simulate(args) => simulate_cmd::simulate(args),
        Command::Bench { which } => bench::run(which),
        Command::Experiment { which } => experiment::run(which),
        Command::Signature { which } => signature_cmd::run(which),
        Command::Reproduce(args) => reproduce_cmd::run(args),
    }
}

/// Makes a closed stdout end the process quietly with exit 0, whichever command prints.
///
/// Rust ignores SIGPIPE, so `print!` to a pipe whose reader is gone panics ("failed
/// printing to stdout: Broken pipe"). Restoring SIGPIPE's default action would kill the
/// process by the signal instead (status 141, not 0) and would also kill the daemon
/// when a client disconnects mid-reply; changing every `print!` would leave the next
/// one unguarded. So the panic hook checks whether stdout's reader is gone (`poll`
/// reports POLLERR on the write end of a widowed pipe) and, if so, exits 0 without
/// the panic message; any other panic is reported as usual.
fn quiet_on_closed_stdout() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let mut fd = libc::pollfd {
            fd: libc::STDOUT_FILENO,
            events: 0,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no timeout.
        let polled = unsafe { libc::poll(&mut fd, 1, 0) };
        if polled == 1 && fd.revents & libc::POLLERR != 0 {
            std::process::exit(0);
        }
        report(info)
    }));
}

fn main() -> ExitCode {
    quiet_on_closed_stdout();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hetsched: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
