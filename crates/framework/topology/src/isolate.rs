//! Runs an hwloc load in a forked child process and brings its result back.
//!
//! libhwloc 2.9 trusts the files it imports: a malformed XML export or sysfs dump can
//! make it dereference a NULL bitmap (SIGSEGV; see [`crate::hwloc_xml`] for the ones
//! known), fail an assertion (SIGABRT), or wait forever on a FIFO. In-process, that
//! kills or hangs the `hetsched` command, the daemon, or the Python interpreter that
//! imported hetsched, with no message. So every load from a file runs in a child
//! `fork`ed without exec: the child loads, converts the topology, writes the result as
//! JSON into a pipe (a `Machine` is serde) and `_exit`s; the parent reads the reply
//! with a size cap and a deadline, and reaps the child. A child killed by a signal, one
//! still at work at the deadline and one whose reply is over the cap (the last two are
//! killed) all become an input error naming the file.
//!
//! The child is a copy of a process that may have many threads, of which only the
//! forking one lives on in it, so it keeps to what such a child can rely on: glibc
//! resets its malloc and dynamic-loader locks at a fork, and [`crate::hwloc`] forks
//! holding the lock that all of its hwloc calls take, so no other thread was inside
//! hwloc. The child prints nothing (a panic is caught, with the panic hook silenced,
//! and sent back as an error); it restores the default action of the crash signals (a
//! handler of the parent's, Rust's stack-overflow guard or Python's faulthandler,
//! would print or catch); it leaves with `_exit`, running no destructor or `atexit`
//! handler of the parent's; its address space may grow by at most
//! [`Limits::memory_bytes`] (`RLIMIT_AS`).

