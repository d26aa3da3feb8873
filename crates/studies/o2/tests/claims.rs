//! One test per claim of the CORETIME paper, graded by the one rule in
//! `reproduce::reproduce` at its quick
//! scale (the scale of `hetsched reproduce --quick`: the paper's 16-core machine, 1–32
//! MB, fewer lookups than `hetsched experiment coretime-sim`), once for all of this
//! binary's tests, across nextest's processes too. Each test pins the verdict, so a
//! change in either direction is noticed.

use hetsched_study::{assert_verdict, judged_once, Judged, Verdict};
use hetsched_util::files::OutDir;
use std::path::Path;
use std::sync::OnceLock;

fn judged() -> &'static [Judged] {
    static J: OnceLock<Vec<Judged>> = OnceLock::new();
    J.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        judged_once(dir, || {
            let out = OutDir::create(&dir.join("o2-reproduce")).unwrap();
            let r = hetsched_o2::reproduce::reproduce(&out, true).expect("the sweep runs");
            assert_eq!(r.missing_figure_parts(out.path()), Vec::<String>::new());
            assert!(r.assumptions.iter().any(|a| a.name == "MEM_GBPS"));
            r.claims
        })
        .expect("the verdicts are stored")
    })
}

fn pinned(id: &str, verdict: Verdict) -> &'static Judged {
    assert_verdict(judged(), id, verdict);
    let c = judged().iter().find(|c| c.id == id).unwrap();
    assert_eq!(
        c.explanation.is_empty(),
        verdict == Verdict::Holds,
        "{}",
        c.claim
    );
    c
}

#[test]
fn every_claim_is_pinned_here() {
    let ids: Vec<&str> = judged().iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "copy-fits-no-gain",
            "two-to-three-times-above-2mb",
            "twice-as-fast-most-sizes",
            "assigns-when-misses",
            "falls-beyond-16mb",
        ]
    );
}

/// At full scale it does not hold: 2 MB runs at 0.78× (docs/reproduce.md).
#[test]
fn at_test_scale_no_gain_while_a_copy_fits_every_l3() {
    pinned("copy-fits-no-gain", Verdict::Holds);
}

#[test]
fn not_two_to_three_times_at_every_size_from_4_to_16_mb() {
    // At test scale the 4 MB point has just been placed (O² ≈ threads); the full run
    // gives 1.41× there and 2.0–2.1× at 8–16 MB (docs/o2.md).
    let c = pinned("two-to-three-times-above-2mb", Verdict::DoesNotHold);
    assert!(c.ours.contains("8 MB"), "{}", c.ours);
}

/// At test scale 8 and 16 MB reach 1.99× and 1.97×: just short of "more than twice",
/// which means ≥ 2.0×. At full scale 2.03× and 2.12×, which holds (docs/reproduce.md).
#[test]
fn at_test_scale_just_short_of_twice_as_fast_at_most_sizes_from_4_to_16_mb() {
    pinned("twice-as-fast-most-sizes", Verdict::DoesNotHold);
    // The same ratios, as the range claim grades them.
    let c = judged()
        .iter()
        .find(|c| c.id == "two-to-three-times-above-2mb")
        .unwrap();
    let near_twice = |size: &str| {
        let r = c.check(&format!("O²/thread-based at {size}, ×"));
        r.ours.is_some_and(|x| (1.5..2.0).contains(&x))
    };
    assert!(near_twice("8 MB") && near_twice("16 MB"), "{}", c.claim);
}

/// At full scale it does not hold: the monitoring also assigns 13 directories at 2 MB
/// (docs/reproduce.md).
#[test]
fn at_test_scale_the_monitoring_assigns_directories_only_when_they_miss() {
    pinned("assigns-when-misses", Verdict::Holds);
}

#[test]
fn o2_falls_beyond_the_16_mb_of_cache() {
    pinned("falls-beyond-16mb", Verdict::Holds);
}
