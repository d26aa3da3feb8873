//! A map from task ids to small values, for ids that come mostly in order.
//!
//! Why: an engine's live tasks and a record's checks both keep something per live task
//! by id. Task ids are assigned in arrival order, so the ids present are mostly a
//! window: the values of the consecutive ids from the oldest present one on, one
//! look-up being an array access and one value costing its own size (a byte for a
//! check state, four bytes for a store slot) where a hash map costs about twice its
//! entry. Ids that fall out of the window (one living long while many newer ones went,
//! or ids out of order) go to a small hash map instead. The window is kept within a
//! constant factor of the number of ids present, so memory follows them, not the ids
//! seen.

use crate::task::TaskId;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Gives back most of a deque's memory once it has drained to a quarter of its
/// capacity (halving what it holds): queues that held a million waiting tasks at once
/// must not keep that memory while a run's other state grows.
#[inline]
pub fn shrink<T>(q: &mut VecDeque<T>) {
    let (len, cap) = (q.len(), q.capacity());
    if cap > 1024 && len < cap / 4 {
        halve(q);
    }
}

#[cold]
#[inline(never)]
fn halve<T>(q: &mut VecDeque<T>) {
    q.shrink_to(2 * q.len());
}

/// A value type with one value that means "absent" (never stored as a value).
pub trait Vacant: Copy + Eq {
    const VACANT: Self;
}

impl Vacant for u32 {
    const VACANT: u32 = u32::MAX;
}

/// An `IdMap<bool>` is a set of ids (the value `true`).
impl Vacant for bool {
    const VACANT: bool = false;
}

/// Values by task id (see the module documentation). The API follows a map's.
#[derive(Clone, Debug)]
pub struct IdMap<V> {
    /// `window[i]`: the value of id `base + i`, or `V::VACANT`.
    window: VecDeque<V>,
    base: TaskId,
    /// Values of ids outside the window.
    overflow: FxHashMap<TaskId, V>,
    len: usize,
}

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap {
            window: VecDeque::new(),
            base: 0,
            overflow: FxHashMap::default(),
            len: 0,
        }
    }
}

impl<V: Vacant> IdMap<V> {
    /// Number of ids present.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn get(&self, id: TaskId) -> Option<V> {
        let i = id.wrapping_sub(self.base);
        if i < self.window.len() as u64 {
            let v = self.window[i as usize];
            (v != V::VACANT).then_some(v)
        } else if self.overflow.is_empty() {
            None
        } else {
            self.overflow.get(&id).copied()
        }
    }

    /// The value of `id`, to change in place (not to `V::VACANT`: use `remove`).
    #[inline]
    pub fn get_mut(&mut self, id: TaskId) -> Option<&mut V> {
        let i = id.wrapping_sub(self.base);
        if i < self.window.len() as u64 {
            let v = &mut self.window[i as usize];
            (*v != V::VACANT).then_some(v)
        } else if self.overflow.is_empty() {
            None
        } else {
            self.overflow.get_mut(&id)
        }
    }

    /// Sets the value of `id` (not `V::VACANT`); returns the one it replaces.
    #[inline]
    pub fn insert(&mut self, id: TaskId, v: V) -> Option<V> {
        debug_assert!(v != V::VACANT, "the vacant value is not a value");
        let i = id.wrapping_sub(self.base);
        if i < self.window.len() as u64 {
            let old = std::mem::replace(&mut self.window[i as usize], v);
            if old != V::VACANT {
                return Some(old);
            }
            self.len += 1;
            return None;
        }
        // The usual case: the id just past the window (ids come in order), within its
        // bound (below), none held outside it.
        if i == self.window.len() as u64 && i < 8 * self.len as u64 + 64 && self.overflow.is_empty()
        {
            self.window.push_back(v);
            self.len += 1;
            return None;
        }
        if let Some(old) = self.overflow.get_mut(&id) {
            return Some(std::mem::replace(old, v));
        }
        self.len += 1;
        if self.window.is_empty() {
            self.base = id;
        }
        let Some(i) = id.checked_sub(self.base) else {
            self.overflow.insert(id, v);
            return None;
        };
        // Bounded by the ids present: beyond that, older ids move out to the hash map.
        let limit = 8 * self.len as u64 + 64;
        if i >= limit {
            self.spill_all();
            self.base = id;
            self.window.push_back(v);
            return None;
        }
        self.window.resize(i as usize, V::VACANT);
        self.window.push_back(v);
        while self.window.len() as u64 > limit {
            self.pop_front();
        }
        None
    }

    /// Moves every windowed id to the hash map (the window restarts elsewhere).
    fn spill_all(&mut self) {
        while !self.window.is_empty() {
            self.pop_front();
        }
    }

    /// Drops the oldest id from the window, moving its value to the hash map if present.
    fn pop_front(&mut self) {
        if let Some(v) = self.window.pop_front() {
            if v != V::VACANT {
                self.overflow.insert(self.base, v);
            }
            self.base += 1;
        }
    }

    /// Removes `id`; returns its value.
    #[inline]
    pub fn remove(&mut self, id: TaskId) -> Option<V> {
        let i = id.wrapping_sub(self.base);
        let v = if i < self.window.len() as u64 {
            let v = std::mem::replace(&mut self.window[i as usize], V::VACANT);
            if v == V::VACANT {
                return None;
            }
            // Absent ids at the front leave the window.
            while self.window.front() == Some(&V::VACANT) {
                self.window.pop_front();
                self.base += 1;
            }
            shrink(&mut self.window);
            v
        } else {
            self.overflow.remove(&id)?
        };
        self.len -= 1;
        Some(v)
    }

    /// Window slots plus hash map entries: what memory is proportional to.
    pub fn footprint(&self) -> usize {
        self.window.len() + self.overflow.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Random inserts and removes (ids mostly increasing, some far out, some reused)
    /// agree with a map.
    #[test]
    fn behaves_like_a_map() {
        let mut ids = IdMap::<u32>::default();
        let mut map = BTreeMap::new();
        let mut x: u64 = 12345;
        let mut next = 0;
        for step in 0..50_000u32 {
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
                assert_eq!(ids.insert(id, step), map.insert(id, step));
            } else {
                assert_eq!(ids.remove(id), map.remove(&id));
            }
            assert_eq!(ids.len(), map.len());
            let probe = r % (next + 2);
            assert_eq!(ids.get(probe), map.get(&probe).copied());
            if let (Some(v), Some(w)) = (ids.get_mut(probe), map.get_mut(&probe)) {
                (*v, *w) = (step, step);
            }
        }
    }
}