use hetsched_core::{Error, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// Bounds on a child's work.
#[derive(Clone, Debug)]
pub struct Limits {
    /// From the fork until the child has replied and exited.
    pub timeout: Duration,
    /// The largest reply taken (the JSON of a `Machine`: 250 kB for 192 PUs).
    pub reply_bytes: usize,
    /// How far the child's address space may grow past the parent's at the fork.
    pub memory_bytes: u64,
}

impl Limits {
    /// hwloc loads the XML of a 192-PU machine, or a sysfs dump, in tens of
    /// milliseconds; a minute leaves room for a loaded machine and a debug build.
    pub const DEFAULT: Limits = Limits {
        timeout: Duration::from_secs(60),
        reply_bytes: 256 << 20,
        memory_bytes: 4 << 30,
    };
}

/// Reply tags: a value, an input or runtime error, a panic.
const VALUE: u8 = b'V';
const INPUT: u8 = b'I';
const RUNTIME: u8 = b'R';
const PANIC: u8 = b'P';

/// A forked child at work; dropping it kills and reaps the child.
pub struct Forked {
    pid: libc::pid_t,
    reply: Option<OwnedFd>,
    deadline: Instant,
    limits: Limits,
}

impl Forked {
    /// Forks a child that runs `work` and sends its result back.
    pub fn spawn<T: Serialize>(
        limits: &Limits,
        work: impl FnOnce() -> Result<T>,
    ) -> Result<Forked> {
        let mut fds: [RawFd; 2] = [-1; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(Error::runtime(format!(
                "cannot create a pipe: {}",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: pipe2 returned two open descriptors that nothing else owns.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let memory_cap = address_space_bytes().map(|now| now.saturating_add(limits.memory_bytes));
        // SAFETY: fork has no preconditions; the child keeps to what the child of a
        // multi-threaded process may do (module doc) and never returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(Error::runtime(format!(
                "cannot fork a process to load with hwloc: {}",
                std::io::Error::last_os_error()
            )));
        }
        if pid == 0 {
            drop(read);
            child(write.as_raw_fd(), memory_cap, work);
        }
        drop(write);
        Ok(Forked {
            pid,
            reply: Some(read),
            deadline: Instant::now() + limits.timeout,
            limits: limits.clone(),
        })
    }

    #[cfg(test)]
    fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Waits for the child's reply and exit. `origin` names the input in errors.
    pub fn reply<T: DeserializeOwned>(mut self, origin: &str) -> Result<T> {
        let mut buf = Vec::new();
        let mut read = self.read_reply(&mut buf);
        if read.is_err() {
            self.kill();
        }
        let (status, killed_at_deadline) = self.reap()?;
        if killed_at_deadline && read.is_ok() {
            read = Err(Stop::Timeout); // replied, but did not exit in time
        }
        let gib = self.limits.memory_bytes as f64 / f64::from(1 << 30);
        match read {
            Err(Stop::Timeout) => {
                return Err(Error::input(format!(
                    "{origin}: hwloc did not finish loading it within {} s, so hetsched stopped it (a FIFO or a device in it?)",
                    self.limits.timeout.as_secs_f64()
                )))
            }
            Err(Stop::TooLarge) => {
                return Err(Error::input(format!(
                    "{origin}: the machine hwloc loaded from it is larger than the {} MiB hetsched accepts",
                    self.limits.reply_bytes >> 20
                )))
            }
            Err(Stop::Io(e)) => {
                return Err(Error::runtime(format!(
                    "{origin}: cannot read the reply of the process loading it: {e}"
                )))
            }
            Ok(()) => {}
        }
        if libc::WIFSIGNALED(status) {
            return Err(Error::input(format!(
                "{origin}: hwloc crashed ({}) loading it: the input is malformed in a way libhwloc 2.9 does not check, or needs more than the {gib} GiB of memory a load may take",
                signal_name(libc::WTERMSIG(status))
            )));
        }
        let code = libc::WEXITSTATUS(status);
        let garbled = |what: String| {
            Error::runtime(format!(
                "{origin}: the process loading it with hwloc {what} (exit status {code})"
            ))
        };
        let Some((&tag, body)) = buf.split_first() else {
            return Err(garbled("sent nothing back".into()));
        };
        let text = || String::from_utf8_lossy(body).into_owned();
        match tag {
            VALUE if code == 0 => serde_json::from_slice(body)
                .map_err(|e| garbled(format!("sent back what is not a machine: {e}"))),
            INPUT => Err(Error::Input(text())),
            RUNTIME => Err(Error::Runtime(text())),
            PANIC => Err(Error::runtime(format!(
                "{origin}: hetsched panicked loading it (a bug): {}",
                text()
            ))),
            _ => Err(garbled("sent back a garbled reply".into())),
        }
    }

    fn read_reply(&mut self, buf: &mut Vec<u8>) -> std::result::Result<(), Stop> {
        let mut pipe = std::fs::File::from(self.reply.take().expect("read once"));
        let mut chunk = vec![0u8; 64 << 10];
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Stop::Timeout);
            }
            let mut pfd = libc::pollfd {
                fd: pipe.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
            // SAFETY: one valid pollfd.
            match unsafe { libc::poll(&mut pfd, 1, ms) } {
                0 => continue,
                n if n < 0 => {
                    let e = std::io::Error::last_os_error();
                    if e.kind() == std::io::ErrorKind::Interrupted {
                        continue;
                    }
                    return Err(Stop::Io(e));
                }
                _ => {}
            }
            match pipe.read(&mut chunk) {
                Ok(0) => return Ok(()),
                Ok(n) if buf.len() + n > self.limits.reply_bytes => return Err(Stop::TooLarge),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Stop::Io(e)),
            }
        }
    }

    fn kill(&self) {
        // SAFETY: `pid` is our child, not yet reaped, so not reused.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
    }

    /// The child's wait status once it exits, and whether it was killed at the deadline.
    fn reap(&mut self) -> Result<(libc::c_int, bool)> {
        let mut pause = Duration::from_micros(100);
        let mut killed = false;
        loop {
            let mut status = 0;
            let flags = if killed { 0 } else { libc::WNOHANG };
            // SAFETY: `pid` is our child, `status` a valid out-pointer.
            let r = unsafe { libc::waitpid(self.pid, &mut status, flags) };
            if r == self.pid {
                self.pid = 0;
                return Ok((status, killed));
            }
            if r < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                self.pid = 0;
                return Err(Error::runtime(format!(
                    "cannot wait for the process loading with hwloc: {e}"
                )));
            }
            if !killed && Instant::now() >= self.deadline {
                self.kill();
                killed = true;
                continue;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(10));
        }
    }
}

impl Drop for Forked {
    fn drop(&mut self) {
        if self.pid > 0 {
            self.kill();
            let mut status = 0;
            // SAFETY: as in `reap`.
            unsafe { libc::waitpid(self.pid, &mut status, 0) };
        }
    }
}

enum Stop {
    Timeout,
    TooLarge,
    Io(std::io::Error),
}

/// The child: runs `work`, writes the tagged reply to `fd`, exits.
fn child<T: Serialize>(fd: RawFd, memory_cap: Option<u64>, work: impl FnOnce() -> Result<T>) -> ! {
    for sig in [
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGABRT,
        libc::SIGFPE,
        libc::SIGILL,
    ] {
        // SAFETY: restoring a default action is always allowed.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
    if let Some(cap) = memory_cap {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `lim` is a valid rlimit to fill, then to set.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_AS, &mut lim) == 0 {
                lim.rlim_cur = lim.rlim_cur.min(cap).min(lim.rlim_max);
                libc::setrlimit(libc::RLIMIT_AS, &lim);
            }
        }
    }
    std::panic::set_hook(Box::new(|_| {}));
    let reply = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
        Ok(Ok(value)) => {
            let mut out = vec![VALUE];
            match serde_json::to_writer(&mut out, &value) {
                Ok(()) => out,
                Err(e) => tagged(RUNTIME, &format!("cannot serialise the machine: {e}")),
            }
        }
        Ok(Err(Error::Input(msg))) => tagged(INPUT, &msg),
        Ok(Err(Error::Runtime(msg) | Error::Interrupted(msg))) => tagged(RUNTIME, &msg),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            std::mem::forget(payload); // its drop could panic again
            tagged(PANIC, &msg)
        }
    };
    let mut rest = &reply[..];
    let mut code = 0;
    while !rest.is_empty() {
        // SAFETY: `rest` is valid for its length; `fd` is the pipe's write end.
        let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
        if n > 0 {
            rest = &rest[n as usize..];
        } else if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
        {
            continue;
        } else {
            code = 1;
            break;
        }
    }
    // SAFETY: _exit ends the process without running the parent's destructors or atexit handlers.
    unsafe { libc::_exit(code) }
}

