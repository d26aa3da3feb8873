//! `hetsched calibrate`: measures this machine into a [`Calibration`].
//!
//! What it measures, each figure repeated (`runs`) with the measurements of one kind
//! interleaved, so that a burst of load on a shared machine spreads over all of them
//! rather than slowing one:
//!
//! - **Each CPU's rate per kernel**: one thread pinned to the PU runs the kernel alone for
//!   `seconds` (after a warm-up checkpoint). A CPU's capacity is its rate over the
//!   fastest CPU's, so a CPU slowed by `hetsched slow-cpu` (or by a frequency cap)
//!   shows as a smaller capacity; one within [`EQUAL`] of the fastest is as fast.
//! - **A process's start-up**: a client process that factorises 4, under a daemon, from
//!   spawn to exit.
//! - **Each kernel under the daemon**: one process a CPU, each of about `2 × seconds` of
//!   work on it, all at once under a daemon that each asks at every checkpoint whether
//!   to go on. The daemon's thread then competes with them for the CPUs, as it does
//!   while a validation keeps every CPU busy. Their rate, scaled to capacity 1024, is
//!   what the simulator's tasks are made of; the difference from the rate alone is the
//!   cost of a decision (the client's and the daemon's), which is printed.
//! - **The OpenCL device** (where there is one and `opencl` is set): each kernel's rate
//!   on the whole device; the cost of setting the device up for a grant and freeing it
//!   (PoCL builds the kernel at every `init`); and, with md5 on every CPU and on the
//!   device at once, each side's rate over its rate alone (PoCL's device computes on the
//!   CPUs' cores): the CPUs' share in even runs, the device's in odd ones, the side
//!   measured running for `seconds` while the other runs throughout; and what a
//!   process's first grant costs beyond the set-up (the platform starting).

use crate::calibration::{Calibration, Cpu, Kernel, KernelFigures, OpenCl, FORMAT};
use crate::workload::JobSpec;
use hetsched_apps::md5::{Md5Checkpoint, Md5Config, Md5Cracker, Md5Job};
use hetsched_apps::prime::{PrimeCheckpoint, PrimeConfig, PrimeFactoriser};
use hetsched_apps::rate::measure;
use hetsched_core::machine::CAPACITY_SCALE;
use hetsched_core::{Error, Result};
use hetsched_live::session;
use hetsched_util::stats::Spread;
use hetsched_worker::{Grant, Worker};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// CPUs whose rate is within this fraction of the fastest's are given its capacity.
pub const EQUAL: f64 = 0.03;

/// What to measure and how long.
#[derive(Clone, Debug)]
pub struct Options {
    /// Seconds of each rate measurement.
    pub seconds: f64,
    /// Repetitions of each measurement.
    pub runs: usize,
    /// The program whose `app md5|prime` subcommands are the client processes (the
    /// `hetsched` binary).
    pub apps: PathBuf,
    /// Measure the OpenCL device too (when there is one).
    pub opencl: bool,
}

impl Options {
    pub fn check(&self) -> Result<()> {
        if !(0.05..=60.0).contains(&self.seconds) {
            return Err(Error::input(format!(
                "--seconds: {}, accepted [0.05, 60]",
                self.seconds
            )));
        }
        if !(1..=100).contains(&self.runs) {
            return Err(Error::input(format!(
                "--runs: {}, accepted 1..=100",
                self.runs
            )));
        }
        Ok(())
    }
}

/// The two kernels' workers, each with a start that never ends early.
struct Workers {
    md5: Md5Cracker,
    prime: PrimeFactoriser,
}

impl Workers {
    fn new() -> Result<Workers> {
        // No word of this space hashes to MD5("!"), so the search never ends early.
        let job = Md5Job::new(
            &hetsched_apps::md5::md5_hex(b"!"),
            "abcdefghijklmnopqrstuvwxyz0123456789",
            8,
        )?;
        Ok(Workers {
            md5: Md5Cracker::new(job, Md5Config::default())?,
            prime: PrimeFactoriser::new(PrimeConfig::default())?,
        })
    }

