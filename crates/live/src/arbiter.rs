//! The live engine: arbitrates the machine's units among the daemon's clients by
//! calling the same [`Policy`] the simulator calls, in the same situations.
//!
//! It is pure state (no sockets, no threads): each request returns the replies and flag
//! changes it causes, which the server delivers. Time is wall-clock nanoseconds since
//! the daemon started.
//!
//! Mapping of Beisel et al.'s API onto the contract:
//! - `alloc` of a new task → `submit`; the task waits in the queue the policy chose;
//!   idle units are asked to `pick` (in id order) and a pick is a grant;
//! - `rerequest` → `checkpoint`: `Continue` = keep, `Yield` = re-queued on its unit,
//!   `Migrate(v)` = re-queued on `v`; the client then writes its checkpoint back and
//!   `free`s, and its next `alloc` waits for the grant;
//! - `free` of a finished task → `complete`; the freed unit picks again;
//! - a client that disconnects loses its task at once: its unit is freed (and picks
//!   again) or its queue entry dropped. The policy is told through `complete`, the only
//!   end-of-task event of the contract, so per-task state it keeps is released.

use crate::protocol::{
    ErrorCode, MetaInfo, NewUnit, Reply, TaskStats, UnitChanges, UnitInfo, Verdict, MAX_KIND,
};
use hetsched_core::machine::{Accelerator, Machine, Unit, UnitType};
use hetsched_core::policy::{
    CheckpointDecision, PickDecision, Policy, Running, SubmitDecision, UnitId, View,
};
use hetsched_core::record::{Event, EventKind, Record};
use hetsched_core::task::{Affinity, PerUnitType, Placement, QueueId, Task, TaskEntry, TaskId};
use hetsched_core::task_store::TaskStore;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::time::Instant;

pub type ClientId = u64;

/// How many ended tasks `stats` reports.
pub const HISTORY: usize = 4096;

/// The policy's view of the engine, borrowing only the state fields (so that the
/// policy itself can be borrowed mutably beside it).
macro_rules! view {
    ($a:expr, $now:expr) => {
        View::new(
            $now,
            &$a.machine,
            &$a.queues,
            &$a.central,
            &$a.running,
            &$a.tasks,
        )
    };
}

/// What a request makes the server do besides answering the requester.
#[derive(Debug, PartialEq)]
pub enum Effect {
    /// Send this reply to a client (e.g. the grant another client was waiting for).
    Reply(ClientId, Reply),
    /// Set the flag of the client's shared page to `ASK`: its next re-request must come to us.
    Ask(ClientId),
}

pub type Failure = (ErrorCode, String);

#[derive(Default)]
struct UnitState {
    online: bool,
    /// Leaves (goes offline) when its holder frees it.
    removing: bool,
    /// The holder was told to give the unit up and has not freed it yet.
    releasing: bool,
    /// OpenCL / CUDA device index for accelerators.
    device: Option<u32>,
}

/// What `stats` reports of a task that ended (kept compact: the reply is built on demand).
struct EndedTask {
    task: TaskId,
    kind: std::sync::Arc<str>,
    client: ClientId,
    grants: u32,
    run_ns: u64,
}

struct TaskState {
    client: ClientId,
    grants: u32,
    /// Set when the client was told to give up its unit and has not freed it yet.
    told_to_release: bool,
    /// When the current grant started.
    granted_at: Option<u64>,
    /// The unit of the latest grant (the one being released after a denial).
    last_unit: Option<UnitId>,
    /// The denial was a migration (recorded when the unit is freed).
    migrating: bool,
    /// The client is blocked in `alloc`: a grant is its answer.
    awaiting: bool,
    /// A grant made before the client asked again (it was still freeing): sent as
    /// the answer to its next `alloc`.
    pending: Option<Reply>,
    /// The policy queued the task centrally when it arrived: a voluntary release puts
    /// it back there rather than on its unit's queue.
    central: bool,
}

pub struct Arbiter {
    machine: Machine,
    units: Vec<UnitState>,
    queues: Vec<VecDeque<TaskId>>,
    central: VecDeque<TaskId>,
    running: Vec<Option<Running>>,
    tasks: TaskStore,
    state: FxHashMap<TaskId, TaskState>,
    client_task: FxHashMap<ClientId, TaskId>,
    policy: Box<dyn Policy>,
    start: Instant,
    next_task: TaskId,
    grants: u64,
    decisions: u64,
    /// Units freed since the last dispatch: each picks at least once even when no task
    /// waits (the contract's "pick when it becomes free": a policy may use it to offer
    /// the unit to a task running elsewhere).
    freed: Vec<UnitId>,
    /// Flag deadlines: (time ns, unit, task) when a running task's slice ends.
    deadlines: Vec<(u64, UnitId, TaskId)>,
    /// Ended tasks, newest last, at most [`HISTORY`] of them (a daemon runs for
    /// months: its memory must not grow with every task it ever served).
    history: VecDeque<EndedTask>,
    /// The run record (the simulator's format), when the daemon traces.
    record: Option<Record>,
}

