//! `io-affinity`: place an I/O task next to its device (Akram et al., CAOS 2012). The
//! paper proposes no scheduler: it measures placements pinned by hand against each
//! other, and this policy is the placement it argues for, made by a scheduler; `cfs`
//! (the Linux of the paper's time, which ignores the device's node) is its baseline.
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
//! last resort (and not from an idle unit's queue: that unit runs it), so no unit idles
//! while work waits. Live, the daemon's grant of a CPU on that node becomes the
//! program's CPU set and memory binding (`hetsched run --device`).
//!
//! Placement at submission is not enough: compute tasks that arrived first can hold the
//! device's node, and an I/O task balanced elsewhere would then stay remote for its whole
//! run. So an I/O task running away from its device's node gets a time slice
//! (`slice_ms`, default 10), and at each slice end it moves to an idle unit of the
//! device's node if one has freed (as `numa-amp` moves tasks at their checkpoints);
//! tasks on their node, and other tasks, run to completion.

use hetsched_core::policy::{
    CheckpointDecision, PickDecision, Policy, SubmitDecision, UnitId, View,
};
use hetsched_core::task::{QueueId, TaskId};

use crate::params::ms_to_ns;
use crate::ws::WorkStealing;

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "io-affinity",
    about: "Akram et al. (CAOS 2012)'s placement: I/O tasks on their device's NUMA node when its load allows, else least-loaded",
    test_specs: &["io-affinity", "io-affinity:slack=0,slice_ms=1"],
    build: |spec, p, _| {
        let slack = p.u64_upto(
            "slack",
            "extra tasks the device node's least-loaded unit may hold over the least-loaded unit before an I/O task goes elsewhere",
            2,
            1 << 20,
        )? as u32;
        let slice_ms = p.f64_in(
            "slice_ms",
            "time slice of an I/O task running away from its device's node, after which it moves there if a unit has freed, ms",
            10.0,
            0.1..=60_000.0,
            false,
        )?;
        Ok(IoAffinity {
            name: spec.to_string(),
            slack,
            slice_ns: ms_to_ns(slice_ms),
            ws: WorkStealing::default(),
        }
        .into())
    },
};

pub struct IoAffinity {
    /// The spec it was built from.
    name: String,
    slack: u32,
    slice_ns: u64,
    /// Its load counts and steal bookkeeping: `io-affinity` is `ws` with a preference
    /// for the device's node.
    ws: WorkStealing,
}

/// The NUMA node of the task's I/O device, if it names one the machine places.
fn device_node(view: &View, task: TaskId) -> Option<u32> {
    let d = view.task(task).io_device?;
    view.machine().io_devices.get(d as usize)?.numa_node
}

/// The node of `task`'s device, when `task` runs on `unit` away from it.
fn away(view: &View, task: TaskId, unit: UnitId) -> Option<u32> {
    device_node(view, task).filter(|&n| view.unit(unit).numa_node != Some(n))
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
        if let Some(t) = view.queue(unit).front() {
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
            let runnable = || q.iter().rev().filter(|&t| view.can_run(t, unit));
            let free = runnable().find(|&t| device_node(view, t).is_none_or(|n| Some(n) == here));
            // A bound task waiting for an idle unit (one a checkpoint moved it to) is
            // left to that unit.
            let busy = view.running(v.id).is_some();
            let (bound, t) = match (free, runnable().next()) {
                (Some(t), _) => (false, t),
                (None, Some(t)) if busy => (true, t),
                _ => continue,
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

    fn time_slice(&mut self, view: &View, unit: UnitId, task: TaskId) -> Option<u64> {
        away(view, task, unit).map(|_| self.slice_ns)
    }

    fn checkpoint(&mut self, view: &View, task: TaskId, unit: UnitId) -> CheckpointDecision {
        let Some(node) = away(view, task, unit) else {
            return CheckpointDecision::Continue;
        };
        let free = view.units().iter().find(|v| {
            v.numa_node == Some(node)
                && view.running(v.id).is_none()
                && view.queue(v.id).is_empty()
                && view.can_run(task, v.id)
        });
        match free {
            Some(v) => {
                let loads = self.ws.loads(view);
                loads.dec(unit);
                loads.inc(v.id);
                CheckpointDecision::Migrate(v.id)
            }
            None => CheckpointDecision::Continue,
        }
    }

    fn complete(&mut self, view: &View, task: TaskId, unit: UnitId) {
        self.ws.complete(view, task, unit);
    }
}
