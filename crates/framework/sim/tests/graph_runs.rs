//! Task graphs run by the simulator: dependencies, data copies over links, durations
//! from performance models. Hand-computed schedules first, then StarPU's Cholesky on
//! one of INRIA's calibrated machines (skipped, saying so, where Debian's
//! `starpu-examples` is not installed).

use hetsched_core::graph::{Data, GraphTask, Mode, TaskGraph};
use hetsched_core::machine::{Machine, UnitType, CAPACITY_SCALE};
use hetsched_core::perf_model::{Arch, History, PerfModels};
use hetsched_core::record::{EventKind, Record};
use hetsched_sim::graphs::{cholesky, Durations, GraphTasks, Precision, Tiled};
use hetsched_sim::{machine_from_toml, Config, RunSummary, Simulation};
use std::path::Path;
use std::sync::Arc;

const MS: u64 = 1_000_000;

/// One CPU and one GPU whose link moves 1 GB/s with 1 µs of latency.
fn machine(gpus: usize) -> Machine {
    let mut text = "name = \"g\"\n[[package]]\ncores = 1\n".to_string();
    for i in 0..gpus {
        text += &format!(
            "[[accelerator]]\ntype = \"gpu\"\nname = \"gpu{i}\"\nlink_bandwidth = 1000000000\nlink_latency_us = 1\n"
        );
    }
    machine_from_toml(&text, "g.toml").unwrap()
}

/// Kernel `k` takes `cpu_ms` on the CPU and `gpu_ms` on a GPU (100 runs each).
fn models(cpu_ms: f64, gpu_ms: f64) -> PerfModels {
    let mut m = PerfModels::default();
    for (kind, ms) in [(UnitType::Cpu, cpu_ms), (UnitType::Gpu, gpu_ms)] {
        let arch = Arch {
            unit_type: kind,
            capacity: CAPACITY_SCALE,
            footprint: 7,
        };
        m.pool(
            "k",
            arch,
            &History::from_stats(100, ms * 1e-3, 0.0).unwrap(),
        );
    }
    m
}

fn task(accesses: &[(u32, Mode)]) -> GraphTask {
    GraphTask::new(Arc::from("k"), 7, accesses)
}

fn run(
    m: &Machine,
    graph: TaskGraph,
    models: &PerfModels,
    policy: &str,
    config: &Config,
) -> (Record, RunSummary) {
    let tasks = GraphTasks::new(Arc::new(graph), m, models, Durations::Mean).unwrap();
    let config = Config {
        models: models.clone(),
        ..config.clone()
    };
    Simulation::graph(m, &tasks, &config)
        .record_spec(policy, 1)
        .unwrap()
}

/// (task, unit, start, completion) of every task, in completion order.
fn schedule(rec: &Record) -> Vec<(u64, u32, u64, u64)> {
    let mut starts = std::collections::HashMap::new();
    let mut out = Vec::new();
    for e in &rec.events {
        match e.kind {
            EventKind::Start { unit, .. } => {
                starts.insert(e.task, (unit, e.t_ns));
            }
            EventKind::Complete { .. } => {
                let (unit, start) = starts[&e.task];
                out.push((e.task, unit, start, e.t_ns));
            }
            _ => {}
        }
    }
    out
}

use Mode::{R, RW, W};

#[test]
fn a_chain_waits_for_its_predecessor_and_its_data() {
    // Two tasks updating one 100 MB handle in turn, on the GPU (10 ms there, 1 s on the
    // CPU): the first waits for the copy (1 µs + 100 ms), runs 10 ms; the second finds
    // the data on the GPU and runs at once.
    let m = machine(1);
    let g = TaskGraph {
        data: vec![Data { bytes: 100_000_000 }],
        tasks: vec![task(&[(0, RW)]), task(&[(0, RW)])],
    };
    let (rec, s) = run(&m, g, &models(1000.0, 10.0), "dmda", &Config::default());
    let copy = 100 * MS + 1000;
    assert_eq!(
        schedule(&rec),
        vec![
            (0, 1, 0, copy + 10 * MS),
            (1, 1, copy + 10 * MS, copy + 20 * MS)
        ]
    );
    assert_eq!((s.completed, s.unfinished), (2, 0));
    assert_eq!((s.traffic.copies, s.traffic.bytes), (1, 100_000_000));
    // Task 1 arrived when task 0 completed, not before.
    let submit_1 = rec
        .events
        .iter()
        .find(|e| e.task == 1 && matches!(e.kind, EventKind::Submit { .. }))
        .unwrap();
    assert_eq!(submit_1.t_ns, copy + 10 * MS);
}