/// A unit's capacity (speed on the 1024 scale) must be positive.
fn check_capacity(capacity: Option<u32>) -> Result<(), Failure> {
    match capacity {
        Some(0) => Err((
            ErrorCode::Invalid,
            "capacity must be 1 or more (1024 = the reference speed)".into(),
        )),
        _ => Ok(()),
    }
}

impl Arbiter {
    /// `devices[i]` is the device index of unit `i` where it is an accelerator.
    pub fn new(machine: Machine, devices: Vec<Option<u32>>, policy: Box<dyn Policy>) -> Arbiter {
        let n = machine.units.len();
        Arbiter {
            units: (0..n)
                .map(|i| UnitState {
                    online: true,
                    device: devices.get(i).copied().flatten(),
                    ..Default::default()
                })
                .collect(),
            queues: vec![VecDeque::new(); n],
            central: VecDeque::new(),
            running: vec![None; n],
            tasks: TaskStore::default(),
            state: FxHashMap::default(),
            client_task: FxHashMap::default(),
            machine,
            policy,
            start: Instant::now(),
            next_task: 0,
            grants: 0,
            decisions: 0,
            freed: Vec::new(),
            deadlines: Vec::new(),
            history: VecDeque::new(),
            record: None,
        }
    }

    /// Keep the run record from now on (for `--trace`).
    pub fn start_recording(&mut self) {
        let kinds = self.machine.units.iter().map(|u| u.kind).collect();
        let names = self.machine.units.iter().map(|u| u.name.clone()).collect();
        self.record = Some(Record::new(self.policy.name(), kinds, names));
    }

    /// The run record so far, with the units as they are now.
    pub fn record(&self) -> Option<Record> {
        let mut r = self.record.clone()?;
        r.unit_kinds = self.machine.units.iter().map(|u| u.kind).collect();
        r.unit_names = self.machine.units.iter().map(|u| u.name.clone()).collect();
        Some(r)
    }

    fn log(&mut self, task: TaskId, kind: EventKind) {
        let t_ns = self.now_ns();
        if let Some(r) = &mut self.record {
            r.events.push(Event { t_ns, task, kind });
        }
    }

    pub fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    pub fn policy_name(&self) -> &str {
        self.policy.name()
    }

    fn unit_info(&self, u: &Unit) -> UnitInfo {
        let s = &self.units[u.id as usize];
        let link = u
            .accelerator
            .map(|a| &self.machine.accelerators[a as usize]);
        UnitInfo {
            id: u.id,
            kind: u.kind,
            name: u.name.clone(),
            cpus: u.cpus.clone(),
            device: s.device,
            capacity: u.capacity,
            online: s.online && !s.removing,
            running: self.running[u.id as usize].map(|r| r.task),
            queued: self.queues[u.id as usize].len(),
            link_bandwidth_bytes_per_s: link.and_then(|a| a.link_bandwidth_bytes_per_s),
            link_latency_s: link.and_then(|a| a.link_latency_s),
        }
    }

