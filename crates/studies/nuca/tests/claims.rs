//! One test per claim of Shim et al., graded by the one rule in `reproduce::reproduce`
//! at its quick scale
//! (the 16 benchmarks at tiny sizes, 16 threads on a 4 × 4 Table I chip), once for all
//! of this binary's tests.
//! Each test pins the verdict — the paper's statement where we hold it, our documented
//! different result where we do not — so a change in either direction is noticed.

use hetsched_study::{assert_verdict, judged_once, Judged, Verdict};
use hetsched_util::files::OutDir;
use std::path::Path;
use std::sync::OnceLock;

/// The verdicts of one quick reproduction (the scale of `hetsched reproduce --quick`),
/// shared by every test of this binary, across nextest's processes too.
fn judged() -> &'static [Judged] {
    static J: OnceLock<Vec<Judged>> = OnceLock::new();
    J.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        judged_once(dir, || {
            let out = OutDir::create(&dir.join("shim-reproduce")).unwrap();
            let r = hetsched_nuca::reproduce::reproduce(&out, true).expect("the runs succeed");
            assert_eq!(r.paper, "shim");
            assert_eq!(r.missing_figure_parts(out.path()), Vec::<String>::new());
            for f in &r.figures {
                assert!(!f.paper_numbers.rows.is_empty(), "{}", f.id);
            }
            assert!(r.assumptions.iter().any(|a| a.name == "FREQUENCY_GHZ"));
            r.claims
        })
        .expect("the verdicts are stored")
    })
}

fn pinned(id: &str, verdict: Verdict) -> &'static Judged {
    let c = assert_verdict(judged(), id, verdict);
    assert_eq!(
        c.explanation.is_empty(),
        verdict == Verdict::Holds,
        "{}",
        c.claim
    );
    assert!(!c.ours.is_empty(), "{}", c.claim);
    c
}

#[test]
fn every_claim_is_pinned_here() {
    let ids: Vec<&str> = judged().iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "core-miss-remote-only",
            "core-miss-reduction",
            "migration-rate",
            "mean-gain-theta3",
            "best-speedup",
            "never-worse",
            "theta3-best",
            "theta2-more-migrations",
            "radix-few-migrations",
        ]
    );
}

#[test]
fn baseline_core_miss_rate_is_higher_than_the_papers() {
    let c = pinned("core-miss-remote-only", Verdict::DoesNotHold);
    assert!(c.checks[0].ours.unwrap() > 29.0, "{}", c.claim);
}

/// At test scale −34 % against the paper's −38 % (just outside 10 % of it); at full
/// scale −41 %, which holds.
#[test]
fn at_test_scale_the_predictor_cuts_core_misses_by_near_the_papers_share() {
    pinned("core-miss-reduction", Verdict::Partly);
}

#[test]
fn more_migrations_than_the_papers_three_percent_yet_fewer_than_core_misses_removed() {
    let c = pinned("migration-rate", Verdict::DoesNotHold);
    assert_eq!(
        c.check("fewer migrations than core misses removed").verdict,
        Verdict::Holds
    );
}

#[test]
fn hybrid_gains_on_average_but_not_the_papers_18_percent() {
    pinned("mean-gain-theta3", Verdict::Partly);
}

/// At test scale lu_contiguous gains 2.51× against the paper's 2.3×; at full scale water
/// gains 4.66× (docs/reproduce.md).
#[test]
fn at_test_scale_the_best_benchmark_gains_near_the_papers_2_3x() {
    pinned("best-speedup", Verdict::Partly);
}

#[test]
fn some_benchmarks_are_slower_under_the_hybrid() {
    let c = pinned("never-worse", Verdict::Partly);
    assert!(c.checks[0].ours.unwrap() > 1.0, "{}", c.claim);
}

#[test]
fn theta_3_is_not_the_best_threshold_at_test_scale() {
    pinned("theta3-best", Verdict::DoesNotHold);
}

#[test]
fn theta_2_migrates_more_at_about_the_same_core_miss_rate() {
    pinned("theta2-more-migrations", Verdict::Holds);
}

#[test]
fn radix_needs_more_migrations_than_the_papers() {
    pinned("radix-few-migrations", Verdict::DoesNotHold);
}
