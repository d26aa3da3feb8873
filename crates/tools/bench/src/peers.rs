//! hetsched beside the peers a user would pick instead, run by our benchmarks in the same
//! session: `hetsched bench peers` puts the simulator beside SimGrid (S4U, C++) and
//! SimPy on one bag of tasks; `hetsched bench daemon` ends with StarPU's own overhead
//! examples ([`starpu_beside`]).
//!
//! Why: a figure of ours means little without the peer's beside it, measured in the same
//! session on the same machine (issue #21 measured the engine at 5–6× SimGrid 3.32 and
//! 3–4× SimPy 4.1, and `simulate` at par with SimGrid). Every simulator gets the same
//! tasks: `bench sim`'s stream (exponential work, Poisson arrivals), written once as
//! integer nanoseconds. Each runs first-come first-served on identical units (SimGrid: a
//! worker actor per host taking from one queue; SimPy: one `Resource` of that capacity;
//! hetsched: `fcfs`), so all make the same schedule, and the bench checks that they agree
//! (completed tasks, mean turnaround, makespan) before it prints a ratio. Each reports
//! the CPU time of its simulation: the peers read their input before their clock
//! starts; hetsched draws the stream as it goes, as `bench sim` does, and pays for it
//! (the drawing's own cost is printed): against us, and memory stays with live tasks.
//!
//! The simulator's peers' programs are in `peers/`. SimGrid's is compiled at first use
//! with the system's C++ compiler against Debian's `libsimgrid-dev`; SimPy's runs under
//! `python3` (or `$PYTHON`) with `simpy` from PyPI. A peer that is not installed is
//! reported as such, with what it needs, and left out. The compiler works in a private
//! temporary directory (it writes its output by path, following links); the program is
//! then kept in `--out` for later runs, and run from there only if it is a regular file
//! of this user that no one else can write.

use crate::sim::BagArgs;
use crate::{peak_rss_kib, Figure};
use clap::Args;
use hetsched_core::outcome_stream::SummaryStream;
use hetsched_core::record::{EventCounter, Metrics};
use hetsched_core::{Error, PathContext, Result};
use hetsched_sim::SimTask;
use hetsched_util::files::OutDir;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{options, Benchmark};

pub(crate) const BENCHMARK: Benchmark = Benchmark {
    key: "peers",
    about: "The simulator beside SimGrid (S4U) and SimPy on one bag of tasks, the same task stream for each: CPU per task, peak memory, and the outputs checked to agree",
    args: <Options as clap::Args>::augment_args,
    run: |m| run(options(m)?),
};

#[derive(Args)]
struct Options {
    #[command(flatten)]
    bag: BagArgs,
    /// Runs of each simulator; the fastest counts (the machine is shared).
    #[arg(long, default_value_t = 3)]
    repeat: u32,
    /// Peers to run beside hetsched (default: both).
    #[arg(long, value_delimiter = ',', value_parser = ["simgrid", "simpy"])]
    peer: Vec<String>,
    /// Where the task stream and the compiled SimGrid program go.
    #[arg(long, default_value = "hetsched-out/bench-peers")]
    out: PathBuf,
}

/// What a simulator reported of its run.
#[derive(Clone, Copy)]
struct Report {
    completed: u64,
    makespan_s: f64,
    mean_turnaround_s: f64,
    peak_rss_kib: Option<u64>,
}

/// A peer: its name, and how to start it on a task file (or why it cannot run here).
pub(crate) struct Peer {
    pub(crate) name: String,
    pub(crate) command: std::result::Result<Command, String>,
}

