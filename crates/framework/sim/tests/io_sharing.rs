//! I/O tasks share devices and links in the engine: hand-computed runs through the real
//! engine, the real I/O model and `fcfs` (which fills the lowest idle units first).
//!
//! The machine: two packages of two cores, one NUMA node each (100 GB/s of memory, so
//! memory queueing is negligible), a link of 0.4 GB/s between them, two 1.6 GB/s block
//! devices on node 1. A lone stream on its device's node runs at the device's 1.6 GB/s
//! (its DMA window allows 2.5 GB/s): I/O factor 1.

use hetsched_core::machine::Machine;
use hetsched_core::record::Record;
use hetsched_sim::{machine_from_toml, Config, SimTask as Task, Simulation};

const S: u64 = 1_000_000_000;

fn machine() -> Machine {
    machine_from_toml(
        r#"name = "io"
[[package]]
cores = 2
[[package]]
cores = 2
[[numa_node]]
memory = 0
bandwidth = "100 GB/s"
[[numa_node]]
memory = 0
bandwidth = "100 GB/s"
[[link]]
between = [0, 1]
bandwidth = "0.4 GB/s"
[[io_device]]
kind = "block"
name = "d"
count = 2
numa_node = 1
bandwidth = "1.6 GB/s"
"#,
        "io.toml",
    )
    .unwrap()
}

/// A task of `work_s` with half its work on the I/O path to `device`.
fn io_task(id: u64, work_s: f64, device: u32) -> Task {
    let mut t = Task::cpu(id, work_s, 0);
    t.meta.io_device = Some(device);
    t.model.io_bound = 0.5;
    t
}

/// A compute task that keeps a unit busy for `work_s`.
fn compute(id: u64, work_s: f64) -> Task {
    Task::cpu(id, work_s, 0)
}

/// (task, unit, end ns) by task id.
fn ends(tasks: Vec<Task>) -> Vec<(u64, u32, u64)> {
    let m = machine();
    let mut p = hetsched_policies::build("fcfs", 1).unwrap();
    let mut rec = Record::new(
        "fcfs",
        m.units.iter().map(|u| u.kind).collect(),
        m.units.iter().map(|u| u.name.clone()).collect(),
    );
    let summary = Simulation::new(&m, tasks, &Config::default())
        .run(p.as_mut(), &mut rec)
        .unwrap();
    assert_eq!(summary.unfinished, 0);
    let mut e: Vec<_> = rec
        .outcomes()
        .iter()
        .map(|o| (o.task, o.unit.unwrap(), o.end_ns.unwrap()))
        .collect();
    e.sort();
    e
}

/// Within a microsecond (integer-nanosecond rounding of the re-planned segments).
fn near(got: u64, want: u64) -> bool {
    got.abs_diff(want) < 1_000
}

fn assert_ends(got: &[(u64, u32, u64)], want: &[(u64, u32, u64)]) {
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            g.0 == w.0 && g.1 == w.1 && near(g.2, w.2),
            "{got:?} vs {want:?}"
        );
    }
}

#[test]
fn two_io_tasks_on_one_device_each_get_half_of_it() {
    // Units 2 and 3 are node 1, the devices' node. Two compute tasks take units 0 and 1.
    // Alone, a 2 s task: 1 s of CPU work + 1 s of I/O at factor 1 = 2 s.
    let alone = ends(vec![compute(0, 5.0), compute(1, 5.0), io_task(2, 2.0, 0)]);
    assert_ends(&alone[2..], &[(2, 2, 2 * S)]);
    // Two on device 0: each stream gets 0.8 GB/s, factor 2: 1 + 1 × 2 = 3 s.
    let shared = ends(vec![
        compute(0, 5.0),
        compute(1, 5.0),
        io_task(2, 2.0, 0),
        io_task(3, 2.0, 0),
    ]);
    assert_ends(&shared[2..], &[(2, 2, 3 * S), (3, 3, 3 * S)]);
    // On two devices nothing is shared: 2 s each.
    let apart = ends(vec![
        compute(0, 5.0),
        compute(1, 5.0),
        io_task(2, 2.0, 0),
        io_task(3, 2.0, 1),
    ]);
    assert_ends(&apart[2..], &[(2, 2, 2 * S), (3, 3, 2 * S)]);
}

#[test]
fn a_stream_speeds_up_when_the_other_on_its_device_ends() {
    // t2 (2 s) and t3 (1 s) share device 0 at rate 2 per unit of work (0.5 + 0.5 × 2 =
    // 1.5 unit s per work s): t3 ends at 1.5 s, when t2 has 1 s of work left, which
    // alone takes 1 s: t2 ends at 2.5 s.
    let got = ends(vec![
        compute(0, 5.0),
        compute(1, 5.0),
        io_task(2, 2.0, 0),
        io_task(3, 1.0, 0),
    ]);
    assert_ends(&got[2..], &[(2, 2, 5 * S / 2), (3, 3, 3 * S / 2)]);
}

#[test]
fn remote_streams_share_the_saturated_link() {
    // fcfs puts the I/O tasks on units 0 and 1 (node 0), their devices are on node 1:
    // every byte crosses the 0.4 GB/s link. Alone a remote stream is capped at the
    // link's 0.4 GB/s, factor 1.6 / 0.4 = 4: 1 + 1 × 4 = 5 s.
    let alone = ends(vec![io_task(0, 2.0, 0)]);
    assert_ends(&alone, &[(0, 0, 5 * S)]);
    // Two remote streams on different devices share the link, 0.2 GB/s each, factor
    // 1.6 / 0.2 = 8: 1 + 8 = 9 s, though no device is shared.
    let both = ends(vec![io_task(0, 2.0, 0), io_task(1, 2.0, 1)]);
    assert_ends(&both, &[(0, 0, 9 * S), (1, 1, 9 * S)]);
}
