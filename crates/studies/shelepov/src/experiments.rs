//! §4's experiments on the simulator: the paper's machine (one core per chip of two
//! Xeon X5365 packages, cores differing only by DVFS frequency), eight programs run
//! continuously (a program restarts the moment it ends), the default scheduler (`cfs`
//! with Linux 2.6.18's 100 ms time slice) against the `signature` policy. `eevdf` (Linux's
//! fair class since 6.6, at its defaults) runs beside the default scheduler so that a
//! reader also sees `signature` against today's Linux; the claims stay against `cfs`.
//!
//! The programs are memory-access models (`programs`): each task carries the signature
//! hetsched's toolchain computed from its model's access stream (the scheduler's only
//! knowledge of it), and runs with the memory-bound share its true misses give it.
//! The time model: a program alone on a core of frequency F takes
//! `T_ref · ((1 − b) · F_ref / F + b)` (its memory-bound share b at F_ref = 3 GHz,
//! capacity 1024; the simulator's `Workload::memory_bound`); cores are time-shared, so
//! a run's completion time also counts the time its core served the other program.
//!
//! The metric is the paper's: per program, the mean completion time of its runs
//! (arrival to end) under `signature` normalised to that under `cfs`; the aggregate is
//! the geometric mean of those ratios. The default scheduler never moves a program
//! that is not needed to even out task counts, so its outcome depends on which
//! programs happen to share a core: every configuration is run with several seeds,
//! each a random order of the eight starting programs (the same orders for both
//! policies). A program's mean is the mean over its instances and seeds of each
//! instance's mean completion time: pooling runs instead would weight the instances
//! that the order put on fast cores by their larger number of runs, a bias the paper's
//! default scheduler, which moves programs over time, does not have.

use crate::programs::{program, Program};
use hetsched_core::machine::Machine;
use hetsched_core::record::{Event, EventKind, Recorder};
use hetsched_core::task::{Task, TaskClass, TaskId};
use hetsched_core::{Error, Result};
use hetsched_sim::{machine_from_toml, Config, SimTask, Simulation, Workload};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;

/// The default scheduler: CFS with a 200 ms period, i.e. a 100 ms slice for each of the
/// two programs sharing a core (Linux 2.6.18's O(1) scheduler gives nice-0 tasks
/// 100 ms), balancing counts every 100 ms.
pub const BASELINE: &str = "cfs:latency_ms=200,balance_ms=100";
/// The policy under test, at its defaults (100 ms slice).
pub const POLICY: &str = "signature";
/// Today's Linux beside the baseline: EEVDF at its defaults, as Linux 6.6+ runs it out of
/// the box (base slice 0.75 ms × (1 + log2 4), count balancing every 4 ms). Shown, not
/// judged: the paper's baseline is the 2.6.18 one [`BASELINE`] stands in for.
pub const EEVDF: &str = "eevdf";

/// What the paper reports for one configuration.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Paper {
    /// Change of the aggregate completion time, %.
    pub aggregate_pct: Option<f64>,
    /// Per-program changes, %, where the text gives them.
    pub programs: &'static [(&'static str, f64)],
    /// What the paper says, for the table.
    pub says: &'static str,
}

/// One configuration: core frequencies and the eight programs running at any moment.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Setup {
    pub name: &'static str,
    pub frequencies_mhz: [u32; 4],
    pub programs: [&'static str; 8],
    pub paper: Paper,
}

const HET_PROGRAMS: [&str; 8] = [
    "eon", "eon", "crafty", "crafty", "mcf", "mcf", "equake", "equake",
];

/// §4.1: two cores at 2 GHz, two at 3 GHz; two copies each of eon, crafty, mcf, equake.
pub const HETEROGENEOUS: Setup = Setup {
    name: "heterogeneous",
    frequencies_mhz: [2000, 2000, 3000, 3000],
    programs: HET_PROGRAMS,
    paper: Paper {
        aggregate_pct: Some(-4.3),
        programs: &[
            ("eon", -19.4),
            ("crafty", -19.9),
            ("mcf", 15.6),
            ("equake", 12.3),
        ],
        says: "aggregate -4.3 %",
    },
};

/// §4.2: one core at each of 2.0, 2.33, 2.67, 3.0 GHz; eight different programs.
pub const BALANCED: Setup = Setup {
    name: "balanced",
    frequencies_mhz: [2000, 2333, 2667, 3000],
    programs: [
        "mcf", "fma3d", "equake", "gcc", "eon", "gap", "wupwise", "lucas",
    ],
    paper: Paper {
        aggregate_pct: Some(-2.7),
        programs: &[],
        says: "aggregate -2.7 % (per program: Figure 6 only)",
    },
};

