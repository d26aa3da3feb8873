//! The paper's experiments (Figures 3–7) and the project demo, each writing a table,
//! CSV and PNG plots into an output directory and returning its figures.

use crate::workload::{self, Devices, GPU_CHECKPOINT_COST_NS};
use hetsched_core::machine::{Machine, UnitGranularity, UnitType};
use hetsched_core::perf_model::PerfModels;
use hetsched_core::record::{EventKind, Record};
use hetsched_core::task::{Placement, QueueId, TaskId};
use hetsched_core::{report, trace};
use hetsched_core::{Error, Result};
use hetsched_sim::speed::SpeedModel;
use hetsched_sim::SimTask as Task;
use hetsched_sim::{Config, RunSummary, Simulation};
use hetsched_util::files::OutDir;
use hetsched_util::plot::{lines, Series};
use std::fmt::Write as _;

hetsched_study::assumptions! { "beisel";
    /// MD5 tasks of Fig. 3, all submitted at once: the paper's setup, §V, Fig. 3 ("We run
    /// 15 GPU affine threads").
    pub const FIG3_MD5_TASKS: usize = 15;
    /// Queue limit of the GPU in Fig. 3 (`affinity`'s `acc_limit`): the paper's setup, §V,
    /// Fig. 3 ("a limited queue length of 5 for the GPU").
    pub const GPU_QUEUE_LIMIT: usize = 5;
    /// Time-sharing granularity of the accelerator in Fig. 4 (`affinity`'s `gran_ms`), ms:
    /// the paper's setup, §V, Fig. 4 (4 s).
    pub const GRANULARITY_MS: u64 = 4000;
    /// MD5 tasks of the mix of Fig. 4 and Figs. 6–7: the paper's setup, §V, Figs. 4, 6
    /// and 7 (25 MD5 and 50 prime factorisation instances).
    pub const MIX_MD5_TASKS: usize = 25;
    /// Prime factorisation tasks of the mix of Fig. 4 and Figs. 6–7: the paper's setup,
    /// §V, Figs. 4, 6 and 7.
    pub const MIX_PRIME_TASKS: usize = 50;
    /// Runs (seeds) behind each mean of Figs. 4, 6 and 7: the paper's setup, §V, Fig. 6
    /// ("mean of total runtime for 30 runs").
    pub const RUNS: usize = 30;
    /// The numbers N of prime tasks of Fig. 5: our choice (5 to 75 in steps of 5 over
    /// the figure's axis; the paper gives no list of N).
    pub const FIG5_COUNTS: [usize; 15] = [5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75];
    /// The GPU speeds of prime factorisation swept by Fig. 5, relative to one CPU core:
    /// our choice (the paper gives affinities 1:1, not speeds; `PRIME_GPU_RATIO` is the
    /// first).
    pub const FIG5_GPU_RATIOS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];
    /// The granularities of the Figs. 6–7 sweep, ms: our choice of points from 0 (the
    /// paper's finest) to 16 s.
    pub const GRANULARITIES_MS: &[f64] = &[
        0.0, 10.0, 100.0, 500.0, 1000.0, 2000.0, 4000.0, 8000.0, 16000.0,
    ];
}

/// The paper's testbed: 16 CPU PUs and one GTX 480 (`gpu` unit).
pub fn machine() -> Result<Machine> {
    hetsched_topology::load("beisel", UnitGranularity::Pu)
}

/// Engine settings of every Beisel experiment: the GPU re-request cost.
pub fn config() -> Config {
    Config {
        checkpoint_cost_ns: GPU_CHECKPOINT_COST_NS,
        max_time_ns: None,
        max_events: None,
        ..Config::default()
    }
}

/// One simulated run with its checks done: record invariants hold, every task finished,
/// work is conserved.
pub struct Run {
    pub record: Record,
    pub summary: RunSummary,
}

pub fn simulate(machine: &Machine, spec: &str, tasks: Vec<Task>) -> Result<Run> {
    simulate_from(machine, spec, spec, tasks, PerfModels::default())
}

