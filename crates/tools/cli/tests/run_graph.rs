//! `hetsched run-graph FILE`: a graph of real programs under a real daemon process,
//! each task an agent process (`hetsched run --graph-task`), files passed between them
//! through the working directory, as `make -j` would.

mod common;

use common::daemon::{Daemon, BIN};
use std::process::{Command, Output};

/// A diamond: `a` writes a.txt; `b` and `c` read it; `d` reads what both wrote.
fn diamond(b: &str) -> String {
    format!(
        r#"digraph diamond {{
    a [command = "echo a > a.txt"];
    b [command = "{b}"];
    c [command = "cat a.txt > c.txt"];
    d [command = "cat b.txt c.txt > d.txt", kind = "join"];
    a -> b [bytes = 2]; a -> c [bytes = 2];
    b -> d; c -> d;
}}"#
    )
}

fn run_graph(d: &Daemon, dir: &std::path::Path, graph: &str, extra: &[&str]) -> Output {
    std::fs::write(dir.join("g.dot"), graph).unwrap();
    Command::new(BIN)
        .current_dir(dir)
        .args(["run-graph", "g.dot", "--daemon", d.socket.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_diamond_of_programs_runs_in_dependency_order_and_writes_its_record() {
    let d = Daemon::start(2, 0, "heft");
    let dir = tempfile::tempdir().unwrap();
    let out = run_graph(
        &d,
        dir.path(),
        &diamond("cat a.txt > b.txt; echo b >> b.txt"),
        &["--out", "rec"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("4 tasks: 4 succeeded, 0 failed, 0 not run; makespan "),
        "{stdout}"
    );
    assert!(stderr.contains("[4/4] d: done in "), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("d.txt")).unwrap(),
        "a\nb\na\n"
    );
    let rec: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("rec/run-graph.json")).unwrap(),
    )
    .unwrap();
    let task = |name: &str| {
        rec["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()
            .clone()
    };
    let start = |name: &str| task(name)["start_s"].as_f64().unwrap();
    let end = |name: &str| task(name)["end_s"].as_f64().unwrap();
    for (before, after) in [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")] {
        assert!(
            end(before) <= start(after),
            "{before} ends before {after} starts: {rec}"
        );
    }
    assert_eq!(task("d")["kernel"], "join");
    assert!(
        rec["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["status"] == 0),
        "{rec}"
    );
}

#[test]
fn a_failed_task_stops_what_depends_on_it_and_the_run_fails() {
    let d = Daemon::start(2, 0, "eager");
    let dir = tempfile::tempdir().unwrap();
    let out = run_graph(&d, dir.path(), &diamond("exit 3"), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("b: FAILED (status 3)"), "{stderr}");
    assert!(stderr.contains("task \"b\" failed (status 3)"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("4 tasks: 2 succeeded, 1 failed, 1 not run"),
        "{stdout}"
    );
    assert!(!dir.path().join("d.txt").exists());
    // The daemon ends the graph when its declaring connection closes: another may run
    // (once the daemon has seen the close).
    common::wait_until("a second graph runs", || {
        let out = run_graph(&d, dir.path(), &diamond("cat a.txt > b.txt"), &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() || stderr.contains("one graph at a time"),
            "{stderr}"
        );
        out.status.success()
    });
}

#[test]
fn a_task_without_a_command_is_refused_before_anything_runs() {
    let d = Daemon::start(1, 0, "eager");
    let dir = tempfile::tempdir().unwrap();
    let out = run_graph(&d, dir.path(), "digraph g { a [runtime = 1]; }", &[]);
    common::assert_input_error(&out, &["g.dot", "task \"a\" has no command"]);
}

/// A WfFormat workflow as `wfcommons` writes it: each task's `command` (program and
/// arguments, run without a shell) in `workflow.execution.tasks`; files as edges.
#[test]
fn a_wfformat_workflow_runs_its_commands_in_order() {
    let d = Daemon::start(2, 0, "dmda");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.txt"), "data\n").unwrap();
    let wf = r#"{"name": "w", "schemaVersion": "1.5", "workflow": {
        "specification": {
            "tasks": [
                {"name": "copy", "id": "second", "parents": ["first"], "inputFiles": ["mid"], "outputFiles": ["out"]},
                {"name": "copy", "id": "first", "parents": [], "inputFiles": ["in"], "outputFiles": ["mid"]}
            ],
            "files": [{"id": "in", "sizeInBytes": 5}, {"id": "mid", "sizeInBytes": 5}, {"id": "out", "sizeInBytes": 5}]
        },
        "execution": {"makespanInSeconds": 1, "tasks": [
            {"id": "first", "runtimeInSeconds": 0.1, "command": {"program": "cp", "arguments": ["in.txt", "mid.txt"]}},
            {"id": "second", "runtimeInSeconds": 0.1, "command": {"program": "cp", "arguments": ["mid.txt", "out.txt"]}}
        ]}}}"#;
    std::fs::write(dir.path().join("w.json"), wf).unwrap();
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args([
            "run-graph",
            "w.json",
            "--daemon",
            d.socket.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "data\n"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.find("first: done").unwrap() < stderr.find("second: done").unwrap(),
        "{stderr}"
    );
}