/// §4.3: the same cores; two copies each of wupwise, mgrid, apsi, facerec.
pub const UNIFORM: Setup = Setup {
    name: "uniform",
    frequencies_mhz: [2000, 2333, 2667, 3000],
    programs: [
        "wupwise", "wupwise", "mgrid", "mgrid", "apsi", "apsi", "facerec", "facerec",
    ],
    paper: Paper {
        aggregate_pct: Some(0.4),
        programs: &[],
        says: "aggregate +0.4 % (per program: Figure 7 only)",
    },
};

/// §4.1's projection: the heterogeneous workload on 1.5 and 3 GHz cores.
pub const PROJECTION_1500: Setup = Setup {
    name: "projection 1.5-3 GHz",
    frequencies_mhz: [1500, 1500, 3000, 3000],
    programs: HET_PROGRAMS,
    paper: Paper {
        aggregate_pct: None,
        programs: &[],
        says: "the decrease \"could almost double\" (vs -4.3 %)",
    },
};

/// … and on 1.0 and 3 GHz cores.
pub const PROJECTION_1000: Setup = Setup {
    name: "projection 1.0-3 GHz",
    frequencies_mhz: [1000, 1000, 3000, 3000],
    programs: HET_PROGRAMS,
    paper: Paper {
        aggregate_pct: None,
        programs: &[],
        says: "the decrease could \"more than triple\" (vs -4.3 %)",
    },
};

/// The configurations in report order.
pub const SETUPS: [Setup; 5] = [
    HETEROGENEOUS,
    BALANCED,
    UNIFORM,
    PROJECTION_1500,
    PROJECTION_1000,
];

hetsched_study::assumptions! { "shelepov";
    /// A program's time alone on a 3 GHz core, s, the same for every program: the paper
    /// gives no run times, and its metric is a ratio per program, so only the ratio of
    /// run time to time slice (100 ms) depends on it.
    pub const T_REF_S: f64 = 100.0;
}

/// Run settings.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Options {
    /// Seeds (orders of the starting programs) per configuration and policy.
    pub seeds: u64,
    /// Simulated seconds per run (the paper: at least 2,000).
    pub horizon_s: f64,
    /// A program's time alone at 3 GHz (one value for all: the paper does not give
    /// run times, and the metric is a ratio per program).
    pub t_ref_s: f64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            seeds: 16,
            horizon_s: 2000.0,
            t_ref_s: T_REF_S,
        }
    }
}

/// One program's outcome in one configuration.
#[derive(Clone, Debug, Serialize)]
pub struct ProgramResult {
    pub name: &'static str,
    /// The program's true elasticity (its time model) and the class its signature
    /// predicts (what the scheduler acted on).
    pub elasticity: f64,
    pub predicted: hetsched_sig::elasticity::Class,
    /// Mean completion time (s) under the baseline, under `signature` and under `eevdf`
    /// (the mean of the instances' means over all seeds).
    pub baseline_s: f64,
    pub signature_s: f64,
    pub eevdf_s: f64,
    /// Completed runs over all instances and seeds.
    pub baseline_runs: usize,
    pub signature_runs: usize,
    pub eevdf_runs: usize,
    /// `signature` vs baseline, %.
    pub change_pct: f64,
    /// `signature` vs `eevdf`, %.
    pub change_vs_eevdf_pct: f64,
    pub paper_pct: Option<f64>,
}

/// One configuration's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub setup: Setup,
    pub programs: Vec<ProgramResult>,
    /// Geometric mean of the per-program ratios, as a change in %: `signature` vs the
    /// baseline, and vs `eevdf`.
    pub aggregate_pct: f64,
    pub aggregate_vs_eevdf_pct: f64,
}

/// The paper's machine with one core per chip at the given frequencies, each with the
/// X5365's private-per-core 4 MB 16-way L2 (one core per chip used).
pub fn machine(frequencies_mhz: &[u32; 4]) -> Result<Machine> {
    let mut text = String::from("name = \"shelepov-4core\"\n");
    let mut kinds = Vec::new();
    for f in frequencies_mhz {
        let name = format!("X5365@{f}");
        if !kinds.contains(&name) {
            text += &format!("[[cpu_kind]]\nname = \"{name}\"\nmax_mhz = {f}\n");
            kinds.push(name);
        }
    }
    let per_core: Vec<String> = frequencies_mhz
        .iter()
        .map(|f| format!("\"X5365@{f}\""))
        .collect();
    text += &format!(
        "[[package]]\ncores = 4\nkind = [{}]\nnuma_node = 0\n[[numa_node]]\nmemory = 0\n[[cache]]\nlevel = 2\nsize = \"4 MiB\"\nways = 16\nshared_by = \"core\"\n",
        per_core.join(", ")
    );
    machine_from_toml(&text, "shelepov-4core")
}

