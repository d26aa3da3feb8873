//! `signature`: Shelepov & Fedorova's signature-supported scheduling (§4 of
//! "Scheduling on Heterogeneous Multicore Processors Using Architectural Signatures",
//! WIOSCA 2008). Its baseline there is Linux 2.6.18's O(1) scheduler, which `cfs` with a
//! 100 ms slice stands in for (`crates/studies/shelepov`).
//!
//! The paper's prototype binds each program statically to a *set* of cores (with
//! `taskset`) under four invariants, and lets the default scheduler share the cores of a
//! set: a) all cores carry equal load; b) a moderately sensitive program never runs on
//! a slower core than an insensitive one; c) nor on a faster core than a highly
//! sensitive one; d) each program is bound to as many cores as a–c allow.
//!
//! Why a set per class, and how it is computed: the invariants only relate classes, so
//! every program of one class gets the same set. The CPU units are ordered fastest
//! first (capacity, then id), each holding `n / m` of the `n` programs (a); the programs
//! are ordered by class (highly sensitive, moderately sensitive, insensitive) and laid
//! on those slots in that order; a class's set is every unit whose share of the slots
//! overlaps the class's range, widened to every unit of the same capacity (an equally
//! fast core breaks neither b nor c, so d takes it). Units shared by two classes are the
//! boundaries where b and c hold with equality. The binding is recomputed when a task
//! arrives or leaves.
//!
//! Expressed in the engines' contract (one queue per task, stealing): a task is queued
//! on the least-loaded unit of its set (ties: the fastest, then the lowest id); an idle
//! unit runs its own queue, else steals the oldest task of the longest queue whose set
//! holds it; the running task yields its CPU to a waiter every `slice_ms` (the
//! default scheduler's time sharing); every `balance_ms` a task waiting or running
//! outside its set moves into it, and waiting tasks move to a unit of their set with at
//! least two tasks fewer (a). Live, the unit a task is granted becomes its process's CPU
//! affinity, so a program only ever runs on the cores of its set.
//!
//! The class comes from the task's signature (a `hetsched-sig` JSON document): the
//! prediction for the cache configuration nearest the last-level cache of the fastest
//! CPU unit (first by size, then by associativity, on a log scale; unknown
//! associativity: by size only; ties: the first in the signature). Each unit's own
//! LLC counts, not the machine's largest: on a machine whose core kinds differ in
//! their caches (big.LITTLE clusters) the question the class answers — does this
//! program deserve the fast cores? — is asked where it would run if it got them, so
//! the fast cores' cache decides. Elasticities are negative, so a faster core is
//! estimated faster for every program and the order of cores by capacity is the order
//! of estimated speeds for all of them: the class alone decides. A task without a
//! signature, or with one that does not parse, is placed as moderately sensitive: the
//! paper does not say how it treats unknown programs, and the middle class keeps them
//! off the extremes. Tasks without a CPU implementation are not bound (they may run on
//! every unit they can run on) and do not count in the binding.
//!
//! Parameters: `slice_ms` (100: Linux 2.6.18's default time slice, [0.1, 10^6]) and
//! `balance_ms` (10, [0.1, 10^6]).

use crate::params::{ms_to_ns, Params};
use hetsched_core::machine::{Cache, Machine, Unit, UnitType};
use hetsched_core::policy::{
    CheckpointDecision, PickDecision, Policy, Sample, SubmitDecision, TickAction, UnitId, View,
};
use hetsched_core::task::{QueueId, Task, TaskId};
use hetsched_core::Result;
use hetsched_sig::elasticity::Class;
use hetsched_sig::signature::Signature;

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "signature",
    about: "Shelepov & Fedorova (WIOSCA 2008): each clock-sensitivity class (from its signature) bound to a set of cores, fastest for the most sensitive, equal loads",
    test_specs: &["signature", "signature:slice_ms=1,balance_ms=1"],
    build: |spec, p, _| Ok(SignaturePolicy::from_params(spec, p)?.into()),
};

/// The three classes in binding order; index = rank.
pub const RANKS: usize = 3;

/// A class's rank: 0 = highly sensitive (fastest cores) … 2 = insensitive.
pub fn rank(class: Class) -> usize {
    match class {
        Class::High => 0,
        Class::Moderate => 1,
        Class::Insensitive => 2,
    }
}

