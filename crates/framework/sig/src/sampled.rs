//! Sampled reuse distances: time sampling with exact distances below [`MID`],
//! SHARDS-style spatial sampling for the reuses beyond.
//!
//! A block is *spatially* sampled when a hash of its number falls below `R · 2^64`, so
//! either all or none of its accesses are seen (Waldspurger et al., FAST'15); distances
//! among sampled blocks, scaled by 1/R, estimate how far reuses spread. Scaled
//! distances have a resolution of 1/R blocks, which would smear the paper's buckets
//! below ~1/R (B0 … B(33,64) are a few blocks wide), and with few sampled blocks
//! (~100 for a 10,000-block working set at R = 0.01) sharp peaks of a real program's
//! reuses at a few hundred blocks come out in the wrong bucket (gzip: 0.026 off). So
//! reuses below MID are measured differently:
//!
//! - a repeat of the previous block (distance 0) is counted exactly;
//! - every other access is *time* sampled with probability R (geometric skips from a
//!   seeded generator), and a sampled access gets its exact distance if below
//!   [`NEAR`] from a walk back through recent history ([`crate::near`]); every
//!   [`LONG_EVERY`]th time sample walks on to MID. This estimates how many accesses
//!   have each distance below MID, and how many lie beyond (or are cold);
//! - the reuses beyond MID are spread over distances like the spatial samples' reuses,
//!   a sampled distance k standing for the true distances that give k sampled blocks
//!   in between (spread for small k: no sampled block in between means anything from
//!   0 to a few hundred blocks at R = 0.01), of which only the part beyond MID counts.
//!   A spatial sample needs no walk.
//!
//! Per access this is one comparison with the previous block, one hash and threshold
//! test, one countdown and one store into the history ring; only about 2R of the
//! accesses do more. Cold accesses are the estimated working set (each block is cold
//! exactly once). At R = 1 every access is sampled both ways, every walk is long, and
//! the result is exact (unless a walk runs out of history: see
//! [`crate::near::HISTORY`]).

use crate::block_slots::HashedSlots;
use crate::near::RecentBlocks;
use crate::reuse::{ExactReuse, ReuseHistogram};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub use crate::near::{MID, NEAR};

/// Every this-many-th time sample is *long*: its walk goes on to MID distinct blocks,
/// so distances below MID are measured exactly too, at a rate of R / LONG_EVERY. A
/// long walk takes about 16 times the steps of one to NEAR, so the long ones cost
/// about as much as all the short ones (every 8th: 0.0019 instead of 0.0024 off on
/// gzip, but the sampled analysis ~20 % slower; docs/signatures.md).
pub const LONG_EVERY: u64 = 16;

/// Seed of the time-sampling generator (fixed: the same trace gives the same profile).
const TIME_SAMPLING_SEED: u64 = 0x5ead_5eed;
/// Accesses per filter pass. The walks of a pass's samples start after the whole pass
/// is in the history ring, so they can still reach back HISTORY − CHUNK changes.
const CHUNK: usize = 1024;

/// A sampled block change, listed by the filter pass.
#[derive(Clone, Copy)]
struct Sample {
    block: u64,
    /// Its position in the history ring.
    at: u64,
    timed: bool,
    spatial: bool,
}

/// The sampled reuse-distance engine.
pub struct SampledReuse {
    rate: f64,
    /// Spatial sampling: a block is sampled when its hash is at most this.
    threshold: u64,
    /// Exact distances among the spatially sampled blocks.
    inner: ExactReuse<HashedSlots>,
    /// Reuses of spatially sampled accesses, by distance among sampled blocks.
    spatial: ReuseHistogram,
    /// The previous block.
    prev: u64,
    /// Accesses repeating the previous block (distance 0), counted exactly.
    repeats: u64,
    /// Every other access, for the walks.
    recent: RecentBlocks,
    /// Block changes until the next time sample.
    countdown: u64,
    rng: ChaCha8Rng,
    /// The samples of the current filter pass.
    samples: Vec<Sample>,
    /// Time samples by exact near distance.
    timed_near: [u64; NEAR],
    /// Time samples at distance NEAR or more, or cold.
    timed_far: u64,
    /// Time samples so far (every [`LONG_EVERY`]th walks to MID).
    timed_count: u64,
    /// Long time samples at distance NEAR or more, by distance below MID.
    long_mid: Box<[u64; MID]>,
    /// Long time samples at distance MID or more, or cold.
    long_far: u64,
    /// Block changes counted by a filter outside this engine ([`SampledReuse::captured`]).
    captured_changes: u64,
}

