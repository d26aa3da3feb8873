//! A run's per-task outcomes and events kept as columns, for `simulate(..., tasks=True)`
//! and `simulate(..., events=True)`, and handed to Python as one `bytes` object per
//! column (little-endian, read with `numpy.frombuffer`: no Python object per row).
//!
//! Why columns: a 1M-task run makes four million events; one Python dict per row cost
//! tens of seconds and gigabytes, a column of fixed-width values a copy of its bytes.
//! The outcomes come from the same [`RunStream`] as the CLI's per-task CSV (which also
//! checks the run record's invariants), the metrics from the same [`MetricsBuilder`],
//! so a run gives the CLI's figures to the bit.

use hetsched_core::outcome_stream::{MetricsBuilder, RunStream};
use hetsched_core::record::{Event, EventKind, Metrics, Recorder, TaskOutcome};
use hetsched_core::task::{Placement, QueueId, TaskId};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::collections::HashMap;
use std::sync::Arc;

/// No value in a nullable column (times and units stay far below it).
const NONE: u64 = u64::MAX;

/// Strings given a code each in order of first appearance (a pandas categorical's
/// categories); the last one looked up answers without hashing.
struct Codes<K> {
    index: HashMap<K, i32>,
    names: Vec<String>,
    last: Option<(K, i32)>,
}

impl<K> Default for Codes<K> {
    fn default() -> Self {
        Codes {
            index: HashMap::new(),
            names: Vec::new(),
            last: None,
        }
    }
}

impl<K: std::hash::Hash + Eq + Clone> Codes<K> {
    #[inline]
    fn code(&mut self, key: &K, name: impl FnOnce(&K) -> String) -> i32 {
        if let Some((k, c)) = &self.last {
            if k == key {
                return *c;
            }
        }
        let next = self.names.len() as i32;
        let c = *self.index.entry(key.clone()).or_insert(next);
        if c == next {
            self.names.push(name(key));
        }
        self.last = Some((key.clone(), c));
        c
    }
}

/// One outcome per task, in submission order (the CLI's per-task CSV's rows).
#[derive(Default)]
pub struct TaskColumns {
    task: Vec<TaskId>,
    kind: Vec<i32>,
    kinds: Codes<Arc<str>>,
    arrival_ns: Vec<u64>,
    first_start_ns: Vec<u64>,
    end_ns: Vec<u64>,
    run_ns: Vec<u64>,
    ideal_ns: Vec<u64>,
    runs: Vec<u32>,
    migrations: Vec<u32>,
    unit: Vec<u32>,
    rejected: Vec<bool>,
}

impl TaskColumns {
    #[inline]
    fn push(&mut self, o: &TaskOutcome) {
        self.task.push(o.task);
        let kind = self.kinds.code(&o.kind, |k| k.to_string());
        self.kind.push(kind);
        self.arrival_ns.push(o.arrival_ns);
        self.first_start_ns.push(o.first_start_ns.unwrap_or(NONE));
        self.end_ns.push(o.end_ns.unwrap_or(NONE));
        self.run_ns.push(o.run_ns);
        self.ideal_ns.push(o.ideal_ns);
        self.runs.push(o.runs);
        self.migrations.push(o.migrations);
        self.unit.push(o.unit.unwrap_or(u32::MAX));
        self.rejected.push(o.rejected);
    }

    /// The columns as a dict of name to `(dtype, bytes, mask bytes or None,
    /// categories or None)`; each column's memory is freed once it is copied.
    pub fn into_py(self, py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
        let d = PyDict::new(py);
        put(&d, "task", i64s(py, self.task, |v| v as i64)?)?;
        put(&d, "kind", categorical(py, self.kind, self.kinds.names)?)?;
        put(&d, "arrival_ns", i64s(py, self.arrival_ns, |v| v as i64)?)?;
        put(
            &d,
            "first_start_ns",
            nullable(py, self.first_start_ns, NONE)?,
        )?;
        put(&d, "end_ns", nullable(py, self.end_ns, NONE)?)?;
        put(&d, "run_ns", i64s(py, self.run_ns, |v| v as i64)?)?;
        put(&d, "ideal_ns", i64s(py, self.ideal_ns, |v| v as i64)?)?;
        put(&d, "runs", i64s(py, self.runs, i64::from)?)?;
        put(&d, "migrations", i64s(py, self.migrations, i64::from)?)?;
        let unit = self.unit.into_iter().map(|u| u as u64).collect();
        put(&d, "unit", nullable(py, unit, u32::MAX as u64)?)?;
        let rejected = PyBytes::new_with(py, self.rejected.len(), |b| {
            b.iter_mut()
                .zip(&self.rejected)
                .for_each(|(b, &r)| *b = r as u8);
            Ok(())
        })?;
        put(&d, "rejected", ("bool", rejected, None, None))?;
        Ok(d)
    }
}

