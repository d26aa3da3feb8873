//! `hetsched slow-cpu --cpu N --leave F -- CMD ARGS...`: runs a command while one CPU is
//! made slower (the load is `hetsched_live::slow_cpu`; this module only parses and
//! reports).

use clap::Args;
use hetsched_core::machine::CAPACITY_SCALE;
use hetsched_core::{Error, Result};
use hetsched_live::slow_cpu::SlowCpu;
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

#[derive(Args)]
pub struct SlowCpuArgs {
    /// The CPU to slow (as `hetsched topology` and the kernel number them).
    #[arg(long)]
    cpu: usize,
    /// The fraction of the CPU left to other tasks, in [0.1, 1): 0.5 makes a CPU of
    /// capacity 512 (half of 1024).
    #[arg(long)]
    leave: f64,
    /// The load's duty-cycle period, ms (1–100).
    #[arg(long, default_value_t = 10)]
    period_ms: u64,
    /// The command to run while the CPU is slow; `slow-cpu` exits as it did.
    #[arg(required = true, last = true, value_name = "CMD")]
    command: Vec<OsString>,
}

/// Runs the command with the CPU slowed, says on stderr what the load did, and exits as
/// the command did (its code, or 128 + the signal that killed it).
pub fn run(args: SlowCpuArgs) -> Result<()> {
    let slow = SlowCpu::start(args.cpu, args.leave, Duration::from_millis(args.period_ms))?;
    eprintln!(
        "slow-cpu: CPU {} leaves {:.2} of its time to other tasks (capacity {:.0} of {CAPACITY_SCALE} in a machine file)",
        args.cpu,
        args.leave,
        args.leave * CAPACITY_SCALE as f64
    );
    let status = std::process::Command::new(&args.command[0])
        .args(&args.command[1..])
        .status()
        .map_err(|e| {
            Error::input(format!(
                "{}: cannot run it: {e}",
                args.command[0].to_string_lossy()
            ))
        })?;
    let load = slow.stop();
    eprintln!(
        "slow-cpu: the load ran {:.2} s and took {:.3} of CPU {} (asked: {:.3})",
        load.seconds,
        load.busy,
        args.cpu,
        1.0 - args.leave
    );
    match (status.code(), status.signal()) {
        (Some(0), _) => Ok(()),
        (Some(code), _) => std::process::exit(code),
        (None, Some(signal)) => std::process::exit(128 + signal),
        (None, None) => std::process::exit(1),
    }
}
