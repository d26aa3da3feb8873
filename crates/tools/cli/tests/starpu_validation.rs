//! The simulator against StarPU itself, small (the first point of #44's validation):
//! StarPU's own tiled Cholesky (`cholesky_implicit` of Debian's `starpu-examples`,
//! 8 × 8 tiles of 480 floats) is calibrated and then run on this machine under `eager`
//! and `dmda`, and `hetsched simulate` runs the same graph on the models StarPU just
//! wrote (`starpu:DIR:HOST`). Each policy's predicted makespan must be within 10 % of
//! StarPU's measured median. StarPU keeps its models in a scratch `STARPU_HOME`, under a
//! host name of the test's. Skipped, saying so, where the example is not installed; it
//! times real runs, so it runs alone (`.config/nextest.toml`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

const HOST: &str = "hetsched-validate";
const TILES: u32 = 8;
const TILE: u32 = 480;

/// StarPU's example, where Debian (or a source install) puts it.
fn example() -> Option<PathBuf> {
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

/// One run of the example under `sched`; the computation's time it reports, seconds.
fn run(example: &Path, home: &Path, sched: &str, calibrate: bool) -> f64 {
    let out = Command::new(example)
        .args([
            "-size",
            &(TILES * TILE).to_string(),
            "-nblocks",
            &TILES.to_string(),
        ])
        .env("STARPU_HOME", home)
        .env("STARPU_HOSTNAME", HOST)
        .env("STARPU_SCHED", sched)
        .env("STARPU_CALIBRATE", if calibrate { "1" } else { "0" })
        .env("STARPU_SILENT", "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    // Its last line: size, ms, GFlop/s.
    let ms: f64 = text
        .lines()
        .rev()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[0] == (TILES * TILE).to_string()).then(|| f[1].parse().ok())?
        })
        .unwrap_or_else(|| panic!("no timing line in {text}"));
    ms * 1e-3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn the_simulation_predicts_starpus_own_cholesky_within_10_percent() {
    let Some(example) = example() else {
        println!(
            "skipped: StarPU's cholesky_implicit is not installed (Debian package starpu-examples)"
        );
        return;
    };
    let home = tempfile::tempdir().unwrap();
    // Calibration: StarPU trusts a model after 10 runs of a kernel on a footprint; three
    // runs of 120 tasks give each kernel at least 24.
    for _ in 0..3 {
        run(&example, home.path(), "dmda", true);
    }
    let policies = ["eager", "dmda"];
    let mut measured = vec![Vec::new(); policies.len()];
    for _ in 0..3 {
        for (i, p) in policies.iter().enumerate() {
            measured[i].push(run(&example, home.path(), p, false));
        }
    }
    let sampling = home.path().join(".starpu/sampling");
    let scenario = home.path().join("cholesky.toml");
    std::fs::write(
        &scenario,
        format!(
            "machine = \"starpu:{}:{HOST}\"\npolicies = [\"eager\", \"dmda\"]\n\n[graph]\nalgorithm = \"cholesky\"\ntiles = {TILES}\ntile = {TILE}\n",
            sampling.display()
        ),
    )
    .unwrap();
    let out_dir = home.path().join("sim");
    let out = common::hetsched(&[
        "simulate",
        scenario.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metrics: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("metrics.json")).unwrap()).unwrap();
    let mut report = String::new();
    let mut worst: f64 = 0.0;
    for (i, p) in policies.iter().enumerate() {
        let run = metrics["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["policy"] == *p)
            .unwrap();
        let predicted = run["makespan_s"].as_f64().unwrap();
        let m = median(measured[i].clone());
        let error = (predicted - m) / m;
        worst = worst.max(error.abs());
        report += &format!(
            "{p}: StarPU {m:.3} s (runs {:?}), simulated {predicted:.3} s, error {:+.1} %\n",
            measured[i],
            100.0 * error
        );
    }
    println!("{report}");
    assert!(worst <= 0.10, "{report}");
}