#[test]
fn cpu_work_needs_no_copy_and_a_gpu_write_brings_data_back() {
    // Task 0 writes A on the GPU (write-only: nothing copied in); task 1 reads A on the
    // CPU, which the policy is forced to by the models (the GPU has none for it: one
    // kernel per unit type is the test's way to pin tasks).
    let m = machine(1);
    let mut models = models(1000.0, 10.0);
    let cpu_only = Arch {
        unit_type: UnitType::Cpu,
        capacity: CAPACITY_SCALE,
        footprint: 8,
    };
    models.pool(
        "c",
        cpu_only,
        &History::from_stats(100, 0.005, 0.0).unwrap(),
    );
    let mut reader = task(&[(0, R)]);
    reader.kernel = Arc::from("c");
    reader.footprint = 8;
    let g = TaskGraph {
        data: vec![Data { bytes: 4_000_000 }],
        tasks: vec![task(&[(0, W)]), reader],
    };
    let (rec, s) = run(&m, g, &models, "dmda", &Config::default());
    // Back over the link: 1 µs + 4 ms, then 5 ms on the CPU.
    let back = 4 * MS + 1000;
    assert_eq!(
        schedule(&rec),
        vec![(0, 1, 0, 10 * MS), (1, 0, 10 * MS, 10 * MS + back + 5 * MS)]
    );
    assert_eq!(s.traffic.copies, 1);
}

#[test]
fn prefetch_overlaps_copies_with_the_running_task() {
    // Three independent 10 ms GPU tasks, each reading its own 10 MB handle (10 ms + 1
    // µs over the link). dmda queues all three on the GPU at once: with prefetch the
    // copies run back to back while the GPU computes (the GPU waits for the first copy
    // only); fetched at start, every task waits for its own copy.
    let m = machine(1);
    let g = TaskGraph {
        data: vec![Data { bytes: 10_000_000 }; 3],
        tasks: vec![task(&[(0, R)]), task(&[(1, R)]), task(&[(2, R)])],
    };
    let models = models(1000.0, 10.0);
    let copy = 10 * MS + 1000;
    let (rec, _) = run(&m, g.clone(), &models, "dmda", &Config::default());
    let end = |rec: &Record| schedule(rec).last().unwrap().3;
    // Copies end at copy, 2·copy, 3·copy; each task starts when its copy and the
    // previous task are done.
    assert_eq!(end(&rec), 3 * copy + 10 * MS);
    let at_start = Config {
        fetch_at_start: true,
        ..Config::default()
    };
    let (rec, _) = run(&m, g, &models, "dmda", &at_start);
    assert_eq!(end(&rec), 3 * (copy + 10 * MS));
}