/// [`simulate`] from performance models kept from an earlier run (for a policy that
/// reads them, as dmda does), its record named `label`; the run's summary holds the
/// models at its end.
pub fn simulate_from(
    machine: &Machine,
    spec: &str,
    label: &str,
    tasks: Vec<Task>,
    models: PerfModels,
) -> Result<Run> {
    let mut policy = hetsched_policies::build(spec, 1)?;
    let mut record = Record::new(
        label,
        machine.units.iter().map(|u| u.kind).collect(),
        machine.units.iter().map(|u| u.name.clone()).collect(),
    );
    let config = Config { models, ..config() };
    let summary = Simulation::new(machine, tasks, &config).run(policy.as_mut(), &mut record)?;
    record
        .check()
        .map_err(|e| Error::runtime(format!("{spec}: run record invariant: {e}")))?;
    if summary.unfinished > 0 || summary.work_done_ns != summary.work_completed_ns {
        return Err(Error::runtime(format!(
            "{spec}: {} tasks unfinished, work done {} ns vs completed {} ns",
            summary.unfinished, summary.work_done_ns, summary.work_completed_ns
        )));
    }
    Ok(Run { record, summary })
}

fn write(out: &OutDir, name: &str, text: &str) -> Result<()> {
    out.write(name, text).map(drop)
}

fn secs(ns: u64) -> f64 {
    ns as f64 * 1e-9
}

/// Mean turnaround (s) and makespan (s) of a run.
pub fn turnaround_and_makespan(rec: &Record) -> (f64, f64) {
    let m = rec.metrics();
    (m.turnaround_s.mean, m.makespan_s)
}

/// The unit type of the first queue a task was put in.
fn first_queue_kinds(rec: &Record) -> Vec<(TaskId, UnitType)> {
    let mut seen = std::collections::BTreeMap::new();
    for e in &rec.events {
        if let EventKind::Enqueue {
            queue: QueueId::Unit(u),
        } = e.kind
        {
            seen.entry(e.task).or_insert(rec.unit_kinds[u as usize]);
        }
    }
    seen.into_iter().collect()
}

/// Work progress (fraction of the task) over time, from the run segments: each segment
/// is credited its compute time at the unit's speed, net of copies and GPU checkpoint
/// costs, and the curve is scaled so that it reaches 1 at completion.
pub fn progress(machine: &Machine, tasks: &[Task], rec: &Record) -> Vec<Series> {
    let speed = SpeedModel::new(machine);
    let mut out = Vec::new();
    for t in tasks {
        let mut pts = vec![(0.0, 0.0)];
        let mut raw = Vec::new();
        let mut start: Option<(u64, u32)> = None;
        let mut done = 0.0;
        for e in rec.events.iter().filter(|e| e.task == t.id) {
            match e.kind {
                EventKind::Start { unit, .. } => start = Some((e.t_ns, unit)),
                EventKind::Stop { .. } | EventKind::Complete { .. } => {
                    if let Some((s, u)) = start.take() {
                        let copy = speed.copy_in_ns(t, u) as f64;
                        let mut dur = (e.t_ns - s) as f64 - copy;
                        if machine.units[u as usize].kind != UnitType::Cpu {
                            let cp = t.checkpoint_ns.get(machine.units[u as usize].kind) as f64;
                            if cp > 0.0 {
                                dur *= cp / (cp + GPU_CHECKPOINT_COST_NS as f64);
                            }
                        }
                        done += dur.max(0.0) / speed.ns_per_work_s(t, u);
                        raw.push((secs(s), secs(e.t_ns), done));
                    }
                }
                _ => {}
            }
        }
        let total = done.max(f64::MIN_POSITIVE);
        let mut before = 0.0;
        for (s, e, d) in raw {
            pts.push((s, before / total));
            pts.push((e, d / total));
            before = d;
        }
        out.push(Series {
            name: format!("task {}", t.id),
            points: pts,
        });
    }
    out
}

/// Figure 3's figures.
pub struct Fig3 {
    pub table: String,
    pub started_cpu: usize,
    pub started_gpu: usize,
    /// CPU-started tasks that finished after the GPU first freed without migrating.
    pub not_migrated: Vec<TaskId>,
    /// Time the GPU first had a free slot (its first completion), s.
    pub gpu_freed_s: f64,
}

