//! Exact reuse distances (LRU stack distances) in O(log M) per access.
//!
//! The reuse distance of an access to block `b` is the number of *distinct* other
//! blocks touched since the previous access to `b` (MICA's definition, used by the
//! paper); a block's first access is *cold* (no distance). Each block's latest access
//! owns one slot of a time line; a Fenwick tree counts the live slots, so the distance
//! is the number of live slots after `b`'s slot. When the time line fills up it is
//! compacted (live slots renumbered in order), which keeps it at most twice the number
//! of distinct blocks `M`: amortised O(log M) time per access and O(M) memory.

use rustc_hash::FxHashMap;

/// Blocks per page of the block → slot table (256 blocks = 16 KB of address space).
const PAGE_SHIFT: u32 = 8;
const PAGE_LEN: usize = 1 << PAGE_SHIFT;
/// "No slot" in the block → slot table.
const NONE: u32 = u32::MAX;

/// Block → slot map: a hash map of dense pages. Programs touch memory in runs, so a
/// page lookup is mostly the cached last page and a slot is one array index: far
/// fewer cache misses than one hash-table entry per block.
struct SlotTable {
    index: FxHashMap<u64, u32>,
    pages: Vec<[u32; PAGE_LEN]>,
    last_page: u64,
    last_index: usize,
    len: u64,
}

impl SlotTable {
    fn new() -> Self {
        SlotTable {
            index: FxHashMap::default(),
            pages: Vec::new(),
            last_page: u64::MAX,
            last_index: 0,
            len: 0,
        }
    }

    #[inline]
    fn entry(&mut self, block: u64) -> &mut u32 {
        let page = block >> PAGE_SHIFT;
        if page != self.last_page {
            let next = self.pages.len() as u32;
            let i = *self.index.entry(page).or_insert(next);
            if i == next {
                self.pages.push([NONE; PAGE_LEN]);
            }
            self.last_page = page;
            self.last_index = i as usize;
        }
        &mut self.pages[self.last_index][(block as usize) & (PAGE_LEN - 1)]
    }

    /// Set the slot of `block`, returning the previous one (if any).
    #[inline]
    fn insert(&mut self, block: u64, slot: u32) -> Option<u32> {
        let e = self.entry(block);
        let old = std::mem::replace(e, slot);
        if old == NONE {
            self.len += 1;
            None
        } else {
            Some(old)
        }
    }
}

/// Slot marker for a slot whose block has moved on to a later slot.
const DEAD: u64 = u64::MAX;
/// Smallest time-line capacity (slots).
const MIN_CAPACITY: usize = 1 << 12;

/// The exact reuse-distance engine over block numbers.
pub struct ExactReuse {
    /// Block -> slot of its latest access.
    slot_of: SlotTable,
    /// Slot -> block whose latest access it is, or `DEAD`.
    block_at: Vec<u64>,
    /// Fenwick tree (1-based, `tree[0]` unused) of live-slot counts.
    tree: Vec<u32>,
    /// Next free slot.
    next: usize,
    /// Smallest time-line capacity after a compaction.
    min_capacity: usize,
    /// The previous block (distance-0 fast path: nothing changes on a repeat).
    prev: u64,
}

impl Default for ExactReuse {
    fn default() -> Self {
        Self::new()
    }
}

impl ExactReuse {
    /// An empty engine: every block is cold.
    pub fn new() -> Self {
        Self::with_min_capacity(MIN_CAPACITY)
    }

    /// An empty engine whose time line starts at (and never shrinks below) `slots`;
    /// small values force frequent compactions (tests).
    pub fn with_min_capacity(slots: usize) -> Self {
        let slots = slots.max(2);
        ExactReuse {
            slot_of: SlotTable::new(),
            block_at: vec![DEAD; slots],
            tree: vec![0; slots + 1],
            next: 0,
            min_capacity: slots,
            prev: DEAD,
        }
    }

    /// Number of distinct blocks seen so far (the working set W, in blocks).
    pub fn distinct(&self) -> u64 {
        self.slot_of.len
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
        match self.slot_of.insert(block, now as u32) {
            None => {
                self.block_at[now] = block;
                self.add(now, 1);
                None
            }
            Some(old) => {
                let old = old as usize;
                // Live slots after `old` = all live slots - those up to and including `old`.
                let distance = self.slot_of.len - u64::from(self.prefix(old));
                self.block_at[old] = DEAD;
                self.add(old, -1);
                self.block_at[now] = block;
                self.add(now, 1);
                Some(distance)
            }
        }
    }

    /// Sum of live marks in slots `0..=slot`.
    #[inline]
    fn prefix(&self, slot: usize) -> u32 {
        let mut i = slot + 1;
        let mut sum = 0;
        while i > 0 {
            sum += self.tree[i];
            i &= i - 1;
        }
        sum
    }

    #[inline]
    fn add(&mut self, slot: usize, delta: i32) {
        let mut i = slot + 1;
        let n = self.tree.len();
        while i < n {
            self.tree[i] = self.tree[i].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Renumber live slots 0..live in time order and size the time line to 2·live.
    fn compact(&mut self) {
        let live = self.slot_of.len as usize;
        let capacity = (2 * live).max(self.min_capacity);
        let mut block_at = Vec::with_capacity(capacity);
        for &b in &self.block_at[..self.next] {
            if b != DEAD {
                self.slot_of.insert(b, block_at.len() as u32);
                block_at.push(b);
            }
        }
        debug_assert_eq!(block_at.len(), live);
        block_at.resize(capacity, DEAD);
        // Fenwick tree of `live` leading ones: node i covers (i - lowbit(i), i].
        let tree = (0..=capacity)
            .map(|i| {
                if i == 0 {
                    return 0;
                }
                let low = i - (i & i.wrapping_neg());
                i.min(live).saturating_sub(low) as u32
            })
            .collect();
        self.block_at = block_at;
        self.tree = tree;
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
