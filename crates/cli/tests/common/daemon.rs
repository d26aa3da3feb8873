//! A `hetsched daemon` process over a machine file of CPU units (on this machine's PUs
//! 0, 1, ...: `[[package]] cores = N` numbers them from 0) and OpenCL units, for the
//! tests that talk to a real daemon.

use hetsched_live::client::Client;
use hetsched_live::protocol::UnitInfo;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_hetsched");

pub struct Daemon {
    pub child: Child,
    pub socket: PathBuf,
    /// Holds the machine file and the socket's directory.
    pub _dir: tempfile::TempDir,
}

impl Daemon {
    /// Starts a daemon over a machine file with `cpus` CPU units and `opencl` OpenCL units.
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
        mut command: Command,
        cpus: u32,
        opencl: u32,
        policy: &str,
        extra: &[&str],
        stderr: Stdio,
    ) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let machine = dir.path().join("m.toml");
        let mut text = format!("name = \"test\"\n[[package]]\ncores = {cpus}\n");
        if opencl > 0 {
            text +=
                &format!("[[accelerator]]\ntype = \"opencl\"\nname = \"cl\"\ncount = {opencl}\n");
        }
        std::fs::write(&machine, text).unwrap();
        let socket = dir.path().join("run/daemon.sock");
        let child = command
            .args([
                "daemon",
                "--socket",
                socket.to_str().unwrap(),
                "--machine",
                machine.to_str().unwrap(),
                "--policy",
                policy,
            ])
            .args(extra)
            .stderr(stderr)
            .spawn()
            .unwrap();
        let start = Instant::now();
        while UnixStream::connect(&socket).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "daemon did not start"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Daemon {
            child,
            socket,
            _dir: dir,
        }
    }

    pub fn client(&self) -> Client {
        Client::connect(&self.socket, "test").unwrap()
    }

    /// The daemon's units, as a fresh client sees them.
    pub fn units(&self) -> Vec<UnitInfo> {
        self.client().list_units().unwrap()
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), sig).unwrap();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
