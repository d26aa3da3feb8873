//! Facts of this host that benchmarks and live runs print or need: the load average, the
//! calling thread's CPU time, and which CPUs a thread may run on (pinning).
//!
//! Why here: a benchmark on a shared machine is only read right beside its load and its
//! CPU (not wall) time, and pinning is how CORETIME, the worker model and the live
//! benchmarks place their threads; each had its own copy before (through rustix here,
//! so no `unsafe`).

use crate::{Error, Result};
use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet, Pid};

/// The 1, 5 and 15 minute load averages (`/proc/loadavg`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoadAverage(pub [f64; 3]);

impl LoadAverage {
    /// Now, if `/proc/loadavg` is readable.
    pub fn now() -> Option<LoadAverage> {
        let text = std::fs::read_to_string("/proc/loadavg").ok()?;
        let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
        let mut next = || fields.next().flatten();
        Some(LoadAverage([next()?, next()?, next()?]))
    }

    /// "1.02 0.87 0.61" now, or "unknown": what a benchmark prints beside its figures.
    pub fn now_text() -> String {
        LoadAverage::now().map_or_else(|| "unknown".into(), |l| l.to_string())
    }
}

impl std::fmt::Display for LoadAverage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [a, b, c] = self.0;
        write!(f, "{a:.2} {b:.2} {c:.2}")
    }
}

/// CPU time the calling thread has used, seconds: on a shared machine wall time
/// overstates what a piece of code costs.
pub fn thread_cpu_seconds() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// The OS CPUs thread `tid` (`None`: the calling thread) may run on, in increasing order.
pub fn affinity(tid: Option<i32>) -> Result<Vec<usize>> {
    let set = sched_getaffinity(tid.and_then(Pid::from_raw))
        .map_err(|e| Error::runtime(format!("sched_getaffinity: {e}")))?;
    Ok((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// The OS CPUs this process's calling thread may run on; `[0]` if the kernel does not
/// say (every Linux does).
pub fn allowed_cpus() -> Vec<usize> {
    affinity(None).unwrap_or_else(|_| vec![0])
}

/// `requested` if this process may run on it (an input error naming `--cpu` otherwise),
/// or the first CPU it may run on.
pub fn cpu_or_first(requested: Option<usize>) -> Result<usize> {
    let allowed = affinity(None)?;
    match requested {
        Some(c) if allowed.contains(&c) => Ok(c),
        Some(c) => Err(Error::input(format!(
            "--cpu: this process may not run on PU {c} (allowed: {allowed:?})"
        ))),
        None => allowed
            .first()
            .copied()
            .ok_or_else(|| Error::runtime("the process may run on no CPU")),
    }
}

/// Binds thread `tid` (`None`: the calling thread) to the OS CPUs `cpus`.
pub fn pin(tid: Option<i32>, cpus: &[usize]) -> Result<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        if c >= CpuSet::MAX_CPU {
            return Err(Error::input(format!(
                "CPU {c} is beyond the largest pinnable CPU ({})",
                CpuSet::MAX_CPU - 1
            )));
        }
        set.set(c);
    }
    let who = tid.map_or_else(|| "this thread".to_string(), |t| format!("thread {t}"));
    sched_setaffinity(tid.and_then(Pid::from_raw), &set)
        .map_err(|e| Error::runtime(format!("sched_setaffinity({who}, {cpus:?}): {e}")))
}

/// The OS CPU the calling thread is running on right now.
pub fn current_cpu() -> usize {
    rustix::thread::sched_getcpu()
}

/// Binds the calling thread to the OS CPUs `cpus`.
pub fn pin_current_thread(cpus: &[usize]) -> Result<()> {
    pin(None, cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_load_average_reads_three_numbers_and_prints_them() {
        let l = LoadAverage::now().expect("/proc/loadavg on Linux");
        assert!(l.0.iter().all(|v| v.is_finite() && *v >= 0.0), "{l:?}");
        assert_eq!(l.to_string().split(' ').count(), 3);
        assert_eq!(
            LoadAverage([1.0, 0.5, 12.25]).to_string(),
            "1.00 0.50 12.25"
        );
    }

    #[test]
    fn thread_cpu_time_grows_with_work_not_with_sleep() {
        let t0 = thread_cpu_seconds();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let slept = thread_cpu_seconds() - t0;
        let t1 = thread_cpu_seconds();
        let mut x = 0u64;
        while thread_cpu_seconds() - t1 < 0.02 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(slept < 0.02, "{slept}");
        assert!(thread_cpu_seconds() - t1 >= 0.02);
    }

    #[test]
    fn a_pinned_thread_runs_only_where_it_was_pinned() {
        let cpus = allowed_cpus();
        let last = *cpus.last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(&[last]).unwrap();
            assert_eq!(affinity(None).unwrap(), [last]);
            assert_eq!(current_cpu(), last);
        })
        .join()
        .unwrap();
        let e = pin_current_thread(&[CpuSet::MAX_CPU]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }
}
