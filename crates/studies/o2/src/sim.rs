//! The paper's evaluation, simulated on the paper's machine: four quad-core 2 GHz
//! Opteron chips, each core with private L1 and L2, each chip an L3; L1 3, L2 14, L3
//! 75 cycles; remote fetches 127–336 cycles; a CORETIME migration 2000 cycles.
//!
//! Every lookup's memory accesses (the directory lock, then the entries up to the one
//! looked for) run through per-core L1/L2 and per-chip L3 models (`hetsched-cachesim`,
//! true LRU). Modelling choices, each stated where it is made:
//! - L2 and L3 are exclusive (the L3 is the L2s' victim cache, as on these chips), so
//!   the chips hold 16 × 512 KB + 4 × 2 MB = 16 MB of distinct data, the paper's total.
//! - An L3 miss is served by memory: 127 cycles from the chip's own node, 336 from the
//!   most distant one (two hops on the square of four chips), 231.5 for one hop;
//!   directories are spread round-robin over the four nodes.
//! - The L3 keeps a copy of lines likely to be shared, as AMD describes Family 10h's;
//!   "likely shared" here means asked for by another core than the one whose L2
//!   evicted the line: that core moves it back up (exclusive), another core of the
//!   chip leaves a copy (shared). A line in a sibling core's L2 is
//!   served on chip at L3 latency. So for data every core reads, a chip holds about
//!   one L3 of it, not L3 + 4 L2s — the paper's "a copy fits every L3" up to 2 MB.
//! - A scan is a sequential stream: each line costs an L1 access (3 cycles, the
//!   compare work) plus, on an L1 miss, its extra latency divided by `mlp` (misses in
//!   flight; default 8, the L1 data cache's miss buffers on these chips). The lock is
//!   one dependent access at full latency; taking it invalidates every other copy.
//! - Memory bandwidth (not in the paper; a parameter, default 10.6 GB/s per node):
//!   each node's controller streams one line at a time, so when many cores miss at
//!   once their lookups queue for it.
//! - Time: each core is a resource; a thread's lookup runs on its own core or, under
//!   O², on the owner's, paying half the migration each way; lookups run in the order
//!   they reach their core (a delegated one arrives half a migration after it was
//!   issued), so busy owners make callers wait.
//! - O² placement follows CORETIME: a first thread-based phase counts each directory's
//!   fetch cycles per lookup (the simulated cache-miss counters); directories costing
//!   more than a migration are packed first fit into cores (capacity: L2 + a quarter
//!   of the chip's L3; load bounded per core), then O² runs.

