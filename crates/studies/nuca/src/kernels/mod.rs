//! Multithreaded kernels that really run and record their memory accesses.
//!
//! Each kernel runs its algorithm on `p` OS threads (barrier-phased like SPLASH-2) and
//! verifies its result; every load and store of shared data goes through an [`Array`]
//! with a [`Tracer`], which records (access-site id, address, read/write, instructions
//! since the last access). The access-site id is the source line of the access
//! (`line!()`), standing in for the instruction's PC. Addresses come from a simulated,
//! page-aligned address space, so traces are identical run to run.
//!
//! Only the parallel phase is traced: data set up before it is "initialisation", so the
//! first-touch placement maps pages to the first thread that touches them in parallel.

// Kernels index shared arrays by position, as the C originals do.
#![allow(clippy::needless_range_loop)]

mod dht;
mod fft;
mod lu;
mod ocean;
mod radix;
mod raytrace;
mod water;

use crate::trace::{Access, Trace};
use hetsched_core::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Records one thread's accesses.
#[derive(Default)]
pub struct Tracer {
    trace: Trace,
    gap: u32,
}

impl Tracer {
    /// Accounts `n` non-memory instructions.
    #[inline]
    pub fn ops(&mut self, n: u32) {
        self.gap += n;
    }

    #[inline]
    fn record(&mut self, pc: u32, addr: u64, write: bool) {
        let gap = self.gap.min(u16::MAX as u32) as u16;
        self.gap = 0;
        self.trace.push(Access {
            addr,
            pc,
            gap,
            write,
        });
    }
}

/// Hands out page-aligned address ranges, deterministically.
pub struct Space {
    next: AtomicU64,
}

impl Default for Space {
    fn default() -> Self {
        Space {
            next: AtomicU64::new(1 << 32),
        }
    }
}

