//! `affinity`: Beisel et al.'s heterogeneity-aware CFS extension (CAOS 2012, §II–III).
//!
//! The authors' kernel patch (github.com/pc2/hetsched) is not available here; this
//! follows the paper's text:
//! - **Queues**: one per compute unit (the engine's unit queues).
//! - **Placement** (`alloc`): among the units a task has an implementation for, the one
//!   with the highest affinity (its meta info, ×`bonus` when the task has a single
//!   implementation) wins unless its queue is congested (waiting tasks ≥ the unit type's
//!   queue limit; an idle unit with nothing waiting never is); ties, and congested
//!   units, go to the less loaded unit.
//! - **Time-sharing** (`re-request` at checkpoints): each unit keeps CFS virtual runtime
//!   per task; the running task keeps the unit while its vruntime is below the next
//!   waiter's plus the granularity (per unit type, plus the time to copy the task's
//!   memory over the unit's link); granularity 0 switches at every checkpoint, `fcfs=1`
//!   never yields.
//! - **Load balancer** (`free`, i.e. a completion or a yield/migration at a checkpoint,
//!   and whenever a unit is idle: "if a task is waiting for the semaphore of a compute
//!   unit and another suitable unit is running idle in the meantime then the load
//!   balancer wakes the task", §III-C): the idle unit first pulls the waiting task
//!   elsewhere with the highest affinity for it (late binding; ties to the longer
//!   queue), else offers itself to a task running elsewhere with a higher affinity for
//!   it, which migrates at its next checkpoint. A freed accelerator also refills its
//!   queue up to its limit with such offers (the paper's Fig. 3, regions b and d). The
//!   engine asks idle units whenever a task is queued anywhere it could run.
//! - Pulls never move a task to a unit type it has a lower affinity for than the one it
//!   waits on (an MD5 task queued on the GPU stays there); this keeps the balancer from
//!   undoing its own offers.
//!
//! On CPUs the engine stops a task only when the policy's time slice ends; the policy
//! asks for a slice of whole application checkpoints of at least `cpu_check_ms`, so a
//! re-request happens at a real checkpoint (CPU checkpoints cost nothing).
//!
//! Parameters: `gran_ms` (4000: accelerator granularity), `cpu_gran_ms` (10: CPU units
//! time-share at a CFS-like scale, as "for CPUs, the standard Linux scheduler is used"),
//! `fcfs` (0; 1 = never yield), `acc_limit` (5: queue limit of non-CPU units),
//! `cpu_limit` (0 = unlimited), `bonus` (4: factor for single-implementation tasks),
//! `cpu_check_ms` (10). Ranges: `gran_ms` and `cpu_gran_ms` in [0, 10^9], `bonus` in
//! [10^-6, 10^6], `cpu_check_ms` in [0.1, 10^9], `acc_limit` and `cpu_limit` in
//! [0, 10^9], `fcfs` 0 or 1.

use crate::params::{ms_to_ns, Params};
use crate::queue_index::QueueIndex;
use hetsched_core::machine::UnitType;
use hetsched_core::policy::{
    CheckpointDecision, PickDecision, Policy, SubmitDecision, UnitId, View,
};
use hetsched_core::task::{QueueId, TaskId};
use hetsched_core::Result;
use rustc_hash::FxHashMap;

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "affinity",
    about: "Beisel et al. (CAOS 2012)'s CFS for accelerators: per-unit queues, affinity placement with queue limits, checkpoint time-sharing, late binding",
    test_specs: &["affinity", "affinity:gran_ms=0,cpu_gran_ms=1,acc_limit=1", "affinity:fcfs=1,acc_limit=0"],
    build: |spec, p, _| Ok(AffinityPolicy::from_params(spec, p)?.into()),
};

