//! The `affinity` policy on the engine: placement, queue limits, time-sharing, the load
//! balancer, and a property test over random workloads (affinity 0 is respected and no
//! progress is lost in migrations).

use hetsched_beisel::experiments::{ever_on, machine, simulate};
use hetsched_beisel::workload::{self, App, Devices};
use hetsched_core::machine::UnitType;
use hetsched_core::record::{EventKind, Record};
use hetsched_core::task::QueueId;
use hetsched_sim::SimTask as Task;
use proptest::prelude::*;

fn gpu_unit(rec: &Record) -> u32 {
    rec.unit_kinds
        .iter()
        .position(|&k| k == UnitType::Gpu)
        .unwrap() as u32
}

/// Unit type of each task's first queue.
fn first_kinds(rec: &Record) -> Vec<UnitType> {
    let mut kinds = Vec::new();
    for e in &rec.events {
        if let EventKind::Enqueue {
            queue: QueueId::Unit(u),
        } = e.kind
        {
            if kinds.len() == e.task as usize {
                kinds.push(rec.unit_kinds[u as usize]);
            }
        }
    }
    kinds
}

fn starts(rec: &Record, task: u64) -> usize {
    rec.events
        .iter()
        .filter(|e| e.task == task && matches!(e.kind, EventKind::Start { .. }))
        .count()
}

#[test]
fn gpu_affine_tasks_fill_the_gpu_up_to_its_queue_limit_then_go_to_cpus() {
    let m = machine().unwrap();
    let tasks = workload::md5_batch(6, 1, 0.01);
    let r = simulate(&m, "affinity:acc_limit=2", tasks).unwrap();
    // 1 running + 2 queued on the GPU, the other 3 on CPUs.
    let k = first_kinds(&r.record);
    assert_eq!(k[..3], [UnitType::Gpu; 3]);
    assert_eq!(k[3..], [UnitType::Cpu; 3]);
}

#[test]
fn equal_affinity_ties_go_to_the_less_loaded_unit() {
    let m = machine().unwrap();
    // 17 prime tasks (CPU 1, GPU 1) on 16 PUs + 1 GPU: one per unit.
    let tasks: Vec<Task> = (0..17)
        .map(|i| workload::task(i, App::Prime, 1e7, Devices::Both))
        .collect();
    let r = simulate(&m, "affinity", tasks).unwrap();
    let mut units: Vec<u32> = r
        .record
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Enqueue {
                queue: QueueId::Unit(u),
            } => Some(u),
            _ => None,
        })
        .collect();
    units.sort_unstable();
    units.dedup();
    assert_eq!(units.len(), 17);
}

#[test]
fn a_single_implementation_outweighs_congestion() {
    let m = machine().unwrap();
    // GPU-only tasks beyond the queue limit still queue on the GPU.
    let tasks = workload::prime_batch(9, Devices::GpuOnly, 2, 0.001, workload::PRIME_GPU_RATIO);
    let r = simulate(&m, "affinity:acc_limit=2", tasks).unwrap();
    assert!(first_kinds(&r.record).iter().all(|&k| k == UnitType::Gpu));
}

#[test]
fn fcfs_never_yields_and_granularity_zero_switches_at_checkpoints() {
    let m = machine().unwrap();
    // Two GPU-only prime tasks of 0.2 s (74 GPU checkpoints each).
    let tasks = || {
        (0..2)
            .map(|i| workload::task(i, App::Prime, 3.5e7, Devices::GpuOnly))
            .collect::<Vec<_>>()
    };
    let fcfs = simulate(&m, "affinity:fcfs=1", tasks()).unwrap();
    assert_eq!((starts(&fcfs.record, 0), starts(&fcfs.record, 1)), (1, 1));
    let g0 = simulate(&m, "affinity:gran_ms=0", tasks()).unwrap();
    assert!(starts(&g0.record, 0) > 2 && starts(&g0.record, 1) > 2);
    // Switching costs copies: the same work takes longer.
    assert!(g0.summary.end_ns > fcfs.summary.end_ns);
    // A huge granularity behaves like FCFS.
    let big = simulate(&m, "affinity:gran_ms=1e9", tasks()).unwrap();
    assert_eq!(big.summary.end_ns, fcfs.summary.end_ns);
}

