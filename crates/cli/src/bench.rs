//! `hetsched bench ...`: benchmark programs (never timed tests).

use clap::{Args, Subcommand};
use hetsched_core::machine::UnitGranularity;
use hetsched_core::Result;
use hetsched_live::bench::Placement;
use hetsched_util::host::{thread_cpu_seconds, LoadAverage};
use std::time::Instant;

#[derive(Subcommand)]
pub enum Bench {
    /// The live daemon: alloc+free latency, in-slice re-request cost, throughput.
    Daemon(DaemonBench),
    /// Time loading a machine description (default: the 192-core hwloc XML).
    Topology(TopologyBench),
    /// MD5 words/s and trial divisions/s of the example apps, CPU and OpenCL.
    Apps(crate::app_cmd::AppsBench),
    /// The daemon under attack by another user's client: a well-behaved client's
    /// alloc+free p50/p99/max and the daemon's CPU, with each attack and without.
    Hostile(HostileBench),
    /// Simulator throughput: 1,000,000 tasks on a 1,024-unit machine under cfs and fcfs.
    Sim(SimBench),
    /// `hetsched simulate` beside its engine on one scenario: the engine alone, the
    /// metrics only (`--summary`) and the metrics with the per-task CSV, alternated.
    Simulate(SimulateBench),
    /// Simulated memory accesses per second of the tiled-NUCA simulator.
    Nuca(crate::nuca_cmd::NucaBenchArgs),
    /// O² delegation: round-trip p50/p99 and throughput.
    O2(crate::o2_cmd::BenchO2Args),
    /// Reuse-distance analysis (exact, sampled) and trace parsing throughput.
    Reuse(ReuseArgs),
    /// The simulator beside SimGrid (S4U) and SimPy on one bag of tasks, the same task
    /// stream for each: CPU per task, peak memory, and the outputs checked to agree.
    Peers(crate::peers_bench::PeersBench),
    /// Slowdown of each live trace source over native, profiling gzip on generated text.
    Profile(crate::profile_bench::ProfileBench),
}

pub fn run(which: Bench) -> Result<()> {
    match which {
        Bench::Topology(args) => topology(args),
        Bench::Daemon(args) => daemon(args),
        Bench::Hostile(args) => hostile(args),
        Bench::Apps(args) => crate::app_cmd::bench(args),
        Bench::Sim(args) => sim(args),
        Bench::Simulate(args) => simulate(args),
        Bench::Nuca(a) => crate::nuca_cmd::bench(a),
        Bench::O2(a) => crate::o2_cmd::bench_o2(a),
        Bench::Reuse(a) => reuse(a),
        Bench::Profile(a) => crate::profile_bench::run(a),
        Bench::Peers(a) => crate::peers_bench::run(a),
    }
}

#[derive(Args)]
pub struct DaemonBench {
    /// Alloc+free round trips timed for the latency figures (per placement).
    #[arg(long, default_value_t = 20_000)]
    round_trips: usize,
    /// Concurrent clients for the throughput figures.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Units the daemon arbitrates (virtual CPU units).
    #[arg(long, default_value_t = 16)]
    units: u32,
    /// Policy spec.
    #[arg(long, default_value = "fcfs")]
    policy: String,
    /// Measure only these placements (default: all three): `apart` (the daemon on the
    /// last CPU, the timed client on the first), `colocated` (all on the first CPU),
    /// `unpinned` (the kernel places them).
    #[arg(long, value_delimiter = ',', value_parser = Placement::NAMES)]
    placement: Vec<String>,
    /// Empty tasks per batch in the batched case (two requests each, at most 512);
    /// 0 leaves the batched case out.
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// Client processes of the batched case.
    #[arg(long, default_value_t = 2)]
    batch_clients: usize,
    /// Empty tasks each batched-case client runs.
    #[arg(long, default_value_t = 200_000)]
    batch_tasks: usize,
    /// Tasks of each of StarPU's overhead examples run beside (Debian's
    /// `starpu-examples`, if installed); 0 leaves StarPU out.
    #[arg(long, default_value_t = 20_000)]
    starpu_tasks: usize,
    /// Run as one batched-case client of the daemon at this socket (the bench starts
    /// its client processes so).
    #[arg(long, hide = true)]
    batch_client: Option<std::path::PathBuf>,
}

