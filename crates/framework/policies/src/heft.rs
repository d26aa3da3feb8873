//! `heft`: Heterogeneous Earliest Finish Time (Topcuoglu, Hariri & Wu, IEEE TPDS 2002),
//! the static list scheduler every task-graph study compares with.
//!
//! On a task graph ([`View::graph`]) it plans the whole graph when the first task
//! arrives, from what it can know then: the performance models ([`View::models`], the
//! mean of each kernel on each unit's class for the task's footprint) and the machine's
//! links ([`GraphRun::copy_ns`]).
//!
//! - **Upward rank**: `rank(t) = w̄(t) + max over successors s of (c̄(t, s) + rank(s))`,
//!   where `w̄(t)` is the mean of `t`'s cost over the units that can run it (those whose
//!   class has a model for it) and `c̄(t, s)` the mean over ordered pairs of units of
//!   copying the data `t` writes and `s` reads between their memory nodes.
//! - **Earliest finish time with insertion**: in decreasing rank (ties: graph order, so
//!   a predecessor comes first), each task goes to the unit where it would finish
//!   first, starting in the earliest idle gap of that unit's plan that is long enough
//!   and after its data is ready there: each handle it reads at the planned end of its
//!   last writer (a predecessor) plus the copy from that writer's unit (from host memory
//!   if none wrote it), and its explicit predecessors' planned ends. Ties: the lowest
//!   unit id.
//! - **Copies**: the plan assumes, as HEFT's paper does, that data leaves as its writer
//!   ends; the engine, as StarPU does, copies it once the reader is queued on its unit
//!   (`hetsched_core::dataflow`), so a run can end later than its plan.
//! - **Running the plan**: each task is queued on its planned unit, and a unit runs its
//!   tasks in their planned order, waiting (idle) for the next one to become ready
//!   rather than running a later one early. The globally earliest planned task not run
//!   yet always has its predecessors done and is next on its unit, so the plan never
//!   deadlocks, whatever the real durations.
//!
//! A task the plan does not cover (no model on any unit, or a run of independent tasks)
//! goes to the unit where it is expected to finish first given the work already queued
//! there (the models' mean, 0 without one, among the units its affinity allows; ties:
//! the fewest tasks, then the lowest id), and a unit runs such tasks in arrival order
//! when its next planned one is not queued.
//!
//! Planning is `O(tasks × (units × 64 + memory nodes² × predecessors))`: the gap search
//! looks between a unit's last [`INSERTION_WINDOW`] (64) planned intervals, so a graph
//! of a million tasks ready at once is planned in seconds, not hours; insertion further
//! back is not tried.

use crate::params::Params;
use hetsched_core::dataflow::GraphRun;
use hetsched_core::perf_model::Arch;
use hetsched_core::policy::{PickDecision, Policy, SubmitDecision, UnitId, View};
use hetsched_core::task::{QueueId, TaskId};
use hetsched_core::Result;
use rustc_hash::FxHashMap;

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "heft",
    about: "Topcuoglu, Hariri & Wu's HEFT (IEEE TPDS 2002): a task graph planned at its first task by upward rank and insertion-based earliest finish time from the performance models and link costs, each unit running its plan in order; outside a graph, earliest expected finish",
    test_specs: &["heft"],
    build: |spec, p, _| Ok(crate::Built::dynamic(Heft::from_params(spec, p)?)),
};

/// No unit: a task the plan does not cover.
const NONE: UnitId = UnitId::MAX;

/// The static plan of a graph.
struct Plan {
    /// The id of the graph's task of index 0 (the graph it plans).
    first: TaskId,
    /// Each graph task's unit, or `NONE`.
    unit: Vec<UnitId>,
    /// Each unit's graph tasks in planned start order.
    order: Vec<Vec<u32>>,
    /// Each unit's next task in `order`.
    next: Vec<usize>,
    /// The plan's makespan, seconds.
    makespan_s: f64,
}

pub struct Heft {
    name: String,
    plan: Option<Plan>,
    /// Expected seconds of work queued per unit, for tasks outside the plan.
    queued_s: Vec<f64>,
    /// A task outside the plan: its unit and expected seconds.
    unplanned: FxHashMap<TaskId, (UnitId, f64)>,
}

