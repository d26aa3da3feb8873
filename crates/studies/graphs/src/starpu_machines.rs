//! `hetsched experiment starpu-machines`: StarPU's tiled Cholesky and LU
//! (`hetsched_sim::graphs`) of growing size on each machine INRIA calibrated for StarPU
//! (`starpu:HOST`, Debian's `starpu-examples`), each task timed by that machine's own
//! models, under the policies a StarPU user picks from (`eager`, `dmda`, `dmdas`, `lws`,
//! `random`) and `heft`; each run's GFlop/s against the graph's lower bound
//! (`hetsched_sim::graphs::bound`).
//!
//! - **Machines.** attila, hannibal, idgraf, mirage and sirocco: the five calibrations
//!   Debian ships. `hannibal-pitch` is hannibal's calibration again (the same bus
//!   matrices and models; only the SimGrid platform files, which are not read, differ),
//!   so it is not a default; `--machine` takes any calibration `starpu:HOST` finds.
//! - **Models.** Each machine's own, as `hetsched simulate` uses a `starpu:HOST`
//!   machine's by default: the durations are the models' means, and `dmda`, `dmdas` and
//!   `heft` start from the same models (calibrated, as StarPU on a calibrated machine).
//!   A unit type with no model for a kernel at the tile size runs none of its tasks
//!   (StarPU: no implementation), and the output says so; a kernel no unit type has a
//!   model for leaves the algorithm out on that machine, saying which, never a number
//!   made up.
//! - **Flops.** Cholesky's tasks carry the flops StarPU's example declares, which its
//!   model files list beside each footprint (POTRF about b³/3, TRSM b²(b + 1), GEMM
//!   2b³, the diagonal update counted as a GEMM). LU's example declares none (its files
//!   say 0), so its tasks are counted here: GETRF 2b³/3, each TRSM b³, GEMM 2b³, which
//!   sum to exactly the 2n³/3 StarPU's LU example prints its GFlop/s from.
//! - **Sizes.** Tiles of 960 elements (the size every machine's models time), 4 to 48
//!   tiles a side (`--quick`: 4, 8 and 12), single precision (StarPU's Cholesky example
//!   is single only, and hannibal has no double-precision LU models).
//!
//! Outputs: `results.csv` and `results.json` (one row per machine, algorithm, size and
//! policy), `summary.md` (each machine's models and tables), a PNG per machine (GFlop/s
//! against the matrix side, a line per policy, the bound dashed). What the runs show and
//! why is in `docs/starpu-machines.md`.

use crate::plot;
use hetsched_core::graph::{TaskGraph, MAX_TASKS};
use hetsched_core::machine::{Machine, UnitGranularity, UnitType};
use hetsched_core::record::{Event, EventKind, Recorder};
use hetsched_core::task::PerUnitType;
use hetsched_core::{Error, Result};
use hetsched_sim::graphs::bound::bound;
use hetsched_sim::graphs::tasks::models_for;
use hetsched_sim::graphs::{cholesky, lu, Durations, GraphTasks, Precision, Tiled};
use hetsched_sim::scenario::limits;
use hetsched_sim::{Config, Simulation};
use hetsched_study::say;
use hetsched_topology::starpu::Sampling;
use hetsched_util::files::OutDir;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

/// The machines run by default: Debian's five calibrations.
pub const MACHINES: [&str; 5] = ["attila", "hannibal", "idgraf", "mirage", "sirocco"];

/// The policies run by default.
pub const POLICIES: [&str; 6] = ["eager", "dmda", "dmdas", "heft", "lws", "random"];

/// Tiles a side, by default.
pub const TILES: [u32; 7] = [4, 8, 12, 16, 24, 32, 48];

/// Tiles a side under `--quick`.
pub const QUICK_TILES: [u32; 3] = [4, 8, 12];

/// Elements a tile side, by default: the size every machine's models time.
pub const TILE: u32 = 960;

/// The seed of seeded policies (`random`), as `hetsched simulate`'s default.
const SEED: u64 = 0;

