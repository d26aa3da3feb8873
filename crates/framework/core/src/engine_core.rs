//! The engine core: the one copy of the scheduling state and the one schedule of policy
//! calls, shared by the simulator (`hetsched-sim`) and the live daemon (`hetsched-live`).
//!
//! hetsched promises that a policy validated in the simulator is the policy that runs
//! live. So both engines keep their queue state here and call the policy only from here:
//! the same situations cause the same calls, every answer is checked against the
//! contract by the same code ([`ContractError`]), and the run record is written in one
//! place. It is a module of `hetsched-core` rather than a crate of its own because it is
//! the contract's other half: [`View`] reads exactly this state.
//!
//! What differs between the engines stays in them, behind [`Host`]: the simulator's
//! clock, run segments and speed model; the daemon's clients, grants sent as replies,
//! asynchronous releases (a unit told to give its task up stays out of use until the
//! holder frees it: [`Host::RELEASES_AT_ONCE`], [`EngineCore::released`]), offline units
//! and control API.
//!
//! The state: per unit its queue, what runs there, whether it is online, pickable (idle
//! and online, its last pick said `Idle`) or releasing; the central queue; the live tasks
//! ([`TaskStore`]); busy time since the last sampled tick; the tick clock; in a run of a
//! task graph, its dependencies and data ([`crate::dataflow`]: a completion releases
//! successors, a task queued on a unit prefetches its inputs there).
//!
//! The schedule (see also `policy.rs`):
//! - [`arrive`](EngineCore::arrive): `Submit` recorded; a task no online unit can run is
//!   refused; else `submit`, the task is enqueued, and `wake`: the queue's unit picks if
//!   idle, then the other idle units that could run the task, in id order, until it has
//!   started;
//! - [`complete`](EngineCore::complete): the unit is vacated, `complete`, the unit picks;
//! - [`checkpoint`](EngineCore::checkpoint): `Continue` (the engine plans the next
//!   stretch), `Yield` (back to the tail of the unit's queue) or `Migrate(v)` (to the tail
//!   of `v`'s); after a release the freed unit picks, then the moved task is offered
//!   as a new arrival is;
//! - [`tick`](EngineCore::tick): due every `tick_interval` on the grid of its multiples
//!   while tasks are live (and once more after the last one ended); samples are built in
//!   `samples` from the engine's own view, then the host measures what it can
//!   ([`Host::measure`]: live, the task's process); each migration goes through the same
//!   checks and steps as a checkpoint's.
//!
//! Hot paths (the simulator handles ten million events per CPU second) are inlined and
//! allocation-free; the rare ones (refusals, units added) are out of line.

use crate::machine::{Machine, Unit, UnitType};
use crate::perf_model::{Arch, PerfModels};
use crate::policy::{
    CheckpointDecision, PickDecision, Policy, Queue, Running, Sample, Sources, SubmitDecision,
    TickAction, UnitId, View,
};
use crate::record::{Event, EventKind};
use crate::task::{Affinity, Placement, QueueId, TaskId};
use crate::task_store::{Staged, TaskStore};
use crate::unit_set::UnitSet;
use std::collections::VecDeque;
use std::sync::Arc;

/// A policy answer that breaks the contract. The simulator stops with it; the daemon
/// refuses the answer, logs it and carries on ([`Host::refuse`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    #[error("policy contract: {who} placed task {task} on unit {unit}, which does not exist, is offline or has no implementation for it")]
    Misplaced {
        who: &'static str,
        task: TaskId,
        unit: UnitId,
    },
    #[error("policy contract: pick on unit {unit} ran task {task}, which is neither in its queue nor in the central queue")]
    NotQueued { unit: UnitId, task: TaskId },
    #[error(
        "policy contract: unit {unit} stole task {task} from unit {from}, where it is not queued"
    )]
    BadSteal {
        unit: UnitId,
        from: UnitId,
        task: TaskId,
    },
    #[error("policy contract: tick migrates task {task}, which is not live")]
    NotLive { task: TaskId },
    #[error("policy contract: tick migrates task {task} running on accelerator unit {unit}; accelerators stop only at checkpoints")]
    Accelerator { task: TaskId, unit: UnitId },
}

impl From<ContractError> for crate::Error {
    fn from(e: ContractError) -> Self {
        crate::Error::runtime(e)
    }
}

/// What happens to a task's memory as it starts on a CPU ([`EngineCore::follow_memory`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryMove {
    /// It stays where it is (or the unit has no NUMA node).
    Stays,
    /// A task without a home: its pages are placed on this node as it touches them.
    FirstTouch(u32),
    /// The policy moves its pages to this node (from another one).
    Migrates(u32),
}

/// Where a task that gives its unit up goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requeue {
    /// To the tail of this queue (a yield).
    Queue(QueueId),
    /// To the tail of this unit's queue, recorded as a migration.
    Migrate(UnitId),
}

/// What became of an arriving task.
#[derive(Clone, Debug, PartialEq)]
pub enum Arrival {
    /// It waits in (or already runs from) this queue.
    Queued(QueueId),
    /// No online unit has an implementation for it.
    Unrunnable,
    /// The policy rejected it, or its answer was refused (the reason says which).
    Rejected(String),
}

