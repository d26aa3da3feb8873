//! `hetsched bench daemon` and `bench hostile`: the live daemon's latency and throughput,
//! alone and under attack by another user's client (logic in `hetsched_live::bench` and
//! `hetsched_live::hostile`; this module holds their options and prints).

use clap::Args;
use hetsched_core::Result;
use hetsched_live::bench::Placement;

use crate::{options, Benchmark};

pub(crate) const DAEMON: Benchmark = Benchmark {
    key: "daemon",
    about: "The live daemon: alloc+free latency, in-slice re-request cost, throughput",
    args: <Daemon as clap::Args>::augment_args,
    run: |m| daemon(options(m)?),
};

pub(crate) const HOSTILE: Benchmark = Benchmark {
    key: "hostile",
    about: "The daemon under attack by another user's client: a well-behaved client's alloc+free p50/p99/max and the daemon's CPU, with each attack and without",
    args: <Hostile as clap::Args>::augment_args,
    run: |m| hostile(options(m)?),
};

#[derive(Args)]
struct Daemon {
    /// Alloc+free round trips timed for the latency figures (per placement).
    #[arg(long, default_value_t = 20_000)]
    round_trips: usize,
    /// Concurrent clients for the throughput figures.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Units the daemon arbitrates (virtual CPU units).
    #[arg(long, default_value_t = 16)]
    units: u32,
    /// Policy spec.
    #[arg(long, default_value = "fcfs")]
    policy: String,
    /// Measure only these placements (default: all three): `apart` (the daemon on the
    /// last CPU, the timed client on the first), `colocated` (all on the first CPU),
    /// `unpinned` (the kernel places them).
    #[arg(long, value_delimiter = ',', value_parser = Placement::NAMES)]
    placement: Vec<String>,
    /// Empty tasks per batch in the batched case (two requests each, at most 512);
    /// 0 leaves the batched case out.
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// Client processes of the batched case.
    #[arg(long, default_value_t = 2)]
    batch_clients: usize,
    /// Empty tasks each batched-case client runs.
    #[arg(long, default_value_t = 200_000)]
    batch_tasks: usize,
    /// Tasks of each of StarPU's overhead examples run beside (Debian's
    /// `starpu-examples`, if installed); 0 leaves StarPU out.
    #[arg(long, default_value_t = 20_000)]
    starpu_tasks: usize,
    /// Run as one batched-case client of the daemon at this socket (the bench starts
    /// its client processes so).
    #[arg(long, hide = true)]
    batch_client: Option<std::path::PathBuf>,
}

fn daemon(args: Daemon) -> Result<()> {
    let (tasks, batch) = (args.batch_tasks, args.batch);
    if let Some(socket) = &args.batch_client {
        return hetsched_live::bench::batch_client(socket, tasks, batch);
    }
    let exe = std::env::current_exe()
        .map_err(|e| hetsched_core::Error::runtime(format!("this program's path: {e}")))?;
    let batched = (batch > 0).then(|| hetsched_live::bench::BatchedOptions {
        clients: args.batch_clients,
        tasks,
        batch,
        command: Box::new(move |socket: &std::path::Path| {
            let mut c = std::process::Command::new(&exe);
            c.args(["bench", "daemon", "--batch-client"])
                .arg(socket)
                .args(["--batch", &batch.to_string()])
                .args(["--batch-tasks", &tasks.to_string()]);
            c
        }),
    });
    let report = hetsched_live::bench::run(&hetsched_live::bench::Options {
        round_trips: args.round_trips,
        clients: args.clients,
        units: args.units,
        policy: args.policy,
        // clap accepted only Placement::NAMES.
        placements: args
            .placement
            .iter()
            .filter_map(|p| Placement::parse(p))
            .collect(),
        batched,
    })?;
    print!("{report}");
    if args.starpu_tasks > 0 {
        crate::peers::starpu_beside(&report, args.starpu_tasks);
    }
    Ok(())
}

#[derive(Args)]
struct Hostile {
    /// The attacks to run, in order (`none` is the reference without an attacker).
    #[arg(long, value_delimiter = ',', value_parser = hetsched_live::hostile::Attack::NAMES,
          default_value = "none,threads,holder,flood,stats")]
    attack: Vec<String>,
    /// Seconds of timed round trips under each attack.
    #[arg(long, default_value_t = 5.0)]
    secs: f64,
    /// Threads of the attacker's process (the threads and holder attacks).
    #[arg(long, default_value_t = 8000)]
    threads: usize,
    /// Connections of the flood and stats attacks.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// The attacker's nice value: 10 measures what it costs others through the daemon;
    /// 0 adds what its busy threads take of the CPUs themselves.
    #[arg(long, default_value_t = 10, allow_hyphen_values = true,
          value_parser = clap::value_parser!(i32).range(-20..=19))]
    attacker_nice: i32,
    /// Run as the attacker against the daemon at this socket (the bench starts its
    /// attacker so).
    #[arg(long, hide = true)]
    attacker: Option<std::path::PathBuf>,
}

fn hostile(args: Hostile) -> Result<()> {
    use hetsched_live::hostile::{self, Attack};
    // clap accepted only Attack::NAMES.
    let attacks: Vec<Attack> = args
        .attack
        .iter()
        .filter_map(|a| Attack::parse(a))
        .collect();
    if let Some(socket) = &args.attacker {
        return hostile::attacker(attacks[0], socket, args.threads, args.connections);
    }
    if !(0.1..=3600.0).contains(&args.secs) {
        return Err(hetsched_core::Error::range(
            "--secs", args.secs, 0.1, 3600.0,
        ));
    }
    let exe = std::env::current_exe()
        .map_err(|e| hetsched_core::Error::runtime(format!("this program's path: {e}")))?;
    let (threads, connections) = (args.threads, args.connections);
    let report = hostile::run(&hostile::Options {
        attacks,
        duration: std::time::Duration::from_secs_f64(args.secs),
        threads,
        connections,
        attacker_nice: args.attacker_nice,
        command: Box::new(move |socket: &std::path::Path, attack: Attack| {
            let mut c = std::process::Command::new(&exe);
            c.args(["bench", "hostile", "--attacker"])
                .arg(socket)
                .args(["--attack", attack.name()])
                .args(["--threads", &threads.to_string()])
                .args(["--connections", &connections.to_string()]);
            c
        }),
    })?;
    print!("{report}");
    Ok(())
}
