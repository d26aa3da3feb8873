//! The run record's derived views — task outcomes, metrics and invariant checks — built
//! from events one at a time, as an engine produces them.
//!
//! Why: a 1M-task run makes four million record events. Holding them all and deriving
//! outcomes and metrics afterwards cost several times the simulation itself; fed event
//! by event, memory follows the live tasks (plus one turnaround and one wait per task
//! for the exact median and p95). [`Record`](crate::record::Record) derives its own
//! outcomes, metrics and checks through these same types, so a streamed run and a kept
//! record give identical results by construction.
//!
//! Outcomes come out in submission order (a task that ended waits for the tasks
//! submitted before it), which is the order of the per-task CSV and of the metrics'
//! sums.

use crate::id_map::{IdMap, Vacant};
use crate::machine::UnitType;
use crate::policy::UnitId;
use crate::record::{Event, EventKind, Metrics, Stats, TaskOutcome};
use crate::task::{QueueId, TaskId};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::sync::Arc;

/// Submitted tasks whose outcomes have not been handed out yet, as their `Submit`s told
/// them, in runs of equal (arrival, ideal time, type): the stream reads them only at the
/// front (when an outcome becomes final, in submission order) and adds at the back, so a
/// burst of equal submissions (a million tasks waiting at once) costs one run.
struct Submits {
    arrival_ns: u64,
    ideal_ns: u64,
    /// Its type, an index in `OutcomeStream::kinds`.
    kind: u32,
    /// Tasks in the run (at least one).
    count: u32,
}

/// No time, no unit (in [`Since`]).
const NO_TIME: u64 = u64::MAX;
const NO_UNIT: UnitId = UnitId::MAX;

/// Where a task stands in [`Since`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Not running (nothing happened yet, or its last segment stopped).
    Idle,
    /// A segment runs since `Since::at_ns`.
    Running,
    /// Completed or rejected at `Since::at_ns`: its outcome is final.
    Ended,
}

/// What happened to a submitted task after its `Submit` (40 bytes, kept in submission
/// order: the outcomes waiting for an older task to end, thousands on a busy machine,
/// are read front to back, and one is found by its index).
#[derive(Clone, Copy)]
struct Since {
    /// [`NO_TIME`] until it first started.
    first_start_ns: u64,
    run_ns: u64,
    /// The start of its running segment, or its end once ended.
    at_ns: u64,
    runs: u32,
    migrations: u32,
    /// The unit it completed on, or [`NO_UNIT`].
    unit: UnitId,
    stage: Stage,
    rejected: bool,
}

impl Since {
    const NOTHING: Since = Since {
        first_start_ns: NO_TIME,
        run_ns: 0,
        at_ns: NO_TIME,
        runs: 0,
        migrations: 0,
        unit: NO_UNIT,
        stage: Stage::Idle,
        rejected: false,
    };

    /// The running segment's time, added to the run time (none if not running).
    #[inline]
    fn close_segment(&mut self, t_ns: u64) {
        if self.stage == Stage::Running {
            self.run_ns += t_ns - self.at_ns;
        }
    }
}

/// Task outcomes from a stream of events, handed out in submission order once final.
///
/// A task is found by its id without a hash map while ids follow submission order (as
/// engines assign them): what happened to the task submitted `i`-th since is
/// `pending[i - base]` (past the end of `pending`, nothing did yet: tasks start roughly
/// in submission order, so the tasks waiting behind the latest one that started cost
/// nothing there), and its id is `offset + i` unless it is a stray (an id that does not
/// follow), whose id and index are in two small hash maps.
pub struct OutcomeStream {
    /// Submission index of each live stray.
    live: FxHashMap<TaskId, u64>,
    /// The id of each pending stray, by submission index.
    strays: FxHashMap<u64, TaskId>,
    /// `Some(offset)` once a task was submitted: ids that follow are `offset + index`.
    offset: Option<u64>,
    /// Outcomes from submission index `base` to `next` (excluded): what happened since,
    /// and the submissions in runs.
    pending: VecDeque<Since>,
    submits: VecDeque<Submits>,
    base: u64,
    next: u64,
    /// Task types, each once (`last_kind`: the index of the latest one met).
    kinds: Vec<Arc<str>>,
    kind_index: FxHashMap<Arc<str>, u32>,
    last_kind: u32,
    /// The outcome handed out last, reused: its type is replaced only when it changes
    /// (no reference count touched per task).
    out: TaskOutcome,
}

