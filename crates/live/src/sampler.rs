//! Per-task measurements for the live engine's ticks: one [`Sample`] per running task's
//! process, over the interval since its previous sample.
//!
//! Why two sources: policies that balance by behaviour (DI/DINO's LLC misses per
//! instruction, cycles per instruction) need hardware counters, which exist only where
//! the machine has a PMU that this user may read; everything else (CPU time, run-queue
//! wait, context switches, where it ran) the kernel accounts for every process anyway.
//! So the [`Sampler`] probes the PMU once, reports the outcome as its [`Pmu`] status for
//! the daemon to print once, and fills each sample from what exists: hardware counters
//! from `perf_event_open` (source `perf`) and the kernel's per-process accounting
//! (source `proc`). What no source measured stays `None`, never a zero that looks
//! measured.
//!
//! - `proc`: CPU time (user + system) from the process's CPU-time clock
//!   (`clock_getcpuclockid`: nanoseconds, all threads, ended ones included; the clock
//!   `/proc/PID/stat`'s utime + stime come from, which round to 10 ms); run-queue wait
//!   and times switched onto a CPU from each thread's `/proc/PID/task/TID/schedstat`,
//!   and the CPU of the busiest thread from its `stat`. A thread that ends between two
//!   samples loses its wait and switches since the previous sample (its CPU time stays).
//! - `perf`: user-space instructions, cycles and LLC misses (the kernel's generic
//!   `cache-misses` event, the last level on common PMUs), counting mode, one counter
//!   per event and per thread alive at [`Sampler::track`], with `inherit` so that the
//!   threads and children they start later are counted too. A multiplexed counter is
//!   scaled by enabled / running time; one that never ran on the PMU during an interval
//!   is `None`.

use crate::process::thread_ids;
use hetsched_core::policy::{Sample, Sources, UnitId};
use hetsched_core::task::TaskId;
use hetsched_core::{Error, Result};
use nix::time::{clock_getcpuclockid, clock_gettime, ClockId};
use perf_event::events::Hardware;
use perf_event::{Builder, Counter};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::fmt;

/// Whether this machine's hardware counters can be read: probed once per [`Sampler`].
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

/// Samples the processes of running tasks; see the module documentation.
pub struct Sampler {
    pmu: Pmu,
    tracked: FxHashMap<u32, Tracked>,
}

/// The hardware events, in the order of the sample's `instructions`, `cycles` and
/// `llc_misses`.
const EVENTS: [Hardware; 3] = [
    Hardware::INSTRUCTIONS,
    Hardware::CPU_CYCLES,
    Hardware::CACHE_MISSES,
];

struct Tracked {
    clock: ClockId,
    cpu_ns: u64,
    threads: FxHashMap<i32, ThreadStat>,
    /// `None` without a PMU, or when this process's counters could not be opened.
    counters: Option<Counters>,
}

/// One thread's `schedstat` (cumulative) and the CPU it last ran on.
#[derive(Clone, Copy, Default)]
struct ThreadStat {
    run_ns: u64,
    delay_ns: u64,
    switches: u64,
    cpu: Option<u32>,
}

struct Counters {
    /// `EVENTS.len()` counters per thread, event `i` at `k * EVENTS.len() + i`.
    open: Vec<Counter>,
    last: [Reading; EVENTS.len()],
}

/// One event's cumulative count and times, summed over the threads' counters.
#[derive(Clone, Copy, Default)]
struct Reading {
    count: u64,
    enabled_ns: u64,
    running_ns: u64,
}

impl Default for Sampler {
    fn default() -> Self {
        Sampler::new()
    }
}

impl Sampler {
    /// A sampler tracking nothing yet; probes the PMU (one `perf_event_open` on the
    /// calling thread).
    pub fn new() -> Sampler {
        let probe = Builder::new(EVENTS[0]).observe_self().build();
        let pmu = match probe {
            Ok(_) => Pmu::Counting,
            Err(e) => Pmu::Absent(format!("perf_event_open(instructions): {e}")),
        };
        Sampler {
            pmu,
            tracked: FxHashMap::default(),
        }
    }

