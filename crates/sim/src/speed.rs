//! The speed model: how long a task's work takes on a unit.
//!
//! - CPU unit of capacity `c`, task memory-bound fraction `m`, NUMA distance `d` between
//!   the unit's node and the task's home (10 = local):
//!   `duration = work × (1 − m) × 1024 / c + work × m × d / 10`.
//!   The core-bound part scales with capacity, the memory-bound part does not, and remote
//!   memory slows it by the distance ratio. Memory-bandwidth sharing between concurrent
//!   tasks is not modelled yet.
//! - Accelerator unit of capacity `c` (its `relative_speed × 1024`): the task runs at
//!   `rate = speed[type]` when the task gives an explicit speed, else
//!   `rate = affinity[type] / affinity[cpu] × c / 1024` (with `affinity[cpu] = 0`,
//!   i.e. no CPU implementation, the affinity itself is the speed-up), and
//!   `duration = work / rate`. Every run segment on an accelerator copies `bytes_in`
//!   first and the last one copies `bytes_out` back: `bytes / link bandwidth + latency`
//!   (no copy cost when the machine does not give the link).

use hetsched_core::machine::{Machine, UnitType, CAPACITY_SCALE};
use hetsched_core::task::Task;

/// What the speed model needs of a unit, precomputed.
#[derive(Clone, Debug)]
pub struct UnitSpeed {
    pub kind: UnitType,
    pub capacity: f64,
    pub numa_node: Option<u32>,
    pub link_bytes_per_s: Option<f64>,
    pub link_latency_ns: f64,
}

#[derive(Clone, Debug)]
pub struct SpeedModel {
    pub units: Vec<UnitSpeed>,
    distances: Option<hetsched_core::machine::Distances>,
}

impl SpeedModel {
    pub fn new(machine: &Machine) -> SpeedModel {
        let units = machine
            .units
            .iter()
            .map(|u| {
                let acc = u
                    .accelerator
                    .and_then(|i| machine.accelerators.get(i as usize));
                UnitSpeed {
                    kind: u.kind,
                    capacity: u.capacity.max(1) as f64,
                    numa_node: u.numa_node,
                    link_bytes_per_s: acc.and_then(|a| a.link_bandwidth_bytes_per_s),
                    link_latency_ns: acc.and_then(|a| a.link_latency_s).unwrap_or(0.0) * 1e9,
                }
            })
            .collect();
        SpeedModel {
            units,
            distances: machine.distances.clone(),
        }
    }

    /// Nanoseconds of `unit` time per reference second of the task's work (infinite when
    /// the task has no implementation for the unit's type).
    pub fn ns_per_work_s(&self, task: &Task, unit: u32) -> f64 {
        let u = &self.units[unit as usize];
        if !task.affinity.runs_on(u.kind) {
            return f64::INFINITY;
        }
        let scale = CAPACITY_SCALE as f64;
        if u.kind == UnitType::Cpu {
            let m = task.memory_bound;
            let numa = match (&self.distances, u.numa_node, task.numa_home) {
                (Some(d), Some(from), Some(to)) => d.between(from, to).unwrap_or(10) as f64 / 10.0,
                _ => 1.0,
            };
            1e9 * ((1.0 - m) * scale / u.capacity + m * numa)
        } else {
            let explicit = task.speed.get(u.kind);
            let rate = if explicit > 0.0 {
                explicit
            } else {
                let cpu = task.affinity.get(UnitType::Cpu);
                let base = if cpu > 0.0 { cpu } else { 1.0 };
                task.affinity.get(u.kind) / base * u.capacity / scale
            };
            1e9 / rate
        }
    }

    fn copy_ns(&self, bytes: u64, unit: u32) -> u64 {
        let u = &self.units[unit as usize];
        match u.link_bytes_per_s {
            Some(bw) if u.kind != UnitType::Cpu && bw > 0.0 => {
                (bytes as f64 / bw * 1e9 + u.link_latency_ns).ceil() as u64
            }
            _ => 0,
        }
    }

    /// Copy time before a run segment on `unit`.
    pub fn copy_in_ns(&self, task: &Task, unit: u32) -> u64 {
        self.copy_ns(task.bytes_in, unit)
    }

    /// Copy time after the last segment on `unit`.
    pub fn copy_out_ns(&self, task: &Task, unit: u32) -> u64 {
        self.copy_ns(task.bytes_out, unit)
    }

    /// Unit nanoseconds for `work_ns` reference nanoseconds at `factor` unit ns per
    /// reference ns.
    pub fn compute_ns(work_ns: u64, factor: f64) -> u64 {
        (work_ns as f64 * factor).ceil().max(0.0) as u64
    }

    /// The task's time alone on the best unit for it (copies included).
    pub fn ideal_ns(&self, task: &Task) -> Option<u64> {
        (0..self.units.len() as u32)
            .filter(|&u| task.affinity.runs_on(self.units[u as usize].kind))
            .map(|u| {
                self.copy_in_ns(task, u)
                    + Self::compute_ns(task.work_ns(), self.ns_per_work_s(task, u) * 1e-9)
                    + self.copy_out_ns(task, u)
            })
            .min()
    }
}
