//! `machine`, `simulate` and `policies`: the simulator from Python. A run with a
//! registry policy releases the GIL (other Python threads go on, and `sweep` runs in
//! threads or processes alike); a run with a Python policy holds it, since every
//! decision is a Python call.
//!
//! A run with a registry policy goes on a thread of its own while the calling thread
//! waits for it, looking for Python's signals every [`SIGNAL_PERIOD`]: Ctrl-C (or
//! Jupyter's interrupt) stops the run within a millisecond of the next look (the
//! engine's `Config::watch`) and raises `KeyboardInterrupt`. The whole record is kept
//! and returned, so a run keeps at most [`MAX_KEPT_EVENTS`] events.

use crate::policy::PyPolicy;
use crate::{py_err, to_json};
use hetsched_core::machine::UnitGranularity;
use hetsched_core::policy::Policy;
use hetsched_core::record::{Event, EventKind, Record};
use hetsched_core::task::{Placement, QueueId};
use hetsched_core::{Error, Result};
use hetsched_policies::recording::Recording;
use hetsched_sim::engine::Progress;
use hetsched_sim::scenario::Scenario;
use hetsched_sim::RunSummary;
use pyo3::prelude::*;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Events a run from Python may keep. Each becomes a row of the events table, a JSON
/// value on the way and then a Python object, some ten times the 48 bytes it takes in
/// the record; 4 × 10^6 is about what the former default limit of 10^6 engine events
/// let a run keep (up to four record events each): 0.2 GB in the record, a few GB as
/// Python objects.
pub const MAX_KEPT_EVENTS: u64 = 4_000_000;

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

/// What one run produced.
struct Run {
    record: Record,
    summary: RunSummary,
    decisions: Option<Vec<String>>,
}

/// Runs `policy` on the scenario, logging its decisions if asked.
/// `label` names the policy in the record.
fn run(
    scenario: &Scenario,
    label: &str,
    mut policy: Box<dyn Policy>,
    decisions: bool,
) -> Result<Run> {
    let no_progress = &mut |_: &_| {};
    if !decisions {
        let (record, summary) =
            hetsched_sim::run_with(scenario, label, policy.as_mut(), no_progress)?;
        return Ok(Run {
            record,
            summary,
            decisions: None,
        });
    }
    let (mut recording, log) = Recording::new(policy);
    let (record, summary) = hetsched_sim::run_with(scenario, label, &mut recording, no_progress)?;
    drop(recording);
    let calls = log.lock().expect("the log's lock");
    Ok(Run {
        record,
        summary,
        decisions: Some(calls.iter().map(|c| format!("{c:?}")).collect()),
    })
}

fn queue(q: QueueId) -> String {
    match q {
        QueueId::Central => "central".into(),
        QueueId::Unit(u) => format!("unit:{u}"),
    }
}

/// An event as one flat row (the columns of the events DataFrame).
fn event_row(e: &Event) -> Value {
    let (name, unit, queue, reason) = match &e.kind {
        EventKind::Submit { .. } => ("submit", None, None, None),
        EventKind::Enqueue { queue: q } => ("enqueue", None, Some(queue(*q)), None),
        EventKind::Start { unit, from } => ("start", Some(*unit), Some(queue(*from)), None),
        EventKind::Stop { unit } => ("stop", Some(*unit), None, None),
        EventKind::Migrate { from, to } => {
            let from = match from {
                Placement::Queued(q) => queue(*q),
                Placement::Running(u) => format!("running:{u}"),
            };
            ("migrate", Some(*to), Some(from), None)
        }
        EventKind::Complete { unit } => ("complete", Some(*unit), None, None),
        EventKind::Reject { reason } => ("reject", None, None, Some(reason.clone())),
    };
    json!({"t_ns": e.t_ns, "task": e.task, "event": name, "unit": unit, "queue": queue,
           "reason": reason})
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

/// Runs one simulation and returns its results as JSON text (see
/// `python/hetsched/_sim.py` for the shape).
#[pyfunction]
#[pyo3(signature = (scenario, policy, is_json = false, seed = None, max_time_s = None,
                    max_events = None, decisions = false))]
#[allow(clippy::too_many_arguments)]
pub fn simulate(
    py: Python<'_>,
    scenario: &str,
    policy: &Bound<'_, PyAny>,
    is_json: bool,
    seed: Option<u64>,
    max_time_s: Option<f64>,
    max_events: Option<u64>,
    decisions: bool,
) -> PyResult<String> {
    let mut scenario = load(scenario, is_json).map_err(py_err)?;
    if let Some(seed) = seed {
        scenario.seed = seed;
    }
    scenario
        .override_end(max_time_s, max_events, str::to_string)
        .map_err(py_err)?;
    scenario.config.max_kept_events = Some(MAX_KEPT_EVENTS);
    let progress = Arc::new(Progress::default());
    scenario.config.watch = Some(progress.clone());
    let started = std::time::Instant::now();
    let (name, result) = if let Ok(spec) = policy.extract::<String>() {
        let seed = scenario.seed;
        hetsched_policies::build(&spec, seed)
            .map_err(|e| py_err(Error::input(format!("policy {spec:?}: {e}"))))?;
        let s = &scenario;
        let work = || match decisions {
            // The engine compiled for the policy's type (`run_policy`), as `simulate` runs it.
            false => {
                hetsched_sim::run_policy(s, &spec, seed, &mut |_| {}).map(|(record, summary)| Run {
                    record,
                    summary,
                    decisions: None,
                })
            }
            true => run(s, &spec, hetsched_policies::build(&spec, seed)?, true),
        };
        let result = watched(py, &progress, work)?;
        (spec, result)
    } else {
        let (adapter, kept) = PyPolicy::new(policy)?;
        let name = adapter.name().to_string();
        let result = run(&scenario, &name, Box::new(adapter), decisions);
        if let Some(e) = kept.take() {
            return Err(e);
        }
        (name, result)
    };
    let run_s = started.elapsed().as_secs_f64();
    let run = result
        .map_err(|e| match e {
            Error::Input(m) => Error::input(format!("{}: {name}: {m}", scenario.origin)),
            e => e,
        })
        .map_err(py_err)?;
    run.record
        .check()
        .map_err(|e| py_err(Error::runtime(format!("{name}: run record invariant: {e}"))))?;
    if run.summary.unfinished > 0 && scenario.config.max_time_ns.is_none() {
        return Err(py_err(Error::runtime(format!(
            "{name}: {} tasks never finished (the policy left them queued)",
            run.summary.unfinished
        ))));
    }
    let s = &run.summary;
    let units: Vec<Value> = scenario
        .machine
        .units
        .iter()
        .map(|u| json!({"id": u.id, "type": u.kind, "name": u.name, "capacity": u.capacity}))
        .collect();
    let events: Vec<Value> = run.record.events.iter().map(event_row).collect();
    Ok(to_json(&json!({
        "scenario": scenario.origin,
        "machine": scenario.machine.name,
        "seed": scenario.seed,
        "policy": name,
        "units": units,
        "metrics": run.record.metrics(),
        "summary": {"events": s.events, "end_ns": s.end_ns, "submitted": s.submitted,
                    "completed": s.completed, "rejected": s.rejected,
                    "unfinished": s.unfinished, "peak_live": s.peak_live, "run_s": run_s},
        "tasks": run.record.outcomes(),
        "events": events,
        "decisions": run.decisions,
    })))
}