impl Space {
    /// A zeroed array of `len` 8-byte words at a fresh page-aligned address.
    pub fn array(&self, len: usize) -> Array {
        let bytes = (len as u64 * 8).div_ceil(4096).max(1) * 4096;
        Array {
            base: self.next.fetch_add(bytes, Relaxed),
            cells: (0..len).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

/// Shared array of 8-byte words (f64 or u64), readable and writable from all threads.
/// Relaxed atomics make racy kernels impossible to write by accident as UB; our kernels
/// order their phases with barriers.
pub struct Array {
    base: u64,
    cells: Vec<AtomicU64>,
}

impl Array {
    #[inline]
    fn addr(&self, i: usize) -> u64 {
        self.base + 8 * i as u64
    }
    /// Traced load of word `i` as f64 by access site `pc`.
    #[inline]
    pub fn get(&self, t: &mut Tracer, pc: u32, i: usize) -> f64 {
        f64::from_bits(self.get_u(t, pc, i))
    }
    /// Traced store.
    #[inline]
    pub fn set(&self, t: &mut Tracer, pc: u32, i: usize, v: f64) {
        self.set_u(t, pc, i, v.to_bits())
    }
    #[inline]
    pub fn get_u(&self, t: &mut Tracer, pc: u32, i: usize) -> u64 {
        t.record(pc, self.addr(i), false);
        self.cells[i].load(Relaxed)
    }
    #[inline]
    pub fn set_u(&self, t: &mut Tracer, pc: u32, i: usize, v: u64) {
        t.record(pc, self.addr(i), true);
        self.cells[i].store(v, Relaxed)
    }
    /// Traced atomic increment (one read-modify-write access, recorded as a write).
    #[inline]
    pub fn add_u(&self, t: &mut Tracer, pc: u32, i: usize, v: u64) {
        t.record(pc, self.addr(i), true);
        self.cells[i].fetch_add(v, Relaxed);
    }
    /// Traced zeroing of the whole array: how a thread first touches its private buffers
    /// (so first-touch placement homes them where it starts, at its native core).
    pub fn touch(&self, t: &mut Tracer, pc: u32) {
        for i in 0..self.len() {
            self.set_u(t, pc, i, 0);
        }
    }

    /// Untraced load (initialisation and verification).
    pub fn peek(&self, i: usize) -> f64 {
        f64::from_bits(self.cells[i].load(Relaxed))
    }
    pub fn peek_u(&self, i: usize) -> u64 {
        self.cells[i].load(Relaxed)
    }
    /// Untraced store (initialisation).
    pub fn poke(&self, i: usize, v: f64) {
        self.cells[i].store(v.to_bits(), Relaxed)
    }
    pub fn poke_u(&self, i: usize, v: u64) {
        self.cells[i].store(v, Relaxed)
    }
    pub fn len(&self) -> usize {
        self.cells.len()
    }
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }
}

/// Runs `body(thread id, tracer)` on `p` threads and returns their traces.
pub fn run_threads(p: usize, body: impl Fn(usize, &mut Tracer) + Sync) -> Vec<Trace> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..p)
            .map(|id| {
                let body = &body;
                s.spawn(move || {
                    let mut t = Tracer::default();
                    body(id, &mut t);
                    t.trace
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("kernel thread panicked"))
            .collect()
    })
}

/// The half-open range of `n` items thread `id` of `p` owns (balanced blocks).
pub fn chunk(id: usize, n: usize, p: usize) -> std::ops::Range<usize> {
    (id * n / p)..((id + 1) * n / p)
}

/// A `rows × cols` thread grid with rows ≤ cols, as square as possible.
pub fn grid(p: usize) -> (usize, usize) {
    let mut r = (p as f64).sqrt() as usize;
    while !p.is_multiple_of(r) {
        r -= 1;
    }
    (r, p / r)
}

/// SplitMix64: a deterministic hash for data generation.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A deterministic value in [0, 1).
pub fn unit(x: u64) -> f64 {
    (mix(x) >> 11) as f64 / (1u64 << 53) as f64
}

/// The benchmarks' default sizes ([`Benchmark::default_size`]), each an assumption: the
/// paper runs SPLASH-2's inputs, which our stand-in kernels do not take.
pub mod default_sizes {
    hetsched_study::assumptions! { "shim";
        /// FFT points at the default size: our choice (2^16), small enough that all 16
        /// kernels × 5 schemes run in minutes; not the paper's input.
        pub const FFT_POINTS: usize = 1 << 16;
        /// LU matrix side at the default size: our choice, small enough to run in
        /// minutes; not the paper's input.
        pub const LU_SIDE: usize = 128;
        /// Ocean interior grid side at the default size: our choice, small enough to run
        /// in minutes; not the paper's input.
        pub const OCEAN_SIDE: usize = 256;
        /// Radix keys at the default size: our choice (2^17), small enough to run in
        /// minutes; not the paper's input.
        pub const RADIX_KEYS: usize = 1 << 17;
        /// Raytrace image side in pixels at the default size: our choice, small enough to
        /// run in minutes; not the paper's input.
        pub const RAYTRACE_SIDE: usize = 96;
        /// Water molecules at the default size: our choice, small enough to run in
        /// minutes; not the paper's input.
        pub const WATER_MOLECULES: usize = 512;
        /// DHT lookups per thread at the default size: our choice, small enough to run in
        /// minutes; not the paper's input.
        pub const DHT_LOOKUPS: usize = 2048;
    }
}

/// The benchmark set of the paper (Section IV-B), our kernels standing in for SPLASH-2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Benchmark {
    Fft,
    FftRep,
    LuContiguous,
    LuNonContiguous,
    LuRep,
    OceanContiguous,
    OceanNonContiguous,
    OceanRep,
    Radix,
    RadixRep,
    Raytrace,
    RaytraceRep,
    Water,
    WaterRep,
    DhtLp,
    DhtSc,
}

impl Benchmark {
    pub const ALL: [Benchmark; 16] = [
        Benchmark::Fft,
        Benchmark::FftRep,
        Benchmark::LuContiguous,
        Benchmark::LuNonContiguous,
        Benchmark::LuRep,
        Benchmark::OceanContiguous,
        Benchmark::OceanNonContiguous,
        Benchmark::OceanRep,
        Benchmark::Radix,
        Benchmark::RadixRep,
        Benchmark::Raytrace,
        Benchmark::RaytraceRep,
        Benchmark::Water,
        Benchmark::WaterRep,
        Benchmark::DhtLp,
        Benchmark::DhtSc,
    ];

