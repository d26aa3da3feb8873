//! A graph's tasks as the simulator runs them: each task's meta info (its kernel as its
//! type, its footprint, an implementation on every unit type a performance model times
//! it on) and its workload, timed by the performance models (StarPU's calibrations,
//! `hetsched_topology::starpu`, or a run's own).
//!
//! A task's duration on a unit type is its model's mean for (kernel, type, footprint),
//! or a draw from a normal of the model's mean and deviation (redrawn while not
//! positive, the mean after 16 tries), seeded per task so that one task takes the same
//! time under every policy. A time of 0 counts as a nanosecond. A unit type no model times the task on has no
//! implementation of it (StarPU's `can_execute`); a task no unit type of the machine
//! can run is an input error before the run.
//!
//! A graph whose input measured each task's time (a WfFormat workflow's runtimes,
//! [`GraphTasks::with_cpu_times`]) takes that time on a CPU instead of its model's.
//!
//! The models are looked up at capacity 1024 (what StarPU's imported units have), else
//! at the capacity with the most samples; a CPU of another capacity scales the CPU time
//! as the speed model scales any work (`1024 / c`).

use crate::task::{SimTask, Workload};
use hetsched_core::graph::TaskGraph;
use hetsched_core::machine::{Machine, UnitType, CAPACITY_SCALE};
use hetsched_core::perf_model::{Arch, History, PerfModels};
use hetsched_core::task::{Affinity, PerUnitType, Task, TaskClass};
use hetsched_core::{Error, Result};
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// The shortest duration: a time of 0 (a model's or a measured one) counts as a
/// nanosecond, so that speeds between unit types stay finite and above 0.
const MIN_TIME_S: f64 = 1e-9;

/// How a task's duration comes from its model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Durations {
    /// The model's mean.
    Mean,
    /// A normal draw of the model's mean and deviation, seeded per task from this seed.
    Normal { seed: u64 },
}

/// What the tasks of one kernel, footprint and priority share.
#[derive(Debug)]
struct Class {
    meta: Arc<TaskClass>,
    /// Mean and deviation of a run on each unit type, seconds (`None`: no model).
    times: PerUnitType<Option<(f64, f64)>>,
}

/// A task graph with its tasks' models (see the module documentation).
#[derive(Debug)]
pub struct GraphTasks {
    graph: Arc<TaskGraph>,
    class_of: Vec<u32>,
    classes: Vec<Class>,
    durations: Durations,
    /// Each task's measured CPU time, seconds, where the input gives it (a workflow's
    /// runtimes): it replaces the model's on CPUs.
    measured: Option<Vec<f64>>,
}

/// The model of `kernel` on `kind` for `footprint`: at capacity 1024, else the one of
/// most samples.
fn history<'m>(
    models: &'m PerfModels,
    kernel: &str,
    kind: UnitType,
    footprint: u64,
) -> Option<&'m History> {
    let arch = Arch {
        unit_type: kind,
        capacity: CAPACITY_SCALE,
        footprint,
    };
    models.get(kernel, &arch).or_else(|| {
        models
            .iter()
            .filter(|(k, a, _)| *k == kernel && a.unit_type == kind && a.footprint == footprint)
            .map(|(_, _, h)| h)
            .max_by_key(|h| h.samples())
    })
}

/// `models` with each CPU model of capacity 1024 carried to the machine's other CPU
/// capacities where they have none, its times scaled by `1024 / capacity` as the speed
/// model scales a CPU's work: what a policy that looks models up by unit class needs
/// on a machine of fast and slow CPUs, from a graph timed on one kind of CPU.
pub fn models_for(machine: &Machine, models: &PerfModels) -> PerfModels {
    let mut capacities: Vec<u32> = machine
        .units
        .iter()
        .filter(|u| u.kind == UnitType::Cpu && u.capacity != CAPACITY_SCALE && u.capacity > 0)
        .map(|u| u.capacity)
        .collect();
    capacities.sort_unstable();
    capacities.dedup();
    let mut out = models.clone();
    for (kernel, arch, history) in models.iter() {
        if arch.unit_type != UnitType::Cpu || arch.capacity != CAPACITY_SCALE {
            continue;
        }
        for &c in &capacities {
            let there = Arch {
                capacity: c,
                ..*arch
            };
            if models.get(kernel, &there).is_none() {
                let factor = f64::from(CAPACITY_SCALE) / f64::from(c);
                out.pool(kernel, there, &history.scaled(factor));
            }
        }
    }
    out
}