fn run(a: Options) -> Result<()> {
    let bag = &a.bag;
    let machine = bag.machine()?;
    let units = machine.units.len();
    let stream = || bag.stream(units);
    let out = OutDir::create(&a.out)?;
    let repeat = a.repeat.max(1);

    // hetsched generates the stream as it goes, as `bench sim` does: its figures include
    // drawing the tasks (printed apart), where the peers' exclude reading them.
    let (mut engine, mut metrics_fig) = (Figure::default(), Figure::default());
    let (mut summary, mut metrics, mut engine_rss) = (None, None, None);
    for _ in 0..repeat {
        let ran = engine.run(|| {
            hetsched_sim::Simulation::new(&machine, stream(), &hetsched_sim::Config::default())
                .run_spec("fcfs", 1, &mut EventCounter::default())
        })?;
        if summary.as_ref().is_some_and(|s| s != &ran) {
            return Err(Error::runtime(
                "bench peers: two runs of hetsched differ (the engine must be deterministic)",
            ));
        }
        summary = Some(ran);
        // The engine's peak, before a run with metrics (their per-task values) raises it.
        engine_rss = engine_rss.or_else(peak_rss_kib);
        metrics = Some(metrics_fig.run(|| with_metrics(&machine, stream()))?);
    }
    let draw_all = || std::hint::black_box(stream().map(|t| t.model.work_s).sum::<f64>());
    let (generating, _, _) = crate::timed(draw_all);
    let metrics = metrics.expect("one run at least");
    let ours = Report {
        completed: metrics.completed as u64,
        makespan_s: metrics.makespan_s,
        mean_turnaround_s: metrics.turnaround_s.mean,
        peak_rss_kib: peak_rss_kib(),
    };

    let path = write_stream(&out, "tasks.txt", units, stream())?;
    let chosen = |p: &str| a.peer.is_empty() || a.peer.iter().any(|q| q == p);
    let mut peers = Vec::new();
    if chosen("simgrid") {
        peers.push(simgrid(&out));
    }
    if chosen("simpy") {
        peers.push(simpy());
    }

    println!(
        "bag of tasks: {} tasks, exponential work (mean {} s), Poisson arrivals at load {} on {} x {} = {units} equal units, first come first served; the same stream for every simulator ({}); best of {repeat} runs, CPU of the simulation alone (input read before)",
        bag.tasks,
        bag.mean_work,
        bag.load,
        bag.packages,
        bag.cores,
        path.display()
    );
    let row = |what: &str, fig: &Figure, r: &Report, ratio: String| {
        println!(
            "{what:<44} {:>8.3} s CPU {:>7.2} M tasks/CPU s  peak RSS {:>9}  mean turnaround {:.9} s  makespan {:.6} s  {ratio}({})",
            fig.cpu(),
            r.completed as f64 / fig.cpu() / 1e6,
            r.peak_rss_kib.map_or("?".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
            r.mean_turnaround_s,
            r.makespan_s,
            fig.load()
        );
    };
    let engine_row = Report {
        peak_rss_kib: engine_rss,
        ..ours
    };
    row(
        "hetsched engine (counting recorder)",
        &engine,
        &engine_row,
        String::new(),
    );
    row(
        "hetsched engine + metrics (simulate --summary)",
        &metrics_fig,
        &ours,
        String::new(),
    );
    let mut disagree = Vec::new();
    for peer in peers {
        let mut command = match peer.command {
            Ok(c) => c,
            Err(why) => {
                println!("{:<44} not run here: {why}", peer.name);
                continue;
            }
        };
        command.arg(&path);
        let mut fig = Figure::default();
        let mut report = None;
        let mut version = String::new();
        for _ in 0..repeat {
            let (fields, cpu) = run_peer(&peer.name, &mut command)?;
            fig.add(cpu);
            version = fields.get("version").cloned().unwrap_or_default();
            report = Some(parse_report(&peer.name, &fields)?);
        }
        let r = report.expect("one run at least");
        if !agrees(&ours, &r) {
            disagree.push(peer.name.clone());
        }
        let ratio = format!(
            "hetsched {:.2}x (engine), {:.2}x (+ metrics)  ",
            fig.cpu() / engine.cpu(),
            fig.cpu() / metrics_fig.cpu()
        );
        row(&format!("{} {version}", peer.name), &fig, &r, ratio);
    }
    println!(
        "hetsched's figures include drawing the tasks as it goes ({generating:.3} s CPU of them alone), the peers' exclude reading them; peak RSS: hetsched's with the stream drawn as it goes, the peers' with the whole stream read first"
    );
    let _ = std::fs::remove_file(&path);
    if !disagree.is_empty() {
        return Err(Error::runtime(format!(
            "bench peers: {} disagree with hetsched (completed tasks, mean turnaround or makespan): the models differ",
            disagree.join(", ")
        )));
    }
    println!("outputs agree: every simulator completed the same tasks with the same mean turnaround and makespan (relative difference <= 1e-6)");
    Ok(())
}

/// The engine on `tasks` with the metrics `simulate --summary` computes.
#[inline(never)]
fn with_metrics(
    machine: &hetsched_core::machine::Machine,
    tasks: impl Iterator<Item = SimTask>,
) -> Result<Metrics> {
    let mut rec = SummaryStream::new("fcfs", machine);
    hetsched_sim::Simulation::new(machine, tasks, &hetsched_sim::Config::default())
        .run_spec("fcfs", 1, &mut rec)?;
    Ok(rec.finish())
}

/// Whether a peer's run matches ours: the same tasks completed, the same mean turnaround
/// and makespan within a relative 1e-6 (the peers add seconds in `f64`, we nanoseconds).
fn agrees(ours: &Report, theirs: &Report) -> bool {
    let near = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1e-9);
    ours.completed == theirs.completed
        && near(ours.mean_turnaround_s, theirs.mean_turnaround_s)
        && near(ours.makespan_s, theirs.makespan_s)
}

