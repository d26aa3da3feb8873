//! The engine's scheduled run ends: a min-heap ordered by (time, sequence number), the
//! sequence number making equal-time run ends come out in the order they were scheduled
//! (deterministic runs). Arrivals and ticks are not in it: there is at most one pending
//! of each, so the engine compares them with the earliest run end instead of paying two
//! heap operations per task.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A scheduled run end of the segment on `unit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunEnd {
    /// `time << 64 | sequence number`: one integer comparison orders two run ends.
    key: u128,
    pub unit: u32,
}

impl RunEnd {
    pub fn t_ns(&self) -> u64 {
        (self.key >> 64) as u64
    }
    /// Unique and increasing in scheduling order (never 0, so 0 can mean "none").
    pub fn seq(&self) -> u64 {
        self.key as u64
    }
}

impl Ord for RunEnd {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

impl PartialOrd for RunEnd {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Debug, Default)]
pub struct RunEnds {
    heap: BinaryHeap<RunEnd>,
    seq: u64,
}

impl RunEnds {
    /// Schedules a run end on `unit` at `t_ns`; returns its sequence number.
    pub fn push(&mut self, t_ns: u64, unit: u32) -> u64 {
        self.seq += 1;
        self.heap.push(RunEnd {
            key: (t_ns as u128) << 64 | self.seq as u128,
            unit,
        });
        self.seq
    }

    /// Time of the earliest run end.
    pub fn next_ns(&self) -> Option<u64> {
        self.heap.peek().map(RunEnd::t_ns)
    }

    pub fn pop(&mut self) -> Option<RunEnd> {
        self.heap.pop()
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