impl GraphTasks {
    /// `graph`'s tasks on `machine`, timed by `models` (see the module documentation).
    pub fn new(
        graph: Arc<TaskGraph>,
        machine: &Machine,
        models: &PerfModels,
        durations: Durations,
    ) -> Result<GraphTasks> {
        graph.check()?;
        let mut kinds: Vec<UnitType> = machine.units.iter().map(|u| u.kind).collect();
        kinds.sort_unstable();
        kinds.dedup();
        let mut index: FxHashMap<(Arc<str>, u64, i32), u32> = FxHashMap::default();
        let mut classes = Vec::new();
        let mut class_of = Vec::with_capacity(graph.tasks.len());
        for (t, task) in graph.tasks.iter().enumerate() {
            let key = (task.kernel.clone(), task.footprint, task.priority);
            if let Some(&c) = index.get(&key) {
                class_of.push(c);
                continue;
            }
            let mut times = PerUnitType::<Option<(f64, f64)>>::default();
            for &kind in &kinds {
                let h = history(models, &task.kernel, kind, task.footprint)
                    .filter(|h| h.samples() > 0 && h.mean().is_finite() && h.dev().is_finite());
                times.set(kind, h.map(|h| (h.mean(), h.dev().max(0.0))));
            }
            let fastest = kinds
                .iter()
                .filter_map(|&k| times.get(k))
                .map(|(mean, _)| mean)
                .fold(f64::INFINITY, f64::min);
            if !fastest.is_finite() {
                return Err(Error::input(format!(
                    "task {t} of the graph ({}, footprint {:08x}) has no performance model for any unit type of machine {} ({}): a model names the kernel, the unit type and the footprint",
                    task.kernel,
                    task.footprint,
                    machine.name,
                    kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
                )));
            }
            // Affinity: an implementation where a model times it, preferred by speed.
            let mut affinity = Affinity::default();
            for &kind in &kinds {
                if let Some((mean, _)) = times.get(kind) {
                    affinity.set(kind, fastest.max(MIN_TIME_S) / mean.max(MIN_TIME_S));
                }
            }
            let meta = Arc::new(TaskClass {
                kind: task.kernel.clone(),
                affinity,
                footprint: task.footprint,
                priority: task.priority,
                ..TaskClass::cpu()
            });
            let c = classes.len() as u32;
            classes.push(Class { meta, times });
            index.insert(key, c);
            class_of.push(c);
        }
        Ok(GraphTasks {
            graph,
            class_of,
            classes,
            durations,
            measured: None,
        })
    }

    /// Each task's CPU time is `seconds[i]` (measured: a workflow's runtimes), not its
    /// model's; the models still say where it can run and are what policies read.
    pub fn with_cpu_times(mut self, seconds: Vec<f64>) -> Result<GraphTasks> {
        if seconds.len() != self.graph.tasks.len() {
            return Err(Error::input(format!(
                "{} CPU times for a graph of {} tasks",
                seconds.len(),
                self.graph.tasks.len()
            )));
        }
        if let Some((i, s)) = seconds
            .iter()
            .enumerate()
            .find(|(_, s)| !(s.is_finite() && **s >= 0.0))
        {
            return Err(Error::input(format!(
                "task {i}: a CPU time of {s} s, expected a finite number ≥ 0"
            )));
        }
        self.measured = Some(seconds);
        Ok(self)
    }

    pub fn graph(&self) -> &Arc<TaskGraph> {
        &self.graph
    }

    /// The duration of graph task `index` on each unit type where it runs, seconds (on
    /// a CPU, one of capacity 1024): what it takes in a run.
    pub fn times(&self, index: usize) -> PerUnitType<Option<f64>> {
        let class = &self.classes[self.class_of[index] as usize];
        let mut out = PerUnitType::default();
        let mut rng = match self.durations {
            Durations::Mean => None,
            Durations::Normal { seed } => Some(rand_chacha::ChaCha8Rng::seed_from_u64(
                seed ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            )),
        };
        for kind in UnitType::ALL {
            let t = class.times.get(kind).map(|(mean, dev)| match &mut rng {
                Some(rng) if dev > 0.0 => match Normal::new(mean, dev) {
                    Ok(normal) => (0..16)
                        .map(|_| normal.sample(rng))
                        .find(|&d| d > 0.0 && d.is_finite())
                        .unwrap_or(mean),
                    Err(_) => mean,
                },
                _ => mean,
            });
            out.set(kind, t);
        }
        if let (Some(m), Some(_)) = (&self.measured, out.get(UnitType::Cpu)) {
            out.set(UnitType::Cpu, Some(m[index]));
        }
        out
    }

    /// Graph task `index` (its id), arriving at `now_ns`: its meta info and workload.
    pub fn task(&self, index: u32, now_ns: u64) -> SimTask {
        let i = index as usize;
        let class = &self.classes[self.class_of[i] as usize];
        let times = self.times(i);
        // The work is the CPU time (the speed model's reference); without one, the
        // fastest time, which the other types' speeds are relative to.
        let work_s = times
            .get(UnitType::Cpu)
            .unwrap_or_else(|| {
                UnitType::ALL
                    .iter()
                    .filter_map(|&k| times.get(k))
                    .fold(f64::INFINITY, f64::min)
            })
            .max(MIN_TIME_S);
        let mut speed = PerUnitType::<f64>::default();
        for kind in UnitType::ALL {
            if let (true, Some(t)) = (kind != UnitType::Cpu, times.get(kind)) {
                speed.set(kind, work_s / t.max(MIN_TIME_S));
            }
        }
        SimTask {
            meta: Task::new(u64::from(index), now_ns, class.meta.clone()),
            model: Workload {
                work_s,
                speed,
                ..Workload::default()
            },
        }
    }
}