    /// A client asks for a unit. `Ok(effects)`: the grant (to this client or others)
    /// comes as effects; no effect for this client means it waits.
    pub fn alloc(&mut self, client: ClientId, meta: &MetaInfo) -> Result<Vec<Effect>, Failure> {
        let now = self.now_ns();
        if let Some(&task) = self.client_task.get(&client) {
            let st = self.state.get_mut(&task).unwrap();
            if let Some(grant) = st.pending.take() {
                // Granted again while it was freeing: this is the answer.
                return Ok(vec![Effect::Reply(client, grant)]);
            }
            if matches!(self.tasks[&task].placement, Placement::Running(_)) && !st.told_to_release {
                return Err((
                    ErrorCode::OutOfOrder,
                    "alloc while holding a unit: free it first".into(),
                ));
            }
            if st.told_to_release {
                return Err((
                    ErrorCode::OutOfOrder,
                    "alloc before free: free the unit you were told to give up".into(),
                ));
            }
            // The same task again after yielding: it already waits in a queue.
            self.state.get_mut(&task).unwrap().awaiting = true;
            return Ok(self.dispatch(now));
        }
        if meta.kind.len() > MAX_KIND {
            return Err((
                ErrorCode::Malformed,
                format!(
                    "task kind is {} bytes long (at most {MAX_KIND})",
                    meta.kind.len()
                ),
            ));
        }
        let mut affinity = Affinity::default();
        for kind in UnitType::ALL {
            let a = meta.affinity.get(kind);
            if !(a.is_finite() && a >= 0.0) {
                return Err((
                    ErrorCode::Malformed,
                    format!("affinity for {kind} must be a non-negative number"),
                ));
            }
            affinity.set(kind, a);
        }
        if !self
            .machine
            .units
            .iter()
            .any(|u| self.units[u.id as usize].online && affinity.runs_on(u.kind))
        {
            let present: Vec<String> = self.online_types().iter().map(|t| t.to_string()).collect();
            return Err((
                ErrorCode::NoUnit,
                format!("no unit can run task kind {:?}: its affinities are 0 for every unit type present ({})", meta.kind, present.join(", ")),
            ));
        }
        let id = self.next_task;
        self.next_task += 1;
        let kind: std::sync::Arc<str> = meta.kind.as_str().into();
        let task = Task {
            id,
            kind: kind.clone(),
            affinity,
            speed: PerUnitType::default(),
            // Unknown live: the work is whatever the application does.
            work_s: 0.0,
            bytes_in: meta.memory_to_copy,
            bytes_out: 0,
            memory_bound: 0.0,
            mem_bandwidth: 0.0,
            numa_home: None,
            weight: meta.weight.max(1),
            arrival_ns: now,
            checkpoint_ns: PerUnitType::default(),
        };
        self.tasks.insert(
            id,
            TaskEntry {
                task,
                placement: Placement::Queued(QueueId::Central),
                remaining_ns: 0,
                runs: 0,
                run_ns: 0,
            },
        );
        self.state.insert(
            id,
            TaskState {
                client,
                grants: 0,
                told_to_release: false,
                granted_at: None,
                last_unit: None,
                migrating: false,
                awaiting: true,
                pending: None,
                central: false,
            },
        );
        self.client_task.insert(client, id);
        // Live, a task's length is unknown: no ideal time (slowdowns are not defined).
        self.log(id, EventKind::Submit { ideal_ns: 0, kind });
        let decision = self.policy.submit(&view!(self, now), id);
        self.decisions += 1;
        let mut effects = Vec::new();
        match decision {
            SubmitDecision::Enqueue(q) => {
                self.state.get_mut(&id).unwrap().central = q == QueueId::Central;
                self.enqueue(id, q, &mut effects)
            }
            SubmitDecision::Reject(reason) => {
                self.log(
                    id,
                    EventKind::Reject {
                        reason: reason.clone(),
                    },
                );
                self.forget(id);
                return Err((
                    ErrorCode::NoUnit,
                    format!("the policy rejected the task: {reason}"),
                ));
            }
        }
        effects.extend(self.dispatch(now));
        Ok(effects)
    }

    fn online_types(&self) -> Vec<UnitType> {
        let mut v: Vec<UnitType> = self
            .machine
            .units
            .iter()
            .filter(|u| self.units[u.id as usize].online)
            .map(|u| u.kind)
            .collect();
        v.sort();
        v.dedup();
        v
    }

    fn enqueue(&mut self, task: TaskId, q: QueueId, effects: &mut Vec<Effect>) {
        let q = self.place(task, q, effects);
        self.log(task, EventKind::Enqueue { queue: q });
    }

    /// Puts a task in a queue (a unit that is gone: the central one) and raises the
    /// flags of holders it could replace; returns the queue used.
    fn place(&mut self, task: TaskId, q: QueueId, effects: &mut Vec<Effect>) -> QueueId {
        let q = match q {
            QueueId::Unit(u)
                if (u as usize) < self.queues.len() && self.units[u as usize].online =>
            {
                q
            }
            // A policy that names a unit that is gone: the task waits centrally.
            _ => QueueId::Central,
        };
        match q {
            QueueId::Unit(u) => {
                self.queues[u as usize].push_back(task);
                if let Some(r) = self.running[u as usize] {
                    self.ask(r.task, effects);
                }
            }
            QueueId::Central => self.central.push_back(task),
        }
        if let Some(e) = self.tasks.get_mut(&task) {
            e.placement = Placement::Queued(q);
        }
        // A waiting task may change any holder's answer it could replace.
        let holders: Vec<TaskId> = self
            .running
            .iter()
            .enumerate()
            .filter_map(|(u, r)| {
                r.filter(|_| {
                    self.tasks[&task]
                        .task
                        .affinity
                        .runs_on(self.machine.units[u].kind)
                })
                .map(|r| r.task)
            })
            .collect();
        for t in holders {
            self.ask(t, effects);
        }
        q
    }

    /// A unit just went idle and nothing took it: the holders that could run there
    /// must ask at their next checkpoint, where the policy may offer it (migration).
    /// Edge-triggered: a `keep` answer resets the flag, so idle units do not keep every
    /// checkpoint off the fast path.
    fn offer_idle(&self, effects: &mut Vec<Effect>) {
        // The kinds of the idle units first, then one pass over the running tasks:
        // O(units + running), not their product.
        let mut idle_kinds = PerUnitType::<bool>::default();
        for u in &self.machine.units {
            let s = &self.units[u.id as usize];
            if s.online && !s.releasing && self.running[u.id as usize].is_none() {
                idle_kinds.set(u.kind, true);
            }
        }
        for r in self.running.iter().flatten() {
            let affinity = &self.tasks[&r.task].task.affinity;
            if UnitType::ALL
                .iter()
                .any(|&k| idle_kinds.get(k) && affinity.runs_on(k))
            {
                self.ask(r.task, effects);
            }
        }
    }

