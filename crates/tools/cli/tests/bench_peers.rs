//! The benchmarks' peers, real ones (`make deps` installs SimGrid and StarPU, `bash
//! scripts/venv.sh` SimPy into the project's `.venv`): `hetsched bench peers` with
//! SimGrid's S4U program compiled against the system's libsimgrid and SimPy under
//! `$PYTHON`, else `.venv/bin/python` — on one small bag of tasks every simulator must make hetsched's schedule (the
//! bench checks the completed tasks, mean turnaround and makespan agree, and fails
//! otherwise) — and `hetsched bench daemon` ending with StarPU's overhead examples beside
//! the daemon's figures. A peer that cannot run is named with what it needs, not an
//! error.

use std::path::Path;
use std::process::{Command, Output};

fn peers(out: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hetsched"));
    c.args([
        "bench",
        "peers",
        "--tasks",
        "3000",
        "--packages",
        "2",
        "--cores",
        "4",
    ])
    .args(["--repeat", "1", "--out"])
    .arg(out);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The Python SimPy runs under: `$PYTHON` (what `make test` sets), else the project's
/// `.venv` if made, else the peer's own default.
fn python() -> Vec<(&'static str, String)> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../.venv/bin/python");
    match std::env::var("PYTHON") {
        Ok(_) => vec![],
        Err(_) if venv.exists() => vec![("PYTHON", venv.display().to_string())],
        Err(_) => vec![],
    }
}

#[test]
fn simgrid_and_simpy_make_hetscheds_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let python = python();
    let env: Vec<(&str, &str)> = python.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let o = peers(dir.path(), &env);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("outputs agree"), "{t}");
    for peer in ["SimGrid (S4U) 3.", "SimPy 4."] {
        let line = t.lines().find(|l| l.starts_with(peer)).unwrap_or_else(|| {
            panic!("no line for {peer} (run `make deps` and `bash scripts/venv.sh`):\n{t}")
        });
        assert!(
            line.contains("hetsched") && line.contains("x (engine)"),
            "{line}"
        );
    }
    // The same mean turnaround printed on every simulator's line (the bench checks it to
    // 1e-6; printed to the nanosecond, all four lines show one value).
    let means: Vec<&str> = t
        .lines()
        .filter(|l| l.contains(" s CPU "))
        .filter_map(|l| l.split("mean turnaround ").nth(1))
        .filter_map(|r| r.split_whitespace().next())
        .collect();
    assert_eq!(means.len(), 4, "{t}");
    assert!(means.iter().all(|m| *m == means[0]), "{means:?}");
}

#[test]
fn a_peer_that_cannot_run_is_named_with_what_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let o = peers(
        dir.path(),
        &[("PYTHON", "/nonexistent/python3"), ("CXX", "/bin/false")],
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("SimPy") && t.contains("not run here: needs /nonexistent/python3 with SimPy"),
        "{t}"
    );
    assert!(
        t.contains(
            "not run here: needs a C++ compiler and SimGrid (apt-get install g++ libsimgrid-dev)"
        ),
        "{t}"
    );
    // hetsched's own rows are still there.
    assert!(t.contains("hetsched engine + metrics"), "{t}");
}

#[test]
fn absurd_workloads_are_refused_naming_the_flag_and_range() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, value) in [("--load", "0"), ("--mean-work", "-1"), ("--load", "inf")] {
        let o = Command::new(env!("CARGO_BIN_EXE_hetsched"))
            .args(["bench", "peers", &format!("{flag}={value}"), "--out"])
            .arg(dir.path())
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{t}");
        assert!(t.contains(flag) && t.contains("a finite number > 0"), "{t}");
    }
}

/// `hetsched bench daemon`, small, pinned apart only, with StarPU's examples of 500 tasks.
fn daemon_bench(env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hetsched"));
    c.args(["bench", "daemon", "--round-trips", "200", "--clients", "2"])
        .args([
            "--batch-tasks",
            "2000",
            "--placement",
            "apart",
            "--starpu-tasks",
            "500",
        ]);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn the_daemon_bench_ends_with_starpus_overhead_examples_beside_it() {
    let o = daemon_bench(&[]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("beside StarPU 1.3"), "{t}");
    for example in [
        "sync_tasks_overhead",
        "async_tasks_overhead",
        "tasks_overhead",
    ] {
        let line = t
            .lines()
            .find(|l| l.contains(&format!("({example} -i 500)")))
            .unwrap_or_else(|| panic!("no {example} line (run `make deps`):\n{t}"));
        let us: f64 = line
            .split("): ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no time per task: {line}"));
        assert!(us > 0.0 && us < 1e6, "{line}");
    }
    // Our own figures beside StarPU's, where both were measured.
    assert!(
        t.contains("x hetsched's alloc+free round trip pinned apart"),
        "{t}"
    );
    assert!(t.contains("hetsched batched, pinned apart:"), "{t}");
}

#[test]
fn without_starpus_examples_the_daemon_bench_says_what_it_needs() {
    let o = daemon_bench(&[("STARPU_EXAMPLES", "/nonexistent")]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains(
            "beside StarPU: not run here: needs StarPU's examples (apt-get install starpu-examples"
        ),
        "{t}"
    );
}
