//! The live runtime's decision costs (`hetsched bench daemon`), measured against a real
//! daemon (in this process, on a real Unix socket) with real clients. It lives with the
//! daemon it measures; the CLI only parses its options and prints its [`Report`].
//!
//! Where the daemon and its clients run changes the figures more than anything the
//! daemon does: two threads that poll for each other on one CPU take turns. So the
//! round trip and the throughput are measured in three placements, one after the other
//! against the same daemon: pinned apart, co-located (both pinned to one CPU) and
//! unpinned (where the kernel puts them), with the load average beside them, since other
//! work on the machine shares the CPUs too.
//!
//! The batched case runs empty tasks (alloc and free, nothing between) from client
//! *processes*, each submitting many tasks per message (see `batch`): what a runtime
//! that runs many small tasks pays per task. The processes are started through a
//! command the caller gives (the CLI re-runs itself), so that this library needs no
//! binary of its own.

use crate::arbiter::Arbiter;
use crate::client::{Client, Transport};
use crate::protocol::{MetaInfo, Reply, Request, Verdict};
use crate::{devices, server};
use hetsched_core::machine::{UnitGranularity, UnitType};
use hetsched_core::{Error, Result};
use hetsched_util::host::pin_current_thread;
use hetsched_worker::CpuMask;
use std::fmt;
use std::time::Instant;

/// What to measure.
pub struct Options {
    /// Alloc+free round trips timed for the latency figures (per placement).
    pub round_trips: usize,
    /// Concurrent clients for the throughput figures.
    pub clients: usize,
    /// Units the daemon arbitrates (virtual CPU units).
    pub units: u32,
    /// Policy spec.
    pub policy: String,
    /// Measure only these placements (empty: all three).
    pub placements: Vec<Placement>,
    /// The batched case, if it is to be measured.
    pub batched: Option<BatchedOptions>,
}

/// The batched case: `clients` processes, each running `tasks` empty tasks, `batch`
/// per message.
pub struct BatchedOptions {
    pub clients: usize,
    pub tasks: usize,
    /// Tasks per batch (two requests each), 1 to `MAX_BATCH / 2`.
    pub batch: usize,
    /// The command that starts one client process for the daemon at the given socket;
    /// the process calls [`batch_client`] with the same `tasks` and `batch`.
    pub command: Box<dyn Fn(&std::path::Path) -> std::process::Command>,
}

/// Where the daemon thread and the clients may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// The daemon on the last CPU, the timed client on the first; the throughput
    /// clients anywhere (as this bench always ran them: on one CPU, 64 clients would
    /// measure their own turns).
    Apart,
    /// The daemon and the clients all on the first CPU.
    Colocated,
    /// Anywhere: the kernel chooses.
    Unpinned,
}

