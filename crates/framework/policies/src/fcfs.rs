//! `fcfs`: first come, first served through the engine's one central queue: a simple
//! baseline that models no particular operating system or runtime (the order a batch
//! system without priorities would run in).
//!
//! Every task waits in the central queue; an idle unit runs the oldest task it has an
//! implementation for (so a GPU-only task at the head does not block CPUs). A newly
//! arrived task goes to the lowest-id idle unit that can run it (the engine offers idle
//! units in id order). Tasks run to completion.
//!
//! This is also StarPU 1.3's `eager` (`src/sched_policies/eager_central_policy.c`: one
//! FIFO, a worker pops the first task it can execute, no prefetch), registered under
//! that name by `eager.rs` so that a StarPU user finds it.

use hetsched_core::policy::{PickDecision, Policy, SubmitDecision, UnitId, View};
use hetsched_core::task::{QueueId, TaskId};

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "fcfs",
    about: "simple baseline: first come, first served from one central queue",
    test_specs: &["fcfs"],
    build: |_, _, _| Ok(Fcfs::named("fcfs").into()),
};

pub struct Fcfs {
    name: &'static str,
}

impl Fcfs {
    /// The policy under a registry name (`fcfs`, `eager`).
    pub fn named(name: &'static str) -> Fcfs {
        Fcfs { name }
    }
}

// Its calls forced inline into the engine compiled for this type, as cfs's (see there).
impl Policy for Fcfs {
    fn name(&self) -> &str {
        self.name
    }
    #[inline(always)]
    fn submit(&mut self, _view: &View, _task: TaskId) -> SubmitDecision {
        SubmitDecision::Enqueue(QueueId::Central)
    }
    #[inline(always)]
    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        let kind = view.unit_kind(unit);
        let central = view.central();
        // The head first, without an iterator (most picks end there: the queue is
        // empty or its head runs here; the scan's set-up was half of this call).
        let first = match central.entry(0) {
            None => return PickDecision::Idle,
            Some((_, e)) if e.task.affinity.runs_on(kind) => Some(e),
            Some(_) => central
                .entries()
                .skip(1)
                .map(|(_, e)| e)
                .find(|e| e.task.affinity.runs_on(kind)),
        };
        match first {
            Some(e) => PickDecision::Run(e.task.id),
            None => PickDecision::Idle,
        }
    }
}