/// Fig. 3: 15 GPU-affine MD5 tasks at once, GPU queue limit 5.
pub fn fig3(out: &OutDir, scale: f64) -> Result<Fig3> {
    let m = machine()?;
    let tasks = workload::md5_batch(FIG3_MD5_TASKS, 3, scale);
    let spec = format!("affinity:acc_limit={GPU_QUEUE_LIMIT}");
    let r = simulate(&m, &spec, tasks.clone())?;
    let first = first_queue_kinds(&r.record);
    let started_cpu = first.iter().filter(|(_, k)| *k == UnitType::Cpu).count();
    let started_gpu = first.len() - started_cpu;
    let outcomes = r.record.outcomes();
    let gpu_freed_ns = r
        .record
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::Complete { unit } if r.record.unit_kinds[unit as usize] == UnitType::Gpu))
        .map_or(u64::MAX, |e| e.t_ns);
    let mut not_migrated = Vec::new();
    let mut table = String::from("task  start  end   migrations  completion_s\n");
    let mut csv = String::from("task,start_type,end_type,migrations,completion_s\n");
    for (o, (_, k)) in outcomes.iter().zip(&first) {
        let end_kind = r.record.unit_kinds[o.unit.unwrap() as usize];
        let end = o.end_ns.unwrap();
        if *k == UnitType::Cpu && end > gpu_freed_ns && o.migrations == 0 {
            not_migrated.push(o.task);
        }
        let _ = writeln!(
            table,
            "{:>4}  {:<5}  {:<5} {:>10}  {:>12.2}",
            o.task,
            k.name(),
            end_kind.name(),
            o.migrations,
            secs(end)
        );
        let _ = writeln!(
            csv,
            "{},{},{},{},{:.6}",
            o.task,
            k.name(),
            end_kind.name(),
            o.migrations,
            secs(end)
        );
    }
    let _ = writeln!(
        table,
        "started on CPU PUs: {started_cpu}, on the GPU: {started_gpu} (paper: 9 and 6 = 1 running + 5 queued)\n\
         GPU first freed at {:.2} s; CPU-started tasks finishing later without migrating: {} (paper: CPU tasks migrate to the GPU as it frees)\n\
         makespan {:.2} s",
        secs(gpu_freed_ns),
        not_migrated.len(),
        secs(r.summary.end_ns)
    );
    let series = progress(&m, &tasks, &r.record);
    let mut pcsv = String::from("task,time_s,progress\n");
    for (t, s) in tasks.iter().zip(&series) {
        for (x, y) in &s.points {
            let _ = writeln!(pcsv, "{},{x:.6},{y:.6}", t.id);
        }
    }
    write(out, "table.txt", &table)?;
    write(out, "tasks.csv", &csv)?;
    write(out, "progress.csv", &pcsv)?;
    lines(
        out,
        "progress.png",
        "Fig. 3: 15 MD5 tasks, GPU queue limit 5 (affinity policy)",
        "time [s]",
        "search space searched [fraction]",
        &series,
        false,
    )?;
    Ok(Fig3 {
        table,
        started_cpu,
        started_gpu,
        not_migrated,
        gpu_freed_s: secs(gpu_freed_ns),
    })
}

pub use hetsched_util::stats::Spread;

/// `n` consecutive seeds from `first`.
pub fn seeds(first: u64, n: usize) -> Vec<u64> {
    (first..).take(n).collect()
}

/// The first seed of the Fig. 4 experiment (the plotted one).
pub const FIG4_FIRST_SEED: u64 = 4;
/// The first seed of the Figs. 6–7 experiment.
pub const FIG67_FIRST_SEED: u64 = 6;

/// Figure 4's figures: (mean turnaround s, makespan s) without and with time-sharing
/// for the plotted seed, and the spread over all seeds.
pub struct Fig4 {
    pub table: String,
    pub fcfs: (f64, f64),
    pub timeshare: (f64, f64),
    /// Seeds where time-sharing had the lower mean turnaround, of `seeds`.
    pub wins: usize,
    pub seeds: usize,
    /// The per-seed mean turnaround over seeds: (FCFS, time-sharing).
    pub mean_turnaround: (Spread, Spread),
    /// Per seed, time-sharing's mean turnaround relative to FCFS's, minus 1 (−0.1 =
    /// 10 % lower).
    pub change: Spread,
    /// The latest completion of all runs, s (the paper: "after 150 seconds only long
    /// running threads remain").
    pub latest_end_s: f64,
}