use crate::fatfs::ENTRY_BYTES;
use crate::packing::{load_cap, pack, Bin, Item};
use hetsched_cachesim::{Access, Cache, Geometry};
use hetsched_core::{Error, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const LINE: u64 = 64;

hetsched_study::assumptions! { "coretime";
    /// Memory bandwidth of each chip's node, GB/s. The paper does not give it; the
    /// default is a dual-channel DDR2-667 controller's peak (10.6 GB/s), the memory these
    /// Opteron platforms shipped with. The 2–3× gain above 2 MB depends on it: swept by
    /// `hetsched experiment coretime-sim --mem-gbps` and in `reproduce`.
    pub const MEM_GBPS: f64 = 10.6;
    /// Misses in flight during a directory scan (memory-level parallelism). The paper
    /// does not say how far a scan's misses overlap; 8 is the L1 data cache's miss
    /// buffers on these chips.
    pub const MLP: f64 = 8.0;
    /// Cycles between two monitoring periods of CORETIME's runtime rebalancing (1 ms at
    /// 2 GHz). The paper says only "periodically".
    pub const MONITOR_PERIOD_CYCLES: f64 = 2_000_000.0;
    /// A core is "rarely idle" when it is idle less than this share of a period. The
    /// paper gives no threshold.
    pub const RARELY_IDLE: f64 = 0.10;
    /// A core "often loads from DRAM" when its lookups fetch more than this many lines
    /// from memory per lookup in a period (a 1000-entry directory is 500 lines). The
    /// paper gives no threshold.
    pub const OFTEN_DRAM_LINES_PER_LOOKUP: f64 = 50.0;
    /// Monitoring periods at the start of a run whose counters only fill the caches: no
    /// decision is taken from them (cold misses would make every directory look
    /// expensive to fetch, and CORETIME never takes an assignment back). The paper does
    /// not say how CORETIME starts.
    pub const WARMUP_PERIODS: u32 = 1;
    /// The "portion" of a hot core's objects a period moves to the best other core.
    /// The paper does not say how much; the live runtime moves a quarter too.
    pub const MOVED_PORTION: f64 = 0.25;
    /// Chips of the paper's AMD machine: the paper's setup, §Preliminary evidence ("four
    /// quad-core 2 GHz Opteron chips").
    pub const CHIPS: usize = 4;
    /// Cores per chip: the paper's setup, §Preliminary evidence (quad-core chips).
    pub const CORES_PER_CHIP: usize = 4;
    /// Core clock, GHz: the paper's setup, §Preliminary evidence (2 GHz).
    pub const GHZ: f64 = 2.0;
    /// Each core's L1 data cache: its size is the paper's setup, §Preliminary evidence
    /// (64 KB); its ways and 64-byte lines are from AMD's data sheet of the quad-core
    /// Opteron (our source: the paper gives none).
    pub const L1: Geometry = Geometry {
        size_bytes: 64 << 10,
        ways: 2,
        line_bytes: 64,
    };
    /// Each core's L2: its size is the paper's setup, §Preliminary evidence (512 KB; 16
    /// of them and four L3s make its 16 MB); ways and lines from AMD's data sheet (our
    /// source: the paper gives none).
    pub const L2: Geometry = Geometry {
        size_bytes: 512 << 10,
        ways: 16,
        line_bytes: 64,
    };
    /// Each chip's L3: its size is the paper's setup, §Preliminary evidence (2 MB); ways
    /// and lines from AMD's data sheet (our source: the paper gives none).
    pub const L3: Geometry = Geometry {
        size_bytes: 2 << 20,
        ways: 32,
        line_bytes: 64,
    };
    /// L1 hit latency, cycles: the paper's setup, §Preliminary evidence (3 cycles).
    pub const L1_CYCLES: f64 = 3.0;
    /// L2 hit latency, cycles: the paper's setup, §Preliminary evidence (14 cycles).
    pub const L2_CYCLES: f64 = 14.0;
    /// L3 hit latency, cycles: the paper's setup, §Preliminary evidence (75 cycles).
    pub const L3_CYCLES: f64 = 75.0;
    /// Memory latency from the chip's own node, cycles: the paper's setup, §Preliminary
    /// evidence (remote fetches "127 to 336 cycles"; the nearest taken as the local node).
    pub const MEM_NEAR_CYCLES: f64 = 127.0;
    /// Memory latency from the most distant node (two hops), cycles: the paper's setup,
    /// §Preliminary evidence (the 336 of "127 to 336 cycles").
    pub const MEM_FAR_CYCLES: f64 = 336.0;
    /// Cost of a CORETIME migration (both ways), cycles: the paper's setup, §Preliminary
    /// evidence (2000 cycles).
    pub const MIGRATION_CYCLES: f64 = 2000.0;
    /// Slack over the mean load a core may take when O² packs directories into cores
    /// (load bounded per core at (1 + slack) × the mean): our choice; the paper does not
    /// say how CORETIME bounds a core's load. The live runtime's default is the same.
    pub const LOAD_SLACK: f64 = 0.15;
    /// Memory bandwidths per node swept by the reproduction, GB/s (0 = unlimited): our
    /// choice, halving and doubling `MEM_GBPS` (the paper does not give the bandwidth).
    pub const BANDWIDTHS: [f64; 5] = [0.0, 5.3, MEM_GBPS, 21.2, 42.4];
}

/// The simulated machine and workload parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct SimMachine {
    pub chips: usize,
    pub cores_per_chip: usize,
    pub l1: Geometry,
    pub l2: Geometry,
    pub l3: Geometry,
    pub l1_cycles: f64,
    pub l2_cycles: f64,
    pub l3_cycles: f64,
    /// Memory latency from the local node and from the most distant one.
    pub mem_near_cycles: f64,
    pub mem_far_cycles: f64,
    pub migration_cycles: f64,
    /// Lines of a sequential scan in flight.
    pub mlp: f64,
    pub ghz: f64,
    /// Memory bandwidth of each chip's node, GB/s (0 = unlimited). Not in the paper:
    /// the default is a dual-channel DDR2-667 controller (10.6 GB/s), the memory these
    /// Opteron platforms shipped with.
    pub mem_gbps: f64,
}

impl SimMachine {
    /// The paper's AMD machine (cache geometries of the quad-core Opteron: 64 KB 2-way
    /// L1D, 512 KB 16-way L2, 2 MB 32-way L3, 64-byte lines).
    pub fn paper() -> Self {
        SimMachine {
            chips: CHIPS,
            cores_per_chip: CORES_PER_CHIP,
            l1: L1,
            l2: L2,
            l3: L3,
            l1_cycles: L1_CYCLES,
            l2_cycles: L2_CYCLES,
            l3_cycles: L3_CYCLES,
            mem_near_cycles: MEM_NEAR_CYCLES,
            mem_far_cycles: MEM_FAR_CYCLES,
            migration_cycles: MIGRATION_CYCLES,
            mlp: MLP,
            ghz: GHZ,
            mem_gbps: MEM_GBPS,
        }
    }

    /// Total cores.
    pub fn cores(&self) -> usize {
        self.chips * self.cores_per_chip
    }

