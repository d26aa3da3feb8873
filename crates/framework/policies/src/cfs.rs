//! `cfs`: Linux's Completely Fair Scheduler as of 2.6.23–6.5 (merged in 2.6.23, where it
//! replaced the O(1) scheduler; 6.6 replaced its pick with EEVDF, `eevdf.rs`) as a
//! heterogeneity-agnostic baseline. The papers compared with the Linux of their time,
//! so `cfs` stands in for each of them, also where it was older than CFS (Shelepov &
//! Fedorova's 2.6.18 O(1) scheduler, as `crates/studies/shelepov` configures it); `eevdf` runs
//! beside it where a reader should see today's Linux too.
//!
//! Per-unit run queues ordered by weighted virtual runtime; the running task is
//! preempted when its slice (`latency × weight / queue weight`, at least
//! `min_granularity`) ends and a queued task has no larger vruntime. New tasks go to the
//! unit with the fewest tasks (ties: lowest id) and start at that queue's min_vruntime;
//! an idle unit pulls from the unit with most tasks (new-idle balance); every
//! `balance_ms`, queued tasks move from the units with most tasks to those with fewest
//! until counts differ by at most one. Linux splits balancing the same way
//! (`SD_BALANCE_NEWIDLE` and the periodic balancer); `newidle=0` turns the pull off, so
//! that only the periodic tick balances (how the live tick is tested, and how a
//! scheduling domain without `SD_BALANCE_NEWIDLE` behaves); both are `fair.rs`'s, which
//! `eevdf` shares. By construction it counts tasks and never looks at unit speed.
//! Accelerators are treated as ordinary run queues (their tasks stop only at
//! checkpoints).
//!
//! Parameters: `latency_ms` (6) and `min_granularity_ms` (0.75), each in [0.1, 1000] as
//! Linux's sysctls; `balance_ms` (4; 0 = off, else [0.1, 10^6]); `newidle` (1; 0 or 1).

use crate::fair;
use crate::load::{LoadIndex, UnitLoad, UnitRecord};
use crate::params::{ms_to_ns, Params};
use crate::queue_index::QueueIndex;
use hetsched_core::machine::UnitType;
use hetsched_core::policy::{
    CheckpointDecision, PickDecision, Policy, Sample, SubmitDecision, TickAction, UnitId, View,
};
use hetsched_core::task::{QueueId, TaskId};
use hetsched_core::Result;

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "cfs",
    about: "Linux CFS as of 2.6.23–6.5: per-unit vruntime queues, time slices, count-based balancing; blind to unit speed",
    test_specs: &["cfs", "cfs:latency_ms=1,balance_ms=1", "cfs:newidle=0,balance_ms=1"],
    build: |spec, p, _| Ok(Cfs::from_params(spec, p)?.into()),
};

pub struct Cfs {
    name: String,
    latency_ns: u64,
    min_granularity_ns: u64,
    balance_ns: u64,
    /// An idle unit pulls a queued task at once (new-idle balance).
    newidle: bool,
    /// Each unit's run queue accounting, with its task count in the load index, so that
    /// an event on a unit touches one cache line of it.
    rqs: LoadIndex<RunQueue>,
    /// Every live task's scheduling entity, by the task's slot ([`View::slot`]).
    entities: Vec<Entity>,
    /// The queued tasks of each unit by vruntime (long queues are not scanned).
    index: QueueIndex,
    /// Linux's capacity awareness (`cfs-cap`, see `cfs_cap.rs`); off for `cfs`.
    capacity_aware: bool,
    /// Per unit, the running task the last tick found misfit there (`NO_TASK`: none).
    misfit: Vec<TaskId>,
}

/// No task (ids are assigned from 0 in arrival order).
const NO_TASK: TaskId = TaskId::MAX;

/// What cfs keeps per unit: one cache line (records of 61 bytes would straddle two).
#[derive(Clone, Copy)]
#[repr(align(64))]
struct RunQueue {
    min_vruntime: u64,
    /// Sum of weights of the tasks queued on or running on the unit.
    weight: u64,
    /// When the running task's current stretch began.
    exec_start: u64,
    /// The task this policy last started on the unit (`NO_TASK` when idle), its slot
    /// and a copy of its entity. The engine asks about that task on each slice,
    /// checkpoint and completion; the copy spares a look-up in the view and a read of
    /// the entity (another cache line) each time. Only `checkpoint` changes a running
    /// task's entity, and it writes both. (A live engine may `submit` again a task it
    /// took off its unit, resetting its entity; it runs again only through `pick`,
    /// which copies afresh.)
    curr: TaskId,
    curr_slot: usize,
    curr_entity: Entity,
    /// The unit's type, and its tasks queued or running (the load index keeps it).
    unit: UnitLoad,
}

