//! `hetsched experiment shim-theta` and `hetsched bench nuca`: the tiled-NUCA thread
//! migration study (Shim et al.). Logic lives in `hetsched-nuca`.

use clap::Args;
use hetsched_core::{Error, Result};
use hetsched_nuca::experiment::{self, BenchResult};
use hetsched_nuca::kernels::Benchmark;
use hetsched_nuca::{plot, Chip, Program, Scheme, Sim};
use hetsched_util::files::OutDir;
use std::path::PathBuf;
use std::time::Instant;

/// Which chip: a TOML machine file, else the paper's Table I preset.
fn chip(machine: &Option<PathBuf>) -> Result<Chip> {
    match machine {
        Some(p) => Chip::load(p),
        None => Ok(Chip::shim_64()),
    }
}

/// Benchmarks chosen by name (all when none given) with their sizes.
fn selection(names: &[String], sizes: &[String], tiny: bool) -> Result<Vec<(Benchmark, usize)>> {
    let benches = if names.is_empty() {
        Benchmark::ALL.to_vec()
    } else {
        names
            .iter()
            .map(|n| Benchmark::from_name(n))
            .collect::<Result<_>>()?
    };
    let mut chosen: Vec<_> = benches
        .into_iter()
        .map(|b| {
            (
                b,
                if tiny {
                    b.tiny_size()
                } else {
                    b.default_size()
                },
            )
        })
        .collect();
    for s in sizes {
        let (name, n) = s
            .split_once('=')
            .ok_or_else(|| Error::input(format!("--size `{s}`: expected BENCH=N")))?;
        let b = Benchmark::from_name(name)?;
        let n: usize = n
            .parse()
            .map_err(|_| Error::input(format!("--size `{s}`: N must be a positive integer")))?;
        chosen
            .iter_mut()
            .filter(|(x, _)| *x == b)
            .for_each(|e| e.1 = n);
    }
    Ok(chosen)
}

/// Arguments of `hetsched experiment shim-theta`.
#[derive(Args)]
pub struct ShimThetaArgs {
    /// Machine TOML file (default: the paper's Table I chip, machines/shim-64.toml).
    #[arg(long)]
    machine: Option<PathBuf>,
    /// Threads per benchmark (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Benchmarks to run (repeatable; default: all 16).
    #[arg(long = "bench")]
    benches: Vec<String>,
    /// Override a benchmark's size parameter: BENCH=N (repeatable).
    #[arg(long = "size")]
    sizes: Vec<String>,
    /// Use the tiny test sizes (seconds instead of minutes).
    #[arg(long)]
    tiny: bool,
    /// Let simulated threads run up to this many cycles apart (0 = exact time order).
    #[arg(long, default_value_t = 0)]
    skew: u64,
    /// Controlled variant: insert this many accesses to each thread's own stack frame
    /// per traced access (0–16; what Pin would also record; docs/nuca.md).
    #[arg(long, default_value_t = 0.0)]
    stack_per_access: f64,
    /// With --stack-per-access: consecutive stack accesses per insertion (1 = spread
    /// evenly; e.g. 16 for call frames pushed and popped together).
    #[arg(long, default_value_t = 1)]
    stack_burst: u32,
    /// Replay saved traces instead of running kernels: every subdirectory of DIR holding
    /// thread-<i>.trace files (as written by --save-traces) is one benchmark.
    #[arg(long, conflicts_with_all = ["benches", "sizes", "tiny", "threads", "save_traces"])]
    traces: Option<PathBuf>,
    /// Also write every benchmark's traces (binary format, docs/nuca.md) under DIR/<bench>/.
    #[arg(long)]
    save_traces: Option<PathBuf>,
    /// Output directory.
    #[arg(long, default_value = "hetsched-out/shim-theta")]
    out: PathBuf,
}

pub fn shim_theta(a: ShimThetaArgs) -> Result<()> {
    let chip = chip(&a.machine)?;
    let out = OutDir::create(&a.out)?;
    let save = a.save_traces.as_deref().map(OutDir::create).transpose()?;
    let options = experiment::Options {
        skew: a.skew,
        stack_per_access: a.stack_per_access,
        stack_burst: a.stack_burst,
    };
    let threads = a.threads.unwrap_or(chip.cores as usize);
    let mut results: Vec<BenchResult> = Vec::new();
    if let Some(dir) = &a.traces {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| Error::input(format!("{}: {e}", dir.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("thread-0.trace").is_file())
            .collect();
        dirs.sort();
        if dirs.is_empty() {
            return Err(Error::input(format!(
                "{}: no subdirectory holds thread-0.trace",
                dir.display()
            )));
        }
        for d in dirs {
            let name = d
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let traces = hetsched_nuca::trace::load_traces(&d)?;
            let r = experiment::simulate_all(&chip, &name, &traces, 0, options)?;
            eprintln!(
                "{name:<22} {:>10} accesses from {}",
                r.accesses,
                d.display()
            );
            results.push(r);
        }
    }
    for (b, n) in if a.traces.is_some() {
        Vec::new()
    } else {
        selection(&a.benches, &a.sizes, a.tiny)?
    } {
        let t0 = Instant::now();
        let r = experiment::run_benchmark(&chip, b, threads, n, options, save.as_ref())?;
        eprintln!(
            "{:<22} n={n:<7} {:>10} accesses  {:.1} s",
            b.name(),
            r.accesses,
            t0.elapsed().as_secs_f64()
        );
        results.push(r);
    }
    let text = experiment::report(&results);
    print!("{text}");
    experiment::write(&out, "shim-theta.txt", &text)?;
    experiment::write(&out, "shim-theta.csv", &experiment::csv(&results))?;
    plot::figures(&results, &out)?;
    eprintln!("wrote {}", a.out.display());
    Ok(())
}

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
