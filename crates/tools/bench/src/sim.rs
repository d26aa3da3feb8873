//! `hetsched bench sim` (the engine's throughput on a million-task bag) and `bench
//! simulate` (`hetsched simulate` beside its engine on one scenario).

use crate::{options, peak_rss_kib, timed, Benchmark, Figure};
use clap::Args;
use hetsched_core::Result;
use hetsched_util::PathContext;

pub(crate) const SIM: Benchmark = Benchmark {
    key: "sim",
    about: "Simulator throughput: 1,000,000 tasks on a 1,024-unit machine under cfs and fcfs",
    args: <Sim as clap::Args>::augment_args,
    run: |m| sim(options(m)?),
};

pub(crate) const SIMULATE: Benchmark = Benchmark {
    key: "simulate",
    about: "`hetsched simulate` beside its engine on one scenario: the engine alone, the metrics only (`--summary`) and the metrics with the per-task CSV, alternated",
    args: <Simulate as clap::Args>::augment_args,
    run: |m| simulate(options(m)?),
};

/// `bench sim`'s workload, which `bench peers` runs too: a bag of independent tasks of
/// exponential work arriving as a Poisson stream on `packages × cores` equal units.
#[derive(Args)]
pub(crate) struct BagArgs {
    /// Tasks to simulate.
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) tasks: u64,
    /// Packages of the generated machine.
    #[arg(long, default_value_t = 64)]
    pub(crate) packages: u32,
    /// Cores per package.
    #[arg(long, default_value_t = 16)]
    pub(crate) cores: u32,
    /// Mean task work in reference seconds (exponential sizes).
    #[arg(long, default_value_t = 0.01)]
    pub(crate) mean_work: f64,
    /// Offered load as a fraction of the machine's capacity (Poisson arrivals).
    #[arg(long, default_value_t = 0.9)]
    pub(crate) load: f64,
}

impl BagArgs {
    /// The generated machine; absurd values are refused naming the flag and the range.
    pub(crate) fn machine(&self) -> Result<hetsched_core::machine::Machine> {
        for (flag, v) in [("--mean-work", self.mean_work), ("--load", self.load)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(hetsched_core::Error::input(format!(
                    "{flag} {v}: a finite number > 0 is accepted"
                )));
            }
        }
        if self.packages == 0 || self.cores == 0 {
            return Err(hetsched_core::Error::input(
                "--packages and --cores: at least 1 each",
            ));
        }
        hetsched_sim::bench::machine(self.packages, self.cores)
    }

    /// The task stream (seed 1) on `units` units, drawn as it is read.
    pub(crate) fn stream(&self, units: usize) -> impl Iterator<Item = hetsched_sim::SimTask> {
        hetsched_sim::bench::tasks(self.tasks, units, self.mean_work, self.load, 1)
    }
}

#[derive(Args)]
struct Sim {
    #[command(flatten)]
    bag: BagArgs,
    /// Policies to time.
    #[arg(long = "policy", default_values_t = ["cfs".to_string(), "fcfs".to_string()])]
    policies: Vec<String>,
    /// Runs per policy; the fastest is reported (the machine is shared).
    #[arg(long, default_value_t = 3)]
    repeat: u32,
}

