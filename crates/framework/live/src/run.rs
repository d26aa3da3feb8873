//! `hetsched run -- CMD`: an unmodified program as a task of the daemon.
//!
//! A program that does not link the client library never asks for a unit, so an agent
//! asks for it: it holds the daemon connection of one task and applies each decision to
//! the program from outside ([`crate::process`]):
//!
//! - the program is started stopped at its first instruction, so that its pid travels
//!   with the first `alloc` (the daemon's sampler will read it) and it runs no code
//!   before its grant;
//! - a grant becomes the CPU set of all its threads (a CPU unit's `cpus`; an
//!   accelerator grant leaves it on every CPU the agent may use, as the program drives
//!   the device itself) and, when the grant names a memory node, its memory moves
//!   there: the daemon names the unit's node at the first grant (first touch) and
//!   whenever the policy migrates the task's pages (`Policy::migrate_memory`). On a
//!   machine with one node this is a no-op the agent says once (with `--verbose`);
//! - the agent is the program's checkpoint: every check period it re-requests, which
//!   costs one atomic load while the daemon has not raised `ASK` in the shared page;
//! - a `yield` or a `migrate` stops the program's process group, frees the unit and
//!   allocates again; the next grant sets the CPUs and lets the group continue. A
//!   migration stops the program too: between `free` and the next grant it holds no
//!   unit, and the target may still be busy;
//! - its exit ends the task (`free(finished)`), and `hetsched run` exits as it did.
//!
//! Three threads, so that waiting for a grant stalls nothing else: the main thread
//! talks to the daemon (and may sleep in `alloc` for as long as the queue takes), a
//! waiter reaps the program, and a forwarder passes `SIGTERM`, `SIGINT` and `SIGHUP` to
//! the program's group (with `SIGCONT` when it is stopped, so that it can act on them).
//! When the program ends while the main thread waits for a grant, the waiter ends
//! `hetsched run` itself: the closing socket tells the daemon, which drops the queued
//! task. If the agent itself is killed (`kill -9`), the program gets `SIGKILL`
//! (`PR_SET_PDEATHSIG`) and the daemon frees the unit when the socket closes.
//!
//! If the daemon goes away (it is killed, or drops the agent), what happens is the same
//! whatever the program was doing — waiting for its first grant, running, or stopped
//! after a yield — and chosen by [`OnDaemonLoss`]: by default the program goes on
//! unscheduled (on every CPU the agent may use), and the agent says so in one line and
//! waits for it; with `fail` the program's group is killed and `hetsched run` fails.
//! A request the daemon *refuses* is not a loss, even when the daemon closes the
//! connection after its error reply: before the first grant it ends the run (the
//! program never ran, `hetsched run` fails with the daemon's reason), later the program
//! goes on unscheduled.

use crate::client::Client;
use crate::process::{numa_nodes, own_cpus, Binding, Exit, MemoryBinding, Process};
use crate::protocol::{MetaInfo, UnitInfo, Verdict};
use hetsched_core::cpu_list;
use hetsched_core::machine::UnitType;
use hetsched_core::{Error, Result};
use rustix::process::{waitid, Pid, Signal, WaitId, WaitIdOptions};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often a running program's agent looks whether the daemon is still there.
const LOSS_CHECK: Duration = Duration::from_millis(100);

/// What becomes of the program when the daemon goes away (see the module
/// documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnDaemonLoss {
    /// It goes on unscheduled, with a one-line warning.
    #[default]
    Run,
    /// Its group is killed and `hetsched run` fails (exit 1).
    Fail,
}

