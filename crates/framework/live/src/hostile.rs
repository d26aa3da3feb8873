//! The attacks a daemon serving several users must withstand, measured (`hetsched bench
//! hostile`): what one user's client can cost the others.
//!
//! A daemon on a thread of this process arbitrates Beisel et al.'s machine (16 PUs and a
//! GPU, as virtual units), measuring the processes clients name. An attacker process,
//! started through a command the caller gives (the CLI re-runs itself; a test re-runs its
//! binary) and run as another uid where this process may (root runs it as `nobody`),
//! attacks it; meanwhile a well-behaved client of this process times alloc+free round
//! trips through the shared page. The attacks:
//!
//! - [`Attack::Threads`]: the attacker names its own process of many threads (8,000 by
//!   default) in every alloc, 100 allocs a batch, back to back. Read in the event loop,
//!   one alloc stalled it 294 ms and a batch of 200 for 34 s;
//! - [`Attack::Holder`]: it holds a unit for such a process under `cfs-cap`, whose ticks
//!   want a sample of every running task every 4 ms (the loop at 100 % of a CPU, others'
//!   p50 337 ms when samples were read in it);
//! - [`Attack::Flood`]: 64 connections send 1,024-request batches back to back (others'
//!   p50 156 ms when a batch was served whole);
//! - [`Attack::Stats`]: 64 connections ask for `stats` and read every reply at once
//!   (the costliest request there is: a whole share of a turn).
//!
//! The well-behaved client starts an alloc+free every 2 ms on a fixed schedule and times
//! each from when it was due, not from when it went out, so a stall of the loop counts
//! against every request it held up, as a real client would feel it (a closed loop that
//! waits for each reply before it sends the next would count a stall once); it spins
//! until a request is due rather than sleep, and runs at the daemon's priority (nice
//! −10, where it may), so that what it times is the daemon, not the kernel waking it or
//! sharing the CPUs out on a busy machine. Reported per attack (and with no attack, for
//! reference): those times' p50, p99 and maximum, the CPU time of the daemon's loop and
//! of its sampling thread, and the load average. An attacker that stops (an error, or
//! the daemon dropped it) fails the run: the figures would otherwise be those of an idle
//! daemon.
//!
//! The attacker runs at nice 10 by default (`--attacker-nice`): what is measured is
//! what it costs others *through the daemon*. An attacker whose 64 threads compete for
//! two CPUs at nice 0 also takes the CPUs from the daemon and from its victim, which is
//! the kernel's to share out (a systemd machine gives each user a slice of its own);
//! `--attacker-nice 0` shows that too.

