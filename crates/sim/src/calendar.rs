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
//! Pops return the exact minimum whatever the tuning, so the order is the heap's (and
//! runs stay deterministic); the bucket count follows the size and the width follows the
//! measured gap between pops, only for speed.
//!
//! Hand-written: no maintained crate offers a calendar queue; the std `BinaryHeap` it
//! replaced is measured beside it in `docs/simulator.md`.

/// Fewest buckets.
const MIN_BUCKETS: usize = 64;

#[derive(Debug)]
pub struct Calendar {
    buckets: Vec<Vec<u128>>,
    /// Bucket width is `2^shift` ns.
    shift: u32,
    /// Absolute bucket number (`time >> shift`) where the walk starts: no key is earlier.
    cur: u64,
    /// Keys in the buckets (not counting `front`).
    len: usize,
    /// The minimum, taken out of its bucket by [`Self::peek`]; every bucketed key is
    /// larger.
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
            buckets: vec![Vec::new(); MIN_BUCKETS],
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
    }

    #[inline]
    fn insert(&mut self, key: u128) {
        let abs = time(key) >> self.shift;
        self.cur = self.cur.min(abs);
        let mask = self.buckets.len() - 1;
        self.buckets[abs as usize & mask].push(key);
        self.len += 1;
        if self.len > self.buckets.len() {
            self.rebuild(self.buckets.len() * 2, self.shift);
        }
    }

    /// The smallest key.
    #[inline]
    pub fn peek(&mut self) -> Option<u128> {
        if self.front.is_none() {
            self.front = self.take_min();
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
        if self.pops >= self.buckets.len() {
            self.retune();
        }
        Some(key)
    }

    /// Takes the smallest bucketed key out of its bucket.
    fn take_min(&mut self) -> Option<u128> {
        if self.len == 0 {
            return None;
        }
        let mask = self.buckets.len() - 1;
        for i in 0..self.buckets.len() as u64 {
            let abs = self.cur.wrapping_add(i);
            let bucket = &mut self.buckets[abs as usize & mask];
            // Keys of later years share the bucket, but each is larger than any key of
            // this year, so the bucket's minimum tells whether this year has one.
            let (mut pos, mut key) = (usize::MAX, u128::MAX);
            for (p, &k) in bucket.iter().enumerate() {
                if k < key {
                    (pos, key) = (p, k);
                }
            }
            if pos != usize::MAX && time(key) >> self.shift == abs {
                bucket.swap_remove(pos);
                self.cur = abs;
                self.len -= 1;
                return Some(key);
            }
        }
        // A whole year without a key: jump to the smallest one.
        let (b, pos, key) = self
            .buckets
            .iter()
            .enumerate()
            .flat_map(|(b, keys)| keys.iter().enumerate().map(move |(p, &k)| (b, p, k)))
            .min_by_key(|&(_, _, k)| k)?;
        self.buckets[b].swap_remove(pos);
        self.cur = time(key) >> self.shift;
        self.len -= 1;
        // The buckets are too narrow for the gaps now (a year's walk came up empty):
        // widen them at once so that a year spans this gap, rather than walking empty
        // years until the next retune.
        let year = (time(key).saturating_sub(self.last_ns) / self.buckets.len() as u64).max(1);
        let shift = year.next_power_of_two().trailing_zeros() + 1;
        if shift > self.shift {
            self.rebuild(self.buckets.len(), shift);
        }
        Some(key)
    }

    /// After a window of pops: fits the bucket count to the size and the width to the
    /// mean gap between pops (rounded up to a power of two), rebuilding if either moved:
    /// about one key per bucket, and a pop that looks at one or two buckets.
    fn retune(&mut self) {
        let gap = (self.last_ns - self.window_start_ns) / self.pops as u64;
        self.pops = 0;
        self.window_start_ns = self.last_ns;
        let shift = gap.max(1).next_power_of_two().trailing_zeros();
        let mut n = self.buckets.len();
        if self.len < n / 4 && n > MIN_BUCKETS {
            n /= 2;
        }
        // Within a factor of two is near enough: no rebuild for jitter.
        if n != self.buckets.len() || shift > self.shift + 1 || shift + 1 < self.shift {
            self.rebuild(n, shift);
        }
    }

    /// Re-buckets every key into `n` buckets of width `2^shift`.
    fn rebuild(&mut self, n: usize, shift: u32) {
        let keys: Vec<u128> = self.buckets.iter_mut().flat_map(|b| b.drain(..)).collect();
        self.buckets.resize_with(n, Vec::new);
        self.shift = shift;
        self.cur = self.last_ns >> shift;
        self.len = 0;
        let mask = n - 1;
        for key in keys {
            let abs = time(key) >> shift;
            self.cur = self.cur.min(abs);
            self.buckets[abs as usize & mask].push(key);
            self.len += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

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
        }
        while let Some(Reverse(k)) = heap.pop() {
            assert_eq!(cal.pop(), Some(k));
        }
        assert!(cal.is_empty());
        assert_eq!(cal.pop(), None);
    }
}