impl Heft {
    pub fn from_params(spec: &str, _p: &mut Params) -> Result<Heft> {
        Ok(Heft {
            name: spec.to_string(),
            plan: None,
            queued_s: Vec::new(),
            unplanned: FxHashMap::default(),
        })
    }

    /// The planned makespan of the graph, seconds, once planned.
    pub fn planned_makespan_s(&self) -> Option<f64> {
        self.plan.as_ref().map(|p| p.makespan_s)
    }

    /// The mean of `kernel` with `footprint` on `unit`'s class, seconds, if modelled.
    fn cost(view: &View, unit: UnitId, kernel: &str, footprint: u64) -> Option<f64> {
        let u = view.unit(unit);
        let arch = Arch {
            unit_type: u.kind,
            capacity: u.capacity,
            footprint,
        };
        view.models()
            .get(kernel, &arch)
            .filter(|h| h.samples() > 0)
            .map(|h| h.mean())
    }

    fn make_plan(view: &View, run: &GraphRun) -> Plan {
        let graph = run.graph();
        let deps = run.dependencies();
        let n = graph.tasks.len();
        let units = view.units().len();
        let node: Vec<usize> = (0..units as UnitId).map(|u| run.node_of(u)).collect();
        // Each task's cost on each unit (`None`: it cannot run there), by class.
        let mut by_class: FxHashMap<(&str, u64), Vec<Option<f64>>> = FxHashMap::default();
        let costs: Vec<&Vec<Option<f64>>> = {
            for t in &graph.tasks {
                by_class
                    .entry((&*t.kernel, t.footprint))
                    .or_insert_with(|| {
                        (0..units as UnitId)
                            .map(|u| Self::cost(view, u, &t.kernel, t.footprint))
                            .collect()
                    });
            }
            graph
                .tasks
                .iter()
                .map(|t| &by_class[&(&*t.kernel, t.footprint)])
                .collect()
        };
        // The data each task reads from each predecessor (its handle's last writer);
        // `None` as the writer: host memory.
        let mut last_writer: Vec<Option<u32>> = vec![None; graph.data.len()];
        let mut inputs: Vec<Vec<(Option<u32>, u64)>> = Vec::with_capacity(n);
        for (t, task) in graph.tasks.iter().enumerate() {
            let mut mine = Vec::new();
            for a in task.accesses.iter().filter(|a| a.mode.reads()) {
                mine.push((
                    last_writer[a.handle as usize],
                    graph.data[a.handle as usize].bytes,
                ));
            }
            for a in task.accesses.iter().filter(|a| a.mode.writes()) {
                last_writer[a.handle as usize] = Some(t as u32);
            }
            inputs.push(mine);
        }
        // Mean copy time over ordered unit pairs, seconds: over pairs of memory nodes,
        // each weighed by its units.
        let mut per_node = vec![0usize; run.nodes()];
        node.iter().for_each(|&n| per_node[n] += 1);
        let mean_copy = |bytes: u64| -> f64 {
            if bytes == 0 || units == 0 {
                return 0.0;
            }
            let mut sum = 0.0;
            for (a, &na) in per_node.iter().enumerate().filter(|(_, &n)| n > 0) {
                for (b, &nb) in per_node.iter().enumerate().filter(|(_, &n)| n > 0) {
                    sum += (na * nb) as f64 * run.copy_ns(bytes, a, b) as f64;
                }
            }
            sum * 1e-9 / (units * units) as f64
        };
        let mean_cost = |t: usize| -> f64 {
            let (sum, count) = costs[t]
                .iter()
                .flatten()
                .fold((0.0, 0usize), |(s, c), &w| (s + w, c + 1));
            if count == 0 {
                0.0
            } else {
                sum / count as f64
            }
        };
        let mut rank = vec![0.0f64; n];
        let mut best_succ = vec![0.0f64; n];
        for s in (0..n).rev() {
            rank[s] = mean_cost(s) + best_succ[s];
            for &p in deps.of(s) {
                let bytes: u64 = inputs[s]
                    .iter()
                    .filter(|(w, _)| *w == Some(p))
                    .fold(0, |sum, &(_, b)| sum.saturating_add(b));
                let via = mean_copy(bytes) + rank[s];
                let b = &mut best_succ[p as usize];
                if via > *b {
                    *b = via;
                }
            }
        }
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by(|&a, &b| {
            rank[b as usize]
                .total_cmp(&rank[a as usize])
                .then(a.cmp(&b))
        });
        // Per unit, planned intervals (start, end, sequence, task) sorted by start.
        let mut intervals: Vec<Vec<(f64, f64, u32, u32)>> = vec![Vec::new(); units];
        let mut unit_of = vec![NONE; n];
        let mut end = vec![0.0f64; n];
        let mut makespan: f64 = 0.0;
        for (seq, &t) in order.iter().enumerate() {
            let t = t as usize;
            let mut best: Option<(f64, f64, UnitId, usize)> = None;
            for u in 0..units {
                let Some(w) = costs[t][u] else {
                    continue;
                };
                let mut ready: f64 = deps
                    .of(t)
                    .iter()
                    .map(|&p| end[p as usize])
                    .fold(0.0, f64::max);
                for &(writer, bytes) in &inputs[t] {
                    let (from, at) = match writer {
                        Some(p) if unit_of[p as usize] != NONE => {
                            (node[unit_of[p as usize] as usize], end[p as usize])
                        }
                        _ => (0, 0.0),
                    };
                    ready = ready.max(at + run.copy_ns(bytes, from, node[u]) as f64 * 1e-9);
                }
                let (start, at) = earliest_gap(&intervals[u], ready, w);
                let finish = start + w;
                if best.is_none_or(|b| finish < b.1) {
                    best = Some((start, finish, u as UnitId, at));
                }
            }
            let Some((start, finish, u, at)) = best else {
                continue;
            };
            intervals[u as usize].insert(at, (start, finish, seq as u32, t as u32));
            unit_of[t] = u;
            end[t] = finish;
            makespan = makespan.max(finish);
        }
        Plan {
            first: run.first_id(),
            unit: unit_of,
            order: intervals
                .into_iter()
                .map(|iv| iv.into_iter().map(|(_, _, _, t)| t).collect())
                .collect(),
            next: vec![0; units],
            makespan_s: makespan,
        }
    }

