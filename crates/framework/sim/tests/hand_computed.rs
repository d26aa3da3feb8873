//! Small scenarios whose outcome is computed by hand in each test's comments, run
//! through the real engine and the real policies.

use hetsched_core::machine::{Machine, UnitType};
use hetsched_core::policy::{
    CheckpointDecision, PickDecision, Policy, Sample, SubmitDecision, TickAction, UnitId, View,
};
use hetsched_core::record::{EventKind, Record};
use hetsched_core::task::{QueueId, TaskId};
use hetsched_sim::{machine_from_toml, Config, SimTask as Task, Simulation};

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// One package with cores of the given capacities (one CPU kind per distinct capacity).
fn cpus(caps: &[u32]) -> Machine {
    let mut kinds: Vec<u32> = caps.to_vec();
    kinds.sort_unstable();
    kinds.dedup();
    let mut text = String::from("name = \"hand\"\n");
    for k in &kinds {
        text += &format!("[[cpu_kind]]\nname = \"c{k}\"\ncapacity = {k}\n");
    }
    let names: Vec<String> = caps.iter().map(|c| format!("\"c{c}\"")).collect();
    text += &format!(
        "[[package]]\ncores = {}\nkind = [{}]\n",
        caps.len(),
        names.join(", ")
    );
    machine_from_toml(&text, "hand.toml").unwrap()
}

fn simulate(machine: &Machine, policy: &str, tasks: Vec<Task>) -> Record {
    let mut p = hetsched_policies::build(policy, 1).unwrap();
    let mut rec = Record::new(
        policy,
        machine.units.iter().map(|u| u.kind).collect(),
        machine.units.iter().map(|u| u.name.clone()).collect(),
    );
    let summary = Simulation::new(machine, tasks, &Config::default())
        .run(p.as_mut(), &mut rec)
        .unwrap();
    assert_eq!(summary.unfinished, 0);
    rec.check().unwrap();
    rec
}

/// (task, unit it finished on, completion ns) in completion order.
fn completions(rec: &Record) -> Vec<(u64, u32, u64)> {
    let mut c: Vec<_> = rec
        .outcomes()
        .iter()
        .map(|o| (o.task, o.unit.unwrap(), o.end_ns.unwrap()))
        .collect();
    c.sort_by_key(|&(t, _, end)| (end, t));
    c
}

#[test]
fn fcfs_on_a_fast_and_a_slow_core() {
    // u0 capacity 1024, u1 capacity 512. t0 (2 s) and t1 (1 s) arrive at 0, t2 (1 s) at 0.5 s.
    // t0 -> u0 (lowest idle id), 0..2 s. t1 -> u1: 1 s × 1024/512 = 2 s, 0..2 s.
    // t2 waits centrally; at 2 s u0 frees first (its run end was scheduled first) and runs
    // t2 for 1 s: 2..3 s. Turnarounds 2, 2, 2.5 s; makespan 3 s.
    let m = cpus(&[1024, 512]);
    let tasks = vec![
        Task::cpu(0, 2.0, 0),
        Task::cpu(1, 1.0, 0),
        Task::cpu(2, 1.0, S / 2),
    ];
    let rec = simulate(&m, "fcfs", tasks);
    assert_eq!(
        completions(&rec),
        vec![(0, 0, 2 * S), (1, 1, 2 * S), (2, 0, 3 * S)]
    );
    let metrics = rec.metrics();
    assert_eq!(metrics.makespan_s, 3.0);
    assert!((metrics.turnaround_s.mean - 6.5 / 3.0).abs() < 1e-12);
    assert_eq!(metrics.wait_s.median, 0.0);
    assert_eq!(metrics.wait_s.p95, 1.5);
}

#[test]
fn work_stealing_steals_from_the_longest_queue() {
    // Two equal cores. All at 0: t0 1 s, t1 3 s, t2 1 s, t3 1 s.
    // Push to the least-loaded queue: t0 -> u0 (runs 0..1), t1 -> u1 (runs 0..3),
    // t2 -> u0 (tie 1:1, lowest id), t3 -> u1 (loads 2:1). At 1 s u0 runs t2 (1..2); at
    // 2 s its queue is empty and it steals t3 from u1 (2..3); t1 ends at 3 s.
    let m = cpus(&[1024, 1024]);
    let tasks = vec![
        Task::cpu(0, 1.0, 0),
        Task::cpu(1, 3.0, 0),
        Task::cpu(2, 1.0, 0),
        Task::cpu(3, 1.0, 0),
    ];
    let rec = simulate(&m, "ws", tasks);
    assert_eq!(
        completions(&rec),
        vec![(0, 0, S), (2, 0, 2 * S), (1, 1, 3 * S), (3, 0, 3 * S)]
    );
    assert_eq!(rec.metrics().steals, 1);
    assert_eq!(rec.metrics().makespan_s, 3.0);
}

