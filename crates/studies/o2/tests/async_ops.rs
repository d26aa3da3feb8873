//! `Worker::on_async` under a real executor (`futures::executor::block_on`): exact
//! results with many operations in flight, workers parked awaiting each other, panics,
//! futures dropped in flight, and a caller that parks instead of spinning.

use futures::executor::block_on;
use futures::future::join_all;
use hetsched_o2::fatfs::{expected, file_name, Directory, FileSystem};
use hetsched_o2::{CacheCapacity, Config, Policy, Runtime};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Context;
use std::time::{Duration, Instant};

fn runtime(dirs: usize, per_dir: usize, workers: usize) -> Runtime<Directory> {
    let cpus = hetsched_util::host::allowed_cpus();
    let cpus: Vec<usize> = (0..workers).map(|i| cpus[i % cpus.len()]).collect();
    let mut rt = Runtime::new(Config {
        cpus,
        capacity: CacheCapacity::uniform(workers, 1 << 30, 0),
        rebalance_every: None,
        policy: Policy::default(),
    })
    .unwrap();
    for d in FileSystem::new(dirs, per_dir, 7).directories {
        let b = d.bytes();
        rt.add_object(d, b);
    }
    rt
}

#[test]
fn joined_lookups_are_exact_while_both_workers_await_each_other() {
    let (dirs, per_dir) = (6, 100);
    let mut rt = runtime(dirs, per_dir, 2);
    // Directories 0-1 on worker 0, 2-3 on worker 1, 4-5 unassigned.
    for d in 0..4u32 {
        rt.assign(d, Some(d as usize / 2)).unwrap();
    }
    let (found, report) = rt
        .run(|w| {
            let mut ok = 0;
            for round in 0..50usize {
                // 30 lookups in flight at once: more than the 8 slots per owner.
                let names: Vec<(usize, usize)> = (0..30)
                    .map(|k| ((k + round) % dirs, (k * 7 + round) % per_dir))
                    .collect();
                let lookups = names.iter().map(|&(d, i)| {
                    let name = file_name(i);
                    w.on_async(d as u32, move |dir| dir.lookup(&name))
                });
                for (got, &(d, i)) in block_on(join_all(lookups)).into_iter().zip(&names) {
                    assert_eq!(got, Some(expected(d, i, per_dir)), "dir {d} file {i}");
                    ok += 1;
                }
            }
            ok
        })
        .unwrap();
    assert_eq!(found, vec![1500, 1500]);
    let s = &report.snapshot;
    let delegated: u64 = s.cores.iter().map(|c| c.delegated).sum();
    let served: u64 = s.cores.iter().map(|c| c.served).sum();
    // Per worker and round, 10 of the 30 lookups are on the other worker's directories.
    assert_eq!(delegated, 2 * 50 * 10);
    assert_eq!(served, delegated);
    assert_eq!(s.objects[4].local_ops + s.objects[5].local_ops, 2 * 50 * 10);
}

#[test]
fn separately_woken_futures_beyond_the_slots_all_complete() {
    use futures::stream::{FuturesUnordered, StreamExt};
    let mut rt = runtime(1, 40, 2);
    rt.assign(0, Some(1)).unwrap();
    let (found, _) = rt
        .run(|w| {
            if w.index() != 0 {
                return 0;
            }
            // 40 futures, each polled only when its own waker fires, for 8 slots:
            // most wait for a slot and must be woken when one frees.
            let lookups: FuturesUnordered<_> = (0..40)
                .map(|i| {
                    let name = file_name(i);
                    let op = w.on_async(0, move |dir| dir.lookup(&name));
                    async move { op.await == Some(expected(0, i, 40)) }
                })
                .collect();
            block_on(lookups.filter(|&ok| async move { ok }).count())
        })
        .unwrap();
    assert_eq!(found[0], 40);
}