#[test]
fn the_transfer_estimate_steers_dmda_to_where_the_data_is() {
    // Two GPUs (units 1 and 2). At 0: task 0 writes A (1 GB, a second over a link) on
    // GPU 1 (0–10 ms); an independent 20 ms task goes to GPU 2 (0–20 ms) and a 30 ms
    // one to GPU 1 (10–40 ms). At 10 ms task 3 reads A: GPU 2 would end it first
    // (20 + 10 ms, against 40 + 10 ms), but only after a second's copy. dmda weighs the
    // copy and queues it where A is: no copy at all. Without the copy term (β = 0) it
    // picks GPU 2, and A goes there through host memory (two copies).
    let m = machine(2);
    let named = |kernel: &str| GraphTask {
        kernel: Arc::from(kernel),
        ..task(&[])
    };
    let g = TaskGraph {
        data: vec![Data {
            bytes: 1_000_000_000,
        }],
        tasks: vec![
            task(&[(0, W)]),
            named("short"),
            named("long"),
            task(&[(0, R)]),
        ],
    };
    let mut models = models(1000.0, 10.0);
    for (kernel, gpu_s) in [("short", 0.020), ("long", 0.030)] {
        for (kind, s) in [(UnitType::Gpu, gpu_s), (UnitType::Cpu, 10.0)] {
            let arch = Arch {
                unit_type: kind,
                capacity: CAPACITY_SCALE,
                footprint: 7,
            };
            models.pool(kernel, arch, &History::from_stats(100, s, 0.0).unwrap());
        }
    }
    for (policy, reader_on, copies) in [("dmda", 1, 0), ("dmda:beta=0", 2, 2)] {
        let (rec, s) = run(&m, g.clone(), &models, policy, &Config::default());
        let sched = schedule(&rec);
        let unit = |t: u64| sched.iter().find(|s| s.0 == t).unwrap().1;
        assert_eq!(
            (unit(0), unit(1), unit(2)),
            (1, 2, 1),
            "{policy}: {sched:?}"
        );
        assert_eq!(unit(3), reader_on, "{policy}: {sched:?}");
        assert_eq!(s.traffic.copies, copies, "{policy}");
    }
}

#[test]
fn heft_plans_by_hand_and_its_run_copies_when_the_reader_is_ready() {
    // A diamond on one CPU and two GPUs: 0 writes A and B; 1 updates A, 2 updates B; 3
    // reads both. 100 ms on the CPU, 10 ms on a GPU, 1 MB handles (1 ms + 1 µs a hop,
    // two from GPU to GPU). HEFT's plan, by hand: 0 on GPU 0 (0–10 ms), 1 after it
    // there (10–20), 2 on GPU 1 once B is there (12.002–22.002, not 20–30 on GPU 0), 3
    // on GPU 1 once A is (22.002–32.002, not 24.002–34.002 on GPU 0). HEFT's model
    // sends A as 1 ends; the engine, as StarPU, copies it once 3 is ready and queued:
    // 3 waits 2.002 ms more than planned.
    let m = machine(2);
    let g = TaskGraph {
        data: vec![Data { bytes: 1_000_000 }; 2],
        tasks: vec![
            task(&[(0, W), (1, W)]),
            task(&[(0, RW)]),
            task(&[(1, RW)]),
            task(&[(0, R), (1, R)]),
        ],
    };
    let models = models(100.0, 10.0);
    let tasks = GraphTasks::new(Arc::new(g), &m, &models, Durations::Mean).unwrap();
    let config = Config {
        models: models.clone(),
        ..Config::default()
    };
    let mut heft = hetsched_policies::heft::Heft::from_params(
        "heft",
        &mut hetsched_policies::params::Params::parse("heft").unwrap().1,
    )
    .unwrap();
    let (rec, s) = Simulation::graph(&m, &tasks, &config)
        .record("heft", &mut heft)
        .unwrap();
    let planned = heft.planned_makespan_s().unwrap();
    assert!((planned - 0.032002).abs() < 1e-9, "planned {planned} s");
    // (task, unit, start, end); a start is when the unit is taken, before the copies.
    let hop = MS + 1000;
    assert_eq!(
        schedule(&rec),
        vec![
            (0, 1, 0, 10 * MS),
            (1, 1, 10 * MS, 20 * MS),
            (2, 2, 10 * MS, 20 * MS + 2 * hop),
            (3, 2, 20 * MS + 2 * hop, 30 * MS + 4 * hop),
        ]
    );
    assert_eq!(s.end_ns, 30 * MS + 4 * hop);
}

#[test]
fn dmdas_runs_a_queue_by_priority_and_dmda_in_order() {
    // Three independent GPU tasks (10 ms there, 1 s on the CPU), priorities 0, 1 and 5:
    // both policies queue all three on the GPU; the first starts at once, then dmda
    // runs 1 and 2 in order, dmdas 2 (priority 5) before 1.
    let m = machine(1);
    let mut tasks: Vec<GraphTask> = (0..3).map(|_| task(&[])).collect();
    tasks[1].priority = 1;
    tasks[2].priority = 5;
    let g = TaskGraph {
        data: vec![],
        tasks,
    };
    let models = models(1000.0, 10.0);
    let order = |policy: &str| -> Vec<(u64, u32)> {
        let (rec, _) = run(&m, g.clone(), &models, policy, &Config::default());
        schedule(&rec).iter().map(|s| (s.0, s.1)).collect()
    };
    assert_eq!(order("dmda"), vec![(0, 1), (1, 1), (2, 1)]);
    assert_eq!(order("dmdas"), vec![(0, 1), (2, 1), (1, 1)]);
}

