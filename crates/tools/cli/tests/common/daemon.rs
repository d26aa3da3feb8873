//! The daemon harness of `crates/framework/live/tests` (one copy, included from there), with the
//! daemon started as the `hetsched daemon` binary: for tests of the command itself (its
//! options, signals, trace and messages) and of programs that talk to it.

#[path = "../../../../framework/live/tests/common/daemon.rs"]
mod shared;

pub use shared::*;
use std::process::{Command, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_hetsched");

impl Daemon {
    /// Starts `hetsched daemon` over a machine file with `cpus` CPU units and `opencl`
    /// OpenCL units.
    pub fn start(cpus: u32, opencl: u32, policy: &str) -> Daemon {
        Self::start_with(cpus, opencl, policy, &[], Stdio::null())
    }

    pub fn start_with(
        cpus: u32,
        opencl: u32,
        policy: &str,
        extra: &[&str],
        stderr: Stdio,
    ) -> Daemon {
        Self::start_in(Command::new(BIN), cpus, opencl, policy, extra, stderr)
    }

    /// `command` runs the daemon binary (e.g. through a shell that sets limits first).
    pub fn start_in(
        command: Command,
        cpus: u32,
        opencl: u32,
        policy: &str,
        extra: &[&str],
        stderr: Stdio,
    ) -> Daemon {
        let (dir, machine) = machine_dir(cpus, opencl);
        let machine = machine.to_str().unwrap().to_string();
        Self::binary(command, dir, &machine, policy, extra, stderr)
    }

    /// A daemon over the machine file `text`.
    pub fn start_on(text: &str, policy: &str) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let machine = dir.path().join("m.toml");
        std::fs::write(&machine, text).unwrap();
        let machine = machine.to_str().unwrap().to_string();
        Self::binary(Command::new(BIN), dir, &machine, policy, &[], Stdio::null())
    }

    /// A daemon over this machine's own units (`--machine live`: PUs and the OpenCL
    /// devices found, loading the OpenCL driver).
    pub fn start_live(policy: &str, extra: &[&str], stderr: Stdio) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        Self::binary(Command::new(BIN), dir, "live", policy, extra, stderr)
    }

    pub fn binary(
        mut command: Command,
        dir: tempfile::TempDir,
        machine: &str,
        policy: &str,
        extra: &[&str],
        stderr: Stdio,
    ) -> Daemon {
        command
            // Its performance models (dmda's) kept in its own directory, not the user's.
            .env("HETSCHED_HOME", dir.path())
            .args(["daemon", "--socket", socket_in(&dir).to_str().unwrap()])
            .args(["--machine", machine, "--policy", policy])
            .args(extra)
            .stderr(stderr);
        Self::spawn(command, dir)
    }
}
