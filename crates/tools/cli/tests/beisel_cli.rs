//! `hetsched experiment beisel-*` as a user runs it: the real binary, outputs on disk.

mod common;
use common::hetsched;

#[test]
fn fig3_prints_the_paper_claim_beside_ours_and_writes_its_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fig3");
    let o = hetsched(&["experiment", "beisel-fig3", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("started on CPU PUs: 9, on the GPU: 6 (paper: 9 and 6"),
        "{text}"
    );
    for f in ["table.txt", "tasks.csv", "progress.csv", "progress.png"] {
        assert!(out.join(f).exists(), "{f}");
    }
}

/// An `--out` that cannot be a directory is bad input (exit 2), found before the runs.
#[test]
fn an_unwritable_output_directory_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let out = blocker.join("sub");
    let o = hetsched(&["experiment", "beisel-fig4", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.starts_with("hetsched: ") && err.contains("sub"),
        "{err}"
    );
}

#[test]
fn a_seed_count_out_of_range_is_an_input_error_naming_the_option_and_range() {
    for bad in ["0", "10001", "x"] {
        let o = hetsched(&["experiment", "beisel-fig6-7", "--seeds", bad]);
        assert_eq!(o.status.code(), Some(2), "--seeds {bad}");
        let err = String::from_utf8(o.stderr).unwrap();
        assert!(err.contains("--seeds"), "{err}");
    }
    let o = hetsched(&["experiment", "beisel-fig4", "--seeds", "0"]);
    assert!(String::from_utf8(o.stderr).unwrap().contains("1..=10000"));
}

/// `hetsched experiment --help` lists every registered experiment and each takes `--out`
/// (the registry's loop adds it); so does `hetsched bench --help` every benchmark.
#[test]
fn experiment_help_lists_the_registry() {
    let o = hetsched(&["experiment", "--help"]);
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout);
    let keys: Vec<&str> = hetsched_reproduce::STUDIES
        .iter()
        .flat_map(|s| s.experiments)
        .map(|e| e.key)
        .collect();
    // The registry itself is not empty: the papers' experiments are in it.
    for key in [
        "beisel-fig3",
        "shelepov",
        "ding",
        "akram",
        "shim-theta",
        "coretime-sim",
    ] {
        assert!(keys.contains(&key), "{key} not registered: {keys:?}");
    }
    for key in keys {
        assert!(help.contains(key), "{key} missing:\n{help}");
        let o = hetsched(&["experiment", key, "--help"]);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            text.contains(&format!("[default: hetsched-out/{key}]")),
            "{key}:\n{text}"
        );
    }
    let o = hetsched(&["experiment", "nope"]);
    assert_eq!(o.status.code(), Some(2));

    let o = hetsched(&["bench", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(hetsched_bench::BENCHMARKS.len() >= 10);
    for b in hetsched_bench::BENCHMARKS {
        assert!(help.contains(b.key), "bench {} missing:\n{help}", b.key);
        let o = hetsched(&["bench", b.key, "--help"]);
        assert!(o.status.success(), "bench {} --help", b.key);
    }
}
