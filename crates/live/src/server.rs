//! The daemon's event loop: one thread, one `mio` poll over the listening socket, every
//! client connection and every client's doorbell, plus a look at the request slot of
//! every client's shared page (see `shm`) on each turn; the [`Arbiter`] is its only
//! state. Nothing a client sends can stop it: a bad frame closes that one connection
//! (after an error reply), a vanished client loses its task at once, and the unit goes
//! to the next waiter.

use crate::arbiter::{Arbiter, ClientId, Effect};
use crate::compact;
use crate::protocol::{self, ErrorCode, Frame, Reply, Request, VERSION};
use crate::shm::{SharedPage, ASK, KEEP, SLOT};
use hetsched_core::{Error, Result};
use mio::net::{UnixListener, UnixStream};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};
use std::collections::HashMap;
use std::io::{ErrorKind, IoSlice, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LISTENER: Token = Token(0);
const WAKER: Token = Token(1);
const SIGNAL: Token = Token(2);
/// Client ids start here so that a client's tokens (`2 id` for its socket, `2 id + 1`
/// for its doorbell) never collide with the three above.
const FIRST_CLIENT: u64 = 3;

fn socket_token(client: ClientId) -> Token {
    Token(2 * client as usize)
}

fn doorbell_token(client: ClientId) -> Token {
    Token(2 * client as usize + 1)
}

/// Where a daemon listens unless told otherwise: `$HETSCHED_SOCKET`, else
/// `$XDG_RUNTIME_DIR/hetsched/daemon.sock`, else `/tmp/hetsched-$UID/daemon.sock`.
pub fn default_socket_path() -> PathBuf {
    if let Some(p) = std::env::var_os("HETSCHED_SOCKET") {
        return PathBuf::from(p);
    }
    let dir = match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) => PathBuf::from(d).join("hetsched"),
        None => PathBuf::from(format!("/tmp/hetsched-{}", nix::unistd::getuid())),
    };
    dir.join("daemon.sock")
}

/// Creates the socket's directory (mode 0750) or checks an existing one: it must be
/// ours and writable by nobody else, or another user could replace the socket.
fn prepare_dir(dir: &Path) -> Result<()> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o750)
            .create(dir)
            .map_err(|e| {
                Error::runtime(format!(
                    "{}: cannot create the socket directory: {e}",
                    dir.display()
                ))
            })?;
    }
    let meta =
        std::fs::metadata(dir).map_err(|e| Error::runtime(format!("{}: {e}", dir.display())))?;
    let uid = nix::unistd::getuid().as_raw();
    if meta.uid() != uid || meta.mode() & 0o022 != 0 {
        return Err(Error::input(format!(
            "{}: the socket directory must belong to uid {uid} and be writable only by it (mode {:o})",
            dir.display(),
            meta.mode() & 0o777
        )));
    }
    Ok(())
}

struct Conn {
    stream: UnixStream,
    uid: u32,
    input: Vec<u8>,
    output: Vec<u8>,
    /// The shared page and the doorbell (an eventfd), from `welcome` on.
    page: Option<Arc<SharedPage>>,
    doorbell: Option<OwnedFd>,
    /// The request being answered came through the page: so must its reply.
    via_page: bool,
    greeted: bool,
    /// Close once the output is flushed (after an error reply).
    closing: bool,
    /// The client asked for the compact encoding of hot-path messages in `hello`.
    compact: bool,
    /// Registered for writability: only while output waits for socket space, since
    /// every reply the client reads would otherwise wake the loop once more.
    writable: bool,
}

/// Stops a running daemon from another thread.
#[derive(Clone)]
pub struct StopHandle {
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
}

impl StopHandle {
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.waker.wake();
    }
}

pub struct Daemon {
    path: PathBuf,
    poll: Poll,
    listener: UnixListener,
    conns: HashMap<ClientId, Conn>,
    arbiter: Arbiter,
    next_client: ClientId,
    uid: u32,
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    /// Read end of the self-pipe SIGINT / SIGTERM write to, when handled.
    signals: Option<UnixStream>,
    /// How long the loop keeps polling without sleeping after its last event.
    busy_poll: Duration,
    /// Scratch for socket reads (one buffer, not one per read).
    scratch: Box<[u8]>,
    /// The clients with a shared page, and the request sequence number last taken from
    /// each: the request slots the loop looks at.
    paged: Vec<(ClientId, Arc<SharedPage>, u32)>,
    /// Scratch for a frame copied out of or into a page.
    frame: Vec<u8>,
}

