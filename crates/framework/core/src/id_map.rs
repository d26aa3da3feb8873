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
    /// Values of ids outside the window: all below the window's (see `insert`).
    overflow: FxHashMap<TaskId, V>,
    /// No id in `overflow` is above this (`None` when it is empty; kept as ids leave
    /// it until it empties, an upper bound then). Why: the ids there are mostly old
    /// ones (a task that lives long while many newer ones come and go), so a new id is
    /// above them all, and neither inserting it (the id just past the window) nor
    /// looking it up while absent need the hash map. Without the bound, one long-lived
    /// task sent every insert of a 1M-task run through the slow path (the task store's
    /// admission took 121 instructions a task instead of about 70; see
    /// docs/dev/simulator-performance.md).
    top: Option<TaskId>,
    len: usize,
}

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap {
            window: VecDeque::new(),
            base: 0,
            overflow: FxHashMap::default(),
            top: None,
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
        } else if self.above_overflow(id) {
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
        } else if self.above_overflow(id) {
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
        // The usual case: the id just past the window (ids come in order; not past
        // `u64::MAX` back to 0), within its bound (below), above the ids held outside it.
        if i == self.window.len() as u64
            && id >= self.base
            && i < 8 * self.len as u64 + 64
            && self.above_overflow(id)
        {
            self.window.push_back(v);
            self.len += 1;
            return None;
        }
        if let Some(old) = self.overflow.get_mut(&id) {
            return Some(std::mem::replace(old, v));
        }
        self.len += 1;
        // The window holds only ids above those in the hash map, so that the two never
        // overlap (an id below them, arriving late, goes to the hash map too).
        if self.window.is_empty() {
            if !self.above_overflow(id) {
                self.spill(id, v);
                return None;
            }
            self.base = id;
        }
        let Some(i) = id.checked_sub(self.base) else {
            self.spill(id, v);
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
                self.spill(self.base, v);
            }
            self.base = self.base.wrapping_add(1); // wraps only past u64::MAX, emptied
        }
    }

    /// Puts `id` (not present) in the hash map.
    fn spill(&mut self, id: TaskId, v: V) {
        self.overflow.insert(id, v);
        self.top = Some(self.top.map_or(id, |t| t.max(id)));
    }

    /// Whether `id` is above every id in the hash map (so not there).
    #[inline]
    fn above_overflow(&self, id: TaskId) -> bool {
        self.top.is_none_or(|t| id > t)
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
                self.base = self.base.wrapping_add(1); // wraps only past u64::MAX, emptied
            }
            shrink(&mut self.window);
            v
        } else if self.above_overflow(id) {
            return None;
        } else {
            let v = self.overflow.remove(&id)?;
            if self.overflow.is_empty() {
                self.top = None;
            }
            v
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

    /// An id of 0 just after `u64::MAX` does not extend the window past the largest id
    /// (it wrapped to 0 and then grew over an id held in the hash map, which look-ups
    /// then missed).
    #[test]
    fn the_window_does_not_wrap_past_the_largest_id() {
        let mut ids = IdMap::<u32>::default();
        assert_eq!(ids.insert(TaskId::MAX, 1), None);
        assert_eq!(ids.insert(0, 2), None);
        assert_eq!(ids.insert(5, 3), None);
        assert_eq!(ids.remove(TaskId::MAX), Some(1));
        assert_eq!(ids.insert(6, 4), None);
        for (id, v) in [(0, 2), (5, 3), (6, 4)] {
            assert_eq!(ids.get(id), Some(v), "id {id}");
        }
        assert_eq!(ids.insert(5, 7), Some(3));
        assert_eq!(ids.len(), 3);
        assert_eq!(ids.remove(5), Some(7));
        assert_eq!(ids.get(5), None);
        assert_eq!(ids.len(), 2);
    }

    /// Random inserts and removes (ids mostly increasing, some far out, some reused)
    /// agree with a map; so do look-ups, of ids in the hash map and above it.
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
                // Far out, up to the largest id.
                4 if r % 20 == 4 => TaskId::MAX - r % 3,
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
            let probe = match r % 7 {
                0 => TaskId::MAX - r % 3,
                _ => r % (next + 2),
            };
            assert_eq!(ids.get(probe), map.get(&probe).copied());
            if let (Some(v), Some(w)) = (ids.get_mut(probe), map.get_mut(&probe)) {
                (*v, *w) = (step, step);
            }
        }
    }
}