/// The experiment's options.
#[derive(clap::Args, Clone, Debug)]
pub struct Options {
    /// Small matrices only: 4, 8 and 12 tiles a side.
    #[arg(long, conflicts_with = "tiles")]
    pub quick: bool,
    /// Tiles a side of the matrices, comma-separated [default: 4,8,12,16,24,32,48].
    #[arg(long, value_delimiter = ',', value_name = "N,...",
          value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub tiles: Vec<u32>,
    /// Elements a tile side (the models time 320, 640 and 960; hannibal's 960 only).
    #[arg(long, default_value_t = TILE, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub tile: u32,
    /// A StarPU calibration to run on, as `starpu:HOST` names it (repeat for several)
    /// [default: attila, hannibal, idgraf, mirage, sirocco].
    #[arg(long = "machine", value_name = "HOST")]
    pub machines: Vec<String>,
    /// A policy to run, a spec as `hetsched simulate --policy` takes (repeat for
    /// several) [default: eager, dmda, dmdas, heft, lws, random].
    #[arg(long = "policy", value_name = "SPEC")]
    pub policies: Vec<String>,
}

impl Default for Options {
    /// What the command runs without options.
    fn default() -> Self {
        Options {
            quick: false,
            tiles: Vec::new(),
            tile: TILE,
            machines: Vec::new(),
            policies: Vec::new(),
        }
    }
}

impl Options {
    /// The tile counts to run, sorted, each once.
    pub fn tiles(&self) -> Vec<u32> {
        let mut tiles = if self.quick {
            QUICK_TILES.to_vec()
        } else if self.tiles.is_empty() {
            TILES.to_vec()
        } else {
            self.tiles.clone()
        };
        tiles.sort_unstable();
        tiles.dedup();
        tiles
    }

    pub fn machines(&self) -> Vec<String> {
        if self.machines.is_empty() {
            MACHINES.map(String::from).to_vec()
        } else {
            self.machines.clone()
        }
    }

    pub fn policies(&self) -> Vec<String> {
        if self.policies.is_empty() {
            POLICIES.map(String::from).to_vec()
        } else {
            self.policies.clone()
        }
    }
}

/// A factorization.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    Cholesky,
    Lu,
}

impl Algorithm {
    pub const ALL: [Algorithm; 2] = [Algorithm::Cholesky, Algorithm::Lu];

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Cholesky => "cholesky",
            Algorithm::Lu => "lu",
        }
    }

    fn task_count(self, tiles: u32) -> u128 {
        match self {
            Algorithm::Cholesky => cholesky::task_count(u128::from(tiles)),
            Algorithm::Lu => lu::task_count(u128::from(tiles)),
        }
    }

    /// Its kernels (model symbols) and what each computes, in StarPU's order.
    pub fn kernels(self, p: &Tiled) -> Vec<(String, &'static str)> {
        match self {
            Algorithm::Cholesky => vec![
                (cholesky::POTRF.to_string(), "POTRF"),
                (cholesky::TRSM.to_string(), "TRSM"),
                (cholesky::GEMM.to_string(), "GEMM"),
            ],
            Algorithm::Lu => vec![
                (lu::kernel(p, "11"), "GETRF"),
                (lu::kernel(p, "12"), "TRSM"),
                (lu::kernel(p, "21"), "TRSM"),
                (lu::kernel(p, "22"), "GEMM"),
            ],
        }
    }

    /// The graph of `tiles` × `tiles` tiles of `tile` elements, each task carrying its
    /// flops (see the module documentation).
    pub fn graph(self, tiles: u32, tile: u32) -> Result<TaskGraph> {
        let p = tiled(tiles, tile);
        match self {
            Algorithm::Cholesky => cholesky(&p),
            Algorithm::Lu => {
                let mut g = lu(&p)?;
                let b = f64::from(tile);
                let b3 = b * b * b;
                let flops: BTreeMap<String, f64> = self
                    .kernels(&p)
                    .into_iter()
                    .map(|(k, role)| {
                        let f = match role {
                            "GETRF" => 2.0 * b3 / 3.0,
                            "TRSM" => b3,
                            _ => 2.0 * b3,
                        };
                        (k, f)
                    })
                    .collect();
                for t in &mut g.tasks {
                    t.flops = flops[&*t.kernel];
                }
                Ok(g)
            }
        }
    }
}

fn tiled(tiles: u32, tile: u32) -> Tiled {
    Tiled {
        tiles,
        tile,
        precision: Precision::Single,
    }
}

