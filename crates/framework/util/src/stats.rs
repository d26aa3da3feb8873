//! Percentiles, one convention for every figure hetsched prints.
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

#[cfg(test)]
mod tests {
    use super::{percentile, rank};

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
