//! `hetsched daemon` (the live runtime) and `hetsched client ...` (talk to one).

use clap::{Args, Subcommand};
use hetsched_core::machine::UnitType;
use hetsched_core::task::Affinity;
use hetsched_core::{Error, Result};
use hetsched_live::client::Client;
use hetsched_live::protocol::{MetaInfo, Reply, UnitChanges};
use hetsched_live::{daemon, server};
use std::path::PathBuf;

#[derive(Args)]
pub struct DaemonArgs {
    /// Socket path (default: $HETSCHED_SOCKET, $XDG_RUNTIME_DIR/hetsched/daemon.sock, root's /run/hetsched/daemon.sock or /tmp/hetsched-$UID/daemon.sock).
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Policy spec, `name[:key=value,...]` (see `hetsched policies`).
    #[arg(long, default_value = "cfs")]
    policy: String,
    /// Machine whose units to arbitrate: `live` (this machine's PUs plus the OpenCL and
    /// CUDA devices found) or any description (its units become virtual ones).
    #[arg(long, default_value = "live")]
    machine: String,
    /// Seed for seeded policies.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// On SIGINT / SIGTERM, write the run's Perfetto trace here (the simulator's
    /// format), print its metrics table and check the run record's invariants.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Microseconds to keep polling after the last request before sleeping (0: always
    /// sleep; a request then costs a wake-up).
    #[arg(long, default_value_t = server::DEFAULT_BUSY_POLL.as_micros() as u64)]
    busy_poll_us: u64,
    /// Nice value of the event loop's thread: below 0, it is not kept waiting by other
    /// users' busy threads (needs root or CAP_SYS_NICE; otherwise it says so and runs at
    /// its own).
    #[arg(long, default_value_t = server::DEFAULT_NICE, allow_hyphen_values = true,
          value_parser = clap::value_parser!(i32).range(-20..=19))]
    nice: i32,
    /// Keep the performance models of a policy that reads them (dmda) in DIR
    /// (`<machine>.json`; default $HETSCHED_HOME/perfmodels, else ~/.hetsched/perfmodels):
    /// loaded at start, written at exit, as StarPU keeps its sampling directory.
    #[arg(long, value_name = "DIR", conflicts_with = "no_perfmodel")]
    perfmodel: Option<PathBuf>,
    /// Keep no performance models: start with none, write none.
    #[arg(long)]
    no_perfmodel: bool,
    /// CPU=CAPACITY: a CPU's capacity (1–1024) where the machine's source cannot see it,
    /// e.g. `1=512` for CPU 1 slowed by `hetsched slow-cpu --cpu 1 --leave 0.5`
    /// (repeatable, or comma-separated).
    #[arg(long, value_name = "CPU=CAP", value_delimiter = ',', value_parser = cpu_capacity)]
    capacity: Vec<(u32, u32)>,
}

/// `CPU=CAPACITY`, both numbers; the range is the machine's to check.
fn cpu_capacity(s: &str) -> std::result::Result<(u32, u32), String> {
    let (cpu, cap) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected CPU=CAPACITY, e.g. 1=512"))?;
    let number = |x: &str| {
        x.trim()
            .parse::<u32>()
            .map_err(|_| format!("{s:?}: expected CPU=CAPACITY, two whole numbers, e.g. 1=512"))
    };
    Ok((number(cpu)?, number(cap)?))
}

pub fn daemon(args: DaemonArgs) -> Result<()> {
    let options = daemon::Options {
        socket: args.socket,
        policy: args.policy,
        machine: args.machine,
        seed: args.seed,
        trace: args.trace,
        busy_poll: std::time::Duration::from_micros(args.busy_poll_us),
        nice: args.nice,
        models: match (args.perfmodel, args.no_perfmodel) {
            (_, true) => daemon::Models::Off,
            (Some(dir), _) => daemon::Models::In(dir),
            (None, false) => daemon::Models::Default,
        },
        capacities: args.capacity,
    };
    let ended = daemon::serve(options, &mut |line| eprintln!("hetsched daemon: {line}"))?;
    if let Some(t) = ended.trace {
        eprint!("{}", t.table);
        match t.invariants {
            Ok(()) => eprintln!("hetsched daemon: run record invariants: ok"),
            Err(e) => eprintln!("hetsched daemon: run record invariants violated: {e}"),
        }
        eprintln!("hetsched daemon: trace written to {}", t.file.display());
    }
    Ok(())
}

#[derive(Subcommand)]
pub enum ClientCommand {
    /// List the daemon's units.
    Units,
    /// Print the daemon's statistics: grants, decisions, ticks, and per task its state,
    /// unit, run time and (for a measured running program) its latest sample.
    Stats {
        /// The whole reply as JSON (every sample field, absent ones left out).
        #[arg(long)]
        json: bool,
    },
    /// Allocate a unit and hold it (until --ms pass, or until killed).
    Hold(HoldArgs),
    /// Take a unit offline (control API: the daemon's uid or root); a busy unit leaves
    /// when its holder frees it.
    RemoveUnit { id: u32 },
    /// Change a unit (control API): its capacity, name, or an accelerator's host link.
    AlterUnit(AlterArgs),
}

