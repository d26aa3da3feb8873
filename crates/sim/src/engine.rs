//! The discrete-event engine: integer-nanosecond time, events ordered by (time, class,
//! sequence number) so that runs are deterministic, and the policy contract of
//! `hetsched_core::policy` called in the situations it documents.
//!
//! At equal times, run ends are handled before arrivals, and arrivals before ticks. Run
//! ends wait in a calendar queue ([`RunEnds`]); the one pending arrival and the one
//! pending tick wait beside it.
//! Arrivals are pulled lazily from an iterator and finished tasks are dropped, so memory
//! grows with live tasks, not with the length of the run (unless the recorder keeps
//! events).
//!
//! Time stops at [`HORIZON_NS`]: an arrival or a run end past it (absurd work, speeds
//! or bandwidths) is an input error, not an overflow. A run that reaches its event
//! limit stops with an input error too (a runaway run, e.g. nanosecond slices).
//!
//! A task no unit of the machine can run is rejected by the engine before the policy
//! sees it. A policy that breaks the contract (runs a task that is not queued where it
//! says, places a task on a unit without an implementation for it, moves a task running
//! on an accelerator between checkpoints) gets `Error::Runtime`.

use crate::run_ends::RunEnds;
use crate::speed::SpeedModel;
use hetsched_core::machine::{Machine, UnitType};
use hetsched_core::ns::round_u64;
use hetsched_core::policy::{
    CheckpointDecision, PickDecision, Policy, Running, Sample, SubmitDecision, TickAction, UnitId,
    View,
};
use hetsched_core::record::{Event, EventKind, Recorder};
use hetsched_core::task::{Affinity, Placement, QueueId, Task, TaskId};
use hetsched_core::task_store::{Staged, TaskStore};
use hetsched_core::unit_set::UnitSet;
use hetsched_core::{Error, Result};
use std::collections::VecDeque;

/// Engine settings that are not the policy's business.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    /// Time an accelerator checkpoint costs (state save), charged at each checkpoint.
    pub checkpoint_cost_ns: u64,
    /// Stop at this time even if tasks are left.
    pub max_time_ns: Option<u64>,
    /// Fail (an input error) when the run takes more engine events than this.
    pub max_events: Option<u64>,
}

/// The end of simulated time: 10^9 s (about 31 years), far from `u64::MAX` ns so that
/// sums of times within it cannot overflow.
pub const HORIZON_NS: u64 = 1_000_000_000 * 1_000_000_000;

/// What a run did, beyond its record.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunSummary {
    /// Engine events handled (arrivals, run ends, ticks).
    pub events: u64,
    pub end_ns: u64,
    pub submitted: u64,
    pub completed: u64,
    pub rejected: u64,
    /// Tasks not finished at the end (time limit, or a policy left them queued).
    pub unfinished: u64,
    /// Largest number of live tasks at once.
    pub peak_live: usize,
    /// Reference nanoseconds of work credited over all segments / of the tasks completed
    /// (equal when every task completed: work is conserved).
    pub work_done_ns: u64,
    pub work_completed_ns: u64,
}

/// The classes of events, in the order they are handled at equal times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Next {
    RunEnd,
    Arrival,
    Tick,
}

/// The current segment of a busy unit, and what the engine reads of its task on every
/// run end: one cache line, so that a slice that continues does not touch the task's
/// entry (about 1,000 live entries of 224 bytes do not stay in the L1 cache).
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
struct Segment {
    finishes: bool,
    /// The task store slot of the unit's task (saves the id look-up on every run end).
    slot: u32,
    /// The NUMA node whose shared bandwidth the task draws on, if any.
    bandwidth_node: Option<u32>,
    /// Sequence number of the run end scheduled for this segment (0: none, e.g. it was
    /// cut short by a tick migration).
    run_end: u64,
    compute_from_ns: u64,
    compute_ns: u64,
    /// Unit nanoseconds per reference nanosecond of work.
    factor: f64,
    /// When the policy's slice (or the checkpoint interval) ends; `NO_SLICE_END` if it
    /// does not.
    slice_end_ns: u64,
    /// The task's reference nanoseconds still to do: its entry's `remaining_ns` while it
    /// runs here, written back when it leaves the unit.
    remaining_ns: u64,
}

