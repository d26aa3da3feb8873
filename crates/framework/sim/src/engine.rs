//! The discrete-event engine: integer-nanosecond time, events ordered by (time, class,
//! sequence number) so that runs are deterministic, and run segments timed by the speed
//! model. The queue state and the schedule of policy calls are the engine core's
//! (`hetsched_core::engine_core`), shared with the live daemon; this module is the
//! simulator's [`Host`] around it: time, segments, run ends and shared memory bandwidth.
//!
//! At equal times, run ends are handled before arrivals, and arrivals before ticks. Run
//! ends wait in a calendar queue ([`RunEnds`]); the one pending arrival and the one
//! pending tick wait beside it.
//! Arrivals are pulled lazily from an iterator and finished tasks are dropped, so memory
//! grows with live tasks, not with the length of the run (unless the recorder keeps
//! events). An iterator that said `None` is asked again after each event, so that a
//! closed workload (a task restarts when it ends) can feed its restarts from what the
//! recorder saw.
//!
//! Time stops at [`HORIZON_NS`]: an arrival or a run end past it (absurd work, speeds
//! or bandwidths) is an input error, not an overflow.
//!
//! What a run may cost is bounded where it is spent, each bound in [`Config`] (a
//! scenario sets them, `scenario::limits` says why each is what it is):
//! - memory: the tasks live at once ([`Config::max_live_tasks`], checked as each task
//!   arrives) and the events a recorder keeps ([`Config::max_kept_events`], a kept run
//!   record: `--trace`, Python), checked every [`WATCH_EVERY`] events; either stops the
//!   run with an input error;
//! - wall time: every [`WATCH_EVERY`] events the run publishes its progress to
//!   [`Config::watch`] (a progress line drawn by another thread) and stops, with
//!   [`Error::Interrupted`], if that was told to stop (Ctrl-C);
//! - an explicit event limit ([`Config::max_events`]: `end.max_events`,
//!   `--max-events`), an input error when reached.
//!
//! The checks share one comparison per event: the event count against the next event
//! at which one is due.
//!
//! A task no unit of the machine can run is rejected by the engine before the policy
//! sees it. A policy that breaks the contract (a [`ContractError`]) stops the run with
//! `Error::Runtime`.

use crate::graphs::GraphTasks;
use crate::io::IoStreams;
use crate::run_ends::RunEnds;
use crate::speed::SpeedModel;
use crate::task::{SimTask, Workload};
use hetsched_core::dataflow::{GraphRun, Traffic};
use hetsched_core::engine_core::{Arrival, ContractError, EngineCore, Host, MemoryMove};
use hetsched_core::machine::{Machine, UnitType};
use hetsched_core::ns::round_u64;
use hetsched_core::perf_model::PerfModels;
use hetsched_core::policy::{CheckpointDecision, Policy, Running, UnitId};
use hetsched_core::record::{Event, Metrics, Recorder};
use hetsched_core::slab::Slab;
use hetsched_core::task::{Task, TaskId};
use hetsched_core::task_store::Staged;
use hetsched_core::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Engine settings that are not the policy's business.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    /// Time an accelerator checkpoint costs (state save), charged at each checkpoint.
    pub checkpoint_cost_ns: u64,
    /// Stop at this time even if tasks are left.
    pub max_time_ns: Option<u64>,
    /// Fail (an input error) when the run takes more engine events than this.
    pub max_events: Option<u64>,
    /// Fail (an input error) when more tasks than this are live at once (arrived and
    /// not ended): what the run's memory grows with.
    pub max_live_tasks: Option<u64>,
    /// Fail (an input error) when the recorder keeps more events than this in memory
    /// ([`Recorder::kept`]; checked every [`WATCH_EVERY`] events).
    pub max_kept_events: Option<u64>,
    /// Where the run publishes its progress, and whether to stop (see [`Progress`]).
    pub watch: Option<Arc<Progress>>,
    /// Performance models kept from earlier runs, for a policy that reads them
    /// ([`Policy::wants_models`]).
    pub models: PerfModels,
    /// In a task graph, a task's input copies are issued only when it starts, not
    /// when it is queued on a unit (StarPU's prefetch, the default).
    pub fetch_at_start: bool,
}

/// Engine events between two looks at [`Config::watch`] and [`Config::max_kept_events`]:
/// about 1–3 ms of a run at the engine's 5–15 M events per second, so that Ctrl-C
/// stops it at once and a progress line moves smoothly, for one comparison per event.
pub const WATCH_EVERY: u64 = 1 << 14;

/// A run's progress, published every [`WATCH_EVERY`] engine events (and at its end) for
/// another thread to show, and a flag that thread sets to stop the run (with
/// [`Error::Interrupted`]). Shared through [`Config::watch`]; several runs one after
/// the other may share one (each publishes its own counts).
#[derive(Debug, Default)]
pub struct Progress {
    /// Engine events so far.
    pub events: AtomicU64,
    /// Simulated time, ns.
    pub now_ns: AtomicU64,
    /// Tasks arrived, and of them those completed and rejected.
    pub submitted: AtomicU64,
    pub completed: AtomicU64,
    pub rejected: AtomicU64,
    stop: AtomicBool,
}

impl Progress {
    /// Asks the run to stop at its next look (within [`WATCH_EVERY`] events).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether [`Progress::stop`] was called.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn publish(&self, events: u64, now_ns: u64, s: &RunSummary) {
        self.events.store(events, Ordering::Relaxed);
        self.now_ns.store(now_ns, Ordering::Relaxed);
        self.submitted.store(s.submitted, Ordering::Relaxed);
        self.completed.store(s.completed, Ordering::Relaxed);
        self.rejected.store(s.rejected, Ordering::Relaxed);
    }
}