    /// Sizes the per-unit state, also for units added since the last call.
    fn cover(&mut self, view: &View) {
        let n = view.units().len();
        if self.queued_s.len() < n {
            self.queued_s.resize(n, 0.0);
        }
    }

    /// The unit where `task`, outside the plan, is expected to finish first (ties, as
    /// without models: the fewest tasks, then the lowest id).
    fn earliest_finish(&self, view: &View, task: TaskId) -> Option<(UnitId, f64)> {
        let t = view.task(task);
        let mut best: Option<(f64, usize, UnitId, f64)> = None;
        for u in view.units().iter().filter(|u| t.affinity.runs_on(u.kind)) {
            let w = Self::cost(view, u.id, &t.kind, t.footprint).unwrap_or(0.0);
            let finish = self.queued_s[u.id as usize] + w;
            let load = view.load(u.id);
            if best.is_none_or(|b| finish < b.0 || (finish == b.0 && load < b.1)) {
                best = Some((finish, load, u.id, w));
            }
        }
        best.map(|(_, _, u, w)| (u, w))
    }
}

/// How many of a unit's last planned intervals the gap search looks between: planning
/// stays linear in the tasks for graphs whose tasks are all ready at once.
pub const INSERTION_WINDOW: usize = 64;

/// The earliest start at or after `ready` of a gap `w` long in `intervals` (sorted by
/// start, not overlapping), and where the new interval goes. Walks back from the last
/// interval while intervals end after `ready`, at most [`INSERTION_WINDOW`] of them,
/// then forward through the gaps.
fn earliest_gap(intervals: &[(f64, f64, u32, u32)], ready: f64, w: f64) -> (f64, usize) {
    let mut i = intervals.len();
    let floor = i.saturating_sub(INSERTION_WINDOW);
    while i > floor && intervals[i - 1].1 > ready {
        i -= 1;
    }
    // Before the window: no earlier than the end of the interval before it.
    let ready = match i.checked_sub(1) {
        Some(j) => ready.max(intervals[j].1),
        None => ready,
    };
    // Intervals before `i` end by `ready`; try the gap before each one from `i` on.
    let mut from = ready;
    for (j, iv) in intervals.iter().enumerate().skip(i) {
        if from + w <= iv.0 {
            return (from, j);
        }
        from = from.max(iv.1);
    }
    (from, intervals.len())
}

