//! Percentiles, one convention for every figure hetsched prints, and the spread of a
//! repeated measurement.
//!
//! Nearest rank: the `q`-quantile of `n` sorted values is the value of rank
//! `⌈q·n⌉` (at least 1), so it is always one of the measured values and p100 is the
//! maximum. The simulator's metrics (p95 turnaround) and the benchmarks' latency
//! percentiles all use it.

/// The nearest-rank `q`-quantile (`q` in [0, 1]) of `sorted` (increasing); `None` if
/// it is empty.
pub fn percentile<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let n = sorted.len();
    (n > 0).then(|| sorted[rank(q, n) - 1])
}

/// The nearest rank (1..=`n`, `n` > 0) of the `q`-quantile of `n` values: ⌈q·n⌉, where a
/// product within rounding of a whole number counts as that number (0.07 · 100 is
/// 7.000000000000001 in floating point, and its rank 7).
pub fn rank(q: f64, n: usize) -> usize {
    let x = q.clamp(0.0, 1.0) * n as f64;
    let whole = x.round();
    let r = if (x - whole).abs() <= 1e-9 * x.max(1.0) {
        whole
    } else {
        x.ceil()
    };
    (r as usize).clamp(1, n)
}

/// Mean, standard deviation, median and range of a repeated measurement (over seeds,
/// over runs).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spread {
    pub mean: f64,
    /// Sample standard deviation (0 for a single value).
    pub sd: f64,
    /// The nearest-rank median ([`percentile`] 0.5): one of the values.
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// How many values.
    pub n: usize,
}

impl Spread {
    /// The spread of `values` (all zero for none).
    pub fn of(values: &[f64]) -> Spread {
        let n = values.len();
        if n == 0 {
            return Spread::default();
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        Spread {
            mean,
            sd: var.sqrt(),
            median: sorted[rank(0.5, n) - 1],
            min: sorted[0],
            max: sorted[n - 1],
            n,
        }
    }
}

impl std::fmt::Display for Spread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.2} ± {:.2} [{:.2}, {:.2}]",
            self.mean, self.sd, self.min, self.max
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{percentile, rank, Spread};

    #[test]
    fn a_spread_has_the_sample_sd_and_a_measured_median() {
        let s = Spread::of(&[3.0, 1.0, 2.0, 10.0]);
        assert_eq!(
            (s.mean, s.median, s.min, s.max, s.n),
            (4.0, 2.0, 1.0, 10.0, 4)
        );
        assert!((s.sd - (50.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(Spread::of(&[5.0]).sd, 0.0);
        assert_eq!(Spread::of(&[]).n, 0);
    }

    #[test]
    fn nearest_rank_of_known_lists() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), Some(50));
        assert_eq!(percentile(&v, 0.99), Some(99));
        assert_eq!(percentile(&v, 0.995), Some(100));
        assert_eq!(percentile(&v, 1.0), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&[3.5], 0.95), Some(3.5));
        assert_eq!(percentile::<u64>(&[], 0.5), None);
        // 20 values: p95 is the 19th.
        let w: Vec<u32> = (0..20).collect();
        assert_eq!(percentile(&w, 0.95), Some(18));
        // Products a rounding error above a whole number keep its rank.
        assert_eq!(0.07 * 100.0, 7.000000000000001);
        assert_eq!(rank(0.07, 100), 7);
        assert_eq!(rank(0.071, 100), 8);
        // The p95 the simulator's metrics take: ⌈0.95·n⌉ exactly, for every n here.
        for n in 1..200_000usize {
            assert_eq!(rank(0.95, n), (95 * n).div_ceil(100), "{n}");
        }
    }
}
