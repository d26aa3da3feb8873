//! `hetsched simulate SCENARIO.toml`: compare policies on a scenario in the simulator.
//!
//! What a run may cost is bounded where it is spent (`hetsched_sim::scenario` says why):
//! the scenario's limits stop one that would fill the memory or generate too much, and
//! the wall time is the user's to see and stop. On a terminal, a progress line (tasks
//! done, simulated time, engine events, the estimated time left) appears once the runs
//! have taken 2 s; Ctrl-C stops the run at once and cleanly (exit 130).
//!
//! Outputs: each run's per-task CSV is written under a temporary name and renamed when
//! the run succeeded ([`OutFile`]), the table and metrics after the last run. A run that
//! fails or is stopped leaves no truncated file, and its one-line error ends by saying
//! what is in the output directory: the complete CSVs of the runs before it, and which
//! outputs were not written (and, if files of those names are there, that they are
//! from an earlier command).

use clap::Args;
use hetsched_core::perf_model::{self, PerfModels};
use hetsched_core::{Error, Result};
use hetsched_sim::engine::Progress;
use hetsched_sim::scenario::{limits, Scenario};
use hetsched_sim::stream::run_streamed;
use hetsched_sim::{report, trace};
use hetsched_util::files::{OutDir, OutFile};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
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
    /// Stop each run at this simulated time in seconds (overrides `end.max_time_s`); the
    /// table then says how many tasks each run left (`left`).
    #[arg(long)]
    pub max_time_s: Option<f64>,
    /// Write the metrics only (table.txt, metrics.json), no per-task CSVs; the run
    /// record's invariants are then not checked (without `--trace`).
    #[arg(long)]
    pub summary: bool,
    /// Fail a run that takes more engine events than this (overrides `end.max_events`;
    /// default: no limit; the memory and the tasks a run generates are bounded anyway,
    /// see docs/simulator.md, and Ctrl-C stops a run cleanly).
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

    let csv_name = |p: &str| format!("tasks-{}.csv", report::file_safe(p));
    let mut outputs = Outputs {
        dir: out.path().display().to_string(),
        complete: Vec::new(),
        planned: Vec::new(),
    };
    if !args.summary {
        outputs.planned.extend(
            policies
                .iter()
                .map(|p| (csv_name(p), out.join(&csv_name(p)))),
        );
    }
    for name in ["table.txt", "metrics.json"] {
        outputs.planned.push((name.into(), out.join(name)));
    }
    if let Some(path) = &args.trace {
        outputs
            .planned
            .push((path.display().to_string(), path.clone()));
    }

    let watcher = Watcher::start(scenario.expected_tasks(), policies.len())?;
    scenario.config.watch = Some(watcher.progress.clone());
    let mut records = Vec::new();
    let mut metrics = Vec::new();
    // What the kept records hold so far (`--trace`): all runs share the limit.
    let mut kept = 0u64;
    for (i, p) in policies.iter().enumerate() {
        watcher.running(i, p);
        let ran = (|| -> Result<()> {
            if let Some(dir) = &perfmodel {
                scenario.config.models = PerfModels::load(dir, &scenario.machine.name)?;
            }
            let named = |e| match e {
                Error::Runtime(_) => e,
                e => e.map_message(|m| format!("{}: {p}: {m}", scenario.origin)),
            };
            let csv_name = csv_name(p);
            // Written under a temporary name and put in place once the run succeeded: a
            // failed run leaves no truncated CSV.
            let mut csv_file = None;
            // A trace needs the whole record; otherwise the outputs are made as the run
            // goes.
            let (mut run_metrics, summary) = if args.trace.is_some() {
                scenario.config.max_kept_events =
                    Some(limits::MAX_KEPT_EVENTS.saturating_sub(kept));
                let (record, summary) = hetsched_sim::Simulation::of(&scenario)
                    .record_spec(p, scenario.seed)
                    .map_err(named)?;
                kept += record.events.len() as u64;
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
                run_streamed(&scenario, p, csv, &mut |_| {}).map_err(named)?
            };
            summary.settle(&mut run_metrics, &scenario.config, p)?;
            if let Some(file) = csv_file {
                file.finish()?;
            }
            if !args.summary {
                outputs.complete.push(csv_name);
            }
            if let (Some(dir), Some(models)) = (&perfmodel, &summary.models) {
                models.save(dir, &scenario.machine.name)?;
            }
            metrics.push(run_metrics);
            Ok(())
        })();
        ran.map_err(|e| outputs.say(e))?;
    }
    watcher.finish();
    // A Ctrl-C after the last run's last look: the user asked for no more.
    if scenario.config.watch.as_ref().is_some_and(|w| w.stopped()) {
        return Err(outputs.say(Error::Interrupted(format!(
            "{}: interrupted after the last run",
            scenario.origin
        ))));
    }

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
        // Streamed: held as JSON values, a trace of 50,000 tasks under six policies
        // took 8.9 GB.
        let written = trace::write(&records, &mut file);
        written.map_err(|e| file.error(e))?;
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

/// The outputs of one `simulate`, for the error of a run that failed: those complete
/// and those the command would have written.
struct Outputs {
    /// The output directory, as named.
    dir: String,
    /// The per-task CSVs of the runs that succeeded.
    complete: Vec<String>,
    /// Every output the command writes: its name in messages and its path.
    planned: Vec<(String, PathBuf)>,
}