/// The closed loop: pending (re)starts, the runs in flight and the completion times.
struct Loop {
    pending: VecDeque<SimTask>,
    /// Task id → (instance, arrival ns).
    in_flight: HashMap<TaskId, (usize, u64)>,
    instances: Vec<&'static Program>,
    next_id: TaskId,
    horizon_ns: u64,
    t_ref_s: f64,
    /// Completion times (s) per instance.
    times: Vec<Vec<f64>>,
}

impl Loop {
    fn start(&mut self, instance: usize, t_ns: u64) {
        let prog = self.instances[instance];
        let id = self.next_id;
        self.next_id += 1;
        let class = TaskClass {
            kind: prog.name.into(),
            signature: Some(prog.signature.clone()),
            ..TaskClass::cpu()
        };
        let meta = Task::new(id, t_ns, Arc::new(class));
        let model = Workload {
            work_s: self.t_ref_s,
            memory_bound: prog.memory_bound,
            ..Workload::default()
        };
        self.in_flight.insert(id, (instance, t_ns));
        self.pending.push_back(SimTask { meta, model });
    }
}

/// Hands the engine the loop's pending (re)starts.
struct Arrivals(Rc<RefCell<Loop>>);

impl Iterator for Arrivals {
    type Item = SimTask;
    fn next(&mut self) -> Option<SimTask> {
        self.0.borrow_mut().pending.pop_front()
    }
}

/// Sees each completion and restarts its program at once.
struct Restarts(Rc<RefCell<Loop>>);

impl Recorder for Restarts {
    fn record(&mut self, event: Event) {
        if let EventKind::Complete { .. } = event.kind {
            let mut l = self.0.borrow_mut();
            if let Some((instance, arrival)) = l.in_flight.remove(&event.task) {
                l.times[instance].push((event.t_ns - arrival) as f64 * 1e-9);
                if event.t_ns < l.horizon_ns {
                    l.start(instance, event.t_ns);
                }
            }
        }
    }
}

