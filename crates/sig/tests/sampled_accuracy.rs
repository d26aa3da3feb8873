//! Sampled analysis against exact on a program-like trace.

use hetsched_sig::bench::{max_fraction_error, synthetic_blocks, time_analysis};
use hetsched_sig::Mode;

#[test]
fn sampled_bucket_fractions_track_exact() {
    let blocks = synthetic_blocks(3_000_000, 3);
    let (exact, _) = time_analysis(&blocks, Mode::Exact);
    for rate in [0.1, 0.01] {
        let (sampled, _) = time_analysis(&blocks, Mode::Sampled(rate));
        let err = max_fraction_error(&exact, &sampled);
        assert!(err < 0.02, "R={rate}: max bucket-fraction error {err}");
        let w_err =
            (sampled.working_set_blocks as f64 / exact.working_set_blocks as f64 - 1.0).abs();
        assert!(w_err < 0.1, "R={rate}: working set off by {w_err}");
        assert_eq!(sampled.accesses, exact.accesses);
    }
}

#[test]
fn rate_one_equals_exact() {
    let blocks = synthetic_blocks(300_000, 5);
    let (exact, _) = time_analysis(&blocks, Mode::Exact);
    let (sampled, _) = time_analysis(&blocks, Mode::Sampled(1.0));
    assert_eq!(sampled.buckets, exact.buckets);
    assert_eq!(sampled.working_set_blocks, exact.working_set_blocks);
}
