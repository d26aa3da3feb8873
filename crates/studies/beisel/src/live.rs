//! Beisel et al. live (`hetsched experiment beisel-live`): the paper's mix of MD5 and
//! prime-factorisation processes started together on this machine (its PUs and its
//! OpenCL devices), under the `affinity` policy without time-sharing (FCFS) and with it,
//! in the live daemon (on a thread of this process, on a real socket). Every application
//! is a real `hetsched app` process whose result is verified. The experiment is the
//! paper's, so it lives with its simulated figures; the CLI parses and prints.

use hetsched_core::machine::UnitGranularity;
use hetsched_core::record::Record;
use hetsched_core::{Error, Result};
use hetsched_live::arbiter::Arbiter;
use hetsched_live::{devices, server};
use hetsched_util::files::OutDir;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

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

/// One application process: what it is and how long it took from the common start.
struct Outcome {
    app: String,
    turnaround_s: f64,
    output: String,
}

fn md5_hex(word: &str) -> String {
    hetsched_apps::md5::md5_hex(word.as_bytes())
}

/// Runs every application at once under a daemon with `policy`; returns the outcomes and
/// the daemon's run record.
fn run_policy(args: &LiveOptions, policy: &str, socket: &Path) -> Result<(Vec<Outcome>, Record)> {
    let mut machine = hetsched_topology::load("live", UnitGranularity::Pu)?;
    let mut found = devices::opencl_devices();
    found.extend(devices::cuda_devices());
    let index = devices::attach(&mut machine, &found);
    hetsched_policies::check(policy)?;
    let (tx, rx) = std::sync::mpsc::channel();
    let (spec, path) = (policy.to_string(), socket.to_path_buf());
    let daemon = std::thread::spawn(move || -> Result<Option<Record>> {
        let mut arbiter = Arbiter::new(machine, index, hetsched_policies::build(&spec, 0)?);
        arbiter.start_recording();
        let mut d = server::Daemon::bind(&path, arbiter)?;
        tx.send(d.stop_handle()).map_err(Error::runtime)?;
        d.run()?;
        Ok(d.arbiter().record())
    });
    let stop = rx
        .recv()
        .map_err(|_| Error::runtime("the daemon did not start"))?;
    let exe = &args.apps;
    let start = Instant::now();
    let mut children = Vec::new();
    for word in &args.md5 {
        let child = Command::new(exe)
            .args([
                "app",
                "md5",
                "--hash",
                &md5_hex(word),
                "--length",
                &word.len().to_string(),
                "--daemon",
            ])
            .arg(socket)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(Error::runtime)?;
        children.push((format!("md5 {word}"), child));
    }
    for n in &args.prime {
        let child = Command::new(exe)
            .args(["app", "prime", &n.to_string(), "--daemon"])
            .arg(socket)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(Error::runtime)?;
        children.push((format!("prime {n}"), child));
    }
    // Collect in completion order (polling), so each turnaround is its own.
    let mut outcomes = Vec::new();
    while !children.is_empty() {
        let mut i = 0;
        while i < children.len() {
            if children[i].1.try_wait().map_err(Error::runtime)?.is_some() {
                let (app, child) = children.swap_remove(i);
                let turnaround_s = start.elapsed().as_secs_f64();
                let out = child.wait_with_output().map_err(Error::runtime)?;
                if !out.status.success() {
                    stop.stop();
                    return Err(Error::runtime(format!(
                        "{app} failed: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    )));
                }
                outcomes.push(Outcome {
                    app,
                    turnaround_s,
                    output: String::from_utf8_lossy(&out.stdout).into_owned(),
                });
            } else {
                i += 1;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    stop.stop();
    let record = daemon
        .join()
        .map_err(|_| Error::runtime("daemon thread panicked"))??
        .ok_or_else(|| Error::runtime("no run record"))?;
    Ok((outcomes, record))
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
    let dir = tempfile::tempdir().map_err(Error::runtime)?;
    let mut table = String::new();
    let mut csv = String::from("policy,app,turnaround_s,cpu_checkpoints,opencl_checkpoints\n");
    let mut records = Vec::new();
    let _ = writeln!(
        table,
        "{:<28} {:>5} {:>10} {:>10} {:>10} {:>11}",
        "policy", "apps", "mean_s", "median_s", "max_s", "migrated"
    );
    for (i, policy) in args.policies.iter().enumerate() {
        let socket = dir.path().join(format!("d{i}.sock"));
        let (outcomes, record) = run_policy(args, policy, &socket)?;
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
                o.app,
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
