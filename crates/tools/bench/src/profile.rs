//! `hetsched bench profile`: how much slower than the program itself each live trace
//! source profiles a fixed real program (gzip on generated text).
//!
//! Lackey is thousands of times slower than native, so it runs on a prefix of the
//! input (`--lackey-mb`) and its factor is against native gzip on that same prefix.
//! Times are wall-clock (what a user waits for), best of `--repeat` runs for native and
//! one run for each traced source; the load average is printed before and after.

use clap::Args;
use hetsched_core::{Error, PathContext, Result};
use hetsched_sig::analysis::{Analyzer, Mode, Profile};
use hetsched_sig::bench::max_fraction_error;
use hetsched_sig::source::{qemu, trace_live, Live};
use hetsched_sig::validate::write_text;
use hetsched_util::files::OutDir;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::{options, Benchmark};

pub(crate) const BENCHMARK: Benchmark = Benchmark {
    key: "profile",
    about: "Slowdown of each live trace source over native, profiling gzip on generated text",
    args: <Options as clap::Args>::augment_args,
    run: |m| run(options(m)?),
};

#[derive(Args)]
struct Options {
    /// Size of the generated gzip input, MB.
    #[arg(long, default_value_t = 10.0)]
    mb: f64,
    /// Size of the prefix lackey profiles, MB (0: skip lackey).
    #[arg(long, default_value_t = 0.25)]
    lackey_mb: f64,
    /// Sampling rate R of the sampled run.
    #[arg(long, default_value_t = 0.01)]
    rate: f64,
    /// Native runs; the fastest counts.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Where the input files go.
    #[arg(long, default_value = "hetsched-out/bench-profile")]
    out: PathBuf,
}

/// The program profiled, on `input`.
fn gzip(input: &Path) -> Vec<String> {
    ["gzip", "-6", "-c"]
        .into_iter()
        .map(String::from)
        .chain([input.display().to_string()])
        .collect()
}

/// Best wall time of `repeat` native runs, seconds.
fn native(argv: &[String], repeat: usize) -> Result<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        let status = Command::new(&argv[0])
            .args(&argv[1..])
            .stdout(Stdio::null())
            .status()
            .map_err(|e| Error::runtime(format!("cannot run {}: {e}", argv[0])))?;
        if !status.success() {
            return Err(Error::runtime(format!("{} exited with {status}", argv[0])));
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok(best)
}

/// One traced run: wall seconds and the profile.
fn traced(source: Live, mode: Mode, argv: &[String]) -> Result<(f64, Profile)> {
    let mut a = Analyzer::new(mode);
    let t = Instant::now();
    let run = trace_live(source, &argv[0], &argv[1..], true, &mut a, &mut |_| {})?;
    let profile = a.finish();
    let secs = t.elapsed().as_secs_f64();
    if !run.status.success() {
        return Err(Error::runtime(format!(
            "{} exited with {}",
            argv[0], run.status
        )));
    }
    Ok((secs, profile))
}

/// Write about `mb` MB of generated text as the file `name` of `dir`; returns its path
/// and size in bytes.
fn input(dir: &OutDir, name: &str, mb: f64) -> Result<(PathBuf, u64)> {
    // write_text's lines average about 60 bytes.
    let path = write_text(dir, name, (mb * 1e6 / 60.0).ceil() as usize, 1)?;
    let size = std::fs::metadata(&path).map(|m| m.len()).at(&path)?;
    Ok((path, size))
}

fn run(a: Options) -> Result<()> {
    if !(a.rate > 0.0 && a.rate <= 1.0) {
        return Err(Error::input(format!(
            "--rate: must be in (0, 1], got {}",
            a.rate
        )));
    }
    let sizes_ok = a.mb > 0.0 && a.mb <= 1000.0 && (0.0..=a.mb).contains(&a.lackey_mb);
    if !sizes_ok {
        return Err(Error::input(
            "--mb must be in (0, 1000] and --lackey-mb in [0, --mb]",
        ));
    }
    if let Some(why) = qemu::unavailable() {
        return Err(Error::runtime(format!("the QEMU trace source: {why}")));
    }
    let out = OutDir::create(&a.out)?;
    let (full, bytes) = input(&out, "input.txt", a.mb)?;
    let argv = gzip(&full);
    println!(
        "program: {} ({:.1} MB of generated text)",
        argv.join(" "),
        bytes as f64 / 1e6
    );
    println!(
        "load average before: {}",
        hetsched_util::host::LoadAverage::now_text()
    );
    let base = native(&argv, a.repeat)?;
    let row = |name: &str, secs: f64, base: f64, note: &str| {
        println!("{name:<24} {secs:>9.2} s {:>9.1}x   {note}", secs / base);
    };
    row(
        "native",
        base,
        base,
        &format!("best of {}", a.repeat.max(1)),
    );
    let (exact_s, exact) = traced(Live::Qemu, Mode::Exact, &argv)?;
    row(
        "qemu plugin, exact",
        exact_s,
        base,
        &format!("goal <= 100x; {} accesses", exact.accesses),
    );
    let (sampled_s, sampled) = traced(Live::Qemu, Mode::Sampled(a.rate), &argv)?;
    row(
        &format!("qemu plugin, R={}", a.rate),
        sampled_s,
        base,
        &format!(
            "goal <= 30x; max bucket-fraction error vs exact {:.4} (goal <= 0.01)",
            max_fraction_error(&exact, &sampled)
        ),
    );
    if a.lackey_mb > 0.0 {
        let (part, part_bytes) = input(&out, "input-prefix.txt", a.lackey_mb)?;
        let argv = gzip(&part);
        let base = native(&argv, a.repeat)?;
        let (lackey_s, _) = traced(Live::Lackey, Mode::Exact, &argv)?;
        row(
            "valgrind lackey, exact",
            lackey_s,
            base,
            &format!(
                "on a {:.2} MB input, against native gzip on it ({base:.3} s)",
                part_bytes as f64 / 1e6
            ),
        );
    }
    println!(
        "load average after: {}",
        hetsched_util::host::LoadAverage::now_text()
    );
    Ok(())
}