/// The class a task is placed as (see the module documentation), `None` for a task
/// without a usable signature.
pub fn class_of(machine: &Machine, task: &Task) -> Option<Class> {
    let text = task.signature.as_deref()?;
    let sig = Signature::from_json(text, "signature").ok()?;
    let fastest = machine
        .units
        .iter()
        .filter(|u| u.kind == UnitType::Cpu)
        .min_by_key(|u| (std::cmp::Reverse(u.capacity), u.id))?;
    let llc = unit_llc(machine, fastest)?;
    nearest_config(llc, &sig).map(|c| sig.configs[c].class)
}

/// A CPU unit's own last-level cache: the data cache of the highest level that holds
/// the unit's first PU; when no cache lists that PU (machines without cache sharing
/// data), the machine's first cache of the highest level.
pub fn unit_llc<'m>(machine: &'m Machine, unit: &Unit) -> Option<&'m Cache> {
    let pu = unit.cpus.first().copied().or(unit.os_index);
    let highest = |own: bool| {
        (1..=4u8).rev().find_map(|level| {
            machine
                .data_caches(level)
                .find(|c| !own || pu.is_some_and(|p| c.cpus.contains(&p)))
        })
    };
    highest(true).or_else(|| highest(false))
}

/// The index of the signature's configuration nearest the cache `llc`: first by
/// |log2 size ratio|, then by |log2 ways ratio| (unknown ways: size only); ties: the
/// first listed. `None` for a signature without configurations.
pub fn nearest_config(llc: &Cache, sig: &Signature) -> Option<usize> {
    let size = llc.size_bytes.max(1) as f64;
    let ways = llc.ways.filter(|&w| w > 0).map(f64::from);
    let distance = |c: &hetsched_sig::signature::ConfigPrediction| {
        let ds = (c.size_bytes.max(1) as f64 / size).log2().abs();
        let dw = ways.map_or(0.0, |w| (f64::from(c.ways.max(1)) / w).log2().abs());
        (ds, dw)
    };
    (0..sig.configs.len()).min_by(|&a, &b| {
        distance(&sig.configs[a])
            .partial_cmp(&distance(&sig.configs[b]))
            .unwrap_or(std::cmp::Ordering::Equal)
    })
}

/// The CPU units bound to each rank, given the number of tasks of each rank: see the
/// module documentation. `cpus` are the CPU units with their capacities.
pub fn binding(cpus: &[(UnitId, u32)], counts: [u64; RANKS]) -> [Vec<UnitId>; RANKS] {
    let mut order = cpus.to_vec();
    order.sort_by_key(|&(id, cap)| (std::cmp::Reverse(cap), id));
    let n: u64 = counts.iter().sum();
    let m = order.len() as u64;
    let mut sets: [Vec<UnitId>; RANKS] = Default::default();
    let mut first = 0;
    for (r, set) in sets.iter_mut().enumerate() {
        let (a, b) = (first, first + counts[r]);
        first = b;
        if a == b {
            continue;
        }
        // Slot ranges scaled by n·m: the class holds [a·m, b·m), unit i [i·n, (i+1)·n).
        let caps: Vec<u32> = (0..m)
            .filter(|&i| a * m < (i + 1) * n && b * m > i * n)
            .map(|i| order[i as usize].1)
            .collect();
        set.extend(
            order
                .iter()
                .filter(|(_, cap)| caps.contains(cap))
                .map(|&(id, _)| id),
        );
        set.sort_unstable();
    }
    sets
}

/// The `signature` policy (see the module documentation).
pub struct SignaturePolicy {
    name: String,
    slice_ns: u64,
    balance_ns: u64,
    /// Each live task's rank by its slot ([`View::slot`]); `None`: not bound (no CPU
    /// implementation).
    ranks: Vec<Option<u8>>,
    /// Live bound tasks per rank.
    counts: [u64; RANKS],
    /// Per rank, per unit id: whether the rank's set holds the unit (CPU units only).
    sets: [Vec<bool>; RANKS],
}

impl SignaturePolicy {
    pub fn from_params(spec: &str, p: &mut Params) -> Result<SignaturePolicy> {
        let slice_ms = p.f64_in(
            "slice_ms",
            "time slice on a CPU with waiting tasks, ms",
            100.0,
            0.1..=1e6,
            false,
        )?;
        let balance_ms = p.f64_in(
            "balance_ms",
            "period of re-binding and balancing within sets, ms",
            10.0,
            0.1..=1e6,
            false,
        )?;
        Ok(SignaturePolicy {
            name: spec.to_string(),
            slice_ns: ms_to_ns(slice_ms).max(1),
            balance_ns: ms_to_ns(balance_ms).max(1),
            ranks: Vec::new(),
            counts: [0; RANKS],
            sets: Default::default(),
        })
    }