    fn ask(&self, task: TaskId, effects: &mut Vec<Effect>) {
        if let Some(st) = self.state.get(&task) {
            let e = Effect::Ask(st.client);
            if !effects.contains(&e) {
                effects.push(e);
            }
        }
    }

    /// Idle online units pick, in id order, until none changes.
    fn dispatch(&mut self, now: u64) -> Vec<Effect> {
        let mut effects = Vec::new();
        loop {
            let mut progressed = false;
            let mut waiting = self.anything_queued();
            for u in 0..self.machine.units.len() as UnitId {
                let s = &self.units[u as usize];
                if !s.online || s.releasing || self.running[u as usize].is_some() {
                    continue;
                }
                if !waiting && !self.freed.contains(&u) {
                    continue;
                }
                self.freed.retain(|&f| f != u);
                let decision = self.policy.pick(&view!(self, now), u);
                self.decisions += 1;
                let task = match decision {
                    PickDecision::Idle => continue,
                    PickDecision::Run(t) => {
                        if !self.remove_queued(t) {
                            continue;
                        }
                        t
                    }
                    PickDecision::Steal { task, .. } => {
                        if !self.remove_queued(task) {
                            continue;
                        }
                        task
                    }
                };
                if !self.tasks[&task]
                    .task
                    .affinity
                    .runs_on(self.machine.units[u as usize].kind)
                {
                    // Never grant a unit the task has no implementation for.
                    let mut ignored = Vec::new();
                    self.enqueue(task, QueueId::Central, &mut ignored);
                    continue;
                }
                self.grant(task, u, now, &mut effects);
                progressed = true;
                waiting = self.anything_queued();
            }
            if !progressed {
                self.freed.clear();
                return effects;
            }
        }
    }

    fn anything_queued(&self) -> bool {
        !self.central.is_empty() || self.queues.iter().any(|q| !q.is_empty())
    }

    /// Takes a queued task out of whatever queue holds it.
    fn remove_queued(&mut self, task: TaskId) -> bool {
        let Some(e) = self.tasks.get(&task) else {
            return false;
        };
        let queue = match e.placement {
            Placement::Queued(QueueId::Unit(q)) => &mut self.queues[q as usize],
            Placement::Queued(QueueId::Central) => &mut self.central,
            _ => return false,
        };
        match queue.iter().position(|&t| t == task) {
            Some(i) => {
                queue.remove(i);
                true
            }
            None => false,
        }
    }

    fn grant(&mut self, task: TaskId, u: UnitId, now: u64, effects: &mut Vec<Effect>) {
        self.running[u as usize] = Some(Running {
            task,
            since_ns: now,
        });
        let e = self.tasks.get_mut(&task).unwrap();
        let from = match e.placement {
            Placement::Queued(q) => q,
            Placement::Running(_) => QueueId::Central,
        };
        e.placement = Placement::Running(u);
        e.runs += 1;
        let st = self.state.get_mut(&task).unwrap();
        st.grants += 1;
        st.granted_at = Some(now);
        st.told_to_release = false;
        st.last_unit = Some(u);
        self.grants += 1;
        let client = st.client;
        self.log(task, EventKind::Start { unit: u, from });
        let slice = self.policy.time_slice(&view!(self, now), u, task);
        if let Some(ns) = slice {
            self.deadlines.push((now + ns, u, task));
        }
        let unit = self.unit_info(&self.machine.units[u as usize]);
        let reply = Reply::Granted { unit, task };
        let st = self.state.get_mut(&task).unwrap();
        if std::mem::take(&mut st.awaiting) {
            effects.push(Effect::Reply(client, reply));
        } else {
            st.pending = Some(reply);
        }
    }

    /// A checkpoint: asks the policy whether the client's task keeps its unit.
    pub fn rerequest(&mut self, client: ClientId) -> Result<Verdict, Failure> {
        let now = self.now_ns();
        let (task, u) = self.held(client)?;
        if self.state[&task].told_to_release {
            return Err((
                ErrorCode::OutOfOrder,
                "rerequest after being told to give the unit up: free it".into(),
            ));
        }
        let decision = if self.units[u as usize].removing {
            // The unit is leaving: the task must go elsewhere.
            CheckpointDecision::Yield
        } else {
            self.policy.checkpoint(&view!(self, now), task, u)
        };
        self.decisions += 1;
        Ok(match decision {
            CheckpointDecision::Continue => {
                if let Some(ns) = self.policy.time_slice(&view!(self, now), u, task) {
                    self.deadlines.push((now + ns, u, task));
                }
                Verdict::Keep
            }
            CheckpointDecision::Yield => {
                let q = if self.units[u as usize].removing {
                    self.resubmit_queue(task, now)
                } else {
                    QueueId::Unit(u)
                };
                self.release_to(task, u, q);
                Verdict::Yield
            }
            CheckpointDecision::Migrate(v)
                if (v as usize) < self.queues.len() && self.can_run(task, v) =>
            {
                self.state.get_mut(&task).unwrap().migrating = true;
                self.release_to(task, u, QueueId::Unit(v));
                Verdict::Migrate { to: v }
            }
            CheckpointDecision::Migrate(_) => Verdict::Keep,
        })
    }