use crate::arbiter::Arbiter;
use crate::client::Client;
use crate::protocol::{MetaInfo, Reply, Request};
use crate::{devices, server};
use hetsched_core::machine::{UnitGranularity, UnitType};
use hetsched_core::{Error, Result};
use std::fmt;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One way to attack the daemon (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attack {
    /// No attacker: the reference.
    None,
    Threads,
    Holder,
    Flood,
    Stats,
}

impl Attack {
    pub const ALL: [Attack; 5] = [
        Attack::None,
        Attack::Threads,
        Attack::Holder,
        Attack::Flood,
        Attack::Stats,
    ];
    /// The names [`Attack::parse`] accepts, in the order of [`Attack::ALL`].
    pub const NAMES: [&'static str; 5] = ["none", "threads", "holder", "flood", "stats"];

    pub fn parse(name: &str) -> Option<Attack> {
        let i = Self::NAMES.iter().position(|&n| n == name)?;
        Some(Self::ALL[i])
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[Self::ALL.iter().position(|&a| a == self).expect("listed")]
    }

    /// The daemon's policy under this attack: `cfs-cap` samples every running task at
    /// each tick; the others run the daemon's default.
    fn policy(self) -> &'static str {
        match self {
            Attack::Holder => "cfs-cap",
            _ => "cfs",
        }
    }

    fn describe(self, o: &Options) -> String {
        match self {
            Attack::None => "no attack".into(),
            Attack::Threads => format!(
                "allocs naming the attacker's own {}-thread process, 100 a batch, back to back",
                o.threads
            ),
            Attack::Holder => format!(
                "a unit held under cfs-cap for the attacker's own {}-thread process",
                o.threads
            ),
            Attack::Flood => format!(
                "{} connections sending 1,024-request batches back to back",
                o.connections
            ),
            Attack::Stats => format!(
                "{} connections asking for stats back to back, reading every reply",
                o.connections
            ),
        }
    }
}

/// What to measure.
pub struct Options {
    pub attacks: Vec<Attack>,
    /// How long the round trips are timed under each attack.
    pub duration: Duration,
    /// Threads of the attacker's process ([`Attack::Threads`], [`Attack::Holder`]).
    pub threads: usize,
    /// Connections of [`Attack::Flood`] and [`Attack::Stats`].
    pub connections: usize,
    /// The attacker's nice value (see the module documentation).
    pub attacker_nice: i32,
    /// The command that starts the attacker for the daemon at the given socket; the
    /// process calls [`attacker`] with the same attack, threads and connections.
    pub command: AttackerCommand,
}

/// Starts the attacker process for the daemon at a socket (see [`Options::command`]).
pub type AttackerCommand = Box<dyn Fn(&Path, Attack) -> Command>;

/// The figures under one attack.
pub struct Figures {
    pub attack: Attack,
    /// Alloc+free round trips, microseconds, sorted.
    pub round_trips: Vec<f64>,
    /// CPU seconds of the daemon's loop thread and of its sampling thread.
    pub loop_cpu_s: f64,
    pub sampler_cpu_s: f64,
    /// The uid the attacker ran as.
    pub attacker_uid: Option<u32>,
    pub load: String,
}

impl Figures {
    pub fn percentile_us(&self, p: f64) -> f64 {
        hetsched_util::stats::percentile(&self.round_trips, p).unwrap_or(f64::NAN)
    }
}

/// The benchmark's figures; its `Display` is what `hetsched bench hostile` prints.
pub struct Report {
    pub figures: Vec<Figures>,
    duration: Duration,
    attacker_nice: i32,
    describe: Vec<String>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        writeln!(
            f,
            "daemon: the beisel machine (16 PUs + a GPU), processes measured; a well-behaved \
             client times alloc+free round trips for {:.0} s under each attack",
            self.duration.as_secs_f64()
        )?;
        writeln!(
            f,
            "{:<8} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}  {:<15} attack",
            "attack", "p50 ms", "p99 ms", "max ms", "trips", "loop cpu", "sampler", "load"
        )?;
        for (fig, what) in self.figures.iter().zip(&self.describe) {
            let secs = self.duration.as_secs_f64();
            let uid = fig.attacker_uid.map_or(String::new(), |u| {
                format!(" (as uid {u}, nice {})", self.attacker_nice)
            });
            writeln!(
                f,
                "{:<8} {:>10.3} {:>10.3} {:>10.3} {:>9} {:>8.0}% {:>8.0}%  {:<15} {what}{uid}",
                fig.attack.name(),
                fig.percentile_us(0.5) / 1e3,
                fig.percentile_us(0.99) / 1e3,
                fig.percentile_us(1.0) / 1e3,
                fig.round_trips.len(),
                fig.loop_cpu_s * 100.0 / secs,
                fig.sampler_cpu_s * 100.0 / secs,
                fig.load,
            )?;
        }
        Ok(())
    }
}

fn meta(pid: Option<u32>) -> MetaInfo {
    MetaInfo {
        kind: "hostile".into(),
        affinity: [(UnitType::Cpu, 1.0)].into_iter().collect(),
        weight: 1024,
        pid,
        ..MetaInfo::default()
    }
}

/// Runs the attacks one after the other, each against a fresh daemon.
pub fn run(o: &Options) -> Result<Report> {
    let mut figures = Vec::new();
    for &attack in &o.attacks {
        figures.push(under(o, attack)?);
    }
    Ok(Report {
        describe: o.attacks.iter().map(|a| a.describe(o)).collect(),
        figures,
        duration: o.duration,
        attacker_nice: o.attacker_nice,
    })
}

/// CPU seconds of thread `tid` of this process (utime + stime, 10 ms ticks).
fn thread_cpu_s(tid: i32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) else {
        return 0.0;
    };
    // Fields 14 and 15: utime and stime.
    let ticks: f64 = [14, 15]
        .iter()
        .filter_map(|&n| crate::process::stat_field::<f64>(&stat, n))
        .sum();
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// The id of this process's thread named `name`.
fn thread_named(name: &str) -> Option<i32> {
    std::fs::read_dir("/proc/self/task").ok()?.find_map(|e| {
        let e = e.ok()?;
        let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
        (comm.trim() == name).then(|| e.file_name().to_str()?.parse().ok())?
    })
}

