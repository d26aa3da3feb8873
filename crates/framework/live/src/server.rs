//! The daemon's event loop: one thread, one `mio` poll over the listening socket, every
//! client connection and every client's doorbell, plus a look at the request slot of
//! every client's shared page (see `shm`) on each turn; the [`Arbiter`] is its only
//! state. Nothing a client sends can stop it: a bad frame closes that one connection
//! (after an error reply), a vanished client loses its task at once, and the unit goes
//! to the next waiter.
//!
//! Nor does the daemon trust a client's memory or pace. Its page is sealed at its size
//! (`shm`); what the daemon holds for a client is bounded by the limits below, and a
//! client past one is dropped with a logged reason; a connection is closed, its task
//! ended and its descriptors freed at the end of its stream whatever half of a frame
//! it left; SIGINT and SIGTERM arrive through a `signalfd` in the loop, where no
//! handler a library installs can take them.
//!
//! Per-client limits (documented in `docs/live.md`):
//! - a request frame: [`MAX_REQUEST`](protocol::MAX_REQUEST) bytes (64 KiB), or the
//!   page's slot; a longer one is `malformed` and closes the connection. The input
//!   buffered for a client is at most one partial frame and one read.
//! - replies it has not read: past [`PAUSE_UNREAD`] the client is paused (neither read
//!   nor served) until it reads them; paused for [`MAX_STALL`], it is dropped; a reply
//!   due while more than [`MAX_UNREAD_REPLIES`] is unread drops it at once.
//! - reading: [`READ_PER_TURN`] bytes per turn of the loop, so that one client's flood
//!   cannot starve the others.
//! - connections: [`MAX_CLIENTS`] at once (fewer if the descriptor limit is lower),
//!   [`MAX_CLIENTS_PER_UID`] for a uid other than the daemon's; one more is refused at
//!   once rather than left in the backlog.
//! - silence: no `hello`, or a partial frame, for [`SLOW_CLIENT`] drops the connection.
//! - a batch: at most [`MAX_BATCH`](protocol::MAX_BATCH) requests in one frame, and
//!   nothing else sent until its reply (see `batch`).
//!
//! After an event the loop busy-polls for a while (see [`DEFAULT_BUSY_POLL`]) rather
//! than sleep. When the client it served last runs on the daemon's CPU (each side
//! publishes its CPU in the page), that client's next request can only come once the
//! daemon leaves the CPU: the loop then yields the CPU on each turn instead of spinning
//! (`shm` says why).

