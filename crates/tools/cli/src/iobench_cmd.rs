//! `hetsched iobench FILE`: the zmIO-like direct-I/O benchmark (`hetsched_akram::iobench`);
//! this module only parses and prints.

use clap::{Args, ValueEnum};
use hetsched_akram::iobench::{self, Config, Op, Options, Touch};
use hetsched_core::machine::UnitGranularity;
use hetsched_core::{Error, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Copy, ValueEnum)]
enum OpArg {
    Read,
    Write,
}

#[derive(Clone, Copy, ValueEnum)]
enum TouchArg {
    None,
    Sum,
    Store,
}

#[derive(Args)]
pub struct IobenchArgs {
    /// A file on a disk-backed file system, or a block device (reads only).
    #[arg(value_name = "FILE")]
    path: PathBuf,
    /// Benchmark instances (threads, each with its own buffers and io_uring).
    #[arg(long, short = 'n', default_value_t = 1)]
    instances: u32,
    /// Requests outstanding per instance.
    #[arg(long, short = 'q', default_value_t = 32)]
    depth: u32,
    /// Bytes per request: a multiple of the logical block size (suffixes k, m, g = KiB, MiB, GiB).
    #[arg(long, short = 'b', default_value = "1m", value_parser = bytes)]
    block_size: u64,
    #[arg(long, value_enum, default_value = "read")]
    op: OpArg,
    /// Seconds to run.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Bytes of the file to walk (default: its size); a write creates or extends the file to it.
    #[arg(long, value_parser = bytes)]
    size: Option<u64>,
    /// NUMA node of the instances' threads.
    #[arg(long, conflicts_with = "config")]
    cpu_node: Option<u32>,
    /// NUMA node of the instances' buffers.
    #[arg(long, conflicts_with = "config")]
    mem_node: Option<u32>,
    /// One of the paper's configurations: TRLCPL, TRLCPR, TRRCPL, TRRCPR (relative to the device's node).
    #[arg(long, value_parser = config)]
    config: Option<Config>,
    /// What each instance does with the data of a completed request.
    #[arg(long, value_enum, default_value = "none")]
    touch: TouchArg,
    /// Co-run a STREAM-like memory-stress thread.
    #[arg(long)]
    stress: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// A byte count: digits with an optional binary suffix k, m, g (fio's meaning of 1m).
pub fn bytes(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("ib")
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(&t);
    let (digits, shift) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 10),
        Some('m') => (&t[..t.len() - 1], 20),
        Some('g') => (&t[..t.len() - 1], 30),
        Some('t') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| {
            format!(
                "expected bytes as an integer with an optional k/m/g/t suffix (binary), got {s:?}"
            )
        })
}

fn config(s: &str) -> std::result::Result<Config, String> {
    Config::parse(s).ok_or_else(|| "expected one of TRLCPL, TRLCPR, TRRCPL, TRRCPR".into())
}

pub fn iobench(args: IobenchArgs) -> Result<()> {
    if !(0.05..=86_400.0).contains(&args.seconds) {
        return Err(Error::range("--seconds", args.seconds, 0.05, 86_400.0));
    }
    let opts = Options {
        path: args.path,
        instances: args.instances,
        depth: args.depth,
        block: args.block_size,
        op: match args.op {
            OpArg::Read => Op::Read,
            OpArg::Write => Op::Write,
        },
        duration: Duration::from_secs_f64(args.seconds),
        size: args.size,
        cpu_node: args.cpu_node,
        mem_node: args.mem_node,
        config: args.config,
        touch: match args.touch {
            TouchArg::None => Touch::None,
            TouchArg::Sum => Touch::Sum,
            TouchArg::Store => Touch::Store,
        },
        stress: args.stress,
    };
    let machine = hetsched_topology::load("live", UnitGranularity::Pu)?;
    // A progress line on stderr (terminals only) from the first second on.
    let bar = ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("iobench [{bar:30}] {msg}").map_err(Error::runtime)?,
    );
    let report = iobench::run(&opts, &machine, |p| {
        bar.set_position((p.elapsed.as_secs_f64() / p.duration.as_secs_f64() * 1000.0) as u64);
        bar.set_message(format!(
            "{:.1}/{:.0} s, {:.1} MB/s",
            p.elapsed.as_secs_f64(),
            p.duration.as_secs_f64(),
            p.bytes as f64 / p.elapsed.as_secs_f64() / 1e6
        ));
    });
    bar.finish_and_clear();
    let r = report?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&r).map_err(Error::runtime)?
        );
        return Ok(());
    }
    let p = &r.placement;
    println!(
        "iobench {}: {:?} {} instance(s) × {} outstanding × {} bytes, O_DIRECT, io_uring, touch {:?}{}",
        r.path.display(),
        r.op,
        r.instances,
        r.depth,
        r.block_bytes,
        r.touch,
        if opts.stress { ", memory stress" } else { "" }
    );
    println!(
        "device {} (NUMA node {}); placement: {}",
        p.device.as_deref().unwrap_or("unknown"),
        p.device_node.map_or("unknown".into(), |n| n.to_string()),
        p.note
    );
    println!(
        "throughput {:.1} MB/s ({:.1} MiB/s), {:.0} IOPS over {:.2} s ({} requests)",
        r.throughput_bytes_per_s / 1e6,
        r.throughput_bytes_per_s / (1u64 << 20) as f64,
        r.iops,
        r.seconds,
        r.requests
    );
    let l = &r.latency;
    println!(
        "latency µs: mean {:.0}, p50 {}, p90 {}, p99 {}, p99.9 {}, max {}",
        l.mean_us, l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.max_us
    );
    let c = &r.cpio;
    println!(
        "CPIO (cycles per 512-byte sector at {:.0} MHz, {}): total {:.2} (user {:.2}, system {:.2}), iowait {:.2}",
        c.clock.mhz, c.clock.source, c.total, c.user, c.system, c.iowait
    );
    if let Some(s) = r.stress_bytes_per_s {
        println!("memory stress: {:.2} GB/s", s / 1e9);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_take_binary_suffixes() {
        assert_eq!(bytes("1m"), Ok(1 << 20));
        assert_eq!(bytes("4K"), Ok(4096));
        assert_eq!(bytes("1GiB"), Ok(1 << 30));
        assert_eq!(bytes("512"), Ok(512));
        assert!(bytes("1.5m").is_err());
        assert!(bytes("99999999999t").is_err());
        assert!(bytes("").is_err());
    }
}
