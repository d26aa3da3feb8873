//! The live engine: arbitrates the machine's units among the daemon's clients through
//! the engine core the simulator runs on (`hetsched_core::engine_core`), so that the
//! same [`Policy`] is called in the same situations, its answers are checked by the same
//! code, and the run record is written by the same code. The queue state lives in the
//! core; this module is the daemon's [`Host`] around it: clients, grants sent as replies,
//! releases that complete only when the holder frees its unit, offline units and the
//! control API.
//!
//! It is pure state (no sockets, no threads): each request returns the replies and flag
//! changes it causes, which the server delivers. Time comes from a [`Clock`]: wall-clock
//! nanoseconds since the daemon started, or a clock a test drives.
//!
//! Mapping of Beisel et al.'s API onto the contract:
//! - `alloc` of a new task → `submit`; the task waits in the queue the policy chose;
//!   idle units are asked to `pick` (the queue's unit, then the others in id order) and
//!   a pick is a grant;
//! - `rerequest` → `checkpoint`: `Continue` = keep, `Yield` = re-queued on its unit,
//!   `Migrate(v)` = re-queued on `v`; from the verdict until the client has written its
//!   checkpoint back and `free`d, its unit is *releasing* (neither running nor pickable);
//!   its next `alloc` waits for the grant;
//! - `free` of a finished task → `complete`; the freed unit picks again;
//! - [`Arbiter::expire`] (called by the server's loop, which sleeps until the deadline it
//!   returns) raises the flags of holders whose slice ended and runs the policy's `tick`
//!   on its interval; a running task a tick moves is told through its flag and moves
//!   when it frees, as after a `Migrate` verdict;
//! - a client that disconnects loses its task at once: its unit is freed (and picks
//!   again) or its queue entry dropped. The policy is told through `complete`, the only
//!   end-of-task event of the contract, so per-task state it keeps is released.
//!
//! A policy answer that breaks the contract is refused, not worked around: the decision
//! has no effect (a pick leaves the unit idle, a migration keeps the task where it is, a
//! placement rejects the task and its client gets the error), it is logged on stderr and
//! counted ([`Arbiter::violations`]), and the daemon serves on.

use crate::client_process::ClientProcess;
use crate::graphs::{Declaring, LiveGraph, Parked, Running, Slot};
use crate::protocol::{
    ErrorCode, GraphTaskInfo, MetaInfo, NewUnit, Reply, TaskStats, UnitChanges, UnitInfo, Verdict,
    MAX_CHECKPOINT_NS, MAX_KIND,
};
use crate::sampler::Sampling;
use hetsched_core::engine_core::{Arrival, ContractError, EngineCore, Host, MemoryMove, Requeue};
use hetsched_core::machine::{Machine, Unit, UnitType};
use hetsched_core::perf_model::PerfModels;
use hetsched_core::policy::{CheckpointDecision, Policy, Sample, UnitId};
use hetsched_core::record::{Event, Record};
use hetsched_core::task::{PerUnitType, Placement, QueueId, Task, TaskClass, TaskId};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

pub type ClientId = u64;

/// How many ended tasks `stats` reports.
pub const HISTORY: usize = 4096;

/// How often the sampler passes when the policy does not tick (for `stats`).
const STATS_PERIOD_NS: u64 = 100_000_000;

/// The sampler passes at most this often, whatever the policy's tick interval.
const MIN_PERIOD_NS: u64 = 1_000_000;

/// Contract violations logged in full; after that one in every `LOG_EVERY`.
const LOG_FIRST: u64 = 16;
const LOG_EVERY: u64 = 1024;

/// Where the arbiter's time comes from (nanoseconds, never decreasing).
pub trait Clock {
    fn now_ns(&self) -> u64;
}

/// Wall-clock nanoseconds since the clock was made.
pub struct WallClock(Instant);

impl Default for WallClock {
    fn default() -> Self {
        WallClock(Instant::now())
    }
}

impl Clock for WallClock {
    fn now_ns(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
}

/// A clock that stands still until set (tests; clones share the time).
#[derive(Clone, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    pub fn set(&self, ns: u64) {
        self.0.fetch_max(ns, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
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

/// What `stats` reports of a task that ended (kept compact: the reply is built on demand).
struct EndedTask {
    task: TaskId,
    /// Whose it was (the client's uid): `stats` shows a user only theirs.
    uid: u32,
    kind: std::sync::Arc<str>,
    client: ClientId,
    grants: u32,
    run_ns: u64,
}

struct TaskState {
    client: ClientId,
    /// The client's uid.
    uid: u32,
    grants: u32,
    /// The unit of the latest grant.
    last_unit: Option<UnitId>,
    /// The client is blocked in `alloc`: a grant is its answer.
    awaiting: bool,
    /// A grant made before the client asked again (it was still freeing): sent as
    /// the answer to its next `alloc`.
    pending: Option<Reply>,
    /// The policy queued the task centrally when it arrived: a voluntary release puts
    /// it back there rather than on its unit's queue.
    central: bool,
    /// The client named the task's process (`MetaInfo::pid`): its agent moves the
    /// process's memory where a grant says (first touch, a policy's page migration).
    process: bool,
}

/// The daemon's side of the engine: clients and what the core does not keep.
struct Live {
    /// OpenCL / CUDA device index of each unit (accelerators).
    devices: Vec<Option<u32>>,
    state: FxHashMap<TaskId, TaskState>,
    client_task: FxHashMap<ClientId, TaskId>,
    /// Effects of the request being handled.
    effects: Vec<Effect>,
    grants: u64,
    /// Flag deadlines: (time ns, unit, task) when a running task's slice ends.
    deadlines: Vec<(u64, UnitId, TaskId)>,
    /// A task left a unit since the last [`Live::offer_idle`]: a unit may have gone idle.
    vacated: bool,
    /// Ended tasks, newest last, at most [`HISTORY`] of them (a daemon runs for
    /// months: its memory must not grow with every task it ever served).
    history: VecDeque<EndedTask>,
    /// The run record (the simulator's format), when the daemon traces.
    record: Option<Record>,
    /// The task whose client is being answered a re-request: its verdict tells it to
    /// release, no flag is needed.
    answering: Option<TaskId>,
    violations: u64,
    policy_name: String,
    /// Measures the processes of tasks whose client named one (`MetaInfo::pid`, as
    /// `hetsched run` does), when the daemon measures at all.
    processes: Option<Sampling>,
    /// Why the process a task named is not measured (its uid's cap).
    unmeasured: FxHashMap<TaskId, String>,
    /// Ticks run.
    ticks: u64,
}

pub struct Arbiter {
    core: EngineCore,
    policy: Box<dyn Policy>,
    live: Live,
    clock: Box<dyn Clock>,
    next_task: TaskId,
    /// The task graph a client declared, if any (one at a time; see `graphs`).
    graph: Option<LiveGraph>,
    /// The daemon's uid: the owner of tasks allocated without one (`alloc`).
    own_uid: u32,
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
        Arbiter::with_clock(machine, devices, policy, Box::new(WallClock::default()))
    }

    /// As [`Self::new`], with time from `clock`.
    pub fn with_clock(
        machine: Machine,
        mut devices: Vec<Option<u32>>,
        policy: Box<dyn Policy>,
        clock: Box<dyn Clock>,
    ) -> Arbiter {
        devices.resize(machine.units.len(), None);
        let core = EngineCore::new(machine, policy.as_ref());
        Arbiter {
            live: Live {
                devices,
                state: FxHashMap::default(),
                client_task: FxHashMap::default(),
                effects: Vec::new(),
                grants: 0,
                deadlines: Vec::new(),
                vacated: false,
                history: VecDeque::new(),
                record: None,
                answering: None,
                violations: 0,
                policy_name: policy.name().to_string(),
                processes: None,
                unmeasured: FxHashMap::default(),
                ticks: 0,
            },
            core,
            policy,
            clock,
            next_task: 0,
            graph: None,
            own_uid: rustix::process::getuid().as_raw(),
        }
    }

    /// Whether the policy reads performance models: then they are worth loading at the
    /// start and keeping at the end ([`Arbiter::set_models`], [`Arbiter::models`]).
    pub fn wants_models(&self) -> bool {
        self.policy.wants_models()
    }

    /// Starts from models kept from earlier runs (before the first client).
    pub fn set_models(&mut self, models: PerfModels) {
        self.core.set_models(models);
    }

    /// The performance models: those it started from and what it has observed since.
    pub fn models(&self) -> &PerfModels {
        self.core.models()
    }

    /// Keep the run record from now on (for `--trace`).
    pub fn start_recording(&mut self) {
        let m = self.core.machine();
        let kinds = m.units.iter().map(|u| u.kind).collect();
        let names = m.units.iter().map(|u| u.name.clone()).collect();
        self.live.record = Some(Record::new(self.policy.name(), kinds, names));
    }

    /// The run record so far, with the units as they are now.
    pub fn record(&self) -> Option<Record> {
        let mut r = self.live.record.clone()?;
        let m = self.core.machine();
        r.unit_kinds = m.units.iter().map(|u| u.kind).collect();
        r.unit_names = m.units.iter().map(|u| u.name.clone()).collect();
        // Those of the graph under way so far.
        if let Some(g) = self.core.graph() {
            r.transfers.extend_from_slice(g.copies());
        }
        Some(r)
    }

    pub fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }

    /// The core's time set to the clock's, for the request being handled.
    fn tick_clock(&mut self) {
        let now = self.clock.now_ns();
        self.core.set_now(now);
    }

    pub fn policy_name(&self) -> &str {
        self.policy.name()
    }

    /// Contract violations refused so far.
    pub fn violations(&self) -> u64 {
        self.live.violations
    }

    /// The effects gathered while handling a request, with the flags of holders that
    /// could move to a unit left idle.
    fn effects(&mut self) -> Vec<Effect> {
        self.release_ready();
        self.live.offer_idle(&self.core);
        std::mem::take(&mut self.live.effects)
    }

    /// A refused decision has been logged; nothing else to do.
    /// Measure the processes of tasks that name one (CPU time and `/proc` accounting;
    /// hardware counters where the machine has a PMU), on a thread of their own that
    /// passes at the policy's tick interval where it can (see `sampler`): their samples
    /// feed the policy's ticks and `stats`. Returns what the samples can hold here
    /// (which sources measure, and why the others do not), for the daemon to say once.
    pub fn measure_processes(&mut self) -> String {
        let period = self.policy.tick_interval().unwrap_or(STATS_PERIOD_NS);
        let sampling = Sampling::start(std::time::Duration::from_nanos(period.max(MIN_PERIOD_NS)));
        let said = sampling.describe();
        self.live.processes = Some(sampling);
        said
    }

    fn served(r: Result<(), ContractError>) {
        debug_assert!(r.is_ok(), "the daemon refuses violations: {r:?}");
    }

    /// A client asks for a unit. `Ok(effects)`: the grant (to this client or others)
    /// comes as effects; no effect for this client means it waits.
    pub fn alloc(&mut self, client: ClientId, meta: &MetaInfo) -> Result<Vec<Effect>, Failure> {
        self.alloc_for(client, meta, self.own_uid, None)
    }

    /// [`Arbiter::alloc`] of a client of uid `uid`, with the process it named if it
    /// was found to own it (`ClientProcess::check`): the process is measured and its
    /// memory follows the grants. `meta.pid` itself is never believed: a task allocated
    /// without `process` has none.
    pub fn alloc_for(
        &mut self,
        client: ClientId,
        meta: &MetaInfo,
        uid: u32,
        process: Option<ClientProcess>,
    ) -> Result<Vec<Effect>, Failure> {
        self.tick_clock();
        if let Some(&task) = self.live.client_task.get(&client) {
            let st = self.live.state.get_mut(&task).unwrap();
            if let Some(grant) = st.pending.take() {
                // Granted again while it was freeing: this is the answer.
                return Ok(vec![Effect::Reply(client, grant)]);
            }
            if let Placement::Running(u) = self.core.tasks()[&task].placement() {
                return Err(if self.core.releasing(u).is_some() {
                    (
                        ErrorCode::OutOfOrder,
                        "alloc before free: free the unit you were told to give up".into(),
                    )
                } else {
                    (
                        ErrorCode::OutOfOrder,
                        "alloc while holding a unit: free it first".into(),
                    )
                });
            }
            // The same task again after yielding: it already waits in a queue.
            st.awaiting = true;
            return Ok(self.effects());
        }
        if let Some(LiveGraph::Running(g)) = &self.graph {
            if let Some(i) = g.parked.get(&client) {
                return Err((
                    ErrorCode::OutOfOrder,
                    format!("alloc while waiting for graph task {i}: its predecessors have not all finished"),
                ));
            }
        }
        // Every field by name: a field added to the meta info is used here, or said not
        // to be. `pid` is never believed: `process` is what was found of it.
        // (Checked here; `admit` uses the rest.)
        let MetaInfo {
            kind,
            affinity,
            bytes_in: _,
            weight: _,
            bytes_out: _,
            checkpoint_ns,
            numa_home,
            pid: _,
            device: _,
            signature: _,
            graph_task,
        } = meta;
        if kind.len() > MAX_KIND {
            return Err((
                ErrorCode::Malformed,
                format!(
                    "task kind is {} bytes long (at most {MAX_KIND})",
                    kind.len()
                ),
            ));
        }
        for t in UnitType::ALL {
            let a = affinity.get(t);
            if !(a.is_finite() && a >= 0.0) {
                return Err((
                    ErrorCode::Malformed,
                    format!("affinity for {t} must be a non-negative number"),
                ));
            }
        }
        for t in UnitType::ALL {
            let ns = checkpoint_ns.get(t);
            if ns > MAX_CHECKPOINT_NS {
                return Err((
                    ErrorCode::Malformed,
                    format!(
                        "checkpoint_ns.{t} must be in [0, {MAX_CHECKPOINT_NS}] (one day), not {ns}"
                    ),
                ));
            }
        }
        let machine = self.core.machine();
        if let Some(node) = numa_home.filter(|&n| n == u32::MAX || machine.numa_node(n).is_none()) {
            let nodes: Vec<String> = machine
                .numa_nodes
                .iter()
                .map(|n| n.os_index.to_string())
                .collect();
            return Err((
                ErrorCode::Malformed,
                format!(
                    "numa_home {node} is not a NUMA node of this machine (its nodes: {})",
                    if nodes.is_empty() {
                        "none".to_string()
                    } else {
                        nodes.join(", ")
                    }
                ),
            ));
        }
        match graph_task {
            Some(i) => self.graph_alloc(client, meta, uid, process, *i),
            None => {
                let id = self.next_task;
                self.next_task += 1;
                self.admit(client, meta, uid, process, id)?;
                Ok(self.effects())
            }
        }
    }

    /// The alloc of graph task `index`: admitted if it is ready, else parked until it is.
    fn graph_alloc(
        &mut self,
        client: ClientId,
        meta: &MetaInfo,
        uid: u32,
        process: Option<ClientProcess>,
        index: u32,
    ) -> Result<Vec<Effect>, Failure> {
        let Some(LiveGraph::Running(g)) = &mut self.graph else {
            return Err((
                ErrorCode::OutOfOrder,
                format!("graph_task {index}: no task graph runs (declare one with `graph`)"),
            ));
        };
        if g.uid != uid {
            return Err((
                ErrorCode::PermissionDenied,
                format!(
                    "graph_task {index}: the task graph running is uid {}'s, not yours ({uid})",
                    g.uid
                ),
            ));
        }
        let n = g.slots.len();
        let Some(slot) = g.slots.get_mut(index as usize) else {
            return Err((
                ErrorCode::Malformed,
                format!("graph_task {index}: accepted 0..{n} (the graph's tasks)"),
            ));
        };
        match slot {
            Slot::Waiting => {
                *slot = Slot::Parked(Box::new(Parked {
                    client,
                    meta: meta.clone(),
                    uid,
                    process,
                }));
                g.parked.insert(client, index);
                Ok(self.effects())
            }
            Slot::Ready => {
                *slot = Slot::Arrived;
                let id = g.first + u64::from(index);
                self.admit(client, meta, uid, process, id)?;
                Ok(self.effects())
            }
            Slot::Parked(_) | Slot::Arrived => Err((
                ErrorCode::OutOfOrder,
                format!("graph_task {index}: allocated already"),
            )),
        }
    }

