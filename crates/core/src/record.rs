//! The run record: every scheduling event of one run, in order, and the metrics and
//! invariant checks computed from it. Both engines produce the same record.

use crate::machine::UnitType;
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
}

/// The full record of one run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Record {
    pub policy: String,
    /// Type of each unit, by unit id.
    pub unit_kinds: Vec<UnitType>,
    pub unit_names: Vec<String>,
    pub events: Vec<Event>,
}

impl Recorder for Record {
    #[inline]
    fn record(&mut self, event: Event) {
        self.events.push(event);
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
}

/// What happened to one task.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskOutcome {
    pub task: TaskId,
    pub kind: String,
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
    pub fn turnaround_ns(&self) -> Option<u64> {
        self.end_ns
            .filter(|_| !self.rejected)
            .map(|e| e - self.arrival_ns)
    }
    /// Time spent not running between arrival and completion.
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
        if values.is_empty() {
            return Stats::default();
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let median = if n % 2 == 1 {
            values[n / 2]
        } else {
            (values[n / 2 - 1] + values[n / 2]) / 2.0
        };
        let rank = ((0.95 * n as f64).ceil() as usize).clamp(1, n);
        Stats {
            mean: values.iter().sum::<f64>() / n as f64,
            median,
            p95: values[rank - 1],
        }
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
}

impl Record {
    pub fn new(policy: &str, unit_kinds: Vec<UnitType>, unit_names: Vec<String>) -> Record {
        Record {
            policy: policy.to_string(),
            unit_kinds,
            unit_names,
            events: Vec::new(),
        }
    }

    /// One outcome per submitted task, in submission order.
    pub fn outcomes(&self) -> Vec<TaskOutcome> {
        let mut out: Vec<TaskOutcome> = Vec::new();
        let mut index = rustc_hash::FxHashMap::default();
        let mut seg_start = rustc_hash::FxHashMap::default();
        for e in &self.events {
            if let EventKind::Submit { ideal_ns, kind } = &e.kind {
                index.insert(e.task, out.len());
                out.push(TaskOutcome {
                    task: e.task,
                    kind: kind.to_string(),
                    arrival_ns: e.t_ns,
                    first_start_ns: None,
                    end_ns: None,
                    run_ns: 0,
                    ideal_ns: *ideal_ns,
                    runs: 0,
                    migrations: 0,
                    unit: None,
                    rejected: false,
                });
                continue;
            }
            let Some(&i) = index.get(&e.task) else {
                continue;
            };
            let o = &mut out[i];
            match &e.kind {
                EventKind::Start { .. } => {
                    o.first_start_ns.get_or_insert(e.t_ns);
                    o.runs += 1;
                    seg_start.insert(e.task, e.t_ns);
                }
                EventKind::Stop { .. } => {
                    o.run_ns += e.t_ns - seg_start.remove(&e.task).unwrap_or(e.t_ns);
                }
                EventKind::Complete { unit } => {
                    o.run_ns += e.t_ns - seg_start.remove(&e.task).unwrap_or(e.t_ns);
                    o.end_ns = Some(e.t_ns);
                    o.unit = Some(*unit);
                }
                EventKind::Migrate { .. } => o.migrations += 1,
                EventKind::Reject { .. } => {
                    o.end_ns = Some(e.t_ns);
                    o.rejected = true;
                }
                EventKind::Submit { .. } | EventKind::Enqueue { .. } => {}
            }
        }
        out
    }