#[test]
fn cfs_time_slices_round_robin_and_pulls_when_idle() {
    // Two equal cores, three 1 s tasks at 0. Placement by count: t0 -> u0, t1 -> u1,
    // t2 -> u0 (tie). t0 started while alone on u0, so its slice is the full 6 ms
    // latency; t2 then runs 6 ms too (at 9 ms its vruntime, 3 ms, is below t0's 6 ms,
    // so it continues); from 12 ms the two alternate 3 ms slices (6 ms × 1024/2048),
    // t0 first. t1 ends alone at 1 s. u1 then pulls the queued task from u0: slice
    // j = 329 (999..1002 ms, t2) is running, so t0 moves, having run 6 + 165 × 3 = 501 ms:
    // it ends at 1000 + 499 = 1499 ms. t2 has run 6 + 164 × 3 = 498 ms by 999 ms, runs
    // 999..1002 ms, then alone: ends at 1002 + 499 = 1501 ms.
    // The 4 ms balancer never moves anything: counts differ by at most one.
    let m = cpus(&[1024, 1024]);
    let tasks = vec![
        Task::cpu(0, 1.0, 0),
        Task::cpu(1, 1.0, 0),
        Task::cpu(2, 1.0, 0),
    ];
    let rec = simulate(&m, "cfs", tasks);
    assert_eq!(
        completions(&rec),
        vec![(1, 1, S), (0, 1, 1499 * MS), (2, 0, 1501 * MS)]
    );
    let metrics = rec.metrics();
    assert_eq!(metrics.steals, 1);
    assert_eq!(metrics.migrations, 0);
    assert_eq!(completions(&rec).last().unwrap().2, 1501 * MS);
    // Runs (segments after a yield): t0 1 + 165 on u0 + 1 on u1, t1 1, t2 1 + 164 + 1.
    let runs: Vec<u32> = rec.outcomes().iter().map(|o| o.runs).collect();
    assert_eq!(runs, vec![167, 1, 166]);
}

#[test]
fn cfs_without_newidle_leaves_the_idle_unit_to_the_periodic_tick() {
    // The three tasks of the test above, with the new-idle pull off: when t1 ends at 1 s,
    // u1 idles while t0 and t2 share u0, until the next 4 ms balance (counts 2:0) moves
    // the queued one to u1, within 2 × the balance period; nothing is stolen.
    let m = cpus(&[1024, 1024]);
    let tasks = vec![
        Task::cpu(0, 1.0, 0),
        Task::cpu(1, 1.0, 0),
        Task::cpu(2, 1.0, 0),
    ];
    let rec = simulate(&m, "cfs:newidle=0,balance_ms=4", tasks);
    let metrics = rec.metrics();
    assert_eq!((metrics.steals, metrics.migrations), (0, 1));
    let moves: Vec<(u64, TaskId)> = rec
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Migrate { to: 1, .. }))
        .map(|e| (e.t_ns, e.task))
        .collect();
    assert_eq!(moves.len(), 1, "{moves:?}");
    let (at, task) = moves[0];
    assert!((S..=S + 2 * 4 * MS).contains(&at), "moved at {at} ns");
    assert!([0, 2].contains(&task));
    // u1 ran nothing between t1's end and the move.
    let starts_on_u1: Vec<u64> = rec
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Start { unit: 1, .. }) && e.t_ns >= S)
        .map(|e| e.t_ns)
        .collect();
    assert_eq!(starts_on_u1, [at]);
}