const NO_SLICE_END: u64 = u64::MAX;

impl Default for Segment {
    fn default() -> Self {
        Segment {
            finishes: false,
            slot: 0,
            bandwidth_node: None,
            run_end: 0,
            compute_from_ns: 0,
            compute_ns: 0,
            factor: 0.0,
            slice_end_ns: NO_SLICE_END,
            remaining_ns: 0,
        }
    }
}

struct Sim<'a, R: Recorder + ?Sized> {
    machine: &'a Machine,
    /// Each unit's type, by unit id: 1 KiB for 1,024 units stays in cache, where the
    /// machine's units are far apart.
    kinds: Vec<UnitType>,
    speed: SpeedModel,
    config: &'a Config,
    rec: &'a mut R,
    now: u64,
    run_ends: RunEnds,
    queues: Vec<VecDeque<TaskId>>,
    central: VecDeque<TaskId>,
    running: Vec<Option<Running>>,
    segs: Vec<Segment>,
    tasks: TaskStore,
    idle: UnitSet,
    /// Whether ticks take samples (the policy ticks and wants them): only then is busy
    /// time accounted.
    sampling: bool,
    /// Busy time per unit since the last sampled tick, and since when each has run.
    busy_ns: Vec<u64>,
    busy_from: Vec<u64>,
    /// The last tick that took samples.
    last_tick: u64,
    /// Reused for every tick's samples.
    samples: Vec<Sample>,
    summary: RunSummary,
    /// Memory bandwidth in bytes/s of each NUMA node by OS index (None: not shared).
    node_bandwidth: Vec<Option<f64>>,
    /// Bytes/s drawn from each node by the tasks running on CPUs now.
    node_demand: Vec<f64>,
}

