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
//! - descriptors a source opens per thread (hardware counters: three) only for a
//!   process of at most [`MAX_COUNTED_THREADS`] threads, and at most [`MAX_COUNTERS`]
//!   in all.
//!
//! What a pass reads of a process comes from the sources of `crate::sources`, each
//! probed once when the sampler starts (what it found, [`Sampling::describe`], for the daemon to
//! print once) and asked only where available: the kernel's accounting (`proc`),
//! hardware counters (`perf`), and the capacity of the CPU a task ran on (`capacity`).
//! What no source measured stays `None`, never a zero that looks measured.
//!
//! A process is read only between two looks at its pidfd that say it is alive, so a
//! recycled pid is never read as the named process.

use crate::client_process::{ClientProcess, ProcessKey};
use crate::process::thread_ids;
use crate::sources::{self, Gone, Measured, Process, Root, SampleSource, Status};
use arc_swap::ArcSwap;
use hetsched_core::policy::{Sample, Sources, UnitId, SOURCE_NAMES};
use hetsched_core::task::TaskId;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
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

/// A process with more threads than this at its first pass gets no descriptors from
/// the sources (no hardware counters).
pub const MAX_COUNTED_THREADS: usize = 64;

/// Descriptors the sources hold open at once (hardware counters), over all processes.
pub const MAX_COUNTERS: usize = 3 * 1024;

/// The sampling thread's nice value: what it measures can wait for whatever else runs.
pub const SAMPLER_NICE: i32 = 10;

/// The sampling thread's name.
pub const THREAD_NAME: &str = "hetsched-sampler";

