//! Source `proc`: the kernel's per-process accounting, which exists for every process
//! on every machine. CPU time (user + system) from the process's CPU-time clock
//! (`clock_getcpuclockid`: nanoseconds, all threads, ended ones included; the clock
//! `/proc/PID/stat`'s utime + stime come from, which round to 10 ms); run-queue wait and
//! times switched onto a CPU from each thread's `/proc/PID/task/TID/schedstat`, and the
//! CPU of the busiest thread read from its `stat`. A thread that ends between two reads
//! of it loses its wait and switches since the earlier one (its CPU time stays).
//!
//! Only the threads of the sampler's window are read in a pass; CPU time covers them
//! all.

use super::{Gone, Measured, Process, SampleSource, Status};
use crate::sampler::Span;
use nix::time::{clock_getcpuclockid, clock_gettime, ClockId};
use rustc_hash::FxHashMap;

/// The registry's entry for this source.
pub const REGISTERED: super::Registered = super::Registered {
    name: "proc",
    about: "CPU time, run-queue wait, context switches and CPU, from the CPU-time clock and /proc",
    open: |_| {
        Box::new(Proc {
            status: Status::Available,
        })
    },
};

/// The kernel accounts for every process: always available.
pub struct Proc {
    status: Status,
}

impl SampleSource for Proc {
    fn name(&self) -> &'static str {
        REGISTERED.name
    }

    fn status(&self) -> &Status {
        &self.status
    }

    fn start(&self, process: &Process<'_>) -> Result<Option<Box<dyn Measured>>, Gone> {
        let raw = nix::unistd::Pid::from_raw(process.pid as i32);
        let clock = clock_getcpuclockid(raw).map_err(|_| Gone)?;
        Ok(Some(Box::new(Accounting {
            clock,
            cpu_ns: None,
            threads: FxHashMap::default(),
        })))
    }
}

/// What `proc` keeps of a process: its CPU-time clock and the previous readings.
struct Accounting {
    clock: ClockId,
    cpu_ns: Option<u64>,
    /// Each thread's `schedstat` when last read.
    threads: FxHashMap<i32, ThreadStat>,
}

impl Measured for Accounting {
    fn read(&mut self, process: &Process<'_>, span: &mut Span) -> Result<bool, Gone> {
        let cpu_ns = cpu_ns(self.clock).ok_or(Gone)?;
        let (mut delay_ns, mut switches, mut busiest) = (0, 0, (0, None));
        let mut read = 0;
        for &tid in process.window {
            let Some(now) = thread_stat(process.pid, tid) else {
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
        let tids = process.tids;
        if self.threads.len() > tids.len() {
            self.threads
                .retain(|tid, _| tids.binary_search(tid).is_ok());
        }
        span.threads_read = read;
        let Some(then) = self.cpu_ns.replace(cpu_ns) else {
            return Ok(false);
        };
        span.busy_ns = cpu_ns.saturating_sub(then);
        span.run_delay_ns = Some(delay_ns);
        span.context_switches = Some(switches);
        span.cpu = busiest.1;
        Ok(true)
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