/// What an engine does around the core's schedule.
pub trait Host {
    /// Whether a unit whose task must leave (yield, migration) is free at once (the
    /// simulator), or only once its holder frees it ([`EngineCore::released`], the
    /// daemon): until then it is neither running nor pickable.
    const RELEASES_AT_ONCE: bool;
    /// Receives the run record's events.
    fn record(&mut self, event: Event);
    /// Receives a `Submit` event, its task type lent (see
    /// [`Recorder::submit`](crate::record::Recorder::submit)).
    #[inline(always)]
    fn submit(&mut self, t_ns: u64, task: TaskId, ideal_ns: u64, kind: &Arc<str>) {
        self.record(Event::submit(t_ns, task, ideal_ns, kind));
    }
    /// A policy answer broke the contract: `Err` stops the schedule (the simulator);
    /// `Ok` refuses the answer and carries on as if the policy had not made it.
    fn refuse(&mut self, violation: ContractError) -> Result<(), ContractError>;
    /// `task` (store slot `slot`) just started on `unit` (its `Start` is recorded).
    fn started<P: Policy + ?Sized>(
        &mut self,
        core: &mut EngineCore,
        policy: &mut P,
        unit: UnitId,
        task: TaskId,
        slot: usize,
    ) -> Result<(), ContractError>;
    /// `task` left `unit` (it no longer runs there; its time is accounted); `ends`: it
    /// will not run again (it completed, or is withdrawn).
    fn left(&mut self, core: &mut EngineCore, unit: UnitId, task: TaskId, ends: bool);
    /// A tick moves `task`, running on CPU `unit`, off it now.
    fn preempting(&mut self, _core: &mut EngineCore, _unit: UnitId, _task: TaskId) {}
    /// `task` now waits in `queue`.
    #[inline]
    fn queued(&mut self, _core: &EngineCore, _task: TaskId, _queue: QueueId) {}
    /// `task` must give `unit` up; it is released by [`EngineCore::released`] (only
    /// when `RELEASES_AT_ONCE` is false).
    fn releasing(&mut self, _core: &EngineCore, _unit: UnitId, _task: TaskId) {}
    /// `task` (store slot `slot`) ends (completed, rejected or withdrawn); its entry is
    /// still live.
    #[inline]
    fn ended(&mut self, _core: &EngineCore, _task: TaskId, _slot: usize) {}
    /// The memory-bound fraction of `task` running on `unit`, for its sample.
    fn memory_bound(&self, _core: &EngineCore, _unit: UnitId, _task: TaskId) -> Option<f64> {
        None
    }
    /// Fills what the host measures of a running task's sample (live: its process's CPU
    /// time, run-queue wait and counters, with their sources); where it measures
    /// nothing, the engine's own view stands.
    fn measure(&mut self, _core: &EngineCore, _sample: &mut Sample) {}
}

/// The shared state and schedule of an engine (see the module documentation).
pub struct EngineCore {
    /// The time, the machine, the queues, what runs where and the live tasks: what a
    /// policy reads, handed to it by reference.
    view: View,
    /// The store slot of each unit's running task (saves a look-up when it leaves).
    running_slot: Vec<u32>,
    /// Idle online units that may be asked to pick (their last pick said `Idle`).
    idle: UnitSet,
    online: UnitSet,
    /// Online units per type.
    online_kinds: [u32; 4],
    /// A releasing unit's task and where it goes once freed.
    releasing: Vec<Option<(TaskId, Requeue)>>,
    /// Whether ticks take samples (the policy ticks and wants them): only then is busy
    /// time accounted.
    sampling: bool,
    /// Busy time per unit since the last sampled tick.
    busy_ns: Vec<u64>,
    last_tick: u64,
    /// Reused for every tick's samples.
    samples: Vec<Sample>,
    tick_interval: Option<u64>,
    next_tick: Option<u64>,
    decisions: u64,
    /// The policy reads performance models: completed runs are recorded into them.
    learning: bool,
}

impl EngineCore {
    /// The core of an engine running `policy` on `machine`, all units online and idle.
    pub fn new<P: Policy + ?Sized>(machine: Machine, policy: &P) -> EngineCore {
        let n = machine.units.len();
        let kinds: Vec<UnitType> = machine.units.iter().map(|u| u.kind).collect();
        let mut online_kinds = [0; 4];
        kinds.iter().for_each(|&k| online_kinds[k as usize] += 1);
        let tick_interval = policy.tick_interval().filter(|&t| t > 0);
        EngineCore {
            view: View {
                now_ns: 0,
                machine,
                queues: vec![VecDeque::new(); n],
                central: VecDeque::new(),
                running: vec![None; n],
                tasks: TaskStore::default(),
                kinds,
                models: PerfModels::default(),
                graph: None,
            },
            running_slot: vec![0; n],
            idle: UnitSet::full(n),
            online: UnitSet::full(n),
            online_kinds,
            releasing: vec![None; n],
            sampling: tick_interval.is_some() && policy.wants_samples(),
            busy_ns: vec![0; n],
            last_tick: 0,
            samples: Vec::with_capacity(n),
            tick_interval,
            next_tick: None,
            decisions: 0,
            learning: policy.wants_models(),
        }
    }

    /// Starts from models kept from earlier runs (before the first task).
    pub fn set_models(&mut self, models: PerfModels) {
        self.view.models = models;
    }

    /// Runs a task graph: its tasks arrive as their predecessors complete
    /// ([`Self::pop_ready`]), and their data moves between memory nodes
    /// ([`crate::dataflow`]). Before the graph's first task; one graph at a time.
    pub fn set_graph(&mut self, graph: crate::dataflow::GraphRun) {
        self.view.graph = Some(Box::new(graph));
    }

