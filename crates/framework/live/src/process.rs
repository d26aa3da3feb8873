//! Control of an ordinary, unmodified program from outside: the daemon's way to
//! schedule a process that does not link the client library and so never asks for a
//! unit itself.
//!
//! A scheduling decision becomes an operation on the process:
//! - a grant or a migration = the unit's CPU set, applied to *every* thread (one
//!   `sched_setaffinity` per entry of `/proc/PID/task`, repeated until a pass finds no
//!   new thread; threads started later inherit the set from their creator);
//! - a yield = `SIGSTOP` to the process group, the next grant = `SIGCONT`;
//! - on a machine with several NUMA nodes, memory on one node: `set_mempolicy(MPOL_BIND)`
//!   in the child before `exec` (the policy survives `exec`), `migrate_pages` for a
//!   running process (which moves its pages; its later allocations follow its CPUs,
//!   Linux's default local policy, so bind it to that node's CPUs too). With one node
//!   this is a no-op that says so.
//!
//! The program starts in its own process group so that signals reach its children and
//! never the daemon; children that leave the group (`setsid`) escape the pause. It gets
//! `SIGKILL` when the thread that started it ends (`PR_SET_PDEATHSIG`), so that a
//! controller killed by `kill -9` leaves no unscheduled program behind; its own children
//! are not covered (that would need a cgroup). Memory
//! binding uses the raw system calls: hwloc (`hwlocality`) cannot set another process's
//! policy on Linux, and nothing but a system call may run between `fork` and `exec`.
//!
//! The process is signalled only until it has been reaped (`wait`), so its pid can
//! never name someone else's group. Dropping a [`Process`] that is still running kills
//! its group and reaps it: no orphan outlives its handle.

use hetsched_core::{cpu_list, Error, Result};
use rustc_hash::FxHashSet;
use rustix::process::{
    getpid, getppid, kill_process_group, set_parent_process_death_signal, waitid, Pid, Signal,
    WaitId, WaitIdOptions,
};
use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};

/// Where a program may run and keep its memory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Binding {
    /// OS CPU indices for all its threads (`None`: the daemon's own set).
    pub cpus: Option<Vec<u32>>,
    /// NUMA node (OS index) for its memory (`None`: the kernel's default policy).
    pub memory_node: Option<u32>,
}

/// How a program ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exit {
    /// It called `exit` with this code.
    Code(i32),
    /// A signal with this number killed it.
    Signal(i32),
}

impl From<ExitStatus> for Exit {
    fn from(status: ExitStatus) -> Exit {
        match (status.code(), status.signal()) {
            (Some(code), _) => Exit::Code(code),
            (None, Some(signal)) => Exit::Signal(signal),
            // Neither happens after a blocking wait (stops are not reported).
            (None, None) => unreachable!("wait reported neither an exit code nor a signal"),
        }
    }
}

impl Exit {
    /// The status a shell reports for it: the code, or 128 + the signal.
    pub fn shell_status(self) -> u8 {
        match self {
            Exit::Code(code) => code as u8,
            Exit::Signal(signal) => 128u8.wrapping_add(signal as u8),
        }
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Exit::Code(code) => write!(f, "exit code {code}"),
            Exit::Signal(signal) => write!(f, "killed by signal {signal}"),
        }
    }
}

/// What a memory binding did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryBinding {
    /// Memory is bound to (or was moved to) this node; `pages_not_moved` counts the
    /// pages `migrate_pages` could not move (0 for a binding before `exec`).
    Bound { node: u32, pages_not_moved: u64 },
    /// This machine has one NUMA node: nothing to bind.
    SingleNode,
}

impl fmt::Display for MemoryBinding {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            MemoryBinding::Bound {
                node,
                pages_not_moved,
            } => write!(
                f,
                "memory bound to NUMA node {node} ({pages_not_moved} pages not moved)"
            ),
            MemoryBinding::SingleNode => {
                f.write_str("this machine has one NUMA node: memory binding is a no-op")
            }
        }
    }
}

