//! The `hetsched daemon` and `hetsched client` commands, and programs (`hetsched app`,
//! `hetsched experiment beisel-live`) under a real `hetsched daemon` process. These need
//! the binary; the daemon's own behaviour is tested from the library in
//! `crates/framework/live/tests/daemon.rs`.

use hetsched_live::client::Client;
use hetsched_live::protocol::Verdict;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::daemon::{alloc_in_thread, meta, Daemon, BIN};

/// A `hetsched client hold` process that has been granted its unit.
fn hold(socket: &Path, args: &[&str]) -> Child {
    let mut holder = Command::new(BIN)
        .args(["client", "--socket", socket.to_str().unwrap(), "hold"])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = [0u8; 7];
    holder
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut line)
        .unwrap();
    assert_eq!(&line, b"granted");
    holder
}

#[test]
fn kill_9_of_a_holder_hands_the_unit_on_within_100_ms() {
    let d = Daemon::start(1, 0, "fcfs");
    let mut holder = hold(&d.socket, &[]);
    let (granted, h) = alloc_in_thread(&d.socket, meta(1.0, 0.0));
    assert!(granted.recv_timeout(Duration::from_millis(100)).is_err());
    let killed = Instant::now();
    holder.kill().unwrap(); // SIGKILL
    let unit = granted.recv_timeout(Duration::from_secs(5)).unwrap();
    let handoff = killed.elapsed();
    holder.wait().unwrap();
    assert_eq!(unit, 0);
    assert!(
        handoff < Duration::from_millis(100),
        "hand-off took {handoff:?}"
    );
    h.join().unwrap();
}

#[test]
fn no_daemon_says_how_to_start_one() {
    let dir = tempfile::tempdir().unwrap();
    let err = Client::connect(&dir.path().join("none.sock"), "x")
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("no hetsched daemon") && err.contains("hetsched daemon --socket"),
        "{err}"
    );
    let out = Command::new(BIN)
        .args([
            "client",
            "--socket",
            dir.path().join("none.sock").to_str().unwrap(),
            "units",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("hetsched daemon --socket"));
    assert_ne!(out.status.code(), Some(0));
}

