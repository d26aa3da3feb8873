//! Absurd input files and runaway runs (issue 15), each reproducer run through the real
//! binary: it must exit 2 with a one-line message naming the file, field and accepted
//! range, under a 2 GiB address-space limit (an unbounded allocation fails instead of
//! swapping) and a generous hang guard (not a speed test: these finish in milliseconds).

#[allow(dead_code)] // `hetsched` is not used here: these runs need limits and pipes
mod common;
use common::assert_input_error;

use std::os::fd::FromRawFd;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// Longer than any of these runs takes on a loaded machine, short of a hang.
const HANG: Duration = Duration::from_secs(120);

fn run(dir: &Path, args: &[&str]) -> Output {
    common::hetsched_bounded(dir, args, HANG)
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

const GEN: &str = "[[generator]]\ncount = 10\nrate = 1.0\nsize = { dist = \"fixed\", value = 0.001 }\n[[generator.mix]]\nshare = 1.0\n";

#[test]
fn absurd_scenarios_exit_2_naming_field_and_range() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let head = "machine = \"ding\"\npolicies = [\"fcfs\"]\n";
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        ("work.toml", format!("{head}[[task]]\nwork = 1e12\n"),
         vec!["work.toml", "task[0].work", "[0, 1e6]", "1e12"]),
        ("bandwidth.toml", format!("{head}[[task]]\nwork = 1\nmemory_bound = 0.5\nmem_bandwidth_gbs = 1e300\n"),
         vec!["task[0].mem_bandwidth_gbs", "[0, 1e6]", "1e300"]),
        ("checkpoint.toml", "machine = \"beisel\"\npolicies = [\"fcfs\"]\n[[task]]\nwork = 1\naffinity = { gpu = 1 }\ncheckpoint_ms = { gpu = 0.000001 }\n".into(),
         vec!["task[0].checkpoint_ms.gpu", "0 (none) or a number in [0.001, 1e6]"]),
        ("count.toml", format!("{head}[[task]]\nwork = 1\ncount = 1000000000\n"),
         vec!["count.toml", "task[0].count = 1000000000", "at most 100000000", "end.max_time_s"]),
        ("arrival.toml", format!("{head}[[task]]\nwork = 1\narrival = 1e300\n"),
         vec!["task[0].arrival", "[0, 1e9]", "1e300"]),
        ("start.toml", format!("{head}{}", GEN.replace("rate = 1.0", "rate = 1.0\nstart = 1e300")),
         vec!["generator[0].start", "[0, 1e9]"]),
        ("rate.toml", format!("{head}{}", GEN.replace("rate = 1.0", "rate = 1e-300")),
         vec!["generator[0].rate", "[1e-6, 1e9]", "1e-300"]),
        ("mean.toml", format!("{head}{}", GEN.replace("{ dist = \"fixed\", value = 0.001 }", "{ dist = \"exponential\", mean = 1e308 }")),
         vec!["generator[0].size.mean", "[0, 1e6]", "1e308"]),
        ("nan.toml", format!("{head}[[task]]\nwork = nan\n"),
         vec!["task[0].work", "got NaN"]),
        ("home.toml", format!("{head}[[task]]\nwork = 1\nnuma_home = 7\n"),
         vec!["task[0].numa_home", "NUMA node 7 does not exist"]),
        ("home_max.toml", format!("{head}[[task]]\nwork = 1\nnuma_home = 4294967295\n"),
         vec!["task[0].numa_home", "out of range (0 to 4294967294)"]),
        ("bytes.toml", format!("{head}[[task]]\nwork = 1\nbytes_in = 18446744073709551615\n"),
         vec!["task[0].bytes_in", "[0, 1000000000000000]"]),
    ];
    for (name, text, needles) in &cases {
        write(d, name, text);
        let out = run(d, &["simulate", name, "--out", "out"]);
        assert_input_error(&out, needles);
    }
}

