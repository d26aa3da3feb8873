//! `machine`, `simulate` and `policies`: the simulator from Python. A run with a
//! registry policy releases the GIL (other Python threads go on, and `sweep` runs in
//! threads or processes alike); a run with a Python policy holds it, since every
//! decision is a Python call.
//!
//! A run with a registry policy goes on a thread of its own while the calling thread
//! waits for it, looking for Python's signals every [`SIGNAL_PERIOD`]: Ctrl-C (or
//! Jupyter's interrupt) stops the run within a millisecond of the next look (the
//! engine's `Config::watch`) and raises `KeyboardInterrupt`.

use crate::columns::Columns;
use crate::policy::{Kept, PyPolicy};
use crate::{py_err, to_json};
use hetsched_core::machine::UnitGranularity;
use hetsched_core::outcome_stream::SummaryStream;
use hetsched_core::policy::Policy;
use hetsched_core::record::Recorder;
use hetsched_core::{Error, Result};
use hetsched_policies::recording::Recording;
use hetsched_sim::engine::Progress;
use hetsched_sim::scenario::Scenario;
use hetsched_sim::{RunSummary, Simulation};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How often a caller waiting for a run looks for Python's signals (Ctrl-C).
const SIGNAL_PERIOD: Duration = Duration::from_millis(50);

/// A machine (preset, hwloc XML, sysfs dump, TOML file or "live") as JSON text.
#[pyfunction]
#[pyo3(signature = (src, units = "pu"))]
pub fn machine(py: Python<'_>, src: &str, units: &str) -> PyResult<String> {
    let granularity = match units {
        "pu" => UnitGranularity::Pu,
        "core" => UnitGranularity::Core,
        other => {
            return Err(py_err(Error::input(format!(
                "units: expected \"pu\" or \"core\", got {other:?}"
            ))))
        }
    };
    let src = src.to_string();
    let m = py
        .detach(move || hetsched_topology::load(&src, granularity))
        .map_err(py_err)?;
    Ok(to_json(&m))
}

/// The registry: name, about, parameters (JSON text).
#[pyfunction]
pub fn policies() -> String {
    let list: Vec<Value> = hetsched_policies::registry()
        .map(|r| {
            let params: Vec<Value> = r
                .params()
                .iter()
                .map(|p| json!({"key": p.key, "default": p.default, "accepts": p.accepts, "about": p.about}))
                .collect();
            json!({"name": r.name, "about": r.about, "params": params})
        })
        .collect();
    to_json(&list)
}

/// A scenario from a file path, or from JSON text of a dict shaped like the file (its
/// relative paths from the working directory).
fn load(scenario: &str, is_json: bool) -> Result<Scenario> {
    if !is_json {
        return Scenario::load(Path::new(scenario));
    }
    let origin = "<scenario dict>";
    let value: toml::Value = serde_json::from_str(scenario)
        .map_err(|e| Error::input(format!("{origin}: not a TOML-shaped dict: {e}")))?;
    let text = toml::to_string(&value)
        .map_err(|e| Error::input(format!("{origin}: not a TOML table: {e}")))?;
    Scenario::parse(&text, origin, "dict", Path::new("."))
}

/// Runs the scenario, its events going to `rec`: a registry policy (`policy` None,
/// `label` its spec) compiled for its type, or a policy object; with the decision log if
/// asked (the policy then boxed in the logging decorator).
fn run_into<R: Recorder>(
    scenario: &Scenario,
    label: &str,
    policy: Option<Box<dyn Policy>>,
    decisions: bool,
    rec: &mut R,
) -> Result<(RunSummary, Option<Vec<String>>)> {
    let sim = Simulation::of(scenario);
    let mut policy = match policy {
        None if !decisions => return Ok((sim.run_spec(label, scenario.seed, rec)?, None)),
        None => hetsched_policies::build(label, scenario.seed)?,
        Some(p) => p,
    };
    if !decisions {
        return Ok((sim.run(policy.as_mut(), rec)?, None));
    }
    let (mut recording, log) = Recording::new(policy);
    let summary = sim.run(&mut recording, rec)?;
    drop(recording);
    let calls = log.lock().expect("the log's lock");
    Ok((
        summary,
        Some(calls.iter().map(|c| format!("{c:?}")).collect()),
    ))
}

/// Runs `work` on a thread of its own, the GIL released, looking for Python's signals
/// while it goes: on one (a `KeyboardInterrupt`), tells the run to stop through
/// `progress`, waits for it and raises the signal's exception.
fn watched<T: Send>(
    py: Python<'_>,
    progress: &Progress,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        let run = scope.spawn(move || {
            let out = work();
            let _ = tx.send(());
            out
        });
        let (mut raised, mut rx) = (None, rx);
        // Ends when the run sent, or ended without sending (a panic). The receiver is
        // not `Sync`: it goes into the closure and comes back.
        loop {
            let (got, back) = py.detach(move || (rx.recv_timeout(SIGNAL_PERIOD), rx));
            rx = back;
            if !matches!(got, Err(std::sync::mpsc::RecvTimeoutError::Timeout)) {
                break;
            }
            if raised.is_none() {
                if let Err(e) = py.check_signals() {
                    progress.stop();
                    raised = Some(e);
                }
            }
        }
        let out = py
            .detach(|| run.join())
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        match raised {
            Some(e) => Err(e),
            None => Ok(out),
        }
    })
}