/// The `affinity` policy (see the module documentation).
pub struct AffinityPolicy {
    name: String,
    gran_ns: u64,
    cpu_gran_ns: u64,
    fcfs: bool,
    acc_limit: usize,
    cpu_limit: usize,
    bonus: f64,
    cpu_check_ns: u64,
    vruntime: FxHashMap<TaskId, u64>,
    min_vruntime: Vec<u64>,
    exec_start: Vec<u64>,
    /// Set by `free` (completion, yield, migration): the unit's next pick refills its
    /// queue slots with offers.
    freed: Vec<bool>,
    /// Running task → the unit offered to it (taken at its next checkpoint).
    offers: FxHashMap<TaskId, UnitId>,
    /// Pending offers per unit.
    offered: Vec<usize>,
    /// The queued tasks of each unit by vruntime (long queues are not scanned).
    index: QueueIndex,
    /// The queued tasks of each unit by [`pull_key`] for units of each type (by
    /// `kind as usize`): late binding looks at each queue's best task, not at every task.
    by_score: [QueueIndex; 4],
}

impl AffinityPolicy {
    pub fn from_params(spec: &str, p: &mut Params) -> Result<AffinityPolicy> {
        let gran_ms = p.f64_in(
            "gran_ms",
            "time-sharing granularity on accelerators, ms (0: switch at every checkpoint with a waiter)",
            4000.0, 0.0..=1e9, false)?;
        let cpu_gran_ms = p.f64_in(
            "cpu_gran_ms",
            "time-sharing granularity on CPUs, ms",
            10.0,
            0.0..=1e9,
            false,
        )?;
        let fcfs = p.flag("fcfs", "1: a running task never yields its unit", false)?;
        // Beyond 10^9 waiting tasks a queue limit is no limit.
        let acc_limit = p.u64_upto(
            "acc_limit",
            "queue limit of accelerator units (waiting tasks)",
            5,
            1_000_000_000,
        )? as usize;
        let cpu_limit = p.u64_upto(
            "cpu_limit",
            "queue limit of CPU units (0: unlimited)",
            0,
            1_000_000_000,
        )? as usize;
        let bonus = p.f64_in(
            "bonus",
            "affinity factor for tasks with a single implementation",
            4.0,
            1e-6..=1e6,
            false,
        )?;
        // The CPU slice: below 0.1 ms (Linux's least granularity) a run would spin.
        let cpu_check_ms = p.f64_in(
            "cpu_check_ms",
            "least CPU slice, ms (whole application checkpoints)",
            10.0,
            0.1..=1e9,
            false,
        )?;
        Ok(AffinityPolicy {
            name: spec.to_string(),
            gran_ns: ms_to_ns(gran_ms),
            cpu_gran_ns: ms_to_ns(cpu_gran_ms),
            fcfs,
            acc_limit,
            cpu_limit: if cpu_limit == 0 {
                usize::MAX
            } else {
                cpu_limit
            },
            bonus,
            cpu_check_ns: ms_to_ns(cpu_check_ms).max(1),
            vruntime: FxHashMap::default(),
            min_vruntime: Vec::new(),
            exec_start: Vec::new(),
            freed: Vec::new(),
            offers: FxHashMap::default(),
            offered: Vec::new(),
            index: QueueIndex::default(),
            by_score: Default::default(),
        })
    }

    /// Sizes the per-unit state, also for units added since the last call.
    fn init(&mut self, view: &View) {
        let n = view.units().len();
        if self.min_vruntime.len() < n {
            self.min_vruntime.resize(n, 0);
            self.exec_start.resize(n, 0);
            self.freed.resize(n, false);
            self.offered.resize(n, 0);
        }
    }

    /// The task's placement score for a unit type: its affinity, times `bonus` when it
    /// has a single implementation (0 = cannot run there).
    fn score(&self, view: &View, task: TaskId, kind: UnitType) -> f64 {
        score(self.bonus, view, task, kind)
    }

    fn limit(&self, kind: UnitType) -> usize {
        if kind == UnitType::Cpu {
            self.cpu_limit
        } else {
            self.acc_limit
        }
    }

