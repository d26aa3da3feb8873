//! The evaluation: each program alone and in pairs, under each policy; per-program and
//! average speed-up over `cfs`, beside the paper's 1.36×.
//!
//! `cfs` stands in for the paper's baseline, the CFS of its CentOS 6.0 (Linux 2.6.32),
//! and every speed-up and the claim are over it. `eevdf` (Linux's fair class since 6.6)
//! runs beside it so that a reader also sees today's Linux: its own speed-up over `cfs`,
//! and numa-amp's over it. numa-amp also runs without page migration
//! (`numa-amp:page_moves=0`), so that the report shows what its NUMA half adds.
//!
//! A run is one program alone or two in a mix (every pair, the first program's memory
//! on node 0, the second's on node 1, [`DATA_NODES`]); a mix has 16 threads on 8
//! cores. A program's time is the end of its last thread (all arrive at 0); its
//! speed-up under a policy is its `cfs` time over its time under that policy, and an
//! average is the arithmetic mean over every (program, run) pair.

use crate::workload::{
    Memory, Parallelism, Program, DATA_NODES, LINE_BYTES, MEMORY_LATENCY_NS, MPKI_LARGE,
    NODE_BANDWIDTH, ONE_THREAD_STREAM, PROGRAMS, THREADS,
};
use hetsched_core::policy::Policy;
use hetsched_core::record::Record;
use hetsched_core::{Error, Result};
use hetsched_policies::numa_amp::{NumaAmp, Triggers};
use hetsched_policies::params::Params;
use hetsched_sim::{Config, SimTask, Simulation};
use hetsched_util::files::OutDir;
use serde::Serialize;
use std::fmt::Write as _;

/// The policies compared; the first is the baseline of every speed-up, the second
/// today's Linux beside it.
pub const POLICIES: [&str; 4] = ["cfs", "eevdf", "cfs-cap", "numa-amp"];
/// numa-amp without page migration: its AMP half and NUMA-list thread moves only.
pub const NUMA_AMP_NO_PAGES: &str = "numa-amp:page_moves=0";
/// Where each policy's time is in [`Row::seconds`].
const CFS: usize = 0;
const EEVDF: usize = 1;
const CFS_CAP: usize = 2;
const NUMA_AMP: usize = 3;
/// The paper's average speed-up of its scheduler over Linux CFS.
pub const PAPER_SPEEDUP: f64 = 1.36;

/// One program in one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub program: &'static str,
    /// `alone` or `with <other program>`.
    pub run: String,
    /// Seconds to its last thread's end, per policy (in [`POLICIES`] order).
    pub seconds: [f64; 4],
    /// Its seconds under `numa-amp:page_moves=0`.
    pub numa_amp_no_pages_seconds: f64,
    /// `cfs` time / `eevdf` time, `cfs` time / `cfs-cap` time, and `cfs` time /
    /// `numa-amp` time.
    pub eevdf_speedup: f64,
    pub cfs_cap_speedup: f64,
    pub numa_amp_speedup: f64,
    /// How often numa-amp's triggers fired in the run (both programs together): eager,
    /// lazy, NUMA-list swaps, page moves.
    pub numa_amp_triggers: [u64; 4],
}

/// Per program: its model and the mean speed-ups over its runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProgramSummary {
    pub program: &'static str,
    pub working_set: crate::workload::WorkingSet,
    pub parallelism: Parallelism,
    pub llc_mpki: f64,
    /// The fraction of its time waiting for local memory on a fast core, uncontended.
    pub memory_bound: f64,
    /// The machine's fast-over-slow speed-up of a thread (local memory, uncontended).
    pub machine_speedup_factor: f64,
    /// Its eight threads' bandwidth draw over one node's bandwidth.
    pub node_demand_ratio: f64,
    pub eevdf_speedup: f64,
    pub cfs_cap_speedup: f64,
    pub numa_amp_speedup: f64,
    pub numa_amp_no_pages_speedup: f64,
}

