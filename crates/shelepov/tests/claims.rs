//! §4's claims, each held with a stated tolerance by the simulated reproduction (the
//! default options: 16 start orders, 2,000 simulated seconds per run). The differences
//! these tolerances allow are explained in `docs/shelepov.md`.

use hetsched_shelepov::experiments::{run_all, table, Options, Outcome};
use std::sync::OnceLock;

fn outcomes() -> &'static [Outcome] {
    static O: OnceLock<Vec<Outcome>> = OnceLock::new();
    O.get_or_init(|| {
        let o = run_all(&Options::default()).expect("the experiments run");
        println!("{}", table(&o));
        o
    })
}

fn setup(name: &str) -> &'static Outcome {
    outcomes()
        .iter()
        .find(|o| o.setup.name == name)
        .expect("a configuration")
}

fn change(o: &Outcome, program: &str) -> f64 {
    o.programs
        .iter()
        .find(|p| p.name == program)
        .expect("a program")
        .change_pct
}

/// §4.1: the paper's sign for every program, each within 6 percentage points of the
/// paper's change, and an aggregate improvement within 3 points of −4.3 %.
#[test]
fn heterogeneous_has_the_papers_signs_and_an_aggregate_improvement() {
    let het = setup("heterogeneous");
    for &(program, paper) in het.setup.paper.programs {
        let ours = change(het, program);
        assert_eq!(
            ours.signum(),
            paper.signum(),
            "{program}: {ours:+.1} % vs {paper:+.1} %"
        );
        assert!(
            (ours - paper).abs() <= 6.0,
            "{program}: {ours:+.1} % vs {paper:+.1} %"
        );
    }
    assert!(het.aggregate_pct < 0.0, "{:+.1} %", het.aggregate_pct);
    assert!(
        (het.aggregate_pct + 4.3).abs() <= 3.0,
        "{:+.1} %",
        het.aggregate_pct
    );
    // Bound to the 3 GHz cores, two per core: a highly sensitive program takes twice
    // its time alone there, whatever the order.
    for p in het
        .programs
        .iter()
        .filter(|p| p.name == "eon" || p.name == "crafty")
    {
        assert!(
            (p.signature_s - 200.0).abs() < 0.5,
            "{}: {} s",
            p.name,
            p.signature_s
        );
    }
}

/// §4.2: an aggregate improvement within 1.5 points of −2.7 %.
#[test]
fn balanced_improves_the_aggregate() {
    let a = setup("balanced").aggregate_pct;
    assert!(a < 0.0 && (a + 2.7).abs() <= 1.5, "{a:+.1} %");
}

/// §4.3: "unlikely to seriously hurt": the aggregate within ±2 % (paper +0.4 %).
#[test]
fn uniform_barely_changes_the_aggregate() {
    let a = setup("uniform").aggregate_pct;
    assert!(a.abs() <= 2.0, "{a:+.1} %");
}

/// §4.1's projection: with 1.5–3 GHz the decrease "could almost double" (ours: 1.5 to
/// 2.5 times the 2–3 GHz decrease), with 1.0–3 GHz "more than triple" (ours: > 3 times).
#[test]
fn wider_frequency_ranges_multiply_the_gain_as_projected() {
    let base = setup("heterogeneous").aggregate_pct;
    let r15 = setup("projection 1.5-3 GHz").aggregate_pct / base;
    let r10 = setup("projection 1.0-3 GHz").aggregate_pct / base;
    assert!((1.5..=2.5).contains(&r15), "1.5-3 GHz: {r15:.2} x");
    assert!(r10 > 3.0, "1.0-3 GHz: {r10:.2} x");
}
