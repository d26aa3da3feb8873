//! Policies written in Python: [`PyPolicy`] implements the engine's `Policy` trait by
//! calling the methods of a `hetsched.Policy` subclass, and [`View`] is the read-only
//! view those methods get.
//!
//! The view borrows the engine's state for the duration of one call only: the Python
//! object holds a pointer that is set before the call and cleared after it, so a view a
//! policy kept raises `RuntimeError` instead of reading freed memory.
//!
//! A Python exception (or an answer of the wrong type) cannot unwind through the engine,
//! so the adapter keeps it and answers with something the engine core refuses (a task or
//! unit that does not exist): the run stops at once, and `simulate` raises the kept
//! exception rather than the contract error.

use hetsched_core::machine::UnitType;
use hetsched_core::policy::{
    CheckpointDecision, PickDecision, Policy, Sample, SubmitDecision, TickAction, UnitId,
    View as EngineView,
};
use hetsched_core::task::{QueueId, TaskId};
use pyo3::exceptions::{PyIndexError, PyKeyError, PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Mutex;

/// Where a [`PyPolicy`] keeps the exception that stopped a run, for `simulate` to raise.
pub type Kept = Rc<RefCell<Option<PyErr>>>;

/// `submit`'s answer that refuses a task.
#[pyclass(frozen, module = "hetsched")]
pub struct Reject {
    #[pyo3(get)]
    reason: String,
}

#[pymethods]
impl Reject {
    #[new]
    fn new(reason: String) -> Self {
        Reject { reason }
    }
    fn __repr__(&self) -> String {
        format!("Reject({:?})", self.reason)
    }
}

/// `pick`'s answer that takes `task` from unit `from_unit`'s queue.
#[pyclass(frozen, module = "hetsched")]
pub struct Steal {
    #[pyo3(get)]
    from_unit: UnitId,
    #[pyo3(get)]
    task: TaskId,
}

#[pymethods]
impl Steal {
    #[new]
    fn new(from_unit: UnitId, task: TaskId) -> Self {
        Steal { from_unit, task }
    }
    fn __repr__(&self) -> String {
        format!("Steal(from_unit={}, task={})", self.from_unit, self.task)
    }
}

/// The engine's state as a policy call sees it (valid during that call, on its thread,
/// only: anywhere else its methods raise `RuntimeError`).
#[pyclass(module = "hetsched")]
pub struct View {
    current: Mutex<Option<Current>>,
}

/// The engine view of the policy call in progress, and the thread making it.
struct Current {
    view: *const EngineView,
    thread: std::thread::ThreadId,
}

// SAFETY: `view` is dereferenced only by `View::get`, on `thread`, while the call that
// set it is in progress.
unsafe impl Send for Current {}

impl View {
    fn get(&self) -> PyResult<&EngineView> {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let Some(c) = current.as_ref() else {
            return Err(PyRuntimeError::new_err(
                "the view is valid only during the policy call it was passed to",
            ));
        };
        if c.thread != std::thread::current().id() {
            return Err(PyRuntimeError::new_err(
                "the view may be used only on the thread of the policy call it was passed to",
            ));
        }
        // SAFETY: set by `PyPolicy::call` to a view borrowed for the duration of the
        // Python call and cleared before that borrow ends; this is the call's thread,
        // and the call (which holds the GIL) is still in progress.
        Ok(unsafe { &*c.view })
    }

    fn set(&self, view: Option<&EngineView>) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = view.map(|v| Current {
            view: v,
            thread: std::thread::current().id(),
        });
    }

    fn unit_id(&self, unit: i64) -> PyResult<(&EngineView, UnitId)> {
        let v = self.get()?;
        if unit < 0 || unit as usize >= v.units().len() {
            return Err(PyIndexError::new_err(format!(
                "unit {unit}: expected an id in [0, {})",
                v.units().len()
            )));
        }
        Ok((v, unit as UnitId))
    }

    fn live(&self, task: TaskId) -> PyResult<&hetsched_core::task::TaskEntry> {
        self.get()?
            .entry(task)
            .ok_or_else(|| PyKeyError::new_err(format!("task {task} is not live")))
    }
}

