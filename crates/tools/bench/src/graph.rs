//! `hetsched bench graph`: the simulator on a task graph of 100,000 tasks beside SimGrid's
//! S4U activities with dependencies on the same graph (issue #43: such a graph simulates
//! in 2 s at most, at least 5 times as fast as SimGrid).
//!
//! The graph: StarPU's tiled Cholesky of 84 × 84 tiles of 960 (102,340 tasks) on INRIA's
//! idgraf (12 CPU cores, 8 CUDA GPUs), each task timed by the models StarPU measured there
//! (`scenarios/cholesky-idgraf.toml` at that size). Both simulators get the same input,
//! written once by hetsched ([`write_graph`]): each task's duration on each class of units
//! (units of one type and capacity), in the integer nanoseconds hetsched's speed model
//! gives it, and its predecessors. Copies are left out on both sides (the machine without
//! its links: SimGrid's network model is another model of them); a third line times
//! hetsched on the scenario itself, with idgraf's links.
//!
//! Both schedule eagerly (StarPU's `eager`, hetsched's `eager` and `fcfs`): one central
//! FIFO of ready tasks, a unit that completes a task takes the oldest ready one it can run,
//! a task that becomes ready goes to the lowest-numbered idle unit that can run it. SimGrid's
//! program (`peers/simgrid_graph.cpp`) makes an Exec activity of each task, adds its
//! dependencies with `add_successor`, learns what became ready from `Activity::on_veto`
//! and gives it a host; it takes simultaneous completions in hetsched's order (by end,
//! then by start), so the two make one schedule, and the bench checks that they do: the
//! same makespan and every task on the same unit at the same nanosecond (a hash of the
//! schedule), before it prints a ratio. Each reports the CPU time of its simulation alone:
//! SimGrid's from its parsed input (activities, dependencies, run), hetsched's from its
//! generated graph (dependencies derived from the data accesses, run).
//!
//! SimGrid's program runs twice a round: with every activity made before the run, as
//! SimGrid's DAG loaders make them, and with each made once all its predecessors started.
//! SimGrid 3.32 takes an ending activity out of a list of all those alive with
//! `std::list::remove`, so the first costs time quadratic in the tasks (tens of seconds
//! here); the second, SimGrid at its best, is the ratio to read.
//!
//! The rounds alternate the simulators (hetsched first in even rounds, SimGrid first in
//! odd ones) and the figures are their medians (the machine is shared and drifts); the
//! ratio is the median of the rounds' ratios.

use crate::peers::{number, run_peer, simgrid_program, Peer};
use crate::{load_average, options, peak_rss_kib, timed, Benchmark, Figure};
use clap::Args;
use hetsched_core::machine::{Machine, UnitType};
use hetsched_core::record::{EventCounter, EventKind, Record};
use hetsched_core::{Error, Result};
use hetsched_sim::graphs::GraphTasks;
use hetsched_sim::speed::SpeedModel;
use hetsched_sim::{Config, RunSummary, Simulation};
use hetsched_util::files::OutDir;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

pub(crate) const BENCHMARK: Benchmark = Benchmark {
    key: "graph",
    about: "The simulator on a 100,000-task graph (StarPU's Cholesky on idgraf) beside SimGrid's S4U activities with dependencies on the same graph: CPU, wall, peak memory, the schedules checked to agree",
    args: <Options as clap::Args>::augment_args,
    run: |m| run(options(m)?),
};

/// The policies SimGrid's program schedules as: StarPU's eager, which is fcfs.
const EAGER: [&str; 2] = ["eager", "fcfs"];

