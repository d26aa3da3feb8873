//! numa-amp by hand on a 2-node machine with one fast core (node 0) and one slow core
//! (node 1): the AMP-list and NUMA-list of two profiled tasks, the lazy trigger that
//! swaps them, the eager trigger when the fast core is released, and page migration
//! with the thread and its cost; and the baselines on the same machine (cfs-cap pulls a
//! misfit task to the released fast core, cfs does not).

use hetsched_core::policy::Policy;
use hetsched_core::record::{EventKind, Record};
use hetsched_core::task::Placement;
use hetsched_policies::numa_amp::NumaAmp;
use hetsched_policies::params::Params;
use hetsched_sim::engine::REFERENCE_GHZ;
use hetsched_sim::{machine_from_toml, Config, RunSummary, SimTask, Simulation};

const MS: u64 = 1_000_000;

fn machine() -> hetsched_core::machine::Machine {
    let text = r#"
name = "fast-slow-2node"
distances = [[10, 20], [20, 10]]
[[cpu_kind]]
name = "slow"
capacity = 512
[[cpu_kind]]
name = "fast"
capacity = 1024
[[package]]
cores = 1
kind = ["fast"]
[[package]]
cores = 1
kind = ["slow"]
[[numa_node]]
memory = "1 GiB"
[[numa_node]]
memory = "1 GiB"
"#;
    machine_from_toml(text, "fast-slow-2node.toml").unwrap()
}

fn policy() -> NumaAmp {
    let (_, mut p) = Params::parse("numa-amp").unwrap();
    NumaAmp::from_params("numa-amp", &mut p).unwrap()
}

/// A task with core CPI 1 and `mpki` LLC misses per 1,000 instructions under the same
/// model as the policy (miss latency 100 ns, 2 GHz reference clock), memory on `home`.
fn task(id: u64, work_s: f64, mpki: f64, home: u32) -> SimTask {
    let ns_per_instruction = 1.0 / REFERENCE_GHZ + mpki / 1000.0 * 100.0;
    let mut t = SimTask::cpu(id, work_s, 0);
    t.set_numa_home(Some(home));
    t.model.instructions_per_s = 1e9 / ns_per_instruction;
    t.model.llc_mpki = mpki;
    t.model.memory_bound = mpki / 1000.0 * 100.0 / ns_per_instruction;
    t
}

fn simulate<P: Policy + ?Sized>(
    policy: &mut P,
    tasks: Vec<SimTask>,
    until_ns: Option<u64>,
) -> (Record, RunSummary) {
    let m = machine();
    let mut rec = Record::new(
        "numa-amp",
        m.units.iter().map(|u| u.kind).collect(),
        m.units.iter().map(|u| u.name.clone()).collect(),
    );
    let config = Config {
        max_time_ns: until_ns,
        ..Config::default()
    };
    let summary = Simulation::new(&m, tasks, &config)
        .run(policy, &mut rec)
        .unwrap();
    rec.check().unwrap();
    (rec, summary)
}

fn migrations(rec: &Record) -> Vec<(u64, u64, Placement, u32)> {
    rec.events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Migrate { from, to } => Some((e.t_ns, e.task, from, to)),
            _ => None,
        })
        .collect()
}

fn end_ns(rec: &Record, task: u64) -> u64 {
    rec.outcomes()[task as usize].end_ns.unwrap()
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-6, "{a} != {b}");
}

/// Task 0 is memory-bound (20 MPKI: m = 2 ns, c = 1; SF = (1 + 2) / (0.5 + 2) = 1.2),
/// task 1 compute-bound (0 MPKI: SF = 2). Task 0 arrives first and takes the fast
/// core (share 1 against 2); task 1's shares tie (2 and 2) and its memory is on node 1,
/// so it takes the slow core. The first tick (10 ms) profiles both: AMP-list [1, 0];
/// NUMA-list [0 on node 0 (local: CDF 1 against 0.2 + 0.8 × 2 = 1.8), 1 on node 1
/// (CDF 1 on both, node 1 has fewer tasks)]. Lazy trigger: 2 > 1.2 × 1.1, so they swap
/// at their next slice end (12 ms). The NUMA-list does not pull task 0 back (no core
/// of its capacity on node 0), and neither task's pages move: task 0's node is node 0,
/// task 1 is a turtle.
#[test]
fn lists_and_the_lazy_trigger_by_hand() {
    let tasks = || vec![task(0, 1.0, 20.0, 0), task(1, 1.0, 0.0, 1)];
    let mut p = policy();
    simulate(&mut p, tasks(), Some(15 * MS));
    let lists = p.lists().clone();
    assert_eq!(lists.amp.iter().map(|e| e.0).collect::<Vec<_>>(), [1, 0]);
    close(lists.amp[0].1, 2.0);
    close(lists.amp[1].1, 1.2);
    assert_eq!(lists.numa.len(), 2);
    assert_eq!((lists.numa[0].0, lists.numa[0].2), (0, Some(0)));
    close(lists.numa[0].1, 20.0);
    assert_eq!((lists.numa[1].0, lists.numa[1].2), (1, Some(1)));
    assert_eq!(p.triggers().lazy, 1);

    let mut p = policy();
    let (rec, summary) = simulate(&mut p, tasks(), None);
    assert_eq!(summary.completed, 2);
    assert_eq!(
        migrations(&rec),
        [
            (12 * MS, 0, Placement::Running(0), 1),
            (12 * MS, 1, Placement::Running(1), 0),
            (1008 * MS, 0, Placement::Running(1), 0),
        ]
    );
    assert_eq!(p.triggers().lazy, 1, "no swap back (hysteresis)");
    assert_eq!(p.triggers().page_moves, 0);
    // Task 1 (compute): 12 ms on the slow core = 6 ms of work, then 994 ms on the fast
    // core: ends at 1006 ms. Task 0: 12 ms on the fast core, local (0.2 + 0.8 = 1 s per
    // work s) = 12 ms of work; then on the slow core, remote memory (0.2 × 2 + 0.8 × 2
    // = 2 s per work s) until its slice end after the fast core is released (eager:
    // 1008 ms), 498 ms of work; the last 490 ms run on the fast core: ends at 1498 ms.
    assert_eq!(end_ns(&rec, 1), 1006 * MS);
    assert_eq!(end_ns(&rec, 0), 1498 * MS);
}