#[test]
fn runaway_runs_stop_at_their_limits() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "one.toml", "machine = \"ding\"\n[[task]]\nwork = 1\n");
    // A zero slice would preempt every nanosecond.
    let out = run(
        d,
        &[
            "simulate",
            "one.toml",
            "--out",
            "out",
            "--policy",
            "cfs:min_granularity_ms=0,latency_ms=0",
        ],
    );
    assert_input_error(&out, &["policy cfs", "latency_ms", "[0.1, 1000]", "got 0"]);
    let out = run(
        d,
        &[
            "simulate",
            "one.toml",
            "--out",
            "out",
            "--policy",
            "affinity:cpu_check_ms=0",
        ],
    );
    assert_input_error(&out, &["cpu_check_ms", "[0.1, 1e9]"]);

    // 10^6 s of work in 6 ms slices: 1.7 × 10^8 events, stopped at the limit.
    write(
        d,
        "long.toml",
        "machine = \"ding\"\npolicies = [\"cfs\"]\n[[task]]\nwork = 1e6\n",
    );
    let out = run(
        d,
        &[
            "simulate",
            "long.toml",
            "--out",
            "out",
            "--max-events",
            "100000",
        ],
    );
    assert_input_error(
        &out,
        &[
            "long.toml",
            "cfs",
            "event limit (100000 events",
            "end.max_time_s",
        ],
    );
    let out = run(
        d,
        &["simulate", "long.toml", "--out", "out", "--max-events", "0"],
    );
    assert_input_error(&out, &["--max-events", "[1, 1000000000000]", "got 0"]);

    // A huge generator stops at end.max_time_s: it is streamed, never expanded.
    let gen = GEN
        .replace("count = 10", "count = 1000000000")
        .replace("rate = 1.0", "rate = 1000.0");
    write(
        d,
        "gen.toml",
        &format!("machine = \"ding\"\npolicies = [\"fcfs\"]\nend = {{ max_time_s = 2 }}\n{gen}"),
    );
    let out = run(d, &["simulate", "gen.toml", "--out", "out", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let done = json["runs"][0]["completed"].as_u64().unwrap();
    assert!(
        (1000..3000).contains(&done),
        "{done} tasks done in 2 s at 1000/s"
    );
}

#[test]
fn absurd_machine_files_exit_2_naming_field_and_range() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let acc = "[[package]]\ncores = 1\n[[accelerator]]\ntype = \"gpu\"\nname = \"g\"\n";
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        ("cores.toml", "[[package]]\ncores = 4294967295\n".into(),
         vec!["cores.toml", "package[0].cores", "[1, 16384]", "4294967295"]),
        ("smt.toml", "[[package]]\ncores = 256\nsmt = 65537\n".into(),
         vec!["package[0].smt", "[1, 16384]"]),
        ("product.toml", "[[package]]\ncores = 16384\nsmt = 2\n".into(),
         vec!["package[0]", "32768 PUs", "at most 16384"]),
        ("accelerators.toml", format!("{acc}count = 1000000000\n"),
         vec!["accelerator[0].count", "at most 1024"]),
        ("devices.toml", "[[package]]\ncores = 1\n[[io_device]]\nkind = \"block\"\nname = \"d\"\ncount = 100000000\n".into(),
         vec!["io_device[0].count", "at most 1024"]),
        ("mesh.toml", "[[package]]\ncores = 4\n[mesh]\nwidth = 65536\nheight = 65537\ncycles_per_hop = 1\nflit_bits = 1\n".into(),
         vec!["mesh.width", "[1, 16384]"]),
        ("mesh-shape.toml", "[[package]]\ncores = 4\n[mesh]\nwidth = 16384\nheight = 16384\ncycles_per_hop = 1\nflit_bits = 1\n".into(),
         vec!["mesh", "16384×16384 tiles but 4 cores"]),
        ("latency.toml", format!("{acc}link_latency_us = -1\n"),
         vec!["accelerator[0].link_latency_us", "[0, 1e6]", "got -1"]),
        ("nan.toml", format!("{acc}link_latency_us = nan\n"),
         vec!["accelerator[0].link_latency_us", "got NaN"]),
        ("capacity.toml", "[[cpu_kind]]\nname = \"a\"\ncapacity = 0\n[[package]]\ncores = 1\nkind = \"a\"\n".into(),
         vec!["cpu_kind[0].capacity", "[1, 1024]", "got 0"]),
        ("line.toml", "[[package]]\ncores = 1\n[[cache]]\nlevel = 1\nsize = 1024\nline = 0\nshared_by = \"core\"\n".into(),
         vec!["cache[0].line", "power of two in [8, 4096]"]),
        ("bandwidth.toml", "[[package]]\ncores = 1\n[[numa_node]]\nmemory = 1\nbandwidth = 1e-300\n".into(),
         vec!["numa_node[0].bandwidth", "[1000, 1e15]"]),
    ];
    for (name, body, needles) in &cases {
        write(d, name, &format!("name = \"x\"\n{body}"));
        let out = run(d, &["topology", "--machine", name]);
        assert_input_error(&out, needles);
    }
}

