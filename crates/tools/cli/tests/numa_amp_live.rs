//! `hetsched daemon --policy numa-amp` placing real `hetsched run` programs on this
//! machine, which has no PMU and one NUMA node: the policy places by capacity and load
//! and says, once each on the daemon's stderr, that it has no counters and that the
//! NUMA-list and page migration are no-ops; the program's agent says that binding its
//! memory to the node a grant names is a no-op here.

mod common;

use common::daemon::Daemon;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_hetsched");

/// A generous bound for anything to happen on a loaded 2-core machine (not a measure).
const PATIENCE: Duration = Duration::from_secs(60);

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < PATIENCE, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `hetsched run -- sh -c 'echo $$; exec sleep 1000'` and the program's pid.
struct Program {
    agent: Child,
    pid: i32,
}

impl Program {
    fn start(d: &Daemon) -> Program {
        Program::start_with(d, &[], Stdio::inherit())
    }

    /// With more `hetsched run` options and its stderr going to `stderr`.
    fn start_with(d: &Daemon, options: &[&str], stderr: Stdio) -> Program {
        let mut agent = Command::new(BIN)
            .args(["run", "--daemon", d.socket.to_str().unwrap()])
            .args(options)
            .args(["--", "sh", "-c", "echo $$; exec sleep 1000"])
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(agent.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        Program {
            agent,
            pid: line.trim().parse().unwrap(),
        }
    }

    /// The CPUs the program may run on (`Cpus_allowed_list`).
    fn cpus(&self) -> Option<String> {
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        let line = text.lines().find(|l| l.starts_with("Cpus_allowed_list:"))?;
        Some(line.split_once(':')?.1.trim().to_string())
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.agent.kill();
        let _ = self.agent.wait();
    }
}

#[test]
fn numa_amp_places_programs_and_says_it_has_no_counters() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("daemon.err");
    let d = Daemon::start_with(
        2,
        0,
        "numa-amp",
        &[],
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    let agent_log = dir.path().join("agent.err");
    let a = Program::start_with(
        &d,
        &["--verbose"],
        Stdio::from(std::fs::File::create(&agent_log).unwrap()),
    );
    let b = Program::start(&d);
    // Equal units, one program each (least share first, then the lowest id).
    wait_until("both units run a program", || {
        d.units().iter().all(|u| u.running.is_some())
    });
    let mut cpus = vec![a.cpus(), b.cpus()];
    cpus.sort();
    assert_eq!(cpus, [Some("0".to_string()), Some("1".to_string())]);
    // The honest fallback, on the daemon's stderr, once each.
    let text = || std::fs::read_to_string(&log).unwrap();
    wait_until("numa-amp says it has no counters", || {
        text().contains("numa-amp: no hardware counters")
    });
    let text = text();
    assert_eq!(
        text.matches("numa-amp: no hardware counters").count(),
        1,
        "{text}"
    );
    assert!(
        text.contains("falling back to capacity- and load-aware placement"),
        "{text}"
    );
    assert_eq!(
        text.matches(
            "numa-amp: the machine has 1 NUMA node(s): the NUMA-list and page migration are no-ops"
        )
        .count(),
        1,
        "{text}"
    );
    // The first grant names the unit's node for the program's memory (first touch):
    // the agent takes it to the process layer, which says, once, that one node makes
    // the binding a no-op.
    let agent_text = std::fs::read_to_string(&agent_log).unwrap();
    assert_eq!(
        agent_text
            .matches("this machine has one NUMA node: memory binding is a no-op")
            .count(),
        1,
        "{agent_text}"
    );
    // The daemon ticked for the policy (its profiling period).
    let out = Command::new(BIN)
        .args(["client", "--socket", d.socket.to_str().unwrap()])
        .args(["stats", "--json"])
        .output()
        .unwrap();
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(stats["ticks"].as_u64() > Some(0), "{stats}");
}
