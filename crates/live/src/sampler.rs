//! Per-task measurements for the live engine's ticks and `stats`: what the processes
//! clients named (see `client_process`) did over the sampler's latest pass.
//!
//! Why a thread of its own: reading a process costs the daemon in proportion to its
//! threads (`/proc/PID/task/*/schedstat` and `stat`, one pair per thread: 294 ms for a
//! process of 8,000 threads), and a client chooses how many threads the process it names
//! has. Done in the event loop, one such alloc stalled every other client for as long.
//! So the loop never reads `/proc`: a [`Sampling`] thread makes passes over the named
//! processes and publishes, per process, what it measured over its latest pass; the
//! loop copies that into a tick's samples and into `stats`, in constant time. What
//! bounds the thread:
//!
//! - a pass reads at most [`THREADS_PER_PASS`] threads of a process, the next ones at
//!   the next pass (round robin over its thread list): a process of more threads is
//!   measured whole (CPU time comes from its CPU-time clock, one system call for every
//!   thread), but its run-queue wait, switches and CPU come from the threads this pass
//!   read, and the sample says how many of how many ([`Span::threads_read`]);
//! - after a pass the thread rests at least [`REST_FACTOR`] times as long as the pass
//!   took (so it uses at most a fifth of a CPU), and at least the period the daemon asked
//!   for (the policy's tick interval): samples then cover longer spans, each stating its
//!   span (`Sample::interval_ns`) and, in `stats`, its age;
//! - a uid other than the daemon's has at most [`MAX_PROCESSES_PER_UID`] processes
//!   measured at once, and all uids together [`MAX_PROCESSES`]; further tasks run
//!   unmeasured (`stats` says so);
//! - hardware counters (three descriptors per thread) only for a process of at most
//!   [`MAX_COUNTED_THREADS`] threads, and at most [`MAX_COUNTERS`] descriptors in all.
//!
//! Why two sources: policies that balance by behaviour (DI/DINO's LLC misses per
//! instruction, cycles per instruction) need hardware counters, which exist only where
//! the machine has a PMU that this user may read; everything else (CPU time, run-queue
//! wait, context switches, where it ran) the kernel accounts for every process anyway.
//! So the sampler probes the PMU once, reports the outcome as its [`Pmu`] status for the
//! daemon to print once, and fills each sample from what exists: hardware counters from
//! `perf_event_open` (source `perf`) and the kernel's per-process accounting (source
//! `proc`). What no source measured stays `None`, never a zero that looks measured.
//!
//! - `proc`: CPU time (user + system) from the process's CPU-time clock
//!   (`clock_getcpuclockid`: nanoseconds, all threads, ended ones included; the clock
//!   `/proc/PID/stat`'s utime + stime come from, which round to 10 ms); run-queue wait
//!   and times switched onto a CPU from each thread's `/proc/PID/task/TID/schedstat`,
//!   and the CPU of the busiest thread read from its `stat`. A thread that ends between
//!   two reads of it loses its wait and switches since the earlier one (its CPU time
//!   stays).
//! - `perf`: user-space instructions, cycles and LLC misses (the kernel's generic
//!   `cache-misses` event, the last level on common PMUs), counting mode, one counter per
//!   event and per thread alive at the process's first pass, with `inherit` so that the
//!   threads and children they start later are counted too. A multiplexed counter is
//!   scaled by enabled / running time; one that never ran on the PMU during a span is
//!   `None`.
//!
//! A process is read only between two looks at its pidfd that say it is alive, so a
//! recycled pid is never read as the named process.

use crate::client_process::{ClientProcess, ProcessKey};
use crate::process::thread_ids;
use arc_swap::ArcSwap;
use hetsched_core::policy::{Sample, Sources, UnitId};
use hetsched_core::task::TaskId;
use nix::time::{clock_getcpuclockid, clock_gettime, ClockId};
use perf_event::events::Hardware;
use perf_event::{Builder, Counter};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Threads of one process read per pass.
pub const THREADS_PER_PASS: usize = 256;

/// How often the thread list of a process of more than [`THREADS_PER_PASS`] threads is
/// made again (see [`ThreadList`]).
pub const RELIST_EVERY: Duration = Duration::from_secs(10);

/// After a pass, the sampling thread rests at least this many times as long as the
/// pass took.
pub const REST_FACTOR: u32 = 4;

/// Processes of one uid (other than the daemon's) measured at once.
pub const MAX_PROCESSES_PER_UID: usize = 64;

