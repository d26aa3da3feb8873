//! The paper's claim, pinned to the verdict `hetsched_ding::reproduce::claims` grades
//! (the report prints the same judgement), and the evaluation's own properties.

use hetsched_ding::experiment::{evaluate, runs, Report, PAPER_SPEEDUP};
use hetsched_study::{assert_verdict, Judged, Verdict};
use std::sync::OnceLock;

/// Tolerance: numa-amp's mean speed-up may fall short of a baseline's by 1% at most
/// (the runs are deterministic; the margin only absorbs rounding of time slices).
const TOLERANCE: f64 = 0.01;

fn report() -> &'static Report {
    static R: OnceLock<Report> = OnceLock::new();
    R.get_or_init(|| {
        let r = evaluate().expect("the evaluation runs");
        eprintln!("{}", r.table());
        r
    })
}

/// The paper's 1.36× over CFS: ours is faster than CFS, but its gain is less than half
/// the paper's 0.36 (docs/ding.md explains why), so by the one rule it does not hold.
#[test]
fn speedup_over_cfs_does_not_reach_the_papers() {
    let claims = hetsched_ding::reproduce::claims(report());
    let judged: Vec<Judged> = claims.iter().map(Into::into).collect();
    let ids: Vec<&str> = judged.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["speedup-over-cfs"]);
    let c = assert_verdict(&judged, "speedup-over-cfs", Verdict::DoesNotHold);
    assert!(c.checks[0].ours.unwrap() > 1.0, "{}", c.claim);
}

/// Ours, not the paper's: numa-amp is at least as fast as both baselines on average.
#[test]
fn numa_amp_is_at_least_as_fast_as_both_baselines_on_average() {
    let r = report();
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
        r.numa_amp_over_cfs >= r.cfs_cap_over_cfs - TOLERANCE,
        "numa-amp {} vs cfs-cap {} over cfs",
        r.numa_amp_over_cfs,
        r.cfs_cap_over_cfs
    );
    assert!(r.numa_amp_over_cfs_cap >= 1.0 - TOLERANCE);
    assert_eq!(r.paper_numa_amp_over_cfs, PAPER_SPEEDUP);
    // The report round-trips through JSON with the averages named.
    let json = serde_json::to_value(r).unwrap();
    assert!(json["numa_amp_over_cfs"].as_f64().is_some());
    // Today's Linux runs beside the paper's baseline; the claim stays over cfs.
    assert_eq!(r.policies, ["cfs", "eevdf", "cfs-cap", "numa-amp"]);
    assert!(json["eevdf_over_cfs"].as_f64().is_some());
    assert!(json["numa_amp_over_eevdf"].as_f64().is_some());
    assert_eq!(json["programs"].as_array().unwrap().len(), 13);
}
