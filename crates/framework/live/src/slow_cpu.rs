//! One CPU made slower for a run: a real-time duty-cycle load pinned to it that leaves a
//! stated fraction of every period to the other tasks there.
//!
//! Why: a machine whose CPUs are all equal (this VM's two vCPUs) cannot show what a
//! heterogeneity-aware policy does, nor test a simulator's prediction of it. Real
//! asymmetry (big.LITTLE, P/E cores, a DVFS cap) needs the hardware or root access to
//! cpufreq that a VM does not give; a `SCHED_FIFO` thread pinned to the CPU does work
//! everywhere root (or `CAP_SYS_NICE` with an `RLIMIT_RTPRIO`) runs. Every period it
//! spins for `(1 − leave) × period` and sleeps for the rest, and no normal (`SCHED_OTHER`)
//! task can preempt it, so a task on that CPU gets at most `leave` of it: a CPU of
//! capacity `leave × 1024`, which a machine file says to the simulator. The kernel's RT
//! throttling (`sched_rt_runtime_us`, 95 % by default) stays the backstop should the
//! load misbehave; [`MIN_LEAVE`] keeps it from ever being needed.
//!
//! A cgroup CPU quota, the other way, limits a group of tasks rather than a CPU (a task
//! that moves off the CPU takes its limit along) and needs a writable cgroup tree, which
//! containers rarely give. Hand-written rather than a library: none we found pins a
//! duty-cycle load; the parts are three system calls (`sched_setaffinity`,
//! `sched_setscheduler`, `clock_gettime`).

use hetsched_core::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The smallest fraction a slowed CPU may leave: above the 5 % the kernel's default RT
/// throttling reserves, so the load never depends on it.
pub const MIN_LEAVE: f64 = 0.10;

/// The largest period, ms: a task sharing the CPU should see a steady rate at the
/// granularity the daemon samples (100 ms), not seconds on and off.
pub const MAX_PERIOD_MS: u64 = 100;

/// What the load did while it ran.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoadStats {
    /// Wall time it ran, s.
    pub seconds: f64,
    /// The fraction of that wall time the load itself ran on the CPU (its thread's CPU
    /// time over wall time): `1 − leave` when it kept its duty cycle.
    pub busy: f64,
}

/// A CPU slowed for as long as this value lives; [`SlowCpu::stop`] ends it and says what
/// the load did.
pub struct SlowCpu {
    pub cpu: usize,
    pub leave: f64,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<LoadStats>>,
}

impl SlowCpu {
    /// Starts the load on `cpu`, leaving `leave` of every `period` to other tasks. Bad
    /// values are refused naming the option and its accepted range; a system that will
    /// not give the load real-time priority is an error saying what it needs.
    pub fn start(cpu: usize, leave: f64, period: Duration) -> Result<SlowCpu> {
        if !(MIN_LEAVE..1.0).contains(&leave) {
            return Err(Error::input(format!(
                "--leave {leave}: the fraction of the CPU left to other tasks must be in [{MIN_LEAVE}, 1)"
            )));
        }
        let ms = period.as_millis();
        if !(1..=MAX_PERIOD_MS as u128).contains(&ms) {
            return Err(Error::input(format!(
                "--period-ms {ms}: must be in [1, {MAX_PERIOD_MS}]"
            )));
        }
        let allowed = allowed_cpus()?;
        if !allowed.contains(&cpu) {
            return Err(Error::input(format!(
                "--cpu {cpu}: not a CPU this process may run on (allowed: {allowed:?})"
            )));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (started, ready) = mpsc::channel();
        let flag = stop.clone();
        let busy = period.mul_f64(1.0 - leave);
        let thread = std::thread::Builder::new()
            .name(format!("slow-cpu{cpu}"))
            .spawn(move || {
                let pinned = pin_realtime(cpu);
                let ok = pinned.is_ok();
                let _ = started.send(pinned);
                if !ok {
                    return LoadStats {
                        seconds: 0.0,
                        busy: 0.0,
                    };
                }
                duty_cycle(&flag, busy, period)
            })
            .map_err(|e| Error::runtime(format!("slow-cpu: cannot start its thread: {e}")))?;
        match ready.recv() {
            Ok(Ok(())) => Ok(SlowCpu {
                cpu,
                leave,
                stop,
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(Error::runtime("slow-cpu: its thread ended before starting")),
        }
    }

    /// Ends the load and says what it did.
    pub fn stop(mut self) -> LoadStats {
        self.end()
    }

    fn end(&mut self) -> LoadStats {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or(LoadStats {
                seconds: 0.0,
                busy: 0.0,
            })
    }
}

impl Drop for SlowCpu {
    fn drop(&mut self) {
        self.end();
    }
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the kernel writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) } != 0 {
        return Err(Error::runtime(format!(
            "slow-cpu: sched_getaffinity: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// Pins the calling thread to `cpu` and gives it `SCHED_FIFO` priority 1 (the lowest
/// real-time one: above every normal task, below any real-time task of the system's).
fn pin_realtime(cpu: usize) -> Result<()> {
    // SAFETY: the set is initialised before use and passed with its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
            return Err(Error::runtime(format!(
                "slow-cpu: cannot pin to CPU {cpu}: {}",
                std::io::Error::last_os_error()
            )));
        }
        let param = libc::sched_param { sched_priority: 1 };
        if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) != 0 {
            return Err(Error::runtime(format!(
                "slow-cpu: the load needs real-time priority (SCHED_FIFO), which this system refuses ({}); run as root, or with CAP_SYS_NICE and an RLIMIT_RTPRIO of at least 1",
                std::io::Error::last_os_error()
            )));
        }
    }
    Ok(())
}

/// This thread's CPU time, s.
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Spins for `busy` and sleeps for the rest of each `period` until `stop`; the periods
/// are laid end to end from the start, so a late wake-up shortens the next sleep rather
/// than stretching the cycle.
fn duty_cycle(stop: &AtomicBool, busy: Duration, period: Duration) -> LoadStats {
    let start = Instant::now();
    let cpu0 = thread_cpu_seconds();
    let mut next = start;
    while !stop.load(Ordering::Relaxed) {
        let spin_until = next + busy;
        while Instant::now() < spin_until {
            std::hint::spin_loop();
        }
        next += period;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            // Fell behind (the CPU was taken from us): start the next period now.
            next = now;
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    LoadStats {
        seconds,
        busy: if seconds > 0.0 {
            (thread_cpu_seconds() - cpu0) / seconds
        } else {
            0.0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_are_refused_naming_the_option_and_its_range() {
        let ms = Duration::from_millis(10);
        let e = SlowCpu::start(0, 0.0, ms).err().unwrap().to_string();
        assert!(e.contains("--leave 0") && e.contains("[0.1, 1)"), "{e}");
        let e = SlowCpu::start(0, 1.0, ms).err().unwrap().to_string();
        assert!(e.contains("--leave 1"), "{e}");
        let e = SlowCpu::start(0, f64::NAN, ms).err().unwrap().to_string();
        assert!(e.contains("--leave NaN"), "{e}");
        let e = SlowCpu::start(0, 0.5, Duration::from_secs(1))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("--period-ms 1000") && e.contains("[1, 100]"),
            "{e}"
        );
        let e = SlowCpu::start(100_000, 0.5, ms).err().unwrap().to_string();
        assert!(e.contains("--cpu 100000") && e.contains("allowed"), "{e}");
    }
}
