//! Cheap timestamps for the runtime's counters.
//!
//! Every operation and every delegation is timed, and a `std::time::Instant` read costs
//! about 30 ns on this VM (vDSO clock_gettime) against 11 ns for the raw time-stamp
//! counter; four reads sit on a delegation's critical path. So counters accumulate raw
//! ticks and a [`Clock`] converts them to nanoseconds when a snapshot is taken, with a
//! rate calibrated against `Instant` over the run itself (no start-up calibration loop).
//! Only differences taken on one thread are used, so TSCs need not agree across cores.

use std::time::Instant;

/// Raw ticks now (the x86-64 time-stamp counter; nanoseconds elsewhere).
#[inline]
pub(crate) fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC is available on every x86-64 CPU and has no side effects.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::sync::OnceLock;
        static EPOCH: OnceLock<Instant> = OnceLock::new();
        EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// Converts tick counts to nanoseconds: the rate is wall time over ticks since `new`.
pub(crate) struct Clock {
    start: Instant,
    start_ticks: u64,
}

impl Clock {
    pub(crate) fn new() -> Self {
        Clock {
            start: Instant::now(),
            start_ticks: ticks(),
        }
    }

    /// Nanoseconds since `new`.
    pub(crate) fn elapsed_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Nanoseconds per tick, measured over the clock's lifetime so far.
    pub(crate) fn ns_per_tick(&self) -> f64 {
        let ns = self.elapsed_ns();
        let t = ticks().wrapping_sub(self.start_ticks);
        if t == 0 || ns == 0 {
            return 1.0;
        }
        ns as f64 / t as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn ticks_convert_to_wall_time() {
        let clock = Clock::new();
        let t0 = ticks();
        let i0 = Instant::now();
        std::thread::sleep(Duration::from_millis(20));
        let (dt, di) = (ticks() - t0, i0.elapsed().as_nanos() as f64);
        let ns = dt as f64 * clock.ns_per_tick();
        // Same interval, two clocks: agree within 5% (the sleep dwarfs the reads).
        assert!((ns - di).abs() < 0.05 * di, "{ns} ns by ticks vs {di} ns");
    }
}
