//! Sampled analysis against exact on a program-like trace.

use hetsched_sig::bench::{max_fraction_error, synthetic_blocks, time_analysis};
use hetsched_sig::buckets::label;
use hetsched_sig::Mode;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

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

#[test]
fn small_working_set_far_reuses_land_in_their_buckets() {
    // Uniformly random accesses over 2000 blocks (20 sampled at R = 0.01): most reuses
    // lie at 64..2000, where there is often no sampled block in between; they must
    // not pile up at the nearest far distance (in B(33,64)). Long time samples (R/16
    // of the block changes: 5,000 here) measure the distances below 1024.
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let blocks: Vec<u64> = (0..8_000_000)
        .map(|_| (7 << 40) + rng.random_range(0..2000u64))
        .collect();
    let (exact, _) = time_analysis(&blocks, Mode::Exact);
    let (sampled, _) = time_analysis(&blocks, Mode::Sampled(0.01));
    let b33_64 = 7;
    assert_eq!(label(b33_64), "B(33,64)");
    let (fe, fs) = (exact.buckets.fractions(), sampled.buckets.fractions());
    assert!(
        (fe[b33_64] - fs[b33_64]).abs() < 0.003,
        "B(33,64): {} vs {}",
        fs[b33_64],
        fe[b33_64]
    );
    let err = max_fraction_error(&exact, &sampled);
    assert!(
        err < 0.03,
        "max bucket-fraction error {err}\n{fe:?}\n{fs:?} {} {}",
        exact.working_set_blocks,
        sampled.working_set_blocks
    );
}
