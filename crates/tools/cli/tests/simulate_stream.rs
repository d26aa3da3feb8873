//! `hetsched simulate` without `--trace` makes its outputs as the run goes
//! (`hetsched_sim::stream`); with `--trace` it keeps the whole record and derives them
//! afterwards. Both must write the same bytes, for every example scenario under every
//! policy, and `--summary` the same metrics without per-task CSVs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn hetsched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hetsched"))
        .args(args)
        .output()
        .unwrap()
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn streamed_outputs_equal_the_kept_records_outputs() {
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../scenarios");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&scenarios)
        .unwrap()
        .map(|e| e.unwrap().path())
        // Scenarios, not the machine files beside them.
        .filter(|p| {
            p.extension().is_some_and(|x| x == "toml")
                && std::fs::read_to_string(p)
                    .unwrap()
                    .lines()
                    .any(|l| l.starts_with("machine ="))
        })
        .collect();
    paths.sort();
    assert!(paths.len() >= 3, "example scenarios: {paths:?}");
    let policies: Vec<String> = hetsched_policies::REGISTRY
        .iter()
        .map(|r| r.name.to_string())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    for (i, scenario) in paths.iter().enumerate() {
        let run = |tag: &str, extra: &[&str]| {
            let out = dir.path().join(format!("{i}-{tag}"));
            let mut args = vec![
                "simulate",
                scenario.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ];
            for p in &policies {
                args.extend(["--policy", p]);
            }
            args.extend(extra);
            let o = hetsched(&args);
            assert!(
                o.status.success(),
                "{}: {}",
                scenario.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            (o.stdout, files(&out))
        };
        let trace = dir.path().join(format!("{i}.json"));
        let kept = run("kept", &["--trace", trace.to_str().unwrap()]);
        let streamed = run("streamed", &[]);
        assert_eq!(
            kept.1.len(),
            2 + policies.len(),
            "table, metrics and one CSV per policy"
        );
        assert!(kept
            .1
            .iter()
            .any(|(n, b)| n.starts_with("tasks-") && b.len() > 200));
        assert_eq!(kept, streamed, "{}", scenario.display());
        let summary = run("summary", &["--summary"]);
        let without_csv: Vec<_> = kept
            .1
            .iter()
            .filter(|(n, _)| !n.starts_with("tasks-"))
            .cloned()
            .collect();
        assert_eq!(
            summary,
            (kept.0.clone(), without_csv),
            "{}",
            scenario.display()
        );
    }
}

/// `hetsched bench simulate` runs the command's own code beside the engine: on a small
/// scenario it prints each figure with its load and the ratios beside their goals, and
/// its counts are those `hetsched simulate` reports (never timed).
#[test]
fn bench_simulate_prints_the_ratios_of_the_commands_runs() {
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../scenarios/fast-slow-mixed.toml");
    let scenario = scenario.to_str().unwrap();
    let o = hetsched(&[
        "bench",
        "simulate",
        scenario,
        "--policy",
        "cfs",
        "--repeat",
        "2",
        "--bench-tasks",
        "2000",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let dir = tempfile::tempdir().unwrap();
    let json = hetsched(&[
        "simulate",
        scenario,
        "--policy",
        "cfs",
        "--summary",
        "--json",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(json.status.success());
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let run = &json["runs"][0];
    let counts = format!(
        "{} tasks ({} completed, {} rejected)",
        run["tasks"], run["completed"], run["rejected"]
    );
    assert!(text.contains(&counts), "{counts:?} in\n{text}");
    assert!(text.contains("outputs agree"), "{text}");
    for line in [
        "(a) engine alone",
        "(b) simulate --summary",
        "(c) simulate, CSV on",
        "reference: bench sim",
    ] {
        let l = text
            .lines()
            .find(|l| l.starts_with(line))
            .unwrap_or_else(|| panic!("{line:?} in\n{text}"));
        assert!(l.contains(" s CPU (load "), "{l}");
    }
    for goal in ["x (a), goal <= 1.2x", "x (a), goal <= 2x"] {
        assert!(text.contains(goal), "{goal:?} in\n{text}");
    }
    // Each ratio round by round too: a median within the least and the largest, of
    // runs that took time.
    for row in ["(b) simulate --summary", "(c) simulate, CSV on"] {
        let l = text.lines().find(|l| l.starts_with(row)).unwrap();
        let figures = l
            .split("round by round: median ")
            .nth(1)
            .and_then(|r| r.split(')').next())
            .unwrap_or_else(|| panic!("no ratios round by round in {l}"));
        let x: Vec<f64> = figures
            .split(['x', ',', '-', ' '])
            .filter_map(|f| f.parse().ok())
            .collect();
        assert!(
            x.len() == 3 && x[1] > 0.0 && x[1] <= x[0] && x[0] <= x[2],
            "{figures:?} in {l}"
        );
    }
}
