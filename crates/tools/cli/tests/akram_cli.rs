//! `hetsched experiment akram` through the real binary: JSON on stdout, the table, the
//! JSON file and the PNG charts in `--out`.

mod common;
use common::hetsched;

#[test]
fn experiment_akram_writes_json_and_charts() {
    let dir = tempfile::tempdir().unwrap();
    let out = hetsched(&[
        "experiment",
        "akram",
        "--json",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let point = |mode: &str, config: &str, k: u64| {
        r["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["mode"] == mode && p["config"] == config && p["instances"] == k)
            .unwrap()
            .clone()
    };
    let local = point("direct", "TRLCPL", 8);
    let remote = point("direct", "TRRCPR", 8);
    assert!(remote["throughput_gb_s"].as_f64() < local["throughput_gb_s"].as_f64());
    assert!(remote["cpio_iowait"].as_f64() > local["cpio_iowait"].as_f64());
    assert!(
        point("direct", "TRRCPR", 8)["loss"].as_f64()
            > point("direct", "TRRCPR", 1)["loss"].as_f64()
    );
    let policies: Vec<&str> = r["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["policy"].as_str().unwrap())
        .collect();
    assert_eq!(policies, ["cfs", "eevdf", "io-affinity"]);
    for f in [
        "table.txt",
        "akram.json",
        "throughput-direct.png",
        "cpio-iowait-buffered.png",
    ] {
        let meta = std::fs::metadata(dir.path().join(f)).unwrap();
        assert!(meta.len() > 100, "{f} is nearly empty");
    }
}

#[test]
fn a_scenario_naming_a_missing_io_device_or_too_much_io_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    let head = "machine = \"akram\"\n[[task]]\nwork = 1\n";
    for (body, needles) in [
        (
            "io_device = \"nope\"\n",
            vec!["task[0].io_device", "no I/O device \"nope\"", "md-n0-0"],
        ),
        (
            "memory_bound = 0.5\nio_bound = 0.8\n",
            vec!["task[0].io_bound", "[0, 0.5]"],
        ),
    ] {
        std::fs::write(&file, format!("{head}{body}")).unwrap();
        let out = hetsched(&["simulate", file.to_str().unwrap()]);
        common::assert_input_error(&out, &needles);
    }
}