/// One attack against a fresh daemon.
fn under(o: &Options, attack: Attack) -> Result<Figures> {
    use std::os::unix::fs::PermissionsExt;
    let mut machine = hetsched_topology::load("beisel", UnitGranularity::Pu)?;
    machine.derive_units(UnitGranularity::Pu);
    let index = devices::described(&machine);
    let dir = tempfile::tempdir().map_err(Error::runtime)?;
    // Another uid reaches the socket through the group (root's: it runs with gid 0).
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
        .map_err(Error::runtime)?;
    let socket = dir.path().join("d").join("daemon.sock");
    let (tx, rx) = std::sync::mpsc::channel();
    let path = socket.clone();
    let daemon = std::thread::Builder::new().name("hetsched-loop".into());
    let thread = daemon.spawn(move || -> Result<()> {
        let policy = hetsched_policies::build(attack.policy(), 0)?;
        let mut arbiter = Arbiter::new(machine, index, policy);
        arbiter.measure_processes();
        let mut daemon = server::Daemon::bind(&path, arbiter)?;
        // As `hetsched daemon` runs it, where this process may.
        let _ = server::Daemon::set_nice(server::DEFAULT_NICE);
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        tx.send((daemon.stop_handle(), tid))
            .map_err(Error::runtime)?;
        daemon.run()
    });
    let thread = thread.map_err(Error::runtime)?;
    let (stop, loop_tid) = rx
        .recv()
        .map_err(|_| Error::runtime("the daemon thread did not start"))?;
    // Thread names are cut to 15 bytes in `comm`.
    let sampler_tid = thread_named(&crate::sampler::THREAD_NAME[..15]);
    let mut child = None;
    let mut attacker_uid = None;
    if attack != Attack::None {
        let mut c = (o.command)(&socket, attack);
        {
            use std::os::unix::process::CommandExt;
            let nice = o.attacker_nice;
            // SAFETY: setpriority is async-signal-safe.
            unsafe {
                c.pre_exec(move || {
                    rustix::process::setpriority_process(None, nice).map_err(Into::into)
                });
            }
        }
        if rustix::process::geteuid().is_root() {
            use std::os::unix::process::CommandExt;
            c.uid(65534).gid(0);
            attacker_uid = Some(65534);
        } else {
            attacker_uid = Some(rustix::process::geteuid().as_raw());
        }
        let mut spawned = c
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| Error::runtime(format!("starting the attacker: {e}")))?;
        // It says "ready" once its threads run and its attack is under way (a test
        // harness may say other things first).
        let out = spawned.stdout.take().expect("piped");
        let mut lines = std::io::BufReader::new(out).lines();
        let mut line = String::new();
        for l in lines.by_ref().take(64) {
            line = l.map_err(Error::runtime)?;
            if line == "ready" {
                break;
            }
        }
        // Drained meanwhile, so that the attacker never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        if line != "ready" {
            let _ = spawned.kill();
            let _ = spawned.wait();
            return Err(Error::runtime(format!(
                "the {} attacker did not start (said {line:?})",
                attack.name()
            )));
        }
        child = Some(spawned);
    }
    let cpu = |tid: Option<i32>| tid.map_or(0.0, thread_cpu_s);
    let (loop0, sampler0) = (cpu(Some(loop_tid)), cpu(sampler_tid));
    let mut timed = time_round_trips(&socket, o.duration);
    let (loop1, sampler1) = (cpu(Some(loop_tid)), cpu(sampler_tid));
    let load = hetsched_util::host::LoadAverage::now_text();
    if let Some(mut c) = child {
        // Still attacking at the end, or the figures are an idle daemon's.
        if let Ok(Some(status)) = c.try_wait() {
            timed = Err(Error::runtime(format!(
                "the {} attacker stopped during the run ({status})",
                attack.name()
            )));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
    stop.stop();
    thread
        .join()
        .map_err(|_| Error::runtime("daemon thread panicked"))??;
    let mut round_trips = timed?;
    round_trips.sort_by(f64::total_cmp);
    Ok(Figures {
        attack,
        round_trips,
        loop_cpu_s: loop1 - loop0,
        sampler_cpu_s: sampler1 - sampler0,
        attacker_uid,
        load,
    })
}

/// How often the well-behaved client starts an alloc+free.
const EVERY: Duration = Duration::from_millis(2);

/// Alloc+free round trips for `duration`, due every [`EVERY`], each timed from when it
/// was due (see the module documentation), microseconds.
fn time_round_trips(socket: &Path, duration: Duration) -> Result<Vec<f64>> {
    // At the daemon's priority where this process may: the attacker's threads then take
    // the CPUs from it no more than from the daemon, and what is timed is the daemon.
    let _ = server::Daemon::set_nice(server::DEFAULT_NICE);
    let mut c = Client::connect(socket, "well-behaved")?;
    let meta = meta(None);
    let mut trips = Vec::new();
    let start = Instant::now();
    let mut due = start;
    while due < start + duration {
        // Spun, not slept: on a busy machine a sleeping client would time the kernel's
        // wake-up latency as much as the daemon.
        while Instant::now() < due {
            std::hint::spin_loop();
        }
        c.alloc(&meta)?;
        c.free(true)?;
        trips.push(due.elapsed().as_secs_f64() * 1e6);
        due += EVERY;
    }
    if trips.is_empty() {
        return Err(Error::runtime("no round trip completed"));
    }
    Ok(trips)
}

/// The attacker process: starts its threads, attacks the daemon at `socket`, says
/// "ready" on stdout once under way, and goes on until killed or its stdin closes.
pub fn attacker(attack: Attack, socket: &Path, threads: usize, connections: usize) -> Result<()> {
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let done = done.clone();
        std::thread::spawn(move || {
            let _ = std::io::stdin().lines().count();
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
    }
    let ready = || -> Result<()> {
        println!("ready");
        std::io::stdout().flush().map_err(Error::runtime)
    };
    let running = || !done.load(std::sync::atomic::Ordering::SeqCst);
    if matches!(attack, Attack::Threads | Attack::Holder) {
        for i in 0..threads {
            std::thread::Builder::new()
                .stack_size(64 << 10)
                .spawn(|| loop {
                    std::thread::park()
                })
                .map_err(|e| Error::runtime(format!("thread {i} of {threads}: {e}")))?;
        }
    }
    let own = Some(std::process::id());
    match attack {
        Attack::None => ready()?,
        Attack::Threads => {
            let mut c = Client::connect(socket, "attacker")?;
            ready()?;
            while running() {
                let requests = (0..100)
                    .flat_map(|_| {
                        [
                            Request::Alloc { meta: meta(own) },
                            Request::Free { finished: true },
                        ]
                    })
                    .collect();
                let replies = c.batch(requests)?;
                let served = replies.len() == 200
                    && replies
                        .chunks(2)
                        .all(|r| matches!(r, [Reply::Granted { .. }, Reply::Freed]));
                if !served {
                    return Err(Error::runtime(format!(
                        "a batch naming its process was not served: {:?}",
                        replies.iter().find(|r| matches!(r, Reply::Error { .. }))
                    )));
                }
            }
        }
        Attack::Holder => {
            let mut c = Client::connect(socket, "attacker")?;
            c.alloc(&meta(own))?;
            ready()?;
            while running() {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Attack::Flood | Attack::Stats => {
            let mut floods = Vec::new();
            for _ in 0..connections {
                let mut c = Client::connect(socket, "attacker")?;
                let done = done.clone();
                floods.push(std::thread::spawn(move || -> Result<()> {
                    while !done.load(std::sync::atomic::Ordering::SeqCst) {
                        if attack == Attack::Stats {
                            c.stats()?;
                            continue;
                        }
                        let requests = (0..512)
                            .flat_map(|_| {
                                [
                                    Request::Alloc { meta: meta(None) },
                                    Request::Free { finished: true },
                                ]
                            })
                            .collect();
                        let replies = c.batch(requests)?;
                        if !matches!(replies.last(), Some(Reply::Freed)) {
                            return Err(Error::runtime(format!(
                                "a flood batch ended {:?}",
                                replies.last()
                            )));
                        }
                    }
                    Ok(())
                }));
            }
            ready()?;
            for f in floods {
                f.join()
                    .map_err(|_| Error::runtime("a flood thread panicked"))??;
            }
        }
    }
    Ok(())
}
