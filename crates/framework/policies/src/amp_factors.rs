//! The two metrics of Ding et al.'s NUMA-aware AMP scheduler, from a task's hardware
//! counters: the **AMP speed-up factor** (how much faster the task runs on a fast core
//! than on a slow one) and the **contention degradation factor** (how much slower it
//! runs on a NUMA node, given the memory intensity of the tasks sharing that node and
//! the distance to its memory).
//!
//! Why here, apart from the policy: the paper names both metrics but our copy stops
//! before their formulas, so these are *our* definitions, each from the closest
//! published one (see `docs/ding.md`), and they are tested by hand-computed values.
//!
//! - Speed-up factor (CAMP, Saez, Prieto, Fedorova, Blagodurov, EuroSys 2010): a
//!   task's time per instruction at frequency `f` is `t(f) = c / f + m`, with `c` the
//!   core cycles per instruction and `m` the memory stall per instruction, estimated as
//!   LLC misses per instruction × a miss latency. From a sample at frequency `f`,
//!   `CPI = c + m·f`, so `c = CPI − m·f`, and `SF = t(f_slow) / t(f_fast)`.
//! - Memory intensity and classes (Distributed Intensity, Zhuravlev, Blagodurov,
//!   Fedorova, ASPLOS 2010; DINO, Blagodurov, Zhuravlev, Dashti, Fedorova, USENIX ATC
//!   2011): LLC misses per 1,000 instructions (MPKI); DINO calls tasks below 2 MPKI
//!   "turtles", above 10 "devils" (thresholds as we read them; see `docs/ding.md`).
//! - Contention degradation factor (ours, in DI's spirit): the memory-bound fraction `μ`
//!   of the task's time is stretched by the distance ratio `r` to its memory and by the
//!   other tasks' MPKI on the node: `CDF = (1 − μ) + μ · r · (1 + Σ mpki_others / scale)`.
//!   1 means no degradation; DI's spreading is choosing the node with the least CDF.

/// DINO's class bounds, in LLC misses per 1,000 instructions.
pub const TURTLE_MPKI: f64 = 2.0;
pub const DEVIL_MPKI: f64 = 10.0;

/// What the counters tell of a task, averaged over its samples and independent of the
/// core it ran on: its core cycles per instruction `c`, its memory intensity and the
/// clock of a capacity-1024 core.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Profile {
    /// Core cycles per instruction, `c = CPI − m·f`.
    pub core_cpi: f64,
    /// LLC misses per 1,000 instructions.
    pub mpki: f64,
    /// The clock of a capacity-1024 core, GHz (the sampled clock, cycles per busy
    /// nanosecond, scaled by 1024 / the unit's capacity: asymmetry by frequency).
    pub ref_ghz: f64,
    /// Samples averaged so far (0: no profile).
    pub samples: u32,
}

/// One sample's counters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Counters {
    pub instructions: u64,
    pub cycles: u64,
    pub llc_misses: u64,
    pub busy_ns: u64,
}

impl Profile {
    /// Folds in one sample taken on a unit of `capacity`: an exponentially weighted
    /// average (weight 1/2, so that a phase change shows within a few profiling
    /// periods). A sample without instructions, cycles or busy time says nothing.
    pub fn update(&mut self, s: Counters, capacity: u32, miss_latency_ns: f64) {
        if s.instructions == 0 || s.busy_ns == 0 || s.cycles == 0 || capacity == 0 {
            return;
        }
        let i = s.instructions as f64;
        let ghz = s.cycles as f64 / s.busy_ns as f64;
        let mpki = s.llc_misses as f64 * 1000.0 / i;
        let core_cpi = (s.cycles as f64 / i - stall_ns(mpki, miss_latency_ns) * ghz).max(0.0);
        let ref_ghz = ghz * SCALE / capacity as f64;
        let w = if self.samples == 0 { 1.0 } else { 0.5 };
        let avg = |old: f64, new: f64| old + w * (new - old);
        self.core_cpi = avg(self.core_cpi, core_cpi);
        self.mpki = avg(self.mpki, mpki);
        self.ref_ghz = avg(self.ref_ghz, ref_ghz);
        self.samples = self.samples.saturating_add(1);
    }

    pub fn known(&self) -> bool {
        self.samples > 0
    }

    /// Time per instruction, ns, on a core of `capacity`: `t(f) = c / f + m`.
    fn ns_per_instruction(&self, capacity: u32, miss_latency_ns: f64) -> f64 {
        let f = (self.ref_ghz * capacity as f64 / SCALE).max(f64::MIN_POSITIVE);
        self.core_cpi / f + stall_ns(self.mpki, miss_latency_ns)
    }

    /// The speed-up factor from a core of capacity `slow` to one of capacity `fast`:
    /// `t(f_slow) / t(f_fast)` (1 without a profile).
    pub fn speedup(&self, fast: u32, slow: u32, miss_latency_ns: f64) -> f64 {
        let t_fast = self.ns_per_instruction(fast, miss_latency_ns);
        if self.known() && t_fast > 0.0 {
            self.ns_per_instruction(slow, miss_latency_ns) / t_fast
        } else {
            1.0
        }
    }

