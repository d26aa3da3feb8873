//! A set-associative cache with true LRU replacement, addressed by byte address.
//!
//! It models presence only (no data): `access` says whether the line was there and
//! which line, if any, it evicted. Shared by the tiled-NUCA simulator (`nuca`) and the
//! simulated O² evaluation (`o2`), so both count hits and misses the same way.
//!
//! Layout: one flat `Vec<u64>` of tags, `ways` per set, ordered most- to least-recently
//! used within the set. With the small associativities of real caches (≤ 32) a shift
//! inside the set is cheaper than maintaining linked lists or timestamps.

/// Geometry of one cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub size_bytes: u64,
    pub ways: u32,
    pub line_bytes: u32,
}

impl Geometry {
    /// Number of sets; `None` unless the geometry is consistent (powers of two for
    /// line size and set count, size a multiple of ways × line).
    pub fn sets(&self) -> Option<u64> {
        let per_set = self.ways as u64 * self.line_bytes as u64;
        if self.ways == 0 || !self.line_bytes.is_power_of_two() || per_set == 0 {
            return None;
        }
        if self.size_bytes == 0 || !self.size_bytes.is_multiple_of(per_set) {
            return None;
        }
        let sets = self.size_bytes / per_set;
        sets.is_power_of_two().then_some(sets)
    }
}

/// Outcome of one access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Hit,
    /// A miss; the line was filled, evicting `evicted` (a line address) if the set was full.
    Miss {
        evicted: Option<u64>,
    },
}

impl Access {
    pub fn is_hit(self) -> bool {
        matches!(self, Access::Hit)
    }
}

const EMPTY: u64 = u64::MAX;

#[derive(Clone, Debug)]
pub struct Cache {
    geometry: Geometry,
    line_shift: u32,
    set_mask: u64,
    ways: usize,
    /// Line addresses (byte address >> line_shift), MRU first per set; EMPTY = invalid.
    lines: Vec<u64>,
    hits: u64,
    misses: u64,
}

impl Cache {
    /// A cold cache. Panics on an inconsistent geometry: callers validate user input
    /// with [`Geometry::sets`] first and report the field that is wrong.
    pub fn new(geometry: Geometry) -> Self {
        let sets = geometry
            .sets()
            .unwrap_or_else(|| panic!("inconsistent cache geometry {geometry:?}"));
        let ways = geometry.ways as usize;
        Cache {
            geometry,
            line_shift: geometry.line_bytes.trailing_zeros(),
            set_mask: sets - 1,
            ways,
            lines: vec![EMPTY; sets as usize * ways],
            hits: 0,
            misses: 0,
        }
    }

    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// The line address (byte address / line size) of a byte address.
    pub fn line_of(&self, addr: u64) -> u64 {
        addr >> self.line_shift
    }

    fn set_slice(&mut self, line: u64) -> &mut [u64] {
        let set = (line & self.set_mask) as usize;
        &mut self.lines[set * self.ways..(set + 1) * self.ways]
    }

    /// Reads or writes the byte at `addr`: a hit moves the line to MRU, a miss fills it.
    pub fn access(&mut self, addr: u64) -> Access {
        let line = self.line_of(addr);
        let set = self.set_slice(line);
        if let Some(pos) = set.iter().position(|&l| l == line) {
            set[..=pos].rotate_right(1);
            self.hits += 1;
            return Access::Hit;
        }
        let victim = set[set.len() - 1];
        set.rotate_right(1);
        set[0] = line;
        self.misses += 1;
        Access::Miss {
            evicted: (victim != EMPTY).then_some(victim),
        }
    }

    /// Whether the line holding `addr` is present (does not change LRU order).
    pub fn contains(&self, addr: u64) -> bool {
        let line = self.line_of(addr);
        let set = (line & self.set_mask) as usize;
        self.lines[set * self.ways..(set + 1) * self.ways].contains(&line)
    }

    /// Drops the line holding `addr` if present (e.g. a coherence invalidation).
    pub fn invalidate(&mut self, addr: u64) -> bool {
        let line = self.line_of(addr);
        let set = self.set_slice(line);
        match set.iter().position(|&l| l == line) {
            Some(pos) => {
                set[pos..].rotate_left(1);
                let last = set.len() - 1;
                set[last] = EMPTY;
                true
            }
            None => false,
        }
    }

    pub fn hits(&self) -> u64 {
        self.hits
    }
    pub fn misses(&self) -> u64 {
        self.misses
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn geo(size: u64, ways: u32) -> Geometry {
        Geometry {
            size_bytes: size,
            ways,
            line_bytes: 64,
        }
    }

    #[test]
    fn rejects_inconsistent_geometry() {
        assert_eq!(geo(0, 4).sets(), None);
        assert_eq!(geo(3 * 64 * 4, 4).sets(), None); // 3 sets: not a power of two
        assert_eq!(
            Geometry {
                size_bytes: 4096,
                ways: 4,
                line_bytes: 48
            }
            .sets(),
            None
        );
        assert_eq!(geo(32 * 1024, 8).sets(), Some(64));
    }

    #[test]
    fn lru_evicts_least_recently_used_in_a_set() {
        // 1 set of 2 ways: lines 0, 1, then touch 0, then 2 evicts 1.
        let mut c = Cache::new(geo(128, 2));
        assert_eq!(c.access(0), Access::Miss { evicted: None });
        assert_eq!(c.access(64), Access::Miss { evicted: None });
        assert_eq!(c.access(10), Access::Hit); // same line as 0
        assert_eq!(c.access(128), Access::Miss { evicted: Some(1) });
        assert!(c.contains(0) && !c.contains(64));
        assert_eq!((c.hits(), c.misses()), (1, 3));
    }

    #[test]
    fn invalidate_frees_a_way() {
        let mut c = Cache::new(geo(128, 2));
        c.access(0);
        c.access(64);
        assert!(c.invalidate(0));
        assert!(!c.invalidate(0));
        assert_eq!(c.access(128), Access::Miss { evicted: None });
        assert!(c.contains(64));
    }

    /// Reference: a fully explicit per-set LRU list.
    fn reference(addrs: &[u64], sets: u64, ways: usize) -> Vec<bool> {
        let mut state: Vec<Vec<u64>> = vec![Vec::new(); sets as usize];
        addrs
            .iter()
            .map(|a| {
                let line = a / 64;
                let s = &mut state[(line % sets) as usize];
                let hit = if let Some(p) = s.iter().position(|&l| l == line) {
                    s.remove(p);
                    true
                } else {
                    if s.len() == ways {
                        s.pop();
                    }
                    false
                };
                s.insert(0, line);
                hit
            })
            .collect()
    }

    proptest! {
        #[test]
        fn matches_reference_lru(addrs in prop::collection::vec(0u64..64 * 64, 0..400),
                                 ways_log in 0u32..3, sets_log in 0u32..3) {
            let ways = 1u32 << ways_log;
            let sets = 1u64 << sets_log;
            let mut c = Cache::new(geo(sets * ways as u64 * 64, ways));
            let got: Vec<bool> = addrs.iter().map(|&a| c.access(a).is_hit()).collect();
            prop_assert_eq!(got, reference(&addrs, sets, ways as usize));
        }
    }
}