#[derive(Args)]
struct Options {
    /// The machine: a StarPU calibration (`starpu:HOST`), whose models time the tasks.
    #[arg(long, default_value = "starpu:idgraf")]
    machine: String,
    /// The graph: StarPU's tiled Cholesky or LU.
    #[arg(long, default_value = "cholesky", value_parser = ["cholesky", "lu"])]
    algorithm: String,
    /// Tiles a side (84: 102,340 Cholesky tasks).
    #[arg(long, default_value_t = 84)]
    tiles: u32,
    /// Elements a tile side (StarPU's calibrations time 320, 640 and 960).
    #[arg(long, default_value_t = 960)]
    tile: u32,
    /// hetsched's policy. SimGrid's program schedules as `eager` (= `fcfs`): beside
    /// another policy hetsched runs alone.
    #[arg(long, default_value = "eager")]
    policy: String,
    /// Rounds, each running every simulator once, alternated; medians are reported.
    #[arg(long, default_value_t = 3)]
    repeat: u32,
    /// SimGrid's programs to run beside hetsched: its activities made as the graph is
    /// reached (`simgrid-frontier`), all made before the run (`simgrid-upfront`), or
    /// `none` (default: both).
    #[arg(long, alias = "peers", value_delimiter = ',', value_parser = ["simgrid-frontier", "simgrid-upfront", "simgrid", "none"])]
    peer: Vec<String>,
    /// Where the shared graph file and the compiled SimGrid program go.
    #[arg(long, default_value = "hetsched-out/bench-graph")]
    out: PathBuf,
}

/// A graph and its tasks' models on a machine, as both simulators run it.
pub(crate) struct Bench<'a> {
    /// The machine as the scenario gives it (links included).
    pub(crate) machine: &'a Machine,
    pub(crate) tasks: &'a GraphTasks,
    pub(crate) config: &'a Config,
    pub(crate) policy: &'a str,
}

/// hetsched's schedule: its makespan and the hash SimGrid's program prints of its own.
#[derive(Debug, PartialEq)]
pub(crate) struct Schedule {
    pub(crate) completed: u64,
    pub(crate) makespan_ns: u64,
    pub(crate) hash: u64,
}

/// What SimGrid's program reported of one run.
struct PeerRun {
    version: String,
    completed: u64,
    makespan_s: f64,
    hash: u64,
    cpu_s: f64,
    wall_s: f64,
    peak_rss_kib: Option<u64>,
}

impl Bench<'_> {
    /// The machine without its links: copies cost nothing, as in SimGrid's program.
    pub(crate) fn without_links(&self) -> Machine {
        let mut m = self.machine.clone();
        for a in &mut m.accelerators {
            a.link_bandwidth_bytes_per_s = None;
            a.link_latency_s = None;
        }
        m
    }

    /// One run on `machine`, counting events only: what is timed.
    fn run(&self, machine: &Machine) -> Result<RunSummary> {
        Simulation::graph(machine, self.tasks, self.config).run_spec(
            self.policy,
            1,
            &mut EventCounter::default(),
        )
    }

    /// One run without links, every event kept: the schedule, checked against the
    /// durations written for SimGrid (`durations[task][class]`, `class_of[unit]`).
    pub(crate) fn schedule(&self, durations: &[Vec<u64>], class_of: &[usize]) -> Result<Schedule> {
        let free = self.without_links();
        let (record, summary): (Record, RunSummary) =
            Simulation::graph(&free, self.tasks, self.config).record_spec(self.policy, 1)?;
        let n = durations.len();
        let mut start: Vec<Option<(u32, u64)>> = vec![None; n];
        for e in &record.events {
            let t = e.task as usize;
            match e.kind {
                EventKind::Start { .. } if t < n && start[t].is_some() => {
                    return Err(Error::runtime(format!(
                        "bench graph: task {t} started twice (a graph task runs once)"
                    )));
                }
                EventKind::Start { unit, .. } if t < n => start[t] = Some((unit, e.t_ns)),
                EventKind::Complete { unit } if t < n => {
                    let took = start[t].map(|(_, s)| e.t_ns - s);
                    let written = durations[t][class_of[unit as usize]];
                    if took != Some(written) {
                        return Err(Error::runtime(format!(
                            "bench graph: task {t} took {took:?} ns on unit {unit}, the graph file says {written} ns: the file is not what the engine runs"
                        )));
                    }
                }
                _ => {}
            }
        }
        let mut h = Fnv::default();
        for (t, s) in start.iter().enumerate() {
            let (unit, at) =
                s.ok_or_else(|| Error::runtime(format!("bench graph: task {t} never started")))?;
            h.mix(u64::from(unit));
            h.mix(at);
        }
        Ok(Schedule {
            completed: summary.completed,
            makespan_ns: summary.end_ns,
            hash: h.0,
        })
    }
}

