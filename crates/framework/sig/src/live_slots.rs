//! The live slots of the exact analyser's time line, with rank queries.
//!
//! A bitmap holds one bit per slot, and a Fenwick tree counts the live slots of each
//! 64-slot word. A rank query is one Fenwick prefix sum over words plus one popcount,
//! so the tree is 64× smaller than one over slots (a 2-million-block working set needs
//! about 250 KB of tree, which stays in L2) and the only access likely to miss the
//! cache is the bitmap word of the queried slot.

/// Live-slot bitmap with a Fenwick tree of per-word counts.
pub(crate) struct LiveSlots {
    words: Vec<u64>,
    /// Fenwick tree (1-based, `tree[0]` unused) of live slots per word.
    tree: Vec<u32>,
}

impl LiveSlots {
    /// `capacity` slots (rounded up to whole words), of which the first `live` are live.
    pub(crate) fn with_live_prefix(capacity: usize, live: usize) -> Self {
        let n = capacity.div_ceil(64).max(1);
        let mut words = vec![0u64; n];
        for (i, w) in words.iter_mut().enumerate() {
            let start = i * 64;
            if live >= start + 64 {
                *w = u64::MAX;
            } else if live > start {
                *w = (1u64 << (live - start)) - 1;
            }
        }
        // Linear-time Fenwick build: each node passes its sum on to its parent.
        let mut tree = vec![0u32; n + 1];
        for i in 1..=n {
            tree[i] += words[i - 1].count_ones();
            let parent = i + (i & i.wrapping_neg());
            if parent <= n {
                tree[parent] += tree[i];
            }
        }
        LiveSlots { words, tree }
    }

    /// Number of slots.
    pub(crate) fn capacity(&self) -> usize {
        self.words.len() * 64
    }

    /// Mark `slot` live (it must be dead).
    #[inline]
    pub(crate) fn insert(&mut self, slot: usize) {
        self.words[slot / 64] |= 1 << (slot % 64);
        self.add(slot / 64, 1);
    }

    /// Mark `slot` dead (it must be live).
    #[inline]
    pub(crate) fn remove(&mut self, slot: usize) {
        self.words[slot / 64] &= !(1 << (slot % 64));
        self.add(slot / 64, u32::MAX); // -1, wrapping
    }

    /// Number of live slots in `0..=slot`.
    #[inline]
    pub(crate) fn rank(&self, slot: usize) -> u32 {
        let word = slot / 64;
        let upto = self.words[word] & (u64::MAX >> (63 - slot % 64));
        let mut sum = upto.count_ones();
        let mut i = word;
        while i > 0 {
            sum += self.tree[i];
            i &= i - 1;
        }
        sum
    }

    /// Live slots in increasing order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let bit = w.trailing_zeros() as usize;
                w &= w - 1;
                Some(i * 64 + bit)
            })
        })
    }

    #[inline]
    fn add(&mut self, word: usize, delta: u32) {
        let mut i = word + 1;
        let n = self.tree.len();
        while i < n {
            self.tree[i] = self.tree[i].wrapping_add(delta);
            i += i & i.wrapping_neg();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_counts_live_slots_up_to_and_including() {
        let mut s = LiveSlots::with_live_prefix(300, 70);
        assert_eq!(s.capacity(), 320);
        assert_eq!(s.rank(0), 1);
        assert_eq!(s.rank(69), 70);
        assert_eq!(s.rank(299), 70);
        s.remove(3);
        s.insert(200);
        s.insert(319);
        assert_eq!(s.rank(2), 3);
        assert_eq!(s.rank(3), 3);
        assert_eq!(s.rank(199), 69);
        assert_eq!(s.rank(200), 70);
        assert_eq!(s.rank(319), 71);
        let live: Vec<usize> = s.iter().collect();
        assert_eq!(live.len(), 71);
        assert_eq!(&live[..4], &[0, 1, 2, 4]);
        assert_eq!(&live[68..], &[69, 200, 319]);
    }

    #[test]
    fn built_tree_matches_incremental_inserts() {
        for live in [0, 1, 63, 64, 65, 500, 1000] {
            let built = LiveSlots::with_live_prefix(1000, live);
            let mut grown = LiveSlots::with_live_prefix(1000, 0);
            for s in 0..live {
                grown.insert(s);
            }
            assert_eq!(built.tree, grown.tree, "live = {live}");
            assert_eq!(built.words, grown.words, "live = {live}");
        }
    }
}