/// The names of the event kinds, by code (the events' `event` categories).
pub const EVENT_NAMES: [&str; 7] = [
    "submit", "enqueue", "start", "stop", "migrate", "complete", "reject",
];

/// Where an event's `queue` column says a task was or went.
#[derive(Clone, Copy, Hash, PartialEq, Eq)]
enum Where {
    Queue(QueueId),
    Running(u32),
}

/// One row per record event, in the record's order.
#[derive(Default)]
pub struct EventColumns {
    t_ns: Vec<u64>,
    task: Vec<TaskId>,
    event: Vec<u8>,
    unit: Vec<u32>,
    queue: Vec<i32>,
    queues: Codes<Where>,
    reason: Vec<i32>,
    reasons: Codes<String>,
}

impl EventColumns {
    #[inline]
    fn push_row(&mut self, t_ns: u64, task: TaskId, event: u8, unit: Option<u32>, queue: i32) {
        self.t_ns.push(t_ns);
        self.task.push(task);
        self.event.push(event);
        self.unit.push(unit.unwrap_or(u32::MAX));
        self.queue.push(queue);
    }

    #[inline]
    fn push(&mut self, e: &Event) {
        let name = |w: &Where| match *w {
            Where::Queue(QueueId::Central) => "central".to_string(),
            Where::Queue(QueueId::Unit(u)) => format!("unit:{u}"),
            Where::Running(u) => format!("running:{u}"),
        };
        let mut queue = |w: Where| self.queues.code(&w, name);
        let (event, unit, queue) = match &e.kind {
            EventKind::Submit { .. } => (0, None, -1),
            EventKind::Enqueue { queue: q } => (1, None, queue(Where::Queue(*q))),
            EventKind::Start { unit, from } => (2, Some(*unit), queue(Where::Queue(*from))),
            EventKind::Stop { unit } => (3, Some(*unit), -1),
            EventKind::Migrate { from, to } => {
                let from = match from {
                    Placement::Queued(q) => Where::Queue(*q),
                    Placement::Running(u) => Where::Running(*u),
                };
                (4, Some(*to), queue(from))
            }
            EventKind::Complete { unit } => (5, Some(*unit), -1),
            EventKind::Reject { reason } => {
                let code = self.reasons.code(reason, String::clone);
                self.reason.resize(self.t_ns.len(), -1);
                self.reason.push(code);
                (6, None, -1)
            }
        };
        self.push_row(e.t_ns, e.task, event, unit, queue);
    }

    /// The columns as [`TaskColumns::into_py`] gives them.
    pub fn into_py(self, py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
        let n = self.t_ns.len();
        let d = PyDict::new(py);
        put(&d, "t_ns", i64s(py, self.t_ns, |v| v as i64)?)?;
        put(&d, "task", i64s(py, self.task, |v| v as i64)?)?;
        let event: Vec<i32> = self.event.into_iter().map(i32::from).collect();
        let names = EVENT_NAMES.iter().map(|s| s.to_string()).collect();
        put(&d, "event", categorical(py, event, names)?)?;
        let unit = self.unit.into_iter().map(|u| u as u64).collect();
        put(&d, "unit", nullable(py, unit, u32::MAX as u64)?)?;
        put(&d, "queue", categorical(py, self.queue, self.queues.names)?)?;
        // Reasons are rare: the column is filled up to a rejection only.
        let mut reason = self.reason;
        reason.resize(n, -1);
        put(&d, "reason", categorical(py, reason, self.reasons.names)?)?;
        Ok(d)
    }
}

/// A column for Python: dtype, values, missing-value mask, categories.
type Column<'py> = (
    &'static str,
    Bound<'py, PyBytes>,
    Option<Bound<'py, PyBytes>>,
    Option<Vec<String>>,
);

fn put<'py>(d: &Bound<'py, PyDict>, name: &str, c: Column<'py>) -> PyResult<()> {
    d.set_item(name, c)
}