    pub fn metrics(&self) -> Metrics {
        let outcomes = self.outcomes();
        let done: Vec<&TaskOutcome> = outcomes
            .iter()
            .filter(|o| o.turnaround_ns().is_some())
            .collect();
        let makespan_ns = done.iter().filter_map(|o| o.end_ns).max().unwrap_or(0);
        let s = |ns: u64| ns as f64 * 1e-9;
        let mut turnaround: Vec<f64> = done.iter().map(|o| s(o.turnaround_ns().unwrap())).collect();
        let mut wait: Vec<f64> = done.iter().map(|o| s(o.wait_ns().unwrap())).collect();
        let slowdowns: Vec<f64> = done
            .iter()
            .map(|o| o.turnaround_ns().unwrap() as f64 / o.ideal_ns.max(1) as f64)
            .collect();
        let sum: f64 = slowdowns.iter().sum();
        let sum_sq: f64 = slowdowns.iter().map(|x| x * x).sum();
        let fairness = if slowdowns.is_empty() {
            1.0
        } else {
            sum * sum / (slowdowns.len() as f64 * sum_sq)
        };

        let mut busy = vec![0u64; self.unit_kinds.len()];
        let mut seg: Vec<Option<u64>> = vec![None; self.unit_kinds.len()];
        let (mut migrations, mut steals) = (0, 0);
        for e in &self.events {
            match e.kind {
                EventKind::Start { unit, from } => {
                    seg[unit as usize] = Some(e.t_ns);
                    if matches!(from, QueueId::Unit(q) if q != unit) {
                        steals += 1;
                    }
                }
                EventKind::Stop { unit } | EventKind::Complete { unit } => {
                    if let Some(t0) = seg[unit as usize].take() {
                        busy[unit as usize] += e.t_ns - t0;
                    }
                }
                EventKind::Migrate { .. } => migrations += 1,
                _ => {}
            }
        }
        let mut utilisation = Vec::new();
        for kind in UnitType::ALL {
            let units: Vec<usize> = (0..self.unit_kinds.len())
                .filter(|&u| self.unit_kinds[u] == kind)
                .collect();
            if units.is_empty() {
                continue;
            }
            let b: u64 = units.iter().map(|&u| busy[u]).sum();
            let denom = units.len() as f64 * makespan_ns as f64;
            utilisation.push((kind, if denom > 0.0 { b as f64 / denom } else { 0.0 }));
        }
        Metrics {
            policy: self.policy.clone(),
            tasks: outcomes.len(),
            completed: done.len(),
            rejected: outcomes.iter().filter(|o| o.rejected).count(),
            makespan_s: s(makespan_ns),
            turnaround_s: Stats::of(&mut turnaround),
            wait_s: Stats::of(&mut wait),
            throughput_per_s: if makespan_ns > 0 {
                done.len() as f64 / s(makespan_ns)
            } else {
                0.0
            },
            utilisation,
            migrations,
            steals,
            fairness,
        }
    }

    /// Checks the record's invariants: time never goes back; every submitted task ends
    /// exactly once (completed or rejected) and nothing happens to it afterwards; a unit
    /// runs one task at a time; a task runs on one unit at a time; only queued tasks start.
    pub fn check(&self) -> Result<(), String> {
        #[derive(Clone, Copy, PartialEq)]
        enum St {
            Queued,
            Running(UnitId),
            Ended,
            New,
        }
        let mut state: rustc_hash::FxHashMap<TaskId, St> = Default::default();
        let mut on_unit: Vec<Option<TaskId>> = vec![None; self.unit_kinds.len()];
        let mut last = 0;
        for (i, e) in self.events.iter().enumerate() {
            let fail = |m: &str| Err(format!("event {i} (t={} ns, task {}): {m}", e.t_ns, e.task));
            if e.t_ns < last {
                return fail("time went backwards");
            }
            last = e.t_ns;
            let st = state.get(&e.task).copied();
            if st == Some(St::Ended) {
                return fail("event after the task ended");
            }
            let unit_ok = |u: UnitId| (u as usize) < on_unit.len();
            match &e.kind {
                EventKind::Submit { .. } => {
                    if st.is_some() {
                        return fail("submitted twice");
                    }
                    state.insert(e.task, St::New);
                }
                EventKind::Enqueue { .. } => {
                    if !matches!(st, Some(St::New) | Some(St::Queued)) {
                        return fail("enqueued while not new or yielded");
                    }
                    state.insert(e.task, St::Queued);
                }
                EventKind::Start { unit, .. } => {
                    if st != Some(St::Queued) || !unit_ok(*unit) {
                        return fail("started while not queued");
                    }
                    if on_unit[*unit as usize].is_some() {
                        return fail("unit already runs a task");
                    }
                    on_unit[*unit as usize] = Some(e.task);
                    state.insert(e.task, St::Running(*unit));
                }
                EventKind::Stop { unit } | EventKind::Complete { unit } => {
                    if st != Some(St::Running(*unit)) || on_unit[*unit as usize] != Some(e.task) {
                        return fail("stopped where it was not running");
                    }
                    on_unit[*unit as usize] = None;
                    let ended = matches!(e.kind, EventKind::Complete { .. });
                    state.insert(e.task, if ended { St::Ended } else { St::Queued });
                }
                EventKind::Migrate { to, .. } => {
                    if st != Some(St::Queued) || !unit_ok(*to) {
                        return fail("migrated while not queued (stop first)");
                    }
                }
                EventKind::Reject { .. } => {
                    if !matches!(st, Some(St::New) | Some(St::Queued)) {
                        return fail("rejected while running");
                    }
                    state.insert(e.task, St::Ended);
                }
            }
        }
        Ok(())
    }

    /// Whether every submitted task ended (completed or rejected).
    pub fn all_ended(&self) -> bool {
        self.outcomes().iter().all(|o| o.end_ns.is_some())
    }
}
