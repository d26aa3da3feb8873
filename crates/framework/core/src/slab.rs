//! Values by dense index (an engine's task-store slots), kept in fixed-size chunks that
//! are freed once none of their indices is in use.
//!
//! Why: a run whose tasks all arrive at once fills a million slots, then drains them as
//! tasks end and nothing arrives to reuse them. In one `Vec` that memory stays until the
//! run ends, while the run's other state (its metrics) grows; in chunks it goes back as
//! the tasks go, and a full chunk costs nothing more than its values (no doubling).
//! One emptied chunk is kept as a spare, so that a number of live tasks going back and
//! forth across a chunk boundary does not free and allocate a chunk each time. A chunk
//! is 128 to 256 KiB, which the system allocator (glibc's, at least) maps on its own:
//! freed, it goes back to the system at once instead of leaving a hole in the heap that
//! still counts as resident memory.
//!
//! The slab does not choose indices: its owner does (the task store through its free
//! list; the simulator mirrors the store's slots) and tells it which are in use.

/// Bytes per chunk: `N` values take more than half of it (checked at compile time).
const CHUNK_BYTES: usize = 256 << 10;

type Chunk<T, const N: usize> = Box<[T; N]>;

/// Values by index, `N` (a power of two) to a chunk (see the module documentation). An
/// index's value stays (stale) after it is released until its chunk is freed or the
/// index is taken again.
#[derive(Clone, Debug)]
pub struct Slab<T, const N: usize> {
    /// Chunk 0's `N` values, held apart (empty while chunk 0 is not held): a run whose
    /// live tasks fit in one chunk (the usual case, as slots are reused last-freed
    /// first) reads its values as from a `Vec`, one bounds check and no chunk table.
    /// The engines read a slot some twenty times per task; as an `Option` of a chunk,
    /// a read took about four instructions more (see docs/dev/simulator-performance.md).
    head: Box<[T]>,
    /// The other chunks by number (entry 0 unused).
    chunks: Vec<Option<Chunk<T, N>>>,
    /// Indices in use, per chunk.
    used: Vec<u32>,
    /// A chunk that emptied, kept for the next one needed.
    spare: Option<Chunk<T, N>>,
}

impl<T, const N: usize> Default for Slab<T, N> {
    fn default() -> Self {
        Slab {
            head: Box::new([]),
            chunks: Vec::new(),
            used: Vec::new(),
            spare: None,
        }
    }
}

impl<T: Default, const N: usize> Slab<T, N> {
    /// `N` fits: a power of two of values filling more than half a chunk.
    const FITS: () = {
        let bytes = N * std::mem::size_of::<T>();
        assert!(N.is_power_of_two() && bytes <= CHUNK_BYTES && 2 * bytes > CHUNK_BYTES);
    };

    /// Whether chunk `c` is held.
    #[inline]
    fn holds(&self, c: usize) -> bool {
        match c {
            0 => !self.head.is_empty(),
            _ => self.chunks.get(c).is_some_and(Option::is_some),
        }
    }

    /// The value at index `i`, which is in use (or was, and its chunk is still held).
    #[inline]
    pub fn get(&self, i: usize) -> &T {
        match self.head.get(i) {
            Some(v) => v,
            None => self.far(i),
        }
    }

