//! The PC-based migration predictor (Section III).
//!
//! Each thread carries one entry {Home, Depth, Start PC}; each instruction has a
//! migratory bit. A run of consecutive accesses to one home core that reaches depth θ
//! marks its first instruction migratory; a run that ends shorter clears that bit.
//!
//! The paper keeps the bits in each core's instruction cache and observes that all
//! cores end up with the same bits (threads run the same code), so it assumes no loss
//! and no disagreement; we keep one bit table per program, which is that assumption.

/// Migratory bits, one per access site (PC).
#[derive(Clone, Debug, Default)]
pub struct MigratoryBits {
    words: Vec<u64>,
}

impl MigratoryBits {
    /// All bits clear (every instruction starts as a remote-access instruction), with
    /// room for instructions `0..instructions` (the table grows if a larger one is set).
    pub fn new(instructions: usize) -> Self {
        MigratoryBits {
            words: vec![0; instructions.div_ceil(64).max(1)],
        }
    }

    #[inline]
    pub fn is_migratory(&self, pc: u32) -> bool {
        self.words
            .get(pc as usize >> 6)
            .is_some_and(|w| w >> (pc & 63) & 1 == 1)
    }

    #[inline]
    fn set(&mut self, pc: u32, migratory: bool) {
        let i = pc as usize >> 6;
        if i >= self.words.len() {
            self.words.resize(i + 1, 0);
        }
        let bit = 1u64 << (pc & 63);
        if migratory {
            self.words[i] |= bit;
        } else {
            self.words[i] &= !bit;
        }
    }
}

/// No home recorded yet.
const NO_HOME: u16 = u16::MAX;

/// A thread's predictor entry; travels with the thread on migration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub home: u16,
    pub depth: u32,
    pub start_pc: u32,
}

impl Default for Entry {
    fn default() -> Self {
        Entry {
            home: NO_HOME,
            depth: 0,
            start_pc: 0,
        }
    }
}

impl Entry {
    /// Observes an access by instruction `pc` to home core `home` (Section III-A, the
    /// detection steps), updating `bits` with depth threshold `theta`.
    #[inline]
    pub fn observe(&mut self, pc: u32, home: u16, theta: u32, bits: &mut MigratoryBits) {
        if self.home == home {
            if self.depth < theta {
                self.depth += 1;
                if self.depth == theta {
                    bits.set(self.start_pc, true);
                }
            }
        } else {
            if self.home != NO_HOME && self.depth < theta {
                bits.set(self.start_pc, false);
            }
            *self = Entry {
                home,
                depth: 1,
                start_pc: pc,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Figure 2: θ = 2, homes A B C C C C A A; PC3 and PC7 become migratory.
    #[test]
    fn figure_two_marks_pc3_and_pc7() {
        let (a, b, c) = (0, 1, 2);
        let seq = [
            (1, a),
            (2, b),
            (3, c),
            (4, c),
            (5, c),
            (6, c),
            (7, a),
            (8, a),
        ];
        let mut bits = MigratoryBits::new(8);
        let mut e = Entry::default();
        let mut states = Vec::new();
        for (pc, home) in seq {
            e.observe(pc, home, 2, &mut bits);
            states.push((e.home, e.depth, e.start_pc));
        }
        assert_eq!(
            states,
            [
                (a, 1, 1),
                (b, 1, 2),
                (c, 1, 3),
                (c, 2, 3),
                (c, 2, 3),
                (c, 2, 3),
                (a, 1, 7),
                (a, 2, 7)
            ]
        );
        let marked: Vec<u32> = (1..=8).filter(|&pc| bits.is_migratory(pc)).collect();
        assert_eq!(marked, [3, 7]);
    }

    #[test]
    fn a_short_run_clears_the_bit() {
        let mut bits = MigratoryBits::new(4);
        let mut e = Entry::default();
        for (pc, home) in [(1, 5), (2, 5), (3, 5), (4, 6)] {
            e.observe(pc, home, 3, &mut bits);
        }
        assert!(bits.is_migratory(1));
        // Now PC1 starts a run of only two accesses to core 5.
        for (pc, home) in [(1, 5), (2, 5), (4, 6)] {
            e.observe(pc, home, 3, &mut bits);
        }
        assert!(!bits.is_migratory(1));
    }
}
