//! The paper's 20 reuse-distance buckets (MICA's categories).
//!
//! Index 0 is B0 (distance 0), index 1 is B∞ (cold), indices 2..=18 are
//! B(1,2), B(3,4), B(5,8), …, B(65537,131072) (distances in (2^(k-1), 2^k], k = 1..=17,
//! with B(1,2) also holding distance 1), and index 19 is B(>131072).

use crate::reuse::ReuseHistogram;
use serde::{Deserialize, Serialize};

/// Number of buckets.
pub const NUM_BUCKETS: usize = 20;
/// Index of B0 (distance 0).
pub const B_ZERO: usize = 0;
/// Index of B∞ (cold references).
pub const B_COLD: usize = 1;
/// Index of B(>2^17).
pub const B_FAR: usize = 19;
/// Largest distance of the last ranged bucket, B(65537,131072).
pub const FAR_THRESHOLD: u64 = 1 << 17;

/// Access counts per bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Buckets(pub [u64; NUM_BUCKETS]);

/// The bucket index of a reuse distance (`None` = cold).
#[inline]
pub fn bucket_of(distance: Option<u64>) -> usize {
    match distance {
        None => B_COLD,
        Some(0) => B_ZERO,
        Some(d) if d > FAR_THRESHOLD => B_FAR,
        // d in (2^(k-1), 2^k] -> k = ceil(log2 d); d = 1 -> k = 1 (bucket (1,2)).
        Some(d) => {
            let k = (64 - (d - 1).leading_zeros()).max(1) as usize;
            1 + k
        }
    }
}

/// The inclusive distance range `(x, y)` of a ranged bucket (indices 2..=18), else `None`.
pub fn range(index: usize) -> Option<(u64, u64)> {
    match index {
        2 => Some((1, 2)),
        3..=18 => {
            let k = index as u32 - 1;
            Some(((1u64 << (k - 1)) + 1, 1u64 << k))
        }
        _ => None,
    }
}

/// The lower end `x` of the bucket's range, used by the paper's r(B) = 4x/3. B(>131072)
/// has x = 131073; B0 and B∞ have none.
pub fn lower_bound(index: usize) -> Option<u64> {
    match index {
        B_FAR => Some(FAR_THRESHOLD + 1),
        _ => range(index).map(|(x, _)| x),
    }
}

/// The label of a bucket as the paper writes it ("B0", "Binf", "B(1,2)", ..., "B(>131072)").
pub fn label(index: usize) -> String {
    match index {
        B_ZERO => "B0".into(),
        B_COLD => "Binf".into(),
        B_FAR => format!("B(>{FAR_THRESHOLD})"),
        i => {
            let (x, y) = range(i).expect("ranged bucket");
            format!("B({x},{y})")
        }
    }
}

impl Buckets {
    /// Add `n` accesses with the given outcome.
    #[inline]
    pub fn record_n(&mut self, distance: Option<u64>, n: u64) {
        self.0[bucket_of(distance)] += n;
    }

    /// Bucket the whole histogram.
    pub fn from_histogram(h: &ReuseHistogram) -> Self {
        let mut b = Buckets::default();
        b.record_n(None, h.cold);
        for (d, c) in h.nonzero() {
            b.record_n(Some(d), c);
        }
        b
    }

    /// Total accesses.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Each bucket's share of all accesses (all zero for an empty trace).
    pub fn fractions(&self) -> [f64; NUM_BUCKETS] {
        let total = self.total();
        let mut f = [0.0; NUM_BUCKETS];
        if total > 0 {
            for (fi, &c) in f.iter_mut().zip(&self.0) {
                *fi = c as f64 / total as f64;
            }
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_edges_follow_the_paper() {
        assert_eq!(bucket_of(None), B_COLD);
        assert_eq!(bucket_of(Some(0)), B_ZERO);
        assert_eq!(bucket_of(Some(1)), 2);
        assert_eq!(bucket_of(Some(2)), 2);
        assert_eq!(bucket_of(Some(3)), 3);
        assert_eq!(bucket_of(Some(4)), 3);
        assert_eq!(bucket_of(Some(5)), 4);
        assert_eq!(bucket_of(Some(65536)), 17);
        assert_eq!(bucket_of(Some(65537)), 18);
        assert_eq!(bucket_of(Some(131072)), 18);
        assert_eq!(bucket_of(Some(131073)), B_FAR);
        // Every ranged bucket's ends land in it.
        for i in 2..=18 {
            let (x, y) = range(i).unwrap();
            assert_eq!(bucket_of(Some(x)), i, "{}", label(i));
            assert_eq!(bucket_of(Some(y)), i, "{}", label(i));
        }
        assert_eq!(label(18), "B(65537,131072)");
        assert_eq!(label(19), "B(>131072)");
    }
}