/// FNV-1a 64 over little-endian words, as SimGrid's program hashes its schedule.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn mix(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// The units' classes (one per unit type and capacity: units of a class time a task
/// alike), each unit's class, and each task's duration on each class in the engine's
/// integer nanoseconds (0: no implementation there).
pub(crate) fn durations(
    machine: &Machine,
    tasks: &GraphTasks,
) -> Result<(Vec<Vec<u64>>, Vec<usize>)> {
    let mut firsts: Vec<usize> = Vec::new();
    let mut keys: Vec<(UnitType, u32)> = Vec::new();
    let class_of: Vec<usize> = (machine.units.iter().enumerate())
        .map(|(i, u)| {
            let key = (u.kind, u.capacity);
            keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                keys.push(key);
                firsts.push(i);
                keys.len() - 1
            })
        })
        .collect();
    let speed = SpeedModel::new(machine);
    let n = tasks.graph().tasks.len();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let t = tasks.task(i as u32, 0);
        let work = t.model.work_ns();
        let row = (firsts.iter())
            .map(|&u| {
                let factor = speed.ns_per_work_s(&t, u as u32) * 1e-9;
                match factor.is_finite() {
                    true => SpeedModel::compute_ns(work, factor).max(1),
                    false => 0,
                }
            })
            .collect();
        out.push(row);
    }
    Ok((out, class_of))
}

/// The graph file both simulators read (see `peers/simgrid_graph.cpp`).
pub(crate) fn write_graph(
    out: &OutDir,
    name: &str,
    tasks: &GraphTasks,
    durations: &[Vec<u64>],
    class_of: &[usize],
) -> Result<PathBuf> {
    let deps = tasks.graph().dependencies()?;
    let classes = durations.first().map_or(1, Vec::len);
    let mut w = std::io::BufWriter::new(out.file(name)?);
    let mut text = format!(
        "hetsched-graph 1\nclasses {classes}\nunits {}\n",
        class_of.len()
    );
    let units: Vec<String> = class_of.iter().map(usize::to_string).collect();
    text += &units.join(" ");
    text += &format!("\ntasks {}\n", durations.len());
    let err = |w: &std::io::BufWriter<hetsched_util::files::OutFile>, e| w.get_ref().error(e);
    w.write_all(text.as_bytes()).map_err(|e| err(&w, e))?;
    for (t, row) in durations.iter().enumerate() {
        let mut line = String::with_capacity(64);
        for d in row {
            line += &format!("{d} ");
        }
        let preds = deps.of(t);
        line += &preds.len().to_string();
        for p in preds {
            line += &format!(" {p}");
        }
        line.push('\n');
        w.write_all(line.as_bytes()).map_err(|e| err(&w, e))?;
    }
    let f = w
        .into_inner()
        .map_err(|e| Error::runtime(format!("{name}: {}", e.error())))?;
    f.finish()
}

/// SimGrid's program for graphs, built into `out` at first use.
pub(crate) fn simgrid(out: &OutDir) -> Peer {
    simgrid_program(
        out,
        "simgrid_graph",
        include_str!("peers/simgrid_graph.cpp"),
    )
}

/// How SimGrid's program makes its activities.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Made {
    /// Each once all its predecessors started (so that they all exist): the activities
    /// alive are the graph's frontier.
    Frontier,
    /// All before the run, as SimGrid's DAG loaders (`create_DAG_from_dot`, `_DAX`) do.
    Upfront,
}

