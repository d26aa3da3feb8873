//! The speed model: how long a task's work takes on a unit.
//!
//! - CPU unit of capacity `c`, task memory-bound fraction `m`, NUMA distance `d` between
//!   the unit's node and the task's home (10 = local):
//!   `duration = work × (1 − m) × 1024 / c + work × m × d / 10`.
//!   The core-bound part scales with capacity, the memory-bound part does not, and remote
//!   memory slows it by the distance ratio.
//! - A task with a clock-speed elasticity `E` (Shelepov & Fedorova's time model) takes
//!   `duration = work × (c / 1024)^E` on a CPU instead: capacity stands for frequency.
//! - Memory bandwidth is shared: a task with `mem_bandwidth = D` draws `D` bytes/s from
//!   the NUMA node holding its memory (its home, else its unit's node) while it runs on
//!   a CPU. When the running tasks' draws on a node of bandwidth `B` add up to more than
//!   `B`, every one of them has its memory-bound part stretched by `σ = ΣD / B`:
//!   `duration = work × (1 − m) × 1024 / c + work × m × d / 10 × σ`. The engine
//!   re-plans the running tasks of a node whenever a task starts or stops there (nodes
//!   without a known bandwidth are never shared).
//! - A task with an I/O device and an I/O-bound fraction `o` (`Workload::io_bound`):
//!   that part neither scales with capacity nor shares node bandwidth, it is stretched
//!   by the I/O model's factor `f`: its device's lone local rate over the rate of its
//!   stream (thread and buffer on the unit's node) among the I/O tasks running now
//!   (`crate::io::IoStreams`; 1 for a lone stream on the device's node):
//!   `duration = work × (1 − m − o) × 1024 / c + work × m × d / 10 × σ + work × o × f`.
//!   Two I/O tasks on one device share its bandwidth, remote ones share the link; the
//!   engine re-plans the running I/O tasks whenever one starts or stops.
//! - Accelerator unit of capacity `c` (its `relative_speed × 1024`): the task runs at
//!   `rate = speed[type]` when the task gives an explicit speed, else
//!   `rate = affinity[type] / affinity[cpu] × c / 1024` (with `affinity[cpu] = 0`,
//!   i.e. no CPU implementation, the affinity itself is the speed-up), and
//!   `duration = work / rate`. Every run segment on an accelerator copies `bytes_in`
//!   first and the last one copies `bytes_out` back: `bytes / link bandwidth + latency`
//!   (no copy cost when the machine does not give the link).

use crate::task::{SimTask, Workload};
use hetsched_core::machine::{Machine, UnitType, CAPACITY_SCALE};
use hetsched_core::ns::ceil_u64;
use hetsched_core::task::{Task, TaskClass};
use std::sync::Arc;

/// What the speed model needs of a unit, precomputed.
#[derive(Clone, Debug)]
pub struct UnitSpeed {
    pub kind: UnitType,
    pub capacity: f64,
    pub numa_node: Option<u32>,
    pub link_bytes_per_s: Option<f64>,
    pub link_latency_ns: f64,
    /// Set-up before each run segment on the unit (`Accelerator::setup_s`), ns.
    pub setup_ns: u64,
}

#[derive(Clone, Debug)]
pub struct SpeedModel {
    pub units: Vec<UnitSpeed>,
    /// `numa[from][to]`: distance ratio (distance / 10) by NUMA node OS index.
    numa: Vec<Vec<f64>>,
    /// One unit per distinct (type, capacity, NUMA node, link): where `ideal_ns` looks
    /// for tasks with a NUMA home; `flat_classes` ignores the node (tasks without one).
    classes: Vec<u32>,
    flat_classes: Vec<u32>,
    /// Each unit's index in `classes` and in `flat_classes`.
    class_of: Vec<(u32, u32)>,
    /// `io[device][node]`: the I/O model's remote factor (see the module doc).
    io: Vec<Vec<f64>>,
    /// The terms of `ideal_ns` for the latest kind of task asked about.
    ideal: Option<IdealTerms>,
}