/// Fig. 4: `md5` MD5 + `prime` prime tasks at once, FCFS vs 4 s granularity; the first
/// seed is plotted, every seed counts in the spread.
pub fn fig4(out: &OutDir, md5: usize, prime: usize, seeds: &[u64], scale: f64) -> Result<Fig4> {
    let m = machine()?;
    let timeshare = format!("affinity:gran_ms={GRANULARITY_MS}");
    let runs = [
        ("FCFS (no time-sharing)", "affinity:fcfs=1"),
        ("time-sharing, 4 s granularity", timeshare.as_str()),
    ];
    let mut series = Vec::new();
    let mut figures = Vec::new();
    let mut csv = String::from("seed,policy,task,type,turnaround_s\n");
    let (mut wins, mut f_means, mut t_means, mut changes) = (0, vec![], vec![], vec![]);
    let mut latest_end_s = 0.0f64;
    for (i, &seed) in seeds.iter().enumerate() {
        let tasks = workload::mix(md5, prime, Devices::Both, seed, scale);
        let mut means = Vec::new();
        for (label, spec) in runs {
            let r = simulate(&m, spec, tasks.clone())?;
            let mut pts = Vec::new();
            for o in r.record.outcomes() {
                let ta = secs(o.turnaround_ns().unwrap());
                pts.push((o.task as f64, ta));
                let _ = writeln!(csv, "{seed},{spec},{},{},{ta:.6}", o.task, o.kind);
            }
            let f = turnaround_and_makespan(&r.record);
            latest_end_s = latest_end_s.max(f.1);
            means.push(f.0);
            if i == 0 {
                figures.push(f);
                series.push(Series {
                    name: label.into(),
                    points: pts,
                });
            }
        }
        wins += usize::from(means[1] < means[0]);
        f_means.push(means[0]);
        t_means.push(means[1]);
        changes.push(means[1] / means[0] - 1.0);
    }
    if figures.is_empty() {
        return Err(Error::input("beisel-fig4: --seeds must be at least 1"));
    }
    let mean_turnaround = (Spread::of(&f_means), Spread::of(&t_means));
    let change = Spread::of(&changes);
    let table = format!(
        "{md5} MD5 + {prime} prime tasks started together on the Beisel machine (16 PUs + GTX 480), seed {}\n\
         run                              mean_turnaround_s  makespan_s\n\
         FCFS (no time-sharing)           {:>17.2}  {:>10.2}\n\
         time-sharing, 4 s granularity    {:>17.2}  {:>10.2}\n\
         over {} seeds (mean ± sd [min, max]): mean turnaround {} s (FCFS) vs {} s (time-sharing);\n\
         time-sharing vs FCFS per seed {:+.1} % ± {:.1} % [{:+.1} %, {:+.1} %], lower in {wins} seeds; latest completion {:.1} s\n\
         paper (Fig. 4): time-sharing lowers the average turnaround; long tasks no longer block short ones; after 150 s only long tasks remain\n",
        seeds[0],
        figures[0].0, figures[0].1, figures[1].0, figures[1].1,
        seeds.len(), mean_turnaround.0, mean_turnaround.1,
        100.0 * change.mean, 100.0 * change.sd, 100.0 * change.min, 100.0 * change.max,
        latest_end_s
    );
    write(out, "table.txt", &table)?;
    write(out, "turnaround.csv", &csv)?;
    lines(
        out,
        "turnaround.png",
        "Fig. 4: turnaround per task, FCFS vs 4 s granularity",
        "task",
        "turnaround [s]",
        &series,
        true,
    )?;
    Ok(Fig4 {
        table,
        fcfs: figures[0],
        timeshare: figures[1],
        wins,
        seeds: seeds.len(),
        mean_turnaround,
        change,
        latest_end_s,
    })
}

/// (N, GPU-alone makespan, GPU+CPU makespan, GPU-alone and GPU+CPU mean turnaround), s.
pub type Fig5Row = (usize, f64, f64, f64, f64);

/// Figure 5's figures: one row per N for each swept GPU speed.
pub struct Fig5 {
    pub table: String,
    /// (GPU speed relative to a CPU core, rows).
    pub sweep: Vec<(f64, Vec<Fig5Row>)>,
}

impl Fig5 {
    /// The rows at the first (plotted) GPU speed.
    pub fn rows(&self) -> &[Fig5Row] {
        &self.sweep[0].1
    }
}

