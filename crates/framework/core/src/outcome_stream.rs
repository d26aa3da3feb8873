//! The run record's derived views — task outcomes, metrics and invariant checks — built
//! from events one at a time, as an engine produces them.
//!
//! Why: a 1M-task run makes four million record events. Holding them all and deriving
//! outcomes and metrics afterwards cost several times the simulation itself; fed event
//! by event, memory follows the live tasks (plus one turnaround and one wait per task
//! for the exact median and p95). [`Record`](crate::record::Record) derives its own
//! outcomes, metrics and checks through these same types, so a streamed run and a kept
//! record give identical results by construction; [`SummaryStream`]'s metrics are
//! identical by test.
//!
//! Outcomes come out in submission order (a task that ended waits for the tasks
//! submitted before it), which is the order of the per-task CSV and of the metrics'
//! sums. [`RunStream`] makes outcomes and checks the invariants; [`SummaryStream`]
//! makes the metrics alone, for runs that want nothing else.

use crate::id_map::IdMap;
use crate::machine::{Machine, UnitType};
use crate::policy::UnitId;
use crate::record::{Event, EventKind, Metrics, NsValues, TaskOutcome};
use crate::task::{QueueId, TaskId};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;
use std::sync::Arc;

/// Submitted tasks whose outcomes have not been handed out yet, as their `Submit`s told
/// them, in runs of equal (arrival, ideal time, type): the stream reads them only at the
/// front (when an outcome becomes final, in submission order) and adds at the back, so a
/// burst of equal submissions (a million tasks waiting at once) costs one run.
#[derive(Clone, Copy)]
struct Submits {
    arrival_ns: u64,
    ideal_ns: u64,
    /// Its type, an index in `RunStream::kinds` (0 in [`SummaryStream`], which keeps
    /// no types).
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
            self.run_ns += t_ns.saturating_sub(self.at_ns);
        }
    }
}

/// No task (in [`Unit::task`] and [`RunStream::fresh`]).
const NO_INDEX: u64 = u64::MAX;

/// A unit as the stream follows it: the task it runs (for the checks) and its busy time
/// (for the metrics) side by side, so that an event on a unit reads one place.
#[derive(Clone, Copy)]
struct Unit {
    /// The submission index of the task it runs, or [`NO_INDEX`].
    task: u64,
    /// The start of its running segment, or [`NO_TIME`].
    seg_ns: u64,
    busy_ns: u64,
}

/// A run's events followed one at a time: task outcomes (handed out in submission order
/// once final), the run record's invariants checked, and the busy time, steals and
/// migrations the metrics need.
///
/// Why one type: outcomes and checks both follow each task from its submission to its
/// end, so each event looks its task up once for both. The checked invariants: time
/// never goes back; every submitted task ends at most once (completed or rejected) and
/// nothing happens to it afterwards; a unit runs one task at a time; a task runs on one
/// unit at a time; only queued tasks start.
///
/// A task is found by its id without a hash map while ids follow submission order (as
/// engines assign them): what happened to the task submitted `i`-th since is
/// `pending[i - base]` (past the end of `pending`, nothing did yet: tasks start roughly
/// in submission order, so the tasks waiting behind the latest one that started cost
/// nothing there), and its id is `offset + i` unless it is a stray (an id that does not
/// follow), whose id and index are in two small hash maps. The checks need nothing more
/// per task: a live task that is not running is new (submitted, neither enqueued nor
/// rejected yet) or queued, and engines enqueue or reject a task right after its submit,
/// so the new ones are at most a few, kept apart (`fresh`, `news`).
pub struct RunStream {
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
    /// The latest submitted task if it is still new, or [`NO_INDEX`]; the other new
    /// tasks (by submission index) in `news`.
    fresh: u64,
    news: FxHashSet<u64>,
    units: Vec<Unit>,
    /// The ids of ended tasks, if kept (to name a late event "after the task ended", and
    /// to catch an id submitted again); otherwise memory follows the live tasks, and a
    /// late event is caught as one for a task that is not queued or running.
    ended: Option<IdMap<bool>>,
    last_ns: u64,
    events: u64,
    migrations: usize,
    steals: usize,
}

impl RunStream {
    /// A stream of a run on `units` units, keeping the ids of ended tasks or not.
    pub fn new(units: usize, keep_ended: bool) -> RunStream {
        let unit = Unit {
            task: NO_INDEX,
            seg_ns: NO_TIME,
            busy_ns: 0,
        };
        RunStream {
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
            fresh: NO_INDEX,
            news: FxHashSet::default(),
            units: vec![unit; units],
            ended: keep_ended.then(IdMap::default),
            last_ns: 0,
            events: 0,
            migrations: 0,
            steals: 0,
        }
    }

    /// Takes one event; `out` receives the outcomes it made final, in submission order.
    /// The event's invariant violation, if any, is the error; the outcomes and tallies
    /// do not depend on the checks, and after a violation the checks' state is
    /// unspecified (checking stops there).
    #[inline(always)]
    pub fn push(&mut self, e: &Event, out: &mut impl FnMut(&TaskOutcome)) -> Result<(), String> {
        let (n, back) = self.count(e.t_ns);
        let checked = self.follow(e, out);
        verdict(n, back, e.t_ns, e.task, checked)
    }

