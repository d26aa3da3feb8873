//! `scenarios/akram-io-mix.toml` through the simulator: I/O tasks name their device in
//! the scenario file, and `io-affinity` finishes them sooner than `cfs`.

use hetsched_sim::scenario::Scenario;
use std::path::PathBuf;

#[test]
fn io_affinity_beats_cfs_on_the_io_mix_scenario() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../scenarios/akram-io-mix.toml");
    let sc = Scenario::load(&path).unwrap();
    let makespan = |policy: &str| {
        let (rec, summary) = hetsched_sim::Simulation::of(&sc)
            .record_spec(policy, sc.seed)
            .unwrap();
        assert_eq!(summary.unfinished, 0);
        rec.check().unwrap();
        rec.metrics().makespan_s
    };
    let (cfs, ours) = (makespan("cfs"), makespan("io-affinity"));
    // Alone on its device's socket an I/O task takes its 10 s; the two I/O tasks there
    // share socket 1's memory (their DMA and their pass over the data), so a little
    // longer; away from it, longer still.
    assert!(ours > 10.0 && ours < 13.0, "io-affinity {ours} s");
    assert!(cfs > ours * 1.05, "cfs {cfs} s vs io-affinity {ours} s");
}
