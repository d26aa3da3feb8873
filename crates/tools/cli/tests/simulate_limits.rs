//! What bounds a `hetsched simulate` run (issue 40): ordinary studies run without a
//! flag, absurd ones are stopped before they start by the bound that matters, a run
//! stopped by the user (Ctrl-C) or at its time limit says what it left. The real binary
//! on real scenario files, as a user runs it.
//!
//! The former default event limit (10^6 engine events) stopped a 50,000-task Poisson
//! study under cfs and a 200,000-task M/G/1 study: both are run here with no limit, and
//! each is shown to need more than 10^6 events (`--max-events 1000000` still stops it),
//! so that a default event limit brought back fails this test.

mod common;
use common::{assert_input_error, hetsched};

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A machine file of 4 fast cores (capacity 1024) and 4 slow ones (512), one NUMA node.
const FAST_SLOW: &str = "name = \"fast4-slow4\"\n\
    [[cpu_kind]]\nname = \"fast\"\ncapacity = 1024\n\
    [[cpu_kind]]\nname = \"slow\"\ncapacity = 512\n\
    [[package]]\ncores = 4\nkind = \"fast\"\n\
    [[package]]\ncores = 4\nkind = \"slow\"\n";

/// One core.
const ONE_CORE: &str = "name = \"one\"\n[[package]]\ncores = 1\n";

/// 50,000 tasks arriving as a Poisson stream at 20/s, exponential work of mean 0.2
/// reference s: 4 of the machine's 6 reference seconds per second (load 2/3), 2,500 s.
const POISSON: &str = "machine = \"fast4-slow4.toml\"\npolicies = [\"cfs\"]\n\
    [[generator]]\ncount = 50000\nrate = 20.0\n\
    size = { dist = \"exponential\", mean = 0.2 }\n[[generator.mix]]\nshare = 1.0\n";

/// M/G/1 at ρ = 0.8, as `crates/framework/sim/tests/fair_share.rs` studies it: 200,000 tasks at
/// 40/s on one core, work uniform on [0, 40 ms].
const MG1: &str = "machine = \"one.toml\"\npolicies = [\"cfs\"]\n\
    [[generator]]\ncount = 200000\nrate = 40.0\n\
    size = { dist = \"uniform\", min = 0.0, max = 0.04 }\n[[generator.mix]]\nshare = 1.0\n";

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// The runs of `hetsched simulate ARGS --json`, checked to have succeeded quietly.
fn runs(args: &[&str]) -> Vec<serde_json::Value> {
    let out = hetsched(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["runs"].as_array().unwrap().clone()
}

#[test]
fn ordinary_studies_run_without_an_event_limit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "fast4-slow4.toml", FAST_SLOW);
    write(d, "one.toml", ONE_CORE);
    let out = d.join("out");
    let out = out.to_str().unwrap();
    for (name, text, tasks) in [
        ("poisson.toml", POISSON, 50_000),
        ("mg1.toml", MG1, 200_000),
    ] {
        let scenario = write(d, name, text);
        // More than the former default's events...
        let stopped = hetsched(&[
            "simulate",
            &scenario,
            "--summary",
            "--out",
            out,
            "--max-events",
            "1000000",
        ]);
        assert_input_error(&stopped, &[name, "cfs", "event limit (1000000 events"]);
        // ... and no flag needed.
        let runs = runs(&["simulate", &scenario, "--summary", "--json", "--out", out]);
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0]["completed"].as_u64(), Some(tasks), "{name}");
        assert!(runs[0].get("unfinished").is_none(), "{name}: {}", runs[0]);
    }
}

/// Generators far past what a run may generate (10^8 tasks) are refused before the run,
/// naming the generator, the bound and what to change; with `end.max_time_s`, the tasks
/// expected by then count, not the generator's count.
#[test]
fn an_absurd_generator_is_stopped_by_the_tasks_it_would_generate() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("out");
    let out = out.to_str().unwrap();
    let gen = |count: &str, end: &str| {
        format!(
            "machine = \"ding\"\npolicies = [\"fcfs\"]\n{end}[[generator]]\ncount = {count}\nrate = 1e9\n\
             size = {{ dist = \"fixed\", value = 1.0 }}\n[[generator.mix]]\nshare = 1.0\n"
        )
    };
    let huge = write(d, "huge.toml", &gen("1000000000000", ""));
    assert_input_error(
        &hetsched(&["simulate", &huge, "--out", out]),
        &[
            "huge.toml",
            "generator[0].count = 1000000000000",
            "1000000000000 tasks in the run",
            "at most 100000000",
            "end.max_time_s",
        ],
    );
    let long = write(
        d,
        "long.toml",
        &gen("1000000000000", "end = { max_time_s = 1000 }\n"),
    );
    assert_input_error(
        &hetsched(&["simulate", &long, "--out", out]),
        &[
            "long.toml",
            "generator[0]: rate 1e9/s from 0 s to end.max_time_s = 1000 s",
            "about 1e12 tasks arrive",
            "at most 100000000",
        ],
    );
    // Cut to 1 s by --max-time-s: 10^9 tasks expected, refused, naming the value.
    assert_input_error(
        &hetsched(&["simulate", &huge, "--out", out, "--max-time-s", "1"]),
        &["end.max_time_s = 1 s", "about 1e9 tasks arrive"],
    );
    assert!(!Path::new(out).join("table.txt").exists());
}