    fn validate(&self) -> Result<()> {
        for (name, g) in [("l1", self.l1), ("l2", self.l2), ("l3", self.l3)] {
            if g.sets().is_none() || g.line_bytes as u64 != LINE {
                return Err(Error::input(format!("simulated {name}: inconsistent geometry {g:?} (64-byte lines, power-of-two sets)")));
            }
        }
        if self.chips == 0 || self.cores_per_chip == 0 || self.mlp < 1.0 || self.ghz <= 0.0 {
            return Err(Error::input(
                "simulated machine: chips, cores per chip, mlp >= 1 and GHz must be positive",
            ));
        }
        Ok(())
    }

    /// Memory latency from `chip` to `node` (0, 1 or 2 hops on a square of chips).
    fn memory(&self, chip: usize, node: usize) -> f64 {
        let hops = match (chip % 4, node % 4) {
            (a, b) if a == b => 0,
            (a, b) if (a + b) % 2 == 1 => 1, // neighbours on the square 0-1-2-3-0
            _ => 2,
        };
        self.mem_near_cycles + (self.mem_far_cycles - self.mem_near_cycles) * hops as f64 / 2.0
    }

    /// Cycles a node's memory controller is busy per line (0 if unlimited).
    fn line_transfer_cycles(&self) -> f64 {
        if self.mem_gbps > 0.0 {
            LINE as f64 / (self.mem_gbps / self.ghz)
        } else {
            0.0
        }
    }
}

/// The simulated caches.
struct Caches {
    l1: Vec<Cache>,
    l2: Vec<Cache>,
    l3: Vec<Cache>,
    /// Per chip: which core's L2 evicted each L3 line into the L3, or [`SHARED`] once
    /// another core has hit it there (consulted only for lines the L3 holds).
    l3_history: Vec<FxHashMap<u64, u16>>,
}

/// An L3 line that more than one core of its chip has used.
const SHARED: u16 = u16::MAX;

/// Workload: `dirs` directories of `per_dir` entries.
#[derive(Clone, Copy, Debug)]
struct Layout {
    per_dir: usize,
    /// Bytes between directory starts (entries + lock line, padded to a line).
    stride: u64,
}

impl Layout {
    fn new(per_dir: usize) -> Self {
        let data = per_dir as u64 * ENTRY_BYTES;
        Layout {
            per_dir,
            stride: data.div_ceil(LINE) * LINE + LINE,
        }
    }
    fn lock_addr(&self, d: usize) -> u64 {
        d as u64 * self.stride + self.stride - LINE
    }
    fn entry_addr(&self, d: usize, e: usize) -> u64 {
        d as u64 * self.stride + e as u64 * ENTRY_BYTES
    }
}

struct Sim<'a> {
    m: &'a SimMachine,
    c: Caches,
    layout: Layout,
    /// Lines the current lookup fetched from memory.
    mem_lines: u64,
}

impl Sim<'_> {
    fn chip(&self, core: usize) -> usize {
        core / self.m.cores_per_chip
    }

    /// Reads one line on `core`; returns its latency in cycles.
    fn read(&mut self, core: usize, addr: u64, node: usize) -> f64 {
        let chip = self.chip(core);
        if self.c.l1[core].access(addr).is_hit() {
            return self.m.l1_cycles;
        }
        let evicted = match self.c.l2[core].access(addr) {
            Access::Hit => return self.m.l2_cycles,
            Access::Miss { evicted } => evicted,
        };
        let siblings = chip * self.m.cores_per_chip..(chip + 1) * self.m.cores_per_chip;
        let shared_on_chip = siblings
            .clone()
            .any(|c| c != core && self.c.l2[c].contains(addr));
        let line = addr / LINE;
        let from_l3 = self.l3_hit(chip, core, line, shared_on_chip);
        if let Some(victim) = evicted {
            self.l3_fill(chip, core, victim);
        }
        if from_l3 || shared_on_chip {
            // From the L3, or probed from a sibling core's L2 on the same chip.
            self.m.l3_cycles
        } else {
            self.mem_lines += 1;
            self.m.memory(chip, node)
        }
    }

    /// An L2 miss of `core` looks up the chip's L3: true on a hit. The core that put
    /// the line there takes it back (exclusive); for any other core — or when a sibling
    /// L2 holds it too — the L3 keeps it and marks it shared.
    fn l3_hit(&mut self, chip: usize, core: usize, line: u64, shared_on_chip: bool) -> bool {
        let l3 = &mut self.c.l3[chip];
        if !l3.contains(line * LINE) {
            return false;
        }
        let history = &mut self.c.l3_history[chip];
        if !shared_on_chip && history.get(&line) == Some(&(core as u16)) {
            l3.invalidate(line * LINE);
            history.remove(&line);
        } else {
            l3.access(line * LINE); // a kept line was just used
            history.insert(line, SHARED);
        }
        true
    }

    /// `core`'s L2 evicted `line`: it becomes the L3's (a victim cache).
    fn l3_fill(&mut self, chip: usize, core: usize, line: u64) {
        let history = &mut self.c.l3_history[chip];
        match self.c.l3[chip].access(line * LINE) {
            Access::Hit => {
                // A kept shared copy: still shared.
                if history.get(&line) != Some(&(core as u16)) {
                    history.insert(line, SHARED);
                }
            }
            Access::Miss { evicted } => {
                if let Some(old) = evicted {
                    history.remove(&old);
                }
                history.insert(line, core as u16);
            }
        }
    }

    /// One lookup on `core`: (cycles, fetch cycles, lines from memory).
    fn lookup(&mut self, core: usize, d: usize, entry: usize) -> (f64, f64, u64) {
        let node = d % self.m.chips;
        self.mem_lines = 0;
        let lock = self.layout.lock_addr(d);
        // Taking the lock writes its line: every other copy is invalidated.
        let mut cycles = self.write(core, lock, node);
        let mut fetch = cycles - self.m.l1_cycles;
        let first = self.layout.entry_addr(d, 0) / LINE;
        let last = self.layout.entry_addr(d, entry) / LINE;
        for line in first..=last {
            // Every line costs an L1 access (the compares); a miss adds its extra
            // latency, overlapped `mlp` ways by the sequential stream.
            let stall = (self.read(core, line * LINE, node) - self.m.l1_cycles) / self.m.mlp;
            cycles += self.m.l1_cycles + stall;
            fetch += stall;
        }
        (cycles, fetch.max(0.0), self.mem_lines)
    }

    fn write(&mut self, core: usize, addr: u64, node: usize) -> f64 {
        for other in 0..self.m.cores() {
            if other != core {
                self.c.l1[other].invalidate(addr);
                self.c.l2[other].invalidate(addr);
            }
        }
        let mine = self.chip(core);
        for chip in 0..self.m.chips {
            if chip != mine {
                self.c.l3[chip].invalidate(addr);
            }
        }
        self.read(core, addr, node)
    }
}

