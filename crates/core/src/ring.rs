//! A first-in first-out queue of small `Copy` values, read anywhere by position.
//!
//! Why not `VecDeque`: the run stream reads and writes its pending tasks by position and
//! at both ends several times per event; a buffer whose size is a power of two finds a
//! position with one mask and one bounds check, where `VecDeque` wraps with a compare
//! and a subtraction, and grows through a path that also moves the wrapped part.
//! Memory follows the length down ([`Ring::shrink`]): a million tasks that waited at
//! once must not stay allocated.

/// The queue (see the module docs). The buffer's length is its capacity, zero or a
/// power of two; the values at positions `len..` are stale copies.
#[derive(Clone, Debug)]
pub struct Ring<T: Copy> {
    buf: Vec<T>,
    head: usize,
    len: usize,
}

/// The smallest buffer allocated, and the capacity below which it is never shrunk.
const MIN: usize = 16;
const KEEP: usize = 1024;

impl<T: Copy> Default for Ring<T> {
    fn default() -> Self {
        Ring {
            buf: Vec::new(),
            head: 0,
            len: 0,
        }
    }
}

impl<T: Copy> Ring<T> {
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The buffer's index of position `at` (which must be below the capacity).
    #[inline(always)]
    fn slot(&self, at: usize) -> usize {
        (self.head + at) & (self.buf.len().wrapping_sub(1))
    }

    #[inline]
    pub fn get(&self, at: usize) -> Option<&T> {
        match at < self.len {
            true => Some(&self.buf[self.slot(at)]),
            false => None,
        }
    }

    #[inline]
    pub fn get_mut(&mut self, at: usize) -> Option<&mut T> {
        match at < self.len {
            true => {
                let i = self.slot(at);
                Some(&mut self.buf[i])
            }
            false => None,
        }
    }

    #[inline]
    pub fn front(&self) -> Option<&T> {
        self.get(0)
    }

    #[inline]
    pub fn front_mut(&mut self) -> Option<&mut T> {
        self.get_mut(0)
    }

    #[inline]
    pub fn back_mut(&mut self) -> Option<&mut T> {
        self.get_mut(self.len.wrapping_sub(1))
    }

    #[inline]
    pub fn push_back(&mut self, value: T) {
        if self.len == self.buf.len() {
            self.resize(value, (2 * self.len).max(MIN));
        }
        let i = self.slot(self.len);
        self.buf[i] = value;
        self.len += 1;
    }

    #[inline]
    pub fn pop_front(&mut self) -> Option<T> {
        let value = *self.front()?;
        self.head = self.slot(1);
        self.len -= 1;
        Some(value)
    }

    /// Halves the buffer (or more) when it is more than four times the length.
    #[inline]
    pub fn shrink(&mut self) {
        if self.buf.len() > KEEP && self.len < self.buf.len() / 4 {
            if let Some(&fill) = self.front() {
                self.resize(fill, (2 * self.len).next_power_of_two().max(MIN));
            } else {
                *self = Ring::default();
            }
        }
    }

    /// A buffer of `capacity` (a power of two, at least the length) with the values in
    /// order from its start; `fill` fills the rest.
    #[cold]
    #[inline(never)]
    fn resize(&mut self, fill: T, capacity: usize) {
        let mut buf = Vec::with_capacity(capacity);
        buf.extend((0..self.len).map(|at| self.buf[self.slot(at)]));
        buf.resize(capacity, fill);
        self.buf = buf;
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// Pushes, pops and reads by position agree with `VecDeque` through growth,
    /// wrapping and shrinking, and memory follows the length down.
    #[test]
    fn agrees_with_vec_deque() {
        let mut ring = Ring::default();
        let mut model = VecDeque::new();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut largest = 0;
        for round in 0..40_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Grow for a while, then drain, then grow again.
            let push = match round / 10_000 {
                0 | 2 => !x.is_multiple_of(4),
                _ => x.is_multiple_of(4),
            };
            if push {
                ring.push_back(round);
                model.push_back(round);
            } else {
                assert_eq!(ring.pop_front(), model.pop_front());
            }
            if let Some(v) = ring.back_mut() {
                *v += 1;
                *model.back_mut().unwrap() += 1;
            }
            ring.shrink();
            let at = (x >> 32) as usize % (model.len() + 2);
            assert_eq!(ring.get(at), model.get(at), "round {round}");
            assert_eq!(ring.front(), model.front());
            assert_eq!(ring.len(), model.len());
            assert!(ring.buf.len() <= KEEP.max(4 * ring.len()), "round {round}");
            largest = largest.max(ring.buf.len());
        }
        assert!(largest > KEEP, "it grew past the size it keeps");
    }
}