    /// Recomputes every rank's set from the current counts.
    fn rebind(&mut self, view: &View) {
        let cpus: Vec<(UnitId, u32)> = view
            .units_of(UnitType::Cpu)
            .map(|u| (u.id, u.capacity))
            .collect();
        let n = view.units().len();
        for (r, members) in binding(&cpus, self.counts).into_iter().enumerate() {
            let set = &mut self.sets[r];
            set.clear();
            set.resize(n, false);
            members.iter().for_each(|&u| set[u as usize] = true);
        }
    }

    /// Whether `task` may run on `unit`: it can, and a CPU is in its rank's set.
    fn allowed(&self, view: &View, task: TaskId, unit: UnitId) -> bool {
        if !view.can_run(task, unit) {
            return false;
        }
        if view.unit(unit).kind != UnitType::Cpu {
            return true;
        }
        match self.ranks.get(view.slot(task)).copied().flatten() {
            Some(r) => self.sets[r as usize]
                .get(unit as usize)
                .copied()
                .unwrap_or(false),
            None => true,
        }
    }

    /// The least-loaded unit `task` may run on, by `load` (ties: the fastest, then the
    /// lowest id).
    fn best_unit(
        &self,
        view: &View,
        task: TaskId,
        load: impl Fn(UnitId) -> usize,
    ) -> Option<UnitId> {
        view.units()
            .iter()
            .filter(|u| self.allowed(view, task, u.id))
            .min_by_key(|u| (load(u.id), std::cmp::Reverse(u.capacity), u.id))
            .map(|u| u.id)
    }

    fn waiter(&self, view: &View, unit: UnitId) -> Option<TaskId> {
        view.queue(unit)
            .iter()
            .find(|&t| self.allowed(view, t, unit))
    }
}

impl Policy for SignaturePolicy {
    fn name(&self) -> &str {
        &self.name
    }

    fn submit(&mut self, view: &View, task: TaskId) -> SubmitDecision {
        let slot = view.slot(task);
        if self.ranks.len() <= slot {
            self.ranks.resize(slot + 1, None);
        }
        // A live task submitted again (the daemon, when its unit went away), or the
        // stale rank of a task the engine refused after `submit`: no longer counted.
        if let Some(r) = self.ranks[slot].take() {
            self.counts[r as usize] -= 1;
        }
        let t = view.task(task);
        let rank = t
            .affinity
            .runs_on(UnitType::Cpu)
            .then(|| class_of(view.machine(), t).map_or(rank(Class::Moderate), rank) as u8);
        self.ranks[slot] = rank;
        if let Some(r) = rank {
            self.counts[r as usize] += 1;
        }
        self.rebind(view);
        match self.best_unit(view, task, |u| view.load(u)) {
            Some(u) => SubmitDecision::Enqueue(QueueId::Unit(u)),
            None => {
                if let Some(r) = self.ranks[slot].take() {
                    self.counts[r as usize] -= 1;
                }
                SubmitDecision::Reject("no unit of its set can run it".into())
            }
        }
    }

    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        if let Some(t) = self.waiter(view, unit) {
            return PickDecision::Run(t);
        }
        let oldest =
            |q: hetsched_core::policy::Queue| q.iter().find(|&t| self.allowed(view, t, unit));
        match crate::ws::steal_from_longest(view, unit, oldest) {
            Some((from, task)) => PickDecision::Steal { from, task },
            None => PickDecision::Idle,
        }
    }

    fn time_slice(&mut self, _view: &View, _unit: UnitId, _task: TaskId) -> Option<u64> {
        Some(self.slice_ns)
    }

    fn checkpoint(&mut self, view: &View, task: TaskId, unit: UnitId) -> CheckpointDecision {
        if !self.allowed(view, task, unit) {
            if let Some(to) = self.best_unit(view, task, |u| view.load(u)) {
                return CheckpointDecision::Migrate(to);
            }
        }
        if self.waiter(view, unit).is_some() {
            CheckpointDecision::Yield
        } else {
            CheckpointDecision::Continue
        }
    }

    fn complete(&mut self, view: &View, task: TaskId, _unit: UnitId) {
        if let Some(r) = self.ranks.get_mut(view.slot(task)).and_then(Option::take) {
            self.counts[r as usize] -= 1;
            self.rebind(view);
        }
    }

    fn tick_interval(&self) -> Option<u64> {
        Some(self.balance_ns)
    }

    fn wants_samples(&self) -> bool {
        false
    }

    fn tick(&mut self, view: &View, _samples: &[Sample]) -> Vec<TickAction> {
        let mut load: Vec<usize> = view.units().iter().map(|u| view.load(u.id)).collect();
        let mut moves = Vec::new();
        for u in view.units_of(UnitType::Cpu) {
            let running = view.running(u.id).map(|r| r.task);
            for t in running.into_iter().chain(view.queue(u.id).iter()) {
                let outside = !self.allowed(view, t, u.id);
                // A running task inside its set stays: balancing moves waiting tasks.
                if !outside && Some(t) == running {
                    continue;
                }
                let Some(to) = self.best_unit(view, t, |v| load[v as usize]) else {
                    continue;
                };
                if outside || load[to as usize] + 2 <= load[u.id as usize] {
                    load[u.id as usize] -= 1;
                    load[to as usize] += 1;
                    moves.push(TickAction::Migrate { task: t, to });
                }
            }
        }
        self.balance_chains(view, &mut load, &mut moves);
        moves
    }
}