/// Which scheduler a simulated run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimMode {
    /// Every lookup runs on its thread's core.
    Threads,
    /// O² placed once, from the counters of a first thread-based phase, and never
    /// moved (the model before runtime rebalancing; kept to show its effect).
    O2Once,
    /// O² with CORETIME's runtime monitoring: starting from an empty table, every
    /// [`MONITOR_PERIOD_CYCLES`] the objects that were expensive to fetch are packed
    /// into the room left, and a portion of the objects of each core that is rarely
    /// idle or often loads from DRAM moves to the core with the most idle cycles and
    /// the fewest DRAM loads.
    O2,
}

/// Sweep parameters.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub machine: SimMachine,
    pub sizes: Vec<u64>,
    pub per_dir: usize,
    /// Lookups (all threads together) to warm the caches before measuring, per phase.
    pub warmup_lookups: usize,
    pub measured_lookups: usize,
    pub seed: u64,
}

/// One scheduler at one size.
#[derive(Clone, Debug, PartialEq)]
pub struct SimRun {
    pub lookups_per_s: f64,
    pub cycles_per_lookup: f64,
    /// Directories placed on a core at the end (O² only).
    pub assigned: usize,
    pub delegated: f64,
    /// Directories the runtime rebalancing moved between cores (O² only).
    pub moved: usize,
}

/// One size of the sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct SimPoint {
    pub total_bytes: u64,
    pub dirs: usize,
    pub threads: SimRun,
    /// O² with runtime monitoring and rebalancing (CORETIME).
    pub o2: SimRun,
    /// O² placed once and never moved.
    pub o2_once: SimRun,
}

/// A delegated lookup on its way to its owner.
#[derive(Clone, Copy)]
struct Travelling {
    dir: usize,
    entry: usize,
    owner: usize,
}

struct Engine<'a> {
    sim: Sim<'a>,
    dirs: usize,
    owner: Vec<Option<usize>>,
    /// Each thread's next event: (time, thread); its lookup is `travelling[thread]` if
    /// that is set, else a new one.
    events: BinaryHeap<Reverse<(u64, usize)>>,
    travelling: Vec<Option<Travelling>>,
    /// Time of the last event processed.
    now: f64,
    core_free: Vec<f64>,
    /// When each node's memory controller is next free.
    node_free: Vec<f64>,
    rng: Vec<ChaCha8Rng>,
    /// Per directory: lookups and fetch cycles (the simulated miss counters).
    ops: Vec<u64>,
    fetch: Vec<f64>,
    busy: Vec<f64>,
    /// CORETIME's runtime monitoring, when on.
    monitor: Option<Monitor>,
}

/// The counters of one monitoring period and what the monitoring did so far.
struct Monitor {
    start: f64,
    /// Per directory: lookups, fetch cycles, busy cycles this period.
    ops: Vec<u64>,
    fetch: Vec<f64>,
    busy: Vec<f64>,
    /// Per core: busy cycles, lookups run, lines loaded from memory this period.
    core_busy: Vec<f64>,
    core_lookups: Vec<u64>,
    core_mem: Vec<u64>,
    moved: usize,
    /// Periods completed so far.
    periods: u32,
}