impl Default for OutcomeStream {
    fn default() -> OutcomeStream {
        OutcomeStream {
            live: FxHashMap::default(),
            strays: FxHashMap::default(),
            offset: None,
            pending: VecDeque::new(),
            submits: VecDeque::new(),
            base: 0,
            next: 0,
            kinds: Vec::new(),
            kind_index: FxHashMap::default(),
            last_kind: 0,
            out: TaskOutcome {
                task: 0,
                kind: Arc::from(""),
                arrival_ns: 0,
                first_start_ns: None,
                end_ns: None,
                run_ns: 0,
                ideal_ns: 0,
                runs: 0,
                migrations: 0,
                unit: None,
                rejected: false,
            },
        }
    }
}

impl OutcomeStream {
    /// Takes one event; `out` receives the outcomes it made final, in submission order.
    #[inline]
    pub fn push(&mut self, e: &Event, out: &mut impl FnMut(&TaskOutcome)) {
        match &e.kind {
            EventKind::Submit { ideal_ns, kind } => return self.submit(e, *ideal_ns, kind),
            // Waiting changes nothing in an outcome: a queued task keeps no `Since`.
            EventKind::Enqueue { .. } => return,
            _ => {}
        }
        let Some(i) = self.find(e.task) else {
            return;
        };
        let at = (i - self.base) as usize;
        // Usually the task just past the end (tasks start in submission order).
        while at >= self.pending.len() {
            self.pending.push_back(Since::NOTHING);
        }
        let o = &mut self.pending[at];
        let t = e.t_ns;
        match &e.kind {
            EventKind::Start { .. } => {
                if o.first_start_ns == NO_TIME {
                    o.first_start_ns = t;
                }
                o.runs += 1;
                o.at_ns = t;
                o.stage = Stage::Running;
                return;
            }
            EventKind::Stop { .. } => {
                o.close_segment(t);
                o.stage = Stage::Idle;
                return;
            }
            EventKind::Migrate { .. } => {
                o.migrations += 1;
                return;
            }
            EventKind::Complete { unit } => {
                o.close_segment(t);
                o.unit = *unit;
            }
            EventKind::Reject { .. } => o.rejected = true,
            EventKind::Submit { .. } | EventKind::Enqueue { .. } => unreachable!("handled above"),
        }
        o.at_ns = t;
        o.stage = Stage::Ended;
        if !self.live.is_empty() {
            self.live.remove(&e.task);
        }
        while self
            .pending
            .front()
            .is_some_and(|s| s.stage == Stage::Ended)
        {
            out(self.pop_front());
        }
        // Memory follows the pending tasks down too (a million that waited at once
        // must not stay allocated while the metrics grow).
        crate::id_map::shrink(&mut self.pending);
        crate::id_map::shrink(&mut self.submits);
    }

    /// A submitted task: its pending entry.
    #[inline]
    fn submit(&mut self, e: &Event, ideal_ns: u64, kind: &Arc<str>) {
        let index = self.next;
        self.next += 1;
        let offset = *self.offset.get_or_insert(e.task.wrapping_sub(index));
        if e.task == offset.wrapping_add(index) {
            if !self.live.is_empty() {
                self.live.remove(&e.task);
            }
        } else {
            self.live.insert(e.task, index);
            self.strays.insert(index, e.task);
        }
        let kind = self.kind(kind);
        match self.submits.back_mut() {
            Some(s)
                if (s.arrival_ns, s.ideal_ns, s.kind) == (e.t_ns, ideal_ns, kind)
                    && s.count < u32::MAX =>
            {
                s.count += 1
            }
            _ => self.submits.push_back(Submits {
                arrival_ns: e.t_ns,
                ideal_ns,
                kind,
                count: 1,
            }),
        }
    }