/// Default busy-poll window: a client's next request usually follows its reply within
/// a few microseconds; sleeping in between would cost a wake-up (several microseconds
/// on a VM) on both sides. An idle daemon sleeps after this long.
pub const DEFAULT_BUSY_POLL: Duration = Duration::from_micros(50);

impl Daemon {
    /// Binds the socket (0660, in a directory only its owner writes).
    pub fn bind(path: &Path, arbiter: Arbiter) -> Result<Daemon> {
        if let Some(dir) = path.parent() {
            prepare_dir(dir)?;
        }
        if path.exists() {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(Error::input(format!(
                    "{}: a daemon already listens there",
                    path.display()
                )));
            }
            std::fs::remove_file(path)
                .map_err(|e| Error::runtime(format!("{}: stale socket: {e}", path.display())))?;
        }
        let mut listener = UnixListener::bind(path)
            .map_err(|e| Error::runtime(format!("{}: cannot listen: {e}", path.display())))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))
            .map_err(|e| Error::runtime(format!("{}: {e}", path.display())))?;
        raise_descriptor_limit();
        let poll = Poll::new().map_err(Error::runtime)?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .map_err(Error::runtime)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER).map_err(Error::runtime)?);
        Ok(Daemon {
            path: path.to_path_buf(),
            poll,
            listener,
            conns: HashMap::new(),
            arbiter,
            next_client: FIRST_CLIENT,
            uid: nix::unistd::getuid().as_raw(),
            stop: Arc::new(AtomicBool::new(false)),
            waker,
            signals: None,
            busy_poll: DEFAULT_BUSY_POLL,
            scratch: vec![0; 8192].into_boxed_slice(),
            paged: Vec::new(),
            frame: Vec::with_capacity(SLOT),
        })
    }

    /// Makes SIGINT and SIGTERM stop `run` cleanly (so that a trace can be written).
    pub fn stop_on_signals(&mut self) -> Result<()> {
        let (read, write) = std::os::unix::net::UnixStream::pair().map_err(Error::runtime)?;
        read.set_nonblocking(true).map_err(Error::runtime)?;
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let w = write.try_clone().map_err(Error::runtime)?;
            signal_hook::low_level::pipe::register(sig, w).map_err(Error::runtime)?;
        }
        let mut read = UnixStream::from_std(read);
        self.poll
            .registry()
            .register(&mut read, SIGNAL, Interest::READABLE)
            .map_err(Error::runtime)?;
        self.signals = Some(read);
        Ok(())
    }

    /// Sets the busy-poll window (zero: sleep in `epoll_wait` whenever nothing is ready).
    pub fn set_busy_poll(&mut self, window: Duration) {
        self.busy_poll = window;
    }

    pub fn arbiter(&self) -> &Arbiter {
        &self.arbiter
    }

    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            stop: self.stop.clone(),
            waker: self.waker.clone(),
        }
    }

    /// Serves until stopped.
    pub fn run(&mut self) -> Result<()> {
        let mut events = Events::with_capacity(256);
        let mut next_deadline: Option<u64> = None;
        let mut last_event = Instant::now();
        while !self.stop.load(Ordering::SeqCst) {
            if self.serve_pages() {
                last_event = Instant::now();
            }
            let mut timeout = if last_event.elapsed() < self.busy_poll {
                Some(Duration::ZERO)
            } else {
                next_deadline.map(|d| Duration::from_nanos(d.saturating_sub(self.arbiter.now_ns())))
            };
            // About to sleep: clients must ring from now on; one that posted before it
            // could see that is served at once instead.
            let sleeping = timeout != Some(Duration::ZERO);
            if sleeping {
                self.paged
                    .iter()
                    .for_each(|(_, page, _)| page.set_asleep(true));
                if self
                    .paged
                    .iter()
                    .any(|(_, page, seen)| page.posted_since(*seen))
                {
                    timeout = Some(Duration::ZERO);
                }
            }
            let polled = self.poll.poll(&mut events, timeout);
            if sleeping {
                self.paged
                    .iter()
                    .for_each(|(_, page, _)| page.set_asleep(false));
            }
            if let Err(e) = polled {
                if e.kind() == ErrorKind::Interrupted {
                    continue;
                }
                return Err(Error::runtime(format!("poll: {e}")));
            }
            if !events.is_empty() {
                last_event = Instant::now();
            }
            for event in events.iter() {
                match event.token() {
                    LISTENER => self.accept(),
                    WAKER => {}
                    SIGNAL => self.stop.store(true, Ordering::SeqCst),
                    Token(t) if t % 2 == 1 => self.silence(t as ClientId / 2),
                    Token(t) => {
                        let client = t as ClientId / 2;
                        if event.is_readable() || event.is_read_closed() {
                            self.read(client);
                        }
                        if event.is_writable() {
                            self.flush(client);
                        }
                    }
                }
            }
            let (effects, next) = self.arbiter.expire();
            self.apply(effects);
            next_deadline = next;
        }
        Ok(())
    }

    fn accept(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((mut stream, _)) => {
                    let uid = match nix::sys::socket::getsockopt(
                        &stream,
                        nix::sys::socket::sockopt::PeerCredentials,
                    ) {
                        Ok(cred) => cred.uid(),
                        Err(_) => continue, // cannot identify the peer: refuse it
                    };
                    let client = self.next_client;
                    self.next_client += 1;
                    if self
                        .poll
                        .registry()
                        .register(&mut stream, socket_token(client), Interest::READABLE)
                        .is_err()
                    {
                        continue;
                    }
                    self.conns.insert(
                        client,
                        Conn {
                            stream,
                            uid,
                            input: Vec::new(),
                            output: Vec::new(),
                            page: None,
                            doorbell: None,
                            via_page: false,
                            greeted: false,
                            closing: false,
                            compact: false,
                            writable: false,
                        },
                    );
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return,
            }
        }
    }

    fn read(&mut self, client: ClientId) {
        let mut closed = false;
        {
            let Some(conn) = self.conns.get_mut(&client) else {
                return;
            };
            let buf = &mut self.scratch;
            loop {
                match conn.stream.read(buf) {
                    Ok(0) => {
                        closed = true;
                        break;
                    }
                    Ok(n) => {
                        conn.input.extend_from_slice(&buf[..n]);
                        // A short read emptied the socket; data arriving later raises a
                        // new edge, so the extra read that would say WouldBlock is saved.
                        if n < buf.len() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(_) => {
                        closed = true;
                        break;
                    }
                }
            }
        }
        // Handle every complete frame, then the close.
        loop {
            let Some(conn) = self.conns.get_mut(&client) else {
                return;
            };
            if conn.closing {
                break;
            }
            let frame = protocol::next_frame(&conn.input, protocol::MAX_REQUEST);
            let Some((request, used)) = decode_request(frame, protocol::MAX_REQUEST, conn.compact)
            else {
                break;
            };
            conn.input.drain(..used);
            match request {
                Ok(r) => self.handle(client, r),
                Err(message) => self.fail(client, ErrorCode::Malformed, message),
            }
        }
        if closed {
            self.close(client);
        } else {
            self.flush(client);
        }
    }

    /// Handles every request posted in a shared page since the loop last looked; true if
    /// there was one.
    fn serve_pages(&mut self) -> bool {
        let mut served = false;
        let mut i = 0;
        while let Some((client, page, seen)) = self.paged.get_mut(i) {
            let client = *client;
            let seq = page.request_seq();
            if seq != *seen {
                *seen = seq;
                page.take_request(&mut self.frame);
                served = true;
                self.serve_page_request(client);
            }
            // Closing a connection removes its entry; the one now at `i` is next.
            if self.paged.get(i).is_some_and(|(c, _, _)| *c == client) {
                i += 1;
            }
        }
        served
    }

    /// The request copied into `self.frame` from `client`'s page.
    fn serve_page_request(&mut self, client: ClientId) {
        let Some(conn) = self.conns.get_mut(&client) else {
            return;
        };
        if conn.closing {
            return;
        }
        conn.via_page = true;
        let frame = protocol::next_frame(&self.frame, SLOT);
        match decode_request(frame, SLOT, conn.compact) {
            Some((Ok(request), _)) => self.handle(client, request),
            Some((Err(message), _)) => self.fail(client, ErrorCode::Malformed, message),
            None => self.fail(
                client,
                ErrorCode::Malformed,
                format!("a request frame in the page exceeds its {SLOT}-byte slot"),
            ),
        }
        self.flush(client);
    }

    /// Queues `reply` for the client: into its page when the request it answers came
    /// from there (unless too large for the slot), else onto its socket.
    fn send(&mut self, client: ClientId, reply: &Reply) {
        let Some(conn) = self.conns.get_mut(&client) else {
            return;
        };
        let out = if conn.via_page {
            self.frame.clear();
            &mut self.frame
        } else {
            &mut conn.output
        };
        if !(conn.compact && compact::encode_reply(reply, out)) {
            protocol::encode(reply, out);
        }
        if std::mem::take(&mut conn.via_page) {
            let page = conn.page.as_ref().expect("page requests come from a page");
            if !page.post_reply(&self.frame) {
                conn.output.extend_from_slice(&self.frame);
            }
        }
    }

    /// The client rang its doorbell: reset it (the page itself is looked at each turn).
    fn silence(&mut self, client: ClientId) {
        if let Some(bell) = self.conns.get(&client).and_then(|c| c.doorbell.as_ref()) {
            let _ = rustix::io::read(bell, &mut [0u8; 8]);
        }
    }

    /// Error reply, then the connection closes.
    fn fail(&mut self, client: ClientId, code: ErrorCode, message: String) {
        self.send(client, &Reply::Error { code, message });
        if let Some(conn) = self.conns.get_mut(&client) {
            conn.closing = true;
        }
        self.flush(client);
    }

    fn handle(&mut self, client: ClientId, request: Request) {
        let conn = &self.conns[&client];
        if !conn.greeted {
            return match request {
                Request::Hello {
                    version, compact, ..
                } if version == VERSION => self.welcome(client, compact),
                Request::Hello { version, .. } => self.fail(
                    client,
                    ErrorCode::Version,
                    format!(
                        "protocol version {version} not supported (this daemon speaks {VERSION})"
                    ),
                ),
                _ => self.fail(
                    client,
                    ErrorCode::OutOfOrder,
                    "the first request must be hello".into(),
                ),
            };
        }
        let control = matches!(
            request,
            Request::AddUnit { .. } | Request::RemoveUnit { .. } | Request::AlterUnit { .. }
        );
        if control && conn.uid != self.uid && conn.uid != 0 {
            self.send(
                client,
                &Reply::Error {
                    code: ErrorCode::PermissionDenied,
                    message: format!(
                        "uid {} may not change units (daemon uid {})",
                        conn.uid, self.uid
                    ),
                },
            );
            return;
        }
        match request {
            Request::Hello { .. } => self.fail(client, ErrorCode::OutOfOrder, "hello twice".into()),
            Request::Alloc { meta } => match self.arbiter.alloc(client, &meta) {
                Ok(effects) => self.apply(effects),
                Err((ErrorCode::OutOfOrder, m)) => self.fail(client, ErrorCode::OutOfOrder, m),
                Err((code, message)) => self.send(client, &Reply::Error { code, message }),
            },
            Request::Rerequest => match self.arbiter.rerequest(client) {
                Ok(verdict) => {
                    if verdict == crate::protocol::Verdict::Keep {
                        // Until something else changes, checkpoints stay local.
                        if let Some(f) = &self.conns[&client].page {
                            f.set(KEEP);
                        }
                    }
                    self.send(client, &Reply::Rerequest { verdict });
                }
                Err((code, m)) => self.fail(client, code, m),
            },
            Request::Free { finished } => match self.arbiter.free(client, finished) {
                Ok(effects) => {
                    self.send(client, &Reply::Freed);
                    self.apply(effects);
                }
                Err((code, m)) => self.fail(client, code, m),
            },
            Request::ListUnits => {
                let units = self.arbiter.list_units();
                self.send(client, &Reply::Units { units });
            }
            Request::AddUnit { unit } => self.control(client, |a| a.add_unit(&unit)),
            Request::RemoveUnit { id } => self.control(client, |a| a.remove_unit(id)),
            Request::AlterUnit { id, changes } => {
                self.control(client, |a| a.alter_unit(id, &changes).map(|()| Vec::new()))
            }
            Request::Stats => {
                let stats = self.arbiter.stats();
                self.send(client, &stats);
            }
        }
    }

    fn control(
        &mut self,
        client: ClientId,
        f: impl FnOnce(&mut Arbiter) -> Result<Vec<Effect>, crate::arbiter::Failure>,
    ) {
        match f(&mut self.arbiter) {
            Ok(effects) => {
                self.send(client, &Reply::Done);
                self.apply(effects);
            }
            Err((code, message)) => self.send(client, &Reply::Error { code, message }),
        }
    }

    /// `welcome`, with the client's shared page and doorbell passed as SCM_RIGHTS.
    fn welcome(&mut self, client: ClientId, compact: bool) {
        let made = SharedPage::create().and_then(|page| {
            let flags =
                rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK;
            let bell = rustix::event::eventfd(0, flags)?;
            self.poll.registry().register(
                &mut SourceFd(&bell.as_raw_fd()),
                doorbell_token(client),
                Interest::READABLE,
            )?;
            Ok((page, bell))
        });
        let (page, bell) = match made {
            Ok(made) => made,
            Err(e) => {
                return self.fail(
                    client,
                    ErrorCode::Invalid,
                    format!("cannot create the shared page and doorbell: {e}"),
                )
            }
        };
        let mut frame = Vec::new();
        protocol::encode(
            &Reply::Welcome {
                version: VERSION,
                client,
                compact,
            },
            &mut frame,
        );
        let conn = self.conns.get_mut(&client).unwrap();
        // Taken before the client can see the page: it may post at once.
        let seen = page.request_seq();
        let fds = [page.fd().as_raw_fd(), bell.as_raw_fd()];
        let cmsg = [nix::sys::socket::ControlMessage::ScmRights(&fds)];
        // The first bytes on a fresh socket: the kernel buffer is empty, so the whole
        // small frame goes at once; anything else is a broken peer.
        let sent = nix::sys::socket::sendmsg::<()>(
            conn.stream.as_raw_fd(),
            &[IoSlice::new(&frame)],
            &cmsg,
            nix::sys::socket::MsgFlags::MSG_NOSIGNAL,
            None,
        );
        match sent {
            Ok(n) if n == frame.len() => {
                let page = Arc::new(page);
                self.paged.push((client, page.clone(), seen));
                conn.page = Some(page);
                conn.doorbell = Some(bell);
                conn.greeted = true;
                conn.compact = compact;
            }
            _ => {
                conn.doorbell = Some(bell); // deregistered by close
                self.close(client)
            }
        }
    }

    fn apply(&mut self, effects: Vec<Effect>) {
        for e in effects {
            match e {
                Effect::Reply(c, r) => {
                    self.send(c, &r);
                    self.flush(c);
                }
                Effect::Ask(c) => {
                    if let Some(f) = self.conns.get(&c).and_then(|c| c.page.as_ref()) {
                        f.set(ASK);
                    }
                }
            }
        }
    }

    fn flush(&mut self, client: ClientId) {
        let Some(conn) = self.conns.get_mut(&client) else {
            return;
        };
        while !conn.output.is_empty() {
            match conn.stream.write(&conn.output) {
                Ok(0) => break,
                Ok(n) => {
                    conn.output.drain(..n);
                    if conn.output.is_empty() {
                        if let Some(f) = &conn.page {
                            f.note_socket_reply();
                        }
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return self.close(client),
            }
        }
        let pending = !conn.output.is_empty();
        if pending != conn.writable {
            let interest = if pending {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            let token = socket_token(client);
            if self
                .poll
                .registry()
                .reregister(&mut conn.stream, token, interest)
                .is_err()
            {
                return self.close(client);
            }
            conn.writable = pending;
        }
        if !pending && conn.closing {
            self.close(client);
        }
    }

    fn close(&mut self, client: ClientId) {
        if let Some(mut conn) = self.conns.remove(&client) {
            let _ = self.poll.registry().deregister(&mut conn.stream);
            if let Some(bell) = &conn.doorbell {
                let _ = self
                    .poll
                    .registry()
                    .deregister(&mut SourceFd(&bell.as_raw_fd()));
            }
            self.paged.retain(|(c, _, _)| *c != client);
            let effects = self.arbiter.disconnect(client);
            self.apply(effects);
        }
    }
}

/// Each client costs the daemon three descriptors (socket, page, doorbell): lifts the
/// soft limit on open files to the hard one (often 1024 → 500k), as servers do, so that
/// the number of clients is not capped at a few hundred. Best effort.
fn raise_descriptor_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        );
    }
}

/// A request out of a frame (from a socket or a page), with the bytes it used; `None`
/// while it is incomplete. An error names what is wrong with it.
fn decode_request(
    frame: Frame<'_>,
    max: usize,
    compact: bool,
) -> Option<(Result<Request, String>, usize)> {
    Some(match frame {
        Frame::Incomplete => return None,
        Frame::TooLarge(n) => (Err(format!("frame of {n} bytes exceeds {max}")), 0),
        Frame::Body(body, used) => (
            serde_json::from_slice::<Request>(body)
                .map_err(|e| format!("not a valid request: {e}")),
            used,
        ),
        Frame::Compact(body, used) if compact => (
            compact::decode_request(body).map_err(|e| format!("not a valid compact request: {e}")),
            used,
        ),
        Frame::Compact(_, used) => (
            Err("a compact frame, but hello did not ask for the compact encoding".into()),
            used,
        ),
    })
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
