//! Per-unit task counts (queued + running) with the least- and most-loaded unit of each
//! type: what count-based policies (cfs, ws) place and balance by.
//!
//! Each unit type keeps its units grouped by load (one bit set per load level) and its
//! lowest and highest non-empty level. Counts change by one at a time, so both levels
//! move by at most one step per change: an update is O(1), and a query is the first
//! member of one bit set (O(units / 64) words at worst). This is on the path of every
//! submit and completion, hence no ordered tree.

use hetsched_core::machine::UnitType;
use hetsched_core::policy::{UnitId, View};
use hetsched_core::task::Affinity;
use hetsched_core::unit_set::UnitSet;

pub struct LoadIndex {
    load: Vec<u32>,
    kinds: Vec<UnitType>,
    levels: [Levels; 4],
}

/// The units of one type by load.
#[derive(Default)]
struct Levels {
    /// `at[l]`: the units with load `l` (sets sized for every unit id).
    at: Vec<UnitSet>,
    /// `count[l]`: how many units have load `l`.
    count: Vec<u32>,
    /// The lowest and highest load of a unit of this type (when it has units).
    least: u32,
    most: u32,
    units: u32,
}

impl Levels {
    /// Units `0..n` of `kinds` of type `kind`, with their loads.
    fn build(kind: UnitType, kinds: &[UnitType], load: &[u32]) -> Levels {
        let mut levels = Levels::default();
        for u in (0..kinds.len() as UnitId).filter(|&u| kinds[u as usize] == kind) {
            levels.place(u, load[u as usize], kinds.len());
            levels.units += 1;
        }
        if levels.units > 0 {
            levels.least = levels.count.iter().position(|&c| c > 0).unwrap_or(0) as u32;
            levels.most = levels.count.iter().rposition(|&c| c > 0).unwrap_or(0) as u32;
        }
        levels
    }

    fn place(&mut self, u: UnitId, l: u32, n: usize) {
        while self.at.len() <= l as usize {
            self.at.push(UnitSet::empty(n));
            self.count.push(0);
        }
        self.at[l as usize].insert(u);
        self.count[l as usize] += 1;
    }

    /// Unit `u` goes from load `old` to `new`.
    fn shift(&mut self, u: UnitId, old: u32, new: u32, n: usize) {
        self.at[old as usize].remove(u);
        self.count[old as usize] -= 1;
        self.place(u, new, n);
        self.least = self.least.min(new);
        self.most = self.most.max(new);
        while self.count[self.least as usize] == 0 {
            self.least += 1;
        }
        while self.count[self.most as usize] == 0 {
            self.most -= 1;
        }
    }

    /// `l` and the lowest-id unit with load `l`.
    fn first_at(&self, l: u32) -> Option<(u32, UnitId)> {
        if self.units == 0 {
            return None;
        }
        Some((l, self.at[l as usize].first_from(0)?))
    }
}

impl LoadIndex {
    pub fn new(view: &View) -> LoadIndex {
        let mut index = LoadIndex::empty();
        index.cover(view);
        index
    }

    fn empty() -> LoadIndex {
        LoadIndex {
            load: Vec::new(),
            kinds: Vec::new(),
            levels: Default::default(),
        }
    }

    /// Takes in units added since (live, units can be added; ids never change).
    pub fn cover(&mut self, view: &View) {
        let units = view.units();
        if self.load.len() < units.len() {
            self.extend(units[self.load.len()..].iter().map(|u| u.kind));
        }
    }

    /// Adds units of these types (ids following the known ones), idle.
    fn extend(&mut self, kinds: impl Iterator<Item = UnitType>) {
        for kind in kinds {
            self.load.push(0);
            self.kinds.push(kind);
        }
        for kind in UnitType::ALL {
            self.levels[kind as usize] = Levels::build(kind, &self.kinds, &self.load);
        }
    }

    /// The type of unit `u` (a compact copy of the machine's).
    #[inline]
    pub fn kind(&self, u: UnitId) -> UnitType {
        self.kinds[u as usize]
    }

    pub fn load(&self, u: UnitId) -> u32 {
        self.load[u as usize]
    }

    pub fn add(&mut self, u: UnitId, delta: i32) {
        let old = self.load[u as usize];
        let new = (old as i64 + delta as i64).max(0) as u32;
        if new != old {
            self.load[u as usize] = new;
            let n = self.load.len();
            self.levels[self.kinds[u as usize] as usize].shift(u, old, new, n);
        }
    }

    /// The least-loaded unit of a type the task can run on (ties: lowest id).
    pub fn least(&self, affinity: &Affinity) -> Option<UnitId> {
        UnitType::ALL
            .into_iter()
            .filter(|&k| affinity.runs_on(k))
            .filter_map(|k| self.least_of(k))
            .min()
            .map(|(_, u)| u)
    }

    /// The most-loaded unit of a type (ties: lowest id).
    pub fn most(&self, kind: UnitType) -> Option<(u32, UnitId)> {
        let levels = &self.levels[kind as usize];
        levels.first_at(levels.most)
    }

    /// The least-loaded unit of a type (ties: lowest id).
    pub fn least_of(&self, kind: UnitType) -> Option<(u32, UnitId)> {
        let levels = &self.levels[kind as usize];
        levels.first_at(levels.least)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A unit's load and id.
    type Entry = Option<(u32, UnitId)>;

    /// The least- and most-loaded unit of `kind` by brute force.
    fn naive(load: &[u32], kinds: &[UnitType], kind: UnitType) -> (Entry, Entry) {
        let of_kind = || (0..load.len() as u32).filter(|&u| kinds[u as usize] == kind);
        let least = of_kind().map(|u| (load[u as usize], u)).min();
        let most = of_kind()
            .map(|u| (load[u as usize], std::cmp::Reverse(u)))
            .max()
            .map(|(l, u)| (l, u.0));
        (least, most)
    }

    #[test]
    fn least_and_most_match_brute_force_under_random_changes_and_added_units() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let pool = [UnitType::ALL[0], UnitType::ALL[1]];
        let mut kinds: Vec<UnitType> = (0..13).map(|i| pool[i % 3 / 2]).collect();
        let mut index = LoadIndex::empty();
        index.extend(kinds.iter().copied());
        let mut load = vec![0u32; kinds.len()];
        for step in 0..5000 {
            if step % 1000 == 999 {
                let added = [pool[1], pool[0], pool[1]];
                index.extend(added.iter().copied());
                kinds.extend(added);
                load.resize(kinds.len(), 0);
            }
            let u = rng.random_range(0..kinds.len() as u32);
            let delta = if rng.random_bool(0.55) { 1 } else { -1 };
            index.add(u, delta);
            load[u as usize] = (load[u as usize] as i64 + delta as i64).max(0) as u32;
            for kind in UnitType::ALL {
                let (least, most) = naive(&load, &kinds, kind);
                assert_eq!(index.least_of(kind), least, "step {step}");
                assert_eq!(index.most(kind), most, "step {step}");
            }
            assert_eq!(index.load(u), load[u as usize]);
        }
    }
}