#[pymethods]
impl View {
    /// Nanoseconds since the start of the run.
    #[getter]
    fn now_ns(&self) -> PyResult<u64> {
        Ok(self.get()?.now_ns())
    }
    /// Number of units (ids are 0..n).
    #[getter]
    fn unit_count(&self) -> PyResult<usize> {
        Ok(self.get()?.units().len())
    }
    /// A unit as a dict: id, type ("cpu", "gpu", "opencl", "coprocessor"), name,
    /// capacity (1024 scale), numa_node.
    fn unit<'py>(&self, py: Python<'py>, unit: i64) -> PyResult<Bound<'py, PyDict>> {
        let (v, u) = self.unit_id(unit)?;
        let u = v.unit(u);
        let d = PyDict::new(py);
        d.set_item("id", u.id)?;
        d.set_item("type", u.kind.name())?;
        d.set_item("name", &u.name)?;
        d.set_item("capacity", u.capacity)?;
        d.set_item("numa_node", u.numa_node)?;
        Ok(d)
    }
    /// A unit's type name.
    fn unit_type(&self, unit: i64) -> PyResult<&'static str> {
        let (v, u) = self.unit_id(unit)?;
        Ok(v.unit(u).kind.name())
    }
    /// Task ids waiting in a unit's queue, head first.
    fn queue(&self, unit: i64) -> PyResult<Vec<TaskId>> {
        let (v, u) = self.unit_id(unit)?;
        Ok(v.queue(u).iter().collect())
    }
    /// Task ids waiting in the central queue, head first.
    fn central(&self) -> PyResult<Vec<TaskId>> {
        Ok(self.get()?.central().iter().collect())
    }
    /// The task running on a unit, or None.
    fn running(&self, unit: i64) -> PyResult<Option<TaskId>> {
        let (v, u) = self.unit_id(unit)?;
        Ok(v.running(u).map(|r| r.task))
    }
    /// Queued plus running tasks of a unit.
    fn load(&self, unit: i64) -> PyResult<usize> {
        let (v, u) = self.unit_id(unit)?;
        Ok(v.load(u))
    }
    /// Whether a live task has an implementation for a unit's type.
    fn can_run(&self, task: TaskId, unit: i64) -> PyResult<bool> {
        let (v, u) = self.unit_id(unit)?;
        let entry = self.live(task)?;
        Ok(entry.task.affinity.runs_on(v.unit(u).kind))
    }
    /// A live task's meta info as a dict: id, kind, affinity (per unit type), weight,
    /// arrival_ns, bytes_in, bytes_out, numa_home, runs, run_ns.
    fn task<'py>(&self, py: Python<'py>, task: TaskId) -> PyResult<Bound<'py, PyDict>> {
        let e = self.live(task)?;
        let t = &e.task;
        let affinity = PyDict::new(py);
        for kind in UnitType::ALL {
            affinity.set_item(kind.name(), t.affinity.get(kind))?;
        }
        let d = PyDict::new(py);
        d.set_item("id", t.id)?;
        d.set_item("kind", &*t.kind)?;
        d.set_item("affinity", affinity)?;
        d.set_item("weight", t.weight)?;
        d.set_item("arrival_ns", t.arrival_ns)?;
        d.set_item("bytes_in", t.bytes_in)?;
        d.set_item("bytes_out", t.bytes_out)?;
        d.set_item("numa_home", t.numa_home())?;
        d.set_item("runs", e.runs)?;
        d.set_item("run_ns", e.run_ns)?;
        Ok(d)
    }
}

/// Which optional methods the Python class defines (the others keep the trait's
/// defaults and cost no call).
struct Defined {
    time_slice: bool,
    checkpoint: bool,
    complete: bool,
    tick: bool,
}

/// A Python `hetsched.Policy` object as an engine policy (see the module docs).
pub struct PyPolicy {
    obj: Py<PyAny>,
    view: Py<View>,
    name: String,
    tick_interval: Option<u64>,
    wants_samples: bool,
    defined: Defined,
    /// The first exception a call raised (shared with the caller of the run); the run
    /// stops at the next answer.
    error: Kept,
}

/// Answers the engine core refuses, to stop a run after a Python error.
const NO_UNIT: UnitId = UnitId::MAX;
const NO_TASK: TaskId = TaskId::MAX;

