//! The client library: what an application's worker threads use to talk to the daemon.
//!
//! `rerequest` first reads the flag word of the connection's shared page; while the
//! daemon has not raised it, the answer is "keep" with no system call. The other
//! hot-path requests go through the page's slots, not the socket (see `shm`).
//!
//! A client waiting for a reply polls for a while before it sleeps. When the daemon
//! runs on its CPU, the daemon can only answer once the client leaves the CPU, so the
//! client yields it instead of spinning (`shm` says why).

use crate::compact;
use crate::protocol::{
    self, ErrorCode, Frame, GraphTaskInfo, MetaInfo, NewUnit, Reply, Request, UnitChanges,
    UnitInfo, Verdict, VERSION,
};
use crate::shm::{self, SharedPage, KEEP, SLOT};
use hetsched_core::graph::TaskGraph;
use hetsched_core::{Error, Result};
use std::io::{IoSliceMut, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// How a client's requests travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Every message JSON on the socket.
    Json,
    /// The hot path in the compact encoding, on the socket.
    CompactSocket,
    /// The hot path in the compact encoding, through the shared page (the default);
    /// everything else JSON on the socket.
    SharedPage,
}

/// How long a client sleeps on its reply slot before it checks that the daemon still
/// holds the connection (a daemon that died cannot wake it).
const LIVENESS_CHECK: Duration = Duration::from_millis(50);

/// How long `connect` waits for the daemon's `welcome`.
const WELCOME_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Client {
    stream: UnixStream,
    page: SharedPage,
    /// Rung (an eventfd write) after posting a request while the daemon sleeps; `None`
    /// when the hot path uses the socket.
    doorbell: Option<OwnedFd>,
    input: Vec<u8>,
    output: Vec<u8>,
    scratch: Box<[u8]>,
    id: u64,
    granted: Option<UnitInfo>,
    /// Polling windows for all replies but `alloc`'s (which the daemon sends at once)
    /// and for `alloc` replies (which may wait in a queue), indexed by `awaiting_alloc`:
    /// one history must not starve the other.
    spins: [SpinWindow; 2],
    /// Which window the request in flight uses.
    awaiting_alloc: bool,
    /// The page's socket-reply counter when the request in flight was sent.
    replies_seen: u32,
    /// The CPU this thread ran on when it sent the request in flight, as published in
    /// the page.
    cpu: u32,
    /// The daemon agreed to the compact encoding of hot-path messages.
    compact: bool,
    /// The last request was answered with an error (see [`Client::refused`]).
    refused: bool,
}

