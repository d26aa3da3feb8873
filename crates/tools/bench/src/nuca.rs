//! `hetsched bench nuca`: the tiled-NUCA simulator's speed (Shim et al.'s study; its
//! experiment is in `hetsched-nuca`'s registry entry).

use clap::Args;
use hetsched_core::{Error, Result};
use hetsched_nuca::kernels::Benchmark;
use hetsched_nuca::{Chip, Program, Scheme, Sim};
use hetsched_util::host::{thread_cpu_seconds, LoadAverage};

use crate::options;

pub(crate) const BENCHMARK: crate::Benchmark = crate::Benchmark {
    key: "nuca",
    about: "Simulated memory accesses per second of the tiled-NUCA simulator",
    args: <Options as clap::Args>::augment_args,
    run: |m| bench(options(m)?),
};

/// Arguments of `hetsched bench nuca`.
#[derive(Args)]
struct Options {
    /// Benchmark whose traces are replayed (radix: 13 M accesses, 75 % of them core
    /// misses under remote-only, so every mechanism is exercised).
    #[arg(long, default_value = "radix")]
    bench: String,
    /// Size parameter (default: the benchmark's default size).
    #[arg(long)]
    size: Option<usize>,
    /// Repetitions of each scheme.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Also measure with this skew bound in cycles (lax synchronisation).
    #[arg(long, default_value_t = 100)]
    skew: u64,
}

fn bench(a: Options) -> Result<()> {
    let chip = Chip::shim_64();
    let b = Benchmark::from_name(&a.bench)?;
    let traces = b.generate(chip.cores as usize, a.size.unwrap_or(b.default_size()))?;
    let program = Program::new(&traces, chip.placement.page_bytes)?;
    println!(
        "{}: {} accesses, {} threads, one simulator thread; load average {}",
        b.name(),
        program.accesses(),
        program.threads(),
        LoadAverage::now_text()
    );
    for skew in [0, a.skew] {
        for scheme in [
            Scheme::RemoteOnly,
            Scheme::AlwaysMigrate,
            Scheme::Hybrid { theta: 3 },
        ] {
            let mut best_cpu = f64::MAX;
            let mut latency = 0.0;
            for _ in 0..a.reps.max(1) {
                let sim = Sim::new(&chip, &program, scheme)?.with_skew(skew);
                let t0 = thread_cpu_seconds();
                let stats = sim.run(false).map_err(Error::runtime)?;
                best_cpu = best_cpu.min(thread_cpu_seconds() - t0);
                latency = stats.avg_latency();
            }
            println!(
                "skew {skew:>4} cycles  {:<15} {:>6.1} M simulated accesses per CPU-second (best of {}; avg latency {latency:.3})",
                scheme.name(),
                program.accesses() as f64 / best_cpu / 1e6,
                a.reps.max(1)
            );
        }
    }
    Ok(())
}
