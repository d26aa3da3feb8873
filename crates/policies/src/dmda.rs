//! `dmda`: StarPU's deque-model data-aware policy. Each task goes to the unit with the
//! minimum expected completion time:
//! `max(now, unit busy until) + queued work + copy time + expected run time`,
//! where copies cost `bytes / link bandwidth + latency` to and from accelerators, and
//! the expected run time comes from a per-task-type performance model learned online
//! from the run times the engine reports (`TaskEntry::run_ns` when a task completes
//! after one uninterrupted run, minus its copies), as StarPU's history models do:
//! - a (task type, unit type, capacity) class that has run the type before expects the
//!   mean of its last observed times;
//! - another class expects the type's mean *reference work* (each observation times its
//!   unit's rate: `capacity / 1024` on a CPU, `affinity ratio × capacity / 1024` on an
//!   accelerator) divided by its own rate;
//! - a type never seen expects 0 s: placement goes by backlog and copy costs, ties to the
//!   unit with fewer tasks, then the lowest id.
//!
//! A unit is busy until its running task is expected to end *given how long it has run
//! already*: the mean excess of the class's observed times over that elapsed time (the
//! class mean once it has run longer than all of them). With `start + expected` instead,
//! a long task that overruns its estimate would look finished, and tasks would queue
//! behind it while other units idle.
//!
//! It reads only what an application tells the scheduler and what the engine measured,
//! so it learns live exactly as in the simulator. Units run their queue in FIFO order,
//! no stealing, no preemption.
//!
//! Parameters: `learn` (1 = learn from completed tasks, 0 = no model: every run is
//! expected to take 0 s).

use crate::params::Params;
use hetsched_core::machine::{UnitType, CAPACITY_SCALE};
use hetsched_core::policy::{PickDecision, Policy, SubmitDecision, UnitId, View};
use hetsched_core::task::{QueueId, Task, TaskId};
use hetsched_core::Result;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "dmda",
    about: "StarPU 1.3's dmda: minimum expected completion time (queued work + copies + run), history models learned from observed run times",
    test_specs: &["dmda"],
    build: |spec, p, _| Ok(Dmda::from_params(spec, p)?.into()),
};

type ClassKey = (Arc<str>, UnitType, u32);

/// How many observed times per class the remaining-time estimate looks at.
const HISTORY: usize = 64;

/// The last observed run times of a class.
#[derive(Clone, Default)]
struct Observed {
    times: Vec<f64>,
    next: usize,
}

impl Observed {
    fn add(&mut self, x: f64) {
        if self.times.len() < HISTORY {
            self.times.push(x);
        } else {
            self.times[self.next] = x;
            self.next = (self.next + 1) % HISTORY;
        }
    }
    fn mean(&self) -> Option<f64> {
        (!self.times.is_empty()).then(|| self.times.iter().sum::<f64>() / self.times.len() as f64)
    }
    /// Expected time left after `elapsed`: the mean excess of the longer times.
    fn remaining(&self, elapsed: f64) -> Option<f64> {
        let (sum, n) = self
            .times
            .iter()
            .filter(|&&t| t > elapsed)
            .fold((0.0, 0), |(s, n), &t| (s + t - elapsed, n + 1));
        if n > 0 {
            Some(sum / n as f64)
        } else {
            self.mean()
        }
    }
}

/// A running mean.
#[derive(Clone, Copy, Default)]
struct Mean {
    sum: f64,
    n: u32,
}

impl Mean {
    fn add(&mut self, x: f64) {
        self.sum += x;
        self.n += 1;
    }
    fn get(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}

pub struct Dmda {
    name: String,
    learn: bool,
    /// Observed run seconds per class.
    class: FxHashMap<ClassKey, Observed>,
    /// Reference work (seconds on a capacity-1024 CPU) per task type.
    work: FxHashMap<Arc<str>, Mean>,
    /// Expected seconds of queued work per unit.
    queued_s: Vec<f64>,
    /// Per queued/running task: (unit, expected run seconds, copy seconds).
    planned: FxHashMap<TaskId, (UnitId, f64, f64)>,
}

impl Dmda {
    pub fn from_params(spec: &str, p: &mut Params) -> Result<Dmda> {
        let learn = p.flag(
            "learn",
            "1: learn per-type run times from completed tasks; 0: the prior only",
            true,
        )?;
        Ok(Dmda {
            name: spec.to_string(),
            learn,
            class: FxHashMap::default(),
            work: FxHashMap::default(),
            queued_s: Vec::new(),
            planned: FxHashMap::default(),
        })
    }