/// Fig. 5: N prime tasks on the GPU alone vs the GPU plus the CPU cores, for each GPU
/// speed of prime factorisation in `gpu_ratios` (the first is plotted in full).
pub fn fig5(out: &OutDir, counts: &[usize], gpu_ratios: &[f64], scale: f64) -> Result<Fig5> {
    let m = machine()?;
    if gpu_ratios.is_empty() {
        return Err(Error::input("beisel-fig5: no GPU speed to run"));
    }
    let mut sweep = Vec::new();
    let mut csv = String::from(
        "gpu_ratio,n,gpu_makespan_s,both_makespan_s,gpu_mean_turnaround_s,both_mean_turnaround_s\n",
    );
    for &ratio in gpu_ratios {
        let mut rows = Vec::new();
        for &n in counts {
            let batch = |d| workload::prime_batch(n, d, 5, scale, ratio);
            let gpu = simulate(&m, "affinity", batch(Devices::GpuOnly))?;
            let both = simulate(&m, "affinity", batch(Devices::Both))?;
            let (gm, gs) = turnaround_and_makespan(&gpu.record);
            let (bm, bs) = turnaround_and_makespan(&both.record);
            let _ = writeln!(csv, "{ratio},{n},{gs:.6},{bs:.6},{gm:.6},{bm:.6}");
            rows.push((n, gs, bs, gm, bm));
        }
        sweep.push((ratio, rows));
    }
    let mut table = format!(
        "GPU speed of prime factorisation = {}x one CPU core (assumed; swept below)\n    N  gpu_makespan_s  both_makespan_s  gpu_mean_s  both_mean_s\n",
        gpu_ratios[0]
    );
    for &(n, gs, bs, gm, bm) in &sweep[0].1 {
        let _ = writeln!(
            table,
            "{n:>5}  {gs:>14.2}  {bs:>15.2}  {gm:>10.2}  {bm:>11.2}"
        );
    }
    table += "sweep: GPU speed  N with a lower mean (GPU + CPUs)  N with a lower makespan  mean runtime GPU+CPUs / GPU alone [min, max]\n";
    for (ratio, rows) in &sweep {
        let lower_mean = rows.iter().filter(|r| r.4 < r.3).count();
        let lower_span = rows.iter().filter(|r| r.2 < r.1).count();
        let rel = Spread::of(&rows.iter().map(|r| r.4 / r.3).collect::<Vec<_>>());
        let _ = writeln!(
            table,
            "{ratio:>16}x  {lower_mean:>17} of {:<13}  {lower_span:>11} of {:<10}  [{:.2}, {:.2}]",
            rows.len(),
            rows.len(),
            rel.min,
            rel.max
        );
    }
    table += "paper (Fig. 5): the average runtime of N prime tasks is lower on GPU + CPU cores than on the GPU alone (no GPU speed given)\n";
    write(out, "table.txt", &table)?;
    write(out, "runtimes.csv", &csv)?;
    let rows = &sweep[0].1;
    let s = |name: &str, f: &dyn Fn(&Fig5Row) -> f64| Series {
        name: name.into(),
        points: rows.iter().map(|r| (r.0 as f64, f(r))).collect(),
    };
    lines(
        out,
        "runtimes.png",
        &format!(
            "Fig. 5: N prime tasks, GPU alone vs GPU + CPU cores (GPU = {}x a core)",
            gpu_ratios[0]
        ),
        "prime tasks N",
        "time [s]",
        &[
            s("GPU alone: total runtime", &|r| r.1),
            s("GPU + CPUs: total runtime", &|r| r.2),
            s("GPU alone: mean runtime", &|r| r.3),
            s("GPU + CPUs: mean runtime", &|r| r.4),
        ],
        false,
    )?;
    // One curve per N: how the gain depends on the assumed GPU speed.
    let per_n: Vec<Series> = (0..counts.len())
        .map(|i| Series {
            name: format!("N = {}", counts[i]),
            points: sweep
                .iter()
                .map(|(ratio, rows)| (ratio.log2(), rows[i].4 / rows[i].3))
                .collect(),
        })
        .collect();
    lines(
        out,
        "gpu-speed-sweep.png",
        "Fig. 5 sweep: mean runtime GPU + CPUs / GPU alone (< 1: the paper's claim holds)",
        "log2(GPU speed / one CPU core) for prime factorisation",
        "mean runtime ratio",
        &per_n,
        false,
    )?;
    Ok(Fig5 { table, sweep })
}

/// (granularity ms or `None` = FCFS, total runtime s, mean turnaround s), over seeds.
pub type Fig67Row = (Option<f64>, Spread, Spread);

