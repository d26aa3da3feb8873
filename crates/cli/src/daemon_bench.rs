//! `hetsched bench daemon`: the live runtime's decision costs, measured against a real
//! daemon (in this process, on a real Unix socket) with real clients.

use clap::Args;
use hetsched_core::machine::UnitGranularity;
use hetsched_core::{Error, Result};
use hetsched_live::arbiter::Arbiter;
use hetsched_live::client::{Client, Transport};
use hetsched_live::protocol::{MetaInfo, Verdict, WireAffinity};
use hetsched_live::{devices, server};
use hetsched_worker::{pin_current_thread, CpuMask};
use std::time::Instant;

#[derive(Args)]
pub struct DaemonBench {
    /// Alloc+free round trips timed for the latency figures.
    #[arg(long, default_value_t = 20_000)]
    round_trips: usize,
    /// Concurrent clients for the throughput figure.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Units the daemon arbitrates (virtual CPU units).
    #[arg(long, default_value_t = 16)]
    units: u32,
    /// Policy spec.
    #[arg(long, default_value = "fcfs")]
    policy: String,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// "p50 X us, p99 Y us" of sorted microseconds.
fn p50_p99(sorted_us: &[f64]) -> String {
    format!(
        "p50 {:.1} us, p99 {:.1} us",
        percentile(sorted_us, 0.5),
        percentile(sorted_us, 0.99)
    )
}

pub fn run(args: DaemonBench) -> Result<()> {
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
    hetsched_policies::build(&args.policy, 0)?;
    // The daemon on the last CPU, the timed client on the first: where both poll, two
    // threads that land on one CPU would take turns instead (the scheduler's wake-affine
    // placement does that now and then), and the figure would measure that.
    let cpus = CpuMask::current()?.cpus();
    let (first_cpu, last_cpu) = (cpus[0], cpus[cpus.len() - 1]);
    let (tx, rx) = std::sync::mpsc::channel();
    let (spec, path) = (args.policy.clone(), socket.clone());
    let thread = std::thread::spawn(move || -> Result<()> {
        pin_current_thread(&[last_cpu])?;
        let arbiter = Arbiter::new(machine, index, hetsched_policies::build(&spec, 0)?);
        let mut daemon = server::Daemon::bind(&path, arbiter)?;
        tx.send(daemon.stop_handle()).map_err(Error::runtime)?;
        daemon.run()
    });
    let stop = rx
        .recv()
        .map_err(|_| Error::runtime("the daemon thread did not start"))?;
    let meta = MetaInfo {
        kind: "bench".into(),
        affinity: WireAffinity {
            cpu: 1.0,
            ..Default::default()
        },
        memory_to_copy: 0,
        weight: 1024,
        ..MetaInfo::default()
    };

    // Latency: one client, alloc + free, through the shared page (the client library's
    // default), with the compact encoding on the socket, and with every message JSON,
    // side by side.
    let unpinned = CpuMask::current()?;
    pin_current_thread(&[first_cpu])?;
    let json_us = round_trips(&socket, &meta, args.round_trips, Transport::Json)?;
    let socket_us = round_trips(&socket, &meta, args.round_trips, Transport::CompactSocket)?;
    let us = round_trips(&socket, &meta, args.round_trips, Transport::SharedPage)?;

    // The floor: a bare request/reply of the same size class over a socket pair
    // between two threads, measured here, now.
    let floor = socket_floor(args.round_trips, false, last_cpu)?;
    let polled_floor = socket_floor(args.round_trips, true, last_cpu)?;

    // In-slice re-request: the flag-page fast path.
    let mut c = Client::connect(&socket, "bench")?;
    c.alloc(&meta)?;
    let n = 10_000_000u32;
    let t = Instant::now();
    for _ in 0..n {
        if c.rerequest()? != Verdict::Keep {
            return Err(Error::runtime("in-slice re-request was not kept"));
        }
    }
    let rereq_ns = t.elapsed().as_secs_f64() * 1e9 / n as f64;
    c.free(true)?;

    // Throughput: many clients, each alloc + free in a loop; a decision = one request.
    // They run wherever the scheduler puts them (they inherit this thread's mask).
    unpinned.apply()?;
    let per_client = 2000;
    let policy_calls_before = policy_decisions(&mut c)?;
    let cpu_before = process_cpu();
    let start = Instant::now();
    let handles: Vec<_> = (0..args.clients)
        .map(|_| {
            let socket = socket.clone();
            let meta = meta.clone();
            std::thread::spawn(move || -> Result<()> {
                let mut c = Client::connect(&socket, "bench")?;
                for _ in 0..per_client {
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
    let requests = args.clients * per_client * 2;
    let decisions = requests as f64 / secs;
    let (user, sys) = {
        let after = process_cpu();
        (after.0 - cpu_before.0, after.1 - cpu_before.1)
    };
    let policy_calls = policy_decisions(&mut c)? - policy_calls_before;
    stop.stop();
    thread
        .join()
        .map_err(|_| Error::runtime("daemon thread panicked"))??;

    println!(
        "daemon: {} units, policy {}, this machine ({} CPUs shared by daemon and clients)",
        args.units,
        args.policy,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "alloc+free round trip: {} over {} (goal p99 <= 20 us)",
        p50_p99(&us),
        us.len()
    );
    println!(
        "  the same with the compact encoding on the socket: {}",
        p50_p99(&socket_us)
    );
    println!(
        "  the same with every message JSON on the socket: {}",
        p50_p99(&json_us)
    );
    println!(
        "  floor on this machine: bare socket request+reply between two threads {} (alloc+free is two of them)",
        p50_p99(&floor)
    );
    println!(
        "  floor with both sides polling (as the client and daemon do): {}",
        p50_p99(&polled_floor)
    );
    println!("in-slice re-request: {rereq_ns:.2} ns (goal <= 100 ns)");
    println!(
        "throughput: {:.0} decisions/s with {} concurrent clients ({} requests in {:.2} s; goal >= 100k/s)",
        decisions,
        args.clients,
        requests,
        secs
    );
    println!(
        "  policy calls (submit, pick, checkpoint, complete) in that run: {:.0}/s",
        policy_calls as f64 / secs
    );
    println!(
        "  CPU per request, all threads of this process: {:.1} us user, {:.1} us kernel",
        user * 1e6 / requests as f64,
        sys * 1e6 / requests as f64
    );
    Ok(())
}

/// The daemon's count of policy calls so far.
fn policy_decisions(c: &mut Client) -> Result<u64> {
    match c.stats()? {
        hetsched_live::protocol::Reply::Stats { decisions, .. } => Ok(decisions),
        other => Err(Error::runtime(format!("daemon: unexpected {other:?}"))),
    }
}

/// User and system CPU seconds this process has used (all threads).
fn process_cpu() -> (f64, f64) {
    // SAFETY: rusage is plain data (all-zero is valid) and getrusage only fills it.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
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