#[test]
fn absurd_traces_exit_2_naming_line_or_byte() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "big.lackey", &" L 0,4294967295\n".repeat(5));
    let out = run(d, &["signature", "analyze", "big.lackey"]);
    assert_input_error(
        &out,
        &["big.lackey:1", "access size 4294967295", "[0, 4096]"],
    );

    // 26 bytes: the magic and three loads of 2^32 - 1 bytes.
    let mut bin = b"HSTRACE1".to_vec();
    for _ in 0..3 {
        let mut v = (0xffff_ffffu64 << 2) | 1;
        while v >= 0x80 {
            bin.push((v as u8) | 0x80);
            v >>= 7;
        }
        bin.extend([v as u8, 0]);
    }
    assert_eq!(bin.len(), 26);
    std::fs::write(d.join("huge.hstrace"), &bin).unwrap();
    let out = run(d, &["signature", "analyze", "huge.hstrace"]);
    assert_input_error(
        &out,
        &[
            "huge.hstrace: byte 8",
            "access size 4294967295",
            "[0, 4096]",
        ],
    );

    // A device never ends: refused before a line is read.
    let out = run(d, &["signature", "convert", "/dev/zero", "out.hstrace"]);
    assert_input_error(
        &out,
        &["/dev/zero: is a character device; a lackey trace must be a regular file"],
    );
    let zeros = vec![0u8; 8192];
    std::fs::write(d.join("zeros.lackey"), zeros).unwrap();
    let out = run(d, &["signature", "convert", "zeros.lackey", "out.hstrace"]);
    assert_input_error(&out, &["zeros.lackey:1", "longer than 4096 bytes"]);

    write(d, "empty.lackey", "==1== a valgrind banner only\n");
    let out = run(d, &["signature", "analyze", "empty.lackey"]);
    assert_input_error(
        &out,
        &["empty.lackey", "no instructions or memory accesses"],
    );
}

/// Every printing command, its stdout a pipe whose reader has gone: exit 0, quiet.
#[test]
fn printing_commands_exit_quietly_on_a_closed_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "one.toml",
        "machine = \"ding\"\npolicies = [\"fcfs\"]\n[[task]]\nwork = 1\n",
    );
    let commands: &[&[&str]] = &[
        &["topology", "--machine", "ding"],
        &["topology", "--machine", "ding", "--json"],
        &["machines"],
        &["simulate", "one.toml", "--out", "out"],
        &["simulate", "one.toml", "--out", "out", "--json"],
        &["signature", "default-model"],
        &[
            "signature",
            "elasticity",
            "--t1",
            "2",
            "--f1",
            "1",
            "--t2",
            "1",
            "--f2",
            "2",
        ],
        &["--help"],
    ];
    for args in commands {
        let mut fds = [0; 2];
        // SAFETY: a fresh pipe; each end is owned once.
        let writer = unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            libc::close(fds[0]);
            std::os::fd::OwnedFd::from_raw_fd(fds[1])
        };
        let out = Command::new(env!("CARGO_BIN_EXE_hetsched"))
            .args(*args)
            .current_dir(d)
            .stdout(Stdio::from(writer))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
