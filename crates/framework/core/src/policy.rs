//! The policy contract: what every engine (simulator or live runtime) calls, in the
//! same situations, and what a policy answers.
//!
//! A policy never owns time or queues. The engine owns per-unit queues plus one central
//! queue; a policy decides where a submitted task waits (`submit`), what an idle unit
//! runs (`pick`), whether a running task keeps its unit at a checkpoint or CPU time-slice
//! end (`checkpoint`), and, periodically, which tasks move (`tick`). It reads a [`View`]
//! of the engine's state and must not assume anything else.
//!
//! When the engine calls what:
//! - `submit` once per arriving task;
//! - `pick(u)` whenever unit `u` is idle and may have work: when it becomes free, when a
//!   task is enqueued on it, and (idle balancing) when a task is enqueued anywhere it
//!   could run, idle units being asked in id order until that task has started;
//! - `checkpoint` on a CPU when the policy's `time_slice` ends, on an accelerator when
//!   the task's checkpoint interval for that unit type ends (each costs the engine's
//!   checkpoint cost); never when the task finishes first;
//! - `complete` once per finished task, after its unit became free and before the unit's
//!   next `pick`;
//! - `tick` at the multiples of `tick_interval` while tasks are live (and once after the
//!   last one ended), with counter samples (none for a policy whose `wants_samples` is
//!   false).
//!
//! Both engines make these calls through one engine core (`engine_core.rs`), which also
//! checks every answer: an answer that breaks the contract stops a simulation and is
//! refused (logged, without effect) by the live daemon. A policy sees a task's meta info
//! ([`Task`]) and the run times the engine reported ([`TaskEntry`]), never the
//! simulator's workload model.
//!
//! Units are never removed from the view and their ids never change, but a live engine
//! may add units (the daemon's control API): a policy must accept unit ids above those
//! it has seen before.

use crate::machine::{Machine, Unit, UnitType};
use crate::task::{QueueId, Task, TaskEntry, TaskId};
use crate::task_store::TaskStore;
use std::collections::VecDeque;

pub type UnitId = u32;

