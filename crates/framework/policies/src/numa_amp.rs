//! `numa-amp`: Ding et al.'s NUMA-aware scheduler for asymmetric multicores (Ding,
//! Chang, Guo, Li, Chung, JSA 60(3), 2014, online 2013), on the profile of
//! [`crate::amp_factors`]: where the paper stops before its formulas, the speed-up factor
//! is CAMP's (Saez et al.) and memory intensity is Distributed Intensity's (Zhuravlev,
//! Blagodurov, Fedorova) with DINO's classes (Blagodurov et al.), as `docs/ding.md` says.
//! The paper measured against CentOS 6.0's Linux (2.6.32, CFS): `cfs` stands in for it.
//!
//! Why it looks like this: the paper ranks tasks by two metrics kept in two lists —
//! the **AMP-list** by speed-up factor decides who runs on the fast cores, the
//! **NUMA-list** by memory intensity spreads memory-intensive tasks over the nodes —
//! and re-schedules on two triggers: **eager** when a fast core is released, **lazy**
//! when a task on a slow core is predicted to gain more from a fast core than one
//! running there. Its profiler dumps counter samples every period: here the engines'
//! `tick` samples, every `period_ms`.
//!
//! - Placement (`submit`): the CPU unit with the least expected share
//!   `(tasks + 1) × 1024 / capacity`, then the task's memory node, then the bigger
//!   unit, then the lowest id; other unit types by the same share. This is all it does
//!   without counters: capacity- and load-aware placement.
//! - Time sharing: per-unit queues, `slice_ms` slices, round robin when a unit is
//!   shared.
//! - Eager trigger: an idle unit of the biggest capacity steals the queued task with the
//!   highest speed-up factor; at a slice end or tick, a task on a smaller unit moves to
//!   an idle bigger one.
//! - Lazy trigger (with counters): on each tick, the running tasks on small cores in
//!   decreasing speed-up factor are paired with those on the biggest cores in
//!   increasing factor; a pair swaps when `SF_slow > SF_fast × (1 + hysteresis)`.
//!   Running tasks move at their next slice end (both engines stop them there, where
//!   a tick's move of a running task would need the live client to notice), and a
//!   unit's idle steal leaves alone a task just moved off it.
//! - NUMA-list (with counters, on machines of more than one node): tasks by decreasing
//!   MPKI, each given the node with the least contention degradation factor, DI's
//!   spreading; a running task away from its node swaps with a task of the same
//!   capacity class there whose own node is elsewhere. A task's memory follows it to
//!   its node (`migrate_memory`), at most `page_moves` times, and never a turtle's
//!   (below DINO's 2 MPKI): moving it would cost more than its misses.
//!
//! Without counters in the samples (this VM has no PMU) it says so on stderr and keeps
//! to placement and the eager trigger; on a one-node machine it says that the NUMA-list
//! and page migration are no-ops. Each line once a process, not once a run: a sweep
//! runs it many times on the same machine and samples.
//!
//! Parameters: `slice_ms` (6), `period_ms` (10), `hysteresis` (0.1), `miss_latency_ns`
//! (100), `mpki_scale` (20), `page_moves` (2).

use crate::amp_factors::{contention_factor, Counters, Profile, TURTLE_MPKI};
use crate::params::{ms_to_ns, Params};
use hetsched_core::machine::{Machine, UnitType};
use hetsched_core::policy::{
    CheckpointDecision, PickDecision, Policy, Sample, SubmitDecision, TickAction, UnitId, View,
};
use hetsched_core::task::{QueueId, TaskId};
use hetsched_core::Result;

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "numa-amp",
    about: "Ding et al. (JSA 2014): fast cores by speed-up factor, memory-intensive tasks spread over nodes with their pages (DI, DINO), from counters",
    test_specs: &[
        "numa-amp",
        "numa-amp:slice_ms=1,period_ms=1,hysteresis=0,page_moves=0",
    ],
    build: |spec, p, _| Ok(NumaAmp::from_params(spec, p)?.into()),
};

/// Prints `line` on stderr unless this process printed it already. A fallback is said
/// once a process, not once a run: a sweep runs the policy many times (every spec,
/// every seed) on the same machine and samples, and a line each time buried the
/// table; a run that falls back otherwise says so in a line of its own. The lines name
/// the policy, not the spec: one stands for all of them. (Each policy's own flag
/// spares the lock on every tick.)
fn say_once(line: String) {
    static SAID: std::sync::Mutex<std::collections::BTreeSet<String>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if !said.contains(&line) {
        eprintln!("{line}");
        said.insert(line);
    }
}

