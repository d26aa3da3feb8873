//! `hetsched slow-cpu`: a real real-time load on a real CPU, measured from both sides —
//! the load's own CPU time, and what a program spinning on that CPU gets.

use std::process::Command;

fn hetsched() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hetsched"))
}

/// A Python program pinned to CPU 1 that spins for 1.5 s of wall time and prints the
/// fraction of it it ran.
const VICTIM: &str = "import os, time
os.sched_setaffinity(0, {1})
t0 = time.monotonic(); c0 = time.process_time()
while time.monotonic() - t0 < 1.5:
    pass
print(f'{(time.process_time() - c0) / (time.monotonic() - t0):.4f}')";

/// The fraction the load reported taking, from its last stderr line.
fn load_took(stderr: &str) -> f64 {
    let line = stderr.lines().last().unwrap_or_default();
    let took = line
        .split(" and took ")
        .nth(1)
        .unwrap_or_else(|| panic!("{stderr}"));
    took.split(' ').next().unwrap().parse().unwrap()
}

/// Whether this system runs the load: two CPUs to use and real-time priority. Says why
/// not when it does not (a CI container without CAP_SYS_NICE).
fn can_slow_cpu_1() -> bool {
    let probe = hetsched()
        .args(["slow-cpu", "--cpu", "1", "--leave", "0.9", "--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&probe.stderr);
    if probe.status.success() {
        return true;
    }
    assert!(
        stderr.contains("needs real-time priority") || stderr.contains("--cpu 1: not a CPU"),
        "{stderr}"
    );
    eprintln!("skipped, this system cannot slow CPU 1: {stderr}");
    false
}

#[test]
fn a_slowed_cpu_leaves_the_stated_fraction_and_the_load_takes_the_rest() {
    if !can_slow_cpu_1() {
        return;
    }
    for leave in [0.25, 0.5] {
        let out = hetsched()
            .args([
                "slow-cpu",
                "--cpu",
                "1",
                "--leave",
                &leave.to_string(),
                "--",
            ])
            .args(["python3", "-c", VICTIM])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        // The load, at real-time priority, is not kept from its share by normal tasks.
        let took = load_took(&stderr);
        assert!(
            (took - (1.0 - leave)).abs() < 0.05,
            "leave {leave}: the load took {took}\n{stderr}"
        );
        // The program on that CPU gets at most what is left (less when other tasks of
        // this machine share the CPU too).
        let got: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert!(
            got > 0.0 && got <= leave + 0.05,
            "leave {leave}: the program got {got}\n{stderr}"
        );
        assert!(
            stderr.contains(&format!("capacity {:.0} of 1024", leave * 1024.0)),
            "{stderr}"
        );
    }
}

#[test]
fn it_exits_as_the_command_did() {
    if !can_slow_cpu_1() {
        return;
    }
    let out = hetsched()
        .args([
            "slow-cpu", "--cpu", "1", "--leave", "0.5", "--", "sh", "-c", "exit 3",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let out = hetsched()
        .args([
            "slow-cpu",
            "--cpu",
            "1",
            "--leave",
            "0.5",
            "--",
            "sh",
            "-c",
            "kill -TERM $$",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(128 + 15));
}

#[test]
fn bad_input_is_refused_with_exit_2_naming_the_option_and_its_range() {
    for (args, says) in [
        (
            vec!["--cpu", "0", "--leave", "0.05"],
            "--leave 0.05: the fraction of the CPU left to other tasks must be in [0.1, 1)",
        ),
        (vec!["--cpu", "0", "--leave", "1"], "--leave 1:"),
        (
            vec!["--cpu", "0", "--leave", "0.5", "--period-ms", "0"],
            "--period-ms 0: must be in [1, 100]",
        ),
        (
            vec!["--cpu", "4096", "--leave", "0.5"],
            "--cpu 4096: not a CPU this process may run on",
        ),
    ] {
        let out = hetsched()
            .arg("slow-cpu")
            .args(&args)
            .args(["--", "true"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    // A command that cannot run names itself.
    let out = hetsched()
        .args([
            "slow-cpu",
            "--cpu",
            "0",
            "--leave",
            "0.5",
            "--",
            "/nonexistent/program",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.contains("needs real-time priority") {
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("/nonexistent/program: cannot run it"),
            "{stderr}"
        );
    }
}
