//! Conformance of the two engines: every registered policy (each spec the registry lists
//! for tests), driven through the same scripted situations by the simulator and by the
//! live arbiter (on a clock the test sets), makes the same decisions — the logs of a
//! recording decorator are identical, call for call, with times and answers — and both
//! engines write the same run record (but for the ideal times, which live cannot know).
//!
//! A script is a task set run in the simulator. Its decision log says when each task
//! arrived, reached a checkpoint (a slice end), completed, and when ticks came; the
//! arbiter is then driven with the same stimuli, as clients would drive it: `alloc` at
//! an arrival, `rerequest` at a checkpoint (then `free` and `alloc` again when told to
//! give the unit up), `free` at a completion, `expire` at a tick. Tasks carry only meta
//! info a live client can send (kind, affinities, bytes to copy in, weight); their work
//! and speeds, which only the simulator knows, vary.

use hetsched_core::graph::{Data, GraphTask, Mode, TaskGraph};
use hetsched_core::machine::{Machine, UnitType, CAPACITY_SCALE};
use hetsched_core::perf_model::{Arch, History, PerfModels};
use hetsched_core::policy::{CheckpointDecision, PickDecision};
use hetsched_core::record::{EventKind, Record};
use hetsched_live::arbiter::{Arbiter, ManualClock};
use hetsched_live::protocol::{GraphTaskInfo, MetaInfo, Verdict};
use hetsched_policies::recording::{Call, Recording};
use hetsched_sim::graphs::tasks::{Durations, GraphTasks};
use hetsched_sim::{machine_from_toml, Config, SimTask, Simulation};
use std::sync::Arc;

const MS: u64 = 1_000_000;

/// Three CPUs of two speeds, and optionally a GPU with a link.
fn machine(gpu: bool) -> Machine {
    let mut text = String::from(
        "name = \"c\"\n[[cpu_kind]]\nname = \"big\"\ncapacity = 1024\n[[cpu_kind]]\nname = \"little\"\ncapacity = 512\n[[package]]\ncores = 3\nkind = [\"big\", \"little\", \"big\"]\n",
    );
    if gpu {
        text += "[[accelerator]]\ntype = \"gpu\"\nname = \"gpu0\"\nlink_bandwidth = \"8 GB/s\"\nlink_latency_us = 10\n";
    }
    machine_from_toml(&text, "c.toml").unwrap()
}

/// `n` tasks from a seeded generator: bursts and gaps, three types, CPU-only, GPU-only
/// and both, work from 0.1 to 60 ms.
fn script(seed: u64, n: u64, gpu: bool) -> Vec<SimTask> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    let mut next = move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    };
    let mut t = 0;
    (0..n)
        .map(|id| {
            // Mostly bursts, now and then a gap that empties the machine.
            t += match next() % 10 {
                0..=5 => 0,
                6..=8 => next() % (5 * MS),
                _ => 200 * MS,
            };
            let mut task = SimTask::cpu(id, (1 + next() % 600) as f64 * 1e-4, t);
            let kind = next() % 3;
            task.kind = ["a", "b", "c"][kind as usize].into();
            task.weight = [1024, 512, 2048][kind as usize];
            if gpu {
                match next() % 3 {
                    0 => {}
                    1 => {
                        task.affinity.set(UnitType::Cpu, 0.0);
                        task.affinity.set(UnitType::Gpu, 2.0);
                    }
                    _ => task.affinity.set(UnitType::Gpu, (1 + next() % 8) as f64),
                }
                task.bytes_in = next() % 50_000_000;
                task.model.speed.set(UnitType::Gpu, (1 + next() % 6) as f64);
            }
            task
        })
        .collect()
}

fn meta(t: &SimTask) -> MetaInfo {
    MetaInfo {
        kind: t.kind.to_string(),
        affinity: t.affinity,
        bytes_in: t.bytes_in,
        weight: t.weight,
        ..MetaInfo::default()
    }
}

fn record_for(m: &Machine, spec: &str) -> Record {
    Record::new(
        spec,
        m.units.iter().map(|u| u.kind).collect(),
        m.units.iter().map(|u| u.name.clone()).collect(),
    )
}