pub struct NumaAmp {
    name: String,
    slice_ns: u64,
    period_ns: u64,
    hysteresis: f64,
    miss_latency_ns: f64,
    mpki_scale: f64,
    page_moves: u32,
    /// Per live task, by its slot ([`View::slot`]).
    tasks: Vec<TaskState>,
    said_no_counters: bool,
    said_one_node: bool,
    triggers: Triggers,
    lists: Lists,
}

/// A running task's speed-up factor, id and unit.
type Runner = (f64, TaskId, UnitId);

/// The two lists as the last tick with profiled tasks left them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lists {
    /// Running CPU tasks by decreasing speed-up factor, with it.
    pub amp: Vec<(TaskId, f64)>,
    /// The same tasks by decreasing MPKI, with it and their node (none on one node).
    pub numa: Vec<(TaskId, f64, Option<u32>)>,
}

/// How often each trigger moved a task (what the tests and the experiment read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Triggers {
    pub eager: u64,
    pub lazy: u64,
    pub numa: u64,
    pub page_moves: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct TaskState {
    id: TaskId,
    profile: Profile,
    /// Its node on the NUMA-list.
    node: Option<u32>,
    moves: u32,
    /// Where a trigger sends it at its next slice end (running tasks move at their
    /// checkpoints: both engines stop them there).
    target: Option<UnitId>,
    /// The unit a trigger just moved it off: that unit's idle steal leaves it alone
    /// until it runs again (else a swap's first move is undone at once).
    left: Option<UnitId>,
}

impl NumaAmp {
    pub fn from_params(spec: &str, p: &mut Params) -> Result<NumaAmp> {
        let slice_ns = ms_to_ns(p.f64_in(
            "slice_ms",
            "time slice when a unit is shared, ms",
            6.0,
            0.1..=1000.0,
            false,
        )?);
        let period_ns = ms_to_ns(p.f64_in(
            "period_ms",
            "profiling period (the paper's OPROFILE_PERIOD), ms",
            10.0,
            0.1..=1e6,
            false,
        )?);
        let hysteresis = p.f64_in(
            "hysteresis",
            "lazy trigger: relative margin of speed-up factors before a swap",
            0.1,
            0.0..=10.0,
            false,
        )?;
        let miss_latency_ns = p.f64_in(
            "miss_latency_ns",
            "memory stall per LLC miss, ns (speed-up factor)",
            100.0,
            1.0..=10_000.0,
            false,
        )?;
        let mpki_scale = p.f64_in(
            "mpki_scale",
            "MPKI of co-runners that doubles a memory-bound task's stall",
            20.0,
            0.1..=1e6,
            false,
        )?;
        let page_moves = p.u64_upto("page_moves", "page migrations per task", 2, 1000)? as u32;
        Ok(NumaAmp {
            name: spec.to_string(),
            slice_ns,
            period_ns,
            hysteresis,
            miss_latency_ns,
            mpki_scale,
            page_moves,
            tasks: Vec::new(),
            said_no_counters: false,
            said_one_node: false,
            triggers: Triggers::default(),
            lists: Lists::default(),
        })
    }

    /// How often each trigger fired so far.
    pub fn triggers(&self) -> Triggers {
        self.triggers
    }

    /// The AMP-list and NUMA-list of the last tick that had profiled tasks.
    pub fn lists(&self) -> &Lists {
        &self.lists
    }

    /// Keeps the lists of this tick, if any task in them is profiled.
    fn keep_lists(&mut self, view: &View, slow: &[Runner], fast: &[Runner]) {
        let profiled = |t: TaskId| self.profile(view, t).known();
        let mut amp: Vec<(TaskId, f64)> = slow
            .iter()
            .chain(fast)
            .filter(|e| profiled(e.1))
            .map(|&(sf, t, _)| (t, sf))
            .collect();
        if amp.is_empty() {
            return;
        }
        amp.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut numa: Vec<(TaskId, f64, Option<u32>)> = amp
            .iter()
            .map(|&(t, _)| (t, self.profile(view, t).mpki, self.node_of(view, t)))
            .collect();
        numa.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        self.lists = Lists { amp, numa };
    }