impl Policy for Heft {
    fn name(&self) -> &str {
        &self.name
    }

    fn wants_models(&self) -> bool {
        true
    }

    fn submit(&mut self, view: &View, task: TaskId) -> SubmitDecision {
        self.cover(view);
        if let Some(run) = view.graph() {
            // A graph not planned yet (live, one graph follows another).
            if self.plan.as_ref().is_none_or(|p| p.first != run.first_id()) {
                self.plan = Some(Self::make_plan(view, run));
            }
        }
        if let Some(slot) = self.plan.as_mut().and_then(|p| {
            let i = usize::try_from(task.checked_sub(p.first)?).ok()?;
            p.unit.get_mut(i)
        }) {
            let u = *slot;
            if u != NONE {
                if view.task(task).affinity.runs_on(view.unit_kind(u)) {
                    return SubmitDecision::Enqueue(QueueId::Unit(u));
                }
                // Planned where it has no implementation (the models said it had one):
                // out of the plan, which its unit's order then skips.
                *slot = NONE;
            }
        }
        match self.earliest_finish(view, task) {
            Some((u, w)) => {
                self.queued_s[u as usize] += w;
                self.unplanned.insert(task, (u, w));
                SubmitDecision::Enqueue(QueueId::Unit(u))
            }
            None => SubmitDecision::Reject("no unit can run it".into()),
        }
    }

    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        self.cover(view);
        let queue = view.queue(unit);
        if let Some(plan) = &mut self.plan {
            let u = unit as usize;
            // Tasks taken out of the plan are skipped.
            while let Some(&t) = plan.order.get(u).and_then(|o| o.get(plan.next[u])) {
                if plan.unit[t as usize] != NONE {
                    break;
                }
                plan.next[u] += 1;
            }
            if let Some(&next) = plan.order.get(u).and_then(|o| o.get(plan.next[u])) {
                let next = plan.first + u64::from(next);
                if queue.iter().any(|t| t == next) {
                    plan.next[u] += 1;
                    return PickDecision::Run(next);
                }
            }
        }
        // A task outside the plan, in arrival order.
        let plan = &self.plan;
        let outside = queue.iter().find(|&t| {
            plan.as_ref().is_none_or(|p| {
                t.checked_sub(p.first)
                    .and_then(|i| usize::try_from(i).ok())
                    .and_then(|i| p.unit.get(i))
                    .is_none_or(|&u| u == NONE)
            })
        });
        match outside {
            Some(t) => {
                if let Some(&(_, w)) = self.unplanned.get(&t) {
                    let q = &mut self.queued_s[unit as usize];
                    *q = (*q - w).max(0.0);
                }
                PickDecision::Run(t)
            }
            None => PickDecision::Idle,
        }
    }

    fn complete(&mut self, _view: &View, task: TaskId, _unit: UnitId) {
        self.unplanned.remove(&task);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_search_inserts_where_the_task_fits() {
        let iv = vec![(0.0, 1.0, 0, 0), (3.0, 4.0, 1, 1)];
        // Ready at 0, 1 s long: after the first interval, in the gap [1, 3).
        assert_eq!(earliest_gap(&iv, 0.0, 1.0), (1.0, 1));
        // 2.5 s long: does not fit the gap; after the last.
        assert_eq!(earliest_gap(&iv, 0.0, 2.5), (4.0, 2));
        // Ready at 2.5, 0.5 s: fits [2.5, 3).
        assert_eq!(earliest_gap(&iv, 2.5, 0.5), (2.5, 1));
        // Ready at 5: after everything.
        assert_eq!(earliest_gap(&iv, 5.0, 1.0), (5.0, 2));
        assert_eq!(earliest_gap(&[], 2.0, 1.0), (2.0, 0));
    }
}
