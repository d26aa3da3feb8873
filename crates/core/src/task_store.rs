//! The live tasks of an engine: a slab of [`TaskEntry`]s (dense slots reused through a
//! free list) and an index from [`TaskId`] to slot.
//!
//! Task ids are assigned in arrival order, so the index is mostly a window: slot numbers
//! of the consecutive ids from the oldest indexed live task on, one look-up being an
//! array access. Ids that fall out of the window (a task living long while many newer
//! ones finished, or ids out of order) go to a small hash map instead. The window is
//! kept within a constant factor of the number of live tasks, so memory grows with live
//! tasks, not with finished ones.

use crate::task::{Placement, QueueId, TaskEntry, TaskId};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::ops::Index;

/// No slot (a finished id inside the window).
const NONE: u32 = u32::MAX;

/// A slot holding a staged task (see [`TaskStore::stage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Staged(u32);

impl Staged {
    /// The slot the task will live in ([`TaskStore::slot_of`] once admitted).
    #[inline]
    pub fn slot(self) -> usize {
        self.0 as usize
    }
}

/// An id and its entry (`None` until the slot is first used; a freed slot keeps its
/// last entry until it is reused), aligned to cache lines so that an entry spans as few
/// of them as its size allows.
#[derive(Clone, Debug)]
#[repr(align(64))]
struct Slot {
    id: TaskId,
    entry: Option<TaskEntry>,
}

/// Live tasks by id. The API follows a map's (`insert`, `get`, `remove`...).
#[derive(Clone, Debug, Default)]
pub struct TaskStore {
    /// The slab: an id and its entry. Only slots the index points to are live (a staged
    /// task's slot is not, yet; a freed one holds its last task's entry until reused).
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// `window[i]`: the slot of task `base + i`, or `NONE`.
    window: VecDeque<u32>,
    base: TaskId,
    /// Slots of live tasks whose ids are outside the window.
    overflow: FxHashMap<TaskId, u32>,
    len: usize,
}