/// Two compute-bound tasks: task 0 (100 ms) on the fast core, task 1 (200 ms) on the
/// slow one. When task 0 ends at 100 ms, the fast core is released; the tick at 100 ms
/// sends task 1 there at its next slice end (102 ms: 6 ms slices from 0). By then it
/// did 51 ms of work; the remaining 149 ms on the fast core end at 251 ms.
#[test]
fn eager_trigger_on_a_released_fast_core() {
    let mut p = policy();
    let (rec, _) = simulate(
        &mut p,
        vec![task(0, 0.1, 0.0, 0), task(1, 0.2, 0.0, 1)],
        None,
    );
    assert_eq!(end_ns(&rec, 0), 100 * MS);
    assert_eq!(migrations(&rec), [(102 * MS, 1, Placement::Running(1), 0)]);
    assert_eq!(end_ns(&rec, 1), 251 * MS);
    assert!(p.triggers().eager >= 1);
}

/// A memory-bound task (20 MPKI, μ = 0.8) whose memory is on node 1 starts on the fast
/// core of node 0: its pages follow it (1 of at most 2 moves), 100 MB at 1 GB/s =
/// 100 ms, then 1 s of work runs local (0.2 + 0.8 = 1 s): it ends at 1.1 s. Without page
/// moves it runs remote: 0.2 + 0.8 × 2 = 1.8 s.
#[test]
fn pages_follow_the_thread_at_a_cost() {
    let with_memory = || {
        let mut t = task(0, 1.0, 20.0, 1);
        t.model.memory_bytes = 100e6;
        vec![t]
    };
    let mut p = policy();
    let (rec, _) = simulate(&mut p, with_memory(), None);
    assert_eq!(p.triggers().page_moves, 1);
    assert_eq!(end_ns(&rec, 0), 1100 * MS);

    let (_, mut params) = Params::parse("numa-amp:page_moves=0").unwrap();
    let mut p = NumaAmp::from_params("numa-amp:page_moves=0", &mut params).unwrap();
    let (rec, _) = simulate(&mut p, with_memory(), None);
    assert_eq!(p.triggers().page_moves, 0);
    // (Each 6 ms slice rounds its time up to the nanosecond.)
    assert!(
        end_ns(&rec, 0).abs_diff(1800 * MS) < 1_000,
        "{}",
        end_ns(&rec, 0)
    );
}

/// The eager case under the baselines. cfs-cap: task 0 on the fast core (least load,
/// then biggest), task 1 on the slow one, busy 100% of each 4 ms balance period: a
/// misfit (512 × 1280 ≥ 512 × 1024). When the fast core is free (100 ms), task 1 moves
/// there at its next slice end (102 ms; 6 ms slices alone on its unit) and ends at
/// 251 ms, as under numa-amp. cfs: count balancing sees one task per unit, task 1 stays
/// on the slow core: 200 ms of work take 400 ms.
#[test]
fn cfs_cap_pulls_a_misfit_to_the_released_fast_core_and_cfs_does_not() {
    let tasks = || vec![task(0, 0.1, 0.0, 0), task(1, 0.2, 0.0, 1)];
    let mut cap = hetsched_policies::build("cfs-cap", 0).unwrap();
    let (rec, _) = simulate(cap.as_mut(), tasks(), None);
    assert_eq!(migrations(&rec), [(102 * MS, 1, Placement::Running(1), 0)]);
    assert_eq!(end_ns(&rec, 1), 251 * MS);

    let mut cfs = hetsched_policies::build("cfs", 0).unwrap();
    let (rec, _) = simulate(cfs.as_mut(), tasks(), None);
    assert!(migrations(&rec).is_empty());
    assert_eq!(end_ns(&rec, 0), 100 * MS);
    assert_eq!(end_ns(&rec, 1), 400 * MS);
}