const _: () = assert!(std::mem::size_of::<RunQueue>() == 64);

impl UnitRecord for RunQueue {
    fn idle(kind: UnitType) -> RunQueue {
        RunQueue {
            min_vruntime: 0,
            weight: 0,
            exec_start: 0,
            curr: NO_TASK,
            curr_slot: 0,
            curr_entity: Entity::default(),
            unit: UnitLoad::idle(kind),
        }
    }
    #[inline]
    fn unit(&self) -> &UnitLoad {
        &self.unit
    }
    #[inline]
    fn unit_mut(&mut self) -> &mut UnitLoad {
        &mut self.unit
    }
}

/// What cfs keeps per task: its weighted virtual runtime and its weight (copied from the
/// task, so that accounting does not look the task up in the view every time).
#[derive(Clone, Copy, Default)]
struct Entity {
    vruntime: u64,
    weight: u64,
}

impl Cfs {
    pub fn from_params(spec: &str, p: &mut Params) -> Result<Cfs> {
        // Linux's sysctl ranges for the first two (0.1 ms to 1 s): a 0 ns slice would
        // preempt at every nanosecond.
        let latency_ns = ms_to_ns(p.f64_in(
            "latency_ms",
            "scheduling period, ms (sched_latency)",
            6.0,
            0.1..=1000.0,
            false,
        )?);
        let min_granularity_ns = ms_to_ns(p.f64_in(
            "min_granularity_ms",
            "least slice, ms (sched_min_granularity)",
            0.75,
            0.1..=1000.0,
            false,
        )?);
        let balance_ns = ms_to_ns(p.f64_in(
            "balance_ms",
            "period of the count balancer, ms",
            4.0,
            0.1..=1e6,
            true,
        )?);
        let newidle = p.flag(
            "newidle",
            "an idle unit pulls a queued task at once (SD_BALANCE_NEWIDLE)",
            true,
        )?;
        Ok(Cfs {
            name: spec.to_string(),
            latency_ns,
            min_granularity_ns,
            balance_ns,
            newidle,
            rqs: LoadIndex::empty(),
            entities: Vec::new(),
            index: QueueIndex::default(),
            capacity_aware: false,
            misfit: Vec::new(),
        })
    }

    /// This cfs with Linux's capacity awareness (`cfs-cap`): placement on the least
    /// loaded, then biggest, unit, and misfit tasks pulled to idle bigger CPUs.
    pub fn capacity_aware(mut self) -> Cfs {
        self.capacity_aware = true;
        self
    }

    /// `select_idle_capacity` in spirit: the least-loaded unit the task can run on,
    /// the biggest among equals (then the lowest id); counted in the load index.
    fn place_by_capacity(&mut self, view: &View, task: TaskId) -> Option<UnitId> {
        let u = view
            .units()
            .iter()
            .filter(|u| view.can_run(task, u.id))
            .min_by(|a, b| {
                (self.rqs.load(a.id), b.capacity, a.id).cmp(&(
                    self.rqs.load(b.id),
                    a.capacity,
                    b.id,
                ))
            })?
            .id;
        self.rqs.inc(u);
        Some(u)
    }

    /// Misfit detection, each balance period: a task that kept a CPU busy at least
    /// 80% of the period does not fit it (`fits_capacity`: util × 1280 < capacity ×
    /// 1024, with util = busy fraction × capacity). It moves at its next slice end
    /// ([`Self::pull_misfit`]): both engines stop a running task at its checkpoints.
    fn misfits(&mut self, view: &View, samples: &[Sample]) {
        let Some(period) = self.tick_interval() else {
            return;
        };
        self.misfit.clear();
        self.misfit.resize(view.units().len(), NO_TASK);
        for s in samples {
            let (u, cap) = (s.unit, view.unit(s.unit).capacity as u64);
            let Some(t) = view
                .running(u)
                .map(|r| r.task)
                .filter(|&t| s.task == Some(t))
            else {
                continue;
            };
            // A measured sample covers the sampler's pass over the process (live, see
            // `Sample::interval_ns`); the engine's own the balance period, as Linux's
            // utilisation is per tick.
            let span = if s.sources.contains("proc") && s.interval_ns > 0 {
                s.interval_ns
            } else {
                period
            };
            let util = s.busy_ns.min(span) * cap / span;
            if view.unit(u).kind == UnitType::Cpu && util * 1280 >= cap * 1024 {
                self.misfit[u as usize] = t;
            }
        }
    }

