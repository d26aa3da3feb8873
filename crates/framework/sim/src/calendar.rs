//! A calendar queue (R. Brown, CACM 1988): a min-priority queue of `u128` keys whose
//! high 64 bits are a time in nanoseconds, with O(1) expected push and pop.
//!
//! Keys are kept unsorted in buckets of `2^shift` ns, bucket `(t >> shift) mod n` as on
//! a wall calendar; the minimum is found by walking the buckets from the current one,
//! taking from each only keys of the current "year". With at least as many buckets as
//! keys and a width near the mean gap between successive minimums, a pop looks at a key
//! or two, where a binary heap of ~1,000 run ends walks a chain of ten dependent
//! comparisons.
//!
//! Layout, for the cache: the buckets are one flat array of fixed slots (a few keys
//! each, in place) and their key counts a separate byte array, so a push is one store to
//! a random bucket that nothing waits on, and the walk over empty buckets reads only the
//! small count array. The rare key whose bucket is full waits in a binary heap beside
//! them (the "spill"), which every take consults while it holds a key.
//!
//! Pops return the exact minimum whatever the tuning, so the order is the heap's (and
//! runs stay deterministic); the bucket count follows the size and the width follows the
//! measured gap between pops, only for speed.
//!
//! Hand-written: no maintained crate offers a calendar queue; the std `BinaryHeap` it
//! replaced is measured beside it in `docs/dev/simulator-performance.md`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Fewest buckets.
const MIN_BUCKETS: usize = 64;

/// Keys a bucket holds in place (two cache lines). In the simulator's bench (`hetsched
/// bench sim`) a push finds about one key (0.8-1.1) in its bucket on average, and eight
/// spill one push in 500 to 1,000; four spilled one in 25 to 40.
const BUCKET_KEYS: usize = 8;

/// A bucket's keys, in `keys[..count]` (its count is kept apart, in [`Calendar::counts`]),
/// unordered: a push stores without reading the bucket, so the cache miss of landing on a
/// random bucket does not stall it.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
struct Bucket {
    keys: [u128; BUCKET_KEYS],
}

const EMPTY: Bucket = Bucket {
    keys: [0; BUCKET_KEYS],
};

#[derive(Debug)]
pub struct Calendar {
    buckets: Vec<Bucket>,
    /// Keys in each bucket; bytes, so that a walk over empty buckets reads one array that
    /// stays in the L1 cache, not the buckets.
    counts: Vec<u8>,
    /// Keys that found their bucket full (many equal or close times): a binary heap whose
    /// smallest key every take compares with. Rare unless times crowd.
    spill: BinaryHeap<Reverse<u128>>,
    /// Bucket width is `2^shift` ns.
    shift: u32,
    /// Absolute bucket number (`time >> shift`) where the walk starts: no key is earlier.
    cur: u64,
    /// Keys in the buckets and the spill (not counting `front`).
    len: usize,
    /// The minimum, taken out by [`Self::peek`]; every other key is larger.
    front: Option<u128>,
    /// Time of the last key popped: no key is earlier.
    last_ns: u64,
    /// Pops since the width was last checked, and the time of the first of them.
    pops: usize,
    window_start_ns: u64,
}

impl Default for Calendar {
    fn default() -> Self {
        Calendar {
            buckets: vec![EMPTY; MIN_BUCKETS],
            counts: vec![0; MIN_BUCKETS],
            spill: BinaryHeap::new(),
            // 1 ms; the first window of pops measures the real gap.
            shift: 20,
            cur: 0,
            len: 0,
            front: None,
            last_ns: 0,
            pops: 0,
            window_start_ns: 0,
        }
    }
}

#[inline]
fn time(key: u128) -> u64 {
    (key >> 64) as u64
}

impl Calendar {
    pub fn is_empty(&self) -> bool {
        self.len == 0 && self.front.is_none()
    }

    #[inline]
    pub fn push(&mut self, key: u128) {
        match self.front {
            Some(f) if key < f => {
                self.front = Some(key);
                self.insert(f);
            }
            _ => self.insert(key),
        }
        self.len += 1;
        if self.len > self.counts.len() {
            self.rebuild(self.counts.len() * 2, self.shift);
        }
    }

    /// Puts `key` in its bucket, or in the spill if that is full (not counted in `len`).
    #[inline]
    fn insert(&mut self, key: u128) {
        let abs = time(key) >> self.shift;
        self.cur = self.cur.min(abs);
        let b = abs as usize & (self.counts.len() - 1);
        let count = self.counts[b] as usize;
        if count < BUCKET_KEYS {
            self.buckets[b].keys[count] = key;
            self.counts[b] += 1;
        } else {
            self.spill_key(key);
        }
    }

