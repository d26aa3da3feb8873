//! `hetsched simulate` as a user runs it: the real binary, real scenario files.

mod common;
use common::{assert_input_error, hetsched};

use std::path::Path;

use common::scenario;

/// Writes a scenario file and returns its path.
fn file(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn bad_scenarios_name_file_and_key_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("out");
    let out = out.to_str().unwrap();
    let head = "machine = \"ding\"\npolicies = [\"cfs\"]\n";
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        ("unknown-policy.toml", "machine = \"ding\"\npolicies = [\"cfs\", \"lottery\"]\n[[task]]\nwork = 1\n".into(),
         vec!["unknown-policy.toml", "policies[1]", "unknown policy \"lottery\""]),
        ("unknown-key.toml", format!("{head}[[task]]\nwork = 1\nwrok = 2\n"),
         vec!["unknown-key.toml", "line 3", "unknown field `wrok`"]),
        ("negative-work.toml", format!("{head}[[task]]\nwork = 1\n[[task]]\nwork = -2\n"),
         vec!["negative-work.toml", "task[1].work", "expected a number in [0, 1e6]", "got -2"]),
        ("no-implementation.toml", format!("{head}[[task]]\nwork = 1\naffinity = {{ cpu = 0, gpu = 0 }}\n"),
         vec!["no-implementation.toml", "task[0].affinity", "all affinities are 0"]),
        ("bad-machine.toml", "machine = \"nowhere.toml\"\npolicies = [\"cfs\"]\n[[task]]\nwork = 1\n".into(),
         vec!["bad-machine.toml", "machine", "nowhere.toml: no such file"]),
        ("bad-mix.toml", format!("{head}[[generator]]\ncount = 2\nrate = 1\nsize = {{ dist = \"exponential\", mean = 1 }}\n[[generator.mix]]\nshare = 1\naffinity = {{ fpga = 1 }}\n"),
         vec!["bad-mix.toml", "unknown field `fpga`"]),
    ];
    for (name, text, needles) in cases {
        let path = file(d, name, &text);
        assert_input_error(&hetsched(&["simulate", &path, "--out", out]), &needles);
    }
    let ok = file(d, "ok.toml", &format!("{head}[[task]]\nwork = 1\n"));
    assert_input_error(
        &hetsched(&[
            "simulate",
            &ok,
            "--policy",
            "cfs:latency_ms=x",
            "--out",
            out,
        ]),
        &["--policy", "latency_ms: expected a number, got \"x\""],
    );
    assert_input_error(
        &hetsched(&["simulate", "/no/such.toml"]),
        &["/no/such.toml", "cannot read"],
    );
}

