//! `eevdf`: Linux's fair class as it is since 6.6, Earliest Eligible Virtual Deadline
//! First, as a heterogeneity-agnostic baseline beside `cfs` (the class up to 6.5):
//! scheduling research compares with what runs today. Modelled on Linux EEVDF as of
//! 6.6–6.12 (kernel/sched/fair.c: `pick_eevdf`, `place_entity`, `update_deadline`,
//! `update_entity_lag`, `avg_vruntime`; Documentation/scheduler/sched-eevdf.rst), itself
//! after I. Stoica and H. Abdel-Wahab, "Earliest Eligible Virtual Deadline First: A
//! Flexible and Accurate Mechanism for Proportional Share Resource Allocation", TR-95-22,
//! Old Dominion University, 1995.
//!
//! Per unit, a run queue of entities, each with a weight `w` (the task's, 1024 = nice 0:
//! `fair::SCHED_PRIO_TO_WEIGHT`), a vruntime `v` (advanced by `ran × 1024 / w`) and a
//! virtual deadline `d`:
//! - V, the queue's virtual time, is the weighted average vruntime of the entities
//!   queued or running there (`avg_vruntime`). An entity's lag is `V − v`: positive, it
//!   is owed service, and it is eligible (`vruntime_eligible`: `Σ w_i v_i ≥ v Σ w_i`,
//!   exact, as the kernel compares).
//! - The pick is the eligible entity with the earliest deadline (ties: the one queued
//!   first; the running one only with a strictly earlier deadline, as 6.8's
//!   deadline-sorted tree answers). RUN_TO_PARITY: a running entity still eligible and
//!   within the request it was picked with keeps its unit.
//! - The request is the base slice (`sysctl_sched_base_slice`, `base_slice_ms` × (1 +
//!   log2 of the CPU units, at most 8), as `get_update_sysctl_factor` scales it); a task
//!   runs until its vruntime reaches its deadline, which then moves one request on: `d =
//!   v + slice × 1024 / w` (`update_deadline`), and the unit picks again.
//! - A new task is placed with no lag, `v = V`, and half a request (PLACE_DEADLINE_INITIAL:
//!   `d = V + slice × 1024 / w / 2`). A task moving between units keeps its lag (`vlag =
//!   V − v` on its old queue, clamped to the virtual length of max(2 slices, a tick),
//!   `update_entity_lag`) and is placed on the new one at `v = V − vlag × (W + w) / W`
//!   so that its lag survives its own weight joining the average (PLACE_LAG; no lag on an
//!   empty queue), with a fresh request (6.6–6.11; 6.12's PLACE_REL_DEADLINE keeps the
//!   relative deadline instead). A task that ends takes its lag with it: V moves.
//! - Placement and balancing are `cfs`'s (`fair.rs`: the unit with fewest tasks, an idle
//!   unit's new-idle pull, the periodic count balance every `balance_ms`): Linux 6.6
//!   changed the pick, not the load balancer. Blind to unit speed, like `cfs`.
//!   Accelerators are ordinary run queues whose tasks stop only at their checkpoints
//!   (where RUN_TO_PARITY matters).
//!
//! What it leaves out: wake-up preemption (a task arriving on a busy unit waits for the
//! running task's request to end, at most one base slice: the engines stop a running task
//! only at its slice end); the tick (deadlines are met to the nanosecond, as with
//! HRTICK; Linux notices a spent request at the next tick or event); sleep and wake-up
//! (tasks here run until they end, so DELAY_DEQUEUE and lag across a sleep never arise;
//! a `hetsched run` program that yields stays queued); custom slices (6.12's
//! `sched_attr.sched_runtime`: a task here requests the base slice); PELT and load
//! averages (balancing counts tasks); cgroups and group scheduling; SCHED_IDLE and
//! SCHED_BATCH; reweighting a live task; the fixed-point `calc_delta_fair` (exact integer
//! division here) and the 64-bit relative sums (`Σ w_i v_i` is kept in 128 bits). The tick
//! in the lag bound is 4 ms (`CONFIG_HZ_250`, the kernel's default).
//!
//! Parameters: `base_slice_ms` (0.75, [0.1, 1000]), `scale_slice` (1: × (1 + log2 CPUs,
//! at most 8) as Linux's default `SCHED_TUNABLESCALING_LOG`; 0: the base slice as given),
//! `balance_ms` (4; 0 = off, else [0.1, 10^6]) and `newidle` (1; 0 or 1), as `cfs`'s.

