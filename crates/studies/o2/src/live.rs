//! The paper's evaluation on this machine: directory lookups per second against total
//! directory data, thread-based (every lookup where the thread is) vs O² (lookups
//! delegated to the directory's owner, placement by the runtime's own monitoring).

use crate::capacity::CacheCapacity;
use crate::fatfs::{expected, file_name, Directory, FileSystem, ENTRY_BYTES};
use crate::packing::{load_cap, pack, Bin, Item};
use crate::rebalance::Policy;
use crate::runtime::{Config, Runtime};
use hetsched_core::{Error, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::{Duration, Instant};

/// Parameters of the live sweep.
#[derive(Clone, Debug)]
pub struct LiveConfig {
    /// OS CPUs, one worker (and one lookup thread) each.
    pub cpus: Vec<usize>,
    pub capacity: CacheCapacity,
    /// Total directory bytes of each point.
    pub sizes: Vec<u64>,
    pub per_dir: usize,
    /// Time each mode runs before measuring (caches warm, O² placement converges).
    pub warmup: Duration,
    pub duration: Duration,
    pub rebalance_every: Duration,
    pub seed: u64,
    /// Runs per mode and size; the median (by lookups/s) is reported, which keeps a
    /// run spoiled by other load on a shared machine out of the curve.
    pub repeats: usize,
}

/// Which scheduler a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Thread-based: no objects assigned, every lookup runs on its thread's core.
    Threads,
    /// O²: monitoring assigns expensive directories to cores; lookups go to owners.
    O2,
    /// O² with every directory packed up front (no monitoring): delegation whether it
    /// pays or not, to show what the monitoring chooses between.
    O2Packed,
}

/// One mode at one size.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveRun {
    pub lookups_per_s: f64,
    /// Directories with an owner at the end of the run.
    pub assigned: usize,
    /// Share of lookups that were delegated.
    pub delegated: f64,
    /// Mean delegation overhead (round trip minus the lookup), ns.
    pub migration_ns: Option<f64>,
}

/// One size of the sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct LivePoint {
    pub total_bytes: u64,
    pub dirs: usize,
    pub threads: LiveRun,
    pub o2: LiveRun,
    pub o2_packed: LiveRun,
}

/// Directories for `total` bytes (at least two, so there is something to place).
pub fn dirs_for(total: u64, per_dir: usize) -> usize {
    ((total / (per_dir as u64 * ENTRY_BYTES)) as usize).max(2)
}

fn build(cfg: &LiveConfig, dirs: usize, mode: Mode) -> Result<Runtime<Directory>> {
    let mut rt = Runtime::new(Config {
        cpus: cfg.cpus.clone(),
        capacity: cfg.capacity.clone(),
        rebalance_every: (mode == Mode::O2).then_some(cfg.rebalance_every),
        policy: Policy::default(),
    })?;
    for d in FileSystem::new(dirs, cfg.per_dir, cfg.seed).directories {
        let b = d.bytes();
        rt.add_object(d, b);
    }
    if mode == Mode::O2Packed {
        // Uniform popularity: equal loads and benefits; first fit under the load cap.
        let items: Vec<Item> = (0..dirs as u32)
            .map(|d| Item {
                object: d,
                bytes: rt.bytes(d),
                load: 1.0 / dirs as f64,
                benefit: 1.0,
            })
            .collect();
        let mut bins: Vec<Bin> = (0..rt.cores())
            .map(|c| Bin {
                free_bytes: cfg.capacity.per_core(c),
                load: 0.0,
            })
            .collect();
        let cap = load_cap(1.0, rt.cores(), 0.05, &items);
        for (d, c) in pack(&items, &mut bins, cap) {
            rt.assign(d, Some(c))?;
        }
    }
    Ok(rt)
}

/// Every worker looks up random files in random directories until `for_how_long`
/// passes; returns (lookups, wrong answers).
fn lookups(
    rt: &mut Runtime<Directory>,
    per_dir: usize,
    seed: u64,
    for_how_long: Duration,
) -> Result<(u64, u64, crate::RunReport)> {
    let dirs = rt.len();
    let start = Instant::now();
    let (counts, report) = rt.run(|w| {
        let mut rng =
            ChaCha8Rng::seed_from_u64(seed ^ (w.index() as u64).wrapping_mul(0x9E37_79B9));
        let (mut n, mut wrong) = (0u64, 0u64);
        loop {
            for _ in 0..64 {
                let d = rng.random_range(0..dirs);
                let i = rng.random_range(0..per_dir);
                let name = file_name(i);
                if w.on(d as u32, |dir| dir.lookup(&name)) != Some(expected(d, i, per_dir)) {
                    wrong += 1;
                }
            }
            n += 64;
            if start.elapsed() >= for_how_long {
                return (n, wrong);
            }
        }
    })?;
    let n = counts.iter().map(|c| c.0).sum();
    let wrong = counts.iter().map(|c| c.1).sum();
    Ok((n, wrong, report))
}