#[test]
fn cfs_balancer_moves_queued_tasks_by_count() {
    // Two equal cores, six tasks at 0 placed by count alternately: u0 gets t0, t2, t4
    // (1 s each), u1 gets t1 (1 s), t3 and t5 (10 ms each). u1 finishes t3 and t5 within
    // ~30 ms of 2 ms slices and is left with 1 task against u0's 3: the next 4 ms
    // balance moves exactly one queued task (the newest queued on u0) to u1, after which
    // counts are 2:2 and nothing else moves.
    let m = cpus(&[1024, 1024]);
    let mut tasks: Vec<Task> = (0..6).map(|i| Task::cpu(i, 1.0, 0)).collect();
    tasks[3].model.work_s = 0.01;
    tasks[5].model.work_s = 0.01;
    let rec = simulate(&m, "cfs", tasks);
    let metrics = rec.metrics();
    assert_eq!(metrics.migrations, 1);
    let moved: Vec<_> = rec
        .outcomes()
        .into_iter()
        .filter(|o| o.migrations == 1)
        .collect();
    assert_eq!(moved.len(), 1);
    assert!([0, 2, 4].contains(&moved[0].task));
    assert_eq!(moved[0].unit, Some(1));
    // 3.02 s of work on 2 cores: no earlier than 1.51 s; u0 keeps two nearly whole
    // 1 s tasks after the move, so about 2 s (not 3 s, its load without balancing).
    let end = completions(&rec).last().unwrap().2;
    assert!(end > 1510 * MS && end < 2100 * MS, "{end}");
}

#[test]
fn random_with_one_unit_per_type_is_forced() {
    // One CPU and one GPU (rate = affinity ratio 4/1 × 1024/1024 = 4). A CPU-only task
    // (1 s) and a GPU-only task (affinity 4, no CPU implementation: speed-up 4, 2 s of
    // work = 0.5 s) each have one choice: ends at 1 s and 0.5 s.
    let text =
        "name = \"g\"\n[[package]]\ncores = 1\n[[accelerator]]\ntype = \"gpu\"\nname = \"gpu0\"\n";
    let m = machine_from_toml(text, "g.toml").unwrap();
    assert_eq!(m.units[1].kind, UnitType::Gpu);
    let mut gpu = Task::cpu(1, 2.0, 0);
    gpu.affinity.set(UnitType::Cpu, 0.0);
    gpu.affinity.set(UnitType::Gpu, 4.0);
    let rec = simulate(&m, "random", vec![Task::cpu(0, 1.0, 0), gpu]);
    assert_eq!(completions(&rec), vec![(1, 1, S / 2), (0, 0, S)]);
}

#[test]
fn dmda_calibrates_uncalibrated_units_first_then_weighs_transfer_costs() {
    // As StarPU runs dmda, with a model trusted after one run (`calibrate=1`). u0: CPU
    // 1024; u1: GPU with a 1 GB/s link, no latency. Every task: type "t", 1 s of work,
    // affinity cpu 1, gpu 4 (4x faster there), 0.25 GB in + 0.25 GB out = 0.5 s of
    // copies to the GPU. dmda sees none of the work, only what the engine observed.
    // t0 at 0: no model anywhere: greedy, both units uncalibrated with no tasks, the
    //   lowest id -> CPU, 0..1 s; the engine records "t" on the CPU: 1 s.
    // t1 at 2 s: the GPU is still uncalibrated: it goes there to calibrate it, 2..2.75 s
    //   (0.25 s in, 0.25 s of work, 0.25 s out); recorded: 0.75 - 0.5 of copies = 0.25 s.
    // t2 at 4 s: calibrated everywhere. CPU end 4 + 1 = 5 s, GPU end 4 + 0.25 = 4.25 s
    //   (the best); fitness CPU 1 x (5 - 4.25) = 0.75, GPU 0 + 1 x 0.5 of copies = 0.5
    //   -> GPU, 4..4.75 s.
    // t3 at 4 s: the GPU is expected free at 4.75 s (t2's copies 0.5 s + its recent
    //   run 0.25 s), so ends at 5 s, as the CPU does; fitness CPU 0, GPU 0.5 -> CPU,
    //   4..5 s.
    let text = "name = \"g\"\n[[package]]\ncores = 1\n[[accelerator]]\ntype = \"gpu\"\nname = \"gpu0\"\nlink_bandwidth = 1000000000\n";
    let m = machine_from_toml(text, "g.toml").unwrap();
    let task = |id, arrival| {
        let mut t = Task::cpu(id, 1.0, arrival);
        t.kind = "t".into();
        t.affinity.set(UnitType::Gpu, 4.0);
        t.bytes_in = 250_000_000;
        t.bytes_out = 250_000_000;
        t
    };
    let tasks = vec![task(0, 0), task(1, 2 * S), task(2, 4 * S), task(3, 4 * S)];
    let rec = simulate(&m, "dmda:calibrate=1", tasks);
    assert_eq!(
        completions(&rec),
        vec![
            (0, 0, S),
            (1, 1, 2 * S + 3 * S / 4),
            (2, 1, 4 * S + 3 * S / 4),
            (3, 0, 5 * S)
        ]
    );
}