fn sim(args: Sim) -> Result<()> {
    let bag = &args.bag;
    let machine = bag.machine()?;
    let units = machine.units.len();
    let tasks = || bag.stream(units);
    println!(
        "machine: {} x {} = {units} units; {} tasks, exponential work mean {} s, load {}; best of {} runs",
        bag.packages, bag.cores, bag.tasks, bag.mean_work, bag.load, args.repeat
    );
    for spec in &args.policies {
        let mut best: Option<(f64, f64)> = None;
        let mut result = None;
        for _ in 0..args.repeat.max(1) {
            let mut counter = hetsched_core::record::EventCounter::default();
            let (cpu, wall, summary) = timed(|| {
                hetsched_sim::Simulation::new(&machine, tasks(), &hetsched_sim::Config::default())
                    .run_spec(spec, 1, &mut counter)
            });
            let summary = summary?;
            if result
                .as_ref()
                .is_some_and(|r| r != &(summary.clone(), counter.events))
            {
                return Err(hetsched_core::Error::runtime(format!(
                    "bench sim: two runs of {spec} differ (the engine must be deterministic)"
                )));
            }
            result = Some((summary, counter.events));
            best = Some(best.map_or((cpu, wall), |(c, w)| (c.min(cpu), w.min(wall))));
        }
        let ((cpu, wall), (summary, record_events)) = (best.unwrap(), result.unwrap());
        println!(
            "{spec:<6} {:>6.2} s wall, {:>6.2} s CPU, {:>9} engine events ({:>5.2} M/s per CPU s), {:>9} record events ({:>5.2} M/s), simulated {:.1} s, completed {}, peak live tasks {}, peak RSS {} MiB",
            wall,
            cpu,
            summary.events,
            summary.events as f64 / cpu / 1e6,
            record_events,
            record_events as f64 / cpu / 1e6,
            summary.end_ns as f64 * 1e-9,
            summary.completed,
            summary.peak_live,
            peak_rss_kib().map_or("?".into(), |k| (k / 1024).to_string()),
        );
    }
    // The task stream is generated lazily inside each run; its own cost, for reference.
    let (gen_cpu, _, work) = timed(|| tasks().map(|t| t.model.work_s).sum::<f64>());
    std::hint::black_box(work);
    println!(
        "of which generating the {} tasks alone: {gen_cpu:.2} s CPU",
        bag.tasks
    );
    println!("goal: >= 10 M events/s on one core and <= 5 s per 1,000,000-task run");
    Ok(())
}

#[derive(Args)]
struct Simulate {
    /// Scenario file (default: `bench sim`'s workload as a scenario).
    #[arg(default_value = "scenarios/bench/bag1m.toml")]
    scenario: std::path::PathBuf,
    /// Policy spec (one).
    #[arg(long, default_value = "fcfs")]
    policy: String,
    /// Rounds; each figure is the best of its runs (the machine is shared).
    #[arg(long, default_value_t = 3)]
    repeat: u32,
    /// Tasks of the `bench sim` reference run (its default workload otherwise).
    #[arg(long, default_value_t = 1_000_000)]
    bench_tasks: u64,
}

/// The engine alone on a scenario's task stream, with the counting recorder: what
/// `hetsched simulate` runs, less its outputs. Out of line, as `run_streamed` is (inlined
/// into the bench's loop, the engine was compiled otherwise and measured 40 % slower).
#[inline(never)]
fn engine_alone(
    scenario: &hetsched_sim::scenario::Scenario,
    spec: &str,
    on_task: &mut dyn FnMut(&hetsched_sim::SimTask),
) -> Result<(
    hetsched_sim::RunSummary,
    hetsched_core::record::EventCounter,
)> {
    let mut counter = hetsched_core::record::EventCounter::default();
    let summary = hetsched_sim::Simulation::of(scenario)
        .on_task(on_task)
        .run_spec(spec, scenario.seed, &mut counter)?;
    Ok((summary, counter))
}

