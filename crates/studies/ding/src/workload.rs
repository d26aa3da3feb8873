//! The machine and the PARSEC programs of the evaluation, described by physical
//! parameters; the simulator's own memory model turns them into run times.
//!
//! **Machine.** The paper's testbed is an 8-core, 32 GB Dell PowerEdge R910 (Xeon 7500
//! series, "Nehalem-EX") with frequencies modulated for asymmetry; the `ding` preset
//! (`machines/ding.toml`) writes down our layout: two NUMA nodes of four cores, in each
//! two fast (capacity 1024) and two slow (512, half the clock) cores, distances 10/20.
//! The preset gives no memory bandwidth; [`machine`] adds [`NODE_BANDWIDTH`] per node.
//!
//! **Programs.** Each program is [`THREADS`] threads (one per core) described by what a
//! characterisation measures, not by what a scheduler would compute: its core cycles per
//! instruction with a perfect last-level cache ([`CORE_CPI`]), its LLC misses per 1,000
//! instructions (by its working-set class, [`WorkingSet::mpki`]), the bytes a miss moves
//! ([`LINE_BYTES`]), its resident memory and how its work is split over its threads (by
//! its parallelisation model, [`Parallelism`]). The classes are Bienia, Kumar, Singh,
//! Li (PACT 2008), Table 1; the numbers per class are ours (the assumptions below).
//!
//! **What turns them into time** (the machine, not the policy): a miss stalls the core
//! for the local memory latency ([`MEMORY_LATENCY_NS`]) over the misses a core keeps in
//! flight ([`MISSES_IN_FLIGHT`]), so alone on a capacity-1024 core with local memory a
//! thread takes `CORE_CPI / f + mpki / 1000 × latency / in-flight` ns per instruction.
//! From that, [`Program::threads`] gives the simulator the task's memory-bound fraction
//! at that reference point, its instruction rate and its bandwidth draw (misses/s ×
//! 64 bytes). Everything away from that reference point is the simulator's
//! (`hetsched_sim::speed`): the core-bound part scales with the core's capacity,
//! remote memory multiplies the memory-bound part by the distance ratio, and a node
//! whose running tasks draw more than its bandwidth stretches every such task's
//! memory-bound part by demand / bandwidth. numa-amp sees none of this: it gets the
//! simulator's counter samples (instructions, cycles, LLC misses, busy time) and
//! estimates its factors with its own miss latency (`miss_latency_ns`, 100 ns by
//! default), which is not the machine's stall per miss.

use hetsched_core::machine::{Machine, UnitGranularity};
use hetsched_core::Result;
use hetsched_sim::engine::REFERENCE_GHZ;
use hetsched_sim::SimTask;

