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
//! Threads advance in order of their clocks (an [`IssueOrder`] keyed by each thread's
//! next access; on a tie the running thread goes on), so the first-touch page mapping,
//! the guest-slot contention and the DRAM queue see accesses in simulated-time order.
//! With a skew bound Q > 0 (`with_skew`, like Graphite's lax
//! synchronisation) a thread keeps running while it is at most Q cycles ahead of the
//! slowest other thread, trading exact ordering within Q cycles for fewer switches.
//! Nothing is allocated per access.

use crate::chip::{Chip, PlacementPolicy};
use crate::issue_order::{self, IssueOrder, IDLE};
use crate::predictor::{Entry, MigratoryBits};
use crate::trace::Trace;
use hetsched_cachesim::{Access as CacheAccess, Cache};
use std::collections::HashMap;

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

/// Addresses are at most this wide (the user-space virtual addresses of x86-64 and
/// AArch64 are 47–48 bits), leaving the top 16 bits of an address word for the gap.
pub const ADDRESS_BITS: u32 = 48;

/// One access ready for simulation, in 16 bytes: streaming these is most of the
/// simulator's memory traffic. Page and access site are numbered densely so the page
/// table and the per-site tables are plain vectors.
#[derive(Clone, Copy, Debug)]
struct Op {
    /// Address in the low [`ADDRESS_BITS`], gap (instructions since the previous
    /// access) above.
    addr_gap: u64,
    page: u32,
    site: u32,
}

impl Op {
    #[inline]
    fn addr(&self) -> u64 {
        self.addr_gap & ((1 << ADDRESS_BITS) - 1)
    }

    #[inline]
    fn gap(&self) -> u64 {
        self.addr_gap >> ADDRESS_BITS
    }
}

/// Traces compiled for a page size: every thread's accesses in one vector.
#[derive(Clone, Debug)]
pub struct Program {
    ops: Vec<Op>,
    /// Thread t's accesses are `ops[starts[t]..starts[t + 1]]`.
    starts: Vec<usize>,
    /// The virtual page number of each dense page.
    page_numbers: Vec<u64>,
    /// The PC of each access site.
    pcs: Vec<u32>,
}

impl Program {
    /// Compiles `traces` for pages of `page_bytes`; rejects addresses wider than
    /// [`ADDRESS_BITS`].
    pub fn new(traces: &[Trace], page_bytes: u64) -> hetsched_core::Result<Program> {
        let shift = page_bytes.trailing_zeros();
        let mut pages: HashMap<u64, u32> = HashMap::new();
        let mut sites: HashMap<u32, u32> = HashMap::new();
        let mut pcs = Vec::new();
        let mut page_numbers = Vec::new();
        let mut ops = Vec::with_capacity(traces.iter().map(Vec::len).sum());
        let mut starts = vec![0];
        for (t, trace) in traces.iter().enumerate() {
            for (k, a) in trace.iter().enumerate() {
                if a.addr >> ADDRESS_BITS != 0 {
                    return Err(hetsched_core::Error::input(format!(
                        "thread {t}, access {k}: address {:#x} is wider than {ADDRESS_BITS} bits",
                        a.addr
                    )));
                }
                let next = pages.len() as u32;
                let page = *pages.entry(a.addr >> shift).or_insert_with(|| {
                    page_numbers.push(a.addr >> shift);
                    next
                });
                let site = *sites.entry(a.pc).or_insert_with(|| {
                    pcs.push(a.pc);
                    pcs.len() as u32 - 1
                });
                ops.push(Op {
                    addr_gap: a.addr | (a.gap as u64) << ADDRESS_BITS,
                    page,
                    site,
                });
            }
            starts.push(ops.len());
        }
        Ok(Program {
            ops,
            starts,
            page_numbers,
            pcs,
        })
    }

    pub fn threads(&self) -> usize {
        self.starts.len() - 1
    }

