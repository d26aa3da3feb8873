//! Sampled reuse distances: SHARDS-style fixed-rate spatial sampling for far reuses,
//! an exact recency stack for near ones.
//!
//! A block is sampled when a hash of its number falls below `R · 2^64`, so either all
//! or none of a block's accesses are seen (Waldspurger et al., FAST'15). Distances
//! measured among sampled blocks are scaled by 1/R and every sampled access stands for
//! 1/R accesses. Scaled distances have a resolution of 1/R blocks, which would smear
//! the paper's small buckets (B0 … B(9,16) are a few blocks wide), so distances below
//! [`NEAR`] are measured exactly on the full stream with a tiny move-to-front stack of
//! the last `NEAR` distinct blocks; only accesses not found there (true distance ≥ NEAR
//! or cold) use the sampled estimate, clamped to at least NEAR. The number of far
//! accesses is known exactly, so sampling only estimates how they spread over
//! distances (and the working set, hence the cold count), not how many there are.

use crate::reuse::{ExactReuse, ReuseHistogram};

/// Distances below this are measured exactly.
pub const NEAR: usize = 64;
const EMPTY: u64 = u64::MAX; // block numbers are addr >> 6, never u64::MAX

/// The sampled reuse-distance engine.
pub struct SampledReuse {
    inner: ExactReuse,
    threshold: u64,
    inv_rate: f64,
    rate: f64,
    /// The last NEAR distinct blocks, most recent first.
    near: [u64; NEAR],
    /// Exact counts of distances 0..NEAR.
    near_counts: [u64; NEAR],
    /// Sampled far accesses (distances already scaled, unweighted counts).
    far: ReuseHistogram,
    /// All far accesses (not found near), counted exactly.
    far_total: u64,
}

/// splitmix64's finaliser: a fast, well-mixed hash of a block number.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl SampledReuse {
    /// A sampler at rate `rate` in (0, 1].
    pub fn new(rate: f64) -> Self {
        let rate = rate.clamp(f64::MIN_POSITIVE, 1.0);
        let threshold = if rate >= 1.0 {
            u64::MAX
        } else {
            (rate * 2f64.powi(64)) as u64
        };
        SampledReuse {
            inner: ExactReuse::new(),
            threshold,
            inv_rate: 1.0 / rate,
            rate,
            near: [EMPTY; NEAR],
            near_counts: [0; NEAR],
            far: ReuseHistogram::default(),
            far_total: 0,
        }
    }

    /// The sampling rate R.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Record an access to `block`.
    #[inline]
    pub fn access(&mut self, block: u64) {
        if self.near[0] == block {
            self.near_counts[0] += 1;
            return;
        }
        // Branch-free search of the recency stack (no early exit: it vectorises).
        let mut mask = 0u64;
        for (i, &b) in self.near.iter().enumerate() {
            mask |= u64::from(b == block) << i;
        }
        let sampled = mix(block) <= self.threshold;
        let far = if sampled {
            Some(self.inner.access(block))
        } else {
            None
        };
        if mask != 0 {
            let i = mask.trailing_zeros() as usize;
            self.near_counts[i] += 1;
            self.near.copy_within(0..i, 1);
        } else {
            self.near.copy_within(0..NEAR - 1, 1);
            self.far_total += 1;
            if let Some(d) = far {
                let scaled =
                    d.map(|d| ((d as f64 * self.inv_rate).round() as u64).max(NEAR as u64));
                self.far.record(scaled);
            }
        }
        self.near[0] = block;
    }

    /// Estimated working set in blocks (distinct sampled blocks / R).
    pub fn distinct(&self) -> u64 {
        (self.inner.distinct() as f64 * self.inv_rate).round() as u64
    }

    /// The estimated full histogram: exact near counts, plus the far accesses (whose
    /// number is known exactly) split like the sampled far accesses. Cold accesses are
    /// the estimated working set (each block is cold exactly once).
    pub fn histogram(&self) -> ReuseHistogram {
        let cold = self.distinct().min(self.far_total);
        let sampled_reuses: u64 = self.far.counts.iter().sum();
        let reuses = self.far_total - cold;
        let scale = reuses as f64 / sampled_reuses.max(1) as f64;
        let mut h = ReuseHistogram {
            counts: self
                .far
                .counts
                .iter()
                .map(|&c| (c as f64 * scale).round() as u64)
                .collect(),
            cold,
        };
        for (d, &c) in self.near_counts.iter().enumerate() {
            h.record_n(Some(d as u64), c);
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_one_is_exact() {
        let blocks: Vec<u64> = (0..20_000u64)
            .map(|i| (i * 7919) % 3001 + (i % 5))
            .collect();
        let mut s = SampledReuse::new(1.0);
        let mut e = ExactReuse::new();
        let mut h = ReuseHistogram::default();
        for &b in &blocks {
            s.access(b);
            h.record(e.access(b));
        }
        assert_eq!(s.histogram(), h);
        assert_eq!(s.distinct(), e.distinct());
    }

    #[test]
    fn near_distances_are_exact_at_any_rate() {
        // A cyclic scan over 10 blocks: every reuse has distance 9, all found near.
        let mut s = SampledReuse::new(0.001);
        for i in 0..10_000u64 {
            s.access(i % 10);
        }
        let h = s.histogram();
        assert_eq!(h.counts[9], 10_000 - 10);
    }
}