#[test]
fn cpu_models_carry_to_slower_cpus_so_heft_uses_them() {
    // One fast (1024) and one slow (512) core; three independent 1 s tasks, timed on a
    // capacity-1024 CPU. Carried to the slow core (2 s there), HEFT plans 0 and 1 on
    // the fast core and 2 on the slow one: 2 s. Without, only the fast core has a
    // model: 3 s.
    let m = machine_from_toml(
        "name = \"fs\"\n[[cpu_kind]]\nname = \"slow\"\ncapacity = 512\n[[cpu_kind]]\nname = \"fast\"\ncapacity = 1024\n[[package]]\ncores = 2\nkind = [\"fast\", \"slow\"]\n",
        "fs.toml",
    )
    .unwrap();
    let mut models = PerfModels::default();
    let fast = Arch {
        unit_type: UnitType::Cpu,
        capacity: CAPACITY_SCALE,
        footprint: 7,
    };
    models.pool("k", fast, &History::from_stats(10, 1.0, 0.0).unwrap());
    let carried = hetsched_sim::graphs::tasks::models_for(&m, &models);
    let slow = Arch {
        capacity: 512,
        ..fast
    };
    assert_eq!(carried.get("k", &slow).map(|h| h.mean()), Some(2.0));
    let g = TaskGraph {
        data: vec![],
        tasks: (0..3).map(|_| task(&[])).collect(),
    };
    let makespan = |models: &PerfModels| {
        let (_, s) = run(&m, g.clone(), models, "heft", &Config::default());
        s.end_ns
    };
    assert_eq!(makespan(&carried), 2_000_000_000);
    assert_eq!(makespan(&models), 3_000_000_000);
}

#[test]
fn lws_pushes_to_the_releasing_unit_and_idle_units_steal_the_newest() {
    // A CPU and a GPU. Round robin sends the source 0 (10 ms) to the CPU and 1 (GPU
    // only, 15 ms) to the GPU. At 10 ms, 0 releases 2, 3 and 4 into the CPU's queue:
    // the CPU runs 2; at 15 ms the GPU, idle with nothing queued, steals the newest, 4;
    // at 20 ms the CPU runs 3.
    let m = machine(1);
    let mut models = models(10.0, 10.0);
    let gpu = Arch {
        unit_type: UnitType::Gpu,
        capacity: CAPACITY_SCALE,
        footprint: 7,
    };
    models.pool(
        "gpu-only",
        gpu,
        &History::from_stats(100, 0.015, 0.0).unwrap(),
    );
    let g = TaskGraph {
        data: vec![Data { bytes: 8 }; 3],
        tasks: vec![
            task(&[(0, W), (1, W), (2, W)]),
            GraphTask {
                kernel: Arc::from("gpu-only"),
                ..task(&[])
            },
            task(&[(0, RW)]),
            task(&[(1, RW)]),
            task(&[(2, RW)]),
        ],
    };
    let (rec, _) = run(&m, g, &models, "lws", &Config::default());
    let sched: Vec<(u64, u32, u64)> = schedule(&rec).iter().map(|s| (s.0, s.1, s.2)).collect();
    assert_eq!(
        sched,
        vec![
            (0, 0, 0),
            (1, 1, 0),
            (2, 0, 10 * MS),
            (4, 1, 15 * MS),
            (3, 0, 20 * MS)
        ]
    );
}

#[test]
fn a_graph_with_too_many_tasks_ready_at_once_says_so() {
    let m = machine(0);
    let g = TaskGraph {
        data: vec![],
        tasks: (0..3).map(|_| task(&[])).collect(),
    };
    let models = models(1.0, 1.0);
    let tasks = GraphTasks::new(Arc::new(g), &m, &models, Durations::Mean).unwrap();
    let config = Config {
        max_live_tasks: Some(2),
        ..Config::default()
    };
    let err = Simulation::graph(&m, &tasks, &config)
        .record_spec("fcfs", 0)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("more tasks ready at once"), "{err}");
    assert!(err.contains("at most 2 tasks live"), "{err}");
}