impl TaskStore {
    /// Number of live tasks.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn slot(&self, id: TaskId) -> Option<u32> {
        let i = id.wrapping_sub(self.base);
        if i < self.window.len() as u64 {
            let s = self.window[i as usize];
            (s != NONE).then_some(s)
        } else if self.overflow.is_empty() {
            None
        } else {
            self.overflow.get(&id).copied()
        }
    }

    /// The slot of a live task: unique among live tasks, reused once it ends, and below
    /// the most tasks live (or staged) at once, so it can index a dense `Vec`.
    #[inline]
    pub fn slot_of(&self, id: &TaskId) -> Option<usize> {
        self.slot(*id).map(|s| s as usize)
    }

    /// The entry in slot `slot` of a live task (from [`Self::slot_of`]), without the
    /// index look-up: for an engine that remembers where its running tasks are.
    #[inline]
    pub fn at_slot(&self, slot: usize) -> &TaskEntry {
        self.slots[slot].entry.as_ref().expect("a live slot")
    }

    #[inline]
    pub fn at_slot_mut(&mut self, slot: usize) -> &mut TaskEntry {
        self.slots[slot].entry.as_mut().expect("a live slot")
    }

    #[inline]
    pub fn contains_key(&self, id: &TaskId) -> bool {
        self.slot(*id).is_some()
    }

    #[inline]
    pub fn get(&self, id: &TaskId) -> Option<&TaskEntry> {
        self.slot(*id)
            .and_then(|s| self.slots[s as usize].entry.as_ref())
    }

    #[inline]
    pub fn get_mut(&mut self, id: &TaskId) -> Option<&mut TaskEntry> {
        self.slot(*id)
            .and_then(|s| self.slots[s as usize].entry.as_mut())
    }

    /// Adds a live task (replacing and returning the entry of the same id, if any).
    #[inline]
    pub fn insert(&mut self, id: TaskId, entry: TaskEntry) -> Option<TaskEntry> {
        if let Some(s) = self.slot(id) {
            return self.slots[s as usize].entry.replace(entry);
        }
        let s = self.free_slot(id);
        self.slots[s as usize].entry = Some(entry);
        self.len += 1;
        self.index(id, s);
        None
    }

    /// Puts a task that has not arrived yet into a free slot, where it will live once
    /// [`admit`](Self::admit)ted (so an engine's next arrival is built in place, not
    /// copied when it arrives). A staged task is not live: look-ups do not find it.
    #[inline]
    pub fn stage(&mut self, task: crate::task::Task) -> Staged {
        let s = self.free_slot(task.id);
        let (placement, runs, run_ns) = (Placement::Queued(QueueId::Central), 0, 0);
        match &mut self.slots[s as usize].entry {
            // Field by field over the previous task's entry: the task is copied once,
            // straight in (a whole new entry went through temporaries on the stack).
            Some(e) => {
                e.task = task;
                e.placement = placement;
                e.runs = runs;
                e.run_ns = run_ns;
            }
            fresh => {
                *fresh = Some(TaskEntry {
                    task,
                    placement,
                    runs,
                    run_ns,
                })
            }
        }
        Staged(s)
    }

    /// A free slot (reused, or a new one) for task `id`; its entry is stale or `None`.
    #[inline]
    fn free_slot(&mut self, id: TaskId) -> u32 {
        match self.free.pop() {
            Some(s) => {
                self.slots[s as usize].id = id;
                s
            }
            None => {
                self.slots.push(Slot { id, entry: None });
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// A staged task.
    #[inline]
    pub fn staged(&self, s: Staged) -> &TaskEntry {
        self.slots[s.0 as usize]
            .entry
            .as_ref()
            .expect("staged slot")
    }

    #[inline]
    pub fn staged_mut(&mut self, s: Staged) -> &mut TaskEntry {
        self.slots[s.0 as usize]
            .entry
            .as_mut()
            .expect("staged slot")
    }

    /// Makes a staged task live. Its id must not be live already (check with
    /// [`contains_key`](Self::contains_key)).
    #[inline]
    pub fn admit(&mut self, s: Staged) {
        let id = self.slots[s.0 as usize].id;
        debug_assert!(!self.contains_key(&id), "task {id} is live already");
        self.len += 1;
        self.index(id, s.0);
    }

    /// Drops a staged task that never became live.
    pub fn unstage(&mut self, s: Staged) {
        self.slots[s.0 as usize].entry = None;
        self.free.push(s.0);
    }

    /// Records that `id` lives in slot `s`.
    #[inline]
    fn index(&mut self, id: TaskId, s: u32) {
        if self.window.is_empty() {
            self.base = id;
        }
        let Some(i) = id.checked_sub(self.base) else {
            self.overflow.insert(id, s);
            return;
        };
        if i < self.window.len() as u64 {
            self.window[i as usize] = s;
            return;
        }
        // Bounded by live tasks: beyond that, older ids move out to the hash map.
        let limit = 8 * self.len as u64 + 64;
        if i >= limit {
            self.spill_all();
            self.base = id;
            self.window.push_back(s);
            return;
        }
        self.window.resize(i as usize, NONE);
        self.window.push_back(s);
        while self.window.len() as u64 > limit {
            self.pop_front();
        }
    }

    /// Moves every windowed id to the hash map (the window restarts elsewhere).
    fn spill_all(&mut self) {
        while !self.window.is_empty() {
            self.pop_front();
        }
    }

    /// Drops the oldest id from the window, moving its slot to the hash map if live.
    fn pop_front(&mut self) {
        if let Some(s) = self.window.pop_front() {
            if s != NONE {
                self.overflow.insert(self.base, s);
            }
            self.base += 1;
        }
    }

    /// Removes a live task and returns its entry.
    #[inline]
    pub fn remove(&mut self, id: &TaskId) -> Option<TaskEntry> {
        let s = self.unindex(id)?;
        self.slots[s as usize].entry.take()
    }

    /// Forgets where `id` lives and frees its slot (whose entry the caller clears).
    #[inline]
    fn unindex(&mut self, id: &TaskId) -> Option<u32> {
        let i = id.wrapping_sub(self.base);
        let s = if i < self.window.len() as u64 {
            let s = std::mem::replace(&mut self.window[i as usize], NONE);
            if s == NONE {
                return None;
            }
            // Finished ids at the front leave the window.
            while self.window.front() == Some(&NONE) {
                self.window.pop_front();
                self.base += 1;
            }
            s
        } else {
            self.overflow.remove(id)?
        };
        self.len -= 1;
        self.free.push(s);
        Some(s)
    }

    /// Removes a live task; returns whether it was live. Its entry stays in the freed
    /// slot until the slot is reused: dropping it here would copy the whole entry
    /// through the stack (its shared kind and signature are released then).
    #[inline]
    pub fn discard(&mut self, id: &TaskId) -> bool {
        self.unindex(id).is_some()
    }

    /// The live tasks, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&TaskId, &TaskEntry)> {
        self.slots
            .iter()
            .enumerate()
            .filter(|&(s, slot)| self.slot(slot.id) == Some(s as u32))
            .filter_map(|(_, slot)| slot.entry.as_ref().map(|e| (&slot.id, e)))
    }

    /// Slab slots (used or free) plus index entries: what memory is proportional to.
    pub fn footprint(&self) -> usize {
        self.slots.len() + self.window.len() + self.overflow.len()
    }
}

impl Index<&TaskId> for TaskStore {
    type Output = TaskEntry;

    #[inline]
    fn index(&self, id: &TaskId) -> &TaskEntry {
        self.get(id)
            .unwrap_or_else(|| panic!("task {id} is not live"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{Placement, QueueId, Task};
    use std::collections::BTreeMap;

    fn entry(id: TaskId) -> TaskEntry {
        TaskEntry {
            task: Task::cpu(id, id),
            placement: Placement::Queued(QueueId::Central),
            runs: 0,
            run_ns: id,
        }
    }

    /// Random inserts and removes (ids mostly increasing, some far out, some reused)
    /// agree with a map.
    #[test]
    fn behaves_like_a_map() {
        let mut store = TaskStore::default();
        let mut map = BTreeMap::new();
        let mut x: u64 = 12345;
        let mut next = 0;
        for _ in 0..50_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = x >> 33;
            let id = match r % 10 {
                0..=3 => {
                    next += 1 + r % 3;
                    next
                }
                4 => r % 1_000_000_000,
                _ => *map
                    .keys()
                    .nth((r as usize / 10) % map.len().max(1))
                    .unwrap_or(&0),
            };
            if r % 10 <= 4 {
                assert_eq!(store.insert(id, entry(id)), map.insert(id, entry(id)));
            } else {
                assert_eq!(store.remove(&id), map.remove(&id));
            }
            assert_eq!(store.len(), map.len());
            let probe = r % (next + 2);
            assert_eq!(store.get(&probe), map.get(&probe));
        }
        let mut all: Vec<TaskId> = store
            .iter()
            .map(|(&id, e)| {
                assert_eq!(e.run_ns, id);
                id
            })
            .collect();
        all.sort_unstable();
        assert_eq!(all, map.keys().copied().collect::<Vec<_>>());
    }

    /// Staged tasks are invisible until admitted; unstaged ones free their slot.
    #[test]
    fn staged_tasks_become_live_when_admitted() {
        let mut store = TaskStore::default();
        store.insert(1, entry(1));
        let a = store.stage(entry(2).task);
        let b = store.stage(entry(3).task);
        assert_eq!(store.staged(a).task.id, 2);
        assert!(!store.contains_key(&2));
        assert_eq!(store.len(), 1);
        assert_eq!(store.iter().count(), 1);
        store.staged_mut(a).run_ns = 7;
        store.admit(a);
        assert_eq!(store[&2].run_ns, 7);
        assert_eq!(store.len(), 2);
        store.unstage(b);
        assert!(!store.contains_key(&3));
        let ids: Vec<TaskId> = store.iter().map(|(&id, _)| id).collect();
        assert_eq!(ids, [1, 2]);
        // The freed slot is reused.
        let c = store.stage(entry(4).task);
        assert_eq!(c, b);
    }

    /// One task living forever while a million finish: memory stays small.
    #[test]
    fn memory_follows_live_tasks() {
        let mut store = TaskStore::default();
        store.insert(0, entry(0));
        for id in 1..200_000 {
            store.insert(id, entry(id));
            if id >= 3 {
                store.remove(&(id - 2));
            }
        }
        assert_eq!(store.len(), 3);
        assert!(store.footprint() < 200, "footprint {}", store.footprint());
        assert_eq!(store[&0].run_ns, 0);
        assert_eq!(store[&199_999].run_ns, 199_999);
    }
}