#[test]
fn dmda_places_uncalibrated_tasks_by_load_per_assumed_speed() {
    // With no model calibrated (StarPU's 10 runs by default), StarPU's greedy rule: the
    // unit with the fewest tasks per assumed speed-up (CPU 1, CUDA 13.33). Three tasks
    // at 0 on a CPU and a GPU: t0 -> CPU (both empty: the lowest id); t1 -> GPU (0 <
    // 1 / 1); t2 -> GPU (1 / 13.33 < 1 / 1).
    let text =
        "name = \"g\"\n[[package]]\ncores = 1\n[[accelerator]]\ntype = \"gpu\"\nname = \"gpu0\"\n";
    let m = machine_from_toml(text, "g.toml").unwrap();
    let task = |id| {
        let mut t = Task::cpu(id, 1.0, 0);
        t.affinity.set(UnitType::Gpu, 2.0);
        t
    };
    let rec = simulate(&m, "dmda", vec![task(0), task(1), task(2)]);
    let mut units: Vec<(u64, u32)> = completions(&rec).iter().map(|c| (c.0, c.1)).collect();
    units.sort();
    assert_eq!(units, [(0, 0), (1, 1), (2, 1)]);
}

#[test]
fn accelerators_stop_only_at_checkpoints_which_cost_time() {
    // One GPU (no link given: no copies) and two GPU-only tasks of 50 ms (affinity 1 with
    // no CPU implementation: speed-up 1). Checkpoint every 10 ms of GPU time, each costing
    // 1 ms; cfs treats the GPU as a run queue and ignores its time slice: at each
    // checkpoint the waiting task has the smaller vruntime, so the two alternate 11 ms
    // segments (10 ms of work + 1 ms checkpoint). The fifth segment of each finishes the
    // task without a checkpoint: t0 runs 88..98 ms, t1 98..108 ms.
    let text =
        "name = \"g\"\n[[package]]\ncores = 1\n[[accelerator]]\ntype = \"gpu\"\nname = \"gpu0\"\n";
    let m = machine_from_toml(text, "g.toml").unwrap();
    let task = |id| {
        let mut t = Task::cpu(id, 0.05, 0);
        t.affinity.set(UnitType::Cpu, 0.0);
        t.affinity.set(UnitType::Gpu, 1.0);
        t.checkpoint_ns.set(UnitType::Gpu, 10 * MS);
        t
    };
    let mut p = hetsched_policies::build("cfs", 1).unwrap();
    let mut rec = Record::new(
        "cfs",
        m.units.iter().map(|u| u.kind).collect(),
        m.units.iter().map(|u| u.name.clone()).collect(),
    );
    let config = Config {
        checkpoint_cost_ns: MS,
        max_time_ns: None,
        max_events: None,
        ..Config::default()
    };
    Simulation::new(&m, vec![task(0), task(1)], &config)
        .run(p.as_mut(), &mut rec)
        .unwrap();
    rec.check().unwrap();
    assert_eq!(completions(&rec), vec![(0, 1, 98 * MS), (1, 1, 108 * MS)]);
    let runs: Vec<u32> = rec.outcomes().iter().map(|o| o.runs).collect();
    assert_eq!(runs, vec![5, 5]);
}

/// A policy that exercises the migration paths of the contract once each.
struct MoveOnce {
    checkpoint_moved: bool,
    tick_moved: bool,
    /// Each tick's time and samples.
    ticks: Vec<(u64, Vec<Sample>)>,
}