    fn can_run(&self, task: TaskId, u: UnitId) -> bool {
        self.units[u as usize].online
            && self.tasks[&task]
                .task
                .affinity
                .runs_on(self.machine.units[u as usize].kind)
    }

    fn resubmit_queue(&mut self, task: TaskId, now: u64) -> QueueId {
        self.decisions += 1;
        match self.policy.submit(&view!(self, now), task) {
            SubmitDecision::Enqueue(q) => q,
            SubmitDecision::Reject(_) => QueueId::Central,
        }
    }

    /// The holder of `u` must give it up; its task waits in `q` meanwhile.
    /// The holder of `u` must give it up; once it has freed the unit (its checkpoint
    /// written back) the task waits in `q`. Until then it is in no queue, so no other
    /// unit can be granted to it while it still holds this one.
    fn release_to(&mut self, task: TaskId, u: UnitId, q: QueueId) {
        self.units[u as usize].releasing = true;
        self.state.get_mut(&task).unwrap().told_to_release = true;
        self.running[u as usize] = None;
        self.account_run(task);
        self.tasks.get_mut(&task).unwrap().placement = Placement::Queued(q);
    }

    fn account_run(&mut self, task: TaskId) {
        let now = self.now_ns();
        if let Some(at) = self.state.get_mut(&task).and_then(|s| s.granted_at.take()) {
            self.tasks.get_mut(&task).unwrap().run_ns += now - at;
        }
    }

    fn held(&self, client: ClientId) -> Result<(TaskId, UnitId), Failure> {
        let task = *self
            .client_task
            .get(&client)
            .ok_or((ErrorCode::OutOfOrder, "no task: alloc first".to_string()))?;
        let st = &self.state[&task];
        if st.told_to_release {
            // Released logically; find the unit still marked releasing by this task.
            return Err((
                ErrorCode::OutOfOrder,
                "the unit was given up: free it".into(),
            ));
        }
        match self.tasks[&task].placement {
            Placement::Running(u) => Ok((task, u)),
            Placement::Queued(_) => Err((ErrorCode::OutOfOrder, "no unit granted yet".into())),
        }
    }

    /// The client releases its unit: finished, after a denied re-request, or of its own
    /// accord (then its task waits on that unit's queue).
    pub fn free(&mut self, client: ClientId, finished: bool) -> Result<Vec<Effect>, Failure> {
        let now = self.now_ns();
        let task = *self
            .client_task
            .get(&client)
            .ok_or((ErrorCode::OutOfOrder, "free without a task".to_string()))?;
        let mut effects = Vec::new();
        if self.state[&task].told_to_release {
            // The unit it held is the one still marked releasing with no runner.
            // The segment ends now that the unit is back: record how.
            let unit = self.last_unit(task).unwrap_or(0);
            let migrating = std::mem::take(&mut self.state.get_mut(&task).unwrap().migrating);
            self.finish_release(task);
            if finished {
                // It finished right at the checkpoint where it was told to yield: it
                // no longer waits anywhere.
                self.remove_queued(task);
                self.log(task, EventKind::Complete { unit });
                self.end_task(task, unit, now);
            } else {
                self.log(task, EventKind::Stop { unit });
                if let Placement::Queued(q) = self.tasks[&task].placement {
                    if let (true, QueueId::Unit(to)) = (migrating, q) {
                        self.log(
                            task,
                            EventKind::Migrate {
                                from: Placement::Running(unit),
                                to,
                            },
                        );
                    }
                    self.log(task, EventKind::Enqueue { queue: q });
                    self.place(task, q, &mut effects);
                }
            }
        } else {
            let Placement::Running(u) = self.tasks[&task].placement else {
                return Err((ErrorCode::OutOfOrder, "free without a granted unit".into()));
            };
            self.running[u as usize] = None;
            self.account_run(task);
            self.unit_freed(u);
            if finished {
                self.log(task, EventKind::Complete { unit: u });
                self.end_task(task, u, now);
            } else {
                self.log(task, EventKind::Stop { unit: u });
                let st = self.state.get_mut(&task).unwrap();
                st.told_to_release = false;
                let q = if st.central {
                    QueueId::Central
                } else {
                    QueueId::Unit(u)
                };
                self.enqueue(task, q, &mut effects);
            }
        }
        effects.extend(self.dispatch(now));
        self.offer_idle(&mut effects);
        Ok(effects)
    }

    /// The unit the task was releasing is free now.
    fn finish_release(&mut self, task: TaskId) {
        self.state.get_mut(&task).unwrap().told_to_release = false;
        if let Some(u) = self.last_unit(task) {
            self.units[u as usize].releasing = false;
            self.unit_freed(u);
        }
    }

    fn last_unit(&self, task: TaskId) -> Option<UnitId> {
        self.state.get(&task).and_then(|s| s.last_unit)
    }

