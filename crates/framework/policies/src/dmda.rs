//! `dmda`: StarPU's deque-model data-aware policy, as StarPU 1.3 runs it
//! (`src/sched_policies/deque_modeling_policy_data_aware.c`). Each unit has a queue run
//! in order; a task goes to one when it arrives:
//!
//! - **Calibrated**: every unit that can run it has a calibrated estimate, the mean of
//!   the kernel's runs on that unit's class (type and capacity) in the engine's
//!   performance models ([`View::models`], StarPU's history-based models), once the
//!   class has `calibrate` samples (10 by default, StarPU's `STARPU_CALIBRATE_MINIMUM`).
//!   The task goes to the unit of least fitness `α (end − best end) + β copy`, where
//!   `end` is when the unit is expected free, plus the expected work queued there, plus
//!   the estimate, and `copy` the time to copy the task's bytes to and from it and, in
//!   a task graph, to bring the data it reads that has no valid copy on the unit's
//!   memory node ([`View::transfer_estimate_s`], StarPU's
//!   `starpu_task_expected_data_transfer_time`) (ties: fewer tasks, then the lowest
//!   id). A model is the kernel's on the unit's class and for the task's footprint. StarPU's third term, γ times the energy, is left
//!   out: no machine here has power figures.
//! - **Not calibrated** (some unit has no estimate yet): StarPU's greedy fallback. The
//!   task goes to a unit whose class is not calibrated if there is one, so that
//!   calibration goes as fast as it can, to the one with the fewest tasks per relative
//!   speed (its load divided by StarPU's assumed speed-up of its kind: CPU 1, CUDA
//!   13.33, OpenCL 12.22, times capacity / 1024), and counts as expected to take 0 s.
//!
//! A unit is expected free when its running task is expected to end *given how long it
//! has run already*: the mean excess of the class's recent runs over that time (their
//! mean once it has run longer than all of them), so that a task overrunning its
//! estimate does not look finished while others queue behind it.
//!
//! The models are the engine's: it records every run of a task that ran in one stretch
//! on one unit, less its copies (this policy says it wants them), and keeps them across
//! runs with `--perfmodel DIR`, as StarPU keeps `$STARPU_HOME/.starpu/sampling`: a second
//! run starts calibrated. It reads only what an application tells the scheduler and what
//! the engine measured, so it behaves alike in both engines. No stealing, no preemption.

use crate::params::Params;
use hetsched_core::machine::{UnitType, CAPACITY_SCALE};
use hetsched_core::perf_model::Arch;
use hetsched_core::policy::{PickDecision, Policy, SubmitDecision, UnitId, View};
use hetsched_core::task::{QueueId, Task, TaskId};
use hetsched_core::Result;
use rustc_hash::FxHashMap;

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "dmda",
    about: "StarPU 1.3's dmda: minimum expected completion (expected end + copies, a task graph's data transfers included) from history models, calibrated first (10 runs a unit class), greedy by load per assumed speed-up until then",
    test_specs: &["dmda", "dmda:calibrate=1", "dmda:learn=0", "dmda:alpha=0.5,beta=2"],
    build: |spec, p, _| Ok(Dmda::from_params(spec, p)?.into()),
};

/// StarPU's assumed speed-up of a unit of each kind over a CPU core, for placing tasks
/// of no calibrated estimate (`_STARPU_CUDA_ALPHA`, `_STARPU_OPENCL_ALPHA`; a
/// coprocessor counts as a CPU).
pub fn assumed_speedup(kind: UnitType) -> f64 {
    match kind {
        UnitType::Cpu | UnitType::CoProcessor => 1.0,
        UnitType::Gpu => 13.33,
        UnitType::OpenCl => 12.22,
    }
}

pub struct Dmda {
    name: String,
    /// Each unit runs its queue by priority (`dmdas`), not in order.
    sorted: bool,
    learn: bool,
    calibrate: u64,
    alpha: f64,
    beta: f64,
    /// Expected seconds of queued work per unit.
    queued_s: Vec<f64>,
    /// Per queued/running task: (unit, expected run seconds, copy seconds).
    planned: FxHashMap<TaskId, (UnitId, f64, f64)>,
}

impl Dmda {
    pub fn from_params(spec: &str, p: &mut Params) -> Result<Dmda> {
        let learn = p.flag(
            "learn",
            "1: estimates from the performance models; 0: none (every task placed greedily by load)",
            true,
        )?;
        let calibrate = p.u64_in(
            "calibrate",
            "runs of a kernel on a unit class before its mean is trusted (StarPU's STARPU_CALIBRATE_MINIMUM)",
            10,
            1..=1_000_000,
        )?;
        let alpha = p.f64_in(
            "alpha",
            "weight of the expected end (StarPU's STARPU_SCHED_ALPHA)",
            1.0,
            0.0..=1e6,
            false,
        )?;
        let beta = p.f64_in(
            "beta",
            "weight of the copy time (StarPU's STARPU_SCHED_BETA)",
            1.0,
            0.0..=1e6,
            false,
        )?;
        Ok(Dmda {
            name: spec.to_string(),
            sorted: false,
            learn,
            calibrate,
            alpha,
            beta,
            queued_s: Vec::new(),
            planned: FxHashMap::default(),
        })
    }

    /// StarPU's `dmdas`: each unit runs the task of highest priority in its queue
    /// first (ties: the earliest queued).
    pub fn sorted(mut self) -> Dmda {
        self.sorted = true;
        self
    }

