//! Helpers shared by the CLI's integration tests.

#[allow(dead_code)] // only the tests of the daemon use it
pub mod daemon;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The path of the repository's scenario `name` (under `scenarios/`), as an argument.
#[allow(dead_code)] // only the simulate tests run the example scenarios
pub fn scenario(name: &str) -> String {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../scenarios")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

/// A generous bound for anything to happen on a loaded 2-core machine (not a measure).
pub const PATIENCE: Duration = Duration::from_secs(120);

/// Polls `cond` every 10 ms until it holds; fails the test naming `what` after
/// [`PATIENCE`].
#[allow(dead_code)] // only the live tests wait
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < PATIENCE, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs the real `hetsched` binary with `args` and waits for it.
#[allow(dead_code)] // not every test file runs it this way
pub fn hetsched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hetsched"))
        .args(args)
        .output()
        .unwrap()
}

/// Asserts a bad-input failure: exit 2, one line on stderr naming each of `needles`,
/// nothing on stdout, no panic.
#[allow(dead_code)] // not every test file checks errors
pub fn assert_input_error(out: &Output, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "one line expected: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{n:?} not in {stderr:?}");
    }
    assert!(out.stdout.is_empty());
}

/// Runs the real binary in `dir` with `args`, its address space limited to 2 GiB (an
/// unbounded allocation, or reading `/dev/zero` to its end, fails instead of swapping),
/// no stdin and no daemon to reach; kills it and fails the test if it runs past `guard`
/// (a hang guard, not a speed test).
#[allow(dead_code)] // only the tests of absurd and hostile inputs run it
pub fn hetsched_bounded(dir: &Path, args: &[&str], guard: Duration) -> Output {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hetsched"));
    cmd.args(args)
        .current_dir(dir)
        .env("HETSCHED_SOCKET", dir.join("no-daemon.sock"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    // Drained while it runs, so that a full pipe cannot look like a hang.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            r.read_to_end(&mut v).unwrap();
            v
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > guard {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("hetsched {args:?} still running after {guard:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}