    pub fn accesses(&self) -> u64 {
        self.ops.len() as u64
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
    /// Migrations whose thread's next access was again a core miss: the trip (context
    /// transfer) served a single access.
    pub single_access_migrations: u64,
    /// Guest threads sent back to their native core.
    pub evictions: u64,
    /// Migrations into the core that received the most of them (how much the
    /// migrations pile onto one core's single guest context).
    pub busiest_core_migrations: u64,
    /// Sum of the latencies of all accesses (cycles).
    pub memory_cycles: u64,
    /// Network cycles of remote accesses (request + reply, without the cache access).
    pub remote_cycles: u64,
    /// Cycles of migrations (context transfer + pipeline insertion, without the access).
    pub migration_cycles: u64,
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
const NO_SITE: u32 = u32::MAX;
const UNMAPPED: u16 = u16::MAX;

#[derive(Clone, Debug)]
struct Thread {
    /// Index of the next access in `Program::ops`; the thread is done at `end`.
    next: usize,
    end: usize,
    clock: u64,
    core: u16,
    native: u16,
    entry: Entry,
    /// Site of the thread's last migration while no access has yet followed it at the
    /// destination, else NO_SITE.
    pending_migration: u32,
}

impl Thread {
    fn done(&self) -> bool {
        self.next == self.end
    }
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
    order: IssueOrder,
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
    /// Migrations triggered by each access site, and of those the single-access ones.
    migrations_by_site: Vec<u64>,
    single_access_by_site: Vec<u64>,
    /// Migrations into each core.
    migrations_by_dest: Vec<u64>,
}

/// The migrations one access site (PC) triggered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SiteMigrations {
    pub pc: u32,
    pub migrations: u64,
    /// Of those, migrations after which the thread's next access was again a core miss.
    pub single_access: u64,
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
                next: program.starts[i],
                end: program.starts[i + 1],
                clock: 0,
                core: i as u16,
                native: i as u16,
                entry: Entry::default(),
                pending_migration: NO_SITE,
            })
            .collect();
        Ok(Sim {
            chip: chip.clone(),
            program,
            scheme,
            threads,
            order: IssueOrder::new(program.threads()),
            tiles,
            page_home: match chip.placement.policy {
                PlacementPolicy::FirstTouch => vec![UNMAPPED; program.page_numbers.len()],
                PlacementPolicy::Striped => program
                    .page_numbers
                    .iter()
                    .map(|&p| (p % chip.cores as u64) as u16)
                    .collect(),
            },
            bits: MigratoryBits::new(program.pcs.len()),
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
            migrations_by_site: vec![0; program.pcs.len()],
            single_access_by_site: vec![0; program.pcs.len()],
            migrations_by_dest: vec![0; chip.cores as usize],
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

    /// [`Sim::run`], also returning the access sites that triggered migrations, in PC
    /// order.
    pub fn run_detailed(mut self, check: bool) -> Result<(Stats, Vec<SiteMigrations>), String> {
        for i in 0..self.threads.len() {
            if !self.threads[i].done() {
                self.order.set(i, issue_order::key(self.issue_time(i), i));
            }
        }
        let mut first = self.order.first();
        while first != IDLE {
            let mut i = issue_order::thread(first);
            // A lower bound on the other threads' earliest key: the running thread's
            // leaf is only brought up to date (one tree walk, which returns the true
            // value) when the thread passes this bound by more than the skew.
            let mut others = first;
            loop {
                self.step(i);
                if check {
                    self.check_invariants()?;
                }
                if self.threads[i].done() {
                    self.order.set(i, IDLE);
                    break;
                }
                let c = self.issue_time(i);
                if c <= issue_order::cycle(others).saturating_add(self.skew) {
                    continue;
                }
                others = self.order.set(i, issue_order::key(c, i));
                if others != IDLE && c > issue_order::cycle(others).saturating_add(self.skew) {
                    // `others` is now the new thread's own key: again a lower bound.
                    i = issue_order::thread(others);
                }
            }
            first = self.order.first();
        }
        self.stats.completion_cycles = self.threads.iter().map(|t| t.clock).max().unwrap_or(0);
        self.stats.busiest_core_migrations =
            self.migrations_by_dest.iter().copied().max().unwrap_or(0);
        let mut sites: Vec<SiteMigrations> = (0..self.program.pcs.len())
            .filter(|&s| self.migrations_by_site[s] > 0)
            .map(|s| SiteMigrations {
                pc: self.program.pcs[s],
                migrations: self.migrations_by_site[s],
                single_access: self.single_access_by_site[s],
            })
            .collect();
        sites.sort_unstable_by_key(|s| s.pc);
        Ok((self.stats, sites))
    }

    /// The cycle thread i issues its next access (it must have one).
    #[inline]
    fn issue_time(&self, i: usize) -> u64 {
        let th = &self.threads[i];
        th.clock + self.program.ops[th.next].gap()
    }

    /// Executes thread i's next access.
    #[inline]
    fn step(&mut self, i: usize) {
        let th = &mut self.threads[i];
        let op = self.program.ops[th.next];
        th.next += 1;
        th.clock += op.gap();
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
                let m = self.bits.is_migratory(op.site);
                th.entry.observe(op.site, home, theta, &mut self.bits);
                m
            }
        };
        let now = th.clock;
        let pending = std::mem::replace(&mut th.pending_migration, NO_SITE);
        if pending != NO_SITE && home != cur {
            self.stats.single_access_migrations += 1;
            self.single_access_by_site[pending as usize] += 1;
        }
        let latency = if home == cur {
            self.stats.local += 1;
            self.cache_access(home, op.addr(), now)
        } else if migrate {
            self.stats.migrations += 1;
            self.migrations_by_site[op.site as usize] += 1;
            self.migrations_by_dest[home as usize] += 1;
            self.threads[i].pending_migration = op.site;
            let travel = self.migration_by_hops[self.hops(cur, home)];
            self.stats.migration_cycles += travel;
            self.move_thread(i, home, now + travel);
            travel + self.cache_access(home, op.addr(), now + travel)
        } else {
            self.stats.remote += 1;
            let hops = self.hops(cur, home);
            let request = self.request_by_hops[hops];
            self.stats.remote_cycles += self.remote_by_hops[hops];
            self.remote_by_hops[hops] + self.cache_access(home, op.addr(), now + request)
        };
        self.stats.accesses += 1;
        self.stats.memory_cycles += latency;
        let th = &mut self.threads[i];
        th.clock += latency;
        if th.done() {
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
            let delayed = issue_order::key(self.issue_time(victim as usize), victim as usize);
            self.order.set(victim as usize, delayed);
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

    /// Reference for the tests: [`Sim::run`] with the next thread found by a linear scan
    /// of all threads before every access (earliest issue cycle, then lowest index; the
    /// running thread keeps running while at most `skew` cycles past the earliest).
    #[cfg(test)]
    pub(crate) fn run_by_linear_scan(mut self) -> Stats {
        let mut running: Option<usize> = None;
        loop {
            let earliest = (0..self.threads.len())
                .filter(|&j| !self.threads[j].done())
                .map(|j| (self.issue_time(j), j))
                .min();
            let Some((t, j)) = earliest else { break };
            let i = match running {
                Some(r) if !self.threads[r].done() && self.issue_time(r) <= t + self.skew => r,
                _ => j,
            };
            running = Some(i);
            self.step(i);
        }
        self.stats.completion_cycles = self.threads.iter().map(|t| t.clock).max().unwrap_or(0);
        self.stats.busiest_core_migrations =
            self.migrations_by_dest.iter().copied().max().unwrap_or(0);
        self.stats
    }

    /// Deadlock-freedom invariants of the context model: every running thread is in
    /// exactly one context; native contexts hold only their native thread; a guest
    /// context holds at most one thread.
    pub fn check_invariants(&self) -> Result<(), String> {
        for (c, tile) in self.tiles.iter().enumerate() {
            if tile.guest != NONE {
                let g = &self.threads[tile.guest as usize];
                if g.core as usize != c || g.native as usize == c || g.done() {
                    return Err(format!(
                        "tile {c}: guest {} is not a live guest here",
                        tile.guest
                    ));
                }
            }
        }
        for (i, t) in self.threads.iter().enumerate() {
            if !t.done() && t.core != t.native && self.tiles[t.core as usize].guest != i as u32 {
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
