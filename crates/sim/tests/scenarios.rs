//! The example scenarios in scenarios/, run through the library.

use hetsched_sim::scenario::Scenario;
use std::path::PathBuf;

fn load(name: &str) -> Scenario {
    Scenario::load(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios")
            .join(name),
    )
    .unwrap()
}

fn mean_turnaround(sc: &Scenario, policy: &str) -> f64 {
    let (rec, summary) = hetsched_sim::run_policy(sc, policy, sc.seed, &mut |_| {}).unwrap();
    assert_eq!(summary.unfinished, 0);
    rec.check().unwrap();
    rec.metrics().turnaround_s.mean
}

/// Ding's machine has 4 cores of capacity 1024 and 4 of 512. At half load most tasks
/// find several idle cores. cfs places a task on the core with the fewest tasks,
/// lowest id first, whatever its speed (ids 2, 3, 6, 7 are slow), and its balancer and
/// idle pulls count tasks too: compute-bound tasks regularly land on slow cores and take
/// twice as long. dmda compares expected completion times learned from the run times it
/// observed: an idle fast core beats an idle slow one. It knows only the mean of a type's
/// exponential sizes, not each task's, so its margin is small (it was 14 % when it could
/// read each task's true work).
#[test]
fn dmda_beats_cfs_on_fast_and_slow_cores() {
    let sc = load("fast-slow-mixed.toml");
    let caps: Vec<u32> = sc.machine.units.iter().map(|u| u.capacity).collect();
    assert_eq!(caps, vec![1024, 1024, 512, 512, 1024, 1024, 512, 512]);
    let cfs = mean_turnaround(&sc, "cfs");
    let dmda = mean_turnaround(&sc, "dmda");
    assert!(dmda < 0.99 * cfs, "dmda {dmda} s vs cfs {cfs} s");
}

#[test]
fn scenario_tasks_are_deterministic_and_in_arrival_order() {
    let sc = load("beisel-gpu.toml");
    let a: Vec<_> = sc.tasks().collect();
    let b: Vec<_> = sc.tasks().collect();
    assert_eq!(a, b);
    assert_eq!(a.len() as u64, sc.task_count());
    assert!(a.windows(2).all(|w| w[0].arrival_ns <= w[1].arrival_ns));
    assert!(a.iter().enumerate().all(|(i, t)| t.id == i as u64));
    let kinds: std::collections::BTreeSet<&str> = a.iter().map(|t| &*t.kind).collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        vec!["cpu-only", "gemm", "md5"]
    );
}
