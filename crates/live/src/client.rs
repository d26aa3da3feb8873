//! The client library: what an application's worker threads use to talk to the daemon.
//!
//! `rerequest` first reads the connection's flag page; while the daemon has not raised
//! it, the answer is "keep" with no system call (see `shm`).

use crate::compact;
use crate::protocol::{
    self, ErrorCode, Frame, MetaInfo, NewUnit, Reply, Request, UnitChanges, UnitInfo, Verdict,
    VERSION,
};
use crate::shm::{FlagPage, KEEP};
use hetsched_core::{Error, Result};
use std::io::{IoSliceMut, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

pub struct Client {
    stream: UnixStream,
    flags: FlagPage,
    input: Vec<u8>,
    output: Vec<u8>,
    scratch: Box<[u8]>,
    id: u64,
    granted: Option<UnitInfo>,
    /// Polling windows for `alloc` replies (which may wait in a queue) and for all other
    /// replies (which the daemon sends at once): one history must not starve the other.
    spin_alloc: SpinWindow,
    spin_other: SpinWindow,
    /// Which window the request in flight uses.
    awaiting_alloc: bool,
    /// The flag page's reply counter when the request in flight was sent.
    replies_seen: u32,
    /// The daemon agreed to the compact encoding of hot-path messages.
    compact: bool,
}

/// How long to poll the socket for a reply before sleeping in `read`, adapted like an
/// adaptive mutex: a reply that arrived while polling opens the window fully, one that
/// needed a sleep halves it, down to closed. Quick answers (`free`, an idle unit) then
/// cost no wake-up on either side; a client whose `alloc`s wait in a queue soon stops
/// polling and leaves the CPU to others, probing with a full window now and then (a
/// shorter probe than one exchange could never succeed and would keep it closed).
struct SpinWindow {
    window: Duration,
    sleeps: u32,
}

impl SpinWindow {
    const MAX: Duration = Duration::from_micros(40);
    const MIN: Duration = Duration::from_micros(2);
    /// While the window is closed, every this many requests poll for `MAX`.
    const PROBE_EVERY: u32 = 16;

    fn new() -> SpinWindow {
        SpinWindow {
            window: Self::MAX,
            sleeps: 0,
        }
    }

    fn budget(&mut self) -> Duration {
        if self.window.is_zero() {
            self.sleeps += 1;
            if self.sleeps.is_multiple_of(Self::PROBE_EVERY) {
                return Self::MAX;
            }
        }
        self.window
    }

    fn record(&mut self, answered_while_polling: bool) {
        self.window = if answered_while_polling {
            Self::MAX
        } else if self.window / 2 < Self::MIN {
            Duration::ZERO
        } else {
            self.window / 2
        };
    }
}

/// A daemon's error reply, as an error of this library.
fn daemon_error(code: ErrorCode, message: String) -> Error {
    match code {
        ErrorCode::NoUnit | ErrorCode::Invalid | ErrorCode::PermissionDenied => {
            Error::Input(format!("daemon: {message}"))
        }
        _ => Error::Runtime(format!("daemon: {code:?}: {message}")),
    }
}

impl Client {
    /// Connects and says hello, asking for the compact encoding of the hot-path
    /// messages; fails with a message saying how to start a daemon when none listens at
    /// `path`.
    pub fn connect(path: &Path, name: &str) -> Result<Client> {
        Self::connect_with(path, name, true)
    }

    /// As [`Client::connect`]; `compact: false` keeps every message JSON.
    pub fn connect_with(path: &Path, name: &str, compact: bool) -> Result<Client> {
        let stream = UnixStream::connect(path).map_err(|e| {
            Error::Runtime(format!(
                "no hetsched daemon at {} ({e}); start one with `hetsched daemon --socket {}`",
                path.display(),
                path.display()
            ))
        })?;
        let mut out = Vec::new();
        protocol::encode(
            &Request::Hello {
                version: VERSION,
                name: name.to_string(),
                compact,
            },
            &mut out,
        );
        (&stream)
            .write_all(&out)
            .map_err(|e| Error::runtime(format!("daemon connection: {e}")))?;
        let (input, fd) = Self::receive_welcome(&stream)?;
        let mut client = Client {
            stream,
            flags: FlagPage::from_fd(fd).map_err(Error::runtime)?,
            input,
            output: Vec::new(),
            scratch: vec![0; 4096].into_boxed_slice(),
            id: 0,
            granted: None,
            spin_alloc: SpinWindow::new(),
            spin_other: SpinWindow::new(),
            awaiting_alloc: false,
            replies_seen: 0,
            compact: false,
        };
        match client.reply()? {
            Reply::Welcome {
                client: id,
                compact: agreed,
                ..
            } => {
                client.id = id;
                client.compact = agreed;
            }
            other => {
                return Err(Error::runtime(format!(
                    "daemon: expected welcome, got {other:?}"
                )))
            }
        }
        Ok(client)
    }

    /// Reads the first bytes with recvmsg to collect the flag page descriptor.
    fn receive_welcome(stream: &UnixStream) -> Result<(Vec<u8>, OwnedFd)> {
        let mut buf = vec![0u8; 4096];
        let mut cmsg = nix::cmsg_space!([std::os::fd::RawFd; 1]);
        let mut iov = [IoSliceMut::new(&mut buf)];
        let msg = nix::sys::socket::recvmsg::<()>(
            stream.as_raw_fd(),
            &mut iov,
            Some(&mut cmsg),
            nix::sys::socket::MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .map_err(|e| Error::runtime(format!("daemon connection: {e}")))?;
        let n = msg.bytes;
        let mut fd = None;
        for c in msg
            .cmsgs()
            .map_err(|e| Error::runtime(format!("daemon connection: {e}")))?
        {
            if let nix::sys::socket::ControlMessageOwned::ScmRights(fds) = c {
                // SAFETY: the kernel just installed these descriptors for us.
                fd = fds.first().map(|&f| unsafe { OwnedFd::from_raw_fd(f) });
            }
        }
        if n == 0 {
            return Err(Error::runtime("daemon closed the connection during hello"));
        }
        buf.truncate(n);
        let fd = fd.ok_or_else(|| Error::runtime("daemon sent no flag page with welcome"))?;
        Ok((buf, fd))
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    fn request(&mut self, r: &Request) -> Result<Reply> {
        self.output.clear();
        self.awaiting_alloc = matches!(r, Request::Alloc { .. });
        self.replies_seen = self.flags.replies();
        if !(self.compact && compact::encode_request(r, &mut self.output)) {
            protocol::encode(r, &mut self.output);
        }
        self.stream
            .write_all(&self.output)
            .map_err(|e| Error::runtime(format!("daemon connection: {e}")))?;
        self.reply()
    }

    fn reply(&mut self) -> Result<Reply> {
        loop {
            match protocol::next_frame(&self.input, protocol::MAX_REPLY) {
                Frame::Body(body, used) => {
                    let reply = serde_json::from_slice::<Reply>(body)
                        .map_err(|e| Error::runtime(format!("daemon sent a bad frame: {e}")));
                    self.input.drain(..used);
                    return reply;
                }
                Frame::Compact(body, used) => {
                    let reply = compact::decode_reply(body)
                        .map_err(|e| Error::runtime(format!("daemon sent a bad frame: {e}")));
                    self.input.drain(..used);
                    return reply;
                }
                Frame::TooLarge(n) => {
                    return Err(Error::runtime(format!("daemon sent a frame of {n} bytes")))
                }
                Frame::Incomplete => {
                    self.poll_for_reply();
                    let n = self
                        .stream
                        .read(&mut self.scratch)
                        .map_err(|e| Error::runtime(format!("daemon connection: {e}")))?;
                    if n == 0 {
                        return Err(Error::runtime("daemon closed the connection"));
                    }
                    self.input.extend_from_slice(&self.scratch[..n]);
                }
            }
        }
    }

    /// Polls the flag page's reply counter for up to the spin window, so that the `read`
    /// that follows finds the reply there rather than sleeping for it.
    fn poll_for_reply(&mut self) {
        let spin = if self.awaiting_alloc {
            &mut self.spin_alloc
        } else {
            &mut self.spin_other
        };
        let budget = spin.budget();
        if budget.is_zero() {
            return;
        }
        let start = Instant::now();
        loop {
            let replies = self.flags.replies();
            if replies != self.replies_seen {
                self.replies_seen = replies;
                spin.record(true);
                return;
            }
            if start.elapsed() >= budget {
                spin.record(false);
                return;
            }
            std::hint::spin_loop();
        }
    }

    /// Blocks until a unit is granted for this connection's task.
    pub fn alloc(&mut self, meta: &MetaInfo) -> Result<UnitInfo> {
        match self.request(&Request::Alloc { meta: meta.clone() })? {
            Reply::Granted { unit, .. } => {
                self.granted = Some(unit.clone());
                Ok(unit)
            }
            Reply::Error { code, message } => Err(daemon_error(code, message)),
            other => Err(Error::runtime(format!("daemon: unexpected {other:?}"))),
        }
    }

    /// At a checkpoint. In the granted slice this is one atomic load.
    pub fn rerequest(&mut self) -> Result<Verdict> {
        if self.flags.get() == KEEP {
            return Ok(Verdict::Keep);
        }
        match self.request(&Request::Rerequest)? {
            Reply::Rerequest { verdict } => Ok(verdict),
            Reply::Error { code, message } => Err(daemon_error(code, message)),
            other => Err(Error::runtime(format!("daemon: unexpected {other:?}"))),
        }
    }

    /// Releases the unit (`finished`: the task is done).
    pub fn free(&mut self, finished: bool) -> Result<()> {
        self.granted = None;
        self.expect_done(&Request::Free { finished }, |r| matches!(r, Reply::Freed))
    }

    fn expect_done(&mut self, r: &Request, ok: impl Fn(&Reply) -> bool) -> Result<()> {
        match self.request(r)? {
            reply if ok(&reply) => Ok(()),
            Reply::Error { code, message } => Err(daemon_error(code, message)),
            other => Err(Error::runtime(format!("daemon: unexpected {other:?}"))),
        }
    }

    pub fn list_units(&mut self) -> Result<Vec<UnitInfo>> {
        match self.request(&Request::ListUnits)? {
            Reply::Units { units } => Ok(units),
            Reply::Error { code, message } => Err(daemon_error(code, message)),
            other => Err(Error::runtime(format!("daemon: unexpected {other:?}"))),
        }
    }

    pub fn add_unit(&mut self, unit: NewUnit) -> Result<()> {
        self.expect_done(&Request::AddUnit { unit }, |r| matches!(r, Reply::Done))
    }

    pub fn remove_unit(&mut self, id: u32) -> Result<()> {
        self.expect_done(&Request::RemoveUnit { id }, |r| matches!(r, Reply::Done))
    }

    pub fn alter_unit(&mut self, id: u32, changes: UnitChanges) -> Result<()> {
        self.expect_done(&Request::AlterUnit { id, changes }, |r| {
            matches!(r, Reply::Done)
        })
    }

    pub fn stats(&mut self) -> Result<Reply> {
        self.request(&Request::Stats)
    }
}