fn daemon(args: DaemonBench) -> Result<()> {
    let (tasks, batch) = (args.batch_tasks, args.batch);
    if let Some(socket) = &args.batch_client {
        return hetsched_live::bench::batch_client(socket, tasks, batch);
    }
    let exe = std::env::current_exe()
        .map_err(|e| hetsched_core::Error::runtime(format!("this program's path: {e}")))?;
    let batched = (batch > 0).then(|| hetsched_live::bench::BatchedOptions {
        clients: args.batch_clients,
        tasks,
        batch,
        command: Box::new(move |socket: &std::path::Path| {
            let mut c = std::process::Command::new(&exe);
            c.args(["bench", "daemon", "--batch-client"])
                .arg(socket)
                .args(["--batch", &batch.to_string()])
                .args(["--batch-tasks", &tasks.to_string()]);
            c
        }),
    });
    let report = hetsched_live::bench::run(&hetsched_live::bench::Options {
        round_trips: args.round_trips,
        clients: args.clients,
        units: args.units,
        policy: args.policy,
        // clap accepted only Placement::NAMES.
        placements: args
            .placement
            .iter()
            .filter_map(|p| Placement::parse(p))
            .collect(),
        batched,
    })?;
    print!("{report}");
    if args.starpu_tasks > 0 {
        crate::peers_bench::starpu_beside(&report, args.starpu_tasks);
    }
    Ok(())
}

#[derive(Args)]
pub struct HostileBench {
    /// The attacks to run, in order (`none` is the reference without an attacker).
    #[arg(long, value_delimiter = ',', value_parser = hetsched_live::hostile::Attack::NAMES,
          default_value = "none,threads,holder,flood,stats")]
    attack: Vec<String>,
    /// Seconds of timed round trips under each attack.
    #[arg(long, default_value_t = 5.0)]
    secs: f64,
    /// Threads of the attacker's process (the threads and holder attacks).
    #[arg(long, default_value_t = 8000)]
    threads: usize,
    /// Connections of the flood and stats attacks.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// The attacker's nice value: 10 measures what it costs others through the daemon;
    /// 0 adds what its busy threads take of the CPUs themselves.
    #[arg(long, default_value_t = 10, allow_hyphen_values = true,
          value_parser = clap::value_parser!(i32).range(-20..=19))]
    attacker_nice: i32,
    /// Run as the attacker against the daemon at this socket (the bench starts its
    /// attacker so).
    #[arg(long, hide = true)]
    attacker: Option<std::path::PathBuf>,
}

fn hostile(args: HostileBench) -> Result<()> {
    use hetsched_live::hostile::{self, Attack};
    // clap accepted only Attack::NAMES.
    let attacks: Vec<Attack> = args
        .attack
        .iter()
        .filter_map(|a| Attack::parse(a))
        .collect();
    if let Some(socket) = &args.attacker {
        return hostile::attacker(attacks[0], socket, args.threads, args.connections);
    }
    if !(0.1..=3600.0).contains(&args.secs) {
        return Err(hetsched_core::Error::range(
            "--secs", args.secs, 0.1, 3600.0,
        ));
    }
    let exe = std::env::current_exe()
        .map_err(|e| hetsched_core::Error::runtime(format!("this program's path: {e}")))?;
    let (threads, connections) = (args.threads, args.connections);
    let report = hostile::run(&hostile::Options {
        attacks,
        duration: std::time::Duration::from_secs_f64(args.secs),
        threads,
        connections,
        attacker_nice: args.attacker_nice,
        command: Box::new(move |socket: &std::path::Path, attack: Attack| {
            let mut c = std::process::Command::new(&exe);
            c.args(["bench", "hostile", "--attacker"])
                .arg(socket)
                .args(["--attack", attack.name()])
                .args(["--threads", &threads.to_string()])
                .args(["--connections", &connections.to_string()]);
            c
        }),
    })?;
    print!("{report}");
    Ok(())
}

#[derive(Args)]
pub struct TopologyBench {
    /// Machine to load (any `--machine` source).
    #[arg(long, default_value = "tests/data/topologies/xml/192em64t-24n8c2t.xml")]
    machine: String,
    /// Number of timed loads (after one warm-up load).
    #[arg(long, default_value_t = 20)]
    iterations: usize,
}