impl Policy for MoveOnce {
    fn name(&self) -> &str {
        "move-once"
    }
    fn submit(&mut self, _: &View, _: TaskId) -> SubmitDecision {
        SubmitDecision::Enqueue(QueueId::Unit(0))
    }
    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        view.queue(unit)
            .front()
            .map_or(PickDecision::Idle, PickDecision::Run)
    }
    fn time_slice(&mut self, _: &View, _: UnitId, _: TaskId) -> Option<u64> {
        Some(100 * MS)
    }
    fn checkpoint(&mut self, _: &View, _: TaskId, unit: UnitId) -> CheckpointDecision {
        if unit == 0 && !self.checkpoint_moved {
            self.checkpoint_moved = true;
            return CheckpointDecision::Migrate(1);
        }
        CheckpointDecision::Continue
    }
    fn tick_interval(&self) -> Option<u64> {
        Some(250 * MS)
    }
    fn tick(&mut self, view: &View, samples: &[Sample]) -> Vec<TickAction> {
        self.ticks.push((view.now_ns(), samples.to_vec()));
        match view.running(1) {
            Some(r) if !self.tick_moved => {
                self.tick_moved = true;
                vec![TickAction::Migrate {
                    task: r.task,
                    to: 0,
                }]
            }
            _ => vec![],
        }
    }
}

#[test]
fn checkpoint_and_tick_migrations_move_running_tasks_and_conserve_work() {
    // Two equal cores, one 1 s task. u0 runs it 0..100 ms; its checkpoint migrates it to
    // u1, which runs it 100..250 ms (continuing at 200 ms); the 250 ms tick moves it back
    // while running: 50 ms of that slice are credited, 750 ms remain: u0 runs 250..1000 ms.
    let m = cpus(&[1024, 1024]);
    let mut p = MoveOnce {
        checkpoint_moved: false,
        tick_moved: false,
        ticks: Vec::new(),
    };
    let mut rec = Record::new(
        "move-once",
        m.units.iter().map(|u| u.kind).collect(),
        m.units.iter().map(|u| u.name.clone()).collect(),
    );
    let summary = Simulation::new(&m, vec![Task::cpu(0, 1.0, 0)], &Config::default())
        .run(&mut p, &mut rec)
        .unwrap();
    rec.check().unwrap();
    assert_eq!(summary.work_done_ns, S);
    assert_eq!(completions(&rec), vec![(0, 0, S)]);
    let starts: Vec<(u64, u32)> = rec
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Start { unit, .. } => Some((e.t_ns, unit)),
            _ => None,
        })
        .collect();
    assert_eq!(starts, vec![(0, 0), (100 * MS, 1), (250 * MS, 0)]);
    assert_eq!(rec.metrics().migrations, 2);
    // Samples: busy time since the previous tick. At 250 ms u0 was busy 0..100 ms and
    // u1 100..250 ms (still running the task); from then on u0 runs it, u1 is idle; the
    // tick at 1 s comes after the run end at 1 s (run ends first at equal times).
    let sample = |unit, task: Option<u64>, busy_ns| Sample {
        unit,
        task,
        busy_ns,
        interval_ns: 250 * MS,
        memory_bound: task.map(|_| 0.0),
        ..Sample::default()
    };
    let expected: Vec<(u64, Vec<Sample>)> = [250, 500, 750, 1000]
        .into_iter()
        .map(|t| {
            let samples = match t {
                250 => vec![sample(0, None, 100 * MS), sample(1, Some(0), 150 * MS)],
                1000 => vec![sample(0, None, 250 * MS), sample(1, None, 0)],
                _ => vec![sample(0, Some(0), 250 * MS), sample(1, None, 0)],
            };
            (t * MS, samples)
        })
        .collect();
    assert_eq!(p.ticks, expected);
}

/// Two cores on one NUMA node of 10 GB/s; tasks half memory-bound drawing 10 GB/s each.
fn bandwidth_machine() -> Machine {
    machine_from_toml(
        "name = \"bw\"\n[[package]]\ncores = 2\n[[numa_node]]\nmemory = \"1 GiB\"\nbandwidth = \"10 GB/s\"\n",
        "bw.toml",
    )
    .unwrap()
}

fn memory_task(id: u64, work_s: f64, arrival_ns: u64) -> Task {
    let mut t = Task::cpu(id, work_s, arrival_ns);
    t.model.memory_bound = 0.5;
    t.model.mem_bandwidth = 10e9;
    t
}