/// One progress is equal to itself only (a [`Config`] compares by what it shares).
impl PartialEq for Progress {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

/// The end of simulated time: 10^9 s (about 31 years), far from `u64::MAX` ns so that
/// sums of times within it cannot overflow.
pub const HORIZON_NS: u64 = 1_000_000_000 * 1_000_000_000;

/// What a live task costs in memory, in bytes, for messages: the engine's 64 (task
/// store slot, work, queue entry, index) and a recorder's per-task state (the streaming
/// CSV's outcome in the making), rounded up; `crates/tools/cli/tests/simulate_memory.rs`
/// measures the first.
pub const LIVE_TASK_BYTES: u64 = 128;

/// The rate at which a task's pages move to another NUMA node (bytes/s), when a
/// policy migrates its memory with it: 1 GB/s, our assumption for the kernel's page
/// migration (page copies plus page-table updates), not a measured value.
pub const PAGE_MIGRATION_BYTES_PER_S: f64 = 1e9;

/// The clock of a capacity-1024 CPU for the counters of modelled samples (cycles =
/// busy time × this × capacity / 1024): 2 GHz, about the Xeon 7500 series of Ding et
/// al.'s Dell R910. CPI ratios do not depend on it; the memory stall per miss in
/// cycles does.
pub const REFERENCE_GHZ: f64 = 2.0;

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
    /// The performance models at the end (those the run started from, and what it
    /// observed), when the policy reads them: what to keep for the next run.
    pub models: Option<PerfModels>,
    /// The copies a task graph's data took between memory nodes.
    pub traffic: Traffic,
}

impl RunSummary {
    /// A run's end as every front end reports it: `metrics` count the tasks a time limit
    /// (`config.max_time_ns`) left; without one, a task left over is the policy's failure
    /// (it kept it queued), an error naming `policy`.
    pub fn settle(&self, metrics: &mut Metrics, config: &Config, policy: &str) -> Result<()> {
        metrics.unfinished = self.unfinished;
        if self.unfinished > 0 && config.max_time_ns.is_none() {
            return Err(Error::runtime(format!(
                "{policy}: {} tasks never finished (the policy left them queued)",
                self.unfinished
            )));
        }
        Ok(())
    }
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
/// entry or model (those of about 1,000 live tasks do not stay in the L1 cache).
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
struct Segment {
    finishes: bool,
    /// The task store slot of the unit's task (saves the id look-up on every run end).
    slot: u32,
    /// The handle of its model's parameters (saves reading it from the task's entry).
    params: u32,
    /// The NUMA node whose shared bandwidth the task draws on, or `NO_NODE` (four
    /// bytes, not an `Option`'s eight: with them the segment took two cache lines);
    /// read through [`Segment::bandwidth_node`].
    node: u32,
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

/// No node: machine files number far fewer nodes.
const NO_NODE: u32 = u32::MAX;

const _: () = assert!(std::mem::size_of::<Segment>() == 64);
// What `scenario::limits::MAX_KEPT_EVENTS` says a kept event costs.
const _: () = assert!(std::mem::size_of::<Event>() == 48);

impl Segment {
    /// The NUMA node whose shared bandwidth the task draws on, if any.
    #[inline]
    fn bandwidth_node(&self) -> Option<u32> {
        (self.node != NO_NODE).then_some(self.node)
    }
}

impl Default for Segment {
    fn default() -> Self {
        Segment {
            finishes: false,
            slot: 0,
            params: 0,
            node: NO_NODE,
            run_end: 0,
            compute_from_ns: 0,
            compute_ns: 0,
            factor: 0.0,
            slice_end_ns: NO_SLICE_END,
            remaining_ns: 0,
        }
    }
}

/// Each live (or staged) task's workload model: its work by task store slot, in chunks
/// freed as the store's are (a slot's work is released when its task ends), and a
/// four-byte handle to the rest of its model (its parameters without the work), kept in
/// the task's entry as its host word ([`TaskEntry::host`]). The parameters are shared
/// with the task staged before it when they are equal: tasks come from a few templates
/// (a scenario's entries, a benchmark's one kind), mostly in runs. 8 bytes a waiting
/// task here, instead of 128. What a task that started has still to do is beside it
/// (`Sim::remaining`).
///
/// [`TaskEntry::host`]: hetsched_core::task::TaskEntry::host
#[derive(Default)]
struct Models {
    /// The work in reference ns by slot ([`Workload::work_ns`], rounded once as the
    /// task is staged: arrival, first start and completion each read it).
    work: Slab<u64, 32768>,
    /// Parameters by handle.
    params: Vec<Shared>,
    /// Keys given so far.
    keys: u64,
    /// Handles no model shares any more, to reuse.
    free: Vec<u32>,
    /// The handle of the latest staged task's parameters.
    last: Option<u32>,
}

/// Model parameters shared by the tasks staged in a row with equal ones.
struct Shared {
    /// The parameters (`work_s` 0).
    params: Workload,
    /// Models sharing them.
    users: u32,
    /// A number no other parameters had, so that a handle reused for other parameters
    /// has another key (the speed model keeps ideal times by key).
    key: u64,
}

impl Models {
    /// Task store slot `slot` (not in use) takes the model `work`; returns the handle of
    /// its parameters.
    #[inline]
    fn stage(&mut self, slot: usize, work: &Workload) -> u32 {
        let handle = match self.last {
            Some(h) if self.params[h as usize].params.same_params(work) => {
                self.params[h as usize].users += 1;
                h
            }
            _ => {
                self.keys += 1;
                let shared = Shared {
                    params: Workload {
                        work_s: 0.0,
                        ..*work
                    },
                    users: 1,
                    key: self.keys,
                };
                let h = match self.free.pop() {
                    Some(h) => {
                        self.params[h as usize] = shared;
                        h
                    }
                    None => {
                        self.params.push(shared);
                        (self.params.len() - 1) as u32
                    }
                };
                *self.last.insert(h)
            }
        };
        *self.work.take(slot) = work.work_ns();
        handle
    }