    /// A value past chunk 0 (or in chunk 0 while it is not held: refused).
    #[inline]
    fn far(&self, i: usize) -> &T {
        match self.chunks.get(i / N) {
            Some(Some(c)) if i >= N => &c[i % N],
            _ => not_in_use(i),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, i: usize) -> &mut T {
        if i < self.head.len() {
            return &mut self.head[i];
        }
        match self.chunks.get_mut(i / N) {
            Some(Some(c)) if i >= N => &mut c[i % N],
            _ => not_in_use(i),
        }
    }

    /// Marks index `i` (not in use) as in use and returns its value: the one it held
    /// when released, or any other (a default, a spare chunk's stale one) if its chunk
    /// was freed since.
    #[inline]
    pub fn take(&mut self, i: usize) -> &mut T {
        let () = Self::FITS;
        let c = i / N;
        if c >= self.used.len() || !self.holds(c) {
            self.hold(c);
        }
        self.used[c] += 1;
        self.get_mut(i)
    }

    /// Holds chunk `c` (the spare, or a new one).
    #[cold]
    fn hold(&mut self, c: usize) {
        if c >= self.chunks.len() {
            self.chunks.resize_with(c + 1, || None);
            self.used.resize(c + 1, 0);
        }
        let chunk = self.spare.take().unwrap_or_else(|| {
            let values: Box<[T]> = (0..N).map(|_| T::default()).collect();
            values.try_into().ok().expect("N values")
        });
        match c {
            0 => self.head = chunk,
            _ => self.chunks[c] = Some(chunk),
        }
    }

    /// Marks index `i` (in use) as free; its chunk goes once none of its indices is in
    /// use (kept as the spare, the previous spare freed).
    #[inline]
    pub fn release(&mut self, i: usize) {
        let c = i / N;
        self.used[c] -= 1;
        if self.used[c] == 0 {
            self.spare = match c {
                0 => std::mem::take(&mut self.head).try_into().ok(),
                _ => self.chunks[c].take(),
            };
        }
    }

    /// Indices the chunks held now cover (the spare included): what memory is
    /// proportional to.
    pub fn footprint(&self) -> usize {
        let held = self.chunks.iter().filter(|c| c.is_some()).count();
        (held + self.holds(0) as usize + self.spare.is_some() as usize) * N
    }

    /// Indices in chunks held now, in order: those in use among them.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        std::iter::once(&self.head[..])
            .chain(
                self.chunks
                    .iter()
                    .skip(1)
                    .map(|c| c.as_ref().map_or(&[][..], |c| &c[..])),
            )
            .enumerate()
            .flat_map(|(c, chunk)| chunk.iter().enumerate().map(move |(i, v)| (c * N + i, v)))
    }
}

#[cold]
#[inline(never)]
fn not_in_use(i: usize) -> ! {
    panic!("slab index {i} is not in use")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunks are freed as their indices are released, one kept as the spare, and
    /// values survive release and take in a held chunk.
    const CHUNK: usize = CHUNK_BYTES / 8;

    #[test]
    fn chunks_follow_the_indices_in_use() {
        let mut slab = Slab::<u64, CHUNK>::default();
        for i in 0..10 * CHUNK {
            *slab.take(i) = i as u64;
        }
        assert_eq!(slab.footprint(), 10 * CHUNK);
        assert_eq!(*slab.get(3 * CHUNK + 5), (3 * CHUNK + 5) as u64);
        for i in 0..9 * CHUNK {
            slab.release(i);
        }
        // One chunk in use, one spare.
        assert_eq!(slab.footprint(), 2 * CHUNK);
        assert_eq!(*slab.get(9 * CHUNK + 7), (9 * CHUNK + 7) as u64);
        slab.release(9 * CHUNK + 7);
        assert_eq!(*slab.take(9 * CHUNK + 7), (9 * CHUNK + 7) as u64);
        // A freed chunk comes back (from the spare) when one of its indices is taken.
        *slab.take(2) = 42;
        assert_eq!(*slab.get(2), 42);
        assert_eq!(slab.footprint(), 2 * CHUNK);
        assert_eq!(slab.iter().count(), 2 * CHUNK);
    }

    #[test]
    #[should_panic(expected = "slab index 5 is not in use")]
    fn a_freed_chunk_is_not_read() {
        let mut slab = Slab::<u64, CHUNK>::default();
        slab.take(5);
        slab.take(CHUNK);
        slab.release(CHUNK);
        slab.release(5);
        // Index 5's chunk went: the spare is the other one.
        slab.get(5);
    }
}
