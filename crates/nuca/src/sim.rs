//! The trace-driven simulator: threads replay their traces on the chip, each access
//! served locally, by a remote access, or by migrating the thread to the home core.
//!
//! Timing model (all per access; see docs/nuca.md for the formulas):
//! - a thread runs one instruction per cycle between accesses (`gap` cycles);
//! - a core hit costs the home tile's cache hierarchy: L1, else L2, else DRAM;
//! - a remote access adds the request and reply messages over the mesh;
//! - a migration adds the context transfer and pipeline insertion, and may evict the
//!   destination's guest thread back to its native core (which then pays that trip);
//! - the network is contention-free; DRAM is one channel whose bandwidth queues lines.
//!
//! Threads advance in order of their clocks (a heap keyed by each thread's next access),
//! so the
//! first-touch page mapping, the guest-slot contention and the DRAM queue see accesses in
//! simulated-time order. With a skew bound Q > 0 (`with_skew`, like Graphite's lax
//! synchronisation) a thread keeps running while it is at most Q cycles ahead of the
//! slowest other thread, trading exact ordering within Q cycles for fewer switches.
//! Nothing is allocated per access.

use crate::chip::Chip;
use crate::predictor::{Entry, MigratoryBits};
use crate::trace::Trace;
use hetsched_cachesim::{Access as CacheAccess, Cache};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// How a core-miss access is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Standard NUCA: every core miss is a remote access.
    RemoteOnly,
    /// Every core miss migrates the thread to the home core.
    AlwaysMigrate,
    /// The paper's predictor with depth threshold θ.
    Hybrid { theta: u32 },
}

impl Scheme {
    /// Short name used in tables and files.
    pub fn name(&self) -> String {
        match self {
            Scheme::RemoteOnly => "remote-only".into(),
            Scheme::AlwaysMigrate => "always-migrate".into(),
            Scheme::Hybrid { theta } => format!("hybrid-t{theta}"),
        }
    }
}

/// One access ready for simulation: the address's page is pre-numbered densely.
#[derive(Clone, Copy, Debug)]
struct Op {
    addr: u64,
    page: u32,
    pc: u32,
    gap: u16,
}

/// Traces compiled for a page size: pages numbered densely so the page table is a Vec.
#[derive(Clone, Debug)]
pub struct Program {
    threads: Vec<Vec<Op>>,
    pages: usize,
    max_pc: u32,
}

impl Program {
    pub fn new(traces: &[Trace], page_bytes: u64) -> Program {
        let shift = page_bytes.trailing_zeros();
        let mut ids: HashMap<u64, u32> = HashMap::new();
        let mut max_pc = 0;
        let threads = traces
            .iter()
            .map(|t| {
                t.iter()
                    .map(|a| {
                        let next = ids.len() as u32;
                        let page = *ids.entry(a.addr >> shift).or_insert(next);
                        max_pc = max_pc.max(a.pc);
                        Op {
                            addr: a.addr,
                            page,
                            pc: a.pc,
                            gap: a.gap,
                        }
                    })
                    .collect()
            })
            .collect();
        Program {
            threads,
            pages: ids.len(),
            max_pc,
        }
    }

    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    pub fn accesses(&self) -> u64 {
        self.threads.iter().map(|t| t.len() as u64).sum()
    }
}

/// Counters of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    pub accesses: u64,
    /// Core hits: the home was the core the thread ran on.
    pub local: u64,
    pub remote: u64,
    pub migrations: u64,
    /// Guest threads sent back to their native core.
    pub evictions: u64,
    /// Sum of the latencies of all accesses (cycles).
    pub memory_cycles: u64,
    /// Cycles evicted threads spent travelling home.
    pub eviction_cycles: u64,
    /// When the last thread finished.
    pub completion_cycles: u64,
    pub l1_misses: u64,
    pub l2_misses: u64,
}