impl Made {
    fn label(self) -> &'static str {
        match self {
            Made::Frontier => "activities as reached",
            Made::Upfront => "activities up front",
        }
    }
}

fn run_simgrid(peer: &Peer, graph: &Path, made: Made) -> Result<PeerRun> {
    let Ok(command) = &peer.command else {
        return Err(Error::runtime(
            "bench graph: SimGrid's program is not built",
        ));
    };
    let mut c = std::process::Command::new(command.get_program());
    c.arg(graph);
    if made == Made::Frontier {
        c.arg("frontier");
    }
    let (fields, cpu_s) = run_peer(&peer.name, &mut c)?;
    parse_peer(&peer.name, &fields, cpu_s)
}

fn parse_peer(name: &str, fields: &HashMap<String, String>, cpu_s: f64) -> Result<PeerRun> {
    let hash = fields
        .get("schedule_hash")
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .ok_or_else(|| Error::runtime(format!("{name}: its report has no schedule_hash=")))?;
    Ok(PeerRun {
        version: fields.get("version").cloned().unwrap_or_default(),
        completed: number(name, fields, "completed")? as u64,
        makespan_s: number(name, fields, "makespan_s")?,
        hash,
        cpu_s,
        wall_s: number(name, fields, "wall_s")?,
        peak_rss_kib: fields.get("peak_rss_kib").and_then(|v| v.parse().ok()),
    })
}

/// Whether SimGrid's schedule is hetsched's: the same tasks completed, every task on the
/// same unit from the same nanosecond (the hash), and the makespan within a
/// nanosecond (SimGrid's clock is a double of seconds).
pub(crate) fn agrees(ours: &Schedule, completed: u64, makespan_s: f64, hash: u64) -> bool {
    let theirs_ns = makespan_s * 1e9;
    ours.completed == completed
        && ours.hash == hash
        && (theirs_ns - ours.makespan_ns as f64).abs() <= 1.0
}

/// The median of `v` (of the two middle values for an even count).
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n => (s[(n - 1) / 2] + s[n / 2]) / 2.0,
    }
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or("?".into(), |k| format!("{:.0} MiB", k as f64 / 1024.0))
}

