//! Policies compared on one scenario, one run after another, with the outputs a user
//! keeps: each run's per-task CSV, the table and the metrics JSON, a Perfetto trace of
//! every run. `hetsched simulate` is this plus its progress line.
//!
//! Why the outputs are accounted for: a run may fail or be stopped (Ctrl-C) after
//! others succeeded. Each CSV is written under a temporary name and renamed once its
//! run succeeded, so no truncated file is ever left; the table and metrics are written
//! after the last run. A failed run's one-line error ends by saying what is in the
//! output directory: the complete CSVs of the runs before it, the outputs not written,
//! and whether files of those names there are from an earlier command.

use crate::engine::Progress;
use crate::scenario::{limits, Scenario};
use crate::stream::run_streamed;
use hetsched_core::perf_model::PerfModels;
use hetsched_core::record::Metrics;
use hetsched_core::{report, trace};
use hetsched_core::{Error, Result};
use hetsched_util::files::{OutDir, OutFile};
use std::path::{Path, PathBuf};

/// A comparison made ready to run: the policies checked and the output paths taken, so
/// that bad input fails before any run.
pub struct Compare {
    scenario: Scenario,
    policies: Vec<String>,
    out: OutDir,
    summary: bool,
    perfmodel: Option<PathBuf>,
    trace: Option<(PathBuf, OutFile)>,
}

/// What a comparison made: the runs' metrics, and the table and JSON written beside the
/// CSVs (returned for the caller to print).
pub struct Compared {
    pub scenario: Scenario,
    pub metrics: Vec<Metrics>,
    pub table: String,
    pub json: String,
    pub out: PathBuf,
}

impl Compare {
    /// `policies` (`name[:key=value,...]`; the scenario's own when empty) on `scenario`,
    /// the outputs in `out` (the default `hetsched-out/simulate-<name>` when `None`).
    /// With `summary`, the metrics only: no per-task CSVs, and the run record's
    /// invariants are not checked (unless a trace is asked for).
    pub fn new(
        scenario: Scenario,
        policies: Vec<String>,
        out: Option<&Path>,
        summary: bool,
    ) -> Result<Compare> {
        let policies = if policies.is_empty() {
            scenario.policies.clone()
        } else {
            policies
        };
        if policies.is_empty() {
            return Err(Error::input(format!(
                "{}: policies: none given (add `policies = [...]` or pass --policy)",
                scenario.origin
            )));
        }
        for p in &policies {
            hetsched_policies::check(p)
                .map_err(|e| Error::input(format!("--policy {p:?}: {e}")))?;
        }
        let out = match out {
            Some(dir) => dir.to_path_buf(),
            None => PathBuf::from("hetsched-out").join(format!("simulate-{}", scenario.name)),
        };
        Ok(Compare {
            out: OutDir::create(&out)?,
            scenario,
            policies,
            summary,
            perfmodel: None,
            trace: None,
        })
    }

    /// Keeps performance models across runs in `dir` (`<machine>.json`): each run starts
    /// from the file and writes back what it observed, as StarPU keeps its sampling
    /// directory.
    pub fn perfmodel(mut self, dir: PathBuf) -> Self {
        self.perfmodel = Some(dir);
        self
    }

    /// Also writes a Perfetto trace of every run to `path` (started now: a path that
    /// cannot take it fails before any run).
    pub fn trace(mut self, path: &Path) -> Result<Self> {
        self.trace = Some((path.to_path_buf(), OutFile::create(path)?));
        Ok(self)
    }

    /// Tasks each run is expected to take (for a progress line).
    pub fn tasks_per_run(&self) -> u64 {
        self.scenario.expected_tasks()
    }

    /// How many runs: one per policy.
    pub fn runs(&self) -> usize {
        self.policies.len()
    }