fn simulate(m: &Machine, spec: &str, tasks: &[SimTask]) -> (Vec<Call>, Record) {
    let (mut policy, log) = Recording::new(hetsched_policies::build(spec, 9).unwrap());
    let mut rec = record_for(m, spec);
    let summary = Simulation::new(m, tasks.to_vec(), &Config::default())
        .run(&mut policy, &mut rec)
        .unwrap();
    assert_eq!(summary.unfinished, 0, "{spec}");
    let log = log.lock().unwrap().clone();
    (log, rec)
}

/// Drives the arbiter with the stimuli of the simulator's log.
fn replay(m: &Machine, spec: &str, tasks: &[SimTask], script: &[Call]) -> (Vec<Call>, Record) {
    let (policy, log) = Recording::new(hetsched_policies::build(spec, 9).unwrap());
    let clock = ManualClock::default();
    let devices = hetsched_live::devices::described(m);
    let mut a = Arbiter::with_clock(
        m.clone(),
        devices,
        Box::new(policy),
        Box::new(clock.clone()),
    );
    a.start_recording();
    let client = |task: u64| task + 1;
    for call in script {
        match *call {
            Call::Submit { t_ns, task, .. } => {
                clock.set(t_ns);
                a.alloc(client(task), &meta(&tasks[task as usize])).unwrap();
            }
            Call::Checkpoint { t_ns, task, .. } => {
                clock.set(t_ns);
                if a.rerequest(client(task)).unwrap() != Verdict::Keep {
                    a.free(client(task), false).unwrap();
                    a.alloc(client(task), &meta(&tasks[task as usize])).unwrap();
                }
            }
            Call::Complete { t_ns, task, .. } => {
                clock.set(t_ns);
                a.free(client(task), true).unwrap();
            }
            Call::Tick { t_ns, .. } => {
                clock.set(t_ns);
                a.expire();
            }
            Call::Pick { .. } | Call::TimeSlice { .. } => {}
        }
    }
    assert_eq!(a.violations(), 0, "{spec}");
    let log = log.lock().unwrap().clone();
    (log, a.record().unwrap())
}

/// Where two logs first differ, with a little context.
fn first_difference<T: std::fmt::Debug + PartialEq>(a: &[T], b: &[T]) -> Option<String> {
    let i = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))?;
    let from = i.saturating_sub(3);
    Some(format!(
        "entry {i} of {} / {}:\nsimulator: {:#?}\nlive:      {:#?}",
        a.len(),
        b.len(),
        &a[from.min(a.len())..(i + 1).min(a.len())],
        &b[from.min(b.len())..(i + 1).min(b.len())]
    ))
}

#[test]
fn every_policy_decides_the_same_in_the_simulator_and_live() {
    let scripts = [
        (machine(false), script(1, 60, false)),
        (machine(true), script(2, 60, true)),
        (machine(true), script(3, 120, true)),
    ];
    // What the scripts made the policies do, over all of them: the paths compared.
    let (mut yields, mut migrations, mut tick_moves, mut steals, mut entries) = (0, 0, 0, 0, 0);
    for spec in hetsched_policies::test_specs() {
        for (i, (m, tasks)) in scripts.iter().enumerate() {
            let (mut sim_log, mut sim_rec) = simulate(m, spec, tasks);
            // Live cannot know a task's modelled memory-bound fraction either.
            for c in &mut sim_log {
                if let Call::Tick { samples, .. } = c {
                    samples.iter_mut().for_each(|s| s.memory_bound = None);
                }
            }
            entries += sim_log.len();
            for c in &sim_log {
                match c {
                    Call::Checkpoint { answer, .. } => match answer {
                        CheckpointDecision::Yield => yields += 1,
                        CheckpointDecision::Migrate(_) => migrations += 1,
                        CheckpointDecision::Continue => {}
                    },
                    Call::Tick { answer, .. } => tick_moves += answer.len(),
                    Call::Pick {
                        answer: PickDecision::Steal { .. },
                        ..
                    } => steals += 1,
                    _ => {}
                }
            }
            assert!(
                sim_log.iter().any(|c| matches!(c, Call::Pick { .. })),
                "{spec}"
            );
            let (live_log, live_rec) = replay(m, spec, tasks, &sim_log);
            if let Some(d) = first_difference(&sim_log, &live_log) {
                panic!("{spec}, script {i}: decision logs differ at {d}");
            }
            // Live cannot know how long a task would take alone.
            for e in &mut sim_rec.events {
                if let EventKind::Submit { ideal_ns, .. } = &mut e.kind {
                    *ideal_ns = 0;
                }
            }
            if let Some(d) = first_difference(&sim_rec.events, &live_rec.events) {
                panic!("{spec}, script {i}: run records differ at {d}");
            }
            live_rec.check().unwrap();
        }
    }
    let covered = (yields, migrations, tick_moves, steals, entries);
    assert!(
        yields > 100 && migrations > 0 && tick_moves > 0 && steals > 10 && entries > 10_000,
        "(yields, migrations, tick moves, steals, calls) = {covered:?}"
    );
}