/// The spatial-sampling hash of a block number: Fibonacci hashing (one multiply, on
/// every block change). For any run or stride of blocks the products are spread
/// evenly over 2^64 (Weyl), so strided access patterns are sampled at rate R; the
/// xor-shift lets high address bits (other regions) move the low ones.
#[inline]
fn mix(z: u64) -> u64 {
    (z ^ (z >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Block changes up to and including the next time sample: geometric with mean 1/R.
fn next_skip(rng: &mut ChaCha8Rng, rate: f64) -> u64 {
    if rate >= 1.0 {
        return 1;
    }
    let u = 1.0 - rng.random::<f64>(); // in (0, 1]
    1 + (u.ln() / (1.0 - rate).ln()).floor().min(1e18) as u64
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
        let mut rng = ChaCha8Rng::seed_from_u64(TIME_SAMPLING_SEED);
        SampledReuse {
            rate,
            threshold,
            inner: ExactReuse::default(),
            spatial: ReuseHistogram::default(),
            // Not a block number: block numbers are byte addresses >> 6.
            prev: u64::MAX,
            repeats: 0,
            recent: RecentBlocks::new(),
            countdown: next_skip(&mut rng, rate),
            rng,
            samples: Vec::with_capacity(CHUNK),
            timed_near: [0; NEAR],
            timed_far: 0,
            timed_count: 0,
            long_mid: vec![0; MID].into_boxed_slice().try_into().expect("MID"),
            long_far: 0,
            captured_changes: 0,
        }
    }

    /// The sampling rate R.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The spatial-sampling threshold: a block is sampled when its hash is at most this.
    pub(crate) fn threshold(&self) -> u64 {
        self.threshold
    }

    /// Record an access to `block` ([`SampledReuse::access_all`] is faster).
    pub fn access(&mut self, block: u64) {
        self.access_all(&[block]);
    }

    /// Record a run of accesses: per chunk, a filter pass over every access, then the
    /// samples it found.
    pub fn access_all(&mut self, blocks: &[u64]) {
        for chunk in blocks.chunks(CHUNK) {
            self.filter(chunk);
            for i in 0..self.samples.len() {
                let s = self.samples[i];
                self.sample(s);
            }
            self.samples.clear();
        }
    }

    /// The pass over every access: counts repeats, pushes block changes into the
    /// history ring and lists the sampled ones. Its state is in locals, so the loop
    /// runs in registers.
    fn filter(&mut self, chunk: &[u64]) {
        let (mut prev, mut countdown, mut repeats) = (self.prev, self.countdown, 0);
        let threshold = self.threshold;
        let mut ring = self.recent.writer();
        for &block in chunk {
            if block == prev {
                repeats += 1;
                continue;
            }
            prev = block;
            let at = ring.push(block);
            countdown -= 1;
            let timed = countdown == 0;
            let spatial = mix(block) <= threshold;
            if timed | spatial {
                self.samples.push(Sample {
                    block,
                    at,
                    timed,
                    spatial,
                });
                if timed {
                    countdown = next_skip(&mut self.rng, self.rate);
                }
            }
        }
        drop(ring);
        self.prev = prev;
        self.countdown = countdown;
        self.repeats += repeats;
    }

    /// A time and/or spatial sample of a block change.
    fn sample(&mut self, s: Sample) {
        if s.timed {
            // At R = 1 every walk is long, so that the result is exact.
            let long = self.rate >= 1.0 || self.timed_count.is_multiple_of(LONG_EVERY);
            let limit = if long { MID } else { NEAR };
            let d = self.recent.distance_below(s.at, s.block, limit);
            self.count_timed(long, d);
        }
        if s.spatial {
            self.count_spatial(s.block);
        }
    }

    /// A time sample at exact distance `d` (`None`: at least its walk's limit, or cold).
    fn count_timed(&mut self, long: bool, d: Option<u32>) {
        self.timed_count += 1;
        match d.map(|d| d as usize) {
            Some(d) if d < NEAR => self.timed_near[d] += 1,
            Some(d) => {
                self.timed_far += 1;
                self.long_mid[d] += u64::from(long);
            }
            None => {
                self.timed_far += 1;
                self.long_far += u64::from(long);
            }
        }
    }

    /// A spatial sample: its distance among the sampled blocks (cold accesses need no
    /// record: their number is the estimated working set).
    fn count_spatial(&mut self, block: u64) {
        if let Some(d) = self.inner.access(block) {
            self.spatial.record(Some(d));
        }
    }

    /// A sample chosen by the same filter run outside this engine (the QEMU plugin
    /// of [`crate::source::qemu`], which sees every access and sends only samples):
    /// `timed` is, for a time sample, whether it is long and its exact distance if
    /// below its walk's limit (MID if long, else NEAR; the caller checks).
    pub(crate) fn captured(
        &mut self,
        block: u64,
        timed: Option<(bool, Option<u32>)>,
        spatial: bool,
    ) {
        if let Some((long, d)) = timed {
            self.count_timed(long, d);
        }
        if spatial {
            self.count_spatial(block);
        }
    }

    /// The counts only the outside filter knows: block changes and repeats.
    pub(crate) fn captured_counts(&mut self, changes: u64, repeats: u64) {
        self.captured_changes += changes;
        self.repeats += repeats;
    }

    /// Estimated working set in blocks (distinct sampled blocks / R).
    pub fn distinct(&self) -> u64 {
        (self.inner.distinct() as f64 / self.rate).round() as u64
    }

    /// The estimated full histogram. Distance 0 is exact; the block changes (their
    /// number is exact) split into distances below NEAR and the rest like the time
    /// samples, the rest into distances below MID and beyond like the long time
    /// samples; beyond MID are the cold accesses (the estimated working set) and
    /// reuses spread over distances like the spatially sampled reuses (scaled by 1/R).
    pub fn histogram(&self) -> ReuseHistogram {
        let changes = self.recent.pushed() + self.captured_changes;
        let timed = self.timed_far + self.timed_near.iter().sum::<u64>();
        let scaled = |counts: &[u64], total: u64, of: u64| -> Vec<u64> {
            let per_sample = total as f64 / of.max(1) as f64;
            counts
                .iter()
                .map(|&c| (c as f64 * per_sample).round() as u64)
                .collect()
        };
        let near = scaled(&self.timed_near[..], changes, timed);
        let rest = changes.saturating_sub(near.iter().sum());
        let long = self.long_far + self.long_mid.iter().sum::<u64>();
        let mid = scaled(&self.long_mid[..], rest, long);
        let beyond = rest.saturating_sub(mid.iter().sum());
        let cold = self.distinct().min(beyond);
        let mut h = ReuseHistogram {
            counts: Vec::new(),
            cold,
        };
        h.record_n(Some(0), self.repeats);
        // `near` holds distances 0..NEAR, `mid` NEAR..MID (its start is empty).
        for (d, &c) in near.iter().chain(&mid[NEAR..]).enumerate() {
            if c > 0 {
                h.record_n(Some(d as u64), c);
            }
        }
        // Below `cut` the time samples measured the distances (MID, or NEAR in a trace
        // too short for a long sample); beyond it the spatial samples say how the
        // reuses spread.
        let cut = if long > 0 { MID } else { NEAR };
        // A sampled distance k stands for the true distances d >= k that give k
        // sampled blocks in between: spread for small k (they say little), one point
        // for large k; only the part beyond `cut` counts. A distance counts other
        // blocks, so it is below the working set.
        let longest = self.distinct().saturating_sub(1).max(cut as u64);
        let mut spread: Vec<f64> = Vec::new();
        let mut points = Vec::new();
        for (k, c) in self.spatial.nonzero() {
            if k < SPREAD_BELOW {
                spread_reuses(k, c as f64, self.rate, longest, cut, &mut spread);
            } else {
                // The mean of the same distribution.
                let d = (((k + 1) as f64 / self.rate).round() as u64 - 1).min(longest);
                if d >= cut as u64 {
                    points.push((d, c as f64));
                }
            }
        }
        let mass: f64 = spread.iter().sum::<f64>() + points.iter().map(|p| p.1).sum::<f64>();
        let scale = if mass > 0.0 {
            (beyond - cold) as f64 / mass
        } else {
            0.0
        };
        for (d, c) in points {
            h.record_n(Some(d), (c * scale).round() as u64);
        }
        // Rounding the running total keeps the spread's sum (many weights are < 0.5).
        let (mut running, mut recorded) = (0.0, 0);
        for (d, &w) in spread.iter().enumerate() {
            running += w * scale;
            let n = (running.round() as u64).saturating_sub(recorded);
            if n > 0 {
                h.record_n(Some(d as u64), n);
                recorded += n;
            }
        }
        h
    }
}

/// Sampled distances below this are spread over true distances; from here on the
/// spread (relative width about 1/√k) is well inside a bucket's factor of 2.
const SPREAD_BELOW: u64 = 64;

/// Add `weight` reuses with `k` distinct sampled blocks in between (each block
/// sampled with probability `rate`) to `spread[d]` over their possible true distances
/// d in k..=longest, in proportion to P(d | k) ∝ C(d, k) (1 − rate)^(d − k) (a flat
/// prior over d), down to a negligible tail; only the part at `cut` or more is added
/// (the time samples measured the rest).
fn spread_reuses(k: u64, weight: f64, rate: f64, longest: u64, cut: usize, spread: &mut Vec<f64>) {
    let start = k.min(longest);
    // Unnormalised P(d | k) for d = start, start + 1, … (two passes: no big buffer).
    let weights = || {
        let mut w = 1.0f64;
        let mut peak = 0.0f64;
        (start..=longest).map_while(move |d| {
            let here = w;
            peak = peak.max(here);
            // C(d+1, k) / C(d, k) = (d + 1) / (d + 1 - k).
            w *= (d + 1) as f64 / (d + 1 - k) as f64 * (1.0 - rate);
            // Stop past the peak, once down to 1e-4 of it.
            (here >= peak * 1e-4 || w > here).then_some((d as usize, here))
        })
    };
    let total: f64 = weights().map(|x| x.1).sum();
    for (d, w) in weights().filter(|x| x.0 >= cut) {
        if d >= spread.len() {
            spread.resize(d + 1, 0.0);
        }
        spread[d] += weight * w / total;
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
    fn one_by_one_or_in_runs_gives_the_same_histogram() {
        // Far, near and repeated reuses over several filter passes.
        let blocks: Vec<u64> = (0..50_000u64)
            .map(|i| {
                if i % 3 == 0 {
                    i * 7919 % 20_000
                } else {
                    i / 4 % 40
                }
            })
            .collect();
        let mut one = SampledReuse::new(0.05);
        for &b in &blocks {
            one.access(b);
        }
        let mut runs = SampledReuse::new(0.05);
        for run in blocks.chunks(777) {
            runs.access_all(run);
        }
        assert_eq!(one.histogram(), runs.histogram());
        assert_eq!(one.distinct(), runs.distinct());
    }

    /// `spread_reuses` of one reuse, as (distance, share) pairs.
    fn spread_of_one(k: u64, rate: f64, longest: u64, cut: usize) -> Vec<(u64, f64)> {
        let mut spread = Vec::new();
        spread_reuses(k, 1.0, rate, longest, cut, &mut spread);
        spread
            .into_iter()
            .enumerate()
            .filter(|x| x.1 > 0.0)
            .map(|(d, p)| (d as u64, p))
            .collect()
    }

    #[test]
    fn reuses_spread_by_how_many_sampled_blocks_were_between() {
        // At R = 1 the sampled distance is the distance; below the cut nothing is added.
        assert_eq!(spread_of_one(200, 1.0, u64::MAX, NEAR), vec![(200, 1.0)]);
        assert_eq!(spread_of_one(20, 1.0, u64::MAX, NEAR), vec![]);
        // No sampled block in between at R = 0.01: d is geometric, mean (1-R)/R.
        let moments = |pmf: &[(u64, f64)]| {
            let total: f64 = pmf.iter().map(|x| x.1).sum();
            let mean = pmf.iter().map(|&(d, p)| d as f64 * p).sum::<f64>() / total;
            (total, mean)
        };
        let (total, mean) = moments(&spread_of_one(0, 0.01, u64::MAX, 0));
        assert!((total - 1.0).abs() < 1e-9);
        assert!((mean - 99.0).abs() < 1.0, "mean {mean}");
        // Beyond a cut only the tail is added: P(d >= NEAR) = (1-R)^NEAR, and the
        // tail's mean is NEAR + 99 (the geometric distribution has no memory).
        let pmf = spread_of_one(0, 0.01, u64::MAX, NEAR);
        let (total, mean) = moments(&pmf);
        assert_eq!(pmf[0].0, NEAR as u64);
        assert!((total - 0.99f64.powi(NEAR as i32)).abs() < 1e-3, "{total}");
        assert!((mean - (NEAR as f64 + 99.0)).abs() < 1.0, "mean {mean}");
        // Ten sampled blocks: centred near (k + 1) / R.
        let (_, mean) = moments(&spread_of_one(10, 0.01, u64::MAX, 0));
        assert!((mean - 1099.0).abs() < 5.0, "mean {mean}");
        // Never beyond the working set.
        let pmf = spread_of_one(3, 0.01, 150, NEAR);
        assert_eq!(pmf.last().unwrap().0, 150);
        assert!(pmf.iter().all(|&(d, _)| (NEAR as u64..=150).contains(&d)));
    }

    #[test]
    fn spatial_hash_samples_runs_and_strides_at_rate() {
        let rate = 0.01;
        let threshold = (rate * 2f64.powi(64)) as u64;
        for stride in [1u64, 3, 64, 4096, 1 << 15, 1 << 20, (1 << 20) + 1] {
            let n = 200_000u64;
            let hits = (0..n)
                .filter(|j| mix((5 << 40) + j * stride) <= threshold)
                .count();
            let f = hits as f64 / n as f64;
            assert!(
                (f / rate - 1.0).abs() < 0.1,
                "stride {stride}: fraction {f}"
            );
        }
    }

    #[test]
    fn repeats_are_exact_and_near_distances_unbiased_at_any_rate() {
        // A cyclic scan over 10 blocks, each read twice: distance 0, then 9.
        let mut s = SampledReuse::new(0.01);
        for i in 0..200_000u64 {
            s.access(i / 2 % 10);
        }
        let h = s.histogram();
        assert_eq!(h.counts[0], 100_000);
        // Every time sample but the 10 cold accesses sees distance 9.
        let d9 = h.counts[9] as f64;
        assert!((d9 / 99_990.0 - 1.0).abs() < 1e-3, "distance 9: {d9}");
        assert_eq!(h.total(), 200_000);
    }
}