    /// Runs after run, each stopping early when `watch` is asked to stop (then the
    /// error is `Error::Interrupted`); `on_run(i, policy)` as run `i` starts. `watch` is
    /// the runs' progress, for a progress line.
    pub fn run(
        mut self,
        watch: Option<std::sync::Arc<Progress>>,
        mut on_run: impl FnMut(usize, &str),
    ) -> Result<Compared> {
        let scenario = &mut self.scenario;
        scenario.config.watch = watch;
        let csv_name = |p: &str| format!("tasks-{}.csv", report::file_safe(p));
        let out = &self.out;
        let mut outputs = Outputs {
            dir: out.path().display().to_string(),
            complete: Vec::new(),
            planned: Vec::new(),
        };
        if !self.summary {
            outputs.planned.extend(
                self.policies
                    .iter()
                    .map(|p| (csv_name(p), out.join(&csv_name(p)))),
            );
        }
        for name in ["table.txt", "metrics.json"] {
            outputs.planned.push((name.into(), out.join(name)));
        }
        if let Some((path, _)) = &self.trace {
            outputs
                .planned
                .push((path.display().to_string(), path.clone()));
        }

        let mut records = Vec::new();
        let mut metrics = Vec::new();
        // What the kept records hold so far (with a trace): all runs share the limit.
        let mut kept = 0u64;
        for (i, p) in self.policies.iter().enumerate() {
            on_run(i, p);
            let ran = (|| -> Result<()> {
                if let Some(dir) = &self.perfmodel {
                    scenario.config.models = PerfModels::load(dir, &scenario.machine.name)?;
                }
                let named = |e| match e {
                    Error::Runtime(_) => e,
                    e => e.map_message(|m| format!("{}: {p}: {m}", scenario.origin)),
                };
                let csv_name = csv_name(p);
                // Written under a temporary name and put in place once the run
                // succeeded: a failed run leaves no truncated CSV.
                let mut csv_file = None;
                // A trace needs the whole record; otherwise the outputs are made as the
                // run goes.
                let (mut run_metrics, summary) = if self.trace.is_some() {
                    scenario.config.max_kept_events =
                        Some(limits::MAX_KEPT_EVENTS.saturating_sub(kept));
                    let (record, summary) = crate::Simulation::of(scenario)
                        .record_spec(p, scenario.seed)
                        .map_err(named)?;
                    kept += record.events.len() as u64;
                    record
                        .check()
                        .map_err(|e| Error::runtime(format!("{p}: run record invariant: {e}")))?;
                    if !self.summary {
                        out.write(&csv_name, report::tasks_csv(&record))?;
                    }
                    let m = record.metrics();
                    records.push(record);
                    (m, summary)
                } else {
                    let csv = if self.summary {
                        None
                    } else {
                        let file = csv_file.insert(out.file(&csv_name)?);
                        let name = file.path().display().to_string();
                        Some((file, name))
                    };
                    run_streamed(scenario, p, csv, &mut |_| {}).map_err(named)?
                };
                summary.settle(&mut run_metrics, &scenario.config, p)?;
                if let Some(file) = csv_file {
                    file.finish()?;
                }
                if !self.summary {
                    outputs.complete.push(csv_name);
                }
                if let (Some(dir), Some(models)) = (&self.perfmodel, &summary.models) {
                    models.save(dir, &scenario.machine.name)?;
                }
                metrics.push(run_metrics);
                Ok(())
            })();
            ran.map_err(|e| outputs.say(e))?;
        }
        // A stop asked for after the last run's last look: the user asked for no more.
        if scenario.config.watch.as_ref().is_some_and(|w| w.stopped()) {
            return Err(outputs.say(Error::Interrupted(format!(
                "{}: interrupted after the last run",
                scenario.origin
            ))));
        }

        let mut table = report::table(&metrics);
        let graph = scenario
            .graph
            .as_deref()
            .map(|g| graph_report(g, &scenario.machine, &metrics, &mut table));
        let json = serde_json::to_string_pretty(&serde_json::json!({
            "scenario": scenario.origin,
            "machine": scenario.machine.name,
            "seed": scenario.seed,
            "runs": metrics,
            "graph": graph,
        }))
        .map_err(Error::runtime)?;
        out.write("table.txt", &table)?;
        out.write("metrics.json", &json)?;
        if let Some((_, mut file)) = self.trace.take() {
            // Streamed: held as JSON values, a trace of 50,000 tasks under six policies
            // took 8.9 GB.
            let written = trace::write(&records, &mut file);
            written.map_err(|e| file.error(e))?;
            file.finish()?;
        }
        Ok(Compared {
            out: out.path().to_path_buf(),
            scenario: self.scenario,
            metrics,
            table,
            json,
        })
    }
}

/// A graph's lower bounds and each run's makespan against them (and GFlop/s, when the
/// graph's tasks carry flops), appended to `table`; returned as JSON.
fn graph_report(
    g: &crate::graphs::GraphTasks,
    machine: &hetsched_core::machine::Machine,
    metrics: &[Metrics],
    table: &mut String,
) -> serde_json::Value {
    use std::fmt::Write;
    let b = crate::graphs::bound::bound(g, machine);
    let flops: f64 = g.graph().tasks.iter().map(|t| t.flops).sum();
    let area = match &b.area_s {
        Ok(s) => format!("area {s:.4} s"),
        Err(why) => format!("area not computed: {why}"),
    };
    let _ = writeln!(
        table,
        "graph: {} tasks{}; lower bound {:.4} s (critical path {:.4} s, {area})",
        g.graph().tasks.len(),
        if flops > 0.0 {
            format!(", {:.1} GFlop", flops * 1e-9)
        } else {
            String::new()
        },
        b.makespan_s(),
        b.critical_path_s,
    );
    let mut runs = Vec::new();
    for m in metrics {
        let over = m.makespan_s / b.makespan_s();
        let gflops = (flops > 0.0 && m.makespan_s > 0.0).then(|| flops / m.makespan_s * 1e-9);
        let _ = writeln!(
            table,
            "  {:<24} makespan {:.4} s = {over:.2} × the bound{}",
            m.policy,
            m.makespan_s,
            gflops.map_or(String::new(), |g| format!(", {g:.1} GFlop/s"))
        );
        runs.push(serde_json::json!({
            "policy": m.policy,
            "makespan_over_bound": over,
            "gflops": gflops,
        }));
    }
    serde_json::json!({
        "tasks": g.graph().tasks.len(),
        "flops": flops,
        "critical_path_s": b.critical_path_s,
        "area_s": b.area_s.as_ref().ok(),
        "area_not_computed": b.area_s.as_ref().err(),
        "bound_s": b.makespan_s(),
        "runs": runs,
    })
}

/// The outputs of one comparison, for the error of a run that failed: those complete
/// and those it would have written.
struct Outputs {
    /// The output directory, as named.
    dir: String,
    /// The per-task CSVs of the runs that succeeded.
    complete: Vec<String>,
    /// Every output the comparison writes: its name in messages and its path.
    planned: Vec<(String, PathBuf)>,
}

impl Outputs {
    /// `e`, its message ending with what the output directory holds of this comparison:
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