impl Stats {
    pub fn core_miss_rate(&self) -> f64 {
        ratio(self.remote + self.migrations, self.accesses)
    }
    pub fn remote_rate(&self) -> f64 {
        ratio(self.remote, self.accesses)
    }
    pub fn migration_rate(&self) -> f64 {
        ratio(self.migrations, self.accesses)
    }
    /// Average memory latency in cycles per access.
    pub fn avg_latency(&self) -> f64 {
        ratio(self.memory_cycles, self.accesses)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

const NONE: u32 = u32::MAX;
const UNMAPPED: u16 = u16::MAX;

#[derive(Clone, Debug)]
struct Thread {
    next: usize,
    clock: u64,
    core: u16,
    native: u16,
    entry: Entry,
    done: bool,
}

#[derive(Clone, Debug)]
struct Tile {
    l1: Cache,
    l2: Cache,
    /// Thread in the guest context, or NONE. The native context is implicit: only the
    /// thread native to this tile may be there (thread i is native to tile i).
    guest: u32,
}

/// A simulation of one program under one scheme.
pub struct Sim<'p> {
    chip: Chip,
    program: &'p Program,
    scheme: Scheme,
    threads: Vec<Thread>,
    tiles: Vec<Tile>,
    page_home: Vec<u16>,
    bits: MigratoryBits,
    dram_free: f64,
    dram_latency: f64,
    dram_line: f64,
    /// hops[a * cores + b]: mesh distance.
    hops: Vec<u8>,
    /// Remote-access network cycles, migration cycles, request cycles by hop count.
    remote_by_hops: Vec<u64>,
    migration_by_hops: Vec<u64>,
    request_by_hops: Vec<u64>,
    skew: u64,
    stats: Stats,
    /// Migrations triggered by each access site (PC).
    migrations_by_pc: Vec<u64>,
}

impl<'p> Sim<'p> {
    /// Thread i starts on its native core i; needs threads ≤ cores.
    pub fn new(chip: &Chip, program: &'p Program, scheme: Scheme) -> hetsched_core::Result<Self> {
        if program.threads() > chip.cores as usize {
            return Err(hetsched_core::Error::input(format!(
                "{} threads but the chip has {} cores (one native context per thread)",
                program.threads(),
                chip.cores
            )));
        }
        let tiles = (0..chip.cores)
            .map(|_| Tile {
                l1: Cache::new(chip.l1.geometry()),
                l2: Cache::new(chip.l2.geometry()),
                guest: NONE,
            })
            .collect();
        let threads = (0..program.threads())
            .map(|i| Thread {
                next: 0,
                clock: 0,
                core: i as u16,
                native: i as u16,
                entry: Entry::default(),
                done: program.threads[i].is_empty(),
            })
            .collect();
        Ok(Sim {
            chip: chip.clone(),
            program,
            scheme,
            threads,
            tiles,
            page_home: vec![UNMAPPED; program.pages],
            bits: MigratoryBits::new(program.max_pc),
            dram_free: 0.0,
            dram_latency: chip.dram_latency_cycles(),
            dram_line: chip.dram_line_cycles(),
            hops: (0..chip.cores * chip.cores)
                .map(|ab| chip.hops((ab / chip.cores) as u16, (ab % chip.cores) as u16) as u8)
                .collect(),
            remote_by_hops: (0..2 * chip.side())
                .map(|h| chip.remote_round_trip_cycles(h))
                .collect(),
            migration_by_hops: (0..2 * chip.side())
                .map(|h| chip.migration_cycles(h))
                .collect(),
            request_by_hops: (0..2 * chip.side())
                .map(|h| chip.message_cycles(h, chip.network.request_flits))
                .collect(),
            skew: 0,
            stats: Stats::default(),
            migrations_by_pc: vec![0; program.max_pc as usize + 1],
        })
    }

    /// Lets a thread run up to `cycles` ahead of the slowest other thread before the
    /// simulator switches (0, the default, keeps exact time order).
    pub fn with_skew(mut self, cycles: u64) -> Self {
        self.skew = cycles;
        self
    }

    #[inline]
    fn hops(&self, a: u16, b: u16) -> usize {
        self.hops[a as usize * self.tiles.len() + b as usize] as usize
    }

    /// Runs every thread to the end of its trace; with `check`, verifies the context
    /// invariants after every access (slow; for tests).
    pub fn run(self, check: bool) -> Result<Stats, String> {
        self.run_detailed(check).map(|(stats, _)| stats)
    }

    /// [`Sim::run`], also returning the number of migrations each access site (PC)
    /// triggered, indexed by PC.
    pub fn run_detailed(mut self, check: bool) -> Result<(Stats, Vec<u64>), String> {
        // Keyed by the cycle the thread issues its next access; the running thread is
        // not in the heap.
        let mut heap: BinaryHeap<Reverse<(u64, u32)>> = (0..self.threads.len() as u32)
            .filter(|&i| !self.threads[i as usize].done)
            .map(|i| Reverse((self.issue_time(i as usize), i)))
            .collect();
        let mut running = self.pop_current(&mut heap);
        while let Some(i) = running {
            self.step(i);
            if check {
                self.check_invariants()?;
            }
            if self.threads[i].done {
                running = self.pop_current(&mut heap);
                continue;
            }
            let c = self.issue_time(i);
            let mut switched = None;
            if let Some(mut top) = heap.peek_mut() {
                let Reverse((t, j)) = *top;
                if c > t + self.skew {
                    // Swap the running thread into the heap in one sift.
                    *top = Reverse((c, i as u32));
                    switched = Some((t, j));
                }
            }
            if let Some((t, j)) = switched {
                running = Some(j as usize);
                if t != self.issue_time(j as usize) {
                    heap.push(Reverse((self.issue_time(j as usize), j)));
                    running = self.pop_current(&mut heap);
                }
            }
        }
        self.stats.completion_cycles = self.threads.iter().map(|t| t.clock).max().unwrap_or(0);
        Ok((self.stats, self.migrations_by_pc))
    }

    /// Pops the thread with the earliest next access, re-queueing entries whose thread
    /// was delayed (evicted) after it was queued.
    fn pop_current(&self, heap: &mut BinaryHeap<Reverse<(u64, u32)>>) -> Option<usize> {
        while let Some(Reverse((t, i))) = heap.pop() {
            let now = self.issue_time(i as usize);
            if t == now {
                return Some(i as usize);
            }
            heap.push(Reverse((now, i)));
        }
        None
    }