#[test]
fn concurrent_tasks_share_a_nodes_memory_bandwidth() {
    // Alone a 1 s task takes 1 s. Together they draw 20 GB/s from 10 GB/s: σ = 2, so
    // each takes 0.5 + 0.5 × 2 = 1.5 s.
    let m = bandwidth_machine();
    let rec = simulate(
        &m,
        "fcfs",
        vec![memory_task(0, 1.0, 0), memory_task(1, 1.0, 0)],
    );
    assert_eq!(
        completions(&rec),
        vec![(0, 0, 1500 * MS), (1, 1, 1500 * MS)]
    );
    let alone = simulate(&m, "fcfs", vec![memory_task(0, 1.0, 0)]);
    assert_eq!(completions(&alone), vec![(0, 0, S)]);
    // Without a draw (mem_bandwidth 0) nothing is shared.
    let mut free = vec![memory_task(0, 1.0, 0), memory_task(1, 1.0, 0)];
    free.iter_mut().for_each(|t| t.model.mem_bandwidth = 0.0);
    assert_eq!(
        completions(&simulate(&m, "fcfs", free)),
        vec![(0, 0, S), (1, 1, S)]
    );
}

/// A remote task draws from the node holding its memory, not from its core's node,
/// and pays the distance ratio on top. Two nodes of one core (distances 10/20), node
/// 0 of 10 GB/s; both tasks' memory on node 0, each half memory-bound drawing 10 GB/s.
/// Task 0 runs on node 0, task 1 on node 1. Together node 0 serves 20 GB/s: σ = 2.
/// Task 0: 0.5 + 0.5 × 2 = 1.5 s. Task 1: 0.5 + 0.5 × 2 (remote) × 2 = 2.5 ns per ns
/// of work until 1.5 s (0.6 s of work done), then alone 0.5 + 0.5 × 2 = 1.5: the 0.4 s
/// left take 0.6 s, it ends at 2.1 s. (Charged to its core's node instead, neither
/// node would be shared: 1 s and 1.5 s.)
#[test]
fn a_remote_task_shares_its_memory_nodes_bandwidth_and_pays_the_distance() {
    let m = machine_from_toml(
        "name = \"bw2\"\ndistances = [[10, 20], [20, 10]]\n\
         [[package]]\ncores = 1\n[[package]]\ncores = 1\n\
         [[numa_node]]\nmemory = \"1 GiB\"\nbandwidth = \"10 GB/s\"\n\
         [[numa_node]]\nmemory = \"1 GiB\"\nbandwidth = \"10 GB/s\"\n",
        "bw2.toml",
    )
    .unwrap();
    let homed = |id: u64| {
        let mut t = memory_task(id, 1.0, 0);
        t.set_numa_home(Some(0));
        t
    };
    let rec = simulate(&m, "fcfs", vec![homed(0), homed(1)]);
    assert_eq!(
        completions(&rec),
        vec![(0, 0, 1500 * MS), (1, 1, 2100 * MS)]
    );
}

#[test]
fn a_task_slows_down_while_another_shares_the_node_and_speeds_up_after() {
    // t0 (1 s) alone until t1 (1 s) arrives at 0.5 s: t0 has 0.5 s of work left, done
    // at factor 1.5 → ends at 1.25 s. t1 runs 0.75 s at factor 1.5 (0.5 s of work),
    // then alone: 0.5 s more → ends at 1.75 s.
    let m = bandwidth_machine();
    let rec = simulate(
        &m,
        "fcfs",
        vec![memory_task(0, 1.0, 0), memory_task(1, 1.0, S / 2)],
    );
    assert_eq!(
        completions(&rec),
        vec![(0, 0, 1250 * MS), (1, 1, 1750 * MS)]
    );
}

/// A CPU task of `work_ms` arriving at `at_us` µs, of weight `weight`.
fn weighted(id: u64, work_ms: f64, at_us: u64, weight: u32) -> Task {
    let mut t = Task::cpu(id, work_ms / 1e3, at_us * 1_000);
    t.weight = weight;
    t
}

/// (time, task) of each segment's start, in time order.
fn starts(rec: &Record) -> Vec<(u64, TaskId)> {
    rec.events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Start { .. }))
        .map(|e| (e.t_ns, e.task))
        .collect()
}