impl OnDaemonLoss {
    pub const NAMES: [&'static str; 2] = ["run", "fail"];

    pub fn parse(name: &str) -> Option<OnDaemonLoss> {
        match name {
            "run" => Some(OnDaemonLoss::Run),
            "fail" => Some(OnDaemonLoss::Fail),
            _ => None,
        }
    }
}

/// What `hetsched run` was asked to do.
pub struct RunOptions {
    pub socket: PathBuf,
    /// The task's meta information; the agent adds the program's `pid`.
    pub meta: MetaInfo,
    /// The program and its arguments.
    pub command: Vec<OsString>,
    /// How often the agent re-requests (the bound on how late a decision applies).
    pub check: Duration,
    /// Say on stderr what is applied to the program (grants, yields, memory).
    pub verbose: bool,
    pub on_daemon_loss: OnDaemonLoss,
}

/// The program and what the agent's threads share about it.
struct Program {
    process: Process,
    /// Its group is stopped (before its first grant, or by a yield).
    paused: bool,
    /// The main thread waits for a grant: the waiter ends `hetsched run` itself.
    allocating: bool,
    /// The NUMA node its memory was moved to.
    node: Option<u32>,
}

type Shared = Arc<Mutex<Program>>;

fn lock(program: &Shared) -> MutexGuard<'_, Program> {
    // A thread that panicked while holding it left the data as consistent as any
    // system call it made: go on.
    program.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `options.command` as a task of the daemon at `options.socket` until it ends;
/// returns how it ended. No daemon there, or a program that cannot be executed, is an
/// input error (and nothing is started, or allocated).
pub fn run(options: RunOptions) -> Result<Exit> {
    let socket = &options.socket;
    let client = Client::connect(socket, "hetsched run")?;
    let (program, args) = options
        .command
        .split_first()
        .ok_or_else(|| Error::input("hetsched run: no command given (after `--`)"))?;
    let mut command = Command::new(program);
    command.args(args);
    let process = Process::spawn_stopped(command, &Binding::default())?;
    let meta = MetaInfo {
        pid: Some(process.pid()),
        ..options.meta
    };
    let program: Shared = Arc::new(Mutex::new(Program {
        process,
        paused: true,
        allocating: true,
        node: None,
    }));
    let signals = Signals::new([SIGTERM, SIGINT, SIGHUP])
        .map_err(|e| Error::runtime(format!("hetsched run: signal handlers: {e}")))?;
    let (ended_tx, ended) = mpsc::channel();
    let waiter = program.clone();
    std::thread::spawn(move || reap(&waiter, &ended_tx));
    let forwarder = program.clone();
    std::thread::spawn(move || forward(&forwarder, signals));

    let agent = Agent {
        client,
        meta,
        program,
        ended,
        machine_cpus: own_cpus()?,
        verbose: options.verbose,
        on_loss: options.on_daemon_loss,
    };
    agent.drive(options.check)
}

struct Agent {
    client: Client,
    meta: MetaInfo,
    program: Shared,
    /// How the program ended, from the waiter, when the main thread is not allocating.
    ended: Receiver<Exit>,
    /// The CPUs the agent may use: an accelerator grant's CPU set.
    machine_cpus: Vec<u32>,
    verbose: bool,
    on_loss: OnDaemonLoss,
}

impl Agent {
    fn drive(mut self, check: Duration) -> Result<Exit> {
        if let Err(e) = self
            .client
            .alloc_with_memory(&self.meta)
            .and_then(|(unit, memory)| self.grant(&unit, memory))
        {
            if self.client.daemon_gone() {
                return self.unscheduled(e);
            }
            // Refused: the program never ran; end it, and say why (not how it died).
            let mut p = lock(&self.program);
            p.allocating = false;
            let _ = p.process.kill();
            return Err(e);
        }
        let mut last_look = Instant::now();
        loop {
            match self.ended.recv_timeout(check) {
                Ok(exit) => {
                    // The daemon may be gone by now: the task ends with the agent anyway.
                    let _ = self.client.free(true);
                    return Ok(exit);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::runtime("hetsched run: lost track of the program"))
                }
            }
            // While the daemon keeps raising nothing, a re-request reads the page and
            // no socket: a daemon that died would go unnoticed.
            if last_look.elapsed() >= LOSS_CHECK {
                last_look = Instant::now();
                if self.client.daemon_gone() {
                    return self.unscheduled(Error::runtime("daemon closed the connection"));
                }
            }
            let verdict = match self.client.rerequest() {
                Ok(verdict) => verdict,
                Err(e) => return self.unscheduled(e),
            };
            if verdict == Verdict::Keep {
                continue;
            }
            if self.verbose {
                eprintln!("hetsched run: {verdict:?}: stopping the program");
            }
            if lock(&self.program).pause().is_err() {
                continue; // it has ended: the waiter says how
            }
            if let Err(e) = self.client.free(false) {
                return self.unscheduled(e);
            }
            {
                let mut p = lock(&self.program);
                // The waiter sends under the lock: an end is either here now or found
                // by it with `allocating` set.
                if let Ok(exit) = self.ended.try_recv() {
                    return Ok(exit); // queued: the closing socket drops the task
                }
                p.allocating = true;
            }
            match self.client.alloc_with_memory(&self.meta) {
                Ok((unit, memory)) => {
                    if let Err(e) = self.grant(&unit, memory) {
                        eprintln!("hetsched run: {e}; the program keeps its CPUs");
                        lock(&self.program).cont();
                    }
                }
                Err(e) => return self.unscheduled(e),
            }
        }
    }

