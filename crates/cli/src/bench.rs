//! `hetsched bench ...`: benchmark programs (never timed tests).

use clap::{Args, Subcommand};
use hetsched_core::machine::UnitGranularity;
use hetsched_core::Result;
use std::time::Instant;

#[derive(Subcommand)]
pub enum Bench {
    /// The live daemon: alloc+free latency, in-slice re-request cost, throughput.
    Daemon(crate::daemon_bench::DaemonBench),
    /// Time loading a machine description (default: the 192-core hwloc XML).
    Topology(TopologyBench),
    /// MD5 words/s and trial divisions/s of the example apps, CPU and OpenCL.
    Apps(crate::app_cmd::AppsBench),
}

pub fn run(which: Bench) -> Result<()> {
    match which {
        Bench::Topology(args) => topology(args),
        Bench::Daemon(args) => crate::daemon_bench::run(args),
        Bench::Apps(args) => crate::app_cmd::bench(args),
    }
}

#[derive(Args)]
pub struct TopologyBench {
    /// Machine to load (any `--machine` source).
    #[arg(long, default_value = "../shared/topologies/xml/192em64t-24n8c2t.xml")]
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

fn topology(args: TopologyBench) -> Result<()> {
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
