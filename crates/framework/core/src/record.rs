//! The run record: every scheduling event of one run, in order, and the metrics and
//! invariant checks computed from it. Both engines produce the same record.

use crate::machine::UnitType;
use crate::outcome_stream::{MetricsBuilder, RunStream};
use crate::policy::UnitId;
use crate::task::{Placement, QueueId, TaskId};
use serde::Serialize;
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    pub t_ns: u64,
    pub task: TaskId,
    pub kind: EventKind,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// The task arrived. `ideal_ns`: its run time alone on the best unit for it
    /// (the slowdown denominator); `kind`: its task type.
    Submit { ideal_ns: u64, kind: Arc<str> },
    /// The task was put at the tail of a queue.
    Enqueue { queue: QueueId },
    /// A run segment began on `unit`, the task taken from queue `from`.
    Start { unit: UnitId, from: QueueId },
    /// A run segment ended without finishing the task (yield or migration).
    Stop { unit: UnitId },
    /// The task moved from where it was to the tail of `to`'s queue.
    Migrate { from: Placement, to: UnitId },
    /// The task finished on `unit` (ending its last segment).
    Complete { unit: UnitId },
    /// The task left without finishing: refused when it arrived, or (live) its client
    /// went away while it waited.
    Reject { reason: String },
}

/// Receives events as an engine produces them.
pub trait Recorder {
    fn record(&mut self, event: Event);

    /// A `Submit` event, its task type lent: the event owns a clone of it only if the
    /// recorder takes one. Why: cloning an `Arc` and dropping it are two atomic
    /// operations, about 30 ns a task on this project's test host (a tenth of what the
    /// engine spends on a task in `bench sim`), for recorders that never read the type.
    #[inline(always)]
    fn submit(&mut self, t_ns: u64, task: TaskId, ideal_ns: u64, kind: &Arc<str>) {
        self.record(Event::submit(t_ns, task, ideal_ns, kind));
    }

    /// The events this recorder keeps in memory (0 for one that streams them out or
    /// folds them): an engine bounds a run's memory by it (the simulator's
    /// `Config::max_kept_events`).
    fn kept(&self) -> usize {
        0
    }

    /// Whether it keeps a task graph's copies ([`Recorder::transfers`]): only then does
    /// an engine log them.
    fn keeps_transfers(&self) -> bool {
        false
    }

    /// A task graph's copies, at the end of its run.
    fn transfers(&mut self, _copies: &[crate::dataflow::Transfer]) {}
}

impl Event {
    /// A `Submit` event, with its own clone of the task type.
    #[inline(always)]
    pub fn submit(t_ns: u64, task: TaskId, ideal_ns: u64, kind: &Arc<str>) -> Event {
        let kind = EventKind::Submit {
            ideal_ns,
            kind: kind.clone(),
        };
        Event { t_ns, task, kind }
    }
}

/// The full record of one run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Record {
    pub policy: String,
    /// Type of each unit, by unit id.
    pub unit_kinds: Vec<UnitType>,
    pub unit_names: Vec<String>,
    pub events: Vec<Event>,
    /// A task graph's copies between memory nodes, in the order they were issued.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub transfers: Vec<crate::dataflow::Transfer>,
}

impl Recorder for Record {
    #[inline]
    fn record(&mut self, event: Event) {
        self.events.push(event);
    }

    fn kept(&self) -> usize {
        self.events.len()
    }

    fn keeps_transfers(&self) -> bool {
        true
    }

    fn transfers(&mut self, copies: &[crate::dataflow::Transfer]) {
        self.transfers.extend_from_slice(copies);
    }
}

/// Counts events without keeping them (memory independent of the run's length).
#[derive(Clone, Copy, Debug, Default)]
pub struct EventCounter {
    pub events: u64,
    pub completed: u64,
    pub rejected: u64,
    pub last_ns: u64,
}

impl Recorder for EventCounter {
    #[inline]
    fn record(&mut self, event: Event) {
        self.events += 1;
        self.last_ns = event.t_ns;
        match event.kind {
            EventKind::Complete { .. } => self.completed += 1,
            EventKind::Reject { .. } => self.rejected += 1,
            _ => {}
        }
    }

    #[inline(always)]
    fn submit(&mut self, t_ns: u64, _task: TaskId, _ideal_ns: u64, _kind: &Arc<str>) {
        self.events += 1;
        self.last_ns = t_ns;
    }
}