impl PyPolicy {
    /// The adapter and where it keeps an exception.
    pub fn new(obj: &Bound<'_, PyAny>) -> PyResult<(PyPolicy, Kept)> {
        let py = obj.py();
        let base = py.import("hetsched")?.getattr("Policy")?;
        if !obj.is_instance(&base)? {
            return Err(PyTypeError::new_err(format!(
                "policy: expected a registry spec (str) or a hetsched.Policy instance, got {}",
                obj.get_type().name()?
            )));
        }
        // A method counts as defined when the subclass overrides the base's.
        let overrides =
            |m: &str| -> PyResult<bool> { Ok(!obj.get_type().getattr(m)?.is(&base.getattr(m)?)) };
        let name: String = obj.getattr("name")?.extract()?;
        let tick_interval: Option<u64> = obj.getattr("tick_interval_ns")?.extract()?;
        if tick_interval == Some(0) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "policy: tick_interval_ns: expected None or an integer >= 1",
            ));
        }
        let error = Kept::default();
        let policy = PyPolicy {
            obj: obj.clone().unbind(),
            view: Py::new(
                py,
                View {
                    current: Mutex::new(None),
                },
            )?,
            name,
            tick_interval,
            wants_samples: obj.getattr("wants_samples")?.extract()?,
            defined: Defined {
                time_slice: overrides("time_slice")?,
                checkpoint: overrides("checkpoint")?,
                complete: overrides("complete")?,
                tick: overrides("tick")?,
            },
            error: error.clone(),
        };
        Ok((policy, error))
    }

    /// Calls `method(view, *args)` and converts its answer; after an error, `poison`.
    fn call<T>(
        &mut self,
        view: &EngineView,
        method: &str,
        args: impl for<'py> FnOnce(Python<'py>, Bound<'py, View>) -> PyResult<Bound<'py, PyAny>>,
        convert: impl for<'py> FnOnce(&Bound<'py, PyAny>) -> PyResult<T>,
        poison: T,
    ) -> T {
        if self.error.borrow().is_some() {
            return poison;
        }
        Python::attach(|py| {
            let v = self.view.bind(py).clone();
            v.borrow().set(Some(view));
            let answer = args(py, v.clone())
                .and_then(|a| self.obj.bind(py).call_method1(method, a.cast_into()?))
                .and_then(|r| {
                    convert(&r).map_err(|e| {
                        let msg = format!("{}.{method}: {}", self.name, e.value(py));
                        PyTypeError::new_err(msg)
                    })
                });
            v.borrow().set(None);
            answer.unwrap_or_else(|e| {
                *self.error.borrow_mut() = Some(e);
                poison
            })
        })
    }
}

fn tuple<'py>(py: Python<'py>, items: impl IntoPyObject<'py>) -> PyResult<Bound<'py, PyAny>> {
    use pyo3::BoundObject;
    Ok(items
        .into_pyobject(py)
        .map_err(Into::into)?
        .into_any()
        .into_bound())
}

fn submit_answer(r: &Bound<'_, PyAny>) -> PyResult<SubmitDecision> {
    if let Ok(u) = r.extract::<UnitId>() {
        return Ok(SubmitDecision::Enqueue(QueueId::Unit(u)));
    }
    if r.extract::<String>().is_ok_and(|s| s == "central") {
        return Ok(SubmitDecision::Enqueue(QueueId::Central));
    }
    if let Ok(rej) = r.cast::<Reject>() {
        return Ok(SubmitDecision::Reject(rej.get().reason.clone()));
    }
    Err(PyTypeError::new_err(format!(
        "expected a unit id, \"central\" or hetsched.Reject(reason), got {r:?}"
    )))
}

fn pick_answer(r: &Bound<'_, PyAny>) -> PyResult<PickDecision> {
    if r.is_none() {
        return Ok(PickDecision::Idle);
    }
    if let Ok(t) = r.extract::<TaskId>() {
        return Ok(PickDecision::Run(t));
    }
    if let Ok(s) = r.cast::<Steal>() {
        let s = s.get();
        return Ok(PickDecision::Steal {
            from: s.from_unit,
            task: s.task,
        });
    }
    Err(PyTypeError::new_err(format!(
        "expected a task id, hetsched.Steal(from_unit, task) or None, got {r:?}"
    )))
}

