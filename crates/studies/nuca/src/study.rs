//! Shim et al.'s study in the experiment registry: `hetsched experiment shim-theta` and
//! the report's `shim` section.

use crate::experiment::{self, BenchResult};
use crate::kernels::Benchmark;
use crate::{plot, Chip};
use hetsched_core::{Error, PathContext, Result};
use hetsched_study::{options, say, Experiment, Study};
use hetsched_util::files::OutDir;
use std::path::PathBuf;
use std::time::Instant;

pub const STUDY: Study = Study {
    key: "shim",
    experiments: &[Experiment {
        key: "shim-theta",
        about: "Shim et al.: remote access vs thread migration vs the predictor (θ = 2, 3, 5)",
        outputs: "shim-theta.txt, shim-theta.csv, fig4_core_miss.png … fig8_theta_latency.png",
        args: <Options as clap::Args>::augment_args,
        run: |m, out, w| say(w, run(options(m)?, out)?),
    }],
    reproduce: Some(crate::reproduce::reproduce),
};

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

#[derive(clap::Args)]
struct Options {
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
}

fn run(a: Options, out: &OutDir) -> Result<String> {
    let chip = chip(&a.machine)?;
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
            .input_at(dir)?
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
            let traces = crate::trace::load_traces(&d)?;
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
    experiment::write(out, "shim-theta.txt", &text)?;
    experiment::write(out, "shim-theta.csv", &experiment::csv(&results))?;
    plot::figures(&results, out)?;
    Ok(text)
}