#[test]
fn a_parked_worker_still_serves_a_synchronous_caller() {
    let mut rt = runtime(2, 50, 2);
    rt.assign(0, Some(0)).unwrap();
    rt.assign(1, Some(1)).unwrap();
    let (found, _) = rt
        .run(|w| {
            let other = 1 - w.index() as u32;
            let name = file_name(3);
            (0..300)
                .filter(|_| {
                    let found = if w.index() == 0 {
                        block_on(w.on_async(other, |dir| dir.lookup(&name)))
                    } else {
                        w.on(other, |dir| dir.lookup(&name))
                    };
                    found == Some(expected(other as usize, 3, 50))
                })
                .count()
        })
        .unwrap();
    assert_eq!(found, vec![300, 300]);
}

#[test]
fn a_synchronous_caller_wakes_an_owner_parked_on_a_slow_answer() {
    // Worker 0 awaits a 300 ms operation on worker 2; meanwhile worker 1 asks worker 0
    // for a lookup: it must not wait for those 300 ms.
    let mut rt = runtime(2, 10, 3);
    rt.assign(0, Some(0)).unwrap();
    rt.assign(1, Some(2)).unwrap();
    let (waited, _) = rt
        .run(|w| match w.index() {
            0 => {
                block_on(w.on_async(1, |_| std::thread::sleep(Duration::from_millis(300))));
                Duration::ZERO
            }
            1 => {
                std::thread::sleep(Duration::from_millis(30));
                let start = Instant::now();
                let found = w.on(0, |dir| dir.lookup(&file_name(4)));
                assert_eq!(found, Some(expected(0, 4, 10)));
                start.elapsed()
            }
            _ => Duration::ZERO,
        })
        .unwrap();
    assert!(
        waited[1] < Duration::from_millis(150),
        "waited {:?}",
        waited[1]
    );
}

#[test]
fn the_awaiting_thread_parks_instead_of_spinning() {
    let mut rt = runtime(1, 10, 2);
    rt.assign(0, Some(1)).unwrap();
    let (cpu, _) = rt
        .run(|w| {
            if w.index() != 0 {
                return Duration::ZERO;
            }
            let start = Instant::now();
            let cpu0 = thread_cpu_time();
            let slept = block_on(w.on_async(0, |_| {
                std::thread::sleep(Duration::from_millis(300));
                true
            }));
            assert!(slept && start.elapsed() >= Duration::from_millis(300));
            thread_cpu_time() - cpu0
        })
        .unwrap();
    // A spinning caller would burn ~300 ms of CPU; a parked one next to nothing.
    assert!(
        cpu[0] < Duration::from_millis(60),
        "caller used {:?} of CPU",
        cpu[0]
    );
}

#[test]
fn a_panicking_async_operation_reaches_the_awaiting_worker() {
    let mut rt = runtime(1, 10, 2);
    rt.assign(0, Some(1)).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.run(|w| {
            if w.index() == 0 {
                block_on(w.on_async(0, |_| -> u32 { panic!("boom") }));
            }
        })
    }));
    assert!(r.is_err());
}

/// Counts its drops.
struct Tracked(Arc<AtomicUsize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn a_future_dropped_in_flight_waits_and_drops_the_result_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut rt = runtime(1, 10, 2);
    rt.assign(0, Some(1)).unwrap();
    rt.run(|w| {
        if w.index() == 0 {
            for _ in 0..100 {
                let d = drops.clone();
                let mut fut = Box::pin(w.on_async(0, move |_| {
                    std::thread::sleep(Duration::from_micros(50));
                    Tracked(d)
                }));
                let mut cx = Context::from_waker(futures::task::noop_waker_ref());
                // Posted, not answered yet (the owner sleeps): dropping must wait.
                assert!(fut.as_mut().poll(&mut cx).is_pending());
                drop(fut);
            }
        }
    })
    .unwrap();
    assert_eq!(drops.load(Ordering::Relaxed), 100);
}

fn thread_cpu_time() -> Duration {
    Duration::from_secs_f64(hetsched_util::host::thread_cpu_seconds())
}