    /// The PMU probe's outcome, for the daemon to report once.
    pub fn pmu(&self) -> &Pmu {
        &self.pmu
    }

    /// Starts measuring process `pid` (a child the caller has not reaped, so the pid
    /// cannot name another process); its first sample covers the time from now.
    pub fn track(&mut self, pid: u32) -> Result<()> {
        let raw = nix::unistd::Pid::from_raw(pid as i32);
        let clock = clock_getcpuclockid(raw).map_err(|e| gone(pid, e))?;
        let counters = match self.pmu {
            Pmu::Counting => Counters::open(pid),
            Pmu::Absent(_) => None,
        };
        let mut tracked = Tracked {
            clock,
            cpu_ns: 0,
            threads: thread_stats(pid)?,
            // Counters that cannot be read from the start measure nothing.
            counters: counters.and_then(|mut c| {
                c.last = c.read()?;
                Some(c)
            }),
        };
        tracked.cpu_ns = tracked.cpu_ns(pid)?;
        self.tracked.insert(pid, tracked);
        Ok(())
    }

    /// Stops measuring `pid` (closes its counters).
    pub fn untrack(&mut self, pid: u32) {
        self.tracked.remove(&pid);
    }

    /// The sample of tracked process `pid`, running `task` on `unit`, since its previous
    /// sample (or since `track`). An error when the process is gone or untracked.
    pub fn sample(&mut self, unit: UnitId, task: Option<TaskId>, pid: u32) -> Result<Sample> {
        let t = self
            .tracked
            .get_mut(&pid)
            .ok_or_else(|| Error::runtime(format!("process {pid} is not sampled (no track)")))?;
        let cpu_ns = t.cpu_ns(pid)?;
        let threads = thread_stats(pid)?;
        let mut sample = Sample {
            unit,
            task,
            busy_ns: cpu_ns.saturating_sub(t.cpu_ns),
            sources: Sources {
                proc: true,
                perf: false,
            },
            ..Sample::default()
        };
        let deltas: Vec<ThreadStat> = threads
            .iter()
            .map(|(tid, now)| now.since(t.threads.get(tid)))
            .collect();
        if !deltas.is_empty() {
            sample.run_delay_ns = Some(deltas.iter().map(|d| d.delay_ns).sum());
            sample.context_switches = Some(deltas.iter().map(|d| d.switches).sum());
            sample.cpu = deltas.iter().max_by_key(|d| d.run_ns).and_then(|d| d.cpu);
        }
        if let Some(c) = &mut t.counters {
            if let Some(now) = c.read() {
                let [instructions, cycles, llc_misses] =
                    std::array::from_fn(|i| scaled(&c.last[i], &now[i]));
                (sample.instructions, sample.cycles, sample.llc_misses) =
                    (instructions, cycles, llc_misses);
                sample.sources.perf = true;
                c.last = now;
            }
        }
        t.cpu_ns = cpu_ns;
        t.threads = threads;
        Ok(sample)
    }
}