impl Monitor {
    fn new(dirs: usize, cores: usize, start: f64) -> Self {
        Monitor {
            start,
            ops: vec![0; dirs],
            fetch: vec![0.0; dirs],
            busy: vec![0.0; dirs],
            core_busy: vec![0.0; cores],
            core_lookups: vec![0; cores],
            core_mem: vec![0; cores],
            moved: 0,
            periods: 0,
        }
    }
}

impl<'a> Engine<'a> {
    fn new(m: &'a SimMachine, dirs: usize, per_dir: usize, seed: u64) -> Self {
        let cores = m.cores();
        Engine {
            sim: Sim {
                m,
                c: Caches {
                    l1: (0..cores).map(|_| Cache::new(m.l1)).collect(),
                    l2: (0..cores).map(|_| Cache::new(m.l2)).collect(),
                    l3: (0..m.chips).map(|_| Cache::new(m.l3)).collect(),
                    l3_history: vec![FxHashMap::default(); m.chips],
                },
                layout: Layout::new(per_dir),
                mem_lines: 0,
            },
            node_free: vec![0.0; m.chips],
            dirs,
            owner: vec![None; dirs],
            events: (0..cores).map(|t| Reverse((0f64.to_bits(), t))).collect(),
            travelling: vec![None; cores],
            now: 0.0,
            core_free: vec![0.0; cores],
            rng: (0..cores)
                .map(|t| ChaCha8Rng::seed_from_u64(seed.wrapping_add(t as u64 * 7919)))
                .collect(),
            ops: vec![0; dirs],
            fetch: vec![0.0; dirs],
            busy: vec![0.0; dirs],
            monitor: None,
        }
    }

    /// Runs until `n` lookups have run, in the order they reach their cores; returns
    /// (elapsed cycles, how many of them were delegated).
    fn run(&mut self, n: usize) -> (f64, u64) {
        let m = self.sim.m;
        let start = self.now;
        let (mut done, mut delegated) = (0, 0);
        while done < n {
            let Some(Reverse((bits, t))) = self.events.pop() else {
                break;
            };
            let now = f64::from_bits(bits);
            self.now = now;
            let hop = m.migration_cycles / 2.0;
            let (d, entry, core, hop) = match self.travelling[t].take() {
                // Arrived at its owner.
                Some(l) => (l.dir, l.entry, l.owner, hop),
                None => {
                    let d = self.rng[t].random_range(0..self.dirs);
                    let entry = self.rng[t].random_range(0..self.sim.layout.per_dir);
                    match self.owner[d] {
                        Some(owner) if owner != t => {
                            self.travelling[t] = Some(Travelling {
                                dir: d,
                                entry,
                                owner,
                            });
                            self.events.push(Reverse(((now + hop).to_bits(), t)));
                            continue;
                        }
                        _ => (d, entry, t, 0.0),
                    }
                }
            };
            delegated += u64::from(hop > 0.0);
            done += 1;
            let (cycles, fetch, mem_lines) = self.sim.lookup(core, d, entry);
            let begin = now.max(self.core_free[core]);
            // Its memory lines queue at the directory's node: with bandwidth exhausted
            // the lookup ends when the controller has streamed them.
            let node = d % m.chips;
            let mut end = begin + cycles;
            if mem_lines > 0 && m.line_transfer_cycles() > 0.0 {
                let streamed =
                    self.node_free[node].max(begin) + mem_lines as f64 * m.line_transfer_cycles();
                self.node_free[node] = streamed;
                end = end.max(streamed);
            }
            self.core_free[core] = end;
            self.ops[d] += 1;
            self.fetch[d] += fetch;
            self.busy[d] += end - begin;
            if let Some(mon) = &mut self.monitor {
                mon.ops[d] += 1;
                mon.fetch[d] += fetch;
                mon.busy[d] += end - begin;
                mon.core_busy[core] += end - begin;
                mon.core_lookups[core] += 1;
                mon.core_mem[core] += mem_lines;
                if now - mon.start >= MONITOR_PERIOD_CYCLES {
                    self.monitor_period(now);
                }
            }
            // The thread issues its next lookup once the answer is back.
            self.events.push(Reverse(((end + hop).to_bits(), t)));
        }
        (self.now - start, delegated)
    }

    fn reset_counters(&mut self) {
        self.ops.iter_mut().for_each(|v| *v = 0);
        self.fetch.iter_mut().for_each(|v| *v = 0.0);
        self.busy.iter_mut().for_each(|v| *v = 0.0);
    }