hetsched_study::assumptions! { "ding";
    /// Memory bandwidth per NUMA node, bytes/s: 6.25 GB/s, a quarter of the 25 GB/s
    /// (low end of 25–29 GB/s) STREAM Triad that AnandTech measured with all threads on
    /// Xeon X7560s in a Dell R810 (J. De Gelas, "Dell R810: Xeon 7500", 2010,
    /// anandtech.com/show/3648, p. 7): one socket's share if that R810 had four (it
    /// takes two or four; with two the share is 12.5 GB/s, a sensitivity run). The
    /// paper gives none; its R910 has the same memory system (Xeon 7500, SMI links to
    /// DDR3 buffers), so the per-node figure is ours.
    pub const NODE_BANDWIDTH: f64 = 6.25e9;
    /// Local memory latency, ns: 160 ns, SiSoft Sandra's memory latency of a Xeon X7560
    /// in the same AnandTech review (p. 7, latency table). Not from the paper.
    pub const MEMORY_LATENCY_NS: f64 = 160.0;
    /// LLC misses a core overlaps on average (memory-level parallelism): 4, ours. The
    /// same review gives one thread 5 GB/s of STREAM bandwidth, i.e. 5 GB/s × 160 ns /
    /// 64 B = 12.5 lines in flight for streaming; a dependent pointer chase keeps 1.
    /// The stall per miss is the latency over this: 40 ns.
    pub const MISSES_IN_FLIGHT: f64 = 4.0;
    /// STREAM bandwidth of one thread, bytes/s: 5 GB/s on the Xeon X7560 with DDR3-1066
    /// (same AnandTech page; not from the paper, which gives none); used only by the
    /// sensitivity run with a streaming thread's misses in flight (5 GB/s × 160 ns /
    /// 64 B = 12.5).
    pub const ONE_THREAD_STREAM: f64 = 5e9;
    /// Core cycles per instruction of every program with a perfect LLC (our choice: no
    /// citable per-program CPI was found).
    pub const CORE_CPI: f64 = 1.0;
    /// Mean work per thread, reference seconds (a capacity-1024 core, local memory,
    /// uncontended); the paper's PARSEC inputs and run times are not given.
    pub const WORK_S: f64 = 2.0;
    /// LLC misses per 1,000 instructions of a program with a small working set (fits a
    /// Xeon 7500's 18–24 MB LLC: a DINO turtle, below 2); our mapping, no citable figure.
    pub const MPKI_SMALL: f64 = 0.5;
    /// LLC MPKI of a medium working set (fits the LLC: a turtle); our mapping.
    pub const MPKI_MEDIUM: f64 = 1.5;
    /// LLC MPKI of a large working set (a DINO semi-devil); our mapping.
    pub const MPKI_LARGE: f64 = 5.0;
    /// LLC MPKI of an unbounded working set (a DINO devil, above 10); our mapping,
    /// possibly too high for a large LLC (docs/ding.md).
    pub const MPKI_UNBOUNDED: f64 = 15.0;
    /// Resident memory page migration moves, bytes, by working-set class (small,
    /// medium, large, unbounded): our choice, the order of the simlarge inputs.
    pub const FOOTPRINT_BYTES: [f64; 4] = [64e6, 256e6, 512e6, 1e9];
    /// Work imbalance of a pipeline program's threads: thread `i` of 8 does
    /// `WORK_S × (1 − s + 2 s i / 7)`, from 0.5× to 1.5× the mean for s = 0.5 (its
    /// stages differ in work; ours, no per-stage figure cited). Data-parallel and
    /// unstructured programs split their work evenly.
    pub const PIPELINE_SPREAD: f64 = 0.5;
    /// The node holding each program's memory, by its position in the run (first,
    /// second): a PARSEC program reads its input in its main thread before it starts
    /// its workers, so under Linux's first-touch allocation its data is on the main
    /// thread's node; we put the first program's on node 0 and the second's on node 1
    /// (ours: where the main thread starts is not known).
    pub const DATA_NODES: [u32; 2] = [0, 1];
}

/// Threads per program: one per core.
pub const THREADS: usize = 8;
/// Bytes per LLC miss: the Xeon 7500's 64-byte cache line, what a miss draws from
/// memory bandwidth (write-backs are not counted).
pub const LINE_BYTES: f64 = 64.0;

/// Bienia et al.'s working-set classes (PACT 2008, Table 1).
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
        Memory::ASSUMED.mpki(self)
    }

    /// The program's resident memory, bytes, that page migration moves (our choice,
    /// the order of the simlarge inputs).
    pub fn footprint(self) -> f64 {
        FOOTPRINT_BYTES[self as usize]
    }
}

/// The machine's memory and the programs' miss rates per working-set class: the
/// assumptions above ([`Memory::ASSUMED`]), or a variant of them for the sensitivity
/// runs (`experiment::SENSITIVITY`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Memory {
    /// Bytes/s per node; `None`: unlimited.
    pub node_bandwidth: Option<f64>,
    pub latency_ns: f64,
    pub misses_in_flight: f64,
    /// LLC MPKI by working-set class (small, medium, large, unbounded).
    pub mpki: [f64; 4],
}

impl Memory {
    /// The evaluation's memory: the assumptions of this module.
    pub const ASSUMED: Memory = Memory {
        node_bandwidth: Some(NODE_BANDWIDTH),
        latency_ns: MEMORY_LATENCY_NS,
        misses_in_flight: MISSES_IN_FLIGHT,
        mpki: [MPKI_SMALL, MPKI_MEDIUM, MPKI_LARGE, MPKI_UNBOUNDED],
    };

    /// The core's stall per LLC miss, ns: the latency over the misses in flight.
    pub fn stall_per_miss_ns(&self) -> f64 {
        self.latency_ns / self.misses_in_flight
    }

    /// LLC misses per 1,000 instructions of a working-set class.
    pub fn mpki(&self, ws: WorkingSet) -> f64 {
        self.mpki[ws as usize]
    }

    /// The `ding` preset with this node bandwidth.
    pub fn machine(&self) -> Result<Machine> {
        let mut m = hetsched_topology::load("ding", UnitGranularity::Core)?;
        for node in &mut m.numa_nodes {
            node.bandwidth_bytes_per_s = self.node_bandwidth;
        }
        Ok(m)
    }
}

/// Bienia et al.'s parallelisation models (PACT 2008, Table 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Parallelism {
    DataParallel,
    Pipeline,
    Unstructured,
}

