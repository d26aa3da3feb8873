//! Counters the workers keep so the rebalancer can see fetch costs and core load.
//!
//! Each counter has a single writer (the worker that owns the row), so updates are a
//! relaxed load and store, not a locked read-modify-write; readers sum over workers.
//! Times are kept in raw clock ticks (cheap to read) and converted when a snapshot is
//! taken (see `clock.rs`).

use crate::clock::Clock;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};

/// Per worker, per object: operations run here while unassigned / while assigned here.
#[derive(Default)]
struct ObjectCounters {
    local_ops: AtomicU64,
    local_ticks: AtomicU64,
    owned_ops: AtomicU64,
    owned_ticks: AtomicU64,
}

/// Objects' counters in groups that fill whole line pairs (the prefetcher's unit), so
/// two workers' rows never share a line.
#[derive(Default)]
#[repr(align(128))]
struct ObjectGroup([ObjectCounters; OBJECTS_PER_GROUP]);

const OBJECTS_PER_GROUP: usize = 4;

/// Per worker: time spent running operations, and delegation figures.
#[derive(Default)]
struct CoreCounters {
    busy_ticks: AtomicU64,
    ops: AtomicU64,
    served: AtomicU64,
    served_ticks: AtomicU64,
    delegated: AtomicU64,
    round_trip_ticks: AtomicU64,
}

fn bump(c: &AtomicU64, v: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
}

/// All counters of one run.
pub(crate) struct Counters {
    objects: usize,
    /// `groups` per worker, worker after worker.
    groups: usize,
    per_object: Vec<ObjectGroup>,
    per_core: Vec<CachePadded<CoreCounters>>,
}

impl Counters {
    pub(crate) fn new(cores: usize, objects: usize) -> Self {
        let groups = objects.div_ceil(OBJECTS_PER_GROUP);
        Counters {
            objects,
            groups,
            per_object: (0..cores * groups).map(|_| Default::default()).collect(),
            per_core: (0..cores).map(|_| Default::default()).collect(),
        }
    }

    fn object(&self, core: usize, object: usize) -> &ObjectCounters {
        let g = &self.per_object[core * self.groups + object / OBJECTS_PER_GROUP];
        &g.0[object % OBJECTS_PER_GROUP]
    }

    /// Records one operation worker `core` ran on `object` for itself; `owned` if
    /// assigned there.
    pub(crate) fn record_op(&self, core: usize, object: u32, owned: bool, ticks: u64) {
        let o = self.object(core, object as usize);
        if owned {
            bump(&o.owned_ops, 1);
            bump(&o.owned_ticks, ticks);
        } else {
            bump(&o.local_ops, 1);
            bump(&o.local_ticks, ticks);
        }
        let c = &self.per_core[core];
        bump(&c.busy_ticks, ticks);
        bump(&c.ops, 1);
    }

    /// Records one operation worker `core` ran for another core (as `object`'s owner
    /// if `owned`).
    pub(crate) fn record_served(&self, core: usize, object: u32, owned: bool, ticks: u64) {
        self.record_op(core, object, owned, ticks);
        let c = &self.per_core[core];
        bump(&c.served, 1);
        bump(&c.served_ticks, ticks);
    }

    /// Records one delegation worker `core` made, `ticks` from post to answer.
    pub(crate) fn record_delegation(&self, core: usize, ticks: u64) {
        let c = &self.per_core[core];
        bump(&c.delegated, 1);
        bump(&c.round_trip_ticks, ticks);
    }

    /// Sums over workers (relaxed reads: figures may lag by a few operations).
    pub(crate) fn snapshot(&self, clock: &Clock) -> Snapshot {
        let ns_per_tick = clock.ns_per_tick();
        let ns = |c: &AtomicU64| (c.load(Ordering::Relaxed) as f64 * ns_per_tick) as u64;
        let cores = self.per_core.len();
        let mut objects = vec![ObjectStat::default(); self.objects];
        for core in 0..cores {
            for (i, s) in objects.iter_mut().enumerate() {
                let o = self.object(core, i);
                s.local_ops += o.local_ops.load(Ordering::Relaxed);
                s.local_ns += ns(&o.local_ticks);
                s.owned_ops += o.owned_ops.load(Ordering::Relaxed);
                s.owned_ns += ns(&o.owned_ticks);
            }
        }
        let cores = self
            .per_core
            .iter()
            .map(|c| CoreStat {
                busy_ns: ns(&c.busy_ticks),
                ops: c.ops.load(Ordering::Relaxed),
                served: c.served.load(Ordering::Relaxed),
                served_ns: ns(&c.served_ticks),
                delegated: c.delegated.load(Ordering::Relaxed),
                round_trip_ns: ns(&c.round_trip_ticks),
            })
            .collect();
        Snapshot {
            wall_ns: clock.elapsed_ns(),
            objects,
            cores,
        }
    }
}

