//! The workload of `hetsched bench sim`: a large machine and a lazily generated task
//! stream, so that memory holds live tasks only.

use crate::task::SimTask;
use hetsched_core::machine::Machine;
use hetsched_core::ns::round_u64;
use hetsched_core::Result;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp1};

/// `packages × cores` equal cores (one NUMA node per package), as a TOML machine file.
pub fn machine(packages: u32, cores: u32) -> Result<Machine> {
    let mut text = String::from("name = \"bench\"\n");
    for _ in 0..packages {
        text += &format!("[[package]]\ncores = {cores}\n");
    }
    crate::machine_from_toml(&text, "bench machine")
}

/// `n` compute-bound CPU tasks of exponential size (mean `mean_work_s`) arriving as a
/// Poisson stream at `load` × the machine's capacity of `units` reference CPUs.
///
/// Exponential draws use the ziggurat method (`rand_distr::Exp1`): it is part of the
/// timed run, and a `ln` per draw cost as much as a tenth of an fcfs task's simulation.
pub fn tasks(
    n: u64,
    units: usize,
    mean_work_s: f64,
    load: f64,
    seed: u64,
) -> impl Iterator<Item = SimTask> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let rate = load * units as f64 / mean_work_s;
    let mut t = 0.0f64;
    (0..n).map(move |id| {
        let gap: f64 = Exp1.sample(&mut rng);
        t += gap / rate;
        let size: f64 = Exp1.sample(&mut rng);
        let work = size * mean_work_s;
        SimTask::cpu(id, work, round_u64(t * 1e9))
    })
}