    /// The paper's name for it.
    pub fn name(self) -> &'static str {
        use Benchmark::*;
        match self {
            Fft => "fft",
            FftRep => "fft_rep",
            LuContiguous => "lu_contiguous",
            LuNonContiguous => "lu_non_contiguous",
            LuRep => "lu_rep",
            OceanContiguous => "ocean_contiguous",
            OceanNonContiguous => "ocean_non_contiguous",
            OceanRep => "ocean_rep",
            Radix => "radix",
            RadixRep => "radix_rep",
            Raytrace => "raytrace",
            RaytraceRep => "raytrace_rep",
            Water => "water",
            WaterRep => "water_rep",
            DhtLp => "dht_lp",
            DhtSc => "dht_sc",
        }
    }

    pub fn from_name(name: &str) -> Result<Benchmark> {
        Benchmark::ALL
            .into_iter()
            .find(|b| b.name() == name)
            .ok_or_else(|| {
                let all: Vec<_> = Benchmark::ALL.iter().map(|b| b.name()).collect();
                Error::input(format!(
                    "unknown benchmark `{name}`; expected one of {}",
                    all.join(", ")
                ))
            })
    }

    /// What the size parameter `n` means for this kernel.
    pub fn size_meaning(self) -> &'static str {
        use Benchmark::*;
        match self {
            Fft | FftRep => "complex points (a power of four)",
            LuContiguous | LuNonContiguous | LuRep => {
                "matrix order (a multiple of the 16-wide block)"
            }
            OceanContiguous | OceanNonContiguous | OceanRep => "interior grid side",
            Radix | RadixRep => "keys",
            Raytrace | RaytraceRep => "image side in pixels",
            Water | WaterRep => "molecules",
            DhtLp | DhtSc => "lookups per thread",
        }
    }

    /// Default size: small enough that all 16 kernels × 5 schemes run in minutes
    /// ([`default_sizes`]' assumptions).
    pub fn default_size(self) -> usize {
        use default_sizes::*;
        use Benchmark::*;
        match self {
            Fft | FftRep => FFT_POINTS,
            LuContiguous | LuNonContiguous | LuRep => LU_SIDE,
            OceanContiguous | OceanNonContiguous | OceanRep => OCEAN_SIDE,
            Radix | RadixRep => RADIX_KEYS,
            Raytrace | RaytraceRep => RAYTRACE_SIDE,
            Water | WaterRep => WATER_MOLECULES,
            DhtLp | DhtSc => DHT_LOOKUPS,
        }
    }

    /// Tiny size for tests.
    pub fn tiny_size(self) -> usize {
        use Benchmark::*;
        match self {
            Fft | FftRep => 1 << 8,
            LuContiguous | LuNonContiguous | LuRep => 32,
            OceanContiguous | OceanNonContiguous | OceanRep => 16,
            Radix | RadixRep => 1 << 10,
            Raytrace | RaytraceRep => 16,
            Water | WaterRep => 24,
            DhtLp | DhtSc => 64,
        }
    }

    /// Runs the kernel on `p` threads at size `n`, verifies its result, returns traces.
    pub fn generate(self, p: usize, n: usize) -> Result<Vec<Trace>> {
        use Benchmark::*;
        if p == 0 {
            return Err(Error::input("threads must be ≥ 1"));
        }
        match self {
            Fft => fft::run(p, n, false),
            FftRep => fft::run(p, n, true),
            LuContiguous => lu::run(p, n, lu::Layout::Contiguous, false),
            LuNonContiguous => lu::run(p, n, lu::Layout::RowMajor, false),
            LuRep => lu::run(p, n, lu::Layout::Contiguous, true),
            OceanContiguous => ocean::run(p, n, ocean::Layout::Contiguous, false),
            OceanNonContiguous => ocean::run(p, n, ocean::Layout::RowMajor, false),
            OceanRep => ocean::run(p, n, ocean::Layout::Contiguous, true),
            Radix => radix::run(p, n, false),
            RadixRep => radix::run(p, n, true),
            Raytrace => raytrace::run(p, n, false),
            RaytraceRep => raytrace::run(p, n, true),
            Water => water::run(p, n, false),
            WaterRep => water::run(p, n, true),
            DhtLp => dht::run(p, n, dht::Kind::LinearProbing),
            DhtSc => dht::run(p, n, dht::Kind::SeparateChaining),
        }
    }
}

/// A failed self-check of a kernel.
fn verify(ok: bool, what: impl FnOnce() -> String) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::runtime(format!(
            "kernel verification failed: {}",
            what()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kernel runs and verifies itself at tiny size on a few thread counts, and
    /// produces the same traces when run again.
    #[test]
    fn kernels_run_verify_and_are_deterministic() {
        for b in Benchmark::ALL {
            for p in [1, 4, 6] {
                let traces = b
                    .generate(p, b.tiny_size())
                    .unwrap_or_else(|e| panic!("{}: {e}", b.name()));
                assert_eq!(traces.len(), p);
                assert!(
                    traces.iter().map(|t| t.len()).sum::<usize>() > 100,
                    "{}",
                    b.name()
                );
                if p == 4 {
                    assert!(
                        traces == b.generate(p, b.tiny_size()).unwrap(),
                        "{} not deterministic",
                        b.name()
                    );
                }
            }
        }
    }

    #[test]
    fn rejects_bad_sizes_and_names() {
        assert!(Benchmark::Fft.generate(4, 1000).is_err());
        assert!(Benchmark::LuContiguous.generate(4, 30).is_err());
        assert!(Benchmark::from_name("nope").is_err());
        assert_eq!(Benchmark::from_name("dht_lp").unwrap(), Benchmark::DhtLp);
    }
}