/// Mean speed-ups over `cfs` of a set of (program, run) pairs, and numa-amp's over
/// `eevdf` (means of per-pair ratios).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Averages {
    pub pairs: usize,
    pub eevdf_over_cfs: f64,
    pub cfs_cap_over_cfs: f64,
    pub numa_amp_over_cfs: f64,
    pub numa_amp_no_pages_over_cfs: f64,
    pub numa_amp_over_eevdf: f64,
}

impl Averages {
    fn of<'a>(rows: impl Iterator<Item = &'a Row> + Clone) -> Averages {
        Averages {
            pairs: rows.clone().count(),
            eevdf_over_cfs: mean(rows.clone().map(|r| r.eevdf_speedup)),
            cfs_cap_over_cfs: mean(rows.clone().map(|r| r.cfs_cap_speedup)),
            numa_amp_over_cfs: mean(rows.clone().map(|r| r.numa_amp_speedup)),
            numa_amp_no_pages_over_cfs: mean(
                rows.clone()
                    .map(|r| r.seconds[CFS] / r.numa_amp_no_pages_seconds),
            ),
            numa_amp_over_eevdf: mean(rows.map(|r| r.seconds[EEVDF] / r.seconds[NUMA_AMP])),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub machine: String,
    pub policies: [&'static str; 4],
    pub rows: Vec<Row>,
    pub programs: Vec<ProgramSummary>,
    /// Mean speed-up over `cfs` of `eevdf`, `cfs-cap` and `numa-amp`, and of `numa-amp`
    /// over `cfs-cap` and over `eevdf` (mean of per-run ratios).
    pub eevdf_over_cfs: f64,
    pub cfs_cap_over_cfs: f64,
    pub numa_amp_over_cfs: f64,
    pub numa_amp_over_cfs_cap: f64,
    pub numa_amp_over_eevdf: f64,
    /// The same averages over the programs alone, over the mixes, and over all.
    pub alone: Averages,
    pub mixes: Averages,
    pub all: Averages,
    /// numa-amp's trigger counts summed over the runs: eager, lazy, NUMA-list swaps,
    /// page moves.
    pub numa_amp_triggers: [u64; 4],
    /// The averages with one assumption changed at a time ([`SENSITIVITY`]).
    pub sensitivity: Vec<Sensitivity>,
    pub paper_numa_amp_over_cfs: f64,
}

/// The program set of each run: each program alone, then every pair.
pub fn runs() -> Vec<Vec<Program>> {
    let n = PROGRAMS.len();
    let alone = PROGRAMS.iter().map(|&p| vec![p]);
    let mixes = (0..n).flat_map(|i| (i + 1..n).map(move |j| vec![PROGRAMS[i], PROGRAMS[j]]));
    alone.chain(mixes).collect()
}

/// The threads of a run's programs, ids in order, the `k`-th program's memory on
/// `DATA_NODES[k]`.
pub fn tasks(programs: &[Program]) -> Vec<SimTask> {
    tasks_in(&Memory::ASSUMED, programs)
}

/// [`tasks`] on memory `m`.
pub fn tasks_in(m: &Memory, programs: &[Program]) -> Vec<SimTask> {
    programs
        .iter()
        .enumerate()
        .flat_map(|(k, p)| p.threads_in(m, (k * THREADS) as u64, DATA_NODES[k % DATA_NODES.len()]))
        .collect()
}

/// Simulates one run under `policy` (named `spec`), checking the record's invariants
/// and that every thread finished; returns each program's time in seconds.
pub fn simulate_with<P: Policy + ?Sized>(
    spec: &str,
    policy: &mut P,
    programs: &[Program],
) -> Result<Vec<f64>> {
    simulate_in(&Memory::ASSUMED, spec, policy, programs)
}

/// [`simulate_with`] on memory `mem`.
pub fn simulate_in<P: Policy + ?Sized>(
    mem: &Memory,
    spec: &str,
    policy: &mut P,
    programs: &[Program],
) -> Result<Vec<f64>> {
    let m = mem.machine()?;
    let mut record = Record::new(
        spec,
        m.units.iter().map(|u| u.kind).collect(),
        m.units.iter().map(|u| u.name.clone()).collect(),
    );
    let summary = Simulation::new(&m, tasks_in(mem, programs), &Config::default())
        .run(policy, &mut record)?;
    record
        .check()
        .map_err(|e| Error::runtime(format!("ding, {spec}: run record invariant: {e}")))?;
    if summary.unfinished > 0 || summary.work_done_ns != summary.work_completed_ns {
        return Err(Error::runtime(format!(
            "ding, {spec}: {} threads unfinished",
            summary.unfinished
        )));
    }
    let mut ends = vec![0u64; programs.len()];
    for o in record.outcomes() {
        let k = o.task as usize / THREADS;
        ends[k] = ends[k].max(o.end_ns.unwrap_or(u64::MAX));
    }
    Ok(ends.iter().map(|&e| e as f64 * 1e-9).collect())
}

/// Simulates one run under the registry's policy `spec`.
pub fn simulate(spec: &str, programs: &[Program]) -> Result<Vec<f64>> {
    let mut policy = hetsched_policies::build(spec, 1)?;
    simulate_with(spec, policy.as_mut(), programs)
}

/// numa-amp under `spec` (`numa-amp` with parameters), built directly so that its
/// trigger counts can be read.
pub fn numa_amp(spec: &str) -> Result<NumaAmp> {
    let (_, mut params) = Params::parse(spec)?;
    NumaAmp::from_params(spec, &mut params)
}

/// Simulates one run under numa-amp `spec`; each program's time and the triggers.
pub fn simulate_numa_amp(spec: &str, programs: &[Program]) -> Result<(Vec<f64>, Triggers)> {
    simulate_numa_amp_in(&Memory::ASSUMED, spec, programs)
}

fn simulate_numa_amp_in(
    mem: &Memory,
    spec: &str,
    programs: &[Program],
) -> Result<(Vec<f64>, Triggers)> {
    let mut policy = numa_amp(spec)?;
    let times = simulate_in(mem, spec, &mut policy, programs)?;
    Ok((times, policy.triggers()))
}

/// One assumption changed at a time, for the sensitivity runs: its label and the
/// memory it gives. Not tuned: each goes to a bound its own source gives (no bandwidth
/// limit; twice the bandwidth, one socket of two; one miss in flight, a pointer chase;
/// 12.5, streaming; the unbounded class at the large class's MPKI) and the report
/// prints what each gives.
pub const SENSITIVITY: [(&str, Memory); 5] = {
    let a = Memory::ASSUMED;
    [
        (
            "no bandwidth limit",
            Memory {
                node_bandwidth: None,
                ..a
            },
        ),
        (
            "node bandwidth 12.5 GB/s",
            Memory {
                node_bandwidth: Some(2.0 * NODE_BANDWIDTH),
                ..a
            },
        ),
        (
            "1 miss in flight (160 ns stall)",
            Memory {
                misses_in_flight: 1.0,
                ..a
            },
        ),
        (
            "12.5 misses in flight (12.8 ns stall)",
            Memory {
                misses_in_flight: ONE_THREAD_STREAM * MEMORY_LATENCY_NS * 1e-9 / LINE_BYTES,
                ..a
            },
        ),
        (
            "unbounded class at 5 MPKI",
            Memory {
                mpki: [a.mpki[0], a.mpki[1], a.mpki[2], MPKI_LARGE],
                ..a
            },
        ),
    ]
};

/// What one sensitivity run gives: the averages over all (program, run) pairs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sensitivity {
    pub variant: &'static str,
    pub memory: Memory,
    pub averages: Averages,
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

/// Runs the evaluation on the assumed memory, then each [`SENSITIVITY`] variant.
pub fn evaluate() -> Result<Report> {
    let mut report = evaluate_in(&Memory::ASSUMED)?;
    for (variant, memory) in SENSITIVITY {
        let averages = evaluate_in(&memory)?.all;
        report.sensitivity.push(Sensitivity {
            variant,
            memory,
            averages,
        });
    }
    Ok(report)
}

/// Runs the evaluation on memory `mem` (no sensitivity runs).
pub fn evaluate_in(mem: &Memory) -> Result<Report> {
    let mut rows = Vec::new();
    let mut totals = [0u64; 4];
    for programs in runs() {
        let mut times = Vec::new();
        let mut triggers = Triggers::default();
        for spec in POLICIES {
            if spec == "numa-amp" {
                let (t, tr) = simulate_numa_amp_in(mem, spec, &programs)?;
                times.push(t);
                triggers = tr;
            } else {
                let mut policy = hetsched_policies::build(spec, 1)?;
                times.push(simulate_in(mem, spec, policy.as_mut(), &programs)?);
            }
        }
        let (no_pages, _) = simulate_numa_amp_in(mem, NUMA_AMP_NO_PAGES, &programs)?;
        let counts = [
            triggers.eager,
            triggers.lazy,
            triggers.numa,
            triggers.page_moves,
        ];
        totals.iter_mut().zip(counts).for_each(|(t, c)| *t += c);
        for (k, p) in programs.iter().enumerate() {
            let seconds = [
                times[CFS][k],
                times[EEVDF][k],
                times[CFS_CAP][k],
                times[NUMA_AMP][k],
            ];
            let run = match programs.iter().enumerate().find(|&(j, _)| j != k) {
                Some((_, other)) => format!("with {}", other.name),
                None => "alone".to_string(),
            };
            rows.push(Row {
                program: p.name,
                run,
                seconds,
                numa_amp_no_pages_seconds: no_pages[k],
                eevdf_speedup: seconds[CFS] / seconds[EEVDF],
                cfs_cap_speedup: seconds[CFS] / seconds[CFS_CAP],
                numa_amp_speedup: seconds[CFS] / seconds[NUMA_AMP],
                numa_amp_triggers: counts,
            });
        }
    }
    let programs = PROGRAMS
        .iter()
        .map(|p| {
            let of =
                |f: &dyn Fn(&Row) -> f64| mean(rows.iter().filter(|r| r.program == p.name).map(f));
            ProgramSummary {
                program: p.name,
                working_set: p.working_set,
                parallelism: p.parallelism,
                llc_mpki: mem.mpki(p.working_set),
                memory_bound: p.memory_bound_in(mem),
                machine_speedup_factor: p.speedup_in(mem),
                node_demand_ratio: mem
                    .node_bandwidth
                    .map_or(0.0, |b| THREADS as f64 * p.bandwidth_per_thread_in(mem) / b),
                eevdf_speedup: of(&|r| r.eevdf_speedup),
                cfs_cap_speedup: of(&|r| r.cfs_cap_speedup),
                numa_amp_speedup: of(&|r| r.numa_amp_speedup),
                numa_amp_no_pages_speedup: of(&|r| r.seconds[CFS] / r.numa_amp_no_pages_seconds),
            }
        })
        .collect();
    let all = Averages::of(rows.iter());
    Ok(Report {
        machine: mem.machine()?.name,
        policies: POLICIES,
        eevdf_over_cfs: all.eevdf_over_cfs,
        cfs_cap_over_cfs: all.cfs_cap_over_cfs,
        numa_amp_over_cfs: all.numa_amp_over_cfs,
        numa_amp_over_cfs_cap: mean(
            rows.iter()
                .map(|r| r.seconds[CFS_CAP] / r.seconds[NUMA_AMP]),
        ),
        numa_amp_over_eevdf: all.numa_amp_over_eevdf,
        alone: Averages::of(rows.iter().filter(|r| r.run == "alone")),
        mixes: Averages::of(rows.iter().filter(|r| r.run != "alone")),
        all,
        numa_amp_triggers: totals,
        sensitivity: Vec::new(),
        paper_numa_amp_over_cfs: PAPER_SPEEDUP,
        rows,
        programs,
    })
}

impl Report {
    /// The per-program table and the averages.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Ding et al. on the simulated `{}` machine: speed-up over cfs (mean over each program's runs: alone and {} mixes)",
            self.machine,
            self.programs.len().saturating_sub(1)
        );
        let _ = writeln!(
            s,
            "{:<13} {:>9} {:>13} {:>5} {:>5} {:>5} {:>7} {:>8} {:>9} {:>9} {:>8}",
            "program",
            "wset",
            "model",
            "MPKI",
            "mu",
            "SF",
            "bw/node",
            "cfs-cap",
            "numa-amp",
            "no-pages",
            "eevdf"
        );
        for p in &self.programs {
            let _ = writeln!(
                s,
                "{:<13} {:>9} {:>13} {:>5.1} {:>5.2} {:>5.2} {:>7.2} {:>7.3}x {:>8.3}x {:>8.3}x {:>7.3}x",
                p.program,
                format!("{:?}", p.working_set).to_lowercase(),
                serde_json::to_value(p.parallelism)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                p.llc_mpki,
                p.memory_bound,
                p.machine_speedup_factor,
                p.node_demand_ratio,
                p.cfs_cap_speedup,
                p.numa_amp_speedup,
                p.numa_amp_no_pages_speedup,
                p.eevdf_speedup
            );
        }
        for (name, a) in [
            ("alone", &self.alone),
            ("mixes", &self.mixes),
            ("all", &self.all),
        ] {
            let _ = writeln!(
                s,
                "{name:<5} ({:>2} program runs): cfs-cap {:.3}x, numa-amp {:.3}x (without page moves {:.3}x), eevdf {:.3}x over cfs; numa-amp over eevdf {:.3}x",
                a.pairs,
                a.cfs_cap_over_cfs,
                a.numa_amp_over_cfs,
                a.numa_amp_no_pages_over_cfs,
                a.eevdf_over_cfs,
                a.numa_amp_over_eevdf
            );
        }
        let [eager, lazy, numa, pages] = self.numa_amp_triggers;
        let _ = writeln!(
            s,
            "numa-amp's triggers over all runs: eager {eager}, lazy {lazy}, NUMA-list swaps {numa}, page moves {pages}"
        );
        for v in &self.sensitivity {
            let a = &v.averages;
            let _ = writeln!(
                s,
                "sensitivity, {:<38} numa-amp {:.3}x (without page moves {:.3}x), cfs-cap {:.3}x over cfs",
                format!("{}:", v.variant),
                a.numa_amp_over_cfs,
                a.numa_amp_no_pages_over_cfs,
                a.cfs_cap_over_cfs
            );
        }
        let _ = writeln!(
            s,
            "paper: numa-amp {:.2}x over cfs; numa-amp over cfs-cap {:.3}x",
            self.paper_numa_amp_over_cfs, self.numa_amp_over_cfs_cap
        );
        s
    }

    /// Writes `table.txt`, `ding.json` and `speedup.png` into `out`.
    pub fn write(&self, out: &OutDir) -> Result<()> {
        out.write("table.txt", self.table())?;
        let json = serde_json::to_string_pretty(self)
            .map_err(|e| Error::runtime(format!("ding report: {e}")))?;
        out.write("ding.json", json)?;
        let names: Vec<&str> = self.programs.iter().map(|p| p.program).collect();
        let series = [
            (
                "cfs-cap",
                self.programs.iter().map(|p| p.cfs_cap_speedup).collect(),
            ),
            (
                "numa-amp",
                self.programs.iter().map(|p| p.numa_amp_speedup).collect(),
            ),
            (
                "numa-amp, no page moves",
                self.programs
                    .iter()
                    .map(|p| p.numa_amp_no_pages_speedup)
                    .collect(),
            ),
            (
                "eevdf",
                self.programs.iter().map(|p| p.eevdf_speedup).collect(),
            ),
        ];
        crate::plot::bars(
            out,
            "speedup.png",
            "Speed-up over cfs per PARSEC program (simulated ding machine)",
            &names,
            &series,
            ("paper: numa-amp's mean speed-up, 1.36x", PAPER_SPEEDUP),
        )
    }
}