#[derive(Clone, Debug, PartialEq)]
pub enum SubmitDecision {
    /// Put the task at the tail of this queue.
    Enqueue(QueueId),
    /// Refuse the task (no unit can run it, admission control...).
    Reject(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PickDecision {
    /// Run a task from this unit's own queue or from the central queue.
    Run(TaskId),
    /// Run a task taken from another unit's queue.
    Steal { from: UnitId, task: TaskId },
    /// Stay idle until something changes.
    Idle,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointDecision {
    /// Keep running on this unit.
    Continue,
    /// Go back to the tail of this unit's queue (the unit then picks again).
    Yield,
    /// Move to the tail of another unit's queue.
    Migrate(UnitId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TickAction {
    /// Move a queued task (or a task running on a CPU, which is preempted) to the tail
    /// of `to`'s queue. Tasks running on accelerators move only at checkpoints.
    Migrate { task: TaskId, to: UnitId },
}

/// One counter sample per unit since the previous tick.
///
/// Both engines' ticks take their samples from the engine core
/// (`engine_core::EngineCore::tick`), which fills the first four fields from what the
/// engine itself knows — the simulator from its model, the live arbiter from the times
/// it granted units — and no measurement source (`sources` empty). The live
/// runtime's sampler (`hetsched_live::sampler`) measures a running task's process and
/// fills the optional fields (the simulator fills the three counters from a task's
/// workload model, when it has them); a measurement no source on this machine provides is
/// `None`, never a zero that looks measured, and `sources` says which sources filled
/// the sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sample {
    pub unit: UnitId,
    /// The task running at sample time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
    /// Nanoseconds the unit was busy since the previous sample. From the engine core:
    /// the time a task held the unit — in the simulator its modelled run time, in the
    /// live arbiter the daemon's view of its grants (from grant to release), not CPU time
    /// measured. From the sampler (source `proc`): the CPU time, user plus system, of
    /// the task's process and all its threads.
    pub busy_ns: u64,
    /// The span `busy_ns` and the counts below cover, in nanoseconds: in the engine's
    /// own samples the time since the previous sampled tick; a measured sample covers
    /// the sampler's latest pass over the process, which follows the tick interval
    /// where it can but may be longer or older (`hetsched_live::sampler`). A busy
    /// fraction is `busy_ns / interval_ns` (more than 1 for a process of several
    /// threads).
    #[serde(default)]
    pub interval_ns: u64,
    /// Estimated memory-bound fraction of the running task: the task's model value in
    /// the simulator; `None` live, where the sampler reports the raw counters below
    /// instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bound: Option<f64>,
    /// Nanoseconds the task's threads waited on a run queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_delay_ns: Option<u64>,
    /// Times the task's threads were switched onto a CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_switches: Option<u64>,
    /// The CPU the task ran on most recently (of its busiest thread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// User-space instructions retired (hardware counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<u64>,
    /// User-space CPU cycles (hardware counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles: Option<u64>,
    /// Last-level-cache misses (hardware counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_misses: Option<u64>,
    /// The kernel's capacity of `cpu`, 1024 for its fastest CPUs (source `capacity`:
    /// `cpu_capacity`, which arm64, arm and RISC-V kernels expose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_capacity: Option<u32>,
    /// The ACPI CPPC highest performance of `cpu` (source `capacity`:
    /// `acpi_cppc/highest_perf`; AMD's preferred-core ranking): larger is faster, on an
    /// abstract scale comparable only between the CPUs of one machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_highest_perf: Option<u32>,
    pub sources: Sources,
}

/// The measurement sources a [`Sample`] may name, in the order its JSON lists them.
/// Each is one of the live sampler's sources (`hetsched_live::sources::REGISTRY`, which
/// a test holds to this list); the names live here because samples cross the wire and
/// the simulator, where the sources themselves do not.
pub const SOURCE_NAMES: &[&str] = &["perf", "proc", "capacity"];

/// Which measurement sources filled a [`Sample`]; none for the simulator's model: a set
/// of [`SOURCE_NAMES`], one bit each. In JSON, the list of their names: `["perf",
/// "proc"]`, `["proc"]` or `[]`. Read from JSON, a name this build does not know is
/// left out: a daemon with a newer source still answers an older client's `stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(into = "Vec<String>", from = "Vec<String>")]
pub struct Sources(u32);

impl Sources {
    /// The set of `names`; an error for a name not in [`SOURCE_NAMES`].
    pub fn of<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Result<Sources, String> {
        let mut s = Sources::default();
        for n in names {
            s.insert(n.as_ref())?;
        }
        Ok(s)
    }

    /// Adds source `name`; an error, listing the known ones, for an unknown name.
    pub fn insert(&mut self, name: &str) -> Result<(), String> {
        let i = SOURCE_NAMES
            .iter()
            .position(|&n| n == name)
            .ok_or_else(|| {
                format!(
                    "unknown sample source {name:?} ({})",
                    SOURCE_NAMES.join(", ")
                )
            })?;
        self.0 |= 1 << i;
        Ok(())
    }

    /// Whether source `name` filled the sample (`false` for a name not in
    /// [`SOURCE_NAMES`]).
    pub fn contains(&self, name: &str) -> bool {
        SOURCE_NAMES
            .iter()
            .position(|&n| n == name)
            .is_some_and(|i| self.0 & (1 << i) != 0)
    }

    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// The names in the set, in [`SOURCE_NAMES`]'s order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        SOURCE_NAMES
            .iter()
            .enumerate()
            .filter(|(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, &n)| n)
    }
}

impl From<Sources> for Vec<String> {
    fn from(s: Sources) -> Vec<String> {
        s.names().map(str::to_string).collect()
    }
}

impl From<Vec<String>> for Sources {
    /// The known names among `names` (see [`Sources`]).
    fn from(names: Vec<String>) -> Sources {
        let mut s = Sources::default();
        for n in names {
            let _ = s.insert(&n);
        }
        s
    }
}

/// What runs on a unit right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Running {
    pub task: TaskId,
    /// When the current segment started (transfers included).
    pub since_ns: u64,
}

/// A queue of waiting tasks as a policy reads it, head first.
///
/// The engine queues a task's store slot (four bytes: a million tasks may wait at once),
/// not its id; this view reads ids and entries from the slots, so a policy that scans a
/// queue for a task it can run reads each entry once ([`entries`](Self::entries), with
/// each task's slot, [`View::slot`]), where going by id would look each one up again.
#[derive(Clone, Copy)]
pub struct Queue<'a> {
    slots: &'a VecDeque<u32>,
    tasks: &'a TaskStore,
}

impl<'a> Queue<'a> {
    #[inline]
    pub(crate) fn new(slots: &'a VecDeque<u32>, tasks: &'a TaskStore) -> Queue<'a> {
        Queue { slots, tasks }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The id of the task at the head.
    #[inline]
    pub fn front(&self) -> Option<TaskId> {
        self.get(0)
    }