    /// CORETIME's placement from the counters of the phase just run.
    fn place(&mut self, elapsed: f64) -> usize {
        let (ops, fetch, busy) = (self.ops.clone(), self.fetch.clone(), self.busy.clone());
        let mut bins = self.bins(&busy, elapsed);
        self.pack_expensive(&ops, &fetch, &busy, elapsed, &mut bins)
    }

    /// Each core's room: its cache (L2 + its share of the chip's L3) less the
    /// directories it owns, and the load of those directories.
    fn bins(&self, busy: &[f64], elapsed: f64) -> Vec<Bin> {
        let m = self.sim.m;
        let per_core = m.l2.size_bytes + m.l3.size_bytes / m.cores_per_chip as u64;
        let mut bins = vec![
            Bin {
                free_bytes: per_core,
                load: 0.0
            };
            m.cores()
        ];
        for (d, owner) in self.owner.iter().enumerate() {
            if let Some(c) = *owner {
                bins[c].free_bytes = bins[c].free_bytes.saturating_sub(self.sim.layout.stride);
                bins[c].load += busy[d] / elapsed.max(1.0);
            }
        }
        bins
    }

    /// Packs the unassigned directories whose fetch cycles per lookup exceed a
    /// migration (CORETIME's "expensive to fetch") into `bins`, first fit; returns how
    /// many were placed.
    fn pack_expensive(
        &mut self,
        ops: &[u64],
        fetch: &[f64],
        busy: &[f64],
        elapsed: f64,
        bins: &mut [Bin],
    ) -> usize {
        let m = self.sim.m;
        let mut items = Vec::new();
        let mut total_load = 0.0;
        for d in 0..self.dirs {
            let load = busy[d] / elapsed.max(1.0);
            total_load += load;
            if ops[d] == 0 || self.owner[d].is_some() {
                continue;
            }
            let per_lookup = fetch[d] / ops[d] as f64;
            if per_lookup > m.migration_cycles {
                items.push(Item {
                    object: d as u32,
                    bytes: self.sim.layout.stride,
                    load,
                    benefit: fetch[d],
                });
            }
        }
        let cap = load_cap(total_load, m.cores(), LOAD_SLACK, &items);
        let placed = pack(&items, bins, cap);
        for &(d, c) in &placed {
            self.owner[d as usize] = Some(c);
        }
        placed.len()
    }

    /// One monitoring period of CORETIME's runtime, ending at `now`: place what was
    /// expensive to fetch, then move a portion of the directories of every core that
    /// was rarely idle or often loaded from DRAM to the core with the most idle cycles
    /// and the fewest DRAM loads, where they fit.
    fn monitor_period(&mut self, now: f64) {
        let Some(mon) = self.monitor.take() else {
            return;
        };
        let cores = self.sim.m.cores();
        let mut next = Monitor::new(self.dirs, cores, now);
        next.moved = mon.moved;
        next.periods = mon.periods + 1;
        if mon.periods < WARMUP_PERIODS {
            self.monitor = Some(next);
            return;
        }
        let period = (now - mon.start).max(1.0);
        let mut bins = self.bins(&mon.busy, period);
        self.pack_expensive(&mon.ops, &mon.fetch, &mon.busy, period, &mut bins);
        let idle: Vec<f64> = (0..cores)
            .map(|c| (1.0 - mon.core_busy[c] / period).clamp(0.0, 1.0))
            .collect();
        let dram: Vec<f64> = (0..cores)
            .map(|c| mon.core_mem[c] as f64 / mon.core_lookups[c].max(1) as f64)
            .collect();
        let hot = |c: usize| idle[c] < RARELY_IDLE || dram[c] > OFTEN_DRAM_LINES_PER_LOOKUP;
        let stride = self.sim.layout.stride;
        let mut moved = 0;
        for from in (0..cores).filter(|&c| hot(c)) {
            // The best other core: fewest DRAM lines per lookup, then most idle.
            let Some(to) = (0..cores)
                .filter(|&c| !hot(c) && bins[c].free_bytes >= stride)
                .min_by(|&a, &b| {
                    dram[a]
                        .total_cmp(&dram[b])
                        .then(idle[b].total_cmp(&idle[a]))
                })
            else {
                break;
            };
            let mine: Vec<usize> = (0..self.dirs)
                .filter(|&d| self.owner[d] == Some(from))
                .collect();
            let portion = (mine.len() as f64 * MOVED_PORTION).ceil() as usize;
            for &d in mine.iter().take(portion) {
                if bins[to].free_bytes < stride {
                    break;
                }
                let load = mon.busy[d] / period;
                self.owner[d] = Some(to);
                bins[from].free_bytes += stride;
                bins[from].load -= load;
                bins[to].free_bytes -= stride;
                bins[to].load += load;
                moved += 1;
            }
        }
        next.moved += moved;
        self.monitor = Some(next);
    }
}

/// Directories for `total` bytes of directory data (at least one).
pub fn sim_dirs(total: u64, per_dir: usize) -> usize {
    ((total / (per_dir as u64 * ENTRY_BYTES)) as usize).max(1)
}

