//! Source `perf`: hardware counters, which policies that balance by behaviour need
//! (DI/DINO's LLC misses per instruction, cycles per instruction) and which exist only
//! where the machine has a PMU that this user may read, hence its probe ([`probe`]).
//!
//! User-space instructions, cycles and LLC misses (the kernel's generic `cache-misses`
//! event, the last level on common PMUs), counting mode, one counter per event and per
//! thread alive at the process's first pass, with `inherit` so that the threads and
//! children they start later are counted too. A multiplexed counter is scaled by
//! enabled / running time; one that never ran on the PMU during a span is `None`.
//! Counters are descriptors: a process gets them only within the sampler's budget
//! ([`Process::descriptors`]), all of them or none (a partial count would look
//! complete).

use super::{Gone, Measured, Process, SampleSource, Status};
use crate::sampler::Span;
use perf_event::events::Hardware;
use perf_event::{Builder, Counter};

/// The registry's entry for this source.
pub const REGISTERED: super::Registered = super::Registered {
    name: "perf",
    about: "hardware counters (instructions, cycles, LLC misses) through perf_event_open",
    open: |_| Box::new(Perf { status: probe() }),
};

/// Whether this machine's hardware counters can be read (one `perf_event_open` on the
/// calling thread), probed once per sampler.
pub fn probe() -> Status {
    match Builder::new(EVENTS[0]).observe_self().build() {
        Ok(_) => Status::Available,
        Err(e) => Status::Absent(format!("perf_event_open(instructions): {e}")),
    }
}

/// The hardware events, in the order of the sample's `instructions`, `cycles` and
/// `llc_misses`.
const EVENTS: [Hardware; 3] = [
    Hardware::INSTRUCTIONS,
    Hardware::CPU_CYCLES,
    Hardware::CACHE_MISSES,
];

pub struct Perf {
    status: Status,
}

impl SampleSource for Perf {
    fn name(&self) -> &'static str {
        REGISTERED.name
    }

    fn status(&self) -> &Status {
        &self.status
    }

    fn start(&self, process: &Process<'_>) -> Result<Option<Box<dyn Measured>>, Gone> {
        let tids = process.tids;
        if tids.len() * EVENTS.len() > process.descriptors {
            return Ok(None);
        }
        Ok(Counters::open(tids).map(|c| Box::new(c) as Box<dyn Measured>))
    }
}

struct Counters {
    /// `EVENTS.len()` counters per thread, event `i` at `k * EVENTS.len() + i`.
    open: Vec<Counter>,
    /// The previous pass's cumulative figures.
    counts: Option<[Reading; EVENTS.len()]>,
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
        Some(Counters { open, counts: None })
    }

    fn counts(&mut self) -> Option<[Reading; EVENTS.len()]> {
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

impl Measured for Counters {
    fn read(&mut self, _: &Process<'_>, span: &mut Span) -> Result<bool, Gone> {
        let counts = self.counts();
        let filled = match (&self.counts, &counts) {
            (Some(then), Some(now)) => {
                let [instructions, cycles, llc_misses] =
                    std::array::from_fn(|i| scaled(&then[i], &now[i]));
                span.instructions = instructions;
                span.cycles = cycles;
                span.llc_misses = llc_misses;
                true
            }
            _ => false,
        };
        self.counts = counts;
        Ok(filled)
    }

    fn descriptors(&self) -> usize {
        self.open.len()
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