/// A PARSEC program.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Program {
    pub name: &'static str,
    pub working_set: WorkingSet,
    pub parallelism: Parallelism,
}

/// One PARSEC program per distinct (working set, parallelisation model) of Bienia et
/// al.'s Table 1: the characterisation tells the other programs apart only by
/// qualitative columns (granularity, sharing, exchange) that this model has no number
/// for, so more names would run identical threads. Left out: bodytrack,
/// streamcluster and vips (medium, data-parallel, as swaptions), facesim (large,
/// data-parallel, as fluidanimate), ferret (unbounded, pipeline, as dedup), freqmine
/// (unbounded; data-parallel and balanced, as canneal is here), and raytrace (not in
/// that table: PARSEC 2.0).
pub const PROGRAMS: [Program; 6] = {
    use Parallelism::*;
    use WorkingSet::*;
    const fn p(name: &'static str, working_set: WorkingSet, parallelism: Parallelism) -> Program {
        Program {
            name,
            working_set,
            parallelism,
        }
    }
    [
        p("blackscholes", Small, DataParallel),
        p("swaptions", Medium, DataParallel),
        p("x264", Medium, Pipeline),
        p("fluidanimate", Large, DataParallel),
        p("canneal", Unbounded, Unstructured),
        p("dedup", Unbounded, Pipeline),
    ]
};

/// The `ding` preset with [`NODE_BANDWIDTH`] per node.
pub fn machine() -> Result<Machine> {
    Memory::ASSUMED.machine()
}

/// The core's stall per LLC miss on this machine, ns: the latency over the misses in
/// flight.
pub fn stall_per_miss_ns() -> f64 {
    Memory::ASSUMED.stall_per_miss_ns()
}

impl Program {
    /// Memory stall per instruction, ns, with local, uncontended memory.
    fn stall_ns(&self, m: &Memory) -> f64 {
        m.mpki(self.working_set) / 1000.0 * m.stall_per_miss_ns()
    }

    /// Nanoseconds per instruction at clock `ghz`, local memory, uncontended.
    fn ns_per_instruction(&self, m: &Memory, ghz: f64) -> f64 {
        CORE_CPI / ghz + self.stall_ns(m)
    }

    /// The fraction of a capacity-1024 core's time the program waits for local memory,
    /// uncontended: what the simulator stretches by distance and bandwidth sharing.
    pub fn memory_bound_in(&self, m: &Memory) -> f64 {
        self.stall_ns(m) / self.ns_per_instruction(m, REFERENCE_GHZ)
    }

    /// Instructions per second alone on a capacity-1024 core, local memory.
    pub fn instructions_per_s_in(&self, m: &Memory) -> f64 {
        1e9 / self.ns_per_instruction(m, REFERENCE_GHZ)
    }

    /// The memory bandwidth one thread draws alone on a capacity-1024 core, bytes/s.
    pub fn bandwidth_per_thread_in(&self, m: &Memory) -> f64 {
        self.instructions_per_s_in(m) * m.mpki(self.working_set) / 1000.0 * LINE_BYTES
    }

    /// The machine's speed-up of a thread from a slow (512, half the clock) to a fast
    /// (1024) core, local memory, uncontended: what numa-amp tries to estimate.
    pub fn speedup_in(&self, m: &Memory) -> f64 {
        self.ns_per_instruction(m, REFERENCE_GHZ / 2.0) / self.ns_per_instruction(m, REFERENCE_GHZ)
    }

    /// [`Self::memory_bound_in`] the assumed memory.
    pub fn memory_bound(&self) -> f64 {
        self.memory_bound_in(&Memory::ASSUMED)
    }

    /// [`Self::instructions_per_s_in`] the assumed memory.
    pub fn instructions_per_s(&self) -> f64 {
        self.instructions_per_s_in(&Memory::ASSUMED)
    }

    /// [`Self::bandwidth_per_thread_in`] the assumed memory.
    pub fn bandwidth_per_thread(&self) -> f64 {
        self.bandwidth_per_thread_in(&Memory::ASSUMED)
    }

    /// [`Self::speedup_in`] the assumed memory.
    pub fn speedup(&self) -> f64 {
        self.speedup_in(&Memory::ASSUMED)
    }

    /// What all its threads running at once draw from the node holding its memory,
    /// over that node's bandwidth (above 1: the node's bandwidth binds).
    pub fn node_demand_ratio(&self) -> f64 {
        THREADS as f64 * self.bandwidth_per_thread() / NODE_BANDWIDTH
    }