    /// Items per second of `kernel` on `grant` over `budget`.
    fn rate(&self, kernel: Kernel, grant: &Grant, budget: Duration) -> Result<f64> {
        let r = match kernel {
            Kernel::Md5 => measure(&self.md5, grant, &Md5Checkpoint::default(), budget, |c| {
                c.words_hashed
            })?,
            // 2^61 − 1 is prime: trial division runs to 1.5e9 and never ends early.
            Kernel::Prime => measure(
                &self.prime,
                grant,
                &PrimeCheckpoint::start((1 << 61) - 1)?,
                budget,
                |c| c.divisors_tested,
            )?,
        };
        Ok(r.per_second())
    }

    /// Seconds to set `kernel` up on `grant` and free it, doing no work.
    fn setup(&self, kernel: Kernel, grant: &Grant) -> Result<f64> {
        fn time<W: Worker>(w: &W, grant: &Grant, start: &W::Checkpoint) -> Result<f64> {
            let implementation = w
                .implementation_for(grant.kind)
                .ok_or_else(|| Error::input(format!("no {} implementation", grant.kind)))?;
            let t = Instant::now();
            implementation.init(start, grant)?.free()?;
            Ok(t.elapsed().as_secs_f64())
        }
        match kernel {
            Kernel::Md5 => time(&self.md5, grant, &Md5Checkpoint::default()),
            Kernel::Prime => time(&self.prime, grant, &PrimeCheckpoint::start((1 << 61) - 1)?),
        }
    }

    fn interval(&self, kernel: Kernel, opencl: bool) -> u64 {
        let (c, o) = match kernel {
            Kernel::Md5 => (
                hetsched_apps::md5::CPU_INTERVAL,
                hetsched_apps::md5::OPENCL_INTERVAL,
            ),
            Kernel::Prime => (
                hetsched_apps::prime::CPU_INTERVAL,
                hetsched_apps::prime::OPENCL_INTERVAL,
            ),
        };
        if opencl {
            o as u64
        } else {
            c
        }
    }
}

