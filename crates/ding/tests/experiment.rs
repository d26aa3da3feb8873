//! The evaluation holds numa-amp at least as fast as both baselines on average.

use hetsched_ding::experiment::{evaluate, runs, PAPER_SPEEDUP};

/// Tolerance: numa-amp's mean speed-up may fall short of a baseline's by 1% at most
/// (the runs are deterministic; the margin only absorbs rounding of time slices).
const TOLERANCE: f64 = 0.01;

#[test]
fn numa_amp_is_at_least_as_fast_as_both_baselines_on_average() {
    let r = evaluate().unwrap();
    eprintln!("{}", r.table());
    assert_eq!(
        r.rows.len(),
        13 + 2 * 13,
        "each program alone and in two mixes"
    );
    assert_eq!(runs().len(), 26);
    assert!(r
        .rows
        .iter()
        .all(|row| row.seconds.iter().all(|&s| s > 0.0)));
    assert!(
        r.numa_amp_over_cfs >= 1.0 - TOLERANCE,
        "numa-amp over cfs: {}",
        r.numa_amp_over_cfs
    );
    assert!(
        r.numa_amp_over_cfs >= r.cfs_cap_over_cfs - TOLERANCE,
        "numa-amp {} vs cfs-cap {} over cfs",
        r.numa_amp_over_cfs,
        r.cfs_cap_over_cfs
    );
    assert!(r.numa_amp_over_cfs_cap >= 1.0 - TOLERANCE);
    assert_eq!(r.paper_numa_amp_over_cfs, PAPER_SPEEDUP);
    // The report round-trips through JSON with the averages named.
    let json = serde_json::to_value(&r).unwrap();
    assert!(json["numa_amp_over_cfs"].as_f64().is_some());
    assert_eq!(json["programs"].as_array().unwrap().len(), 13);
}
