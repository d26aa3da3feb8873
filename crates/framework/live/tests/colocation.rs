//! A daemon and its clients on one CPU: there each side yields the CPU to the other
//! instead of polling (see `shm`), and no request or wake-up may be lost on the way,
//! whether a client waits in a queue (it sleeps in `futex`), the daemon sleeps between
//! requests (the client rings), or the request travels on the socket.

use hetsched_core::machine::{UnitGranularity, UnitType};
use hetsched_live::arbiter::Arbiter;
use hetsched_live::client::{Client, Transport};
use hetsched_live::protocol::{MetaInfo, Reply};
use hetsched_live::{devices, server};
use hetsched_util::host::pin_current_thread;
use hetsched_worker::CpuMask;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// Far beyond what the round trips need even on a loaded machine: reached only if a
/// wake-up was lost and something sleeps for ever.
const HANG: Duration = Duration::from_secs(300);

/// A daemon with `units` CPU units, its thread pinned to `cpu`.
struct Daemon {
    stop: server::StopHandle,
    thread: std::thread::JoinHandle<()>,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Daemon {
    fn start(units: u32, cpu: usize) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("daemon.sock");
        let path = socket.clone();
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            pin_current_thread(&[cpu]).unwrap();
            let text = format!("name = \"test\"\n[[package]]\ncores = {units}\n");
            let mut machine = hetsched_topology::machine_file::parse(&text, "test").unwrap();
            machine.derive_units(UnitGranularity::Pu);
            let index = devices::described(&machine);
            let policy = hetsched_policies::build("fcfs", 0).unwrap();
            let mut daemon = server::Daemon::bind(&path, Arbiter::new(machine, index, policy))
                .expect("the daemon binds");
            tx.send(daemon.stop_handle()).unwrap();
            daemon.run().expect("the daemon runs until stopped");
        });
        let stop = rx.recv().expect("the daemon started");
        Daemon {
            stop,
            thread,
            socket,
            _dir: dir,
        }
    }

    fn grants(&self) -> u64 {
        let mut c = Client::connect(&self.socket, "stats").unwrap();
        match c.stats().unwrap() {
            Reply::Stats { grants, .. } => grants,
            other => panic!("expected stats, got {other:?}"),
        }
    }

    fn stop(self) {
        self.stop.stop();
        self.thread.join().expect("the daemon thread ends cleanly");
    }
}

fn meta() -> MetaInfo {
    MetaInfo {
        kind: "test".into(),
        affinity: [(UnitType::Cpu, 1.0)].into_iter().collect(),
        weight: 1024,
        ..MetaInfo::default()
    }
}

/// Runs one client thread per entry of `clients` (its CPU and transport), each doing
/// `rounds` alloc+free pairs; fails if one errs or they do not all finish.
fn run_clients(socket: &Path, clients: &[(usize, Transport)], rounds: usize) {
    let (tx, rx) = mpsc::channel();
    for (i, &(cpu, transport)) in clients.iter().enumerate() {
        let (tx, socket) = (tx.clone(), socket.to_path_buf());
        std::thread::spawn(move || {
            let result = (|| -> hetsched_core::Result<()> {
                pin_current_thread(&[cpu])?;
                let mut c = Client::connect_with(&socket, "test", transport)?;
                for _ in 0..rounds {
                    c.alloc(&meta())?;
                    c.free(true)?;
                }
                Ok(())
            })();
            let _ = tx.send((i, result));
        });
    }
    for _ in clients {
        match rx.recv_timeout(HANG) {
            Ok((_, Ok(()))) => {}
            Ok((i, Err(e))) => panic!("client {i} {:?}: {e}", clients[i]),
            Err(_) => panic!("a client did not finish in {HANG:?}: a lost wake-up"),
        }
    }
}

#[test]
fn clients_on_the_daemons_cpu_lose_no_request_on_any_transport() {
    let cpu = CpuMask::current().unwrap().cpus()[0];
    // One unit for four clients: most allocs wait in the queue for another's free.
    let daemon = Daemon::start(1, cpu);
    let clients = [
        (cpu, Transport::SharedPage),
        (cpu, Transport::SharedPage),
        (cpu, Transport::CompactSocket),
        (cpu, Transport::Json),
    ];
    let rounds = 1000;
    run_clients(&daemon.socket, &clients, rounds);
    assert_eq!(daemon.grants(), (clients.len() * rounds) as u64);
    // Alone with the daemon, a client's every request is answered at once.
    run_clients(&daemon.socket, &clients[..1], 5 * rounds);
    assert_eq!(
        daemon.grants(),
        (clients.len() * rounds + 5 * rounds) as u64
    );
    daemon.stop();
}

#[test]
fn clients_beside_and_apart_from_the_daemon_share_it() {
    let cpus = CpuMask::current().unwrap().cpus();
    let (first, last) = (cpus[0], cpus[cpus.len() - 1]);
    let daemon = Daemon::start(2, first);
    let clients = [
        (first, Transport::SharedPage),
        (last, Transport::SharedPage),
        (first, Transport::SharedPage),
        (last, Transport::CompactSocket),
    ];
    let rounds = 1000;
    run_clients(&daemon.socket, &clients, rounds);
    assert_eq!(daemon.grants(), (clients.len() * rounds) as u64);
    daemon.stop();
}
