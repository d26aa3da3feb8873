//! A task as the simulator runs it: the meta info a policy sees (`hetsched_core::task::Task`)
//! plus the workload model only the simulator knows — how much work the task really is and
//! how it runs on each unit. Live, nobody knows these in advance; keeping them out of the
//! meta info means a policy cannot read them in the simulator either, so it behaves
//! the same in both engines.

use hetsched_core::task::{PerUnitType, Task, TaskId};
use serde::{Deserialize, Serialize};
use std::ops::{Deref, DerefMut};

/// The simulator's model of a task's work (see the speed model).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Work in reference units (seconds on a capacity-1024 CPU).
    pub work_s: f64,
    /// Fraction of the work bound by memory rather than the core, in [0, 1].
    pub memory_bound: f64,
    /// Memory bandwidth in bytes/s the memory-bound part draws when the task runs alone
    /// (0 = not modelled): concurrent tasks on one NUMA node share its bandwidth.
    pub mem_bandwidth: f64,
    /// Explicit speed relative to a capacity-1024 CPU per unit type (0 = derive from the
    /// affinity ratio, see the speed model).
    pub speed: PerUnitType<f64>,
    /// Instructions retired per reference second of work (0 = not modelled: the task's
    /// samples carry no counters). With it, the simulator's samples carry the
    /// instructions, cycles and LLC misses a hardware profiler would read
    /// (`Host::measure` in the engine).
    #[serde(default)]
    pub instructions_per_s: f64,
    /// Last-level-cache misses per 1,000 instructions (with `instructions_per_s`).
    #[serde(default)]
    pub llc_mpki: f64,
    /// Bytes of the task's memory that move with it when a policy migrates its pages to
    /// another NUMA node (0 = free to move).
    #[serde(default)]
    pub memory_bytes: f64,
    /// A task without a NUMA home gets, as Linux's first-touch allocation gives it,
    /// the node of the first CPU it runs on (false: it stays without one).
    #[serde(default)]
    pub first_touch: bool,
    /// Fraction of the work that is the I/O path to the task's `io_device` (transfer,
    /// copy, use of the data), in [0, 1 − memory_bound]: it does not scale with the
    /// CPU's capacity and is slowed away from the device's node (the I/O model).
    #[serde(default)]
    pub io_bound: f64,
    /// Clock-speed elasticity E of the task's completion time (Shelepov & Fedorova): when
    /// given, its time on a CPU of capacity `c` is `work × (c / 1024)^E` (a power law in
    /// frequency), and `memory_bound` is not applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elasticity: Option<f64>,
}

impl Workload {
    /// The work in reference nanoseconds.
    #[inline]
    pub fn work_ns(&self) -> u64 {
        hetsched_core::ns::round_u64(self.work_s * 1e9)
    }

    /// Whether the two models are equal but for their work: as `==` on copies with
    /// `work_s` 0, without the copies (the simulator asks it of every arriving task).
    #[inline]
    pub fn same_params(&self, other: &Workload) -> bool {
        // Destructured, so that a new field cannot be forgotten here.
        let Workload {
            work_s: _,
            memory_bound,
            mem_bandwidth,
            speed,
            instructions_per_s,
            llc_mpki,
            memory_bytes,
            first_touch,
            io_bound,
            elasticity,
        } = self;
        *memory_bound == other.memory_bound
            && *mem_bandwidth == other.mem_bandwidth
            && *speed == other.speed
            && *instructions_per_s == other.instructions_per_s
            && *llc_mpki == other.llc_mpki
            && *memory_bytes == other.memory_bytes
            && *first_touch == other.first_touch
            && *io_bound == other.io_bound
            && *elasticity == other.elasticity
    }
}

/// A task's meta info and its workload model. It dereferences to the meta info.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimTask {
    pub meta: Task,
    pub model: Workload,
}

impl SimTask {
    /// A CPU-only, compute-bound task of `work_s` reference seconds.
    #[inline]
    pub fn cpu(id: TaskId, work_s: f64, arrival_ns: u64) -> SimTask {
        SimTask {
            meta: Task::cpu(id, arrival_ns),
            model: Workload {
                work_s,
                ..Workload::default()
            },
        }
    }

    /// The work in reference nanoseconds.
    #[inline]
    pub fn work_ns(&self) -> u64 {
        self.model.work_ns()
    }
}

impl Deref for SimTask {
    type Target = Task;
    #[inline]
    fn deref(&self) -> &Task {
        &self.meta
    }
}

impl DerefMut for SimTask {
    #[inline]
    fn deref_mut(&mut self) -> &mut Task {
        &mut self.meta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `same_params` is `==` on the models without their work, field by field.
    #[test]
    fn same_params_ignores_the_work_alone() {
        let base = Workload {
            work_s: 1.0,
            ..Workload::default()
        };
        let mut variants = vec![base];
        let mut each = |f: &dyn Fn(&mut Workload)| {
            let mut w = base;
            f(&mut w);
            variants.push(w);
        };
        each(&|w| w.work_s = 2.0);
        each(&|w| w.memory_bound = 0.5);
        each(&|w| w.mem_bandwidth = 1e9);
        each(&|w| w.speed.set(hetsched_core::machine::UnitType::Gpu, 4.0));
        each(&|w| w.instructions_per_s = 1e9);
        each(&|w| w.llc_mpki = 3.0);
        each(&|w| w.memory_bytes = 1e6);
        each(&|w| w.first_touch = true);
        each(&|w| w.io_bound = 0.25);
        each(&|w| w.elasticity = Some(0.5));
        let no_work = |w: &Workload| Workload { work_s: 0.0, ..*w };
        for a in &variants {
            for b in &variants {
                assert_eq!(a.same_params(b), no_work(a) == no_work(b), "{a:?} vs {b:?}");
            }
        }
        // Only the work differs between the first two.
        assert!(variants[0].same_params(&variants[1]));
        assert!(!variants[0].same_params(&variants[2]));
    }
}
