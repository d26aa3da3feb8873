//! The paper's claims (Beisel et al., §V), one test each, checked by the experiments'
//! own code on the simulated testbed (full-size where it is fast, scaled-down tasks
//! otherwise). Where we reproduce a claim the test asserts it; where we do not, it
//! asserts our documented different result (docs/beisel-fig*.md), so a change either
//! way is noticed.

use hetsched_beisel::experiments::{self, GRANULARITIES_MS};

/// A scratch folder for one experiment's outputs, removed when the test ends.
fn out(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("hetsched-beisel-test-{name}-"))
        .tempdir()
        .unwrap()
}

#[test]
fn fig3_nine_start_on_cpus_six_on_the_gpu_and_cpu_tasks_migrate() {
    let d = out("fig3");
    let d = d.path();
    let r = experiments::fig3(d, 1.0).unwrap();
    assert_eq!((r.started_cpu, r.started_gpu), (9, 6), "{}", r.table);
    assert!(r.not_migrated.is_empty(), "{}", r.table);
    assert!(d.join("progress.png").exists() && d.join("progress.csv").exists());
}

#[test]
fn fig4_time_sharing_lowers_mean_turnaround_vs_fcfs() {
    let seeds = experiments::seeds(experiments::FIG4_FIRST_SEED, 12);
    let r = experiments::fig4(out("fig4").path(), 25, 50, &seeds, 1.0).unwrap();
    assert!(r.timeshare.0 < r.fcfs.0, "{}", r.table);
    // Not one lucky draw: lower on average over the seeds and in most of them.
    assert!(
        r.mean_turnaround.1.mean < r.mean_turnaround.0.mean,
        "{}",
        r.table
    );
    assert!(2 * r.wins > r.seeds, "{}", r.table);
    // Tolerance: the paper gives no number; ours is 4.6 % ± 6.2 % lower over 30 seeds.
    assert!(r.change.mean < 0.0, "{}", r.table);
}

#[test]
fn fig4_after_150_s_only_long_tasks_remain_does_not_hold_all_end_before() {
    // Not reproduced (docs/beisel-fig4.md): with time-sharing the plotted seed's last
    // task ends at 125.4 s, so nothing remains at 150 s.
    let seeds = [experiments::FIG4_FIRST_SEED];
    let r = experiments::fig4(out("fig4-150").path(), 25, 50, &seeds, 1.0).unwrap();
    assert!(r.timeshare.1 < 150.0, "{}", r.table);
}

#[test]
fn fig5_gpu_plus_cpus_lowers_the_mean_runtime_only_while_the_gpu_is_slow() {
    let counts = [5, 25, 75];
    let ratios = [1.0, 128.0];
    let r = experiments::fig5(out("fig5").path(), &counts, &ratios, 0.05).unwrap();
    // The paper's claim holds at an assumed GPU speed of one CPU core...
    assert_eq!(r.claim_holds(1.0), Some(true), "{}", r.table);
    for &(n, gpu, both, _, _) in r.rows() {
        assert!(
            both <= gpu,
            "N = {n}: GPU + CPUs {both} s > GPU alone {gpu} s"
        );
    }
    // ...and not at 128x: the affinities (1:1) do not say the GPU is faster, so tasks
    // placed on the CPUs stay there (our documented different result).
    assert_eq!(r.claim_holds(128.0), Some(false), "{}", r.table);
}

#[test]
fn fig6_total_runtime_rises_as_granularity_falls_to_zero() {
    let seeds = experiments::seeds(experiments::FIG67_FIRST_SEED, 2);
    let r =
        experiments::fig6_7(out("fig67").path(), 10, 20, GRANULARITIES_MS, &seeds, 0.2).unwrap();
    let sweep: Vec<f64> = r
        .rows
        .iter()
        .filter(|r| r.0.is_some())
        .map(|r| r.1.mean)
        .collect();
    // Finer granularity, never less runtime; 0 strictly more than the coarsest.
    for w in sweep.windows(2) {
        assert!(w[0] >= w[1] - 1e-6, "{}", r.table);
    }
    assert!(sweep[0] > *sweep.last().unwrap(), "{}", r.table);
    let fcfs = r.rows.last().unwrap();
    assert!(fcfs.0.is_none() && fcfs.1.mean <= sweep[0], "{}", r.table);
    // Fig. 7: FCFS and granularity 0 both have a higher mean turnaround than 100 ms.
    let at = |g: f64| r.rows.iter().find(|r| r.0 == Some(g)).unwrap().2.mean;
    assert!(
        fcfs.2.mean > at(100.0) && at(0.0) > at(100.0),
        "{}",
        r.table
    );
    // Every point is the mean over the seeds, with its spread.
    assert!(r
        .rows
        .iter()
        .all(|r| r.1.min <= r.1.mean && r.1.mean <= r.1.max));
}

#[test]
fn demo_compares_four_policies_and_writes_its_outputs() {
    let d = out("demo");
    let d = d.path();
    let table = experiments::demo(d).unwrap();
    for p in experiments::DEMO_POLICIES {
        assert!(table.lines().any(|l| l.starts_with(p)), "{table}");
    }
    for f in [
        "table.txt",
        "trace.json",
        "turnaround-cdf.png",
        "tasks-affinity.csv",
    ] {
        assert!(d.join(f).exists(), "{f}");
    }
}