impl Tracked {
    fn cpu_ns(&self, pid: u32) -> Result<u64> {
        let ts = clock_gettime(self.clock).map_err(|e| gone(pid, e))?;
        Ok(ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64)
    }
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

impl Counters {
    /// Counters for every thread of `pid`, or none if any fails to open (a process
    /// of another user, a limit on open files): a partial count would look complete.
    fn open(pid: u32) -> Option<Counters> {
        let mut open = Vec::new();
        for tid in thread_ids(pid).ok()? {
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
        Some(Counters {
            open,
            last: Default::default(),
        })
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

/// Every thread's `schedstat` and CPU; threads that end while being read are skipped.
fn thread_stats(pid: u32) -> Result<FxHashMap<i32, ThreadStat>> {
    let mut stats = FxHashMap::default();
    for tid in thread_ids(pid).map_err(|e| gone(pid, e))? {
        let read = |file| std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/{file}"));
        let Ok(schedstat) = read("schedstat") else {
            continue;
        };
        let mut fields = schedstat.split_ascii_whitespace().map(str::parse::<u64>);
        let (Some(Ok(run_ns)), Some(Ok(delay_ns)), Some(Ok(switches))) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        // `stat` field 39 (processor), counted from field 3 (state), after the command
        // name's closing parenthesis (the name itself may hold spaces and parentheses).
        let cpu = read("stat").ok().and_then(|stat| {
            let (_, rest) = stat.rsplit_once(')')?;
            rest.split_ascii_whitespace().nth(39 - 3)?.parse().ok()
        });
        stats.insert(
            tid,
            ThreadStat {
                run_ns,
                delay_ns,
                switches,
                cpu,
            },
        );
    }
    Ok(stats)
}

fn gone(pid: u32, e: impl fmt::Display) -> Error {
    Error::runtime(format!("process {pid}: {e}"))
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

    /// What every sample must say on this machine, PMU or not.
    fn assert_honest(sampler: &Sampler, s: &Sample) {
        assert!(s.sources.proc);
        assert_eq!(s.sources.perf, *sampler.pmu() == Pmu::Counting, "{s:?}");
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

    #[test]
    fn a_busy_child_accumulates_cpu_time_from_honest_sources() {
        let mut sampler = Sampler::new();
        if let Pmu::Absent(why) = sampler.pmu() {
            assert!(why.starts_with("perf_event_open(instructions): "), "{why}");
            assert!(sampler
                .pmu()
                .to_string()
                .starts_with("no hardware counters"));
        }
        let child = busy_child();
        sampler.track(child.pid()).unwrap();
        let (mut busy_ns, mut instructions, mut samples) = (0, 0, 0);
        wait_until("the child has used 200 ms of CPU", || {
            let s = sampler.sample(3, Some(7), child.pid()).unwrap();
            assert_eq!((s.unit, s.task), (3, Some(7)));
            assert_honest(&sampler, &s);
            busy_ns += s.busy_ns;
            instructions += s.instructions.unwrap_or(0);
            samples += 1;
            busy_ns >= 200_000_000
        });
        assert!(samples > 1, "CPU time must accumulate over several samples");
        if sampler.pmu() == &Pmu::Counting {
            assert!(instructions > 0);
        }

        // A stopped process runs nothing: zero is then a measurement, not a filler.
        child.pause().unwrap();
        let stat = format!("/proc/{}/stat", child.pid());
        wait_until("the child is stopped", || {
            let stat = std::fs::read_to_string(&stat).unwrap();
            stat.rsplit_once(") ").unwrap().1.starts_with('T')
        });
        sampler.sample(3, Some(7), child.pid()).unwrap();
        let s = sampler.sample(3, Some(7), child.pid()).unwrap();
        assert_honest(&sampler, &s);
        assert_eq!((s.busy_ns, s.context_switches), (0, Some(0)), "{s:?}");
        if s.sources.perf {
            assert_eq!(s.instructions, Some(0));
        }
    }

    #[test]
    fn untracked_and_ended_processes_are_errors() {
        let mut sampler = Sampler::new();
        let mut child = busy_child();
        let pid = child.pid();
        let e = sampler.sample(0, None, pid).unwrap_err();
        assert!(e.to_string().contains("not sampled"), "{e}");
        sampler.track(pid).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(sampler.sample(0, None, pid).is_err());
        assert!(sampler.track(pid).is_err());
        sampler.untrack(pid);
        let e = sampler.sample(0, None, pid).unwrap_err();
        assert!(e.to_string().contains("not sampled"), "{e}");
    }
}
