//! The NUMA workload fields of scenario files through the real binary: the example
//! `scenarios/numa-amp.toml` runs numa-amp and its baselines (`eevdf` among them), and an out-of-range
//! field exits 2 naming the file, the field and the accepted range.

mod common;
use common::{assert_input_error, hetsched};

#[test]
fn the_numa_amp_scenario_runs_and_a_bad_mpki_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../scenarios/numa-amp.toml"
    );
    let run = hetsched(&["simulate", scenario, "--out", out.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    for policy in ["cfs", "eevdf", "cfs-cap", "numa-amp"] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{policy} ")));
        // Every policy finishes all 16 threads.
        let done = row.and_then(|r| r.split_whitespace().nth(1));
        assert_eq!(done, Some("16"), "{policy}: {stdout}");
    }

    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "machine = \"ding\"\n[[task]]\nwork = 1\ninstructions_per_s = 1e9\nllc_mpki = 1e6\n",
    )
    .unwrap();
    let run = hetsched(&[
        "simulate",
        bad.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_input_error(&run, &["bad.toml", "task[0].llc_mpki", "[0, 1000]", "1e6"]);
}