/// What [`SpeedModel::ideal_ns`] needs of a kind of task but its work: for each unit
/// class that runs it, its copy-in time, unit ns per reference ns and copy-out time.
/// Why: they cost about 190 instructions a task, 8 % of an fcfs task's simulation
/// (with them kept, about 150, most of it comparing the model's thirteen fields and
/// copying it; with the model named by a key, a few); tasks come from a few templates,
/// mostly in runs, so those of the latest kind are kept. The kind is its class (held,
/// so that its pointer stays its own), NUMA home and the key of its model's
/// parameters.
///
/// Its unit ns per reference ns on every unit class (infinite where it does not run)
/// serve each segment of a task of this kind alone on its unit too ([`SpeedModel::
/// factor_alone`]): tasks mostly start soon after they arrive, before another kind
/// does, and this saves a segment the model's branches and its division.
#[derive(Clone, Debug)]
struct IdealTerms {
    class: Arc<TaskClass>,
    numa_home: Option<u32>,
    params_key: u64,
    units: Vec<(u64, f64, u64)>,
    /// Whether the classes are `classes` (with the node), else `flat_classes`.
    with_node: bool,
    factors: Vec<f64>,
}

impl IdealTerms {
    /// Whether `task` under the parameters named `params_key` is of this kind.
    #[inline]
    fn is_of(&self, task: &Task, params_key: u64) -> bool {
        Arc::ptr_eq(&self.class, &task.class)
            && self.numa_home == task.numa_home()
            && self.params_key == params_key
    }
}