#[test]
fn a_task_running_on_a_cpu_migrates_to_the_freed_gpu_and_keeps_its_progress() {
    let m = machine().unwrap();
    // Two MD5 tasks with GPU queue limit 0: t0 runs on the GPU, t1 on a CPU; when t0
    // finishes, the GPU is offered to t1, which moves at its next checkpoint.
    let t0 = workload::task(0, App::Md5, 2e8, Devices::Both);
    let t1 = workload::task(1, App::Md5, 4e8, Devices::Both);
    let r = simulate(&m, "affinity:acc_limit=0", vec![t0, t1]).unwrap();
    let gpu = gpu_unit(&r.record);
    let o = r.record.outcomes();
    assert_eq!(o[1].migrations, 1);
    assert_eq!(o[1].unit, Some(gpu));
    // t1 did ~1 s on the CPU (≈0.5 % of its work), the rest at 100x on the GPU: it
    // ends ~1 + (4e8 − 2e6)/2.03e8 s + copies, not 2 s later (no work repeated).
    let end = o[1].end_ns.unwrap() as f64 * 1e-9;
    assert!((2.9..3.05).contains(&end), "t1 ended at {end} s");
    assert_eq!(r.summary.work_done_ns, r.summary.work_completed_ns);
}

#[test]
fn a_freed_cpu_pulls_the_waiting_task_from_the_longer_queue() {
    let m = machine().unwrap();
    // CPU-only tasks: 16 long ones fill the PUs, 3 more queue (on PUs 0, 1, 2). A short
    // task on PU 3's queue? No: placement spreads by load, so queues are 1 long each.
    // Task 16..18 wait on PUs 0..2; PU 15's task is short, so PU 15 frees first and
    // pulls a waiting task (late binding) instead of idling.
    let mut tasks: Vec<Task> = (0..19).map(|i| Task::cpu(i, 10.0, 0)).collect();
    tasks[15].model.work_s = 1.0;
    let r = simulate(&m, "affinity:cpu_gran_ms=1e9", tasks).unwrap();
    let steals = r.record.metrics().steals;
    assert!(steals >= 1, "no pull");
    // The pulled task started at 1 s instead of 10 s.
    let first_start = r.record.outcomes()[16..]
        .iter()
        .map(|o| o.first_start_ns.unwrap())
        .min()
        .unwrap();
    assert_eq!(first_start, 1_000_000_000);
}

#[test]
fn an_idle_cpu_pulls_a_task_that_yields_the_gpu_without_having_freed_since() {
    let m = machine().unwrap();
    // 16 CPU-only tasks of 0.5 s fill the PUs, so prime task P (GPU 1 = CPU 1) starts on
    // the GPU and MD5 task M (GPU 2 > CPU 1) queues there. At 0.5 s the PUs free with
    // nothing they may pull (M is not moved to a lower affinity). When P yields the GPU
    // to M after its 4 s granularity, the idle PUs have not freed since; the paper's
    // balancer still wakes P for an idle unit, so P continues on a CPU at once.
    let mut tasks: Vec<Task> = (0..16).map(|i| Task::cpu(i, 0.5, 0)).collect();
    tasks.push(workload::task(16, App::Prime, 1.75e8 * 20.0, Devices::Both));
    tasks.push(workload::task(17, App::Md5, 2.03e8 * 8.0, Devices::Both));
    let r = simulate(&m, "affinity", tasks).unwrap();
    let gpu = gpu_unit(&r.record);
    let k = first_kinds(&r.record);
    assert_eq!((k[16], k[17]), (UnitType::Gpu, UnitType::Gpu));
    assert!(
        ever_on(&r.record, 16, UnitType::Cpu),
        "P never left the GPU"
    );
    // P resumed on a CPU right when M took the GPU (not after M's 8 s).
    let m_start = r
        .record
        .events
        .iter()
        .find(|e| e.task == 17 && matches!(e.kind, EventKind::Start { unit, .. } if unit == gpu))
        .unwrap()
        .t_ns;
    let p_cpu_start = r
        .record
        .events
        .iter()
        .find(|e| {
            e.task == 16
                && matches!(e.kind, EventKind::Start { unit, .. } if r.record.unit_kinds[unit as usize] == UnitType::Cpu)
        })
        .unwrap()
        .t_ns;
    assert!(
        p_cpu_start <= m_start + 1_000_000,
        "P restarted on a CPU at {p_cpu_start} ns, M took the GPU at {m_start} ns"
    );
}

