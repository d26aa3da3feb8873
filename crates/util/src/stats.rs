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
    if n == 0 {
        return None;
    }
    let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as usize).clamp(1, n);
    Some(sorted[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::percentile;

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
    }
}