/// The run of a registry policy without the GIL, or of a Python policy with it (its
/// kept exception raised); input errors named by the scenario and the policy.
fn execute<R: Recorder + Send>(
    py: Python<'_>,
    progress: &Progress,
    scenario: &Scenario,
    name: &str,
    object: Option<(PyPolicy, Kept)>,
    decisions: bool,
    rec: &mut R,
) -> PyResult<(RunSummary, Option<Vec<String>>)> {
    let result = match object {
        None => watched(py, progress, || {
            run_into(scenario, name, None, decisions, rec)
        })?,
        Some((adapter, kept)) => {
            let result = run_into(scenario, name, Some(Box::new(adapter)), decisions, rec);
            if let Some(e) = kept.take() {
                return Err(e);
            }
            result
        }
    };
    result
        .map_err(|e| match e {
            Error::Input(m) => Error::input(format!("{}: {name}: {m}", scenario.origin)),
            e => e,
        })
        .map_err(py_err)
}

/// Runs one simulation. Returns a dict: `meta`, JSON text of the scalars (scenario,
/// machine, seed, policy, units, metrics, summary, decisions); `tasks` and `events`,
/// the columns asked for (see [`crate::columns`]) or None. Without columns the run keeps
/// what `hetsched simulate --summary` keeps, the metrics alone; with them, the record's
/// invariants are checked as the CLI's per-task CSV checks them.
/// `python/hetsched/_sim.py` builds the `Result`.
#[pyfunction]
#[pyo3(signature = (scenario, policy, is_json = false, seed = None, max_time_s = None,
                    max_events = None, decisions = false, tasks = false, events = false))]
#[allow(clippy::too_many_arguments)]
pub fn simulate<'py>(
    py: Python<'py>,
    scenario: &str,
    policy: &Bound<'py, PyAny>,
    is_json: bool,
    seed: Option<u64>,
    max_time_s: Option<f64>,
    max_events: Option<u64>,
    decisions: bool,
    tasks: bool,
    events: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let mut scenario = load(scenario, is_json).map_err(py_err)?;
    if let Some(seed) = seed {
        scenario.seed = seed;
    }
    scenario
        .override_end(max_time_s, max_events, str::to_string)
        .map_err(py_err)?;
    let (name, object) = if let Ok(spec) = policy.extract::<String>() {
        hetsched_policies::check(&spec)
            .map_err(|e| py_err(Error::input(format!("policy {spec:?}: {e}"))))?;
        (spec, None)
    } else {
        let (adapter, kept) = PyPolicy::new(policy)?;
        (adapter.name().to_string(), Some((adapter, kept)))
    };
    let progress = Arc::new(Progress::default());
    scenario.config.watch = Some(progress.clone());
    let started = std::time::Instant::now();
    let (summary, log, run_s, mut metrics, task_columns, event_columns) = if tasks || events {
        let mut rec = Columns::new(&name, &scenario.machine, tasks, events);
        let (summary, log) = execute(py, &progress, &scenario, &name, object, decisions, &mut rec)?;
        let run_s = started.elapsed().as_secs_f64();
        let (metrics, t, e) = rec
            .finish()
            .map_err(|e| py_err(Error::runtime(format!("{name}: run record invariant: {e}"))))?;
        (summary, log, run_s, metrics, t, e)
    } else {
        let mut rec = SummaryStream::new(&name, &scenario.machine);
        let (summary, log) = execute(py, &progress, &scenario, &name, object, decisions, &mut rec)?;
        let run_s = started.elapsed().as_secs_f64();
        (summary, log, run_s, rec.finish(), None, None)
    };
    summary
        .settle(&mut metrics, &scenario.config, &name)
        .map_err(py_err)?;
    let s = &summary;
    let units: Vec<Value> = scenario
        .machine
        .units
        .iter()
        .map(|u| json!({"id": u.id, "type": u.kind, "name": u.name, "capacity": u.capacity}))
        .collect();
    let meta = to_json(&json!({
        "scenario": scenario.origin,
        "machine": scenario.machine.name,
        "seed": scenario.seed,
        "policy": name,
        "units": units,
        "metrics": metrics,
        "summary": {"events": s.events, "end_ns": s.end_ns, "submitted": s.submitted,
                    "completed": s.completed, "rejected": s.rejected,
                    "unfinished": s.unfinished, "peak_live": s.peak_live, "run_s": run_s},
        "decisions": log,
    }));
    let out = PyDict::new(py);
    out.set_item("meta", meta)?;
    let task_columns = task_columns.map(|c| c.into_py(py)).transpose()?;
    out.set_item("tasks", task_columns)?;
    let event_columns = event_columns.map(|c| c.into_py(py)).transpose()?;
    out.set_item("events", event_columns)?;
    Ok(out)
}
