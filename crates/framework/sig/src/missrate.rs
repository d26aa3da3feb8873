//! The paper's miss-rate model, equations (1)–(6) (Shelepov & Fedorova, §3.3).
//!
//! For an S-way LRU cache of N lines, an access with reuse distance r misses when at
//! least S of the r distinct intervening blocks map to its set; with uniformly spread
//! blocks each maps there with probability S/N, so
//! p(r) = 1 − Σ_{i<S} C(r,i) (S/N)^i (1 − S/N)^(r−i)                       (3)–(5).
//! Every access of bucket B counts with r(B) = 4x/3 for B = B(x, y)            (2),
//! m(B) = B · p(B) (1), m(B0) = 0, m(B∞) = B∞; the sum is scaled by
//! L = (W − N)/W when W > N and 0 otherwise (6), and divided by instructions.

use crate::analysis::{Profile, BLOCK_BYTES};
use crate::buckets::{lower_bound, Buckets, B_COLD, B_ZERO, NUM_BUCKETS};
use serde::{Deserialize, Serialize};
use std::fmt;

/// One cache configuration (64-byte lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CacheConfig {
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Associativity S.
    pub ways: u32,
}

impl CacheConfig {
    /// Number of lines N.
    pub fn lines(&self) -> u64 {
        self.size_bytes / BLOCK_BYTES
    }

    /// The paper's 24 configurations: 512 KB … 16 MB × 4 … 32 ways.
    pub fn standard() -> Vec<CacheConfig> {
        let mut v = Vec::with_capacity(24);
        for size_kb in [512u64, 1024, 2048, 4096, 8192, 16384] {
            for ways in [4u32, 8, 16, 32] {
                v.push(CacheConfig {
                    size_bytes: size_kb * 1024,
                    ways,
                });
            }
        }
        v
    }

    /// Parse "4MB/16", "512KB/8" or "1048576/8" (bytes/ways).
    pub fn parse(s: &str) -> Option<CacheConfig> {
        let (size, ways) = s.split_once('/')?;
        let size = size.trim().to_ascii_uppercase();
        let (num, mult) = if let Some(n) = size.strip_suffix("MB") {
            (n, 1 << 20)
        } else if let Some(n) = size.strip_suffix("KB") {
            (n, 1 << 10)
        } else {
            (size.as_str(), 1)
        };
        let c = CacheConfig {
            size_bytes: num.trim().parse::<u64>().ok()? * mult,
            ways: ways.trim().parse().ok()?,
        };
        (c.ways > 0
            && c.lines() >= u64::from(c.ways)
            && c.lines().is_multiple_of(u64::from(c.ways)))
        .then_some(c)
    }
}

impl fmt::Display for CacheConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.size_bytes >= 1 << 20 && self.size_bytes.is_multiple_of(1 << 20) {
            write!(f, "{}MB/{}", self.size_bytes >> 20, self.ways)
        } else {
            write!(f, "{}KB/{}", self.size_bytes >> 10, self.ways)
        }
    }
}

/// The representative reuse distance r(B) = 4x/3 of a ranged bucket, rounded to the
/// nearest whole number of blocks (a binomial needs whole trials).
pub fn representative_distance(bucket: usize) -> Option<u64> {
    lower_bound(bucket).map(|x| (4 * x + 1) / 3)
}

/// Equation (5): probability that a line is evicted from an S-way, N-line LRU cache after
/// `r` distinct other blocks were touched, P[Binomial(r, S/N) ≥ S].
///
/// Computed in log space so that r up to ~175,000 and N up to 262,144 neither underflow
/// nor lose the small tail: when the mean r·S/N is below S the upper tail is summed
/// directly (its terms fall off quickly), otherwise 1 − the lower tail.
pub fn eviction_probability(r: u64, ways: u32, lines: u64) -> f64 {
    let s = u64::from(ways);
    if r < s {
        return 0.0; // fewer than S blocks cannot fill the set
    }
    if lines <= s {
        return 1.0; // fully associative with r ≥ N: LRU has evicted it
    }
    let p = s as f64 / lines as f64;
    let ln_p = p.ln();
    let ln_q = (-p).ln_1p();
    let rf = r as f64;
    // ln pmf(i) built incrementally: ln C(r,i+1) = ln C(r,i) + ln((r−i)/(i+1)).
    let ln_pmf = |i: u64, ln_choose: f64| ln_choose + i as f64 * ln_p + (rf - i as f64) * ln_q;
    if rf * p < s as f64 {
        // Upper tail Σ_{i≥S}; first build ln C(r,S).
        let mut ln_choose = 0.0;
        for i in 0..s {
            ln_choose += ((r - i) as f64 / (i + 1) as f64).ln();
        }
        let mut sum = 0.0;
        let mut i = s;
        while i <= r {
            let term = ln_pmf(i, ln_choose).exp();
            sum += term;
            if term < sum * 1e-17 || term == 0.0 {
                break;
            }
            ln_choose += ((r - i) as f64 / (i + 1) as f64).ln();
            i += 1;
        }
        sum.min(1.0)
    } else {
        let mut ln_choose = 0.0;
        let mut lower = 0.0;
        for i in 0..s {
            lower += ln_pmf(i, ln_choose).exp();
            ln_choose += ((r - i) as f64 / (i + 1) as f64).ln();
        }
        (1.0 - lower).clamp(0.0, 1.0)
    }
}

