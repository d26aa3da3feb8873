//! The live crate's daemon harness: the daemon is this crate's library serving in a
//! child process (a real process with its own descriptors and memory, a real socket),
//! which is this test binary run again with [`CHILD`] set. Each test file that starts
//! daemons has the test [`serve_if_child`] runs in (`daemon_process!()`).

#[allow(dead_code)] // not every test file uses every helper
pub mod daemon;

use daemon::{machine_dir, socket_in, Daemon};
use hetsched_core::machine::UnitGranularity;
use hetsched_live::arbiter::Arbiter;
use hetsched_live::{devices, server};
use std::process::{Command, Stdio};

/// Set in a child that is to serve: the policy spec.
const CHILD: &str = "HETSCHED_TEST_DAEMON_POLICY";
/// The child's machine file and socket.
const MACHINE: &str = "HETSCHED_TEST_DAEMON_MACHINE";
const SOCKET: &str = "HETSCHED_TEST_DAEMON_SOCKET";

/// The test a daemon child runs (ignored, so that a normal run skips it): it serves
/// until killed.
#[macro_export]
macro_rules! daemon_process {
    () => {
        #[test]
        #[ignore = "the harness's daemon process"]
        fn daemon_process() {
            common::serve_if_child();
        }
    };
}

/// In a child started by [`Daemon::start`]: serves until killed, then exits.
pub fn serve_if_child() {
    let Ok(policy) = std::env::var(CHILD) else {
        return;
    };
    let var = |name| std::env::var(name).unwrap();
    let machine = hetsched_topology::load(&var(MACHINE), UnitGranularity::Pu).unwrap();
    let index = devices::described(&machine);
    let policy = hetsched_policies::build(&policy, 0).unwrap();
    let arbiter = Arbiter::new(machine, index, policy);
    let mut d = server::Daemon::bind(std::path::Path::new(&var(SOCKET)), arbiter).unwrap();
    d.run().unwrap();
    std::process::exit(0);
}

impl Daemon {
    /// A daemon child over a machine file with `cpus` CPU units and `opencl` OpenCL units.
    pub fn start(cpus: u32, opencl: u32, policy: &str) -> Daemon {
        Self::start_in(
            Command::new(std::env::current_exe().unwrap()),
            cpus,
            opencl,
            policy,
        )
    }

    /// `command` runs this test binary (e.g. through a shell that sets limits first).
    pub fn start_in(mut command: Command, cpus: u32, opencl: u32, policy: &str) -> Daemon {
        let (dir, machine) = machine_dir(cpus, opencl);
        command
            .args(["--exact", "daemon_process", "--ignored", "--nocapture"])
            .env(CHILD, policy)
            .env(MACHINE, machine)
            .env(SOCKET, socket_in(&dir))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Self::spawn(command, dir)
    }
}