/// A run stopped at its time limit says how many tasks it left, in the table and the
/// JSON: done + rejected + left = the scenario's tasks.
#[test]
fn a_run_stopped_at_its_time_limit_says_how_many_tasks_it_left() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "fast4-slow4.toml", FAST_SLOW);
    let scenario = write(
        d,
        "poisson.toml",
        &POISSON.replace("[\"cfs\"]", "[\"fcfs\"]"),
    );
    let out = d.join("out");
    let out = out.to_str().unwrap();
    let args = ["simulate", &scenario, "--out", out, "--max-time-s", "100"];
    let table = hetsched(&args);
    assert_eq!(table.status.code(), Some(0));
    let text = String::from_utf8_lossy(&table.stdout).into_owned();
    let mut lines = text.lines().skip(1);
    let head: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(&head[..4], ["policy", "done", "rej", "left"], "{text}");
    let n: Vec<u64> = row[1..4].iter().map(|v| v.parse().unwrap()).collect();
    assert_eq!(n.iter().sum::<u64>(), 50_000, "{text}");
    // About 2,000 arrive in 100 s at 20/s; most of the 50,000 are left.
    assert!((1_500..2_500).contains(&n[0]), "{text}");
    assert!(n[2] > 47_000, "{text}");

    let json = runs(&[&args[..], &["--json"]].concat());
    assert_eq!(json[0]["completed"].as_u64(), Some(n[0]));
    assert_eq!(json[0]["unfinished"].as_u64(), Some(n[2]));
    // The CSV has a row per task arrived: those done with their end, those running at
    // the limit (some of the left) without.
    let csv = std::fs::read_to_string(Path::new(out).join("tasks-fcfs.csv")).unwrap();
    let ends: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(4).unwrap())
        .collect();
    assert_eq!(ends.iter().filter(|e| !e.is_empty()).count() as u64, n[0]);
    let running = ends.iter().filter(|e| e.is_empty()).count() as u64;
    assert!(running <= 8, "{running} running at 100 s on 8 cores");
}

/// Ctrl-C stops a run within moments (not at its end: one task of 10^6 s under cfs, some
/// 1.7 × 10^8 engine events), exit 130, one line saying where it stopped and what the
/// output directory holds, no temporary or truncated file left.
#[test]
fn ctrl_c_stops_a_run_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let scenario = write(
        d,
        "long.toml",
        "machine = \"ding\"\npolicies = [\"fcfs\", \"cfs\"]\n[[task]]\nwork = 1e6\n",
    );
    let out = d.join("out");
    let child = Command::new(env!("CARGO_BIN_EXE_hetsched"))
        .args(["simulate", &scenario, "--out", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // cfs's run has started once its CSV's temporary is there (fcfs's is complete).
    common::wait_until("the cfs run writes its CSV", || {
        std::fs::read_dir(&out).is_ok_and(|entries| {
            entries.filter_map(|e| e.ok()).any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".tasks-cfs.csv")
            })
        })
    });
    std::thread::sleep(Duration::from_millis(300));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let sent = Instant::now();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let result = child.wait_with_output().unwrap();
    let waited = sent.elapsed();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(130), "{stderr}");
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    for needle in [
        "long.toml: cfs: interrupted at",
        "not written: tasks-cfs.csv, table.txt, metrics.json",
        "complete: tasks-fcfs.csv",
    ] {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr:?}");
    }
    let mut left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["tasks-fcfs.csv"]);
}

/// numa-amp's fallbacks (no counters in the samples, one NUMA node) are said once a
/// process, not once a run: three specs run here, each line appears once.
#[test]
fn numa_amp_says_its_fallbacks_once_a_process() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "one.toml", ONE_CORE);
    let scenario = write(
        d,
        "numa.toml",
        "machine = \"one.toml\"\n\
         policies = [\"numa-amp\", \"numa-amp:slice_ms=1\", \"numa-amp:page_moves=0\"]\n\
         [[task]]\nwork = 0.5\ncount = 3\n",
    );
    let out = d.join("out");
    let result = hetsched(&[
        "simulate",
        &scenario,
        "--summary",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&result.stdout).lines().count(), 5);
    for line in [
        "numa-amp: the machine has 1 NUMA node(s): the NUMA-list and page migration are no-ops",
        "numa-amp: no hardware counters in the samples",
    ] {
        assert_eq!(stderr.matches(line).count(), 1, "{line:?} in {stderr}");
    }
}

/// `hetsched client --help` and each subcommand's help describe `--socket`.
#[test]
fn client_help_describes_the_socket() {
    for args in [&["client", "--help"][..], &["client", "units", "--help"]] {
        let out = hetsched(args);
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.contains("--socket <SOCKET>"))
            .unwrap_or_else(|| panic!("{args:?}: no --socket in {text}"));
        assert!(line.contains("The daemon's socket"), "{args:?}: {line}");
    }
}