/// Processes measured at once, over all uids (each holds a pidfd).
pub const MAX_PROCESSES: usize = 4096;

/// The descriptors the sampler may hold (pidfds and counters) under a limit of
/// `fd_limit` open files: at most an eighth of them, so that the daemon's connections
/// keep the rest (`server` counts them out).
pub fn descriptors(fd_limit: usize) -> usize {
    (fd_limit / 8).min(MAX_PROCESSES + MAX_COUNTERS)
}

/// A process with more threads than this at its first pass gets no hardware counters.
pub const MAX_COUNTED_THREADS: usize = 64;

/// Hardware-counter descriptors open at once, over all processes.
pub const MAX_COUNTERS: usize = 3 * 1024;

/// The sampling thread's nice value: what it measures can wait for whatever else runs.
pub const SAMPLER_NICE: i32 = 10;

/// The sampling thread's name.
pub const THREAD_NAME: &str = "hetsched-sampler";

/// Whether this machine's hardware counters can be read: probed once per [`Sampling`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pmu {
    Counting,
    /// Why not (the `perf_event_open` error).
    Absent(String),
}

impl fmt::Display for Pmu {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Pmu::Counting => f.write_str("hardware counters: instructions, cycles, LLC misses"),
            Pmu::Absent(why) => write!(
                f,
                "no hardware counters ({why}): samples carry CPU time, run delay, context \
                 switches and CPU from /proc only"
            ),
        }
    }
}

impl Pmu {
    /// Probes the PMU (one `perf_event_open` on the calling thread).
    pub fn probe() -> Pmu {
        match Builder::new(EVENTS[0]).observe_self().build() {
            Ok(_) => Pmu::Counting,
            Err(e) => Pmu::Absent(format!("perf_event_open(instructions): {e}")),
        }
    }
}

/// The hardware events, in the order of the sample's `instructions`, `cycles` and
/// `llc_misses`.
const EVENTS: [Hardware; 3] = [
    Hardware::INSTRUCTIONS,
    Hardware::CPU_CYCLES,
    Hardware::CACHE_MISSES,
];

/// What a process did over one pass of the sampler: the measured part of a [`Sample`].
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub busy_ns: u64,
    pub run_delay_ns: u64,
    pub context_switches: u64,
    pub cpu: Option<u32>,
    pub instructions: Option<u64>,
    pub cycles: Option<u64>,
    pub llc_misses: Option<u64>,
    /// The counters were read (the `perf` source).
    pub counted: bool,
    /// Nanoseconds from the previous pass's reading to this one's.
    pub interval_ns: u64,
    /// When this pass read it.
    pub at: Instant,
    /// The process's threads, and how many of them this pass read.
    pub threads: u32,
    pub threads_read: u32,
}

/// How the sampling thread is doing, for `stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplerStats {
    /// Processes measured now.
    pub processes: u32,
    /// Passes made so far.
    pub passes: u64,
    /// How long the latest pass took, ms.
    pub pass_ms: f64,
    /// The period asked for (the policy's tick interval), ms.
    pub period_ms: f64,
}

/// The daemon's side of the sampling thread: what the arbiter calls, each call in
/// constant time; see the module documentation.
pub struct Sampling {
    pmu: Pmu,
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
    tasks: FxHashMap<TaskId, ProcessKey>,
    /// Each measured process: how many tasks name it, and whose it is.
    processes: FxHashMap<ProcessKey, (u32, u32)>,
    per_uid: FxHashMap<u32, usize>,
    own_uid: u32,
    period: Duration,
    /// Processes measured at most: [`MAX_PROCESSES`], or half the sampler's
    /// [`descriptors`] if fewer.
    max_processes: usize,
    /// Commands not handed to the thread yet (see [`Sampling::flush`]).
    pending: Commands,
}

/// What to do with each process at the next pass: track it (`Some`, for a client of
/// that uid) or stop (`None`). Only the last word counts (the handle alternates them),
/// so a client that allocates and frees in a loop adds nothing here, however fast.
type Commands = FxHashMap<ProcessKey, Option<(ClientProcess, u32)>>;

/// Between the event loop and the sampling thread. The loop never waits for the
/// thread: it reads what the thread published without a lock, and hands commands over
/// only when the lock is free (`try_lock`). The thread runs at a low priority, and a
/// lock it held while the kernel ran something else would stall the loop for as long
/// (several milliseconds, measured, on a busy two-CPU machine).
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    published: ArcSwap<Published>,
}