    /// The id of the `i`-th task from the head.
    #[inline]
    pub fn get(&self, i: usize) -> Option<TaskId> {
        Some(self.entry(i)?.1.task.id)
    }

    /// The slot and entry of the `i`-th task from the head.
    #[inline]
    pub fn entry(&self, i: usize) -> Option<(usize, &'a TaskEntry)> {
        let s = *self.slots.get(i)? as usize;
        Some((s, self.tasks.at_slot(s)))
    }

    /// The tasks' ids, head first.
    #[inline]
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = TaskId> + ExactSizeIterator + 'a {
        self.entries().map(|(_, e)| e.task.id)
    }

    /// The tasks' slots and entries, head first (a task's id is `entry.task.id`).
    #[inline]
    pub fn entries(
        &self,
    ) -> impl DoubleEndedIterator<Item = (usize, &'a TaskEntry)> + ExactSizeIterator + 'a {
        let tasks = self.tasks;
        self.slots
            .iter()
            .map(move |&s| (s as usize, tasks.at_slot(s as usize)))
    }
}

/// The engine state a policy reads, handed by reference to every policy call. The
/// engine core keeps its scheduling state in it (`engine_core::EngineCore`), so that
/// handing it over costs nothing on the engines' hot paths; a policy can only read it.
pub struct View {
    pub(crate) now_ns: u64,
    pub(crate) machine: Machine,
    /// Each unit's queue and the central one, of store slots (see [`Queue`]).
    pub(crate) queues: Vec<VecDeque<u32>>,
    pub(crate) central: VecDeque<u32>,
    pub(crate) running: Vec<Option<Running>>,
    pub(crate) tasks: TaskStore,
    /// Each unit's type, by unit id: 1 KiB for 1,024 units stays in cache, where the
    /// machine's units (about 100 bytes each) are far apart.
    pub(crate) kinds: Vec<UnitType>,
    /// The performance models (see [`Policy::wants_models`]).
    pub(crate) models: crate::perf_model::PerfModels,
    /// The task graph under way, if the run is one ([`View::graph`]).
    pub(crate) graph: Option<Box<crate::dataflow::GraphRun>>,
}

impl View {
    /// The performance models: what the engine observed of each kernel on each unit
    /// class, from earlier runs kept in a file and from this run, for a policy that
    /// wants them ([`Policy::wants_models`]); empty otherwise.
    #[inline]
    pub fn models(&self) -> &crate::perf_model::PerfModels {
        &self.models
    }

    /// The task graph under way, when the run is one: its tasks (the task of id `i` is
    /// its task `i`), dependencies and data, and where each handle has a valid copy.
    /// `None` for independent tasks.
    #[inline]
    pub fn graph(&self) -> Option<&crate::dataflow::GraphRun> {
        self.graph.as_deref()
    }

    /// The time the copies `task` lacks on `unit` would take if issued now on idle links,
    /// seconds (StarPU's `starpu_task_expected_data_transfer_time`): 0 outside a graph.
    #[inline]
    pub fn transfer_estimate_s(&self, task: TaskId, unit: UnitId) -> f64 {
        self.graph.as_deref().map_or(0.0, |g| {
            g.transfer_estimate_ns(task, unit, self.now_ns) as f64 * 1e-9
        })
    }

