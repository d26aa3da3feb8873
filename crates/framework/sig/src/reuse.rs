//! Exact reuse distances (LRU stack distances) in O(log M) per access.
//!
//! The reuse distance of an access to block `b` is the number of *distinct* other
//! blocks touched since the previous access to `b` (MICA's definition, used by the
//! paper); a block's first access is *cold* (no distance). Each block's latest access
//! owns one slot of a time line; a bitmap with a Fenwick tree over its words counts the
//! live slots (`live_slots.rs`), so the distance is the number of live slots
//! after `b`'s slot. When the time line fills up it is compacted (live slots renumbered
//! in order), which keeps it at most four times the number of distinct blocks `M`:
//! amortised O(log M) time per access and O(M) memory.

use crate::block_slots::{PagedSlots, SlotMap};
use crate::live_slots::LiveSlots;
use crate::prefetch::prefetch;

/// Smallest time-line capacity (slots).
const MIN_CAPACITY: usize = 1 << 12;

/// The exact reuse-distance engine over block numbers, generic in the layout of its
/// block → slot map (dense pages by default).
pub struct ExactReuse<M = PagedSlots> {
    /// Block -> slot of its latest access.
    slot_of: M,
    /// Slot -> the block that took it (meaningful for live slots only).
    block_at: Vec<u64>,
    /// Which slots are some block's latest access.
    live: LiveSlots,
    /// Next free slot.
    next: usize,
    /// Smallest time-line capacity after a compaction.
    min_capacity: usize,
    /// The previous block (distance-0 fast path: nothing changes on a repeat).
    prev: u64,
}

/// An empty engine with either block → slot layout: every block is cold.
impl<M: SlotMap> Default for ExactReuse<M> {
    fn default() -> Self {
        Self::with_time_line(MIN_CAPACITY)
    }
}

impl ExactReuse {
    /// An empty engine over a full trace: every block is cold.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty engine whose time line starts at (and never shrinks below) `slots`
    /// (rounded up to a multiple of 64); small values force frequent compactions (tests).
    pub fn with_min_capacity(slots: usize) -> Self {
        Self::with_time_line(slots)
    }
}

impl<M: SlotMap> ExactReuse<M> {
    fn with_time_line(slots: usize) -> Self {
        let live = LiveSlots::with_live_prefix(slots, 0);
        ExactReuse {
            slot_of: M::new(),
            block_at: vec![0; live.capacity()],
            live,
            next: 0,
            min_capacity: slots,
            // Not a block number: block numbers are byte addresses >> 6.
            prev: u64::MAX,
        }
    }

    /// Number of distinct blocks seen so far (the working set W, in blocks).
    pub fn distinct(&self) -> u64 {
        self.slot_of.block_count()
    }

    /// Record an access to `block`; returns its reuse distance, or `None` when cold.
    #[inline]
    pub fn access(&mut self, block: u64) -> Option<u64> {
        if block == self.prev {
            return Some(0);
        }
        self.prev = block;
        if self.next == self.block_at.len() {
            self.compact();
        }
        let now = self.next;
        self.next += 1;
        self.block_at[now] = block;
        let old = self.slot_of.insert(block, now as u32);
        let distance = old.map(|old| {
            let old = old as usize;
            // Live slots after `old` = all live slots - those up to and including `old`.
            let after = self.slot_of.block_count() - u64::from(self.live.rank(old));
            self.live.remove(old);
            after
        });
        self.live.insert(now);
        distance
    }

    /// Record a run of accesses into `h`. The block → slot entry and the histogram
    /// counter of a far reuse are usually not in cache, so entries are prefetched a
    /// few accesses ahead, and counters prefetched and incremented a few accesses
    /// later, instead of waiting for each miss in turn.
    pub fn access_all(&mut self, blocks: &[u64], h: &mut ReuseHistogram) {
        const LAG: usize = 16;
        const NO_COUNTER: usize = usize::MAX;
        let mut pending = [NO_COUNTER; LAG];
        for (i, &b) in blocks.iter().enumerate() {
            if let Some(&ahead) = blocks.get(i + LAG) {
                self.slot_of.prefetch(ahead);
            }
            let due = std::mem::replace(&mut pending[i % LAG], NO_COUNTER);
            if due != NO_COUNTER {
                h.counts[due] += 1;
            }
            match self.access(b) {
                None => h.cold += 1,
                Some(d) => {
                    let d = d as usize;
                    if d >= h.counts.len() {
                        h.counts.resize((d + 1).next_power_of_two(), 0);
                    }
                    prefetch(&h.counts[d]);
                    pending[i % LAG] = d;
                }
            }
        }
        for d in pending.into_iter().filter(|&d| d != NO_COUNTER) {
            h.counts[d] += 1;
        }
    }

    /// Renumber live slots 0..live in time order and size the time line to
    /// `SPARE`·live: each compaction re-inserts every live block (mostly cache misses),
    /// so spare room makes them rarer at 8 bytes per slot.
    fn compact(&mut self) {
        const SPARE: usize = 4;
        let live = self.slot_of.block_count() as usize;
        let capacity = (SPARE * live).max(self.min_capacity);
        let mut block_at = Vec::with_capacity(capacity + 64);
        for slot in self.live.iter() {
            let b = self.block_at[slot];
            self.slot_of.insert(b, block_at.len() as u32);
            block_at.push(b);
        }
        debug_assert_eq!(block_at.len(), live);
        self.live = LiveSlots::with_live_prefix(capacity, live);
        block_at.resize(self.live.capacity(), 0);
        self.block_at = block_at;
        self.next = live;
    }
}

/// The full reuse-distance histogram of a trace plus its cold accesses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReuseHistogram {
    /// `counts[d]` = accesses with reuse distance `d`.
    pub counts: Vec<u64>,
    /// Accesses to a block never touched before.
    pub cold: u64,
}

impl ReuseHistogram {
    /// Count one access with the given outcome (`None` = cold).
    #[inline]
    pub fn record(&mut self, distance: Option<u64>) {
        self.record_n(distance, 1);
    }

    /// Count `n` accesses with the given outcome (`None` = cold).
    #[inline]
    pub fn record_n(&mut self, distance: Option<u64>, n: u64) {
        match distance {
            None => self.cold += n,
            Some(d) => {
                let d = d as usize;
                if d >= self.counts.len() {
                    self.counts.resize((d + 1).next_power_of_two(), 0);
                }
                self.counts[d] += n;
            }
        }
    }

    /// Total accesses counted (cold included).
    pub fn total(&self) -> u64 {
        self.cold + self.counts.iter().sum::<u64>()
    }

    /// `(distance, count)` pairs with a non-zero count, in increasing distance.
    pub fn nonzero(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(d, &c)| (d as u64, c))
    }
}