/// One scheduler at one size.
pub fn simulate(cfg: &SimConfig, dirs: usize, mode: SimMode) -> Result<SimRun> {
    cfg.machine.validate()?;
    if cfg.per_dir == 0 || cfg.measured_lookups == 0 {
        return Err(Error::input(
            "coretime-sim: entries per directory and measured lookups must be > 0",
        ));
    }
    let mut e = Engine::new(&cfg.machine, dirs, cfg.per_dir, cfg.seed);
    if mode == SimMode::O2 {
        e.monitor = Some(Monitor::new(dirs, cfg.machine.cores(), 0.0));
    }
    let (elapsed, _) = e.run(cfg.warmup_lookups);
    match mode {
        SimMode::Threads => {}
        SimMode::O2Once => {
            e.place(elapsed);
            e.run(cfg.warmup_lookups);
        }
        SimMode::O2 => {
            e.run(cfg.warmup_lookups);
        }
    }
    e.reset_counters();
    let (elapsed, delegated) = e.run(cfg.measured_lookups);
    let n = cfg.measured_lookups as f64;
    Ok(SimRun {
        lookups_per_s: n / (elapsed / (cfg.machine.ghz * 1e9)),
        cycles_per_lookup: e.busy.iter().sum::<f64>() / n,
        assigned: e.owner.iter().filter(|o| o.is_some()).count(),
        delegated: delegated as f64 / n,
        moved: e.monitor.as_ref().map_or(0, |m| m.moved),
    })
}