    /// Applies a grant to the stopped program (its CPUs, and its memory on `memory`
    /// where the daemon names a node) and lets it run.
    fn grant(&self, unit: &UnitInfo, memory: Option<u32>) -> Result<()> {
        let mut p = lock(&self.program);
        p.allocating = false;
        let on_cpus = unit.kind == UnitType::Cpu && !unit.cpus.is_empty();
        let cpus = if on_cpus {
            &unit.cpus
        } else {
            &self.machine_cpus
        };
        if self.verbose {
            eprintln!(
                "hetsched run: granted unit {} ({} {}): CPUs {cpus:?}",
                unit.id, unit.kind, unit.name
            );
        }
        p.process
            .set_cpus(cpus)
            .map_err(|e| retag(e, &format!("unit {} ({})", unit.id, unit.name)))?;
        if let Some(node) = memory.filter(|&n| p.node != Some(n)) {
            let here = numa_nodes();
            if here.contains(&node) {
                let moved = p.process.bind_memory(node)?;
                if self.verbose && (moved != MemoryBinding::SingleNode || p.node.is_none()) {
                    eprintln!("hetsched run: {moved}");
                }
            } else {
                // The daemon arbitrates a described machine (a file) whose nodes this host
                // lacks: the program must not die of the mismatch, so it is said and skipped.
                eprintln!(
                    "hetsched run: the daemon's machine puts the program's memory on node \
                     {node}, which this machine does not have (its nodes: {}): memory stays \
                     where the kernel puts it",
                    cpu_list::format(&here)
                );
            }
            p.node = Some(node);
        }
        p.cont();
        Ok(())
    }

    /// The daemon is gone (or refused us): the program goes on without it, on every CPU
    /// the agent may use -- unless told to fail when the daemon is lost.
    fn unscheduled(self, e: Error) -> Result<Exit> {
        let gone = self.client.daemon_gone();
        if gone && self.on_loss == OnDaemonLoss::Fail {
            let mut p = lock(&self.program);
            p.allocating = false;
            let _ = p.process.kill();
            return Err(Error::runtime(format!(
                "hetsched run: {e}; the daemon is gone: the program was killed \
                 (--on-daemon-loss fail)"
            )));
        }
        eprintln!("hetsched run: {e}; the program goes on unscheduled");
        {
            let mut p = lock(&self.program);
            p.allocating = false;
            if gone {
                // A grant's CPUs no longer mean anything; a CPU unit it was moved to
                // could be one of many.
                let _ = p.process.set_cpus(&self.machine_cpus);
            }
            p.cont();
        }
        self.ended
            .recv()
            .map_err(|_| Error::runtime("hetsched run: lost track of the program"))
    }
}

impl Program {
    fn pause(&mut self) -> Result<()> {
        self.process.pause()?;
        self.paused = true;
        Ok(())
    }

    /// Lets a stopped program continue (a program that has ended needs nothing).
    fn cont(&mut self) {
        if std::mem::take(&mut self.paused) {
            let _ = self.process.resume();
        }
    }
}

/// Prefixes the error's message with `subject` (which unit's CPUs it is about).
fn retag(e: Error, subject: &str) -> Error {
    e.map_message(|m| format!("{subject}: {m}"))
}

/// The waiter: waits for the program to end without reaping it (so that the other
/// threads never signal a recycled pid), then reaps it under the lock and reports.
fn reap(program: &Shared, ended: &Sender<Exit>) {
    let pid = lock(program).process.pid();
    let pid = Pid::from_raw(pid as i32).expect("a child's pid is positive");
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
    while let Err(rustix::io::Errno::INTR) = waitid(WaitId::Pid(pid), options) {}
    let mut p = lock(program);
    let exit = match p.process.wait() {
        Ok(exit) => exit,
        Err(e) => {
            eprintln!("hetsched run: {e}");
            std::process::exit(1);
        }
    };
    if p.allocating {
        // The main thread waits for a grant the program no longer needs.
        std::process::exit(exit.shell_status().into());
    }
    let _ = ended.send(exit);
}

/// The forwarder: the signals `hetsched run` gets go to the program's group.
fn forward(program: &Shared, mut signals: Signals) {
    for raw in signals.forever() {
        let Some(signal) = Signal::from_named_raw(raw) else {
            continue;
        };
        let mut p = lock(program);
        if p.process.signal(signal).is_ok() {
            p.cont();
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::compact;
    use crate::protocol::{MetaInfo, Request};

    /// The agent's meta travels as JSON (the compact layout has no room for it), and a
    /// meta without the new fields, from an older client, still parses.
    #[test]
    fn a_programs_meta_travels_as_json_and_old_meta_still_parses() {
        let meta = MetaInfo {
            kind: "sleep".into(),
            pid: Some(42),
            ..MetaInfo::default()
        };
        let alloc = Request::Alloc { meta: meta.clone() };
        assert!(!compact::encode_request(&alloc, &mut Vec::new()));
        let json = serde_json::to_string(&alloc).unwrap();
        assert!(json.contains(r#""pid":42"#), "{json}");
        assert_eq!(serde_json::from_str::<Request>(&json).unwrap(), alloc);
        let plain = Request::Alloc {
            meta: MetaInfo { pid: None, ..meta },
        };
        assert!(compact::encode_request(&plain, &mut Vec::new()));
        let old = r#"{"op":"alloc","meta":{"kind":"md5","affinity":{"cpu":1}}}"#;
        let Request::Alloc { meta } = serde_json::from_str(old).unwrap() else {
            panic!()
        };
        assert_eq!((meta.pid, meta.device, meta.signature), (None, None, None));
    }
}