/// The median run (by lookups/s).
fn median(mut runs: Vec<LiveRun>) -> LiveRun {
    runs.sort_by(|a, b| a.lookups_per_s.total_cmp(&b.lookups_per_s));
    runs.swap_remove(runs.len() / 2)
}

/// One mode at one size: warm up, then measure.
pub fn run_mode(cfg: &LiveConfig, dirs: usize, mode: Mode) -> Result<LiveRun> {
    let mut rt = build(cfg, dirs, mode)?;
    lookups(&mut rt, cfg.per_dir, cfg.seed, cfg.warmup)?;
    let t = Instant::now();
    let (n, wrong, report) = lookups(&mut rt, cfg.per_dir, cfg.seed + 1, cfg.duration)?;
    let secs = t.elapsed().as_secs_f64();
    if wrong > 0 {
        return Err(Error::runtime(format!(
            "{wrong} of {n} lookups returned the wrong entry"
        )));
    }
    let s = &report.snapshot;
    let delegated: u64 = s.cores.iter().map(|c| c.delegated).sum();
    Ok(LiveRun {
        lookups_per_s: n as f64 / secs,
        assigned: (0..dirs as u32).filter(|&d| rt.owner(d).is_some()).count(),
        delegated: delegated as f64 / n.max(1) as f64,
        migration_ns: s.migration_ns(),
    })
}

/// The whole sweep; `progress` sees each point as it finishes.
pub fn sweep(cfg: &LiveConfig, mut progress: impl FnMut(&LivePoint)) -> Result<Vec<LivePoint>> {
    if cfg.per_dir == 0 || cfg.sizes.is_empty() {
        return Err(Error::input(
            "coretime-live: need entries per directory > 0 and at least one size",
        ));
    }
    let mut out = Vec::new();
    for &total in &cfg.sizes {
        let dirs = dirs_for(total, cfg.per_dir);
        // Modes take turns in each repeat, so a burst of other load on the machine
        // hits all three alike instead of one mode's runs.
        let modes = [Mode::Threads, Mode::O2, Mode::O2Packed];
        let mut runs: Vec<Vec<LiveRun>> = vec![Vec::new(); modes.len()];
        for _ in 0..cfg.repeats.max(1) {
            for (i, &mode) in modes.iter().enumerate() {
                runs[i].push(run_mode(cfg, dirs, mode)?);
            }
        }
        let point = LivePoint {
            total_bytes: dirs as u64 * cfg.per_dir as u64 * ENTRY_BYTES,
            dirs,
            threads: median(runs.remove(0)),
            o2: median(runs.remove(0)),
            o2_packed: median(runs.remove(0)),
        };
        progress(&point);
        out.push(point);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_sweep_point_is_exact_and_counts_lookups() {
        let cpus = hetsched_util::host::allowed_cpus();
        let cpus = vec![cpus[0], *cpus.last().unwrap()];
        let cfg = LiveConfig {
            capacity: CacheCapacity::uniform(2, 64 << 10, 0),
            cpus,
            sizes: vec![8 * 32_000],
            per_dir: 1000,
            warmup: Duration::from_millis(60),
            duration: Duration::from_millis(60),
            rebalance_every: Duration::from_millis(10),
            seed: 3,
            repeats: 1,
        };
        let pts = sweep(&cfg, |_| {}).unwrap();
        assert_eq!(pts.len(), 1);
        assert_eq!(pts[0].dirs, 8);
        assert!(pts[0].threads.lookups_per_s > 0.0 && pts[0].o2.lookups_per_s > 0.0);
        assert_eq!(pts[0].threads.assigned, 0);
        assert_eq!(pts[0].threads.delegated, 0.0);
        // Capacity for two directories per core at most.
        assert!(pts[0].o2.assigned <= 4);
        assert_eq!(pts[0].o2_packed.assigned, 4);
        assert!(pts[0].o2_packed.delegated > 0.0);
    }
}