    /// The model of slot `slot` (parameters `h`) goes.
    #[inline]
    fn release(&mut self, slot: usize, h: u32) {
        self.work.release(slot);
        let users = &mut self.params[h as usize].users;
        *users -= 1;
        if *users == 0 {
            self.free.push(h);
            if self.last == Some(h) {
                self.last = None;
            }
        }
    }

    /// The parameters behind handle `h` (of a live task; `work_s` 0).
    #[inline]
    fn shared(&self, h: u32) -> &Workload {
        &self.params[h as usize].params
    }

    /// The work of the task in slot `slot` in reference nanoseconds
    /// ([`Workload::work_ns`]).
    #[inline]
    fn work_ns(&self, slot: usize) -> u64 {
        *self.work.get(slot)
    }

    /// The key of the parameters behind handle `h` (unique to them).
    #[inline]
    fn key(&self, h: u32) -> u64 {
        self.params[h as usize].key
    }
}

/// The simulator's side of the engine: what the core does not keep.
struct Sim<'a, R: Recorder + ?Sized> {
    machine: &'a Machine,
    models: Models,
    /// The reference nanoseconds of work still to do of each task that started, by
    /// task store slot (integer, so that runs are exact; a running task's count lives
    /// in its unit's segment and is written back when it leaves the unit). A task that
    /// never ran has all its work to do: a million waiting tasks cost nothing here.
    remaining: Slab<u64, 32768>,
    speed: SpeedModel,
    config: &'a Config,
    rec: &'a mut R,
    run_ends: RunEnds,
    segs: Vec<Segment>,
    summary: RunSummary,
    /// Memory bandwidth in bytes/s of each NUMA node by OS index (None: not shared).
    node_bandwidth: Vec<Option<f64>>,
    /// Bytes/s drawn from each node by the tasks running on CPUs now.
    node_demand: Vec<f64>,
    /// The running I/O tasks' streams, sharing devices and links.
    io: IoStreams,
    /// The run is a task graph's (the engine core's data state times the copies).
    graph: bool,
    /// Devices that compute on the host's CPUs, and how busy both sides are.
    host: HostShare,
}

/// Devices that compute on the host's CPUs (`Accelerator::on_host`, PoCL's CPU device)
/// and the CPUs' own tasks slow each other: while such a device runs a task, every CPU
/// task runs at `cpu_share` of its speed (the smallest of the busy devices'); while `k`
/// of the `n` CPU units run tasks, the device runs at `1 − (1 − device_share) × k / n`
/// of its speed. Whenever one side starts or stops, the other side's running tasks are
/// re-planned at their new rates.
#[derive(Default)]
struct HostShare {
    /// Per unit: its `on_host` figures if it is such a device.
    device: Vec<Option<hetsched_core::machine::OnHost>>,
    /// The machine has such a device (else nothing here is looked at).
    any: bool,
    cpus: u32,
    cpus_busy: u32,
    /// Per unit: such a device is running a task.
    device_busy: Vec<bool>,
}

impl HostShare {
    fn new(machine: &Machine) -> HostShare {
        let device: Vec<_> = machine
            .units
            .iter()
            .map(|u| {
                u.accelerator
                    .and_then(|i| machine.accelerators.get(i as usize))
                    .and_then(|a| a.on_host)
            })
            .collect();
        HostShare {
            any: device.iter().any(Option::is_some),
            device_busy: vec![false; device.len()],
            device,
            cpus: machine
                .units
                .iter()
                .filter(|u| u.kind == UnitType::Cpu)
                .count() as u32,
            cpus_busy: 0,
        }
    }

    /// Unit ns per unit ns alone, on `u` now.
    #[inline]
    fn factor(&self, u: UnitId, kind: UnitType) -> f64 {
        if !self.any {
            return 1.0;
        }
        if let Some(h) = self.device[u as usize] {
            let busy = self.cpus_busy as f64 / self.cpus.max(1) as f64;
            return 1.0 / (1.0 - (1.0 - h.device_share) * busy);
        }
        if kind != UnitType::Cpu {
            return 1.0;
        }
        let share = self
            .device
            .iter()
            .zip(&self.device_busy)
            .filter(|(_, &busy)| busy)
            .filter_map(|(h, _)| h.map(|h| h.cpu_share))
            .fold(1.0, f64::min);
        1.0 / share
    }

