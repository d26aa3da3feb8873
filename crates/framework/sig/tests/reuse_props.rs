//! Reuse distances and buckets against a brute-force reference.

use hetsched_sig::analysis::{Analyzer, Mode};
use hetsched_sig::buckets::{Buckets, B_COLD, B_ZERO};
use hetsched_sig::reuse::{ExactReuse, ReuseHistogram};
use hetsched_sig::trace::{AccessKind, TraceSink};
use proptest::prelude::*;
use std::collections::HashSet;

/// O(n²) reference: distinct other blocks since the previous access to the same block.
fn brute_force(blocks: &[u64]) -> Vec<Option<u64>> {
    (0..blocks.len())
        .map(|i| {
            let prev = (0..i).rev().find(|&j| blocks[j] == blocks[i])?;
            let between: HashSet<u64> = blocks[prev + 1..i].iter().copied().collect();
            Some(between.len() as u64)
        })
        .collect()
}

fn exact(blocks: &[u64]) -> Vec<Option<u64>> {
    // A tiny time line compacts every few accesses: the hard path gets exercised.
    let mut e = ExactReuse::with_min_capacity(5);
    blocks.iter().map(|&b| e.access(b)).collect()
}

/// Adversarial shapes: cyclic scans (every distance = working set − 1), repeats
/// (distance 0), strides and a mix of far reuses that force time-line compaction.
fn adversarial() -> impl Strategy<Value = Vec<u64>> {
    prop_oneof![
        (1u64..300, 1usize..8).prop_map(|(n, passes)| (0..passes).flat_map(|_| 0..n).collect()),
        (1u64..50, 1usize..30, 1usize..4).prop_map(|(n, passes, rep)| (0..passes)
            .flat_map(|p| (0..n).rev().map(move |b| b * (p as u64 % 3 + 1)))
            .flat_map(|b| std::iter::repeat_n(b, rep))
            .collect()),
        prop::collection::vec(
            prop_oneof![0u64..4, 0u64..64, 0u64..5000, any::<u64>()],
            0..1200
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn random_traces_match_brute_force(blocks in prop::collection::vec(0u64..200, 0..1500)) {
        prop_assert_eq!(exact(&blocks), brute_force(&blocks));
    }

    #[test]
    fn adversarial_traces_match_brute_force(blocks in adversarial()) {
        prop_assert_eq!(exact(&blocks), brute_force(&blocks));
    }

    #[test]
    fn buckets_match_brute_force(blocks in adversarial()) {
        let mut h = ReuseHistogram::default();
        let mut reference = Buckets::default();
        for d in brute_force(&blocks) {
            reference.record_n(d, 1);
            h.record(d);
        }
        let mut a = Analyzer::new(Mode::Exact);
        for &b in &blocks {
            a.block(b);
        }
        let p = a.finish();
        prop_assert_eq!(p.buckets, reference);
        prop_assert_eq!(p.histogram.cold, h.cold);
        prop_assert_eq!(p.histogram.nonzero().collect::<Vec<_>>(), h.nonzero().collect::<Vec<_>>());
        let distinct: HashSet<u64> = blocks.iter().copied().collect();
        prop_assert_eq!(p.working_set_blocks, distinct.len() as u64);
        prop_assert_eq!(p.buckets.0[B_COLD], distinct.len() as u64);
        prop_assert_eq!(p.buckets.total(), blocks.len() as u64);
    }
}

#[test]
fn long_trace_through_many_compactions() {
    // 40k distinct blocks cycled 3 times, then reversed: far distances after compaction.
    let n = 40_000u64;
    let mut blocks: Vec<u64> = (0..3).flat_map(|_| 0..n).collect();
    blocks.extend((0..n).rev());
    let d = exact(&blocks);
    assert!(d[..n as usize].iter().all(|x| x.is_none()));
    assert!(d[n as usize..3 * n as usize]
        .iter()
        .all(|&x| x == Some(n - 1)));
    // Reversed pass: block n-1 was touched last (distance 0 would need a repeat; it is
    // the previous access, so 0), then n-2 has 1 block in between, …
    for (k, x) in d[3 * n as usize..].iter().enumerate() {
        assert_eq!(*x, Some(k as u64), "reverse pass position {k}");
    }
}

#[test]
fn runs_with_prefetching_match_one_by_one() {
    // Far and near reuses, with the time line compacting every few hundred accesses.
    let blocks: Vec<u64> = (0..60_000u64)
        .map(|i| if i % 2 == 0 { i * 7919 % 9_000 } else { i % 50 })
        .collect();
    let mut one = ReuseHistogram::default();
    let mut e = ExactReuse::with_min_capacity(5);
    for &b in &blocks {
        one.record(e.access(b));
    }
    let mut runs = ReuseHistogram::default();
    let mut e = ExactReuse::with_min_capacity(5);
    for run in blocks.chunks(1000) {
        e.access_all(run, &mut runs);
    }
    assert_eq!(one.cold, runs.cold);
    assert_eq!(
        one.nonzero().collect::<Vec<_>>(),
        runs.nonzero().collect::<Vec<_>>()
    );
}

#[test]
fn line_crossing_and_modify_conventions() {
    let mut a = Analyzer::new(Mode::Exact);
    a.instructions(3);
    a.access(AccessKind::Load, 0x3c, 8); // blocks 0 and 1 (cold, cold)
    a.access(AccessKind::Modify, 0x40, 4); // block 1 twice: distance 0, 0
    a.access(AccessKind::Store, 0x0, 1); // block 0: distance 1
    let p = a.finish();
    assert_eq!(p.instructions, 3);
    assert_eq!(p.mem_ops, 3);
    assert_eq!(p.accesses, 5);
    assert_eq!(p.buckets.0[B_COLD], 2);
    assert_eq!(p.buckets.0[B_ZERO], 2);
    assert_eq!(p.buckets.0[2], 1);
    assert_eq!(p.working_set_blocks, 2);
}