use crate::fair::{self, NICE_0_LOAD};
use crate::load::{LoadIndex, UnitLoad, UnitRecord};
use crate::params::{ms_to_ns, Params};
use crate::queue_index::SCAN_MAX;
use hetsched_core::machine::UnitType;
use hetsched_core::policy::{
    CheckpointDecision, PickDecision, Policy, Queue, Sample, SubmitDecision, TickAction, UnitId,
    View,
};
use hetsched_core::task::{Placement, QueueId, TaskId};
use hetsched_core::Result;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "eevdf",
    about: "Linux EEVDF as of 6.6–6.12 (fair.c: pick_eevdf, place_entity, update_deadline): eligible earliest virtual deadline first, lag kept across migrations, cfs's count balancing; blind to unit speed",
    test_specs: &[
        "eevdf",
        "eevdf:base_slice_ms=3,balance_ms=1",
        "eevdf:newidle=0,scale_slice=0,balance_ms=1",
    ],
    build: |spec, p, _| Ok(Eevdf::from_params(spec, p)?.into()),
};

/// Linux's tick at its default `CONFIG_HZ_250`: the least lag an entity keeps
/// (`update_entity_lag`'s bound is the virtual length of max(2 slices, `TICK_NSEC`)).
const TICK_NSEC: u64 = 4_000_000;

/// No task (ids are assigned from 0 in arrival order).
const NO_TASK: TaskId = TaskId::MAX;

/// No unit: an entity not queued anywhere.
const NO_UNIT: UnitId = UnitId::MAX;

pub struct Eevdf {
    name: String,
    balance_ns: u64,
    /// An idle unit pulls a queued task at once (new-idle balance).
    newidle: bool,
    /// Each unit's run queue, with its task count in the load index.
    rqs: LoadIndex<RunQueue>,
    /// Everything else: apart from the run queues so that the balancer (`fair.rs`),
    /// which holds the load index, can have both.
    st: State,
}

struct State {
    /// The base slice before the CPU-count scaling, and whether to scale it.
    base_slice_ns: u64,
    scale_slice: bool,
    /// `sysctl_sched_base_slice`: the request of every task.
    slice_ns: u64,
    /// Every live task's scheduling entity, by the task's slot ([`View::slot`]).
    entities: Vec<Entity>,
    /// The queued tasks of each unit by eligibility and deadline (long queues are not
    /// scanned).
    index: EligibleIndex,
}

/// What eevdf keeps per unit.
#[derive(Clone, Copy)]
struct RunQueue {
    /// Σ w_i over the entities queued or running on the unit (the kernel's `avg_load`
    /// plus the running entity's weight).
    load: u64,
    /// Σ w_i·v_i over the same. The kernel keeps Σ w_i·(v_i − v0) in 64 bits against a
    /// moving v0; 128 bits hold the absolute sum exactly.
    sum_wv: u128,
    /// V while no entity is there: the average when the last one left (where the
    /// kernel's `avg_vruntime` of an empty queue stays).
    idle_v: u64,
    /// The task running on the unit as this policy knows it (`NO_TASK`: none), its slot,
    /// and its stint: its vruntime and the time when it started running. Its vruntime at
    /// time t is `stint_v + (t − stint_ns) × 1024 / w`, however many events update it
    /// in between, so that both engines account the same vruntime whatever they ask in
    /// between.
    curr: TaskId,
    curr_slot: usize,
    stint_v: u64,
    stint_ns: u64,
    /// The unit's type, and its tasks queued or running (the load index keeps it).
    unit: UnitLoad,
}