// ---- Task graphs ----

/// One CPU (unit 0) and one GPU (unit 1) whose link moves 1 byte/ns with no latency:
/// a 4 MB handle takes 4 ms each way.
fn graph_machine() -> Machine {
    let text = "name = \"h\"\n[[package]]\ncores = 1\n[[accelerator]]\ntype = \"gpu\"\nname = \"gpu0\"\nlink_bandwidth = 1000000000\nlink_latency_us = 0\n";
    machine_from_toml(text, "h.toml").unwrap()
}

/// Kernels and their times (ms) on the CPU and the GPU, 100 runs each.
fn graph_models() -> PerfModels {
    let mut m = PerfModels::default();
    for (kernel, cpu, gpu) in [
        ("init", 2.0, 3.0),
        ("gemm", 20.0, 2.0),
        ("reduce", 3.0, 6.0),
    ] {
        for (unit_type, ms) in [(UnitType::Cpu, cpu), (UnitType::Gpu, gpu)] {
            let arch = Arch {
                unit_type,
                capacity: CAPACITY_SCALE,
                footprint: 0,
            };
            m.pool(
                kernel,
                arch,
                &History::from_stats(100, ms * 1e-3, 0.0).unwrap(),
            );
        }
    }
    m
}

/// Handles A, B, C, D of 4 MB, and seven tasks in submission order:
/// ```text
/// 0 init   W A        3 gemm   R B, RW C   (after 1, 2)    6 reduce R D (after 5)
/// 1 init   W B        4 reduce R A, RW D   (after 0)
/// 2 gemm   R A, RW C  (after 0)            5 reduce R C, RW D (after 3, 4)
/// ```
fn hand_graph() -> TaskGraph {
    use Mode::{R, RW, W};
    let (a, b, c, d) = (0, 1, 2, 3);
    let task = |k: &str, acc: &[(u32, Mode)]| GraphTask::new(Arc::from(k), 0, acc);
    TaskGraph {
        data: vec![Data { bytes: 4_000_000 }; 4],
        tasks: vec![
            task("init", &[(a, W)]),
            task("init", &[(b, W)]),
            task("gemm", &[(a, R), (c, RW)]),
            task("gemm", &[(b, R), (c, RW)]),
            task("reduce", &[(a, R), (d, RW)]),
            task("reduce", &[(c, R), (d, RW)]),
            task("reduce", &[(d, R)]),
        ],
    }
}

/// (task, unit, start ms, end ms) of every task, by task.
fn schedule(rec: &Record) -> Vec<(u64, u32, f64, f64)> {
    let mut s: Vec<(u64, u32, f64, f64)> = Vec::new();
    for e in &rec.events {
        let ms = e.t_ns as f64 * 1e-6;
        match e.kind {
            EventKind::Start { unit, .. } => s.push((e.task, unit, ms, f64::NAN)),
            EventKind::Complete { .. } => {
                s.iter_mut().find(|x| x.0 == e.task).unwrap().3 = ms;
            }
            _ => {}
        }
    }
    s.sort_by_key(|x| x.0);
    s
}

/// (handle, from node, to node, start ms, end ms) of every copy, in order.
fn transfers(rec: &Record) -> Vec<(u32, u32, u32, f64, f64)> {
    rec.transfers
        .iter()
        .map(|t| {
            (
                t.handle,
                t.from,
                t.to,
                t.start_ns as f64 * 1e-6,
                t.end_ns as f64 * 1e-6,
            )
        })
        .collect()
}