use crate::arbiter::{Arbiter, ClientId, Effect};
use crate::batch::{self, Batch};
use crate::client_process::ClientProcess;
use crate::compact;
use crate::protocol::{self, ErrorCode, Reply, Request, VERSION};
use crate::shm::{self, SharedPage, ASK, KEEP, SLOT};
use hetsched_core::{Error, PathContext, Result};
use mio::net::{UnixListener, UnixStream};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::io::{ErrorKind, IoSlice, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
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

/// A client with more than this many bytes of replies unread is paused: neither read
/// nor served until it takes them, so that a client that does not read cannot make the
/// daemon work (a `stats` reply costs the daemon a millisecond).
pub const PAUSE_UNREAD: usize = 64 << 10;

/// A client paused this long is dropped.
pub const MAX_STALL: Duration = Duration::from_secs(10);

/// A client with more than this many bytes of replies unread is dropped when the next
/// reply is due (one paused gets replies only from other clients' actions, e.g. a
/// grant). The largest reply, `stats` with a full history, is about 0.5 MB.
pub const MAX_UNREAD_REPLIES: usize = 1 << 20;

/// Bytes read from one client's socket per turn of the loop; the rest is read on the
/// next turns, after the other clients had theirs.
pub const READ_PER_TURN: usize = 64 << 10;

/// Requests of one connection handled per turn of the loop (a batch's count one each,
/// a `stats` the whole share: it costs the daemon as many); the rest waits for the next
/// turn, after every other client had its share, so that a client's batches or
/// pipelined requests cannot hold the loop (fair service, round robin over the clients
/// with work).
pub const REQUESTS_PER_TURN: u32 = 16;

/// How long one turn of the loop serves clients before it looks at the pages, the timers
/// and new events again: clients with work are served round robin, and those a turn did
/// not reach go first the next turn, so that a well-behaved client waits about this long
/// per request at most however many others are busy, and however slow the build.
pub const TURN_BUDGET: Duration = Duration::from_micros(500);

/// Requests of all the connections of one uid handled per turn: a user who opens many
/// connections (4,096 may be one uid's) gets no more of the loop than 64 do. The
/// well-behaved clients of other users are served in the same turn, so a turn with one
/// such user takes about a millisecond.
pub const UID_REQUESTS_PER_TURN: u32 = 64 * REQUESTS_PER_TURN;

/// Connections served at once. Each costs up to four descriptors (socket, page,
/// doorbell, and the pidfd of the process it named): the limit is lowered to fit the
/// descriptor limit, keeping [`RESERVED_FDS`] and the sampler's
/// ([`descriptors`](crate::sampler::descriptors)) spare.
pub const MAX_CLIENTS: usize = 16 << 10;

/// Connections one uid other than the daemon's own may hold at once, so that another
/// user cannot take every slot from the daemon's owner (root counts as another uid): at
/// most half of the connections the descriptor limit allows.
pub const MAX_CLIENTS_PER_UID: usize = 4 << 10;

/// The connections served at once, and those of one uid other than the daemon's, under
/// a limit of `fds` open files (see [`MAX_CLIENTS`] and [`MAX_CLIENTS_PER_UID`]).
pub fn connection_limits(fds: usize) -> (usize, usize) {
    let spare = RESERVED_FDS + crate::sampler::descriptors(fds);
    let clients = MAX_CLIENTS.min(fds.saturating_sub(spare) / 4).max(1);
    (clients, MAX_CLIENTS_PER_UID.min(clients / 2).max(1))
}

/// A connection that has not said `hello`, or has held a partial request frame, for this
/// long is dropped: it holds a slot and buffers while sending nothing usable.
pub const SLOW_CLIENT: Duration = Duration::from_secs(10);

/// Descriptors kept for the daemon itself (poll, listener, signals, devices, trace).
const RESERVED_FDS: usize = 64;

fn socket_token(client: ClientId) -> Token {
    Token(2 * client as usize)
}

fn doorbell_token(client: ClientId) -> Token {
    Token(2 * client as usize + 1)
}

/// Where a daemon listens unless told otherwise: `$HETSCHED_SOCKET`, else
/// `$XDG_RUNTIME_DIR/hetsched/daemon.sock`, else root's `/run/hetsched/daemon.sock` or
/// another user's `/tmp/hetsched-$UID/daemon.sock`. Root's is never under `/tmp`, where
/// any user can create the directory first (a daemon refuses a directory it does not
/// own, and a client a daemon that is neither root nor itself).
pub fn default_socket_path() -> PathBuf {
    if let Some(p) = std::env::var_os("HETSCHED_SOCKET") {
        return PathBuf::from(p);
    }
    let uid = nix::unistd::getuid();
    let dir = match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) => PathBuf::from(d).join("hetsched"),
        None if uid.is_root() => PathBuf::from("/run/hetsched"),
        None => PathBuf::from(format!("/tmp/hetsched-{}", uid)),
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
    crate::trust::socket_dir(dir, nix::unistd::getuid().as_raw())
}

struct Conn {
    stream: UnixStream,
    uid: u32,
    /// At most one partial request frame plus one read (frames are handled as they come).
    input: Vec<u8>,
    /// Replies not yet taken by the socket, at most [`MAX_UNREAD_REPLIES`] plus one.
    output: Vec<u8>,
    /// The peer closed its end (or the socket failed): read what is left, then close.
    hung_up: bool,
    /// Why the client is to be dropped at the next flush (it broke a limit).
    dropping: Option<String>,
    /// Since when the client is paused (more than [`PAUSE_UNREAD`] unread).
    paused_since: Option<Instant>,
    /// The shared page and the doorbell (an eventfd), from `welcome` on.
    page: Option<Arc<SharedPage>>,
    doorbell: Option<OwnedFd>,
    /// The request being answered came through the page: so must its reply.
    via_page: bool,
    greeted: bool,
    /// Close once the output is flushed (after an error reply).
    closing: bool,
    /// The batch being answered (see `batch`).
    batch: Option<Batch>,
    /// The client asked for the compact encoding of hot-path messages in `hello`.
    compact: bool,
    /// Registered for writability: only while output waits for socket space, since
    /// every reply the client reads would otherwise wake the loop once more.
    writable: bool,
    /// When the connection was accepted, and since when its input has held a partial
    /// frame (see [`SLOW_CLIENT`]).
    accepted: Instant,
    partial_since: Option<Instant>,
    /// The turn of the loop this client was last served in, and how many of its
    /// requests were handled in it (see [`REQUESTS_PER_TURN`]).
    turn: u64,
    served: u32,
    /// In [`Daemon::unread`] / [`Daemon::batches_ready`] already.
    in_unread: bool,
    in_ready: bool,
    /// The process its last `alloc` named, as checked (see `client_process`): its next
    /// allocs name the same one, checked again only if it has ended meanwhile.
    process: Option<ClientProcess>,
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
    conns: FxHashMap<ClientId, Conn>,
    arbiter: Arbiter,
    next_client: ClientId,
    uid: u32,
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    /// SIGINT and SIGTERM, when handled.
    signals: Option<StopSignals>,
    /// Clients whose socket still has input after their [`READ_PER_TURN`], or that
    /// were resumed after a pause.
    unread: Vec<ClientId>,
    /// Clients paused at some point, looked at each turn (see [`MAX_STALL`]).
    paused: Vec<ClientId>,
    /// Connections served at once (see [`MAX_CLIENTS`]).
    max_clients: usize,
    /// Connections one uid other than the daemon's may hold (see [`connection_limits`]).
    max_per_uid: usize,
    /// Connections per uid (see [`MAX_CLIENTS_PER_UID`]).
    per_uid: HashMap<u32, usize>,
    /// When to look at a connection again for [`SLOW_CLIENT`], in time order (one
    /// timeout for all, so pushes at the back keep the order); entries may be stale.
    slow_checks: std::collections::VecDeque<(Instant, ClientId)>,
    /// Clients dropped or refused for breaking a limit or the protocol.
    drops: DropLog,
    /// The socket file this daemon created (device, inode): removed on drop only if
    /// still there.
    socket_file: (u64, u64),
    /// How long the loop keeps polling without sleeping after its last event.
    busy_poll: Duration,
    /// Scratch for socket reads (one buffer, not one per read).
    scratch: Box<[u8]>,
    /// The clients with a shared page, and the request sequence number last taken from
    /// each: the request slots the loop looks at.
    paged: Vec<(ClientId, Arc<SharedPage>, u32)>,
    /// Scratch for a frame copied out of or into a page.
    frame: Vec<u8>,
    /// The CPU the loop runs on, as published in every page.
    cpu: u32,
    /// The client served last runs on [`Daemon::cpu`]: busy-polling would keep it from
    /// running.
    beside_client: bool,
    /// Clients whose waiting batch got its missing reply: the rest is handled next turn.
    batches_ready: Vec<ClientId>,
    /// The client a request of whose batch is being handled.
    in_batch: Option<ClientId>,
    /// Turns of the loop so far (see [`REQUESTS_PER_TURN`]).
    turn: u64,
    /// Per uid with connections, the turn it was last served in and how many of its
    /// requests were handled in it (see [`UID_REQUESTS_PER_TURN`]).
    uid_shares: HashMap<u32, (u64, u32)>,
    /// When this turn began (see [`TURN_BUDGET`]), and the page the next turn looks at
    /// first.
    turn_start: Instant,
    page_cursor: usize,
}

