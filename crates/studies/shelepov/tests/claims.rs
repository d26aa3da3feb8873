//! §3.3's and §4's claims, one test each: every test pins the verdict that
//! `hetsched_shelepov::reproduce::{accuracy_claim, claims}` judge at the quick scale (the
//! scale of `hetsched reproduce --quick`: 8 kernels and four programs under valgrind;
//! 8 start orders, 2,000 simulated seconds per run), so the report and these tests
//! agree by construction. The differences the tolerances allow are explained in
//! `docs/shelepov.md`.

use hetsched_shelepov::experiments::{run_all, table, Outcome};
use hetsched_shelepov::reproduce::{accuracy_claim, claims, options};
use hetsched_study::{assert_verdict, judged_once, Judged, Verdict};
use std::path::Path;
use std::sync::OnceLock;

/// The quick run, judged once for every claim test of this binary, across processes
/// too; the run's table is kept beside the verdicts for the model test below.
fn outcomes() -> Vec<Outcome> {
    let o = run_all(&options(true)).expect("the experiments run");
    println!(
        "{}\n{}",
        hetsched_shelepov::reproduce::programs_table(hetsched_shelepov::programs::stand_ins()),
        table(&o)
    );
    o
}

fn judged() -> &'static [Judged] {
    static J: OnceLock<Vec<Judged>> = OnceLock::new();
    J.get_or_init(|| {
        judged_once(Path::new(env!("CARGO_TARGET_TMPDIR")), || {
            // valgrind and the simulator each take one core: side by side.
            std::thread::scope(|scope| {
                let acc = scope.spawn(|| hetsched_shelepov::accuracy::run(true));
                let outcomes = outcomes();
                let acc = acc
                    .join()
                    .expect("the accuracy thread")
                    .expect("the accuracy runs");
                println!("{}", hetsched_shelepov::accuracy::table(&acc));
                [vec![accuracy_claim(&acc)], claims(&outcomes)].concat()
            })
        })
        .expect("the verdicts are stored")
    })
}

fn pinned(id: &str, verdict: Verdict) -> &'static Judged {
    assert_verdict(judged(), id, verdict)
}

#[test]
fn every_claim_has_a_test() {
    let ids: Vec<&str> = judged().iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "s3-prediction-accuracy",
            "s4.1-per-program-changes",
            "s4.1-heterogeneous-aggregate",
            "s4.2-balanced-aggregate",
            "s4.3-uniform-barely-changes",
            "s4.1-projection-1.5-ghz-almost-doubles",
            "s4.1-projection-1.0-ghz-more-than-triples",
        ]
    );
}

/// §3.3: the signatures' elasticities against cachegrind's, mean error and classes.
/// At the quick scale it does not hold (mean error 0.16, 4 of 8 programs in the wrong
/// class): the quick runs are a few million instructions, so the start-up and first-
/// touch misses cachegrind counts dominate the small programs, and equation (6) sets
/// them to zero (W ≤ N); docs/shelepov.md gives the full scale.
#[test]
fn signatures_predict_the_measured_elasticity() {
    pinned("s3-prediction-accuracy", Verdict::DoesNotHold);
}

/// §4.1: the paper's sign for every program, each within 6 points of the paper's.
/// Every program has the paper's sign; eon gains more than within 10 % of the paper's.
#[test]
fn heterogeneous_per_program_changes_have_the_papers_signs_near_its_sizes() {
    let c = pinned("s4.1-per-program-changes", Verdict::Partly);
    for (k, paper) in c.checks.iter().zip([-19.4, -19.9, 15.6, 12.3]) {
        assert_eq!(k.ours.unwrap().signum(), f64::signum(paper), "{}", c.claim);
    }
}

/// §4.1: the paper's −4.3 %; at test scale ours falls by more than half as much again.
#[test]
fn heterogeneous_improves_the_aggregate_more_than_the_paper() {
    let c = pinned("s4.1-heterogeneous-aggregate", Verdict::DoesNotHold);
    assert!(c.checks[0].ours.unwrap() < -4.3, "{}", c.claim);
}

/// §4.2: the paper's −2.7 %; at test scale ours is −2.4 %, just outside 10 % of it.
#[test]
fn balanced_improves_the_aggregate_near_the_papers() {
    let c = pinned("s4.2-balanced-aggregate", Verdict::Partly);
    assert!(c.checks[0].ours.unwrap() < 0.0, "{}", c.claim);
}

/// §4.3: "unlikely to seriously hurt": no worse than the paper's +0.4 %.
#[test]
fn uniform_barely_changes_the_aggregate() {
    pinned("s4.3-uniform-barely-changes", Verdict::Holds);
}

/// §4.1's projection, 1.5–3 GHz: "could almost double"; ours 1.8×, within half of the
/// paper's change but not 10 % of it.
#[test]
fn a_wider_range_nearly_doubles_the_gain() {
    pinned("s4.1-projection-1.5-ghz-almost-doubles", Verdict::Partly);
}

/// §4.1's projection, 1.0–3 GHz: "more than triple". Ours: 2.95× (partly): the
/// stand-ins' highly sensitive programs gain as the paper's, but mcf and equake, true
/// elasticities −0.46 and −0.50, lose more on 1 GHz cores than on 2 GHz ones.
#[test]
fn the_widest_range_more_than_triples_the_gain() {
    pinned("s4.1-projection-1.0-ghz-more-than-triples", Verdict::Partly);
}

/// The model, not a claim: bound to the 3 GHz cores, two per core, a program the
/// pipeline predicts highly sensitive takes twice its time alone there, whatever the
/// order (its memory-bound share does not matter at the reference frequency).
#[test]
fn highly_sensitive_programs_share_the_fast_cores_two_per_core() {
    let setup = hetsched_shelepov::experiments::HETEROGENEOUS;
    let het = hetsched_shelepov::experiments::run_setup(&setup, &options(true))
        .expect("the experiment runs");
    let high: Vec<_> = het
        .programs
        .iter()
        .filter(|p| p.predicted == hetsched_sig::elasticity::Class::High)
        .collect();
    assert!(!high.is_empty(), "no program predicted highly sensitive");
    for p in high {
        assert!(
            (p.signature_s - 200.0).abs() < 0.5,
            "{}: {} s",
            p.name,
            p.signature_s
        );
    }
    // eevdf runs beside the default scheduler for every program (shown, not judged).
    assert!(het
        .programs
        .iter()
        .all(|p| p.eevdf_runs > 0 && p.eevdf_s > 0.0));
}

/// The full §3.3 set (all 22 kernels at 2 M reads, five programs on 40,000-line
/// inputs: half an hour or more under valgrind), printed: `cargo test -p
/// hetsched-shelepov --test claims full_accuracy -- --ignored --nocapture`.
#[test]
#[ignore = "half an hour or more under valgrind"]
fn full_accuracy() {
    let acc = hetsched_shelepov::accuracy::run(false).expect("the accuracy runs");
    println!("{}", hetsched_shelepov::accuracy::table(&acc));
    println!("{:#?}", accuracy_claim(&acc));
}
