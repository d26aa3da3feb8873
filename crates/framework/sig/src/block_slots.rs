//! The exact analyser's block → slot maps.
//!
//! Two layouts of one map: [`PagedSlots`] for a full trace, whose blocks come in dense
//! runs, and [`HashedSlots`] for a spatially sampled one, whose blocks are scattered
//! (about one per 1/R blocks) so that dense pages would be mostly empty.

use rustc_hash::FxHashMap;

/// Block → slot of its latest access.
pub trait SlotMap {
    /// An empty map.
    fn new() -> Self;
    /// Number of blocks with a slot.
    fn block_count(&self) -> u64;
    /// Set the slot of `block`, returning the previous one (if any).
    fn insert(&mut self, block: u64, slot: u32) -> Option<u32>;
    /// Start loading the entry of `block` into the cache (a hint; may do nothing).
    fn prefetch(&self, _block: u64) {}
}

/// Blocks per page (256 blocks = 16 KB of address space).
const PAGE_SHIFT: u32 = 8;
const PAGE_LEN: usize = 1 << PAGE_SHIFT;
/// "No slot".
const NONE: u32 = u32::MAX;

/// A hash map of dense pages: programs touch memory in runs, so a page lookup is mostly
/// the cached last page and a slot is one array index, far fewer cache misses than one
/// hash-table entry per block.
pub struct PagedSlots {
    index: FxHashMap<u64, u32>,
    pages: Vec<[u32; PAGE_LEN]>,
    last_page: u64,
    last_index: usize,
    len: u64,
}

impl PagedSlots {
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
}

impl SlotMap for PagedSlots {
    #[inline]
    fn prefetch(&self, block: u64) {
        let page = block >> PAGE_SHIFT;
        if page == self.last_page {
            return; // most likely cached already
        }
        if let Some(&i) = self.index.get(&page) {
            crate::prefetch::prefetch(&self.pages[i as usize][(block as usize) & (PAGE_LEN - 1)]);
        }
    }

    fn new() -> Self {
        PagedSlots {
            index: FxHashMap::default(),
            pages: Vec::new(),
            last_page: u64::MAX,
            last_index: 0,
            len: 0,
        }
    }

    fn block_count(&self) -> u64 {
        self.len
    }

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

/// One hash-table entry per block.
pub struct HashedSlots(FxHashMap<u64, u32>);

impl SlotMap for HashedSlots {
    fn new() -> Self {
        HashedSlots(FxHashMap::default())
    }

    fn block_count(&self) -> u64 {
        self.0.len() as u64
    }

    #[inline]
    fn insert(&mut self, block: u64, slot: u32) -> Option<u32> {
        self.0.insert(block, slot)
    }
}