    /// The model class of `task` on `unit`: the unit's type and capacity, the task's
    /// footprint.
    fn arch(view: &View, unit: UnitId, task: &Task) -> Arch {
        let u = view.unit(unit);
        Arch {
            unit_type: u.kind,
            capacity: u.capacity,
            footprint: task.footprint,
        }
    }

    /// The calibrated estimate of `task` on `unit`, seconds: `None` while its class has
    /// fewer than `calibrate` runs of the kernel.
    fn estimate_s(&self, task: &Task, view: &View, unit: UnitId) -> Option<f64> {
        if !self.learn {
            return None;
        }
        view.models()
            .get(&task.kind, &Self::arch(view, unit, task))
            .filter(|h| h.samples() >= self.calibrate)
            .map(|h| h.mean())
    }

    /// When `unit` is expected to be free: now if idle, else when its task is expected
    /// to end given how long it has run (copies included).
    fn busy_until_s(&self, view: &View, unit: UnitId, now: f64) -> f64 {
        let Some(r) = view.running(unit) else {
            return now;
        };
        let Some(&(_, run, copy)) = self.planned.get(&r.task) else {
            return now;
        };
        // Copies are counted as if they came first.
        let elapsed = now - r.since_ns as f64 * 1e-9;
        let t = view.task(r.task);
        let history = view
            .models()
            .get(&t.kind, &Self::arch(view, unit, t))
            .filter(|h| self.learn && h.samples() > 0);
        let left = match history {
            Some(h) => {
                let computing = (elapsed - copy).max(0.0);
                h.remaining(computing) + (copy - elapsed).max(0.0)
            }
            None => (run + copy - elapsed).max(0.0),
        };
        now + left
    }

    /// The unit StarPU's greedy fallback takes: of an uncalibrated class if any, the
    /// fewest tasks per assumed speed, then the lowest id.
    fn greedy(&self, task: &Task, view: &View) -> Option<UnitId> {
        let mut best: Option<(bool, f64, UnitId)> = None;
        for u in view
            .units()
            .iter()
            .filter(|u| task.affinity.runs_on(u.kind))
        {
            let uncalibrated = self.estimate_s(task, view, u.id).is_none();
            let speed = assumed_speedup(u.kind) * u.capacity.max(1) as f64 / CAPACITY_SCALE as f64;
            let per_speed = view.load(u.id) as f64 / speed;
            let better = match best {
                None => true,
                Some((cal, load, _)) => {
                    (uncalibrated && !cal) || (uncalibrated == cal && per_speed < load)
                }
            };
            if better {
                best = Some((uncalibrated, per_speed, u.id));
            }
        }
        best.map(|(_, _, u)| u)
    }

    /// Sizes the per-unit state, also for units added since the last call.
    fn cover(&mut self, view: &View) {
        let n = view.units().len();
        if self.queued_s.len() < n {
            self.queued_s.resize(n, 0.0);
        }
    }
}

impl Policy for Dmda {
    fn name(&self) -> &str {
        &self.name
    }

    fn wants_models(&self) -> bool {
        self.learn
    }

    fn submit(&mut self, view: &View, task: TaskId) -> SubmitDecision {
        self.cover(view);
        let now = view.now_ns() as f64 * 1e-9;
        let t = view.task(task);
        let runs_on = || view.units().iter().filter(|u| t.affinity.runs_on(u.kind));
        let calibrated = runs_on().all(|u| self.estimate_s(t, view, u.id).is_some());
        let (u, run, copy) = if calibrated {
            // (unit, expected end, copy, estimate, load)
            let options: Vec<(UnitId, f64, f64, f64, usize)> = runs_on()
                .map(|u| {
                    let run = self.estimate_s(t, view, u.id).unwrap_or(0.0);
                    let copy = view.machine().copy_s(u.id, t.bytes_in, t.bytes_out)
                        + view.transfer_estimate_s(task, u.id);
                    let end =
                        self.busy_until_s(view, u.id, now) + self.queued_s[u.id as usize] + run;
                    (u.id, end, copy, run, view.load(u.id))
                })
                .collect();
            let best_end = options.iter().map(|o| o.1).fold(f64::INFINITY, f64::min);
            let mut best: Option<(f64, usize, UnitId, f64, f64)> = None;
            for (u, end, copy, run, load) in options {
                let fitness = self.alpha * (end - best_end) + self.beta * copy;
                if best.is_none_or(|b| fitness < b.0 || (fitness == b.0 && load < b.1)) {
                    best = Some((fitness, load, u, run, copy));
                }
            }
            match best {
                Some((_, _, u, run, copy)) => (u, run, copy),
                None => return SubmitDecision::Reject("no unit can run it".into()),
            }
        } else {
            match self.greedy(t, view) {
                Some(u) => (u, 0.0, 0.0),
                None => return SubmitDecision::Reject("no unit can run it".into()),
            }
        };
        self.queued_s[u as usize] += run + copy;
        self.planned.insert(task, (u, run, copy));
        SubmitDecision::Enqueue(QueueId::Unit(u))
    }

    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        self.cover(view);
        let queue = view.queue(unit);
        let next = match self.sorted {
            // The first of the highest priority.
            true => queue.iter().rev().max_by_key(|&t| view.task(t).priority),
            false => queue.front(),
        };
        let Some(t) = next else {
            return PickDecision::Idle;
        };
        let p = self.planned[&t];
        let q = &mut self.queued_s[unit as usize];
        *q = (*q - (p.1 + p.2)).max(0.0);
        PickDecision::Run(t)
    }

    fn complete(&mut self, _view: &View, task: TaskId, _unit: UnitId) {
        self.planned.remove(&task);
    }
}
