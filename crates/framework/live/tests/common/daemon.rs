//! What the daemon's integration tests share: a daemon child process over a machine
//! file in a temporary directory, raw connections, and a look at the daemon's memory and
//! descriptors in `/proc`. How the child runs the daemon is the test crate's business:
//! `crates/framework/live/tests` re-executes its test binary, which serves from the library
//! (`common/mod.rs`); `crates/tools/cli/tests` (which includes this file) runs
//! `hetsched daemon`.

use hetsched_core::machine::UnitType;
use hetsched_live::client::Client;
use hetsched_live::protocol::{MetaInfo, UnitInfo};
use hetsched_live::shm::SharedPage;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub struct Daemon {
    pub child: Child,
    pub socket: PathBuf,
    pub _dir: tempfile::TempDir,
}

/// A temporary directory with a machine file of `cpus` CPU units (on PUs 0..cpus) and
/// `opencl` OpenCL units; the directory and the file's path.
pub fn machine_dir(cpus: u32, opencl: u32) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let machine = dir.path().join("m.toml");
    let mut text = format!("name = \"test\"\n[[package]]\ncores = {cpus}\n");
    if opencl > 0 {
        text += &format!("[[accelerator]]\ntype = \"opencl\"\nname = \"cl\"\ncount = {opencl}\n");
    }
    std::fs::write(&machine, text).unwrap();
    (dir, machine)
}

/// Where a daemon started in `dir` listens.
pub fn socket_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("run/daemon.sock")
}

impl Daemon {
    /// Spawns `command` (a daemon listening on [`socket_in`] `dir`) and waits until it
    /// serves.
    pub fn spawn(mut command: Command, dir: tempfile::TempDir) -> Daemon {
        let socket = socket_in(&dir);
        let child = command.spawn().unwrap();
        // A connect succeeds as soon as the socket is bound, before the daemon has made
        // its poll, waker and signal descriptors; a welcome proves its loop runs.
        let start = Instant::now();
        while Client::connect(&socket, "probe").is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
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

    /// The daemon's units, as a fresh client sees them.
    pub fn units(&self) -> Vec<UnitInfo> {
        self.client().list_units().unwrap()
    }

    pub fn client(&self) -> Client {
        Client::connect(&self.socket, "test").unwrap()
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

pub fn meta(cpu: f64, opencl: f64) -> MetaInfo {
    MetaInfo {
        kind: "t".into(),
        affinity: [(UnitType::Cpu, cpu), (UnitType::OpenCl, opencl)]
            .into_iter()
            .collect(),
        weight: 1024,
        ..MetaInfo::default()
    }
}

pub fn frame(json: &str) -> Vec<u8> {
    let mut v = (json.len() as u32).to_le_bytes().to_vec();
    v.extend_from_slice(json.as_bytes());
    v
}

/// A raw connection that said a compact hello and mapped the shared page and doorbell
/// that came with `welcome`.
pub fn raw_paged(socket: &Path) -> (UnixStream, SharedPage, std::os::fd::OwnedFd) {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    let mut s = UnixStream::connect(socket).unwrap();
    s.write_all(&frame(
        r#"{"op":"hello","version":1,"name":"raw","compact":true}"#,
    ))
    .unwrap();
    let mut buf = [0u8; 512];
    let mut cmsg = nix::cmsg_space!([RawFd; 2]);
    let mut iov = [std::io::IoSliceMut::new(&mut buf)];
    let msg = nix::sys::socket::recvmsg::<()>(
        s.as_raw_fd(),
        &mut iov,
        Some(&mut cmsg),
        nix::sys::socket::MsgFlags::empty(),
    )
    .unwrap();
    let mut fds = Vec::new();
    for c in msg.cmsgs().unwrap() {
        if let nix::sys::socket::ControlMessageOwned::ScmRights(received) = c {
            // SAFETY: the kernel just installed these descriptors for us.
            fds.extend(
                received
                    .into_iter()
                    .map(|f| unsafe { OwnedFd::from_raw_fd(f) }),
            );
        }
    }
    assert_eq!(fds.len(), 2, "welcome brings the page and the doorbell");
    let bell = fds.pop().unwrap();
    (s, SharedPage::from_fd(fds.pop().unwrap()).unwrap(), bell)
}

/// Posts `frame` in a raw connection's page, rings its doorbell and waits for the reply
/// in the page (failing after a minute).
pub fn page_exchange(page: &SharedPage, bell: &std::os::fd::OwnedFd, frame: &[u8]) {
    let seen = page.reply_seq();
    page.post_request(frame);
    rustix::io::write(bell, &1u64.to_ne_bytes()).unwrap();
    let start = Instant::now();
    while page.reply_seq() == seen {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no reply in the page"
        );
        page.wait_reply(seen, Duration::from_millis(10));
    }
}

impl Daemon {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The daemon's open descriptors.
    pub fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .unwrap()
            .count()
    }

    /// The daemon's descriptors once their number has held still for 200 ms (the
    /// daemon closes a departed client's on its next turn).
    pub fn settled_fd_list(&self) -> Vec<String> {
        let mut last = self.fd_list();
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let now = self.fd_list();
            if now == last {
                return now;
            }
            last = now;
        }
    }