/// The whole sweep, thread-based and O² at each size.
pub fn sweep(cfg: &SimConfig, mut progress: impl FnMut(&SimPoint)) -> Result<Vec<SimPoint>> {
    let mut out = Vec::new();
    for &total in &cfg.sizes {
        let dirs = sim_dirs(total, cfg.per_dir);
        let p = SimPoint {
            total_bytes: dirs as u64 * cfg.per_dir as u64 * ENTRY_BYTES,
            dirs,
            threads: simulate(cfg, dirs, SimMode::Threads)?,
            o2: simulate(cfg, dirs, SimMode::O2)?,
            o2_once: simulate(cfg, dirs, SimMode::O2Once)?,
        };
        progress(&p);
        out.push(p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> SimMachine {
        let mut m = SimMachine::paper();
        m.chips = 2;
        m.cores_per_chip = 2;
        m
    }

    #[test]
    fn memory_distance_spans_the_papers_range() {
        let m = SimMachine::paper();
        assert_eq!(m.memory(0, 0), 127.0);
        assert_eq!(m.memory(0, 1), 231.5);
        assert_eq!(m.memory(0, 2), 336.0);
        assert_eq!(m.memory(3, 0), 231.5);
    }

    #[test]
    fn l2_and_l3_are_exclusive_and_latencies_follow_levels() {
        let m = small();
        let mut e = Engine::new(&m, 1, 1000, 1);
        let s = &mut e.sim;
        assert_eq!(s.read(0, 0, 1), m.memory(0, 1)); // cold: memory
        assert_eq!(s.read(0, 0, 1), m.l1_cycles);
        s.c.l1[0].invalidate(0);
        assert_eq!(s.read(0, 0, 1), m.l2_cycles);
        assert!(!s.c.l3[0].contains(0));
        // Push line 0 out of L2 (same set: stride of sets × line); it lands in L3.
        let sets = m.l2.sets().unwrap();
        for k in 1..=m.l2.ways as u64 {
            s.read(0, k * sets * LINE, 1);
        }
        assert!(!s.c.l2[0].contains(0) && s.c.l3[0].contains(0));
        s.c.l1[0].invalidate(0);
        assert_eq!(s.read(0, 0, 1), m.l3_cycles);
        assert!(
            !s.c.l3[0].contains(0),
            "an L3 hit moves the line back to L2"
        );
    }

    #[test]
    fn the_l3_keeps_a_line_another_core_of_the_chip_hits() {
        let m = small();
        let mut e = Engine::new(&m, 1, 1000, 1);
        let s = &mut e.sim;
        // Core 0 reads line 0 and pushes it out of its L2 into the chip's L3.
        s.read(0, 0, 0);
        let sets = m.l2.sets().unwrap();
        for k in 1..=m.l2.ways as u64 {
            s.read(0, k * sets * LINE, 0);
        }
        assert!(s.c.l3[0].contains(0));
        // Core 1 (same chip) hits it: served at L3 latency and the L3 keeps a copy.
        assert_eq!(s.read(1, 0, 0), m.l3_cycles);
        assert!(s.c.l3[0].contains(0) && s.c.l2[1].contains(0));
        // Core 1's copy goes; core 0 hits the kept line: still shared, still kept.
        s.c.l1[1].invalidate(0);
        s.c.l2[1].invalidate(0);
        assert_eq!(s.read(0, 0, 0), m.l3_cycles);
        assert!(s.c.l3[0].contains(0));
    }

    #[test]
    fn a_delegated_lookup_queues_behind_what_reached_the_owner_first() {
        let m = small();
        let mut e = Engine::new(&m, 2, 1000, 1);
        // Directory 0 lives on core 0; the other three threads delegate to it.
        e.owner = vec![Some(0), Some(0)];
        e.run(1);
        let own = e.busy.iter().sum::<f64>();
        e.run(3);
        let all = e.busy.iter().sum::<f64>();
        // Core 0's own lookup was issued at time 0 and ran first; the three delegated
        // ones reached core 0 half a migration later and then ran back to back.
        let hop = m.migration_cycles / 2.0;
        assert_eq!(e.core_free[0], own.max(hop) + (all - own));
        assert!(
            e.core_free[1..].iter().all(|&t| t == 0.0),
            "callers' cores stay free"
        );
    }

    #[test]
    fn monitoring_moves_a_portion_off_a_rarely_idle_core() {
        let m = small();
        let dirs = 8;
        let mut e = Engine::new(&m, dirs, 1000, 3);
        // Every directory on core 0: core 0 serves all four threads' lookups.
        e.owner = vec![Some(0); dirs];
        e.monitor = Some(Monitor::new(dirs, m.cores(), 0.0));
        // Enough lookups for the warm-up period and at least one decision.
        while e.monitor.as_ref().unwrap().periods < WARMUP_PERIODS + 1 {
            e.run(100);
        }
        let on_zero = e.owner.iter().filter(|&&o| o == Some(0)).count();
        let moved = e.monitor.as_ref().unwrap().moved;
        // A quarter of core 0's eight directories (rounded up) left in the first
        // decision; all stay assigned.
        assert!(moved >= 2, "moved {moved}");
        assert_eq!(on_zero, dirs - moved, "{:?}", e.owner);
        assert!(e.owner.iter().all(Option::is_some));
    }

    #[test]
    fn monitoring_decides_nothing_in_its_warm_up_period() {
        let m = small();
        let mut e = Engine::new(&m, 160, 1000, 4);
        e.monitor = Some(Monitor::new(160, m.cores(), 0.0));
        while e.monitor.as_ref().unwrap().periods < WARMUP_PERIODS {
            e.run(50);
        }
        assert!(
            e.owner.iter().all(Option::is_none),
            "cold misses decided nothing"
        );
        while e.monitor.as_ref().unwrap().periods < WARMUP_PERIODS + 1 {
            e.run(50);
        }
        // 5 MB on a 4-core, 2-chip machine: directories are expensive to fetch.
        assert!(e.owner.iter().any(Option::is_some));
    }

    #[test]
    fn taking_a_lock_invalidates_other_copies() {
        let m = small();
        let mut e = Engine::new(&m, 2, 1000, 1);
        let lock = e.sim.layout.lock_addr(1);
        e.sim.read(0, lock, 0);
        e.sim.read(3, lock, 0);
        e.sim.write(0, lock, 0);
        assert!(e.sim.c.l1[0].contains(lock));
        assert!(!e.sim.c.l1[3].contains(lock) && !e.sim.c.l2[3].contains(lock));
    }

    #[test]
    fn o2_places_nothing_when_all_fits_and_delegates_when_it_does_not() {
        let m = small();
        let cfg = SimConfig {
            machine: m.clone(),
            sizes: vec![],
            per_dir: 1000,
            warmup_lookups: 4000,
            measured_lookups: 3000,
            seed: 5,
        };
        // 4 directories (128 KB) fit every core's L2: fetch cost is below a migration.
        let fits = simulate(&cfg, 4, SimMode::O2).unwrap();
        assert_eq!(fits.assigned, 0);
        assert_eq!(fits.delegated, 0.0);
        // 160 directories (5 MB) overflow a chip's caches, so thread-based lookups go to
        // memory, but fit the machine's 6 MB: O² places them and each lookup, run in
        // its owner's cache, costs far fewer cycles. (Whether that beats the 2000-cycle
        // migration is the experiment's question, on the full 16-core machine.)
        let o2 = simulate(&cfg, 160, SimMode::O2).unwrap();
        let thr = simulate(&cfg, 160, SimMode::Threads).unwrap();
        assert!(o2.assigned > 0 && o2.delegated > 0.5, "{o2:?}");
        assert!(
            o2.cycles_per_lookup < thr.cycles_per_lookup / 1.5,
            "{o2:?} vs {thr:?}"
        );
    }

    #[test]
    fn same_seed_same_result() {
        let cfg = SimConfig {
            machine: small(),
            sizes: vec![64_000],
            per_dir: 1000,
            warmup_lookups: 200,
            measured_lookups: 300,
            seed: 9,
        };
        assert_eq!(sweep(&cfg, |_| {}).unwrap(), sweep(&cfg, |_| {}).unwrap());
    }
}
