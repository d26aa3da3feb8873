//! The evaluation: each program alone and in pairs, under each policy; per-program and
//! average speed-up over `cfs`, beside the paper's 1.36×.
//!
//! `cfs` stands in for the paper's baseline, the CFS of its CentOS 6.0 (Linux 2.6.32),
//! and every speed-up and the claim are over it. `eevdf` (Linux's fair class since 6.6)
//! runs beside it so that a reader also sees today's Linux: its own speed-up over `cfs`,
//! and numa-amp's over it.
//!
//! A mix pairs program `i` with program `i + 6` (mod 13), so each program runs in two
//! mixes, beside a program of another class in most of them; a mix has 16 threads on 8
//! cores. A program's time is the end of its last thread (all arrive at 0); its
//! speed-up under a policy is its `cfs` time over its time under that policy, and an
//! average is the arithmetic mean over every (program, run) pair.

use crate::workload::{machine, Program, PROGRAMS, THREADS};
use hetsched_core::record::Record;
use hetsched_core::{Error, Result};
use hetsched_sim::{Config, SimTask, Simulation};
use hetsched_util::files::OutDir;
use serde::Serialize;
use std::fmt::Write as _;

/// The policies compared; the first is the baseline of every speed-up, the second
/// today's Linux beside it.
pub const POLICIES: [&str; 4] = ["cfs", "eevdf", "cfs-cap", "numa-amp"];
/// Where each policy's time is in [`Row::seconds`].
const CFS: usize = 0;
const EEVDF: usize = 1;
const CFS_CAP: usize = 2;
const NUMA_AMP: usize = 3;
/// The paper's average speed-up of its scheduler over Linux CFS.
pub const PAPER_SPEEDUP: f64 = 1.36;
/// Mix partner offset.
const MIX_OFFSET: usize = 6;

/// One program in one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub program: &'static str,
    /// `alone` or `with <other program>`.
    pub run: String,
    /// Seconds to its last thread's end, per policy (in [`POLICIES`] order).
    pub seconds: [f64; 4],
    /// `cfs` time / `eevdf` time, `cfs` time / `cfs-cap` time, and `cfs` time /
    /// `numa-amp` time.
    pub eevdf_speedup: f64,
    pub cfs_cap_speedup: f64,
    pub numa_amp_speedup: f64,
}

/// Per program: the mean speed-ups over its runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProgramSummary {
    pub program: &'static str,
    pub working_set: crate::workload::WorkingSet,
    pub llc_mpki: f64,
    /// The model's fast-over-slow speed-up factor.
    pub model_speedup_factor: f64,
    pub eevdf_speedup: f64,
    pub cfs_cap_speedup: f64,
    pub numa_amp_speedup: f64,
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
    pub paper_numa_amp_over_cfs: f64,
}

/// The program set of each run: each program alone, then the mixes.
pub fn runs() -> Vec<Vec<Program>> {
    let n = PROGRAMS.len();
    let alone = PROGRAMS.iter().map(|&p| vec![p]);
    let mixes = (0..n).map(|i| vec![PROGRAMS[i], PROGRAMS[(i + MIX_OFFSET) % n]]);
    alone.chain(mixes).collect()
}

/// The threads of a run's programs, ids in order.
pub fn tasks(programs: &[Program]) -> Vec<SimTask> {
    programs
        .iter()
        .enumerate()
        .flat_map(|(k, p)| p.threads((k * THREADS) as u64))
        .collect()
}