    fn unit_freed(&mut self, u: UnitId) {
        self.freed.push(u);
        let s = &mut self.units[u as usize];
        if s.removing {
            s.removing = false;
            s.online = false;
        }
        self.deadlines.retain(|d| d.1 != u);
    }

    /// Tells the policy the task is over (`complete`, the contract's only end-of-task
    /// event) on `unit`: where it ran last, or for a waiting task the queue's unit, so
    /// that per-unit accounting is undone where it was done.
    fn end_task(&mut self, task: TaskId, unit: UnitId, now: u64) {
        self.policy.complete(&view!(self, now), task, unit);
        self.forget(task);
    }

    fn forget(&mut self, task: TaskId) {
        if let (Some(e), Some(st)) = (self.tasks.remove(&task), self.state.remove(&task)) {
            self.client_task.remove(&st.client);
            if self.history.len() == HISTORY {
                self.history.pop_front();
            }
            self.history.push_back(EndedTask {
                task,
                kind: e.task.kind,
                client: st.client,
                grants: st.grants,
                run_ns: e.run_ns,
            });
        }
    }

    /// A client went away (closed, crashed, killed): it loses its task at once.
    pub fn disconnect(&mut self, client: ClientId) -> Vec<Effect> {
        let now = self.now_ns();
        let Some(&task) = self.client_task.get(&client) else {
            return Vec::new();
        };
        // In the record its segment stops and it leaves unfinished (`reject`).
        let unit = match self.tasks[&task].placement {
            Placement::Running(u) => {
                self.running[u as usize] = None;
                self.unit_freed(u);
                self.log(task, EventKind::Stop { unit: u });
                u
            }
            Placement::Queued(q) => {
                if self.state[&task].told_to_release {
                    let unit = self.last_unit(task).unwrap_or(0);
                    self.finish_release(task);
                    self.log(task, EventKind::Stop { unit });
                }
                self.remove_queued(task);
                match q {
                    QueueId::Unit(u) => u,
                    QueueId::Central => self.last_unit(task).unwrap_or(0),
                }
            }
        };
        self.log(
            task,
            EventKind::Reject {
                reason: "client went away".into(),
            },
        );
        self.end_task(task, unit, now);
        let mut effects = self.dispatch(now);
        self.offer_idle(&mut effects);
        effects
    }

    /// Raises flags for slices that ended; returns the next deadline, if any.
    pub fn expire(&mut self) -> (Vec<Effect>, Option<u64>) {
        let now = self.now_ns();
        let mut effects = Vec::new();
        let due: Vec<(u64, UnitId, TaskId)> = self
            .deadlines
            .iter()
            .copied()
            .filter(|d| d.0 <= now)
            .collect();
        self.deadlines.retain(|d| d.0 > now);
        for (_, u, t) in due {
            if self.running[u as usize].is_some_and(|r| r.task == t) {
                self.ask(t, &mut effects);
            }
        }
        (effects, self.deadlines.iter().map(|d| d.0).min())
    }

    // ---- control API ----

    pub fn list_units(&self) -> Vec<UnitInfo> {
        self.machine
            .units
            .iter()
            .filter(|u| self.units[u.id as usize].online || self.units[u.id as usize].removing)
            .map(|u| self.unit_info(u))
            .collect()
    }

    pub fn add_unit(&mut self, new: &NewUnit) -> Result<Vec<Effect>, Failure> {
        check_capacity(Some(new.capacity))?;
        if new.kind == UnitType::Cpu && new.cpus.is_empty() {
            return Err((
                ErrorCode::Invalid,
                "a CPU unit needs the PUs it pins to (cpus)".into(),
            ));
        }
        let id = self.machine.units.len() as UnitId;
        self.machine.units.push(Unit {
            id,
            kind: new.kind,
            os_index: new.cpus.first().copied(),
            cpus: new.cpus.clone(),
            cpu_kind: None,
            capacity: new.capacity,
            numa_node: None,
            accelerator: None,
            name: new.name.clone(),
        });
        self.units.push(UnitState {
            online: true,
            device: new.device,
            ..Default::default()
        });
        self.queues.push(VecDeque::new());
        self.running.push(None);
        self.freed.push(id);
        let now = self.now_ns();
        let mut effects = Vec::new();
        // A new unit may be better for running tasks: let their next checkpoint ask.
        let holders: Vec<TaskId> = self.running.iter().flatten().map(|r| r.task).collect();
        for t in holders {
            if self.tasks[&t].task.affinity.runs_on(new.kind) {
                self.ask(t, &mut effects);
            }
        }
        effects.extend(self.dispatch(now));
        Ok(effects)
    }