/// What happened to one task.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskOutcome {
    pub task: TaskId,
    /// Its task type (shared with the submit event: no allocation per task).
    pub kind: Arc<str>,
    pub arrival_ns: u64,
    pub first_start_ns: Option<u64>,
    pub end_ns: Option<u64>,
    /// Time spent running (segments, transfers included).
    pub run_ns: u64,
    pub ideal_ns: u64,
    pub runs: u32,
    pub migrations: u32,
    /// Unit it finished on.
    pub unit: Option<UnitId>,
    pub rejected: bool,
}

impl TaskOutcome {
    #[inline]
    pub fn turnaround_ns(&self) -> Option<u64> {
        self.end_ns
            .filter(|_| !self.rejected)
            .map(|e| e - self.arrival_ns)
    }
    /// Time spent not running between arrival and completion.
    #[inline]
    pub fn wait_ns(&self) -> Option<u64> {
        self.turnaround_ns().map(|t| t - self.run_ns)
    }
}

/// Summary statistics of a distribution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    pub mean: f64,
    /// Mean of the two middle values for even counts.
    pub median: f64,
    /// Nearest-rank 95th percentile.
    pub p95: f64,
}

impl Stats {
    pub fn of(values: &mut [f64]) -> Stats {
        values.sort_by(f64::total_cmp);
        Stats::of_sorted(values.len(), |i| values[i], values.iter().copied())
    }

    /// The statistics of `n` values in ascending order, `at(i)` being the i-th and
    /// `all` all of them in that order, summed for the mean (+0.0 values after the
    /// first may be left out: adding +0.0 to a sum of +0.0 changes no bit).
    fn of_sorted(n: usize, at: impl Fn(usize) -> f64, all: impl Iterator<Item = f64>) -> Stats {
        if n == 0 {
            return Stats::default();
        }
        let median = if n % 2 == 1 {
            at(n / 2)
        } else {
            (at(n / 2 - 1) + at(n / 2)) / 2.0
        };
        let rank = hetsched_util::stats::rank(0.95, n);
        Stats {
            mean: all.sum::<f64>() / n as f64,
            median,
            p95: at(rank - 1),
        }
    }
}

/// Nanosecond values kept for their exact statistics ([`NsValues::stats`]) in the
/// memory they need: zeros counted, values under 2^32 ns (4.3 s) in four bytes, the
/// rest in eight. Why: a 1M-task run keeps a turnaround and a wait per task, and most
/// waits are zero on a machine that is not saturated; with half the bytes to write,
/// fault in and sort, and the zeros not stored, `simulate --summary` on 1M tasks took
/// 0.334–0.351 s instead of 0.366–0.394 s (docs/dev/simulator-performance.md).
#[derive(Clone, Debug, Default)]
pub struct NsValues {
    zeros: usize,
    narrow: Vec<u32>,
    wide: Vec<u64>,
}

impl NsValues {
    #[inline]
    pub fn push(&mut self, ns: u64) {
        match u32::try_from(ns) {
            Ok(0) => self.zeros += 1,
            Ok(v) => self.narrow.push(v),
            Err(_) => self.wide.push(ns),
        }
    }