/// The hand graph under `spec` in the simulator, then the arbiter driven as clients
/// would: the graph declared, every task allocated at once (those not ready wait), each
/// freed when the simulator completed it. Both logs and records must be the same.
fn graph_in_both_engines(spec: &str) -> Record {
    const UID: u32 = 1000;
    const OWNER: u64 = 1_000_000;
    let m = graph_machine();
    let models = graph_models();
    let graph = Arc::new(hand_graph());
    let tasks = GraphTasks::new(graph.clone(), &m, &models, Durations::Mean).unwrap();
    let config = Config {
        models: models.clone(),
        ..Config::default()
    };
    let (mut policy, log) = Recording::new(hetsched_policies::build(spec, 9).unwrap());
    let mut sim_rec = record_for(&m, spec);
    let summary = Simulation::graph(&m, &tasks, &config)
        .run(&mut policy, &mut sim_rec)
        .unwrap();
    assert_eq!(summary.unfinished, 0, "{spec}");
    let sim_log = log.lock().unwrap().clone();

    let (policy, log) = Recording::new(hetsched_policies::build(spec, 9).unwrap());
    let clock = ManualClock::default();
    let mut a = Arbiter::with_clock(
        m.clone(),
        hetsched_live::devices::described(&m),
        Box::new(policy),
        Box::new(clock.clone()),
    );
    if a.wants_models() {
        a.set_models(models.clone());
    }
    a.start_recording();
    let info: Vec<GraphTaskInfo> = graph.tasks.iter().map(GraphTaskInfo::from).collect();
    let data: Vec<u64> = graph.data.iter().map(|d| d.bytes).collect();
    // In two parts, as a client whose graph fills more than a frame sends it.
    assert_eq!(a.graph_part(OWNER, UID, &data, &info[..3], false), Ok(None));
    assert_eq!(
        a.graph_part(OWNER, UID, &[], &info[3..], true),
        Ok(Some((0, 7)))
    );
    let client = |task: u64| task + 1;
    for i in 0..graph.tasks.len() as u32 {
        let meta = MetaInfo {
            kind: "anything: the graph names the kernel".into(),
            affinity: tasks.task(i, 0).meta.affinity,
            graph_task: Some(i),
            ..MetaInfo::default()
        };
        a.alloc_for(client(u64::from(i)), &meta, UID, None).unwrap();
    }
    for call in &sim_log {
        match *call {
            // Graph tasks arrive as their predecessors are freed.
            Call::Submit { .. } | Call::Pick { .. } | Call::TimeSlice { .. } => {}
            Call::Complete { t_ns, task, .. } => {
                clock.set(t_ns);
                a.free(client(task), true).unwrap();
            }
            ref other => panic!("{spec}: no checkpoint or tick expected here: {other:?}"),
        }
    }
    assert_eq!(a.violations(), 0, "{spec}");
    let live_log = log.lock().unwrap().clone();
    if let Some(d) = first_difference(&sim_log, &live_log) {
        panic!("{spec}: decision logs differ at {d}");
    }
    let live_rec = a.record().unwrap();
    for e in &mut sim_rec.events {
        if let EventKind::Submit { ideal_ns, .. } = &mut e.kind {
            *ideal_ns = 0;
        }
    }
    if let Some(d) = first_difference(&sim_rec.events, &live_rec.events) {
        panic!("{spec}: run records differ at {d}");
    }
    assert_eq!(sim_rec.transfers, live_rec.transfers, "{spec}");
    live_rec.check().unwrap();
    live_rec
}

const CPU: u32 = 0;
const GPU: u32 = 1;
const HOST: u32 = 0;
const DEV: u32 = 1;
const A: u32 = 0;
const B: u32 = 1;
const C: u32 = 2;
const D: u32 = 3;