    /// Work of thread `i`, reference seconds (see [`PIPELINE_SPREAD`]).
    pub fn work_s(&self, i: usize) -> f64 {
        match self.parallelism {
            Parallelism::Pipeline => {
                let x = i as f64 / (THREADS - 1) as f64;
                WORK_S * (1.0 - PIPELINE_SPREAD + 2.0 * PIPELINE_SPREAD * x)
            }
            Parallelism::DataParallel | Parallelism::Unstructured => WORK_S,
        }
    }

    /// Its threads on memory `m`, ids from `first_id`, arriving at 0, their memory on
    /// `node`.
    pub fn threads_in(&self, m: &Memory, first_id: u64, node: u32) -> Vec<SimTask> {
        (0..THREADS)
            .map(|i| {
                let mut t = SimTask::cpu(first_id + i as u64, self.work_s(i), 0);
                t.kind = self.name.into();
                t.set_numa_home(Some(node));
                t.model.memory_bound = self.memory_bound_in(m);
                t.model.instructions_per_s = self.instructions_per_s_in(m);
                t.model.llc_mpki = m.mpki(self.working_set);
                t.model.mem_bandwidth = self.bandwidth_per_thread_in(m);
                t.model.memory_bytes = self.working_set.footprint() / THREADS as f64;
                t
            })
            .collect()
    }

    /// [`Self::threads_in`] the assumed memory.
    pub fn threads(&self, first_id: u64, node: u32) -> Vec<SimTask> {
        self.threads_in(&Memory::ASSUMED, first_id, node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name once, and no two programs with the same parameters: each differs
    /// from the others in working set or parallelisation model.
    #[test]
    fn no_program_duplicates_another() {
        for (i, a) in PROGRAMS.iter().enumerate() {
            for b in &PROGRAMS[i + 1..] {
                assert_ne!(a.name, b.name);
                assert!(
                    (a.working_set, a.parallelism) != (b.working_set, b.parallelism),
                    "{} and {} would run identical threads",
                    a.name,
                    b.name
                );
            }
        }
    }

    /// The per-thread model by hand: canneal (15 MPKI) stalls 15 / 1000 × 160 / 4 =
    /// 0.6 ns per instruction beside 1 / 2 GHz = 0.5 ns of core time: 1.1 ns, μ = 6/11,
    /// 0.909 G instructions/s, 13.6 M misses/s, 0.873 GB/s.
    #[test]
    fn canneal_by_hand() {
        let c = PROGRAMS.iter().find(|p| p.name == "canneal").unwrap();
        let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-9 * b.abs().max(1.0), "{a} {b}");
        close(stall_per_miss_ns(), 40.0);
        close(c.memory_bound(), 0.6 / 1.1);
        close(c.instructions_per_s(), 1e9 / 1.1);
        close(c.bandwidth_per_thread(), 15e-3 / 1.1e-9 * 64.0);
        close(c.speedup(), 1.6 / 1.1);
    }

    /// The NUMA half has something to decide: the unbounded-working-set programs'
    /// eight threads draw more than their node's bandwidth when they all run against
    /// it, and the cache-resident ones do not (so the bandwidth binds only where the
    /// characterisation says memory matters).
    #[test]
    fn memory_bandwidth_binds_for_the_memory_heavy_programs_only() {
        for p in PROGRAMS {
            let ratio = p.node_demand_ratio();
            match p.working_set {
                WorkingSet::Unbounded => assert!(ratio > 1.0, "{}: {ratio}", p.name),
                _ => assert!(ratio < 1.0, "{}: {ratio}", p.name),
            }
        }
        // Spread over both nodes, four threads a node, it does not bind.
        assert!(PROGRAMS.iter().all(|p| p.node_demand_ratio() / 2.0 < 1.0));
    }

    /// A pipeline's threads do unequal work of the same total; the others' equal work.
    #[test]
    fn pipeline_threads_are_imbalanced_with_the_same_total() {
        for p in PROGRAMS {
            let work: Vec<f64> = (0..THREADS).map(|i| p.work_s(i)).collect();
            let total: f64 = work.iter().sum();
            assert!((total - WORK_S * THREADS as f64).abs() < 1e-9, "{}", p.name);
            let spread = work.iter().copied().fold(f64::MIN, f64::max)
                - work.iter().copied().fold(f64::MAX, f64::min);
            match p.parallelism {
                Parallelism::Pipeline => assert!(spread > 0.5 * WORK_S, "{}", p.name),
                _ => assert_eq!(spread, 0.0, "{}", p.name),
            }
        }
    }
}
