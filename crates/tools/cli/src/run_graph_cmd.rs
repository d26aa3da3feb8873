//! `hetsched run-graph FILE`: a task graph of programs under the daemon (the driver is
//! `hetsched_live::run_graph`; this module parses, prints progress and the summary).

use clap::Args;
use hetsched_core::machine::UnitType;
use hetsched_core::{Error, Result};
use hetsched_live::run_graph::{self, Progress, RunGraphOptions};
use hetsched_live::server;
use std::path::PathBuf;

#[derive(Args)]
pub struct RunGraphArgs {
    /// The graph: WfFormat JSON (each task's `command` in `workflow.execution.tasks`) or
    /// DOT (each node's `command` attribute, a shell line).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The daemon's socket (default: as `hetsched run`).
    #[arg(long, value_name = "SOCK")]
    daemon: Option<PathBuf>,
    /// Unit types every task can use, e.g. `cpu` or `cpu,opencl`.
    #[arg(long = "type", value_name = "TYPE", value_delimiter = ',', default_value = "cpu", value_parser = crate::run_cmd::unit_type)]
    types: Vec<UnitType>,
    /// Tasks started at once at most (each waits for its grant stopped); default: twice
    /// the daemon's units.
    #[arg(short, long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    jobs: Option<u32>,
    /// After a task fails, go on with the tasks that do not depend on it (as `make -k`).
    #[arg(short, long)]
    keep_going: bool,
    /// Milliseconds between each agent's checkpoints.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    check_ms: u64,
    /// Write the run's record, `run-graph.json` (each task's start, end and status; the
    /// makespan), into this folder (the daemon's `--trace` has the placements).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub fn run(args: RunGraphArgs) -> Result<()> {
    let instance = hetsched_sim::graphs::read_file(&args.file)?;
    let origin = args.file.display();
    let commands = instance
        .commands
        .iter()
        .zip(&instance.ids)
        .map(|(c, id)| {
            c.clone().ok_or_else(|| {
                Error::input(format!(
                    "{origin}: task {id:?} has no command (WfFormat: `command` in workflow.execution.tasks; DOT: a node's `command`)"
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let socket = args.daemon.unwrap_or_else(server::default_socket_path);
    let jobs = match args.jobs {
        Some(j) => j as usize,
        None => {
            let mut c = hetsched_live::client::Client::connect(&socket, "hetsched run-graph")?;
            2 * c.list_units()?.iter().filter(|u| u.online).count().max(1)
        }
    };
    let agent = std::env::current_exe()
        .map_err(|e| Error::runtime(format!("run-graph: where is hetsched? {e}")))?;
    let n = commands.len();
    let mut done = 0;
    let outcome = run_graph::run(
        RunGraphOptions {
            socket,
            agent,
            graph: instance.graph,
            names: instance.ids,
            commands,
            types: args.types,
            jobs,
            keep_going: args.keep_going,
            check_ms: args.check_ms,
        },
        |p| {
            if let Progress::Ended {
                name,
                status,
                seconds,
                ..
            } = p
            {
                done += 1;
                let how = match status {
                    0 => "done".to_string(),
                    s => format!("FAILED (status {s})"),
                };
                eprintln!("[{done}/{n}] {name}: {how} in {seconds:.2} s");
            }
        },
    )?;
    if let Some(dir) = &args.out {
        let json = serde_json::to_string_pretty(&outcome).expect("an outcome serialises");
        let path =
            hetsched_util::files::OutDir::create(dir)?.write("run-graph.json", json + "\n")?;
        eprintln!("wrote {}", path.display());
    }
    println!(
        "{} tasks: {} succeeded, {} failed, {} not run; makespan {:.3} s",
        n,
        n - outcome.failed - outcome.skipped,
        outcome.failed,
        outcome.skipped,
        outcome.makespan_s
    );
    if outcome.failed > 0 {
        let first = outcome
            .tasks
            .iter()
            .filter(|t| t.status.is_some_and(|s| s != 0))
            .min_by(|a, b| a.end_s.unwrap_or(0.0).total_cmp(&b.end_s.unwrap_or(0.0)))
            .expect("a failed task");
        return Err(Error::runtime(format!(
            "task {:?} failed (status {})",
            first.name,
            first.status.unwrap_or(0)
        )));
    }
    Ok(())
}
