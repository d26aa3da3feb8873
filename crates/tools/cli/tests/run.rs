//! `hetsched run -- CMD`: unmodified programs as tasks of a real daemon process, with
//! real children. The daemon's machine file has CPU units on this machine's PUs 0 and 1
//! (`[[package]] cores = N` numbers them from 0), so grants are real CPU sets.

mod common;

use common::daemon::Daemon;
use common::{assert_input_error, wait_until};
use hetsched_core::machine::UnitType;
use hetsched_live::client::Client;
use hetsched_live::protocol::{MetaInfo, Reply, UnitInfo};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_hetsched");

/// `hetsched run` against `d` with `args` (options, then `--` and the command).
fn run(d: &Daemon, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(["run", "--daemon", d.socket.to_str().unwrap()])
        .args(args);
    c
}

/// Starts `hetsched run -- sh -c 'echo $$; SCRIPT'` and reads the program's pid.
fn start_program(d: &Daemon, script: &str) -> Program {
    let mut agent = run(d, &["--", "sh", "-c", &format!("echo $$; {script}")])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(agent.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    Program {
        pid: line.trim().parse().unwrap(),
        agent,
        _out: out,
    }
}

/// A `hetsched run` process and its program (which printed its pid first).
struct Program {
    pid: i32,
    agent: Child,
    _out: BufReader<ChildStdout>,
}

impl Program {
    fn signal_agent(&self, signal: Signal) {
        kill(Pid::from_raw(self.agent.id() as i32), signal).unwrap();
    }

    fn wait(&mut self) -> ExitStatus {
        wait_until("hetsched run exits", || {
            self.agent.try_wait().unwrap().is_some()
        });
        self.agent.wait().unwrap()
    }

    /// A line of the program's `/proc/PID/status`, e.g. `Cpus_allowed_list`.
    fn status(&self, field: &str) -> Option<String> {
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        let line = text.lines().find(|l| l.starts_with(&format!("{field}:")))?;
        Some(line.split_once(':')?.1.trim().to_string())
    }

    /// Its state letter (`R`, `S`, `T`, `Z`...) and its user + system CPU ticks.
    fn stat(&self) -> Option<(char, u64)> {
        let text = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).ok()?;
        let f: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
        let ticks = f[11].parse::<u64>().ok()? + f[12].parse::<u64>().ok()?;
        Some((f[0].chars().next()?, ticks))
    }

    fn gone(&self) -> bool {
        self.stat().is_none_or(|(state, _)| state == 'Z')
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.agent.kill();
        let _ = self.agent.wait();
    }
}

fn meta() -> MetaInfo {
    MetaInfo {
        kind: "holder".into(),
        affinity: [(UnitType::Cpu, 1.0)].into_iter().collect(),
        ..MetaInfo::default()
    }
}

/// The one unit of `units` that runs a task, if exactly one does.
fn busy_unit(units: &[UnitInfo]) -> Option<&UnitInfo> {
    let busy: Vec<&UnitInfo> = units.iter().filter(|u| u.running.is_some()).collect();
    (busy.len() == 1).then(|| busy[0])
}

/// How many tasks wait in a queue (the unit's or the policy's central one).
fn queued(d: &Daemon) -> usize {
    let Ok(Reply::Stats { tasks, .. }) = d.client().stats() else {
        panic!("no stats")
    };
    tasks.iter().filter(|t| t.state == "queued").count()
}