/// Figures 6–7's figures, one row per granularity.
pub struct Fig67 {
    pub table: String,
    pub rows: Vec<Fig67Row>,
    /// Seeds behind each point.
    pub seeds: usize,
}

/// Figs. 6–7: 25 MD5 + 50 prime tasks on the GPU, granularity sweep and FCFS, each
/// point over `seeds` (the paper: the mean of 30 runs).
pub fn fig6_7(
    out: &OutDir,
    md5: usize,
    prime: usize,
    grans_ms: &[f64],
    seeds: &[u64],
    scale: f64,
) -> Result<Fig67> {
    let m = machine()?;
    if seeds.is_empty() {
        return Err(Error::input("beisel-fig6-7: --seeds must be at least 1"));
    }
    let mixes: Vec<Vec<Task>> = seeds
        .iter()
        .map(|&s| workload::mix(md5, prime, Devices::GpuOnly, s, scale))
        .collect();
    let mut rows = Vec::new();
    let mut table = format!(
        "over {} seeds, mean ± sd [min, max]\ngranularity      total_runtime_s                      mean_turnaround_s\n",
        seeds.len()
    );
    let mut csv = String::from("granularity_ms,seed,total_runtime_s,mean_turnaround_s\n");
    let specs: Vec<(Option<f64>, String)> = grans_ms
        .iter()
        .map(|&g| (Some(g), format!("affinity:gran_ms={g}")))
        .chain([(None, "affinity:fcfs=1".to_string())])
        .collect();
    for (g, spec) in specs {
        let (mut spans, mut means) = (Vec::new(), Vec::new());
        for (tasks, seed) in mixes.iter().zip(seeds) {
            let r = simulate(&m, &spec, tasks.clone())?;
            let (mean, makespan) = turnaround_and_makespan(&r.record);
            let _ = writeln!(
                csv,
                "{},{seed},{makespan:.6},{mean:.6}",
                g.map_or("fcfs".into(), |g| g.to_string())
            );
            spans.push(makespan);
            means.push(mean);
        }
        let (span, mean) = (Spread::of(&spans), Spread::of(&means));
        let label = g.map_or("FCFS".to_string(), |g| format!("{g} ms"));
        let _ = writeln!(table, "{label:<15}  {:<35}  {mean}", span.to_string());
        rows.push((g, span, mean));
    }
    table += "paper (Figs. 6, 7; mean of 30 runs): total runtime rises as the granularity falls (switching overhead; FCFS lowest);\n\
              mean turnaround is high at granularity 0 (overheads) and under FCFS (long tasks block short ones)\n";
    write(out, "table.txt", &table)?;
    write(out, "granularity.csv", &csv)?;
    let pts = |f: &dyn Fn(&Fig67Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|r| r.0.is_some())
            .map(|r| (r.0.unwrap() / 1000.0, f(r)))
            .collect()
    };
    let fcfs = rows.iter().find(|r| r.0.is_none()).copied();
    let max_g = grans_ms.iter().copied().fold(0.0, f64::max) / 1000.0;
    let flat = |v: f64| vec![(0.0, v), (max_g, v)];
    // One figure: a measure's mean over seeds against the granularity, time-sharing
    // beside FCFS's level.
    let plot = |file: &str, title: &str, ylabel: &str, measure: &dyn Fn(&Fig67Row) -> f64| {
        lines(
            out,
            file,
            title,
            "granularity [s]",
            ylabel,
            &[
                Series {
                    name: "time-sharing".into(),
                    points: pts(measure),
                },
                Series {
                    name: "FCFS".into(),
                    points: fcfs.map_or(vec![], |f| flat(measure(&f))),
                },
            ],
            false,
        )
    };
    plot(
        "fig6-total-runtime.png",
        &format!(
            "Fig. 6: mean total runtime over {} seeds vs granularity (all tasks on the GPU)",
            seeds.len()
        ),
        "total runtime [s]",
        &|r| r.1.mean,
    )?;
    plot(
        "fig7-mean-turnaround.png",
        &format!(
            "Fig. 7: mean turnaround over {} seeds vs granularity (all tasks on the GPU)",
            seeds.len()
        ),
        "mean turnaround [s]",
        &|r| r.2.mean,
    )?;
    Ok(Fig67 {
        table,
        rows,
        seeds: seeds.len(),
    })
}

/// Runs with more record events than this stay out of the demo's trace.
pub const TRACE_MAX_EVENTS: usize = 200_000;

