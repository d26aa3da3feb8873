//! Runtime monitoring: which objects are expensive to fetch, where they should live.
//!
//! There is no PMU on the machines we run on, so the fetch cost of an object is
//! measured from operation *time*, not cache-miss counters: an operation run where the
//! caller is (object not assigned, so fetched into that core's cache) against the same
//! operation run on the owner core (object resident in its cache). The difference is
//! the fetch cost per operation; an object is worth assigning when it exceeds the
//! measured migration (delegation) overhead. Objects without an owner-side time yet
//! are compared against the best per-byte in-cache time seen, or placed on trial and
//! judged in the next period. Each period also moves load from the busiest core to the
//! idlest one, and objects from a core whose owned operations run far slower than the
//! best in-cache time (it "misses often") to the core that misses least: CORETIME's
//! "rarely idle or often loading from DRAM → idle and hitting" rule.

use crate::capacity::CacheCapacity;
use crate::packing::{load_cap, pack, Bin, Item};
use crate::stats::Snapshot;

/// Which source fetch costs come from. Only `OperationTime` exists on PMU-less machines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostSource {
    /// Operation time away from vs on the owner core (no hardware counters).
    OperationTime,
}

impl std::fmt::Display for CostSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("operation time vs in-cache time (no PMU: cache-miss counters unavailable)")
    }
}

/// Tunables of the monitoring policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// Operations needed in a period before a mean time is trusted.
    pub min_ops: u64,
    /// Load above the fair share a core may take in packing.
    pub slack: f64,
    /// Busy-fraction gap between the busiest and idlest core that triggers moving load.
    pub idle_gap: f64,
    /// Periods an object judged cheap waits before it is tried again.
    pub retry_periods: u64,
    /// Migration cost assumed before any delegation was measured (ns).
    pub initial_migration_ns: f64,
    /// A core "misses often" when its owned operations take this many times longer,
    /// relative to the best in-cache time seen, than those of the core that misses least.
    pub miss_ratio: f64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            min_ops: 8,
            slack: crate::sim::LOAD_SLACK,
            idle_gap: 0.15,
            retry_periods: 20,
            // CORETIME's 2000 cycles at 2 GHz.
            initial_migration_ns: crate::sim::MIGRATION_CYCLES / crate::sim::GHZ,
            miss_ratio: 1.5,
        }
    }
}

/// What one monitoring period decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Step {
    /// New owners (None = unassigned).
    pub moves: Vec<(u32, Option<usize>)>,
    pub assigned: usize,
    pub unassigned_as_cheap: usize,
    pub moved_for_load: usize,
    pub moved_for_misses: usize,
    pub migration_ns: f64,
}

/// Monitoring state carried between periods.
#[derive(Clone, Debug)]
pub struct Rebalancer {
    policy: Policy,
    t_local: Vec<Option<f64>>,
    t_owner: Vec<Option<f64>>,
    cheap_until: Vec<u64>,
    epoch: u64,
    last: Snapshot,
    migration_ns: f64,
}

fn ewma(old: Option<f64>, new: f64) -> f64 {
    old.map_or(new, |o| 0.5 * o + 0.5 * new)
}

impl Rebalancer {
    /// A monitor for `objects` objects with no history.
    pub fn new(policy: Policy, objects: usize) -> Self {
        Rebalancer {
            migration_ns: policy.initial_migration_ns,
            policy,
            t_local: vec![None; objects],
            t_owner: vec![None; objects],
            cheap_until: vec![0; objects],
            epoch: 0,
            last: Snapshot::default(),
        }
    }

    /// Where fetch costs come from.
    pub fn cost_source(&self) -> CostSource {
        CostSource::OperationTime
    }

    /// Mean operation time of `object` away from / on its owner, as estimated so far.
    pub fn times(&self, object: u32) -> (Option<f64>, Option<f64>) {
        (self.t_local[object as usize], self.t_owner[object as usize])
    }

    /// Forgets the counters of a finished run (a new run restarts them at zero).
    pub fn new_run(&mut self) {
        self.last = Snapshot::default();
    }