#[test]
fn the_program_exit_status_is_hetsched_runs() {
    let d = Daemon::start(2, 0, "fcfs");
    let status = |script: &str| {
        let out = run(&d, &["--", "sh", "-c", script]).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(status("exit 3"), (Some(3), String::new()));
    assert_eq!(status("exit 0"), (Some(0), String::new()));
    // Killed by a signal: 128 + its number, as a shell reports it.
    assert_eq!(status("kill -TERM $$"), (Some(128 + 15), String::new()));
    assert_eq!(status("kill -KILL $$"), (Some(128 + 9), String::new()));
    // Every task ended, and every unit is free again.
    wait_until("both units are idle", || {
        d.units().iter().all(|u| u.running.is_none())
    });
}

#[test]
fn a_missing_command_or_daemon_is_a_one_line_input_error() {
    let d = Daemon::start(1, 0, "fcfs");
    let out = run(&d, &["--", "/nonexistent/hetsched-no-such-program", "x"])
        .output()
        .unwrap();
    assert_input_error(&out, &["/nonexistent/hetsched-no-such-program"]);
    // Nothing was allocated for it.
    let Ok(Reply::Stats { tasks, grants, .. }) = d.client().stats() else {
        panic!("no stats")
    };
    assert_eq!((tasks.len(), grants), (0, 0), "{tasks:?}");

    let dir = tempfile::tempdir().unwrap();
    let nowhere = dir.path().join("no.sock");
    let out = Command::new(BIN)
        .args(["run", "--daemon", nowhere.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert_input_error(&out, &[nowhere.to_str().unwrap(), "start one"]);

    let out = run(&d, &["--check-ms", "0", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = run(&d, &["--type", "fpga", "--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cpu, gpu, opencl, coprocessor"));
    // No unit of the asked type: said by the daemon, and nothing runs.
    let out = run(&d, &["--type", "opencl", "--", "true"])
        .output()
        .unwrap();
    assert_input_error(&out, &["no unit can run task kind \"true\""]);
}

#[test]
fn the_program_runs_on_the_granted_units_cpus() {
    let d = Daemon::start(2, 0, "fcfs");
    let mut holder = d.client();
    let held = holder.alloc(&meta()).unwrap();
    assert_eq!(held.cpus, [0]);
    let mut p = start_program(&d, "exec sleep 1000");
    // The other unit: PU 1, for every thread of the program.
    let units = d.units();
    let unit = units.iter().find(|u| u.id != held.id).unwrap();
    assert!(unit.running.is_some(), "{units:?}");
    assert_eq!(unit.cpus, [1]);
    assert_eq!(p.status("Cpus_allowed_list").as_deref(), Some("1"));
    // SIGTERM to `hetsched run` reaches the program, which ends the task.
    p.signal_agent(Signal::SIGTERM);
    assert_eq!(p.wait().code(), Some(128 + 15));
    assert!(p.gone());
    wait_until("the unit is free", || {
        d.units()
            .iter()
            .find(|u| u.id == unit.id)
            .unwrap()
            .running
            .is_none()
    });
    holder.free(true).unwrap();
}

#[test]
fn removing_its_unit_moves_the_running_program_to_the_other_one() {
    let d = Daemon::start(2, 0, "fcfs");
    let mut p = start_program(&d, "exec sleep 1000");
    let first = busy_unit(&d.units()).unwrap().clone();
    assert_eq!(
        p.status("Cpus_allowed_list"),
        Some(first.cpus[0].to_string())
    );
    d.client().remove_unit(first.id).unwrap();
    // At its next checkpoint the task leaves the unit; its next grant is the other one.
    let other = 1 - first.cpus[0];
    wait_until("the program runs on the other unit's PU", || {
        p.status("Cpus_allowed_list") == Some(other.to_string())
    });
    wait_until("the removed unit is gone", || {
        d.units().iter().all(|u| u.id != first.id)
    });
    let units = d.units();
    assert_eq!(busy_unit(&units).map(|u| u.cpus.clone()), Some(vec![other]));
    wait_until("it was let go on after the move", || {
        p.stat().unwrap().0 == 'S'
    });
    p.signal_agent(Signal::SIGINT);
    assert_eq!(p.wait().code(), Some(128 + 2));
}

#[test]
fn killing_hetsched_run_kills_the_program_and_frees_the_unit() {
    let d = Daemon::start(1, 0, "fcfs");
    let p = start_program(&d, "exec sleep 1000");
    assert!(busy_unit(&d.units()).is_some());
    p.signal_agent(Signal::SIGKILL);
    wait_until("the program is gone", || p.gone());
    wait_until("the unit is free", || d.units()[0].running.is_none());
    // And someone else gets it.
    assert_eq!(d.client().alloc(&meta()).unwrap().id, 0);
}

#[test]
fn a_program_waiting_for_a_unit_has_not_started_and_still_gets_signals() {
    let d = Daemon::start(1, 0, "fcfs");
    let mut holder = d.client();
    holder.alloc(&meta()).unwrap();
    let mut agent = run(&d, &["--", "sh", "-c", "echo started"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the task waits in a queue", || queued(&d) == 1);
    std::thread::sleep(Duration::from_millis(200)); // time it would need to run
    let pid = Pid::from_raw(agent.id() as i32);
    kill(pid, Signal::SIGTERM).unwrap();
    wait_until("hetsched run exits", || agent.try_wait().unwrap().is_some());
    let out = agent.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(128 + 15));
    assert!(out.stdout.is_empty(), "it ran before its grant");
    wait_until("its queue entry is dropped", || queued(&d) == 0);
    holder.free(true).unwrap();
}

/// Killing the daemon (`kill -9`) does the same to every program whatever it was
/// doing (running after its grant, waiting for its first grant, stopped after a yield):
/// by default each goes on unscheduled with a one-line warning and `hetsched run` exits
/// as it did; with `--on-daemon-loss fail` each is killed and `hetsched run` exits 1.
#[test]
fn losing_the_daemon_is_handled_alike_in_every_state() {
    for fail in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let loss: &[&str] = if fail {
            &["--on-daemon-loss", "fail"]
        } else {
            &[]
        };
        // Each program spins until the go file exists, then leaves its marker: no
        // program can finish before the daemon is gone, however slow the machine.
        // fcfs: one runs, one waits for its first grant; cfs: the two time-share the
        // unit, so one is stopped after a yield.
        let go = dir.path().join("go");
        for policy in ["fcfs", "cfs"] {
            let mut d = Daemon::start(1, 0, policy);
            let mut agents = Vec::new();
            for i in 0..2 {
                let marker = dir.path().join(format!("{policy}-{i}"));
                let script = format!(
                    "until [ -e {} ]; do :; done; touch {}",
                    go.display(),
                    marker.display()
                );
                let agent = run(&d, loss)
                    .args(["--", "sh", "-c", &script])
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                agents.push((agent, marker));
                wait_until("the program's task reached the daemon", || {
                    let Ok(Reply::Stats { tasks, .. }) = d.client().stats() else {
                        return false;
                    };
                    tasks.len() == i + 1
                });
            }
            if policy == "cfs" {
                wait_until("a program was stopped by a yield", || {
                    let Ok(Reply::Stats { tasks, .. }) = d.client().stats() else {
                        return false;
                    };
                    tasks.iter().any(|t| t.grants >= 2)
                });
            } else {
                assert_eq!(queued(&d), 1, "the second waits for its first grant");
            }
            d.child.kill().unwrap();
            d.child.wait().unwrap();
            // Each agent's stderr, read as it comes: its first line says it noticed.
            let readers: Vec<_> = agents
                .iter_mut()
                .map(|(agent, _)| {
                    let err = agent.stderr.take().unwrap();
                    let (tx, rx) = std::sync::mpsc::channel();
                    let all = std::thread::spawn(move || {
                        let mut text = String::new();
                        for line in BufReader::new(err).lines() {
                            let line = line.unwrap();
                            let _ = tx.send(());
                            text += &line;
                            text.push('\n');
                        }
                        text
                    });
                    (rx, all)
                })
                .collect();
            for (noticed, _) in &readers {
                noticed
                    .recv_timeout(common::PATIENCE)
                    .expect("the agent noticed the loss");
            }
            // Given the go now: a program that goes on finishes, a killed one cannot.
            std::fs::write(&go, "").unwrap();
            let statuses: Vec<_> = agents
                .iter_mut()
                .map(|(agent, _)| agent.wait().unwrap())
                .collect();
            std::thread::sleep(Duration::from_millis(300));
            for (((_, marker), (_, all)), status) in agents.iter().zip(readers).zip(statuses) {
                let stderr = all.join().unwrap();
                let lines = stderr.trim_end().lines().count();
                assert_eq!(lines, 1, "{policy}, fail {fail}: {stderr}");
                if fail {
                    assert_eq!(status.code(), Some(1), "{stderr}");
                    assert!(stderr.contains("the program was killed"), "{stderr}");
                    assert!(!marker.exists(), "{policy}: the program ran on: {stderr}");
                } else {
                    assert_eq!(status.code(), Some(0), "{stderr}");
                    assert!(stderr.contains("goes on unscheduled"), "{stderr}");
                    assert!(marker.exists(), "{policy}: the program did not finish");
                }
            }
            std::fs::remove_file(&go).unwrap();
        }
    }
}

/// One unit under `cfs`: two busy programs take turns on it. Each is seen stopped
/// (its yield) while the other runs, and both make progress.
#[test]
fn two_programs_time_share_one_unit() {
    time_share_one_unit("cfs");
}

/// The same under `eevdf` (Linux's fair class since 6.6), whose requests are 0.75 ms
/// on one unit: the programs take turns at that pace.
#[test]
fn two_programs_time_share_one_unit_under_eevdf() {
    time_share_one_unit("eevdf");
}

fn time_share_one_unit(policy: &str) {
    let d = Daemon::start(1, 0, policy);
    let mut programs = [
        start_program(&d, "while :; do :; done"),
        start_program(&d, "while :; do :; done"),
    ];
    let mut stopped = [false; 2];
    wait_until("both were stopped once and both ran 0.3 s", || {
        let mut ran = [false; 2];
        for (i, p) in programs.iter().enumerate() {
            let (state, ticks) = p.stat().unwrap();
            stopped[i] |= state == 'T';
            ran[i] = ticks >= 30;
        }
        stopped == [true; 2] && ran == [true; 2]
    });
    // The grant's CPU set is the unit's PU.
    for p in &programs {
        assert_eq!(p.status("Cpus_allowed_list").as_deref(), Some("0"));
    }
    // SIGTERM reaches a stopped program too (with SIGCONT), and both end.
    for p in &mut programs {
        p.signal_agent(Signal::SIGTERM);
        assert_eq!(p.wait().code(), Some(128 + 15));
    }
    wait_until("the unit is idle", || {
        d.units()[0].running.is_none() && queued(&d) == 0
    });
}

#[test]
fn a_signature_and_a_device_are_accepted() {
    let d = Daemon::start(1, 0, "fcfs");
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.lackey");
    let text: String = (0..2_000u64)
        .map(|b| format!("I  00400000,4\n L {:x},8\n", 0x1000_0000 + (b % 500) * 64))
        .collect();
    std::fs::write(&trace, text).unwrap();
    let sig = dir.path().join("sig.json");
    let out = common::hetsched(&[
        "signature",
        "analyze",
        trace.to_str().unwrap(),
        "-o",
        sig.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sig = sig.to_str().unwrap();
    let out = run(
        &d,
        &[
            "--signature",
            sig,
            "--device",
            "cl0",
            "--",
            "sh",
            "-c",
            "exit 5",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"format\":\"something else\"}").unwrap();
    let out = run(&d, &["--signature", bad.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert_input_error(&out, &[bad.to_str().unwrap(), "format"]);
}

/// A machine file may name PUs this machine lacks: a grant of one is bad input, said in
/// one line, and the program never runs.
#[test]
fn a_grant_of_cpus_this_machine_lacks_is_an_input_error() {
    // Units on PUs 0..=top+1; all but the last held, so the program gets PU top+1.
    let top = *hetsched_live::process::own_cpus().unwrap().last().unwrap();
    let d = Daemon::start(top + 2, 0, "fcfs");
    let mut holders: Vec<Client> = (0..=top).map(|_| d.client()).collect();
    for h in &mut holders {
        h.alloc(&meta()).unwrap();
    }
    let out = run(&d, &["--", "sh", "-c", "echo started"])
        .output()
        .unwrap();
    let missing = top + 1;
    assert_input_error(
        &out,
        &[
            &format!("unit {missing} "),
            &format!("CPU {missing}: expected one of the CPUs"),
        ],
    );
    wait_until("its unit is free again", || {
        d.units()
            .iter()
            .all(|u| u.running.is_some() == (u.id <= top))
    });
}

/// The daemon measures a `hetsched run` program: `client stats --json` shows the policy's
/// ticks and the running task's latest sample, with the sources that filled it and
/// without the fields no source on this machine gives (never zeros that look measured).
#[test]
fn stats_show_ticks_and_the_measured_sample_of_a_running_program() {
    let d = Daemon::start(1, 0, "cfs");
    let _program = start_program(&d, "while :; do :; done");
    let stats = || -> serde_json::Value {
        let out = Command::new(BIN)
            .args(["client", "--socket", d.socket.to_str().unwrap()])
            .args(["stats", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let mut last = serde_json::Value::Null;
    wait_until("a measured sample with CPU time and some ticks", || {
        last = stats();
        let sample = &last["tasks"][0]["sample"];
        last["ticks"].as_u64() > Some(0) && sample["busy_ns"].as_u64() > Some(0)
    });
    let task = &last["tasks"][0];
    assert_eq!(task["state"], "running", "{last}");
    let sample = &task["sample"];
    let sources: Vec<&str> = sample["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(sources.contains(&"proc"), "{sample}");
    assert!(sample["run_delay_ns"].is_u64(), "{sample}");
    // Counters are there exactly when the PMU measured them (this VM has none).
    let perf = sources.contains(&"perf");
    for counter in ["instructions", "cycles", "llc_misses"] {
        assert_eq!(sample.get(counter).is_some(), perf, "{counter}: {sample}");
    }
    // The text form says the same in one line per task.
    let text = Command::new(BIN)
        .args(["client", "--socket", d.socket.to_str().unwrap(), "stats"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("ticks ") && text.contains("(proc"), "{text}");
}

/// The daemon's tick count and, per live task, its state and unit.
fn ticks_and_tasks(d: &Daemon) -> (u64, Vec<(String, Option<u32>)>) {
    let Ok(Reply::Stats { ticks, tasks, .. }) = d.client().stats() else {
        panic!("no stats")
    };
    let live = tasks
        .into_iter()
        .filter(|t| t.state != "ended")
        .map(|t| (t.state, t.unit))
        .collect();
    (ticks, live)
}

/// Under `cfs` without its new-idle pull, two busy programs sharing unit 0 while unit 1
/// idles are balanced by the daemon's periodic tick within two balance periods, and the
/// move is applied to the program: its CPU affinity becomes unit 1's PU.
#[test]
fn a_live_cfs_tick_balances_two_programs_sharing_a_unit() {
    // A long period, so that the test's own delays (seconds, on a loaded machine) are
    // small against it; counted in ticks, not measured in wall-clock time.
    let d = Daemon::start(2, 0, "cfs:newidle=0,balance_ms=1500");
    let a = start_program(&d, "while :; do :; done"); // unit 0 (fewest tasks, lowest id)
    let mut b = start_program(&d, "exec sleep 1000"); // unit 1
                                                      // Queued on unit 0 behind `a`; it prints its pid once `a` yields to it.
    let c = start_program(&d, "while :; do :; done");
    for p in [&a, &c] {
        assert_eq!(p.status("Cpus_allowed_list").as_deref(), Some("0"));
    }
    assert_eq!(b.status("Cpus_allowed_list").as_deref(), Some("1"));
    // Counts 2:1 differ by one: no tick moves anything yet.
    let (before, tasks) = ticks_and_tasks(&d);
    assert_eq!(
        tasks.iter().filter(|t| t.1 == Some(0)).count(),
        2,
        "{tasks:?}"
    );
    // `b` ends: unit 1 idles while `a` and `c` take turns on unit 0.
    b.signal_agent(Signal::SIGTERM);
    assert_eq!(b.wait().code(), Some(128 + 15));
    let mut after = 0;
    wait_until("one of the two runs on unit 1", || {
        let (ticks, tasks) = ticks_and_tasks(&d);
        after = ticks;
        tasks.contains(&("running".to_string(), Some(1)))
    });
    // The tick that moved it is at most two after the last count taken before `b`
    // ended (`after` counts ticks until this test saw the move, so it can only be more).
    assert!(
        after > before && after - before <= 2,
        "moved after {} ticks",
        after - before
    );
    // Applied to the process: one program now runs on PU 1, the other stays on PU 0.
    let mut cpus = [String::new(), String::new()];
    wait_until("the programs' affinities are PUs 0 and 1", || {
        cpus = [&a, &c].map(|p| p.status("Cpus_allowed_list").unwrap_or_default());
        cpus.contains(&"0".to_string()) && cpus.contains(&"1".to_string())
    });
    // And it runs there: it was let go on (not left stopped) and gains CPU time.
    let moved = if cpus[0] == "1" { &a } else { &c };
    let ran = moved.stat().unwrap().1;
    wait_until("the moved program ran 0.3 s more", || {
        moved.stat().unwrap().1 >= ran + 30
    });
}