impl Outputs {
    /// `e`, its message ending with what the output directory holds of this command:
    /// the complete CSVs, the outputs not written, and whether files of those names
    /// there are from an earlier command. Kept on one line; the kind (and so the exit
    /// code) stays.
    fn say(&self, e: Error) -> Error {
        let missing: Vec<&(String, PathBuf)> = self
            .planned
            .iter()
            .filter(|(name, _)| !self.complete.contains(name))
            .collect();
        let names = |v: &[&(String, PathBuf)]| {
            v.iter()
                .map(|o| o.0.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut note = format!("; in {}: not written: {}", self.dir, names(&missing));
        let stale: Vec<&(String, PathBuf)> = missing
            .iter()
            .copied()
            .filter(|o| std::fs::symlink_metadata(&o.1).is_ok())
            .collect();
        if !stale.is_empty() {
            note += &format!(" (the {} there are from an earlier command)", names(&stale));
        }
        if !self.complete.is_empty() {
            note += &format!("; complete: {}", self.complete.join(", "));
        }
        e.map_message(|m| m + &note)
    }
}

/// How often the watcher looks for Ctrl-C and redraws the progress line.
const WATCH_PERIOD: Duration = Duration::from_millis(100);

/// After how long the progress line appears (on a terminal only).
const SHOW_AFTER: Duration = Duration::from_secs(2);

/// Ctrl-C and the progress line, on a thread of their own while the runs go.
///
/// SIGINT is blocked in this thread before the watcher starts (so in every thread the
/// process starts after it) and taken by the watcher with `sigtimedwait`: no handler
/// runs at an arbitrary point, and the run sees the request at its next look at
/// [`Progress`] (every `WATCH_EVERY` engine events, about a millisecond), then fails
/// with `Error::Interrupted`, which removes its temporary CSV on the way out. A second
/// Ctrl-C (a run that does not look, e.g. stuck writing) ends the process at once, exit
/// 130.
struct Watcher {
    progress: Arc<Progress>,
    /// The run going on: its index and policy.
    current: Arc<Mutex<(usize, String)>>,
    /// Tasks of the runs before the current one (the progress line counts them all).
    before: Arc<AtomicU64>,
    tasks: u64,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watcher {
    fn start(tasks: u64, runs: usize) -> Result<Watcher> {
        block_sigint()?;
        let progress = Arc::new(Progress::default());
        let current = Arc::new(Mutex::new((0, String::new())));
        let before = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let thread = {
            let (progress, current, before, done) = (
                progress.clone(),
                current.clone(),
                before.clone(),
                done.clone(),
            );
            let total = tasks.saturating_mul(runs as u64);
            std::thread::Builder::new()
                .name("simulate-watch".into())
                .spawn(move || watch(&progress, &current, &before, &done, total, runs))
                .map_err(|e| Error::runtime(format!("cannot start the progress thread: {e}")))?
        };
        Ok(Watcher {
            progress,
            current,
            before,
            tasks,
            done,
            thread: Some(thread),
        })
    }

    /// Run `i` (policy `p`) starts: the line counts the tasks of the runs before it,
    /// and none of this one yet.
    fn running(&self, i: usize, p: &str) {
        self.before
            .store(self.tasks.saturating_mul(i as u64), Ordering::Relaxed);
        for n in [
            &self.progress.events,
            &self.progress.now_ns,
            &self.progress.submitted,
            &self.progress.completed,
            &self.progress.rejected,
        ] {
            n.store(0, Ordering::Relaxed);
        }
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = (i, p.to_string());
    }

    /// The runs are over: the line goes (SIGINT stays blocked: a late Ctrl-C is seen
    /// through [`Progress::stopped`]).
    fn finish(mut self) {
        self.stop_thread();
    }

    fn stop_thread(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// Blocks SIGINT in this thread (and the threads it starts from now on).
fn block_sigint() -> Result<()> {
    // SAFETY: a sigset_t on the stack, initialised by sigemptyset before use.
    let rc = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut())
    };
    match rc {
        0 => Ok(()),
        e => Err(Error::runtime(format!(
            "cannot block SIGINT: {}",
            std::io::Error::from_raw_os_error(e)
        ))),
    }
}

/// Waits up to `timeout` for a SIGINT (blocked in this thread); whether one came.
fn sigint_within(timeout: Duration) -> bool {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: a sigset_t on the stack, initialised by sigemptyset; a valid timespec.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigtimedwait(&set, std::ptr::null_mut(), &ts) == libc::SIGINT
    }
}

/// The watcher's loop (see [`Watcher`]): `total` tasks over `runs` runs.
fn watch(
    progress: &Progress,
    current: &Mutex<(usize, String)>,
    before: &AtomicU64,
    done: &AtomicBool,
    total: u64,
    runs: usize,
) {
    let started = Instant::now();
    // Hidden until shown; stderr draws only on a terminal.
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
    if let Ok(style) =
        ProgressStyle::with_template("{msg} [{bar:20}] {pos}/{len} tasks done, eta {eta}")
    {
        bar.set_style(style);
    }
    let mut shown = false;
    while !done.load(Ordering::Relaxed) {
        if sigint_within(WATCH_PERIOD) {
            if progress.stopped() {
                bar.finish_and_clear();
                eprintln!("hetsched: interrupted twice: stopped at once (a temporary output file may be left)");
                std::process::exit(130);
            }
            progress.stop();
        }
        if !shown && started.elapsed() >= SHOW_AFTER {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            shown = true;
        }
        let (i, policy) = current.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let ended =
            progress.completed.load(Ordering::Relaxed) + progress.rejected.load(Ordering::Relaxed);
        bar.set_position(before.load(Ordering::Relaxed) + ended);
        bar.set_message(format!(
            "{policy} ({}/{runs}): {:.0} s sim, {:.1} M events",
            i + 1,
            progress.now_ns.load(Ordering::Relaxed) as f64 * 1e-9,
            progress.events.load(Ordering::Relaxed) as f64 * 1e-6
        ));
    }
    bar.finish_and_clear();
}