/// Measures this machine; `say` receives a line as each step starts and ends.
pub fn calibrate(o: &Options, say: &mut dyn FnMut(&str)) -> Result<Calibration> {
    o.check()?;
    let budget = Duration::from_secs_f64(o.seconds);
    let w = Workers::new()?;
    let load =
        hetsched_util::host::LoadAverage::now().map_or_else(|| "unknown".into(), |l| l.to_string());
    say(&format!("load average (1/5/15 min): {load}"));
    let machine = hetsched_topology::load("live", hetsched_core::machine::UnitGranularity::Pu)?;
    let pus: Vec<u32> = machine
        .units
        .iter()
        .filter(|u| u.kind == hetsched_core::machine::UnitType::Cpu)
        .flat_map(|u| u.cpus.iter().copied())
        .collect();

    // Each CPU's rates, the CPUs and kernels interleaved within each run.
    say(&format!(
        "CPU rates: {} CPUs x 2 kernels x {} runs of {:.2} s",
        pus.len(),
        o.runs,
        o.seconds
    ));
    let mut samples = vec![[Vec::new(), Vec::new()]; pus.len()];
    for run in 0..o.runs {
        for (i, &pu) in pus.iter().enumerate() {
            for (k, kernel) in Kernel::ALL.into_iter().enumerate() {
                let r = w.rate(kernel, &Grant::cpu(0, vec![pu as usize]), budget)?;
                samples[i][k].push(r);
            }
        }
        say(&format!("  run {}/{} done", run + 1, o.runs));
    }
    let fastest: Vec<f64> = (0..2)
        .map(|k| {
            samples
                .iter()
                .map(|s| Spread::of(&s[k]).median)
                .fold(0.0, f64::max)
        })
        .collect();
    let cpus: Vec<Cpu> = pus
        .iter()
        .zip(&samples)
        .map(|(&pu, s)| {
            let (md5, prime) = (Spread::of(&s[0]), Spread::of(&s[1]));
            let ratio = (md5.median / fastest[0] * prime.median / fastest[1]).sqrt();
            // Equal CPUs measure a few per cent apart on a shared machine: within
            // EQUAL of the fastest, a CPU is as fast.
            let ratio = if ratio >= 1.0 - EQUAL { 1.0 } else { ratio };
            Cpu {
                os_index: pu,
                capacity: ((ratio * CAPACITY_SCALE as f64).round() as u32).clamp(1, CAPACITY_SCALE),
                md5_per_s: md5,
                prime_per_s: prime,
            }
        })
        .collect();
    for c in &cpus {
        say(&format!(
            "  CPU {}: capacity {} (md5 {:.3e} words/s, prime {:.3e} divisors/s)",
            c.os_index, c.capacity, c.md5_per_s.median, c.prime_per_s.median
        ));
    }
    // A kernel's CPU rate at capacity 1024: the fastest CPU's.
    let reference = |k: usize| -> Spread {
        let best = cpus
            .iter()
            .max_by(|a, b| {
                a.rate(Kernel::ALL[k])
                    .median
                    .total_cmp(&b.rate(Kernel::ALL[k]).median)
            })
            .expect("a machine has a CPU");
        *best.rate(Kernel::ALL[k])
    };

    let kernels = Kernel::ALL
        .iter()
        .enumerate()
        .map(|(k, &kernel)| KernelFigures {
            kernel,
            unit: "cpu".into(),
            rate: reference(k),
            interval: w.interval(kernel, false),
            under_daemon: None,
        })
        .collect();
    let mut cal = Calibration {
        format: FORMAT,
        host: hostname(),
        load,
        memory_bytes: machine.numa_nodes.iter().map(|n| n.memory_bytes).sum(),
        startup_s: Spread::of(&[0.0]),
        cpus,
        kernels,
        opencl: None,
    };

    // A process's start-up, under a daemon.
    say(&format!(
        "process start-up under the daemon: {} runs",
        o.runs
    ));
    let trivial = JobSpec::prime(1)?;
    let mut startup = Vec::new();
    for _ in 0..o.runs {
        let (m, index) = cal.machine(false)?;
        let out = session::run(m, index, "fcfs", &[trivial.live(0, &o.apps)])?;
        startup.push(out.jobs[0].turnaround_s);
    }
    cal.startup_s = Spread::of(&startup);
    say(&format!("  {:.1} ms (median)", cal.startup_s.median * 1e3));

    // Each kernel under the daemon, one process per CPU at once: the daemon's thread
    // then has no idle CPU to run on, as in a validation's busy phases.
    say(&format!(
        "each kernel under the daemon, one process a CPU: 2 kernels x {} runs of {:.2} s",
        o.runs,
        2.0 * o.seconds
    ));
    let mut daemon_rates = [Vec::new(), Vec::new()];
    for _ in 0..o.runs {
        for (k, kernel) in Kernel::ALL.into_iter().enumerate() {
            let (m, index) = cal.machine(false)?;
            let jobs = cal
                .cpus
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let items = (2.0 * o.seconds * c.rate(kernel).median) as u64;
                    let job = match kernel {
                        Kernel::Md5 => JobSpec::md5(items + i as u64)?,
                        Kernel::Prime => JobSpec::prime(items)?,
                    };
                    Ok(job)
                })
                .collect::<Result<Vec<_>>>()?;
            let live: Vec<_> = jobs
                .iter()
                .enumerate()
                .map(|(i, j)| j.live(i, &o.apps))
                .collect();
            let out = session::run(m, index, "fcfs", &live)?;
            for ran in &out.jobs {
                let i: usize = ran
                    .name
                    .split(':')
                    .next()
                    .and_then(|i| i.parse().ok())
                    .unwrap_or(0);
                let pu = granted_pu(&ran.output).ok_or_else(|| {
                    Error::runtime(format!(
                        "{}: no CPU segment in its output: {}",
                        ran.name, ran.output
                    ))
                })?;
                let capacity = cal
                    .cpus
                    .iter()
                    .find(|c| c.os_index == pu)
                    .map_or(CAPACITY_SCALE, |c| c.capacity);
                let compute = (ran.turnaround_s - cal.startup_s.median).max(1e-6);
                daemon_rates[k]
                    .push(jobs[i].items as f64 / compute * CAPACITY_SCALE as f64 / capacity as f64);
            }
        }
    }
    for (k, f) in cal.kernels.iter_mut().enumerate() {
        let d = Spread::of(&daemon_rates[k]);
        let per_decision = f.interval as f64 * (1.0 / d.median - 1.0 / f.rate.median);
        say(&format!(
            "  {}: {:.3e} {}/s under the daemon, {:.3e} alone: {:.1} µs a checkpoint",
            f.kernel.name(),
            d.median,
            f.kernel.items(),
            f.rate.median,
            per_decision * 1e6
        ));
        f.under_daemon = Some(d);
    }

    if o.opencl {
        let alone: Vec<(u32, f64)> = cal
            .cpus
            .iter()
            .map(|c| (c.os_index, c.md5_per_s.median))
            .collect();
        cal.opencl = opencl(&w, o, budget, &alone, &mut cal.kernels, say)?;
    }
    if hetsched_live::devices::cuda_devices().is_empty() {
        say("CUDA: no device here (no driver library or no GPU)");
    } else {
        say("CUDA: a device is present, but the applications have no CUDA implementation to calibrate");
    }
    cal.check()
        .map_err(|e| Error::runtime(format!("the measured calibration: {e}")))?;
    Ok(cal)
}