/// Completion times (s) of each instance, per program name, of one closed run of
/// `names` (in this start order) under `spec`.
pub fn closed_run(
    machine: &Machine,
    spec: &str,
    names: &[&'static str],
    opts: &Options,
) -> Result<BTreeMap<&'static str, Vec<Vec<f64>>>> {
    let instances: Vec<&'static Program> = names.iter().map(|n| program(n)).collect();
    let horizon_ns = (opts.horizon_s * 1e9) as u64;
    let state = Rc::new(RefCell::new(Loop {
        pending: VecDeque::new(),
        in_flight: HashMap::new(),
        times: vec![Vec::new(); instances.len()],
        instances,
        next_id: 0,
        horizon_ns,
        t_ref_s: opts.t_ref_s,
    }));
    (0..names.len()).for_each(|i| state.borrow_mut().start(i, 0));
    let mut policy = hetsched_policies::build(spec, 1)?;
    let config = Config {
        max_time_ns: Some(horizon_ns),
        ..Config::default()
    };
    Simulation::new(machine, Arrivals(state.clone()), &config)
        .run(policy.as_mut(), &mut Restarts(state.clone()))?;
    let l = state.borrow();
    let mut out: BTreeMap<&'static str, Vec<Vec<f64>>> = BTreeMap::new();
    for (i, p) in l.instances.iter().enumerate() {
        out.entry(p.name).or_default().push(l.times[i].clone());
    }
    Ok(out)
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

/// Runs one configuration under the baseline, `signature` and `eevdf` over `opts.seeds`
/// start orders.
pub fn run_setup(setup: &Setup, opts: &Options) -> Result<Outcome> {
    let machine = machine(&setup.frequencies_mhz)?;
    // Per policy and program: each instance's mean completion time, and the runs.
    let mut pooled: [BTreeMap<&'static str, (Vec<f64>, usize)>; 3] = Default::default();
    for seed in 0..opts.seeds {
        let mut order = setup.programs.to_vec();
        order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        for (i, spec) in [BASELINE, POLICY, EEVDF].iter().enumerate() {
            for (name, instances) in closed_run(&machine, spec, &order, opts)? {
                let (means, runs) = pooled[i].entry(name).or_default();
                for times in instances.iter().filter(|t| !t.is_empty()) {
                    means.push(mean(times));
                    *runs += times.len();
                }
            }
        }
    }
    let mut programs = Vec::new();
    let (mut log_sum, mut log_sum_eevdf) = (0.0, 0.0);
    for (name, (base, base_runs)) in &pooled[0] {
        let of = |i: usize| {
            pooled[i]
                .get(name)
                .map_or((&[][..], 0), |(m, r)| (m.as_slice(), *r))
        };
        let ((sig, sig_runs), (eevdf, eevdf_runs)) = (of(1), of(2));
        if base.is_empty() || sig.is_empty() || eevdf.is_empty() {
            return Err(Error::runtime(format!(
                "{}: {name} completed no run under one of the policies (horizon {} s too short for T_ref {} s?)",
                setup.name, opts.horizon_s, opts.t_ref_s
            )));
        }
        let (b, s, e) = (mean(base), mean(sig), mean(eevdf));
        log_sum += (s / b).ln();
        log_sum_eevdf += (s / e).ln();
        programs.push(ProgramResult {
            name,
            elasticity: program(name).elasticity,
            predicted: program(name).predicted,
            baseline_s: b,
            signature_s: s,
            eevdf_s: e,
            baseline_runs: *base_runs,
            signature_runs: sig_runs,
            eevdf_runs,
            change_pct: (s / b - 1.0) * 100.0,
            change_vs_eevdf_pct: (s / e - 1.0) * 100.0,
            paper_pct: setup
                .paper
                .programs
                .iter()
                .find(|(n, _)| n == name)
                .map(|&(_, v)| v),
        });
    }
    // The paper's order of programs.
    programs.sort_by_key(|p| setup.programs.iter().position(|n| *n == p.name));
    let geomean_pct = |sum: f64| ((sum / programs.len() as f64).exp() - 1.0) * 100.0;
    let (aggregate_pct, aggregate_vs_eevdf_pct) =
        (geomean_pct(log_sum), geomean_pct(log_sum_eevdf));
    Ok(Outcome {
        setup: *setup,
        programs,
        aggregate_pct,
        aggregate_vs_eevdf_pct,
    })
}

/// All configurations.
pub fn run_all(opts: &Options) -> Result<Vec<Outcome>> {
    SETUPS.iter().map(|s| run_setup(s, opts)).collect()
}

/// The tables: per configuration, each program's change beside the paper's; then, beside
/// the baseline, the mean under `eevdf` and `signature`'s change against it, and a line
/// with the aggregate against it.
pub fn table(outcomes: &[Outcome]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    for o in outcomes {
        let f: Vec<String> = o
            .setup
            .frequencies_mhz
            .iter()
            .map(|f| format!("{:.2}", *f as f64 / 1000.0))
            .collect();
        let _ = writeln!(s, "{} ({} GHz)", o.setup.name, f.join(", "));
        let _ = writeln!(
            s,
            "  {:<9} {:>7} {:>11} {:>11} {:>11} {:>9} {:>9} {:>9} {:>11}",
            "program",
            "true E",
            "seen as",
            "cfs s",
            "signature s",
            "ours %",
            "paper %",
            "eevdf s",
            "vs eevdf %"
        );
        for p in &o.programs {
            let paper = p.paper_pct.map_or("-".into(), |v| format!("{v:+.1}"));
            let _ = writeln!(
                s,
                "  {:<9} {:>7.3} {:>11} {:>11.1} {:>11.1} {:>+9.1} {:>9} {:>9.1} {:>+11.1}",
                p.name,
                p.elasticity,
                format!("{:?}", p.predicted).to_lowercase(),
                p.baseline_s,
                p.signature_s,
                p.change_pct,
                paper,
                p.eevdf_s,
                p.change_vs_eevdf_pct
            );
        }
        let paper = o
            .setup
            .paper
            .aggregate_pct
            .map_or("-".into(), |v| format!("{v:+.1}"));
        let _ = writeln!(
            s,
            "  {:<9} {:>7} {:>11} {:>11} {:>11} {:>+9.1} {:>9}   paper: {}",
            "aggregate", "", "", "", "", o.aggregate_pct, paper, o.setup.paper.says
        );
        let _ = writeln!(
            s,
            "  aggregate vs eevdf (Linux 6.6+, beside cfs): {:+.1}\n",
            o.aggregate_vs_eevdf_pct
        );
    }
    s
}