    /// `u` starts (`true`) or stops running a task; which side's tasks to re-plan, if
    /// any: `Some(true)` the CPUs, `Some(false)` the devices.
    #[inline]
    fn turn(&mut self, u: UnitId, kind: UnitType, running: bool) -> Option<bool> {
        if !self.any {
            return None;
        }
        if self.device[u as usize].is_some() {
            self.device_busy[u as usize] = running;
            return Some(true);
        }
        if kind != UnitType::Cpu {
            return None;
        }
        if running {
            self.cpus_busy += 1;
        } else {
            self.cpus_busy = self.cpus_busy.saturating_sub(1);
        }
        Some(false)
    }
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
    I: IntoIterator<Item = SimTask>,
{
    run_with(machine, policy, arrivals, None, config, rec)
}

/// [`run`], then a task graph's tasks as they become ready (`graph`; see
/// `hetsched_core::dataflow`).
pub(crate) fn run_with<P, R, I>(
    machine: &Machine,
    policy: &mut P,
    arrivals: I,
    graph: Option<&GraphTasks>,
    config: &Config,
    rec: &mut R,
) -> Result<RunSummary>
where
    P: Policy + ?Sized,
    R: Recorder + ?Sized,
    I: IntoIterator<Item = SimTask>,
{
    let n = machine.units.len();
    if n > RunEnds::MAX_UNITS {
        return Err(Error::input(format!(
            "machine {}: {n} units, the simulator handles at most {}",
            machine.name,
            RunEnds::MAX_UNITS
        )));
    }
    let nodes = machine
        .numa_nodes
        .iter()
        .map(|n| n.os_index as usize + 1)
        .max()
        .unwrap_or(0);
    let mut node_bandwidth = vec![None; nodes];
    for node in &machine.numa_nodes {
        node_bandwidth[node.os_index as usize] = node.bandwidth_bytes_per_s.filter(|&b| b > 0.0);
    }
    // The core's own copy of the machine: policies read it directly (no copy-on-write
    // indirection on every access), for one copy per run.
    let mut core = EngineCore::new(machine.clone(), policy);
    if policy.wants_models() {
        core.set_models(config.models.clone());
    }
    if let Some(g) = graph {
        let mut run = GraphRun::new(g.graph().clone(), machine, !config.fetch_at_start)?;
        if rec.keeps_transfers() {
            run.keep_copies();
        }
        core.set_graph(run);
    }
    let mut sim = Sim {
        machine,
        models: Models::default(),
        remaining: Slab::default(),
        speed: SpeedModel::new(machine),
        config,
        rec,
        run_ends: RunEnds::default(),
        segs: vec![Segment::default(); n],
        summary: RunSummary::default(),
        node_bandwidth,
        node_demand: vec![0.0; nodes],
        io: IoStreams::new(machine),
        graph: graph.is_some(),
        host: HostShare::new(machine),
    };
    let mut arrivals = arrivals.into_iter();
    // The event count at which the event limit, the watch or the kept record is looked
    // at next (see `Sim::check`).
    let mut next_check = sim.next_check();
    // The next arrival waits in the task store, where it will live; its arrival time
    // beside it, read at every event.
    let mut pending = arrivals.next().map(|t| sim.stage(&mut core, t));
    if let Some(g) = graph {
        sim.arrive_ready(&mut core, policy, g)?;
    }
    loop {
        if pending.is_none() {
            // Asked again after it said `None`: a closed workload's generator has a task
            // once one of its tasks ended (it restarts at the end's time, not before).
            pending = arrivals.next().map(|t| sim.stage(&mut core, t));
            if let Some((p, _)) = pending {
                let task = &core.tasks().staged(p).task;
                if task.arrival_ns < core.now() {
                    return Err(Error::input(format!(
                        "task {} arrives at {} ns, before the current time {} ns: arrivals must be in time order",
                        task.id, task.arrival_ns, core.now()
                    )));
                }
            }
        }
        let mut earliest = sim.run_ends.next_ns().map(|t| (t, Next::RunEnd));
        for other in [
            pending.map(|(_, at)| (at, Next::Arrival)),
            core.next_tick().map(|t| (t, Next::Tick)),
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
            return Err(past_horizon(&core, t, next, pending.map(|(p, _)| p)));
        }
        if sim.summary.events == next_check {
            next_check = sim.check(&core)?;
        }
        if t < core.now() {
            return Err(Error::runtime(format!(
                "engine: event at {t} ns before now {} ns",
                core.now()
            )));
        }
        core.set_now(t);
        sim.summary.events += 1;
        match next {
            Next::RunEnd => {
                let end = sim.run_ends.pop().expect("a run end is scheduled");
                sim.run_end(&mut core, policy, end.unit, end.seq())?;
                // Only a completion makes graph tasks ready.
                if let Some(g) = graph {
                    sim.arrive_ready(&mut core, policy, g)?;
                }
            }
            Next::Arrival => {
                let (staged, at) = pending.take().expect("an arrival event has a pending task");
                pending = arrivals.next().map(|t| sim.stage(&mut core, t));
                if let Some((next, next_at)) = pending {
                    if next_at < at {
                        let tasks = core.tasks();
                        let (next, task) = (&tasks.staged(next).task, &tasks.staged(staged).task);
                        return Err(Error::input(format!(
                            "task {} arrives at {} ns, before task {} at {} ns: arrivals must be in time order",
                            next.id, next.arrival_ns, task.id, task.arrival_ns
                        )));
                    }
                }
                sim.arrive(&mut core, policy, staged)?;
            }
            Next::Tick => core.tick(policy, &mut sim)?,
        }
    }
    sim.summary.end_ns = core.now();
    if policy.wants_models() {
        sim.summary.models = Some(core.models().clone());
    }
    // Tasks never pulled (a generator past `max_time_ns`) are counted, not generated.
    let left = match arrivals.size_hint() {
        (lo, Some(hi)) if lo == hi => lo,
        _ => arrivals.count(),
    };
    let unreleased = core.graph().map_or(0, |g| g.unreleased());
    sim.summary.traffic = core.graph().map_or(Traffic::default(), |g| g.traffic);
    if let Some(g) = core.graph() {
        sim.rec.transfers(g.copies());
    }
    sim.summary.unfinished =
        core.tasks().len() as u64 + pending.is_some() as u64 + left as u64 + unreleased as u64;
    if let Some(w) = &config.watch {
        w.publish(sim.summary.events, core.now(), &sim.summary);
    }
    let s = &sim.summary;
    if core.tasks().is_empty() && s.work_done_ns != s.work_completed_ns {
        return Err(Error::runtime(format!(
            "engine invariant: work done {} ns != work of completed tasks {} ns",
            s.work_done_ns, s.work_completed_ns
        )));
    }
    Ok(sim.summary)
}

/// The error for an event at `t_ns`, past [`HORIZON_NS`].
#[cold]
fn past_horizon(core: &EngineCore, t_ns: u64, next: Next, pending: Option<Staged>) -> Error {
    let what = match (next, pending) {
        (Next::Arrival, Some(p)) => format!("task {} arrives", core.tasks().staged(p).task.id),
        (Next::RunEnd, _) => "a task would end".to_string(),
        _ => "a tick would come".to_string(),
    };
    Error::input(format!(
        "{what} at {:.3e} s, past the simulator's horizon of {:.0e} s: its arrival, work, speed, bandwidth or copy sizes are out of range",
        t_ns as f64 * 1e-9,
        HORIZON_NS as f64 * 1e-9
    ))
}

impl<R: Recorder + ?Sized> Sim<'_, R> {
    /// The first event count past the current one at which [`Sim::check`] is due: the
    /// event limit, or the next multiple of [`WATCH_EVERY`] if anything is watched.
    fn next_check(&self) -> u64 {
        let c = self.config;
        let events = self.summary.events;
        let watched = c.watch.is_some() || c.max_kept_events.is_some();
        let watch = match watched {
            true => (events / WATCH_EVERY + 1) * WATCH_EVERY,
            false => u64::MAX,
        };
        c.max_events.map_or(watch, |m| watch.min(m))
    }