/// The task file the peers read, `name` in `out`: `units N`, then `arrival_ns work_ns`
/// per task. Returns its path.
fn write_stream(
    out: &OutDir,
    name: &str,
    units: usize,
    tasks: impl Iterator<Item = SimTask>,
) -> Result<PathBuf> {
    let mut w = out.file(name)?;
    writeln!(w, "units {units}").map_err(|e| w.error(e))?;
    for t in tasks {
        writeln!(w, "{} {}", t.arrival_ns, t.work_ns()).map_err(|e| w.error(e))?;
    }
    w.finish()
}

/// Whether `path` is a program this user built and no one else can have changed: a
/// regular file (not a link) of this user, writable by no one else.
fn ours(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.file_type().is_file() && m.uid() == me && m.mode() & 0o022 == 0)
}

/// SimGrid's program for the bag of tasks.
fn simgrid(out: &OutDir) -> Peer {
    simgrid_program(out, "simgrid_bag", include_str!("peers/simgrid_bag.cpp"))
}

/// A SimGrid program (`source`, a file of `peers/` named `stem`), built once per source
/// text into `out` (a C++ compiler and `libsimgrid-dev` needed).
pub(crate) fn simgrid_program(out: &OutDir, stem: &str, source: &str) -> Peer {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    source.hash(&mut h);
    let program = stem.replace('_', "-");
    let file = format!("{program}-{:016x}", h.finish());
    let bin = out.join(&file);
    let name = "SimGrid (S4U)".to_string();
    if ours(&bin) {
        return Peer {
            name,
            command: Ok(Command::new(bin)),
        };
    }
    let needs = "needs a C++ compiler and SimGrid (apt-get install g++ libsimgrid-dev)";
    let work = match tempfile::Builder::new().prefix("hetsched-peers-").tempdir() {
        Ok(work) => work,
        Err(e) => {
            return Peer {
                name,
                command: Err(format!("cannot make a temporary directory: {e}")),
            }
        }
    };
    let src = work.path().join(format!("{stem}.cpp"));
    if let Err(e) = std::fs::write(&src, source) {
        return Peer {
            name,
            command: Err(format!("{}: {e}", src.display())),
        };
    }
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let built_at = work.path().join(&program);
    let built = Command::new(&cxx)
        .args(["-O2", "-std=c++17"])
        .arg(&src)
        .arg("-o")
        .arg(&built_at)
        .arg("-lsimgrid")
        .output();
    let command = match built {
        // Put in place complete (an OutFile is renamed when written): an interrupted
        // copy leaves no program that a later run would take as built.
        Ok(o) if o.status.success() => keep_program(out, &file, &built_at)
            .map(|()| Command::new(&bin))
            .map_err(|e| e.to_string()),
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            Err(format!(
                "{needs}: {cxx}: {}",
                err.lines().next().unwrap_or("failed")
            ))
        }
        Err(e) => Err(format!("{needs}: {cxx}: {e}")),
    };
    Peer { name, command }
}