/// eager: one central queue, an idle unit takes its head (units asked in id order).
/// 0 ms: T0 → CPU (2 ms), T1 → GPU (3 ms). 2: T0 frees T2 and T4; the CPU is idle and
/// takes T2 (gemm, 20 ms on the CPU); T4 waits. 3: the GPU takes T4, copying A and D in
/// (4 ms each, one after the other on the link: ready at 11), computes 6 ms: 17.
/// 22: T2 frees T3; the CPU takes it, copying B back from the GPU (22–26): 46. 46: T5
/// on the CPU, D back from the GPU (46–50): 53. 53: T6 on the CPU: 56.
#[test]
fn eager_runs_the_hand_graph_as_computed_in_both_engines() {
    let rec = graph_in_both_engines("eager");
    assert_eq!(
        schedule(&rec),
        [
            (0, CPU, 0.0, 2.0),
            (1, GPU, 0.0, 3.0),
            (2, CPU, 2.0, 22.0),
            (3, CPU, 22.0, 46.0),
            (4, GPU, 3.0, 17.0),
            (5, CPU, 46.0, 53.0),
            (6, CPU, 53.0, 56.0),
        ]
    );
    assert_eq!(
        transfers(&rec),
        [
            (A, HOST, DEV, 3.0, 7.0),
            (D, HOST, DEV, 7.0, 11.0),
            (B, DEV, HOST, 22.0, 26.0),
            (D, DEV, HOST, 46.0, 50.0),
        ]
    );
}

/// dmda (α = β = 1): least `end − best end + copies`. 0: T0 → CPU (ends 2 vs 3);
/// T1 → GPU (3 vs the CPU's 2 + 2). 2: T2 (gemm): GPU ends 5 (T1 expected to run
/// its mean, 3 ms, from now: a run with no recent samples longer than its elapsed time
/// counts as just started) + 2 = 7, copies A and C 8 ms: fitness 8; CPU ends 22:
/// fitness 15 → GPU; queued there, A and C are prefetched (2–6, 6–10). T4 (reduce):
/// CPU 5, no copy; GPU 5 + 10 queued + 6 = 21 → CPU (2–5). 3: the GPU starts T2, which
/// waits for C until 10: ends 12. 12: T3 → GPU (ends 14, its data there) vs CPU
/// (32, 8 ms of copies). 14: T5: CPU ends 17 + copy C 4 → 4; GPU 20 + copy D 4 → 7:
/// CPU, C prefetched back (14–18), ends 21. 21: T6 → CPU (24 vs 27 + 4).
#[test]
fn dmda_runs_the_hand_graph_as_computed_in_both_engines() {
    let rec = graph_in_both_engines("dmda");
    assert_eq!(
        schedule(&rec),
        [
            (0, CPU, 0.0, 2.0),
            (1, GPU, 0.0, 3.0),
            (2, GPU, 3.0, 12.0),
            (3, GPU, 12.0, 14.0),
            (4, CPU, 2.0, 5.0),
            (5, CPU, 14.0, 21.0),
            (6, CPU, 21.0, 24.0),
        ]
    );
    assert_eq!(
        transfers(&rec),
        [
            (A, HOST, DEV, 2.0, 6.0),
            (C, HOST, DEV, 6.0, 10.0),
            (C, DEV, HOST, 14.0, 18.0),
        ]
    );
}

/// heft: mean costs init 2.5, gemm 11, reduce 4.5 ms; a 4 MB copy 2 ms on average over
/// the four (unit, unit) pairs. Upward ranks: T6 4.5, T5 11, T4 17.5, T3 24, T2 37,
/// T1 28.5, T0 41.5, so the plan takes T0, T2, T1, T3, T4, T5, T6: T0 CPU 0–2; T2 GPU
/// 6–8 (A from the CPU at 2 + 4); T1 GPU 0–3 (inserted before T2); T3 GPU 8–10; T4 CPU
/// 2–5; T5 GPU 10–16 (CPU: C back by 14, 17); T6 GPU 16–22. The run keeps each unit's
/// planned order: T2 waits for C (6–10) and ends at 12, T3 at 14, T5 waits for D
/// (14–18) and ends at 24, T6 at 30: the plan's copies were optimistic.
#[test]
fn heft_runs_the_hand_graph_as_computed_in_both_engines() {
    let rec = graph_in_both_engines("heft");
    assert_eq!(
        schedule(&rec),
        [
            (0, CPU, 0.0, 2.0),
            (1, GPU, 0.0, 3.0),
            (2, GPU, 3.0, 12.0),
            (3, GPU, 12.0, 14.0),
            (4, CPU, 2.0, 5.0),
            (5, GPU, 14.0, 24.0),
            (6, GPU, 24.0, 30.0),
        ]
    );
    assert_eq!(
        transfers(&rec),
        [
            (A, HOST, DEV, 2.0, 6.0),
            (C, HOST, DEV, 6.0, 10.0),
            (D, HOST, DEV, 14.0, 18.0),
        ]
    );
}
