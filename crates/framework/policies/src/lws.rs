//! `lws`: StarPU 1.3's locality-aware work stealing (`lws` in
//! `src/sched_policies/work_stealing_policy.c`). Each unit has its own queue:
//!
//! - **Push**: a task goes to the queue of the unit whose completion made it ready (in
//!   a task graph, the unit of its predecessor that completed last: StarPU pushes from
//!   the worker that released it, so data stays where it was written), if that unit
//!   can run it; otherwise, and for a task no completion released (a graph's sources,
//!   independent tasks: StarPU's submitting thread is no worker), to the next unit that
//!   can run it in round-robin order.
//! - **Pop**: a unit runs the task of highest priority in its own queue (ties: the
//!   oldest), as StarPU's priority deque does.
//! - **Steal**: an idle unit with an empty queue steals from its neighbours, nearest
//!   first: units of its own type on its NUMA node, then of its type elsewhere, then
//!   the others, each group by distance in unit ids (StarPU walks the hwloc tree from
//!   the worker). It takes the newest task it can run from the first neighbour that has
//!   one.
//!
//! No performance models, no prefetch decisions of its own (a task queued on a unit
//! prefetches its inputs there, as every queued task does).

use crate::params::Params;
use hetsched_core::policy::{PickDecision, Policy, SubmitDecision, UnitId, View};
use hetsched_core::task::{QueueId, TaskId};
use hetsched_core::Result;

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "lws",
    about: "StarPU 1.3's lws: per-unit queues, a task pushed to the unit that released it, idle units stealing from their nearest neighbours first",
    test_specs: &["lws"],
    build: |spec, p, _| Ok(crate::Built::dynamic(Lws::from_params(spec, p)?)),
};

/// No unit released the task.
const NONE: UnitId = UnitId::MAX;

pub struct Lws {
    name: String,
    /// The next unit of the round robin.
    next: usize,
    /// Per graph task, the unit of its predecessor that completed last.
    released_by: Vec<UnitId>,
    /// The first id of the graph `released_by` is about.
    graph_first: TaskId,
    /// Per unit, the others nearest first (for the units seen so far).
    neighbours: Vec<Vec<UnitId>>,
}

impl Lws {
    pub fn from_params(spec: &str, _p: &mut Params) -> Result<Lws> {
        Ok(Lws {
            name: spec.to_string(),
            next: 0,
            released_by: Vec::new(),
            graph_first: 0,
            neighbours: Vec::new(),
        })
    }

    /// Sizes the per-unit state, also for units added since the last call.
    fn cover(&mut self, view: &View) {
        let n = view.units().len();
        if self.neighbours.len() == n {
            return;
        }
        let units = view.units();
        self.neighbours = units
            .iter()
            .map(|u| {
                let mut others: Vec<UnitId> = units
                    .iter()
                    .filter(|v| v.id != u.id)
                    .map(|v| v.id)
                    .collect();
                others.sort_by_key(|&v| {
                    let w = &units[v as usize];
                    (
                        w.kind != u.kind,
                        w.numa_node != u.numa_node,
                        v.abs_diff(u.id),
                    )
                });
                others
            })
            .collect();
    }

    /// The unit a task no completion released goes to: the next in round-robin order
    /// that can run it.
    fn round_robin(&mut self, view: &View, task: TaskId) -> Option<UnitId> {
        let t = view.task(task);
        let n = view.units().len();
        let u = (0..n)
            .map(|i| ((self.next + i) % n) as UnitId)
            .find(|&u| t.affinity.runs_on(view.unit_kind(u)))?;
        self.next = (u as usize + 1) % n;
        Some(u)
    }
}

impl Policy for Lws {
    fn name(&self) -> &str {
        &self.name
    }

    fn submit(&mut self, view: &View, task: TaskId) -> SubmitDecision {
        self.cover(view);
        let t = view.task(task);
        let released = view
            .graph()
            .and_then(|g| g.index(task))
            .and_then(|i| self.released_by.get(i))
            .copied()
            .filter(|&u| u != NONE && (u as usize) < view.units().len())
            .filter(|&u| t.affinity.runs_on(view.unit_kind(u)));
        match released.or_else(|| self.round_robin(view, task)) {
            Some(u) => SubmitDecision::Enqueue(QueueId::Unit(u)),
            None => SubmitDecision::Reject("no unit can run it".into()),
        }
    }

    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        self.cover(view);
        // The first of the highest priority in its own queue.
        let own = view
            .queue(unit)
            .entries()
            .rev()
            .max_by_key(|(_, e)| e.task.priority)
            .map(|(_, e)| e.task.id);
        if let Some(t) = own {
            return PickDecision::Run(t);
        }
        let kind = view.unit_kind(unit);
        for &from in &self.neighbours[unit as usize] {
            let newest = view
                .queue(from)
                .entries()
                .rev()
                .find(|(_, e)| e.task.affinity.runs_on(kind))
                .map(|(_, e)| e.task.id);
            if let Some(task) = newest {
                return PickDecision::Steal { from, task };
            }
        }
        PickDecision::Idle
    }

    fn complete(&mut self, view: &View, task: TaskId, unit: UnitId) {
        let Some(g) = view.graph() else {
            return;
        };
        let Some(t) = g.index(task) else {
            return;
        };
        if self.graph_first != g.first_id() {
            // Another graph (live, one follows another): nothing released yet.
            self.graph_first = g.first_id();
            self.released_by.clear();
        }
        if self.released_by.len() < g.graph().tasks.len() {
            self.released_by.resize(g.graph().tasks.len(), NONE);
        }
        for &s in g.successors(t) {
            self.released_by[s as usize] = unit;
        }
    }
}