fn run(a: Options) -> Result<()> {
    let out = OutDir::create(&a.out)?;
    let repeat = a.repeat.max(1) as usize;
    let text = format!(
        "machine = {:?}\npolicies = [{:?}]\n[graph]\nalgorithm = {:?}\ntiles = {}\ntile = {}\n",
        a.machine, a.policy, a.algorithm, a.tiles, a.tile
    );
    let (generating, generating_wall, scenario) = timed(|| {
        hetsched_sim::scenario::Scenario::parse(&text, "bench graph", "bench-graph", Path::new("."))
    });
    let scenario = scenario?;
    let Some(tasks) = scenario.graph.as_deref() else {
        return Err(Error::runtime("bench graph: the scenario has no graph"));
    };
    let machine = &scenario.machine;
    let bench = Bench {
        machine,
        tasks,
        config: &scenario.config,
        policy: &a.policy,
    };
    let free = bench.without_links();
    let (durations, class_of) = durations(machine, tasks)?;
    let path = write_graph(&out, "graph.txt", tasks, &durations, &class_of)?;
    let deps = tasks.graph().dependencies()?;
    let kinds = |k: UnitType| machine.units.iter().filter(|u| u.kind == k).count();
    let unit_types: Vec<String> = (UnitType::ALL.iter())
        .filter(|&&k| kinds(k) > 0)
        .map(|&k| format!("{} {}", kinds(k), k.name()))
        .collect();
    println!(
        "graph: StarPU's {} of {} x {} tiles of {} on {} ({} units: {}): {} tasks, {} dependencies, critical path {} tasks; generated with its models in {generating:.3} s CPU, {generating_wall:.3} s wall (not timed below)",
        a.algorithm,
        a.tiles,
        a.tiles,
        a.tile,
        a.machine,
        machine.units.len(),
        unit_types.join(", "),
        durations.len(),
        deps.edges(),
        deps.critical_path(),
    );
    println!(
        "shared input: {} (each task's duration on each of {} classes of units, in hetsched's integer nanoseconds, and its predecessors); copies left out (the machine without its links)",
        path.display(),
        durations.first().map_or(0, Vec::len)
    );

    let chosen = |m: &str| {
        a.peer.is_empty()
            || a.peer
                .iter()
                .any(|p| p == m || (p == "simgrid" && m.starts_with("simgrid")))
    };
    let mut modes: Vec<Made> = Vec::new();
    if chosen("simgrid-frontier") {
        modes.push(Made::Frontier);
    }
    if chosen("simgrid-upfront") {
        modes.push(Made::Upfront);
    }
    let peer = match (modes.is_empty(), EAGER.contains(&a.policy.as_str())) {
        (true, _) => None,
        (false, false) => {
            println!(
                "SimGrid (S4U) not run: its program schedules as eager (= fcfs) only, not {}",
                a.policy
            );
            None
        }
        (false, true) => {
            let p = simgrid(&out);
            match &p.command {
                Err(why) => {
                    println!("{} not run here: {why}", p.name);
                    None
                }
                Ok(_) => Some(p),
            }
        }
    };
    if peer.is_none() {
        modes.clear();
    }
    println!(
        "policy {}: one central FIFO of ready tasks, a unit that completes a task takes the oldest ready one it can run, a ready task goes to the lowest-numbered idle unit that can run it{}",
        a.policy,
        if peer.is_some() {
            "; SimGrid: an Exec activity per task, dependencies by add_successor, ready tasks learnt from on_veto and given a host by the same rule, simultaneous completions in hetsched's order"
        } else {
            ""
        }
    );
    println!(
        "{repeat} rounds, {}; medians; CPU of each simulation alone (SimGrid's input read before, hetsched's graph generated before)",
        if peer.is_some() {
            "hetsched and SimGrid alternated"
        } else {
            "hetsched alone"
        }
    );

    let mut ours = Timing::default();
    let mut linked = Timing::default();
    let mut theirs: Vec<Timing> = modes.iter().map(|_| Timing::default()).collect();
    let mut peer_runs: Vec<Option<PeerRun>> = modes.iter().map(|_| None).collect();
    let (mut summary, mut linked_summary): (Option<RunSummary>, Option<RunSummary>) = (None, None);
    for round in 0..repeat {
        // hetsched first in even rounds, last in odd ones.
        let mut order: Vec<Option<usize>> = std::iter::once(None)
            .chain((0..modes.len()).map(Some))
            .collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for step in order {
            match (step, &peer) {
                (None, _) => {
                    let (cpu, wall, s) = timed(|| bench.run(&free));
                    let s = s?;
                    if summary.as_ref().is_some_and(|p| p != &s) {
                        return Err(Error::runtime(
                            "bench graph: two runs of hetsched differ (the engine must be deterministic)",
                        ));
                    }
                    summary = Some(s);
                    ours.add(cpu, wall);
                }
                (Some(i), Some(p)) => {
                    let r = run_simgrid(p, &path, modes[i])?;
                    theirs[i].add(r.cpu_s, r.wall_s);
                    peer_runs[i] = Some(r);
                }
                (Some(_), None) => unreachable!("modes without a peer"),
            }
        }
        let (cpu, wall, s) = timed(|| bench.run(machine));
        linked.add(cpu, wall);
        linked_summary = Some(s?);
    }
    let ours_rss = peak_rss_kib();
    let summary = summary.expect("one round at least");
    let linked_summary = linked_summary.expect("one round at least");

    let row = |what: &str, t: &Timing, rss: String, makespan_s: f64, tail: String| {
        println!(
            "{what:<46} {:>7.3} s CPU {:>7.3} s wall  peak RSS {rss:>8}  makespan {makespan_s:.9} s  {tail}({})",
            median(&t.cpu.runs),
            median(&t.wall),
            t.cpu.load(),
        );
    };
    row(
        &format!("hetsched {}, no copies", a.policy),
        &ours,
        mib(ours_rss),
        summary.end_ns as f64 * 1e-9,
        String::new(),
    );
    for (i, made) in modes.iter().enumerate() {
        let (Some(r), t) = (&peer_runs[i], &theirs[i]) else {
            continue;
        };
        let (ratio, lo, hi) = t.cpu.ratios_to(&ours.cpu);
        let wall_ratio = median(&t.wall) / median(&ours.wall);
        row(
            &format!("SimGrid (S4U) {}, {}", r.version, made.label()),
            t,
            mib(r.peak_rss_kib),
            r.makespan_s,
            format!("hetsched {ratio:.1}x faster in CPU (rounds {lo:.1}-{hi:.1}), {wall_ratio:.1}x in wall  "),
        );
    }
    row(
        &format!("hetsched {}, {}'s links", a.policy, a.machine),
        &linked,
        String::new(),
        linked_summary.end_ns as f64 * 1e-9,
        format!(
            "{} copies, {:.1} GB: the scenario as `hetsched simulate` runs it  ",
            linked_summary.traffic.copies,
            linked_summary.traffic.bytes as f64 * 1e-9
        ),
    );
    println!(
        "hetsched's peak RSS is this process's (the graph, its models and the file generated, the runs); SimGrid's its program's, its input read; load now {}",
        load_average().map_or("?".into(), |l| format!("{l:.2}"))
    );
    if peer_runs.iter().all(Option::is_none) {
        return Ok(());
    }
    let schedule = bench.schedule(&durations, &class_of)?;
    for (made, r) in modes.iter().zip(&peer_runs) {
        let Some(r) = r else { continue };
        if !agrees(&schedule, r.completed, r.makespan_s, r.hash) {
            return Err(Error::runtime(format!(
                "bench graph: SimGrid's schedule ({}) is not hetsched's: completed {} / {}, makespan {:.9} s / {:.9} s, schedule hash {:016x} / {:016x}",
                made.label(),
                r.completed,
                schedule.completed,
                r.makespan_s,
                schedule.makespan_ns as f64 * 1e-9,
                r.hash,
                schedule.hash
            )));
        }
    }
    println!(
        "outputs agree: every simulator completed {} tasks with one schedule (every task on the same unit from the same nanosecond, hash {:016x}) and makespan {:.9} s (SimGrid's clock within a nanosecond)",
        schedule.completed,
        schedule.hash,
        schedule.makespan_ns as f64 * 1e-9
    );
    Ok(())
}