/// Copies the program `built` into `out` as `name`, executable by all, writable by this
/// user only.
fn keep_program(out: &OutDir, name: &str, built: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let bytes = std::fs::read(built).at(built)?;
    let mut f = out.file(name)?;
    f.write_all(&bytes).map_err(|e| f.error(e))?;
    f.get_ref()
        .set_permissions(std::fs::Permissions::from_mode(0o755))
        .map_err(|e| f.error(e))?;
    f.finish().map(drop)
}

/// SimPy's program under `$PYTHON` or `python3` (`pip install simpy` needed).
fn simpy() -> Peer {
    const SOURCE: &str = include_str!("peers/simpy_bag.py");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let name = "SimPy".to_string();
    let has = Command::new(&python)
        .args(["-c", "import simpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        return Peer {
            name,
            command: Err(format!(
                "needs {python} with SimPy ({python} -m pip install simpy)"
            )),
        };
    }
    let mut c = Command::new(python);
    c.args(["-c", SOURCE]);
    Peer {
        name,
        command: Ok(c),
    }
}

/// Runs a peer once: its report's fields and the CPU seconds it spent simulating.
pub(crate) fn run_peer(
    name: &str,
    command: &mut Command,
) -> Result<(HashMap<String, String>, f64)> {
    let out = command
        .output()
        .map_err(|e| Error::runtime(format!("{name}: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.contains("cpu_s="));
    let (true, Some(line)) = (out.status.success(), line) else {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(Error::runtime(format!(
            "{name}: {} without a report: {}",
            out.status,
            err.lines().last().unwrap_or("")
        )));
    };
    let fields: HashMap<String, String> = line
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let cpu = number(name, &fields, "cpu_s")?;
    Ok((fields, cpu))
}

pub(crate) fn number(name: &str, fields: &HashMap<String, String>, key: &str) -> Result<f64> {
    fields
        .get(key)
        .and_then(|v| v.parse::<f64>().ok())
        .ok_or_else(|| Error::runtime(format!("{name}: its report has no number {key}=")))
}

fn parse_report(name: &str, fields: &HashMap<String, String>) -> Result<Report> {
    Ok(Report {
        completed: number(name, fields, "completed")? as u64,
        makespan_s: number(name, fields, "makespan_s")?,
        mean_turnaround_s: number(name, fields, "mean_turnaround_s")?,
        peak_rss_kib: fields.get("peak_rss_kib").and_then(|v| v.parse().ok()),
    })
}

/// StarPU's overhead examples (Debian's `starpu-examples`) with `tasks` tasks each, beside
/// the daemon's figures in `report`: what a StarPU user pays per task, in-process, run
/// now on this machine. Not installed (or `$STARPU_EXAMPLES` not a directory of them):
/// said so, with what it needs. An example that fails is reported and the others run.
pub(crate) fn starpu_beside(report: &hetsched_live::bench::Report, tasks: usize) {
    let Some(dir) = starpu_examples() else {
        println!(
            "beside StarPU: not run here: needs StarPU's examples (apt-get install starpu-examples, or STARPU_EXAMPLES=DIR)"
        );
        return;
    };
    let version = Command::new("dpkg-query")
        .args(["-W", "-f", "${Version}", "starpu-examples"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| format!(" {}", String::from_utf8_lossy(&o.stdout)))
        .unwrap_or_default();
    println!(
        "beside StarPU{version} (its overhead examples in {}, tasks in-process, {tasks} each, run now):",
        dir.display()
    );
    let runs = [
        ("sync_tasks_overhead", "one task submitted, then waited for"),
        ("async_tasks_overhead", "tasks submitted asynchronously"),
        ("tasks_overhead", "tasks submitted, then all waited for"),
    ];
    for (example, what) in runs {
        let us = match starpu_per_task_us(&dir.join(example), tasks) {
            Ok(us) => us,
            Err(e) => {
                println!("  {example}: {e}");
                continue;
            }
        };
        let ours = match example {
            "sync_tasks_overhead" => report.apart_round_trip_p50_us().map(|p50| {
                format!(
                    "; {:.1}x hetsched's alloc+free round trip pinned apart (p50 {p50:.1} us)",
                    us / p50
                )
            }),
            "async_tasks_overhead" => report.apart_batched_per_s().map(|per_s| {
                format!(
                    "; hetsched batched, pinned apart: {:.0}k tasks/s, {:.1}x this rate",
                    per_s / 1e3,
                    per_s * us / 1e6
                )
            }),
            _ => None,
        };
        println!(
            "  {what} ({example} -i {tasks}): {us:.2} us per task, {:.0}k tasks/s{} (load {})",
            1e3 / us,
            ours.unwrap_or_default(),
            crate::load_average().map_or("?".into(), |l| format!("{l:.2}"))
        );
    }
}

/// Where StarPU's examples are: `$STARPU_EXAMPLES` if set, else where Debian and a
/// source install put them.
fn starpu_examples() -> Option<PathBuf> {
    let has = |d: &Path| d.join("tasks_overhead").is_file();
    if let Some(dir) = std::env::var_os("STARPU_EXAMPLES") {
        return Some(PathBuf::from(dir)).filter(|d| has(d));
    }
    let triplet = format!("{}-linux-gnu", std::env::consts::ARCH);
    [
        format!("/usr/lib/{triplet}/starpu/examples"),
        "/usr/lib/starpu/examples".into(),
        "/usr/local/lib/starpu/examples".into(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|d| has(d))
}

/// Runs one StarPU overhead example; the figure of its "Per task: X usecs" line.
fn starpu_per_task_us(example: &Path, tasks: usize) -> std::result::Result<f64, String> {
    let out = Command::new(example)
        .args(["-i", &tasks.to_string()])
        .env("STARPU_SILENT", "1")
        .output()
        .map_err(|e| format!("{e}"))?;
    // The examples print their figures on standard error.
    let text = [&out.stdout[..], &out.stderr[..]].concat();
    let per_task = String::from_utf8_lossy(&text)
        .lines()
        .find_map(|l| l.strip_prefix("Per task:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
        .filter(|us| us.is_finite() && *us > 0.0);
    match (out.status.success(), per_task) {
        (true, Some(us)) => Ok(us),
        _ => Err(format!(
            "{} without a \"Per task: X usecs\" line: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(completed: u64, mean: f64, makespan: f64) -> Report {
        Report {
            completed,
            makespan_s: makespan,
            mean_turnaround_s: mean,
            peak_rss_kib: None,
        }
    }

    #[test]
    fn agreement_is_the_same_tasks_and_times_within_a_millionth() {
        let ours = report(1000, 0.0125, 10.5);
        assert!(agrees(&ours, &report(1000, 0.0125 * (1.0 + 5e-7), 10.5)));
        assert!(agrees(&ours, &report(1000, 0.0125, 10.5 * (1.0 - 5e-7))));
        assert!(!agrees(&ours, &report(999, 0.0125, 10.5)));
        assert!(!agrees(&ours, &report(1000, 0.0125 * (1.0 + 2e-6), 10.5)));
        assert!(!agrees(&ours, &report(1000, 0.0125, 10.5 * (1.0 + 2e-6))));
        assert!(agrees(&report(0, 0.0, 0.0), &report(0, 0.0, 0.0)));
        assert!(!agrees(&ours, &report(1000, f64::NAN, 10.5)));
    }

    #[test]
    fn a_report_lacking_a_number_is_an_error_naming_the_field() {
        let fields: HashMap<String, String> = [("completed", "3"), ("makespan_s", "x")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let e = parse_report("SimPy", &fields).err().unwrap().to_string();
        assert!(e.contains("SimPy") && e.contains("makespan_s="), "{e}");
    }
}
