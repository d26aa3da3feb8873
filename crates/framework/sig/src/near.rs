//! Exact short reuse distances, on demand, from a window of recent history.
//!
//! The sampled analyser needs distances below [`MID`] exactly, but only for the
//! accesses it samples. So instead of updating a recency stack on every access it keeps
//! the last [`HISTORY`] accesses that changed block in a ring (one store per access)
//! and, for a sampled access, walks back through them counting distinct blocks until
//! it meets the accessed block (its distance) or has counted a limit of others (far).
//! A walk to [`NEAR`] is a few dozen to a few hundred cheap steps, paid on about R of
//! the accesses; a walk to MID is ~16 times longer and paid on a fraction of those.

/// Every walk measures distances below this.
pub const NEAR: usize = 64;
/// Long walks measure distances below this.
pub const MID: usize = 1024;
/// Accesses kept in the ring. A walk that runs out of history without meeting its
/// block or its limit of distinct others (a loop over fewer blocks for longer than
/// this) reports the access as far.
pub const HISTORY: usize = 1 << 16;
/// Slots of the per-walk set of distinct blocks: with at most MID blocks in 4096
/// slots, a block's first probe mostly decides.
const SEEN_SLOTS: usize = 4096;
/// An empty slot (block numbers are byte addresses >> 6, never this).
const EMPTY: u64 = u64::MAX;

/// The ring of recent block changes and the walks over it. Positions count pushed
/// blocks from 0; a walk "at" a position looks at the blocks pushed before it.
pub(crate) struct RecentBlocks {
    ring: Box<[u64; HISTORY]>,
    /// Blocks pushed so far.
    pushed: u64,
    /// The set of blocks met by the current walk (open addressing; empty between walks).
    seen: Box<[u64; SEEN_SLOTS]>,
    /// Slots of `seen` the current walk filled, to empty them afterwards.
    filled: Box<[usize; MID]>,
}

/// Appends to the ring with its position in a local (a register in a hot loop, where
/// a field would go through memory on every push); writes it back when dropped.
pub(crate) struct RingWriter<'a> {
    ring: &'a mut [u64; HISTORY],
    pushed: u64,
    total: &'a mut u64,
}

impl RingWriter<'_> {
    /// Append `block`; returns its position.
    #[inline]
    pub(crate) fn push(&mut self, block: u64) -> u64 {
        self.ring[self.pushed as usize % HISTORY] = block;
        self.pushed += 1;
        self.pushed - 1
    }
}

impl Drop for RingWriter<'_> {
    fn drop(&mut self) {
        *self.total = self.pushed;
    }
}

impl RecentBlocks {
    pub(crate) fn new() -> Self {
        RecentBlocks {
            ring: vec![0; HISTORY]
                .into_boxed_slice()
                .try_into()
                .expect("HISTORY"),
            pushed: 0,
            seen: vec![EMPTY; SEEN_SLOTS]
                .into_boxed_slice()
                .try_into()
                .expect("SEEN_SLOTS"),
            filled: vec![0; MID].into_boxed_slice().try_into().expect("MID"),
        }
    }