impl UnitRecord for RunQueue {
    fn idle(kind: UnitType) -> RunQueue {
        RunQueue {
            load: 0,
            sum_wv: 0,
            // Far from 0, so that a lag placing a task left of V never saturates.
            idle_v: 1 << 50,
            curr: NO_TASK,
            curr_slot: 0,
            stint_v: 0,
            stint_ns: 0,
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

impl RunQueue {
    /// V (`avg_vruntime`), rounded down.
    #[inline]
    fn avg(&self) -> u64 {
        if self.load == 0 {
            self.idle_v
        } else {
            (self.sum_wv / self.load as u128) as u64
        }
    }

    /// Whether an entity at vruntime `v` is owed service (`vruntime_eligible`).
    #[inline]
    fn eligible(&self, v: u64) -> bool {
        self.load == 0 || v as u128 * self.load as u128 <= self.sum_wv
    }

    /// The running entity's vruntime at `now` (its weight `w`).
    #[inline]
    fn curr_vruntime(&self, w: u64, now: u64) -> u64 {
        let dv = now.saturating_sub(self.stint_ns) as u128 * NICE_0_LOAD as u128 / w as u128;
        self.stint_v.saturating_add(dv.min(u64::MAX as u128) as u64)
    }
}

/// What eevdf keeps per task.
#[derive(Clone, Copy)]
struct Entity {
    /// The task this entity is (slots are reused; `NO_TASK`: none yet).
    task: TaskId,
    /// The unit whose queue accounts it (`NO_UNIT`: none).
    unit: UnitId,
    weight: u64,
    vruntime: u64,
    deadline: u64,
    /// The deadline it had when last picked: while it still has it, it has not been
    /// given a new request since (RUN_TO_PARITY; the kernel stashes it in `vlag`).
    picked: u64,
}

impl Default for Entity {
    fn default() -> Entity {
        Entity {
            task: NO_TASK,
            unit: NO_UNIT,
            weight: NICE_0_LOAD,
            vruntime: 0,
            deadline: 0,
            picked: 0,
        }
    }
}

impl Eevdf {
    pub fn from_params(spec: &str, p: &mut Params) -> Result<Eevdf> {
        // cfs's sysctl range (0.1 ms to 1 s): a 0 ns slice would preempt at every
        // nanosecond.
        let base_slice_ns = ms_to_ns(p.f64_in(
            "base_slice_ms",
            "request of every task, ms, before scaling (sysctl_sched_base_slice)",
            0.75,
            0.1..=1000.0,
            false,
        )?);
        let scale_slice = p.flag(
            "scale_slice",
            "scale the base slice by 1 + log2 of the CPUs, at most 8 (SCHED_TUNABLESCALING_LOG)",
            true,
        )?;
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
        Ok(Eevdf {
            name: spec.to_string(),
            balance_ns,
            newidle,
            rqs: LoadIndex::empty(),
            st: State {
                base_slice_ns,
                scale_slice,
                slice_ns: base_slice_ns,
                entities: Vec::new(),
                index: EligibleIndex::default(),
            },
        })
    }

    /// Sizes the per-unit state for units added since the last call (a length check on
    /// the hot path).
    #[inline]
    fn init(&mut self, view: &View) {
        if self.rqs.len() < view.units().len() {
            self.grow(view);
        }
    }

    /// Takes in new units, and scales the slice by the CPUs there are now, as Linux
    /// does when CPUs come online (`update_sysctl`).
    #[cold]
    fn grow(&mut self, view: &View) {
        self.rqs.cover(view);
        let factor = if self.st.scale_slice {
            slice_factor(view.units_of(UnitType::Cpu).count())
        } else {
            1
        };
        self.st.slice_ns = self.st.base_slice_ns * factor;
    }
}

/// `get_update_sysctl_factor` under `SCHED_TUNABLESCALING_LOG`: 1 + log2 of the CPUs,
/// counting at most 8 (a machine without CPUs: 1).
fn slice_factor(cpus: usize) -> u64 {
    1 + cpus.clamp(1, 8).ilog2() as u64
}

impl State {
    /// The virtual length of `ns` for weight `w` (`calc_delta_fair`), at least 1.
    #[inline]
    fn virtual_ns(ns: u64, w: u64) -> u64 {
        (ns as u128 * NICE_0_LOAD as u128 / w as u128).clamp(1, u64::MAX as u128) as u64
    }

    #[inline]
    fn entity(&mut self, slot: usize) -> &mut Entity {
        if slot >= self.entities.len() {
            self.entities.resize(slot + 1, Entity::default());
        }
        &mut self.entities[slot]
    }

    /// Brings the vruntime of `u`'s running entity up to `now` (`update_curr`).
    #[inline]
    fn update_curr(&mut self, rqs: &mut LoadIndex<RunQueue>, u: UnitId, now: u64) {
        let rq = rqs.unit_mut(u);
        if rq.curr == NO_TASK {
            return;
        }
        let e = &mut self.entities[rq.curr_slot];
        let v = rq.curr_vruntime(e.weight, now).max(e.vruntime);
        rq.sum_wv += (v - e.vruntime) as u128 * e.weight as u128;
        e.vruntime = v;
    }

    /// Adds `slot`'s entity to `u`'s sums.
    #[inline]
    fn account(&mut self, rqs: &mut LoadIndex<RunQueue>, u: UnitId, slot: usize) {
        let e = &mut self.entities[slot];
        let rq = rqs.unit_mut(u);
        rq.load += e.weight;
        rq.sum_wv += e.vruntime as u128 * e.weight as u128;
        e.unit = u;
    }

    /// Takes `slot`'s entity off its unit: returns its lag there (`update_entity_lag`)
    /// and the unit. The unit's running entity is brought up to `now` first (the lag
    /// reads V); its count in the load index goes down.
    fn leave(
        &mut self,
        rqs: &mut LoadIndex<RunQueue>,
        now: u64,
        slot: usize,
    ) -> Option<(i64, UnitId)> {
        let u = self.entities[slot].unit;
        if u == NO_UNIT {
            return None;
        }
        self.update_curr(rqs, u, now);
        let e = &mut self.entities[slot];
        let rq = rqs.unit_mut(u);
        let limit = Self::virtual_ns((2 * self.slice_ns).max(TICK_NSEC), e.weight);
        let limit = limit.min(i64::MAX as u64) as i128;
        let lag = (rq.avg() as i128 - e.vruntime as i128).clamp(-limit, limit) as i64;
        let v_before = rq.avg();
        let wv = e.vruntime as u128 * e.weight as u128;
        debug_assert!(
            rq.load >= e.weight && rq.sum_wv >= wv,
            "unit {u}'s sums hold the entity"
        );
        rq.load = rq.load.saturating_sub(e.weight);
        rq.sum_wv = rq.sum_wv.saturating_sub(wv);
        if rq.load == 0 {
            rq.idle_v = v_before;
        }
        if rq.curr == e.task && rq.curr_slot == slot {
            rq.curr = NO_TASK;
        }
        e.unit = NO_UNIT;
        rqs.dec(u);
        Some((lag, u))
    }

    /// Places `slot`'s entity on `u`'s queue with lag `lag` (`place_entity`), a new
    /// task's with half a request (`initial`). Its count in the load index is the
    /// caller's.
    fn place(
        &mut self,
        rqs: &mut LoadIndex<RunQueue>,
        u: UnitId,
        slot: usize,
        lag: i64,
        initial: bool,
    ) {
        let rq = rqs.unit(u);
        let w = self.entities[slot].weight;
        // PLACE_LAG: placing an entity at V − lag moves V by its own weight's share of
        // the lag, so the lag is inflated by (W + w) / W to come out whole after (the
        // derivation is place_entity's comment); an empty queue keeps no lag.
        let lag = if rq.load > 0 {
            lag as i128 * (rq.load + w) as i128 / rq.load as i128
        } else {
            0
        };
        let v = (rq.avg() as i128 - lag).clamp(0, u64::MAX as i128) as u64;
        let mut vslice = Self::virtual_ns(self.slice_ns, w);
        if initial {
            // PLACE_DEADLINE_INITIAL: the tasks already there are, on average, halfway
            // through their requests.
            vslice = (vslice / 2).max(1);
        }
        let e = &mut self.entities[slot];
        e.vruntime = v;
        e.deadline = v.saturating_add(vslice);
        e.picked = 0;
        self.account(rqs, u, slot);
    }

    /// Moves the accounting of task `t` (in `slot`) to `to`'s queue, keeping its lag
    /// (a migration: dequeued with its lag, placed with it, a fresh request).
    fn transfer(
        &mut self,
        rqs: &mut LoadIndex<RunQueue>,
        now: u64,
        t: TaskId,
        slot: usize,
        to: UnitId,
    ) {
        let lag = self.leave(rqs, now, slot).map_or(0, |(lag, _)| lag);
        rqs.inc(to);
        self.update_curr(rqs, to, now);
        self.place(rqs, to, slot, lag, false);
        let v = self.entities[slot].vruntime;
        self.index.pushed(to, t, slot, v);
    }

    /// `task` (in `slot`, accounted on `u`) starts running on `u` at `now`.
    #[inline]
    fn start(
        &mut self,
        rqs: &mut LoadIndex<RunQueue>,
        u: UnitId,
        task: TaskId,
        slot: usize,
        now: u64,
    ) {
        self.index.taken(slot);
        let e = &mut self.entities[slot];
        e.picked = e.deadline;
        let rq = rqs.unit_mut(u);
        rq.curr = task;
        rq.curr_slot = slot;
        rq.stint_v = e.vruntime;
        rq.stint_ns = now;
    }

    /// Makes `task`, which the engine runs on `u`, `u`'s running entity: for an engine
    /// that started a task this policy did not pick there (its accounting moves to `u`
    /// as a migration's does).
    #[cold]
    fn adopt(&mut self, rqs: &mut LoadIndex<RunQueue>, view: &View, u: UnitId, task: TaskId) {
        let now = view.now_ns();
        // Whatever this policy thought ran there is not running: it is not advanced.
        rqs.unit_mut(u).curr = NO_TASK;
        let slot = view.slot(task);
        let e = *self.entity(slot);
        if e.task != task {
            *self.entity(slot) = Entity {
                task,
                weight: view.task(task).weight.max(1) as u64,
                ..Entity::default()
            };
            rqs.inc(u);
            self.place(rqs, u, slot, 0, true);
        } else if e.unit != u {
            self.transfer(rqs, now, task, slot, u);
        }
        self.start(rqs, u, task, slot, now);
    }
}

// The policy's calls on every event are inlined into the simulator's engine compiled for
// this type (`crate::Built`), as cfs's are.
impl Policy for Eevdf {
    fn name(&self) -> &str {
        &self.name
    }

    #[inline]
    fn submit(&mut self, view: &View, task: TaskId) -> SubmitDecision {
        self.init(view);
        let now = view.now_ns();
        let t = view.task(task);
        let slot = view.slot(task);
        let st = &mut self.st;
        // A live engine asks again about a task it placed before (its unit went
        // offline): it keeps its lag, as a migration does.
        let again = st.entity(slot).task == task;
        let lag = if again {
            st.leave(&mut self.rqs, now, slot).map_or(0, |(lag, _)| lag)
        } else {
            0
        };
        let Some(u) = self.rqs.place(&t.affinity) else {
            return SubmitDecision::Reject("no unit can run it".into());
        };
        if !again {
            *st.entity(slot) = Entity {
                task,
                weight: t.weight.max(1) as u64,
                ..Entity::default()
            };
        }
        st.update_curr(&mut self.rqs, u, now);
        st.place(&mut self.rqs, u, slot, lag, !again);
        let v = st.entities[slot].vruntime;
        st.index.pushed(u, task, slot, v);
        SubmitDecision::Enqueue(QueueId::Unit(u))
    }

    #[inline]
    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        self.init(view);
        let now = view.now_ns();
        let st = &mut self.st;
        // The unit is idle: whatever ran there has left or waits in its queue.
        st.update_curr(&mut self.rqs, unit, now);
        self.rqs.unit_mut(unit).curr = NO_TASK;
        let rq = *self.rqs.unit(unit);
        if let Some((t, slot)) = st.index.best(view, unit, &st.entities, &rq) {
            if st.entities[slot].unit != unit || st.entities[slot].task != t {
                st.adopt(&mut self.rqs, view, unit, t);
            } else {
                st.start(&mut self.rqs, unit, t, slot, now);
            }
            return PickDecision::Run(t);
        }
        if !self.newidle {
            return PickDecision::Idle;
        }
        // New-idle balance, as cfs's.
        let Some((from, t)) = fair::newidle_source(view, &self.rqs, unit) else {
            return PickDecision::Idle;
        };
        let slot = view.slot(t);
        st.transfer(&mut self.rqs, now, t, slot, unit);
        st.start(&mut self.rqs, unit, t, slot, now);
        PickDecision::Steal { from, task: t }
    }

    /// What is left of the running task's request: until its vruntime reaches its
    /// deadline.
    #[inline]
    fn time_slice(&mut self, view: &View, unit: UnitId, task: TaskId) -> Option<u64> {
        self.init(view);
        if self.rqs.unit(unit).curr != task {
            self.st.adopt(&mut self.rqs, view, unit, task);
        }
        let rq = self.rqs.unit(unit);
        let e = &self.st.entities[rq.curr_slot];
        // The least stint length after which curr_vruntime reaches the deadline.
        let need = e.deadline.saturating_sub(rq.stint_v) as u128 * e.weight as u128;
        let need = need.div_ceil(NICE_0_LOAD as u128).min(u64::MAX as u128) as u64;
        let ran = view.now_ns().saturating_sub(rq.stint_ns);
        Some(need.saturating_sub(ran).max(1))
    }

    #[inline]
    fn checkpoint(&mut self, view: &View, task: TaskId, unit: UnitId) -> CheckpointDecision {
        self.init(view);
        let now = view.now_ns();
        if self.rqs.unit(unit).curr != task {
            self.st.adopt(&mut self.rqs, view, unit, task);
        }
        let st = &mut self.st;
        st.update_curr(&mut self.rqs, unit, now);
        let rq = *self.rqs.unit(unit);
        let slot = rq.curr_slot;
        let e = &mut st.entities[slot];
        if e.vruntime >= e.deadline {
            // update_deadline: the request is spent; the next one.
            e.deadline = e
                .vruntime
                .saturating_add(State::virtual_ns(st.slice_ns, e.weight));
        }
        let e = *e;
        if view.queue(unit).is_empty() {
            return CheckpointDecision::Continue;
        }
        // pick_eevdf with the running entity.
        let eligible = rq.eligible(e.vruntime);
        if eligible && e.picked == e.deadline {
            return CheckpointDecision::Continue; // RUN_TO_PARITY
        }
        let keep = eligible
            && st
                .index
                .best(view, unit, &st.entities, &rq)
                .is_none_or(|(_, b)| e.deadline < st.entities[b].deadline);
        if keep {
            return CheckpointDecision::Continue;
        }
        // Back to the tail of its queue, still accounted there; the unit picks again.
        self.rqs.unit_mut(unit).curr = NO_TASK;
        st.index.pushed(unit, task, slot, e.vruntime);
        CheckpointDecision::Yield
    }

    #[inline]
    fn complete(&mut self, view: &View, task: TaskId, unit: UnitId) {
        self.init(view);
        let slot = view.slot(task);
        let st = &mut self.st;
        if st.entity(slot).task != task {
            return; // never placed here
        }
        // Its lag leaves with it (V moves).
        st.leave(&mut self.rqs, view.now_ns(), slot);
        st.index.taken(slot);
        st.entities[slot].task = NO_TASK;
        let rq = self.rqs.unit_mut(unit);
        if rq.curr == task {
            rq.curr = NO_TASK;
        }
    }

    fn tick_interval(&self) -> Option<u64> {
        Some(self.balance_ns).filter(|&b| b > 0)
    }

    /// Balances by counting tasks, as cfs: no busy times.
    fn wants_samples(&self) -> bool {
        false
    }

    fn tick(&mut self, view: &View, _samples: &[Sample]) -> Vec<TickAction> {
        self.init(view);
        let now = view.now_ns();
        let st = &mut self.st;
        fair::balance(view, &mut self.rqs, |rqs, t, _from, to| {
            // Accounted on `to` before the engine moves it: a pick on `to` in between
            // (the engine wakes `to` after each move) sees its weight in V only.
            st.transfer(rqs, now, t, view.slot(t), to);
        })
    }
}

/// The queued task of a unit to pick: the eligible one with the earliest deadline (ties:
/// the one queued first), without scanning long queues on every pick and slice end.
///
/// Queues of up to [`SCAN_MAX`] tasks are scanned. A longer one keeps two heaps of its
/// entries: `later`, least vruntime first, of those not known to be eligible, and
/// `ready`, earliest deadline first, of those found eligible. A queued entity's vruntime
/// and deadline do not change while it waits, only V does, either way: a pick first moves
/// the `later` entries V has reached to `ready`, then takes `ready`'s head if it is still
/// eligible (else it returns to `later`: V went back, as when a task still owed service
/// joins from another unit; on one unit alone V never falls between two picks, as the
/// running task was eligible at the last one). Every eligible entry is then in `ready`
/// (`later` is drained up to V), so the head is the scan's answer. As in
/// `queue_index.rs`, each entry is checked against the [`View`] (entries of tasks that
/// left or were queued again are dropped lazily) and, where the heaps and the engine
/// disagree (a tick's migration the engine has not made yet), the answer is a scan's.
#[derive(Default)]
struct EligibleIndex {
    heaps: Vec<Heaps>,
    /// Per task slot: its order number in the queue it was last pushed to (`NONE` once
    /// taken). Order numbers grow with every push, as positions in a queue do.
    order: Vec<u64>,
    next: u64,
}

/// No queue position (the task is in no indexed queue).
const NONE: u64 = 0;

/// (key, order, task): the key a vruntime in `later`, a deadline in `ready`.
type Entry = Reverse<(u64, u64, TaskId)>;

#[derive(Default)]
struct Heaps {
    later: BinaryHeap<Entry>,
    ready: BinaryHeap<Entry>,
}

impl Heaps {
    fn len(&self) -> usize {
        self.later.len() + self.ready.len()
    }
    fn clear(&mut self) {
        self.later.clear();
        self.ready.clear();
    }
}

/// What a heap entry says against the engine's queue.
enum Check {
    /// The task left that queue or was queued again since: drop the entry.
    Stale,
    /// The engine has not caught up, or moved the task itself: scan instead.
    Disagrees,
    /// The entry stands, for the task in this slot.
    Valid(usize),
}

impl EligibleIndex {
    /// `task` (in `slot`) goes to the back of unit `u`'s queue at vruntime `v`.
    #[inline]
    fn pushed(&mut self, u: UnitId, task: TaskId, slot: usize, v: u64) {
        if slot >= self.order.len() {
            self.order.resize(slot + 1, NONE);
        }
        self.next += 1;
        self.order[slot] = self.next;
        if let Some(h) = self.heaps.get_mut(u as usize).filter(|h| h.len() > 0) {
            h.later.push(Reverse((v, self.next, task)));
        }
    }

    /// The task in `slot` left the queue it was in.
    #[inline]
    fn taken(&mut self, slot: usize) {
        if let Some(o) = self.order.get_mut(slot) {
            *o = NONE;
        }
    }

    /// The task `u` picks from its queue, with its slot: the eligible one with the
    /// earliest deadline (ties: queued first); if none is eligible (the queue's sums
    /// hold a task a tick moved there that the engine has not moved yet), the one with
    /// the least vruntime.
    #[inline]
    fn best(
        &mut self,
        view: &View,
        u: UnitId,
        entities: &[Entity],
        rq: &RunQueue,
    ) -> Option<(TaskId, usize)> {
        let queue = view.queue(u);
        if queue.len() > SCAN_MAX {
            return self.indexed(view, u, entities, rq);
        }
        if let Some(h) = self.heaps.get_mut(u as usize).filter(|h| h.len() > 0) {
            h.clear();
        }
        scan(queue, entities, rq)
    }

    #[inline(never)]
    fn indexed(
        &mut self,
        view: &View,
        u: UnitId,
        entities: &[Entity],
        rq: &RunQueue,
    ) -> Option<(TaskId, usize)> {
        let queue = view.queue(u);
        if self.heaps.len() <= u as usize {
            self.heaps.resize_with(u as usize + 1, Heaps::default);
        }
        // Stale entries are at most as many as pushes since the last rebuild: rebuild
        // when they outnumber the live ones.
        if self.heaps[u as usize].len() > 2 * queue.len() {
            self.heaps[u as usize].clear();
        }
        if self.heaps[u as usize].len() == 0 {
            self.rebuild(view, u, entities);
        }
        let check = |order: &[u64], t: TaskId, o: u64| -> Check {
            let Some(e) = view.entry(t) else {
                return Check::Stale; // the task ended
            };
            let slot = view.slot(t);
            if order.get(slot) != Some(&o) {
                return Check::Stale;
            }
            if e.placement() != Placement::Queued(QueueId::Unit(u)) || entities[slot].task != t {
                return Check::Disagrees;
            }
            Check::Valid(slot)
        };
        let (order, h) = (&self.order, &mut self.heaps[u as usize]);
        // Those V has reached become candidates.
        while let Some(&Reverse((v, o, t))) = h.later.peek() {
            match check(order, t, o) {
                Check::Stale => {
                    h.later.pop();
                }
                Check::Disagrees => return scan(queue, entities, rq),
                Check::Valid(slot) => {
                    if entities[slot].vruntime != v {
                        return scan(queue, entities, rq);
                    }
                    if !rq.eligible(v) {
                        break;
                    }
                    h.later.pop();
                    h.ready.push(Reverse((entities[slot].deadline, o, t)));
                }
            }
        }
        while let Some(&Reverse((d, o, t))) = h.ready.peek() {
            match check(order, t, o) {
                Check::Stale => {
                    h.ready.pop();
                }
                Check::Disagrees => return scan(queue, entities, rq),
                Check::Valid(slot) => {
                    let e = &entities[slot];
                    if e.deadline != d {
                        return scan(queue, entities, rq);
                    }
                    if rq.eligible(e.vruntime) {
                        return Some((t, slot));
                    }
                    // V went back below it.
                    h.ready.pop();
                    h.later.push(Reverse((e.vruntime, o, t)));
                }
            }
        }
        scan(queue, entities, rq)
    }

    /// Indexes `u`'s queue afresh, numbering its tasks in queue order.
    #[cold]
    fn rebuild(&mut self, view: &View, u: UnitId, entities: &[Entity]) {
        let queue = view.queue(u);
        let mut later = Vec::with_capacity(queue.len());
        for (slot, e) in queue.entries() {
            let Some(ent) = entities.get(slot) else {
                continue;
            };
            if slot >= self.order.len() {
                self.order.resize(slot + 1, NONE);
            }
            self.next += 1;
            self.order[slot] = self.next;
            later.push(Reverse((ent.vruntime, self.next, e.task.id)));
        }
        self.heaps[u as usize] = Heaps {
            later: BinaryHeap::from(later),
            ready: BinaryHeap::new(),
        };
    }
}

/// [`EligibleIndex::best`] by a scan.
#[inline]
fn scan(queue: Queue, entities: &[Entity], rq: &RunQueue) -> Option<(TaskId, usize)> {
    let mut best: Option<(u64, TaskId, usize)> = None;
    let mut least: Option<(u64, TaskId, usize)> = None;
    for (slot, e) in queue.entries() {
        let Some(ent) = entities.get(slot) else {
            continue;
        };
        let t = e.task.id;
        if rq.eligible(ent.vruntime) {
            if best.is_none_or(|(d, _, _)| ent.deadline < d) {
                best = Some((ent.deadline, t, slot));
            }
        } else if least.is_none_or(|(v, _, _)| ent.vruntime < v) {
            least = Some((ent.vruntime, t, slot));
        }
    }
    best.or(least).map(|(_, t, slot)| (t, slot))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slice_scales_with_the_cpus_as_linux_does() {
        // 1 + ilog2(min(cpus, 8)): 1, 2, 2, 3, ... 4 from 8 CPUs on.
        assert_eq!(
            [0, 1, 2, 3, 4, 7, 8, 64].map(slice_factor),
            [1, 1, 2, 2, 3, 3, 4, 4]
        );
    }

    #[test]
    fn eligibility_is_exact_at_the_average() {
        let mut rq = RunQueue::idle(UnitType::Cpu);
        // Weights 1024 and 2048 at vruntimes 10 and 13: V = (10240 + 26624) / 3072 = 12.
        rq.load = 3072;
        rq.sum_wv = 1024 * 10 + 2048 * 13;
        assert_eq!(rq.avg(), 12);
        assert!(rq.eligible(12) && !rq.eligible(13) && rq.eligible(10));
    }
}