    /// At the event limit, an input error; otherwise the progress published, Ctrl-C and
    /// the kept record looked at. Returns when to look again.
    #[cold]
    #[inline(never)]
    fn check(&mut self, core: &EngineCore) -> Result<u64> {
        let (c, events, now) = (self.config, self.summary.events, core.now());
        let secs = now as f64 * 1e-9;
        if c.max_events == Some(events) {
            return Err(Error::input(format!(
                "the run reached its event limit ({events} events, at {secs:.3} s simulated, {} tasks live, {} of {} arrived tasks done): stop it earlier with end.max_time_s, or raise end.max_events or --max-events (at most 10^12)",
                core.tasks().len(),
                self.summary.completed + self.summary.rejected,
                self.summary.submitted,
            )));
        }
        if let Some(w) = &c.watch {
            w.publish(events, now, &self.summary);
            if w.stopped() {
                return Err(Error::Interrupted(format!(
                    "interrupted at {secs:.3} s simulated, {} of {} arrived tasks done",
                    self.summary.completed + self.summary.rejected,
                    self.summary.submitted
                )));
            }
        }
        if let Some(max) = c.max_kept_events {
            let kept = self.rec.kept() as u64;
            if kept > max {
                return Err(Error::input(format!(
                    "the run record kept in memory reached {kept} events at {secs:.3} s simulated, more than the {max} this run may keep (about {} MiB): shorten the run with end.max_time_s, or keep no record of its events (`hetsched simulate` without --trace, Python's `simulate` without events or tasks: they stream or fold them)",
                    (max * std::mem::size_of::<Event>() as u64) >> 20
                )));
            }
        }
        Ok(self.next_check())
    }
}

impl<R: Recorder + ?Sized> Host for Sim<'_, R> {
    const RELEASES_AT_ONCE: bool = true;

    // Inlined into each event site, where the event's kind is known: a streaming
    // recorder's match on it (and the event's drop) folds away.
    #[inline(always)]
    fn record(&mut self, event: Event) {
        self.rec.record(event);
    }

    #[inline(always)]
    fn submit(&mut self, t_ns: u64, task: TaskId, ideal_ns: u64, kind: &Arc<str>) {
        self.rec.submit(t_ns, task, ideal_ns, kind);
    }

    #[cold]
    fn refuse(&mut self, violation: ContractError) -> Result<(), ContractError> {
        Err(violation)
    }

    #[inline]
    fn started<P: Policy + ?Sized>(
        &mut self,
        core: &mut EngineCore,
        policy: &mut P,
        u: UnitId,
        task: TaskId,
        slot: usize,
    ) -> Result<(), ContractError> {
        let h = core.tasks().at_slot(slot).host();
        let moved = self.follow_memory(core, policy, u, task, slot, h);
        let e = core.tasks().at_slot(slot);
        let remaining = match e.runs {
            1 => {
                let all = self.models.work_ns(slot);
                *self.remaining.take(slot) = all;
                all
            }
            _ => *self.remaining.get(slot),
        };
        let kind = core.unit_kind(u);
        // CPUs copy nothing (see the speed model): their speed entry is not read. A
        // graph task's copies are its data's, brought to the unit's memory node.
        let copy_in = if self.graph {
            core.fetch_inputs(task, u)
        } else {
            match kind {
                UnitType::Cpu => 0,
                _ => self.speed.copy_in_ns(&e.task, u),
            }
        }
        .saturating_add(moved)
        .saturating_add(self.speed.units[u as usize].setup_ns);
        let e = core.tasks().at_slot(slot);
        let params = self.models.shared(h);
        let seg = &mut self.segs[u as usize];
        seg.slot = slot as u32;
        seg.params = h;
        seg.node = Self::bandwidth_node(
            self.machine,
            &self.node_bandwidth,
            (u, kind),
            &e.task,
            params,
        )
        .unwrap_or(NO_NODE);
        seg.remaining_ns = remaining;
        let stream = Self::io_stream(self.machine, (u, kind), &e.task, params);
        if let Some((device, node)) = stream {
            self.io.start(u, device, node);
        }
        let node = self.draw(core, u, task, 1.0);
        let host = self.host.turn(u, kind, true);
        self.segment(
            core,
            policy,
            u,
            task,
            core.now().saturating_add(copy_in),
            None,
        );
        if let Some(cpus) = host {
            self.replan_host(core, u, cpus);
        }
        if let Some(n) = node {
            self.replan(core, Some(u), false, |sim, v| {
                sim.segs[v as usize].bandwidth_node() == Some(n)
            });
        }
        if stream.is_some() {
            self.replan_streams(core, Some(u));
        }
        Ok(())
    }

