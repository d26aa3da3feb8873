//! Per-unit task counts (queued + running) with the least- and most-loaded unit of each
//! type: what count-based policies (cfs, ws) place and balance by.
//!
//! Each unit type keeps its units grouped by load (one bit set per load level) and its
//! lowest and highest non-empty level. Counts change by one at a time, so both levels
//! move by at most one step per change: an update is O(1). Each level also marks its
//! non-empty words in a summary, so a query (the first member of one level) reads one
//! summary word and one set word up to 4,096 units. This is on the path of every submit
//! and completion, hence no ordered tree.
//!
//! The index keeps one record per unit holding its type and load; a policy can make
//! that record its own per-unit state ([`UnitRecord`]), so that an event on a unit
//! reads one cache line for both.

use hetsched_core::machine::UnitType;
use hetsched_core::policy::{UnitId, View};
use hetsched_core::task::Affinity;

/// Per-unit records with their loads, and each type's units by load (see the module
/// documentation).
pub struct LoadIndex<R: UnitRecord = UnitLoad> {
    /// Per unit: its record (load, type and the policy's state).
    units: Vec<R>,
    levels: [Levels; 4],
    /// The types that have units, in [`UnitType::ALL`] order.
    present: Vec<UnitType>,
}

/// A unit's record in a [`LoadIndex`]: its type and load (which only the index
/// changes), and whatever else the policy keeps per unit.
pub trait UnitRecord: Clone {
    /// The record of an idle unit of type `kind`.
    fn idle(kind: UnitType) -> Self;
    fn unit(&self) -> &UnitLoad;
    fn unit_mut(&mut self) -> &mut UnitLoad;
}

/// A unit's type and load.
#[derive(Clone, Copy)]
pub struct UnitLoad {
    load: u32,
    kind: UnitType,
}

impl UnitLoad {
    pub fn idle(kind: UnitType) -> UnitLoad {
        UnitLoad { load: 0, kind }
    }
    #[inline]
    pub fn kind(&self) -> UnitType {
        self.kind
    }
    #[inline]
    pub fn load(&self) -> u32 {
        self.load
    }
}

impl UnitRecord for UnitLoad {
    fn idle(kind: UnitType) -> UnitLoad {
        UnitLoad::idle(kind)
    }
    #[inline]
    fn unit(&self) -> &UnitLoad {
        self
    }
    #[inline]
    fn unit_mut(&mut self) -> &mut UnitLoad {
        self
    }
}

/// The units of one type by load.
#[derive(Default)]
struct Levels {
    /// Words of one level's summary: a bit per word of its set, so `set words / 64`
    /// rounded up.
    summary_words: usize,
    /// Words of one level's row: its summary, then its set (sized for every unit id).
    stride: usize,
    /// Level `l`'s row is `rows[l * stride..][..stride]`. Summary bit `w % 64` of
    /// summary word `w / 64` is set when set word `w` has a member.
    rows: Vec<u64>,
    /// Number of levels (the highest load ever seen + 1).
    len: u32,
    /// The lowest and highest load of a unit of this type (when it has units).
    least: u32,
    most: u32,
    units: u32,
}

impl Levels {
    /// Units `0..n` of type `kind`, with their loads.
    fn build<R: UnitRecord>(kind: UnitType, units: &[R]) -> Levels {
        let words = units.len().div_ceil(64);
        let summary_words = words.div_ceil(64);
        let mut levels = Levels {
            summary_words,
            stride: summary_words + words,
            ..Levels::default()
        };
        for (u, rec) in units
            .iter()
            .enumerate()
            .filter(|(_, r)| r.unit().kind == kind)
        {
            while levels.len <= rec.unit().load {
                levels.grow();
            }
            levels.insert(rec.unit().load, u as UnitId);
            levels.units += 1;
        }
        if levels.units > 0 {
            let nonempty: Vec<u32> = (0..levels.len).filter(|&l| !levels.is_empty(l)).collect();
            levels.least = nonempty[0];
            levels.most = nonempty[nonempty.len() - 1];
        }
        levels
    }

