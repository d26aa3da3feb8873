//! The O² (CORETIME) study in the experiment registry: `hetsched experiment coretime-live`
//! (directory lookups on this machine), `coretime-sim` (on the paper's simulated 16-core
//! Opteron) and the report's `coretime` section.

use crate::live::{LiveConfig, LivePoint};
use crate::plot::{human_bytes, log2_x_lines, Series};
use crate::CacheCapacity;
use hetsched_core::{Error, Result};
use hetsched_study::{options, say, Experiment, Study};
use hetsched_util::files::OutDir;
use hetsched_util::host::LoadAverage;
use std::time::Duration;

pub const STUDY: Study = Study {
    key: "coretime",
    experiments: &[
        Experiment {
            key: "coretime-live",
            about: "O² (CORETIME) directory lookups on this machine: thread-based vs delegation",
            outputs: "coretime-live.csv, coretime-live.png",
            args: <LiveArgs as clap::Args>::augment_args,
            run: |m, out, w| coretime_live(options(m)?, out, w),
        },
        Experiment {
            key: "coretime-sim",
            about: "O² (CORETIME) directory lookups simulated on the paper's 16-core Opteron",
            outputs: "coretime-sim.csv, coretime-sim.png",
            args: <SimArgs as clap::Args>::augment_args,
            run: |m, out, w| coretime_sim(options(m)?, out, w),
        },
    ],
    reproduce: Some(crate::reproduce::reproduce),
};

/// Parses "524288", "512K", "32M", "1G" into bytes.
pub fn parse_bytes(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("expected a byte count like 524288, 512K or 32M, got {s:?}"))
}

pub fn parse_cpus(s: &str) -> std::result::Result<Vec<usize>, String> {
    s.split(',')
        .map(|c| {
            c.trim()
                .parse::<usize>()
                .map_err(|_| format!("expected CPU ids like 0,1, got {s:?}"))
        })
        .collect()
}

/// Cache sizes of the machine the live runtime uses: discovered through hwloc unless
/// given explicitly.
#[derive(clap::Args, Clone, Debug)]
struct CacheArgs {
    /// OS CPUs to run one pinned worker on each (default: 0,1, this VM's cores).
    #[arg(long, default_value = "0,1")]
    cpus: String,
    /// Private cache bytes per core [default: from this machine's topology (hwloc)].
    #[arg(long, value_parser = parse_bytes)]
    private_cache_bytes: Option<u64>,
    /// Bytes of the cache shared by all the cores; 0 = none [default: from the topology].
    #[arg(long, value_parser = parse_bytes)]
    shared_cache_bytes: Option<u64>,
}

impl CacheArgs {
    /// Cache capacities of the workers' cores: the topology's, with any explicit
    /// sizes replacing it (then every core has the given private size and one shared
    /// cache spans them all).
    fn capacity(&self, cpus: &[usize]) -> Result<CacheCapacity> {
        let discovered = || -> Result<CacheCapacity> {
            let machine =
                hetsched_topology::load("live", hetsched_core::machine::UnitGranularity::Pu)?;
            CacheCapacity::from_machine(&machine, cpus)
        };
        match (self.private_cache_bytes, self.shared_cache_bytes) {
            (Some(p), Some(s)) => Ok(CacheCapacity::uniform(cpus.len(), p, s)),
            (p, s) => {
                let d = discovered()?;
                let private =
                    p.unwrap_or_else(|| d.private_bytes.iter().copied().min().unwrap_or(0));
                let shared =
                    s.unwrap_or_else(|| d.shared.iter().map(|c| c.bytes).max().unwrap_or(0));
                if p.is_none() && s.is_none() {
                    return Ok(d);
                }
                Ok(CacheCapacity::uniform(cpus.len(), private, shared))
            }
        }
    }

    /// The CPUs, checked against the ones this process may use.
    fn cpus(&self) -> Result<Vec<usize>> {
        let cpus = parse_cpus(&self.cpus).map_err(|e| Error::input(format!("--cpus: {e}")))?;
        let allowed = hetsched_util::host::allowed_cpus();
        if cpus.is_empty() {
            return Err(Error::input("--cpus: at least one CPU is needed"));
        }
        if let Some(c) = cpus.iter().find(|c| !allowed.contains(c)) {
            return Err(Error::input(format!(
                "--cpus: CPU {c} is not available (allowed: {allowed:?})"
            )));
        }
        Ok(cpus)
    }
}

