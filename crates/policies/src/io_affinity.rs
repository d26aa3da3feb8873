//! `io-affinity`: place an I/O task next to its device (Akram et al., CAOS 2012).
//!
//! Akram et al. measure that a transfer between a device and a buffer on another NUMA
//! node, and the use of the data by a CPU on another node than the buffer, cost
//! throughput and cycles per I/O; their remedy is placement: thread and buffers on the
//! device's node. This policy does that with the machine's load in view. A task that
//! names an I/O device ([`Task::io_device`](hetsched_core::task::Task)) whose NUMA node
//! is known goes to the least-loaded unit of that node, unless that unit has more than
//! `slack` tasks more than the least-loaded unit anywhere ("when capacity allows"), in
//! which case it goes there (balance). Other tasks go to the least-loaded unit, as in
//! `ws`. An idle unit runs its own queue, else steals from the longest queue, taking
//! first a task that is not bound to another node's device, and a bound one only as a
//! last resort, so no unit idles while work waits. Live, the daemon's grant of a CPU on
//! that node becomes the program's CPU set and memory binding (`hetsched run --device`).

use hetsched_core::policy::{PickDecision, Policy, SubmitDecision, UnitId, View};
use hetsched_core::task::{QueueId, TaskId};

use crate::ws::WorkStealing;

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "io-affinity",
    about: "I/O tasks on their device's NUMA node when its load allows (Akram et al.), else least-loaded",
    test_specs: &["io-affinity", "io-affinity:slack=0"],
    build: |spec, p, _| {
        let slack = p.u64_upto(
            "slack",
            "extra tasks the device node's least-loaded unit may hold over the least-loaded unit before an I/O task goes elsewhere",
            2,
            1 << 20,
        )? as u32;
        Ok(Box::new(IoAffinity {
            name: spec.to_string(),
            slack,
            ws: WorkStealing::default(),
        }))
    },
};

pub struct IoAffinity {
    /// The spec it was built from.
    name: String,
    slack: u32,
    /// Its load counts and steal bookkeeping: `io-affinity` is `ws` with a preference
    /// for the device's node.
    ws: WorkStealing,
}

/// The NUMA node of the task's I/O device, if it names one the machine places.
fn device_node(view: &View, task: TaskId) -> Option<u32> {
    let d = view.task(task).io_device?;
    view.machine().io_devices.get(d as usize)?.numa_node
}

impl Policy for IoAffinity {
    fn name(&self) -> &str {
        &self.name
    }

    fn submit(&mut self, view: &View, task: TaskId) -> SubmitDecision {
        let slack = self.slack;
        let node = device_node(view, task);
        let loads = self.ws.loads(view);
        let Some(anywhere) = loads.least(&view.task(task).affinity) else {
            return SubmitDecision::Reject("no unit can run it".into());
        };
        let near = node.and_then(|n| {
            view.units()
                .iter()
                .filter(|u| u.numa_node == Some(n) && view.can_run(task, u.id))
                .min_by_key(|u| (loads.load(u.id), u.id))
                .map(|u| u.id)
        });
        let unit = match near {
            Some(u) if loads.load(u) <= loads.load(anywhere) + slack => u,
            _ => anywhere,
        };
        loads.inc(unit);
        SubmitDecision::Enqueue(QueueId::Unit(unit))
    }

    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        if let Some(&t) = view.queue(unit).front() {
            return PickDecision::Run(t);
        }
        let here = view.unit(unit).numa_node;
        // (bound elsewhere, queue length) ranks victims: unbound first, then longest.
        let mut best: Option<(bool, usize, UnitId, TaskId)> = None;
        for v in view.units() {
            let q = view.queue(v.id);
            if v.id == unit || q.is_empty() {
                continue;
            }
            let runnable = || q.iter().rev().filter(|&&t| view.can_run(t, unit));
            let free = runnable().find(|&&t| device_node(view, t).is_none_or(|n| Some(n) == here));
            let (bound, t) = match free {
                Some(&t) => (false, t),
                None => match runnable().next() {
                    Some(&t) => (true, t),
                    None => continue,
                },
            };
            let better = best.is_none_or(|(b, len, _, _)| {
                (bound, std::cmp::Reverse(q.len())) < (b, std::cmp::Reverse(len))
            });
            if better {
                best = Some((bound, q.len(), v.id, t));
            }
        }
        match best {
            Some((_, _, from, task)) => self.ws.steal(view, unit, from, task),
            None => PickDecision::Idle,
        }
    }

    fn complete(&mut self, view: &View, task: TaskId, unit: UnitId) {
        self.ws.complete(view, task, unit);
    }
}