/// One kernel's model on a machine at the tile size.
#[derive(Clone, Debug, Serialize)]
pub struct KernelModel {
    pub algorithm: Algorithm,
    pub kernel: String,
    pub role: &'static str,
    pub footprint: String,
    /// The model's mean on each unit type of the machine, ms (`None`: no model).
    pub ms: BTreeMap<&'static str, Option<f64>>,
}

/// A machine as the experiment found it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MachineInfo {
    pub machine: String,
    /// Units of each type.
    pub units: BTreeMap<&'static str, usize>,
    /// The mean bandwidth of its GPUs' host links, GB/s (`None`: no GPU, or no link).
    pub gpu_link_gb_s: Option<f64>,
    pub kernels: Vec<KernelModel>,
    /// What the models leave out, one sentence each.
    pub notes: Vec<String>,
    /// The algorithms not run, and why.
    pub skipped: Vec<String>,
    /// Why nothing ran on it (not installed, unreadable).
    pub error: Option<String>,
}

/// One run.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub machine: String,
    pub algorithm: Algorithm,
    pub tiles: u32,
    pub tile: u32,
    /// The matrix side, elements.
    pub n: u64,
    pub tasks: usize,
    pub gflop: f64,
    pub policy: String,
    pub makespan_s: f64,
    pub gflops: f64,
    /// The larger of the two bounds: no schedule ends before it.
    pub bound_s: f64,
    pub bound_gflops: f64,
    pub critical_path_s: f64,
    /// `None`: not computed (its reason is in the JSON's `area_error`).
    pub area_s: Option<f64>,
    /// The makespan over the bound's.
    pub over_bound: f64,
    pub copies: u64,
    pub transfer_bytes: u64,
    /// The share of the flops run on GPUs.
    pub gpu_share: f64,
    /// The share of the GPUs' time (and the CPUs') they held a task: ran it or waited
    /// for its data.
    pub gpu_util: f64,
    pub cpu_util: f64,
}

/// The whole experiment.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub tile: u32,
    pub tiles: Vec<u32>,
    pub policies: Vec<String>,
    pub machines: Vec<MachineInfo>,
    pub rows: Vec<Row>,
}

/// What each unit type did in a run: the flops of the tasks it completed, and the time
/// its units held a task (running it, or waiting for its data).
struct Usage<'a> {
    flops: &'a [f64],
    kinds: Vec<UnitType>,
    started: Vec<u64>,
    done: PerUnitType<f64>,
    busy_ns: PerUnitType<u64>,
}

impl<'a> Usage<'a> {
    fn new(flops: &'a [f64], machine: &Machine) -> Self {
        Usage {
            flops,
            kinds: machine.units.iter().map(|u| u.kind).collect(),
            started: vec![0; machine.units.len()],
            done: PerUnitType::default(),
            busy_ns: PerUnitType::default(),
        }
    }

    /// The share of `kind`'s time its units held a task, over a run of `end_ns`.
    fn utilisation(&self, kind: UnitType, end_ns: u64) -> f64 {
        let units = self.kinds.iter().filter(|&&k| k == kind).count();
        let total = units as f64 * end_ns as f64;
        if total > 0.0 {
            self.busy_ns.get(kind) as f64 / total
        } else {
            0.0
        }
    }
}

impl Recorder for Usage<'_> {
    fn record(&mut self, e: Event) {
        match e.kind {
            EventKind::Start { unit, .. } => self.started[unit as usize] = e.t_ns,
            EventKind::Stop { unit } | EventKind::Complete { unit } => {
                let kind = self.kinds[unit as usize];
                let held = e.t_ns.saturating_sub(self.started[unit as usize]);
                self.busy_ns.set(kind, self.busy_ns.get(kind) + held);
                if matches!(e.kind, EventKind::Complete { .. }) {
                    let f = self.flops.get(e.task as usize).copied().unwrap_or(0.0);
                    self.done.set(kind, self.done.get(kind) + f);
                }
            }
            _ => {}
        }
    }
}

fn unit_types(m: &Machine) -> Vec<UnitType> {
    let mut kinds: Vec<UnitType> = m.units.iter().map(|u| u.kind).collect();
    kinds.sort_unstable();
    kinds.dedup();
    kinds
}