/// `hetsched experiment coretime-live`.
#[derive(clap::Args, Debug)]
struct LiveArgs {
    #[command(flatten)]
    cache: CacheArgs,
    /// Smallest total directory data.
    #[arg(long, value_parser = parse_bytes, default_value = "64K")]
    min_bytes: u64,
    /// Largest total directory data (sizes double from min to max).
    #[arg(long, value_parser = parse_bytes, default_value = "64M")]
    max_bytes: u64,
    /// Entries per directory (the paper's 1000, 32 bytes each).
    #[arg(long, default_value_t = crate::fatfs::ENTRIES_PER_DIR)]
    entries: usize,
    /// Measured time per run, ms.
    #[arg(long, default_value_t = 600)]
    duration_ms: u64,
    /// Warm-up per run (caches fill, O² placement settles), ms.
    #[arg(long, default_value_t = 400)]
    warmup_ms: u64,
    /// Runs per mode and size; the median is reported (robust to a shared machine).
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Monitoring period of the O² runtime, ms.
    #[arg(long, default_value_t = 50)]
    rebalance_ms: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn doubling(min: u64, max: u64) -> Result<Vec<u64>> {
    if min == 0 || max < min {
        return Err(Error::input(format!(
            "--min-bytes must be > 0 and <= --max-bytes (got {min} and {max})"
        )));
    }
    let mut v = Vec::new();
    let mut s = min;
    while s <= max {
        v.push(s);
        s *= 2;
    }
    Ok(v)
}

fn coretime_live(a: LiveArgs, out: &OutDir, w: &mut dyn std::io::Write) -> Result<()> {
    let cpus = a.cache.cpus()?;
    let cfg = LiveConfig {
        capacity: a.cache.capacity(&cpus)?,
        cpus,
        sizes: doubling(a.min_bytes, a.max_bytes)?,
        per_dir: a.entries,
        warmup: Duration::from_millis(a.warmup_ms),
        duration: Duration::from_millis(a.duration_ms),
        rebalance_every: Duration::from_millis(a.rebalance_ms.max(1)),
        seed: a.seed,
        repeats: a.repeats,
    };
    say(w, format!(
        "coretime-live: {} workers on CPUs {:?}; per-core capacity {} (private {} + share of {} shared)\n",
        cfg.cpus.len(),
        cfg.cpus,
        human_bytes(cfg.capacity.per_core(0) as f64),
        human_bytes(cfg.capacity.private_bytes.first().copied().unwrap_or(0) as f64),
        human_bytes(cfg.capacity.shared.iter().map(|c| c.bytes).max().unwrap_or(0) as f64)
    ))?;
    say(
        w,
        format!("fetch-cost source: {}\n", crate::CostSource::OperationTime),
    )?;
    say(
        w,
        format!("load average at start: {}\n", LoadAverage::now_text()),
    )?;
    say(
        w,
        format!(
            "{:>8} {:>6} {:>12} {:>12} {:>7} {:>8} {:>6} {:>12} {:>7} {:>8} {:>6}\n",
            "data",
            "dirs",
            "threads/s",
            "o2/s",
            "o2/thr",
            "assigned",
            "deleg",
            "packed/s",
            "pk/thr",
            "assigned",
            "deleg"
        ),
    )?;
    let mut failed = None;
    let points = crate::live::sweep(&cfg, |p| {
        let row = format!(
            "{:>8} {:>6} {:>12.0} {:>12.0} {:>7.2} {:>8} {:>5.0}% {:>12.0} {:>7.2} {:>8} {:>5.0}%\n",
            human_bytes(p.total_bytes as f64),
            p.dirs,
            p.threads.lookups_per_s,
            p.o2.lookups_per_s,
            p.o2.lookups_per_s / p.threads.lookups_per_s,
            p.o2.assigned,
            p.o2.delegated * 100.0,
            p.o2_packed.lookups_per_s,
            p.o2_packed.lookups_per_s / p.threads.lookups_per_s,
            p.o2_packed.assigned,
            p.o2_packed.delegated * 100.0,
        );
        if let Err(e) = say(w, &row) {
            failed.get_or_insert(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    say(
        w,
        format!("load average at end: {}\n", LoadAverage::now_text()),
    )?;
    let ns = |m: Option<f64>| m.map_or(String::new(), |m| format!("{m:.1}"));
    let mut csv = String::from("total_bytes,dirs,threads_lookups_per_s,o2_lookups_per_s,o2_assigned,o2_delegated_fraction,o2_migration_ns,o2_packed_lookups_per_s,o2_packed_assigned,o2_packed_migration_ns\n");
    for p in &points {
        csv += &format!(
            "{},{},{:.1},{:.1},{},{:.4},{},{:.1},{},{}\n",
            p.total_bytes,
            p.dirs,
            p.threads.lookups_per_s,
            p.o2.lookups_per_s,
            p.o2.assigned,
            p.o2.delegated,
            ns(p.o2.migration_ns),
            p.o2_packed.lookups_per_s,
            p.o2_packed.assigned,
            ns(p.o2_packed.migration_ns),
        );
    }
    out.write("coretime-live.csv", &csv)?;
    let series =
        |name, f: fn(&LivePoint) -> f64| Series::of(name, &points, |p| p.total_bytes as f64, f);
    log2_x_lines(
        out,
        "coretime-live.png",
        "Directory lookups on this machine: thread-based vs O²",
        "total directory data",
        "lookups / s",
        &[
            series("threads (lookup locally)", |p| p.threads.lookups_per_s),
            series("O² (monitoring places)", |p| p.o2.lookups_per_s),
            series("O² (all packed, no monitoring)", |p| {
                p.o2_packed.lookups_per_s
            }),
        ],
    )?;
    Ok(())
}

/// `hetsched experiment coretime-sim`.
#[derive(clap::Args, Debug)]
struct SimArgs {
    /// Smallest total directory data.
    #[arg(long, value_parser = parse_bytes, default_value = "128K")]
    min_bytes: u64,
    /// Largest total directory data (sizes double from min to max).
    #[arg(long, value_parser = parse_bytes, default_value = "64M")]
    max_bytes: u64,
    /// Entries per directory (the paper's 1000, 32 bytes each).
    #[arg(long, default_value_t = crate::fatfs::ENTRIES_PER_DIR)]
    entries: usize,
    /// Lookups per warm-up phase (all 16 threads together).
    #[arg(long, default_value_t = 60_000)]
    warmup_lookups: usize,
    /// Lookups measured.
    #[arg(long, default_value_t = 60_000)]
    lookups: usize,
    /// Misses in flight during a directory scan (memory-level parallelism).
    #[arg(long, default_value_t = crate::sim::MLP)]
    mlp: f64,
    /// CORETIME migration cost, cycles.
    #[arg(long, default_value_t = crate::sim::MIGRATION_CYCLES)]
    migration_cycles: f64,
    /// Memory bandwidth per chip's node, GB/s (0 = unlimited; not given by the paper).
    #[arg(long, default_value_t = crate::sim::MEM_GBPS)]
    mem_gbps: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn coretime_sim(a: SimArgs, out: &OutDir, w: &mut dyn std::io::Write) -> Result<()> {
    use crate::sim::{SimConfig, SimMachine};
    let mut machine = SimMachine::paper();
    machine.mlp = a.mlp;
    machine.migration_cycles = a.migration_cycles;
    machine.mem_gbps = a.mem_gbps;
    let cfg = SimConfig {
        machine,
        sizes: doubling(a.min_bytes, a.max_bytes)?,
        per_dir: a.entries,
        warmup_lookups: a.warmup_lookups,
        measured_lookups: a.lookups,
        seed: a.seed,
    };
    say(w, format!(
        "coretime-sim: 4 chips x 4 cores @ 2 GHz; L1 3 / L2 14 / L3 75 cycles, memory 127-336, migration {} cycles, mlp {}, memory {} GB/s per node\n",
        a.migration_cycles, a.mlp, a.mem_gbps
    ))?;
    say(
        w,
        "fetch-cost source: simulated cache-miss counters (fetch cycles per lookup)\n",
    )?;
    say(
        w,
        format!(
            "{:>8} {:>6} {:>12} {:>12} {:>7} {:>9} {:>10} {:>10} {:>10} {:>6} {:>9}\n",
            "data",
            "dirs",
            "threads/s",
            "o2/s",
            "o2/thr",
            "assigned",
            "delegated",
            "thr cyc",
            "o2 cyc",
            "moved",
            "once/thr"
        ),
    )?;
    let mut failed = None;
    let points = crate::sim::sweep(&cfg, |p| {
        let row = format!(
            "{:>8} {:>6} {:>12.0} {:>12.0} {:>7.2} {:>9} {:>9.0}% {:>10.0} {:>10.0} {:>6} {:>9.2}\n",
            human_bytes(p.total_bytes as f64),
            p.dirs,
            p.threads.lookups_per_s,
            p.o2.lookups_per_s,
            p.o2.lookups_per_s / p.threads.lookups_per_s,
            p.o2.assigned,
            p.o2.delegated * 100.0,
            p.threads.cycles_per_lookup,
            p.o2.cycles_per_lookup,
            p.o2.moved,
            p.o2_once.lookups_per_s / p.threads.lookups_per_s
        );
        if let Err(e) = say(w, &row) {
            failed.get_or_insert(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    let mut csv = String::from("total_bytes,dirs,threads_lookups_per_s,o2_lookups_per_s,o2_assigned,o2_delegated_fraction,threads_cycles_per_lookup,o2_cycles_per_lookup,o2_moved,o2_once_lookups_per_s\n");
    for p in &points {
        csv += &format!(
            "{},{},{:.1},{:.1},{},{:.4},{:.1},{:.1},{},{:.1}\n",
            p.total_bytes,
            p.dirs,
            p.threads.lookups_per_s,
            p.o2.lookups_per_s,
            p.o2.assigned,
            p.o2.delegated,
            p.threads.cycles_per_lookup,
            p.o2.cycles_per_lookup,
            p.o2.moved,
            p.o2_once.lookups_per_s
        );
    }
    out.write("coretime-sim.csv", &csv)?;
    crate::reproduce::sim_figure(out, &points)?;
    Ok(())
}
