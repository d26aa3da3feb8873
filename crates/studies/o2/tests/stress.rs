//! Correctness under concurrency: every lookup finds exactly its entry, locally and
//! delegated, while the rebalancer and the workers themselves keep moving directories.

use hetsched_o2::fatfs::{expected, file_name, FileSystem};
use hetsched_o2::{CacheCapacity, Config, Policy, Runtime};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

fn runtime(
    dirs: usize,
    per_dir: usize,
    workers: usize,
    rebalance: bool,
) -> Runtime<hetsched_o2::fatfs::Directory> {
    let cpus = hetsched_util::host::allowed_cpus();
    let cpus: Vec<usize> = (0..workers).map(|i| cpus[i % cpus.len()]).collect();
    let fs = FileSystem::new(dirs, per_dir, 42);
    let mut rt = Runtime::new(Config {
        cpus,
        // Small capacities so packing must leave some directories unassigned.
        capacity: CacheCapacity::uniform(workers, 8 * per_dir as u64 * 32, 0),
        rebalance_every: rebalance.then_some(Duration::from_millis(2)),
        policy: Policy {
            min_ops: 2,
            retry_periods: 3,
            ..Policy::default()
        },
    })
    .unwrap();
    for d in fs.directories {
        let b = d.bytes();
        rt.add_object(d, b);
    }
    rt
}

#[test]
fn lookups_are_exact_with_delegation_and_rebalancing() {
    let (dirs, per_dir) = (48, 200);
    let workers = 3; // more workers than this machine's cores: exercises yielding waits
    let mut rt = runtime(dirs, per_dir, workers, true);
    let (counts, report) = rt
        .run(|w| {
            let mut rng = ChaCha8Rng::seed_from_u64(w.index() as u64);
            let (mut ok, mut reassigned) = (0u64, 0u64);
            for n in 0..20_000u64 {
                let d = rng.random_range(0..dirs);
                let i = rng.random_range(0..per_dir);
                let name = file_name(i);
                let found = w.on(d as u32, |dir| dir.lookup(&name));
                assert_eq!(found, Some(expected(d, i, per_dir)), "dir {d} file {i}");
                ok += 1;
                // Workers also move directories themselves, racing the rebalancer.
                if n % 97 == 0 {
                    let core = rng.random_range(0..=w.cores());
                    let core = (core < w.cores()).then_some(core);
                    w.runtime()
                        .assign(rng.random_range(0..dirs) as u32, core)
                        .unwrap();
                    reassigned += 1;
                }
            }
            (ok, reassigned)
        })
        .unwrap();
    assert!(counts.iter().all(|&(ok, r)| ok == 20_000 && r > 0));
    let s = &report.snapshot;
    let delegated: u64 = s.cores.iter().map(|c| c.delegated).sum();
    let served: u64 = s.cores.iter().map(|c| c.served).sum();
    let local: u64 = s.objects.iter().map(|o| o.local_ops).sum();
    let owned: u64 = s.objects.iter().map(|o| o.owned_ops + o.local_ops).sum();
    assert_eq!(
        delegated, served,
        "every delegated operation was served once"
    );
    assert!(
        delegated > 0 && local > 0,
        "both paths ran: {delegated} delegated, {local} local"
    );
    assert_eq!(
        owned,
        3 * 20_000,
        "every operation was counted exactly once"
    );
    assert!(!report.steps.is_empty(), "the rebalancer ran");
}

#[test]
fn all_assigned_means_all_delegated_or_owned() {
    let (dirs, per_dir) = (8, 100);
    let mut rt = runtime(dirs, per_dir, 2, false);
    for d in 0..dirs as u32 {
        rt.assign(d, Some(d as usize % 2)).unwrap();
    }
    let (_, report) = rt
        .run(|w| {
            for k in 0..2_000usize {
                let (d, i) = (k % dirs, (k * 7) % per_dir);
                let name = file_name(i);
                assert_eq!(
                    w.on(d as u32, |dir| dir.lookup(&name)),
                    Some(expected(d, i, per_dir))
                );
            }
        })
        .unwrap();
    let s = report.snapshot;
    assert_eq!(s.objects.iter().map(|o| o.local_ops).sum::<u64>(), 0);
    assert_eq!(s.objects.iter().map(|o| o.owned_ops).sum::<u64>(), 4_000);
    // Half the directories live on the other core: half of each worker's lookups moved.
    assert_eq!(s.cores.iter().map(|c| c.delegated).sum::<u64>(), 2_000);
}

#[test]
fn a_panicking_operation_reaches_the_caller_without_hanging_the_owner() {
    let mut rt = runtime(2, 10, 2, false);
    rt.assign(0, Some(1)).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.run(|w| {
            if w.index() == 0 {
                w.on(0, |_| panic!("boom"));
            }
        })
    }));
    assert!(r.is_err());
}

#[test]
fn large_closures_and_results_cross_by_the_callers_stack() {
    // 16 words of capture and of result do not fit the slot's line: the stack path.
    let mut rt = runtime(2, 100, 2, false);
    // Object i lives on core i; worker i always asks for the other one.
    rt.assign(0, Some(0)).unwrap();
    rt.assign(1, Some(1)).unwrap();
    let (sums, report) = rt
        .run(|w| {
            let other = 1 - w.index() as u32;
            let mut total = 0u64;
            for k in 0..500u64 {
                let big = [k; 16];
                let out: [u64; 16] = w.on(other, move |dir| {
                    let (cluster, _) = dir.lookup(&file_name(k as usize % 100)).unwrap();
                    big.map(|v| v + cluster as u64)
                });
                let expect = expected(other as usize, k as usize % 100, 100).0 as u64 + k;
                assert!(out.iter().all(|&v| v == expect));
                total += out[15];
            }
            total
        })
        .unwrap();
    assert_eq!(sums.len(), 2);
    assert_eq!(
        report
            .snapshot
            .cores
            .iter()
            .map(|c| c.delegated)
            .sum::<u64>(),
        1000
    );
}

/// Counts its drops, to check a delegated closure's captures and its result are each
/// dropped exactly once whichever way they travel.
struct Tracked(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn captures_and_results_are_dropped_once_inline_and_on_the_stack() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let drops = Arc::new(AtomicUsize::new(0));
    let mut rt = runtime(2, 10, 2, false);
    rt.assign(0, Some(0)).unwrap();
    rt.assign(1, Some(1)).unwrap();
    rt.run(|w| {
        let other = 1 - w.index() as u32;
        for k in 0..100usize {
            // Small: capture and result fit the slot's line.
            let (cap, padding) = (Tracked(drops.clone()), [k; 1]);
            let small = w.on(other, move |_| {
                let _keep = (&cap, padding);
                Tracked(cap.0.clone())
            });
            drop(small);
            // Large: 32 words of capture cross by the caller's stack.
            let (cap, padding) = (Tracked(drops.clone()), [k; 32]);
            let large = w.on(other, move |_| {
                let _keep = (&cap, padding);
                (Tracked(cap.0.clone()), padding)
            });
            drop(large);
        }
    })
    .unwrap();
    // Per worker and round: two captures and two results.
    assert_eq!(drops.load(Ordering::Relaxed), 2 * 100 * 4);
}
