//! The O² commands end to end: outputs written, bad input rejected with exit code 2.

use std::process::Command;

fn hetsched() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hetsched"))
}

#[test]
fn coretime_sim_writes_table_csv_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let out = hetsched()
        .args([
            "experiment",
            "coretime-sim",
            "--min-bytes",
            "64K",
            "--max-bytes",
            "128K",
        ])
        .args(["--warmup-lookups", "200", "--lookups", "200", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("simulated cache-miss counters"), "{stdout}");
    let csv = std::fs::read_to_string(dir.path().join("coretime-sim.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "header + 64K + 128K:\n{csv}");
    let fields: Vec<usize> = csv.lines().map(|l| l.split(',').count()).collect();
    assert!(fields.iter().all(|&n| n == fields[0]), "{csv}");
    assert!(csv.lines().nth(1).unwrap().starts_with("64000,2,"));
    let png = std::fs::read(dir.path().join("coretime-sim.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
}

#[test]
fn coretime_live_runs_and_reports_its_cost_source() {
    let dir = tempfile::tempdir().unwrap();
    let out = hetsched()
        .args([
            "experiment",
            "coretime-live",
            "--min-bytes",
            "64K",
            "--max-bytes",
            "64K",
        ])
        .args([
            "--duration-ms",
            "30",
            "--warmup-ms",
            "30",
            "--repeats",
            "1",
            "--cpus",
            "0",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("no PMU"), "{stdout}");
    let csv = std::fs::read_to_string(dir.path().join("coretime-live.csv")).unwrap();
    assert_eq!(csv.lines().count(), 2, "{csv}");
    // Every row has a field per column of the header.
    let fields: Vec<usize> = csv.lines().map(|l| l.split(',').count()).collect();
    assert!(fields.iter().all(|&n| n == fields[0]), "{csv}");
}

#[test]
fn bad_input_exits_2_and_names_the_argument() {
    for args in [
        vec!["experiment", "coretime-live", "--cpus", "9999"],
        vec!["experiment", "coretime-live", "--cpus", "zero"],
        vec![
            "experiment",
            "coretime-sim",
            "--min-bytes",
            "1M",
            "--max-bytes",
            "64K",
        ],
        vec![
            "experiment",
            "coretime-sim",
            "--mlp",
            "0.5",
            "--max-bytes",
            "64K",
            "--min-bytes",
            "64K",
        ],
        vec!["bench", "o2", "--cpus", "0"],
        vec!["bench", "o2", "--samples", "0"],
    ] {
        let cwd = tempfile::tempdir().unwrap();
        let out = hetsched()
            .args(&args)
            .current_dir(cwd.path())
            .output()
            .unwrap();
        // Bad input leaves no output folder behind.
        let left = cwd.path().join("hetsched-out");
        assert!(!left.exists(), "{args:?} left {}", left.display());
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--") || err.contains("mlp") || err.contains("samples"),
            "{args:?}: {err}"
        );
    }
}