#[derive(Default)]
struct State {
    commands: Commands,
    stop: bool,
}

/// What the thread publishes after each pass, replaced whole.
#[derive(Default)]
pub struct Published {
    /// Each process's latest span.
    pub spans: FxHashMap<ProcessKey, Span>,
    stats: SamplerStats,
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    // The sampling thread holds the lock only to swap data in or out.
    shared.state.lock().unwrap_or_else(|e| e.into_inner())
}

impl Sampling {
    /// Starts the sampling thread, passing every `period` (the policy's tick interval)
    /// where its rest allows; probes the PMU first.
    pub fn start(period: Duration) -> Sampling {
        let pmu = Pmu::probe();
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum;
        let budget = descriptors(limit.map_or(usize::MAX, |n| n as usize));
        let max_counters = (budget / 2).min(MAX_COUNTERS);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            published: ArcSwap::default(),
        });
        let thread = {
            let shared = shared.clone();
            let counting = pmu == Pmu::Counting;
            std::thread::Builder::new()
                .name(THREAD_NAME.into())
                .spawn(move || {
                    // Below the event loop's priority and everyone's: its work can wait.
                    let _ = rustix::process::setpriority_process(
                        Some(rustix::thread::gettid()),
                        SAMPLER_NICE,
                    );
                    Passes::new(counting, max_counters).run(&shared, period)
                })
                .expect("starting the sampling thread")
        };
        Sampling {
            pmu,
            shared,
            thread: Some(thread),
            tasks: FxHashMap::default(),
            processes: FxHashMap::default(),
            per_uid: FxHashMap::default(),
            own_uid: rustix::process::getuid().as_raw(),
            period,
            max_processes: (budget / 2).min(MAX_PROCESSES),
            pending: Commands::default(),
        }
    }

    /// The PMU probe's outcome, for the daemon to report once.
    pub fn pmu(&self) -> &Pmu {
        &self.pmu
    }

    /// Measures `process` for `task`, a task of a client of uid `uid`; why not, when
    /// that uid has [`MAX_PROCESSES_PER_UID`] processes measured already.
    pub fn track(&mut self, task: TaskId, process: ClientProcess, uid: u32) -> Result<(), String> {
        let key = process.key();
        if let Some((tasks, _)) = self.processes.get_mut(&key) {
            *tasks += 1;
        } else {
            if self.processes.len() >= self.max_processes {
                return Err(format!(
                    "{} processes measured (at most {})",
                    self.processes.len(),
                    self.max_processes
                ));
            }
            let of_uid = self.per_uid.entry(uid).or_default();
            if uid != self.own_uid && *of_uid >= MAX_PROCESSES_PER_UID {
                return Err(format!(
                    "uid {uid} has {of_uid} processes measured (at most {MAX_PROCESSES_PER_UID})"
                ));
            }
            *of_uid += 1;
            self.processes.insert(key, (1, uid));
            self.pending.insert(key, Some((process, uid)));
            self.flush();
        }
        self.tasks.insert(task, key);
        Ok(())
    }

    /// Stops measuring for `task` (its process, when no other task names it).
    pub fn untrack(&mut self, task: TaskId) {
        let Some(key) = self.tasks.remove(&task) else {
            return;
        };
        let Some((tasks, uid)) = self.processes.get_mut(&key) else {
            return;
        };
        *tasks -= 1;
        if *tasks == 0 {
            let uid = *uid;
            self.processes.remove(&key);
            if let Some(n) = self.per_uid.get_mut(&uid) {
                *n -= 1;
                if *n == 0 {
                    self.per_uid.remove(&uid);
                }
            }
            self.pending.insert(key, None);
            self.flush();
        }
    }

    /// Hands the commands not yet handed over to the thread, if its lock is free now
    /// (never waiting for it; the arbiter calls this on every turn of the loop).
    pub fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        if let Ok(mut state) = self.shared.state.try_lock() {
            state.commands.extend(self.pending.drain());
        }
    }

    /// Whether `task`'s process is measured.
    pub fn tracks(&self, task: TaskId) -> bool {
        self.tasks.contains_key(&task)
    }

    /// How many tasks, and how many processes, are measured.
    pub fn measured(&self) -> (usize, usize) {
        (self.tasks.len(), self.processes.len())
    }

    /// What the thread published last: the latest span of every measured process, to
    /// read several tasks' from.
    pub fn spans(&self) -> Arc<Published> {
        self.shared.published.load_full()
    }

    /// `task`'s latest measurement out of `spans`, as a sample of `unit`, with its
    /// age; `None` before its process's second pass, or when it is not measured.
    pub fn sample(
        &self,
        spans: &Published,
        task: TaskId,
        unit: UnitId,
    ) -> Option<(Sample, Duration)> {
        let span = spans.spans.get(self.tasks.get(&task)?)?;
        let sample = Sample {
            unit,
            task: Some(task),
            busy_ns: span.busy_ns,
            interval_ns: span.interval_ns,
            memory_bound: None,
            run_delay_ns: Some(span.run_delay_ns),
            context_switches: Some(span.context_switches),
            cpu: span.cpu,
            instructions: span.instructions,
            cycles: span.cycles,
            llc_misses: span.llc_misses,
            sources: Sources {
                proc: true,
                perf: span.counted,
            },
        };
        Some((sample, span.at.elapsed()))
    }

    /// The latest span of `task`'s process (threads read, age), for `stats`.
    pub fn span(&self, spans: &Published, task: TaskId) -> Option<Span> {
        spans.spans.get(self.tasks.get(&task)?).copied()
    }

    pub fn stats(&self) -> SamplerStats {
        SamplerStats {
            period_ms: self.period.as_secs_f64() * 1e3,
            ..self.shared.published.load().stats
        }
    }
}