    /// The index of a task type in `kinds` (added if new).
    #[inline]
    fn kind(&mut self, kind: &Arc<str>) -> u32 {
        match self.kinds.get(self.last_kind as usize) {
            Some(last) if Arc::ptr_eq(last, kind) || **last == **kind => self.last_kind,
            _ => {
                let next = self.kinds.len() as u32;
                let i = *self.kind_index.entry(kind.clone()).or_insert(next);
                if i == next {
                    self.kinds.push(kind.clone());
                }
                self.last_kind = i;
                i
            }
        }
    }

    /// The submission index of a live task (submitted, not ended).
    #[inline]
    fn find(&self, task: TaskId) -> Option<u64> {
        if !self.live.is_empty() {
            if let Some(&i) = self.live.get(&task) {
                return Some(i);
            }
        }
        let i = task.wrapping_sub(self.offset?);
        let at = i.wrapping_sub(self.base);
        if at >= self.next - self.base {
            return None;
        }
        let ended = self
            .pending
            .get(at as usize)
            .is_some_and(|s| s.stage == Stage::Ended);
        let stray = !self.strays.is_empty() && self.strays.contains_key(&i);
        (!ended && !stray).then_some(i)
    }

    /// The outcome of the first pending task, which leaves the stream.
    #[inline]
    fn pop_front(&mut self) -> &TaskOutcome {
        let index = self.base;
        self.base += 1;
        let since = self.pending.pop_front().unwrap_or(Since::NOTHING);
        let s = self
            .submits
            .front_mut()
            .expect("a submission per pending task");
        let (arrival_ns, ideal_ns, kind) = (s.arrival_ns, s.ideal_ns, s.kind);
        s.count -= 1;
        if s.count == 0 {
            self.submits.pop_front();
        }
        let stray = match self.strays.is_empty() {
            true => None,
            false => self.strays.remove(&index),
        };
        let o = &mut self.out;
        o.task = stray.unwrap_or_else(|| {
            let offset = self.offset.expect("a task was submitted");
            offset.wrapping_add(index)
        });
        let kind = &self.kinds[kind as usize];
        if !Arc::ptr_eq(&o.kind, kind) {
            o.kind = kind.clone();
        }
        let time = |t: u64| (t != NO_TIME).then_some(t);
        o.arrival_ns = arrival_ns;
        o.first_start_ns = time(since.first_start_ns);
        o.end_ns = (since.stage == Stage::Ended).then_some(since.at_ns);
        o.run_ns = since.run_ns;
        o.ideal_ns = ideal_ns;
        o.runs = since.runs;
        o.migrations = since.migrations;
        o.unit = (since.unit != NO_UNIT).then_some(since.unit);
        o.rejected = since.rejected;
        o
    }

    /// The end of the stream: the outcomes still held (tasks that never ended among
    /// them), in submission order.
    pub fn finish(&mut self, out: &mut impl FnMut(&TaskOutcome)) {
        self.live.clear();
        while self.base < self.next {
            out(self.pop_front());
        }
    }
}

/// The metrics of a run from its events and its outcomes (in submission order).
pub struct MetricsBuilder {
    policy: String,
    unit_kinds: Vec<UnitType>,
    busy: Vec<u64>,
    /// The start of each unit's running segment, or [`NO_TIME`].
    seg: Vec<u64>,
    migrations: usize,
    steals: usize,
    tasks: usize,
    rejected: usize,
    makespan_ns: u64,
    /// Turnarounds and waits in ns (sorted as integers at the end: [`Stats::of_ns`]).
    turnaround: Vec<u64>,
    wait: Vec<u64>,
    slowdown_sum: f64,
    slowdown_sum_sq: f64,
}

impl MetricsBuilder {
    pub fn new(policy: &str, unit_kinds: &[UnitType]) -> MetricsBuilder {
        MetricsBuilder {
            policy: policy.to_string(),
            unit_kinds: unit_kinds.to_vec(),
            busy: vec![0; unit_kinds.len()],
            seg: vec![NO_TIME; unit_kinds.len()],
            migrations: 0,
            steals: 0,
            tasks: 0,
            rejected: 0,
            makespan_ns: 0,
            turnaround: Vec::new(),
            wait: Vec::new(),
            slowdown_sum: 0.0,
            slowdown_sum_sq: 0.0,
        }
    }