/// How long to poll for a reply before sleeping (in `futex` or `read`), adapted like an
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

    /// Polls `answered` for up to the window (and adapts it); whether it became true.
    fn poll(&mut self, answered: impl Fn() -> bool) -> bool {
        let budget = self.budget();
        if budget.is_zero() {
            return answered();
        }
        let start = Instant::now();
        // Spins a few times, then yields: with more runnable threads than CPUs, a client
        // that only spun would hold a CPU the daemon or the next client needs.
        let backoff = crossbeam_utils::Backoff::new();
        loop {
            if answered() {
                self.record(true);
                return true;
            }
            if start.elapsed() >= budget {
                self.record(false);
                return false;
            }
            backoff.snooze();
        }
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

/// A reply out of a frame, with the bytes it used; `None` while it is incomplete.
fn decode_reply(frame: Frame<'_>) -> Option<(Result<Reply>, usize)> {
    let bad = |e: String| Error::runtime(format!("daemon sent a bad frame: {e}"));
    Some(match frame {
        Frame::Incomplete => return None,
        Frame::Body(body, used) => (
            serde_json::from_slice::<Reply>(body).map_err(|e| bad(e.to_string())),
            used,
        ),
        Frame::Compact(body, used) => (compact::decode_reply(body).map_err(bad), used),
        Frame::TooLarge(n) => (
            Err(Error::runtime(format!("daemon sent a frame of {n} bytes"))),
            0,
        ),
    })
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
    /// messages, which then go through the shared page; fails with a message saying how
    /// to start a daemon when none listens at `path`.
    pub fn connect(path: &Path, name: &str) -> Result<Client> {
        Self::connect_with(path, name, Transport::SharedPage)
    }

    /// As [`Client::connect`], with the hot path on the given transport.
    pub fn connect_with(path: &Path, name: &str, transport: Transport) -> Result<Client> {
        let compact = transport != Transport::Json;
        let stream = UnixStream::connect(path).map_err(|e| {
            Error::Input(format!(
                "no hetsched daemon at {} ({e}); start one with `hetsched daemon --socket {}`",
                path.display(),
                path.display()
            ))
        })?;
        // Before a byte is sent: the meta a client sends names its program and pid, and
        // a program waits stopped for the daemon's grant.
        crate::trust::daemon(&stream, path)?;
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
        // A daemon that cannot take the connection (e.g. out of descriptors) leaves it
        // in its backlog: say so instead of waiting for ever.
        let set_timeout = |t| {
            stream
                .set_read_timeout(t)
                .map_err(|e| Error::runtime(format!("daemon connection: {e}")))
        };
        set_timeout(Some(WELCOME_TIMEOUT))?;
        let (input, page, doorbell) = Self::receive_welcome(&stream)?;
        set_timeout(None)?;
        let mut client = Client {
            stream,
            page: SharedPage::from_fd(page).map_err(Error::runtime)?,
            doorbell,
            input,
            output: Vec::new(),
            scratch: vec![0; 4096].into_boxed_slice(),
            id: 0,
            granted: None,
            spins: [SpinWindow::new(), SpinWindow::new()],
            awaiting_alloc: false,
            replies_seen: 0,
            cpu: u32::MAX, // none published yet
            compact: false,
            refused: false,
        };
        match client.reply()? {
            Reply::Welcome {
                client: id,
                compact: agreed,
                ..
            } => {
                client.id = id;
                client.compact = agreed;
                if !(agreed && transport == Transport::SharedPage) {
                    client.doorbell = None;
                }
            }
            other => {
                return Err(Error::runtime(format!(
                    "daemon: expected welcome, got {other:?}"
                )))
            }
        }
        Ok(client)
    }

    /// Reads the first bytes with recvmsg to collect the shared page and the doorbell.
    fn receive_welcome(stream: &UnixStream) -> Result<(Vec<u8>, OwnedFd, Option<OwnedFd>)> {
        let mut buf = vec![0u8; 4096];
        let mut cmsg = nix::cmsg_space!([std::os::fd::RawFd; 2]);
        let mut iov = [IoSliceMut::new(&mut buf)];
        let msg = nix::sys::socket::recvmsg::<()>(
            stream.as_raw_fd(),
            &mut iov,
            Some(&mut cmsg),
            nix::sys::socket::MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .map_err(|e| match e {
            nix::errno::Errno::EAGAIN => Error::runtime(format!(
                "the daemon did not answer hello within {} s (out of descriptors or stopped?)",
                WELCOME_TIMEOUT.as_secs()
            )),
            e => Error::runtime(format!("daemon connection: {e}")),
        })?;
        let n = msg.bytes;
        let mut fds = Vec::new();
        for c in msg
            .cmsgs()
            .map_err(|e| Error::runtime(format!("daemon connection: {e}")))?
        {
            if let nix::sys::socket::ControlMessageOwned::ScmRights(received) = c {
                // SAFETY: the kernel just installed these descriptors for us.
                fds.extend(received.iter().map(|&f| unsafe { OwnedFd::from_raw_fd(f) }));
            }
        }
        if n == 0 {
            return Err(Error::runtime("daemon closed the connection during hello"));
        }
        buf.truncate(n);
        let mut fds = fds.into_iter();
        let page = fds
            .next()
            .ok_or_else(|| Error::runtime("daemon sent no shared page with welcome"))?;
        Ok((buf, page, fds.next()))
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    fn request(&mut self, r: &Request) -> Result<Reply> {
        let reply = self.exchange(r);
        self.refused = matches!(reply, Ok(Reply::Error { .. }));
        reply
    }

    /// The last request was answered with an error: the daemon refused it (and may
    /// have closed the connection after, as it does for a protocol error). A request
    /// that got no answer at all, its connection closed, met a daemon that is gone.
    pub fn refused(&self) -> bool {
        self.refused
    }

    fn exchange(&mut self, r: &Request) -> Result<Reply> {
        self.output.clear();
        self.awaiting_alloc = matches!(r, Request::Alloc { .. });
        self.replies_seen = self.page.socket_replies();
        // Published only when it changed: a store on the line the daemon polls costs
        // a cache-line transfer more per request.
        let cpu = shm::this_cpu();
        if cpu != self.cpu {
            self.cpu = cpu;
            self.page.set_client_cpu(cpu);
        }
        let compact = self.compact && compact::encode_request(r, &mut self.output);
        if !compact {
            protocol::encode(r, &mut self.output);
        }
        if self.output.len() > 4 + protocol::MAX_REQUEST {
            return Err(Error::Input(format!(
                "a request of {} bytes; the daemon accepts at most {} (fewer requests in a batch, or shorter kind names)",
                self.output.len() - 4,
                protocol::MAX_REQUEST
            )));
        }
        if compact && self.output.len() <= SLOT {
            if let Some(bell) = &self.doorbell {
                let seen = self.page.reply_seq();
                if self.page.post_request(&self.output) {
                    rustix::io::write(bell, &1u64.to_ne_bytes())
                        .map_err(|e| Error::runtime(format!("daemon doorbell: {e}")))?;
                }
                return self.page_reply(seen);
            }
        }
        self.stream
            .write_all(&self.output)
            .map_err(|e| Error::runtime(format!("daemon connection: {e}")))?;
        self.reply()
    }

    /// Polls `answered` for the spin window of the request in flight, or, if the daemon
    /// runs on this client's CPU, yields the CPU to it between looks for up to the
    /// longest window; whether it became true.
    fn poll(&mut self, answered: impl Fn(&SharedPage) -> bool) -> bool {
        let page = &self.page;
        if page.daemon_cpu() == Some(self.cpu) {
            let start = Instant::now();
            while !answered(page) {
                if start.elapsed() >= SpinWindow::MAX {
                    return false;
                }
                std::thread::yield_now();
            }
            return true;
        }
        self.spins[self.awaiting_alloc as usize].poll(|| answered(page))
    }

    /// Waits for the reply to the request posted in the page when its reply sequence
    /// number was `seen`: polls (see [`Client::poll`]), then sleeps on it, checking now
    /// and then that the daemon is still there.
    fn page_reply(&mut self, seen: u32) -> Result<Reply> {
        if !self.poll(|page| page.reply_seq() != seen) {
            while self.page.reply_seq() == seen {
                self.page.wait_reply(seen, LIVENESS_CHECK);
                if self.page.reply_seq() == seen && self.daemon_hung_up()? {
                    return Err(Error::runtime("daemon closed the connection"));
                }
            }
        }
        self.output.clear();
        if !self.page.take_reply(&mut self.output) {
            return self.reply(); // too large for the slot: on the socket
        }
        match decode_reply(protocol::next_frame(&self.output, SLOT)) {
            Some((reply, _)) => reply,
            None => Err(Error::runtime("daemon sent a truncated frame in the page")),
        }
    }

    /// The daemon is gone: its end of the connection is closed (it died, or dropped
    /// this client) and the last request was not refused (a daemon closes the
    /// connection after refusing a request that breaks the protocol: that is the
    /// request's fault, not a loss).
    pub fn daemon_gone(&self) -> bool {
        !self.refused && self.daemon_hung_up().unwrap_or(true)
    }

    /// Whether the daemon's end of the socket is closed (it died or dropped us).
    fn daemon_hung_up(&self) -> Result<bool> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        use std::os::fd::AsFd;
        let mut fds = [PollFd::new(self.stream.as_fd(), PollFlags::POLLIN)];
        poll(&mut fds, PollTimeout::ZERO)
            .map_err(|e| Error::runtime(format!("daemon connection: {e}")))?;
        // Readable with no reply due on the socket: only its end-of-file can be there.
        Ok(fds[0].revents().is_some_and(|r| !r.is_empty()))
    }

    fn reply(&mut self) -> Result<Reply> {
        loop {
            let frame = protocol::next_frame(&self.input, protocol::MAX_REPLY);
            if let Some((reply, used)) = decode_reply(frame) {
                self.input.drain(..used);
                return reply;
            }
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

    /// Polls the page's socket-reply counter (see [`Client::poll`]), so that the `read`
    /// that follows finds the reply there rather than sleeping for it.
    fn poll_for_reply(&mut self) {
        let seen = self.replies_seen;
        if self.poll(|page| page.socket_replies() != seen) {
            self.replies_seen = self.page.socket_replies();
        }
    }

    /// Blocks until a unit is granted for this connection's task.
    pub fn alloc(&mut self, meta: &MetaInfo) -> Result<UnitInfo> {
        self.alloc_with_memory(meta).map(|(unit, _)| unit)
    }

    /// As [`Client::alloc`], with the NUMA node the task's process should now keep its
    /// memory on, when the daemon says so (a task that named its `pid`, as
    /// `hetsched run` does).
    pub fn alloc_with_memory(&mut self, meta: &MetaInfo) -> Result<(UnitInfo, Option<u32>)> {
        match self.request(&Request::Alloc { meta: meta.clone() })? {
            Reply::Granted {
                unit, memory_node, ..
            } => {
                self.granted = Some(unit.clone());
                Ok((unit, memory_node))
            }
            Reply::Error { code, message } => Err(daemon_error(code, message)),
            other => Err(Error::runtime(format!("daemon: unexpected {other:?}"))),
        }
    }

    /// At a checkpoint. In the granted slice this is one atomic load.
    pub fn rerequest(&mut self) -> Result<Verdict> {
        if self.page.get() == KEEP {
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

    /// Sends `requests` (1 to [`MAX_BATCH`](protocol::MAX_BATCH) `alloc`, `rerequest`
    /// and `free`, e.g. alloc and free of many small tasks) in one message and returns
    /// their replies, in order, from one message: one round trip for all of them. The
    /// daemon handles them as if they came one by one: an `alloc` that must wait holds
    /// the rest back until it is granted; a request it refuses ends the batch (its reply
    /// is the last one) and the connection.
    pub fn batch(&mut self, requests: Vec<Request>) -> Result<Vec<Reply>> {
        crate::batch::check(&requests).map_err(Error::Input)?;
        let n = requests.len();
        match self.request(&Request::Batch { requests })? {
            Reply::Batch { replies } if replies.len() <= n => {
                // The last grant or free says whether the client holds a unit now.
                let last = replies
                    .iter()
                    .rev()
                    .find(|r| matches!(r, Reply::Granted { .. } | Reply::Freed));
                if let Some(last) = last {
                    self.granted = match last {
                        Reply::Granted { unit, .. } => Some(unit.clone()),
                        _ => None,
                    };
                }
                Ok(replies)
            }
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

    /// Declares a task graph (in as many `graph` parts as its size takes); returns the
    /// id of its task of index 0. Its tasks are then allocated, from any connection of
    /// this uid, with `meta.graph_task` set to their index.
    pub fn declare_graph(&mut self, graph: &TaskGraph) -> Result<u64> {
        // Each part well inside a request frame.
        const PART_BYTES: usize = protocol::MAX_REQUEST / 2;
        const HANDLES_PER_PART: usize = PART_BYTES / 24;
        let info = graph.tasks.iter().map(GraphTaskInfo::from);
        let mut parts: Vec<(Vec<u64>, Vec<GraphTaskInfo>)> = graph
            .data
            .chunks(HANDLES_PER_PART)
            .map(|c| (c.iter().map(|d| d.bytes).collect(), Vec::new()))
            .collect();
        let mut bytes = 0;
        let mut tasks = Vec::new();
        for t in info {
            let size = serde_json::to_vec(&t).map_or(0, |v| v.len()) + 1;
            if bytes + size > PART_BYTES && !tasks.is_empty() {
                parts.push((Vec::new(), std::mem::take(&mut tasks)));
                bytes = 0;
            }
            bytes += size;
            tasks.push(t);
        }
        parts.push((Vec::new(), tasks));
        let count = parts.len();
        for (i, (data, tasks)) in parts.into_iter().enumerate() {
            let last = i + 1 == count;
            match self.request(&Request::Graph { data, tasks, last })? {
                Reply::Done if !last => {}
                Reply::Graph { first, .. } if last => return Ok(first),
                Reply::Error { code, message } => return Err(daemon_error(code, message)),
                other => return Err(Error::runtime(format!("daemon: unexpected {other:?}"))),
            }
        }
        unreachable!("the last part is answered in the loop")
    }
}