    #[cold]
    #[inline(never)]
    fn spill_key(&mut self, key: u128) {
        self.spill.push(Reverse(key));
    }

    /// The smallest key.
    #[inline]
    pub fn peek(&mut self) -> Option<u128> {
        if self.front.is_none() && self.len > 0 {
            self.len -= 1;
            self.front = Some(self.take_min());
        }
        self.front
    }

    /// Removes and returns the smallest key.
    #[inline]
    pub fn pop(&mut self) -> Option<u128> {
        let key = self.peek()?;
        self.front = None;
        self.last_ns = time(key);
        self.pops += 1;
        if self.pops >= self.counts.len() {
            self.retune();
        }
        Some(key)
    }

    /// Takes the smallest key out of the buckets and the spill (one of them has a key).
    #[inline]
    fn take_min(&mut self) -> u128 {
        if !self.spill.is_empty() {
            return self.take_min_or_spilled();
        }
        match self.find(self.counts.len() as u64) {
            Some((b, pos, key)) => self.take(b, pos, key),
            None => self.take_min_after_empty_year(),
        }
    }

    /// [`Self::take_min`] when keys are spilled: the spill's smallest key is smaller than
    /// every key of a later bucket, so the walk need not go past its bucket.
    #[inline(never)]
    fn take_min_or_spilled(&mut self) -> u128 {
        let Some(&Reverse(spilled)) = self.spill.peek() else {
            unreachable!("called with a spilled key")
        };
        let ahead = (time(spilled) >> self.shift) - self.cur;
        match self.find(ahead.saturating_add(1).min(self.counts.len() as u64)) {
            Some((b, pos, key)) if key < spilled => self.take(b, pos, key),
            Some(_) => self.take_spilled(),
            // The walk passed the spill's bucket: its key is the smallest.
            None if ahead < self.counts.len() as u64 => self.take_spilled(),
            None => self.take_min_after_empty_year(),
        }
    }

    /// The first key of its own year in the `walk` buckets from `cur` (bucket, position,
    /// key): the smallest key in the buckets, if one is of this year.
    #[inline(always)]
    fn find(&self, walk: u64) -> Option<(usize, usize, u128)> {
        let mask = self.counts.len() - 1;
        for i in 0..walk {
            let abs = self.cur.wrapping_add(i);
            let b = abs as usize & mask;
            let count = self.counts[b] as usize;
            if count == 0 {
                continue;
            }
            let keys = &self.buckets[b].keys[..count];
            // Keys of later years share the bucket, but each is larger than any key of
            // this year, so the bucket's minimum tells whether this year has one.
            let (mut pos, mut key) = (0, keys[0]);
            for (p, &k) in keys.iter().enumerate().skip(1) {
                if k < key {
                    (pos, key) = (p, k);
                }
            }
            if time(key) >> self.shift == abs {
                return Some((b, pos, key));
            }
        }
        None
    }

    /// Takes `key`, at `pos` in bucket `b`, out: the smallest key.
    #[inline(always)]
    fn take(&mut self, b: usize, pos: usize, key: u128) -> u128 {
        let count = self.counts[b] as usize;
        let keys = &mut self.buckets[b].keys;
        keys[pos] = keys[count - 1];
        self.counts[b] -= 1;
        self.cur = time(key) >> self.shift;
        key
    }

    /// Takes the smallest spilled key out (the smallest of all).
    fn take_spilled(&mut self) -> u128 {
        let Reverse(key) = self.spill.pop().expect("a spilled key");
        self.cur = time(key) >> self.shift;
        key
    }

    /// A whole year without a key: takes the smallest one wherever it is.
    #[cold]
    #[inline(never)]
    fn take_min_after_empty_year(&mut self) -> u128 {
        let in_buckets = (self.counts.iter().enumerate())
            .flat_map(|(b, &count)| (0..count as usize).map(move |p| (b, p)))
            .min_by_key(|&(b, p)| self.buckets[b].keys[p]);
        let key = match in_buckets {
            Some((b, p))
                if self
                    .spill
                    .peek()
                    .is_none_or(|s| self.buckets[b].keys[p] < s.0) =>
            {
                self.take(b, p, self.buckets[b].keys[p])
            }
            _ => self.take_spilled(),
        };
        // The buckets are too narrow for the gaps now (a year's walk came up empty):
        // widen them at once so that a year spans this gap, rather than walking empty
        // years until the next retune.
        let year = (time(key).saturating_sub(self.last_ns) / self.counts.len() as u64).max(1);
        let shift = year.next_power_of_two().trailing_zeros() + 1;
        if shift > self.shift {
            self.rebuild(self.counts.len(), shift);
        }
        key
    }

