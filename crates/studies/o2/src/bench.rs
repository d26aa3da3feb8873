//! `hetsched bench o2`: what a delegation costs (CORETIME's migration: 2000 cycles).
//!
//! Worker 0 sends empty operations to an object owned by worker 1 and times each round
//! trip; then both workers delegate to each other at full speed for throughput; then
//! the same with `on_async` under `futures::executor::block_on`.

use crate::capacity::CacheCapacity;
use crate::runtime::{Config, Runtime};
use futures::executor::block_on;
use futures::future::join_all;
use hetsched_core::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The benchmark's objects: counters on lines of their own, so that two owners
/// updating their objects do not share a line (that would measure the layout, not
/// the delegation).
type Counter = crossbeam_utils::CachePadded<AtomicU64>;

/// Results of one benchmark run.
#[derive(Clone, Debug, PartialEq)]
pub struct DelegationBench {
    pub samples: usize,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub mean_ns: f64,
    /// Delegated operations per second with both workers delegating to each other.
    pub throughput_ops_per_s: f64,
    /// The same with operations on unassigned objects (run in place), for reference.
    pub local_ops_per_s: f64,
    /// The floor: p50 / p99 round trip of one bare cache line bounced between the same
    /// two pinned threads (a store answered by a store), timed the same way.
    pub pingpong_p50_ns: u64,
    pub pingpong_p99_ns: u64,
    /// Round trip of `on_async` awaited alone under `futures::executor::block_on`: the
    /// caller's thread parks and the owner wakes it (`samples / 10` of them).
    pub async_p50_ns: u64,
    pub async_p99_ns: u64,
    /// Delegated `on_async` operations per second, both workers keeping
    /// [`ASYNC_IN_FLIGHT`] in flight to each other.
    pub async_throughput_ops_per_s: f64,
}

/// Operations each worker keeps in flight in the async throughput run.
pub const ASYNC_IN_FLIGHT: usize = 8;

/// Round trips of a bare atomic flag between two threads pinned to `cpus`, sorted.
pub fn pingpong(cpus: [usize; 2], samples: usize) -> Result<Vec<u64>> {
    let flag = crossbeam_utils::CachePadded::new(AtomicU64::new(0));
    let mut times = vec![0u64; samples];
    std::thread::scope(|s| -> Result<()> {
        let echo = s.spawn(|| -> Result<()> {
            hetsched_util::host::pin_current_thread(&[cpus[1]])?;
            for i in 0..samples as u64 {
                while flag.load(Ordering::Acquire) != 2 * i + 1 {
                    std::hint::spin_loop();
                }
                flag.store(2 * i + 2, Ordering::Release);
            }
            Ok(())
        });
        let pinned = hetsched_util::host::pin_current_thread(&[cpus[0]]);
        for (i, t) in times.iter_mut().enumerate() {
            let i = i as u64;
            let start = Instant::now();
            flag.store(2 * i + 1, Ordering::Release);
            while flag.load(Ordering::Acquire) != 2 * i + 2 {
                std::hint::spin_loop();
            }
            *t = start.elapsed().as_nanos() as u64;
        }
        echo.join()
            .map_err(|_| Error::runtime("ping-pong thread panicked"))??;
        pinned
    })?;
    times.sort_unstable();
    Ok(times)
}

/// The nearest-rank percentile `p` (0..=100) of sorted samples; 0 if there are none.
fn percentile(sorted: &[u64], p: f64) -> u64 {
    hetsched_util::stats::percentile(sorted, p / 100.0).unwrap_or(0)
}