fn tagged(tag: u8, msg: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(msg.len() + 1);
    out.push(tag);
    out.extend_from_slice(msg.as_bytes());
    out
}

/// This process's address space in bytes (`/proc/self/statm`), where Linux says it.
fn address_space_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

fn signal_name(sig: libc::c_int) -> String {
    let name = match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(timeout_ms: u64) -> Limits {
        Limits {
            timeout: Duration::from_millis(timeout_ms),
            ..Limits::DEFAULT
        }
    }

    fn run<T: Serialize + DeserializeOwned>(
        limits: &Limits,
        work: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        let child = Forked::spawn(limits, work).unwrap();
        let pid = child.pid();
        let result = child.reply("in.xml");
        // Reaped: no zombie left behind.
        // SAFETY: waitpid on a pid that is no longer our child only fails.
        assert_eq!(
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) },
            -1
        );
        result
    }

    #[test]
    fn values_come_back_exactly() {
        let v = vec![
            0.1 + 0.2,
            1e300,
            5e-324,
            -0.0,
            12.3e9,
            f64::from(f32::MAX) * 1e9,
        ];
        let back: Vec<f64> = run(&Limits::DEFAULT, || Ok(v.clone())).unwrap();
        assert_eq!(
            back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn errors_and_panics_come_back() {
        match run::<u32>(&Limits::DEFAULT, || {
            Err(Error::input("in.xml: line 3: bad"))
        }) {
            Err(Error::Input(m)) => assert_eq!(m, "in.xml: line 3: bad"),
            other => panic!("{other:?}"),
        }
        match run::<u32>(&Limits::DEFAULT, || Err(Error::runtime("hwloc: EINVAL"))) {
            Err(Error::Runtime(m)) => assert_eq!(m, "hwloc: EINVAL"),
            other => panic!("{other:?}"),
        }
        match run::<u32>(&Limits::DEFAULT, || panic!("index {} out of range", 7)) {
            Err(Error::Runtime(m)) => {
                assert!(
                    m.starts_with("in.xml: ") && m.ends_with("index 7 out of range"),
                    "{m}"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_child_killed_by_a_signal_is_an_input_error() {
        for (sig, name) in [(libc::SIGSEGV, "SIGSEGV"), (libc::SIGABRT, "SIGABRT")] {
            let result = run::<u32>(&Limits::DEFAULT, || {
                // SAFETY: raising a signal in the child, whose default action ends it.
                unsafe { libc::raise(sig) };
                Ok(0)
            });
            match result {
                Err(e @ Error::Input(_)) => {
                    let m = e.to_string();
                    assert!(
                        m.starts_with(&format!("in.xml: hwloc crashed ({name}) loading it")),
                        "{m}"
                    );
                    assert!(!m.contains('\n'));
                    assert_eq!(e.exit_code(), 2);
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_child_past_its_deadline_is_killed() {
        let start = Instant::now();
        let result = run::<u32>(&limits(300), || {
            std::thread::sleep(Duration::from_secs(600));
            Ok(0)
        });
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            start.elapsed()
        );
        match result {
            Err(Error::Input(m)) => {
                assert!(m.contains("did not finish loading it within 0.3 s"), "{m}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_reply_over_the_cap_is_refused() {
        let small = Limits {
            reply_bytes: 1 << 20,
            ..Limits::DEFAULT
        };
        match run(&small, || Ok(vec![7u8; 1 << 20])) {
            Err(Error::Input(m)) => assert!(m.contains("larger than the 1 MiB"), "{m}"),
            other => panic!("{:?}", other.map(|v: Vec<u8>| v.len())),
        }
    }

    #[test]
    fn the_child_address_space_is_capped() {
        let malloc_fails = || {
            // SAFETY: a plain allocation, freed at once.
            let p = unsafe { libc::malloc(1 << 30) };
            let failed = p.is_null();
            // SAFETY: `p` came from malloc (or is null).
            unsafe { libc::free(p) };
            Ok(failed)
        };
        let small = Limits {
            memory_bytes: 64 << 20,
            ..Limits::DEFAULT
        };
        assert!(run(&small, malloc_fails).unwrap());
        assert!(!run(&Limits::DEFAULT, malloc_fails).unwrap());
    }
}