#[test]
fn a_task_no_unit_can_run_is_refused_before_the_run() {
    let m = machine(0);
    let mut t = task(&[]);
    t.footprint = 9;
    let g = TaskGraph {
        data: vec![],
        tasks: vec![t],
    };
    let err = GraphTasks::new(Arc::new(g), &m, &models(1.0, 1.0), Durations::Mean)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("task 0 of the graph (k, footprint 00000009)"),
        "{err}"
    );
    assert!(err.contains("cpu"), "{err}");
}

#[test]
fn seeded_durations_are_the_same_under_every_policy() {
    // Twenty independent tasks on one CPU, priorities 0 to 19: dmda runs them in task
    // order, dmdas by priority (highest first, after the first). Each task takes the
    // same drawn time under both, whatever the order.
    let m = machine(0);
    let mut models = PerfModels::default();
    let arch = Arch {
        unit_type: UnitType::Cpu,
        capacity: CAPACITY_SCALE,
        footprint: 7,
    };
    models.pool("k", arch, &History::from_stats(100, 0.01, 0.003).unwrap());
    let tasks: Vec<GraphTask> = (0..20)
        .map(|i| GraphTask {
            priority: i,
            ..task(&[])
        })
        .collect();
    let g = TaskGraph {
        data: vec![],
        tasks,
    };
    let tasks = GraphTasks::new(Arc::new(g), &m, &models, Durations::Normal { seed: 5 }).unwrap();
    let runs = |policy: &str| -> Vec<(u64, u32, u64, u64)> {
        let (rec, _) = Simulation::graph(&m, &tasks, &Config::default())
            .record_spec(policy, 1)
            .unwrap();
        schedule(&rec)
    };
    let by_task = |s: &[(u64, u32, u64, u64)]| {
        let mut d: Vec<(u64, u64)> = s.iter().map(|s| (s.0, s.3 - s.2)).collect();
        d.sort();
        d
    };
    let (dmda, dmdas) = (runs("dmda"), runs("dmdas"));
    let order = |s: &[(u64, u32, u64, u64)]| s.iter().map(|s| s.0).collect::<Vec<_>>();
    assert_ne!(order(&dmda), order(&dmdas));
    assert_eq!(by_task(&dmda), by_task(&dmdas));
    // Drawn, not the mean.
    let durations: Vec<u64> = by_task(&dmda).iter().map(|d| d.1).collect();
    assert!(durations.iter().any(|&d| d != 10 * MS), "{durations:?}");
    let mean = durations.iter().sum::<u64>() as f64 / 20.0;
    assert!((mean - 1e7).abs() < 3e6, "{mean}");
}