    /// Takes one event (busy time, steals, migrations).
    #[inline]
    pub fn event(&mut self, e: &Event) {
        match e.kind {
            EventKind::Start { unit, from } => {
                if let Some(t0) = self.seg.get_mut(unit as usize) {
                    *t0 = e.t_ns;
                }
                if matches!(from, QueueId::Unit(q) if q != unit) {
                    self.steals += 1;
                }
            }
            EventKind::Stop { unit } | EventKind::Complete { unit } => {
                if let Some(t0) = self.seg.get_mut(unit as usize) {
                    if *t0 != NO_TIME {
                        self.busy[unit as usize] += e.t_ns - std::mem::replace(t0, NO_TIME);
                    }
                }
            }
            EventKind::Migrate { .. } => self.migrations += 1,
            _ => {}
        }
    }

    /// Takes one task's outcome (in submission order).
    #[inline]
    pub fn outcome(&mut self, o: &TaskOutcome) {
        self.tasks += 1;
        self.rejected += o.rejected as usize;
        let Some(turnaround) = o.turnaround_ns() else {
            return;
        };
        self.makespan_ns = self.makespan_ns.max(o.end_ns.unwrap_or(0));
        self.turnaround.push(turnaround);
        self.wait.push(o.wait_ns().expect("a turnaround"));
        let slowdown = turnaround as f64 / o.ideal_ns.max(1) as f64;
        self.slowdown_sum += slowdown;
        self.slowdown_sum_sq += slowdown * slowdown;
    }

    pub fn finish(mut self) -> Metrics {
        let done = self.turnaround.len();
        let fairness = if done == 0 {
            1.0
        } else {
            self.slowdown_sum * self.slowdown_sum / (done as f64 * self.slowdown_sum_sq)
        };
        let makespan_ns = self.makespan_ns;
        let mut utilisation = Vec::new();
        for kind in UnitType::ALL {
            let units: Vec<usize> = (0..self.unit_kinds.len())
                .filter(|&u| self.unit_kinds[u] == kind)
                .collect();
            if units.is_empty() {
                continue;
            }
            let b: u64 = units.iter().map(|&u| self.busy[u]).sum();
            let denom = units.len() as f64 * makespan_ns as f64;
            utilisation.push((kind, if denom > 0.0 { b as f64 / denom } else { 0.0 }));
        }
        let makespan_s = makespan_ns as f64 * 1e-9;
        Metrics {
            policy: self.policy,
            tasks: self.tasks,
            completed: done,
            rejected: self.rejected,
            makespan_s,
            turnaround_s: Stats::of_ns(&mut self.turnaround),
            wait_s: Stats::of_ns(&mut self.wait),
            throughput_per_s: if makespan_ns > 0 {
                done as f64 / makespan_s
            } else {
                0.0
            },
            utilisation,
            migrations: self.migrations,
            steals: self.steals,
            fairness,
        }
    }
}

/// A task's state as the invariant checks follow it: one byte per live task (where it
/// runs is in `Checker::on_unit`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum St {
    New,
    Queued,
    Running,
    Ended,
    /// Not a state: no task by that id ([`Vacant`]).
    Absent,
}

impl Vacant for St {
    const VACANT: St = St::Absent;
}

/// The run record's invariants, checked event by event: time never goes back; every
/// submitted task ends at most once (completed or rejected) and nothing happens to it
/// afterwards; a unit runs one task at a time; a task runs on one unit at a time; only
/// queued tasks start.
pub struct Checker {
    state: IdMap<St>,
    /// Keep ended tasks (to name a late event "after the task ended", and to catch an
    /// id submitted again), or forget them so that memory follows the live tasks (a
    /// late event is then caught as one for a task that is not queued or running).
    keep_ended: bool,
    on_unit: Vec<Option<TaskId>>,
    last: u64,
    index: u64,
}

impl Checker {
    pub fn new(units: usize, keep_ended: bool) -> Checker {
        Checker {
            state: IdMap::default(),
            keep_ended,
            on_unit: vec![None; units],
            last: 0,
            index: 0,
        }
    }