/// Values as little-endian `int64` bytes (the vector freed once copied).
fn i64s<T: Copy>(py: Python<'_>, v: Vec<T>, f: impl Fn(T) -> i64) -> PyResult<Column<'_>> {
    let b = PyBytes::new_with(py, v.len() * 8, |b| {
        for (out, &x) in b.chunks_exact_mut(8).zip(&v) {
            out.copy_from_slice(&f(x).to_le_bytes());
        }
        Ok(())
    })?;
    Ok(("int64", b, None, None))
}

/// Values with `none` for missing ones: `int64` bytes (0 where missing) and a mask
/// (1 where missing), a pandas nullable `Int64` column.
fn nullable(py: Python<'_>, v: Vec<u64>, none: u64) -> PyResult<Column<'_>> {
    let mask = PyBytes::new_with(py, v.len(), |b| {
        b.iter_mut()
            .zip(&v)
            .for_each(|(m, &x)| *m = (x == none) as u8);
        Ok(())
    })?;
    let (_, values, _, _) = i64s(py, v, |x| if x == none { 0 } else { x as i64 })?;
    Ok(("Int64", values, Some(mask), None))
}

/// Codes into `names` (-1: missing) as `int32` bytes, a pandas categorical.
fn categorical(py: Python<'_>, codes: Vec<i32>, names: Vec<String>) -> PyResult<Column<'_>> {
    let b = PyBytes::new_with(py, codes.len() * 4, |b| {
        for (out, &x) in b.chunks_exact_mut(4).zip(&codes) {
            out.copy_from_slice(&x.to_le_bytes());
        }
        Ok(())
    })?;
    Ok(("category", b, None, Some(names)))
}

/// The recorder of a run that keeps outcomes or events (or both): the record's
/// invariants checked and the metrics made as `hetsched simulate` makes them with its
/// per-task CSV, and the columns asked for.
pub struct Columns {
    run: RunStream,
    metrics: MetricsBuilder,
    tasks: Option<TaskColumns>,
    events: Option<EventColumns>,
    /// The first invariant violation (the run goes on; [`Columns::finish`] says).
    violation: Option<String>,
}

impl Columns {
    pub fn new(
        policy: &str,
        machine: &hetsched_core::machine::Machine,
        tasks: bool,
        events: bool,
    ) -> Columns {
        let kinds: Vec<_> = machine.units.iter().map(|u| u.kind).collect();
        Columns {
            run: RunStream::new(kinds.len(), false),
            metrics: MetricsBuilder::new(policy, &kinds),
            tasks: tasks.then(TaskColumns::default),
            events: events.then(EventColumns::default),
            violation: None,
        }
    }

    /// The metrics and the columns, the outcomes still held taken first; the record's
    /// first invariant violation otherwise.
    pub fn finish(
        mut self,
    ) -> Result<(Metrics, Option<TaskColumns>, Option<EventColumns>), String> {
        let (metrics, tasks) = (&mut self.metrics, &mut self.tasks);
        self.run.finish(&mut |o| take(metrics, tasks, o));
        if let Some(v) = self.violation {
            return Err(v);
        }
        let metrics = self.metrics.finish(&self.run.tallies());
        Ok((metrics, self.tasks, self.events))
    }
}

#[inline(always)]
fn take(metrics: &mut MetricsBuilder, tasks: &mut Option<TaskColumns>, o: &TaskOutcome) {
    metrics.outcome(o);
    if let Some(t) = tasks {
        t.push(o);
    }
}

impl Recorder for Columns {
    /// The rows held, events' and tasks' (the engine bounds them by
    /// `Config::max_kept_events`: a task row takes about twice an event row's bytes, a
    /// kept record's event about as much).
    fn kept(&self) -> usize {
        self.events.as_ref().map_or(0, |e| e.t_ns.len())
            + self.tasks.as_ref().map_or(0, |t| t.task.len())
    }

    #[inline]
    fn record(&mut self, event: Event) {
        if let Some(ev) = &mut self.events {
            ev.push(&event);
        }
        let (metrics, tasks) = (&mut self.metrics, &mut self.tasks);
        if let Err(e) = self.run.push(&event, &mut |o| take(metrics, tasks, o)) {
            self.violation.get_or_insert(e);
        }
    }

    #[inline]
    fn submit(&mut self, t_ns: u64, task: TaskId, ideal_ns: u64, kind: &Arc<str>) {
        if let Some(ev) = &mut self.events {
            ev.push_row(t_ns, task, 0, None, -1);
        }
        if let Err(e) = self.run.push_submit(t_ns, task, ideal_ns, kind) {
            self.violation.get_or_insert(e);
        }
    }
}
