//! Cycles per I/O (Akram et al.'s CPIO): CPU cycles spent per 512-byte sector moved,
//! split as the paper splits the operating system's time breakdown: user, system, and
//! iowait.
//!
//! User and system time are the benchmark threads' own (`getrusage(RUSAGE_THREAD)`, so
//! a co-running memory-stress thread is not charged); iowait is the whole system's
//! (`/proc/stat`), as the paper reads it from the OS. Cycles are time × a clock: this
//! machine may have no cpufreq (virtual machines), so the clock is the one
//! `/proc/cpuinfo` reports, which is nominal without cpufreq and the current frequency
//! with it; [`Clock::source`] says which.

use serde::Serialize;
use std::time::Duration;

/// The paper's sector.
pub const SECTOR_BYTES: u64 = 512;

/// The clock that turns CPU time into cycles.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Clock {
    pub mhz: f64,
    /// `nominal (/proc/cpuinfo, no cpufreq)` or `measured (/proc/cpuinfo, cpufreq)`.
    pub source: String,
}

impl Clock {
    /// The mean `cpu MHz` of `/proc/cpuinfo` (1000 MHz with a note when absent).
    pub fn read() -> Clock {
        let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let mhz: Vec<f64> = text
            .lines()
            .filter(|l| l.starts_with("cpu MHz"))
            .filter_map(|l| l.split(':').nth(1)?.trim().parse().ok())
            .collect();
        if mhz.is_empty() {
            return Clock {
                mhz: 1000.0,
                source: "assumed 1000 MHz (no cpu MHz in /proc/cpuinfo)".into(),
            };
        }
        let cpufreq = std::path::Path::new("/sys/devices/system/cpu/cpu0/cpufreq").exists();
        Clock {
            mhz: mhz.iter().sum::<f64>() / mhz.len() as f64,
            source: if cpufreq {
                "measured (/proc/cpuinfo, cpufreq present)".into()
            } else {
                "nominal (/proc/cpuinfo, no cpufreq)".into()
            },
        }
    }
}

/// User and system CPU time of the calling thread.
pub fn thread_times() -> (Duration, Duration) {
    // SAFETY: rusage is plain data and getrusage writes it whole.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut u);
        u
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (tv(usage.ru_utime), tv(usage.ru_stime))
}

/// The whole system's iowait so far (`/proc/stat`, summed over CPUs).
pub fn system_iowait() -> Duration {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: u64 = text
        .lines()
        .find(|l| l.starts_with("cpu "))
        .and_then(|l| l.split_whitespace().nth(5)?.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_nanos(ticks.saturating_mul(1_000_000_000) / hz)
}

/// CPIO of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cpio {
    /// User + system.
    pub total: f64,
    pub user: f64,
    pub system: f64,
    /// System-wide iowait cycles per sector.
    pub iowait: f64,
    pub sectors: u64,
    pub clock: Clock,
}

impl Cpio {
    pub fn new(bytes: u64, user: Duration, system: Duration, iowait: Duration) -> Cpio {
        let clock = Clock::read();
        let sectors = bytes / SECTOR_BYTES;
        let per = |d: Duration| d.as_secs_f64() * clock.mhz * 1e6 / sectors.max(1) as f64;
        Cpio {
            total: per(user + system),
            user: per(user),
            system: per(system),
            iowait: per(iowait),
            sectors,
            clock,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpio_is_cycles_per_sector() {
        let c = Cpio::new(
            1 << 20,
            Duration::from_millis(1),
            Duration::from_millis(3),
            Duration::ZERO,
        );
        assert_eq!(c.sectors, 2048);
        let cycles_per_ms = c.clock.mhz * 1e3;
        assert!((c.system - 3.0 * cycles_per_ms / 2048.0).abs() < 1e-6 * c.system);
        assert!((c.total - c.user - c.system).abs() < 1e-9 * c.total);
        assert!(c.clock.mhz > 0.0);
    }

    #[test]
    fn a_busy_thread_accumulates_cpu_time() {
        let (u0, s0) = thread_times();
        // Spin until the kernel has charged some time (bounded, so a broken counter
        // fails rather than hangs).
        let start = std::time::Instant::now();
        let mut x = 0u64;
        let (mut u1, mut s1) = (u0, s0);
        while u1 + s1 == u0 + s0 && start.elapsed() < Duration::from_secs(30) {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            (u1, s1) = thread_times();
        }
        assert!(u1 + s1 > u0 + s0, "no CPU time counted in 30 s of spinning");
    }
}