    fn state(&mut self, view: &View, task: TaskId) -> &mut TaskState {
        let slot = view.slot(task);
        if slot >= self.tasks.len() {
            self.tasks.resize(slot + 1, TaskState::default());
        }
        let s = &mut self.tasks[slot];
        if s.id != task {
            *s = TaskState {
                id: task,
                ..TaskState::default()
            };
        }
        s
    }

    fn profile(&self, view: &View, task: TaskId) -> Profile {
        self.tasks
            .get(view.slot(task))
            .filter(|s| s.id == task)
            .map_or(Profile::default(), |s| s.profile)
    }

    /// The task's speed-up factor from the smallest to the biggest CPU (1 unknown).
    fn speedup(&self, view: &View, task: TaskId) -> f64 {
        let (lo, hi) = cpu_capacities(view);
        self.profile(view, task)
            .speedup(hi, lo, self.miss_latency_ns)
    }

    fn say_once_one_node(&mut self, view: &View) {
        if !self.said_one_node && view.machine().numa_nodes.len() < 2 {
            self.said_one_node = true;
            say_once(format!(
                "numa-amp: the machine has {} NUMA node(s): the NUMA-list and page migration are no-ops",
                view.machine().numa_nodes.len()
            ));
        }
    }

    /// Tasks running on CPUs smaller than the biggest, by decreasing speed-up factor,
    /// and those on the biggest, by increasing factor.
    fn runners(&self, view: &View) -> (Vec<Runner>, Vec<Runner>) {
        let (_, hi) = cpu_capacities(view);
        let (mut slow, mut fast) = (Vec::new(), Vec::new());
        for u in view.units_of(UnitType::Cpu) {
            if let Some(r) = view.running(u.id) {
                let entry = (self.speedup(view, r.task), r.task, u.id);
                if u.capacity < hi {
                    slow.push(entry);
                } else {
                    fast.push(entry);
                }
            }
        }
        slow.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.2.cmp(&b.2)));
        fast.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.2.cmp(&b.2)));
        (slow, fast)
    }

    /// The NUMA-list: live tasks with a profile by decreasing MPKI, each given the node
    /// with the least contention degradation factor given those before it.
    fn numa_list(&mut self, view: &View) {
        let nodes: Vec<u32> = view
            .machine()
            .numa_nodes
            .iter()
            .map(|n| n.os_index)
            .collect();
        if nodes.len() < 2 {
            return;
        }
        let (_, hi) = cpu_capacities(view);
        let mut list: Vec<usize> = (0..self.tasks.len())
            .filter(|&i| {
                let s = &self.tasks[i];
                s.profile.known() && view.entry(s.id).is_some_and(|_| view.slot(s.id) == i)
            })
            .collect();
        list.sort_by(|&a, &b| {
            let (a, b) = (&self.tasks[a], &self.tasks[b]);
            b.profile
                .mpki
                .total_cmp(&a.profile.mpki)
                .then(a.id.cmp(&b.id))
        });
        let mut load = vec![(0.0, 0u32); nodes.len()];
        for i in list {
            let s = self.tasks[i];
            let mu = s.profile.memory_fraction(hi, self.miss_latency_ns);
            let best = (0..nodes.len())
                .min_by(|&a, &b| {
                    let cdf = |k: usize| {
                        let d = distance(view.machine(), view.task(s.id).numa_home(), nodes[k]);
                        contention_factor(mu, d, load[k].0, self.mpki_scale)
                    };
                    cdf(a).total_cmp(&cdf(b)).then(load[a].1.cmp(&load[b].1))
                })
                .expect("two nodes or more");
            load[best].0 += s.profile.mpki;
            load[best].1 += 1;
            self.tasks[i].node = Some(nodes[best]);
        }
    }

    fn node_of(&self, view: &View, task: TaskId) -> Option<u32> {
        self.tasks
            .get(view.slot(task))
            .filter(|s| s.id == task)
            .and_then(|s| s.node)
    }
}

/// The smallest and biggest CPU capacities (1024 both without CPUs).
fn cpu_capacities(view: &View) -> (u32, u32) {
    view.units_of(UnitType::Cpu)
        .fold(None, |acc: Option<(u32, u32)>, u| {
            Some(acc.map_or((u.capacity, u.capacity), |(lo, hi)| {
                (lo.min(u.capacity), hi.max(u.capacity))
            }))
        })
        .unwrap_or((1024, 1024))
}