fn checkpoint_answer(r: &Bound<'_, PyAny>) -> PyResult<CheckpointDecision> {
    if r.is_none() {
        return Ok(CheckpointDecision::Continue);
    }
    if let Ok(u) = r.extract::<UnitId>() {
        return Ok(CheckpointDecision::Migrate(u));
    }
    match r.extract::<String>().as_deref() {
        Ok("continue") => Ok(CheckpointDecision::Continue),
        Ok("yield") => Ok(CheckpointDecision::Yield),
        _ => Err(PyTypeError::new_err(format!(
            "expected None, \"continue\", \"yield\" or a unit id to migrate to, got {r:?}"
        ))),
    }
}

fn tick_answer(r: &Bound<'_, PyAny>) -> PyResult<Vec<TickAction>> {
    if r.is_none() {
        return Ok(Vec::new());
    }
    let moves: Vec<(TaskId, UnitId)> = r.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "expected None or a list of (task, unit) migrations, got {r:?}"
        ))
    })?;
    Ok(moves
        .into_iter()
        .map(|(task, to)| TickAction::Migrate { task, to })
        .collect())
}

fn samples<'py>(py: Python<'py>, samples: &[Sample]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for s in samples {
        let d = PyDict::new(py);
        d.set_item("unit", s.unit)?;
        d.set_item("task", s.task)?;
        d.set_item("busy_ns", s.busy_ns)?;
        d.set_item("interval_ns", s.interval_ns)?;
        d.set_item("memory_bound", s.memory_bound)?;
        list.append(d)?;
    }
    Ok(list)
}

impl Policy for PyPolicy {
    fn name(&self) -> &str {
        &self.name
    }
    fn submit(&mut self, view: &EngineView, task: TaskId) -> SubmitDecision {
        let poison = SubmitDecision::Enqueue(QueueId::Unit(NO_UNIT));
        self.call(
            view,
            "submit",
            |py, v| tuple(py, (v, task)),
            submit_answer,
            poison,
        )
    }
    fn pick(&mut self, view: &EngineView, unit: UnitId) -> PickDecision {
        let poison = PickDecision::Run(NO_TASK);
        self.call(
            view,
            "pick",
            |py, v| tuple(py, (v, unit)),
            pick_answer,
            poison,
        )
    }
    fn time_slice(&mut self, view: &EngineView, unit: UnitId, task: TaskId) -> Option<u64> {
        if !self.defined.time_slice {
            return None;
        }
        let args = (unit, task);
        self.call(
            view,
            "time_slice",
            |py, v| tuple(py, (v, args.0, args.1)),
            |r| r.extract(),
            None,
        )
    }
    fn checkpoint(&mut self, view: &EngineView, task: TaskId, unit: UnitId) -> CheckpointDecision {
        if !self.defined.checkpoint {
            return CheckpointDecision::Continue;
        }
        let poison = CheckpointDecision::Migrate(NO_UNIT);
        self.call(
            view,
            "checkpoint",
            |py, v| tuple(py, (v, task, unit)),
            checkpoint_answer,
            poison,
        )
    }
    fn complete(&mut self, view: &EngineView, task: TaskId, unit: UnitId) {
        if self.defined.complete {
            self.call(
                view,
                "complete",
                |py, v| tuple(py, (v, task, unit)),
                |_| Ok(()),
                (),
            );
        }
    }
    fn tick_interval(&self) -> Option<u64> {
        self.tick_interval
    }
    fn tick(&mut self, view: &EngineView, s: &[Sample]) -> Vec<TickAction> {
        let poison = vec![TickAction::Migrate {
            task: NO_TASK,
            to: NO_UNIT,
        }];
        if self.error.borrow().is_some() {
            return poison;
        }
        if !self.defined.tick {
            return Vec::new();
        }
        self.call(
            view,
            "tick",
            |py, v| tuple(py, (v, samples(py, s)?)),
            tick_answer,
            poison,
        )
    }
    fn wants_samples(&self) -> bool {
        self.wants_samples
    }
}
