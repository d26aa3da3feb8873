//! The engine's scheduled run ends: a min-queue ordered by (time, sequence number), the
//! sequence number making equal-time run ends come out in the order they were scheduled
//! (deterministic runs). Arrivals and ticks are not in it: there is at most one pending
//! of each, so the engine compares them with the earliest run end instead of paying two
//! queue operations per task. The queue is a [`Calendar`] queue: a binary heap (and a
//! 4-ary heap, a radix heap and a tournament tree over units) measured slower.

use crate::calendar::Calendar;

/// Bits of the key's low word that hold the unit; the sequence number is above them.
const UNIT_BITS: u32 = 20;

/// A scheduled run end of the segment on `unit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunEnd {
    /// `time << 64 | sequence number << 20 | unit`: one integer comparison orders two
    /// run ends, and an entry is 16 bytes.
    key: u128,
    pub unit: u32,
}

impl RunEnd {
    pub fn t_ns(&self) -> u64 {
        (self.key >> 64) as u64
    }
    /// Unique and increasing in scheduling order (never 0, so 0 can mean "none").
    pub fn seq(&self) -> u64 {
        (self.key as u64) >> UNIT_BITS
    }
}

#[derive(Debug, Default)]
pub struct RunEnds {
    /// The packed keys.
    queue: Calendar,
    seq: u64,
}

impl RunEnds {
    /// Units a machine may have (the unit id shares the key with the sequence number,
    /// which has 44 bits: 17 × 10^12 run ends).
    pub const MAX_UNITS: usize = 1 << UNIT_BITS;

    /// Schedules a run end on `unit` (below [`Self::MAX_UNITS`]) at `t_ns`; returns its
    /// sequence number.
    #[inline]
    pub fn push(&mut self, t_ns: u64, unit: u32) -> u64 {
        debug_assert!((unit as usize) < Self::MAX_UNITS);
        self.seq += 1;
        let low = self.seq << UNIT_BITS | unit as u64;
        self.queue.push((t_ns as u128) << 64 | low as u128);
        self.seq
    }

    /// Time of the earliest run end.
    #[inline]
    pub fn next_ns(&mut self) -> Option<u64> {
        self.queue.peek().map(|k| (k >> 64) as u64)
    }

    #[inline]
    pub fn pop(&mut self) -> Option<RunEnd> {
        self.queue.pop().map(|key| RunEnd {
            key,
            unit: (key as u32) & ((1 << UNIT_BITS) - 1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_scheduling_order() {
        let mut q = RunEnds::default();
        let late = q.push(20, 0);
        let first_at_10 = q.push(10, 1);
        let second_at_10 = q.push(10, 2);
        assert_eq!(q.next_ns(), Some(10));
        let order: Vec<(u64, u32)> =
            std::iter::from_fn(|| q.pop().map(|e| (e.seq(), e.unit))).collect();
        assert_eq!(order, [(first_at_10, 1), (second_at_10, 2), (late, 0)]);
        assert_eq!(q.next_ns(), None);
    }
}
