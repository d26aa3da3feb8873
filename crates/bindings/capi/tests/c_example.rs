//! Builds the C examples (`examples/c/worker.c`, `examples/c/batch.c`) against
//! `include/hetsched.h` and `libhetsched.so` with the system C compiler and runs them
//! against a real daemon.

use hetsched_core::machine::UnitGranularity;
use hetsched_live::arbiter::Arbiter;
use hetsched_live::protocol::Reply;
use hetsched_live::{devices, server};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// The directory holding the freshly built `libhetsched.so`: cargo puts the cdylib of
/// the crate under test beside the test binary (`deps/`), or one level up.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap().to_path_buf();
    [deps.clone(), deps.parent().unwrap().to_path_buf()]
        .into_iter()
        .find(|d| d.join("libhetsched.so").exists())
        .unwrap_or_else(|| panic!("libhetsched.so not built near {}", deps.display()))
}

/// Compiles `examples/c/<name>.c` into `dir`.
fn compile(dir: &Path, name: &str) -> PathBuf {
    let exe = dir.join(name);
    let cc = Command::new("cc")
        .arg(repo().join(format!("examples/c/{name}.c")))
        .arg("-I")
        .arg(repo().join("include"))
        .arg("-L")
        .arg(lib_dir())
        .args(["-lhetsched", "-o"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&cc.stderr)
    );
    exe
}

/// A daemon over one CPU unit, on a thread, listening at `socket`.
fn start_daemon(socket: &Path) -> server::StopHandle {
    let (tx, rx) = std::sync::mpsc::channel();
    let path = socket.to_path_buf();
    std::thread::spawn(move || {
        let mut m = hetsched_topology::machine_file::parse(
            "name = \"one\"\n[[package]]\ncores = 1\n",
            "test",
        )
        .unwrap();
        m.derive_units(UnitGranularity::Pu);
        let index = devices::described(&m);
        let policy =
            hetsched_policies::build("cfs:latency_ms=1,min_granularity_ms=0.5", 0).unwrap();
        let mut d = server::Daemon::bind(&path, Arbiter::new(m, index, policy)).unwrap();
        tx.send(d.stop_handle()).unwrap();
        d.run().unwrap();
    });
    rx.recv().unwrap()
}

#[test]
fn the_c_worker_runs_against_the_daemon() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = compile(tmp.path(), "worker");
    let socket = tmp.path().join("run/d.sock");
    let stop = start_daemon(&socket);
    let run = |n: &str| {
        Command::new(&exe)
            .args([socket.to_str().unwrap(), n, "1000"])
            .env("LD_LIBRARY_PATH", lib_dir())
            .spawn()
            .unwrap()
    };
    // Two workers share one unit; each must count to the end.
    let (a, b) = (run("3000000"), run("3000000"));
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
    }
    let out = Command::new(&exe)
        .args([socket.to_str().unwrap(), "5000", "1000"])
        .env("LD_LIBRARY_PATH", lib_dir())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("done 5000 grants "),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A declared checkpoint interval is accepted; one beyond a day is refused by name.
    let declared = |ns: &str| {
        Command::new(&exe)
            .args([socket.to_str().unwrap(), "5000", "1000", ns])
            .env("LD_LIBRARY_PATH", lib_dir())
            .output()
            .unwrap()
    };
    let ok = declared("2000000");
    assert!(String::from_utf8_lossy(&ok.stdout).starts_with("done 5000 grants "));
    let long = declared("86400000000001");
    assert!(!long.status.success());
    let err = String::from_utf8_lossy(&long.stderr);
    assert!(
        err.contains("checkpoint_ns.cpu must be in [0, 86400000000000]"),
        "{err}"
    );
    // Bad input: no daemon there.
    let none = Command::new(&exe)
        .args([tmp.path().join("none").to_str().unwrap(), "1", "1"])
        .env("LD_LIBRARY_PATH", lib_dir())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&none.stderr).contains("no hetsched daemon"));
    stop.stop();
}

/// Another user listening where the C client looks for its daemon: `hetsched_connect`
/// refuses it before sending anything, and says why. (Runs as root, which may listen as
/// `nobody`; elsewhere it says why it checks nothing.)
#[test]
fn the_c_client_refuses_a_squatted_socket() {
    use std::io::BufRead;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    if !is_root() {
        eprintln!("not root: cannot listen as another uid; nothing checked");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let exe = compile(tmp.path(), "worker");
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let socket = tmp.path().join("d.sock");
    // The system interpreter: `nobody` may not reach one under root's home.
    let mut squatter = Command::new("/usr/bin/python3")
        .args([
            "-c",
            "import socket,sys,time\ns=socket.socket(socket.AF_UNIX)\ns.bind(sys.argv[1])\n\
             s.listen(8)\nprint('listening',flush=True)\ntime.sleep(120)",
        ])
        .arg(&socket)
        .uid(65534)
        .gid(65534)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(squatter.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "listening\n");
    // The directory is the test's (root's) but writable by all: refused either way; the
    // peer's uid is named first.
    let out = Command::new(&exe)
        .args([socket.to_str().unwrap(), "1", "1"])
        .env("LD_LIBRARY_PATH", lib_dir())
        .output()
        .unwrap();
    squatter.kill().unwrap();
    squatter.wait().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("runs as uid 65534, neither root nor you"),
        "{err}"
    );
}

/// This process runs as root (its effective uid, from `/proc/self/status`).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let uids = s.lines().find_map(|l| l.strip_prefix("Uid:"))?.to_string();
            uids.split_whitespace().nth(1).map(|e| e == "0")
        })
        .unwrap_or(false)
}

/// Empty tasks in batches from C: every task granted and freed, counted by the daemon;
/// a batch beyond the limit is refused with the range named.
#[test]
fn the_c_batch_example_runs_against_the_daemon() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = compile(tmp.path(), "batch");
    let socket = tmp.path().join("run/d.sock");
    let stop = start_daemon(&socket);
    let run = |tasks: &str, batch: &str| {
        Command::new(&exe)
            .args([socket.to_str().unwrap(), tasks, batch])
            .env("LD_LIBRARY_PATH", lib_dir())
            .output()
            .unwrap()
    };
    let out = run("5000", "100");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "done 5000 tasks in 50 batches\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut c = hetsched_live::client::Client::connect(&socket, "check").unwrap();
    let Reply::Stats { grants, .. } = c.stats().unwrap() else {
        panic!("not stats")
    };
    assert_eq!(grants, 5000);
    // 513 tasks = 1026 requests: one batch too many.
    let over = run("513", "513");
    assert!(!over.status.success());
    let err = String::from_utf8_lossy(&over.stderr);
    assert!(err.contains("n = 1026, accepted 1..=1024"), "{err}");
    stop.stop();
}