/// A simulator's runs: CPU (with the load average) and wall, in order.
#[derive(Default)]
struct Timing {
    cpu: Figure,
    wall: Vec<f64>,
}

impl Timing {
    fn add(&mut self, cpu: f64, wall: f64) {
        self.cpu.add(cpu);
        self.wall.push(wall);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsched_core::machine::CAPACITY_SCALE;
    use hetsched_core::perf_model::{Arch, History, PerfModels};
    use hetsched_sim::graphs::{cholesky, Durations, Precision, Tiled};
    use std::sync::Arc;

    /// A fast and a slow CPU and two GPUs, without links; Cholesky's kernels timed so
    /// that many tasks end at one instant (equal durations), where the order of
    /// simultaneous completions decides the schedule.
    fn small() -> (Machine, GraphTasks) {
        let machine = hetsched_sim::machine_from_toml(
            "name = \"t\"\n[[cpu_kind]]\nname = \"slow\"\ncapacity = 512\n[[cpu_kind]]\nname = \"fast\"\ncapacity = 1024\n[[package]]\ncores = 2\nkind = [\"fast\", \"slow\"]\n[[accelerator]]\ntype = \"gpu\"\nname = \"g0\"\n[[accelerator]]\ntype = \"gpu\"\nname = \"g1\"\n",
            "t.toml",
        )
        .unwrap();
        let graph = cholesky(&Tiled {
            tiles: 7,
            tile: 960,
            precision: Precision::Single,
        })
        .unwrap();
        let mut models = PerfModels::default();
        let mut seen = std::collections::HashSet::new();
        for t in &graph.tasks {
            if !seen.insert((t.kernel.clone(), t.footprint)) {
                continue;
            }
            let (cpu_ms, gpu_ms) = match &*t.kernel {
                "chol_model_11" => (2.0, 4.0),
                "chol_model_21" => (3.0, 1.0),
                _ => (6.0, 1.0),
            };
            for (kind, ms) in [(UnitType::Cpu, cpu_ms), (UnitType::Gpu, gpu_ms)] {
                let arch = Arch {
                    unit_type: kind,
                    capacity: CAPACITY_SCALE,
                    footprint: t.footprint,
                };
                let h = History::from_stats(10, ms * 1e-3, 0.0).unwrap();
                models.pool(&t.kernel, arch, &h);
            }
        }
        let tasks = GraphTasks::new(Arc::new(graph), &machine, &models, Durations::Mean).unwrap();
        (machine, tasks)
    }

    #[test]
    fn the_durations_written_are_the_engines_and_the_schedule_hashes_alike() {
        let (machine, tasks) = small();
        let config = Config::default();
        let bench = Bench {
            machine: &machine,
            tasks: &tasks,
            config: &config,
            policy: "eager",
        };
        let (durations, class_of) = durations(&machine, &tasks).unwrap();
        // Three classes: the fast CPU, the slow one (twice the time), the GPUs.
        assert_eq!(class_of, vec![0, 1, 2, 2]);
        assert_eq!(durations[0], vec![2_000_000, 4_000_000, 4_000_000]);
        // `schedule` checks every task's time against the file.
        let s = bench.schedule(&durations, &class_of).unwrap();
        assert_eq!(s.completed, 84);
        let fcfs = Bench {
            policy: "fcfs",
            ..bench
        };
        assert_eq!(fcfs.schedule(&durations, &class_of).unwrap(), s);
    }

    /// SimGrid's program makes hetsched's schedule: skipped, saying why, where it cannot
    /// be built (no C++ compiler or no libsimgrid-dev).
    #[test]
    fn simgrid_makes_hetscheds_schedule_on_a_small_cholesky() {
        let (machine, tasks) = small();
        let config = Config::default();
        let bench = Bench {
            machine: &machine,
            tasks: &tasks,
            config: &config,
            policy: "eager",
        };
        let dir = tempfile::tempdir().unwrap();
        let out = OutDir::create(dir.path()).unwrap();
        let peer = simgrid(&out);
        if let Err(why) = &peer.command {
            println!("skipped: SimGrid's program: {why}");
            return;
        }
        let (durations, class_of) = durations(&machine, &tasks).unwrap();
        let path = write_graph(&out, "graph.txt", &tasks, &durations, &class_of).unwrap();
        let ours = bench.schedule(&durations, &class_of).unwrap();
        for made in [Made::Frontier, Made::Upfront] {
            let r = run_simgrid(&peer, &path, made).unwrap();
            assert!(r.version.starts_with("3."), "{}", r.version);
            assert!(
                agrees(&ours, r.completed, r.makespan_s, r.hash),
                "SimGrid, {}: {} tasks, {} s, {:016x}; hetsched: {ours:?}",
                made.label(),
                r.completed,
                r.makespan_s,
                r.hash
            );
        }
        let r = run_simgrid(&peer, &path, Made::Frontier).unwrap();
        // A schedule that differs is told apart.
        assert!(!agrees(&ours, r.completed, r.makespan_s, r.hash ^ 1));
        assert!(!agrees(&ours, r.completed, r.makespan_s + 2e-9, r.hash));
    }
}