impl SignaturePolicy {
    /// Invariant a across sets. Moving a waiting task straight to a unit of its set
    /// with two tasks fewer leaves loads such as 3, 2, 1 when the middle unit is the
    /// only one the first unit's tasks may go to: then one task moves along each step
    /// of the shortest chain of units from a unit to one with two tasks fewer, each
    /// step a waiting task of one unit going to a unit of its set. At most as many
    /// chains per tick as there are CPU units.
    fn balance_chains(&self, view: &View, load: &mut [usize], moves: &mut Vec<TickAction>) {
        let cpus: Vec<UnitId> = view.units_of(UnitType::Cpu).map(|u| u.id).collect();
        let mut moved: Vec<TaskId> = moves
            .iter()
            .map(|&TickAction::Migrate { task, .. }| task)
            .collect();
        for _ in 0..cpus.len() {
            let least = cpus.iter().map(|&u| load[u as usize]).min().unwrap_or(0);
            let mut starts: Vec<UnitId> = cpus
                .iter()
                .copied()
                .filter(|&u| load[u as usize] >= least + 2)
                .collect();
            starts.sort_by_key(|&u| (std::cmp::Reverse(load[u as usize]), u));
            let Some(path) = starts
                .iter()
                .find_map(|&from| self.chain(view, &cpus, load, &moved, from))
            else {
                return;
            };
            for (task, from, to) in path {
                load[from as usize] -= 1;
                load[to as usize] += 1;
                moved.push(task);
                moves.push(TickAction::Migrate { task, to });
            }
        }
    }