    /// Adds an empty level above the highest.
    #[cold]
    fn grow(&mut self) {
        self.rows.resize(self.rows.len() + self.stride, 0);
        self.len += 1;
    }

    #[inline]
    fn is_empty(&self, l: u32) -> bool {
        let row = l as usize * self.stride;
        self.rows[row..row + self.summary_words]
            .iter()
            .all(|&s| s == 0)
    }

    #[inline]
    fn insert(&mut self, l: u32, u: UnitId) {
        let row = l as usize * self.stride;
        let w = u as usize / 64;
        self.rows[row + self.summary_words + w] |= 1 << (u % 64);
        self.rows[row + w / 64] |= 1 << (w % 64);
    }

    /// Removes `u` from level `l`; returns whether the level may have emptied (the
    /// summary word that covered `u` is now zero), so that callers check the whole
    /// level only then.
    #[inline]
    fn remove(&mut self, l: u32, u: UnitId) -> bool {
        let row = l as usize * self.stride;
        let w = u as usize / 64;
        let word = &mut self.rows[row + self.summary_words + w];
        *word &= !(1 << (u % 64));
        if *word != 0 {
            return false;
        }
        let summary = &mut self.rows[row + w / 64];
        *summary &= !(1 << (w % 64));
        *summary == 0
    }

    /// Unit `u` goes from load `old` to `old + 1`. (Inlined by force, as is `down`: a
    /// call's register saves cost a fifth of the update on every submit and completion.)
    #[inline(always)]
    fn up(&mut self, u: UnitId, old: u32) {
        let new = old + 1;
        if new == self.len {
            self.grow();
        }
        let emptied = self.remove(old, u) && self.is_empty(old);
        self.insert(new, u);
        self.most = self.most.max(new);
        // The lowest level emptied: `u` is now alone on the next one.
        if self.least == old && emptied {
            self.least = new;
        }
    }

    /// Unit `u` goes from load `old` (> 0) to `old - 1`.
    #[inline(always)]
    fn down(&mut self, u: UnitId, old: u32) {
        let new = old - 1;
        let emptied = self.remove(old, u) && self.is_empty(old);
        self.insert(new, u);
        self.least = self.least.min(new);
        if self.most == old && emptied {
            self.most = new;
        }
    }

    /// The lowest-id unit with load `l`, a non-empty level. Forced inline: left to the
    /// compiler once cfs's balance moved to `fair`, it went out of line on every
    /// placement (about 1 % of `bench sim`'s instructions under cfs).
    #[inline(always)]
    fn first(&self, l: u32) -> UnitId {
        let row = &self.rows[l as usize * self.stride..][..self.stride];
        let (summary, set) = row.split_at(self.summary_words);
        let i = summary
            .iter()
            .position(|&s| s != 0)
            .expect("a non-empty level");
        let w = i * 64 + summary[i].trailing_zeros() as usize;
        (w * 64) as UnitId + set[w].trailing_zeros()
    }

    /// `l` and the lowest-id unit with load `l`, a non-empty level (none when the type
    /// has no units).
    #[inline]
    fn first_at(&self, l: u32) -> Option<(u32, UnitId)> {
        (self.units > 0).then(|| (l, self.first(l)))
    }
}

impl<R: UnitRecord> LoadIndex<R> {
    pub fn new(view: &View) -> LoadIndex<R> {
        let mut index = LoadIndex::empty();
        index.cover(view);
        index
    }

    /// An index of no units (see [`Self::cover`]).
    pub fn empty() -> LoadIndex<R> {
        LoadIndex {
            units: Vec::new(),
            levels: Default::default(),
            present: Vec::new(),
        }
    }

    /// Takes in units added since (live, units can be added; ids never change).
    pub fn cover(&mut self, view: &View) {
        let units = view.units();
        if self.units.len() < units.len() {
            self.extend(units[self.units.len()..].iter().map(|u| u.kind));
        }
    }

