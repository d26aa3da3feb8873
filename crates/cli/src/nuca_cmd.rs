//! `hetsched bench nuca`: the tiled-NUCA simulator's speed (Shim et al.'s study; its
//! experiment is in `hetsched-nuca`'s registry entry).

use clap::Args;
use hetsched_core::{Error, Result};
use hetsched_nuca::kernels::Benchmark;
use hetsched_nuca::{Chip, Program, Scheme, Sim};

/// Arguments of `hetsched bench nuca`.
#[derive(Args)]
pub struct NucaBenchArgs {
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

/// CPU time this thread has used, in seconds: on a shared machine wall time overstates.
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for clock_gettime to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(
        rc, 0,
        "CLOCK_THREAD_CPUTIME_ID is always available on Linux"
    );
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

pub fn bench(a: NucaBenchArgs) -> Result<()> {
    let chip = Chip::shim_64();
    let b = Benchmark::from_name(&a.bench)?;
    let traces = b.generate(chip.cores as usize, a.size.unwrap_or(b.default_size()))?;
    let program = Program::new(&traces, chip.placement.page_bytes)?;
    println!(
        "{}: {} accesses, {} threads, one simulator thread; load average {}",
        b.name(),
        program.accesses(),
        program.threads(),
        std::fs::read_to_string("/proc/loadavg")
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|_| "unknown".into())
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