    /// A misfit task at its slice end moves to an idle bigger CPU, if there is one
    /// (Linux's misfit active balance).
    fn pull_misfit(&mut self, view: &View, t: TaskId, u: UnitId) -> Option<UnitId> {
        if self.misfit.get(u as usize) != Some(&t) {
            return None;
        }
        self.misfit[u as usize] = NO_TASK;
        let cap = view.unit(u).capacity;
        let to = view
            .units_of(UnitType::Cpu)
            .filter(|v| v.capacity > cap && self.rqs.load(v.id) == 0 && view.can_run(t, v.id))
            .max_by(|a, b| a.capacity.cmp(&b.capacity).then(b.id.cmp(&a.id)))?
            .id;
        self.pull_running(view, t, u, to);
        Some(to)
    }

    /// Moves the accounting of `t`, running on `from`, to `to`'s queue (it is
    /// preempted by the engine): its vruntime is brought up to now first.
    fn pull_running(&mut self, view: &View, t: TaskId, from: UnitId, to: UnitId) {
        let now = view.now_ns();
        let rq = self.running(view, from, t);
        let ran = now.saturating_sub(rq.exec_start);
        let e = rq.curr_entity;
        let slot = rq.curr_slot;
        rq.curr = NO_TASK;
        self.entities[slot].vruntime = e
            .vruntime
            .saturating_add(ran.saturating_mul(1024) / e.weight.max(1));
        let slot = self.transfer(view, t, from, to);
        self.index.pushed(to, t, slot, self.entities[slot].vruntime);
    }

    /// Sizes the per-unit state for units added since the last call (a length check on
    /// the hot path).
    #[inline]
    fn init(&mut self, view: &View) {
        if self.rqs.len() < view.units().len() {
            self.grow(view);
        }
    }

    #[cold]
    fn grow(&mut self, view: &View) {
        self.rqs.cover(view);
    }

    /// The run queue of `unit`, with `task` (which runs there) as its current task.
    #[inline]
    fn running(&mut self, view: &View, unit: UnitId, task: TaskId) -> &mut RunQueue {
        if self.rqs.unit(unit).curr != task {
            self.adopt(view, unit, task);
        }
        self.rqs.unit_mut(unit)
    }

    /// Makes `task` the current task of `unit`: for an engine that started a task this
    /// policy did not pick there.
    #[cold]
    fn adopt(&mut self, view: &View, unit: UnitId, task: TaskId) {
        let slot = view.slot(task);
        self.index.taken(slot);
        self.set_curr(unit, task, slot);
    }

    #[inline]
    fn set_curr(&mut self, unit: UnitId, task: TaskId, slot: usize) {
        let entity = self.entities[slot];
        let rq = self.rqs.unit_mut(unit);
        rq.curr = task;
        rq.curr_slot = slot;
        rq.curr_entity = entity;
    }

    /// Moves a queued task's accounting from unit `from` to unit `to`; returns its slot.
    fn transfer(&mut self, view: &View, t: TaskId, from: UnitId, to: UnitId) -> usize {
        transfer(&mut self.rqs, &mut self.entities, view, t, from, to)
    }

    /// The queued task with the least vruntime on `unit` (ties: nearest the head), with
    /// its slot.
    #[inline]
    fn leftmost(&mut self, view: &View, unit: UnitId) -> Option<(u64, TaskId, usize)> {
        let entities = &self.entities;
        self.index
            .least(view, unit, |_, slot| entities[slot].vruntime)
    }
}

/// Moves a queued task's accounting from unit `from` to unit `to`, its vruntime rebased
/// from one queue's min_vruntime to the other's; returns its slot.
fn transfer(
    rqs: &mut LoadIndex<RunQueue>,
    entities: &mut [Entity],
    view: &View,
    t: TaskId,
    from: UnitId,
    to: UnitId,
) -> usize {
    let slot = view.slot(t);
    let e = &mut entities[slot];
    rqs.dec(from);
    rqs.inc(to);
    rqs.unit_mut(from).weight -= e.weight;
    rqs.unit_mut(to).weight += e.weight;
    e.vruntime = e.vruntime.saturating_sub(rqs.unit(from).min_vruntime) + rqs.unit(to).min_vruntime;
    slot
}

// The simulator compiles its engine for this type (`crate::Built`), and the calls made
// on every event (submit, pick, time slice, checkpoint, completion) are forced inline
// into it: with `#[inline]` alone LLVM kept them out of line once the engine had an
// instance per recorder (`hetsched bench sim --policy cfs --tasks 200000`: 689 M
// instructions against 663 M; docs/dev/simulator-performance.md).
impl Policy for Cfs {
    fn name(&self) -> &str {
        &self.name
    }