/// StarPU's Cholesky (8 × 8 tiles of 960) on idgraf, with idgraf's own models: every
/// task runs, once, after its predecessors; dmda and HEFT use the GPUs and finish well
/// before fcfs (whose first idle unit, a CPU, takes each task; the GPUs are ~10× faster
/// at GEMM).
#[test]
fn cholesky_on_idgraf_with_its_models() {
    let dir = Path::new(hetsched_topology::starpu::DEBIAN_DIR);
    if !dir.join("bus/idgraf.config").is_file() {
        eprintln!(
            "skipped: Debian's starpu-examples is not installed ({})",
            dir.display()
        );
        return;
    }
    let sampling = hetsched_topology::starpu::Sampling::parse("idgraf").unwrap();
    let mut m = sampling.machine().unwrap();
    m.derive_units(hetsched_core::machine::UnitGranularity::Pu);
    let models = sampling.models().unwrap();
    let graph = cholesky(&Tiled {
        tiles: 8,
        tile: 960,
        precision: Precision::Single,
    })
    .unwrap();
    let deps = graph.dependencies().unwrap();
    let n = graph.tasks.len();
    let tasks = GraphTasks::new(Arc::new(graph), &m, &models, Durations::Mean).unwrap();
    let config = Config {
        models: models.clone(),
        ..Config::default()
    };
    let mut makespans = Vec::new();
    for policy in ["dmda", "fcfs", "heft", "dmdas"] {
        let (rec, s) = Simulation::graph(&m, &tasks, &config)
            .record_spec(policy, 1)
            .unwrap();
        assert_eq!((s.completed, s.unfinished), (n as u64, 0), "{policy}");
        let sched = schedule(&rec);
        let done: std::collections::HashMap<u64, u64> =
            sched.iter().map(|&(t, _, _, end)| (t, end)).collect();
        for &(t, _, start, _) in &sched {
            for &p in deps.of(t as usize) {
                assert!(done[&(p as u64)] <= start, "{policy}: task {t} before {p}");
            }
        }
        let on_gpu = sched
            .iter()
            .filter(|s| m.units[s.1 as usize].kind == UnitType::Gpu)
            .count();
        makespans.push((policy, s.end_ns, on_gpu, s.traffic));
    }
    eprintln!("(policy, makespan ns, tasks on GPUs, traffic): {makespans:?}");
    let (dmda, fcfs, heft, dmdas) = (makespans[0], makespans[1], makespans[2], makespans[3]);
    assert!(dmda.2 > 0, "dmda used no GPU: {makespans:?}");
    assert!(dmda.3.copies > 0, "{makespans:?}");
    assert!(dmda.1 < fcfs.1, "{makespans:?}");
    assert!(heft.1 < fcfs.1, "{makespans:?}");
    assert!(dmdas.1 < fcfs.1, "{makespans:?}");
}

/// A scenario's `[graph]`: a workflow written in place runs as written; the keys that
/// cannot go together are refused, naming them.
#[test]
fn a_scenario_graph_is_one_source_and_runs_as_written() {
    use hetsched_sim::scenario::Scenario;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("two.toml"),
        "name = \"two\"\n[[package]]\ncores = 2\n",
    )
    .unwrap();
    let parse = |graph: &str| {
        Scenario::parse(
            &format!("machine = \"two.toml\"\n[graph]\n{graph}"),
            "s.toml",
            "s",
            dir.path(),
        )
    };
    // a (1 s) writes f, read by b (2 s) and c (3 s): 1 + 3 s on two cores.
    let sc = parse(
        r#"tasks = [
            { id = "b", runtime = 2.0, parents = ["a"], inputs = ["f"] },
            { id = "a", runtime = 1.0, outputs = ["f"] },
            { id = "c", runtime = 3.0, inputs = ["f"] },
        ]
        files = [{ id = "f", bytes = 1000 }]"#,
    )
    .unwrap();
    assert_eq!(sc.task_count(), 3);
    let (_, s) = Simulation::of(&sc).record_spec("fcfs", 0).unwrap();
    assert_eq!((s.completed, s.end_ns), (3, 4_000_000_000));
    let err = |graph: &str| parse(graph).err().unwrap().to_string();
    assert!(err("file = \"w.json\"\nalgorithm = \"lu\"").contains("one of"));
    assert!(
        err("files = [{ id = \"f\", bytes = 1 }]\nalgorithm = \"lu\"\ntiles = 2\ntile = 2")
            .contains("files: only with `tasks`")
    );
    assert!(err("tasks = [{ id = \"a\" }]").contains("(a): no runtime"));
    assert!(
        err("tasks = [{ id = \"a\", runtime = 1.0 }]\ndurations = \"normal\"")
            .contains("no `models`, `durations = \"normal\"` or `precision`")
    );
    assert!(err("algorithm = \"svd\"\ntiles = 2\ntile = 2").contains("unknown variant `svd`"));
    assert!(err("algorithm = \"lu\"").contains("expected `file`"));
    assert!(err("file = \"two.toml\"").contains("expected a WfFormat workflow"));
    let mixed = Scenario::parse(
        "machine = \"two.toml\"\n[[task]]\nwork = 1.0\n[graph]\ntasks = [{ id = \"a\", runtime = 1.0 }]",
        "s.toml",
        "s",
        dir.path(),
    );
    assert!(mixed
        .err()
        .unwrap()
        .to_string()
        .contains("a scenario with a [graph] has no [[task]] or [[generator]] entries"));
}

