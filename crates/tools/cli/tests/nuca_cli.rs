//! `hetsched experiment shim-theta` end to end at tiny size, and its input errors.

use std::process::Command;

fn hetsched() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hetsched"))
}

#[test]
fn shim_theta_writes_tables_plots_and_traces() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let traces = dir.path().join("traces");
    let run = hetsched()
        .args(["experiment", "shim-theta", "--tiny", "--threads", "4"])
        .args(["--bench", "radix", "--bench", "dht_sc", "--out"])
        .arg(&out)
        .arg("--save-traces")
        .arg(&traces)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let table = String::from_utf8(run.stdout).unwrap();
    assert!(
        table.contains("radix")
            && table.contains("hybrid-t5")
            && table.contains("ours vs the paper")
    );
    for f in [
        "shim-theta.txt",
        "shim-theta.csv",
        "fig4_core_miss.png",
        "fig8_theta_latency.png",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let loaded = hetsched_nuca::trace::load_traces(&traces.join("dht_sc")).unwrap();
    assert_eq!(loaded.len(), 4);
    // Replaying the saved traces gives the same table rows.
    let replay = hetsched()
        .args(["experiment", "shim-theta", "--traces"])
        .arg(&traces)
        .arg("--out")
        .arg(dir.path().join("replay"))
        .output()
        .unwrap();
    assert!(
        replay.status.success(),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    let again = String::from_utf8(replay.stdout).unwrap();
    let rows = |t: &str| {
        t.lines()
            .filter(|l| (l.starts_with("radix ") || l.starts_with("dht_sc ")) && l.contains('%'))
            .map(String::from)
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(rows(&table).len(), 10);
    assert_eq!(rows(&table), rows(&again));
}

#[test]
fn bad_input_exits_two() {
    let dir = tempfile::tempdir().unwrap();
    let machine = dir.path().join("m.toml");
    std::fs::write(
        &machine,
        hetsched_nuca::chip::SHIM_64_TOML.replace("cores = 64", "cores = 10"),
    )
    .unwrap();
    let run = hetsched()
        .args(["experiment", "shim-theta", "--tiny", "--machine"])
        .arg(&machine)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("cores"));
    let run = hetsched()
        .args(["experiment", "shim-theta", "--tiny", "--bench", "nope"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let run = hetsched()
        .args([
            "experiment",
            "shim-theta",
            "--tiny",
            "--size",
            "fft=1000",
            "--bench",
            "fft",
        ])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
}
