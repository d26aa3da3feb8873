//! Memory grows with live tasks, not with finished ones: over a long lazily generated
//! stream the engine holds only the tasks in the system at once.

use hetsched_core::record::EventCounter;
use hetsched_sim::{bench, Config, Simulation};

#[test]
fn a_long_stream_keeps_only_the_live_tasks() {
    let units = 8;
    let machine = bench::machine(1, units as u32).unwrap();
    let n = 20_000;
    for spec in ["fcfs", "cfs"] {
        let mut policy = hetsched_policies::build(spec, 1).unwrap();
        let mut counter = EventCounter::default();
        let tasks = bench::tasks(n, units, 0.01, 0.5, 1);
        let summary = Simulation::new(&machine, tasks, &Config::default())
            .run(policy.as_mut(), &mut counter)
            .unwrap();
        assert_eq!(summary.completed, n, "{spec}");
        // At half load on 8 units a few dozen tasks at most are in the system at once;
        // keeping finished ones would make this the whole stream.
        assert!(
            summary.peak_live < 100,
            "{spec}: peak live {}",
            summary.peak_live
        );
    }
}
