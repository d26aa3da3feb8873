//! Turns trace events into a reuse profile: instructions, block accesses, the working
//! set W, the full reuse-distance histogram and the 20 buckets.
//!
//! Conventions (documented in docs/signatures.md):
//! - blocks are 64 bytes (`addr >> 6`);
//! - loads and stores both count; a modify (`M`) is a load followed by a store, i.e.
//!   two accesses, the second of which is a distance-0 reuse;
//! - an access whose bytes cross block boundaries counts once per block it touches,
//!   in increasing address order (an 8-byte load at 0x3c touches blocks 0 and 1);
//! - instruction fetches are not data accesses and only count as instructions.

use crate::buckets::Buckets;
use crate::reuse::{ExactReuse, ReuseHistogram};
use crate::sampled::SampledReuse;
use crate::trace::{AccessKind, TraceSink};
use serde::{Deserialize, Serialize};

/// log2 of the block size.
pub const BLOCK_SHIFT: u32 = 6;
/// Block (cache line) size in bytes.
pub const BLOCK_BYTES: u64 = 1 << BLOCK_SHIFT;

/// Which reuse-distance engine to run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// Exact distances.
    Exact,
    /// SHARDS sampling at the given rate R in (0, 1].
    Sampled(f64),
}

impl Mode {
    /// Exact without a rate, else SHARDS at `rate` in (0, 1] (`--sample`).
    pub fn from_rate(rate: Option<f64>) -> hetsched_core::Result<Mode> {
        match rate {
            None => Ok(Mode::Exact),
            Some(r) if r > 0.0 && r <= 1.0 => Ok(Mode::Sampled(r)),
            Some(r) => Err(hetsched_core::Error::input(format!(
                "--sample: rate must be in (0, 1], got {r}"
            ))),
        }
    }
}

enum Engine {
    Exact(ExactReuse, ReuseHistogram),
    Sampled(Box<SampledReuse>),
}

/// Block accesses buffered by [`Analyzer::block`]: the engines run fastest over runs.
const BATCH: usize = 4096;

/// A trace sink that computes a [`Profile`].
pub struct Analyzer {
    engine: Engine,
    /// Accesses not yet given to the engine.
    pending: Vec<u64>,
    instructions: u64,
    mem_ops: u64,
    accesses: u64,
}

/// The microarchitecture-independent summary of a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Retired instructions.
    pub instructions: u64,
    /// Data-access records in the trace (L, S, M lines).
    pub mem_ops: u64,
    /// Block accesses analysed (after splitting M and line-crossing accesses).
    pub accesses: u64,
    /// Working set W: distinct 64-byte blocks touched (estimated when sampled).
    pub working_set_blocks: u64,
    /// Accesses per bucket (estimated when sampled).
    pub buckets: Buckets,
    /// The full histogram (not serialised: it can be large).
    #[serde(skip)]
    pub histogram: ReuseHistogram,
    /// Sampling rate R, or `None` for exact analysis.
    pub sampling_rate: Option<f64>,
}

impl Analyzer {
    /// A fresh analyser.
    pub fn new(mode: Mode) -> Self {
        let engine = match mode {
            Mode::Exact => Engine::Exact(ExactReuse::new(), ReuseHistogram::default()),
            Mode::Sampled(r) => Engine::Sampled(Box::new(SampledReuse::new(r))),
        };
        Analyzer {
            engine,
            pending: Vec::with_capacity(BATCH),
            instructions: 0,
            mem_ops: 0,
            accesses: 0,
        }
    }

    /// Analyse one access to a block number (buffered: see [`Analyzer::blocks`]).
    #[inline]
    pub fn block(&mut self, block: u64) {
        self.pending.push(block);
        if self.pending.len() == BATCH {
            self.flush();
        }
    }

    /// Analyse a run of accesses to block numbers.
    pub fn blocks(&mut self, blocks: &[u64]) {
        self.flush();
        self.run(blocks);
    }

    fn flush(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        self.run(&pending);
        self.pending = pending;
        self.pending.clear();
    }

    fn run(&mut self, blocks: &[u64]) {
        self.accesses += blocks.len() as u64;
        match &mut self.engine {
            Engine::Exact(e, h) => e.access_all(blocks, h),
            Engine::Sampled(s) => s.access_all(blocks),
        }
    }

    /// The sampled engine, for samples a trace source filtered itself.
    pub(crate) fn sampled_engine(&mut self) -> Option<&mut SampledReuse> {
        match &mut self.engine {
            Engine::Sampled(s) => Some(s),
            Engine::Exact(..) => None,
        }
    }

    /// `n` more accesses to the last block analysed: distance 0 each, and no change
    /// to either engine's state (so a run of any length costs one step).
    pub(crate) fn repeat_last(&mut self, n: u64) {
        self.flush();
        self.accesses += n;
        match &mut self.engine {
            Engine::Exact(_, h) => h.record_n(Some(0), n),
            Engine::Sampled(s) => s.captured_counts(0, n),
        }
    }

    /// Block accesses analysed so far (buffered ones included).
    pub(crate) fn accesses(&self) -> u64 {
        self.accesses + self.pending.len() as u64
    }

    /// Totals a trace source counted itself (it sent blocks or samples, not records).
    pub(crate) fn set_totals(&mut self, instructions: u64, mem_ops: u64, accesses: u64) {
        self.flush();
        self.instructions = instructions;
        self.mem_ops = mem_ops;
        self.accesses = accesses;
    }

    /// The profile of everything seen so far.
    pub fn finish(mut self) -> Profile {
        self.flush();
        let (histogram, w, rate) = match self.engine {
            Engine::Exact(e, h) => (h, e.distinct(), None),
            Engine::Sampled(s) => (s.histogram(), s.distinct(), Some(s.rate())),
        };
        Profile {
            instructions: self.instructions,
            mem_ops: self.mem_ops,
            accesses: self.accesses,
            working_set_blocks: w,
            buckets: Buckets::from_histogram(&histogram),
            histogram,
            sampling_rate: rate,
        }
    }
}

impl TraceSink for Analyzer {
    fn instructions(&mut self, n: u64) {
        self.instructions = self.instructions.saturating_add(n);
    }

    #[inline]
    fn access(&mut self, kind: AccessKind, addr: u64, size: u32) {
        self.mem_ops += 1;
        let first = addr >> BLOCK_SHIFT;
        let last = addr.saturating_add(u64::from(size.max(1)) - 1) >> BLOCK_SHIFT;
        let times = if kind == AccessKind::Modify { 2 } else { 1 };
        for _ in 0..times {
            for b in first..=last {
                self.block(b);
            }
        }
    }
}