    /// The daemon's open descriptors and what each is (for failure messages).
    #[allow(dead_code)] // not every test file lists them
    pub fn fd_list(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .unwrap()
            .filter_map(|e| {
                let e = e.ok()?;
                let target = std::fs::read_link(e.path()).ok()?;
                Some(format!(
                    "{} -> {}",
                    e.file_name().to_string_lossy(),
                    target.display()
                ))
            })
            .collect();
        v.sort();
        v
    }

    /// A `kB` figure of the daemon's `/proc/PID/status` (`VmRSS`, `VmHWM`).
    pub fn status_kb(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc/{}/status", self.pid()))
    }

    /// Stops the daemon with `sig`; it must exit with success, its socket removed.
    /// Returns its stderr when that was piped.
    pub fn stop_with(&mut self, sig: nix::sys::signal::Signal) -> String {
        use std::io::Read;
        self.signal(sig);
        let status = self.child.wait().unwrap();
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            pipe.read_to_string(&mut stderr).unwrap();
        }
        assert!(status.success(), "{status}: {stderr}");
        assert!(!self.socket.exists(), "socket left behind");
        stderr
    }

    /// Panics unless the daemon process still runs.
    pub fn assert_alive(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!("the daemon died: {status}");
        }
    }
}

/// Waits up to `limit` for `done`, looking every 10 ms; whether it came true.
pub fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// A `hello` then `alloc` and a `stats` request, as raw JSON frames.
pub const ALLOC: &str = r#"{"op":"alloc","meta":{"kind":"hostile","affinity":{"cpu":1}}}"#;
pub const STATS: &str = r#"{"op":"stats"}"#;

/// A raw connection that said a JSON hello and read the `welcome` (the page and doorbell
/// that came with it are closed unread).
pub fn raw_json(socket: &Path) -> UnixStream {
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(&frame(r#"{"op":"hello","version":1,"name":"raw"}"#))
        .unwrap();
    assert!(read_frame(&mut s).contains("welcome"));
    s
}

/// The next JSON frame from the daemon, as text.
pub fn read_frame(s: &mut UnixStream) -> String {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_le_bytes(len) as usize];
    s.read_exact(&mut body).unwrap();
    String::from_utf8_lossy(&body).into_owned()
}

/// Allocates in a thread; the receiver gets the granted unit id.
pub fn alloc_in_thread(
    socket: &Path,
    m: MetaInfo,
) -> (mpsc::Receiver<u32>, std::thread::JoinHandle<Client>) {
    let (tx, rx) = mpsc::channel();
    let socket = socket.to_path_buf();
    let h = std::thread::spawn(move || {
        let mut c = Client::connect(&socket, "waiter").unwrap();
        let unit = c.alloc(&m).unwrap();
        tx.send(unit.id).unwrap();
        c
    });
    (rx, h)
}

/// Whether the daemon has closed `s` (end of stream), waiting up to `limit`.
pub fn closed_within(s: &mut UnixStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue, // a reply (e.g. welcome): keep reading
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false
            }
            Err(_) => return true, // reset: closed too
        }
    }
}

/// Writes `bytes` to `flood` again and again, calling `between` after each write, until
/// the daemon hangs up on it; the daemon must stay below 512 MiB and hang up within
/// 120 s.
pub fn flood_until_dropped(
    d: &Daemon,
    flood: &mut UnixStream,
    bytes: &[u8],
    mut between: impl FnMut(),
) {
    let start = Instant::now();
    let dropped = loop {
        if let Err(e) = flood.write_all(bytes) {
            break e;
        }
        between();
        let rss = d.status_kb("VmRSS");
        assert!(rss < 512 << 10, "the daemon grew to {rss} kB");
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "not dropped after 120 s"
        );
    };
    assert!(
        matches!(
            dropped.kind(),
            ErrorKind::BrokenPipe | ErrorKind::ConnectionReset
        ),
        "the flood should end because the daemon hung up: {dropped}"
    );
}
