//! Tasks: the unit of work a policy places, with the meta info it may use.
//!
//! Work is given in *reference units*: seconds on one capacity-1024 CPU with local
//! memory. How long a task takes elsewhere is the engine's business (the simulator's
//! speed model, or the clock on a live machine).

use crate::machine::UnitType;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A task's id: unique within one run, assigned in arrival order.
pub type TaskId = u64;

/// One value per [`UnitType`], indexed by `UnitType as usize`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerUnitType<T>(pub [T; 4]);

impl<T: Copy> PerUnitType<T> {
    pub fn get(&self, kind: UnitType) -> T {
        self.0[kind as usize]
    }
    pub fn set(&mut self, kind: UnitType, value: T) {
        self.0[kind as usize] = value;
    }
}

/// Per-unit-type affinity: how well a task's implementation for a unit type performs
/// (Beisel's meta info). 0 = no implementation for that type.
pub type Affinity = PerUnitType<f64>;

impl Affinity {
    /// Whether the task has an implementation for `kind`.
    #[inline]
    pub fn runs_on(&self, kind: UnitType) -> bool {
        self.get(kind) > 0.0
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub id: TaskId,
    /// Task type (codelet) name; performance models learn per type. Shared, not
    /// copied: every record of a task names its type.
    pub kind: Arc<str>,
    pub affinity: Affinity,
    /// Explicit speed relative to a capacity-1024 CPU per unit type (0 = derive from the
    /// affinity ratio, see the simulator's speed model).
    pub speed: PerUnitType<f64>,
    /// Work in reference units (seconds on a capacity-1024 CPU).
    pub work_s: f64,
    /// Bytes copied to an accelerator before a run there / back after completion.
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Fraction of the work bound by memory rather than the core, in [0, 1].
    pub memory_bound: f64,
    /// Memory bandwidth in bytes/s the memory-bound part draws when the task runs alone
    /// (0 = not modelled): concurrent tasks on one NUMA node share its bandwidth.
    pub mem_bandwidth: f64,
    /// NUMA node holding the task's memory, if known.
    pub numa_home: Option<u32>,
    /// CFS-style weight (1024 = nice 0).
    pub weight: u32,
    /// Arrival time in nanoseconds since the start of the run.
    pub arrival_ns: u64,
    /// Checkpoint interval per unit type in ns (0 = none): where an accelerator run may
    /// be interrupted.
    pub checkpoint_ns: PerUnitType<u64>,
}

thread_local! {
    /// The type name of [`Task::cpu`] tasks, shared rather than allocated per task.
    static DEFAULT_KIND: Arc<str> = Arc::from("task");
}

impl Task {
    /// The work in reference nanoseconds.
    #[inline]
    pub fn work_ns(&self) -> u64 {
        crate::ns::round_u64(self.work_s * 1e9)
    }

    /// A CPU-only, compute-bound task of `work_s` reference seconds.
    pub fn cpu(id: TaskId, work_s: f64, arrival_ns: u64) -> Task {
        let mut affinity = Affinity::default();
        affinity.set(UnitType::Cpu, 1.0);
        Task {
            id,
            kind: DEFAULT_KIND.with(Arc::clone),
            affinity,
            speed: PerUnitType::default(),
            work_s,
            bytes_in: 0,
            bytes_out: 0,
            memory_bound: 0.0,
            mem_bandwidth: 0.0,
            numa_home: None,
            weight: 1024,
            arrival_ns,
            checkpoint_ns: PerUnitType::default(),
        }
    }
}

/// Where a task waits: a unit's queue or the engine's one central queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueId {
    Unit(u32),
    Central,
}

/// A task's current situation, kept by the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Placement {
    Queued(QueueId),
    Running(u32),
}

/// What an engine knows about a live (submitted, not finished) task.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskEntry {
    pub task: Task,
    pub placement: Placement,
    /// Reference nanoseconds of work still to do (integer, so that runs are exact). The
    /// simulator keeps a running task's count with its unit and writes it back here when
    /// the task leaves the unit.
    pub remaining_ns: u64,
    /// Number of run segments started so far.
    pub runs: u32,
    /// Nanoseconds spent running (transfers included) so far.
    pub run_ns: u64,
}
