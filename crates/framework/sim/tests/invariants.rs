//! Random scenarios (10,000 cases): every registered policy (each spec the registry
//! lists for tests) on random small machines and task sets
//! keeps the run-record invariants (each task ends exactly once, a unit runs one task at a
//! time, a task runs on one unit at a time, time is monotone), conserves work (checked by
//! the engine), finishes every task, and is deterministic — with memory-bound tasks
//! sharing a node's bandwidth, so segments are re-planned mid-run.

use hetsched_core::machine::UnitType;
use hetsched_core::record::Record;
use hetsched_sim::SimTask as Task;
use hetsched_sim::{machine_from_toml, Config};
use proptest::prelude::*;

/// Every spec the registry asks test suites to run (a new policy is covered by
/// registering it).
fn policies() -> Vec<&'static str> {
    hetsched_policies::test_specs().collect()
}

#[derive(Debug, Clone)]
struct Case {
    caps: Vec<u32>,
    gpu: bool,
    tasks: Vec<(u32, u32, u8, u32, u8, u32)>,
    policy: usize,
    checkpoint_cost_us: u32,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(prop::sample::select(vec![256u32, 512, 768, 1024]), 1..4),
        any::<bool>(),
        // (work ms, arrival ms, implementations bits cpu|gpu, gpu affinity ×10, memory bound ×10, checkpoint ms)
        prop::collection::vec(
            (0u32..200, 0u32..300, 1u8..4, 1u32..80, 0u8..11, 0u32..30),
            1..10,
        ),
        0..policies().len(),
        0u32..500,
    )
        .prop_map(|(caps, gpu, tasks, policy, checkpoint_cost_us)| Case {
            caps,
            gpu,
            tasks,
            policy,
            checkpoint_cost_us,
        })
}

fn simulate(c: &Case) -> (Record, hetsched_sim::RunSummary) {
    let mut text = String::from("name = \"p\"\n");
    for cap in [256, 512, 768, 1024] {
        text += &format!("[[cpu_kind]]\nname = \"k{cap}\"\ncapacity = {cap}\n");
    }
    let kinds: Vec<String> = c.caps.iter().map(|k| format!("\"k{k}\"")).collect();
    text += &format!(
        "[[package]]\ncores = {}\nkind = [{}]\n",
        c.caps.len(),
        kinds.join(", ")
    );
    // Memory-bound tasks share this node's bandwidth (see `mem_bandwidth` below).
    text += "[[numa_node]]\nmemory = \"1 GiB\"\nbandwidth = \"10 GB/s\"\n";
    if c.gpu {
        text += "[[accelerator]]\ntype = \"gpu\"\nname = \"gpu0\"\nlink_bandwidth = \"8 GB/s\"\nlink_latency_us = 10\n";
    }
    let machine = machine_from_toml(&text, "p.toml").unwrap();
    let mut tasks: Vec<Task> = c
        .tasks
        .iter()
        .map(|&(work, arrival, bits, gaff, mem, ckpt)| {
            let mut t = Task::cpu(0, work as f64 / 1000.0, arrival as u64 * 1_000_000);
            t.affinity
                .set(UnitType::Cpu, if bits & 1 != 0 { 1.0 } else { 0.0 });
            t.affinity.set(
                UnitType::Gpu,
                if bits & 2 != 0 {
                    gaff as f64 / 10.0
                } else {
                    0.0
                },
            );
            t.model.memory_bound = mem as f64 / 10.0;
            t.model.mem_bandwidth = mem as f64 * 2e9;
            t.bytes_in = work as u64 * 100_000;
            t.bytes_out = work as u64 * 10_000;
            t.checkpoint_ns.set(UnitType::Gpu, ckpt as u64 * 1_000_000);
            t.kind = format!("k{bits}").into();
            t
        })
        .collect();
    tasks.sort_by_key(|t| t.arrival_ns);
    for (i, t) in tasks.iter_mut().enumerate() {
        t.id = i as u64;
    }
    let spec = policies()[c.policy];
    let mut rec = Record::new(
        spec,
        machine.units.iter().map(|u| u.kind).collect(),
        machine.units.iter().map(|u| u.name.clone()).collect(),
    );
    let config = Config {
        checkpoint_cost_ns: c.checkpoint_cost_us as u64 * 1000,
        max_time_ns: None,
        max_events: None,
        ..Config::default()
    };
    let summary = hetsched_sim::Simulation::new(&machine, tasks, &config)
        .run_spec(spec, 42, &mut rec)
        .unwrap();
    (rec, summary)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, ..ProptestConfig::default() })]
    #[test]
    fn every_policy_keeps_the_invariants(c in case()) {
        let (rec, summary) = simulate(&c);
        prop_assert_eq!(summary.unfinished, 0);
        prop_assert_eq!(summary.completed + summary.rejected, c.tasks.len() as u64);
        prop_assert_eq!(summary.work_done_ns, summary.work_completed_ns);
        if let Err(e) = rec.check() {
            return Err(TestCaseError::fail(e));
        }
        prop_assert!(rec.all_ended());
        // Only GPU-only tasks without a GPU are rejected.
        let impossible = c.tasks.iter().filter(|t| t.2 == 2 && !c.gpu).count() as u64;
        prop_assert_eq!(summary.rejected, impossible);
        let (again, _) = simulate(&c);
        prop_assert_eq!(&again.events, &rec.events);
    }
}
