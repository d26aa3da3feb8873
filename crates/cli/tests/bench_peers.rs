//! `hetsched bench peers` with the real peers (SimGrid's S4U program compiled against
//! the system's libsimgrid, SimPy under python3; `make deps` installs both): on one small
//! bag of tasks every simulator must make hetsched's schedule (the bench checks the
//! completed tasks, mean turnaround and makespan agree, and fails otherwise), and a peer
//! that cannot run is named with what it needs, not an error.

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

#[test]
fn simgrid_and_simpy_make_hetscheds_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let o = peers(dir.path(), &[]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("outputs agree"), "{t}");
    for peer in ["SimGrid (S4U) 3.", "SimPy 4."] {
        let line = t
            .lines()
            .find(|l| l.starts_with(peer))
            .unwrap_or_else(|| panic!("no line for {peer} (run `make deps`):\n{t}"));
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