    #[inline(always)]
    fn submit(&mut self, view: &View, task: TaskId) -> SubmitDecision {
        self.init(view);
        let t = view.task(task);
        let placed = if self.capacity_aware {
            self.place_by_capacity(view, task)
        } else {
            self.rqs.place(&t.affinity)
        };
        let Some(u) = placed else {
            return SubmitDecision::Reject("no unit can run it".into());
        };
        let weight = t.weight.max(1) as u64;
        let rq = self.rqs.unit_mut(u);
        rq.weight += weight;
        let vruntime = rq.min_vruntime;
        let slot = view.slot(task);
        if slot >= self.entities.len() {
            self.entities.resize(slot + 1, Entity::default());
        }
        self.entities[slot] = Entity { vruntime, weight };
        self.index.pushed(u, task, slot, vruntime);
        SubmitDecision::Enqueue(QueueId::Unit(u))
    }

    #[inline(always)]
    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        self.init(view);
        let leftmost = self.leftmost(view, unit);
        let rq = self.rqs.unit_mut(unit);
        rq.exec_start = view.now_ns();
        if let Some((v, t, slot)) = leftmost {
            rq.min_vruntime = rq.min_vruntime.max(v);
            self.index.taken(slot);
            self.set_curr(unit, t, slot);
            return PickDecision::Run(t);
        }
        rq.curr = NO_TASK;
        if !self.newidle {
            return PickDecision::Idle;
        }
        // New-idle balance: pull from the unit of this type with the most tasks.
        let Some((from, t)) = fair::newidle_source(view, &self.rqs, unit) else {
            return PickDecision::Idle;
        };
        let slot = self.transfer(view, t, from, unit);
        self.index.taken(slot);
        self.set_curr(unit, t, slot);
        PickDecision::Steal { from, task: t }
    }

    #[inline(always)]
    fn time_slice(&mut self, view: &View, unit: UnitId, task: TaskId) -> Option<u64> {
        let rq = self.running(view, unit, task);
        let (weight, total) = (rq.curr_entity.weight, rq.weight.max(1));
        // Alone on its unit (the usual case), a task gets the whole latency: no division.
        let slice = if weight == total {
            self.latency_ns
        } else {
            self.latency_ns * weight / total
        };
        Some(slice.max(self.min_granularity_ns))
    }

    #[inline(always)]
    fn checkpoint(&mut self, view: &View, task: TaskId, unit: UnitId) -> CheckpointDecision {
        if self.capacity_aware {
            if let Some(to) = self.pull_misfit(view, task, unit) {
                return CheckpointDecision::Migrate(to);
            }
        }
        let now = view.now_ns();
        let rq = self.running(view, unit, task);
        let ran = now - rq.exec_start;
        rq.exec_start = now;
        let e = &mut rq.curr_entity;
        e.vruntime = e
            .vruntime
            .saturating_add(ran.saturating_mul(1024) / e.weight);
        let (curr, slot) = (e.vruntime, rq.curr_slot);
        self.entities[slot].vruntime = curr;
        let floor = match self.leftmost(view, unit) {
            Some((left, _, _)) if left <= curr => Some(left),
            _ => None,
        };
        let m = &mut self.rqs.unit_mut(unit).min_vruntime;
        match floor {
            Some(left) => {
                *m = (*m).max(left.min(curr));
                self.index.pushed(unit, task, slot, curr);
                CheckpointDecision::Yield
            }
            None => {
                *m = (*m).max(curr);
                CheckpointDecision::Continue
            }
        }
    }

    #[inline(always)]
    fn complete(&mut self, view: &View, task: TaskId, unit: UnitId) {
        let rq = self.running(view, unit, task);
        rq.weight -= rq.curr_entity.weight;
        rq.curr = NO_TASK;
        self.rqs.dec(unit);
    }

    fn tick_interval(&self) -> Option<u64> {
        Some(self.balance_ns).filter(|&b| b > 0)
    }

    /// cfs balances by counting tasks and needs no busy times; cfs-cap reads them to
    /// find misfit tasks.
    fn wants_samples(&self) -> bool {
        self.capacity_aware
    }

    fn tick(&mut self, view: &View, samples: &[Sample]) -> Vec<TickAction> {
        self.init(view);
        if self.capacity_aware {
            self.misfits(view, samples);
        }
        let (entities, index) = (&mut self.entities, &mut self.index);
        fair::balance(view, &mut self.rqs, |rqs, t, from, to| {
            let slot = transfer(rqs, entities, view, t, from, to);
            // Pushed before the engine moves it: a pick on `to` in between (the
            // engine wakes `to` after each move) is answered by a scan, and `to`'s
            // queue is short then (an idle `to` starts the first task moved there).
            index.pushed(to, t, slot, entities[slot].vruntime);
        })
    }
}