    pub fn remove_unit(&mut self, id: UnitId) -> Result<Vec<Effect>, Failure> {
        let now = self.now_ns();
        let s = self
            .units
            .get_mut(id as usize)
            .filter(|s| s.online)
            .ok_or((ErrorCode::Invalid, format!("no online unit {id}")))?;
        let mut effects = Vec::new();
        if self.running[id as usize].is_some() || s.releasing {
            s.removing = true;
            if let Some(r) = self.running[id as usize] {
                self.ask(r.task, &mut effects);
            }
        } else {
            s.online = false;
        }
        // Tasks waiting for this unit go where the policy puts them now.
        let waiting: Vec<TaskId> = self.queues[id as usize].drain(..).collect();
        for t in waiting {
            let q = self.resubmit_queue(t, now);
            self.enqueue(t, q, &mut effects);
        }
        effects.extend(self.dispatch(now));
        Ok(effects)
    }

    /// Changes a unit; a change with any invalid field is refused whole.
    pub fn alter_unit(&mut self, id: UnitId, changes: &UnitChanges) -> Result<(), Failure> {
        let unit = self
            .machine
            .units
            .get(id as usize)
            .ok_or((ErrorCode::Invalid, format!("no unit {id}")))?;
        check_capacity(changes.capacity)?;
        let (bandwidth, latency) = (changes.link_bandwidth_bytes_per_s, changes.link_latency_s);
        let link = bandwidth.is_some() || latency.is_some();
        if link && unit.kind == UnitType::Cpu {
            return Err((
                ErrorCode::Invalid,
                format!("unit {id} is a CPU: it has no host link to change"),
            ));
        }
        if !bandwidth.is_none_or(|b| b.is_finite() && b > 0.0) {
            return Err((
                ErrorCode::Invalid,
                "link_bandwidth_bytes_per_s must be a finite number > 0".into(),
            ));
        }
        if !latency.is_none_or(|l| l.is_finite() && l >= 0.0) {
            return Err((
                ErrorCode::Invalid,
                "link_latency_s must be a finite number >= 0".into(),
            ));
        }
        // Valid as a whole: apply it.
        let unit = &mut self.machine.units[id as usize];
        if let Some(c) = changes.capacity {
            unit.capacity = c;
        }
        if let Some(n) = &changes.name {
            unit.name = n.clone();
        }
        if !link {
            return Ok(());
        }
        // A unit added at run time has no accelerator record yet: give it one.
        let acc = match unit.accelerator {
            Some(a) => a as usize,
            None => {
                self.machine.accelerators.push(Accelerator {
                    kind: unit.kind,
                    name: unit.name.clone(),
                    model: None,
                    memory_bytes: None,
                    link_bandwidth_bytes_per_s: None,
                    link_latency_s: None,
                    relative_speed: None,
                    numa_node: None,
                    pci_bus_id: None,
                });
                let a = self.machine.accelerators.len() - 1;
                unit.accelerator = Some(a as u32);
                a
            }
        };
        let a = &mut self.machine.accelerators[acc];
        a.link_bandwidth_bytes_per_s = bandwidth.or(a.link_bandwidth_bytes_per_s);
        a.link_latency_s = latency.or(a.link_latency_s);
        Ok(())
    }

    pub fn stats(&self) -> Reply {
        let mut tasks: Vec<TaskStats> = self
            .history
            .iter()
            .map(|h| TaskStats {
                task: h.task,
                kind: h.kind.to_string(),
                client: h.client,
                state: "ended".into(),
                unit: None,
                grants: h.grants,
                run_ms: h.run_ns as f64 / 1e6,
            })
            .collect();
        for (id, e) in self.tasks.iter() {
            let st = &self.state[id];
            let (state, unit) = match e.placement {
                Placement::Running(u) => ("running".to_string(), Some(u)),
                Placement::Queued(QueueId::Unit(u)) => ("queued".to_string(), Some(u)),
                Placement::Queued(QueueId::Central) => ("queued".to_string(), None),
            };
            tasks.push(TaskStats {
                task: *id,
                kind: e.task.kind.to_string(),
                client: st.client,
                state,
                unit,
                grants: st.grants,
                run_ms: e.run_ns as f64 / 1e6,
            });
        }
        tasks.sort_by_key(|t| t.task);
        Reply::Stats {
            grants: self.grants,
            decisions: self.decisions,
            tasks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::WireAffinity;
    use hetsched_core::machine::UnitGranularity;

    fn arbiter(cores: u32, policy: &str) -> Arbiter {
        let text = format!("name = \"t\"\n[[package]]\ncores = {cores}\n");
        let mut m = hetsched_topology::machine_file::parse(&text, "test").unwrap();
        m.derive_units(UnitGranularity::Pu);
        let devices = crate::devices::described(&m);
        Arbiter::new(m, devices, hetsched_policies::build(policy, 0).unwrap())
    }

    fn arbiter_with_opencl(policy: &str) -> Arbiter {
        let text = "name = \"t\"\n[[package]]\ncores = 1\n[[accelerator]]\ntype = \"opencl\"\nname = \"cl\"\n";
        let mut m = hetsched_topology::machine_file::parse(text, "test").unwrap();
        m.derive_units(UnitGranularity::Pu);
        let devices = crate::devices::described(&m);
        Arbiter::new(m, devices, hetsched_policies::build(policy, 0).unwrap())
    }

    fn meta_with(cpu: f64, opencl: f64) -> MetaInfo {
        MetaInfo {
            kind: "t".into(),
            affinity: WireAffinity {
                cpu,
                opencl,
                ..Default::default()
            },
            memory_to_copy: 0,
            weight: 1024,
            ..MetaInfo::default()
        }
    }

    #[test]
    fn a_migrating_task_is_granted_its_new_unit_only_after_freeing_the_old_one() {
        let mut a = arbiter_with_opencl("affinity:acc_limit=0");
        a.start_recording();
        assert!(granted(&a.alloc(1, &meta_with(0.0, 1.0)).unwrap(), 1)); // OpenCL only
        assert!(granted(&a.alloc(2, &meta_with(1.0, 2.0)).unwrap(), 2)); // starts on the CPU
                                                                         // The OpenCL unit frees: the balancer offers it to task 2, whose flag is raised.
        let effects = a.free(1, true).unwrap();
        assert!(effects.contains(&Effect::Ask(2)), "{effects:?}");
        assert_eq!(a.rerequest(2).unwrap(), Verdict::Migrate { to: 1 });
        // Still holding the CPU: nothing may be granted to it yet, by any event.
        assert!(!granted(&a.alloc(3, &meta_with(1.0, 0.0)).unwrap(), 2));
        let effects = a.free(2, false).unwrap();
        assert!(!granted(&effects, 2), "granted before asking: {effects:?}");
        let answer = a.alloc(2, &meta_with(1.0, 2.0)).unwrap();
        assert!(
            matches!(answer.as_slice(), [Effect::Reply(2, Reply::Granted { unit, .. })] if unit.id == 1),
            "{answer:?}"
        );
        let record = a.record().unwrap();
        record.check().unwrap();
        assert!(record
            .events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Migrate { to: 1, .. })));
    }