    /// Waiting tasks of a unit, pending offers included.
    fn waiting(&self, view: &View, u: UnitId) -> usize {
        view.queue(u).len() + self.offered[u as usize]
    }

    fn load(&self, view: &View, u: UnitId) -> usize {
        view.load(u) + self.offered[u as usize]
    }

    /// The granularity for `task` on unit `u`: the type's plus the copy time of its memory.
    fn granularity(&self, view: &View, task: TaskId, u: UnitId) -> u64 {
        let unit = view.unit(u);
        if unit.kind == UnitType::Cpu {
            return self.cpu_gran_ns;
        }
        let t = view.task(task);
        let copy_ns = unit
            .accelerator
            .and_then(|i| view.machine().accelerators.get(i as usize))
            .and_then(|a| a.link_bandwidth_bytes_per_s)
            .filter(|&bw| bw > 0.0)
            .map_or(0, |bw| {
                ((t.bytes_in + t.bytes_out) as f64 / bw * 1e9) as u64
            });
        self.gran_ns.saturating_add(copy_ns)
    }

    /// Re-bases a task's vruntime from unit `from`'s queue to unit `to`'s.
    fn transfer(&mut self, task: TaskId, from: UnitId, to: UnitId) {
        if let Some(v) = self.vruntime.get_mut(&task) {
            *v =
                v.saturating_sub(self.min_vruntime[from as usize]) + self.min_vruntime[to as usize];
        }
    }

    /// The queued task to run next on `u`: the head (FCFS) or the least vruntime.
    fn next_own(&mut self, view: &View, u: UnitId) -> Option<TaskId> {
        if self.fcfs {
            return view.queue(u).front();
        }
        self.least_vruntime(view, u).map(|(_, t)| t)
    }

    /// The queued task of `u` with the least vruntime (ties: nearest the head).
    fn least_vruntime(&mut self, view: &View, u: UnitId) -> Option<(u64, TaskId)> {
        let vruntime = &self.vruntime;
        self.index
            .least(view, u, |t, _| vruntime.get(&t).copied().unwrap_or(0))
            .map(|(v, t, _)| (v, t))
    }

    /// `task` goes to the back of `u`'s queue.
    fn pushed(&mut self, view: &View, u: UnitId, task: TaskId) {
        let v = self.vruntime.get(&task).copied().unwrap_or(0);
        let slot = view.slot(task);
        self.index.pushed(u, task, slot, v);
        let own = view.unit(u).kind;
        for kind in UnitType::ALL {
            let key = pull_key(self.bonus, view, task, kind, own);
            self.by_score[kind as usize].pushed(u, task, slot, key);
        }
    }

    /// `task` left the queue it was in.
    fn taken(&mut self, view: &View, task: TaskId) {
        let slot = view.slot(task);
        self.index.taken(slot);
        self.by_score.iter_mut().for_each(|i| i.taken(slot));
    }

    /// Late binding: the task waiting on another unit with the highest affinity for `u`
    /// (ties: the longer queue, then the lowest unit and queue position).
    fn pull(&mut self, view: &View, u: UnitId) -> Option<(UnitId, TaskId)> {
        let kind = view.unit(u).kind;
        let bonus = self.bonus;
        let mut best: Option<(f64, usize, UnitId, TaskId)> = None;
        for other in view.units() {
            let q = view.queue(other.id);
            if other.id == u || q.is_empty() {
                continue;
            }
            let key = |t, _| pull_key(bonus, view, t, kind, other.kind);
            let Some((k, t, _)) = self.by_score[kind as usize].least(view, other.id, key) else {
                continue;
            };
            if k == NO_PULL {
                continue;
            }
            let s = score(bonus, view, t, kind);
            let better = match best {
                None => true,
                Some((bs, bl, _, _)) => s > bs || (s == bs && q.len() > bl),
            };
            if better {
                best = Some((s, q.len(), other.id, t));
            }
        }
        best.map(|(_, _, from, t)| (from, t))
    }