impl SpeedModel {
    pub fn new(machine: &Machine) -> SpeedModel {
        let units: Vec<UnitSpeed> = machine
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
                    setup_ns: ceil_u64(acc.and_then(|a| a.setup_s).unwrap_or(0.0).max(0.0) * 1e9),
                }
            })
            .collect();
        let mut numa = Vec::new();
        if let Some(d) = &machine.distances {
            let n = d.nodes.iter().copied().max().map_or(0, |m| m as usize + 1);
            numa = vec![vec![1.0; n]; n];
            for (i, &a) in d.nodes.iter().enumerate() {
                for (j, &b) in d.nodes.iter().enumerate() {
                    numa[a as usize][b as usize] = d.matrix[i][j] as f64 / 10.0;
                }
            }
        }
        // The first unit of each (type, capacity, (node,) link), and each unit's index
        // among them.
        let classes_of = |with_node: bool| {
            let mut classes: Vec<u32> = Vec::new();
            let mut index = std::collections::HashMap::new();
            let of_unit: Vec<u32> = (units.iter().enumerate())
                .map(|(i, u)| {
                    let link = u.link_bytes_per_s.map(f64::to_bits);
                    let node = u.numa_node.filter(|_| with_node);
                    let latency = u.link_latency_ns.to_bits();
                    let key = (u.kind, u.capacity.to_bits(), node, link, latency);
                    *index.entry(key).or_insert_with(|| {
                        classes.push(i as u32);
                        classes.len() as u32 - 1
                    })
                })
                .collect();
            (classes, of_unit)
        };
        let ((classes, of_unit), (flat_classes, of_unit_flat)) =
            (classes_of(true), classes_of(false));
        let class_of = of_unit.into_iter().zip(of_unit_flat).collect();
        let io = crate::io::IoModel::new(machine, Default::default());
        let nodes = machine.numa_nodes.iter().map(|n| n.os_index + 1).max();
        let io = (0..machine.io_devices.len())
            .map(|d| {
                (0..nodes.unwrap_or(0))
                    .map(|n| io.remote_factor(d, n))
                    .collect()
            })
            .collect();
        SpeedModel {
            units,
            numa,
            classes,
            flat_classes,
            class_of,
            io,
            ideal: None,
        }
    }

    /// Nanoseconds of `unit` time per reference second of the task's work (infinite when
    /// the task has no implementation for the unit's type).
    pub fn ns_per_work_s(&self, task: &SimTask, unit: u32) -> f64 {
        self.ns_per_work_s_shared(task, &task.model, unit, 1.0, None)
    }

    /// As [`Self::ns_per_work_s`], with the memory-bound part stretched by `sigma` (≥ 1)
    /// for bandwidth shared with other tasks, and the I/O part by `io` when the task's
    /// stream shares devices and links (`None`: its factor alone on the unit).
    #[inline]
    pub fn ns_per_work_s_shared(
        &self,
        task: &Task,
        model: &Workload,
        unit: u32,
        sigma: f64,
        io: Option<f64>,
    ) -> f64 {
        let u = &self.units[unit as usize];
        if !task.affinity.runs_on(u.kind) {
            return f64::INFINITY;
        }
        let scale = CAPACITY_SCALE as f64;
        if u.kind == UnitType::Cpu {
            if let Some(e) = model.elasticity {
                return 1e9 * (u.capacity / scale).powf(e);
            }
            let m = model.memory_bound;
            let numa = match (u.numa_node, task.numa_home()) {
                (Some(from), Some(to)) => self
                    .numa
                    .get(from as usize)
                    .and_then(|row| row.get(to as usize))
                    .copied()
                    .unwrap_or(1.0),
                _ => 1.0,
            };
            let o = model.io_bound;
            let io = match (io, task.io_device, u.numa_node) {
                _ if o <= 0.0 => 1.0,
                (Some(shared), _, _) => shared,
                (None, Some(d), Some(n)) => self
                    .io
                    .get(d as usize)
                    .and_then(|row| row.get(n as usize))
                    .copied()
                    .unwrap_or(1.0),
                _ => 1.0,
            };
            1e9 * ((1.0 - m - o).max(0.0) * scale / u.capacity + m * numa * sigma + o * io)
        } else {
            let explicit = model.speed.get(u.kind);
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

    #[inline]
    fn copy_ns(&self, bytes: u64, unit: u32) -> u64 {
        let u = &self.units[unit as usize];
        match u.link_bytes_per_s {
            Some(bw) if u.kind != UnitType::Cpu && bw > 0.0 => {
                ceil_u64(bytes as f64 / bw * 1e9 + u.link_latency_ns)
            }
            _ => 0,
        }
    }

    /// Copy time before a run segment on `unit`.
    #[inline]
    pub fn copy_in_ns(&self, task: &Task, unit: u32) -> u64 {
        self.copy_ns(task.bytes_in, unit)
    }

    /// Copy time after the last segment on `unit`.
    #[inline]
    pub fn copy_out_ns(&self, task: &Task, unit: u32) -> u64 {
        self.copy_ns(task.bytes_out, unit)
    }

    /// Unit ns per reference ns of `task` (model parameters `params`, named by
    /// `params_key` as for [`Self::ideal_ns`]) alone on `unit`: neither memory bandwidth
    /// nor an I/O stream shared, i.e. `ns_per_work_s_shared(task, params, unit, 1.0,
    /// None) * 1e-9`, read from the kept terms when the task is of their kind.
    #[inline]
    pub fn factor_alone(&self, task: &Task, params: &Workload, params_key: u64, unit: u32) -> f64 {
        if let Some(terms) = self.ideal.as_ref().filter(|k| k.is_of(task, params_key)) {
            let (class, flat) = self.class_of[unit as usize];
            return terms.factors[if terms.with_node { class } else { flat } as usize];
        }
        self.ns_per_work_s_shared(task, params, unit, 1.0, None) * 1e-9
    }

    /// Unit nanoseconds for `work_ns` reference nanoseconds at `factor` unit ns per
    /// reference ns.
    #[inline]
    pub fn compute_ns(work_ns: u64, factor: f64) -> u64 {
        ceil_u64(work_ns as f64 * factor)
    }

    /// The task's time alone on the best unit for it (copies included), for `work_ns`
    /// reference nanoseconds of work under the model parameters `params` (their
    /// `work_s` is not read). `params_key` names those parameters: the caller gives
    /// equal keys to equal parameters only (the simulator's shared models do).
    pub fn ideal_ns(
        &mut self,
        task: &Task,
        params: &Workload,
        params_key: u64,
        work_ns: u64,
    ) -> Option<u64> {
        let known = (self.ideal.as_ref()).is_some_and(|k| k.is_of(task, params_key));
        if !known {
            let with_node = task.numa_home().is_some() || task.io_device.is_some();
            let classes = if with_node {
                &self.classes
            } else {
                &self.flat_classes
            };
            let factors: Vec<f64> = (classes.iter())
                .map(|&u| self.ns_per_work_s_shared(task, params, u, 1.0, None) * 1e-9)
                .collect();
            let units = (classes.iter().zip(&factors))
                .filter(|&(&u, _)| task.affinity.runs_on(self.units[u as usize].kind))
                .map(|(&u, &factor)| (self.copy_in_ns(task, u), factor, self.copy_out_ns(task, u)))
                .collect();
            self.ideal = Some(IdealTerms {
                class: Arc::clone(&task.class),
                numa_home: task.numa_home(),
                params_key,
                units,
                with_node,
                factors,
            });
        }
        let terms = self.ideal.as_ref().expect("just set");
        terms
            .units
            .iter()
            .map(|&(copy_in, factor, copy_out)| {
                copy_in + Self::compute_ns(work_ns, factor) + copy_out
            })
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kinds of tasks that alternate (classes, models, homes) get the time a model that
    /// has seen no other task gives them: the kept terms never leak to another kind.
    #[test]
    fn ideal_ns_of_kinds_in_any_order_as_if_alone() {
        // A half-speed CPU (so that a memory-bound task's time differs) and a GPU.
        let text = "name = \"g\"\n[[cpu_kind]]\nname = \"s\"\ncapacity = 512\n\
            [[package]]\ncores = 1\nkind = [\"s\"]\n\
            [[accelerator]]\ntype = \"gpu\"\nname = \"gpu0\"\nlink_bandwidth = \"1 GB/s\"\n";
        let machine = crate::machine_from_toml(text, "g.toml").unwrap();
        let cpu = SimTask::cpu(0, 1.0, 0);
        let mut gpu = SimTask::cpu(1, 2.0, 0);
        gpu.affinity.set(UnitType::Gpu, 8.0);
        gpu.bytes_in = 1 << 20;
        let mut bound = SimTask::cpu(2, 0.5, 0);
        bound.model.memory_bound = 0.5;
        let mut homed = SimTask::cpu(3, 0.5, 0);
        homed.set_numa_home(Some(0));
        let tasks = [&cpu, &gpu, &cpu, &bound, &bound, &gpu, &homed, &cpu];
        let mut model = SpeedModel::new(&machine);
        let mut seen = Vec::new();
        // Keys name equal parameters: all but `bound`'s are the default model's.
        let ideal = |speed: &mut SpeedModel, t: &SimTask| {
            let key = (t.model.memory_bound > 0.0) as u64;
            speed.ideal_ns(t, &t.model, key, t.work_ns())
        };
        for t in tasks {
            let alone = ideal(&mut SpeedModel::new(&machine), t);
            assert!(alone.is_some());
            assert_eq!(ideal(&mut model, t), alone, "task {}", t.id);
            seen.push(alone);
        }
        // 1 s at half speed; 0.5 s half memory-bound: 0.25 × 2 + 0.25 s; the GPU task
        // faster on the GPU (copy included) than its 4 s on the CPU.
        assert_eq!((seen[0], seen[3]), (Some(2_000_000_000), Some(750_000_000)));
        assert!(seen[1].unwrap() < 4_000_000_000);
    }

    /// A segment's factor alone on a unit is the model's, bit for bit, whichever kind
    /// of task the kept terms are of (units of two CPU kinds, two nodes and a GPU).
    #[test]
    fn factor_alone_is_the_models_whatever_the_kept_kind() {
        let text = "name = \"g\"\n[[cpu_kind]]\nname = \"s\"\ncapacity = 512\n\
            [[cpu_kind]]\nname = \"b\"\ncapacity = 1024\n\
            [[package]]\ncores = 2\nkind = [\"s\", \"b\"]\n\
            [[package]]\ncores = 2\nkind = [\"b\", \"s\"]\n\
            [[accelerator]]\ntype = \"gpu\"\nname = \"gpu0\"\nlink_bandwidth = \"1 GB/s\"\n";
        let machine = crate::machine_from_toml(text, "g.toml").unwrap();
        let cpu = SimTask::cpu(0, 1.0, 0);
        let mut gpu = SimTask::cpu(1, 2.0, 0);
        gpu.affinity.set(UnitType::Gpu, 8.0);
        let mut bound = SimTask::cpu(2, 0.5, 0);
        bound.model.memory_bound = 0.5;
        let mut homed = bound.clone();
        homed.set_numa_home(Some(1));
        let tasks = [&cpu, &gpu, &bound, &homed];
        let key = |t: &SimTask| (t.model.memory_bound > 0.0) as u64;
        let mut model = SpeedModel::new(&machine);
        for kept in tasks {
            model.ideal_ns(kept, &kept.model, key(kept), kept.work_ns());
            for t in tasks {
                for u in 0..machine.units.len() as u32 {
                    let direct = model.ns_per_work_s_shared(t, &t.model, u, 1.0, None) * 1e-9;
                    let alone = model.factor_alone(t, &t.model, key(t), u);
                    assert_eq!(alone.to_bits(), direct.to_bits(), "task {} unit {u}", t.id);
                }
            }
        }
    }
}