/// A machine's units of each type, its GPU links and each kernel's model at `tile`
/// (read from `graphs`, each algorithm's smallest graph with its models, or why it has
/// none); the notes say what the models leave out.
fn describe(
    host: &str,
    machine: &Machine,
    graphs: &[(Algorithm, Result<GraphTasks>)],
    tile: u32,
) -> MachineInfo {
    let mut info = MachineInfo {
        machine: host.to_string(),
        ..MachineInfo::default()
    };
    let kinds = unit_types(machine);
    for u in &machine.units {
        *info.units.entry(u.kind.name()).or_default() += 1;
    }
    let links: Vec<f64> = machine
        .accelerators
        .iter()
        .filter(|a| a.kind == UnitType::Gpu)
        .filter_map(|a| a.link_bandwidth_bytes_per_s)
        .collect();
    info.gpu_link_gb_s =
        (!links.is_empty()).then(|| links.iter().sum::<f64>() / links.len() as f64 * 1e-9);
    // Each kernel's times on each type, and whether any kernel has a model on a type.
    let mut timed = PerUnitType::<bool>::default();
    let mut found = Vec::new();
    for (algorithm, tasks) in graphs {
        let tasks = match tasks {
            Ok(t) => t,
            Err(e) => {
                info.skipped.push(format!("{}: {e}", algorithm.name()));
                continue;
            }
        };
        let g = tasks.graph();
        for (kernel, role) in algorithm.kernels(&tiled(2, tile)) {
            let Some(i) = g.tasks.iter().position(|t| *t.kernel == *kernel) else {
                continue;
            };
            let times = tasks.times(i);
            for &k in &kinds {
                timed.set(k, timed.get(k) || times.get(k).is_some());
            }
            found.push((*algorithm, kernel, role, g.tasks[i].footprint, times));
        }
    }
    for (algorithm, kernel, role, footprint, times) in found {
        // A type with no model for any kernel is said once, below.
        let missing: Vec<&str> = kinds
            .iter()
            .filter(|&&k| timed.get(k) && times.get(k).is_none())
            .map(|k| k.name())
            .collect();
        if !missing.is_empty() {
            info.notes.push(format!(
                "no {} model for {kernel} ({role}) at footprint {footprint:08x}: those units run none of its tasks",
                missing.join(" or "),
            ));
        }
        info.kernels.push(KernelModel {
            algorithm,
            kernel,
            role,
            footprint: format!("{footprint:08x}"),
            ms: kinds
                .iter()
                .map(|&k| (k.name(), times.get(k).map(|s| s * 1e3)))
                .collect(),
        });
    }
    if !info.kernels.is_empty() {
        for &k in kinds.iter().filter(|&&k| !timed.get(k)) {
            info.notes.push(format!(
                "its {} {} units have no model for any kernel at tiles of {tile}: they run nothing",
                info.units[k.name()],
                k.name()
            ));
        }
    }
    info
}

/// Runs the experiment, printing each machine's tables to `w` as they are measured,
/// and writes its files into `out`.
pub fn run(o: &Options, out: &OutDir, w: &mut dyn std::io::Write) -> Result<Report> {
    let start = Instant::now();
    let report = measure(o, w)?;
    write(&report, out)?;
    say(
        w,
        format!(
            "{} runs in {:.1} s\n",
            report.rows.len(),
            start.elapsed().as_secs_f64()
        ),
    )?;
    Ok(report)
}