/// Simulates one run under `spec`, checking the record's invariants and that every
/// thread finished; returns each program's time in seconds.
pub fn simulate(spec: &str, programs: &[Program]) -> Result<Vec<f64>> {
    let m = machine()?;
    let mut policy = hetsched_policies::build(spec, 1)?;
    let mut record = Record::new(
        spec,
        m.units.iter().map(|u| u.kind).collect(),
        m.units.iter().map(|u| u.name.clone()).collect(),
    );
    let summary = Simulation::new(&m, tasks(programs), &Config::default())
        .run(policy.as_mut(), &mut record)?;
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

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

/// Runs the evaluation.
pub fn evaluate() -> Result<Report> {
    let mut rows = Vec::new();
    for programs in runs() {
        let mut times = Vec::new();
        for spec in POLICIES {
            times.push(simulate(spec, &programs)?);
        }
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
                eevdf_speedup: seconds[CFS] / seconds[EEVDF],
                cfs_cap_speedup: seconds[CFS] / seconds[CFS_CAP],
                numa_amp_speedup: seconds[CFS] / seconds[NUMA_AMP],
            });
        }
    }
    let programs = PROGRAMS
        .iter()
        .map(|p| {
            let of = |f: fn(&Row) -> f64| mean(rows.iter().filter(|r| r.program == p.name).map(f));
            ProgramSummary {
                program: p.name,
                working_set: p.working_set,
                llc_mpki: p.working_set.mpki(),
                model_speedup_factor: p.speedup(),
                eevdf_speedup: of(|r| r.eevdf_speedup),
                cfs_cap_speedup: of(|r| r.cfs_cap_speedup),
                numa_amp_speedup: of(|r| r.numa_amp_speedup),
            }
        })
        .collect();
    Ok(Report {
        machine: machine()?.name,
        policies: POLICIES,
        eevdf_over_cfs: mean(rows.iter().map(|r| r.eevdf_speedup)),
        cfs_cap_over_cfs: mean(rows.iter().map(|r| r.cfs_cap_speedup)),
        numa_amp_over_cfs: mean(rows.iter().map(|r| r.numa_amp_speedup)),
        numa_amp_over_cfs_cap: mean(
            rows.iter()
                .map(|r| r.seconds[CFS_CAP] / r.seconds[NUMA_AMP]),
        ),
        numa_amp_over_eevdf: mean(rows.iter().map(|r| r.seconds[EEVDF] / r.seconds[NUMA_AMP])),
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
            "Ding et al. on the simulated `{}` machine: speed-up over cfs (mean over each program's runs: alone and two mixes)",
            self.machine
        );
        let _ = writeln!(
            s,
            "{:<14} {:>9} {:>6} {:>9} {:>9} {:>9} {:>9}",
            "program", "wset", "MPKI", "model SF", "cfs-cap", "numa-amp", "eevdf"
        );
        for p in &self.programs {
            let _ = writeln!(
                s,
                "{:<14} {:>9} {:>6.1} {:>9.2} {:>8.3}x {:>8.3}x {:>8.3}x",
                p.program,
                format!("{:?}", p.working_set).to_lowercase(),
                p.llc_mpki,
                p.model_speedup_factor,
                p.cfs_cap_speedup,
                p.numa_amp_speedup,
                p.eevdf_speedup
            );
        }
        let _ = writeln!(
            s,
            "average over {} program runs: cfs-cap {:.3}x, numa-amp {:.3}x over cfs (paper: {:.2}x); numa-amp over cfs-cap {:.3}x",
            self.rows.len(),
            self.cfs_cap_over_cfs,
            self.numa_amp_over_cfs,
            self.paper_numa_amp_over_cfs,
            self.numa_amp_over_cfs_cap
        );
        let _ = writeln!(
            s,
            "beside cfs (the paper's Linux 2.6.32), today's Linux: eevdf {:.3}x over cfs; numa-amp over eevdf {:.3}x",
            self.eevdf_over_cfs, self.numa_amp_over_eevdf
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
                "eevdf",
                self.programs.iter().map(|p| p.eevdf_speedup).collect(),
            ),
        ];
        crate::plot::bars(
            out,
            "speedup.png",
            "Speed-up over cfs per PARSEC-like program (simulated ding machine)",
            &names,
            &series,
            ("paper: numa-amp's mean speed-up, 1.36x", PAPER_SPEEDUP),
        )
    }
}
