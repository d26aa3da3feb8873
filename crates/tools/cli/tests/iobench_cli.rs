//! `hetsched iobench` through the real binary: a short real run on a file, and each
//! kind of bad input (missing file, no permission, a request size the device cannot
//! take, a file system refusing O_DIRECT) as a one-line error with exit 2.

mod common;
use common::{assert_input_error, hetsched};

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// A 1 MiB file of ones in a directory on the target's (disk-backed) file system.
fn data_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("data");
    std::fs::write(&path, vec![1u8; 1 << 20]).unwrap();
    (dir, path)
}

#[test]
fn a_short_run_reports_throughput_latency_and_cpio() {
    let (_dir, path) = data_file();
    let out = hetsched(&[
        "iobench",
        path.to_str().unwrap(),
        "--seconds",
        "0.3",
        "-q",
        "4",
        "-b",
        "64k",
        "--touch",
        "sum",
        "--config",
        "TRRCPR",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let bytes = r["bytes"].as_u64().unwrap();
    assert!(bytes >= 64 << 10 && bytes.is_multiple_of(64 << 10), "{r}");
    assert_eq!(r["requests"].as_u64().unwrap(), bytes / (64 << 10));
    assert!(r["throughput_bytes_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(r["cpio"]["sectors"].as_u64().unwrap(), bytes / 512);
    assert!(r["cpio"]["clock"]["source"]
        .as_str()
        .unwrap()
        .contains("/proc/cpuinfo"));
    assert_eq!(r["config"], "TRRCPR");
    let machine: serde_json::Value =
        serde_json::from_slice(&hetsched(&["topology", "--json"]).stdout).unwrap();
    if machine["numa_nodes"].as_array().unwrap().len() == 1 {
        assert_eq!(r["placement"]["applied"], false);
        assert!(r["placement"]["note"]
            .as_str()
            .unwrap()
            .contains("one NUMA node"));
    }
}

#[test]
fn text_report_names_the_figures() {
    let (_dir, path) = data_file();
    let out = hetsched(&[
        "iobench",
        path.to_str().unwrap(),
        "--seconds",
        "0.2",
        "-q",
        "2",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in ["throughput", "MB/s", "IOPS", "p99", "CPIO", "iowait", "MHz"] {
        assert!(text.contains(needle), "{needle:?} not in {text}");
    }
}

#[test]
fn a_missing_file_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent");
    let out = hetsched(&["iobench", path.to_str().unwrap(), "--seconds", "0.1"]);
    assert_input_error(&out, &[path.to_str().unwrap(), "no such file"]);
}

#[test]
fn a_file_without_permission_is_an_input_error() {
    let (dir, path) = data_file();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hetsched"));
    cmd.args(["iobench", path.to_str().unwrap(), "--seconds", "0.1"]);
    // Root reads any file: run as nobody then.
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } == 0 {
        cmd.uid(65534).gid(65534);
    }
    let out = cmd.output().unwrap();
    assert_input_error(
        &out,
        &[
            path.to_str().unwrap(),
            "permission denied",
            "read permission",
        ],
    );
}

#[test]
fn a_block_size_off_the_logical_block_is_an_input_error() {
    let (_dir, path) = data_file();
    let out = hetsched(&[
        "iobench",
        path.to_str().unwrap(),
        "-b",
        "1000",
        "--seconds",
        "0.1",
    ]);
    assert_input_error(
        &out,
        &[
            "--block-size 1000",
            "multiple of the logical block size",
            path.to_str().unwrap(),
        ],
    );
    let out = hetsched(&[
        "iobench",
        path.to_str().unwrap(),
        "-b",
        "128m",
        "--seconds",
        "0.1",
    ]);
    assert_input_error(&out, &["--block-size 134217728", "67108864"]);
}

#[test]
fn a_file_system_refusing_o_direct_is_an_input_error() {
    // procfs refuses O_DIRECT (tmpfs takes it since Linux 6.6).
    let out = hetsched(&["iobench", "/proc/self/status", "--seconds", "0.1"]);
    assert_input_error(&out, &["/proc/self/status", "refuses O_DIRECT"]);
}

#[test]
fn other_bad_input_is_an_input_error() {
    let (dir, path) = data_file();
    let p = path.to_str().unwrap();
    for (args, needles) in [
        (vec!["-q", "0"], vec!["--depth 0", "[1, 4096]"]),
        (vec!["-n", "1000"], vec!["--instances 1000", "[1, 256]"]),
        (
            vec!["--cpu-node", "99"],
            vec!["--cpu-node 99", "no such NUMA node"],
        ),
        (vec!["--seconds", "1e9"], vec!["--seconds", "86400"]),
        (
            vec!["-n", "256", "-q", "4096"],
            vec!["bytes of buffers", "at most"],
        ),
        (vec!["--size", "4k"], vec!["less than one request"]),
    ] {
        let mut all = vec!["iobench", p];
        all.extend(&args);
        if !args.contains(&"--seconds") {
            all.extend(["--seconds", "0.1"]);
        }
        assert_input_error(&hetsched(&all), &needles);
    }
    let out = hetsched(&["iobench", dir.path().to_str().unwrap()]);
    assert_input_error(&out, &["is a directory"]);
}
