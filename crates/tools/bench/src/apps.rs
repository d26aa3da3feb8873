//! `hetsched bench apps`: the example applications' rates (MD5 words/s, trial
//! divisions/s), CPU and OpenCL.

use clap::Args;
use hetsched_apps::md5::{Md5Checkpoint, Md5Config, Md5Cracker, Md5Job};
use hetsched_apps::prime::{PrimeCheckpoint, PrimeConfig, PrimeFactoriser};
use hetsched_apps::rate::{measure, Rate};
use hetsched_core::{Error, Result};
use hetsched_util::files::OutDir;
use hetsched_worker::Grant;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::{options, Benchmark};

pub(crate) const BENCHMARK: Benchmark = Benchmark {
    key: "apps",
    about: "MD5 words/s and trial divisions/s of the example apps, CPU and OpenCL",
    args: <Options as clap::Args>::augment_args,
    run: |m| bench(options(m)?),
};

#[derive(Args)]
struct Options {
    /// Seconds to measure each (application, device).
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// PU the CPU implementations are pinned to [default: the first allowed PU].
    #[arg(long)]
    cpu: Option<usize>,
    /// OpenCL device index.
    #[arg(long, default_value_t = 0)]
    opencl_device: usize,
    /// Directory for rates.csv.
    #[arg(long, default_value = "hetsched-out/bench-apps")]
    out: PathBuf,
}

/// `hetsched bench apps`: MD5 words/s and trial divisions/s, CPU (one pinned
/// thread) and OpenCL (whole device, and per compute unit).
fn bench(args: Options) -> Result<()> {
    if !args.seconds.is_finite() || args.seconds <= 0.0 {
        return Err(Error::input("--seconds: expected a positive number"));
    }
    let budget = Duration::from_secs_f64(args.seconds);
    let out = OutDir::create(&args.out)?;
    let cpu = hetsched_util::host::cpu_or_first(args.cpu)?;
    let cpu_grant = Grant::cpu(0, vec![cpu]);
    let cl_grant = Grant::opencl(1, args.opencl_device);
    let devices = hetsched_apps::opencl::devices()?;
    let device = devices.get(args.opencl_device).ok_or_else(|| {
        Error::input(format!(
            "--opencl-device: {} does not exist ({} devices)",
            args.opencl_device,
            devices.len()
        ))
    })?;
    let cl_name = hetsched_apps::opencl::device_name(device);
    let cl_units = device
        .max_compute_units()
        .map_err(|e| Error::runtime(format!("OpenCL compute units: {e}")))?
        .max(1);

    // No word of this space hashes to MD5("!"), so the search never ends early.
    let md5_job = Md5Job::new(
        &hetsched_apps::md5::md5_hex(b"!"),
        "abcdefghijklmnopqrstuvwxyz0123456789",
        8,
    )?;
    let md5 = Md5Cracker::new(md5_job, Md5Config::default())?;
    let words = |c: &Md5Checkpoint| c.words_hashed;
    // 2^61 - 1 is prime: trial division runs to 1.5e9 and never ends early.
    let prime = PrimeFactoriser::new(PrimeConfig::default())?;
    let pstart = PrimeCheckpoint::start((1 << 61) - 1)?;
    let divisors = |c: &PrimeCheckpoint| c.divisors_tested;

    let rows: Vec<(&str, &str, u32, Rate)> = vec![
        (
            "md5",
            "cpu",
            1,
            measure(&md5, &cpu_grant, &Md5Checkpoint::default(), budget, words)?,
        ),
        (
            "md5",
            "opencl",
            cl_units,
            measure(&md5, &cl_grant, &Md5Checkpoint::default(), budget, words)?,
        ),
        (
            "prime",
            "cpu",
            1,
            measure(&prime, &cpu_grant, &pstart, budget, divisors)?,
        ),
        (
            "prime",
            "opencl",
            cl_units,
            measure(&prime, &cl_grant, &pstart, budget, divisors)?,
        ),
    ];
    println!("CPU: one thread pinned to PU {cpu}; OpenCL: {cl_name} ({cl_units} compute units)");
    // Rates on a shared machine depend on its load: print it beside them.
    if let Some(load) = hetsched_util::host::LoadAverage::now() {
        println!("load average (1/5/15 min): {load}");
    }
    println!(
        "{:<6} {:<7} {:>5} {:>14} {:>16} {:>12}",
        "app", "device", "cores", "items/s", "items/s/core", "checkpoints"
    );
    let mut csv = String::from("app,device,cores,items,seconds,items_per_s,items_per_s_per_core\n");
    for (app, dev, cores, r) in &rows {
        let per_core = r.per_second() / *cores as f64;
        println!(
            "{app:<6} {dev:<7} {cores:>5} {:>14.4e} {per_core:>16.4e} {:>12}",
            r.per_second(),
            r.checkpoints
        );
        let _ = writeln!(
            csv,
            "{app},{dev},{cores},{},{:.6},{:.1},{:.1}",
            r.work,
            r.seconds,
            r.per_second(),
            per_core
        );
    }
    println!("(items: md5 = words hashed, prime = divisors tested)");
    let path = out.write("rates.csv", csv)?;
    println!("wrote {}", path.display());
    Ok(())
}
