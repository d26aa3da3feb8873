//! `dmda`: StarPU's deque-model data-aware policy. Each task goes to the unit with the
//! minimum expected completion time:
//! `max(now, unit busy until) + queued work + copy time + expected run time`,
//! where copies cost `bytes / link bandwidth + latency` to and from accelerators, and
//! the expected run time comes from a per-task-type performance model learned online:
//! the prior is the work scaled by unit capacity (`work × 1024 / capacity` on a CPU,
//! `work / (affinity ratio × capacity / 1024)` or the explicit speed on an accelerator),
//! and each completed run updates the mean ratio observed / prior of its
//! (task type, unit type, capacity) class. Units run their queue in FIFO order, no
//! stealing, no preemption.
//!
//! Parameters: `learn` (1 = learn from completed tasks, 0 = use the prior only).

use crate::params::Params;
use hetsched_core::machine::{UnitType, CAPACITY_SCALE};
use hetsched_core::policy::{PickDecision, Policy, SubmitDecision, UnitId, View};
use hetsched_core::task::{QueueId, Task, TaskId};
use hetsched_core::Result;
use rustc_hash::FxHashMap;
use std::sync::Arc;

type ModelKey = (Arc<str>, UnitType, u32);

pub struct Dmda {
    name: String,
    learn: bool,
    /// (sum of observed/prior ratios, count) per class.
    model: FxHashMap<ModelKey, (f64, u32)>,
    /// Expected seconds of queued work per unit.
    queued_s: Vec<f64>,
    /// Expected end of the running task per unit, seconds.
    busy_until_s: Vec<f64>,
    /// Per queued/running task: (unit, expected run seconds, copy seconds, start time).
    planned: FxHashMap<TaskId, (UnitId, f64, f64, f64)>,
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
            model: FxHashMap::default(),
            queued_s: Vec::new(),
            busy_until_s: Vec::new(),
            planned: FxHashMap::default(),
        })
    }

    fn prior_s(task: &Task, view: &View, unit: UnitId) -> f64 {
        let u = view.unit(unit);
        let cap = u.capacity.max(1) as f64 / CAPACITY_SCALE as f64;
        if u.kind == UnitType::Cpu {
            return task.work_s / cap;
        }
        let explicit = task.speed.get(u.kind);
        let rate = if explicit > 0.0 {
            explicit
        } else {
            let cpu = task.affinity.get(UnitType::Cpu);
            task.affinity.get(u.kind) / if cpu > 0.0 { cpu } else { 1.0 } * cap
        };
        task.work_s / rate
    }

    fn key(task: &Task, view: &View, unit: UnitId) -> ModelKey {
        let u = view.unit(unit);
        (task.kind.clone(), u.kind, u.capacity)
    }

    fn expected_s(&self, task: &Task, view: &View, unit: UnitId) -> f64 {
        let prior = Self::prior_s(task, view, unit);
        match self.model.get(&Self::key(task, view, unit)) {
            Some(&(sum, n)) if n > 0 => prior * sum / n as f64,
            _ => prior,
        }
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
            self.busy_until_s.resize(n, 0.0);
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
            let end = self.busy_until_s[u.id as usize].max(now)
                + self.queued_s[u.id as usize]
                + copy
                + run;
            let load = view.load(u.id);
            if best.is_none_or(|b| end < b.0 || (end == b.0 && load < b.1)) {
                best = Some((end, load, u.id, run, copy));
            }
        }
        let Some((_, _, u, run, copy)) = best else {
            return SubmitDecision::Reject("no unit can run it".into());
        };
        self.queued_s[u as usize] += run + copy;
        self.planned.insert(task, (u, run, copy, 0.0));
        SubmitDecision::Enqueue(QueueId::Unit(u))
    }

    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        self.cover(view);
        let Some(&t) = view.queue(unit).front() else {
            return PickDecision::Idle;
        };
        let now = view.now_ns() as f64 * 1e-9;
        let p = self.planned.get_mut(&t).unwrap();
        p.3 = now;
        let q = &mut self.queued_s[unit as usize];
        *q = (*q - (p.1 + p.2)).max(0.0);
        self.busy_until_s[unit as usize] = now + p.1 + p.2;
        PickDecision::Run(t)
    }

    fn complete(&mut self, view: &View, task: TaskId, unit: UnitId) {
        let now = view.now_ns() as f64 * 1e-9;
        self.busy_until_s[unit as usize] = now;
        let Some((_, _, copy, start)) = self.planned.remove(&task) else {
            return;
        };
        if self.learn {
            let t = view.task(task);
            let prior = Self::prior_s(t, view, unit);
            if prior > 0.0 {
                let observed = (now - start - copy).max(0.0);
                let e = self
                    .model
                    .entry(Self::key(t, view, unit))
                    .or_insert((0.0, 0));
                e.0 += observed / prior;
                e.1 += 1;
            }
        }
    }
}