/// The lower bounds, by hand: ten independent tasks of 1 s on the CPU or 0.1 s on the
/// GPU. The critical path is one task on the GPU (0.1 s); the area bound puts x of them
/// on the CPU and 10 − x on the GPU with x = 0.1 (10 − x): 10/11 s. A chain of the
/// same ten tasks: the critical path is ten GPU runs, 1 s.
#[test]
fn lower_bounds_by_hand() {
    use hetsched_sim::graphs::bound::bound;
    let m = machine(1);
    let models = models(1000.0, 100.0);
    let bounds = |tasks: Vec<GraphTask>, data: usize| {
        let g = TaskGraph {
            data: vec![Data { bytes: 8 }; data],
            tasks,
        };
        bound(
            &GraphTasks::new(Arc::new(g), &m, &models, Durations::Mean).unwrap(),
            &m,
        )
    };
    let b = bounds((0..10).map(|_| task(&[])).collect(), 0);
    assert!((b.critical_path_s - 0.1).abs() < 1e-12, "{b:?}");
    let area = b.area_s.clone().unwrap();
    assert!((area - 10.0 / 11.0).abs() < 1e-9, "{b:?}");
    assert_eq!(b.makespan_s(), area);
    let b = bounds((0..10).map(|_| task(&[(0, RW)])).collect(), 1);
    assert!((b.critical_path_s - 1.0).abs() < 1e-12, "{b:?}");
    assert_eq!(b.makespan_s(), b.critical_path_s);
    // No run beats them: dmda and heft on the independent tasks.
    let g = TaskGraph {
        data: vec![],
        tasks: (0..10).map(|_| task(&[])).collect(),
    };
    for policy in ["dmda", "heft", "fcfs"] {
        let (_, s) = run(&m, g.clone(), &models, policy, &Config::default());
        assert!(
            s.end_ns as f64 * 1e-9 >= 10.0 / 11.0 - 1e-9,
            "{policy}: {}",
            s.end_ns
        );
    }
}

/// Chameleon's QR of 6 × 6 tiles, with models a user brings for its four kernels (no
/// StarPU calibration has them): every task runs once, after its predecessors, and no
/// policy beats the bound. Without the models it is refused, naming the kernel.
#[test]
fn qr_runs_on_the_models_a_user_brings() {
    use hetsched_sim::graphs::{bound::bound, qr};
    let m = machine(1);
    let g = qr(&Tiled {
        tiles: 6,
        tile: 480,
        precision: Precision::Single,
    })
    .unwrap();
    let mut models = PerfModels::default();
    for t in &g.tasks {
        // The GPU 10 times faster, the updates twice the factorizations.
        let ms = if t.kernel.ends_with("mqr") {
            20.0
        } else {
            10.0
        };
        for (unit_type, ms) in [(UnitType::Cpu, ms), (UnitType::Gpu, ms / 10.0)] {
            let arch = Arch {
                unit_type,
                capacity: CAPACITY_SCALE,
                footprint: t.footprint,
            };
            if models.get(&t.kernel, &arch).is_none() {
                models.pool(
                    &t.kernel,
                    arch,
                    &History::from_stats(10, ms * 1e-3, 0.0).unwrap(),
                );
            }
        }
    }
    let tasks = GraphTasks::new(Arc::new(g.clone()), &m, &models, Durations::Mean).unwrap();
    let b = bound(&tasks, &m).makespan_s();
    for policy in ["heft", "dmda", "eager"] {
        let (rec, s) = run(&m, g.clone(), &models, policy, &Config::default());
        assert_eq!(s.unfinished, 0, "{policy}");
        assert_eq!(schedule(&rec).len(), g.tasks.len(), "{policy}");
        assert!(
            s.end_ns as f64 * 1e-9 >= b - 1e-9,
            "{policy}: {} < {b}",
            s.end_ns
        );
    }
    let e = GraphTasks::new(Arc::new(g), &m, &PerfModels::default(), Durations::Mean)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("task 0 of the graph (sgeqrt, footprint "), "{e}");
}