/// Runs the experiment (see the module documentation), printing each machine's tables
/// to `w` as they are measured.
pub fn measure(o: &Options, w: &mut dyn std::io::Write) -> Result<Report> {
    let tiles = o.tiles();
    let tile = o.tile;
    for &n in &tiles {
        for a in Algorithm::ALL {
            let count = a.task_count(n);
            if count > MAX_TASKS as u128 {
                return Err(Error::input(format!(
                    "--tiles: {n} tiles a side make {count} {} tasks; a task graph has at most {MAX_TASKS}",
                    a.name()
                )));
            }
        }
    }
    let policies = o.policies();
    let mut report = Report {
        tile,
        tiles: tiles.clone(),
        policies: policies.clone(),
        machines: Vec::new(),
        rows: Vec::new(),
    };
    for host in o.machines() {
        let loaded = Sampling::parse(&host).and_then(|s| {
            let machine = hetsched_topology::load(&format!("starpu:{host}"), UnitGranularity::Pu)?;
            Ok((machine, s.models()?))
        });
        let (machine, models) = match loaded {
            Ok(l) => l,
            Err(e) => {
                say(w, format!("{host}: not run: {e}\n\n"))?;
                report.machines.push(MachineInfo {
                    machine: host,
                    error: Some(e.to_string()),
                    ..MachineInfo::default()
                });
                continue;
            }
        };
        // The kernels' models, from the smallest graph that has every kernel.
        let small: Vec<(Algorithm, Result<GraphTasks>)> = Algorithm::ALL
            .into_iter()
            .map(|a| {
                let g = a
                    .graph(2, tile)
                    .and_then(|g| GraphTasks::new(Arc::new(g), &machine, &models, Durations::Mean));
                (a, g)
            })
            .collect();
        let info = describe(&host, &machine, &small, tile);
        say(w, machine_text(&info, tile))?;
        let config = Config {
            models: models_for(&machine, &models),
            max_live_tasks: Some(limits::MAX_LIVE_TASKS),
            ..Config::default()
        };
        for (algorithm, small) in &small {
            if small.is_err() {
                continue;
            }
            let first = report.rows.len();
            for &n in &tiles {
                let graph = algorithm.graph(n, tile)?;
                let flops: Vec<f64> = graph.tasks.iter().map(|t| t.flops).collect();
                let total: f64 = flops.iter().sum();
                let tasks = GraphTasks::new(Arc::new(graph), &machine, &models, Durations::Mean)?;
                let b = bound(&tasks, &machine);
                let bound_s = b.makespan_s();
                for policy in &policies {
                    let mut rec = Usage::new(&flops, &machine);
                    let s = Simulation::graph(&machine, &tasks, &config)
                        .run_spec(policy, SEED, &mut rec)?;
                    if s.unfinished > 0 {
                        return Err(Error::runtime(format!(
                            "{host}, {} of {n} tiles: {policy}: {} tasks never finished (the policy left them queued)",
                            algorithm.name(),
                            s.unfinished
                        )));
                    }
                    let makespan_s = s.end_ns as f64 * 1e-9;
                    report.rows.push(Row {
                        machine: host.clone(),
                        algorithm: *algorithm,
                        tiles: n,
                        tile,
                        n: u64::from(n) * u64::from(tile),
                        tasks: flops.len(),
                        gflop: total * 1e-9,
                        policy: policy.clone(),
                        makespan_s,
                        gflops: total / makespan_s * 1e-9,
                        bound_s,
                        bound_gflops: total / bound_s * 1e-9,
                        critical_path_s: b.critical_path_s,
                        area_s: b.area_s.as_ref().ok().copied(),
                        over_bound: makespan_s / bound_s,
                        copies: s.traffic.copies,
                        transfer_bytes: s.traffic.bytes,
                        gpu_share: rec.done.get(UnitType::Gpu) / total,
                        gpu_util: rec.utilisation(UnitType::Gpu, s.end_ns),
                        cpu_util: rec.utilisation(UnitType::Cpu, s.end_ns),
                    });
                }
            }
            say(
                w,
                table_text(*algorithm, &policies, &report.rows[first..]) + "\n",
            )?;
        }
        report.machines.push(info);
    }
    if report.rows.is_empty() {
        return Err(Error::input(format!(
            "no run: no machine of {} could run either algorithm at tiles of {tile} (see above)",
            o.machines().join(", ")
        )));
    }
    Ok(report)
}

/// A machine's units, links and models, and what they leave out.
fn machine_text(info: &MachineInfo, tile: u32) -> String {
    let mut s = format!("{}: {}", info.machine, units_text(info));
    if let Some(bw) = info.gpu_link_gb_s {
        let _ = write!(s, "; GPU links {bw:.1} GB/s");
    }
    s.push('\n');
    for k in &info.kernels {
        let times: Vec<String> =
            k.ms.iter()
                .filter_map(|(kind, ms)| ms.map(|ms| format!("{kind} {ms:.2} ms")))
                .collect();
        let _ = writeln!(
            s,
            "  {:<8} {:<5} {:<24} on a {tile}-tile: {}",
            k.algorithm.name(),
            k.role,
            k.kernel,
            times.join(", ")
        );
    }
    for n in &info.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    for n in &info.skipped {
        let _ = writeln!(s, "  not run: {n}");
    }
    s + "\n"
}