    /// Current time in nanoseconds since the start of the run.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }
    #[inline]
    pub fn machine(&self) -> &Machine {
        &self.machine
    }
    #[inline]
    pub fn units(&self) -> &[Unit] {
        &self.machine.units
    }
    #[inline]
    pub fn unit(&self, id: UnitId) -> &Unit {
        &self.machine.units[id as usize]
    }
    /// A unit's type: `unit(id).kind` from a compact copy, which stays in cache (what
    /// a policy asks on every pick).
    #[inline]
    pub fn unit_kind(&self, id: UnitId) -> UnitType {
        self.kinds[id as usize]
    }
    /// Tasks waiting in a unit's queue, head first.
    #[inline]
    pub fn queue(&self, unit: UnitId) -> Queue<'_> {
        Queue::new(&self.queues[unit as usize], &self.tasks)
    }
    /// Tasks waiting in the central queue, head first.
    #[inline]
    pub fn central(&self) -> Queue<'_> {
        Queue::new(&self.central, &self.tasks)
    }
    #[inline]
    pub fn running(&self, unit: UnitId) -> Option<Running> {
        self.running[unit as usize]
    }
    /// Queued plus running tasks of a unit.
    #[inline]
    pub fn load(&self, unit: UnitId) -> usize {
        self.queues[unit as usize].len() + self.running[unit as usize].is_some() as usize
    }
    /// A live task (submitted and not yet finished).
    #[inline]
    pub fn task(&self, id: TaskId) -> &Task {
        &self.tasks[&id].task
    }
    /// A live task's slot in the engine's task store: unique among live tasks, reused
    /// once the task ends, and below the most tasks live at once (plus one). Policies
    /// keep per-task state in a `Vec` indexed by it, cheaper than a map by id on every
    /// event; the state of an ended task's slot is stale until the next submit there.
    #[inline]
    pub fn slot(&self, id: TaskId) -> usize {
        self.tasks
            .slot_of(&id)
            .unwrap_or_else(|| panic!("task {id} is not live"))
    }
    #[inline]
    pub fn entry(&self, id: TaskId) -> Option<&TaskEntry> {
        self.tasks.get(&id)
    }
    /// Whether `task` has an implementation for `unit`'s type.
    #[inline]
    pub fn can_run(&self, task: TaskId, unit: UnitId) -> bool {
        self.task(task).affinity.runs_on(self.unit_kind(unit))
    }
    /// Units of one type.
    #[inline]
    pub fn units_of(&self, kind: UnitType) -> impl Iterator<Item = &Unit> + '_ {
        self.machine.units.iter().filter(move |u| u.kind == kind)
    }
}

/// A scheduling policy. See the module documentation for when each method is called.
pub trait Policy {
    /// The policy's registry name with its parameters, e.g. `cfs:latency_ms=6`.
    fn name(&self) -> &str;
    fn submit(&mut self, view: &View, task: TaskId) -> SubmitDecision;
    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision;
    /// CPU time slice for the task about to run on `unit` (`None`: run until done or
    /// until a checkpoint). Ignored on accelerators, which stop only at checkpoints.
    fn time_slice(&mut self, _view: &View, _unit: UnitId, _task: TaskId) -> Option<u64> {
        None
    }
    fn checkpoint(&mut self, _view: &View, _task: TaskId, _unit: UnitId) -> CheckpointDecision {
        CheckpointDecision::Continue
    }
    fn complete(&mut self, _view: &View, _task: TaskId, _unit: UnitId) {}
    /// Period of `tick` in ns (`None`: never).
    fn tick_interval(&self) -> Option<u64> {
        None
    }
    fn tick(&mut self, _view: &View, _samples: &[Sample]) -> Vec<TickAction> {
        Vec::new()
    }
    /// `task` is starting on CPU `unit`, and its memory (`numa_home`) is on another
    /// NUMA node: whether its pages migrate with it (the default: no). The simulator
    /// then moves the task's home to the unit's node and charges the copy; a live
    /// engine may move the process's pages. Called only where the machine has more
    /// than one NUMA node and the task has a home.
    fn migrate_memory(&mut self, _view: &View, _task: TaskId, _unit: UnitId) -> bool {
        false
    }
    /// Whether `tick` reads its samples. Building them is a pass over every unit per
    /// tick; a policy that balances by its own counts says `false` and gets none.
    fn wants_samples(&self) -> bool {
        true
    }
    /// Whether it reads the performance models ([`View::models`]): only then does the
    /// engine record each completed run into them (a policy that never reads them costs
    /// nothing), and only then are they kept across runs.
    fn wants_models(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_serialize_as_their_names_in_registry_order() {
        let s = Sources::of(["proc", "perf"]).unwrap();
        assert_eq!(serde_json::to_string(&s).unwrap(), r#"["perf","proc"]"#);
        assert_eq!(serde_json::to_string(&Sources::default()).unwrap(), "[]");
        let back: Sources = serde_json::from_str(r#"["proc"]"#).unwrap();
        assert!(back.contains("proc") && !back.contains("perf"));
        assert!(!back.contains("no such source"));
        for name in SOURCE_NAMES {
            let one = Sources::of([name]).unwrap();
            assert_eq!(one.names().collect::<Vec<_>>(), [*name]);
        }
    }

    #[test]
    fn an_unknown_source_is_refused_naming_the_known_ones_but_read_past_in_json() {
        let e = Sources::of(["proc", "pmu"]).unwrap_err();
        assert_eq!(e, r#"unknown sample source "pmu" (perf, proc, capacity)"#);
        // A newer daemon's sample, read by this client: the sources it knows.
        let s: Sources = serde_json::from_str(r#"["proc","hfi"]"#).unwrap();
        assert_eq!(s, Sources::of(["proc"]).unwrap());
    }
}
