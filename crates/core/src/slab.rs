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
    /// Chunk 0, held apart: a run whose live tasks fit in one chunk (the usual case, as
    /// slots are reused last-freed first) reads its values one load away from the slab,
    /// as in a `Vec`, instead of through the chunk table.
    head: Option<Chunk<T, N>>,
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
            head: None,
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

    #[inline]
    fn chunk(&self, c: usize) -> &Option<Chunk<T, N>> {
        if c == 0 {
            &self.head
        } else {
            &self.chunks[c]
        }
    }

    #[inline]
    fn chunk_mut(&mut self, c: usize) -> &mut Option<Chunk<T, N>> {
        if c == 0 {
            &mut self.head
        } else {
            &mut self.chunks[c]
        }
    }

    /// The value at index `i`, which is in use (or was, and its chunk is still held).
    #[inline]
    pub fn get(&self, i: usize) -> &T {
        match self.chunk(i / N) {
            Some(c) => &c[i % N],
            None => not_in_use(i),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, i: usize) -> &mut T {
        match self.chunk_mut(i / N) {
            Some(c) => &mut c[i % N],
            None => not_in_use(i),
        }
    }

    /// Marks index `i` (not in use) as in use and returns its value: the one it held
    /// when released, or any other (a default, a spare chunk's stale one) if its chunk
    /// was freed since.
    #[inline]
    pub fn take(&mut self, i: usize) -> &mut T {
        let () = Self::FITS;
        let c = i / N;
        if c >= self.used.len() || self.chunk(c).is_none() {
            self.hold(c);
        }
        self.used[c] += 1;
        match self.chunk_mut(c) {
            Some(chunk) => &mut chunk[i % N],
            None => not_in_use(i),
        }
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
        *self.chunk_mut(c) = Some(chunk);
    }

    /// Marks index `i` (in use) as free; its chunk goes once none of its indices is in
    /// use (kept as the spare, the previous spare freed).
    #[inline]
    pub fn release(&mut self, i: usize) {
        let c = i / N;
        self.used[c] -= 1;
        if self.used[c] == 0 {
            self.spare = self.chunk_mut(c).take();
        }
    }

    /// Indices the chunks held now cover (the spare included): what memory is
    /// proportional to.
    pub fn footprint(&self) -> usize {
        let held = self.chunks.iter().filter(|c| c.is_some()).count();
        (held + self.head.is_some() as usize + self.spare.is_some() as usize) * N
    }

    /// Indices in chunks held now, in order: those in use among them.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        std::iter::once(&self.head)
            .chain(self.chunks.iter().skip(1))
            .enumerate()
            .filter_map(|(c, chunk)| Some((c, chunk.as_ref()?)))
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
