//! `hetsched bench o2`: the O² (CORETIME) delegation path's latency and throughput on
//! this machine (its experiments are in `hetsched-o2`'s registry entry).

use clap::Args;
use hetsched_core::{Error, Result};
use hetsched_o2::study::parse_cpus;
use hetsched_util::host::LoadAverage;
use std::time::Duration;

use crate::{options, Benchmark};

pub(crate) const BENCHMARK: Benchmark = Benchmark {
    key: "o2",
    about: "O² delegation: round-trip p50/p99 and throughput",
    args: <Options as clap::Args>::augment_args,
    run: |m| bench_o2(options(m)?),
};

/// `hetsched bench o2`.
#[derive(Args, Debug)]
struct Options {
    /// The two OS CPUs: caller, then owner.
    #[arg(long, default_value = "0,1")]
    cpus: String,
    /// Round trips to time.
    #[arg(long, default_value_t = 200_000)]
    samples: usize,
    /// Throughput measurement time, ms.
    #[arg(long, default_value_t = 1000)]
    duration_ms: u64,
}

fn bench_o2(a: Options) -> Result<()> {
    let cpus = parse_cpus(&a.cpus).map_err(|e| Error::input(format!("--cpus: {e}")))?;
    let [c0, c1] = cpus[..] else {
        return Err(Error::input(format!(
            "--cpus: expected two CPUs, got {}",
            a.cpus
        )));
    };
    println!("load average: {}", LoadAverage::now_text());
    let b =
        hetsched_o2::bench::delegation([c0, c1], a.samples, Duration::from_millis(a.duration_ms))?;
    println!(
        "o2 delegation round trip (CPU {c0} -> owner CPU {c1}, empty operation, {} samples):",
        b.samples
    );
    println!("  p50 {} ns   p99 {} ns   mean {:.0} ns   (goal p50 <= 500 ns; CORETIME migration 2000 cycles ~ 1000 ns)", b.p50_ns, b.p99_ns, b.mean_ns);
    println!(
        "  floor: bare cache-line ping-pong between the same CPUs: p50 {} ns   p99 {} ns",
        b.pingpong_p50_ns, b.pingpong_p99_ns
    );
    println!(
        "  throughput, both workers delegating to each other: {:.2} M ops/s",
        b.throughput_ops_per_s / 1e6
    );
    println!(
        "  throughput, same operations run in place (unassigned): {:.2} M ops/s",
        b.local_ops_per_s / 1e6
    );
    println!(
        "  on_async awaited alone (block_on: the caller parks, the owner wakes it): p50 {} ns   p99 {} ns",
        b.async_p50_ns, b.async_p99_ns
    );
    println!(
        "  on_async throughput, both workers keeping {} in flight to each other: {:.2} M ops/s",
        hetsched_o2::bench::ASYNC_IN_FLIGHT,
        b.async_throughput_ops_per_s / 1e6
    );
    Ok(())
}