fn units_text(info: &MachineInfo) -> String {
    let order = ["cpu", "gpu", "opencl", "coprocessor"];
    let mut kinds: Vec<(&&str, &usize)> = info.units.iter().collect();
    kinds.sort_by_key(|(k, _)| order.iter().position(|o| o == *k));
    kinds
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One machine's runs of one algorithm: GFlop/s and the bound's multiple per size.
fn table_text(algorithm: Algorithm, policies: &[String], rows: &[Row]) -> String {
    let mut s = format!(
        "  {}: GFlop/s (makespan / the bound's)\n  {:>5} {:>6} {:>8}",
        algorithm.name(),
        "tiles",
        "n",
        "bound"
    );
    for p in policies {
        let _ = write!(s, " {:>16}", p);
    }
    s.push('\n');
    for size in rows.chunks(policies.len().max(1)) {
        let r0 = &size[0];
        let _ = write!(s, "  {:>5} {:>6} {:>8.1}", r0.tiles, r0.n, r0.bound_gflops);
        for r in size {
            let _ = write!(
                s,
                " {:>16}",
                format!("{:.1} ({:.2}×)", r.gflops, r.over_bound)
            );
        }
        s.push('\n');
    }
    s
}

const CSV_HEADER: &str = "machine,algorithm,tiles,tile,n,tasks,gflop,policy,makespan_s,gflops,bound_s,bound_gflops,critical_path_s,area_s,over_bound,copies,transfer_bytes,gpu_share,gpu_util,cpu_util";

fn csv(report: &Report) -> String {
    let mut s = format!("{CSV_HEADER}\n");
    for r in &report.rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{:.3},{},{:.6},{:.3},{:.6},{:.3},{:.6},{},{:.4},{},{},{:.4},{:.4},{:.4}",
            r.machine,
            r.algorithm.name(),
            r.tiles,
            r.tile,
            r.n,
            r.tasks,
            r.gflop,
            r.policy,
            r.makespan_s,
            r.gflops,
            r.bound_s,
            r.bound_gflops,
            r.critical_path_s,
            r.area_s.map_or(String::new(), |a| format!("{a:.6}")),
            r.over_bound,
            r.copies,
            r.transfer_bytes,
            r.gpu_share,
            r.gpu_util,
            r.cpu_util
        );
    }
    s
}