#[derive(Args)]
pub struct AlterArgs {
    id: u32,
    #[arg(long)]
    capacity: Option<u32>,
    #[arg(long)]
    name: Option<String>,
    /// Host link bandwidth in bytes/s (accelerators).
    #[arg(long, allow_hyphen_values = true)]
    link_bandwidth: Option<f64>,
    /// Host link latency in seconds (accelerators).
    #[arg(long, allow_hyphen_values = true)]
    link_latency: Option<f64>,
}

#[derive(Args)]
pub struct ClientArgs {
    /// The daemon's socket (default: as `hetsched daemon`'s). A daemon that is neither
    /// root nor you, or a socket directory another user can write, is refused (exit 2).
    /// Before or after the subcommand, and in each subcommand's help.
    #[arg(long, global = true)]
    socket: Option<PathBuf>,
    #[command(subcommand)]
    command: ClientCommand,
}

#[derive(Args)]
pub struct HoldArgs {
    /// Affinities, e.g. `cpu=1,opencl=2`.
    #[arg(long, default_value = "cpu=1")]
    affinity: String,
    /// Milliseconds to hold the unit; 0 = until killed.
    #[arg(long, default_value_t = 0)]
    ms: u64,
}

fn parse_affinity(spec: &str) -> Result<Affinity> {
    let mut a = Affinity::default();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| Error::input(format!("--affinity: {part:?} is not type=value")))?;
        let v: f64 = v
            .parse()
            .map_err(|_| Error::input(format!("--affinity: {v:?} is not a number")))?;
        let kind = UnitType::parse(k).ok_or_else(|| {
            Error::input(format!(
                "--affinity: unknown unit type {k:?} (cpu, gpu, opencl, coprocessor)"
            ))
        })?;
        a.set(kind, v);
    }
    Ok(a)
}

pub fn client(args: ClientArgs) -> Result<()> {
    let path = args.socket.unwrap_or_else(server::default_socket_path);
    let mut c = Client::connect(&path, "hetsched client")?;
    match args.command {
        ClientCommand::Units => {
            for u in c.list_units()? {
                let link = match (u.link_bandwidth_bytes_per_s, u.link_latency_s) {
                    (None, None) => String::new(),
                    (b, l) => format!(
                        " link {} GB/s, {} us",
                        b.map_or("?".into(), |b| format!("{:.2}", b / 1e9)),
                        l.map_or("?".into(), |l| format!("{:.1}", l * 1e6))
                    ),
                };
                let running = u
                    .running
                    .map_or("idle".to_string(), |t| format!("running task {t}"));
                println!(
                    "{:>3} {:<8} {:<24} capacity {:>5} {} {running:<18} queued {}{link}",
                    u.id,
                    u.kind.to_string(),
                    u.name,
                    u.capacity,
                    if u.online { "online " } else { "leaving" },
                    u.queued
                );
            }
        }
        ClientCommand::Stats { json: true } => println!(
            "{}",
            serde_json::to_string_pretty(&c.stats()?).map_err(Error::runtime)?
        ),
        ClientCommand::Stats { json: false } => {
            let Reply::Stats {
                grants,
                decisions,
                ticks,
                tasks,
                sampler,
            } = c.stats()?
            else {
                return Err(Error::runtime("the daemon did not answer with statistics"));
            };
            println!("grants {grants}, decisions {decisions}, ticks {ticks}");
            if let Some(s) = sampler {
                println!(
                    "sampler: {} processes measured, latest pass {:.2} ms, every {} ms or more",
                    s.processes, s.pass_ms, s.period_ms
                );
            }
            for t in tasks {
                let unit = t.unit.map_or("-".to_string(), |u| u.to_string());
                let mut sample = t.sample.map_or(String::new(), |s| {
                    let sources: Vec<String> = s.sources.into();
                    let share = s.busy_ns as f64 * 100.0 / s.interval_ns.max(1) as f64;
                    format!(
                        "  cpu {share:.0}% of {:.1} ms, {:.0} ms ago ({})",
                        s.interval_ns as f64 / 1e6,
                        t.sample_age_ms.unwrap_or(0.0),
                        sources.join("+")
                    )
                });
                if let (Some(all), Some(read)) = (t.threads, t.threads_read) {
                    if read < all {
                        sample += &format!(" [{read} of {all} threads read]");
                    }
                }
                if let Some(why) = &t.unmeasured {
                    sample += &format!("  not measured: {why}");
                }
                println!(
                    "task {:>5} {:<12} {:<8} unit {unit:>3} grants {:>4} run {:>10.1} ms{sample}",
                    t.task, t.kind, t.state, t.grants, t.run_ms
                );
            }
        }
        ClientCommand::RemoveUnit { id } => c.remove_unit(id)?,
        ClientCommand::AlterUnit(a) => c.alter_unit(
            a.id,
            UnitChanges {
                capacity: a.capacity,
                name: a.name,
                link_bandwidth_bytes_per_s: a.link_bandwidth,
                link_latency_s: a.link_latency,
            },
        )?,
        ClientCommand::Hold(h) => {
            let meta = MetaInfo {
                kind: "hold".into(),
                affinity: parse_affinity(&h.affinity)?,
                weight: 1024,
                ..MetaInfo::default()
            };
            let unit = c.alloc(&meta)?;
            println!("granted unit {} ({} {})", unit.id, unit.kind, unit.name);
            use std::io::Write;
            let _ = std::io::stdout().flush();
            if h.ms == 0 {
                loop {
                    std::thread::park();
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(h.ms));
            c.free(true)?;
        }
    }
    Ok(())
}
