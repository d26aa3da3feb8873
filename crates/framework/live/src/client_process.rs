//! A process a client names in its meta information (`MetaInfo::pid`, as `hetsched
//! run`'s agent names its program): the daemon measures it for the policy's ticks and
//! `stats` (see `sampler`).
//!
//! The daemon believes no pid. What a sample reveals (CPU time, run-queue waits, the
//! CPU it ran on) is another user's business, and reading a process is work the client
//! makes the daemon do, so a client may name only a process it could act on itself: one
//! whose real, effective and saved uids are all the client's (`SO_PEERCRED`), the rule
//! `ptrace` applies; root may name any process but the daemon itself. The check holds
//! the process by a pidfd taken before it reads `/proc`, and looks again after: if the
//! pid was recycled in between, the pidfd's process has ended and the check refuses,
//! so a verdict is never about a process other than the one the pidfd holds. The
//! sampler keeps the pidfd and stops reading the pid once it says the process ended.
//! The daemon never signals or re-pins a named process (the agent does that, to its own
//! child); it only reads it.

use rustix::event::{poll, PollFd, PollFlags};
use rustix::process::{pidfd_open, Pid, PidfdFlags};
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// A process a client may name, held by a pidfd (clones share it).
#[derive(Clone, Debug)]
pub struct ClientProcess {
    pid: u32,
    /// When it started (clock ticks after boot, `/proc/PID/stat` field 22): with the
    /// pid, it names this process and no later one that reuses the pid.
    start: u64,
    pidfd: Arc<OwnedFd>,
}

/// Which process a [`ClientProcess`] is, over its whole life.
pub type ProcessKey = (u32, u64);

impl ClientProcess {
    /// Process `pid`, if a client of uid `client_uid` may name it; else why not (a
    /// message for the client). To a client other than root, a process of another
    /// user and no process at all look the same: the daemon reads `/proc` as root, and
    /// must not tell which pids exist where `/proc` hides them (`hidepid`).
    pub fn check(pid: u32, client_uid: u32) -> Result<ClientProcess, String> {
        if pid == 0 || pid > i32::MAX as u32 {
            return Err(format!("pid {pid} is not a process id"));
        }
        let not_yours = || {
            if client_uid == 0 {
                format!("no process {pid}")
            } else {
                format!(
                    "pid {pid} is not a process of yours: a client of uid {client_uid} may name \
                     only processes whose real, effective and saved uids are all {client_uid}"
                )
            }
        };
        if pid == std::process::id() {
            return Err(if client_uid == 0 || client_uid == own_uid() {
                format!("pid {pid} is the daemon itself")
            } else {
                not_yours()
            });
        }
        let raw = Pid::from_raw(pid as i32).expect("positive");
        let pidfd = pidfd_open(raw, PidfdFlags::empty()).map_err(|_| not_yours())?;
        // The main thread's files: the process's own `stat` sums over every thread (a
        // client chooses how many), these cost the same whatever it has.
        let main = format!("/proc/{pid}/task/{pid}");
        let read = |file: &str| std::fs::read_to_string(format!("{main}/{file}")).ok();
        let (Some(status), Some(stat)) = (read("status"), read("stat")) else {
            return Err(not_yours());
        };
        let process = ClientProcess {
            pid,
            start: start_time(&stat).ok_or_else(not_yours)?,
            pidfd: Arc::new(pidfd),
        };
        // Read after the pidfd was taken: if the process is still alive now, what was
        // read is of the process the pidfd holds.
        if !process.alive() || !owned_by(&status, client_uid) {
            return Err(not_yours());
        }
        Ok(process)
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn key(&self) -> ProcessKey {
        (self.pid, self.start)
    }

    /// The process has not ended (its pidfd is not readable yet). Reading `/proc/PID`
    /// between two looks that say so reads this process, not a later one.
    pub fn alive(&self) -> bool {
        loop {
            let mut fds = [PollFd::new(&*self.pidfd, PollFlags::IN)];
            match poll(&mut fds, Some(&rustix::time::Timespec::default())) {
                Ok(n) => return n == 0,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return false,
            }
        }
    }

    /// Whether it is still the client's (its uids have not changed since the check: a
    /// process may `exec` a set-user-ID program), and how many threads it has now, from
    /// its main thread's status (the same cost whatever it has); `None` when it ended.
    pub fn status(&self, client_uid: u32) -> Option<(bool, usize)> {
        let status =
            std::fs::read_to_string(format!("/proc/{0}/task/{0}/status", self.pid)).ok()?;
        let threads = status
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .and_then(|n| n.trim().parse().ok())?;
        self.alive()
            .then(|| (owned_by(&status, client_uid), threads))
    }
}

fn own_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// A `/proc/PID/status` of a process a client of uid `client_uid` may name: root may
/// name any; another uid one whose real, effective and saved uids are all its own.
fn owned_by(status: &str, client_uid: u32) -> bool {
    client_uid == 0 || uids(status).is_some_and(|ids| ids.iter().all(|&u| u == client_uid))
}

/// The real, effective and saved uids of a `/proc/PID/status`.
fn uids(status: &str) -> Option<[u32; 3]> {
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    let mut ids = line.split_ascii_whitespace().map(|u| u.parse().ok());
    Some([ids.next()??, ids.next()??, ids.next()??])
}

/// Field 22 (start time) of a `/proc/PID/stat`.
fn start_time(stat: &str) -> Option<u64> {
    crate::process::stat_field(stat, 22)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_may_name_its_own_process_and_not_the_daemon() {
        let me = rustix::process::getuid().as_raw();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let p = ClientProcess::check(child.id(), me).unwrap();
        assert_eq!(p.pid(), child.id());
        assert!(p.alive());
        let again = ClientProcess::check(child.id(), me).unwrap();
        assert_eq!(p.key(), again.key());
        assert_eq!(p.status(me), Some((true, 1)));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!p.alive());
        assert_eq!(p.status(me), None);
        let gone = ClientProcess::check(child.id(), me).unwrap_err();
        if me == 0 {
            assert_eq!(gone, format!("no process {}", child.id()));
        } else {
            assert!(gone.contains("is not a process of yours"), "{gone}");
        }
        let e = ClientProcess::check(std::process::id(), me).unwrap_err();
        assert!(e.ends_with("is the daemon itself"), "{e}");
        for pid in [0, u32::MAX] {
            let e = ClientProcess::check(pid, me).unwrap_err();
            assert!(e.ends_with("is not a process id"), "{e}");
        }
    }