    /// A task running elsewhere (and not yet offered a unit) whose affinity for `u` is
    /// higher than for the unit it runs on, highest first (ties: lowest task id).
    fn offer_candidate(&self, view: &View, u: UnitId) -> Option<TaskId> {
        let kind = view.unit(u).kind;
        let mut best: Option<(f64, TaskId)> = None;
        for other in view.units() {
            let Some(r) = view.running(other.id) else {
                continue;
            };
            let t = r.task;
            if other.id == u
                || self.offers.contains_key(&t)
                || !self.checkpoints(view, t, other.kind)
            {
                continue;
            }
            let s = self.score(view, t, kind);
            if s <= self.score(view, t, other.kind) {
                continue;
            }
            let better = match best {
                None => true,
                Some((bs, bt)) => s > bs || (s == bs && t < bt),
            };
            if better {
                best = Some((s, t));
            }
        }
        best.map(|(_, t)| t)
    }

    /// Whether a task running on a unit of `kind` reaches checkpoints there.
    fn checkpoints(&self, view: &View, task: TaskId, kind: UnitType) -> bool {
        let has_interval = view.task(task).checkpoint_ns.get(kind) > 0;
        // CPUs stop at the policy's time slice, which FCFS leaves unbounded without one.
        has_interval || (kind == UnitType::Cpu && !self.fcfs)
    }

    /// Offers `u` to running tasks with a higher affinity for it until its slots are
    /// taken: the running slot when `u` is idle, plus, on an accelerator, its queue up to
    /// the limit (`taking` is about to leave that queue).
    fn refill(&mut self, view: &View, u: UnitId, idle: bool, taking: Option<TaskId>) {
        let queue_slots = if view.unit(u).kind == UnitType::Cpu {
            0
        } else {
            self.acc_limit
        };
        let slots = queue_slots + usize::from(idle);
        // `taking` comes from `u`'s queue.
        let leaving = usize::from(taking.is_some());
        while self.waiting(view, u) - leaving < slots {
            let Some(t) = self.offer_candidate(view, u) else {
                break;
            };
            self.offers.insert(t, u);
            self.offered[u as usize] += 1;
        }
    }

    fn drop_offer(&mut self, task: TaskId) -> Option<UnitId> {
        let u = self.offers.remove(&task)?;
        self.offered[u as usize] -= 1;
        Some(u)
    }
}

impl Policy for AffinityPolicy {
    fn name(&self) -> &str {
        &self.name
    }