    /// A task of a client whose meta info was checked arrives, with id `id`: queued (the
    /// grant comes as an effect) or refused.
    fn admit(
        &mut self,
        client: ClientId,
        meta: &MetaInfo,
        uid: u32,
        process: Option<ClientProcess>,
        id: TaskId,
    ) -> Result<(), Failure> {
        let MetaInfo {
            kind,
            affinity,
            bytes_in,
            weight,
            bytes_out,
            checkpoint_ns,
            numa_home,
            // Believed only as `process`, found by the server.
            pid: _,
            device,
            signature,
            // The id says which graph task it is.
            graph_task: _,
        } = meta;
        // A graph task's kernel, footprint and priority are the graph's.
        let of_graph = self
            .core
            .graph()
            .and_then(|g| Some(&g.graph().tasks[g.index(id)?]));
        let named = process.is_some();
        let class = TaskClass {
            kind: of_graph.map_or_else(|| kind.as_str().into(), |t| t.kernel.clone()),
            affinity: *affinity,
            bytes_in: *bytes_in,
            bytes_out: *bytes_out,
            checkpoint_ns: *checkpoint_ns,
            weight: (*weight).max(1),
            // An I/O device the machine lists by that name (`hetsched run --device`).
            io_device: device.as_deref().and_then(|name| {
                let devices = &self.core.machine().io_devices;
                devices
                    .iter()
                    .position(|d| d.name == name)
                    .map(|i| i as u32)
            }),
            signature: signature.as_ref().map(|s| s.to_json().into()),
            // Accelerator-resident data is the simulator's alone.
            device_home: None,
            // Outside a graph the protocol carries no data sizes: a client's models are
            // per type.
            footprint: of_graph.map_or(0, |t| t.footprint),
            priority: of_graph.map_or(0, |t| t.priority),
        };
        let mut task = Task::new(id, self.core.now(), Arc::new(class));
        task.set_numa_home(*numa_home);
        self.live.state.insert(
            id,
            TaskState {
                client,
                uid,
                grants: 0,
                last_unit: None,
                awaiting: true,
                pending: None,
                central: false,
                process: named,
            },
        );
        self.live.client_task.insert(client, id);
        let staged = self.core.tasks_mut().stage(task);
        // Live, a task's length is unknown: no ideal time (slowdowns are not defined).
        let arrival = self
            .core
            .arrive(self.policy.as_mut(), &mut self.live, staged, 0);
        match arrival.expect("the daemon refuses violations") {
            Arrival::Queued(q) => {
                if let Some(st) = self.live.state.get_mut(&id) {
                    st.central = q == QueueId::Central;
                }
                // Measured only once queued: a task refused here never ends, so nothing
                // would stop measuring it.
                if let (Some(m), Some(process)) = (&mut self.live.processes, process) {
                    if let Err(why) = m.track(id, process, uid) {
                        self.live.unmeasured.insert(id, why);
                    }
                }
                Ok(())
            }
            Arrival::Unrunnable => {
                self.live.forget(id);
                let present: Vec<String> =
                    self.online_types().iter().map(|t| t.to_string()).collect();
                Err((
                    ErrorCode::NoUnit,
                    format!("no unit can run task kind {:?}: its affinities are 0 for every unit type present ({})", meta.kind, present.join(", ")),
                ))
            }
            Arrival::Rejected(reason) => Err((
                ErrorCode::NoUnit,
                format!("the policy rejected the task: {reason}"),
            )),
        }
    }

    /// A part of the task graph `client` (of `uid`) declares (see `Request::Graph`):
    /// `None` until the last part, then the id of the graph's first task and its size.
    /// The graph is checked whole (its dependencies derived) before it runs; its tasks
    /// without predecessors are ready at once.
    pub fn graph_part(
        &mut self,
        client: ClientId,
        uid: u32,
        data: &[u64],
        tasks: &[GraphTaskInfo],
        last: bool,
    ) -> Result<Option<(TaskId, u32)>, Failure> {
        self.tick_clock();
        let declaring = match &mut self.graph {
            None => self
                .graph
                .insert(LiveGraph::Declaring(Declaring::new(client, uid))),
            Some(g) if g.owner() != client => {
                return Err((
                    ErrorCode::Busy,
                    format!("{}: one graph at a time", g.describe()),
                ))
            }
            Some(g) => g,
        };
        let LiveGraph::Declaring(d) = declaring else {
            return Err((
                ErrorCode::OutOfOrder,
                "graph: this connection's graph runs already (one graph a connection)".into(),
            ));
        };
        if let Err(e) = d.append(data, tasks) {
            self.graph = None;
            return Err((ErrorCode::Malformed, e));
        }
        if !last {
            return Ok(None);
        }
        let Some(LiveGraph::Declaring(d)) = self.graph.take() else {
            unreachable!("declaring, as matched above")
        };
        let n = d.graph.tasks.len();
        let run =
            hetsched_core::dataflow::GraphRun::new(Arc::new(d.graph), self.core.machine(), true)
                .map_err(|e| (ErrorCode::Malformed, format!("graph: {e}")))?;
        let first = self.next_task;
        self.next_task += n as u64;
        let mut run = run.starting_at(first);
        if self.live.record.is_some() {
            run.keep_copies();
        }
        self.core.set_graph(run);
        self.graph = Some(LiveGraph::Running(Running {
            owner: client,
            uid: d.uid,
            first,
            slots: (0..n).map(|_| Slot::Waiting).collect(),
            left: n,
            parked: FxHashMap::default(),
        }));
        self.release_ready();
        if n == 0 {
            self.end_graph("it has no task");
        }
        Ok(Some((first, n as u32)))
    }

    /// The graph's tasks that became ready: those a client asked for arrive now, in the
    /// order they became ready (as in the simulator); the others wait for their alloc.
    fn release_ready(&mut self) {
        while let Some(i) = self.core.pop_ready() {
            let Some(LiveGraph::Running(g)) = &mut self.graph else {
                return;
            };
            let slot = std::mem::replace(&mut g.slots[i as usize], Slot::Arrived);
            let Slot::Parked(p) = slot else {
                g.slots[i as usize] = Slot::Ready;
                continue;
            };
            g.parked.remove(&p.client);
            let id = g.first + u64::from(i);
            if let Err((code, message)) = self.admit(p.client, &p.meta, p.uid, p.process, id) {
                self.live
                    .effects
                    .push(Effect::Reply(p.client, Reply::Error { code, message }));
            }
        }
    }

    /// A task of the running graph finished: the graph ends with its last.
    fn graph_task_finished(&mut self, task: TaskId) {
        if let Some(LiveGraph::Running(g)) = &mut self.graph {
            if task
                .checked_sub(g.first)
                .is_some_and(|i| i < g.slots.len() as u64)
            {
                g.left -= 1;
                if g.left == 0 {
                    self.end_graph("all its tasks finished");
                }
            }
        }
    }

    /// The graph ends: its tasks still queued or running go on as independent tasks;
    /// clients waiting for one that never became ready are told why.
    fn end_graph(&mut self, why: &str) {
        if let (Some(run), Some(r)) = (self.core.take_graph(), &mut self.live.record) {
            r.transfers.extend_from_slice(run.copies());
        }
        let Some(LiveGraph::Running(g)) = self.graph.take() else {
            return;
        };
        for slot in g.slots {
            if let Slot::Parked(p) = slot {
                self.live.effects.push(Effect::Reply(
                    p.client,
                    Reply::Error {
                        code: ErrorCode::NoUnit,
                        message: format!(
                            "the task graph ended ({why}) before this task's predecessors finished"
                        ),
                    },
                ));
            }
        }
    }