/// Runs the benchmark on two CPUs.
pub fn delegation(
    cpus: [usize; 2],
    samples: usize,
    throughput_for: Duration,
) -> Result<DelegationBench> {
    if samples == 0 {
        return Err(Error::input("bench o2: --samples must be > 0"));
    }
    let mut rt = Runtime::new(Config {
        cpus: cpus.to_vec(),
        capacity: CacheCapacity::uniform(2, 1 << 20, 0),
        rebalance_every: None,
        policy: Default::default(),
    })?;
    let counters = [
        rt.add_object(Counter::default(), 64),
        rt.add_object(Counter::default(), 64),
    ];
    let free = rt.add_object(Counter::default(), 64);
    rt.assign(counters[0], Some(0))?;
    rt.assign(counters[1], Some(1))?;

    // Latency: one caller, the other core only serves.
    let mut times = vec![0u64; samples];
    let (mut lat, _) = rt.run(|w| {
        let mut t = Vec::new();
        if w.index() == 0 {
            t = vec![0u64; samples];
            for s in t.iter_mut() {
                let start = Instant::now();
                w.on(counters[1], |c| c.fetch_add(1, Ordering::Relaxed));
                *s = start.elapsed().as_nanos() as u64;
            }
        }
        t
    })?;
    std::mem::swap(&mut times, &mut lat[0]);
    times.sort_unstable();
    let mean_ns = times.iter().sum::<u64>() as f64 / times.len() as f64;

    // Throughput: each worker hammers the object the other one owns.
    let ops = |obj_of: fn(usize, [u32; 2], u32) -> u32, rt: &mut Runtime<Counter>| -> Result<f64> {
        let start = Instant::now();
        let (n, _) = rt.run(|w| {
            let obj = obj_of(w.index(), counters, free);
            let mut n = 0u64;
            while start.elapsed() < throughput_for {
                for _ in 0..256 {
                    w.on(obj, |c| c.fetch_add(1, Ordering::Relaxed));
                }
                n += 256;
            }
            n
        })?;
        Ok(n.iter().sum::<u64>() as f64 / start.elapsed().as_secs_f64())
    };
    let throughput_ops_per_s = ops(|i, c, _| c[1 - i], &mut rt)?;
    let local_ops_per_s = ops(|_, _, f| f, &mut rt)?;

    // Async: one awaited at a time (park, wake), then a window of joined operations.
    let async_samples = (samples / 10).max(1);
    let (mut lat, _) = rt.run(|w| {
        let mut t = Vec::new();
        if w.index() == 0 {
            t = vec![0u64; async_samples];
            for s in t.iter_mut() {
                let start = Instant::now();
                block_on(w.on_async(counters[1], |c| c.fetch_add(1, Ordering::Relaxed)));
                *s = start.elapsed().as_nanos() as u64;
            }
        }
        t
    })?;
    let mut async_times = std::mem::take(&mut lat[0]);
    async_times.sort_unstable();
    let start = Instant::now();
    let (n, _) = rt.run(|w| {
        let obj = counters[1 - w.index()];
        let mut n = 0u64;
        while start.elapsed() < throughput_for {
            let window = (0..ASYNC_IN_FLIGHT)
                .map(|_| w.on_async(obj, |c| c.fetch_add(1, Ordering::Relaxed)));
            n += block_on(join_all(window)).len() as u64;
        }
        n
    })?;
    let async_throughput_ops_per_s = n.iter().sum::<u64>() as f64 / start.elapsed().as_secs_f64();

    let floor = pingpong(cpus, samples)?;
    Ok(DelegationBench {
        pingpong_p50_ns: percentile(&floor, 50.0),
        pingpong_p99_ns: percentile(&floor, 99.0),
        samples,
        p50_ns: percentile(&times, 50.0),
        p99_ns: percentile(&times, 99.0),
        mean_ns,
        throughput_ops_per_s,
        local_ops_per_s,
        async_p50_ns: percentile(&async_times, 50.0),
        async_p99_ns: percentile(&async_times, 99.0),
        async_throughput_ops_per_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_list() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&v, 100.0), 100);
        assert_eq!(percentile(&[], 50.0), 0);
    }

    #[test]
    fn a_tiny_run_counts_every_operation() {
        let cpus = hetsched_util::host::allowed_cpus();
        let b = delegation(
            [cpus[0], *cpus.last().unwrap()],
            200,
            Duration::from_millis(20),
        )
        .unwrap();
        assert_eq!(b.samples, 200);
        assert!(b.p50_ns > 0 && b.p50_ns <= b.p99_ns);
        assert!(b.throughput_ops_per_s > 0.0 && b.local_ops_per_s > 0.0);
        assert!(b.async_p50_ns > 0 && b.async_p50_ns <= b.async_p99_ns);
        assert!(b.async_throughput_ops_per_s > 0.0);
    }
}
