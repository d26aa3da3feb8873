//! Sampled reuse distances (SHARDS-style fixed-rate spatial sampling).
//!
//! A block is sampled when a hash of its number falls below `R · 2^64`, so either all
//! or none of a block's accesses are seen. Distances measured among sampled blocks are
//! scaled by 1/R, and every sampled access stands for 1/R accesses (Waldspurger et al.,
//! FAST'15). Distance-0 reuses are decided exactly on the full stream (a repeat of the
//! immediately preceding block), since a sampled distance of 0 would otherwise hide up
//! to 1/R unsampled intervening blocks; a sampled access that is not such a repeat has
//! a true distance of at least 1.

use crate::reuse::{ExactReuse, ReuseHistogram};

/// The sampled reuse-distance engine.
pub struct SampledReuse {
    inner: ExactReuse,
    threshold: u64,
    inv_rate: f64,
    rate: f64,
    prev: u64,
    zeros: u64,
    sampled: ReuseHistogram,
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
            prev: u64::MAX,
            zeros: 0,
            sampled: ReuseHistogram::default(),
        }
    }

    /// The sampling rate R.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Record an access to `block`.
    #[inline]
    pub fn access(&mut self, block: u64) {
        if block == self.prev {
            self.zeros += 1;
            return;
        }
        self.prev = block;
        if mix(block) > self.threshold {
            return;
        }
        let d = self
            .inner
            .access(block)
            .map(|d| ((d as f64 * self.inv_rate).round() as u64).max(1));
        self.sampled.record(d);
    }

    /// Estimated working set in blocks (distinct sampled blocks / R).
    pub fn distinct(&self) -> u64 {
        (self.inner.distinct() as f64 * self.inv_rate).round() as u64
    }

    /// The estimated full histogram: sampled counts scaled by 1/R, plus exact zeros.
    pub fn histogram(&self) -> ReuseHistogram {
        let scale = |c: u64| (c as f64 * self.inv_rate).round() as u64;
        let mut h = ReuseHistogram {
            counts: self.sampled.counts.iter().map(|&c| scale(c)).collect(),
            cold: scale(self.sampled.cold),
        };
        h.record_n(Some(0), self.zeros);
        h
    }
}