    /// The cycle thread i issues its next access.
    #[inline]
    fn issue_time(&self, i: usize) -> u64 {
        let th = &self.threads[i];
        th.clock + self.program.threads[i][th.next].gap as u64
    }

    /// Executes thread i's next access.
    #[inline]
    fn step(&mut self, i: usize) {
        let op = self.program.threads[i][self.threads[i].next];
        let th = &mut self.threads[i];
        th.next += 1;
        th.clock += op.gap as u64;
        let cur = th.core;
        let mut home = self.page_home[op.page as usize];
        if home == UNMAPPED {
            // First touch: the page is homed where the touching thread runs.
            home = cur;
            self.page_home[op.page as usize] = cur;
        }
        let migrate = match self.scheme {
            Scheme::RemoteOnly => false,
            Scheme::AlwaysMigrate => true,
            Scheme::Hybrid { theta } => {
                let m = self.bits.is_migratory(op.pc);
                th.entry.observe(op.pc, home, theta, &mut self.bits);
                m
            }
        };
        let now = th.clock;
        let latency = if home == cur {
            self.stats.local += 1;
            self.cache_access(home, op.addr, now)
        } else if migrate {
            self.stats.migrations += 1;
            self.migrations_by_pc[op.pc as usize] += 1;
            let travel = self.migration_by_hops[self.hops(cur, home)];
            self.move_thread(i, home, now + travel);
            travel + self.cache_access(home, op.addr, now + travel)
        } else {
            self.stats.remote += 1;
            let hops = self.hops(cur, home);
            let request = self.request_by_hops[hops];
            self.remote_by_hops[hops] + self.cache_access(home, op.addr, now + request)
        };
        self.stats.accesses += 1;
        self.stats.memory_cycles += latency;
        let th = &mut self.threads[i];
        th.clock += latency;
        if th.next == self.program.threads[i].len() {
            th.done = true;
            // A finished thread leaves its context.
            let core = th.core as usize;
            if self.tiles[core].guest == i as u32 {
                self.tiles[core].guest = NONE;
            }
        }
    }

    /// Puts thread i into a context of `dest`, arriving at `arrive`; evicts the guest.
    fn move_thread(&mut self, i: usize, dest: u16, arrive: u64) {
        let from = self.threads[i].core as usize;
        if self.tiles[from].guest == i as u32 {
            self.tiles[from].guest = NONE;
        }
        self.threads[i].core = dest;
        if self.threads[i].native == dest {
            return; // the native context is reserved for it
        }
        let victim = self.tiles[dest as usize].guest;
        if victim != NONE {
            let travel =
                self.migration_by_hops[self.hops(dest, self.threads[victim as usize].native)];
            let v = &mut self.threads[victim as usize];
            v.clock = v.clock.max(arrive) + travel;
            v.core = v.native;
            self.stats.evictions += 1;
            self.stats.eviction_cycles += travel;
        }
        self.tiles[dest as usize].guest = i as u32;
    }

    /// Latency of an access in `core`'s cache hierarchy starting at cycle `at`.
    #[inline]
    fn cache_access(&mut self, core: u16, addr: u64, at: u64) -> u64 {
        let tile = &mut self.tiles[core as usize];
        let mut cycles = self.chip.l1.hit_cycles as u64;
        if let CacheAccess::Miss { .. } = tile.l1.access(addr) {
            self.stats.l1_misses += 1;
            cycles += self.chip.l2.hit_cycles as u64;
            if let CacheAccess::Miss { .. } = tile.l2.access(addr) {
                self.stats.l2_misses += 1;
                let request = (at + cycles) as f64;
                let start = request.max(self.dram_free);
                self.dram_free = start + self.dram_line;
                cycles += (start - request + self.dram_latency).ceil() as u64;
            }
        }
        cycles
    }

    /// Deadlock-freedom invariants of the context model: every running thread is in
    /// exactly one context; native contexts hold only their native thread; a guest
    /// context holds at most one thread.
    pub fn check_invariants(&self) -> Result<(), String> {
        for (c, tile) in self.tiles.iter().enumerate() {
            if tile.guest != NONE {
                let g = &self.threads[tile.guest as usize];
                if g.core as usize != c || g.native as usize == c || g.done {
                    return Err(format!(
                        "tile {c}: guest {} is not a live guest here",
                        tile.guest
                    ));
                }
            }
        }
        for (i, t) in self.threads.iter().enumerate() {
            if !t.done && t.core != t.native && self.tiles[t.core as usize].guest != i as u32 {
                return Err(format!(
                    "thread {i} runs on tile {} without a context",
                    t.core
                ));
            }
        }
        Ok(())
    }
}

/// Convenience: simulate `program` on `chip` under `scheme` in exact time order.
pub fn simulate(chip: &Chip, program: &Program, scheme: Scheme) -> hetsched_core::Result<Stats> {
    Sim::new(chip, program, scheme)?
        .run(false)
        .map_err(hetsched_core::Error::runtime)
}
