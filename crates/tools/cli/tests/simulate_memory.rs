//! What a waiting task costs: `hetsched simulate` with 262,000 tasks waiting at t = 0,
//! its peak resident memory beside that of the same run with 1,000 tasks, per extra
//! task (engine, recorder and metrics together). A representation that grows (a task's
//! meta info copied per task again, a hash map per live task...) fails it; the figures
//! of the 1M-task runs are in docs/dev/simulator-performance.md. One test in its own binary: the
//! children's peak memory (`RUSAGE_CHILDREN`) is this test's alone.

mod common;

use nix::sys::resource::{getrusage, UsageWho};
use std::path::Path;

/// Bytes per waiting task, all included, that the test allows: the engine's 64 (store
/// slot 48, work 8, queue entry 4, store index 4), the recorder's 1 (the checker's
/// state), and the allocator's slack: measured 65–67 in debug and release builds
/// (docs/dev/simulator-performance.md, fifth pass), of which the heap 64 (heaptrack) and
/// the rest pages that vectors left behind as they grew. 262,000 tasks fill what grows by doubling
/// (2^18 = 262,144 queue and index entries) and by chunks (4,096 store slots, 32,768
/// works) almost to the end, so rounding up adds next to nothing. Measured 75–76 before
/// queues held slots and the model's handle moved into the entry (72 engine bytes), 167
/// before that pass, about 600 before task classes were shared.
const MAX_BYTES_PER_TASK: f64 = 72.0;

/// Tasks waiting in the large run.
const TASKS: u64 = 262_000;

/// Peak resident memory in bytes of the largest child so far.
fn children_peak() -> f64 {
    getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss() as f64 * 1024.0
}

/// Runs `hetsched simulate --summary` on `tasks` fixed-size tasks all arriving at t = 0
/// on the benchmark's 1,024 cores, fcfs; returns the peak of all children so far.
fn simulate_waiting(dir: &Path, tasks: u64) -> f64 {
    let machine = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../scenarios/bench/machine-64x16.toml")
        .canonicalize()
        .unwrap();
    let scenario = dir.join(format!("wait{tasks}.toml"));
    std::fs::write(
        &scenario,
        format!(
            "machine = {:?}\npolicies = [\"fcfs\"]\n\
             [[task]]\nwork = 0.01\ncount = {tasks}\n",
            machine.display().to_string()
        ),
    )
    .unwrap();
    let out_dir = dir.join(format!("out{tasks}"));
    let (scenario, out_dir) = (scenario.to_str().unwrap(), out_dir.to_str().unwrap());
    let out = common::hetsched(&["simulate", scenario, "--summary", "--out", out_dir]);
    assert!(out.status.success(), "{out:?}");
    children_peak()
}

#[test]
fn a_waiting_task_costs_at_most_its_share_of_memory() {
    let dir = tempfile::tempdir().unwrap();
    let small = simulate_waiting(dir.path(), 1_000);
    let large = simulate_waiting(dir.path(), TASKS);
    let per_task = (large - small) / (TASKS - 1_000) as f64;
    assert!(
        per_task <= MAX_BYTES_PER_TASK,
        "{per_task:.0} bytes per waiting task (peak {:.1} MiB with {TASKS} tasks, {:.1} MiB with 1,000), at most {MAX_BYTES_PER_TASK}",
        large / 1048576.0,
        small / 1048576.0
    );
}