/// The distance ratio (distance / 10) from node `from` (unknown: local) to `to`.
fn distance(machine: &Machine, from: Option<u32>, to: u32) -> f64 {
    let (Some(from), Some(d)) = (from, &machine.distances) else {
        return 1.0;
    };
    let i = d.nodes.iter().position(|&n| n == from);
    let j = d.nodes.iter().position(|&n| n == to);
    match (i, j) {
        (Some(i), Some(j)) => d.matrix[i][j] as f64 / 10.0,
        _ => 1.0,
    }
}

/// An idle unit: nothing running, nothing queued.
fn idle(view: &View, u: UnitId) -> bool {
    view.running(u).is_none() && view.queue(u).is_empty()
}

impl Policy for NumaAmp {
    fn name(&self) -> &str {
        &self.name
    }

    fn submit(&mut self, view: &View, task: TaskId) -> SubmitDecision {
        self.say_once_one_node(view);
        let home = view.task(task).numa_home();
        let node_load = |n: Option<u32>| -> usize {
            view.units()
                .iter()
                .filter(|u| u.numa_node == n)
                .map(|u| view.load(u.id))
                .sum()
        };
        let best = view
            .units()
            .iter()
            .filter(|u| view.can_run(task, u.id) && u.capacity > 0)
            .min_by(|a, b| {
                let share = |u: &hetsched_core::machine::Unit| {
                    (view.load(u.id) + 1) as f64 * 1024.0 / u.capacity as f64
                };
                share(a)
                    .total_cmp(&share(b))
                    .then((a.numa_node != home).cmp(&(b.numa_node != home)))
                    .then(node_load(a.numa_node).cmp(&node_load(b.numa_node)))
                    .then(b.capacity.cmp(&a.capacity))
                    .then(a.id.cmp(&b.id))
            });
        match best {
            Some(u) => SubmitDecision::Enqueue(QueueId::Unit(u.id)),
            None => SubmitDecision::Reject("no unit can run it".into()),
        }
    }

    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        if let Some(t) = view.queue(unit).front() {
            self.state(view, t).left = None;
            return PickDecision::Run(t);
        }
        let here = view.unit(unit);
        let biggest = here.kind != UnitType::Cpu || here.capacity >= cpu_capacities(view).1;
        // Eager trigger on a biggest unit: the queued task with the highest speed-up
        // factor; elsewhere, the head of the longest queue of a shared unit.
        let mut best: Option<(f64, usize, UnitId, TaskId)> = None;
        for v in view.units() {
            if v.id == unit || view.load(v.id) < 2 {
                continue;
            }
            for (slot, e) in view.queue(v.id).entries() {
                let t = e.task.id;
                let left = self
                    .tasks
                    .get(slot)
                    .filter(|s| s.id == t)
                    .and_then(|s| s.left);
                if !e.task.affinity.runs_on(here.kind) || left == Some(unit) {
                    continue;
                }
                let score = if biggest { self.speedup(view, t) } else { 0.0 };
                let key = (score, view.load(v.id));
                if best.is_none_or(|(s, l, _, _)| key.0 > s || (key.0 == s && key.1 > l)) {
                    best = Some((key.0, key.1, v.id, t));
                }
                if !biggest {
                    break;
                }
            }
        }
        match best {
            Some((_, _, from, task)) => {
                self.state(view, task).left = None;
                if biggest && here.kind == UnitType::Cpu {
                    self.triggers.eager += 1;
                }
                PickDecision::Steal { from, task }
            }
            None => PickDecision::Idle,
        }
    }

    fn time_slice(&mut self, _view: &View, _unit: UnitId, _task: TaskId) -> Option<u64> {
        Some(self.slice_ns)
    }

    fn checkpoint(&mut self, view: &View, task: TaskId, unit: UnitId) -> CheckpointDecision {
        let s = self.state(view, task);
        if let Some(to) = s.target.take() {
            if to != unit && view.can_run(task, to) {
                s.left = Some(unit);
                return CheckpointDecision::Migrate(to);
            }
        }
        if !view.queue(unit).is_empty() {
            return CheckpointDecision::Yield;
        }
        let here = view.unit(unit);
        if here.kind != UnitType::Cpu {
            return CheckpointDecision::Continue;
        }
        // Eager trigger: a bigger CPU was released.
        let bigger = view
            .units_of(UnitType::Cpu)
            .filter(|v| v.capacity > here.capacity && idle(view, v.id) && view.can_run(task, v.id))
            .max_by(|a, b| a.capacity.cmp(&b.capacity).then(b.id.cmp(&a.id)));
        match bigger {
            Some(v) => {
                self.triggers.eager += 1;
                CheckpointDecision::Migrate(v.id)
            }
            None => CheckpointDecision::Continue,
        }
    }

    fn tick_interval(&self) -> Option<u64> {
        Some(self.period_ns)
    }

    fn tick(&mut self, view: &View, samples: &[Sample]) -> Vec<TickAction> {
        // The profiler's dump: fold each running CPU task's counters into its profile.
        let mut running = 0;
        let mut counted = 0;
        for s in samples {
            let Some(task) = s.task.filter(|_| view.unit(s.unit).kind == UnitType::Cpu) else {
                continue;
            };
            running += 1;
            let (Some(instructions), Some(cycles), Some(llc_misses)) =
                (s.instructions, s.cycles, s.llc_misses)
            else {
                continue;
            };
            counted += 1;
            let capacity = view.unit(s.unit).capacity;
            let latency = self.miss_latency_ns;
            let c = Counters {
                instructions,
                cycles,
                llc_misses,
                busy_ns: s.busy_ns,
            };
            self.state(view, task).profile.update(c, capacity, latency);
        }
        if running > 0 && counted == 0 && !self.said_no_counters {
            self.said_no_counters = true;
            say_once(
                "numa-amp: no hardware counters in the samples (instructions, cycles, LLC misses): no speed-up or contention factors; falling back to capacity- and load-aware placement".into(),
            );
        }
        let mut moves: Vec<(TaskId, UnitId)> = Vec::new();
        let mut moved: Vec<TaskId> = Vec::new();
        let (slow, fast) = self.runners(view);
        self.numa_list(view);
        self.keep_lists(view, &slow, &fast);
        // Eager trigger: idle biggest CPUs take the small cores' best tasks.
        let mut slow_iter = slow.iter().copied().peekable();
        for v in view.units_of(UnitType::Cpu) {
            if v.capacity < cpu_capacities(view).1 || !idle(view, v.id) {
                continue;
            }
            let Some((_, t, _)) = slow_iter.next() else {
                break;
            };
            moves.push((t, v.id));
            moved.push(t);
            self.triggers.eager += 1;
        }
        let slow: Vec<_> = slow_iter.collect();
        // Lazy trigger: pairs across the AMP-list, with hysteresis.
        for (&(sf_s, s, us), &(sf_f, f, uf)) in slow.iter().zip(fast.iter()) {
            if sf_s <= sf_f * (1.0 + self.hysteresis) {
                break;
            }
            moves.extend([(s, uf), (f, us)]);
            moved.extend([s, f]);
            self.triggers.lazy += 1;
        }
        // NUMA-list: a task away from its node swaps with one of the same capacity there
        // whose own node is elsewhere.
        let cpus: Vec<(UnitId, u32, Option<u32>, TaskId)> = view
            .units_of(UnitType::Cpu)
            .filter_map(|u| Some((u.id, u.capacity, u.numa_node, view.running(u.id)?.task)))
            .collect();
        for &(ua, cap, node_a, a) in &cpus {
            let want = self.node_of(view, a);
            if want.is_none() || want == node_a || moved.contains(&a) {
                continue;
            }
            let partner = cpus.iter().find(|&&(_, c, node_b, b)| {
                c == cap && node_b == want && !moved.contains(&b) && self.node_of(view, b) != want
            });
            if let Some(&(ub, _, _, b)) = partner {
                moves.extend([(a, ub), (b, ua)]);
                moved.extend([a, b]);
                self.triggers.numa += 1;
            }
        }
        for (t, to) in moves {
            self.state(view, t).target = Some(to);
        }
        Vec::new()
    }

    fn migrate_memory(&mut self, view: &View, task: TaskId, unit: UnitId) -> bool {
        let node = view.unit(unit).numa_node;
        let limit = self.page_moves;
        let s = self.state(view, task);
        let worth = !s.profile.known() || s.profile.mpki >= TURTLE_MPKI;
        let there = s.node.is_none() || s.node == node;
        if s.moves >= limit || !worth || !there || node.is_none() {
            return false;
        }
        s.moves += 1;
        self.triggers.page_moves += 1;
        true
    }
}