/// `summary.md`: each machine's models, then per algorithm GFlop/s by size and policy
/// and the ranking at the largest size.
pub fn summary(report: &Report) -> String {
    let mut s = format!(
        "# StarPU's tiled Cholesky and LU on its calibrated machines\n\n\
         Tiles of {} elements, single precision, {} tiles a side; each machine's own \
         models; policies {}. GFlop/s, and in parentheses the makespan over the lower \
         bound's. The bound column is the GFlop/s no schedule exceeds, and which bound \
         sets it: the critical path (`path`) or the area bound (`area`).\n",
        report.tile,
        report
            .tiles
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        report.policies.join(", ")
    );
    for m in &report.machines {
        let _ = write!(s, "\n## {}\n\n", m.machine);
        if let Some(e) = &m.error {
            let _ = writeln!(s, "Not run: {e}");
            continue;
        }
        let _ = write!(s, "{}", units_text(m));
        if let Some(bw) = m.gpu_link_gb_s {
            let _ = write!(s, "; GPU host links {bw:.1} GB/s on average");
        }
        s.push_str(".\n\n");
        let kinds: Vec<&str> = m.units.keys().copied().collect();
        let _ = writeln!(
            s,
            "| algorithm | kernel | model | {} |",
            kinds
                .iter()
                .map(|k| format!("{k} ms"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(s, "|---|---|---|{}", "---:|".repeat(kinds.len()));
        for k in &m.kernels {
            let cells: Vec<String> = kinds
                .iter()
                .map(|kind| {
                    k.ms.get(kind)
                        .copied()
                        .flatten()
                        .map_or("no model".to_string(), |ms| format!("{ms:.2}"))
                })
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} | `{}` | {} |",
                k.algorithm.name(),
                k.role,
                k.kernel,
                cells.join(" | ")
            );
        }
        for n in &m.notes {
            let _ = write!(s, "\n- {n}");
        }
        for n in &m.skipped {
            let _ = write!(s, "\n- not run: {n}");
        }
        if !m.notes.is_empty() || !m.skipped.is_empty() {
            s.push('\n');
        }
        for a in Algorithm::ALL {
            let rows: Vec<&Row> = report
                .rows
                .iter()
                .filter(|r| r.machine == m.machine && r.algorithm == a)
                .collect();
            if rows.is_empty() {
                continue;
            }
            let _ = write!(
                s,
                "\n### {}\n\n| n | tasks | bound |{}\n|---:|---:|---:|{}\n",
                a.name(),
                report
                    .policies
                    .iter()
                    .map(|p| format!(" {p} |"))
                    .collect::<String>(),
                "---:|".repeat(report.policies.len())
            );
            for size in rows.chunks(report.policies.len().max(1)) {
                let limit = match size[0].area_s {
                    Some(area) if area > size[0].critical_path_s => "area",
                    _ => "path",
                };
                let _ = write!(
                    s,
                    "| {} | {} | {:.0} ({limit}) |",
                    size[0].n, size[0].tasks, size[0].bound_gflops
                );
                for r in size {
                    let _ = write!(s, " {:.0} ({:.2}) |", r.gflops, r.over_bound);
                }
                s.push('\n');
            }
            if let Some(last) = rows.chunks(report.policies.len().max(1)).last() {
                let mut ranked: Vec<&&Row> = last.iter().collect();
                ranked.sort_by(|a, b| a.makespan_s.total_cmp(&b.makespan_s));
                let _ = write!(
                    s,
                    "\nAt n = {}, best first:\n\n\
                     | policy | GFlop/s | × bound | flops on GPUs | GPUs busy | CPUs busy | copied |\n\
                     |---|---:|---:|---:|---:|---:|---:|\n",
                    last[0].n
                );
                for r in ranked {
                    let _ = writeln!(
                        s,
                        "| {} | {:.0} | {:.2} | {:.0} % | {:.0} % | {:.0} % | {:.1} GB |",
                        r.policy,
                        r.gflops,
                        r.over_bound,
                        r.gpu_share * 100.0,
                        r.gpu_util * 100.0,
                        r.cpu_util * 100.0,
                        r.transfer_bytes as f64 * 1e-9
                    );
                }
            }
        }
    }
    s
}

/// Writes the report's files into `out`.
pub fn write(report: &Report, out: &OutDir) -> Result<()> {
    out.write("results.csv", csv(report))?;
    out.write(
        "results.json",
        serde_json::to_string_pretty(report).map_err(Error::runtime)? + "\n",
    )?;
    out.write("summary.md", summary(report))?;
    for m in report.machines.iter().filter(|m| m.error.is_none()) {
        let panels: Vec<plot::Panel> = Algorithm::ALL
            .into_iter()
            .filter_map(|a| {
                let rows: Vec<&Row> = report
                    .rows
                    .iter()
                    .filter(|r| r.machine == m.machine && r.algorithm == a)
                    .collect();
                if rows.is_empty() {
                    return None;
                }
                let series = report
                    .policies
                    .iter()
                    .map(|p| plot::Line {
                        name: p.clone(),
                        points: rows
                            .iter()
                            .filter(|r| &r.policy == p)
                            .map(|r| (r.n as f64, r.gflops))
                            .collect(),
                    })
                    .collect();
                let mut bound: Vec<(f64, f64)> =
                    rows.iter().map(|r| (r.n as f64, r.bound_gflops)).collect();
                bound.dedup();
                Some(plot::Panel {
                    title: a.name().to_string(),
                    series,
                    bound,
                })
            })
            .collect();
        if !panels.is_empty() {
            plot::panels(
                out,
                &format!("{}.png", m.machine),
                &format!("starpu:{} ({})", m.machine, units_text(m)),
                &panels,
            )?;
        }
    }
    Ok(())
}