    /// Ends the graph under way (live: it finished, or its owner left): its tasks still
    /// queued or running go on as independent tasks, and none of its tasks is released
    /// any more.
    pub fn take_graph(&mut self) -> Option<crate::dataflow::GraphRun> {
        self.view.graph.take().map(|g| *g)
    }

    /// The graph under way, if any.
    pub fn graph(&self) -> Option<&crate::dataflow::GraphRun> {
        self.view.graph.as_deref()
    }

    /// The graph index of the next graph task whose predecessors have all completed,
    /// to arrive now.
    #[inline]
    pub fn pop_ready(&mut self) -> Option<u32> {
        self.view.graph.as_deref_mut()?.pop_ready()
    }

    /// `task` starts on `unit` now: in a graph, the copies its inputs lack there are
    /// issued; returns how long it waits for them, ns (0 outside a graph).
    #[inline]
    pub fn fetch_inputs(&mut self, task: TaskId, unit: UnitId) -> u64 {
        let now = self.view.now_ns;
        match self.view.graph.as_deref_mut() {
            Some(g) => g.start(task, unit, now),
            None => 0,
        }
    }

    /// The performance models so far: those it started from, and what it observed if
    /// the policy wants models ([`Policy::wants_models`]).
    pub fn models(&self) -> &PerfModels {
        &self.view.models
    }

    /// The policy's view of this state at the current time.
    #[inline]
    pub fn view(&self) -> &View {
        &self.view
    }

    #[inline]
    pub fn now(&self) -> u64 {
        self.view.now_ns
    }

    /// Sets the engine's time (never backwards).
    #[inline]
    pub fn set_now(&mut self, now_ns: u64) {
        self.view.now_ns = self.view.now_ns.max(now_ns);
    }

    #[inline]
    pub fn machine(&self) -> &Machine {
        &self.view.machine
    }

    /// The machine, to alter a unit's attributes (not its type or id).
    pub fn machine_mut(&mut self) -> &mut Machine {
        &mut self.view.machine
    }

    #[inline]
    pub fn unit_kind(&self, unit: UnitId) -> UnitType {
        self.view.kinds[unit as usize]
    }

    #[inline]
    pub fn units(&self) -> usize {
        self.view.kinds.len()
    }

    #[inline]
    pub fn tasks(&self) -> &TaskStore {
        &self.view.tasks
    }

    /// The task store, for what the engine keeps in its entries beside the core.
    #[inline]
    pub fn tasks_mut(&mut self) -> &mut TaskStore {
        &mut self.view.tasks
    }

    #[inline]
    pub fn running(&self, unit: UnitId) -> Option<Running> {
        self.view.running[unit as usize]
    }

    /// What runs on each unit, by unit id.
    #[inline]
    pub fn running_all(&self) -> &[Option<Running>] {
        &self.view.running
    }