    /// Reference seconds of work per second on `unit` (0: cannot run there).
    fn rate(task: &Task, view: &View, unit: UnitId) -> f64 {
        let u = view.unit(unit);
        let cap = u.capacity.max(1) as f64 / CAPACITY_SCALE as f64;
        if u.kind == UnitType::Cpu {
            return cap;
        }
        let cpu = task.affinity.get(UnitType::Cpu);
        task.affinity.get(u.kind) / if cpu > 0.0 { cpu } else { 1.0 } * cap
    }

    fn key(task: &Task, view: &View, unit: UnitId) -> ClassKey {
        let u = view.unit(unit);
        (task.kind.clone(), u.kind, u.capacity)
    }

    fn expected_s(&self, task: &Task, view: &View, unit: UnitId) -> f64 {
        if let Some(s) = self
            .class
            .get(&Self::key(task, view, unit))
            .and_then(Observed::mean)
        {
            return s;
        }
        match self.work.get(&task.kind).and_then(Mean::get) {
            Some(work) => {
                let rate = Self::rate(task, view, unit);
                if rate > 0.0 {
                    work / rate
                } else {
                    0.0
                }
            }
            None => 0.0,
        }
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
        let left = match self.class.get(&Self::key(t, view, unit)) {
            Some(o) => {
                let computing = (elapsed - copy).max(0.0);
                o.remaining(computing).unwrap_or(0.0) + (copy - elapsed).max(0.0)
            }
            None => (run + copy - elapsed).max(0.0),
        };
        now + left
    }

    fn copy_s(task: &Task, view: &View, unit: UnitId) -> f64 {
        let u = view.unit(unit);
        let Some(acc) = u
            .accelerator
            .and_then(|i| view.machine().accelerators.get(i as usize))
        else {
            return 0.0;
        };
        match acc.link_bandwidth_bytes_per_s {
            Some(bw) if bw > 0.0 => {
                let lat = acc.link_latency_s.unwrap_or(0.0);
                (task.bytes_in as f64 / bw + lat) + (task.bytes_out as f64 / bw + lat)
            }
            _ => 0.0,
        }
    }
}

impl Dmda {
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

    fn submit(&mut self, view: &View, task: TaskId) -> SubmitDecision {
        self.cover(view);
        let now = view.now_ns() as f64 * 1e-9;
        let t = view.task(task);
        // Ties (e.g. live, before the model has learnt anything) go to the unit with
        // fewer tasks, then the lowest id.
        let mut best: Option<(f64, usize, UnitId, f64, f64)> = None;
        for u in view.units().iter().filter(|u| t.affinity.runs_on(u.kind)) {
            let run = self.expected_s(t, view, u.id);
            let copy = Self::copy_s(t, view, u.id);
            let end =
                self.busy_until_s(view, u.id, now) + self.queued_s[u.id as usize] + copy + run;
            let load = view.load(u.id);
            if best.is_none_or(|b| end < b.0 || (end == b.0 && load < b.1)) {
                best = Some((end, load, u.id, run, copy));
            }
        }
        let Some((_, _, u, run, copy)) = best else {
            return SubmitDecision::Reject("no unit can run it".into());
        };
        self.queued_s[u as usize] += run + copy;
        self.planned.insert(task, (u, run, copy));
        SubmitDecision::Enqueue(QueueId::Unit(u))
    }

    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        self.cover(view);
        let Some(t) = view.queue(unit).front() else {
            return PickDecision::Idle;
        };
        let p = self.planned[&t];
        let q = &mut self.queued_s[unit as usize];
        *q = (*q - (p.1 + p.2)).max(0.0);
        PickDecision::Run(t)
    }

    fn complete(&mut self, view: &View, task: TaskId, unit: UnitId) {
        let Some((_, _, copy)) = self.planned.remove(&task) else {
            return;
        };
        let Some(e) = view.entry(task).filter(|e| e.runs == 1) else {
            return; // one run on this unit only: its time is this unit's
        };
        if self.learn {
            let observed = (e.run_ns as f64 * 1e-9 - copy).max(0.0);
            let t = &e.task;
            self.class
                .entry(Self::key(t, view, unit))
                .or_default()
                .add(observed);
            let rate = Self::rate(t, view, unit);
            self.work
                .entry(t.kind.clone())
                .or_default()
                .add(observed * rate);
        }
    }
}