/// The OpenCL device's figures, or `None` (said) where there is no device.
fn opencl(
    w: &Workers,
    o: &Options,
    budget: Duration,
    pus: &[(u32, f64)],
    kernels: &mut Vec<KernelFigures>,
    say: &mut dyn FnMut(&str),
) -> Result<Option<OpenCl>> {
    let devices = match hetsched_apps::opencl::devices() {
        Ok(d) if !d.is_empty() => d,
        _ => {
            say("OpenCL: no device (no ICD loader or no platform); not calibrated");
            return Ok(None);
        }
    };
    let device = hetsched_apps::opencl::device_name(&devices[0]);
    say(&format!(
        "OpenCL device 0 ({device}): rates and set-up, 2 kernels x {} runs",
        o.runs
    ));
    let grant = Grant::opencl(1, 0);
    let mut rates = [Vec::new(), Vec::new()];
    let mut setups = [Vec::new(), Vec::new()];
    for _ in 0..o.runs {
        for (k, kernel) in Kernel::ALL.into_iter().enumerate() {
            rates[k].push(w.rate(kernel, &grant, budget)?);
            setups[k].push(w.setup(kernel, &grant)?);
        }
    }
    for (k, kernel) in Kernel::ALL.into_iter().enumerate() {
        let rate = Spread::of(&rates[k]);
        let setup = Spread::of(&setups[k]);
        say(&format!(
            "  {}: {:.3e} {}/s, set-up {:.1} ms a grant",
            kernel.name(),
            rate.median,
            kernel.items(),
            setup.median * 1e3
        ));
        kernels.push(KernelFigures {
            kernel,
            unit: "opencl".into(),
            rate,
            interval: w.interval(kernel, true),
            under_daemon: None,
        });
    }
    // Every CPU runs md5 while the device does: each side's rate over its rate alone.
    say(&format!(
        "the CPUs and the device at once (md5 on every CPU and on the device): {} runs",
        o.runs
    ));
    let mut cpu_shares = Vec::new();
    let mut device_shares = Vec::new();
    for run in 0..o.runs {
        let device_alone = w.rate(Kernel::Md5, &grant, budget)?;
        // The side measured runs `budget` while the other runs throughout.
        let (cpus, device) = std::thread::scope(|s| -> Result<(Vec<f64>, f64)> {
            let long = budget.mul_f64(1.5);
            let cpu_threads: Vec<_> = pus
                .iter()
                .map(|&(pu, _)| {
                    let b = if run % 2 == 0 { budget } else { long };
                    s.spawn(move || w.rate(Kernel::Md5, &Grant::cpu(0, vec![pu as usize]), b))
                })
                .collect();
            let d = w.rate(
                Kernel::Md5,
                &grant,
                if run % 2 == 0 { long } else { budget },
            );
            let mut c = Vec::new();
            for t in cpu_threads {
                c.push(
                    t.join()
                        .map_err(|_| Error::runtime("a CPU measurement panicked"))??,
                );
            }
            Ok((c, d?))
        })?;
        // Even runs measure the CPUs while the device runs throughout, odd runs the
        // device while the CPUs do.
        if run % 2 == 0 {
            for (&(_, alone), shared) in pus.iter().zip(cpus) {
                cpu_shares.push(shared / alone);
            }
        } else {
            device_shares.push(device / device_alone);
        }
    }
    if device_shares.is_empty() {
        device_shares.push(w.rate(Kernel::Md5, &grant, budget)? / kernels_device_md5(kernels));
    }
    let cpu_share = Spread::of(&cpu_shares);
    let device_share = Spread::of(&device_shares);
    // A process's first grant also starts the OpenCL platform: a trivial search run
    // standalone on the device, less the same on a CPU, less the set-up.
    let mut first = Vec::new();
    let hash = hetsched_apps::md5::md5_hex(b"b");
    for _ in 0..o.runs {
        let mut took = [0.0; 2];
        for (i, device) in ["cpu", "opencl"].into_iter().enumerate() {
            let t = Instant::now();
            let out = std::process::Command::new(&o.apps)
                .args([
                    "app", "md5", "--hash", &hash, "--length", "1", "--device", device,
                ])
                .output()
                .map_err(|e| Error::runtime(format!("{}: {e}", o.apps.display())))?;
            if !out.status.success() {
                return Err(Error::runtime(format!(
                    "app md5 --device {device}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            took[i] = t.elapsed().as_secs_f64();
        }
        first.push(took[1] - took[0]);
    }
    let setup = Spread::of(&setups[0]).median;
    let first_grant_s = Spread::of(
        &first
            .iter()
            .map(|f| (f - setup).max(0.0))
            .collect::<Vec<_>>(),
    );
    say(&format!(
        "  a CPU keeps {:.2} of its rate while the device computes; the device keeps {:.2} of its rate while every CPU computes",
        cpu_share.median, device_share.median
    ));
    say(&format!(
        "  a process's first grant costs {:.1} ms more (the OpenCL platform starts)",
        first_grant_s.median * 1e3
    ));
    Ok(Some(OpenCl {
        first_grant_s,
        device,
        md5_setup_s: Spread::of(&setups[0]),
        prime_setup_s: Spread::of(&setups[1]),
        cpu_share,
        device_share,
    }))
}

/// The device's md5 rate alone (measured above).
fn kernels_device_md5(kernels: &[KernelFigures]) -> f64 {
    kernels
        .iter()
        .find(|k| k.kernel == Kernel::Md5 && k.unit == "opencl")
        .map_or(1.0, |k| k.rate.median)
}

/// The PU of the first CPU segment in an app's output ("N checkpoints on cpu (PUs [P])").
fn granted_pu(output: &str) -> Option<u32> {
    let line = output
        .lines()
        .find(|l| l.contains("checkpoints on cpu (PUs ["))?;
    let inside = line.split("PUs [").nth(1)?.split(']').next()?;
    inside.split(',').next()?.trim().parse().ok()
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map_or_else(|_| "unknown".into(), |h| h.trim().to_string())
}