/// Milliseconds of each load, sorted.
fn time_loads(spec: &str, iterations: usize) -> Result<Vec<f64>> {
    hetsched_topology::load(spec, UnitGranularity::Pu)?;
    let mut ms = Vec::with_capacity(iterations);
    for _ in 0..iterations.max(1) {
        let start = Instant::now();
        let m = hetsched_topology::load(spec, UnitGranularity::Pu)?;
        ms.push(start.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(m);
    }
    ms.sort_by(f64::total_cmp);
    Ok(ms)
}

fn topology(args: TopologyBench) -> Result<()> {
    let ms = time_loads(&args.machine, args.iterations)?;
    let m = hetsched_topology::load(&args.machine, UnitGranularity::Pu)?;
    println!(
        "machine: {} ({} PUs, {} NUMA nodes)",
        args.machine,
        m.pus.len(),
        m.numa_nodes.len()
    );
    println!(
        "load + convert: min {:.2} ms, median {:.2} ms, max {:.2} ms over {} loads (goal: <= 50 ms)",
        ms[0],
        ms[ms.len() / 2],
        ms[ms.len() - 1],
        ms.len()
    );
    Ok(())
}

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
pub struct SimBench {
    #[command(flatten)]
    bag: BagArgs,
    /// Policies to time.
    #[arg(long = "policy", default_values_t = ["cfs".to_string(), "fcfs".to_string()])]
    policies: Vec<String>,
    /// Runs per policy; the fastest is reported (the machine is shared).
    #[arg(long, default_value_t = 3)]
    repeat: u32,
}

/// Peak resident memory of this process in KiB (Linux `VmHWM`), if readable.
pub(crate) fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU seconds (this thread's) and wall seconds `f` takes, and its result.
pub(crate) fn timed<T>(f: impl FnOnce() -> T) -> (f64, f64, T) {
    let start = Instant::now();
    let cpu0 = thread_cpu_seconds();
    let out = f();
    let wall = start.elapsed().as_secs_f64();
    let cpu = thread_cpu_seconds() - cpu0;
    (cpu, wall, out)
}

fn sim(args: SimBench) -> Result<()> {
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
                hetsched_sim::run_spec(
                    &machine,
                    spec,
                    1,
                    tasks(),
                    &hetsched_sim::Config::default(),
                    &mut counter,
                )
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
pub struct SimulateBench {
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

/// The 1-minute load average, if readable.
pub(crate) fn load_average() -> Option<f64> {
    LoadAverage::now().map(|l| l.0[0])
}

/// The best CPU time of a figure's runs and the range of the load average over them.
#[derive(Default)]
pub(crate) struct Figure {
    cpu: Option<f64>,
    load: Option<(f64, f64)>,
    /// Every run's CPU time, in order (for ratios round by round).
    runs: Vec<f64>,
}

impl Figure {
    /// Times one run of `f` (this thread's CPU), noting the load average after it.
    pub(crate) fn run<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let (cpu, _, out) = timed(f);
        self.add(cpu);
        out
    }

    /// A run that took `cpu` seconds (measured elsewhere: a child's own report), noting
    /// the load average now.
    pub(crate) fn add(&mut self, cpu: f64) {
        self.runs.push(cpu);
        self.cpu = Some(self.cpu.map_or(cpu, |c| c.min(cpu)));
        if let Some(l) = load_average() {
            self.load = Some(self.load.map_or((l, l), |(lo, hi)| (lo.min(l), hi.max(l))));
        }
    }

    pub(crate) fn cpu(&self) -> f64 {
        self.cpu.unwrap_or(f64::NAN)
    }

    /// The ratios of this figure's runs to `base`'s, run by run: median, least and
    /// largest. Why beside the ratio of the best runs: the host's speed drifts by 10 %
    /// and more over minutes here, and runs of one round are seconds apart.
    pub(crate) fn ratios_to(&self, base: &Figure) -> (f64, f64, f64) {
        let mut r: Vec<f64> = (self.runs.iter().zip(&base.runs))
            .map(|(a, b)| a / b)
            .collect();
        r.sort_by(f64::total_cmp);
        let n = r.len();
        match (r.first(), r.last()) {
            (Some(&lo), Some(&hi)) => ((r[(n - 1) / 2] + r[n / 2]) / 2.0, lo, hi),
            _ => (f64::NAN, f64::NAN, f64::NAN),
        }
    }

    pub(crate) fn load(&self) -> String {
        match self.load {
            Some((lo, hi)) if lo == hi => format!("load {lo:.2}"),
            Some((lo, hi)) => format!("load {lo:.2}-{hi:.2}"),
            None => "load ?".into(),
        }
    }
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
    let summary = hetsched_sim::run_into(scenario, spec, scenario.seed, on_task, &mut counter)?;
    Ok((summary, counter))
}

/// `hetsched simulate`'s CPU beside its engine's on the same scenario, in one process:
/// each round runs (a) the engine alone on the scenario's task stream with the counting
/// recorder, (b) what `simulate --summary` runs, (c) what `simulate` runs with the
/// per-task CSV (to a file in a private temporary directory, written as `simulate`
/// writes it), and `bench sim`'s default workload for
/// reference; each is the best of its rounds. (b) and (c) call the command's own
/// function ([`crate::simulate_cmd::run_streamed`]), and their outputs are checked
/// against each other and against (a)'s counts.
fn simulate(args: SimulateBench) -> Result<()> {
    use crate::simulate_cmd::run_streamed;
    use hetsched_core::record::EventCounter;
    use hetsched_core::Error;
    let scenario = hetsched_sim::scenario::Scenario::load(&args.scenario)?;
    scenario.check_limits()?;
    let spec = args.policy.as_str();
    hetsched_policies::build(spec, scenario.seed)
        .map_err(|e| Error::input(format!("--policy {spec:?}: {e}")))?;
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
                .map_err(|e| Error::runtime(format!("{}: {e}", csv_path.display())))?
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            Figure::run(&mut reference, || {
                hetsched_sim::run_spec(
                    &machine,
                    spec,
                    1,
                    bench_tasks(),
                    &hetsched_sim::Config::default(),
                    &mut EventCounter::default(),
                )
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

#[derive(Args)]
pub struct ReuseArgs {
    /// Block accesses in the synthetic trace.
    #[arg(long, default_value_t = 40_000_000)]
    accesses: usize,
    /// SHARDS sampling rate for the sampled analysis.
    #[arg(long, default_value_t = 0.01)]
    rate: f64,
    /// Size of the synthetic lackey text, MB.
    #[arg(long, default_value_t = 200)]
    lackey_mb: usize,
    /// Seed of the synthetic traces.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Timed runs of each analysis; the best rate is printed.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
}

fn reuse(a: ReuseArgs) -> Result<()> {
    use hetsched_sig::bench::*;
    use hetsched_sig::Mode;
    let blocks = synthetic_blocks(a.accesses, a.seed);
    let (exact, exact_rate) = best_analysis(&blocks, Mode::Exact, a.repeat);
    let (sampled, sampled_rate) = best_analysis(&blocks, Mode::Sampled(a.rate), a.repeat);
    println!(
        "trace: {} block accesses in memory, working set {} blocks",
        blocks.len(),
        exact.working_set_blocks
    );
    println!(
        "rates per CPU-second of this thread, best of {} runs (analysis: first access to \
         finished profile; parsing: whole text)",
        a.repeat.max(1)
    );
    println!(
        "exact analysis         {:>10.1} M accesses/s   (goal >= 20)",
        exact_rate / 1e6
    );
    println!(
        "sampled R={:<6}       {:>10.1} M accesses/s   (goal >= 200)",
        a.rate,
        sampled_rate / 1e6
    );
    println!(
        "sampled vs exact: max bucket-fraction error {:.4} (goal <= 0.01), working set {} vs {}",
        max_fraction_error(&exact, &sampled),
        sampled.working_set_blocks,
        exact.working_set_blocks
    );
    let text = synthetic_lackey(a.lackey_mb << 20, a.seed);
    let (mbs, events) = time_lackey(&text)?;
    println!("lackey text parsing    {mbs:>10.1} MB/s   (goal >= 100; {events} events)");
    let (bmbs, blen, _) = time_binary(&text)?;
    println!(
        "binary trace parsing   {bmbs:>10.1} MB/s   ({:.1}x smaller than the text)",
        text.len() as f64 / blen as f64
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Figure;

    fn figure(runs: &[f64]) -> Figure {
        let mut f = Figure::default();
        for &cpu in runs {
            f.add(cpu);
        }
        f
    }

    /// Ratios round by round: the median (of the two middle ones for an even count),
    /// the least and the largest, each run against the same round's base run.
    #[test]
    fn ratios_round_by_round_are_the_median_and_range() {
        let base = figure(&[1.0, 2.0, 1.0, 1.0]);
        let (median, lo, hi) = figure(&[1.5, 2.0, 1.2, 1.1]).ratios_to(&base);
        assert_eq!((lo, hi), (1.0, 1.5));
        assert!((median - 1.15).abs() < 1e-12, "{median}");
        let (median, lo, hi) = figure(&[3.0, 1.0, 2.0]).ratios_to(&figure(&[1.0; 3]));
        assert_eq!((median, lo, hi), (2.0, 1.0, 3.0));
        assert!(figure(&[]).ratios_to(&base).0.is_nan());
    }
}