    /// A writer appending blocks. Callers push only changes of block (a repeat of the
    /// previous block is distance 0 and tells a walk nothing).
    pub(crate) fn writer(&mut self) -> RingWriter<'_> {
        RingWriter {
            ring: &mut self.ring,
            pushed: self.pushed,
            total: &mut self.pushed,
        }
    }

    /// Blocks pushed so far.
    pub(crate) fn pushed(&self) -> u64 {
        self.pushed
    }

    /// How many blocks before position `at` are still in the ring.
    fn history_at(&self, at: u64) -> usize {
        debug_assert!(at < self.pushed);
        let overwritten = self.pushed.saturating_sub(HISTORY as u64);
        (at - overwritten.min(at)) as usize
    }

    /// The reuse distance of the access to `block` at position `at`, if it is below
    /// `limit` (at most MID); `None` when it is at least that, the block is new, or
    /// history ran out.
    pub(crate) fn distance_below(&mut self, at: u64, block: u64, limit: usize) -> Option<u32> {
        let limit = limit.min(MID);
        let back = self.history_at(at);
        // Locals, not fields, in the loop: nothing has to go back to memory per step.
        let (ring, seen, filled) = (&*self.ring, &mut *self.seen, &mut *self.filled);
        let end = at as usize;
        let mut distinct = 0;
        let mut found = None;
        for k in 1..=back {
            let b = ring[(end - k) % HISTORY];
            if b == block {
                found = Some(distinct as u32);
                break;
            }
            // Branch-free unless b's first slot holds another block: whether b is new
            // is data, and a mispredicted branch on it would cost more than the step.
            let i = slot_of(b);
            let s = seen[i];
            // `&`, not `&&`: one rarely taken branch instead of one per condition.
            if (s != b) & (s != EMPTY) {
                distinct += mark_seen_probing(seen, &mut filled[distinct..], b, i);
            } else {
                seen[i] = b;
                filled[distinct] = i;
                distinct += usize::from(s == EMPTY);
            }
            if distinct == limit {
                break;
            }
        }
        for &i in &filled[..distinct] {
            seen[i] = EMPTY;
        }
        found
    }
}

/// The first slot of a block in the walk's set: Fibonacci hashing (the top bits of a
/// multiplication spread any block pattern).
#[inline]
fn slot_of(block: u64) -> usize {
    (block.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as usize % SEEN_SLOTS
}

/// Linear probing past an occupied first slot; returns 1 if `block` was new (its slot
/// then goes to `filled[0]`), else 0.
#[cold]
fn mark_seen_probing(
    seen: &mut [u64; SEEN_SLOTS],
    filled: &mut [usize],
    block: u64,
    first: usize,
) -> usize {
    let mut i = first;
    loop {
        i = (i + 1) % SEEN_SLOTS;
        if seen[i] == block {
            return 0;
        }
        if seen[i] == EMPTY {
            seen[i] = block;
            filled[0] = i;
            return 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pushes a trace of block changes, checking each access's near distance against
    /// a direct count of the distinct blocks since its previous occurrence.
    fn check(trace: &[u64], limit: usize) {
        let mut r = RecentBlocks::new();
        let mut w = r.writer();
        for &b in trace {
            w.push(b);
        }
        drop(w);
        for (i, &b) in trace.iter().enumerate() {
            let expected = trace[..i].iter().rposition(|&x| x == b).and_then(|p| {
                let mut between: Vec<u64> = trace[p + 1..i].to_vec();
                between.sort_unstable();
                between.dedup();
                (between.len() < limit).then_some(between.len() as u32)
            });
            assert_eq!(
                r.distance_below(i as u64, b, limit),
                expected,
                "access {i} to block {b}"
            );
        }
    }

    #[test]
    fn walks_match_a_direct_count() {
        // Cycles over 10, 63, 64 and 65 blocks: distances 9, 62, 63 and far; the same
        // at MID.
        for (n, limit) in [
            (10, NEAR),
            (63, NEAR),
            (64, NEAR),
            (65, NEAR),
            (1023, MID),
            (1025, MID),
        ] {
            check(&(0..4 * n).map(|i| i % n).collect::<Vec<_>>(), limit);
        }
        // A pseudo-random mix of near and far reuses with colliding hash slots.
        let trace: Vec<u64> = (0..5000u64)
            .map(|i| (i * 2_654_435_761) % 97 * 256)
            .collect::<Vec<_>>()
            .windows(2)
            .filter(|w| w[0] != w[1])
            .map(|w| w[1])
            .collect();
        check(&trace, NEAR);
        check(&trace, 50);
    }

    #[test]
    fn history_running_out_reads_as_far() {
        let mut r = RecentBlocks::new();
        let mut w = r.writer();
        w.push(7);
        // A long loop over two blocks pushes block 7 out of the ring.
        for i in 0..HISTORY as u64 {
            w.push(i % 2);
        }
        let at = w.push(7);
        drop(w);
        assert_eq!(r.distance_below(at, 7, MID), None);
        assert_eq!(r.distance_below(at, 1, NEAR), Some(0));
        assert_eq!(r.distance_below(at, 0, MID), Some(1));
    }
}