    /// Checks the next event. Each event looks its task up once: a submit inserts its
    /// state, an end removes it (unless ended tasks are kept), anything else changes it
    /// in place. After a violation the state is unspecified (checking stops there).
    #[inline]
    pub fn push(&mut self, e: &Event) -> Result<(), String> {
        let i = self.index;
        self.index += 1;
        let fail = |m: &str| Err(format!("event {i} (t={} ns, task {}): {m}", e.t_ns, e.task));
        if e.t_ns < self.last {
            return fail("time went backwards");
        }
        self.last = e.t_ns;
        let ends = matches!(
            e.kind,
            EventKind::Complete { .. } | EventKind::Reject { .. }
        );
        // The task's state, and where to write its next one (none once removed).
        let (st, slot) = match e.kind {
            EventKind::Submit { .. } => {
                return match self.state.insert(e.task, St::New) {
                    None => Ok(()),
                    Some(St::Ended) => fail("event after the task ended"),
                    Some(_) => fail("submitted twice"),
                };
            }
            _ if ends && !self.keep_ended => (self.state.remove(e.task), None),
            _ => {
                let slot = self.state.get_mut(e.task);
                (slot.as_deref().copied(), slot)
            }
        };
        if st == Some(St::Ended) {
            return fail("event after the task ended");
        }
        let on_unit = &mut self.on_unit;
        let unit_ok = |u: UnitId| (u as usize) < on_unit.len();
        let next = match &e.kind {
            EventKind::Submit { .. } => unreachable!("handled above"),
            EventKind::Enqueue { .. } => {
                if !matches!(st, Some(St::New) | Some(St::Queued)) {
                    return fail("enqueued while not new or yielded");
                }
                St::Queued
            }
            EventKind::Start { unit, .. } => {
                if st != Some(St::Queued) || !unit_ok(*unit) {
                    return fail("started while not queued");
                }
                if on_unit[*unit as usize].is_some() {
                    return fail("unit already runs a task");
                }
                on_unit[*unit as usize] = Some(e.task);
                St::Running
            }
            EventKind::Stop { unit } | EventKind::Complete { unit } => {
                if st != Some(St::Running) || on_unit.get(*unit as usize) != Some(&Some(e.task)) {
                    return fail("stopped where it was not running");
                }
                on_unit[*unit as usize] = None;
                if ends {
                    St::Ended
                } else {
                    St::Queued
                }
            }
            EventKind::Migrate { to, .. } => {
                if st != Some(St::Queued) || !unit_ok(*to) {
                    return fail("migrated while not queued (stop first)");
                }
                St::Queued
            }
            EventKind::Reject { .. } => {
                if !matches!(st, Some(St::New) | Some(St::Queued)) {
                    return fail("rejected while running");
                }
                St::Ended
            }
        };
        if let Some(slot) = slot {
            *slot = next;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(t_ns: u64, task: TaskId, kind: EventKind) -> Event {
        Event { t_ns, task, kind }
    }

    /// Each invariant's violation is caught with its message, keeping ended tasks or
    /// not, and a valid run (with a yield and a migration) passes.
    #[test]
    fn checker_catches_each_violation() {
        use crate::task::Placement;
        use EventKind::*;
        type Events = Vec<(u64, TaskId, EventKind)>;
        let submit = || Submit {
            ideal_ns: 1,
            kind: Arc::from("t"),
        };
        let enqueue = || Enqueue {
            queue: QueueId::Central,
        };
        let start = |unit| Start {
            unit,
            from: QueueId::Central,
        };
        let reject = || Reject { reason: "x".into() };
        let queued = |task| vec![(0, task, submit()), (0, task, enqueue())];
        let running = |task, unit| [queued(task), vec![(0, task, start(unit))]].concat();
        let then = |events: Events, e| [events, vec![e]].concat();
        let check = |keep_ended: bool, events: &Events| {
            let mut c = Checker::new(2, keep_ended);
            events
                .iter()
                .try_for_each(|(t, task, kind)| c.push(&event(*t, *task, kind.clone())))
        };
        let valid = [
            running(1, 0),
            vec![(2, 1, Stop { unit: 0 })],
            vec![(
                2,
                1,
                Migrate {
                    from: Placement::Queued(QueueId::Central),
                    to: 1,
                },
            )],
            vec![(3, 1, start(1)), (4, 1, Complete { unit: 1 })],
            vec![(4, 2, submit()), (4, 2, reject())],
        ]
        .concat();
        for keep in [false, true] {
            assert_eq!(check(keep, &valid), Ok(()));
        }
        let ended = || vec![(0, 1, submit()), (0, 1, reject())];
        let migrate = Migrate {
            from: Placement::Running(0),
            to: 1,
        };
        let cases = [
            (
                false,
                vec![(2, 1, submit()), (1, 2, submit())],
                "event 1 (t=1 ns, task 2): time went backwards",
            ),
            (
                false,
                then(vec![(0, 1, submit())], (0, 1, submit())),
                "submitted twice",
            ),
            (
                true,
                then(ended(), (1, 1, submit())),
                "event 2 (t=1 ns, task 1): event after the task ended",
            ),
            (
                true,
                then(ended(), (1, 1, enqueue())),
                "event after the task ended",
            ),
            (
                false,
                then(ended(), (1, 1, enqueue())),
                "enqueued while not new or yielded",
            ),
            (
                false,
                vec![(0, 1, enqueue())],
                "enqueued while not new or yielded",
            ),
            (
                false,
                then(vec![(0, 1, submit())], (0, 1, start(0))),
                "started while not queued",
            ),
            (
                false,
                then(queued(1), (0, 1, start(2))),
                "started while not queued",
            ),
            (
                false,
                [running(1, 0), running(2, 0)].concat(),
                "unit already runs a task",
            ),
            (
                false,
                then(queued(1), (0, 1, Complete { unit: 0 })),
                "stopped where it was not running",
            ),
            (
                false,
                then(running(1, 0), (0, 1, Stop { unit: 1 })),
                "stopped where it was not running",
            ),
            (
                false,
                then(running(1, 0), (0, 1, migrate)),
                "migrated while not queued (stop first)",
            ),
            (
                false,
                then(running(1, 0), (0, 1, reject())),
                "rejected while running",
            ),
        ];
        for (keep, events, message) in cases {
            let err = check(keep, &events).expect_err(message);
            assert!(
                err.ends_with(message),
                "{err:?} should end with {message:?}"
            );
        }
    }

    /// Ids in submission order and strays (an id out of order, one used again after it
    /// ended) come out with their own ids, types and times, in submission order.
    #[test]
    fn outcomes_follow_submission_order_with_stray_ids() {
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("b"));
        let submit = |t, id, kind: &Arc<str>| {
            let kind = kind.clone();
            event(t, id, EventKind::Submit { ideal_ns: 7, kind })
        };
        let start = |t, id, unit| {
            event(
                t,
                id,
                EventKind::Start {
                    unit,
                    from: QueueId::Central,
                },
            )
        };
        let complete = |t, id, unit| event(t, id, EventKind::Complete { unit });
        let events = [
            submit(0, 10, &a),
            submit(0, 11, &b),
            submit(1, 5, &a),
            submit(1, 12, &b),
            start(2, 12, 0),
            start(2, 5, 1),
            complete(3, 12, 0),
            // A late event for an ended task changes nothing.
            complete(4, 12, 0),
            complete(5, 5, 1),
            start(6, 10, 0),
            complete(8, 10, 0),
            // Id 10 again, after it ended: a stray.
            submit(9, 10, &b),
        ];
        let mut stream = OutcomeStream::default();
        let mut out = Vec::new();
        for e in &events {
            stream.push(e, &mut |o| out.push(o.clone()));
        }
        assert_eq!(out.len(), 1, "task 11 has not ended: 5 and 12 wait for it");
        stream.finish(&mut |o| out.push(o.clone()));
        let got: Vec<String> = out
            .iter()
            .map(|o| {
                let (start, end) = (o.first_start_ns, o.end_ns);
                format!(
                    "{} {} {} {start:?} {end:?} {}",
                    o.task, o.kind, o.arrival_ns, o.run_ns
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                "10 a 0 Some(6) Some(8) 2",
                "11 b 0 None None 0",
                "5 a 1 Some(2) Some(5) 3",
                "12 b 1 Some(2) Some(3) 1",
                "10 b 9 None None 0",
            ]
        );
        assert!(out.iter().all(|o| o.ideal_ns == 7 && !o.rejected));
    }
}