    /// How many values were pushed.
    pub fn len(&self) -> usize {
        self.zeros + self.narrow.len() + self.wide.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values' statistics in seconds, bit for bit [`Stats::of`] on `ns as f64 *
    /// 1e-9`: the three kinds sorted apart are the values in ascending order, summed
    /// in that order. The four-byte values (a 1M-task run's turnarounds) are sorted by
    /// radix ([`radix_sort`]); with the fold of the tasks in submission order, the
    /// largest part of what `simulate --summary` adds to the engine
    /// (docs/dev/simulator-performance.md).
    pub fn stats(&mut self) -> Stats {
        radix_sort(&mut self.narrow);
        self.wide.sort_unstable();
        let (zeros, narrow, wide) = (self.zeros, &self.narrow, &self.wide);
        let s = |ns: u64| ns as f64 * 1e-9;
        let at = |i: usize| match i.checked_sub(zeros) {
            None => 0.0,
            Some(i) if i < narrow.len() => s(narrow[i] as u64),
            Some(i) => s(wide[i - narrow.len()]),
        };
        // One zero stands for them all: most waits of a run are zeros, a million
        // additions that change nothing.
        let all = std::iter::repeat_n(0.0, zeros.min(1))
            .chain(narrow.iter().map(|&v| s(v as u64)))
            .chain(wide.iter().map(|&v| s(v)));
        Stats::of_sorted(self.len(), at, all)
    }
}

/// Sorts four-byte values by least significant digit first: a counting pass for every
/// digit at once, then one stable scatter per digit, with as few digits as the values'
/// highest bit needs at up to 11 bits each, of balanced widths (bag1m's turnarounds
/// need 27 bits: three passes of 9; a digit every value shares is skipped).
/// Short slices, and those too long for four-byte counts, go to `sort_unstable`.
///
/// Hand-written, the exception to taking a library: `voracious_radix_sort` 1.2, which
/// chooses its digits by its own rules, took 7.8–8.7 ms for the 1M turnarounds of
/// `simulate bag1m.toml --summary`, this sort 4.5–5.7 ms, timed in the run; alone on
/// those values, 5.4 ms against 3.1 ms, and 10 ms for `sort_unstable`
/// (docs/dev/simulator-performance.md, issue #21's eleventh pass).
fn radix_sort(v: &mut Vec<u32>) {
    const DIGIT_MAX: u32 = 11;
    const BUCKETS: usize = 1 << DIGIT_MAX;
    let n = v.len();
    if n < 1024 || u32::try_from(n).is_err() {
        v.sort_unstable();
        return;
    }
    let bits = 32 - v.iter().fold(0, |m, &x| m | x).leading_zeros();
    // At most three: 32 bits in digits of at most 11.
    let passes = bits.div_ceil(DIGIT_MAX).max(1) as usize;
    let digit = bits.div_ceil(passes as u32);
    let mask = (1u32 << digit) - 1;
    let mut counts = [[0u32; BUCKETS]; 3];
    for &x in v.iter() {
        counts[0][(x & mask) as usize] += 1;
        counts[1][((x >> digit) & mask) as usize] += 1;
        counts[2][((x >> (2 * digit)) & mask) as usize] += 1;
    }
    let mut out = Vec::new();
    for (pass, count) in counts.iter_mut().enumerate().take(passes) {
        if count.iter().any(|&k| k as usize == n) {
            continue;
        }
        if out.is_empty() {
            out = vec![0u32; n];
        }
        let mut first = 0;
        for k in count.iter_mut() {
            (*k, first) = (first, first + *k);
        }
        let shift = digit * pass as u32;
        for &x in v.iter() {
            let at = &mut count[((x >> shift) & mask) as usize];
            out[*at as usize] = x;
            *at += 1;
        }
        std::mem::swap(v, &mut out);
    }
}

/// The comparison metrics of one run (times in seconds).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Metrics {
    pub policy: String,
    pub tasks: usize,
    pub completed: usize,
    pub rejected: usize,
    /// Time of the last completion (runs start at 0).
    pub makespan_s: f64,
    pub turnaround_s: Stats,
    pub wait_s: Stats,
    /// Completed tasks per second of makespan.
    pub throughput_per_s: f64,
    /// Busy fraction of each unit type over the makespan (types present only).
    pub utilisation: Vec<(UnitType, f64)>,
    pub migrations: usize,
    pub steals: usize,
    /// Jain's fairness index of the slowdowns (turnaround / ideal run time); 1 = fair.
    pub fairness: f64,
    /// Tasks not done when the run stopped (at its time limit): arrived and neither
    /// completed nor rejected, or never arrived. Set by the simulator's front, which
    /// knows the tasks that never arrived; left out of the JSON when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub unfinished: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Record {
    /// An empty record of a run of `policy` on `machine` (its units' kinds and names).
    pub fn of_machine(policy: &str, machine: &crate::machine::Machine) -> Record {
        Record::new(
            policy,
            machine.units.iter().map(|u| u.kind).collect(),
            machine.units.iter().map(|u| u.name.clone()).collect(),
        )
    }
    pub fn new(policy: &str, unit_kinds: Vec<UnitType>, unit_names: Vec<String>) -> Record {
        Record {
            policy: policy.to_string(),
            unit_kinds,
            unit_names,
            events: Vec::new(),
            transfers: Vec::new(),
        }
    }

    /// The record's events through a [`RunStream`], each outcome to `out`; the stream
    /// (its tallies) at the end. The invariant checks are not looked at ([`Record::check`]).
    fn stream(&self, out: &mut impl FnMut(&TaskOutcome)) -> RunStream {
        let mut stream = RunStream::new(self.unit_kinds.len(), false);
        for e in &self.events {
            let _ = stream.push(e, out);
        }
        stream.finish(out);
        stream
    }

    /// One outcome per submitted task, in submission order.
    pub fn outcomes(&self) -> Vec<TaskOutcome> {
        let mut out = Vec::new();
        self.stream(&mut |o| out.push(o.clone()));
        out
    }

