//! The paper's claims (Beisel et al., §V), one test each: every test pins the verdict
//! that `hetsched_beisel::reproduce` grades by the one rule at its quick scale (the scale
//! of `hetsched reproduce --quick`), so the report and these tests agree by construction
//! and a change in either direction is noticed; `assert_verdict` grades each of the
//! claim's numbers against its band again. Where we do not reproduce a claim, the verdict
//! is our documented different result (docs/beisel-fig*.md).

use hetsched_beisel::experiments;
use hetsched_study::{assert_verdict, judged_once, Judged, Verdict};
use hetsched_util::files::OutDir;
use std::path::Path;
use std::sync::OnceLock;

/// The verdicts of one quick reproduction (written under the test target's scratch
/// folder), shared by every claim test of this binary, across processes too.
fn judged() -> &'static [Judged] {
    static J: OnceLock<Vec<Judged>> = OnceLock::new();
    J.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        judged_once(dir, || {
            let out = OutDir::create(&dir.join("beisel-reproduce")).unwrap();
            let r = hetsched_beisel::reproduce::reproduce(&out, true).expect("the experiments run");
            assert_eq!(r.missing_figure_parts(out.path()), Vec::<String>::new());
            r.claims
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
            "fig3-nine-on-cpus-six-on-the-gpu",
            "fig3-cpu-threads-migrate-to-the-gpu",
            "fig4-time-sharing-lowers-mean-turnaround",
            "fig4-after-150-s-only-long-tasks-remain",
            "fig5-gpu-plus-cpus-lowers-mean-runtime",
            "fig6-runtime-rises-as-granularity-falls",
            "fig7-turnaround-high-at-zero-and-under-fcfs",
        ]
    );
    let assumed = hetsched_beisel::workload::assumptions();
    assert!(assumed.iter().any(|a| a.name == "PRIME_GPU_RATIO"));
}

#[test]
fn fig3_nine_start_on_cpus_six_on_the_gpu() {
    pinned("fig3-nine-on-cpus-six-on-the-gpu", Verdict::Holds);
}

#[test]
fn fig3_cpu_threads_migrate_to_the_gpu() {
    pinned("fig3-cpu-threads-migrate-to-the-gpu", Verdict::Holds);
}

#[test]
fn fig4_time_sharing_lowers_mean_turnaround_over_most_seeds() {
    pinned("fig4-time-sharing-lowers-mean-turnaround", Verdict::Holds);
}

#[test]
fn fig4_the_plotted_mix_ends_before_150_s_but_within_half_of_it() {
    // The plotted seed's last task ends at 125.4 s (docs/beisel-fig4.md): below the
    // paper's 150 s by less than half.
    let c = pinned("fig4-after-150-s-only-long-tasks-remain", Verdict::Partly);
    let end = c.checks[0].ours.unwrap();
    assert!((75.0..150.0).contains(&end), "{end}");
}

#[test]
fn fig5_gpu_plus_cpus_lowers_the_mean_runtime_only_while_the_gpu_is_slow() {
    // Holds at every N at the assumed 1x and 2x, not at 128x (docs/beisel-fig5.md).
    let c = pinned("fig5-gpu-plus-cpus-lowers-mean-runtime", Verdict::Partly);
    assert_eq!(c.checks[0].verdict, Verdict::Holds, "at the assumed speed");
}

#[test]
fn fig6_total_runtime_rises_as_granularity_falls_to_zero() {
    pinned("fig6-runtime-rises-as-granularity-falls", Verdict::Holds);
}

#[test]
fn fig7_turnaround_is_high_at_granularity_zero_and_under_fcfs() {
    pinned(
        "fig7-turnaround-high-at-zero-and-under-fcfs",
        Verdict::Holds,
    );
}

/// A scratch folder for one experiment's outputs, removed when the test ends.
fn out(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("hetsched-beisel-test-{name}-"))
        .tempdir()
        .unwrap()
}

#[test]
fn demo_compares_its_policies_and_writes_its_outputs() {
    let d = out("demo");
    let d = d.path();
    let table = experiments::demo(&OutDir::create(d).unwrap()).unwrap();
    for p in experiments::DEMO_POLICIES {
        assert!(table.lines().any(|l| l.starts_with(p)), "{table}");
    }
    assert!(table.contains(experiments::DMDA_NOTE), "{table}");
    // Calibrated, dmda uses the GPU (cold, it did too: StarPU's greedy start sends
    // tasks there by its assumed speed-up), and its placements differ from the cold
    // run's: it starts from the first run's models.
    let util_gpu = |row: &str| -> f64 {
        let line = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(row))
            .unwrap();
        line.split_whitespace().nth(11).unwrap().parse().unwrap()
    };
    assert!(
        util_gpu("dmda") > 0.0 && util_gpu("dmda-cold") > 0.0,
        "{table}"
    );
    let csv = |p: &str| std::fs::read_to_string(d.join(format!("tasks-{p}.csv"))).unwrap();
    assert_ne!(csv("dmda"), csv("dmda-cold"));
    for f in [
        "table.txt",
        "trace.json",
        "turnaround-cdf.png",
        "tasks-affinity.csv",
    ] {
        assert!(d.join(f).exists(), "{f}");
    }
}