impl Placement {
    pub const ALL: [Placement; 3] = [Placement::Apart, Placement::Colocated, Placement::Unpinned];
    /// The names [`Placement::parse`] accepts, in the order of [`Placement::ALL`].
    pub const NAMES: [&'static str; 3] = ["apart", "colocated", "unpinned"];

    /// A placement by its name in [`Placement::NAMES`].
    pub fn parse(name: &str) -> Option<Placement> {
        let i = Self::NAMES.iter().position(|&n| n == name)?;
        Some(Self::ALL[i])
    }

    /// The CPUs of the daemon, of the timed client and of the throughput clients, out
    /// of `cpus` (this process's mask); `None` when the placement needs more CPUs than
    /// there are.
    fn cpus(self, cpus: &[usize]) -> Option<[Vec<usize>; 3]> {
        let (first, last) = (vec![cpus[0]], vec![cpus[cpus.len() - 1]]);
        match self {
            Placement::Apart if cpus.len() < 2 => None,
            Placement::Apart => Some([last, first, cpus.to_vec()]),
            Placement::Colocated => Some([first.clone(), first.clone(), first]),
            Placement::Unpinned => Some([cpus.to_vec(), cpus.to_vec(), cpus.to_vec()]),
        }
    }

    fn describe(self, cpus: &[usize]) -> String {
        let (first, last) = (cpus[0], cpus[cpus.len() - 1]);
        match self {
            Placement::Apart => format!(
                "pinned apart (daemon on CPU {last}, timed client on CPU {first}, throughput clients anywhere)"
            ),
            Placement::Colocated => format!("co-located (daemon and clients on CPU {first})"),
            Placement::Unpinned => "unpinned (the kernel places daemon and clients)".to_string(),
        }
    }
}

/// The figures of one placement.
struct Figures {
    placement: Placement,
    /// Alloc+free round trips through the shared page, microseconds, sorted.
    round_trips: Vec<f64>,
    throughput: Throughput,
    /// The batched case, if measured.
    batched: Option<Batched>,
}

struct Batched {
    secs: f64,
    /// CPU seconds (user + system) of this process (the daemon; the other threads wait)
    /// and of the client processes.
    daemon_cpu: f64,
    clients_cpu: f64,
}

struct Throughput {
    requests: usize,
    secs: f64,
    policy_calls: u64,
    /// CPU seconds of all threads of this process during the run (user, kernel).
    cpu: (f64, f64),
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    hetsched_util::stats::percentile(sorted, p).unwrap_or(f64::NAN)
}

/// "p50 X us, p99 Y us" of sorted microseconds.
fn p50_p99(sorted_us: &[f64]) -> String {
    format!(
        "p50 {:.1} us, p99 {:.1} us",
        percentile(sorted_us, 0.5),
        percentile(sorted_us, 0.99)
    )
}

/// Sets the CPU mask of thread `tid` of this process.
fn pin_thread(tid: libc::pid_t, cpus: &[usize]) -> Result<()> {
    hetsched_util::host::pin(Some(tid), cpus)
}

/// Runs the benchmark: a daemon on a thread of this process, and its clients.
pub fn run(args: &Options) -> Result<Report> {
    let text = format!(
        "name = \"bench\"\n[[package]]\ncores = {}\n",
        args.units.max(1)
    );
    let mut machine = hetsched_topology::machine_file::parse(&text, "bench machine")?;
    machine.derive_units(UnitGranularity::Pu);
    let index = devices::described(&machine);
    let dir = tempfile::tempdir().map_err(Error::runtime)?;
    let socket = dir.path().join("bench.sock");
    // Policies are not Send: the daemon is built on its own thread.
    hetsched_policies::check(&args.policy)?;
    let unpinned = CpuMask::current()?;
    let cpus = unpinned.cpus();
    let (tx, rx) = std::sync::mpsc::channel();
    let (spec, path) = (args.policy.clone(), socket.clone());
    let thread = std::thread::spawn(move || -> Result<()> {
        let arbiter = Arbiter::new(machine, index, hetsched_policies::build(&spec, 0)?);
        let mut daemon = server::Daemon::bind(&path, arbiter)?;
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        tx.send((daemon.stop_handle(), tid))
            .map_err(Error::runtime)?;
        daemon.run()
    });
    let (stop, daemon_tid) = rx
        .recv()
        .map_err(|_| Error::runtime("the daemon thread did not start"))?;
    let meta = bench_meta();
    if let Some(b) = &args.batched {
        if !(1..=crate::protocol::MAX_BATCH / 2).contains(&b.batch) {
            return Err(Error::input(format!(
                "--batch {}: tasks per batch must be in 1..={}",
                b.batch,
                crate::protocol::MAX_BATCH / 2
            )));
        }
    }
    let load_before = hetsched_util::host::LoadAverage::now_text();

    // Latency: one client, alloc + free, through the shared page (the client library's
    // default); throughput: many clients, each alloc + free in a loop (a decision = one
    // request); in each placement.
    let mut figures = Vec::new();
    for placement in Placement::ALL {
        if !(args.placements.is_empty() || args.placements.contains(&placement)) {
            continue;
        }
        let Some([daemon_cpus, timed_cpus, client_cpus]) = placement.cpus(&cpus) else {
            continue;
        };
        pin_thread(daemon_tid, &daemon_cpus)?;
        pin_current_thread(&timed_cpus)?;
        let round_trips = round_trips(&socket, &meta, args.round_trips, Transport::SharedPage)?;
        // The throughput clients inherit this thread's mask.
        pin_current_thread(&client_cpus)?;
        let throughput = throughput(&socket, &meta, args.clients)?;
        let batched = match &args.batched {
            Some(b) => Some(batched(&socket, b)?),
            None => None,
        };
        figures.push(Figures {
            placement,
            round_trips,
            throughput,
            batched,
        });
    }

    let others = if figures.iter().any(|f| f.placement == Placement::Apart) {
        let (first_cpu, last_cpu) = (cpus[0], cpus[cpus.len() - 1]);
        pin_thread(daemon_tid, &[last_cpu])?;
        pin_current_thread(&[first_cpu])?;
        Some(others(&socket, &meta, args.round_trips, last_cpu)?)
    } else {
        None
    };
    unpinned.apply()?;
    stop.stop();
    thread
        .join()
        .map_err(|_| Error::runtime("daemon thread panicked"))??;

    Ok(Report {
        units: args.units,
        policy: args.policy.clone(),
        cpus,
        load_before,
        load_after: hetsched_util::host::LoadAverage::now_text(),
        round_trips: args.round_trips,
        clients: args.clients,
        figures,
        others,
        batched: args.batched.as_ref().map(|b| (b.clients, b.tasks, b.batch)),
    })
}

/// The benchmark's figures; its `Display` is what `hetsched bench daemon` prints.
pub struct Report {
    units: u32,
    policy: String,
    /// This process's CPUs, shared by the daemon and its clients.
    cpus: Vec<usize>,
    load_before: String,
    load_after: String,
    round_trips: usize,
    clients: usize,
    figures: Vec<Figures>,
    others: Option<Others>,
    /// Clients, tasks per client and tasks per batch of the batched case.
    batched: Option<(usize, usize, usize)>,
}

impl Report {
    /// The figures measured with the daemon and the timed client pinned apart.
    fn apart(&self) -> Option<&Figures> {
        self.figures
            .iter()
            .find(|f| f.placement == Placement::Apart)
    }