fn arb_task(id: u64) -> impl Strategy<Value = Task> {
    (
        0u8..3,
        0u8..4,
        1e5f64..5e8,
        0u64..2_000_000_000,
        any::<bool>(),
    )
        .prop_map(move |(cpu, gpu, items, arrival, md5)| {
            let app = if md5 { App::Md5 } else { App::Prime };
            let mut t = workload::task(id, app, items, Devices::Both);
            let cpu = if gpu == 0 { cpu.max(1) } else { cpu };
            t.affinity.set(UnitType::Cpu, cpu as f64);
            t.affinity.set(UnitType::Gpu, gpu as f64);
            t.arrival_ns = arrival;
            t
        })
}

fn arb_tasks() -> impl Strategy<Value = Vec<Task>> {
    (1usize..40).prop_flat_map(|n| {
        (0..n as u64)
            .map(arb_task)
            .collect::<Vec<_>>()
            .prop_map(|mut ts| {
                ts.sort_by_key(|t| t.arrival_ns);
                for (i, t) in ts.iter_mut().enumerate() {
                    t.id = i as u64;
                }
                ts
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn affinity_zero_is_never_placed_and_no_progress_is_lost(
        tasks in arb_tasks(),
        gran in prop_oneof![Just(0.0), Just(5.0), Just(100.0), Just(4000.0)],
        fcfs in any::<bool>(),
        limit in 0u64..4,
    ) {
        let m = machine().unwrap();
        let spec = format!("affinity:gran_ms={gran},fcfs={},acc_limit={limit}", fcfs as u8);
        let r = simulate(&m, &spec, tasks.clone()).unwrap();
        prop_assert_eq!(r.summary.completed as usize, tasks.len());
        prop_assert_eq!(r.summary.work_done_ns, r.summary.work_completed_ns);
        let submitted: u64 = tasks.iter().map(Task::work_ns).sum();
        prop_assert_eq!(r.summary.work_done_ns, submitted);
        for t in &tasks {
            for kind in [UnitType::Cpu, UnitType::Gpu] {
                if !t.affinity.runs_on(kind) {
                    prop_assert!(!ever_on(&r.record, t.id, kind), "task {} on {:?}", t.id, kind);
                }
            }
        }
    }
}

#[test]
fn memory_to_copy_lengthens_the_granularity() {
    let m = machine().unwrap();
    // Two GPU-only prime tasks (2.7 ms GPU checkpoints) at granularity 0: with 8 MB to
    // copy (1 ms at 8 GB/s) a task yields at almost every checkpoint; with 80 MB (10 ms)
    // it keeps the GPU for about four checkpoints, so there are fewer segments.
    let tasks = |bytes: u64| -> Vec<Task> {
        (0..2)
            .map(|i| {
                let mut t = workload::task(i, App::Prime, 3.5e7, Devices::GpuOnly);
                t.bytes_in = bytes;
                t
            })
            .collect()
    };
    let small = simulate(&m, "affinity:gran_ms=0", tasks(8_000_000)).unwrap();
    let large = simulate(&m, "affinity:gran_ms=0", tasks(80_000_000)).unwrap();
    let segs = |r: &Record| starts(r, 0) + starts(r, 1);
    assert!(
        segs(&large.record) * 2 < segs(&small.record),
        "{} vs {}",
        segs(&large.record),
        segs(&small.record)
    );
}
