//! A set of unit ids as a two-level bit set: insert, remove, contains and "first member
//! ≥ x" in O(1) for up to 4,096 units, which the engine's idle set needs on every
//! arrival.
//!
//! Why two levels: an arriving task is offered to the idle units in id order, and on a
//! busy machine the low ids are the busy ones (each arrival takes the lowest idle
//! unit), so a plain bit set scanned up to 16 words of 1,024 units per arrival, its
//! loop exit a branch no predictor learns. A summary word (bit `i`: word `i` has a
//! member) finds the word at once.

#[derive(Clone, Debug)]
pub struct UnitSet {
    words: Vec<u64>,
    /// Bit `i % 64` of `summary[i / 64]`: `words[i]` is not empty.
    summary: Vec<u64>,
}

impl UnitSet {
    /// The empty set, for members below `n`.
    #[inline]
    pub fn empty(n: usize) -> UnitSet {
        let words = n.div_ceil(64);
        UnitSet {
            words: vec![0; words],
            summary: vec![0; words.div_ceil(64)],
        }
    }
    /// The set {0, 1, ..., n − 1}.
    #[inline]
    pub fn full(n: usize) -> UnitSet {
        let mut s = UnitSet::empty(n);
        (0..n as u32).for_each(|u| s.insert(u));
        s
    }
    /// Makes room for members below `n` (the new ones absent).
    pub fn grow(&mut self, n: usize) {
        let words = n.div_ceil(64);
        if self.words.len() < words {
            self.words.resize(words, 0);
            self.summary.resize(words.div_ceil(64), 0);
        }
    }
    #[inline]
    pub fn insert(&mut self, u: u32) {
        let w = u as usize / 64;
        self.words[w] |= 1 << (u % 64);
        self.summary[w / 64] |= 1 << (w % 64);
    }
    #[inline]
    pub fn remove(&mut self, u: u32) {
        let w = u as usize / 64;
        self.words[w] &= !(1 << (u % 64));
        if self.words[w] == 0 {
            self.summary[w / 64] &= !(1 << (w % 64));
        }
    }
    #[inline]
    pub fn contains(&self, u: u32) -> bool {
        self.words[u as usize / 64] & (1 << (u % 64)) != 0
    }
    /// The smallest member ≥ `from`.
    #[inline]
    pub fn first_from(&self, from: u32) -> Option<u32> {
        let i = from as usize / 64;
        let word = *self.words.get(i)? & (!0u64 << (from % 64));
        if word != 0 {
            return Some((i * 64) as u32 + word.trailing_zeros());
        }
        // The first non-empty word after `i`.
        let next = i + 1;
        let mut j = next / 64;
        let mut bits = *self.summary.get(j)? & (!0u64 << (next % 64));
        while bits == 0 {
            j += 1;
            bits = *self.summary.get(j)?;
        }
        let w = j * 64 + bits.trailing_zeros() as usize;
        Some((w * 64) as u32 + self.words[w].trailing_zeros())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_from_finds_the_next_member_across_words() {
        let mut s = UnitSet::full(130);
        for u in 0..130 {
            if u != 3 && u != 64 && u != 129 {
                s.remove(u);
            }
        }
        assert_eq!(s.first_from(0), Some(3));
        assert_eq!(s.first_from(4), Some(64));
        assert_eq!(s.first_from(65), Some(129));
        assert_eq!(s.first_from(130), None);
        assert!(s.contains(64) && !s.contains(65));
    }

    proptest::proptest! {
        /// Inserts and removals on sets of up to 5,000 units (several summary words)
        /// answer `first_from` and `contains` as an ordered set does.
        #[test]
        fn agrees_with_an_ordered_set(
            n in 1usize..5000,
            ops in proptest::collection::vec((proptest::bool::ANY, 0u32..5000), 0..400),
            probes in proptest::collection::vec(0u32..5100, 1..50),
        ) {
            let mut s = UnitSet::empty(n);
            let mut model = std::collections::BTreeSet::new();
            for (insert, u) in ops {
                let u = u % n as u32;
                if insert {
                    s.insert(u);
                    model.insert(u);
                } else {
                    s.remove(u);
                    model.remove(&u);
                }
            }
            for p in probes {
                let expected = model.range(p..).next().copied();
                proptest::prop_assert_eq!(s.first_from(p), expected, "first_from({})", p);
                if (p as usize) < n {
                    proptest::prop_assert_eq!(s.contains(p), model.contains(&p));
                }
            }
        }
    }
}
