//! Beisel et al. live (`hetsched experiment beisel-live`): the paper's mix of MD5 and
//! prime-factorisation processes started together on this machine (its PUs and its
//! OpenCL devices), under the `affinity` policy without time-sharing (FCFS) and with it,
//! in the live daemon (on a thread of this process, on a real socket). Every application
//! is a real `hetsched app` process whose result is verified. The experiment is the
//! paper's, so it lives with its simulated figures; the CLI parses and prints.

use hetsched_core::machine::UnitGranularity;
use hetsched_core::record::Record;
use hetsched_core::{Error, Result};
use hetsched_live::devices;
use hetsched_live::session::{self, Job, Outcomes};
use hetsched_util::files::OutDir;
use std::fmt::Write as _;
use std::path::PathBuf;

/// What to run.
pub struct LiveOptions {
    /// The program whose `app md5` and `app prime` subcommands are the applications
    /// (the `hetsched` binary).
    pub apps: PathBuf,
    /// Policies to compare.
    pub policies: Vec<String>,
    /// Words of the MD5 searches: each is searched over a..z of its length.
    pub md5: Vec<String>,
    /// Numbers to factorise (semiprimes: trial division runs to the smaller factor).
    pub prime: Vec<u64>,
}

/// The default policies: FCFS and time-sharing with the paper's 4 s accelerator
/// granularity scaled to this run's length.
pub const LIVE_POLICIES: [&str; 2] = ["affinity:fcfs=1", "affinity:gran_ms=250"];
/// The default MD5 words.
pub const LIVE_MD5: [&str; 4] = ["dzzzz", "hello", "bzzzz", "kzzzz"];
/// The default numbers to factorise.
pub const LIVE_PRIME: [u64; 6] = [
    99999989 * 99999971,
    9999991 * 9999973,
    49999991 * 49999957,
    19999999 * 19999981,
    99999959 * 99999941,
    29999999 * 29999947,
];

fn md5_hex(word: &str) -> String {
    hetsched_apps::md5::md5_hex(word.as_bytes())
}

/// The applications as client processes of a session.
fn jobs(args: &LiveOptions) -> Vec<Job> {
    let job = |name: String, app: Vec<String>| Job {
        name,
        program: args.apps.clone(),
        args: std::iter::once("app".to_string())
            .chain(app)
            .chain(std::iter::once("--daemon".to_string()))
            .map(Into::into)
            .collect(),
    };
    let md5 = args.md5.iter().map(|word| {
        job(
            format!("md5 {word}"),
            vec![
                "md5".into(),
                "--hash".into(),
                md5_hex(word),
                "--length".into(),
                word.len().to_string(),
            ],
        )
    });
    let prime = args
        .prime
        .iter()
        .map(|n| job(format!("prime {n}"), vec!["prime".into(), n.to_string()]));
    md5.chain(prime).collect()
}

/// Runs every application at once under a daemon with `policy`, on this machine's PUs
/// and OpenCL and CUDA devices.
fn run_policy(args: &LiveOptions, policy: &str) -> Result<Outcomes> {
    let mut machine = hetsched_topology::load("live", UnitGranularity::Pu)?;
    let mut found = devices::opencl_devices();
    found.extend(devices::cuda_devices());
    let index = devices::attach(&mut machine, &found);
    session::run(machine, index, policy, &jobs(args))
}

/// Checkpoints per unit type, summed over an app's segments ("N checkpoints on cpu ...").
fn checkpoints_on(output: &str, kind: &str) -> u64 {
    output
        .lines()
        .filter(|l| l.contains(&format!("checkpoints on {kind}")))
        .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Runs every policy in turn; writes `table.txt`, `apps.csv` and `trace.json` into `out`
/// and returns the table.
pub fn live(out: &OutDir, args: &LiveOptions) -> Result<String> {
    let mut table = String::new();
    let mut csv = String::from("policy,app,turnaround_s,cpu_checkpoints,opencl_checkpoints\n");
    let mut records = Vec::new();
    let _ = writeln!(
        table,
        "{:<28} {:>5} {:>10} {:>10} {:>10} {:>11}",
        "policy", "apps", "mean_s", "median_s", "max_s", "migrated"
    );
    for policy in &args.policies {
        let Outcomes {
            jobs: outcomes,
            record,
        } = run_policy(args, policy)?;
        let mut t: Vec<f64> = outcomes.iter().map(|o| o.turnaround_s).collect();
        t.sort_by(f64::total_cmp);
        let migrated = outcomes
            .iter()
            .filter(|o| {
                checkpoints_on(&o.output, "cpu") > 0 && checkpoints_on(&o.output, "opencl") > 0
            })
            .count();
        let _ = writeln!(
            table,
            "{:<28} {:>5} {:>10.2} {:>10.2} {:>10.2} {:>11}",
            policy,
            t.len(),
            t.iter().sum::<f64>() / t.len() as f64,
            t[t.len() / 2],
            t[t.len() - 1],
            migrated
        );
        for o in &outcomes {
            let _ = writeln!(
                csv,
                "{policy},{},{:.3},{},{}",
                o.name,
                o.turnaround_s,
                checkpoints_on(&o.output, "cpu"),
                checkpoints_on(&o.output, "opencl")
            );
        }
        record
            .check()
            .map_err(|e| Error::runtime(format!("{policy}: run record: {e}")))?;
        records.push(record);
    }
    let _ = writeln!(table, "\nPaper (Fig. 4): time-sharing lowers the mean turnaround versus FCFS; long tasks no longer block short ones.");
    let _ = writeln!(
        table,
        "Daemon metrics (times from the daemon's start):\n{}",
        hetsched_core::report::table(&records.iter().map(Record::metrics).collect::<Vec<_>>())
    );
    let write = |name: &str, bytes: &[u8]| out.write(name, bytes);
    write("table.txt", table.as_bytes())?;
    write("apps.csv", csv.as_bytes())?;
    write(
        "trace.json",
        &serde_json::to_vec(&hetsched_core::trace::trace(&records)).map_err(Error::runtime)?,
    )?;
    Ok(table)
}
