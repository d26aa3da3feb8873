//! The machine and the PARSEC-like programs of the evaluation.
//!
//! The paper's testbed is an 8-core, 32 GB Dell PowerEdge R910 with frequencies
//! modulated for asymmetry; the `ding` preset (`machines/ding.toml`) writes down our
//! layout: two NUMA nodes of four cores, in each two fast (capacity 1024) and two slow
//! (512, half the clock) cores, distances 10/20. The preset gives no memory bandwidth,
//! without which the simulator models no contention: [`machine`] adds
//! [`NODE_BANDWIDTH`] per node (our assumption).
//!
//! A program is [`THREADS`] equal threads (data-parallel, one per core). Its memory
//! intensity comes from the working-set class of Bienia, Kumar, Singh, Li (PACT 2008,
//! Table 1), mapped onto DINO's classes by our choice ([`WorkingSet::mpki`]); its core
//! CPI is [`CORE_CPI`] for all (the characterisation gives none we could use). The
//! workload model is then made consistent with numa-amp's CAMP-style model: per
//! instruction `t = c / f + mpki / 1000 × L` at the reference clock, so the
//! memory-bound fraction the simulator uses is `m / t` and the counters it reports
//! (`instructions_per_s`, `llc_mpki`) give back the same `c` and MPKI.

use hetsched_core::machine::{Machine, UnitGranularity};
use hetsched_core::Result;
use hetsched_sim::engine::REFERENCE_GHZ;
use hetsched_sim::SimTask;

hetsched_study::assumptions! { "ding";
    /// Memory bandwidth per NUMA node, bytes/s: 10 GB/s, our assumption for a Xeon 7500
    /// socket's sustained bandwidth (not a measured value; the paper gives none).
    pub const NODE_BANDWIDTH: f64 = 10e9;
    /// The LLC miss latency of the model, ns: the same as numa-amp's default
    /// `miss_latency_ns`, so the policy's model matches the simulated one; the paper
    /// gives none.
    pub const MISS_LATENCY_NS: f64 = 100.0;
    /// Core cycles per instruction of every program (our choice: no citable per-program
    /// CPI was found).
    pub const CORE_CPI: f64 = 1.0;
    /// Work per thread, reference seconds (a capacity-1024 core); the paper's PARSEC
    /// inputs and run times are not given.
    pub const WORK_S: f64 = 2.0;
    /// LLC misses per 1,000 instructions of a program with a small working set (fits a
    /// Xeon 7500's 18–24 MB LLC: a DINO turtle, below 2); our mapping, no citable figure.
    pub const MPKI_SMALL: f64 = 0.5;
    /// LLC MPKI of a medium working set (fits the LLC: a turtle); our mapping.
    pub const MPKI_MEDIUM: f64 = 1.5;
    /// LLC MPKI of a large working set (a DINO semi-devil); our mapping.
    pub const MPKI_LARGE: f64 = 5.0;
    /// LLC MPKI of an unbounded working set (a DINO devil, above 10); our mapping,
    /// probably too high for a large LLC (docs/ding.md).
    pub const MPKI_UNBOUNDED: f64 = 15.0;
    /// Resident memory page migration moves, bytes, by working-set class (small,
    /// medium, large, unbounded): our choice, the order of the simlarge inputs.
    pub const FOOTPRINT_BYTES: [f64; 4] = [64e6, 256e6, 512e6, 1e9];
}

/// Threads per program: one per core.
pub const THREADS: usize = 8;
/// Bytes per LLC miss (a cache line): what a miss draws from memory bandwidth.
pub const LINE_BYTES: f64 = 64.0;

/// Bienia et al.'s working-set classes (Table 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkingSet {
    Small,
    Medium,
    Large,
    Unbounded,
}

impl WorkingSet {
    /// LLC misses per 1,000 instructions (our mapping onto DINO's classes: small and
    /// medium working sets fit a Xeon 7500's 18–24 MB LLC — turtles, below 2; large is a
    /// semi-devil; unbounded a devil, above 10).
    pub fn mpki(self) -> f64 {
        match self {
            WorkingSet::Small => MPKI_SMALL,
            WorkingSet::Medium => MPKI_MEDIUM,
            WorkingSet::Large => MPKI_LARGE,
            WorkingSet::Unbounded => MPKI_UNBOUNDED,
        }
    }

    /// The program's resident memory, bytes, that page migration moves (our choice,
    /// the order of the simlarge inputs).
    pub fn footprint(self) -> f64 {
        FOOTPRINT_BYTES[self as usize]
    }
}

/// A PARSEC program.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Program {
    pub name: &'static str,
    pub working_set: WorkingSet,
}

/// The 13 PARSEC 2.0 programs with their working-set class (Bienia et al., Table 1).
pub const PROGRAMS: [Program; 13] = {
    use WorkingSet::*;
    const fn p(name: &'static str, working_set: WorkingSet) -> Program {
        Program { name, working_set }
    }
    [
        p("blackscholes", Small),
        p("bodytrack", Medium),
        p("canneal", Unbounded),
        p("dedup", Unbounded),
        p("facesim", Large),
        p("ferret", Unbounded),
        p("fluidanimate", Large),
        p("freqmine", Unbounded),
        p("raytrace", Unbounded),
        p("streamcluster", Medium),
        p("swaptions", Medium),
        p("vips", Medium),
        p("x264", Medium),
    ]
};

/// The `ding` preset with [`NODE_BANDWIDTH`] per node.
pub fn machine() -> Result<Machine> {
    let mut m = hetsched_topology::load("ding", UnitGranularity::Core)?;
    for node in &mut m.numa_nodes {
        node.bandwidth_bytes_per_s = Some(NODE_BANDWIDTH);
    }
    Ok(m)
}

impl Program {
    /// Nanoseconds per instruction on a capacity-1024 core: `c / f + m`.
    fn ns_per_instruction(&self) -> f64 {
        CORE_CPI / REFERENCE_GHZ + self.stall_ns()
    }

    /// Memory stall per instruction, ns.
    fn stall_ns(&self) -> f64 {
        self.working_set.mpki() / 1000.0 * MISS_LATENCY_NS
    }

    /// The fraction of a capacity-1024 core's time the program waits for memory.
    pub fn memory_bound(&self) -> f64 {
        self.stall_ns() / self.ns_per_instruction()
    }

    /// The speed-up factor from a slow (512) to a fast (1024) core the model implies.
    pub fn speedup(&self) -> f64 {
        (CORE_CPI / (REFERENCE_GHZ / 2.0) + self.stall_ns()) / self.ns_per_instruction()
    }

    /// Its threads, ids from `first_id`, arriving at 0. A thread's memory is
    /// allocated on first touch: on the node of the first core it runs on.
    pub fn threads(&self, first_id: u64) -> Vec<SimTask> {
        let instructions_per_s = 1e9 / self.ns_per_instruction();
        let mpki = self.working_set.mpki();
        (0..THREADS)
            .map(|i| {
                let mut t = SimTask::cpu(first_id + i as u64, WORK_S, 0);
                t.kind = self.name.into();
                t.model.first_touch = true;
                t.model.memory_bound = self.memory_bound();
                t.model.instructions_per_s = instructions_per_s;
                t.model.llc_mpki = mpki;
                t.model.mem_bandwidth = instructions_per_s * mpki / 1000.0 * LINE_BYTES;
                t.model.memory_bytes = self.working_set.footprint() / THREADS as f64;
                t
            })
            .collect()
    }
}