/// A program started by the daemon, in its own process group.
pub struct Process {
    child: Child,
    /// Set once the process has been reaped; no signal is sent after that.
    exit: Option<Exit>,
    memory: Option<MemoryBinding>,
}

impl Process {
    /// Starts `command` (stdio, environment and arguments as the caller set them) in a
    /// new process group, its threads on `binding.cpus` and its memory on
    /// `binding.memory_node`. A program that cannot be executed (missing, not
    /// executable) and a CPU or node this machine does not offer are input errors.
    /// Call it from a thread that lives as long as the program should (see the module
    /// doc).
    pub fn spawn(command: Command, binding: &Binding) -> Result<Process> {
        Self::start(command, binding, false)
    }

    /// As [`Process::spawn`], but the program stops at its first instruction, right
    /// after `exec`, until [`Process::resume`]: its pid can be announced and its CPUs
    /// set before it runs any code of its own. The stop uses `ptrace` for that one
    /// instant (the only way to stop a program between `exec` and its first
    /// instruction): a set-user-ID program therefore starts without its privileges, and
    /// a controller that is itself traced with `-f` cannot use it.
    pub fn spawn_stopped(command: Command, binding: &Binding) -> Result<Process> {
        Self::start(command, binding, true)
    }

    fn start(mut command: Command, binding: &Binding, stopped: bool) -> Result<Process> {
        let cpus = binding.cpus.as_deref().map(cpu_set).transpose()?;
        let memory = binding.memory_node.map(memory_binding).transpose()?;
        let mempolicy = match memory {
            Some(MemoryBinding::Bound { node, .. }) => Some(NodeMask::of(&[node])),
            _ => None,
        };
        command.process_group(0);
        let parent = getpid();
        // SAFETY: the closure only makes system calls (async-signal-safe) on data built
        // before the fork, and builds errors without allocating.
        unsafe {
            command.pre_exec(move || {
                set_parent_process_death_signal(Some(Signal::KILL))?;
                // The parent may have died before the line above.
                if getppid() != Some(parent) {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                if let Some(set) = &cpus {
                    sched_setaffinity(None, set)?;
                }
                if let Some(mask) = &mempolicy {
                    mask.set_mempolicy()?;
                }
                if stopped && libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().map_err(|e| {
            let program = command.get_program().to_string_lossy();
            let not_runnable = [libc::ENOENT, libc::EACCES, libc::ENOEXEC, libc::ENOTDIR];
            match e.raw_os_error() {
                Some(code) if not_runnable.contains(&code) => {
                    Error::input(format!("command `{program}`: cannot execute it: {e}"))
                }
                _ => Error::runtime(format!("command `{program}`: cannot start it: {e}")),
            }
        })?;
        let process = Process {
            child,
            exit: None,
            memory,
        };
        if stopped {
            process.stop_after_exec()?;
        }
        Ok(process)
    }

    /// Turns the trap a traced program gets at `exec` into an ordinary stop, and stops
    /// tracing it: it then waits for `SIGCONT` like a paused program.
    fn stop_after_exec(&self) -> Result<()> {
        let pid = Pid::from_child(&self.child);
        let options = WaitIdOptions::EXITED | WaitIdOptions::STOPPED | WaitIdOptions::NOWAIT;
        let status = loop {
            match waitid(WaitId::Pid(pid), options) {
                Err(rustix::io::Errno::INTR) => continue,
                other => break other.map_err(|e| self.gone(e.into()))?,
            }
        };
        // Anything but the trap: it was killed before its first instruction, and `wait`
        // will say so.
        if status.is_some_and(|s| s.trapped()) {
            // SAFETY: plain system call on our own tracee.
            let r =
                unsafe { libc::ptrace(libc::PTRACE_DETACH, pid.as_raw_pid(), 0, libc::SIGSTOP) };
            if r != 0 {
                return Err(self.gone(io::Error::last_os_error()));
            }
        }
        Ok(())
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What `spawn` did with the binding's memory node (`None`: none was asked for).
    pub fn memory(&self) -> Option<&MemoryBinding> {
        self.memory.as_ref()
    }

    /// Moves every thread to `cpus` (a grant or a migration); returns how many threads
    /// were set. Threads started meanwhile are caught by repeating the pass.
    pub fn set_cpus(&self, cpus: &[u32]) -> Result<usize> {
        let set = cpu_set(cpus)?;
        self.check_running()?;
        let mut done = FxHashSet::default();
        // A thread started by one not yet set inherits the old set and may be missing
        // from the listing in progress: the next pass finds it. The passes end when one
        // finds no new thread; a program that starts threads faster than they are set
        // keeps its newest ones on their creator's old set until the next call.
        for _ in 0..MAX_PASSES {
            let mut tids = thread_ids(self.pid()).map_err(|e| self.gone(e))?;
            tids.retain(|tid| !done.contains(tid));
            if tids.is_empty() {
                break;
            }
            for tid in tids {
                match sched_setaffinity(Pid::from_raw(tid), &set) {
                    // A thread that ended since the listing needs no CPUs.
                    Ok(()) | Err(rustix::io::Errno::SRCH) => {}
                    Err(e) => {
                        return Err(Error::runtime(format!(
                            "process {}: thread {tid}: sched_setaffinity: {e}",
                            self.pid()
                        )))
                    }
                }
                done.insert(tid);
            }
        }
        Ok(done.len())
    }

    /// Moves the process's memory to `node` with `migrate_pages` (see the module doc:
    /// its later allocations follow its CPUs).
    pub fn bind_memory(&self, node: u32) -> Result<MemoryBinding> {
        let binding = memory_binding(node)?;
        self.check_running()?;
        let MemoryBinding::Bound { .. } = binding else {
            return Ok(binding);
        };
        let from = NodeMask::of(&numa_nodes());
        let to = NodeMask::of(&[node]);
        // SAFETY: both masks are `maxnode` bits long and outlive the call.
        let moved = unsafe {
            libc::syscall(
                libc::SYS_migrate_pages,
                self.pid() as libc::pid_t,
                from.maxnode(),
                from.words.as_ptr(),
                to.words.as_ptr(),
            )
        };
        if moved < 0 {
            return Err(Error::runtime(format!(
                "process {}: migrate_pages to node {node}: {}",
                self.pid(),
                io::Error::last_os_error()
            )));
        }
        Ok(MemoryBinding::Bound {
            node,
            pages_not_moved: moved as u64,
        })
    }

    /// Stops the whole process group (a yield).
    pub fn pause(&self) -> Result<()> {
        self.signal(Signal::STOP)
    }

    /// Lets a paused process group run again.
    pub fn resume(&self) -> Result<()> {
        self.signal(Signal::CONT)
    }

    /// Kills the whole process group; `wait` then reports the signal.
    pub fn kill(&self) -> Result<()> {
        self.signal(Signal::KILL)
    }

    /// Waits for the program to end.
    pub fn wait(&mut self) -> Result<Exit> {
        if let Some(exit) = self.exit {
            return Ok(exit);
        }
        let status = self.child.wait().map_err(|e| self.gone(e))?;
        Ok(*self.exit.insert(status.into()))
    }

    /// The program's end if it has ended, without waiting.
    pub fn try_wait(&mut self) -> Result<Option<Exit>> {
        if self.exit.is_none() {
            let status = self.child.try_wait().map_err(|e| self.gone(e))?;
            self.exit = status.map(Exit::from);
        }
        Ok(self.exit)
    }

    /// Sends `signal` to the whole process group (e.g. one its controller received).
    pub fn signal(&self, signal: Signal) -> Result<()> {
        self.check_running()?;
        let group = Pid::from_child(&self.child);
        kill_process_group(group, signal).map_err(|e| {
            Error::runtime(format!(
                "process group {}: signal {}: {e}",
                self.pid(),
                signal.as_raw()
            ))
        })
    }

    fn check_running(&self) -> Result<()> {
        match self.exit {
            None => Ok(()),
            Some(exit) => Err(Error::runtime(format!(
                "process {} has ended ({exit})",
                self.pid()
            ))),
        }
    }

    fn gone(&self, e: io::Error) -> Error {
        Error::runtime(format!("process {}: {e}", self.pid()))
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if self.exit.is_none() {
            let _ = self.kill();
            let _ = self.child.wait();
        }
    }
}

/// Field `n` of a `/proc/PID/stat` line as proc(5) numbers them (3 is the state),
/// parsed: the fields are counted after the command name's closing parenthesis, since
/// the name itself may hold spaces and parentheses.
pub(crate) fn stat_field<T: std::str::FromStr>(stat: &str, n: usize) -> Option<T> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_ascii_whitespace()
        .nth(n.checked_sub(3)?)?
        .parse()
        .ok()
}

/// The thread ids of process `pid`, from `/proc/PID/task`, read a few dozen at a time.
/// Why not `read_dir`: its 32 KiB reads list about 1,300 threads per system call, and on
/// a kernel built without preemption (`PREEMPT_NONE`, this VM's) such a call holds its
/// CPU for about 1.6 ms whatever the priority of the thread waiting for it: the sampler
/// listing a client's 8,000-thread process kept the event loop off its CPU for
/// milliseconds. A 1 KiB buffer returns to user space, where the kernel may preempt,
/// every ~40 entries.
pub(crate) fn thread_ids(pid: u32) -> io::Result<Vec<i32>> {
    use rustix::fs::{Mode, OFlags, RawDir};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = rustix::fs::open(format!("/proc/{pid}/task"), flags, Mode::empty())?;
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 1024];
    let mut entries = RawDir::new(fd, &mut buf);
    let mut tids = Vec::new();
    while let Some(entry) = entries.next() {
        let entry = entry?;
        if let Some(tid) = entry
            .file_name()
            .to_str()
            .ok()
            .and_then(|n| n.parse::<i32>().ok())
            .filter(|&t| t > 0)
        {
            tids.push(tid);
        }
    }
    Ok(tids)
}

/// Passes of `set_cpus` over a process's threads.
const MAX_PASSES: usize = 16;

/// The CPUs (OS indices) this process may use.
pub fn own_cpus() -> Result<Vec<u32>> {
    let set = sched_getaffinity(None)
        .map_err(|e| Error::runtime(format!("sched_getaffinity of this process: {e}")))?;
    Ok((0..CpuSet::MAX_CPU)
        .filter(|&c| set.is_set(c))
        .map(|c| c as u32)
        .collect())
}

/// A CPU set from OS indices, each of which this process (the controller) may use.
fn cpu_set(cpus: &[u32]) -> Result<CpuSet> {
    let allowed = own_cpus()?;
    if cpus.is_empty() {
        return Err(Error::input(format!(
            "CPU set: expected at least one of the CPUs {}",
            cpu_list::format(&allowed)
        )));
    }
    let mut set = CpuSet::new();
    for &cpu in cpus {
        if !allowed.contains(&cpu) {
            return Err(Error::input(format!(
                "CPU {cpu}: expected one of the CPUs this process may use, {}",
                cpu_list::format(&allowed)
            )));
        }
        set.set(cpu as usize);
    }
    Ok(set)
}

/// What binding memory to `node` means on this machine; an unknown node is bad input.
fn memory_binding(node: u32) -> Result<MemoryBinding> {
    let nodes = numa_nodes();
    if !nodes.contains(&node) {
        return Err(Error::input(format!(
            "memory node {node}: expected one of this machine's NUMA nodes, {}",
            cpu_list::format(&nodes)
        )));
    }
    Ok(match nodes.len() {
        1 => MemoryBinding::SingleNode,
        _ => MemoryBinding::Bound {
            node,
            pages_not_moved: 0,
        },
    })
}

/// The online NUMA nodes (a kernel without NUMA support has one, node 0).
pub fn numa_nodes() -> Vec<u32> {
    std::fs::read_to_string("/sys/devices/system/node/online")
        .ok()
        .and_then(|s| cpu_list::parse(&s))
        .filter(|nodes| !nodes.is_empty())
        .unwrap_or_else(|| vec![0])
}

/// A node mask as the memory-policy system calls take it.
struct NodeMask {
    words: Vec<libc::c_ulong>,
}

impl NodeMask {
    fn of(nodes: &[u32]) -> NodeMask {
        let bits = libc::c_ulong::BITS;
        let top = nodes.iter().max().map_or(0, |&n| n / bits);
        let mut words = vec![0; top as usize + 1];
        for &n in nodes {
            words[(n / bits) as usize] |= 1 << (n % bits);
        }
        NodeMask { words }
    }

    /// The `maxnode` argument: the kernel reads one bit fewer than it is told.
    fn maxnode(&self) -> libc::c_ulong {
        (self.words.len() as libc::c_ulong) * libc::c_ulong::BITS as libc::c_ulong + 1
    }

    /// Binds the calling thread's future allocations (and those of what it `exec`s).
    fn set_mempolicy(&self) -> io::Result<()> {
        // SAFETY: the mask is `maxnode` bits long and outlives the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_set_mempolicy,
                libc::MPOL_BIND,
                self.words.as_ptr(),
                self.maxnode(),
            )
        };
        match r {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    /// Polls `cond` until it holds; fails after a minute (a generous bound for a loaded
    /// machine, not a measurement).
    pub(crate) fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !cond() {
            assert!(Instant::now() < deadline, "timed out waiting until {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The CPUs this test process may use.
    pub(crate) fn allowed_cpus() -> Vec<u32> {
        own_cpus().unwrap()
    }

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    fn thread_cpus(pid: u32) -> Vec<Vec<u32>> {
        let dir = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
        dir.filter_map(|e| {
            let status = std::fs::read_to_string(e.ok()?.path().join("status")).ok()?;
            let line = status
                .lines()
                .find(|l| l.starts_with("Cpus_allowed_list:"))?;
            cpu_list::parse(line.split_once(':')?.1)
        })
        .collect()
    }

    /// The states (`R`, `S`, `T`...) of every process in process group `pgid`.
    fn group_states(pgid: u32) -> Vec<char> {
        group(pgid).into_iter().map(|(state, _)| state).collect()
    }

    /// The state and command name of every process in process group `pgid`.
    fn group(pgid: u32) -> Vec<(char, String)> {
        let mut members = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            let Some((head, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            let Some((_, comm)) = head.split_once('(') else {
                continue;
            };
            let f: Vec<&str> = rest.split_ascii_whitespace().collect();
            // Fields 3 (state) and 5 (process group), counted from 3.
            if f.get(2).and_then(|g| g.parse().ok()) == Some(pgid) {
                members.push((f[0].chars().next().unwrap(), comm.to_string()));
            }
        }
        members
    }

    const HELPER: &str = "HETSCHED_TEST_THREADS_HELPER";

    /// Not a test: the multithreaded program `affinity_*` controls, run by re-executing
    /// this test binary. It starts three threads, one more per line on its standard
    /// input, and ends at the end of its input.
    #[test]
    #[ignore = "run by affinity_reaches_every_thread_including_later_ones as a child"]
    fn threads_helper() {
        if std::env::var_os(HELPER).is_none() {
            return;
        }
        let park = || {
            std::thread::spawn(|| loop {
                std::thread::park()
            });
        };
        (0..3).for_each(|_| park());
        for _ in std::io::stdin().lines() {
            park();
        }
    }

    #[test]
    fn affinity_reaches_every_thread_including_later_ones() {
        let cpus = allowed_cpus();
        let (first, last) = (cpus[0], *cpus.last().unwrap());
        let mut helper = Command::new(std::env::current_exe().unwrap());
        helper
            .args(["--exact", "process::tests::threads_helper", "--ignored"])
            .env(HELPER, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::null());
        let binding = Binding {
            cpus: Some(vec![first]),
            memory_node: None,
        };
        let mut p = Process::spawn(helper, &binding).unwrap();
        let pid = p.pid();
        // The main thread and the helper's three (libtest may add one).
        wait_until("the helper runs 4 threads", || thread_cpus(pid).len() >= 4);
        assert!(thread_cpus(pid).iter().all(|c| c == &[first]));

        let threads = thread_cpus(pid).len();
        assert!(p.set_cpus(&[last]).unwrap() >= threads);
        assert!(thread_cpus(pid).iter().all(|c| c == &[last]));

        let mut stdin = p.child.stdin.take().unwrap();
        writeln!(stdin).unwrap();
        wait_until("the helper starts one more thread", || {
            thread_cpus(pid).len() > threads
        });
        let all = thread_cpus(pid);
        assert!(all.iter().all(|c| c == &[last]), "{all:?}");
        drop(stdin);
        assert_eq!(p.wait().unwrap(), Exit::Code(0));
    }

    #[test]
    fn pause_stops_the_whole_group_and_resume_lets_it_run() {
        let mut p =
            Process::spawn(sh("sleep 1000 & sleep 1000; wait"), &Binding::default()).unwrap();
        let pgid = p.pid();
        // Both children past `exec`: a shell that starts a command with `vfork` waits
        // in the kernel (state `D`) until its child has called `exec`, and a stop that
        // reaches the child before that leaves the shell waiting, not stopped, until
        // the group resumes. Nothing of the group runs then either, but the shell is not
        // `T` (this test failed that way 8 times in 280 runs beside three busy loops).
        // The shell must `exec` its commands (dash and bash do; a shell that ran
        // `sleep` as a builtin would never show it).
        wait_until("sh and its two sleeps run", || {
            let members = group(pgid);
            members.len() == 3 && members.iter().filter(|(_, c)| c == "sleep").count() == 2
        });
        p.pause().unwrap();
        wait_until("all three are stopped", || group_states(pgid) == ['T'; 3]);
        p.resume().unwrap();
        wait_until("none is stopped", || {
            let states = group_states(pgid);
            states.len() == 3 && states.iter().all(|&s| s != 'T')
        });
        p.kill().unwrap();
        assert_eq!(p.wait().unwrap(), Exit::Signal(libc::SIGKILL));
        wait_until("the group is gone", || group_states(pgid).is_empty());
    }

    #[test]
    fn exit_codes_and_signals_are_reported() {
        let run = |script| {
            Process::spawn(sh(script), &Binding::default())
                .unwrap()
                .wait()
        };
        assert_eq!(run("exit 3").unwrap(), Exit::Code(3));
        assert_eq!(run("exit 0").unwrap(), Exit::Code(0));
        assert_eq!(run("kill -TERM $$").unwrap(), Exit::Signal(libc::SIGTERM));
        assert_eq!(Exit::Signal(9).to_string(), "killed by signal 9");
        assert_eq!(
            serde_json::to_string(&Exit::Code(3)).unwrap(),
            r#"{"code":3}"#
        );
    }

    #[test]
    fn an_ended_process_is_not_signalled_and_a_dropped_one_is_killed() {
        let mut p = Process::spawn(sh("exit 0"), &Binding::default()).unwrap();
        assert_eq!(p.wait().unwrap(), Exit::Code(0));
        assert_eq!(p.try_wait().unwrap(), Some(Exit::Code(0)));
        for err in [p.pause(), p.set_cpus(&allowed_cpus()).map(drop)] {
            let msg = err.unwrap_err().to_string();
            assert!(msg.contains("has ended (exit code 0)"), "{msg}");
        }

        let mut p = Process::spawn(sh("sleep 1000"), &Binding::default()).unwrap();
        assert_eq!(p.try_wait().unwrap(), None);
        let pid = p.pid();
        drop(p);
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }

    #[test]
    fn a_missing_program_or_a_bad_binding_is_an_input_error() {
        let missing = Command::new("/nonexistent/hetsched-no-such-program");
        let e = Process::spawn(missing, &Binding::default()).err().unwrap();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(
            msg.contains("/nonexistent/hetsched-no-such-program"),
            "{msg}"
        );
        assert!(!msg.contains('\n'), "{msg}");
        let dir = Process::spawn(Command::new("/"), &Binding::default());
        assert_eq!(dir.err().unwrap().exit_code(), 2);

        let bad_cpu = CpuSet::MAX_CPU as u32 + 5;
        for cpus in [vec![], vec![bad_cpu]] {
            let binding = Binding {
                cpus: Some(cpus),
                memory_node: None,
            };
            let e = Process::spawn(sh("exit 0"), &binding).err().unwrap();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().starts_with("CPU"), "{e}");
        }
        let binding = Binding {
            cpus: None,
            memory_node: Some(1 << 20),
        };
        let e = Process::spawn(sh("exit 0"), &binding).err().unwrap();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(
            msg.starts_with("memory node 1048576: expected one of"),
            "{msg}"
        );
    }

    #[test]
    fn memory_binding_matches_the_number_of_numa_nodes() {
        let nodes = numa_nodes();
        let node = *nodes.last().unwrap();
        let binding = Binding {
            cpus: None,
            memory_node: Some(node),
        };
        let mut p = Process::spawn(sh("sleep 1000"), &binding).unwrap();
        let moved = p.bind_memory(node).unwrap();
        if nodes.len() == 1 {
            assert_eq!(p.memory(), Some(&MemoryBinding::SingleNode));
            assert_eq!(moved, MemoryBinding::SingleNode);
            assert!(moved
                .to_string()
                .contains("one NUMA node: memory binding is a no-op"));
        } else {
            assert!(matches!(p.memory(), Some(MemoryBinding::Bound { node: n, .. }) if *n == node));
            assert!(matches!(moved, MemoryBinding::Bound { node: n, .. } if n == node));
            let maps = std::fs::read_to_string(format!("/proc/{}/numa_maps", p.pid())).unwrap();
            assert!(maps.contains(&format!("bind:{node}")), "{maps}");
        }
        p.kill().unwrap();
        assert_eq!(p.wait().unwrap(), Exit::Signal(libc::SIGKILL));
    }

    #[test]
    fn a_stopped_program_runs_no_code_until_resumed() {
        let dir = tempfile::tempdir().unwrap();
        let mark = dir.path().join("ran");
        let script = format!("echo > {}", mark.display());
        let mut p = Process::spawn_stopped(sh(&script), &Binding::default()).unwrap();
        let pgid = p.pid();
        wait_until("it is stopped", || group_states(pgid) == ['T']);
        std::thread::sleep(Duration::from_millis(100)); // time it would need to run
        assert!(!mark.exists());
        let cpus = allowed_cpus();
        p.set_cpus(&cpus[..1]).unwrap();
        p.resume().unwrap();
        assert_eq!(p.wait().unwrap(), Exit::Code(0));
        assert!(mark.exists());
        let missing = Command::new("/nonexistent/hetsched-no-such-program");
        let e = Process::spawn_stopped(missing, &Binding::default());
        assert_eq!(e.err().unwrap().exit_code(), 2);
    }

    /// The program dies with the thread that started it (`PR_SET_PDEATHSIG`), even while
    /// its handle lives on.
    #[test]
    fn a_program_dies_with_the_thread_that_started_it() {
        let starter =
            std::thread::spawn(|| Process::spawn(sh("exec sleep 1000"), &Binding::default()));
        let mut p = starter.join().unwrap().unwrap();
        assert_eq!(p.wait().unwrap(), Exit::Signal(libc::SIGKILL));
        assert_eq!(Exit::Signal(libc::SIGKILL).shell_status(), 137);
        assert_eq!(Exit::Code(3).shell_status(), 3);
    }

    #[test]
    fn node_masks_set_one_bit_per_node() {
        let mask = NodeMask::of(&[0, 65]);
        assert_eq!(mask.words, vec![1, 2]);
        assert_eq!(mask.maxnode(), 129);
    }
}