impl Drop for Sampling {
    fn drop(&mut self) {
        lock(&self.shared).stop = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The sampling thread's state: the processes it measures.
struct Passes {
    counting: bool,
    tracked: FxHashMap<ProcessKey, Tracked>,
    /// Each process's thread list, kept while it is measured and for [`RELIST_EVERY`]
    /// after, so that a client that allocates and frees in a loop does not make the
    /// sampler list its threads again each time.
    lists: FxHashMap<ProcessKey, ThreadList>,
    /// Counter descriptors open, and the most that may be (see [`MAX_COUNTERS`]).
    counters_open: usize,
    max_counters: usize,
}

struct Tracked {
    process: ClientProcess,
    /// The uid of the client that named it, which must still own it.
    client_uid: u32,
    /// Set at the first pass: the CPU-time clock and the counters.
    clock: Option<ClockId>,
    counters: Option<Counters>,
    /// The previous pass's cumulative figures.
    cpu_ns: u64,
    counts: Option<[Reading; EVENTS.len()]>,
    at: Instant,
    /// Each thread's `schedstat` when last read.
    threads: FxHashMap<i32, ThreadStat>,
    /// Where the next pass starts in the sorted thread list.
    cursor: usize,
    ended: bool,
}

impl Passes {
    fn new(counting: bool, max_counters: usize) -> Passes {
        Passes {
            counting,
            tracked: FxHashMap::default(),
            lists: FxHashMap::default(),
            counters_open: 0,
            max_counters,
        }
    }

    fn run(mut self, shared: &Shared, period: Duration) {
        let mut next = Instant::now();
        let mut passes = 0;
        loop {
            // The rest is kept whatever clients do (a client that allocates and frees
            // in a loop must not buy extra passes); only a stop cuts it short.
            let commands = {
                let mut state = lock(shared);
                loop {
                    if state.stop {
                        return;
                    }
                    let now = Instant::now();
                    if now >= next {
                        break;
                    }
                    state = shared
                        .wake
                        .wait_timeout(state, next - now)
                        .map(|(s, _)| s)
                        .unwrap_or_else(|e| e.into_inner().0);
                }
                std::mem::take(&mut state.commands)
            };
            for (key, c) in commands {
                if let Some(t) = self.tracked.remove(&key) {
                    self.counters_open -= t.counters.as_ref().map_or(0, |c| c.open.len());
                }
                if let Some((p, uid)) = c {
                    self.tracked.insert(key, Tracked::new(p, uid));
                }
            }
            let start = Instant::now();
            let mut spans = FxHashMap::default();
            for (key, t) in &mut self.tracked {
                let counters = (&mut self.counters_open, self.max_counters);
                let list = self.lists.entry(*key).or_default();
                if let Some(span) = t.pass(self.counting, counters, list) {
                    spans.insert(*key, span);
                }
            }
            let tracked = &self.tracked;
            self.lists.retain(|k, l| {
                tracked.contains_key(k) || l.listed.is_some_and(|at| at.elapsed() < RELIST_EVERY)
            });
            let took = start.elapsed();
            next = Instant::now() + period.max(took * REST_FACTOR);
            passes += 1;
            let stats = SamplerStats {
                processes: self.tracked.len() as u32,
                passes,
                pass_ms: took.as_secs_f64() * 1e3,
                period_ms: 0.0,
            };
            shared.published.store(Arc::new(Published { spans, stats }));
        }
    }
}

impl Tracked {
    fn new(process: ClientProcess, client_uid: u32) -> Tracked {
        Tracked {
            process,
            client_uid,
            clock: None,
            counters: None,
            cpu_ns: 0,
            counts: None,
            at: Instant::now(),
            threads: FxHashMap::default(),
            cursor: 0,
            ended: false,
        }
    }

    /// One pass: reads the process and returns what it did since the previous pass
    /// (`None` at the first pass, which only takes the starting point, and once it
    /// ended).
    fn pass(
        &mut self,
        counting: bool,
        counters: (&mut usize, usize),
        list: &mut ThreadList,
    ) -> Option<Span> {
        let (counters_open, max_counters) = counters;
        // Ended, or no longer the client's (it ran a set-user-ID program): not read
        // again.
        let status = self.process.status(self.client_uid);
        let Some((true, threads)) = status.filter(|_| !self.ended) else {
            self.ended = true;
            return None;
        };
        let pid = self.process.pid();
        let first = self.clock.is_none();
        if first {
            let raw = nix::unistd::Pid::from_raw(pid as i32);
            self.clock = Some(clock_getcpuclockid(raw).ok()?);
        }
        let at = Instant::now();
        let cpu_ns = cpu_ns(self.clock?)?;
        list.refresh(pid, threads)?;
        let tids = &list.tids;
        if first && counting && tids.len() <= MAX_COUNTED_THREADS {
            let want = tids.len() * EVENTS.len();
            if *counters_open + want <= max_counters {
                self.counters = Counters::open(tids);
                *counters_open += self.counters.as_ref().map_or(0, |c| c.open.len());
            }
        }
        // This pass's window of the thread list, from where the last one stopped.
        let n = tids.len().min(THREADS_PER_PASS);
        let from = if tids.is_empty() {
            0
        } else {
            self.cursor % tids.len()
        };
        let window = tids.iter().cycle().skip(from).take(n);
        let (mut delay_ns, mut switches, mut busiest) = (0, 0, (0, None));
        let mut read = 0;
        for &tid in window {
            let Some(now) = thread_stat(pid, tid) else {
                continue;
            };
            let d = now.since(self.threads.get(&tid));
            self.threads.insert(tid, now);
            read += 1;
            delay_ns += d.delay_ns;
            switches += d.switches;
            if d.run_ns >= busiest.0 {
                busiest = (d.run_ns, d.cpu);
            }
        }
        self.cursor = from + n;
        if self.threads.len() > tids.len() {
            self.threads
                .retain(|tid, _| tids.binary_search(tid).is_ok());
        }
        let counts = self.counters.as_mut().and_then(Counters::read);
        // Read between two looks that say it is alive: all of it is this process's.
        if !self.process.alive() {
            self.ended = true;
            return None;
        }
        let span = Span {
            busy_ns: cpu_ns.saturating_sub(self.cpu_ns),
            run_delay_ns: delay_ns,
            context_switches: switches,
            cpu: busiest.1,
            instructions: None,
            cycles: None,
            llc_misses: None,
            counted: false,
            interval_ns: at.duration_since(self.at).as_nanos() as u64,
            at,
            threads: threads as u32,
            threads_read: read,
        };
        let span = match (&self.counts, &counts) {
            (Some(then), Some(now)) => {
                let [instructions, cycles, llc_misses] =
                    std::array::from_fn(|i| scaled(&then[i], &now[i]));
                Span {
                    instructions,
                    cycles,
                    llc_misses,
                    counted: true,
                    ..span
                }
            }
            _ => span,
        };
        (self.cpu_ns, self.counts, self.at) = (cpu_ns, counts, at);
        (!first).then_some(span)
    }
}

/// A process's thread ids, sorted, as last listed. Listing `/proc/PID/task` costs the
/// kernel in proportion to the threads (10 ms for 8,000), on a kernel without
/// preemption in stretches no thread of any priority can interrupt on that CPU (see
/// `process::thread_ids`): measured, the event loop waited milliseconds while the
/// sampler listed a client's 8,000-thread process at every pass. So the list is made
/// again only when the thread count (from the main thread's status) has changed, and,
/// for a process of more than [`THREADS_PER_PASS`] threads, at most every
/// [`RELIST_EVERY`]; meanwhile a thread that ended is skipped, and one that started
/// waits for the next list.
#[derive(Default)]
struct ThreadList {
    tids: Vec<i32>,
    listed: Option<Instant>,
}

impl ThreadList {
    /// Lists `pid`'s threads again if its count `threads` says the list is stale and
    /// the rule above allows; `None` when the listing fails (the process ended).
    fn refresh(&mut self, pid: u32, threads: usize) -> Option<()> {
        let stale = match self.listed {
            None => true,
            Some(at) => {
                threads != self.tids.len()
                    && (threads <= THREADS_PER_PASS || at.elapsed() >= RELIST_EVERY)
            }
        };
        if stale {
            self.tids = thread_ids(pid).ok()?;
            self.tids.sort_unstable();
            self.listed = Some(Instant::now());
        }
        Some(())
    }
}

fn cpu_ns(clock: ClockId) -> Option<u64> {
    let ts = clock_gettime(clock).ok()?;
    Some(ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64)
}

/// One thread's `schedstat` (cumulative) and the CPU it last ran on.
#[derive(Clone, Copy, Default)]
struct ThreadStat {
    run_ns: u64,
    delay_ns: u64,
    switches: u64,
    cpu: Option<u32>,
}

impl ThreadStat {
    /// The counts since `then`, this thread id's previous stat; counts below `then`'s
    /// are a new thread that reuses the id, counted from zero.
    fn since(&self, then: Option<&ThreadStat>) -> ThreadStat {
        let then = match then {
            Some(t)
                if t.run_ns <= self.run_ns
                    && t.delay_ns <= self.delay_ns
                    && t.switches <= self.switches =>
            {
                *t
            }
            _ => ThreadStat::default(),
        };
        ThreadStat {
            run_ns: self.run_ns - then.run_ns,
            delay_ns: self.delay_ns - then.delay_ns,
            switches: self.switches - then.switches,
            cpu: self.cpu,
        }
    }
}

/// Thread `tid`'s `schedstat` and CPU; `None` if it ended while being read.
fn thread_stat(pid: u32, tid: i32) -> Option<ThreadStat> {
    let read = |file| std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/{file}"));
    let schedstat = read("schedstat").ok()?;
    let mut fields = schedstat.split_ascii_whitespace().map(str::parse::<u64>);
    let (Some(Ok(run_ns)), Some(Ok(delay_ns)), Some(Ok(switches))) =
        (fields.next(), fields.next(), fields.next())
    else {
        return None;
    };
    // `stat` field 39: the processor it last ran on.
    let cpu = read("stat")
        .ok()
        .and_then(|stat| crate::process::stat_field(&stat, 39));
    Some(ThreadStat {
        run_ns,
        delay_ns,
        switches,
        cpu,
    })
}

struct Counters {
    /// `EVENTS.len()` counters per thread, event `i` at `k * EVENTS.len() + i`.
    open: Vec<Counter>,
}

/// One event's cumulative count and times, summed over the threads' counters.
#[derive(Clone, Copy, Default)]
struct Reading {
    count: u64,
    enabled_ns: u64,
    running_ns: u64,
}

impl Counters {
    /// Counters for every thread in `tids`, or none if any fails to open (a limit on
    /// open files): a partial count would look complete.
    fn open(tids: &[i32]) -> Option<Counters> {
        let mut open = Vec::new();
        for &tid in tids {
            for event in EVENTS {
                let counter = Builder::new(event)
                    .observe_pid(tid)
                    .inherit(true)
                    .enabled(true)
                    .build()
                    .ok()?;
                open.push(counter);
            }
        }
        Some(Counters { open })
    }

    fn read(&mut self) -> Option<[Reading; EVENTS.len()]> {
        let mut sum = [Reading::default(); EVENTS.len()];
        for (k, counter) in self.open.iter_mut().enumerate() {
            let data = counter.read_full().ok()?;
            let r = &mut sum[k % EVENTS.len()];
            r.count += data.count();
            r.enabled_ns += data.time_enabled()?.as_nanos() as u64;
            r.running_ns += data.time_running()?.as_nanos() as u64;
        }
        Some(sum)
    }
}

/// The count between two readings, scaled up if the counter shared the PMU (`None` if
/// it was enabled but never on the PMU: nothing was measured).
fn scaled(then: &Reading, now: &Reading) -> Option<u64> {
    let count = now.count.saturating_sub(then.count);
    let enabled = now.enabled_ns.saturating_sub(then.enabled_ns);
    let running = now.running_ns.saturating_sub(then.running_ns);
    match (enabled, running) {
        // The task did not run: it truly executed nothing.
        (0, _) => Some(0),
        (_, 0) => None,
        _ => Some((count as u128 * enabled as u128 / running as u128) as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::tests::{allowed_cpus, wait_until};
    use crate::process::{Binding, Process};
    use std::process::Command;

    fn busy_child() -> Process {
        let mut c = Command::new("sh");
        c.args(["-c", "while :; do :; done"]);
        Process::spawn(c, &Binding::default()).unwrap()
    }

    fn named(p: &Process) -> ClientProcess {
        ClientProcess::check(p.pid(), rustix::process::getuid().as_raw()).unwrap()
    }

    /// What every sample must say on this machine, PMU or not.
    fn assert_honest(sampling: &Sampling, s: &Sample) {
        assert!(s.sources.proc);
        assert_eq!(s.sources.perf, *sampling.pmu() == Pmu::Counting, "{s:?}");
        let counters = [s.instructions, s.cycles, s.llc_misses];
        if !s.sources.perf {
            assert_eq!(counters, [None; 3], "no perf source, yet counters: {s:?}");
        }
        assert!(
            s.run_delay_ns.is_some() && s.context_switches.is_some(),
            "{s:?}"
        );
        assert!(allowed_cpus().contains(&s.cpu.unwrap()), "{s:?}");
        assert_eq!(s.memory_bound, None);
        assert!(s.interval_ns > 0, "{s:?}");
        // In JSON, the sources by name and an absent measurement absent (not 0, not null).
        let json = serde_json::to_value(s).unwrap();
        let perf = serde_json::json!("perf");
        assert_eq!(
            json["sources"].as_array().unwrap().contains(&perf),
            s.sources.perf
        );
        assert!(json["sources"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("proc")));
        assert_eq!(json.get("instructions").is_none(), s.instructions.is_none());
        assert!(json.get("memory_bound").is_none());
    }

    /// The latest sample of `task`, once a pass newer than `after` has published one.
    fn next_sample(sampling: &Sampling, task: TaskId, after: Option<Instant>) -> (Sample, Span) {
        let mut out = None;
        wait_until("a new pass", || {
            let spans = sampling.spans();
            match (
                sampling.sample(&spans, task, 3),
                sampling.span(&spans, task),
            ) {
                (Some((s, _)), Some(span)) if after.is_none_or(|a| span.at > a) => {
                    out = Some((s, span));
                    true
                }
                _ => false,
            }
        });
        out.unwrap()
    }

    #[test]
    fn a_busy_child_accumulates_cpu_time_from_honest_sources() {
        let sampling = &mut Sampling::start(Duration::from_millis(5));
        if let Pmu::Absent(why) = sampling.pmu() {
            assert!(why.starts_with("perf_event_open(instructions): "), "{why}");
            assert!(sampling
                .pmu()
                .to_string()
                .starts_with("no hardware counters"));
        }
        let child = busy_child();
        sampling.track(7, named(&child), 0).unwrap();
        assert!(sampling.tracks(7));
        let (mut busy_ns, mut instructions, mut samples, mut last) = (0, 0, 0, None);
        wait_until("the child has used 200 ms of CPU", || {
            let (s, span) = next_sample(sampling, 7, last);
            last = Some(span.at);
            assert_eq!((s.unit, s.task), (3, Some(7)));
            assert_eq!((span.threads, span.threads_read), (1, 1));
            assert_honest(sampling, &s);
            busy_ns += s.busy_ns;
            instructions += s.instructions.unwrap_or(0);
            samples += 1;
            busy_ns >= 200_000_000
        });
        assert!(samples > 1, "CPU time must accumulate over several samples");
        if sampling.pmu() == &Pmu::Counting {
            assert!(instructions > 0);
        }
        let stats = sampling.stats();
        assert_eq!((stats.processes, stats.period_ms), (1, 5.0));
        assert!(stats.passes >= samples as u64, "{stats:?}");

        // A stopped process runs nothing: zero is then a measurement, not a filler.
        child.pause().unwrap();
        let stat = format!("/proc/{}/stat", child.pid());
        wait_until("the child is stopped", || {
            let stat = std::fs::read_to_string(&stat).unwrap();
            stat.rsplit_once(") ").unwrap().1.starts_with('T')
        });
        let (_, span) = next_sample(sampling, 7, Some(Instant::now()));
        let (s, _) = next_sample(sampling, 7, Some(span.at));
        assert_honest(sampling, &s);
        assert_eq!((s.busy_ns, s.context_switches), (0, Some(0)), "{s:?}");
        if s.sources.perf {
            assert_eq!(s.instructions, Some(0));
        }
    }

    /// Thousands of threads cost the sampler a bounded pass: it reads at most
    /// THREADS_PER_PASS of them a pass, round robin, and says so.
    #[test]
    fn a_process_of_many_threads_is_read_a_window_at_a_time() {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "sampler::tests::many_threads_helper",
                "--ignored",
            ])
            .env(MANY, "700")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        // Its 700, its main thread and the test harness's, once their count holds still.
        let mut last = 0;
        wait_until("700 threads, their count steady", || {
            let n = thread_ids(pid).map_or(0, |t| t.len());
            let steady = n >= 701 && n == last;
            last = n;
            steady
        });
        let p = ClientProcess::check(pid, rustix::process::getuid().as_raw()).unwrap();
        let mut sampling = Sampling::start(Duration::from_millis(1));
        sampling.track(1, p, 0).unwrap();
        let (_, span) = next_sample(&sampling, 1, None);
        assert_eq!(span.threads as usize, last);
        assert_eq!(span.threads_read as usize, THREADS_PER_PASS);
        drop(child.stdin.take());
        child.wait().unwrap();
        // Ended: no pass reads it any more, so it has no span.
        let passes = sampling.stats().passes;
        wait_until("two more passes", || sampling.stats().passes >= passes + 2);
        let spans = sampling.spans();
        assert!(
            sampling.span(&spans, 1).is_none(),
            "an ended process was read"
        );
        sampling.untrack(1);
        assert!(!sampling.tracks(1));
    }

    const MANY: &str = "HETSCHED_TEST_MANY_THREADS";

    /// Not a test: a process of `$HETSCHED_TEST_MANY_THREADS` parked threads that ends
    /// at the end of its input.
    #[test]
    #[ignore = "run by a_process_of_many_threads_is_read_a_window_at_a_time as a child"]
    fn many_threads_helper() {
        let Some(n) = std::env::var(MANY)
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
        else {
            return;
        };
        for _ in 0..n {
            std::thread::Builder::new()
                .stack_size(64 << 10)
                .spawn(|| loop {
                    std::thread::park()
                })
                .unwrap();
        }
        let _ = std::io::stdin().lines().count();
    }

    #[test]
    fn a_uid_has_a_bounded_number_of_processes_measured() {
        let mut sampling = Sampling::start(Duration::from_millis(50));
        let me = rustix::process::getuid().as_raw();
        let other = me.wrapping_add(1);
        let child = busy_child();
        // Every task of one process counts once.
        for task in 0..(MAX_PROCESSES_PER_UID as u64 + 5) {
            sampling.track(task, named(&child), other).unwrap();
        }
        let e = {
            let mut children = Vec::new();
            let mut err = None;
            for task in 1000..1000 + MAX_PROCESSES_PER_UID as u64 {
                let c = Process::spawn(
                    {
                        let mut c = Command::new("sleep");
                        c.arg("30");
                        c
                    },
                    &Binding::default(),
                )
                .unwrap();
                if let Err(e) = sampling.track(task, named(&c), other) {
                    err = Some(e);
                }
                children.push(c);
            }
            err.unwrap()
        };
        assert_eq!(
            e,
            format!("uid {other} has {MAX_PROCESSES_PER_UID} processes measured (at most {MAX_PROCESSES_PER_UID})")
        );
        // The daemon's own uid is not capped.
        let c = busy_child();
        sampling.track(5000, named(&c), me).unwrap();
        // Untracking every task of the shared process frees its place.
        for task in 0..(MAX_PROCESSES_PER_UID as u64 + 5) {
            sampling.untrack(task);
        }
        let c2 = busy_child();
        sampling.track(6000, named(&c2), other).unwrap();
    }
}
