//! Throughput of the analysis (`hetsched bench reuse`): exact and sampled reuse
//! distances over a synthetic block trace, and parsing of lackey and binary traces.

use crate::analysis::{Analyzer, Mode, Profile};
use crate::buckets::NUM_BUCKETS;
use crate::source::{binary, lackey};
use crate::trace::{AccessKind, TraceSink};
use hetsched_core::{Error, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A program-like synthetic block trace of `n` accesses: stack-like hot reuse (small
/// distances), sequential scans over 256 KB … 32 MB arrays, and uniformly random
/// accesses over a 64 MB heap, in phases of 4096 accesses. Deterministic in `seed`.
pub fn synthetic_blocks(n: usize, seed: u64) -> Vec<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut v = Vec::with_capacity(n);
    let mut scan_pos = [0u64; 4];
    const SCAN_BLOCKS: [u64; 4] = [4096, 32_768, 131_072, 524_288];
    while v.len() < n {
        let phase = rng.random_range(0..10u32);
        for _ in 0..4096 {
            let b = match phase {
                // Hot frame: a few dozen blocks, several accesses each.
                0..=3 => (1 << 40) + rng.random_range(0..48u64),
                // Scans, each access touching a block 4 times (8-byte strides, 2 passes).
                4..=7 => {
                    let k = (phase - 4) as usize;
                    let b = (2 << 40) + ((k as u64) << 32) + (scan_pos[k] / 4) % SCAN_BLOCKS[k];
                    scan_pos[k] += 1;
                    b
                }
                // Random heap accesses over 64 MB.
                _ => (3 << 40) + rng.random_range(0..1u64 << 20),
            };
            v.push(b);
        }
    }
    v.truncate(n);
    v
}

use hetsched_util::host::thread_cpu_seconds;

/// Analyse an in-memory block trace (the analysis from the first access to the
/// finished profile is timed); returns the profile and accesses per CPU-second.
pub fn time_analysis(blocks: &[u64], mode: Mode) -> (Profile, f64) {
    let start = thread_cpu_seconds();
    let mut a = Analyzer::new(mode);
    a.blocks(blocks);
    let p = a.finish();
    (p, blocks.len() as f64 / (thread_cpu_seconds() - start))
}

/// [`time_analysis`] `repeats` times (at least once); the profile and the best rate
/// (a shared machine only ever slows a run down).
pub fn best_analysis(blocks: &[u64], mode: Mode, repeats: usize) -> (Profile, f64) {
    let (profile, mut best) = time_analysis(blocks, mode);
    for _ in 1..repeats {
        let (p, rate) = time_analysis(blocks, mode);
        debug_assert_eq!(p, profile, "analysis is deterministic");
        best = best.max(rate);
    }
    (profile, best)
}

/// Largest absolute difference of the 20 bucket fractions.
pub fn max_fraction_error(a: &Profile, b: &Profile) -> f64 {
    let (fa, fb) = (a.buckets.fractions(), b.buckets.fractions());
    (0..NUM_BUCKETS)
        .map(|i| (fa[i] - fb[i]).abs())
        .fold(0.0, f64::max)
}

/// Counts events, nothing else (parsing throughput).
#[derive(Default)]
struct Count {
    instructions: u64,
    accesses: u64,
    checksum: u64,
}

impl TraceSink for Count {
    fn instructions(&mut self, n: u64) {
        self.instructions += n;
    }
    fn access(&mut self, _: AccessKind, addr: u64, size: u32) {
        // Fold the fields in so the parse cannot be optimised away.
        self.accesses += 1;
        self.checksum = self.checksum.wrapping_add(addr ^ u64::from(size));
    }
}

/// A lackey-format text of about `bytes` bytes (3 instructions per access, realistic
/// stack and heap addresses), deterministic in `seed`.
pub fn synthetic_lackey(bytes: usize, seed: u64) -> Vec<u8> {
    use std::io::Write;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(bytes + 64);
    let mut pc = 0x0401_0000u64;
    while out.len() < bytes {
        for _ in 0..3 {
            pc += rng.random_range(1..8u64);
            let _ = writeln!(out, "I  {pc:08x},{}", rng.random_range(1..8u32));
        }
        let kind = ["L", "S", "M"][rng.random_range(0..3usize)];
        let addr = if rng.random_bool(0.5) {
            0x001f_feff_0000_u64 + rng.random_range(0..4096u64)
        } else {
            0x0520_0000u64 + rng.random_range(0..1u64 << 26)
        };
        let _ = writeln!(
            out,
            " {kind} {addr:08x},{}",
            [1, 2, 4, 8][rng.random_range(0..4usize)]
        );
    }
    out
}

/// Parse throughput: (MB/s, events) of the lackey text parser.
pub fn time_lackey(text: &[u8]) -> Result<(f64, u64)> {
    let mut c = Count::default();
    let start = thread_cpu_seconds();
    lackey::parse(text, "synthetic", &mut c)?;
    std::hint::black_box(c.checksum);
    let s = thread_cpu_seconds() - start;
    Ok((text.len() as f64 / 1e6 / s, c.instructions + c.accesses))
}

/// Parse throughput of the binary format for the same events: (MB/s, bytes, events).
pub fn time_binary(text: &[u8]) -> Result<(f64, usize, u64)> {
    let mut w = binary::Writer::new(Vec::new());
    lackey::parse(text, "synthetic", &mut w)?;
    let bytes = w.finish().map_err(|e| Error::runtime(e.to_string()))?;
    let mut c = Count::default();
    let start = thread_cpu_seconds();
    binary::parse(&bytes[..], "synthetic", &mut c)?;
    std::hint::black_box(c.checksum);
    let s = thread_cpu_seconds() - start;
    Ok((
        bytes.len() as f64 / 1e6 / s,
        bytes.len(),
        c.instructions + c.accesses,
    ))
}