/// The demo's policies.
pub const DEMO_POLICIES: &[&str] = &["fcfs", "cfs", "dmda", "affinity", "dmda-cold"];

/// What the demo says under its table about its two dmda rows.
pub const DMDA_NOTE: &str = "dmda runs as a StarPU user runs it: its models calibrated by a first run of the same mix (dmda-cold, which starts with none: it places tasks by load per assumed speed-up, calibrating each unit class), then kept for the measured run";

/// The demo: the Fig. 4 mix on the Beisel machine under fcfs, cfs, dmda and affinity;
/// the comparison table, plots and a Perfetto trace. Returns the table.
pub fn demo(out: &OutDir) -> Result<String> {
    let m = machine()?;
    let tasks = workload::mix(MIX_MD5_TASKS, MIX_PRIME_TASKS, Devices::Both, 4, 1.0);
    let mut records = Vec::new();
    let mut metrics = Vec::new();
    let mut series = Vec::new();
    // dmda's calibration run first: the measured run starts from its models.
    let cold = simulate_from(
        &m,
        "dmda",
        "dmda-cold",
        tasks.clone(),
        PerfModels::default(),
    )?;
    let calibrated = cold.summary.models.clone().unwrap_or_default();
    let mut cold = Some(cold);
    for spec in DEMO_POLICIES {
        let r = match *spec {
            "dmda-cold" => cold.take().expect("run once"),
            "dmda" => simulate_from(&m, "dmda", "dmda", tasks.clone(), calibrated.clone())?,
            _ => simulate(&m, spec, tasks.clone())?,
        };
        write(
            out,
            &format!("tasks-{}.csv", report::file_safe(spec)),
            &report::tasks_csv(&r.record),
        )?;
        let mut ta: Vec<f64> = r
            .record
            .outcomes()
            .iter()
            .filter_map(|o| o.turnaround_ns().map(secs))
            .collect();
        ta.sort_by(f64::total_cmp);
        series.push(Series {
            name: spec.to_string(),
            points: ta
                .iter()
                .enumerate()
                .map(|(i, &t)| (t, (i + 1) as f64))
                .collect(),
        });
        metrics.push(r.record.metrics());
        records.push(r.record);
    }
    let table = format!(
        "25 MD5 + 50 prime tasks (Beisel et al. Fig. 4 mix) on the Beisel machine: 16 CPU PUs + GTX 480\n{}{DMDA_NOTE}\n",
        report::table(&metrics)
    );
    write(out, "table.txt", &table)?;
    // cfs's 6 ms CPU slices make millions of segments (a trace of hundreds of MB): the
    // trace keeps the runs small enough to open in Perfetto and names the others.
    let (small, large): (Vec<Record>, Vec<Record>) = records
        .into_iter()
        .partition(|r| r.events.len() <= TRACE_MAX_EVENTS);
    let mut table = table;
    if !large.is_empty() {
        let names: Vec<&str> = large.iter().map(|r| r.policy.as_str()).collect();
        let _ = writeln!(
            table,
            "trace.json leaves out {} (more than {TRACE_MAX_EVENTS} events)",
            names.join(", ")
        );
    }
    let doc = trace::trace(&small);
    write(
        out,
        "trace.json",
        &serde_json::to_string(&doc).map_err(Error::runtime)?,
    )?;
    write(out, "table.txt", &table)?;
    lines(
        out,
        "turnaround-cdf.png",
        "Demo: tasks finished by turnaround time (higher and further left is better)",
        "turnaround [s]",
        "tasks completed",
        &series,
        false,
    )?;
    Ok(table)
}

/// Whether a run ever placed (queued, started, migrated) `task` on a unit of `kind`.
pub fn ever_on(rec: &Record, task: TaskId, kind: UnitType) -> bool {
    rec.events.iter().filter(|e| e.task == task).any(|e| match e.kind {
        EventKind::Enqueue { queue: QueueId::Unit(u) } => rec.unit_kinds[u as usize] == kind,
        EventKind::Start { unit, .. } => rec.unit_kinds[unit as usize] == kind,
        EventKind::Migrate { to, .. } => rec.unit_kinds[to as usize] == kind,
        _ => false,
    }) || rec.events.iter().any(|e| {
        e.task == task
            && matches!(e.kind, EventKind::Migrate { from: Placement::Running(u), .. } if rec.unit_kinds[u as usize] == kind)
    })
}