    fn submit(&mut self, view: &View, task: TaskId) -> SubmitDecision {
        self.init(view);
        // (not congested, score, -load, -id): the largest wins.
        let mut best: Option<(bool, f64, usize, UnitId)> = None;
        for unit in view.units() {
            let s = self.score(view, task, unit.kind);
            if s <= 0.0 {
                continue;
            }
            // An idle unit with nothing waiting takes a task whatever its limit.
            let idle = view.running(unit.id).is_none() && self.waiting(view, unit.id) == 0;
            let free = idle || self.waiting(view, unit.id) < self.limit(unit.kind);
            let load = self.load(view, unit.id);
            let better = match best {
                None => true,
                Some((bf, bs, bl, _)) => {
                    (free, s) > (bf, bs) || (free == bf && s == bs && load < bl)
                }
            };
            if better {
                best = Some((free, s, load, unit.id));
            }
        }
        let Some((_, _, _, u)) = best else {
            return SubmitDecision::Reject("no unit can run it".into());
        };
        self.vruntime.insert(task, self.min_vruntime[u as usize]);
        self.pushed(view, u, task);
        SubmitDecision::Enqueue(QueueId::Unit(u))
    }

    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        self.init(view);
        let freed = std::mem::take(&mut self.freed[unit as usize]);
        self.exec_start[unit as usize] = view.now_ns();
        if let Some(t) = self.next_own(view, unit) {
            if let Some(&v) = self.vruntime.get(&t) {
                let m = &mut self.min_vruntime[unit as usize];
                *m = (*m).max(v);
            }
            if freed {
                // The task leaving the queue frees a slot the balancer refills.
                self.refill(view, unit, false, Some(t));
            }
            self.drop_offer(t);
            self.taken(view, t);
            return PickDecision::Run(t);
        }
        if let Some((from, t)) = self.pull(view, unit) {
            self.transfer(t, from, unit);
            self.drop_offer(t);
            self.taken(view, t);
            return PickDecision::Steal { from, task: t };
        }
        self.refill(view, unit, true, None);
        PickDecision::Idle
    }

    fn time_slice(&mut self, view: &View, _unit: UnitId, task: TaskId) -> Option<u64> {
        let cp = view.task(task).checkpoint_ns.get(UnitType::Cpu);
        if cp > 0 {
            Some(self.cpu_check_ns.div_ceil(cp) * cp)
        } else if self.fcfs {
            None
        } else {
            Some(self.cpu_gran_ns.max(self.cpu_check_ns))
        }
    }

    fn checkpoint(&mut self, view: &View, task: TaskId, unit: UnitId) -> CheckpointDecision {
        self.init(view);
        let now = view.now_ns();
        let ran = now - self.exec_start[unit as usize];
        self.exec_start[unit as usize] = now;
        let w = view.task(task).weight.max(1) as u64;
        let curr = {
            let v = self.vruntime.entry(task).or_insert(0);
            *v = v.saturating_add(ran.saturating_mul(1024) / w);
            *v
        };
        if let Some(to) = self.drop_offer(task) {
            if to != unit && view.can_run(task, to) {
                self.transfer(task, unit, to);
                self.freed[unit as usize] = true;
                self.pushed(view, to, task);
                return CheckpointDecision::Migrate(to);
            }
        }
        let left = if self.fcfs {
            None
        } else {
            self.least_vruntime(view, unit).map(|(v, _)| v)
        };
        match left {
            Some(left) if curr >= left.saturating_add(self.granularity(view, task, unit)) => {
                let m = &mut self.min_vruntime[unit as usize];
                *m = (*m).max(left.min(curr));
                self.freed[unit as usize] = true;
                self.pushed(view, unit, task);
                CheckpointDecision::Yield
            }
            _ => {
                let m = &mut self.min_vruntime[unit as usize];
                *m = (*m).max(left.map_or(curr, |l| l.min(curr)));
                CheckpointDecision::Continue
            }
        }
    }

    fn complete(&mut self, _view: &View, task: TaskId, unit: UnitId) {
        self.vruntime.remove(&task);
        self.drop_offer(task);
        if let Some(f) = self.freed.get_mut(unit as usize) {
            *f = true;
        }
    }
}

/// The task's placement score for a unit type: its affinity, times `bonus` when it has a
/// single implementation (0 = cannot run there).
fn score(bonus: f64, view: &View, task: TaskId, kind: UnitType) -> f64 {
    let a = &view.task(task).affinity;
    let implementations = UnitType::ALL.iter().filter(|&&k| a.runs_on(k)).count();
    let s = a.get(kind).max(0.0);
    if implementations == 1 {
        s * bonus
    } else {
        s
    }
}

/// A task that late binding does not move to that unit type.
const NO_PULL: u64 = u64::MAX;

/// Orders the tasks waiting on a unit of type `own` for a pull to a unit of type `kind`:
/// the higher the score the smaller the key (scores are non-negative, so their bits
/// order like them); `NO_PULL` for tasks that cannot go or score lower there.
fn pull_key(bonus: f64, view: &View, task: TaskId, kind: UnitType, own: UnitType) -> u64 {
    let s = score(bonus, view, task, kind);
    if s <= 0.0 || s < score(bonus, view, task, own) {
        NO_PULL
    } else {
        NO_PULL - 1 - s.to_bits()
    }
}