    /// [`Self::push`] of a `Submit` event, its task type lent: the stream keeps one
    /// clone of each type, not one per task (see
    /// [`Recorder::submit`](crate::record::Recorder::submit)).
    #[inline(always)]
    pub fn push_submit(
        &mut self,
        t_ns: u64,
        task: TaskId,
        ideal_ns: u64,
        kind: &Arc<str>,
    ) -> Result<(), String> {
        let (n, back) = self.count(t_ns);
        let checked = self.submit(t_ns, task, ideal_ns, kind);
        verdict(n, back, t_ns, task, checked)
    }

    /// An event at `t_ns` counted: its number, and whether time went back.
    #[inline(always)]
    fn count(&mut self, t_ns: u64) -> (u64, bool) {
        let n = self.events;
        self.events += 1;
        let back = t_ns < self.last_ns;
        if !back {
            self.last_ns = t_ns;
        }
        (n, back)
    }

    /// One match on the event's kind: each arm finds its task (and unit) once, updates
    /// the metrics' tallies whatever the checks say, then the task's entry.
    #[inline(always)]
    fn follow(
        &mut self,
        e: &Event,
        out: &mut impl FnMut(&TaskOutcome),
    ) -> Result<(), &'static str> {
        use EventKind::*;
        let t = e.t_ns;
        match &e.kind {
            Submit { ideal_ns, kind } => self.submit(e.t_ns, e.task, *ideal_ns, kind),
            Enqueue { .. } => {
                let Some(i) = self.find(e.task) else {
                    return Err(self.missing(e));
                };
                // Waiting changes nothing in an outcome (nor makes an entry in `pending`).
                self.not_new(i);
                match self.pending.get((i - self.base) as usize) {
                    Some(s) if s.stage == Stage::Running => {
                        Err("enqueued while not new or yielded")
                    }
                    _ => Ok(()),
                }
            }
            &Start { unit, from } => {
                if matches!(from, QueueId::Unit(q) if q != unit) {
                    self.steals += 1;
                }
                let found = self.find(e.task);
                let queued = found.is_some_and(|i| !self.is_new(i));
                let mut u = self.units.get_mut(unit as usize);
                if let Some(u) = u.as_deref_mut() {
                    u.seg_ns = t;
                }
                let Some(i) = found else {
                    return Err(self.missing(e));
                };
                let o = since(&mut self.pending, (i - self.base) as usize);
                let queued = queued && o.stage == Stage::Idle;
                if o.first_start_ns == NO_TIME {
                    o.first_start_ns = t;
                }
                o.runs += 1;
                o.at_ns = t;
                o.stage = Stage::Running;
                match u {
                    Some(u) if queued && u.task == NO_INDEX => {
                        u.task = i;
                        Ok(())
                    }
                    Some(_) if queued => Err("unit already runs a task"),
                    _ => Err("started while not queued"),
                }
            }
            &Stop { unit } | &Complete { unit } => {
                let found = self.find(e.task);
                let mut u = self.units.get_mut(unit as usize);
                if let Some(u) = u.as_deref_mut() {
                    if u.seg_ns != NO_TIME {
                        u.busy_ns += t.saturating_sub(std::mem::replace(&mut u.seg_ns, NO_TIME));
                    }
                }
                let Some(i) = found else {
                    return Err(self.missing(e));
                };
                let o = since(&mut self.pending, (i - self.base) as usize);
                let checked = match u {
                    Some(u) if o.stage == Stage::Running && u.task == i => {
                        u.task = NO_INDEX;
                        Ok(())
                    }
                    _ => Err("stopped where it was not running"),
                };
                o.close_segment(t);
                if let Stop { .. } = e.kind {
                    o.stage = Stage::Idle;
                    return checked;
                }
                o.unit = unit;
                o.at_ns = t;
                o.stage = Stage::Ended;
                self.end(i, e.task, out);
                checked
            }
            &Migrate { to, .. } => {
                self.migrations += 1;
                let Some(i) = self.find(e.task) else {
                    return Err(self.missing(e));
                };
                let queued = !self.is_new(i);
                let o = since(&mut self.pending, (i - self.base) as usize);
                o.migrations += 1;
                match o.stage == Stage::Idle && queued && (to as usize) < self.units.len() {
                    true => Ok(()),
                    false => Err("migrated while not queued (stop first)"),
                }
            }
            Reject { .. } => {
                let Some(i) = self.find(e.task) else {
                    return Err(self.missing(e));
                };
                let o = since(&mut self.pending, (i - self.base) as usize);
                let checked = match o.stage {
                    Stage::Running => Err("rejected while running"),
                    _ => Ok(()),
                };
                o.rejected = true;
                o.at_ns = t;
                o.stage = Stage::Ended;
                self.end(i, e.task, out);
                checked
            }
        }
    }

    /// The violation of an event (not a `Submit`) for a task that is not live.
    #[cold]
    #[inline(never)]
    fn missing(&self, e: &Event) -> &'static str {
        use EventKind::*;
        let ended = self.ended.as_ref().is_some_and(|m| m.get(e.task).is_some());
        match e.kind {
            _ if ended => "event after the task ended",
            Enqueue { .. } => "enqueued while not new or yielded",
            Start { .. } => "started while not queued",
            Migrate { .. } => "migrated while not queued (stop first)",
            Reject { .. } => "rejected while running",
            _ => "stopped where it was not running",
        }
    }

    /// A task ended (its entry says so): the outcomes now final leave.
    #[inline]
    fn end(&mut self, i: u64, task: TaskId, out: &mut impl FnMut(&TaskOutcome)) {
        self.not_new(i);
        if let Some(ended) = &mut self.ended {
            ended.insert(task, true);
        }
        if !self.live.is_empty() {
            self.live.remove(&task);
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

    /// Whether the live task submitted `i`-th is new (neither enqueued nor rejected).
    #[inline]
    fn is_new(&self, i: u64) -> bool {
        self.fresh == i || (!self.news.is_empty() && self.news.contains(&i))
    }

    /// The task submitted `i`-th is no longer new.
    #[inline]
    fn not_new(&mut self, i: u64) {
        if self.fresh == i {
            self.fresh = NO_INDEX;
        } else if !self.news.is_empty() {
            self.news.remove(&i);
        }
    }

    /// A submitted task: its pending entry; it is new.
    #[inline]
    fn submit(
        &mut self,
        t_ns: u64,
        task: TaskId,
        ideal_ns: u64,
        kind: &Arc<str>,
    ) -> Result<(), &'static str> {
        let checked = if self.find(task).is_some() {
            Err("submitted twice")
        } else if self.ended.as_ref().is_some_and(|m| m.get(task).is_some()) {
            Err("event after the task ended")
        } else {
            Ok(())
        };
        let index = self.next;
        self.next += 1;
        let offset = *self.offset.get_or_insert(task.wrapping_sub(index));
        if task == offset.wrapping_add(index) {
            if !self.live.is_empty() {
                self.live.remove(&task);
            }
        } else {
            self.live.insert(task, index);
            self.strays.insert(index, task);
        }
        if self.fresh != NO_INDEX {
            self.news.insert(self.fresh);
        }
        self.fresh = index;
        let kind = self.kind(kind);
        match self.submits.back_mut() {
            Some(s)
                if (s.arrival_ns, s.ideal_ns, s.kind) == (t_ns, ideal_ns, kind)
                    && s.count < u32::MAX =>
            {
                s.count += 1
            }
            _ => self.submits.push_back(Submits {
                arrival_ns: t_ns,
                ideal_ns,
                kind,
                count: 1,
            }),
        }
        checked
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
    #[inline(always)]
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

    /// Each unit's busy time, the migrations and the steals so far.
    pub fn tallies(&self) -> Tallies {
        Tallies {
            busy_ns: self.units.iter().map(|u| u.busy_ns).collect(),
            migrations: self.migrations,
            steals: self.steals,
        }
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

/// The entry of the pending task at `at`, made if nothing happened to it yet (usually
/// the task just past the end: tasks start in submission order).
#[inline(always)]
fn since(pending: &mut VecDeque<Since>, at: usize) -> &mut Since {
    while at >= pending.len() {
        pending.push_back(Since::NOTHING);
    }
    &mut pending[at]
}

/// The error, if any, of event `n` (at `t_ns`, of `task`) whose time went `back` and
/// whose checks said `checked`.
#[inline(always)]
fn verdict(
    n: u64,
    back: bool,
    t_ns: u64,
    task: TaskId,
    checked: Result<(), &'static str>,
) -> Result<(), String> {
    match (back, checked) {
        (false, Ok(())) => Ok(()),
        (true, _) => Err(violation(n, t_ns, task, "time went backwards")),
        (false, Err(m)) => Err(violation(n, t_ns, task, m)),
    }
}

/// An invariant violation, naming the event.
#[cold]
#[inline(never)]
fn violation(n: u64, t_ns: u64, task: TaskId, m: &str) -> String {
    format!("event {n} (t={t_ns} ns, task {task}): {m}")
}

/// What the metrics take from a run's events besides its tasks: each unit's busy time,
/// the migrations and the steals.
pub struct Tallies {
    pub busy_ns: Vec<u64>,
    pub migrations: usize,
    pub steals: usize,
}

/// The metrics of a run from its tasks (in submission order) and its [`Tallies`].
pub struct MetricsBuilder {
    policy: String,
    unit_kinds: Vec<UnitType>,
    tasks: usize,
    rejected: usize,
    makespan_ns: u64,
    /// Turnarounds and waits in ns.
    turnaround: NsValues,
    wait: NsValues,
    slowdown_sum: f64,
    slowdown_sum_sq: f64,
}

impl MetricsBuilder {
    pub fn new(policy: &str, unit_kinds: &[UnitType]) -> MetricsBuilder {
        MetricsBuilder {
            policy: policy.to_string(),
            unit_kinds: unit_kinds.to_vec(),
            tasks: 0,
            rejected: 0,
            makespan_ns: 0,
            turnaround: NsValues::default(),
            wait: NsValues::default(),
            slowdown_sum: 0.0,
            slowdown_sum_sq: 0.0,
        }
    }

    /// Takes one task's outcome (in submission order).
    #[inline]
    pub fn outcome(&mut self, o: &TaskOutcome) {
        let completed = o.end_ns.filter(|_| !o.rejected);
        self.task(o.arrival_ns, completed, o.run_ns, o.ideal_ns, o.rejected);
    }

    /// Takes one task (in submission order): completed at `completed_ns` if it did,
    /// having run `run_ns` (what [`TaskOutcome::turnaround_ns`] and
    /// [`TaskOutcome::wait_ns`] are made of).
    #[inline(always)]
    fn task(
        &mut self,
        arrival_ns: u64,
        completed_ns: Option<u64>,
        run_ns: u64,
        ideal_ns: u64,
        rejected: bool,
    ) {
        self.tasks += 1;
        self.rejected += rejected as usize;
        let Some(end_ns) = completed_ns else {
            return;
        };
        // Saturating: a record whose time goes back (refused by the checks) must not
        // panic here.
        let turnaround = end_ns.saturating_sub(arrival_ns);
        self.makespan_ns = self.makespan_ns.max(end_ns);
        self.turnaround.push(turnaround);
        self.wait.push(turnaround.saturating_sub(run_ns));
        let slowdown = turnaround as f64 / ideal_ns.max(1) as f64;
        self.slowdown_sum += slowdown;
        self.slowdown_sum_sq += slowdown * slowdown;
    }

    /// The metrics, with the tallies of the stream the tasks came from.
    pub fn finish(mut self, run: &Tallies) -> Metrics {
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
            let b: u64 = units
                .iter()
                .map(|&u| run.busy_ns.get(u).copied().unwrap_or(0))
                .sum();
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
            turnaround_s: self.turnaround.stats(),
            wait_s: self.wait.stats(),
            throughput_per_s: if makespan_ns > 0 {
                done as f64 / makespan_s
            } else {
                0.0
            },
            utilisation,
            migrations: run.migrations,
            steals: run.steals,
            fairness,
            unfinished: 0,
        }
    }
}

/// A run's metrics alone, from its events: what `hetsched simulate --summary` keeps.
///
/// Why a second follower: [`RunStream`] makes each task's whole outcome (type, unit,
/// runs, migrations, first start) and checks the record's invariants at every event,
/// about three quarters of what a 1M-task run costs beyond the engine. The metrics need
/// less of each task: its arrival and ideal time (kept in runs, as `RunStream` does), its
/// run time and its end; and no checks (the engine core refuses a policy's contract
/// violations on every path; the record's invariants are checked wherever outcomes are
/// made: the per-task CSV, `--trace`, [`Record::check`](crate::record::Record::check)).
/// The tasks are folded in submission order, as `RunStream`'s outcomes are, so the
/// metrics are the same to the bit (tested on every policy and scenario).
///
/// A segment's time is its unit's: a `Stop` or `Complete` on a unit ends the segment
/// its last `Start` began, so a `Start` touches the unit alone, not its task (following
/// each task's own start cost `simulate --summary` about 60 instructions a task). In a
/// record whose invariants hold, as engines make them, the two are the same segment,
/// and the metrics are `RunStream`'s. In one the checks refuse, they may differ: an
/// event for a task that is not live (never submitted, or ended) adds to no task's
/// figures, but a `Start`, `Stop` or `Complete` of it still begins or ends the segment
/// of the unit it names, which the task running there then loses (a unit's busy time,
/// the steals and the migrations are counted as `RunStream` counts them). Times stay
/// below `u64::MAX - 1` (the simulator's end of time is 10^18 ns): the two highest
/// values mark a task not ended and a rejected one.
pub struct SummaryStream {
    metrics: MetricsBuilder,
    /// `Some(offset)` once a task was submitted: ids that follow are `offset + index`.
    offset: Option<u64>,
    /// Submission index of each live task whose id does not follow, and the indices
    /// of such tasks not folded in yet (no other id may reach them).
    live: FxHashMap<TaskId, u64>,
    strays: FxHashSet<u64>,
    /// Submissions from index `base` to `next` (excluded), in runs; what happened to
    /// them since, made up to a task when it first stops, ends or is rejected.
    submits: VecDeque<Submits>,
    window: VecDeque<Lapse>,
    base: u64,
    next: u64,
    units: Vec<Busy>,
    migrations: usize,
    steals: usize,
}

/// A unit's running segment's start ([`NO_TIME`] if idle) and its busy time.
#[derive(Clone, Copy)]
struct Busy {
    seg_ns: u64,
    busy_ns: u64,
}

/// What happened to a submitted task since, as far as the metrics go (16 bytes: the
/// drain reads them once each, long after they were written).
#[derive(Clone, Copy)]
struct Lapse {
    /// The time of its segments that ended.
    run_ns: u64,
    /// When it completed, or [`NO_TIME`] (not yet), or [`REJECTED`].
    end_ns: u64,
}

/// A rejected task's end in [`Lapse`] (the metrics do not read when).
const REJECTED: u64 = NO_TIME - 1;

const _: () = assert!(std::mem::size_of::<Lapse>() == 16);

impl Lapse {
    const NOTHING: Lapse = Lapse {
        run_ns: 0,
        end_ns: NO_TIME,
    };
}

impl SummaryStream {
    /// The metrics of a run of `policy` on `machine`.
    pub fn new(policy: &str, machine: &Machine) -> SummaryStream {
        let unit_kinds: Vec<_> = machine.units.iter().map(|u| u.kind).collect();
        SummaryStream {
            metrics: MetricsBuilder::new(policy, &unit_kinds),
            offset: None,
            live: FxHashMap::default(),
            strays: FxHashSet::default(),
            submits: VecDeque::new(),
            window: VecDeque::new(),
            base: 0,
            next: 0,
            units: vec![
                Busy {
                    seg_ns: NO_TIME,
                    busy_ns: 0
                };
                machine.units.len()
            ],
            migrations: 0,
            steals: 0,
        }
    }

    /// Takes one event.
    #[inline(always)]
    pub fn push(&mut self, e: &Event) {
        use EventKind::*;
        let t = e.t_ns;
        match &e.kind {
            &Submit { ideal_ns, .. } => self.submitted(t, e.task, ideal_ns),
            Enqueue { .. } => {}
            &Start { unit, from } => {
                if matches!(from, QueueId::Unit(q) if q != unit) {
                    self.steals += 1;
                }
                if let Some(u) = self.units.get_mut(unit as usize) {
                    u.seg_ns = t;
                }
            }
            &Stop { unit } | &Complete { unit } => {
                let seg_ns = match self.units.get_mut(unit as usize) {
                    Some(u) if u.seg_ns != NO_TIME => {
                        let seg_ns = t.saturating_sub(std::mem::replace(&mut u.seg_ns, NO_TIME));
                        u.busy_ns += seg_ns;
                        seg_ns
                    }
                    _ => 0,
                };
                let Some(l) = self.lapse(e.task) else {
                    return;
                };
                l.run_ns += seg_ns;
                if let Complete { .. } = e.kind {
                    debug_assert!(t < REJECTED, "a time within the engine's horizon");
                    l.end_ns = t;
                    self.ended(e.task);
                }
            }
            Migrate { .. } => self.migrations += 1,
            Reject { .. } => {
                if let Some(l) = self.lapse(e.task) {
                    l.end_ns = REJECTED;
                    self.ended(e.task);
                }
            }
        }
    }

    /// A task submitted (`Recorder::submit` lends its type too, which
    /// the summary does not keep).
    #[inline(always)]
    fn submitted(&mut self, t_ns: u64, task: TaskId, ideal_ns: u64) {
        let index = self.next;
        self.next += 1;
        let offset = *self.offset.get_or_insert(task.wrapping_sub(index));
        if task != offset.wrapping_add(index) {
            self.live.insert(task, index);
            self.strays.insert(index);
        } else if !self.live.is_empty() {
            self.live.remove(&task);
        }
        match self.submits.back_mut() {
            Some(s) if (s.arrival_ns, s.ideal_ns) == (t_ns, ideal_ns) && s.count < u32::MAX => {
                s.count += 1
            }
            _ => self.submits.push_back(Submits {
                arrival_ns: t_ns,
                ideal_ns,
                kind: 0,
                count: 1,
            }),
        }
    }

    /// What happened to a live task since it was submitted (made if nothing did yet).
    #[inline(always)]
    fn lapse(&mut self, task: TaskId) -> Option<&mut Lapse> {
        let stray = match self.live.is_empty() {
            true => None,
            false => self.live.get(&task).copied(),
        };
        let i = match stray {
            Some(i) => i,
            None => {
                let i = task.wrapping_sub(self.offset?);
                if !self.strays.is_empty() && self.strays.contains(&i) {
                    return None;
                }
                i
            }
        };
        let at = i.wrapping_sub(self.base);
        if at >= self.next - self.base {
            return None;
        }
        if at as usize >= self.window.len() {
            self.window.resize(at as usize + 1, Lapse::NOTHING);
        }
        let l = &mut self.window[at as usize];
        (l.end_ns == NO_TIME).then_some(l)
    }

    /// A task ended: the tasks now ended in submission order are folded in. Most ends
    /// fold nothing (an older task still runs), so only that test is inline.
    #[inline(always)]
    fn ended(&mut self, task: TaskId) {
        if !self.live.is_empty() {
            self.live.remove(&task);
        }
        if self.window.front().is_some_and(|l| l.end_ns != NO_TIME) {
            self.drain();
        }
    }

    /// Folds in the tasks ended in submission order at the window's front.
    #[inline(never)]
    fn drain(&mut self) {
        self.fold_front::<false>();
        crate::id_map::shrink(&mut self.window);
        crate::id_map::shrink(&mut self.submits);
    }

    /// Folds in the tasks at the window's front that ended, or, at the run's end
    /// (`ALL`), every task left, those that never ended as such. It walks the two
    /// deques' slices and removes what it folded at once: one `pop_front` per task,
    /// from the window and from the submissions, was about a fifth of the drain's
    /// instructions.
    #[inline(always)]
    fn fold_front<const ALL: bool>(&mut self) {
        let Self {
            metrics,
            strays,
            submits,
            window,
            base,
            next,
            ..
        } = self;
        let untouched = if ALL {
            (*next - *base) as usize - window.len()
        } else {
            0
        };
        let (front, back) = window.as_slices();
        let lapses = front.iter().chain(back).copied();
        let mut subs = submits.iter_mut();
        let mut s = subs.next();
        let (mut folded, mut runs) = (0, 0);
        for l in lapses.chain(std::iter::repeat_n(Lapse::NOTHING, untouched)) {
            if !ALL && l.end_ns == NO_TIME {
                break;
            }
            if !strays.is_empty() {
                strays.remove(&*base);
            }
            *base += 1;
            folded += 1;
            let run = s.as_deref_mut().expect("a submission per task");
            let (arrival_ns, ideal_ns) = (run.arrival_ns, run.ideal_ns);
            run.count -= 1;
            if run.count == 0 {
                runs += 1;
                s = subs.next();
            }
            let rejected = l.end_ns == REJECTED;
            let completed = (l.end_ns < REJECTED).then_some(l.end_ns);
            metrics.task(arrival_ns, completed, l.run_ns, ideal_ns, rejected);
        }
        window.drain(..folded.min(window.len()));
        submits.drain(..runs);
    }

    /// The metrics, the tasks that never ended counted among the run's tasks.
    pub fn finish(mut self) -> Metrics {
        self.fold_front::<true>();
        let tallies = Tallies {
            busy_ns: self.units.iter().map(|u| u.busy_ns).collect(),
            migrations: self.migrations,
            steals: self.steals,
        };
        self.metrics.finish(&tallies)
    }
}

impl crate::record::Recorder for SummaryStream {
    #[inline(always)]
    fn record(&mut self, event: Event) {
        self.push(&event);
    }

    /// The type is not kept: no clone of it.
    #[inline(always)]
    fn submit(&mut self, t_ns: u64, task: TaskId, ideal_ns: u64, _kind: &Arc<str>) {
        self.submitted(t_ns, task, ideal_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(t_ns: u64, task: TaskId, kind: EventKind) -> Event {
        Event { t_ns, task, kind }
    }

    /// A xorshift generator: `rand(n)` is below `n`.
    fn xorshift(mut x: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        }
    }

    /// A machine of units of these types (only their types and count matter here).
    fn machine(kinds: &[UnitType]) -> crate::machine::Machine {
        let units = (0..kinds.len() as u32).map(|i| crate::machine::Unit {
            id: i,
            kind: kinds[i as usize],
            os_index: None,
            cpus: Vec::new(),
            cpu_kind: None,
            capacity: 1024,
            numa_node: None,
            accelerator: None,
            name: format!("u{i}"),
        });
        crate::machine::Machine {
            units: units.collect(),
            ..Default::default()
        }
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
            let mut c = RunStream::new(2, keep_ended);
            events.iter().try_for_each(|(t, task, kind)| {
                c.push(&event(*t, *task, kind.clone()), &mut |_| {})
            })
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

    /// Random runs (mostly valid moves, ids mostly in order, some reused or out of
    /// order, several tasks new at once) fail at the same event with the same message as
    /// a plain model of the invariants: each task's state by id in a hash map.
    #[test]
    fn checks_agree_with_a_model_by_id() {
        use std::collections::HashMap;
        #[derive(Clone, Copy, PartialEq, Debug)]
        enum St {
            New,
            Queued,
            Running(UnitId),
            Ended,
        }
        let mut rand = xorshift(0x2545_F491_4F6C_DD1D);
        let mut messages = std::collections::BTreeSet::new();
        let mut longest = 0;
        for round in 0..4_000 {
            let keep_ended = round % 2 == 1;
            let mut model: HashMap<TaskId, St> = HashMap::new();
            let mut on_unit: [Option<TaskId>; 2] = [None; 2];
            let mut stream = RunStream::new(2, keep_ended);
            let mut next_id = 100;
            for n in 0..60 {
                // A task: the next id, one already seen, or one out of order.
                let task = match rand(8) {
                    0..=2 => next_id,
                    3 => rand(200),
                    _ => 100 + rand(next_id - 99),
                };
                let st = model.get(&task).copied();
                let free = on_unit.iter().position(|t| t.is_none()).unwrap_or(0) as UnitId;
                // Mostly a move the task's state allows, else any (units 0-1 exist).
                let pick = match (rand(8), st) {
                    (0, _) => rand(7),
                    (_, None | Some(St::Ended)) => 0,
                    (_, Some(St::New)) => [1, 1, 6][rand(3) as usize],
                    (_, Some(St::Queued)) => [1, 2, 2, 2, 5, 6][rand(6) as usize],
                    (_, Some(St::Running(_))) => 3 + rand(2),
                };
                let unit = match (pick, st) {
                    (_, _) if rand(10) == 0 => rand(3) as UnitId,
                    (3 | 4, Some(St::Running(u))) => u,
                    _ => free,
                };
                let kind = match pick {
                    0 => EventKind::Submit {
                        ideal_ns: 1,
                        kind: Arc::from("t"),
                    },
                    1 => EventKind::Enqueue {
                        queue: QueueId::Central,
                    },
                    2 => EventKind::Start {
                        unit,
                        from: QueueId::Central,
                    },
                    3 => EventKind::Stop { unit },
                    4 => EventKind::Complete { unit },
                    5 => EventKind::Migrate {
                        from: crate::task::Placement::Queued(QueueId::Central),
                        to: unit,
                    },
                    _ => EventKind::Reject { reason: "x".into() },
                };
                if task == next_id && matches!(kind, EventKind::Submit { .. }) {
                    next_id += 1;
                }
                let ok = |u: UnitId| (u as usize) < on_unit.len();
                let expected: Result<St, &str> = match (&kind, st) {
                    (_, Some(St::Ended)) if keep_ended => Err("event after the task ended"),
                    (EventKind::Submit { .. }, None | Some(St::Ended)) => Ok(St::New),
                    (EventKind::Submit { .. }, _) => Err("submitted twice"),
                    (EventKind::Enqueue { .. }, Some(St::New | St::Queued)) => Ok(St::Queued),
                    (EventKind::Enqueue { .. }, _) => Err("enqueued while not new or yielded"),
                    (EventKind::Start { unit, .. }, Some(St::Queued)) if ok(*unit) => {
                        match on_unit[*unit as usize] {
                            Some(_) => Err("unit already runs a task"),
                            None => Ok(St::Running(*unit)),
                        }
                    }
                    (EventKind::Start { .. }, _) => Err("started while not queued"),
                    (EventKind::Stop { unit }, Some(St::Running(u))) if u == *unit => {
                        Ok(St::Queued)
                    }
                    (EventKind::Complete { unit }, Some(St::Running(u))) if u == *unit => {
                        Ok(St::Ended)
                    }
                    (EventKind::Stop { .. } | EventKind::Complete { .. }, _) => {
                        Err("stopped where it was not running")
                    }
                    (EventKind::Migrate { to, .. }, Some(St::Queued)) if ok(*to) => Ok(St::Queued),
                    (EventKind::Migrate { .. }, _) => Err("migrated while not queued (stop first)"),
                    (EventKind::Reject { .. }, Some(St::New | St::Queued)) => Ok(St::Ended),
                    (EventKind::Reject { .. }, _) => Err("rejected while running"),
                };
                let got = stream.push(&event(n, task, kind.clone()), &mut |_| {});
                match expected {
                    Ok(next) => {
                        assert_eq!(got, Ok(()), "round {round}, event {n}");
                        if let Some(St::Running(u)) = st {
                            on_unit[u as usize] = None;
                        }
                        if let St::Running(u) = next {
                            on_unit[u as usize] = Some(task);
                        }
                        model.insert(task, next);
                    }
                    Err(message) => {
                        let want = format!("event {n} (t={n} ns, task {task}): {message}");
                        assert_eq!(got, Err(want), "round {round}");
                        messages.insert(message);
                        longest = longest.max(n);
                        break;
                    }
                }
            }
        }
        // Each check failed somewhere, some after many valid events.
        assert_eq!(messages.len(), 8, "{messages:?}");
        assert!(longest > 20, "{longest}");
    }

    /// On random valid runs (yields, migrations, steals, rejections, tasks left
    /// unfinished, stray ids, equal and distinct submissions), the metrics alone are
    /// those of the kept record, to the bit.
    #[test]
    fn summary_metrics_equal_the_records() {
        use crate::record::Record;
        use crate::task::Placement;
        use EventKind::*;
        let mut rand = xorshift(0x9E37_79B9_7F4A_7C15);
        let kinds = [UnitType::Cpu, UnitType::Cpu, UnitType::Gpu];
        let machine = machine(&kinds);
        let (mut strays, mut wrapped) = (0, 0);
        for round in 0..300 {
            let mut record = Record::new("p", kinds.to_vec(), Vec::new());
            // Live tasks: queued (None) or running on a unit.
            let mut live: Vec<(TaskId, Option<UnitId>)> = Vec::new();
            let mut busy = [false; 3];
            let (mut t, mut next_id) = (0u64, 1000 * round);
            let kind: Arc<str> = Arc::from("k");
            // Every tenth round long enough for the deques to wrap around their
            // buffers (the fold then walks two slices of each).
            let events = if round % 10 == 0 { 4_000 } else { rand(80) };
            for _ in 0..events {
                t += rand(3) * rand(1_000_000);
                let mut push = |task, kind| record.events.push(event(t, task, kind));
                match rand(6) {
                    0 | 1 => {
                        // A stray id now and then, far from the others and never reused.
                        let id = match rand(10) {
                            0 => {
                                strays += 1;
                                1_000_000_000 + next_id * 1000 + rand(1000)
                            }
                            _ => next_id,
                        };
                        next_id += 1;
                        let ideal_ns = [1, 1_000, rand(5_000_000)][rand(3) as usize];
                        let kind = kind.clone();
                        push(id, Submit { ideal_ns, kind });
                        match rand(8) {
                            0 => push(id, Reject { reason: "r".into() }),
                            _ => {
                                push(
                                    id,
                                    Enqueue {
                                        queue: QueueId::Central,
                                    },
                                );
                                live.push((id, None));
                            }
                        }
                    }
                    2 | 3 => {
                        // A queued task starts on an idle unit, from its own queue or not.
                        let queued: Vec<usize> =
                            (0..live.len()).filter(|&i| live[i].1.is_none()).collect();
                        let idle: Vec<u32> = (0..3).filter(|&u| !busy[u as usize]).collect();
                        if queued.is_empty() || idle.is_empty() {
                            continue;
                        }
                        let i = queued[rand(queued.len() as u64) as usize];
                        let unit = idle[rand(idle.len() as u64) as usize];
                        let from = match rand(3) {
                            0 => QueueId::Central,
                            1 => QueueId::Unit(unit),
                            _ => QueueId::Unit((unit + 1) % 3),
                        };
                        push(live[i].0, Start { unit, from });
                        live[i].1 = Some(unit);
                        busy[unit as usize] = true;
                    }
                    _ => {
                        // A running task yields (and may migrate) or completes.
                        let running: Vec<usize> =
                            (0..live.len()).filter(|&i| live[i].1.is_some()).collect();
                        if running.is_empty() {
                            continue;
                        }
                        let i = running[rand(running.len() as u64) as usize];
                        let (id, unit) = (live[i].0, live[i].1.unwrap());
                        busy[unit as usize] = false;
                        if rand(3) == 0 {
                            push(id, Stop { unit });
                            live[i].1 = None;
                            if rand(2) == 0 {
                                let from = Placement::Queued(QueueId::Unit(unit));
                                push(
                                    id,
                                    Migrate {
                                        from,
                                        to: (unit + 1) % 3,
                                    },
                                );
                            }
                        } else {
                            push(id, Complete { unit });
                            live.swap_remove(i);
                        }
                    }
                }
            }
            assert_eq!(
                record.check(),
                Ok(()),
                "round {round}: the generator is valid"
            );
            let mut summary = SummaryStream::new("p", &machine);
            let mut two_slices = false;
            for e in &record.events {
                summary.push(e);
                two_slices |= !summary.window.as_slices().1.is_empty()
                    && !summary.submits.as_slices().1.is_empty();
            }
            wrapped += two_slices as usize;
            let (kept, alone) = (record.metrics(), summary.finish());
            // Debug text: NaN equals itself there, and every bit of a float shows.
            assert_eq!(format!("{kept:?}"), format!("{alone:?}"), "round {round}");
        }
        assert!(strays > 20, "{strays}");
        assert!(wrapped >= 10, "rounds whose deques wrapped: {wrapped}");
    }

    /// Some events a valid record never has change no task's figures in the metrics
    /// alone, as in the record's own: an id that was never submitted but falls on a
    /// stray's index, a late event for an ended task on an idle unit. Time going back is
    /// an error of the checks, not a panic of either stream. (Not every invalid record
    /// gives the same metrics: see [`SummaryStream`].)
    #[test]
    fn summary_ignores_tasks_that_are_not_live() {
        use crate::record::Record;
        use EventKind::*;
        let machine = machine(&[UnitType::Cpu]);
        let submit = |t, id| {
            let kind = Arc::from("k");
            event(t, id, Submit { ideal_ns: 5, kind })
        };
        let start = |t, id| {
            let from = QueueId::Central;
            event(t, id, Start { unit: 0, from })
        };
        let complete = |t, id| event(t, id, Complete { unit: 0 });
        let reject = |t, id| event(t, id, Reject { reason: "r".into() });
        let cases = [
            // 11 is task 10's successor, but index 1 is the stray 500's.
            vec![
                submit(0, 10),
                submit(0, 500),
                reject(1, 11),
                start(2, 500),
                complete(3, 500),
            ],
            vec![
                submit(0, 10),
                start(1, 10),
                complete(2, 10),
                complete(4, 10),
                reject(5, 10),
            ],
            // Time goes back: 10 ends before it started, or starts before it came.
            vec![submit(0, 10), start(5, 10), complete(2, 10)],
            vec![submit(5, 10), start(1, 10), complete(6, 10)],
            vec![submit(5, 10), start(6, 10), complete(3, 10)],
        ];
        for (i, events) in cases.into_iter().enumerate() {
            let mut record = Record::new("p", vec![UnitType::Cpu], Vec::new());
            record.events = events;
            let mut summary = SummaryStream::new("p", &machine);
            record.events.iter().for_each(|e| summary.push(e));
            let (kept, alone) = (record.metrics(), summary.finish());
            assert_eq!(format!("{kept:?}"), format!("{alone:?}"), "case {i}");
            assert!(record.check().is_err(), "case {i} is not a valid record");
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
        let mut stream = RunStream::new(2, false);
        let mut out = Vec::new();
        for e in &events {
            let _ = stream.push(e, &mut |o| out.push(o.clone()));
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