    /// Another uid may not name a process of root's, and cannot tell it from no
    /// process at all (as root, the test names PID 1 as uid 65534; elsewhere it names
    /// PID 1 as itself, unless PID 1 is its own, as in a rootless container).
    #[test]
    fn another_uids_process_is_refused_as_if_there_were_none() {
        let me = rustix::process::getuid().as_raw();
        let client = if me == 0 { 65534 } else { me };
        let pid1 = std::fs::read_to_string("/proc/1/status").unwrap_or_default();
        if owned_by(&pid1, client) {
            eprintln!("PID 1 runs as uid {client}: nothing to refuse; nothing checked");
            return;
        }
        let e = ClientProcess::check(1, client).unwrap_err();
        assert_eq!(
            e,
            format!(
                "pid 1 is not a process of yours: a client of uid {client} may name only \
                 processes whose real, effective and saved uids are all {client}"
            )
        );
        // A pid with no process: the same words.
        let none = (1u32 << 22) + 12345;
        assert_eq!(
            ClientProcess::check(none, client).unwrap_err(),
            e.replace("pid 1 ", &format!("pid {none} "))
        );
        if me == 0 {
            assert!(
                ClientProcess::check(1, 0).is_ok(),
                "root may name any process"
            );
        }
    }

    #[test]
    fn status_and_stat_fields_parse() {
        let status = "Name:\tx\nUid:\t1000\t1001\t1002\t1003\nGid:\t0\t0\t0\t0\n";
        assert_eq!(uids(status), Some([1000, 1001, 1002]));
        assert_eq!(uids("Name:\tx\n"), None);
        let stat = "42 (a) b (c)) S 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 987654 0";
        assert_eq!(start_time(stat), Some(987654));
    }
}