    fn online_types(&self) -> Vec<UnitType> {
        let mut v: Vec<UnitType> = (0..self.core.units() as UnitId)
            .filter(|&u| self.core.is_online(u))
            .map(|u| self.core.unit_kind(u))
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// The client's task and the unit it holds (running or releasing).
    fn held(&self, client: ClientId) -> Result<(TaskId, UnitId), Failure> {
        let task = *self
            .live
            .client_task
            .get(&client)
            .ok_or((ErrorCode::OutOfOrder, "no task: alloc first".to_string()))?;
        match self.core.tasks()[&task].placement() {
            Placement::Running(u) => Ok((task, u)),
            Placement::Queued(_) => Err((ErrorCode::OutOfOrder, "no unit granted yet".into())),
        }
    }

    /// A checkpoint: asks the policy whether the client's task keeps its unit.
    pub fn rerequest(&mut self, client: ClientId) -> Result<Verdict, Failure> {
        self.tick_clock();
        let (task, u) = self.held(client)?;
        if let Some((_, then)) = self.core.releasing(u) {
            // Told to give the unit up (a verdict or a tick's migration): where to.
            return Ok(match then {
                Requeue::Migrate(to) => Verdict::Migrate { to },
                Requeue::Queue(_) => Verdict::Yield,
            });
        }
        let (policy, live) = (self.policy.as_mut(), &mut self.live);
        live.answering = Some(task);
        let verdict = if !self.core.is_online(u) {
            // The unit is leaving: the task must go elsewhere, where the policy says.
            let q = self.core.resubmit(policy, live, task);
            let q = q.unwrap_or(QueueId::Central);
            Self::served(self.core.release(policy, live, u, Requeue::Queue(q)));
            Verdict::Yield
        } else {
            match self.core.checkpoint(policy, live, u) {
                Ok(CheckpointDecision::Continue) | Err(_) => {
                    live.arm(&self.core, policy, u, task);
                    Verdict::Keep
                }
                Ok(CheckpointDecision::Yield) => Verdict::Yield,
                Ok(CheckpointDecision::Migrate(to)) => Verdict::Migrate { to },
            }
        };
        live.answering = None;
        Ok(verdict)
    }

    /// The client releases its unit: finished, after a denied re-request, or of its own
    /// accord (then its task waits on that unit's queue, or the central one if the policy
    /// put it there when it arrived).
    pub fn free(&mut self, client: ClientId, finished: bool) -> Result<Vec<Effect>, Failure> {
        self.tick_clock();
        let task = *self
            .live
            .client_task
            .get(&client)
            .ok_or((ErrorCode::OutOfOrder, "free without a task".to_string()))?;
        let Placement::Running(u) = self.core.tasks()[&task].placement() else {
            return Err((ErrorCode::OutOfOrder, "free without a granted unit".into()));
        };
        let (policy, live) = (self.policy.as_mut(), &mut self.live);
        let r = if self.core.releasing(u).is_some() {
            self.core.released(policy, live, u, finished)
        } else if finished {
            self.core.complete(policy, live, u)
        } else {
            let q = if live.state[&task].central {
                QueueId::Central
            } else {
                QueueId::Unit(u)
            };
            live.answering = Some(task);
            let r = self.core.release(policy, live, u, Requeue::Queue(q));
            live.answering = None;
            r.and_then(|_| self.core.released(policy, live, u, false))
        };
        Self::served(r);
        if finished {
            self.graph_task_finished(task);
        }
        Ok(self.effects())
    }

    /// A client went away (closed, crashed, killed): it loses its task at once.
    pub fn disconnect(&mut self, client: ClientId) -> Vec<Effect> {
        self.tick_clock();
        match &mut self.graph {
            Some(g) if g.owner() == client => match g {
                LiveGraph::Declaring(_) => self.graph = None,
                LiveGraph::Running(_) => self.end_graph("the client that declared it went away"),
            },
            Some(LiveGraph::Running(g)) => {
                // Asked for a graph task that was not ready: another may ask for it.
                if let Some(i) = g.parked.remove(&client) {
                    g.slots[i as usize] = Slot::Waiting;
                }
            }
            _ => {}
        }
        let Some(&task) = self.live.client_task.get(&client) else {
            return self.effects();
        };
        let fallback = self.live.state[&task].last_unit.unwrap_or(0);
        // In the record its segment stops and it leaves unfinished (`reject`).
        Self::served(self.core.withdraw(
            self.policy.as_mut(),
            &mut self.live,
            task,
            "client went away",
            fallback,
        ));
        self.effects()
    }

    /// Raises flags for slices that ended and runs the policy's tick when due; returns
    /// the next deadline (slice end or tick), if any. The server calls it on every turn
    /// of its loop and sleeps at most until that deadline.
    pub fn expire(&mut self) -> (Vec<Effect>, Option<u64>) {
        self.tick_clock();
        if let Some(m) = &mut self.live.processes {
            m.flush();
        }
        let now = self.core.now();
        let live = &mut self.live;
        let mut i = 0;
        while i < live.deadlines.len() {
            let (at, u, t) = live.deadlines[i];
            if at <= now {
                live.deadlines.swap_remove(i);
                if self.core.running(u).is_some_and(|r| r.task == t) {
                    live.ask(t);
                }
            } else {
                i += 1;
            }
        }
        if self.core.next_tick().is_some_and(|t| t <= now) {
            Self::served(self.core.tick(self.policy.as_mut(), &mut self.live));
            self.live.ticks += 1;
        }
        let next_slice = self.live.deadlines.iter().map(|d| d.0).min();
        let next = match (next_slice, self.core.next_tick()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        (self.effects(), next)
    }

    // ---- control API ----

    fn unit_info(&self, u: UnitId) -> UnitInfo {
        self.live.unit_info(&self.core, u)
    }

    pub fn list_units(&self) -> Vec<UnitInfo> {
        (0..self.core.units() as UnitId)
            .filter(|&u| {
                self.core.is_online(u)
                    || self.core.running(u).is_some()
                    || self.core.releasing(u).is_some()
            })
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
        // A grant's CPUs become a program's affinity: only this machine's PUs, once each.
        let pus: Vec<u32> = self.core.machine().pus.iter().map(|p| p.os_index).collect();
        for (i, cpu) in new.cpus.iter().enumerate() {
            if !pus.contains(cpu) {
                return Err((
                    ErrorCode::Invalid,
                    format!(
                        "cpus[{i}] = {cpu}: not a PU of this machine (its PUs: {})",
                        hetsched_core::cpu_list::format(&pus)
                    ),
                ));
            }
            if new.cpus[..i].contains(cpu) {
                return Err((
                    ErrorCode::Invalid,
                    format!("cpus[{i}] = {cpu}: given twice"),
                ));
            }
        }
        self.tick_clock();
        self.live.devices.push(new.device);
        let unit = Unit {
            id: 0,
            kind: new.kind,
            os_index: new.cpus.first().copied(),
            cpus: new.cpus.clone(),
            cpu_kind: None,
            capacity: new.capacity,
            numa_node: None,
            accelerator: None,
            name: new.name.clone(),
        };
        let added = self
            .core
            .add_unit(self.policy.as_mut(), &mut self.live, unit);
        Self::served(added.map(|_| ()));
        // A new unit may be better for running tasks: let their next checkpoint ask.
        let holders: Vec<TaskId> = self
            .core
            .running_all()
            .iter()
            .flatten()
            .map(|r| r.task)
            .collect();
        for t in holders {
            if self.core.tasks()[&t].task.affinity.runs_on(new.kind) {
                self.live.ask(t);
            }
        }
        Ok(self.effects())
    }

    pub fn remove_unit(&mut self, id: UnitId) -> Result<Vec<Effect>, Failure> {
        if !self.core.is_online(id) {
            return Err((ErrorCode::Invalid, format!("no online unit {id}")));
        }
        self.tick_clock();
        if let Some(r) = self.core.running(id) {
            self.live.ask(r.task);
        }
        // Tasks waiting for this unit go where the policy puts them now.
        Self::served(
            self.core
                .take_offline(self.policy.as_mut(), &mut self.live, id),
        );
        Ok(self.effects())
    }

    /// Changes a unit; a change with any invalid field is refused whole.
    pub fn alter_unit(&mut self, id: UnitId, changes: &UnitChanges) -> Result<(), Failure> {
        let machine = self.core.machine_mut();
        let unit = machine
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
        let unit = &mut machine.units[id as usize];
        if let Some(c) = changes.capacity {
            unit.capacity = c;
        }
        if let Some(n) = &changes.name {
            unit.name = n.clone();
        }
        if !link {
            return Ok(());
        }
        // A unit added at run time has no accelerator record yet: it gets one.
        let a = machine.accelerator_entry(id as usize);
        a.link_bandwidth_bytes_per_s = bandwidth.or(a.link_bandwidth_bytes_per_s);
        a.link_latency_s = latency.or(a.link_latency_s);
        Ok(())
    }

    /// The daemon's statistics: of every task (`viewer` `None`: root and the daemon's
    /// own uid ask so), or only of the tasks of uid `viewer`, since what a sample
    /// measures of a process is its owner's business. A running task whose process is
    /// measured carries the sampler's latest span of it, with its age: `stats` reads
    /// what the sampling thread published and never reads a process itself.
    pub fn stats(&mut self, viewer: Option<u32>) -> Reply {
        self.tick_clock();
        let now = self.core.now();
        let spans = self.live.processes.as_ref().map(Sampling::spans);
        let mut tasks: Vec<TaskStats> = self
            .live
            .history
            .iter()
            .filter(|h| viewer.is_none_or(|v| v == h.uid))
            .map(|h| TaskStats {
                task: h.task,
                kind: h.kind.to_string(),
                client: h.client,
                state: "ended".into(),
                unit: None,
                grants: h.grants,
                run_ms: h.run_ns as f64 / 1e6,
                ..TaskStats::default()
            })
            .collect();
        for (id, e) in self.core.tasks().iter() {
            let st = &self.live.state[id];
            if viewer.is_some_and(|v| v != st.uid) {
                continue;
            }
            let (state, unit) = match e.placement() {
                Placement::Running(u) => ("running".to_string(), Some(u)),
                Placement::Queued(QueueId::Unit(u)) => ("queued".to_string(), Some(u)),
                Placement::Queued(QueueId::Central) => ("queued".to_string(), None),
            };
            // The current segment counts too: run time so far.
            let running_ns = match e.placement() {
                Placement::Running(u) => self
                    .core
                    .running(u)
                    .map_or(0, |r| now.saturating_sub(r.since_ns)),
                Placement::Queued(_) => 0,
            };
            let mut t = TaskStats {
                task: *id,
                kind: e.task.kind.to_string(),
                client: st.client,
                state,
                unit,
                grants: st.grants,
                run_ms: (e.run_ns + running_ns) as f64 / 1e6,
                unmeasured: self.live.unmeasured.get(id).cloned(),
                ..TaskStats::default()
            };
            if let (Some(m), Some(spans), Placement::Running(u)) =
                (&self.live.processes, &spans, e.placement())
            {
                if let (Some((sample, age)), Some(span)) =
                    (m.sample(spans, *id, u), m.span(spans, *id))
                {
                    t.sample = Some(sample);
                    t.sample_age_ms = Some(age.as_secs_f64() * 1e3);
                    t.threads = Some(span.threads);
                    t.threads_read = Some(span.threads_read);
                }
            }
            tasks.push(t);
        }
        tasks.sort_by_key(|t| t.task);
        Reply::Stats {
            grants: self.live.grants,
            decisions: self.core.decisions(),
            ticks: self.live.ticks,
            tasks,
            sampler: self.live.processes.as_ref().map(Sampling::stats),
        }
    }
}

impl Live {
    fn unit_info(&self, core: &EngineCore, id: UnitId) -> UnitInfo {
        let m = core.machine();
        let u = &m.units[id as usize];
        let link = u.accelerator.map(|a| &m.accelerators[a as usize]);
        UnitInfo {
            id,
            kind: u.kind,
            name: u.name.clone(),
            cpus: u.cpus.clone(),
            device: self.devices.get(id as usize).copied().flatten(),
            capacity: u.capacity,
            online: core.is_online(id),
            running: core.running(id).map(|r| r.task),
            queued: core.queue(id).len(),
            link_bandwidth_bytes_per_s: link.and_then(|a| a.link_bandwidth_bytes_per_s),
            link_latency_s: link.and_then(|a| a.link_latency_s),
        }
    }

    /// Raises the flag of `task`'s client (once per request).
    fn ask(&mut self, task: TaskId) {
        if let Some(st) = self.state.get(&task) {
            let e = Effect::Ask(st.client);
            if !self.effects.contains(&e) {
                self.effects.push(e);
            }
        }
    }

    /// Sets the flag deadline of `task` on `u`: the end of its slice, if it has one.
    fn arm<P: Policy + ?Sized>(
        &mut self,
        core: &EngineCore,
        policy: &mut P,
        u: UnitId,
        task: TaskId,
    ) {
        self.deadlines.retain(|d| d.1 != u);
        let slot = core.tasks().slot_of(&task).expect("a running task is live");
        if let Some(ns) = core.slice(policy, u, task, slot) {
            self.deadlines
                .push((core.now().saturating_add(ns), u, task));
        }
    }

    /// A unit just went idle and nothing took it: the holders that could run there
    /// must ask at their next checkpoint, where the policy may offer it (migration).
    /// Edge-triggered: a `keep` answer resets the flag, so idle units do not keep every
    /// checkpoint off the fast path.
    fn offer_idle(&mut self, core: &EngineCore) {
        // Only after a task left a unit: otherwise every turn of the server's loop
        // (`expire`) would raise the flags again beside units that were idle all along,
        // and each in-slice re-request would go to the daemon.
        if !std::mem::take(&mut self.vacated) {
            return;
        }
        // The kinds of the idle units first, then one pass over the running tasks:
        // O(units + running), not their product.
        let mut idle_kinds = PerUnitType::<bool>::default();
        for u in 0..core.units() as UnitId {
            if core.is_idle(u) {
                idle_kinds.set(core.unit_kind(u), true);
            }
        }
        for r in core.running_all().iter().flatten() {
            let affinity = &core.tasks()[&r.task].task.affinity;
            if UnitType::ALL
                .iter()
                .any(|&k| idle_kinds.get(k) && affinity.runs_on(k))
            {
                self.ask(r.task);
            }
        }
    }

    /// Drops a task's client state, keeping what `stats` reports of it.
    fn forget(&mut self, task: TaskId) -> Option<TaskState> {
        let st = self.state.remove(&task)?;
        self.client_task.remove(&st.client);
        Some(st)
    }
}

impl Host for Live {
    const RELEASES_AT_ONCE: bool = false;

    fn record(&mut self, event: Event) {
        if let Some(r) = &mut self.record {
            r.events.push(event);
        }
    }

    /// Refuses the decision: logged (the first ones in full, then a sample) and counted.
    fn refuse(&mut self, violation: ContractError) -> Result<(), ContractError> {
        self.violations += 1;
        let n = self.violations;
        if n <= LOG_FIRST || n.is_multiple_of(LOG_EVERY) {
            eprintln!(
                "hetsched daemon: policy {}: {violation}: decision refused ({n} so far)",
                self.policy_name
            );
        }
        Ok(())
    }

    /// A pick is a grant: the reply to the waiting client, or kept for its next `alloc`.
    fn started<P: Policy + ?Sized>(
        &mut self,
        core: &mut EngineCore,
        policy: &mut P,
        u: UnitId,
        task: TaskId,
        slot: usize,
    ) -> Result<(), ContractError> {
        self.grants += 1;
        // A graph task's inputs come to the unit's memory node (the client copies them;
        // the engine keeps where they are valid for the policies' estimates).
        core.fetch_inputs(task, u);
        self.arm(core, policy, u, task);
        // A process's pages go where it first touches them (Linux's local policy) and
        // where the policy moves them; a library client's memory is its own business.
        let process = self.state.get(&task).is_some_and(|st| st.process);
        let memory_node = if process {
            match core.follow_memory(policy, u, task, slot, true) {
                MemoryMove::FirstTouch(node) | MemoryMove::Migrates(node) => Some(node),
                MemoryMove::Stays => None,
            }
        } else {
            None
        };
        let reply = Reply::Granted {
            unit: self.unit_info(core, u),
            task,
            memory_node,
        };
        let st = self
            .state
            .get_mut(&task)
            .expect("a granted task has a client");
        st.grants += 1;
        st.last_unit = Some(u);
        if std::mem::take(&mut st.awaiting) {
            self.effects.push(Effect::Reply(st.client, reply));
        } else {
            st.pending = Some(reply);
        }
        Ok(())
    }

    fn left(&mut self, _core: &mut EngineCore, u: UnitId, _task: TaskId, _ends: bool) {
        self.deadlines.retain(|d| d.1 != u);
        self.vacated = true;
    }

    /// A queued task may change the answer of any holder it could replace.
    fn queued(&mut self, core: &EngineCore, task: TaskId, _queue: QueueId) {
        let affinity = core.tasks()[&task].task.affinity;
        for (u, r) in core.running_all().iter().enumerate() {
            if let Some(r) = r {
                if affinity.runs_on(core.unit_kind(u as UnitId)) {
                    self.ask(r.task);
                }
            }
        }
    }

    /// Told to give its unit up outside a re-request (a tick): its flag says so.
    fn releasing(&mut self, _core: &EngineCore, _u: UnitId, task: TaskId) {
        if self.answering != Some(task) {
            self.ask(task);
        }
    }

    /// The sampler's latest span of the task's process, if it has one (the engine's
    /// view stays otherwise).
    fn measure(&mut self, _core: &EngineCore, sample: &mut Sample) {
        let (Some(m), Some(task)) = (&self.processes, sample.task) else {
            return;
        };
        if !m.tracks(task) {
            return;
        }
        if let Some((measured, _)) = m.sample(&m.spans(), task, sample.unit) {
            *sample = Sample {
                memory_bound: sample.memory_bound,
                ..measured
            };
        }
    }

    fn ended(&mut self, core: &EngineCore, task: TaskId, slot: usize) {
        if let Some(m) = &mut self.processes {
            m.untrack(task);
        }
        self.unmeasured.remove(&task);
        let Some(st) = self.forget(task) else {
            return;
        };
        let e = core.tasks().at_slot(slot);
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(EndedTask {
            task,
            uid: st.uid,
            kind: e.task.kind.clone(),
            client: st.client,
            grants: st.grants,
            run_ns: e.run_ns,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsched_core::machine::UnitGranularity;
    use hetsched_core::policy::{PickDecision, SubmitDecision};
    use hetsched_core::record::EventKind;

    fn arbiter(cores: u32, policy: &str) -> Arbiter {
        let policy = hetsched_policies::build(policy, 0).unwrap();
        arbiter_with(cores, policy, Box::<WallClock>::default())
    }

    /// An arbiter over `cores` CPU units running `policy`, with time from `clock`.
    fn arbiter_with(cores: u32, policy: Box<dyn Policy>, clock: Box<dyn Clock>) -> Arbiter {
        let text = format!("name = \"t\"\n[[package]]\ncores = {cores}\n");
        let mut m = hetsched_topology::machine_file::parse(&text, "test").unwrap();
        m.derive_units(UnitGranularity::Pu);
        let devices = crate::devices::described(&m);
        Arbiter::with_clock(m, devices, policy, clock)
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
            affinity: [(UnitType::Cpu, cpu), (UnitType::OpenCl, opencl)]
                .into_iter()
                .collect(),
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
            affinity: [(UnitType::Cpu, 1.0)].into_iter().collect(),
            weight: 1024,
            ..MetaInfo::default()
        }
    }

    fn granted(effects: &[Effect], client: ClientId) -> bool {
        effects
            .iter()
            .any(|e| matches!(e, Effect::Reply(c, Reply::Granted { .. }) if *c == client))
    }

    /// A chain a → b → c declared by client 100 (uid 7), in parts of one task.
    fn declare_chain(a: &mut Arbiter) -> TaskId {
        let task = |after: &[u32]| GraphTaskInfo {
            kernel: "step".into(),
            footprint: 0,
            access: Vec::new(),
            after: after.to_vec(),
            priority: 0,
            flops: 0.0,
        };
        assert_eq!(a.graph_part(100, 7, &[], &[task(&[])], false), Ok(None));
        assert_eq!(a.graph_part(100, 7, &[], &[task(&[0])], false), Ok(None));
        a.graph_part(100, 7, &[], &[task(&[1])], true)
            .unwrap()
            .unwrap()
            .0
    }

    fn graph_meta(i: u32) -> MetaInfo {
        MetaInfo {
            graph_task: Some(i),
            ..meta()
        }
    }

    fn refused_with(effects: &[Effect], client: ClientId) -> Option<String> {
        effects.iter().find_map(|e| match e {
            Effect::Reply(c, Reply::Error { message, .. }) if *c == client => Some(message.clone()),
            _ => None,
        })
    }

    /// Tasks of a declared graph are granted only once their predecessors were freed
    /// as finished, whichever order their clients ask in; the graph ends with its last
    /// task, and another can then be declared (its ids after the first's).
    #[test]
    fn a_graph_task_waits_for_its_predecessors_and_the_graph_ends_with_its_last() {
        let mut a = arbiter(2, "eager");
        // An independent task first: graph ids come after it.
        assert!(granted(&a.alloc_for(1, &meta(), 7, None).unwrap(), 1));
        let first = declare_chain(&mut a);
        assert_eq!(first, 1);
        // c and b ask first: they wait, though a unit is idle.
        assert!(a.alloc_for(13, &graph_meta(2), 7, None).unwrap().is_empty());
        assert!(a.alloc_for(12, &graph_meta(1), 7, None).unwrap().is_empty());
        let e = a.alloc_for(12, &graph_meta(1), 7, None).unwrap_err();
        assert_eq!(e.0, ErrorCode::OutOfOrder, "{}", e.1);
        assert!(granted(
            &a.alloc_for(11, &graph_meta(0), 7, None).unwrap(),
            11
        ));
        let e = a.alloc_for(14, &graph_meta(0), 7, None).unwrap_err();
        assert_eq!(e.1, "graph_task 0: allocated already");
        // Given up without finishing, a waits again: b stays blocked.
        assert!(!granted(&a.free(11, false).unwrap(), 12));
        assert!(granted(
            &a.alloc_for(11, &graph_meta(0), 7, None).unwrap(),
            11
        ));
        assert!(granted(&a.free(11, true).unwrap(), 12));
        assert!(!granted(&a.free(1, true).unwrap(), 13));
        assert!(granted(&a.free(12, true).unwrap(), 13));
        // A second graph while this one runs is refused, saying whose runs.
        let e = a.graph_part(200, 8, &[], &[], true).unwrap_err();
        assert_eq!(e.0, ErrorCode::Busy);
        assert!(
            e.1.contains("client 100's task graph (uid 7) runs, 1 of 3 tasks left"),
            "{}",
            e.1
        );
        a.free(13, true).unwrap();
        assert!(a.graph.is_none() && a.core.graph().is_none());
        assert_eq!(declare_chain(&mut a), 4);
    }

    /// Only the declaring uid's clients run its graph's tasks; indices out of range
    /// are refused by field; a waiting client that leaves frees its index for another;
    /// when the declaring client leaves, the graph ends and those still waiting are
    /// told why.
    #[test]
    fn a_graph_is_its_uids_and_ends_when_its_owner_leaves() {
        let mut a = arbiter(1, "dmda");
        declare_chain(&mut a);
        let e = a.alloc_for(20, &graph_meta(0), 8, None).unwrap_err();
        assert_eq!(e.0, ErrorCode::PermissionDenied, "{}", e.1);
        let e = a.alloc_for(20, &graph_meta(3), 7, None).unwrap_err();
        assert_eq!(e.1, "graph_task 3: accepted 0..3 (the graph's tasks)");
        assert!(a.alloc_for(21, &graph_meta(1), 7, None).unwrap().is_empty());
        a.disconnect(21);
        assert!(a.alloc_for(22, &graph_meta(1), 7, None).unwrap().is_empty());
        assert!(granted(
            &a.alloc_for(23, &graph_meta(0), 7, None).unwrap(),
            23
        ));
        let effects = a.disconnect(100);
        let why = refused_with(&effects, 22).expect("the waiting client is told");
        assert!(
            why.contains("the client that declared it went away"),
            "{why}"
        );
        // The running task goes on as an independent task.
        a.free(23, true).unwrap();
        assert_eq!(a.violations(), 0);
        // A bad part ends the declaration: the next one starts afresh.
        let bad = GraphTaskInfo {
            kernel: String::new(),
            footprint: 0,
            access: Vec::new(),
            after: Vec::new(),
            priority: 0,
            flops: 0.0,
        };
        let e = a.graph_part(300, 7, &[], &[bad], false).unwrap_err();
        assert_eq!(e.0, ErrorCode::Malformed);
        assert!(a.graph.is_none());
    }

    /// A grant tells a `hetsched run` agent where its process's memory goes: the unit's
    /// node at the first grant of a task without a home (first touch), and the unit's
    /// node when the policy migrates the pages of a task whose memory is on the other
    /// node (numa-amp moves them, cfs never does); a library client is told nothing.
    #[test]
    fn a_grant_names_the_memory_node_of_a_process_as_the_policy_decides() {
        let text = "name = \"two nodes\"\ndistances = [[10, 20], [20, 10]]\n\
                    [[package]]\ncores = 1\n[[package]]\ncores = 1\n\
                    [[numa_node]]\nmemory = \"1 GiB\"\n[[numa_node]]\nmemory = \"1 GiB\"\n";
        let memory_nodes = |policy: &str, home: Option<u32>, pid: Option<u32>| {
            let mut m = hetsched_topology::machine_file::parse(text, "test").unwrap();
            m.derive_units(UnitGranularity::Pu);
            let nodes: Vec<Option<u32>> = m.units.iter().map(|u| u.numa_node).collect();
            assert_eq!(nodes, [Some(0), Some(1)]);
            let devices = crate::devices::described(&m);
            let mut a = Arbiter::new(m, devices, hetsched_policies::build(policy, 0).unwrap());
            let meta = MetaInfo {
                numa_home: home,
                pid,
                ..meta()
            };
            let uid = rustix::process::getuid().as_raw();
            let named = || pid.map(|p| ClientProcess::check(p, uid).unwrap());
            let mut grants: Vec<(u32, Option<u32>)> = (1..=2)
                .flat_map(|client| a.alloc_for(client, &meta, uid, named()).unwrap())
                .filter_map(|e| match e {
                    Effect::Reply(
                        _,
                        Reply::Granted {
                            unit, memory_node, ..
                        },
                    ) => Some((unit.id, memory_node)),
                    _ => None,
                })
                .collect();
            grants.sort();
            grants
        };
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let me = Some(child.id());
        // Memory on node 0: the task granted node 1's unit has its pages moved by numa-amp.
        assert_eq!(
            memory_nodes("numa-amp", Some(0), me),
            [(0, None), (1, Some(1))]
        );
        assert_eq!(memory_nodes("cfs", Some(0), me), [(0, None), (1, None)]);
        // No home: placed by first touch where each starts, whatever the policy.
        for policy in ["numa-amp", "cfs"] {
            assert_eq!(
                memory_nodes(policy, None, me),
                [(0, Some(0)), (1, Some(1))],
                "{policy}"
            );
        }
        // No process: the daemon moves nothing.
        assert_eq!(
            memory_nodes("numa-amp", Some(0), None),
            [(0, None), (1, None)]
        );
        // A pid in the meta that was not checked (plain `alloc`) is not believed.
        let mut m = hetsched_topology::machine_file::parse(text, "test").unwrap();
        m.derive_units(UnitGranularity::Pu);
        let devices = crate::devices::described(&m);
        let mut a = Arbiter::new(m, devices, hetsched_policies::build("numa-amp", 0).unwrap());
        let meta = MetaInfo {
            numa_home: None,
            pid: me,
            ..meta()
        };
        let effects = a.alloc(1, &meta).unwrap();
        assert!(
            matches!(
                &effects[..],
                [Effect::Reply(
                    1,
                    Reply::Granted {
                        memory_node: None,
                        ..
                    }
                )]
            ),
            "{effects:?}"
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// A task no unit can run is refused before its process is measured, however many
    /// times a client tries: nothing is left measured (each would hold a pidfd and a
    /// place in its uid's cap for good, since a refused task never ends).
    #[test]
    fn a_task_no_unit_can_run_leaves_nothing_measured() {
        let mut a = arbiter(1, "fcfs");
        a.measure_processes();
        let uid = rustix::process::getuid().as_raw();
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let gpu_only = MetaInfo {
            affinity: [(UnitType::Gpu, 1.0)].into_iter().collect(),
            pid: Some(child.id()),
            ..meta()
        };
        for client in 1..=100 {
            let p = ClientProcess::check(child.id(), uid).unwrap();
            let (code, _) = a.alloc_for(client, &gpu_only, uid, Some(p)).unwrap_err();
            assert_eq!(code, ErrorCode::NoUnit);
            a.disconnect(client);
        }
        let m = a.live.processes.as_ref().unwrap();
        assert_eq!(m.measured(), (0, 0));
        // A task that runs is measured.
        let runs = MetaInfo {
            pid: Some(child.id()),
            ..meta()
        };
        let p = ClientProcess::check(child.id(), uid).unwrap();
        a.alloc_for(200, &runs, uid, Some(p)).unwrap();
        assert_eq!(a.live.processes.as_ref().unwrap().measured(), (1, 1));
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// An added CPU unit pins grants to PUs of this machine, each once; anything else
    /// is refused by field and changes nothing.
    #[test]
    fn an_added_cpu_unit_names_only_this_machines_pus() {
        let mut a = arbiter(2, "fcfs");
        let unit = |cpus: Vec<u32>| NewUnit {
            kind: UnitType::Cpu,
            name: "extra".into(),
            cpus,
            device: None,
            capacity: 1024,
        };
        let (code, m) = a.add_unit(&unit(vec![4_000_000_000])).unwrap_err();
        assert_eq!(code, ErrorCode::Invalid);
        assert_eq!(
            m,
            "cpus[0] = 4000000000: not a PU of this machine (its PUs: 0-1)"
        );
        let (_, m) = a.add_unit(&unit(vec![1, 1])).unwrap_err();
        assert_eq!(m, "cpus[1] = 1: given twice");
        assert_eq!(a.list_units().len(), 2);
        a.add_unit(&unit(vec![1])).unwrap();
        assert_eq!(a.list_units().len(), 3);
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
        for policy in hetsched_policies::test_specs() {
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

    /// Breaks the contract once in each kind of answer, then behaves like fcfs.
    #[derive(Default)]
    struct Broken {
        submits: u32,
        picks: u32,
    }

    impl Policy for Broken {
        fn name(&self) -> &str {
            "broken"
        }
        fn submit(&mut self, _: &hetsched_core::policy::View, _: TaskId) -> SubmitDecision {
            self.submits += 1;
            let q = if self.submits == 1 {
                QueueId::Unit(99)
            } else {
                QueueId::Central
            };
            SubmitDecision::Enqueue(q)
        }
        fn pick(&mut self, view: &hetsched_core::policy::View, _: UnitId) -> PickDecision {
            self.picks += 1;
            match view.central().front() {
                Some(_) if self.picks == 1 => PickDecision::Run(12345),
                Some(t) => PickDecision::Run(t),
                None => PickDecision::Idle,
            }
        }
        fn checkpoint(
            &mut self,
            _: &hetsched_core::policy::View,
            _: TaskId,
            _: UnitId,
        ) -> CheckpointDecision {
            CheckpointDecision::Migrate(99)
        }
    }

    #[test]
    fn a_policy_that_breaks_the_contract_is_refused_and_the_daemon_serves_on() {
        let mut a = arbiter(1, "fcfs");
        a.policy = Box::new(Broken::default());
        a.start_recording();
        // A placement on a unit that does not exist: the task is rejected, its client told.
        let (code, message) = a.alloc(1, &meta()).unwrap_err();
        assert_eq!(code, ErrorCode::NoUnit);
        assert!(
            message.contains("policy contract: submit placed task 0 on unit 99"),
            "{message}"
        );
        // A pick of a task that is not queued: refused, the unit stays idle.
        assert!(a.alloc(2, &meta()).unwrap().is_empty());
        assert_eq!(a.violations(), 2);
        // The next event lets the unit pick again, correctly this time.
        assert!(granted(&a.alloc(3, &meta()).unwrap(), 2));
        // A migration to a unit that does not exist: refused, the task keeps its unit.
        assert_eq!(a.rerequest(2).unwrap(), Verdict::Keep);
        assert_eq!(a.violations(), 3);
        assert!(granted(&a.free(2, true).unwrap(), 3));
        a.free(3, true).unwrap();
        a.record().unwrap().check().unwrap();
    }

    /// A live task's checkpoint interval, bytes out and NUMA home reach the policy's
    /// view of it: `affinity` without time-sharing lets a CPU task without checkpoints
    /// run unsliced, and slices one that declares a CPU checkpoint interval at its
    /// checkpoints.
    #[test]
    fn a_live_tasks_checkpoint_interval_reaches_the_policy() {
        const MS: u64 = 1_000_000;
        let policy = hetsched_policies::build("affinity:fcfs=1", 0).unwrap();
        let (policy, log) = hetsched_policies::recording::Recording::new(policy);
        let mut a = arbiter_with(1, Box::new(policy), Box::<WallClock>::default());
        let slices = || {
            log.lock()
                .unwrap()
                .iter()
                .filter_map(|c| match c {
                    hetsched_policies::recording::Call::TimeSlice { task, answer, .. } => {
                        Some((*task, *answer))
                    }
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        assert!(granted(&a.alloc(1, &meta()).unwrap(), 1));
        a.free(1, true).unwrap();
        let declared = MetaInfo {
            bytes_out: 4096,
            checkpoint_ns: [(UnitType::Cpu, 3 * MS)].into_iter().collect(),
            numa_home: a.core.machine().numa_nodes.first().map(|n| n.os_index),
            ..meta()
        };
        assert!(granted(&a.alloc(2, &declared).unwrap(), 2));
        let task = a.core.tasks().iter().next().unwrap().1.task.clone();
        assert_eq!(task.checkpoint_ns.get(UnitType::Cpu), 3 * MS);
        assert_eq!(
            (task.bytes_out, task.numa_home()),
            (4096, declared.numa_home)
        );
        // affinity's CPU check period (10 ms) rounded up to whole 3 ms intervals.
        let [(0, none), (1, Some(slice))] = slices()[..] else {
            panic!("{:?}", slices())
        };
        assert_eq!((none, slice), (None, 12 * MS));
    }

    /// Declared fields out of range are refused, naming the field and the range.
    #[test]
    fn out_of_range_meta_info_is_refused_by_field() {
        let mut a = arbiter(1, "fcfs");
        let long = MetaInfo {
            checkpoint_ns: [(UnitType::OpenCl, MAX_CHECKPOINT_NS + 1)]
                .into_iter()
                .collect(),
            ..meta()
        };
        let (code, message) = a.alloc(1, &long).unwrap_err();
        assert_eq!(code, ErrorCode::Malformed);
        assert!(
            message.contains("checkpoint_ns.opencl must be in [0, 86400000000000]"),
            "{message}"
        );
        let nodes: Vec<u32> = a
            .core
            .machine()
            .numa_nodes
            .iter()
            .map(|n| n.os_index)
            .collect();
        // u32::MAX stands for no home inside a task: never a node, whatever the machine.
        for node in [7, u32::MAX] {
            let far = MetaInfo {
                numa_home: Some(node),
                ..meta()
            };
            let (code, message) = a.alloc(1, &far).unwrap_err();
            assert_eq!(code, ErrorCode::Malformed);
            let expected = format!("numa_home {node} is not a NUMA node");
            assert!(message.contains(&expected), "{message}");
            assert!(!nodes.contains(&node), "{nodes:?}");
        }
        // Nothing was admitted, and a good request is served.
        assert!(granted(&a.alloc(1, &meta()).unwrap(), 1));
    }

    /// Idle units raise a holder's flag once, when one goes idle: a unit idle all along
    /// does not send each of the holder's re-requests to the daemon.
    #[test]
    fn units_idle_all_along_leave_the_holders_flag_down() {
        let mut a = arbiter(3, "fcfs");
        assert!(granted(&a.alloc(1, &meta()).unwrap(), 1));
        assert!(granted(&a.alloc(2, &meta()).unwrap(), 2));
        // Two more units idle: nothing new, no flag, however often the loop turns.
        for _ in 0..3 {
            assert!(a.expire().0.is_empty());
        }
        // One goes idle: the other holder may move there, once.
        let effects = a.free(2, true).unwrap();
        assert!(effects.contains(&Effect::Ask(1)), "{effects:?}");
        assert_eq!(a.rerequest(1).unwrap(), Verdict::Keep);
        assert!(a.expire().0.is_empty());
    }

    /// cfs without its new-idle pull: a unit left idle while another has a task waiting
    /// gets that task from the next live tick, not from its own pick.
    #[test]
    fn a_live_tick_balances_what_cfs_without_newidle_leaves_unbalanced() {
        const MS: u64 = 1_000_000;
        let clock = ManualClock::default();
        let cfs = hetsched_policies::build("cfs:newidle=0,balance_ms=4", 0).unwrap();
        let mut a = arbiter_with(2, cfs, Box::new(clock.clone()));
        clock.set(MS);
        assert!(granted(&a.alloc(1, &meta()).unwrap(), 1)); // u0
        assert!(granted(&a.alloc(2, &meta()).unwrap(), 2)); // u1
        assert!(!granted(&a.alloc(3, &meta()).unwrap(), 3)); // waits on u0
                                                             // Task 2 ends: u1 idles, and task 3 still waits on u0.
        assert!(!granted(&a.free(2, true).unwrap(), 3));
        let Reply::Stats { ticks, .. } = a.stats(None) else {
            panic!()
        };
        assert_eq!(ticks, 0);
        clock.set(3 * MS);
        assert!(!granted(&a.expire().0, 3), "no tick is due yet");
        // The tick at 4 ms moves it to u1, which starts it.
        clock.set(4 * MS);
        let (effects, _) = a.expire();
        assert!(
            effects.iter().any(|e| matches!(e,
                Effect::Reply(3, Reply::Granted { unit, .. }) if unit.id == 1)),
            "{effects:?}"
        );
        let Reply::Stats { ticks, .. } = a.stats(None) else {
            panic!()
        };
        assert_eq!(ticks, 1);
    }

    #[test]
    fn ticks_run_live_on_the_policys_interval_while_tasks_are_live() {
        let clock = ManualClock::default();
        let cfs = hetsched_policies::build("cfs:balance_ms=4", 0).unwrap();
        let (policy, log) = hetsched_policies::recording::Recording::new(cfs);
        let mut a = arbiter_with(2, Box::new(policy), Box::new(clock.clone()));
        let ticks = || {
            log.lock()
                .unwrap()
                .iter()
                .filter_map(|c| match c {
                    hetsched_policies::recording::Call::Tick { t_ns, .. } => Some(*t_ns),
                    _ => None,
                })
                .collect::<Vec<u64>>()
        };
        const MS: u64 = 1_000_000;
        // No task: no tick is due.
        assert_eq!(a.expire().1, None);
        clock.set(MS);
        a.alloc(1, &meta()).unwrap();
        a.alloc(2, &meta()).unwrap();
        // The server sleeps until the first multiple of the interval.
        assert_eq!(a.expire().1, Some(4 * MS));
        clock.set(4 * MS);
        a.expire();
        clock.set(5 * MS);
        a.free(1, true).unwrap();
        a.free(2, true).unwrap();
        clock.set(8 * MS);
        // The tick after the last task ended still comes, then none.
        assert_eq!(a.expire().1, None);
        assert_eq!(ticks(), vec![4 * MS, 8 * MS]);
        // A late daemon ticks once and then on the next multiple after now.
        clock.set(9 * MS);
        a.alloc(3, &meta()).unwrap();
        clock.set(21 * MS);
        let (_, next) = a.expire();
        assert_eq!(ticks(), vec![4 * MS, 8 * MS, 21 * MS]);
        assert_eq!(next, Some(24 * MS));
    }
}
