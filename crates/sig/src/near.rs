//! Exact short reuse distances, on demand, from a window of recent history.
//!
//! The sampled analyser needs distances below [`NEAR`] exactly, but only for the
//! accesses it samples. So instead of updating a recency stack on every access it keeps
//! the last [`HISTORY`] accesses that changed block in a ring (one store per access)
//! and, for a sampled access, walks back through them counting distinct blocks until
//! it meets the accessed block (its distance) or has counted NEAR others (far). A walk
//! is a few dozen to a few hundred cheap steps, paid on about R of the accesses.

/// Distances below this are measured exactly.
pub const NEAR: usize = 64;
/// Accesses kept in the ring. A walk that runs out of history without meeting its
/// block or NEAR distinct others (a loop over fewer than NEAR blocks for longer than
/// this) reports the access as far.
pub const HISTORY: usize = 1 << 14;
/// Slots of the per-walk set of distinct blocks: with at most NEAR blocks in 1024
/// slots, a block's first probe almost always decides.
const SEEN_SLOTS: usize = 1024;
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
    filled: [usize; NEAR],
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
            filled: [0; NEAR],
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

    /// Whether `block` is among the NEAR blocks pushed just before position `at`, which
    /// makes its distance there less than NEAR: a vectorised compare, far cheaper than
    /// a walk.
    pub(crate) fn in_last_near(&self, at: u64, block: u64) -> bool {
        let end = at as usize % HISTORY;
        let n = self.history_at(at).min(NEAR);
        // The n entries before `end`, in at most two pieces where the ring wraps.
        let (wrapped, recent) = if end >= n {
            (&[][..], &self.ring[end - n..end])
        } else {
            (&self.ring[HISTORY - (n - end)..], &self.ring[..end])
        };
        contains(wrapped, block) | contains(recent, block)
    }

    /// The reuse distance of the access to `block` at position `at`, if it is below
    /// NEAR; `None` when it is at least NEAR, the block is new, or history ran out.
    pub(crate) fn near_distance(&mut self, at: u64, block: u64) -> Option<u32> {
        let back = self.history_at(at);
        // Locals, not fields, in the loop: nothing has to go back to memory per step.
        let (ring, seen, filled) = (&*self.ring, &mut *self.seen, &mut self.filled);
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
            if distinct == NEAR {
                break;
            }
        }
        for &i in &filled[..distinct] {
            seen[i] = EMPTY;
        }
        found
    }
}

/// `slice.contains(&x)` without an early exit, so that it vectorises.
#[inline]
fn contains(slice: &[u64], x: u64) -> bool {
    let mut hit = false;
    let mut chunks = slice.chunks_exact(8);
    for c in &mut chunks {
        hit |= c.iter().fold(false, |h, &y| h | (y == x));
    }
    hit | chunks.remainder().contains(&x)
}

/// The first slot of a block in the walk's set: Fibonacci hashing (the top bits of a
/// multiplication spread any block pattern).
#[inline]
fn slot_of(block: u64) -> usize {
    (block.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as usize % SEEN_SLOTS
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
    fn check(trace: &[u64]) {
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
                (between.len() < NEAR).then_some(between.len() as u32)
            });
            assert_eq!(
                r.near_distance(i as u64, b),
                expected,
                "access {i} to block {b}"
            );
        }
    }

    #[test]
    fn walks_match_a_direct_count() {
        // Cycles over 10, 63, 64 and 65 blocks: distances 9, 62, 63 and far.
        for n in [10u64, 63, 64, 65] {
            check(&(0..4 * n).map(|i| i % n).collect::<Vec<_>>());
        }
        // A pseudo-random mix of near and far reuses with colliding hash slots.
        let trace: Vec<u64> = (0..5000u64)
            .map(|i| (i * 2_654_435_761) % 97 * 256)
            .collect::<Vec<_>>()
            .windows(2)
            .filter(|w| w[0] != w[1])
            .map(|w| w[1])
            .collect();
        check(&trace);
    }

    #[test]
    fn in_last_near_sees_exactly_the_last_near_pushes() {
        let mut r = RecentBlocks::new();
        // Through the ring's wrap-around: at position n, blocks n-NEAR..n are in.
        for n in 0..(HISTORY + 2 * NEAR) as u64 {
            r.writer().push(n);
            let oldest_in = n.saturating_sub(NEAR as u64);
            for b in [
                oldest_in.saturating_sub(1),
                oldest_in,
                n.saturating_sub(1),
                n,
            ] {
                let expected = b >= oldest_in && b < n;
                assert_eq!(r.in_last_near(n, b), expected, "at {n}, block {b}");
            }
        }
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
        assert_eq!(r.near_distance(at, 7), None);
        assert_eq!(r.near_distance(at, 1), Some(0));
        assert_eq!(r.near_distance(at, 0), Some(1));
    }
}