#[test]
fn runs_are_byte_identical_and_traces_are_valid_trace_event_json() {
    let dir = tempfile::tempdir().unwrap();
    let run = |tag: &str| {
        let out = dir.path().join(tag);
        let trace = dir.path().join(format!("{tag}.json"));
        let o = hetsched(&[
            "simulate",
            &scenario("beisel-gpu.toml"),
            "--out",
            out.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
            "--json",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let files: Vec<Vec<u8>> = [
            "metrics.json",
            "table.txt",
            "tasks-cfs.csv",
            "tasks-dmda.csv",
        ]
        .iter()
        .map(|f| std::fs::read(out.join(f)).unwrap())
        .collect();
        (o.stdout, files, std::fs::read(trace).unwrap())
    };
    let a = run("a");
    let b = run("b");
    assert_eq!(a, b, "two runs of the same scenario and seed differ");

    // Trace-event format (the Chrome/Perfetto JSON object form): required fields per phase.
    let doc: serde_json::Value = serde_json::from_slice(&a.2).unwrap();
    let events = doc["traceEvents"].as_array().expect("traceEvents array");
    let mut threads = std::collections::BTreeSet::new();
    let mut slices = 0;
    for e in events {
        let ph = e["ph"].as_str().expect("ph");
        assert!(e["pid"].is_u64(), "{e}");
        match ph {
            "M" => {
                assert!(
                    e["args"]["name"].is_string() || e["args"]["sort_index"].is_u64(),
                    "{e}"
                );
                if e["name"] == "thread_name" {
                    threads.insert((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()));
                }
            }
            "X" => {
                assert!(
                    e["ts"].as_f64().unwrap() >= 0.0 && e["dur"].as_f64().unwrap() >= 0.0,
                    "{e}"
                );
                assert!(e["tid"].is_u64() && e["name"].is_string(), "{e}");
                assert!(
                    threads.contains(&(e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap())),
                    "slice on an unnamed track: {e}"
                );
                slices += 1;
            }
            "s" | "f" => assert!(
                e["id"].is_u64() && e["ts"].is_f64() && e["tid"].is_u64(),
                "{e}"
            ),
            "C" => assert!(
                e["args"]["tasks"].is_i64() && e["ts"].is_f64() && e["name"].is_string(),
                "{e}"
            ),
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    // beisel: 16 PUs + 1 GPU = 17 tracks per policy run, 4 policies.
    assert_eq!(threads.len(), 17 * 4);
    assert!(
        slices >= 4 * 1000,
        "at least one slice per task per run: {slices}"
    );
    assert!(events.iter().any(|e| e["ph"] == "s") && events.iter().any(|e| e["ph"] == "f"));
}

#[test]
fn the_hand_scenario_file_prints_the_hand_computed_figures() {
    let dir = tempfile::tempdir().unwrap();
    let o = hetsched(&[
        "simulate",
        &scenario("hand.toml"),
        "--policy",
        "fcfs",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let stdout = String::from_utf8_lossy(&o.stdout);
    let row = stdout.lines().find(|l| l.starts_with("fcfs")).unwrap();
    let cols: Vec<&str> = row.split_whitespace().collect();
    // done, rejected, makespan, turnaround mean / median / p95 (see hand.toml).
    assert_eq!(
        &cols[1..7],
        &["3", "0", "3.0000", "2.1667", "2.0000", "2.5000"]
    );
    let csv = std::fs::read_to_string(dir.path().join("tasks-fcfs.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4);
    assert!(csv
        .lines()
        .nth(3)
        .unwrap()
        .starts_with("2,task,0.500000000,2.000000000,3.000000000,2.500000000,1.500000000"));
}

/// `--perfmodel DIR` keeps dmda's performance models between runs, as StarPU keeps its
/// sampling directory: a second run starts calibrated and places its first task by the
/// stored estimates (the cold run's first goes by StarPU's greedy rule), a run without
/// it starts cold again, and a corrupt file is a one-line input error naming it.
#[test]
fn a_second_run_with_the_same_perfmodel_dir_starts_calibrated() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    file(
        d,
        "cpu-gpu.toml",
        "name = \"cpu-gpu\"\n[[package]]\ncores = 1\n[[accelerator]]\ntype = \"gpu\"\nname = \"gpu0\"\n",
    );
    // Four tasks at once, 4x faster on the GPU; a model is trusted after one run.
    let s = file(
        d,
        "s.toml",
        "machine = \"cpu-gpu.toml\"\npolicies = [\"dmda:calibrate=1\"]\n[[task]]\ntype = \"k\"\nwork = 1.0\ncount = 4\naffinity = { cpu = 1, gpu = 4 }\n",
    );
    let models = d.join("models");
    let run = |out: &str, keep: bool| {
        let out_dir = d.join(out);
        let mut args = vec!["simulate", &s, "--out", out_dir.to_str().unwrap()];
        if keep {
            args.extend(["--perfmodel", models.to_str().unwrap()]);
        }
        let o = hetsched(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        // Task 0's unit: the CSV's lines are task, ..., unit name, ...
        let csv = std::fs::read_to_string(out_dir.join("tasks-dmda_calibrate_1.csv")).unwrap();
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let unit = header.iter().position(|&h| h == "unit").unwrap();
        let first = csv
            .lines()
            .nth(1)
            .unwrap()
            .split(',')
            .nth(unit)
            .unwrap()
            .to_string();
        (first, csv)
    };
    let (cold, cold_csv) = run("1", true);
    assert_eq!(cold, "cpu0", "no model: the greedy rule's lowest id");
    let file_ = models.join("cpu-gpu.json");
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file_).unwrap()).unwrap();
    assert_eq!(kept["version"], 1);
    let kinds: Vec<&str> = kept["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["unit_type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["cpu", "gpu"], "{kept}");
    assert_eq!(
        std::fs::metadata(&models).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let (warm, _) = run("2", true);
    assert_eq!(
        warm, "gpu0",
        "calibrated: 0.25 s on the GPU beats 1 s on the CPU"
    );
    let (again, again_csv) = run("3", false);
    assert_eq!(
        (again.as_str(), again_csv),
        ("cpu0", cold_csv),
        "without it, cold again"
    );
    std::fs::write(&file_, "{\"format\": 1}").unwrap();
    let out = hetsched(&[
        "simulate",
        &s,
        "--out",
        d.join("4").to_str().unwrap(),
        "--perfmodel",
        models.to_str().unwrap(),
    ]);
    assert_input_error(&out, &["cpu-gpu.json", "not a performance-model file"]);
}