/// Runs `policy` on `machine` over `arrivals` (non-decreasing arrival times), recording
/// every event into `rec`.
pub fn run<P, R, I>(
    machine: &Machine,
    policy: &mut P,
    arrivals: I,
    config: &Config,
    rec: &mut R,
) -> Result<RunSummary>
where
    P: Policy + ?Sized,
    R: Recorder + ?Sized,
    I: IntoIterator<Item = Task>,
{
    let n = machine.units.len();
    if n > RunEnds::MAX_UNITS {
        return Err(Error::input(format!(
            "machine {}: {n} units, the simulator handles at most {}",
            machine.name,
            RunEnds::MAX_UNITS
        )));
    }
    let mut sim = Sim {
        machine,
        kinds: machine.units.iter().map(|u| u.kind).collect(),
        speed: SpeedModel::new(machine),
        config,
        rec,
        now: 0,
        run_ends: RunEnds::default(),
        queues: vec![VecDeque::new(); n],
        central: VecDeque::new(),
        running: vec![None; n],
        segs: vec![Segment::default(); n],
        tasks: TaskStore::default(),
        idle: UnitSet::full(n),
        sampling: policy.tick_interval().is_some_and(|t| t > 0) && policy.wants_samples(),
        busy_ns: vec![0; n],
        busy_from: vec![0; n],
        last_tick: 0,
        samples: Vec::with_capacity(n),
        summary: RunSummary::default(),
        node_bandwidth: {
            let n = machine
                .numa_nodes
                .iter()
                .map(|n| n.os_index as usize + 1)
                .max()
                .unwrap_or(0);
            let mut bw = vec![None; n];
            for node in &machine.numa_nodes {
                bw[node.os_index as usize] = node.bandwidth_bytes_per_s.filter(|&b| b > 0.0);
            }
            bw
        },
        node_demand: vec![
            0.0;
            machine
                .numa_nodes
                .iter()
                .map(|n| n.os_index as usize + 1)
                .max()
                .unwrap_or(0)
        ],
    };
    let mut arrivals = arrivals.into_iter();
    // The next arrival waits in the task store, where it will live.
    let mut pending = arrivals.next().map(|t| sim.tasks.stage(t));
    let tick = policy.tick_interval().filter(|&t| t > 0);
    let mut next_tick = tick;
    loop {
        let mut earliest = sim.run_ends.next_ns().map(|t| (t, Next::RunEnd));
        for other in [
            pending.map(|p| (sim.tasks.staged(p).task.arrival_ns, Next::Arrival)),
            next_tick.map(|t| (t, Next::Tick)),
        ] {
            // Strictly earlier only: at equal times the earlier class goes first.
            if other.is_some_and(|(t, _)| earliest.is_none_or(|(e, _)| t < e)) {
                earliest = other;
            }
        }
        let Some((t, next)) = earliest else {
            break;
        };
        if config.max_time_ns.is_some_and(|m| t > m) {
            break;
        }
        if t > HORIZON_NS {
            return Err(sim.past_horizon(t, next, pending));
        }
        if config.max_events == Some(sim.summary.events) {
            return Err(Error::input(format!(
                "the run reached its event limit ({} events, at {:.3} s simulated, {} tasks live): stop it earlier with end.max_time_s, or raise end.max_events or --max-events",
                sim.summary.events,
                sim.now as f64 * 1e-9,
                sim.tasks.len()
            )));
        }
        if t < sim.now {
            return Err(Error::runtime(format!(
                "engine: event at {t} ns before now {} ns",
                sim.now
            )));
        }
        sim.now = t;
        sim.summary.events += 1;
        match next {
            Next::RunEnd => {
                let end = sim.run_ends.pop().expect("a run end is scheduled");
                sim.run_end(policy, end.unit, end.seq())?;
            }
            Next::Arrival => {
                let staged = pending.take().expect("an arrival event has a pending task");
                pending = arrivals.next().map(|t| sim.tasks.stage(t));
                if let Some(next) = pending {
                    let (next, task) =
                        (&sim.tasks.staged(next).task, &sim.tasks.staged(staged).task);
                    if next.arrival_ns < task.arrival_ns {
                        return Err(Error::input(format!(
                            "task {} arrives at {} ns, before task {} at {} ns: arrivals must be in time order",
                            next.id, next.arrival_ns, task.id, task.arrival_ns
                        )));
                    }
                }
                sim.arrive(policy, staged)?;
            }
            Next::Tick => {
                sim.tick(policy)?;
                next_tick = tick.filter(|_| !sim.tasks.is_empty() || pending.is_some());
                next_tick = next_tick.map(|i| t.saturating_add(i));
            }
        }
    }
    sim.summary.end_ns = sim.now;
    // Tasks never pulled (a generator past `max_time_ns`) are counted, not generated.
    let left = match arrivals.size_hint() {
        (lo, Some(hi)) if lo == hi => lo,
        _ => arrivals.count(),
    };
    sim.summary.unfinished = sim.tasks.len() as u64 + pending.is_some() as u64 + left as u64;
    let s = &sim.summary;
    if sim.tasks.is_empty() && s.work_done_ns != s.work_completed_ns {
        return Err(Error::runtime(format!(
            "engine invariant: work done {} ns != work of completed tasks {} ns",
            s.work_done_ns, s.work_completed_ns
        )));
    }
    Ok(sim.summary)
}