/// `hetsched simulate`'s CPU beside its engine's on the same scenario, in one process:
/// each round runs (a) the engine alone on the scenario's task stream with the counting
/// recorder, (b) what `simulate --summary` runs, (c) what `simulate` runs with the
/// per-task CSV (to a file in a private temporary directory, written as `simulate`
/// writes it), and `bench sim`'s default workload for
/// reference; each is the best of its rounds. (b) and (c) call the command's own
/// function ([`hetsched_sim::stream::run_streamed`]), and their outputs are checked
/// against each other and against (a)'s counts.
fn simulate(args: Simulate) -> Result<()> {
    use hetsched_core::record::EventCounter;
    use hetsched_core::Error;
    use hetsched_sim::stream::run_streamed;
    let scenario = hetsched_sim::scenario::Scenario::load(&args.scenario)?;
    scenario.check_limits()?;
    let spec = args.policy.as_str();
    hetsched_policies::check(spec).map_err(|e| Error::input(format!("--policy {spec:?}: {e}")))?;
    let work = tempfile::Builder::new()
        .prefix("hetsched-bench-simulate-")
        .tempdir()
        .map_err(|e| Error::runtime(format!("cannot make a temporary directory: {e}")))?;
    let work_dir = hetsched_util::files::OutDir::create(work.path())?;
    let machine = hetsched_sim::bench::machine(64, 16)?;
    let bench_tasks =
        || hetsched_sim::bench::tasks(args.bench_tasks, machine.units.len(), 0.01, 0.9, 1);
    let (mut engine, mut summary, mut csv, mut reference) = Default::default();
    let mut outputs = None;
    let no_progress = &mut |_: &hetsched_sim::SimTask| {};
    let result = (|| -> Result<()> {
        for _ in 0..args.repeat.max(1) {
            let (ran, counter) =
                Figure::run(&mut engine, || engine_alone(&scenario, spec, no_progress))?;
            let summarised = Figure::run(&mut summary, || {
                run_streamed::<std::fs::File>(&scenario, spec, None, no_progress)
            })?;
            let mut file = work_dir.file("tasks.csv")?;
            let name = file.path().display().to_string();
            let with_csv = Figure::run(&mut csv, || {
                run_streamed(&scenario, spec, Some((&mut file, name)), no_progress)
            })?;
            let csv_path = file.finish()?;
            let lines = std::fs::read(&csv_path)
                .at(&csv_path)?
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            Figure::run(&mut reference, || {
                hetsched_sim::Simulation::new(
                    &machine,
                    bench_tasks(),
                    &hetsched_sim::Config::default(),
                )
                .run_spec(spec, 1, &mut EventCounter::default())
            })?;
            // The outputs agree (Debug text: NaN equals itself there): one run's metrics
            // and summary with and without the CSV, a line per task, the engine's own
            // summary and counts, and every round alike.
            let m = &summarised.0;
            let counts = (counter.completed, counter.rejected);
            let this = format!("{summarised:?}");
            if this != format!("{with_csv:?}")
                || ran != summarised.1
                || lines != m.tasks + 1
                || (m.completed as u64, m.rejected as u64) != counts
                || outputs.as_ref().is_some_and(|(o, _)| o != &this)
            {
                return Err(Error::runtime(format!(
                    "bench simulate: the runs of {spec} disagree (with and without the CSV, \
                     {lines} CSV lines for {} tasks, completed and rejected {:?} against \
                     the engine's {counts:?}, or two rounds)",
                    m.tasks,
                    (m.completed, m.rejected)
                )));
            }
            outputs = Some((this, summarised));
        }
        Ok(())
    })();
    drop(work);
    result?;
    let (_, (m, ran)) = outputs.expect("one round at least");
    println!(
        "scenario {} on {} ({} units), policy {spec}: {} tasks ({} completed, {} rejected), {} engine events; best of {} rounds, CPU of this thread",
        scenario.origin,
        scenario.machine.name,
        scenario.machine.units.len(),
        m.tasks,
        m.completed,
        m.rejected,
        ran.events,
        args.repeat.max(1)
    );
    println!("outputs agree: the same metrics with and without the CSV, one CSV line per task");
    println!(
        "reference: bench sim --policy {spec} --tasks {} (its own task stream) {:>7.3} s CPU ({})",
        args.bench_tasks,
        reference.cpu(),
        reference.load()
    );
    let (base, bench) = (engine.cpu(), reference.cpu());
    let rows = [
        ("(a) engine alone, counting recorder", &engine, None),
        ("(b) simulate --summary", &summary, Some("1.2")),
        ("(c) simulate, CSV on", &csv, Some("2")),
    ];
    for (what, figure, goal) in rows {
        let ratio = goal.map_or(String::new(), |goal| {
            let (median, lo, hi) = figure.ratios_to(&engine);
            format!(
                "  {:.2}x (a), goal <= {goal}x (round by round: median {median:.2}x, {lo:.2}-{hi:.2}x); {:.2}x the reference",
                figure.cpu() / base,
                figure.cpu() / bench
            )
        });
        println!(
            "{what:<36} {:>7.3} s CPU ({}){ratio}",
            figure.cpu(),
            figure.load()
        );
    }
    Ok(())
}
