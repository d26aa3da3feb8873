//! Trace events and the sinks that consume them.
//!
//! Every trace source (a live lackey run, a saved lackey trace, the binary format)
//! pushes the same two events into a [`TraceSink`]: a number of retired instructions,
//! and one memory access (kind, byte address, byte size).

/// The largest access a trace may record, in bytes (a page). Valgrind's largest are a
/// few hundred bytes (`xsave`); a size of 4 GB would make the analysis touch 67 million
/// blocks for one record, so readers reject sizes above this.
pub const MAX_ACCESS_BYTES: u32 = 4096;

/// The kind of a data access, as lackey reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    /// A read (lackey `L`).
    Load,
    /// A write (lackey `S`).
    Store,
    /// A read-modify-write of the same bytes by one instruction (lackey `M`).
    Modify,
}

impl AccessKind {
    /// The lackey letter of this kind.
    pub fn letter(self) -> char {
        match self {
            AccessKind::Load => 'L',
            AccessKind::Store => 'S',
            AccessKind::Modify => 'M',
        }
    }
}

/// A consumer of trace events.
pub trait TraceSink {
    /// `n` instructions were retired.
    fn instructions(&mut self, n: u64);
    /// One data access of `size` bytes at `addr`.
    fn access(&mut self, kind: AccessKind, addr: u64, size: u32);
}

/// Sends every event to two sinks (e.g. analyse and save at once).
pub struct Tee<'a, A: ?Sized, B: ?Sized>(pub &'a mut A, pub &'a mut B);

impl<A: TraceSink + ?Sized, B: TraceSink + ?Sized> TraceSink for Tee<'_, A, B> {
    fn instructions(&mut self, n: u64) {
        self.0.instructions(n);
        self.1.instructions(n);
    }
    fn access(&mut self, kind: AccessKind, addr: u64, size: u32) {
        self.0.access(kind, addr, size);
        self.1.access(kind, addr, size);
    }
}

/// A sink that keeps everything in memory (tests, conversions, benchmarks).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    /// Events in order: `Err(n)` = n instructions, `Ok(..)` = an access.
    pub events: Vec<Result<(AccessKind, u64, u32), u64>>,
}

impl TraceSink for Recorded {
    fn instructions(&mut self, n: u64) {
        // Merge runs so that equal traces compare equal whatever their batching.
        if let Some(Err(m)) = self.events.last_mut() {
            *m = m.saturating_add(n);
        } else {
            self.events.push(Err(n));
        }
    }
    fn access(&mut self, kind: AccessKind, addr: u64, size: u32) {
        self.events.push(Ok((kind, addr, size)));
    }
}

impl Recorded {
    /// Replay the recorded events into another sink.
    pub fn replay(&self, sink: &mut dyn TraceSink) {
        for e in &self.events {
            match *e {
                Err(n) => sink.instructions(n),
                Ok((k, a, s)) => sink.access(k, a, s),
            }
        }
    }
}
