//! The queued task with the least key on a unit (cfs and affinity: the least vruntime;
//! ties: nearest the head), without scanning the queue on every pick and checkpoint.
//!
//! Scanning is quadratic in the number of waiting tasks (each of n picks or slices scans
//! up to n tasks: 40,000 waiting tasks took seconds). Short queues, the usual case, are
//! still scanned (nothing to maintain); once a queue is longer than [`SCAN_MAX`], a
//! min-heap of (key, queue order, task) answers in O(log n).
//!
//! The engine owns the queues; the policy tells the index what it decided
//! ([`QueueIndex::pushed`] when a task goes to the back of a queue, [`QueueIndex::taken`]
//! when it leaves one), and the index checks each answer against the [`View`]: entries
//! of tasks that left are dropped lazily, and when the heap and the engine disagree (a
//! tick's migration the engine has not made yet, or an engine that moved a task on its
//! own) the answer comes from a scan, so it is always the scan's answer.

use hetsched_core::policy::{Queue, UnitId, View};
use hetsched_core::task::{Placement, QueueId, TaskId};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Queues up to this long are scanned.
pub const SCAN_MAX: usize = 16;

/// No queue position (the task is in no indexed queue).
const NONE: u64 = 0;

#[derive(Default)]
pub struct QueueIndex {
    /// Per unit: (key, order, task) of its queued tasks, plus entries gone stale; empty
    /// while the unit's queue is short.
    heaps: Vec<BinaryHeap<Reverse<(u64, u64, TaskId)>>>,
    /// Per task slot: its order number in the queue it was last pushed to (`NONE` once
    /// taken). Order numbers grow with every push, as positions in a queue do.
    order: Vec<u64>,
    next: u64,
}

impl QueueIndex {
    /// `task` (in `slot`) goes to the back of unit `u`'s queue with `key`.
    #[inline]
    pub fn pushed(&mut self, u: UnitId, task: TaskId, slot: usize, key: u64) {
        if slot >= self.order.len() {
            self.order.resize(slot + 1, NONE);
        }
        self.next += 1;
        self.order[slot] = self.next;
        if let Some(h) = self.heaps.get_mut(u as usize).filter(|h| !h.is_empty()) {
            h.push(Reverse((key, self.next, task)));
        }
    }

    /// The task in `slot` left the queue it was in (its heap entry is now stale).
    #[inline]
    pub fn taken(&mut self, slot: usize) {
        if let Some(o) = self.order.get_mut(slot) {
            *o = NONE;
        }
    }

    /// The queued task of `u` with the least `key` (ties: nearest the head), with its key
    /// and slot. Inlined into its callers (cfs asks on every pick and slice end, mostly
    /// of empty or short queues: a call cost as much as the scan).
    #[inline(always)]
    pub fn least(
        &mut self,
        view: &View,
        u: UnitId,
        key: impl Fn(TaskId, usize) -> u64,
    ) -> Option<(u64, TaskId, usize)> {
        let queue = view.queue(u);
        if queue.len() > SCAN_MAX {
            return self.indexed(view, u, &key);
        }
        if let Some(h) = self.heaps.get_mut(u as usize).filter(|h| !h.is_empty()) {
            h.clear();
        }
        scan(queue, &key)
    }

    #[inline(never)]
    fn indexed(
        &mut self,
        view: &View,
        u: UnitId,
        key: &impl Fn(TaskId, usize) -> u64,
    ) -> Option<(u64, TaskId, usize)> {
        let queue = view.queue(u);
        if self.heaps.len() <= u as usize {
            self.heaps.resize_with(u as usize + 1, BinaryHeap::new);
        }
        // Stale entries are at most as many as pushes since the last rebuild: rebuild
        // when they outnumber the live ones.
        if self.heaps[u as usize].len() > 2 * queue.len() {
            self.heaps[u as usize].clear();
        }
        if self.heaps[u as usize].is_empty() {
            self.rebuild(view, u, key);
        }
        let heap = &mut self.heaps[u as usize];
        while let Some(&Reverse((k, order, t))) = heap.peek() {
            let Some(e) = view.entry(t) else {
                heap.pop(); // the task ended
                continue;
            };
            let slot = view.slot(t);
            if self.order.get(slot) != Some(&order) {
                heap.pop(); // taken, or pushed again since
                continue;
            }
            if e.placement() == Placement::Queued(QueueId::Unit(u)) && key(t, slot) == k {
                return Some((k, t, slot));
            }
            break; // the engine has not caught up, or moved the task itself
        }
        scan(queue, key)
    }

    /// Indexes `u`'s queue afresh, numbering its tasks in queue order.
    #[cold]
    fn rebuild(&mut self, view: &View, u: UnitId, key: &impl Fn(TaskId, usize) -> u64) {
        let queue = view.queue(u);
        let mut entries = Vec::with_capacity(queue.len());
        for (slot, e) in queue.entries() {
            let t = e.task.id;
            if slot >= self.order.len() {
                self.order.resize(slot + 1, NONE);
            }
            self.next += 1;
            self.order[slot] = self.next;
            entries.push(Reverse((key(t, slot), self.next, t)));
        }
        self.heaps[u as usize] = BinaryHeap::from(entries);
    }
}

/// The least key by a scan (ties: nearest the head).
#[inline]
fn scan(queue: Queue, key: &impl Fn(TaskId, usize) -> u64) -> Option<(u64, TaskId, usize)> {
    let mut best: Option<(u64, TaskId, usize)> = None;
    for (slot, e) in queue.entries() {
        let t = e.task.id;
        let k = key(t, slot);
        if best.is_none_or(|(b, _, _)| k < b) {
            best = Some((k, t, slot));
        }
    }
    best
}