    /// The task's remaining work goes back to its entry, unless it ends (a write to a
    /// line far from the cache, for a value nobody would read); its node's other tasks
    /// are re-planned without its draw.
    #[inline]
    fn left(&mut self, core: &mut EngineCore, u: UnitId, task: TaskId, ends: bool) {
        let node = self.draw(core, u, task, -1.0);
        let seg = &mut self.segs[u as usize];
        seg.run_end = 0;
        debug_assert_eq!(core.tasks().at_slot(seg.slot as usize).task.id, task);
        if !ends {
            *self.remaining.get_mut(seg.slot as usize) = seg.remaining_ns;
        }
        if let Some(n) = node {
            self.replan(core, None, false, |sim, v| {
                sim.segs[v as usize].bandwidth_node() == Some(n)
            });
        }
        if self.io.stop(u) {
            self.replan_streams(core, None);
        }
        if let Some(cpus) = self.host.turn(u, core.unit_kind(u), false) {
            self.replan_host(core, u, cpus);
        }
    }

    /// Its model (and what it has still to do, if it started) goes.
    #[inline]
    fn ended(&mut self, core: &EngineCore, task: TaskId, slot: usize) {
        let e = core.tasks().at_slot(slot);
        debug_assert_eq!(e.task.id, task);
        self.models.release(slot, e.host());
        if e.runs > 0 {
            self.remaining.release(slot);
        }
    }

    /// Credits the work done in the segment cut short.
    fn preempting(&mut self, core: &mut EngineCore, u: UnitId, task: TaskId) {
        let seg = self.segs[u as usize];
        let done = core
            .now()
            .saturating_sub(seg.compute_from_ns)
            .min(seg.compute_ns);
        self.credit(core, u, task, done);
    }

    /// The counters a hardware profiler would read, from the running task's model
    /// (only for tasks whose model gives `instructions_per_s`): the work the sample's
    /// busy time does at the current segment's rate, its instructions and LLC misses,
    /// and the unit's cycles. Sources stay empty: nothing is measured.
    fn measure(&mut self, _core: &EngineCore, sample: &mut hetsched_core::policy::Sample) {
        let seg = &self.segs[sample.unit as usize];
        let work = self.models.shared(seg.params);
        if work.instructions_per_s <= 0.0 || seg.factor <= 0.0 {
            return;
        }
        let capacity = self.speed.units[sample.unit as usize].capacity;
        let busy = sample.busy_ns as f64;
        let instructions = busy / seg.factor * 1e-9 * work.instructions_per_s;
        sample.instructions = Some(round_u64(instructions));
        sample.cycles = Some(round_u64(
            busy * REFERENCE_GHZ * capacity / hetsched_core::machine::CAPACITY_SCALE as f64,
        ));
        sample.llc_misses = Some(round_u64(instructions * work.llc_mpki.max(0.0) / 1000.0));
    }

    /// The task's model value.
    fn memory_bound(&self, _core: &EngineCore, u: UnitId, _task: TaskId) -> Option<f64> {
        Some(
            self.models
                .shared(self.segs[u as usize].params)
                .memory_bound,
        )
    }
}