#[test]
fn eevdf_picks_the_eligible_task_with_the_earliest_virtual_deadline() {
    // One core, a 1 ms request (no scaling on one CPU). A: weight 1024, 2.5 ms of work,
    // at 0; B: weight 2048, 2.5 ms, at 0.5 ms; C: weight 512, 1 ms, at 1 ms. Virtual
    // slices (1 ms × 1024 / w): A 1000, B 500, C 2000 µs. Vruntimes in virtual µs
    // relative to the empty queue's V, w·v sums in 1024·µs units (A 1, B 2, C 0.5).
    // - 0: A alone, v 0, deadline 0 + 1000 / 2 = 500 (a new task's half request). It runs
    //   until v reaches it: 0.5 ms.
    // - 0.5 ms (the slice end is handled before the arrival at the same time): nobody
    //   waits, A continues with the next request, deadline 1500. B arrives: V = 500
    //   (A alone), B at v 500, deadline 500 + 500 / 2 = 750. No wake-up preemption.
    // - 1 ms: C arrives. A's v is 1000; V = (1000 + 2 × 500) / 3 = 666.67, floor 666:
    //   C at v 666, deadline 666 + 2000 / 2 = 1666.
    // - 1.5 ms: A's v 1500 reaches 1500, next deadline 2500. V = (1500 + 1000 + 333)
    //   / 3.5 = 809.5: A (1500) is not eligible; B (500, deadline 750) and C (666, 1666)
    //   are: B, the earliest deadline, runs, until its v reaches 750: 0.5 ms (B's
    //   vruntime runs at 1024 / 2048, half the speed of time).
    // - 2 ms: B at 750, next deadline 1250. V = (1500 + 1500 + 333) / 3.5 = 952.4: B is
    //   eligible and its deadline 1250 beats C's 1666: B continues 1 ms.
    // - 3 ms: B at 1250, next deadline 1750. V = (1500 + 2500 + 333) / 3.5 = 1238.1: B
    //   (1250) is not eligible, A (1500) neither; C (666) runs, for (1666 − 666) × 0.5
    //   = 0.5 ms.
    // - 3.5 ms: C at 1666, next deadline 3666. V = (1500 + 2500 + 833) / 3.5 = 1380.95:
    //   only B (1250, deadline 1750) is eligible. It runs its 1 ms of work left: ends at
    //   4.5 ms.
    // - 4.5 ms: B leaves at v 1750 with its negative lag; V drops from 1666.7 to
    //   (1500 + 833) / 1.5 = 1555.6: A (1500) is eligible again, C (1666) not. A runs
    //   its 1 ms left (to v 2500, its deadline): ends at 5.5 ms.
    // - 5.5 ms: C alone runs its last 0.5 ms: ends at 6 ms.
    let m = cpus(&[1024]);
    let tasks = vec![
        weighted(0, 2.5, 0, 1024),
        weighted(1, 2.5, 500, 2048),
        weighted(2, 1.0, 1000, 512),
    ];
    let rec = simulate(&m, "eevdf:base_slice_ms=1", tasks);
    let us = 1_000;
    assert_eq!(
        starts(&rec),
        [
            (0, 0),
            (1500 * us, 1),
            (3000 * us, 2),
            (3500 * us, 1),
            (4500 * us, 0),
            (5500 * us, 2)
        ]
    );
    assert_eq!(
        completions(&rec),
        [(1, 0, 4500 * us), (0, 0, 5500 * us), (2, 0, 6000 * us)]
    );
    // A's slice end at 0.5 ms and B's at 2 ms kept their unit: no stop there.
    let stops: Vec<(u64, TaskId)> = rec
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Stop { .. }))
        .map(|e| (e.t_ns, e.task))
        .collect();
    assert_eq!(stops, [(1500 * us, 0), (3000 * us, 1), (3500 * us, 2)]);
}