    /// The shortest chain from `from` to a CPU unit with two tasks fewer, as (task,
    /// from, to) steps, breadth first over units in id order.
    fn chain(
        &self,
        view: &View,
        cpus: &[UnitId],
        load: &[usize],
        moved: &[TaskId],
        from: UnitId,
    ) -> Option<Vec<(TaskId, UnitId, UnitId)>> {
        let n = view.units().len();
        let mut prev: Vec<Option<(TaskId, UnitId)>> = vec![None; n];
        let mut seen = vec![false; n];
        seen[from as usize] = true;
        let mut frontier = std::collections::VecDeque::from([from]);
        while let Some(x) = frontier.pop_front() {
            if load[x as usize] + 2 <= load[from as usize] {
                let mut path = Vec::new();
                let mut y = x;
                while let Some((t, p)) = prev[y as usize] {
                    path.push((t, p, y));
                    y = p;
                }
                return Some(path);
            }
            // One waiting task per rank stands for all of its rank (they share a set).
            let mut candidates: Vec<TaskId> = Vec::new();
            let mut ranks_seen = [false; RANKS + 1];
            for (slot, e) in view.queue(x).entries() {
                let t = e.task.id;
                let r = self.ranks[slot].map_or(RANKS, usize::from);
                if !ranks_seen[r] && !moved.contains(&t) {
                    ranks_seen[r] = true;
                    candidates.push(t);
                }
            }
            for &y in cpus {
                if seen[y as usize] {
                    continue;
                }
                if let Some(&t) = candidates.iter().find(|&&t| self.allowed(view, t, y)) {
                    seen[y as usize] = true;
                    prev[y as usize] = Some((t, x));
                    frontier.push_back(y);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(cpus: &[(UnitId, u32)], counts: [u64; 3]) -> [Vec<UnitId>; 3] {
        binding(cpus, counts)
    }

    #[test]
    fn the_papers_three_configurations_bind_as_the_invariants_say() {
        // Heterogeneous: 3, 3, 2, 2 GHz; two copies each of two high and two insensitive.
        let het = [(0, 683), (1, 683), (2, 1024), (3, 1024)];
        assert_eq!(ids(&het, [4, 0, 4]), [vec![2, 3], vec![], vec![0, 1]]);
        // Balanced: 2.0, 2.33, 2.67, 3.0 GHz; 2 high, 3 moderate, 3 insensitive.
        let bal = [(0, 683), (1, 795), (2, 910), (3, 1024)];
        assert_eq!(ids(&bal, [2, 3, 3]), [vec![3], vec![1, 2], vec![0, 1]]);
        // Uniform: 4 high, 4 moderate.
        assert_eq!(ids(&bal, [4, 4, 0]), [vec![2, 3], vec![0, 1], vec![]]);
        // One class only: every core (d).
        assert_eq!(ids(&bal, [0, 5, 0])[1], vec![0, 1, 2, 3]);
        // Equal capacities: a class's set takes the whole speed group.
        let two = [(0, 1024), (1, 1024), (2, 512)];
        assert_eq!(ids(&two, [1, 0, 2]), [vec![0, 1], vec![], vec![0, 1, 2]]);
    }

    /// A signature whose class is `high` at 2 MB, 16 ways and `insensitive` at 512 KB,
    /// 8 ways (and moderate elsewhere).
    fn two_class_signature() -> Signature {
        use hetsched_sig::signature::ConfigPrediction;
        let config = |size_kb: u64, ways: u32, class| ConfigPrediction {
            cache: format!("{size_kb}KB/{ways}"),
            size_bytes: size_kb << 10,
            ways,
            miss_rate: 0.0,
            elasticity: -0.8,
            class,
        };
        let text = r#"{"format": "hetsched-signature", "version": 1, "program": "t",
            "instructions": 1, "accesses": 1, "working_set_blocks": 1, "block_bytes": 64,
            "buckets": [], "model": "test", "configs": []}"#;
        let mut sig = Signature::from_json(text, "t").unwrap();
        sig.configs = vec![
            config(256, 8, Class::Moderate),
            config(512, 8, Class::Insensitive),
            config(2048, 16, Class::High),
            config(2048, 8, Class::Moderate),
            config(8192, 16, Class::Moderate),
        ];
        sig
    }

    #[test]
    fn each_core_kind_is_matched_with_its_own_last_level_cache() {
        // big.LITTLE: two big cores sharing a 2 MiB 16-way L2, two little ones sharing a
        // 512 KiB 8-way L2; no L3.
        let mut machine = hetsched_topology::machine_file::parse(
            r#"name = "big-little"
[[cpu_kind]]
name = "little"
capacity = 400
[[cpu_kind]]
name = "big"
capacity = 1024
[[package]]
cores = 4
kind = ["little", "little", "big", "big"]
[[cache]]
level = 2
size = "512 KiB"
ways = 8
shared_by = "machine"
cpu_kind = "little"
[[cache]]
level = 2
size = "2 MiB"
ways = 16
shared_by = "machine"
cpu_kind = "big"
"#,
            "big-little.toml",
        )
        .unwrap();
        machine.derive_units(hetsched_core::machine::UnitGranularity::Pu);
        let sig = two_class_signature();
        let at = |unit: usize| {
            let llc = unit_llc(&machine, &machine.units[unit]).unwrap();
            sig.configs[nearest_config(llc, &sig).unwrap()]
                .cache
                .clone()
        };
        assert_eq!([at(0), at(1)], ["512KB/8", "512KB/8"]);
        assert_eq!([at(2), at(3)], ["2048KB/16", "2048KB/16"]);
        // The task's class is the one at the fastest core's cache: high, though the
        // machine's little cores would call it insensitive.
        let mut task = Task::cpu(0, 0);
        task.signature = Some(sig.to_json().into());
        assert_eq!(class_of(&machine, &task), Some(Class::High));
        // No exact match: a 3 MiB 12-way cache is nearest 2 MB (log2 1.5 < log2 3.0
        // from 8 MB), then 16 ways over 8 (|log2 16/12| < |log2 8/12|).
        let odd = Cache {
            size_bytes: 3 << 20,
            ways: Some(12),
            ..machine.caches[0].clone()
        };
        assert_eq!(
            sig.configs[nearest_config(&odd, &sig).unwrap()].cache,
            "2048KB/16"
        );
    }
}
