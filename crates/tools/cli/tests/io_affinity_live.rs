//! `hetsched run --device DEV` under a real daemon running `io-affinity`: the program is
//! granted a CPU of the device's NUMA node. The daemon's machine file has two packages
//! of one core each (this machine's PUs 0 and 1), one NUMA node per package, and a disk
//! on node 1, so the right grant is PU 1 whatever this machine's own layout.

mod common;

use common::daemon::Daemon;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_hetsched");

fn daemon(policy: &str) -> Daemon {
    let dir = tempfile::tempdir().unwrap();
    let machine = dir.path().join("m.toml");
    std::fs::write(
        &machine,
        "name = \"two-nodes\"\n[[package]]\ncores = 1\n[[package]]\ncores = 1\n\
         [[io_device]]\nkind = \"block\"\nname = \"testdisk\"\nnuma_node = 1\n",
    )
    .unwrap();
    let machine = machine.to_str().unwrap().to_string();
    Daemon::binary(Command::new(BIN), dir, &machine, policy, &[], Stdio::null())
}

/// Runs `grep Cpus_allowed_list` under `hetsched run --verbose`, returning the
/// program's CPU list and the agent's stderr.
fn run(d: &Daemon, extra: &[&str]) -> (String, String) {
    let out = Command::new(BIN)
        .args(["run", "--verbose", "--daemon", d.socket.to_str().unwrap()])
        .args(extra)
        .args(["--", "grep", "Cpus_allowed_list", "/proc/self/status"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let cpus = stdout.split(':').nth(1).unwrap_or("").trim().to_string();
    (cpus, stderr)
}

#[test]
fn an_io_task_is_granted_a_cpu_of_its_device_node() {
    let d = daemon("io-affinity");
    // Twice, so that the first grant is not a lucky least-loaded pick (both idle: the
    // lowest id, PU 0, would win without the device).
    for _ in 0..2 {
        let (cpus, stderr) = run(&d, &["--device", "testdisk"]);
        assert_eq!(cpus, "1", "{stderr}");
        assert!(stderr.contains("granted unit 1"), "{stderr}");
        // The daemon's machine has two nodes; a host with one cannot bind to node 1:
        // the program runs on, and the agent says why its memory stays.
        if hetsched_live::process::numa_nodes() == [0] {
            assert!(
                stderr.contains("node 1, which this machine does not have"),
                "{stderr}"
            );
        }
    }
    // Without a device, the least-loaded unit with the lowest id.
    let (cpus, _) = run(&d, &[]);
    assert_eq!(cpus, "0");
}

#[test]
fn a_device_path_without_a_block_device_is_an_input_error() {
    let d = daemon("io-affinity");
    let out = Command::new(BIN)
        .args(["run", "--daemon", d.socket.to_str().unwrap()])
        .args(["--device", "/proc/self/status", "--", "true"])
        .output()
        .unwrap();
    common::assert_input_error(&out, &["--device /proc/self/status", "no block device"]);
}
