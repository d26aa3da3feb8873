//! `hetsched calibrate` and `hetsched validate`: the simulator against real runs (the
//! measuring and the comparing are `hetsched_validate`; this module parses and prints).

use clap::Args;
use hetsched_core::{Error, Result};
use hetsched_util::files::OutDir;
use hetsched_validate::calibration::Calibration;
use hetsched_validate::{calibrate, validate};
use std::path::PathBuf;

#[derive(Args)]
pub struct CalibrateArgs {
    /// Directory for calibration.toml and machine.toml.
    #[arg(long, default_value = "hetsched-out/calibrate")]
    out: PathBuf,
    /// Seconds of each rate measurement (0.05–60).
    #[arg(long, default_value_t = 0.5)]
    seconds: f64,
    /// Repetitions of each measurement (1–100).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Leave the OpenCL device out.
    #[arg(long)]
    no_opencl: bool,
}

fn this_program() -> Result<PathBuf> {
    std::env::current_exe().map_err(|e| Error::runtime(format!("this program's path: {e}")))
}

pub fn calibrate(args: CalibrateArgs) -> Result<()> {
    let options = calibrate::Options {
        seconds: args.seconds,
        runs: args.runs,
        apps: this_program()?,
        opencl: !args.no_opencl,
    };
    options.check()?;
    let out = OutDir::create(&args.out)?;
    let cal = calibrate::calibrate(&options, &mut |line| println!("{line}"))?;
    let written = out.write("calibration.toml", cal.to_toml()?)?;
    let machine = out.write("machine.toml", cal.machine_file())?;
    println!("wrote {} and {}", written.display(), machine.display());
    Ok(())
}

#[derive(Args)]
pub struct ValidateArgs {
    /// The workload (`hetsched validate --help` lists them).
    #[arg(value_parser = workloads(), required_unless_present = "suite")]
    workload: Option<String>,
    /// Run the validation suite: Beisel et al.'s mix on the CPUs and the OpenCL device
    /// under fcfs, affinity with and without time-sharing, and dmda; StarPU's own
    /// Cholesky under eager and dmda against the simulation on StarPU's models.
    #[arg(long, conflicts_with_all = ["workload", "policies", "scale"])]
    suite: bool,
    /// A policy to run (repeatable) [default: fcfs, affinity:fcfs=1, affinity:gran_ms=250, dmda].
    #[arg(long = "policy")]
    policies: Vec<String>,
    /// Live runs of each policy (1–100); the table gives their median.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Multiplies every job's size (0.001–1000).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// The calibration (from hetsched calibrate).
    #[arg(long, default_value = "hetsched-out/calibrate/calibration.toml")]
    calibration: PathBuf,
    /// Print the result as JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Directory for table.txt, validation.json and predicted.png.
    #[arg(long, default_value = "hetsched-out/validate")]
    out: PathBuf,
}

/// The workloads, each with its description, as the accepted values.
fn workloads() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        hetsched_validate::WORKLOADS
            .iter()
            .map(|w| clap::builder::PossibleValue::new(w.key).help(w.about)),
    )
}

/// The policies a validation compares by default.
const POLICIES: [&str; 4] = ["fcfs", "affinity:fcfs=1", "affinity:gran_ms=250", "dmda"];

pub fn validate(args: ValidateArgs) -> Result<()> {
    let cal = Calibration::load(&args.calibration)?;
    if args.suite {
        return suite(&cal, &args);
    }
    let workload = hetsched_validate::workload(args.workload.as_deref().unwrap_or_default())?;
    let policies = if args.policies.is_empty() {
        POLICIES.iter().map(|p| p.to_string()).collect()
    } else {
        args.policies.clone()
    };
    let options = validate::Options {
        workload,
        policies,
        runs: args.runs,
        scale: args.scale,
        apps: this_program()?,
    };
    let out = OutDir::create(&args.out)?;
    let json = args.json;
    let v = validate::validate(&cal, &options, &mut |line| {
        if !json {
            println!("{line}")
        }
    })?;
    v.write(&out)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(Error::runtime)?
        );
    } else {
        print!("{}", v.table());
        println!("wrote {}", out.path().display());
    }
    Ok(())
}

/// `hetsched validate --suite`: every part, its tables, and `suite.md` / `suite.json`.
fn suite(cal: &Calibration, args: &ValidateArgs) -> Result<()> {
    if !(1..=100).contains(&args.runs) {
        return Err(Error::input(format!(
            "--runs: {}, accepted 1..=100",
            args.runs
        )));
    }
    let out = OutDir::create(&args.out)?;
    let json = args.json;
    let s = hetsched_validate::suite::suite(cal, args.runs, this_program()?, &mut |line| {
        if !json {
            println!("{line}")
        }
    })?;
    let text = serde_json::to_string_pretty(&s).map_err(Error::runtime)?;
    out.write("suite.json", &text)?;
    out.write("suite.md", s.markdown())?;
    out.write("table.txt", s.table())?;
    if json {
        println!("{text}");
    } else {
        print!("{}", s.table());
        println!("wrote {}", out.path().display());
    }
    Ok(())
}
