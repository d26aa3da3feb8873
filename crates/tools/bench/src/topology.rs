//! `hetsched bench topology`: how long loading a machine description takes.

use clap::Args;
use hetsched_core::machine::UnitGranularity;
use hetsched_core::Result;
use std::time::Instant;

use crate::{options, Benchmark};

pub(crate) const BENCHMARK: Benchmark = Benchmark {
    key: "topology",
    about: "Time loading a machine description (default: the 192-core hwloc XML)",
    args: <Options as clap::Args>::augment_args,
    run: |m| topology(options(m)?),
};

#[derive(Args)]
struct Options {
    /// Machine to load (any `--machine` source).
    #[arg(long, default_value = "tests/data/topologies/xml/192em64t-24n8c2t.xml")]
    machine: String,
    /// Number of timed loads (after one warm-up load).
    #[arg(long, default_value_t = 20)]
    iterations: usize,
}

/// Milliseconds of each load, sorted.
fn time_loads(spec: &str, iterations: usize) -> Result<Vec<f64>> {
    hetsched_topology::load(spec, UnitGranularity::Pu)?;
    let mut ms = Vec::with_capacity(iterations);
    for _ in 0..iterations.max(1) {
        let start = Instant::now();
        let m = hetsched_topology::load(spec, UnitGranularity::Pu)?;
        ms.push(start.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(m);
    }
    ms.sort_by(f64::total_cmp);
    Ok(ms)
}

fn topology(args: Options) -> Result<()> {
    let ms = time_loads(&args.machine, args.iterations)?;
    let m = hetsched_topology::load(&args.machine, UnitGranularity::Pu)?;
    println!(
        "machine: {} ({} PUs, {} NUMA nodes)",
        args.machine,
        m.pus.len(),
        m.numa_nodes.len()
    );
    println!(
        "load + convert: min {:.2} ms, median {:.2} ms, max {:.2} ms over {} loads (goal: <= 50 ms)",
        ms[0],
        ms[ms.len() / 2],
        ms[ms.len() - 1],
        ms.len()
    );
    Ok(())
}