impl<R: Recorder + ?Sized> Sim<'_, R> {
    /// The error for an event at `t_ns`, past [`HORIZON_NS`].
    #[cold]
    fn past_horizon(&self, t_ns: u64, next: Next, pending: Option<Staged>) -> Error {
        let what = match (next, pending) {
            (Next::Arrival, Some(p)) => format!("task {} arrives", self.tasks.staged(p).task.id),
            (Next::RunEnd, _) => "a task would end".to_string(),
            _ => "a tick would come".to_string(),
        };
        Error::input(format!(
            "{what} at {:.3e} s, past the simulator's horizon of {:.0e} s: its arrival, work, speed, bandwidth or copy sizes are out of range",
            t_ns as f64 * 1e-9,
            HORIZON_NS as f64 * 1e-9
        ))
    }

    fn view(&self) -> View<'_> {
        View::new(
            self.now,
            self.machine,
            &self.queues,
            &self.central,
            &self.running,
            &self.tasks,
        )
    }

    #[inline]
    fn emit(&mut self, task: TaskId, kind: EventKind) {
        self.rec.record(Event {
            t_ns: self.now,
            task,
            kind,
        });
    }

    #[inline]
    fn unit_kind(&self, unit: UnitId) -> UnitType {
        self.kinds[unit as usize]
    }

    /// Whether `unit` exists and a task of this affinity can run on it.
    fn fits(&self, affinity: &Affinity, unit: UnitId) -> bool {
        (unit as usize) < self.kinds.len() && affinity.runs_on(self.unit_kind(unit))
    }

    fn misplaced(who: &str, task: TaskId, unit: UnitId) -> Error {
        Error::runtime(format!(
            "policy contract: {who} placed task {task} on unit {unit}, which does not exist or has no implementation for it"
        ))
    }

    fn check_unit(&self, who: &str, task: TaskId, unit: UnitId) -> Result<()> {
        if self.fits(&self.tasks[&task].task.affinity, unit) {
            Ok(())
        } else {
            Err(Self::misplaced(who, task, unit))
        }
    }

    fn arrive<P: Policy + ?Sized>(&mut self, policy: &mut P, staged: Staged) -> Result<()> {
        let task = &self.tasks.staged(staged).task;
        let id = task.id;
        if self.tasks.contains_key(&id) {
            return Err(Error::input(format!("task id {id} is used twice")));
        }
        self.summary.submitted += 1;
        let ideal = self.speed.ideal_ns(task);
        let (kind, affinity, remaining_ns) = (task.kind.clone(), task.affinity, task.work_ns());
        self.emit(
            id,
            EventKind::Submit {
                ideal_ns: ideal.unwrap_or(0),
                kind,
            },
        );
        if ideal.is_none() {
            self.tasks.unstage(staged);
            self.summary.rejected += 1;
            self.emit(
                id,
                EventKind::Reject {
                    reason: "no unit of this machine can run it".into(),
                },
            );
            return Ok(());
        }
        self.tasks.staged_mut(staged).remaining_ns = remaining_ns;
        self.tasks.admit(staged);
        self.summary.peak_live = self.summary.peak_live.max(self.tasks.len());
        match policy.submit(&self.view(), id) {
            SubmitDecision::Enqueue(q) => {
                if let QueueId::Unit(u) = q {
                    if !self.fits(&affinity, u) {
                        return Err(Self::misplaced("submit", id, u));
                    }
                }
                self.enqueue(id, q);
                self.wake(policy, q, id)
            }
            SubmitDecision::Reject(reason) => {
                self.tasks.discard(&id);
                self.summary.rejected += 1;
                self.emit(id, EventKind::Reject { reason });
                Ok(())
            }
        }
    }

    fn enqueue(&mut self, task: TaskId, q: QueueId) {
        match q {
            QueueId::Unit(u) => self.queues[u as usize].push_back(task),
            QueueId::Central => self.central.push_back(task),
        }
        self.tasks.get_mut(&task).unwrap().placement = Placement::Queued(q);
        self.emit(task, EventKind::Enqueue { queue: q });
    }

    /// The affinity of `task` if it is live and queued.
    fn queued_affinity(&self, task: TaskId) -> Option<Affinity> {
        self.tasks
            .get(&task)
            .filter(|e| matches!(e.placement, Placement::Queued(_)))
            .map(|e| e.task.affinity)
    }

    /// After `task` was queued on `q`: let `q`'s unit pick if idle, then offer the other
    /// idle units that could run it, in id order, until it has started.
    fn wake<P: Policy + ?Sized>(&mut self, policy: &mut P, q: QueueId, task: TaskId) -> Result<()> {
        if let QueueId::Unit(u) = q {
            if self.idle.contains(u) && self.pick(policy, u)? == Some(task) {
                return Ok(());
            }
        }
        // A pick starts one task, so `task` stays queued until a pick starts it.
        let Some(affinity) = self.queued_affinity(task) else {
            return Ok(());
        };
        let mut after = 0;
        while let Some(u) = self.idle.first_from(after) {
            after = u + 1;
            if affinity.runs_on(self.unit_kind(u)) && self.pick(policy, u)? == Some(task) {
                break;
            }
        }
        Ok(())
    }

    fn take_from(&mut self, q: QueueId, task: TaskId) -> bool {
        let queue = match q {
            QueueId::Unit(u) => &mut self.queues[u as usize],
            QueueId::Central => &mut self.central,
        };
        match queue.iter().position(|&t| t == task) {
            Some(0) => queue.pop_front().is_some(),
            Some(i) => queue.remove(i).is_some(),
            None => false,
        }
    }

    /// Asks idle unit `u` what to run; returns the task it started.
    fn pick<P: Policy + ?Sized>(&mut self, policy: &mut P, u: UnitId) -> Result<Option<TaskId>> {
        let decision = policy.pick(&self.view(), u);
        let (task, from) = match decision {
            PickDecision::Idle => {
                self.idle.insert(u);
                return Ok(None);
            }
            PickDecision::Run(t) => {
                if self.take_from(QueueId::Unit(u), t) {
                    (t, QueueId::Unit(u))
                } else if self.take_from(QueueId::Central, t) {
                    (t, QueueId::Central)
                } else {
                    return Err(Error::runtime(format!(
                        "policy contract: pick on unit {u} ran task {t}, which is neither in its queue nor in the central queue"
                    )));
                }
            }
            PickDecision::Steal { from, task } => {
                if from == u
                    || (from as usize) >= self.queues.len()
                    || !self.take_from(QueueId::Unit(from), task)
                {
                    return Err(Error::runtime(format!(
                        "policy contract: unit {u} stole task {task} from unit {from}, where it is not queued"
                    )));
                }
                (task, QueueId::Unit(from))
            }
        };
        self.start(policy, u, task, from)?;
        Ok(Some(task))
    }

    /// Starts `task`, which the policy picked from queue `from`, on idle unit `u`.
    fn start<P: Policy + ?Sized>(
        &mut self,
        policy: &mut P,
        u: UnitId,
        task: TaskId,
        from: QueueId,
    ) -> Result<()> {
        let kind = self.unit_kind(u);
        let slot = self.tasks.slot_of(&task).expect("a picked task is live");
        let e = self.tasks.at_slot_mut(slot);
        if !e.task.affinity.runs_on(kind) {
            return Err(Self::misplaced("pick", task, u));
        }
        e.placement = Placement::Running(u);
        e.runs += 1;
        let copy_in = self.speed.copy_in_ns(&e.task, u);
        let seg = &mut self.segs[u as usize];
        seg.slot = slot as u32;
        seg.bandwidth_node = Self::bandwidth_node(self.machine, &self.node_bandwidth, u, &e.task);
        seg.remaining_ns = e.remaining_ns;
        self.running[u as usize] = Some(Running {
            task,
            since_ns: self.now,
        });
        if self.sampling {
            self.busy_from[u as usize] = self.now;
        }
        self.idle.remove(u);
        self.emit(task, EventKind::Start { unit: u, from });
        let node = self.draw(u, task, 1.0);
        self.segment(policy, u, task, self.now.saturating_add(copy_in), None)?;
        if let Some(n) = node {
            self.replan_node(n, Some(u));
        }
        Ok(())
    }

    /// The NUMA node a task on CPU unit `u` draws memory bandwidth from, if shared.
    fn bandwidth_node(
        machine: &Machine,
        node_bandwidth: &[Option<f64>],
        u: UnitId,
        t: &Task,
    ) -> Option<u32> {
        let unit = &machine.units[u as usize];
        if t.mem_bandwidth <= 0.0 || t.memory_bound <= 0.0 || unit.kind != UnitType::Cpu {
            return None;
        }
        let node = t.numa_home.or(unit.numa_node)?;
        node_bandwidth
            .get(node as usize)
            .copied()
            .flatten()
            .map(|_| node)
    }

    /// Adds (`sign` 1) or removes (-1) the draw of `task`, running on `u`, on its node;
    /// returns the node.
    #[inline]
    fn draw(&mut self, u: UnitId, task: TaskId, sign: f64) -> Option<u32> {
        let node = self.segs[u as usize].bandwidth_node?;
        let d = &mut self.node_demand[node as usize];
        let entry = self.tasks.at_slot(self.segs[u as usize].slot as usize);
        debug_assert_eq!(entry.task.id, task);
        *d = (*d + sign * entry.task.mem_bandwidth).max(0.0);
        Some(node)
    }

    /// How much a node's shared bandwidth stretches memory-bound work now (≥ 1).
    #[inline]
    fn sigma(&self, node: Option<u32>) -> f64 {
        match node.and_then(|n| {
            Some((
                self.node_demand[n as usize],
                self.node_bandwidth[n as usize]?,
            ))
        }) {
            Some((demand, bw)) => (demand / bw).max(1.0),
            None => 1.0,
        }
    }

    /// A node's draw changed: the tasks computing on it continue at the new rate. Each
    /// is credited what it did so far and gets a new end (its slice end stays).
    fn replan_node(&mut self, node: u32, except: Option<UnitId>) {
        let sigma = self.sigma(Some(node));
        for v in 0..self.running.len() as UnitId {
            let Some(Running { task, .. }) = self.running[v as usize] else {
                continue;
            };
            if Some(v) == except || self.segs[v as usize].bandwidth_node != Some(node) {
                continue;
            }
            let seg = self.segs[v as usize];
            // Still copying in, or its segment ends right now anyway.
            if self.now < seg.compute_from_ns || seg.compute_from_ns + seg.compute_ns <= self.now {
                continue;
            }
            let elapsed = (self.now - seg.compute_from_ns).min(seg.compute_ns);
            let e = self.tasks.at_slot(seg.slot as usize);
            debug_assert_eq!(e.task.id, task);
            let done = ((elapsed as f64 / seg.factor).floor() as u64)
                .min(seg.remaining_ns.saturating_sub(1));
            let remaining = seg.remaining_ns - done;
            self.summary.work_done_ns += done;
            let factor = self.speed.ns_per_work_s_shared(&e.task, v, sigma) * 1e-9;
            let need = SpeedModel::compute_ns(remaining, factor);
            let (compute, finishes) = match seg.slice_end_ns {
                end if end != NO_SLICE_END && end < self.now.saturating_add(need) => {
                    (end.saturating_sub(self.now), false)
                }
                _ => (need, true),
            };
            let seg = &mut self.segs[v as usize];
            seg.remaining_ns = remaining;
            seg.compute_from_ns = self.now;
            seg.compute_ns = compute;
            seg.factor = factor;
            seg.finishes = finishes;
            // CPUs have no copy-out or checkpoint cost (see `segment`).
            seg.run_end = self.run_ends.push(self.now.saturating_add(compute), v);
        }
    }

    /// Schedules the next segment of `task` on `u`, computing from `from_ns` at `factor`
    /// unit ns per reference ns if known (else the speed model's).
    fn segment<P: Policy + ?Sized>(
        &mut self,
        policy: &mut P,
        u: UnitId,
        task: TaskId,
        from_ns: u64,
        factor: Option<f64>,
    ) -> Result<()> {
        let kind = self.unit_kind(u);
        let seg = self.segs[u as usize];
        // The task's entry, only where its meta info is needed: a CPU slice that
        // continues at a known rate reads the segment alone.
        let entry = || {
            let e = self.tasks.at_slot(seg.slot as usize);
            debug_assert_eq!(e.task.id, task);
            &e.task
        };
        let factor = factor.unwrap_or_else(|| {
            let sigma = self.sigma(seg.bandwidth_node);
            self.speed.ns_per_work_s_shared(entry(), u, sigma) * 1e-9
        });
        let need = SpeedModel::compute_ns(seg.remaining_ns, factor);
        let slice = if kind == UnitType::Cpu {
            policy.time_slice(&self.view(), u, task)
        } else {
            Some(entry().checkpoint_ns.get(kind)).filter(|&c| c > 0)
        }
        .map(|s| s.max(1));
        let (compute, finishes) = match slice {
            Some(s) if s < need => (s, false),
            _ => (need, true),
        };
        // CPUs copy nothing (see the speed model) and checkpoint for free.
        let tail = if kind == UnitType::Cpu {
            0
        } else if finishes {
            self.speed.copy_out_ns(entry(), u)
        } else {
            self.config.checkpoint_cost_ns
        };
        let seg = &mut self.segs[u as usize];
        seg.compute_from_ns = from_ns;
        seg.compute_ns = compute;
        seg.factor = factor;
        seg.finishes = finishes;
        seg.slice_end_ns = slice.map_or(NO_SLICE_END, |s| from_ns.saturating_add(s));
        let end = from_ns.saturating_add(compute).saturating_add(tail);
        seg.run_end = self.run_ends.push(end, u);
        Ok(())
    }

    /// Credits `compute_ns` of unit time on the current segment of `u` to its task (all
    /// of the rest when the segment finishes it).
    fn credit(&mut self, u: UnitId, task: TaskId, compute_ns: u64) {
        let seg = &mut self.segs[u as usize];
        debug_assert_eq!(self.running[u as usize].map(|r| r.task), Some(task));
        let done = if seg.finishes && compute_ns == seg.compute_ns {
            seg.remaining_ns
        } else {
            round_u64(compute_ns as f64 / seg.factor).min(seg.remaining_ns)
        };
        seg.remaining_ns -= done;
        self.summary.work_done_ns += done;
    }

    /// Frees unit `u` (its task leaves it).
    fn vacate(&mut self, u: UnitId, task: TaskId) {
        let node = self.draw(u, task, -1.0);
        let since = self.running[u as usize]
            .take()
            .map_or(self.now, |r| r.since_ns);
        if self.sampling {
            self.busy_ns[u as usize] += self.now - self.busy_from[u as usize].max(self.last_tick);
        }
        let seg = &mut self.segs[u as usize];
        seg.run_end = 0;
        let e = self.tasks.at_slot_mut(seg.slot as usize);
        debug_assert_eq!(e.task.id, task);
        e.run_ns += self.now - since;
        e.remaining_ns = seg.remaining_ns;
        if let Some(n) = node {
            self.replan_node(n, None);
        }
    }

    /// Handles run end `seq` on unit `u`.
    fn run_end<P: Policy + ?Sized>(&mut self, policy: &mut P, u: UnitId, seq: u64) -> Result<()> {
        let seg = self.segs[u as usize];
        if seg.run_end != seq {
            return Ok(()); // the segment was cut short or re-planned
        }
        let Some(Running { task, .. }) = self.running[u as usize] else {
            return Err(Error::runtime(format!("engine: run end on idle unit {u}")));
        };
        self.credit(u, task, seg.compute_ns);
        if seg.finishes {
            self.vacate(u, task);
            self.summary.completed += 1;
            self.summary.work_completed_ns += self.tasks.at_slot(seg.slot as usize).task.work_ns();
            self.emit(task, EventKind::Complete { unit: u });
            // `complete` still sees the task; then it is gone.
            policy.complete(&self.view(), task, u);
            self.tasks.discard(&task);
            return self.pick(policy, u).map(|_| ());
        }
        match policy.checkpoint(&self.view(), task, u) {
            CheckpointDecision::Continue => {
                // Same task on the same unit: the rate holds unless bandwidth is shared.
                let factor = seg.bandwidth_node.is_none().then_some(seg.factor);
                self.segment(policy, u, task, self.now, factor)
            }
            CheckpointDecision::Yield => {
                self.vacate(u, task);
                self.emit(task, EventKind::Stop { unit: u });
                self.enqueue(task, QueueId::Unit(u));
                self.pick(policy, u)?;
                self.wake(policy, QueueId::Unit(u), task)
            }
            CheckpointDecision::Migrate(to) => {
                self.check_unit("checkpoint", task, to)?;
                self.vacate(u, task);
                self.emit(task, EventKind::Stop { unit: u });
                self.migrate(task, Placement::Running(u), to);
                self.pick(policy, u)?;
                self.wake(policy, QueueId::Unit(to), task)
            }
        }
    }

    fn migrate(&mut self, task: TaskId, from: Placement, to: UnitId) {
        self.emit(task, EventKind::Migrate { from, to });
        self.queues[to as usize].push_back(task);
        self.tasks.get_mut(&task).unwrap().placement = Placement::Queued(QueueId::Unit(to));
    }

    fn tick<P: Policy + ?Sized>(&mut self, policy: &mut P) -> Result<()> {
        let mut samples = std::mem::take(&mut self.samples);
        samples.clear();
        if policy.wants_samples() {
            let (now, last_tick) = (self.now, self.last_tick);
            let units = self.running.iter().zip(&self.busy_ns).zip(&self.busy_from);
            samples.extend(units.zip(&self.segs).enumerate().map(
                |(u, (((running, &busy), &from), seg))| Sample {
                    unit: u as UnitId,
                    task: running.map(|r| r.task),
                    busy_ns: busy + running.map_or(0, |_| now - from.max(last_tick)),
                    memory_bound:
                        running.map(|_| self.tasks.at_slot(seg.slot as usize).task.memory_bound),
                    ..Sample::default()
                },
            ));
            self.busy_ns.iter_mut().for_each(|b| *b = 0);
            self.last_tick = self.now;
        }
        let actions = policy.tick(&self.view(), &samples);
        self.samples = samples;
        for TickAction::Migrate { task, to } in actions {
            let Some(entry) = self.tasks.get(&task) else {
                return Err(Error::runtime(format!(
                    "policy contract: tick migrates task {task}, which is not live"
                )));
            };
            let placement = entry.placement;
            self.check_unit("tick", task, to)?;
            match placement {
                Placement::Queued(q) => {
                    if q == QueueId::Unit(to) {
                        continue;
                    }
                    self.take_from(q, task);
                    self.migrate(task, placement, to);
                    self.wake(policy, QueueId::Unit(to), task)?;
                }
                Placement::Running(u) => {
                    if u == to {
                        continue;
                    }
                    if self.unit_kind(u) != UnitType::Cpu {
                        return Err(Error::runtime(format!(
                            "policy contract: tick migrates task {task} running on accelerator unit {u}; accelerators stop only at checkpoints"
                        )));
                    }
                    let seg = self.segs[u as usize];
                    let done = self
                        .now
                        .saturating_sub(seg.compute_from_ns)
                        .min(seg.compute_ns);
                    self.credit(u, task, done);
                    self.vacate(u, task);
                    self.emit(task, EventKind::Stop { unit: u });
                    self.migrate(task, placement, to);
                    self.pick(policy, u)?;
                    self.wake(policy, QueueId::Unit(to), task)?;
                }
            }
        }
        Ok(())
    }
}