/// Equation (6): the working-set factor L = (W − N)/W when W > N, else 0.
pub fn working_set_factor(working_set_blocks: u64, lines: u64) -> f64 {
    if working_set_blocks > lines {
        (working_set_blocks - lines) as f64 / working_set_blocks as f64
    } else {
        0.0
    }
}

/// Σ m(B) over the 20 buckets (equations 1, 2, 5), before the L factor.
pub fn bucket_misses(buckets: &Buckets, config: CacheConfig) -> f64 {
    (0..NUM_BUCKETS)
        .map(|b| {
            let count = buckets.0[b] as f64;
            match b {
                B_ZERO => 0.0,
                B_COLD => count,
                _ => {
                    let r = representative_distance(b).expect("ranged bucket");
                    count * eviction_probability(r, config.ways, config.lines())
                }
            }
        })
        .sum()
}

/// Estimated misses L · Σ m(B).
pub fn estimated_misses(buckets: &Buckets, working_set_blocks: u64, config: CacheConfig) -> f64 {
    working_set_factor(working_set_blocks, config.lines()) * bucket_misses(buckets, config)
}

/// The miss rate: estimated misses per retired instruction (0 for no instructions).
pub fn miss_rate(profile: &Profile, config: CacheConfig) -> f64 {
    if profile.instructions == 0 {
        return 0.0;
    }
    estimated_misses(&profile.buckets, profile.working_set_blocks, config)
        / profile.instructions as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Direct evaluation of equation (5) in f64 for small r (no underflow there).
    fn naive(r: u64, s: u32, n: u64) -> f64 {
        let p = f64::from(s) / n as f64;
        let mut lower = 0.0;
        for i in 0..u64::from(s).min(r + 1) {
            let mut c = 1.0;
            for k in 0..i {
                c *= (r - k) as f64 / (k + 1) as f64;
            }
            lower += c * p.powi(i as i32) * (1.0 - p).powi((r - i) as i32);
        }
        1.0 - lower
    }

    #[test]
    fn matches_the_direct_formula_where_it_is_accurate() {
        for &(s, n) in &[(4u32, 64u64), (8, 512), (16, 1024), (32, 8192)] {
            for r in [0u64, 1, 3, 4, 5, 10, 31, 32, 100, 300, 1000] {
                let a = eviction_probability(r, s, n);
                let b = naive(r, s, n).max(0.0);
                assert!((a - b).abs() < 1e-9, "r={r} s={s} n={n}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn stable_and_monotone_at_the_extremes() {
        for c in CacheConfig::standard() {
            let mut last = 0.0;
            for b in 2..NUM_BUCKETS {
                let r = representative_distance(b).unwrap();
                let p = eviction_probability(r, c.ways, c.lines());
                assert!(p.is_finite() && (0.0..=1.0).contains(&p), "{c} r={r}: {p}");
                assert!(p >= last - 1e-12, "{c}: not monotone at r={r}");
                last = p;
            }
        }
        // Reference values from an independent lgamma evaluation (Python's math.lgamma).
        let p = eviction_probability(174_764, 32, 262_144);
        assert!((p - 0.018_403_933_414_286).abs() < 1e-9, "{p}");
        let p = eviction_probability(87_383, 16, 65_536);
        assert!((p - 0.901_519_498_759_938).abs() < 1e-9, "{p}");
        // …and certainly evicted from 512 KB.
        assert!(eviction_probability(174_764, 4, 8192) > 0.999_999);
    }

    #[test]
    fn representative_distances_are_four_thirds_of_x() {
        assert_eq!(representative_distance(2), Some(1)); // 4/3 -> 1
        assert_eq!(representative_distance(18), Some(87_383)); // 4·65537/3 = 87382.67
        assert_eq!(representative_distance(19), Some(174_764));
        assert_eq!(representative_distance(0), None);
        assert_eq!(representative_distance(1), None);
    }

    #[test]
    fn working_set_factor_follows_equation_6() {
        assert_eq!(working_set_factor(100, 200), 0.0);
        assert_eq!(working_set_factor(200, 200), 0.0);
        assert!((working_set_factor(400, 100) - 0.75).abs() < 1e-15);
    }

    #[test]
    fn twenty_four_configurations() {
        let c = CacheConfig::standard();
        assert_eq!(c.len(), 24);
        assert_eq!(c[0].to_string(), "512KB/4");
        assert_eq!(c[23].to_string(), "16MB/32");
        assert_eq!(CacheConfig::parse("4MB/16"), Some(c[4 * 3 + 2]));
        assert_eq!(
            CacheConfig::parse("1048576/8").unwrap().to_string(),
            "1MB/8"
        );
        assert_eq!(CacheConfig::parse("4MB"), None);
    }
}
