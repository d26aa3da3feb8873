//! The live tasks of an engine: a slab of [`TaskEntry`]s (dense slots reused through a
//! free list, in chunks freed as they empty: [`Slab`]) and an index from [`TaskId`] to
//! slot ([`IdMap`]: mostly a window over consecutive ids), so that memory grows with live
//! tasks, not with finished ones.
//!
//! A slot is its entry alone (48 bytes; its id is the task's): a million waiting tasks
//! are mostly slots.

use crate::id_map::IdMap;
use crate::slab::Slab;
use crate::task::{Placement, QueueId, TaskEntry, TaskId};
use std::ops::Index;

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

/// Live tasks by id. The API follows a map's (`insert`, `get`, `remove`...).
#[derive(Clone, Debug, Default)]
pub struct TaskStore {
    /// The slab: each slot's entry (a [default](TaskEntry::default) one until the slot
    /// is first used). Only slots the index points to are live (a staged task's slot
    /// is not, yet); one freed by `discard` or `unstage` holds its last task's entry
    /// until it is reused or its chunk is freed (`remove` takes the entry out). Not
    /// `Option`s: the engines read a slot some twenty times per task, and each read
    /// tested the `Option` (about 2 % of `bench sim`'s instructions).
    slots: Slab<TaskEntry, 4096>,
    /// Slots freed, to reuse (a stack: the latest first), and the first slot never used.
    free: Vec<u32>,
    next: u32,
    /// The slot of each live task.
    index: IdMap<u32>,
}

impl TaskStore {
    /// Number of live tasks.
    #[inline]
    pub fn len(&self) -> usize {
        self.index.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    #[inline]
    fn slot(&self, id: TaskId) -> Option<u32> {
        self.index.get(id)
    }

    /// The slot of a live task: unique among live tasks, reused once it ends, and below
    /// the most tasks live (or staged) at once, so it can index a dense `Vec`.
    #[inline]
    pub fn slot_of(&self, id: &TaskId) -> Option<usize> {
        self.slot(*id).map(|s| s as usize)
    }

    /// The entry in slot `slot` of a live task (from [`Self::slot_of`]), without the
    /// index look-up: for an engine that remembers where its running tasks are. Of a
    /// slot that is not live it is a stale or default entry (no panic unless its chunk
    /// is not held): the caller knows its slots.
    #[inline]
    pub fn at_slot(&self, slot: usize) -> &TaskEntry {
        self.slots.get(slot)
    }

    #[inline]
    pub fn at_slot_mut(&mut self, slot: usize) -> &mut TaskEntry {
        self.slots.get_mut(slot)
    }

    #[inline]
    pub fn contains_key(&self, id: &TaskId) -> bool {
        self.slot(*id).is_some()
    }

    #[inline]
    pub fn get(&self, id: &TaskId) -> Option<&TaskEntry> {
        self.slot(*id).map(|s| self.slots.get(s as usize))
    }

    #[inline]
    pub fn get_mut(&mut self, id: &TaskId) -> Option<&mut TaskEntry> {
        self.slot(*id).map(|s| self.slots.get_mut(s as usize))
    }

    /// Adds a live task (replacing and returning the entry of the same id, if any).
    #[inline]
    pub fn insert(&mut self, id: TaskId, entry: TaskEntry) -> Option<TaskEntry> {
        if let Some(s) = self.slot(id) {
            return Some(std::mem::replace(self.slots.get_mut(s as usize), entry));
        }
        let s = self.free_slot();
        *self.slots.get_mut(s as usize) = entry;
        self.index.insert(id, s);
        None
    }

    /// Puts a task that has not arrived yet into a free slot, where it will live once
    /// [`admit`](Self::admit)ted (so an engine's next arrival is built in place, not
    /// copied when it arrives). A staged task is not live: look-ups do not find it.
    #[inline]
    pub fn stage(&mut self, task: crate::task::Task) -> Staged {
        let s = self.free_slot();
        // Field by field over the previous entry: the task is copied once, straight in
        // (a whole new entry went through temporaries on the stack).
        let e = self.slots.get_mut(s as usize);
        e.task = task;
        e.set_host(0);
        e.set_placement(Placement::Queued(QueueId::Central));
        e.runs = 0;
        e.run_ns = 0;
        Staged(s)
    }

    /// A free slot (reused, or a new one), now in use; its entry is stale or a default.
    #[inline]
    fn free_slot(&mut self) -> u32 {
        let s = self.free.pop().unwrap_or(self.next);
        self.next = self.next.max(s + 1);
        self.slots.take(s as usize);
        s
    }

    /// A staged task.
    #[inline]
    pub fn staged(&self, s: Staged) -> &TaskEntry {
        self.slots.get(s.0 as usize)
    }

    #[inline]
    pub fn staged_mut(&mut self, s: Staged) -> &mut TaskEntry {
        self.slots.get_mut(s.0 as usize)
    }

    /// Makes a staged task live. Its id must not be live already (check with
    /// [`contains_key`](Self::contains_key)).
    #[inline]
    pub fn admit(&mut self, s: Staged) {
        let id = self.staged(s).task.id;
        debug_assert!(!self.contains_key(&id), "task {id} is live already");
        self.index.insert(id, s.0);
    }

    /// Drops a staged task that never became live.
    pub fn unstage(&mut self, s: Staged) {
        self.release(s.0);
    }

    /// Removes a live task and returns its entry.
    #[inline]
    pub fn remove(&mut self, id: &TaskId) -> Option<TaskEntry> {
        let s = self.index.remove(*id)?;
        let entry = std::mem::take(self.slots.get_mut(s as usize));
        self.release(s);
        Some(entry)
    }

    /// Frees slot `s`.
    #[inline]
    fn release(&mut self, s: u32) {
        self.slots.release(s as usize);
        self.free.push(s);
    }

    /// Removes a live task; returns whether it was live. Its entry stays in the freed
    /// slot until the slot is reused: dropping it here would copy the whole entry
    /// through the stack (its shared kind and signature are released then).
    #[inline]
    pub fn discard(&mut self, id: &TaskId) -> bool {
        let Some(s) = self.index.remove(*id) else {
            return false;
        };
        self.release(s);
        true
    }

    /// The live tasks, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&TaskId, &TaskEntry)> {
        self.slots
            .iter()
            .filter(|&(s, e)| self.slot(e.task.id) == Some(s as u32))
            .map(|(_, e)| (&e.task.id, e))
    }

    /// Slab slots held (used or free) plus index entries: what memory is proportional
    /// to.
    pub fn footprint(&self) -> usize {
        self.slots.footprint() + self.index.footprint()
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
    use crate::task::Task;

    fn entry(id: TaskId) -> TaskEntry {
        let mut e = TaskEntry::new(Task::cpu(id, id));
        e.run_ns = id;
        e
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
        // One chunk of slots (4,096 of 48 bytes) and a few index entries.
        assert!(store.footprint() < 4200, "footprint {}", store.footprint());
        assert_eq!(store[&0].run_ns, 0);
        assert_eq!(store[&199_999].run_ns, 199_999);
    }
}
