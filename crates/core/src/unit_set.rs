//! A set of unit ids as a bit set: insert, remove, contains and "first member ≥ x" in
//! O(1) / O(n / 64), which the simulator's idle set and the policies' load index need
//! on every event.

#[derive(Clone, Debug)]
pub struct UnitSet {
    words: Vec<u64>,
}

impl UnitSet {
    /// The empty set, for members below `n`.
    #[inline]
    pub fn empty(n: usize) -> UnitSet {
        UnitSet {
            words: vec![0; n.div_ceil(64)],
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
        if self.words.len() < n.div_ceil(64) {
            self.words.resize(n.div_ceil(64), 0);
        }
    }
    #[inline]
    pub fn insert(&mut self, u: u32) {
        self.words[u as usize / 64] |= 1 << (u % 64);
    }
    #[inline]
    pub fn remove(&mut self, u: u32) {
        self.words[u as usize / 64] &= !(1 << (u % 64));
    }
    #[inline]
    pub fn contains(&self, u: u32) -> bool {
        self.words[u as usize / 64] & (1 << (u % 64)) != 0
    }
    /// The smallest member ≥ `from`.
    #[inline]
    pub fn first_from(&self, from: u32) -> Option<u32> {
        let mut i = from as usize / 64;
        let mut word = *self.words.get(i)? & (!0u64 << (from % 64));
        loop {
            if word != 0 {
                return Some((i * 64) as u32 + word.trailing_zeros());
            }
            i += 1;
            word = *self.words.get(i)?;
        }
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
}
