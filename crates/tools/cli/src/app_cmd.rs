//! `hetsched app md5|prime`: run an example application on the worker model, under a
//! running daemon (`--daemon`) or the standalone `Fixed` scheduler.

use clap::{Args, Subcommand, ValueEnum};
use hetsched_apps::md5::{Md5Checkpoint, Md5Config, Md5Cracker, Md5Job};
use hetsched_apps::prime::{PrimeCheckpoint, PrimeConfig, PrimeFactoriser};
use hetsched_core::machine::UnitType;
use hetsched_core::{Error, Result};
use hetsched_live::worker_bridge::DaemonScheduler;
use hetsched_worker::{run, Fixed, Grant, Rerequest, Scheduler, Segment};
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum App {
    /// Brute-force an MD5 hash over all words of LENGTH letters of ALPHABET.
    Md5(Md5Args),
    /// Factorise N by trial division.
    Prime(PrimeArgs),
}

pub fn run_app(which: App) -> Result<()> {
    match which {
        App::Md5(args) => md5(args),
        App::Prime(args) => prime(args),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Device {
    Cpu,
    Opencl,
}

/// Where to run and whether to force a migration.
#[derive(Args)]
struct Placement {
    /// The unit to start on.
    #[arg(long, value_enum, default_value = "cpu")]
    device: Device,
    /// PU (OS index) a CPU grant pins to [default: the first allowed PU].
    #[arg(long)]
    cpu: Option<usize>,
    /// OpenCL device index (over all platforms).
    #[arg(long, default_value_t = 0)]
    opencl_device: usize,
    /// At checkpoint K, migrate to the other device (cpu → opencl or back) and
    /// resume from the checkpoint.
    #[arg(long, value_name = "K")]
    migrate_after: Option<u64>,
    /// Run under a hetsched daemon (its socket; without a value the default one): the
    /// daemon's policy picks the units and decides at each checkpoint.
    #[arg(long, value_name = "SOCKET")]
    daemon: Option<Option<PathBuf>>,
}

impl Placement {
    /// The daemon's scheduler when `--daemon` is given, else the standalone one.
    fn connect(&self, kind: &str) -> Result<Box<dyn Scheduler>> {
        let Some(socket) = &self.daemon else {
            return Ok(Box::new(self.scheduler()?));
        };
        if self.migrate_after.is_some() {
            return Err(Error::input(
                "--migrate-after scripts standalone runs; under --daemon the policy decides",
            ));
        }
        let socket = socket
            .clone()
            .unwrap_or_else(hetsched_live::server::default_socket_path);
        Ok(Box::new(DaemonScheduler::connect(&socket, kind)?))
    }

    fn scheduler(&self) -> Result<Fixed> {
        let cpu = hetsched_util::host::cpu_or_first(self.cpu)?;
        let cpu = Grant::cpu(0, vec![cpu]);
        let opencl = Grant::opencl(1, self.opencl_device);
        let (first, other) = match self.device {
            Device::Cpu => (cpu, opencl),
            Device::Opencl => (opencl, cpu),
        };
        let other_kind = other.kind;
        let mut s = Fixed::new(first).with_unit(other);
        if let Some(k) = self.migrate_after {
            if k == 0 {
                return Err(Error::input("--migrate-after: checkpoints count from 1"));
            }
            s = s.answer_at(k, Rerequest::Migrate(other_kind));
        }
        Ok(s)
    }
}

/// The segments a run went through, one line each, and whether the forced migration
/// happened.
fn describe(segments: &[Segment], migrate_after: Option<u64>) -> String {
    let mut out = String::new();
    let reached: u64 = segments.iter().map(|s| s.checkpoints).sum();
    if let Some(k) = migrate_after.filter(|&k| k > reached) {
        let _ = writeln!(
            out,
            "note: finished after {reached} checkpoints, before --migrate-after {k}: no migration"
        );
    }
    for s in segments {
        let unit = match s.grant.kind {
            UnitType::Cpu => format!("cpu (PUs {:?})", s.grant.cpus),
            UnitType::OpenCl => {
                let index = s.grant.opencl_device.unwrap_or(0);
                let name = hetsched_apps::opencl::devices()
                    .ok()
                    .and_then(|d| d.get(index).map(hetsched_apps::opencl::device_name))
                    .unwrap_or_default();
                format!("opencl (device {index}: {name})")
            }
            other => other.to_string(),
        };
        let _ = writeln!(out, "  {:>8} checkpoints on {unit}", s.checkpoints);
    }
    out
}

#[derive(Args)]
pub struct Md5Args {
    /// The MD5 to find, 32 hex digits.
    #[arg(long)]
    hash: String,
    /// Letters per word (1..=55).
    #[arg(long)]
    length: u32,
    /// The letters words are made of (distinct ASCII).
    #[arg(long, default_value = "abcdefghijklmnopqrstuvwxyz")]
    alphabet: String,
    /// Words between checkpoints on the CPU (paper: 500).
    #[arg(long, default_value_t = hetsched_apps::md5::CPU_INTERVAL)]
    cpu_interval: u64,
    /// Words per OpenCL launch / checkpoint (paper: 10^9 on a GPU).
    #[arg(long, default_value_t = hetsched_apps::md5::OPENCL_INTERVAL)]
    opencl_interval: u32,
    #[command(flatten)]
    placement: Placement,
}

fn md5(args: Md5Args) -> Result<()> {
    let job = Md5Job::new(&args.hash, &args.alphabet, args.length)?;
    let worker = Md5Cracker::new(
        job,
        Md5Config {
            cpu_interval: args.cpu_interval,
            opencl_interval: args.opencl_interval,
        },
    )?;
    let mut sched = args.placement.connect("md5")?;
    let words = worker.job().words;
    let r = run(&worker, sched.as_mut(), Md5Checkpoint::default())?;
    match &r.output {
        Some(found) => println!(
            "found: {:?} (word {} of {words}; MD5 verified = {})",
            found.word,
            found.index,
            worker.job().target_hex()
        ),
        None => println!("not found: no word of the {words} matches"),
    }
    println!("words hashed: {}", r.checkpoint.words_hashed);
    print!("{}", describe(&r.segments, args.placement.migrate_after));
    Ok(())
}

#[derive(Args)]
pub struct PrimeArgs {
    /// The number to factorise (2 ..= 2^64-1).
    n: u64,
    /// Divisors between checkpoints on the CPU (paper: 1000).
    #[arg(long, default_value_t = hetsched_apps::prime::CPU_INTERVAL)]
    cpu_interval: u64,
    /// Divisors per OpenCL launch / checkpoint.
    #[arg(long, default_value_t = hetsched_apps::prime::OPENCL_INTERVAL)]
    opencl_interval: u32,
    #[command(flatten)]
    placement: Placement,
}

fn prime(args: PrimeArgs) -> Result<()> {
    let start = PrimeCheckpoint::start(args.n)?;
    let worker = PrimeFactoriser::new(PrimeConfig {
        cpu_interval: args.cpu_interval,
        opencl_interval: args.opencl_interval,
    })?;
    let mut sched = args.placement.connect("prime")?;
    let r = run(&worker, sched.as_mut(), start)?;
    let factors: Vec<String> = r
        .output
        .iter()
        .map(|&(p, k)| {
            if k == 1 {
                p.to_string()
            } else {
                format!("{p}^{k}")
            }
        })
        .collect();
    println!(
        "{} = {} (verified: product and primality)",
        args.n,
        factors.join(" * ")
    );
    println!("divisors tested: {}", r.checkpoint.divisors_tested);
    print!("{}", describe(&r.segments, args.placement.migrate_after));
    Ok(())
}