impl<R: Recorder + ?Sized> Sim<'_, R> {
    /// Where `task`'s memory is as it starts on `u` ([`EngineCore::follow_memory`]):
    /// returns the copy time of a migration, charged before it computes (`memory_bytes`
    /// at [`PAGE_MIGRATION_BYTES_PER_S`]).
    fn follow_memory<P: Policy + ?Sized>(
        &mut self,
        core: &mut EngineCore,
        policy: &mut P,
        u: UnitId,
        task: TaskId,
        slot: usize,
        h: u32,
    ) -> u64 {
        let work = self.models.shared(h);
        match core.follow_memory(policy, u, task, slot, work.first_touch) {
            MemoryMove::Migrates(_) => hetsched_core::ns::ceil_u64(
                work.memory_bytes.max(0.0) / PAGE_MIGRATION_BYTES_PER_S * 1e9,
            ),
            MemoryMove::Stays | MemoryMove::FirstTouch(_) => 0,
        }
    }

    /// Stages an arriving task in the task store, its model beside it; returns it with
    /// its arrival time. Its model's parameters are shared with the previous task's
    /// when equal: tasks come from a few templates (a scenario's entries, a benchmark's
    /// one kind), mostly in runs.
    #[inline]
    fn stage(&mut self, core: &mut EngineCore, t: SimTask) -> (Staged, u64) {
        let at = t.arrival_ns;
        let staged = core.tasks_mut().stage(t.meta);
        let h = self.models.stage(staged.slot(), &t.model);
        core.tasks_mut().staged_mut(staged).set_host(h);
        (staged, at)
    }

    /// Forced inline, as [`Self::run_end`]: each has one caller, the run loop, and with
    /// the policy's calls inlined into them (an engine compiled per policy type, see
    /// [`crate::Simulation::run_spec`]) LLVM kept them out of line, which cost cfs 1.5 % of its
    /// instructions.
    #[inline(always)]
    fn arrive<P: Policy + ?Sized>(
        &mut self,
        core: &mut EngineCore,
        policy: &mut P,
        staged: Staged,
    ) -> Result<()> {
        let entry = core.tasks().staged(staged);
        let (task, h) = (&entry.task, entry.host());
        let id = task.id;
        if core.tasks().contains_key(&id) {
            return Err(Error::input(format!("task id {id} is used twice")));
        }
        self.summary.submitted += 1;
        let (params, key) = (self.models.shared(h), self.models.key(h));
        let work_ns = self.models.work_ns(staged.slot());
        let ideal = self.speed.ideal_ns(task, params, key, work_ns);
        if ideal.is_some() {
            let live = core.tasks().len() + 1;
            self.summary.peak_live = self.summary.peak_live.max(live);
            if self.config.max_live_tasks.is_some_and(|m| live as u64 > m) {
                return Err(self.too_many_live(core, staged));
            }
        }
        match core.arrive(policy, self, staged, ideal.unwrap_or(0))? {
            Arrival::Queued(_) => {}
            Arrival::Rejected(_) => self.summary.rejected += 1,
            // Never admitted, so never `ended`.
            Arrival::Unrunnable => {
                self.summary.rejected += 1;
                self.models.release(staged.slot(), h);
            }
        }
        Ok(())
    }

    /// The graph's tasks that became ready arrive now, in the order they did. Out of
    /// line: runs of independent tasks never call it.
    #[inline(never)]
    fn arrive_ready<P: Policy + ?Sized>(
        &mut self,
        core: &mut EngineCore,
        policy: &mut P,
        graph: &GraphTasks,
    ) -> Result<()> {
        while let Some(i) = core.pop_ready() {
            let (staged, _) = self.stage(core, graph.task(i, core.now()));
            self.arrive(core, policy, staged)?;
        }
        Ok(())
    }

    /// The error for an arrival past [`Config::max_live_tasks`].
    #[cold]
    #[inline(never)]
    fn too_many_live(&self, core: &EngineCore, staged: Staged) -> Error {
        let task = &core.tasks().staged(staged).task;
        let max = self.config.max_live_tasks.unwrap_or(0);
        let advice = match self.graph {
            true => "the task graph has more tasks ready at once than that: split it, or run fewer tiles",
            false => "the tasks arrive faster than the machine runs them: lower the counts arriving together or the generators' rates, or set end.max_time_s",
        };
        Error::input(format!(
            "task {} (type {:?}) arrives at {:.3} s simulated with {max} tasks live (arrived, not ended): a run may keep at most {max} tasks live at once (about {} MiB); {advice}",
            task.id,
            &*task.kind,
            core.now() as f64 * 1e-9,
            (max * LIVE_TASK_BYTES) >> 20
        ))
    }

    /// The NUMA node a task on unit `u` (of type `kind`) draws memory bandwidth from,
    /// if shared. The machine's entry of the unit is read only then.
    #[inline]
    fn bandwidth_node(
        machine: &Machine,
        node_bandwidth: &[Option<f64>],
        (u, kind): (UnitId, UnitType),
        t: &Task,
        model: &Workload,
    ) -> Option<u32> {
        if model.mem_bandwidth <= 0.0 || model.memory_bound <= 0.0 || kind != UnitType::Cpu {
            return None;
        }
        let node = t.numa_home().or(machine.units[u as usize].numa_node)?;
        node_bandwidth
            .get(node as usize)
            .copied()
            .flatten()
            .map(|_| node)
    }

    /// Adds (`sign` 1) or removes (-1) the draw of `task`, running on `u`, on its node;
    /// returns the node.
    #[inline]
    fn draw(&mut self, core: &EngineCore, u: UnitId, task: TaskId, sign: f64) -> Option<u32> {
        let node = self.segs[u as usize].bandwidth_node()?;
        let d = &mut self.node_demand[node as usize];
        let seg = &self.segs[u as usize];
        debug_assert_eq!(core.tasks().at_slot(seg.slot as usize).task.id, task);
        *d = (*d + sign * self.models.shared(seg.params).mem_bandwidth).max(0.0);
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

    /// The device and node of the I/O stream `t` runs on CPU unit `u`, if it has one:
    /// an I/O part, a device the machine lists, a unit on a known node.
    #[inline]
    fn io_stream(
        machine: &Machine,
        (u, kind): (UnitId, UnitType),
        t: &Task,
        model: &Workload,
    ) -> Option<(usize, u32)> {
        let device = t.io_device? as usize;
        if model.io_bound <= 0.0 || kind != UnitType::Cpu || device >= machine.io_devices.len() {
            return None;
        }
        Some((device, machine.units[u as usize].numa_node?))
    }

    /// A device on the host's CPUs or a CPU started or stopped (`u`): the other side's
    /// running tasks (`cpus`: the CPUs') continue at their new rates.
    fn replan_host(&mut self, core: &EngineCore, u: UnitId, cpus: bool) {
        self.replan(core, Some(u), true, |sim, v| {
            if cpus {
                core.unit_kind(v) == UnitType::Cpu && sim.host.device[v as usize].is_none()
            } else {
                sim.host.device[v as usize].is_some()
            }
        });
    }

    /// The set of I/O streams changed: the running I/O tasks continue at their new rates.
    fn replan_streams(&mut self, core: &EngineCore, except: Option<UnitId>) {
        self.replan(core, except, false, |sim, v| sim.io.factor(v).is_some());
    }

    /// A shared resource's draw changed: the tasks computing on units that `shares`
    /// picks continue at the new rate. Each is credited what it did so far and gets a
    /// new end (its slice end stays). With `waiting`, a task still copying in (or setting
    /// up) gets the new rate for when it computes; without, it keeps the rate of its
    /// start (memory bandwidth and I/O: a CPU task moving its pages, a short phase).
    fn replan(
        &mut self,
        core: &EngineCore,
        except: Option<UnitId>,
        waiting: bool,
        shares: impl Fn(&Self, UnitId) -> bool,
    ) {
        let now = core.now();
        for (v, running) in core.running_all().iter().enumerate() {
            let v = v as UnitId;
            let Some(Running { task, .. }) = *running else {
                continue;
            };
            if Some(v) == except || !shares(self, v) {
                continue;
            }
            let seg = self.segs[v as usize];
            // Its segment ends right now anyway, or it keeps its rate until it computes.
            if seg.compute_from_ns + seg.compute_ns <= now
                || (!waiting && now < seg.compute_from_ns)
            {
                continue;
            }
            let e = core.tasks().at_slot(seg.slot as usize);
            debug_assert_eq!(e.task.id, task);
            // Still copying in (or setting up): it computes from then at the new rate.
            let from = seg.compute_from_ns.max(now);
            let elapsed = now.saturating_sub(seg.compute_from_ns).min(seg.compute_ns);
            let done = ((elapsed as f64 / seg.factor).floor() as u64)
                .min(seg.remaining_ns.saturating_sub(1));
            let remaining = seg.remaining_ns - done;
            self.summary.work_done_ns += done;
            let factor = self.factor(&e.task, v, &seg);
            let need = SpeedModel::compute_ns(remaining, factor);
            let (compute, finishes) = match seg.slice_end_ns {
                end if end != NO_SLICE_END && end < from.saturating_add(need) => {
                    (end.saturating_sub(from), false)
                }
                _ => (need, true),
            };
            let tail = self.tail_ns(core.unit_kind(v), finishes, v, || &e.task);
            let seg = &mut self.segs[v as usize];
            seg.remaining_ns = remaining;
            seg.compute_from_ns = from;
            seg.compute_ns = compute;
            seg.factor = factor;
            seg.finishes = finishes;
            seg.run_end = self
                .run_ends
                .push(from.saturating_add(compute).saturating_add(tail), v);
        }
    }

    /// Unit ns per reference ns of the task of `seg` on `u` now: its node's memory
    /// bandwidth and its I/O stream shared with the tasks running now.
    #[inline]
    fn factor(&self, task: &Task, u: UnitId, seg: &Segment) -> f64 {
        let host = self.host.factor(u, self.speed.units[u as usize].kind);
        self.factor_unshared_host(task, u, seg) * host
    }

    /// [`Self::factor`] without the host's CPUs shared with a device.
    #[inline]
    fn factor_unshared_host(&self, task: &Task, u: UnitId, seg: &Segment) -> f64 {
        let model = self.models.shared(seg.params);
        match (seg.bandwidth_node(), self.io.factor(u)) {
            (None, None) => {
                let key = self.models.key(seg.params);
                self.speed.factor_alone(task, model, key, u)
            }
            (node, io) => {
                let sigma = self.sigma(node);
                self.speed.ns_per_work_s_shared(task, model, u, sigma, io) * 1e-9
            }
        }
    }

    /// Schedules the next segment of `task` on `u`, computing from `from_ns` at `factor`
    /// unit ns per reference ns if known (else the speed model's).
    #[inline]
    fn segment<P: Policy + ?Sized>(
        &mut self,
        core: &EngineCore,
        policy: &mut P,
        u: UnitId,
        task: TaskId,
        from_ns: u64,
        factor: Option<f64>,
    ) {
        let kind = core.unit_kind(u);
        let seg = self.segs[u as usize];
        // The task's entry, only where its meta info is needed: a CPU slice that
        // continues at a known rate reads the segment alone.
        let entry = || {
            let e = core.tasks().at_slot(seg.slot as usize);
            debug_assert_eq!(e.task.id, task);
            &e.task
        };
        let factor = factor.unwrap_or_else(|| self.factor(entry(), u, &seg));
        let need = SpeedModel::compute_ns(seg.remaining_ns, factor);
        let slice = core.slice(policy, u, task, seg.slot as usize);
        let (compute, finishes) = match slice {
            Some(s) if s < need => (s, false),
            _ => (need, true),
        };
        let tail = self.tail_ns(kind, finishes, u, entry);
        let seg = &mut self.segs[u as usize];
        seg.compute_from_ns = from_ns;
        seg.compute_ns = compute;
        seg.factor = factor;
        seg.finishes = finishes;
        seg.slice_end_ns = slice.map_or(NO_SLICE_END, |s| from_ns.saturating_add(s));
        let end = from_ns.saturating_add(compute).saturating_add(tail);
        seg.run_end = self.run_ends.push(end, u);
    }

    /// What a segment costs after it computes: CPUs copy nothing (see the speed model)
    /// and checkpoint for free; a graph task's results stay where it ran until a reader
    /// fetches them.
    #[inline]
    fn tail_ns<'t>(
        &self,
        kind: UnitType,
        finishes: bool,
        u: UnitId,
        task: impl FnOnce() -> &'t Task,
    ) -> u64 {
        if kind == UnitType::Cpu || (finishes && self.graph) {
            0
        } else if finishes {
            self.speed.copy_out_ns(task(), u)
        } else {
            self.config.checkpoint_cost_ns
        }
    }

    /// Credits `compute_ns` of unit time on the current segment of `u` to its task (all
    /// of the rest when the segment finishes it).
    #[inline]
    fn credit(&mut self, core: &EngineCore, u: UnitId, task: TaskId, compute_ns: u64) {
        let seg = &mut self.segs[u as usize];
        debug_assert_eq!(core.running(u).map(|r| r.task), Some(task));
        let done = if seg.finishes && compute_ns == seg.compute_ns {
            seg.remaining_ns
        } else {
            round_u64(compute_ns as f64 / seg.factor).min(seg.remaining_ns)
        };
        seg.remaining_ns -= done;
        self.summary.work_done_ns += done;
    }

    /// Handles run end `seq` on unit `u`.
    #[inline(always)]
    fn run_end<P: Policy + ?Sized>(
        &mut self,
        core: &mut EngineCore,
        policy: &mut P,
        u: UnitId,
        seq: u64,
    ) -> Result<()> {
        let seg = self.segs[u as usize];
        if seg.run_end != seq {
            return Ok(()); // the segment was cut short or re-planned
        }
        let Some(Running { task, .. }) = core.running(u) else {
            return Err(Error::runtime(format!("engine: run end on idle unit {u}")));
        };
        self.credit(core, u, task, seg.compute_ns);
        if seg.finishes {
            self.summary.completed += 1;
            self.summary.work_completed_ns += self.models.work_ns(seg.slot as usize);
            return Ok(core.complete(policy, self, u)?);
        }
        if core.checkpoint(policy, self, u)? == CheckpointDecision::Continue {
            // Same task on the same unit: the rate holds unless bandwidth is shared.
            let shared = seg.bandwidth_node().is_some() || self.io.factor(u).is_some();
            let factor = (!shared).then_some(seg.factor);
            self.segment(core, policy, u, task, core.now(), factor);
        }
        Ok(())
    }
}
