//! `eevdf` against a plain reference: the same rules on one core written as directly as
//! they read (V and every pick by a pass over all the tasks, no index), run through the
//! real engine on queues long enough for `eevdf`'s heaps (bursts of 40 to 200 tasks,
//! more than the 16 it scans), with weights from nice −20 to 19, so that V jumps at every
//! end (a task takes its lag with it). Both must make the same run, event for event.

use hetsched_core::policy::{
    CheckpointDecision, PickDecision, Policy, SubmitDecision, UnitId, View,
};
use hetsched_core::record::Record;
use hetsched_core::task::{QueueId, TaskId};
use hetsched_policies::fair::weight_of_nice;
use hetsched_sim::{machine_from_toml, Config, SimTask, Simulation};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;

/// An entity: weight, vruntime, deadline, the deadline when last picked.
#[derive(Clone, Copy)]
struct E {
    w: u64,
    v: u64,
    d: u64,
    picked: u64,
}

/// EEVDF on one core, by the rules of `eevdf.rs`'s module documentation.
struct Reference {
    slice_ns: u64,
    tasks: HashMap<TaskId, E>,
    /// The running task, its vruntime and the time when it started.
    curr: Option<(TaskId, u64, u64)>,
    idle_v: u64,
}

impl Reference {
    fn vslice(&self, w: u64) -> u64 {
        (self.slice_ns * 1024 / w).max(1)
    }

    /// The running task's vruntime now, written into its entity.
    fn update(&mut self, now: u64) {
        if let Some((t, v0, since)) = self.curr {
            let e = self.tasks.get_mut(&t).unwrap();
            e.v = v0 + ((now - since) as u128 * 1024 / e.w as u128) as u64;
        }
    }

    /// (Σ w v, Σ w) over every task on the core.
    fn sums(&self) -> (u128, u128) {
        self.tasks.values().fold((0, 0), |(wv, w), e| {
            (wv + e.w as u128 * e.v as u128, w + e.w as u128)
        })
    }

    fn avg(&self) -> u64 {
        match self.sums() {
            (_, 0) => self.idle_v,
            (wv, w) => (wv / w) as u64,
        }
    }

    fn eligible(&self, v: u64) -> bool {
        let (wv, w) = self.sums();
        v as u128 * w <= wv
    }

    /// The eligible queued task with the earliest deadline (ties: nearest the head).
    fn best(&self, view: &View) -> Option<TaskId> {
        let (wv, w) = self.sums();
        let mut best: Option<(u64, TaskId)> = None;
        for t in view.queue(0).iter() {
            let e = self.tasks[&t];
            if e.v as u128 * w <= wv && best.is_none_or(|(d, _)| e.d < d) {
                best = Some((e.d, t));
            }
        }
        best.map(|(_, t)| t)
    }
}

impl Policy for Reference {
    fn name(&self) -> &str {
        "reference"
    }

    fn submit(&mut self, view: &View, task: TaskId) -> SubmitDecision {
        self.update(view.now_ns());
        let w = view.task(task).weight as u64;
        let v = self.avg();
        let d = v + (self.vslice(w) / 2).max(1);
        self.tasks.insert(task, E { w, v, d, picked: 0 });
        SubmitDecision::Enqueue(QueueId::Unit(0))
    }

    fn pick(&mut self, view: &View, _unit: UnitId) -> PickDecision {
        let Some(t) = self.best(view) else {
            return PickDecision::Idle;
        };
        let e = self.tasks.get_mut(&t).unwrap();
        e.picked = e.d;
        self.curr = Some((t, e.v, view.now_ns()));
        PickDecision::Run(t)
    }

    fn time_slice(&mut self, view: &View, _unit: UnitId, task: TaskId) -> Option<u64> {
        let (_, v0, since) = self.curr.unwrap();
        let e = self.tasks[&task];
        let need = ((e.d - v0) as u128 * e.w as u128).div_ceil(1024) as u64;
        Some(need.saturating_sub(view.now_ns() - since).max(1))
    }

    fn checkpoint(&mut self, view: &View, task: TaskId, _unit: UnitId) -> CheckpointDecision {
        self.update(view.now_ns());
        let mut e = self.tasks[&task];
        if e.v >= e.d {
            e.d = e.v + self.vslice(e.w);
            self.tasks.insert(task, e);
        }
        if view.queue(0).is_empty() {
            return CheckpointDecision::Continue;
        }
        let eligible = self.eligible(e.v);
        if eligible && e.picked == e.d {
            return CheckpointDecision::Continue;
        }
        let best = self.best(view).map(|b| self.tasks[&b].d);
        if eligible && best.is_none_or(|d| e.d < d) {
            return CheckpointDecision::Continue;
        }
        self.curr = None;
        CheckpointDecision::Yield
    }

    fn complete(&mut self, view: &View, task: TaskId, _unit: UnitId) {
        self.update(view.now_ns());
        let v = self.avg();
        self.tasks.remove(&task);
        self.curr = None;
        if self.tasks.is_empty() {
            self.idle_v = v;
        }
    }
}

/// Bursts of 40 to 200 tasks at once and gaps that empty the core; work 0.1 to 30 ms,
/// weights of nice −20 to 19.
fn bursts(n: u64, seed: u64) -> Vec<SimTask> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut t, mut left) = (0, 0);
    (0..n)
        .map(|id| {
            if left == 0 {
                left = rng.random_range(40..200);
                t += rng.random_range(0..2_000_000_000);
            }
            left -= 1;
            let mut task = SimTask::cpu(id, rng.random_range(0.0001..0.03), t);
            task.weight = weight_of_nice(rng.random_range(-20..=19)).unwrap();
            task
        })
        .collect()
}

fn simulate(policy: &mut dyn Policy, tasks: Vec<SimTask>) -> Record {
    let m = machine_from_toml("name = \"one\"\n[[package]]\ncores = 1\n", "one.toml").unwrap();
    let mut rec = Record::new(
        policy.name(),
        m.units.iter().map(|u| u.kind).collect(),
        m.units.iter().map(|u| u.name.clone()).collect(),
    );
    let config = Config {
        max_events: Some(u64::MAX),
        ..Config::default()
    };
    let summary = Simulation::new(&m, tasks, &config)
        .run(policy, &mut rec)
        .unwrap();
    assert_eq!(summary.unfinished, 0);
    rec
}

#[test]
fn eevdf_makes_the_runs_of_a_plain_reference_on_long_queues() {
    for (seed, spec, slice_ns) in [
        (1, "eevdf", 750_000),
        (2, "eevdf:base_slice_ms=3", 3_000_000),
    ] {
        let tasks = bursts(1500, seed);
        let mut eevdf = hetsched_policies::build(spec, 0).unwrap();
        let ours = simulate(eevdf.as_mut(), tasks.clone());
        let mut reference = Reference {
            slice_ns,
            tasks: HashMap::new(),
            curr: None,
            idle_v: 1 << 50,
        };
        let theirs = simulate(&mut reference, tasks);
        // Long queues were indexed, and tasks took turns.
        let yields = ours
            .events
            .iter()
            .filter(|e| matches!(e.kind, hetsched_core::record::EventKind::Stop { .. }))
            .count();
        assert!(yields > 5_000, "{spec}: {yields} yields");
        if let Some(i) =
            (0..ours.events.len()).find(|&i| ours.events.get(i) != theirs.events.get(i))
        {
            panic!(
                "{spec}: event {i} differs: eevdf {:?}, reference {:?}",
                ours.events.get(i),
                theirs.events.get(i)
            );
        }
        assert_eq!(ours.events.len(), theirs.events.len());
    }
}
