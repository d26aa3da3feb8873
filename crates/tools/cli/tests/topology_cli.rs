//! `hetsched topology` / `machines` as a user runs them: the real binary, real files.

mod common;
use common::{assert_input_error, hetsched};

use std::path::PathBuf;

fn data(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tests/data/topologies")
        .join(rel)
        .to_str()
        .unwrap()
        .to_string()
}

#[test]
fn json_has_the_documented_keys() {
    let out = hetsched(&[
        "topology",
        "--machine",
        &data("sysfs/20em64t-hybrid-1p6c2t+2ca4co1t.tar.bz2"),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "units",
        "cpu_kinds",
        "numa_nodes",
        "caches",
        "distances",
        "accelerators",
        "io_devices",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    let unit = &v["units"][0];
    for key in [
        "id",
        "type",
        "os_index",
        "cpu_kind",
        "capacity",
        "numa_node",
    ] {
        assert!(unit.get(key).is_some(), "unit lacks {key}");
    }
    assert_eq!(unit["type"], "cpu");
    let kind = &v["cpu_kinds"][1];
    for key in ["id", "efficiency", "max_mhz", "base_mhz", "cpus"] {
        assert!(kind.get(key).is_some(), "cpu kind lacks {key}");
    }
    assert_eq!(kind["max_mhz"], 5000);
    for key in ["level", "size_bytes", "ways", "line_bytes", "cpus"] {
        assert!(v["caches"][0].get(key).is_some(), "cache lacks {key}");
    }
    assert_eq!(v["units"].as_array().unwrap().len(), 20);
}

#[test]
fn tree_shows_kinds_capacities_and_devices() {
    let out = hetsched(&["topology", "--machine", "beisel"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success());
    assert!(
        text.contains("16 PUs") && text.contains("L3 12 MiB 16-way"),
        "{text}"
    );
    assert!(
        text.contains("Accelerator cuda0 (gpu) NVIDIA GeForce GTX 480, 1.5 GiB"),
        "{text}"
    );
    assert!(text.contains("Units: 17 (16 cpu, 1 gpu"), "{text}");
    let list = hetsched(&["machines"]);
    let list = String::from_utf8(list.stdout).unwrap();
    for p in ["beisel", "shelepov", "akram", "coretime", "shim", "ding"] {
        assert!(list.contains(p), "{p} not listed");
    }
}

#[test]
fn bad_machines_are_clear_errors_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| dir.path().join(n).to_str().unwrap().to_string();

    assert_input_error(
        &hetsched(&["topology", "--machine", "/nonexistent/m.xml"]),
        &["/nonexistent/m.xml", "no such file"],
    );
    assert_input_error(
        &hetsched(&["topology", "--machine", "nosuchpreset"]),
        &["nosuchpreset", "preset"],
    );

    // Unreadable even for root: reading /proc/self/mem at offset 0 fails with EIO.
    std::os::unix::fs::symlink("/proc/self/mem", path("mem.xml")).unwrap();
    assert_input_error(
        &hetsched(&["topology", "--machine", &path("mem.xml")]),
        &["mem.xml", "cannot read"],
    );

    std::fs::write(
        path("bad.xml"),
        "<topology version=\"2.0\"><object type=\"Machine\"",
    )
    .unwrap();
    assert_input_error(
        &hetsched(&["topology", "--machine", &path("bad.xml")]),
        &["bad.xml"],
    );

    std::fs::write(
        path("bad.toml"),
        "name = \"x\"\n[[package]]\ncores = 2\nturbo = true\n",
    )
    .unwrap();
    assert_input_error(
        &hetsched(&["topology", "--machine", &path("bad.toml")]),
        &["bad.toml", "line 4", "turbo"],
    );

    std::fs::write(
        path("kind.toml"),
        "name = \"x\"\n[[package]]\ncores = 2\nkind = \"big\"\n",
    )
    .unwrap();
    assert_input_error(
        &hetsched(&["topology", "--machine", &path("kind.toml")]),
        &["kind.toml", "package[0].kind", "big"],
    );

    std::fs::write(path("m.txt"), "x").unwrap();
    assert_input_error(
        &hetsched(&["topology", "--machine", &path("m.txt")]),
        &["m.txt", "unknown machine file type"],
    );

    assert_input_error(
        &hetsched(&["topology", "--machine", &data("xml/nvidiaDGX2.xml")]),
        &["nvidiaDGX2.xml", "version 3.0"],
    );
    // clap's own usage errors exit 2 as well.
    assert_eq!(hetsched(&["topology", "--bogus"]).status.code(), Some(2));
}

#[test]
fn machine_file_round_trip_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("biglittle.toml");
    std::fs::write(
        &file,
        r#"name = "biglittle"
[[cpu_kind]]
name = "little"
max_mhz = 1400
[[cpu_kind]]
name = "big"
max_mhz = 2800
[[package]]
cores = 4
kind = ["big", "big", "little", "little"]
[[numa_node]]
memory = "4 GiB"
[[accelerator]]
type = "opencl"
name = "mali"
relative_speed = 3.0
numa_node = 0
"#,
    )
    .unwrap();
    let out = hetsched(&["topology", "--machine", file.to_str().unwrap(), "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let caps: Vec<u64> = v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["capacity"].as_u64().unwrap())
        .collect();
    assert_eq!(caps, vec![1024, 1024, 512, 512, 3072]);
    assert_eq!(v["units"][4]["type"], "opencl");
}

#[test]
fn starpu_calibrations_are_machines_and_listed() {
    let debian = std::path::Path::new("/usr/share/starpu/perfmodels/sampling");
    let list = |model_dir: &std::path::Path| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hetsched"))
            .arg("machines")
            .env("STARPU_PERF_MODEL_DIR", model_dir)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let empty = tempfile::tempdir().unwrap();
    let text = list(empty.path());
    assert!(
        text.contains(&format!("{}, {}", empty.path().display(), debian.display())),
        "{text}"
    );
    if !debian.join("bus/idgraf.config").exists() {
        println!("skipped the rest: {} is not installed", debian.display());
        assert!(
            text.contains("No StarPU calibration found (looked in "),
            "{text}"
        );
        return;
    }
    let idgraf = text
        .lines()
        .find(|l| l.starts_with("starpu:idgraf "))
        .unwrap_or_else(|| panic!("{text}"));
    let fields: Vec<&str> = idgraf.split_whitespace().collect();
    assert_eq!(
        fields[..5],
        ["starpu:idgraf", "12", "8", "0", "40"],
        "{idgraf}"
    );

    let out = hetsched(&["topology", "--machine", "starpu:idgraf"]);
    let tree = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(tree.starts_with("Machine starpu:idgraf (starpu:"), "{tree}");
    assert!(tree.contains("Units: 20 (12 cpu, 8 gpu"), "{tree}");
    assert_input_error(
        &hetsched(&["topology", "--machine", "starpu:no-such-host"]),
        &["starpu:no-such-host", "no StarPU calibration", "idgraf"],
    );
}