    pub fn queue(&self, unit: UnitId) -> Queue<'_> {
        self.view.queue(unit)
    }

    pub fn is_online(&self, unit: UnitId) -> bool {
        (unit as usize) < self.view.kinds.len() && self.online.contains(unit)
    }

    /// Whether `unit` is idle, online and not releasing: a pick may be asked of it.
    pub fn is_idle(&self, unit: UnitId) -> bool {
        (unit as usize) < self.view.kinds.len() && self.idle.contains(unit)
    }

    /// The task a releasing unit waits for and where it goes.
    pub fn releasing(&self, unit: UnitId) -> Option<(TaskId, Requeue)> {
        self.releasing.get(unit as usize).copied().flatten()
    }

    /// Policy decisions asked so far (submits, picks, checkpoints).
    pub fn decisions(&self) -> u64 {
        self.decisions
    }

    /// When the next tick is due, if one is.
    #[inline]
    pub fn next_tick(&self) -> Option<u64> {
        self.next_tick
    }

    #[inline(always)]
    fn emit<H: Host + ?Sized>(&self, host: &mut H, task: TaskId, kind: EventKind) {
        host.record(Event {
            t_ns: self.view.now_ns,
            task,
            kind,
        });
    }

    /// Whether `unit` exists, is online, and a task of this affinity can run on it.
    #[inline]
    fn fits(&self, affinity: &Affinity, unit: UnitId) -> bool {
        (unit as usize) < self.view.kinds.len()
            && self.online.contains(unit)
            && affinity.runs_on(self.view.kinds[unit as usize])
    }

    /// Whether some online unit can run a task of this affinity.
    #[inline]
    pub fn runnable(&self, affinity: &Affinity) -> bool {
        UnitType::ALL
            .iter()
            .any(|&k| self.online_kinds[k as usize] > 0 && affinity.runs_on(k))
    }

    /// A staged task arrives now (`ideal_ns`: its time alone on the best unit, or 0 when
    /// unknown): it is recorded, admitted and placed by the policy, and idle units are
    /// offered it.
    #[inline]
    pub fn arrive<P: Policy + ?Sized, H: Host + ?Sized>(
        &mut self,
        policy: &mut P,
        host: &mut H,
        staged: Staged,
        ideal_ns: u64,
    ) -> Result<Arrival, ContractError> {
        let task = &self.view.tasks.staged(staged).task;
        let (id, affinity) = (task.id, task.affinity);
        host.submit(self.view.now_ns, id, ideal_ns, &task.kind);
        if !self.runnable(&affinity) {
            self.view.tasks.unstage(staged);
            self.emit(
                host,
                id,
                EventKind::Reject {
                    reason: "no unit of this machine can run it".into(),
                },
            );
            return Ok(Arrival::Unrunnable);
        }
        self.view.tasks.admit(staged);
        if self.next_tick.is_none() {
            if let Some(i) = self.tick_interval {
                // The first multiple of the interval not before now (after 0).
                self.next_tick = Some(self.view.now_ns.div_ceil(i).max(1).saturating_mul(i));
            }
        }
        self.decisions += 1;
        match policy.submit(self.view(), id) {
            SubmitDecision::Enqueue(q) => {
                if let QueueId::Unit(u) = q {
                    if !self.fits(&affinity, u) {
                        let v = ContractError::Misplaced {
                            who: "submit",
                            task: id,
                            unit: u,
                        };
                        let reason = v.to_string();
                        host.refuse(v)?;
                        return Ok(self.reject(host, id, staged.slot(), reason));
                    }
                }
                self.enqueue(host, id, staged.slot(), q);
                self.wake(policy, host, q, id, staged.slot())?;
                Ok(Arrival::Queued(q))
            }
            SubmitDecision::Reject(reason) => Ok(self.reject(host, id, staged.slot(), reason)),
        }
    }

    /// An admitted task (store slot `slot`) leaves at once, rejected.
    fn reject<H: Host + ?Sized>(
        &mut self,
        host: &mut H,
        id: TaskId,
        slot: usize,
        reason: String,
    ) -> Arrival {
        host.ended(self, id, slot);
        self.view.tasks.discard(&id);
        self.emit(
            host,
            id,
            EventKind::Reject {
                reason: reason.clone(),
            },
        );
        Arrival::Rejected(reason)
    }

    /// Asks the policy again where a live task that waits nowhere should wait (the
    /// daemon, when its unit goes away); a refused or rejected answer is the central
    /// queue. The task is not enqueued.
    pub fn resubmit<P: Policy + ?Sized, H: Host + ?Sized>(
        &mut self,
        policy: &mut P,
        host: &mut H,
        task: TaskId,
    ) -> Result<QueueId, ContractError> {
        self.decisions += 1;
        let affinity = self.view.tasks[&task].task.affinity;
        match policy.submit(self.view(), task) {
            SubmitDecision::Enqueue(QueueId::Unit(u)) if !self.fits(&affinity, u) => {
                host.refuse(ContractError::Misplaced {
                    who: "submit",
                    task,
                    unit: u,
                })?;
                Ok(QueueId::Central)
            }
            SubmitDecision::Enqueue(q) => Ok(q),
            SubmitDecision::Reject(_) => Ok(QueueId::Central),
        }
    }

    /// The store slot of a live task.
    #[inline]
    fn slot_of(&self, task: TaskId) -> usize {
        self.view.tasks.slot_of(&task).expect("a live task")
    }

    /// Puts `task` (store slot `slot`: the callers know it, which saves a look-up on
    /// every arrival and yield) at the tail of `q` and records it.
    #[inline]
    fn enqueue<H: Host + ?Sized>(&mut self, host: &mut H, task: TaskId, slot: usize, q: QueueId) {
        self.queue_mut(q).push_back(slot as u32);
        let e = self.view.tasks.at_slot_mut(slot);
        debug_assert_eq!(e.task.id, task);
        e.set_placement(Placement::Queued(q));
        self.emit(host, task, EventKind::Enqueue { queue: q });
        if let QueueId::Unit(u) = q {
            self.prefetch(task, u);
        }
        host.queued(self, task, q);
    }

    /// In a graph that prefetches, issues the copies `task`, just queued on `u`, lacks
    /// there.
    #[inline]
    fn prefetch(&mut self, task: TaskId, u: UnitId) {
        let now = self.view.now_ns;
        if let Some(g) = self.view.graph.as_deref_mut().filter(|g| g.prefetch) {
            g.fetch(task, u, now);
        }
    }

    /// After `task` (store slot `slot`) was queued on `q`: lets `q`'s unit pick if
    /// idle, then offers the other idle units that could run it, in id order, until it
    /// has started.
    #[inline]
    fn wake<P: Policy + ?Sized, H: Host + ?Sized>(
        &mut self,
        policy: &mut P,
        host: &mut H,
        q: QueueId,
        task: TaskId,
        slot: usize,
    ) -> Result<(), ContractError> {
        if let QueueId::Unit(u) = q {
            if self.idle.contains(u) && self.pick(policy, host, u)? == Some(task) {
                return Ok(());
            }
        }
        // A pick starts one task, so `task` stays queued until a pick starts it (a
        // pick before this one may have started it: after a yield, its own unit's).
        let e = self.view.tasks.at_slot(slot);
        debug_assert_eq!(e.task.id, task);
        if !matches!(e.placement(), Placement::Queued(_)) {
            return Ok(());
        }
        let affinity = e.task.affinity;
        let mut after = 0;
        while let Some(u) = self.idle.first_from(after) {
            after = u + 1;
            if affinity.runs_on(self.view.kinds[u as usize])
                && self.pick(policy, host, u)? == Some(task)
            {
                break;
            }
        }
        Ok(())
    }

    /// Queue `q`, of store slots.
    #[inline]
    fn queue_slots(&self, q: QueueId) -> &VecDeque<u32> {
        match q {
            QueueId::Unit(u) => &self.view.queues[u as usize],
            QueueId::Central => &self.view.central,
        }
    }

    #[inline]
    fn queue_mut(&mut self, q: QueueId) -> &mut VecDeque<u32> {
        match q {
            QueueId::Unit(u) => &mut self.view.queues[u as usize],
            QueueId::Central => &mut self.view.central,
        }
    }

    /// Where the task in store slot `slot` is in queue `q`.
    #[inline]
    fn position(&self, q: QueueId, slot: usize) -> Option<usize> {
        self.queue_slots(q).iter().position(|&s| s == slot as u32)
    }

    /// Where `task`, which unit `u` picked, waits: its store slot, queue (`u`'s or the
    /// central one) and position there. The heads of both queues are checked first,
    /// without the id look-up: most policies pick a head.
    #[inline(always)]
    fn find_picked(&self, u: UnitId, task: TaskId) -> Option<(usize, QueueId, usize)> {
        for q in [QueueId::Unit(u), QueueId::Central] {
            if let Some(&s) = self.queue_slots(q).front() {
                if self.view.tasks.at_slot(s as usize).task.id == task {
                    return Some((s as usize, q, 0));
                }
            }
        }
        let slot = self.view.tasks.slot_of(&task)?;
        let at = |q| self.position(q, slot).map(|i| (slot, q, i));
        at(QueueId::Unit(u)).or_else(|| at(QueueId::Central))
    }

    #[inline]
    fn remove_at(&mut self, q: QueueId, i: usize) {
        let queue = self.queue_mut(q);
        if i == 0 {
            queue.pop_front();
        } else {
            queue.remove(i);
        }
        crate::id_map::shrink(queue);
    }

    /// Takes the task in store slot `slot` out of queue `q` (where it waits).
    #[inline]
    fn take_from(&mut self, q: QueueId, slot: usize) {
        if let Some(i) = self.position(q, slot) {
            self.remove_at(q, i);
        }
    }

    /// Asks idle unit `u` what to run and starts it; returns the task it started. An
    /// offline unit is not asked.
    #[inline]
    pub fn pick<P: Policy + ?Sized, H: Host + ?Sized>(
        &mut self,
        policy: &mut P,
        host: &mut H,
        u: UnitId,
    ) -> Result<Option<TaskId>, ContractError> {
        if !self.online.contains(u) {
            return Ok(None);
        }
        self.decisions += 1;
        let (task, slot, from, at) = match policy.pick(self.view(), u) {
            PickDecision::Idle => {
                self.idle.insert(u);
                return Ok(None);
            }
            PickDecision::Run(t) => match self.find_picked(u, t) {
                Some((slot, q, i)) => (t, slot, q, i),
                None => {
                    let v = ContractError::NotQueued { unit: u, task: t };
                    return self.refuse_pick(host, u, v);
                }
            },
            PickDecision::Steal { from, task } => {
                let found = (self.view.tasks.slot_of(&task))
                    .filter(|_| from != u && (from as usize) < self.view.queues.len())
                    .and_then(|slot| Some((slot, self.position(QueueId::Unit(from), slot)?)));
                match found {
                    Some((slot, i)) => (task, slot, QueueId::Unit(from), i),
                    None => {
                        let v = ContractError::BadSteal {
                            unit: u,
                            from,
                            task,
                        };
                        return self.refuse_pick(host, u, v);
                    }
                }
            }
        };
        if !self
            .view
            .tasks
            .at_slot(slot)
            .task
            .affinity
            .runs_on(self.view.kinds[u as usize])
        {
            let v = ContractError::Misplaced {
                who: "pick",
                task,
                unit: u,
            };
            return self.refuse_pick(host, u, v);
        }
        self.remove_at(from, at);
        self.start(policy, host, u, task, slot, from)?;
        Ok(Some(task))
    }

    /// A refused pick leaves the unit idle.
    #[cold]
    fn refuse_pick<H: Host + ?Sized>(
        &mut self,
        host: &mut H,
        u: UnitId,
        v: ContractError,
    ) -> Result<Option<TaskId>, ContractError> {
        host.refuse(v)?;
        self.idle.insert(u);
        Ok(None)
    }

    /// Starts `task`, taken from queue `from`, on idle unit `u`.
    #[inline]
    fn start<P: Policy + ?Sized, H: Host + ?Sized>(
        &mut self,
        policy: &mut P,
        host: &mut H,
        u: UnitId,
        task: TaskId,
        slot: usize,
        from: QueueId,
    ) -> Result<(), ContractError> {
        let e = self.view.tasks.at_slot_mut(slot);
        e.set_placement(Placement::Running(u));
        e.runs += 1;
        self.view.running[u as usize] = Some(Running {
            task,
            since_ns: self.view.now_ns,
        });
        self.running_slot[u as usize] = slot as u32;
        self.idle.remove(u);
        self.emit(host, task, EventKind::Start { unit: u, from });
        host.started(self, policy, u, task, slot)
    }

    /// How long `task` (store slot `slot`) may run on `u` before the engine stops it: on
    /// a CPU the policy's time slice, on an accelerator the task's checkpoint interval
    /// for its type (`None`: until done). Forced inline: the simulator's engine calls it
    /// once a segment, and LLVM kept it out of line there once the policy's time slice
    /// was inlined into it.
    #[inline(always)]
    pub fn slice<P: Policy + ?Sized>(
        &self,
        policy: &mut P,
        u: UnitId,
        task: TaskId,
        slot: usize,
    ) -> Option<u64> {
        let kind = self.view.kinds[u as usize];
        if kind == UnitType::Cpu {
            policy.time_slice(self.view(), u, task)
        } else {
            Some(self.view.tasks.at_slot(slot).task.checkpoint_ns.get(kind)).filter(|&c| c > 0)
        }
        .map(|s| s.max(1))
    }

    /// Where `task`'s memory goes as it starts on CPU `u` (both engines decide it here,
    /// the engine applies it): a task without a home gets the unit's node when its pages
    /// are placed by first touch (`first_touch`); a task whose memory is on another node
    /// of a machine with several gets the unit's node when the policy moves it
    /// ([`Policy::migrate_memory`]). The task's `numa_home` is updated.
    #[inline]
    pub fn follow_memory<P: Policy + ?Sized>(
        &mut self,
        policy: &mut P,
        u: UnitId,
        task: TaskId,
        slot: usize,
        first_touch: bool,
    ) -> MemoryMove {
        let home = self.view.tasks.at_slot(slot).task.numa_home();
        // Nothing to decide: the unit's entry (on one of many units, far from the
        // cache) is not read.
        if home.is_none() && !first_touch {
            return MemoryMove::Stays;
        }
        let unit = &self.view.machine.units[u as usize];
        let Some(node) = unit.numa_node.filter(|_| unit.kind == UnitType::Cpu) else {
            return MemoryMove::Stays;
        };
        // Node `u32::MAX` is no memory home (`Task::set_numa_home`): memory stays.
        let moved = match home {
            None if first_touch && node != u32::MAX => MemoryMove::FirstTouch(node),
            Some(home)
                if home != node
                    && node != u32::MAX
                    && self.view.machine.numa_nodes.len() > 1
                    && policy.migrate_memory(self.view(), task, u) =>
            {
                MemoryMove::Migrates(node)
            }
            _ => return MemoryMove::Stays,
        };
        self.view
            .tasks
            .at_slot_mut(slot)
            .task
            .set_numa_home(Some(node));
        moved
    }

    /// The task on `u` stops running there (`ends`: for good, it completed or is
    /// withdrawn): its run and busy time are accounted. Returns it and its store slot.
    #[inline]
    fn vacate<H: Host + ?Sized>(&mut self, host: &mut H, u: UnitId, ends: bool) -> (TaskId, usize) {
        let r = self.view.running[u as usize]
            .take()
            .expect("a vacated unit runs a task");
        if self.sampling {
            self.busy_ns[u as usize] += self.view.now_ns - r.since_ns.max(self.last_tick);
        }
        let slot = self.running_slot[u as usize] as usize;
        let e = self.view.tasks.at_slot_mut(slot);
        debug_assert_eq!(e.task.id, r.task);
        e.run_ns += self.view.now_ns - r.since_ns;
        host.left(self, u, r.task, ends);
        (r.task, slot)
    }

    /// The task running on `u` finished: `complete`, then the unit picks.
    #[inline]
    pub fn complete<P: Policy + ?Sized, H: Host + ?Sized>(
        &mut self,
        policy: &mut P,
        host: &mut H,
        u: UnitId,
    ) -> Result<(), ContractError> {
        let (task, slot) = self.vacate(host, u, true);
        self.finish(policy, host, u, task, slot)
    }

    /// `task` ended on `u` (which it no longer holds): recorded, `complete` (it still sees
    /// the task), then it is gone and the unit picks.
    #[inline(always)]
    fn finish<P: Policy + ?Sized, H: Host + ?Sized>(
        &mut self,
        policy: &mut P,
        host: &mut H,
        u: UnitId,
        task: TaskId,
        slot: usize,
    ) -> Result<(), ContractError> {
        self.emit(host, task, EventKind::Complete { unit: u });
        if self.learning {
            self.observe(u, slot);
        }
        policy.complete(self.view(), task, u);
        if let Some(g) = self.view.graph.as_deref_mut() {
            g.completed(task, u, self.view.now_ns);
        }
        host.ended(self, task, slot);
        self.view.tasks.discard(&task);
        self.pick(policy, host, u).map(|_| ())
    }

    /// Records the run of the task in `slot`, which just completed on `u`, in the
    /// performance models, if it ran there in one stretch: its time less what its copies
    /// to and from the unit cost and what it waited for its data (as StarPU's history
    /// models time the kernel alone).
    #[cold]
    fn observe(&mut self, u: UnitId, slot: usize) {
        let e = self.view.tasks.at_slot(slot);
        if e.runs != 1 {
            return;
        }
        let copies = self
            .view
            .machine
            .copy_s(u, e.task.bytes_in, e.task.bytes_out);
        let waited = self
            .view
            .graph
            .as_deref()
            .map_or(0, |g| g.waited_ns(e.task.id));
        let seconds = (e.run_ns.saturating_sub(waited) as f64 * 1e-9 - copies).max(0.0);
        let unit = &self.view.machine.units[u as usize];
        let arch = Arch {
            unit_type: unit.kind,
            capacity: unit.capacity,
            footprint: e.task.footprint,
        };
        let kernel = e.task.kind.clone();
        self.view.models.observe(&kernel, arch, seconds);
    }

    /// The task running on `u` reached a checkpoint (or its CPU slice ended): asks the
    /// policy and applies a `Yield` or `Migrate`. Returns the decision applied (a refused
    /// migration is `Continue`): on `Continue` the engine plans the next stretch.
    #[inline]
    pub fn checkpoint<P: Policy + ?Sized, H: Host + ?Sized>(
        &mut self,
        policy: &mut P,
        host: &mut H,
        u: UnitId,
    ) -> Result<CheckpointDecision, ContractError> {
        let task = self.view.running[u as usize]
            .expect("a checkpoint on a busy unit")
            .task;
        self.decisions += 1;
        let decision = policy.checkpoint(self.view(), task, u);
        match decision {
            CheckpointDecision::Continue => return Ok(decision),
            CheckpointDecision::Yield => {
                self.release(policy, host, u, Requeue::Queue(QueueId::Unit(u)))?
            }
            CheckpointDecision::Migrate(to) => {
                if !self.fits(&self.view.tasks[&task].task.affinity, to) {
                    host.refuse(ContractError::Misplaced {
                        who: "checkpoint",
                        task,
                        unit: to,
                    })?;
                    return Ok(CheckpointDecision::Continue);
                }
                self.release(policy, host, u, Requeue::Migrate(to))?
            }
        }
        Ok(decision)
    }

    /// The task running on `u` gives it up and goes `then`: at once, or (daemon) once its
    /// holder has freed the unit ([`Self::released`]).
    pub fn release<P: Policy + ?Sized, H: Host + ?Sized>(
        &mut self,
        policy: &mut P,
        host: &mut H,
        u: UnitId,
        then: Requeue,
    ) -> Result<(), ContractError> {
        let (task, _) = self.vacate(host, u, false);
        if H::RELEASES_AT_ONCE {
            return self.requeue(policy, host, u, task, then);
        }
        self.releasing[u as usize] = Some((task, then));
        host.releasing(self, u, task);
        Ok(())
    }

    /// The holder of releasing unit `u` freed it (`finished`: its task ended right there):
    /// the task goes where it was sent, or ends; the unit picks.
    pub fn released<P: Policy + ?Sized, H: Host + ?Sized>(
        &mut self,
        policy: &mut P,
        host: &mut H,
        u: UnitId,
        finished: bool,
    ) -> Result<(), ContractError> {
        let (task, then) = self.releasing[u as usize]
            .take()
            .expect("a released unit was releasing");
        if finished {
            let slot = self.slot_of(task);
            return self.finish(policy, host, u, task, slot);
        }
        self.requeue(policy, host, u, task, then)
    }

    /// Changes where the task releasing `u` goes (a tick moved it meanwhile).
    fn retarget(&mut self, u: UnitId, then: Requeue) {
        if let Some((_, t)) = &mut self.releasing[u as usize] {
            *t = then;
        }
    }

    /// `task` has left `u`: its segment stops, it goes `then`, the unit picks, and the
    /// task is offered to idle units.
    #[inline]
    fn requeue<P: Policy + ?Sized, H: Host + ?Sized>(
        &mut self,
        policy: &mut P,
        host: &mut H,
        u: UnitId,
        task: TaskId,
        then: Requeue,
    ) -> Result<(), ContractError> {
        self.emit(host, task, EventKind::Stop { unit: u });
        let slot = self.slot_of(task);
        let q = match then {
            Requeue::Queue(q) => {
                self.enqueue(host, task, slot, q);
                q
            }
            Requeue::Migrate(to) => {
                self.migrate(host, task, slot, Placement::Running(u), to);
                QueueId::Unit(to)
            }
        };
        self.pick(policy, host, u)?;
        self.wake(policy, host, q, task, slot)
    }

    fn migrate<H: Host + ?Sized>(
        &mut self,
        host: &mut H,
        task: TaskId,
        slot: usize,
        from: Placement,
        to: UnitId,
    ) {
        self.emit(host, task, EventKind::Migrate { from, to });
        self.view.queues[to as usize].push_back(slot as u32);
        let e = self.view.tasks.at_slot_mut(slot);
        debug_assert_eq!(e.task.id, task);
        e.set_placement(Placement::Queued(QueueId::Unit(to)));
        self.prefetch(task, to);
        host.queued(self, task, QueueId::Unit(to));
    }

    /// One sample per unit since the previous sampled tick (none when the policy does
    /// not want them): the running task, busy time from its start, and the host's
    /// memory-bound estimate. The one place samples are built, for both engines.
    fn samples<H: Host + ?Sized>(&mut self, host: &mut H) -> Vec<Sample> {
        let mut samples = std::mem::take(&mut self.samples);
        samples.clear();
        if self.sampling {
            let (now, last_tick) = (self.view.now_ns, self.last_tick);
            for (u, (running, &busy)) in self.view.running.iter().zip(&self.busy_ns).enumerate() {
                let u = u as UnitId;
                samples.push(Sample {
                    unit: u,
                    task: running.map(|r| r.task),
                    busy_ns: busy + running.map_or(0, |r| now - r.since_ns.max(last_tick)),
                    interval_ns: now - last_tick,
                    memory_bound: running.and_then(|r| host.memory_bound(self, u, r.task)),
                    // Nothing here is measured: the engine's own times and model.
                    sources: Sources::default(),
                    ..Sample::default()
                });
            }
            self.busy_ns.iter_mut().for_each(|b| *b = 0);
            self.last_tick = self.view.now_ns;
            for sample in samples.iter_mut().filter(|s| s.task.is_some()) {
                host.measure(self, sample);
            }
        }
        samples
    }

    /// The tick due now: `tick` with its samples, then its migrations, each checked and
    /// applied like a checkpoint's. The next tick is due an interval later while tasks
    /// are live.
    pub fn tick<P: Policy + ?Sized, H: Host + ?Sized>(
        &mut self,
        policy: &mut P,
        host: &mut H,
    ) -> Result<(), ContractError> {
        let due = self.next_tick.take().unwrap_or(self.view.now_ns);
        if let Some(i) = self.tick_interval.filter(|_| !self.view.tasks.is_empty()) {
            let next = due.saturating_add(i);
            // Late (a live engine): the next multiple of the interval after now.
            self.next_tick = Some(if next > self.view.now_ns {
                next
            } else {
                (self.view.now_ns / i + 1).saturating_mul(i)
            });
        }
        let samples = self.samples(host);
        let actions = policy.tick(self.view(), &samples);
        self.samples = samples;
        for TickAction::Migrate { task, to } in actions {
            self.tick_migrate(policy, host, task, to)?;
        }
        // Tasks that ended during the actions: no tick unless one is live.
        if self.view.tasks.is_empty() {
            self.next_tick = None;
        }
        Ok(())
    }

    fn tick_migrate<P: Policy + ?Sized, H: Host + ?Sized>(
        &mut self,
        policy: &mut P,
        host: &mut H,
        task: TaskId,
        to: UnitId,
    ) -> Result<(), ContractError> {
        let Some(slot) = self.view.tasks.slot_of(&task) else {
            return host.refuse(ContractError::NotLive { task });
        };
        let entry = self.view.tasks.at_slot(slot);
        let placement = entry.placement();
        if !self.fits(&entry.task.affinity, to) {
            return host.refuse(ContractError::Misplaced {
                who: "tick",
                task,
                unit: to,
            });
        }
        match placement {
            Placement::Queued(q) => {
                if q == QueueId::Unit(to) {
                    return Ok(());
                }
                self.take_from(q, slot);
                self.migrate(host, task, slot, placement, to);
                self.wake(policy, host, QueueId::Unit(to), task, slot)
            }
            Placement::Running(u) => {
                if u == to {
                    return Ok(());
                }
                if self.view.running[u as usize].is_none() {
                    // Already releasing (daemon): it goes to `to` instead.
                    self.retarget(u, Requeue::Migrate(to));
                    return Ok(());
                }
                if self.view.kinds[u as usize] != UnitType::Cpu {
                    return host.refuse(ContractError::Accelerator { task, unit: u });
                }
                host.preempting(self, u, task);
                self.release(policy, host, u, Requeue::Migrate(to))
            }
        }
    }

    /// A live task leaves without finishing (the daemon: its client went away): its
    /// segment stops if it ran, it is recorded as rejected, the policy hears `complete`
    /// on the unit it ran on or waited for (`fallback` for the central queue), and a
    /// unit it freed picks.
    pub fn withdraw<P: Policy + ?Sized, H: Host + ?Sized>(
        &mut self,
        policy: &mut P,
        host: &mut H,
        task: TaskId,
        reason: &str,
        fallback: UnitId,
    ) -> Result<(), ContractError> {
        let Some(slot) = self.view.tasks.slot_of(&task) else {
            return Ok(());
        };
        let (unit, freed) = match self.view.tasks.at_slot(slot).placement() {
            Placement::Running(u) => {
                if self.view.running[u as usize].is_some_and(|r| r.task == task) {
                    self.vacate(host, u, true);
                } else {
                    self.releasing[u as usize] = None;
                }
                self.emit(host, task, EventKind::Stop { unit: u });
                (u, true)
            }
            Placement::Queued(q) => {
                self.take_from(q, slot);
                match q {
                    QueueId::Unit(u) => (u, false),
                    QueueId::Central => (fallback, false),
                }
            }
        };
        self.emit(
            host,
            task,
            EventKind::Reject {
                reason: reason.into(),
            },
        );
        policy.complete(self.view(), task, unit);
        host.ended(self, task, slot);
        self.view.tasks.discard(&task);
        if freed {
            self.pick(policy, host, unit)?;
        }
        Ok(())
    }

    /// Adds a unit (online and idle, with the next id) and lets it pick.
    pub fn add_unit<P: Policy + ?Sized, H: Host + ?Sized>(
        &mut self,
        policy: &mut P,
        host: &mut H,
        mut unit: Unit,
    ) -> Result<UnitId, ContractError> {
        let id = self.view.kinds.len() as UnitId;
        unit.id = id;
        self.view.kinds.push(unit.kind);
        self.online_kinds[unit.kind as usize] += 1;
        self.view.machine.units.push(unit);
        self.view.queues.push(VecDeque::new());
        self.view.running.push(None);
        self.running_slot.push(0);
        self.releasing.push(None);
        self.busy_ns.push(0);
        let n = self.view.kinds.len();
        self.idle.grow(n);
        self.online.grow(n);
        self.online.insert(id);
        self.idle.insert(id);
        self.pick(policy, host, id)?;
        Ok(id)
    }

    /// Takes `unit` offline: it is never asked to pick again, and its waiting tasks are
    /// placed anew by the policy. A task running there keeps it until it leaves.
    pub fn take_offline<P: Policy + ?Sized, H: Host + ?Sized>(
        &mut self,
        policy: &mut P,
        host: &mut H,
        unit: UnitId,
    ) -> Result<(), ContractError> {
        if !self.is_online(unit) {
            return Ok(());
        }
        self.online.remove(unit);
        self.idle.remove(unit);
        self.online_kinds[self.view.kinds[unit as usize] as usize] -= 1;
        let waiting = std::mem::take(&mut self.view.queues[unit as usize]);
        for slot in waiting {
            let slot = slot as usize;
            let task = self.view.tasks.at_slot(slot).task.id;
            let q = self.resubmit(policy, host, task)?;
            self.enqueue(host, task, slot, q);
            self.wake(policy, host, q, task, slot)?;
        }
        Ok(())
    }
}