    /// The fraction of its time on a core of `capacity` the task waits for memory:
    /// `μ = m / t(f)`.
    pub fn memory_fraction(&self, capacity: u32, miss_latency_ns: f64) -> f64 {
        let t = self.ns_per_instruction(capacity, miss_latency_ns);
        if t > 0.0 {
            (stall_ns(self.mpki, miss_latency_ns) / t).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

const SCALE: f64 = hetsched_core::machine::CAPACITY_SCALE as f64;

/// The memory stall per instruction, ns: misses per instruction × the miss latency.
fn stall_ns(mpki: f64, miss_latency_ns: f64) -> f64 {
    mpki / 1000.0 * miss_latency_ns
}

/// The contention degradation factor of a task with memory-bound fraction `mu` on a
/// node at distance ratio `distance` (distance / 10; 1 = local) from its memory, where
/// the other tasks add up to `others_mpki` (see the module documentation).
pub fn contention_factor(mu: f64, distance: f64, others_mpki: f64, mpki_scale: f64) -> f64 {
    let mu = mu.clamp(0.0, 1.0);
    (1.0 - mu) + mu * distance.max(1.0) * (1.0 + others_mpki.max(0.0) / mpki_scale.max(1e-9))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    fn sample(instructions: u64, cycles: u64, llc_misses: u64, busy_ns: u64) -> Counters {
        Counters {
            instructions,
            cycles,
            llc_misses,
            busy_ns,
        }
    }

    /// A compute-bound and a memory-bound task, by hand: latency 100 ns, sampled on a
    /// capacity-1024 core at 2 GHz; the slow core has capacity 512 (1 GHz).
    #[test]
    fn speedup_factor_by_hand() {
        // CPI 1, no misses: c = 1, m = 0, t(f) = 1/f, SF = 2.
        let mut compute = Profile::default();
        assert_eq!(compute.speedup(1024, 512, 100.0), 1.0);
        compute.update(sample(2_000, 2_000, 0, 1_000), 1024, 100.0);
        close(compute.core_cpi, 1.0);
        close(compute.ref_ghz, 2.0);
        close(compute.speedup(1024, 512, 100.0), 2.0);
        close(compute.memory_fraction(1024, 100.0), 0.0);
        // CPI 5, 20 MPKI: m = 0.02 × 100 = 2 ns, c = 5 − 2 × 2 = 1 cycle;
        // t(2) = 0.5 + 2 = 2.5, t(1) = 1 + 2 = 3, SF = 1.2; μ = 2 / 2.5 = 0.8.
        let mut memory = Profile::default();
        memory.update(sample(1_000, 5_000, 20, 2_500), 1024, 100.0);
        close(memory.mpki, 20.0);
        close(memory.core_cpi, 1.0);
        close(memory.speedup(1024, 512, 100.0), 1.2);
        close(memory.memory_fraction(1024, 100.0), 0.8);
        // The same task sampled on the slow core (1 GHz, CPI 3) gives the same profile.
        let mut slow = Profile::default();
        slow.update(sample(1_000, 3_000, 20, 3_000), 512, 100.0);
        close(slow.core_cpi, 1.0);
        close(slow.ref_ghz, 2.0);
        close(slow.speedup(1024, 512, 100.0), 1.2);
    }

    #[test]
    fn profile_averages_and_ignores_empty_samples() {
        let mut p = Profile::default();
        p.update(sample(0, 10, 1, 10), 1024, 100.0);
        p.update(sample(10, 10, 1, 0), 1024, 100.0);
        assert!(!p.known());
        // MPKI 10 then 30: the average is 20 (c: 1 − 2 = 0 floored, then 3 − 6 → 0).
        p.update(sample(1_000, 1_000, 10, 500), 1024, 100.0);
        p.update(sample(1_000, 3_000, 30, 1_500), 1024, 100.0);
        assert_eq!(p.samples, 2);
        close(p.mpki, 20.0);
        close(p.ref_ghz, 2.0);
        close(p.core_cpi, 0.0);
        // All memory: no speed-up from a faster clock.
        close(p.speedup(1024, 512, 100.0), 1.0);
    }

    #[test]
    fn contention_factor_by_hand() {
        // μ = 0.8, remote (2×), another task of 10 MPKI, scale 20:
        // 0.2 + 0.8 × 2 × 1.5 = 2.6.
        close(contention_factor(0.8, 2.0, 10.0, 20.0), 2.6);
        // Local and alone: no degradation; compute-bound: none either.
        close(contention_factor(0.8, 1.0, 0.0, 20.0), 1.0);
        close(contention_factor(0.0, 2.0, 50.0, 20.0), 1.0);
    }
}