    /// One period: `now` are the run's cumulative counters, `owners` the table,
    /// `bytes` the objects' sizes.
    // Several per-object arrays are walked in step; an index reads clearer than zips.
    #[allow(clippy::needless_range_loop)]
    pub fn step(
        &mut self,
        now: &Snapshot,
        owners: &[Option<usize>],
        bytes: &[u64],
        capacity: &CacheCapacity,
    ) -> Step {
        let d = now.since(&self.last);
        self.last = now.clone();
        self.epoch += 1;
        let n = owners.len().min(self.t_local.len());
        if let Some(m) = d.migration_ns() {
            self.migration_ns = ewma(Some(self.migration_ns), m);
        }
        let wall = d.wall_ns.max(1) as f64;
        let mut load = vec![0.0; n];
        for (o, s) in d.objects.iter().enumerate().take(n) {
            if s.local_ops >= self.policy.min_ops {
                self.t_local[o] = Some(ewma(
                    self.t_local[o],
                    s.local_ns as f64 / s.local_ops as f64,
                ));
            }
            if s.owned_ops >= self.policy.min_ops {
                self.t_owner[o] = Some(ewma(
                    self.t_owner[o],
                    s.owned_ns as f64 / s.owned_ops as f64,
                ));
            }
            load[o] = (s.local_ns + s.owned_ns) as f64 / wall;
        }
        let mut owner: Vec<Option<usize>> = owners[..n].to_vec();
        let mut step = Step {
            migration_ns: self.migration_ns,
            ..Step::default()
        };

        // 1. Objects whose fetch cost turned out below the migration cost go back.
        for o in 0..n {
            if let (Some(_), Some(tl), Some(to)) = (owner[o], self.t_local[o], self.t_owner[o]) {
                if tl - to < self.migration_ns {
                    owner[o] = None;
                    self.cheap_until[o] = self.epoch + self.policy.retry_periods;
                    step.unassigned_as_cheap += 1;
                }
            }
        }

        let cores = capacity.cores();
        let mut bins: Vec<Bin> = (0..cores)
            .map(|c| Bin {
                free_bytes: capacity.per_core(c),
                load: 0.0,
            })
            .collect();
        for o in 0..n {
            if let Some(c) = owner[o].filter(|&c| c < cores) {
                bins[c].free_bytes = bins[c].free_bytes.saturating_sub(bytes[o]);
                bins[c].load += load[o];
            }
        }

        // 2. Load: move objects from the busiest core to the idlest until they meet.
        let busy: Vec<f64> = d.cores.iter().map(|c| c.busy_ns as f64 / wall).collect();
        if busy.len() == cores && cores > 1 {
            let hot = (0..cores)
                .max_by(|&a, &b| busy[a].total_cmp(&busy[b]))
                .unwrap_or(0);
            let cold = (0..cores)
                .min_by(|&a, &b| busy[a].total_cmp(&busy[b]))
                .unwrap_or(0);
            let gap = busy[hot] - busy[cold];
            if gap > self.policy.idle_gap {
                let mut mine: Vec<usize> = (0..n).filter(|&o| owner[o] == Some(hot)).collect();
                mine.sort_by(|&a, &b| load[b].total_cmp(&load[a]).then(a.cmp(&b)));
                let mut moved = 0.0;
                for o in mine {
                    if moved + load[o] > gap / 2.0 || bins[cold].free_bytes < bytes[o] {
                        continue;
                    }
                    moved += load[o];
                    owner[o] = Some(cold);
                    bins[hot].free_bytes += bytes[o];
                    bins[hot].load -= load[o];
                    bins[cold].free_bytes -= bytes[o];
                    bins[cold].load += load[o];
                    step.moved_for_load += 1;
                }
            }
        }

        // The best in-cache time per byte seen on any owner: what a hit costs.
        let per_byte_ref = (0..n)
            .filter_map(|o| self.t_owner[o].map(|t| t / bytes[o].max(1) as f64))
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.min(v))));

        // 2b. Misses: a core whose owned operations run far slower than that (its
        // cache is overfull or thrashed) hands a quarter of its objects to the core
        // that misses least and is no busier.
        if let (Some(r), true) = (per_byte_ref, step.moved_for_load == 0 && cores > 1) {
            let (mut slow, mut ideal) = (vec![0.0; cores], vec![0.0; cores]);
            for (o, s) in d.objects.iter().enumerate().take(n) {
                if let Some(c) = owners[o].filter(|&c| c < cores) {
                    slow[c] += s.owned_ns as f64;
                    ideal[c] += s.owned_ops as f64 * r * bytes[o] as f64;
                }
            }
            let miss: Vec<f64> = (0..cores)
                .map(|c| {
                    if ideal[c] > 0.0 {
                        slow[c] / ideal[c]
                    } else {
                        1.0
                    }
                })
                .collect();
            let worst = (0..cores)
                .max_by(|&a, &b| miss[a].total_cmp(&miss[b]))
                .unwrap_or(0);
            let target = (0..cores)
                .filter(|&c| c != worst && busy.get(c) <= busy.get(worst))
                .min_by(|&a, &b| miss[a].total_cmp(&miss[b]));
            if let Some(best) = target.filter(|&b| miss[worst] > self.policy.miss_ratio * miss[b]) {
                let mine: Vec<usize> = (0..n).filter(|&o| owner[o] == Some(worst)).collect();
                for &o in mine.iter().take(mine.len().div_ceil(4)) {
                    if bins[best].free_bytes < bytes[o] {
                        break;
                    }
                    owner[o] = Some(best);
                    bins[worst].free_bytes += bytes[o];
                    bins[worst].load -= load[o];
                    bins[best].free_bytes -= bytes[o];
                    bins[best].load += load[o];
                    step.moved_for_misses += 1;
                }
            }
        }

        // 3. Pack expensive unassigned objects into the room that is left.
        let mut items = Vec::new();
        for o in 0..n {
            if owner[o].is_some() || self.epoch < self.cheap_until[o] {
                continue;
            }
            let Some(tl) = self.t_local[o] else { continue };
            let in_cache = self.t_owner[o].or(per_byte_ref.map(|r| r * bytes[o] as f64));
            let fetch = in_cache.map_or(tl, |t| tl - t);
            if in_cache.is_some() && fetch < self.migration_ns {
                continue;
            }
            let ops_per_s = load[o] / tl.max(1.0) * 1e9;
            items.push(Item {
                object: o as u32,
                bytes: bytes[o],
                load: load[o],
                benefit: fetch * ops_per_s,
            });
        }
        let total_load: f64 = load.iter().sum();
        let cap = load_cap(total_load, cores, self.policy.slack, &items);
        for (o, c) in pack(&items, &mut bins, cap) {
            owner[o as usize] = Some(c);
            step.assigned += 1;
        }

        step.moves = (0..n)
            .filter(|&o| owner[o] != owners[o])
            .map(|o| (o as u32, owner[o]))
            .collect();
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{CoreStat, ObjectStat};

    fn snap(wall: u64, objects: Vec<ObjectStat>, busy: &[u64]) -> Snapshot {
        Snapshot {
            wall_ns: wall,
            objects,
            cores: busy
                .iter()
                .map(|&b| CoreStat {
                    busy_ns: b,
                    ..CoreStat::default()
                })
                .collect(),
        }
    }

    fn local(ops: u64, ns_each: u64) -> ObjectStat {
        ObjectStat {
            local_ops: ops,
            local_ns: ops * ns_each,
            ..ObjectStat::default()
        }
    }

    #[test]
    fn trial_then_keep_expensive_and_return_cheap() {
        let cap = CacheCapacity::uniform(2, 1000, 0);
        let mut r = Rebalancer::new(Policy::default(), 2);
        // Period 1: both objects run locally at 5 µs per operation.
        let s1 = snap(
            1_000_000,
            vec![local(100, 5000), local(100, 5000)],
            &[500_000, 500_000],
        );
        let step = r.step(&s1, &[None, None], &[100, 100], &cap);
        assert_eq!(step.assigned, 2);
        let owners: Vec<Option<usize>> = {
            let mut o = vec![None; 2];
            for (obj, c) in &step.moves {
                o[*obj as usize] = *c;
            }
            o
        };
        assert!(owners.iter().all(Option::is_some));
        // Period 2: object 0 runs in 1 µs on its owner (saves 4 µs > 1 µs migration),
        // object 1 in 4.5 µs (saves 0.5 µs: not worth a migration).
        let mut objs = s1.objects.clone();
        objs[0].owned_ops = 100;
        objs[0].owned_ns = 100 * 1000;
        objs[1].owned_ops = 100;
        objs[1].owned_ns = 100 * 4500;
        let s2 = snap(2_000_000, objs, &[550_000, 950_000]);
        let step = r.step(&s2, &owners, &[100, 100], &cap);
        assert_eq!(step.unassigned_as_cheap, 1);
        assert_eq!(step.moves, vec![(1, None)]);
    }

    #[test]
    fn moves_objects_off_a_core_that_misses() {
        let cap = CacheCapacity::uniform(2, 1000, 0);
        let mut r = Rebalancer::new(Policy::default(), 4);
        let owned = |ops: u64, ns: u64| ObjectStat {
            owned_ops: ops,
            owned_ns: ops * ns,
            ..ObjectStat::default()
        };
        // Core 0's objects run in 1 µs (hits), core 1's in 4 µs; both equally busy.
        let objs = vec![
            owned(100, 1000),
            owned(100, 1000),
            owned(100, 4000),
            owned(100, 4000),
        ];
        let s = snap(1_000_000, objs, &[500_000, 500_000]);
        let owners = [Some(0), Some(0), Some(1), Some(1)];
        let step = r.step(&s, &owners, &[100; 4], &cap);
        assert_eq!(step.moved_for_load, 0);
        assert_eq!(step.moved_for_misses, 1);
        assert_eq!(step.moves, vec![(2, Some(0))]);
        // Equal times on both cores: nothing moves.
        let mut r = Rebalancer::new(Policy::default(), 4);
        let objs = vec![owned(100, 2000); 4];
        let step = r.step(
            &snap(1_000_000, objs, &[500_000, 500_000]),
            &owners,
            &[100; 4],
            &cap,
        );
        assert_eq!(step.moves, vec![]);
    }

    #[test]
    fn moves_load_from_the_busy_core_to_the_idle_one() {
        let cap = CacheCapacity::uniform(2, 1000, 0);
        let mut r = Rebalancer::new(Policy::default(), 4);
        let owned = |ops: u64| ObjectStat {
            owned_ops: ops,
            owned_ns: ops * 1000,
            ..ObjectStat::default()
        };
        // All four objects on core 0, which is 100% busy; core 1 is idle.
        let s = snap(
            1_000_000,
            (0..4).map(|_| owned(250)).collect(),
            &[1_000_000, 0],
        );
        let step = r.step(&s, &[Some(0); 4], &[10; 4], &cap);
        assert_eq!(step.moved_for_load, 2);
        assert_eq!(step.moves.len(), 2);
        assert!(step.moves.iter().all(|&(_, c)| c == Some(1)));
    }
}