#[test]
fn eevdf_scales_its_slice_with_the_cpus_and_balances_like_cfs() {
    // Two equal cores: the 0.75 ms base slice × (1 + log2 2) = 1.5 ms. Three 10 ms tasks
    // at 0 placed by count as cfs places them: t0 -> u0, t1 -> u1, t2 -> u0. t0 starts
    // alone (v 0, deadline 0.75 ms virtual: half a request), t2 is placed at V = 0 with
    // the same deadline but queued after it. At 0.75 ms t0's request is spent (next
    // deadline 2.25), V = (0.75 + 0) / 2: t2 (0) is eligible, t0 not: t2 runs its half
    // request, 0.75 ms; then t0 (eligible again at V = 0.75) runs full requests of
    // 1.5 ms, alternating with t2. Without scaling the requests are 0.75 ms.
    let m = cpus(&[1024, 1024]);
    let tasks = || (0..3).map(|i| Task::cpu(i, 0.01, 0)).collect::<Vec<_>>();
    let us = 1_000;
    for (spec, request) in [("eevdf", 1500), ("eevdf:scale_slice=0", 750)] {
        let rec = simulate(&m, spec, tasks());
        let on_u0: Vec<(u64, TaskId)> = rec
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Start { unit: 0, .. }))
            .map(|e| (e.t_ns, e.task))
            .take(4)
            .collect();
        let half = request / 2 * us;
        assert_eq!(
            on_u0,
            [
                (0, 0),
                (half, 2),
                (2 * half, 0),
                (2 * half + request * us, 2)
            ],
            "{spec}"
        );
        // t1 ends alone on u1 at 10 ms; u1 then pulls the queued one of u0 (new-idle
        // balance, as cfs), and the last two end on different units.
        let metrics = rec.metrics();
        assert_eq!((metrics.steals, metrics.migrations), (1, 0), "{spec}");
        let ends = completions(&rec);
        assert_eq!(ends[0], (1, 1, 10 * MS), "{spec}");
        assert_ne!(ends[1].1, ends[2].1, "{spec}");
    }
}

#[test]
fn a_device_on_the_host_cpus_and_the_cpu_tasks_slow_each_other() {
    // Two CPUs and an OpenCL device that computes on them (PoCL): while it runs, a CPU
    // task runs at cpu_share 0.5; with 1 of the 2 CPUs busy the device runs at
    // 1 − (1 − 0.5) × 1/2 = 0.75. Each grant on the device first costs its 100 ms set-up.
    // t0: 1 s on a CPU; t1: 1 s on the device (speed 1). Both start at 0.
    // The device is busy from 0 (set-up included): t0 runs at 0.5. t1 computes from
    // 0.1 s at 0.75 and ends at 0.1 + 1/0.75 = 1.4333 s; t0 has then done 0.71667 s of
    // work, and the rest, 0.28333 s, at full speed ends it at 1.71667 s.
    let text = "name = \"pocl\"\n[[package]]\ncores = 2\n\
        [[accelerator]]\ntype = \"opencl\"\nname = \"cl\"\nsetup_ms = 100\n\
        on_host = { cpu_share = 0.5, device_share = 0.5 }\n";
    let m = machine_from_toml(text, "pocl.toml").unwrap();
    let cpu = Task::cpu(0, 1.0, 0);
    let mut device = Task::cpu(1, 1.0, 0);
    let mut affinity = hetsched_core::task::Affinity::default();
    affinity.set(UnitType::OpenCl, 1.0);
    device.affinity = affinity;
    let rec = simulate(&m, "fcfs", vec![cpu, device]);
    let c = completions(&rec);
    let close = |got: u64, want: f64| (got as f64 / S as f64 - want).abs() < 1e-6;
    assert_eq!((c[0].0, c[0].1, c[1].0), (1, 2, 0), "{c:?}");
    assert!(close(c[0].2, 0.1 + 1.0 / 0.75), "{c:?}");
    assert!(
        close(c[1].2, 0.1 + 1.0 / 0.75 + (1.0 - (0.1 + 1.0 / 0.75) * 0.5)),
        "{c:?}"
    );

    // Without on_host and set-up, each alone: 1 s both.
    let plain = machine_from_toml(
        "name = \"plain\"\n[[package]]\ncores = 2\n[[accelerator]]\ntype = \"opencl\"\nname = \"cl\"\n",
        "plain.toml",
    )
    .unwrap();
    let mut device = Task::cpu(1, 1.0, 0);
    device.affinity = affinity;
    let c = completions(&simulate(
        &plain,
        "fcfs",
        vec![Task::cpu(0, 1.0, 0), device],
    ));
    assert!(close(c[0].2, 1.0) && close(c[1].2, 1.0), "{c:?}");
}