    /// After a window of pops: fits the bucket count to the size and the width to the
    /// mean gap between pops (rounded down to a power of two), rebuilding if either moved:
    /// a pop looks at one or two buckets and a key or two. (Rounded up, buckets near the
    /// front held twice the keys: more keys compared per pop, and more spilled.)
    #[cold]
    #[inline(never)]
    fn retune(&mut self) {
        let gap = (self.last_ns - self.window_start_ns) / self.pops as u64;
        self.pops = 0;
        self.window_start_ns = self.last_ns;
        let shift = gap.max(1).ilog2();
        let mut n = self.counts.len();
        if self.len < n / 4 && n > MIN_BUCKETS {
            n /= 2;
        }
        // Within a factor of two is near enough: no rebuild for jitter.
        if n != self.counts.len() || shift > self.shift + 1 || shift + 1 < self.shift {
            self.rebuild(n, shift);
        }
    }

    /// Re-buckets every key into `n` buckets of width `2^shift`.
    #[cold]
    #[inline(never)]
    fn rebuild(&mut self, n: usize, shift: u32) {
        let mut keys: Vec<u128> = self.spill.drain().map(|Reverse(k)| k).collect();
        for (bucket, &count) in self.buckets.iter().zip(&self.counts) {
            keys.extend_from_slice(&bucket.keys[..count as usize]);
        }
        self.buckets.resize(n, EMPTY);
        self.counts.clear();
        self.counts.resize(n, 0);
        self.shift = shift;
        self.cur = self.last_ns >> shift;
        for key in keys {
            self.insert(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pushes and pops in a pattern like the engine's (keys at or after the last pop,
    /// over scales from nanoseconds to hours, sizes growing and shrinking, equal times)
    /// come out exactly as from a binary heap.
    #[test]
    fn pops_in_the_order_of_a_heap() {
        let mut cal = Calendar::default();
        let mut heap = BinaryHeap::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut now = 0u64;
        let mut seq = 0u64;
        let mut spilled = 0;
        for round in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Phases of different time scales and sizes.
            let scale = [1u64, 1_000, 10_000_000, 3_600_000_000_000][(round / 25_000 % 4) as usize];
            let target = [10usize, 1_000, 3, 5_000][(round / 40_000 % 4) as usize];
            if heap.len() < target || x.is_multiple_of(3) {
                seq += 1;
                let dt = if x.is_multiple_of(17) {
                    0
                } else {
                    x % scale.max(1) * (x % 5 + 1)
                };
                let key = ((now + dt) as u128) << 64 | seq as u128;
                cal.push(key);
                heap.push(Reverse(key));
            } else {
                let got = cal.pop();
                assert_eq!(got, heap.pop().map(|r| r.0), "round {round}");
                now = time(got.unwrap());
            }
            assert_eq!(cal.peek(), heap.peek().map(|r| r.0));
            spilled += !cal.spill.is_empty() as usize;
        }
        while let Some(Reverse(k)) = heap.pop() {
            assert_eq!(cal.pop(), Some(k));
        }
        assert!(cal.is_empty());
        assert_eq!(cal.pop(), None);
        // The phases of equal times crowd buckets: the spill was in play.
        assert!(spilled > 1_000, "spill held keys in {spilled} rounds");
    }

    /// A key spilled far ahead stays in the spill while the buckets turn over many
    /// times, and crowded equal times come out by their low bits; both as from a heap.
    #[test]
    fn spilled_keys_come_out_in_order() {
        let mut cal = Calendar::default();
        let mut heap = BinaryHeap::new();
        let mut push = |cal: &mut Calendar, key: u128| {
            cal.push(key);
            heap.push(Reverse(key));
        };
        // Twenty keys at 5 s: the bucket takes eight, the rest spill, in scrambled order.
        for i in 0..20u128 {
            push(&mut cal, 5_000_000_000u128 << 64 | (i * 7 % 20));
        }
        assert_eq!(cal.spill.len(), 20 - BUCKET_KEYS);
        // Meanwhile a stream of keys a microsecond apart, a few pending at a time.
        let mut popped = Vec::new();
        for t in 1..50_000u128 {
            push(&mut cal, (t * 1_000) << 64 | 1 << 20);
            if t % 2 == 0 {
                popped.extend(cal.pop().into_iter().chain(cal.pop()));
            }
            if t == 25_000 {
                assert_eq!(cal.spill.len(), 20 - BUCKET_KEYS, "still spilled");
            }
        }
        popped.extend(std::iter::from_fn(|| cal.pop()));
        let expected: Vec<u128> = std::iter::from_fn(|| heap.pop().map(|r| r.0)).collect();
        assert_eq!(popped, expected);
    }
}