#[test]
fn the_live_run_record_becomes_a_perfetto_trace_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("live.json");
    let mut d = Daemon::start_with(
        1,
        1,
        "cfs:latency_ms=1,min_granularity_ms=0.5",
        &["--trace", trace.to_str().unwrap()],
        Stdio::piped(),
    );
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let socket = d.socket.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(&socket, "w").unwrap();
                let mut left = 30;
                while left > 0 {
                    c.alloc(&meta(1.0, 0.0)).unwrap();
                    loop {
                        std::thread::sleep(Duration::from_millis(1));
                        left -= 1;
                        if left == 0 {
                            c.free(true).unwrap();
                            return;
                        }
                        if c.rerequest().unwrap() != Verdict::Keep {
                            c.free(false).unwrap();
                            break;
                        }
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    // One client vanishes while waiting, one while holding: both leave the record sound.
    let mut holder = d.client();
    holder.alloc(&meta(1.0, 0.0)).unwrap();
    let (_granted, waiter) = alloc_in_thread(&d.socket, meta(1.0, 0.0));
    std::thread::sleep(Duration::from_millis(100));
    drop(holder);
    drop(waiter);
    std::thread::sleep(Duration::from_millis(100));
    let stderr = d.stop_with(nix::sys::signal::Signal::SIGTERM);
    assert!(stderr.contains("run record invariants: ok"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let tracks: Vec<_> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .collect();
    assert_eq!(tracks.len(), 2, "one track per unit");
    let slices = events.iter().filter(|e| e["ph"] == "X").count();
    assert!(slices >= 4, "the two workers took turns: {slices} slices");
    assert!(
        events
            .iter()
            .filter(|e| e["ph"] == "X")
            .all(|e| e["tid"] == 0),
        "nothing ran on the OpenCL unit"
    );
}

/// Starts `hetsched app md5` under the daemon.
fn md5_app(socket: &Path, word: &str, alphabet: &str) -> Child {
    let hash = format!("{:032x}", md5_of(word.as_bytes()));
    Command::new(BIN)
        .args([
            "app",
            "md5",
            "--hash",
            &hash,
            "--length",
            &word.len().to_string(),
            "--alphabet",
            alphabet,
            "--daemon",
        ])
        .arg(socket)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn md5_of(bytes: &[u8]) -> u128 {
    let out = Command::new("md5sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    out.stdin.as_ref().unwrap().write_all(bytes).unwrap();
    let out = out.wait_with_output().unwrap();
    u128::from_str_radix(
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .unwrap(),
        16,
    )
    .unwrap()
}

/// Real OpenCL (PoCL) and real app processes under the `affinity` policy: a task that
/// had to start on the CPU moves to the OpenCL device when it frees, and finds the word.
#[test]
fn a_cpu_started_task_migrates_to_the_opencl_device_when_it_frees() {
    // acc_limit=0: no queueing on the busy device, so the second task starts on the CPU.
    let d = Daemon::start(1, 1, "affinity:acc_limit=0");
    // The OpenCL unit is busy for 1.5 s (a holder with only an OpenCL implementation).
    let mut holder = hold(&d.socket, &["--affinity", "opencl=1", "--ms", "1500"]);
    // Over 11 million words: seconds on the CPU, so it is still running when the holder
    // lets the OpenCL unit go.
    let second = md5_app(&d.socket, "zzzzy", "abcdefghijklmnopqrstuvwxyz");
    assert!(holder.wait().unwrap().success());
    let second = second.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&second.stdout);
    assert!(
        second.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert!(text.contains("found: \"zzzzy\""), "{text}");
    let on = |kind: &str| -> u64 {
        text.lines()
            .filter(|l| l.contains(&format!("checkpoints on {kind}")))
            .map(|l| l.split_whitespace().next().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    assert!(
        on("cpu") > 0 && on("opencl") > 0,
        "expected a CPU start and an OpenCL finish:\n{text}"
    );
    let first_segment = text.lines().find(|l| l.contains("checkpoints on")).unwrap();
    assert!(first_segment.contains("on cpu"), "{text}");
}

#[test]
fn beisel_live_runs_real_apps_under_both_policies() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args([
            "experiment",
            "beisel-live",
            "--md5",
            "ab,zz",
            "--prime",
            "1000003,999983",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("affinity:fcfs=1") && text.contains("affinity:gran_ms=250"),
        "{text}"
    );
    let csv = std::fs::read_to_string(dir.path().join("apps.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 * 4, "{csv}");
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("trace.json")).unwrap()).unwrap();
    assert!(trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["ph"] == "X"));
}

/// `hetsched client units` says in words what runs on each unit (not Rust's `Some(0)`).
#[test]
fn client_units_names_the_running_task_or_idle() {
    let d = Daemon::start(2, 0, "fcfs");
    let mut holder = d.client();
    let unit = holder.alloc(&meta(1.0, 0.0)).unwrap();
    let out = Command::new(BIN)
        .args(["client", "--socket", d.socket.to_str().unwrap(), "units"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(!text.contains("Some(") && !text.contains("None"), "{text}");
    let (busy, idle) = if unit.id == 0 { (0, 1) } else { (1, 0) };
    assert!(lines[busy].contains("running task "), "{text}");
    assert!(lines[idle].contains(" idle "), "{text}");
    holder.free(true).unwrap();
}

/// `hetsched client alter-unit`: a bad link figure is a usage error (exit 2) naming the
/// field; a good one shows in `client units`.
#[test]
fn client_alter_unit_checks_and_shows_the_link() {
    let d = Daemon::start(1, 1, "fcfs");
    let cl = d.units()[1].id;
    let client = |args: &[&str]| {
        Command::new(BIN)
            .args(["client", "--socket", d.socket.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap()
    };
    let bad = client(&["alter-unit", &cl.to_string(), "--link-bandwidth", "-1"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("link_bandwidth_bytes_per_s"));
    let good = client(&[
        "alter-unit",
        &cl.to_string(),
        "--link-bandwidth",
        "2e9",
        "--link-latency",
        "1e-5",
    ]);
    assert!(
        good.status.success(),
        "{}",
        String::from_utf8_lossy(&good.stderr)
    );
    let units = client(&["units"]);
    assert!(String::from_utf8_lossy(&units.stdout).contains("link 2.00 GB/s, 10.0 us"));
}

/// Another uid (nobody, in the socket's group so it may connect) may look at the units
/// through `hetsched client` but not change them.
#[test]
fn another_uid_may_list_units_but_not_change_them() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    if !nix::unistd::getuid().is_root() {
        eprintln!("not root: cannot run a client as another uid; nothing checked");
        return;
    }
    let d = Daemon::start(2, 0, "fcfs");
    std::fs::set_permissions(
        d.socket.parent().unwrap(),
        std::fs::Permissions::from_mode(0o750),
    )
    .unwrap();
    std::fs::set_permissions(d._dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let nobody = |args: &[&str]| {
        Command::new(BIN)
            .args(["client", "--socket", d.socket.to_str().unwrap()])
            .args(args)
            .uid(65534)
            .gid(0)
            .output()
            .unwrap()
    };
    let list = nobody(&["units"]);
    assert!(
        list.status.success(),
        "{}",
        String::from_utf8_lossy(&list.stderr)
    );
    let remove = nobody(&["remove-unit", "1"]);
    assert!(
        String::from_utf8_lossy(&remove.stderr).contains("may not change units"),
        "{}",
        String::from_utf8_lossy(&remove.stderr)
    );
    assert_eq!(d.units().len(), 2, "the unit is still there");
}

/// The daemon keeps the performance models of a policy that reads them (dmda) in
/// `--perfmodel DIR`, as StarPU keeps its sampling directory: loaded at start, so its
/// first decision already uses them, and written at exit with what it observed; with
/// `--no-perfmodel` it starts cold.
#[test]
fn the_daemon_keeps_dmdas_models_between_runs() {
    let models = tempfile::tempdir().unwrap();
    let dir = models.path().to_str().unwrap();
    // Stored: kernel "t" takes 1 s on a CPU and 1 ms on the OpenCL unit, 10 runs each.
    let model = |unit: &str, mean: f64| {
        format!(
            r#"{{"kernel": "t", "unit_type": "{unit}", "capacity": 1024, "footprint": 0, "samples": 10, "mean_s": {mean}, "dev_s": 0.0, "recent_s": []}}"#
        )
    };
    let file = models.path().join("test.json");
    std::fs::write(
        &file,
        format!(
            r#"{{"format": "hetsched perfmodels", "version": 1, "machine": "test", "models": [{}, {}]}}"#,
            model("cpu", 1.0),
            model("opencl", 0.001)
        ),
    )
    .unwrap();
    let both = meta(1.0, 1.0);
    let mut d = Daemon::start_with(1, 1, "dmda", &["--perfmodel", dir], Stdio::piped());
    let units = d.units();
    assert_eq!(
        (units[1].kind.to_string(), units[1].capacity),
        ("opencl".into(), 1024)
    );
    let mut c = d.client();
    assert_eq!(
        c.alloc(&both).unwrap().id,
        units[1].id,
        "the stored estimates decide"
    );
    c.free(true).unwrap();
    drop(c);
    let stderr = d.stop_with(nix::sys::signal::Signal::SIGTERM);
    assert!(stderr.contains("performance models kept in"), "{stderr}");
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let samples: Vec<u64> = kept["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["samples"].as_u64().unwrap())
        .collect();
    assert_eq!(samples, [10, 11], "the OpenCL run added: {kept}");
    // Cold: StarPU's greedy rule, the lowest id of two empty units.
    let d = Daemon::start_with(1, 1, "dmda", &["--no-perfmodel"], Stdio::null());
    assert_eq!(d.client().alloc(&both).unwrap().id, units[0].id);
}

/// `--capacity CPU=CAP` (a CPU slowed where the machine's source cannot see it, as by
/// `hetsched slow-cpu`) is that CPU unit's capacity from the start, and only its; a CPU
/// the machine lacks or a capacity out of range is one line naming the flag, exit 2.
#[test]
fn a_capacity_given_at_start_is_that_cpus_units() {
    let d = Daemon::start_with(2, 0, "cfs-cap", &["--capacity", "1=512"], Stdio::null());
    let out = Command::new(BIN)
        .args(["client", "--socket", d.socket.to_str().unwrap(), "units"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let capacity = |unit: &str| {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(unit))
            .unwrap_or_else(|| panic!("no unit {unit}: {text}"));
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = words.iter().position(|w| *w == "capacity").unwrap();
        words[at + 1].parse::<u32>().unwrap()
    };
    assert_eq!((capacity("0"), capacity("1")), (1024, 512), "{text}");
    drop(d);
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("d.sock");
    for (flag, says) in [
        (
            "999=512",
            "--capacity 999=512: CPU 999: the machine has no such CPU",
        ),
        (
            "1=0",
            "--capacity 1=0: capacity 0 of CPU 1: must be in [1, 1024]",
        ),
    ] {
        let out = common::hetsched(&[
            "daemon",
            "--machine",
            "beisel",
            "--socket",
            socket.to_str().unwrap(),
            "--capacity",
            flag,
        ]);
        common::assert_input_error(&out, &[says]);
    }
}
