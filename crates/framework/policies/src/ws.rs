//! `ws`: work stealing, a simple baseline that models no particular runtime. A task is
//! pushed on the queue of the unit with the fewest tasks (the simulator has no
//! submitting unit; ties: lowest id); a unit runs its own queue oldest first, and an
//! idle unit with an empty queue steals the newest task it can run from the longest
//! queue (ties: lowest id). Tasks run to completion.

use hetsched_core::policy::{PickDecision, Policy, Queue, SubmitDecision, UnitId, View};
use hetsched_core::task::{QueueId, TaskId};

use crate::load::LoadIndex;

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "ws",
    about: "simple baseline, work stealing: push to the least-loaded queue, idle units steal from the longest",
    test_specs: &["ws"],
    build: |_, _, _| Ok(WorkStealing::default().into()),
};

#[derive(Default)]
pub struct WorkStealing {
    loads: Option<LoadIndex>,
}

impl WorkStealing {
    /// The load index, covering units added since the last call.
    pub(crate) fn loads(&mut self, view: &View) -> &mut LoadIndex {
        let loads = self.loads.get_or_insert_with(|| LoadIndex::new(view));
        loads.cover(view);
        loads
    }

    /// `unit` steals `task` from `from`'s queue: the counts follow.
    pub(crate) fn steal(
        &mut self,
        view: &View,
        unit: UnitId,
        from: UnitId,
        task: TaskId,
    ) -> PickDecision {
        let loads = self.loads(view);
        loads.dec(from);
        loads.inc(unit);
        PickDecision::Steal { from, task }
    }
}

impl Policy for WorkStealing {
    fn name(&self) -> &str {
        "ws"
    }
    fn submit(&mut self, view: &View, task: TaskId) -> SubmitDecision {
        let loads = self.loads(view);
        match loads.place(&view.task(task).affinity) {
            Some(u) => SubmitDecision::Enqueue(QueueId::Unit(u)),
            None => SubmitDecision::Reject("no unit can run it".into()),
        }
    }
    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        if let Some(t) = view.queue(unit).front() {
            return PickDecision::Run(t);
        }
        let newest = |q: Queue| q.iter().rev().find(|&t| view.can_run(t, unit));
        match steal_from_longest(view, unit, newest) {
            Some((from, task)) => self.steal(view, unit, from, task),
            None => PickDecision::Idle,
        }
    }
    fn complete(&mut self, view: &View, _task: TaskId, unit: UnitId) {
        self.loads(view).dec(unit);
    }
}

/// The stealing step shared by the policies that steal: among the other units' queues,
/// the longest in which `choose` finds a task (ties: the lowest unit id), as (that
/// unit, the task).
pub fn steal_from_longest(
    view: &View,
    unit: UnitId,
    choose: impl Fn(Queue) -> Option<TaskId>,
) -> Option<(UnitId, TaskId)> {
    let mut best: Option<(usize, UnitId, TaskId)> = None;
    for v in view.units() {
        let q = view.queue(v.id);
        if v.id == unit || q.len() <= best.map_or(0, |b| b.0) {
            continue;
        }
        if let Some(t) = choose(q) {
            best = Some((q.len(), v.id, t));
        }
    }
    best.map(|(_, from, task)| (from, task))
}