/// What a process did over one pass of the sampler: the measured part of a [`Sample`].
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub busy_ns: u64,
    pub run_delay_ns: Option<u64>,
    pub context_switches: Option<u64>,
    pub cpu: Option<u32>,
    pub instructions: Option<u64>,
    pub cycles: Option<u64>,
    pub llc_misses: Option<u64>,
    pub cpu_capacity: Option<u32>,
    pub cpu_highest_perf: Option<u32>,
    /// The sources that filled it.
    pub sources: Sources,
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
    /// Every source's name and probe outcome.
    statuses: Vec<(&'static str, Status)>,
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
    /// where its rest allows, with every registered source on this machine (each
    /// probed first).
    pub fn start(period: Duration) -> Sampling {
        Sampling::start_with(period, sources::open_all(&Root::default()))
    }

    /// [`start`](Self::start) with these sources (those available measure).
    ///
    /// Panics if a source's name is not one of `SOURCE_NAMES` (samples could not name
    /// it), here rather than in the sampling thread.
    pub fn start_with(period: Duration, mut sources: Vec<Box<dyn SampleSource>>) -> Sampling {
        // In the registry's order, whatever the caller's: a source may read what one
        // before it filled in the same pass (`capacity` reads `proc`'s CPU).
        let position = |name: &str| SOURCE_NAMES.iter().position(|&n| n == name);
        sources.sort_by_key(|s| position(s.name()));
        let statuses: Vec<_> = sources
            .iter()
            .map(|s| (s.name(), s.status().clone()))
            .collect();
        if let Err(e) = Sources::of(statuses.iter().map(|(name, _)| name)) {
            panic!("{e}: register the source in hetsched_core::policy::SOURCE_NAMES");
        }
        let sources: Vec<_> = sources
            .into_iter()
            .filter(|s| *s.status() == Status::Available)
            .collect();
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum;
        let budget = descriptors(limit.map_or(usize::MAX, |n| n as usize));
        let max_descriptors = (budget / 2).min(MAX_COUNTERS);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            published: ArcSwap::default(),
        });
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name(THREAD_NAME.into())
                .spawn(move || {
                    // Below the event loop's priority and everyone's: its work can wait.
                    let _ = rustix::process::setpriority_process(
                        Some(rustix::thread::gettid()),
                        SAMPLER_NICE,
                    );
                    Passes::new(sources, max_descriptors).run(&shared, period)
                })
                .expect("starting the sampling thread")
        };
        Sampling {
            statuses,
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

    /// Each source's name and what its probe found.
    pub fn statuses(&self) -> &[(&'static str, Status)] {
        &self.statuses
    }

    /// Whether source `name` was given and measures (its probe found what it needs).
    pub fn measures(&self, name: &str) -> bool {
        self.statuses
            .iter()
            .any(|(n, s)| *n == name && *s == Status::Available)
    }

    /// What the samples can hold on this machine, for the daemon to say once: the
    /// sources that measure, then each that does not and why (`from proc, capacity;
    /// perf not available: perf_event_open(instructions): ...`).
    pub fn describe(&self) -> String {
        let on: Vec<&str> = self
            .statuses
            .iter()
            .filter(|(_, s)| *s == Status::Available)
            .map(|(n, _)| *n)
            .collect();
        let mut text = match on.is_empty() {
            true => "from no source".to_string(),
            false => format!("from {}", on.join(", ")),
        };
        for (name, status) in &self.statuses {
            if let Status::Absent(_) = status {
                text += &format!("; {name} {status}");
            }
        }
        text
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
            run_delay_ns: span.run_delay_ns,
            context_switches: span.context_switches,
            cpu: span.cpu,
            instructions: span.instructions,
            cycles: span.cycles,
            llc_misses: span.llc_misses,
            cpu_capacity: span.cpu_capacity,
            cpu_highest_perf: span.cpu_highest_perf,
            sources: span.sources,
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

/// The sampling thread's state: the processes it measures, and the sources available.
struct Passes {
    sources: Vec<Box<dyn SampleSource>>,
    tracked: FxHashMap<ProcessKey, Tracked>,
    /// Each process's thread list, kept while it is measured and for [`RELIST_EVERY`]
    /// after, so that a client that allocates and frees in a loop does not make the
    /// sampler list its threads again each time.
    lists: FxHashMap<ProcessKey, ThreadList>,
    /// Descriptors the sources hold open, and the most they may (see [`MAX_COUNTERS`]).
    descriptors_open: usize,
    max_descriptors: usize,
}

struct Tracked {
    process: ClientProcess,
    /// The uid of the client that named it, which must still own it.
    client_uid: u32,
    /// Set at the first pass: each source that measures it (by index into
    /// `Passes::sources`), with what it keeps.
    measured: Option<Vec<(usize, Box<dyn Measured>)>>,
    /// When the previous pass read it.
    at: Instant,
    /// Where the next pass starts in the sorted thread list.
    cursor: usize,
    ended: bool,
}

impl Passes {
    fn new(sources: Vec<Box<dyn SampleSource>>, max_descriptors: usize) -> Passes {
        Passes {
            sources,
            tracked: FxHashMap::default(),
            lists: FxHashMap::default(),
            descriptors_open: 0,
            max_descriptors,
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
                    self.descriptors_open -= t.descriptors();
                }
                if let Some((p, uid)) = c {
                    self.tracked.insert(key, Tracked::new(p, uid));
                }
            }
            let start = Instant::now();
            let mut spans = FxHashMap::default();
            for (key, t) in &mut self.tracked {
                let descriptors = (&mut self.descriptors_open, self.max_descriptors);
                let list = self.lists.entry(*key).or_default();
                if let Some(span) = t.pass(&self.sources, descriptors, list) {
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
            measured: None,
            at: Instant::now(),
            cursor: 0,
            ended: false,
        }
    }

    /// The descriptors its sources hold.
    fn descriptors(&self) -> usize {
        let measured = self.measured.iter().flatten();
        measured.map(|(_, m)| m.descriptors()).sum()
    }

    /// One pass: reads the process and returns what it did since the previous pass
    /// (`None` at the first pass, which only takes the starting point, and once it
    /// ended).
    fn pass(
        &mut self,
        sources: &[Box<dyn SampleSource>],
        descriptors: (&mut usize, usize),
        list: &mut ThreadList,
    ) -> Option<Span> {
        let (descriptors_open, max_descriptors) = descriptors;
        // Ended, or no longer the client's (it ran a set-user-ID program): not read
        // again.
        let status = self.process.status(self.client_uid);
        let Some((true, threads)) = status.filter(|_| !self.ended) else {
            self.ended = true;
            return None;
        };
        let pid = self.process.pid();
        let at = Instant::now();
        list.refresh(pid, threads)?;
        let tids = &list.tids;
        // This pass's window of the thread list, from where the last one stopped.
        let n = tids.len().min(THREADS_PER_PASS);
        let from = if tids.is_empty() {
            0
        } else {
            self.cursor % tids.len()
        };
        let window: Vec<i32> = tids.iter().cycle().skip(from).take(n).copied().collect();
        self.cursor = from + n;
        let mut process = Process {
            pid,
            tids,
            window: &window,
            descriptors: 0,
        };
        let first = self.measured.is_none();
        if first {
            let mut measured: Vec<(usize, Box<dyn Measured>)> = Vec::new();
            for (i, source) in sources.iter().enumerate() {
                process.descriptors = if tids.len() <= MAX_COUNTED_THREADS {
                    max_descriptors.saturating_sub(*descriptors_open)
                } else {
                    0
                };
                match source.start(&process) {
                    Ok(Some(m)) => {
                        *descriptors_open += m.descriptors();
                        measured.push((i, m));
                    }
                    Ok(None) => {}
                    Err(Gone) => {
                        let held: usize = measured.iter().map(|(_, m)| m.descriptors()).sum();
                        *descriptors_open -= held;
                        return None;
                    }
                }
            }
            self.measured = Some(measured);
        }
        let mut span = Span {
            busy_ns: 0,
            run_delay_ns: None,
            context_switches: None,
            cpu: None,
            instructions: None,
            cycles: None,
            llc_misses: None,
            cpu_capacity: None,
            cpu_highest_perf: None,
            sources: Sources::default(),
            interval_ns: at.duration_since(self.at).as_nanos() as u64,
            at,
            threads: threads as u32,
            threads_read: 0,
        };
        for (i, m) in self.measured.iter_mut().flatten() {
            if m.read(&process, &mut span).ok()? {
                let name = sources[*i].name();
                span.sources
                    .insert(name)
                    .expect("a registered source's name");
            }
        }
        // Read between two looks that say it is alive: all of it is this process's.
        if !self.process.alive() {
            self.ended = true;
            return None;
        }
        self.at = at;
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
        let perf = s.sources.contains("perf");
        assert!(s.sources.contains("proc"));
        assert_eq!(perf, sampling.measures("perf"), "{s:?}");
        let counters = [s.instructions, s.cycles, s.llc_misses];
        if !perf {
            assert_eq!(counters, [None; 3], "no perf source, yet counters: {s:?}");
        }
        assert!(
            s.run_delay_ns.is_some() && s.context_switches.is_some(),
            "{s:?}"
        );
        assert!(allowed_cpus().contains(&s.cpu.unwrap()), "{s:?}");
        assert_eq!(s.memory_bound, None);
        assert!(s.interval_ns > 0, "{s:?}");
        // The CPU's capacity exactly when the kernel describes it, as it does.
        let described = crate::sources::capacity::read_cpu(&Root::default(), s.cpu.unwrap())
            .unwrap_or_default();
        assert_eq!(
            (s.cpu_capacity, s.cpu_highest_perf),
            (described.capacity, described.highest_perf),
            "{s:?}"
        );
        assert_eq!(
            s.sources.contains("capacity"),
            described != Default::default(),
            "{s:?}"
        );
        // In JSON, the sources by name and an absent measurement absent (not 0, not null).
        let json = serde_json::to_value(s).unwrap();
        let named = |name: &str| {
            json["sources"]
                .as_array()
                .unwrap()
                .contains(&serde_json::json!(name))
        };
        assert_eq!(named("perf"), perf);
        assert!(named("proc"));
        assert_eq!(named("capacity"), s.sources.contains("capacity"));
        assert_eq!(json.get("instructions").is_none(), s.instructions.is_none());
        assert_eq!(json.get("cpu_capacity").is_none(), s.cpu_capacity.is_none());
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
        if !sampling.measures("perf") {
            assert!(
                sampling
                    .describe()
                    .contains("; perf not available: perf_event_open(instructions): "),
                "{}",
                sampling.describe()
            );
        }
        assert!(sampling.describe().starts_with("from proc"));
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
        if sampling.measures("perf") {
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
        if s.sources.contains("perf") {
            assert_eq!(s.instructions, Some(0));
        }
    }

    /// The sampler asks whichever sources it is given: here `proc` on a real child and
    /// `capacity` on a fake arm64 tree where CPU N has capacity 100 + N, so that each
    /// sample's capacity is that of the CPU `proc` saw the child on. A tree where no
    /// CPU's file holds a capacity leaves `capacity` out, and its samples without the
    /// figure.
    #[test]
    fn the_sources_given_fill_the_sample_and_only_they() {
        use crate::sources::{capacity::CPU_DIR, REGISTRY};
        let open = |name: &str, root: &Root| {
            (REGISTRY.iter().find(|r| r.name == name).unwrap().open)(root)
        };
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let cpus = allowed_cpus();
        for cpu in 0..=*cpus.iter().max().unwrap() {
            let cpu_dir = root.join(format!("{CPU_DIR}/cpu{cpu}"));
            std::fs::create_dir_all(&cpu_dir).unwrap();
            std::fs::write(cpu_dir.join("cpu_capacity"), format!("{}\n", 100 + cpu)).unwrap();
        }
        let mut sampling = Sampling::start_with(
            Duration::from_millis(5),
            vec![open("proc", &Root::default()), open("capacity", &root)],
        );
        let names: Vec<_> = sampling.statuses().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["proc", "capacity"]);
        assert!(sampling
            .statuses()
            .iter()
            .all(|(_, s)| *s == Status::Available));
        assert!(!sampling.measures("perf"));
        assert_eq!(sampling.describe(), "from proc, capacity");
        let child = busy_child();
        sampling.track(1, named(&child), 0).unwrap();
        let (_, span) = next_sample(&sampling, 1, None);
        let (s, _) = next_sample(&sampling, 1, Some(span.at));
        assert_eq!(
            s.sources,
            Sources::of(["proc", "capacity"]).unwrap(),
            "{s:?}"
        );
        assert_eq!(s.cpu_capacity, Some(100 + s.cpu.unwrap()), "{s:?}");
        assert_eq!((s.cpu_highest_perf, s.instructions), (None, None), "{s:?}");
        drop(sampling);

        for cpu in 0..=*cpus.iter().max().unwrap() {
            let file = root.join(format!("{CPU_DIR}/cpu{cpu}/cpu_capacity"));
            std::fs::write(file, "fast\n").unwrap();
        }
        let mut sampling = Sampling::start_with(
            Duration::from_millis(5),
            vec![open("proc", &Root::default()), open("capacity", &root)],
        );
        let Status::Absent(why) = &sampling.statuses()[1].1 else {
            panic!("a bad file in the tree, yet capacity is available")
        };
        assert!(why.contains("cpu0/cpu_capacity: \"fast\""), "{why}");
        sampling.track(1, named(&child), 0).unwrap();
        let (_, span) = next_sample(&sampling, 1, None);
        let (s, _) = next_sample(&sampling, 1, Some(span.at));
        assert_eq!(s.sources, Sources::of(["proc"]).unwrap(), "{s:?}");
        assert_eq!(s.cpu_capacity, None, "{s:?}");
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
