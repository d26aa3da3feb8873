//! Counters the workers keep so the rebalancer can see fetch costs and core load.
//!
//! Each counter has a single writer (the worker that owns the row), so updates are a
//! relaxed load and store, not a locked read-modify-write; readers sum over workers.

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};

/// Per worker, per object: operations run here while unassigned / while assigned here.
#[derive(Default)]
pub(crate) struct ObjectCounters {
    local_ops: AtomicU64,
    local_ns: AtomicU64,
    owned_ops: AtomicU64,
    owned_ns: AtomicU64,
}

/// Per worker: time spent running operations, and delegation figures as a caller.
#[derive(Default)]
pub(crate) struct CoreCounters {
    busy_ns: AtomicU64,
    ops: AtomicU64,
    served: AtomicU64,
    delegated: AtomicU64,
    /// Round trip minus the operation's own time, summed over delegations.
    migration_ns: AtomicU64,
}

fn bump(c: &AtomicU64, v: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
}

/// All counters of one run.
pub(crate) struct Counters {
    objects: usize,
    per_object: Vec<ObjectCounters>,
    per_core: Vec<CachePadded<CoreCounters>>,
}

impl Counters {
    pub(crate) fn new(cores: usize, objects: usize) -> Self {
        Counters {
            objects,
            per_object: (0..cores * objects).map(|_| Default::default()).collect(),
            per_core: (0..cores).map(|_| Default::default()).collect(),
        }
    }

    /// Records one operation worker `core` ran on `object`; `owned` if assigned there.
    pub(crate) fn record_op(&self, core: usize, object: u32, owned: bool, ns: u64, served: bool) {
        let o = &self.per_object[core * self.objects + object as usize];
        if owned {
            bump(&o.owned_ops, 1);
            bump(&o.owned_ns, ns);
        } else {
            bump(&o.local_ops, 1);
            bump(&o.local_ns, ns);
        }
        let c = &self.per_core[core];
        bump(&c.busy_ns, ns);
        bump(&c.ops, 1);
        if served {
            bump(&c.served, 1);
        }
    }

    pub(crate) fn record_delegation(&self, core: usize, overhead_ns: u64) {
        let c = &self.per_core[core];
        bump(&c.delegated, 1);
        bump(&c.migration_ns, overhead_ns);
    }

    /// Sums over workers (relaxed reads: figures may lag by a few operations).
    pub(crate) fn snapshot(&self, wall_ns: u64) -> Snapshot {
        let cores = self.per_core.len();
        let mut objects = vec![ObjectStat::default(); self.objects];
        for core in 0..cores {
            for (i, s) in objects.iter_mut().enumerate() {
                let o = &self.per_object[core * self.objects + i];
                s.local_ops += o.local_ops.load(Ordering::Relaxed);
                s.local_ns += o.local_ns.load(Ordering::Relaxed);
                s.owned_ops += o.owned_ops.load(Ordering::Relaxed);
                s.owned_ns += o.owned_ns.load(Ordering::Relaxed);
            }
        }
        let cores = self
            .per_core
            .iter()
            .map(|c| CoreStat {
                busy_ns: c.busy_ns.load(Ordering::Relaxed),
                ops: c.ops.load(Ordering::Relaxed),
                served: c.served.load(Ordering::Relaxed),
                delegated: c.delegated.load(Ordering::Relaxed),
                migration_ns: c.migration_ns.load(Ordering::Relaxed),
            })
            .collect();
        Snapshot {
            wall_ns,
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
    /// Operations it sent to other cores.
    pub delegated: u64,
    /// Delegation round-trip time minus the operations' own time, summed.
    pub migration_ns: u64,
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
                delegated: a.delegated.saturating_sub(b.delegated),
                migration_ns: a.migration_ns.saturating_sub(b.migration_ns),
            })
            .collect();
        Snapshot {
            wall_ns: self.wall_ns.saturating_sub(earlier.wall_ns),
            objects,
            cores,
        }
    }

    /// Mean delegation overhead (round trip minus operation), if any delegation ran.
    pub fn migration_ns(&self) -> Option<f64> {
        let n: u64 = self.cores.iter().map(|c| c.delegated).sum();
        let ns: u64 = self.cores.iter().map(|c| c.migration_ns).sum();
        (n > 0).then(|| ns as f64 / n as f64)
    }
}