/// One object's operation counts and times, summed over cores.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ObjectStat {
    /// Operations run where the caller was, while the object was unassigned.
    pub local_ops: u64,
    pub local_ns: u64,
    /// Operations run on the object's owner core.
    pub owned_ops: u64,
    pub owned_ns: u64,
}

/// One core's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CoreStat {
    /// Time spent inside operations (its own and served ones).
    pub busy_ns: u64,
    pub ops: u64,
    /// Operations it ran for other cores.
    pub served: u64,
    /// Time of the operations it ran for other cores (part of `busy_ns`).
    pub served_ns: u64,
    /// Operations it sent to other cores.
    pub delegated: u64,
    /// Their round trips (post to answer, operation included), summed.
    pub round_trip_ns: u64,
}

/// Counters at one instant (cumulative since the run started).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub wall_ns: u64,
    pub objects: Vec<ObjectStat>,
    pub cores: Vec<CoreStat>,
}

impl Snapshot {
    /// The counts between `earlier` and `self`.
    pub fn since(&self, earlier: &Snapshot) -> Snapshot {
        if earlier.objects.len() != self.objects.len() || earlier.cores.len() != self.cores.len() {
            return self.clone();
        }
        let objects = self
            .objects
            .iter()
            .zip(&earlier.objects)
            .map(|(a, b)| ObjectStat {
                local_ops: a.local_ops.saturating_sub(b.local_ops),
                local_ns: a.local_ns.saturating_sub(b.local_ns),
                owned_ops: a.owned_ops.saturating_sub(b.owned_ops),
                owned_ns: a.owned_ns.saturating_sub(b.owned_ns),
            })
            .collect();
        let cores = self
            .cores
            .iter()
            .zip(&earlier.cores)
            .map(|(a, b)| CoreStat {
                busy_ns: a.busy_ns.saturating_sub(b.busy_ns),
                ops: a.ops.saturating_sub(b.ops),
                served: a.served.saturating_sub(b.served),
                served_ns: a.served_ns.saturating_sub(b.served_ns),
                delegated: a.delegated.saturating_sub(b.delegated),
                round_trip_ns: a.round_trip_ns.saturating_sub(b.round_trip_ns),
            })
            .collect();
        Snapshot {
            wall_ns: self.wall_ns.saturating_sub(earlier.wall_ns),
            objects,
            cores,
        }
    }

    /// Mean delegation overhead (round trip minus operation), if any delegation ran.
    /// Owners time the operations they serve and callers the round trips, so the
    /// overhead is the difference of the sums: every served operation was some
    /// delegation's (up to the few in flight when the snapshot was taken).
    pub fn migration_ns(&self) -> Option<f64> {
        let n: u64 = self.cores.iter().map(|c| c.delegated).sum();
        let round_trips: u64 = self.cores.iter().map(|c| c.round_trip_ns).sum();
        let ops: u64 = self.cores.iter().map(|c| c.served_ns).sum();
        (n > 0).then(|| round_trips.saturating_sub(ops) as f64 / n as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migration_is_round_trips_minus_the_operations_served() {
        let core = |served_ns, delegated, round_trip_ns| CoreStat {
            served_ns,
            delegated,
            round_trip_ns,
            ..CoreStat::default()
        };
        // Core 0 sent 4 operations (4000 ns in all) that core 1 ran in 1000 ns; core 1
        // sent 1 (900 ns) that core 0 ran in 100 ns: (4900 - 1100) / 5.
        let s = Snapshot {
            wall_ns: 1,
            objects: vec![],
            cores: vec![core(100, 4, 4000), core(1000, 1, 900)],
        };
        assert_eq!(s.migration_ns(), Some(760.0));
        assert_eq!(Snapshot::default().migration_ns(), None);
    }

    #[test]
    fn workers_rows_of_object_counters_do_not_share_lines() {
        let c = Counters::new(2, 5);
        let end0 = c.object(0, 4) as *const _ as usize + std::mem::size_of::<ObjectCounters>();
        let start1 = c.object(1, 0) as *const _ as usize;
        assert!(
            end0 <= start1 && start1.is_multiple_of(128),
            "{end0:#x} {start1:#x}"
        );
    }
}
