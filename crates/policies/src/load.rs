//! Per-unit task counts (queued + running) with the least-loaded unit of each type in
//! O(log n): what count-based policies (cfs, ws) place by.

use hetsched_core::machine::UnitType;
use hetsched_core::policy::{UnitId, View};
use hetsched_core::task::Affinity;
use std::collections::BTreeSet;

pub struct LoadIndex {
    load: Vec<u32>,
    kinds: Vec<UnitType>,
    by_kind: [BTreeSet<(u32, UnitId)>; 4],
}

impl LoadIndex {
    pub fn new(view: &View) -> LoadIndex {
        let mut by_kind: [BTreeSet<(u32, UnitId)>; 4] = Default::default();
        for u in view.units() {
            by_kind[u.kind as usize].insert((0, u.id));
        }
        LoadIndex {
            load: vec![0; view.units().len()],
            kinds: view.units().iter().map(|u| u.kind).collect(),
            by_kind,
        }
    }

    /// Takes in units added since (live, units can be added; ids never change).
    pub fn cover(&mut self, view: &View) {
        for u in &view.units()[self.load.len().min(view.units().len())..] {
            self.load.push(0);
            self.kinds.push(u.kind);
            self.by_kind[u.kind as usize].insert((0, u.id));
        }
    }

    pub fn load(&self, u: UnitId) -> u32 {
        self.load[u as usize]
    }

    pub fn add(&mut self, u: UnitId, delta: i32) {
        let set = &mut self.by_kind[self.kinds[u as usize] as usize];
        let old = self.load[u as usize];
        set.remove(&(old, u));
        let new = (old as i64 + delta as i64).max(0) as u32;
        self.load[u as usize] = new;
        set.insert((new, u));
    }

    /// The least-loaded unit of a type the task can run on (ties: lowest id).
    pub fn least(&self, affinity: &Affinity) -> Option<UnitId> {
        UnitType::ALL
            .into_iter()
            .filter(|&k| affinity.runs_on(k))
            .filter_map(|k| self.by_kind[k as usize].first().copied())
            .min()
            .map(|(_, u)| u)
    }

    /// The most-loaded unit of a type (ties: lowest id).
    pub fn most(&self, kind: UnitType) -> Option<(u32, UnitId)> {
        let set = &self.by_kind[kind as usize];
        let top = set.last()?.0;
        set.range((top, 0)..).next().copied()
    }

    pub fn least_of(&self, kind: UnitType) -> Option<(u32, UnitId)> {
        self.by_kind[kind as usize].first().copied()
    }
}