    /// Adds units of these types (ids following the known ones), idle.
    fn extend(&mut self, kinds: impl Iterator<Item = UnitType>) {
        self.units.extend(kinds.map(R::idle));
        for kind in UnitType::ALL {
            self.levels[kind as usize] = Levels::build(kind, &self.units);
        }
        self.present = UnitType::ALL
            .into_iter()
            .filter(|&k| self.levels[k as usize].units > 0)
            .collect();
    }

    /// How many units the index covers.
    #[inline]
    pub fn len(&self) -> usize {
        self.units.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// Unit `u`'s record.
    #[inline]
    pub fn unit(&self, u: UnitId) -> &R {
        &self.units[u as usize]
    }

    /// Unit `u`'s record, to change the policy's part of it (not its load or type).
    #[inline]
    pub fn unit_mut(&mut self, u: UnitId) -> &mut R {
        &mut self.units[u as usize]
    }

    /// The type of unit `u` (a compact copy of the machine's).
    #[inline]
    pub fn kind(&self, u: UnitId) -> UnitType {
        self.units[u as usize].unit().kind
    }

    #[inline]
    pub fn load(&self, u: UnitId) -> u32 {
        self.units[u as usize].unit().load
    }

    /// One more task on unit `u`.
    #[inline]
    pub fn inc(&mut self, u: UnitId) {
        let rec = &mut self.units[u as usize];
        let old = rec.unit().load;
        rec.unit_mut().load = old + 1;
        self.levels[rec.unit().kind as usize].up(u, old);
    }

    /// One task less on unit `u` (none at 0).
    #[inline(always)]
    pub fn dec(&mut self, u: UnitId) {
        let rec = &mut self.units[u as usize];
        let old = rec.unit().load;
        if old > 0 {
            rec.unit_mut().load = old - 1;
            self.levels[rec.unit().kind as usize].down(u, old);
        }
    }

    /// The least-loaded unit of a type the task can run on (ties: lowest id).
    pub fn least(&self, affinity: &Affinity) -> Option<UnitId> {
        self.least_entry(affinity).map(|(_, u, _)| u)
    }

    /// One more task on the least-loaded unit of a type the task can run on (ties:
    /// lowest id), which it returns: [`Self::least`] and [`Self::inc`] in one pass.
    #[inline]
    pub fn place(&mut self, affinity: &Affinity) -> Option<UnitId> {
        let (load, u, kind) = self.least_entry(affinity)?;
        self.units[u as usize].unit_mut().load = load + 1;
        self.levels[kind as usize].up(u, load);
        Some(u)
    }

    /// The least-loaded unit of a type the task can run on: its load, id and type.
    #[inline]
    fn least_entry(&self, affinity: &Affinity) -> Option<(u32, UnitId, UnitType)> {
        let mut best: Option<(u32, UnitId, UnitType)> = None;
        for &kind in self.present.iter().filter(|&&k| affinity.runs_on(k)) {
            let levels = &self.levels[kind as usize];
            let (load, u) = (levels.least, levels.first(levels.least));
            if best.is_none_or(|b| (load, u) < (b.0, b.1)) {
                best = Some((load, u, kind));
            }
        }
        best
    }

    /// The highest load of a unit of a type (0 when it has none): cheaper than
    /// [`Self::most`] when only the load matters.
    #[inline]
    pub fn most_load(&self, kind: UnitType) -> u32 {
        self.levels[kind as usize].most
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
    use hetsched_core::task::PerUnitType;
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

    /// Starting with units below `preload` at load 1, applies `steps` random ±1 changes
    /// to units chosen by `choose` (three units added every 1,000 steps) and checks every
    /// query against brute force after each.
    fn exercise(
        mut kinds: Vec<UnitType>,
        preload: u32,
        steps: usize,
        mut choose: impl FnMut(&mut ChaCha8Rng, usize) -> u32,
    ) {
        let pool = [UnitType::ALL[0], UnitType::ALL[1]];
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut index = LoadIndex::<UnitLoad>::empty();
        index.extend(kinds.iter().copied());
        let mut load = vec![0u32; kinds.len()];
        for u in 0..preload {
            index.inc(u);
            load[u as usize] = 1;
        }
        for step in 0..steps {
            if step % 1000 == 999 {
                let added = [pool[1], pool[0], pool[1]];
                index.extend(added.iter().copied());
                kinds.extend(added);
                load.resize(kinds.len(), 0);
            }
            let u = choose(&mut rng, kinds.len());
            if rng.random_bool(0.1) {
                // A placement: on the least-loaded unit of the task's types.
                let mask = rng.random_range(1..16usize);
                let affinity = PerUnitType([0, 1, 2, 3].map(|i| (mask >> i & 1) as f64));
                let best = (0..kinds.len() as u32)
                    .filter(|&v| affinity.runs_on(kinds[v as usize]))
                    .min_by_key(|&v| (load[v as usize], v));
                assert_eq!(index.place(&affinity), best, "step {step}, types {mask:b}");
                if let Some(v) = best {
                    load[v as usize] += 1;
                }
            } else if rng.random_bool(0.55) {
                index.inc(u);
                load[u as usize] += 1;
            } else {
                index.dec(u);
                load[u as usize] = load[u as usize].saturating_sub(1);
            }
            let mut least_by_kind = Vec::new();
            for kind in UnitType::ALL {
                let (least, most) = naive(&load, &kinds, kind);
                assert_eq!(index.least_of(kind), least, "step {step}");
                assert_eq!(index.most(kind), most, "step {step}");
                assert_eq!(
                    index.most_load(kind),
                    most.map_or(0, |m| m.0),
                    "step {step}"
                );
                least_by_kind.push(least);
            }
            // Placement over the types a task runs on: the least-loaded of those units.
            for mask in 1..16usize {
                let affinity = PerUnitType([0, 1, 2, 3].map(|i| (mask >> i & 1) as f64));
                let best = UnitType::ALL
                    .into_iter()
                    .filter(|&k| affinity.runs_on(k))
                    .filter_map(|k| least_by_kind[k as usize])
                    .min()
                    .map(|(_, u)| u);
                assert_eq!(index.least(&affinity), best, "step {step}, types {mask:b}");
            }
            assert_eq!(index.load(u), load[u as usize]);
            assert_eq!(index.kind(u), kinds[u as usize]);
        }
    }

    #[test]
    fn least_and_most_match_brute_force_under_random_changes_and_added_units() {
        let pool = [UnitType::ALL[0], UnitType::ALL[1]];
        let kinds = (0..13).map(|i| pool[i % 3 / 2]).collect();
        exercise(kinds, 0, 5000, |rng, n| rng.random_range(0..n as u32));
    }

    #[test]
    fn queries_find_members_past_the_first_summary_word() {
        // 4,200 units: two summary words per level. All but the highest 150 ids stay at
        // load 1 and changes fall on those, so the extreme levels' members sit in the
        // last set words, on both sides of the summary words' boundary (set word 64).
        let kinds = vec![UnitType::ALL[0]; 4200];
        exercise(kinds, 4050, 3000, |rng, n| {
            rng.random_range(n as u32 - 150..n as u32)
        });
    }

    #[test]
    fn a_level_emptied_in_one_summary_word_is_found_in_the_next() {
        // 4,200 units: 66 set words, two summary words per level (set word 64 is the
        // first of the second).
        let cpu = UnitType::Cpu;
        let mut index = LoadIndex::<UnitLoad>::empty();
        index.extend(std::iter::repeat_n(cpu, 4200));
        (0..4200)
            .filter(|&u| u != 4100 && u != 4190)
            .for_each(|u| index.inc(u));
        assert_eq!(index.least_of(cpu), Some((0, 4100)));
        index.inc(4100);
        assert_eq!(index.least_of(cpu), Some((0, 4190)));
        index.inc(4190);
        index.inc(4190);
        assert_eq!(index.most(cpu), Some((2, 4190)));
        index.inc(4100);
        assert_eq!(index.most(cpu), Some((2, 4100)));
        index.dec(4100);
        assert_eq!(index.most(cpu), Some((2, 4190)));
        assert_eq!(index.least_of(cpu), Some((1, 0)));
        index.dec(4190);
        assert_eq!((index.most(cpu), index.most_load(cpu)), (Some((1, 0)), 1));
    }
}
