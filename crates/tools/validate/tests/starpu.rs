//! The simulator against StarPU itself: StarPU's own tiled Cholesky run by StarPU on
//! this machine under `eager` and `dmda`, and the same graph simulated on the models
//! StarPU wrote. Each policy's predicted makespan must be within 10 % of StarPU's
//! measured median. Skipped, saying so, where the example is not installed; it times
//! real runs, so it runs alone (`.config/nextest.toml`).

#[test]
fn the_simulation_predicts_starpus_own_cholesky_within_10_percent() {
    let mut said = String::new();
    let results =
        hetsched_validate::starpu::cholesky(3, &mut |l| said += &format!("{l}\n")).unwrap();
    let Some(results) = results else {
        println!("skipped: {said}");
        return;
    };
    let mut report = said;
    for r in &results {
        report += &format!(
            "{}: StarPU {:.3} s (sd {:.3}), simulated {:.3} s, error {:+.1} %\n",
            r.policy,
            r.makespan_s.median,
            r.makespan_s.sd,
            r.predicted_makespan_s,
            100.0 * r.makespan_error
        );
    }
    println!("{report}");
    assert_eq!(results.len(), 2, "{report}");
    assert!(
        results.iter().all(|r| r.makespan_error.abs() <= 0.10),
        "{report}"
    );
}