    /// The median alloc+free round trip pinned apart, microseconds, if measured.
    pub fn apart_round_trip_p50_us(&self) -> Option<f64> {
        self.apart()
            .filter(|f| !f.round_trips.is_empty())
            .map(|f| percentile(&f.round_trips, 0.5))
    }

    /// Batched empty tasks per second pinned apart, if measured.
    pub fn apart_batched_per_s(&self) -> Option<f64> {
        let (clients, tasks, _) = self.batched?;
        let b = self.apart()?.batched.as_ref()?;
        Some((clients * tasks) as f64 / b.secs)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let cpus = &self.cpus;
        writeln!(
            f,
            "daemon: {} units, policy {}, this machine ({} CPUs shared by daemon and clients); load average {} before, {} after",
            self.units,
            self.policy,
            cpus.len(),
            self.load_before,
            self.load_after
        )?;
        writeln!(
            f,
            "alloc+free round trip through the shared page ({} timed), and throughput with {} concurrent clients, by placement:",
            self.round_trips, self.clients
        )?;
        for fig in &self.figures {
            let t = &fig.throughput;
            writeln!(f, "  {}:", fig.placement.describe(cpus))?;
            writeln!(
                f,
                "    round trip {}; throughput {:.0} decisions/s ({} requests in {:.2} s)",
                p50_p99(&fig.round_trips),
                t.requests as f64 / t.secs,
                t.requests,
                t.secs
            )?;
            writeln!(
                f,
                "    policy calls {:.0}/s; CPU per request, all threads: {:.1} us user, {:.1} us kernel",
                t.policy_calls as f64 / t.secs,
                t.cpu.0 * 1e6 / t.requests as f64,
                t.cpu.1 * 1e6 / t.requests as f64
            )?;
            if let (Some(b), Some((clients, tasks, batch))) = (&fig.batched, self.batched) {
                let n = (clients * tasks) as f64;
                writeln!(
                    f,
                    "    batched: {:.0} empty tasks/s ({clients} client processes × {tasks} tasks, {batch} per batch, in {:.2} s); CPU per task: daemon {:.2} us, clients {:.2} us",
                    n / b.secs,
                    b.secs,
                    b.daemon_cpu * 1e6 / n,
                    b.clients_cpu * 1e6 / n
                )?;
            }
        }
        writeln!(f, "  goals: round trip p99 <= 20 us pinned apart, p50 <= 10 us and p99 <= 50 us co-located; throughput >= 100k/s; batched >= 350k tasks/s")?;
        if let Some(o) = &self.others {
            writeln!(f, "pinned apart, other transports and floors:")?;
            writeln!(
                f,
                "  compact encoding on the socket: {}",
                p50_p99(&o.socket_us)
            )?;
            writeln!(
                f,
                "  every message JSON on the socket: {}",
                p50_p99(&o.json_us)
            )?;
            writeln!(
                f,
                "  floor: bare socket request+reply between two threads {} (alloc+free is two of them)",
                p50_p99(&o.floor)
            )?;
            writeln!(
                f,
                "  floor with both sides polling (as the client and daemon do): {}",
                p50_p99(&o.polled_floor)
            )?;
            writeln!(
                f,
                "in-slice re-request: {:.2} ns (goal <= 100 ns)",
                o.rereq_ns
            )?;
        }
        Ok(())
    }
}

/// The figures measured pinned apart only.
struct Others {
    /// Alloc+free round trips with the compact encoding on the socket, and with every
    /// message JSON, microseconds, sorted.
    socket_us: Vec<f64>,
    json_us: Vec<f64>,
    /// Bare socket exchanges, sleeping and polling (see [`socket_floor`]).
    floor: Vec<f64>,
    polled_floor: Vec<f64>,
    /// Nanoseconds of an in-slice re-request.
    rereq_ns: f64,
}

/// The socket transports, this machine's socket floors (a bare request/reply of the
/// same size class over a socket pair between two threads, measured here, now) and the
/// in-slice re-request, with the daemon on `daemon_cpu`.
fn others(
    socket: &std::path::Path,
    meta: &MetaInfo,
    n: usize,
    daemon_cpu: usize,
) -> Result<Others> {
    let socket_us = round_trips(socket, meta, n, Transport::CompactSocket)?;
    let json_us = round_trips(socket, meta, n, Transport::Json)?;
    let floor = socket_floor(n, false, daemon_cpu)?;
    let polled_floor = socket_floor(n, true, daemon_cpu)?;
    let mut c = Client::connect(socket, "bench")?;
    c.alloc(meta)?;
    let rerequests = 10_000_000u32;
    let t = Instant::now();
    for _ in 0..rerequests {
        if c.rerequest()? != Verdict::Keep {
            return Err(Error::runtime("in-slice re-request was not kept"));
        }
    }
    let rereq_ns = t.elapsed().as_secs_f64() * 1e9 / rerequests as f64;
    c.free(true)?;
    Ok(Others {
        socket_us,
        json_us,
        floor,
        polled_floor,
        rereq_ns,
    })
}

/// `clients` threads (with this thread's CPU mask), each `PER_CLIENT` alloc+free pairs.
fn throughput(socket: &std::path::Path, meta: &MetaInfo, clients: usize) -> Result<Throughput> {
    const PER_CLIENT: usize = 2000;
    let mut c = Client::connect(socket, "bench")?;
    let policy_calls_before = policy_decisions(&mut c)?;
    let cpu_before = process_cpu();
    let start = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let socket = socket.to_path_buf();
            let meta = meta.clone();
            std::thread::spawn(move || -> Result<()> {
                let mut c = Client::connect(&socket, "bench")?;
                for _ in 0..PER_CLIENT {
                    c.alloc(&meta)?;
                    c.free(true)?;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join()
            .map_err(|_| Error::runtime("client thread panicked"))??;
    }
    let secs = start.elapsed().as_secs_f64();
    let after = process_cpu();
    Ok(Throughput {
        requests: clients * PER_CLIENT * 2,
        secs,
        policy_calls: policy_decisions(&mut c)? - policy_calls_before,
        cpu: (after.0 - cpu_before.0, after.1 - cpu_before.1),
    })
}

/// The bench's task: any CPU unit will do.
fn bench_meta() -> MetaInfo {
    MetaInfo {
        kind: "bench".into(),
        affinity: [(UnitType::Cpu, 1.0)].into_iter().collect(),
        ..MetaInfo::default()
    }
}

/// Seconds for the batched case's client processes (with this thread's CPU mask) to run
/// their tasks, from the moment all of them are connected.
fn batched(socket: &std::path::Path, b: &BatchedOptions) -> Result<Batched> {
    use std::io::{BufRead, Write};
    use std::process::Stdio;
    let mut children = Vec::new();
    for _ in 0..b.clients {
        let child = (b.command)(socket)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| Error::runtime(format!("starting a batch client: {e}")))?;
        children.push(child);
    }
    // Each says "ready" once connected; all start at once.
    for child in &mut children {
        let mut line = String::new();
        let out = child.stdout.as_mut().expect("piped");
        std::io::BufReader::new(out)
            .read_line(&mut line)
            .map_err(Error::runtime)?;
        if line.trim() != "ready" {
            return Err(Error::runtime("a batch client did not connect"));
        }
    }
    let start = Instant::now();
    let total = |(user, system): (f64, f64)| user + system;
    let (daemon_before, clients_before) =
        (total(process_cpu()), total(cpu_of(libc::RUSAGE_CHILDREN)));
    for child in &mut children {
        let go = child.stdin.as_mut().expect("piped").write_all(b"go\n");
        go.map_err(|e| Error::runtime(format!("batch client: {e}")))?;
    }
    for child in children {
        let out = child.wait_with_output().map_err(Error::runtime)?;
        if !out.status.success() {
            return Err(Error::runtime(format!(
                "a batch client failed ({})",
                out.status
            )));
        }
    }
    Ok(Batched {
        secs: start.elapsed().as_secs_f64(),
        daemon_cpu: total(process_cpu()) - daemon_before,
        // Includes the clients' start-up and connection, before `start`.
        clients_cpu: total(cpu_of(libc::RUSAGE_CHILDREN)) - clients_before,
    })
}

/// A batched-case client process: connects to the daemon at `socket`, says "ready" on
/// stdout, waits for a line on stdin, then runs `tasks` empty tasks, `batch` per
/// message, checking every reply.
pub fn batch_client(socket: &std::path::Path, tasks: usize, batch: usize) -> Result<()> {
    use std::io::{BufRead, Write};
    let meta = bench_meta();
    let mut c = Client::connect(socket, "bench batch")?;
    println!("ready");
    std::io::stdout().flush().map_err(Error::runtime)?;
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(Error::runtime)?;
    let mut done = 0;
    while done < tasks {
        let n = batch.min(tasks - done);
        let requests = (0..n)
            .flat_map(|_| {
                [
                    Request::Alloc { meta: meta.clone() },
                    Request::Free { finished: true },
                ]
            })
            .collect();
        let replies = c.batch(requests)?;
        let answered = replies.len() == 2 * n
            && replies
                .chunks(2)
                .all(|pair| matches!(pair, [Reply::Granted { .. }, Reply::Freed]));
        if !answered {
            return Err(Error::runtime(format!(
                "a batch of {n} empty tasks was not answered with {n} grants and frees: {:?}",
                replies.first()
            )));
        }
        done += n;
    }
    Ok(())
}

/// The daemon's count of policy calls so far.
fn policy_decisions(c: &mut Client) -> Result<u64> {
    match c.stats()? {
        crate::protocol::Reply::Stats { decisions, .. } => Ok(decisions),
        other => Err(Error::runtime(format!("daemon: unexpected {other:?}"))),
    }
}

/// User and system CPU seconds this process has used (all threads).
fn process_cpu() -> (f64, f64) {
    cpu_of(libc::RUSAGE_SELF)
}

/// User and system CPU seconds of `who` (`RUSAGE_SELF`, or `RUSAGE_CHILDREN`: the
/// children waited for).
fn cpu_of(who: libc::c_int) -> (f64, f64) {
    // SAFETY: rusage is plain data (all-zero is valid) and getrusage only fills it.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (secs(usage.ru_utime), secs(usage.ru_stime))
}

/// Microseconds of `n` alloc+free round trips by one client (after 1000 warm-up ones),
/// sorted.
fn round_trips(
    socket: &std::path::Path,
    meta: &MetaInfo,
    n: usize,
    transport: Transport,
) -> Result<Vec<f64>> {
    let mut c = Client::connect_with(socket, "bench", transport)?;
    for _ in 0..1000 {
        c.alloc(meta)?;
        c.free(true)?;
    }
    let mut us = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        c.alloc(meta)?;
        c.free(true)?;
        us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    us.sort_by(f64::total_cmp);
    Ok(us)
}

/// Microseconds of bare 64-byte request/reply exchanges over a Unix socket pair between
/// two threads, sorted: what any socket protocol costs here before doing any work.
/// `polled`: both sides poll the socket (non-blocking) instead of sleeping in `read`.
/// The echo thread runs on `echo_cpu`, as the daemon does.
fn socket_floor(n: usize, polled: bool, echo_cpu: usize) -> Result<Vec<f64>> {
    use std::io::{Read, Write};
    let (mut a, mut b) = std::os::unix::net::UnixStream::pair().map_err(Error::runtime)?;
    a.set_nonblocking(polled).map_err(Error::runtime)?;
    b.set_nonblocking(polled).map_err(Error::runtime)?;
    // read_exact that polls through WouldBlock (a blocking socket never returns it).
    fn receive(s: &mut std::os::unix::net::UnixStream, buf: &mut [u8]) -> std::io::Result<()> {
        let mut got = 0;
        while got < buf.len() {
            match s.read(&mut buf[got..]) {
                Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
    let echo = std::thread::spawn(move || {
        pin_current_thread(&[echo_cpu]).expect("the echo CPU is in this process's mask");
        let mut buf = [0u8; 64];
        while receive(&mut b, &mut buf).is_ok() {
            if b.write_all(&buf).is_err() {
                break;
            }
        }
    });
    let mut buf = [7u8; 64];
    let mut us = Vec::with_capacity(n);
    for i in 0..n + 1000 {
        let t = Instant::now();
        a.write_all(&buf).map_err(Error::runtime)?;
        receive(&mut a, &mut buf).map_err(Error::runtime)?;
        if i >= 1000 {
            us.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    drop(a);
    echo.join()
        .map_err(|_| Error::runtime("echo thread panicked"))?;
    us.sort_by(f64::total_cmp);
    Ok(us)
}