    fn meta() -> MetaInfo {
        MetaInfo {
            kind: "t".into(),
            affinity: WireAffinity {
                cpu: 1.0,
                ..Default::default()
            },
            memory_to_copy: 0,
            weight: 1024,
            ..MetaInfo::default()
        }
    }

    fn granted(effects: &[Effect], client: ClientId) -> bool {
        effects
            .iter()
            .any(|e| matches!(e, Effect::Reply(c, Reply::Granted { .. }) if *c == client))
    }

    #[test]
    fn a_grant_made_while_the_client_frees_answers_its_next_alloc() {
        let mut a = arbiter(1, "fcfs");
        assert!(granted(&a.alloc(1, &meta()).unwrap(), 1));
        // A voluntary release: the only task is granted the unit again at once, but the
        // client is not asking yet, so nothing is sent until it does.
        let effects = a.free(1, false).unwrap();
        assert!(!granted(&effects, 1), "{effects:?}");
        assert!(granted(&a.alloc(1, &meta()).unwrap(), 1));
        assert_eq!(a.rerequest(1).unwrap(), Verdict::Keep);
        a.free(1, true).unwrap();
        assert!(a.record().is_none());
    }

    #[test]
    fn clients_vanishing_while_waiting_or_holding_leave_every_policy_consistent() {
        for policy in ["fcfs", "cfs", "ws", "dmda", "random", "affinity"] {
            let mut a = arbiter(2, policy);
            a.start_recording();
            for c in 1..=6 {
                a.alloc(c, &meta()).unwrap();
            }
            // Waiters and holders go away in an order that leaves gaps everywhere.
            for c in [5, 1, 6, 2] {
                a.disconnect(c);
            }
            for c in 7..=9 {
                a.alloc(c, &meta()).unwrap();
            }
            for c in [3, 4, 7, 8, 9] {
                a.disconnect(c);
            }
            a.record()
                .unwrap()
                .check()
                .unwrap_or_else(|e| panic!("{policy}: {e}"));
            assert!(
                a.list_units()
                    .iter()
                    .all(|u| u.running.is_none() && u.queued == 0),
                "{policy}"
            );
        }
    }

    #[test]
    fn a_vanished_holder_frees_its_unit_for_the_next_waiter_and_the_record_stays_sound() {
        let mut a = arbiter(1, "fcfs");
        a.start_recording();
        assert!(granted(&a.alloc(1, &meta()).unwrap(), 1));
        assert!(!granted(&a.alloc(2, &meta()).unwrap(), 2));
        assert!(!granted(&a.alloc(3, &meta()).unwrap(), 3));
        assert!(granted(&a.disconnect(1), 2));
        assert!(a.disconnect(3).is_empty());
        a.free(2, true).unwrap();
        let record = a.record().unwrap();
        record.check().unwrap();
        let outcomes = record.outcomes();
        assert_eq!(outcomes.iter().filter(|o| o.rejected).count(), 2);
        assert_eq!(
            outcomes
                .iter()
                .filter(|o| !o.rejected && o.end_ns.is_some())
                .count(),
            1
        );
    }
}
