//! Which simulated thread issues next: a tournament tree over the threads' next-issue
//! cycles.
//!
//! In exact time order the earliest thread changes after almost every access, so the
//! scheduler is on the per-access path. A binary heap needs a pop and a push (two
//! sifts with data-dependent branches) per switch; this tree needs one leaf update,
//! a fixed walk of log2(threads) branch-free `min`s, which also yields the earliest
//! *other* thread — exactly what the running thread is compared against.

/// Bits of a key holding the thread index (chip::MAX_CORES = 4096 threads at most).
const THREAD_BITS: u32 = 12;

/// Key of a thread that issues nothing (finished, or no thread at this leaf).
pub const IDLE: u64 = u64::MAX;

/// A thread's key: issue cycle in the high bits, thread index in the low bits, so
/// comparing keys orders by cycle and breaks ties by thread index.
#[inline]
pub fn key(cycle: u64, thread: usize) -> u64 {
    debug_assert!(cycle < 1 << (64 - THREAD_BITS) && thread < 1 << THREAD_BITS);
    cycle << THREAD_BITS | thread as u64
}

/// The issue cycle of a key.
#[inline]
pub fn cycle(key: u64) -> u64 {
    key >> THREAD_BITS
}

/// The thread of a key.
#[inline]
pub fn thread(key: u64) -> usize {
    (key & ((1 << THREAD_BITS) - 1)) as usize
}

/// Nodes of the largest tree (4096 leaves).
const NODES: usize = 2 << THREAD_BITS;

/// The earliest key among all threads, kept as a complete binary tree of minima.
#[derive(Clone, Debug)]
pub struct IssueOrder {
    /// Number of leaves: the thread count rounded up to a power of two.
    leaves: usize,
    /// nodes[1] is the root; thread t's leaf is nodes[leaves + t]; each inner node
    /// holds the minimum of its two children. Fixed size so that masking an index with
    /// `NODES - 1` proves it in bounds (no bounds checks on the walk).
    nodes: Box<[u64; NODES]>,
}

impl IssueOrder {
    /// A tree for `threads` threads, all idle.
    pub fn new(threads: usize) -> Self {
        let leaves = threads.max(1).next_power_of_two();
        assert!(
            2 * leaves <= NODES,
            "{threads} threads: at most {} supported",
            NODES / 2
        );
        IssueOrder {
            leaves,
            nodes: vec![IDLE; NODES]
                .into_boxed_slice()
                .try_into()
                .expect("NODES elements"),
        }
    }

    /// Sets `thread`'s key and returns the earliest key among the other threads.
    #[inline]
    pub fn set(&mut self, thread: usize, key: u64) -> u64 {
        let mut n = self.leaves + thread;
        self.nodes[n & (NODES - 1)] = key;
        let (mut subtree, mut others) = (key, IDLE);
        while n > 1 {
            // The sibling subtrees along the path to the root partition the other leaves.
            let sibling = self.nodes[(n ^ 1) & (NODES - 1)];
            others = others.min(sibling);
            subtree = subtree.min(sibling);
            n >>= 1;
            self.nodes[n & (NODES - 1)] = subtree;
        }
        others
    }

    /// The earliest key of all threads ([`IDLE`] when none issues).
    #[inline]
    pub fn first(&self) -> u64 {
        self.nodes[1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// After any sequence of updates, `first` is the minimum key and `set` returns
        /// the minimum over the other threads, as a linear scan finds them.
        #[test]
        fn matches_a_linear_scan(
            threads in 1usize..70,
            updates in prop::collection::vec((0usize..70, 0u64..50, any::<bool>()), 0..200),
        ) {
            let mut order = IssueOrder::new(threads);
            let mut keys = vec![IDLE; threads];
            for (t, c, idle) in updates {
                let t = t % threads;
                let k = if idle { IDLE } else { key(c, t) };
                keys[t] = k;
                let others = order.set(t, k);
                let expect = (0..threads).filter(|&u| u != t).map(|u| keys[u]).min();
                prop_assert_eq!(others, expect.unwrap_or(IDLE));
                prop_assert_eq!(order.first(), *keys.iter().min().unwrap());
            }
        }
    }

    #[test]
    fn keys_order_by_cycle_then_thread() {
        assert!(key(5, 3) < key(5, 4) && key(5, 4095) < key(6, 0));
        assert_eq!((cycle(key(77, 9)), thread(key(77, 9))), (77, 9));
    }
}
