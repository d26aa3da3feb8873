//! The simulator against StarPU itself: StarPU's own tiled Cholesky
//! (`cholesky_implicit` of Debian's `starpu-examples`) run by StarPU on this machine
//! under `eager` and `dmda`, and the same tiled graph simulated by hetsched on the
//! performance models StarPU wrote while it ran (`starpu:DIR:HOST`), as StarPU's own
//! validation against SimGrid does (Stanisic et al., Euro-Par 2014).
//!
//! StarPU keeps its models in a scratch `STARPU_HOME` under a host name of ours, so
//! neither the user's models nor ours leak into the other. It trusts a kernel's model
//! after 10 runs on a footprint; three calibrating runs of the graph give each kernel
//! at least 24 at 8 × 8 tiles.

use crate::validate::PolicyResult;
use hetsched_core::{Error, Result};
use hetsched_sim::compare::Compare;
use hetsched_sim::scenario::Scenario;
use hetsched_util::stats::Spread;
use std::path::{Path, PathBuf};
use std::process::Command;

/// StarPU's host name for the models of these runs.
const HOST: &str = "hetsched-validate";
/// The graph: tiles a side and elements a tile side (single precision).
pub const TILES: u32 = 8;
pub const TILE: u32 = 480;
/// The policies, named alike by StarPU (`STARPU_SCHED`) and hetsched.
pub const POLICIES: [&str; 2] = ["eager", "dmda"];

/// StarPU's example, where Debian (or a source install) puts it; `None` where it is not
/// installed.
pub fn example() -> Option<PathBuf> {
    let triplet = format!("{}-linux-gnu", std::env::consts::ARCH);
    [
        format!("/usr/lib/{triplet}/starpu/examples"),
        "/usr/lib/starpu/examples".into(),
        "/usr/local/lib/starpu/examples".into(),
    ]
    .into_iter()
    .map(|d| Path::new(&d).join("cholesky_implicit"))
    .find(|p| p.is_file())
}

/// One run of the example under `sched`: the computation's time it reports, seconds.
fn run(example: &Path, home: &Path, sched: &str, calibrate: bool) -> Result<f64> {
    let size = (TILES * TILE).to_string();
    let out = Command::new(example)
        .args(["-size", &size, "-nblocks", &TILES.to_string()])
        .env("STARPU_HOME", home)
        .env("STARPU_HOSTNAME", HOST)
        .env("STARPU_SCHED", sched)
        .env("STARPU_CALIBRATE", if calibrate { "1" } else { "0" })
        .env("STARPU_SILENT", "1")
        .output()
        .map_err(|e| Error::runtime(format!("{}: {e}", example.display())))?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(Error::runtime(format!(
            "{} ({sched}) failed: {}",
            example.display(),
            text.trim()
        )));
    }
    // Its last line: size, ms, GFlop/s.
    text.lines()
        .rev()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[0] == size).then(|| f[1].parse::<f64>().ok())?
        })
        .map(|ms| ms * 1e-3)
        .ok_or_else(|| Error::runtime(format!("{}: no timing line in {text}", example.display())))
}

/// Calibrates StarPU, runs the example `runs` times under each policy (alternating),
/// and simulates the graph on StarPU's models: one result per policy (the makespan;
/// StarPU reports no per-task turnaround, so those fields are the makespan's too).
/// `None` where the example is not installed.
pub fn cholesky(runs: usize, say: &mut dyn FnMut(&str)) -> Result<Option<Vec<PolicyResult>>> {
    let Some(example) = example() else {
        say(
            "StarPU's cholesky_implicit is not installed (Debian package starpu-examples): skipped",
        );
        return Ok(None);
    };
    let home = tempfile::tempdir().map_err(Error::runtime)?;
    say(&format!(
        "StarPU cholesky_implicit, {TILES} x {TILES} tiles of {TILE}: 3 calibrating runs, then {runs} runs of eager and dmda"
    ));
    for _ in 0..3 {
        run(&example, home.path(), "dmda", true)?;
    }
    let mut measured = vec![Vec::new(); POLICIES.len()];
    for r in 0..runs {
        for (i, p) in POLICIES.iter().enumerate() {
            let t = run(&example, home.path(), p, false)?;
            say(&format!("  run {}/{runs} {p}: {t:.3} s", r + 1));
            measured[i].push(t);
        }
    }
    let sampling = home.path().join(".starpu/sampling");
    let text = format!(
        "machine = \"starpu:{}:{HOST}\"\npolicies = [\"eager\", \"dmda\"]\n\n[graph]\nalgorithm = \"cholesky\"\ntiles = {TILES}\ntile = {TILE}\n",
        sampling.display()
    );
    let scenario = Scenario::parse(&text, "cholesky.toml", "cholesky", home.path())?;
    let out = home.path().join("sim");
    let compared = Compare::new(scenario, Vec::new(), Some(&out), true)?.run(None, |_, _| {})?;
    POLICIES
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let predicted = compared
                .metrics
                .iter()
                .find(|m| m.policy == *p)
                .map(|m| m.makespan_s)
                .ok_or_else(|| Error::runtime(format!("the simulation has no {p} run")))?;
            let live = Spread::of(&measured[i]);
            Ok(PolicyResult {
                policy: p.to_string(),
                makespan_error: predicted / live.median - 1.0,
                turnaround_error: predicted / live.median - 1.0,
                makespan_s: live,
                mean_turnaround_s: live,
                predicted_makespan_s: predicted,
                predicted_mean_turnaround_s: predicted,
            })
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}