    pub fn metrics(&self) -> Metrics {
        let mut m = MetricsBuilder::new(&self.policy, &self.unit_kinds);
        let stream = self.stream(&mut |o| m.outcome(o));
        m.finish(&stream.tallies())
    }

    /// Checks the record's invariants (see [`RunStream`]).
    pub fn check(&self) -> Result<(), String> {
        let mut stream = RunStream::new(self.unit_kinds.len(), true);
        self.events
            .iter()
            .try_for_each(|e| stream.push(e, &mut |_| {}))
    }

    /// Whether every submitted task ended (completed or rejected).
    pub fn all_ended(&self) -> bool {
        self.outcomes().iter().all(|o| o.end_ns.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::{NsValues, Stats};

    /// The statistics of `ns` through [`NsValues`] and through [`Stats::of`] on their
    /// values in seconds, bit for bit.
    fn same_stats(ns: &[u64], what: &str) {
        let mut s: Vec<f64> = ns.iter().map(|&v| v as f64 * 1e-9).collect();
        let mut kept = NsValues::default();
        ns.iter().for_each(|&v| kept.push(v));
        let (a, b) = (kept.stats(), Stats::of(&mut s));
        for (p, q) in [(a.mean, b.mean), (a.median, b.median), (a.p95, b.p95)] {
            assert_eq!(p.to_bits(), q.to_bits(), "{what}, {} values", ns.len());
        }
    }

    /// The radix sort sorts, on each side of its first length (1,024), with one, two
    /// and three passes, skipped ones included.
    #[test]
    fn radix_sort_sorts() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for n in [0usize, 1, 1023, 1024, 1025, 5000] {
            // Highest bit 0 (all zeros) to 32: one pass up to 11 bits, two up to 22,
            // three beyond.
            for bits in [0u32, 1, 8, 11, 12, 22, 23, 24, 27, 32] {
                let mask = if bits == 32 {
                    u32::MAX
                } else {
                    (1u32 << bits) - 1
                };
                // Bits cleared in every value: none; eleven from a third of the width
                // up (a whole middle digit where there are three); the lowest eleven.
                let shapes = [
                    ("random", 0),
                    ("a shared middle digit", 0x7FF << (bits / 3)),
                    ("a shared low digit", 0x7FF),
                ];
                for (what, cleared) in shapes {
                    let mut v: Vec<u32> = (0..n).map(|_| next() as u32 & mask & !cleared).collect();
                    let mut want = v.clone();
                    want.sort_unstable();
                    super::radix_sort(&mut v);
                    assert!(v == want, "{n} values of {bits} bits, {what}");
                }
            }
        }
    }

    /// Integer nanoseconds give the statistics, bit for bit, of their values in seconds
    /// ([`NsValues`]: zeros, narrow and wide values kept apart).
    #[test]
    fn ns_values_give_the_stats_of_their_seconds() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        // About 57 % of the values are four-byte ones, sorted by radix from 1,024 of
        // them: sizes around that (`radix_sort_sorts` checks the boundary exactly).
        for n in [
            0usize, 1, 2, 3, 10, 11, 1000, 1001, 1790, 1800, 100_000, 400_001,
        ] {
            let ns: Vec<u64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Repeats included: equal values must sort to equal floats; a
                    // third zeros, and values of 2^32 ns and more (kept apart).
                    ((x >> 20) % 5_000_000_000) * (x % 3).min(1)
                })
                .collect();
            same_stats(&ns, "random");
        }
        // Orders a run makes (turnarounds nearly in submission order) and extremes,
        // with one, two and three radix passes (digits of 11 bits at most) and with
        // passes skipped (a digit all values share).
        for n in [50_000u64, 400_001] {
            let max = u64::from(u32::MAX);
            let inputs: [(&str, Vec<u64>); 9] = [
                ("ascending", (1..=n).collect()),
                ("descending", (1..=n).rev().collect()),
                ("all equal", vec![7_777; n as usize]),
                ("all zeros", vec![0; n as usize]),
                ("sawtooth", (0..n).map(|i| 1 + i % 1_000 * 3_000).collect()),
                ("near u32::MAX", (0..n).map(|i| max - i % 3).collect()),
                (
                    "under 2^11",
                    (0..n).map(|i| 1 + (i * 7_919) % 2_047).collect(),
                ),
                (
                    "high bits only",
                    (0..n).map(|i| (1 + i % 5) << 27).collect(),
                ),
                (
                    "every bit",
                    (0..n).map(|i| (i * 2_654_435_761) % max + 1).collect(),
                ),
            ];
            for (what, ns) in &inputs {
                same_stats(ns, what);
            }
        }
    }
}