/// The event loop's default nice value. It decides for every client, and on a machine
/// whose CPUs another user's threads keep busy it must not wait its turn behind them:
/// at nice 0 beside one busy thread on each of two CPUs, a well-behaved client's
/// alloc+free p99 was 7.6 ms, at nice −10 3.6 ms (`hetsched bench hostile`). The loop
/// sleeps when idle, so the priority costs nothing then.
pub const DEFAULT_NICE: i32 = -10;

/// Default busy-poll window: a client's next request usually follows its reply within
/// a few microseconds; sleeping in between would cost a wake-up (several microseconds
/// on a VM) on both sides. An idle daemon sleeps after this long.
pub const DEFAULT_BUSY_POLL: Duration = Duration::from_micros(50);

/// While busy beside the client it serves, the loop polls its descriptors at most this
/// often rather than on every turn: that client's requests come through its page, and
/// each look costs a system call, a good part of a round trip spent taking turns.
const BESIDE_LOOK_EVERY: Duration = Duration::from_micros(20);

impl Daemon {
    /// Binds the socket (0660, in a directory only its owner writes). A stale socket
    /// there is replaced; anything else at the path is left alone (an input error).
    pub fn bind(path: &Path, arbiter: Arbiter) -> Result<Daemon> {
        if let Some(dir) = path.parent() {
            prepare_dir(dir)?;
        }
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_socket() {
                return Err(Error::input(format!(
                    "{}: exists and is not a socket; refusing to replace it (remove it or choose another --socket)",
                    path.display()
                )));
            }
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
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660)).at(path)?;
        let meta = std::fs::symlink_metadata(path).at(path)?;
        let fds = raise_descriptor_limit();
        let (max_clients, max_per_uid) = connection_limits(fds);
        let poll = Poll::new().map_err(Error::runtime)?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .map_err(Error::runtime)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER).map_err(Error::runtime)?);
        Ok(Daemon {
            path: path.to_path_buf(),
            poll,
            listener,
            conns: FxHashMap::default(),
            arbiter,
            next_client: FIRST_CLIENT,
            uid: nix::unistd::getuid().as_raw(),
            stop: Arc::new(AtomicBool::new(false)),
            waker,
            signals: None,
            unread: Vec::new(),
            paused: Vec::new(),
            max_clients,
            max_per_uid,
            per_uid: HashMap::new(),
            slow_checks: std::collections::VecDeque::new(),
            drops: DropLog::default(),
            socket_file: (meta.dev(), meta.ino()),
            busy_poll: DEFAULT_BUSY_POLL,
            scratch: vec![0; 8192].into_boxed_slice(),
            paged: Vec::new(),
            frame: Vec::with_capacity(SLOT),
            cpu: shm::this_cpu(),
            beside_client: false,
            batches_ready: Vec::new(),
            in_batch: None,
            turn: 0,
            uid_shares: HashMap::new(),
            turn_start: Instant::now(),
            page_cursor: 0,
        })
    }

    /// Makes SIGINT and SIGTERM (blocked by [`StopSignals::block`]) stop `run` cleanly,
    /// so that a trace can be written and the socket removed.
    pub fn stop_on(&mut self, signals: StopSignals) -> Result<()> {
        self.poll
            .registry()
            .register(
                &mut SourceFd(&signals.0.as_raw_fd()),
                SIGNAL,
                Interest::READABLE,
            )
            .map_err(Error::runtime)?;
        self.signals = Some(signals);
        Ok(())
    }

    /// Connections served at once (see [`MAX_CLIENTS`]).
    pub fn max_clients(&self) -> usize {
        self.max_clients
    }

    /// How many clients were dropped or refused so far.
    pub fn dropped(&self) -> u64 {
        self.drops.total
    }

    /// Sets the busy-poll window (zero: sleep in `epoll_wait` whenever nothing is ready).
    pub fn set_busy_poll(&mut self, window: Duration) {
        self.busy_poll = window;
    }

    /// Runs the event loop's thread at nice `nice` (see [`DEFAULT_NICE`]); an error when
    /// this process may not (raising a priority takes root or `CAP_SYS_NICE`).
    pub fn set_nice(nice: i32) -> Result<()> {
        let this = rustix::thread::gettid();
        rustix::process::setpriority_process(Some(this), nice)
            .map_err(|e| Error::runtime(format!("nice {nice} for the event loop: {e}")))
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
        let mut last_look = Instant::now();
        while !self.stop.load(Ordering::SeqCst) {
            self.turn += 1;
            self.turn_start = Instant::now();
            self.publish_cpu();
            if self.serve_pages() {
                last_event = Instant::now();
            }
            let busy = last_event.elapsed() < self.busy_poll;
            // Busy beside the client it serves: let that client run (it is the only
            // one that can make the next event), and look at the descriptors (a system
            // call) only now and then.
            let beside = busy && self.beside_client;
            if beside {
                std::thread::yield_now();
            }
            let mut timeout = if busy || !self.unread.is_empty() || !self.batches_ready.is_empty() {
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
            if !self.paused.is_empty() {
                self.drop_stalled();
                let second = Duration::from_secs(1);
                timeout = Some(timeout.map_or(second, |t| t.min(second)));
            }
            if let Some(next) = self.drop_slow() {
                let wait = next.saturating_duration_since(Instant::now());
                timeout = Some(timeout.map_or(wait, |t| t.min(wait)));
            }
            let polled = if !beside {
                self.poll.poll(&mut events, timeout)
            } else if last_look.elapsed() < BESIDE_LOOK_EVERY {
                events.clear();
                Ok(())
            } else {
                last_look = Instant::now();
                self.poll.poll(&mut events, timeout)
            };
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
            let unread = std::mem::take(&mut self.unread);
            let rest = self.serve_in_turn(unread, |d, client| {
                if let Some(conn) = d.conns.get_mut(&client) {
                    conn.in_unread = false;
                    d.read(client);
                }
            });
            self.unread = rest.chain(std::mem::take(&mut self.unread)).collect();
            let ready = std::mem::take(&mut self.batches_ready);
            let rest = self.serve_in_turn(ready, |d, client| {
                if let Some(conn) = d.conns.get_mut(&client) {
                    conn.in_ready = false;
                    d.run_batch(client);
                }
            });
            self.batches_ready = rest
                .chain(std::mem::take(&mut self.batches_ready))
                .collect();
            for event in events.iter() {
                match event.token() {
                    LISTENER => self.accept(),
                    WAKER => {}
                    SIGNAL => {
                        if let Some(signals) = &self.signals {
                            while let Ok(Some(_)) = signals.0.read_signal() {}
                        }
                        self.stop.store(true, Ordering::SeqCst)
                    }
                    Token(t) if t % 2 == 1 => self.silence(t as ClientId / 2),
                    Token(t) => {
                        let client = t as ClientId / 2;
                        let ended = event.is_read_closed() || event.is_error();
                        if let Some(conn) = self.conns.get_mut(&client) {
                            conn.hung_up |= ended;
                        }
                        if (event.is_readable() || ended) && self.over_budget() {
                            // Read next turn, after those waiting already.
                            self.queue_unread(client);
                        } else if event.is_readable() || ended {
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

    /// This turn has spent its [`TURN_BUDGET`].
    fn over_budget(&self) -> bool {
        self.turn_start.elapsed() >= TURN_BUDGET
    }

    /// Serves `clients` in order with `serve` until the turn's budget is spent; returns
    /// those it did not reach, which stay marked as listed and go first next turn.
    fn serve_in_turn(
        &mut self,
        clients: Vec<ClientId>,
        mut serve: impl FnMut(&mut Self, ClientId),
    ) -> std::vec::IntoIter<ClientId> {
        let mut clients = clients.into_iter();
        while !self.over_budget() {
            match clients.next() {
                Some(client) => serve(self, client),
                None => break,
            }
        }
        clients
    }

    /// Publishes the loop's CPU in every page if it moved since the last turn.
    fn publish_cpu(&mut self) {
        let cpu = shm::this_cpu();
        if cpu != self.cpu {
            self.cpu = cpu;
            for (_, page, _) in &self.paged {
                page.set_daemon_cpu(cpu);
            }
        }
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
                    if self.conns.len() >= self.max_clients {
                        // Closed at once: the client learns it now, not after a timeout.
                        self.drops.note(
                            client,
                            uid,
                            format_args!(
                                "refused: {} clients connected (limit {})",
                                self.conns.len(),
                                self.max_clients
                            ),
                        );
                        continue;
                    }
                    let of_uid = self.per_uid.get(&uid).copied().unwrap_or(0);
                    if uid != self.uid && of_uid >= self.max_per_uid {
                        self.drops.note(
                            client,
                            uid,
                            format_args!(
                                "refused: uid {uid} has {of_uid} connections (limit {} for a uid other than the daemon's)",
                                self.max_per_uid
                            ),
                        );
                        continue;
                    }
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
                            hung_up: false,
                            dropping: None,
                            paused_since: None,
                            page: None,
                            doorbell: None,
                            via_page: false,
                            greeted: false,
                            closing: false,
                            batch: None,
                            compact: false,
                            writable: false,
                            accepted: Instant::now(),
                            partial_since: None,
                            turn: 0,
                            served: 0,
                            in_unread: false,
                            in_ready: false,
                            process: None,
                        },
                    );
                    *self.per_uid.entry(uid).or_default() += 1;
                    self.slow_checks
                        .push_back((Instant::now() + SLOW_CLIENT, client));
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // Out of descriptors or memory: the connection stays in the backlog and
                // the next connection's edge retries.
                Err(_) => return,
            }
        }
    }

    /// Reads up to [`READ_PER_TURN`] bytes of `client`'s requests, handling each frame as
    /// it completes; closes the connection at the end of its stream, whatever is left
    /// of a frame.
    fn read(&mut self, client: ClientId) {
        let mut budget = READ_PER_TURN;
        // Those left by a pause or by the last turn's share: while some wait, nothing
        // more is read (the input holds at most one read beyond a partial frame).
        if self.handle_frames(client) {
            self.queue_unread(client);
            return self.flush(client);
        }
        let ended = loop {
            let Some(conn) = self.conns.get_mut(&client) else {
                return;
            };
            if paused(conn) {
                if conn.paused_since.is_none() {
                    conn.paused_since = Some(Instant::now());
                    self.paused.push(client);
                }
                break conn.hung_up; // nobody reads the replies any more
            }
            if budget == 0 {
                self.queue_unread(client);
                break false;
            }
            match conn.stream.read(&mut self.scratch) {
                Ok(0) => break true,
                Ok(n) => {
                    budget = budget.saturating_sub(n);
                    if !conn.closing {
                        conn.input.extend_from_slice(&self.scratch[..n]);
                    }
                    // A short read emptied the socket; data arriving later raises a new
                    // edge, so the extra read that would say WouldBlock is saved -- unless
                    // the peer hung up, whose end of stream raises no edge of its own.
                    let short = n < self.scratch.len();
                    let hung_up = conn.hung_up;
                    if self.handle_frames(client) {
                        // This turn's share is spent: the rest (and the end of the
                        // stream, which stays readable) next turn.
                        self.queue_unread(client);
                        break false;
                    }
                    if short && !hung_up {
                        break false;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break conn.hung_up,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => break true,
            }
        };
        if ended {
            self.close(client);
        } else {
            self.flush(client);
        }
    }

    /// Puts `client` on the list read next turn (once).
    fn queue_unread(&mut self, client: ClientId) {
        if let Some(conn) = self.conns.get_mut(&client) {
            if !std::mem::replace(&mut conn.in_unread, true) {
                self.unread.push(client);
            }
        }
    }

    /// Puts `client`'s batch on the list resumed next turn (once).
    fn queue_batch(&mut self, client: ClientId) {
        if let Some(conn) = self.conns.get_mut(&client) {
            if !std::mem::replace(&mut conn.in_ready, true) {
                self.batches_ready.push(client);
            }
        }
    }

    /// Takes `cost` requests of this turn's shares of the connection and of its uid;
    /// false, taking nothing, when either is spent (see [`REQUESTS_PER_TURN`] and
    /// [`UID_REQUESTS_PER_TURN`]). A request costing more than what is left still goes
    /// when it is the first of the turn, so that none waits for ever.
    fn take_share(
        turn: u64,
        conn: &mut Conn,
        uids: &mut HashMap<u32, (u64, u32)>,
        cost: u32,
    ) -> bool {
        if conn.turn != turn {
            conn.turn = turn;
            conn.served = 0;
        }
        let uid = uids.entry(conn.uid).or_insert((turn, 0));
        if uid.0 != turn {
            *uid = (turn, 0);
        }
        let fits = |served: u32, share: u32| cost == 0 || served == 0 || served + cost <= share;
        if !(fits(conn.served, REQUESTS_PER_TURN) && fits(uid.1, UID_REQUESTS_PER_TURN)) {
            return false;
        }
        conn.served += cost;
        uid.1 += cost;
        true
    }

    /// Handles the complete request frames in `client`'s input, up to its share of this
    /// turn; true when the share ran out with input left (the rest waits for the next
    /// turn).
    fn handle_frames(&mut self, client: ClientId) -> bool {
        let mut used = 0;
        loop {
            let Some(conn) = self.conns.get_mut(&client) else {
                return false;
            };
            if conn.closing || conn.dropping.is_some() {
                conn.input.clear();
                return false;
            }
            if paused(conn) {
                conn.input.drain(..used);
                return false;
            }
            let frame = protocol::next_frame(&conn.input[used..], protocol::MAX_REQUEST);
            let Some((request, n)) =
                protocol::decode_request(frame, protocol::MAX_REQUEST, conn.compact)
            else {
                conn.input.drain(..used);
                // A frame that completed is progress: the clock restarts at the rest.
                if conn.input.is_empty() {
                    conn.partial_since = None;
                } else if conn.partial_since.is_none() || used > 0 {
                    let now = Instant::now();
                    if conn.partial_since.replace(now).is_none() {
                        self.slow_checks.push_back((now + SLOW_CLIENT, client));
                    }
                }
                return false;
            };
            let cost = request.as_ref().map_or(1, cost);
            if !Self::take_share(self.turn, conn, &mut self.uid_shares, cost) {
                // Decoded again next turn: cheaper than keeping it.
                conn.input.drain(..used);
                return true;
            }
            used += n;
            match request {
                Ok(r) => self.handle(client, r),
                Err(message) => self.fail(client, ErrorCode::Malformed, message),
            }
        }
    }

    /// Handles every request posted in a shared page since the loop last looked; true if
    /// there was one.
    fn serve_pages(&mut self) -> bool {
        let mut served = false;
        let n = self.paged.len();
        // Round robin from where the last turn stopped, within the turn's budget.
        let mut i = self.page_cursor;
        let mut looked = 0;
        while looked < n && !self.paged.is_empty() && !(looked > 0 && self.over_budget()) {
            if i >= self.paged.len() {
                i = 0;
            }
            looked += 1;
            let (client, page, seen) = &mut self.paged[i];
            let client = *client;
            let seq = page.request_seq();
            // Taken only within the client's share of the turn; else it waits in the
            // page (the loop does not sleep while a page holds a request).
            let share = |conns: &mut FxHashMap<ClientId, Conn>, uids: &mut _| {
                conns
                    .get_mut(&client)
                    .is_some_and(|c| Self::take_share(self.turn, c, uids, 1))
            };
            if seq != *seen && share(&mut self.conns, &mut self.uid_shares) {
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
        self.page_cursor = i;
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
        match protocol::decode_request(frame, SLOT, conn.compact) {
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
    /// from there (unless too large for the slot), else onto its socket -- unless the
    /// client has more than [`MAX_UNREAD_REPLIES`] unread: then it is to be dropped at
    /// the next flush.
    fn send(&mut self, client: ClientId, reply: &Reply) {
        let Some(conn) = self.conns.get_mut(&client) else {
            return;
        };
        if let Some(batch) = &mut conn.batch {
            batch.answer(reply.clone());
            if self.in_batch != Some(client) {
                // The grant an `alloc` of the batch waited for.
                self.queue_batch(client);
            }
            return;
        }
        if conn.output.len() > MAX_UNREAD_REPLIES {
            conn.dropping.get_or_insert_with(|| {
                format!(
                    "{} bytes of replies unread (limit {MAX_UNREAD_REPLIES})",
                    conn.output.len()
                )
            });
            conn.via_page = false;
            return;
        }
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

    /// Error reply, then the connection closes (a logged drop).
    fn fail(&mut self, client: ClientId, code: ErrorCode, message: String) {
        if let Some(conn) = self.conns.get_mut(&client) {
            self.drops
                .note(client, conn.uid, format_args!("{code:?}: {message}"));
        }
        self.send(client, &Reply::Error { code, message });
        if let Some(conn) = self.conns.get_mut(&client) {
            conn.closing = true;
        }
        self.flush(client);
    }

    fn handle(&mut self, client: ClientId, request: Request) {
        let conn = &self.conns[&client];
        if conn.batch.is_some() && self.in_batch != Some(client) {
            self.conns.get_mut(&client).unwrap().batch = None;
            return self.fail(
                client,
                ErrorCode::OutOfOrder,
                "a request before the batch in flight was answered".into(),
            );
        }
        self.beside_client = conn
            .page
            .as_ref()
            .is_some_and(|page| page.client_cpu() == Some(self.cpu));
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
            Request::Alloc { meta } => {
                // The process it names must be the client's own (see `client_process`):
                // checked once per connection and process while it lives.
                let uid = conn.uid;
                let process = match meta.pid {
                    Some(pid) => match self.named_process(client, pid) {
                        Ok(p) => Some(p),
                        Err(message) => {
                            let code = ErrorCode::PermissionDenied;
                            return self.send(client, &Reply::Error { code, message });
                        }
                    },
                    None => None,
                };
                self.alloc(client, &meta, uid, process)
            }
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
                // Another user sees only its own tasks.
                let viewer = (conn.uid != 0 && conn.uid != self.uid).then_some(conn.uid);
                let stats = self.arbiter.stats(viewer);
                self.send(client, &stats);
            }
            Request::Graph { data, tasks, last } => {
                let uid = conn.uid;
                match self.arbiter.graph_part(client, uid, &data, &tasks, last) {
                    Ok(None) => self.send(client, &Reply::Done),
                    Ok(Some((first, tasks))) => self.send(client, &Reply::Graph { first, tasks }),
                    Err((code @ (ErrorCode::OutOfOrder | ErrorCode::Malformed), m)) => {
                        self.fail(client, code, m)
                    }
                    Err((code, message)) => self.send(client, &Reply::Error { code, message }),
                }
            }
            // (Its requests are checked: none is a batch.)
            Request::Batch { requests } => match batch::check(&requests) {
                Ok(()) => {
                    let conn = self.conns.get_mut(&client).unwrap();
                    let via_page = std::mem::take(&mut conn.via_page);
                    conn.batch = Some(Batch::new(requests, via_page));
                    self.run_batch(client);
                }
                Err(message) => self.fail(client, ErrorCode::Malformed, message),
            },
        }
    }

    /// Handles the requests of `client`'s batch in order until one waits for its reply
    /// (the rest follows when it comes) or all are answered (then the batch reply goes
    /// out); an error that closes the connection ends the batch with that error.
    fn run_batch(&mut self, client: ClientId) {
        loop {
            let Some(conn) = self.conns.get_mut(&client) else {
                return;
            };
            let Some(batch) = conn.batch.as_mut() else {
                return;
            };
            if conn.closing || batch.complete() {
                let batch = conn.batch.take().unwrap();
                conn.via_page = batch.via_page;
                self.send(client, &batch.reply());
                return self.flush(client);
            }
            if batch.waiting() {
                return; // an alloc waits in a queue: its grant resumes the batch
            }
            let cost = batch.peek().map_or(1, cost);
            if !Self::take_share(self.turn, conn, &mut self.uid_shares, cost) {
                return self.queue_batch(client);
            }
            let request = conn.batch.as_mut().and_then(Batch::take_next);
            let request = request.expect("neither complete nor waiting");
            self.in_batch = Some(client);
            self.handle(client, request);
            self.in_batch = None;
        }
    }

    /// The process `pid`, if `client` may name it: the one its last alloc named while
    /// that lives, else checked now.
    fn named_process(&mut self, client: ClientId, pid: u32) -> Result<ClientProcess, String> {
        let conn = self.conns.get_mut(&client).expect("a live connection");
        if let Some(p) = conn
            .process
            .as_ref()
            .filter(|p| p.pid() == pid && p.alive())
        {
            return Ok(p.clone());
        }
        let p = ClientProcess::check(pid, conn.uid)?;
        conn.process = Some(p.clone());
        Ok(p)
    }

    fn alloc(
        &mut self,
        client: ClientId,
        meta: &protocol::MetaInfo,
        uid: u32,
        process: Option<ClientProcess>,
    ) {
        match self.arbiter.alloc_for(client, meta, uid, process) {
            Ok(effects) => self.apply(effects),
            // Protocol errors close the connection (and end a batch), as a bad frame does.
            Err((code @ (ErrorCode::OutOfOrder | ErrorCode::Malformed), m)) => {
                self.fail(client, code, m)
            }
            Err((code, message)) => self.send(client, &Reply::Error { code, message }),
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
        page.set_daemon_cpu(self.cpu);
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
        if let Some(reason) = conn.dropping.take() {
            self.drops.note(client, conn.uid, format_args!("{reason}"));
            return self.close(client);
        }
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
        if conn.paused_since.is_some() && !paused(conn) {
            conn.paused_since = None;
            if !std::mem::replace(&mut conn.in_unread, true) {
                self.unread.push(client);
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
        if !pending && conn.closing && conn.batch.is_none() {
            self.close(client);
        }
    }

    /// Drops the clients paused for longer than [`MAX_STALL`]; forgets those resumed.
    fn drop_stalled(&mut self) {
        let mut stalled = Vec::new();
        let conns = &self.conns;
        self.paused
            .retain(|c| match conns.get(c).and_then(|c| c.paused_since) {
                Some(since) if since.elapsed() > MAX_STALL => {
                    stalled.push(*c);
                    false
                }
                Some(_) => true,
                None => false,
            });
        for client in stalled {
            let Some(conn) = self.conns.get(&client) else {
                continue; // closed meanwhile
            };
            self.drops.note(
                client,
                conn.uid,
                format_args!(
                    "{} bytes of replies unread for {} s",
                    conn.output.len(),
                    MAX_STALL.as_secs()
                ),
            );
            self.close(client);
        }
    }

    /// Drops the connections that have been silent in the handshake or in the middle of a
    /// frame for [`SLOW_CLIENT`]; returns when to look again.
    fn drop_slow(&mut self) -> Option<Instant> {
        let now = Instant::now();
        while let Some(&(due, client)) = self.slow_checks.front() {
            if due > now {
                return Some(due);
            }
            self.slow_checks.pop_front();
            let Some(conn) = self.conns.get(&client) else {
                continue; // closed meanwhile
            };
            let why = if !conn.greeted && now >= conn.accepted + SLOW_CLIENT {
                "no hello"
            } else {
                match conn.partial_since {
                    Some(t) if now >= t + SLOW_CLIENT => "a partial request frame",
                    // A frame completed since: look again when the rest is due.
                    Some(t) => {
                        self.slow_checks.push_back((t + SLOW_CLIENT, client));
                        continue;
                    }
                    None => continue,
                }
            };
            self.drops.note(
                client,
                conn.uid,
                format_args!("{why} for {} s", SLOW_CLIENT.as_secs()),
            );
            self.close(client);
        }
        None
    }

    fn close(&mut self, client: ClientId) {
        if let Some(mut conn) = self.conns.remove(&client) {
            if let Some(n) = self.per_uid.get_mut(&conn.uid) {
                *n -= 1;
                if *n == 0 {
                    self.per_uid.remove(&conn.uid);
                    self.uid_shares.remove(&conn.uid);
                }
            }
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

/// What a request costs of its client's share of a turn: a `stats` the whole share (it
/// costs the daemon as much), a `free` nothing (a unit held by a client that waits for
/// its share would keep others waiting: a slice never ends between an alloc and its
/// free), anything else one.
fn cost(request: &Request) -> u32 {
    match request {
        Request::Stats => REQUESTS_PER_TURN,
        Request::Free { .. } => 0,
        _ => 1,
    }
}

/// The client has too many replies unread to be served (see [`PAUSE_UNREAD`]).
fn paused(conn: &Conn) -> bool {
    !conn.closing && conn.output.len() > PAUSE_UNREAD
}

/// Each client costs the daemon three descriptors (socket, page, doorbell): lifts the
/// soft limit on open files to the hard one (often 1024 → 500k), as servers do, so that
/// the number of clients is not capped at a few hundred. Best effort; returns the soft
/// limit now in force.
fn raise_descriptor_limit() -> usize {
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
    let now = getrlimit(Resource::Nofile).current;
    now.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX))
}

/// SIGINT and SIGTERM, blocked and read from a `signalfd` by the loop. A handler could
/// be lost: a library may install its own over it (PoCL's LLVM does, and re-raises the
/// signal, which killed the daemon with no trace written and its socket left behind).
pub struct StopSignals(nix::sys::signalfd::SignalFd);

impl StopSignals {
    /// Blocks SIGINT and SIGTERM in the calling thread and so in every thread it starts
    /// afterwards: call it before anything starts threads (an OpenCL driver does).
    pub fn block() -> Result<StopSignals> {
        use nix::sys::signal::{SigSet, Signal};
        use nix::sys::signalfd::{SfdFlags, SignalFd};
        let mut mask = SigSet::empty();
        mask.add(Signal::SIGINT);
        mask.add(Signal::SIGTERM);
        mask.thread_block()
            .map_err(|e| Error::runtime(format!("blocking SIGINT and SIGTERM: {e}")))?;
        let fd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(|e| Error::runtime(format!("signalfd: {e}")))?;
        Ok(StopSignals(fd))
    }
}

/// The log of dropped and refused clients, on stderr: one line per second at most (a
/// client that reconnects and misbehaves in a loop must not flood the log, or block
/// the daemon on a full pipe), with the number of drops it stands for.
#[derive(Default)]
struct DropLog {
    total: u64,
    unlogged: u64,
    last: Option<Instant>,
}

impl DropLog {
    fn note(&mut self, client: ClientId, uid: u32, reason: std::fmt::Arguments<'_>) {
        self.total += 1;
        if self
            .last
            .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            self.unlogged += 1;
            return;
        }
        let more = match std::mem::take(&mut self.unlogged) {
            0 => String::new(),
            n => format!(" ({n} more since the last line)"),
        };
        eprintln!("hetsched daemon: client {client} (uid {uid}) dropped: {reason}{more}");
        self.last = Some(Instant::now());
    }
}

impl Drop for Daemon {
    /// Removes the socket file, if it is still the one this daemon made.
    fn drop(&mut self) {
        if std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| (m.dev(), m.ino()) == self.socket_file)
        {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
