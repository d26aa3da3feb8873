//! `hetsched simulate SCENARIO.toml`: compare policies on a scenario in the simulator
//! (`hetsched_sim::compare`), with a progress line and Ctrl-C (`watch`).
//!
//! What a run may cost is bounded where it is spent (`hetsched_sim::scenario` says why):
//! the scenario's limits stop one that would fill the memory or generate too much, and
//! the wall time is the user's to see and stop. On a terminal, a progress line (tasks
//! done, simulated time, engine events, the estimated time left) appears once the runs
//! have taken 2 s; Ctrl-C stops the run at once and cleanly (exit 130).

use crate::watch::Watcher;
use clap::Args;
use hetsched_core::perf_model;
use hetsched_core::{Error, Result};
use hetsched_sim::compare::Compare;
use hetsched_sim::scenario::Scenario;
use std::path::PathBuf;

#[derive(Args)]
pub struct SimulateArgs {
    /// Scenario file (format: docs/scenarios.md; examples in scenarios/).
    pub scenario: PathBuf,
    /// Policy spec `name[:key=value,...]`; repeat to compare; overrides the scenario's list.
    #[arg(long = "policy")]
    pub policies: Vec<String>,
    /// Seed (overrides the scenario's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Output directory for metrics.json, table.txt and per-task CSVs
    /// (default: ./hetsched-out/simulate-<scenario name>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write a Perfetto (Chrome trace-event JSON) trace of every run to this file.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Print JSON metrics instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Stop each run at this simulated time in seconds (overrides `end.max_time_s`); the
    /// table then says how many tasks each run left (`left`).
    #[arg(long)]
    pub max_time_s: Option<f64>,
    /// Write the metrics only (table.txt, metrics.json), no per-task CSVs; the run
    /// record's invariants are then not checked (without `--trace`).
    #[arg(long)]
    pub summary: bool,
    /// Fail a run that takes more engine events than this (overrides `end.max_events`;
    /// default: no limit; the memory and the tasks a run generates are bounded anyway,
    /// see docs/simulator.md, and Ctrl-C stops a run cleanly).
    #[arg(long)]
    pub max_events: Option<u64>,
    /// Keep performance models across runs in DIR (`<machine>.json`; DIR left out:
    /// $HETSCHED_HOME/perfmodels, else ~/.hetsched/perfmodels), for the policies that
    /// read them (dmda): each run starts from the file and writes back what it observed,
    /// as StarPU keeps its sampling directory. Without it every run starts with none, so
    /// that a scenario and a seed always give the same results.
    #[arg(long, value_name = "DIR", num_args = 0..=1)]
    pub perfmodel: Option<Option<PathBuf>>,
}

pub fn simulate(args: SimulateArgs) -> Result<()> {
    let mut scenario = Scenario::load(&args.scenario)?;
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    scenario.override_end(args.max_time_s, args.max_events, |field| {
        format!("--{}", field.replace('_', "-"))
    })?;
    let mut compare = Compare::new(
        scenario,
        args.policies.clone(),
        args.out.as_deref(),
        args.summary,
    )?;
    match &args.perfmodel {
        None => {}
        Some(Some(dir)) => compare = compare.perfmodel(dir.clone()),
        Some(None) => {
            compare = compare.perfmodel(perf_model::default_dir().ok_or_else(|| {
                Error::input(
                    "--perfmodel: no DIR given, and neither $HETSCHED_HOME nor $HOME is set",
                )
            })?)
        }
    }
    if let Some(path) = &args.trace {
        compare = compare.trace(path)?;
    }
    let watcher = Watcher::start(compare.tasks_per_run(), compare.runs())?;
    let ran = compare.run(Some(watcher.progress.clone()), |i, p| watcher.running(i, p));
    watcher.finish();
    let c = ran?;
    if args.json {
        println!("{}", c.json);
    } else {
        println!(
            "scenario {} on {} ({} units), seed {}",
            c.scenario.origin,
            c.scenario.machine.name,
            c.scenario.machine.units.len(),
            c.scenario.seed
        );
        print!("{}", c.table);
        eprintln!("outputs in {}", c.out.display());
    }
    Ok(())
}
