//! `hetsched simulate SCENARIO.toml`: compare policies on a scenario in the simulator.

use clap::Args;
use hetsched_core::outcome_stream::SummaryStream;
use hetsched_core::perf_model::{self, PerfModels};
use hetsched_core::{Error, Result};
use hetsched_sim::scenario::Scenario;
use hetsched_sim::stream::StreamRecorder;
use hetsched_sim::{report, trace};
use hetsched_util::files::{OutDir, OutFile};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::path::PathBuf;
use std::time::{Duration, Instant};

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
    /// Stop each run at this simulated time in seconds (overrides `end.max_time_s`).
    #[arg(long)]
    pub max_time_s: Option<f64>,
    /// Write the metrics only (table.txt, metrics.json), no per-task CSVs; the run
    /// record's invariants are then not checked (without `--trace`).
    #[arg(long)]
    pub summary: bool,
    /// Fail a run that takes more engine events than this (overrides `end.max_events`;
    /// default 10^6).
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

/// One run of `policy` on `scenario` with its outputs made as it goes (no trace): its
/// metrics, and its per-task CSV written to `csv` if given (with its name for errors);
/// without the CSV, the metrics alone ([`SummaryStream`]: no outcomes, no record checks).
/// `hetsched simulate` without `--trace` and `hetsched bench simulate` both run this.
pub fn run_streamed<W: std::io::Write>(
    scenario: &Scenario,
    policy: &str,
    csv: Option<(W, String)>,
    on_task: &mut dyn FnMut(&hetsched_sim::SimTask),
) -> Result<(hetsched_core::record::Metrics, hetsched_sim::RunSummary)> {
    let (machine, seed) = (&scenario.machine, scenario.seed);
    let Some((file, name)) = csv else {
        let mut rec = SummaryStream::new(policy, machine);
        let summary = hetsched_sim::run_into(scenario, policy, seed, on_task, &mut rec)?;
        return Ok((rec.finish(), summary));
    };
    let mut rec = StreamRecorder::new(policy, machine, file, name);
    let summary = hetsched_sim::run_into(scenario, policy, seed, on_task, &mut rec)?;
    let metrics = rec
        .finish()
        .map_err(|e| Error::runtime(format!("{policy}: {e}")))?;
    Ok((metrics, summary))
}

pub fn simulate(args: SimulateArgs) -> Result<()> {
    let mut scenario = Scenario::load(&args.scenario)?;
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    scenario.override_end(args.max_time_s, args.max_events, |field| {
        format!("--{}", field.replace('_', "-"))
    })?;
    let policies = if args.policies.is_empty() {
        scenario.policies.clone()
    } else {
        args.policies.clone()
    };
    if policies.is_empty() {
        return Err(Error::input(format!(
            "{}: policies: none given (add `policies = [...]` or pass --policy)",
            scenario.origin
        )));
    }
    for p in &policies {
        hetsched_policies::build(p, scenario.seed)
            .map_err(|e| Error::input(format!("--policy {p:?}: {e}")))?;
    }
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("hetsched-out").join(format!("simulate-{}", scenario.name))
    });
    // Both checked before any run: a path that cannot take the outputs is bad input.
    let out = OutDir::create(&out)?;
    let perfmodel = match &args.perfmodel {
        None => None,
        Some(Some(dir)) => Some(dir.clone()),
        Some(None) => Some(perf_model::default_dir().ok_or_else(|| {
            Error::input("--perfmodel: no DIR given, and neither $HETSCHED_HOME nor $HOME is set")
        })?),
    };
    let mut trace_file = args.trace.as_deref().map(OutFile::create).transpose()?;

    // Progress on stderr, shown only once the work has taken more than a second.
    let total = scenario.task_count() * policies.len() as u64;
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} tasks ({eta})")
            .map_err(Error::runtime)?,
    );
    let started = Instant::now();
    let mut shown = false;
    let mut since_check = 0u32;

    let mut records = Vec::new();
    let mut metrics = Vec::new();
    for p in &policies {
        bar.set_message(p.clone());
        if let Some(dir) = &perfmodel {
            scenario.config.models = PerfModels::load(dir, &scenario.machine.name)?;
        }
        let on_task = &mut |_: &hetsched_sim::SimTask| {
            since_check += 1;
            if since_check == 1024 {
                bar.inc(since_check as u64);
                since_check = 0;
                if !shown && started.elapsed() > Duration::from_secs(1) {
                    bar.set_draw_target(ProgressDrawTarget::stderr());
                    shown = true;
                }
            }
        };
        let named = |e| match e {
            Error::Input(m) => Error::input(format!("{}: {p}: {m}", scenario.origin)),
            e => e,
        };
        let csv_name = format!("tasks-{}.csv", report::file_safe(p));
        // Written under a temporary name and put in place once the run succeeded: a
        // failed run leaves no truncated CSV.
        let mut csv_file = None;
        // A trace needs the whole record; otherwise the outputs are made as the run goes.
        let (run_metrics, summary) = if args.trace.is_some() {
            let (record, summary) =
                hetsched_sim::run_policy(&scenario, p, scenario.seed, on_task).map_err(named)?;
            record
                .check()
                .map_err(|e| Error::runtime(format!("{p}: run record invariant: {e}")))?;
            if !args.summary {
                out.write(&csv_name, report::tasks_csv(&record))?;
            }
            let m = record.metrics();
            records.push(record);
            (m, summary)
        } else {
            let csv = if args.summary {
                None
            } else {
                let file = csv_file.insert(out.file(&csv_name)?);
                let name = file.path().display().to_string();
                Some((file, name))
            };
            run_streamed(&scenario, p, csv, on_task).map_err(named)?
        };
        if summary.unfinished > 0 && scenario.config.max_time_ns.is_none() {
            return Err(Error::runtime(format!(
                "{p}: {} tasks never finished (the policy left them queued)",
                summary.unfinished
            )));
        }
        if let Some(file) = csv_file {
            file.finish()?;
        }
        if let (Some(dir), Some(models)) = (&perfmodel, &summary.models) {
            models.save(dir, &scenario.machine.name)?;
        }
        metrics.push(run_metrics);
    }
    bar.finish_and_clear();

    let table = report::table(&metrics);
    let json = serde_json::to_string_pretty(&serde_json::json!({
        "scenario": scenario.origin,
        "machine": scenario.machine.name,
        "seed": scenario.seed,
        "runs": metrics,
    }))
    .map_err(Error::runtime)?;
    out.write("table.txt", &table)?;
    out.write("metrics.json", &json)?;
    if let Some(mut file) = trace_file.take() {
        let doc = trace::trace(&records);
        serde_json::to_writer(&mut file, &doc).map_err(|e| file.error(e.into()))?;
        file.finish()?;
    }
    if args.json {
        println!("{json}");
    } else {
        println!(
            "scenario {} on {} ({} units), seed {}",
            scenario.origin,
            scenario.machine.name,
            scenario.machine.units.len(),
            scenario.seed
        );
        print!("{table}");
        eprintln!("outputs in {}", out.path().display());
    }
    Ok(())
}
